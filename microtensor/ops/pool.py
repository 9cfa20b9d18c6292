"""Pooling: the windows of conv's unfold (ops/conv.py), then a max or a mean over each.

    max_pool   y = max over the window (padding is -inf: never the max); the gradient goes to the
               entry that was the max (max(dim)'s rule); return_indices gives its flat position in
               the input's spatial plane, as PyTorch's
    avg_pool   y = sum over the window / the window's count: with count_include_pad the padding's zeros
               count, else only the input's entries; divisor_override replaces the count
ceil_mode keeps a last window that hangs past the end (if it starts inside the input or its left padding).
"""
import math

from .. import backend
from ..argcheck import ShapeError
from ..tensor import Tensor
from .conv import FLOATS, NUMBERS, _input, _tuple, windows
from .rounding import div

# the dtypes PyTorch's CPU average pools take
AVERAGED = {2: ('float16', 'float32', 'float64', 'int64'), 3: ('float32', 'float64', 'int64')}


def _options(kernel_size, stride, padding, dilation, spatial, op):
    kernel = _tuple(kernel_size, spatial, op, 'kernel_size', 1)
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, spatial, op, 'stride', 1)
    padding, dilation = _tuple(padding, spatial, op, 'padding'), _tuple(dilation, spatial, op, 'dilation', 1)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise ShapeError(f"{op}: padding {padding} must be at most half the kernel {kernel}, as in PyTorch")
    return kernel, stride, padding, dilation


def max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, spatial, op):
    x = _input(input, spatial, op, FLOATS if spatial == 1 else NUMBERS)  # (the dtypes of PyTorch's CPU kernels)
    unbatched = x.ndim == spatial + 1
    if unbatched:
        x = x.unsqueeze(0)
    kernel, stride, padding, dilation = _options(kernel_size, stride, padding, dilation, spatial, op)
    xp = backend.array_module(x.data)
    lowest = -math.inf if x.dtype.kind == 'f' else int(xp.iinfo(x.dtype).min)  # the padding: never the max
    cols = windows(x, kernel, stride, padding, dilation, op, value=lowest, ceil_mode=ceil_mode)
    values, picked = cols.max(2)                                      # (N, C, *out): which kernel offset
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    out = cols.shape[3:]
    offsets = xp.stack(xp.unravel_index(picked.data, kernel))         # (spatial, N, C, *out)
    flat = xp.zeros(picked.shape, dtype='int64')
    for d, (n, s, p, dl) in enumerate(zip(x.shape[2:], stride, padding, dilation)):
        start = xp.arange(out[d]).reshape([-1 if a == d else 1 for a in range(spatial)]) * s - p
        flat = flat * n + start + offsets[d] * dl                     # row-major position in the input's plane
    indices = Tensor._wrap(flat[0] if unbatched else flat)
    return values, indices


def avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, spatial, op):
    x = _input(input, spatial, op, AVERAGED[spatial])
    unbatched = x.ndim == spatial + 1
    if unbatched:
        x = x.unsqueeze(0)
    kernel, stride, padding, _ = _options(kernel_size, stride, padding, 1, spatial, op)
    ones = (1,) * spatial
    total = windows(x, kernel, stride, padding, ones, op, ceil_mode=ceil_mode).sum(2)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ShapeError(f"{op}: divisor_override must not be 0")
        y = _divided(total, divisor_override)
    else:
        # each window's count, dim by dim: its entries inside the input (count_include_pad: and the padding),
        # never the part a ceil_mode window hangs past the padding
        xp = backend.array_module(x.data)
        count = xp.ones((), dtype=x.dtype)
        for d, (n, k, s, p, o) in enumerate(zip(x.shape[2:], kernel, stride, padding, total.shape[2:])):
            start = xp.arange(o) * s - p
            low, high = (start, xp.minimum(start + k, n + p)) if count_include_pad else \
                (xp.maximum(start, 0), xp.minimum(start + k, n))
            count = count * (high - low).astype(x.dtype).reshape([-1 if a == d else 1 for a in range(spatial)])
        y = _divided(total, Tensor._wrap(count.astype(total.dtype)))
    return y.squeeze(0) if unbatched else y


def _divided(total, count):
    """total / count; integers divided as integers, toward 0, as PyTorch's int64 average."""
    return div(total, count, rounding_mode='trunc') if total.dtype.kind in 'iu' else total / count


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max over windows of kernel_size along L: input (N, C, L)."""
    return max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, 'max_pool1d')


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max over windows of kernel_size: input (N, C, H, W); stride defaults to the kernel (no overlap)."""
    return max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, 'max_pool2d')


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over windows of kernel_size: input (N, C, H, W)."""
    return avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                    'avg_pool2d')


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over windows of kernel_size: input (N, C, D, H, W)."""
    return avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                    'avg_pool3d')
