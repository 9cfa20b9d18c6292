"""Reductions: sum, mean, var, max, min, norm over `axis` (None = all), numpy-style keepdims.

Their backward spreads g back over the reduced axes: g is reshaped to the
keepdims shape and broadcast to the input's shape.
"""
import math

from .. import argcheck, backend, promotion
from ..autograd import Function
from ..tensor import Tensor
from . import args
from ..fused import switch as fused_switch
from .select import where


def normalize_axis(axis, shape, keepdims, op=None):
    """(axes, keepdims): axis as a sorted tuple of non-negative ints (None -> every axis),
    checked against `shape` as numpy does (a 0-d tensor has no axis 0), and keepdims as a bool."""
    return args.axes(axis, shape, op), argcheck.boolean(keepdims, op, 'keepdims')


def kept_shape(shape, axes):
    """The output shape with keepdims=True: reduced axes become 1."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def count(shape, axes):
    """How many elements a reduction over `axes` combines into each result."""
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def spread(g, x_shape, axes):
    """g (reduced shape) -> x_shape, by re-inserting the reduced axes and broadcasting."""
    return g.reshape(kept_shape(x_shape, axes)).broadcast_to(x_shape)


class Sum(Function):
    """y = sum(x, axis)       dL/dx = g broadcast back over the summed axes

    Booleans and integers of every size add up in int64, as in PyTorch (a count of True, a
    sum of uint8 pixels: no wrap-around at 255, and uint8.sum() - 1000 may be negative);
    float16 adds up in float32 and is rounded once, at the end (promotion.accumulation_dtype)."""

    def forward(self, x, axis, keepdims):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        if x.dtype.kind != 'f':
            return x.sum(axis=self.axes, keepdims=keepdims, dtype='int64')
        return x.sum(axis=self.axes, keepdims=keepdims, dtype=promotion.accumulation_dtype(x.dtype)).astype(
            x.dtype, copy=False)

    def backward(self, g):
        return (spread(g, self.inputs[0].shape, self.axes),)


def mean(x, axis=None, keepdims=False):
    """y = sum(x, axis) / n,  n = the number of elements averaged (nan when n = 0, as numpy).
    Of integers and booleans: computed in float64 (no overflow, no lost digits), returned in the
    default float (PyTorch refuses them)."""
    if x.dtype.kind != 'f':  # a constant: integer tensors never require grad
        return mean(x.to(dtype='float64'), axis, keepdims).to(dtype=promotion.floating_dtype(x.dtype))
    if promotion.accumulation_dtype(x.dtype) != x.dtype:  # float16: in float32, as PyTorch
        return promotion.widened(mean, x, axis, keepdims)
    axes, keepdims = normalize_axis(axis, x.shape, keepdims, 'mean')
    total = Sum.apply(x, axis=axes, keepdims=keepdims)
    n = count(x.shape, axes)
    return total * (1.0 / n) if n else total * float('nan')


def var(x, axis=None, keepdims=False, ddof=0):
    """Var of x; of integers and booleans, computed in float64 (no overflow) and returned in the
    default float (PyTorch refuses them)."""
    if x.dtype.kind != 'f':  # a constant: integer tensors never require grad
        return Var.apply(x.to(dtype='float64'), axis=axis, keepdims=keepdims, ddof=ddof).to(
            dtype=promotion.floating_dtype(x.dtype))
    return promotion.widened(Var.apply, x, axis=axis, keepdims=keepdims, ddof=ddof)  # float16: in float32


class Var(Function):
    """y = mean((x - mean(x))^2) * n / (n - ddof)
    dL/dx = g * 2 (x - mean(x)) / (n - ddof)

    With n - ddof <= 0 (var(ddof=1) of one element) numpy gives nan (or inf) and a
    RuntimeWarning; so does this op, and its gradient is what the formula gives: x/0.
    """

    def forward(self, x, axis, keepdims, ddof):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        self.ddof = argcheck.real(ddof, None, 'ddof')
        with backend.quiet_float_errors(x):
            return x.var(axis=self.axes, keepdims=keepdims, ddof=ddof)

    def backward(self, g):
        (x,) = self.inputs
        dof = count(x.shape, self.axes) - self.ddof
        centered = x - x.mean(axis=self.axes, keepdims=True)
        return (spread(g, x.shape, self.axes) * centered * (2.0 / dof if dof > 0 else float('inf')),)


class Max(Function):
    """y = max(x, axis)       dL/dx = g where x equals the max, split evenly among ties:
    dL/dx_i = g * [x_i == y] / (number of i with x_i == y)"""
    reduce = 'max'

    def forward(self, x, axis, keepdims):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        if any(x.shape[a] == 0 for a in self.axes):
            raise ValueError(f"the {self.reduce} over an empty axis is undefined (there is no element to pick)")
        y = getattr(x, self.reduce)(axis=self.axes, keepdims=True)
        return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, g):
        x = self.inputs[0].data
        winners = x == self.output.data.reshape(kept_shape(x.shape, self.axes))
        with backend.quiet_float_errors(x):  # a NaN row has no winner: its gradient is NaN, like its max
            share = (winners / winners.sum(axis=self.axes, keepdims=True)).astype(x.dtype)
        return (spread(g, x.shape, self.axes) * Tensor._wrap(share),)


class Min(Max):
    """y = min(x, axis)       as Max, for the smallest entries"""
    reduce = 'min'


def sum_to(x, shape):
    """x summed down to `shape`: a shape that broadcasts to x's (what broadcasting made x from)."""
    shape = args.sizes(shape, 'sum_to')
    if len(shape) > x.ndim or any(n != 1 and n != m for n, m in zip(shape[::-1], x.shape[::-1])):
        raise ValueError(f"sum_to: shape {shape} does not broadcast to the tensor's shape {x.shape}")
    return (FusedSumTo if fused_switch.enabled else SumTo).apply(x, shape=shape)


