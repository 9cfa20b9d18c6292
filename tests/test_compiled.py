"""The fused layer's compiled loops (microtensor/fused/kernels.c, built by the machine's C compiler).

Each loop computes its op's numpy form number by number, so the fused ops give the same values
and gradients with the loops as without them, to float32 rounding: on random shapes and values,
on the edge values (inf, NaN, huge, masked rows), through a whole GPT step.  exp32, the loops'
own exp, is within two ulps of the true e^x.  The loops run exactly where compiled.py says
(float32, CPU, C-contiguous, not empty) and nowhere else; without a C compiler, with one that
fails, or with MICROTENSOR_COMPILED=0 the numpy forms run; the library is built once.
"""
import contextlib
import math
import os
import subprocess
import sys
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from microtensor import optim
from microtensor.fused import compiled
from transformer import GPT, causal_mask, next_token_loss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_compiler = pytest.mark.skipif(compiled.library() is None or not compiled.enabled,
                                    reason="no C compiler (cc, or $CC) here, or MICROTENSOR_COMPILED=0: the fused "
                                           "layer runs its numpy forms")
EPS32 = float(np.finfo(np.float32).eps)


LOOPS = ('masked_softmax', 'softmax_grad', 'log_softmax', 'gelu_tanh', 'gelu_tanh_grad', 'layer_norm', 'layer_norm_grad')


@contextlib.contextmanager
def loops_called():
    """Records the names of the compiled loops the fused ops run inside the block (a context
    manager, not a fixture: hypothesis runs many examples in one test)."""
    called = []

    def spy(run):
        def recorded(name, *arguments, **keywords):
            called.append(name)
            return run(name, *arguments, **keywords)
        return recorded

    with mock.patch.object(compiled, 'run', spy(compiled.run)), \
            mock.patch.object(compiled, 'run_for_each', spy(compiled.run_for_each)):
        yield called


def run_both_ways(f, *arrays):
    """f's outputs (a list of arrays) from float32 tensors of `arrays`, with the fused layer on:
    once with the compiled loops, once with the numpy forms."""
    results = []
    for loops in (True, False):
        with mock.patch.object(compiled, 'enabled', loops), mt.fused():
            inputs = [mt.tensor(a, requires_grad=True) for a in arrays]
            results.append([r.numpy() for r in f(*inputs)])
    return results


def value_and_grads(op, seed=0):
    """f for run_both_ways: op's value and its gradients for one random upstream gradient."""
    def f(*inputs):
        y = op(*inputs)
        u = mt.tensor(np.random.default_rng(seed).standard_normal(y.shape).astype(np.float32))
        return [y, *mt.grad(y, inputs, grad_outputs=u)]
    return f


def assert_agree(with_loops, with_numpy, ulps=16):
    """Equal to float32 rounding: within `ulps` ulps of each array's largest magnitude (sums over
    rows add in another order), with inf and NaN in the same places."""
    for a, b in zip(with_loops, with_numpy):
        finite = np.isfinite(b)
        scale = np.abs(b[finite]).max(initial=1.0)
        np.testing.assert_allclose(a, b, rtol=0, atol=ulps * EPS32 * scale, equal_nan=True)


float32s = st.floats(-30, 30, width=32)
rows_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=40)


