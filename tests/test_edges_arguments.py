"""Every public function and Tensor method, given generated arguments of every class a
careless caller might pass: the outcome is either the value numpy gives for
the same call, or a ValueError / TypeError / IndexError (RuntimeError for devices and
in-place misuse, as in PyTorch) whose message names the function.  Never an internal
exception (AttributeError, ZeroDivisionError, KeyError, RecursionError, "tuple index out
of range", "'float' object is not iterable"), and never a silent wrong value.

Each SPEC is one function: how to call it with a tensor x (or none) and its arguments,
which pool each argument is drawn from (valid values, numpy integers, and bad ones), and
the numpy reference its result must equal when it returns one.
"""
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt

# ---------------------------------------------------------------------------- the argument pools
# Pools hold factories where a value is mutable (arrays, tensors), so each draw is fresh.
TENSORS = {
    '0-d': lambda: mt.tensor(np.float64(1.5)),
    'empty': lambda: mt.tensor(np.zeros((0, 3))),
    'vector': lambda: mt.tensor(np.array([0.5, -1.0, 2.0])),
    'matrix': lambda: mt.tensor(np.arange(6.0).reshape(2, 3) - 2.5),
    '3-d': lambda: mt.tensor(np.arange(12.0).reshape(2, 1, 6) / 4 - 1),
    'int': lambda: mt.tensor(np.array([[1, 0, 2], [2, 1, 0]])),
    'bool': lambda: mt.tensor(np.array([True, False, True])),
    'requires grad': lambda: mt.tensor(np.array([[0.5, -1.0, 2.0]]), requires_grad=True),
}


class Fresh:
    """A pool entry made anew for each draw."""

    def __init__(self, make, label):
        self.make, self.label = make, label

    def __repr__(self):
        return self.label


def fresh(label, make):
    return Fresh(make, label)


def _draw(value):
    return value.make() if isinstance(value, Fresh) else value


def pool(*values):
    return st.sampled_from(values).map(_draw)


OBJECTS = [None, 'a', '1.5', b'1', {}, set(), object(), 1j, fresh('object array', lambda: np.array([None, 1])),
           fresh('str array', lambda: np.array(['a', 'b'])), fresh('ragged list', lambda: [[1.0], [2.0, 3.0]])]
NUMBERS = [0, 1, -1, 2, 0.5, -2.5, np.float32(0.5), np.int64(2), True, float('nan'), float('inf'), -float('inf'),
           10 ** 30]
AXES = [None, 0, 1, -1, 2, -3, 7, np.int64(1), np.int32(-1), np.uint8(0), 1.0, '0', True, np.True_, (0,), (0, 1),
        (1, -1), (0, 0), [0], (0, 9), ((0,),), fresh('axis array', lambda: np.array(1)), slice(None)]
FLAGS = [True, False, np.True_, np.False_, 0, 1, 'yes', None, 1.5]
SHAPES = [(), 6, -1, (2, 3), (3, 2), (6, 1), (-1,), (-2,), (2, -1), (-1, -1), 0, (0,), (0, -1), 2.0, '6', None,
          [2, 3], (np.int64(2), 3), (2 ** 40,), True, (1, 1, 3), (3,), (1,), (2, 1, 3), (2, 1, 6), (2, 2, 6)]
INDICES = [0, -1, 1, 5, -9, slice(1, 3), slice(None, None, -1), slice(None, None, 0), slice('a'), (0, 0), (0, 0, 0, 0),
           fresh('int array', lambda: np.array([0, 1, 0])), fresh('array out of range', lambda: np.array([0, 7])),
           fresh('negative array', lambda: np.array([-1, -2])), [0, 0], [], [True, False],
           fresh('mask (3,)', lambda: np.array([True, False, True])), fresh('mask (2, 3)', lambda: np.ones((2, 3), bool)),
           1.5, 'a', None, Ellipsis, (Ellipsis, 0), (Ellipsis, Ellipsis), (None, 0), (slice(None), [2, 0]),
           fresh('int tensor', lambda: mt.tensor([1, 0])), fresh('bool tensor', lambda: mt.tensor([True, False, False])),
           fresh('float tensor', lambda: mt.tensor([1.0])), fresh('2-d ids', lambda: np.array([[0, 1], [1, 0]])),
           np.int64(0), True, [[0, 1], [1, 0]], [0, 'a'], {}, [None]]
OPERANDS = NUMBERS + OBJECTS + [
    fresh('array (3,)', lambda: np.array([1.0, 2.0, 3.0])), fresh('array (2, 1)', lambda: np.array([[1.0], [2.0]])),
    fresh('int array', lambda: np.array([1, 2, 3])), fresh('list', lambda: [1.0, 2.0, 3.0]), [[1, 2, 3]],
    fresh('tensor (3,)', lambda: mt.tensor([1.0, -2.0, 3.0])), fresh('tensor (4,)', lambda: mt.tensor([1.0, 2, 3, 4])),
    fresh('0-d tensor', lambda: mt.tensor(2.0)), fresh('bool tensor', lambda: mt.tensor([True, False, True]))]
