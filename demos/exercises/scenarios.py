"""The scenarios `check` runs a learner's op in, each of which raises a Failure naming its kind.

On every example (the explicit ones first, then hypothesis's random ones):
    forward       the output's shape, dtype and values are the reference answer's
    backward      called directly with the checker's g: nothing it was given is changed in place
                  (g, the inputs, the output); it returns one gradient per input (a tuple, a list,
                  or a lone Tensor for one input), each of an allowed shape and dtype
    gradients     through the engine: the reference answer's gradients on the same inputs and the
                  same upstream gradient, norm-wise and tight (compare.RTOL)
    differences   central finite differences of L = sum(y * u), with the checker's own copy of u
Once, on the explicit examples (after the above pass):
    each input constant in turn, two instances in one graph, the op used twice on one input,
    backward run twice, float32 inputs, the edge values, and second order (gradgradcheck)
    where the exercise asks for a backward written on tensors.
"""
import numpy as np

import microtensor as mt
from microtensor.gradcheck import GradcheckError
from microtensor.i18n import N_, _
from . import compare
from .messages import Failure, crash


class Case:
    """An exercise, the learner's implementation, the reference answer, and how to run them:
    `using()` is the context the learner's code runs in (attention: with the learner's ops in the
    engine), `path` the learner's file (to trim tracebacks), `tick()` is called before each step."""

    def __init__(self, exercise, impl, answer, using, path=None, tick=None):
        self.exercise, self.impl, self.answer, self.using, self.path = exercise, impl, answer, using, path
        self.tick = tick or (lambda step='': None)

    def forward(self, impl, arrays, params, requires=True):
        flags = [requires] * len(arrays) if isinstance(requires, bool) else requires
        tensors = [mt.tensor(a, requires_grad=r) for a, r in zip(arrays, flags)]
        if impl is not self.impl:  # the reference runs on the engine's own ops
            return self.exercise.apply(impl, tensors, params), tensors
        with self.using():
            return self.exercise.apply(impl, tensors, params), tensors

    def gradients(self, impl, arrays, params, u, requires=True):
        """(output array, [dL/dx for each input that requires grad, zeros where None]) with L = sum(y * u);
        u is copied: the engine hands the root gradient itself to the last op's backward."""
        out, tensors = self.forward(impl, arrays, params, requires)
        wanted = [t for t in tensors if t.requires_grad]
        grads = mt.grad(out, wanted, grad_outputs=mt.tensor(u.copy()), allow_unused=True)
        return out.numpy(), [np.zeros(t.shape, t.numpy().dtype) if g is None else g.numpy()
                             for t, g in zip(wanted, grads)]

    def reference(self, arrays, params, u, requires=True):
        return self.gradients(self.answer, arrays, params, u, requires)

    def names(self, requires=True):
        return [n for i, n in enumerate(self.exercise.inputs) if requires is True or requires[i]]

    def run(self, step, *args):
        """step(self, *args) with the learner's errors made Failures (a NotImplementedError: not written yet)."""
        self.tick(_(STEPS[step.__name__]))
        where = describe(self.exercise, args[0])
        try:
            with np.errstate(all='ignore'):  # an overflow shows as inf or nan in the comparison, with a hint
                return step(self, *args)
        except Failure as failure:
            if where not in failure.text and failure.kind != 'todo':
                failure.text += _(" (on {where})").format(where=where)
            raise
        except NotImplementedError as error:
            raise Failure('todo', str(error) or 'NotImplementedError') from None
        except (Exception, SystemExit) as error:
            raise crash(error, self.path, _("on {where}, your code").format(where=where)) from None


