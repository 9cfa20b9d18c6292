"""Where numpy and PyTorch mean different things, the Tensor means what PyTorch means, or it
raises an error naming both meanings; never a silent third thing.  These tests need no torch:
the expected values are worked out by hand (test_torch_semantics.py checks against torch)."""
import numpy as np
import pytest

import microtensor as mt
from transformer.norm import BatchNorm1d


# ---------------------------------------------------------------------------- max and min
def test_max_with_a_dim_is_a_named_tuple_of_values_and_indices():
    x = mt.tensor([[3.0, 1.0, 3.0], [2.0, 5.0, 2.0]], requires_grad=True)
    out = x.max(1)
    values, indices = out
    assert type(out).__name__ == 'max' and out.values is values and out.indices is indices and out[0] is values
    assert values.tolist() == [3.0, 5.0] and indices.tolist() == [0, 1] and indices.dtype == mt.int64
    assert x.max(dim=1, keepdim=True).values.shape == (2, 1) and x.min(axis=0, keepdims=True).indices.shape == (1, 3)
    values.sum().backward()
    assert x.grad.tolist() == [[1, 0, 0], [0, 1, 0]]  # only the returned index (the first tie), as PyTorch


def test_max_without_a_dim_and_amax_share_the_gradient_between_ties():
    x = mt.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]], requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [[0.5, 0, 0.5], [0, 0, 0]]
    x.grad = None
    x.amin(dim=1).sum().backward()
    assert np.allclose(x.grad.numpy(), [[0, 1, 0], [1 / 3, 1 / 3, 1 / 3]])


def test_max_over_several_dims_points_to_amax():
    with pytest.raises(TypeError, match=r"max: dim=\(0, 1\).*amax\(dim=\(0, 1\)\)"):
        mt.zeros(2, 3).max(dim=(0, 1))


def test_argmax_takes_keepdim():
    x = mt.tensor([[1.0, 4.0, 4.0], [7.0, 0.0, 7.0]])
    assert x.argmax(dim=1).tolist() == [1, 0] and x.argmax(1, keepdim=True).shape == (2, 1)
    assert x.argmin(axis=0, keepdims=True).tolist() == [[0, 1, 0]] and x.argmax().item() == 3


@pytest.mark.parametrize('op', ['sub', 'add', 'mul', 'truediv', 'pow', 'eq', 'lt', 'matmul'])
def test_an_operator_given_a_tuple_of_tensors_refuses(op):
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match=r"holding tensors.*\.values"):
        getattr(x, f'__{op}__')(x.max(1))  # x - x.max(1): the values were meant
    with pytest.raises(TypeError, match="holding tensors"):
        getattr(x, f'__{op}__')([x[0], x[1]])
    assert (x - x.max(1).values[:, None]).tolist() == [[-1, 0], [-1, 0]]


# ---------------------------------------------------------------------------- dims
def test_reduction_dims_are_spelled_as_pytorch_or_numpy_but_not_both():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    assert x.sum(dim=1).tolist() == x.sum(axis=1).tolist() == x.sum(1).tolist() == [3, 12]
    assert x.mean(0, keepdim=True).shape == x.mean(axis=0, keepdims=True).shape == (1, 3)
    with pytest.raises(TypeError, match="sum: got dim=0 and axis=1; axis is numpy's name for dim"):
        x.sum(dim=0, axis=1)
    with pytest.raises(TypeError, match="mean: got keepdim=True and keepdims=False"):
        x.mean(0, keepdim=True, keepdims=False)


@pytest.mark.parametrize('name', ['sum', 'mean', 'var', 'std', 'amax', 'amin'])
def test_an_empty_dim_tuple_is_refused_naming_both_meanings(name):
    with pytest.raises(ValueError, match=r"dim=\(\) is ambiguous: numpy .* 'reduce nothing', PyTorch .* "
                                         r"'reduce every dimension'"):
        getattr(mt.ones(2, 3), name)(dim=())


def test_a_0d_tensor_reduces_over_dim_0_or_minus_1():
    x = mt.tensor(2.5, requires_grad=True)
    for dim in (0, -1):
        assert x.sum(dim).item() == 2.5 and x.amax(dim, keepdim=True).shape == () and x.sum((dim,)).item() == 2.5
        assert x.max(dim).indices.item() == 0 and x.argmax(dim).item() == 0
    x.mean(0).backward()
    assert x.grad.item() == 1.0
    with pytest.raises(IndexError, match="0-d tensor has no axes"):
        x.sum(1)


# ---------------------------------------------------------------------------- var and std
def test_var_divides_by_n_minus_1_unless_told_otherwise():
    x = mt.tensor([1.0, 2.0, 3.0, 6.0])  # mean 3, squares 4 + 1 + 0 + 9 = 14
    assert x.var().item() == pytest.approx(14 / 3)
    for biased in [x.var(correction=0), x.var(unbiased=False), x.var(ddof=0), x.var(None, False), x.var(False)]:
        assert biased.item() == pytest.approx(14 / 4)
    assert x.var(correction=2).item() == pytest.approx(14 / 2) and x.std().item() == pytest.approx((14 / 3) ** 0.5)
    assert mt.var(x, ddof=1).item() == pytest.approx(14 / 3) and mt.std(x, correction=0).item() == pytest.approx(14 ** 0.5 / 2)


