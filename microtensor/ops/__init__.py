"""The ops, one file per family.  Each op is a Function subclass whose forward
(on backend arrays) and backward (on Tensors) stand side by side."""
