"""The backward loop's semantics: accumulation, long chains, retain_graph, freeing the
graph, create_graph, mt.grad, no_grad, hooks, retain_grad, detach, and no leaks."""
import gc
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import microtensor as mt


def leaf(values):
    return mt.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# ---------------------------------------------------------------------------- accumulation
def test_a_tensor_used_twice_gets_both_gradients():
    x = leaf([1.0, -2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0, 6.0])
    y = leaf([1.0, 2.0])
    (y + y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0])


def test_diamond_graph():
    """x -> a = 2x, b = exp(x) -> y = a * b:  dy/dx = 2 exp(x) + 2x exp(x)."""
    x = leaf([0.5, -1.0])
    a, b = x * 2, x.exp()
    (a * b).sum().backward()
    xs = x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(xs) + 2 * xs * np.exp(xs), rtol=1e-14)


@pytest.mark.slow
def test_a_10000_op_chain_needs_no_recursion():
    assert sys.getrecursionlimit() < 10_000  # a recursive walk would fail here
    x = leaf(1.0)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.backward()
    np.testing.assert_allclose(x.grad.item(), 1.0001 ** 10_000, rtol=1e-10)
    z = x
    for _ in range(10_000):
        z = z + 1.0
    del z  # freeing an unreleased 10,000-deep graph does not crash either


def test_backward_of_a_non_scalar_takes_its_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    (x * 3).backward(np.array([[1.0, 0.0], [0.5, 2.0]]))
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 0.0], [1.5, 6.0]])


def test_float32_gradients_stay_float32():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (x * 0.5).exp().sum().backward()
    assert x.dtype == mt.float32 and x.grad.dtype == mt.float32


# ---------------------------------------------------------------------------- retain_graph, freeing
def test_retain_graph_lets_backward_run_again_and_accumulate():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])


def test_backward_releases_what_the_graph_saved():
    x = leaf([1.0, -2.0])
    h = x * 3
    y = h.relu()
    relu = y.creator
    assert hasattr(relu, 'passes') and relu.inputs[0] is h
    h_ref = weakref.ref(h)
    del h
    y.sum().backward()
    assert relu.inputs is None and not hasattr(relu, 'passes')
    assert h_ref() is None  # nothing kept the intermediate alive


def test_create_graph_gives_differentiable_gradients():
    x = leaf([0.5, -1.0, 2.0])
    (g,) = mt.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    (h,) = mt.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * x.numpy())  # d2/dx2 x^3 = 6x
    y = leaf([2.0])
    (y ** 3).sum().backward(create_graph=True)
    assert y.grad.requires_grad
    y.grad.sum().backward()  # accumulates d/dy (3y^2) = 6y into y.grad
    np.testing.assert_allclose(y.grad.numpy(), [3 * 4.0 + 12.0])
    z = leaf([2.0])
    (z ** 3).sum().backward()
    assert not z.grad.requires_grad  # without create_graph the gradient is a plain constant


# ---------------------------------------------------------------------------- mt.grad
def test_grad_returns_gradients_without_touching_dot_grad():
    x, w = leaf([1.0, 2.0]), leaf([3.0, -1.0])
    y = (x * w).sum()
    gx, gw = mt.grad(y, [x, w])
    np.testing.assert_array_equal(gx.numpy(), [3.0, -1.0])
    np.testing.assert_array_equal(gw.numpy(), [1.0, 2.0])
    assert x.grad is None and w.grad is None


def test_grad_with_grad_outputs_and_several_outputs():
    x = leaf([1.0, 2.0, 3.0])
    a, b = x * 2, x * x
    (g,) = mt.grad([a, b], [x], grad_outputs=[mt.tensor(np.ones(3)), mt.tensor(np.array([1.0, 0.0, -1.0]))])
    np.testing.assert_array_equal(g.numpy(), [2 + 2, 2 + 0, 2 - 6])


def test_grad_of_a_non_leaf():
    x = leaf([1.0, 2.0])
    h = x * 3
    (gh,) = mt.grad((h * h).sum(), h)
    np.testing.assert_array_equal(gh.numpy(), 2 * h.numpy())


def test_grad_allow_unused():
    x, unused = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match="not used to compute the outputs.*allow_unused=True"):
        mt.grad((x * 2).sum(), [x, unused])
    gx, gu = mt.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gx.item() == 2.0 and gu is None


# ---------------------------------------------------------------------------- grad mode
def test_no_grad_records_nothing():
    x = leaf([1.0, 2.0])
    with mt.no_grad():
        y = x * 2
        assert not mt.is_grad_enabled()
        with mt.enable_grad():
            z = x * 2
    assert mt.is_grad_enabled()
    assert not y.requires_grad and y.creator is None
    assert z.requires_grad and z.creator is not None


def test_no_grad_is_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with mt.no_grad():
            1 / 0
    assert mt.is_grad_enabled()


def test_requires_grad_propagates():
    x, c = leaf([1.0]), mt.tensor(np.array([2.0]))
    assert x.is_leaf and not c.requires_grad
    y = x * c
    assert y.requires_grad and not y.is_leaf and type(y.creator).__name__ == 'Mul'
    z = c * 3
    assert not z.requires_grad and z.creator is None
    assert not (x > 0).requires_grad  # comparisons have no gradient


