"""Lesson: the articles' small numbers, each set beside what the library measures.

The deep dive states four quantities in passing:

1. §4.1: "each layer multiplies the gradient by its derivative (usually less than 1):
   through 20 layers it becomes 0.9^20 ≈ 12%, through 56 layers 0.9^56 ≈ 0.3%".  Beside
   it: the per-layer factor measured in a 24-layer encoder without residuals (the
   residual_highway lesson's stack), extrapolated to 20 and 56 layers.
2. §5.2: LayerNorm of x = [2, 8, -4, -6] (γ = [1.2, 0.8, 1.0, 1.5], β = [0.1, -0.1, 0, 0.2]):
   "the range goes from 14 to about 2.51: compressed nearly 6 times".
3. §5.3: BatchNorm over 32 sentences of 10 words "takes 32×10 = 320 values" per feature;
   "with batch size 2 only 20 values: the statistics are extremely unreliable".  Counted
   here, and the unreliability measured: the spread of BatchNorm1d's batch mean over many batches.
4. §8.1: "in practice a Transformer processes a 512-word sentence 10-100x faster than an
   RNN (depending on the sequence length and the hardware)": one self-attention layer against
   an RNN over the same 512 positions.  The verdict rests on what the graphs count (the longest
   chain of ops that must run one after another, the multiply-adds); the time of forward +
   backward on this machine is printed beside it, labelled as this machine's.

    python -m demos.small_numbers              # about 5 s
    python -m demos.small_numbers --repeats 7  # steadier timings
"""
import math
import statistics

import microtensor as mt
from microtensor import i18n
from microtensor.i18n import N_, _
from microtensor.inspect import graph_depth
from transformer import RNN, BatchNorm1d, LayerNorm, MultiHeadAttention
from transformer import article_data as article

from . import budget, claims
from .figures import measured, series
from .report import command_line, median_seconds, options_of, run_lesson, table
from .residual_highway import label, layer_gradients

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '4.1'), ('deep_dive', '5.2'), ('deep_dive', '5.3'), ('deep_dive', '8.1')]
SPEEDUP = {'inside': N_("inside the article's 10-100x"), 'below': N_("below the article's 10-100x"),
           'above': N_("above the article's 10-100x")}


# ---------------------------------------------------------------------------- 1. per-layer decay
def per_layer_factors(n_layers=24, seed=0, device='cpu'):
    """{(norm, residual): geometric mean of |dL/dx_l| / |dL/dx_(l+1)| over the stack} -- the per-layer factor."""
    out = {}
    for config in [('pre', False), ('post', False), ('pre', True), ('post', True)]:
        grads, _, _ = layer_gradients(*config, n_layers=n_layers, seed=seed, device=device)
        out[config] = (grads[0] / grads[-1]) ** (1 / (n_layers - 1))
    return out


# ---------------------------------------------------------------------------- 2. LayerNorm's range
def layernorm_ranges(device='cpu'):
    """(range of x, range of LayerNorm(x)) for the article's example (float64, eps = 0 as in the article)."""
    example = article.LAYERNORM_EXAMPLE
    ln = LayerNorm(len(example['x']), eps=example['eps']).to(device, dtype='float64')
    ln.gamma.data = mt.tensor(example['gamma'], dtype='float64', device=device).data
    ln.beta.data = mt.tensor(example['beta'], dtype='float64', device=device).data
    x = mt.tensor([example['x']], dtype='float64', device=device)
    with mt.no_grad():
        y = ln(x)
    spread = lambda t: (t.max() - t.min()).item()  # noqa: E731
    return spread(x), spread(y), y[0].tolist()


