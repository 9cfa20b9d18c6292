"""A training run stopped by Ctrl-C, a resume with other settings or another file, a stop before
the checkpoint's step, an empty prompt, and a run that did not learn: each ends with one line
that says what happened and what to do, never a traceback."""
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import microtensor as mt
from demos import attention_maps, report, train_gpt, train_xor
from readme import ROOT
from test_train_gpt import TINY, pytestmark  # noqa: F401 (pytestmark: lessons write under tmp_path/runs)


def refused(capsys, main, argv):
    """The one-line error of a run the lesson refused (exit status 1, no traceback)."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    message = str(exit_.value)
    assert exit_.value.code != 0 and message.startswith('error: train_gpt: ') and '\n' not in message, message
    return message


# ---------------------------------------------------------------------------- Ctrl-C
@pytest.mark.slow
def test_ctrl_c_during_train_gpt_says_where_it_stopped_and_how_to_resume(tmp_path):
    argv = ['--steps', '100000', '--ckpt-every', '5', '--log-every', '5', '--out', 'run', *TINY]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    # a process started in the background may inherit SIGINT ignored: give it Python's usual handler
    lesson = subprocess.Popen([sys.executable, '-m', 'demos.train_gpt', *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / 'run' / 'ckpt.npz').exists() and lesson.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # into the steps after the checkpoint
        lesson.send_signal(signal.SIGINT)
        out, err = lesson.communicate(timeout=60)
    finally:
        lesson.kill()
    assert lesson.returncode == 130 and 'Traceback' not in err, err
    line = err.strip()
    assert '\n' not in line, err
    match = re.fullmatch(r"train_gpt: stopped by Ctrl-C after step (\d+) of 100000; the last checkpoint, "
                         r"(\S+) \(step (\d+)\), is intact\. Resume with: (.*)", line)
    assert match, line
    stopped, path, saved, command = int(match[1]), match[2], int(match[3]), match[4]
    assert saved == stopped > 5 and path == os.path.join('run', 'ckpt.npz')  # kept at the step it stopped after
    assert command == shlex.quote(sys.executable) + ' -m demos.train_gpt ' + ' '.join(argv) + ' --resume'
    assert mt.load(path)['step'] == saved   # intact, at the step it names
    words = shlex.split(command)
    assert words[:3] == [sys.executable, '-m', 'demos.train_gpt']  # the interpreter that ran it, not a bare python
    result = train_gpt.main(words[3:] + ['--stop-after', str(saved + 1)])  # the command itself continues the run
    assert result['step'] == saved + 1 and len(result['losses']) == saved + 1


def interrupt_after(monkeypatch, module, name, calls):
    """Replace module.name by a function that works `calls` times, then raises KeyboardInterrupt."""
    real, count = getattr(module, name), [0]

    def fn(*args, **kwargs):
        count[0] += 1
        if count[0] > calls:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, fn)


@pytest.mark.slow
def test_ctrl_c_in_a_lesson_that_trains_the_gpt_without_resume_says_so(monkeypatch, capsys):
    interrupt_after(monkeypatch, train_gpt, 'next_token_loss', 3)
    with pytest.raises(SystemExit) as exit_:
        attention_maps.main(['--steps', '2', '--gpt-steps', '40'])
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    assert err == ("attention_maps: stopped by Ctrl-C after step 3 of 40; the last checkpoint, "
                   f"{os.path.join('runs', 'attention_maps_gpt', 'ckpt.npz')} (step 3), is intact. This lesson "
                   "trains from the start each time: run it again.\n")


def test_ctrl_c_in_any_lesson_is_one_line(monkeypatch, capsys):
    interrupt_after(monkeypatch, mt, 'cross_entropy', 2)
    with pytest.raises(SystemExit) as exit_:
        train_xor.main(['--steps', '10'])
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "train_xor: stopped by Ctrl-C before it finished: run it again to see the rest.\n"


def test_the_interrupted_message_names_a_checkpoint_a_lesson_cannot_resume():
    report.COMMAND.update(lesson='attention_maps', argv=[])
    stop = report.Interrupted(7, 10, ('runs/x/ckpt.npz', 5))
    assert report.interrupted_message(stop, resumable=False) == (
        "attention_maps: stopped by Ctrl-C after step 7 of 10; the last checkpoint, runs/x/ckpt.npz (step 5), is "
        "intact. This lesson trains from the start each time: run it again.")


SMALL = dict(steps=9, ckpt_every=4, log_every=3, eval_every=4, eval_batches=1, d_model=16, n_layers=1, n_heads=2,
             context=16, batch_size=4)


def identical(a, b):
    """Equal to the last bit, through dicts, lists and tensors (dtype, shape and every value)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(identical, a, b))
    if isinstance(a, (mt.Tensor, np.ndarray)):
        a, b = (x.numpy() if isinstance(x, mt.Tensor) else x for x in (a, b))
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def assert_same_run(a, b):
    """Two train() results and their checkpoints are equal to the last bit: weights, optimizer, losses."""
    assert a['losses'] == b['losses'] and a['val'] == b['val']
    assert identical(a['model'].state_dict(), b['model'].state_dict())
    saved = [mt.load(result['checkpoint']) for result in (a, b)]
    for key in ('model', 'optim', 'schedule', 'step', 'losses', 'val'):
        assert identical(saved[0][key], saved[1][key]), key


