"""The GPT step's sizes and its clock, shared by gpt_step.py and gpu_acceptance.py's PyTorch twin.

Standard library only: the PyTorch twin runs in a process that must not import microtensor
(whose import tunes malloc, which would change PyTorch's numbers).
"""
import statistics
import time

VOCAB = 256
SIZES = {
    'small': dict(d_model=64, n_layers=2, n_heads=4, context=64, batch=32),
    'medium': dict(d_model=256, n_layers=4, n_heads=4, context=128, batch=16),
    'large': dict(d_model=384, n_layers=6, n_heads=6, context=256, batch=64),
}


def clock_step(size, step, steps, warmup):
    """{'median_ms', 'tokens_per_s'} of step() at SIZES[size], over `steps` timed calls after
    `warmup` untimed ones.  step() must wait for the device (return loss.item())."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    s = SIZES[size]
    return dict(median_ms=1000 * median, tokens_per_s=s['batch'] * s['context'] / median)
