"""microtensor.optim: each update equals the textbook formula; schedules; state; errors."""
import math

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn, optim

STEPS = 5


def hand_made_gradients(shape=(3, 4), steps=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) * (t + 1) for t in range(steps)]  # growing scale


def run(make_optimizer, p0, grads, dtype='float64'):
    """Apply `grads` one step at a time; return the parameter after each step."""
    p = nn.Parameter(mt.tensor(p0, dtype=dtype))
    opt = make_optimizer([p])
    history = []
    for g in grads:
        p.grad = mt.tensor(g, dtype=dtype)
        opt.step()
        history.append(p.numpy().copy())
    return history


# ---------------------------------------------------------------------- textbook references (float64 numpy)
def sgd_reference(p, grads, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
    out, velocity = [], np.zeros_like(p)
    for t, g in enumerate(grads):
        g = g + weight_decay * p
        velocity = g if t == 0 else momentum * velocity + g
        direction = g + momentum * velocity if nesterov else (velocity if momentum else g)
        p = p - lr * direction
        out.append(p)
    return out


def adam_reference(p, grads, lr, beta1, beta2, eps, l2=0.0, decoupled=0.0):
    """Kingma & Ba, Algorithm 1; `l2` adds weight_decay * p to g (Adam), `decoupled` shrinks p (AdamW)."""
    m, v, out = np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(grads, start=1):
        g = g + l2 * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g ** 2
        m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
        p = p - lr * decoupled * p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def assert_histories_close(got, expected, rtol):
    for t, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=f"after step {t + 1}")


# ---------------------------------------------------------------------- SGD
def test_sgd_momentum_and_nesterov_by_hand_on_a_scalar():
    """p0 = 1, lr = 0.1, momentum = 0.9, gradients 1, 2, 3, worked out on paper:
    momentum: b = 1, 2.9, 5.61 -> p = 0.9, 0.61, 0.049
    nesterov: update = g + 0.9 b = 1.9, 4.61, 8.049 -> p = 0.81, 0.349, -0.4559"""
    grads = [np.array(1.0), np.array(2.0), np.array(3.0)]
    got = run(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), 1.0, grads)
    np.testing.assert_allclose(got, [0.9, 0.61, 0.049], rtol=1e-12)
    got = run(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True), 1.0, grads)
    np.testing.assert_allclose(got, [0.81, 0.349, -0.4559], rtol=1e-12)


@pytest.mark.parametrize('kwargs', [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
                                    dict(momentum=0.5, weight_decay=0.1), dict(weight_decay=0.01)])
@pytest.mark.parametrize('dtype,rtol', [('float64', 1e-12), ('float32', 2e-5)])
def test_sgd_matches_the_formula_for_several_steps(kwargs, dtype, rtol):
    grads, p0 = hand_made_gradients(), np.random.default_rng(1).standard_normal((3, 4))
    got = run(lambda ps: optim.SGD(ps, lr=0.05, **kwargs), p0, grads, dtype)
    assert got[-1].dtype == np.dtype(dtype)
    assert_histories_close(got, sgd_reference(p0, grads, lr=0.05, **kwargs), rtol)


# ---------------------------------------------------------------------- Adam / AdamW
@pytest.mark.parametrize('dtype,rtol', [('float64', 1e-12), ('float32', 2e-5)])
def test_adam_matches_algorithm_1_with_bias_correction(dtype, rtol):
    grads, p0 = hand_made_gradients(), np.random.default_rng(1).standard_normal((3, 4))
    got = run(lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.95), eps=1e-6), p0, grads, dtype)
    assert_histories_close(got, adam_reference(p0, grads, 0.01, 0.8, 0.95, 1e-6), rtol)
    got = run(lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.1), p0, grads, dtype)
    assert_histories_close(got, adam_reference(p0, grads, 0.01, 0.9, 0.999, 1e-8, l2=0.1), rtol)


def test_adam_bias_correction_makes_the_first_step_lr_sized_whatever_the_gradient_scale():
    """Without correction the first step would be lr * (1-b1) / sqrt(1-b2) * sign(g) = 3.16 lr."""
    for scale in (1e-4, 1.0, 1e4):
        g = np.array([scale, -scale, 2 * scale])
        (p,) = run(lambda ps: optim.Adam(ps, lr=0.1, eps=0.0), np.zeros(3), [g])
        np.testing.assert_allclose(p, [-0.1, 0.1, -0.1], rtol=1e-12)


