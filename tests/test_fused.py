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



@pytest.mark.parametrize('approximate', ['tanh', 'none'])
@pytest.mark.parametrize('dtype', [np.int8, np.int64, np.float16, np.float32])
def test_gelu_of_any_dtype_follows_numpys_promotion(approximate, dtype):
    """Ints give float64 (as numpy's tanh and erf do); floats keep their dtype."""
    x = np.array([-3, 0, 2], dtype=dtype)
    y = mt.gelu(mt.tensor(x), approximate=approximate)
    assert y.dtype == np.result_type(dtype, 1.0)
    np.testing.assert_allclose(y.numpy(), mt.gelu(mt.tensor(x.astype(np.float64)), approximate=approximate).numpy(),
                               rtol=0, atol=10 * np.finfo(y.dtype).eps)

@devices
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm(device, data, eps):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    gamma = data.draw(tensors(x.shape[-1:], device=device))
    beta = data.draw(tensors(x.shape[-1:], device=device))
    assume((x.numpy().std(-1) > 0.1).all() or x.shape[-1] == 1)  # var ~ eps: both right, but rounding differs
    assert_same_function(lambda *ts: mt.layer_norm(*ts, eps=eps),
                         lambda *ts: layer_norm_composed(*ts, eps), [x, gamma, beta], device)


# ---------------------------------------------------------------------------- fused for speed
# nn.Linear's op, attention's mask + softmax: the lesson is not their insides, so the
# engine runs them as one op; each must equal its composed twin, to first and second order.
from microtensor.ops.attention import masked_softmax  # noqa: E402
from microtensor.ops.linalg import linear  # noqa: E402
from transformer import MultiHeadAttention, causal_mask  # noqa: E402
from transformer.probes import SaturationProbe  # noqa: E402


def linear_composed(x, W, b=None):
    return x @ W if b is None else x @ W + b


@devices
@pytest.mark.parametrize('bias', [True, False], ids=['bias', 'no_bias'])
@given(data=st.data())
def test_linear(device, bias, data):
    leading = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))  # x: 1-D to 3-D
    n_in, n_out = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    inputs = [data.draw(tensors(leading + (n_in,), device=device)), data.draw(tensors((n_in, n_out), device=device))]
    inputs += [data.draw(tensors((n_out,), device=device))] if bias else []
    assert_same_function(linear, linear_composed, inputs, device)
    assert mt.gradcheck(linear, inputs)
    assert mt.gradgradcheck(linear, inputs)


def random_mask(data, shape):
    """A boolean mask of `shape` (or a shape broadcasting to it) with a True in every row."""
    mask_shape = data.draw(st.sampled_from([shape, shape[-2:], (shape[0],) + (1,) * (len(shape) - 2) + shape[-1:]]))
    mask = data.draw(hnp.arrays(bool, mask_shape))
    mask[..., 0] = True  # every query keeps a key (softmax of an all -inf row is 0/0)
    return mt.tensor(mask)


@devices
@pytest.mark.parametrize('masked', [True, False], ids=['mask', 'no_mask'])
@given(data=st.data())
def test_masked_softmax(device, masked, data):
    s = data.draw(tensors(data.draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4)), device=device))
    mask = random_mask(data, s.shape).to(device) if masked else None
    composed = lambda t: (t if mask is None else mt.where(mask, t, -math.inf)).softmax(axis=-1)  # noqa: E731
    assert_same_function(lambda t: masked_softmax(t, mask), composed, [s], device)
    assert mt.gradcheck(lambda t: masked_softmax(t, mask), [s])
    assert mt.gradgradcheck(lambda t: masked_softmax(t, mask), [s])


def test_masked_softmax_weights_are_bit_for_bit_the_composed_ones():
    """float32, the GPT's shapes: the lessons read the same numbers on either path."""
    s = mt.randn(2, 4, 16, 16)
    mask = causal_mask(16)
    np.testing.assert_array_equal(masked_softmax(s, mask).numpy(), mt.where(mask, s, -math.inf).softmax().numpy())
    np.testing.assert_array_equal(masked_softmax(s).numpy(), s.softmax().numpy())


@pytest.mark.parametrize('mask, error, message', [
    (np.tril(np.ones((3, 3), dtype=int)), TypeError, r"masked_softmax: the mask must be boolean .* not int64"),
    (np.ones((4, 3, 3), dtype=bool), ValueError, r"mask of shape \(4, 3, 3\) does not broadcast to .*\(2, 3, 3\)"),
    (np.ones((2, 3), dtype=bool), ValueError, r"mask of shape \(2, 3\) does not broadcast"),
])
def test_masked_softmax_names_a_mask_it_cannot_use(mask, error, message):
    with pytest.raises(error, match=message):
        masked_softmax(mt.randn(2, 3, 3), mask)


def test_mha_fused_and_unfused_agree_and_probes_read_the_same():
    """MultiHeadAttention.fused: the same output, last_scores, last_weights (bit for bit) and
    gradients; the saturation probe's table is the same either way."""
    x = mt.randn(2, 5, 8)
    runs = {}
    for fused in (True, False):
        mt.manual_seed(0)
        m = MultiHeadAttention(8, 2)
        m.fused = fused
        with SaturationProbe(m) as probe:
            out = m(x, mask=causal_mask(5))
            (out ** 2).sum().backward()
        runs[fused] = (out, m, probe)
    (out_f, m_f, probe_f), (out_u, m_u, probe_u) = runs[True], runs[False]
    for a, b in [(out_f, out_u), (m_f.last_scores, m_u.last_scores), (m_f.last_weights, m_u.last_weights)]:
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for p_f, p_u in zip(m_f.parameters(), m_u.parameters()):
        np.testing.assert_allclose(p_f.grad.numpy(), p_u.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(m_f.last_scores.grad.numpy(), m_u.last_scores.grad.numpy(), rtol=1e-5, atol=1e-8)
    for r_f, r_u in zip(probe_f.rows(), probe_u.rows()):
        assert r_f.stats == r_u.stats and r_f.grad_weights == r_u.grad_weights
        assert r_f.grad_scores == pytest.approx(r_u.grad_scores, rel=1e-5)
