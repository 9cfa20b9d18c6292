"""Reductions: sum, mean, var, std, max, min, amax, amin, argmax, argmin, norm over `dim`
(None = all), as PyTorch's (numpy's spellings axis= and keepdims= are accepted too).

Their backward spreads g back over the reduced axes: g is reshaped to the
keepdims shape and broadcast to the input's shape.
"""
import math
from collections import namedtuple

from .. import argcheck, backend, promotion
from ..argcheck import DTypeError, ShapeError
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


class Var(Function):
    """y = sum((x - mean(x))^2) / (n - correction)       (correction 1: PyTorch's default; 0: numpy's)
    dL/dx = g * 2 (x - mean(x)) / (n - correction)

    With n - correction <= 0 (var() of one element) numpy gives nan (or inf) and a
    RuntimeWarning; so does this op, and its gradient is what the formula gives: x/0.
    """

    def forward(self, x, axis, keepdims, correction):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        self.correction = correction
        with backend.quiet_float_errors(x):
            return x.var(axis=self.axes, keepdims=keepdims, ddof=correction)

    def backward(self, g):
        (x,) = self.inputs
        dof = count(x.shape, self.axes) - self.correction
        centered = x - mean(x, self.axes, True)
        return (spread(g, x.shape, self.axes) * centered * (2.0 / dof if dof > 0 else float('inf')),)


class Std(Function):
    """y = sqrt(var(x, correction))
    dL/dx = g * (x - mean(x)) / ((n - correction) * y),   0 where y = 0 (as PyTorch: no nan)"""

    def forward(self, x, axis, keepdims, correction):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        self.correction = correction
        with backend.quiet_float_errors(x):
            return x.std(axis=self.axes, keepdims=keepdims, ddof=correction)

    def backward(self, g):
        (x,) = self.inputs
        dof = count(x.shape, self.axes) - self.correction
        y = self.output.reshape(kept_shape(x.shape, self.axes))
        centered = x - mean(x, self.axes, True)
        zero = y.data == 0
        safe_y = where(zero, 1.0, y)
        scale = where(zero, 0.0, (1.0 / dof if dof > 0 else float('inf')) / safe_y)
        return (spread(g, x.shape, self.axes) * centered * scale,)


def correction_of(op, unbiased, correction, ddof):
    """The divisor's correction (n - correction) from PyTorch's correction= or unbiased=, or numpy's
    ddof=: 1 (PyTorch's default) when none is given; two that disagree are an error naming both."""
    given, asked = {}, {'unbiased': unbiased, 'correction': correction, 'ddof': ddof}
    if unbiased is not None:
        given['unbiased'] = 1 if argcheck.boolean(unbiased, op, 'unbiased') else 0
    if correction is not None:
        given['correction'] = argcheck.number(correction, op, 'correction')
    if ddof is not None:
        given['ddof'] = argcheck.number(ddof, op, 'ddof')
    if len(set(given.values())) > 1:
        names = ' and '.join(f"{name}={asked[name]!r}" for name in given)
        argcheck.fail(ValueError, op, f"{names} ask for different divisors (unbiased=True is correction=1, n - 1; "
                                      "numpy's ddof is PyTorch's correction): pass one of them")
    value = next(iter(given.values()), 1)
    return int(value) if value == int(value) else value


def variance(x, op, dim, unbiased, keepdim, correction, ddof, axis, keepdims):
    """x.var(...) and x.std(...): PyTorch's divisor n - 1 unless told otherwise (numpy divides by n)."""
    if isinstance(dim, bool):  # x.var(False): PyTorch's var(unbiased) form, which takes nothing else
        if unbiased is not None:
            argcheck.fail(TypeError, op, "unbiased given twice (as the first argument and by name)")
        if keepdim is not False or any(v is not None for v in (correction, ddof, axis, keepdims)):
            argcheck.fail(TypeError, op, f"{op}({dim}) is PyTorch's {op}(unbiased) form, over every element, which "
                                         "takes no other argument; for a dim pass an int (True is not dim 1)")
        dim, unbiased = None, dim
    dim, keepdim = args.dim_keepdim(op, dim, keepdim, axis, keepdims)
    correction = correction_of(op, unbiased, correction, ddof)
    fn = Var if op == 'var' else Std
    if x.dtype.kind != 'f':  # integers and booleans (constants: they never require grad): in float64, so
        # nothing overflows, returned in the default float (PyTorch refuses them)
        return fn.apply(x.to(dtype='float64'), axis=dim, keepdims=keepdim, correction=correction).to(
            dtype=promotion.floating_dtype(x.dtype))
    return promotion.widened(fn.apply, x, axis=dim, keepdims=keepdim, correction=correction)  # float16: in float32


