"""masked_softmax with query rows that allow no key: one defined answer in the textbook and in
the fused layer, weights 0 and gradient 0 there (not nan), whatever the mask's shape, the
dtype, or how the loss leaves those rows out; the other rows are the ordinary softmax."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt


def _run(scores, mask, upstream, fused, leave_out_empty_rows):
    """(weights, dL/dscores) of loss = sum(upstream * P), with the empty rows left out by where if asked."""
    with mt.fused() if fused else contextlib.nullcontext():
        s = mt.tensor(scores, requires_grad=True)
        p = mt.masked_softmax(s, mask)
        weighted = p * mt.tensor(upstream)
        if leave_out_empty_rows:
            weighted = mt.where(np.broadcast_to(mask, scores.shape).any(axis=-1, keepdims=True), weighted, 0.0)
        weighted.sum().backward()
    return p.numpy(), s.grad.numpy()


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(['float16', 'float32', 'float64']),
       st.sampled_from(['full', 'per_query', 'per_batch']), st.booleans())
def test_a_row_without_keys_has_weights_and_gradient_0_in_both_paths(seed, dtype, shape, leave_out):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((2, 4, 5)).astype(dtype)
    mask_shape = {'full': (2, 4, 5), 'per_query': (4, 5), 'per_batch': (2, 1, 5)}[shape]
    mask = rng.random(mask_shape) < 0.6
    mask[..., rng.integers(mask.shape[-2]), :] = False  # at least one row without keys
    upstream = rng.standard_normal(scores.shape).astype(dtype)
    p, grad = _run(scores, mask, upstream, False, leave_out)
    p_fused, grad_fused = _run(scores, mask, upstream, True, leave_out)
    tolerance = 2e-3 if dtype == 'float16' else 1e-5
    np.testing.assert_allclose(p_fused, p, atol=tolerance)
    np.testing.assert_allclose(grad_fused, grad, atol=tolerance)
    empty = ~np.broadcast_to(mask, scores.shape).any(axis=-1)
    assert (p[empty] == 0).all() and (grad[empty] == 0).all()
    assert np.isfinite(p).all() and np.isfinite(grad).all()
    shifted = np.where(mask, scores.astype('float64'), -np.inf)[~empty]  # the other rows: softmax
    expected = np.exp(shifted - shifted.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(p[~empty], expected / expected.sum(axis=-1, keepdims=True), atol=tolerance)


@pytest.mark.parametrize('fused', [False, True], ids=['textbook', 'fused'])
def test_the_gradient_through_a_mask_with_an_empty_row_is_the_finite_differences(fused):
    mask = np.array([[True, False, True], [False, False, False], [True, True, False]])
    scores = mt.tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
    with mt.fused() if fused else contextlib.nullcontext():
        assert mt.gradcheck(lambda s: mt.masked_softmax(s, mask), [scores])
