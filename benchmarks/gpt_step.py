"""One training step of a tiny GPT: forward + backward + AdamW update.

    python benchmarks/gpt_step.py                    # small and medium on the CPU, markdown table
    python benchmarks/gpt_step.py --device cuda --sizes small,medium,large   # on the GPU (cupy)
    python benchmarks/gpt_step.py --profile small    # plus cProfile's top costs for that size
    python benchmarks/gpt_step.py --textbook         # the textbook ops (microtensor's fused layer off)

Sizes (vocab 256, byte-level):
    small   d_model 64,  2 layers, 4 heads, context 64,  batch 32
    medium  d_model 256, 4 layers, 4 heads, context 128, batch 16
    large   d_model 384, 6 layers, 6 heads, context 256, batch 64   (train_gpt's gpu preset; for a GPU)

Reported per size: the median step time over --steps timed steps (after --warmup
untimed ones), tokens per second (batch * context / median), and peak memory of one
step: on the CPU the peak of numpy's allocations traced by tracemalloc (a separate,
untimed step: tracing slows things down); on the GPU the bytes cupy's memory pool holds
(it keeps freed blocks for reuse, so this is the step's high-water mark).
"""
import argparse
import cProfile
import os
import pstats
import sys
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, '..'), HERE]  # the tree, and step_clock beside this file
import microtensor as mt  # noqa: E402
from microtensor import optim  # noqa: E402
from transformer import GPT, next_token_loss  # noqa: E402
from demos.report import why_no_gpu  # noqa: E402  (the lessons' message)
from step_clock import SIZES, VOCAB, clock_step  # noqa: E402  (shared with gpu_acceptance's PyTorch twin)



def make_step(size, device):
    """A GPT, its optimizer and a fixed batch on `device`; returns (model, step())."""
    mt.manual_seed(0)
    s = SIZES[size]
    model = GPT(VOCAB, d_model=s['d_model'], n_layers=s['n_layers'], n_heads=s['n_heads'],
                max_len=s['context']).to(device)
    opt = optim.AdamW(model.parameters(), lr=3e-4)
    ids = mt.randint(0, VOCAB, (s['batch'], s['context']), device=device)

    def step():
        loss = next_token_loss(model(ids), ids)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()  # a host copy: on the GPU this waits for the step to finish

    return model, step


def peak_memory(step, device):
    if device == 'cuda':
        pool = mt.backend.cupy.get_default_memory_pool()
        pool.free_all_blocks()
        step()
        return pool.total_bytes()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(size, device, steps, warmup):
    model, step = make_step(size, device)
    return dict(size=size, params=model.num_parameters(), **clock_step(size, step, steps, warmup),
                peak_mib=peak_memory(step, device) / 2**20)


def profile(size, device, steps=5, top=15):
    _, step = make_step(size, device)
    step()  # warm up (first-use allocations, sinusoid/position tables)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    print(f"\ncProfile, {steps} steps of '{size}' on {device}, by own time:")
    pstats.Stats(profiler).sort_stats('tottime').print_stats(top)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python benchmarks/gpt_step.py', description=__doc__.splitlines()[0])
    parser.add_argument('--device', default='cpu', choices=['cpu', 'cuda', 'auto'],
                        help='auto: cuda when a GPU is usable (default: cpu)')
    parser.add_argument('--sizes', default='small,medium', help='comma-separated: ' + ', '.join(SIZES))
    parser.add_argument('--steps', type=int, default=10, help='timed steps per size')
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--profile', metavar='SIZE', help='also print cProfile top costs for SIZE')
    parser.add_argument('--textbook', action='store_true',
                        help="microtensor's textbook ops (its fused layer off; on by default, as in train_gpt)")
    args = parser.parse_args(argv)
    sizes = args.sizes.split(',')
    unknown = [s for s in sizes + ([args.profile] if args.profile else []) if s not in SIZES]
    if unknown:
        parser.error(f"unknown size(s) {unknown}; choose from {list(SIZES)}")
    if args.steps < 1 or args.warmup < 0:
        parser.error(f"--steps must be >= 1 and --warmup >= 0, got {args.steps} and {args.warmup}")
    if args.device == 'auto':
        args.device = 'cuda' if mt.cuda.is_available() else 'cpu'
    elif args.device == 'cuda' and not mt.cuda.is_available():
        parser.error("--device cuda, but no GPU is usable here: " + why_no_gpu())

    mt.set_fused(not args.textbook)
    print(f"GPT training step (forward + backward + AdamW), device {args.device}, "
          f"{'textbook ops' if args.textbook else 'fused layer on'}, median of {args.steps} steps\n")
    print("| size | d_model | layers | heads | context | batch | params | median step | tokens/s | peak memory |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in sizes:
        r = measure(size, args.device, args.steps, args.warmup)
        s = SIZES[size]
        print(f"| {size} | {s['d_model']} | {s['n_layers']} | {s['n_heads']} | {s['context']} | {s['batch']} "
              f"| {r['params']:,} | {r['median_ms']:.1f} ms | {r['tokens_per_s']:,.0f} | {r['peak_mib']:.1f} MiB |")
    if args.profile:
        profile(args.profile, args.device)


if __name__ == '__main__':
    main()
