"""Lesson: the residual stream -- how much of x_0 is left after many layers, and how deep a net trains.

1. The attention article (§2.3.5 E) tabulates the residual stream: at layers 1, 10, 50 and 96
   "original information kept: 100%", "new context information: 5%, 30%, 60%, 90%", with
   "the original information is always kept 100% (by the residual connection)".  The deep
   dive, on its own 猫 吃 鱼 trace (§7.3 (d)), measures cos(猫₀, 猫₁) = 0.4227 after one
   Post-LN layer: "猫 still keeps 42% of its original meaning, 吃 and 鱼 only 12-13%".
   Measured here: cos(x_0, x_l), the share of x_0's direction in the stream, and
   |x_l - x_0| / |x_0|, what the layers added, through 96 Pre-LN and 96 Post-LN EncoderLayers
   (d_model = 64, 4 heads, fresh initialisation: a structural claim should hold for any
   weights); and the deep dive's X0 through one Post-LN EncoderLayer of its sizes (d_model = 12,
   3 heads, d_ff = 48) over 20 random initialisations, beside cos(X0, LayerNorm(X0)).
2. Depth (the deep dive §4.1: "before ResNet, deep networks (56 layers) had higher training
   and test error than shallow ones (20 layers) -- not overfitting: they could not learn";
   the attention article §2.3.5 C: trainable depth "< 20 layers" without residuals, "> 100
   layers" with them).  A trainability sweep: MLPs of width 32 fit a fixed random teacher
   network, the plain blocks x <- LayerNorm(relu(x W + b)) against residual ones
   x <- x + relu(LayerNorm(x)) W + b, same Adam, same data, more and more blocks.  The error is
   the final mean squared error over the target's variance (1 = predicting the mean).

    python -m demos.residual_stream            # depths 2, 8, 24 (run time: end of --help)
    python -m demos.residual_stream --full     # depths 2, 8, 24, 110 over 5 seeds
"""
import statistics

import microtensor as mt
from microtensor import nn
from microtensor.i18n import N_, _
from transformer import EncoderLayer, LayerNorm, Projection
from transformer import article_data as article

from . import article_trace
from . import budget, claims
from .articles import cite
from .figures import outcome, series
from .report import command_line, options_of, run_lesson, save_lines, table
from .toy_training import fit

SECTIONS = [('attention', '2.3.5'), ('deep_dive', '4.1'), ('deep_dive', '7.3')]
STREAM_TABLE = {1: 0.05, 10: 0.30, 50: 0.60, 96: 0.90}       # §2.3.5 E: "new context information" per layer
COS_X0_X1_PRINTED = {'猫': 0.4227, '吃': 0.1219, '鱼': 0.1317}  # the deep dive §7.3 (d): cos(word₀, word₁)


def cosine(a, b):
    """cos of the rows of a and b (..., d) -> (...)."""
    return (a * b).sum(axis=-1) / ((a * a).sum(axis=-1).sqrt() * (b * b).sum(axis=-1).sqrt())


# ---------------------------------------------------------------------------- 1. what stays of x_0
def stream(norm, n_layers=96, d_model=64, n_heads=4, B=4, n=8, at=tuple(STREAM_TABLE), seed=0, device='cpu'):
    """{layer l: (mean cos(x_0, x_l), |x_l - x_0| / |x_0|)} through n_layers EncoderLayers (no final norm)."""
    mt.manual_seed(seed)
    layers = [EncoderLayer(d_model, n_heads, norm=norm).to(device) for _ in range(n_layers)]
    x0 = mt.randn(B, n, d_model).to(device)
    x, out = x0, {}
    with mt.no_grad():
        for l, layer in enumerate(layers, 1):
            x = layer(x)
            if l in at:
                added = ((x - x0) ** 2).sum().sqrt() / (x0 ** 2).sum().sqrt()
                out[l] = (cosine(x0, x).mean().item(), added.item())
    return out


