"""Devices and bounds: the engine's own checks fire before the backend is reached.

    devices                  index/mask/target arrays on another device: an error naming both
    bounds                   out-of-range ids raise (cupy would wrap them silently)
    numpy vs cupy            calls that differ between the backends are avoided; the no-GPU
                             message; cupy imported whichever wheel provides it
"""
import ast
import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import backend
from microtensor.ops.attention import masked_softmax


# ---------------------------------------------------------------------------- devices of array parameters


class _FakeGpuArray(np.ndarray):
    """A numpy array that the patched backend reports as living on 'cuda'."""


@pytest.fixture
def fake_gpu(monkeypatch):
    real_device_of = backend.device_of
    monkeypatch.setattr(backend, 'device_of', lambda a: 'cuda' if isinstance(a, _FakeGpuArray) else real_device_of(a))
    return lambda array: np.asarray(array).view(_FakeGpuArray)


PARAMETER_ARRAYS = {  # op on a (fake) GPU tensor x, given a host array a
    'x[ids]': ('GetItem', 'index', lambda x, a: x[a.astype(int) % 2]),
    'x[:, ids]': ('GetItem', 'index', lambda x, a: x[:, a.astype(int) % 2]),
    'x[mask]': ('GetItem', 'index', lambda x, a: x[a > 0]),
    'embedding E[ids]': ('GetItem', 'index', lambda x, a: x[mt.Tensor._wrap(a.astype(int) % 2)]),
    'x[ids] = v': ('setitem', 'index', lambda x, a: x.__setitem__(a.astype(int) % 2, 0.0)),
    'x[0] = array': ('setitem', 'operand', lambda x, a: x.__setitem__(0, a)),
    'gather': ('gather', 'index', lambda x, a: x.gather(1, a.astype(int) % 2)),
    'scatter': ('scatter', 'index', lambda x, a: x.scatter(1, a.astype(int) % 2, 0.0)),
    'scatter src': ('scatter', 'src', lambda x, a: x.scatter(1, (x.data * 0).astype(int), mt.Tensor._wrap(a))),
    'scatter_add src': ('scatter_add', 'src',
                        lambda x, a: x.scatter_add(1, (x.data * 0).astype(int), mt.Tensor._wrap(a))),
    'copy_': ('copy_', 'source', lambda x, a: x.copy_(a)),
    'where': ('where', 'condition', lambda x, a: mt.where(a > 0, x, 0.0)),
    'masked_fill': ('masked_fill', 'mask', lambda x, a: x.masked_fill(a > 0, 0.0)),
    'masked_softmax': ('masked_softmax', 'mask', lambda x, a: masked_softmax(x, a > 0)),
    'cross_entropy': ('cross_entropy', 'targets', lambda x, a: mt.cross_entropy(x, a.astype(int) % 2)),
    'x * array': ('mul', 'operand', lambda x, a: x * a),
    'backward(grad)': ('backward', 'gradient', lambda x, a: x.reshape(4).backward(a.reshape(4))),
}


@pytest.mark.parametrize('case', PARAMETER_ARRAYS)
def test_an_array_parameter_on_another_device_is_an_error_naming_both(case, fake_gpu):
    op, what, call = PARAMETER_ARRAYS[case]
    x = mt.Tensor._wrap(fake_gpu(np.ones((2, 2)))).requires_grad_(case == 'backward(grad)')
    host = np.array([[1.0, -1.0], [-1.0, 1.0]])
    with pytest.raises(RuntimeError, match=f"{op}: the {what} is on 'cpu' but the tensor is on 'cuda'.*\\.to\\('cuda'\\)"):
        call(x, host)
    with pytest.raises(RuntimeError, match=f"{op}: the {what} is on 'cuda' but the tensor is on 'cpu'"):
        call(mt.tensor(np.ones((2, 2))).requires_grad_(case == 'backward(grad)'), fake_gpu(host))


