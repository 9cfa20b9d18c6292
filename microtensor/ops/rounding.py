"""Rounding: division that rounds and the remainders (a // b, div(a, b, rounding_mode), a % b, fmod),
and the functions of one tensor that round or take its sign (floor, ceil, round, trunc, frac, sign,
copysign).

PyTorch's meaning, which is Python's for the signs (numpy agrees for floor and remainder):

    floor   q = floor(a / b)              -7 // 2 = -4
    trunc   q = trunc(a / b)              div(-7, 2, rounding_mode='trunc') = -3
    a % b   r = a - b * floor(a / b)      -7 % 2 = 1: the sign of the divisor (torch.remainder)

    fmod    r = a - b * trunc(a / b)      fmod(-7, 2) = -1: the sign of the dividend (C's fmod)

Integers stay integers (int32 // 2 is int32), and an integer division by zero is an error, as in
PyTorch (an integer has no inf or nan to give; numpy would give 0 with a warning).  Floats give
inf and nan.  Bools are refused, as in PyTorch.

floor, ceil, round, trunc and sign are piecewise constant: their gradient is 0 everywhere, as
PyTorch's.  Integers pass through floor, ceil, round and trunc unchanged; frac = x - trunc(x) has
gradient 1 (floats only).
"""
from .. import backend, promotion
from ..autograd import Function, no_grad
from ..convert import tensor_arg
from ..tensor import Tensor, binary
from .elementwise import Div
from .. import argcheck
from ..argcheck import DTypeError


def _check(a, b, op):
    """The operands' common dtype (they arrive promoted): a number, and no integer zero divisor (unless the
    result is empty: nothing is divided, as in PyTorch)."""
    if a.dtype.kind == 'b':
        raise DTypeError(f"{op} of bool tensors is not defined, as in PyTorch; convert them first (x.long())")
    if a.dtype.kind in 'iu' and a.size and b.size and bool((b == 0).any()):
        raise RuntimeError(f"{op}: integer division by zero (an integer has no inf or nan to give), as in "
                           "PyTorch; divide floats (x.float()) to get inf and nan instead")


class FloorDiv(Function):
    """y = floor(a / b)       (a // b and div(..., rounding_mode='floor'))
        dL/da = 0,  dL/db = 0        (y is piecewise constant, as PyTorch's div(..., rounding_mode=...))"""
    rounding = 'floor'

    def forward(self, a, b):
        _check(a, b, f"div(rounding_mode={self.rounding!r})")
        xp = backend.array_module(a)
        with backend.quiet_float_errors(a):
            if self.rounding == 'floor':
                return xp.floor_divide(a, b)
            if a.dtype.kind == 'f':
                return xp.trunc(a / b)
            q = xp.floor_divide(a, b)  # integers: floor, moved up by one where the signs differ and b does not divide a
            return q + ((q * b != a) & ((a < 0) != (b < 0))).astype(q.dtype)

    def backward(self, g):
        zero = Tensor._wrap(backend.array_module(g.data).zeros(g.shape, dtype=g.dtype))
        return tuple(zero if self.needs_grad(i) else None for i in range(2))


class TruncDiv(FloorDiv):
    """y = trunc(a / b)       (div(..., rounding_mode='trunc'): toward 0, as C rounds)    as FloorDiv otherwise"""
    rounding = 'trunc'


class Remainder(Function):
    """y = a % b = a - b * floor(a / b)   (the sign of b, as Python's % and torch.remainder)
        dL/da = g,  dL/db = -g * floor(a / b)"""

    def forward(self, a, b):
        _check(a, b, 'remainder')
        with backend.quiet_float_errors(a):
            return backend.array_module(a).remainder(a, b)

    def backward(self, g):
        a, b = self.inputs
        gb = -g * FloorDiv.apply(a, b) if self.needs_grad(1) else None
        return g, gb


class Fmod(Function):
    """y = fmod(a, b) = a - b * trunc(a / b)   (the sign of a, as C's fmod and torch.fmod)
        dL/da = g,  dL/db = -g * trunc(a / b)"""

    def forward(self, a, b):
        _check(a, b, 'fmod')
        with backend.quiet_float_errors(a):
            return backend.array_module(a).fmod(a, b)

    def backward(self, g):
        a, b = self.inputs
        gb = -g * TruncDiv.apply(a, b) if self.needs_grad(1) else None
        return g, gb


class Step(Function):
    """y = f(x), f piecewise constant (floor, ceil, round, trunc, sign)     dL/dx = 0"""
    numpy_name = None

    def forward(self, x, **options):
        return getattr(backend.array_module(x), self.numpy_name)(x, **options)

    def backward(self, g):
        return (Tensor._wrap(backend.array_module(g.data).zeros(g.shape, dtype=g.dtype)),)


class Floor(Step):
    """y = floor(x), the largest integer <= x"""
    numpy_name = 'floor'


class Ceil(Step):
    """y = ceil(x), the smallest integer >= x"""
    numpy_name = 'ceil'


