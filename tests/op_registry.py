"""The op registry: every public op, how to call it here and in PyTorch, and the samples to try.

Read by tests/test_op_registry.py, which compares each op with its PyTorch twin on every sample:
the value, the result's dtype, the gradient (float64) and the second gradient (order 2).

An Entry gives
    name      as a user calls it: 'exp' is mt.exp, 'Tensor.exp' the method, 'Tensor.add_' in place,
              'Tensor.__add__' the operator
    call      (mt, args, kwargs) -> result; `twin` the same on torch (each gets its own library's tensors)
    dtypes    the dtypes its samples are made in
    order     0: no gradient; 1: the first gradient is compared; 2: the second as well
    samples   (dtype, slow) -> [Sample]: slow=True gives the larger set that `-m slow` runs
    refuses   why microtensor refuses a call PyTorch computes (a name it lacks, an argument form it does
              not take): the registry then expects a clear error on every sample, never a wrong value,
              and fails once microtensor computes it (then the entry gets a twin to agree with)
    beyond    dtypes PyTorch refuses that microtensor takes, as README's table of deliberate
              differences says (the mean of integers, the softmax of token ids): the twin gets
              those inputs as float64, and its results are compared as float32, the dtype
              microtensor returns

Samples name their arrays as numpy arrays (and View, for a non-contiguous view): the test makes
each library's tensor from the same values.  Families of ops share a generator (unary, binary
with broadcasting, reductions with dim and keepdim, shapes ...), so the table stays one line an op.
"""
import functools
import operator
import zlib
from dataclasses import dataclass, field

import numpy as np

FLOATS = ('float16', 'float32', 'float64')
INTS = ('int64', 'int32', 'uint8')
ALL = FLOATS + INTS + ('bool',)
NUMBERS = FLOATS + INTS


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    note: str = ''

    def __repr__(self):
        return self.note or 'sample'


class View:
    """A non-contiguous view of `base`, made by the same indexing in both libraries ('T': transposed,
    'step': every other column), so that an op meets strides it would not see on a fresh tensor."""

    def __init__(self, base, how):
        self.base, self.how = base, how

    def make(self, t):
        return t.transpose(0, 1) if self.how == 'T' else t[:, ::2]


@dataclass
class Entry:
    name: str
    call: object
    twin: object
    dtypes: tuple
    order: int
    samples: object
    beyond: tuple = ()
    refuses: str = ''

    def __repr__(self):
        return self.name


def as_float64(sample, dtype):
    """The sample with its arrays of `dtype` made float64: the exact reference of a low-precision
    sample, and the twin's input for a `beyond` dtype (where only the first argument, the op's
    input, is cast: a mask or an index keeps its dtype)."""
    def cast(arg, first=False):
        if isinstance(arg, View):
            return View(cast(arg.base, first), arg.how)
        if isinstance(arg, np.ndarray) and arg.dtype == dtype and (first or dtype in FLOATS):
            return arg.astype('float64')
        return type(arg)(cast(a) for a in arg) if isinstance(arg, (list, tuple)) else arg
    args = (cast(sample.args[0], first=True),) + tuple(cast(a) for a in sample.args[1:])
    return Sample(args, {k: cast(v) for k, v in sample.kwargs.items()}, sample.note)


def is_empty(sample):
    """Whether an input has no element (an empty input runs no kernel: PyTorch checks no dtype there)."""
    return any((a.base if isinstance(a, View) else a).size == 0 for a in sample.args
               if isinstance(a, (np.ndarray, View)))


@dataclass
class RandomEntry:
    """A random op: draw(mt, shape, dtype) -> a tensor; mean and std are the distribution's,
    for the seeded check of a large draw."""
    name: str
    draw: object
    dtypes: tuple
    mean: float
    std: float

    def __repr__(self):
        return self.name


# ------------------------------------------------------------------ values
@functools.lru_cache(maxsize=None)  # the samples are made again for every run of an entry: made once
def arr(shape, dtype, seed=0, low=None):
    """Deterministic values of a shape and dtype: normals for floats, small ints (ties!) for ints.
    Read-only, as they are shared: the tests copy them into each library's tensors."""
    x = _values(shape, dtype, seed, low)
    x.setflags(write=False)
    return x


def _values(shape, dtype, seed, low):
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype, seed)).encode()))  # (hash() of a str varies by run)
    if dtype == 'bool':
        return np.asarray(rng.random(shape) < 0.5)  # (numpy makes 0-d results scalars: arrays again)
    if dtype in INTS:
        lo = 0 if dtype == 'uint8' else -4
        return np.asarray(rng.integers(lo if low is None else low, 5, size=shape), dtype)
    x = rng.standard_normal(shape)
    if low is not None:
        x = np.abs(x) + low
    return np.asarray(x, dtype)


# Two scales of float data where low precision shows: centred far from 0 (a mean or a variance loses
# digits subtracting it) and spread far (softmaxes saturate, GELU reaches its linear region)
SCALES = {'centred at 300': (300.0, 3.0), 'spread 60': (0.0, 60.0)}


@functools.lru_cache(maxsize=None)
def scaled(shape, dtype, scale):
    """centre + spread * normals, of the SCALES entry `scale`, in dtype (read-only, as arr's)."""
    centre, spread = SCALES[scale]
    x = np.asarray(centre + spread * np.random.default_rng(0).standard_normal(shape), dtype)
    x.setflags(write=False)
    return x


def at_scales(dtype, make):
    """make(x, note) for x at each of SCALES (float dtypes only)."""
    return [make(scaled((2, 5, 7), dtype, note), note) for note in SCALES] if dtype in FLOATS else []


def extremes(dtype):
    """The values at the edges of a dtype: ±inf, nan, the largest and the smallest normal, ±0, 1."""
    if dtype == 'bool':
        return np.array([True, False])
    if dtype in INTS:
        info = np.iinfo(dtype)
        return np.array([info.max, info.min, 0, 1, 2], dtype)
    info = np.finfo(dtype)
    return np.array([np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny, -info.tiny, 0.0, -0.0, 1.0, -2.5],
                    dtype)


def finite(dtype):
    x = extremes(dtype)
    return x[np.isfinite(x)] if dtype in FLOATS else x


# ------------------------------------------------------------------ sample families
def unary(dtype, slow, positive=False):
    low = 0.1 if positive and dtype in FLOATS else None
    a = lambda shape, seed=0: arr(shape, dtype, seed, low)  # noqa: E731
    out = [Sample((a(()),), note='0-d'), Sample((a((0, 3)),), note='empty'),
           Sample((a((1, 3, 1)),), note='size-1 axes'), Sample((a((2, 3)),), note='2x3'),
           Sample((View(a((3, 2)), 'T'),), note='transposed'), Sample((View(a((2, 6)), 'step'),), note='sliced'),
           Sample((extremes(dtype),), note='extremes')]
    out += at_scales(dtype, lambda x, note: Sample((x,), note=note))
    if slow:
        out += [Sample((a((4, 5, 6), s),), note=f'4x5x6 #{s}') for s in range(3)]
    return out


def binary(dtype, slow, scalar=True, right_positive=False, extremes_both=True, signs=False):
    """a op b: same shapes, broadcasting, 0-d, empty, a view, promotion, Python numbers, extremes x extremes;
    right_positive: divisors >= 1 (and an empty result's divisors of 0); signs: every sign of a and b
    (how %, // and the rounding modes round)."""
    a = lambda shape, seed=0: arr(shape, dtype, seed)  # noqa: E731
    b = lambda shape, seed=1: arr(shape, dtype, seed, 1 if right_positive and dtype in NUMBERS else None)  # noqa: E731
    out = [Sample((a((2, 3)), b((2, 3))), note='same shape'),
           Sample((a((2, 3)), b((3,))), note='broadcast (2,3) (3,)'),
           Sample((a((2, 1)), b((1, 3))), note='broadcast (2,1) (1,3)'),
           Sample((a(()), b((2, 3))), note='0-d with 2x3'),
           Sample((a((0, 3)), b((3,))), note='empty'),
           Sample((View(a((3, 2)), 'T'), b((2, 3))), note='transposed')]
    out.append(Sample((a((2, 3)), b((4,))), note="shapes that do not fit"))  # (a RuntimeError in PyTorch)
    # promotion: with a float32 tensor, and with a 0-d float64 tensor (which does not widen a tensor)
    out += [Sample((a((2, 3)), arr((3,), 'float32', 2)), note='with float32'),
            Sample((a((2, 3)), arr((), 'float64', 2)), note='with 0-d float64')]
    if scalar and dtype != 'bool':
        out.append(Sample((a((2, 3)), 2), note='python int'))
        if dtype in FLOATS:
            out.append(Sample((a((2, 3)), 0.5), note='python float'))
    if extremes_both:
        e = extremes(dtype)
        out.append(Sample((e[:, None], e[None, :]), note='extremes x extremes'))
    if right_positive and dtype in NUMBERS:  # the divisors of 0 of an empty result are never divided by
        out.append(Sample((a((0, 3)), np.zeros(3, dtype)), note='empty, divisor 0'))
    if signs and dtype in NUMBERS and dtype != 'uint8':
        out.append(Sample((np.array([-4, 7, 5, 4, -7, 8, -9, 6], dtype), np.array([2, -3, 8, -2, 3, 5, -5, 3], dtype)),
                          note='signs'))
    if slow:
        out += [Sample((a((4, 5, 6), s), b((5, 1), s)), note=f'broadcast 4x5x6 #{s}') for s in range(3)]
    return out


def reduction(dtype, slow, multi=True, need_dim=False, empty=True, keep=True):
    """x with dim None / 0 / -1 / a tuple, keepdim both ways; 0-d; empty; size-1; views; extremes; ties."""
    a = lambda shape, seed=0: arr(shape, dtype, seed)  # noqa: E731
    dims = [0, -1, 1] + ([(0, 2), (-1, 0)] if multi else [])
    kw = lambda d, k: dict(dim=d, keepdim=k) if keep else dict(dim=d)  # noqa: E731
    out = [Sample((a((2, 3, 4)),), kw(d, k), note=f'dim={d} keepdim={k}') for d in dims for k in (False, True)]
    if not need_dim:
        out += [Sample((a((2, 3)),), note='all'), Sample((a(()),), note='0-d all')]
    out += [Sample((a(()),), kw(0, False), note='0-d dim=0'), Sample((a(()),), kw(-1, True), note='0-d dim=-1'),
            Sample((a((1, 3, 1)),), kw(-1, False), note='size-1 dim=-1'),
            Sample((View(a((3, 4)), 'T'),), kw(1, False), note='transposed'),
            Sample((View(a((2, 6)), 'step'),), kw(-1, True), note='sliced'),
            Sample((extremes(dtype)[None, :],), kw(1, False), note='extremes'),
            Sample((np.array([[1, 3, 3], [2, 2, 0]], dtype),), kw(1, False), note='ties')]
    out += at_scales(dtype, lambda x, note: Sample((x,), kw(-1, False), note=note))
    out.append(Sample((a((2, 3)),), kw(2, False), note='dim out of range'))  # (an IndexError in PyTorch)
    if empty:
        out += [Sample((a((0, 3)),), kw(1, False), note='empty, dim 1'), Sample((a((2, 0)),), kw(1, True), note='empty')]
    if slow:
        out += [Sample((a((4, 5, 6), s),), kw(d, True), note=f'4x5x6 #{s} dim={d}') for s in range(3) for d in (0, 2)]
    return out


