"""Picking and placing along one axis by an index tensor: gather, scatter, scatter_add, scatter_reduce,
one_hot, and topk (the indices of the k largest, then a gather).

For dim = 1 of a 3-d x (PyTorch's meaning; index has x's number of axes):

    gather        y[i][j][k] = x[i][index[i][j][k]][k]
    scatter       y = x, then y[i][index[i][j][k]][k] = src[i][j][k]
    scatter_add   y = x, then y[i][index[i][j][k]][k] += src[i][j][k]
    scatter_reduce  each y entry that index hits: the sum, mean, amax or amin of the src values sent
                  there (and of x's entry, include_self=True); the others stay x's

src may be a Python number instead, written (or added) everywhere index points: it must fit x's
dtype, as fill_'s value must (300 into uint8 and 1e5 into float16 are refused; -1 into uint8 is 255).

Each is numpy indexing with an index array on the chosen axis and the positions themselves
(0, 1, 2, ...) on the others, so each reuses an op of ops/shape.py, backward and all:
gather is GetItem, scatter is SetItem on a copy of x, scatter_add adds a ScatterAdd.
"""
from collections import namedtuple

from .. import argcheck, backend, promotion
from ..argcheck import DTypeError, ShapeError
from ..convert import param_array, tensor_arg
from ..tensor import Tensor
from . import args
from ..autograd import Function
from .select import where
from .shape import GetItem, ScatterAdd, SetItem


def _positions(index, dim, x, op):
    """The numpy index that reads x[..., index[...], ...] along dim at every position of index:
    a checked, private index array on dim and aranges (shaped to broadcast) on the other axes."""
    index = param_array(index, x, op, 'index')
    if index.dtype.kind not in 'iu':
        raise DTypeError(f"{op}: the index must hold integers, not {index.dtype}")
    if index.ndim != x.ndim:
        raise ShapeError(f"{op}: the index has shape {index.shape} but needs as many axes as x {x.shape}, "
                         "as in PyTorch; add or remove axes of size 1 (index[:, None], index.squeeze(0))")
    dim = args.axis(dim, x.shape if x.ndim else (1,), op)  # (as PyTorch: dim 0 or -1 of a 0-d tensor)
    for axis, (m, n) in enumerate(zip(index.shape, x.shape)):
        if axis != dim and m > n:
            raise ShapeError(f"{op}: the index {index.shape} is larger than x {x.shape} on axis {axis} "
                             "(it may be larger only on dim)")
    n = x.shape[dim] if x.ndim else 1
    if index.size and bool(((index < 0) | (index >= n)).any()):  # one reduction, one host sync
        bad = int(index[(index < 0) | (index >= n)].reshape(-1)[0])
        raise IndexError(f"{op}: index {bad} is out of bounds for dim {dim} of size {n} (x of shape {x.shape})")
    if x.ndim == 0:
        return ()
    xp = backend.array_module(index)
    return tuple(index.astype(backend.INDEX) if axis == dim else
                 xp.arange(m, dtype=backend.INDEX).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
                 for axis, m in enumerate(index.shape))


topk_result = namedtuple('topk', ('values', 'indices'))  # as torch.return_types.topk


def topk(x, k, dim=-1, largest=True, sorted=True):
    """PyTorch's topk: the k largest entries along dim (the k smallest with largest=False), largest
    first, and their indices, as the named tuple (values, indices).  nan counts as the largest, as in
    PyTorch.  The indices come from a stable sort (no gradient); the values are gather(x, dim, indices),
    so each picked entry gets its own gradient and the others 0.  (sorted=False is allowed, as PyTorch
    allows it; the values come sorted anyway.)"""
    x = tensor_arg(x, 'topk')
    if x.dtype == bool:
        raise DTypeError("topk of a bool tensor is not defined, as in PyTorch; convert it first (x.long())")
    k = argcheck.integer(k, 'topk', 'k', min=0)
    argcheck.boolean(sorted, 'topk', 'sorted')
    if x.ndim == 0:  # a 0-d tensor is a row of one, as in PyTorch
        args.axes(dim, x.shape, 'topk')
        values, indices = topk(x.reshape(1), k, 0, largest)
        return topk_result(values.reshape(()) if k else values, indices.reshape(()) if k else indices)
    dim = args.axis(dim, x.shape, 'topk')
    if k > x.shape[dim]:
        raise ShapeError(f"topk: k={k} is more than the {x.shape[dim]} entries along dim {dim} of shape {x.shape}")
    xp = backend.array_module(x.data)
    order = xp.argsort(x.data, axis=dim, kind='stable')  # ascending, nan last
    if argcheck.boolean(largest, 'topk', 'largest'):
        order = xp.flip(order, axis=dim)
    indices = Tensor._wrap(xp.take(order, xp.arange(k), axis=dim).astype('int64'))
    return topk_result(gather(x, dim, indices), indices)


