"""python -m demos.exercises start DIR | check DIR [NAME ...] | gpt DIR   (see demos/exercises/__init__.py)"""
import argparse
import sys

from . import check, gpt, workbook


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m demos.exercises', description=__doc__.split('(')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    start = commands.add_parser('start', help='write the exercises into DIR (never over your files)')
    start.add_argument('folder', metavar='DIR')
    checking = commands.add_parser('check', help='gradient-check the exercises in DIR (all, or the NAMEs)')
    checking.add_argument('folder', metavar='DIR')
    checking.add_argument('names', metavar='NAME', nargs='*', help=', '.join(workbook.EXERCISES))
    checking.add_argument('--examples', type=int, default=30, help='random examples per exercise (30)')
    training = commands.add_parser('gpt', help="train the tiny GPT with DIR's passing exercises; plot both losses")
    training.add_argument('folder', metavar='DIR')
    training.add_argument('--steps', type=int, default=60, help='training steps (60)')
    training.add_argument('--seed', type=int, default=0, help='random seed (0)')
    args = parser.parse_args(argv)

    if args.command == 'start':
        written, kept = workbook.start(args.folder)
        print(f"wrote {len(written)} files into {args.folder}" + (f"; kept yours: {', '.join(kept)}" if kept else ''))
        print(f"read {args.folder}/README.txt, then: python -m demos.exercises check {args.folder}")
        return 0
    try:
        results = check.check(args.folder, getattr(args, 'names', None), getattr(args, 'examples', 30))
    except ValueError as error:
        parser.error(str(error))
    passing = [name for name, r in results.items() if r.status == 'pass']
    if args.command == 'check':
        print(f"\n{len(passing)} of {len(results)} pass")
        return 0 if len(passing) == len(results) else 1
    impls = {name: check.learner_impl(args.folder, name)[0] for name in passing if name != 'attention'}
    left_out = {name: r.status for name, r in results.items() if r.status != 'pass'}
    gpt.run(args.folder, impls, left_out, steps=args.steps, seed=args.seed)
    return 0


if __name__ == '__main__':
    sys.exit(main())
