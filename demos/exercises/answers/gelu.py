"""gelu (the tanh form of GPT-2 and BERT): y = x * h(x), with the gate

    h(x) = 0.5 (1 + tanh(u)),    u = sqrt(2/pi) (x + 0.044715 x^3)

Derive: y is a product, x times h(x), so the product rule gives two terms:

    dy/dx = h(x) + x * dh/dx,       dh/dx = 0.5 (1 - tanh(u)^2) * du/dx      (the chain rule)
    du/dx = ?

Forward keeps tanh(u) as self.t (a Tensor).  dL/dx = g * dy/dx.

Second order: not asked.  backward may work on arrays (wrap the result with
mt.as_tensor; on a 0-d x numpy gives scalars: np.asarray(...) keeps them float64 arrays);
`check` tests first-order gradients only.
"""
import math

import microtensor as mt
from microtensor import Function, backend

C = math.sqrt(2 / math.pi)
A = 0.044715


class GELU(Function):
    """y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))        x: any shape -> y: the same shape"""

    def forward(self, x):
        xp = backend.array_module(x)
        self.t = mt.as_tensor(xp.asarray(xp.tanh(C * (x + A * x ** 3))))  # (asarray: a 0-d x gives a numpy scalar)
        return 0.5 * x * (1 + self.t.data)

    def backward(self, g):
        # hint: product rule (the gate h plus x times h's slope) and chain rule (h's slope goes through u = C
        #   (x + A x^3)).
        (x,), t = self.inputs, self.t
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + 3 * A * x * x)),)
