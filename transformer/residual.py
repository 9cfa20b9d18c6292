"""The residual connection: the "+1" gradient highway.

    y = x + alpha * F(x)          (residual=True;  alpha = 1 is the standard form)
    y = x + g(x) * F(x)           (gate=True: a learned gate, elementwise, see ResidualGate)
    y = F(x)                      (residual=False: the ablation the lessons compare against)

    dy/dx = I + alpha * dF/dx     with the residual: the identity term carries the gradient
    dy/dx = dF/dx                 without it: products of dF/dx across layers can vanish

x and F(x) have the same shape (B, T, d_model), so layers stack freely.

The addition is its own op, ResidualAdd, so that a debugger breakpoint on
`transformer.residual.ResidualAdd.backward` stops exactly where the gradient splits
into the "+1" road (back to x) and the F road (back into the sub-layer).

Every layer routes its sub-layers through `residual_connection`, which is the one
place a probe can watch the highway: when `layer.residual_probe` is set it is called
as probe(layer, name, x, fx, y) with name 'self_attn', 'cross_attn' or 'ffn'.
Probes only read; when none is set this costs one attribute lookup.
"""
import microtensor as mt
from microtensor import nn
from microtensor.autograd import Function


class ResidualAdd(Function):
    """y = x + alpha * fx          (x: the residual stream, fx = F(x): the sub-layer's output)

        dL/dx  = g              the "+1" road: the gradient reaches x unchanged
        dL/dfx = alpha * g      the F road: it continues into the sub-layer, where dF/dx acts

    so dL/dx in total = g + alpha * g dF/dx, the lesson's dy/dx = 1 + alpha dF/dx.
    """

    def forward(self, x, fx, alpha):
        self.alpha = alpha
        return x + fx if alpha == 1 else x + alpha * fx

    def backward(self, g):
        return g, (g if self.alpha == 1 else self.alpha * g)


class ResidualGate(nn.Module):
    """The gated residual's gate: forward(h (B, T, d_model)) -> g = sigmoid(h W_g + b_g), same shape.

    Each channel of each position gets its own opening in (0, 1), computed from what the
    sub-layer reads (h = Norm(x) in Pre-LN, x in Post-LN), and the connection becomes
    y = x + g * F(x): g -> 0 closes the F road (the layer passes x through untouched),
    g -> 1 is the standard residual.  With b_g = 0 and small W_g it starts half open.
    """

    def __init__(self, d_model):
        super().__init__()
        self.W_g = nn.Linear(d_model, d_model)

    def forward(self, h):
        return mt.sigmoid(self.W_g(h))


def residual_connection(layer, name, x, fx, gate=None):
    """y = x + layer.alpha * fx  (or y = fx when layer.residual is False).

    gate: the gate's values g (ResidualGate's output); the F road becomes g * fx before the
    same ResidualAdd, so the probe and the debugger see one residual op either way.
    """
    if gate is not None:
        fx = gate * fx
    if layer.residual:
        y = ResidualAdd.apply(x, fx, alpha=layer.alpha)
    else:
        y = fx
    if layer.residual_probe is not None:
        layer.residual_probe(layer, name, x, fx, y)
    return y
