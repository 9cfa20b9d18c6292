"""Lesson: the n x n score matrix -- ViT's 196 patches, and a million tokens.

1. The deep dive (§8.4): "ViT cuts a 224x224 image into 196 patches of 16x16, each treated as
   a 'word', and feeds them straight into the Transformer".  Done here: a (3, 224, 224) image
   reshaped into (196, 768) patch vectors (16 * 16 pixels * 3 colours), each checked against
   its slice of the image, then one MultiHeadAttention of ViT-Base's width (d_model = 768,
   12 heads) over them; the scores it keeps are counted from the module.
2. The attention article (§2.6, thought experiment 3): "if the sequence is 1,000,000 long, the
   attention matrix has 1 trillion (10^12) elements".  Counted here on real attention at
   n = 128 .. 1024 (the scores one head keeps, and their bytes), checked to grow as n^2, and
   carried to n = 10^6.

    python -m demos.score_matrix_size             # a second or two
    python -m demos.score_matrix_size --n-max 4096
"""
import microtensor as mt
from microtensor.i18n import N_, _
from transformer import MultiHeadAttention

from . import claims
from .articles import cite
from .report import command_line, options_of, run_lesson, table

SECTIONS = [('deep_dive', '8.4'), ('attention', '2.6'), ('deep_dive', '1.8')]
IMAGE, PATCH = 224, 16


