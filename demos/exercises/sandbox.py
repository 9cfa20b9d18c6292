"""The learner's code runs in a child process, which can be stopped: a loop that never ends gets
"did not return within N s" and checking goes on with the next exercise.

The child (multiprocessing's 'spawn': the same on Linux, macOS and Windows) checks the
exercises one after the other and sends over a pipe: ('begin', name), ('tick', name, step,
limit) before each step, ('result', Result).  The parent waits for each message at most the
step's limit; past it, or when the child dies (os._exit, a crash in C), that exercise fails,
the child is stopped, and a new one goes on with the rest.  What the learner's code prints is
caught and shown above its verdict, so that the verdict comes last.  The child speaks the
parent's language (it is handed over: --lang is not in the child's environment).
"""
import contextlib
import io
import multiprocessing
import os
import sys
import time

from microtensor import i18n
from microtensor.i18n import _
from .messages import Result, crash, general_hint

STARTUP = 120.0   # seconds for a child to import the engine, on a slow machine
PROGRESS = 3.0    # a slow check says how far it is every this many seconds


def run(folder, names, options, limit, show):
    """{name: Result} of each exercise, checked in child processes; show(result) as each arrives."""
    context = multiprocessing.get_context('spawn')
    results, passing = {}, []
    while len(results) < len(names):
        remaining = [name for name in names if name not in results]
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=child_main, args=(send, folder, remaining, passing, options,
                                                                         i18n.current()), daemon=True)
        child.start()
        send.close()
        try:
            _follow(child, receive, limit, results, passing, show)
        finally:
            if child.is_alive():
                child.kill()
            child.join()
            receive.close()
    return results


def _follow(child, receive, limit, results, passing, show):
    """Read the child's messages until it is done, stops answering, or dies."""
    current, step, wait = None, _('starting'), STARTUP
    began = shown = time.monotonic()
    while True:
        ended = None
        if not receive.poll(wait):
            ended = (_("time-out: did not return within {seconds} s (while checking: {step}); checking goes on "
                       "with the others").format(seconds=f"{wait:g}", step=step),
                     _("{hint}; or give it longer: --timeout").format(hint=general_hint('timeout')))
        else:
            try:
                message = receive.recv()
            except (EOFError, OSError):
                child.join(5)
                ended = (_("crash: the check stopped while running your code (while checking: {step}; the "
                           "process ended with exit code {code})").format(step=step, code=child.exitcode),
                         _("os._exit()? a crash inside numpy?"))
        if ended is not None:
            if current is None:
                raise RuntimeError(_("the checker's child process failed before checking anything: {why}")
                                   .format(why=ended[0]))
            result = Result(current, 'fail', *ended)
            results[current] = result
            show(result)
            return
        kind = message[0]
        if kind == 'done':
            return
        if kind == 'begin':
            current, step, wait = message[1], _('loading'), limit
            began = shown = time.monotonic()
        elif kind == 'tick':
            step, wait = message[2] or step, message[3] or limit
            now = time.monotonic()
            if now - began > PROGRESS and now - shown > PROGRESS:
                print(f"  ... {current}: {step} (" + _("{seconds} s").format(seconds=f"{now - began:.0f}") + ")",
                      file=sys.stderr, flush=True)
                shown = now
        elif kind == 'result':
            result = message[1]
            results[result.name] = result
            if result.status == 'pass' and result.name not in ('attention', 'backward_loop'):
                passing.append(result.name)
            show(result)
            current, step, wait = None, _('between exercises'), limit


def child_main(send, folder, names, passing, options, lang='en'):
    """The child: check `names` in order (the exercises in `passing` passed before: attention uses them),
    speaking `lang`."""
    from . import check  # (here: the child imports the engine, not the parent's pickled state)

    i18n.use(lang)

    impls = {name: check.learner_impl(folder, name)[0] for name in passing}
    for name in names:
        send.send(('begin', name))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                result, impl = check.check_one(folder, name, impls, tick=lambda step='', limit=None, name=name:
                                               send.send(('tick', name, step, limit)), **options)
            except (Exception, SystemExit) as error:  # raised where no scenario expected it
                failure = crash(error, os.path.join(folder, f"{name}.py"))
                result, impl = Result(name, 'fail', failure.text, failure.hint), None
        result.printed = printed.getvalue()[-4000:]
        send.send(('result', result))
        if result.status == 'pass' and name not in ('attention', 'backward_loop'):
            impls[name] = impl
    send.send(('done',))
    send.close()
