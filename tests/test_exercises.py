"""The workbook (python -m demos.exercises): the files it writes, the checker on the reference
answers and on planted mistakes, and the tiny GPT trained with the learner's ops."""
import contextlib
import os
import re
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

import microtensor as mt
from demos.exercises import __main__ as cli, check, gpt, order, scenarios, workbook
from demos.exercises.catalogue import EXERCISES
from demos.exercises.substitute import REPLACES, substituted

FAST = settings(max_examples=12, deadline=None, database=None, derandomize=True, report_multiple_bugs=False,
                suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
TINY = dict(d_model=8, n_layers=1, n_heads=2, context=8, batch_size=2)


@pytest.fixture(scope='module')
def answers(tmp_path_factory):
    """A workbook folder holding the reference answers, as a learner who solved everything."""
    folder = tmp_path_factory.mktemp('answers')
    for name in workbook.EXERCISES:
        shutil.copy(os.path.join(workbook.ANSWERS, f"{name}.py"), folder)
    return str(folder)


def answer_of(name):
    attr = 'topological_order' if name == 'backward_loop' else EXERCISES[name].attr
    return getattr(workbook.load_answer(name), attr)


def test_start_writes_one_file_per_exercise_whose_backward_raises_its_hint(tmp_path, capsys):
    assert cli.main(['start', str(tmp_path)]) == 0
    assert sorted(os.listdir(tmp_path)) == sorted([f"{n}.py" for n in workbook.EXERCISES] + ['README.txt'])
    source = (tmp_path / 'softmax.py').read_text()
    assert 'def forward(self, x, axis=-1):' in source and 'return e / e.sum(axis=axis, keepdims=True)' in source
    assert "raise NotImplementedError(\n            \"p(1 - p) is only the Jacobian's diagonal" in source
    assert 'return (p * (g -' not in source  # the answer is not in the exercise
    assert 'demos/exercises/answers/' in (tmp_path / 'README.txt').read_text()
    results = check.check(str(tmp_path), ['mul', 'backward_loop'], engine_tests=False)
    assert [r.status for r in results.values()] == ['todo', 'todo']
    assert 'dy/da = b' in results['mul'].message


def test_start_never_overwrites_a_learners_file(tmp_path, capsys):
    (tmp_path / 'mul.py').write_text('# my work\n')
    written, kept = workbook.start(str(tmp_path))
    assert kept == ['mul.py'] and 'tanh.py' in written
    assert (tmp_path / 'mul.py').read_text() == '# my work\n'
    assert workbook.start(str(tmp_path))[0] == []


@pytest.mark.slow
def test_the_reference_answers_pass_check(answers, capsys):
    results = check.check(answers, max_examples=12)
    assert {name: r.status for name, r in results.items()} == {name: 'pass' for name in workbook.EXERCISES}
    assert "the engine's tests/test_autograd.py" in results['backward_loop'].message  # run with the answer's order
    out = capsys.readouterr().out
    assert all(f"{name:14} pass" in out for name in workbook.EXERCISES)


MISTAKES = [(name, i) for name, exercise in EXERCISES.items() for i in range(len(exercise.mistakes))]


@pytest.mark.parametrize('name, i', MISTAKES, ids=[f"{n}-{i}" for n, i in MISTAKES])
def test_each_planted_mistake_fails_with_its_hint(name, i):
    exercise, answer = EXERCISES[name], answer_of(name)
    mistake = exercise.mistakes[i]
    planted = mistake.wrong if exercise.call else type(answer.__name__, (answer,), {'backward': mistake.wrong})
    ops = {n: answer_of(n) for n in REPLACES}
    using = (lambda: substituted(ops)) if name == 'attention' else contextlib.nullcontext
    result = check.check_op(scenarios.Case(exercise, planted, answer, using), FAST)
    assert result.status == 'fail'
    assert result.formula == mistake.hint, result.message
    assert result.hint == mistake.hint.partition(': ')[0]  # the nudge: the formula only with --show-formula


@pytest.mark.slow
@pytest.mark.parametrize('i', range(len(order.ORDER_MISTAKES)))
def test_each_planted_backward_order_fails_with_its_hint(i):
    mistake = order.ORDER_MISTAKES[i]
    result = order.check_order('backward_loop', mistake.wrong, None)
    assert result.status == 'fail' and result.formula == mistake.hint, result.message


def test_every_exercise_has_two_planted_mistakes_at_least():
    assert all(len(e.mistakes) >= 2 for e in EXERCISES.values()) and len(order.ORDER_MISTAKES) >= 2
    assert set(EXERCISES) | {'backward_loop'} == set(workbook.EXERCISES)


def test_a_failure_shows_the_first_wrong_element_and_the_matching_hint(tmp_path, capsys):
    workbook.start(str(tmp_path))
    source = (tmp_path / 'tanh.py').read_text()
    (tmp_path / 'tanh.py').write_text(re.sub(r"raise NotImplementedError\(.*?\n        \)",
                                             "x = self.inputs[0]\n        return (g * (1 - x * x),)", source, flags=re.S))
    result = check.check(str(tmp_path), ['tanh'], max_examples=12)['tanh']
    assert result.status == 'fail'
    assert result.message.startswith('wrong value: dL/dx (shape') and 'expected' in result.message
    assert result.formula == EXERCISES['tanh'].mistakes[0].hint
    assert 'tanh           FAIL' in capsys.readouterr().out


def test_substitution_puts_the_engines_ops_back():
    before = [getattr(owner, attr) for owner, attr, _ in REPLACES.values()]
    fused = mt.set_fused(True)
    try:
        with pytest.raises(ZeroDivisionError):
            with substituted({name: answer_of(name) for name in REPLACES}):
                assert not mt.is_fused()
                assert type((mt.ones(2, requires_grad=True) * 2).creator).__module__ == 'workbook_mul'
                x = mt.ones(2, 3, requires_grad=True)
                assert type(mt.layer_norm(x, 3, mt.ones(3), mt.zeros(3)).creator).__name__ == 'LayerNorm'
                1 / 0
        assert mt.is_fused()
    finally:
        mt.set_fused(fused)
    assert [getattr(owner, attr) for owner, attr, _ in REPLACES.values()] == before


def test_gpt_with_the_reference_answers_reproduces_the_engines_losses(answers, tmp_path):
    ops = {name: answer_of(name) for name in REPLACES}
    engine, _ = gpt.train(None, steps=3, size=TINY)
    yours, used = gpt.train(ops, steps=3, size=TINY)
    assert len(engine) == 3 and engine[0] > engine[-1] - 1  # a real run: finite losses near ln(vocab)
    np.testing.assert_allclose(yours, engine, rtol=0, atol=1e-6)
    for op in ('MatMul', 'BroadcastAdd', 'LayerNorm', 'GELU', 'Softmax', 'CrossEntropy', 'ResidualAdd', 'Mul'):
        assert used.get(op, 0) > 0, op  # the learner's classes are in the graph, not the engine's


@pytest.mark.slow
def test_gpt_leaves_out_failing_exercises_and_plots_both_losses(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    ops = {'softmax': answer_of('softmax'), 'gelu': answer_of('gelu')}
    engine, yours = gpt.run(str(tmp_path), ops, {'tanh': 'fail'}, steps=2, size=TINY)
    out = capsys.readouterr().out
    assert 'left out (not passing check): tanh (fail)' in out and 'Softmax x' in out
    assert (tmp_path / 'gpt_loss.png').stat().st_size > 0
    assert max(abs(a - b) for a, b in zip(engine, yours)) <= gpt.ROUNDING
    trained = next(line for line in out.splitlines() if 'trained the Transformer' in line)
    assert 'your softmax, gelu trained' in trained and 'tanh' not in trained  # a failing op never counts


def test_the_workbook_commands_that_readme_and_the_guide_show_run(in_tmp_path, capsys):
    """Each `python -m demos.exercises ...` line of their ```bash blocks, as printed (on the fresh exercises
    start writes: every check says todo, and gpt has nothing of the learner's to train with)."""
    import shlex

    commands = []
    for document in ('README.md', os.path.join('docs', 'writing-an-op.md')):
        with open(os.path.join(check.ROOT, document), encoding='utf-8') as f:
            for block in re.findall(r"```bash\n(.*?)```", f.read(), re.S):
                commands += [line.split('#')[0] for line in block.splitlines() if 'python -m demos.exercises' in line]
    assert len(commands) >= 6 and any(' gpt ' in c for c in commands)
    for command in commands:
        args = shlex.split(command)[3:]
        assert cli.main(args) == (0 if args[0] != 'check' else 1), command
    out = capsys.readouterr().out
    assert 'softmax        todo' in out and 'no exercise passes check yet' in out


@pytest.mark.parametrize('argv, says', [
    (['start', ''], 'DIR is empty'),
    (['start', '{file}'], 'is a file, not a folder'),
    (['check', '{folder}', '--examples', '0'], 'must be above 0'),
    (['check', '{folder}', '--examples', 'many'], 'is not an integer'),
    (['check', '{folder}', '--timeout', '-1'], 'must be above 0'),
    (['gpt', '{folder}', '--steps', '0'], 'must be above 0'),
    (['gpt', '{folder}', '--seed', '-1'], 'must be at least 0'),
    (['start', '{file}/inside'], 'cannot write the exercises into'),
    (['check', '{folder}', 'softmaxx'], 'no exercise called softmaxx'),
    (['check', '{folder}/nowhere'], 'no folder'),
])
def test_the_cli_gives_usage_errors_not_tracebacks(tmp_path, capsys, argv, says):
    (tmp_path / 'notes.txt').write_text('mine\n')
    argv = [a.format(file=tmp_path / 'notes.txt', folder=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as exit:
        cli.main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert says in err and 'Traceback' not in err
    assert (tmp_path / 'notes.txt').read_text() == 'mine\n'


def test_a_hint_is_a_nudge_and_the_formula_comes_with_show_formula(tmp_path, capsys):
    workbook.start(str(tmp_path))
    source = (tmp_path / 'softmax.py').read_text()
    (tmp_path / 'softmax.py').write_text(re.sub(r"raise NotImplementedError\(.*?\n        \)",
                                                "return (g * self.output * (1 - self.output),)", source, flags=re.S))
    mistake = EXERCISES['softmax'].mistakes[0].hint
    nudge, formula = mistake.split(': ', 1)
    assert cli.main(['check', str(tmp_path), 'softmax', '--examples', '3']) == 1
    out = capsys.readouterr().out
    assert f"hint: {nudge}\n" in out and formula not in out and '--show-formula' in out
    assert cli.main(['check', str(tmp_path), 'softmax', '--examples', '3', '--show-formula']) == 1
    assert f"hint: {mistake}" in capsys.readouterr().out


def test_a_backward_writing_into_g_is_told_so_not_shown_a_bogus_expected_value():
    answer = answer_of('exp')

    def backward(self, g):
        g.data *= self.output.data
        return (g,)
    planted = type('Exp', (answer,), {'backward': backward})
    result = check.check_op(scenarios.Case(EXERCISES['exp'], planted, answer, contextlib.nullcontext), FAST)
    assert result.message.startswith('mutated: your backward changed the incoming gradient g in place')
    assert 'expected' not in result.message


def test_a_gradient_scaled_by_1_0001_fails():
    answer = answer_of('softmax')
    planted = type('Softmax', (answer,), {'backward': lambda self, g: (answer.backward(self, g)[0] * 1.0001,)})
    result = check.check_op(scenarios.Case(EXERCISES['softmax'], planted, answer, contextlib.nullcontext), FAST)
    assert result.status == 'fail' and 'differs from the reference answer' in result.message


def test_attention_names_the_ops_it_used_and_blames_the_wrong_one(answers, capsys):
    from demos.exercises import blame
    ops = {n: answer_of(n) for n in REPLACES if n != 'backward_loop'}
    result = check.check_one(answers, 'attention', ops, max_examples=5)[0]
    assert result.status == 'pass' and result.message.endswith('built from your mul, matmul, softmax')
    softmax = answer_of('softmax')
    wrong = type('Softmax', (softmax,), {'backward': EXERCISES['softmax'].mistakes[0].wrong})
    result = check.check_one(answers, 'attention', dict(ops, softmax=wrong), max_examples=5)[0]
    assert result.status == 'fail'
    assert "with the engine's ops it passes; it fails with your softmax alone" in result.message
    assert result.used == ('mul', 'matmul', 'softmax') and 'softmax' in result.hint
    answer = answer_of('attention')
    case = scenarios.Case(EXERCISES['attention'], answer, answer, contextlib.nullcontext)
    assert blame.fails_with(case, {'matmul': ops['matmul']}) is None


def test_gpt_says_which_op_is_wrong_when_the_curves_differ(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    softmax = answer_of('softmax')
    scaled = type('Softmax', (softmax,), {'backward': lambda self, g: (softmax.backward(self, g)[0] * 1.0001,)})
    ops = {'softmax': scaled, 'gelu': answer_of('gelu')}
    assert gpt.wrong_gradients(ops, size=TINY).keys() == {'softmax'}
    gpt.run(str(tmp_path), ops, {}, steps=3, size=TINY)
    out = capsys.readouterr().out
    assert 'trained the Transformer' not in out and 'rounding' in out  # "... not rounding"
    assert 'with your softmax alone' in out and 'gelu alone' not in out


def test_every_exercise_says_whether_it_asks_for_second_order():
    for name in workbook.EXERCISES:
        with open(os.path.join(workbook.ANSWERS, f"{name}.py"), encoding='utf-8') as f:
            docstring = f.read().split('"""')[1]
        asked = EXERCISES[name].second_order if name in EXERCISES else False
        assert ('Second order: asked.' if asked else 'Second order: not asked') in docstring, name


def test_slow_checks_show_progress_on_stderr_and_the_verdict_stays_on_stdout(answers, capsys, monkeypatch):
    from demos.exercises import sandbox
    monkeypatch.setattr(sandbox, 'PROGRESS', 0.0)  # every step counts as slow
    results = check.check(answers, ['exp'], max_examples=3)
    captured = capsys.readouterr()
    assert results['exp'].status == 'pass' and 'exp            pass' in captured.out
    assert '... exp: ' in captured.err and '... exp' not in captured.out