# ---------------------------------------------------------------------------- 1. patches
def patches(image, p=PATCH):
    """(C, H, W) -> (H/p * W/p, p * p * C): patch (i, j) is row i * (W/p) + j, its pixels row by row, colours last."""
    C, H, W = image.shape
    grid = image.reshape(C, H // p, p, W // p, p)                       # (C, i, y, j, x)
    return grid.permute(1, 3, 2, 4, 0).reshape((H // p) * (W // p), p * p * C)


def vit_scores(seed=0, device='cpu'):
    """{'patches': shape, 'checked': max |patch - its image slice| over every patch, 'weights': the attention
    weights' shape, 'per_head': scores per head, 'per_layer': all heads}."""
    mt.manual_seed(seed)
    image = mt.rand(3, IMAGE, IMAGE).to(device)
    X = patches(image)
    side = IMAGE // PATCH
    checked = max((X[i * side + j] - image[:, i * PATCH:(i + 1) * PATCH, j * PATCH:(j + 1) * PATCH]
                   .permute(1, 2, 0).reshape(-1)).abs().max().item() for i in range(side) for j in range(side))
    attention = MultiHeadAttention(768, 12).to(device)
    with mt.no_grad():
        attention(X[None])
    shape = attention.last_weights.shape
    return {'device': attention.last_weights.device, 'patches': X.shape, 'checked': checked, 'weights': shape,
            'per_head': shape[-1] * shape[-2], 'per_layer': attention.last_weights.numel()}


# ---------------------------------------------------------------------------- 2. n^2
def scores_by_length(lengths=(128, 256, 512, 1024), d_model=64, seed=0, device='cpu'):
    """{n: (scores one head keeps, their bytes)} from one-head MultiHeadAttention on n random tokens (float32)."""
    mt.manual_seed(seed)
    attention = MultiHeadAttention(d_model, 1).to(device)
    out = {}
    for n in lengths:
        with mt.no_grad():
            attention(mt.randn(1, n, d_model).to(device))
        A = attention.last_weights
        out[n] = (A.numel(), A.numel() * A.data.itemsize)
    return out


LENGTHS = (128, 256, 512, 1024, 2048, 4096)  # the sequence lengths n counted


def run(n_max=1024, seed=0, device='cpu'):
    vit = vit_scores(seed, device)
    print(_("1. ViT ({cite}): a 3 x {image} x {image} image cut into {patch} x {patch} patches:").format(
        cite=cite('deep_dive', '8.4'), image=IMAGE, patch=PATCH))
    print(table(['', _('value')],
                [[_('patches (224 / 16)^2'), f"{(IMAGE // PATCH) ** 2}"], [_('patch vectors (tokens x numbers)'),
                                                                           str(vit['patches'])],
                 [_('largest |patch - its slice of the image|'), f"{vit['checked']:.1e}"],
                 [_('attention weights, MultiHeadAttention(768, 12 heads)'), str(vit['weights'])],
                 [_('scores per head: 196^2'), f"{vit['per_head']:,}"],
                 [_('scores per layer (12 heads)'), f"{vit['per_layer']:,}"]]))
    print(_("196 patches, as the deep dive says (ViT itself adds a class token: 197 rows); one layer of ViT-Base holds "
            "{weights:,} weights,\nfor an image that is only 196 'words' long.").format(weights=vit['per_layer']))
    claims.record('deep_dive', '8.4', 'ViT（Vision Transformer）把一张 224×224 的图像切成 196 个 16×16 的小方块', 'holds',
                  N_("a (3, 224, 224) image reshapes into {patches} patches, each equal to its slice ({checked:.1e}); "
                     "one ViT-Base-wide layer keeps 196^2 = {per_head:,} scores per head (ViT itself adds a class "
                     "token: 197)"),
                  N_('part 1'), patches=tuple(vit['patches']), checked=vit['checked'], per_head=vit['per_head'])
    claims.record('deep_dive', '1.8', '整个流程中唯一出现"n × n"矩阵的地方是注意力分数和权重', 'holds',
                  N_("the weights of MultiHeadAttention(768, 12) over 196 tokens are {weights}"),
                  N_('part 1, the row "attention weights"'), weights=tuple(vit['weights']))

    lengths = tuple(n for n in LENGTHS if n <= n_max)
    sizes = scores_by_length(lengths, seed=seed, device=device)
    print(_("\n2. The scores one head keeps, counted on MultiHeadAttention ({cite}: 10^6 tokens -> 10^12 elements):")
          .format(cite=cite('attention', '2.6')))
    first = lengths[0]
    rows = [[f"{n:,}", f"{count:,}", f"{count / sizes[first][0]:.0f}x", f"{(n / first) ** 2:.0f}x",
             f"{nbytes / 2 ** 20:.1f} MiB"] for n, (count, nbytes) in sizes.items()]
    per_score = sizes[first][1] / sizes[first][0]
    rows.append(['1,000,000 (n^2)', f"{10 ** 12:,}", '', '', f"{10 ** 12 * per_score / 2 ** 40:.2f} TiB"])
    print(table(['n', _('scores (one head)'), _('growth'), '(n / n_0)^2', _('float32 bytes')], rows))
    print(_("The count is exactly n^2, so 10^6 tokens give 10^12 scores per head and layer: the article's number "
            "holds.  Stored,\nthat is {tib:.1f} TiB in float32 per head and layer.  Fused kernels (FlashAttention) "
            "never store the whole matrix, computing it\nin tiles, but still compute all 10^12 scores: hence the "
            "sparse and linear attention the article points to.").format(tib=10 ** 12 * per_score / 2 ** 40))
    claims.record('attention', '2.6', '如果序列长度是 100 万，注意力矩阵是 1 万亿个元素。', 'holds',
                  N_("the scores one head keeps are exactly n^2 (counted at n = {first} … {last}), so 10^12 at n = "
                     "10^6: {tib:.1f} TiB in float32 per head and layer"),
                  N_('part 2: the table "n, scores (one head), growth"'),
                  first=first, last=lengths[-1], tib=10 ** 12 * per_score / 2 ** 40)
    return {'device': vit['device'], 'vit': vit, 'sizes': sizes}


def main(argv=None):
    options = options_of(run, n_max=(N_('the longest sequence n counted (128 .. 4096)'), 128), seed=N_('random seed'))
    return run_lesson(run, command_line('score_matrix_size', __doc__, options, argv, check=_longest))


def _longest(args):
    """--n-max within the lengths the lesson counts (a usage error beyond: it would be ignored)."""
    if args.n_max > LENGTHS[-1]:
        return _("--n-max {n_max}: the lesson counts n = {lengths}, so at most {most}").format(
            n_max=args.n_max, lengths=', '.join(map(str, LENGTHS)), most=LENGTHS[-1])
    return None


if __name__ == '__main__':
    main()
