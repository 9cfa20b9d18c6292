"""GPU acceptance: everything a GPU user relies on, checked by one command in under five minutes.

    bash benchmarks/gpu_acceptance.sh OUTDIR                  # on a machine with a CUDA GPU and cupy
    bash benchmarks/gpu_acceptance.sh OUTDIR --device cpu     # the same stages on the CPU, at smaller sizes
    python benchmarks/gpu_acceptance.py OUTDIR --device cpu --quick   # seconds (the test suite runs this)

It runs from the working tree, with no install step (the tree goes on PYTHONPATH), with the
Python that runs it (bash: $PYTHON, default python3).  Each stage runs in its own process with
its own time limit; a stage that fails or runs out of time is marked FAILED with the reason,
and the other stages still run.  The limits add up to --budget seconds (default 290).

    environment  Python, numpy, cupy and the GPU, PyTorch
    selftest     python -m microtensor.selftest --device D: every op, forward and backward, vs numpy
    train_gpt    train_gpt --preset gpu for 200 steps on the stdlib corpus: the mean loss of the last
                 20 steps must be 0.5 nats below the first 20's and, on cuda, cupy's memory pool must
                 stay flat from the first logged step on (within 5% + 32 MiB)
    gpt_step     one training step (forward + backward + AdamW) at the small / medium / large sizes
                 of benchmarks/gpt_step.py (large is the gpu preset's shape)
    torch        the same step in PyTorch eager on the same device, when PyTorch is installed: a twin
                 of the GPT (torch_gpt.py), the same shapes and parameter count; the tokens/s ratio
    tests        pytest tests/test_gpu.py (every op on the GPU vs the CPU, device moves, seeding, ...),
                 last, with the time that is left

--device cpu runs smaller sizes (a few minutes on 2 cores); --quick runs tiny ones (seconds).
OUTDIR receives summary.md (the table), summary.json (every number), acceptance.log (each
stage's command and output) and train_gpt_loss.png.  Exit status: 0 when no stage FAILED.
"""
import argparse
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MiB = 2**20
PLANS = {  # what each mode runs; train: train_gpt's gpu preset with these overrides
    'cuda': dict(corpus='stdlib', train=dict(steps=200, warmup=50, log_every=20, eval_every=100, eval_batches=4,
                                             ckpt_every=200),
                 min_drop=0.5, sizes=('small', 'medium', 'large'), timed_steps=10, warmup_steps=3),
    'cpu': dict(corpus='stdlib', train=dict(steps=60, warmup=10, log_every=10, eval_every=30, eval_batches=2,
                                            ckpt_every=60,
                                            d_model=64, n_layers=2, n_heads=4, context=64, batch_size=16),
                min_drop=0.3, sizes=('small', 'medium'), timed_steps=3, warmup_steps=1),
    'quick': dict(corpus='poem', train=dict(steps=6, log_every=2, eval_every=3, eval_batches=1, ckpt_every=6,
                                            warmup=2, d_model=16, n_layers=1, n_heads=2, context=16, batch_size=4),
                  min_drop=0.0, sizes=('small',), timed_steps=2, warmup_steps=0),
}
# each stage's share of the budget; the tests get what is left
SHARES = dict(environment=0.05, selftest=0.2, train_gpt=0.4, gpt_step=0.15, torch=0.12)
STAGES = ('environment', 'selftest', 'train_gpt', 'gpt_step', 'torch', 'tests')


# ---------------------------------------------------------------------------- the stages' own processes
def stage_environment(device, plan):
    import numpy
    from microtensor import backend
    info = {'python': sys.version.split()[0], 'numpy': numpy.__version__, 'cupy': None, 'gpu': None, 'torch': None}
    if backend.cupy is not None:
        info['cupy'] = backend.cupy.__version__
        if device == 'cuda':
            props = backend.cupy.cuda.runtime.getDeviceProperties(0)
            name = props['name'].decode() if isinstance(props['name'], bytes) else props['name']
            info['gpu'] = f"{name}, {props['totalGlobalMem'] / 2**30:.0f} GiB"
    try:
        from importlib.metadata import version
        info['torch'] = version('torch')
    except Exception:  # not installed
        pass
    return info


