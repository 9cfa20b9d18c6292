"""Aliasing in autograd, as in PyTorch or refused clearly: copy_ is differentiable; an in-place op that
fails changes nothing; no_grad / enable_grad on a generator function apply inside the generator; a
custom Function's backward never makes a .grad alias a tensor and may not write into its incoming
gradient; a forward that returns its input shares its in-place counter; Function.apply names the op
when given something that is not a tensor."""
import itertools
import operator

import numpy as np
import pytest

import microtensor as mt
from microtensor.autograd import Function


def _torch():
    return pytest.importorskip('torch', reason='PyTorch is the reference for these semantics')


# ---------------------------------------------------------------------------------------------- copy_
COPY_SOURCES = {  # name -> (buffer shape, source shape, source dtype)
    'same shape': ((2, 3), (2, 3), 'float32'),
    'broadcast row': ((2, 3), (3,), 'float32'),
    'broadcast column': ((2, 3), (2, 1), 'float32'),
    'float64 into float32': ((2, 3), (2, 3), 'float64'),
    'scalar': ((2, 3), (), 'float32'),
}


@pytest.mark.parametrize('buffer_kind', ['fresh', 'with history'])
@pytest.mark.parametrize('source', sorted(COPY_SOURCES))
def test_copy_into_a_tensor_is_differentiable_as_in_pytorch(source, buffer_kind):
    torch = _torch()
    shape, source_shape, dtype = COPY_SOURCES[source]
    x0 = np.random.default_rng(0).normal(size=source_shape)
    w0 = np.random.default_rng(1).normal(size=shape)
    scale = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)

    def run(lib, make, ones):
        x, w = make(x0, dtype), make(w0, 'float32')
        buf = ones(shape) if buffer_kind == 'fresh' else w * 2
        buf.copy_(x * 3)
        (buf * make(scale, 'float32')).sum().backward()
        return x.grad, w.grad

    mx, mw = run(mt, lambda a, d: mt.tensor(a, dtype=d, requires_grad=True), lambda s: mt.ones(s))
    tx, tw = run(torch, lambda a, d: torch.tensor(a, dtype=getattr(torch, d), requires_grad=True),
                 lambda s: torch.ones(s))
    np.testing.assert_allclose(mx.numpy(), tx.numpy(), rtol=1e-6)  # x.grad = 3 * scale, summed to x's shape
    assert mx.dtype == np.dtype(dtype)
    if buffer_kind == 'with history':  # buf's old value was overwritten: its history gets zeros
        np.testing.assert_array_equal(mw.numpy(), tw.numpy())
        assert not mw.numpy().any()


def test_copy_under_no_grad_or_from_a_constant_records_nothing():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    buf = mt.zeros(2)
    with mt.no_grad():
        buf.copy_(x * 3)
    assert buf.creator is None and not buf.requires_grad
    buf.copy_([5.0, 6.0])
    assert buf.creator is None and buf.tolist() == [5.0, 6.0]


def test_copy_into_a_leaf_that_requires_grad_is_refused_while_recording():
    w = mt.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match='copy_: in-place change of a tensor that requires grad'):
        w.copy_(mt.ones(2))
    with mt.no_grad():
        w.copy_(mt.ones(2))
    assert w.tolist() == [1.0, 1.0] and w.is_leaf


# --------------------------------------------------------------------- a failed in-place op changes nothing
IN_PLACE_OPS = {
    '+=': operator.iadd, '-=': operator.isub, '*=': operator.imul, '/=': operator.itruediv,
    'setitem': lambda t, v: t.__setitem__((slice(None),), v),
    'copy_': lambda t, v: t.copy_(v),
    'fill_': lambda t, v: t.fill_(v),
    'zero_': lambda t, v: t.zero_(),
    'setitem at a row it lacks': lambda t, v: t.__setitem__(5, v),
}
ARITHMETIC = ('+=', '-=', '*=', '/=')
TARGETS = ('graph', 'leaf', 'int64')  # a non-leaf with a hook; a plain leaf; an integer tensor