class SumTo(Function):
    """y = x summed down to `shape` (undoes broadcasting)      dL/dx = g broadcast to x's shape

    The backward loop calls this when an op's gradient has the broadcast shape.
    """

    def forward(self, x, shape):
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
        return x.sum(axis=axes, keepdims=True).reshape(shape)

    def backward(self, g):
        return (g.broadcast_to(self.inputs[0].shape),)


class Norm(Function):
    """y = |x|_p over `axes`: (sum |x_i|^p)^(1/p); p = inf: max |x_i|, -inf: min |x_i|, 0: count of x_i != 0

        dL/dx = g * x / y                           p = 2 (g * x / |x|)
        dL/dx = g * sign(x)                         p = 1
        dL/dx = g * sign(x) [|x| = y] / #ties       p = +-inf (ties share g, as in max)
        dL/dx = g * sign(x) |x|^(p-1) / y^(p-1)     other p
        dL/dx = 0                                   p = 0 (a count), and where y = 0 (as PyTorch)
    """

    def forward(self, x, p, axes, keepdims):
        self.p, self.axes = p, axes
        xp = backend.array_module(x)
        size = abs(x)
        with backend.quiet_float_errors(x):  # 0 ** negative p is inf, as in numpy
            if p == math.inf:
                y = size.max(axis=axes, keepdims=True)
            elif p == -math.inf:
                y = size.min(axis=axes, keepdims=True)
            elif p == 0:
                y = (x != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
            elif p == 1:
                y = size.sum(axis=axes, keepdims=True)
            elif p == 2:
                y = xp.sqrt((x * x).sum(axis=axes, keepdims=True))
            else:
                y = (size ** p).sum(axis=axes, keepdims=True) ** (1 / p)
        return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in axes])

    def backward(self, g):
        (x,) = self.inputs
        p, shape = self.p, kept_shape(x.shape, self.axes)
        g, y = g.reshape(shape), self.output.reshape(shape)
        xp = backend.array_module(x.data)
        sign = Tensor._wrap(xp.sign(x.data))
        if p == 0:
            return (Tensor._wrap(xp.zeros_like(x.data)),)
        if p == 1:
            return (g * sign,)
        if p in (math.inf, -math.inf):
            winners = abs(x.data) == y.data
            return (g * sign * Tensor._wrap((winners / winners.sum(axis=self.axes, keepdims=True)).astype(x.dtype)),)
        zero_norm = y.data == 0  # every x_i is 0 there (or, for p < 0, one is): the gradient is 0
        safe_y = where(zero_norm, 1.0, y)
        if p == 2:
            return (where(zero_norm, 0.0, g * x / safe_y),)
        zero_x = x.data == 0  # |x|^(p-1) is inf at 0 when p < 1: PyTorch takes 0 there
        scaled = where(zero_x, 0.0, sign * where(zero_x, 1.0, x.abs()) ** (p - 1))
        return (scaled * where(zero_norm, 0.0, g / safe_y ** (p - 1)),)