def stage_train_gpt(device, plan, outdir):
    import microtensor as mt
    from demos import corpus, train_gpt
    try:
        text, name = corpus.load(plan['corpus'])
    except corpus.CorpusError as error:  # e.g. a Python installed without its .py sources
        print(f"{error}: training on this repository's docstrings instead", flush=True)
        text, name = corpus.stdlib_docstrings(root=ROOT), "this repository's docstrings"
    work = tempfile.mkdtemp(prefix='acceptance-train-')  # the checkpoint (130 MB at the gpu size) stays out of OUTDIR
    try:
        with mt.fused():  # as train_gpt's command line runs it
            result = train_gpt.train(text, out=work, device=device, preset='gpu', **plan['train'])
        picture = train_gpt.plot_losses(result, name, work)
        if picture:
            shutil.copy(picture, os.path.join(outdir, 'train_gpt_loss.png'))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    losses, window = result['losses'], result['config']['log_every']
    return {'corpus': name, 'steps': result['step'], 'params': result['model'].num_parameters(),
            'first_loss': statistics.mean(losses[:window]), 'last_loss': statistics.mean(losses[-window:]),
            'val': result['val'], 'baseline': result['baseline'], 'tokens_per_s': result['tokens_per_s'],
            'memory': result['memory'], 'seconds': result['seconds'], 'config': result['config']}


def stage_gpt_step(device, plan, outdir, record):
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
    import gpt_step
    import microtensor as mt
    mt.set_fused(True)  # as gpt_step's command line runs it
    for size in plan['sizes']:
        record(size, gpt_step.measure(size, device, plan['timed_steps'], plan['warmup_steps']))


def stage_torch(device, plan, outdir, record):
    if importlib.util.find_spec('torch') is None:
        return {'skipped': 'PyTorch is not installed'}
    for size in plan['sizes']:
        record(size, torch_step(size, device, plan['timed_steps'], plan['warmup_steps']))
    return None


def torch_step(size, device, steps, warmup):
    """benchmarks/gpt_step.py's measure() for torch_gpt.py, transformer.GPT's PyTorch twin (the one
    vs_torch.py checks step for step): the same shapes, batch and AdamW step."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
    import torch_gpt
    from step_clock import SIZES, VOCAB, clock_step  # not gpt_step: it imports microtensor
    s = SIZES[size]
    torch.manual_seed(0)
    model = torch_gpt.gpt(VOCAB, s['d_model'], s['n_layers'], s['n_heads'], s['context']).to(device)
    ids = torch.randint(0, VOCAB, (s['batch'], s['context']), device=device)
    step = torch_gpt.train_step(model, ids, VOCAB, lr=3e-4)
    return dict(size=size, params=sum(p.numel() for p in model.parameters()), **clock_step(size, step, steps, warmup),
                torch=torch.__version__)


def run_own_stage(name, device, mode, outdir, result_path):
    """The body of `gpu_acceptance.py --stage NAME`: run one stage, write its numbers as JSON."""
    plan = PLANS[mode]
    sizes = {}

    def record(size, numbers):  # after each size, so a timeout keeps the sizes that finished
        sizes[size] = numbers
        _write_json(result_path, {'sizes': sizes})
        print(json.dumps(numbers), flush=True)

    if name == 'environment':
        result = stage_environment(device, plan)
    elif name == 'train_gpt':
        result = stage_train_gpt(device, plan, outdir)
    else:
        result = {'gpt_step': stage_gpt_step, 'torch': stage_torch}[name](device, plan, outdir, record) or \
            {'sizes': sizes}
    _write_json(result_path, result)
    print(json.dumps(result, default=str)[:2000])


def _write_json(path, value):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(value, f, indent=1, default=str)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- running a stage
def run_command(command, timeout, env=None):
    """Run `command` (a list) in its own process group, output captured; (exit status, or None when it
    ran out of time and was killed with its children, output text, seconds)."""
    start = time.perf_counter()
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
            status = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            status = None
    return status, output.decode('utf-8', 'replace'), time.perf_counter() - start


def last_line(output, pattern=''):
    """The last non-empty line of output that contains `pattern`, or ''."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and pattern in line]
    return lines[-1] if lines else ''


def failure(status, output, timeout):
    """The reason a stage failed, in one line."""
    if status is None:
        return f"timeout: still running after {timeout:.0f} s (its output so far is in acceptance.log)"
    return f"exit status {status}: {last_line(output)[:300] or 'no output'}"


def row(stage, status, details, seconds=None):
    return {'stage': stage, 'status': status, 'details': details, 'seconds': seconds}


# ---------------------------------------------------------------------------- judging each stage
def judge_selftest(status, output, seconds, timeout):
    ok = status == 0
    return [row('selftest', 'PASS' if ok else 'FAILED',
                last_line(output, ' passed') if ok else failure(status, output, timeout), seconds)]


def judge_tests(status, output, seconds, timeout, note=''):
    summary = last_line(output, ' in ')  # pytest's "63 passed, 7 skipped in 41.2s"
    ok = status == 0
    return [row('tests/test_gpu.py', 'PASS' if ok else 'FAILED',
                (summary if ok else failure(status, output, timeout) + (f" ({summary})" if summary else '')) + note,
                seconds)]


