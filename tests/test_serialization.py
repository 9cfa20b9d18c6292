"""mt.save / mt.load: round trips, atomic writes, clear errors, exact resume."""
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn, optim, serialization

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def leftovers(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith('.tmp'))


# ---------------------------------------------------------------------- round trips
def test_nested_values_come_back_with_their_types_and_bits(tmp_path):
    obj = {
        'f32': mt.randn(3, 4), 'f64': mt.randn(2, dtype='float64'), 'int': mt.tensor([1, 2, 3]),
        'scalar': mt.tensor(2.5), 'param': nn.Parameter(mt.ones(2)), 'empty': mt.zeros(0, 3),
        'array': np.arange(6, dtype=np.int16).reshape(2, 3), 'np_scalar': np.int64(7),
        'numbers': [1, 0.1, -2.5e-300, math.inf, True, None], 'pair': (3, 'three'),
        'text': '猫 吃 鱼', 'nested': {'deeper': {'x': [mt.ones(1), {'y': 1e-8}]}},
        7: 'an int key', 'empty_dict': {}, 'empty_list': [], 'nan': math.nan,
    }
    mt.save(obj, tmp_path / 'ckpt.npz')
    back = mt.load(tmp_path / 'ckpt.npz')
    assert list(back) == list(obj)
    for key in ('f32', 'f64', 'int', 'scalar', 'empty'):
        assert isinstance(back[key], mt.Tensor) and back[key].dtype == obj[key].dtype
        assert back[key].shape == obj[key].shape and back[key].numpy().tobytes() == obj[key].numpy().tobytes()
        assert not back[key].requires_grad
    assert back['param'].requires_grad
    assert isinstance(back['array'], np.ndarray) and back['array'].dtype == np.int16
    np.testing.assert_array_equal(back['array'], obj['array'])
    assert back['np_scalar'].shape == () and back['np_scalar'] == 7
    assert back['numbers'] == [1, 0.1, -2.5e-300, math.inf, True, None]
    assert type(back['numbers'][0]) is int and type(back['numbers'][4]) is bool
    assert back['pair'] == (3, 'three') and back['text'] == '猫 吃 鱼' and back[7] == 'an int key'
    assert back['nested']['deeper']['x'][1] == {'y': 1e-8} and back['empty_dict'] == {} and back['empty_list'] == []
    assert math.isnan(back['nan'])
    assert leftovers(tmp_path) == []
    # a plain .npz: numpy alone reads the arrays, named by their path
    with np.load(tmp_path / 'ckpt.npz', allow_pickle=False) as raw:
        assert 'nested/deeper/x/0' in raw.files and '__microtensor__.json' in raw.files
        assert raw['f32'].tobytes() == obj['f32'].numpy().tobytes()


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_model_and_optimizer_state_survive_a_file_bit_exactly(tmp_path, dtype):
    model = nn.Sequential(nn.Linear(3, 8, dtype=dtype), nn.GELU(), nn.Linear(8, 2, dtype=dtype))
    opt = optim.Adam(model.parameters(), lr=0.01)
    mt.cross_entropy(model(mt.randn(5, 3, dtype=dtype)), mt.tensor([0, 1, 1, 0, 1])).backward()
    opt.step()
    mt.save({'model': model.state_dict(), 'optim': opt.state_dict(), 'step': 1}, tmp_path / 'm.npz')
    ckpt = mt.load(tmp_path / 'm.npz')
    fresh = nn.Sequential(nn.Linear(3, 8, dtype=dtype), nn.GELU(), nn.Linear(8, 2, dtype=dtype))
    fresh.load_state_dict(ckpt['model'])
    for (name, a), b in zip(model.named_parameters(), fresh.parameters()):
        assert b.dtype == np.dtype(dtype) and a.numpy().tobytes() == b.numpy().tobytes(), name
    fresh_opt = optim.Adam(fresh.parameters(), lr=0.5)
    fresh_opt.load_state_dict(ckpt['optim'])
    assert fresh_opt.lr == 0.01 and ckpt['step'] == 1
    for p, q in zip(model.parameters(), fresh.parameters()):
        for name in ('exp_avg', 'exp_avg_sq'):
            assert opt.state[id(p)][name].tobytes() == fresh_opt.state[id(q)][name].tobytes()


