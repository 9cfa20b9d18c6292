"""The same tiny GPT training step in microtensor and in PyTorch eager, side by side.

    python benchmarks/vs_torch.py                                        # torch from this interpreter, if any
    python benchmarks/vs_torch.py --torch-python /tmp/venv-torch/bin/python
    python benchmarks/vs_torch.py --d-models 64 --threads 1 --rounds 9   # one configuration
    python benchmarks/vs_torch.py --rss 2000                              # microtensor's RSS over a long run
    python benchmarks/vs_torch.py --profile                               # cProfile of microtensor's step
    python benchmarks/vs_torch.py --compare /tmp/old-checkout             # also time another version, same rounds
    python benchmarks/vs_torch.py --pairs 3                               # 3 sets of fresh processes: each ratio's range
    python benchmarks/vs_torch.py --gemm                                  # only the step's matrix products (gemms.py)
    python benchmarks/vs_torch.py --fused-only                            # without the textbook rows
    python benchmarks/vs_torch.py --forward-backward                      # forward + backward, no AdamW update

The model (both systems): a decoder-only GPT, pre-LN, learned positions, 2 layers, 4 heads,
d_ff = 4 d_model, GELU (tanh form), separate W_Q/W_K/W_V/W_O with biases, an untied head
without bias, vocabulary 65, context 64, batch 32, float32.  One step = forward, the
next-token cross-entropy, backward, AdamW (lr 3e-4, weight decay 0.01).  PyTorch's model
is written the way a PyTorch user writes it in eager mode: nn.Linear, masked_fill, softmax
(--torch-attention sdpa uses F.scaled_dot_product_attention instead).  microtensor runs with
its fused layer on (mt.set_fused(True), as train_gpt does); a second microtensor worker runs
the textbook ops (the default, what the lessons step through) in the same rounds, reported as
rows of their own (--fused-only leaves it out).

How it is measured:
- each system runs in its own worker process (importing torch changes numpy's malloc
  behaviour, so they never share one), with OMP/OPENBLAS/MKL threads set to the column's
  thread count before numpy or torch is imported (and torch.set_num_threads);
- the same initialisation: the microtensor worker writes its freshly initialised weights
  and the batch to a temporary .npz, the PyTorch worker copies them in; the first step's
  losses must agree to 1e-4 (the sanity check; the table shows the difference);
- both workers stay alive and take turns: each round one runs --steps timed steps, then the
  other (who goes first alternates), so both see the same load on a shared machine;
- the table shows the median step time (wall clock) of each system over all timed steps and
  the ratio microtensor / PyTorch (< 1: microtensor is faster); then the same for CPU time
  (time.process_time: all the process's threads, user + system, so page faults count;
  less disturbed than wall time by other programs on a busy machine, but with 2 threads
  it also counts threads that spin while waiting), and each worker's peak RSS;
- the load average (os.getloadavg: 1, 5, 15 minutes) is printed before and after the table:
  timings taken while other programs run are not comparable.

PyTorch is an optional benchmark dependency only: without it the microtensor column is
still measured.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import gemms  # stdlib only at import, as torch_gpt: safe in the microtensor worker too
import torch_gpt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..')
CONFIG = dict(vocab=65, n_layers=2, n_heads=4, context=64, batch=32, lr=3e-4, weight_decay=0.01)
THREAD_VARIABLES = ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS')


# ---------------------------------------------------------------------------- the workers
def peak_rss_mib():
    """This process's peak resident set size (VmHWM), in MiB; None where /proc is missing."""
    return _proc_status('VmHWM')


def rss_mib():
    return _proc_status('VmRSS')


def _proc_status(field):
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def fused_form():
    """How this checkout's fused ops compute here: compiled loops (built by which compiler) or numpy forms."""
    sys.path.insert(0, ROOT)
    try:
        from microtensor.fused import compiled
    except ImportError:  # a checkout from before the compiled loops
        return 'numpy forms'
    if not compiled.enabled:
        return 'numpy forms (MICROTENSOR_COMPILED=0)'
    if compiled.library() is None:
        return 'numpy forms (no C compiler)'
    return f'compiled loops ({compiled.compiler_version})'


