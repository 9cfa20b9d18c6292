"""Learning tests: small MLPs reach 100% training accuracy with every optimizer, and the
README's training example ('Training in ten lines') runs as printed.

Not timing tests: they bound the number of steps, measured with ten seeds when written
(two moons, n=100, noise 0.1: SGD+momentum 87-184 steps, Adam 53-89, AdamW 53-90; XOR at most 56).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn, optim
from test_serialization import two_moons
from readme import python_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OPTIMIZERS = {
    'SGD-momentum': lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    'SGD-nesterov': lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    'Adam': lambda ps: optim.Adam(ps, lr=0.02),
    'AdamW': lambda ps: optim.AdamW(ps, lr=0.02, weight_decay=0.01),
}
XOR = (np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32), np.array([0, 1, 1, 0]))


def steps_to_fit(data, make_optimizer, max_steps):
    """Full-batch training until every training point is classified correctly; the step count, or None."""
    X, y = mt.tensor(data[0]), mt.tensor(data[1])
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = make_optimizer(model.parameters())
    first_loss = None
    for step in range(max_steps + 1):
        logits = model(X)
        loss = mt.cross_entropy(logits, y)
        first_loss = loss.item() if first_loss is None else first_loss
        if (logits.argmax(dim=-1).numpy() == data[1]).all():
            assert loss.item() < first_loss or step == 0
            return step
        opt.zero_grad()
        loss.backward()
        opt.step()
    return None


@pytest.mark.parametrize('name', OPTIMIZERS)
@pytest.mark.parametrize('dataset,max_steps', [('xor', 200), ('two_moons', 500)])
def test_mlp_reaches_full_training_accuracy(name, dataset, max_steps):
    data = XOR if dataset == 'xor' else two_moons(n=100, noise=0.1)
    steps = steps_to_fit(data, OPTIMIZERS[name], max_steps)
    assert steps is not None, f"{name} did not fit {dataset} in {max_steps} steps"
    assert steps > 0  # it had something to learn


@pytest.mark.slow
def test_readme_training_example_runs_as_printed(tmp_path):
    """The python blocks of README's 'Training in ten lines', pasted into a fresh interpreter in an empty folder."""
    blocks = python_blocks('Training in ten lines')
    assert len(blocks) == 2
    train, resume = blocks
    assert len([line for line in train.splitlines() if line.strip() and not line.startswith(('import', 'from'))]) <= 10
    seeded = "import microtensor as mt; mt.manual_seed(0)\n"  # the example works for any seed; CI runs one
    script = seeded + train + resume + "print('resumed', model(X).argmax(dim=-1).tolist(), ckpt['step'])\n"
    result = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, 'PYTHONPATH': ROOT}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert 'predictions [0, 1, 1, 0]' in result.stdout
    assert 'resumed [0, 1, 1, 0] 299' in result.stdout
    assert os.listdir(tmp_path) == ['xor.npz']
