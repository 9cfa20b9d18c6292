"""Lesson: the feed-forward network -- why it needs its activation, GELU vs ReLU, and where the parameters are.

The deep dive (§6.1): FFN(x) = GELU(x W_1 + b_1) W_2 + b_2, d_ff = 4 d_model.
"The activation introduces the non-linearity.  Without it, two stacked linear maps are one
linear map -- 'the composition of two linear layers is still a linear layer': stacking
them is wasted."  "The original paper uses ReLU; modern implementations have moved to GELU
... smoother, friendlier to gradient flow."  The architecture article: the FFN "usually
holds the bulk of the model's parameters (its hidden width is 4 x d_model)", and
multi-head attention with d_k = d_model / h "keeps the parameter count the same as one head".

1. Without the activation, (x W_1 + b_1) W_2 + b_2 = x (W_1 W_2) + (b_1 W_2 + b_2): one Linear
   whose matrix is the product -- computed here from a FeedForward's own weights.
2. What that costs: an FFN learns |x| (elementwise, x ~ N(0, 1)).  The best any linear map
   can do is predict the mean, E|x| = sqrt(2/pi), for a mean squared error of
   Var|x| = 1 - 2/pi = 0.363; with ReLU |x| = relu(x) + relu(-x) is exact.
3. GELU vs ReLU: the same FFN on |x| (ReLU's own shape) and on sin(2x) (smooth), and a tiny
   GPT on the copy task, with each activation.
4. The parameter counts of an EncoderLayer (d_model = 512, h = 8) and of MultiHeadAttention
   with 1, 8 and 64 heads, counted from the modules.

    python -m demos.feedforward            # the defaults (run time: end of --help)
    python -m demos.feedforward --full     # 3 seeds for every comparison, longer training
"""
import math
import random

import microtensor as mt
from microtensor import i18n, nn, optim
from microtensor.i18n import N_, _
from transformer import EncoderLayer, FeedForward, GPT, MultiHeadAttention, Projection

from . import budget, claims
from .copy_task import VOCAB, copy_batch, copy_loss
from .figures import below
from .report import check_loss, command_line, options_of, run_lesson, save_lines, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '6.1'), ('architecture', '2.7'), ('architecture', '2.3.3'), ('architecture', '2.10.4')]
FULL = dict(steps=1000, copy_steps=400, seeds=5)  # --full
TARGETS = {'|x|': lambda x: x.abs(), 'sin(2x)': lambda x: (2 * x).sin()}


# ---------------------------------------------------------------------------- 1. the collapse
def linear_ffn(ffn, x):
    """The FFN with its activation removed: W_2(W_1(x))."""
    return ffn.W_2(ffn.W_1(x))


def collapse(d_model=8, d_ff=32, seed=0, device='cpu'):
    """The single Linear equal to a FeedForward without activation, and the largest difference (float64)."""
    mt.manual_seed(seed)  # weights and data drawn on the CPU and moved: the same numbers on every device
    ffn = FeedForward(d_model, d_ff).to(device, dtype='float64')
    single = Projection(d_model, d_model).to(device, dtype='float64')
    single.weight.data = (ffn.W_1.weight @ ffn.W_2.weight).data                  # (d_model, d_model)
    single.bias.data = (ffn.W_1.bias @ ffn.W_2.weight + ffn.W_2.bias).data       # (d_model,)
    x = mt.randn(4, 6, d_model, dtype='float64').to(device)
    with mt.no_grad():
        gap = (linear_ffn(ffn, x) - single(x)).abs().max().item()
        with_activation = (ffn(x) - single(x)).abs().max().item()
    return {'gap': gap, 'with_activation_gap': with_activation, 'ffn_params': ffn.num_parameters(),
            'single_params': single.num_parameters()}


