"""Convolution as CS231n teaches it: im2col, one matrix product, col2im.

    unfold (im2col)   x (N, C, *spatial) -> columns (N, C * prod(kernel), L): column l holds the window
                      that output position l sees (L = the number of output positions)
    conv              y = W (O, C * prod(kernel)) @ columns + b, reshaped to (N, O, *out_spatial)
    fold (col2im)     the columns added back into their windows: unfold's backward

Along each spatial dim, out = (size + 2 pad - dilation (kernel - 1) - 1) // stride + 1.  For a kernel
offset k (one per position inside the kernel), the entries every window takes at k form one strided
slice of x: x[..., k * dilation : ... : stride].  So unfold is prod(kernel) strided slices stacked,
and fold is prod(kernel) strided slice additions: no scatter, and each is the other's backward.
A ViT's patch embedding is conv2d with stride = kernel_size: the patches do not overlap.
groups splits the channels into independent convolutions (groups = C: one filter per channel).
"""
import itertools
import math

from .. import argcheck, backend
from ..argcheck import DTypeError, ShapeError
from ..autograd import Function
from ..convert import tensor_arg
from .linalg import matmul
from .rearrange import pad as _pad


def _slices(offset, out_size, stride, dilation):
    """The strided slices, one per spatial dim, that kernel offset `offset` reads for every window."""
    return tuple(slice(k * d, k * d + (n - 1) * s + 1, s) for k, n, s, d in zip(offset, out_size, stride, dilation))


class Unfold(Function):
    """columns = im2col(x): x (N, C, *spatial), already padded -> (N, C, K, *out_spatial), K = prod(kernel)
        dL/dx = fold(g): each offset's slice of g added back into its strided slice of x"""

    def forward(self, x, kernel, stride, dilation, out_size):
        self.options = dict(kernel=kernel, stride=stride, dilation=dilation, out_size=out_size)
        xp = backend.array_module(x)
        return xp.stack([x[(Ellipsis,) + _slices(k, out_size, stride, dilation)]
                         for k in itertools.product(*map(range, kernel))], axis=2)

    def backward(self, g):
        return (Fold.apply(g, size=self.inputs[0].shape[2:], **self.options),)


class Fold(Function):
    """x = col2im(columns): (N, C, K, *out_spatial) -> (N, C, *size), each offset's columns added into its
    strided slice (overlapping windows add up)          dL/dcolumns = unfold(g)"""

    def forward(self, cols, size, kernel, stride, dilation, out_size):
        self.options = dict(kernel=kernel, stride=stride, dilation=dilation, out_size=out_size)
        xp = backend.array_module(cols)
        x = xp.zeros(cols.shape[:2] + tuple(size), dtype=cols.dtype)
        for i, k in enumerate(itertools.product(*map(range, kernel))):
            x[(Ellipsis,) + _slices(k, out_size, stride, dilation)] += cols[:, :, i]
        return x

    def backward(self, g):
        return (Unfold.apply(g, **self.options),)


def _tuple(value, n, op, name, min=0):
    """An int or a tuple of n ints (kernel_size=3 or (3, 5)), each at least min."""
    values = value if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n:
        raise ValueError(f"{op}: {name} must be an int or {n} ints (one per spatial dim), not {value!r}")
    return tuple(argcheck.integer(v, op, name, min=min) for v in values)


def out_sizes(size, kernel, stride, padding, dilation, op, ceil_mode=False):
    """The number of windows along each spatial dim."""
    out = []
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        count = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (count - 1) * s >= n + p:  # the last window must start inside the input or its left pad
            count -= 1
        if span < 0 or count < 1:
            raise ShapeError(f"{op}: the input's spatial shape {tuple(size)} (padding {tuple(padding)}) is smaller "
                             f"than the kernel {tuple(kernel)} with dilation {tuple(dilation)}: no window fits")
        out.append(count)
    return tuple(out)


def windows(x, kernel, stride, padding, dilation, op, value=0.0, ceil_mode=False):
    """(N, C, K, *out_spatial): every window of x (N, C, *spatial), padded with `value`."""
    out = out_sizes(x.shape[2:], kernel, stride, padding, dilation, op, ceil_mode)
    # ceil_mode: the last windows may reach past the padding: pad those too (they read `value` there)
    extra = [max((o - 1) * s + d * (k - 1) + 1 - (n + 2 * p), 0)
             for n, k, s, p, d, o in zip(x.shape[2:], kernel, stride, padding, dilation, out)]
    widths = [w for p, e in zip(padding[::-1], extra[::-1]) for w in (p, p + e)]
    if any(widths):
        x = _pad(x, tuple(widths), value=value)
    return Unfold.apply(x, kernel=kernel, stride=stride, dilation=dilation, out_size=out)


NUMBERS = ('float16', 'float32', 'float64', 'int64', 'int32', 'uint8')
FLOATS = ('float16', 'float32', 'float64')
FLOATS_AND_BOOL = FLOATS + ('bool',)


def _input(x, spatial, op, dtypes=NUMBERS):
    """x as (N, C, *spatial) or without N, of one of the dtypes PyTorch's CPU kernel for op takes."""
    x = tensor_arg(x, op, 'input')
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ShapeError(f"{op}: input must be (N, C, {', '.join(['L', 'H, W', 'D, H, W'][spatial - 1].split(', '))}) "
                         f"or without the batch dim, not shape {x.shape}")
    if str(x.dtype) not in dtypes:
        raise DTypeError(f"{op}: needs an input of {', '.join(dtypes)}, not {x.dtype} (as PyTorch's); convert it "
                         "first (x.float())")
    return x