def microtensor_step(d_model, init_path, root=ROOT, fused=True, update=True):
    """Build the GPT (microtensor from `root`, its fused layer on or off), write its initial weights
    and the batch to init_path; return step() (update=False: forward and backward, no AdamW update)."""
    sys.path.insert(0, root)
    import numpy as np
    import microtensor as mt
    from microtensor import optim
    from transformer import GPT, next_token_loss

    getattr(mt, 'set_fused', lambda flag: None)(fused)  # a --compare checkout from before the switch: always fused

    c = CONFIG
    mt.manual_seed(0)
    model = GPT(c['vocab'], d_model=d_model, n_layers=c['n_layers'], n_heads=c['n_heads'], max_len=c['context'])
    ids = mt.randint(0, c['vocab'], (c['batch'], c['context']))
    if init_path:
        arrays = {name: t.numpy() for name, t in model.state_dict().items()}
        arrays['ids'] = ids.numpy()
        partial = init_path + '.partial.npz'
        np.savez(partial, **arrays)
        os.replace(partial, init_path)
    opt = optim.AdamW(model.parameters(), lr=c['lr'], weight_decay=c['weight_decay'])

    def step():
        loss = next_token_loss(model(ids), ids)
        opt.zero_grad()
        loss.backward()
        if update:
            opt.step()
        return loss.item()

    return step


def torch_step(d_model, init_path, attention, update=True):
    """The same GPT in PyTorch (torch_gpt.py), initialised from the microtensor worker's weights."""
    import numpy as np
    import torch

    c = CONFIG
    model = torch_gpt.gpt(c['vocab'], d_model, c['n_layers'], c['n_heads'], c['context'], attention)
    with np.load(init_path, allow_pickle=False) as saved:
        w = {name: saved[name] for name in saved.files}
    torch_gpt.load_microtensor_weights(model, w)
    ids = torch.from_numpy(w['ids'].astype(np.int64))
    return torch_gpt.train_step(model, ids, c['vocab'], update=update, lr=c['lr'], weight_decay=c['weight_decay'])


def worker(args):
    """Serve commands on stdin: 'first' (one step, its loss), 'run N' (N timed steps), 'quit'."""
    threads = args.threads
    if args.worker.startswith('torch'):
        import torch
        torch.set_num_threads(threads)
    if args.worker.endswith('-gemm'):  # numpy-gemm, torch-gemm: the step's products alone
        shape = {k: CONFIG[k] for k in ('vocab', 'n_layers', 'n_heads', 'context', 'batch')}
        step = gemms.products(args.worker[:-len('-gemm')], args.d_model, **shape)
    elif args.worker == 'torch':
        step = torch_step(args.d_model, args.init, args.torch_attention, update=not args.forward_backward)
    else:
        step = microtensor_step(args.d_model, args.init, args.root, fused=args.worker == 'microtensor',
                                update=not args.forward_backward)
    reply({'ready': True})
    for line in sys.stdin:
        command = line.split()
        if command[0] == 'first':
            reply({'loss': step()})
        elif command[0] == 'run':
            times, cpu_times = [], []
            for _ in range(int(command[1])):
                start, cpu_start = time.perf_counter(), time.process_time()
                step()
                times.append(time.perf_counter() - start)
                cpu_times.append(time.process_time() - cpu_start)
            reply({'times': times, 'cpu_times': cpu_times, 'peak_rss_mib': peak_rss_mib()})
        elif command[0] == 'rss':  # a long run: RSS every `every` steps
            n, every = int(command[1]), int(command[2])
            trace = []
            for i in range(1, n + 1):
                step()
                if i % every == 0:
                    trace.append((i, rss_mib()))
            reply({'rss': trace, 'peak_rss_mib': peak_rss_mib()})
        else:
            break


def reply(message):
    sys.stdout.write(json.dumps(message) + '\n')
    sys.stdout.flush()


# ---------------------------------------------------------------------------- the parent
class Worker:
    """One system in its own process; ask() sends a command and waits for the JSON answer."""

    def __init__(self, system, label, python, d_model, threads, init_path, root=ROOT, torch_attention='manual',
                 forward_backward=False):
        env = dict(os.environ, **{name: str(threads) for name in THREAD_VARIABLES})
        command = [python, os.path.abspath(__file__), '--worker', system, '--d-model', str(d_model),
                   '--threads', str(threads), '--init', init_path, '--root', root, '--torch-attention', torch_attention]
        command += ['--forward-backward'] if forward_backward else []
        self.label = label
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        self.answer()  # 'ready'

    def ask(self, command):
        self.process.stdin.write(command + '\n')
        self.process.stdin.flush()
        return self.answer()

    def answer(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.label} worker exited (exit status {self.process.wait()}); "
                               "its error is printed above")
        return json.loads(line)

    def close(self):
        self.process.stdin.write('quit\n')
        self.process.stdin.close()
        self.process.wait()