def test_conflicting_divisors_are_an_error_naming_both():
    x = mt.ones(3)
    with pytest.raises(ValueError, match=r"var: unbiased=True and ddof=0 ask for different divisors"):
        x.var(unbiased=True, ddof=0)
    with pytest.raises(ValueError, match=r"std: correction=0 and ddof=1 ask for different divisors"):
        x.std(correction=0, ddof=1)
    assert x.var(unbiased=False, correction=0).item() == 0  # the same divisor twice: fine


def test_batchnorm_normalises_with_the_biased_variance_and_tracks_the_unbiased_one():
    x = mt.tensor(np.array([[1.0], [2.0], [3.0], [6.0]]))
    bn = BatchNorm1d(1, momentum=1.0)
    y = bn(x)
    np.testing.assert_allclose(y.numpy()[:, 0], (np.array([1, 2, 3, 6]) - 3) / np.sqrt(14 / 4 + bn.eps), rtol=1e-6)
    assert bn.running_var.item() == pytest.approx(14 / 3)


# ---------------------------------------------------------------------------- shapes
def test_transpose_swaps_and_squeeze_of_a_wider_dim_is_a_no_op():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    assert x.transpose(0, 1).tolist() == [[0, 3], [1, 4], [2, 5]]  # numpy would return x unchanged
    assert x.squeeze(0).shape == (2, 3) and mt.zeros(2, 1, 3, 1).squeeze((1, 2)).shape == (2, 3, 1)


def test_split_takes_chunk_sizes_or_a_list_of_sizes():
    x = mt.arange(10)
    assert [p.tolist() for p in mt.split(x, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.tolist() for p in x.split([1, 6, 3])] == [[0], [1, 2, 3, 4, 5, 6], [7, 8, 9]]
    assert [len(p) for p in x.chunk(3)] == [4, 4, 2]


def test_shape_errors_are_one_class_caught_as_runtime_error_and_value_error():
    assert issubclass(mt.ShapeError, RuntimeError) and issubclass(mt.ShapeError, ValueError)
    for call in [lambda: mt.ones(2, 3) + mt.ones(4), lambda: mt.ones(2, 3) @ mt.ones(2, 3),
                 lambda: mt.ones(2, 3).reshape(4), lambda: mt.concatenate([mt.ones(2, 3), mt.ones(2, 2)]),
                 lambda: mt.stack([mt.ones(2), mt.ones(3)]), lambda: mt.ones(2, 3).broadcast_to((3, 3)),
                 lambda: mt.linear(mt.ones(2, 3), mt.ones(4, 2)), lambda: mt.ones(3).copy_(mt.ones(4)),
                 lambda: mt.ones(2, 3).masked_fill(mt.ones(3, 2) > 0, 0.0), lambda: mt.ones(2, 3).sum_to((2,))]:
        with pytest.raises(mt.ShapeError):
            call()


# ---------------------------------------------------------------------------- indexing
def test_ints_mixed_with_index_arrays_pick_first_as_pytorch():
    x = mt.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    y = x[1, :, [0, 3]]  # numpy: shape (2, 3), the array's dim first; PyTorch: (3, 2)
    assert y.shape == (3, 2) and y.tolist() == [[12, 15], [16, 19], [20, 23]]
    (y * mt.tensor([[1.0, 2.0]] * 3)).sum().backward()
    expected = np.zeros((2, 3, 4))
    expected[1, :, 0], expected[1, :, 3] = 1, 2
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert x[mt.tensor(1), :, mt.tensor([0, 3])].shape == (3, 2)  # a 0-d integer tensor counts as an int


def test_a_write_through_a_mixed_index_takes_a_number_and_refuses_an_ambiguous_value():
    x = mt.zeros(2, 3, 4)
    x[1, :, [0, 3]] = 5.0
    assert x.numpy().sum() == 30
    with pytest.raises(IndexError, match=r"setitem: .*\(3, 2\) in PyTorch but \(2, 3\) in numpy"):
        x[1, :, [0, 3]] = mt.ones(3, 2)
    x[:, [0, 1], 2] = mt.ones(2, 2)  # the ints and the array are adjacent: both libraries agree
    assert x.numpy()[:, :2, 2].tolist() == [[1, 1], [1, 1]]


def test_one_dim_is_spelled_dim_or_axis_and_none_is_refused():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    assert x.softmax(dim=0).shape == x.softmax(axis=0).shape == (2, 3)
    assert mt.cat([x, x], dim=1).shape == mt.concatenate([x, x], axis=1).shape == (2, 6)
    assert mt.stack([x, x], dim=-1).shape == (2, 3, 2) and x.t().shape == (3, 2) and x.dim() == 2
    with pytest.raises(TypeError, match="concatenate: dim=None: numpy's axis=None means the flattened tensor"):
        mt.concatenate([x, x], axis=None)
    with pytest.raises(TypeError, match="softmax: got dim=0 and axis=1"):
        x.softmax(dim=0, axis=1)
    with pytest.raises(mt.ShapeError, match=r"t: takes a tensor of at most 2 dimensions"):
        mt.zeros(2, 3, 4).t()


def test_an_in_place_operator_given_the_tuple_of_max_refuses():
    x = mt.zeros(2, 3)
    for op in ['__isub__', '__iadd__', '__imul__', '__itruediv__']:
        with pytest.raises(TypeError, match="holding tensors"):
            getattr(x, op)(x.max(1))
    assert x.tolist() == [[0, 0, 0], [0, 0, 0]]  # nothing was written
