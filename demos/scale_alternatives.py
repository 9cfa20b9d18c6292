"""Lesson: the 1/sqrt(d_k) scale -- the "±30", the alternatives to it, and what "soft" inputs are.

1. The architecture article (§2.4.1): "at d_k = 128 the standard deviation is sqrt(128) ≈ 11.3,
   so the dot products spread over a range like ±30".  How many standard deviations is 30,
   and how often is it exceeded?  Measured on q . k for q, k ~ N(0, I_128), beside the normal
   tail; and the largest |q . k| in a row of 512 keys (a row is what one softmax sees).
2. §2.4.2's table of alternatives:
   - "LayerNorm before attention (Pre-LN): strictly, normalising before attention, not really
     replacing sqrt(d_k)".  LayerNorm fixes the scale of x, but q . k still sums d_k terms:
     the unscaled scores of MultiHeadAttention(scale=1) on LayerNorm(x), for growing d_k.
   - "Keep d_k very small: that directly limits the model's capacity".  A small d_k does keep
     unscaled scores small (their std is sqrt(d_k) for unit-variance q, k), but fewer
     dimensions hold less: the qkv_roles lesson's lookup (32 addresses) without any scale,
     at d_k = 2 .. 16.
3. The attention article (§2.3.3, debugging tips): "the range of the softmax inputs (should be
   between -5 and +5)".  The scaled scores of a trained model (the qkv_roles lesson's
   copy-the-previous-token model), and what ±5 allows: softmax(5, -5).
4. The deep dive (§1.5): "inputs that are too large (say 20 and -5) give an output close to
   one-hot ([0.999, 0.000...]) ... moderate inputs (say 1.2 and -0.3) give a soft output,
   rich in gradient".  Both softmaxes, and the gradient dp_1/dx_1 = p_1 (1 - p_1) from the
   engine's backward pass.

    python -m demos.scale_alternatives          # the defaults (run time: end of --help)
    python -m demos.scale_alternatives --full   # more samples, longer training
"""
import math

import microtensor as mt
from microtensor import i18n
from microtensor.i18n import N_, _
from transformer import LayerNorm, MultiHeadAttention

from . import qkv_roles
from . import budget, claims
from .articles import cite
from .figures import outcome
from .report import command_line, options_of, run_lesson, table

SECTIONS = [('architecture', '2.4.1'), ('architecture', '2.4.2'), ('attention', '2.3.3'), ('deep_dive', '1.5')]


# ---------------------------------------------------------------------------- 1. the ±30

def dot_products(d_k=128, rows=200, n=512, bound=30.0, seed=0, device='cpu'):
    """q . k for rows x n pairs q, k ~ N(0, I_{d_k}) (float32, a row at a time would be slow, all at once
    large: 40 rows per chunk): {'std', 'beyond': fraction with |q . k| > bound, 'row_max': mean over rows of
    the largest |q . k| among a row's n keys}."""
    mt.manual_seed(seed)
    squares = beyond = row_max = 0.0
    for start in range(0, rows, 40):
        m = min(40, rows - start)
        s = (mt.randn(m, n, d_k).to(device) * mt.randn(m, n, d_k).to(device)).sum(axis=-1)   # (m, n)
        squares += (s * s).sum().item()
        beyond += (s.abs() > bound).sum().item()
        row_max += s.abs().amax(dim=-1).sum().item()
    return {'std': math.sqrt(squares / (rows * n)), 'beyond': beyond / (rows * n), 'row_max': row_max / rows}


def normal_beyond(z):
    """P(|Z| > z) for Z ~ N(0, 1)."""
    return math.erfc(z / math.sqrt(2))


# ---------------------------------------------------------------------------- 2. the alternatives
def pre_ln_scores(d_ks=(16, 64, 256, 1024), n=16, B=8, seed=0, device='cpu'):
    """{d_k: std of the unscaled scores of one head (d_model = d_k) on LayerNorm(x)}, x of an arbitrary scale."""
    out = {}
    for d_k in d_ks:
        mt.manual_seed(seed)
        norm, attention = LayerNorm(d_k).to(device), MultiHeadAttention(d_k, 1, scale=1.0).to(device)
        x = 5 * mt.randn(B, n, d_k).to(device) + 3                     # LayerNorm takes the 5 and the 3 away
        with mt.no_grad():
            attention(norm(x))
        S = attention.last_scores
        out[d_k] = ((S - S.mean()) ** 2).mean().sqrt().item()
    return out