class Trunc(Step):
    """y = trunc(x), toward 0"""
    numpy_name = 'trunc'


class Round(Step):
    """y = x rounded to `decimals` digits, halves to even (round(2.5) = 2), as numpy's and PyTorch's
    (float16 scaled by 10^decimals in float32, as PyTorch, so that 65504 does not overflow)"""

    def forward(self, x, decimals=0):
        xp = backend.array_module(x)
        if decimals and x.dtype == xp.float16:
            return xp.round(x.astype(xp.float32), decimals).astype(x.dtype)
        return xp.round(x, decimals)


class Sign(Step):
    """y = -1, 0 or 1 (0 at nan, as PyTorch's sign)"""

    def forward(self, x):
        return x.copy() if x.dtype.kind == 'b' else backend.sign(x)


class Copysign(Function):
    """y = |a| with the sign of b (the sign bit: -0.0 counts as negative)
        dL/da = g * y / a  (+-1; 0 at a = 0, as PyTorch's),   dL/db = 0"""

    def forward(self, a, b):
        xp = backend.array_module(a)
        y = xp.copysign(a, b)
        with backend.quiet_float_errors(a):
            self.slope = xp.where(a == 0, xp.zeros((), a.dtype), y / a)
        return y

    def backward(self, g):
        ga = g * Tensor._wrap(self.slope) if self.needs_grad(0) else None
        gb = Tensor._wrap(backend.array_module(g.data).zeros(g.shape, dtype=g.dtype)) if self.needs_grad(1) else None
        return ga, gb


class Frac(Function):
    """y = x - trunc(x), the fractional part with x's sign (frac(inf) = nan)     dL/dx = g"""

    def forward(self, x):
        with backend.quiet_float_errors(x):
            return x - backend.array_module(x).trunc(x)

    def backward(self, g):
        return (g,)


def _rounded(op, name, floats_only=False):
    """mt.<name>(x): op on x; integers pass unchanged (bools are refused, as in PyTorch)."""
    def function(x, **options):
        x = tensor_arg(x, name)
        if x.dtype.kind == 'b' or (floats_only and x.dtype.kind != 'f'):
            raise DTypeError(f"{name}: needs a {'float' if floats_only else 'number'} tensor, not {x.dtype} (as "
                             f"in PyTorch); convert it first (x.float())")
        return op.apply(x, **options) if x.dtype.kind == 'f' else x.clone()
    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.__doc__.splitlines()[0]
    return function


floor, ceil, trunc = _rounded(Floor, 'floor'), _rounded(Ceil, 'ceil'), _rounded(Trunc, 'trunc')


def round(x, decimals=0):
    """x rounded to `decimals` digits (negative: tens, hundreds...), halves to even, as torch.round;
    integers pass unchanged (with decimals, PyTorch refuses them, as this does)."""
    x = tensor_arg(x, 'round')
    decimals = argcheck.integer(decimals, 'round', 'decimals')
    if decimals and x.dtype.kind != 'f':
        raise DTypeError(f"round: decimals={decimals} needs a float tensor, not {x.dtype} (as in PyTorch)")
    return _rounded(Round, 'round')(x, decimals=decimals) if decimals else _rounded(Round, 'round')(x)


frac = _rounded(Frac, 'frac', floats_only=True)


def sign(x):
    """-1, 0 or 1 elementwise, in x's dtype (0 at nan; bools stay bools), as torch.sign."""
    return Sign.apply(tensor_arg(x, 'sign'))


def copysign(a, b):
    """|a| with the sign of b, in floats (two integer tensors give float32), as torch.copysign."""
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        raise TypeError(f"copysign: needs a Tensor as a or b, got {type(a).__name__} and {type(b).__name__}")
    dtype = promotion.floating_dtype(promotion.result_type(a, b))
    return Copysign.apply(*promotion.operands('copysign', a, b, dtype=dtype))


def fmod(a, b):
    """a - b * trunc(a / b), with the sign of a (C's fmod), as torch.fmod."""
    return binary(Fmod, a, b, 'fmod')


def div(a, b, rounding_mode=None):
    """a / b (rounding_mode None: true division, integers give floats), or rounded: 'floor' (a // b)
    or 'trunc' (toward 0); rounded quotients of integers are integers, as in PyTorch."""
    if rounding_mode is None:
        return binary(Div, a, b, 'div')
    if rounding_mode not in ('floor', 'trunc'):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', not {rounding_mode!r}")
    return binary(FloorDiv if rounding_mode == 'floor' else TruncDiv, a, b, 'div')


def floor_divide(a, b):
    """a // b: floor(a / b), as torch.floor_divide; as there, it has no gradient (the result is
    outside the graph; div(a, b, rounding_mode='floor') gives the same values with a zero gradient)."""
    with no_grad():
        return binary(FloorDiv, a, b, 'floor_divide')


def remainder(a, b):
    """a % b, with the sign of b (Python's %, torch.remainder)."""
    return binary(Remainder, a, b, 'remainder')
