"""Layer norm, fast: the forward keeps x_hat and 1/sigma for the backward, both in row blocks.

The textbook LayerNormOp (ops/nn.py) recomputes x_hat from x in its backward, on tensors.
FusedLayerNorm computes the same formulas on arrays, a block of rows at a time
(rows.by_rows), with the row means by einsum (rows.sum_along: numpy's mean over rows of
64-256 numbers is ~3x slower), or as one compiled loop where a C compiler is found (compiled.py,
kernels.c), and keeps x_hat and 1/sigma from the forward.  Under
create_graph=True (second derivatives) its backward is the textbook's, on tensors.
"""
from .. import backend
from ..autograd import is_grad_enabled
from ..ops.linalg import rows as as_rows
from ..ops.nn import LayerNormOp
from ..tensor import Tensor
from . import compiled, rows


class FusedLayerNorm(LayerNormOp):
    """LayerNormOp's formulas (see there), with x_hat and 1/sigma kept by the forward:
        dL/dx = (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / sigma,   dx_hat = g * gamma
        dL/dgamma = sum of g * x_hat over the rows,   dL/dbeta = sum of g over the rows
    Every array a block of rows touches is made and used while the block is in the CPU's cache:
    x - mu is written into x_hat's memory, the mean of squares is a dot product per row (no
    temporary), g * x_hat (gamma's gradient before the sum over rows) is made in the same pass
    as dL/dx; the sums over rows are rows.sum_rows (BLAS) on the whole arrays.
    x - mu is (x - x0) - mean(x - x0), x0 the row's first number, not x - mean(x): in float32 the
    mean of a row such as 1e4 + N(0, 0.01) is off by a few ulps of 1e4 (0.001 each), much of
    sigma, and x_hat would be off by 0.1.  x - x0 is exact for numbers within a factor 2 of x0, and
    the mean of these small numbers is off by ulps of them, not of x.  (The textbook LayerNormOp,
    x - mean(x), is off the same way in float32; in float64 it is right.)
    """

    def forward(self, x, gamma, beta, eps):
        self.eps = eps
        xp = backend.array_module(x)
        y = xp.empty(x.shape, xp.result_type(x, gamma, beta))
        self.x_hat, self.inv_sigma = xp.empty(x.shape, x.dtype), xp.empty(x.shape[:-1] + (1,), x.dtype)

        def layer_norm(x, y, x_hat, inv_sigma):  # a block of rows (rows.by_rows), into the outputs
            xp.subtract(x, x[..., :1], out=x_hat)  # x - x0 (see the class's docstring)
            x_hat -= _row_mean(x_hat)  # - (mu - x0): x - mu
            inv_sigma[...] = (_row_mean_of_products(x_hat, x_hat) + eps) ** -0.5
            x_hat *= inv_sigma
            xp.multiply(x_hat, gamma, out=y)
            y += beta

        compiled.by_rows('layer_norm', layer_norm, x, y, self.x_hat, self.inv_sigma, constants=(gamma, beta, eps))
        return y

    def backward(self, g):
        if is_grad_enabled():  # create_graph=True: the textbook's backward, on tensors, is differentiable
            return super().backward(g)
        x, gamma, _ = self.inputs
        g, gamma = g.data, gamma.data
        xp = backend.array_module(g)
        dx = xp.empty(x.shape, xp.result_type(g, gamma, x.data))
        g_x_hat = xp.empty(x.shape, xp.result_type(g, self.x_hat))  # dL/dgamma before the sum over rows

        def layer_norm_grads(g, x_hat, inv_sigma, dx, g_x_hat):  # a block of rows (rows.by_rows)
            dx_hat = g * gamma
            xp.multiply(x_hat, _row_mean_of_products(dx_hat, x_hat), out=dx)
            dx += _row_mean(dx_hat)
            xp.subtract(dx_hat, dx, out=dx)
            dx *= inv_sigma
            xp.multiply(g, x_hat, out=g_x_hat)

        compiled.by_rows('layer_norm_grad', layer_norm_grads, g, self.x_hat, self.inv_sigma, dx, g_x_hat,
                         constants=(gamma,))
        # the sums over rows on the whole arrays, so that the block size changes no bit
        return tuple(Tensor._wrap(a) for a in (dx, rows.sum_rows(as_rows(g_x_hat)), rows.sum_rows(as_rows(g))))


def _row_mean(x):
    """The mean over the last axis (keepdims), by rows.sum_along (an einsum)."""
    return rows.sum_along(x, -1) / x.shape[-1]


def _row_mean_of_products(a, b):
    """mean(a * b) over the last axis (keepdims), as one dot product per row: no temporary a * b."""
    return backend.array_module(a).einsum('...i,...i->...', a, b)[..., None] / a.shape[-1]