def gather(x, dim, index):
    """y[..., j, ...] = x[..., index[..., j, ...], ...] along dim: y has index's shape."""
    x = tensor_arg(x, 'gather')
    return GetItem.apply(x, index=_positions(index, dim, x, 'gather'))


def _source(src, index_shape, x, op):
    """src cut to index's shape (PyTorch reads only that corner of it), or a number that fits x's
    dtype (promotion.fit), as a Tensor of x's dtype on x's device."""
    if isinstance(src, Tensor):
        backend.check_on_device(src.data, x.device, op, 'src')
        if src.ndim != len(index_shape) or any(m > n for m, n in zip(index_shape, src.shape)):
            raise ShapeError(f"{op}: src of shape {src.shape} must be at least as large as the index "
                             f"{index_shape} on every axis, with as many axes")
        if src.dtype != x.dtype:
            raise DTypeError(f"{op}: src is {src.dtype} but x is {x.dtype}; convert one (as in PyTorch)")
        return src[tuple(slice(0, m) for m in index_shape)]
    value = promotion.fit(op, argcheck.real(src, op, 'src'), x.dtype)
    return Tensor._wrap(backend.module_for(x.device).asarray(value, dtype=x.dtype))


def scatter(x, dim, index, src):
    """A copy of x with src written at index along dim (src a tensor or a number); where the
    index repeats, one of the writes wins, and only it gets a gradient."""
    x = tensor_arg(x, 'scatter')
    positions = _positions(index, dim, x, 'scatter')
    return Scatter.apply(x, _source(src, _shape(index), x, 'scatter'), index=positions)


def scatter_add(x, dim, index, src):
    """x with src added at index along dim (repeated indices add up)."""
    x = tensor_arg(x, 'scatter_add')
    positions = _positions(index, dim, x, 'scatter_add')
    src = _source(src, _shape(index), x, 'scatter_add')
    return x + ScatterAdd.apply(src.broadcast_to(_shape(index)), index=positions, shape=x.shape)


def _shape(index):
    return tuple(index.shape) if hasattr(index, 'shape') else backend.asarray(index, device='cpu').shape


class Scatter(SetItem):
    """y = copy of x, then y[index] = value      dL/dx = g with zeros at index,  dL/dvalue = g[index]
    (SetItem's op and backward, on a copy of x instead of x's memory)"""

    def forward(self, x, value, index):
        return super().forward(x.copy(), value, index)


def one_hot(ids, num_classes=-1):
    """ids (...) -> (..., num_classes) int64 with a 1 at each id, as torch.nn.functional.one_hot;
    num_classes=-1 takes max(ids) + 1.  No gradient (the ids are integers)."""
    ids = tensor_arg(ids, 'one_hot', 'ids')
    if ids.dtype.kind not in 'iu':
        raise DTypeError(f"one_hot: ids must be integers, not {ids.dtype}")
    num_classes = argcheck.integer(num_classes, 'one_hot', 'num_classes', min=-1)
    xp = backend.array_module(ids.data)
    if num_classes == -1:
        if not ids.numel():
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor of ids; pass num_classes=")
        num_classes = int(ids.data.max()) + 1
    if ids.numel() and bool(((ids.data < 0) | (ids.data >= num_classes)).any()):
        raise IndexError(f"one_hot: ids must lie in [0, {num_classes}), got {int(ids.data.min())} to "
                         f"{int(ids.data.max())}")
    return Tensor._wrap((ids.data[..., None] == xp.arange(num_classes)).astype('int64'))


