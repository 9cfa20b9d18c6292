"""Schedules over parameter groups: each group's learning rate follows the schedule from that
group's own base lr (group['initial_lr']), as in PyTorch, so a frozen group (lr 0) stays
frozen.  PyTorch's schedulers are the reference where one computes the same schedule:
LambdaLR for LRScheduler, LinearLR then CosineAnnealingLR for WarmupCosine."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import microtensor as mt
from microtensor import nn, optim

GROUP_LRS = st.lists(st.sampled_from([0.0, 1e-4, 0.01, 0.1, 0.5, 1.0, 3.0]) | st.floats(0, 2), min_size=1,
                     max_size=4)


def groups(lrs):
    return [{'params': [nn.Parameter(mt.ones(2))], 'lr': lr} for lr in lrs]


def torch_optimizer(lrs):
    torch = pytest.importorskip('torch', reason='PyTorch (the reference) is not installed')
    return torch, torch.optim.SGD([{'params': [torch.nn.Parameter(torch.ones(2))], 'lr': lr} for lr in lrs], lr=1.0)


def run_schedule(opt, scheduler, steps):
    """Each group's lr before each of `steps` updates."""
    seen = []
    for _ in range(steps):
        seen.append([group['lr'] for group in opt.param_groups])
        opt.step()
        scheduler.step()
    return seen


FACTORS = {'halving': lambda t: 0.5 ** t, 'warmup': lambda t: optim.linear_warmup(t, 4, 1.0),
           'step down': lambda t: 1.0 if t < 3 else 0.1}


@pytest.mark.slow
@settings(deadline=None)
@given(lrs=GROUP_LRS, name=st.sampled_from(sorted(FACTORS)))
def test_lr_scheduler_scales_each_groups_own_lr_as_lambda_lr(lrs, name):
    torch, reference = torch_optimizer(lrs)
    expected = run_schedule(reference, torch.optim.lr_scheduler.LambdaLR(reference, FACTORS[name]), 8)
    opt = optim.SGD(groups(lrs), lr=1.0)
    got = run_schedule(opt, optim.LRScheduler(opt, FACTORS[name]), 8)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    assert [g['initial_lr'] for g in opt.param_groups] == [float(lr) for lr in lrs]


@pytest.mark.slow
@settings(deadline=None)
@given(lrs=GROUP_LRS, warmup=st.sampled_from([0, 2, 3, 5]), after=st.integers(1, 12),
       min_lr=st.sampled_from([0.0, 1e-3, 0.05]))
def test_warmup_cosine_follows_linear_lr_then_cosine_annealing_lr_per_group(lrs, warmup, after, min_lr):
    lrs = [max(lr, min_lr) for lr in lrs]  # (a group below min_lr keeps its own floor here: the test below)
    torch, reference = torch_optimizer(lrs)
    total = warmup + after
    schedules = torch.optim.lr_scheduler
    cosine = schedules.CosineAnnealingLR(reference, T_max=after, eta_min=min_lr)
    if warmup:  # lr(t) = base * (t + 1) / warmup for t < warmup, then the cosine from base
        linear = schedules.LinearLR(reference, start_factor=1 / warmup, end_factor=1.0, total_iters=warmup - 1)
        cosine = schedules.SequentialLR(reference, [linear, cosine], milestones=[warmup])
    expected = run_schedule(reference, cosine, total + 1)   # up to the end of the cosine (torch's then rises again)
    opt = optim.SGD(groups(lrs), lr=1.0)
    got = run_schedule(opt, optim.WarmupCosine(opt, warmup, total, min_lr=min_lr), total + 1)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_a_frozen_group_stays_frozen_and_a_slow_group_stays_slow():
    frozen, slow, fast = (nn.Parameter(mt.ones(3)) for _ in range(3))
    opt = optim.AdamW([{'params': [frozen], 'lr': 0.0}, {'params': [slow], 'lr': 1e-3}, {'params': [fast]}], lr=1e-2)
    schedule = optim.WarmupCosine(opt, warmup_steps=2, total_steps=10)
    for _ in range(10):
        for p in (frozen, slow, fast):
            p.grad = mt.ones(3)
        opt.step()
        schedule.step()
        lrs = schedule.get_last_lr()
        assert lrs[0] == 0.0 and lrs[1] == pytest.approx(lrs[2] / 10)
    np.testing.assert_array_equal(frozen.numpy(), np.ones(3))
    assert (slow.numpy() < 1).all() and (fast.numpy() < slow.numpy()).all()
    assert schedule.base_lrs == [0.0, 1e-3, 1e-2]


