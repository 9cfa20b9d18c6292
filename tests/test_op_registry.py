"""Every public op against its PyTorch twin, on every sample of tests/op_registry.py.

For each entry and sample: both libraries refuse (microtensor with an error a PyTorch user's
`except` catches: PyTorch's class or a subclass of it), or both give the same value (nan where PyTorch
gives nan) in the same dtype; for differentiable ops on float64 samples, the same gradient of
sum(out * cotangent); for order-2 ops on finite samples, the same second gradient.  Where an op
still differs, the sample is listed, with its cause, in tests/op_registry_disagreements.json: a
disagreement not listed fails, and so does a listed one that no longer happens.  One more test fails
when a public op has no entry; the random ops are checked by distribution and seeding.
"""
import collections
import json
import math
import os

import numpy as np
import pytest

import microtensor as mt
from op_registry import (ALL, ENTRIES, FLOATS, FUSED, NOT_OPS, RANDOM, RANDOM_SHAPE, Entry, View, as_float64,
                         family, is_empty, unary)

torch = pytest.importorskip('torch', reason='the op registry compares every op with PyTorch, its reference')


@pytest.fixture(autouse=True, scope='module')
def one_torch_thread():
    """Tiny tensors: PyTorch's threads only wait for each other (and for other tests) on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TOLERANCE = {'float16': (2e-3, 2e-3), 'float32': (2e-5, 1e-6), 'float64': (1e-9, 1e-12)}
GRAD_TOLERANCE = (1e-7, 1e-10)
LOW_GRAD_TOLERANCE = {'float16': 4e-3, 'float32': 2e-5}


# ------------------------------------------------------------------ making both libraries' inputs
def _walk(arg, lib, leaves, grad):
    """arg with each numpy array made a tensor of lib (arrays of the dtype `grad` leaves that require grad)."""
    if isinstance(arg, View):
        return arg.make(_walk(arg.base, lib, leaves, grad))
    if isinstance(arg, np.ndarray):
        t = mt.tensor(arg.copy()) if lib is mt else torch.from_numpy(arg.copy())
        if grad and arg.dtype == grad:
            t.requires_grad_(True)
            leaves.append(t)
        return t
    if isinstance(arg, list):
        return [_walk(a, lib, leaves, grad) for a in arg]
    if isinstance(arg, tuple):
        return tuple(_walk(a, lib, leaves, grad) for a in arg)
    return arg


def _inputs(sample, lib, grad):
    leaves = []
    args = _walk(sample.args, lib, leaves, grad)
    kwargs = {k: _walk(v, lib, leaves, grad) for k, v in sample.kwargs.items()}
    return args, kwargs, leaves


def _outputs(result):
    """The result as a flat list of tensors (or Python values)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _array(x):
    if isinstance(x, mt.Tensor):
        return x.detach().numpy()
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)  # force: a gradient may be a ZeroTensor
    return np.asarray(x)


def _run(lib, call, sample, grad=False):
    args, kwargs, leaves = _inputs(sample, lib, grad)
    try:
        return call(lib, *args, **kwargs), leaves, None
    except Exception as e:  # noqa: BLE001  (a refusal is compared with the twin's)
        return None, leaves, e


def _compare(ours, theirs, dtype, what, exact=None):
    """None where the results agree: dtype, shape, and values within the dtype's tolerance, or (a
    float16 or float32 result, given exact(): PyTorch's results from float64 inputs) each at least
    as close to the exact value as PyTorch's."""
    ours, theirs = _outputs(ours), _outputs(theirs)
    if len(ours) != len(theirs):
        return f"{what}: {len(ours)} results, PyTorch {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = _array(a), _array(b)
        if isinstance(theirs[i], torch.Tensor) and a.dtype != b.dtype:
            return f"{what}[{i}]: dtype {a.dtype}, PyTorch {b.dtype}"
        if a.shape != b.shape:
            return f"{what}[{i}]: shape {a.shape}, PyTorch {b.shape}"
        rtol, atol = TOLERANCE.get(str(b.dtype), TOLERANCE.get(dtype, (0, 0)))
        differs = _mismatch(a, b, rtol, atol)
        if differs and exact is not None and str(b.dtype) in ('float16', 'float32'):
            c = _array(_outputs(exact())[i])
            a64, b64 = a.astype('float64'), b.astype('float64')
            with np.errstate(invalid='ignore'):
                ok = np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True) | (a64 == b64)
            differs = None if _as_close_as_torch(a64, b64, c, ok) else differs
        if differs:
            return f"{what}[{i}]: {differs}"
    return None


