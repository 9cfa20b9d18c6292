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
    assert 5 <= saved <= stopped and saved % 5 == 0 and path == os.path.join('run', 'ckpt.npz')
    assert command == 'python -m demos.train_gpt ' + ' '.join(argv) + ' --resume'
    assert mt.load(path)['step'] == saved   # intact, at the step it names
    words = shlex.split(command)
    assert words[:3] == ['python', '-m', 'demos.train_gpt']
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


def test_ctrl_c_in_a_lesson_that_trains_the_gpt_without_resume_says_so(monkeypatch, capsys):
    interrupt_after(monkeypatch, train_gpt, 'next_token_loss', 3)
    with pytest.raises(SystemExit) as exit_:
        attention_maps.main(['--steps', '2', '--gpt-steps', '40'])
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    assert err == ("attention_maps: stopped by Ctrl-C after step 3 of 40; no checkpoint was written yet (the first "
                   "comes at step 40): run the same command to start again.\n")


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


def test_train_xor_with_a_huge_learning_rate_says_it_did_not_learn(capsys):
    losses, predictions = train_xor.main(['--lr', '1000'])
    out = capsys.readouterr().out
    assert losses[-1] > losses[0]
    assert 'train_xor: this run did not learn: the loss rose' in out and 'Try a lower --lr' in out
    train_xor.main([])
    assert 'did not learn' not in capsys.readouterr().out
