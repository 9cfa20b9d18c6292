"""Lesson: attention maps of trained models -- reversal is an anti-diagonal.

The attention-atom article (§2.6) draws an "attention heat map" and asks whether we can
read the model's understanding from it.  Here are two real ones, from models trained in
a few seconds:

1. demos/train_reverse.py's encoder-decoder learns to reverse digit sequences.  Its
   cross-attention (decoder query t over encoder key s) must fetch source position
   L - 1 - t to write output t, so a head that does the job shows an anti-diagonal.
   Printed per head: the weight on the anti-diagonal (mean over test sequences and t),
   and for each output position the source position with the highest weight.
2. demos/train_gpt.py's character GPT, on a line of its poem: for each head, where the
   highest weight of each query character goes (itself, the previous character, further
   back); the head with the largest previous-character share is drawn and tabulated.

Plots: runs/attention_maps_reverse.png (one panel per head), runs/attention_maps_gpt.png.

    python -m demos.attention_maps            # ~10 s: two short trainings
    python -m demos.attention_maps --full     # longer trainings
"""
import os
import random

import microtensor as mt
from transformer import shift_right

from . import train_gpt, train_reverse
from .report import RUNS, command_line, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.6'), ('deep_dive', '2.6'), ('deep_dive', '8.3')]


# ---------------------------------------------------------------------------- 1. reversal
def reverse_maps(steps=150, length=6, n_test=64, seed=0, device='cpu'):
    """Train the reversal model; its cross-attention on unseen sequences: {'maps' (h, L, L) means over the
    test batch as lists, 'anti_diagonal' per head, 'argmax' [head][t], 'token_accuracy', 'device'}."""
    model, _, seen = train_reverse.train(steps=steps, length=length, seed=seed, log_every=steps + 1, device=device)
    test = train_reverse.random_sequences(random.Random(seed + 1), n_test, length, exclude=seen)
    src = mt.tensor(test, device=device)
    tgt = mt.tensor([s[::-1] for s in test], device=device)
    model.eval()
    with mt.no_grad():
        logits = model(src, shift_right(tgt, train_reverse.BOS))
    cross = model.decoder.layers[-1].cross_attn.last_weights.mean(axis=0)     # (h, L_tgt, L_src)
    maps = cross.tolist()
    L = length
    return {'maps': maps,
            'anti_diagonal': [sum(head[t][L - 1 - t] for t in range(L)) / L for head in maps],
            'argmax': [[max(range(L), key=lambda s: head[t][s]) for t in range(L)] for head in maps],
            'token_accuracy': (logits.argmax(axis=-1) == tgt).astype('float32').mean().item(), 'device': logits.device}


# ---------------------------------------------------------------------------- 2. the char GPT
def gpt_maps(steps=150, line='Twinkle, twinkle, little star,', seed=0, device='cpu', **options):
    """Train the char GPT briefly; self-attention of every head on `line`:
    {'weights' [layer][head] (T, T) lists, 'heads' rows of per-head statistics, 'chars'}."""
    result = train_gpt.train(out=os.path.join(RUNS, 'attention_maps_gpt'), steps=steps, seed=seed,
                             log_every=steps, eval_every=steps, ckpt_every=steps, device=device, **options)
    model, chars = result['model'], result['chars']
    ids = mt.tensor([chars.encode(line)], device=device)
    model.eval()
    with mt.no_grad():
        model(ids)
    weights = [layer.self_attn.last_weights[0].tolist() for layer in model.layers]    # [layer][head][t][s]
    heads = []
    for l, layer in enumerate(weights):
        for h, A in enumerate(layer):
            back = [t - max(range(t + 1), key=lambda s: A[t][s]) for t in range(1, len(line))]  # 0 = itself
            heads.append({'layer': l, 'head': h, 'self': back.count(0) / len(back),
                          'previous': back.count(1) / len(back), 'mean_back': sum(back) / len(back)})
    return {'weights': weights, 'heads': heads, 'line': line, 'final_loss': sum(result['losses'][-10:]) / 10}


