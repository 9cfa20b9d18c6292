"""Lesson: the article's 猫 吃 鱼 ("cat eats fish") trace, recomputed (the deep dive §7.1-7.3).

The article sends a 3-word sentence through a small encoder (d_model = 12, h = 3,
d_k = 4, d_ff = 48) and prints the numbers: "This is not a schematic.  This is a real
hand calculation: every number was actually computed."  It prints the embeddings, the
score matrices and the attention tables, but not its weight matrices, so what can be
recomputed is what follows from printed numbers alone:

1. The sinusoidal positional encoding (§7.2),
       PE[pos, 2i] = sin(pos / 10000^(2i/d_model)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)).
   Position 0 is [0, 1, 0, 1, ...] ("all even dimensions are sin(0) = 0, all odd ones
   cos(0) = 1").  For positions 1 and 2 the article prints 0.2338, 0.0096, 0.9999 and
   0.4228, 0.0193, 0.9998: typos.  The formula gives 0.2138, 0.0464, 0.9989 and 0.4177,
   0.0927, 0.9957, and the article's own X0 rows agree with the formula.
2. X0 = Embedding + PE (§7.2), first 4 dimensions: [0.21, 1.54, 0.13, 1.82],
   [1.22, 0.77, 1.12, 1.40], [1.64, -0.26, 0.87, 1.25].
3. Layer 1 attention (§7.3): the printed Q_i K_i^T of heads 1 and 2, "divided by
   sqrt(4) = 2" and softmaxed row by row, give exactly the printed tables.  Head 1 is "a
   uniform head" ("都在 30%-37%": in fact 27.6%-37.2%, by the article's own table), head 2
   "a semantic head: every word gives its highest attention to 鱼 (fish)".
4-5. The residual sum X_mid_raw = X0 + MHA(X0) and the cosine similarities of X0 (§7.3-7.4):
   see transformer/article_checks.py.

Everything goes through the library's own pieces: TokenEmbedding (loaded with the
article's vectors), SinusoidalPositionalEncoding, and mt.softmax, the op inside
scaled_dot_product_attention.  The numbers come from transformer/article_data.py.

    python -m demos.article_trace --device cuda      # the same numbers, computed on the GPU
"""
import math

import microtensor as mt
from microtensor import nn
from microtensor.i18n import N_, _
from transformer import Encoder, SinusoidalPositionalEncoding, TokenEmbedding
from transformer import article_checks, article_data as article

from . import claims
from .figures import series
from .report import command_line, options_of, run_lesson, save_heatmaps, save_viewer, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '7.1'), ('deep_dive', '7.2'), ('deep_dive', '7.3'), ('deep_dive', '7.4'), ('deep_dive', '7.6')]

ENGLISH = {'猫': 'cat', '吃': 'eats', '鱼': 'fish'}  # for plots: matplotlib's default font has no CJK


def positional_table(T=3, d_model=article.D_MODEL, device='cpu'):
    """PE rows 0 .. T-1 as lists (float64)."""
    return SinusoidalPositionalEncoding(d_model).table(T, dtype='float64', device=device).tolist()


def pe_typos(pe):
    """(pos, dim, printed, formula) wherever the article's printed PE differs from the formula at 4 decimals."""
    return [(pos, dim, printed, pe[pos][dim])
            for pos, row in article.PE_PRINTED.items()
            for dim, printed in enumerate(row) if round(pe[pos][dim], 4) != printed]


def x0(pe_rows=None, device='cpu'):
    """X0 = Embedding(猫 吃 鱼) + PE, (3, 12) as lists.  pe_rows: replace the formula's PE (to try the typos)."""
    embed = TokenEmbedding(len(article.TOKENS), article.D_MODEL).to(device)
    embed.weight.data = mt.tensor([article.EMBEDDINGS[w] for w in article.TOKENS], dtype='float64', device=device).data
    X = embed(mt.tensor([[0, 1, 2]], device=device))                   # (1, 3, 12)
    if pe_rows is None:
        X = SinusoidalPositionalEncoding(article.D_MODEL)(X)
    else:
        X = X + mt.tensor(pe_rows, dtype='float64', device=device)
    return X[0].tolist()