NON_TENSORS = [v for v in OPERANDS if 'tensor' not in repr(v)]
DEVICES = ['cpu', 'cuda', 'cuda:0', 'tpu', None, 0, 'cpu:0']
DTYPES = [None, 'float32', 'float64', 'int64', 'bool', mt.float64, float, int, 'float65', 'object', object, str,
          complex, 'U3', 5]
SIZES = [0, 1, 3, -1, 2.0, '3', None, np.int64(2), True, (2,), [2, 3], 10 ** 20]


# ---------------------------------------------------------------------------- the specs
@dataclass(repr=False)
class Spec:
    name: str                          # the function: error messages must name it
    call: Callable                     # call(x, *args) (x omitted when tensors is None)
    args: tuple = ()                   # one pool (a list of values) per argument
    ref: Optional[Callable] = None     # ref(a, *args) -> the numpy value the call must return
    tensors: Optional[tuple] = tuple(TENSORS)  # which tensors x is drawn from; None: no x
    aliases: tuple = ()                # other names a message may use (the op doing the work)
    rtol: float = 1e-6
    compare: Callable = field(default=None)  # compare(out, expected) instead of the default
    raw: bool = False                  # ref gets the arguments as given (Tensors too), not as numpy arrays

    def __repr__(self):
        return f"<Spec {self.name}>"


def _softmax(a, axis=-1):
    if a.size == 0:  # no row to normalise: empty, as PyTorch (numpy's max of nothing would refuse)
        return a.copy()
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(a, axis=-1):
    if a.size == 0:
        return a.copy()
    s = a - a.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _setitem(a, index, value):
    a = a.copy()
    a[index] = np.asarray(value) if isinstance(value, list) else value  # a list value becomes an array first, as in PyTorch
    return a


def _unary(name, np_fn):
    return Spec(name, lambda x: getattr(x, name)(), (), lambda a: np_fn(a))


def _floats(a):
    """An array as PyTorch's float-only functions take it: integers and bools as float32 (exp(ids))."""
    return a if a.dtype.kind == 'f' else a.astype(np.float32)


def _on_floats(f):
    """numpy's f of an array as PyTorch computes it (see _floats)."""
    return lambda a: f(_floats(a))


def _functional(name, np_fn):
    return Spec(f"mt.{name}", lambda x: getattr(mt, name)(x), (), lambda a: np_fn(a), aliases=(name,))


def _binary(name, op, np_op, alias):
    return [Spec(name, lambda x, b: op(x, b), (OPERANDS,), lambda a, b: np_op(a, b), aliases=(alias,)),
            Spec(f"r{name}", lambda x, b: op(b, x), (OPERANDS,), lambda a, b: np_op(b, a), aliases=(alias,))]


