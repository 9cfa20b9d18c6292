"""Normalisation layers with PyTorch's names and arguments: nn.LayerNorm and nn.RMSNorm.

    LayerNorm   y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias
    RMSNorm     y = x / sqrt(mean(x^2) + eps) * weight                   (LLaMA: no centring, no bias)

over the last len(normalized_shape) dims of x.  transformer/'s LayerNorm and RMSNorm are these
layers under the articles' letters: their parameters are named gamma and beta (`param_names`).
"""
import math
import numbers

from .. import argcheck, backend
from ..creation import ones, zeros
from ..ops import nn as _nn
from .module import Module
from .parameter import Parameter


def _shape(normalized_shape, where):
    """normalized_shape as a tuple of sizes >= 1: an int, or a tuple or list of them."""
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        normalized_shape = (normalized_shape,)
    if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape:
        argcheck.fail(TypeError, where, f"normalized_shape must be a size or a non-empty tuple of sizes (the trailing "
                                        f"dims to normalise, e.g. d_model), not {argcheck.describe(normalized_shape)}")
    return tuple(argcheck.integer(n, where, 'each size in normalized_shape', min=1) for n in normalized_shape)


def _check_trailing(module, x):
    shape = module.normalized_shape
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        dims = ', '.join(map(str, shape))
        raise argcheck.ShapeError(f"{type(module).__name__}({dims}): expected x of shape (..., {dims}), got {x.shape}")


class LayerNorm(Module):
    """PyTorch's nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias): one op, LayerNormOp
    (microtensor/ops/nn.py), over the trailing dims taken as one."""
    param_names = ('weight', 'bias')  # transformer.LayerNorm: ('gamma', 'beta'), the articles' letters

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        where = type(self).__name__
        self.normalized_shape = _shape(normalized_shape, where)
        self.eps = argcheck.number(eps, where, 'eps', min=0)
        self.elementwise_affine = argcheck.boolean(elementwise_affine, where, 'elementwise_affine')
        bias = argcheck.boolean(bias, where, 'bias')
        weight_name, bias_name = self.param_names
        setattr(self, weight_name, Parameter(ones(*self.normalized_shape)) if self.elementwise_affine else None)
        setattr(self, bias_name, Parameter(zeros(*self.normalized_shape)) if self.elementwise_affine and bias else None)

    def forward(self, x):
        _check_trailing(self, x)
        weight, bias = (getattr(self, name) for name in self.param_names)
        if len(self.normalized_shape) == 1 and weight is not None and bias is not None:
            return _nn.layer_norm(x, weight, bias, self.eps)
        n = math.prod(self.normalized_shape)  # the trailing dims as one axis of n features
        gamma = ones(n, dtype=x.dtype, device=x.device) if weight is None else weight.reshape(n)
        beta = zeros(n, dtype=x.dtype, device=x.device) if bias is None else bias.reshape(n)
        lead = x.shape[:x.ndim - len(self.normalized_shape)]
        return _nn.layer_norm(x.reshape(lead + (n,)), gamma, beta, self.eps).reshape(x.shape)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """PyTorch's nn.RMSNorm(normalized_shape, eps=None, elementwise_affine): y = x / rms * weight,
    rms = sqrt(mean(x^2) + eps) over the trailing dims; eps=None is the dtype's machine epsilon."""
    param_names = ('weight',)  # transformer.RMSNorm: ('gamma',)

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        where = type(self).__name__
        self.normalized_shape = _shape(normalized_shape, where)
        self.eps = argcheck.number(eps, where, 'eps', min=0, allow_none=True)
        self.elementwise_affine = argcheck.boolean(elementwise_affine, where, 'elementwise_affine')
        setattr(self, self.param_names[0], Parameter(ones(*self.normalized_shape)) if self.elementwise_affine else None)

    def forward(self, x):
        _check_trailing(self, x)
        eps = backend.machine_epsilon(x.dtype) if self.eps is None else self.eps
        dims = tuple(range(x.ndim - len(self.normalized_shape), x.ndim))
        rms = ((x * x).mean(axis=dims if len(dims) > 1 else -1, keepdims=True) + eps).sqrt()
        weight = getattr(self, self.param_names[0])
        return x / rms if weight is None else x / rms * weight

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
