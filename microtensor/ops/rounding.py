"""Division that rounds, and the remainder: a // b, div(a, b, rounding_mode), a % b.

PyTorch's meaning, which is Python's for the signs (numpy agrees for floor and remainder):

    floor   q = floor(a / b)              -7 // 2 = -4
    trunc   q = trunc(a / b)              div(-7, 2, rounding_mode='trunc') = -3
    a % b   r = a - b * floor(a / b)      -7 % 2 = 1: the sign of the divisor (torch.remainder)

Integers stay integers (int32 // 2 is int32), and an integer division by zero is an error, as in
PyTorch (an integer has no inf or nan to give; numpy would give 0 with a warning).  Floats give
inf and nan.  Bools are refused, as in PyTorch.
"""
from .. import backend
from ..autograd import Function, no_grad
from ..tensor import Tensor, binary
from .elementwise import Div
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