def _matmul_ref(a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        raise ValueError('scalar')
    return np.matmul(a, b)


def _cross_entropy_ref(a, t, ignore_index=None):
    t = np.asarray(t)
    if a.ndim == 0 or t.shape != a.shape[:-1] or t.dtype.kind not in 'iu':
        raise ValueError('bad')
    logp = _log_softmax(a)
    counted = t != ignore_index if ignore_index is not None else np.ones(t.shape, bool)
    if (counted & ((t < 0) | (t >= a.shape[-1]))).any():
        raise IndexError('bad')
    picked = np.take_along_axis(logp, np.where(counted, t, 0)[..., None], -1)[..., 0]
    with np.errstate(invalid='ignore', divide='ignore'):
        return -(picked * counted).sum() / counted.sum()


def _split_ref(a, sections, axis=0):
    """PyTorch's split: an int is the size of each chunk, a list the sizes of the pieces."""
    size = a.shape[axis]
    if isinstance(sections, (list, tuple)):
        if sum(sections) != size or min(sections, default=0) < 0:
            raise ValueError('the sizes do not add up to the axis')
        return np.split(a, np.cumsum(sections)[:-1].tolist(), axis=axis)
    if sections <= 0 and size:
        raise ValueError('no chunk size')
    return np.split(a, list(range(sections, size, sections)), axis=axis) if size else [a]


def _reduced(a, axis):
    """numpy's axis for PyTorch's dim: a 0-d tensor takes dim 0 or -1 (and reduces nothing); () is refused."""
    if isinstance(axis, (tuple, list)) and not axis:
        raise ValueError('dim=() means one thing in numpy and another in PyTorch')
    one = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis  # (0,) too
    whole = isinstance(one, (int, np.integer)) and not isinstance(one, (bool, np.bool_)) and int(one) in (0, -1)
    return None if a.ndim == 0 and whole else _ax(axis)


def _arg_ref(a, axis, f):
    """argmax / argmin as PyTorch: a 0-d tensor's index is 0; an empty tensor along a non-empty dim gives no index."""
    if a.ndim == 0 and (axis is None or _reduced(a, axis) is None):
        return np.int64(0)
    if axis is not None and a.size == 0 and a.shape[axis] != 0:
        return np.zeros(np.delete(np.array(a.shape), axis), dtype=np.int64)
    return f(a, axis)


def _squeeze_ref(a, axis):
    """PyTorch's squeeze: of the named dims, only those of size 1 go; another size is left as it is."""
    if axis is None:
        return np.squeeze(a)
    if a.ndim == 0:
        return a.copy() if _reduced(a, axis) is None else 1 / 0
    ones = tuple(i for i in (axis if isinstance(axis, (tuple, list)) else (axis,)) if a.shape[i] == 1)
    return np.squeeze(a, ones)


def _keep(keepdims):
    """keepdims=None is numpy's keepdims not given (the engine's default, False): numpy itself refuses None."""
    return False if keepdims is None else _flag(keepdims)


def _values(out):
    """max(dim) / min(dim) return (values, indices): the values."""
    return out.values if isinstance(out, tuple) else out


def _layer_norm_ref(a, gamma, eps):
    """gamma as both weight and bias; None: neither (PyTorch's F.layer_norm without them)."""
    if a.ndim == 0:
        raise ValueError('bad')
    weight, bias = (np.ones(a.shape[-1:]), np.zeros(a.shape[-1:])) if gamma is None else (np.asarray(gamma),) * 2
    if weight.shape != a.shape[-1:] or not isinstance(eps, (int, float, np.number)):
        raise ValueError('bad')
    c = a - a.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) * weight + bias


def _expand_ref(a, sizes):
    """PyTorch's expand: -1 keeps a dim, new dims lead (never -1), a dim of size 1 takes any size."""
    sizes = tuple(sizes) if isinstance(sizes, (tuple, list)) else (sizes,)
    if any(isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) for n in sizes):
        raise TypeError('sizes are integers')
    lead = len(sizes) - a.ndim
    if lead < 0 or -1 in sizes[:lead]:
        raise ValueError('a size for each dim, new ones not -1')
    return np.broadcast_to(a, sizes[:lead] + tuple(n if s == -1 else s for s, n in zip(sizes[lead:], a.shape)))


def _flatten_ref(a, start, end):
    """PyTorch's flatten(start_dim, end_dim): those dims merged; a 0-d tensor becomes shape (1,)."""
    if a.ndim == 0:
        return a.reshape(1) if _reduced(a, start) is None and _reduced(a, end) is None else 1 / 0
    start, end = (int(np.lib.array_utils.normalize_axis_index(d, a.ndim)) for d in (start, end))
    if start > end:
        raise ValueError('start after end')
    return a.reshape(a.shape[:start] + (-1,) + a.shape[end + 1:]) if a.size else \
        a.reshape(a.shape[:start] + (int(np.prod(a.shape[start:end + 1])),) + a.shape[end + 1:])


def _chunk_ref(a, chunks, axis):
    if isinstance(chunks, (bool, np.bool_)) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ValueError('chunks >= 1')
    size = a.shape[axis]
    step = -(-size // chunks)
    return np.split(a, list(range(step, size, step)), axis=axis) if size else [a] * chunks


def _sum_to_ref(a, shape):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if len(shape) > a.ndim or np.broadcast_shapes(shape, a.shape) != a.shape:
        raise ValueError('does not broadcast')
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes).reshape(shape)


def _equal_lists(out, expected):
    assert out == expected


def _same_shape(out, expected):
    assert out.shape == np.shape(expected)


