"""relu: y = max(x, 0), elementwise.

Derive: the slope is 1 where x > 0 (y = x) and 0 where x < 0 (y = 0); at x = 0 take 0,
as PyTorch does.

    dL/dx = g * ?

`x > 0` on a Tensor gives a boolean Tensor; multiplying by it keeps g where it is True.

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function, backend


class Relu(Function):
    """y = max(x, 0)        x: any shape -> y: the same shape"""

    def forward(self, x):
        return backend.array_module(x).maximum(x, 0)

    def backward(self, g):
        # hint: the gradient passes through where x > 0 and stops elsewhere: x is self.inputs[0].
        (x,) = self.inputs
        return (g * (x > 0),)
