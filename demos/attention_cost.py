"""Lesson: what attention costs as the sequence grows -- O(n^2 d), but parallel; the RNN O(n d^2), but serial.

The deep dive (§1.8, §8.1): "the only n x n matrices are the attention scores and
weights: that is where O(n^2) comes from ... highly parallel: every position at once";
"self-attention costs O(n^2 d) ... the RNN's cost looks smaller, O(n d^2), but it must
run serially: step t waits for step t - 1".  The attention article (§2.1.1): the RNN
"cannot run in parallel".

For sequence lengths n, one MultiHeadAttention layer and one RNN layer of the same width d
(transformer.RNN) each process one sequence (B = 1, no graph), and we measure:

  * the score matrix's memory, read from the layer (last_scores: B x h x n x n numbers):
    its log-log slope against n is 2;
  * the time of one forward pass (median of several), and its log-log slope over the
    larger half of the sizes (-> 2 for attention once the n^2 d part dominates, ~1 for
    the RNN);
  * the number of sequential steps: the depth of the autograd graph (the longest chain of
    ops, each waiting for the one before): constant for attention, growing like n for the
    RNN -- "parallel vs serial", counted;
  * the multiply-adds of each: attention 4 n d^2 (projections) + 2 n^2 d (scores, mix),
    RNN 2 n d^2; the article's two terms, n^2 d vs n d^2, are equal at n = d.

On a CPU the RNN's n small steps each pay Python's per-op overhead, so at small n attention
is faster although it does more arithmetic; as n grows its n^2 part takes over and the
curves cross (the lesson prints where, for this machine; timings vary from run to run).

    python -m demos.attention_cost            # n = 64 .. 1024 (run time: end of --help)
    python -m demos.attention_cost --full     # n = 64 .. 2048, more repeats
"""
import math

import microtensor as mt
from microtensor.i18n import N_, _
from microtensor.inspect import graph_depth
from transformer import RNN, MultiHeadAttention

from . import budget, claims
from .figures import measured
from .report import command_line, draw_lines, median_seconds, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '1.8'), ('deep_dive', '8.1'), ('attention', '2.1.1'), ('architecture', '2.1.1'),
            ('architecture', '2.10.3')]


