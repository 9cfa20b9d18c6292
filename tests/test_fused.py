"""The textbook ops and the fused layer.

Each op (softmax, log-softmax, cross-entropy, GELU, layer norm, linear, masked softmax) is
checked against the same function composed from primitive ops, in value and in gradient,
with the fused layer off (the textbook ops of microtensor/ops/) and on (the Fused... ops of
microtensor/fused/), and by gradcheck and gradgradcheck in float64 either way: so each
fused op equals its textbook twin to first and second order.  Then the switch itself
(mt.set_fused, mt.fused(), MICROTENSOR_FUSED), and what a learner meets in a GPT's backward.
"""
import math
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from microtensor import backend
from microtensor.fused import compiled
from microtensor.fused.gelu import _gelu_gate
from microtensor.ops import linalg
from strategies import devices, nonscalar_shapes, tensors
from transformer import GPT, MultiHeadAttention, causal_mask, next_token_loss
from transformer.probes import SaturationProbe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
modes = pytest.mark.parametrize('fused', [False, True], ids=['textbook', 'fused'])


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


def linear_composed(x, W, b=None):
    """x @ W^T + b: PyTorch's linear, its weight (n_out, n_in), composed of a transpose and a product."""
    return x @ W.T if b is None else x @ W.T + b


def project_composed(x, W, b=None):
    """x @ W + b: the articles' projection, its weight (n_in, n_out)."""
    return x @ W if b is None else x @ W + b


# each layout of the weight: (the op, its composition, the weight's shape from n_in, n_out)
LAYOUTS = {'linear': (linalg.linear, linear_composed, lambda n_in, n_out: (n_out, n_in)),
           'project': (linalg.project, project_composed, lambda n_in, n_out: (n_in, n_out))}
layouts = pytest.mark.parametrize('layout', LAYOUTS)


# ---------------------------------------------------------------------------- the comparison
def assert_same_function(op, composed, inputs, device, fused, order=2):
    """With the fused layer on or off: the same values as the composed version, the same gradient
    w.r.t. every input for one random upstream gradient, and (order 2) gradcheck and gradgradcheck."""
    with mt.fused(fused):
        y, y_composed = op(*inputs), composed(*inputs)
        np.testing.assert_allclose(y.numpy(), y_composed.numpy(), rtol=1e-10, atol=1e-12)
        u = mt.tensor(np.random.default_rng(0).standard_normal(y.shape), device=device)
        for g, g_composed in zip(mt.grad(y, inputs, grad_outputs=u), mt.grad(y_composed, inputs, grad_outputs=u)):
            np.testing.assert_allclose(g.numpy(), g_composed.numpy(), rtol=1e-9, atol=1e-12)
        if order == 2:
            assert mt.gradcheck(op, inputs)
            assert mt.gradgradcheck(op, inputs)


@devices
@modes
@pytest.mark.parametrize('op, composed', [(mt.softmax, softmax_composed),
                                          (mt.log_softmax, log_softmax_composed)], ids=['softmax', 'log_softmax'])
@given(data=st.data())
def test_softmax_family(device, fused, op, composed, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert_same_function(lambda t: op(t, axis), lambda t: composed(t, axis), [x], device, fused)


@devices
@modes
@pytest.mark.parametrize('ignore_index', [None, -100])
@given(data=st.data())
def test_cross_entropy(device, fused, ignore_index, data):
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
                         lambda t: cross_entropy_composed(t, targets, ignore_index), [logits], device, fused)


@devices
@modes
@pytest.mark.parametrize('approximate, composed', [('tanh', gelu_tanh_composed), ('none', gelu_erf_composed)],
                         ids=['gelu_tanh', 'gelu_erf'])
