"""Shape ops: they move numbers around without changing them, so each backward
moves the gradient back the same way (reshape <-> reshape, slice <-> scatter)."""
from .. import argcheck, backend
from ..argcheck import ShapeError
from ..autograd import Function
from .. import promotion
from ..convert import tensor_arg
from ..tensor import Tensor
from . import args
from .index import is_basic


class Reshape(Function):
    """y = x.reshape(shape)           dL/dx = g.reshape(x.shape)"""

    def forward(self, x, shape):
        return x.reshape(shape)

    def backward(self, g):
        return (g.reshape(self.inputs[0].shape),)


def reshape(x, *shape):
    """x.reshape(2, 3) or x.reshape((2, 3)); one size may be -1 (inferred from the others)."""
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    if shape == x.shape:  # valid by construction
        return x
    shape = args.new_shape(shape, 'reshape')
    return Reshape.apply(x, shape=shape)


class Transpose(Function):
    """y = x.permute(axes)            dL/dx = g.permute(inverse of axes)"""

    def forward(self, x, axes):
        self.axes = axes
        return x.transpose(axes)

    def backward(self, g):
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return (g.permute(*inverse),)


def permute(x, *dims, op='permute'):
    """x.permute(2, 0, 1) or x.permute((2, 0, 1)): dimension i of the result is dimension dims[i] of x."""
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    normalized = tuple(args.axis(a, x.shape, op) for a in dims)
    if sorted(normalized) != list(range(x.ndim)):
        raise ShapeError(f"{op}: dims {dims} are not a permutation of the {x.ndim} dimensions of a tensor of "
                         f"shape {x.shape} (each of 0 to {x.ndim - 1} once, or its negative)")
    return Transpose.apply(x, axes=normalized)


def transpose(x, *dims):
    """PyTorch's transpose(dim0, dim1): the two dims swapped (negative dims count from the end).

    Where it cannot be mistaken for a swap, numpy's forms stay: no dims reverses them all (x.T),
    and one tuple or three or more dims are a permutation, as permute."""
    if len(dims) == 2 and not any(isinstance(d, (tuple, list)) for d in dims):
        return swapaxes(x, *dims, op='transpose')
    if not dims:
        return Transpose.apply(x, axes=tuple(range(x.ndim))[::-1])
    if len(dims) == 1 and not isinstance(dims[0], (tuple, list)):
        raise TypeError(f"transpose: takes two dims to swap (PyTorch's transpose(dim0, dim1)), got only {dims[0]!r}; "
                        "for a permutation use permute")
    return permute(x, *dims, op='transpose')


def swapaxes(x, axis1, axis2, op='swapaxes'):
    """Dimensions axis1 and axis2 exchanged (PyTorch's transpose(dim0, dim1))."""
    axes = list(range(x.ndim))
    axis1, axis2 = args.axis(axis1, x.shape, op), args.axis(axis2, x.shape, op)
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return Transpose.apply(x, axes=tuple(axes))  # a valid permutation by construction


def matrix_transpose(x):
    """x.mT: the last two dimensions swapped (a batch of matrices, each transposed)."""
    if x.ndim < 2:
        raise ShapeError(f"mT: needs a tensor of at least 2 dimensions (a batch of matrices), not shape {x.shape}")
    return swapaxes(x, -2, -1, op='mT')


def expand_dims(x, axis):
    """Insert a size-1 axis at `axis` (a reshape); axis may be x.ndim (a new last axis)."""
    axis = args.axis(axis, x.shape, 'expand_dims', new=True)
    return Reshape.apply(x, shape=x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, dim=None):
    """Remove size-1 dims: all of them, or those among `dim` (one dim or a tuple) whose size is 1;
    a named dim of another size stays, as in PyTorch (numpy would raise)."""
    if dim is None:
        return Reshape.apply(x, shape=tuple(n for n in x.shape if n != 1))
    dims = args.axes(dim, x.shape, 'squeeze')
    return Reshape.apply(x, shape=tuple(n for i, n in enumerate(x.shape) if not (i in dims and n == 1)))


