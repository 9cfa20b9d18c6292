"""Lesson: attention by hand -- the 我爱你 example, hard vs soft attention, the chapters' small numbers.

1. 我 爱 你 ("I love you", the deep dive §1.4-1.6, d_k = 4).  The article prints the scores
   S = Q K^T, then S / sqrt(4) (right), then A = softmax(S / 2) row by row.  Recomputed
   here with mt.softmax, row 2 of A agrees, rows 1 and 3 do not: the printed [0.72, 0.11,
   0.17] and [0.15, 0.70, 0.15] sum to 1 but are not the softmax of the printed S / 2
   (that is about [0.66, 0.10, 0.23] and [0.16, 0.75, 0.10]), so the prose built on them
   ("我 keeps 72% on itself", "你 gives 70% to 爱") is off too.  And the text reads
   "S_{2,1} = 2.1 (你 attends to 爱)": with the 0-based indices that make its
   S_{1,2} = 4.7 (爱 -> 你) right, S_{2,1} is 3.9; 2.1 is S_{1,0} (爱 -> 我).
2. Hard vs soft attention (the attention article §2.2.3): Argmax(Q K^T) V "is not
   differentiable", Softmax(Q K^T) V is.  On the same scores: the soft version's gradient
   dL/dS is non-zero (and matches central differences); the hard version's is exactly
   zero -- autograd finds no path from the output back to S (a comparison has no
   gradient), and central differences agree: nudging a score changes nothing until the
   argmax flips.  softmax(S / T) with T -> 0 tends to argmax; its gradient first grows
   (the 1 / T) and then collapses to 0.
3. Small numbers: softmax([20, -5]) ~ [0.999..., 0]; the std of q . k for unit-variance
   q, k is sqrt(d_k) = 8, 11.3, 22.6 for d_k = 64, 128, 512 (sampled here), so "-20 to +20
   (2 standard deviations)" fits d_k ~ 100 only; argmax([2, 1, 0.1]) is [1, 0, 0], not
   the printed [0, 1, 0]; and the heat map's 'animal' row sums to 1.1, which no softmax
   row can (its columns are 5 of 11 tokens, so a row may sum to less than 1, never more).

    python -m demos.attention_by_hand
"""
import math

import microtensor as mt
from microtensor.i18n import N_, _
from transformer import article_data as article

from . import budget, claims
from .figures import below
from .articles import cite
from .figures import series
from .report import command_line, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '1.4'), ('deep_dive', '1.6'), ('attention', '2.2.3'),
            ('attention', '2.3.1'), ('attention', '2.4.1'), ('attention', '2.6')]


# ---------------------------------------------------------------------------- 1. 我 爱 你
def love_weights(device='cpu'):
    """softmax(S / sqrt(d_k)) row by row for the article's printed S; (S / sqrt(d_k), A) as lists, and the
    device they were computed on."""
    S = mt.tensor(article.LOVE_SCORES, dtype='float64', device=device)
    scaled = S / math.sqrt(article.LOVE_D_K)
    A = mt.softmax(scaled, axis=-1)
    return scaled.tolist(), A.tolist(), A.device


def love_differences(A, tolerance=0.005):
    """(query, key, printed, computed) wherever the printed A is off by more than rounding to 2 decimals."""
    return [(article.LOVE_TOKENS[i], article.LOVE_TOKENS[j], printed, A[i][j])
            for i, row in enumerate(article.LOVE_WEIGHTS_PRINTED) for j, printed in enumerate(row)
            if abs(printed - A[i][j]) > tolerance]


def text_cells():
    """Each cell the text names: (indices, the pair it names, the value it gives, S there, where that value is)."""
    S, words = article.LOVE_SCORES, article.LOVE_TOKENS
    rows = []
    for (i, j), value, named in article.LOVE_TEXT_CELLS:
        actual = [(a, b) for a in range(3) for b in range(3) if S[a][b] == value]
        holder = ', '.join(f"S[{a}][{b}] {words[a]} -> {words[b]}" for a, b in actual)
        rows.append(((i, j), named, value, S[i][j], holder))
    return rows


