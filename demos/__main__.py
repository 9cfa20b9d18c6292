"""The demo tour: `python -m demos --help` prints USAGE, below, in the learner's language."""
import argparse
import importlib
import importlib.util
import os
import sys
import time

from microtensor import i18n
from microtensor.i18n import N_, _

from . import articles, report

USAGE = N_("""The demo tour.

    python -m demos                      every lesson in order (with the backward-pass viewer pages), then the
                                         list of files written and where to go next
    python -m demos NAME [options]       one lesson, with its own options (python -m demos NAME --help), then
                                         the files it wrote
    python -m demos NAME NAME ...        several lessons with their defaults, then the files they wrote
    python -m demos --device cuda        the tour on the GPU (every lesson gets --device)
    python -m demos --lang zh            the tour in Chinese (every lesson gets --lang)
    python -m demos --list               the lessons and the articles' sections each one checks
""")

LESSONS = [
    ('train_xor', N_('the engine alone: an MLP learns XOR')),
    ('temperature', N_('softmax(x / T): low temperature T is near-argmax, high T is flat')),
    ('article_trace', N_("the deep dive's 猫 吃 鱼 trace: PE table (and its typos), X0, layer-1 attention, "
                         "X0 + MHA(X0), cosine similarities (+25%)")),
    ('softmax_saturation', N_('Var(q.k) = d_k: without 1/sqrt(d_k) the softmax saturates and stops the gradient')),
    ('residual_highway', N_('per-layer gradients in 24 layers: residual vs none, Pre-LN vs Post-LN; rank collapse '
                            'without residuals')),
    ('rnn_vs_attention', N_('gradient vs distance: the RNN decays (path n), attention does not (path 1)')),
    ('layernorm_vs_batchnorm', N_('LayerNorm ignores the batch; BatchNorm depends on it and on train/eval')),
    ('train_gpt', N_('a tiny character GPT: training, checkpoints, sampling at several temperatures')),
    ('train_reverse', N_('a tiny encoder-decoder Transformer learns to reverse digit sequences')),
    ('attention_by_hand', N_('我爱你 by hand (2 rows misprinted), hard vs soft attention, the small numbers')),
    ('why_separate_qk', N_('W_Q = W_K gives symmetric scores; copying the previous token: shared vs separate')),
    ('kv_cache', N_('MHA/GQA/MQA/MLA cache per token, measured; what the "93.3%" compares')),
    ('scale_variants', N_('1/sqrt(d_k), 1/d_k, no scale, learned: score variance, sharpness, training')),
    ('attention_cost', N_('time and memory vs n: attention O(n^2 d) but parallel, the RNN serial')),
    ('attention_maps', N_('trained attention maps: reversal is an anti-diagonal; the heads of a char-GPT')),
    ('pre_vs_post_ln', N_("Post-LN's last-layer gradient grows ~sqrt(L) over Pre-LN's; at a high LR it needs "
                          "warm-up")),
    ('positions', N_('permutation equivariance, PE shift = rotation, RoPE offsets, wavelengths; '
                     'trained on length n, tested on 2n, 4n (sinusoidal, learned, RoPE, ALiBi, T5 relative bias)')),
    ('residual_variants', N_('standard, scaled and gated residuals: the "+1" share of the gradient')),
    ('feedforward', N_('FFN: without activation two Linears are one; GELU vs ReLU; FFN = 2/3 of a '
                       'block; heads cost alike')),
    ('encoder_only_mlm', N_('encoder-only (BERT) masked-language modelling: 15% chosen, 80/10/10, '
                            'masked accuracy')),
    ('small_numbers', N_("0.9^20, 0.9^56 vs measured decay; LayerNorm's 5.6x; BatchNorm's 320 vs 20; "
                         "attention vs RNN speed")),
    ('qkv_roles', N_('Q = K = V = X looks at itself; K = V loses when d_k is tight; no "U = aQ + bK + cV"; '
                     "MLA's queries compressed too (d_cq); the 'it' table")),
    ('scale_alternatives', N_('"±30" at d_k = 128 is 2.65 std; Pre-LN and a small d_k instead of 1/sqrt(d_k); '
                              'softmax inputs within ±5; softmax(1.2, -0.3)')),
    ('heads_specialise', N_("the deep dive's three head tables checked; two heads learn the previous and the next "
                            "token")),
    ('positional_add_vs_concat', N_('PE_10 . PE_(10+k): nearer looks alike (not at d_model = 12); adding vs '
                                    'concatenating the position code')),
    ('residual_stream', N_('how much of x_0 is left after 96 layers (not "100%"); trainable depth with and without '
                           'residuals')),
    ('ffn_memory', N_("the deep dive's FFN unit by hand; an FFN trained as a memory of facts")),
    ('dependency_span', N_('how far back an RNN learns to look (the "10-20 steps"), against attention')),
    ('score_matrix_size', N_("ViT's 196 patches and their 196^2 scores; 10^6 tokens give 10^12")),
    ('compare_with_torch', N_('the same model in PyTorch (transformer.to_torch): every gradient side by side')),
]