def slope(xs, ys):
    """Least-squares slope of log y against log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def measure(ns, d=64, n_heads=4, repeats=3, timing=True, device='cpu', seed=0):
    """One row per n: {'n', 'score_bytes', 'attention_s', 'rnn_s', 'attention_depth', 'rnn_depth',
    'attention_madds', 'rnn_madds', 'device'}.  timing=False skips the clocks (the structure only)."""
    mt.manual_seed(seed)
    attention, rnn = MultiHeadAttention(d, n_heads).to(device), RNN(d, d).to(device)
    rows = []
    for n in ns:
        x = mt.randn(1, n, d, device=device)
        with mt.no_grad():
            attention(x)
        scores = attention.last_scores
        row = {'n': n, 'score_bytes': scores.numel() * scores.dtype.itemsize, 'device': scores.device,
               'attention_depth': graph_depth(attention(x)), 'rnn_depth': graph_depth(rnn(x)[0]),
               'attention_madds': 4 * n * d * d + 2 * n * n * d, 'rnn_madds': 2 * n * d * d}
        if timing:
            with mt.no_grad():
                row['attention_s'] = median_seconds(lambda: _sync(attention(x)), repeats)
                row['rnn_s'] = median_seconds(lambda: _sync(rnn(x)[0]), repeats)
        rows.append(row)
    return rows


def _sync(t):
    """Wait for the result (on a GPU the call returns before the work is done)."""
    t.sum().item()


def crossing(rows):
    """The n (log-interpolated) where attention's time first exceeds the RNN's, or None."""
    for a, b in zip(rows, rows[1:]):
        da, db = math.log(a['attention_s'] / a['rnn_s']), math.log(b['attention_s'] / b['rnn_s'])
        if da <= 0 < db:
            return math.exp(math.log(a['n']) + (math.log(b['n']) - math.log(a['n'])) * -da / (db - da))
    return None


def run(max_n=1024, d=64, repeats=3, full=False, device='cpu'):
    max_n, repeats = (2048, 5) if full else (max_n, repeats)
    ns = [64 * 2 ** i for i in range(int(math.log2(max_n // 64)) + 1)]
    rows = measure(ns, d, repeats=repeats, device=device)
    print(_("One layer, width d = {d}, one sequence of n tokens, forward pass (median of {repeats}), {device}:").format(
        d=d, repeats=repeats, device=device))
    print(table(['n', _('score matrix'), _('attention ms'), _('RNN ms'), _('attention / RNN'),
                 _('sequential steps: attention'), 'RNN', _('multiply-adds: attention'), 'RNN'],
                [[r['n'], f"{r['score_bytes'] / 2 ** 20:.2f} MiB", 1e3 * r['attention_s'], 1e3 * r['rnn_s'],
                  r['attention_s'] / r['rnn_s'], r['attention_depth'], r['rnn_depth'], r['attention_madds'],
                  r['rnn_madds']] for r in rows]))
    half = rows[len(rows) // 2:]
    slopes = {N_('score memory'): slope(ns, [r['score_bytes'] for r in rows]),     # named in English, shown translated
              N_('attention time'): slope([r['n'] for r in half], [r['attention_s'] for r in half]),
              N_('RNN time'): slope([r['n'] for r in half], [r['rnn_s'] for r in half]),
              N_('RNN sequential steps'): slope(ns, [r['rnn_depth'] for r in rows])}
    print(table([_('log-log slope against n'), _('measured')], [[_(name), value] for name, value in slopes.items()],
                fmt='.2f'))
    cross = crossing(rows)
    last = rows[-1]
    print(_("Multiply-adds: the deep dive's terms (§8.1) n^2 d and n d^2 are equal at n = d = {d}, and attention does "
            "more work\n"
            "at every n (its 4 n d^2 projections alone are twice the RNN's 2 n d^2).  Sequential steps: attention\n"
            "{att} at every n (each a matrix product over all positions at once), the RNN "
            "{rnn} at n = {n}, one small step after another.").format(
        d=d, att=last['attention_depth'], rnn=last['rnn_depth'], n=last['n']))
    if cross:
        print(_("Measured: attention is faster up to n ~ {cross:.0f} (the RNN's serial steps cost more than attention's "
                "extra work), slower beyond (the n^2 term takes over).").format(cross=cross))
    elif last['attention_s'] < last['rnn_s']:
        print(_("Measured: the curves do not cross for n <= {n}: attention is faster at every n here.").format(
            n=last['n']))
    else:
        print(_("Measured: the curves do not cross for n <= {n}: attention is slower at every n here.").format(
            n=last['n']))
    look = N_('the columns "sequential steps: attention, RNN"')
    claims.record('attention', '2.1.1', '无法并行：必须等前一个词处理完，才能处理后一个词', 'holds',
                  N_("the longest chain of ops is {att} for attention at every n, 4n + 2 for the RNN ({rnn} at n = {n})"),
                  look, att=last['attention_depth'], rnn=last['rnn_depth'], n=last['n'])
    claims.record('architecture', '2.1.1', '第 N 步必须等第 N-1 步算完才能开始', 'holds',
                  N_("the RNN's longest chain of ops is 4n + 2 ({rnn} at n = {n}), attention's {att} at every n"), look,
                  att=last['attention_depth'], rnn=last['rnn_depth'], n=last['n'])
    claims.record('architecture', '2.10.3', '复杂度从 O(N) 变成 O(N^2)', 'holds',
                  N_("the score matrix's memory has log-log slope {memory:.2f} against n ({mib:.0f} MiB at n = {n} for "
                     "4 heads), the RNN's chain of steps {steps:.2f}"), N_('the slope table, "score memory"'),
                  memory=slopes['score memory'], mib=last['score_bytes'] / 2 ** 20, n=last['n'],
                  steps=slopes['RNN sequential steps'])
    claims.record('deep_dive', '1.8', '唯一出现"n × n"矩阵的地方是注意力分数和权重——这是 O(n^2) 复杂度的来源…高度可并行', 'holds',
                  N_("the score matrix (h x n x n) grows with slope {memory:.2f}; attention's chain of ops stays {att} "
                     "long at every n"), N_('the slope table and the column "sequential steps: attention"'),
                  memory=slopes['score memory'], att=last['attention_depth'])
    faster = last['attention_s'] < last['rnn_s']
    timing_finding = (  # one template per outcome, so that each can be translated whole
        N_("the RNN does less arithmetic at every n, yet one attention layer's forward pass is faster up to "
           "n ~ {cross} and slower beyond (time slopes: attention {att_slope}, RNN {rnn_slope}, "
           "over the larger n)") if cross else
        N_("the RNN does less arithmetic at every n, yet one attention layer's forward pass is faster at "
           "every n up to {n} (time slopes: attention {att_slope}, RNN {rnn_slope}, over the larger n)")
        if faster else
        N_("the RNN does less arithmetic at every n, yet one attention layer's forward pass is slower at "
           "every n up to {n} (time slopes: attention {att_slope}, RNN {rnn_slope}, over the larger n)"))
    claims.record('deep_dive', '8.1', 'RNN 的复杂度看似更小（O(n·d^2)），但必须串行', 'holds', timing_finding,
                  N_('the columns "attention ms, RNN ms" and the slope table'), timing=True, n=last['n'],
                  cross=measured(cross, '.0f') if cross else None, att_slope=measured(slopes['attention time'], '.2f'),
                  rnn_slope=measured(slopes['RNN time'], '.2f'))
    times = {_("attention (slope {slope:.2f})").format(slope=slopes['attention time']):
             [1e3 * r['attention_s'] for r in rows],
             _("RNN (slope {slope:.2f})").format(slope=slopes['RNN time']): [1e3 * r['rnn_s'] for r in rows]}
    memory = {_("attention's score matrix (slope {slope:.2f})").format(slope=slopes['score memory']):
              [r['score_bytes'] / 2 ** 20 for r in rows]}

    def draw(axes):
        draw_lines(axes[0], times, _('sequence length n'), _('forward pass (ms)'), ns, logx=True)
        draw_lines(axes[1], memory, _('sequence length n'), _('memory (MiB)'), ns, logx=True)
        axes[0].set_title(_('time'))
        axes[1].set_title(_('memory used'))  # ('memory' alone is ffn_memory's, a memory of facts)
    save_plot('attention_cost', draw, _('One layer, d = {d}: time and memory against n ({device})').format(
        d=d, device=device), panels=2)
    return {'rows': rows, 'slopes': slopes, 'crossing': cross, 'device': rows[0]['device']}


def main(argv=None):
    options = options_of(run, max_n=(N_('the longest sequence n (n = 64, 128, ... up to it)'), 256),
                         d=N_('width d of both layers'), repeats=N_('timed runs per size (the median is shown)'),
                         full=N_('n up to 2048, 5 repeats'))
    return run_lesson(run, command_line('attention_cost', __doc__, options, argv,
                                        check=lambda args: _heads_divide(args) or _budget(args)))


def _heads_divide(args):
    return _("--d must be a multiple of 4 (the attention layer has 4 heads), got {d}").format(d=args.d) if args.d % 4 \
        else None


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    max_n, repeats = (2048, 5) if args.full else (args.max_n, args.repeats)
    cost, n = budget.Cost(0, 0, 0), 64
    while n <= max_n:  # n = 64, 128, ... : attention (heads 4) and an RNN over n steps, timed repeats + 1 times
        cost = cost + (repeats + 3) * (budget.transformer(1, n, args.d, n_layers=1)
                                       + budget.dense(2 * n * args.d, 3 * n * args.d ** 2, steps=n))
        n *= 2
    return budget.refuse({'--max-n': max_n, '--d': args.d, '--repeats': repeats}, cost, args.device)


if __name__ == '__main__':
    main()