# ---------------------------------------------------------------------------- 2-3. fitting a function
def fit(target, activation, steps=300, d_model=8, d_ff=32, B=256, lr=1e-2, seed=0, device='cpu'):
    """MSE per step of a FeedForward (activation 'relu', 'gelu' or None: removed) learning y = target(x)."""
    mt.manual_seed(seed)
    ffn = FeedForward(d_model, d_ff, activation=activation or 'relu').to(device)
    opt = optim.Adam(ffn.parameters(), lr=lr)
    losses = []
    for step in range(1, steps + 1):
        x = mt.randn(B, d_model, device=device)
        y = ffn(x) if activation else linear_ffn(ffn, x)
        loss = ((y - TARGETS[target](x)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(check_loss(loss.item(), step, 'feedforward'))
    return losses


def train_copy(activation, steps=150, half=6, B=16, lr=3e-3, seed=0, device='cpu'):
    """Copy-task losses of a 2-layer GPT whose FFNs use `activation`."""
    mt.manual_seed(seed)
    rng = random.Random(seed)
    model = GPT(VOCAB, d_model=32, n_layers=2, n_heads=4, max_len=2 * half, init_std=0.1,
                activation=activation).to(device)
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(1, steps + 1):
        ids = copy_batch(rng, B, half, device)
        loss = copy_loss(model(ids), ids, half)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(check_loss(loss.item(), step, 'feedforward'))
    return losses


# ---------------------------------------------------------------------------- 4. parameter counts
def parameter_counts(d_model=512, n_heads=8, device='cpu'):
    """Parameters of an EncoderLayer's parts and of MultiHeadAttention with 1, 8 and 64 heads, counted from
    the modules (built on `device`: the count is the same on every device)."""
    layer = EncoderLayer(d_model, n_heads).to(device)
    attention, ffn = layer.self_attn.num_parameters(), layer.ffn.num_parameters()
    norms = layer.norm1.num_parameters() + layer.norm2.num_parameters()
    heads = {h: MultiHeadAttention(d_model, h).to(device).num_parameters() for h in (1, 8, 64)}
    return {'attention': attention, 'ffn': ffn, 'norms': norms, 'layer': layer.num_parameters(), 'heads': heads,
            'd_model': d_model, 'n_heads': n_heads, 'device': layer.parameters()[0].device}


def _tail(losses, n=20):
    return sum(losses[-n:]) / n


def run(steps=300, copy_steps=150, seeds=1, full=False, device='cpu'):
    if full:
        steps, copy_steps, seeds = FULL['steps'], FULL['copy_steps'], FULL['seeds']
    c = collapse(device=device)
    print(_("1. The deep dive's '两个线性层的复合还是线性层' (§6.1): a FeedForward(8, 32) without its activation vs\n"
            "   one Linear(8, 8) with W = W_1 W_2, "
            "b = b_1 W_2 + b_2 (float64):"))
    print(table(['', _('max |difference|'), _('parameters')],
                [[_('W_2(W_1(x)) vs the single Linear'), below(c['gap'], 1e-12), f"{c['ffn_params']} vs {c['single_params']}"],
                 [_('with the activation (GELU) vs it'), f"{c['with_activation_gap']:.2f}", '']]))

    seed_count = (_("{n} seeds") if seeds > 1 else _("{n} seed")).format(n=seeds)
    print("\n" + _("2-3. An FFN (8 -> 32 -> 8) learns a function elementwise, x ~ N(0, 1), Adam, {steps} steps, "
                   "{seed_count}: mean squared error over the last 20 steps").format(steps=steps, seed_count=seed_count))
    curves = {(t, a): [fit(t, a, steps, seed=s, device=device) for s in range(seeds)]
              for t in TARGETS for a in (None, 'relu', 'gelu')}
    final = {k: sum(_tail(r) for r in runs) / seeds for k, runs in curves.items()}
    plateau = 1 - 2 / math.pi
    print(table([_('target'), _('no activation'), 'ReLU', 'GELU', _('best linear map')],
                [[t, final[t, None], final[t, 'relu'], final[t, 'gelu'],
                  f"{plateau:.4f}" if t == '|x|' else f"{_sin_plateau():.4f}"] for t in TARGETS], fmt='.4f'))
    print(_("Without the activation the FFN is a linear map and cannot go below the best linear fit (|x|: 1 - 2/pi\n"
            "= {plateau:.3f}; sin(2x): Var - Cov^2 = {sin_plateau:.3f}), however long it trains; with one it goes on "
            "down.").format(plateau=plateau, sin_plateau=_sin_plateau()))

    copy = {a: [train_copy(a, copy_steps, seed=s, device=device) for s in range(seeds)] for a in ('relu', 'gelu')}
    copy_final = {a: sum(_tail(r, 10) for r in runs) / seeds for a, runs in copy.items()}
    print(_("A 2-layer GPT on the copy task, {steps} steps: final loss ReLU {relu:.4f}, "
            "GELU {gelu:.4f} (chance {chance:.2f})").format(steps=copy_steps, relu=copy_final['relu'],
                                                              gelu=copy_final['gelu'], chance=math.log(VOCAB)))
    winner = {t: 'ReLU' if final[t, 'relu'] < final[t, 'gelu'] else 'GELU' for t in TARGETS}
    winner['copy'] = 'ReLU' if copy_final['relu'] < copy_final['gelu'] else 'GELU'
    task = {**{t: t for t in TARGETS}, 'copy': _('copy')}
    print(_("Lower loss: {winners}.  ").format(winners=', '.join(f'{task[t]}: {w}' for t, w in winner.items()))
          + (_("{activation} is ahead on all three here").format(activation=winner['copy'])
             if len(set(winner.values())) == 1 else _("Neither activation wins everywhere"))
          + _(": the article's case for GELU (a smooth\ncurve, friendlier gradients in deep networks) is not "
              "something these small tasks can confirm."))
    claims.record('deep_dive', '6.1', '如果没有它，两层线性变换叠加 = 一层线性变换', 'holds',
                  N_("W_2(W_1 x) equals one Linear with W_1 W_2 (difference {gap}); without the activation the FFN stays at the "
                     "best linear fit (|x|: {none:.4f} vs {plateau:.4f}) while ReLU reaches {relu:.4f}; `train_xor`'s "
                     "MLP is such a pair of Linears around tanh, and solves XOR, which no linear map can"),
                  N_('part 1 and the table "target, no activation, ReLU, GELU, best linear map"'), seeds=claims.seeds_note(seeds),
                  gap=below(c['gap'], 1e-12), none=final['|x|', None], plateau=plateau, relu=final['|x|', 'relu'])
    claims.record('deep_dive', '6.1', 'GELU 比 ReLU 更平滑…这种平滑性对深层网络的梯度流动更友好', 'not tested by this task',
                  N_("on these small tasks the lower loss goes to {winners} (copy task: ReLU {relu:.4f}, GELU {gelu:.4f}); "
                     "smoothness for deep networks' gradient flow needs deep networks: what would test it is the gradient "
                     "norm through a deep stack (say 24+ layers) trained with each activation, over several seeds"),
                  N_('the line "Lower loss: ..."'), seeds=claims.seeds_note(seeds),
                  winners=i18n.joined([i18n.words(N_("{activation} on {task}"), activation=w,
                                                  task=i18n.words(N_('copy')) if t == 'copy' else t)
                                       for t, w in winner.items()], N_("{first}, {second}")), relu=copy_final['relu'],
                  gelu=copy_final['gelu'])

    p = parameter_counts(device=device)
    d, h = p['d_model'], p['n_heads']
    share = p['ffn'] / (p['attention'] + p['ffn'])
    print("\n" + _("4. The architecture article's 'FFN 通常占了模型参数的大头' (§2.7) and heads that cost one head's "
                   "parameters (§2.3.3):\n   parameters of EncoderLayer(d_model={d}, h={h}, d_ff={d_ff}), counted from the "
                   "modules:").format(d=d, h=h, d_ff=4 * d))
    print(table([_('part'), _('parameters'), _('formula'), _('share of the layer')],
                [[_('self-attention'), p['attention'], f"4 d^2 + 4 d = {4 * d * d + 4 * d}",
                  f"{100 * p['attention'] / p['layer']:.2f}%"],
                 ['FFN', p['ffn'], f"8 d^2 + 5 d = {8 * d * d + 5 * d}", f"{100 * p['ffn'] / p['layer']:.2f}%"],
                 [_('2 LayerNorms'), p['norms'], f"4 d = {4 * d}", f"{100 * p['norms'] / p['layer']:.2f}%"],
                 [_('layer'), p['layer'], '', '100%']]))
    print(_("FFN / (attention + FFN) = {share:.4f} (2/3 = {two_thirds:.4f}: weights 8d^2 against 4d^2, "
            "the biases 5d against 4d).").format(share=share, two_thirds=2 / 3))
    print(table(['MultiHeadAttention(512, h)', 'd_k', _('parameters')],
                [[f"h = {n}", d // n, v] for n, v in p['heads'].items()]))
    print(_("Every h gives the same count: the h heads' W_Q are the column blocks of one (d, d) matrix.  Had each\n"
            "head projected to the full d_model instead, h = {h} would cost {full:,} weights "
            "(3 h d^2 + h d^2), {h}x as many.").format(h=h, full=h * 3 * d * d + h * d * d))
    n = 128
    madds = {heads: 4 * n * d * d + heads * 2 * n * n * (d // heads) for heads in p['heads']}
    print(_("Multiply-adds of one forward pass over n = {n} tokens, 4 n d^2 (W_Q, W_K, W_V, W_O) + h 2 n^2 d_k "
            "(Q K^T and A V, per head):").format(n=n) + "\n" + table(['MultiHeadAttention(512, h)', _('multiply-adds')],
                                                 [[f"h = {heads}", v] for heads, v in madds.items()]))
    claims.record('architecture', '2.3.3', '让多头的总参数量和单头版本基本一致，不增加额外计算开销', 'holds',
                  N_("{params:,} parameters for h = {hs}, and {madds:,} multiply-adds over {n} tokens for each (h heads "
                     "of d_k = d_model / h: h 2 n^2 d_k = 2 n^2 d_model); the h heads' W_Q are column blocks of one "
                     "d_model x d_model matrix"), N_('part 4: the tables "MultiHeadAttention(512, h)"'),
                  params=p['heads'][1] if len(set(p['heads'].values())) == 1 else -1, hs=', '.join(map(str, p['heads'])),
                  madds=madds[1] if len(set(madds.values())) == 1 else -1, n=n)
    claims.record('architecture', '2.10.4', 'd_k = d_model/H 的设计让总参数量与单头基本持平', 'holds',
                  N_("the same {params:,} for every h; had each head projected to the full d_model, h = {h} would cost "
                     "{full:,} weights"), N_('part 4: the table "MultiHeadAttention(512, h), d_k, parameters"'),
                  params=p['heads'][h], h=h, full=h * 3 * d * d + h * d * d)
    claims.record('architecture', '2.7', 'FFN 通常占了模型参数的大头（隐藏层维度一般是 4 × d_model）', 'holds',
                  N_("{ffn:,} of an EncoderLayer's {layer:,} parameters ({share:.1%}, 2/3) at d_model = {d}; without its "
                     "activation the FFN is one Linear (difference {gap}) and cannot go below the best linear fit "
                     "(|x|: {none:.4f} vs {plateau:.4f})"), N_('part 4: the table "part, parameters, formula, share of '
                                                               'the layer"; parts 1-2'), ffn=p['ffn'], layer=p['layer'], share=p['ffn'] / p['layer'], d=d, gap=below(c['gap'], 1e-12),
                  none=final['|x|', None], plateau=plateau)

    save_lines('feedforward', {a or _('no activation'): [sum(r[i] for r in curves['|x|', a]) / seeds
                                                         for i in range(steps)] for a in (None, 'relu', 'gelu')},
               _('step'), _('mean squared error'), _('An FFN learning |x| (the best linear fit: 1 - 2/pi)'))
    return {'collapse': c, 'final': final, 'plateau': plateau, 'sin_plateau': _sin_plateau(),
            'copy_final': copy_final, 'params': p, 'ffn_share': share, 'device': p['device']}


def _sin_plateau():
    """The best linear fit's MSE for sin(2x), x ~ N(0, 1): Var(sin 2x) - Cov(x, sin 2x)^2 (mean 0, Var x = 1).
    E sin^2(2x) = (1 - e^{-8}) / 2, E[x sin 2x] = 2 e^{-2} (Gaussian identities)."""
    return (1 - math.exp(-8)) / 2 - (2 * math.exp(-2)) ** 2


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each FFN fit (parts 2-3)'), copy_steps=N_('Adam steps of each GPT'),
                         seeds=N_('seeds averaged per comparison'), full=N_('1000 / 400 steps, 5 seeds'))
    return run_lesson(run, command_line('feedforward', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    fit = budget.dense(256 * 32 * 4, 3 * 256 * 2 * 8 * 32 * a['steps'], a['steps'])  # B 256, 8 -> 32 -> 8, trained
    fits = len(TARGETS) * 3 * fit
    copies = 2 * budget.transformer(16, 12, d_model=32, n_layers=2, vocab=VOCAB, steps=a['copy_steps'])
    return budget.refuse({'--steps': a['steps'], '--copy-steps': a['copy_steps'], '--seeds': a['seeds']},
                         a['seeds'] * (fits + copies), args.device)


if __name__ == '__main__':
    main()