def along_dim(dtype, slow, empty=True):
    """An op along one dim (cumsum, softmax, ...): each dim, negative dims, 0-d, empty, views, extremes."""
    a = lambda shape, seed=0: arr(shape, dtype, seed)  # noqa: E731
    out = [Sample((a((2, 3, 4)), d), note=f'dim={d}') for d in (0, 1, -1)]
    out += [Sample((a(()), 0), note='0-d'), Sample((a((1, 3, 1)), -1), note='size-1'),
            Sample((View(a((3, 4)), 'T'), 1), note='transposed'), Sample((View(a((2, 6)), 'step'), -1), note='sliced'),
            Sample((extremes(dtype)[None, :], 1), note='extremes'),
            Sample((finite(dtype)[None, :], 1), note='finite extremes')]
    out += at_scales(dtype, lambda x, note: Sample((x, -1), note=note))
    out.append(Sample((a((2, 3)), 2), note='dim out of range'))
    if empty:
        out.append(Sample((a((2, 0)), -1), note='empty'))
    if slow:
        out += [Sample((a((4, 5, 6), s), d), note=f'4x5x6 #{s} dim={d}') for s in range(3) for d in (0, 2)]
    return out


def shaped(dtype, slow, calls):
    """A shape op: calls lists (shape of x, extra args, kwargs, note); the first call is made again on
    a transposed view of the same shape (strides a fresh tensor does not have).  A call noted 'misfit'
    asks for what the shape cannot give: PyTorch's error class is expected."""
    out = [Sample((arr(shape, dtype),) + tuple(extra), dict(kw), note=note) for shape, extra, kw, note in calls]
    shape, extra, kw, note = calls[0]
    if len(shape) >= 2:
        base = arr((shape[1], shape[0]) + tuple(shape[2:]), dtype, seed=5)
        out.append(Sample((View(base, 'T'),) + tuple(extra), dict(kw), note=f'{note}, transposed view'))
    return out


def none(dtype, slow):
    return []


# ------------------------------------------------------------------ the table
ENTRIES = []
RANDOM = []


def entry(name, call, twin, dtypes, order, samples, beyond=()):
    ENTRIES.append(Entry(name, call, twin, tuple(dtypes), order, samples, tuple(beyond)))


def method(name):
    return lambda lib, *a, **k: getattr(a[0], name)(*a[1:], **k)


def function(name, torch_path=None):
    """mt.<name> and its twin torch.<torch_path> (a dotted path such as 'nn.functional.gelu')."""
    def call(lib, *a, **k):
        f = lib
        for part in (name if lib.__name__ == 'microtensor' else torch_path or name).split('.'):
            f = getattr(f, part)
        return f(*a, **k)
    return call


def both(name, dtypes, order, samples, torch_name=None, tensor=True, fn=True, beyond=()):
    """The function mt.<name> and the method Tensor.<name>, with their PyTorch twins."""
    if fn:
        entry(name, function(name, torch_name), function(name, torch_name), dtypes, order, samples, beyond)
    if tensor:
        m = method(name)
        entry(f'Tensor.{name}', m, m, dtypes, order, samples, beyond)


def family(fn, **options):
    return lambda dtype, slow: fn(dtype, slow, **options)


def with_args(gen, *extra, **kw):
    """gen's samples with extra arguments appended (and keyword arguments added)."""
    def samples(dtype, slow):
        return [Sample(s.args + extra, {**s.kwargs, **kw}, s.note) for s in gen(dtype, slow)]
    return samples


# unary elementwise: all dtypes (integers and bools compute in float32, as PyTorch's)
for name in ('exp', 'log', 'sqrt', 'rsqrt', 'tanh', 'sin', 'cos', 'sigmoid', 'abs', 'neg', 'relu', 'erf'):
    both(name, NUMBERS if name in ('abs', 'neg', 'relu') else ALL, 2, family(unary), tensor=name not in ('neg', 'erf'))
F_GELU = function('gelu', 'nn.functional.gelu')  # PyTorch's Tensor has no gelu method
entry('gelu', F_GELU, F_GELU, FLOATS, 2, family(unary), beyond=INTS + ('bool',))
entry('Tensor.gelu', method('gelu'), F_GELU, FLOATS, 2, family(unary), beyond=INTS + ('bool',))
entry('Tensor.gelu(tanh)', method('gelu'), F_GELU, FLOATS, 2, with_args(family(unary), approximate='tanh'),
      beyond=INTS + ('bool',))
entry('Tensor.__neg__', method('__neg__'), method('__neg__'), NUMBERS, 2, family(unary))
entry('Tensor.__invert__', method('__invert__'), method('__invert__'), INTS + ('bool',), 0, family(unary))
both('bitwise_not', INTS + ('bool',), 0, family(unary), tensor=False)
for name in ('clip', 'clamp'):
    entry(f'Tensor.{name}', method(name), method(name), ALL, 2, with_args(family(unary), 0, 2))
    entry(f'Tensor.{name}(max)', method(name), method(name), ALL, 2, with_args(family(unary), max=1))
entry('clip', function('clip'), function('clip'), ALL, 2, with_args(family(unary), 0, 2))
entry('Tensor.clamp(min > max)', method('clamp'), method('clamp'), ALL, 2, with_args(family(unary), 3, 1))
entry('Tensor.clamp_', lambda lib, x, *a: x.clone().clamp_(*a), lambda lib, x, *a: x.clone().clamp_(*a),
      NUMBERS, 2, with_args(family(unary), 0, 2))
entry('Tensor.clone', method('clone'), method('clone'), ALL, 2, family(unary))
entry('clone', function('clone'), function('clone'), ALL, 2, family(unary))
entry('Tensor.contiguous', method('contiguous'), method('contiguous'), ALL, 2, family(unary))
# casts: in the graph for float targets
for name, target in (('float', 'float32'), ('double', 'float64'), ('half', 'float16'), ('int', 'int32'),
                     ('long', 'int64'), ('bool', 'bool')):
    entry(f'Tensor.{name}', method(name), method(name), ALL, 2 if target in FLOATS else 0,
          family(unary) if target != 'int' and target != 'long' else lambda dtype, slow: [
              s for s in unary(dtype, slow) if s.note != 'extremes'])  # a float beyond the int's range is undefined
entry('Tensor.to', lambda lib, x, d: x.to(getattr(lib, d)), lambda lib, x, d: x.to(getattr(lib, d)), ALL, 2,
      with_args(family(unary), 'float64'))


def _astype(lib, x, d):  # numpy's name; PyTorch's is to()
    return x.astype(getattr(lib, d)) if lib.__name__ == 'microtensor' else x.to(getattr(lib, d))


entry('Tensor.astype', _astype, _astype, ALL, 2, with_args(family(unary), 'float16'))

# binary elementwise with broadcasting (and the operators, their reflected and in-place forms)
for name, torch_name, dtypes, order, opts in (
        ('add', None, ALL, 2, {}), ('sub', None, NUMBERS, 2, {}), ('mul', None, ALL, 2, {}),
        ('div', None, ALL, 2, {}), ('pow', None, NUMBERS, 2, dict(right_positive=True)),
        ('maximum', None, ALL, 2, dict(scalar=False)), ('minimum', None, ALL, 2, dict(scalar=False)),
        ('remainder', None, NUMBERS, 1, dict(right_positive=True, signs=True)),
        ('floor_divide', None, NUMBERS, 0, dict(right_positive=True, signs=True)),
        ('bitwise_and', None, INTS + ('bool',), 0, {}), ('bitwise_or', None, INTS + ('bool',), 0, {}),
        ('bitwise_xor', None, INTS + ('bool',), 0, {}),
        ('bitwise_left_shift', None, INTS, 0, dict(extremes_both=False)),
        ('bitwise_right_shift', None, INTS, 0, dict(extremes_both=False))):
    both(name, dtypes, order, family(binary, **opts), torch_name,
         tensor=name in ('add', 'sub', 'mul', 'div', 'pow', 'remainder', 'floor_divide'))
# the elementwise functions by family (trigonometric, exponential, rounding, logic): floats compute in floats,
# integers and bools in float32 (as exp); the rounding ones keep integers; the logic ones give bools
for name in ('tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh', 'atanh',
             'exp2', 'expm1', 'log2', 'log10', 'log1p', 'reciprocal'):
    both(name, ALL, 2, family(unary))
for name, dtypes in (('floor', NUMBERS), ('ceil', NUMBERS), ('trunc', NUMBERS), ('round', NUMBERS), ('sign', ALL),
                     ('frac', FLOATS), ('square', ALL)):
    both(name, dtypes, 2, family(unary))
entry('Tensor.round(decimals)', method('round'), method('round'), FLOATS, 2, with_args(family(unary), decimals=2))
entry('round(decimals=-1)', function('round'), function('round'), FLOATS, 2, with_args(family(unary), decimals=-1))
for name in ('isnan', 'isinf', 'isfinite', 'logical_not'):
    both(name, ALL, 0, family(unary))
for name in ('nan_to_num',):
    both(name, ALL, 2, family(unary))
entry('Tensor.nan_to_num(nan, posinf, neginf)', method('nan_to_num'), method('nan_to_num'), ALL, 2,
      with_args(family(unary), nan=1.5, posinf=100.0, neginf=-100.0))
for name, dtypes, order, opts in (('atan2', ALL, 2, {}), ('hypot', FLOATS, 2, {}), ('logaddexp', FLOATS, 2, {}),
                                  ('copysign', ALL, 2, dict(signs=True)),
                                  ('fmod', NUMBERS, 1, dict(right_positive=True, signs=True)),
                                  ('logical_and', ALL, 0, {}), ('logical_or', ALL, 0, {}),
                                  ('logical_xor', ALL, 0, {})):
    both(name, dtypes, order, family(binary, **opts))


def lerp_samples(dtype, slow):
    """start, end and a weight: a number, a tensor, broadcast; weights beyond [0, 1] extrapolate."""
    a = lambda shape, seed: arr(shape, dtype, seed)  # noqa: E731
    return [Sample((a((2, 3), 0), a((2, 3), 1), 0.25), note='number weight'),
            Sample((a((2, 3), 0), a((2, 3), 1), 1.5), note='weight beyond 1'),
            Sample((a((2, 3), 0), a((2, 3), 1), a((2, 3), 2)), note='tensor weight'),
            Sample((a((2, 3), 0), a((3,), 1), a((1, 3), 2)), note='broadcast'),
            Sample((a((0, 3), 0), a((0, 3), 1), 0.5), note='empty')]


both('lerp', FLOATS, 2, lerp_samples)


def overflowing(dtype):
    """Rows whose sums overflow to inf or -inf, or round to 1, in every order of addition (a BLAS kernel
    picks its own): largest + largest, smallest normals beside 1."""
    if dtype not in FLOATS:
        return np.array([[1, 2, 3]]).astype(dtype)
    info = np.finfo(dtype)
    return np.array([[info.max, info.max, 1], [info.tiny, info.tiny, 1], [-info.max, -info.max, 0]], dtype)


