"""python -m demos.exercises start DIR | check DIR [NAME ...] | gpt DIR   (see demos/exercises/__init__.py)"""
import argparse
import os
import sys

from . import check, gpt, workbook


def at_least(kind, low, above=False):
    """An argparse type: a number of `kind` at least `low` (or above it); else a usage error, not a traceback."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if not (value > low if above else value >= low):
            raise argparse.ArgumentTypeError(f"must be {'above' if above else 'at least'} {low}, not {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def positive(kind):
    return at_least(kind, 0, above=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m demos.exercises', description=__doc__.split('(')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    start = commands.add_parser('start', help='write the exercises into DIR (never over your files)')
    start.add_argument('folder', metavar='DIR')
    checking = commands.add_parser('check', help='check the exercises in DIR (all, or the NAMEs)')
    training = commands.add_parser('gpt', help="train the tiny GPT with DIR's passing exercises; plot both losses")
    for command in (checking, training):
        command.add_argument('folder', metavar='DIR')
        command.add_argument('--examples', type=positive(int), default=30, help='random examples per exercise (30)')
        command.add_argument('--timeout', type=positive(float), default=check.TIMEOUT,
                             help=f'seconds each step of a check may take ({check.TIMEOUT:g})')
        command.add_argument('--show-formula', action='store_true',
                             help='show the full formula in the hints (by default: a nudge)')
    checking.add_argument('names', metavar='NAME', nargs='*', help=', '.join(workbook.EXERCISES))
    training.add_argument('--steps', type=positive(int), default=60, help='training steps (60)')
    training.add_argument('--seed', type=at_least(int, 0), default=0, help='random seed (0)')
    args = parser.parse_args(argv)

    if not args.folder.strip():
        parser.error("DIR is empty: name a folder, e.g. my_ops")
    if args.command == 'start':
        if os.path.exists(args.folder) and not os.path.isdir(args.folder):
            parser.error(f"{args.folder} is a file, not a folder: name a new folder (e.g. my_ops)")
        try:
            written, kept = workbook.start(args.folder)
        except OSError as error:
            parser.error(f"cannot write the exercises into {args.folder}: {error.strerror or error}")
        print(f"wrote {len(written)} files into {args.folder}" + (f"; kept yours: {', '.join(kept)}" if kept else ''))
        print(f"read {args.folder}/README.txt, then: python -m demos.exercises check {args.folder}")
        return 0
    try:
        results = check.check(args.folder, getattr(args, 'names', None), args.examples, timeout=args.timeout,
                              show_formula=args.show_formula)
    except ValueError as error:
        parser.error(str(error))
    passing = [name for name, r in results.items() if r.status == 'pass']
    failing = [name for name, r in results.items() if r.status != 'pass']
    summary = f"{len(passing)} of {len(results)} pass" + (f"; not yet: {', '.join(failing)}" if failing else '')
    if args.command == 'check':
        print(f"\n{'=' * 8} {summary} {'=' * 8}")
        return 0 if not failing else 1
    impls = {name: check.learner_impl(args.folder, name)[0] for name in passing if name != 'attention'}
    left_out = {name: r.status for name, r in results.items() if r.status != 'pass'}
    gpt.run(args.folder, impls, left_out, steps=args.steps, seed=args.seed)
    return 0


if __name__ == '__main__':
    sys.exit(main())