def test_load_puts_tensors_on_the_chosen_device(tmp_path, device):
    mt.save({'w': mt.randn(2, 2), 'a': np.ones(2)}, tmp_path / 'c.npz')
    back = mt.load(tmp_path / 'c.npz', device=device)
    assert back['w'].device == device and mt.Tensor._wrap(back['a']).device == device
    assert isinstance(mt.load(tmp_path / 'c.npz')['a'], np.ndarray)  # no device given: arrays stay numpy
    model = nn.Linear(2, 2).to(device)
    model.load_state_dict({'weight': back['w'], 'bias': mt.zeros(2)})
    assert model.weight.device == device


def test_unsupported_values_are_refused_before_the_file_is_touched(tmp_path):
    path = tmp_path / 'c.npz'
    mt.save({'step': 1}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match="cannot store a Linear \\(at model\\).*save its state_dict"):
        mt.save({'model': nn.Linear(2, 2)}, path)
    with pytest.raises(TypeError, match='dict keys must be str or int'):
        mt.save({(1, 2): 3}, path)
    with pytest.raises(TypeError, match="the array at 'bad' has dtype object, which cannot be stored without pickle"):
        mt.save({'bad': np.array([{}, 1], dtype=object)}, path)
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match='nested more than 100 levels deep.*contain itself'):
        mt.save({'loop': loop}, path)
    with pytest.raises(IsADirectoryError, match='is a folder; give a file name'):
        mt.save({'step': 1}, tmp_path)
    with pytest.raises(ValueError, match="two values would be stored under the name 'a/b'"):
        mt.save({'a/b': mt.ones(1), 'a': {'b': mt.ones(1)}}, path)
    assert path.read_bytes() == before and leftovers(tmp_path) == []
    with pytest.raises(FileNotFoundError, match='does not exist'):
        mt.save({'step': 1}, tmp_path / 'missing' / 'c.npz')


# ---------------------------------------------------------------------- crashes while writing
@pytest.mark.parametrize('failure', ['interrupted mid-write', 'fsync fails'])
def test_an_interrupted_save_leaves_the_old_checkpoint(tmp_path, monkeypatch, failure):
    path = tmp_path / 'ckpt.npz'
    mt.save({'step': 1, 'w': mt.ones(1000)}, path)
    before = path.read_bytes()
    real_write = serialization._write_zip

    def half_write_then_crash(f, tree, arrays):
        real_write(f, tree, arrays)
        f.truncate(f.tell() // 2)  # the bytes written so far, then the "crash"
        raise KeyboardInterrupt

    def failing_fsync(fd):
        raise OSError(28, 'No space left on device')

    if failure == 'interrupted mid-write':
        monkeypatch.setattr(serialization, '_write_zip', half_write_then_crash)
        error = KeyboardInterrupt
    else:
        monkeypatch.setattr(os, 'fsync', failing_fsync)
        error = OSError
    with pytest.raises(error):
        mt.save({'step': 2, 'w': mt.zeros(1000)}, path)
    assert path.read_bytes() == before
    assert mt.load(path)['step'] == 1
    assert leftovers(tmp_path) == []  # the temporary file was removed


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, 'SIGKILL'), reason='needs SIGKILL (POSIX) to kill the writer')
def test_a_killed_writer_never_leaves_a_half_written_checkpoint(tmp_path):
    """A child process rewrites an 8 MB checkpoint in a loop; SIGKILL it at a random moment,
    three times.  The file must always load, with the step and its data from the same save;
    the temporary file a killed save leaves behind is removed by the next save to that path."""
    writer = textwrap.dedent("""
        import sys, numpy as np, microtensor as mt
        big = np.zeros(2_000_000, np.float32)
        for i in range(1, 10**9):
            big[:] = i
            mt.save({'i': i, 'big': big}, sys.argv[1])
            print(i, flush=True)
    """)
    path = tmp_path / 'ckpt.npz'
    interrupted_writes = 0
    rng = np.random.default_rng(0)
    for _ in range(3):
        child = subprocess.Popen([sys.executable, '-c', writer, str(path)], stdout=subprocess.PIPE,
                                 cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT})
        try:
            assert int(child.stdout.readline()) >= 1  # at least one complete checkpoint
            time.sleep(rng.uniform(0.0, 0.05))
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
        ckpt = mt.load(path)
        assert ckpt['i'] >= 1 and np.all(ckpt['big'] == ckpt['i'])
        interrupted_writes += len(leftovers(tmp_path)) > 0  # killed mid-save: its temp file stays behind
        assert len(leftovers(tmp_path)) <= 1  # ... until the next save (the next child's first one)
    assert interrupted_writes >= 1, "no kill landed inside a save; the test proved nothing"
    mt.save({'i': 0}, path)
    assert leftovers(tmp_path) == [] and mt.load(path) == {'i': 0}


