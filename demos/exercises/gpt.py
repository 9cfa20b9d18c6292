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
from transformer import GPT, next_token_loss
from .. import corpus
from ..report import save_plot, table
from ..train_gpt import Characters, batch_at
from . import compare
from .substitute import substituted

SIZE = dict(d_model=32, n_layers=2, n_heads=4, context=32, batch_size=8)
ROUNDING = 1e-9            # the largest loss difference float64 rounding explains over a run (it is ~1e-15)
GRADIENT_ROUNDING = 1e-10  # the same for one batch's gradients, relative, norm-wise (~1e-16)


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
        print("left out (not passing check): " + ', '.join(f"{name} ({why})" for name, why in left_out.items()))
    if not impls:
        print("no exercise passes check yet: nothing of yours to train with (python -m demos.exercises check "
              f"{folder})")
        return None
    print(f"training the tiny GPT ({size['n_layers']} layers, d_model {size['d_model']}, float64) for {steps} "
          f"steps, twice: the engine's ops, then yours ({', '.join(impls)})", flush=True)
    engine, _ = train(None, steps, seed, size=size)
    yours, used = train(impls, steps, seed, size=size)
    classes = {name: impl.__name__ for name, impl in impls.items() if isinstance(impl, type)}
    print("your ops in one step's graph: " + (', '.join(f"{n} x{c}" for n, c in used.items()) or "none"))
    unused = [name for name, cls in classes.items() if cls not in used]
    if unused:
        print(f"not in the tiny GPT's graph (substituted, but it never calls them): {', '.join(unused)}")
    if 'backward_loop' in impls:
        print("your topological_order ordered every backward pass")
    difference = np.abs(np.array(engine) - np.array(yours))
    every = max(1, steps // 10)
    print(table(['step', "engine's loss", 'your loss', '|difference|'],
                [[s + 1, f"{engine[s]:.6f}", f"{yours[s]:.6f}", f"{difference[s]:.1e}"]
                 for s in range(0, steps, every)]))
    trained = [name for name, cls in classes.items() if cls in used] + ['backward_loop'] * ('backward_loop' in impls)
    wrong = wrong_gradients(impls, seed, size)
    largest = f"{difference.max():.2e} (at step {int(difference.argmax()) + 1})"
    if difference.max() <= ROUNDING and not wrong:
        print(f"largest difference: {largest}, float64 rounding: your {', '.join(trained) or 'ops'} trained the "
              "Transformer")
    else:
        print(f"the curves diverge: the largest difference is {largest}, more than float64 rounding "
              f"({ROUNDING:.0e})" if difference.max() > ROUNDING else
              f"the curves differ by {largest}: small, but not rounding")
        print("on the first batch, the gradients differ from the engine's with your "
              + ('; '.join(f"{name} alone (by {d:.1e}, relative)" for name, d in wrong.items()) if wrong else
                 "ops together only (each alone gives the engine's gradients)"))

    def draw(axes):
        left, right = axes
        left.plot(range(1, steps + 1), engine, label="the engine's ops", linewidth=3, alpha=0.5)
        left.plot(range(1, steps + 1), yours, '--', label=f"your ops ({len(impls)})")
        left.set(xlabel='step', ylabel='next-token loss (nats)', title='training loss')
        left.legend()
        right.semilogy(range(1, steps + 1), np.maximum(difference, 1e-18))
        right.set(xlabel='step', ylabel='|difference| (0 drawn at 1e-18)', title="|your loss - the engine's|")

    save_plot('gpt_loss', draw, folder=folder,
              title=f"The tiny GPT trained with your ops ({len(impls)} exercises) and with the engine's",
              panels=2)
    return engine, yours
