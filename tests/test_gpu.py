"""The GPU (cupy) path computes what the CPU (numpy) path computes.

Every op in microtensor.selftest.CASES runs forward and backward on the GPU in
float64 and is compared with the CPU float64 reference; device moves, seeding,
dropout, gradcheck, an optimizer step and the error for mixed devices are checked
on the GPU too.  Those tests need a CUDA GPU and are skipped without one.

The tests at the end always run: they check the self-test harness itself on the
CPU (float32 against float64), that it can fail, and that its table covers every op.
"""
import io
import contextlib

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn, optim, selftest
from microtensor.autograd import Function
from microtensor.ops.shape import ToDevice

needs_gpu = pytest.mark.skipif(not mt.cuda.is_available(), reason=(
    "no CUDA GPU: cupy is not installed (pip install -e '.[gpu]')" if mt.backend.cupy is None
    else "no CUDA GPU: cupy is installed but sees no device"))


# ---------------------------------------------------------------------------- on the GPU
@needs_gpu
@pytest.mark.parametrize('case', selftest.CASES, ids=[c.name for c in selftest.CASES])
def test_op_on_gpu_matches_cpu(case):
    result = selftest.compare(case, 'cuda', 'float64')
    assert not result.error
    assert result.passed, (f"{case.name}: cuda vs cpu (float64) differ by {result.forward_diff:.3g} forward, "
                           f"{result.grad_diff:.3g} in a gradient")


@needs_gpu
def test_ops_on_gpu_match_cpu_in_float32():
    failed = [r.case.name for r in selftest.run('cuda', 'float32') if not r.passed]
    assert not failed


@needs_gpu
def test_to_cuda_and_back_keeps_values_and_types():
    x = mt.tensor([[1.5, -2.0], [0.25, 3.0]])
    on_gpu = x.to('cuda')
    assert on_gpu.device == 'cuda' and type(on_gpu.data).__module__.startswith('cupy')
    back = on_gpu.cpu()
    assert back.device == 'cpu' and isinstance(back.data, np.ndarray)
    assert np.array_equal(back.numpy(), x.numpy()) and back.dtype == x.dtype
    assert isinstance(on_gpu.numpy(), np.ndarray)  # .numpy() always gives host memory
    assert on_gpu.sum().item() == pytest.approx(2.75)
    assert on_gpu.to('cuda:0') is on_gpu  # already there: no copy, no op


@needs_gpu
def test_gradient_flows_through_device_moves():
    x = mt.tensor([1.0, 2.0, 3.0], dtype='float64', requires_grad=True)
    (x.to('cuda') ** 2).sum().backward()  # ToDevice.backward copies the gradient back to the CPU
    assert x.grad.device == 'cpu'
    assert np.allclose(x.grad.numpy(), 2 * x.numpy())

    w = mt.tensor([1.0, -1.0], dtype='float64', device='cuda', requires_grad=True)
    (w.cpu() * 3).sum().backward()
    assert w.grad.device == 'cuda'
    assert np.allclose(w.grad.numpy(), [3.0, 3.0])


@needs_gpu
def test_manual_seed_makes_cuda_randomness_reproducible():
    def draw():
        x = mt.ones(64, device='cuda')
        return [t.numpy() for t in (mt.randn(3, 4, device='cuda'), mt.rand(5, device='cuda'),
                                    mt.randint(0, 10, (6,), device='cuda'), mt.dropout(x, 0.5))]

    mt.manual_seed(123)
    first = draw()
    mt.manual_seed(123)
    second = draw()
    mt.manual_seed(124)
    other = draw()
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not np.array_equal(first[0], other[0])


@needs_gpu
def test_mixing_devices_is_an_error_naming_both():
    a, b = mt.ones(3), mt.ones(3, device='cuda')
    for combine in (lambda: a + b, lambda: b * a, lambda: mt.ones(2, 3, device='cuda') @ mt.ones(3, 2)):
        with pytest.raises(RuntimeError, match='different devices') as error:
            combine()
        assert 'cpu' in str(error.value) and 'cuda' in str(error.value)


@needs_gpu
def test_default_device_cuda():
    mt.set_default_device('cuda')
    try:
        x = mt.zeros(2, 3)
        y = mt.tensor([1.0, 2.0]) * 2
        assert x.device == 'cuda' and y.device == 'cuda'
    finally:
        mt.set_default_device('cpu')
    assert mt.zeros(1).device == 'cpu'


@needs_gpu
def test_dropout_on_cuda_scales_and_masks_the_gradient():
    x = mt.ones(1000, device='cuda', requires_grad=True)
    y = mt.dropout(x, p=0.25, training=True)
    kept = y.numpy() != 0
    assert np.allclose(y.numpy()[kept], 1 / 0.75) and 0.6 < kept.mean() < 0.9
    y.sum().backward()
    assert np.allclose(x.grad.numpy(), y.numpy())  # dy/dx = mask / (1 - p) = y when x = 1


@needs_gpu
def test_gradcheck_runs_on_cuda():
    x = mt.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype='float64', device='cuda', requires_grad=True)
    w = mt.tensor(np.linspace(0.5, 1.5, 3), dtype='float64', device='cuda', requires_grad=True)
    assert mt.gradcheck(lambda x, w: mt.softmax(x * w).log().sum(axis=0), [x, w])
    assert mt.gradgradcheck(lambda x: (x.tanh() * x).sum(), [x])