# ---------------------------------------------------------------------- bad files
def saved_checkpoint(tmp_path):
    path = tmp_path / 'ckpt.npz'
    mt.save({'w': mt.full((64,), 0.125), 'step': 3}, path)
    return path


@pytest.mark.parametrize('keep', [0, 10, 0.5, -22])
def test_a_truncated_file_gives_a_clear_error(tmp_path, keep):
    path = saved_checkpoint(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:keep if isinstance(keep, int) else int(len(data) * keep)])
    damaged = path.read_bytes()
    with pytest.raises(mt.CheckpointError,
                       match=r"cannot read '.*ckpt.npz': (the file is empty|it is truncated or corrupted)"):
        mt.load(path)
    assert path.read_bytes() == damaged  # loading never writes


def test_corrupted_bytes_are_caught_by_the_checksum(tmp_path):
    path = saved_checkpoint(tmp_path)
    data = bytearray(path.read_bytes())
    where = data.find(np.full(64, 0.125, np.float32).tobytes())
    assert where > 0
    data[where + 100] ^= 0xFF  # one flipped byte inside the array's data
    path.write_bytes(bytes(data))
    with pytest.raises(mt.CheckpointError, match='CRC'):
        mt.load(path)


def test_files_that_are_not_checkpoints_give_clear_errors(tmp_path):
    """(Crafted checkpoints with a wrong header: tests/test_checkpoint_integrity.py.)"""
    def refused(path, reason):
        with pytest.raises(mt.CheckpointError, match=f"mt.load: cannot read '.*{os.path.basename(path)}': {reason}"):
            mt.load(path)

    text = tmp_path / 'notes.npz'
    text.write_text('hello')
    refused(text, r"it is not a checkpoint \(not a zip archive: it starts with b'hello'\)")
    empty = tmp_path / 'empty.npz'
    empty.write_bytes(b'')
    refused(empty, r'the file is empty \(0 bytes\)')
    refused(tmp_path, 'it is a folder, not a checkpoint file')
    plain = tmp_path / 'plain.npz'
    np.savez(plain, a=np.ones(2))
    refused(plain, "it is a zip/.npz file but not a microtensor checkpoint \\(it has no '__microtensor__.json'")
    compressed = tmp_path / 'compressed.npz'
    np.savez_compressed(compressed, a=np.ones(2))
    refused(compressed, 'it is a zip/.npz file but not a microtensor checkpoint')
    single = tmp_path / 'single.npy'
    np.save(single, np.ones(2))
    refused(single, r'it is a single .npy array \(numpy.save\), not a checkpoint')
    version_1 = tmp_path / 'v1.npz'  # what mt.save wrote before checksums
    np.savez(version_1, __microtensor__=np.array('{"format": "microtensor-checkpoint", "version": 1, "tree": {}}'),
             w=np.ones(2))
    refused(version_1, r'it was written by an older microtensor \(checkpoint format version 1.*numpy.load')
    with pytest.raises(FileNotFoundError, match='no checkpoint file at'):
        mt.load(tmp_path / 'missing.npz')


