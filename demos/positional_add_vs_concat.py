"""Lesson: the sinusoidal position code -- do near positions look alike, and adding vs concatenating it.

1. The deep dive (§3.3): "neighbouring hats' stripes change continuously, so the model can see
   that positions 2 and 3 are close (1 apart) and positions 1 and 3 far (2 apart)".  The dot
   products PE_10 . PE_(10+k) for k = 0, 1, 2, 5, 40, at the deep dive's d_model = 12 and at 512.
   Because sin a sin b + cos a cos b = cos(a - b), PE_p . PE_(p+k) = sum_i cos(k w_i) does not
   depend on p at all (checked at p = 10 and p = 100): it is a function of the distance k only.
2. Add vs concatenate (the deep dive §3.4: "in practice Add is better than Concat ... concat
   makes the input d_model + d_pos wide, so the first layer's W^Q etc. grow"; the attention
   article §2.5.2: concatenating "doubles the dimension, needs an extra projection, adds
   parameters").  Parameters counted on the modules (an EncoderLayer at d_model = 512 against
   one at 1024, and the projection 1024 -> 512 that would bring it back); then three small
   models trained on the same task (copy the previous token, one attention layer, sinusoidal
   positions, 16 tokens): tokens + PE at width 16; tokens (8) ⊕ PE (8) at width 16; tokens (16) ⊕
   PE (16) at width 32.  And how much adding interferes: |cos(token embedding, PE row)|.

    python -m demos.positional_add_vs_concat            # the defaults (run time: end of --help)
    python -m demos.positional_add_vs_concat --full     # 1000 steps, three seeds
"""
import math

import microtensor as mt
from microtensor import nn
from microtensor.i18n import N_, _
from transformer import EncoderLayer, MultiHeadAttention, Projection, SinusoidalPositionalEncoding, TokenEmbedding

from . import budget, claims
from .figures import below
from .articles import cite
from .figures import series
from .report import command_line, options_of, run_lesson, table
from .toy_training import copy_previous, tail_mean

SECTIONS = [('deep_dive', '3.4'), ('deep_dive', '3.6'), ('attention', '2.5.2')]
OFFSETS = (0, 1, 2, 5, 40)


# ---------------------------------------------------------------------------- 1. near positions
def pe_dots(d_model, positions=(10, 100), offsets=OFFSETS, device='cpu'):
    """{p: [PE_p . PE_(p+k) for k in offsets]} (float64)."""
    pe = SinusoidalPositionalEncoding(d_model).table(max(positions) + max(offsets) + 1, dtype='float64',
                                                    device=device)
    return {p: [(pe[p] * pe[p + k]).sum().item() for k in offsets] for p in positions}


def first_rise(values):
    """The first index at which a sequence that should fall rises instead (None if it never does)."""
    return next((i for i in range(1, len(values)) if values[i] > values[i - 1]), None)


# ---------------------------------------------------------------------------- 2. add vs concat
class PositionedTokens(nn.Module):
    """ids (B, n) -> (B, n, width): 'add' = E[ids] + PE (width d_tok); 'concat' = [E[ids] ; PE] (d_tok + d_pos)."""

    def __init__(self, vocab, d_tok, mode, d_pos=None):
        super().__init__()
        self.tok, self.mode = TokenEmbedding(vocab, d_tok), mode
        self.pe = SinusoidalPositionalEncoding(d_tok if mode == 'add' else d_pos)
        self.width = d_tok if mode == 'add' else d_tok + d_pos

    def forward(self, ids):
        x = self.tok(ids)
        if self.mode == 'add':
            return self.pe(x)
        pe = self.pe.table(ids.shape[1], dtype=x.dtype, device=x.device)              # (n, d_pos)
        return mt.concatenate([x, pe.broadcast_to((ids.shape[0],) + pe.shape)], axis=-1)


class CopyPrevious(nn.Module):
    """logits = Linear(MultiHeadAttention(PositionedTokens(ids))): why_separate_qk's task, sinusoidal positions."""

    def __init__(self, embed, vocab=10):
        super().__init__()
        self.embed = embed
        self.attention = MultiHeadAttention(embed.width, 1)
        self.head = Projection(embed.width, vocab)

    def forward(self, ids):
        return self.head(self.attention(self.embed(ids)))


VARIANTS = {N_('add: tokens 16 + PE 16 -> 16'): dict(d_tok=16, mode='add'),
            N_('concat: tokens 8 ; PE 8 -> 16'): dict(d_tok=8, mode='concat', d_pos=8),
            N_('concat: tokens 16 ; PE 16 -> 32'): dict(d_tok=16, mode='concat', d_pos=16)}


