"""The pdb sessions of docs/stepping-through-backprop.md and docs/your-pytorch-model.md, replayed from a
folder outside the
repository, with microtensor importable the way `pip install -e .` makes it (an import hook;
the repository is not on sys.path).  Each session's commands are fed to `python -m pdb` on
stdin, and pdb must stop where the guide says, in the same order."""
import itertools
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'stepping-through-backprop.md')
DOC_ZH = os.path.join(ROOT, 'docs', 'stepping-through-backprop.zh.md')  # the Chinese edition: the same sessions
PYTORCH_DOC = os.path.join(ROOT, 'docs', 'your-pytorch-model.md')  # a model file written for PyTorch
STOP = re.compile(r"^> (\S+?)\((\d+)\)(\S+?)\(\)(?:->.*)?\n-> (.*)$", re.M)

# What setuptools' editable install puts in site-packages: a finder that imports the two
# packages from the repository by name, without adding the repository to sys.path.
EDITABLE_FINDER = '''
import importlib.util, os, sys

class EditableFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in ('microtensor', 'transformer'):
            package = os.path.join({root!r}, name)
            return importlib.util.spec_from_file_location(
                name, os.path.join(package, '__init__.py'), submodule_search_locations=[package])
        return None

sys.meta_path.insert(0, EditableFinder)  # first: this checkout, even where another one is installed
'''


def doc_sessions(doc=DOC):
    """[(script, transcript)]: a session starts at `$ python -m pdb script.py`; later blocks
    with `(Pdb)` prompts continue it."""
    with open(doc, encoding='utf-8') as f:
        blocks = [body for lang, body in re.findall(r"^```(\w*)\n(.*?)^```$", f.read(), re.S | re.M) if not lang]
    sessions = []
    for block in blocks:
        start = re.match(r"\$ python -m pdb (\S+)\n", block)
        if start:
            sessions.append([start[1], ''])
        if '(Pdb) ' in block and sessions:
            sessions[-1][1] += block
    return sessions


SESSIONS = doc_sessions()
PYTORCH_SESSIONS = doc_sessions(PYTORCH_DOC)
REPLAYED = SESSIONS + PYTORCH_SESSIONS


def stops(transcript):
    """(file, function, code) of each place pdb stopped, in order."""
    return [(path, function, code.strip()) for path, _, function, code in STOP.findall(transcript)]


def same_file(doc_path, real_path):
    return real_path == doc_path or real_path.endswith('/' + doc_path)


@pytest.fixture(scope='module')
def away(tmp_path_factory):
    """A folder outside the repository holding the guide's scripts, and the environment of an editable install."""
    folder = tmp_path_factory.mktemp('elsewhere')
    site = tmp_path_factory.mktemp('site')
    (site / 'sitecustomize.py').write_text(EDITABLE_FINDER.format(root=ROOT))
    for name in os.listdir(os.path.join(ROOT, 'docs', 'examples')):
        with open(os.path.join(ROOT, 'docs', 'examples', name), encoding='utf-8') as f:
            (folder / name).write_text(f.read())
    env = dict(os.environ, PYTHONPATH=str(site), OPENBLAS_NUM_THREADS='1')
    return folder, env


def run_pdb(away, script, commands):
    folder, env = away
    done = subprocess.run([sys.executable, '-m', 'pdb', script], input='\n'.join(commands) + '\n',
                          capture_output=True, text=True, cwd=folder, env=env, timeout=120)
    return done.stdout.replace('(Pdb) ', '(Pdb) \n') + done.stderr  # each stop on a line of its own


def test_the_guide_has_the_sessions_this_file_replays():
    assert [script for script, _ in SESSIONS] == ['tanh_matmul.py', 'tanh_matmul.py', 'one_head.py',
                                                   'residual_gpt.py', 'residual_gpt.py']


def test_the_pytorch_model_guide_steps_into_its_own_files_backward():
    """Its session stops in Softmax's backward, called from the file's own loss.backward()."""
    assert [script for script, _ in PYTORCH_SESSIONS] == ['my_gpt.py']
    transcript = PYTORCH_SESSIONS[0][1]
    assert stops(transcript)[-1] == ('microtensor/ops/nn.py', 'backward',
                                     'return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)')
    assert 'my_gpt.py(' in transcript and '-> loss.backward()' in transcript


