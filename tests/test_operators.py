"""The operators % // ^ << >> & | ~, their reflected and in-place forms, the method forms
(add, sub, mul, div with rounding_mode, pow, matmul) and the dtype shorthands: values and
dtypes as PyTorch gives them, gradients by finite differences, and clear errors."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import broadcastable_shapes, devices, tensors

INTEGER_DTYPES = ['uint8', 'int8', 'int16', 'int32', 'int64']
BITWISE = {'&': lambda a, b: a & b, '|': lambda a, b: a | b, '^': lambda a, b: a ^ b,
           '<<': lambda a, b: a << b, '>>': lambda a, b: a >> b}
ROUNDING = {'%': lambda a, b: a % b, '//': lambda a, b: a // b}


def torch_dtype(torch, dtype):
    return getattr(torch, str(np.dtype(dtype)))


def same(ours, theirs):
    """Our tensor equals torch's: dtype, shape and values (nan where torch has nan)."""
    expected = theirs.detach().numpy()
    assert ours.dtype == expected.dtype, f"dtype {ours.dtype}, torch gives {expected.dtype}"
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-6, atol=1e-6, equal_nan=True)


# ---------------------------------------------------------------------------- bitwise, against torch
@pytest.mark.parametrize('op', BITWISE)
@pytest.mark.parametrize('dtype', INTEGER_DTYPES)
@given(data=st.data())
def test_bitwise_operators_match_torch(op, dtype, data):
    torch = pytest.importorskip('torch')
    info = np.iinfo(dtype)
    a = data.draw(hnp.arrays(dtype, hnp.array_shapes(max_dims=2, max_side=4)))
    if op in ('<<', '>>'):
        b = data.draw(st.integers(-2, 8 * np.dtype(dtype).itemsize + 2))
    else:
        b = data.draw(st.integers(int(info.min), int(info.max)) | st.sampled_from([0x1337, 3, -1, True]))
    f = BITWISE[op]
    same(f(mt.tensor(a), b), f(torch.from_numpy(a), b))
    if op in ('<<', '>>'):  # the reflected form: a number shifted by a tensor of counts
        counts = np.clip(a, 0, 8 * np.dtype(dtype).itemsize - 1).astype(dtype)
        same(f(5, mt.tensor(counts)), f(5, torch.from_numpy(counts)))
    else:
        same(f(b, mt.tensor(a)), f(b, torch.from_numpy(a)))


@pytest.mark.parametrize('left, right', [('int32', 'int64'), ('uint8', 'int8'), ('bool', 'uint8'), ('bool', 'bool'),
                                         ('int16', 'bool')])
@pytest.mark.parametrize('op', ['&', '|', '^'])
def test_bitwise_tensors_of_two_dtypes_promote_as_torch(left, right, op):
    torch = pytest.importorskip('torch')
    a, b = np.array([0, 1, 3, 6]).astype(left), np.array([1, 1, 5, 0]).astype(right)
    same(BITWISE[op](mt.tensor(a), mt.tensor(b)), BITWISE[op](torch.from_numpy(a), torch.from_numpy(b)))


def test_a_python_int_keeps_the_tensors_integer_dtype():
    assert (mt.tensor([1, 2], dtype='int32') & 0x1337).dtype == mt.int32
    assert (mt.tensor([1, 2], dtype='uint8') | 3).dtype == mt.uint8
    assert (mt.tensor([True]) | 2).dtype == mt.int64  # a bool tensor and an int: int64, as in PyTorch
    assert (mt.tensor([True]) ^ True).dtype == mt.bool_


def test_an_int_outside_the_dtypes_range_is_never_a_wider_result():
    torch = pytest.importorskip('torch')
    a = np.array([1, -2], dtype='int32')
    for value in (0xFFFFFFFF, 2 ** 40):
        same_or_refused(lambda: mt.tensor(a) | value, torch.from_numpy(a) | value)


def test_invert_matches_torch():
    torch = pytest.importorskip('torch')
    for a in (np.array([0, 3, 255], dtype='uint8'), np.array([0, -3, 7], dtype='int32'), np.array([True, False])):
        same(~mt.tensor(a), ~torch.from_numpy(a))


@pytest.mark.parametrize('op', ['&', '|', '^', '<<', '>>'])
def test_bitwise_of_floats_is_refused(op):
    with pytest.raises(TypeError, match=r"defined on integer.* tensors only, not float32"):
        BITWISE[op](mt.tensor([1.0, 2.0]), 1)
    with pytest.raises(TypeError, match="not float32"):
        ~mt.tensor([1.0])