# ---------------------------------------------------------------------------- 2. hard vs soft
def hard_vs_soft(T=4, d_k=8, seed=0, eps=1e-4, device='cpu'):
    """dL/dS for soft and hard attention on the same scores S = q k^T / sqrt(d_k); L = sum(out * g).

    Returns {'soft': (autograd |dL/dS|, max |autograd - central differences|),
             'hard': (autograd |dL/dS|, max |central differences|), 'temperatures': [(T, |dL/dS|)]}.
    """
    mt.manual_seed(seed)  # drawn on the CPU and moved: the same numbers on every device
    q, k, g = (mt.randn(T, d_k, dtype='float64').to(device) for _ in range(3))
    V = mt.randn(T, d_k, dtype='float64').to(device).requires_grad_()  # the values still learn under hard attention
    S0 = (q @ k.T / math.sqrt(d_k)).numpy()  # a host copy, nudged one cell at a time below

    def loss(weights_of, S):
        return (weights_of(S) @ V * g).sum()

    def value(weights_of, S):
        with mt.no_grad():
            return loss(weights_of, S).item()

    def soft(S, temperature=1.0):
        return (S / temperature).softmax(axis=-1)

    def hard(S):  # one-hot of each row's argmax: a comparison, so no gradient flows back to S
        return (S == S.amax(dim=-1, keepdim=True)).astype('float64')

    def autograd(weights_of):
        S = mt.tensor(S0, device=device, requires_grad=True)
        loss(weights_of, S).backward()
        return mt.zeros(T, T, dtype='float64', device=device) if S.grad is None else S.grad  # None: no path: 0

    def central(weights_of):
        grad = mt.zeros(T, T, dtype='float64').numpy()
        for i in range(T):
            for j in range(T):
                up, down = S0.copy(), S0.copy()
                up[i, j] += eps
                down[i, j] -= eps
                grad[i, j] = (value(weights_of, mt.tensor(up, device=device))
                              - value(weights_of, mt.tensor(down, device=device))) / (2 * eps)
        return mt.tensor(grad, device=device)

    soft_grad, hard_grad = autograd(soft), autograd(hard)
    return {'soft': (_norm(soft_grad), (soft_grad - central(soft)).abs().max().item()),
            'hard': (_norm(hard_grad), central(hard).abs().max().item()),
            'temperatures': [(t, _norm(autograd(lambda S, t=t: soft(S, t))))
                             for t in (1.0, 0.3, 0.1, 0.03, 0.01, 0.003)]}


def _norm(t):
    return (t * t).sum().sqrt().item()


# ---------------------------------------------------------------------------- 3. small numbers
def small_numbers(samples=20000, seed=0, device='cpu'):
    """The chapters' small numbers recomputed: a dict of lists of table rows."""
    logits, printed = article.SATURATED_SOFTMAX
    p = mt.softmax(mt.tensor(logits, dtype='float64', device=device), axis=-1).tolist()

    mt.manual_seed(seed)
    stds = []
    for d_k, printed_std in article.DOT_PRODUCT_STD.items():
        q, k = mt.randn(samples, d_k).to(device), mt.randn(samples, d_k).to(device)
        measured = (q * k).sum(axis=-1).var(correction=0).sqrt().item()
        stds.append((d_k, printed_std, math.sqrt(d_k), measured, 2 * math.sqrt(d_k)))

    x, printed_argmax = article.ARGMAX_EXAMPLE
    argmax = mt.tensor(x, device=device).argmax().item()
    one_hot = [int(i == argmax) for i in range(len(x))]

    sums = {word: sum(row) for word, row in article.HEATMAP_ROWS.items()}
    return {'softmax': (logits, printed, p), 'stds': stds, 'argmax': (x, printed_argmax, one_hot),
            'heatmap_sums': sums}


