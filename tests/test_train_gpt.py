"""train_gpt learns from any text: corpus loading and its errors, the validation split and the
unigram baseline, the presets, host transfers only at log steps, the NaN stop that never writes
a checkpoint, --stop-after; and train_reverse's held-out test set."""
import importlib.util
import math
import os
import platform
import re
import sys

import numpy as np
import pytest

import microtensor as mt
from demos import corpus, report, train_gpt, train_reverse

TINY = ['--d-model', '16', '--n-layers', '1', '--n-heads', '2', '--context', '16', '--batch-size', '4',
        '--sample-length', '0']


pytestmark = pytest.mark.usefixtures('in_tmp_path')  # lessons write under runs/ of the working folder


def usage_error(capsys, main, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and 'error:' in err and 'Traceback' not in err, err
    return err


# ---------------------------------------------------------------------------- texts
BAD_FILES = {  # name: (bytes, or None for a folder; what the message says)
    'empty.txt': (b'', 'is empty'),
    'blank.txt': (b' \n\t\n', 'only whitespace'),
    'image.png': (b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR', 'binary file (a NUL byte at offset 8)'),
    'latin1.txt': ('caf\u00e9 au lait\n'.encode('latin-1'), 'not UTF-8 text (byte 0xe9 at offset 3)'),
    'folder': (None, 'is a folder'),
}


@pytest.mark.parametrize('name', sorted(BAD_FILES))
def test_bad_text_files_are_refused_with_the_reason(name, tmp_path, capsys):
    content, message = BAD_FILES[name]
    path = tmp_path / name
    path.mkdir() if content is None else path.write_bytes(content)
    with pytest.raises(corpus.CorpusError, match=re.escape(message)):
        corpus.read_text(path)
    err = usage_error(capsys, train_gpt.main, ['--text', str(path)])   # from the command line: before training
    assert '--text' in err and message in err


def test_a_missing_file_and_a_text_too_short_for_the_context(tmp_path, capsys):
    assert 'no such file' in usage_error(capsys, train_gpt.main, ['--text', str(tmp_path / 'nope.txt')])
    short = tmp_path / 'short.txt'
    short.write_text('abcdefghij' * 5, encoding='utf-8')
    err = usage_error(capsys, train_gpt.main, ['--text', str(short)])  # 40 + 10 characters, context 64
    assert 'the training part of the text has 40 characters' in err and '--context' in err
    err = usage_error(capsys, train_gpt.main, ['--text', str(short), '--context', '16', '--val-fraction', '0.1'])
    assert 'validation part' in err and '5 characters' in err
    err = usage_error(capsys, train_gpt.main, ['--context', '16', '--prompt', 'Zebra@'])
    assert "poem: the prompt holds characters the text never uses: ['@', 'Z']" in err


def test_read_text_drops_the_bom_and_windows_line_ends(tmp_path):
    path = tmp_path / 'notes.txt'
    path.write_bytes('\ufeffl\u00edne one\r\nline two\r\n'.encode('utf-8'))
    assert corpus.read_text(path) == 'l\u00edne one\nline two\n'


def test_stdlib_docstrings_are_read_in_a_fixed_order_and_named_by_python_version(monkeypatch):
    text = corpus.stdlib_docstrings(packages=('json', 'colorsys'))
    assert text == corpus.stdlib_docstrings(packages=('colorsys', 'json'))  # sorted walk: deterministic
    assert text.startswith('Conversion functions between RGB and other color systems.')  # colorsys before json
    assert 'JSON (JavaScript Object Notation)' in text and '__all__ =' not in text  # docstrings only, no code
    with pytest.raises(corpus.CorpusError, match='no docstrings'):
        corpus.stdlib_docstrings(packages=('no_such_module',))
    monkeypatch.setattr(corpus, 'stdlib_docstrings', lambda: 'a docstring\n')
    assert corpus.load('stdlib') == ('a docstring\n', f"stdlib docstrings, {platform.python_implementation()} "
                                                      f"{platform.python_version()}")


def test_split_and_the_unigram_baseline():
    assert corpus.split('abcdefghij', 0.2) == ('abcdefgh', 'ij')
    assert corpus.split('abcdefghij', 0) == ('abcdefghij', '')
    # train 'aab': p(a) = (2 + 1) / (3 + 2), p(b) = (1 + 1) / 5 over the vocabulary {a, b}
    assert corpus.unigram_loss('aab', 'ab') == pytest.approx(-(math.log(3 / 5) + math.log(2 / 5)) / 2)
    assert corpus.unigram_loss('aab') == pytest.approx(-(2 * math.log(3 / 5) + math.log(2 / 5)) / 3)
    assert corpus.unigram_loss('ab', 'c') == pytest.approx(-math.log(1 / 5))  # unseen: add-one smoothing


def test_the_summary_says_when_the_validation_loss_rose_again():
    falling = train_gpt.validation_summary([[100, 2.9], [200, 2.5]], baseline=3.0)
    assert falling == 'validation loss at step 200: 2.5000 (below the baseline)'
    rising = train_gpt.validation_summary([[100, 2.2], [200, 2.6], [300, 3.1]], baseline=3.0)
    assert rising.startswith('validation loss at step 300: 3.1000 (not below the baseline)\nIt was lowest at step '
                             '100 (2.2000)') and 'overfitting' in rising


# ---------------------------------------------------------------------------- presets and any text
def test_presets_set_the_defaults_and_options_override_them(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(train_gpt, 'run', lambda **kwargs: seen.update(kwargs) or 'ran')
    assert train_gpt.main(['--preset', 'gpu', '--n-layers', '3']) == 'ran'
    assert (seen['preset'], seen['corpus'], seen['d_model'], seen['n_layers'], seen['context'],
            seen['batch_size']) == ('gpu', None, 384, 3, 256, 64)    # run() reads the preset's corpus
    train_gpt.main(['--corpus', 'stdlib'])
    assert (seen['preset'], seen['corpus'], seen['d_model'], seen['warmup']) == ('tiny', 'stdlib', 64, 30)
    with pytest.raises(SystemExit):
        train_gpt.main(['--preset', 'gpu', '--help'])
    assert '(default: 384)' in capsys.readouterr().out


def test_gpu_preset_trains_on_a_text_file_with_validation_and_a_plot(tmp_path, capsys):
    path = tmp_path / 'story.txt'
    path.write_text('the quick brown fox jumps over the lazy dog. ' * 20, encoding='utf-8')
    out = tmp_path / 'run'
    result = train_gpt.main(['--preset', 'gpu', '--text', str(path), *TINY, '--steps', '4', '--log-every', '2',
                             '--eval-every', '2', '--eval-batches', '1', '--out', str(out), '--warmup', '0'])
    text = capsys.readouterr().out
    assert result['config']['d_model'] == 16 and result['config']['val_fraction'] == 0.1   # the preset, overridden
    assert [step for step, _ in result['val']] == [2, 4] and len(result['losses']) == 4
    assert result['baseline'] == pytest.approx(corpus.unigram_loss(*corpus.split(path.read_text(), 0.1)))
    assert 'story.txt: 810 training and 90 validation characters' in text
    assert re.search(r"step 4: validation loss \d\.\d{4} \(unigram baseline \d\.\d{4}\)", text)
    assert (out / 'ckpt.npz').exists()
    assert (out / 'loss.png').exists() == (importlib.util.find_spec('matplotlib') is not None)
    assert (str(out / 'ckpt.npz'), 'checkpoint') in report.WRITTEN


def test_losses_come_to_the_host_only_at_log_steps(monkeypatch):
    """10 steps, log every 5, validation and checkpoint at 10: the training loop fetches the losses
    of steps 1-5 and 6-10, one validation loss and one weight check, and nothing else.  (What the
    model's own forward fetches, e.g. the embedding's id-range check, is the engine's business.)"""
    calls = []
    for name in ('item', 'tolist', 'numpy'):
        original = getattr(mt.Tensor, name)

        def spy(self, _original=original, _name=name):
            if sys._getframe(1).f_code.co_filename == train_gpt.__file__:
                calls.append((_name, sys._getframe(1).f_code.co_name))
            return _original(self)
        monkeypatch.setattr(mt.Tensor, name, spy)
    result = train_gpt.train(steps=10, log_every=5, eval_every=10, ckpt_every=10, eval_batches=1, d_model=16,
                             n_layers=1, n_heads=2, context=16, batch_size=4, out='run')
    assert calls == [('tolist', 'train'), ('item', 'validation_loss'), ('tolist', 'keep'),  # keep: the checkpoint's
                     ('item', 'check_weights')]
    assert len(result['losses']) == 10 and result['memory'] == []   # no memory pool on the CPU


# ---------------------------------------------------------------------------- stopping
@pytest.mark.filterwarnings('ignore::RuntimeWarning')  # numpy's own overflow warnings on the way to inf
def test_a_diverging_run_stops_and_never_writes_a_nan_checkpoint(tmp_path):
    good = train_gpt.train(steps=4, ckpt_every=2, out='run', d_model=16, n_layers=1, n_heads=2, context=16,
                           batch_size=4)
    saved = (tmp_path / 'run' / 'ckpt.npz').read_bytes()
    # lr 1e39 with no warmup: the first update makes the float32 weights inf while step 1's loss is still finite
    with pytest.raises(SystemExit) as exit_:
        train_gpt.main(['--lr', '1e39', '--warmup', '0', '--ckpt-every', '1', '--out', 'run', *TINY])
    assert str(exit_.value).startswith("error: train_gpt: a weight became nan or inf in step 1")
    assert 'lower --lr' in str(exit_.value)
    # lr 1e38: the weights stay finite (1e38 < 3.4e38) but step 2's loss is nan: caught at the log step
    with pytest.raises(report.Diverged, match=r"the loss became nan at step 2.*a longer --warmup"):
        train_gpt.train(steps=8, lr=1e38, warmup=0, log_every=4, ckpt_every=4, out='run', d_model=16, n_layers=1,
                        n_heads=2, context=16, batch_size=4)
    assert (tmp_path / 'run' / 'ckpt.npz').read_bytes() == saved     # the good checkpoint is untouched
    assert all(np.isfinite(v.numpy()).all() for v in mt.load(tmp_path / 'run' / 'ckpt.npz')['model'].values())
    assert good['step'] == 4


@pytest.mark.slow
def test_stop_after_says_how_to_continue_and_resume_finishes(capsys):
    train_gpt.main(['--steps', '6', '--stop-after', '3', '--out', 'run', *TINY])
    assert 'stopped at step 3; continue with --resume' in capsys.readouterr().out
    result = train_gpt.main(['--steps', '6', '--resume', '--out', 'run', *TINY])
    out = capsys.readouterr().out
    assert 'resumed from run/ckpt.npz at step 3' in out.replace(os.sep, '/') and 'stopped at' not in out
    assert len(result['losses']) == 6 and result['val'][-1][0] == 6


@pytest.mark.parametrize('argv, named', [(['--warmup', '-1'], '>= 0'), (['--stop-after', '0'], '--stop-after'),
                                         (['--val-fraction', '1'], 'below 1'), (['--n-heads', '3'], 'divide'),
                                         (['--eval-every', '0'], '--eval-every'), (['--preset', 'huge'], 'huge'),
                                         (['--corpus', 'poem', '--text', 'x'], 'not allowed')])
def test_train_gpt_refuses_bad_options(argv, named, capsys):
    assert named in usage_error(capsys, train_gpt.main, argv)


def test_warmup_may_be_zero():
    result = train_gpt.train(steps=2, warmup=0, d_model=16, n_layers=1, n_heads=2, context=16, batch_size=4,
                             out='run')
    assert len(result['losses']) == 2


# ---------------------------------------------------------------------------- train_reverse
def test_train_reverse_refuses_more_test_sequences_than_it_can_hold_out(capsys):
    err = usage_error(capsys, train_reverse.main, ['--length', '1', '--n-test', '20'])
    assert '--n-test 20 is too many for --length 1: there are 10 digit sequences' in err and 'half (5)' in err
    with pytest.raises(ValueError, match='too many'):
        train_reverse.run(length=2, n_test=51)
    with pytest.raises(ValueError, match='only 10 exist'):
        train_reverse.random_sequences(__import__('random').Random(0), 11, 1)


@pytest.mark.slow
def test_train_reverse_never_trains_on_its_test_sequences():
    result = train_reverse.main(['--length', '1', '--n-test', '5', '--steps', '4', '--warmup', '0', '--d-model', '8',
                                 '--n-heads', '2'])
    assert len(result['test']) == 5 and not set(result['test']) & result['seen']
    assert len(result['seen']) == 5  # only the other five one-digit sequences were left to train on


# ---------------------------------------------------------------------------- a trained model in one call
def test_load_checkpoint_gives_the_trained_model_and_its_characters(tmp_path):
    result = train_gpt.train(steps=3, ckpt_every=3, out='run', d_model=16, n_layers=1, n_heads=2, context=16,
                             batch_size=4)
    model, chars = train_gpt.load_checkpoint(os.path.join('run', 'ckpt.npz'))
    assert chars.vocab == result['chars'].vocab and not model.training
    trained = result['model'].state_dict()
    assert model.state_dict().keys() == trained.keys()
    for name, w in model.state_dict().items():
        assert w.dtype == trained[name].dtype and np.array_equal(w.numpy(), trained[name].numpy()), name
    ids = mt.tensor(chars.encode('Twinkle'))
    result['model'].eval()
    assert np.array_equal(model(ids[None]).numpy(), result['model'](ids[None]).numpy())
    mt.save({'model': model.state_dict()}, 'weights-only.npz')
    with pytest.raises(ValueError, match=r"not a train_gpt checkpoint \(it has no \['config', 'vocab'\]\)"):
        train_gpt.load_checkpoint('weights-only.npz')


def test_sample_from_a_checkpoint_on_the_command_line(capsys):
    result = train_gpt.train(steps=3, ckpt_every=3, out='run', d_model=16, n_layers=1, n_heads=2, context=16,
                             batch_size=4)
    capsys.readouterr()
    path = os.path.join('run', 'ckpt.npz')
    written = train_gpt.main(['--sample', path, '--prompt', 'Tw', '--sample-length', '12'])
    out = capsys.readouterr().out
    assert "Continuations of 'Tw':" in out and f"{path}: a GPT of " in out and 'after 3 steps' in out
    assert written == train_gpt.samples(result['model'].eval(), result['chars'], 'Tw', 12)  # what the model writes
    assert all(text.startswith('Tw') and len(text) == 14 for text in written.values())
    assert not os.path.exists(os.path.join('run', 'loss.png'))  # nothing was trained
    assert "the prompt holds characters" in usage_error(capsys, train_gpt.main, ['--sample', path, '--prompt', '漢'])
    assert "no such file" in usage_error(capsys, train_gpt.main, ['--sample', 'nowhere.npz'])