@given(data=st.data())
def test_gelu(device, fused, approximate, composed, data):
    x = data.draw(tensors(device=device))
    assert_same_function(lambda t: mt.gelu(t, approximate=approximate), composed, [x], device, fused)


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
def test_fused_gelu_gate_is_the_tanh_gate_in_logistic_form(dtype):
    """The fused forward's gate h = 0.5 (1 + tanh u) is computed as 1 / (1 + exp(-2u)): the same
    numbers to a few roundings of 1, exactly 0 and 1 far from 0 (where x^3 or exp(-2u) overflow),
    and no warning on the way."""
    big = np.finfo(dtype).max
    x = np.concatenate([np.linspace(-12, 12, 2001), [-np.inf, -big, -200, -20, 20, 200, big, np.inf]]).astype(dtype)
    h = np.empty_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        _gelu_gate(x, h)
    with np.errstate(over='ignore', invalid='ignore'):
        x64 = x.astype(np.float64)
        expected = 0.5 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 * x64 * x64)))
    np.testing.assert_allclose(h, expected, rtol=0, atol=8 * np.finfo(dtype).eps)
    assert (h[x <= -200] == 0).all() and (h[x >= 20] == 1).all()


@modes
@pytest.mark.parametrize('approximate', ['tanh', 'none'])
def test_gelu_far_from_zero_is_x_or_zero(fused, approximate):
    """Beyond |x| = 100 GELU is x or 0 to every float's precision: no inf * 0 = nan at +-inf or where
    x^3 overflows, and the slope is exactly 1 or 0 (also its second derivative there: 0)."""
    x = mt.tensor([-np.inf, -1e200, -150.0, 150.0, 1e200, np.inf], dtype=mt.float64, requires_grad=True)
    with mt.fused(fused), warnings.catch_warnings():
        warnings.simplefilter('error')  # an overflow on the way to the limit is not the user's problem
        y = mt.gelu(x, approximate=approximate)
        (slope,) = mt.grad(y.sum(), x, create_graph=True)
        (curvature,) = mt.grad(slope.sum(), x)
    np.testing.assert_array_equal(y.numpy(), [0, 0, 0, 150, 1e200, np.inf])
    np.testing.assert_array_equal(slope.numpy(), [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(curvature.numpy(), np.zeros(6))


@modes
@pytest.mark.parametrize('approximate', ['tanh', 'none'])
@pytest.mark.parametrize('dtype', [np.int8, np.int64, np.float16, np.float32])
def test_gelu_of_any_dtype_gives_the_default_float_for_integers(fused, approximate, dtype):
    """Ints give the default float (float32), as tanh and erf of ints do; floats keep their dtype."""
    x = np.array([-3, 0, 2], dtype=dtype)
    with mt.fused(fused):
        y = mt.gelu(mt.tensor(x), approximate=approximate)
        exact = mt.gelu(mt.tensor(x.astype(np.float64)), approximate=approximate).numpy()
    assert y.dtype == (dtype if np.dtype(dtype).kind == 'f' else mt.float32)
    np.testing.assert_allclose(y.numpy(), exact, rtol=0, atol=10 * np.finfo(y.dtype).eps)


def fake_scipy(monkeypatch):
    """A stand-in for scipy.special.erf, whose result dtype is its own (here float64 for every input)."""
    special = types.ModuleType('scipy.special')
    special.erf = np.vectorize(math.erf, otypes=[np.float64])
    scipy = types.ModuleType('scipy')
    scipy.special = special
    monkeypatch.setitem(sys.modules, 'scipy', scipy)
    monkeypatch.setitem(sys.modules, 'scipy.special', special)


@pytest.mark.parametrize('scipy', ['scipy', 'no scipy'])
@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64, np.int64])
def test_erf_returns_the_inputs_float_type_with_or_without_scipy(monkeypatch, scipy, dtype):
    if scipy == 'scipy':
        fake_scipy(monkeypatch)
    else:
        monkeypatch.setitem(sys.modules, 'scipy', None)  # `from scipy.special import erf` raises ImportError
    x = np.array([-2, 0, 1], dtype=dtype)
    y = backend.erf(x)
    assert y.dtype == np.result_type(dtype, 1.0)  # numpy's rule for an array (a tensor of ints: float32)
    np.testing.assert_allclose(y, [math.erf(v) for v in x.tolist()], rtol=2 * np.finfo(y.dtype).eps)
    assert mt.gelu(mt.tensor(x), approximate='none').dtype == (dtype if np.dtype(dtype).kind == 'f' else mt.float32)


@devices
@modes
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm(device, fused, data, eps):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    gamma = data.draw(tensors(x.shape[-1:], device=device))
    beta = data.draw(tensors(x.shape[-1:], device=device))
    assume((x.numpy().std(-1) > 0.1).all() or x.shape[-1] == 1)  # var ~ eps: both right, but rounding differs
    assert_same_function(lambda x, *params: mt.layer_norm(x, x.shape[-1:], *params, eps=eps),
                         lambda *ts: layer_norm_composed(*ts, eps), [x, gamma, beta], device, fused)


