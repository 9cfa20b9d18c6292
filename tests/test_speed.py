"""What makes a training step fast must not change what it computes: malloc tuning at
import, gradients summed in place only into arrays the engine made, and a float32 step
that never computes in float64 (textbook or fused); the fused layer's row blocks change no
bit.  (Timings live in benchmarks/.)"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from microtensor import optim
from microtensor.autograd import Function
from microtensor.fused import rows
from microtensor.ops.elementwise import Add
from transformer import GPT, next_token_loss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------- malloc tuning
def tuned_in_a_fresh_process(setting):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop('MICROTENSOR_MALLOC_TUNING', None)
    if setting is not None:
        env['MICROTENSOR_MALLOC_TUNING'] = setting
    out = subprocess.run([sys.executable, '-c', 'import microtensor; print(microtensor.malloc_tuning.tuned)'],
                         env=env, capture_output=True, text=True, check=True).stdout
    return out.strip() == 'True'


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith('linux') or os.confstr('CS_GNU_LIBC_VERSION') is None,
                    reason='malloc tuning applies to Linux with glibc only')
def test_malloc_is_tuned_at_import_unless_turned_off():
    assert tuned_in_a_fresh_process(None)
    assert tuned_in_a_fresh_process('1')
    assert not tuned_in_a_fresh_process('0')


# ---------------------------------------------------------------------------- accumulation
def count_ops(monkeypatch, cls):
    """A list that grows by one each time `cls` is applied."""
    calls = []
    apply = Function.apply.__func__

    def recording_apply(op, *inputs, **params):
        if op is cls:
            calls.append(op)
        return apply(op, *inputs, **params)

    monkeypatch.setattr(Function, 'apply', classmethod(recording_apply))
    return calls


def test_gradients_from_many_uses_are_summed_in_place(monkeypatch):
    """x feeds four ops: one new array for the sum, the third and fourth gradients are
    added into it (without in-place summing this takes three Adds)."""
    x = mt.randn(3, 4, requires_grad=True)
    y = x.sum() + (2 * x).sum() + x.exp().sum() + (x * x).sum()
    adds = count_ops(monkeypatch, Add)
    y.backward()
    assert len(adds) == 1
    expected = 1 + 2 + np.exp(x.numpy()) + 2 * x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_accumulation_never_writes_into_gradients_it_did_not_make():
    """The gradients a user passes in, and those the ops send (which backward_steps shows
    and Add shares between its two inputs), keep their values."""
    x = mt.randn(3, requires_grad=True)
    ys = [x * 1.0, x * 2.0, x * 3.0]
    us = [mt.randn(3) for _ in ys]
    kept = [u.numpy().copy() for u in us]
    (gx,) = mt.grad(ys, x, grad_outputs=us)
    np.testing.assert_allclose(gx.numpy(), us[0].numpy() + 2 * us[1].numpy() + 3 * us[2].numpy(), rtol=1e-6)
    for u, before in zip(us, kept):
        np.testing.assert_array_equal(u.numpy(), before)

    a = mt.randn(2, requires_grad=True)
    s = a + a  # Add sends the same g to both of its inputs, which are the same tensor
    z = s + a + a
    shown = []  # each gradient as backward_steps showed it, with its value at that moment
    for step in mt.backward_steps(z.sum()):
        shown += [(g, g.numpy().copy()) for g in (step.grad_output,) + step.grad_inputs if g is not None]
    np.testing.assert_allclose(a.grad.numpy(), [4.0, 4.0])
    for g, value in shown:
        np.testing.assert_array_equal(g.numpy(), value)


def test_create_graph_sums_out_of_place_and_stays_differentiable():
    x = mt.tensor([0.5, -1.0], dtype=mt.float64, requires_grad=True)
    y = (x ** 3).sum() + (x * x).sum() + x.sin().sum()  # three gradients meet at x
    (g,) = mt.grad(y, x, create_graph=True)
    (gg,) = mt.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy() + 2 - np.sin(x.numpy()))


# ---------------------------------------------------------------------------- float32 all the way
@pytest.mark.parametrize('fused', [False, True], ids=['textbook', 'fused'])
def test_a_float32_gpt_step_never_makes_a_float64_array(monkeypatch, fused):
    """Every op output and gradient (each goes through Tensor._wrap), and the optimizer's
    parameters and state, stay float32: no Python or numpy scalar promotes the step."""
    mt.manual_seed(0)
    model = GPT(11, d_model=8, n_layers=1, n_heads=2, max_len=6)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    ids = mt.randint(0, 11, (2, 6))
    dtypes = set()
    wrap = mt.Tensor._wrap.__func__

    def recording_wrap(cls, array):
        dtypes.add(str(array.dtype))
        return wrap(cls, array)

    monkeypatch.setattr(mt.Tensor, '_wrap', classmethod(recording_wrap))
    with mt.fused(fused):
        for _ in range(2):  # the second step runs Adam with its state
            loss = next_token_loss(model(ids), ids)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert 'float32' in dtypes and not {'float64', 'float16'} & dtypes, dtypes
    assert {p.dtype.name for p in model.parameters()} == {'float32'}
    assert {p.grad.dtype.name for p in model.parameters()} == {'float32'}
    assert {v.dtype.name for state in opt.state.values() for v in state.values()
            if isinstance(v, np.ndarray)} == {'float32'}


# ---------------------------------------------------------------------------- row blocks
def fused_ops_on(x, gamma, beta, scores, mask):
    """Outputs and input gradients of the ops that run in row blocks (rows.by_rows)."""
    with mt.fused():
        outs = [mt.gelu(x, approximate='tanh'), mt.layer_norm(x, x.shape[-1:], gamma, beta), mt.masked_softmax(scores, mask), mt.masked_softmax(scores.T)]
        grads = mt.grad(sum((y * y).sum() for y in outs), [x, gamma, beta, scores])
    return [t.numpy() for t in outs + list(grads)]


def test_row_blocks_give_the_same_numbers_bit_for_bit(monkeypatch):
    """Blocks of 64 elements (so these small arrays are split) or the whole array at once:
    the same rounding everywhere.  scores.T: a non-contiguous input."""
    x = mt.randn(3, 5, 32, requires_grad=True)
    gamma, beta = mt.randn(32, requires_grad=True), mt.randn(32, requires_grad=True)
    scores = mt.randn(2, 3, 24, 24, requires_grad=True)
    mask = mt.tensor(np.tril(np.ones((24, 24), dtype=bool)))
    monkeypatch.setattr(rows, 'BLOCK', 2**40)
    whole = fused_ops_on(x, gamma, beta, scores, mask)
    monkeypatch.setattr(rows, 'BLOCK', 64)
    for a, b in zip(whole, fused_ops_on(x, gamma, beta, scores, mask)):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------- faster spellings
SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 0.0])


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=70),
                  elements=st.floats(width=32) | SPECIAL), st.integers(-3, 2))
@example(np.full(51, 2.67e37, np.float32), 0)   # 51 large values: a sum past float32's maximum
def test_max_along_and_sum_along_are_max_and_sum(x, dim):
    """The softmaxes' argmax-based max: numpy's max (NaN and inf included; of -0 and 0 either),
    the same error for an empty axis; the einsum row sum: numpy's sum to float32 rounding."""
    axis = dim % x.ndim - (x.ndim if dim < 0 else 0)   # any dim drawn, as a valid one of x
    if x.shape[axis] == 0:
        with pytest.raises(ValueError):
            rows.max_along(x, axis)
    else:
        np.testing.assert_array_equal(rows.max_along(x, axis), x.max(axis=axis, keepdims=True))
    # divided by the row's length, no sum of finite float32 values can overflow
    finite = np.nan_to_num(x, posinf=0, neginf=0) / max(1, x.shape[axis])
    expected = finite.astype(np.float64).sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(rows.sum_along(finite, axis), expected,
                               rtol=1e-5, atol=1e-6 * np.abs(finite).sum(axis=axis, keepdims=True).max(initial=1))


