"""Attention is built from the learner's other ops: say exactly which, and when it fails, which
one is to blame.

The learner's attention runs with their passing ops in place of the engine's.  When it fails,
it runs again with the engine's ops only (does the composition itself fail?), then with each of
the learner's ops alone substituted: the ones that fail it are named.
"""
import microtensor as mt
from microtensor import autograd
from microtensor.i18n import _
from . import scenarios
from .messages import Failure
from .substitute import substituted


def used_ops(case, passing):
    """The names of the learner's exercises whose classes attention's graph holds (in exercise order)."""
    classes = {impl: name for name, impl in passing.items() if isinstance(impl, type)}
    if not classes:
        return []
    arrays, params = case.exercise.explicit[-1]  # (the masked example: every op attention may use)
    with substituted(passing):
        out = case.exercise.apply(case.impl, [mt.tensor(a, requires_grad=True) for a in arrays], params)
    types = {type(t.creator) for t in autograd.topological_order([out]) if t.creator is not None}
    return [name for impl, name in classes.items() if impl in types]


def fails_with(case, impls):
    """The Failure of attention with `impls` substituted (on the explicit examples), or None."""
    trial = scenarios.Case(case.exercise, case.impl, case.answer, lambda: substituted(impls), case.path)
    failed_on = getattr(case, 'failed_on', None)
    try:
        for example in case.exercise.explicit + ((failed_on,) if failed_on is not None else ()):
            scenarios.every_example(trial, example)
    except Failure as failure:
        return failure
    return None


def explain(case, passing, result):
    """Add to attention's Result which of the learner's ops it used and, on a failure, which is wrong."""
    try:
        used = used_ops(case, passing)
    except Exception:  # the learner's attention does not even run: the failure says why
        used = []
    result.used = tuple(used)
    built = (_("built from your {ops}").format(ops=', '.join(used)) if used else
             _("built from the engine's ops only: none of your ops that attention uses passes yet"))
    if result.status == 'pass':
        result.message += ' ' + built
        return
    if result.status != 'fail' or not used:
        return
    if fails_with(case, {}) is not None:
        result.message += '\n' + _("(it fails with the engine's ops too: the composition itself is wrong; {built})"
                                    ).format(built=built)
        return
    wrong = [name for name in used if fails_with(case, {name: passing[name]}) is not None]
    if wrong:
        result.message += '\n' + (
            _("(with the engine's ops it passes; it fails with your {ops} alone: its backward is wrong where "
              "attention uses it, though it passed its own check)") if len(wrong) == 1 else
            _("(with the engine's ops it passes; it fails with your {ops} alone: their backward is wrong where "
              "attention uses it, though it passed its own check)")).format(ops=', '.join(wrong))
        result.hint = _("look at your {op} with the inputs attention gives it (a mask makes -inf scores)").format(
            op=wrong[0])
    else:
        result.message += '\n' + _("(with the engine's ops it passes, and with each of your {ops} alone: they are "
                                    "wrong only together)").format(ops=', '.join(used))