SPECS = [
    # creation
    Spec('tensor', lambda v: mt.tensor(v), (OPERANDS + [(1, 2), [[True, False]], [1, 2.5], 2 ** 70],),
         lambda v: np.asarray(v), tensors=None),
    Spec('tensor', lambda v, dtype, device: mt.tensor(v, dtype=dtype, device=device),
         ([1.5, [1, 2], fresh('array', lambda: np.arange(3.0))], DTYPES, DEVICES),
         lambda v, dtype, device: np.asarray(v, dtype=dtype), tensors=None),
    Spec('from_numpy', lambda v: mt.from_numpy(v), (OPERANDS,), lambda v: v if isinstance(v, np.ndarray) else 1 / 0,
         tensors=None),
    Spec('as_tensor', lambda v, dtype: mt.as_tensor(v, dtype=dtype), (OPERANDS, [None, 'float64', 'int64', 'float65']),
         lambda v, dtype: np.asarray(v, dtype=dtype), tensors=None),
    Spec('zeros', lambda s, dtype: mt.zeros(s, dtype=dtype), (SHAPES, DTYPES), lambda s, dtype: np.zeros(s, dtype),
         tensors=None),
    Spec('ones', lambda s, device: mt.ones(s, device=device), (SHAPES, DEVICES), lambda s, d: np.ones(s), tensors=None),
    Spec('full', lambda s, v: mt.full(s, v), (SHAPES, NUMBERS + OBJECTS), lambda s, v: np.full(s, v), tensors=None),
    Spec('eye', lambda n: mt.eye(n), (SIZES,), lambda n: np.eye(n), tensors=None),
    Spec('arange', lambda a, b, c: mt.arange(a, b, c), (SIZES + [0.5], SIZES + [None], [1, 2, -1, 0, 0.5, None, 'a']),
         lambda a, b, c: np.arange(a, b, c), tensors=None),
    Spec('randn', lambda s, dtype: mt.randn(s, dtype=dtype), (SHAPES, DTYPES), lambda s, d: np.zeros(s),
         tensors=None, compare=_same_shape),
    Spec('rand', lambda s: mt.rand(s), (SHAPES,), lambda s: np.zeros(s), tensors=None, compare=_same_shape),
    Spec('randint', lambda lo, hi, s: mt.randint(lo, hi, s), (SIZES, SIZES, SHAPES), lambda lo, hi, s: np.zeros(s),
         tensors=None, compare=_same_shape),
    Spec('zeros_like', lambda x, dtype: mt.zeros_like(x, dtype=dtype), (DTYPES,), lambda a, d: np.zeros_like(a, d)),
    Spec('zeros_like', lambda v: mt.zeros_like(v), (NON_TENSORS,), lambda v: 1 / 0, tensors=None),
    Spec('ones_like', lambda v: mt.ones_like(v), (NON_TENSORS,), lambda v: 1 / 0, tensors=None),
    Spec('manual_seed', lambda s: mt.manual_seed(s) or mt.zeros(1), (SIZES,), lambda s: np.zeros(1) if s >= 0 else 1 / 0,
         tensors=None),
    Spec('set_default_device', lambda d: mt.set_default_device(d) or mt.zeros(1), (DEVICES,),
         lambda d: np.zeros(1) if str(d).split(':')[0] == 'cpu' else 1 / 0, tensors=None),
    # elementwise
    *_binary('add', lambda a, b: a + b, np.add, 'Add'),
    *_binary('sub', lambda a, b: a - b, np.subtract, 'Sub'),
    *_binary('mul', lambda a, b: a * b, np.multiply, 'Mul'),
    *_binary('div', lambda a, b: a / b, np.true_divide, 'Div'),
    *_binary('pow', lambda a, b: a ** b, np.power, 'Pow'),
    *_binary('matmul', lambda a, b: a @ b, _matmul_ref, 'MatMul'),
    *[Spec(f"mt.{n}", lambda x, b, n=n: getattr(mt, n)(x, b), (OPERANDS,), lambda a, b, f=f: f(a, b), aliases=(n,))
      for n, f in [('add', np.add), ('maximum', np.maximum), ('minimum', np.minimum), ('pow', np.power),
                   ('matmul', _matmul_ref)]],
    *[Spec(f"mt.{n}", lambda a, b, n=n: getattr(mt, n)(a, b), (OPERANDS, OPERANDS), lambda a, b, f=f: f(a, b),
           tensors=None, aliases=(n,)) for n, f in [('sub', np.subtract), ('mul', np.multiply)]],
    *[Spec(n, lambda x, b, f=f: f(x, b), (OPERANDS,), lambda a, b, f=f: f(a, b)) for n, f in
      [('eq', lambda a, b: a == b if _numeric(b) else False), ('lt', lambda a, b: a < b), ('ge', lambda a, b: a >= b),
       ('and', lambda a, b: a & b)]],
    Spec('invert', lambda x: ~x, (), lambda a: ~a),
    *[_unary(n, f) for n, f in [('exp', _on_floats(np.exp)), ('log', _on_floats(np.log)),
                                ('sqrt', _on_floats(np.sqrt)), ('tanh', _on_floats(np.tanh)),
                                ('sin', _on_floats(np.sin)), ('abs', np.abs), ('relu', lambda a: np.maximum(a, 0)),
                                ('sigmoid', _on_floats(lambda a: 1 / (1 + np.exp(-a)))), ('__neg__', np.negative)]],
    *[_functional(n, f) for n, f in [('exp', _on_floats(np.exp)), ('neg', np.negative),
                                     ('relu', lambda a: np.maximum(a, 0))]],
    Spec('mt.exp', lambda v: mt.exp(v), (NON_TENSORS,), lambda v: 1 / 0, tensors=None, aliases=('exp',)),
    Spec('clip', lambda x, lo, hi: x.clip(lo, hi), (NUMBERS + OBJECTS + [None], NUMBERS + [None, 'a']),
         lambda a, lo, hi: 1 / 0 if lo is None and hi is None else np.clip(a, lo, hi)),  # neither: refused
    Spec('gelu', lambda x, approximate: x.gelu(approximate), (['tanh', 'none', 'erf', None, 1, True],),
         lambda a, ap: _on_floats(lambda a: a * 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3))) if ap == 'tanh'
         else 1 / 0 if ap != 'none' else a * 0.5 * (1 + np.vectorize(__import__('math').erf, otypes=[float])(a / np.sqrt(2))))(a),
         rtol=1e-5),
    # reductions
    *[Spec(n, lambda x, axis, keepdims, n=n: getattr(x, n)(axis=axis, keepdims=keepdims), (AXES, FLAGS),
           lambda a, axis, keepdims, f=f: f(a, axis=_reduced(a, axis), keepdims=_keep(keepdims)),
           aliases=(n.removeprefix('a'),))  # amax's op is Max
      for n, f in [('sum', np.sum), ('mean', np.mean), ('amax', np.max), ('amin', np.min)]],
    *[Spec(n, lambda x, axis, keepdims, n=n: _values(getattr(x, n)(dim=axis, keepdim=keepdims)), (AXES, FLAGS),
           lambda a, axis, keepdims, n=n: getattr(np, n)(a, axis=_reduced(a, axis), keepdims=_keep(keepdims)),
           aliases=('arg' + n,)) for n in ['max', 'min']],
    Spec('std', lambda x, axis, correction: x.std(dim=axis, correction=correction),
         (AXES, [0, 1, 2, 0.5, -1, None, 'a', np.int64(1)]),
         lambda a, axis, c: np.std(a, ddof=int(axis)) if axis is True and c is None  # x.std(True): PyTorch's std(unbiased)
         else np.std(a, axis=_reduced(a, axis), ddof=1 if c is None else c)),
    Spec('var', lambda x, axis, ddof: x.var(axis=axis, ddof=ddof), (AXES, [0, 1, 2, 0.5, -1, None, 'a', np.int64(1)]),
         lambda a, axis, ddof: np.var(a, axis=_reduced(a, axis), ddof=1 if ddof is None else ddof)),
    *[Spec(f"mt.{n}", lambda x, axis, n=n: _values(getattr(mt, n)(x, axis)), (AXES,),
           lambda a, axis, n=n: getattr(np, n)(a, _reduced(a, axis)), aliases=(n, 'arg' + n)) for n in ['sum', 'max']],
    *[Spec(n, lambda x, axis, n=n: getattr(x, n)(axis), (AXES,), lambda a, axis, n=n: _arg_ref(a, axis, getattr(np, n)))
      for n in ['argmax', 'argmin']],
    Spec('sum_to', lambda x, s: x.sum_to(s), (SHAPES,), lambda a, s: _sum_to_ref(a, s)),
    # shapes
    Spec('reshape', lambda x, s: x.reshape(s), (SHAPES,), lambda a, s: 1 / 0 if s is None else a.reshape(s)),
    Spec('reshape', lambda x, s: x.reshape(*s) if isinstance(s, tuple) else x.reshape(s), (SHAPES,),
         lambda a, s: 1 / 0 if s is None else a.reshape(s)),
    Spec('view', lambda x, s: x.view(s), (SHAPES,), lambda a, s: 1 / 0 if s is None else a.reshape(s),
         aliases=('reshape',)),
    Spec('mt.reshape', lambda v, s: mt.reshape(v, s), (NON_TENSORS, SHAPES), lambda v, s: 1 / 0, tensors=None,
         aliases=('reshape',)),
    Spec('transpose', lambda x, axes: x.transpose(*axes) if isinstance(axes, tuple) else x.transpose(axes),
         ([(), (0,), (1, 0), (0, 1, 2), (2, 0, 1), (0, 0), (0, 5), ('a',), (1.0, 0), (np.int64(1), 0), None, 0],),
         lambda a, axes: np.swapaxes(a, *axes) if isinstance(axes, tuple) and len(axes) == 2  # two dims: a swap
         else np.transpose(a, axes or None) if axes != 0 else np.transpose(a, (0,))),
    Spec('swapaxes', lambda x, a1, a2: x.swapaxes(a1, a2), (AXES, AXES), lambda a, a1, a2: np.swapaxes(a, a1, a2)),
    Spec('expand_dims', lambda x, axis: x.expand_dims(axis), (AXES,), lambda a, axis: np.expand_dims(a, axis)),
    Spec('unsqueeze', lambda x, axis: x.unsqueeze(axis), (AXES,), lambda a, axis: np.expand_dims(a, axis),
         aliases=('expand_dims',)),
    Spec('squeeze', lambda x, axis: x.squeeze(axis), (AXES,), lambda a, axis: _squeeze_ref(a, axis)),
    Spec('broadcast_to', lambda x, s: x.broadcast_to(s), (SHAPES,), lambda a, s: np.broadcast_to(a, s)),
    Spec('permute', lambda x, axes: x.permute(*axes) if isinstance(axes, tuple) else x.permute(axes),
         ([(), (0,), (1, 0), (0, 1, 2), (2, 0, 1), (0, 0), (0, 5), ('a',), (1.0, 0), (np.int64(1), 0), None, 0],),
         lambda a, axes: np.transpose(a, axes if isinstance(axes, tuple) else (axes,))),
    Spec('expand', lambda x, s: x.expand(s), (SHAPES + [(2, -1, 3), (-1, 2, 3), (4, -1)],), _expand_ref),
    Spec('expand', lambda x, s: x.expand(*s) if isinstance(s, tuple) else x.expand(s), (SHAPES,), _expand_ref),
    Spec('flatten', lambda x, start, end: x.flatten(start, end), (AXES, AXES), _flatten_ref),
    Spec('unflatten', lambda x, axis, s: x.unflatten(axis, s), (AXES, SHAPES),
         lambda a, axis, s: 1 / 0 if a.ndim == 0 or isinstance(axis, (bool, np.bool_)) or s in ((), None) else
         np.reshape(a, a.shape[:np.lib.array_utils.normalize_axis_index(axis, a.ndim)] + tuple(np.atleast_1d(s)) +
                    a.shape[np.lib.array_utils.normalize_axis_index(axis, a.ndim) + 1:])),
    Spec('chunk', lambda x, n, axis: x.chunk(n, axis), (SIZES, AXES), _chunk_ref,
         compare=lambda out, exp: [np.testing.assert_array_equal(o.numpy(), e) for o, e in zip(out, exp, strict=True)]),
    Spec('clone', lambda x: x.clone(), (), lambda a: a.copy()),
    Spec('contiguous', lambda x: x.contiguous(), (), lambda a: a.copy()),
    Spec('flatten', lambda x: x.flatten(), (), lambda a: a.reshape(-1), aliases=('reshape',)),
    Spec('getitem', lambda x, i: x[i], (INDICES,), lambda a, i: a[_np_index(i)]),
    Spec('setitem', lambda x, i, v: (x.__setitem__(i, v), x)[1], (INDICES, NUMBERS[:5] + OBJECTS + OPERANDS[-9:]),
         lambda a, i, v: _setitem(a, _np_index(i), _np(v))),
    Spec('fill_', lambda x, v: x.fill_(v), (NUMBERS + OBJECTS,), lambda a, v: a.fill(v) or a),
    Spec('copy_', lambda x, v: x.copy_(v), (OPERANDS,), lambda a, v: _setitem(a, Ellipsis, v)),
    Spec('concatenate', lambda x, others, axis: mt.concatenate([x] + others, axis=axis),
         ([[], [fresh('tensor (2, 3)', lambda: mt.ones(2, 3, dtype='float64'))], [None], [np.ones(3)], ['a']], AXES),
         lambda a, others, axis: np.concatenate([a] + [_np(o) for o in others], axis=axis)),
    Spec('concatenate', lambda v: mt.concatenate(v), (NON_TENSORS + [[], [[1.0]], (), [fresh('[0-d]', lambda: [mt.tensor(1.0)])]],), lambda v: 1 / 0,
         tensors=None),
    Spec('stack', lambda x, axis: mt.stack([x, x], axis=axis), (AXES,), lambda a, axis: np.stack([a, a], axis=axis)),
    Spec('stack', lambda v: mt.stack(v), (NON_TENSORS + [[], ()],), lambda v: 1 / 0, tensors=None),
    Spec('split', lambda x, s, axis: mt.split(x, s, axis=axis), (SIZES + [[1], [1, 'a'], (0, 2)], AXES),
         lambda a, s, axis: _split_ref(a, s, axis), compare=lambda out, exp: [np.testing.assert_array_equal(o.numpy(), e)
                                                                            for o, e in zip(out, exp, strict=True)]),
    # selection and nn
    Spec('where', lambda x, cond, b: mt.where(cond, x, b), (INDICES[11:22] + OBJECTS, OPERANDS),
         lambda a, cond, b: np.where(_bool_only(cond), a, b)),
    Spec('where', lambda cond, a, b: mt.where(cond, a, b), (OPERANDS, OPERANDS, OPERANDS),
         lambda c, a, b: np.where(_bool_only(c), _np(a), _np(b)) if any(isinstance(v, mt.Tensor) for v in (c, a, b)) else 1 / 0,
         tensors=None, raw=True),
    Spec('masked_fill', lambda x, mask, v: x.masked_fill(mask, v), (INDICES[11:22] + OBJECTS, NUMBERS + OBJECTS),
         lambda a, mask, v: np.where(_bool_only(mask), v, a).astype(a.dtype)  # x's dtype, as in PyTorch
         if np.broadcast_shapes(np.shape(mask), a.shape) == a.shape else 1 / 0),
    *[Spec(n, lambda x, axis, n=n: getattr(mt, n)(x, axis=axis), (AXES,), lambda a, axis, f=f: f(a, axis))
      for n, f in [('softmax', lambda a, axis: _softmax(_floats(a), axis)),
                   ('log_softmax', lambda a, axis: _log_softmax(_floats(a), axis))]],
    Spec('softmax', lambda v: mt.softmax(v), (NON_TENSORS,), lambda v: 1 / 0, tensors=None),
    Spec('cross_entropy', lambda x, t, ignore: mt.cross_entropy(x, t, ignore_index=ignore),
         (INDICES + [fresh('targets (2,)', lambda: np.array([2, 0])), 0], [None, 0, -100, 'a', 1.5, np.int64(2)]),
         lambda a, t, ignore: _cross_entropy_ref(a, _np(t), ignore), rtol=1e-5),
    Spec('cross_entropy', lambda v: mt.cross_entropy(v, [0]), (NON_TENSORS,), lambda v: 1 / 0, tensors=None),
    Spec('layer_norm', lambda x, gamma, eps: mt.layer_norm(x, x.shape[-1:], gamma, gamma, eps), (OPERANDS, NUMBERS + OBJECTS),
         lambda a, gamma, eps: _layer_norm_ref(a, gamma, eps), rtol=1e-5),
    Spec('dropout', lambda x, p, training: mt.dropout(x, p, training), ([0, 1, 0.5, -0.1, 1.5, None, 'a', np.nan], FLAGS),
         lambda a, p, training: a if not training or p == 0 else np.zeros_like(a),
         compare=lambda out, exp: _same_shape(out, exp)),
    # autograd and tensor methods
    Spec('backward', lambda x, g: (x * 2).sum().backward(g), (OPERANDS,), None),
    Spec('backward', lambda x, g: (x * 2).backward(g), (OPERANDS,), None),
    Spec('register_hook', lambda x, hook: x.register_hook(hook), ([None, 1, 'f', print],), None),
    Spec('requires_grad_', lambda x, flag: x.requires_grad_(flag), (FLAGS,), None),
    Spec('grad', lambda x, outputs, inputs: mt.grad(outputs, inputs), (OPERANDS, OPERANDS), None),
    Spec('grad', lambda x, g: mt.grad((x * x).sum(), x, grad_outputs=g), (OPERANDS,), None),
    Spec('to', lambda x, d: x.to(d), (DEVICES + DTYPES,), None),
    Spec('astype', lambda x, d: x.astype(d), (DTYPES,), lambda a, d: a.astype(d)),
    Spec('item', lambda x: x.item(), (), lambda a: a.item()),
    Spec('len', lambda x: len(x), (), lambda a: len(a)),
    Spec('iteration over', lambda x: list(x), (), lambda a: list(a),
         compare=lambda out, exp: [np.testing.assert_array_equal(o.numpy(), e) for o, e in zip(out, exp, strict=True)]),
    Spec('bool', lambda x: bool(x), (), lambda a: bool(a), aliases=('truth value',)),
    *[Spec(n, lambda x, n=n: getattr(x, n)(), (), f) for n, f in [
        ('cpu', lambda a: a), ('float', lambda a: a.astype(np.float32)), ('double', lambda a: a.astype(np.float64)),
        ('detach', lambda a: a), ('numpy', lambda a: a), ('any', np.any), ('all', np.all),
        ('zero_', np.zeros_like)]],
    Spec('tolist', lambda x: x.tolist(), (), lambda a: a.tolist(), compare=lambda out, exp: _equal_lists(out, exp)),
    Spec('T', lambda x: x.T, (), lambda a: a.T, aliases=('transpose',)),
    # every function of the functional API refuses what is not a Tensor, saying so
    *[Spec(f"mt.{n}", lambda v, n=n: getattr(mt, n)(v), (NON_TENSORS,), lambda v: 1 / 0, tensors=None, aliases=(n,))
      for n in ['neg', 'log', 'sqrt', 'tanh', 'sin', 'cos', 'sigmoid', 'abs', 'erf', 'clip', 'sum', 'mean', 'var',
                'max', 'min', 'transpose', 'squeeze', 'gelu', 'log_softmax', 'dropout', 'split', 'expand_dims',
                'broadcast_to', 'swapaxes', 'masked_fill', 'layer_norm']
      if n not in ('split', 'expand_dims', 'broadcast_to', 'swapaxes', 'masked_fill', 'layer_norm')],
    *[Spec(f"mt.{n}", lambda v, n=n, extra=extra: getattr(mt, n)(v, *extra), (NON_TENSORS,), lambda v: 1 / 0,
           tensors=None, aliases=(n,))
      for n, extra in [('split', (1,)), ('expand_dims', (0,)), ('broadcast_to', ((3,),)), ('swapaxes', (0, 0)),
                       ('masked_fill', (True, 0.0)), ('layer_norm', (3, mt.ones(3), mt.zeros(3)))]],
]