# ---------------------------------------------------------------------------- index bounds: the engine's own check


class _WrappingArray(np.ndarray):
    """Stands in for cupy: an out-of-range integer index wraps around instead of raising.
    `reached` records every index that got to the backend."""
    reached = []

    def __getitem__(self, index):
        _WrappingArray.reached.append(index)
        parts = index if isinstance(index, tuple) else (index,)
        wrapped = tuple(p % n if isinstance(p, np.ndarray) and p.dtype.kind in 'iu' else p
                        for p, n in zip(parts, self.shape))
        return super().__getitem__(wrapped + parts[len(wrapped):])


def test_the_stand_in_wraps_as_cupy_does():
    a = np.arange(3.0).view(_WrappingArray)
    assert np.asarray(a[np.array([4])]).tolist() == [1.0]  # what cupy does with id 4 of 3: silently row 1


@pytest.mark.parametrize('case', ['getitem', 'getitem 2nd axis', 'embedding', 'setitem', 'cross_entropy', 'negative'])
@given(n=st.integers(1, 4), past=st.integers(0, 10))
def test_out_of_range_ids_raise_before_the_backend_is_reached(case, n, past):
    _WrappingArray.reached.clear()
    x = mt.Tensor._wrap(np.ones((n, 2)).view(_WrappingArray)).requires_grad_()
    bad = n + past if case != 'negative' else -n - 1 - past
    ids = np.array([0, bad])
    call = {'getitem': lambda: x[ids], 'negative': lambda: x[ids], 'getitem 2nd axis': lambda: x[:, np.array([bad + 2 - n])],
            'embedding': lambda: x[mt.tensor(ids.reshape(1, 2))], 'setitem': lambda: mt.Tensor._wrap(x.data).__setitem__(ids, 0.0),
            'cross_entropy': lambda: mt.cross_entropy(x.T, np.array([0, bad]))}[case]
    op = {'setitem': 'setitem', 'cross_entropy': 'cross_entropy'}.get(case, 'GetItem')
    with pytest.raises(IndexError, match=f"{op}: .*{bad if case != 'getitem 2nd axis' else bad + 2 - n}"):
        call()
    assert not any(isinstance(i, np.ndarray) or isinstance(i, tuple) and any(isinstance(p, np.ndarray) for p in i)
                   for i in _WrappingArray.reached), "an out-of-range index reached the backend"


def test_in_range_negative_ids_work_and_their_gradient_goes_to_the_right_rows():
    x = mt.tensor(np.zeros((3, 2)), requires_grad=True)
    x[np.array([-1, 0, -1])].sum().backward()
    assert x.grad.tolist() == [[1, 1], [0, 0], [2, 2]]


# ---------------------------------------------------------------------------- numpy vs cupy


def test_scatter_add_is_add_at_on_every_backend():
    """cupyx.scatter_add is deprecated in cupy 13 and 14: the backend uses add.at, which both have."""
    source = inspect.getsource(backend.scatter_add)
    assert 'array_module(target).add.at(' in source and 'cupyx.scatter_add(' not in source
    target = np.zeros(3)
    backend.scatter_add(target, np.array([0, 2, 0]), np.array([1.0, 2.0, 3.0]))
    assert target.tolist() == [4.0, 0.0, 2.0]


@given(st.integers(1, 6), st.integers(0, 3), st.data())
def test_scatter_adds_rows_fast_path_gives_add_ats_bits(n_rows, width, data):
    """An embedding's backward (rows picked by one integer array, bare or as GetItem's (ids,))
    takes the flat-index path: the same sums, bit for bit, as numpy's add.at on the rows."""
    ids = np.array(data.draw(st.lists(st.integers(-n_rows, n_rows - 1), max_size=12)), dtype=np.int64)
    shape = (n_rows,) + (width,) * (width > 0)
    values = np.random.default_rng(len(ids)).standard_normal(ids.shape + shape[1:]).astype(np.float32)
    start = np.random.default_rng(width).standard_normal(shape).astype(np.float32)
    expected = start.copy()
    np.add.at(expected, ids, values)
    for index in (ids, (ids,)):
        target = start.copy()
        assert backend.scatter_add(target, index, values) is target
        np.testing.assert_array_equal(target, expected)