def test_the_chinese_guide_quotes_the_same_sessions():
    """The replays below check both editions: the Chinese guide's sessions are the English ones."""
    assert doc_sessions(DOC_ZH) == SESSIONS


@pytest.mark.slow
@pytest.mark.parametrize('index', range(len(REPLAYED)),
                         ids=[f"{i}-{script}" for i, (script, _) in enumerate(REPLAYED)])
def test_a_guide_session_stops_where_the_guide_says(away, index):
    script, transcript = REPLAYED[index]
    out = run_pdb(away, script, re.findall(r"^\(Pdb\) (.*)$", transcript, re.M))
    expected, real = stops(transcript), stops(out)
    found = iter(real)  # each expected stop, in order (pdb may show more than the guide quotes)
    for doc_path, function, code in expected:
        assert any(same_file(doc_path, path) and function == f and code == c for path, f, c in found), (
            f"the guide's stop {doc_path} {function}() at `{code}` did not happen in this order; pdb said:\n{out}")
    for error in re.findall(r"^\*\*\* .*$", transcript, re.M):
        if error.endswith('not found from sys.path') and repository_on_sys_path():
            continue  # an install that puts the repository on sys.path makes file:line work
        assert error in out, f"pdb did not answer {error!r}:\n{out}"


@pytest.mark.slow
@pytest.mark.parametrize('index', range(len(REPLAYED)),
                         ids=[f"{i}-{script}" for i, (script, _) in enumerate(REPLAYED)])
def test_a_guide_session_prints_what_the_guide_shows(away, index):
    """Every answer the guide quotes (values, shapes, breakpoint lines, `where`) is what pdb prints
    now, paths shortened as in the guide; a line `...` stands for lines the guide leaves out."""
    script, transcript = REPLAYED[index]
    quoted = doc_answers(transcript)
    real = pdb_answers(run_pdb(away, script, [command for command, _ in quoted]), away[0])
    for (command, answer), printed in zip(quoted, real):
        if answer[:1] and answer[0].endswith('not found from sys.path') and repository_on_sys_path():
            continue  # (as above)
        assert shown_in(answer, printed), (f"the guide shows, after `(Pdb) {command}`:\n" + '\n'.join(answer)
                                           + "\npdb printed:\n" + '\n'.join(printed))


def doc_answers(transcript):
    """[(command, lines pdb printed after it)] of a transcript as the guide quotes it."""
    answers = []
    for line in transcript.splitlines():
        if line.startswith('(Pdb) '):
            answers.append((line[len('(Pdb) '):], []))
        elif answers:
            answers[-1][1].append(line.rstrip())
    return answers


def pdb_answers(out, folder):
    """What pdb printed after each command (run_pdb puts each prompt on a line of its own), with the
    repository's and the script folder's paths shortened as in the guide."""
    for prefix in (f"{folder}/", f"{ROOT}/"):
        out = out.replace(prefix, '')
    return [[line.rstrip() for line in answer.splitlines()] for answer in out.split('(Pdb) \n')[1:]]


def shown_in(answer, printed):
    """Does `printed` start with the lines of `answer`, where a line `...` skips any number of lines?"""
    at = 0
    chunks = [list(group) for gap, group in itertools.groupby(answer, lambda line: line.strip() == '...') if not gap]
    for k, chunk in enumerate(chunks):
        starts = [i for i in range(at, len(printed) - len(chunk) + 1) if printed[i:i + len(chunk)] == chunk]
        if not starts or (k == 0 and answer[0].strip() != '...' and starts[0] != 0):
            return False
        at = starts[0] + len(chunk)
    return True


def repository_on_sys_path():
    """True when this interpreter finds microtensor/autograd.py along sys.path outside the
    test's own PYTHONPATH (e.g. an install with editable_mode=compat)."""
    own = set(os.environ.get('PYTHONPATH', '').split(os.pathsep))
    return any(os.path.exists(os.path.join(p, 'microtensor', 'autograd.py'))
               for p in sys.path if p and p not in own and os.path.abspath(p) != ROOT)