def article_layer(seeds=20, device='cpu'):
    """The deep dive's X0 (3, 12) through one Post-LN EncoderLayer(12, 3, 48), float64, over `seeds`
    initialisations: {word: (mean, min, max) of cos(X0, X1)}, and {word: cos(X0, LayerNorm(X0))}."""
    X0 = mt.tensor(article_trace.x0(device=device), dtype='float64', device=device)[None]   # (1, 3, 12)
    values = []
    for seed in range(seeds):
        mt.manual_seed(seed)
        layer = EncoderLayer(article.D_MODEL, article.N_HEADS, article.D_FF, norm='post').to(device, dtype='float64')
        with mt.no_grad():
            values.append(cosine(X0, layer(X0))[0].tolist())
    with mt.no_grad():
        normed = cosine(X0, LayerNorm(article.D_MODEL).to(device, dtype='float64')(X0))[0].tolist()
    return ({w: (statistics.mean(v[i] for v in values), min(v[i] for v in values), max(v[i] for v in values))
             for i, w in enumerate(article.TOKENS)}, dict(zip(article.TOKENS, normed)))


# ---------------------------------------------------------------------------- 2. how deep trains
class Block(nn.Module):
    """residual: x + relu(LayerNorm(x)) W + b;  plain: LayerNorm(relu(x W + b)).  (B, d) -> (B, d)."""

    def __init__(self, d, residual):
        super().__init__()
        self.norm, self.linear, self.residual = LayerNorm(d), Projection(d, d), residual

    def forward(self, x):
        if self.residual:
            return x + self.linear(self.norm(x).relu())
        return self.norm(self.linear(x).relu())


class DeepNet(nn.Module):
    """Linear(d_in, d) -> depth Blocks -> Linear(d, 1)."""

    def __init__(self, depth, residual, d=32, d_in=16):
        super().__init__()
        self.inp, self.out = Projection(d_in, d), Projection(d, 1)
        self.blocks = nn.ModuleList(Block(d, residual) for _ in range(depth))

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def mse(prediction, target):
    return ((prediction - target) ** 2).mean()


def depth_sweep(depths=(2, 8, 24), steps=150, n=512, B=64, seed=0, device='cpu'):
    """{'errors': {(depth, residual): final MSE / Var(target)}, 'device'} of DeepNets fitting a fixed random teacher
    (16 -> 64 tanh -> 1) on n points, with Adam (lr 1e-3), the same batches for every net."""
    mt.manual_seed(seed + 1000)
    teacher = nn.Sequential(Projection(16, 64), nn.Tanh(), Projection(64, 1)).to(device)
    X = mt.randn(n, 16).to(device)
    with mt.no_grad():
        Y = teacher(X)
    variance = Y.var(correction=0).item()
    out = {}
    for depth in depths:
        for residual in (False, True):
            mt.manual_seed(seed)
            net = DeepNet(depth, residual).to(device)
            fit(net, lambda step: (X[step * B % n:step * B % n + B], Y[step * B % n:step * B % n + B]), steps,
                'residual_stream', lr=1e-3, loss=mse)
            with mt.no_grad():
                out[depth, residual] = mse(net(X), Y).item() / variance
    return {'errors': out, 'device': net.out.weight.device}


def trains(error):
    """The sweep's verdict on one net: it learned if it explains at least half of the target's variance."""
    return error < 0.5


DEPTHS = (2, 8, 24)
FULL = dict(depths=(2, 8, 24, 110), steps=150, seeds=5)  # --full: up to 110 blocks, 5 seeds