def small_d_k(d_ks=(2, 4, 8, 16), m=32, steps=400, seed=0, device='cpu'):
    """{d_k: test accuracy of the qkv_roles lookup with m addresses and no scale at all (scale = 1)}."""
    return {d_k: qkv_roles.train_lookup(False, d_k, steps, m=m, scale=1.0, seed=seed, device=device)[2]
            for d_k in d_ks}


def capacity(d_k, accuracies):
    """The lookup's accuracy at `d_k` over seeds; from one seed, what it shows with a margin: d_k = 2 and 4
    cannot hold the 32 addresses, 8 and more can."""
    return outcome(accuracies, '.1%', len(accuracies), **{2: dict(below=0.2), 4: dict(below=0.7)}.get(d_k, dict(above=0.85)))


# ---------------------------------------------------------------------------- 3, 4. softmax inputs
def softmax_and_slope(x, device='cpu'):
    """(softmax(x) as a list, dp_1/dx_1 from backward): float64."""
    x = mt.tensor(x, dtype='float64', device=device, requires_grad=True)
    p = x.softmax(axis=-1)
    p[0].backward()
    return p.tolist(), x.grad[0].item()


def trained_scores(steps=200, seed=0, device='cpu'):
    """The qkv_roles copy-the-previous-token model (with projections) after training: {'within': fraction of its
    scaled test scores in [-5, 5], 'largest': max |score|, 'spread': mean of each row's max - min, 'back'}."""
    result = qkv_roles.copy_previous(True, steps, seed=seed, device=device)
    S = result['scores']
    spread = (S.amax(dim=-1) - S.amin(dim=-1)).mean().item()
    return {'device': S.device, 'within': (S.abs() <= 5).astype('float64').mean().item(),
            'largest': S.abs().max().item(),
            'spread': spread, 'back': result['back'], 'accuracy': result['accuracy']}


FULL = dict(rows=2000, seeds=5)  # --full: 10x the rows, the trainings over 5 seeds