def _np(v):
    """The numpy form of an argument, for the reference (axis lists, accepted as in PyTorch, become tuples)."""
    if isinstance(v, mt.Tensor):
        return v.numpy()
    if isinstance(v, (list, tuple)):
        return type(v)(_np(i) for i in v)
    return v


def _np_index(i):
    i = _np(i)
    if isinstance(i, list) and any(isinstance(p, (str, type(None))) for p in i):
        raise IndexError('numpy reads it as an object array')
    return i


def _flag(value):
    return bool(value) if isinstance(value, np.bool_) else value  # numpy's reductions refuse numpy's own bools


def _ax(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _numeric(v):
    """Would the engine take v as an operand?  (a number or an array of numbers)"""
    try:
        return np.asarray(_np(v)).dtype.kind in 'biuf' and not isinstance(v, (str, bytes))
    except ValueError:
        return False


def _bool_only(cond):
    cond = np.asarray(_np(cond))
    if cond.dtype != bool:
        raise TypeError('not boolean')
    return cond


# ---------------------------------------------------------------------------- the check
ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, MemoryError)  # MemoryError: a size too large


def _names(message, spec):
    """Does the message name the function (or the op doing its work)?"""
    flat = re.sub(r'[_.\s]', '', message.lower())
    return any(re.sub(r'[_.\s]', '', n.lower().removeprefix('mt.')) in flat for n in (spec.name,) + spec.aliases)