def _target(kind):
    if kind == 'graph':
        w = mt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        h = w * 2
        h.register_hook(lambda g: None)
        return h.retain_grad(), w
    if kind == 'leaf':
        return mt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), None
    return mt.tensor([[1, 2, 3], [4, 5, 6]]), None


def _failures():
    """(op, failure, target kind, the bad operand) for every in-place op and every way it can fail."""
    for op, target in itertools.product(list(IN_PLACE_OPS)[:-1], TARGETS):
        if op != 'zero_':
            yield op, 'not a number', target, lambda: 'abc'
        if op not in ('fill_', 'zero_'):
            yield op, 'wrong shape', target, lambda: mt.ones((4, 5))
        if target == 'int64' and op != 'zero_':  # integers cannot hold a float result, nor nan
            yield op, 'float into integer', target, lambda: (0.5 if op in ARITHMETIC else float('nan'))
    for target in TARGETS:
        yield 'setitem at a row it lacks', 'index out of range', target, lambda: mt.ones(3, requires_grad=True)
    for op in list(IN_PLACE_OPS)[:-1]:  # a leaf that requires grad, while recording
        yield op, 'leaf that requires grad', 'requires grad', lambda: mt.ones(3)
    for op in ('+=', '-=', '*=', '/=', 'setitem', 'copy_'):  # recorded on a tensor that has a view
        yield op, 'tensor with a view', 'viewed', lambda: mt.ones(3, requires_grad=True)


FAILURES = list(_failures())


def _state(t):
    # (the counter by id: holding it would count as another tensor sharing t's memory)
    return (t.data.copy(), t.data, t._hooks, list(t._hooks or ()), id(t._version), t._version[0],
            t.creator, t.requires_grad, t._retains_grad, t._grad)


@pytest.mark.parametrize('op, failure, target, bad', FAILURES,
                         ids=[f'{op} {failure} ({target})' for op, failure, target, _ in FAILURES])
def test_a_failed_in_place_op_changes_nothing(op, failure, target, bad):
    keep = None
    if target == 'requires grad':
        t = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    elif target == 'viewed':
        t = mt.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
        keep = t[:2]  # a view: a recorded change of t would not reach its graph
    else:
        t, _ = _target(target)
    before = _state(t)
    with pytest.raises((ValueError, TypeError, RuntimeError, IndexError)) as caught:
        IN_PLACE_OPS[op](t, bad())
    assert 'Traceback' not in str(caught.value)
    after = _state(t)
    np.testing.assert_array_equal(after[0], before[0])
    for i, (a, b) in enumerate(zip(after[1:], before[1:]), 1):
        assert a == b if isinstance(a, (list, int, bool)) else a is b, f"state item {i} changed"
    del keep


