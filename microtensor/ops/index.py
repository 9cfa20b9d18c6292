"""What x[index] and x[index] = value accept, checked once at the boundary.

`normalize` turns an index that holds arrays (Tensors, numpy/cupy arrays, lists) into a
tuple that numpy and cupy read alike: ints, slices, None, ..., and arrays of ints or
bools.  Before any backend call it checks

    types    a float, str or object index is an IndexError that names the op;
    devices  an index array must live on the tensor's device (no implicit copies);
    bounds   every integer must lie in [-n, n) for its axis of size n.  numpy would raise,
             but cupy wraps around silently (x[n] reads x[0], and the backward scatters
             there), so the engine checks itself: one reduction on the device per index
             array, then one host sync, and both backends raise the same IndexError.

Integer index arrays become the platform's index type (intp, int64 on 64-bit systems):
token ids stored as uint8 or uint16, as nanoGPT stores them, would otherwise overflow
where the backward computes offsets from them (row * width), and send the gradient of
one embedding row to another.

Each index array is a private copy: GetItem's backward scatters g back through the same
index, and an index array changed in place after the forward pass (ids[0] = 3) would
send the gradient to other rows.  Indices are small next to the data they pick, so the
copy costs little.  Indices made only of ints and slices never reach this module: numpy
and cupy both check those, and nothing is saved that could change.
"""
import numbers

from .. import backend
from ..convert import param_array
from ..tensor import Tensor
from ..argcheck import short


INDEX_MAX = 2 ** (8 * backend.INDEX.itemsize - 1) - 1


def is_basic(index):
    """Only ints, slices, None and ...: no element is picked twice and nothing needs checking here."""
    if type(index) is not tuple:
        return index is None or index is Ellipsis or isinstance(index, (int, slice))
    for p in index:
        if not (p is None or p is Ellipsis or isinstance(p, (int, slice))):
            return False
    return True


def normalize(index, x, op):
    """`index` as a tuple of ints, slices, None, ... and private, checked index arrays."""
    parts = index if isinstance(index, tuple) else (index,)
    out = [_part(p, x, op) for p in parts]
    _check(out, x.shape, op)
    return tuple(out)


def _part(p, x, op):
    if p is None or p is Ellipsis or isinstance(p, slice):
        return p
    if isinstance(p, bool) or type(p).__name__ in ('bool', 'bool_'):
        return bool(p)  # numpy reads a lone bool as a 0-d mask
    if isinstance(p, numbers.Integral):
        return int(p)
    a = param_array(p, x, op, 'index')
    if a.dtype.kind == 'f' and a.size == 0 and not (backend.is_array(p) or isinstance(p, Tensor)):
        a = a.astype('int64')  # x[[]]: numpy reads an empty list as an empty integer index
    if a.dtype.kind not in 'biu':
        raise IndexError(f"{op}: {short(p)} ({type(p).__name__} of {a.dtype}) is not a valid index: use ints, "
                         "slices, None, ..., or arrays (Tensors, lists) of ints or bools")
    if a.dtype.kind == 'b':
        return a.copy() if a is p or isinstance(p, Tensor) else a
    if a.dtype == 'uint64' and a.size and bool((a > INDEX_MAX).any()):  # would wrap to negatives below
        raise IndexError(f"{op}: index {int(a.max())} is out of bounds for every axis")
    return a.astype(backend.INDEX)  # a new array (the private copy) in the platform's index type


def _check(parts, shape, op):
    """Too many indices, masks of the wrong shape and out-of-range ints, for a tensor of `shape`."""
    used = ellipses = 0
    for p in parts:
        used += _axes_used(p)
        ellipses += p is Ellipsis
    if ellipses > 1:
        raise IndexError(f"{op}: an index can hold only one ellipsis (...)")
    if used > len(shape):
        raise IndexError(f"{op}: too many indices ({used}) for a tensor of shape {shape}")
    axis, arrays = 0, []
    for p in parts:
        if p is Ellipsis:
            axis += len(shape) - used
        elif isinstance(p, int) and not isinstance(p, bool):
            _in_range(p, axis, shape, op)
            axis += 1
        elif isinstance(p, slice):
            axis += 1
        elif backend.is_array(p) and p.dtype.kind == 'b':
            if p.shape != shape[axis:axis + p.ndim]:
                raise IndexError(f"{op}: a boolean mask of shape {p.shape} does not match axes {axis} to "
                                 f"{axis + p.ndim - 1} of a tensor of shape {shape} "
                                 f"(sizes {shape[axis:axis + p.ndim]})")
            axis += p.ndim
        elif backend.is_array(p):
            if p.size:
                arrays.append((p, axis))
            axis += 1
    if arrays:
        _arrays_in_range(arrays, shape, op)