VIEWER_LESSONS = ('article_trace', 'softmax_saturation', 'residual_highway')  # --html: backward-pass viewer pages


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:  # chosen first: the headers, and the parser's --help, speak that language too
        i18n.use(i18n.requested(argv))
    except ValueError as error:
        raise SystemExit(f"python -m demos: error: {error}") from None
    known = dict(LESSONS)
    names = argv[:next((i for i, a in enumerate(argv) if a.startswith('-')), len(argv))]
    if len(names) == 1 and names[0] in known:  # one lesson: everything after its name is its own
        return tour([(names[0], argv[1:])])
    parser = i18n.ArgumentParser(prog='python -m demos', description=_(USAGE),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('lessons', nargs='*', help=_('lesson names (default: all)'))
    parser.add_argument('--list', action='store_true', help=_('list the lessons and exit'))
    parser.add_argument('--device', choices=['cpu', 'cuda', 'auto'], help=_("passed to every lesson"))
    i18n.add_option(parser)  # passed to every lesson too
    args, unknown = parser.parse_known_args(argv)
    for name in args.lessons:  # wherever they stand among the options
        if name not in known:
            parser.error(_("unknown lesson {name}; try --list").format(name=repr(name)))
    if unknown:
        parser.error(_("unrecognized arguments: {arguments} (a lesson's own options go after a single lesson name: "
                       "python -m demos NAME --help lists them)").format(arguments=' '.join(unknown)))
    if args.list:
        for name, what in LESSONS:
            print(f"{name:24s} {_(what)}")
            sections = getattr(importlib.import_module(f"demos.{name}"), 'SECTIONS', ())
            print(articles.header(sections, ' ' * 4) if sections else
                  '    ' + _("(checks the engine, not an article's claim)"))
        return None
    options = (['--device', args.device] if args.device else []) + (['--lang', args.lang] if args.lang else [])
    if args.lessons:
        return tour([(name, options) for name in args.lessons])
    return tour([(name, options + ['--html'] * (name in VIEWER_LESSONS)) for name in known], whole=True)


def tour(lessons, whole=False):
    """Run each (name, argv) through the lesson's main(argv), then list the files they wrote; at the end
    of the whole tour (whole=True), where to go next."""
    first = len(report.WRITTEN)
    results = {}
    for name, argv in lessons:
        print(f"\n=== {name}: {_(dict(LESSONS)[name])} ===")
        start = time.perf_counter()
        results[name] = importlib.import_module(f"demos.{name}").main(argv)
        print(f"({time.perf_counter() - start:.1f} s)")
    written = dict(report.WRITTEN[first:])  # path: what; a file written twice is listed once
    if written:
        width = max(map(len, written))
        print('\n' + _("Files written (paths relative to {folder}):").format(folder=os.getcwd()))
        print('\n'.join(f"  {path:{width}s}  {what}" for path, what in written.items()))
    else:
        print('\n' + (_("No files written (plots need matplotlib: pip install matplotlib).")
                      if importlib.util.find_spec('matplotlib') is None else _("No files written.")))
    if whole:
        print(what_next([path for path in written if path.endswith('.html')]))
    return results


def what_next(pages):
    """Where a learner goes after the lessons: the viewer pages, the debugger guide, the reading path."""
    viewer = (_("open in a browser:") + ''.join(f"\n      {page}" for page in pages) if pages else
              _("`{command}` writes one ({others} take --html too; the whole tour, `python -m demos`, writes them "
                "all)").format(command=f"python -m demos {VIEWER_LESSONS[0]} --html",
                               others=', '.join(VIEWER_LESSONS[1:])))
    return '\n'.join(['', _("What next:"),
                      '  - ' + _("the backward pass, op by op, in the viewer: {viewer}").format(viewer=viewer),
                      '  - ' + _("step through backprop in a debugger (pdb, VS Code, Jupyter): {guide}").format(
                          guide=edition('docs/stepping-through-backprop.md')),
                      '  - ' + _("write the ops yourself: `{command}` ({guide})").format(
                          command='python -m demos.exercises start my_ops', guide=edition('docs/writing-an-op.md')),
                      '  - ' + _("the three articles section by section, the lesson that checks each claim, and its "
                                 "verdict: {companion}").format(companion=edition('docs/articles.md'))])


def edition(document):
    """The repository's `document` in the learner's language: its .zh.md twin, in Chinese, where there is one."""
    if i18n.current() == 'en':
        return document
    twin = document[:-len('.md')] + f'.{i18n.current()}.md'
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return twin if os.path.exists(os.path.join(root, twin)) else document


if __name__ == '__main__':
    main()
