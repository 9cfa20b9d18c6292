"""Scans: running sums and products along one axis, cumsum and cumprod.

    cumsum  y_j = x_1 + ... + x_j         dL/dx_i = g_i + ... + g_n         (a cumsum from the end)
    cumprod y_j = x_1 * ... * x_j         dL/dx_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k

cumprod's gradient is often written sum_{j >= i} g_j y_j / x_i, which divides by zero where
x_i = 0; the products that skip x_i are computed instead (as PyTorch does for inputs with zeros).

Integers and bools accumulate in int64, as in PyTorch.  Floats accumulate as PyTorch's do on the
same device (promotion.scan_dtype): on the CPU float16 in float32 and float32 in float64, on the
GPU float16 in float32; the result comes back in x's dtype.  The casts are ops of the graph, so
the backward (a cumsum from the end, cumprod's sum of products) accumulates in that dtype too.
"""
from .. import backend, promotion
from ..autograd import Function
from ..convert import tensor_arg
from . import args
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