def judge_train(numbers, plan, device, seconds):
    """PASS when the mean loss of the last log window is min_drop below the first's and, on cuda, the
    memory pool grew by at most 5% + 32 MiB between the first logged step and the last."""
    problems = []
    drop = numbers['first_loss'] - numbers['last_loss']
    if not drop > plan['min_drop']:
        problems.append(f"the loss fell by {drop:.3f}, not by more than {plan['min_drop']}")
    memory = [m for _, m in numbers['memory']]
    if memory:
        growth = max(memory) - memory[0]
        pool = f"pool {memory[0] / MiB:,.0f} -> {memory[-1] / MiB:,.0f} MiB (max {max(memory) / MiB:,.0f})"
        if growth > 0.05 * memory[0] + 32 * MiB:
            problems.append(f"cupy's memory pool grew: {pool}")
    else:
        pool = 'pool n/a on the CPU' if device == 'cpu' else 'pool: not reported'
        if device == 'cuda':
            problems.append("no memory-pool readings on cuda")
    val = f", validation {numbers['val'][-1][1]:.3f}" if numbers['val'] else ''
    details = (f"{numbers['steps']} steps, {numbers['params']:,} params, {numbers['corpus']}: "
               f"loss {numbers['first_loss']:.3f} -> {numbers['last_loss']:.3f}{val} (unigram baseline "
               f"{numbers['baseline']:.3f}); {numbers['tokens_per_s']:,.0f} tokens/s; {pool}")
    return [row("train_gpt --preset gpu", 'FAILED' if problems else 'PASS',
                '; '.join(problems) + ' | ' + details if problems else details, seconds)]


def judge_sizes(stage, numbers, plan, status, output, seconds, timeout, reference=None):
    """One row per size: time per step and tokens/s (and, for torch, microtensor's tokens/s over torch's)."""
    rows = []
    for size in plan['sizes']:
        r = numbers.get('sizes', {}).get(size)
        if r is None:
            rows.append(row(f"{stage} {size}", 'FAILED', 'no result: ' + failure(status, output, timeout), seconds))
            continue
        details = f"{r['median_ms']:,.1f} ms/step, {r['tokens_per_s']:,.0f} tokens/s, {r['params']:,} params"
        mine = (reference or {}).get('sizes', {}).get(size)
        problem = ''
        if mine is not None:
            details += f"; microtensor/torch tokens/s = {mine['tokens_per_s'] / r['tokens_per_s']:.2f}"
            if mine['params'] != r['params']:
                problem = f"the twin has {r['params']:,} params, microtensor's GPT {mine['params']:,}: "
        rows.append(row(f"{stage} {size}", 'FAILED' if problem else 'PASS', problem + details, seconds))
    for r in rows[1:]:  # one process ran every size: its time goes on the first row
        r['seconds'] = None
    return rows


# ---------------------------------------------------------------------------- the table
def markdown_table(rows):
    """| stage | result | details | s |, one line per row ('|' inside a cell escaped)."""
    lines = ['| stage | result | details | seconds |', '|---|---|---|---:|']
    for r in rows:
        seconds = '' if r['seconds'] is None else f"{r['seconds']:.1f}"
        cells = [r['stage'], r['status'], r['details'].replace('|', '\\|').replace('\n', ' '), seconds]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


