"""Scans: running sums and products along one axis, cumsum and cumprod; running extremes, cummax and
cummin (values and indices); and the running log-sum-exp, logcumsumexp.

    cumsum  y_j = x_1 + ... + x_j         dL/dx_i = g_i + ... + g_n         (a cumsum from the end)
    cumprod y_j = x_1 * ... * x_j         dL/dx_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k

cumprod's gradient is often written sum_{j >= i} g_j y_j / x_i, which divides by zero where
x_i = 0; the products that skip x_i are computed instead (as PyTorch does for inputs with zeros).

Integers and bools accumulate in int64, as in PyTorch.  Floats accumulate as PyTorch's do on the
same device (promotion.scan_dtype): on the CPU float16 in float32 and float32 in float64, on the
GPU float16 in float32; the result comes back in x's dtype.  The casts are ops of the graph, so
the backward (a cumsum from the end, cumprod's sum of products) accumulates in that dtype too.
"""
from collections import namedtuple

from .. import backend, promotion
from ..argcheck import DTypeError
from ..autograd import Function
from ..convert import tensor_arg
from ..tensor import Tensor
from . import args
from .gather import gather
from .rearrange import Flip
from .select import where


class Cumsum(Function):
    """y = cumsum(x, axis)        dL/dx = flip(cumsum(flip(g)))    (each x_i reaches every y_j, j >= i)
    (x arrives in its accumulation dtype: float16 as float32, float32 as float64 on the CPU; see scan)"""

    def forward(self, x, axis):
        self.axis = axis
        return backend.array_module(x).cumsum(x, axis=axis)

    def backward(self, g):
        flipped = Flip.apply(g, dims=(self.axis,))
        return (Flip.apply(Cumsum.apply(flipped, axis=self.axis), dims=(self.axis,)),)


class Cumprod(Function):
    """y = cumprod(x, axis)
        dL/dx_i = sum_{j >= i} g_j * P[i, j],   P[i, j] = prod_{k <= j, k != i} x_k

    P is itself a cumprod: of the rows of a matrix holding x with 1 on the diagonal (row i skips
    x_i), so it is exact with zeros in x, and differentiable again.  It costs n times the memory
    of x along the axis (n = its length): the price of never dividing by x_i.
    (x arrives in its accumulation dtype: float16 as float32, float32 as float64 on the CPU; see scan)
    """

    def forward(self, x, axis):
        self.axis = axis
        return backend.array_module(x).cumprod(x, axis=axis)

    def backward(self, g):
        (x,) = self.inputs
        xp = backend.array_module(x.data)
        n = x.shape[self.axis]
        last = x.swapaxes(self.axis, -1)                              # (..., n): the scanned axis last
        skip = xp.eye(n, dtype=bool)                                  # row i: 1 in place of x_i
        P = Cumprod.apply(where(skip, 1.0, last.expand_dims(-2)), axis=-1)   # (..., n_i, n_j)
        later = xp.triu(xp.ones((n, n), dtype=bool))                  # j >= i
        terms = where(later, P * g.swapaxes(self.axis, -1).expand_dims(-2), 0.0)
        return (terms.sum(axis=-1).swapaxes(self.axis, -1),)


def scan(op, x, dim, name):
    """op along dim, computed in x's accumulation dtype (promotion.scan_dtype) and returned in
    x's dtype (integers and bools: in int64)."""
    x = tensor_arg(x, name)
    if x.dtype.kind in 'biu':
        x = x.to(dtype='int64')
    if x.ndim == 0:  # as PyTorch: dim 0 or -1 of a 0-d tensor is the tensor itself
        args.axis(dim, (1,), name)
        return scan(op, x.reshape(1), 0, name).reshape(())
    wide = promotion.scan_dtype(x.dtype, x.device)
    return op.apply(x.to(dtype=wide), axis=args.axis(dim, x.shape, name)).to(dtype=x.dtype)


def cumsum(x, dim):
    """The running sum along dim: y_j = x_1 + ... + x_j, added up in float32 for float16 and (on
    the CPU) in float64 for float32, as in PyTorch."""
    return scan(Cumsum, x, dim, 'cumsum')


def cumprod(x, dim):
    """The running product along dim: y_j = x_1 * ... * x_j, multiplied in float32 for float16 and
    (on the CPU) in float64 for float32, as in PyTorch."""
    return scan(Cumprod, x, dim, 'cumprod')


class LogCumSumExp(Function):
    """y_j = log(sum_{i <= j} e^x_i), numpy's logaddexp.accumulate (no overflow)
        dL/dx_i = sum_{j >= i} g_j e^(x_i - y_j)        (each weight e^(x_i - y_j) <= 1: a softmax's share)"""

    def forward(self, x, axis):
        self.axis = axis
        return backend.array_module(x).logaddexp.accumulate(x, axis=axis)

    def backward(self, g):
        (x,) = self.inputs
        xp = backend.array_module(x.data)
        n = x.shape[self.axis]
        x_i = x.swapaxes(self.axis, -1).expand_dims(-1)                       # (..., n_i, 1)
        y_j = self.output.swapaxes(self.axis, -1).expand_dims(-2)             # (..., 1, n_j)
        later = xp.triu(xp.ones((n, n), dtype=bool))                          # j >= i
        share = where(later, (x_i - where(later, y_j, 0.0)).exp(), 0.0)       # (the masked part sees no -inf)
        return ((share * g.swapaxes(self.axis, -1).expand_dims(-2)).sum(axis=-1).swapaxes(self.axis, -1),)


def logcumsumexp(x, dim):
    """The running log(sum(exp(x))) along dim, as torch.logcumsumexp (floats; float16 in float32)."""
    x = tensor_arg(x, 'logcumsumexp')
    if x.dtype.kind != 'f':
        raise DTypeError(f"logcumsumexp: needs a float tensor, not {x.dtype} (as in PyTorch); use x.float()")
    if x.ndim == 0:
        args.axis(dim, (1,), 'logcumsumexp')
        return logcumsumexp(x.reshape(1), 0).reshape(())
    return promotion.widened(lambda x: LogCumSumExp.apply(x, axis=args.axis(dim, x.shape, 'logcumsumexp')), x)


cummax_result = namedtuple('cummax', ('values', 'indices'))  # as torch.return_types.cummax
cummin_result = namedtuple('cummin', ('values', 'indices'))


def _running_extreme(x, dim, op):
    x = tensor_arg(x, op)
    if x.ndim == 0:
        args.axis(dim, (1,), op)
        values, indices = _running_extreme(x.reshape(1), 0, op)
        return values.reshape(()), indices.reshape(())
    dim = args.axis(dim, x.shape, op)
    xp = backend.array_module(x.data)
    a = x.data
    running = (xp.maximum if op == 'cummax' else xp.minimum).accumulate(a, axis=dim)  # (nan propagates)
    n = x.shape[dim]
    place = xp.arange(n).reshape([-1 if d == dim else 1 for d in range(x.ndim)])
    reached = (a == running) | (xp.isnan(a) if a.dtype.kind == 'f' else False)   # ties and nan: the later place
    indices = xp.maximum.accumulate(xp.where(reached, place, 0), axis=dim).astype('int64')
    indices = Tensor._wrap(indices)
    return gather(x, dim, indices), indices


def cummax(x, dim):
    """(values, indices): the running maximum along dim and where it was last reached, as torch.cummax."""
    return cummax_result(*_running_extreme(x, dim, 'cummax'))


def cummin(x, dim):
    """(values, indices): the running minimum along dim and where it was last reached, as torch.cummin."""
    return cummin_result(*_running_extreme(x, dim, 'cummin'))
