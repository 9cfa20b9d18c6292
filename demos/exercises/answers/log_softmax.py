"""log_softmax: y_i = x_i - log sum_j exp(x_j) along `axis` (computed stably).

Derive: dy_j/dx_i = delta_ij - softmax(x)_i, since d log sum exp / dx_i = softmax(x)_i.  So

    dL/dx_i = sum_j g_j (delta_ij - softmax_i) = ?

softmax(x) = exp(y), and y is self.output.  Keep the summed axis (keepdims=True).
"""
from microtensor import Function, backend


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x)))) along axis        x: any shape -> y: the same shape"""

    def forward(self, x, axis=-1):
        self.axis = axis
        xp = backend.array_module(x)
        shifted = x - x.max(axis=axis, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(self, g):
        # hint: each y_j contains -log(sum exp), which depends on every x_i: dL/dx = g - softmax(x) * (row sum
        #   of g).
        y = self.output
        return (g - y.exp() * g.sum(axis=self.axis, keepdims=True),)
