"""Python numbers with integer and bool tensors, generated over the whole class and checked
against PyTorch: every integer and bool dtype x Python bools, ints and floats, in and out of
the dtype's range x the arithmetic and bitwise operators, the comparisons, where,
masked_fill, clip, full and the reductions.  Each case gives PyTorch's dtype and values, or
both refuse.  The differences README's "Semantics worth knowing" lists are stated where they
apply: a comparison is exact (PyTorch wraps the number first: uint8 < 256 is False there), and
clip of an unsigned tensor refuses a negative bound (PyTorch wraps it: uint8.clip(-1) is 255).
"""
import math
import operator

import numpy as np
import pytest

import microtensor as mt

torch = pytest.importorskip('torch', reason='PyTorch is the reference for integer semantics')

DTYPES = ['bool', 'uint8', 'int8', 'int16', 'int32', 'int64', 'uint16', 'uint32', 'uint64']
VALUES = {  # the ends of each range, 0, 1 and small numbers of both signs
    'bool': [False, True, True, False],
    'uint8': [0, 1, 2, 3, 100, 200, 255],
    'int8': [-128, -3, -1, 0, 1, 2, 127],
    'int16': [-32768, -300, -1, 0, 1, 2, 32767],
    'int32': [-2 ** 31, -70000, -1, 0, 1, 2, 2 ** 31 - 1],
    'int64': [-2 ** 63, -2 ** 40, -1, 0, 1, 2, 2 ** 63 - 1],
    'uint16': [0, 1, 2, 3, 300, 65535],
    'uint32': [0, 1, 2, 3, 70000, 2 ** 32 - 1],
    'uint64': [0, 1, 2, 3, 2 ** 40],
}
SCALARS = [False, True, 0, 1, -1, 2, 3, 127, 128, 255, 256, 300, -300, 70000, -70000, 2 ** 31, 2 ** 40,
           2 ** 63 - 1, -2 ** 63, 0.5, -1.5, 255.5, 300.5, 1e10, math.inf, -math.inf, math.nan]

# The binary operators, by the name of their Python operator; an operator joins the table once
# Tensor has it on both sides (x // 2 and 2 // x: __floordiv__ and __rfloordiv__).
COMPARISONS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge']
OPERATORS = [name for name in ['add', 'sub', 'mul', 'truediv', 'pow', 'floordiv', 'mod', 'and_', 'or_', 'xor',
                               'lshift', 'rshift'] + COMPARISONS
             if any(f"__r{name.rstrip('_')}__" in vars(c) for c in mt.Tensor.__mro__) or name in COMPARISONS]

NOT_A_RULE = ('not implemented for', 'Promotion for uint16, uint32, uint64 types is not supported')

# x / 0 and 0 * inf are inf and nan here as in PyTorch, which says nothing; numpy also warns, and
# these tests divide by zero on purpose.
pytestmark = pytest.mark.filterwarnings('ignore:.*encountered in (divide|multiply):RuntimeWarning')


def _pair(dtype):
    values = np.array(VALUES[dtype], dtype=dtype)
    return mt.tensor(values), torch.from_numpy(values.copy())


def _outcome(fn):
    """('ok', result) or ('refused', the error)."""
    try:
        return 'ok', fn()
    except (TypeError, ValueError, RuntimeError, OverflowError, ZeroDivisionError, IndexError,
            NotImplementedError) as error:
        return 'refused', error


