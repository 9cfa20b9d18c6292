"""`check`: gradient-check the learner's exercises and say what is wrong.

For each exercise, hypothesis draws inputs (shapes with broadcasting, axes, values) in
float64 and the learner's op is compared with

    its reference answer's forward value (forward is given: this catches an edited forward),
    central differences  dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps),  L = sum(y * u)

(u: a fixed random upstream gradient).  A failure is shrunk to a small example and
reported by its first wrong element (input, index, expected, got), with the hint of the
catalogued mistake that gives the same numbers (or the same error) on that example.
"""
import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import hypothesis
from hypothesis import HealthCheck, Phase, given, settings

import microtensor as mt
from . import workbook
from .catalogue import EXERCISES, Mistake
from .substitute import substituted

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-4
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE_TESTS = os.path.join(ROOT, 'tests', 'test_autograd.py')


class Failure(Exception):
    """What went wrong on one example: kind is 'todo', 'error', 'value', 'shape' or 'gradient';
    `data` identifies it (the gradients, the output, the message), to recognise a mistake."""

    def __init__(self, kind, text, data=None):
        super().__init__(text)
        self.kind, self.text, self.data = kind, text, data


@dataclass
class Result:
    name: str
    status: str          # 'pass', 'fail', 'todo' (backward not written yet) or 'missing' (no file)
    message: str = ''
    hint: str = ''


def check(folder, names=None, max_examples=30, shrink=True, engine_tests=True):
    """Check the exercises `names` (default: all) in `folder`; returns {name: Result}, printing each."""
    names = list(names or workbook.EXERCISES)
    unknown = sorted(set(names) - set(workbook.EXERCISES))
    if unknown:
        raise ValueError(f"check: no exercise called {', '.join(unknown)}; the exercises: "
                         f"{', '.join(workbook.EXERCISES)}")
    options = settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
                       report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                       phases=[Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else []))
    results, passing = {}, {}
    for name in sorted(names, key=workbook.EXERCISES.index):  # attention after the ops it is built from
        impl, result = learner_impl(folder, name)
        if result is None:
            if name == 'backward_loop':
                result = check_order(name, impl, folder if engine_tests else None)
            else:
                using = (lambda: substituted(passing)) if name == 'attention' else contextlib.nullcontext
                result = check_op(EXERCISES[name], impl, using, options)
                if name == 'attention' and result.status == 'pass':
                    result.message += (f" built from your {', '.join(passing)}" if passing else
                                       " built from the engine's ops: none of yours passes yet")
        if result.status == 'pass' and name != 'attention':
            passing[name] = impl
        results[name] = result
        print(report(result), flush=True)
    return results


def learner_impl(folder, name):
    """(the learner's class or function, None), or (None, a Result saying why there is none)."""
    if not os.path.exists(os.path.join(folder, f"{name}.py")):
        return None, Result(name, 'missing', f"no {name}.py in {folder} (python -m demos.exercises start {folder})")
    attr = 'topological_order' if name == 'backward_loop' else EXERCISES[name].attr
    try:
        impl = getattr(workbook.load(folder, name), attr)
    except Exception as error:  # a syntax error, a bad import, a renamed class
        return None, Result(name, 'fail', f"{name}.py cannot be loaded: {type(error).__name__}: {error}",
                            f"{name}.py must define {attr}")
    return impl, None


def report(result):
    """One line per exercise, and for a failure what was wrong and the hint."""
    line = f"{result.name:14} {result.status.upper() if result.status == 'fail' else result.status}"
    if result.message:
        line += f"   {result.message}"
    if result.hint:
        line += f"\n{'':14} hint: {result.hint}"
    return line


