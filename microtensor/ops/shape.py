"""Shape ops: they move numbers around without changing them, so each backward
moves the gradient back the same way (reshape <-> reshape, slice <-> scatter)."""
from .. import argcheck, backend
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
    """y = x.transpose(axes)          dL/dx = g.transpose(inverse of axes)"""

    def forward(self, x, axes):
        self.axes = axes
        return x.transpose(axes)

    def backward(self, g):
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return (g.transpose(*inverse),)


def transpose(x, *axes):
    """Permute axes; no axes reverses them (x.T)."""
    axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
    if not axes:
        axes = tuple(range(x.ndim))[::-1]
    normalized = tuple(args.axis(a, x.shape, 'Transpose') for a in axes)
    if sorted(normalized) != list(range(x.ndim)):
        raise ValueError(f"Transpose: axes {axes} are not a permutation of a tensor of shape {x.shape}")
    return Transpose.apply(x, axes=normalized)


def swapaxes(x, axis1, axis2):
    axes = list(range(x.ndim))
    axis1, axis2 = args.axis(axis1, x.shape, 'swapaxes'), args.axis(axis2, x.shape, 'swapaxes')
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return Transpose.apply(x, axes=tuple(axes))  # a valid permutation by construction


def expand_dims(x, axis):
    """Insert a size-1 axis at `axis` (a reshape); axis may be x.ndim (a new last axis)."""
    axis = args.axis(axis, x.shape, 'expand_dims', new=True)
    return Reshape.apply(x, shape=x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, axis=None):
    """Remove size-1 axes (all of them, or `axis`: one axis or a tuple), as a reshape."""
    axes = None
    if axis is not None:
        axes = args.axes(axis, x.shape, 'squeeze')
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    shape = tuple(n for i, n in enumerate(x.shape) if (n != 1 if axes is None else i not in axes))
    return Reshape.apply(x, shape=shape)


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
    return BroadcastTo.apply(x, shape=shape)


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


def concatenate(tensors, axis=0):
    tensors = tensor_list('concatenate', tensors)
    axis = args.axis(axis, tensors[0].shape, 'concatenate')
    return Concatenate.apply(*tensors, axis=axis)


def stack(tensors, axis=0):
    """Join tensors of one shape along a new axis."""
    tensors = tensor_list('stack', tensors)
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise ValueError(f"stack: all tensors must have the same shape, got {[t.shape for t in tensors]}")
    axis = args.axis(axis, tensors[0].shape, 'stack', new=True)
    return Concatenate.apply(*[Reshape.apply(t, shape=t.shape[:axis] + (1,) + t.shape[axis:]) for t in tensors],
                             axis=axis)


def split(x, indices_or_sections, axis=0):
    """numpy.split: n equal sections, or cut before each given index; a list of slices."""
    axis = args.axis(axis, tensor_arg(x, 'split').shape, 'split')
    size = x.shape[axis]
    if not isinstance(indices_or_sections, (list, tuple)):
        n = argcheck.integer(indices_or_sections, 'split', 'indices_or_sections (a number of sections, or a list of cuts)')
        if n <= 0 or size % n:
            raise ValueError(f"split: an axis of size {size} cannot be split into {n} equal sections")
        cuts = [size // n * i for i in range(1, n)]
    else:
        cuts = [argcheck.integer(i, 'split', 'each cut in indices_or_sections') for i in indices_or_sections]
    bounds = [0] + cuts + [size]
    lead = (slice(None),) * axis
    return [x[lead + (slice(start, stop),)] for start, stop in zip(bounds[:-1], bounds[1:])]


class ToDevice(Function):
    """y = x copied to another device        dL/dx = g copied back"""

    def forward(self, x, device):
        self.source = backend.device_of(x)
        return backend.to_device(x, device)

    def backward(self, g):
        return (g.to(self.source),)
