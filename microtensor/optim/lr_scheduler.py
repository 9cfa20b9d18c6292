"""optim.lr_scheduler: PyTorch's schedulers by PyTorch's names and arguments, each a formula of the
step t (the updates taken so far) over LRScheduler (schedules.py), which applies it to every
parameter group from the group's base lr (group['initial_lr']):

    LambdaLR            base_lr * lr_lambda(t)
    StepLR              base_lr * gamma ** (t // step_size)
    LinearLR            base_lr * (start_factor + (end_factor - start_factor) * min(t, total_iters) / total_iters)
    CosineAnnealingLR   eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2
    SequentialLR        schedulers[k] from its own step 0 at milestone k
    OneCycleLR          up from max_lr / div_factor to max_lr, then down to max_lr / div_factor / final_div_factor
                        (momentum, or Adam's beta1, the other way round)

    scheduler = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000)
    for step in range(1000):
        ...; opt.step(); scheduler.step()
"""
import bisect
import math

from .. import argcheck
from .schedules import LRScheduler, _check_optimizer


class LambdaLR(LRScheduler):
    """base_lr * lr_lambda(t), per group (lr_lambda: a function of t, or one per group): LRScheduler."""


class StepLR(LRScheduler):
    """base_lr * gamma ** (t // step_size): the lr divided by 1/gamma every step_size updates."""

    def __init__(self, optimizer, step_size, gamma=0.1):
        _check_optimizer(self, optimizer)
        self.step_size = argcheck.integer(step_size, 'StepLR', 'step_size', min=1)
        self.gamma = argcheck.number(gamma, 'StepLR', 'gamma', min=0)
        self._start(optimizer)

    def lr_at(self, step, base_lr, i):
        return base_lr * self.gamma ** (step // self.step_size)


class LinearLR(LRScheduler):
    """base_lr times a factor going linearly from start_factor to end_factor over total_iters updates,
    then staying there (a warmup: LinearLR(opt, start_factor=0.01, total_iters=100))."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        _check_optimizer(self, optimizer)
        self.start_factor = argcheck.number(start_factor, 'LinearLR', 'start_factor', min=0, max=1, min_open=True)
        self.end_factor = argcheck.number(end_factor, 'LinearLR', 'end_factor', min=0, max=1)
        self.total_iters = argcheck.integer(total_iters, 'LinearLR', 'total_iters', min=0)
        self._start(optimizer)

    def lr_at(self, step, base_lr, i):
        done = min(step, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class CosineAnnealingLR(LRScheduler):
    """eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2: half a cosine from base_lr down to
    eta_min over T_max updates (and, as in PyTorch, back up along the cosine after that)."""

    def __init__(self, optimizer, T_max, eta_min=0.0):
        _check_optimizer(self, optimizer)
        self.T_max = argcheck.integer(T_max, 'CosineAnnealingLR', 'T_max', min=1)
        self.eta_min = argcheck.number(eta_min, 'CosineAnnealingLR', 'eta_min', min=0)
        self._start(optimizer)

    def lr_at(self, step, base_lr, i):
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * step / self.T_max)) / 2


class SequentialLR(LRScheduler):
    """schedulers[0] until milestones[0], then schedulers[1] from its own step 0, and so on (a warmup
    then a decay: SequentialLR(opt, [LinearLR(opt, 0.01, total_iters=100), CosineAnnealingLR(opt, 900)], [100]))."""

    def __init__(self, optimizer, schedulers, milestones):
        _check_optimizer(self, optimizer)
        schedulers, milestones = list(schedulers), list(milestones)
        if not schedulers or any(not isinstance(s, LRScheduler) or s.optimizer is not optimizer for s in schedulers):
            raise ValueError("SequentialLR: schedulers must be a list of schedulers of this same optimizer")
        milestones = [argcheck.integer(m, 'SequentialLR', f'milestones[{i}]', min=0) for i, m in enumerate(milestones)]
        if len(milestones) != len(schedulers) - 1 or milestones != sorted(milestones):
            raise ValueError(f"SequentialLR: needs {len(schedulers) - 1} increasing milestones for {len(schedulers)} "
                             f"schedulers, not {milestones}")
        self.schedulers, self.milestones = schedulers, milestones
        self._start(optimizer)

    def lr_at(self, step, base_lr, i):
        k = bisect.bisect_right(self.milestones, step)
        return self.schedulers[k].lr_at(step - (self.milestones[k - 1] if k else 0), base_lr, i)


class OneCycleLR(LRScheduler):
    """The one-cycle policy, as PyTorch's: the lr rises from max_lr / div_factor to max_lr over the
    first pct_start of total_steps, then falls to max_lr / div_factor / final_div_factor (three_phase:
    back to the start first, then down), along half cosines (anneal_strategy='cos') or lines
    ('linear').  With cycle_momentum, the momentum (SGD's, or Adam's beta1) goes the other way,
    from max_momentum down to base_momentum and back.  Stepping past total_steps is an error."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy='cos', cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False):
        _check_optimizer(self, optimizer)
        where = 'OneCycleLR'
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError(f"{where}: give total_steps, or epochs and steps_per_epoch")
            total_steps = argcheck.integer(epochs, where, 'epochs', min=1) * argcheck.integer(
                steps_per_epoch, where, 'steps_per_epoch', min=1)
        self.total_steps = argcheck.integer(total_steps, where, 'total_steps', min=1)
        pct = argcheck.number(pct_start, where, 'pct_start', min=0, max=1)
        self.anneal = {'cos': _cosine, 'linear': _linear}.get(anneal_strategy)
        if self.anneal is None:
            raise ValueError(f"{where}: anneal_strategy must be 'cos' or 'linear', not {anneal_strategy!r}")
        up = pct * self.total_steps - 1
        # (end step, lr from, lr to, momentum from, momentum to): 'initial', 'max', 'min' and the momenta
        self.phases = [(up, 'initial', 'max', 'max', 'base'), (2 * up, 'max', 'initial', 'base', 'max'),
                       (self.total_steps - 1, 'initial', 'min', 'max', 'max')] if three_phase else \
            [(up, 'initial', 'max', 'max', 'base'), (self.total_steps - 1, 'max', 'min', 'base', 'max')]
        div = argcheck.number(div_factor, where, 'div_factor', min=0, min_open=True)
        final_div = argcheck.number(final_div_factor, where, 'final_div_factor', min=0, min_open=True)
        max_lrs = _groups_values(optimizer, max_lr, where, 'max_lr')
        self.momentum = argcheck.boolean(cycle_momentum, where, 'cycle_momentum')
        momenta = (_groups_values(optimizer, base_momentum, where, 'base_momentum'),
                   _groups_values(optimizer, max_momentum, where, 'max_momentum'))
        self.levels = []
        for group, top, base_m, max_m in zip(optimizer.param_groups, max_lrs, *momenta):
            group['initial_lr'] = top / div
            self.levels.append(dict(initial=top / div, max=top, min=top / div / final_div))
            if self.momentum:
                if 'momentum' not in group and 'betas' not in group:
                    raise ValueError(f"{where}: cycle_momentum needs an optimizer with momentum or betas "
                                     f"(SGD, Adam), not {type(optimizer).__name__}; pass cycle_momentum=False")
                self.levels[-1].update(base_momentum=base_m, max_momentum=max_m)
        self._start(optimizer)

    def _position(self, step):
        """(phase, fraction of it done) at update `step`."""
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps={self.total_steps}")
        start = 0.0
        for k, phase in enumerate(self.phases):
            if step <= phase[0] or k == len(self.phases) - 1:  # (the lr after the last update stays at the end,
                return phase, min((step - start) / (phase[0] - start), 1.0)  # where PyTorch's goes past it)
            start = phase[0]

    def lr_at(self, step, base_lr, i):
        (_, lr_from, lr_to, _, _), done = self._position(step)
        return self.anneal(self.levels[i][lr_from], self.levels[i][lr_to], done)

    def _set_lrs(self):
        super()._set_lrs()
        if not self.momentum:
            return
        (_, _, _, m_from, m_to), done = self._position(self.last_step)
        for group, level in zip(self.optimizer.param_groups, self.levels):
            m = self.anneal(level[f'{m_from}_momentum'], level[f'{m_to}_momentum'], done)
            if 'betas' in group:
                group['betas'] = (m,) + tuple(group['betas'][1:])
            else:
                group['momentum'] = m


def _cosine(start, end, done):
    return end + (start - end) / 2 * (math.cos(math.pi * done) + 1)


def _linear(start, end, done):
    return (end - start) * done + start


def _groups_values(optimizer, value, where, name):
    """One number per parameter group: `value` for all, or a list of one per group."""
    n = len(optimizer.param_groups)
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(values) != n:
        raise ValueError(f"{where}: {name} has {len(values)} values for {n} parameter groups")
    return [argcheck.number(v, where, name, min=0) for v in values]
