"""matmul: forward equals numpy's `@` and backward passes a gradient check for 2-D,
batched (broadcast batch axes), 1-D operands and N-D @ 2-D; plus second derivatives."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import assert_forward, devices, tensors

side = st.integers(1, 4)


@st.composite
def matmul_shapes(draw, kind):
    """(a_shape, b_shape) that numpy's matmul accepts, of the given kind."""
    n, k, m = draw(side), draw(side), draw(side)
    if kind == '2-D':
        return (n, k), (k, m)
    if kind == 'batched':  # batch axes that broadcast against each other
        batch_a, batch_b = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=2,
                                                                  max_side=3)).input_shapes
        return batch_a + (n, k), batch_b + (k, m)
    if kind == 'N-D @ 2-D':  # X @ W, the usual layer
        return draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)) + (n, k), (k, m)
    if kind == '1-D @ 1-D':
        return (k,), (k,)
    if kind == '1-D @ N-D':
        return (k,), draw(hnp.array_shapes(min_dims=0, max_dims=1, max_side=3)) + (k, m)
    assert kind == 'N-D @ 1-D'
    return draw(hnp.array_shapes(min_dims=0, max_dims=1, max_side=3)) + (n, k), (k,)


KINDS = ['2-D', 'batched', 'N-D @ 2-D', '1-D @ 1-D', '1-D @ N-D', 'N-D @ 1-D']


@pytest.mark.slow
@devices
@pytest.mark.parametrize('kind', KINDS)
@given(data=st.data())
def test_matmul(device, kind, data):
    a_shape, b_shape = data.draw(matmul_shapes(kind))
    a, b = data.draw(tensors(a_shape, device=device)), data.draw(tensors(b_shape, device=device))
    assert_forward(a @ b, a.numpy() @ b.numpy())
    assert_forward(mt.matmul(a, b), a.numpy() @ b.numpy())
    assert mt.gradcheck(lambda x, y: x @ y, [a, b])


@devices
@given(data=st.data())
def test_matmul_with_a_constant_operand(device, data):
    """Only one side needs a gradient (as in X @ W with data X); numpy arrays on either side."""
    a_shape, b_shape = data.draw(matmul_shapes('N-D @ 2-D'))
    a, b = data.draw(tensors(a_shape, device=device)), data.draw(tensors(b_shape, device=device))
    a_const = a.detach()
    assert mt.gradcheck(lambda w: a_const @ w, [b])
    assert mt.gradcheck(lambda x: x @ b.detach(), [a])
    if device == 'cpu':
        assert_forward(a.numpy() @ b, a.numpy() @ b.numpy())  # numpy @ Tensor -> Tensor.__rmatmul__
        assert_forward(a @ b.numpy(), a.numpy() @ b.numpy())


@pytest.mark.slow
@devices
@pytest.mark.parametrize('kind', ['2-D', 'batched', 'N-D @ 2-D', '1-D @ N-D'])
@given(data=st.data())
def test_matmul_second_derivatives(device, kind, data):
    a_shape, b_shape = data.draw(matmul_shapes(kind))
    a, b = data.draw(tensors(a_shape, device=device)), data.draw(tensors(b_shape, device=device))
    assert mt.gradgradcheck(lambda x, y: x @ y, [a, b])


def test_scalar_tensors_cannot_be_matrix_multiplied():
    x = mt.tensor(np.float64(2.0), requires_grad=True)
    with pytest.raises(ValueError, match=r"MatMul: .*\(\).*\(3,\).*use \*"):
        x @ mt.tensor(np.ones(3))


@pytest.mark.parametrize('a_shape, b_shape', [
    ((2, 3, 4), (4, 5)),      # X @ W: one 2-D product over the 6 rows
    ((0, 3, 4), (4, 5)),      # no rows
    ((2, 3, 0), (0, 5)),      # inner side empty: zeros
    ((2, 3, 4), (4, 0)),      # no columns
    ((1, 1, 1, 4), (4, 1)),   # unit sides
])
def test_x_at_w_equals_the_batched_product_and_its_gradients(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a = mt.tensor(rng.standard_normal(a_shape), requires_grad=True)
    b = mt.tensor(rng.standard_normal(b_shape), requires_grad=True)
    G = rng.standard_normal(a_shape[:-1] + b_shape[-1:])
    y = a @ b
    assert y.shape == a_shape[:-1] + b_shape[-1:]
    np.testing.assert_allclose(y.numpy(), a.numpy() @ b.numpy(), rtol=1e-12, atol=1e-12)
    (y * mt.tensor(G)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), G @ b.numpy().T, rtol=1e-12, atol=1e-12)
    leading = list(range(len(a_shape) - 1))
    batch_sum = np.tensordot(a.numpy(), G, axes=(leading, leading))   # A^T @ G of each batch entry, summed
    np.testing.assert_allclose(b.grad.numpy(), batch_sum, rtol=1e-12, atol=1e-12)
    assert b.grad.shape == b_shape and a.grad.shape == a_shape


def test_x_at_w_with_a_transposed_view_as_x():
    """A view whose rows are not contiguous (x.transpose) is multiplied as its values, not its memory."""
    rng = np.random.default_rng(1)
    x = mt.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)
    w = mt.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    xt = x.transpose(0, 2)                                   # (2, 3, 4)
    assert mt.gradcheck(lambda x, w: x.transpose(0, 2) @ w, [x, w])
    np.testing.assert_allclose((xt @ w).numpy(), np.swapaxes(x.numpy(), 0, 2) @ w.numpy(), rtol=1e-12)
