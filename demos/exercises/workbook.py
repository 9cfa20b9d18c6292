"""The workbook's files: writing the exercises for a learner, and loading what they wrote.

Each exercise is written from its reference answer (answers/<name>.py) with the body of
the function to write (the one that starts with a `# hint:` comment, which may go on over
the comment lines below it) replaced by `raise NotImplementedError(<the hint>)`: the
docstrings, forward and the imports stay.
"""
import ast
import importlib.util
import os
import re
import sys
import textwrap

from microtensor.i18n import N_, _

ANSWERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'answers')
HINT = re.compile(r"^(\s*)# hint: (.*)$")

# in the order a learner meets them (attention composes the ops before it; backward_loop is the engine's walk)
EXERCISES = ('mul', 'matmul', 'sum', 'broadcast_add', 'exp', 'tanh', 'relu', 'softmax', 'log_softmax',
             'cross_entropy', 'layer_norm', 'gelu', 'residual_add', 'attention', 'backward_loop')

README = N_("""\
Write your own backward passes
==============================

Each file here is one op of the engine: forward is written, backward (or the function to
write) raises NotImplementedError with a hint, and the docstring says what to derive.

    python -m demos.exercises check {folder}            # gradient-check every exercise
    python -m demos.exercises check {folder} softmax    # only some, by name
    python -m demos.exercises gpt {folder}              # train the tiny GPT with your passing ops

Suggested order: {order}.
attention has no backward: it composes your ops, and check runs it with them.
backward_loop is the engine's walk over the graph, in the order backward needs.

After trying, the reference answers are in demos/exercises/answers/ (the same file names),
and the engine's own ops in microtensor/ops/: elementwise.py (classes Add, Mul, Exp, Tanh,
Relu), linalg.py (MatMul), reduce.py (Sum), nn.py (the softmax, log-softmax, cross-entropy,
layer-norm and GELU ops), transformer/residual.py (ResidualAdd), and microtensor/autograd.py
(topological_order, backward_loop).  docs/writing-an-op.md is the guide to writing an op.
""")  # written in the learner's language


def _hint(lines):
    """(the line of the `# hint:` comment, its indent, the hint) in an answer's lines."""
    hint_at = next(i for i, line in enumerate(lines) if HINT.match(line))
    indent, hint = HINT.match(lines[hint_at]).groups()
    for line in lines[hint_at + 1:]:  # the hint goes on over the comment lines below it
        if not line.strip().startswith('#'):
            break
        hint += ' ' + line.strip()[1:].strip()
    return hint_at, indent, hint


def _answer_lines(name):
    with open(os.path.join(ANSWERS, f"{name}.py"), encoding='utf-8') as f:
        return f.read().splitlines(keepends=True)


def hint(name):
    """The hint of exercise `name`, in English (the answer's `# hint:` comment): the catalog translates it."""
    return _hint(_answer_lines(name))[2]


def extract_hints(fileobj, keywords, comment_tags, options):
    """pybabel's extractor for answers/*.py (babel.cfg names it): each answer's `# hint:` comment,
    which the exercise file's NotImplementedError says in the learner's language."""
    lines = fileobj.read().decode('utf-8').splitlines(keepends=True)
    if any(HINT.match(line) for line in lines):   # (answers/__init__.py has none)
        hint_at, indent, text = _hint(lines)
        yield hint_at + 1, '_', text, []


def template(name):
    """The exercise file a learner gets: the answer with the function to write emptied; its
    NotImplementedError says the hint in the learner's language."""
    lines = _answer_lines(name)
    hint_at, indent, text = _hint(lines)
    function = max((node for node in ast.walk(ast.parse(''.join(lines))) if isinstance(node, ast.FunctionDef)
                    and node.lineno <= hint_at < node.end_lineno), key=lambda node: node.lineno)
    strings = ''.join(f'{indent}    "{_escaped(piece)}"\n' for piece in _pieces(_(text), 96 - len(indent)))
    body = f"{indent}raise NotImplementedError(\n{strings}{indent})\n"
    return ''.join(lines[:hint_at] + [body] + lines[function.end_lineno:])


def _pieces(text, width):
    """`text` in pieces of at most `width` columns, which join back into `text`: English breaks where
    textwrap does (the space kept at the end of a piece); Chinese, which has few spaces, between
    characters too (each takes two columns)."""
    if text.isascii():
        pieces = textwrap.wrap(text, width)
        return [piece + ' ' * (i < len(pieces) - 1) for i, piece in enumerate(pieces)]
    pieces, columns = [''], 0
    for token in re.findall(r"\s+|[!-~]+|.", text):   # a space, an ASCII word, or one wide character
        size = len(token) if token.isascii() else 2 * len(token)
        if columns + size > width and pieces[-1].strip() and not token.isspace():
            pieces.append('')
            columns = 0
        pieces[-1] += token
        columns += size
    return pieces


def _escaped(text):
    """text inside a "..." literal."""
    return text.replace('\\', '\\\\').replace('"', '\\"')


def start(folder):
    """Write every exercise into `folder` (and a README); files already there are kept.
    Returns (written, kept): the names of the files."""
    os.makedirs(folder, exist_ok=True)
    files = {f"{name}.py": template(name) for name in EXERCISES}
    files['README.txt'] = _(README).format(folder=folder, order=', '.join(EXERCISES))
    written, kept = [], []
    for filename, text in files.items():
        path = os.path.join(folder, filename)
        try:
            with open(path, 'x', encoding='utf-8') as f:  # 'x': never over a learner's file
                f.write(text)
            written.append(filename)
        except FileExistsError:
            kept.append(filename)
    return written, kept


def load(folder, name):
    """The learner's module `name` from `folder` (a fresh import each time: edits are seen)."""
    path = os.path.join(folder, f"{name}.py")
    module_name = f"workbook_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # (dataclasses and pickle-free tracebacks look modules up here)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(module_name, None)
    return module


def load_answer(name):
    """The reference answer's module."""
    return load(ANSWERS, name)