def upstream(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------- on every example
def forward_matches(case, example, dtype=np.float64):
    arrays, params = example
    arrays = [a.astype(dtype) for a in arrays]
    with mt.no_grad():
        expected = case.forward(case.answer, arrays, params, requires=False)[0].numpy()
        out = case.forward(case.impl, arrays, params, requires=False)[0]
    if out.shape != expected.shape:
        raise Failure('shape', _("the output has shape {shape}, expected {expected}").format(
            shape=out.shape, expected=expected.shape), out.shape)
    if out.numpy().dtype != expected.dtype:
        raise Failure('dtype', _("{dtype} inputs gave a {got} output, expected {expected} (forward is given: is it "
                                 "as it was?)").format(dtype=np.dtype(dtype).name, got=out.numpy().dtype,
                                                       expected=expected.dtype), str(out.numpy().dtype))
    rtol, atol = (compare.RTOL, compare.ATOL) if dtype == np.float64 else (compare.RTOL32, compare.ATOL32)
    if not compare.close(out.numpy(), expected, rtol, atol):
        index, want, got = compare.worst(out.numpy(), expected)
        raise Failure('value', _("the output at {index}: expected {expected}, got {got} (forward is given: is it "
                                 "as it was?)").format(index=index, expected=f"{want:.6g}", got=f"{got:.6g}"),
                      out.numpy())


def backward_directly(case, example, dtype=np.float64):
    """Call the learner's backward with the checker's g; check what it changed and what it returned."""
    if case.exercise.call:  # attention: no backward of its own
        return
    arrays, params = example
    inputs = [a.astype(dtype) for a in arrays]  # (copies: what the inputs must still hold afterwards)
    out, tensors = case.forward(case.impl, [a.copy() for a in inputs], params)
    for name, t, before in zip(case.exercise.inputs, tensors, inputs):
        if not np.array_equal(t.numpy(), before, equal_nan=True):
            raise Failure('mutated', _("your forward changed the input {name} in place").format(name=name), name)
    u = upstream(out.shape, dtype=out.numpy().dtype)
    g = mt.tensor(u.copy())
    output = out.numpy().copy()
    with mt.no_grad():
        grads = out.creator.backward(g)
    if not np.array_equal(g.numpy(), u):
        raise Failure('mutated', _("your backward changed the incoming gradient g in place; g belongs to the "
                                   "engine (other ops may share it): compute a new tensor instead"), 'g')
    for name, t, before in zip(case.exercise.inputs, tensors, inputs):
        if not np.array_equal(t.numpy(), before, equal_nan=True):
            raise Failure('mutated', _("your backward changed the input {name} in place").format(name=name), name)
    if not np.array_equal(out.numpy(), output, equal_nan=True):
        raise Failure('mutated', _("your backward changed the output (self.output) in place"), 'output')
    returned(case, grads, tensors, out)


def returned(case, grads, tensors, out):
    """One gradient per input, in a tuple or a list (a lone Tensor for a one-input op), each None or a
    Tensor of the input's shape (or a shape the input was broadcast to), floating, as precise as the input."""
    names, n = case.exercise.inputs, len(tensors)
    if isinstance(grads, mt.Tensor) and n == 1:
        grads = (grads,)
    if not isinstance(grads, (tuple, list)):
        raise Failure('shape', _("backward returned {type}; return a tuple with one gradient per input ({grads})")
                      .format(type=type(grads).__name__, grads=', '.join('dL/d' + name for name in names)),
                      type(grads).__name__)
    if len(grads) != n:
        returned = (_("{count} gradient") if len(grads) == 1 else _("{count} gradients")).format(count=len(grads))
        wanted = (_("{n} input") if n == 1 else _("{n} inputs")).format(n=n)
        raise Failure('shape', _("backward returned {returned} for {wanted}; return ({grads})").format(
            returned=returned, wanted=wanted, grads=', '.join('dL/d' + name for name in names)), len(grads))
    for name, x, gx in zip(names, tensors, grads):
        if gx is None:
            continue
        if not isinstance(gx, mt.Tensor):
            raise Failure('dtype', _("dL/d{name} is a {type}, not a Tensor").format(
                name=name, type=f"{type(gx).__module__.split('.')[0]}.{type(gx).__name__}"), type(gx).__name__,
                _("compute it with Tensor operations on g and self.inputs, or wrap an array: mt.as_tensor(a)"))
        exact = case.exercise.exact_shapes
        if gx.shape != x.shape and (exact or not _sums_to(gx.shape, x.shape)):
            why = (_("this op sums over the broadcast axes itself") if exact else
                   _("y has shape {shape}").format(shape=out.shape))
            raise Failure('shape', _("backward returned dL/d{name} of shape {shape} for {name} of shape {expected} "
                                     "(in a {container}); {why}").format(
                name=name, shape=gx.shape, expected=x.shape, container=type(grads).__name__, why=why),
                (name, gx.shape))
        kind, size = np.dtype(gx.numpy().dtype), np.dtype(x.numpy().dtype).itemsize
        if kind.kind != 'f' or kind.itemsize < size:
            raise Failure('dtype', _("backward returned dL/d{name} as {dtype} for a {input} input: keep (at least) "
                                     "the input's precision").format(name=name, dtype=kind.name,
                                                                     input=x.numpy().dtype), (name, kind.name))


def _sums_to(shape, target):
    return len(shape) >= len(target) and all(n == 1 or n == m for n, m in zip(reversed(target), reversed(shape)))


def gradients_match(case, example, requires=True, note=''):
    """The learner's gradients through the engine against the reference answer's, norm-wise and tight."""
    arrays, params = example
    out = case.forward(case.answer, arrays, params, requires=False)[0]
    u = upstream(out.shape)
    expected = case.reference(arrays, params, u, requires)[1]
    got = case.gradients(case.impl, arrays, params, u, requires)[1]
    for name, a, e in zip(case.names(requires), got, expected):
        if not compare.close(a, e):
            raise Failure('value', wrong_gradient(name, a, e, note), got)
    return got


def wrong_gradient(name, got, expected, note='', against=None):
    """What is wrong with dL/d`name`, against the reference answer's (or `against`: what `expected` is)."""
    index, want, value = compare.worst(got, expected)
    relative = compare.relative_difference(got, expected)
    text = note + _("dL/d{name} (shape {shape}) differs from {against} by {relative} (relative, norm-wise); the "
                    "furthest element, at {index}: expected {expected}, got {got}").format(
        name=name, shape=got.shape, against=against or _("the reference answer's"), relative=f"{relative:.1e}",
        index=index, expected=f"{want:.6g}", got=f"{value:.6g}")
    if not np.isfinite(got).all():
        text += _(" (inf or nan: an overflow? an exp of a large number?)")
    elif 1e-9 < relative < 1e-5:
        text += _(" (about float32's rounding: does your backward compute in float32? keep the input's dtype)")
    return text


def differences_match(case, example, analytic):
    """Independent of the reference: central differences of the learner's own forward, L = sum(y * u),
    with the checker's own copy of u."""
    arrays, params = example
    with mt.no_grad():
        shape = case.forward(case.impl, arrays, params, requires=False)[0].shape
    u = upstream(shape)

    def L(values):
        with mt.no_grad():
            return float((case.forward(case.impl, values, params, requires=False)[0].numpy() * u).sum())

    for name, a, n in zip(case.exercise.inputs, analytic, compare.finite_differences(L, arrays)):
        wrong = compare.first_wrong(a, n)
        if wrong is not None:
            index, want, got = wrong
            raise Failure('value', _("dL/d{name} (shape {shape}) at {index}: finite differences give {expected}, "
                                     "your backward {got}").format(name=name, shape=a.shape, index=index,
                                                                   expected=f"{want:.6g}", got=f"{got:.6g}"),
                          analytic)


STEPS = {  # what a slow check says it is doing (the step functions, by name)
    'forward_matches': N_('forward matches'), 'backward_directly': N_('backward directly'),
    'gradients_match': N_('gradients match'), 'differences_match': N_('differences match'),
    'each_input_constant': N_('each input constant'), 'two_instances': N_('two instances'),
    'backward_twice': N_('backward twice'), 'in_float32': N_('in float32'), 'edge_values': N_('edge values'),
    'second_order': N_('second order'),
}


def every_example(case, example):
    """The checks of one example; None, or raises the first Failure."""
    case.run(forward_matches, example)
    case.run(backward_directly, example)
    analytic = case.run(gradients_match, example)
    case.run(differences_match, example, analytic)


# ---------------------------------------------------------------------------- once, on chosen examples
def each_input_constant(case, example):
    n = len(example[0])
    for i in range(n if n > 1 else 0):
        requires = [j != i for j in range(n)]
        gradients_match(case, example, requires, _("with {name} constant (requires_grad=False), ").format(
            name=case.exercise.inputs[i]))


def two_instances(case, example, other):
    """Two uses of the op in one graph (on `example` and on `other`, which may have other shapes and
    parameters), then the op used twice on one input: each gets its own gradient."""
    if case.exercise.call:
        return
    (arrays, params), (arrays2, params2) = example, other
    outs = [case.forward(case.answer, a, p, requires=False)[0] for a, p in ((arrays, params), (arrays2, params2))]
    us = [upstream(out.shape, seed) for seed, out in enumerate(outs)]
    expected = [case.reference(arrays, params, us[0])[1], case.reference(arrays2, params2, us[1])[1]]
    both = _("with two {op} ops in one graph (on {first} and on {second})").format(
        op=case.exercise.attr, first=describe(case.exercise, example), second=describe(case.exercise, other))
    y1, t1 = case.forward(case.impl, arrays, params)
    y2, t2 = case.forward(case.impl, arrays2, params2)
    loss = (y1 * mt.tensor(us[0])).sum() + (y2 * mt.tensor(us[1])).sum()
    try:
        grads = mt.grad(loss, t1 + t2, allow_unused=True)
    except Exception as error:
        raise Failure('shared', _("{where}, {error}; each alone works").format(
            where=both, error=crash(error, case.path, _('your backward')).text), 'raised') from None
    for which, got, want, tensors in ((N_('first'), grads[:len(t1)], expected[0], t1),
                                      (N_('second'), grads[len(t1):], expected[1], t2)):
        for name, g, e, t in zip(case.exercise.inputs, got, want, tensors):
            g = np.zeros(t.shape) if g is None else g.numpy()
            if not compare.close(g, e):
                raise Failure('shared', _("{where}, the {which} one's dL/d{name} is wrong, though each alone is "
                                          "right: {why}").format(where=both, which=_(which), name=name,
                                                                 why=wrong_gradient(name, g, e)), 'two')
    y, tensors = case.forward(case.impl, arrays, params)
    z = case.exercise.apply(case.impl, tensors, params)  # (not attention: no `using` to enter)
    loss = (y * mt.tensor(us[0])).sum() + (z * mt.tensor(upstream(y.shape, 1))).sum()
    second = case.reference(arrays, params, upstream(y.shape, 1))[1]
    for name, g, e1, e2 in zip(case.exercise.inputs, mt.grad(loss, tensors, allow_unused=True), expected[0], second):
        g = np.zeros(e1.shape) if g is None else g.numpy()
        if not compare.close(g, e1 + e2):
            raise Failure('shared', _("with the op used twice on the same inputs, dL/d{name} is wrong, though one "
                                      "use alone is right: {why}").format(name=name,
                                                                          why=wrong_gradient(name, g, e1 + e2)),
                          'twice')


def backward_twice(case, example):
    """backward twice over one graph (retain_graph): the second gradients equal the first."""
    arrays, params = example
    out, tensors = case.forward(case.impl, arrays, params)
    u = upstream(out.shape)
    first = mt.grad(out, tensors, grad_outputs=mt.tensor(u.copy()), retain_graph=True, allow_unused=True)
    try:
        second = mt.grad(out, tensors, grad_outputs=mt.tensor(u.copy()), allow_unused=True)
    except Exception as error:
        failure = crash(error, case.path, _("the second backward over the same graph"))
        raise Failure('consumed', _("{error}; the first backward worked").format(error=failure.text),
                      'raised') from None
    for name, a, b in zip(case.exercise.inputs, first, second):
        a, b = (np.zeros(t.shape) if g is None else g.numpy() for g, t in ((a, out), (b, out)))
        if not compare.close(b, a):
            raise Failure('consumed', _("a second backward over the same graph (retain_graph=True) gives another "
                                        "dL/d{name}: {why}").format(
                name=name, why=wrong_gradient(name, b, a, against=_("the first"))), 'changed')


def in_float32(case, example):
    """float32 inputs: a float32 output, and float32 gradients near the reference answer's."""
    forward_matches(case, example, np.float32)
    backward_directly(case, example, np.float32)
    arrays, params = example
    arrays = [a.astype(np.float32) for a in arrays]
    out = case.forward(case.answer, arrays, params, requires=False)[0]
    u = upstream(out.shape, dtype=np.float32)
    expected = case.reference(arrays, params, u)[1]
    got = case.gradients(case.impl, arrays, params, u)[1]
    for name, a, e in zip(case.exercise.inputs, got, expected):
        if a.dtype != np.float32:
            raise Failure('dtype', _("float32 inputs gave a {dtype} dL/d{name}").format(dtype=a.dtype, name=name),
                          a.dtype.name)
        if not compare.close(a, e, compare.RTOL32, compare.ATOL32):
            raise Failure('value', _("in float32, {why}").format(why=wrong_gradient(name, a, e)), got)


def edge_values(case, edge):
    """Large inputs whose true result is finite, exact zeros, a kink: only against the reference."""
    example, what = edge
    note = _("on {what}, ").format(what=_(what))
    try:
        forward_matches(case, example)
        gradients_match(case, example, True, note)
    except Failure as failure:
        if case.exercise.kink and 'kink' in what:
            failure.text += '; ' + _(case.exercise.kink)
            failure.hint = _("at a kink, take the slope the exercise's docstring states")
        raise


def second_order(case, example):
    """gradgradcheck: the backward itself differentiable, for exercises that ask for a backward on tensors."""
    arrays, params = example
    tensors = [mt.tensor(a, requires_grad=True) for a in arrays]
    try:
        mt.gradgradcheck(lambda *xs: case.exercise.apply(case.impl, list(xs), params), tensors)
    except (GradcheckError, RuntimeError) as error:  # (RuntimeError: the first derivatives have no graph)
        raise Failure('second order', _("differentiating your backward (create_graph=True) fails: {error}; this "
                                        "exercise asks for a backward written with Tensor operations, which the "
                                        "engine can differentiate again").format(error=error), 'second') from None


def chosen(case):
    """The once-only scenarios, in order; each raises the first Failure."""
    explicit = case.exercise.explicit
    for i, example in enumerate(explicit[:2]):
        other = explicit[(i + 1) % len(explicit)] if len(explicit) > 1 else (
            [a * 0.5 + 0.25 for a in example[0]], example[1])
        case.run(each_input_constant, example)
        case.run(two_instances, example, other)
        case.run(backward_twice, example)
    case.run(in_float32, explicit[0])
    for edge in case.exercise.edge:
        case.run(edge_values, edge)
    if case.exercise.second_order:
        case.run(second_order, explicit[0])


def describe(exercise, example):
    if isinstance(example, tuple) and len(example) == 2 and isinstance(example[1], str):
        return _(example[1])  # an edge example: (example, what it is)
    arrays, params = example
    shapes = ', '.join(f"{name} {a.shape}" for name, a in zip(exercise.inputs, arrays))
    extras = ', '.join(f"{k}={_short(v)}" for k, v in params.items())
    return f"{shapes}{', ' + extras if extras else ''}"


def _short(value):
    if isinstance(value, mt.Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray) and value.size > 4:
        return _("array of shape {shape}").format(shape=value.shape)
    return repr(value.tolist() if isinstance(value, np.ndarray) else value)
