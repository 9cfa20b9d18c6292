"""Each fused op (one forward, one hand-derived backward) equals the same function
composed from primitive ops, in value and in gradient, so a learner can read the
plain version below and trust the fast one."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import devices, nonscalar_shapes, tensors


# ---------------------------------------------------------------------------- the composed versions
def softmax_composed(x, axis=-1):
    e = x.exp()
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_composed(x, axis=-1):
    return x - x.exp().sum(axis=axis, keepdims=True).log()


def cross_entropy_composed(logits, targets, ignore_index=None):
    """-mean over counted positions of log_softmax(logits)[target], picked with a one-hot mask."""
    n_classes = logits.shape[-1]
    t = targets.numpy()
    counted = t != ignore_index if ignore_index is not None else np.ones(t.shape, dtype=bool)
    one_hot = (np.arange(n_classes) == np.where(counted, t, 0)[..., None]) & counted[..., None]
    picked = (log_softmax_composed(logits) * mt.tensor(one_hot.astype(np.float64), device=logits.device)).sum()
    return -picked / float(counted.sum())


def gelu_tanh_composed(x):
    return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)).tanh())


def gelu_erf_composed(x):
    return 0.5 * x * (1 + mt.erf(x / math.sqrt(2)))


def layer_norm_composed(x, gamma, beta, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / (var + eps).sqrt() * gamma + beta


# ---------------------------------------------------------------------------- the comparison
def assert_same_function(fused, composed, inputs, device):
    """Same values, and the same gradient w.r.t. every input for one random upstream gradient."""
    y_fused, y_composed = fused(*inputs), composed(*inputs)
    np.testing.assert_allclose(y_fused.numpy(), y_composed.numpy(), rtol=1e-10, atol=1e-12)
    u = mt.tensor(np.random.default_rng(0).standard_normal(y_fused.shape), device=device)
    grads_fused = mt.grad(y_fused, inputs, grad_outputs=u)
    grads_composed = mt.grad(y_composed, inputs, grad_outputs=u)
    for g_fused, g_composed in zip(grads_fused, grads_composed):
        np.testing.assert_allclose(g_fused.numpy(), g_composed.numpy(), rtol=1e-9, atol=1e-12)


@devices
@pytest.mark.parametrize('fused, composed', [(mt.softmax, softmax_composed),
                                             (mt.log_softmax, log_softmax_composed)], ids=['softmax', 'log_softmax'])
@given(data=st.data())
def test_softmax_family(device, fused, composed, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert_same_function(lambda t: fused(t, axis), lambda t: composed(t, axis), [x], device)


@devices
@pytest.mark.parametrize('ignore_index', [None, -100])
@given(data=st.data())
def test_cross_entropy(device, ignore_index, data):
    positions = data.draw(st.sampled_from([(4,), (2, 3)]))  # targets (N,) and (B, T)
    n_classes = data.draw(st.integers(1, 4))
    logits = data.draw(tensors(positions + (n_classes,), device=device))
    targets = data.draw(hnp.arrays(np.int64, positions, elements=st.integers(0, n_classes - 1)))
    if ignore_index is not None:
        ignored = data.draw(hnp.arrays(bool, positions))
        targets[ignored] = ignore_index
        assume((targets != ignore_index).any())  # ignore_index may also be a real class id
    targets = mt.tensor(targets, device=device)
    assert_same_function(lambda t: mt.cross_entropy(t, targets, ignore_index=ignore_index),
                         lambda t: cross_entropy_composed(t, targets, ignore_index), [logits], device)


@devices
@pytest.mark.parametrize('approximate, composed', [('tanh', gelu_tanh_composed), ('none', gelu_erf_composed)],
                         ids=['gelu_tanh', 'gelu_erf'])
@given(data=st.data())
def test_gelu(device, approximate, composed, data):
    x = data.draw(tensors(device=device))
    assert_same_function(lambda t: mt.gelu(t, approximate=approximate), composed, [x], device)


@devices
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm(device, data, eps):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    gamma = data.draw(tensors(x.shape[-1:], device=device))
    beta = data.draw(tensors(x.shape[-1:], device=device))
    assume((x.numpy().std(-1) > 0.1).all() or x.shape[-1] == 1)  # var ~ eps: both right, but rounding differs
    assert_same_function(lambda *ts: mt.layer_norm(*ts, eps=eps),
                         lambda *ts: layer_norm_composed(*ts, eps), [x, gamma, beta], device)