def _check(label, ours_fn, theirs_fn, mismatches, expected=None):
    """Our result against PyTorch's (or `expected`, a list of exact values, where README states a
    difference): the same dtype and values, or both refuse.  A kernel PyTorch does not have for
    uint16/32/64 is no rule to follow: those cases are skipped."""
    kind, theirs = _outcome(theirs_fn)
    if kind == 'refused' and any(s in str(theirs) for s in NOT_A_RULE):
        return
    ours_kind, ours = _outcome(ours_fn)
    if expected is not None:
        theirs = torch.tensor(expected) if kind == 'ok' else theirs
    if ours_kind != kind:
        mismatches.append(f"{label}: PyTorch {kind} ({theirs!r:.120}), we {ours_kind} ({ours!r:.120})")
        return
    if kind == 'refused':
        return
    if str(ours.dtype) != str(theirs.dtype).replace('torch.', ''):
        mismatches.append(f"{label}: dtype {ours.dtype}, PyTorch {theirs.dtype}")
        return
    a, b = np.asarray(ours.numpy()), theirs.numpy()
    same = np.array_equal(a, b) if a.dtype.kind in 'biu' else np.allclose(a, b, rtol=2e-7, atol=0, equal_nan=True)
    if not same:
        mismatches.append(f"{label}: {a.tolist()} != PyTorch's {b.tolist()}")


def _fits(dtype, number):
    info = np.iinfo(dtype) if dtype != 'bool' else None
    return info is not None and info.min <= number <= info.max


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('name', OPERATORS)
def test_an_operator_with_a_python_number_on_either_side_follows_pytorch(name, dtype):
    fn = getattr(operator, name)
    x, t = _pair(dtype)
    mismatches = []
    for s in SCALARS:
        expected = None
        if name in COMPARISONS and type(s) is int and not _fits(dtype, s) and dtype != 'bool':
            expected = [fn(int(v), s) for v in VALUES[dtype]]  # exact (README)
        _check(f"{dtype} {name} {s!r}", lambda: fn(x, s), lambda: fn(t, s), mismatches, expected)
        if expected is not None:
            expected = [fn(s, int(v)) for v in VALUES[dtype]]
        _check(f"{s!r} {name} {dtype}", lambda: fn(s, x), lambda: fn(s, t), mismatches, expected)
    assert not mismatches, '\n'.join(mismatches)


@pytest.mark.parametrize('dtype', DTYPES)
def test_where_masked_fill_clip_fill_and_setitem_with_a_python_number_follow_pytorch(dtype):
    x, t = _pair(dtype)
    mask = np.arange(x.shape[0]) % 2 == 0
    m_mt, m_t = mt.tensor(mask), torch.from_numpy(mask)
    mismatches = []
    for s in SCALARS:
        _check(f"where(m, {dtype}, {s!r})", lambda: mt.where(m_mt, x, s), lambda: torch.where(m_t, t, s), mismatches)
        _check(f"where(m, {s!r}, {dtype})", lambda: mt.where(m_mt, s, x), lambda: torch.where(m_t, s, t), mismatches)
        _check(f"masked_fill({dtype}, m, {s!r})", lambda: x.masked_fill(m_mt, s), lambda: t.masked_fill(m_t, s),
               mismatches)
        _check(f"{dtype}.fill_({s!r})", lambda: mt.tensor(x.numpy()).fill_(s), lambda: t.clone().fill_(s),
               mismatches)
        _check(f"{dtype}[0] = {s!r}", lambda: _set_first(mt.tensor(x.numpy()), s), lambda: _set_first(t.clone(), s),
               mismatches)
        unsigned_below_zero = dtype.startswith('u') and type(s) is int and s < 0
        for low, high in ((s, None), (None, s)):
            if unsigned_below_zero:  # README: refused (PyTorch wraps the bound: uint8.clip(-1) is all 255)
                kind, _ = _outcome(lambda: x.clip(low, high))
                if kind != 'refused':
                    mismatches.append(f"{dtype}.clip({low}, {high}) should refuse a negative bound")
                continue
            _check(f"{dtype}.clip({low}, {high})", lambda: x.clip(low, high), lambda: t.clip(low, high), mismatches)
    assert not mismatches, '\n'.join(mismatches)


def _set_first(t, value):
    t[0] = value
    return t


def test_full_takes_its_dtype_from_the_value_or_refuses_one_that_does_not_fit():
    mismatches = []
    for s in SCALARS:
        _check(f"full((3,), {s!r})", lambda: mt.full((3,), s), lambda: torch.full((3,), s), mismatches)
        for dtype in DTYPES:
            _check(f"full((3,), {s!r}, dtype={dtype})", lambda: mt.full((3,), s, dtype=dtype),
                   lambda: torch.full((3,), s, dtype=getattr(torch, dtype)), mismatches)
    assert not mismatches, '\n'.join(mismatches)


