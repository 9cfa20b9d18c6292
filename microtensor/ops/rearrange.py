"""Ops that move or mask elements without arithmetic: flip, roll, tril, triu, pad.

Each backward moves the gradient back the way the forward moved the values (flip it again,
roll it back, mask it the same way, cut the padding off), so each is its own textbook line.
"""
from .. import argcheck, backend, promotion
from ..argcheck import DTypeError, ShapeError
from ..autograd import Function
from ..convert import tensor_arg
from ..tensor import Tensor
from . import args


class Flip(Function):
    """y = x reversed along `dims`         dL/dx = g reversed along `dims`"""

    def forward(self, x, dims):
        self.dims = dims
        return backend.array_module(x).flip(x, axis=dims).copy()  # a copy: numpy's flip is a view

    def backward(self, g):
        return (Flip.apply(g, dims=self.dims),)


def flip(x, dims):
    """x with the order of its elements reversed along each of `dims` (an int or a tuple), as torch.flip."""
    x = tensor_arg(x, 'flip')
    dims = _dims(dims, x.shape, 'flip')
    return Flip.apply(x, dims=dims)


class Roll(Function):
    """y = x rolled by `shifts` along `dims` (elements leaving one end come back at the other)
        dL/dx = g rolled back by -shifts"""

    def forward(self, x, shifts, dims):
        self.shifts, self.dims = shifts, dims
        return backend.array_module(x).roll(x, shifts, axis=dims)

    def backward(self, g):
        return (Roll.apply(g, shifts=tuple(-s for s in self.shifts), dims=self.dims),)