class Max(Function):
    """y = amax(x, axis)       dL/dx = g where x equals the max, split evenly among ties:
    dL/dx_i = g * [x_i == y] / (number of i with x_i == y)

    amax, amin: a NaN in a row makes its max NaN, which no x_i equals: NaN everywhere (as torch.amax).
    max(), min() (nan_wins=True): a NaN max goes to the NaN entries, which share g (as torch's x.max()).
    """
    reduce = 'max'

    def forward(self, x, axis, keepdims, nan_wins=False):
        self.axes, keepdims = normalize_axis(axis, x.shape, keepdims)
        self.nan_wins = nan_wins
        empty = [a for a in self.axes if x.shape[a] == 0]
        if empty:  # as PyTorch: over every element a RuntimeError, over a named dim an IndexError
            raise (ShapeError if axis is None else IndexError)(
                f"the {self.reduce} over an empty axis (dim {empty[0]}) is undefined (there is no element to pick); "
                "reduce over non-empty dims only")
        y = getattr(x, self.reduce)(axis=self.axes, keepdims=True)
        return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, g):
        x = self.inputs[0].data
        xp = backend.array_module(x)
        y = self.output.data.reshape(kept_shape(x.shape, self.axes))
        winners = x == y
        if self.nan_wins:
            winners |= xp.isnan(x) & xp.isnan(y)
        with backend.quiet_float_errors(x):  # amax: a NaN row has no winner: its gradient is NaN, like its max
            share = (winners / winners.sum(axis=self.axes, keepdims=True)).astype(x.dtype)
        return (spread(g, x.shape, self.axes) * Tensor._wrap(share),)


class Min(Max):
    """y = amin(x, axis)       as Max, for the smallest entries"""
    reduce = 'min'


class LogSumExp(Function):
    """y = m + log(sum(exp(x - m))) over `axes`,  m = max(x) there (0 where that max is +-inf), so no
    exp overflows (x = 1e3) and a row of -inf gives -inf, not nan
        dL/dx = g * exp(x - y)      (the softmax of x over the axes)"""

    def forward(self, x, axes, keepdims):
        self.axes = axes
        xp = backend.array_module(x)
        kept = kept_shape(x.shape, axes)
        m = x.max(axis=axes, keepdims=True) if x.size else xp.zeros(kept, dtype=x.dtype)
        m = xp.where(xp.isfinite(m), m, 0)
        with backend.quiet_float_errors(x):  # log(0) = -inf for a row of -inf (or an empty one)
            y = m + xp.log(xp.exp(x - m).sum(axis=axes, keepdims=True))
        return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in axes])

    def backward(self, g):
        (x,) = self.inputs
        y = self.output.reshape(kept_shape(x.shape, self.axes))
        return (spread(g, x.shape, self.axes) * (x - y).exp(),)


def logsumexp(x, dim=None, keepdim=False):
    """log(sum(exp(x))) over dim (an int, a tuple, or None: every axis), computed stably; integers as float32."""
    x = promotion.floating(x)
    dim, keepdim = args.dim_keepdim('logsumexp', dim, keepdim)  # dim=() refused, as sum's
    if x.ndim == 0 and dim in (0, -1, (0,), (-1,)):  # as PyTorch: dim 0 or -1 of a 0-d tensor is the tensor
        dim = None
    axes, keepdim = normalize_axis(dim, x.shape, keepdim, 'logsumexp')
    return LogSumExp.apply(x, axes=axes, keepdims=keepdim)