@devices
@modes
@layouts
@pytest.mark.parametrize('bias', [True, False], ids=['bias', 'no_bias'])
@given(data=st.data())
def test_linear(device, fused, layout, bias, data):
    op, composed, weight_shape = LAYOUTS[layout]
    leading = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))  # x: 1-D to 3-D
    n_in, n_out = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    inputs = [data.draw(tensors(leading + (n_in,), device=device)),
              data.draw(tensors(weight_shape(n_in, n_out), device=device))]
    inputs += [data.draw(tensors((n_out,), device=device))] if bias else []
    assert_same_function(op, composed, inputs, device, fused)


def assert_textbook_equals_fused(fn, *shapes):
    """fn's value and its inputs' gradients (of sum(y * y)) are the same, shapes and numbers, in the
    textbook and the fused layer, for ones of `shapes` (the last input counts 0, 1, 2, ...: a bias or
    beta that is not all ones)."""
    results = []
    for fused in (False, True):
        inputs = [mt.ones(shape, requires_grad=True) for shape in shapes[:-1]]
        inputs.append(mt.arange(math.prod(shapes[-1]), dtype=mt.float32).reshape(shapes[-1]).requires_grad_())
        with mt.fused(fused):
            y = fn(*inputs)
            (y * y).sum().backward()
        results.append([y.numpy()] + [t.grad.numpy() for t in inputs])
    for textbook, fused in zip(*results):
        assert textbook.shape == fused.shape
        np.testing.assert_array_equal(textbook, fused)


@layouts
@pytest.mark.parametrize('x_shape, n_out', [((0, 3), 2), ((2, 3, 0), 4), ((2, 3), 0), ((0, 0), 0)],
                         ids=['no_rows', 'no_inputs', 'no_outputs', 'nothing'])
def test_linear_of_empty_sides(layout, x_shape, n_out):
    """Empty sides (no rows, n_in = 0 or n_out = 0): FusedLinear gives what the textbook gives, values and
    gradients (an empty sum is 0: with n_in = 0, y = b)."""
    op, _, weight_shape = LAYOUTS[layout]
    assert_textbook_equals_fused(op, x_shape, weight_shape(x_shape[-1], n_out), (n_out,))


@pytest.mark.parametrize('x_shape', [(0, 3), (2, 0), (2, 3, 0)], ids=['no_rows', 'no_features', 'no_features_3d'])
def test_layer_norm_of_empty_sides(x_shape):
    """No rows, or no features: FusedLayerNorm gives what the textbook gives, values and gradients."""
    with warnings.catch_warnings():  # the mean of no features: numpy warns, and both layers give nan
        warnings.simplefilter('ignore', RuntimeWarning)
        assert_textbook_equals_fused(lambda x, w, b: mt.layer_norm(x, x.shape[-1:], w, b), x_shape, x_shape[-1:], x_shape[-1:])


def random_mask(data, shape):
    """A boolean mask of `shape` (or a shape broadcasting to it) with a True in every row."""
    mask_shape = data.draw(st.sampled_from([shape, shape[-2:], (shape[0],) + (1,) * (len(shape) - 2) + shape[-1:]]))
    mask = data.draw(hnp.arrays(bool, mask_shape))
    mask[..., 0] = True  # every query keeps a key (softmax of an all -inf row is 0/0)
    return mt.tensor(mask)


@devices
@modes
@pytest.mark.parametrize('masked', [True, False], ids=['mask', 'no_mask'])
@given(data=st.data())
def test_masked_softmax(device, fused, masked, data):
    s = data.draw(tensors(data.draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4)), device=device))
    mask = random_mask(data, s.shape).to(device) if masked else None
    composed = lambda t: softmax_composed(t if mask is None else mt.where(mask, t, -math.inf))  # noqa: E731
    assert_same_function(lambda t: mt.masked_softmax(t, mask), composed, [s], device, fused)