# ---------------------------------------------------------------------------- exp32
@needs_compiler
def test_exp32_is_within_two_ulps_of_exp_and_keeps_its_limits():
    def exp32(x):
        y = np.empty_like(x)
        compiled.library().exp_all(x.ctypes.data, y.ctypes.data, x.size)
        return y

    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-87.33, 88.72, 400_001), rng.uniform(-87.33, 88.72, 100_000),
                        rng.uniform(-1e-3, 1e-3, 10_000)]).astype(np.float32)
    exact = np.exp(x.astype(np.float64))
    assert (np.abs(exp32(x) - exact) <= 2 * np.spacing(exact.astype(np.float32))).all()  # ~1 ulp measured
    edges = np.array([-np.inf, -1e30, -104.0, -87.4, 0.0, 88.8, 1e30, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(exp32(edges), [0, 0, 0, 0, 1, np.inf, np.inf, np.inf, np.nan])


# ---------------------------------------------------------------------------- each loop = its numpy form
@needs_compiler
@given(x=hnp.arrays(np.float32, rows_shapes, elements=float32s))
def test_gelu_loops_equal_the_numpy_forms(x):
    with loops_called() as called:
        assert_agree(*run_both_ways(value_and_grads(lambda t: mt.gelu(t, approximate='tanh')), x))
    assert called == ['gelu_tanh', 'gelu_tanh_grad']


@needs_compiler
@pytest.mark.filterwarnings('ignore:divide by zero', 'ignore:invalid value')  # one feature and eps = 0: 0/0, both ways
@given(x=hnp.arrays(np.float32, rows_shapes, elements=float32s),
       eps=st.sampled_from([1e-5, 0.0]), data=st.data())
def test_layer_norm_loops_equal_the_numpy_forms(x, eps, data):
    n = x.shape[-1]
    gamma, beta = (data.draw(hnp.arrays(np.float32, n, elements=float32s)) for _ in range(2))
    # a spread in every row keeps sigma of the order of |x|: where sigma << |mean|, x - mean is mostly
    # rounding, which both forms divide by sigma (their difference then measures that, not the loops)
    spread = 1 + np.abs(x).max()
    x = x + np.linspace(-spread, spread, n, dtype=np.float32)
    f = value_and_grads(lambda t, g, b: mt.layer_norm(t, t.shape[-1:], g, b, eps=eps))
    with loops_called() as called:
        assert_agree(*run_both_ways(f, x, gamma, beta), ulps=64)  # 1/sigma amplifies a row's rounding
    assert called == ['layer_norm', 'layer_norm_grad']


def test_layer_norm_of_rows_far_from_zero_equals_the_textbook_both_ways():
    """Rows whose spread is a few ulps of their mean (1e4 + N(0, 0.01): 1e4's ulp is 0.001) and
    constant rows: the fused layer norm, with the loops and with the numpy forms, gives the textbook's
    values and gradients to float32 rounding, row by row.  The textbook runs in float64 on the same
    float32 numbers: in float32 its own mean is off by a few ulps of x, which is x_hat off by 0.1."""
    rng = np.random.default_rng(0)
    n = 64
    x = np.stack([1e4 + rng.normal(0, 0.01, n), -1e4 + rng.normal(0, 0.01, n), 3e5 + rng.normal(0, 1, n),
                  1e6 + rng.normal(0, 0.5, n), 100 + rng.normal(0, 1e-4, n), rng.normal(0, 1, n),
                  np.r_[1e4 + 1, 1e4 + rng.normal(0, 0.01, n - 1)],  # the first number far from the others
                  np.full(n, 1e4 + 0.01), np.full(n, 3.3)]).astype(np.float32)
    gamma, beta = rng.normal(1, 0.5, n).astype(np.float32), rng.normal(0, 0.5, n).astype(np.float32)
    f = value_and_grads(lambda t, g, b: mt.layer_norm(t, t.shape[-1:], g, b))
    textbook = [r.numpy().astype(np.float32)
                for r in f(*[mt.tensor(a.astype(np.float64), requires_grad=True) for a in (x, gamma, beta)])]
    with loops_called() as called:
        both_ways = run_both_ways(f, x, gamma, beta)
    assert called == (['layer_norm', 'layer_norm_grad'] if compiled.library() else [])
    for fused in both_ways:
        y, dx = fused[:2]
        for row in range(len(x)):  # each row to its own scale (dx scales as 1/sigma, 100 for sigma = 0.01)
            assert_agree([y[row], dx[row]], [textbook[0][row], textbook[1][row]])
        assert_agree(fused[2:], textbook[2:])  # gamma's and beta's: sums over the rows
        np.testing.assert_array_equal(y[-2:], np.broadcast_to(beta, (2, n)))  # a constant row: x_hat = 0


@needs_compiler
@given(x=hnp.arrays(np.float32, rows_shapes, elements=float32s))
def test_the_log_softmax_loop_equals_the_numpy_form(x):
    with loops_called() as called:
        assert_agree(*run_both_ways(value_and_grads(lambda t: mt.log_softmax(t, dim=-1)), x))
        assert_agree(*run_both_ways(value_and_grads(lambda t: mt.log_softmax(t, dim=0)), x))
    assert called == ['log_softmax'] * (2 if x.ndim == 1 else 1)  # over the last axis only


@st.composite
def scores_and_mask(draw):
    """Attention scores (B, H, T, T) and a mask of each form: none, causal (T, T), (1, 1, T, T), a
    random (T, T) with some rows all False, and (B, 1, 1, T) (a padding mask: not rows, numpy form)."""
    form = draw(st.sampled_from(['none', 'causal', 'leading_ones', 'random', 'padding']))
    low = 2 if form == 'padding' else 1  # with one batch entry or one query, a padding mask repeats as rows
    b, h, t = draw(st.integers(low, 3)), draw(st.integers(1, 3)), draw(st.integers(low, 20))
    s = draw(hnp.arrays(np.float32, (b, h, t, t), elements=float32s))
    mask = {'none': None, 'causal': causal_mask(t).numpy(), 'leading_ones': causal_mask(t).numpy()[None, None],
            'random': draw(hnp.arrays(bool, (t, t))), 'padding': draw(hnp.arrays(bool, (b, 1, 1, t)))}[form]
    return s, mask, form


@needs_compiler
@given(case=scores_and_mask())
def test_masked_softmax_loops_equal_the_numpy_forms(case):
    s, mask, form = case
    f = value_and_grads(lambda t: mt.masked_softmax(t, None if mask is None else mt.tensor(mask)))
    with loops_called() as called:
        assert_agree(*run_both_ways(f, s))
    # a padding mask does not repeat down the rows: the forward's numpy form runs, the backward's loop
    assert called == (['softmax_grad'] if form == 'padding' else ['masked_softmax', 'softmax_grad'])


@needs_compiler
@given(shapes=st.lists(hnp.array_shapes(min_dims=0, max_dims=2, max_side=9), min_size=1, max_size=4),
       adam_w=st.booleans(), weight_decay=st.sampled_from([0.0, 0.1]), data=st.data())
def test_the_adam_loop_equals_the_numpy_form(shapes, adam_w, weight_decay, data):
    """Three steps of Adam or AdamW over a group of parameters, some of which skip a step (no
    gradient), so that their step counts differ: every parameter and moment, with the loop (one
    call a step, for the whole group) and without."""
    values = [data.draw(hnp.arrays(np.float32, shape, elements=float32s)) for shape in shapes]
    grads = [[data.draw(st.none() | hnp.arrays(np.float32, shape, elements=float32s)) for shape in shapes]
             for _ in range(3)]
    results = []
    for loops in (True, False):
        ws = [mt.tensor(v.copy(), requires_grad=True) for v in values]
        opt = (optim.AdamW if adam_w else optim.Adam)(ws, lr=0.05, weight_decay=weight_decay)
        with loops_called() as called, mock.patch.object(compiled, 'enabled', loops), mt.fused():
            for step in grads:
                for w, g in zip(ws, step):
                    w.grad = None if g is None else mt.tensor(g)
                opt.step()
        states = [opt.state.get(id(w), {}) for w in ws]  # (none for a parameter that never stepped)
        results.append([a for w, state in zip(ws, states)
                        for a in (w.numpy(), *[state.get(k, np.zeros(0, np.float32)) for k in ('exp_avg', 'exp_avg_sq')])])
        assert called == ['adam'] * sum(any(g is not None for g in step) for step in grads) * loops
    assert_agree(*results)


@needs_compiler
@pytest.mark.parametrize('adam_w', [False, True])
def test_the_adam_loop_keeps_an_infinite_weight_out_of_its_moments(adam_w):
    """Without an L2 term the loop adds no 0 * p to the gradient (0 * inf is NaN), as the
    formulas add none; with one, both have inf * 0.1 in g."""
    for weight_decay in (0.0, 0.1):
        results = []
        for loops in (True, False):
            w = mt.tensor(np.array([np.inf, 1.0], np.float32), requires_grad=True)
            w.grad = mt.tensor(np.array([0.5, 0.5], np.float32))
            opt = (optim.AdamW if adam_w else optim.Adam)([w], weight_decay=weight_decay)
            with mock.patch.object(compiled, 'enabled', loops), mt.fused(), \
                    warnings.catch_warnings():
                warnings.simplefilter('ignore', RuntimeWarning)  # the formulas' inf - inf
                opt.step()
            results.append([w.numpy(), opt.state[id(w)]['exp_avg'], opt.state[id(w)]['exp_avg_sq']])
        assert_agree(*results)
        assert np.isfinite(results[0][1]).all() == (adam_w or not weight_decay)


def test_a_read_only_parameter_is_refused_as_the_formulas_refuse_it():
    w = mt.tensor(np.ones(4, np.float32), requires_grad=True)
    w.data.flags.writeable = False
    w.grad = mt.ones(4)
    with loops_called() as called, mt.fused(), pytest.raises(ValueError, match='read-only'):
        optim.AdamW([w]).step()
    assert called == []
    assert (w.numpy() == 1).all()


def test_the_adam_loop_runs_only_with_the_fused_layer_on():
    w = mt.tensor(np.ones(4, np.float32), requires_grad=True)
    w.grad = mt.ones(4)
    opt = optim.AdamW([w])
    with loops_called() as called:
        opt.step()
    assert called == []


# ---------------------------------------------------------------------------- edge values
@needs_compiler
@pytest.mark.filterwarnings('ignore:invalid value encountered')  # the numpy forms' inf - inf, on the way to nan
def test_edge_values_meet_the_numpy_forms():
    """inf, NaN and huge inputs, and a query row with no key, give what the numpy forms give."""
    big = float(np.finfo(np.float32).max)
    x = np.array([[-np.inf, -big, -1e30, -150, -20, -1e-30, 0, 1e-30, 20, 150, 1e30, big, np.inf, np.nan]],
                 np.float32)
    s = np.array([[[[0.5, -np.inf, 2.0, 1.0], [np.inf, 0.0, 1.0, 1.0], [np.nan, 0.0, 1.0, 1.0],
                    [1e30, -1e30, 0.0, 3.0]]]], np.float32)
    mask = np.ones((4, 4), bool)
    mask[0] = False  # no key for the first query: weights 0, gradient 0
    constant_rows = np.array([[3.0, 3.0, 3.0], [1e30, -1e30, 0.0]], np.float32)
    logits = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0],
                       [1e30, -1e30, 0.0]], np.float32)
    with loops_called() as called:
        assert_agree(*run_both_ways(value_and_grads(lambda t: mt.log_softmax(t, dim=-1)), logits))
        assert_agree(*run_both_ways(value_and_grads(lambda t: mt.gelu(t, approximate='tanh')), x))
        with_loops, with_numpy = run_both_ways(value_and_grads(lambda t: mt.masked_softmax(t, mt.tensor(mask))), s)
        assert_agree(with_loops, with_numpy)
        assert_agree(*run_both_ways(value_and_grads(lambda t: mt.layer_norm(t, 3, mt.ones(3), mt.zeros(3))),
                                    constant_rows))
    assert (with_loops[0][0, 0, 0] == 0).all() and np.isnan(with_loops[0][0, 0, 1:3]).all()
    assert set(called) == set(LOOPS)


