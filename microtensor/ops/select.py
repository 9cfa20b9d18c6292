"""Selection: where and masked_fill.  The condition is data, not an input: it has no gradient."""
from .. import backend
from ..autograd import Function
from ..tensor import Tensor, as_tensor


class Where(Function):
    """y = where(cond, a, b)       dL/da = where(cond, g, 0),  dL/db = where(cond, 0, g)"""

    def forward(self, a, b, cond):
        self.cond = cond
        return backend.array_module(a).where(cond, a, b)

    def backward(self, g):
        zero = Tensor._wrap(backend.array_module(g.data).zeros((), dtype=g.dtype))
        ga = Where.apply(g, zero, cond=self.cond) if self.needs_grad(0) else None
        gb = Where.apply(zero, g, cond=self.cond) if self.needs_grad(1) else None  # masked_fill's value: none
        return ga, gb


def where(cond, a, b):
    """Elementwise `a if cond else b`, broadcasting all three."""
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        raise TypeError("where: at least one of a, b must be a Tensor")
    cond = cond.data if isinstance(cond, Tensor) else backend.asarray(cond, device=like.device)
    if cond.dtype != bool:
        raise TypeError(f"where: the condition must be boolean, not {cond.dtype}")
    return Where.apply(as_tensor(a, like), as_tensor(b, like), cond=cond)


def masked_fill(x, mask, value):
    """x with `value` wherever mask is True (mask broadcasts to x's shape, not beyond it)."""
    mask_shape = tuple(mask.shape)
    try:
        fits = backend.broadcast_shapes(mask_shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"masked_fill: mask of shape {mask_shape} does not broadcast to the tensor's shape {x.shape}")
    return where(mask, value, x)