# ---------------------------------------------------------------------------- the ops
def check_op(exercise, impl, using, options):
    answer = getattr(workbook.load_answer(exercise.name), exercise.attr)
    failing = []

    def each(example):
        failure = outcome(exercise, impl, answer, example, using)
        if failure is not None:
            failing.append((failure, example))
            raise failure

    test = given(exercise.examples)(each)
    for chosen in exercise.explicit:  # tried first, then the random ones
        test = hypothesis.example(chosen)(test)
    try:
        options(test)()
    except Failure:
        failure, example = failing[-1]  # hypothesis ends by replaying the smallest failing example
        if failure.kind == 'todo':
            return Result(exercise.name, 'todo', f"not written yet ({failure.text})")
        return Result(exercise.name, 'fail', f"{failure.text} {describe(exercise, example)}",
                      diagnose(exercise, answer, failure, example, using))
    return Result(exercise.name, 'pass',
                  f"({len(exercise.explicit)} chosen and {options.max_examples} random examples)")


def outcome(exercise, impl, answer, example, using):
    """None if impl is right on this example, else the Failure."""
    arrays, params = example
    expected = exercise.apply(answer, [mt.tensor(a) for a in arrays], params).numpy()
    with using():
        try:
            tensors = [mt.tensor(a, requires_grad=True) for a in arrays]
            out = exercise.apply(impl, tensors, params)
            if out.shape != expected.shape:
                raise Failure('value', f"the output has shape {out.shape}, expected {expected.shape}", out.shape)
            wrong = first_wrong(out.numpy(), expected)
            if wrong is not None:
                index, want, got = wrong
                raise Failure('value', f"the output at {index}: expected {want:.6g}, got {got:.6g}", out.numpy())
            u = mt.tensor(np.random.default_rng(0).standard_normal(out.shape))
            if exercise.exact_shapes:
                check_exact_shapes(out.creator, u)
            grads = mt.grad(out, tensors, grad_outputs=u, allow_unused=True)
            analytic = [np.zeros_like(a) if g is None else g.numpy() for a, g in zip(arrays, grads)]
            for i, (a, n) in enumerate(zip(analytic, numeric_gradients(exercise, impl, arrays, params, u))):
                wrong = first_wrong(a, n)
                if wrong is not None:
                    index, want, got = wrong
                    raise Failure('gradient', f"dL/d{exercise.inputs[i]} (shape {a.shape}) at {index}: "
                                  f"expected {want:.6g}, got {got:.6g}", analytic)
        except Failure as failure:
            return failure
        except NotImplementedError as error:
            return Failure('todo', str(error))
        except Exception as error:
            text = f"{type(error).__name__}: {error}"
            return Failure('error', text, text)
    return None


def check_exact_shapes(fn, u):
    """broadcast_add undoes the broadcasting itself: each gradient at exactly its input's shape."""
    with mt.no_grad():
        grads = fn.backward(u)
    for name, x, g in zip(('a', 'b'), fn.inputs, grads if isinstance(grads, tuple) else ()):
        if isinstance(g, mt.Tensor) and g.shape != x.shape:
            text = (f"backward returned dL/d{name} of shape {g.shape} for {name} of shape {x.shape}; "
                    "this op sums over the broadcast axes itself")
            raise Failure('shape', text, text)


def numeric_gradients(exercise, impl, arrays, params, u):
    """Central differences of L = sum(f(inputs) * u) for each input, element by element."""
    def L(values):
        with mt.no_grad():
            return float((exercise.apply(impl, [mt.tensor(v) for v in values], params).numpy() * u.numpy()).sum())

    grads = []
    for i, x in enumerate(arrays):
        g = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i][index] += EPS
            minus[i][index] -= EPS
            g[index] = (L(plus) - L(minus)) / (2 * EPS)
        grads.append(g)
    return grads


def first_wrong(got, expected):
    """(index, expected, got) of the first element out of tolerance (in C order), or None."""
    bad = ~(np.abs(got - expected) <= ATOL + RTOL * np.abs(expected))  # (a nan is never within tolerance)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return index, float(expected[index]), float(got[index])


