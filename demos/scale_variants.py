"""Lesson: which scale for the scores -- 1/sqrt(d_k), 1/d_k, no scale, or learned.

The attention article (§2.3.3) rates the choices in a table: "有缩放 (sqrt(d_k)): 高 快 好"
(stability high, convergence fast, performance good), "无缩放: 低 慢 差", "错误缩放 (d_k):
极低 极慢 极差" (extremely low, extremely slow, extremely poor), and (§2.3.4) imagines a
learnable scale alpha, softmax(alpha Q K^T): "效果提升有限，但增加了训练复杂性" (limited gains,
more training complexity).

1. For unit-variance q, k, Var(q . k) = d_k, so the scaled score q . k * s has variance
   d_k s^2:  s = 1/sqrt(d_k) keeps it 1 for every d_k;  s = 1 (no scale) lets it grow like
   d_k (the softmax turns one-hot);  s = 1/d_k shrinks it like 1/d_k (the softmax turns
   uniform: each of the n keys gets 1/n, attention stops choosing).  Measured here with
   random q, k for growing d_k: Var(scores) and the mean largest weight per row (1/n =
   uniform, 1 = one-hot).  MultiHeadAttention(scale='learned') starts at 1/sqrt(d_k).
2. A short training run of each: one attention layer (d_k = 64) learns to copy the
   previous token (demos/why_separate_qk.py's task), Adam, same seed and batches, with
   the four scales; the learned one's final value is printed next to 1/sqrt(d_k).
   What it shows at this size (seed 0): every scale learns the task; 1/d_k starts
   slowest (uniform attention, and its scores move d_k times less per step than
   1/sqrt(d_k)'s) yet ends with the lowest loss; no scale is the least stable (its loss
   spikes back up late); the learned scale stays near 1/sqrt(d_k) and trains like it
   ("limited gains", as the article says).
3. The same by plain SGD.  Adam divides each gradient by its own running size, which
   hides most of 1/d_k's smaller gradients; SGD does not.  With SGD 1/d_k needs about 3x
   the steps of 1/sqrt(d_k) and its attention stays blurred (weight ~0.67 on t - 1 after
   200 steps, against 0.98); with Adam 1.7x.  So the table's "extremely slow" holds
   with SGD, much less with Adam, and "extremely poor" not at all on a task this small.

    python -m demos.scale_variants           # the defaults (run time: end of --help)
    python -m demos.scale_variants --full    # longer training, larger d_k
"""
import math

import microtensor as mt
from microtensor.i18n import N_, _
from transformer.attention import attend

from . import budget, claims
from .figures import outcome
from .report import command_line, options_of, run_lesson, save_lines, table, window_means
from .why_separate_qk import train_copy_previous

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.3.3'), ('attention', '2.3.4'), ('architecture', '2.4.2')]

D_KS = (16, 64, 256, 1024)
# the scales by name (English: the keys of the results; shown translated)
SCALES = {'1/sqrt(d_k)': lambda d_k: 1 / math.sqrt(d_k), '1/d_k': lambda d_k: 1 / d_k, N_('no scale'): lambda d_k: 1.0}
OPTIMIZERS = {'Adam': ('adam', 3e-3), 'SGD': ('sgd', 0.5)}  # name: (train_copy_previous's optimizer, lr)
LEARNED = 0.1  # a run has learned the task once its loss is below this (chance: ln 10 = 2.3)


def score_statistics(d_ks=D_KS, B=32, n=16, seed=0, device='cpu'):
    """Rows (scale name, d_k, Var(scores), mean max weight) for q, k, v ~ N(0, 1) of shape (B, n, d_k)."""
    rows = []
    for name, scale_of in SCALES.items():
        for d_k in d_ks:
            mt.manual_seed(seed)
            q, k, v = (mt.randn(B, n, d_k).to(device) for _ in range(3))
            with mt.no_grad():
                _, weights, scores = attend(q, k, v, scale=scale_of(d_k))
            rows.append((name, d_k, scores.var(correction=0).item(), weights.amax(dim=-1).mean().item()))
    return rows


