"""python -m demos.exercises start DIR | check DIR [NAME ...] | gpt DIR   (see demos/exercises/__init__.py)"""
import argparse
import os
import sys

from microtensor import i18n
from microtensor.i18n import _
from . import check, gpt, workbook


def at_least(kind, low, above=False):
    """An argparse type: a number of `kind` at least `low` (or above it); else a usage error, not a traceback."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError((_("{text} is not an integer") if kind is int else
                                              _("{text} is not a number")).format(text=repr(text))) from None
        if not (value > low if above else value >= low):
            raise argparse.ArgumentTypeError((_("must be above {low}, not {text}") if above else
                                              _("must be at least {low}, not {text}")).format(low=low, text=text))
        return value
    parse.__name__ = kind.__name__
    return parse


def positive(kind):
    return at_least(kind, 0, above=True)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # chosen before the parser is built, so that its --help speaks that language too
        i18n.use(i18n.requested(argv))
    except ValueError as error:
        raise SystemExit(f"python -m demos.exercises: error: {error}") from None
    parser = i18n.ArgumentParser(prog='python -m demos.exercises', description=__doc__.split('(')[0])
    i18n.add_option(parser)
    commands = parser.add_subparsers(dest='command', required=True)
    start = commands.add_parser('start', help=_('write the exercises into DIR (never over your files)'))
    start.add_argument('folder', metavar='DIR')
    checking = commands.add_parser('check', help=_('check the exercises in DIR (all, or the NAMEs)'))
    training = commands.add_parser('gpt', help=_("train the tiny GPT with DIR's passing exercises; plot both losses"))
    for command in (start, checking, training):
        i18n.add_option(command)
    for command in (checking, training):
        command.add_argument('folder', metavar='DIR')
        command.add_argument('--examples', type=positive(int), default=30,
                             help=_('random examples per exercise ({examples})').format(examples=30))
        command.add_argument('--timeout', type=positive(float), default=check.TIMEOUT,
                             help=_('seconds each step of a check may take ({seconds})').format(
                                 seconds=f'{check.TIMEOUT:g}'))
        command.add_argument('--show-formula', action='store_true',
                             help=_('show the full formula in the hints (by default: a nudge)'))
    checking.add_argument('names', metavar='NAME', nargs='*', help=', '.join(workbook.EXERCISES))
    training.add_argument('--steps', type=positive(int), default=60,
                          help=_('training steps ({steps})').format(steps=60))
    training.add_argument('--seed', type=at_least(int, 0), default=0, help=_('random seed ({seed})').format(seed=0))
    args = parser.parse_args(argv)

    if not args.folder.strip():
        parser.error(_("DIR is empty: name a folder, e.g. my_ops"))
    if args.command == 'start':
        if os.path.exists(args.folder) and not os.path.isdir(args.folder):
            parser.error(_("{folder} is a file, not a folder: name a new folder (e.g. my_ops)").format(
                folder=args.folder))
        try:
            written, kept = workbook.start(args.folder)
        except OSError as error:
            parser.error(_("cannot write the exercises into {folder}: {error}").format(
                folder=args.folder, error=error.strerror or error))
        print(_("wrote {count} files into {folder}").format(count=len(written), folder=args.folder)
              + (_("; kept yours: {files}").format(files=', '.join(kept)) if kept else ''))
        print(_("read {readme}, then: python -m demos.exercises check {folder}").format(
            readme=f"{args.folder}/README.txt", folder=args.folder))
        return 0
    try:
        results = check.check(args.folder, getattr(args, 'names', None), args.examples, timeout=args.timeout,
                              show_formula=args.show_formula)
    except ValueError as error:
        parser.error(str(error))
    passing = [name for name, r in results.items() if r.status == 'pass']
    failing = [name for name, r in results.items() if r.status != 'pass']
    summary = (_("{passing} of {total} pass").format(passing=len(passing), total=len(results))
               + (_("; not yet: {exercises}").format(exercises=', '.join(failing)) if failing else ''))
    if args.command == 'check':
        print(f"\n{'=' * 8} {summary} {'=' * 8}")
        return 0 if not failing else 1
    impls = {name: check.learner_impl(args.folder, name)[0] for name in passing if name != 'attention'}
    left_out = {name: r.status for name, r in results.items() if r.status != 'pass'}
    gpt.run(args.folder, impls, left_out, steps=args.steps, seed=args.seed)
    return 0


if __name__ == '__main__':
    sys.exit(main())
