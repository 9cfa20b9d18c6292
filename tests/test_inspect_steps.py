"""mt.backward_steps: one step per op, in a valid order, with backward()'s gradients."""
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt


def ops_of(root):
    """Every op in the graph behind `root` (walked by hand, not by the engine)."""
    ops, stack, seen = [], [root], set()
    while stack:
        t = stack.pop()
        if id(t) in seen or t.creator is None:
            continue
        seen.add(id(t))
        ops.append(t.creator)
        stack.extend(x for x in t.creator.inputs if x.requires_grad)
    return ops


def diamond(x, W, b):
    """Reuse (h feeds two branches), broadcasting (b), a constant, a matmul: a small but honest graph."""
    h = (x @ W + b).tanh()
    return (h * h.sigmoid() + 2.0 * h).mean()


def make_leaves(device, seed=0):
    mt.manual_seed(seed)
    return [mt.randn(*shape, device=device, requires_grad=True, name=name)
            for name, shape in (('x', (3, 4)), ('W', (4, 5)), ('b', (5,)))]


def test_every_op_once_in_a_valid_order(device):
    leaves = make_leaves(device)
    loss = diamond(*leaves)
    steps = list(mt.backward_steps(loss))
    visited = [s.op for s in steps]
    assert len(visited) == len({id(op) for op in visited})  # exactly once
    assert {id(op) for op in visited} == {id(op) for op in ops_of(loss)}  # every op
    position = {id(s.op): i for i, s in enumerate(steps)}
    for s in steps:  # an op runs only after every op that uses its output
        for x in s.inputs:
            if x.creator is not None:
                assert position[id(x.creator)] > position[id(s.op)]
    assert [s.index for s in steps] == list(range(len(steps)))
    assert steps[0].output is loss


def test_final_gradients_equal_backward(device):
    reference = make_leaves(device)
    diamond(*reference).backward()
    stepped = make_leaves(device)
    for _ in mt.backward_steps(diamond(*stepped)):
        pass
    for a, b in zip(reference, stepped):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_a_step_shows_incoming_and_outgoing_gradients(device):
    x = mt.randn(2, 3, device=device, requires_grad=True, name='x')
    b = mt.randn(3, device=device, requires_grad=True, name='b')
    y = x * b
    y.name = 'y'
    g = mt.randn(2, 3, device=device)
    mul = next(s for s in mt.backward_steps(y, grad=g) if s.op_name == 'Mul')
    assert mul.output is y and mul.inputs == (x, b)
    np.testing.assert_allclose(mul.grad_output.numpy(), g.numpy())
    np.testing.assert_allclose(mul.grad_inputs[0].numpy(), (g * b).numpy(), rtol=1e-6)
    assert mul.grad_inputs[1].shape == (3,)  # broadcasting already undone
    np.testing.assert_allclose(mul.grad_inputs[1].numpy(), (g * x).numpy().sum(0), rtol=1e-5)
    text = str(mul)
    assert "Mul -> 'y' (2, 3)" in text and "'b' (3,)" in text


def test_hooks_run_and_their_result_is_what_the_step_shows():
    x = mt.randn(4, requires_grad=True)
    h = x.exp()
    h.register_hook(lambda g: g * 10)
    loss = h.sum()
    steps = list(mt.backward_steps(loss))
    exp_step = steps[1]
    assert exp_step.op_name == 'Exp'
    np.testing.assert_allclose(exp_step.grad_output.numpy(), np.full(4, 10.0))
    np.testing.assert_allclose(x.grad.numpy(), 10 * np.exp(x.numpy()), rtol=1e-6)


def test_stopping_early_leaves_the_graph_usable():
    leaves = make_leaves('cpu')
    loss = diamond(*leaves)
    for step in mt.backward_steps(loss):
        if step.op_name == 'Tanh':
            break
    assert leaves[0].grad is None  # x is reached after Tanh: not yet
    for t in leaves:
        t.grad = None
    loss.backward()  # the whole graph is still there
    reference = make_leaves('cpu')
    diamond(*reference).backward()
    for a, b in zip(reference, leaves):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_retain_graph_false_frees_each_visited_op():
    loss = diamond(*make_leaves('cpu'))
    steps = mt.backward_steps(loss, retain_graph=False)
    first = next(steps)
    assert first.op.inputs is not None  # still readable during its own step
    next(steps)
    assert first.op.inputs is None  # freed once the loop moved on, as backward() does
    steps.close()
    with pytest.raises(RuntimeError, match='retain_graph=True'):
        loss.backward()


def test_user_code_between_steps_keeps_its_grad_mode():
    loss = diamond(*make_leaves('cpu'))
    for _ in mt.backward_steps(loss):
        assert mt.is_grad_enabled()


def test_clear_errors():
    with pytest.raises(RuntimeError, match='not a scalar'):
        next(mt.backward_steps(mt.randn(2, 2, requires_grad=True) * 2))
    with pytest.raises(RuntimeError, match='does not require grad'):
        next(mt.backward_steps(mt.randn(2)))


UNARY = [lambda t: t.tanh(), lambda t: t.sigmoid(), lambda t: t * t, lambda t: t.exp() * 0.1,
         lambda t: t.sum(axis=0, keepdims=True) + t, lambda t: t.T.T]


@given(st.lists(st.sampled_from(range(len(UNARY))), min_size=1, max_size=6), st.integers(0, 2 ** 16))
def test_random_chains_match_backward(choices, seed):
    def run(stepped):
        mt.manual_seed(seed)
        a = mt.randn(3, 2, dtype='float64', requires_grad=True)
        b = mt.randn(3, 2, dtype='float64', requires_grad=True)
        t = a + b
        for c in choices:
            t = UNARY[c](t) + a  # a feeds every link: many paths back to it
        loss = t.sum()
        if stepped:
            assert len(list(mt.backward_steps(loss))) == len(ops_of(loss))
        else:
            loss.backward()
        return a.grad.numpy(), b.grad.numpy()

    for expected, got in zip(run(False), run(True)):
        np.testing.assert_array_equal(expected, got)


@pytest.mark.slow
def test_readme_seeing_gradients_examples_run(tmp_path, monkeypatch):
    """README's 'Seeing gradients' blocks run in order, as a reader would paste them
    (the optional matplotlib plot line is left out when matplotlib is absent)."""
    import importlib.util
    from readme import python_blocks
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks('Seeing gradients')
    assert len(blocks) >= 6
    namespace = {}
    for block in blocks:
        if importlib.util.find_spec('matplotlib') is None:
            block = '\n'.join(line for line in block.splitlines() if '.plot(' not in line)
        exec(compile(block, 'README.md', 'exec'), namespace)
    assert namespace['W'].grad is not None and 'weight' in str(namespace['flow'])
    assert 'self_attn' in namespace['saturation'].table()
    assert any(name.startswith(('block.', '.block')) for name in os.listdir(tmp_path))
