"""Lesson: temperature.  softmax(x / T): low T -> near-argmax, high T -> flatter.

The article's table (the attention article §2.4.2): T = 0.2 "extremely sharp, near argmax",
0.7 "moderate", 1.0 "standard softmax", 1.5 "smooth, diverse".  The same division
appears inside attention as 1/sqrt(d_k): a "training-time temperature".

    python -m demos.temperature --logits 3 1 0 -1 --temperatures 0.1 1 10
"""
import math

import microtensor as mt

from microtensor.i18n import N_, _

from . import claims
from .figures import series
from .report import command_line, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.4.2'), ('attention', '2.3.4')]

LOGITS = (2.0, 1.0, 0.1)  # the article's example: softmax = [0.659, 0.242, 0.099]
TEMPERATURES = (0.2, 0.7, 1.0, 1.5)


def distributions(logits=LOGITS, temperatures=TEMPERATURES, device='cpu'):
    """[(T, probabilities (a tensor on `device`), entropy in nats)] for softmax(logits / T).

    Below T = 1 the max is subtracted before dividing: softmax((logits - max) / T), the same
    probabilities (a softmax does not change when one number is subtracted from all its inputs).
    logits / T itself would overflow there: 1e308 / 0.5 is inf in float64, and inf - inf, in the
    softmax's own subtraction of the max, is nan.  (At T >= 1, logits / T is no larger than the
    logits, and logits - max could overflow instead: 1e308 - (-1e308).)  What may still overflow is
    a logit far below the max, to -inf: its probability, e^-inf = 0, is what it was (below e^-745,
    float64's smallest number).
    """
    x = mt.tensor(logits, dtype='float64', device=device)
    rows = []
    for T in temperatures:
        with mt.backend.quiet_float_errors(x.data):  # (numpy warns of that overflow: it is no error here)
            p = mt.softmax(x / T if T >= 1 else (x - x.max()) / T)
        entropy = sum(-pi * math.log(pi) for pi in p.tolist() if pi > 0)  # (0 for a sure choice, not -0)
        rows.append((T, p, entropy))
    return rows


def run(logits=LOGITS, temperatures=TEMPERATURES, device='cpu'):
    rows = distributions(logits, temperatures, device)
    print(_("softmax({logits} / T), T the temperature (the attention article's table, §2.4.2; its example "
            "[2.0, 1.0, 0.1], §2.4.1)").format(logits=list(logits)))
    entropy_header = _("entropy (max {max:.3f})").format(max=math.log(len(logits)))
    print(table(['T'] + [f"p({x:g})" for x in logits] + [entropy_header],
                [[f"{T:g}"] + p.tolist() + [entropy] for T, p, entropy in rows], fmt='.3f'))
    print(_("Low T puts almost all the mass on the largest logit (near argmax); high T spreads it."))
    if tuple(logits) == LOGITS and {0.2, 1.5} <= set(temperatures):   # the article's example and its two ends
        by_T = {T: (p.tolist(), entropy) for T, p, entropy in rows}
        look = N_('the table "T, p(2), p(1), p(0.1), entropy"')
        claims.record('attention', '2.4.2', ['T = 0.2 极度尖锐，接近 Argmax', 'T = 1.5 平滑，多样性高'], 'holds',
                      N_("for {x} the largest probability is {tops} at T = {Ts}, and the entropy rises from {low:.3f} "
                         "to {high:.3f} (uniform: {uniform:.3f})"), look, x=list(logits),
                      tops=series([by_T[T][0][0] for T in sorted(by_T)], '.3f'), Ts=series(sorted(by_T), 'g'),
                      low=by_T[min(by_T)][1], high=by_T[max(by_T)][1], uniform=math.log(len(logits)))
        claims.record('attention', '2.3.4', '√d_k 是"训练时的温度"', 'holds',
                      N_("softmax(x / T) with T = {low:g} … {high:g} goes from near argmax ({top:.3f}) to flat; 1/√d_k "
                         "is the same division of the scores, with T = √d_k"), look, low=min(by_T), high=max(by_T),
                      top=by_T[min(by_T)][0][0])

    def draw(ax):  # one group of bars per logit, one bar per temperature
        width = 0.8 / len(rows)
        for k, (T, p, _entropy) in enumerate(rows):
            ax.bar([i + (k - (len(rows) - 1) / 2) * width for i in range(len(logits))], p.tolist(), width,
                   label=f"T = {T:g}")
        ax.set(xticks=range(len(logits)), xticklabels=[_("logit {x:g}").format(x=x) for x in logits],
               ylabel=_('probability'),
               ylim=(0, 1))
        ax.legend()
    save_plot('temperature', draw, f"softmax(x / T), x = {list(logits)}")
    return rows


def main(argv=None):
    options = options_of(run, logits=(N_('the logits x (any numbers)'), -math.inf),
                         temperatures=N_('the temperatures T to compare'))
    return run_lesson(run, command_line('temperature', __doc__, options, argv))


if __name__ == '__main__':
    main()