def matmul_samples(dtype, slow):
    return [
        Sample((arr((2, 3), dtype), arr((3, 4), dtype, 1)), note='2x3 @ 3x4'),
        Sample((arr((3,), dtype), arr((3,), dtype, 1)), note='vector . vector'),
        Sample((arr((3,), dtype), arr((3, 2), dtype, 1)), note='vector @ matrix'),
        Sample((arr((2, 3), dtype), arr((3,), dtype, 1)), note='matrix @ vector'),
        Sample((arr((2, 1, 2, 3), dtype), arr((4, 3, 2), dtype, 1)), note='batched, broadcast'),
        Sample((arr((0, 3), dtype), arr((3, 2), dtype, 1)), note='empty rows'),
        Sample((arr((2, 0), dtype), arr((0, 2), dtype, 1)), note='empty inner'),
        Sample((View(arr((3, 2), dtype), 'T'), arr((3, 2), dtype, 1)), note='transposed'),
        Sample((overflowing(dtype), np.ones((3, 1), dtype)), note='extremes (overflow)'),
        Sample((arr((2, 3), dtype), arr((4, 2), dtype, 1)), note='inner sizes differ')]


both('matmul', NUMBERS, 2, matmul_samples)
for name in ('__matmul__', '__rmatmul__'):  # (x.__rmatmul__(y) is y @ x: the samples' shapes fit one way)
    entry(f'Tensor.{name}', method(name), method(name), NUMBERS, 2,
          matmul_samples if name == '__matmul__' else lambda dtype, slow: [
              Sample((s.args[1], s.args[0]), s.kwargs, s.note) for s in matmul_samples(dtype, slow)])
for name, dtypes, order, opts in (  # the operators' names, without the underscores
        ('add', ALL, 2, {}), ('sub', NUMBERS, 2, {}), ('mul', ALL, 2, {}),
        ('truediv', ALL, 2, {}), ('pow', NUMBERS, 2, dict(right_positive=True)),
        ('mod', NUMBERS, 1, dict(right_positive=True, signs=True)),
        ('floordiv', NUMBERS, 0, dict(right_positive=True, signs=True)),
        ('and', INTS + ('bool',), 0, {}), ('or', INTS + ('bool',), 0, {}), ('xor', INTS + ('bool',), 0, {}),
        ('lshift', INTS, 0, dict(extremes_both=False)), ('rshift', INTS, 0, dict(extremes_both=False))):
    entry(f'Tensor.__{name}__', method(f'__{name}__'), method(f'__{name}__'), dtypes, order, family(binary, **opts))
    # x.__rop__(y) is y op x; the twin writes y op x, as PyTorch's own __rtruediv__ of a tensor is x.reciprocal() * y
    swapped = (lambda op: lambda lib, x, y: op(y, x))(getattr(operator, name + '_' if name in ('and', 'or') else name))
    entry(f'Tensor.__r{name}__', method(f'__r{name}__'), swapped, dtypes, order, family(binary, **opts))
    # in place: on a copy of a (a float copy is in the graph); the samples where b broadcasts a to a larger
    # shape are left to one, the extremes' outer product (both libraries refuse to grow a in place)
    inplace = f'__i{name}__'

    def in_place_samples(dtype, slow, opts=opts):
        return [s for s in binary(dtype, slow, **opts) if s.note not in ('0-d with 2x3', 'broadcast (2,1) (1,3)')]
    # through the operator module, as `x op= y` is (Python falls back to x = x op y without __iop__)
    call = (lambda inplace: lambda lib, x, y: getattr(operator, inplace.strip('_'))(x.clone(), y))(inplace)
    entry(f'Tensor.{inplace}', call, call, dtypes if name != 'truediv' else FLOATS, order, in_place_samples)
for name in ('add_', 'sub_', 'mul_', 'div_'):
    call = (lambda name: lambda lib, x, y, **k: getattr(x.clone(), name)(y, **k))(name)
    entry(f'Tensor.{name}', call, call, {'div_': FLOATS, 'sub_': NUMBERS}.get(name, ALL), 2,
          lambda dtype, slow: [s for s in binary(dtype, slow) if s.note not in ('0-d with 2x3', 'broadcast (2,1) (1,3)')])
for name in ('add', 'sub'):
    entry(f'{name}(alpha)', function(name), function(name), ALL if name == 'add' else NUMBERS, 2,
          with_args(family(binary, extremes_both=False), alpha=2))
    call = (lambda name: lambda lib, x, y, **k: getattr(x.clone(), name + '_')(y, **k))(name)
    entry(f'Tensor.{name}_(alpha)', call, call, FLOATS, 2,
          with_args(lambda dtype, slow: binary(dtype, slow)[:2], alpha=-0.5))
for mode in ('floor', 'trunc'):
    entry(f'div({mode})', function('div'), function('div'), NUMBERS, 1,
          with_args(family(binary, right_positive=True, signs=True), rounding_mode=mode))
    entry(f'Tensor.div({mode})', method('div'), method('div'), NUMBERS, 1,
          with_args(family(binary, right_positive=True, signs=True), rounding_mode=mode))


def powers(dtype, slow):
    """x ** p for the powers whose derivatives need care at 0 (p = 0, 1.1, 0.5, -2, 3) and b ** x for
    the bases that do (0, a negative base, 2, 0.5), over x in [-2, 3] with 0 in it."""
    x = np.array([-2, -1, 0, 1, 2, 3]).astype(dtype)
    return ([Sample((x, p), note=f'x ** {p}') for p in (0, 1.1, 0.5, -2, 3)]
            + [Sample((base, x), note=f'{base} ** x') for base in (0, -2.0, 2, 0.5)])


entry('pow(number)', function('pow'), function('pow'), ALL, 2, powers)
both('outer', ALL, 2, lambda dtype, slow: [
    Sample((arr((3,), dtype), arr((4,), dtype, 1)), note='3 x 4'), Sample((arr((0,), dtype), arr((2,), dtype, 1)), note='empty'),
    Sample((extremes(dtype), extremes(dtype)[:3]), note='extremes'),
    Sample((arr((3,), dtype), arr((2,), 'float32', 1)), note='with float32'),
    Sample((arr((2, 3), dtype), arr((2,), dtype, 1)), note='misfit')])
entry('Tensor.type_as', method('type_as'), method('type_as'), ALL, 2, lambda dtype, slow: [
    Sample((arr((2, 3), dtype), arr((2,), other)), note=f'as {other}') for other in ('float32', 'int64', 'bool')])
# comparisons: bool results, no gradient
for name in ('eq', 'ne', 'lt', 'le', 'gt', 'ge'):
    entry(f'Tensor.__{name}__', method(f'__{name}__'), method(f'__{name}__'), ALL, 0, family(binary))


def close_samples(dtype, slow):
    """binary's, and the edges of a tolerance: just inside and outside it, inf against inf, nan, 0 against 1e-9,
    under each of four options."""
    out = binary(dtype, slow, scalar=False)
    if dtype in FLOATS:
        a = np.array([1.0, 1.0 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 0.0], dtype)
        b = np.array([1.0, 1.0, 1.0, np.inf, np.inf, np.nan, 1e-9], dtype)
        out += [Sample((a, b), options, note=f'edges {options}')
                for options in ({}, dict(equal_nan=True), dict(rtol=0.2), dict(atol=0.0, rtol=0.0))]
    return out


for name in ('isclose', 'allclose'):
    both(name, ALL, 0, close_samples)
    entry(f'{name}(equal_nan)', function(name), function(name), ALL, 0,
          with_args(family(binary, scalar=False), rtol=0.1, atol=0.5, equal_nan=True))

# reductions
def logsumexp_samples(dtype, slow):
    """reduction's (a dim given), and rows far from 0 and of -inf: the max is taken out first."""
    out = reduction(dtype, slow, need_dim=True)
    if dtype in ('float32', 'float64'):
        far = np.array([[1e3, 1e3 - 1, -1e3], [-1e3, -1e3, -1e3 + 2], [-np.inf, 0, 1], [-np.inf] * 3], dtype)
        out += [Sample((far, dim), note=f'far, dim {dim}') for dim in (1, 0, (0, 1))]
    return out


for name, dtypes, opts in (('sum', ALL, {}), ('mean', FLOATS, {}), ('amax', ALL, dict(empty=False)),
                           ('amin', ALL, dict(empty=False)), ('logsumexp', ALL, dict(need_dim=True)),
                           ('any', ALL, {}), ('all', ALL, {})):
    samples = family(reduction, **opts)
    if name == 'logsumexp':
        samples = logsumexp_samples
    both(name, dtypes, 2 if name not in ('any', 'all') else 0, samples,
         beyond=INTS + ('bool',) if name == 'mean' else ())
for name in ('var', 'std'):
    both(name, FLOATS, 2, family(reduction), beyond=INTS + ('bool',))
    m = method(name)
    entry(f'Tensor.{name}(correction=0)', m, m, FLOATS, 2, with_args(family(reduction), correction=0),
          beyond=INTS + ('bool',))
for name in ('max', 'min'):  # max(x) is a value; max(x, dim) the tuple (values, indices)
    both(name, ALL, 2, family(reduction, multi=False, empty=False))
    entry(f'Tensor.{name}(other)', method(name), method(name), ALL, 2, family(binary, scalar=False))
for name in ('argmax', 'argmin'):
    both(name, NUMBERS, 0, family(reduction, multi=False, empty=False))
def norm_samples(dtype, slow):
    """reduction's, and a row of zeros (the norm is 0 there: its gradient is 0, not nan)."""
    zeros = np.array([[0, 0, 0], [3, -4, 0]]).astype(dtype)
    return reduction(dtype, slow) + [Sample((zeros,), dict(dim=1), note='zeros')]


for p in (2, 1, float('inf'), 0, 3):
    m = method('norm')
    entry(f'Tensor.norm(p={p})', m, m, FLOATS, 2, with_args(norm_samples, p=p))
entry('Tensor.norm', method('norm'), method('norm'), FLOATS, 2, norm_samples)
entry('Tensor.sum_to', method('sum_to'), method('sum_to_size'), ALL, 2, lambda dtype, slow: shaped(dtype, slow, [
    ((2, 3, 4), [(3, 1)], {}, '(2,3,4) to (3,1)'), ((2, 3), [(1, 3)], {}, 'to (1,3)'), ((2, 3), [(2, 3)], {}, 'same')]))

# along one dim
def scan_samples(dtype, slow):
    """along_dim's, and exact zeros (cumprod's gradient skips x_i rather than divide by it)."""
    zeros = np.array([[0, 2, 3, 1], [2, 0, 0, 3], [1, 2, 3, 0]], dtype)
    return along_dim(dtype, slow) + [Sample((zeros, 1), note='zeros, dim 1'), Sample((zeros, 0), note='zeros, dim 0')]


for name in ('cumsum', 'cumprod'):
    both(name, ALL, 2, scan_samples)


def running_extreme_samples(dtype, slow):
    '''along_dim's, ties (the later place wins, as in PyTorch), and nan (it wins, and so does a later nan).'''
    ties = np.array([[1, 3, 3, 2, 5, 5], [2, 1, 1, 0, 4, 4]]).astype(dtype)
    out = along_dim(dtype, slow) + [Sample((ties, 1), note='ties, dim 1'), Sample((ties, 0), note='ties, dim 0')]
    if dtype in FLOATS:
        out.append(Sample((np.array([[1, np.nan, 3, np.nan, -np.inf, 2]], dtype), 1), note='nan, inf'))
    return out


for name in ('cummax', 'cummin'):
    both(name, ALL, 2, running_extreme_samples)
both('logcumsumexp', FLOATS, 2, lambda dtype, slow: along_dim(dtype, slow) + ([
    Sample((np.array([[-1000, 0, 1000], [5, -np.inf, 3]], dtype), 1), note='far apart, -inf')] if dtype in FLOATS else []))
