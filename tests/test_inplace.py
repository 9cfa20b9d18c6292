"""In-place arithmetic (+=, -=, *=, /=) follows PyTorch: it writes into the tensor's memory (through to
the tensor a view was taken from), bumps the version, refuses a leaf that requires grad outside
no_grad, and is differentiable on non-leaves.  Also p.data -= lr * p.grad, Parameters staying
Parameters, and the other PyTorch habits of autograd state: grad mode per thread, requires_grad_
on a non-leaf."""
import operator
import threading

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import nn
from strategies import broadcastable_shapes, tensors

IN_PLACE = {'+=': (operator.iadd, operator.add), '-=': (operator.isub, operator.sub),
            '*=': (operator.imul, operator.mul), '/=': (operator.itruediv, operator.truediv)}
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), ()), ((3,), (1,))]


@given(op=st.sampled_from(sorted(IN_PLACE)), shapes=st.sampled_from(SHAPES),
       other_kind=st.sampled_from(['tensor', 'float', 'int', 'float64 tensor']))
def test_in_place_writes_the_out_of_place_result_into_the_same_memory(op, shapes, other_kind):
    in_place, out_of_place = IN_PLACE[op]
    x = mt.tensor(np.arange(1.0, 1.0 + np.prod(shapes[0])).reshape(shapes[0]), dtype="float32")
    other = {'tensor': lambda: mt.tensor(np.full(shapes[1], 1.5, dtype='float32')), 'float': lambda: 0.5,
             'int': lambda: 3, 'float64 tensor': lambda: mt.tensor(np.full(shapes[1], 2.0))}[other_kind]()
    expected = out_of_place(x, other).numpy()
    memory, version = x.data, x._version[0]
    y = in_place(x, other)
    assert y is x and x.data is memory and x.dtype == mt.float32
    assert x._version[0] == version + 1
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize('op', sorted(IN_PLACE))
def test_a_view_writes_through_to_its_base(op):
    x = mt.tensor(np.arange(8.0).reshape(2, 4))
    v = x[:, 1:3]
    before = x.numpy().copy()
    v = IN_PLACE[op][0](v, 2.0)
    expected = before.copy()
    expected[:, 1:3] = IN_PLACE[op][1](before[:, 1:3], 2.0)
    np.testing.assert_allclose(x.numpy(), expected)
    assert x._version[0] == 1  # a view and its base count changes together


def test_a_change_after_the_forward_pass_is_caught_at_backward():
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    h = w * 2
    y = (h * h).sum()  # Mul saves h
    with mt.no_grad():
        h += 1
    with pytest.raises(RuntimeError, match="modified in place after the forward pass"):
        y.backward()


def test_a_leaf_that_requires_grad_is_refused_outside_no_grad_and_updated_inside():
    lin = nn.Linear(2, 2)
    lin(mt.randn(3, 2)).sum().backward()
    weight, before = lin.weight, lin.weight.numpy().copy()
    with pytest.raises(RuntimeError, match=r"-=: in-place change of a tensor that requires grad \(a leaf.*no_grad"):
        lin.weight -= 0.1 * lin.weight.grad
    np.testing.assert_array_equal(lin.weight.numpy(), before)  # refused: nothing written
    with mt.no_grad():
        for p in lin.parameters():
            p -= 0.1 * p.grad
    assert lin.weight is weight and isinstance(lin.weight, nn.Parameter) and len(lin.parameters()) == 2
    np.testing.assert_allclose(lin.weight.numpy(), before - 0.1 * lin.weight.grad.numpy(), rtol=1e-6)


def test_the_micrograd_idiom_on_p_data():
    p = nn.Parameter(mt.tensor([1.0, -2.0]))
    (p * p).sum().backward()
    memory = p.data
    p.data -= 0.1 * p.grad  # p.data is the array itself: numpy writes into it
    assert p.data is memory and isinstance(p, nn.Parameter)
    np.testing.assert_allclose(p.numpy(), [0.8, -1.6], rtol=1e-6)
    with pytest.raises(RuntimeError, match="requires grad"):
        p.data -= p  # numpy would drop p's graph without a word


def test_numpy_arrays_still_meet_tensors_in_the_graph():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    for y in (np.array([2.0, 3.0]) * x, np.array([2.0, 3.0]) + x, np.float64(2.0) - x, np.ones(2) / x):
        assert isinstance(y, mt.Tensor) and y.requires_grad
    assert (np.array([1.0, 5.0]) < mt.tensor([2.0, 2.0])).tolist() == [True, False]
    np.testing.assert_array_equal(np.asarray(mt.tensor([1, 2])), [1, 2])
    with pytest.raises(TypeError):
        np.exp(x)  # numpy's functions do not take tensors: use x.exp()


