"""where and masked_fill: forward equals numpy, gradients flow only to the selected side."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import assert_forward, devices, tensors


@devices
@given(data=st.data())
def test_where(device, data):
    """cond, a and b all broadcast against each other."""
    cond_shape, a_shape, b_shape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3,
                                                                               max_side=4)).input_shapes
    cond = data.draw(hnp.arrays(bool, cond_shape))
    a, b = data.draw(tensors(a_shape, device=device)), data.draw(tensors(b_shape, device=device))
    cond_t = mt.tensor(cond, device=device)
    assert_forward(mt.where(cond_t, a, b), np.where(cond, a.numpy(), b.numpy()))
    assert mt.gradcheck(lambda x, y: mt.where(cond_t, x, y), [a, b])
    # a plain number on either side, a numpy/list condition
    assert_forward(mt.where(cond_t, a, 0.5), np.where(cond, a.numpy(), 0.5))
    assert_forward(mt.where(cond_t, -1.0, b), np.where(cond, -1.0, b.numpy()))
    assert mt.gradcheck(lambda y: mt.where(cond_t, 2.0, y), [b])
    if device == 'cpu':
        assert_forward(mt.where(cond, a, b), np.where(cond, a.numpy(), b.numpy()))


def test_where_gradient_goes_to_the_chosen_side():
    a = mt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    b = mt.tensor(np.array([10.0, 20.0, 30.0]), requires_grad=True)
    mt.where(a > 1.5, a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0, 1, 1])
    np.testing.assert_array_equal(b.grad.numpy(), [1, 0, 0])


@devices
@given(data=st.data(), value=st.sampled_from([0.0, -1e9, float('-inf'), 2.5]))
def test_masked_fill(device, data, value):
    """The mask broadcasts to x's shape (e.g. a causal mask (T, T) over scores (B, T, T))."""
    x_shape, mask_shape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)
                                    .filter(lambda r: r.result_shape == r.input_shapes[0])).input_shapes
    x = data.draw(tensors(x_shape, device=device))
    mask = mt.tensor(data.draw(hnp.arrays(bool, mask_shape)), device=device)
    expected = np.where(mask.numpy(), value, x.numpy())
    assert_forward(x.masked_fill(mask, value), expected)
    assert_forward(mt.masked_fill(x, mask, value), expected)
    assert mt.gradcheck(lambda t: t.masked_fill(mask, value), [x])


def test_causal_mask_then_softmax():
    scores = mt.tensor(np.random.default_rng(0).standard_normal((2, 3, 3)), requires_grad=True)
    causal = mt.tensor(np.triu(np.ones((3, 3), dtype=bool), k=1))
    p = mt.softmax(scores.masked_fill(causal, float('-inf')), axis=-1)
    assert (p.numpy()[:, causal.numpy()] == 0).all()
    np.testing.assert_allclose(p.numpy().sum(-1), 1.0)
    assert mt.gradcheck(lambda s: mt.softmax(s.masked_fill(causal, float('-inf')), axis=-1), [scores])


def test_where_second_derivatives():
    cond = mt.tensor(np.array([[True, False, True], [False, False, True]]))
    a = mt.tensor(np.linspace(0.5, 2.0, 6).reshape(2, 3), requires_grad=True)
    b = mt.tensor(np.linspace(-1.0, 1.0, 3), requires_grad=True)
    assert mt.gradgradcheck(lambda x, y: mt.where(cond, x * x, y.exp()), [a, b])


def test_scalar_tensors_through_where():
    x = mt.tensor(np.float64(1.5), requires_grad=True)
    y = mt.tensor(np.float64(-0.5), requires_grad=True)
    for cond in [True, False]:
        out = mt.where(mt.tensor(cond), x, y)
        assert out.shape == () and out.item() == (1.5 if cond else -0.5)
        assert mt.gradcheck(lambda a, b: mt.where(mt.tensor(cond), a, b), [x, y])
    assert x.masked_fill(mt.tensor(True), 0.0).item() == 0.0


def test_where_rejects_a_non_boolean_condition():
    x = mt.tensor(np.ones(3))
    with pytest.raises(TypeError, match="where: the condition must be boolean, not float64"):
        mt.where(mt.tensor(np.ones(3)), x, x)