def run(samples=20000, seed=0, device='cpu'):
    words = article.LOVE_TOKENS
    S, scaled_printed = article.LOVE_SCORES, article.LOVE_SCALED_SCORES
    scaled, A, device = love_weights(device)
    print(_("1. 我 爱 你 (the deep dive's example, §1.4-1.6), d_k = 4: S = Q K^T (article) | S / 2 (article) | "
            "S / 2 (computed)"))
    print(table(['Q \\ K'] + words + ['|'] + words + ['|'] + words,
                [[w] + S[i] + ['|'] + scaled_printed[i] + ['|'] + scaled[i] for i, w in enumerate(words)], fmt='.2f'))
    print('\n' + _("A = softmax(S / 2): computed | printed in the deep dive (§1.6)"))
    print(table(['Q \\ K'] + words + [_('sum'), '|'] + words + [_('sum')],
                [[w] + A[i] + [sum(A[i]), '|'] + printed + [sum(printed)]
                 for i, (w, printed) in enumerate(zip(words, article.LOVE_WEIGHTS_PRINTED))], fmt='.3f'))
    wrong = love_differences(A)
    print('\n' + _("{n} printed weights are not softmax(S / 2) (to 2 decimals):").format(n=len(wrong)))
    print(table([_('query'), _('key'), _('article'), 'softmax(S / 2)'], wrong, fmt='.3f'))
    print(_("So 我 keeps {me:.0%} on itself (the article: 72%) and 你 gives {you:.0%} to 爱 (the article: 70%);\n"
            "row 爱 is right.  The printed rows sum to 1 but do not follow from the printed S / 2.").format(
        me=A[0][0], you=A[2][1]))
    print('\n' + _("The cells the text names (§1.4; S_{i,j}, 0-based as its S_{1,2} = 4.7 needs):"))
    print(table([_('cell'), _('the text says'), _('value'), _('S at that cell'), _('where the value is')],
                [[f"S_{{{i},{j}}}", named, value, actual, holder]
                 for (i, j), named, value, actual, holder in text_cells()]))
    cells = {cell: (value, actual, holder) for cell, _, value, actual, holder in text_cells()}
    look = N_('part 1: the first table and "The cells the text names"')
    claims.record('deep_dive', '1.4', '爱(Q): [ 2.1, 0.3, 4.7 ]', 'holds',
                  N_("S / 2 recomputed from the printed S = QK^T of 我 爱 你 equals the printed S / 2 (largest "
                     "difference {diff:.2f})"), look,
                  diff=max(abs(a - b) for r, q in zip(scaled, scaled_printed) for a, b in zip(r, q)))
    claims.record('deep_dive', '1.4', 'S_{2,1}=2.1（"你"对"爱"也有相当关注…）', 'the article is wrong',
                  N_("with the 0-based indices that make its S_{{1,2}} = {s12} (爱 → 你) right, S_{{2,1}} is {s21}; "
                     "{value} is {holder}"), look, s12=cells[1, 2][1], s21=cells[2, 1][1], value=cells[2, 1][0],
                  holder=cells[2, 1][2])
    claims.record('deep_dive', '1.6', '"我"把 72% 的注意力放在自己身上', 'the article is wrong',
                  N_("rows 我 and 你 of the printed A are not the softmax of the printed S / 2: 我 keeps {me:.0%} on "
                     "itself (not 72%), 你 gives {you:.0%} to 爱 (not 70%); row 爱 is right"),
                  N_('part 1: the table "A = softmax(S / 2): computed | printed" and the list of printed weights that '
                     'are not softmax(S / 2)'),
                  me=A[0][0], you=A[2][1])

    plot_love(A)

    result = hard_vs_soft(seed=seed, device=device)
    print('\n' + _("2. Hard vs soft attention (the attention article's table, §2.2.3: '硬注意力 ... 不可导') on the "
                    "same scores S\n   (4 x 4), L = sum(weights(S) V * g), g ~ N(0, 1) a fixed upstream gradient:"))
    print(table([_('attention'), '|dL/dS| (autograd)', _('check')],
                [[_('soft: softmax(S) V'), result['soft'][0],
                  _("max |autograd - central diff| {diff}").format(diff=below(result['soft'][1], 1e-6))],
                 [_('hard: onehot(argmax S) V'), result['hard'][0],
                  _("max |central diff| = {diff:.1e} (no path back to S)").format(diff=result['hard'][1])]]))
    print(_("softmax(S / T) (T: the temperature) tends to the hard argmax as T -> 0: its gradient first grows "
            "(the 1 / T in front),\n"
            "then collapses to 0 once every row is one-hot (p(1 - p) -> 0 faster than 1 / T grows):"))
    print(table(['T', '|dL/dS|'], result['temperatures']))
    claims.record('attention', '2.2.3', '硬注意力 Argmax(QK^T)·V 只选一个最匹配的 不可导', 'holds',
                  N_("the gradient reaching the scores is exactly {hard} for the hard version (autograd finds no "
                     "path; central differences agree), {soft:.3f} for the soft one"),
                  N_('part 2: the table "attention, |dL/dS|"'),
                  hard=result['hard'][0], soft=result['soft'][0])
    claims.record('attention', '2.4.1', 'Argmax 是"硬"选择，不可导，无法反向传播', 'holds',
                  N_("see §2.2.3; softmax(S / T) tends to the argmax as T → 0 and its gradient collapses to "
                     "{grad:.1e} at T = {T}"), N_('part 2: the table "T, |dL/dS|"'), T=result['temperatures'][-1][0],
                  grad=result['temperatures'][-1][1])

    small = small_numbers(samples, seed, device)
    logits, printed, p = small['softmax']
    print('\n' + _("3. The chapters' small numbers:"))
    print(table([_('claim'), _('where'), _('article'), _('computed'), _('verdict')], [
        [f"softmax({logits})", cite('deep_dive', '1.5'), str(printed), f"[{p[0]:.12f}, {p[1]:.1e}]",
         _('ok (0.999... rounded down)')],
        [f"argmax({small['argmax'][0]})", cite('attention', '2.4.1'), str(small['argmax'][1]),
         str(small['argmax'][2]), _('WRONG: the largest entry is the first')]] +
        [[_("heat-map row '{word}' sums to").format(word=w), cite('attention', '2.6'), _('(a softmax row: <= 1)'),
          f"{s:.2f}", _('IMPOSSIBLE: more than 1') if s > 1 + 1e-9 else _('possible (5 of 11 tokens shown)')]
         for w, s in small['heatmap_sums'].items()]))
    print('\n' + _("std of q . k for q, k ~ N(0, 1), {samples} samples per d_k (the attention article, §2.3.1):")
          .format(samples=samples))
    print(table(['d_k', _('article'), 'sqrt(d_k)', _('sampled'), _('2 std (article: 20)')], small['stds'], fmt='.2f'))
    print(_("The attention article's '-20 到 +20 (2 倍标准差范围)' is 2 std for d_k = 100; for d_k = 512 it is +-45."))
    stds = {row[0]: row for row in small['stds']}
    claims.record('attention', '2.4.1', 'Argmax 输出：[0, 1, 0]', 'the article is wrong',
                  N_("for [2.0, 1.0, 0.1] the largest entry is the first, argmax is {one_hot}"),
                  N_('part 3: the row "argmax"'),
                  one_hot=small['argmax'][2])
    claims.record('attention', '2.6', 'animal │ 0.1 │ 0.3 │ 0.1 │ 0.4 │ 0.2', 'the article is wrong',
                  N_("this row of the heat map sums to {total:.1f}, which no softmax row can (the table shows 5 of 11 "
                     "tokens, so a row may sum to less than 1, never more)"),
                  N_("part 3: the rows \"heat-map row 'animal'\""),
                  total=small['heatmap_sums']['animal'])
    claims.record('attention', '2.3.1', 'd_k = 64 时，标准差 = 8 … 128 时，标准差 = 11.3 … 512 时，标准差 = 22.6',
                  'holds',
                  N_("sampled std of q·k {std}"), N_('part 3: the table "d_k, article, sqrt(d_k), sampled"'),
                  std=series([row[3] for row in small['stds']], '.2f'))
    two = {d_k: 2 * math.sqrt(d_k) for d_k in (64, 128, 512)}
    claims.record('attention', '2.3.1', '点积结果可能在 -20 到 +20 之间波动（2 倍标准差范围）', 'partly',
                  N_("±20 is two standard deviations for d_k = 100, between the article's own d_k = 64 and 128 (±{two64:.1f} "
                     "and ±{two128:.1f}); for the section's opening example, d_k = 512, two standard deviations are "
                     "±{two512:.2f}"), N_('part 3: the column "2 std (article: 20)"'),
                  two64=two[64], two128=two[128], two512=two[512])
    return {'A': A, 'scaled': scaled, 'wrong': wrong, 'text_cells': text_cells(), 'hard_vs_soft': result,
            'small': small, 'device': device}


