"""`gpt`: train the tiny GPT twice from the same start, with the engine's ops and with the
learner's passing ones, and plot both losses.

Both runs start from the same weights (mt.manual_seed) and see the same batches, in float64.
With correct backward passes the two curves lie on top of each other (they differ only by
rounding, ~1e-12): your ops trained a Transformer.  A wrong backward would pull its curve
away, so only exercises that pass `check` are put in.
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
from .substitute import substituted

SIZE = dict(d_model=32, n_layers=2, n_heads=4, context=32, batch_size=8)


def train(impls=None, steps=60, seed=0, lr=3e-3, size=SIZE):
    """Next-token losses of a GPT trained on the poem for `steps` steps, in float64, with the
    exercises in `impls` ({name: class or function}) in place of the engine's ops.
    Returns (losses, {op class name: how many of it one step's graph holds, for impls' classes})."""
    chars = Characters.of(corpus.POEM)
    data = np.array(chars.encode(corpus.POEM), dtype=np.int64)
    mt.manual_seed(seed)
    model = GPT(len(chars.vocab), d_model=size['d_model'], n_layers=size['n_layers'], n_heads=size['n_heads'],
                max_len=size['context'])
    model.to(dtype=mt.float64)
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
    print(f"largest difference: {difference.max():.2e}"
          + ("  (rounding: your backward passes trained the Transformer)" if difference.max() < 1e-6 else ""))

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
