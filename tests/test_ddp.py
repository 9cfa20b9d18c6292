"""examples/ddp_train.py: a GPT trained in microtensor continues on PyTorch's DistributedDataParallel,
2 CPU processes with the gloo backend on 127.0.0.1, a few steps."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip('torch', reason="the DDP example needs torch (pip install 'microtensor[torch]')")
if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
    pytest.skip("this torch build has no distributed gloo backend", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_two_gloo_ranks_end_with_identical_weights_and_a_lower_loss(tmp_path):
    import numpy
    command = [sys.executable, os.path.join(ROOT, 'examples', 'ddp_train.py'), '--out', str(tmp_path),
               '--mt-steps', '40', '--ddp-steps', '15', '--d-model', '16', '--timeout', '120']
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert 'rank 1: training loss' in done.stdout
    assert 'weights: identical on all 2 ranks, bit for bit (' in done.stdout   # the example's own check

    ranks = []
    for rank in (0, 1):
        with open(tmp_path / f"rank{rank}.json") as f:
            ranks.append(json.load(f))
    weights = [dict(numpy.load(tmp_path / f"rank{rank}.npz", allow_pickle=False)) for rank in (0, 1)]
    assert sorted(weights[0]) == sorted(weights[1]) and 'decoder.layers.1.self_attn.W_Q.weight' in weights[0]
    for name in weights[0]:
        assert (weights[0][name] == weights[1][name]).all(), name      # bit for bit: DDP kept them in step
    for r in ranks:
        assert abs(r['eval_loss_start'] - r['microtensor_eval_loss']) < 1e-5   # the export kept the weights
        assert r['eval_loss_end'] < r['eval_loss_start'] - 0.02                # and training went on from there
        assert r['train_losses'][-1] < r['train_losses'][0]
        assert abs(r['back_in_microtensor'] - r['eval_loss_end']) < 1e-5        # from_torch brought it back
    assert ranks[0]['train_losses'] != ranks[1]['train_losses']               # each rank had its own batches
    assert ranks[0]['eval_loss_end'] == ranks[1]['eval_loss_end']


def test_the_examples_own_check_tells_identical_ranks_from_different_ones(tmp_path):
    import importlib.util
    import numpy
    spec = importlib.util.spec_from_file_location('ddp_train', os.path.join(ROOT, 'examples', 'ddp_train.py'))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    weights = {'a.weight': numpy.arange(6.0).reshape(2, 3), 'a.bias': numpy.zeros(3)}
    for rank in (0, 1, 2):
        numpy.savez(tmp_path / f"rank{rank}.npz", **weights)
    assert example.same_weights_line(tmp_path, 3) == "weights: identical on all 3 ranks, bit for bit (2 tensors)"
    numpy.savez(tmp_path / "rank2.npz", **dict(weights, **{'a.bias': numpy.array([0.0, 0.0, 1e-30])}))
    line = example.same_weights_line(tmp_path, 3)
    assert line.startswith("weights: the ranks DIFFER in 1 of 2 tensors (a.bias)"), line
