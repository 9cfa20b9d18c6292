"""Texts for train_gpt: a short poem, the docstrings of Python's standard library, or your own file.

    text, name = load('poem')                 # 24 lines: the tour's quick run (memorised in seconds)
    text, name = load('stdlib')               # ~2 MB: every docstring of this Python's standard library
    text, name = load(path='notes.txt')       # any UTF-8 text file
    train, val = split(text, 0.1)             # the last 10% held out for validation
    unigram_loss(train, val)                  # the baseline a model must beat: "just counting characters"

The stdlib corpus needs no download: it is read at run time from the source files of the
running interpreter (sorted, so the same Python version always gives the same text).  Its
name carries the Python version, because numbers measured on it depend on it.
"""
import ast
import collections
import math
import os
import platform
import sysconfig

from microtensor import i18n
from microtensor.i18n import N_, _

CORPORA = ('poem', 'stdlib')

# "The Star" by Jane Taylor (1806), public domain.
POEM = """Twinkle, twinkle, little star,
How I wonder what you are!
Up above the world so high,
Like a diamond in the sky.

When the blazing sun is gone,
When he nothing shines upon,
Then you show your little light,
Twinkle, twinkle, all the night.

Then the traveller in the dark
Thanks you for your tiny spark;
He could not see which way to go,
If you did not twinkle so.

In the dark blue sky you keep,
And often through my curtains peep,
For you never shut your eye
Till the sun is in the sky.

As your bright and tiny spark
Lights the traveller in the dark,
Though I know not what you are,
Twinkle, twinkle, little star.
"""
SKIPPED_FOLDERS = {'site-packages', 'dist-packages', '__pycache__', 'test', 'tests', 'idle_test'}


class CorpusError(ValueError):
    """A text that cannot be trained on: missing, empty, binary, not UTF-8, or too short."""


def load(corpus='poem', path=None):
    """(text, name): the file at `path` when given, else the built-in corpus 'poem' or 'stdlib'.  A built-in
    corpus's name is words kept translatable (i18n.words): it prints in English, i18n.in_language(name) in
    the learner's language."""
    if path is not None:
        return read_text(path), os.path.basename(path)
    if corpus == 'poem':
        return POEM, i18n.words(N_('the poem'))
    if corpus == 'stdlib':
        return stdlib_docstrings(), i18n.words(N_("stdlib docstrings, {python}"), python=python_version())
    raise CorpusError(f"unknown corpus {corpus!r}: choose from {CORPORA}, or give a file")


def read_text(path):
    """The UTF-8 text of the file at `path` (a BOM dropped, line ends made '\\n'); CorpusError if
    it is missing, a folder, empty, binary (it holds NUL bytes) or not UTF-8."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CorpusError(_("{path}: no such file").format(path=path))
    if os.path.isdir(path):
        raise CorpusError(_("{path} is a folder; give a text file").format(path=path))
    try:
        with open(path, 'rb') as f:
            raw = f.read()
    except OSError as error:
        raise CorpusError(_("{path}: cannot be read ({reason})").format(path=path, reason=error.strerror or error)) from None
    nul = raw.find(b'\0')
    if nul >= 0:
        raise CorpusError(_("{path} looks like a binary file (a NUL byte at offset {nul}), not text; give a UTF-8 "
                            "text file").format(path=path, nul=nul))
    try:
        text = raw.decode('utf-8-sig')
    except UnicodeDecodeError as error:
        raise CorpusError(_("{path} is not UTF-8 text (byte 0x{byte:02x} at offset {offset}); convert it first, "
                            "e.g. iconv -f latin1 -t utf-8 {path} > {path}.utf8").format(
                                path=path, byte=raw[error.start], offset=error.start)) from None
    text = text.replace('\r\n', '\n')
    if not text.strip():
        raise CorpusError((_("{path} is empty (only whitespace)") if text else _("{path} is empty")).format(path=path))
    return text


def python_version():
    """'CPython 3.11.7': the interpreter whose standard library the stdlib corpus reads."""
    return f"{platform.python_implementation()} {platform.python_version()}"


def stdlib_docstrings(root=None, packages=None):
    """Every module, class and function docstring of the standard library, separated by blank lines.

    Read with `ast` from the .py files under `root` (default: this interpreter's stdlib folder),
    folders and files in sorted order, test suites and site-packages left out.  `packages` (names
    like 'json') limits it to those packages or modules.
    """
    root = root or sysconfig.get_paths()['stdlib']
    docs = []
    for path in _python_files(root, packages):
        with open(path, 'rb') as f:
            try:
                tree = ast.parse(f.read(), filename=path)
            except (SyntaxError, ValueError):  # a few stdlib files are deliberately broken (lib2to3 data)
                continue
        docs += [doc for node in ast.walk(tree)
                 if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                 and (doc := ast.get_docstring(node))]
    if not docs:
        raise CorpusError(f"no docstrings found under {root}" + (f" for {list(packages)}" if packages else ""))
    return '\n\n'.join(docs) + '\n'


def _python_files(root, packages):
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS)
        for name in sorted(files):
            path = os.path.join(folder, name)
            top = os.path.relpath(path, root).split(os.sep)[0].removesuffix('.py')
            if name.endswith('.py') and (packages is None or top in packages):
                yield path


def split(text, val_fraction):
    """(train, val): the last val_fraction of the text held out (val is '' for 0)."""
    if not 0 <= val_fraction < 1:
        raise ValueError(f"split: val_fraction must be in [0, 1), got {val_fraction}")
    n_val = round(len(text) * val_fraction)
    return (text[:len(text) - n_val], text[len(text) - n_val:]) if n_val else (text, '')


def unigram_loss(train, val=''):
    """Cross-entropy (nats per character) of `val` (or of `train` when val is '') under the
    character frequencies of `train`, add-one smoothed: what a model scores that ignores context.

        p(c) = (count_train(c) + 1) / (len(train) + V),   loss = -mean over val of ln p(c)
    """
    counts = collections.Counter(train)
    scored = val or train
    vocab = set(counts) | set(scored)
    total = len(train) + len(vocab)
    return -sum(n * math.log((counts[c] + 1) / total) for c, n in collections.Counter(scored).items()) / len(scored)
