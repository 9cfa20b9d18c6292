"""broadcast_add: y = a + b, where numpy broadcasting stretched a or b to y's shape.

Derive: dy_i/da_i = 1, so dL/da = g at y's shape.  But a may be smaller: broadcasting
(1) adds leading axes (b of shape (m,) added to a (n, m) is used as (1, m)) and
(2) repeats axes of size 1 (a (n, 1) is used n x m times).  An element used many times
gets the sum of the gradients of every place it was used:

    dL/da = g summed over the leading axes broadcasting added, and over the axes where a has
            size 1 and y does not (keeping those size-1 axes)

Every other op leaves this step to the engine (backward_loop calls g.sum_to(x.shape));
here you write it: this backward must return each gradient at exactly its input's shape.

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function


class BroadcastAdd(Function):
    """y = a + b        a, b: broadcastable shapes -> y: the broadcast shape"""

    def forward(self, a, b):
        return a + b

    def backward(self, g):
        # hint: for each input x: sum g over its extra leading axes (g.ndim - x.ndim of them), then over the
        #   axes where x has size 1, with keepdims=True.
        grads = []
        for x in self.inputs:
            lead = g.ndim - x.ndim
            gx = g.sum(axis=tuple(range(lead))) if lead else g
            stretched = tuple(i for i, n in enumerate(x.shape) if n == 1 and gx.shape[i] != 1)
            grads.append(gx.sum(axis=stretched, keepdims=True) if stretched else gx)
        return tuple(grads)
