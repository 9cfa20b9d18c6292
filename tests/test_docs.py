"""docs/stepping-through-backprop.md quotes real debugger sessions: every `file.py(N)function()`
location it shows, followed by `-> code`, must still be that line of the source (so the
walk-through cannot silently drift when the code moves), its scripts are the files in
docs/examples/, the VS Code configurations point at them, and the Jupyter example stops
where it says.  (tests/test_debugger_pdb.py replays the pdb sessions themselves.)"""
import ast
import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = r"((?:microtensor|transformer)/[\w/]+\.py)"


def read(*path):
    with open(os.path.join(ROOT, *path), encoding='utf-8') as f:
        return f.read()


DOC = read('docs', 'stepping-through-backprop.md')
PYTORCH_DOC = read('docs', 'your-pytorch-model.md')  # its scripts are in docs/examples/ too


def function_lines(path, name):
    """{line number: stripped source} of every function called `name` in the file."""
    source = read(path)
    lines = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            for n in range(node.lineno, node.end_lineno + 1):
                found[n] = lines[n - 1].strip()
    return found


def test_pdb_locations_in_the_stepping_doc_match_the_source():
    quoted = re.findall(SOURCE + r"\((\d+)\)(\w+)\(\)(?:->.*)?\n-> (.+)", DOC)
    assert len(quoted) >= 20  # the doc walks through many stops
    for path, line, function, code in quoted:
        lines = function_lines(path, function)
        assert lines, f"the doc stops in {function}() of {path}, which no longer has that function"
        if lines.get(int(line)) != code.strip():
            now = [n for n, text in lines.items() if text == code.strip()]
            raise AssertionError(
                f"the doc shows {path}({line}){function}() at `{code}`, but line {line} is now "
                f"{read(path).splitlines()[int(line) - 1].strip()!r}; "
                + (f"that code is at line {now[0]}: update the doc's numbers" if now
                   else f"{function}() no longer has that line: update the session"))


def test_breakpoints_in_the_stepping_doc_are_on_the_lines_it_stops_at():
    """`Breakpoint 1 at file.py:N` must be a line the doc then stops at (or the def line of
    the function it stops in)."""
    breakpoints = re.findall(r"Breakpoint \d+ at " + SOURCE + r":(\d+)", DOC)
    assert len(breakpoints) >= 5
    for path, line in breakpoints:
        source_line = read(path).splitlines()[int(line) - 1].strip()
        stops = re.findall(rf"{re.escape(path)}\((\d+)\)\w+\(\)\n-> (.+)", DOC)
        assert line in [n for n, _ in stops] or source_line.startswith('def '), (path, line, source_line)


def test_the_doc_shows_the_example_scripts_as_they_are():
    shown = dict(re.findall(r"\[`docs/examples/(\w+\.py)`\]\(examples/\1\)(?:(?!```)[\s\S])*```python\n(.*?)```",
                            DOC + PYTORCH_DOC, re.S))
    assert sorted(shown) == sorted(os.listdir(os.path.join(ROOT, 'docs', 'examples')))
    for name, code in shown.items():
        assert code == read('docs', 'examples', name), f"docs/examples/{name} differs from the doc"


def test_vscode_launch_configurations_run_the_guides_scripts():
    launch = json.loads(read('.vscode', 'launch.json'))
    configurations = launch['configurations']
    programs = []
    for config in configurations:
        assert config['type'] == 'debugpy' and config['request'] == 'launch'
        assert config['justMyCode'] is False  # or VS Code would not step into microtensor
        program = config['program'].replace('${workspaceFolder}', ROOT)
        assert os.path.isfile(program), f"{config['name']}: {config['program']} does not exist"
        programs.append(os.path.basename(program))
    assert sorted(programs) == sorted(os.listdir(os.path.join(ROOT, 'docs', 'examples')))
    clicked = re.search(r"choose\s+\*(Backprop: [^*]+)\*", DOC)[1]  # the configuration the clicks pick
    assert clicked in [config['name'] for config in configurations]


def test_the_jupyter_example_stops_in_backward_with_the_gradient_it_shows(monkeypatch):
    section = DOC[DOC.index('## In Jupyter'):DOC.index('## Without a debugger')]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    shape, g_norm = re.search(r"ipdb> p g.shape, round\(float\(g.norm\(\)\), 3\)\n\((\(.*?\)), (\S+)\)", section).groups()
    creator = re.search(r"ipdb> p t.creator, t.shape\n\((<.*?>),", section)[1]
    seen = []

    def breakpointhook(*args, **kwargs):  # what the debugger would see: the hook's g, the loop's t
        hook, loop = sys._getframe(1), sys._getframe(2)
        seen.append((hook.f_locals['g'], loop.f_locals['t'].shape, repr(loop.f_locals['t'].creator)))

    monkeypatch.setattr(sys, 'breakpointhook', breakpointhook)
    exec(compile(code, 'jupyter_example', 'exec'), {})
    assert len(seen) == 1
    g, t_shape, t_creator = seen[0]
    assert str(tuple(g.shape)) == shape == str(tuple(t_shape))
    assert abs(float(g.norm()) - float(g_norm)) <= 1e-3   # within 1 in the last printed digit, on any machine
    assert t_creator == creator


def test_the_backward_steps_example_prints_what_the_doc_shows(capsys):
    section = DOC[DOC.index('## Without a debugger'):]
    code, shown = re.search(r"```python\n(.*?)```\n\n```\n(.*?)```", section, re.S).groups()
    exec(compile(code, 'backward_steps_example', 'exec'), {})
    assert capsys.readouterr().out == shown
