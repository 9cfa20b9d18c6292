"""GELU, tanh form, fast: the forward keeps the gate h, the backward is one op, both in row blocks.

The textbook GeluTanh (ops/nn.py) recomputes tanh(u) in its backward and builds gelu'(x) from
a dozen tensor ops.  Here the forward keeps h = 0.5 (1 + tanh u), computed as the logistic
function 1 / (1 + exp(-2u)), the same number (see _gelu_gate), and the backward is one op,
FusedGeluTanhGrad, that computes g * gelu'(x) from x and h in one pass: with y = x h,

    gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) u' = h + 2 u' y (1 - h)      (1 - t^2 = 4 h (1 - h))

Each formula is a chain of in-place numpy calls on arrays the op made (one pass each, no
temporary left to copy), a block of rows at a time (rows.by_rows), or the same formula as one
compiled loop where a C compiler is found (compiled.py, kernels.c).  The slope's own backward,
written with tensors, is only needed for second derivatives.  As in the textbook, the slopes
are computed at x clipped to [-_FAR, _FAR] (beyond, tanh(u) is exactly +-1).
"""
import math

from .. import backend
from ..autograd import Function
from ..ops.nn import _A, _FAR, _SQRT_2_OVER_PI
from . import compiled, rows


class FusedGeluTanh(Function):
    """GELU, tanh form:  y = 0.5 x (1 + tanh(u)) = x h,   u = sqrt(2/pi) (x + 0.044715 x^3),  h the gate
        dL/dx = g * gelu'(x)       (FusedGeluTanhGrad, from the h kept here)
    """

    def forward(self, x):
        xp = backend.array_module(x)
        dtype = _float_type(x)
        y, self.h = xp.empty(x.shape, dtype), xp.empty(x.shape, dtype)
        compiled.by_rows('gelu_tanh', _gelu_tanh, x, y, self.h)
        return y

    def backward(self, g):
        return (FusedGeluTanhGrad.apply(self.inputs[0], g, h=self.h),)


class FusedGeluTanhGrad(Function):
    """dx = g * gelu'(x) in one pass over the arrays (FusedGeluTanh's backward; gelu' as in FusedGeluTanhSlope)
        dL/dx = e * g * gelu''(x),   dL/dg = e * gelu'(x)      (e: the gradient arriving at dx)
    """

    def forward(self, x, g, h):
        xp = backend.array_module(x)
        dx = xp.empty(x.shape, xp.result_type(_float_type(x), g))

        def gelu_tanh_grad(x, g, h, dx):
            _gelu_tanh_slope(x, h, dx)
            dx *= g

        compiled.by_rows('gelu_tanh_grad', gelu_tanh_grad, x, g, h, dx)
        return dx

    def backward(self, e):
        x, g = self.inputs
        gx = e * g * _gelu_tanh_curvature(x) if self.needs_grad(0) else None
        gg = e * FusedGeluTanhSlope.apply(x) if self.needs_grad(1) else None
        return gx, gg


class FusedGeluTanhSlope(Function):
    """s = gelu'(x) = h + 2 u' y (1 - h),   u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        dL/dx = g * gelu''(x) = g * (1 - t^2) (u' + 0.5 x (u'' - 2 t u'^2)),   t = tanh(u),  u'' = 6 * 0.044715 sqrt(2/pi) x
    """

    def forward(self, x):
        xp = backend.array_module(x)
        s = xp.empty(x.shape, _float_type(x))

        def gelu_tanh_slope(x, s):
            h = xp.empty_like(s)
            _gelu_gate(x, h)
            _gelu_tanh_slope(x, h, s)

        rows.by_rows(gelu_tanh_slope, x, s)
        return s

    def backward(self, g):
        return (g * _gelu_tanh_curvature(self.inputs[0]),)


def _float_type(x):
    """GELU's result type for x: ints give floats, as numpy's tanh does."""
    return backend.array_module(x).result_type(x.dtype, 1.0)


# The forms below write into arrays the op made (rows.by_rows): in place, each numpy call
# is one pass and no temporary is left to copy.
def _gelu_gate(x, h):
    """h = 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)),   u = sqrt(2/pi) (x + 0.044715 x^3),   into h.

    The two are one function (tanh(u) = 2 / (1 + exp(-2u)) - 1); numpy's exp is ~2x faster than
    its tanh, and the logistic form keeps h's relative precision where h is tiny (0.5 (1 + t)
    subtracts t ~ -1 from 1).  Far from 0, x^3 or exp(-2u) overflow to inf, and h is exactly 0
    or 1, the limits, without a warning."""
    xp = backend.array_module(x)
    with backend.quiet_float_errors(h):
        xp.multiply(x, x, out=h, dtype=h.dtype)
        h *= -2 * _SQRT_2_OVER_PI * _A
        h -= 2 * _SQRT_2_OVER_PI
        h *= x  # -2u
        xp.exp(h, out=h)
        h += 1
        xp.reciprocal(h, out=h)


def _gelu_tanh(x, y, h):
    """GELU's output y = x h and its gate h, into y and h (y = -0 for x < -_FAR, where h is
    exactly 0; x is clipped with clip, not maximum: numpy's clip is ~1.5x faster)."""
    _gelu_gate(x, h)
    backend.array_module(x).clip(x, -_FAR, math.inf, out=y)
    y *= h


def _gelu_tanh_slope(x, h, s):
    """gelu'(x) = h + 2 u' y (1 - h) into s, with x clipped to [-_FAR, _FAR] (see above).
    y (1 - h) = x h (1 - h) is formed before it meets 2 u': it is at most |x| / 4 and 0 far
    from 0, whereas 2 u' y alone reaches 2e5 at x = 100, beyond float16 (inf * 0 = nan)."""
    xp = backend.array_module(x)
    x = xp.clip(x, -_FAR, _FAR, out=xp.empty_like(s))  # ours to overwrite (an array even when 0-d)
    xp.multiply(x, x, out=s)
    s *= 3 * _A * 2 * _SQRT_2_OVER_PI
    s += 2 * _SQRT_2_OVER_PI  # 2 u'
    x *= h  # y
    x *= 1 - h  # y (1 - h)
    s *= x
    s += h


def _gelu_tanh_curvature(x):
    """gelu''(x) on tensors (for second derivatives), at x clipped to [-_FAR, _FAR]."""
    x = x.clip(-_FAR, _FAR)
    t = (_SQRT_2_OVER_PI * (x + _A * x * x * x)).tanh()
    du = _SQRT_2_OVER_PI * (1 + 3 * _A * x * x)
    d2u = (6 * _A * _SQRT_2_OVER_PI) * x
    return (1 - t * t) * (du + 0.5 * x * (d2u - 2 * t * du * du))