class TakeAlong(Function):
    """y = x at `index` along `dim` (index: an integer array of x's shape with dim's size 1)
        dL/dx = g at that index, 0 elsewhere:  dL/dx_i = g * [i == index]

    max(x, dim) and min(x, dim) pick with it, so the gradient goes to the index they
    return only (PyTorch's rule), not shared between ties as amax's."""

    def forward(self, x, index, dim, keepdim):
        self.index, self.dim = index, dim
        y = backend.array_module(x).take_along_axis(x, index, axis=dim)
        return y if keepdim else y.reshape(x.shape[:dim] + x.shape[dim + 1:])

    def backward(self, g):
        x = self.inputs[0]
        xp = backend.array_module(x.data)
        positions = xp.arange(x.shape[self.dim]).reshape((-1,) + (1,) * (x.ndim - self.dim - 1))
        picked = (positions == self.index).astype(x.dtype)
        return (spread(g, x.shape, (self.dim,)) * Tensor._wrap(picked),)


max_result = namedtuple('max', ('values', 'indices'))  # as torch.return_types.max: .values, .indices, or unpack
min_result = namedtuple('min', ('values', 'indices'))


def extreme(x, op, dim, keepdim, axis, keepdims):
    """x.max() / x.min(): with no dim the largest (smallest) element, a tensor whose gradient ties share,
    and NaNs too when the result is NaN (PyTorch's rule); with a dim the named tuple (values, indices), the
    gradient going to the index only (the first NaN's, if any)."""
    dim, keepdim = args.dim_keepdim(op, dim, keepdim, axis, keepdims)
    if dim is None:
        if x.numel() == 0:
            raise ShapeError(f"{op}: a tensor of shape {x.shape} has no element to pick; pass a dim, "
                             "or reduce a non-empty tensor")
        return (Max if op == 'max' else Min).apply(x, axis=None, keepdims=keepdim, nan_wins=True)
    if isinstance(dim, (tuple, list)):
        argcheck.fail(TypeError, op, f"dim={dim!r}: {op} with a dim takes one dim and returns (values, indices); "
                                     f"for the {op} over several dims use a{op}(dim={tuple(dim)!r})")
    indices = arg_extreme(x, 'arg' + op, dim, True, op)
    if x.ndim == 0:  # as PyTorch: dim 0 or -1 of a 0-d tensor, which is its own max at index 0
        return (max_result if op == 'max' else min_result)(x.reshape(()), indices)
    dim = args.axis(dim, x.shape, op)
    values = TakeAlong.apply(x, index=indices.data, dim=dim, keepdim=keepdim)
    if not keepdim:
        indices = Tensor._wrap(indices.data.reshape(values.shape))
    return (max_result if op == 'max' else min_result)(values, indices)


def arg_extreme(x, op, dim, keepdim, caller=None):
    """The index of the largest (argmax) or smallest (argmin) entry along dim, or of the flattened
    tensor (dim None); the first one among ties, and the first nan, as PyTorch.  No gradient.
    `caller` names the public op in errors (max(dim) picks with argmax)."""
    caller = caller or op
    if x.dtype == bool and caller == op:  # (max(dim) of a bool tensor picks with it, as PyTorch's does)
        raise DTypeError(f"{op} of a bool tensor is not defined, as in PyTorch; convert it first (x.long())")
    if x.ndim == 0:
        if dim is not None:
            args.axes(dim, x.shape, caller)  # only 0 or -1
        return Tensor._wrap(backend.array_module(x.data).zeros((), dtype='int64'))
    if dim is None and x.numel() == 0:  # (IndexErrors, as PyTorch's)
        raise IndexError(f"{caller}: a tensor of shape {x.shape} has no entry to pick; pass a non-empty tensor")
    if dim is not None:
        dim = args.axis(dim, x.shape, caller)
        if x.shape[dim] == 0:
            raise IndexError(f"{caller}: dim {dim} of shape {x.shape} is empty: there is no entry to pick; "
                             "pick along a non-empty dim")
    index = backend.as_array(getattr(x.data, op)(axis=dim, keepdims=keepdim))
    return Tensor._wrap(index.astype('int64', copy=False))


def sum_to(x, shape):
    """x summed down to `shape`: a shape that broadcasts to x's (what broadcasting made x from)."""
    shape = args.sizes(shape, 'sum_to')
    if len(shape) > x.ndim or any(n != 1 and n != m for n, m in zip(shape[::-1], x.shape[::-1])):
        raise ShapeError(f"sum_to: shape {shape} does not broadcast to the tensor's shape {x.shape}")
    return (FusedSumTo if fused_switch.enabled else SumTo).apply(x, shape=shape)