class _Exploit:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (self.target,))


def test_pickles_are_refused_and_never_run(tmp_path):
    target = str(tmp_path / 'pwned')
    pickled = tmp_path / 'model.pt'
    pickled.write_bytes(pickle.dumps({'w': _Exploit(target)}))
    with pytest.raises(mt.CheckpointError, match='would need pickle'):
        mt.load(pickled)
    with_object_array = tmp_path / 'objects.npz'
    with zipfile.ZipFile(with_object_array, 'w') as archive:  # an .npz whose array needs unpickling
        with archive.open('w.npy', 'w') as member:
            np.lib.format.write_array(member, np.array([_Exploit(target)], dtype=object), allow_pickle=True)
    with pytest.raises(mt.CheckpointError, match='would need pickle'):
        mt.load(with_object_array)
    assert not os.path.exists(target)


# ---------------------------------------------------------------------- resuming
def two_moons(n=64, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, np.pi, n)
    upper = np.stack([np.cos(angle), np.sin(angle)], 1)
    lower = np.stack([1 - np.cos(angle), 0.5 - np.sin(angle)], 1)
    labels = rng.integers(0, 2, n)
    points = np.where(labels[:, None] == 0, upper, lower) + noise * rng.standard_normal((n, 2))
    return points.astype(np.float32), labels


def test_resuming_from_a_checkpoint_continues_the_loss_curve_exactly(tmp_path):
    X, y = two_moons()

    def build(seed):
        mt.manual_seed(seed)
        model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
        opt = optim.AdamW(model.parameters(), lr=0.05)
        return model, opt, optim.WarmupCosine(opt, warmup_steps=5, total_steps=30, min_lr=0.005)

    def train_step(model, opt, schedule, step):
        batch = np.random.default_rng(step).choice(len(X), 16, replace=False)  # the data order depends on step only
        loss = mt.cross_entropy(model(mt.tensor(X[batch])), mt.tensor(y[batch]))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        return loss.item()

    model, opt, schedule = build(seed=0)
    uninterrupted = [train_step(model, opt, schedule, t) for t in range(20)]

    model, opt, schedule = build(seed=0)
    for t in range(10):
        train_step(model, opt, schedule, t)
    mt.save({'model': model.state_dict(), 'optim': opt.state_dict(), 'schedule': schedule.state_dict(),
             'step': 10}, tmp_path / 'ckpt.npz')
    del model, opt, schedule

    model, opt, schedule = build(seed=1)  # a different initialisation, then the checkpoint
    ckpt = mt.load(tmp_path / 'ckpt.npz')
    model.load_state_dict(ckpt['model'])
    opt.load_state_dict(ckpt['optim'])
    schedule.load_state_dict(ckpt['schedule'])
    resumed = [train_step(model, opt, schedule, t) for t in range(ckpt['step'], 20)]
    assert resumed == uninterrupted[10:]  # bit for bit


