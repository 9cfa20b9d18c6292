"""Lesson: why attention divides by sqrt(d_k) -- softmax saturation as d_k grows.

The deep dive (§1.5): "Problem: when d_k is large, the variance of the dot
product explodes."  For q, k with independent unit-variance entries,

    Var(q . k) = sum_i Var(q_i) Var(k_i) = d_k,

"if d_k = 64 the variance is 64; d_k = 512, it is 512.  Dividing by sqrt(d_k) brings the
variance back to 1, however large d_k is."  And why that matters: "if the softmax's
input is too large (say 20 and -5) its output is close to one-hot ([0.999, 0.000...]):
the gradient is close to zero and the model cannot learn at all."  sqrt(d_k) is "an
automatic gain control".

Here, for each d_k, random unit-variance q, k, v go through
scaled_dot_product_attention twice: with the scale (1/sqrt(d_k)) and with scale=1.0.
For each we print Var(scores), the largest probability per row (1 = one-hot), the mean
p(1-p) (the diagonal of the softmax Jacobian diag(p) - p p^T), the entropy (log n
for uniform, 0 for one-hot), and how much of the gradient arriving at the weights p
gets through the softmax to the scores s, query row by query row:

    dL/ds = p * (dL/dp - sum(dL/dp * p))          passes = |dL/ds| / |dL/dp|  (per row)

and the share of rows that are cut off (passes < 1e-3).  Without the scale, p turns
one-hot as d_k grows, and more and more rows pass (almost) nothing: the softmax stops
passing gradient.  With it, every d_k looks like d_k = 4.

A second part (train=True) trains one attention head on a lookup task at a large d_k,
with and without the scale, by plain SGD (Adam divides each gradient by its own running
size, which hides part of the effect) from the article's starting point: q and k with
unit-variance entries.

    python -m demos.softmax_saturation --d-ks 8 512 --seq-len 64 --no-train
    python -m demos.softmax_saturation --full    # the training from 5 seeds
"""
import math

import microtensor as mt
from microtensor import nn, optim
from microtensor.i18n import N_, _
from transformer import Projection, scaled_dot_product_attention
from transformer.attention import attend  # scaled_dot_product_attention that also returns the scores
from transformer.probes import saturation_stats

from . import budget, claims
from .figures import outcome, series
from .report import (command_line, draw_lines, options_of, run_lesson, save_lines, save_plot, save_viewer, table,
                     window_means)

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '1.5'), ('attention', '2.3.1'), ('attention', '2.3.2'), ('attention', '2.3.3'),
            ('architecture', '2.4.1'), ('architecture', '2.10.2')]

D_KS = (4, 16, 64, 256, 1024)
ARTICLE_TABLE = ([1, 2, 3], [10, 20, 30], [100, 200, 300])  # the attention article §2.3.2
FULL = dict(seeds=5)  # --full
LEARNED, STUCK = 0.1, 0.5  # a final MSE below LEARNED has learned the lookup; one above STUCK all along has not


def saturation(d_k, scaled, B=32, n=16, seed=0, device='cpu', html=None):
    """Random q, k, v (B, n, d_k) ~ N(0, 1) through attention; a dict of the lesson's numbers.

    html: a name: the backward pass also goes to a BackpropViewer page, runs/<html>.html.
    """
    mt.manual_seed(seed)  # drawn on the CPU and moved: the same numbers on every device
    q, k, v = (mt.randn(B, n, d_k).to(device).requires_grad_() for _ in range(3))
    q.name, k.name, v.name = 'q', 'k', 'v'
    output, weights, scores = attend(q, k, v, scale=None if scaled else 1.0)
    weights.retain_grad()
    scores.retain_grad()
    loss = (output * mt.randn(*output.shape).to(device)).sum()  # a random upstream gradient dL/doutput
    if html:
        scores.name, weights.name = 's (scores)', 'p (weights)'
        save_viewer(html, loss, _("Attention, d_k = {d_k}, {scale}").format(
                        d_k=d_k, scale='scale 1/sqrt(d_k)' if scaled else _('no scale')),
                    group='softmax_saturation')
    else:
        loss.backward()
    stats = saturation_stats(scores, weights)
    passes = row_norms(scores.grad) / row_norms(weights.grad)  # (B, n): one ratio per query row
    return {'d_k': d_k, 'scaled': scaled, 'var': stats.score_var, 'max_p': stats.max_p, 'p1p': stats.mean_p1p,
            'entropy': stats.entropy, 'passes': passes.mean().item(),
            'cut_off': (passes < 1e-3).astype('float32').mean().item(), 'device': passes.device}