def roll(x, shifts, dims=None):
    """torch.roll: shift the elements by `shifts` along `dims` (ints or tuples of one length);
    dims None rolls the flattened tensor and keeps the shape."""
    x = tensor_arg(x, 'roll')
    many = isinstance(shifts, (tuple, list))
    shifts = tuple(argcheck.integer(s, 'roll', 'shifts') for s in (shifts if many else (shifts,)))
    if dims is None:
        if len(shifts) != 1:
            raise ShapeError(f"roll: {len(shifts)} shifts need as many dims, got dims=None")
        return Roll.apply(x.reshape(-1), shifts=shifts, dims=(0,)).reshape(x.shape)
    dims = tuple(args.axis(d, x.shape, 'roll') for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    if len(dims) != len(shifts):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    return Roll.apply(x, shifts=shifts, dims=dims)


class Tril(Function):
    """y = x where column - row <= diagonal, else 0 (over the last two axes)
        dL/dx = g masked the same way"""
    keep = 'tril'

    def forward(self, x, diagonal):
        self.diagonal = diagonal
        return getattr(backend.array_module(x), self.keep)(x, diagonal)

    def backward(self, g):
        return (type(self).apply(g, diagonal=self.diagonal),)


class Triu(Tril):
    """y = x where column - row >= diagonal, else 0      dL/dx = g masked the same way"""
    keep = 'triu'


def tril(x, diagonal=0):
    """The lower triangle of the last two axes (diagonal > 0: that many diagonals above it too)."""
    return _triangle(Tril, x, diagonal, 'tril')


def triu(x, diagonal=0):
    """The upper triangle of the last two axes (diagonal > 0: starting that many diagonals above)."""
    return _triangle(Triu, x, diagonal, 'triu')


def _triangle(op, x, diagonal, name):
    x = tensor_arg(x, name)
    if x.ndim < 2:
        raise ShapeError(f"{name}: needs a tensor of at least 2 dimensions (a matrix, or a batch of them), "
                         f"not shape {x.shape}")
    return op.apply(x, diagonal=argcheck.integer(diagonal, name, 'diagonal'))


class Pad(Function):
    """y = x with `widths` (before, after) added along each axis, filled with `value`; a negative
    width cuts that many elements off instead
        dL/dx = g with the widths negated: the padding cut off, zeros where x was cut"""

    def forward(self, x, widths, value):
        self.widths = widths
        xp = backend.array_module(x)
        cut = tuple(slice(max(-before, 0), n - max(-after, 0)) for (before, after), n in zip(widths, x.shape))
        grow = [(max(before, 0), max(after, 0)) for before, after in widths]
        return xp.pad(x[cut], grow, mode='constant', constant_values=value)

    def backward(self, g):
        return (Pad.apply(g, widths=tuple((-before, -after) for before, after in self.widths), value=0),)


def pad(x, pad, mode='constant', value=None):
    """torch.nn.functional.pad: `pad` lists (before, after) widths starting from the LAST axis: (1, 2)
    pads the last axis by 1 before and 2 after; (1, 2, 0, 3) also pads the one before it by 0 and 3.

    mode 'constant' fills with `value` (0 by default), which must fit x's dtype (as PyTorch: 300 or -1
    into uint8, 1e5 into float16, nan into an integer tensor are refused); negative widths cut elements
    off, as in PyTorch: the cuts come first, so they may leave 0 elements but not fewer.  The other
    modes copy x's own entries, as PyTorch's do for the last 1, 2 or 3 dims of a batch:

        'reflect'    a b c d -> c b | a b c d | c b      (the edge not repeated; widths < the size)
        'replicate'  a b c d -> a a | a b c d | d d      (the edge repeated)
        'circular'   a b c d -> c d | a b c d | a b      (wrapped around; widths <= the size)
    """
    x = tensor_arg(x, 'pad')
    if mode not in ('constant', 'reflect', 'replicate', 'circular'):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', not {mode!r}")
    if mode != 'constant':
        if value is not None:
            raise ValueError(f"pad: value={value!r} is for mode 'constant' only; mode {mode!r} copies x's entries")
        return _pad_by_copying(x, pad, mode)
    value = 0 if value is None else value
    if x.ndim == 0:
        raise ShapeError("pad: a 0-d tensor has no axis to pad")
    if not isinstance(pad, (tuple, list)) or len(pad) % 2 or len(pad) > 2 * x.ndim:
        raise ShapeError(f"pad: pad must be a tuple of (before, after) pairs, at most one per axis "
                         f"({2 * x.ndim} numbers for shape {x.shape}), last axis first, not {pad!r}")
    widths = [argcheck.integer(w, 'pad', 'each width in pad') for w in pad]
    pairs = [(widths[i], widths[i + 1]) for i in range(0, len(widths), 2)][::-1]  # first axis first
    pairs = tuple([(0, 0)] * (x.ndim - len(pairs)) + pairs)
    for axis, ((before, after), n) in enumerate(zip(pairs, x.shape)):
        cut = -min(before, 0) - min(after, 0)
        if cut > n:
            raise ShapeError(f"pad: widths ({before}, {after}) on axis {axis} of size {n} leave a negative size: "
                             f"they cut {cut} elements off before padding, and the axis has {n} (PyTorch refuses "
                             f"this too); cut at most {n} elements off that axis")
    value = promotion.fit('pad', argcheck.real(value, 'pad', 'value'), x.dtype, negative_wraps=False)
    return Pad.apply(x, widths=pairs, value=value)


def _pad_by_copying(x, pad, mode):
    """mode 'reflect', 'replicate' or 'circular': along each padded dim, x indexed by the positions
    -before .. n - 1 + after, each mapped back into 0 .. n - 1 (an index: the gradients of copies add up)."""
    if not isinstance(pad, (tuple, list)) or len(pad) not in (2, 4, 6) or x.ndim - len(pad) // 2 not in (1, 2):
        raise NotImplementedError(  # (PyTorch's class for this)
            f"pad: mode {mode!r} pads the last 1, 2 or 3 dims of one example or of a batch, as PyTorch's: pad "
            f"needs 2, 4 or 6 widths and x one or two dims more than they pad (x {x.shape}, pad {pad!r})")
    widths = [argcheck.integer(w, 'pad', 'each width in pad', min=0) for w in pad]
    if mode != 'circular' and x.dtype.kind == 'b':
        raise DTypeError(f"pad: mode {mode!r} of a bool tensor is not supported, as in PyTorch; convert it first")
    xp = backend.array_module(x.data)
    for k in range(len(widths) // 2):
        axis, (before, after) = x.ndim - 1 - k, widths[2 * k:2 * k + 2]
        n = x.shape[axis]
        limit = n - 1 if mode == 'reflect' else n if mode == 'circular' else None
        if limit is not None and max(before, after) > limit or n == 0:
            raise ShapeError(f"pad: mode {mode!r} needs widths {'<' if mode == 'reflect' else '<='} the size of "
                             f"the dim they pad: ({before}, {after}) on dim {axis} of size {n} (x {x.shape})")
        i = xp.arange(-before, n + after)
        if mode == 'reflect':
            i = xp.abs(i)
            i = xp.where(i >= n, 2 * (n - 1) - i, i)
        elif mode == 'replicate':
            i = xp.clip(i, 0, n - 1)
        else:
            i = i % n
        x = x[(slice(None),) * axis + (Tensor._wrap(i),)]
    return x


def _dims(dims, shape, op):
    """Distinct axes, an int or a tuple, as non-negative ints in the order given."""
    dims = tuple(args.axis(d, shape, op) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{op}: dims {dims} names an axis twice")
    return dims
