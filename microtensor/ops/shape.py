"""Shape ops: they move numbers around without changing them, so each backward
moves the gradient back the same way (reshape <-> reshape, slice <-> scatter)."""
from .. import backend
from ..autograd import Function


class Reshape(Function):
    """y = x.reshape(shape)           dL/dx = g.reshape(x.shape)"""

    def forward(self, x, shape):
        return x.reshape(shape)

    def backward(self, g):
        return (g.reshape(self.inputs[0].shape),)


def reshape(x, *shape):
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    if shape == x.shape:
        return x
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


def check_axis(op, axis, x, ndim=None):
    """`axis` (maybe negative) as an index in range(ndim), ndim = x.ndim unless given;
    else an IndexError that names the op and x's shape."""
    ndim = x.ndim if ndim is None else ndim
    if not -ndim <= axis < ndim:
        raise IndexError(f"{op}: axis {axis} is out of range for a tensor of shape {x.shape}")
    return axis % ndim


def transpose(x, *axes):
    """Permute axes; no axes reverses them (x.T)."""
    axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
    if not axes:
        axes = tuple(range(x.ndim))[::-1]
    normalized = tuple(check_axis('Transpose', a, x) for a in axes)
    if sorted(normalized) != list(range(x.ndim)):
        raise ValueError(f"Transpose: axes {axes} are not a permutation of a tensor of shape {x.shape}")
    return Transpose.apply(x, axes=normalized)


def swapaxes(x, axis1, axis2):
    axes = list(range(x.ndim))
    axis1, axis2 = check_axis('swapaxes', axis1, x), check_axis('swapaxes', axis2, x)
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return Transpose.apply(x, axes=tuple(axes))  # a valid permutation by construction


def expand_dims(x, axis):
    """Insert a size-1 axis at `axis` (a reshape)."""
    axis = check_axis('expand_dims', axis, x, ndim=x.ndim + 1)
    return Reshape.apply(x, shape=x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, axis=None):
    """Remove size-1 axes (all of them, or `axis`), as a reshape."""
    axes = None
    if axis is not None:
        axes = [check_axis('squeeze', a, x) for a in ((axis,) if isinstance(axis, int) else axis)]
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
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return BroadcastTo.apply(x, shape=shape)


class GetItem(Function):
    """y = x[index]   (slices, ints, None, ..., integer arrays, boolean masks)
        dL/dx = zeros like x, with g added at x[index] (repeated indices add up)"""

    def forward(self, x, index):
        self.index = index
        return x[index]

    def backward(self, g):
        return (ScatterAdd.apply(g, index=self.index, shape=self.inputs[0].shape),)


class ScatterAdd(Function):
    """y = zeros(shape); y[index] += x        dL/dx = g[index]

    GetItem's backward, and itself differentiable (for second derivatives).
    """

    def forward(self, x, index, shape):
        self.index = index
        out = backend.array_module(x).zeros(shape, dtype=x.dtype)
        if _is_basic(index):
            out[index] = x  # slices never repeat an element: a plain assignment is enough
        else:
            backend.scatter_add(out, index, x)
        return out

    def backward(self, g):
        return (GetItem.apply(g, index=self.index),)


def _is_basic(index):
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts)


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


def concatenate(tensors, axis=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concatenate: needs at least one tensor")
    return Concatenate.apply(*tensors, axis=axis)


def stack(tensors, axis=0):
    """Join tensors of one shape along a new axis."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise ValueError(f"stack: all tensors must have the same shape, got {[t.shape for t in tensors]}")
    return concatenate([expand_dims(t, axis) for t in tensors], axis=axis)


def split(x, indices_or_sections, axis=0):
    """numpy.split: n equal sections, or cut before each given index; a list of slices."""
    axis = check_axis('split', axis, x)
    size = x.shape[axis]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0 or size % n:
            raise ValueError(f"split: an axis of size {size} cannot be split into {n} equal sections")
        cuts = [size // n * i for i in range(1, n)]
    else:
        cuts = list(indices_or_sections)
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