def _mismatch(a, b, rtol, atol):
    """None where a matches b (floats: within rtol and atol, nan where b is nan), else where they differ."""
    try:
        if b.dtype.kind == 'f':
            np.testing.assert_allclose(a.astype('float64'), b.astype('float64'), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(a, b)
        return None
    except AssertionError:
        pass
    a, b = np.atleast_1d(a), np.atleast_1d(b)  # (a 0-d result shows as index (0,))
    a64, b64 = np.asarray(a, 'float64'), np.asarray(b, 'float64')
    with np.errstate(all='ignore'):
        bad = ~(np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True) | (a64 == b64))
    where = [tuple(int(i) for i in idx) for idx in zip(*np.nonzero(bad))]
    shown = ', '.join(f"at {w}: {a[w]!r} vs PyTorch {b[w]!r}" for w in where[:3])
    return f"{len(where)} of {b.size} differ; {shown}"


def _differentiable(result):
    return [o for o in _outputs(result) if isinstance(o, torch.Tensor) and o.requires_grad]


def _cotangents(outs):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


def _loss(lib, outs, cots):
    total = 0
    for o, c in zip(outs, cots):
        total = total + (o * (mt.tensor(c) if lib is mt else torch.from_numpy(c))).sum()
    return total


def _grads(lib, loss, leaves, create_graph=False):
    if lib is mt:
        gs = mt.grad([loss], leaves, create_graph=create_graph, allow_unused=True)
    else:
        gs = torch.autograd.grad(loss, leaves, create_graph=create_graph, allow_unused=True)
    return list(gs)


def _zeros_for_none(gs, leaves, lib):
    return [g if g is not None else (mt.zeros_like(x) if lib is mt else torch.zeros_like(x))
            for g, x in zip(gs, leaves)]


def _exact_gradient(entry, sample, dtype, cots):
    """PyTorch's first gradient with the sample's `dtype` arrays in float64: the exact answer a
    low-precision gradient is measured against."""
    exact_sample = as_float64(sample, dtype)
    out, leaves, err = _run(torch, entry.twin, exact_sample, grad='float64')
    if err is not None:
        return None
    return _zeros_for_none(_grads(torch, _loss(torch, _differentiable(out), cots), leaves), leaves, torch)


def _low_precision_mismatch(a, b, exact, dtype):
    """None where each entry of a low-precision gradient a matches PyTorch's b to the dtype's precision
    (relative to b's largest finite entry), or is at least as close as b to the exact gradient (where
    PyTorch rounds an intermediate, as var's backward takes x - mean(x) in float16, or overflows to
    nan where the product it needs is only inf)."""
    tol = LOW_GRAD_TOLERANCE[dtype]
    a64, b64 = a.astype('float64'), b.astype('float64')
    scale = max(1.0, float(np.abs(b64[np.isfinite(b64)]).max(initial=0)))
    ok = np.isclose(a64, b64, rtol=tol, atol=tol * scale, equal_nan=True) | (a64 == b64)
    return None if ok.all() or exact is not None and _as_close_as_torch(a64, b64, exact, ok) \
        else _mismatch(a, b, tol, tol * scale)


def _as_close_as_torch(a, b, exact, ok):
    """Whether a, where it is not already `ok` (close to PyTorch's b), is as close to the exact answer
    as b is: its largest error there no larger than b's (rounding errors fall on either side entry by
    entry); where b is nan and the exact answer is not, any a is as close."""
    da, db = _distance(a, exact), _distance(b, exact)
    judged = ~ok & np.isfinite(db)
    return da[judged].max(initial=0) <= db[judged].max(initial=0)


def _distance(x, exact):
    """|x - exact| elementwise: 0 where they are equal (inf and inf too), inf where x is nan and exact is not."""
    c = exact.astype('float64')
    with np.errstate(invalid='ignore'):
        d = np.where(x == c, 0.0, np.abs(x - c))
    return np.where(np.isnan(x) & np.isnan(c), 0.0, np.where(np.isnan(d), np.inf, d))


