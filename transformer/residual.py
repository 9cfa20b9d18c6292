"""The residual connection: the "+1" gradient highway.

    y = x + alpha * F(x)          (residual=True;  alpha = 1 is the standard form)
    y = F(x)                      (residual=False: the ablation the lessons compare against)

    dy/dx = I + alpha * dF/dx     with the residual: the identity term carries the gradient
    dy/dx = dF/dx                 without it: products of dF/dx across layers can vanish

x and F(x) have the same shape (B, T, d_model), so layers stack freely.

Every layer routes its sub-layers through `residual_connection`, which is the one
place a probe can watch the highway: when `layer.residual_probe` is set it is called
as probe(layer, name, x, fx, y) with name 'self_attn', 'cross_attn' or 'ffn'.
Probes only read; when none is set this costs one attribute lookup.
"""


def residual_connection(layer, name, x, fx):
    """y = x + layer.alpha * fx  (or y = fx when layer.residual is False)."""
    if layer.residual:
        y = x + (fx if layer.alpha == 1 else layer.alpha * fx)
    else:
        y = fx
    if layer.residual_probe is not None:
        layer.residual_probe(layer, name, x, fx, y)
    return y
