"""hypothesis strategies shared by the tests: shapes, broadcastable pairs, float64 data,
reduction axes; plus `devices` (run a test on every backend) and `assert_forward`.

Sizes stay tiny (sides <= 4): a gradient check perturbs every element twice.
"""
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from conftest import DEVICES

# @devices on a hypothesis test runs it once per backend ('cpu', and 'cuda' with a GPU);
# a parametrize rather than the `device` fixture, which hypothesis refuses to share between examples.
devices = pytest.mark.parametrize('device', DEVICES)

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
nonscalar_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@st.composite
def broadcastable_shapes(draw, min_dims=0):
    """A pair of shapes numpy can broadcast together: (a_shape, b_shape)."""
    a, b = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=min_dims, max_dims=3, max_side=4)).input_shapes
    return a, b


@st.composite
def arrays(draw, shape, low=-3.0, high=3.0):
    """float64 values, moderate so finite differences stay accurate."""
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(low, high, allow_nan=False, allow_infinity=False)))


@st.composite
def tensors(draw, shape=None, low=-3.0, high=3.0, device='cpu', transposed=None):
    """A float64 leaf tensor requiring grad; sometimes built from a transposed
    (non-contiguous) array, to check ops do not assume C order."""
    shape = draw(shapes) if shape is None else shape
    transposed = draw(st.booleans()) if transposed is None else transposed
    if transposed and len(shape) >= 2:
        data = draw(arrays(shape[::-1], low, high)).T
    else:
        data = draw(arrays(shape, low, high))
    return mt.tensor(data, device=device, requires_grad=True)


@st.composite
def distinct_tensors(draw, shape=None, device='cpu', offset=0.5, gap=0.1):
    """A float64 leaf tensor whose values are all distinct and far from the kinks of
    relu/abs/max/min/clip, so finite differences never straddle one.

    Values are (k + offset) * gap plus a jitter of at most gap/8, for a shuffled k = -n/2 .. n/2:
    offset=0.5 keeps them at least 3 gap/8 from 0 and from every multiple of gap
    (use multiples of gap as clip bounds); offset=0 gives values within gap/8 of multiples
    of gap, so at least gap/4 from any offset=0.5 tensor (no ties in maximum(a, b)).
    """
    shape = draw(shapes) if shape is None else shape
    n = int(np.prod(shape))
    k = np.array(draw(st.permutations(range(n))), dtype=np.float64) - n // 2
    jitter = draw(arrays((n,), -gap / 8, gap / 8))
    data = ((k + offset) * gap + jitter).reshape(shape)
    return mt.tensor(data, device=device, requires_grad=True)


@st.composite
def axes(draw, ndim):
    """A reduction `axis`: None, an int or a tuple of distinct axes, each maybe negative."""
    kind = draw(st.sampled_from(['none', 'int', 'tuple'] if ndim else ['none', 'tuple']))
    if kind == 'none':
        return None
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1 if kind == 'int' else 0,
                           max_size=1 if kind == 'int' else ndim)) if ndim else []
    chosen = [a - ndim if draw(st.booleans()) else a for a in chosen]
    return chosen[0] if kind == 'int' else tuple(chosen)


def assert_forward(out, expected, rtol=1e-10, atol=1e-12):
    """The op's forward pass equals the numpy reference: same shape, same values."""
    expected = np.asarray(expected)
    assert out.shape == expected.shape, f"forward shape {out.shape}, numpy gives {expected.shape}"
    np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=atol)