def _check_grads(entry, sample, dtype, counts):
    """The first (and for order 2 on finite float64 samples, the second) gradient, compared; a message or None."""
    theirs, t_leaves, t_err = _run(torch, entry.twin, sample, grad=dtype)
    if t_err is not None or not t_leaves:
        return None
    t_outs = _differentiable(theirs)
    if not t_outs:
        return None
    ours, m_leaves, m_err = _run(mt, entry.call, sample, grad=dtype)
    if m_err is not None:
        return f"gradient: microtensor raised {type(m_err).__name__}: {m_err}"[:300]
    m_outs = [o for o, t in zip(_outputs(ours), _outputs(theirs)) if isinstance(t, torch.Tensor) and t.requires_grad]
    cots = _cotangents(t_outs)
    try:  # a gradient PyTorch does not implement (of scalar % x with respect to x) has no reference
        t_g = _grads(torch, _loss(torch, t_outs, cots), t_leaves, create_graph=entry.order == 2)
    except RuntimeError:
        return None
    counts['gradient'] += 1
    try:
        m_g = _grads(mt, _loss(mt, m_outs, cots), m_leaves, create_graph=entry.order == 2)
    except Exception as e:  # noqa: BLE001
        return f"gradient: microtensor raised {type(e).__name__}: {e}"[:300]
    m_g0, t_g0 = _zeros_for_none(m_g, m_leaves, mt), _zeros_for_none(t_g, t_leaves, torch)
    exact = None if dtype == 'float64' else _exact_gradient(entry, sample, dtype, cots)
    for i, (a, b) in enumerate(zip(m_g0, t_g0)):
        if dtype == 'float64':
            differs = _mismatch(_array(a), _array(b), *GRAD_TOLERANCE)
        else:
            differs = _low_precision_mismatch(_array(a), _array(b), None if exact is None else _array(exact[i]), dtype)
        if differs:
            return f"gradient of input {i}: {differs}"
    if dtype != 'float64':
        return None
    # second gradients on finite samples only: finite inputs, and a finite value and first gradient
    # (where either overflows or is nan, PyTorch's second gradient is as arbitrary as 0 * inf)
    finite = all(np.isfinite(_array(x)).all() for x in t_leaves + t_outs + [g for g in t_g if g is not None])
    if entry.order < 2 or not finite:
        return None
    # second order: the gradient of sum(first gradient * v) with respect to the inputs
    # (a linear op's first gradient is constant in the inputs: its second gradient is 0)
    used = [i for i, g in enumerate(t_g) if g is not None]
    counts['second gradient'] += 1
    vs = _cotangents([t_g[i] for i in used])
    t_kept = [(t_g[i], v) for i, v in zip(used, vs) if t_g[i].requires_grad]
    t_g2 = [None] * len(t_leaves)
    if t_kept:
        t_g2 = _grads(torch, _loss(torch, [g for g, _ in t_kept], [v for _, v in t_kept]), t_leaves)
    t_g2 = _zeros_for_none(t_g2, t_leaves, torch)
    try:
        # a first gradient outside the graph is constant in the inputs (abs's g * sign(x)): its part is 0
        kept = [(m_g[i], v) for i, v in zip(used, vs) if m_g[i] is not None and m_g[i].requires_grad]
        m_g2 = [None] * len(m_leaves)
        if kept:
            m_g2 = _grads(mt, _loss(mt, [g for g, _ in kept], [v for _, v in kept]), m_leaves)
        m_g2 = _zeros_for_none(m_g2, m_leaves, mt)
    except Exception as e:  # noqa: BLE001
        return f"second gradient: microtensor raised {type(e).__name__}: {e}"[:300]
    for i, (a, b) in enumerate(zip(m_g2, t_g2)):
        differs = _mismatch(_array(a), _array(b), *GRAD_TOLERANCE)
        if differs:
            return f"second gradient of input {i}: {differs}"
    return None


def _builtin_class(error):
    """The Python exception class that PyTorch's error is (its own classes derive from one)."""
    return next(c for c in type(error).__mro__ if c.__module__ == 'builtins')


