"""What the lessons that check an article's claim by training share: one Adam loop and a test accuracy.

    losses = fit(model, lambda step: (ids, targets), steps=200, lesson='qkv_roles')
    acc = accuracy(model(test_ids), test_targets)        # the fraction of argmax hits

Each lesson draws its own batches (seeded by step, so two models compared see the same
data) and reads its own numbers back; fit only trains and stops on a NaN with the lesson's name.
"""
import microtensor as mt
from microtensor import optim

from .report import check_loss


def fit(model, batch, steps, lesson, lr=3e-3, loss=mt.cross_entropy):
    """Adam on loss(model(inputs), targets) for (inputs, targets) = batch(step); returns the losses."""
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        inputs, targets = batch(step)
        value = loss(model(inputs), targets)
        opt.zero_grad()
        value.backward()
        opt.step()
        losses.append(check_loss(value.item(), step + 1, lesson))
    return losses


def accuracy(logits, targets):
    """Fraction of positions whose largest logit is the target."""
    return (logits.argmax(axis=-1) == targets).astype('float32').mean().item()


def tail_mean(losses, n=20):
    """Mean of the last n losses (a training curve's end, less noisy than its last point)."""
    return sum(losses[-n:]) / len(losses[-n:])
