"""Exponentials and logarithms beyond exp and log (ops/elementwise.py), and 1/x.

    exp2    y = 2^x            y' = y ln 2
    expm1   y = e^x - 1        y' = y + 1        (exact for small x, where exp(x) - 1 loses the digits)
    log2    y = log2(x)        y' = 1 / (x ln 2)
    log10   y = log10(x)       y' = 1 / (x ln 10)
    log1p   y = log(1 + x)     y' = 1 / (1 + x)  (exact for small x)
    reciprocal  y = 1 / x      y' = -y^2
    square  y = x^2            y' = 2x
    logaddexp(a, b) = log(e^a + e^b), computed without overflow:  d/da = sigmoid(a - b),  d/db = sigmoid(b - a)
"""
import math

from .. import backend
from ..autograd import Function
from ..convert import tensor_arg
from .unary import Unary, float_binary, float_function


class Exp2(Unary):
    """y = 2^x            dL/dx = g * y * ln 2"""
    numpy_name = 'exp2'

    def derivative(self, x, y):
        return y * math.log(2)


class Expm1(Unary):
    """y = e^x - 1        dL/dx = g * (y + 1)"""
    numpy_name = 'expm1'

    def derivative(self, x, y):
        return y + 1


class Log2(Unary):
    """y = log2(x)        dL/dx = g / (x ln 2)"""
    numpy_name = 'log2'

    def derivative(self, x, y):
        return 1 / (x * math.log(2))


class Log10(Unary):
    """y = log10(x)       dL/dx = g / (x ln 10)"""
    numpy_name = 'log10'

    def derivative(self, x, y):
        return 1 / (x * math.log(10))


class Log1p(Unary):
    """y = log(1 + x)     dL/dx = g / (1 + x)"""
    numpy_name = 'log1p'

    def derivative(self, x, y):
        return 1 / (1 + x)


class Reciprocal(Unary):
    """y = 1 / x          dL/dx = -g * y^2"""
    numpy_name = 'reciprocal'

    def derivative(self, x, y):
        return -(y * y)


class Square(Unary):
    """y = x^2            dL/dx = g * 2x          (integers stay integers; bools become int64, as in PyTorch)"""
    numpy_name = 'square'

    def derivative(self, x, y):
        return 2 * x


def square(x):
    """x * x in x's dtype (a bool tensor as int64), as torch.square."""
    x = tensor_arg(x, 'square')
    return Square.apply(x.long() if x.dtype.kind == 'b' else x)


class LogAddExp(Function):
    """y = log(e^a + e^b) = max(a, b) + log1p(e^-|a - b|)    (no overflow for large a, b)
        dL/da = g * sigmoid(a - b),   dL/db = g * sigmoid(b - a)"""

    def forward(self, a, b):
        return backend.array_module(a).logaddexp(a, b)

    def backward(self, g):
        a, b = self.inputs
        return ((g * (a - b).sigmoid() if self.needs_grad(0) else None),
                (g * (b - a).sigmoid() if self.needs_grad(1) else None))


exp2, expm1, log2, log10, log1p, reciprocal = (float_function(op, name) for op, name in (
    (Exp2, 'exp2'), (Expm1, 'expm1'), (Log2, 'log2'), (Log10, 'log10'), (Log1p, 'log1p'),
    (Reciprocal, 'reciprocal')))
logaddexp = float_binary(LogAddExp, 'logaddexp', floats_only=True)