def torch_available(python):
    try:
        return subprocess.run([python, '-c', 'import torch'], capture_output=True).returncode == 0
    except OSError:  # no such interpreter
        return False


def compare(d_model, threads, args, use_torch):
    """Alternating rounds of every worker at one configuration, in args.pairs sets of fresh processes.

    Returns {label: dict(ms, cpu_ms, rss, loss, pair_ms)}: medians over all timed steps of all sets,
    the peak RSS, the first step's loss, and each set's own median (pair_ms: two identical processes
    can differ by 10-15% for their whole life, so a ratio from one set of processes is only that
    precise).  Labels: 'microtensor', 'textbook', each --compare checkout and '<checkout> textbook',
    'torch'.
    """
    times, cpu_times, pair_ms, rss = {}, {}, {}, {}
    for _ in range(args.pairs):
        first, these, these_cpu, these_rss = _rounds(d_model, threads, args, use_torch)
        for label, steps in these.items():
            times.setdefault(label, []).extend(steps)
            cpu_times.setdefault(label, []).extend(these_cpu[label])
            pair_ms.setdefault(label, []).append(1000 * statistics.median(steps))
            rss[label] = max(rss.get(label) or 0, these_rss[label] or 0) or None  # None: no /proc
    for other in ('torch', 'textbook'):
        if other in first and abs(first['microtensor'] - first[other]) > 1e-4:
            raise SystemExit(f"sanity check failed at d_model {d_model}: first-step losses differ by "
                             f"{abs(first['microtensor'] - first[other]):.2e} "
                             f"(microtensor {first['microtensor']:.6f}, {other} {first[other]:.6f})")
    return {label: dict(ms=1000 * statistics.median(times[label]), cpu_ms=1000 * statistics.median(cpu_times[label]),
                        rss=rss[label], loss=first[label], pair_ms=pair_ms[label]) for label in times}


def _rounds(d_model, threads, args, use_torch):
    """One set of worker processes and their alternating rounds: ({label: first-step loss}, {label: step
    times}, {label: step CPU times}, {label: peak RSS})."""
    with tempfile.TemporaryDirectory() as tmp:
        init_path = os.path.join(tmp, 'init.npz')
        suffix = '-gemm' if args.gemm else ''
        fb = args.forward_backward
        workers = [Worker('numpy' + suffix if args.gemm else 'microtensor', 'microtensor', sys.executable,
                          d_model, threads, init_path, forward_backward=fb)]
        workers += [Worker('microtensor', root, sys.executable, d_model, threads, '', root=root,
                           forward_backward=fb)
                    for root in args.compare]  # same seed, same model: they need no weights file
        if not (args.gemm or args.fused_only):
            workers.append(Worker('microtensor-textbook', 'textbook', sys.executable, d_model, threads, '',
                                  forward_backward=fb))
            workers += [Worker('microtensor-textbook', root + ' textbook', sys.executable, d_model, threads, '',
                               root=root, forward_backward=fb) for root in args.compare]
        if use_torch:
            workers.append(Worker('torch' + suffix, 'torch', args.torch_python, d_model, threads, init_path,
                                  torch_attention=args.torch_attention, forward_backward=fb))
        try:
            first = {w.label: w.ask('first')['loss'] for w in workers}
            for w in workers:
                w.ask(f'run {args.warmup}')
            times, cpu_times, rss = ({w.label: [] for w in workers} for _ in range(3))
            for r in range(args.rounds):
                for w in (workers if r % 2 == 0 else workers[::-1]):
                    answer = w.ask(f'run {args.steps}')
                    times[w.label] += answer['times']
                    cpu_times[w.label] += answer['cpu_times']
                    rss[w.label] = answer['peak_rss_mib']
        finally:
            for w in workers:
                w.close()
    return first, times, cpu_times, rss


def ratio(a, b):
    """a's time over b's: the median of that ratio over the sets of processes (--pairs), and with more
    than one set its range from set to set: '1.05', or '1.05 (0.97-1.12)'."""
    each = [x / y for x, y in zip(a['pair_ms'], b['pair_ms'])]
    text = f"{statistics.median(each):.2f}"
    return text + f" ({min(each):.2f}-{max(each):.2f})" if len(each) > 1 else text