def flatten(x, start_dim=0, end_dim=-1):
    """Dims start_dim to end_dim (inclusive) merged into one, as a reshape; a 0-d tensor becomes shape (1,)."""
    if x.ndim == 0:
        for d in (start_dim, end_dim):
            args.axes(d, x.shape, 'flatten')  # only dim 0 or -1, as PyTorch
        return Reshape.apply(x, shape=(1,))
    start, end = args.axis(start_dim, x.shape, 'flatten'), args.axis(end_dim, x.shape, 'flatten')
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (a tensor of shape {x.shape})")
    merged = 1
    for n in x.shape[start:end + 1]:
        merged *= n
    return Reshape.apply(x, shape=x.shape[:start] + (merged,) + x.shape[end + 1:])


def unflatten(x, dim, sizes):
    """Dim `dim` split into `sizes` (their product must be its size; one may be -1), as a reshape."""
    dim = args.axis(dim, x.shape, 'unflatten')
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"unflatten: sizes must be a tuple or list of sizes, as PyTorch's, "
                        f"not {type(sizes).__name__} {sizes!r}")
    sizes = args.new_shape(tuple(sizes), 'unflatten')
    if not sizes:
        raise ValueError(f"unflatten: sizes must name at least one size, got {sizes}")
    known = 1
    for n in sizes:
        known *= n if n != -1 else 1
    n = x.shape[dim]
    if -1 in sizes:
        if known == 0 or n % known:
            raise ShapeError(f"unflatten: dim {dim} of size {n} (shape {x.shape}) cannot be split into {sizes}")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise ShapeError(f"unflatten: sizes {sizes} multiply to {known}, but dim {dim} of shape {x.shape} has size {n}")
    return Reshape.apply(x, shape=x.shape[:dim] + sizes + x.shape[dim + 1:])


class Clone(Function):
    """y = a copy of x in its own (C-ordered) memory       dL/dx = g"""

    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return (g,)


def contiguous(x):
    """x itself when its memory is already C-ordered (as PyTorch), else a C-ordered copy (Clone)."""
    return x if x.data.flags.c_contiguous else Clone.apply(x)


class BroadcastTo(Function):
    """y = x broadcast to `shape`      dL/dx = g summed back to x's shape"""

    def forward(self, x, shape):
        return backend.array_module(x).broadcast_to(x, shape)

    def backward(self, g):
        return (g.sum_to(self.inputs[0].shape),)


def broadcast_to(x, shape):
    if shape == x.shape:  # valid by construction
        return x
    shape = args.sizes(shape, 'broadcast_to')
    if shape == x.shape:
        return x
    return BroadcastTo.apply(x, shape=shape)  # (a shape that does not fit: numpy's error, as a ShapeError)


