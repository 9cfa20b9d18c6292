"""Type promotion follows PyTorch: the whole table of dtype pairs, 0-d tensors and Python numbers
weak, true division and float-only functions in the default float dtype.  PyTorch is the
reference (the tests that need it skip without it)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import promotion

DTYPES = ['bool', 'uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32', 'float64']
PYTHON_NUMBERS = [True, 2, 2.5]
SHAPES = [(3,), ()]  # a tensor with dimensions, a 0-d one


def _values(dtype, shape):
    """Small values every dtype holds exactly (no overflow, no rounding)."""
    a = np.array([1, 1, 1] if dtype == 'bool' else [3, 1, 2], dtype=dtype)  # (no 0: no division by 0)
    return a if shape else a[:1].reshape(())


def _mt(dtype, shape):
    return mt.tensor(_values(dtype, shape))


def _torch(torch, dtype, shape):
    return torch.from_numpy(_values(dtype, shape).copy())


OPS = {  # name: (microtensor's, torch's), for pairs of which torch allows the op
    'add': (lambda a, b: a + b, lambda a, b: a + b),
    'mul': (lambda a, b: a * b, lambda a, b: a * b),
    'sub': (lambda a, b: a - b, lambda a, b: a - b),
    'div': (lambda a, b: a / b, lambda a, b: a / b),
    'pow': (lambda a, b: a ** b, lambda a, b: a ** b),
    'maximum': (lambda a, b: mt.maximum(a, b), None),
    'where': (lambda a, b: mt.where(mt.tensor([True, False, True]), a, b), None),
}


def _torch_op(torch, name):
    return {'maximum': torch.maximum,
            'where': lambda a, b: torch.where(torch.tensor([True, False, True]), a, b)}.get(name) \
        or OPS[name][1]


def _compare(torch, name, a_mt, b_mt, a_t, b_t, mismatches):
    try:
        theirs = _torch_op(torch, name)(a_t, b_t)
    except RuntimeError:  # PyTorch refuses (bool - bool): so must we, clearly
        try:
            OPS[name][0](a_mt, b_mt)
        except (TypeError, ValueError, RuntimeError) as error:
            assert name.lower() in str(error).lower(), error
        else:
            mismatches.append(f"{name}({a_mt!r}, {b_mt!r}): PyTorch refuses, we do not")
        return
    ours = OPS[name][0](a_mt, b_mt)
    expected = str(theirs.dtype).replace('torch.', '')
    if str(ours.dtype) != expected:
        mismatches.append(f"{name}({a_mt.dtype}{list(a_mt.shape)}, {getattr(b_mt, 'dtype', type(b_mt).__name__)}"
                          f"{list(getattr(b_mt, 'shape', ''))}): {ours.dtype}, PyTorch {expected}")
    elif not np.allclose(ours.numpy().astype("float64"), theirs.numpy().astype("float64"), rtol=1e-3, equal_nan=True):
        mismatches.append(f"{name}: values {ours.numpy()} != PyTorch's {theirs.numpy()}")


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(OPS))
def test_every_pair_of_dtypes_and_dimensions_promotes_as_in_pytorch(name):
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for the promotion table')
    mismatches = []
    for (da, sa), (db, sb) in itertools.product(itertools.product(DTYPES, SHAPES), repeat=2):
        if name == 'maximum' and 'bool' in (da, db) and da != db:
            continue  # (PyTorch refuses maximum of bool with another dtype; numpy's result stands)
        _compare(torch, name, _mt(da, sa), _mt(db, sb), _torch(torch, da, sa), _torch(torch, db, sb), mismatches)
    assert not mismatches, '\n'.join(mismatches)


@pytest.mark.parametrize('name', sorted(OPS))
def test_every_dtype_with_a_python_bool_int_and_float_promotes_as_in_pytorch(name):
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for the promotion table')
    mismatches = []
    for dtype, shape, number in itertools.product(DTYPES, SHAPES, PYTHON_NUMBERS):
        if name == 'maximum':
            continue  # torch.maximum takes no Python number; mt.maximum follows the same table below
        a_mt, a_t = _mt(dtype, shape), _torch(torch, dtype, shape)
        if name == 'pow' and dtype == 'bool' and number is True:
            continue  # (PyTorch's one bool power, by a Python True only; we refuse every power of two bools)
        _compare(torch, name, a_mt, number, a_t, number, mismatches)
        _compare(torch, name, number, a_mt, number, a_t, mismatches) if name != 'where' else None
    assert not mismatches, '\n'.join(mismatches)


def test_maximum_with_a_python_number_follows_the_same_table():
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for the promotion table')
    for dtype, number in itertools.product(DTYPES[1:], PYTHON_NUMBERS[1:]):
        expected = torch.result_type(_torch(torch, dtype, (3,)), number)
        assert str(mt.maximum(_mt(dtype, (3,)), number).dtype) == str(expected).replace('torch.', '')


def test_the_cases_numpy_gets_otherwise():
    i64, f32 = mt.tensor([1, 2]), mt.tensor([1.0, 2.0])
    assert (i64 + f32).dtype == mt.float32           # numpy: float64
    assert (i64 * 0.5).dtype == mt.float32           # numpy: float64
    assert i64.exp().dtype == mt.float32             # numpy: float64
    assert (i64 / i64).dtype == mt.float32           # numpy: float64
    assert (mt.tensor([1, 2], dtype='int32') + 1).dtype == mt.int32    # numpy: int64 for a 0-d int64
    assert (mt.tensor(2.0, dtype='float64') * f32).dtype == mt.float32  # numpy: float64
    np.testing.assert_array_equal((i64 / i64 * 7).numpy(), [7.0, 7.0])
    np.testing.assert_allclose((mt.tensor([7]) / 2).numpy(), [3.5])  # true division


@pytest.mark.parametrize('fn', ['exp', 'log', 'sqrt', 'tanh', 'sin', 'cos', 'sigmoid', 'erf'])
@pytest.mark.parametrize('dtype', ['bool', 'uint8', 'int32', 'int64'])
def test_float_only_functions_take_integers_as_the_default_float(fn, dtype):
    x = mt.tensor(np.array([1, 0, 1], dtype=dtype))
    y = getattr(mt, fn)(x)
    assert y.dtype == mt.float32
    np.testing.assert_allclose(y.numpy(), getattr(mt, fn)(x.to(mt.float32)).numpy())


def test_concatenate_and_stack_promote_as_torch_cat():
    torch = pytest.importorskip('torch', reason='PyTorch is the reference')
    for da, db in itertools.product(DTYPES, repeat=2):
        ours = mt.concatenate([_mt(da, (3,)), _mt(db, (3,))])
        theirs = torch.cat([_torch(torch, da, (3,)), _torch(torch, db, (3,))])
        assert str(ours.dtype) == str(theirs.dtype).replace('torch.', ''), (da, db)
        assert mt.stack([_mt(da, (3,)), _mt(db, (3,))]).dtype == ours.dtype


def test_masked_fill_keeps_the_tensors_dtype_as_in_pytorch():
    mask = mt.tensor([True, False])
    assert mt.masked_fill(mt.tensor([1, 2], dtype='int32'), mask, 7).dtype == mt.int32
    assert mt.masked_fill(mt.tensor([1.0, 2.0], dtype='float16'), mask, mt.tensor(-1.0, dtype='float64')).dtype \
        == mt.float16
    with pytest.raises(RuntimeError, match="masked_fill: the value -inf does not fit in int64"):
        mt.masked_fill(mt.tensor([1, 2]), mask, float('-inf'))


def test_a_python_int_too_large_for_small_ids_wraps_as_in_pytorch():
    torch = pytest.importorskip('torch', reason='PyTorch is the reference')
    ids = np.array([44, 200], dtype='uint8')
    np.testing.assert_array_equal((mt.tensor(ids) + 300).numpy(), (torch.from_numpy(ids) + 300).numpy())
    # comparisons stay exact: no uint8 id equals 300, and none is below -100
    assert not (mt.tensor(ids) == 300).any() and (mt.tensor(ids) != -100).all()


def test_gradients_come_back_in_each_inputs_own_dtype():
    w = mt.tensor([1.0, 2.0], dtype='float16', requires_grad=True)
    s = mt.tensor(3.0, dtype='float64', requires_grad=True)
    y = w * s  # float16: the 0-d float64 is weak
    assert y.dtype == mt.float16
    y.sum().backward()
    assert w.grad.dtype == mt.float16 and s.grad.dtype == mt.float64
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(s.grad.numpy(), 3.0)


@given(a=st.sampled_from(DTYPES), b=st.sampled_from(DTYPES), a_dims=st.integers(0, 2), b_dims=st.integers(0, 2),
       number=st.sampled_from([None] + PYTHON_NUMBERS))
def test_result_type_matches_pytorchs_for_any_dimensions_and_a_third_operand(a, b, a_dims, b_dims, number):
    torch = pytest.importorskip('torch', reason='PyTorch is the reference')
    xa, xb = np.zeros((2,) * a_dims, dtype=a), np.zeros((2,) * b_dims, dtype=b)
    values = [mt.tensor(xa), mt.tensor(xb)] + ([] if number is None else [number])
    expected = torch.result_type(torch.from_numpy(xa), torch.from_numpy(xb))
    if number is not None:  # PyTorch's result_type takes two operands: fold the number in with a zero of that dtype
        expected = torch.result_type(torch.zeros((2,) * max(a_dims, b_dims), dtype=expected) if max(a_dims, b_dims)
                                     else torch.zeros((), dtype=expected), number)
        if min(a_dims, b_dims) == 0 < max(a_dims, b_dims):
            return  # (the folded zero would turn a weak 0-d operand into a dimensioned one)
    assert str(promotion.result_type(*values)) == str(expected).replace('torch.', '')


@pytest.mark.parametrize('da', ['int64', 'int32', 'float16', 'float32', 'float64'])
@pytest.mark.parametrize('db', ['int64', 'float32', 'float64'])
def test_matmul_of_mixed_dtypes_follows_the_same_rule_as_mul(da, db):
    a, b = mt.tensor(np.ones((2, 3), dtype=da)), mt.tensor(np.ones((3, 2), dtype=db))
    assert (a @ b).dtype == promotion.result_type(a, b)   # PyTorch refuses mixed dtypes; numpy gives float64
    assert (a @ np.ones((3, 2), dtype=db)).dtype == promotion.result_type(a, np.ones((3, 2), dtype=db))
    assert (mt.tensor(np.ones((2, 3), dtype='int64')) @ mt.randn(3, 2)).dtype == mt.float32


@pytest.mark.parametrize('fused', [False, True], ids=['textbook', 'fused'])
def test_linear_of_mixed_dtypes_gives_the_same_dtype_in_both_layers(fused):
    x = mt.tensor(np.ones((2, 3), dtype='int64'))
    W, b = mt.randn(3, 2), mt.tensor(np.zeros(2))   # float32 weight, float64 bias
    with mt.fused(fused):
        assert mt.linear(x, W.T).dtype == mt.float32
        assert mt.linear(x, W.T, b).dtype == mt.float64 == promotion.result_type(x @ W, b)


def test_clip_promotes_its_bounds_as_python_numbers():
    torch = pytest.importorskip('torch', reason='PyTorch is the reference')
    cases = [('int64', 0.5, 2.5), ('int32', 0, 2), ('float16', np.float64(0.5), 1.0), ('uint8', 1, None)]
    for dtype, low, high in cases:
        x = _values(dtype, (3,))
        ours = mt.tensor(x).clip(low, high)
        theirs = torch.clamp(torch.from_numpy(x.copy()), None if low is None else float(low) if isinstance(low, float)
                             else low, high)
        assert str(ours.dtype) == str(theirs.dtype).replace('torch.', ''), (dtype, low, high)
        np.testing.assert_allclose(ours.numpy().astype(float), theirs.numpy().astype(float))
