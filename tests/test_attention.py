"""Attention: scaled_dot_product_attention and MultiHeadAttention (transformer/attention.py).

Proves: the forward pass equals a numpy reference; end-to-end float64 gradient checks
(no mask, causal, padding, GQA, RoPE, ALiBi, cross-attention); permutation equivariance
without positional encoding (and its loss with it); causality (outputs and gradients);
padding keys get zero weight; h = 1 equals single-head attention and h heads equal the
per-head formula; GQA equals MHA with replicated K/V weights; the KV cache equals full
recomputation (also with RoPE, ALiBi, GQA, prefill chunks, cross-attention);
Var(q . k) = d_k and 1 after scaling; clear errors.
"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from strategies import devices
from transformer import (KVCache, MultiHeadAttention, SinusoidalPositionalEncoding, causal_mask, padding_mask,
                         scaled_dot_product_attention)
from transformer.attention import attend


def numpy_attention(q, k, v, mask=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return weights @ v, weights


def rand(*shape, device='cpu'):
    return mt.randn(*shape, dtype=mt.float64, device=device)


def mha64(*args, **kwargs):
    """A MultiHeadAttention with float64 weights (for exact comparisons)."""
    m = MultiHeadAttention(*args, **kwargs)
    for p in m.parameters():
        p.data = p.data.astype(mt.float64)
    return m


# ---------------------------------------------------------------------------- scaled_dot_product_attention
@given(st.data())
def test_sdpa_matches_numpy(data):
    B, T_q, T_k, d_k, d_v = (data.draw(st.integers(1, 4)) for _ in range(5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    q, k, v = rng.standard_normal((B, T_q, d_k)), rng.standard_normal((B, T_k, d_k)), rng.standard_normal((B, T_k, d_v))
    mask = rng.random((B, T_q, T_k)) < 0.6
    mask[..., 0] = True  # every query keeps at least one key
    scale = data.draw(st.sampled_from([None, 1.0, 0.3]))
    out, weights = scaled_dot_product_attention(mt.tensor(q), mt.tensor(k), mt.tensor(v), mt.tensor(mask), scale)
    ref_out, ref_weights = numpy_attention(q, k, v, mask, scale)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.numpy(), ref_weights, rtol=1e-10, atol=1e-12)
    assert np.all(weights.numpy()[~mask] == 0)


@devices
@pytest.mark.parametrize('kind', ['none', 'causal', 'padding', 'bias'])
def test_sdpa_gradcheck(kind, device):
    q, k, v = (rand(2, 3, 4, device=device).requires_grad_() for _ in range(3))
    bias = rand(3, 3, device=device).requires_grad_()
    mask = {'none': None, 'causal': causal_mask(3, device=device),
            'padding': padding_mask(mt.tensor([[1, 2, 0], [1, 0, 0]], device=device), 0)[:, 0]}.get(kind)
    inputs = [q, k, v] + ([bias] if kind == 'bias' else [])
    assert mt.gradcheck(lambda q, k, v, *b: scaled_dot_product_attention(q, k, v, mask, bias=b[0] if b else None),
                        inputs)


# ---------------------------------------------------------------------------- MultiHeadAttention: gradients
MHA_CASES = {
    'plain': dict(kwargs={}, mask=None),
    'causal': dict(kwargs={}, mask='causal'),
    'padding': dict(kwargs={}, mask='padding'),
    'gqa': dict(kwargs={'n_heads': 4, 'n_kv_heads': 2}, mask='causal'),
    'rope': dict(kwargs={'rope': True}, mask='causal'),
    'alibi': dict(kwargs={'alibi': True}, mask='causal'),
    'alibi_bidirectional': dict(kwargs={'alibi': True}, mask=None),
    'no_bias_scale_off': dict(kwargs={'bias': False, 'scale': 1.0}, mask=None),
}


@pytest.mark.slow
@devices
@pytest.mark.parametrize('case', sorted(MHA_CASES))
def test_mha_gradcheck(case, device):
    kwargs = {'n_heads': 2, **MHA_CASES[case]['kwargs']}
    m = MultiHeadAttention(8, **kwargs).to(device)
    x = mt.randn(2, 3, 8, device=device)
    mask = {'causal': causal_mask(3, device=device),
            'padding': padding_mask(mt.tensor([[3, 4, 0], [5, 0, 0]], device=device), 0)}.get(MHA_CASES[case]['mask'])
    assert gradcheck_module(m, x, call=lambda m, x: m(x, mask=mask))


@devices
def test_cross_attention_gradcheck(device):
    m = MultiHeadAttention(4, 2).to(device)
    x, memory = mt.randn(1, 2, 4, device=device), mt.randn(1, 3, 4, device=device)
    memory_mask = padding_mask(mt.tensor([[1, 1, 0]], device=device), 0)
    assert gradcheck_module(m, x, memory, call=lambda m, x, c: m(x, context=c, mask=memory_mask))


# ---------------------------------------------------------------------------- what attention computes
@given(st.permutations(range(4)))
def test_self_attention_is_permutation_equivariant_without_positions(perm):
    """Attention(P X) = P Attention(X): nothing in it knows which row came first."""
    assume(list(perm) != sorted(perm))
    m, pe = mha64(8, 2), SinusoidalPositionalEncoding(8)
    X = rand(2, 4, 8)
    np.testing.assert_allclose(m(X[:, list(perm)]).numpy(), m(X).numpy()[:, list(perm)], rtol=1e-10, atol=1e-12)
    # with sinusoidal positions added first, reordering the words changes the result
    with_pe = m(pe(X[:, list(perm)])).numpy()
    assert np.abs(with_pe - m(pe(X)).numpy()[:, list(perm)]).max() > 1e-3


@pytest.mark.parametrize('t', range(5))
def test_causal_mask_hides_the_future(t):
    m = mha64(8, 2, rope=True)
    X = rand(1, 5, 8).requires_grad_()
    mask = causal_mask(5)
    out = m(X, mask=mask)
    changed = X.detach().numpy().copy()
    changed[:, t + 1:] += 10 * np.random.default_rng(t).standard_normal(changed[:, t + 1:].shape)
    out_changed = m(mt.tensor(changed), mask=mask)
    np.testing.assert_allclose(out_changed.numpy()[:, :t + 1], out.numpy()[:, :t + 1], rtol=0, atol=1e-12)
    (g,) = mt.grad(out[:, t].sum(), [X])
    g = g.numpy()
    assert np.all(g[:, t + 1:] == 0), "a gradient reached a future position"
    assert np.all(np.abs(g[:, :t + 1]).sum(-1) > 0), "every past position should receive gradient"
    assert np.all(m.last_weights.numpy()[..., ~mask.numpy()] == 0)


def test_padding_keys_get_zero_weight_and_do_not_matter():
    ids = mt.tensor([[5, 6, 7, 0, 0], [8, 9, 0, 0, 0]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 5)
    m = mha64(8, 2)
    X = rand(2, 5, 8)
    out = m(X, mask=mask).numpy()
    weights = m.last_weights.numpy()
    is_pad = (ids.numpy() == 0)[:, None, None, :]
    assert np.all(weights[np.broadcast_to(is_pad, weights.shape)] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-12)
    changed = X.numpy().copy()
    changed[ids.numpy() == 0] = 100.0
    out_changed = m(mt.tensor(changed), mask=mask).numpy()
    real = ids.numpy() != 0
    np.testing.assert_allclose(out_changed[real], out[real], rtol=0, atol=1e-12)


def test_one_head_equals_single_head_attention():
    m = mha64(6, 1)
    X = rand(2, 4, 6)
    ref, _ = scaled_dot_product_attention(m.W_Q(X), m.W_K(X), m.W_V(X), causal_mask(4))
    np.testing.assert_allclose(m(X, mask=causal_mask(4)).numpy(), m.W_O(ref).numpy(), rtol=1e-10, atol=1e-12)


def test_heads_follow_the_article_formula():
    """MultiHead(X) = Concat(head_1..head_h) W_O,  head_i = Attention(X W_i^Q, X W_i^K, X W_i^V),
    W_i = the i-th block of d_k columns."""
    m = mha64(12, 3)
    X = rand(1, 3, 12)
    W_Q, W_K, W_V = (layer.weight.numpy() for layer in (m.W_Q, m.W_K, m.W_V))
    b_Q, b_K, b_V = (layer.bias.numpy() for layer in (m.W_Q, m.W_K, m.W_V))
    x = X.numpy()[0]
    out = m(X).numpy()[0]
    heads = []
    for i in range(3):
        cols = slice(4 * i, 4 * i + 4)
        head, weights = numpy_attention(x @ W_Q[:, cols] + b_Q[cols], x @ W_K[:, cols] + b_K[cols],
                                        x @ W_V[:, cols] + b_V[cols])
        heads.append(head)
        np.testing.assert_allclose(m.last_weights.numpy()[0, i], weights, rtol=1e-10)
    expected = np.concatenate(heads, axis=-1) @ m.W_O.weight.numpy() + m.W_O.bias.numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_gqa_with_as_many_kv_heads_as_heads_is_mha():
    mha, gqa = mha64(8, 4), mha64(8, 4, n_kv_heads=4)
    gqa.load_state_dict(mha.state_dict())
    X = rand(2, 3, 8)
    np.testing.assert_array_equal(gqa(X).numpy(), mha(X).numpy())


@pytest.mark.parametrize('n_kv_heads', [1, 2])
def test_gqa_equals_mha_with_shared_kv_weights(n_kv_heads):
    """Query head i reads K/V head i // (h / h_kv): an MHA whose K/V weight blocks repeat
    the GQA ones gives the same output."""
    h, d_k = 4, 3
    gqa, mha = mha64(h * d_k, h, n_kv_heads=n_kv_heads), mha64(h * d_k, h)
    group = h // n_kv_heads
    columns = [(i // group) * d_k + j for i in range(h) for j in range(d_k)]  # MHA head i <- K/V head i // group
    state = {name: t.numpy() for name, t in gqa.state_dict().items()}
    for name in ('W_K.weight', 'W_V.weight', 'W_K.bias', 'W_V.bias'):
        state[name] = state[name][..., columns]
    mha.load_state_dict(state)
    X = rand(2, 5, h * d_k)
    mask = causal_mask(5)
    np.testing.assert_allclose(gqa(X, mask=mask).numpy(), mha(X, mask=mask).numpy(), rtol=1e-10, atol=1e-12)
    assert gqa.W_K.weight.shape == (h * d_k, n_kv_heads * d_k)


# ---------------------------------------------------------------------------- KV cache
@pytest.mark.parametrize('kwargs', [{}, {'rope': True}, {'alibi': True}, {'n_kv_heads': 1, 'rope': True},
                                    {'alibi': True, 'n_kv_heads': 2}], ids=str)
@pytest.mark.parametrize('chunks', [[1, 1, 1, 1, 1, 1], [3, 1, 2]], ids=['one_by_one', 'prefill'])
def test_kv_cache_equals_full_recomputation(kwargs, chunks):
    m = mha64(8, 4, **kwargs)
    X = rand(2, 6, 8)
    full = m(X, mask=causal_mask(6)).numpy()
    cache, outputs, start = KVCache(), [], 0
    for size in chunks:
        outputs.append(m(X[:, start:start + size], mask=causal_mask(size, offset=cache.length), cache=cache).numpy())
        start += size
    assert cache.length == 6 and cache.K.shape == (2, m.n_kv_heads, 6, 2)
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, rtol=1e-10, atol=1e-12)


def test_cross_attention_cache_reuses_the_memory():
    m = mha64(8, 2)
    X, memory = rand(1, 4, 8), rand(1, 3, 8)
    full = m(X, context=memory).numpy()
    cache = KVCache()
    steps = [m(X[:, t:t + 1], context=memory, cache=cache).numpy() for t in range(4)]
    assert cache.length == 3  # the memory's K, V, stored once
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- inspection and the 1/sqrt(d_k)
def test_last_scores_and_weights_are_kept_for_inspection():
    m = MultiHeadAttention(8, 2)
    X = mt.randn(2, 3, 8)
    mask = causal_mask(3)
    m(X, mask=mask).sum().backward()
    assert m.last_scores.shape == m.last_weights.shape == (2, 2, 3, 3)
    assert m.last_scores.requires_grad and m.last_weights.requires_grad  # graph tensors: hooks can attach
    expected = mt.softmax(mt.where(mask, m.last_scores.detach(), -math.inf), dim=-1).numpy()
    np.testing.assert_allclose(m.last_weights.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_dot_product_variance_is_d_k_and_scaling_brings_it_to_one():
    """q, k with independent unit-variance entries: Var(q . k) = d_k; the attention's
    default scale 1/sqrt(d_k) brings it to 1 (20000 samples, d_k = 64: the sample
    variance's standard error is about 1%, the tolerance 10%)."""
    d_k, n = 64, 20000
    q = mt.randn(n, 1, d_k, dtype=mt.float64)
    k = mt.randn(n, 1, d_k, dtype=mt.float64)
    v = mt.ones(n, 1, 1, dtype=mt.float64)
    raw = attend(q, k, v, scale=1.0)[2].numpy().ravel()
    scaled = attend(q, k, v)[2].numpy().ravel()
    assert abs(raw.var() / d_k - 1) < 0.1
    assert abs(scaled.var() - 1) < 0.1
    assert not abs(raw.var() - 1) < 0.1


# ---------------------------------------------------------------------------- errors
def test_bad_configurations_are_clear_errors():
    with pytest.raises(ValueError, match='d_model=10 is not divisible by n_heads=4'):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match='n_heads=4 is not divisible by n_kv_heads=3'):
        MultiHeadAttention(8, 4, n_kv_heads=3)


def test_bad_masks_and_inputs_are_clear_errors():
    m = MultiHeadAttention(8, 2)
    X = mt.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r'mask of shape \(4, 4\) does not broadcast.*\(2, 2, 3, 3\)'):
        m(X, mask=causal_mask(4))
    with pytest.raises(TypeError, match='boolean'):
        m(X, mask=mt.ones(3, 3))
    with pytest.raises(ValueError, match='no key to attend to'):
        m(X, mask=padding_mask(mt.tensor([[1, 2, 0], [0, 0, 0]]), 0))
    with pytest.raises(ValueError, match=r'expected x of shape \(B, T, 8\)'):
        m(mt.randn(2, 3, 6))
    with pytest.raises(ValueError, match='do not fit'):
        scaled_dot_product_attention(mt.randn(3, 4), mt.randn(3, 5), mt.randn(3, 4))


@pytest.mark.skipif(not mt.cuda.is_available(), reason='needs a GPU (cupy) to put the input on another device')
def test_input_on_another_device_is_a_clear_error():
    m = MultiHeadAttention(8, 2)
    with pytest.raises(RuntimeError, match='different devices'):
        m(mt.randn(1, 3, 8, device='cuda'))