def test_clip_without_bounds_never_calls_the_backends_clip_without_bounds(monkeypatch):
    """cupy 13's clip raises "must set either max or min"; clip refuses that case itself, as PyTorch
    does, before any backend call; one bound alone works on both backends."""
    real_clip = np.clip

    def clip_like_cupy13(a, a_min=None, a_max=None, *args, **kwargs):
        if a_min is None and a_max is None:
            raise ValueError("must set either max or min")
        return real_clip(a, a_min, a_max, *args, **kwargs)

    monkeypatch.setattr(np, 'clip', clip_like_cupy13)
    x = mt.tensor(np.array([-2.0, 0.5, 3.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match="clip: at least one of min and max must be given"):  # as PyTorch
        x.clip()
    y = x.clip(None, 1.0)
    assert y.tolist() == [-2.0, 0.5, 1.0] and x.clip(0.0).tolist() == [0.0, 0.5, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0]


@pytest.mark.parametrize('situation', ['no cupy', 'cupy fails to import', 'cupy without a GPU'])
def test_the_no_gpu_message_says_how_to_install_cupy_for_this_checkout(situation, without_cupy, monkeypatch):
    class _NoDevice:
        __version__ = '13.3.0'

        class cuda:
            class runtime:
                @staticmethod
                def getDeviceCount():
                    raise RuntimeError('cudaErrorNoDevice')

    if situation == 'cupy fails to import':
        monkeypatch.setattr(backend, '_cupy_import_error', ImportError('libcudart.so.12: cannot open shared object'))
    elif situation == 'cupy without a GPU':
        monkeypatch.setattr(backend, 'cupy', _NoDevice)
    with pytest.raises(RuntimeError) as error:
        mt.zeros(2, device='cuda')
    message = str(error.value)
    for needed in ["zeros: device 'cuda' requested but no GPU is available", "pip install -e '.[gpu]'",
                   'cupy-cuda12x', 'cupy-cuda13x', '[ctk]', 'any cupy build works']:
        assert needed in message
    assert 'microtensor[gpu]' not in message
    assert {'no cupy': 'cupy is not installed', 'cupy fails to import': 'failed to import (libcudart',
            'cupy without a GPU': 'cupy 13.3.0 is installed but sees no GPU'}[situation] in message


@pytest.mark.slow
def test_the_no_gpu_tests_pass_where_cupy_is_installed_but_fails_to_import(tmp_path):
    fake = tmp_path / 'cupy'  # an installed cupy whose import fails, as with a broken CUDA install
    fake.mkdir()
    (fake / '__init__.py').write_text("raise ImportError('libcudart.so.12: cannot open shared object file')\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tests = ['tests/test_edges_devices.py::test_the_no_gpu_message_says_how_to_install_cupy_for_this_checkout',
             'tests/test_debugger_main.py::test_without_cupy_it_says_why_there_is_no_gpu']
    run = subprocess.run([sys.executable, '-m', 'pytest', '-o', 'addopts=-q', '-p', 'no:cacheprovider', *tests],
                         cwd=root, env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), root])),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and '4 passed' in run.stdout, run.stdout + run.stderr


def test_the_engine_imports_cupy_whichever_wheel_provides_it():
    tree = ast.parse(inspect.getsource(backend))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert 'cupy' in imported and not any(name.startswith('cupy_') for name in imported)
    engine = [inspect.getsource(m) for name, m in sys.modules.items()
              if name.startswith('microtensor') and m is not backend and hasattr(m, '__file__')]
    assert not any(re.search(r'^\s*(import|from) cupy', src, re.M) for src in engine), "only backend.py imports cupy"