@pytest.mark.parametrize('dtype,rtol', [('float64', 1e-12), ('float32', 2e-5)])
def test_adamw_decay_is_decoupled(dtype, rtol):
    grads, p0 = hand_made_gradients(), np.random.default_rng(1).standard_normal((3, 4))
    got = run(lambda ps: optim.AdamW(ps, lr=0.01, weight_decay=0.5), p0, grads, dtype)
    assert_histories_close(got, adam_reference(p0, grads, 0.01, 0.9, 0.999, 1e-8, decoupled=0.5), rtol)
    # with zero gradients, AdamW only shrinks: p_t = p_0 * (1 - lr * wd)^t ...
    zeros = [np.zeros((3, 4))] * 3
    got = run(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.5), p0, zeros, dtype)
    np.testing.assert_allclose(got[-1], p0 * 0.95 ** 3, rtol=rtol)
    # ... while Adam's L2 term goes through the moments and moves each weight by about lr
    got = run(lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.5), p0, zeros[:1], dtype)
    np.testing.assert_allclose(got[0], p0 - 0.1 * np.sign(p0), rtol=1e-4)


def test_param_groups_carry_their_own_hyperparameters():
    w, b = nn.Parameter(mt.ones(2, dtype='float64')), nn.Parameter(mt.ones(2, dtype='float64'))
    opt = optim.AdamW([{'params': [w]}, {'params': b, 'weight_decay': 0.0}], lr=0.1, weight_decay=0.5)
    w.grad, b.grad = mt.zeros(2, dtype='float64'), mt.zeros(2, dtype='float64')
    opt.step()
    np.testing.assert_allclose(w.numpy(), [0.95, 0.95], rtol=1e-12)
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])
    opt.lr = 0.2  # schedules set every group's learning rate
    assert [g['lr'] for g in opt.param_groups] == [0.2, 0.2] and opt.lr == 0.2
    assert 'group 1: 1 parameters' in repr(opt) and 'weight_decay=0.0' in repr(opt)


# ---------------------------------------------------------------------- mechanics
def test_step_skips_parameters_without_grad_and_never_writes_gradients():
    a, b = nn.Parameter(mt.ones(3)), nn.Parameter(mt.ones(3))
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    g = np.broadcast_to(np.float32(2.0), (3,))  # a read-only broadcast view, as backward can produce
    a.grad = mt.Tensor._wrap(g)
    data_before = a.data
    opt.step()
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0, 1.0])
    assert id(b) not in opt.state and opt.state[id(a)]['step'] == 1
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    assert a.data is data_before  # written in place, as PyTorch's optimizers do
    opt.zero_grad()
    assert a.grad is None