@pytest.mark.slow
def test_vs_torch_benchmark_runs_without_torch(tmp_path):
    """benchmarks/vs_torch.py with no PyTorch to compare against still times microtensor, fused and
    textbook, and prints the load average."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, 'benchmarks', 'vs_torch.py'),
                          '--torch-python', str(tmp_path / 'no-python'), '--d-models', '64', '--threads', '1',
                          '--rounds', '1', '--steps', '1', '--warmup', '0', '--pairs', '2'],
                         capture_output=True, text=True, check=True, timeout=240).stdout
    assert 'microtensor only' in out and "fused layer on" in out and 'in each of 2 sets of fresh processes' in out
    assert 'load average before: ' in out and 'load average after: ' in out
    fused, textbook = [line.split('|') for line in out.splitlines() if line.startswith('| 64 | 1 |')]
    assert float(fused[3]) > 0 and abs(float(fused[6]) - np.log(65)) < 0.1  # loss ~ ln(vocab)
    # its time, and its ratio to the fused step: the median over the two sets of processes, and their range
    middle, low, high = (float(v) for v in re.fullmatch(r' (\S+) \((\S+)-(\S+)\) ', textbook[5]).groups())
    assert float(textbook[3]) > 0 and 0 < low <= middle <= high


def test_a_benchmark_ratio_shows_its_range_over_sets_of_processes():
    """vs_torch.ratio: one set of processes gives the ratio alone; several give the median of the sets'
    ratios and their range."""
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
    import vs_torch
    assert vs_torch.ratio(dict(pair_ms=[30.0]), dict(pair_ms=[20.0])) == '1.50'
    a, b = dict(pair_ms=[20.0, 36.0, 33.0]), dict(pair_ms=[20.0, 18.0, 30.0])  # set by set: 1.0, 2.0, 1.1
    assert vs_torch.ratio(a, b) == '1.10 (1.00-2.00)'


def test_the_gemm_benchmark_times_the_products_a_gpt_step_computes(monkeypatch):
    """benchmarks/gemms.py (vs_torch.py --gemm) lists the same products, by shape, as a real step
    (with the fused layer on, as the benchmarks run it)."""
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
    import gemms
    from microtensor.fused.linear import FusedLinear
    from microtensor.ops.linalg import MatMul
    seen = []

    def recording(op):
        real = op.forward

        def forward(self, a, b, *rest, **options):
            b_shape = b.shape[::-1] if options.get('transposed') or options.get('transpose_b') else b.shape
            if op is FusedLinear:  # one 2-D product over the flattened rows
                seen.append(((int(np.prod(a.shape[:-1])), a.shape[-1]), b_shape))
            else:
                seen.append((a.shape, b_shape))
            return real(self, a, b, *rest, **options)
        monkeypatch.setattr(op, 'forward', forward)

    recording(FusedLinear)
    recording(MatMul)
    sizes = dict(d_model=8, vocab=5, n_layers=2, n_heads=2, context=4, batch=3)
    model = GPT(sizes['vocab'], d_model=8, n_layers=2, n_heads=2, max_len=4)
    ids = mt.randint(0, sizes['vocab'], (sizes['batch'], sizes['context']))
    with mt.fused():
        next_token_loss(model(ids), ids).backward()
    listed = [(tuple(a.shape), tuple(b.shape)) for a, b in gemms.operands('numpy', **sizes)]
    assert len(listed) == 51 and sorted(listed) == sorted((tuple(a), tuple(b)) for a, b in seen)