def long_run_rss(args):
    """microtensor's RSS every args.rss // 10 steps of a long run (it should stay flat)."""
    with tempfile.TemporaryDirectory() as tmp:
        w = Worker('microtensor', 'microtensor', sys.executable, args.d_models[0], args.threads[0],
                   os.path.join(tmp, 'init.npz'))
        try:
            answer = w.ask(f'rss {args.rss} {max(args.rss // 10, 1)}')
        finally:
            w.close()
    print(f"microtensor RSS over {args.rss} steps (d_model {args.d_models[0]}, {args.threads[0]} thread(s)):\n")
    print("| step | " + " | ".join(str(i) for i, _ in answer['rss']) + " |")
    print("|---|" + "---:|" * len(answer['rss']))
    print("| RSS MiB | " + " | ".join(f"{m:.1f}" for _, m in answer['rss']) + " |")
    print(f"\npeak RSS {answer['peak_rss_mib']:.1f} MiB")


def profile(args, top=20):
    import cProfile
    import pstats
    step = microtensor_step(args.d_models[0], None)
    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.steps):
        step()
    profiler.disable()
    print(f"\ncProfile, {args.steps} microtensor steps at d_model {args.d_models[0]}, by own time:")
    pstats.Stats(profiler).sort_stats('tottime').print_stats(top)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--torch-python', default=sys.executable,
                        help='the interpreter that has torch (default: this one)')
    parser.add_argument('--torch-attention', default='manual', choices=['manual', 'sdpa'])
    parser.add_argument('--d-models', default='64,256', type=lambda s: [int(v) for v in s.split(',')])
    parser.add_argument('--threads', default='1,2', type=lambda s: [int(v) for v in s.split(',')])
    parser.add_argument('--rounds', type=int, default=7, help='alternating rounds per configuration')
    parser.add_argument('--pairs', type=int, default=1,
                        help='sets of fresh worker processes per configuration, each with --rounds rounds; '
                             'with more than one, each ratio also shows its range from set to set')
    parser.add_argument('--steps', type=int, default=5, help='timed steps per system per round')
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--compare', nargs='*', default=[], metavar='CHECKOUT',
                        help='other microtensor checkouts (directories) to time in the same rounds')
    parser.add_argument('--rss', type=int, metavar='STEPS', help="only trace microtensor's RSS over STEPS steps")
    parser.add_argument('--profile', action='store_true', help="only profile microtensor's step (in this process)")
    parser.add_argument('--gemm', action='store_true',
                        help="only the step's matrix products: numpy's BLAS vs PyTorch's (gemms.py)")
    parser.add_argument('--forward-backward', action='store_true',
                        help='time forward + loss + backward only, without the AdamW update')
    parser.add_argument('--fused-only', action='store_true',
                        help="leave out microtensor's textbook ops (its fused layer off), timed by default")
    parser.add_argument('--worker', choices=['microtensor', 'microtensor-textbook', 'torch', 'numpy-gemm', 'torch-gemm'],
                        help=argparse.SUPPRESS)
    parser.add_argument('--d-model', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--init', help=argparse.SUPPRESS)
    parser.add_argument('--root', default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error(f"--pairs {args.pairs}: give at least 1 set of processes")
    if args.worker:
        args.threads = args.threads[0]
        return worker(args)
    if args.profile:
        for name in THREAD_VARIABLES:  # before numpy is imported
            os.environ[name] = str(args.threads[0])
        return profile(args)
    if args.rss:
        return long_run_rss(args)

    use_torch = torch_available(args.torch_python)
    if args.gemm:
        return gemm_table(args, use_torch)
    c = CONFIG
    what = 'forward + backward, no update' if args.forward_backward else 'forward + backward + AdamW'
    print(f"tiny GPT training step ({what}), float32: {c['n_layers']} layers, "
          f"{c['n_heads']} heads, "
          f"context {c['context']}, batch {c['batch']}, vocab {c['vocab']}; median of {args.rounds} alternating rounds "
          f"x {args.steps} steps" + (f" in each of {args.pairs} sets of fresh processes" if args.pairs > 1 else '')
          + (f"; PyTorch attention: {args.torch_attention}" if use_torch
             else f"\n(no torch in {args.torch_python}: microtensor only)")
          + f"; microtensor's fused layer on, {fused_form()}\n\nload average before: {load_average()}\n")
    if use_torch:
        print("| d_model | threads | microtensor ms | PyTorch ms | ratio | CPU ms microtensor | CPU ms PyTorch "
              "| CPU ratio | RSS MiB microtensor | RSS MiB PyTorch | first loss | loss diff |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print("| d_model | threads | microtensor ms | CPU ms | RSS MiB | first loss |\n|---:|---:|---:|---:|---:|---:|")
    others, textbook = [], []
    for d_model in args.d_models:
        for threads in args.threads:
            r = compare(d_model, threads, args, use_torch)
            m = r['microtensor']
            if use_torch:
                t = r['torch']
                print(f"| {d_model} | {threads} | {m['ms']:.1f} | {t['ms']:.1f} | {ratio(m, t)} "
                      f"| {m['cpu_ms']:.1f} | {t['cpu_ms']:.1f} | {m['cpu_ms'] / t['cpu_ms']:.2f} "
                      f"| {m['rss']:.0f} | {t['rss']:.0f} | {m['loss']:.5f} | {abs(m['loss'] - t['loss']):.1e} |",
                      flush=True)
            else:
                print(f"| {d_model} | {threads} | {m['ms']:.1f} | {m['cpu_ms']:.1f} | {m['rss']:.0f} "
                      f"| {m['loss']:.5f} |", flush=True)
            others += [(d_model, threads, label, r[label], r['microtensor']) for label in args.compare]
            others += [(d_model, threads, label + ' textbook', r[label + ' textbook'], r['textbook'])
                       for label in args.compare if label + ' textbook' in r]
            if 'textbook' in r:
                textbook.append((d_model, threads, r['textbook'], m, r.get('torch')))
    if textbook:  # the textbook ops, measured in the same rounds
        print("\nmicrotensor's textbook ops (the fused layer off), in the same rounds:\n")
        print("| d_model | threads | textbook ms | / PyTorch | / fused | CPU ms | / PyTorch (CPU) | RSS MiB |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for d_model, threads, o, m, t in textbook:
            vs_torch = ratio(o, t) if t else '-'
            vs_torch_cpu = f"{o['cpu_ms'] / t['cpu_ms']:.2f}" if t else '-'
            print(f"| {d_model} | {threads} | {o['ms']:.1f} | {vs_torch} | {ratio(o, m)} "
                  f"| {o['cpu_ms']:.1f} | {vs_torch_cpu} | {o['rss']:.0f} |")
    if others:  # the other checkouts, measured in the same rounds
        print("\nThe other checkouts, in the same rounds (their fused layer against this one's, their textbook "
              "against this one's):\n")
        print("| d_model | threads | checkout | ms | CPU ms | this checkout / it (ms) | (CPU) | RSS MiB |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|")
        for d_model, threads, label, o, m in others:
            print(f"| {d_model} | {threads} | {label} | {o['ms']:.1f} | {o['cpu_ms']:.1f} | {ratio(m, o)} "
                  f"| {m['cpu_ms'] / o['cpu_ms']:.2f} | {o['rss']:.0f} |")
    print(f"\nload average after: {load_average()}")


def load_average():
    """'1-minute, 5-minute, 15-minute' load averages; '?' where the system has none."""
    try:
        return ', '.join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return '?'


def gemm_table(args, use_torch):
    """The 51 matrix products of one step (gemms.py) in numpy and in PyTorch, alternating rounds."""
    if not use_torch:
        raise SystemExit(f"--gemm compares with PyTorch, which {args.torch_python} does not have (see --torch-python)")
    args.compare = []
    print(f"the matrix products of one training step (gemms.py), float32; median of {args.rounds} alternating "
          f"rounds x {args.steps} repetitions\n")
    print("| d_model | threads | numpy ms | PyTorch ms | ratio | CPU ms numpy | CPU ms PyTorch | CPU ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d_model in args.d_models:
        for threads in args.threads:
            r = compare(d_model, threads, args, use_torch)
            m, t = r['microtensor'], r['torch']
            print(f"| {d_model} | {threads} | {m['ms']:.1f} | {t['ms']:.1f} | {ratio(m, t)} "
                  f"| {m['cpu_ms']:.1f} | {t['cpu_ms']:.1f} | {m['cpu_ms'] / t['cpu_ms']:.2f} |", flush=True)


if __name__ == '__main__':
    main()