def test_optimizer_trains_a_module_through_backward():
    model = nn.Linear(3, 1)
    x = mt.randn(16, 3)
    target = x @ mt.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    opt = optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(20):
        loss = ((model(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    assert model.weight.is_leaf and model.weight.requires_grad


def test_state_follows_the_parameters_device(device):
    model = nn.Linear(3, 2)
    opt = optim.Adam(model.parameters(), lr=0.01)
    model(mt.randn(4, 3)).sum().backward()
    opt.step()
    model.to(device)  # after the optimizer has state: it is moved at the next step
    model.zero_grad()
    model(mt.randn(4, 3, device=device)).sum().backward()
    opt.step()
    for p in model.parameters():
        state = opt.state[id(p)]
        assert p.device == device and state['step'] == 2
        assert mt.Tensor._wrap(state['exp_avg']).device == device
        assert mt.Tensor._wrap(state['exp_avg_sq']).device == device


@pytest.mark.parametrize('make', [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
                                  lambda ps: optim.Adam(ps, lr=0.01), lambda ps: optim.AdamW(ps, lr=0.01)])
def test_state_dict_round_trip_continues_identically(make):
    grads = hand_made_gradients(steps=6)
    p1, p2 = nn.Parameter(mt.ones(3, 4)), nn.Parameter(mt.ones(3, 4))
    first = make([p1])
    for g in grads[:3]:
        p1.grad = mt.tensor(g, dtype='float32')
        first.step()
    state = first.state_dict()
    assert list(state) == ['optimizer', 'state', 'param_groups'] and state['param_groups'][0]['params'] == [0]
    p2.data = p1.data.copy()
    second = make([p2])
    second.lr = 123.0  # overwritten by the loaded hyper-parameters
    second.load_state_dict(state)
    assert second.lr == first.lr
    for g in grads[3:]:
        for p, opt in ((p1, first), (p2, second)):
            p.grad = mt.tensor(g, dtype='float32')
            opt.step()
    assert p1.numpy().tobytes() == p2.numpy().tobytes()


@pytest.mark.parametrize('make', [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.AdamW(ps, lr=0.01)])
def test_a_state_dict_is_a_snapshot_that_later_steps_leave_alone(make):
    """The optimizers update their moment buffers in place; the state handed out is a copy."""
    p = nn.Parameter(mt.ones(3, 4))
    opt = make([p])
    first, *rest = hand_made_gradients(steps=4)
    p.grad = mt.tensor(first, dtype='float32')
    opt.step()
    saved = opt.state_dict()['state'][0]
    buffers = {name: value.numpy().copy() for name, value in saved.items() if name != 'step'}
    for g in rest:
        p.grad = mt.tensor(g, dtype='float32')
        opt.step()
    now = opt.state_dict()['state'][0]
    for name, value in buffers.items():
        assert np.array_equal(saved[name].numpy(), value)  # the snapshot did not move
        assert not np.array_equal(now[name].numpy(), value)  # while the optimizer's buffers did


def test_load_state_dict_rejects_a_different_model():
    opt = optim.Adam([nn.Parameter(mt.ones(2)), nn.Parameter(mt.ones(3))])
    for p in opt.param_groups[0]['params']:
        p.grad = mt.ones_like(p)
    opt.step()
    state = opt.state_dict()
    with pytest.raises(ValueError, match=r'saved groups hold \[2\] parameters, this optimizer\'s \[1\]'):
        optim.Adam([nn.Parameter(mt.ones(2))]).load_state_dict(state)
    other = optim.Adam([nn.Parameter(mt.ones(2)), nn.Parameter(mt.ones(4))])
    with pytest.raises(ValueError, match=r"'exp_avg' of parameter 1 has shape \(3,\), the parameter \(4,\)"):
        other.load_state_dict(state)
    assert other.state == {}  # nothing was loaded


def test_bad_arguments_give_clear_errors():
    p = nn.Parameter(mt.ones(2))
    with pytest.raises(ValueError, match='empty parameter list'):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match='appears more than once'):
        optim.Adam([p, nn.Parameter(mt.ones(1)), p])
    with pytest.raises(ValueError, match='appears more than once'):
        optim.Adam([{'params': [p]}, {'params': [p]}])
    with pytest.raises(ValueError, match='SGD: lr must be a finite number >= 0, not -0.1'):
        optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match='AdamW: lr must be a finite number >= 0, not nan'):
        optim.AdamW([p], lr=math.nan)
    opt = optim.Adam([p])
    with pytest.raises(ValueError, match='Adam: lr must be a finite number >= 0'):
        opt.lr = -1.0
    with pytest.raises(TypeError, match='iterable of tensors'):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match='not a leaf tensor'):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match='dtype int64'):
        optim.SGD([mt.zeros(2, dtype='int64')], lr=0.1)
    with pytest.raises(TypeError, match='parameter 0 is a list'):
        optim.SGD([[p]], lr=0.1)
    with pytest.raises(ValueError, match=r'Adam: betas\[1\] must be a finite number in \[0, 1\), not 1.0'):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match='nesterov=True needs a momentum'):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match=r'SGD: momentum must be a finite number in \[0, 1\)'):
        optim.SGD([p], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match='AdamW: weight_decay must be a finite number >= 0'):
        optim.AdamW([p], weight_decay=-1)
    p.grad = mt.ones(3)
    with pytest.raises(RuntimeError, match=r'gradient of shape \(3,\) on cpu for a parameter of shape \(2,\)'):
        optim.SGD([p], lr=0.1).step()


# ---------------------------------------------------------------------- schedules
def test_linear_warmup_at_its_key_steps():
    lr = [optim.linear_warmup(t, warmup_steps=4, base_lr=0.8) for t in range(6)]
    assert lr == pytest.approx([0.2, 0.4, 0.6, 0.8, 0.8, 0.8])
    assert optim.linear_warmup(0, 0, 0.8) == 0.8


def test_cosine_decay_at_its_key_steps():
    def f(t):
        return optim.cosine_decay(t, total_steps=100, base_lr=1.0, min_lr=0.1)
    assert f(0) == 1.0
    assert f(50) == pytest.approx(0.55)                          # halfway: the mean of base and min
    assert f(25) == pytest.approx(0.1 + 0.9 * (1 + math.cos(math.pi / 4)) / 2)
    assert f(100) == pytest.approx(0.1) and f(1000) == pytest.approx(0.1)
    values = [f(t) for t in range(101)]
    assert all(a >= b for a, b in zip(values, values[1:]))       # never rises


def test_warmup_cosine_joins_the_two():
    def f(t):
        return optim.warmup_cosine(t, warmup_steps=10, total_steps=110, base_lr=3e-4, min_lr=3e-5)
    assert f(0) == pytest.approx(3e-5) and f(4) == pytest.approx(1.5e-4)
    assert f(9) == pytest.approx(3e-4) and f(10) == pytest.approx(3e-4)   # peak at the end of warmup
    assert f(60) == pytest.approx((3e-4 + 3e-5) / 2)
    assert f(110) == pytest.approx(3e-5) and f(500) == pytest.approx(3e-5)
    with pytest.raises(ValueError, match='warmup_steps < total_steps'):
        optim.warmup_cosine(0, 10, 10, 1.0)
    with pytest.raises(ValueError, match='total_steps must be an integer >= 1'):
        optim.cosine_decay(0, 0, 1.0)