def test_min_lr_never_lifts_a_group_above_its_own_base_lr():
    opt = optim.SGD(groups([0.0, 1e-4, 0.1]), lr=1.0)
    schedule = optim.WarmupCosine(opt, warmup_steps=2, total_steps=10, min_lr=1e-3)
    seen = [schedule.get_last_lr()]
    for _ in range(12):
        opt.step()
        schedule.step()
        seen.append(schedule.get_last_lr())
    assert all(lrs[0] == 0.0 and lrs[1] <= 1e-4 for lrs in seen)   # frozen stays frozen; slow never speeds up
    assert seen[-1][2] == pytest.approx(1e-3)                       # the others end at min_lr


def test_lists_give_one_value_per_group_and_must_match_the_groups():
    opt = optim.SGD(groups([0.1, 0.2]), lr=1.0)
    custom = optim.LRScheduler(opt, [lambda t: 1.0, lambda t: 0.5])
    assert custom.get_last_lr() == [0.1, 0.1]
    schedule = optim.WarmupCosine(opt, 0, 4, min_lr=[0.0, 0.05], base_lr=[1.0, 2.0])
    assert schedule.base_lrs == [1.0, 2.0] and schedule.get_last_lr() == [1.0, 2.0]
    for _ in range(4):
        schedule.step()
    assert schedule.get_last_lr() == pytest.approx([0.0, 0.05])
    with pytest.raises(ValueError, match=r"LRScheduler: lr_lambda is a list of 3, but the optimizer has 2 parameter "
                                         r"groups"):
        optim.LRScheduler(opt, [lambda t: 1.0] * 3)
    with pytest.raises(TypeError, match=r"LRScheduler: lr_lambda\[1\] must be a function of the step, not float 0.5"):
        optim.LRScheduler(opt, [lambda t: 1.0, 0.5])
    with pytest.raises(ValueError, match=r"WarmupCosine: min_lr\[0\] must be a finite number >= 0, not -1.0"):
        optim.WarmupCosine(opt, 0, 4, min_lr=[-1.0, 0.0])
    with pytest.raises(ValueError, match=r"LRScheduler: the lr of group 1 at step 0 must be a finite number >= 0, "
                                         r"not -2.0"):
        optim.LRScheduler(opt, [lambda t: 1.0, lambda t: -1.0])


def test_resuming_keeps_each_groups_base_lr():
    """The base lrs travel in the optimizer's state dict; a scheduler made after loading finds
    them there (as PyTorch's initial_lr), and a state saved without a scheduler still loads."""
    def build():
        return optim.Adam([{'params': [nn.Parameter(mt.ones(2))], 'lr': 0.0},
                           {'params': [nn.Parameter(mt.ones(2))], 'lr': 0.02}])
    opt = build()
    schedule = optim.WarmupCosine(opt, 2, 10)
    for _ in range(5):
        schedule.step()
    saved_opt, saved_schedule, expected = opt.state_dict(), schedule.state_dict(), schedule.get_last_lr()
    resumed = build()
    resumed.load_state_dict(saved_opt)          # the decayed lrs, and the base lrs beside them
    later = optim.WarmupCosine(resumed, 2, 10)  # made after loading: the bases are 0.0 and 0.02, not the decayed lrs
    later.load_state_dict(saved_schedule)
    assert later.get_last_lr() == expected and later.base_lrs == [0.0, 0.02]
    plain = build()
    fresh = build()
    optim.WarmupCosine(fresh, 2, 10)
    fresh.load_state_dict(plain.state_dict())  # saved with no scheduler: the groups keep their base lrs
    assert [g['initial_lr'] for g in fresh.param_groups] == [0.0, 0.02]
    bad = {**saved_opt, 'param_groups': [{**g, 'initial_lr': math.nan} for g in saved_opt['param_groups']]}
    with pytest.raises(ValueError, match='initial_lr must be a finite number >= 0, not nan'):
        build().load_state_dict(bad)
