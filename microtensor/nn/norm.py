"""Normalisation layers with PyTorch's names and arguments: nn.LayerNorm and nn.RMSNorm.

    LayerNorm   y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias
    RMSNorm     y = x / sqrt(mean(x^2) + eps) * weight                   (LLaMA: no centring, no bias)

over the last len(normalized_shape) dims of x.  transformer/'s LayerNorm and RMSNorm are these
layers under the articles' letters: their parameters are named gamma and beta (`param_names`).
"""
from .. import argcheck
from ..creation import ones, zeros
from ..ops import nn as _nn
from .module import Module
from .parameter import Parameter


def _check_trailing(module, x):
    """x must end in the layer's normalized_shape; the error names the layer, e.g. LayerNorm(3)."""
    shape = module.normalized_shape
    _nn.check_trailing(x, shape, f"{type(module).__name__}({', '.join(map(str, shape))})")


class LayerNorm(Module):
    """PyTorch's nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias): one op, LayerNormOp
    (microtensor/ops/nn.py), over the trailing dims taken as one."""
    param_names = ('weight', 'bias')  # transformer.LayerNorm: ('gamma', 'beta'), the articles' letters

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        where = type(self).__name__
        self.normalized_shape = _nn.normalized_dims(normalized_shape, where)
        self.eps = argcheck.number(eps, where, 'eps', min=0)
        self.elementwise_affine = argcheck.boolean(elementwise_affine, where, 'elementwise_affine')
        bias = argcheck.boolean(bias, where, 'bias')
        weight_name, bias_name = self.param_names
        setattr(self, weight_name, Parameter(ones(*self.normalized_shape)) if self.elementwise_affine else None)
        setattr(self, bias_name, Parameter(zeros(*self.normalized_shape)) if self.elementwise_affine and bias else None)

    def forward(self, x):
        _check_trailing(self, x)
        weight, bias = (getattr(self, name) for name in self.param_names)
        return _nn.layer_norm(x, self.normalized_shape, weight, bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """PyTorch's nn.RMSNorm(normalized_shape, eps=None, elementwise_affine): y = x / rms * weight,
    rms = sqrt(mean(x^2) + eps) over the trailing dims; eps=None: F.rms_norm's (the compute dtype's epsilon)."""
    param_names = ('weight',)  # transformer.RMSNorm: ('gamma',)

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        where = type(self).__name__
        self.normalized_shape = _nn.normalized_dims(normalized_shape, where)
        self.eps = argcheck.number(eps, where, 'eps', min=0, allow_none=True)
        self.elementwise_affine = argcheck.boolean(elementwise_affine, where, 'elementwise_affine')
        setattr(self, self.param_names[0], Parameter(ones(*self.normalized_shape)) if self.elementwise_affine else None)

    def forward(self, x):
        _check_trailing(self, x)
        return _nn.rms_norm(x, self.normalized_shape, getattr(self, self.param_names[0]), self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