@given(op=st.sampled_from(sorted(IN_PLACE)), self_requires_grad=st.booleans(), shapes=st.sampled_from(SHAPES))
def test_in_place_on_a_non_leaf_is_differentiable(op, self_requires_grad, shapes):
    in_place, out_of_place = IN_PLACE[op]
    a0 = np.linspace(0.5, 2.0, int(np.prod(shapes[0]))).reshape(shapes[0])
    b0 = np.full(shapes[1], 1.25)

    def run(change):
        a = mt.tensor(a0, requires_grad=True)
        b = mt.tensor(b0, requires_grad=True)
        h = a * 3 if self_requires_grad else mt.tensor(a0 * 3)
        h = change(h, b)
        (h * h).sum().backward()
        return h.numpy(), (a.grad.numpy() if self_requires_grad else None), b.grad.numpy()

    ours, reference = run(in_place), run(out_of_place)
    for got, expected in zip(ours, reference):
        if expected is not None:
            np.testing.assert_allclose(got, expected, rtol=1e-12)


@given(op=st.sampled_from(sorted(IN_PLACE)), shapes=broadcastable_shapes(), data=st.data())
def test_in_place_on_a_non_leaf_passes_a_gradient_check(op, shapes, data):
    a = data.draw(tensors(shapes[0], low=0.5, high=2.0))
    b = data.draw(tensors(shapes[1], low=0.5, high=2.0))  # (away from 0: b divides)
    out_shape = np.broadcast_shapes(*shapes)

    def fn(a, b):
        h = a * mt.ones(*out_shape, dtype='float64')  # a non-leaf of the result's shape
        h = IN_PLACE[op][0](h, b)
        return h * h
    assert mt.gradcheck(fn, [a, b])


@pytest.mark.parametrize('op', ['+=', '-=', '*=', '/='])
def test_in_place_with_a_wider_operand_keeps_the_dtype_and_its_gradients(op):
    torch = pytest.importorskip('torch', reason='PyTorch is the reference')
    x, y = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, 1.5, 2.5])
    a, w = mt.tensor(x, requires_grad=True), mt.tensor(y, requires_grad=True)      # float32, float64
    ta, tw = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    h, th = a * 2, ta * 2
    h, th = IN_PLACE[op][0](h, w), IN_PLACE[op][0](th, tw)
    assert h.dtype == mt.float32 and str(th.dtype) == 'torch.float32'
    (h * h).sum().backward()
    (th * th).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)
    assert w.grad.dtype == mt.float64


@pytest.mark.parametrize('op', ['+=', '-=', '*=', '/='])
def test_a_non_leaf_changed_in_place_by_itself_uses_its_old_value_twice(op):
    x = np.array([1.0, 2.0, 3.0])
    a = mt.tensor(x, requires_grad=True)
    h = a * 2
    h = IN_PLACE[op][0](h, h)
    h.sum().backward()
    b = mt.tensor(x, requires_grad=True)
    IN_PLACE[op][1](b * 2, b * 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


def test_in_place_on_a_view_in_the_graph_is_refused_clearly():
    a = mt.tensor(np.ones((2, 3)), requires_grad=True)
    h = a * 2
    v = h[0]
    with pytest.raises(RuntimeError, match=r"\+=: this tensor shares its memory with other tensors"):
        v += 1


@pytest.mark.parametrize('dtype', ['int64', 'int32', 'uint8', 'bool'])
def test_an_integer_tensor_cannot_take_a_float_result_in_place_as_in_pytorch(dtype):
    x = mt.tensor(np.array([1, 1], dtype=dtype))
    with pytest.raises(RuntimeError, match=r"/=: the result has dtype float32, which cannot be written into this "):
        x /= 2
    with pytest.raises(RuntimeError, match="the result has dtype float32"):
        x += 0.5
    np.testing.assert_array_equal(x.numpy(), np.array([1, 1], dtype=dtype))
    if dtype != 'bool':
        x += 3
        assert x.dtype == dtype and x.tolist() == [4, 4]


def test_in_place_under_no_grad_records_nothing():
    h = mt.tensor([1.0, 2.0], requires_grad=True) * 2
    creator = h.creator
    with mt.no_grad():
        h *= 2
    assert h.creator is creator
    np.testing.assert_array_equal(h.numpy(), [4.0, 8.0])


# ---------------------------------------------------------------------- autograd state, per PyTorch
def test_grad_mode_is_per_thread():
    seen, entered, release = {}, threading.Event(), threading.Event()

    def evaluate():
        with mt.no_grad():
            entered.set()
            release.wait(5)
            seen['worker'] = mt.is_grad_enabled()

    worker = threading.Thread(target=evaluate)
    worker.start()
    entered.wait(5)
    try:  # while the other thread is inside no_grad, this one still records
        assert mt.is_grad_enabled()
        assert (mt.tensor([1.0], requires_grad=True) * 2).requires_grad
    finally:
        release.set()
        worker.join()
    assert seen['worker'] is False and mt.is_grad_enabled()

    def fresh_thread():
        seen['new'] = mt.is_grad_enabled()
    with mt.no_grad():
        t = threading.Thread(target=fresh_thread)
        t.start()
        t.join()
    assert seen['new'] is True  # a new thread starts with recording on, as in PyTorch


def test_requires_grad_false_on_a_non_leaf_raises_as_in_pytorch():
    h = mt.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"requires_grad_\(False\): .* computed by Mul.*detach\(\)"):
        h.requires_grad_(False)
    assert h.requires_grad and h.creator is not None
    assert h.requires_grad_(True) is h  # (already true: nothing to change, as in PyTorch)
    leaf = mt.tensor([1.0], requires_grad=True)
    assert not leaf.requires_grad_(False).requires_grad
