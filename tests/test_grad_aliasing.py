"""Every .grad is its leaf's own writable array, as in PyTorch: the grad= given to backward and
the grad_outputs given to mt.grad are copied, two leaves never share one array, and zero_()
works on each.  Also clip_grad_norm_ with NaN and Inf gradients, against PyTorch."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import nn

GRAPHS = {  # name: the output of leaves x, w (same shape); each sends a gradient to both
    'add': lambda x, w: x + w,                 # Add passes g itself to both inputs
    'sub': lambda x, w: x - w,
    'broadcast sum': lambda x, w: (x + w).sum() * mt.ones(3),   # read-only broadcast views
    'mul': lambda x, w: x * w,
    'reshape': lambda x, w: (x + w).reshape(3, 1),               # a view of g
    'leaf itself': lambda x, w: x,
    'used twice': lambda x, w: x + x + w,
}


def _leaves():
    return (mt.tensor([1.0, 2.0, 3.0], requires_grad=True), mt.tensor([4.0, 5.0, 6.0], requires_grad=True))


def _check_own(tensors, others):
    """Each .grad is writable, and zeroing it changes no other .grad (nor the arrays in `others`)."""
    for i, t in enumerate(tensors):
        values = [u.grad.numpy().copy() for u in tensors]
        outside = [a.copy() for a in others]
        t.grad.zero_()
        assert not t.grad.numpy().any()
        for u, v in zip(tensors, values):
            if u is not t:
                np.testing.assert_array_equal(u.grad.numpy(), v)
        for a, v in zip(others, outside):
            np.testing.assert_array_equal(a, v)
        t.grad.data[...] = values[i]


@given(name=st.sampled_from(sorted(GRAPHS)), given_as=st.sampled_from(['tensor', 'array', 'list']))
def test_backward_with_grad_gives_each_leaf_its_own_writable_gradient(name, given_as):
    x, w = _leaves()
    y = GRAPHS[name](x, w)
    g = mt.tensor(np.arange(1.0, 1.0 + y.numel()).reshape(y.shape), dtype=y.dtype)
    given = {'tensor': g, 'array': g.numpy().copy(), 'list': g.tolist()}[given_as]
    y.backward(given)
    leaves = [t for t in (x, w) if t.grad is not None]
    expected = [t.grad.numpy().copy() for t in leaves]
    _check_own(leaves, [g.data])
    g.data[...] = -7  # changing the given gradient later changes no .grad
    for t, e in zip(leaves, expected):
        np.testing.assert_array_equal(t.grad.numpy(), e)


@given(name=st.sampled_from(sorted(GRAPHS)))
def test_mt_grad_returns_arrays_of_their_own(name):
    x, w = _leaves()
    y = GRAPHS[name](x, w)
    g = mt.ones(*y.shape)
    gx, gw = mt.grad(y, [x, w], grad_outputs=g, allow_unused=True)
    results = [r for r in (gx, gw) if r is not None]
    copies = [r.numpy().copy() for r in results]
    g.data[...] = 5
    for r, c in zip(results, copies):
        np.testing.assert_array_equal(r.numpy(), c)
        r.zero_()  # writable
    if gx is not None and gw is not None:
        assert not np.shares_memory(gx.data, gw.data)


def test_x_plus_w_then_zeroing_one_gradient_leaves_the_other():
    x, w = _leaves()
    (x + w).backward(mt.ones(3))
    x.grad.zero_()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0, 1.0])


def test_accumulated_and_retained_gradients_are_their_own_too():
    x, w = _leaves()
    h = (x * 1).retain_grad()
    y = h + w
    y.backward(mt.ones(3), retain_graph=True)
    y.backward(mt.ones(3))
    for t in (x, w, h):
        np.testing.assert_array_equal(t.grad.numpy(), [2.0, 2.0, 2.0])
    assert not np.shares_memory(h.grad.data, w.grad.data) and not np.shares_memory(x.grad.data, h.grad.data)
    h.grad.zero_()
    assert w.grad.numpy().all() and x.grad.numpy().all()


def test_a_hooks_gradient_is_copied_into_grad():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g * 3) or kept[-1])
    (x * 1).sum().backward()
    kept[0].data[...] = 0  # the hook's own tensor: changing it does not change x.grad
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


# ---------------------------------------------------------------------- clip_grad_norm_ and non-finite gradients
@pytest.mark.parametrize('bad', [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize('norm_type', [2.0, 1.0, math.inf])
def test_clip_grad_norm_with_a_non_finite_gradient_does_what_pytorch_does(bad, norm_type):
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for clip_grad_norm_')
    values = [[1.0, bad], [3.0, 4.0]]
    ours = [nn.Parameter(mt.zeros(2)) for _ in values]
    theirs = [torch.nn.Parameter(torch.zeros(2)) for _ in values]
    for p, q, v in zip(ours, theirs, values):
        p.grad, q.grad = mt.tensor(v), torch.tensor(v)
    total = nn.utils.clip_grad_norm_(ours, 1.0, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=norm_type)
    np.testing.assert_equal(total, float(expected))
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


@pytest.mark.parametrize('bad', [math.inf, math.nan])
def test_clip_grad_norm_error_if_nonfinite_raises_before_changing_anything(bad):
    p = nn.Parameter(mt.zeros(2))
    p.grad = mt.tensor([1.0, bad])
    with pytest.raises(RuntimeError, match=r"clip_grad_norm_: the total norm of order 2.0 of the gradients is "
                                           r"(inf|nan).*error_if_nonfinite=False"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, bad])
    with pytest.raises(TypeError, match="error_if_nonfinite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite='yes')


def test_clip_grad_norm_of_finite_gradients_matches_pytorch():
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for clip_grad_norm_')
    p, q = nn.Parameter(mt.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    p.grad, q.grad = mt.tensor([3.0, 4.0]), torch.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True) == pytest.approx(
        float(torch.nn.utils.clip_grad_norm_([q], 1.0)))
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