def describe(exercise, example):
    arrays, params = example
    shapes = ', '.join(f"{name} {a.shape}" for name, a in zip(exercise.inputs, arrays))
    extras = ', '.join(f"{k}={_short(v)}" for k, v in params.items())
    return f"(on {shapes}{', ' + extras if extras else ''})"


def _short(value):
    if isinstance(value, mt.Tensor):
        value = value.numpy()
    return f"array of shape {value.shape}" if isinstance(value, np.ndarray) and value.size > 4 else repr(
        value.tolist() if isinstance(value, np.ndarray) else value)


def diagnose(exercise, answer, failure, example, using):
    """The hint of the first catalogued mistake that fails this example just as the learner did."""
    for mistake in exercise.mistakes:
        planted = mistake.wrong if exercise.call else type(answer.__name__, (answer,), {'backward': mistake.wrong})
        theirs = outcome(exercise, planted, answer, example, using)
        if theirs is not None and same(theirs, failure):
            return mistake.hint
    return GENERAL_HINTS.get(failure.kind, "derive dL/dx on paper for a 2-element example and compare with your code")


GENERAL_HINTS = {'error': "read the error: it names the op and the input",
                 'value': "forward is given: is it as it was?"}


def same(a, b):
    if a.kind != b.kind:
        return False
    if a.kind in ('error', 'shape', 'todo') or not isinstance(a.data, (list, np.ndarray)):
        return a.data == b.data
    data_a, data_b = (d if isinstance(d, list) else [d] for d in (a.data, b.data))
    return all(x.shape == y.shape and np.allclose(x, y, rtol=1e-7, atol=1e-9) for x, y in zip(data_a, data_b))


# ---------------------------------------------------------------------------- backward_loop's order
def check_order(name, impl, folder):
    """Gradients through small graphs with the learner's order, then the engine's own tests."""
    for case, build in GRAPHS:
        failure = order_outcome(impl, build)
        if failure is not None and failure.kind == 'todo':
            return Result(name, 'todo', failure.text)
        if failure is not None:
            hint = next((m.hint for m in ORDER_MISTAKES if same(order_outcome(m.wrong, build) or
                                                                  Failure('pass', ''), failure)),
                        "each tensor must come after every tensor that uses it, and only once")
            return Result(name, 'fail', f"{failure.text} (on {case})", hint)
    if folder is None:
        return Result(name, 'pass', f"({len(GRAPHS)} graphs)")
    return engine_tests(name, folder)


def order_outcome(impl, build):
    """None if the learner's order gives the engine's gradients on build()'s graph, else the Failure."""
    roots, leaves = build()
    expected = [g.numpy() for g in mt.grad(roots, leaves)]
    roots, leaves = build()
    with substituted({'backward_loop': impl}):
        try:
            order = impl(roots)
            problem = order_problem(order, roots)
            if problem:
                raise Failure('order', problem, problem)
            got = [g.numpy() for g in mt.grad(roots, leaves)]
        except Failure as failure:
            return failure
        except NotImplementedError as error:
            return Failure('todo', f"not written yet ({error})")
        except Exception as error:
            text = f"{type(error).__name__}: {str(error)[:200]}"
            return Failure('error', text, type(error).__name__)
    for i, (a, n) in enumerate(zip(got, expected)):
        wrong = first_wrong(a, n)
        if wrong is not None:
            return Failure('gradient', f"dL/dx{i} at {wrong[0]}: expected {wrong[1]:.6g}, got {wrong[2]:.6g}", got)
    return None


def order_problem(order, roots):
    """What is wrong with `order` as a backward order from `roots`, or ''."""
    if not isinstance(order, (list, tuple)):
        return f"topological_order returned {type(order).__name__}, not a list of tensors"
    position = {}
    for i, t in enumerate(order):
        if id(t) in position:
            return f"{_tensor(t)} appears twice in the order"
        position[id(t)] = i
    for t in order:
        for x in (t.creator.inputs if t.creator is not None else ()):
            if x.requires_grad and position.get(id(x), -1) < position[id(t)]:
                return (f"{_tensor(x)} is "
                        f"{'missing from' if id(x) not in position else 'before a tensor that uses it in'} the order")
    missing = [r for r in roots if id(r) not in position]
    return f"the root of shape {missing[0].shape} is missing from the order" if missing else ''


