"""T5's relative position bias (transformer/positional.py RelativePositionBias) and its place in attention.

Proves: the buckets equal the T5 reference formula (written here with numpy, vectorised as
in the T5 code) for every offset, are monotone in the distance, split the two directions,
and put every far offset in the last bucket; the bias is weight[bucket(j - i)] per head,
shifts with `offset` exactly as the positions do (so a KV cache gives the same scores);
float64 gradient checks of the module and of MultiHeadAttention(relative=True), including
with a KV cache; clear errors for bad arguments and for alibi + relative.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from transformer import GPT, MultiHeadAttention, RelativePositionBias, relative_position_bucket
from transformer.attention import KVCache


def reference_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's _relative_position_bucket (mesh-tensorflow / HF), on numpy integer arrays."""
    n = np.asarray(relative_position)
    buckets = np.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        buckets += (n > 0).astype(n.dtype) * num_buckets
        n = np.abs(n)
    else:
        n = -np.minimum(n, 0)
    max_exact = num_buckets // 2
    with np.errstate(divide='ignore'):
        large = max_exact + (np.log(np.maximum(n, 1) / max_exact) / math.log(max_distance / max_exact)
                             * (num_buckets - max_exact)).astype(n.dtype)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(n < max_exact, n, large)


@pytest.mark.parametrize('bidirectional', [True, False])
@pytest.mark.parametrize('num_buckets, max_distance', [(32, 128), (8, 20), (16, 64)])
def test_buckets_equal_the_t5_formula(bidirectional, num_buckets, max_distance):
    offsets = np.arange(-600, 601)
    ours = [relative_position_bucket(int(n), bidirectional, num_buckets, max_distance) for n in offsets]
    assert ours == reference_buckets(offsets, bidirectional, num_buckets, max_distance).tolist()


def test_bucket_shape_exact_near_log_far_clamped():
    past = [relative_position_bucket(-d) for d in range(400)]
    future = [relative_position_bucket(d) for d in range(1, 400)]
    assert past[:8] == list(range(8))                                  # 8 exact buckets for distances 0..7
    assert past == sorted(past) and future == sorted(future)           # monotone in the distance
    assert set(past) == set(range(16)) and set(future) == set(range(17, 32))  # 16 would be offset +0
    assert past[128:] == [15] * (400 - 128) and future[127:] == [31] * (399 - 127)  # beyond max_distance: last
    causal = [relative_position_bucket(n, bidirectional=False) for n in range(-300, 5)]
    assert causal[-5:] == [0] * 5 and max(causal) == 31 and causal == sorted(causal, reverse=True)


@given(T_q=st.integers(1, 6), T_k=st.integers(1, 9), offset=st.integers(0, 40), heads=st.integers(1, 3))
def test_bias_is_the_table_row_of_each_offset(T_q, T_k, offset, heads):
    rel = RelativePositionBias(heads, num_buckets=8, max_distance=16)
    rel.weight.data = mt.randn(8, heads).data
    bias = rel(T_q, T_k, offset)
    assert bias.shape == (heads, T_q, T_k)
    W = rel.weight.numpy()
    expected = np.array([[[W[relative_position_bucket(j - (offset + i), True, 8, 16), h] for j in range(T_k)]
                          for i in range(T_q)] for h in range(heads)])
    np.testing.assert_allclose(bias.numpy(), expected)


def test_offset_shifts_the_query_positions():
    rel = RelativePositionBias(2)
    rel.weight.data = mt.randn(32, 2).data
    full = rel(10, 10).numpy()
    np.testing.assert_array_equal(rel(3, 10, offset=7).numpy(), full[:, 7:])
    np.testing.assert_array_equal(rel(1, 10, offset=9).numpy(), full[:, 9:])


def test_module_gradcheck():
    rel = RelativePositionBias(3, num_buckets=8, max_distance=12).double()
    rel.weight.data = mt.randn(8, 3, dtype='float64').data
    G = mt.randn(3, 4, 6, dtype='float64')
    assert gradcheck_module(rel, call=lambda m: (m(4, 6, 2) * G).sum(), check_inputs=False)


@pytest.mark.slow
def test_attention_with_relative_bias_gradcheck():
    mha = MultiHeadAttention(8, 2, relative=True).double()
    mha.relative_bias.weight.data = mt.randn(32, 2, dtype='float64').data
    x = mt.randn(2, 5, 8, dtype='float64', requires_grad=True)
    assert gradcheck_module(mha, x)
    mha(x)
    scores_without = mha.last_scores.numpy() - mha.relative_bias(5, 5).numpy()
    mha.relative_bias.weight.data = mt.zeros(32, 2, dtype='float64').data
    mha(x)
    np.testing.assert_allclose(mha.last_scores.numpy(), scores_without, atol=1e-12)  # the bias is added, no more


def test_kv_cache_gives_the_same_output_and_gradients():
    mt.manual_seed(1)
    model = GPT(11, d_model=16, n_layers=2, n_heads=2, positional='none', relative=True).double()
    for layer in model.layers:
        layer.self_attn.relative_bias.weight.data = mt.randn(32, 2, dtype='float64').data
    ids = mt.randint(0, 11, (2, 7))
    full = model(ids).numpy()
    cache = model.new_cache()
    steps = [model(ids[:, :4], cache=cache)] + [model(ids[:, t:t + 1], cache=cache) for t in range(4, 7)]
    np.testing.assert_allclose(mt.concatenate(steps, axis=1).numpy(), full, atol=1e-12)

    def two_steps(mha, x):  # positions 0-1, then position 2 against the cached keys (offset 2)
        cache = KVCache()
        mha(x[:, :2], cache=cache)
        return mha(x[:, 2:], cache=cache)
    mha = MultiHeadAttention(4, 2, relative=True).double()
    mha.relative_bias.weight.data = mt.randn(32, 2, dtype='float64').data
    assert gradcheck_module(mha, mt.randn(1, 3, 4, dtype='float64'), call=two_steps)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match='alibi=True and relative=True'):
        MultiHeadAttention(8, 2, alibi=True, relative=True)
    with pytest.raises(ValueError, match='num_buckets'):
        RelativePositionBias(2, num_buckets=2)
    with pytest.raises(ValueError, match='max_distance'):
        RelativePositionBias(2, num_buckets=32, max_distance=8)
    assert 'relative_bias' in repr(MultiHeadAttention(8, 2, relative=True))