@pytest.mark.parametrize('how, at', [('signal', 7), ('signal', 8), ('exception', 7)])
def test_ctrl_c_keeps_the_step_it_stopped_after_and_the_resume_is_bit_exact(monkeypatch, how, at):
    """Ctrl-C in step 7 (or 8, a validation step) of 9, checkpoints every 4: the run keeps that step, not
    step 4, and a resume from it ends with the weights and losses of the uninterrupted run, bit for bit.
    'signal': a real SIGINT while the step runs (it finishes the step); 'exception': a KeyboardInterrupt
    as the step begins (before the update: step 6 is whole)."""
    whole = train_gpt.train(out='whole', **SMALL)
    real = train_gpt.batch_at

    def batch_at(data, step, *args):
        if step == at - 1:  # step `at` begins
            if how == 'exception':
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGINT)
        return real(data, step, *args)
    monkeypatch.setattr(train_gpt, 'batch_at', batch_at)
    with pytest.raises(report.Interrupted) as stop:
        train_gpt.train(out='cut', **SMALL)
    kept = at if how == 'signal' else at - 1
    assert stop.value.step == kept and stop.value.checkpoint == (os.path.join('cut', 'ckpt.npz'), kept)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C is Python's again
    saved = mt.load(os.path.join('cut', 'ckpt.npz'))
    assert saved['step'] == kept and len(saved['losses']) == kept  # every loss up to it came along
    monkeypatch.setattr(train_gpt, 'batch_at', real)
    assert_same_run(train_gpt.train(out='cut', resume=True, **SMALL), whole)


def test_ctrl_c_inside_the_update_keeps_the_last_whole_checkpoint(monkeypatch):
    """A KeyboardInterrupt half-way through the optimizer's step (a second Ctrl-C, or one outside the main
    thread): the weights are half updated, so nothing is saved from it; the step-4 checkpoint stays."""
    interrupt_after(monkeypatch, mt.optim.AdamW, 'step', 6)
    with pytest.raises(report.Interrupted) as stop:
        train_gpt.train(out='cut', **SMALL)
    assert stop.value.step == 6 and stop.value.checkpoint == (os.path.join('cut', 'ckpt.npz'), 4)


# ---------------------------------------------------------------------------- resuming
def test_a_resume_with_other_settings_lists_each_saved_against_given(capsys, tmp_path):
    train_gpt.main(['--steps', '4', '--out', 'run', *TINY])
    message = refused(capsys, train_gpt.main, ['--steps', '8', '--resume', '--out', 'run', *TINY, '--d-model', '32',
                                               '--lr', '0.01'])
    assert ("run/ckpt.npz was made with other settings. --d-model: 16 in the checkpoint, 32 now; --lr: 0.003 in "
            "the checkpoint, 0.01 now. To resume it, give the checkpoint's settings (--d-model 16 --lr 0.003)"
            in message.replace(os.sep, '/')), message
    assert 'without --resume' in message and '(saved, now)' not in message
    text = tmp_path / 'notes.txt'
    text.write_text('the quick brown fox jumps over the lazy dog\n' * 20, encoding='utf-8')
    message = refused(capsys, train_gpt.main, ['--steps', '8', '--resume', '--out', 'run', '--text', str(text),
                                               *TINY])
    assert ("the text: 616 characters beginning 'Twinkle, twinkle, li' in the checkpoint, 880 characters beginning "
            "'the quick brown fox ' now" in message), message
    assert 'its text, the same --corpus or --text' in message
    assert mt.load(tmp_path / 'run' / 'ckpt.npz')['step'] == 4   # untouched


