"""mt.gradcheck and mt.gradgradcheck catch wrong backward passes, and say where."""
import re

import numpy as np
import pytest

import microtensor as mt
from microtensor.tensor import Tensor


class Square(mt.Function):
    """y = x^2, dL/dx = 2 g x: correct, as a control."""

    def forward(self, x):
        return x * x

    def backward(self, g):
        (x,) = self.inputs
        return (2 * g * x,)


class SquareOffByOneAt4(Square):
    """A wrong backward: the gradient of flat element 4 is off by exactly 1."""

    def backward(self, g):
        (gx,) = super().backward(g)
        bump = np.zeros(gx.shape)
        bump.flat[4] = 1.0
        return (gx + Tensor._wrap(bump),)


class SquareConstantBackward(Square):
    """First derivative right, second wrong: backward treats x as a constant,
    so d(backward)/dx is 0 instead of 2g."""

    def backward(self, g):
        (x,) = self.inputs
        return (2 * g * x.detach(),)


def x33():
    return mt.tensor(np.linspace(-1.0, 1.0, 9).reshape(3, 3), requires_grad=True)


def numbers(message, label):
    return float(re.search(rf"{label} (-?[0-9.e+-]+)", message).group(1))


def test_a_correct_backward_passes():
    assert mt.gradcheck(Square.apply, [x33()])
    assert mt.gradgradcheck(Square.apply, [x33()])
    assert mt.gradcheck(Square.apply, [x33()], max_elements=4)  # random directions


def test_a_wrong_backward_is_caught_and_located():
    with pytest.raises(mt.GradcheckError) as info:
        mt.gradcheck(SquareOffByOneAt4.apply, [x33()])
    message = str(info.value)
    assert "input 0 (shape (3, 3))" in message
    assert "element (1, 1)" in message  # flat element 4 of a 3x3
    analytic, numeric = numbers(message, 'analytic'), numbers(message, 'numeric')
    assert abs((analytic - numeric) - 1.0) < 1e-4  # the bump, with both values printed
    assert abs(numeric - 0.0) < 1e-6  # x[1, 1] = 0: the true derivative there is 0


def test_the_wrong_input_is_named():
    def f(a, b):
        return a * 3 + SquareOffByOneAt4.apply(b)
    with pytest.raises(mt.GradcheckError, match=r"input 1 \(shape \(3, 3\)\), element \(1, 1\)"):
        mt.gradcheck(f, [x33(), x33()])


def test_random_direction_mode_catches_it_too():
    with pytest.raises(mt.GradcheckError, match=r"input 0 \(shape \(3, 3\)\), random direction \d: analytic"):
        mt.gradcheck(SquareOffByOneAt4.apply, [x33()], max_elements=4)


def test_gradgradcheck_catches_a_wrong_double_backward():
    assert mt.gradcheck(SquareConstantBackward.apply, [x33()])  # first order is right
    with pytest.raises(mt.GradcheckError, match="input 0 .*analytic 0 vs numeric"):
        mt.gradgradcheck(SquareConstantBackward.apply, [x33()])


def test_float32_inputs_are_a_clear_type_error():
    x = mt.tensor(np.ones((2, 2), dtype=np.float32), requires_grad=True)
    with pytest.raises(TypeError, match=r"float64.*shape \(2, 2\) is float32.*x.double\(\)"):
        mt.gradcheck(Square.apply, [x])
    with pytest.raises(TypeError, match="float64"):
        mt.gradgradcheck(Square.apply, [x])


def test_no_input_requiring_grad_is_a_clear_error():
    with pytest.raises(ValueError, match="no input has requires_grad=True"):
        mt.gradcheck(lambda t: t * 2, [mt.tensor(np.ones(2))])


def test_large_constant_outputs_do_not_spoil_the_estimate():
    """A -1e9 (or -inf) mask fill next to small outputs: differenced per element, it cancels exactly."""
    mask = mt.tensor(np.array([True, False, False]))
    x = mt.tensor(np.array([0.1, 0.2, 0.3]), requires_grad=True)
    for fill in [-1e9, float('-inf')]:
        assert mt.gradcheck(lambda t: t.masked_fill(mask, fill) * 1e-3, [x])


def test_nan_never_passes():
    """A NaN output (e.g. a mean over nothing) makes every estimate NaN: that is a failure, not a pass."""
    def nan_for_the_second_element(x):
        return x * mt.tensor(np.array([1.0, np.nan]))
    with pytest.raises(mt.GradcheckError, match=r"input 0 .*analytic [-0-9.e]+ vs numeric nan"):
        mt.gradcheck(nan_for_the_second_element, [mt.tensor(np.ones(2), requires_grad=True)])
