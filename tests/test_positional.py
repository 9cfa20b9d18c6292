"""Positional encodings (transformer/positional.py) and the sin/cos ops they use.

Proves: the sinusoidal table equals the formula at any length and offset (it extrapolates);
PE[pos + k] = PE[pos] M_k with M_k a block rotation that depends only on k; the learned
table adds its rows and refuses positions past max_len (naming the limit); RoPE is the
complex rotation x * e^(i m theta), keeps norms, and q_m . k_n depends only on n - m;
ALiBi's slopes and biases follow the paper; float64 gradient checks of every encoding
(RoPE and ALiBi inside attention are checked in test_attention.py) and of sin/cos.
"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from strategies import devices, tensors
from transformer import (LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEncoding, alibi_bias,
                         alibi_slopes)


def numpy_pe(positions, d_model):
    positions = np.asarray(positions, dtype=np.float64)[:, None]
    freq = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(positions * freq), np.cos(positions * freq)
    return pe


# ---------------------------------------------------------------------------- sin, cos (engine ops)
@devices
@given(x=tensors())
def test_sin_cos_forward_and_gradients(x, device):
    x = x.to(device).detach().requires_grad_()
    np.testing.assert_allclose(mt.sin(x).numpy(), np.sin(x.numpy()), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mt.cos(x).numpy(), np.cos(x.numpy()), rtol=1e-12, atol=1e-15)
    assert mt.gradcheck(lambda x: mt.sin(x) * mt.cos(2 * x), [x])
    assert mt.gradgradcheck(lambda x: x.sin() + x.cos(), [x])


# ---------------------------------------------------------------------------- sinusoidal
@given(d_half=st.integers(1, 8), T=st.integers(1, 12), offset=st.integers(0, 500),
       dtype=st.sampled_from(['float32', 'float64']))
def test_sinusoidal_table_is_the_formula(d_half, T, offset, dtype):
    d_model = 2 * d_half
    pe = SinusoidalPositionalEncoding(d_model, max_len=4)  # shorter than asked: rows computed on demand
    table = pe.table(T, offset, dtype=dtype)
    assert table.shape == (T, d_model) and table.dtype == mt.backend.dtype(dtype)
    tol = 1e-12 if dtype == 'float64' else 1e-6
    np.testing.assert_allclose(table.numpy(), numpy_pe(range(offset, offset + T), d_model), rtol=0, atol=tol)


def test_sinusoidal_forward_adds_the_table_and_extrapolates():
    pe = SinusoidalPositionalEncoding(6, max_len=4)
    x = mt.randn(2, 10, 6, dtype=mt.float64)  # longer than max_len: fine, the formula has every row
    np.testing.assert_allclose(pe(x).numpy(), x.numpy() + numpy_pe(range(10), 6), atol=1e-12)
    np.testing.assert_allclose(pe(x[:, 7:], offset=7).numpy(), pe(x).numpy()[:, 7:], atol=1e-12)
    with pytest.raises(ValueError, match='d_model must be even'):
        SinusoidalPositionalEncoding(5)
    with pytest.raises(ValueError, match='offset must be an integer >= 0'):
        pe.table(3, offset=-1)
    with pytest.raises(ValueError, match=r'expected x of shape \(B, T, 6\)'):
        pe(mt.randn(2, 3, 4))


@given(pos=st.integers(0, 200), k=st.integers(-50, 50), d_half=st.integers(1, 6))
def test_sinusoidal_shift_is_a_fixed_rotation(pos, k, d_half):
    """PE[pos + k] = PE[pos] M_k, M_k = blockdiag([[cos k w_i, -sin k w_i], [sin k w_i, cos k w_i]]):
    sin(a + b) = sin a cos b + cos a sin b, cos(a + b) = cos a cos b - sin a sin b.
    M_k is built from k alone and works for every pos: a linear map, orthogonal."""
    assume(pos + k >= 0)
    d_model = 2 * d_half
    pe = SinusoidalPositionalEncoding(d_model)
    w = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    M = np.zeros((d_model, d_model))
    for i, angle in enumerate(k * w):
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
    start = min(pos, pos + k)
    rows = pe.table(abs(k) + 1, start, dtype='float64').numpy()
    at_pos, at_pos_k = (rows[0], rows[-1]) if k >= 0 else (rows[-1], rows[0])
    np.testing.assert_allclose(at_pos @ M, at_pos_k, atol=1e-12)
    np.testing.assert_allclose(M @ M.T, np.eye(d_model), atol=1e-12)


def test_sinusoidal_gradcheck():
    assert gradcheck_module(SinusoidalPositionalEncoding(4), mt.randn(2, 3, 4))


# ---------------------------------------------------------------------------- learned
def test_learned_positional_embedding_adds_its_rows():
    P = LearnedPositionalEmbedding(8, 4)
    x = mt.randn(2, 5, 4)
    np.testing.assert_allclose(P(x).numpy(), x.numpy() + P.weight.numpy()[:5], rtol=1e-6)
    np.testing.assert_allclose(P(x[:, :2], offset=6).numpy(), x.numpy()[:, :2] + P.weight.numpy()[6:8], rtol=1e-6)
    assert [name for name, _ in P.named_parameters()] == ['weight']


def test_learned_positional_embedding_gradcheck():
    assert gradcheck_module(LearnedPositionalEmbedding(5, 3), mt.randn(2, 4, 3))


def test_learned_table_cannot_extrapolate():
    P = LearnedPositionalEmbedding(4, 3)
    with pytest.raises(ValueError, match=r'max_len=4 rows \(positions 0..3\)'):
        P(mt.randn(1, 5, 3))
    with pytest.raises(ValueError, match=r'positions 3..4'):
        P(mt.randn(1, 2, 3), offset=3)


# ---------------------------------------------------------------------------- RoPE
def test_rope_is_a_complex_rotation():
    """Each pair (x_2i, x_2i+1) as the complex number x_2i + i x_2i+1, multiplied by e^(i m theta_i)."""
    d_k, T, offset = 6, 5, 3
    x = mt.randn(2, 3, T, d_k, dtype=mt.float64)
    z = x.numpy()[..., 0::2] + 1j * x.numpy()[..., 1::2]
    theta = 10000.0 ** (-np.arange(0, d_k, 2) / d_k)
    m = np.arange(offset, offset + T)[:, None]
    rotated = z * np.exp(1j * m * theta)
    out = RotaryEmbedding(d_k).rotate(x, offset=offset).numpy()
    np.testing.assert_allclose(out[..., 0::2], rotated.real, atol=1e-12)
    np.testing.assert_allclose(out[..., 1::2], rotated.imag, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x.numpy(), axis=-1), rtol=1e-12)


@given(m=st.integers(0, 300), n=st.integers(0, 300), shift=st.integers(0, 300), seed=st.integers(0, 2 ** 16))
def test_rope_scores_depend_only_on_the_offset(m, n, shift, seed):
    """q rotated at m, k rotated at n: q_m . k_n = q_(m+s) . k_(n+s) = q . k_(n-m)."""
    rng = np.random.default_rng(seed)
    rope = RotaryEmbedding(8)
    q, k = (mt.tensor(rng.standard_normal((1, 1, 1, 8))) for _ in range(2))

    def score(q_pos, k_pos):
        return float((rope.rotate(q, q_pos).numpy() * rope.rotate(k, k_pos).numpy()).sum())

    assert score(m, n) == pytest.approx(score(m + shift, n + shift), abs=1e-9)
    assert score(m, n) == pytest.approx(score(0, n - m), abs=1e-9)


def test_rope_offset_continues_the_sequence_and_position_zero_is_identity():
    rope = RotaryEmbedding(4)
    x = mt.randn(1, 2, 6, 4, dtype=mt.float64)
    np.testing.assert_allclose(rope.rotate(x[:, :, 4:], offset=4).numpy(), rope.rotate(x).numpy()[:, :, 4:],
                               atol=1e-12)
    np.testing.assert_array_equal(rope.rotate(x).numpy()[:, :, 0], x.numpy()[:, :, 0])
    with pytest.raises(ValueError, match='d_k must be even'):
        RotaryEmbedding(5)
    with pytest.raises(ValueError, match=r'RotaryEmbedding\(d_k=4\)'):
        rope.rotate(mt.randn(1, 1, 3, 6))


def test_rope_gradcheck():
    rope = RotaryEmbedding(4)
    x = mt.randn(1, 2, 3, 4, dtype=mt.float64, requires_grad=True)
    assert mt.gradcheck(lambda x: rope.rotate(x, offset=2), [x])


# ---------------------------------------------------------------------------- ALiBi
def test_alibi_slopes_follow_the_paper():
    np.testing.assert_allclose(alibi_slopes(8).numpy(), [2.0 ** -(i + 1) for i in range(8)], rtol=1e-7)
    np.testing.assert_allclose(alibi_slopes(4).numpy(), [2.0 ** -(2 * i + 2) for i in range(4)], rtol=1e-7)
    # not a power of two: the 4-head slopes, then every other slope of 8 heads
    np.testing.assert_allclose(alibi_slopes(6).numpy(), [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3],
                               rtol=1e-7)


@given(n_heads=st.integers(1, 8), T_q=st.integers(1, 5), T_k=st.integers(1, 7), offset=st.integers(0, 5))
def test_alibi_bias_is_minus_slope_times_distance(n_heads, T_q, T_k, offset):
    bias = alibi_bias(n_heads, T_q, T_k, offset, dtype='float64').numpy()
    slopes = alibi_slopes(n_heads, dtype='float64').numpy()
    i = np.arange(offset, offset + T_q)[:, None]
    j = np.arange(T_k)[None, :]
    np.testing.assert_allclose(bias, -slopes[:, None, None] * np.abs(i - j), rtol=1e-12)
    assert bias.shape == (n_heads, T_q, T_k)
