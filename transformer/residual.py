"""The residual connection: the "+1" gradient highway.

    y = x + alpha * F(x)          (residual=True;  alpha = 1 is the standard form)
    y = x + g(x) * F(x)           (gate=True: a learned gate, elementwise, see ResidualGate)
    y = F(x)                      (residual=False: the ablation the lessons compare against)

    dy/dx = I + alpha * dF/dx     with the residual: the identity term carries the gradient
    dy/dx = dF/dx                 without it: products of dF/dx across layers can vanish

x and F(x) have the same shape (B, T, d_model), so layers stack freely.

The addition is its own op, ResidualAdd, so that a debugger breakpoint on
`transformer.residual.ResidualAdd.backward` stops exactly where the gradient splits
into the "+1" road (back to x) and the F road (back into the sub-layer).  Each one is
labelled with its sub-layer ('ffn residual'), so under mt.record_modules traces and graphs
name it 'decoder.layers.3.ffn residual', and `p self` in the debugger says which one it is.

Every layer routes its sub-layers through `residual_connection`, which is the one
place a probe can watch the highway: when `layer.residual_probe` is set it is called
as probe(layer, name, x, fx, y) with name 'self_attn', 'cross_attn' or 'ffn'.
Probes only read; when none is set this costs one attribute lookup.
"""
import microtensor as mt
from microtensor import argcheck, nn
from microtensor.autograd import Function
from microtensor.inspect.modules import label_op

from .projection import Projection


class ResidualAdd(Function):
    """y = x + alpha * fx          (x: the residual stream, fx = F(x): the sub-layer's output)

        dL/dx  = g              the "+1" road: the gradient reaches x unchanged
        dL/dfx = alpha * g      the F road: it continues into the sub-layer, where dF/dx acts

    so dL/dx in total = g + alpha * g dF/dx, the lesson's dy/dx = 1 + alpha dF/dx.
    """
    highway_inputs = (0,)  # x gets g itself: mt.draw_graph draws that edge as the "+1" highway

    def forward(self, x, fx, alpha):
        self.alpha = alpha
        return x + fx if alpha == 1 else x + alpha * fx

    def backward(self, g):
        return g, (g if self.alpha == 1 else self.alpha * g)

    @property
    def repr_extra(self):  # after the module in repr(op): ', alpha=0.5'
        alpha = getattr(self, 'alpha', 1)  # (gone once backward has released the op)
        return '' if alpha == 1 else f', alpha={alpha}'


class ResidualGate(nn.Module):
    """The gated residual's gate: forward(h (B, T, d_model)) -> g = sigmoid(h W_g + b_g), same shape.

    Each channel of each position gets its own opening in (0, 1), computed from what the
    sub-layer reads (h = Norm(x) in Pre-LN, x in Post-LN), and the connection becomes
    y = x + g * F(x): g -> 0 closes the F road (the layer passes x through untouched),
    g -> 1 is the standard residual.  With b_g = 0 and small W_g it starts half open.
    """

    def __init__(self, d_model):
        super().__init__()
        d_model = argcheck.integer(d_model, 'ResidualGate', 'd_model', min=1)
        self.W_g = Projection(d_model, d_model)

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
        y = label_op(ResidualAdd.apply(x, fx, alpha=layer.alpha), f"{name} residual")
    else:
        y = fx
    if layer.residual_probe is not None:
        layer.residual_probe(layer, name, x, fx, y)
    return y
