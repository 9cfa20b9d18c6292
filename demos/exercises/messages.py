"""What `check` says: the kinds of failure, the learner's error trimmed to their own file,
a hint that fits the error, and the verdict lines.

Every failure message starts with its kind, so a learner (and a test) can tell a wrong
value from a wrong shape, a mutated gradient from state shared between instances.
A hint is a nudge (what is wrong, where); the formula comes only with --show-formula.
The tables below are in English, marked with N_; `_()` translates them where they are shown.
"""
import os
import traceback
from dataclasses import dataclass

import numpy as np

from microtensor.i18n import N_, _

KINDS = {
    'todo': N_("not written yet"),
    'value': N_("wrong value"),
    'shape': N_("wrong shape"),
    'dtype': N_("wrong dtype"),
    'mutated': N_("mutated"),               # an input, the output or the incoming gradient changed in place
    'shared': N_("state shared between instances"),
    'consumed': N_("state consumed by the first backward"),
    'second order': N_("not differentiable twice"),
    'timeout': N_("time-out"),
    'crash': N_("crash"),
    'load': N_("cannot be loaded"),
}


class Failure(Exception):
    """What went wrong on one example: kind is one of KINDS; `data` identifies it (the gradients,
    the output, the message), to recognise a catalogued mistake that fails the same way."""

    def __init__(self, kind, text, data=None, hint=''):
        super().__init__(text)
        self.kind, self.text, self.data, self.hint = kind, text, data, hint

    def labelled(self):
        """The message, starting with its kind ('wrong value: ...')."""
        label = _(KINDS[self.kind])
        return self.text if self.text.startswith(label) else _("{kind}: {text}").format(kind=label, text=self.text)


@dataclass
class Result:
    name: str
    status: str          # 'pass', 'fail', 'todo' (backward not written yet) or 'missing' (no file)
    message: str = ''
    hint: str = ''       # the nudge
    formula: str = ''    # the full hint, shown with --show-formula
    printed: str = ''    # what the learner's code printed while it was checked
    used: tuple = ()     # attention: the exercises its graph was built from


GENERAL_HINTS = {
    'value': N_("derive dL/dx on paper for a 2-element example and compare with your code"),
    'shape': N_("each gradient has its input's shape: check which axes your result has and which it should have"),
    'dtype': N_("build the gradient from g and self.inputs (they have the right dtype); a constant made with "
                "np.array(...) is float64, and .astype(np.float32) loses precision"),
    'mutated': N_("compute a new tensor (y = g * 2) instead of changing one in place (g *= 2, g[...] = 0, "
                  ".data[...])"),
    'shared': N_("keep what backward needs on self (self.p = ...), not on the class or in a module variable: "
                 "each use of the op is its own instance"),
    'consumed': N_("backward may run twice (retain_graph=True): read what forward saved, never pop, delete or "
                   "change it"),
    'second order': N_("write backward with Tensor operations on g, self.inputs and self.output (not on .data "
                       "or numpy arrays), so that the engine can differentiate it again"),
    'timeout': N_("a loop that never ends? (a while loop whose condition never changes, or a recursion)"),
    'todo': N_("replace the raise NotImplementedError(...) with your backward"),
}

ERROR_HINTS = [
    (SyntaxError, N_("a syntax error: check the brackets, colons and indentation around that line")),
    (NameError, N_("a name that is not defined: a typo, or a missing import (import microtensor as mt)")),
    (ImportError, N_("an import failed: import only microtensor, numpy and the standard library")),
    (RecursionError, N_("a recursion too deep: use a loop with your own stack (a list)")),
    (ZeroDivisionError, N_("a division by zero: which value can be 0 here?")),
    (AttributeError, N_("Tensors and numpy arrays have different methods; self.inputs and g are Tensors "
                        "(.data is the array, mt.as_tensor(array) makes a Tensor)")),
    (IndexError, N_("an index or an axis out of range: print the shapes")),
    (ValueError, N_("a shape or a value the op cannot take: print the shapes of g and of self.inputs")),
    (TypeError, N_("a wrong type or the wrong number of arguments: backward(self, g) returns one gradient "
                   "(a Tensor, or None) per input")),
    (SystemExit, N_("your code called sys.exit() or exit(): return a result instead")),
]


