"""buf[idx] = y: a differentiable write (SetItem), last write wins; without a graph it equals
numpy's and bumps the in-place counter.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt

from strategies import arrays


# ---------------------------------------------------------------------------- buf[idx] = y
INDEX_KINDS = {
    'int': lambda rng, n: int(rng.integers(-n, n)),
    'slice': lambda rng, n: slice(int(rng.integers(0, n)), None, int(rng.integers(1, 3))),
    'ids with repeats': lambda rng, n: rng.integers(-n, n, size=5),
    'mask': lambda rng, n: rng.random(n) > 0.4,
    'rows and cols': lambda rng, n: (rng.integers(0, n, 4), rng.integers(0, 3, 4)),
    'column': lambda rng, n: (slice(None), int(rng.integers(0, 3))),
}


def _region_shape(n, index):
    return np.empty((n, 3))[index].shape


@pytest.mark.slow
@pytest.mark.parametrize('kind', INDEX_KINDS)
@given(n=st.integers(1, 4), seed=st.integers(0, 2 ** 16), broadcast=st.booleans())
def test_setitem_with_a_graph_matches_numpy_and_gradcheck(kind, n, seed, broadcast):
    rng = np.random.default_rng(seed)
    index = INDEX_KINDS[kind](rng, n)
    region = _region_shape(n, index)
    v_shape = region[-1:] if broadcast and region else region
    x_values, v_values = rng.standard_normal((n, 3)), rng.standard_normal(v_shape)

    def write(x, v):
        buf = x * 1.0
        buf[index] = v
        return buf

    expected = x_values.copy()
    expected[index] = v_values  # numpy: the last of repeated writes stays
    out = write(mt.tensor(x_values, requires_grad=True), mt.tensor(v_values, requires_grad=True))
    np.testing.assert_array_equal(out.numpy(), expected)
    assert type(out.creator).__name__ == 'SetItem'
    inputs = [mt.tensor(x_values, requires_grad=True), mt.tensor(v_values, requires_grad=True)]
    assert mt.gradcheck(write, inputs)
    assert mt.gradgradcheck(lambda x, v: write(x, v) ** 2, inputs)


def test_setitem_repeated_indices_only_the_last_write_gets_a_gradient():
    """buf[[0, 2, 0]] = v: row 0 takes v[2] (numpy's last write), so v[0] lost its value, and its gradient."""
    x = mt.tensor(np.zeros((3, 2)), requires_grad=True)
    v = mt.tensor(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), requires_grad=True)
    buf = x * 1.0
    buf[np.array([0, 2, 0])] = v
    np.testing.assert_array_equal(buf.numpy(), [[5, 6], [0, 0], [3, 4]])
    weights = np.arange(6.0).reshape(3, 2) + 1
    (buf * mt.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [[0, 0], [5, 6], [1, 2]])  # g[2] to v[1], g[0] to v[2]
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [3, 4], [0, 0]])  # overwritten rows: nothing


def test_setitem_into_a_buffer_without_grad_joins_the_graph():
    """The RNN pattern: outputs[t] = h, into a zeros buffer."""
    h = mt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = mt.zeros(3, 2, dtype='float64')
    for t in range(3):
        out[t] = h * (t + 1)
    assert out.requires_grad and not out.is_leaf
    out.sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [6.0, 6.0])


def test_setitem_errors_instead_of_a_silent_wrong_gradient():
    w = mt.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="setitem: in-place change of a tensor that requires grad"):
        w[0] = 5.0
    buf = w * 1.0
    row = buf[1:]  # a view: it would not see the graph of a write into buf
    with pytest.raises(RuntimeError, match="setitem: this tensor shares its memory with other tensors"):
        buf[0] = w[0]
    del row
    y = buf * buf  # Mul saved buf's old value...
    buf[0] = w[0] * 3
    with pytest.raises(RuntimeError, match="Mul: an input of shape \\(3,\\) was modified in place"):
        y.sum().backward()  # ...which the write replaced: an error, never a wrong gradient


def test_setitem_into_an_integer_tensor_stays_out_of_the_graph():
    ids = mt.zeros(3, dtype='int64')
    v = mt.tensor(2.7, requires_grad=True)
    ids[1] = v
    assert ids.tolist() == [0, 2, 0] and not ids.requires_grad
    with pytest.raises(ValueError, match="setitem: cannot write nan or inf into a tensor of dtype int64"):
        ids[0] = np.array(np.nan)


@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
                    elements=st.floats(-50, 50)), data=st.data())
def test_setitem_without_graph_equals_numpy_and_bumps_the_counter(x, data):
    t = mt.tensor(x)
    index = data.draw(st.integers(-x.shape[0], x.shape[0] - 1))
    value = data.draw(arrays(x.shape[1:]))
    before = t._version[0]
    t[index] = value
    expected = x.copy()
    expected[index] = value
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t._version[0] == before + 1
