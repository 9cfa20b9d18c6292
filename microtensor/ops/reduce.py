"""Reductions: sum, mean, var, max, min over `axis` (None = all), numpy-style keepdims.

Their backward spreads g back over the reduced axes: g is reshaped to the
keepdims shape and broadcast to the input's shape.
"""
from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from . import args


def normalize_axis(axis, shape, keepdims, op=None):
    """(axes, keepdims): axis as a sorted tuple of non-negative ints (None -> every axis),
    checked against `shape` as numpy does (a 0-d tensor has no axis 0), and keepdims as a bool."""
    return args.axes(axis, shape, op), args.flag(keepdims, 'keepdims', op)


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
    """y = sum(x, axis)       dL/dx = g broadcast back over the summed axes"""

    def forward(self, x, axis, keepdims):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        return x.sum(axis=self.axes, keepdims=keepdims)

    def backward(self, g):
        return (spread(g, self.inputs[0].shape, self.axes),)


def mean(x, axis=None, keepdims=False):
    """y = sum(x, axis) / n,  n = the number of elements averaged (nan when n = 0, as numpy)."""
    axes, keepdims = normalize_axis(axis, x.shape, keepdims, 'mean')
    total = Sum.apply(x, axis=axes, keepdims=keepdims)
    n = count(x.shape, axes)
    return total * (1.0 / n) if n else total * float('nan')


class Var(Function):
    """y = mean((x - mean(x))^2) * n / (n - ddof)
    dL/dx = g * 2 (x - mean(x)) / (n - ddof)

    With n - ddof <= 0 (var(ddof=1) of one element) numpy gives nan (or inf) and a
    RuntimeWarning; so does this op, and its gradient is what the formula gives: x/0.
    """

    def forward(self, x, axis, keepdims, ddof):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        self.ddof = args.number(ddof, 'ddof')
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
        winners = x == y
        self.share = (winners / winners.sum(axis=self.axes, keepdims=True)).astype(x.dtype)
        return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, g):
        return (spread(g, self.inputs[0].shape, self.axes) * Tensor._wrap(self.share),)


class Min(Max):
    """y = min(x, axis)       as Max, for the smallest entries"""
    reduce = 'min'


def sum_to(x, shape):
    """x summed down to `shape`: a shape that broadcasts to x's (what broadcasting made x from)."""
    shape = args.sizes(shape, 'sum_to')
    if len(shape) > x.ndim or any(n != 1 and n != m for n, m in zip(shape[::-1], x.shape[::-1])):
        raise ValueError(f"sum_to: shape {shape} does not broadcast to the tensor's shape {x.shape}")
    return SumTo.apply(x, shape=shape)


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