# ---------------------------------------------------------------------------- where the loops run
@needs_compiler
@pytest.mark.parametrize('case', ['float64', 'transposed', 'empty'])
def test_the_loops_run_only_on_float32_contiguous_arrays(case):
    """float64, a transposed view, no numbers: the numpy forms (GELU's loops, watched here).  float16 is
    computed in float32 (and the result rounded to float16), so it may run the loops."""
    x = np.random.default_rng(0).standard_normal((6, 8))
    x = {'float64': x, 'transposed': x.astype(np.float32), 'empty': np.zeros((0, 8), np.float32)}[case]
    t = mt.tensor(x, requires_grad=True)
    with loops_called() as called, mt.fused():
        y = mt.gelu(t.T if case == 'transposed' else t, approximate='tanh')
        y.sum().backward()
        assert called == []
        mt.gelu(mt.tensor(x.astype(np.float32)), approximate='tanh')
    assert called == ([] if case == 'empty' else ['gelu_tanh'])  # and the same shape in float32 runs it


@needs_compiler
def test_the_loops_do_not_change_a_gpt_step():
    """A GPT's loss and every parameter's gradient, float32, with the loops and with the numpy forms."""
    def step():
        mt.manual_seed(0)
        model = GPT(17, d_model=16, n_layers=2, n_heads=2, max_len=8)
        ids = mt.randint(0, 17, (3, 8))
        loss = next_token_loss(model(ids), ids)
        loss.backward()
        return [loss] + [p.grad for p in model.parameters()]

    with loops_called() as called:
        with_loops, with_numpy = run_both_ways(step)
    assert_agree(with_loops, with_numpy, ulps=256)  # rounding, carried through two blocks
    assert set(called) == set(LOOPS)


