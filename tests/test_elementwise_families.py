"""The elementwise functions by family (ops/trigonometric.py, exponential.py, rounding.py, logic.py,
and nan_to_num, lerp in elementwise.py): a float64 gradient and second-gradient check over
hypothesis' shapes, each on its domain; the piecewise-constant ones pass no gradient; the logic
ones give bools outside the graph; clear errors.  (Values, dtypes and both gradients against
PyTorch, on edge samples, are tests/test_op_registry.py's.)"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from strategies import nonscalar_shapes, tensors

# each differentiable function of one tensor and the interval its inputs are drawn from
# (inside the domain, away from the points where the derivative is infinite)
UNARY = {'tan': (-1.2, 1.2), 'asin': (-0.9, 0.9), 'acos': (-0.9, 0.9), 'atan': (-3, 3), 'sinh': (-3, 3),
         'cosh': (-3, 3), 'asinh': (-3, 3), 'acosh': (1.2, 4), 'atanh': (-0.9, 0.9), 'exp2': (-3, 3),
         'expm1': (-3, 3), 'log2': (0.2, 4), 'log10': (0.2, 4), 'log1p': (-0.8, 3), 'reciprocal': (0.3, 3),
         'square': (-3, 3), 'frac': (0.1, 0.9)}
BINARY = {'atan2': (0.3, 3), 'hypot': (0.3, 3), 'logaddexp': (-3, 3)}


@pytest.mark.parametrize('name', UNARY)
@given(data=st.data())
def test_unary_gradients(name, data):
    low, high = UNARY[name]
    x = data.draw(tensors(data.draw(nonscalar_shapes), low=low, high=high))
    f = getattr(mt, name)
    assert mt.gradcheck(f, [x]) and mt.gradgradcheck(f, [x])
    assert getattr(x, name)().shape == x.shape


@pytest.mark.parametrize('name', BINARY)
@given(data=st.data(), signs=st.tuples(st.sampled_from([1, -1]), st.sampled_from([1, -1])))
def test_binary_gradients(name, data, signs):
    low, high = BINARY[name]
    shape = data.draw(nonscalar_shapes)
    a, b = (data.draw(tensors(shape, low=low, high=high)) for _ in range(2))
    f = lambda a, b: getattr(mt, name)(a * signs[0], b * signs[1])  # noqa: E731  (every quadrant of atan2)
    assert mt.gradcheck(f, [a, b]) and mt.gradgradcheck(f, [a, b])


@given(data=st.data())
def test_lerp_copysign_fmod_nan_to_num_gradients(data):
    shape = data.draw(nonscalar_shapes)
    start, end, weight = (data.draw(tensors(shape)) for _ in range(3))
    assert mt.gradcheck(mt.lerp, [start, end, weight]) and mt.gradgradcheck(mt.lerp, [start, end, weight])
    away, sign_from = (data.draw(tensors(shape, low=0.5, high=3)) for _ in range(2))  # (not at a sign's jump)
    assert mt.gradcheck(lambda a, b: mt.copysign(a, b) + mt.copysign(-a, -b), [away, sign_from])
    divisor = data.draw(tensors(shape, low=1.1, high=3))
    assert mt.gradcheck(lambda a, b: mt.fmod(a * 0.9, b), [start, divisor])
    assert mt.gradcheck(lambda t: mt.nan_to_num(t * 2), [start])


def test_a_planted_wrong_derivative_is_caught(monkeypatch):
    """The checks above can fail: tan's derivative without its "1 +" is caught."""
    from microtensor.ops.trigonometric import Tan
    monkeypatch.setattr(Tan, 'derivative', lambda self, x, y: y * y)
    x = mt.tensor([0.3, -0.5], dtype='float64', requires_grad=True)
    with pytest.raises(mt.GradcheckError):
        mt.gradcheck(mt.tan, [x])


@pytest.mark.parametrize('name', ['floor', 'ceil', 'trunc', 'round', 'sign'])
def test_the_rounding_functions_pass_no_gradient(name):
    x = mt.tensor([-1.5, -0.2, 0.0, 0.7, 2.5, math.inf], requires_grad=True)
    getattr(x, name)().sum().backward()
    assert (x.grad.numpy() == 0).all()


def test_round_halves_to_even_and_takes_decimals():
    x = mt.tensor([0.5, 1.5, 2.5, -2.5, 1234.5678], dtype='float64')
    assert x.round().tolist() == [0.0, 2.0, 2.0, -2.0, 1235.0]
    assert x.round(decimals=2).tolist()[-1] == 1234.57 and x.round(decimals=-2).tolist()[-1] == 1200.0
    assert mt.round(mt.tensor([3, -4])).tolist() == [3, -4] and mt.round(mt.tensor([3])).dtype == mt.int64


def test_the_logic_functions_give_bools_outside_the_graph():
    x = mt.tensor([math.nan, math.inf, -math.inf, 0.0, 2.0], requires_grad=True)
    assert x.isnan().tolist() == [True, False, False, False, False]
    assert x.isinf().tolist() == [False, True, True, False, False]
    assert x.isfinite().tolist() == [False, False, False, True, True]
    assert x.logical_not().tolist() == [False, False, False, True, False]
    assert not x.isnan().requires_grad and mt.isnan(mt.tensor([1, 2])).tolist() == [False, False]
    a, b = mt.tensor([0, 1, 2, 0]), mt.tensor([0.0, 0.0, 3.0, -1.0])
    assert mt.logical_and(a, b).tolist() == [False, False, True, False]
    assert mt.logical_or(a, b).tolist() == [False, True, True, True]
    assert mt.logical_xor(a, b).tolist() == [False, True, False, True]


def test_nan_to_num_replaces_and_stops_the_gradient_there():
    x = mt.tensor([math.nan, math.inf, -math.inf, 1.5], requires_grad=True)
    y = x.nan_to_num(nan=0.0, posinf=10.0, neginf=-10.0)
    assert y.tolist() == [0.0, 10.0, -10.0, 1.5]
    (y * 2).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 2.0]
    assert x.nan_to_num().tolist()[1] == float(np.finfo(np.float32).max)


@pytest.mark.parametrize('call, error, message', [
    (lambda: mt.frac(mt.tensor([1, 2])), mt.DTypeError, r'frac: needs a float tensor, not int64'),
    (lambda: mt.floor(mt.tensor([True])), mt.DTypeError, r'floor: needs a number tensor, not bool'),
    (lambda: mt.round(mt.tensor([1]), decimals=1), mt.DTypeError, r'round: decimals=1 needs a float tensor'),
    (lambda: mt.atan2(mt.ones(2), 1.0), TypeError, r'atan2: needs two Tensors, got Tensor and float'),
    (lambda: mt.hypot(mt.tensor([1]), mt.tensor([2])), mt.DTypeError, r'hypot: needs float tensors'),
    (lambda: mt.logical_and(mt.ones(2), 1), TypeError, r'logical_and: needs two Tensors'),
    (lambda: mt.lerp(mt.ones(2), mt.ones(2, dtype='float64'), 0.5), mt.DTypeError, r'lerp: start and end must'),
    (lambda: mt.tan([1.0]), TypeError, r'tan'),
])
def test_bad_input_is_refused_saying_what_to_do(call, error, message):
    with pytest.raises(error, match=message):
        call()