# ---------------------------------------------------------------------------- bit for bit
def test_fused_linear_and_masked_softmax_are_bit_for_bit_their_composition(monkeypatch):
    """float32, the GPT's shapes: FusedLinear is the product of the flattened rows with the bias
    added in place (the same rounding as x.reshape(-1, n_in) @ W + b; the textbook's batched
    x @ W may round differently, by float32's last bit); FusedMaskedSoftmax's numpy form is
    where + FusedSoftmax, in place (its compiled loop agrees to rounding: test_compiled.py)."""
    monkeypatch.setattr(compiled, 'enabled', False)
    x, W, b = mt.randn(2, 16, 8), mt.randn(8, 24), mt.randn(24)
    s, mask = mt.randn(2, 4, 16, 16), causal_mask(16)
    with mt.fused():
        np.testing.assert_array_equal(linalg.project(x, W, b).numpy(), (x.reshape(-1, 8) @ W + b).reshape(2, 16, 24).numpy())
        np.testing.assert_array_equal(mt.linear(x, W.T, b).numpy(), linalg.project(x, W, b).numpy())
        np.testing.assert_allclose(linalg.project(x, W, b).numpy(), (x @ W + b).numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(mt.masked_softmax(s, mask).numpy(),
                                      mt.where(mask, s, -math.inf).softmax().numpy())
        np.testing.assert_array_equal(mt.masked_softmax(s).numpy(), s.softmax().numpy())


@pytest.mark.parametrize('mask, error, message', [
    (np.tril(np.ones((3, 3), dtype=int)), TypeError, r"masked_softmax: the mask must be boolean .* not int64"),
    (np.ones((4, 3, 3), dtype=bool), ValueError, r"mask of shape \(4, 3, 3\) does not broadcast to .*\(2, 3, 3\)"),
    (np.ones((2, 3), dtype=bool), ValueError, r"mask of shape \(2, 3\) does not broadcast"),
])
@modes
def test_masked_softmax_names_a_mask_it_cannot_use(fused, mask, error, message):
    with mt.fused(fused), pytest.raises(error, match=message):
        mt.masked_softmax(mt.randn(2, 3, 3), mask)


def test_attention_textbook_and_fused_agree_and_probes_read_the_same():
    """MultiHeadAttention with the fused layer off and on: the same output, last_scores, last_weights
    and gradients (to float32 rounding); the saturation probe's table is the same either way."""
    x = mt.randn(2, 5, 8)
    runs = {}
    for fused in (False, True):
        mt.manual_seed(0)
        m = MultiHeadAttention(8, 2)
        with mt.fused(fused), SaturationProbe(m) as probe:
            out = m(x, mask=causal_mask(5))
            (out ** 2).sum().backward()
        runs[fused] = (out, m, probe)
    (out_t, m_t, probe_t), (out_f, m_f, probe_f) = runs[False], runs[True]
    for a, b in [(out_t, out_f), (m_t.last_scores, m_f.last_scores), (m_t.last_weights, m_f.last_weights)]:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    for p_t, p_f in zip(m_t.parameters(), m_f.parameters()):
        np.testing.assert_allclose(p_t.grad.numpy(), p_f.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m_t.last_scores.grad.numpy(), m_f.last_scores.grad.numpy(), rtol=1e-5, atol=1e-7)
    for r_t, r_f in zip(probe_t.rows(), probe_f.rows()):
        assert r_t.stats == pytest.approx(r_f.stats, rel=1e-5, abs=1e-7)
        assert r_t.grad_weights == pytest.approx(r_f.grad_weights, rel=1e-5)
        assert r_t.grad_scores == pytest.approx(r_f.grad_scores, rel=1e-5)


# ---------------------------------------------------------------------------- the switch
def test_set_fused_returns_the_previous_setting_and_fused_restores_it():
    mt.set_fused(False)  # (conftest gives the next test the run's setting back)
    assert mt.set_fused(True) is False and mt.is_fused()
    assert mt.set_fused(False) is True and not mt.is_fused()
    with mt.fused():
        assert mt.is_fused()
        with mt.fused(False):
            assert not mt.is_fused()
        assert mt.is_fused()
    assert not mt.is_fused()
    with pytest.raises(ZeroDivisionError), mt.fused():
        1 / 0
    assert not mt.is_fused()  # also after the block raised
    with pytest.raises(TypeError, match="set_fused: flag must be True or False, not int 1"):
        mt.set_fused(1)


def gpt_and_batch(dtype='float32'):
    mt.manual_seed(0)
    model = GPT(11, d_model=8, n_layers=2, n_heads=2, max_len=6).to(dtype=dtype)
    return model, mt.randint(0, 11, (2, 6))


def backward_ops(fused, dtype='float32'):
    """(op names of a tiny GPT's backward_steps, {parameter name: gradient}) with the fused layer off or on."""
    model, ids = gpt_and_batch(dtype)
    with mt.fused(fused):
        loss = next_token_loss(model(ids), ids)
        names = [type(step.op).__name__ for step in mt.backward_steps(loss)]
    return names, {name: p.grad.numpy() for name, p in model.named_parameters()}


def test_a_gpt_backward_meets_the_textbook_ops_by_default_and_the_fused_ones_when_on():
    textbook, grads_textbook = backward_ops(False, 'float64')
    fused, grads_fused = backward_ops(True, 'float64')
    assert {'Softmax', 'Where', 'GeluTanh', 'LayerNormOp', 'MatMul', 'Add'} <= set(textbook)
    assert not [name for name in textbook if name.startswith('Fused')]
    fused_ops = {name for name in fused if name.startswith('Fused')}
    assert {'FusedLinear', 'FusedMaskedSoftmax', 'FusedGeluTanh', 'FusedLayerNorm'} <= fused_ops
    assert 'Softmax' not in fused and 'GeluTanh' not in fused and len(fused) < len(textbook)
    assert grads_textbook.keys() == grads_fused.keys()
    for name in grads_textbook:
        np.testing.assert_allclose(grads_fused[name], grads_textbook[name], rtol=1e-9, atol=1e-12, err_msg=name)


SHOW_OPS = ("import microtensor as mt; from transformer import GPT, next_token_loss; "
            "m = GPT(11, d_model=8, n_layers=1, n_heads=2, max_len=6); ids = mt.randint(0, 11, (1, 6)); "
            "print(mt.is_fused(), sorted({type(s.op).__name__ for s in mt.backward_steps(next_token_loss(m(ids), ids))}))")


@pytest.mark.slow
@pytest.mark.parametrize('setting, fused', [(None, False), ('1', True), ('0', False)])
def test_microtensor_fused_in_the_environment_sets_the_default_for_a_whole_run(setting, fused):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop('MICROTENSOR_FUSED', None)
    if setting is not None:
        env['MICROTENSOR_FUSED'] = setting
    out = subprocess.run([sys.executable, '-c', SHOW_OPS], env=env, capture_output=True, text=True, check=True,
                         timeout=120).stdout
    on, ops = out.split(' ', 1)
    assert on == str(fused)
    assert ('FusedLinear' in ops) == fused and ("'Softmax'" in ops) == (not fused)


def test_a_microtensor_fused_setting_it_cannot_read_is_refused_with_the_values_it_takes():
    env = dict(os.environ, PYTHONPATH=ROOT, MICROTENSOR_FUSED='fast')
    done = subprocess.run([sys.executable, '-c', 'import microtensor'], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "MICROTENSOR_FUSED='fast': use 1 (the fused layer on) or 0 (off, the default)" in done.stderr


@pytest.mark.parametrize('flags, fused', [([], True), (['--no-fused'], False)], ids=['default', 'no-fused'])
def test_train_gpt_trains_with_the_fused_layer_unless_told_not_to(tmp_path, monkeypatch, capsys, flags, fused):
    from demos import train_gpt
    from microtensor.autograd import Function
    used, apply = set(), Function.apply.__func__

    def recording_apply(cls, *inputs, **params):
        used.add(cls.__name__)
        return apply(cls, *inputs, **params)

    monkeypatch.setattr(Function, 'apply', classmethod(recording_apply))
    mt.set_fused(False)
    train_gpt.main(['--d-model', '16', '--n-layers', '1', '--n-heads', '2', '--context', '16', '--batch-size', '4',
                    '--sample-length', '0', '--steps', '2', '--out', str(tmp_path / 'run'), *flags])
    assert ('FusedLinear' in used) == fused and ('Softmax' in used) == (not fused)
    assert not mt.is_fused()  # the setting before the run is back
