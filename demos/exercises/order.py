"""`check` of backward_loop: the learner's topological_order, on small graphs through the engine,
then the engine's own autograd tests (tests/test_autograd.py) with it, when they are there.
"""
import os
import subprocess
import sys

import microtensor as mt
from microtensor.i18n import N_, _
from . import workbook
from .catalogue import Mistake
from .compare import first_wrong
from .messages import Failure, Result, crash, nudge_and_formula, same
from .substitute import substituted

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE_TESTS = os.path.join(ROOT, 'tests', 'test_autograd.py')
ENGINE_TESTS_LIMIT = 300  # seconds: the engine's tests are many


def check_order(name, impl, folder, path=None, tick=lambda step='', limit=None: None):
    """Gradients through small graphs with the learner's order, then the engine's own tests
    (folder None: not those)."""
    for case, build in GRAPHS:
        tick(_(case))
        failure = order_outcome(impl, build, path)
        if failure is not None and failure.kind == 'todo':
            return Result(name, 'todo', failure.text)
        if failure is not None:
            hint = next((_(m.hint) for m in ORDER_MISTAKES if same(order_outcome(m.wrong, build) or
                                                                     Failure('value', ''), failure)),
                        failure.hint or _("each tensor must come after every tensor that uses it, and only once"))
            nudge, formula = nudge_and_formula(hint)
            return Result(name, 'fail', _("{failure} (on {graph})").format(failure=failure.labelled(), graph=_(case)),
                          nudge, formula)
    if folder is None:
        return Result(name, 'pass', _("({count} graphs)").format(count=len(GRAPHS)))
    tick(_("the engine's tests"), ENGINE_TESTS_LIMIT)
    return engine_tests(name, folder)


def order_outcome(impl, build, path=None):
    """None if the learner's order gives the engine's gradients on build()'s graph, else the Failure."""
    roots, leaves = build()
    expected = [g.numpy() for g in mt.grad(roots, leaves)]
    roots, leaves = build()
    with substituted({'backward_loop': impl}):
        try:
            order = impl(roots)
            problem = order_problem(order, roots)
            if problem:
                raise Failure('value', problem, problem)
            got = [g.numpy() for g in mt.grad(roots, leaves)]
        except Failure as failure:
            return failure
        except NotImplementedError as error:
            return Failure('todo', _("not written yet ({error})").format(error=error))
        except (Exception, SystemExit) as error:
            failure = crash(error, path, _('your topological_order'))
            failure.data = type(error).__name__
            return failure
    for i, (a, n) in enumerate(zip(got, expected)):
        wrong = first_wrong(a, n)
        if wrong is not None:
            return Failure('value', _("dL/dx{i} at {index}: expected {expected}, got {got}").format(
                i=i, index=wrong[0], expected=f"{wrong[1]:.6g}", got=f"{wrong[2]:.6g}"), got)
    return None


def order_problem(order, roots):
    """What is wrong with `order` as a backward order from `roots`, or ''."""
    if not isinstance(order, (list, tuple)):
        return _("topological_order returned {type}, not a list of tensors").format(type=type(order).__name__)
    position = {}
    for i, t in enumerate(order):
        if id(t) in position:
            return _("{tensor} appears twice in the order").format(tensor=_tensor(t))
        position[id(t)] = i
    for t in order:
        for x in (t.creator.inputs if t.creator is not None else ()):
            if x.requires_grad and position.get(id(x), -1) < position[id(t)]:
                return (_("{tensor} is missing from the order") if id(x) not in position else
                        _("{tensor} is before a tensor that uses it in the order")).format(tensor=_tensor(x))
    missing = [r for r in roots if id(r) not in position]
    return _("the root of shape {shape} is missing from the order").format(shape=missing[0].shape) if missing else ''


def _tensor(t):
    return (_("a tensor of shape {shape} (a leaf)") if t.creator is None else
            _("a tensor of shape {shape} (made by {op})")).format(shape=t.shape, op=t.creator)


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


GRAPHS = [(N_('a tensor used twice'), _used_twice), (N_('two paths of different lengths'), _two_paths),
          (N_('a chain of 3,000 ops'), _deep_chain), (N_('two roots, one using the other'), _two_roots)]


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
    Mistake(N_("backward starts at the roots (the loss): each tensor after every tensor that uses it, "
            "leaves last (is the order reversed?)"), _reversed_order),
    Mistake(N_("a recursive walk passes Python's recursion limit on deep graphs: use your own stack (a list)"),
            _recursive_order),
    Mistake(N_("a tensor used twice must appear once, after both of its users: remember which tensors you have seen"),
            _unvisited_order),
]


def engine_tests(name, folder):
    """tests/test_autograd.py with the learner's order (a subprocess: the engine's tests under pytest)."""
    try:
        import pytest  # noqa: F401  (only to know it is there)
    except ImportError:
        return Result(name, 'pass', _("({count} graphs; the engine's tests need pytest: pip install pytest)").format(
            count=len(GRAPHS)))
    if not os.path.exists(ENGINE_TESTS):
        return Result(name, 'pass', _("({count} graphs; the engine's tests are not here: they come with a clone)")
                      .format(count=len(GRAPHS)))
    env = dict(os.environ, WORKBOOK_FOLDER=os.path.abspath(folder),
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    try:
        run = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-x', '-p', 'no:cacheprovider',
                              '-p', 'demos.exercises.engine_tests', ENGINE_TESTS],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=ENGINE_TESTS_LIMIT - 10)
    except subprocess.TimeoutExpired:
        return Result(name, 'fail', _("time-out: the engine's tests/test_autograd.py did not finish within {seconds} s "
                                      "with your order").format(seconds=ENGINE_TESTS_LIMIT - 10),
                      _("a loop that never ends in your walk?"))
    if run.returncode != 0:
        failed = [line for line in run.stdout.splitlines() if line.startswith(('FAILED', 'ERROR', 'E '))]
        return Result(name, 'fail', _("the engine's tests/test_autograd.py fail with your order: {failed}").format(
                      failed=' | '.join(failed[:3] or run.stdout.splitlines()[-3:])),
                      _("run them yourself: WORKBOOK_FOLDER=DIR python -m pytest -p demos.exercises.engine_tests "
                        "tests/test_autograd.py"))
    return Result(name, 'pass', _("({count} graphs, and the engine's tests/test_autograd.py)").format(
        count=len(GRAPHS)))
