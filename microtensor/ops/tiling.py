"""Repeating a tensor: repeat, tile, repeat_interleave; meshgrid; and Tensor.unfold's sliding windows.

Each is a reshape, an expand and a reshape (or, for per-entry counts, an index), so its gradient is
the expand's: the gradients of the copies of an entry add up.

    repeat(2, 3) of a (a, b) tensor      the whole tensor 2 times down, 3 across: (2a, 3b)
    tile(dims)                           repeat, with dims padded by 1s in front to x's number of dims
    repeat_interleave(r, dim)            each entry r times in a row along dim: [x0, x0, x1, x1, ...]
    meshgrid(a, b)                       a repeated across, b repeated down: every pair (a_i, b_j)
    x.unfold(dim, size, step)            the windows x[i*step : i*step + size] along dim, as a new last dim
                                         (an index: where windows overlap, their gradients add up)
"""
from .. import argcheck, backend
from ..argcheck import ShapeError
from ..convert import tensor_arg
from ..tensor import Tensor


def _sizes(sizes, op):
    """repeat(2, 3) and repeat((2, 3)) alike: a tuple of counts >= 0."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    return tuple(argcheck.integer(n, op, 'each count', min=0) for n in sizes)


def repeat(x, *sizes):
    """x repeated sizes[i] times along dim i, as PyTorch's Tensor.repeat (numpy's tile): sizes may have more
    entries than x has dims (new dims in front), not fewer."""
    x = tensor_arg(x, 'repeat')
    reps = _sizes(sizes, 'repeat')
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat: {len(reps)} counts for a tensor of {x.ndim} dims (shape {x.shape}); give one "
                         f"count per dim (or more: new dims in front), as in PyTorch; tile() pads them with 1s")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    between = tuple(d for n in shape for d in (1, n))             # (1, s0, 1, s1, ...)
    copies = tuple(d for r, n in zip(reps, shape) for d in (r, n))  # (r0, s0, r1, s1, ...)
    return x.reshape(between).expand(*copies).reshape(tuple(r * n for r, n in zip(reps, shape)))


def tile(x, dims):
    """x repeated dims[i] times along dim i; fewer dims than x has are padded with 1s in front (torch.tile)."""
    x = tensor_arg(x, 'tile')
    reps = _sizes((dims,) if not isinstance(dims, (tuple, list)) else (tuple(dims),), 'tile')
    return repeat(x, (1,) * (x.ndim - len(reps)) + reps)


def repeat_interleave(x, repeats, dim=None):
    """Each entry of x repeated along dim, in place: repeats a number (every entry that often) or a 1-d
    tensor of counts (one per entry along dim); dim None: of the flattened x."""
    x = tensor_arg(x, 'repeat_interleave')
    if dim is None:
        x, dim = x.reshape(-1), 0
    if x.ndim == 0:
        x = x.reshape(1)
    dim = argcheck.integer(dim, 'repeat_interleave', 'dim')
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"repeat_interleave: dim {dim} is out of range for a tensor of shape {x.shape}")
    dim %= x.ndim
    n = x.shape[dim]
    if isinstance(repeats, Tensor):
        counts = repeats.data
        if counts.dtype.kind not in 'iu' or counts.ndim > 1 or (counts.ndim == 1 and counts.shape[0] not in (1, n)):
            raise ShapeError(f"repeat_interleave: repeats must be an integer tensor of one count, or of one per "
                             f"entry along dim {dim} ({n}), not {counts.dtype} of shape {tuple(counts.shape)}")
        if counts.size and bool((counts < 0).any()):
            raise ValueError("repeat_interleave: repeats must be >= 0")
        xp = backend.array_module(counts)
        picks = xp.repeat(xp.arange(n), xp.broadcast_to(counts.reshape(-1), (n,)))
        return x[(slice(None),) * dim + (Tensor._wrap(picks),)]
    r = argcheck.integer(repeats, 'repeat_interleave', 'repeats', min=0)
    spread = x.unsqueeze(dim + 1)
    return spread.expand(*x.shape[:dim + 1], r, *x.shape[dim + 1:]).reshape(x.shape[:dim] + (n * r,) + x.shape[dim + 1:])


def meshgrid(*tensors, indexing='ij'):
    """One tensor per 1-d input, each of the shape (len(t) for t in tensors): the i-th holds tensors[i]'s
    values along dim i (indexing 'ij', PyTorch's default) or with the first two dims swapped ('xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    tensors = [tensor_arg(t, 'meshgrid', 'each tensor') for t in tensors]
    if indexing not in ('ij', 'xy'):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', not {indexing!r}")
    if any(t.ndim > 1 for t in tensors):
        raise ShapeError(f"meshgrid: each tensor must be 0-d or 1-d, not shapes {[t.shape for t in tensors]}")
    tensors = [t.reshape(-1) for t in tensors]
    order = list(range(len(tensors)))
    if indexing == 'xy' and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(tensors[i].shape[0] for i in order)
    return tuple(t.reshape([-1 if order[d] == i else 1 for d in range(len(tensors))]).expand(*shape)
                 for i, t in enumerate(tensors))


def unfold(x, dimension, size, step):
    """The windows of `size` entries along `dimension`, every `step` entries, as Tensor.unfold: that dim
    becomes the number of windows, (n - size) // step + 1, and a new last dim of `size` holds each window."""
    x = tensor_arg(x, 'unfold')
    size = argcheck.integer(size, 'unfold', 'size', min=0)
    step = argcheck.integer(step, 'unfold', 'step', min=1)
    if x.ndim == 0:
        x = x.reshape(1)
        dimension = argcheck.integer(dimension, 'unfold', 'dimension')
        if dimension not in (0, -1):
            raise IndexError(f"unfold: dimension {dimension} is out of range for a 0-d tensor")
        return unfold(x, 0, size, step).reshape((-1,))
    dim = argcheck.integer(dimension, 'unfold', 'dimension')
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"unfold: dimension {dim} is out of range for a tensor of shape {x.shape}")
    dim %= x.ndim
    n = x.shape[dim]
    if size > n:
        raise ShapeError(f"unfold: size {size} is more than the {n} entries along dim {dim} of shape {x.shape}")
    xp = backend.array_module(x.data)
    windows = xp.arange((n - size) // step + 1)[:, None] * step + xp.arange(size)[None, :]  # (count, size)
    picked = x[(slice(None),) * dim + (Tensor._wrap(windows),)]           # (..., count, size, ...)
    order = [d for d in range(picked.ndim) if d != dim + 1] + [dim + 1]  # the window's entries last
    return picked.permute(*order)
