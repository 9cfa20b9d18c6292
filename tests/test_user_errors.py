"""Errors that name the user's mistake, never an internal exception: an optimizer hyper-parameter edited
into something that is not a number (named at step() with its group and key), the PyTorch bridge's
loader given a file that is not its .npz, a lesson given sizes its model cannot take, the viewer and
draw_graph given a tensor that nothing required grad for; and draw_graph refusing at once a picture
Graphviz would spend minutes on."""
import io
import math
import pickle
import time
import zipfile

import numpy as np
import pytest

import microtensor as mt
from microtensor import optim

# --------------------------------------------------------------------------- optimizer hyper-parameters
OPTIMIZERS = {'SGD': (optim.SGD, dict(lr=0.1, momentum=0.9)), 'Adam': (optim.Adam, dict(lr=0.1)),
              'AdamW': (optim.AdamW, dict(lr=0.1))}
KEYS = {'SGD': ['lr', 'momentum', 'weight_decay', 'nesterov'],
        'Adam': ['lr', 'betas', 'eps', 'weight_decay'], 'AdamW': ['lr', 'betas', 'eps', 'weight_decay']}
BAD_VALUES = {'a string': 'fast', 'None': None, 'a list of three': [0.1, 0.2, 0.3], 'a dict': {'lr': 0.1},
              'nan': math.nan, 'a negative number': -1.0, 'a tensor of two': mt.tensor([0.1, 0.2]),
              'a complex number': 1j}


def _optimizer(name):
    cls, kwargs = OPTIMIZERS[name]
    a, b = mt.tensor([1.0, 2.0], requires_grad=True), mt.tensor([3.0, 4.0], requires_grad=True)
    opt = cls([{'params': [a]}, {'params': [b]}], **kwargs)
    a.grad, b.grad = mt.tensor([0.5, 0.5]), mt.tensor([0.5, 0.5])
    return opt, (a, b)


CASES = [(name, key, bad) for name in OPTIMIZERS for key in KEYS[name] for bad in BAD_VALUES]


@pytest.mark.parametrize('name, key, bad', CASES, ids=[f'{n} {k} = {b}' for n, k, b in CASES])
def test_a_hyper_parameter_edited_into_a_non_number_is_named_at_step(name, key, bad):
    opt, params = _optimizer(name)
    before = [p.numpy().copy() for p in params]
    opt.param_groups[1][key] = BAD_VALUES[bad]
    with pytest.raises((TypeError, ValueError)) as caught:
        opt.step()
    message = str(caught.value)
    assert message.startswith(f"{name}.step: param_groups[1]: {key} must be"), message
    for p, old in zip(params, before):  # checked before any parameter moves
        np.testing.assert_array_equal(p.numpy(), old)


@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_a_deleted_hyper_parameter_is_named_at_step(name):
    opt, _ = _optimizer(name)
    del opt.param_groups[0]['lr']
    with pytest.raises(ValueError, match=rf"^{name}\.step: param_groups\[0\] has no 'lr'"):
        opt.step()


@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_edited_hyper_parameters_that_are_numbers_still_take_effect(name):
    opt, (a, b) = _optimizer(name)
    opt.param_groups[1]['lr'] = np.float32(0.0)  # a numpy number is a number: group 1 is frozen
    opt.step()
    assert b.tolist() == [3.0, 4.0] and a.tolist() != [1.0, 2.0]
    assert type(opt.param_groups[1]['lr']) is float


def test_a_schedule_names_a_base_lr_edited_into_a_non_number():
    opt, _ = _optimizer('AdamW')
    schedule = optim.WarmupCosine(opt, warmup_steps=2, total_steps=10)
    opt.param_groups[1]['initial_lr'] = 'high'
    with pytest.raises(TypeError, match=r"^WarmupCosine: param_groups\[1\]: initial_lr must be"):
        schedule.step()