REDUCTIONS = ['sum', 'max', 'min'] + [name for name in ('prod',) if hasattr(mt.Tensor, name)]


def _values(result):
    """A reduction's values (max and min along an axis may also give the indices, as PyTorch's do)."""
    return result[0] if isinstance(result, tuple) else result


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('name', REDUCTIONS)
def test_sum_max_and_min_of_integers_have_pytorchs_dtype_and_values(name, dtype):
    x, t = _pair(dtype)
    mismatches = []
    _check(f"{dtype}.{name}()", lambda: getattr(x, name)(), lambda: getattr(t, name)(), mismatches)
    x2, t2 = x.reshape(1, -1).broadcast_to((3, x.shape[0])), t.reshape(1, -1).expand(3, -1)
    _check(f"{dtype}.{name}(axis=0)", lambda: _values(getattr(x2, name)(axis=0)),
           lambda: getattr(t2, name)(0) if name in ('sum', 'prod') else getattr(t2, name)(0).values, mismatches)
    assert not mismatches, '\n'.join(mismatches)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('name', ['mean', 'var'])
def test_mean_and_var_of_integers_are_float32_and_never_overflow(name, dtype):
    """PyTorch refuses these; microtensor gives the float32 value (README), computed without overflow
    (the float64 answer, rounded once)."""
    values = np.array(VALUES[dtype] * 1000, dtype=dtype)
    ours = getattr(mt.tensor(values), name)()
    exact = getattr(mt.tensor(values.astype('float64')), name)()  # (var's default divisor, whichever it is)
    assert ours.dtype == mt.float32
    np.testing.assert_allclose(float(ours.item()), float(exact.item()), rtol=1e-6)


def test_the_examples_that_went_wrong():
    ids = mt.tensor([1, 2, 128], dtype='uint8')
    np.testing.assert_allclose((ids / 256).numpy(), np.array([1, 2, 128]) / 256, rtol=1e-7)
    np.testing.assert_allclose((300 / ids).numpy(), 300 / np.array([1, 2, 128]), rtol=1e-7)
    np.testing.assert_allclose((mt.tensor([7, -7], dtype='int16') / 70000).numpy(), np.array([7, -7]) / 70000,
                               rtol=1e-7)
    with pytest.raises(RuntimeError, match='masked_fill.*300.*uint8'):
        ids.masked_fill(mt.tensor([True, False, False]), 300)
    with pytest.raises(RuntimeError, match='negative'):
        ids ** -1
    total = mt.tensor(np.full(10, 200, dtype='uint8')).sum()
    assert total.dtype == mt.int64 and (total - 1000).item() == 1000
    assert mt.tensor([True, True, False]).sum().dtype == mt.int64
    ones = mt.ones(70000, dtype='uint8')
    assert ones.mean().item() == 1.0 and ones.var().item() == 0.0
    assert mt.full((2,), 7).dtype == mt.int64
    assert mt.full((2,), True).dtype == mt.bool_
    assert mt.full((2,), 1.5).dtype == mt.float32
    assert (mt.tensor([0, 255], dtype='uint8') < 256).all()  # exact, where PyTorch says False


@pytest.mark.parametrize('dtype', ['uint8', 'int32', 'int64'])
@pytest.mark.parametrize('number', [0.5, -1.5, 2.7, 300.5])
def test_a_numpy_float_scalar_fills_an_integer_tensor_as_the_python_float_it_equals(dtype, number):
    """numpy.float32 has no __trunc__: the value is truncated as a float, not refused with an
    error that names no function."""
    def filled(scalar):
        try:
            return mt.tensor(VALUES[dtype], dtype=dtype).fill_(scalar).numpy().tolist()
        except RuntimeError as error:  # a value that does not fit: refused alike
            return str(error).replace(repr(scalar), 'the value')
    assert filled(np.float32(number)) == filled(number)
