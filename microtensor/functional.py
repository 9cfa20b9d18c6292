"""Function forms of the Tensor methods: mt.exp(x), mt.sum(x, dim), mt.maximum(a, b), ...

Each one names the op in microtensor/ops/ that does the work; linear, softmax, log_softmax,
masked_softmax, cross_entropy, gelu and layer_norm run the fused layer's op instead when it
is on (mt.set_fused, `with mt.fused():`).  As in PyTorch's
functional API, the tensor argument must be a Tensor (a list or an array is refused
with a message that says to use mt.tensor); the other operand of a binary op may be a
number or an array, made a constant like the Tensor (mt.add(x, 1), mt.mul(2, x)), and both
meet in the dtype PyTorch's promotion gives (microtensor/promotion.py).
"""
from .ops import attention, bitwise, elementwise, linalg, nn, rounding, select, shape
from .argcheck import ShapeError
from .convert import tensor_arg
from .promotion import floating
from .tensor import Tensor, binary
# the elementwise functions by family (ops/trigonometric.py, exponential.py, rounding.py, logic.py)
from .ops.trigonometric import acos, acosh, asin, asinh, atan, atan2, atanh, cosh, hypot, sinh, tan  # noqa: F401
from .ops.exponential import exp2, expm1, log10, log1p, log2, logaddexp, reciprocal, square  # noqa: F401
from .ops.rounding import ceil, copysign, floor, fmod, frac, round, sign, trunc  # noqa: F401
from .ops.logic import isfinite, isinf, isnan, logical_and, logical_not, logical_or, logical_xor  # noqa: F401
from .ops.elementwise import lerp, nan_to_num  # noqa: F401
from .ops.sort import argsort, kthvalue, sort  # noqa: F401
from .ops.select import masked_select, nonzero  # noqa: F401
from .ops.tiling import meshgrid, repeat_interleave, tile  # noqa: F401
from .ops.scan import cummax, cummin, logcumsumexp  # noqa: F401
from .ops.diagonal import diag, diag_embed, diagonal  # noqa: F401
from .ops.reduce import prod, std_mean, var_mean  # noqa: F401


def _needs_tensor(name, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}: needs a Tensor as a or b, got {type(a).__name__} and {type(b).__name__} "
                        "(make one with mt.tensor(...))")


def _binary(op, name=None):
    name = name or op.__name__.lower()

    def apply(a, b):
        _needs_tensor(name, a, b)
        return binary(op, a, b, name)
    apply.__name__ = name
    apply.__doc__ = op.__doc__
    return apply


def add(a, b, alpha=1):
    """a + alpha * b."""
    _needs_tensor('add', a, b)
    return elementwise.add(a, b, alpha)


def sub(a, b, alpha=1):
    """a - alpha * b."""
    _needs_tensor('sub', a, b)
    return elementwise.sub(a, b, alpha)


def div(a, b, rounding_mode=None):
    """a / b; rounding_mode 'floor' or 'trunc' rounds the quotient (ops/rounding.py)."""
    _needs_tensor('div', a, b)
    return rounding.div(a, b, rounding_mode)


def floor_divide(a, b):
    """a // b, outside the graph (as torch.floor_divide)."""
    _needs_tensor('floor_divide', a, b)
    return rounding.floor_divide(a, b)


mul = _binary(elementwise.Mul)
pow = _binary(elementwise.Pow)
remainder = _binary(rounding.Remainder, 'remainder')
bitwise_and = _binary(bitwise.And, 'bitwise_and')
bitwise_or = _binary(bitwise.Or, 'bitwise_or')
bitwise_xor = _binary(bitwise.Xor, 'bitwise_xor')
bitwise_left_shift = _binary(bitwise.LeftShift, 'bitwise_left_shift')
bitwise_right_shift = _binary(bitwise.RightShift, 'bitwise_right_shift')
maximum = _binary(elementwise.Maximum)
minimum = _binary(elementwise.Minimum)
matmul, masked_softmax = linalg.matmul, attention.masked_softmax
concatenate, stack, split = shape.concatenate, shape.stack, shape.split
cat = concatenate  # PyTorch's name
where, masked_fill = select.where, select.masked_fill
cross_entropy, gelu = nn.cross_entropy, nn.gelu
layer_norm, rms_norm, dropout = nn.layer_norm, nn.rms_norm, nn.dropout


def linear(x, weight, bias=None):
    """y = x @ weight^T + bias, as torch.nn.functional.linear: weight in PyTorch's layout (n_out, n_in),
    as nn.Linear stores it (ops/linalg.py)."""
    x, weight = tensor_arg(x, 'linear'), tensor_arg(weight, 'linear')
    return linalg.linear(x, weight, None if bias is None else tensor_arg(bias, 'linear', 'bias'))


_NOT_GIVEN = object()  # axis=None is numpy's "flattened", so "no axis" needs its own mark