def test_scheduler_sets_the_optimizers_lr_each_step_and_resumes():
    opt = optim.SGD([nn.Parameter(mt.ones(1))], lr=0.5)
    scheduler = optim.WarmupCosine(opt, warmup_steps=2, total_steps=6, min_lr=0.0)
    seen = [opt.lr]
    for _ in range(7):
        scheduler.step()
        seen.append(opt.lr)
    expected = [optim.warmup_cosine(t, 2, 6, 0.5) for t in range(8)]
    assert seen == expected and seen[:3] == [0.25, 0.5, 0.5] and seen[-1] == 0.0
    resumed_opt = optim.SGD([nn.Parameter(mt.ones(1))], lr=0.5)
    resumed = optim.WarmupCosine(resumed_opt, warmup_steps=2, total_steps=6)
    resumed.load_state_dict({'last_step': 3})
    assert resumed_opt.lr == expected[3] and resumed.lr == expected[3] and resumed.base_lrs == [0.5]
    custom = optim.LRScheduler(opt, lambda t: 0.1 * 0.5 ** t)  # a factor of the group's base lr, 0.5
    custom.step()
    custom.step()
    assert opt.lr == pytest.approx(0.0125) and custom.state_dict() == {'last_step': 2}


# ---------------------------------------------------------------------- a step is an in-place change
@pytest.mark.parametrize('make', [lambda ps: optim.SGD(ps, lr=0.1), lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
                                  lambda ps: optim.Adam(ps), lambda ps: optim.AdamW(ps)],
                         ids=['SGD', 'momentum', 'Adam', 'AdamW'])
def test_a_step_between_two_backward_passes_is_refused(make):
    """backward(retain_graph=True); step(); backward() would mix the new weights with activations
    of the old ones: as in PyTorch it raises, through views of the weight too."""
    w = nn.Parameter(mt.tensor([[1.0, -2.0], [0.5, 3.0]], dtype='float64'))
    x = mt.tensor([[2.0, 1.0]], dtype='float64')
    opt = make([w])
    for loss_of in (lambda: ((x @ w) ** 2).sum(), lambda: ((x @ w.T) ** 2).sum()):  # w itself, then a view of it
        loss = loss_of()
        loss.backward(retain_graph=True)
        first = w.grad.numpy().copy()
        loss.backward(retain_graph=True)  # without a step in between: allowed, and it accumulates
        np.testing.assert_array_equal(w.grad.numpy(), 2 * first)
        version = w._version[0]
        opt.step()
        assert w._version[0] == version + 1
        with pytest.raises(RuntimeError, match='modified in place after the forward pass'):
            loss.backward()
        opt.zero_grad()


@pytest.mark.parametrize('make', [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
                                  lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
                                  lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.01),
                                  lambda ps: optim.AdamW(ps, lr=0.1)], ids=['SGD', 'nesterov', 'Adam', 'AdamW'])
def test_a_step_writes_into_the_parameters_own_memory(make):
    """As in PyTorch: mt.from_numpy keeps sharing its array, and state_dict()'s tensors show the new values."""
    array = np.ones((2, 3), dtype=np.float32)  # (out, in): x @ W^T
    model = nn.Linear(3, 2)
    with mt.no_grad():
        model.weight.copy_(array)
    host = np.zeros(3, dtype=np.float32)
    shared = mt.from_numpy(host).requires_grad_()  # a leaf over a numpy array's memory
    weights = model.state_dict()['weight']
    twin = nn.Linear(3, 2)  # the same steps, on copies: the reference values
    twin_memory = twin.weight.data
    twin.load_state_dict(model.state_dict())
    assert twin.weight.data is twin_memory  # loaded into the parameter's memory, as PyTorch's copy_
    twin_shared = nn.Parameter(mt.zeros(3))
    opt, twin_opt = make(list(model.parameters()) + [shared]), make(list(twin.parameters()) + [twin_shared])
    for _ in range(3):
        for m, s, o in ((model, shared, opt), (twin, twin_shared, twin_opt)):
            o.zero_grad()
            ((m(mt.tensor([[1.0, -2.0, 0.5]])) ** 2).sum() + (s * mt.tensor([1.0, 2.0, 3.0])).sum()).backward()
            o.step()
    assert shared.data is host and not np.array_equal(host, np.zeros(3))
    np.testing.assert_allclose(host, twin_shared.numpy(), rtol=1e-6)
    np.testing.assert_allclose(weights.numpy(), twin.weight.numpy(), rtol=1e-6)
    assert not np.array_equal(weights.numpy(), array)
