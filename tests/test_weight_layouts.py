"""The lessons that read or compose a weight do it in the layout the layer computes with, shown on
non-square layers, where a transposed reading cannot hide: transformer's projections keep the
articles' W (d_in, d_out) with y = x @ W + b; nn.Linear keeps PyTorch's (d_out, d_in)."""
import numpy as np
import pytest

import microtensor as mt
from demos import feedforward, ffn_memory, qkv_roles
from transformer import FeedForward, MultiHeadAttention, Projection


def test_every_projection_of_a_layer_is_x_at_W_plus_b():
    """The layout the lessons read (Q = X @ W_Q) is the one the layers compute with: GQA's W_K is (8, 4)."""
    mt.manual_seed(0)
    mha = MultiHeadAttention(8, n_heads=2, n_kv_heads=1).to(dtype='float64')
    ffn = FeedForward(8, 20).to(dtype='float64')
    X = mt.randn(3, 8, dtype='float64')
    for layer in (mha.W_Q, mha.W_K, mha.W_V, ffn.W_1):
        assert isinstance(layer, Projection) and layer.weight.shape == (8, layer.out_features)
        np.testing.assert_allclose(layer(X).numpy(), (X @ layer.weight + layer.bias).numpy(), rtol=1e-13)
    assert mha.W_K.weight.shape == (8, 4) and ffn.W_2.weight.shape == (20, 8)


def test_the_feedforward_lesson_collapses_a_non_square_ffn_into_one_projection():
    """W = W_1 W_2 with W_1 (6, 10) and W_2 (10, 6): the FFN without its activation is that one map."""
    out = feedforward.collapse(d_model=6, d_ff=10)
    assert out['gap'] < 1e-12 and out['with_activation_gap'] > 1e-3


def test_the_ffn_memory_lesson_reads_its_column_of_W_1_as_the_layer_computes():
    """W_1 is (12, 48): column 0 holds the weights of hidden unit 0, so the unit's value by hand is the module's."""
    out = ffn_memory.by_hand()
    assert out['module'] == pytest.approx(out['gelu_tanh'], abs=1e-12)
    assert out['shapes'] == [(1, 12), (1, 48), (1, 48), (1, 12)]


def test_the_qkv_lesson_reads_its_matrices_as_the_layers_compute():
    """The lesson takes Q = X @ W_Q from the layers' own weights (the first test: what the layers compute);
    its algebra holds at another size and head count, and its MLA counts the weights the module holds
    (W_DQ (64, 24), W_UQ (24, 64), ...: non-square)."""
    out = qkv_roles.fourth_projection(d_model=8, n_heads=2)
    assert out['merged'] < 1e-12 and out['rescaled'] < 1e-12 and 0 < out['residual'] <= 1
    for counted, by_formula, _ in qkv_roles.mla_queries().values():
        assert counted == by_formula