# ---------------------------------------------------------------------------- 3. BatchNorm's sample
def batchnorm_statistics(batch_sizes=(32, 2), n=10, d_model=8, n_batches=200, seed=0, device='cpu'):
    """{B: (values per statistic, std over n_batches of the batch mean of feature 0)} for data ~ N(0, 1).
    BatchNorm1d with momentum 1 stores the batch's own mean in running_mean."""
    mt.manual_seed(seed)
    out = {}
    for B in batch_sizes:
        bn = BatchNorm1d(d_model, momentum=1.0).to(device)
        means = []
        for _ in range(n_batches):
            x = mt.randn(B, n, d_model).to(device)  # drawn on the CPU: the same data on every device
            with mt.no_grad():
                bn(x)
            means.append(bn.running_mean[0].item())
        out[B] = (x.numel() // d_model, statistics.pstdev(means))
    return out


# ---------------------------------------------------------------------------- 4. attention vs RNN
def attention_vs_rnn(n=512, d_model=64, n_heads=4, B=1, repeats=3, seed=0, device='cpu'):
    """One MultiHeadAttention vs an RNN(d_model, d_model) over n positions: what the graphs count (the longest
    chain of ops of each forward pass, 'attention_chain' and 'rnn_chain', and the multiply-adds) and the
    median seconds of forward + backward on this machine ('attention', 'rnn')."""
    mt.manual_seed(seed)
    attention = MultiHeadAttention(d_model, n_heads).to(device)
    rnn = RNN(d_model, d_model).to(device)
    x = mt.randn(B, n, d_model, device=device, requires_grad=True)
    counts = {'attention_chain': graph_depth(attention(x)), 'rnn_chain': graph_depth(rnn(x)[0]),
              'attention_madds': 4 * n * d_model ** 2 + 2 * n * n * d_model, 'rnn_madds': 2 * n * d_model ** 2}

    def attend():
        attention(x).sum().backward()
        x.grad.sum().item()  # wait for the backward pass (a GPU returns before its work is done)

    def recur():
        rnn(x)[0].sum().backward()
        x.grad.sum().item()
    return {'attention': median_seconds(attend, repeats, warmup=1), 'rnn': median_seconds(recur, repeats, warmup=1),
            'device': x.grad.device, **counts}


def run(seq_len=512, n_layers=24, repeats=3, seed=0, device='cpu'):
    n = seq_len
    factors = per_layer_factors(n_layers, seed=seed, device=device)
    print(_("1. The gradient's shrink per layer: 0.9 (the deep dive, §4.1) vs measured in {n_layers} EncoderLayers, "
            "(|dL/dx_1| / |dL/dx_{n_layers}|)^(1/{exponent})\n   (Pre-LN: the attention article's Pre-Norm)").format(
        n_layers=n_layers, exponent=n_layers - 1))
    rows = [[_("the article's 0.9"), '0.900', f"{100 * 0.9 ** 20:.1f}%", f"{100 * 0.9 ** 56:.2f}%"]]
    rows += [[label(*c), f"{f:.3f}", f"{100 * f ** 20:.3g}%", f"{100 * f ** 56:.3g}%"] for c, f in factors.items()]
    print(table([_('stack'), _('per layer'), _('after 20 layers'), _('after 56 layers')], rows))
    grow = {c: f for c, f in factors.items() if c[1]}
    print(_("0.9^20 = {twenty:.4f} (≈ 12%) and 0.9^56 = {fifty_six:.4f} (≈ 0.3%): the article's arithmetic "
            "holds.  Without residuals\nthese layers shrink the gradient much faster than 0.9 per layer.  With them "
            "the factor is slightly above 1\n({factors}): each connection passes "
            "dL/dy (1 + dF/dx), the '+1' plus a little from F, so the gradient\ngrows gently towards the input "
            "instead of fading; {grown:.0f}% after 56 layers is that factor compounded, not "
            "a blow-up.\nThe article's 0.9 per layer describes a stack without residuals (the §4.1 ResNet story), "
            "and there it is optimistic.").format(twenty=0.9 ** 20, fifty_six=0.9 ** 56,
                                                  factors=', '.join(f'{f:.3f}' for f in grow.values()),
                                                  grown=100 * max(grow.values()) ** 56))
    claims.record('deep_dive', '4.1', '穿 20 层 → 梯度变成了 0.9^20 ≈ 12%。穿 56 层 → 0.9^56 ≈ 0.3%', 'holds',
                  N_("as arithmetic ({a:.4f}, {b:.4f})"), N_('part 1: the line "0.9^20 = ..."'), a=0.9 ** 20, b=0.9 ** 56)
    claims.record('deep_dive', '4.1', '每穿过一层，梯度乘以该层的导数（通常小于 1）', 'partly',
                  N_("0.9 per layer: measured in {L} EncoderLayers without residuals it is {pre_no:.2f} (Pre-LN) and "
                     "{post_no:.2f} (Post-LN), so the gradient fades much faster; with residuals it is {pre:.2f} and "
                     "{post:.2f}: the gradient even grows a little towards the input ({grown:.0%} after 56 layers, "
                     "compounded), it does not fade"),
                  N_('part 1: the table "stack, per layer, after 20 layers, after 56 layers"'), L=n_layers, pre_no=factors['pre', False], post_no=factors['post', False],
                  pre=factors['pre', True], post=factors['post', True], grown=max(grow.values()) ** 56)

    before, after, y = layernorm_ranges(device)
    print("\n" + _("2. LayerNorm of [2, 8, -4, -6] with the deep dive's γ, β (§5.2): y = [{y}]").format(
        y=', '.join(f'{v:.3f}' for v in y)))
    print(table(['', _('range')], [['x', f"{before:.3f}"], ['LayerNorm(x)', f"{after:.3f}"],
                                   [_('ratio'), f"{before / after:.2f}x"]]))
    print(_("The article says '压缩了将近 6 倍' (nearly 6 times): it is {ratio:.1f}x.").format(ratio=before / after))
    claims.record('deep_dive', '5.2', 'x = [2.0, 8.0, -4.0, -6.0] … = [0.538, 1.069, -0.730, -1.444]', 'holds',
                  N_("y = [{y}] against the printed one (the article rounds x̂ to 3 decimals first)"),
                  N_('part 2: "y = ..."'),
                  y=series(y, '.3f'))
    claims.record('deep_dive', '5.2', '跨度 14）…跨度 2.51），压缩了将近 6 倍', 'holds',
                  N_("{before:.0f} / {after:.3f} = {ratio:.2f}x"), N_('part 2: the table "range"'), before=before, after=after,
                  ratio=before / after)

    stats = batchnorm_statistics(device=device)
    print("\n" + _("3. BatchNorm1d (§5.3: 32 sentences x 10 words) on (B, 10 words, d) batches of N(0, 1) data: the values\n"
                   "   behind each feature's statistic, and how much the batch mean of one feature varies from batch to\n"
                   "   batch (200 batches; its true value is 0)"))
    print(table([_('batch size B'), _('values per statistic'), _('std of the batch mean'), _('1/sqrt(values)')],
                [[B, n, f"{s:.4f}", f"{1 / math.sqrt(n):.4f}"] for B, (n, s) in stats.items()]))
    (n_big, s_big), (n_small, s_small) = stats[32], stats[2]
    print(_("{n_big} and {n_small} values, as the article counts; with B = 2 the mean is {x:.1f}x "
            "noisier (sqrt({n_big}/{n_small}) = {root:.1f}).").format(n_big=n_big, n_small=n_small, x=s_small / s_big,
                                                                    root=math.sqrt(n_big / n_small)))
    claims.record('deep_dive', '5.3', ['取 32×10=320 个值', '如果 batch size=2，只取 20 个值算均值方差，统计量极其不可靠'],
                  'holds', N_("{n_big} and {n_small} values; the batch mean of a feature is {x:.1f}x noisier at B = 2 (std "
                              "{s_small:.3f} vs {s_big:.3f})"),
                  N_('part 3: the table "batch size B, values per statistic, ..."'),
                  n_big=n_big, n_small=n_small, x=s_small / s_big, s_small=s_small, s_big=s_big)

    timing = attention_vs_rnn(n, repeats=repeats, seed=seed, device=device)
    ratio = timing['rnn'] / timing['attention']
    chain = timing['rnn_chain'] / timing['attention_chain']
    arithmetic = timing['attention_madds'] / timing['rnn_madds']
    print("\n" + _("4. The deep dive's '快 10-100 倍' (§8.1): one layer over n = {n} positions, d_model = 64; the "
                   "chains and multiply-adds\n   counted on the graphs, the seconds (forward + backward) the median "
                   "of {repeats} runs on {device}:").format(n=n, repeats=repeats, device=device))
    print(table([_('layer'), _('longest chain of ops'), _('multiply-adds'), _('seconds')],
                [[_('self-attention (4 heads)'), timing['attention_chain'], f"{timing['attention_madds']:,}",
                  f"{timing['attention']:.4f}"],
                 [_('RNN (tanh), one step at a time'), timing['rnn_chain'], f"{timing['rnn_madds']:,}",
                  f"{timing['rnn']:.4f}"]]))
    verdict = ('inside' if 10 <= ratio <= 100 else 'below' if ratio < 10 else 'above')
    print(_("The RNN's ops must run one after another; attention's longest chain is {chain:.0f}x shorter, although "
            "it does\n{arithmetic:.0f}x the arithmetic (the n^2 scores).  Where each step's latency, not its "
            "arithmetic, sets the time,\nthat allows the article's 10-100x; how much of it a machine shows depends on "
            "the hardware, as the\narticle says.  Timed here: attention is {ratio:.1f}x faster, {verdict} ").format(
        chain=chain, arithmetic=arithmetic, ratio=ratio, verdict=_(SPEEDUP[verdict]))
          + (_("(here: numpy on CPU; a GPU favours the large products more).") if device == 'cpu' else
             _("(here: cupy on the GPU, which favours the large products more than a CPU does).")))
    claims.record('deep_dive', '8.1', 'Transformer 处理一个 512 词的句子比 RNN 快 10-100 倍（取决于序列长度和硬件）',
                  'holds' if chain >= 10 else 'partly',
                  N_("counted on the graphs over {n} positions: the RNN's forward pass is a chain of {rnn_chain} ops "
                     "that must run one after another, one attention layer's longest chain {att_chain} ({chain:.0f}x "
                     "shorter), though attention does {arithmetic:.0f}x the multiply-adds; so where each step's "
                     "latency, not its arithmetic, sets the time, 10-100x is within reach, as much of it as the "
                     "hardware allows (timed here, forward + backward on {device}: {ratio}x faster)"),
                  N_('part 4: the table "layer, longest chain of ops, multiply-adds, seconds"'), timing=True,
                  n=n, rnn_chain=timing['rnn_chain'], att_chain=timing['attention_chain'], chain=chain,
                  arithmetic=arithmetic, ratio=measured(ratio, '.1f'),
                  device=i18n.words(N_('numpy on a CPU') if device == 'cpu' else N_('cupy on a GPU')))
    return {'factors': factors, 'layernorm': (before, after), 'batchnorm': stats, 'timing': timing, 'speedup': ratio,
            'device': timing['device']}


def main(argv=None):
    options = options_of(run, seq_len=N_('positions n of the attention vs RNN timing'),
                         n_layers=(N_('EncoderLayers whose per-layer gradient factor is measured'), 2),
                         repeats=N_('timed runs (the median is shown)'), seed=N_('random seed'))
    return run_lesson(run, command_line('small_numbers', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    T = args.seq_len
    factors = 4 * budget.transformer(4, 8, d_model=16, n_layers=args.n_layers, heads=2)   # four stacks
    timing = (args.repeats + 1) * (budget.transformer(1, T, d_model=64, n_layers=1)
                                   + budget.dense(2 * T * 64, 3 * T * 64 * 64, steps=T))   # attention, then the RNN
    return budget.refuse({'--seq-len': T, '--n-layers': args.n_layers, '--repeats': args.repeats},
                         factors + timing, args.device)


if __name__ == '__main__':
    main()
