"""log_softmax: y_i = x_i - log sum_j exp(x_j) along `axis` (computed stably).

Derive: dy_j/dx_i = delta_ij - softmax(x)_i, since d log sum exp / dx_i = softmax(x)_i.  So

    dL/dx_i = sum_j g_j (delta_ij - softmax_i) = ?

softmax(x) = exp(y), and y is self.output.  Keep the summed axis (keepdims=True).

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function, backend


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x)))) along axis        x: any shape -> y: the same shape"""

    def forward(self, x, axis=-1):
        xp = backend.array_module(x)
        self.axis = axis
        m = x.max(axis=axis, keepdims=True)  # log sum exp(x) = m + log sum exp(x - m): no overflow
        return x - m - xp.log(xp.exp(x - m).sum(axis=axis, keepdims=True))

    def backward(self, g):
        # hint: each y_j contains -log(sum exp), which depends on every x_i: dL/dx = g - softmax(x) * (row sum
        #   of g).
        softmax = self.output.exp()
        return (g - softmax * g.sum(axis=self.axis, keepdims=True),)
