"""Python overhead per op: microtensor vs the same arithmetic written by hand in numpy.

    python benchmarks/overhead.py            # markdown table on stdout
    python benchmarks/overhead.py --profile  # plus a cProfile of the 3-op chain

microtensor's fused layer is on (mt.set_fused(True)), as in the other benchmarks.

Tensors are tiny (4x4), so the arithmetic itself costs almost nothing and what is
left is the price of the engine: creating Tensors and Functions, recording the
graph, the backward loop, undoing broadcasting.  Each case times one forward and
one backward pass; the numpy column does the same forward and the hand-written
backward (the formulas from each op's docstring), with no graph at all.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import microtensor as mt  # noqa: E402

N = 4


def make_cases():
    """name -> (number of ops, microtensor step, numpy step)."""
    rng = np.random.default_rng(0)
    a_np, b_np, W_np = (rng.standard_normal((N, N)).astype(np.float32) for _ in range(3))
    g_np = np.ones((N, N), dtype=np.float32)
    a, b, W = (mt.tensor(v, requires_grad=True) for v in (a_np, b_np, W_np))
    g = mt.tensor(g_np)

    def zero_grads():  # as a training step would: backward fills .grad, it does not add to it
        a.grad = b.grad = W.grad = None

    def mt_add():
        zero_grads()
        (a + b).backward(g)

    def np_add():
        y = a_np + b_np
        ga, gb = g_np, g_np  # dL/da = g, dL/db = g
        return y, ga, gb

    def mt_matmul():
        zero_grads()
        (a @ b).backward(g)

    def np_matmul():
        y = a_np @ b_np
        return y, g_np @ b_np.T, a_np.T @ g_np

    def mt_softmax():
        zero_grads()
        a.softmax(axis=-1).backward(g)

    def np_softmax():
        e = np.exp(a_np - a_np.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        return p, p * (g_np - (g_np * p).sum(axis=-1, keepdims=True))

    def mt_chain():
        zero_grads()
        (a @ W).tanh().sum().backward()

    def np_chain():
        t = np.tanh(a_np @ W_np)
        loss = t.sum()
        g_h = np.ones_like(t) * (1 - t * t)  # sum, then tanh, backwards
        return loss, g_h @ W_np.T, a_np.T @ g_h

    return {
        'add  a + b': (1, mt_add, np_add),
        'matmul  a @ b': (1, mt_matmul, np_matmul),
        'softmax(a)': (1, mt_softmax, np_softmax),
        '(a @ W).tanh().sum()': (3, mt_chain, np_chain),
    }


def best_time_us(fn, repeat=15):
    """Microseconds per call: the best of `repeat` short runs of about 20 ms each.

    Timed in CPU time of this process (time.process_time), and the minimum is kept:
    other programs on a busy machine can only add to a run, never take from it."""
    timer = timeit.Timer(fn, timer=time.process_time)
    number, _ = timer.autorange()  # enough calls for >= 0.2 s
    number = max(1, number // 10)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def table(cases):
    rows = ['| case (4x4, forward + backward) | ops | microtensor µs | numpy µs | overhead µs | overhead per op µs |',
            '|---|---:|---:|---:|---:|---:|']
    for name, (n_ops, mt_step, np_step) in cases.items():
        t_mt, t_np = best_time_us(mt_step), best_time_us(np_step)
        rows.append(f'| {name} | {n_ops} | {t_mt:.1f} | {t_np:.1f} | {t_mt - t_np:.1f} | {(t_mt - t_np) / n_ops:.1f} |')
    return '\n'.join(rows)


def pieces():
    """name -> (microtensor step, the numpy work inside it): the engine's fixed costs."""
    from microtensor.ops.elementwise import Add
    from microtensor.ops.shape import Transpose
    from microtensor.tensor import Tensor, as_tensor
    a_np = np.ones((N, N), dtype=np.float32)
    a, b = mt.tensor(a_np, requires_grad=True), mt.tensor(a_np, requires_grad=True)
    c = mt.tensor(a_np)  # needs no gradient: ops on it record nothing, as inside backward
    g = mt.tensor(a_np)

    def add_forward_backward():
        a.grad = b.grad = None
        Add.apply(a, b).backward(g)

    return {
        'Function.apply recording the graph (Add)': (lambda: Add.apply(a, b), lambda: a_np + a_np),
        'Function.apply with no graph to record (Add), as in backward': (lambda: Add.apply(c, c), lambda: a_np + a_np),
        'Tensor._wrap(array)': (lambda: Tensor._wrap(a_np), lambda: None),
        'as_tensor(0.5, x): a Python number as a tensor': (lambda: as_tensor(0.5, a), lambda: np.asarray(0.5, np.float32)),
        'Add forward + backward (run_backward of a 1-op graph)': (add_forward_backward, lambda: a_np + a_np),
        'x.swapaxes(-1, -2), no graph (MatMul.backward uses it)': (lambda: c.swapaxes(-1, -2), lambda: a_np.swapaxes(-1, -2)),
        'Transpose.apply(x, axes=(1, 0)), no graph: the op alone': (lambda: Transpose.apply(c, axes=(1, 0)),
                                                                   lambda: a_np.transpose(1, 0)),
    }


def pieces_table():
    rows = ['| piece | µs | numpy work inside it µs | engine cost µs |', '|---|---:|---:|---:|']
    for name, (mt_step, np_step) in pieces().items():
        t_mt, t_np = best_time_us(mt_step), best_time_us(np_step)
        rows.append(f'| {name} | {t_mt:.2f} | {t_np:.2f} | {t_mt - t_np:.2f} |')
    return '\n'.join(rows)


def profile(step, seconds=1.0):
    """cProfile of `step` run repeatedly: where the Python time goes."""
    n = max(1, int(seconds * 1e6 / best_time_us(step, repeat=1)))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        step()
    profiler.disable()
    pstats.Stats(profiler).sort_stats('tottime').print_stats(15)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--profile', action='store_true', help='also print a cProfile of the 3-op chain')
    args = parser.parse_args(argv)
    mt.set_fused(True)  # as the other benchmarks and train_gpt (softmax: FusedSoftmax)
    cases = make_cases()
    print(f"numpy {np.__version__}, Python {sys.version.split()[0]}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}\n")
    print(table(cases))
    print('\nWhere the overhead comes from:\n')
    print(pieces_table())
    if args.profile:
        profile(cases['(a @ W).tanh().sum()'][1])


if __name__ == '__main__':
    main()
