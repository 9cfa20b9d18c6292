"""`check`: run the learner's exercises through the scenarios and say what is wrong.

For each exercise, hypothesis draws examples (the explicit ones first: shapes that catch the
usual axis mistakes; then random shapes, axes and values, in float64) and scenarios.py checks
the learner's op on each against the reference answer and finite differences; the once-only
scenarios follow (constants, two instances, backward twice, float32, edge values, second order).
A failure is shrunk to a small example and reported by its kind, where it is, and a nudge: the
hint of the catalogued mistake that fails the same way on that example (its formula with
--show-formula).

Each exercise runs in a child process with a time limit per step (sandbox.py); check_one is
what the child runs, and what the tests call directly.
"""
import contextlib
import os

import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import HypothesisException

from microtensor.i18n import _
from . import blame, order, sandbox, scenarios, workbook
from .catalogue import EXERCISES
from .messages import Failure, Result, crash, general_hint, nudge_and_formula, report, same
from .substitute import substituted

ROOT = order.ROOT
TIMEOUT = 10.0  # seconds each step of a check may take, by default


def check(folder, names=None, max_examples=30, shrink=True, engine_tests=True, timeout=TIMEOUT,
          show_formula=False, isolated=True):
    """Check the exercises `names` (default: all) in `folder`, each in a child process with `timeout`
    seconds a step (isolated=False: in this process, no time limit); returns {name: Result}, printing each."""
    names = list(names or workbook.EXERCISES)
    unknown = sorted(set(names) - set(workbook.EXERCISES))
    if unknown:
        raise ValueError(_("check: no exercise called {unknown}; the exercises: {exercises}").format(
            unknown=', '.join(unknown), exercises=', '.join(workbook.EXERCISES)))
    if not max_examples >= 1:
        raise ValueError(_("check: --examples must be 1 or more, not {examples}").format(examples=max_examples))
    if not timeout > 0:
        raise ValueError(_("check: --timeout must be a positive number of seconds, not {timeout}").format(
            timeout=timeout))
    if not os.path.isdir(folder):
        raise ValueError(_("check: no folder {folder} (write the exercises first: python -m demos.exercises "
                           "start {folder})").format(folder=folder))
    names = sorted(set(names), key=workbook.EXERCISES.index)  # attention after the ops it is built from
    options = dict(max_examples=max_examples, shrink=shrink, engine_tests=engine_tests)

    def show(result):
        print(report(result, show_formula), flush=True)

    if isolated:
        return sandbox.run(folder, names, options, timeout, show)
    results, passing = {}, {}
    for name in names:
        result, impl = check_one(folder, name, passing, **options)
        if result.status == 'pass' and name not in ('attention', 'backward_loop'):
            passing[name] = impl
        results[name] = result
        show(result)
    return results


def check_one(folder, name, passing, max_examples=30, shrink=True, engine_tests=True, tick=None):
    """(Result, the learner's implementation) of exercise `name` in `folder`; `passing`: {name: impl}
    of the exercises that passed, which attention is built from; tick(step, limit) before each step."""
    tick = tick or (lambda step='', limit=None: None)
    tick(_('loading'))
    impl, result = learner_impl(folder, name)
    if result is not None:
        return result, None
    path = os.path.join(folder, f"{name}.py")
    if name == 'backward_loop':
        return order.check_order(name, impl, folder if engine_tests else None, path, tick), impl
    options = settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
                       report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                       phases=[Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else []))
    exercise = EXERCISES[name]
    using = (lambda: substituted(passing)) if name == 'attention' else contextlib.nullcontext
    case = scenarios.Case(exercise, impl, answer_of(name), using, path, tick)
    result = check_op(case, options)
    if name == 'attention':
        blame.explain(case, passing, result)
    return result, impl


def answer_of(name):
    return getattr(workbook.load_answer(name), EXERCISES[name].attr)


def learner_impl(folder, name):
    """(the learner's class or function, None), or (None, a Result saying why there is none)."""
    path = os.path.join(folder, f"{name}.py")
    if not os.path.exists(path):
        return None, Result(name, 'missing', _("no {file} in {folder} (python -m demos.exercises start {folder})")
                            .format(file=f"{name}.py", folder=folder))
    attr = 'topological_order' if name == 'backward_loop' else EXERCISES[name].attr
    try:
        module = workbook.load(folder, name)
    except (Exception, SystemExit) as error:  # a syntax error, a bad import, an exit at import time
        failure = crash(error, path, _("{file} cannot be loaded: importing it").format(file=f"{name}.py"))
        return None, Result(name, 'fail', failure.text, failure.hint)
    if not hasattr(module, attr):
        return None, Result(name, 'fail', _("{file} cannot be loaded: it defines no {attr}").format(
                            file=f"{name}.py", attr=attr),
                            _("{file} must define {attr} (was it renamed?)").format(file=f"{name}.py", attr=attr))
    return getattr(module, attr), None


def check_op(case, options):
    """Every example (explicit, then random), then the once-only scenarios; the Result."""
    exercise, failing = case.exercise, []

    def each(example):
        try:
            scenarios.every_example(case, example)
        except Failure as failure:
            failing.append((failure, example))
            raise

    test = given(exercise.examples)(each)
    for chosen in exercise.explicit:  # tried first, then the random ones
        test = hypothesis.example(chosen)(test)
    try:
        options(test)()
        scenarios.chosen(case)
    except Failure as failure:
        example = None
        if failing and failing[-1][0] is failure:  # hypothesis ends by replaying the smallest failing example
            example = failing[-1][1]
        return verdict(case, failure, example)
    except HypothesisException:  # Flaky: it failed, then passed on the same example
        if not failing:
            raise
        failure, example = failing[-1]
        failure.text += _(" (and then not, on the same example: does your op keep state between calls?)")
        return verdict(case, failure, example)
    return Result(exercise.name, 'pass', _("({chosen} chosen and {random} random examples, and the scenarios)")
                  .format(chosen=len(exercise.explicit), random=options.max_examples))


def verdict(case, failure, example):
    name = case.exercise.name
    case.failed_on = example
    if failure.kind == 'todo':
        return Result(name, 'todo', _("not written yet ({error})").format(error=failure.text))
    message = failure.labelled()  # (it says where: scenarios' Case.run adds the example)
    hint = recognise(case, failure, example) if example is not None else ''
    nudge, formula = nudge_and_formula(hint or failure.hint or general_hint(failure.kind))
    return Result(name, 'fail', message, nudge, formula)


def recognise(case, failure, example):
    """The hint of the first catalogued mistake that fails this example just as the learner did, or ''."""
    for mistake in case.exercise.mistakes:
        planted = mistake.wrong if case.exercise.call else type(case.answer.__name__, (case.answer,),
                                                                 {'backward': mistake.wrong})
        theirs = scenarios.Case(case.exercise, planted, case.answer, case.using)
        try:
            scenarios.every_example(theirs, example)
        except Failure as planted_failure:
            if same(planted_failure, failure):
                return _(mistake.hint)
    return ''
