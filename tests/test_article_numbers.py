"""The numbers printed in the source articles (SPEC.md), recomputed with transformer/.

Each comparison uses the article's printed precision: half a unit in the last printed
digit, plus what rounding the article's own (rounded) inputs can move the result.
"""
import math

import numpy as np
import pytest

import microtensor as mt
from transformer import LayerNorm, SinusoidalPositionalEncoding, TokenEmbedding, scaled_dot_product_attention
from transformer import article_data as article


def test_layer_norm_example():
    """deep-dive 5.2: x = [2, 8, -4, -6], gamma = [1.2, 0.8, 1.0, 1.5], beta = [0.1, -0.1, 0, 0.2], eps = 0."""
    ex = article.LAYERNORM_EXAMPLE
    ln = LayerNorm(4, eps=ex['eps'])
    with mt.no_grad():
        ln.gamma.copy_(mt.tensor(ex['gamma']))
        ln.beta.copy_(mt.tensor(ex['beta']))
    y = ln(mt.tensor([ex['x']])).numpy()[0]
    np.testing.assert_allclose(y, ex['y'], atol=2e-3)
    # gamma = 1, beta = 0: x_hat (the article divides by sigma rounded to 5.477: -1.096 for -1.0954)
    x_hat = LayerNorm(4, eps=ex['eps'])(mt.tensor([ex['x']])).numpy()[0]
    np.testing.assert_allclose(x_hat, ex['x_hat'], atol=1e-3)
    np.testing.assert_allclose([x_hat.mean(), x_hat.var()], [0, 1], atol=1e-6)


@pytest.mark.parametrize('logits, printed', article.SOFTMAX_EXAMPLES, ids=str)
def test_softmax_tables(logits, printed):
    """atom 2.3.2 / 2.4.1: smooth for small inputs, one-hot to 3 decimals for [10, 20, 30] and beyond."""
    np.testing.assert_allclose(mt.softmax(mt.tensor(logits)).numpy(), printed, atol=5e-4 + 1e-7)


def test_sinusoidal_pe_rows():
    """d_model = 12, positions 0, 1, 2 (SPEC.md values, 4 decimals)."""
    table = SinusoidalPositionalEncoding(12).table(3).numpy()
    for pos, row in article.PE_CORRECT.items():
        np.testing.assert_allclose(table[pos, :len(row)], row, atol=5e-5 + 1e-7)


def test_the_printed_pe_rows_have_typos_and_x0_follows_the_formula():
    """deep-dive 7.2 prints pos 1 dims 2, 4, 5 and pos 2 dims 2, 4, 5 wrongly; its X0 = E + PE
    row for 吃 (1.12 in dim 2) only fits the correct PE (0.91 + 0.2138), not the printed 0.2338."""
    table = SinusoidalPositionalEncoding(12).table(3).numpy()
    for pos, printed in article.PE_PRINTED.items():
        wrong = np.flatnonzero(np.abs(table[pos, :6] - printed) > 5e-5 + 1e-7)
        assert wrong.tolist() == [2, 4, 5], f"pos {pos}: typos at dims {wrong.tolist()}"
    eat = article.EMBEDDINGS['吃'][2]
    assert round(eat + table[1, 2], 2) == article.X0_PRINTED[1][2]
    assert round(eat + article.PE_PRINTED[1][2], 2) != article.X0_PRINTED[1][2]


def test_x0_is_embedding_plus_positional_encoding():
    """deep-dive 7.2: the embeddings of 猫 吃 鱼 + PE give the printed X0 rows (2 decimals)."""
    emb = TokenEmbedding(3, 12)
    with mt.no_grad():
        emb.weight.copy_(mt.tensor([article.EMBEDDINGS[w] for w in article.TOKENS]))
    X0 = SinusoidalPositionalEncoding(12)(emb(mt.tensor([[0, 1, 2]]))).numpy()[0]
    np.testing.assert_allclose(X0[:, :4], article.X0_PRINTED, atol=5e-3 + 1e-7)


@pytest.mark.parametrize('head', [1, 2])
def test_layer1_attention_tables(head):
    """deep-dive 7.3: softmax(Q K^T / sqrt(4)) of the printed scores gives the printed weights.

    q = [S | 0] and k = [I | 0] (d_k = 4 columns) make q k^T = S exactly, so the weights come
    from scaled_dot_product_attention with its default 1/sqrt(d_k) = 1/2."""
    S = np.array(article.LAYER1_SCORES[head])
    q = np.concatenate([S, np.zeros((3, 1))], axis=1)
    k = np.concatenate([np.eye(3), np.zeros((3, 1))], axis=1)
    _, weights = scaled_dot_product_attention(mt.tensor(q), mt.tensor(k), mt.tensor(np.eye(3)))
    # 4 printed decimals (5e-5), and the scores' own rounding moves a weight by < 1e-5
    np.testing.assert_allclose(weights.numpy(), article.LAYER1_WEIGHTS[head], atol=6e-5)
    if head in article.LAYER1_SCALED_SCORES:
        np.testing.assert_allclose(S / math.sqrt(article.D_K), article.LAYER1_SCALED_SCORES[head], atol=6e-5)


def test_printed_attention_tables_are_distributions():
    """A transcription check on every printed table (head 3 and layer 2 have no printed scores)."""
    tables = list(article.LAYER1_WEIGHTS.values()) + list(article.LAYER2_WEIGHTS.values())
    for table in tables:
        np.testing.assert_allclose(np.sum(table, axis=1), 1, atol=2e-4)
