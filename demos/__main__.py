"""The demo tour: `python -m demos` runs every lesson in order; `python -m demos NAME` one;
`python -m demos --list` names them."""
import argparse
import importlib
import time

LESSONS = [
    ('train_xor', 'the engine alone: an MLP learns XOR'),
    ('temperature', 'softmax(x / T): low T is near-argmax, high T is flat'),
    ('article_trace', "the article's 猫 吃 鱼 trace: PE table (and its typos), X0, layer-1 attention"),
    ('softmax_saturation', 'Var(q.k) = d_k: without 1/sqrt(d_k) the softmax saturates and stops the gradient'),
    ('residual_highway', 'per-layer gradients in 24 layers: residual vs none, Pre-LN vs Post-LN'),
    ('rnn_vs_attention', 'gradient vs distance: the RNN decays (path n), attention does not (path 1)'),
    ('layernorm_vs_batchnorm', 'LayerNorm ignores the batch; BatchNorm depends on it and on train/eval'),
    ('train_gpt', 'a tiny character GPT: training, checkpoints, sampling at several temperatures'),
    ('train_reverse', 'a tiny encoder-decoder Transformer learns to reverse digit sequences'),
]
VIEWERS = {'article_trace', 'softmax_saturation', 'residual_highway'}  # --html writes a backward-pass viewer


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m demos', description=__doc__)
    parser.add_argument('lessons', nargs='*', help='lesson names (default: all)')
    parser.add_argument('--list', action='store_true', help='list the lessons and exit')
    args = parser.parse_args(argv)
    if args.list:
        for name, what in LESSONS:
            print(f"{name:24s} {what}" + (" (--html: backprop viewer)" * (name in VIEWERS)))
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
