"""Layer norm, fast: the forward keeps x_hat and 1/sigma for the backward, both in row blocks.

The textbook LayerNormOp (ops/nn.py) recomputes x_hat from x in its backward, on tensors.
FusedLayerNorm computes the same formulas on arrays, a block of rows at a time
(rows.by_rows), with the row means by einsum (rows.sum_along: numpy's mean over rows of
64-256 numbers is ~3x slower), and keeps x_hat and 1/sigma from the forward.  Under
create_graph=True (second derivatives) its backward is the textbook's, on tensors.
"""
from .. import backend
from ..autograd import is_grad_enabled
from ..ops.nn import LayerNormOp
from ..tensor import Tensor
from . import rows


class FusedLayerNorm(LayerNormOp):
    """LayerNormOp's formulas (see there), with x_hat and 1/sigma kept by the forward:
        dL/dx = (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / sigma,   dx_hat = g * gamma
    """

    def forward(self, x, gamma, beta, eps):
        self.eps = eps
        xp = backend.array_module(x)
        y = xp.empty(x.shape, xp.result_type(x, gamma, beta))
        self.x_hat, self.inv_sigma = xp.empty(x.shape, x.dtype), xp.empty(x.shape[:-1] + (1,), x.dtype)

        def layer_norm(x, y, x_hat_out, inv_sigma_out):  # a block of rows (rows.by_rows), into the outputs
            centered = x - _row_mean(x)
            inv_sigma_out[...] = (_row_mean(centered * centered) + eps) ** -0.5
            xp.multiply(centered, inv_sigma_out, out=x_hat_out)
            xp.multiply(x_hat_out, gamma, out=y)
            y += beta

        rows.by_rows(layer_norm, x, y, self.x_hat, self.inv_sigma)
        return y

    def backward(self, g):
        if is_grad_enabled():  # create_graph=True: the textbook's backward, on tensors, is differentiable
            return super().backward(g)
        x, gamma, _ = self.inputs
        xp = backend.array_module(g.data)
        dx = xp.empty(x.shape, xp.result_type(g.data, gamma.data, x.data))

        def layer_norm_dx(g, x_hat, inv_sigma, dx):
            dx_hat = g * gamma.data
            dx[...] = (dx_hat - _row_mean(dx_hat) - x_hat * _row_mean(dx_hat * x_hat)) * inv_sigma

        rows.by_rows(layer_norm_dx, g.data, self.x_hat, self.inv_sigma, dx)
        return Tensor._wrap(dx), g * Tensor._wrap(self.x_hat), g


def _row_mean(x):
    """The mean over the last axis (keepdims), by rows.sum_along (an einsum)."""
    return rows.sum_along(x, -1) / x.shape[-1]