def _check(entry, sample, dtype, counts):
    """A message for each way the op differs from PyTorch on this sample."""
    if dtype in entry.beyond:  # PyTorch refuses the dtype: its twin computes in float64, compared as float32
        theirs, _, t_err = _run(torch, entry.twin, as_float64(sample, dtype))
        theirs = [t.float() if isinstance(t, torch.Tensor) else t for t in _outputs(theirs)]
    else:
        theirs, _, t_err = _run(torch, entry.twin, sample)
    ours, _, m_err = _run(mt, entry.call, sample)
    if entry.refuses:  # PyTorch computes it; microtensor must say no, never answer wrongly
        if t_err is not None:
            return [f"PyTorch refuses too ({type(t_err).__name__}: {t_err}): the entry needs a sample PyTorch takes"]
        counts[dtype] += 1
        if m_err is None or isinstance(m_err, AssertionError):
            return [f"microtensor computes it now ({entry.refuses}): give the entry a twin to agree with"
                    if m_err is None else f"microtensor raised AssertionError: {m_err}"[:300]]
        return []
    counts[dtype] += t_err is None
    if t_err is not None:
        if m_err is None:
            return [f"PyTorch refuses ({type(t_err).__name__}: {t_err})"[:300] + " but microtensor computes"]
        expected = _builtin_class(t_err)
        if not isinstance(m_err, expected):  # a PyTorch user's `except` must catch ours too
            return [f"refused with {type(m_err).__name__}, PyTorch with {expected.__name__}: {m_err}"[:300]]
        return []
    if m_err is not None:
        return [f"microtensor raised {type(m_err).__name__}: {m_err}"[:300]]
    exact = None if dtype == 'float64' or dtype in entry.beyond else \
        (lambda: _run(torch, entry.twin, as_float64(sample, dtype))[0])
    problems = [_compare(ours, theirs, dtype, 'value', exact)]
    if entry.order and dtype in ('float16', 'float32', 'float64'):
        problems.append(_check_grads(entry, sample, dtype, counts))
    return [p for p in problems if p]


def _failures(entry, slow):
    failures = []
    counts = collections.Counter()
    with np.errstate(all='ignore'):
        for dtype in entry.dtypes + entry.beyond:
            for sample in entry.samples(dtype, slow):
                failures += [f"{entry.name} [{dtype}, {sample.note}]: {p}" for p in _check(entry, sample, dtype, counts)]
            # a dtype PyTorch refuses on every sample checks nothing (unless microtensor computes: reported)
            if not counts[dtype] and not any(f.startswith(f"{entry.name} [{dtype},") for f in failures):
                failures.append(f"{entry.name} [{dtype}]: PyTorch refuses every sample: not a dtype the op supports")
    # an entry said to be differentiable must have had its gradients compared
    if entry.order and 'float64' in entry.dtypes and not counts['gradient']:
        failures.append(f"{entry.name}: order {entry.order}, but no sample's gradient was compared")
    if entry.order == 2 and 'float64' in entry.dtypes and not counts['second gradient']:
        failures.append(f"{entry.name}: order 2, but no sample's second gradient was compared")
    return failures


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'op_registry_disagreements.json'),
          encoding='utf-8') as _f:
    KNOWN = {key: cause for cause, keys in json.load(_f)['causes'].items() for key in keys}
KINDS = ('second gradient', 'gradient', 'value', 'microtensor raised', 'PyTorch refuses', 'refused with')


def _key(failure):
    """'op [dtype, sample]: what differs' (value, gradient, ...) of a failure, as the list of known ones keeps it."""
    head, sep, problem = failure.partition(']: ')
    if not sep:
        return failure
    return f"{head}]: {next((kind for kind in KINDS if problem.startswith(kind)), problem)}"


def _known(entry, slow):
    """The known disagreements of `entry` on the samples of this run (the slow run has more)."""
    heads = {f"{entry.name} [{dtype}, {sample.note}]" for dtype in entry.dtypes + entry.beyond
             for sample in entry.samples(dtype, slow)}
    return {key for key in KNOWN if key.split(' [')[0].split(': ')[0] == entry.name
            and (key.split(']: ')[0] + ']' in heads or ' [' not in key)}


@pytest.mark.parametrize('entry', ENTRIES, ids=str)
def test_agrees_with_torch(entry):
    failures = _failures(entry, slow=False)
    new = [f for f in failures if _key(f) not in KNOWN]
    assert not new, '\n'.join(new)
    fixed = sorted(_known(entry, slow=False) - {_key(f) for f in failures})
    assert not fixed, f"no longer differ from PyTorch: take them out of tests/op_registry_disagreements.json: {fixed}"


@pytest.mark.parametrize('entry', [e for e in ENTRIES if e.name in FUSED], ids=str)
def test_the_fused_layer_agrees_with_torch(entry):
    """The fused layer's ops are tested equal to their textbook twins elsewhere; here to PyTorch, on
    every sample, as the textbook ops are."""
    with mt.fused():
        failures = _failures(entry, slow=False)
    new = [f for f in failures if _key(f) not in KNOWN]
    assert not new, '\n'.join(new)


