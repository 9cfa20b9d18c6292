"""benchmarks/gpu_acceptance.py: a tiny end-to-end run on the CPU, and how it reports stages that
fail, run out of time or cannot run; benchmarks/gpt_step.py without a GPU."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import microtensor as mt
from microtensor import selftest
from readme import ROOT


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'benchmarks', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


acceptance = load('gpu_acceptance')
gpt_step = load('gpt_step')
HAS_TORCH = importlib.util.find_spec('torch') is not None


@pytest.mark.slow
def test_quick_run_on_the_cpu_writes_the_table(tmp_path):
    """Every stage but the pytest one (which would run test_gpu.py inside the suite), end to end."""
    done = subprocess.run(['bash', os.path.join(ROOT, 'benchmarks', 'gpu_acceptance.sh'), str(tmp_path / 'out'),
                           '--device', 'cpu', '--quick', '--stages', 'environment,selftest,train_gpt,gpt_step,torch'],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHON=sys.executable, OPENBLAS_NUM_THREADS='1'))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r['stage']: r for r in json.loads((tmp_path / 'out' / 'summary.json').read_text())['rows']}
    assert rows['selftest']['status'] == 'PASS'
    assert rows['selftest']['details'] == f"{len(selftest.CASES)} of {len(selftest.CASES)} passed"
    assert rows['train_gpt --preset gpu']['status'] == 'PASS'
    assert '6 steps, 4,752 params, the poem: loss ' in rows['train_gpt --preset gpu']['details']
    assert rows['gpt_step small']['status'] == 'PASS' and '136,960 params' in rows['gpt_step small']['details']
    if HAS_TORCH:
        assert 'microtensor/torch tokens/s' in rows['torch small']['details']
    else:
        assert rows['torch'] == dict(stage='torch', status='SKIPPED', details='PyTorch is not installed',
                                     seconds=rows['torch']['seconds'])
    table = (tmp_path / 'out' / 'summary.md').read_text()
    assert '| selftest | PASS |' in table and table in done.stdout.replace('\n\nwritten', '\nwritten')
    log = (tmp_path / 'out' / 'acceptance.log').read_text()
    assert '===== train_gpt:' in log and 'validation loss' in log


@pytest.mark.slow
def test_a_stage_that_crashes_or_hangs_is_failed_with_the_reason():
    status, output, seconds = acceptance.run_command(
        [sys.executable, '-c', 'import time; print("working", flush=True); time.sleep(30)'], timeout=1)
    assert status is None and 'working' in output and seconds < 10
    row, = acceptance.judge_selftest(status, output, seconds, timeout=1)
    assert row['status'] == 'FAILED' and row['details'].startswith('timeout: still running after 1 s')
    status, output, _ = acceptance.run_command([sys.executable, '-c', 'raise ValueError("boom")'], timeout=30)
    row, = acceptance.judge('train_gpt', {}, acceptance.PLANS['cpu'], 'cpu', status, output, 1.0, 30, {}, '')
    assert row['status'] == 'FAILED' and row['details'] == 'exit status 1: ValueError: boom'


def test_sizes_that_finished_before_a_timeout_are_kept():
    plan = acceptance.PLANS['cuda']
    small = dict(size='small', params=10, median_ms=2.0, tokens_per_s=1000.0)
    rows = acceptance.judge_sizes('gpt_step', {'sizes': {'small': small}}, plan, None, '', 40.0, 40)
    assert [(r['stage'], r['status']) for r in rows] == [('gpt_step small', 'PASS'), ('gpt_step medium', 'FAILED'),
                                                       ('gpt_step large', 'FAILED')]
    assert rows[1]['details'].startswith('no result: timeout')
    twin = dict(small, tokens_per_s=4000.0)
    row = acceptance.judge_sizes('torch', {'sizes': {'small': twin}}, plan, 0, '', 5.0, 40,
                                 reference={'sizes': {'small': small}})[0]
    assert row['status'] == 'PASS' and row['details'].endswith('microtensor/torch tokens/s = 0.25')
    row = acceptance.judge_sizes('torch', {'sizes': {'small': dict(twin, params=11)}}, plan, 0, '', 5.0, 40,
                                 reference={'sizes': {'small': small}})[0]
    assert row['status'] == 'FAILED' and row['details'].startswith('the twin has 11 params')


def test_training_passes_only_when_the_loss_falls_and_the_pool_is_flat():
    plan = acceptance.PLANS['cuda']
    numbers = dict(steps=200, params=10, corpus='c', first_loss=4.6, last_loss=2.5, val=[[200, 2.6]], baseline=3.2,
                   tokens_per_s=5e4, memory=[[20, 1000 * 2**20], [200, 1000 * 2**20]])
    assert acceptance.judge_train(numbers, plan, 'cuda', 1.0)[0]['status'] == 'PASS'
    grown = dict(numbers, memory=[[20, 1000 * 2**20], [100, 1100 * 2**20], [200, 1000 * 2**20]])
    row, = acceptance.judge_train(grown, plan, 'cuda', 1.0)
    assert row['status'] == 'FAILED' and "memory pool grew: pool 1,000 -> 1,000 MiB (max 1,100)" in row['details']
    flat_loss = dict(numbers, last_loss=4.3)
    assert 'the loss fell by 0.300' in acceptance.judge_train(flat_loss, plan, 'cuda', 1.0)[0]['details']
    assert acceptance.judge_train(dict(numbers, memory=[]), plan, 'cuda', 1.0)[0]['status'] == 'FAILED'
    assert acceptance.judge_train(dict(numbers, memory=[]), plan, 'cpu', 1.0)[0]['status'] == 'PASS'


def test_stages_without_time_left_are_skipped_and_the_table_escapes_bars(tmp_path):
    rows, _ = acceptance.accept(['selftest', 'tests'], 'cpu', 'quick', str(tmp_path), budget=3)
    assert [(r['stage'], r['status']) for r in rows] == [('selftest', 'SKIPPED'), ('tests', 'SKIPPED')]
    assert rows[0]['details'] == 'no time left of the 3 s budget'
    table = acceptance.markdown_table([acceptance.row('x', 'FAILED', 'a | b\nc', 1.25)])
    assert table.splitlines()[-1] == '| x | FAILED | a \\| b c | 1.2 |'


def test_the_pytorch_twin_imports_no_microtensor():
    """The PyTorch processes (gpu_acceptance's torch stage, vs_torch's torch worker) load these
    files: importing microtensor there would tune malloc under PyTorch and change its numbers."""
    code = ("import sys; sys.path[:0] = [sys.argv[1]]; import gpu_acceptance, step_clock, torch_gpt, vs_torch; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('microtensor', 'transformer', 'demos')))")
    done = subprocess.run([sys.executable, '-c', code, os.path.join(ROOT, 'benchmarks')],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '[]'


@pytest.mark.slow
@pytest.mark.skipif(mt.cuda.is_available(), reason="a GPU is here: --device cuda works")
@pytest.mark.parametrize('script', ['gpt_step', 'gpu_acceptance'])
def test_device_cuda_without_a_gpu_is_a_clean_message(script, tmp_path):
    argv = ['--device', 'cuda'] + ([str(tmp_path)] if script == 'gpu_acceptance' else [])
    done = subprocess.run([sys.executable, os.path.join(ROOT, 'benchmarks', f'{script}.py'), *argv],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and 'Traceback' not in done.stderr
    assert 'no GPU is usable here' in done.stderr and "pip install -e '.[gpu]'" in done.stderr


@pytest.mark.slow
def test_training_falls_back_to_this_repositorys_docstrings_without_stdlib_sources(monkeypatch, tmp_path, capsys):
    from demos import corpus

    def no_sources(name, path=None):
        raise corpus.CorpusError("no docstrings found under /usr/lib/python3")
    monkeypatch.setattr(corpus, 'load', no_sources)
    monkeypatch.chdir(tmp_path)
    numbers = acceptance.stage_train_gpt('cpu', acceptance.PLANS['quick'], str(tmp_path))
    assert numbers['corpus'] == "this repository's docstrings" and numbers['steps'] == 6
    assert 'training on this repository' in capsys.readouterr().out