entry('meshgrid', function('meshgrid'), function('meshgrid'), ALL, 2, lambda dtype, slow: [
    Sample((arr((3,), dtype), arr((2,), dtype, 1)), dict(indexing='ij'), note='ij'),
    Sample((arr((3,), dtype), arr((2,), dtype, 1), arr((4,), dtype, 2)), dict(indexing='xy'), note='xy, three'),
    Sample((arr((), dtype), arr((2,), dtype, 1)), dict(indexing='ij'), note='0-d'),
    Sample((arr((2, 2), dtype),), dict(indexing='ij'), note='misfit: 2-d')])
entry('Tensor.unfold', method('unfold'), method('unfold'), ALL, 2, lambda dtype, slow: [
    Sample((arr((2, 7), dtype), 1, 3, 2), note='windows of 3, step 2'), Sample((arr((2, 7), dtype), 1, 3, 1), note='overlap'),
    Sample((arr((5, 2, 3), dtype), 0, 2, 3), note='dim 0, gaps'), Sample((arr((2, 3), dtype), -1, 3, 1), note='one window'),
    Sample((arr((2, 3), dtype), 1, 4, 1), note='misfit: too large')])
def softmax_samples(dtype, slow):
    """along_dim's, a row with -inf and rows far from 0 (the max is taken out first)."""
    if dtype not in ('float32', 'float64'):
        return along_dim(dtype, slow)
    far = np.array([[-np.inf, 0], [1000, 0], [-1000, 3]], dtype)
    return along_dim(dtype, slow) + [Sample((far, -1), note='-inf, far')]


for name, torch_name in (('softmax', 'nn.functional.softmax'), ('log_softmax', 'nn.functional.log_softmax')):
    both(name, FLOATS, 2, softmax_samples, torch_name, beyond=INTS + ('bool',))
entry('masked_softmax', function('masked_softmax'),
      # PyTorch has no masked softmax: masked keys get -inf; a row with no key allowed is 0 here
      lambda torch, s, m: torch.where(m.any(-1, keepdim=True), torch.softmax(s.masked_fill(~m, -float('inf')), -1), 0),
      FLOATS, 2, lambda dtype, slow: [
          Sample((arr((2, 3, 4), dtype), arr((2, 3, 4), 'bool')), note='random mask'),
          Sample((arr((2, 3, 4), dtype), np.tril(np.ones((3, 4), bool))), note='causal mask, broadcast'),
          Sample((arr((2, 4), dtype), np.array([[True] * 4, [False] * 4])), note='a row with no key allowed'),
          Sample((arr((0, 4), dtype), np.ones(4, bool)), note='empty'),
          Sample((finite(dtype)[None, :], np.ones(len(finite(dtype)), bool)), note='finite extremes')],
      beyond=INTS + ('bool',))

# shapes
SHAPE_CALLS = {
    'reshape': [((2, 3, 4), [(4, -1)], {}, '-1'), ((2, 3), [(6,)], {}, 'flat'), ((), [(1, 1)], {}, '0-d'),
                ((0, 3), [(3, 0)], {}, 'empty'), ((1,), [()], {}, 'to 0-d'), ((2, 3), [(4,)], {}, 'misfit')],
    'permute': [((2, 3, 4), [(2, 0, 1)], {}, 'cycle'), ((2, 3, 4), [(-1, 0, 1)], {}, 'negative'), ((), [()], {}, '0-d'),
                ((2, 3), [(0,)], {}, 'misfit')],
    'transpose': [((2, 3, 4), [0, 2], {}, '0,2'), ((2, 3), [-1, -2], {}, 'negative'), ((0, 3), [0, 1], {}, 'empty'),
                  ((2, 3), [0, 2], {}, 'misfit')],
    'swapaxes': [((2, 3, 4), [0, 2], {}, '0,2'), ((2, 3), [-1, 0], {}, 'negative'), ((2, 3), [0, 2], {}, 'misfit')],
    'unsqueeze': [((2, 3), [0], {}, '0'), ((2, 3), [-1], {}, '-1'), ((), [0], {}, '0-d'), ((0,), [1], {}, 'empty'),
                  ((2, 3), [3], {}, 'misfit')],
    'squeeze': [((1, 3, 1), [], {}, 'all'), ((1, 3, 1), [-1], {}, '-1'), ((2, 3), [0], {}, 'size 2 stays'),
                ((1, 3, 1), [(0, 2)], {}, 'a tuple'), ((), [], {}, '0-d')],
    'flatten': [((2, 3, 4), [], {}, 'all'), ((2, 3, 4), [1], {}, 'from 1'), ((2, 3, 4), [0, -2], {}, '0 to -2'),
                ((), [], {}, '0-d'), ((2, 3), [2], {}, 'misfit')],
    'unflatten': [((2, 12), [1, (3, 4)], {}, '(3,4)'), ((2, 12), [-1, (-1, 2)], {}, '-1'), ((0, 4), [1, (2, 2)], {}, 'empty'),
                  ((2, 12), [1, (5, 2)], {}, 'misfit')],
    'broadcast_to': [((3, 1), [(2, 3, 4)], {}, 'new dims'), ((), [(2, 2)], {}, '0-d'), ((1, 0), [(3, 0)], {}, 'empty'),
                     ((3, 2), [(3, 3)], {}, 'misfit')],
    'chunk': [((5, 2), [2], {}, 'uneven'), ((2, 6), [3, 1], {}, 'dim 1'), ((2, 6), [4, -1], {}, 'fewer pieces')],
    'split': [((5, 2), [2], {}, 'size 2'), ((2, 6), [[1, 5], 1], {}, 'sections'), ((2, 6), [4, -1], {}, 'negative dim'),
              ((0, 2), [1], {}, 'empty'), ((2, 6), [[1, 2], 1], {}, 'misfit')],
    'roll': [((2, 3), [1], {}, 'flat'), ((2, 3), [-1, 1], {}, 'dim 1'), ((2, 3, 4), [(1, 5), (0, -1)], {}, 'two dims'),
             ((2, 3), [(1, 2), (0,)], {}, 'misfit')],
    'flip': [((2, 3), [(0,)], {}, '0'), ((2, 3, 4), [(0, -1)], {}, 'two, negative'), ((0, 3), [(1,)], {}, 'empty'),
             ((2, 3), [(2,)], {}, 'misfit')],
    'unbind': [((2, 3), [], {}, 'dim 0'), ((2, 3, 4), [-1], {}, 'dim -1'), ((0, 3), [1], {}, 'empty'),
               ((2, 3), [2], {}, 'misfit')],
    'tril': [((3, 4), [], {}, 'main'), ((3, 4), [1], {}, '+1'), ((2, 3, 4), [-1], {}, 'batched -1'),
             ((3, 4), [-5], {}, 'all zero')],
}
SHAPE_CALLS['triu'] = SHAPE_CALLS['tril']
for name, calls in SHAPE_CALLS.items():
    def samples(dtype, slow, calls=calls):
        return shaped(dtype, slow, calls)
    both(name, ALL, 2, samples)
    if name == 'reshape':
        entry('Tensor.view', method('view'), method('reshape'), ALL, 2, samples)
# numpy's name of unsqueeze
entry('expand_dims', lambda mt, x, d: mt.expand_dims(x, d), lambda torch, x, d: x.unsqueeze(d), ALL, 2,
      lambda dtype, slow: shaped(dtype, slow, SHAPE_CALLS['unsqueeze']))
entry('Tensor.expand_dims', method('expand_dims'), lambda torch, x, d: x.unsqueeze(d), ALL, 2,
      lambda dtype, slow: shaped(dtype, slow, SHAPE_CALLS['unsqueeze']))
entry('Tensor.expand', method('expand'), method('expand'), ALL, 2, lambda dtype, slow: shaped(dtype, slow, [
    ((3, 1), [2, 3, 4], {}, 'new dims'), ((3, 1), [-1, 5], {}, '-1 keeps'), ((), [2], {}, '0-d')]))
entry('Tensor.t', method('t'), method('t'), ALL, 2, lambda dtype, slow: shaped(dtype, slow, [
    ((2, 3), [], {}, 'matrix'), ((3,), [], {}, 'vector'), ((), [], {}, '0-d')]))
for name in ('T', 'mT'):  # properties
    prop = (lambda name: lambda lib, x: getattr(x, name))(name)
    entry(f'Tensor.{name}', prop, prop, ALL, 2, lambda dtype, slow: shaped(dtype, slow, [
        ((2, 3), [], {}, 'matrix'), ((2, 3, 4), [], {}, 'batch'), ((0, 3), [], {}, 'empty')]))
entry('Tensor.size', method('size'), method('size'), ALL, 0, lambda dtype, slow: shaped(dtype, slow, [
    ((2, 3), [], {}, 'all'), ((2, 3), [-1], {}, '-1'), ((), [], {}, '0-d')]))
entry('Tensor.dim', method('dim'), method('dim'), ALL, 0, family(unary))
both('numel', ALL, 0, family(unary))
for name, gen in (('cat', 0), ('concatenate', 0), ('stack', 1)):
    def cat_samples(dtype, slow, gen=gen):
        a = lambda shape, seed: arr(shape, dtype, seed)  # noqa: E731
        out = [Sample(([a((2, 3), 0), a((2, 3), 1)],), note='two'),
               Sample(([a((2, 3), 0), a((2, 3), 1)], -1), note='dim -1'),
               Sample(([a((2, 3), 0)], 1), note='one'),
               Sample(([a((0, 3), 0), a((0, 3), 1)], 0), note='empty')]
        if not gen:
            out.append(Sample(([a((2, 3), 0), a((0, 3), 1), a((1, 3), 2)],), note='sizes differ'))
        else:
            out.append(Sample(([a((), 0), a((), 1)],), note='0-d'))
        out.append(Sample(([a((2, 3), 0), a((2, 4), 1)], 0), note='shapes that do not fit'))
        return out
    entry(name, function(name), function(name), ALL, 2, cat_samples)

# selection, indexing, gathering
entry('where', function('where'), function('where'), ALL, 2, lambda dtype, slow: [
    Sample((arr((2, 3), 'bool'), arr((2, 3), dtype), arr((2, 3), dtype, 1)), note='same shape'),
    Sample((arr((2, 1), 'bool'), arr((3,), dtype), arr((2, 3), dtype, 1)), note='broadcast'),
    Sample((arr((0, 3), 'bool'), arr((0, 3), dtype), arr((3,), dtype, 1)), note='empty'),
    Sample((np.array([True, False] * 5 + [True])[: len(extremes(dtype))], extremes(dtype), extremes(dtype)[::-1]),
           note='extremes')])
for name in ('masked_fill', 'Tensor.masked_fill', 'Tensor.masked_fill_'):
    call = function('masked_fill') if name == 'masked_fill' else method('masked_fill') if name.endswith('fill') \
        else (lambda lib, x, m, v: x.clone().masked_fill_(m, v))
    entry(name, call, call, ALL, 2, lambda dtype, slow: [
        Sample((arr((2, 3), dtype), arr((2, 3), 'bool'), 1), note='same shape'),
        Sample((arr((2, 3), dtype), arr((3,), 'bool'), 0), note='broadcast mask'),
        Sample((arr((0, 3), dtype), arr((3,), 'bool'), 1), note='empty'),
        Sample((View(arr((3, 2), dtype), 'T'), arr((2, 3), 'bool'), 1), note='transposed')]
        + ([Sample((arr((2, 3), dtype), arr((2, 3), 'bool'), float('-inf')), note='-inf')] if dtype in FLOATS else []))