def test_the_fused_entries_exist():
    assert set(FUSED) <= {e.name for e in ENTRIES}, sorted(set(FUSED) - {e.name for e in ENTRIES})


@pytest.mark.slow
@pytest.mark.parametrize('entry', ENTRIES, ids=str)
def test_agrees_with_torch_on_more_samples(entry):
    new = [f for f in _failures(entry, slow=True) if _key(f) not in KNOWN]
    assert not new, '\n'.join(new)


@pytest.mark.parametrize('entry', ENTRIES, ids=str)
def test_refuses_the_dtypes_pytorch_refuses(entry):
    """A dtype an entry leaves out is one PyTorch refuses: microtensor refuses it too, with an error a
    PyTorch user's `except` catches (relu of bool: a RuntimeError), on each of its samples."""
    failures = _dtype_refusals(entry)
    assert not failures, '\n'.join(failures)


def _dtype_refusals(entry):
    failures = []
    if entry.refuses:  # (refused whatever the dtype)
        return failures
    with np.errstate(all='ignore'):
        for dtype in sorted(set(ALL) - set(entry.dtypes) - set(entry.beyond)):
            for sample in entry.samples(dtype, False)[:3]:
                _, _, t_err = _run(torch, entry.twin, sample)
                _, _, m_err = _run(mt, entry.call, sample)
                where = f"{entry.name} [{dtype}, {sample.note}]"
                if t_err is None:
                    if not is_empty(sample):
                        failures.append(f"{where}: PyTorch computes it: add {dtype} to the entry's dtypes")
                elif m_err is None:
                    failures.append(f"{where}: PyTorch refuses ({type(t_err).__name__}), microtensor computes")
                elif not isinstance(m_err, _builtin_class(t_err)):
                    failures.append(f"{where}: refused with {type(m_err).__name__}, PyTorch with "
                                    f"{_builtin_class(t_err).__name__}: {m_err}"[:300])
    return failures


def test_every_entry_has_samples():
    """An entry whose generator gives nothing for a dtype it claims would check nothing."""
    empty = [f"{e.name} [{d}]" for e in ENTRIES for d in e.dtypes if not e.samples(d, False)]
    assert not empty, empty


# ------------------------------------------------------------------ every public op has an entry
def public_ops():
    """microtensor's functions and Tensor's public methods and operators, as users call them."""
    names = {n for n in dir(mt) if not n.startswith('_') and callable(getattr(mt, n))
             and not isinstance(getattr(mt, n), type)}  # classes (Tensor, Function, errors, viewers) are not ops
    names -= {n for n in names if type(getattr(mt, n)).__name__.endswith('DType')}
    functional = mt.nn.functional  # torch.nn.functional's names: those that are not mt's own function
    names |= {f'F.{n}' for n in dir(functional) if not n.startswith('_') and callable(getattr(functional, n))
              and getattr(functional, n) is not getattr(mt, n, None)}
    for n, value in vars(mt.Tensor).items():  # (properties too: x.T and x.mT are ops)
        if (callable(value) or isinstance(value, property)) and (not n.startswith('_') or n.startswith('__')
                                                                 and n.endswith('__')):
            names.add(f'Tensor.{n}')
    return names


def test_every_public_op_has_an_entry():
    covered = {e.name.split('(')[0] for e in ENTRIES + RANDOM}
    missing = sorted(public_ops() - covered - set(NOT_OPS))
    assert not missing, f"public ops without an entry in tests/op_registry.py: {missing}"


def test_a_name_microtensor_and_its_functional_share_is_one_function():
    """F.relu is mt.relu, and so for every shared name, except the losses, which take PyTorch's layout in F."""
    functional = mt.nn.functional
    shared = {n for n in dir(functional) if not n.startswith('_') and callable(getattr(functional, n))
              and hasattr(mt, n)}
    differ = sorted(n for n in shared if getattr(functional, n) is not getattr(mt, n))
    assert differ == ['cross_entropy', 'nll_loss'], differ


def test_the_list_of_non_ops_names_only_public_names():
    """A name left on NOT_OPS after it was renamed or removed would hide nothing, but mislead."""
    stale = sorted(set(NOT_OPS) - public_ops())
    assert not stale, stale


# ------------------------------------------------------------------ random ops
@pytest.mark.parametrize('entry', RANDOM, ids=str)
def test_random_op_shape_dtype_device(entry):
    for dtype in entry.dtypes:
        mt.manual_seed(0)
        x = entry.draw(mt, (2, 3), getattr(mt, dtype))
        assert (x.shape, x.dtype, x.device) == ((2, 3), np.dtype(dtype), 'cpu')


