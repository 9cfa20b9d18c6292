"""Convolution and pooling layers with PyTorch's names and arguments: nn.Conv1d, Conv2d, Conv3d (their
math: microtensor/ops/conv.py, im2col and one matrix product), nn.MaxPool2d, AvgPool2d, AvgPool3d."""
import math

from .. import argcheck
from ..ops import conv as _conv, pool as _pool
from .linear import uniform_parameters
from .module import Module, from_function


class _ConvNd(Module):
    """y = conv(x, W, b): W (out_channels, in_channels / groups, *kernel_size), b (out_channels,), both
    uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)] as PyTorch's (fan_in = in_channels / groups * prod(kernel))."""
    spatial = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode='zeros', dtype=None, device=None):
        super().__init__()
        where = type(self).__name__
        in_channels = argcheck.integer(in_channels, where, 'in_channels', min=1)
        out_channels = argcheck.integer(out_channels, where, 'out_channels', min=1)
        groups = argcheck.integer(groups, where, 'groups', min=1)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{where}: in_channels ({in_channels}) and out_channels ({out_channels}) must both be "
                             f"divisible by groups ({groups})")
        if padding_mode != 'zeros':
            raise ValueError(f"{where}: padding_mode {padding_mode!r} is not supported; 'zeros' is (F.pad's modes "
                             "can pad the input first)")
        kernel = _conv._tuple(kernel_size, self.spatial, where, 'kernel_size', 1)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        fan_in = in_channels // groups * math.prod(kernel)
        self.weight, self.bias = uniform_parameters((out_channels, in_channels // groups) + kernel,
                                                    out_channels if argcheck.boolean(bias, where, 'bias') else None,
                                                    fan_in, dtype, device)

    def forward(self, x):
        return _conv.convolution(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                                 self.spatial, type(self).__name__)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, bias={self.bias is not None}")


class Conv1d(_ConvNd):
    """1-d convolution: x (N, C, L)."""
    spatial = 1


class Conv2d(_ConvNd):
    """2-d convolution: x (N, C, H, W).  A ViT's patch embedding is Conv2d(3, d_model, p, stride=p)."""
    spatial = 2


class Conv3d(_ConvNd):
    """3-d convolution: x (N, C, D, H, W)."""
    spatial = 3


MaxPool2d = from_function('MaxPool2d', _pool.max_pool2d, kernel_size=1, stride=None, padding=0, dilation=1,
                          ceil_mode=False, return_indices=False)
AvgPool2d = from_function('AvgPool2d', _pool.avg_pool2d, kernel_size=1, stride=None, padding=0, ceil_mode=False,
                          count_include_pad=True, divisor_override=None)
AvgPool3d = from_function('AvgPool3d', _pool.avg_pool3d, kernel_size=1, stride=None, padding=0, ceil_mode=False,
                          count_include_pad=True, divisor_override=None)
