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


def linear_warmup(step, warmup_steps, base_lr):
    """base_lr * (step + 1) / warmup_steps while step < warmup_steps, then base_lr.
    The first update uses base_lr / warmup_steps (not 0: an update with lr 0 is wasted)."""
    if warmup_steps < 0:
        raise ValueError(f"linear_warmup: warmup_steps must be >= 0, not {warmup_steps}")
    if step >= warmup_steps:
        return base_lr
    return base_lr * (step + 1) / warmup_steps


def cosine_decay(step, total_steps, base_lr, min_lr=0.0):
    """min_lr + (base_lr - min_lr) * (1 + cos(pi * step / total_steps)) / 2, and min_lr after total_steps."""
    if total_steps <= 0:
        raise ValueError(f"cosine_decay: total_steps must be > 0, not {total_steps}")
    progress = min(step / total_steps, 1.0)
    return min_lr + (base_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))


def warmup_cosine(step, warmup_steps, total_steps, base_lr, min_lr=0.0):
    """Linear warmup for warmup_steps, then cosine decay to min_lr at total_steps."""
    if not 0 <= warmup_steps < total_steps:
        raise ValueError(f"warmup_cosine: need 0 <= warmup_steps < total_steps, "
                         f"got warmup_steps={warmup_steps}, total_steps={total_steps}")
    if step < warmup_steps:
        return linear_warmup(step, warmup_steps, base_lr)
    return cosine_decay(step - warmup_steps, total_steps - warmup_steps, base_lr, min_lr)


class LRScheduler:
    """Sets optimizer.lr = lr_at(t) for update t; call scheduler.step() after each optimizer.step().

        scheduler = LRScheduler(opt, lambda t: warmup_cosine(t, 100, 2000, base_lr=3e-4))
    """

    def __init__(self, optimizer, lr_at):
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
        self.last_step = int(state['last_step'])
        self.optimizer.lr = self.lr_at(self.last_step)


class WarmupCosine(LRScheduler):
    """warmup_cosine from base_lr (default: the optimizer's lr when the scheduler is made) to min_lr.
    When resuming, make the scheduler before loading the optimizer's and its own state."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr=0.0, base_lr=None):
        base_lr = optimizer.lr if base_lr is None else base_lr
        warmup_cosine(0, warmup_steps, total_steps, base_lr, min_lr)  # check the arguments now
        super().__init__(optimizer, lambda t: warmup_cosine(t, warmup_steps, total_steps, base_lr, min_lr))
        self.base_lr = base_lr