@pytest.mark.slow
def test_stop_after_at_or_before_the_checkpoint_is_refused_and_a_finished_run_says_so(capsys):
    train_gpt.main(['--steps', '6', '--out', 'run', *TINY])
    message = refused(capsys, train_gpt.main, ['--steps', '6', '--resume', '--stop-after', '4', '--out', 'run', *TINY])
    assert "--stop-after 4, but " in message and "is already at step 6: nothing would be trained" in message
    assert "above 6" in message
    result = train_gpt.main(['--steps', '3', '--resume', '--out', 'run', *TINY])
    out = capsys.readouterr().out
    assert 'already at step 6, --steps is 3: nothing to train' in out and 'stopped at' not in out
    assert result['step'] == 6


def test_resume_from_a_file_that_is_not_a_train_gpt_checkpoint_says_so(capsys, tmp_path):
    os.makedirs('other')
    mt.save({'weights': mt.ones(2)}, 'other/ckpt.npz')
    message = refused(capsys, train_gpt.main, ['--resume', '--out', 'other', *TINY])
    assert 'is not a train_gpt checkpoint' in message and "its keys are ['weights']" in message
    assert "'config'" in message and 'KeyError' not in message
    (tmp_path / 'other' / 'ckpt.npz').write_bytes(b'not a checkpoint')
    message = refused(capsys, train_gpt.main, ['--resume', '--out', 'other', *TINY])
    assert 'cannot resume' in message and 'not a zip archive' in message and 'without --resume' in message


def test_resume_from_a_version_2_checkpoint_names_the_conversion_that_lets_it_continue(capsys, monkeypatch):
    """A checkpoint from before nn.Linear took PyTorch's layout: --resume says the one command to run."""
    train_gpt.main(['--steps', '2', '--out', 'run', *TINY])
    capsys.readouterr()
    path = os.path.join('run', 'ckpt.npz')
    checkpoint = mt.load(path)
    with monkeypatch.context() as m:  # the same checkpoint as an older microtensor wrote it
        m.setattr(mt.serialization, 'VERSION', 2)
        mt.save(checkpoint, path)
    message = refused(capsys, train_gpt.main, ['--steps', '3', '--resume', '--out', 'run', *TINY])
    command = re.search(r'python -c "(.*?)" once', message)[1]
    assert 'format version 2' in message and command == f"import microtensor as mt; mt.upgrade_checkpoint('{path}', None)"
    subprocess.run([sys.executable, '-c', command], check=True, env=dict(os.environ, PYTHONPATH=ROOT))
    result = train_gpt.main(['--steps', '3', '--resume', '--out', 'run', *TINY])
    assert result['step'] == 3 and 'resumed from' in capsys.readouterr().out


# ---------------------------------------------------------------------------- the prompt
@pytest.mark.parametrize('corpus', ['poem', 'stdlib'])
def test_an_empty_prompt_is_refused_before_training(corpus, capsys, monkeypatch):
    monkeypatch.setattr(train_gpt, 'train', lambda *a, **k: pytest.fail('trained with an empty prompt'))
    with pytest.raises(SystemExit) as exit_:
        train_gpt.main(['--corpus', corpus, '--prompt', ''])
    assert exit_.value.code == 2
    assert 'argument --prompt: the prompt is empty' in capsys.readouterr().err
    with pytest.raises(ValueError, match='the prompt is empty'):
        train_gpt.run(corpus='poem', prompt='')


# ---------------------------------------------------------------------------- a run that did not learn
def test_check_learned_tells_a_rising_loss_from_a_flat_one(capsys):
    assert report.check_learned([2.0, 1.5, 1.0, 0.5], 'lesson') is None
    rose = report.check_learned([0.7] + [50.0] * 19, 'lesson', rose=('a lower --lr',), flat=('more --steps',))
    assert rose == ("lesson: this run did not learn: the loss rose, from 0.7 at step 1 to 50 over the last 2 steps. "
                    "Try a lower --lr.")
    flat = report.check_learned([0.7, 0.69, 0.68], 'lesson', rose=('a lower --lr',), flat=('more --steps',))
    assert 'barely moved, from 0.7 at step 1 to 0.68 at the last step. Try more --steps.' in flat
    assert capsys.readouterr().out == rose + '\n' + flat + '\n'


@pytest.mark.slow
def test_train_xor_with_a_huge_learning_rate_says_it_did_not_learn(capsys):
    losses, predictions = train_xor.main(['--lr', '1000'])
    out = capsys.readouterr().out
    assert losses[-1] > losses[0]
    assert 'train_xor: this run did not learn: the loss rose' in out and 'Try a lower --lr' in out
    train_xor.main([])
    assert 'did not learn' not in capsys.readouterr().out
