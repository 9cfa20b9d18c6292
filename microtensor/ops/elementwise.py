"""Elementwise ops: y = f(a, b) or y = f(x), with numpy broadcasting.

Backward returns the gradient at the broadcast shape; the backward loop sums it
back to each input's shape (autograd.run_backward), so no op here has to.
"""
import math

from .. import argcheck, backend, promotion
from ..autograd import Function
from ..convert import tensor_arg
from ..tensor import Tensor, binary
from .select import Where
from ..argcheck import DTypeError


class Add(Function):
    """y = a + b          dL/da = g,  dL/db = g"""

    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Sub(Function):
    """y = a - b          dL/da = g,  dL/db = -g"""

    def forward(self, a, b):
        return a - b

    def backward(self, g):
        return g, -g


class Mul(Function):
    """y = a * b          dL/da = g * b,  dL/db = g * a"""

    def forward(self, a, b):
        return a * b

    def backward(self, g):
        a, b = self.inputs
        ga = g * b if self.needs_grad(0) else None  # x * mask, x * 0.5: no work for the constant
        gb = g * a if self.needs_grad(1) else None
        return ga, gb


class Div(Function):
    """y = a / b          dL/da = g / b,  dL/db = -g * a / b^2"""

    def forward(self, a, b):
        return a / b

    def backward(self, g):
        a, b = self.inputs
        ga = g / b if self.needs_grad(0) else None
        gb = -g * a / (b * b) if self.needs_grad(1) else None
        return ga, gb


class Neg(Function):
    """y = -x             dL/dx = -g"""

    def forward(self, x):
        promotion.refuse_bool('neg', x.dtype, 'to invert a mask use ~mask')
        return -x

    def backward(self, g):
        return (-g,)


class Pow(Function):
    """y = a ** b         dL/da = g * b * a^(b-1),  dL/db = g * y * log(a)

    At the edges the values PyTorch gives, where the formulas would give 0 * inf = nan:
    dL/da = 0 at a = 0, b = 0 (a^0 is constant), and dL/db = 0 at a = 0, b >= 0
    (0^b is constant for b > 0; PyTorch's choice at b = 0).  dL/da is built from a' = 1
    in place of a there, so that no 0 * inf hides in it either: its own derivative, the
    second derivative of a^0, is 0 too (d2/dx2 of x^2 + x^0 at 0 is 2, not nan).  Elsewhere
    the formulas stand as written.  (Bools and ints: _integer_power.)
    """

    def forward(self, a, b):
        with backend.quiet_float_errors(a):  # floats overflow to inf, integers wrap: silently, as in PyTorch
            return a ** b if a.dtype.kind in 'fu' else _integer_power(a, b)

    def backward(self, g):
        a, b = self.inputs
        ga = gb = None
        with backend.quiet_float_errors(g.data):  # the inf and nan that _zero_where replaces
            if self.needs_grad(0):  # 2 ** x needs only gb
                constant = (a.data == 0) & (b.data == 0)
                base = a
                if bool(constant.any()):  # (rare: the common backward stays b * a ** (b - 1), no extra op)
                    one = Tensor._wrap(backend.array_module(a.data).ones((), dtype=a.dtype))
                    base = Where.apply(one, a, cond=constant)
                ga = g * _zero_where(constant, b * base ** (b - 1))
            if self.needs_grad(1):  # log(a) needs a > 0
                gb = g * _zero_where((a.data == 0) & (b.data >= 0), self.output * a.log())
        return ga, gb


def _zero_where(cond, t):
    """t, with 0 where the boolean array `cond` holds (differentiable in t)."""
    zero = Tensor._wrap(backend.array_module(t.data).zeros((), dtype=t.dtype))
    return Where.apply(zero, t, cond=cond)


class Exp(Function):
    """y = exp(x)         dL/dx = g * y       (exp(x) beyond the dtype's range is inf, as in numpy, without its warning)"""

    def forward(self, x):
        with backend.quiet_float_errors(x):
            return backend.array_module(x).exp(x)

    def backward(self, g):
        return (g * self.output,)


class Log(Function):
    """y = log(x)         dL/dx = g / x       (log(0) = -inf, as in numpy)"""

    def forward(self, x):
        with backend.quiet_float_errors(x):
            return backend.array_module(x).log(x)

    def backward(self, g):
        (x,) = self.inputs
        return (g / x,)


class Sqrt(Function):
    """y = sqrt(x)        dL/dx = g / (2 y)"""

    def forward(self, x):
        return backend.array_module(x).sqrt(x)

    def backward(self, g):
        return (g / (2 * self.output),)


