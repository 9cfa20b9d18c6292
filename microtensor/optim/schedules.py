"""Learning-rate schedules: the learning rate as a function of the step number.

    step t = 0, 1, 2, ...  counts the optimizer updates already taken, so lr(0)
    is used by the first update.

    linear_warmup:  lr rises linearly to base_lr over warmup_steps updates
                    (large early updates, made when Adam's moments are still poor
                    estimates, can throw a Transformer off course)
    cosine_decay:   lr falls from base_lr to min_lr along half a cosine
    warmup_cosine:  both, the usual recipe for Transformers

A scheduler applies a schedule to an optimizer:

    scheduler = optim.WarmupCosine(opt, warmup_steps=100, total_steps=2000)
    for step in range(2000):
        ...; opt.step(); scheduler.step()
"""
import math

from .. import argcheck
from .optimizer import Optimizer


def linear_warmup(step, warmup_steps, base_lr):
    """base_lr * (step + 1) / warmup_steps while step < warmup_steps, then base_lr.
    The first update uses base_lr / warmup_steps (not 0: an update with lr 0 is wasted)."""
    step = argcheck.integer(step, 'linear_warmup', 'step', min=0)
    warmup_steps = argcheck.integer(warmup_steps, 'linear_warmup', 'warmup_steps', min=0)
    base_lr = argcheck.number(base_lr, 'linear_warmup', 'base_lr', min=0)
    if step >= warmup_steps:
        return base_lr
    return base_lr * ((step + 1) / warmup_steps)  # the ratio first: no overflow for a huge base_lr


def cosine_decay(step, total_steps, base_lr, min_lr=0.0):
    """min_lr + (base_lr - min_lr) * (1 + cos(pi * step / total_steps)) / 2, and min_lr after total_steps."""
    step = argcheck.integer(step, 'cosine_decay', 'step', min=0)
    total_steps = argcheck.integer(total_steps, 'cosine_decay', 'total_steps', min=1)
    base_lr = argcheck.number(base_lr, 'cosine_decay', 'base_lr', min=0)
    min_lr = argcheck.number(min_lr, 'cosine_decay', 'min_lr', min=0)
    progress = min(step / total_steps, 1.0)
    return min_lr + (base_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))


def warmup_cosine(step, warmup_steps, total_steps, base_lr, min_lr=0.0):
    """Linear warmup for warmup_steps, then cosine decay to min_lr at total_steps."""
    warmup_steps = argcheck.integer(warmup_steps, 'warmup_cosine', 'warmup_steps', min=0)
    total_steps = argcheck.integer(total_steps, 'warmup_cosine', 'total_steps', min=1)
    if not warmup_steps < total_steps:
        raise ValueError(f"warmup_cosine: need 0 <= warmup_steps < total_steps, "
                         f"got warmup_steps={warmup_steps}, total_steps={total_steps}")
    step = argcheck.integer(step, 'warmup_cosine', 'step', min=0)
    if step < warmup_steps:
        return linear_warmup(step, warmup_steps, base_lr)
    return cosine_decay(step - warmup_steps, total_steps - warmup_steps, base_lr, min_lr)


class LRScheduler:
    """Sets optimizer.lr = lr_at(t) for update t; call scheduler.step() after each optimizer.step().

        scheduler = LRScheduler(opt, lambda t: warmup_cosine(t, 100, 2000, base_lr=3e-4))
    """

    def __init__(self, optimizer, lr_at):
        _check_optimizer(self, optimizer)
        if not callable(lr_at):
            raise TypeError(f"{type(self).__name__}: lr_at must be a function of the step, "
                            f"not {argcheck.describe(lr_at)}")
        self.optimizer, self.lr_at = optimizer, lr_at
        self.last_step = 0
        optimizer.lr = lr_at(0)

    def step(self):
        """Advance one step and set the optimizer's learning rate for it."""
        self.last_step += 1
        self.optimizer.lr = self.lr_at(self.last_step)

    @property
    def lr(self):
        """The optimizer's current learning rate."""
        return self.optimizer.lr

    def state_dict(self):
        """What a checkpoint needs to resume the schedule: the step count."""
        return {'last_step': self.last_step}

    def load_state_dict(self, state):
        """Resume from state_dict(): restores the step and the learning rate."""
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict) or 'last_step' not in state:
            raise TypeError(f"{where}: expected the dict made by state_dict() ({{'last_step': n}}), "
                            f"not {argcheck.describe(state)}")
        last_step = argcheck.integer(state['last_step'], where, 'last_step', min=0)
        self.optimizer.lr = self.lr_at(last_step)
        self.last_step = last_step


class WarmupCosine(LRScheduler):
    """warmup_cosine from base_lr (default: the optimizer's lr when the scheduler is made) to min_lr.
    When resuming, make the scheduler before loading the optimizer's and its own state."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr=0.0, base_lr=None):
        _check_optimizer(self, optimizer)
        base_lr = optimizer.lr if base_lr is None else base_lr
        warmup_cosine(0, warmup_steps, total_steps, base_lr, min_lr)  # check the arguments now
        super().__init__(optimizer, lambda t: warmup_cosine(t, warmup_steps, total_steps, base_lr, min_lr))
        self.base_lr = base_lr


def _check_optimizer(scheduler, optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(scheduler).__name__}: optimizer must be an Optimizer, "
                        f"not {argcheck.describe(optimizer)}")