for name in ('gather', 'Tensor.gather'):
    entry(name, function('gather') if name == 'gather' else method('gather'),
          lambda torch, x, d, i: torch.gather(x, d, i.long()), ALL, 2, lambda dtype, slow: [
              Sample((arr((3, 4), dtype), 1, np.array([[0, 0, 3], [1, 2, 1], [3, 3, 3]])), note='duplicates, dim 1'),
              Sample((arr((3, 4), dtype), -2, np.array([[0, 2, 2, 1]], 'int32')), note='dim -2, int32 ids'),
              Sample((arr((3, 4), dtype), 0, np.zeros((0, 4), 'int64')), note='empty index'),
              Sample((arr((3, 4), dtype), 1, np.array([0, 1])), note='index of fewer dims')])


def topk_samples(dtype, slow):
    """Distinct values (the order of ties is PyTorch's own), both directions, each dim, k = 0, 0-d, nan, misfit."""
    x = np.array([[3, 1, 4, 0, 2], [7, 5, 6, 9, 8]]).astype(dtype)
    out = [Sample((x, 2), note='k=2'), Sample((x, 3), dict(largest=False), note='smallest 3'),
           Sample((x, 1), dict(dim=0), note='dim 0'), Sample((x, 0), note='k=0'),
           Sample((View(np.ascontiguousarray(x.T), 'T'), 2), dict(sorted=False), note='transposed, sorted=False'),
           Sample((np.array(5).astype(dtype), 1), note='0-d'), Sample((x, 6), note='misfit')]
    if dtype in FLOATS:
        out.append(Sample((np.array([[1, 5, np.nan, 3], [4, -1, 2, -np.inf]], dtype), 2), note='nan, -inf'))
    return out


both('topk', NUMBERS, 2, topk_samples)


def scatter_reduce_samples(reduce):
    """Repeated indices (several values reduced into one place), places nothing is sent to, both include_self."""
    def samples(dtype, slow):
        x, src = arr((3, 4), dtype), arr((3, 5), dtype, 1)
        index = np.array([[0, 1, 1, 3, 1], [2, 2, 2, 2, 0], [3, 0, 1, 1, 3]])
        return [Sample((x, 1, index, src, reduce), note='dim 1'),
                Sample((x, 1, index, src, reduce), dict(include_self=False), note='without self'),
                Sample((x, 0, index[:2, :4] % 3, src[:2, :4], reduce), note='dim 0'),
                Sample((x, 1, np.zeros((3, 0), 'int64'), src[:, :0], reduce), note='nothing sent')]
    return samples


for reduce in ('sum', 'mean', 'amax', 'amin'):
    both_name = f'scatter_reduce({reduce})'
    dtypes = NUMBERS if reduce == 'mean' else ALL
    entry(both_name, function('scatter_reduce'),
          lambda torch, x, d, i, s, r, **k: torch.scatter_reduce(x, d, i.long(), s, r, **k), dtypes, 2,
          scatter_reduce_samples(reduce))
    entry(f'Tensor.{both_name}', method('scatter_reduce'),
          lambda torch, x, d, i, s, r, **k: x.scatter_reduce(d, i.long(), s, r, **k), dtypes, 2,
          scatter_reduce_samples(reduce))


def sort_samples(dtype, slow):
    """Ties (kept in order both ways, as PyTorch's stable sort), each direction and dim, 0-d, nan and inf."""
    x = np.array([[3, 1, 4, 1, 2], [7, 5, 5, 9, 5]]).astype(dtype)
    out = [Sample((x,), note='ties'), Sample((x,), dict(descending=True), note='descending, ties'),
           Sample((x,), dict(dim=0, descending=True, stable=True), note='dim 0'),
           Sample((View(np.ascontiguousarray(x.T), 'T'),), note='transposed'), Sample((np.array(5).astype(dtype),),
                                                                                  note='0-d'),
           Sample((np.zeros((0, 3), dtype),), note='empty'), Sample((x,), dict(dim=2), note='misfit dim')]
    if dtype in FLOATS:
        special = np.array([[1, np.nan, -np.inf, 3, np.nan], [np.inf, -1, 2, -np.inf, 0]], dtype)
        out += [Sample((special,), note='nan, inf'), Sample((special,), dict(descending=True), note='nan, inf, desc')]
    return out


both('sort', ALL, 2, sort_samples)
both('argsort', ALL, 0, sort_samples)


def kthvalue_samples(dtype, slow):
    x = np.array([[3, 1, 4, 0, 2], [7, 5, 6, 9, 8]]).astype(dtype)
    return [Sample((x, 2), note='k=2'), Sample((x, 1), dict(dim=0, keepdim=True), note='dim 0, keepdim'),
            Sample((x, 5), note='k = n'), Sample((np.array(5).astype(dtype), 1), note='0-d'),
            Sample((x, 6), note='misfit k'), Sample((x, 0), note='k = 0')]


both('kthvalue', NUMBERS, 2, kthvalue_samples)


def masked_select_samples(dtype, slow):
    x = arr((2, 3), dtype)
    mask = np.array([[True, False, True], [False, False, True]])
    return [Sample((x, mask), note='2x3'), Sample((x, mask[0]), note='mask broadcast'),
            Sample((arr((3,), dtype), mask), note='x broadcast'), Sample((x, np.zeros((2, 3), bool)), note='none'),
            Sample((x, np.ones((2, 3), bool)[:, :2]), note='misfit')]


both('masked_select', ALL, 2, masked_select_samples)
both('nonzero', ALL, 0, lambda dtype, slow: [
    Sample((np.array([[0, 1, 0], [2, 0, 3]]).astype(dtype),), note='2x3'), Sample((np.zeros((2, 3), dtype),), note='none'),
    Sample((np.array([0, 1, 1]).astype(dtype),), dict(as_tuple=True), note='as_tuple'),
    Sample((np.zeros((0, 2), dtype),), note='empty')])


def repeat_samples(dtype, slow):
    x = arr((2, 3), dtype)
    return [Sample((x, 2, 3), note='2, 3'), Sample((x, 2, 1, 1), note='a new dim'), Sample((x, (1, 2)), note='a tuple'),
            Sample((arr((3,), dtype), 3), note='1-d'), Sample((x, 0, 2), note='zero copies'),
            Sample((np.array(2).astype(dtype), 3), note='0-d'), Sample((x, 2), note='too few counts')]


entry('Tensor.repeat', method('repeat'), method('repeat'), ALL, 2, repeat_samples)
both('tile', ALL, 2, lambda dtype, slow: [
    Sample((arr((2, 3), dtype), (2,)), note='fewer dims'), Sample((arr((2, 3), dtype), (2, 1, 2)), note='more dims'),
    Sample((arr((3,), dtype), (0,)), note='zero copies')])


def repeat_interleave_samples(dtype, slow):
    x = arr((2, 3), dtype)
    return [Sample((x, 2), note='all, flattened'), Sample((x, 2), dict(dim=0), note='dim 0'),
            Sample((x, np.array([1, 0, 3])), dict(dim=1), note='counts per entry'),
            Sample((x, np.array([2])), dict(dim=-1), note='one count in a tensor'),
            Sample((np.array(4).astype(dtype), 3), note='0-d'), Sample((x, np.array([1, 2])), dict(dim=1), note='misfit')]


both('repeat_interleave', ALL, 2, repeat_interleave_samples)


def diagonal_samples(dtype, slow):
    x = arr((3, 4), dtype)
    return [Sample((x,), note='3x4'), Sample((x, 1), note='above'), Sample((x, -2), note='below'),
            Sample((x, 5), note='beyond: empty'), Sample((arr((2, 3, 4), dtype), 0, 2, 0), note='3-d, dims 2, 0'),
            Sample((arr((2, 3, 4), dtype), -1, -1, 1), note='negative dims'), Sample((arr((3,), dtype),), note='1-d')]


both('diagonal', ALL, 2, diagonal_samples)
both('diag', ALL, 2, lambda dtype, slow: [
    Sample((arr((3,), dtype),), note='1-d'), Sample((arr((3,), dtype), 1), note='1-d above'),
    Sample((arr((3, 4), dtype), -1), note='2-d below'), Sample((arr((2, 3, 4), dtype),), note='3-d')])
both('diag_embed', ALL, 2, lambda dtype, slow: [
    Sample((arr((2, 3), dtype),), note='2x3'), Sample((arr((2, 3), dtype), 1), note='above'),
    Sample((arr((2, 3), dtype), -1, 0, 2), note='dims 0, 2'), Sample((arr((3,), dtype),), note='1-d')])


def prod_samples(dtype, slow):
    """All of it, each dim, keepdim; zeros (the gradient skips x_i rather than divide by it)."""
    x = arr((2, 3), dtype)
    zeros = np.array([[0, 2, 3], [2, 0, 0]]).astype(dtype)
    return [Sample((x,), note='all'), Sample((x, 1), note='dim 1'), Sample((x, 0), dict(keepdim=True), note='dim 0 keep'),
            Sample((zeros, 1), note='zeros, dim 1'), Sample((zeros,), note='zeros, all'),
            Sample((np.array(3).astype(dtype),), note='0-d'), Sample((np.zeros((0, 3), dtype), 0), note='empty'),
            Sample((x, 2), note='misfit dim')]


both('prod', ALL, 2, prod_samples)
for name in ('std_mean', 'var_mean'):
    entry(name, function(name), function(name), FLOATS, 2, beyond=INTS + ('bool',), samples=lambda dtype, slow: [
        Sample((arr((3, 4), dtype),), note='all'), Sample((arr((3, 4), dtype), 1), note='dim 1'),
        Sample((arr((3, 4), dtype), 0), dict(keepdim=True, correction=0), note='dim 0, correction 0')])
for name in ('scatter', 'Tensor.scatter', 'scatter_add', 'Tensor.scatter_add'):
    op = name.split('.')[-1]
    entry(name, function(op) if '.' not in name else method(op),
          (lambda op: lambda torch, x, d, i, s: getattr(torch, op)(x, d, i.long(), s))(op), ALL, 2,
          lambda dtype, slow, op=op: [
              Sample((arr((3, 4), dtype), 1, np.array([[0, 3], [1, 2], [3, 0]]), arr((3, 2), dtype, 1)), note='dim 1'),
              Sample((arr((3, 4), dtype), -2, np.array([[0, 2, 1, 0]]), arr((1, 4), dtype, 1)), note='dim -2')]
          + ([Sample((arr((3, 4), dtype), 1, np.array([[0, 0], [1, 1], [2, 2]]), arr((3, 2), dtype, 1)),
                     note='duplicate indices')] if op == 'scatter_add' else
             [Sample((arr((3, 4), dtype), 1, np.array([[2], [0], [1]]), 5), note='a number')]))
entry('one_hot', function('one_hot'),  # ids of every integer dtype, as for x[ids]; PyTorch's one_hot takes int64 only
      lambda torch, i, *n: torch.nn.functional.one_hot(i.long() if i.dtype in (torch.int32, torch.uint8) else i, *n),
      INTS, 0,
      lambda dtype, slow: [Sample((np.array([0, 2, 1, 2], dtype),), note='inferred'),
                           Sample((np.array([[0], [3]], dtype), 5), note='5 classes'),
                           Sample((np.array(1, dtype), 2), note='0-d'),
                           Sample((np.zeros(0, dtype), 3), note='empty')])