def expand(x, *sizes):
    """PyTorch's expand: x.expand(3, -1, 4) repeats size-1 dims (and new leading dims) without copying;
    -1 keeps a dim's size.  A broadcast_to: backward sums the gradient back."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    sizes = tuple(argcheck.integer(n, 'expand', 'each size') for n in sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes {sizes} for a tensor of shape {x.shape}: give at least "
                         f"{x.ndim} (one per dim, -1 to keep it)")
    if any(n == -1 for n in sizes[:lead]):
        raise ShapeError(f"expand: sizes {sizes}: a new leading dim cannot be -1 (it has no size to keep)")
    shape = sizes[:lead] + tuple(old if n == -1 else n for n, old in zip(sizes[lead:], x.shape))
    if any(n < 0 for n in shape) or not backend.broadcasts_to(x.shape, shape):
        raise ShapeError(f"expand: a tensor of shape {x.shape} cannot expand to {sizes}: only a dim of size 1 "
                         "can take a new size (-1 keeps one)")
    return broadcast_to(x, shape)


class GetItem(Function):
    """y = x[index]   (slices, ints, None, ..., integer arrays, boolean masks)
        dL/dx = zeros like x, with g added at x[index] (repeated indices add up)

    The index arrays it saves are private copies, checked against x's shape and device
    (ops/index.py): changing them after the forward pass cannot move the gradient.
    """

    def forward(self, x, index):
        self.index = index
        return x[index]

    def backward(self, g):
        return (ScatterAdd.apply(g, index=self.index, shape=self.inputs[0].shape),)


class ScatterAdd(Function):
    """y = zeros(shape); y[index] += x        dL/dx = g[index]

    GetItem's backward, and itself differentiable (for second derivatives).  Its index is
    GetItem's: already checked against the shape and a private copy.
    """

    def forward(self, x, index, shape):
        self.index = index
        out = backend.array_module(x).zeros(shape, dtype=x.dtype)
        if is_basic(index):
            out[index] = x  # slices never repeat an element: a plain assignment is enough
        else:
            backend.scatter_add(out, index, x)
        return out

    def backward(self, g):
        return (GetItem.apply(g, index=self.index),)


class SetItem(Function):
    """y = x with y[index] = value       (buf[index] = value, written into x's memory)
        dL/dx = g with zeros at index      (those entries of x were overwritten)
        dL/dvalue = g[index]               (summed over value's broadcasting)

    An index that names an element twice (x[[0, 0]] = v) writes it once: numpy keeps
    the last write, cupy any one of them.  So that y and the gradients always agree on
    which, the op records the winner of each written element in `writer` (an id per
    element of the broadcast value) and copies exactly those values; only a winning
    write gets a gradient, the others lose theirs as their values were lost.  Like
    GetItem, it saves private copies of the index arrays.
    """

    def forward(self, x, value, index):
        self.index = index
        if is_basic(index):  # ints and slices never name an element twice
            x[index] = value
            self.won = None
            return x
        xp = backend.array_module(x)
        writer = xp.full(x.shape, -1, dtype='int64')  # which write each element of y took; -1: none
        region = writer[index].shape
        ids = xp.arange(writer[index].size, dtype='int64').reshape(region)
        writer[index] = ids
        self.won = writer[index] == ids
        written = writer >= 0
        x[written] = xp.broadcast_to(value, region).reshape(-1)[writer[written]]
        return x

    def backward(self, g):
        x, value = self.inputs
        gx = gv = None
        if self.needs_grad(0):
            keep = backend.array_module(g.data).ones(g.shape, dtype=g.dtype)
            keep[self.index] = 0
            gx = g * Tensor._wrap(keep)
        if self.needs_grad(1):
            gv = GetItem.apply(g, index=self.index)
            if self.won is not None:
                gv = gv * Tensor._wrap(self.won.astype(g.dtype))
            if value.ndim > gv.ndim:  # numpy lets a value carry extra leading 1s: x[0] = v[None]
                gv = gv.reshape(value.shape[:value.ndim - gv.ndim] + gv.shape)
        return gx, gv


class Concatenate(Function):
    """y = concatenate([x_1, ..., x_n], axis)     dL/dx_i = the slice of g where x_i went"""

    def forward(self, *xs, axis):
        self.axis = axis
        return backend.array_module(xs[0]).concatenate(xs, axis=axis)

    def backward(self, g):
        grads, start = [], 0
        axis = self.axis % g.ndim
        for x in self.inputs:
            stop = start + x.shape[axis]
            grads.append(g[(slice(None),) * axis + (slice(start, stop),)])
            start = stop
        return tuple(grads)


def tensor_list(op, tensors):
    """The tensors to join: a list or tuple holding at least one Tensor; the other items
    (numbers, arrays) become constants like the first Tensor, as in mt.add."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: expected a list or tuple of tensors, not {type(tensors).__name__}")
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    if like is None:
        raise (ValueError if not tensors else TypeError)(
            f"{op}: needs at least one tensor" + (f", got only {type(tensors[0]).__name__}s" if tensors else ""))
    tensors = promotion.operands(op, *tensors)  # in their common dtype, as torch.cat
    if any(t.ndim == 0 for t in tensors) and op == 'concatenate':
        raise ValueError(f"concatenate: 0-d tensors cannot be concatenated (they have no axis); use mt.stack, "
                         f"got shapes {[t.shape for t in tensors]}")
    return tensors


def concatenate(tensors, dim=0, *, axis=0):
    """Join tensors along dim (PyTorch's name; numpy's axis= too), the first by default: mt.cat."""
    axis = args.one_dim('concatenate', dim, axis, 0)
    tensors = tensor_list('concatenate', tensors)
    axis = args.axis(axis, tensors[0].shape, 'concatenate')
    return Concatenate.apply(*tensors, axis=axis)


def stack(tensors, dim=0, *, axis=0):
    """Join tensors of one shape along a new dim (PyTorch's name; numpy's axis= too), the first by default."""
    axis = args.one_dim('stack', dim, axis, 0)
    tensors = tensor_list('stack', tensors)
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise ShapeError(f"stack: all tensors must have the same shape, got {[t.shape for t in tensors]}")
    axis = args.axis(axis, tensors[0].shape, 'stack', new=True)
    return Concatenate.apply(*[Reshape.apply(t, shape=t.shape[:axis] + (1,) + t.shape[axis:]) for t in tensors],
                             axis=axis)


def split(x, split_size_or_sections, dim=0, *, axis=0):
    """PyTorch's split: chunks of split_size_or_sections along dim (an int: the last may be smaller),
    or pieces of the listed sizes (they must add up to the dim's size).  A tuple of slices.

    numpy's split reads an int as a number of sections and a list as cut positions: for n
    pieces use chunk(x, n)."""
    dim = args.axis(args.one_dim('split', dim, axis, 0), tensor_arg(x, 'split').shape, 'split')
    size = x.shape[dim]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [argcheck.integer(n, 'split', 'each size in split_size_or_sections', min=0)
                 for n in split_size_or_sections]
        if sum(sizes) != size:
            raise ShapeError(f"split: sizes {sizes} add up to {sum(sizes)}, but dim {dim} of shape {x.shape} has "
                             f"size {size}. A list gives the sizes of the pieces, as in PyTorch (numpy's split "
                             "takes the positions of the cuts instead)")
    else:
        n = argcheck.integer(split_size_or_sections, 'split', 'split_size_or_sections (the size of each chunk, '
                             'or a list of sizes)', min=0)
        if n == 0 and size:
            raise ValueError(f"split: chunks of size 0 cannot cover dim {dim} of size {size}; give a size >= 1 "
                             "(for n equal pieces use chunk(x, n))")
        sizes = [min(n, size - start) for start in range(0, size, n)] if size else [0]
    lead, start, pieces = (slice(None),) * dim, 0, []
    for n in sizes:
        pieces.append(x[lead + (slice(start, start + n),)])
        start += n
    return tuple(pieces)


def unbind(x, dim=0):
    """PyTorch's unbind: the slices of x along dim, each without that dim, as a tuple (x[0], x[1], ...
    for dim 0); each is an indexing op, so each piece's gradient lands in its slice."""
    dim = args.axis(dim, tensor_arg(x, 'unbind').shape, 'unbind')
    lead = (slice(None),) * dim
    return tuple(x[lead + (i,)] for i in range(x.shape[dim]))


def chunk(x, chunks, dim=0):
    """PyTorch's chunk: x cut along dim into `chunks` pieces of ceil(size / chunks) each, the last
    smaller; fewer pieces when the size runs out first (torch's rule), as split(x, that size)."""
    chunks = argcheck.integer(chunks, 'chunk', 'chunks', min=1)
    dim = args.axis(dim, tensor_arg(x, 'chunk').shape, 'chunk')
    size = x.shape[dim]
    return split(x, -(-size // chunks) if size else [0] * chunks, dim)  # an empty dim: `chunks` empty pieces


class ToDevice(Function):
    """y = x copied to another device        dL/dx = g copied back"""

    def forward(self, x, device):
        self.source = backend.device_of(x)
        return backend.to_device(x, device)

    def backward(self, g):
        return (g.to(self.source),)
