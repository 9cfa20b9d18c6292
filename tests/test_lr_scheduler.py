"""optim.lr_scheduler: each of PyTorch's schedulers, by its names and arguments, sets the same
learning rates (and, for OneCycleLR, the same momenta) step after step as PyTorch's, for every
parameter group, and refuses what PyTorch refuses."""
import math

import pytest

import microtensor as mt

torch = pytest.importorskip('torch', reason="PyTorch's schedulers are the reference")


def lrs(lib, make_optimizer, make_scheduler, steps=40):
    """The first group's lr (and momentum or beta1) before each of `steps` updates, and every group's."""
    params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
    opt = make_optimizer(lib, [{'params': params[:1]}, {'params': params[1:], 'lr': 0.05}])
    sched = make_scheduler(lib, opt)
    seen = []
    for _ in range(steps):
        group = opt.param_groups[0]
        seen.append((tuple(g['lr'] for g in opt.param_groups), group.get('momentum', group.get('betas', (None,))[0])))
        opt.step()
        sched.step()
    return seen


def sgd(lib, groups):
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def adam(lib, groups):
    return lib.optim.Adam(groups, lr=0.1)


SCHEDULERS = {
    'LambdaLR': (sgd, lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.95 ** t)),
    'StepLR': (sgd, lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.5)),
    'LinearLR': (sgd, lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=10)),
    'LinearLR down': (sgd, lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, 1.0, 0.2, total_iters=25)),
    'CosineAnnealingLR': (sgd, lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=15, eta_min=0.001)),
    'SequentialLR': (adam, lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(opt, [
        lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, total_iters=5),
        lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=30)], milestones=[5])),
    'OneCycleLR sgd': (sgd, lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=40)),
    'OneCycleLR adam linear': (adam, lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.3, epochs=4, steps_per_epoch=10, pct_start=0.25, anneal_strategy='linear')),
    'OneCycleLR three phases': (sgd, lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.2, total_steps=40, three_phase=True, cycle_momentum=False)),
}


@pytest.mark.parametrize('name', SCHEDULERS)
def test_the_same_rates_as_pytorch(name):
    make_optimizer, make_scheduler = SCHEDULERS[name]
    ours, theirs = lrs(mt, make_optimizer, make_scheduler), lrs(torch, make_optimizer, make_scheduler)
    for t, ((our_lrs, our_m), (their_lrs, their_m)) in enumerate(zip(ours, theirs)):
        assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(our_lrs, their_lrs)), (t, ours, theirs)
        assert our_m == pytest.approx(their_m, rel=1e-9), (t, our_m, their_m)


def test_one_cycle_refuses_a_step_past_its_total_and_an_optimizer_without_momentum():
    opt = mt.optim.SGD([mt.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)
    sched = mt.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="OneCycleLR: stepped 4 times, past total_steps=3"):
        sched.step()
    with pytest.raises(ValueError, match="OneCycleLR: give total_steps, or epochs and steps_per_epoch"):
        mt.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0)


def test_sequential_needs_one_milestone_between_two_schedulers():
    opt = mt.optim.SGD([mt.zeros(2, requires_grad=True)], lr=0.1)
    first, second = (mt.optim.lr_scheduler.StepLR(opt, 3), mt.optim.lr_scheduler.StepLR(opt, 5))
    with pytest.raises(ValueError, match=r"SequentialLR: needs 1 increasing milestones for 2 schedulers, not \[\]"):
        mt.optim.lr_scheduler.SequentialLR(opt, [first, second], [])