def test_pdb_stops_in_residual_add_backward_and_prints_both_roads(away):
    """The guide's recipe: `b transformer.residual.ResidualAdd.backward` from any folder."""
    out = run_pdb(away, 'residual_gpt.py', [
        'import transformer',
        'b transformer.residual.ResidualAdd.backward',
        'c',
        'p self',
        'r',
        'retval',
        'p "roads", float(__return__[0].norm()), float(__return__[1].norm()), float(g.norm())',
        'q'])
    assert any(same_file('transformer/residual.py', path) and function == 'backward'
               and code.startswith('return g, ') for path, function, code in stops(out)), out
    assert '<ResidualAdd decoder.layers.1.ffn residual, alpha=0.5>' in out
    returned = out[out.index('--Return--'):]
    assert returned.count('tensor([[[') >= 2  # retval: the gradient of each road, in full
    highway, branch, g = map(float, re.search(r"\('roads', (\S+), (\S+), (\S+)\)", out).groups())
    assert highway == pytest.approx(g) and g > 0  # the "+1" road: g itself
    assert branch == pytest.approx(0.5 * g)      # the F road: alpha * g


def test_pdb_stops_in_softmax_backward_while_a_gpt_backpropagates(away):
    """The textbook is what a debugger meets in a model: `b microtensor.ops.nn.Softmax.backward`,
    from a folder outside the repository, stops in attention's softmax during loss.backward(),
    on the line of the formula p * (g - sum(g * p))."""
    out = run_pdb(away, 'residual_gpt.py', [
        'import microtensor',
        'b microtensor.ops.nn.Softmax.backward',
        'c',
        'n',
        'where',
        'p "weights", tuple(p.shape), tuple(g.shape)',
        'q'])
    assert ('microtensor/ops/nn.py', 'backward', 'return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)') in \
        [(path[-len('microtensor/ops/nn.py'):], function, code) for path, function, code in stops(out)], out
    assert re.search(r"residual_gpt\.py\(\d+\)<module>\(\)\n-> loss\.backward\(\)", out), out  # called from the script
    assert "('weights', (1, 2, 2, 2), (1, 2, 2, 2))" in out  # (B, h, T_q, T_k): the GPT's attention weights


def test_every_op_of_a_recorded_model_names_its_module_in_its_repr():
    """What `p self` prints in any backward: the op and where record_modules says it was made."""
    import microtensor as mt
    from microtensor.inspect.modules import scope_label, scope_of
    from transformer import GPT
    mt.manual_seed(0)
    model = GPT(vocab_size=10, d_model=4, n_layers=2, n_heads=2, max_len=8, alpha=0.5)
    ids = mt.tensor([[1, 2]])
    with mt.record_modules(model):
        loss = mt.cross_entropy(model(ids)[0], mt.tensor([2, 3]))
    ops, stack, seen = [], [loss], set()
    while stack:
        t = stack.pop()
        if t.creator is not None and id(t.creator) not in seen:
            seen.add(id(t.creator))
            ops.append(t.creator)
            stack.extend(t.creator.inputs)
    recorded = [op for op in ops if scope_of(op) is not None]
    assert len(recorded) > 20
    for op in recorded:
        assert repr(op).startswith(f"<{type(op).__name__} {scope_label(scope_of(op))}"), repr(op)
    names = {repr(op) for op in recorded}
    assert {'<Softmax decoder.layers.0.self_attn>', '<Softmax decoder.layers.1.self_attn>',
            '<ResidualAdd decoder.layers.1.ffn residual, alpha=0.5>'} <= names
    outside = [op for op in ops if scope_of(op) is None]  # the loss's ops: made outside the model
    assert outside and all(repr(op) == f"<{type(op).__name__}>" for op in outside)


def script_runs(doc):
    """[(script, printed)]: the blocks of `doc` that start with `$ python script.py` (no pdb)."""
    with open(doc, encoding='utf-8') as f:
        blocks = [body for lang, body in re.findall(r"^```(\w*)\n(.*?)^```$", f.read(), re.S | re.M) if not lang]
    return [(m[1], block[m.end():]) for block in blocks for m in [re.match(r"\$ python (\S+\.py)\n", block)] if m]


@pytest.mark.slow
@pytest.mark.parametrize('script, printed', script_runs(PYTORCH_DOC), ids=[s for s, _ in script_runs(PYTORCH_DOC)])
def test_the_pytorch_model_guides_scripts_print_what_it_shows(away, script, printed):
    folder, env = away
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=folder, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
    assert script != 'probe_my_gpt.py' or (folder / 'runs' / 'my_gpt.html').stat().st_size > 10_000  # the viewer's page


def test_the_pytorch_model_guide_shows_both_scripts():
    assert [s for s, _ in script_runs(PYTORCH_DOC)] == ['my_gpt.py', 'probe_my_gpt.py']