# --------------------------------------------------------------------------- the PyTorch bridge's loaders
def _npz_member(header, data=b''):
    """A .npz holding one member 'w.npy' with this header dict and these data bytes."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w') as archive:
        archive.writestr('w.npy', buffer.getvalue() + data)
    return out.getvalue()


def _savez(**arrays):
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _single_npy():
    out = io.BytesIO()
    np.save(out, np.ones(3))
    return out.getvalue()


BAD_FILES = {  # kind -> (the file's bytes, what the message says)
    'a single .npy': (_single_npy(), 'single .npy array'),
    'a text file': (b'lr = 0.1\nsteps = 100\n', 'not a .npz archive'),
    'an empty file': (b'', 'empty'),
    'a pickle': (pickle.dumps({'w': [1.0]}), 'pickle can run any code'),
    'a header declaring an impossible shape': (
        _npz_member({'descr': '<f4', 'fortran_order': False, 'shape': (10 ** 9, 10 ** 9)}, b'\0' * 16),
        'declares shape (1000000000, 1000000000)'),
    'a header declaring too little': (
        _npz_member({'descr': '<f8', 'fortran_order': False, 'shape': (2,)}, b'\0' * 64), 'holds 64 bytes'),
    'an array of Python objects': (_savez(w=np.array([{'a': 1}], dtype=object)), 'only pickle can read'),
    'a truncated .npz': (_savez(w=np.ones(100))[:300], 'truncated or corrupted'),
    'a zip of something else': (b'', 'is not a .npy array'),  # filled below
    'a microtensor checkpoint': (b'', 'mt.load'),  # filled below
}


def _file(kind, tmp_path):
    data, said = BAD_FILES[kind]
    path = tmp_path / 'state.npz'
    if kind == 'a zip of something else':
        with zipfile.ZipFile(path, 'w') as archive:
            archive.writestr('notes.txt', 'hello')
    elif kind == 'a microtensor checkpoint':
        mt.save({'w': mt.ones(2)}, path)
    else:
        path.write_bytes(data)
    return path, said


@pytest.mark.parametrize('kind', sorted(BAD_FILES))
def test_load_torch_state_dict_names_what_the_file_is(kind, tmp_path):
    from transformer import GPT
    from transformer.torch_bridge import load_torch_state_dict
    path, said = _file(kind, tmp_path)
    model = GPT(vocab_size=8, d_model=8, n_layers=1, n_heads=2, max_len=4)
    with pytest.raises(ValueError) as caught:
        load_torch_state_dict(model, path)
    message = str(caught.value)
    assert message.startswith(f"load_torch_state_dict: cannot read {str(path)!r}: ") and said in message, message
    assert 'allow_pickle' not in message


@pytest.mark.parametrize('kind', sorted(BAD_FILES))
def test_load_microtensor_checkpoint_names_what_the_file_is(kind, tmp_path):
    pytest.importorskip('torch', reason='the exported module is a PyTorch module')
    from transformer import GPT, to_torch
    from transformer.torch_bridge import load_microtensor_checkpoint
    path, _ = _file(kind, tmp_path)
    net = to_torch(GPT(vocab_size=8, d_model=8, n_layers=1, n_heads=2, max_len=4))
    with pytest.raises((ValueError, TypeError, KeyError)) as caught:
        load_microtensor_checkpoint(net, path)
    message = str(caught.value)
    assert str(path) in message and 'allow_pickle=True' not in message and 'Traceback' not in message, message


def test_a_npz_header_is_checked_before_anything_is_allocated(tmp_path, monkeypatch):
    from microtensor import npy_format
    path, _ = _file('a header declaring an impossible shape', tmp_path)
    allocated = []
    real_empty = npy_format.numpy.empty
    monkeypatch.setattr(npy_format.numpy, 'empty', lambda *a, **k: allocated.append(a) or real_empty(*a, **k))
    with pytest.raises(ValueError, match='need 4000000000000000000 '):
        npy_format.read_npz(str(path), 'read_npz')
    assert allocated == []


def test_the_bridge_reads_compressed_and_fortran_ordered_arrays(tmp_path):
    from microtensor.npy_format import read_npz
    w = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.savez_compressed(tmp_path / 'c.npz', w=w, b=np.arange(3, dtype='int16'))
    arrays = read_npz(str(tmp_path / 'c.npz'), 'read_npz')
    np.testing.assert_array_equal(arrays['w'], w)
    assert arrays['b'].dtype == np.int16 and arrays['b'].tolist() == [0, 1, 2]


# --------------------------------------------------------------------------- lessons: sizes the model can't take
def _lessons_with(*flags):
    import importlib
    from demos import __main__ as tour
    found = []
    for name, _ in tour.LESSONS:
        main = importlib.import_module(f'demos.{name}').main
        with pytest.raises(SystemExit), _quiet():
            main(['--help'])
        if all(flag in _quiet.out.getvalue() for flag in flags):
            found.append(name)
    return found


class _quiet:
    """Capture stdout (a lesson's --help) without pytest's fixtures, at collection time."""
    out = io.StringIO()

    def __enter__(self):
        import contextlib
        _quiet.out = io.StringIO()
        self.redirect = contextlib.redirect_stdout(_quiet.out)
        self.redirect.__enter__()

    def __exit__(self, *exc):
        self.redirect.__exit__(*exc)


HEADS = _lessons_with('--d-model', '--n-heads')
SPLITS = [('6', '4'), ('8', '16'), ('10', '3')]


def test_the_lessons_with_a_width_and_a_head_count_are_found():
    assert {'compare_with_torch', 'residual_highway', 'train_gpt'} <= set(HEADS)


@pytest.mark.parametrize('d_model, n_heads', SPLITS)
@pytest.mark.parametrize('name', HEADS)
def test_a_width_the_heads_do_not_divide_is_a_usage_error(name, d_model, n_heads, capsys, tmp_path, monkeypatch):
    import importlib
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(f'demos.{name}').main(['--d-model', d_model, '--n-heads', n_heads])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and 'error:' in err and 'Traceback' not in err, err
    assert f'--n-heads {n_heads}' in err and f'--d-model {d_model}' in err


@pytest.mark.parametrize('argv, said', [
    (['--d-model', '12', '--n-heads', '4'], 'RoPE'),          # d_k = 3: the variant's RoPE rotates pairs
    (['--d-model', '20', '--n-heads', '5'], 'K/V heads'),     # the variant's 2 K/V heads do not divide 5
])
def test_compare_with_torch_refuses_what_its_variant_cannot_take(argv, said, capsys):
    from demos import compare_with_torch
    with pytest.raises(SystemExit) as exit_:
        compare_with_torch.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and said in err and '--n-heads' in err and 'Traceback' not in err, err


# --------------------------------------------------------------------------- nothing required grad
def _no_grad_results():
    x = mt.tensor([1.0, 2.0])
    with mt.no_grad():
        under_no_grad = (mt.tensor([1.0], requires_grad=True) * 2).sum()
    return {'from inputs without requires_grad': (x * 2).exp().sum(), 'under no_grad': under_no_grad,
            'a plain tensor': x, 'integer arithmetic': mt.tensor([1, 2]) + 1}


NO_GRAD = _no_grad_results()


def _viewer(t):
    return mt.BackpropViewer(t)


def _draw(t):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    return mt.draw_graph(t)


@pytest.mark.parametrize('show', [_viewer, _draw], ids=['BackpropViewer', 'draw_graph'])
@pytest.mark.parametrize('kind', sorted(NO_GRAD))
def test_a_tensor_nothing_required_grad_for_is_named_so(show, kind):
    with pytest.raises(ValueError, match='nothing required grad') as caught:
        show(NO_GRAD[kind])
    assert 'leaf' not in str(caught.value) and 'requires_grad=True' in str(caught.value)


@pytest.mark.parametrize('show', [_viewer, _draw], ids=['BackpropViewer', 'draw_graph'])
def test_a_leaf_that_requires_grad_is_still_called_a_leaf(show):
    with pytest.raises(ValueError, match='it is a leaf'):
        show(mt.ones(2, requires_grad=True))


def test_pytorch_also_says_that_nothing_required_grad():
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for this message')
    with pytest.raises(RuntimeError, match='does not require grad'):
        (torch.tensor([1.0, 2.0]) * 2).sum().backward()


# --------------------------------------------------------------------------- draw_graph's node budget
def _chain(n_ops):
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(n_ops // 2):
        y = (y * 1.0001).tanh()
    return y.sum()


def test_draw_graph_refuses_a_5000_op_graph_at_once_naming_the_option():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    loss = _chain(5000)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r'more than max_nodes=1000') as caught:
        mt.draw_graph(loss, path='never-written.svg')
    assert time.perf_counter() - start < 5  # no layout, no backward pass of its own
    assert 'module=' in str(caught.value) and 'max_depth=' in str(caught.value)


@pytest.mark.parametrize('max_nodes, max_depth, drawn', [(1000, 20, True), (20_000, None, True), (10, None, False)])
def test_draw_graph_draws_a_part_or_a_raised_budget(max_nodes, max_depth, drawn):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    loss = _chain(5000 if max_depth or max_nodes > 1000 else 40)
    if not drawn:
        with pytest.raises(ValueError, match='max_nodes=10'):
            mt.draw_graph(loss, max_nodes=max_nodes, grads=False)
        return
    dot = mt.draw_graph(loss, max_nodes=max_nodes, max_depth=max_depth, grads=False)  # the source only: no layout
    ops = dot.source.count('shape=box')
    assert ops == (max_depth + 2 if max_depth else 5001)  # the kept ops and the stub where the picture is cut


@pytest.mark.parametrize('bad', [0, -5, 2.5, 'many'])
def test_draw_graph_max_nodes_is_checked(bad):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    with pytest.raises((TypeError, ValueError), match='max_nodes'):
        mt.draw_graph(_chain(4), max_nodes=bad)