class ScatterReduce(Function):
    """y = x, then at each position index hits: reduce(x's entry if include_self, and every src value sent there)
        sum    dL/dx = g (0 where hit, without include_self),  dL/dsrc = g[index]
        mean   the same, divided by the count of values reduced there
        amax, amin   g shared evenly by the values equal to the result (x's entry and src's), as in PyTorch"""

    def forward(self, x, src, index, reduce, include_self):
        self.index, self.reduce, self.include_self = index, reduce, include_self
        xp = backend.array_module(x)
        hit = xp.zeros(x.shape, dtype=bool)
        hit[index] = True
        self.hit = hit
        out = x.copy()
        if not include_self:  # the hit entries start from the reduction's identity instead of x's value
            identity = {'sum': 0, 'mean': 0, 'amax': _lowest(xp, x.dtype), 'amin': _highest(xp, x.dtype)}[reduce]
            out[hit] = identity
        ufunc = {'sum': xp.add, 'mean': xp.add, 'amax': xp.maximum, 'amin': xp.minimum}[reduce]
        ufunc.at(out, index, src)
        if reduce == 'mean':
            count = xp.zeros(x.shape, dtype=x.dtype)
            xp.add.at(count, index, 1)
            count += include_self
            self.count = xp.where(hit, count, 1)
            out = out / self.count if x.dtype.kind == 'f' else xp.floor_divide(out, self.count.astype(out.dtype))
        return out

    def backward(self, g):
        x, src = self.inputs
        hit = Tensor._wrap(self.hit)
        if self.reduce in ('sum', 'mean'):
            g = g / Tensor._wrap(self.count) if self.reduce == 'mean' else g
            gx = g if self.include_self else where(hit, 0.0, g)
            return gx, GetItem.apply(g, index=self.index)
        y = self.output
        at_x = ~hit | (x == y) if self.include_self else ~hit              # x's entry is (one of) the result
        at_src = src == GetItem.apply(y, index=self.index)                 # a src value that is the result
        ties = at_x.to(dtype=g.dtype) + ScatterAdd.apply(at_src.to(dtype=g.dtype), index=self.index, shape=x.shape)
        share = g / where(ties > 0, ties, 1.0)
        return where(at_x, share, 0.0), where(at_src, GetItem.apply(share, index=self.index), 0.0)


def _lowest(xp, dtype):
    return -xp.inf if dtype.kind == 'f' else False if dtype.kind == 'b' else xp.iinfo(dtype).min


def _highest(xp, dtype):
    return xp.inf if dtype.kind == 'f' else True if dtype.kind == 'b' else xp.iinfo(dtype).max


def scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """x with the src values sent by index along dim reduced into it, as torch.scatter_reduce: reduce is
    'sum', 'mean', 'amax' or 'amin' ('prod' is not offered: its gradient with zeros is not written here);
    include_self=False leaves x's own value out where index hits."""
    x = tensor_arg(x, 'scatter_reduce')
    if reduce not in ('sum', 'mean', 'amax', 'amin'):
        raise ValueError(f"scatter_reduce: reduce must be 'sum', 'mean', 'amax' or 'amin', not {reduce!r}"
                         + (" (prod is not offered)" if reduce == 'prod' else ''))
    if x.dtype == bool and reduce == 'mean':
        raise DTypeError("scatter_reduce: the mean of a bool tensor is not defined, as in PyTorch; use x.float()")
    positions = _positions(index, dim, x, 'scatter_reduce')
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce: src must be a Tensor, not {argcheck.describe(src)}")
    src = _source(src, _shape(index), x, 'scatter_reduce')
    return ScatterReduce.apply(x, src, index=positions, reduce=reduce,
                               include_self=argcheck.boolean(include_self, 'scatter_reduce', 'include_self'))
