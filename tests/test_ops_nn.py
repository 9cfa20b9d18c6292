"""softmax, log_softmax, cross_entropy, layer_norm, dropout: forward equals a numpy
reference, backward passes a gradient check (and a second-derivative check), stable
for logits of +-1e4, and dropout's mask has the right gradient and statistics."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import assert_forward, devices, nonscalar_shapes, tensors


def np_log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def np_cross_entropy(logits, targets, ignore_index=None):
    logp = np_log_softmax(logits).reshape(-1, logits.shape[-1])
    flat = targets.reshape(-1)
    counted = flat != ignore_index if ignore_index is not None else np.ones(flat.shape, bool)
    return -logp[np.flatnonzero(counted), flat[counted]].mean()


def np_layer_norm(x, gamma, beta, eps):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta


# ---------------------------------------------------------------------------- softmax, log_softmax
@devices
@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
@given(data=st.data())
def test_softmax_and_log_softmax(device, name, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    op = getattr(mt, name)
    expected = np_log_softmax(x.numpy(), axis)
    assert_forward(op(x, axis), np.exp(expected) if name == 'softmax' else expected)
    assert_forward(getattr(x, name)(axis), np.exp(expected) if name == 'softmax' else expected)
    assert mt.gradcheck(lambda t: op(t, axis), [x])


@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
@given(data=st.data())
def test_softmax_second_derivatives(name, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    assert mt.gradgradcheck(lambda t: getattr(mt, name)(t, axis=-1), [x])


def test_softmax_matches_the_articles():
    np.testing.assert_allclose(mt.softmax(mt.tensor([2.0, 1.0, 0.1])).numpy(), [0.659, 0.242, 0.099], atol=1e-3)
    np.testing.assert_allclose(mt.softmax(mt.tensor([1.0, 2.0, 3.0])).numpy(), [0.090, 0.245, 0.665], atol=1e-3)
    np.testing.assert_allclose(mt.softmax(mt.tensor([10.0, 20.0, 30.0])).numpy(), [0, 0, 1], atol=1e-3)


HUGE = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, 1e4], [1e4, 1e4, -1e4]])


def test_softmax_family_is_stable_for_huge_logits():
    x = mt.tensor(HUGE, requires_grad=True)
    p = mt.softmax(x)
    np.testing.assert_allclose(p.numpy(), [[1, 0, 0], [0, 0, 1], [0.5, 0.5, 0]], atol=1e-300)
    logp = mt.log_softmax(x)
    log2 = np.log(2)
    np.testing.assert_allclose(logp.numpy(), [[0, -1e4, -2e4], [-2e4, -2e4, 0], [-log2, -log2, -2e4 - log2]], rtol=1e-12)
    u = np.array([[0.3, -1.0, 2.0], [1.0, 0.5, -0.2], [0.7, -0.7, 0.1]])
    (g_softmax,) = mt.grad(p, x, grad_outputs=mt.tensor(u))
    (g_log_softmax,) = mt.grad(mt.log_softmax(x), x, grad_outputs=mt.tensor(u))
    p_np = np.exp(np_log_softmax(HUGE))
    np.testing.assert_allclose(g_softmax.numpy(), p_np * (u - (u * p_np).sum(-1, keepdims=True)), atol=1e-15)
    np.testing.assert_allclose(g_log_softmax.numpy(), u - p_np * u.sum(-1, keepdims=True), atol=1e-15)
    for op in [mt.softmax, mt.log_softmax]:
        assert mt.gradcheck(op, [mt.tensor(HUGE, requires_grad=True)])


def test_cross_entropy_is_stable_for_huge_logits():
    x = mt.tensor(HUGE, requires_grad=True)
    targets = mt.tensor(np.array([0, 0, 1]))
    loss = mt.cross_entropy(x, targets)
    np.testing.assert_allclose(loss.item(), (0 + 2e4 + np.log(2)) / 3, rtol=1e-12)
    loss.backward()
    assert np.isfinite(x.grad.numpy()).all()
    expected = (np.exp(np_log_softmax(HUGE)) - np.eye(3)[[0, 0, 1]]) / 3
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-15)
    assert mt.gradcheck(lambda t: mt.cross_entropy(t, targets), [mt.tensor(HUGE, requires_grad=True)])


# ---------------------------------------------------------------------------- cross_entropy
@st.composite
def classification(draw, device, ignore_index=None):
    """(logits (..., C), integer targets (...)): positions of shape (N,) or (B, T)."""
    positions = draw(st.one_of(hnp.array_shapes(min_dims=1, max_dims=1, max_side=4),  # (N,)
                               hnp.array_shapes(min_dims=2, max_dims=2, max_side=3)))  # (B, T)
    n_classes = draw(st.integers(1, 4))
    logits = draw(tensors(positions + (n_classes,), device=device))
    targets = draw(hnp.arrays(np.int64, positions, elements=st.integers(0, n_classes - 1)))
    if ignore_index is not None:
        ignored = draw(hnp.arrays(bool, positions))
        targets[ignored] = ignore_index
        assume((targets != ignore_index).any())  # ignore_index may also be a real class id
    return logits, mt.tensor(targets, device=device)


@pytest.mark.slow
@devices
@pytest.mark.parametrize('ignore_index', [None, -100, 0])
@given(data=st.data())
def test_cross_entropy(device, ignore_index, data):
    logits, targets = data.draw(classification(device, ignore_index))
    loss = mt.cross_entropy(logits, targets, ignore_index=ignore_index)
    assert_forward(loss, np_cross_entropy(logits.numpy(), targets.numpy(), ignore_index))
    assert mt.gradcheck(lambda t: mt.cross_entropy(t, targets, ignore_index=ignore_index), [logits])


@given(data=st.data())
def test_cross_entropy_second_derivatives(data):
    logits, targets = data.draw(classification('cpu', -100))
    assert mt.gradgradcheck(lambda t: mt.cross_entropy(t, targets, ignore_index=-100), [logits])


def test_cross_entropy_with_every_target_ignored_is_nan_with_zero_gradient():
    logits = mt.tensor(np.ones((2, 3)), requires_grad=True)
    loss = mt.cross_entropy(logits, mt.tensor(np.array([-100, -100])), ignore_index=-100)
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(logits.grad.numpy(), np.zeros((2, 3)))


def test_cross_entropy_accepts_lists_and_arrays_as_targets():
    logits = mt.tensor(np.array([[2.0, 0.0], [0.0, 1.0]]))
    expected = np_cross_entropy(logits.numpy(), np.array([0, 1]))
    assert_forward(mt.cross_entropy(logits, [0, 1]), expected)
    assert_forward(mt.cross_entropy(logits, np.array([0, 1])), expected)


# ---------------------------------------------------------------------------- layer_norm
@pytest.mark.slow
@devices
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm(device, data, eps):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    assume(x.shape[-1] > 1)  # one feature normalises to 0 for every input: nothing to check
    gamma = data.draw(tensors(x.shape[-1:], device=device))
    beta = data.draw(tensors(x.shape[-1:], device=device))
    assume((x.numpy().std(-1) > 0.1).all())  # finite differences are poor where var(x) ~ 0
    assert_forward(mt.layer_norm(x, x.shape[-1:], gamma, beta, eps), np_layer_norm(x.numpy(), gamma.numpy(), beta.numpy(), eps))
    assert mt.gradcheck(lambda t, g, b: mt.layer_norm(t, t.shape[-1:], g, b, eps), [x, gamma, beta])


@pytest.mark.slow
@given(data=st.data())
def test_layer_norm_second_derivatives(data):
    x = data.draw(tensors((2, 3)))
    assume((x.numpy().std(-1) > 0.3).all())
    gamma, beta = data.draw(tensors((3,))), data.draw(tensors((3,)))
    assert mt.gradgradcheck(lambda t, g, b: mt.layer_norm(t, t.shape[-1:], g, b, 1e-5), [x, gamma, beta])


def test_layer_norm_matches_the_article():
    y = mt.layer_norm(mt.tensor([2.0, 8.0, -4.0, -6.0]), 4, mt.tensor([1.2, 0.8, 1.0, 1.5]),
                      mt.tensor([0.1, -0.1, 0.0, 0.2]), eps=0)
    np.testing.assert_allclose(y.numpy(), [0.538, 1.069, -0.730, -1.444], atol=2e-3)


# ---------------------------------------------------------------------------- dropout
@devices
@given(data=st.data(), p=st.sampled_from([0.1, 0.5, 0.9]))
def test_dropout_gradient_is_the_mask(device, data, p):
    # values away from 0, so that y == 0 exactly where dropout dropped
    x = data.draw(tensors(data.draw(nonscalar_shapes), low=0.5, high=3.0, device=device))
    y = mt.dropout(x, p, training=True)
    kept = y.numpy() != 0
    assert_forward(y, np.where(kept, x.numpy() / (1 - p), 0.0))
    u = np.random.default_rng(1).standard_normal(x.shape)
    (gx,) = mt.grad(y, x, grad_outputs=mt.tensor(u, device=device))
    np.testing.assert_allclose(gx.numpy(), u * kept / (1 - p), rtol=1e-15)


@pytest.mark.parametrize('p', [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    x = mt.ones(200, 100, dtype='float64')
    y = mt.dropout(x, p).numpy()
    n = y.size
    dropped = (y == 0).mean()
    assert abs(dropped - p) < 4 * np.sqrt(p * (1 - p) / n)  # 4 standard errors of a binomial share
    assert abs(y.mean() - 1.0) < 4 * np.sqrt(p / (1 - p) / n)  # inverted dropout keeps the mean
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / (1 - p)])


def test_dropout_off_and_extreme_rates():
    x = mt.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    assert mt.dropout(x, 0.5, training=False) is x
    assert mt.dropout(x, 0.0) is x
    assert_forward(mt.dropout(x, 1.0), np.zeros((2, 3)))
    mt.manual_seed(3)
    a = mt.dropout(x, 0.5).numpy()
    mt.manual_seed(3)
    np.testing.assert_array_equal(mt.dropout(x, 0.5).numpy(), a)  # seeded: the same mask


# ---------------------------------------------------------------------------- 0-d tensors
def test_scalar_tensors_through_nn_ops():
    logits = mt.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    target = mt.tensor(np.int64(2))  # one position: logits (C,), target ()
    loss = mt.cross_entropy(logits, target)
    assert loss.shape == ()
    assert_forward(loss, -np_log_softmax(logits.numpy())[2])
    assert mt.gradcheck(lambda t: mt.cross_entropy(t, target), [logits])
    x = mt.tensor(np.float64(2.0), requires_grad=True)
    y = mt.dropout(x, 0.5)
    assert y.shape == () and y.item() in (0.0, 4.0)
    assert mt.gradcheck(lambda t: mt.softmax(t.reshape(1)) * t, [x])