def row_norms(g):
    return (g * g).sum(axis=-1).sqrt()


def sweep(d_ks=D_KS, **sizes):
    """saturation() for every d_k, scaled and unscaled."""
    return [saturation(d_k, scaled, **sizes) for d_k in d_ks for scaled in (True, False)]


# ---------------------------------------------------------------------------- the training comparison
class Lookup(nn.Module):
    """One attention head: out = softmax(q W_Q (K W_K)^T * scale) V.

    The task: n keys and values (random vectors); the query is a noisy copy of one
    key; the output should be that key's value.  Learning means turning W_Q W_K^T into
    something that matches a key to itself.
    """

    def __init__(self, d, d_k, scaled):
        super().__init__()
        self.W_Q, self.W_K = Projection(d, d_k, bias=False), Projection(d, d_k, bias=False)
        for W in (self.W_Q, self.W_K):  # N(0, 1/d): q and k start with unit-variance entries
            nn.init.normal_(W.weight, 0.0, 1 / math.sqrt(d))
        self.scale = None if scaled else 1.0

    def forward(self, query, keys, values):
        output, _ = scaled_dot_product_attention(self.W_Q(query), self.W_K(keys), values, scale=self.scale)
        return output


def lookup_batch(B, n, d, noise=0.5, device='cpu'):
    keys, values = mt.randn(B, n, d).to(device), mt.randn(B, n, d).to(device)
    target = mt.randint(0, n, (B,)).to(device)
    rows = mt.arange(B, device=device)
    query = keys[rows, target].reshape(B, 1, d) + noise * mt.randn(B, 1, d).to(device)
    return query, keys, values, values[rows, target].reshape(B, 1, d)