def test_shifts_of_bools_are_refused_but_promote_with_an_int():
    assert (mt.tensor([True]) << 1).dtype == mt.int64
    with pytest.raises(TypeError, match="integer tensors only, not bool"):
        mt.tensor([True]) << mt.tensor([True])


# ---------------------------------------------------------------------------- % and //, against torch
@pytest.mark.parametrize('op', ROUNDING)
@pytest.mark.parametrize('dtype', ['int32', 'int64', 'uint8', 'float32', 'float64'])
@given(data=st.data())
def test_remainder_and_floor_division_match_torch(op, dtype, data):
    torch = pytest.importorskip('torch')
    shape_a, shape_b = data.draw(broadcastable_shapes())
    if dtype.startswith('float'):
        elements = st.floats(-50, 50, width=32).filter(lambda v: abs(v) > 1e-3)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(int(info.min), -100), min(int(info.max), 100)).filter(lambda v: v != 0)
    a = data.draw(hnp.arrays(dtype, shape_a, elements=elements))
    b = data.draw(hnp.arrays(dtype, shape_b, elements=elements))
    f = ROUNDING[op]
    same(f(mt.tensor(a), mt.tensor(b)), f(torch.from_numpy(a), torch.from_numpy(b)))
    number = data.draw(st.sampled_from([3, -3, 2.5, -0.75]))  # (-3 is outside uint8: see below)
    outside = isinstance(number, int) and np.dtype(dtype).kind == 'u' and number < 0
    same_or_refused(lambda: f(mt.tensor(a), number), f(torch.from_numpy(a), number), outside)
    same_or_refused(lambda: f(number, mt.tensor(b)), f(number, torch.from_numpy(b)), outside)


def same_or_refused(ours, theirs, may_refuse=True):
    """torch's answer; or, where may_refuse, an error: a Python int outside the tensor's dtype (uint8 % -3)
    may be refused (promotion.py decides), but never computed in a wider dtype."""
    try:
        result = ours()
    except (RuntimeError, OverflowError, ValueError):
        if not may_refuse:
            raise
        return
    same(result, theirs)


@pytest.mark.parametrize('mode', ['floor', 'trunc', None])
@pytest.mark.parametrize('dtype', ['int32', 'int64', 'float32'])
def test_div_rounding_modes_match_torch(mode, dtype):
    torch = pytest.importorskip('torch')
    a = np.array([-7, 7, -8, 9, 0, 5]).astype(dtype)
    b = np.array([2, -2, 3, 3, 4, -5]).astype(dtype)
    same(mt.tensor(a).div(mt.tensor(b), rounding_mode=mode),
         torch.from_numpy(a).div(torch.from_numpy(b), rounding_mode=mode))
    same(mt.div(mt.tensor(a), 2, rounding_mode=mode), torch.div(torch.from_numpy(a), 2, rounding_mode=mode))


