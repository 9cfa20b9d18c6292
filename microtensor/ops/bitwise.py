"""Bitwise ops on integers and booleans: a & b, a | b, a ^ b, ~a, a << b, a >> b.

They follow PyTorch's promotion (microtensor/promotion.py) like + and *: a Python int does not
widen a tensor (int32 & 0x1337 is int32, uint8 | 3 is uint8), and one outside the dtype's
range is treated as it is for + (promotion.operands).  Floats are refused, as in PyTorch.
Shifts are defined for every count, as there: a count < 0 or >= the width in bits gives 0
(x << 40 of int32), or the sign for x >> 40 (0 or -1); numpy and C leave those undefined.
None of them has a gradient: integers have none.
"""
from .. import backend
from ..autograd import Function
from ..argcheck import DTypeError


def _check(x, op, kinds='biu'):
    if x.dtype.kind not in kinds:
        what = 'integer or bool' if 'b' in kinds else 'integer'
        raise DTypeError(f"{op} is defined on {what} tensors only, not {x.dtype}, as in PyTorch")


class And(Function):
    """y = a & b, bit by bit (of bools: a and b)"""
    ufunc = 'bitwise_and'

    def forward(self, a, b):
        _check(a, self.ufunc)
        return getattr(backend.array_module(a), self.ufunc)(a, b)


class Or(And):
    """y = a | b, bit by bit (of bools: a or b)"""
    ufunc = 'bitwise_or'


class Xor(And):
    """y = a ^ b, bit by bit (of bools: a != b)"""
    ufunc = 'bitwise_xor'


class Invert(Function):
    """y = ~x: every bit flipped (for bools: not)"""

    def forward(self, x):
        _check(x, 'bitwise_not')
        return backend.array_module(x).invert(x)


class LeftShift(Function):
    """y = a << b = a * 2^b, wrapped to the dtype; 0 for a count outside [0, bits)"""

    def forward(self, a, b):
        _check(a, 'bitwise_left_shift', 'iu')
        xp = backend.array_module(a)
        inside, count = _counts(xp, a, b)
        return xp.where(inside, xp.left_shift(a, count), 0).astype(a.dtype, copy=False)


class RightShift(Function):
    """y = a >> b = floor(a / 2^b); for a count outside [0, bits): 0, or -1 for a negative a"""

    def forward(self, a, b):
        _check(a, 'bitwise_right_shift', 'iu')
        xp = backend.array_module(a)
        inside, count = _counts(xp, a, b)
        beyond = xp.right_shift(a, 8 * a.dtype.itemsize - 1) if a.dtype.kind == 'i' else 0  # the sign: 0 or -1
        return xp.where(inside, xp.right_shift(a, count), beyond).astype(a.dtype, copy=False)


def _counts(xp, a, b):
    """(inside, count): where the shift count b lies in [0, bits), and b there (0 elsewhere)."""
    inside = (b >= 0) & (b < 8 * a.dtype.itemsize)
    return inside, xp.where(inside, b, 0).astype(a.dtype, copy=False)