@needs_gpu
def test_training_steps_on_cuda_match_cpu():
    def train(device):
        mt.manual_seed(0)  # the same initial weights: drawn on the CPU, then moved
        model = nn.Linear(4, 3, dtype='float64').to(device)
        optimizer = optim.Adam(model.parameters(), lr=0.1)
        data = np.linspace(-1, 1, 20).reshape(5, 4)
        x, targets = mt.tensor(data, device=device), mt.tensor([0, 2, 1, 1, 0], device=device)
        for _ in range(3):
            optimizer.zero_grad()
            mt.cross_entropy(model(x), targets).backward()
            optimizer.step()
        return [p.numpy() for p in model.parameters()]

    for on_cpu, on_gpu in zip(train('cpu'), train('cuda')):
        # float64 rounding differs a little between the backends; Adam divides by sqrt(v) + eps,
        # which can enlarge it for a tiny gradient, hence not 1e-12
        assert np.allclose(on_cpu, on_gpu, rtol=1e-7, atol=1e-9)


@needs_gpu
def test_errors_on_cuda_are_as_clear_as_on_cpu():
    logits = mt.zeros(2, 3, device='cuda', requires_grad=True)
    with pytest.raises(IndexError, match=r'outside \[0, 3\)'):
        mt.cross_entropy(logits, mt.tensor([0, 5], device='cuda'))
    x = mt.tensor([0.0, 1.0], dtype='float64', device='cuda', requires_grad=True)
    with pytest.raises(FloatingPointError, match='Sqrt'):
        with mt.detect_anomaly():
            x.sqrt().sum().backward()  # d sqrt(x)/dx = inf at 0


# ---------------------------------------------------------------------------- the harness, on the CPU
def test_selftest_passes_on_cpu_float32_against_float64():
    results = selftest.run('cpu', 'float32')
    assert [r.case.name for r in results if not r.passed] == []
    # float32 really ran: rounding shows up, well inside the tolerance
    assert max(r.forward_diff for r in results) > 1e-8
    assert max(max(r.forward_diff, r.grad_diff) for r in results) < 1e-5


class _WrongGradient(Function):
    """y = exp(x), with the backward of y = x: a bug the table must catch."""

    def forward(self, x):
        return mt.backend.array_module(x).exp(x)

    def backward(self, g):
        return (g,)


def test_selftest_catches_a_wrong_forward_gradient_or_shape():
    wrong_forward = selftest.Case('off by 1e-3 in float32', lambda x: x * (1.001 if x.dtype == mt.float32 else 1.0),
                                  ((3, 4),))
    wrong_gradient = selftest.Case('exp with a wrong backward', lambda x: _WrongGradient.apply(x)
                                   if x.dtype == mt.float32 else x.exp(), ((3, 4),))
    wrong_shape = selftest.Case('float32 run drops a row', lambda x: x[1:] if x.dtype == mt.float32 else x, ((3, 4),))
    forward, gradient, shape = selftest.run('cpu', 'float32', cases=[wrong_forward, wrong_gradient, wrong_shape])
    assert not forward.passed and forward.forward_diff > 1e-4
    assert not gradient.passed and gradient.forward_diff < 1e-5 < gradient.grad_diff
    assert not shape.passed and 'shape' in shape.error  # backward(grad) refuses the reference's shape


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_selftest_table_covers_every_op(monkeypatch):
    """Every Function in microtensor/ops runs (forward or backward) in some case: a new op
    needs a row in selftest.CASES, so that it is compared on the GPU too."""
    used = set()
    apply = Function.apply.__func__

    def recording_apply(cls, *inputs, **params):
        used.add(cls)
        return apply(cls, *inputs, **params)

    monkeypatch.setattr(Function, 'apply', classmethod(recording_apply))
    selftest.run('cpu', 'float32')
    ops = {cls for cls in _subclasses(Function) if cls.__module__.startswith(('microtensor.ops.', 'microtensor.fused.'))
           and cls.__dict__.get('numpy_name', '') is not None}  # (not the families' bases, Unary and Step)
    # ToDevice is a no-op without a GPU; the 'to cpu and back' case runs it on one
    missing = sorted(cls.__name__ for cls in ops - used - {ToDevice})
    assert missing == [], f"ops not exercised by microtensor.selftest.CASES: {missing}"


def test_selftest_command_line_prints_the_table():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = selftest.main(['--device', 'cpu'])
    text = out.getvalue()
    assert status == 0
    assert 'cpu float32 vs the CPU float64 reference' in text
    for case in selftest.CASES:
        assert f'\n{case.name} ' in text
    assert text.count('PASS') == len(selftest.CASES) and 'FAIL' not in text.replace('FAILED', '')


@pytest.mark.skipif(mt.cuda.is_available(), reason="a GPU is available: the request succeeds")
def test_selftest_on_cuda_without_a_gpu_says_why(capsys):
    with pytest.raises(SystemExit) as exit:
        selftest.main(['--device', 'cuda'])
    assert exit.value.code == 2 and 'no GPU is available' in capsys.readouterr().err
