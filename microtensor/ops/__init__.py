"""The ops, one file per family: the textbook.  Each op is a Function subclass whose forward
(on backend arrays) and backward (on Tensors) are the formulas of its docstring, side by side;
their fast twins, the Fused... ops, are in microtensor/fused/ (off by default)."""
