"""The attention variants of the design table: shared W_Q = W_K, a learned scale, and
Multi-head Latent Attention (gradient checks, KV cache = full recomputation, what is cached)."""
import math

import numpy as np
import pytest

import microtensor as mt
from tests.module_check import gradcheck_module
from transformer import (GPT, KVCache, MultiHeadAttention, MultiHeadLatentAttention, causal_mask, generate,
                         use_latent_attention)


# ---------------------------------------------------------------------------- shared_qk
def test_shared_qk_uses_one_projection_and_makes_the_scores_symmetric():
    shared, separate = MultiHeadAttention(8, 2, shared_qk=True), MultiHeadAttention(8, 2)
    assert shared.W_K is shared.W_Q
    assert separate.num_parameters() - shared.num_parameters() == 8 * 8 + 8  # one Linear fewer
    assert 'W_K.weight' not in shared.state_dict()
    x = mt.randn(3, 5, 8, dtype='float64')
    shared.to(dtype='float64')(x)
    S = shared.last_scores.numpy()
    np.testing.assert_allclose(S, S.swapaxes(-1, -2), rtol=0, atol=1e-12)
    A = shared.last_weights.numpy()
    assert np.abs(A - A.swapaxes(-1, -2)).max() > 1e-3   # the row softmax breaks the symmetry


def test_shared_qk_gradcheck_and_errors():
    assert gradcheck_module(MultiHeadAttention(6, 2, shared_qk=True), mt.randn(2, 3, 6),
                            call=lambda m, x: m(x, mask=causal_mask(3)))
    with pytest.raises(ValueError, match='shared_qk=True needs n_kv_heads == n_heads'):
        MultiHeadAttention(8, 4, n_kv_heads=2, shared_qk=True)


# ---------------------------------------------------------------------------- scale='learned'
def test_learned_scale_starts_at_one_over_sqrt_d_k_and_learns():
    mt.manual_seed(1)
    learned = MultiHeadAttention(8, 2, scale='learned')
    mt.manual_seed(1)
    fixed = MultiHeadAttention(8, 2)
    np.testing.assert_allclose(learned.log_scale.exp().numpy(), 0.5)         # 1/sqrt(d_k = 4)
    x = mt.randn(2, 4, 8)
    np.testing.assert_allclose(learned(x).numpy(), fixed(x).numpy(), rtol=1e-5, atol=1e-6)
    learned(x).sum().backward()
    assert learned.log_scale.grad.shape == (2, 1, 1) and np.abs(learned.log_scale.grad.numpy()).min() > 0
    learned.log_scale.data = mt.full((2, 1, 1), math.log(0.3)).data          # exp(log_scale) is the scale
    mt.manual_seed(1)
    at_03 = MultiHeadAttention(8, 2, scale=0.3)
    np.testing.assert_allclose(learned(x).numpy(), at_03(x).numpy(), rtol=1e-5, atol=1e-6)


def test_learned_scale_gradcheck_and_errors():
    assert gradcheck_module(MultiHeadAttention(6, 3, scale='learned'), mt.randn(1, 4, 6))
    with pytest.raises(ValueError, match="scale must be None"):
        MultiHeadAttention(8, 2, scale='sqrt')


# ---------------------------------------------------------------------------- MLA
@pytest.mark.slow
@pytest.mark.parametrize('options', [dict(d_c=3, d_rope=2), dict(d_c=4, d_rope=2, d_head=3, d_cq=5)])
def test_mla_gradcheck(options):
    assert gradcheck_module(MultiHeadLatentAttention(6, 2, **options), mt.randn(2, 3, 6),
                            call=lambda m, x: m(x, mask=causal_mask(3)))


@pytest.mark.parametrize('chunks', [(1, 1, 1, 1, 1), (3, 2), (2, 1, 2)])
def test_mla_kv_cache_equals_full_recomputation_and_holds_only_the_latent(chunks, device):
    mt.manual_seed(0)
    m = MultiHeadLatentAttention(8, 2, d_c=3, d_rope=2, d_cq=5).to(device)
    x = mt.randn(2, sum(chunks), 8, device=device)
    full = m(x, mask=causal_mask(x.shape[1], device=device)).numpy()
    cache, outputs, start = KVCache(), [], 0
    for size in chunks:
        outputs.append(m(x[:, start:start + size], mask=causal_mask(size, offset=start, device=device),
                         cache=cache).numpy())
        start += size
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, rtol=1e-5, atol=1e-5)
    assert cache.K.shape == (2, 5, 3) and cache.V.shape == (2, 5, 2)   # c: d_c, k_R: d_rope per position


def test_mla_positions_come_from_the_rope_key():
    """Without a mask and without positions elsewhere, permuting the tokens changes MLA's outputs by more
    than the permutation: the decoupled RoPE query/key carry the position."""
    mt.manual_seed(0)
    m = MultiHeadLatentAttention(8, 2, d_c=4, d_rope=4)
    x = mt.randn(1, 5, 8)
    perm = [4, 2, 0, 1, 3]
    assert np.abs(m(x[:, perm]).numpy() - m(x).numpy()[:, perm]).max() > 1e-3


def test_gpt_with_mla_generates_the_same_with_and_without_the_cache():
    mt.manual_seed(0)
    model = use_latent_attention(GPT(12, d_model=16, n_layers=2, n_heads=2, max_len=16), d_c=4)
    assert all(isinstance(layer.self_attn, MultiHeadLatentAttention) for layer in model.layers)
    prompt = mt.tensor([[1, 5, 7]])
    cached = generate(model, prompt, 6, greedy=True).tolist()
    ids = prompt
    with mt.no_grad():
        for _ in range(6):  # full recomputation: the whole sequence every step, no cache
            ids = mt.concatenate([ids, model(ids)[:, -1].argmax(dim=-1).reshape(1, 1)], axis=1)
    assert cached == ids.tolist()


def test_mla_errors():
    m = MultiHeadLatentAttention(8, 2, d_c=3)
    with pytest.raises(ValueError, match='self-attention only'):
        m(mt.randn(1, 2, 8), context=mt.randn(1, 2, 8))
    with pytest.raises(ValueError, match=r'expected x of shape \(B, T, 8\)'):
        m(mt.randn(1, 2, 6))
    with pytest.raises(ValueError, match='even d_rope'):
        MultiHeadLatentAttention(8, 2, d_c=3, d_rope=3)