def run(steps=150, gpt_steps=150, seed=0, full=False, device='cpu'):
    steps, gpt_steps = (600, 1000) if full else (steps, gpt_steps)
    rev = reverse_maps(steps, seed=seed, device=device)
    L = len(rev['argmax'][0])
    print(f"1. Reversing {L} digits ({steps} training steps, token accuracy {100 * rev['token_accuracy']:.0f}% "
          f"on unseen sequences): cross-attention, decoder position t over source position s")
    print(table(['head', 'weight on the anti-diagonal s = L-1-t', 'uniform would be'],
                [[h, a, 1 / L] for h, a in enumerate(rev['anti_diagonal'])]))
    print("highest-weight source position per output position (mean map over the test sequences):")
    print(table(['output t', 'reversal wants'] + [f"head {h}" for h in range(len(rev['maps']))],
                [[t, L - 1 - t] + [rev['argmax'][h][t] for h in range(len(rev['maps']))] for t in range(L)]))
    plot_heads('attention_maps_reverse', rev['maps'], 'source position s', 'output position t',
               'Reversal: cross-attention per head (anti-diagonal = s = L-1-t)')

    gpt = gpt_maps(gpt_steps, seed=seed, device=device, context=32, batch_size=8)
    line = gpt['line']
    print(f"\n2. The char GPT ({gpt_steps} steps, final loss {gpt['final_loss']:.2f}) on {line!r}: where each "
          "query character's highest weight goes")
    print(table(['layer', 'head', 'on itself', 'on the previous char', 'mean distance back'],
                [[r['layer'], r['head'], f"{100 * r['self']:.0f}%", f"{100 * r['previous']:.0f}%", r['mean_back']]
                 for r in gpt['heads']]))
    best = max(gpt['heads'], key=lambda r: r['previous'])
    A = gpt['weights'][best['layer']][best['head']]
    print(f"layer {best['layer']} head {best['head']} (the largest previous-char share), query by query:")
    shown = range(1, min(len(line), 16))
    print(table(['query', 'argmax key', 'distance back', 'weight'],
                [[repr(line[t]), repr(line[s]), t - s, A[t][s]]
                 for t in shown for s in [max(range(t + 1), key=lambda s: A[t][s])]]))
    plot_heads('attention_maps_gpt', [A], 'key', 'query', f"char GPT, layer {best['layer']} head {best['head']}",
               labels=list(line))
    return {'reverse': rev, 'gpt': gpt, 'gpt_head': best, 'device': rev['device']}


def plot_heads(name, maps, xlabel, ylabel, title, labels=None):
    """Heat maps of (T_q, T_k) weight matrices side by side, one panel per head, one colour scale;
    labels: tick labels of a single panel's positions (e.g. its characters)."""
    def draw(ax):
        T_q, T_k = len(maps[0]), len(maps[0][0])
        gap = [float('nan')]
        rows = [sum(([*m[t]] + gap for m in maps), [])[:-1] for t in range(T_q)]   # panels joined by a blank column
        image = ax.imshow(rows, cmap='viridis', vmin=0, vmax=1)
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
        if len(maps) > 1:
            ax.set_xticks([h * (T_k + 1) + (T_k - 1) / 2 for h in range(len(maps))],
                          [f"head {h}" for h in range(len(maps))])
        if labels is not None:
            ax.set_xticks(range(len(labels)), labels, fontsize=7)
            ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set(xlabel=xlabel, ylabel=ylabel)
    return save_plot(name, draw, title)


def main(argv=None):
    options = options_of(run, steps='training steps of the reversal model', gpt_steps='training steps of the char GPT',
                         seed='random seed', full='train longer (600 and 1000 steps)')
    return run_lesson(run, command_line('attention_maps', __doc__, options, argv))


if __name__ == '__main__':
    main()