# ---------------------------------------------------------------------------- building, or not
def assert_the_numpy_forms_run():
    """GELU and its gradient in float32, with the loops on, are the numpy forms' numbers, bit for bit."""
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    with loops_called() as called:
        now, then = run_both_ways(value_and_grads(lambda t: mt.gelu(t, approximate='tanh')), x)
    assert called == []
    for a, b in zip(now, then):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(os.name == 'nt', reason="the failing compiler is a POSIX shell script")
@pytest.mark.parametrize('compiler', ['none', 'failing'])
def test_without_a_working_compiler_the_numpy_forms_run(monkeypatch, tmp_path, compiler):
    """No compiler: quietly the numpy forms.  A compiler that fails: the same, and one warning with its message."""
    failing = tmp_path / 'cc'
    failing.write_text('#!/bin/sh\necho "cc: error: no space left on the planet" >&2\nexit 1\n')
    failing.chmod(0o755)
    monkeypatch.setenv('CC', str(failing) if compiler == 'failing' else str(tmp_path / 'no-such-compiler'))
    (tmp_path / 'kernels.c').write_text(open(compiled.SOURCE).read())
    monkeypatch.setattr(compiled, 'SOURCE', str(tmp_path / 'kernels.c'))  # built (or not) into tmp_path
    monkeypatch.setattr(compiled, '_library', None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert compiled.library() is None
        assert compiled.library() is None  # tried once, not at every op
    messages = [str(w.message) for w in caught]
    if compiler == 'failing':
        assert len(messages) == 1 and 'no space left on the planet' in messages[0] and 'numpy forms' in messages[0]
    else:
        assert messages == []
    assert not compiled.can_run(np.ones(3, np.float32))
    assert_the_numpy_forms_run()


@needs_compiler
def test_the_library_is_built_once_and_named_by_its_source(monkeypatch, tmp_path):
    source = open(compiled.SOURCE).read()
    monkeypatch.setattr(compiled, 'SOURCE', str(tmp_path / 'kernels.c'))
    (tmp_path / 'kernels.c').write_text(source)
    monkeypatch.setattr(compiled, '_library', None)
    assert compiled.library() is not None
    (built,) = (tmp_path / '__pycache__').glob('kernels-*.so')
    monkeypatch.setattr(compiled, '_library', None)
    with mock.patch.object(compiled, '_compile', side_effect=AssertionError('built again')):
        assert compiled.library() is not None  # the same source: loaded, not compiled
    (tmp_path / 'kernels.c').write_text(source + '\n/* changed */\n')
    monkeypatch.setattr(compiled, '_library', None)
    assert compiled.library() is not None
    assert len(list((tmp_path / '__pycache__').glob('kernels-*.so'))) == 2  # a changed file builds its own
    assert not list((tmp_path / '__pycache__').glob('*.tmp'))


@needs_compiler
def test_a_package_folder_it_may_not_write_sends_the_library_to_the_users_cache(monkeypatch, tmp_path):
    (tmp_path / 'kernels.c').write_text(open(compiled.SOURCE).read())
    monkeypatch.setattr(compiled, 'SOURCE', str(tmp_path / 'kernels.c'))
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setattr(compiled, '_library', None)
    makedirs = os.makedirs

    def read_only_package(folder, **options):
        if folder.endswith('__pycache__'):
            raise PermissionError(13, 'Permission denied', folder)
        return makedirs(folder, **options)

    monkeypatch.setattr(os, 'makedirs', read_only_package)
    assert compiled.library() is not None
    assert len(list((tmp_path / 'cache' / 'microtensor').glob('kernels-*.so'))) == 1
    monkeypatch.setattr(os, 'makedirs', makedirs)  # a package folder that exists but may not be written
    (tmp_path / '__pycache__').mkdir()
    access = os.access
    monkeypatch.setattr(os, 'access', lambda folder, mode: not folder.endswith('__pycache__') and access(folder, mode))
    (tmp_path / 'kernels.c').write_text(open(compiled.SOURCE).read() + '\n/* another build */\n')
    monkeypatch.setattr(compiled, '_library', None)
    assert compiled.library() is not None
    assert len(list((tmp_path / 'cache' / 'microtensor').glob('kernels-*.so'))) == 2
    assert not list((tmp_path / '__pycache__').iterdir())


@needs_compiler
def test_a_library_that_cannot_be_loaded_is_reported_and_the_numpy_forms_run(monkeypatch):
    monkeypatch.setattr(compiled, '_library', None)
    with mock.patch.object(compiled.ctypes, 'CDLL', side_effect=OSError('failed to map segment from shared object')), \
            pytest.warns(RuntimeWarning, match='(?s)failed to map segment.*numpy forms'):
        assert compiled.library() is None
    assert_the_numpy_forms_run()


@pytest.mark.parametrize('setting, expected', [('0', 'False'), ('off', 'False'), ('1', 'True'), ('', 'True')])
def test_microtensor_compiled_in_the_environment(setting, expected):
    done = subprocess.run([sys.executable, '-c', 'from microtensor.fused import compiled; print(compiled.enabled)'],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, MICROTENSOR_COMPILED=setting))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_a_microtensor_compiled_setting_it_cannot_read_is_refused():
    done = subprocess.run([sys.executable, '-c', 'import microtensor'], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, MICROTENSOR_COMPILED='fast'))
    assert done.returncode != 0
    assert "MICROTENSOR_COMPILED='fast': use 1 (compiled loops where a C compiler is found, the default) or 0 " \
           "(the numpy forms only)" in done.stderr