def _tensor(t):
    return f"a tensor of shape {t.shape} ({'a leaf' if t.creator is None else f'made by {t.creator}'})"


def _used_twice():
    x = mt.tensor([0.5, -1.0, 2.0], dtype=mt.float64, requires_grad=True)
    y = x * x
    return [(y * 2 + y.exp()).sum()], [x]


def _two_paths():
    x = mt.tensor([[0.3, -0.7], [1.1, 0.2]], dtype=mt.float64, requires_grad=True)
    w = mt.tensor([0.5, -2.0], dtype=mt.float64, requires_grad=True)
    a = (x * w).tanh()
    return [(a + (a * 3).exp()).sum()], [x, w]


def _deep_chain():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0001
    return [y.sum()], [x]


def _two_roots():
    x = mt.tensor([0.5, 1.5], dtype=mt.float64, requires_grad=True)
    y = (x * x).sum()
    return [y, y * y], [x]


GRAPHS = [('a tensor used twice', _used_twice), ('two paths of different lengths', _two_paths),
          ('a chain of 3,000 ops', _deep_chain), ('two roots, one using the other', _two_roots)]


def _reversed_order(roots):
    return list(reversed(workbook.load_answer('backward_loop').topological_order(roots)))


def _recursive_order(roots):
    order, seen = [], set()

    def visit(t):
        if t not in seen:
            seen.add(t)
            for x in (t.creator.inputs if t.creator is not None else ()):
                if x.requires_grad:
                    visit(x)
            order.append(t)
    for root in roots:
        visit(root)
    return order[::-1]


def _unvisited_order(roots):
    order, stack = [], [(root, False) for root in reversed(roots)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        stack.append((t, True))
        stack.extend((x, False) for x in (t.creator.inputs if t.creator is not None else ()) if x.requires_grad)
    return order[::-1]


ORDER_MISTAKES = [
    Mistake("backward starts at the roots (the loss): each tensor after every tensor that uses it, "
            "leaves last (is the order reversed?)", _reversed_order),
    Mistake("a recursive walk passes Python's recursion limit on deep graphs: use your own stack (a list)",
            _recursive_order),
    Mistake("a tensor used twice must appear once, after both of its users: remember which tensors you have seen",
            _unvisited_order),
]


def engine_tests(name, folder):
    """tests/test_autograd.py with the learner's order (a subprocess: the engine's tests under pytest)."""
    try:
        import pytest  # noqa: F401  (only to know it is there)
    except ImportError:
        return Result(name, 'pass', f"({len(GRAPHS)} graphs; the engine's tests need pytest: pip install pytest)")
    if not os.path.exists(ENGINE_TESTS):
        return Result(name, 'pass', f"({len(GRAPHS)} graphs; the engine's tests are not here: they come with a clone)")
    env = dict(os.environ, WORKBOOK_FOLDER=os.path.abspath(folder),
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    run = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-x', '-p', 'no:cacheprovider',
                          '-p', 'demos.exercises.engine_tests', ENGINE_TESTS],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        failed = [line for line in run.stdout.splitlines() if line.startswith(('FAILED', 'ERROR', 'E '))]
        return Result(name, 'fail', "the engine's tests/test_autograd.py fail with your order: "
                      + ' | '.join(failed[:3] or run.stdout.splitlines()[-3:]),
                      "run them yourself: WORKBOOK_FOLDER=DIR python -m pytest -p demos.exercises.engine_tests "
                      "tests/test_autograd.py")
    return Result(name, 'pass', f"({len(GRAPHS)} graphs, and the engine's tests/test_autograd.py)")