class Rsqrt(Function):
    """y = 1 / sqrt(x)    dL/dx = -g * y^3 / 2       (the layer norms' 1/sigma; inf at 0, as PyTorch's)"""

    def forward(self, x):
        with backend.quiet_float_errors(x):
            return 1 / backend.array_module(x).sqrt(x)

    def backward(self, g):
        y = self.output
        return (-0.5 * g * y * y * y,)


class Tanh(Function):
    """y = tanh(x)        dL/dx = g * (1 - y^2)"""

    def forward(self, x):
        return backend.array_module(x).tanh(x)

    def backward(self, g):
        y = self.output
        return (g * (1 - y * y),)


class Sin(Function):
    """y = sin(x)         dL/dx = g * cos(x)      (sinusoidal positional encoding, RoPE)"""

    def forward(self, x):
        return backend.array_module(x).sin(x)

    def backward(self, g):
        (x,) = self.inputs
        return (g * x.cos(),)


class Cos(Function):
    """y = cos(x)         dL/dx = -g * sin(x)"""

    def forward(self, x):
        return backend.array_module(x).cos(x)

    def backward(self, g):
        (x,) = self.inputs
        return (-g * x.sin(),)


class Sigmoid(Function):
    """y = 1 / (1 + exp(-x))      dL/dx = g * y * (1 - y) = g * y * sigmoid(-x)

    Two branches, with e = exp(-|x|) <= 1 so that nothing overflows:
        x >= 0:  y = 1 / (1 + e)          x < 0:  y = e / (1 + e)
    Each keeps full relative precision, so log(sigmoid(-20)) is -20.000000002, not
    the -inf or few-digit value 0.5 * (1 + tanh(x / 2)) gives.  For the same reason
    the gradient uses sigmoid(-x) rather than 1 - y, which is 0 for large x.
    """

    def forward(self, x):
        xp = backend.array_module(x)
        e = xp.exp(-abs(x))
        r = 1 / (1 + e)
        return xp.where(x >= 0, r, e * r)

    def backward(self, g):
        (x,) = self.inputs
        return (g * self.output * (-x).sigmoid(),)


class Relu(Function):
    """y = max(x, 0)      dL/dx = g * [not x <= 0]

    relu(-inf) = 0 (x * [x > 0] would give nan); at nan, y is nan and g passes, as in PyTorch."""

    def forward(self, x):
        promotion.refuse_bool('relu', x.dtype)
        self.passes = (~(x <= 0)).astype(x.dtype)
        return backend.array_module(x).maximum(x, 0)

    def backward(self, g):
        return (g * Tensor._wrap(self.passes),)


class Abs(Function):
    """y = |x|            dL/dx = g * sign(x)     (0 at x = 0, and at nan, as in PyTorch)"""

    def forward(self, x):
        promotion.refuse_bool('abs', x.dtype)
        self.sign = backend.sign(x)
        return abs(x)

    def backward(self, g):
        return (g * Tensor._wrap(self.sign),)


class Erf(Function):
    """y = erf(x)         dL/dx = g * 2/sqrt(pi) * exp(-x^2)"""

    def forward(self, x):
        return backend.erf(x)

    def backward(self, g):
        (x,) = self.inputs
        return (g * (2 / math.sqrt(math.pi)) * (-x * x).exp(),)


class Maximum(Function):
    """y = maximum(a, b)  the gradient goes to the larger input; ties split it evenly:
    dL/da = g * (1 - [a < b] - 0.5 [a == b]),  dL/db = g * (1 - [b < a] - 0.5 [a == b])
    (y is nan where either is: no comparison holds there, and both get g, as in PyTorch)"""

    def forward(self, a, b):
        self.shares(a < b, b < a, a == b, a.dtype)
        return backend.array_module(a).maximum(a, b)

    def shares(self, a_loses, b_loses, tie, dtype):
        self.share_a = (1 - a_loses - 0.5 * tie).astype(dtype)
        self.share_b = (1 - b_loses - 0.5 * tie).astype(dtype)

    def backward(self, g):
        return g * Tensor._wrap(self.share_a), g * Tensor._wrap(self.share_b)


class Minimum(Maximum):
    """y = minimum(a, b)  as Maximum, the smaller input winning: a loses where a > b"""

    def forward(self, a, b):
        self.shares(a > b, b > a, a == b, a.dtype)
        return backend.array_module(a).minimum(a, b)


