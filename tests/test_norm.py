"""Normalisation layers (transformer/norm.py): LayerNorm, RMSNorm, BatchNorm1d.

Proves: each equals its numpy formula; float64 gradient checks end to end (BatchNorm1d
in train mode, through the batch statistics, on (N, C) and (B, T, C), and in eval
mode); BatchNorm1d uses batch statistics in training and moves its running statistics
by the momentum rule, and uses (without changing) the running ones in eval; LayerNorm
of a token does not depend on the rest of the batch while BatchNorm's does (the
articles' reason Transformers use LayerNorm); RMSNorm is scale invariant; clear errors.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from module_check import gradcheck_module
from transformer import BatchNorm1d, LayerNorm, RMSNorm

shapes = hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=5)


def with_random_affine(module, rng):
    """Random gamma (and beta) so the affine part is tested too."""
    for p in module.parameters():
        p.data = rng.standard_normal(p.shape).astype(p.dtype)
    return module


@given(shape=shapes, seed=st.integers(0, 2 ** 16))
def test_layer_norm_is_the_formula(shape, seed):
    rng = np.random.default_rng(seed)
    ln = with_random_affine(LayerNorm(shape[-1]), rng)
    x = rng.standard_normal(shape) * 3 + 1
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    expected = (x - mu) / np.sqrt(var + 1e-5) * ln.gamma.numpy() + ln.beta.numpy()
    np.testing.assert_allclose(ln(mt.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)


@given(shape=shapes, seed=st.integers(0, 2 ** 16))
def test_rms_norm_is_the_formula_and_scale_invariant(shape, seed):
    rng = np.random.default_rng(seed)
    rms = with_random_affine(RMSNorm(shape[-1]), rng)
    x = rng.standard_normal(shape)
    x += 0.1 * np.sign(x)  # keep every row's mean square >= 0.01, where eps = 1e-8 cannot break scale invariance
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-8) * rms.gamma.numpy()
    out = rms(mt.tensor(x)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rms(mt.tensor(7.5 * x)).numpy(), out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('module, shape', [
    (LayerNorm(4), (2, 3, 4)), (RMSNorm(4), (2, 3, 4)),
    (BatchNorm1d(3), (4, 3)), (BatchNorm1d(3), (2, 3, 3)),
], ids=['layer', 'rms', 'batch_NC', 'batch_BTC'])
def test_norm_gradcheck(module, shape):
    rng = np.random.default_rng(0)
    with_random_affine(module, rng)
    assert gradcheck_module(module, mt.tensor(rng.standard_normal(shape)))


def test_batch_norm_eval_gradcheck():
    bn = BatchNorm1d(3)
    bn.running_mean.copy_(mt.tensor([0.5, -1.0, 2.0]))
    bn.running_var.copy_(mt.tensor([2.0, 0.5, 1.5]))
    assert gradcheck_module(bn.eval(), mt.randn(4, 3))


def test_batch_norm_train_uses_batch_statistics_and_updates_running_ones():
    bn = BatchNorm1d(3, momentum=0.1)
    rng = np.random.default_rng(1)
    x1, x2 = rng.standard_normal((2, 5, 3)) * 2 + 3, rng.standard_normal((4, 3)) - 1
    y = bn(mt.tensor(x1)).numpy().reshape(-1, 3)
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-6)        # each feature normalised over batch and time
    np.testing.assert_allclose(y.var(0), 1, rtol=1e-4)
    flat = x1.reshape(-1, 3)
    mean1, var1 = flat.mean(0), flat.var(0, ddof=1)            # running_var takes the unbiased variance
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.9 * 0 + 0.1 * mean1, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 * 1 + 0.1 * var1, rtol=1e-5)
    bn(mt.tensor(x2))
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.9 * (0.1 * mean1) + 0.1 * x2.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 * (0.9 + 0.1 * var1) + 0.1 * x2.var(0, ddof=1),
                               rtol=1e-5)


def test_batch_norm_eval_uses_running_statistics():
    bn = BatchNorm1d(2)
    bn.running_mean.copy_(mt.tensor([1.0, -2.0]))
    bn.running_var.copy_(mt.tensor([4.0, 0.25]))
    bn.eval()
    x = np.array([[3.0, -2.0], [1.0, -1.5]])
    np.testing.assert_allclose(bn(mt.tensor(x)).numpy(), (x - [1.0, -2.0]) / np.sqrt(np.array([4.0, 0.25]) + 1e-5),
                               rtol=1e-6)
    np.testing.assert_array_equal(bn.running_mean.numpy(), [1.0, -2.0])   # eval changes nothing
    assert bn(mt.tensor(x[:1])).shape == (1, 2)                           # one sample is fine in eval
    assert sorted(name for name, _ in bn.named_buffers()) == ['running_mean', 'running_var']


def test_layer_norm_ignores_the_batch_but_batch_norm_does_not():
    x = mt.randn(4, 6)
    ln, bn = LayerNorm(6), BatchNorm1d(6)
    np.testing.assert_allclose(ln(x[:1]).numpy(), ln(x).numpy()[:1], rtol=1e-6)
    assert np.abs(bn(x[:2]).numpy()[:1] - bn(x).numpy()[:1]).max() > 1e-2


def test_norm_errors_are_clear():
    with pytest.raises(ValueError, match='more than one value per feature'):
        BatchNorm1d(3)(mt.randn(1, 3))
    with pytest.raises(ValueError, match=r'BatchNorm1d\(3\).*\(2, 4\)'):
        BatchNorm1d(3)(mt.randn(2, 4))
    with pytest.raises(ValueError, match=r'RMSNorm\(3\).*\(2, 4\)'):
        RMSNorm(3)(mt.randn(2, 4))
    with pytest.raises(ValueError, match=r'LayerNorm\(3\): expected x of shape \(\.\.\., 3\),.* got \(2, 4\)'):
        LayerNorm(3)(mt.randn(2, 4))