def run(steps=150, seed=0, full=False, device='cpu'):
    depths, steps = (FULL['depths'], FULL['steps']) if full else (DEPTHS, steps)
    runs = {norm: stream(norm, seed=seed, device=device) for norm in ('pre', 'post')}
    print(_("1. What is left of x_0 after l EncoderLayers (d_model = 64, fresh weights); beside it {cite}'s\n"
            "   table E (original information 100% at every layer, plus the 'new' share):").format(
              cite=cite('attention', '2.3.5')))
    print(table([_('layer l'), _('article: kept'), _('article: new'), 'Pre-LN cos(x_0, x_l)', '|x_l - x_0| / |x_0|',
                 'Post-LN cos(x_0, x_l)', '|x_l - x_0| / |x_0|'],
                [[l, '100%', f"{new:.0%}", *(f"{v:.2f}" for v in runs['pre'][l]),
                  *(f"{v:.2f}" for v in runs['post'][l])] for l, new in STREAM_TABLE.items()]))
    pre_96, post_96 = runs['pre'][96], runs['post'][96]
    print(_("In Pre-LN x_l = x_0 + f_1 + ... + f_l: the x_0 term is never rescaled, but by layer 96 the layers have "
            "added {added:.1f}x its\nlength and x_0's direction is only cos = {pre:.2f} of the stream.  In Post-LN "
            "each LayerNorm rescales the sum: cos = {post:.2f}\nat layer 96, x_0 is gone.  '100% kept' is wrong as a "
            "measure: the term stays (Pre-LN), its share does not.").format(added=pre_96[1], pre=pre_96[0],
                                                                              post=post_96[0]))
    claims.record('attention', '2.3.5', '原始信息始终 100% 保留（通过残差连接）', 'partly',
                  N_("the x_0 term does stay in a Pre-LN stream (x_l = x_0 + f_1 + ... + f_l), but not its share: "
                     "through 96 fresh EncoderLayers cos(x_0, x_96) is {pre:.2f} (the layers add {added:.1f}x its "
                     "length), and {post:.2f} with Post-LN, whose LayerNorms rescale the sum every layer; whether x_0 "
                     "can still be read back from x_96 is not what cos measures: a probe trained to recover it would "
                     "test that"),
                  N_('part 1: the table "layer l, article: kept, ..., Pre-LN cos(x_0, x_l)"'), pre=pre_96[0],
                  added=pre_96[1], post=post_96[0])
    (layer, normed) = article_layer(device=device)
    print(_("\nThe deep dive's own trace, {cite} (d): cos(word₀, word₁) after one Post-LN layer (d_model = 12),\n"
            "printed vs 20 fresh initialisations of EncoderLayer(12, 3, 48, norm='post'), and LayerNorm alone, "
            "cos(X0, LN(X0)):").format(cite=cite('deep_dive', '7.3')))
    print(table([_('word'), _('article'), _('EncoderLayer: mean'), 'min', 'max', _('LayerNorm(X0) alone')],
                [[w, COS_X0_X1_PRINTED[w], *layer[w], normed[w]] for w in article.TOKENS], fmt='.3f'))
    print(_("The deep dive itself measures 42% (猫) and 12-13% (吃, 鱼) after one layer, not 100%; fresh layers give "
            "a similar\npicture (猫 keeps the most).  Much of it is LayerNorm alone: the article's embeddings are all "
            "positive, and\nsubtracting each row's mean turns the vector."))
    claims.record('deep_dive', '7.3', 'cos(猫₀, 猫₁) = 0.4227 … 「猫」还有 42% 的原始语义保留', 'holds',
                  N_("as a picture: fresh Post-LN EncoderLayer(12, 3, 48) on the article's X0 give {layer} for 猫 / 吃 / "
                     "鱼 (mean of 20; article {printed}), LayerNorm alone {normed}; it contradicts the attention "
                     "article's \"100% 保留\""), N_('part 1: the second table "word, article, EncoderLayer: mean"'),
                  layer=series([layer[w][0] for w in article.TOKENS], '.2f', sep=' / '),
                  printed=series([COS_X0_X1_PRINTED[w] for w in article.TOKENS], '.2f', sep=' / '),
                  normed=series([normed[w] for w in article.TOKENS], '.2f', sep=' / '))

    sweeps = [depth_sweep(depths, steps, seed=s, device=device) for s in range(seed, seed + (FULL['seeds'] if full else 1))]
    swept = sweeps[0]
    sweep = swept['errors']
    print(_("\n2. Trainability vs depth ({deep_dive}: 56 vs 20 layers; {attention} C: '< 20' vs '> 100' layers):\n"
            "   MLP blocks of width 32 fitting a random teacher, {steps} Adam steps; error = MSE / Var(target):"
            ).format(deep_dive=cite('deep_dive', '4.1'), attention=cite('attention', '2.3.5'), steps=steps))
    print(table([_('blocks'), _('plain: error'), _('learns?'), _('residual: error'), _('learns?')],
                [[d, sweep[d, False], _('yes') if trains(sweep[d, False]) else _('no'), sweep[d, True],
                  _('yes') if trains(sweep[d, True]) else _('no')] for d in depths]))
    plain_fails = [d for d in depths if not trains(sweep[d, False])]
    residual_fails = [d for d in depths if not trains(sweep[d, True])]
    print((_("The plain net stops learning at {blocks} blocks").format(blocks=plain_fails[0]) if plain_fails else
           _("The plain net stops learning at no depth tried")) +
          (_("; the residual one learns at every depth tried") if not residual_fails else
           _("; the residual one at {blocks}").format(blocks=residual_fails[0])) +
          _(" (deepest: {deepest}).\nDeeper plain nets do worse than shallower ones on the training data itself, as "
            "ResNet found at 56 vs 20 layers\n(there on images, with BatchNorm; here a toy): the article's story "
            "holds.").format(deepest=depths[-1]) +
          (_("\nResidual blocks train at {deepest}: the attention article's '> 100 layers' holds here.").format(
              deepest=depths[-1]) if full and not residual_fails else "" if full else
           _("  --full trains 110 blocks, 5 seeds.")))
    save_lines('residual_stream_depth', {_('plain'): [sweep[d, False] for d in depths],
                                         _('residual'): [sweep[d, True] for d in depths]}, _('blocks'),
               _('final MSE / Var(target)'), _('Trainability vs depth: plain vs residual blocks'), x=list(depths),
               logx=True)
    errors = {key: [run['errors'][key] for run in sweeps] for key in sweep}
    learning = {key: sum(map(trains, values)) for key, values in errors.items()}
    n, deepest = len(sweeps), depths[-1]
    fails = next((d for d in depths if learning[d, False] < n), None)
    look = N_('part 2: the table "blocks, plain: error, learns?, residual: error, learns?"')
    seeds_note = claims.seeds_note(n)
    claims.record('attention', '2.3.5', ['无残差 … < 20 层', '有残差 … > 100 层'],
                  'holds' if deepest > 100 and learning[deepest, True] == n and fails and fails <= 24 else 'partly',
                  N_("on a toy: plain MLP blocks stop learning at {fails} (error {plain} of the target's variance, "
                     "learned in {plain_n} of {n} seeds); residual blocks at {deepest}: error {res}, learned in "
                     "{res_n} of {n}") if deepest > 100 else
                  N_("on a toy: plain MLP blocks stop learning at {fails} (error {plain} of the target's variance, "
                     "learned in {plain_n} of {n} seeds); residual blocks at {deepest}: error {res}, learned in "
                     "{res_n} of {n}; `--full` trains 110 blocks"), look, seeds=seeds_note, fails=fails,
                  plain=outcome(errors[fails, False], '.2f', n, above=0.5, bound_spec='g') if fails else None, n=n,
                  deepest=deepest,
                  plain_n=learning[fails, False] if fails else None, res=outcome(errors[deepest, True], '.2f', n, below=0.2, bound_spec='g'),
                  res_n=learning[deepest, True])
    shallow = [d for d in depths if d < (fails or deepest)]
    claims.record('deep_dive', '4.1', '深层网络（56 层）的训练误差和测试误差都比浅层网络（20 层）高——不是过拟合…而是根本学不动',
                  'holds' if fails else 'partly',
                  N_("on a toy: plain MLP blocks fit a random teacher to {shallow_err} of its variance at {shallow} "
                     "blocks, {deep_err} at {fails} (training error); residual blocks {res_err}"), look,
                  seeds=seeds_note, shallow=' to '.join(map(str, shallow[::max(1, len(shallow) - 1)])), fails=fails,
                  shallow_err=outcome([e for d in shallow for e in errors[d, False]], '.2f', n, below=0.2,
                                      bound_spec='g'),
                  deep_err=outcome(errors[fails, False], '.2f', n, above=0.5, bound_spec='g') if fails else None,
                  res_err=outcome([e for d in depths for e in errors[d, True]], '.2f', n, below=0.2, bound_spec='g'))
    return {'device': swept['device'], 'stream': runs, 'article_layer': layer, 'layernorm_alone': normed,
            'sweep': sweep, 'plain_fails': plain_fails, 'residual_fails': residual_fails}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each net in the depth sweep'), seed=N_('random seed'),
                         full=N_('depths 2, 8, 24 and 110, 5 seeds'))
    return run_lesson(run, command_line('residual_stream', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    depths, steps = (FULL['depths'], FULL['steps']) if args.full else (DEPTHS, args.steps)
    # two nets per depth (with and without the residual), each step through every layer
    seeds = FULL['seeds'] if args.full else 1
    return budget.refuse({'--steps': steps}, budget.Cost(0, 0, 2 * seeds * steps * sum(depths)), args.device)


if __name__ == '__main__':
    main()
