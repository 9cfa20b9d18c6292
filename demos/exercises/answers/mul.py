"""mul: the elementwise product  y = a * b  (numpy broadcasting).

Derive: L depends on y, and g = dL/dy has y's shape.  Each y_i = a_i * b_i depends on one
element of each input, so the chain rule has a single term:

    dL/da_i = g_i * dy_i/da_i = ?        dL/db_i = g_i * dy_i/db_i = ?

Return both at y's shape: when a or b was broadcast, the engine sums the gradient back
to the input's shape (see broadcast_add for doing that by hand).

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function


class Mul(Function):
    """y = a * b        a, b: broadcastable shapes -> y: the broadcast shape"""

    def forward(self, a, b):
        return a * b

    def backward(self, g):
        # hint: dy/da = b and dy/db = a; self.inputs holds a and b as Tensors. Return (dL/da, dL/db).
        a, b = self.inputs
        return g * b, g * a
