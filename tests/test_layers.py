"""Encoder and decoder layers and the residual connection (transformer/layers.py, residual.py).

Proves: both layer types pass float64 end-to-end gradient checks (input, memory and every
parameter) with Pre-LN, Post-LN and without the residual; the residual is y = x + alpha F(x)
(alpha = 0 makes a Pre-LN layer the identity, with Jacobian exactly I) and the probe sees
every branch by name; Post-LN outputs are normalised rows; a causal decoder layer's output
at t ignores later positions (values and exactly-zero gradients); an encoder layer without
positions is permutation-equivariant; a decoder layer fed one position at a time through a
KV cache equals the full pass; RMS/batch norm variants run; bad configurations and inputs
are clear errors.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from transformer import DecoderLayer, EncoderLayer, KVCache, causal_mask, padding_mask

D, H, T, S = 8, 2, 3, 4  # d_model, heads, target length, memory length
CHECK = dict(max_elements=8)  # vectors element by element, matrices along 3 random directions


def x_like(*shape, seed=0):
    return mt.tensor(np.random.default_rng(seed).standard_normal(shape), dtype='float64')


LAYER_VARIANTS = [dict(norm='pre'), dict(norm='post'), dict(norm='pre', residual=False),
                  dict(norm='post', residual=False, alpha=0.5)]


@pytest.mark.slow
@pytest.mark.parametrize('options', LAYER_VARIANTS, ids=str)
def test_encoder_layer_gradcheck(options):
    layer = EncoderLayer(D, H, d_ff=8, **options)
    mask = padding_mask(mt.tensor([[5, 6, 0], [5, 6, 7]]), pad_id=0)
    assert gradcheck_module(layer, x_like(2, T, D), call=lambda m, x: m(x, mask=mask), **CHECK)


@pytest.mark.slow
@pytest.mark.parametrize('options', LAYER_VARIANTS, ids=str)
def test_decoder_layer_gradcheck(options):
    layer = DecoderLayer(D, H, d_ff=8, **options)
    memory_mask = padding_mask(mt.tensor([[5, 6, 7, 0], [5, 6, 7, 8]]), pad_id=0)
    assert gradcheck_module(layer, x_like(2, T, D), x_like(2, S, D, seed=1),
                            call=lambda m, x, memory: m(x, memory, self_mask=causal_mask(T),
                                                        memory_mask=memory_mask), **CHECK)


def test_decoder_only_block_gradcheck():
    layer = DecoderLayer(D, H, d_ff=8, cross_attention=False)
    assert layer.cross_attn is None and layer.norm3 is None
    assert gradcheck_module(layer, x_like(2, T, D), call=lambda m, x: m(x, self_mask=causal_mask(T)), **CHECK)


# ---------------------------------------------------------------------------- the residual connection
@pytest.mark.parametrize('make', [lambda **kw: EncoderLayer(D, H, **kw), lambda **kw: DecoderLayer(D, H, **kw)])
@pytest.mark.parametrize('norm', ['pre', 'post'])
@pytest.mark.parametrize('residual, alpha', [(True, 1.0), (True, 0.3), (False, 1.0)])
def test_residual_is_x_plus_alpha_f_and_the_probe_sees_every_branch(make, norm, residual, alpha):
    layer = make(norm=norm, residual=residual, alpha=alpha)
    seen = []

    def probe(owner, name, x, fx, y):
        assert owner is layer
        expected = x.numpy() + alpha * fx.numpy() if residual else fx.numpy()
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6, atol=1e-6)
        seen.append(name)

    layer.residual_probe = probe
    x = x_like(2, T, D).float()
    if isinstance(layer, DecoderLayer):
        layer(x, x_like(2, S, D).float(), self_mask=causal_mask(T))
        assert seen == ['self_attn', 'cross_attn', 'ffn']
    else:
        layer(x)
        assert seen == ['self_attn', 'ffn']


@given(st.integers(0, 2**16))
def test_pre_ln_layer_with_alpha_zero_is_the_identity_highway(seed):
    """x + 0 * F(norm(x)) = x: the output is x and dL/dx is exactly the upstream gradient (the "+1")."""
    layer = EncoderLayer(D, H, alpha=0.0)
    x = x_like(2, T, D, seed=seed).float().requires_grad_()
    y = layer(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    u = x_like(2, T, D, seed=seed + 1).float()
    (y * u).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), u.numpy(), atol=1e-7)


@given(st.integers(0, 2**16))
def test_post_ln_output_rows_are_normalised(seed):
    layer = EncoderLayer(D, H, norm='post')  # gamma = 1, beta = 0 at the start
    y = layer(x_like(2, T, D, seed=seed).float() * 5).numpy()
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-5)
    np.testing.assert_allclose(y.std(axis=-1), 1, atol=1e-3)


# ---------------------------------------------------------------------------- structure
@given(st.integers(1, 5), st.data())
def test_causal_decoder_layer_ignores_the_future(T_len, data):
    t = data.draw(st.integers(0, T_len - 1))
    layer = DecoderLayer(D, H, cross_attention=False)
    x = x_like(1, T_len, D, seed=t).float().requires_grad_()
    y = layer(x, self_mask=causal_mask(T_len))
    changed = x.numpy().copy()
    changed[:, t + 1:] += 10.0
    y_changed = layer(mt.tensor(changed), self_mask=causal_mask(T_len))
    np.testing.assert_allclose(y_changed.numpy()[:, :t + 1], y.numpy()[:, :t + 1], rtol=1e-5, atol=1e-6)
    y[:, t].sum().backward()
    assert not x.grad.numpy()[:, t + 1:].any()  # exactly zero, not merely small
    assert np.abs(x.grad.numpy()[:, :t + 1]).sum() > 0


@given(st.permutations(range(4)))
def test_encoder_layer_without_positions_is_permutation_equivariant(perm):
    """Layer(P X) = P Layer(X): attention and the position-wise FFN see a set, not a sequence."""
    layer = EncoderLayer(D, H)
    x = x_like(2, 4, D).float()
    perm = list(perm)
    np.testing.assert_allclose(layer(x[:, perm]).numpy(), layer(x).numpy()[:, perm], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('options', [dict(), dict(rope=True), dict(alibi=True), dict(n_kv_heads=1)], ids=str)
def test_decoder_layer_kv_cache_equals_full_pass(options):
    layer = DecoderLayer(D, H, **options)
    x, memory = x_like(2, 5, D).float(), x_like(2, S, D, seed=1).float()
    full = layer(x, memory, self_mask=causal_mask(5)).numpy()
    cache, steps = KVCache(), []
    for t in range(5):
        steps.append(layer(x[:, t:t + 1], memory, self_mask=causal_mask(1, offset=t), cache=cache).numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('norm_type', ['rms', 'batch'])
def test_other_norm_types(norm_type):
    layer = DecoderLayer(D, H, norm_type=norm_type)
    assert type(layer.norm1).__name__ == {'rms': 'RMSNorm', 'batch': 'BatchNorm1d'}[norm_type]
    y = layer(x_like(2, T, D).float(), x_like(2, S, D).float(), self_mask=causal_mask(T))
    assert y.shape == (2, T, D) and np.isfinite(y.numpy()).all()


def test_dropout_acts_only_in_training():
    layer = EncoderLayer(D, H, dropout=0.5)
    x = x_like(2, T, D).float()
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())


# ---------------------------------------------------------------------------- errors
def test_bad_configurations_are_clear_errors():
    with pytest.raises(ValueError, match='not divisible by n_heads'):
        EncoderLayer(10, 3)
    with pytest.raises(ValueError, match="norm must be 'pre' or 'post'"):
        DecoderLayer(D, H, norm='middle')
    with pytest.raises(ValueError, match='norm_type must be one of'):
        EncoderLayer(D, H, norm_type='group')


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match=r'EncoderLayer\(d_model=8\): expected x of shape \(B, T, 8\)'):
        EncoderLayer(D, H)(x_like(2, T, 6).float())
    with pytest.raises(ValueError, match='needs `memory`'):
        DecoderLayer(D, H)(x_like(2, T, D).float())
    with pytest.raises(ValueError, match='cross_attention=False'):
        DecoderLayer(D, H, cross_attention=False)(x_like(2, T, D).float(), x_like(2, S, D).float())
