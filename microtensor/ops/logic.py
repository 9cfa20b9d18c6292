"""Logic with no gradient: any, all (over dims, as PyTorch's), isclose and allclose; isnan, isinf,
isfinite; logical_not, logical_and, logical_or, logical_xor.

Each result is a tensor of bools outside the graph (allclose: a Python bool, as in PyTorch).
The dimension may be given as PyTorch's dim/keepdim or numpy's axis/keepdims.
"""
from .. import argcheck, backend, promotion
from ..argcheck import ShapeError
from ..convert import tensor_arg
from ..tensor import Tensor
from . import args


def dim_argument(op, dim, axis, keepdim, keepdims):
    """(dim, keepdim) from PyTorch's names or numpy's (not both of one)."""
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{op}: got dim={dim!r} and axis={axis!r}; pass one of them (they are the same thing)")
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return dim, argcheck.boolean(keepdim, op, 'keepdim')


def _reduce_logic(op, x, dim, keepdim, axis, keepdims):
    x = tensor_arg(x, op)
    dim, keepdim = dim_argument(op, dim, axis, keepdim, keepdims)
    if x.ndim == 0 and dim in (0, -1, (0,), (-1,)):  # as PyTorch: dim 0 or -1 of a 0-d tensor is the tensor
        dim = None
    axes = args.axes(dim, x.shape, op)
    result = getattr(x.data, op)(axis=axes, keepdims=keepdim)
    if x.dtype == backend.dtype('uint8'):  # PyTorch keeps uint8 here (its masks' old dtype)
        result = result.astype(x.dtype)
    return Tensor._wrap(result)


def any(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """True where some element over `dim` (None: all of them) is nonzero."""
    return _reduce_logic('any', x, dim, keepdim, axis, keepdims)


def all(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """True where every element over `dim` (None: all of them) is nonzero."""
    return _reduce_logic('all', x, dim, keepdim, axis, keepdims)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, elementwise (inf equals inf of its sign; nan equals nan only with
    equal_nan=True).  Two tensors must have one dtype, as in PyTorch (a number compares in a's)."""
    a = tensor_arg(a, 'isclose', 'a')
    if isinstance(b, Tensor) and b.dtype != a.dtype:
        raise RuntimeError(f"isclose: a is {a.dtype} and b is {b.dtype}; PyTorch compares two tensors of one "
                           f"dtype: convert one first (b.to(a.dtype))")
    rtol = argcheck.number(rtol, 'isclose', 'rtol', min=0)
    atol = argcheck.number(atol, 'isclose', 'atol', min=0)
    equal_nan = argcheck.boolean(equal_nan, 'isclose', 'equal_nan')
    a, b = promotion.operands('isclose', a, b)
    if type(a.data) is not type(b.data):
        raise RuntimeError(f"isclose: a is on '{a.device}' but b is on '{b.device}'; move one with .to(device)")
    try:
        xp = backend.array_module(a.data)
        return Tensor._wrap(xp.isclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan))
    except ValueError as error:
        raise ShapeError(f"isclose: shapes {a.shape} and {b.shape} do not broadcast ({error})") from None


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if isclose holds for every element (a Python bool, as torch.allclose)."""
    return bool(isclose(a, b, rtol, atol, equal_nan).data.all())


# ------------------------------------------------------------------ tests of each element: booleans, no gradient
def _test(name, numpy_name, non_float):
    """mt.<name>(x): a boolean tensor; an integer or bool x has no nan and no inf (non_float everywhere)."""
    def function(x):
        x = tensor_arg(x, name)
        xp = backend.array_module(x.data)
        if x.dtype.kind != 'f':
            return Tensor._wrap(xp.full(x.shape, non_float))
        return Tensor._wrap(getattr(xp, numpy_name)(x.data))
    function.__name__ = function.__qualname__ = name
    return function


isnan = _test('isnan', 'isnan', False)
isinf = _test('isinf', 'isinf', False)
isfinite = _test('isfinite', 'isfinite', True)
isnan.__doc__ = "True where x is nan (a boolean tensor, no gradient)."
isinf.__doc__ = "True where x is +inf or -inf (a boolean tensor, no gradient)."
isfinite.__doc__ = "True where x is neither nan nor +-inf (a boolean tensor, no gradient)."


def logical_not(x):
    """True where x is 0 (False, 0, 0.0), as torch.logical_not: a boolean tensor, no gradient."""
    x = tensor_arg(x, 'logical_not')
    return Tensor._wrap(backend.array_module(x.data).logical_not(x.data))


def _logical(name):
    def function(a, b):
        """a and b, two tensors, read as truth values (nonzero is True), combined elementwise: a boolean tensor."""
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            raise TypeError(f"{name}: needs two Tensors, got {type(a).__name__} and {type(b).__name__} (as "
                            "PyTorch's; make a number a tensor with mt.tensor(...))")
        a, b = promotion.operands(name, a, b)
        if type(a.data) is not type(b.data):
            raise RuntimeError(f"{name}: a is on '{a.device}' but b is on '{b.device}'; move one with .to(device)")
        try:
            return Tensor._wrap(getattr(backend.array_module(a.data), name)(a.data, b.data))
        except ValueError as error:
            raise ShapeError(f"{name}: shapes {a.shape} and {b.shape} do not broadcast ({error})") from None
    function.__name__ = function.__qualname__ = name
    return function


logical_and, logical_or, logical_xor = _logical('logical_and'), _logical('logical_or'), _logical('logical_xor')
