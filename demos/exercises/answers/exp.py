"""exp: y = e^x, elementwise.

Derive: d e^x / dx = ?   Then dL/dx = g * (that).  Forward's result is kept for you as
self.output (a Tensor): reuse it rather than computing e^x again.

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function, backend


class Exp(Function):
    """y = exp(x)        x: any shape -> y: the same shape"""

    def forward(self, x):
        return backend.array_module(x).exp(x)

    def backward(self, g):
        # hint: the derivative of e^x is e^x itself, which forward already computed: self.output.
        return (g * self.output,)