@pytest.mark.parametrize('entry', RANDOM, ids=str)
def test_random_op_distribution(entry):
    """mean and std of a seeded draw of 20,000 within 5 standard errors of the distribution's."""
    mt.manual_seed(1)
    x = entry.draw(mt, RANDOM_SHAPE, mt.float64 if 'float64' in entry.dtypes else getattr(mt, entry.dtypes[0]))
    values = x.numpy().astype('float64').ravel()
    error = entry.std / math.sqrt(values.size)
    assert abs(values.mean() - entry.mean) < 5 * error, (values.mean(), entry.mean)
    assert abs(values.std() - entry.std) < 0.03 * entry.std, (values.std(), entry.std)


@pytest.mark.parametrize('entry', RANDOM, ids=str)
def test_random_op_reproduced_by_manual_seed(entry):
    dtype = getattr(mt, entry.dtypes[0])
    mt.manual_seed(3)
    first = entry.draw(mt, (4, 5), dtype).numpy()
    second = entry.draw(mt, (4, 5), dtype).numpy()
    mt.manual_seed(3)
    again = entry.draw(mt, (4, 5), dtype).numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second), "two draws after one seed were equal"


# ------------------------------------------------------------------ the judge, tested with planted mistakes
def _planted(call, twin=lambda lib, x: x * 2, dtypes=('float64',), order=2):
    return Entry('planted', call, twin, dtypes, order, family(unary))


def _first_kinds(failures):
    return {_key(f).rpartition(': ')[2] for f in failures}


def test_the_judge_passes_the_twin_itself():
    assert _failures(_planted(lambda lib, x: x * 2, dtypes=FLOATS), slow=False) == []


@pytest.mark.parametrize('call, kind', [
    (lambda lib, x: x * 2.001, 'value'),
    (lambda lib, x: (x * 2).to(dtype=mt.float32), 'value'),  # (the dtype is part of the value's check)
    (lambda lib, x: (x * 2).reshape(-1), 'value'),
    (lambda lib, x: x.detach() * 2 + (x - x.detach()) * 3, 'gradient'),  # the value right, the slope 3
    (lambda lib, x: 1 / 0 if x.ndim == 2 else x * 2, 'microtensor raised'),
], ids=['value', 'dtype', 'shape', 'gradient', 'internal error'])
def test_the_judge_finds_a_planted_mistake(call, kind):
    assert kind in _first_kinds(_failures(_planted(call), slow=False))


def test_the_judge_finds_a_wrong_second_gradient():
    """x**3 whose first gradient, 3x^2, is right but cut from the graph: the second gradient is 0, not 6x."""
    cut = lambda lib, x: x.detach() ** 3 + (x - x.detach()) * (3 * x.detach() ** 2)  # noqa: E731
    failures = _failures(_planted(cut, twin=lambda lib, x: x ** 3), slow=False)
    assert 'second gradient' in _first_kinds(failures)


def test_the_judge_finds_a_refusal_of_the_wrong_class():
    def call(lib, x):
        raise ValueError("planted: PyTorch raises a RuntimeError here")
    entry = _planted(call, twin=lambda lib, x: torch.relu(x.bool()), dtypes=('bool',), order=0)
    assert 'refused with' in _first_kinds(_failures(entry, slow=False))


def test_the_judge_finds_a_dtype_computed_where_pytorch_refuses():
    entry = _planted(lambda lib, x: x.float() * 2, twin=lambda lib, x: torch.relu(x) * 2, dtypes=FLOATS)
    assert any('PyTorch refuses' in f and '[bool,' in f for f in _dtype_refusals(entry))


def test_low_precision_answers_as_exact_as_pytorchs_pass_and_less_exact_fail():
    """float16 x * 3 rounds once; a planted answer computed in float64 and rounded once is as exact and
    passes, one that is 1% off fails (the float16 tolerance is 0.4%)."""
    exact = lambda lib, x: (x.to(dtype=mt.float64) * 3).to(dtype=mt.float16)  # noqa: E731
    assert _failures(_planted(exact, twin=lambda lib, x: x * 3, dtypes=('float16',)), slow=False) == []
    off = lambda lib, x: x * 3.03  # noqa: E731
    assert 'value' in _first_kinds(_failures(_planted(off, twin=lambda lib, x: x * 3, dtypes=('float16',)), slow=False))
