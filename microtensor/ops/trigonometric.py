"""The trigonometric and hyperbolic functions and their inverses (sin, cos, tanh: ops/elementwise.py).

    tan     y' = 1 + y^2                  sinh    y' = cosh(x)
    asin    y' = 1 / sqrt(1 - x^2)        cosh    y' = sinh(x)
    acos    y' = -1 / sqrt(1 - x^2)       asinh   y' = 1 / sqrt(x^2 + 1)
    atan    y' = 1 / (1 + x^2)            acosh   y' = 1 / sqrt(x^2 - 1)
                                          atanh   y' = 1 / (1 - x^2)
    atan2(a, b) = the angle of the point (b, a):  d/da = b / (a^2 + b^2),  d/db = -a / (a^2 + b^2)
    hypot(a, b) = sqrt(a^2 + b^2):                d/da = a / y,            d/db = b / y
"""
from .. import backend
from ..autograd import Function
from .unary import Unary, float_binary, float_function


class Tan(Unary):
    """y = tan(x)         dL/dx = g * (1 + y^2)"""
    numpy_name = 'tan'

    def derivative(self, x, y):
        return 1 + y * y


class Asin(Unary):
    """y = asin(x)        dL/dx = g / sqrt(1 - x^2)      (|x| > 1: nan)"""
    numpy_name = 'arcsin'

    def derivative(self, x, y):
        return (1 - x * x).rsqrt()


class Acos(Unary):
    """y = acos(x)        dL/dx = -g / sqrt(1 - x^2)     (|x| > 1: nan)"""
    numpy_name = 'arccos'

    def derivative(self, x, y):
        return -(1 - x * x).rsqrt()


class Atan(Unary):
    """y = atan(x)        dL/dx = g / (1 + x^2)"""
    numpy_name = 'arctan'

    def derivative(self, x, y):
        return 1 / (1 + x * x)


class Sinh(Unary):
    """y = sinh(x)        dL/dx = g * cosh(x)"""
    numpy_name = 'sinh'

    def derivative(self, x, y):
        return x.cosh()


class Cosh(Unary):
    """y = cosh(x)        dL/dx = g * sinh(x)"""
    numpy_name = 'cosh'

    def derivative(self, x, y):
        return x.sinh()


class Asinh(Unary):
    """y = asinh(x)       dL/dx = g / sqrt(x^2 + 1)"""
    numpy_name = 'arcsinh'

    def derivative(self, x, y):
        return (x * x + 1).rsqrt()


class Acosh(Unary):
    """y = acosh(x)       dL/dx = g / sqrt(x^2 - 1)      (x < 1: nan)"""
    numpy_name = 'arccosh'

    def derivative(self, x, y):
        return (x * x - 1).rsqrt()


class Atanh(Unary):
    """y = atanh(x)       dL/dx = g / (1 - x^2)          (|x| > 1: nan, ±1: ±inf)"""
    numpy_name = 'arctanh'

    def derivative(self, x, y):
        return 1 / (1 - x * x)


class Atan2(Function):
    """y = atan2(a, b), the angle of the point (b, a) in (-pi, pi]
        dL/da = g * b / (a^2 + b^2),   dL/db = -g * a / (a^2 + b^2)"""

    def forward(self, a, b):
        return backend.array_module(a).arctan2(a, b)

    def backward(self, g):
        a, b = self.inputs
        g_r2 = g / (a * a + b * b)
        return (g_r2 * b if self.needs_grad(0) else None), (-g_r2 * a if self.needs_grad(1) else None)


class Hypot(Function):
    """y = sqrt(a^2 + b^2), without overflow for large a or b
        dL/da = g * a / y,   dL/db = g * b / y"""

    def forward(self, a, b):
        return backend.array_module(a).hypot(a, b)

    def backward(self, g):
        a, b = self.inputs
        g_y = g / self.output
        return (g_y * a if self.needs_grad(0) else None), (g_y * b if self.needs_grad(1) else None)


tan, asin, acos, atan = (float_function(op, name) for op, name in ((Tan, 'tan'), (Asin, 'asin'), (Acos, 'acos'),
                                                                   (Atan, 'atan')))
sinh, cosh, asinh, acosh, atanh = (float_function(op, name) for op, name in (
    (Sinh, 'sinh'), (Cosh, 'cosh'), (Asinh, 'asinh'), (Acosh, 'acosh'), (Atanh, 'atanh')))

atan2, hypot = float_binary(Atan2, 'atan2'), float_binary(Hypot, 'hypot', floats_only=True)
