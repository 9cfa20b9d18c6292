"""softmax: p_i = exp(x_i) / sum_j exp(x_j) along `axis`: each row becomes a probability distribution.

Derive: every p_j depends on every x_i of its row:

    dp_j/dx_i = p_j (delta_ij - p_i)        (the Jacobian diag(p) - p p^T)
    dL/dx_i = sum_j g_j dp_j/dx_i = ?       (simplify: one sum over the row, sum_j g_j p_j)

Softmax's output is self.output.  Keep the summed axis (keepdims=True) so the row sum
broadcasts back over the row.

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function, backend


class Softmax(Function):
    """p = exp(x - max(x)) / sum(exp(x - max(x))) along axis    (shifting by max(x) avoids overflow)
    x: any shape -> p: the same shape"""

    def forward(self, x, axis=-1):
        self.axis = axis
        e = backend.array_module(x).exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def backward(self, g):
        # hint: p(1 - p) is only the Jacobian's diagonal: sum g_j dp_j/dx_i over the whole row (it needs one
        #   row sum, of g * p); p is self.output.
        p = self.output
        return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)