# ---------------------------------------------------------------------------- hooks, retain_grad, detach
def test_a_hook_sees_the_total_gradient_once_and_can_replace_it():
    x = leaf([1.0, 2.0])
    seen = []

    def hook(g):
        seen.append(g.numpy().copy())
        return g * 10

    handle = x.register_hook(hook)
    (x * x + x).sum().backward()  # x reaches the loss along three paths
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], 2 * x.numpy() + 1)
    np.testing.assert_array_equal(x.grad.numpy(), 10 * (2 * x.numpy() + 1))
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(x.grad.numpy(), 2 * x.numpy())


def test_a_hook_on_an_intermediate_changes_what_flows_further():
    x = leaf([1.0, 2.0])
    h = x * 3
    h.register_hook(lambda g: g * 0)
    (h * h + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_a_hook_returning_none_keeps_the_gradient():
    x = leaf([1.0])
    x.register_hook(lambda g: None)
    (x * 5).sum().backward()
    assert x.grad.item() == 5.0


def test_non_leaves_keep_no_grad_unless_retain_grad():
    x = leaf([1.0, 2.0])
    h, k = x * 2, x * 3
    k.retain_grad()
    (h * k).sum().backward()
    with pytest.warns(UserWarning, match=r'retain_grad\(\)'):  # as PyTorch: reading it is probably a mistake
        assert h.grad is None
    np.testing.assert_array_equal(k.grad.numpy(), h.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), 2 * k.numpy() + 3 * h.numpy())


def test_detach_shares_data_but_leaves_the_graph():
    x = leaf([1.0, 2.0])
    d = (x * 2).detach()
    assert not d.requires_grad and d.creator is None
    y = x.detach()
    assert y.data is x.data
    (x * d).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), d.numpy())  # d is a constant


# ---------------------------------------------------------------------------- order
def test_backward_order_is_deterministic_and_topological():
    def run():
        x = leaf([0.3, -0.7])
        named = {}
        order = []
        h = named['h'] = x.exp()
        a = named['a'] = h * x
        b = named['b'] = h.tanh()
        c = named['c'] = a + b
        d = named['d'] = (c * h).sum()
        for name, t in named.items():
            t.register_hook(lambda g, name=name: order.append(name))
        d.backward()
        return order

    first = run()
    assert first == run()
    assert first.index('d') < first.index('c') < first.index('a') < first.index('h')
    assert first.index('b') < first.index('h')


# ---------------------------------------------------------------------------- memory
def test_deleting_the_loss_frees_the_graph_without_gc():
    """No reference cycles: reference counting alone frees every intermediate and op."""
    x = leaf(np.linspace(-1, 1, 6).reshape(2, 3))
    w = leaf(np.ones((3, 2)))
    gc.disable()
    try:
        h = (x @ w).tanh()
        p = mt.softmax(h * 2, axis=-1)
        loss = mt.cross_entropy(p.log(), [0, 1]) + h[0].sum() + mt.layer_norm(h, h.shape[-1:], w[0], w[1]).mean()
        refs = [weakref.ref(t) for t in (h, p)] + [weakref.ref(t.creator) for t in (h, p, loss)]
        del h, p
        assert all(r() is not None for r in refs)  # the graph still holds them
        del loss
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()


def _live(kind):
    # type(o), not isinstance: isinstance asks some objects for __class__, and a module with a
    # __getattr__ for deprecated names (torch.distributed's, when torch was imported) then warns
    return sum(issubclass(type(o), kind) for o in gc.get_objects())


@pytest.mark.slow
def test_training_loop_memory_does_not_grow():
    """300 steps of a tiny MLP with manual SGD: after warm-up the number of live
    Tensors and Functions stays the same, and traced memory stays flat (keeping even
    one 0-d array a step would add ~28 KB over the 250 steps)."""
    rng = np.random.default_rng(0)
    X = mt.tensor(rng.standard_normal((16, 4)))
    y = mt.tensor(rng.standard_normal((16, 1)))
    params = [leaf(rng.standard_normal((4, 8)) * 0.5), leaf(np.zeros(8)),
              leaf(rng.standard_normal((8, 1)) * 0.5), leaf(np.zeros(1))]

    def step():
        W1, b1, W2, b2 = params
        loss = (((X @ W1 + b1).gelu() @ W2 + b2 - y) ** 2).mean()
        loss.backward()
        with mt.no_grad():
            for p in params:
                p.copy_(p - 0.05 * p.grad)
                p.grad = None
        return loss.item()

    gc.collect()
    tracemalloc.start()  # before the warm-up: blocks allocated untraced and freed later would skew the count
    tuples = [(i,) * size for size in range(1, 5) for i in range(2000)]  # fill CPython's free lists
    del tuples  # of small tuples now: they would fill up during the loop and look like growth
    try:
        first_loss = step()
        for _ in range(49):
            step()
        tensors_before, functions_before = _live(mt.Tensor), _live(mt.Function)
        memory_before = tracemalloc.get_traced_memory()[0]
        for _ in range(250):
            last_loss = step()
        memory_growth = tracemalloc.get_traced_memory()[0] - memory_before
    finally:
        tracemalloc.stop()
    assert last_loss < first_loss * 0.5  # it really trains
    assert (_live(mt.Tensor), _live(mt.Function)) == (tensors_before, functions_before)
    assert memory_growth < 8_000, f"{memory_growth} bytes kept over 250 steps"


def test_gradient_has_the_dtype_of_its_tensor():
    """Mixed precision: x (float32) used in a float64 op gets a float32 .grad, as in PyTorch."""
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = mt.tensor([3.0, 4.0], dtype='float64', requires_grad=True)
    (x * y).sum().backward()
    assert x.grad.dtype == mt.float32 and y.grad.dtype == mt.float64
    assert x.grad.numpy().tolist() == [3.0, 4.0]
