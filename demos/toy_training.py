"""What the lessons that check an article's claim by training share: one Adam loop, a test accuracy, one task.

    losses = fit(model, lambda step: (ids, targets), steps=200, lesson='qkv_roles')
    acc = accuracy(model(test_ids), test_targets)        # the fraction of argmax hits
    losses, acc = copy_previous(model, steps=200, lesson='qkv_roles')   # why_separate_qk's task

Each lesson draws its own batches (seeded by step, so two models compared see the same
data) and reads its own numbers back; fit only trains and stops on a NaN with the lesson's name.
"""
import microtensor as mt
from microtensor import optim

from .report import check_loss
from .why_separate_qk import copy_batch


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


def copy_previous(model, steps, lesson, n=8, B=32, vocab=10, seed=0, device='cpu'):
    """Train model (ids (B, n) -> logits (B, n, vocab)) so that position t outputs token t-1, on the why_separate_qk
    lesson's batches; returns (losses, accuracy on a test batch never trained on).  The model keeps the test
    batch's attention in its last_weights / last_scores."""
    def batch(step):
        ids = copy_batch(step, B, n, vocab, seed, device)
        return ids, ids[:, :-1]

    losses = fit(model, batch, steps, lesson, loss=lambda logits, targets: mt.cross_entropy(logits[:, 1:], targets))
    ids = copy_batch(10 ** 6, 256, n, vocab, seed, device)
    with mt.no_grad():
        return losses, accuracy(model(ids)[:, 1:], ids[:, :-1])


def accuracy(logits, targets):
    """Fraction of positions whose largest logit is the target."""
    return (logits.argmax(dim=-1) == targets).astype('float32').mean().item()


def tail_mean(losses, n=20):
    """Mean of the last n losses (a training curve's end, less noisy than its last point)."""
    return sum(losses[-n:]) / len(losses[-n:])