def attention_weights(head, device='cpu'):
    """softmax(S / sqrt(d_k)) row by row, for the article's printed layer-1 scores S of `head`; a (3, 3) tensor."""
    S = mt.tensor(article.LAYER1_SCORES[head], dtype='float64', device=device)
    return mt.softmax(S / math.sqrt(article.D_K), axis=-1)


def save_backward_viewer(seed=0, device='cpu'):
    """猫 吃 鱼 through the article's encoder (2 Post-LN layers, d_model 12, h 3, d_ff 48, GELU), backward.

    The input is the article's X0 = Embedding + PE; the article prints no weight matrices,
    so the layers' are random (seeded), and the loss is L = sum(output * G), G ~ N(0, 1):
    what a head above would send back.  Writes runs/article_trace.html; returns its path.
    """
    mt.manual_seed(seed)
    model = nn.Module()  # a container, so that mt.record_modules names every part
    model.embed = TokenEmbedding(len(article.TOKENS), article.D_MODEL)
    model.embed.weight.data = mt.tensor([article.EMBEDDINGS[w] for w in article.TOKENS]).data
    model.pe = SinusoidalPositionalEncoding(article.D_MODEL)
    model.encoder = Encoder(2, article.D_MODEL, article.N_HEADS, d_ff=article.D_FF, norm='post')
    model.to(device)
    with mt.record_modules(model):
        out = model.encoder(model.pe(model.embed(mt.tensor([[0, 1, 2]], device=device))))
    loss = (out * mt.randn(*out.shape).to(device)).sum()
    return save_viewer('article_trace', loss, _('猫 吃 鱼 through a 2-layer encoder (random weights)'), model)


def stream_shapes(X0, device='cpu', seed=0):
    """[(name, (tokens, width))] of X0 and of what each of 2 EncoderLayer(12, 3, 48, Post-LN) makes of it."""
    mt.manual_seed(seed)
    encoder = Encoder(2, article.D_MODEL, article.N_HEADS, d_ff=article.D_FF, norm='post').to(device)
    X = mt.tensor([X0], device=device)
    shapes = [('X0', tuple(X.shape[1:]))]
    with mt.no_grad():
        for i, layer in enumerate(encoder.layers, 1):
            shapes.append((f"MHA {i}", tuple(layer.self_attn(X).shape[1:])))
            shapes.append((f"FFN hidden {i}", tuple(layer.ffn.W_1(X).shape[1:])))
            X = layer(X)
            shapes.append((f"layer {i}", tuple(X.shape[1:])))
    return shapes


def _named(point):
    """A point of stream_shapes in the reader's language: 'layer 2' -> _('layer {i}') filled with 2."""
    kind, _space, i = point.rpartition(' ')
    return {'FFN hidden': _('FFN hidden {i}'), 'layer': _('layer {i}')}.get(kind, point).format(i=i)


