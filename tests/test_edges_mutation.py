"""No silent wrong gradient from shared memory.

    mutation after forward   arrays an op keeps for backward that are not Tensor inputs
                             (index arrays, masks, targets, constant operands) cannot be
                             changed under a pending backward
    aliasing                 mt.tensor copies; mt.from_numpy / mt.as_tensor share memory
                             and the in-place counter
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt


def grads_of(loss_fn, *tensors):
    """d(loss)/d(tensors) as numpy arrays (fresh leaves each time)."""
    leaves = [mt.tensor(t, requires_grad=True) for t in tensors]
    loss_fn(*leaves).backward()
    return [t.grad.numpy() for t in leaves]


# ---------------------------------------------------------------------------- mutation after forward
# name: (loss(x, param), make param from (rng, n rows), change param in place).  Each op keeps a
# private copy of the array (or derives new arrays from it) in forward; the docstrings say which.


def _ids(rng, n):
    return rng.integers(0, n, size=4)


def _mask(rng, n):
    return rng.random((n, 3)) > 0.5


def _shift_ids(ids, n):
    ids[...] = (ids + 1) % n


def _flip(mask):
    mask[...] = ~mask


def _scale(a):
    a *= -3.0


def _as_tensor(make):
    return lambda rng, n: mt.tensor(make(rng, n))


def _change_tensor(change):
    def mutate(t):
        with mt.no_grad():
            array = t.numpy().copy()
            change(array)
            t.copy_(array)
    return mutate


def _written(x, ids, v):
    buf = x * 1.0
    buf[ids] = v
    return buf


MUTATIONS = {
    'x[ids] (numpy ids)': (lambda x, p: (x[p] ** 2).sum(), _ids, None),
    'x[ids] (Tensor ids)': (lambda x, p: (x[p] ** 2).sum(), _as_tensor(_ids), None),
    'x[ids] (list ids)': (lambda x, p: (x[p] ** 2).sum(), lambda rng, n: list(_ids(rng, n)), None),
    'x[rows, cols]': (lambda x, p: (x[p[0], p[1]] ** 2).sum(),
                      lambda rng, n: (_ids(rng, n), rng.integers(0, 3, 4)), None),
    'embedding E[ids] (2-D ids)': (lambda x, p: (x[p] ** 2).sum(),
                                   lambda rng, n: mt.tensor(rng.integers(0, n, (2, 3))), None),
    'x[mask] (numpy)': (lambda x, p: (x[p] ** 2).sum(), _mask, None),
    'x[mask] (Tensor)': (lambda x, p: (x[p] ** 2).sum(), _as_tensor(_mask), None),
    'x[ids], second order': (lambda x, p: (mt.grad((x[p] ** 3).sum(), x, create_graph=True)[0] ** 2).sum(),
                             _ids, None),
    'buf[ids] = v': (lambda x, p: (_written(x, p, x[0] * 2) ** 2).sum(), _ids, None),
    'where(mask, x, 0) (numpy)': (lambda x, p: (mt.where(p, x, 0.0) ** 2).sum(), _mask, None),
    'where(mask, x, 0) (Tensor)': (lambda x, p: (mt.where(p, x, 0.0) ** 2).sum(), _as_tensor(_mask), None),
    'masked_fill (numpy)': (lambda x, p: (x.masked_fill(p, 1.0) ** 2).sum(), _mask, None),
    'masked_fill (Tensor)': (lambda x, p: (x.masked_fill(p, 1.0) ** 2).sum(), _as_tensor(_mask), None),
    'cross_entropy targets (numpy)': (lambda x, p: mt.cross_entropy(x, p), lambda rng, n: rng.integers(0, 3, n), None),
    'cross_entropy targets (Tensor)': (lambda x, p: mt.cross_entropy(x, p),
                                       lambda rng, n: mt.tensor(rng.integers(0, 3, n)), None),
    'cross_entropy targets (list)': (lambda x, p: mt.cross_entropy(x, p), lambda rng, n: list(rng.integers(0, 3, n)),
                                     None),
    'x * array': (lambda x, p: (x * p).sum(), lambda rng, n: rng.standard_normal((n, 3)), _scale),
    'array / x': (lambda x, p: (p / (x * x + 1)).sum(), lambda rng, n: rng.standard_normal((n, 3)), _scale),
    'x ** array': (lambda x, p: ((x * x + 1) ** p).sum(), lambda rng, n: rng.random((n, 3)) + 1, _scale),
    'array ** x': (lambda x, p: (p ** x).sum(), lambda rng, n: rng.random((n, 3)) + 1, _scale),
    'maximum(x, array)': (lambda x, p: mt.maximum(x, p).sum(), lambda rng, n: rng.standard_normal((n, 3)), _scale),
    'x @ array': (lambda x, p: (x @ p).sum(), lambda rng, n: rng.standard_normal((3, 2)), _scale),
    'layer_norm(x, gamma array)': (lambda x, p: (mt.layer_norm(x, 3, p, np.zeros(3)) ** 3).sum(),
                                   lambda rng, n: rng.standard_normal(3), _scale),
}


def _default_mutation(param, n):
    if isinstance(param, mt.Tensor):
        return _change_tensor(lambda a: _flip(a) if a.dtype == bool else _shift_ids(a, n))(param)
    if isinstance(param, tuple):  # (rows, cols) of an (n, 3) tensor
        _shift_ids(param[0], n)
        _shift_ids(param[1], 3)
        return None
    if isinstance(param, list):
        param[0] = (param[0] + 1) % n
        return None
    return _flip(param) if param.dtype == bool else _shift_ids(param, n)


@pytest.mark.parametrize('name', MUTATIONS)
@given(n=st.integers(2, 5), seed=st.integers(0, 2 ** 16))
def test_changing_a_saved_array_after_forward_cannot_change_the_gradient(name, n, seed):
    loss_fn, make, mutate = MUTATIONS[name]
    rng = np.random.default_rng(seed)
    x_values = rng.standard_normal((n, 3))
    param = make(rng, n)
    reference = grads_of(lambda x: loss_fn(x, param), x_values)[0]

    x = mt.tensor(x_values, requires_grad=True)
    loss = loss_fn(x, param)
    if mutate is None:
        _default_mutation(param, n)
    else:
        mutate(param)
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), reference)


def test_a_mutation_would_have_changed_the_gradient():
    """The test above can fail: with the old, shared index the gradient moves to other rows."""
    ids = np.array([0, 0, 1])
    x = mt.tensor(np.ones((3, 2)), requires_grad=True)
    y = (x[ids] * 2).sum()
    ids[:] = 2  # the forward pass saw rows 0, 0, 1
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[4, 4], [2, 2], [0, 0]])


# ---------------------------------------------------------------------------- aliasing at construction


@pytest.mark.parametrize('source', ['ndarray', 'tensor', 'list of arrays'])
def test_mt_tensor_always_copies(source):
    a = np.arange(3.0)
    data = {'ndarray': a, 'tensor': mt.from_numpy(a), 'list of arrays': [a[0], a[1], a[2]]}[source]
    t = mt.tensor(data)
    a[0] = 100.0
    assert t.numpy().tolist() == [0.0, 1.0, 2.0]
    assert not np.shares_memory(t.numpy(), a)


def test_mt_tensor_of_a_list_of_tensors_stacks_copies_of_them():
    a, b = mt.tensor(1.0), mt.tensor(2.0, requires_grad=True)
    t = mt.tensor([a, b])
    assert t.tolist() == [1.0, 2.0] and t.is_leaf and not t.requires_grad
    a.fill_(5.0)
    assert t.tolist() == [1.0, 2.0]
    assert mt.tensor((mt.tensor([1, 2]), mt.tensor([3, 4]))).tolist() == [[1, 2], [3, 4]]


def test_a_tensor_made_with_mt_tensor_does_not_see_writes_to_the_source_of_a_pending_backward():
    a = np.arange(1.0, 4.0)
    w = mt.tensor(a)
    x = mt.tensor(np.ones(3), requires_grad=True)
    y = (x * w).sum()
    a[:] = 0.0  # before: w shared a's memory, and x.grad became 0 silently
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])


def test_from_numpy_shares_memory_dtype_and_the_in_place_counter():
    a = np.arange(4.0)
    t, u = mt.from_numpy(a), mt.from_numpy(a[1:])
    assert t.dtype == np.float64 and np.shares_memory(t.numpy(), a)
    a[0] = 7.0
    assert t.numpy()[0] == 7.0
    assert t._version is u._version  # one counter for one memory block
    x = mt.tensor(np.ones(4), requires_grad=True)
    y = (x * t).sum()
    u.fill_(0.0)  # writes t's memory through another tensor
    with pytest.raises(RuntimeError, match="Mul: an input of shape \\(4,\\) was modified in place"):
        y.backward()


def test_from_numpy_of_a_tensors_numpy_shares_that_tensors_counter():
    x = mt.tensor(np.arange(3.0))
    alias = mt.from_numpy(x.numpy())
    assert alias._version is x._version
    w = mt.tensor(np.ones(3), requires_grad=True)
    y = (w * x).sum()
    alias.fill_(5.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_as_tensor_shares_when_it_can_and_copies_when_it_must():
    x = mt.tensor([1.0, 2.0])
    assert mt.as_tensor(x) is x
    assert mt.as_tensor(x, dtype='float64').dtype == np.float64
    a = np.arange(3.0)
    shared = mt.as_tensor(a)
    assert np.shares_memory(shared.numpy(), a) and shared._version is mt.from_numpy(a)._version
    copied = mt.as_tensor(a, dtype='float32')
    assert copied.dtype == np.float32 and not np.shares_memory(copied.numpy(), a)
    assert mt.as_tensor([1.0, 2.0]).dtype == np.float32  # Python floats, as mt.tensor
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    assert mt.as_tensor(w * 2, dtype='float64').creator is not None  # a conversion stays in the graph


@pytest.mark.parametrize('bad', [[1, 2], 'a', mt.tensor([1.0]), np.array(['a'])])
def test_from_numpy_wants_a_numeric_numpy_array(bad):
    with pytest.raises(TypeError, match="from_numpy: "):
        mt.from_numpy(bad)
