"""x @ W + b as one op.  The textbook (ops/linalg.py, linear) is two ops, MatMul and Add."""
from ..autograd import Function
from ..ops.linalg import rows


class FusedLinear(Function):
    """Y = X @ W + b,   X: (..., n_in), W: (n_in, n_out), b: (n_out,) or none -> Y: (..., n_out)
        dL/dX = G @ W^T,   dL/dW = X^T @ G,   dL/db = G summed over every row
    transposed=True: the weight given is W^T, (n_out, n_in), nn.Linear's layout (a view, read in place).

    X and G are flattened to (rows, features), so each product is one 2-D matrix
    multiplication whatever X's leading axes (as the textbook MatMul does for X @ W), and
    the bias is added in place into the product (an array this op just made) instead of by
    a second op with its own output.
    """

    def forward(self, x, w, b=None, transposed=False):
        self.transposed = transposed
        w = w.T if transposed else w
        y = rows(x) @ w
        if b is not None:
            if b.dtype == y.dtype:
                y += b
            else:  # e.g. a float64 bias on a float32 product: promote, as x @ W + b does
                y = y + b
        return y.reshape(x.shape[:-1] + w.shape[-1:])

    def backward(self, g):
        x, w = self.inputs[:2]
        w = w.T if self.transposed else w
        g_rows = rows(g)
        gx = (g_rows @ w.T).reshape(x.shape) if self.needs_grad(0) else None
        if not self.needs_grad(1):
            gw = None
        else:
            gw = g_rows.T @ rows(x) if self.transposed else rows(x).T @ g_rows
        if len(self.inputs) == 2:
            return gx, gw
        return gx, gw, (g_rows.sum_to(self.inputs[2].shape) if self.needs_grad(2) else None)
