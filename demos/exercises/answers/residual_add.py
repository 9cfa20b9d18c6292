"""residual_add: the residual connection  y = x + alpha * F(x),  here y = x + alpha * fx.

x is the residual stream and fx = F(x) the sub-layer's output (same shape); alpha is a
number (1 in the standard form).  Derive:

    dL/dx = ?       (the "+1" road: the highway that keeps deep stacks trainable)
    dL/dfx = ?      (the road back into the sub-layer)

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function


class ResidualAdd(Function):
    """y = x + alpha * fx        x, fx: the same shape -> y: that shape"""

    def forward(self, x, fx, alpha=1.0):
        self.alpha = alpha
        return x + alpha * fx

    def backward(self, g):
        # hint: one gradient per input, (dL/dx, dL/dfx): dy/dx = 1 and dy/dfx = alpha.
        return g, self.alpha * g
