"""`gpt`: train the tiny GPT twice from the same start, with the engine's ops and with the
learner's passing ones, and plot both losses.

Both runs start from the same weights (mt.manual_seed) and see the same batches, in float64.
With correct backward passes the two curves lie on top of each other (they differ only by
float64 rounding, below ROUNDING): your ops trained a Transformer.  Only exercises that pass
`check` are put in.  A small error can hide in the losses (a softmax gradient 1.0001 times
too large moves them by ~1e-6 in 60 steps), so each of your ops is also put in alone and
its gradients on the first batch are compared with the engine's: that says which is wrong.
"""
import contextlib
import collections

import numpy as np

import microtensor as mt
from microtensor import autograd, optim
from microtensor.i18n import N_, _
from transformer import GPT, next_token_loss
from .. import corpus
from ..report import save_plot, table
from ..train_gpt import Characters, batch_at
from . import compare
from .substitute import substituted

SIZE = dict(d_model=32, n_layers=2, n_heads=4, context=32, batch_size=8)
ROUNDING = 1e-9            # the largest loss difference float64 rounding explains over a run (it is ~1e-15)
GRADIENT_ROUNDING = 1e-10  # the same for one batch's gradients, relative, norm-wise (~1e-16)
LEFT_OUT = {'fail': N_('fail'), 'todo': N_('todo'), 'missing': N_('missing')}  # why an exercise is left out


def _model(chars, seed, size):
    mt.manual_seed(seed)
    model = GPT(len(chars.vocab), d_model=size['d_model'], n_layers=size['n_layers'], n_heads=size['n_heads'],
                max_len=size['context'])
    return model.to(dtype=mt.float64)


def _data():
    chars = Characters.of(corpus.POEM)
    return chars, np.array(chars.encode(corpus.POEM), dtype=np.int64)


def train(impls=None, steps=60, seed=0, lr=3e-3, size=SIZE):
    """Next-token losses of a GPT trained on the poem for `steps` steps, in float64, with the
    exercises in `impls` ({name: class or function}) in place of the engine's ops.
    Returns (losses, {op class name: how many of it one step's graph holds, for impls' classes})."""
    chars, data = _data()
    model = _model(chars, seed, size)
    opt = optim.AdamW(model.parameters(), lr=lr)
    losses, used = [], collections.Counter()
    with substituted(impls) if impls else contextlib.nullcontext():
        for step in range(steps):
            ids = mt.tensor(batch_at(data, step, size['batch_size'], size['context'], seed))
            loss = next_token_loss(model(ids), ids)
            if step == 0:
                yours = {impl for impl in (impls or {}).values() if isinstance(impl, type)}
                used.update(type(t.creator).__name__ for t in autograd.topological_order([loss])
                            if type(t.creator) in yours)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses, dict(used)


def first_gradients(impls=None, seed=0, size=SIZE):
    """The parameters' gradients (one flat array) after one backward on the first batch, from the same start."""
    chars, data = _data()
    model = _model(chars, seed, size)
    with substituted(impls) if impls else contextlib.nullcontext():
        ids = mt.tensor(batch_at(data, 0, size['batch_size'], size['context'], seed))
        next_token_loss(model(ids), ids).backward()
    return np.concatenate([np.zeros(p.numel()) if p.grad is None else p.grad.numpy().ravel()
                           for p in model.parameters()])


def wrong_gradients(impls, seed=0, size=SIZE):
    """{name: relative difference, norm-wise} of the exercises whose op, put in alone, changes the
    gradients of the first batch by more than rounding."""
    engine = first_gradients(None, seed, size)
    differences = {name: compare.relative_difference(first_gradients({name: impl}, seed, size), engine)
                   for name, impl in impls.items()}
    return {name: d for name, d in differences.items() if not d <= GRADIENT_ROUNDING}


def run(folder, impls, left_out, steps=60, seed=0, size=SIZE):
    """Train with the engine's ops and with `impls`, print the comparison and plot it into folder."""
    if left_out:
        print(_("left out (not passing check): {exercises}").format(
            exercises=', '.join(_("{exercise} ({why})").format(exercise=name, why=_(LEFT_OUT.get(why, why)))
                                for name, why in left_out.items())))
    if not impls:
        print(_("no exercise passes check yet: nothing of yours to train with (python -m demos.exercises check "
                "{folder})").format(folder=folder))
        return None
    print(_("training the tiny GPT ({layers} layers, d_model {d_model}, float64) for {steps} steps, twice: the "
            "engine's ops, then yours ({exercises})").format(layers=size['n_layers'], d_model=size['d_model'],
                                                            steps=steps, exercises=', '.join(impls)), flush=True)
    engine = train(None, steps, seed, size=size)[0]
    yours, used = train(impls, steps, seed, size=size)
    classes = {name: impl.__name__ for name, impl in impls.items() if isinstance(impl, type)}
    print(_("your ops in one step's graph: {ops}").format(
        ops=', '.join(f"{n} x{c}" for n, c in used.items()) or _("none")))
    unused = [name for name, cls in classes.items() if cls not in used]
    if unused:
        print(_("not in the tiny GPT's graph (substituted, but it never calls them): {exercises}").format(
            exercises=', '.join(unused)))
    if 'backward_loop' in impls:
        print(_("your topological_order ordered every backward pass"))
    difference = np.abs(np.array(engine) - np.array(yours))
    every = max(1, steps // 10)
    print(table([_('step'), _("engine's loss"), _('your loss'), _('|difference|')],
                [[s + 1, f"{engine[s]:.6f}", f"{yours[s]:.6f}", f"{difference[s]:.1e}"]
                 for s in range(0, steps, every)]))
    trained = [name for name, cls in classes.items() if cls in used] + ['backward_loop'] * ('backward_loop' in impls)
    wrong = wrong_gradients(impls, seed, size)
    largest = _("{difference} (at step {step})").format(difference=f"{difference.max():.2e}",
                                                         step=int(difference.argmax()) + 1)
    if difference.max() <= ROUNDING and not wrong:
        print(_("largest difference: {largest}, float64 rounding: your {exercises} trained the Transformer").format(
            largest=largest, exercises=', '.join(trained) or _('ops')))
    else:
        print(_("the curves diverge: the largest difference is {largest}, more than float64 rounding "
                "({rounding})").format(largest=largest, rounding=f"{ROUNDING:.0e}") if difference.max() > ROUNDING
              else _("the curves differ by {largest}: small, but not rounding").format(largest=largest))
        print(_("on the first batch, the gradients differ from the engine's with your {which}").format(
            which='; '.join(_("{exercise} alone (by {difference}, relative)").format(
                exercise=name, difference=f"{d:.1e}") for name, d in wrong.items()) if wrong else
            _("ops together only (each alone gives the engine's gradients)")))

    def draw(axes):
        left, right = axes
        left.plot(range(1, steps + 1), engine, label=_("the engine's ops"), linewidth=3, alpha=0.5)
        left.plot(range(1, steps + 1), yours, '--', label=_("your ops ({count})").format(count=len(impls)))
        left.set(xlabel=_('step'), ylabel=_('next-token loss (nats)'), title=_('training loss'))
        left.legend()
        right.semilogy(range(1, steps + 1), np.maximum(difference, 1e-18))
        right.set(xlabel=_('step'), ylabel=_('|difference| (0 drawn at 1e-18)'),
                  title=_("|your loss - the engine's|"))

    save_plot('gpt_loss', draw, folder=folder,
              title=_("The tiny GPT trained with your ops ({count} exercises) and with the engine's").format(
                  count=len(impls)), panels=2)
    return engine, yours