entry('pad', function('pad'), lambda torch, *a, **k: torch.nn.functional.pad(*a, **k), ALL, 2,
      lambda dtype, slow: shaped(dtype, slow, [
          ((2, 3), [(1, 2)], {}, 'last axis'), ((2, 3), [(1, 0, 0, 2)], dict(value=1), 'two axes, value'),
          ((2, 3), [(-1, 1)], {}, 'negative pad'), ((2, 3), [(-2, -1)], {}, 'cut to 0'),
          ((0, 3), [(1, 1, 1, 1)], {}, 'empty'), ((2, 3), [(1, 1) * 3], {}, 'misfit')]))
for mode in ('reflect', 'replicate', 'circular'):
    entry(f'pad({mode})', function('pad'), lambda torch, *a, **k: torch.nn.functional.pad(*a, **k),
          ALL if mode == 'circular' else NUMBERS, 2,
          (lambda mode: lambda dtype, slow: shaped(dtype, slow, [
              ((2, 5), [(1, 2)], dict(mode=mode), 'last dim'), ((2, 3, 4), [(2, 1, 1, 2)], dict(mode=mode), 'two dims'),
              ((1, 2, 3, 4, 3), [(1, 0, 0, 1, 2, 2)], dict(mode=mode), 'three dims'),
              ((2, 3), [(3, 3)], dict(mode=mode), 'wider than the dim'),
              ((2, 3, 4, 5), [(1, 1)], dict(mode=mode), 'too many dims')]))(mode))
EINSUMS = [('bij,bjk->bik', [(2, 2, 3), (2, 3, 1)]), ('ij->', [(2, 3)]), ('ij->i', [(2, 3)]),
           ('i,j->ij', [(2,), (3,)]), ('bhqd,bhkd->bhqk', [(1, 2, 3, 2), (1, 2, 4, 2)]),
           ('ij,jk,kl->il', [(2, 2), (2, 3), (3, 2)]), ('ij,ij->ij', [(2, 3), (2, 3)]), ('ijk', [(2, 1, 3)]),
           ('ba,ac', [(2, 3), (3, 2)]),
           # broadcasting: '...' and size-1 axes
           ('...ij,...jk->...ik', [(2, 1, 3, 4), (5, 4, 2)]), ('...ij,jk', [(2, 3, 4), (4, 2)]),
           ('i...->...', [(2, 3, 4)]), ('bij,bjk->bik', [(1, 2, 3), (4, 3, 2)]), ('...,...', [(3,), (2, 1)]),
           ('bhqd,bhkd->bhqk', [(2, 1, 3, 2), (1, 2, 4, 2)])]
entry('einsum', function('einsum'), function('einsum'), ALL, 2, lambda dtype, slow: [
    Sample(('ij,jk->ik', arr((2, 3), dtype), arr((3, 4), dtype, 1)), note='matmul'),
    Sample(('bij->bji', arr((2, 3, 4), dtype)), note='transpose'),
    Sample(('ii->i', arr((3, 3), dtype)), note='diagonal'), Sample(('ii', arr((3, 3), dtype)), note='trace'),
    Sample(('iji->j', arr((2, 3, 2), dtype)), note='diagonal summed'),
    Sample(('i,i->', arr((3,), dtype), arr((3,), dtype, 1)), note='dot'),
    Sample(('...j,j->...', arr((2, 3), dtype), arr((3,), dtype, 1)), note='ellipsis'),
    *[Sample((eq,) + tuple(arr(shape, dtype, i) for i, shape in enumerate(shapes)), note=eq) for eq, shapes in EINSUMS],
    Sample(('ij->', arr((0, 3), dtype)), note='empty sum'),
    Sample(('ij,jk->ik', arr((2, 3), dtype), arr((4, 2), dtype, 1)), note='sizes that do not fit')])
entry('Tensor.__getitem__', method('__getitem__'), method('__getitem__'), ALL, 2, lambda dtype, slow: [
    Sample((arr((3, 4), dtype), 1), note='int'), Sample((arr((3, 4), dtype), -1), note='negative int'),
    Sample((arr((3, 4), dtype), (slice(None), slice(1, None, 2))), note='strided slice'),
    Sample((arr((3, 4), dtype), (None, Ellipsis, 0)), note='None, ...'),
    Sample((arr((3, 4), dtype), np.array([0, 2, 0])), note='duplicate ids'),
    Sample((arr((3, 4), dtype), arr((3, 4), 'bool')), note='mask'),
    Sample((arr((2, 3, 4), dtype), (1, slice(None), np.array([0, 3]))), note='int and ids (PyTorch\'s shape)'),
    Sample((arr((3, 4), dtype), slice(5, 9)), note='empty slice')])


def _setitem(lib, x, index, value):
    y = x.clone()
    y[index] = value
    return y


entry('Tensor.__setitem__', _setitem, _setitem, ALL, 2, lambda dtype, slow: [
    Sample((arr((3, 4), dtype), 1, arr((4,), dtype, 1)), note='a row'),
    Sample((arr((3, 4), dtype), (slice(None), slice(1, None, 2)), arr((3, 1), dtype, 1)), note='strided, broadcast'),
    Sample((arr((3, 4), dtype), arr((3, 4), 'bool'), 1), note='mask, number'),
    Sample((arr((3, 4), dtype), np.array([2, 0]), arr((2, 4), dtype, 1)), note='ids')])
for name in ('fill_', 'zero_'):
    call = (lambda name: lambda lib, x, *a: getattr(x.clone(), name)(*a))(name)
    entry(f'Tensor.{name}', call, call, ALL, 1, with_args(family(unary), *((1,) if name == 'fill_' else ())))
entry('Tensor.copy_', lambda lib, x, y: x.clone().copy_(y), lambda lib, x, y: x.clone().copy_(y), ALL, 2,
      lambda dtype, slow: [s for s in binary(dtype, slow, scalar=False, extremes_both=False)
                           if s.note in ('same shape', 'broadcast (2,3) (3,)', 'transposed')])

# nn
for name in ('linear',):
    entry(name, function('linear'), function('linear', 'nn.functional.linear'), NUMBERS, 2, lambda dtype, slow: [
        Sample((arr((2, 3), dtype), arr((4, 3), dtype, 1), arr((4,), dtype, 2)), note='bias'),
        Sample((arr((2, 5, 3), dtype), arr((4, 3), dtype, 1)), note='batched, no bias'),
        Sample((arr((0, 3), dtype), arr((4, 3), dtype, 1), arr((4,), dtype, 2)), note='empty'),
        Sample((arr((2, 3), dtype), arr((4, 5), dtype, 1)), note='shapes that do not fit')])
def normalising(name, dims=1):
    """lib.<name>(x, normalized_shape, *parameters) over x's last `dims` dims, in both libraries."""
    return lambda lib, x, *params, **k: getattr(lib, name)(x, x.shape[x.ndim - dims:], *params, **k)


entry('layer_norm', normalising('layer_norm'), normalising('layer_norm'), FLOATS, 2,
      lambda dtype, slow: [
          Sample((arr((2, 3, 4), dtype), arr((4,), dtype, 1), arr((4,), dtype, 2)), note='3-d'),
          Sample((arr((2, 4), dtype), np.zeros(4, dtype), arr((4,), dtype, 2)), dict(eps=1e-3), note='zero weights'),
          Sample((np.ones((2, 4), dtype), arr((4,), dtype, 1), arr((4,), dtype, 2)), note='constant rows'),
          Sample((View(arr((4, 2), dtype), 'T'), arr((4,), dtype, 1), arr((4,), dtype, 2)), note='transposed'),
          Sample((arr((2, 4), dtype), arr((5,), dtype, 1), arr((5,), dtype, 2)), note='gamma that does not fit')]
      + at_scales(dtype, lambda x, note: Sample((x, np.full(7, 1.5, dtype), np.full(7, 0.25, dtype)), note=note))
      # float16 x with float32 parameters: PyTorch's one mix of dtypes (the result is float16)
      + at_scales(dtype, lambda x, note: Sample((x, np.full(7, 1.5, 'float32'), np.full(7, 0.25, 'float32')),
                                                note=f'{note}, float32 parameters'))[:2 if dtype == 'float16' else 0])
entry('layer_norm(normalized_shape)', normalising('layer_norm', 2), normalising('layer_norm', 2), FLOATS, 2,
      lambda dtype, slow: [
          Sample((arr((2, 3, 4), dtype), arr((3, 4), dtype, 1), arr((3, 4), dtype, 2)), note='two dims'),
          Sample((arr((2, 3, 4), dtype),), note='no weight, no bias'),
          Sample((arr((2, 3, 4), dtype), arr((3, 4), dtype, 1)), note='weight, no bias'),
          Sample((arr((3, 4), dtype), arr((4, 3), dtype, 1), arr((4, 3), dtype, 2)), note='weight that does not fit')])
entry('rms_norm', normalising('rms_norm'), normalising('rms_norm'), FLOATS, 2, lambda dtype, slow: [
    Sample((arr((2, 3, 4), dtype), arr((4,), dtype, 1)), note='3-d'),
    Sample((arr((2, 4), dtype),), dict(eps=1e-3), note='no weight'),
    Sample((np.zeros((2, 4), dtype), arr((4,), dtype, 1)), dict(eps=1e-6), note='zero rows'),
    Sample((View(arr((4, 2), dtype), 'T'), arr((4,), dtype, 1)), note='transposed'),
    Sample((arr((2, 4), dtype), arr((5,), dtype, 1)), note='weight that does not fit')]
    + at_scales(dtype, lambda x, note: Sample((x, np.full(7, 1.5, dtype)), note=note)))
entry('rms_norm(normalized_shape)', normalising('rms_norm', 2), normalising('rms_norm', 2), FLOATS, 2,
      lambda dtype, slow: [Sample((arr((2, 3, 4), dtype), arr((3, 4), dtype, 1)), note='two dims')])


def class_samples(dtype, slow):
    """Scores (..., C) with the class axis last (microtensor's layout; the twin moves it to 1, PyTorch's)."""
    t = np.array([0, 2, 1, 2], 'int64')
    return [Sample((arr((4, 3), dtype), t), note='(N, C)'),
            Sample((arr((2, 2, 3), dtype), t.reshape(2, 2)), note='(N, T, C)'),
            Sample((arr((4, 3), dtype), t), dict(weight=np.array([0.0, 1.0, 2.0], dtype)), note='zero weight'),
            Sample((arr((4, 3), dtype), np.array([0, -100, 1, 2])), dict(ignore_index=-100), note='ignore_index'),
            Sample((arr((4, 3), dtype), t), dict(reduction='sum'), note='sum'),
            Sample((arr((4, 3), dtype), t), dict(reduction='none'), note='none'),
            Sample((arr((0, 3), dtype), np.zeros(0, 'int64')), dict(reduction='sum'), note='empty'),
            Sample((arr((4, 3), dtype), t[:3]), note='targets that do not fit')] + \
        at_scales(dtype, lambda x, note: Sample((x, np.array([[1, 0, 4, 2, 3], [0, 0, 1, 4, 2]])), note=note))


