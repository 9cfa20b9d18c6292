"""The RNN baseline (transformer/rnn.py).

Proves: the cell is h' = tanh(x W_xh + h W_hh + b) (numpy reference, h = None means zeros);
the unrolled RNN equals calling the cell step by step and returns h_T as its last output;
float64 gradient checks of the cell and of the unrolled RNN (input, h0, every parameter);
the gradient reaching x_1 from h_T shrinks geometrically with the distance T (the path of
length T the articles contrast with attention's path of length 1); step t never sees later
inputs; bad shapes are clear errors.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from transformer import RNN, RNNCell


def x_like(*shape, seed=0):
    return mt.tensor(np.random.default_rng(seed).standard_normal(shape), dtype='float64')


@given(st.integers(0, 2**16), st.booleans())
def test_cell_is_the_formula(seed, with_h):
    cell = RNNCell(3, 4).double()
    x, h = x_like(2, 3, seed=seed), x_like(2, 4, seed=seed + 1)
    W_xh, W_hh, b = cell.W_xh.numpy(), cell.W_hh.numpy(), cell.b.numpy()
    expected = np.tanh(x.numpy() @ W_xh + (h.numpy() @ W_hh if with_h else 0) + b)
    np.testing.assert_allclose(cell(x, h if with_h else None).numpy(), expected, rtol=1e-12)


def test_rnn_unrolls_the_cell():
    rnn = RNN(3, 4).double()
    x, h0 = x_like(2, 5, 3), x_like(2, 4, seed=1)
    outputs, h_T = rnn(x, h0)
    h, expected = h0, []
    for t in range(5):
        h = rnn.cell(x[:, t], h)
        expected.append(h.numpy())
    np.testing.assert_allclose(outputs.numpy(), np.stack(expected, axis=1), rtol=1e-12)
    np.testing.assert_array_equal(h_T.numpy(), outputs.numpy()[:, -1])


def test_cell_gradcheck():
    assert gradcheck_module(RNNCell(3, 4), x_like(2, 3), x_like(2, 4, seed=1))


def test_rnn_gradcheck():
    assert gradcheck_module(RNN(3, 4), x_like(2, 4, 3), x_like(2, 4, seed=1), call=lambda m, x, h0: m(x, h0))
    assert gradcheck_module(RNN(2, 3), x_like(1, 3, 2), call=lambda m, x: m(x)[1])  # h0 = 0


def test_gradient_to_the_first_input_vanishes_with_distance():
    """||d h_T / d x_1|| for T = 2, 4, 8, 16: every extra step multiplies by diag(1 - h^2) W_hh^T."""
    rnn = RNN(4, 8).double()
    norms = []
    for T in (2, 4, 8, 16):
        x = x_like(1, T, 4).requires_grad_()
        _, h_T = rnn(x)
        h_T.sum().backward()
        norms.append(float(np.linalg.norm(x.grad.numpy()[0, 0])))
    assert all(later < 0.5 * earlier for earlier, later in zip(norms, norms[1:])), norms


@given(st.integers(0, 3))
def test_step_t_never_sees_later_inputs(t):
    rnn = RNN(3, 4).double()
    x = x_like(1, 4, 3).requires_grad_()
    outputs, _ = rnn(x)
    outputs[:, t].sum().backward()
    assert not x.grad.numpy()[:, t + 1:].any() and x.grad.numpy()[:, :t + 1].any()


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match=r'RNN\(d_in=3\): expected x of shape \(B, T, 3\)'):
        RNN(3, 4)(mt.randn(2, 5, 2))
    with pytest.raises(ValueError, match=r'RNNCell\(3, 4\): input has last dimension 2'):
        RNNCell(3, 4)(mt.randn(2, 2))
