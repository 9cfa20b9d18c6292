"""What the elementwise float functions share, written once.

    y = f(x)        dL/dx = g * f'(x)

An op is a subclass naming numpy's function (`numpy_name`) and writing f'(x) as `derivative(x, y)`
on tensors, so that the backward is itself differentiable (second derivatives, gradgradcheck).
The float functions take integers and bools as float32, as PyTorch does (exp of ids): see
`float_function` (and `float_binary`, for atan2, hypot, logaddexp).  Values outside the function's domain give nan and inf, as in numpy and PyTorch,
without numpy's warning.
"""
from .. import backend, promotion
from ..argcheck import DTypeError
from ..autograd import Function
from ..convert import tensor_arg
from ..tensor import Tensor


class Unary(Function):
    """y = f(x), with dL/dx = g * derivative(x, y)."""
    numpy_name = None

    def forward(self, x):
        with backend.quiet_float_errors(x):
            return getattr(backend.array_module(x), self.numpy_name)(x)

    def backward(self, g):
        (x,) = self.inputs
        return (g * self.derivative(x, self.output),)

    def derivative(self, x, y):
        raise NotImplementedError


def float_function(op, name):
    """mt.<name>(x): op applied to x, integers and bools first made float32 (PyTorch's rule)."""
    def function(x):
        return op.apply(promotion.floating(tensor_arg(x, name)))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.__doc__.splitlines()[0]
    return function


def float_binary(op, name, floats_only=False):
    """mt.<name>(a, b): op on two tensors (PyTorch's atan2, hypot and logaddexp take no number) in their
    common dtype, a float one: two integer tensors give float32, or are refused (floats_only)."""
    def function(a, b):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            raise TypeError(f"{name}: needs two Tensors, got {type(a).__name__} and {type(b).__name__} (as "
                            "PyTorch's; make a number a tensor with mt.tensor(...))")
        dtype = promotion.result_type(a, b)
        if floats_only and dtype.kind != 'f':
            raise DTypeError(f"{name}: needs float tensors, not {a.dtype} and {b.dtype} (as in PyTorch); "
                             "convert them first (x.float())")
        return op.apply(*promotion.operands(name, a, b, dtype=promotion.floating_dtype(dtype)))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.__doc__.splitlines()[0]
    return function