class SumTo(Function):
    """y = x summed down to `shape` (undoes broadcasting)      dL/dx = g broadcast to x's shape

    The backward loop calls this when an op's gradient has the broadcast shape.  As PyTorch's
    sum_to_size: with nothing to add, x as it is (its dtype kept); integers and booleans add up
    in int64, as in Sum.
    """

    def forward(self, x, shape):
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
        if not axes:
            return x.reshape(shape)
        return x.sum(axis=axes, keepdims=True, dtype=None if x.dtype.kind == 'f' else 'int64').reshape(shape)

    def backward(self, g):
        return (g.broadcast_to(self.inputs[0].shape),)


class Norm(Function):
    """y = |x|_p over `axes`: (sum |x_i|^p)^(1/p); p = inf: max |x_i|, -inf: min |x_i|, 0: count of x_i != 0

        dL/dx = g * x / y                           p = 2 (g * x / |x|)
        dL/dx = g * sign(x)                         p = 1
        dL/dx = g * sign(x) [|x| = y] / #ties       p = +-inf (ties share g, as in max; none at y = nan)
        dL/dx = g * sign(x) |x|^(p-1) / y^(p-1)     other p
        dL/dx = 0                                   p = 0 (a count), and where y = 0 (as PyTorch)
    """

    def forward(self, x, p, axes, keepdims):
        self.p, self.axes = p, axes
        if p in (math.inf, -math.inf) and any(x.shape[a] == 0 for a in axes):
            raise RuntimeError(f"the {p} norm over an empty axis is undefined (max and min have no identity), "
                               "as in PyTorch; take it over non-empty dims only")
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
        sign = Tensor._wrap(backend.sign(x.data))  # 0 at nan: a nan entry gets no gradient, as in PyTorch
        if p == 0:
            return (Tensor._wrap(xp.zeros_like(x.data)),)
        if p == 1:
            return (g * sign,)
        if p in (math.inf, -math.inf):
            winners = abs(x.data) == y.data  # none where y is nan
            ties = xp.maximum(winners.sum(axis=self.axes, keepdims=True), 1)
            return (g * sign * Tensor._wrap((winners / ties).astype(x.dtype)),)
        zero_norm = y.data == 0  # every x_i is 0 there (or, for p < 0, one is): the gradient is 0
        safe_y = where(zero_norm, 1.0, y)
        if p == 2:
            return (where(zero_norm, 0.0, g * x / safe_y),)
        zero_x = x.data == 0  # |x|^(p-1) is inf at 0 when p < 1: PyTorch takes 0 there
        scaled = where(zero_x, 0.0, sign * where(zero_x, 1.0, x.abs()) ** (p - 1))
        return (scaled * where(zero_norm, 0.0, g / safe_y ** (p - 1)),)


MATRIX_ORDERS = (None, 'fro', 1, -1, math.inf, -math.inf)


