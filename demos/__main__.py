"""The demo tour: `python -m demos` runs every lesson in order; `python -m demos NAME` one;
`python -m demos --list` names them."""
import argparse
import importlib
import time

LESSONS = [
    ('train_xor', 'the engine alone: an MLP learns XOR'),
    ('temperature', 'softmax(x / T): low T is near-argmax, high T is flat'),
    ('article_trace', "the article's 猫 吃 鱼 trace: PE table (and its typos), X0, layer-1 attention, "
                      "X0 + MHA(X0), cosine similarities (+25%)"),
    ('softmax_saturation', 'Var(q.k) = d_k: without 1/sqrt(d_k) the softmax saturates and stops the gradient'),
    ('residual_highway', 'per-layer gradients in 24 layers: residual vs none, Pre-LN vs Post-LN; rank collapse '
                         'without residuals'),
    ('rnn_vs_attention', 'gradient vs distance: the RNN decays (path n), attention does not (path 1)'),
    ('layernorm_vs_batchnorm', 'LayerNorm ignores the batch; BatchNorm depends on it and on train/eval'),
    ('train_gpt', 'a tiny character GPT: training, checkpoints, sampling at several temperatures'),
    ('train_reverse', 'a tiny encoder-decoder Transformer learns to reverse digit sequences'),
    ('pre_vs_post_ln', "Post-LN's last-layer gradient grows ~sqrt(L) over Pre-LN's; at a high LR it needs warm-up"),
    ('positions', 'permutation equivariance, PE shift = rotation, RoPE offsets, wavelengths; extrapolation to 2N, 4N '
                  '(sinusoidal, learned, RoPE, ALiBi, T5 relative bias)'),
    ('residual_variants', 'standard, scaled and gated residuals: the "+1" share of the gradient'),
    ('feedforward', 'FFN: without activation two Linears are one; GELU vs ReLU; FFN = 2/3 of a block; '
                    'heads cost alike'),
    ('encoder_only_mlm', 'encoder-only (BERT) masked-language modelling: 15% chosen, 80/10/10, masked accuracy'),
    ('small_numbers', "0.9^20, 0.9^56 vs measured decay; LayerNorm's 5.6x; BatchNorm's 320 vs 20; "
                      "attention vs RNN speed"),
]


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m demos', description=__doc__)
    parser.add_argument('lessons', nargs='*', help='lesson names (default: all)')
    parser.add_argument('--list', action='store_true', help='list the lessons and exit')
    args = parser.parse_args(argv)
    if args.list:
        for name, what in LESSONS:
            print(f"{name:24s} {what}")
        return
    known = dict(LESSONS)
    for name in args.lessons:
        if name not in known:
            parser.error(f"unknown lesson {name!r}; try --list")
    for name in args.lessons or [n for n, _ in LESSONS]:
        print(f"\n=== {name}: {known[name]} ===")
        start = time.perf_counter()
        importlib.import_module(f"demos.{name}").run()
        print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == '__main__':
    main()