def train_variant(options, steps=300, n=16, B=32, seed=0, device='cpu'):
    """(parameters, final loss, test accuracy, device) of CopyPrevious(PositionedTokens(**options)) trained with
    Adam."""
    mt.manual_seed(seed)
    model = CopyPrevious(PositionedTokens(10, **options)).to(device)
    losses, acc = copy_previous(model, steps, 'positional_add_vs_concat', n, B, seed=seed, device=device)
    return model.num_parameters(), tail_mean(losses), acc, model.head.weight.device


def interference(d_model, vocab=1000, n=64, seed=0, device='cpu'):
    """Mean |cos| between random token embeddings (N(0, 1)) and the PE rows 0 .. n-1, at width d_model."""
    mt.manual_seed(seed)
    E = mt.randn(vocab, d_model, dtype='float64').to(device)
    P = SinusoidalPositionalEncoding(d_model).table(n, dtype='float64', device=device)
    cos = (E @ P.T) / ((E * E).sum(axis=-1, keepdims=True).sqrt() * (P * P).sum(axis=-1).sqrt())
    return cos.abs().mean().item()


FULL = dict(steps=1000, seeds=5)  # --full


def run(steps=300, seed=0, full=False, device='cpu'):
    steps, seeds = (FULL['steps'], FULL['seeds']) if full else (steps, 1)
    dots = {d: pe_dots(d, device=device) for d in (12, 512)}
    print(_("1. PE_p . PE_(p+k), sinusoidal (the deep dive's d_model = 12, and 512), {cite}:").format(
        cite=cite('deep_dive', '3.3')))
    print(table(['d_model', 'p'] + [f"k = {k}" for k in OFFSETS],
                [[d, p] + values for d, by_p in dots.items() for p, values in by_p.items()], fmt='.3f'))
    rises = {d: first_rise(dots[d][10]) for d in dots}
    same = max(abs(a - b) for d in dots for a, b in zip(dots[d][10], dots[d][100]))
    print(_("Rows p = 10 and p = 100 differ by {same}: the dot product depends on the distance k only.").format(
        same=below(same, 1e-12)))
    for d, i in rises.items():
        print(_("d_model = {d}: it falls with k at every k shown: nearer positions look more alike.").format(d=d)
              if i is None else
              _("d_model = {d}: k = {k} ({dot:.3f}) looks more alike than k = {k_before} ({dot_before:.3f}): the "
                "fastest sin/cos pairs wrap around, and with only 6 pairs\n  nothing averages them out.").format(
                  d=d, k=OFFSETS[i], dot=dots[d][10][i], k_before=OFFSETS[i - 1], dot_before=dots[d][10][i - 1]))
    print(_("So 'nearer looks more alike' holds for a wide code and only roughly for the deep dive's 12 dimensions."))
    claims.record('deep_dive', '3.6', '相邻帽子上的条纹是连续变化的，所以模型能看出"第 2 位和第 3 位离得近（差 1），第 1 位和第 3 位离得远（差 2）"',
                  'partly' if rises[12] is not None else 'holds',
                  N_("PE_10 · PE_(10+k) depends on k only (p = 10 and 100 differ by {same}) and falls with k at "
                     "d_model = 512 ({wide} for k = {ks}); at the deep dive's d_model = 12, k = {k_up} ({up:.3f}) "
                     "looks more alike than k = {k_down} ({down:.3f})"), N_('part 1: the table "d_model, p, k = ..."'),
                  same=below(same, 1e-12), wide=series(dots[512][10], '.1f'), ks=', '.join(map(str, OFFSETS)),
                  k_up=OFFSETS[rises[12]] if rises[12] else None, up=dots[12][10][rises[12]] if rises[12] else 0.0,
                  k_down=OFFSETS[rises[12] - 1] if rises[12] else None,
                  down=dots[12][10][rises[12] - 1] if rises[12] else 0.0)

    layer_512, layer_1024 = (EncoderLayer(d, 8).num_parameters() for d in (512, 1024))
    back = Projection(1024, 512).num_parameters()
    print(_("\n2. Concatenating a 512-d PE to 512-d tokens ({deep_dive}, {attention}):").format(
        deep_dive=cite('deep_dive', '3.4'), attention=cite('attention', '2.5.2')))
    print(table(['', _('parameters')], [[_('EncoderLayer(d_model = 512, 8 heads)'), f"{layer_512:,}"],
                                        [_('EncoderLayer(d_model = 1024, 8 heads): every layer wider'),
                                         f"{layer_1024:,}"],
                                        [_('or one Linear(1024, 512) back to 512 first'), f"{back:,}"]]))
    print(_("Every wider layer has {x:.1f}x the parameters (the matrices are d_model x d_model); projecting back "
            "costs one extra\nmatrix, and that projection is itself a way of adding (it sums W_tok e + W_pos p).  "
            "The articles' cost argument holds.").format(x=layer_1024 / layer_512))
    claims.record('attention', '2.5.2', '如果是"拼接"？ 维度翻倍 需要额外投影 增加参数', 'holds',
                  N_("an EncoderLayer at 1024 has {wide:,} parameters against {narrow:,} at 512 ({x:.1f}x), or a "
                     "Linear(1024, 512) of {back:,} projects back"), N_('part 2: the table of parameters'),
                  wide=layer_1024, narrow=layer_512, x=layer_1024 / layer_512, back=back)
    results = {name: [train_variant(options, steps, seed=seed + s, device=device) for s in range(seeds)]
               for name, options in VARIANTS.items()}
    several = _(", {seeds} seeds").format(seeds=seeds) if seeds > 1 else ''
    print(_("Trained on copy-the-previous-token (16 tokens, 10 symbols, one layer, {steps} Adam steps{several}):")
          .format(steps=steps, several=several))
    print(table([_('embedding'), _('parameters'), _('final loss'), _('test accuracy')],
                [[_(name), r[0][0], sum(x[1] for x in r) / seeds, f"{100 * sum(x[2] for x in r) / seeds:.1f}%"]
                 for name, r in results.items()]))
    acc = {name: sum(x[2] for x in r) / seeds for name, r in results.items()}
    loss = {name: sum(x[1] for x in r) / seeds for name, r in results.items()}
    add_name, narrow_name, wide_name = VARIANTS
    tie = abs(acc[add_name] - acc[narrow_name]) < 0.01                 # within a point of accuracy
    print(_("(chance: 10%)  At the same width (16) adding ends at loss {add:.3f}, concatenating at {narrow:.3f}; "
            "concatenating at width 32, {wide:.4f}.").format(add=loss[add_name], narrow=loss[narrow_name],
                                                            wide=loss[wide_name]))
    print((_("'Add is better than Concat' (the deep dive gives no measurement) does not show here: at equal width\n"
             "the two learn the task equally well (within a point of accuracy).  ") if tie else
           _("'Add is better than Concat' (the deep dive gives no measurement) holds here at equal width.  ")
           if acc[add_name] > acc[narrow_name] else
           _("'Add is better than Concat' (the deep dive gives no measurement) does not show here: at equal width\n"
             "concatenating learned it better.  ")) +
          _("\nAdd's advantage is the cost above: both codes share the model's width, so nothing has to widen."))
    claims.record('deep_dive', '3.4', '实际效果：Add 比 Concat 好', 'partly',
                  N_("the cost argument holds (a 1024-wide layer has {x:.1f}x the parameters), but trained at equal "
                     "width (16) on copy-the-previous-token both learn ({add} adding, {concat} concatenating); the "
                     "article gives no measurement"),
                  N_('part 2: the table "embedding, parameters, final loss, test accuracy"'),
                  seeds=claims.seeds_note(seeds), x=layer_1024 / layer_512,
                  add=claims.spread([x[2] for x in results[add_name]]),
                  concat=claims.spread([x[2] for x in results[narrow_name]]))
    cos = {d: interference(d, seed=seed, device=device) for d in (16, 512)}
    print(_("Adding mixes the two codes in one space; how much they overlap:\nmean |cos(token embedding, PE row)| = "
            "{measured} (random directions: about sqrt(2 / (pi d)) = {random}):\nin a wide space the two hardly "
            "collide, in a narrow one they do.").format(
              measured=', '.join(_("{cos:.3f} at d = {d}").format(cos=c, d=d) for d, c in cos.items()),
              random=', '.join(f"{math.sqrt(2 / (math.pi * d)):.3f}" for d in cos)))
    return {'device': results[add_name][0][3], 'dots': dots, 'rises': rises, 'same': same,
            'parameters': (layer_512, layer_1024, back), 'training': results, 'accuracy': acc, 'interference': cos}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each training'), seed=N_('random seed'),
                         full=N_('1000 steps, five seeds'))
    return run_lesson(run, command_line('positional_add_vs_concat', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    steps, seeds = (FULL['steps'], FULL['seeds']) if args.full else (args.steps, 1)
    return budget.refuse({'--steps': steps}, len(VARIANTS) * seeds * budget.Cost(0, 0, steps), args.device)


if __name__ == '__main__':
    main()