def class_last(torch_fn):
    def twin(torch, x, t, **k):
        if x.ndim > 2:
            x = x.movedim(-1, 1)
            t = t.movedim(-1, 1) if t.is_floating_point() else t  # probabilities: the class axis too
        return getattr(torch.nn.functional, torch_fn)(x, t if t.is_floating_point() else t.long(), **k)
    return twin


def cross_entropy_samples(dtype, slow):
    """class_samples, label smoothing with every option, and probabilities as targets."""
    t, w = np.array([0, 2, -100, 2]), np.array([0.5, 1.0, 2.0], dtype)
    p = np.abs(arr((4, 3), dtype, 3)) + 0.1
    p = (p / p.sum(-1, keepdims=True)).astype(dtype)
    return class_samples(dtype, slow) + [
        Sample((arr((4, 3), dtype), np.array([0, 2, 1, 2])), dict(label_smoothing=0.1), note='label smoothing'),
        Sample((arr((4, 3), dtype), np.array([0, 2, 1, 2])), dict(label_smoothing=1.0), note='label smoothing 1'),
        *[Sample((arr((4, 3), dtype), t), dict(weight=w, ignore_index=-100, label_smoothing=0.1, reduction=r),
                 note=f'weight, ignore_index, smoothing, {r}') for r in ('mean', 'sum', 'none')],
        *[Sample((arr((4, 3), dtype), p), dict(weight=w, label_smoothing=0.2, reduction=r),
                 note=f'probabilities, weight, smoothing, {r}') for r in ('mean', 'none')],
        Sample((arr((2, 2, 3), dtype), p.reshape(2, 2, 3)), note='probabilities (N, T, C)'),
        Sample((arr((3,), dtype), np.array(2)), note='one position (C,)')]


entry('cross_entropy', function('cross_entropy'), class_last('cross_entropy'), FLOATS, 2, cross_entropy_samples)
entry('nll_loss', function('nll_loss'), class_last('nll_loss'), FLOATS, 2, class_samples)


def class_second(samples):
    """The samples in PyTorch's layout, the class axis second (N, C, ...): F.cross_entropy's and F.nll_loss'."""
    def moved(a, like):
        return np.moveaxis(a, -1, 1) if isinstance(a, np.ndarray) and a.ndim > 2 and a.shape == like.shape else a

    def generate(dtype, slow):
        return [Sample((moved(s.args[0], s.args[0]), moved(s.args[1], s.args[0])) + s.args[2:], s.kwargs, s.note)
                for s in samples(dtype, slow)]
    return generate


def F(name):
    """microtensor.nn.functional.<name> and its twin torch.nn.functional.<name>."""
    def call(lib, *a, **k):
        return getattr(lib.nn.functional, name)(*a, **k)
    return call


entry('F.cross_entropy', F('cross_entropy'), F('cross_entropy'), FLOATS, 2, class_second(cross_entropy_samples))
entry('F.nll_loss', F('nll_loss'), F('nll_loss'), FLOATS, 2, class_second(class_samples))
entry('F.silu', F('silu'), F('silu'), FLOATS, 2, family(unary), beyond=INTS + ('bool',))
SIGNED = FLOATS + ('int64', 'int32')  # (hardtanh clips signed integers; PyTorch refuses its uint8)
for name in ('softplus', 'leaky_relu', 'elu', 'celu', 'selu', 'mish', 'hardtanh', 'relu6', 'hardsigmoid',
             'hardswish', 'logsigmoid', 'softsign'):
    entry(f'F.{name}', F(name), F(name), {'hardtanh': SIGNED, 'relu6': NUMBERS, 'softsign': NUMBERS}.get(name, FLOATS),
          1 if name == 'hardsigmoid' else 2, family(unary))  # (PyTorch has no second derivative of hardsigmoid)
for name, options in (('softplus', dict(beta=2.0, threshold=5.0)), ('leaky_relu', dict(negative_slope=0.2)),
                      ('elu', dict(alpha=0.5)), ('celu', dict(alpha=2.0)), ('hardtanh', dict(min_val=-2.0, max_val=0.5)),
                      ('softmin', dict(dim=-1)), ('softmin', dict(dim=0))):
    entry(f"F.{name}({', '.join(f'{k}={v}' for k, v in options.items())})", F(name), F(name),
          SIGNED if name == 'hardtanh' else FLOATS, 2, with_args(family(unary), **options))
def loss_samples(dtype, slow, kind='regression'):
    """(input, target) of one shape: 2x3, 0-d, 4-d, empty, each reduction; probabilities for 'probability'
    (binary_cross_entropy: p in [0, 1], and exactly 0 and 1), log-probabilities and probabilities for 'kl'."""
    rng = np.random.default_rng(7)
    kind = kind if dtype in FLOATS else 'regression'  # (integer and bool samples: for the refusal checks)

    def pair(shape, seed):
        if kind == 'regression':
            return arr(shape, dtype, seed), arr(shape, dtype, seed + 1)
        if kind == 'probability':
            return (rng.uniform(0.02, 0.98, shape).astype(dtype), rng.uniform(0, 1, shape).astype(dtype))
        logits = arr(shape, dtype, seed)
        q = np.exp(logits - logits.max(-1, keepdims=True)) if len(shape) else np.ones(shape, dtype)
        p = rng.dirichlet(np.ones(shape[-1]), shape[:-1]).astype(dtype) if len(shape) else np.ones(shape, dtype)
        return (np.log(q / q.sum(-1, keepdims=True)) if len(shape) else np.zeros(shape, dtype)).astype(dtype), p
    out = [Sample(pair((2, 3), 0), note='2x3'), Sample(pair((), 1), note='0-d'), Sample(pair((2, 1, 3, 2), 2), note='4-d'),
           Sample(pair((0, 3), 3), note='empty')]
    out += [Sample(pair((2, 3), 4), dict(reduction=r), note=r) for r in ('sum', 'none')]
    if kind == 'probability':
        out.append(Sample((np.array([0.0, 1.0, 0.0, 1.0], dtype), np.array([0.0, 1.0, 1.0, 0.0], dtype)),
                          note='p exactly 0 and 1'))
    if kind == 'kl':
        out.append(Sample((arr((2, 3), dtype, 5), np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]], dtype)),
                          note='targets with zeros'))
    return out


for name, kind, options in (('mse_loss', 'regression', {}), ('l1_loss', 'regression', {}),
                            ('smooth_l1_loss', 'regression', {}), ('smooth_l1_loss', 'regression', dict(beta=0.5)),
                            ('huber_loss', 'regression', dict(delta=0.3)),
                            ('binary_cross_entropy', 'probability', {}),
                            ('binary_cross_entropy_with_logits', 'regression', {}),
                            ('kl_div', 'kl', {}), ('kl_div', 'kl', dict(reduction='batchmean'))):
    label = f"F.{name}" + (f"({', '.join(f'{k}={v}' for k, v in options.items())})" if options else '')
    entry(label, F(name), F(name), FLOATS, 2, with_args(family(loss_samples, kind=kind), **options))
POS_WEIGHTED = (lambda lib, x, y, pos_weight: lib.nn.functional.binary_cross_entropy_with_logits(
    x, y, pos_weight=pos_weight.detach()))  # (PyTorch has no gradient for pos_weight)
entry('F.binary_cross_entropy_with_logits(pos_weight)', POS_WEIGHTED, POS_WEIGHTED, FLOATS, 2,
      lambda dtype, slow: [Sample((arr((2, 3), dtype, 0), (arr((2, 3), dtype, 1) > 0).astype(dtype), arr((3,), dtype, 2, 0.1)),
                                  note='pos_weight per class')])
entry('F.normalize', F('normalize'), F('normalize'), FLOATS, 2, lambda dtype, slow: [
    Sample((arr((3, 4), dtype),), note='rows'), Sample((arr((3, 4), dtype),), dict(p=1.0, dim=0), note='p=1, dim 0'),
    Sample((np.zeros((2, 3), dtype),), note='zeros (eps)'), Sample((arr((2, 3, 4), dtype),), dict(dim=-1), note='3-d')])
def conv_samples(spatial):
    """(input, weight, bias) with each option: stride, padding (a number, per dim, 'same'), dilation, groups,
    no batch dim, and a weight that does not fit."""
    def samples(dtype, slow):
        size = (7, 6, 5)[:spatial]
        x, w, b = arr((2, 4) + size, dtype), arr((6, 4) + (3, 2, 2)[:spatial], dtype, 1), arr((6,), dtype, 2)
        w2 = arr((6, 2) + (3, 2, 2)[:spatial], dtype, 3)
        return [Sample((x, w, b), note='plain'), Sample((x, w), dict(stride=2), note='stride 2, no bias'),
                Sample((x, w, b), dict(padding=1), note='padding 1'),
                Sample((x, w, b), dict(padding=(1, 0, 1)[:spatial], dilation=(2, 1, 1)[:spatial]), note='dilation'),
                Sample((x, w2, b), dict(groups=2), note='groups 2'), Sample((x, w, b), dict(padding='same'), note='same'),
                Sample((x[0], w, b), note='no batch dim'), Sample((x, w2, b), note='misfit weight')]
    return samples


for spatial in (1, 2, 3):
    entry(f'F.conv{spatial}d', F(f'conv{spatial}d'), F(f'conv{spatial}d'), NUMBERS, 2, conv_samples(spatial))
entry('F.unfold', F('unfold'), F('unfold'), FLOATS + ('bool',), 2, lambda dtype, slow: [
    Sample((arr((2, 3, 5, 4), dtype), 2), note='kernel 2'),
    Sample((arr((2, 3, 5, 4), dtype), (3, 2)), dict(padding=1, stride=2, dilation=(1, 2)), note='every option')])
entry('F.fold', F('fold'), F('fold'), FLOATS + ('bool',), 2, lambda dtype, slow: [
    Sample((arr((2, 12, 12), dtype), (5, 4), 2), note='kernel 2'),
    Sample((arr((2, 12, 6), dtype), (5, 4), (2, 2)), dict(padding=1, stride=2), note='padding, stride')])


def pool_samples(spatial, average):
    def samples(dtype, slow):
        x = arr((2, 3) + (7, 6, 5)[:spatial], dtype)
        out = [Sample((x, 2), note='kernel 2'), Sample((x, 3), dict(stride=2, padding=1), note='stride 2, padding 1'),
               Sample((x, 3), dict(stride=2, ceil_mode=True), note='ceil_mode'),
               Sample((x[0], 2), note='no batch dim'), Sample((x, 3), dict(padding=2), note='misfit padding')]
        if average:
            out += [Sample((x, 3), dict(stride=2, padding=1, count_include_pad=False, ceil_mode=True),
                           note='count_include_pad False'), Sample((x, 2), dict(divisor_override=3), note='divisor')]
        else:
            out += [Sample((x, 3), dict(stride=1, padding=1, dilation=2), note='dilation'),
                    Sample((x, 2), dict(return_indices=True), note='indices')]
        return out
    return samples


entry('F.max_pool1d', F('max_pool1d'), F('max_pool1d'), FLOATS, 2, pool_samples(1, False))
entry('F.max_pool2d', F('max_pool2d'), F('max_pool2d'), NUMBERS, 2, pool_samples(2, False))
entry('F.avg_pool2d', F('avg_pool2d'), F('avg_pool2d'), FLOATS + ('int64',), 2, pool_samples(2, True))
entry('F.avg_pool3d', F('avg_pool3d'), F('avg_pool3d'), ('float32', 'float64', 'int64'), 2, pool_samples(3, True))
entry('F.quick_gelu', F('quick_gelu'), lambda torch, x: x * torch.sigmoid(1.702 * x), ALL, 2, family(unary))