def run(rows=200, steps=200, seed=0, full=False, device='cpu'):
    rows, seeds = (FULL['rows'], range(seed, seed + FULL['seeds'])) if full else (rows, [seed])
    d = dot_products(rows=rows, seed=seed, device=device)
    z = 30 / math.sqrt(128)
    print(_("1. q . k at d_k = 128 ({cite}: std ≈ 11.3, 'spread over ±30'), {rows} rows of 512 keys:").format(
        cite=cite('architecture', '2.4.1'), rows=rows))
    print(table(['', _('measured'), _('normal distribution')],
                [[_('std of q . k'), f"{d['std']:.2f}", f"{math.sqrt(128):.2f}"],
                 [_('30 in standard deviations'), f"{30 / d['std']:.2f}", f"{z:.2f}"],
                 ['P(|q . k| > 30)', f"{d['beyond']:.3%}", f"{normal_beyond(z):.3%}"],
                 [_('keys beyond ±30 in a row of 512'), f"{512 * d['beyond']:.1f}", f"{512 * normal_beyond(z):.1f}"],
                 [_('largest |q . k| in a row of 512 (mean)'), f"{d['row_max']:.1f}", '']]))
    print(_("30 is {z:.2f} standard deviations: about {beyond:.1%} of the scores pass it, but a row of 512 keys "
            "typically holds\na few, and its largest is about {top:.0f}.  '±30' is the reach of a row, not "
            "the typical score (68% lie within ±11.3): it holds.").format(z=z, beyond=d['beyond'], top=d['row_max']))
    claims.record('architecture', '2.4.1', 'd_k = 128 时标准差是 √128 ≈ 11.3，意味着点积数值会散布在 ±30 这种很大的范围',
                  'holds', N_("30 is {z:.2f} standard deviations, passed by {beyond:.2%} of the scores (normal: "
                              "{normal:.2%}), {keys:.1f} keys in a row of 512, whose largest |q·k| is {top:.1f} on average"),
                  N_('part 1: the table "measured, normal distribution"'), z=z, beyond=d['beyond'],
                  normal=normal_beyond(z), keys=512 * d['beyond'], top=d['row_max'])

    pre = pre_ln_scores(device=device)
    print("\n" + _("2. Alternatives to the scale ({cite}).  Pre-LN: one head on LayerNorm(x), no scale\n   (scale = 1), "
                   "default initialisation:").format(cite=cite('architecture', '2.4.2')))
    first = min(pre)
    print(table(['d_k', _('std of q . k'), 'std / sqrt(d_k)', _('growth since d_k = {first}').format(first=first)],
                [[d_k, s, s / math.sqrt(d_k), f"{s / pre[first]:.1f}x (sqrt: {math.sqrt(d_k / first):.1f}x)"]
                 for d_k, s in pre.items()]))
    print(_("LayerNorm fixes each token's scale, but the scores still grow like sqrt(d_k): Pre-LN does not replace "
            "the scale,\nas the article says."))
    small = small_d_k(steps=steps * 2, seed=seed, device=device)
    print(_("A small d_k: the qkv_roles lookup (32 addresses, one head) with no scale at all:"))
    print(table(['d_k', _('std of q . k for unit q, k'), _('test accuracy')],
                [[d_k, f"{math.sqrt(d_k):.2f}", f"{acc:.1%}"] for d_k, acc in small.items()]))
    short = [d_k for d_k, acc in small.items() if acc < 0.9]
    print(_("(chance: 1/32 = 3.1%)  ") + (_("At d_k = {d_ks} the unscaled scores are harmless, but the head cannot hold "
                                            "32 addresses:\nthe capacity the article says it costs.").format(
        d_ks=', '.join(map(str, short))) if short else _("Every d_k tried held the 32 addresses: no capacity cost seen.")))
    claims.record('architecture', '2.4.2', '用 Layer Norm 归一化（Pre-LN） 严格说是「在 Attention 之前做归一化」，不是真的替换 √d_k',
                  'holds', N_("on LayerNorm(x) the unscaled scores still grow {growth:.1f}x from d_k = {first} to {last} "
                              "(sqrt: {sqrt:.0f}x)"), N_('part 2: the table "d_k, std of q . k, std / sqrt(d_k), growth"'),
                  growth=pre[max(pre)] / pre[first], first=first, last=max(pre), sqrt=math.sqrt(max(pre) / first))
    smalls = [small] + [small_d_k(steps=steps * 2, seed=s, device=device) for s in list(seeds)[1:]]
    d_ks = sorted(small)
    claims.record('architecture', '2.4.2', '直接限制 d_k 很小 等于直接限制模型容量', 'holds',
                  N_("unscaled, a one-head lookup of 32 addresses reaches {accs} at d_k = {d_ks} (scores harmless: std "
                     "of q·k for unit q, k is √d_k)"),
                  N_('part 2: the table "d_k, std of q . k for unit q, k, test accuracy"'),
                  seeds=claims.seeds_note(len(seeds)), d_ks=', '.join(map(str, d_ks)),
                  accs=i18n.joined([capacity(d_k, [run[d_k] for run in smalls]) for d_k in d_ks], N_("{first}, {second}")))

    trained = trained_scores(steps, seed, device)
    (p5, slope5), (p12, slope12), (p20, slope20) = (softmax_and_slope(x, device)
                                                    for x in ([5.0, -5.0], [1.2, -0.3], [20.0, -5.0]))
    print("\n" + _("3. 'Softmax inputs should be within -5 and +5' ({cite}).  The copy-the-previous-token model\n"
                   "   after {steps} Adam steps ({accuracy:.0%} test accuracy, weight on t-1 {back:.3f}):").format(
        cite=cite('attention', '2.3.3'), steps=steps, accuracy=trained['accuracy'], back=trained['back']))
    print(table([_('scaled scores'), _('value')],
                [[_('share within ±5'), f"{trained['within']:.1%}"], [_('largest |score|'), f"{trained['largest']:.2f}"],
                 [_('mean spread of a row (max - min)'), f"{trained['spread']:.2f}"]]))
    print(_("And inputs inside ±5 can still saturate: softmax(5, -5) = [{p0:.5f}, {p1:.5f}], gradient "
            "p(1 - p) = {slope:.1e}.\nSo ±5 is a rule of thumb for spotting a missing scale, not a guarantee: "
            "what sets the softmax's softness is the spread\nwithin a row, and a model that has learned a sharp "
            "pattern has a wide one on purpose.").format(p0=p5[0], p1=p5[1], slope=slope5))
    runs = [trained] + [trained_scores(steps, s, device) for s in list(seeds)[1:]]
    claims.record('attention', '2.3.3', 'Softmax 输入的范围（应该在 -5 到 +5 之间）', 'partly',
                  N_("a rule of thumb for a missing scale, no more: a trained copy-the-previous-token model has {within} "
                     "of its scaled scores within ±5, its largest {largest}, and it learned the task ({acc}); and "
                     "softmax(5, -5) is already saturated (gradient {slope:.1e})"), N_('part 3'),
                  seeds=claims.seeds_note(len(runs)), within=claims.spread([r['within'] for r in runs]),
                  largest=claims.between([r['largest'] for r in runs], '.1f'), acc=claims.spread([r['accuracy'] for r in runs]),
                  slope=slope5)

    print("\n" + _("4. The two examples of {cite}, computed:").format(cite=cite('deep_dive', '1.5')))
    print(table(['x', 'softmax(x)', 'dp_1/dx_1 = p_1 (1 - p_1)'],
                [['(1.2, -0.3)', f"[{p12[0]:.3f}, {p12[1]:.3f}]", f"{slope12:.4f}"],
                 ['(20, -5)', f"[{p20[0]:.12f}, {p20[1]:.1e}]", f"{slope20:.1e}"]]))
    print(_("softmax(1.2, -0.3) = [{p0:.3f}, {p1:.3f}], whose gradient {slope:.3f} is near the largest "
            "possible, 0.25;\nsoftmax(20, -5) is one-hot to 11 decimals (the article's [0.999, 0.000]\nunderstates "
            "it), and its gradient is {slope20:.0e}: both claims hold.").format(p0=p12[0], p1=p12[1], slope=slope12,
                                                                                slope20=slope20))
    claims.record('deep_dive', '1.5', 'Softmax 的输入如果太大（比如有 20 和 -5），输出就接近 one-hot（[0.999, 0.000...]）',
                  'holds', N_("softmax(20, -5) = [{p0:.12f}, {p1:.1e}], its gradient {slope:.1e}"), N_('part 4'),
                  p0=p20[0], p1=p20[1], slope=slope20)
    claims.record('deep_dive', '1.5', '输入适中（比如 1.2 和 -0.3），Softmax 输出"软"而平滑——梯度信息丰富', 'holds',
                  N_("softmax(1.2, -0.3) = [{p0:.3f}, {p1:.3f}], its gradient p(1 - p) = {slope:.3f} (at most 0.25)"),
                  N_('part 4'), p0=p12[0], p1=p12[1], slope=slope12)
    return {'device': trained['device'], 'dot': d, 'pre_ln': pre, 'small_d_k': small, 'trained': trained, 'softmax': {
        (5.0, -5.0): (p5, slope5), (1.2, -0.3): (p12, slope12), (20.0, -5.0): (p20, slope20)}}


def main(argv=None):
    options = options_of(run, rows=N_('rows of 512 random (q, k) pairs at d_k = 128'),
                         steps=N_('Adam steps of the trainings'), seed=N_('random seed'),
                         full=N_('2000 rows; the trainings over 5 seeds'))
    return run_lesson(run, command_line('scale_alternatives', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    pairs = budget.dense(2 * a['rows'] * 512 * 128, a['rows'] * 512 * 128, steps=a['rows'])
    trainings = a.get('seeds', 1) * budget.Cost(0, 0, 4 * 2 * a['steps'] + a['steps'])  # four small d_k, then one
    return budget.refuse({'--rows': a['rows'], '--steps': a['steps']}, pairs + trainings, args.device)


if __name__ == '__main__':
    main()