def train_lookup(scaled, d=32, d_k=256, n=8, B=32, steps=150, lr=0.5, seed=0, device='cpu'):
    """Loss curve (mean squared error per step) of Lookup trained by SGD with or without the scale."""
    mt.manual_seed(seed)
    model = Lookup(d, d_k, scaled).to(device)
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        query, keys, values, target = lookup_batch(B, n, d, device=device)
        loss = ((model(query, keys, values) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def run(d_ks=D_KS, batch_size=32, seq_len=16, train=True, train_steps=150, train_d_k=256, seed=0, seeds=1, full=False,
        device='cpu', html=False):
    B, n = batch_size, seq_len
    seeds = FULL['seeds'] if full else seeds
    rows = sweep(d_ks, B=B, n=n, seed=seed, device=device)
    print(_("Var(q . k) = d_k (the deep dive §1.5, the attention article §2.3.1); what it does to the softmax "
            "(§2.3.2)."))
    print(_("q, k, v ~ N(0, 1): {B} x {n} queries, n = {n} keys each; uniform attention would have "
            "max p = 1/n = {p:.3f}, entropy = log {n} = {entropy:.2f}").format(B=B, n=n, p=1 / n, entropy=math.log(n)))
    print(table(['d_k', _('scale'), 'Var(scores)', 'max p', _('mean p(1-p)'), _('entropy'), _('passes'),
                 _('rows cut off')],
                [[r['d_k'], '1/sqrt(d_k)' if r['scaled'] else _('no scale'), r['var'], r['max_p'], r['p1p'],
                  r['entropy'],
                  r['passes'], f"{100 * r['cut_off']:.1f}%"] for r in rows]))
    print(_("passes = |dL/ds| / |dL/dp| per query row (mean); cut off = rows passing less than 1e-3.\n"
            "With the scale Var(scores) stays ~1 and every d_k behaves alike; without it Var(scores) ~ d_k,\n"
            "rows turn one-hot (max p -> 1, entropy -> 0), p(1-p) vanishes and so does the gradient."))
    at = {(r['d_k'], r['scaled']): r for r in rows}
    big, mid = max(d_ks), sorted(d_ks)[len(d_ks) // 2]
    look = N_('the table "d_k, scale, Var(scores), max p, mean p(1-p), entropy, passes, rows cut off"')
    claims.record('attention', '2.3.1', '点积的方差 = 维度 d_k', 'holds',
                  N_("Var(q·k) = {var} for d_k = {d_ks}"), look,
                  var=series([at[d, False]['var'] for d in d_ks], '.4g'), d_ks=', '.join(map(str, d_ks)))
    claims.record('attention', '2.3.2', 'Softmax 会输出一个极度尖锐的分布（One-Hot 形式）…这会导致梯度消失', 'holds',
                  N_("without the scale at d_k = {big} the largest weight averages {max_p:.3f}, mean p(1-p) is "
                     "{p1p:.2g} ({p1p_scaled:.2g} with it), and {cut:.1%} of the query rows pass less than 1e-3 of their "
                     "gradient to the scores ({cut_scaled:.0%} with the scale)"), look,
                  big=big, max_p=at[big, False]['max_p'],
                  p1p=at[big, False]['p1p'], p1p_scaled=at[big, True]['p1p'], cut=at[big, False]['cut_off'],
                  cut_scaled=at[big, True]['cut_off'])
    claims.record('attention', '2.3.3', '除以 √d_k，就是为了把点积的结果重新拉回到…方差为 1 的范围内', 'holds',
                  N_("Var(scores / √d_k) is {low:.2f}-{high:.2f} for d_k = {first} … {last}"), look,
                  low=min(at[d, True]['var'] for d in d_ks), high=max(at[d, True]['var'] for d in d_ks),
                  first=min(d_ks), last=big)
    claims.record('architecture', '2.4.1', '过 softmax … 输出几乎变成 one-hot', 'holds',
                  N_("without the scale the mean largest weight is {mid_p:.2f} at d_k = {mid} and {big_p:.2f} at "
                     "d_k = {big} (with it: {low:.2f}-{high:.2f} at every d_k)"), look, mid=mid, big=big,
                  mid_p=at[mid, False]['max_p'], big_p=at[big, False]['max_p'],
                  low=min(at[d, True]['max_p'] for d in d_ks), high=max(at[d, True]['max_p'] for d in d_ks))
    claims.record('deep_dive', '1.5', '点积的方差正比于 d_k！…除以 √d_k 就把方差归一化回 1', 'holds',
                  N_("Var(q·k) = {var:.4g} at d_k = {big}, Var(q·k / √d_k) = {low:.2f}-{high:.2f} at every d_k"),
                  look,
                  var=at[big, False]['var'], big=big, low=min(at[d, True]['var'] for d in d_ks),
                  high=max(at[d, True]['var'] for d in d_ks))
    table_232 = [(x, series(mt.softmax(mt.tensor(x, dtype='float64'), axis=-1).tolist(), '.4f'))
                 for x in ARTICLE_TABLE]
    print("\n" + _("The attention article's table (§2.3.2), recomputed:"))
    print(table([_('input'), _('softmax, 4 decimals')], [[str(x), p] for x, p in table_232]))
    claims.record('attention', '2.3.2', ['[1, 2, 3] [0.09, 0.24, 0.67] 平滑分布', '[10, 20, 30] [0.00, 0.00, 1.00]',
                                         '[100, 200, 300] [0.00, 0.00, 1.00] 完全 One-Hot'], 'holds',
                  N_("softmax({a}) = ({pa}), the printed row to 2 decimals; ({b}) and ({c}) are one-hot to 2 "
                     "decimals and beyond: ({pb}), ({pc})"), N_('the table "input, softmax, 4 decimals"'),
                  **{name: ', '.join(map(str, v)) if name in 'abc' else v for name, v in
                     (('a', table_232[0][0]), ('pa', table_232[0][1]), ('b', table_232[1][0]), ('pb', table_232[1][1]),
                      ('c', table_232[2][0]), ('pc', table_232[2][1]))})

    save_plot('softmax_saturation', lambda ax: draw_saturation(ax, rows, d_ks), _('Softmax saturation as d_k grows'))
    for scaled in (True, False) if html else ():  # the largest d_k, step by step, with and without the scale
        saturation(d_ks[-1], scaled, B=B, n=n, seed=seed, device=device,
                   html=f"softmax_saturation_{'scaled' if scaled else 'unscaled'}")

    curves = None
    if train:
        curves = {scaled: train_lookup(scaled, d_k=train_d_k, steps=train_steps, seed=seed, device=device)
                  for scaled in (True, False)}
        print("\n" + _("The architecture article's chain (§2.10.2) ends '→ 训不起来' (it does not train).  SGD "
                       "training one attention head,\nd_k = {d_k}: find the key that matches a noisy query and return "
                       "its value.  Mean squared error\n(returning the mean of the values scores about 1):").format(
                           d_k=train_d_k))
        print(table([_('steps'), _('with 1/sqrt(d_k)'), _('without')],
                    [[steps, a, b] for (steps, a), (_, b) in zip(window_means(curves[True], 5),
                                                                 window_means(curves[False], 5))]))
        runs = [curves] + [{scaled: train_lookup(scaled, d_k=train_d_k, steps=train_steps, seed=s, device=device)
                            for scaled in (True, False)} for s in range(seed + 1, seed + seeds)]
        half = len(curves[False]) // 2
        finals = [window_means(r[True], 5)[-1][1] for r in runs]
        stuck = [r[False][half:] for r in runs]
        if seeds > 1:
            print(table([_('seed'), _('with 1/sqrt(d_k): last fifth'), _('without: lowest in the second half')],
                        [[seed + i, f, min(u)] for i, (f, u) in enumerate(zip(finals, stuck))]))
        both = sum(f < LEARNED and min(u) > STUCK for f, u in zip(finals, stuck))
        claims.record('architecture', '2.10.2', 'd_k 大 → 点积方差大 → softmax 趋近 one-hot → 梯度含 p(1-p) 项趋近 0 → 训不起来',
                      'holds' if both == seeds else 'partly',
                      N_("each link measured: Var {var:.4g} at d_k = {big}, max p {max_p:.3f}, p(1-p) {p1p:.2g}; "
                         "and by SGD at d_k = {d_k} the unscaled head's mean squared error stays {low} over the "
                         "second half of training while the scaled one reaches {scaled} "
                         "(in {both} of {n} seeds the scaled head gets below {learned} and the unscaled one stays "
                         "above {stuck_at})"),
                      N_('both tables: "d_k, scale, Var(scores), ..." and "steps, with 1/sqrt(d_k), without"'),
                      seeds=claims.seeds_note(seeds), var=at[big, False]['var'], big=big, max_p=at[big, False]['max_p'],
                      p1p=at[big, False]['p1p'], d_k=train_d_k, both=both, n=seeds,
                      low=outcome([min(u) for u in stuck], '.2f', seeds, above=STUCK, bound_spec='g'),
                      scaled=outcome(finals, '.2g', seeds, below=LEARNED / 10, bound_spec='g'),
                      learned=LEARNED, stuck_at=STUCK)
        save_lines('softmax_saturation_training', {'scores / sqrt(d_k)': curves[True], _('no scale'): curves[False]},
                   _('step'), 'MSE', _('Lookup task by SGD, d_k = {d_k}').format(d_k=train_d_k))
    return {'rows': rows, 'curves': curves}



PASSES = N_("passes = |dL/dscores| / |dL/dp|, per query row (mean): the share of the gradient\n"
            "arriving at the weights p that the softmax lets through to the scores")


def draw_saturation(ax, rows, d_ks):
    """The plot: mean p(1-p) and passes against d_k, with and without the scale, and what passes means."""
    scales = {True: 'scores / sqrt(d_k)', False: _('no scale')}
    series = {f"{_(what)}, {scales[scaled]}":
              [r[key] for r in rows if r['scaled'] == scaled]
              for key, what in (('p1p', N_('mean p(1-p)')), ('passes', N_('passes'))) for scaled in (True, False)}
    draw_lines(ax, series, 'd_k', _('mean p(1-p); passes'), x=list(d_ks), logx=True)
    ax.text(0.5, -0.2, _(PASSES), transform=ax.transAxes, ha='center', va='top', fontsize=8.5)


def main(argv=None):
    options = options_of(run, d_ks=N_('the key widths d_k to compare'), batch_size=N_('sequences B per batch'),
                         seq_len=N_('sequence length n (queries and keys per sequence)'),
                         train=N_('also train one attention head with and without the scale'),
                         train_steps=N_('SGD steps of that training'), train_d_k=N_('d_k of that training'),
                         seed=N_('random seed'),
                         seeds=N_('seeds of that training (seed, seed + 1, ...) for the verdict'),
                         full=N_('that training from 5 seeds'),
                         html=N_("also write the largest d_k's backward pass, scaled and not, as viewer pages"))
    return run_lesson(run, command_line('softmax_saturation', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    n, T = args.batch_size, args.seq_len
    sweep = budget.Cost(0, 0, 0)
    for d_k in args.d_ks:  # q, k, v (n, T, d_k), their gradients, scores and weights (n, T, T); scaled and not
        sweep = sweep + 2 * budget.dense(6 * n * T * d_k + 6 * n * T * T, 6 * n * T * T * d_k)
    seeds = FULL['seeds'] if args.full else args.seeds
    training = (seeds * budget.transformer(32, 8, args.train_d_k, n_layers=1, heads=1, steps=args.train_steps)
                if args.train else budget.Cost(0, 0, 0))
    return budget.refuse({'--d-ks': ' '.join(map(str, args.d_ks)), '--batch-size': n, '--seq-len': T,
                          '--train-steps': args.train_steps, '--train-d-k': args.train_d_k, '--seeds': seeds},
                         sweep + 2 * training, args.device)


if __name__ == '__main__':
    main()