def test_integer_division_by_zero_is_an_error_and_float_division_gives_inf_and_nan():
    for f in (lambda a: a % 0, lambda a: a // 0, lambda a: a.div(0, rounding_mode='trunc')):
        with pytest.raises(RuntimeError, match="integer division by zero"):
            f(mt.tensor([7, -7]))
    x = mt.tensor([-7.0, 7.0])
    assert (x // 0).tolist() == [-np.inf, np.inf]
    assert np.isnan((x % 0).numpy()).all()


def test_bools_have_no_remainder_and_bad_rounding_modes_are_named():
    with pytest.raises(TypeError, match="remainder of bool tensors is not defined"):
        mt.tensor([True]) % mt.tensor([True])
    with pytest.raises(ValueError, match=r"div: rounding_mode must be None, 'floor' or 'trunc', not 'round'"):
        mt.tensor([1.0]).div(2, rounding_mode='round')


@devices
@given(data=st.data())
def test_remainder_gradient(device, data):
    shape_a, shape_b = data.draw(broadcastable_shapes())
    a = data.draw(tensors(shape_a, device=device))
    b = data.draw(tensors(shape_b, low=0.5, high=3.0, device=device))
    b = mt.tensor(b.numpy() * data.draw(st.sampled_from([1, -1])), device=device, requires_grad=True)
    q = a.numpy() / b.numpy()
    assume(np.all(np.abs(q - np.round(q)) > 1e-3))  # away from the jumps of floor(a / b)
    assert mt.gradcheck(lambda x, y: x % y, [a, b])


def test_remainder_gradient_matches_torch():
    torch = pytest.importorskip('torch')
    a, b = np.array([5.5, -3.25, 7.0, -0.5]), np.array([2.0, 2.0, -3.0, -0.75])
    x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (x % y).sum().backward()
    (tx % ty).sum().backward()
    same(x.grad, tx.grad)
    same(y.grad, ty.grad)


def test_rounded_division_has_a_zero_gradient_and_floor_divide_none():
    torch = pytest.importorskip('torch')
    for mode in ('floor', 'trunc'):
        x = mt.tensor([5.0, -3.0], requires_grad=True)
        x.div(2.0, rounding_mode=mode).sum().backward()
        tx = torch.tensor([5.0, -3.0], requires_grad=True)
        tx.div(2.0, rounding_mode=mode).sum().backward()
        same(x.grad, tx.grad)
    y = mt.tensor([5.0, -3.0], requires_grad=True) // 2
    assert not y.requires_grad  # torch.floor_divide has no derivative: the result is outside the graph


# ---------------------------------------------------------------------------- in-place forms
@pytest.mark.parametrize('op', ['%=', '//=', '&=', '|=', '^=', '<<=', '>>='])
def test_in_place_operators_write_into_the_tensor(op):
    torch = pytest.importorskip('torch')
    a = np.array([7, -6, 5, 12], dtype='int32')
    x, t = mt.tensor(a), torch.from_numpy(a.copy())
    view = x[1:]
    namespace = {'x': x, 't': t}
    exec(f"x {op} 3\nt {op} 3", namespace)
    assert namespace['x'] is x
    same(x, namespace['t'])
    assert view.tolist() == x.tolist()[1:]  # the memory itself changed


def test_in_place_remainder_keeps_the_graph():
    x = mt.tensor([5.5, -3.25], requires_grad=True)
    h = x * 1.0
    h %= 2.0
    h.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_in_place_integer_ops_cannot_take_a_float_result():
    x = mt.tensor([7, 8])
    with pytest.raises(RuntimeError, match="cannot be written into this tensor of dtype int64 in place"):
        x %= 2.5


# ---------------------------------------------------------------------------- the method forms
@devices
@given(data=st.data(), alpha=st.sampled_from([1, 2, -0.5]))
def test_add_and_sub_with_alpha(device, data, alpha):
    shape_a, shape_b = data.draw(broadcastable_shapes())
    a, b = data.draw(tensors(shape_a, device=device)), data.draw(tensors(shape_b, device=device))
    np.testing.assert_allclose(a.add(b, alpha=alpha).numpy(), a.numpy() + alpha * b.numpy())
    np.testing.assert_allclose(mt.sub(a, b, alpha=alpha).numpy(), a.numpy() - alpha * b.numpy())
    assert mt.gradcheck(lambda x, y: x.add(y, alpha=alpha), [a, b])
    assert mt.gradcheck(lambda x, y: x.sub(y, alpha=alpha), [a, b])


def test_method_forms_match_torch():
    torch = pytest.importorskip('torch')
    a, b = np.array([[1.5, -2.0], [3.0, 0.5]]), np.array([[0.5, 2.0], [-1.0, 4.0]])
    x, y, tx, ty = mt.tensor(a), mt.tensor(b), torch.from_numpy(a), torch.from_numpy(b)
    same(x.add(y, alpha=3), tx.add(ty, alpha=3))
    same(x.sub(2, alpha=0.5), tx.sub(2, alpha=0.5))
    same(x.mul(y), tx.mul(ty))
    same(x.div(y), tx.div(ty))
    same(x.abs().pow(y), tx.abs().pow(ty))
    same(x.matmul(y), tx.matmul(ty))
    same(mt.add(mt.tensor([1, 2]), 3, alpha=2), torch.add(torch.tensor([1, 2]), 3, alpha=2))
    same(x.remainder(y), tx.remainder(ty))
    same(x.floor_divide(y), tx.floor_divide(ty))


def test_alpha_must_fit_the_dtype():
    with pytest.raises(TypeError, match=r"add: alpha=0.5 does not fit operands of dtype int64"):
        mt.tensor([1, 2]).add(mt.tensor([1, 1]), alpha=0.5)
    with pytest.raises(TypeError, match="alpha must be a real number, not str"):
        mt.tensor([1.0]).sub(1.0, alpha='2')


# ---------------------------------------------------------------------------- dtype shorthands
@pytest.mark.parametrize('name', ['int', 'long', 'bool', 'half', 'float', 'double'])
def test_dtype_shorthands_match_torch(name):
    torch = pytest.importorskip('torch')
    a = np.array([-2.7, 0.0, 1.5, 3.0])
    same(getattr(mt.tensor(a), name)(), getattr(torch.from_numpy(a), name)())


def test_float_shorthands_stay_in_the_graph_and_integer_ones_leave_it():
    x = mt.tensor([1.5, -2.0], requires_grad=True)
    x.half().double().sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert not x.int().requires_grad and not x.long().requires_grad and not x.bool().requires_grad