def attention_samples(dtype, slow):
    """q (B, h, L, E), k (B, h, S, E), v (B, h, S, Ev) with each kind of mask, a scale, grouped heads, a
    query with no key left, and shapes that do not fit."""
    q, k, v = arr((1, 2, 3, 4), dtype), arr((1, 2, 5, 4), dtype, 1), arr((1, 2, 5, 6), dtype, 2)
    holes = np.ones((3, 5), bool)
    holes[1] = False  # query 1 sees no key: its output is 0, as PyTorch's
    added = np.where(arr((3, 5), 'float64', 3) > 0.5, -np.inf, arr((3, 5), 'float64', 4))
    added[2] = -np.inf
    return [Sample((q, k, v), note='plain'), Sample((q, k, v), dict(is_causal=True), note='causal'),
            Sample((q, k, v), dict(attn_mask=holes), note='bool mask, a row with no key'),
            *([Sample((q, k, v), dict(attn_mask=added.astype(dtype)), note='float mask with -inf rows')]
              if dtype in FLOATS else []),
            Sample((q, k, v), dict(scale=0.3), note='scale'),
            Sample((q, arr((1, 1, 5, 4), dtype, 1), arr((1, 1, 5, 6), dtype, 2)), dict(enable_gqa=True), note='gqa'),
            Sample((q[0, 0], k[0, 0], v[0, 0]), note='2-d'),
            Sample((q, k, v), dict(attn_mask=holes, is_causal=True), note='mask and is_causal'),
            Sample((q, k[..., :3], v), note='misfit')]


entry('F.scaled_dot_product_attention', F('scaled_dot_product_attention'), F('scaled_dot_product_attention'),
      FLOATS, 2, attention_samples)
entry('F.embedding', F('embedding'), lambda torch, ids, w, **k: torch.nn.functional.embedding(ids.long(), w, **k),
      ALL, 2, lambda dtype, slow: [
          Sample((np.array([[0, 2, 0], [5, 1, 4]]), arr((6, 3), dtype)), note='(2, 3) ids'),
          Sample((np.array(3), arr((6, 3), dtype)), note='0-d id'),
          Sample((np.zeros((0, 2), 'int64'), arr((6, 3), dtype)), note='empty'),
          Sample((np.array([[0, 2, 0], [5, 1, 4]]), arr((6, 3), dtype)), dict(padding_idx=0), note='padding_idx'),
          Sample((np.array([1, 6]), arr((6, 3), dtype)), note='an id out of range')])

# random ops: distribution and seeding (tests/test_op_registry.py, test_random_*)
RANDOM += [
    RandomEntry('rand', lambda mt, shape, dtype: mt.rand(*shape, dtype=dtype), FLOATS, 0.5, (1 / 12) ** 0.5),
    RandomEntry('randn', lambda mt, shape, dtype: mt.randn(*shape, dtype=dtype), FLOATS, 0.0, 1.0),
    RandomEntry('Tensor.normal_', lambda mt, shape, dtype: mt.zeros(*shape, dtype=dtype).normal_(2.0, 0.5), FLOATS,
                2.0, 0.5),
    RandomEntry('Tensor.uniform_', lambda mt, shape, dtype: mt.zeros(*shape, dtype=dtype).uniform_(-1.0, 3.0), FLOATS,
                1.0, (16 / 12) ** 0.5),
    RandomEntry('randint', lambda mt, shape, dtype: mt.randint(-3, 7, shape, dtype=dtype), ('int64', 'int32'),
                1.5, (99 / 12) ** 0.5),  # uniform on -3..6: mean 1.5, variance (10^2 - 1) / 12
    RandomEntry('dropout', lambda mt, shape, dtype: mt.dropout(mt.ones(*shape, dtype=dtype), 0.25), FLOATS,
                1.0, (1 / 3) ** 0.5),  # kept ones become 1/(1-p): mean 1, variance p / (1 - p)
    # class ids of 4 equal weights, with replacement: uniform on 0..3 (mean 1.5, variance (4^2 - 1) / 12)
    RandomEntry('multinomial', lambda mt, shape, dtype: mt.multinomial(mt.ones(shape[0], 4), shape[1], True),
                ('int64',), 1.5, (15 / 12) ** 0.5),
    # without replacement, weights 1, 2, 3, 4: the first draw is class i with probability (i + 1) / 10
    RandomEntry('Tensor.multinomial', lambda mt, shape, dtype: mt.tensor([[1.0, 2, 3, 4]]).expand(
        shape[0] * shape[1], 4).multinomial(2)[:, 0].reshape(shape), ('int64',), 2.0, 1.0),
]
for name, mean, std, kw in (('normal_', 1.0, 2.0, dict(mean=1.0, std=2.0)), ('uniform_', 0.0, 2 / 3 ** 0.5, dict(a=-2.0, b=2.0)),
                            ('xavier_uniform_', 0.0, (2 / 300) ** 0.5, {}), ('xavier_normal_', 0.0, (2 / 300) ** 0.5, {}),
                            ('glorot_uniform_', 0.0, (2 / 300) ** 0.5, {}), ('glorot_normal_', 0.0, (2 / 300) ** 0.5, {}),
                            ('kaiming_uniform_', 0.0, (2 / 200) ** 0.5, {}), ('kaiming_normal_', 0.0, (2 / 200) ** 0.5, {}),
                            ('he_uniform_', 0.0, (2 / 200) ** 0.5, {}), ('he_normal_', 0.0, (2 / 200) ** 0.5, {})):
    # a (100, 200) weight: fan_out 100, fan_in 200 in PyTorch's (n_out, n_in) layout
    RANDOM.append(RandomEntry(f'nn.init.{name}', (lambda name, kw: lambda mt, shape, dtype: getattr(mt.nn.init, name)(
        mt.zeros(*shape, dtype=dtype), **kw))(name, kw), FLOATS, mean, std))

RANDOM_SHAPE = (100, 200)  # the init entries' stds above assume it


# ------------------------------------------------------------------ calls PyTorch answers and microtensor refuses
def refused(name, call, why, *shapes):
    """An entry whose call PyTorch computes and microtensor refuses (float64 arrays of `shapes`)."""
    ENTRIES.append(Entry(name, call, call, ('float64',), 0,
                         lambda dtype, slow: [Sample(tuple(arr(s, dtype, i) for i, s in enumerate(shapes)))], refuses=why))


refused('Tensor.clamp(tensor bounds)', lambda lib, x, lo: x.clamp(min=lo), 'bounds are numbers', (3, 4), (4,))
refused('Tensor.exp_', lambda lib, x: (x * 1).exp_(), 'no exp_ yet', (3, 4))
refused('scatter_reduce(prod)', lambda lib, x, s: lib.scatter_reduce(x, 1, lib.zeros(3, 5, dtype=lib.long), s, 'prod'),
        "prod's gradient with zeros is not written here", (3, 4), (3, 5))
refused('Tensor.unsqueeze_', lambda lib, x: (x * 1).unsqueeze_(0), 'no unsqueeze_ yet', (3, 4))
refused('linspace', lambda lib: (lib.linspace(0, 1, 5), lib.linspace(5, -5, 3), lib.linspace(2, 3, 1)),
        'no linspace yet')
refused('trace(matrix)', lambda lib, x: lib.trace(x), "mt.trace records a graph: it is not PyTorch's trace", (3, 3))

# ------------------------------------------------------------------ deliberate differences
# Where README's table of deliberate differences says microtensor answers otherwise, the twin
# computes the documented answer with PyTorch's ops.
def _gelu_limits(torch, x, approximate='none'):
    """GELU far from 0 (|x| > 100, and at ±inf) is its limit, x or 0, with slope 1 or 0; PyTorch's
    formula gives gelu(-inf) = nan and a nan slope at ±inf."""
    far = x.abs() > 100
    return torch.where(far, torch.relu(x), torch.nn.functional.gelu(torch.where(far, 0, x), approximate=approximate))


ADAPTED = {'gelu': _gelu_limits, 'Tensor.gelu': _gelu_limits, 'Tensor.gelu(tanh)': _gelu_limits}
for e in ENTRIES:
    e.twin = ADAPTED.get(e.name, e.twin)

# the entries whose op the fused layer (microtensor/fused/) computes its own way when it is on:
# the registry checks them in both layers
FUSED = ('Tensor.sum_to', 'masked_softmax', 'linear', 'softmax', 'Tensor.softmax', 'log_softmax',
         'Tensor.log_softmax', 'layer_norm', 'Tensor.gelu(tanh)', 'cross_entropy')

# names in microtensor's namespace and Tensor's that are not ops, each with why
NOT_OPS = {
    # creation: no tensor input to compare an op on
    'arange': 'creation', 'as_tensor': 'creation', 'eye': 'creation', 'from_numpy': 'creation', 'full': 'creation',
    'ones': 'creation', 'ones_like': 'creation (a shape copied, no values)', 'tensor': 'creation',
    'zeros': 'creation', 'zeros_like': 'creation (a shape copied, no values)',
    # autograd's machinery
    'upgrade_checkpoint': 'a file conversion',
    'grad': 'autograd API', 'no_grad': 'autograd API', 'enable_grad': 'autograd API',
    'is_grad_enabled': 'autograd API', 'detect_anomaly': 'autograd API', 'inference_mode': 'autograd API',
    'gradcheck': 'testing helper',
    'gradgradcheck': 'testing helper',
    # settings
    'manual_seed': 'setting (tested with the random ops)', 'set_default_device': 'setting', 'set_fused': 'setting',
    'fused': 'setting (a context manager)', 'is_fused': 'setting',
    # files and inspection
    'load': 'serialization', 'save': 'serialization', 'trace': 'inspection', 'backward_steps': 'inspection',
    'draw_graph': 'inspection', 'gradient_flow': 'inspection', 'record_modules': 'inspection',
    # Tensor: conversion to other things, devices, autograd state
    'Tensor.numpy': 'conversion', 'Tensor.tolist': 'conversion', 'Tensor.item': 'conversion',
    'Tensor.cpu': 'device move (the tests run on the CPU)', 'Tensor.cuda': 'device move (needs a GPU)',
    'Tensor.backward': 'autograd API', 'Tensor.detach': 'autograd API', 'Tensor.register_hook': 'autograd API',
    'Tensor.requires_grad_': 'autograd API', 'Tensor.retain_grad': 'autograd API', 'Tensor.zero_grad': 'autograd API',
    'Tensor.__init__': 'construction', 'Tensor.__repr__': 'printing', 'Tensor.__array__': 'numpy conversion',
    'Tensor.__array_ufunc__': 'numpy dispatch (to the reflected operators, which have entries)',
    'Tensor.__len__': 'Python protocol', 'Tensor.__iter__': 'Python protocol (indexing, which has an entry)',
    'Tensor.__bool__': 'conversion', 'Tensor.__float__': 'conversion', 'Tensor.__int__': 'conversion',
    'Tensor.__index__': 'conversion', 'Tensor.__format__': 'printing',
    'Tensor.__hash__': 'identity',
    'Tensor.shape': 'attribute', 'Tensor.ndim': 'attribute', 'Tensor.dtype': 'attribute',
    'Tensor.device': 'attribute', 'Tensor.is_leaf': 'autograd state', 'Tensor.grad': 'autograd state',
    'Tensor.grad_fn': 'autograd state',
}