def _axes_used(p):
    if p is None or p is Ellipsis or isinstance(p, bool):
        return 0
    if backend.is_array(p) and p.dtype.kind == 'b':
        return p.ndim
    return 1


def _in_range(i, axis, shape, op):
    n = shape[axis]
    if not -n <= i < n:
        raise IndexError(f"{op}: index {i} is out of bounds for axis {axis} of size {n} "
                         f"(a tensor of shape {shape})")


def _arrays_in_range(arrays, shape, op):
    """One device reduction per index array, then one host sync for all of them."""
    outside = None
    for a, axis in arrays:
        n = shape[axis]
        any_outside = ((a < -n) | (a >= n)).any()
        outside = any_outside if outside is None else outside | any_outside
    if bool(outside):  # the host sync; below runs only on the way to the error
        for a, axis in arrays:
            n = shape[axis]
            bad = a[(a < -n) | (a >= n)]
            if bad.size:
                _in_range(int(bad.reshape(-1)[0]), axis, shape, op)


def _is_int(p):
    """An int, or a 0-d integer array (PyTorch reads a 0-d integer tensor index as an int)."""
    return isinstance(p, int) and not isinstance(p, bool) or backend.is_array(p) and p.ndim == 0 and p.dtype.kind in 'iu'


def split_ints(index):
    """PyTorch's reading of an index that mixes ints with index arrays, x[1, :, ids]: the ints pick
    first (as x[1]), then the arrays index what is left.  numpy instead counts the ints among the
    index arrays, and when a slice separates them moves the arrays' dimensions to the front
    (x[1, :, [0, 1]] of shape (2, 3, 4) is (2, 3) in numpy, (3, 2) in PyTorch).

    Returns (ints, rest): two indices to apply one after the other, or None when `index`
    (normalized) does not mix ints with arrays, where both libraries agree."""
    arrays = [p for p in index if backend.is_array(p) and not _is_int(p)]
    if not arrays or not any(_is_int(p) for p in index):
        return None
    ints, rest = [], []
    for p in index:
        if _is_int(p):
            ints.append(int(p))
        elif p is None or isinstance(p, bool) or backend.is_array(p) and p.ndim == 0:
            rest.append(p)  # a new axis (None, a lone bool) takes no axis of x
        elif p is Ellipsis:
            ints.append(p)
            rest.append(p)
        else:  # a slice or an index array takes one axis of x, a mask one per dimension
            ints.extend([slice(None)] * (p.ndim if backend.is_array(p) and p.dtype.kind == 'b' else 1))
            rest.append(p)
    return tuple(ints), tuple(rest)


def check_mixed_write(index, x, value):
    """x[index] = value where ints mix with index arrays: the written elements are the same in numpy
    and PyTorch, but the region's shape (which value broadcasts to) may differ; then refuse."""
    steps = split_ints(index)
    if steps is None:
        return
    xp = backend.array_module(x.data)
    shadow = xp.broadcast_to(xp.zeros((), dtype='int8'), x.shape)  # no memory of x's size: only shapes matter
    numpy_shape, torch_shape = shadow[index].shape, shadow[steps[0]][steps[1]].shape
    if numpy_shape != torch_shape:
        raise IndexError(f"setitem: an index that mixes ints with index arrays selects a region of shape "
                         f"{torch_shape} in PyTorch but {numpy_shape} in numpy, and a value of shape {value.shape} "
                         "would be read one way or the other; write a number, or index with x[i] first "
                         "(x[i][:, ids] = value)")