def vector_norm(x, p='fro', dim=None, keepdim=False):
    """PyTorch's x.norm(p, dim, keepdim): (sum |x_i|^p)^(1/p) over the elements of dim (None: all),
    whatever their shape ('fro' is 2; inf, -inf, 0 as in Norm).  numpy's x.norm(1) of a matrix
    would be its largest column sum: that is norm(x, ord=1), numpy.linalg.norm's meaning."""
    if not backend.float_dtype(x.dtype):
        raise DTypeError(f"norm: needs a floating-point tensor, not {x.dtype} (use x.float().norm())")
    if promotion.accumulation_dtype(x.dtype) != x.dtype:  # float16: in float32, as PyTorch
        return promotion.widened(vector_norm, x, p, dim, keepdim)
    if isinstance(p, str) and p != 'fro':
        raise ValueError(f"norm: p={p!r} is not supported: use 'fro' or a number (2, 1, inf, -inf, 0, ...); "
                         "the nuclear norm ('nuc') needs singular values, which microtensor does not compute")
    p = 2.0 if p in ('fro', None) else argcheck.number(p, 'norm', 'p', allow_inf=True)
    return Norm.apply(x, p=p, axes=args.axes(dim, x.shape, 'norm'), keepdims=keepdim)


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
        raise DTypeError(f"norm: needs a floating-point tensor, not {x.dtype} (use x.float().norm())")
    if promotion.accumulation_dtype(x.dtype) != x.dtype:  # float16: in float32, as PyTorch
        return promotion.widened(norm, x, ord, axis, keepdims)
    if axis is None:
        if ord is None:
            return Norm.apply(x, p=2, axes=tuple(range(x.ndim)), keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ShapeError(f"norm: ord={ord!r} of a tensor of shape {x.shape} is ambiguous; "
                             "pass axis= (an int: vector norms, a pair: matrix norms), or ord=None "
                             "for the 2-norm of all elements")
        axis = tuple(range(x.ndim))
    keepdims = argcheck.boolean(keepdims, 'norm', 'keepdims')
    # in the given order: a matrix norm's rows come first
    axes = tuple(args.axis(a, x.shape, 'norm') for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes) or len(axes) not in (1, 2):
        raise ShapeError(f"norm: axis={axis!r} must be one axis (vector norms) or two different "
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
    y = sums.amax(dim=picked, keepdim=True) if ord > 0 else sums.amin(dim=picked, keepdim=True)
    return y if keepdims else y.reshape([n for i, n in enumerate(x.shape) if i not in axes])


from ..fused.reduce import FusedSumTo  # noqa: E402  (the fused layer builds on SumTo above)


class Prod(Function):
    """y = prod(x, axis)          dL/dx_i = g * prod_{k != i} x_k   (the product of the others)

    The product of the others is (the product of those before x_i) * (the product of those after),
    two cumprods that never divide by x_i, so it is exact where x has zeros and differentiable again."""

    def forward(self, x, axis, keepdims):
        self.axis = axis
        return backend.as_array(x.prod(axis=axis, keepdims=keepdims))

    def backward(self, g):
        from .rearrange import flip
        from .scan import cumprod
        from .shape import concatenate
        (x,) = self.inputs
        last = x.swapaxes(self.axis, -1)
        one = Tensor._wrap(backend.array_module(x.data).ones(last.shape[:-1] + (1,), dtype=last.dtype))  # (not 0 * x: nan at inf)
        before = concatenate([one, cumprod(last, -1)[..., :-1]], -1)
        after = flip(concatenate([one, cumprod(flip(last, (-1,)), -1)[..., :-1]], -1), (-1,))
        return ((spread(g, x.shape, (self.axis,)).swapaxes(self.axis, -1) * before * after).swapaxes(self.axis, -1),)


def prod(x, dim=None, keepdim=False, dtype=None):
    """The product over dim (None: of all elements), as torch.prod: integers and bools multiply in int64."""
    from ..convert import tensor_arg
    x = tensor_arg(x, 'prod')
    if dtype is not None:
        x = x.to(dtype=dtype)
    if x.dtype.kind in 'biu':
        x = x.to(dtype='int64')
    if dim is None:
        y = Prod.apply(x.reshape(-1) if x.ndim else x.reshape(1), axis=0, keepdims=False)
        return y.reshape((1,) * x.ndim) if argcheck.boolean(keepdim, 'prod', 'keepdim') else y
    if isinstance(dim, (tuple, list)):
        argcheck.fail(TypeError, 'prod', f"dim={dim!r}: prod takes one dim, as PyTorch's; reduce one dim at a time")
    axis = args.axis(dim, x.shape if x.ndim else (1,), 'prod')
    if x.ndim == 0:
        return x.clone()
    return Prod.apply(x, axis=axis, keepdims=argcheck.boolean(keepdim, 'prod', 'keepdim'))


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, as torch.std_mean (std with var's correction: n - 1 unless told otherwise)."""
    return (x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim))


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim, as torch.var_mean."""
    return (x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim))


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """x / max(|x|_p, eps) along dim, as torch.nn.functional.normalize: unit vectors (the eps keeps a zero
    vector at zero instead of nan)."""
    from ..convert import tensor_arg
    x = tensor_arg(input, 'normalize', 'input')
    eps = argcheck.number(eps, 'normalize', 'eps', min=0)
    return x / vector_norm(x, p, dim, keepdim=True).clip(min=eps)
