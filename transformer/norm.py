"""Normalisation: keep every layer's input at a steady scale.

LayerNorm ("竖着切", one token at a time): over the d_model features of each position,

    mu = mean(x),  sigma^2 = mean((x - mu)^2),  x_hat = (x - mu) / sqrt(sigma^2 + eps),  y = gamma * x_hat + beta

  the same in training and inference, for any batch size or sequence length.
  The article's example: x = [2, 8, -4, -6], gamma = [1.2, 0.8, 1.0, 1.5],
  beta = [0.1, -0.1, 0, 0.2], eps = 0  ->  y = [0.538, 1.069, -0.730, -1.444].

RMSNorm (LLaMA): no centring and no beta,  y = gamma * x / sqrt(mean(x^2) + eps).

BatchNorm ("横着切", one feature at a time): over every sample and position of the batch,
  for each feature.  Its statistics depend on the rest of the batch (and on padding),
  and differ between training (this batch) and inference (running averages): the
  reasons Transformers use LayerNorm.  Here for the comparison.

Shapes: x (..., d_model) -> the same shape.
"""
import microtensor as mt
from microtensor import nn
from microtensor.i18n import _

from . import checks


class LayerNorm(nn.LayerNorm):
    """microtensor's nn.LayerNorm over the d_model features, its parameters named as the articles name
    them: gamma (nn.LayerNorm's weight) and beta (its bias).  One op, LayerNormOp (microtensor/ops/nn.py)."""
    param_names = ('gamma', 'beta')

    def __init__(self, d_model, eps=1e-5):
        d_model, eps = checks.arguments('LayerNorm', d_model=d_model, eps=eps)
        super().__init__(d_model, eps)
        self.d_model = d_model

    def extra_repr(self):
        return f"d_model={self.d_model}, eps={self.eps}"


class RMSNorm(nn.RMSNorm):
    """microtensor's nn.RMSNorm over the d_model features (eps 1e-8 by default), its weight named gamma."""
    param_names = ('gamma',)

    def __init__(self, d_model, eps=1e-8):
        d_model, eps = checks.arguments('RMSNorm', d_model=d_model, eps=eps)
        super().__init__(d_model, eps)
        self.d_model = d_model

    def forward(self, x):
        _check_features(self, x, self.d_model)
        return super().forward(x)

    def extra_repr(self):
        return f"d_model={self.d_model}, eps={self.eps}"


class BatchNorm1d(nn.Module):
    """Normalises each feature (the last axis) over all other axes: (N, C) or (B, T, C).

    train: y = gamma * (x - mean_batch) / sqrt(var_batch + eps) + beta, and the buffers move
           towards the batch statistics: running = (1 - momentum) * running + momentum * batch
           (running_var takes the unbiased variance, n / (n - 1) * var_batch, as in PyTorch);
    eval:  the same with running_mean, running_var in place of the batch statistics.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.num_features, self.eps, self.momentum = checks.arguments(
            'BatchNorm1d', num_features=num_features, eps=eps, momentum=momentum)
        self.gamma = nn.Parameter(mt.ones(num_features))
        self.beta = nn.Parameter(mt.zeros(num_features))
        self.register_buffer('running_mean', mt.zeros(num_features))
        self.register_buffer('running_var', mt.ones(num_features))

    def forward(self, x):
        _check_features(self, x, self.num_features)
        if not self.training:
            mean, var = self.running_mean, self.running_var
        else:
            axes = tuple(range(x.ndim - 1))
            n = x.numel() // self.num_features
            if n < 2:
                raise ValueError(_("BatchNorm1d: training needs more than one value per feature to estimate its "
                                   "variance, got x of shape {shape}; use a larger batch or call .eval()").format(
                                       shape=x.shape))
            mean, var = x.mean(dim=axes), x.var(dim=axes, correction=0)  # biased, as PyTorch normalises
            with mt.no_grad():
                m = self.momentum
                self.running_mean.copy_(self.running_mean * (1 - m) + mean.detach() * m)
                self.running_var.copy_(self.running_var * (1 - m) + var.detach() * (m * n / (n - 1)))
        return (x - mean) / (var + self.eps).sqrt() * self.gamma + self.beta

    def extra_repr(self):
        return f"num_features={self.num_features}, eps={self.eps}, momentum={self.momentum}"


def _check_features(module, x, d):
    if x.ndim < 2 or x.shape[-1] != d:
        raise mt.ShapeError(f"{type(module).__name__}({d}): expected x of shape (..., {d}) with at least a batch "
                            f"axis, got {x.shape}")