@pytest.mark.parametrize('op', ARITHMETIC + ('setitem', 'copy_'))
def test_after_a_failed_in_place_op_the_hook_still_sees_the_gradient(op):
    w = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w * 2
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    with pytest.raises(ValueError):
        IN_PLACE_OPS[op](h, mt.ones(4, requires_grad=True))
    (h * mt.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [1.0, 2.0, 3.0]
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


# ------------------------------------------------------------------------ grad-mode decorators on generators
SWITCHES = {'no_grad': (False, 'no_grad', 'enable_grad'), 'enable_grad': (True, 'enable_grad', 'no_grad')}


@pytest.mark.parametrize('switch', sorted(SWITCHES))
@pytest.mark.parametrize('library', ['microtensor', 'torch'])
def test_a_grad_mode_decorator_on_a_generator_applies_inside_it(switch, library):
    lib = mt if library == 'microtensor' else _torch()
    inside, name, outer = SWITCHES[switch]
    x = lib.ones(2, requires_grad=True)

    @getattr(lib, name)()
    def steps(n):
        for _ in range(n):
            received = yield (x * 2).requires_grad, lib.is_grad_enabled()
            assert received in (None, 'ping')
        return 'done'

    with getattr(lib, outer)():  # the caller's own mode, between the generator's steps
        gen = steps(3)
        first = next(gen)
        caller_mode = lib.is_grad_enabled()
        second = gen.send('ping')
        third = next(gen)
        with pytest.raises(StopIteration) as stop:
            next(gen)
    assert first == second == third == (inside, inside)
    assert caller_mode is (not inside)
    assert stop.value.value == 'done'


@pytest.mark.parametrize('switch', sorted(SWITCHES))
@pytest.mark.parametrize('library', ['microtensor', 'torch'])
def test_a_grad_mode_decorator_without_parentheses(switch, library):
    lib = mt if library == 'microtensor' else _torch()
    inside, name, outer = SWITCHES[switch]

    @getattr(lib, name)
    def mode():
        return lib.is_grad_enabled()

    @getattr(lib, name)
    def modes():
        yield lib.is_grad_enabled()

    with getattr(lib, outer)():
        assert mode() is inside and list(modes()) == [inside]


def test_an_error_thrown_into_a_no_grad_generator_reaches_its_code():
    caught = []

    @mt.no_grad()
    def gen():
        try:
            yield 1
        except KeyError as error:
            caught.append((str(error), mt.is_grad_enabled()))
            yield 2

    g = gen()
    next(g)
    assert g.throw(KeyError('stop')) == 2
    assert caught == [("'stop'", False)] and mt.is_grad_enabled()
    g.close()


def test_a_grad_mode_decorator_on_a_function_and_reentering_one_switch():
    @mt.no_grad()
    def depth(n):
        return mt.is_grad_enabled() if n == 0 else depth(n - 1)

    assert depth(3) is False and mt.is_grad_enabled()
    switch = mt.no_grad()
    with switch:
        with switch:
            assert not mt.is_grad_enabled()
        assert not mt.is_grad_enabled()
    assert mt.is_grad_enabled()


# -------------------------------------------------------------------------- custom Functions and aliasing
class _Double(Function):
    def forward(self, x):
        return x * 2


def _custom(returns):
    """A Function y = 2x whose backward returns `returns` (the right value, 2g, is not the point)."""
    def backward(self, g):
        return {'its input': self.inputs[0], 'the incoming gradient': g, 'its output': self.output}[returns]
    return type('Returns' + returns.title().replace(' ', ''), (_Double,), {'backward': backward})


def _shares(a, b):
    return np.shares_memory(a.numpy() if not a.requires_grad else a.detach().numpy(),
                            b.numpy() if not b.requires_grad else b.detach().numpy())


@pytest.mark.parametrize('how', ['backward', 'backward(create_graph=True)', 'mt.grad'])
@pytest.mark.parametrize('returns', ['its input', 'the incoming gradient', 'its output'])
def test_a_backward_returning_a_tensor_never_makes_grad_alias_it(returns, how):
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    upstream = mt.tensor([4.0, 5.0, 6.0])
    y = _custom(returns).apply(x)
    loss = (y * upstream).sum()
    if how == 'mt.grad':
        got, = mt.grad(loss, x)
    else:
        loss.backward(create_graph=how.endswith('True)'))
        got = x.grad
    expected = {'its input': x, 'the incoming gradient': upstream, 'its output': y}[returns].detach().numpy()
    np.testing.assert_array_equal(got.detach().numpy(), expected)
    for other in (x, y, upstream):
        assert got is not other and not _shares(got, other)


WRITES = {
    'g *= 2': lambda g: g.__imul__(2),
    'g += 1': lambda g: g.__iadd__(1),
    'g.data *= 2': lambda g: g.data.__imul__(2),
    'g.data[...] = 0': lambda g: g.data.__setitem__(Ellipsis, 0),
    'g.data.fill(0)': lambda g: g.data.fill(0),
    'a view of g.data written': lambda g: g.data.reshape(-1).__setitem__(0, 7.0),
    'g.fill_(0)': lambda g: g.fill_(0),
    'g[0] = 0': lambda g: g.__setitem__(0, 0.0),
}


@pytest.mark.parametrize('create_graph', [False, True])
@pytest.mark.parametrize('sibling', ['alone', 'with a sibling branch'])
@pytest.mark.parametrize('write', sorted(WRITES))
def test_a_backward_that_writes_into_its_incoming_gradient_is_refused(write, sibling, create_graph):
    class Scale(_Double):
        def backward(self, g):
            WRITES[write](g)
            return g * 2

    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = mt.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = Scale.apply(x)
    out = y + b * 3 if sibling != 'alone' else y * 1
    with pytest.raises(RuntimeError, match=r'^Scale\.backward wrote into its incoming gradient g'):
        out.sum().backward(create_graph=create_graph)


def test_after_a_refused_write_the_gradients_are_writable_again():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.grad.data *= 2  # the engine's read-only flag was only for the duration of one backward
    assert x.grad.tolist() == [6.0, 6.0]


class _Identity(Function):
    def forward(self, x):
        return x

    def backward(self, g):
        return g * 1


class _Slice(Function):
    def forward(self, x):
        return x[:]

    def backward(self, g):
        return g * 1


CHANGES = {'+=': lambda t: t.__iadd__(1.0), 'setitem': lambda t: t.__setitem__(0, 9.0),
           'copy_': lambda t: t.copy_(mt.zeros(3)), 'fill_': lambda t: t.fill_(2.0), 'zero_': lambda t: t.zero_()}


@pytest.mark.parametrize('change', sorted(CHANGES))
@pytest.mark.parametrize('op', [_Identity, _Slice], ids=['returns its input', 'returns a view of its input'])
def test_a_forward_that_returns_its_input_shares_its_version_counter(op, change):
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    saved = x * x  # Mul saved x
    y = op.apply(x)
    assert y._version is x._version
    with mt.no_grad():
        CHANGES[change](y)
    with pytest.raises(RuntimeError, match='modified in place'):
        saved.sum().backward()


BAD_INPUTS = {'a numpy array': (np.ones(3),), 'a float': (1.5,), 'an int': (2,), 'a list': ([1.0, 2.0],),
              'None': (None,), 'no arguments': (), 'a tensor then a numpy array': (mt.ones(3), np.ones(3))}


@pytest.mark.parametrize('given', sorted(BAD_INPUTS))
def test_function_apply_with_something_that_is_not_a_tensor_names_the_op(given):
    with pytest.raises(TypeError, match=r'^_Double\.apply') as caught:
        _Double.apply(*BAD_INPUTS[given])
    if given != 'no arguments':
        assert 'not a Tensor' in str(caught.value) and 'mt.tensor' in str(caught.value)


class _WithoutReadOnly:
    """An array without a writeable flag, as cupy's: the guard falls back to comparing checksums."""

    def __init__(self, array):
        self.array, self.flags, self.itemsize = array, type('Flags', (), {})(), array.itemsize

    def view(self, dtype):
        return self.array.view(dtype)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_where_arrays_cannot_be_read_only_a_checksum_names_the_op_that_wrote(dtype):
    from types import SimpleNamespace
    from microtensor.contract import IncomingGradients
    first, second, third = (type(name, (), {})() for name in ('Honest', 'Scribbler', 'Later'))
    arrays = [np.linspace(-1, 1, 6).astype(dtype) for _ in range(3)]
    incoming = IncomingGradients()
    for fn, array in zip((first, second, third), arrays):
        incoming.guard(fn, SimpleNamespace(data=_WithoutReadOnly(array)))
        if fn is second:
            array[2] = 7  # what a backward that writes into its g does
        assert array.flags.writeable  # nothing was made read-only
    incoming.release()
    with pytest.raises(RuntimeError, match=r'^Scribbler\.backward wrote into its incoming gradient'):
        incoming.check()
    honest = IncomingGradients()
    honest.guard(first, SimpleNamespace(data=_WithoutReadOnly(arrays[0])))
    honest.release()
    honest.check()