# ---------------------------------------------------------------------------- the whole run
def main(argv=None):
    parser = argparse.ArgumentParser(prog='bash benchmarks/gpu_acceptance.sh',
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('outdir', help='folder for summary.md, summary.json, acceptance.log and the loss plot')
    parser.add_argument('--device', choices=['cuda', 'cpu'], default='cuda', help='default: cuda')
    parser.add_argument('--quick', action='store_true', help='tiny sizes: seconds, to test this script')
    parser.add_argument('--budget', type=float, default=290, help='seconds for all stages together (default 290)')
    parser.add_argument('--stages', default=','.join(STAGES), help=f"comma-separated, from {', '.join(STAGES)}")
    parser.add_argument('--stage', help=argparse.SUPPRESS)   # internal: run one stage in this process
    parser.add_argument('--result', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    mode = 'quick' if args.quick else args.device
    outdir = os.path.abspath(args.outdir)
    if args.stage:
        return run_own_stage(args.stage, args.device, mode, outdir, args.result)
    stages = args.stages.split(',')
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stages {unknown}; choose from {', '.join(STAGES)}")
    if not args.budget > 0:
        parser.error(f"--budget must be a positive number of seconds, got {args.budget}")
    import microtensor as mt
    from demos.report import why_no_gpu
    if args.device == 'cuda' and not mt.cuda.is_available():  # the lessons' message, but this script has no auto
        parser.error("--device cuda (the default), but no GPU is usable here: " + why_no_gpu().split(' Run ')[0]
                     + " --device cpu runs the same stages on the CPU.")
    os.makedirs(outdir, exist_ok=True)
    rows, numbers = accept(stages, args.device, mode, outdir, args.budget)
    table = markdown_table(rows)
    env = numbers.get('environment', {})
    heading = (f"GPU acceptance on {args.device}{' (quick)' if args.quick else ''}: Python {env.get('python', '?')}, "
               f"numpy {env.get('numpy', '?')}, cupy {env.get('cupy')}, GPU {env.get('gpu')}, "
               f"PyTorch {env.get('torch')}; {time.strftime('%Y-%m-%d %H:%M')}")
    with open(os.path.join(outdir, 'summary.md'), 'w', encoding='utf-8') as f:
        f.write(f"{heading}\n\n{table}\n")
    _write_json(os.path.join(outdir, 'summary.json'), {'device': args.device, 'mode': mode, 'rows': rows,
                                                       'numbers': numbers})
    print(f"\n{heading}\n\n{table}\n\nwritten to {outdir}: summary.md, summary.json, acceptance.log"
          + (', train_gpt_loss.png' if os.path.exists(os.path.join(outdir, 'train_gpt_loss.png')) else ''))
    return 1 if any(r['status'] == 'FAILED' for r in rows) else 0


def accept(stages, device, mode, outdir, budget):
    """Run the stages in order within `budget` seconds; (table rows, {stage: numbers})."""
    plan, deadline = PLANS[mode], time.perf_counter() + budget
    env = dict(os.environ, PYTHONUNBUFFERED='1',
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    rows, numbers = [], {}
    work = tempfile.mkdtemp(prefix='acceptance-')
    log = open(os.path.join(outdir, 'acceptance.log'), 'w', encoding='utf-8')
    try:
        for stage in STAGES:
            if stage not in stages:
                continue
            left = deadline - time.perf_counter()
            timeout = min(left, SHARES[stage] * budget) if stage in SHARES else left
            if timeout < 5:
                rows.append(row(stage, 'SKIPPED', f"no time left of the {budget:.0f} s budget"))
                continue
            command, note = stage_command(stage, device, mode, outdir, work)
            if command is None:
                rows.append(row(stage, 'SKIPPED', note))
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {stage} (at most {timeout:.0f} s) ...", flush=True)
            status, output, seconds = run_command(command, timeout, env)
            log.write(f"===== {stage}: {' '.join(command)}\n===== exit status {status}, {seconds:.1f} s\n{output}\n")
            log.flush()
            path = os.path.join(work, f"{stage}.json")
            result = {}
            if os.path.exists(path):
                with open(path, encoding='utf-8') as f:
                    result = json.load(f)
            numbers[stage] = result
            rows += judge(stage, result, plan, device, status, output, seconds, timeout, numbers, note)
            print(f"    {rows[-1]['status']}: {rows[-1]['details'][:150]}", flush=True)
    finally:
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    return rows, numbers


def stage_command(stage, device, mode, outdir, work):
    """(the command that runs `stage`, a note) or (None, why it is skipped)."""
    python = sys.executable
    if stage == 'selftest':
        return [python, '-m', 'microtensor.selftest', '--device', device], ''
    if stage == 'tests':
        if importlib.util.find_spec('pytest') is None:
            return None, 'pytest is not installed'
        command = [python, '-m', 'pytest', '-rs', '-p', 'no:cacheprovider', 'tests/test_gpu.py']
        if importlib.util.find_spec('hypothesis') is None:  # tests/conftest.py imports it; test_gpu.py does not
            return command + ['--noconftest'], ' (without tests/conftest.py: hypothesis is not installed)'
        return command, ''
    return [python, os.path.abspath(__file__), outdir, '--device', device, *(['--quick'] if mode == 'quick' else []),
            '--stage', stage, '--result', os.path.join(work, f"{stage}.json")], ''


def judge(stage, result, plan, device, status, output, seconds, timeout, numbers, note):
    if stage == 'selftest':
        return judge_selftest(status, output, seconds, timeout)
    if stage == 'tests':
        return judge_tests(status, output, seconds, timeout, note)
    if 'skipped' in result:
        return [row(stage, 'SKIPPED', result['skipped'], seconds)]
    if stage in ('gpt_step', 'torch'):
        return judge_sizes(stage, result, plan, status, output, seconds, timeout,
                           numbers.get('gpt_step') if stage == 'torch' else None)
    if status != 0 or not result:
        return [row(stage, 'FAILED', failure(status, output, timeout), seconds)]
    if stage == 'train_gpt':
        return judge_train(result, plan, device, seconds)
    return [row(stage, 'PASS', ', '.join(f"{k} {v}" for k, v in result.items()), seconds)]


if __name__ == '__main__':
    sys.exit(main())
