"""Every shell command of README.md and docs/*.md works as written in a fresh shell, from the
repository's folder, with the venv's interpreter (`.venv/bin/python`, or `python` with the venv
active; here both are this interpreter).  The cheap ones run in a clean environment; the others
(installs, training, a GPU, placeholders such as NAME) are checked to name what exists and to parse:
a module that imports and answers --help, a lesson's options as its parser reads them, a script
that exists, an extra that pyproject.toml defines."""
import glob
import importlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys

import pytest

import microtensor as mt
from demos import __main__ as tour
from readme import ROOT

DOCUMENTS = ['README.md'] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'docs', '*.md')))
PYTHONS = ('python', '.venv/bin/python')       # the venv's interpreter, as the documents write it
PIPS = ('pip', '.venv/bin/pip')
STARTS = PYTHONS + PIPS + ('python3', 'torchrun', 'bash')
PLACEHOLDER = re.compile(r"^(NAME|OLD|\.\.\.)$|<")
RUN = {('microtensor',), ('demos', '--list')}  # cheap: run as written


def commands():
    """{command: the documents that give it}: each line of a ```bash block, and each inline `code` that
    starts with a program (python, pip, ...), comments dropped."""
    found = {}
    for document in DOCUMENTS:
        with open(os.path.join(ROOT, document), encoding='utf-8') as f:
            text = f.read()
        lines = [line for block in re.findall(r"^```bash\n(.*?)^```$", text, re.S | re.M)
                 for line in block.splitlines()]
        prose = re.sub(r"^```.*?^```$", '', text, flags=re.S | re.M)
        lines += [code for code in re.findall(r"`([^`\n]+)`", prose) if code.split(' ', 1)[0] in STARTS
                  and ' ' in code]
        for line in lines:
            command = re.split(r"\s+#", line)[0].strip()
            if command:
                found.setdefault(command, []).append(document)
    return found


COMMANDS = commands()


def test_the_documents_give_the_commands_this_file_checks():
    assert len(COMMANDS) > 30
    for command in ('.venv/bin/python -m microtensor', 'python -m demos --list', 'python examples/ddp_train.py',
                    '.venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu',
                    'python -m demos.train_gpt --sample runs/train_gpt/ckpt.npz --prompt \'Twinkle\''):
        assert command in COMMANDS, command
    bare = [c for c in COMMANDS if c.split()[0] in ('python3',) and ' -m venv ' not in c]
    assert not bare, f"not the venv's interpreter: {bare}"
    for document in DOCUMENTS:  # `python` means the venv's: where a document says plain `python`, it says so
        with open(os.path.join(ROOT, document), encoding='utf-8') as f:
            text = f.read()
        assert not re.search(r"(into|in|with) `python3`", text), f"{document}: python3 is not the venv's interpreter"
        if any(c.split()[0] in ('python', 'pip') and document in where for c, where in COMMANDS.items()):
            assert 'source .venv/bin/activate' in ' '.join(text.split()), f"{document}: say to activate the venv"


