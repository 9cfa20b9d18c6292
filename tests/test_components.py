"""Token embedding, masks and the feed-forward network (transformer/embedding.py, masks.py,
feedforward.py).

Proves: the embedding looks up rows (times sqrt(d_model) with scale=True), its gradient
scatter-adds (a token used twice gets two gradients), gradient check, clear errors for
ids outside the vocabulary, non-integer ids and another device; causal_mask equals the
lower triangle shifted by the offset, padding_mask marks [PAD] keys, combine is a
logical and; FeedForward equals act(x W_1 + b_1) W_2 + b_2 for GELU and ReLU, works
position by position, defaults d_ff = 4 d_model, passes gradient checks, and applies
dropout only in training.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from transformer import FeedForward, TokenEmbedding, causal_mask, combine, padding_mask


# ---------------------------------------------------------------------------- embedding
@pytest.mark.parametrize('scale', [False, True])
def test_embedding_looks_up_rows(scale):
    emb = TokenEmbedding(10, 4, scale=scale)
    ids = [[1, 2, 9], [0, 2, 2]]
    factor = math.sqrt(4) if scale else 1.0
    np.testing.assert_allclose(emb(mt.tensor(ids)).numpy(), emb.weight.numpy()[np.array(ids)] * factor, rtol=1e-6)
    assert emb(ids).shape == (2, 3, 4)  # a nested list works too


def test_embedding_gradient_adds_up_repeated_tokens():
    emb = TokenEmbedding(5, 3)
    emb(mt.tensor([[1, 3, 1], [1, 0, 3]])).sum().backward()
    counts = np.array([1, 3, 0, 2, 0])  # how often each token occurs
    np.testing.assert_allclose(emb.weight.grad.numpy(), np.repeat(counts[:, None], 3, axis=1))


def test_embedding_gradcheck():
    assert gradcheck_module(TokenEmbedding(6, 3, scale=True), mt.tensor([[0, 5, 2], [2, 2, 1]]))


def test_embedding_errors_are_clear():
    emb = TokenEmbedding(10, 4)
    with pytest.raises(IndexError, match=r'\[0, 10\).*from 0 to 10'):
        emb(mt.tensor([[0, 10]]))
    with pytest.raises(IndexError, match=r'\[0, 10\).*from -1'):
        emb(mt.tensor([[-1, 3]]))
    with pytest.raises(TypeError, match='integer token ids'):
        emb(mt.tensor([[0.0, 1.0]]))


@pytest.mark.skipif(not mt.cuda.is_available(), reason='needs a GPU (cupy) to put the ids on another device')
def test_embedding_ids_on_another_device_is_a_clear_error():
    with pytest.raises(RuntimeError, match='ids are on cuda but the table is on cpu'):
        TokenEmbedding(10, 4)(mt.tensor([[1, 2]], device='cuda'))


# ---------------------------------------------------------------------------- masks
@given(T_q=st.integers(1, 6), T_k=st.one_of(st.none(), st.integers(1, 8)), offset=st.integers(0, 4))
def test_causal_mask_is_the_shifted_lower_triangle(T_q, T_k, offset):
    mask = causal_mask(T_q, T_k, offset)
    expected_T_k = offset + T_q if T_k is None else T_k
    expected = np.tril(np.ones((T_q, expected_T_k), dtype=bool), k=offset)  # query t sees keys <= t + offset
    assert mask.dtype == mt.bool_
    np.testing.assert_array_equal(mask.numpy(), expected)


def test_padding_mask_and_combine():
    ids = mt.tensor([[4, 5, 0], [6, 0, 0]])
    pad = padding_mask(ids, pad_id=0)
    np.testing.assert_array_equal(pad.numpy()[:, 0, 0], [[True, True, False], [True, False, False]])
    both = combine(causal_mask(3), None, pad)
    assert both.shape == (2, 1, 3, 3)
    np.testing.assert_array_equal(both.numpy(), np.tril(np.ones((3, 3), bool)) & pad.numpy())
    assert combine(None, None) is None
    assert padding_mask([[1, 0]], 0).shape == (1, 1, 1, 2)
    with pytest.raises(ValueError, match=r'shape \(B, T\)'):
        padding_mask(mt.tensor([1, 2, 0]), 0)


# ---------------------------------------------------------------------------- feed-forward
def numpy_gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize('activation, act', [('gelu', numpy_gelu), ('relu', lambda x: np.maximum(x, 0))])
def test_feed_forward_is_the_formula(activation, act):
    ffn = FeedForward(6, activation=activation)
    assert ffn.d_ff == 24 and ffn.W_1.weight.shape == (6, 24) and ffn.W_2.weight.shape == (24, 6)
    x = np.random.default_rng(0).standard_normal((2, 3, 6))
    W_1, b_1, W_2, b_2 = (p.numpy() for p in (ffn.W_1.weight, ffn.W_1.bias, ffn.W_2.weight, ffn.W_2.bias))
    expected = act(x @ W_1 + b_1) @ W_2 + b_2
    np.testing.assert_allclose(ffn(mt.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    # position-wise: each position alone gives the same result
    np.testing.assert_allclose(ffn(mt.tensor(x[:, 1:2])).numpy(), expected[:, 1:2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('activation', ['gelu', 'relu'])
def test_feed_forward_gradcheck(activation):
    assert gradcheck_module(FeedForward(3, 8, activation=activation), mt.randn(2, 2, 3))


def test_feed_forward_dropout_only_in_training():
    ffn = FeedForward(4, 64, dropout=0.5)
    x = mt.randn(2, 5, 4)
    ffn.eval()
    np.testing.assert_array_equal(ffn(x).numpy(), ffn(x).numpy())
    ffn.train()
    assert np.abs(ffn(x).numpy() - ffn.eval()(x).numpy()).max() > 1e-3
    with pytest.raises(ValueError, match="activation must be one of"):
        FeedForward(4, activation='swish')