class Clip(Function):
    """y = min(max(x, low), high)     dL/dx = g * [low <= x <= high]

    A missing bound (None) is no bound (Tensor.clip refuses to have neither, as PyTorch does);
    the op uses maximum/minimum, which both backends take alike.
    """

    def forward(self, x, low, high):
        xp = backend.array_module(x)
        inside = xp.ones(x.shape, dtype=bool)
        y = x
        if low is not None:
            inside &= x >= low
            y = xp.maximum(y, low)
        if high is not None:
            inside &= x <= high
            y = xp.minimum(y, high)
        self.inside = inside.astype(x.dtype)
        return y

    def backward(self, g):
        return (g * Tensor._wrap(self.inside),)


class Cast(Function):
    """y = x as another dtype         dL/dx = g cast back to x's dtype"""

    def forward(self, x, dtype):
        self.source_dtype = x.dtype
        return x.astype(dtype)

    def backward(self, g):
        return (g.to(dtype=self.source_dtype),)


def add(a, b, alpha=1):
    """a + alpha * b, as torch.add (alpha scales b first: dL/db = alpha * g)."""
    return binary(Add, a, _scaled(a, b, alpha, 'add'), 'add')


def sub(a, b, alpha=1):
    """a - alpha * b, as torch.sub (which refuses bools before it looks at alpha)."""
    promotion.check_booleans('sub', a, b, subtract=True)
    return binary(Sub, a, _scaled(a, b, alpha, 'sub'), 'sub')


def _scaled(a, b, alpha, op):
    """alpha * b (b itself for alpha = 1).  As in PyTorch, a non-integer alpha needs a float result
    (int64 + 0.5 * int64 is refused, not made float) and a bool alpha a bool one; a bool result stays
    bool, alpha counting as bool(alpha) (mask.add(other, alpha=2) is mask | other)."""
    alpha = argcheck.real(alpha, op, 'alpha')
    dtype = promotion.result_type(a, b)
    if (not hasattr(type(alpha), '__index__') and dtype.kind != 'f'  # (ints, numpy's too, have __index__)
            or isinstance(alpha, bool) and dtype.kind != 'b'):
        raise DTypeError(f"{op}: alpha={alpha!r} does not fit operands of dtype {dtype}, as in PyTorch "
                        "(a non-integer alpha needs floats, a bool alpha bools)")
    if alpha == 1:
        return b
    if not isinstance(b, Tensor):
        b = promotion.operands(op, a, b)[1]  # a number or a list: a constant of the result's dtype
    return b * (bool(alpha) if dtype.kind == 'b' else alpha)


def _integer_power(a, b):
    """a ** b of bools or signed integers, as PyTorch computes it where numpy would refuse:
    mask ** True is mask, mask ** False is True (a or not b); an integer to a negative integer
    power (2 ** ids with a negative id) is 1 / a^n truncated toward 0: 1 for a = 1, +-1 for
    a = -1, 0 otherwise."""
    if a.dtype.kind == 'b':
        return a | ~b
    if not bool((b < 0).any()):
        return a ** b
    xp = backend.array_module(a)
    negative = b < 0
    power = a ** xp.where(negative, 0, b)
    reciprocal = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(negative, reciprocal, power).astype(a.dtype)


class NanToNum(Function):
    """y = x with nan, +inf and -inf replaced by numbers (PyTorch's defaults: 0, the dtype's largest and
    smallest)      dL/dx = g where x is finite, 0 where it was replaced"""

    def forward(self, x, nan, posinf, neginf):
        xp = backend.array_module(x)
        self.finite = xp.isfinite(x).astype(x.dtype)
        return xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, g):
        return (g * Tensor._wrap(self.finite),)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """x with nan, +inf and -inf replaced (None: the dtype's largest and smallest finite values), as
    torch.nan_to_num; integers and bools, which hold none of them, come back as they are."""
    x = tensor_arg(x, 'nan_to_num')
    nan, posinf, neginf = (None if v is None else argcheck.real(v, 'nan_to_num', name)
                           for v, name in ((nan, 'nan'), (posinf, 'posinf'), (neginf, 'neginf')))
    if x.dtype.kind != 'f':
        return x.clone()
    return NanToNum.apply(x, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf)


def lerp(start, end, weight):
    """start + weight * (end - start), as torch.lerp (weight a number or a tensor)
        dL/dstart = g * (1 - weight),  dL/dend = g * weight,  dL/dweight = g * (end - start)"""
    start, end = tensor_arg(start, 'lerp', 'start'), tensor_arg(end, 'lerp', 'end')
    if start.dtype != end.dtype or start.dtype.kind != 'f':
        raise DTypeError(f"lerp: start and end must be float tensors of one dtype, as in PyTorch, not {start.dtype} "
                         f"and {end.dtype}")
    return start + weight * (end - start)
