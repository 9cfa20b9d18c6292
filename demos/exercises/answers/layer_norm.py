"""layer_norm: over the last axis (size D) of x,

    mu = mean(x),  var = mean((x - mu)^2),  x_hat = (x - mu) / sqrt(var + eps),  y = gamma * x_hat + beta

x: (..., D); gamma, beta: (D,) -> y: x's shape.  Forward keeps x_hat and 1/sqrt(var + eps)
as self.x_hat and self.inv_std (Tensors; inv_std has shape (..., 1)).

Derive: dL/dbeta = g and dL/dgamma = g * x_hat (the engine sums both over the leading axes).
For x, let dx_hat = g * gamma.  x_hat depends on x directly and through mu and var, which
depend on every x of the row:

    dL/dx = (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) * inv_std      (means over the row)

(work it out: d mu/dx_i = 1/D, d var/dx_i = 2 (x_i - mu) / D).

Second order: not asked.  backward may work on arrays (wrap the result with
mt.as_tensor); `check` tests first-order gradients only.
"""
import microtensor as mt
from microtensor import Function, backend


class LayerNorm(Function):
    """y = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta over the last axis"""

    def forward(self, x, gamma, beta, eps=1e-5):
        centered = x - x.mean(axis=-1, keepdims=True)
        inv_std = 1 / backend.array_module(x).sqrt((centered * centered).mean(axis=-1, keepdims=True) + eps)
        self.x_hat, self.inv_std = mt.as_tensor(centered * inv_std), mt.as_tensor(inv_std)
        return gamma * self.x_hat.data + beta

    def backward(self, g):
        # hint: three gradients (x, gamma, beta). For x, start from dx_hat = g * gamma and subtract the row
        #   means that mu and var bring: mean(dx_hat) and x_hat * mean(dx_hat * x_hat).
        _, gamma, _ = self.inputs
        x_hat, inv_std = self.x_hat, self.inv_std
        dx_hat = g * gamma
        dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True)
              - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) * inv_std
        return dx, g * x_hat, g