def _softmax_dim(op, x, dim, axis):
    """(dim, axis) for mt.softmax / mt.log_softmax.  Given neither, a 0-, 1- or 2-D x takes its last
    dim, PyTorch's implicit choice for them too; a 3-D or higher x is refused, since PyTorch's
    (deprecated) implicit choice there is dim 0 (3-D) or 1, not the last."""
    if dim is not None or axis is not _NOT_GIVEN:
        return (-1 if dim is None else dim), (-1 if axis is _NOT_GIVEN else axis)
    x = tensor_arg(x, op)
    if x.ndim >= 3:
        raise TypeError(f"{op}: say which dim for a {x.ndim}-D tensor of shape {x.shape}, e.g. {op}(x, dim=-1): "
                        f"without one PyTorch's F.{op} takes dim {0 if x.ndim == 3 else 1}, not the last")
    return -1, -1


def softmax(x, dim=None, *, axis=_NOT_GIVEN):
    """exp(x) / sum(exp(x)) along dim, as torch.nn.functional.softmax (ops/nn.py)."""
    dim, axis = _softmax_dim('softmax', x, dim, axis)
    return nn.softmax(x, dim, axis=axis)


def log_softmax(x, dim=None, *, axis=_NOT_GIVEN):
    """log(softmax(x)) along dim, computed stably, as torch.nn.functional.log_softmax (ops/nn.py)."""
    dim, axis = _softmax_dim('log_softmax', x, dim, axis)
    return nn.log_softmax(x, dim, axis=axis)


def neg(x): return -tensor_arg(x, 'neg')
def exp(x): return tensor_arg(x, 'exp').exp()
def log(x): return tensor_arg(x, 'log').log()
def sqrt(x): return tensor_arg(x, 'sqrt').sqrt()
def tanh(x): return tensor_arg(x, 'tanh').tanh()
def rsqrt(x): return tensor_arg(x, 'rsqrt').rsqrt()
def outer(a, b): return tensor_arg(a, 'outer').outer(tensor_arg(b, 'outer'))
def unbind(x, dim=0): return tensor_arg(x, 'unbind').unbind(dim)
def sin(x): return tensor_arg(x, 'sin').sin()
def cos(x): return tensor_arg(x, 'cos').cos()
def sigmoid(x): return tensor_arg(x, 'sigmoid').sigmoid()
def relu(x): return tensor_arg(x, 'relu').relu()
def abs(x): return tensor_arg(x, 'abs').abs()
def bitwise_not(x): return ~tensor_arg(x, 'bitwise_not')
def erf(x): return elementwise.Erf.apply(floating(tensor_arg(x, 'erf')))
def clip(x, min=None, max=None): return tensor_arg(x, 'clip').clip(min, max)
# (reductions take PyTorch's dim= and keepdim=, or numpy's axis= and keepdims= by name)
def sum(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'sum').sum(dim, keepdim, **names)
def mean(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'mean').mean(dim, keepdim, **names)
def var(x, dim=None, unbiased=None, keepdim=False, **names): return tensor_arg(x, 'var').var(dim, unbiased, keepdim, **names)
def std(x, dim=None, unbiased=None, keepdim=False, **names): return tensor_arg(x, 'std').std(dim, unbiased, keepdim, **names)
def max(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'max').max(dim, keepdim, **names)
def min(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'min').min(dim, keepdim, **names)
def amax(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'amax').amax(dim, keepdim, **names)
def amin(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'amin').amin(dim, keepdim, **names)
def argmax(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'argmax').argmax(dim, keepdim, **names)
def argmin(x, dim=None, keepdim=False, **names): return tensor_arg(x, 'argmin').argmin(dim, keepdim, **names)
def numel(x): return tensor_arg(x, 'numel').numel()
def reshape(x, *shape): return tensor_arg(x, 'reshape').reshape(*shape)
def transpose(x, *dims): return tensor_arg(x, 'transpose').transpose(*dims)
def permute(x, *dims): return tensor_arg(x, 'permute').permute(*dims)
def swapaxes(x, axis1, axis2): return tensor_arg(x, 'swapaxes').swapaxes(axis1, axis2)
def expand_dims(x, axis): return tensor_arg(x, 'expand_dims').expand_dims(axis)
def unsqueeze(x, dim): return tensor_arg(x, 'unsqueeze').unsqueeze(dim)
def squeeze(x, dim=None): return tensor_arg(x, 'squeeze').squeeze(dim)
def flatten(x, start_dim=0, end_dim=-1): return tensor_arg(x, 'flatten').flatten(start_dim, end_dim)
def unflatten(x, dim, sizes): return tensor_arg(x, 'unflatten').unflatten(dim, sizes)
def chunk(x, chunks, dim=0): return tensor_arg(x, 'chunk').chunk(chunks, dim)
def clone(x): return tensor_arg(x, 'clone').clone()
def broadcast_to(x, shape): return tensor_arg(x, 'broadcast_to').broadcast_to(shape)
