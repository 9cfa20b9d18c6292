"""Elementwise ops: forward equals numpy, backward passes a float64 gradient check
(hypothesis over shapes, broadcasting, non-contiguous inputs and values), and the
smooth ones also pass a second-derivative check."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from strategies import assert_forward, broadcastable_shapes, devices, distinct_tensors, tensors

np_erf = np.vectorize(math.erf)  # scipy is not a test dependency


def np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def np_gelu_erf(x):
    return 0.5 * x * (1 + np_erf(x / math.sqrt(2)))


# ---------------------------------------------------------------------------- binary ops
BINARY = {
    'add': (lambda a, b: a + b, np.add),
    'sub': (lambda a, b: a - b, np.subtract),
    'mul': (lambda a, b: a * b, np.multiply),
    'div': (lambda a, b: a / b, np.divide),
    'pow': (lambda a, b: a ** b, np.power),  # tensor ** tensor, positive base
    'mt.add': (mt.add, np.add),
    'mt.sub': (mt.sub, np.subtract),
    'mt.mul': (mt.mul, np.multiply),
    'mt.div': (mt.div, np.divide),
    'mt.pow': (mt.pow, np.power),
}
POSITIVE_A = {'pow', 'mt.pow'}          # log(a) appears in d(a**b)/db
POSITIVE_B = {'div', 'mt.div'}          # keep away from division by zero


@pytest.mark.slow
@devices
@pytest.mark.parametrize('name', BINARY)
@given(data=st.data())
def test_binary_broadcasting(device, name, data):
    op, reference = BINARY[name]
    a_shape, b_shape = data.draw(broadcastable_shapes())
    a = data.draw(tensors(a_shape, 0.5 if name in POSITIVE_A else -3.0, 3.0, device=device))
    b = data.draw(tensors(b_shape, 0.5 if name in POSITIVE_B else -2.0, 2.0, device=device))
    assert_forward(op(a, b), reference(a.numpy(), b.numpy()))
    assert mt.gradcheck(op, [a, b])


SCALAR_FORMS = {  # a Python number on either side of the operator
    'x + 2': (lambda x: x + 2.0, lambda x: x + 2.0),
    '2 + x': (lambda x: 2.0 + x, lambda x: 2.0 + x),
    'x - 2': (lambda x: x - 2.0, lambda x: x - 2.0),
    '2 - x': (lambda x: 2.0 - x, lambda x: 2.0 - x),
    '3 * x': (lambda x: 3.0 * x, lambda x: 3.0 * x),
    'x / 4': (lambda x: x / 4.0, lambda x: x / 4.0),
    '3 / x': (lambda x: 3.0 / x, lambda x: 3.0 / x),
    '-x': (lambda x: -x, np.negative),
    'mt.neg': (mt.neg, np.negative),
    'x ** 2': (lambda x: x ** 2, lambda x: x ** 2),
    'x ** 3': (lambda x: x ** 3, lambda x: x ** 3),
    'x ** -1.5': (lambda x: x ** -1.5, lambda x: x ** -1.5),
    'x ** 0.5': (lambda x: x ** 0.5, np.sqrt),
    '2 ** x': (lambda x: 2.0 ** x, lambda x: 2.0 ** x),
    '0.5 ** x': (lambda x: 0.5 ** x, lambda x: 0.5 ** x),
}
POSITIVE_X = {'3 / x', 'x ** -1.5', 'x ** 0.5'}


@pytest.mark.slow
@devices
@pytest.mark.parametrize('name', SCALAR_FORMS)
@given(data=st.data())
def test_scalar_operand(device, name, data):
    op, reference = SCALAR_FORMS[name]
    x = data.draw(tensors(low=0.5 if name in POSITIVE_X else -3.0, device=device))
    assert_forward(op(x), reference(x.numpy()))
    assert mt.gradcheck(op, [x])


# ---------------------------------------------------------------------------- unary ops
UNARY = {  # name: (microtensor, numpy, values)
    'exp': (mt.exp, np.exp, 'any'),
    'log': (mt.log, np.log, 'positive'),
    'sqrt': (mt.sqrt, np.sqrt, 'positive'),
    'rsqrt': (mt.rsqrt, lambda x: 1 / np.sqrt(x), 'positive'),
    'tanh': (mt.tanh, np.tanh, 'any'),
    'sin': (mt.sin, np.sin, 'any'),
    'cos': (mt.cos, np.cos, 'any'),
    'sigmoid': (mt.sigmoid, lambda x: 1 / (1 + np.exp(-x)), 'any'),
    'erf': (mt.erf, np_erf, 'any'),
    'gelu_tanh': (lambda x: mt.gelu(x, approximate='tanh'), np_gelu_tanh, 'any'),
    'gelu_erf': (lambda x: mt.gelu(x, approximate='none'), np_gelu_erf, 'any'),
    'relu': (mt.relu, lambda x: np.maximum(x, 0), 'kinked'),
    'abs': (mt.abs, np.abs, 'kinked'),
}


def unary_input(data, values, device):
    if values == 'kinked':  # keep finite differences off the kink at 0
        return data.draw(distinct_tensors(device=device))
    return data.draw(tensors(low=0.5 if values == 'positive' else -3.0, device=device))


@devices
@pytest.mark.parametrize('name', UNARY)
@given(data=st.data())
def test_unary(device, name, data):
    op, reference, values = UNARY[name]
    x = unary_input(data, values, device)
    assert_forward(op(x), reference(x.numpy()))
    assert mt.gradcheck(op, [x])


def test_methods_match_functions():
    x = mt.tensor(np.linspace(0.5, 2.0, 6).reshape(2, 3))
    for method, function in [(x.exp(), mt.exp(x)), (x.log(), mt.log(x)), (x.sqrt(), mt.sqrt(x)),
                             (x.tanh(), mt.tanh(x)), (x.sigmoid(), mt.sigmoid(x)), (x.relu(), mt.relu(x)),
                             (x.abs(), mt.abs(x)), (x.gelu(), mt.gelu(x)), (x.clip(1, 1.5), mt.clip(x, 1, 1.5))]:
        np.testing.assert_array_equal(method.numpy(), function.numpy())


def test_sigmoid_and_exp_extremes_stay_finite():
    x = mt.tensor(np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0]), requires_grad=True)
    y = x.sigmoid()
    assert np.isfinite(y.numpy()).all()
    expected = [0, 1 / (1 + math.exp(30)), 0.5, 1 / (1 + math.exp(-30)), 1]
    np.testing.assert_allclose(y.numpy(), expected, atol=1e-15)
    y.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


# ---------------------------------------------------------------------------- maximum, minimum, clip
@devices
@pytest.mark.parametrize('op, reference', [(mt.maximum, np.maximum), (mt.minimum, np.minimum)],
                         ids=['maximum', 'minimum'])
@given(data=st.data())
def test_maximum_minimum(device, op, reference, data):
    a_shape, b_shape = data.draw(broadcastable_shapes())
    a = data.draw(distinct_tensors(a_shape, device=device, offset=0.5))
    b = data.draw(distinct_tensors(b_shape, device=device, offset=0.0))  # never ties with a
    assert_forward(op(a, b), reference(a.numpy(), b.numpy()))
    assert mt.gradcheck(op, [a, b])


def test_maximum_tie_splits_the_gradient():
    a = mt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    b = mt.tensor(np.array([1.0, 5.0, 0.0]), requires_grad=True)
    mt.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 1.0, 0.0])


@devices
@given(data=st.data(), low=st.sampled_from([None, -3, -1, 0]), high=st.sampled_from([None, 0, 1, 4]))
def test_clip(device, data, low, high):
    x = data.draw(distinct_tensors(device=device, gap=0.5))  # bounds are multiples of the gap
    low, high = (None if low is None else low * 0.5), (None if high is None else high * 0.5)
    if low is None and high is None:
        low = 0.0
    assert_forward(x.clip(low, high), np.clip(x.numpy(), low, high))
    assert mt.gradcheck(lambda t: t.clip(low, high), [x])


# ---------------------------------------------------------------------------- cast
@devices
@given(data=st.data())
def test_cast(device, data):
    x = data.draw(tensors(device=device))
    y = x.to(dtype=mt.float32)
    assert y.dtype == mt.float32 and y.creator is not None
    assert_forward(y, x.numpy().astype(np.float32), rtol=0, atol=0)
    assert y.float().dtype == mt.float32 and y.double().dtype == mt.float64
    assert x.to(mt.float32).dtype == mt.float32  # a dtype given in the device's place, as in PyTorch
    u = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
    (gx,) = mt.grad(y, x, grad_outputs=mt.tensor(u, device=device))
    assert gx.dtype == mt.float64  # the gradient comes back in the input's dtype
    np.testing.assert_array_equal(gx.numpy(), u.astype(np.float64))
    # a cast is linear, so a large eps is exact and float32 rounding stays below the tolerance
    assert mt.gradcheck(lambda t: t.to(dtype='float32').to(dtype='float64') * 3, [x], eps=0.5, atol=1e-4)


def test_cast_to_integer_leaves_the_graph():
    x = mt.tensor(np.array([1.5, 2.5]), requires_grad=True)
    i = x.to(dtype='int64')
    assert i.dtype == mt.int64 and not i.requires_grad and i.creator is None
    np.testing.assert_array_equal(i.numpy(), [1, 2])


# ---------------------------------------------------------------------------- second derivatives
SECOND_ORDER = {
    'mul': (lambda a, b: a * b, 'any'),
    'div': (lambda a, b: a / b, 'positive_b'),
    'pow': (lambda a, b: a ** b, 'positive_a'),
}


@devices
@pytest.mark.parametrize('name', SECOND_ORDER)
@given(data=st.data())
def test_binary_second_derivatives(device, name, data):
    op, values = SECOND_ORDER[name]
    a_shape, b_shape = data.draw(broadcastable_shapes())
    a = data.draw(tensors(a_shape, 0.5 if values == 'positive_a' else -2.0, 2.0, device=device))
    b = data.draw(tensors(b_shape, 0.5 if values == 'positive_b' else -2.0, 2.0, device=device))
    assert mt.gradgradcheck(op, [a, b])


@pytest.mark.slow
@devices
@pytest.mark.parametrize('name', ['exp', 'log', 'tanh', 'sigmoid', 'gelu_tanh', 'gelu_erf', 'erf', 'sqrt', 'sin'])
@given(data=st.data())
def test_unary_second_derivatives(device, name, data):
    op, _, values = UNARY[name]
    assert mt.gradgradcheck(op, [unary_input(data, values, device)])


@given(x=tensors(low=0.5), p=st.sampled_from([-1.5, 0.5, 2.0, 3.0]))
def test_pow_scalar_second_derivatives(x, p):
    assert mt.gradgradcheck(lambda t: t ** p, [x])
    assert mt.gradgradcheck(lambda t: abs(p) ** t, [x])


# ---------------------------------------------------------------------------- 0-d tensors
def test_scalar_tensors_through_elementwise_ops():
    x = mt.tensor(np.float64(0.7), requires_grad=True)
    y = mt.tensor(np.float64(1.3), requires_grad=True)
    for op in [lambda a, b: a + b, lambda a, b: a * b / b - a, lambda a, b: a ** b, mt.maximum,
               lambda a, b: (a.exp() + b.log() + a.tanh() + a.sigmoid() + a.relu() + b.sqrt()
                             + a.abs() + mt.erf(a) + a.gelu() + a.gelu('none') + a.clip(0, 1))]:
        out = op(x, y)
        assert out.shape == ()
        assert mt.gradcheck(op, [x, y])


@pytest.mark.parametrize('shape', [(), (3,), (2, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_erf_without_scipy_is_exact(monkeypatch, shape, dtype):
    """scipy is optional: without it erf falls back to math.erf per element (a fresh
    environment has no scipy, so this path is the one CI takes)."""
    import sys
    monkeypatch.setitem(sys.modules, 'scipy.special', None)  # `from scipy.special import ...` now fails
    x = np.linspace(-3, 3, int(np.prod(shape))).reshape(shape).astype(dtype)
    y = mt.erf(mt.tensor(x))
    assert y.dtype == np.dtype(dtype) and y.shape == shape
    expected = np.vectorize(math.erf)(x.astype('float64'))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6 if dtype == 'float32' else 1e-15)