def plot_love(A):
    """A as a heat map, each cell labelled 'computed (article)'; the cells the article misprints framed in red."""
    def draw(ax):
        from matplotlib.patches import Rectangle  # only when drawing: matplotlib stays optional
        ax.imshow(A, cmap='Blues', vmin=0, vmax=1)
        for i in range(3):
            for j in range(3):
                printed = article.LOVE_WEIGHTS_PRINTED[i][j]
                wrong = abs(printed - A[i][j]) > 0.005
                ax.text(j, i, _("{computed:.2f}\n(article {printed:.2f})").format(computed=A[i][j], printed=printed),
                        ha='center',
                        va='center', color='white' if A[i][j] > 0.5 else 'black', fontweight='bold' if wrong else None)
                if wrong:  # a frame, not a text colour: it reads on light and dark cells alike
                    ax.add_patch(Rectangle((j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor='red',
                                           linewidth=3))
        ax.set_xticks(range(3), [_('key 1 (wo)'), _('key 2 (ai)'), _('key 3 (ni)')])
        ax.set_yticks(range(3), [_('query 1 (wo)'), _('query 2 (ai)'), _('query 3 (ni)')])
    return save_plot('attention_by_hand', draw,
                     _('wo ai ni: softmax(S / 2), computed; framed red: the article prints another value'))


def main(argv=None):
    options = options_of(run, samples=N_('random (q, k) pairs per d_k for the std of q . k'), seed=N_('random seed'))
    return run_lesson(run, command_line('attention_by_hand', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    d_ks = list(article.DOT_PRODUCT_STD)   # q, k (samples, d_k) for each d_k the article prints
    cost = budget.dense(3 * args.samples * max(d_ks), args.samples * sum(d_ks), steps=len(d_ks))
    return budget.refuse({'--samples': args.samples}, cost, args.device)


if __name__ == '__main__':
    main()