def max_difference(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def _rows(matrix):
    return [[word] + list(row) for word, row in zip(article.TOKENS, matrix)]


def _vector(values):
    return '[' + ', '.join(f"{v:.2f}" for v in values) + ']'


def run(device='cpu', html=False):
    pe = positional_table(device=device)
    print(_("1. Sinusoidal PE (§7.2), d_model = 12:  PE[pos, 2i] = sin(pos / 10000^(2i/12)), PE[pos, 2i+1] = cos(...)"))
    print(table(['pos'] + [f"d{j}" for j in range(12)], [[pos] + row for pos, row in enumerate(pe)], fmt='.4f'))
    typos = pe_typos(pe)
    wrong = {(pos, dim) for pos, dim, _, _ in typos}
    print('\n' + _("The article's printed PE (the 6 dimensions it prints) vs the formula:"))
    print(table(['pos', 'dim', _('article'), _('formula'), ''],
                [[pos, dim, printed, pe[pos][dim], _('typo') if (pos, dim) in wrong else _('ok')]
                 for pos, row in article.PE_PRINTED.items() for dim, printed in enumerate(row)], fmt='.4f'))

    X0 = x0(device=device)
    printed_pe = [pe[0]] + [article.PE_PRINTED[p] + pe[p][6:] for p in (1, 2)]  # the typos in, the rest formula
    X0_with_typos = x0(printed_pe, device)
    print('\n' + _("2. X0 = Embedding + PE (§7.2), first 4 dimensions:"))
    print(table([_('word'), _('article'), _('with the formula PE'), _("with the article's PE")],
                [[word, _vector(article.X0_PRINTED[i]), _vector(X0[i][:4]), _vector(X0_with_typos[i][:4])]
                 for i, word in enumerate(article.TOKENS)]))
    agree = all(round(X0[i][d], 2) == article.X0_PRINTED[i][d] for i in range(3) for d in range(4))
    verdict = (_("The article's X0 matches the formula's PE; with its own printed PE (0.2338), 吃 dim 2 would be "
                 "{typo:.2f}, not {printed:.2f}.") if agree else
               _("The article's X0 does NOT match the formula's PE; with its own printed PE (0.2338), 吃 dim 2 would "
                 "be {typo:.2f}, not {printed:.2f}."))
    print(verdict.format(typo=X0_with_typos[1][2], printed=article.X0_PRINTED[1][2]))
    claims.record('deep_dive', '7.2', 'PE(吃, pos=1): [0.8415, 0.5403, 0.2338, 0.9769, 0.0096, 0.9999, ...]',
                  'the article is wrong', N_("in {n} places of PE(吃) and PE(鱼): the formula gives {formula}"),
                  N_('part 1: the table "pos, dim, article, formula" (rows marked typo)'), n=len(typos),
                  formula=series([v for _, _, _, v in typos], '.4f'))
    claims.record('deep_dive', '7.2', 'X₀(吃): [1.22, 0.77, 1.12, 1.40, ...]', 'holds' if agree else 'the article is wrong',
                  N_("the printed X0 follows from the formula's PE (with the printed typo, 吃 dim 2 would be "
                     "{typo:.2f}, not {printed:.2f})"), N_('part 2: the table "word, article, with the formula PE"'),
                  typo=X0_with_typos[1][2], printed=article.X0_PRINTED[1][2])

    print('\n' + _("3. Layer 1 attention (§7.3): A = softmax(Q K^T / sqrt(d_k)), d_k = 4, from the article's printed "
                    "Q K^T (heads numbered from 1, as the article numbers them)"))
    weights = {}
    for head in (1, 2):
        S = article.LAYER1_SCORES[head]
        weights[head] = attention_weights(head, device)
        A = weights[head].tolist()
        print('\n' + _("head {head}: Q K^T printed in the article | the same / sqrt(4)").format(head=head))
        print(table(['Q \\ K'] + article.TOKENS + ['|'] + article.TOKENS,
                    [r + ['|'] + [v / 2 for v in row] for r, row in zip(_rows(S), S)], fmt='.4f'))
        print(_("head {head}: A = softmax(Q K^T / 2) computed here | A printed in the article").format(head=head))
        print(table(['Q \\ K'] + article.TOKENS + ['|'] + article.TOKENS,
                    [r + ['|'] + printed for r, printed in zip(_rows(A), article.LAYER1_WEIGHTS[head])], fmt='.4f'))
        difference = max_difference(A, article.LAYER1_WEIGHTS[head])
        print(_("largest difference: {difference:.1e} (the article rounds to 4 decimals)").format(
            difference=difference))
    worst = max(max_difference(weights[h].tolist(), article.LAYER1_WEIGHTS[h]) for h in (1, 2))
    claims.record('deep_dive', '7.3', '除以 √4 = 2', 'holds',
                  N_("then softmax, for heads 1 and 2 from their printed Q K^T: equal to the printed tables within "
                     "{worst:.1e} (4 decimals)"), N_('part 3: "largest difference"'), worst=worst)
    sums = [sum(row) for h in (1, 2, 3) for row in article.LAYER1_WEIGHTS[h]]
    cat = dict(zip(article.TOKENS, article.LAYER1_WEIGHTS[2][0]))
    claims.record('deep_dive', '7.3', '「猫」（主语）把 47% 的注意力给了「鱼」（宾语），35% 给动词「吃」，只有 19% 给自己', 'holds',
                  N_("row 猫 of the printed A₂ is {fish:.2%} / {eat:.2%} / {me:.2%}; every printed row of the three "
                     "heads sums to {low:.4f}-{high:.4f}"), N_("part 3: head 2's tables"),
                  fish=cat['鱼'], eat=cat['吃'], me=cat['猫'],
                  low=min(sums), high=max(sums))
    words = [ENGLISH[w] for w in article.TOKENS]
    save_heatmaps('article_trace', {_("head {head}").format(head=head): weights[head].tolist() for head in weights},
                  words, words, _('Layer-1 attention A = softmax(Q K^T / 2): row = query, column = key'))
    uniform = weights[1].tolist()
    (low, low_at), (high, high_at) = (f(((v, (q, k)) for q, row in enumerate(uniform) for k, v in enumerate(row)))
                                      for f in (min, max))
    cell = lambda at: f"{article.TOKENS[at[0]]} -> {article.TOKENS[at[1]]}"  # noqa: E731
    print('\n' + _("Head 1 is near uniform (the article's 'uniform head'), but its weights are not all '在 30%-37%'\n"
                    "as the article says: they range over {low:.1f}% ({low_cell}) to {high:.1f}% ({high_cell}), by the "
                    "article's own table.\n"
                    "In head 2 every word puts its largest weight on 鱼 (its 'semantic head').  Head 3's scores and\n"
                    "layer 2's are not printed, nor are the weight matrices, so the attention cannot be recomputed "
                    "further.").format(low=100 * low, low_cell=cell(low_at), high=100 * high, high_cell=cell(high_at)))
    claims.record('deep_dive', '7.3', '头 1 的模式：近乎均匀。 每个词给三个词（包括自己）的注意力都在 30%-37%', 'partly',
                  N_("near uniform, yes; but its own table ranges over {low:.1%} ({low_cell}) to {high:.1%} ({high_cell}), "
                     "with {below} of its {cells} weights under 30%"),
                  N_('the paragraph "Head 1 is near uniform"'), low=low, high=high, low_cell=cell(low_at),
                  high_cell=cell(high_at), below=sum(v < 0.3 for row in uniform for v in row),
                  cells=sum(map(len, uniform)))
    column_means = lambda A: [sum(row[k] for row in A) / len(A) for k in range(len(A[0]))]  # noqa: E731
    layer1, layer2 = column_means(article.LAYER1_WEIGHTS[1]), column_means(article.LAYER2_WEIGHTS[1])
    print(_("Mean weight each word receives (column means), head 1: layer 1 {layer1}, layer 2 {layer2} (猫 / 吃 / 鱼, "
            "from the printed tables)").format(layer1=' / '.join(f'{v:.3f}' for v in layer1),
                                               layer2=' / '.join(f'{v:.3f}' for v in layer2)))
    claims.record('deep_dive', '7.4', '对比 Layer 1 Head 1（近乎均匀的 0.33/0.35/0.30）', 'partly',
                  N_("the printed A₁'s column means are {means}: near uniform, but the first is 0.35, not 0.33"),
                  N_('the line "Mean weight each word receives"'), means=series(layer1, '.3f', sep='/'))
    claims.record('deep_dive', '7.4', 'Layer 2 的 Head 1 呈现出明显的模式：「猫」权重最高（~44%），「鱼」最低（~18%）', 'holds',
                  N_("the printed Layer 2 Head 1 gives 猫 {cat:.1%} and 鱼 {fish:.1%} on average over the three "
                     "queries (every row: 猫 {cat_low:.1%}-{cat_high:.1%}, 鱼 {fish_low:.1%}-{fish_high:.1%})"),
                  N_('the line "Mean weight each word receives"'), cat=layer2[0], fish=layer2[2],
                  cat_low=min(r[0] for r in article.LAYER2_WEIGHTS[1]), cat_high=max(r[0] for r in article.LAYER2_WEIGHTS[1]),
                  fish_low=min(r[2] for r in article.LAYER2_WEIGHTS[1]),
                  fish_high=max(r[2] for r in article.LAYER2_WEIGHTS[1]))
    for title, header, rows in article_checks.tables(X0):  # the residual sum and the similarities (§7.3-7.4)
        print('\n' + title + '\n' + table(header, rows))
    x_mid = article_checks.residual_sum(X0)
    gap = max(abs(a - b) for row, printed in zip(x_mid, article.X_MID_RAW_PRINTED) for a, b in zip(row, printed))
    claims.record('deep_dive', '7.3', 'X_mid_raw = X_0 + MHA(X_0)', 'holds', N_("within {gap:.1e} of the printed rows"),
                  N_('part 4'), gap=gap)
    before, after = article_checks.cosine_similarities(X0), article.COS_X2_PRINTED
    changes = article_checks.relative_changes(article.COS_X0_PRINTED, after)
    top = max(changes, key=changes.get)
    claims.record('deep_dive', '7.4', '「猫」-「鱼」的相似度提升最大（从 0.73 到 0.91，提升 25%）',
                  'holds' if top == ('猫', '鱼') else 'the article is wrong',
                  N_("cos(猫₀, 鱼₀) = {x0:.4f} recomputed from all 12 dimensions, {x2:.4f} printed for X2: {rise:+.1%}, "
                     "the largest rise ({top}); X2 itself cannot be recomputed: only 4 of its 12 dimensions are printed "
                     "(X0's recomputed: {all_x0})"), N_('part 5'),
                  x0=before['猫', '鱼'], x2=after['猫', '鱼'], rise=changes['猫', '鱼'],
                  top='-'.join(top), all_x0=series(before.values(), '.4f', labels=['-'.join(pair) for pair in before]))
    shapes = stream_shapes(X0, device)
    print('\n' + _("6. Shapes through a 2-layer encoder of the article's sizes (random weights): {shapes}").format(
        shapes=', '.join(f"{_named(name)} {shape}" for name, shape in shapes)))
    stream = {shape for name, shape in shapes if 'hidden' not in name}
    claims.record('deep_dive', '7.6', '在整个 Encoder 中，维度始终是 3 × 12——从未改变。', 'holds' if stream == {(3, 12)} else
                  'the article is wrong', N_("through EncoderLayer(12, 3, 48) x 2 the stream is {stream} at all {n} "
                                            "points (X0, each MHA output, each layer's output); only the FFN's hidden "
                                            "layer is wider, {hidden}"),
                  N_('part 6'), stream=' and '.join(map(str, sorted(stream))), n=len(shapes) - 2,
                  hidden=next(shape for name, shape in shapes if 'hidden' in name))
    claims.record('deep_dive', '7.1', 'd_model = 12（模型维度）… h = 3（注意力头数）… d_k = d_v = 4', 'holds',
                  N_("the trace runs through the library's modules at exactly these sizes (d_ff = {d_ff}), and its "
                     "printed numbers come out (parts 1-6)"), N_('parts 1-6'), d_ff=article.D_FF)
    if html:
        save_backward_viewer(device=device)
    return {'pe': pe, 'typos': typos, 'x0': X0, 'x0_with_printed_pe': X0_with_typos, 'weights': weights,
            'head1_range': (low, high)}



def main(argv=None):
    options = options_of(run, html=N_('also write the backward pass of a 2-layer encoder on 猫 吃 鱼 as a viewer page'))
    return run_lesson(run, command_line('article_trace', __doc__, options, argv))


if __name__ == '__main__':
    main()