def _compare(out, expected, spec):
    if spec.compare is not None:
        spec.compare(out, expected)
        return
    if isinstance(out, mt.Tensor):
        out = out.numpy()
    expected = np.asarray(expected)
    assert np.shape(out) == expected.shape, f"{spec.name}: shape {np.shape(out)}, numpy gives {expected.shape}"
    if expected.dtype.kind in 'biuf' and 0 < expected.size < 10 ** 6:
        np.testing.assert_allclose(np.asarray(out, dtype=np.float64), expected.astype(np.float64), rtol=spec.rtol,
                                   atol=1e-12, equal_nan=True, err_msg=spec.name)


def check(spec, data):
    x = data.draw(st.sampled_from(spec.tensors), label='x') if spec.tensors else None
    x = TENSORS[x]() if x else None
    values = [data.draw(p if isinstance(p, st.SearchStrategy) else pool(*p), label=f'arg {k}')
              for k, p in enumerate(spec.args)]
    a = None if x is None else x.numpy().copy()
    reference_args = [_np(v) for v in values]
    try:
        out = spec.call(*([x] if x is not None else []), *values)
    except ALLOWED as error:
        assert _names(str(error), spec), f"{spec.name}: {type(error).__name__} does not name the function: {error}"
        return
    # it returned: the value must be numpy's (and numpy must accept the call too)
    if spec.ref is None:
        return
    with np.errstate(all='ignore'):
        try:
            expected = spec.ref(*([a] if x is not None else []), *(values if spec.raw else reference_args))
        except Exception as error:  # noqa: BLE001  numpy refused it: accepting it silently is a bug
            pytest.fail(f"{spec.name} accepted {values!r} (x: {a!r}) where numpy raises {type(error).__name__}: {error}")
    _compare(out, expected, spec)


@pytest.mark.filterwarnings('ignore::RuntimeWarning')  # numpy's "Mean of empty slice" and such: not what is checked
@pytest.mark.parametrize('k', range(len(SPECS)), ids=[f"{k}-{s.name}" for k, s in enumerate(SPECS)])
@given(data=st.data())
def test_every_public_function_gives_numpys_value_or_a_named_error(k, data):
    spec = SPECS[k]
    with np.errstate(all='ignore'):  # numpy's overflow / invalid warnings are not what is checked
        try:
            check(spec, data)
        finally:
            mt.set_default_device('cpu')
            mt.autograd._grad_enabled = True