@pytest.mark.skipif(not hasattr(os, 'symlink'), reason='this system has no symbolic links')
def test_save_onto_a_symbolic_link_writes_through_to_its_target_as_torch_save(tmp_path):
    target_dir = tmp_path / 'store'
    target_dir.mkdir()
    target, link = target_dir / 'weights.npz', tmp_path / 'latest.npz'
    mt.save({'w': mt.tensor([1.0, 2.0])}, target)
    try:
        os.symlink(target, link)
    except OSError as error:  # (Windows without the privilege)
        pytest.skip(f"cannot make a symbolic link here: {error}")
    mt.save({'w': mt.tensor([3.0, 4.0])}, link)
    assert os.path.islink(link) and os.path.realpath(link) == os.path.realpath(target)
    np.testing.assert_array_equal(mt.load(target)['w'].numpy(), [3.0, 4.0])
    assert sorted(os.listdir(tmp_path)) == ['latest.npz', 'store'] and os.listdir(target_dir) == ['weights.npz']
    dangling = tmp_path / 'next.npz'
    os.symlink(target_dir / 'new.npz', dangling)  # a link to a file not written yet: it is created
    mt.save({'w': mt.tensor([5.0])}, dangling)
    assert os.path.islink(dangling) and mt.load(target_dir / 'new.npz')['w'].tolist() == [5.0]


# ---------------------------------------------------------------------- format version 2: nn.Linear (in, out)
class TwoLayers(nn.Module):
    """Non-square Linears (a wrong layout cannot hide) and a Linear inside a container."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5)
        self.blocks = nn.ModuleList([nn.Linear(5, 2, bias=False)])

    def forward(self, x):
        return self.blocks[0](self.fc1(x).tanh())


def test_a_version_2_checkpoint_is_refused_naming_the_conversion_which_restores_the_model(tmp_path, monkeypatch):
    mt.manual_seed(0)
    model, x = TwoLayers(), mt.randn(4, 3)
    opt = optim.AdamW(model.parameters(), lr=0.1)
    (model(x) ** 2).sum().backward()
    opt.step()
    # what version 2 held: the same model with each Linear weight as (in, out), its moments likewise
    old_layout = {k: (v.T if k.endswith('weight') else v) for k, v in model.state_dict().items()}
    old_optim = opt.state_dict()
    for i, p in enumerate(model.parameters()):
        if p.ndim == 2:
            old_optim['state'][i] = {k: (v.T if getattr(v, 'ndim', 0) == 2 else v)
                                     for k, v in old_optim['state'][i].items()}
    path = tmp_path / 'old.npz'
    monkeypatch.setattr(serialization, 'VERSION', 2)
    mt.save({'model': old_layout, 'optim': old_optim, 'step': 1}, path)
    monkeypatch.undo()

    with pytest.raises(mt.CheckpointError, match=r"format version 2.*nn.Linear.*mt.upgrade_checkpoint\(path, model\)"):
        mt.load(path)
    fresh = TwoLayers()
    fresh_opt = optim.AdamW(fresh.parameters(), lr=0.1)
    assert mt.upgrade_checkpoint(path, fresh, fresh_opt) == path
    ckpt = mt.load(path)
    fresh.load_state_dict(ckpt['model'])
    fresh_opt.load_state_dict(ckpt['optim'])
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())
    for mine, theirs in zip(fresh_opt.state_dict()['state'].values(), opt.state_dict()['state'].values()):
        for k in theirs:
            np.testing.assert_array_equal(np.asarray(mine[k].numpy() if hasattr(mine[k], 'numpy') else mine[k]),
                                          np.asarray(theirs[k].numpy() if hasattr(theirs[k], 'numpy') else theirs[k]))


def test_upgrade_checkpoint_without_a_model_only_rewrites_the_version(tmp_path, monkeypatch):
    weights = {'W_Q.weight': mt.randn(3, 5)}
    monkeypatch.setattr(serialization, 'VERSION', 2)
    mt.save(weights, tmp_path / 'old.npz')
    monkeypatch.undo()
    out = mt.upgrade_checkpoint(tmp_path / 'old.npz', None, out=tmp_path / 'new.npz')
    np.testing.assert_array_equal(mt.load(out)['W_Q.weight'].numpy(), weights['W_Q.weight'].numpy())
    with pytest.raises(TypeError, match='the Module the checkpoint was saved from'):
        mt.upgrade_checkpoint(tmp_path / 'old.npz', {'fc1': 1})