MATRIX_ORDERS = (None, 'fro', 1, -1, math.inf, -math.inf)


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm(x, ord, axis, keepdims), differentiable.

    axis None: ord None gives the 2-norm of all elements (any shape); otherwise x must be
    a vector (1-D) or a matrix (2-D).  axis int: vector norms along it; axis (i, j):
    matrix norms over those two axes (rows along i, columns along j).
      vector ord: None or 2 (sqrt of the sum of squares), 1, inf, -inf, 0 (nonzero count),
                  any other p (sum |x|^p)^(1/p); 'fro' is accepted as 2, as in torch.norm
      matrix ord: None or 'fro' (Frobenius), 1 / -1 (max / min column sum of |x|),
                  inf / -inf (max / min row sum of |x|); 2, -2, 'nuc' need an SVD: not supported
    The gradient is 0 where the norm is 0, as in PyTorch (not NaN).
    """
    if not backend.float_dtype(x.dtype):
        raise TypeError(f"norm: needs a floating-point tensor, not {x.dtype} (use x.float().norm())")
    if promotion.accumulation_dtype(x.dtype) != x.dtype:  # float16: in float32, as PyTorch
        return promotion.widened(norm, x, ord, axis, keepdims)
    if axis is None:
        if ord is None:
            return Norm.apply(x, p=2, axes=tuple(range(x.ndim)), keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: ord={ord!r} of a tensor of shape {x.shape} is ambiguous; "
                             "pass axis= (an int: vector norms, a pair: matrix norms), or ord=None "
                             "for the 2-norm of all elements")
        axis = tuple(range(x.ndim))
    keepdims = argcheck.boolean(keepdims, 'norm', 'keepdims')
    # in the given order: a matrix norm's rows come first
    axes = tuple(args.axis(a, x.shape, 'norm') for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes) or len(axes) not in (1, 2):
        raise ValueError(f"norm: axis={axis!r} must be one axis (vector norms) or two different "
                         "axes (matrix norms)")
    if len(axes) == 1:
        if isinstance(ord, str) and ord != 'fro':
            raise ValueError(f"norm: ord={ord!r} is not a vector norm; use None, 2, 1, inf, -inf, 0 or a number")
        p = 2 if ord in (None, 'fro') else float(ord)
        return Norm.apply(x, p=p, axes=axes, keepdims=keepdims)
    if ord not in MATRIX_ORDERS:
        raise ValueError(f"norm: matrix ord={ord!r} is not supported; use None or 'fro' (Frobenius), "
                         "1, -1, inf or -inf (ord 2, -2 and 'nuc' need singular values, which microtensor "
                         "does not compute)")
    if ord in (None, 'fro'):
        return Norm.apply(x, p=2, axes=tuple(sorted(axes)), keepdims=keepdims)
    summed, picked = axes if ord in (1, -1) else axes[::-1]  # 1: sum over rows, then pick a column
    sums = x.abs().sum(axis=summed, keepdims=True)
    y = sums.max(axis=picked, keepdims=True) if ord > 0 else sums.min(axis=picked, keepdims=True)
    return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in axes])


from ..fused.reduce import FusedSumTo  # noqa: E402  (the fused layer builds on SumTo above)