def convolution(input, weight, bias, stride, padding, dilation, groups, spatial, op):
    """y = W @ unfold(x) + b, by groups: x (N, C, *spatial), W (O, C / groups, *kernel) -> y (N, O, *out)."""
    x = _input(input, spatial, op)
    unbatched = x.ndim == spatial + 1
    if unbatched:
        x = x.unsqueeze(0)
    weight = tensor_arg(weight, op, 'weight')
    groups = argcheck.integer(groups, op, 'groups', min=1)
    N, C = x.shape[:2]
    if weight.ndim != spatial + 2 or C % groups or weight.shape[0] % groups or weight.shape[1] * groups != C:
        raise ShapeError(f"{op}: weight {weight.shape} does not fit input {x.shape} with groups={groups}: it must be "
                         f"(out_channels, in_channels / groups = {C // groups if C % groups == 0 else '?'}, "
                         f"*kernel), and both channel counts divisible by groups")
    kernel = weight.shape[2:]
    stride, dilation = _tuple(stride, spatial, op, 'stride', 1), _tuple(dilation, spatial, op, 'dilation', 1)
    if str(x.dtype) in ('int32', 'uint8') and any(d != 1 for d in dilation):
        raise DTypeError(f"{op}: a dilated convolution of {x.dtype} is not supported, as in PyTorch; use x.float()")
    if isinstance(padding, str):
        if padding not in ('valid', 'same'):
            raise ValueError(f"{op}: padding must be a number, a tuple, 'valid' or 'same', not {padding!r}")
        if padding == 'same' and any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' needs stride 1, as in PyTorch")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        if padding == 'same' and any(t % 2 for t in total):  # an odd total: the extra on the right, as PyTorch
            x = _pad(x, tuple(w for t in total[::-1] for w in (0, t % 2)))
        padding = tuple(t // 2 if padding == 'same' else 0 for t in total)
    padding = _tuple(padding, spatial, op, 'padding')
    cols = windows(x, kernel, stride, padding, dilation, op)             # (N, C, K, *out)
    out = cols.shape[3:]
    O, K, L = weight.shape[0], math.prod(kernel), math.prod(out)
    cols = cols.reshape(N, groups, (C // groups) * K, L)                 # (N, G, C/G * K, L)
    W = weight.reshape(groups, O // groups, (C // groups) * K)           # (G, O/G, C/G * K)
    y = matmul(W, cols).reshape((N, O) + tuple(out))                     # the one matrix product
    if bias is not None:
        bias = tensor_arg(bias, op, 'bias')
        if bias.shape != (O,):
            raise ShapeError(f"{op}: bias must have shape ({O},), one per output channel, not {bias.shape}")
        y = y + bias.reshape((O,) + (1,) * spatial)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation, as PyTorch's): input (N, C, L), weight (O, C / groups, k)."""
    return convolution(input, weight, bias, stride, padding, dilation, groups, 1, 'conv1d')


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution: input (N, C, H, W), weight (O, C / groups, kH, kW) -> (N, O, H_out, W_out)."""
    return convolution(input, weight, bias, stride, padding, dilation, groups, 2, 'conv2d')


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution: input (N, C, D, H, W), weight (O, C / groups, kD, kH, kW)."""
    return convolution(input, weight, bias, stride, padding, dilation, groups, 3, 'conv3d')


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """F.unfold (im2col) of a 4-d input (N, C, H, W): (N, C * kH * kW, L), L the number of windows."""
    x = _input(input, 2, 'unfold', FLOATS_AND_BOOL)
    if x.ndim != 4:
        raise ShapeError(f"unfold: input must be 4-d (N, C, H, W), as PyTorch's F.unfold, not shape {x.shape}")
    kernel, dilation = _tuple(kernel_size, 2, 'unfold', 'kernel_size', 1), _tuple(dilation, 2, 'unfold', 'dilation', 1)
    padding, stride = _tuple(padding, 2, 'unfold', 'padding'), _tuple(stride, 2, 'unfold', 'stride', 1)
    cols = windows(x, kernel, stride, padding, dilation, 'unfold')
    return cols.reshape(x.shape[0], x.shape[1] * math.prod(kernel), -1)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """F.fold (col2im): columns (N, C * kH * kW, L) added back into their windows of an (N, C, *output_size)
    image (overlaps add up): unfold's adjoint."""
    cols = tensor_arg(input, 'fold', 'input')
    if str(cols.dtype) not in FLOATS_AND_BOOL:
        raise DTypeError(f"fold: needs an input of {', '.join(FLOATS_AND_BOOL)}, not {cols.dtype} (as PyTorch's)")
    size = _tuple(output_size, 2, 'fold', 'output_size', 1)
    kernel, dilation = _tuple(kernel_size, 2, 'fold', 'kernel_size', 1), _tuple(dilation, 2, 'fold', 'dilation', 1)
    padding, stride = _tuple(padding, 2, 'fold', 'padding'), _tuple(stride, 2, 'fold', 'stride', 1)
    out = out_sizes(size, kernel, stride, padding, dilation, 'fold')
    K = math.prod(kernel)
    if cols.ndim != 3 or cols.shape[1] % K or cols.shape[2] != math.prod(out):
        raise ShapeError(f"fold: input {cols.shape} does not fit: it must be (N, C * {K}, {math.prod(out)}) for "
                         f"output_size {size} and kernel {kernel}")
    N, C = cols.shape[0], cols.shape[1] // K
    padded = tuple(n + 2 * p for n, p in zip(size, padding))
    x = Fold.apply(cols.reshape((N, C, K) + out), size=padded, kernel=kernel, stride=stride, dilation=dilation,
                   out_size=out)
    return x[(Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(padding, size))]
