"""Selection: where, masked_fill, masked_select and nonzero.  The condition is data, not an input: it has
no gradient."""
from .. import backend
from ..argcheck import DTypeError, ShapeError
from ..autograd import Function
from .. import promotion
from ..convert import as_tensor, check_cast, param_array, tensor_arg
from ..tensor import Tensor


class Where(Function):
    """y = where(cond, a, b)       dL/da = where(cond, g, 0),  dL/db = where(cond, 0, g)

    `cond` is a boolean array, not an input: where() hands the op a private copy, so
    changing the mask in place after the forward pass cannot move the gradient.
    """

    def forward(self, a, b, cond):
        self.cond = cond
        return backend.array_module(a).where(cond, a, b)

    def backward(self, g):
        zero = Tensor._wrap(backend.array_module(g.data).zeros((), dtype=g.dtype))
        ga = Where.apply(g, zero, cond=self.cond) if self.needs_grad(0) else None
        gb = Where.apply(zero, g, cond=self.cond) if self.needs_grad(1) else None  # masked_fill's value: none
        return ga, gb


def where(cond, a, b, op='where'):
    """Elementwise `a if cond else b`, broadcasting all three.

    a and b may be numbers or arrays (constants) as long as one of a, b, cond is a Tensor,
    whose device the result lives on; cond must be boolean."""
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else cond
    if not isinstance(like, Tensor):
        raise TypeError(f"{op}: needs a Tensor among cond, a and b; got {type(cond).__name__}, "
                        f"{type(a).__name__} and {type(b).__name__} (wrap one with mt.tensor)")
    cond = param_array(cond, like, op, 'condition')
    if cond.dtype != bool:
        raise DTypeError(f"{op}: the condition must be boolean, not {cond.dtype} (compare first, e.g. x > 0)")
    if op == 'masked_fill' and promotion.is_python_number(a):  # stored in x's dtype (b is x): it must fit
        a = promotion.scalar(op, promotion.fit(op, a, b.dtype), b.dtype, b)
    elif op == 'masked_fill':  # the result keeps x's dtype, as in PyTorch
        a = a.to(dtype=b.dtype) if isinstance(a, Tensor) else as_tensor(a, b, op)
        check_cast(a.data, b.dtype, op)
        a = Tensor._wrap(a.data.astype(b.dtype, copy=False)) if a.dtype != b.dtype else a
    else:  # in their common dtype, as in PyTorch; a number stored in an integer dtype must fit it
        dtype = promotion.result_type(a, b)
        a, b = (promotion.fit(op, v, dtype) if dtype is not None and dtype.kind in 'iu' and
                promotion.is_python_number(v) else v for v in (a, b))
        a, b = promotion.operands(op, a, b, like=like, dtype=dtype)
    return Where.apply(a, b, cond=cond.copy())


def masked_fill(x, mask, value):
    """x with `value` wherever mask is True (mask broadcasts to x's shape, not beyond it)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"masked_fill: expected a Tensor to fill, not {type(x).__name__}")
    mask = param_array(mask, x, 'masked_fill', 'mask')
    if not backend.broadcasts_to(mask.shape, x.shape):
        raise ShapeError(f"masked_fill: mask of shape {mask.shape} does not broadcast to the tensor's shape {x.shape}")
    if isinstance(value, Tensor) and value.ndim:
        raise ValueError(f"masked_fill: value must be a number or a 0-d tensor, not a tensor of shape {value.shape}")
    return where(mask, value, x, op='masked_fill')


def masked_select(x, mask):
    """The entries of x where mask is True, as a 1-d tensor in row-major order (x and mask broadcast to
    one shape first, as in PyTorch); each picked entry's gradient goes back to its place."""
    x, mask = tensor_arg(x, 'masked_select'), tensor_arg(mask, 'masked_select', 'mask')
    if mask.dtype != bool:
        raise DTypeError(f"masked_select: mask must be a bool tensor, not {mask.dtype} (as in PyTorch); use mask != 0")
    try:
        shape = backend.broadcast_shapes(x.shape, mask.shape)
    except ValueError:
        raise ShapeError(f"masked_select: x {x.shape} and mask {mask.shape} do not broadcast to one shape") from None
    return x.broadcast_to(shape)[mask.broadcast_to(shape)]


def nonzero(x, as_tuple=False):
    """The indices of x's nonzero entries, in row-major order: an int64 tensor (count, x.ndim), or with
    as_tuple=True one 1-d tensor per dim (what x[...] takes), as torch.nonzero.  No gradient."""
    x = tensor_arg(x, 'nonzero')
    xp = backend.array_module(x.data)
    found = xp.argwhere(x.data).astype('int64')
    if x.ndim == 0:  # a 0-d tensor: as PyTorch, (count, 0) and, as a tuple, one dim of its count
        found = xp.zeros((int(bool(x.data)), 0), dtype='int64')
        return (Tensor._wrap(xp.zeros(found.shape[0], dtype='int64')),) if as_tuple else Tensor._wrap(found)
    if as_tuple:
        return tuple(Tensor._wrap(found[:, d].copy()) for d in range(x.ndim))
    return Tensor._wrap(found)