def general_hint(kind):
    """The hint for a failure of this kind, in the learner's language ('' for a kind without one)."""
    return _(GENERAL_HINTS[kind]) if kind in GENERAL_HINTS else ''


OTHER_ERROR_HINT = N_("read the error: it names the op and the input")


def error_hint(error):
    return _(next((hint for kind, hint in ERROR_HINTS if isinstance(error, kind)), OTHER_ERROR_HINT))


def learner_frames(error, path):
    """The traceback of `error` trimmed to the learner's file: 'file, line N, in f:\n    source'."""
    if path is None:
        return ''
    path = _same_file(path)
    if isinstance(error, SyntaxError) and error.filename and _same_file(error.filename) == path:
        return f"{error.filename}, line {error.lineno}:\n    {(error.text or '').strip()}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _same_file(f.filename) == path]
    return '\n'.join(f"{f.filename}, line {f.lineno}, in {f.name}:\n    {(f.line or '').strip()}"
                     for f in frames[-3:])


def _same_file(path):
    return os.path.normcase(os.path.abspath(path))


def crash(error, path, where=None):
    """The Failure for an exception raised in the learner's code (`where`: in the learner's language)."""
    text = _("{where} raised {error}").format(where=where or _("your code"), error=f"{type(error).__name__}: {error}")
    frames = learner_frames(error, path)
    if frames:
        text += '\n' + '\n'.join(' ' * 4 + line for line in frames.splitlines())
    return Failure('crash', text, f"{type(error).__name__}: {error}", error_hint(error))


def nudge_and_formula(hint):
    """A catalogued hint 'what is wrong: the formula' split in two (the nudge alone when it has no formula);
    in Chinese the colon is the full-width '：'."""
    at = min((i for i in (hint.find(': '), hint.find('：')) if i >= 0), default=-1)
    return (hint[:at], hint) if at >= 0 else (hint, hint)


STATUS = {'pass': N_('pass'), 'fail': N_('FAIL'), 'todo': N_('todo'), 'missing': N_('missing')}


def report(result, show_formula=False):
    """What the learner printed (indented), then the verdict line and its hint: the verdict comes last."""
    lines = []
    if result.printed.strip():
        printed = result.printed.rstrip().splitlines()
        lines.append((_("{name} printed ({lines} lines, the last 8):") if len(printed) > 8 else
                      _("{name} printed ({lines} lines):")).format(name=result.name, lines=len(printed)))
        lines += [f"  | {line}" for line in printed[-8:]]
    status = _(STATUS[result.status])
    verdict = f"{result.name:14} {status}"
    if result.message:
        message = result.message.splitlines()
        verdict += f"   {message[0]}" + ''.join(f"\n{'':14} {line}" for line in message[1:])
    lines.append(verdict)
    hint = result.formula if show_formula and result.formula else result.hint
    if hint:
        lines.append(f"{'':14} " + _("hint: {hint}").format(hint=hint))
        if result.formula and result.formula != result.hint and not show_formula:
            lines.append(f"{'':14} " + _("(the formula: check --show-formula)"))
    return '\n'.join(lines)


def same(a, b):
    """Do two Failures fail the same way (the same kind and data)?  How a catalogued mistake is recognised."""
    if a.kind != b.kind:
        return False
    if not isinstance(a.data, (list, np.ndarray)) or not isinstance(b.data, (list, np.ndarray)):
        return a.data == b.data
    data_a, data_b = (d if isinstance(d, list) else [d] for d in (a.data, b.data))
    return len(data_a) == len(data_b) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=1e-7, atol=1e-9, equal_nan=True) for x, y in zip(data_a, data_b))
