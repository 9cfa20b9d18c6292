"""Learning-rate schedules: the learning rate as a function of the step number.

    step t = 0, 1, 2, ...  counts the optimizer updates already taken, so lr(0)
    is used by the first update.

    linear_warmup:  lr rises linearly to base_lr over warmup_steps updates
                    (large early updates, made when Adam's moments are still poor
                    estimates, can throw a Transformer off course)
    cosine_decay:   lr falls from base_lr to min_lr along half a cosine
    warmup_cosine:  both, the usual recipe for Transformers

A scheduler applies a schedule to each of an optimizer's parameter groups, from that
group's own base lr (as in PyTorch: a group at lr 0 stays frozen):

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
    """Sets each parameter group's lr to its own base lr times lr_lambda(t) for update t,
    as PyTorch's LambdaLR; call scheduler.step() after each optimizer.step().

        scheduler = LRScheduler(opt, lambda t: linear_warmup(t, 100, base_lr=1.0))   # a factor in [0, 1]

    A group's base lr is the lr it had when its first scheduler was made, kept in the group
    as group['initial_lr'] (PyTorch's name), so that a frozen group (lr 0) stays frozen and a
    group at a tenth of the rate stays at a tenth.  lr_lambda may also be a list of functions,
    one per group.
    """

    def __init__(self, optimizer, lr_lambda):
        _check_optimizer(self, optimizer)
        self.lr_lambdas = _per_group(self, optimizer, 'lr_lambda', lr_lambda, _check_function)
        self._start(optimizer)

    def _start(self, optimizer):
        """Record each group's base lr (unless a scheduler already did) and set the lrs of step 0."""
        self.optimizer, self.last_step = optimizer, 0
        for group in optimizer.param_groups:
            group.setdefault('initial_lr', group['lr'])
        self._set_lrs()

    def lr_at(self, step, base_lr, i):
        """The lr of group i, whose base lr is base_lr, for update `step`."""
        return base_lr * self.lr_lambdas[i](step)

    def step(self):
        """Advance one step and set every group's learning rate for it."""
        self.last_step += 1
        self._set_lrs()

    def _set_lrs(self):
        name = type(self).__name__
        bases = [argcheck.number(group.get('initial_lr'), f"{name}: param_groups[{i}]", 'initial_lr', min=0)
                 for i, group in enumerate(self.optimizer.param_groups)]  # a base lr edited by hand, named
        lrs = [argcheck.number(self.lr_at(self.last_step, base, i), name,
                               f"the lr of group {i} at step {self.last_step}", min=0)
               for i, base in enumerate(bases)]  # every one checked before any is set
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group['lr'] = lr

    @property
    def base_lrs(self):
        """Each group's base lr (group['initial_lr'])."""
        return [group['initial_lr'] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        """Each group's current learning rate, as PyTorch's."""
        return [group['lr'] for group in self.optimizer.param_groups]

    @property
    def lr(self):
        """The first group's current learning rate."""
        return self.optimizer.lr

    def state_dict(self):
        """What a checkpoint needs to resume the schedule: the step count (the base lrs are
        saved with the optimizer's groups)."""
        return {'last_step': self.last_step}

    def load_state_dict(self, state):
        """Resume from state_dict(): restores the step and the learning rates."""
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict) or 'last_step' not in state:
            raise TypeError(f"{where}: expected the dict made by state_dict() ({{'last_step': n}}), "
                            f"not {argcheck.describe(state)}")
        last_step = argcheck.integer(state['last_step'], where, 'last_step', min=0)
        previous, self.last_step = self.last_step, last_step
        try:
            self._set_lrs()
        except (TypeError, ValueError):
            self.last_step = previous
            raise


class WarmupCosine(LRScheduler):
    """warmup_cosine for every group, from that group's base lr down to min_lr, as PyTorch's
    LinearLR then CosineAnnealingLR (whose eta_min is min_lr).

    base_lr=None: each group's own lr when the scheduler is made (group['initial_lr']); a number
    (or a list, one per group) sets the groups' base lrs instead.  min_lr: one floor for every
    group, or a list, one per group; never above a group's base lr, so a group at lr 0 stays
    frozen (PyTorch's eta_min would lift it to min_lr).  When resuming, make the scheduler before loading the
    optimizer's and its own state.
    """

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr=0.0, base_lr=None):
        _check_optimizer(self, optimizer)
        warmup_cosine(0, warmup_steps, total_steps, 0.0)  # the step counts checked now
        self.warmup_steps, self.total_steps = int(warmup_steps), int(total_steps)
        self.min_lrs = _per_group(self, optimizer, 'min_lr', min_lr, _check_lr)
        if base_lr is not None:
            for group, lr in zip(optimizer.param_groups, _per_group(self, optimizer, 'base_lr', base_lr, _check_lr)):
                group['initial_lr'] = lr
        self._start(optimizer)

    def lr_at(self, step, base_lr, i):
        return warmup_cosine(step, self.warmup_steps, self.total_steps, base_lr, min(self.min_lrs[i], base_lr))


def _check_function(value, where, name):
    if not callable(value):
        argcheck.fail(TypeError, where, f"{name} must be a function of the step, not {argcheck.describe(value)}")
    return value


def _check_lr(value, where, name):
    return argcheck.number(value, where, name, min=0)


def _per_group(scheduler, optimizer, name, value, check):
    """value for every group: one value for all, or a list / tuple with one per group; each
    checked by check(value, where, name)."""
    where, n = type(scheduler).__name__, len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{where}: {name} is a list of {len(value)}, but the optimizer has {n} parameter "
                             f"group{'s' * (n != 1)} (give one value, or one per group)")
        return [check(v, where, f"{name}[{i}]") for i, v in enumerate(value)]
    return [check(value, where, name)] * n


def _check_optimizer(scheduler, optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(scheduler).__name__}: optimizer must be an Optimizer, "
                        f"not {argcheck.describe(optimizer)}")
