"""sum: y = sum of x over `axis` (None: every element; an int or a tuple of ints), as numpy.

Derive: every element x_i that was added into y_j has dy_j/dx_i = 1, so

    dL/dx_i = g_j      for the y_j that x_i was summed into

g has y's shape: the summed axes are gone (or have size 1 with keepdims=True).  Put them
back as size-1 axes (kept_shape, worked out in forward), then broadcast g to x's shape.

Second order: asked.  Write backward with Tensor operations on g, self.inputs and
self.output: `check` differentiates it once more (gradgradcheck).
"""
from microtensor import Function


class Sum(Function):
    """y = x.sum(axis, keepdims)        x: any shape -> y: x's shape without the summed axes"""

    def forward(self, x, axis=None, keepdims=False):
        axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
        axes = [a % x.ndim for a in axes]
        self.kept_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))  # y with keepdims=True
        return x.sum(axis=axis, keepdims=keepdims)

    def backward(self, g):
        # hint: reshape g to self.kept_shape (the summed axes back, with size 1), then .broadcast_to(x.shape).
        (x,) = self.inputs
        return (g.reshape(self.kept_shape).broadcast_to(x.shape),)