def training(steps=200, d_model=64, seed=0, device='cpu', optimizer='Adam'):
    """{scale name: train_copy_previous result} for the three fixed scales and 'learned' (one head: d_k = d_model),
    trained by OPTIMIZERS[optimizer]."""
    options = {'1/sqrt(d_k)': None, '1/d_k': 1 / d_model, 'no scale': 1.0, N_('learned'): 'learned'}
    kind, lr = OPTIMIZERS[optimizer]
    return {name: train_copy_previous(steps, d_model=d_model, seed=seed, device=device, lesson='scale_variants',
                                      optimizer=kind, lr=lr, scale=scale)
            for name, scale in options.items()}


def steps_to_learn(losses):
    """The first step whose loss is below LEARNED, or None."""
    return next((step for step, loss in enumerate(losses, 1) if loss < LEARNED), None)


def run(steps=200, d_model=64, d_ks=D_KS, seed=0, full=False, device='cpu'):
    d_ks = tuple(d_ks) + (4096,) if full else tuple(d_ks)
    steps = FULL['steps'] if full else steps
    n = 16
    rows = score_statistics(d_ks, n=n, seed=seed, device=device)
    print(_("1. q, k ~ N(0, 1), n = {n} keys per query: the scaled scores' variance and the mean largest weight")
          .format(n=n))
    print(_("   (uniform: 1/n = {uniform:.4f}, one-hot: 1)").format(uniform=1 / n))
    print(table([_('scale'), 'd_k', 'Var(scores)', _('expected d_k * s^2'), _('mean max weight')],
                [[_(name), d_k, var, d_k * SCALES[name](d_k) ** 2, max_p] for name, d_k, var, max_p in rows]))
    save_lines('scale_variants', {_(name): [row[3] for row in rows if row[0] == name] for name in SCALES},
               'd_k', _('mean largest attention weight'), _('The scale decides how sharp attention can be at init'),
               x=list(d_ks), logx=True, logy=False)

    results = training(steps, d_model, seed, device)
    print(_("\n2. Copy the previous token, one head with d_k = {d_k}, {steps} Adam steps, four scales:").format(
        d_k=d_model, steps=steps))
    summary = {name: {'first': sum(r['losses'][:20]) / 20, 'last': sum(r['losses'][-20:]) / 20,
                      'worst_late': max(r['losses'][len(r['losses']) // 2:])} for name, r in results.items()}
    print(table([_('scale'), _('loss, first 20 steps'), _('loss, last 20 steps'), _('worst loss, 2nd half'),
                 _('test accuracy'), _('weight on t-1')],
                [[_(name), summary[name]['first'], summary[name]['last'], summary[name]['worst_late'],
                  f"{100 * r['accuracy']:.1f}%", r['back']] for name, r in results.items()]))
    slowest = max(summary, key=lambda name: summary[name]['first'])
    shakiest = max(summary, key=lambda name: summary[name]['worst_late'])
    accuracies = ', '.join(f"{_(name)} {100 * r['accuracy']:.1f}%" for name, r in results.items())
    print(_("slowest start: {slowest}; largest loss spike in the second half: {shakiest}; test accuracy: {accuracies}")
          .format(slowest=_(slowest), shakiest=_(shakiest), accuracies=accuracies))
    learned = results['learned']['model'].attention.log_scale.exp().mean().item()
    print(_("learned scale after training: {learned:.4f}  (started at 1/sqrt(d_k) = {start:.4f}, x {ratio:.2f})")
          .format(learned=learned, start=1 / math.sqrt(d_model), ratio=learned * math.sqrt(d_model)))
    curves = {name: r['losses'] for name, r in results.items()}
    print(table([_('steps')] + [_(name) for name in curves],
                [[w] + [means[i][1] for means in (window_means(c, 5) for c in curves.values())]
                 for i, (w, _loss) in enumerate(window_means(curves['no scale'], 5))]))
    save_lines('scale_variants_training', {_(name): losses for name, losses in curves.items()}, _('step'),
               _('cross-entropy'), _('Copy the previous token, d_k = {d_k}: four scales (Adam)').format(d_k=d_model))

    sgd = training(steps, d_model, seed, device, 'SGD')
    by_optimizer = {'Adam': results, 'SGD': sgd}
    learn = {(opt, name): steps_to_learn(r['losses'])
             for opt, runs in by_optimizer.items() for name, r in runs.items()}
    print(_("\n3. The same four trainings by plain SGD (lr {sgd_lr}) next to Adam (lr {adam_lr}): the step where the "
            "loss first\n   drops below {learned}, and the weight on t-1 at the end").format(
        sgd_lr=OPTIMIZERS['SGD'][1], adam_lr=OPTIMIZERS['Adam'][1], learned=LEARNED))
    column, not_in = _("{optimizer}: {column}"), _("not in {steps}").format(steps=steps)
    print(table([_('scale')] + [column.format(optimizer=opt, column=_(what)) for opt in by_optimizer
                                for what in (N_('learned at step'), N_('weight on t-1'))],
                [[_(name)] + [cell for opt, runs in by_optimizer.items()
                              for cell in (learn[opt, name] or not_in, runs[name]['back'])]
                 for name in results]))
    slowdown = {opt: learn[opt, '1/d_k'] / learn[opt, '1/sqrt(d_k)'] for opt in by_optimizer
                if learn[opt, '1/d_k'] and learn[opt, '1/sqrt(d_k)']}
    sgd_x, adam_x = (f"{slowdown[opt]:.1f}x" if opt in slowdown else _("(did not learn)") for opt in ('SGD', 'Adam'))
    print(_("The attention article's table (§2.3.3) rates the wrong scale 1/d_k 'extremely slow' (极慢): with SGD it\n"
            "takes {sgd} the steps of 1/sqrt(d_k), with Adam {adam}.  SGD's step is the gradient itself, and 1/d_k\n"
            "makes the gradients of W_Q, W_K sqrt(d_k) times smaller; Adam divides each gradient by its own running\n"
            "size, which undoes most of that (softmax_saturation trains by SGD for the same reason).  So 'slow'\n"
            "holds, 'extremely' depends on the optimizer, and 'extremely poor' does not: every run learns.").format(
        sgd=sgd_x, adam=adam_x))
    save_lines('scale_variants_sgd', {_(name): r['losses'] for name, r in sgd.items()}, _('step'), _('cross-entropy'),
               _("Copy the previous token, d_k = {d_k}: four scales (SGD, lr {lr})").format(
                   d_k=d_model, lr=OPTIMIZERS['SGD'][1]))
    runs = [(results, sgd)] + [(training(steps, d_model, seed + k, device), training(steps, d_model, seed + k, device,
                                                                                       'SGD'))
                               for k in range(1, FULL['seeds'] if full else 1)]
    _record(runs, steps, d_model, learned)
    return {'statistics': rows, 'training': results, 'sgd': sgd, 'steps_to_learn': learn, 'summary': summary,
            'learned_scale': learned, 'device': results['learned']['model'].attention.log_scale.device}


FULL = dict(steps=1000, seeds=5)  # --full: also d_k = 4096 in part 1; parts 2-3 over 5 seeds


def _record(runs, steps, d_model, learned):
    """The verdicts on the attention article's table (§2.3.3) and the learned scale, over every seed's trainings."""
    def ratio(opt, runs_of_seed):
        learn = {name: steps_to_learn(r['losses']) for name, r in runs_of_seed[opt == 'SGD'].items()}
        return learn['1/d_k'] / learn['1/sqrt(d_k)'] if learn['1/d_k'] and learn['1/sqrt(d_k)'] else math.inf
    last = [{name: sum(r['losses'][-20:]) / 20 for name, r in adam.items()} for adam, _ in runs]
    late = [{name: max(r['losses'][len(r['losses']) // 2:]) for name, r in adam.items()} for adam, _ in runs]
    n, seeds = len(runs), claims.seeds_note(len(runs))
    lowest = sum(min(loss, key=loss.get) == '1/d_k' for loss in last)
    spiky = sum(max(worst, key=worst.get) == 'no scale' for worst in late)
    learned_at = [{(opt, name): steps_to_learn(both[opt == 'SGD'][name]['losses']) for opt in ('Adam', 'SGD')
                   for name in ('learned', '1/sqrt(d_k)')} for both in runs]
    look = N_('part 2: the table "scale, loss, first 20 steps, ..., worst loss, 2nd half"; part 3: "learned at step"')
    claims.record('attention', '2.3.3', '错误缩放 (d_k) 极低 极慢 极差', 'partly',
                  N_("1/d_k starts slowest (uniform attention) and needs {sgd}x the steps of 1/√d_k to learn with SGD, "
                     "{adam}x with Adam, which rescales each gradient; it ends with the lowest loss of all in {lowest} of "
                     "{n} seeds: not \"极差\""), look, seeds=seeds, n=n, lowest=lowest,
                  sgd=claims.between([ratio('SGD', r) for r in runs], '.1f'),
                  adam=claims.between([ratio('Adam', r) for r in runs], '.1f'))
    at = [{name: steps_to_learn(r['losses']) or steps for name, r in adam.items()} for adam, _ in runs]
    claims.record('attention', '2.3.3', '无缩放 低 慢 差', 'partly',
                  N_("no scale learns at step {none_at} with Adam against {fixed_at} for 1/√d_k (later in {slower} of "
                     "{n} seeds); its loss "
                     "in the second half of training peaks at {spike} (1/√d_k: {fixed_spike}), the largest late loss of "
                     "the four scales in {spiky} of {n} seeds; the copy task still ends learned"),
                  look, seeds=seeds, n=n, spiky=spiky, none_at=claims.between([a['no scale'] for a in at], 'd'),
                  slower=sum(a['no scale'] > a['1/sqrt(d_k)'] for a in at),
                  fixed_at=claims.between([a['1/sqrt(d_k)'] for a in at], 'd'),
                  spike=outcome([worst['no scale'] for worst in late], '.2g', n, above=0.01, bound_spec='g'),
                  fixed_spike=outcome([worst['1/sqrt(d_k)'] for worst in late], '.2g', n, below=0.001,
                                      bound_spec='g'))
    claims.record('attention', '2.3.4', '有论文尝试过可学习缩放因子，效果提升有限', 'holds',
                  N_("`scale='learned'` ends at {learned:.4f} from 1/√{d} = {start:.4f} (x {ratio:.2f}) and trains "
                     "like the fixed scale"), N_('part 2: the line "learned scale after training"'), seeds=seeds, learned=learned,
                  d=d_model, start=1 / math.sqrt(d_model), ratio=learned * math.sqrt(d_model))
    claims.record('architecture', '2.4.2', '学一个可学习的 scaling 标量 实测效果和 √d_k 差不多', 'holds',
                  N_("the learned scale learns the task at step {adam_learned} with Adam against {adam_fixed} for "
                     "1/√d_k ({sgd_learned} vs {sgd_fixed} with SGD), and ends at the same loss ({last_learned} vs "
                     "{last_fixed} with Adam)"), look, seeds=seeds,
                  **{f"{opt.lower()}_{which}": claims.between([a[opt, name] or steps for a in learned_at], 'd')
                     for opt in ('Adam', 'SGD') for which, name in (('learned', 'learned'), ('fixed', '1/sqrt(d_k)'))},
                  last_learned=claims.between([loss['learned'] for loss in last], '.3g'),
                  last_fixed=claims.between([loss['1/sqrt(d_k)'] for loss in last], '.3g'))


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each training'),
                         d_model=N_('width of the trained head (its d_k)'),
                         d_ks=N_('the key widths d_k of part 1'), seed=N_('random seed'),
                         full=N_('1000 steps, 5 seeds; also d_k = 4096 in part 1'))
    return run_lesson(run, command_line('scale_variants', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    d_ks = tuple(args.d_ks) + ((4096,) if args.full else ())
    steps = FULL['steps'] * FULL['seeds'] if args.full else args.steps
    statistics = budget.Cost(0, 0, 0)
    for d_k in d_ks:  # part 1: q, k, v (32, 16, d_k) for each of the scales
        statistics = statistics + len(SCALES) * budget.dense(3 * 32 * 16 * d_k + 2 * 32 * 16 * 16,
                                                             2 * 32 * 16 * 16 * d_k)
    training = 4 * budget.transformer(32, 8, args.d_model, n_layers=1, vocab=10, heads=1, steps=steps)
    return budget.refuse({'--steps': steps, '--d-model': args.d_model, '--d-ks': ' '.join(map(str, d_ks))},
                         statistics + training, args.device)


if __name__ == '__main__':
    main()
