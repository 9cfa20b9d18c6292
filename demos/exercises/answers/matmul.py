"""matmul: the matrix product  Y = A @ B,  A: (..., n, k), B: (..., k, m) -> Y: (..., n, m).

Derive: Y_ij = sum_p A_ip B_pj, so A_ip reaches every Y_ij of row i (through B_pj), and
B_pj every Y_ij of column j (through A_ip):

    dL/dA_ip = sum_j G_ij B_pj = ?  (as a matrix product)      dL/dB_pj = sum_i A_ip G_ij = ?

Check the shapes: dL/dA must be (n, k) and dL/dB (k, m); only one arrangement of G, A, B
and transposes gives them.  Batch axes (the "...") that were broadcast are summed back by
the engine.  x.swapaxes(-1, -2) transposes the last two axes of a Tensor.

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function


class MatMul(Function):
    """Y = A @ B        A: (..., n, k), B: (..., k, m) -> Y: (..., n, m)"""

    def forward(self, a, b):
        return a @ b

    def backward(self, g):
        # hint: dL/dA has A's shape (n, k) and dL/dB B's shape (k, m): build each from G (n, m) and the other
        #   input, transposing where the shapes need it.
        a, b = self.inputs
        return g @ b.swapaxes(-1, -2), a.swapaxes(-1, -2) @ g