def fresh_shell(words, timeout=300):
    """Run words (a python command) as a fresh shell would: the repository's folder, a clean
    environment (the project importable as the venv's install makes it), this interpreter."""
    env = {'PATH': os.pathsep.join([os.path.dirname(sys.executable), '/usr/bin', '/bin']), 'HOME': ROOT,
           'LANG': 'C.UTF-8', 'PYTHONPATH': ROOT}
    return subprocess.run([sys.executable, *words], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def lesson_parses(monkeypatch, tmp_path, module, argv):
    """Parse a lesson's command line as `python -m demos...` would, stopping before the lesson runs."""
    parsed = []
    for name, _ in tour.LESSONS:
        lesson = importlib.import_module(f"demos.{name}")
        monkeypatch.setattr(lesson, 'run_lesson', lambda run, args: parsed.append(vars(args)), raising=False)
    monkeypatch.chdir(tmp_path)
    if '--sample' in argv:  # a checkpoint, as a training run leaves it
        from demos import train_gpt
        train_gpt.train(steps=2, out=os.path.join('runs', 'train_gpt'), d_model=16, n_layers=1, n_heads=2,
                        context=16, batch_size=4)
    (tmp_path / 'book.txt').write_text("Call me Ishmael. " * 2000, encoding='utf-8')  # the README's own text
    entry = tour.main if module == 'demos' else importlib.import_module(module).main
    try:
        entry(argv)
    except SystemExit as exit_:
        pytest.fail(f"python -m {module} {shlex.join(argv)}: {exit_}")
    return parsed


def uses_a_gpu(words):
    return any(a == '--device' and b in ('cuda', 'auto') for a, b in zip(words, words[1:]))


@pytest.mark.slow
@pytest.mark.parametrize('command', sorted(COMMANDS))
def test_a_documented_command_works_as_written(command, monkeypatch, tmp_path):
    with open(os.path.join(ROOT, 'pyproject.toml'), encoding='utf-8') as f:
        extras = set(re.findall(r"^(\w+) = \[", f.read().split('[project.optional-dependencies]')[1].split('\n[')[0],
                                re.M))
    for part in command.split('&&'):
        words = shlex.split(part)
        program, args = words[0], words[1:]
        if program == 'python3':                                  # the set-up's `python3 -m venv .venv`
            assert args[:2] == ['-m', 'venv'], command
        elif program in PIPS:                                     # installs: not run; what they name exists
            assert args[0] == 'install', command
            for spec in args[1:]:
                named = re.fullmatch(r"-e|\.|\.\[(.*)\]|--index-url|https://download\.pytorch\.org/whl/cpu|"
                                     r"torch(==[\d.]+)?|graphviz|numpy|--config-settings|editable_mode=compat", spec)
                assert named, f"{command}: {spec!r}"
                assert set(filter(None, (named[1] or '').split(','))) <= extras, f"{command}: no such extra"
        elif program in ('torchrun', 'bash'):
            scripts = [a for a in args if a.endswith(('.py', '.sh'))]
            assert scripts or any(PLACEHOLDER.search(a) for a in args), command  # (or a fragment: `torchrun ... <N>`)
            assert all(os.path.exists(os.path.join(ROOT, script)) for script in scripts), command
        elif args[0] == '-m':
            check_module(args[1], args[2:], command, monkeypatch, tmp_path)
        else:                                                     # a script: exists, and answers --help
            script = os.path.join(ROOT, args[0])
            assert os.path.exists(script), command
            with open(script, encoding='utf-8') as f:
                source = f.read()
            compile(source, script, 'exec')
            needs_torch = re.search(r"^import torch", source, re.M) and importlib.util.find_spec('torch') is None
            if 'argparse' in source and not needs_torch:  # (without PyTorch, the DDP example is only compiled)
                done = fresh_shell([args[0], '--help'])
                assert done.returncode == 0 and 'usage:' in done.stdout, (command, done.stderr[-2000:])


def check_module(module, args, command, monkeypatch, tmp_path):
    if module == 'venv':
        return
    if module == 'pdb':                                           # the debugger guide's scripts
        assert all(os.path.exists(os.path.join(ROOT, 'docs', 'examples', a)) for a in args), command
        return
    assert importlib.util.find_spec(module) is not None, f"{command}: no module {module}"
    if (module, *args) in RUN:
        done = fresh_shell(['-m', module, *args])
        assert done.returncode == 0 and 'Traceback' not in done.stderr, (command, done.stderr[-3000:])
        return
    lesson = module == 'demos' or (module.startswith('demos.') and module.split('.')[1] in dict(tour.LESSONS))
    placeholder = any(PLACEHOLDER.search(a) for a in args) or '--help' in args
    if lesson and not placeholder and not (uses_a_gpu(args) and not mt.cuda.is_available()):
        assert lesson_parses(monkeypatch, tmp_path, module, args), command  # its options, as its parser reads them
    else:                                                         # a GPU, a placeholder, tests or the workbook
        done = fresh_shell(['-m', module, '--help'])
        assert done.returncode == 0 and 'usage' in done.stdout.lower(), (command, done.stderr[-3000:])
