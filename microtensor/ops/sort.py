"""Sorting: sort, argsort, kthvalue (topk: ops/gather.py).

The order comes from numpy's stable sort (no gradient: an order is piecewise constant); the values
are gather(x, dim, indices), so each entry's gradient goes back to the place it came from.  nan
counts as the largest, as in PyTorch: last ascending, first descending.  Ties keep their order in x
both ways (a descending sort is the ascending sort of the reversed row, reversed).
"""
from collections import namedtuple

from .. import argcheck, backend
from ..argcheck import DTypeError, ShapeError
from ..convert import tensor_arg
from ..tensor import Tensor
from . import args
from .gather import gather

sort_result = namedtuple('sort', ('values', 'indices'))          # as torch.return_types.sort
kthvalue_result = namedtuple('kthvalue', ('values', 'indices'))


def _order(x, dim, descending, op):
    """The indices that sort x along dim (int64), ties in their order in x; x has at least one dim."""
    xp = backend.array_module(x.data)
    if not argcheck.boolean(descending, op, 'descending'):
        return xp.argsort(x.data, axis=dim, kind='stable').astype('int64')
    n = x.shape[dim]
    reversed_order = xp.argsort(xp.flip(x.data, axis=dim), axis=dim, kind='stable')
    return (n - 1 - xp.flip(reversed_order, axis=dim)).astype('int64')


def _checked(x, dim, op):
    """(x as at least 1-d, dim as a non-negative axis); a bool x is refused where PyTorch refuses it."""
    x = tensor_arg(x, op)
    if x.ndim == 0:  # a 0-d tensor is a row of one, as in PyTorch
        args.axes(dim, x.shape, op)
        return x.reshape(1), 0
    return x, args.axis(dim, x.shape, op)


def sort(x, dim=-1, descending=False, stable=False):
    """(values, indices): x sorted along dim, ascending (descending=True: largest first).  The sort is
    always stable here (stable=False allows any order of ties; this one keeps them in order)."""
    argcheck.boolean(stable, 'sort', 'stable')
    x0 = tensor_arg(x, 'sort')
    x, dim = _checked(x0, dim, 'sort')
    indices = Tensor._wrap(_order(x, dim, descending, 'sort'))
    values = gather(x, dim, indices)
    if x0.ndim == 0:
        return sort_result(values.reshape(()), indices.reshape(()))
    return sort_result(values, indices)


def argsort(x, dim=-1, descending=False, stable=False):
    """The indices that sort x along dim (sort(...).indices), int64, no gradient."""
    argcheck.boolean(stable, 'argsort', 'stable')
    x0 = tensor_arg(x, 'argsort')
    x, dim = _checked(x0, dim, 'argsort')
    indices = Tensor._wrap(_order(x, dim, descending, 'argsort'))
    return indices.reshape(()) if x0.ndim == 0 else indices


def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices): the k-th smallest entry along dim (k = 1: the smallest), and where it is."""
    x0 = tensor_arg(x, 'kthvalue')
    if x0.dtype == bool:
        raise DTypeError("kthvalue of a bool tensor is not defined, as in PyTorch; convert it first (x.long())")
    x, dim = _checked(x0, dim, 'kthvalue')
    k = argcheck.integer(k, 'kthvalue', 'k')
    if not 1 <= k <= x.shape[dim]:
        raise ShapeError(f"kthvalue: k={k} is not between 1 and the {x.shape[dim]} entries along dim {dim} of "
                         f"shape {x.shape}")
    xp = backend.array_module(x.data)
    order = _order(x, dim, False, 'kthvalue')
    indices = Tensor._wrap(xp.take(order, xp.arange(k - 1, k), axis=dim))
    values = gather(x, dim, indices)
    argcheck.boolean(keepdim, 'kthvalue', 'keepdim')
    if x0.ndim == 0 or not keepdim:
        shape = () if x0.ndim == 0 else values.shape[:dim] + values.shape[dim + 1:]
        values, indices = values.reshape(shape), indices.reshape(shape)
    return kthvalue_result(values, indices)
