"""Lesson: which scale for the scores -- 1/sqrt(d_k), 1/d_k, none, or learned.

The attention-atom article (§2.3.3) rates the choices: "with the scale (sqrt(d_k)):
stability high, convergence fast, performance good; no scale: low, slow, poor; wrong
scale (d_k): extremely low, extremely slow, extremely poor", and (§2.3.4) imagines a
learnable scale alpha, softmax(alpha Q K^T): "papers tried it, limited gains, more
training complexity".

1. For unit-variance q, k, Var(q . k) = d_k, so the scaled score q . k * s has variance
   d_k s^2:  s = 1/sqrt(d_k) keeps it 1 for every d_k;  s = 1 (none) lets it grow like
   d_k (the softmax turns one-hot);  s = 1/d_k shrinks it like 1/d_k (the softmax turns
   uniform: every key gets 1/T, attention stops choosing).  Measured here with random
   q, k for growing d_k: Var(scores) and the mean largest weight per row (1/T = uniform,
   1 = one-hot).  MultiHeadAttention(scale='learned') starts at 1/sqrt(d_k).
2. A short training run of each: one attention layer (d_k = 64) learns to copy the
   previous token (demos/why_separate_qk.py's task), Adam, same seed and batches, with
   the four scales; the learned one's final value is printed next to 1/sqrt(d_k).
   What it shows at this size (seed 0): every scale learns the task; 1/d_k starts
   slowest (uniform attention, and its scores move d_k times less per step than
   1/sqrt(d_k)'s) yet ends with the lowest loss; no scale is the least stable (its loss
   spikes back up late); the learned scale stays near 1/sqrt(d_k) and trains like it
   ("limited gains", as the article says).  The article's "1/d_k: extremely slow,
   extremely poor" does not reproduce on a task this small: only the slow start does.

    python -m demos.scale_variants           # a few seconds
    python -m demos.scale_variants --full    # longer training, larger d_k
"""
import math

import microtensor as mt
from transformer.attention import attend

from .report import command_line, options_of, run_lesson, save_lines, table, window_means
from .why_separate_qk import train_copy_previous

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.3.3'), ('attention', '2.3.4'), ('architecture', '2.4.2')]

D_KS = (16, 64, 256, 1024)
SCALES = {'1/sqrt(d_k)': lambda d_k: 1 / math.sqrt(d_k), '1/d_k': lambda d_k: 1 / d_k, 'none': lambda d_k: 1.0}


def score_statistics(d_ks=D_KS, n=32, T=16, seed=0, device='cpu'):
    """Rows (scale name, d_k, Var(scores), mean max weight) for q, k, v ~ N(0, 1) of shape (n, T, d_k)."""
    rows = []
    for name, scale_of in SCALES.items():
        for d_k in d_ks:
            mt.manual_seed(seed)
            q, k, v = (mt.randn(n, T, d_k).to(device) for _ in range(3))
            with mt.no_grad():
                _, weights, scores = attend(q, k, v, scale=scale_of(d_k))
            rows.append((name, d_k, scores.var().item(), weights.max(axis=-1).mean().item()))
    return rows


def training(steps=200, d_model=64, seed=0, device='cpu'):
    """{scale name: train_copy_previous result} for the three fixed scales and 'learned' (one head: d_k = d_model)."""
    options = {'1/sqrt(d_k)': None, '1/d_k': 1 / d_model, 'none': 1.0, 'learned': 'learned'}
    return {name: train_copy_previous(steps, d_model=d_model, seed=seed, device=device, lesson='scale_variants',
                                      scale=scale)
            for name, scale in options.items()}


def run(steps=200, d_model=64, d_ks=D_KS, seed=0, full=False, device='cpu'):
    d_ks = tuple(d_ks) + (4096,) if full else tuple(d_ks)
    steps = 1000 if full else steps
    T = 16
    rows = score_statistics(d_ks, T=T, seed=seed, device=device)
    print(f"1. q, k ~ N(0, 1), {T} keys per query: the scaled scores' variance and the mean largest weight")
    print(f"   (uniform: {1 / T:.4f}, one-hot: 1)")
    print(table(['scale', 'd_k', 'Var(scores)', 'expected d_k * s^2', 'mean max weight'],
                [[name, d_k, var, d_k * SCALES[name](d_k) ** 2, max_p] for name, d_k, var, max_p in rows]))
    save_lines('scale_variants', {name: [p for n, _, _, p in rows if n == name] for name in SCALES},
               'd_k', 'mean largest attention weight', 'The scale decides how sharp attention can be at init',
               x=list(d_ks), logx=True, logy=False)

    results = training(steps, d_model, seed, device)
    print(f"\n2. Copy the previous token, one head with d_k = {d_model}, {steps} Adam steps, four scales:")
    summary = {name: {'first': sum(r['losses'][:20]) / 20, 'last': sum(r['losses'][-20:]) / 20,
                      'worst_late': max(r['losses'][len(r['losses']) // 2:])} for name, r in results.items()}
    print(table(['scale', 'loss, first 20 steps', 'loss, last 20 steps', 'worst loss, 2nd half', 'test accuracy',
                 'weight on t-1'],
                [[name, summary[name]['first'], summary[name]['last'], summary[name]['worst_late'],
                  f"{100 * r['accuracy']:.1f}%", r['back']] for name, r in results.items()]))
    slowest = max(summary, key=lambda name: summary[name]['first'])
    shakiest = max(summary, key=lambda name: summary[name]['worst_late'])
    accuracies = ', '.join(f"{name} {100 * r['accuracy']:.0f}%" for name, r in results.items())
    print(f"slowest start: {slowest}; largest loss spike in the second half: {shakiest}; test accuracy: {accuracies}")
    learned = results['learned']['model'].attention.log_scale.exp().mean().item()
    print(f"learned scale after training: {learned:.4f}  (started at 1/sqrt(d_k) = {1 / math.sqrt(d_model):.4f}, "
          f"x {learned * math.sqrt(d_model):.2f})")
    curves = {name: r['losses'] for name, r in results.items()}
    print(table(['steps'] + list(curves),
                [[w] + [means[i][1] for means in (window_means(c, 5) for c in curves.values())]
                 for i, (w, _) in enumerate(window_means(curves['none'], 5))]))
    save_lines('scale_variants_training', curves, 'step', 'cross-entropy',
               f'Copy the previous token, d_k = {d_model}: four scales')
    return {'statistics': rows, 'training': results, 'summary': summary, 'learned_scale': learned,
            'device': results['learned']['model'].attention.log_scale.device}


def main(argv=None):
    options = options_of(run, steps='Adam steps of each training', d_model='width of the trained head (its d_k)',
                         d_ks='the key widths d_k of part 1', seed='random seed',
                         full='1000 steps; also d_k = 4096 in part 1')
    return run_lesson(run, command_line('scale_variants', __doc__, options, argv))


if __name__ == '__main__':
    main()
