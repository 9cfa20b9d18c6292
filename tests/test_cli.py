"""Every lesson from the command line: --help, its options reach run(), bad options are usage
errors (never a traceback), --device lands the tensors there, `python -m demos NAME --opt`
passes options through, a diverging run stops with a message, and the tour lists its files."""
import functools
import importlib
import inspect
import math
import os
import re
import sys

import pytest

import microtensor as mt
from demos import __main__ as tour
from demos import articles, layernorm_vs_batchnorm, report, train_gpt, train_xor
from readme import ROOT

from conftest import DEVICES

OWN = ['train_xor', 'temperature', 'article_trace', 'softmax_saturation', 'residual_highway', 'rnn_vs_attention',
       'layernorm_vs_batchnorm', 'train_reverse',
       # the attention lessons
       'attention_by_hand', 'why_separate_qk', 'kv_cache', 'scale_variants', 'attention_cost', 'attention_maps',
       # the depth lessons
       'pre_vs_post_ln', 'positions', 'residual_variants', 'feedforward', 'encoder_only_mlm', 'small_numbers',
       # the lessons on the articles' remaining claims
       'qkv_roles', 'scale_alternatives', 'heads_specialise', 'positional_add_vs_concat', 'residual_stream',
       'ffn_memory', 'dependency_span', 'score_matrix_size']
ALL = [name for name, _ in tour.LESSONS]


pytestmark = pytest.mark.usefixtures('in_tmp_path')  # lessons write under runs/ of the working folder


def lesson(name):
    return importlib.import_module(f"demos.{name}")


def usage_error(capsys, name, argv):
    """main(argv) must end as argparse ends a bad command line: exit status 2 and a message; the message."""
    with pytest.raises(SystemExit) as exit_:
        lesson(name).main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and 'error:' in err and 'Traceback' not in err, err
    return err


# ---------------------------------------------------------------------------- --help and bad options
@pytest.mark.parametrize('name', ALL)
def test_help_names_every_option(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        lesson(name).main(['--help'])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert f"python -m demos.{name}" in out and '--device {cpu,cuda,auto}' in out
    assert 'issue' not in out.lower()
    if lesson(name).SECTIONS:  # and the sections it reads with
        assert out.rstrip().endswith(articles.header(lesson(name).SECTIONS, '  ').rstrip())


BAD = {  # lesson: [(argv, what the message must name)]
    'train_xor': [(['--steps', '0'], '--steps'), (['--steps', '2.5'], 'integer'), (['--lr', '0'], '--lr'),
                  (['--lr', '-1'], '--lr'), (['--lr', 'nan'], 'finite'), (['--lr', 'inf'], 'finite'),
                  (['--seed', '-1'], '>= 0'), (['--hidden', '0'], '--hidden'), (['--lr', 'fast'], 'a number')],
    'temperature': [(['--temperatures', '0'], '> 0'), (['--temperatures', '1', 'nan'], 'finite'),
                    (['--logits', 'inf'], 'finite'), (['--logits'], '--logits')],
    'article_trace': [(['--steps', '3'], 'unrecognized')],
    'softmax_saturation': [(['--d-ks', '0'], '--d-ks'), (['--batch-size', '-3'], '--batch-size'),
                           (['--train-steps', '0'], '--train-steps'), (['--train', '--no-train'], 'not allowed')],
    'residual_highway': [(['--n-layers', '0'], '>= 1'), (['--d-model', '6', '--n-heads', '4'], 'must divide')],
    'rnn_vs_attention': [(['--seq-len', '2'], '>= 3'), (['--d-model', '5'], 'even')],
    'layernorm_vs_batchnorm': [(['--batch-sizes', '8', '1'], '>= 2'), (['--d-model', '0'], '--d-model')],
    'train_gpt': [(['--ckpt-every', '0'], '--ckpt-every'), (['--lr', 'nan'], 'finite'), (['--seed', '-2'], '>= 0')],
    'train_reverse': [(['--steps', '0'], '--steps'), (['--n-test', '-1'], '--n-test'), (['--warmup', '-1'], '>= 0'),
                      (['--length', '1', '--n-test', '20'], 'too many'), (['--d-model', '6'], 'must divide')],
    'why_separate_qk': [(['--seq-len', '2'], '>= 3'), (['--full', '--no-full'], 'not allowed')],
    'kv_cache': [(['--new-tokens', '0'], '--new-tokens'), (['--small', '--no-small'], 'not allowed')],
    'scale_variants': [(['--d-ks'], '--d-ks'), (['--d-ks', '16', '0'], '>= 1')],
    'attention_cost': [(['--max-n', '128'], '>= 256'), (['--d', '6'], 'multiple of 4'), (['--repeats', '0'], '>= 1')],
    'attention_maps': [(['--gpt-steps', '0'], '--gpt-steps')],
    'pre_vs_post_ln': [(['--lr', '0'], '--lr'), (['--depths', '3', '0'], '--depths'), (['--grad-seeds', '0'], '>= 1')],
    'positions': [(['--train-len', '1'], '>= 2'), (['--seeds', '0'], '--seeds')],
    'residual_variants': [(['--n-layers', '0'], '--n-layers')],
    'feedforward': [(['--copy-steps', '-5'], '--copy-steps')],
    'encoder_only_mlm': [(['--n-test', '5'], '>= 10'), (['--batch-size', '0'], '--batch-size')],
    'small_numbers': [(['--n-layers', '1'], '>= 2'), (['--seq-len', 'long'], 'an integer')],
    'qkv_roles': [(['--lookup-steps', '0'], '--lookup-steps')],
    'scale_alternatives': [(['--rows', '0'], '--rows')],
    'ffn_memory': [(['--facts', '0'], '--facts')],
    'score_matrix_size': [(['--n-max', '64'], '>= 128')],
    'dependency_span': [(['--steps', '1.5'], 'an integer')],
}


@pytest.mark.parametrize('name, argv, named', [(name, argv, named) for name in ALL
                                               for argv, named in BAD.get(name, []) + [(['--bogus'], '--bogus'),
                                                                                        (['--device', 'tpu'], 'tpu')]])
def test_bad_options_are_usage_errors(name, argv, named, capsys):
    assert named in usage_error(capsys, name, argv)


# ---------------------------------------------------------------------------- options reach run()
EVERY_OPTION = {  # lesson: argv setting every option to a non-default value, and what run() must get
    'train_xor': (['--steps', '7', '--lr', '0.25', '--hidden', '3', '--seed', '0', '--seeds', '2', '--full'],
                  dict(steps=7, lr=0.25, hidden=3, seed=0, seeds=2, full=True)),
    'temperature': (['--logits', '1', '-2', '--temperatures', '0.5', '3'],
                    dict(logits=[1.0, -2.0], temperatures=[0.5, 3.0])),
    'article_trace': (['--html'], dict(html=True)),
    'softmax_saturation': (['--d-ks', '8', '2', '--batch-size', '3', '--seq-len', '5', '--no-train',
                            '--train-steps', '9', '--train-d-k', '4', '--seed', '11', '--seeds', '2', '--full', '--html'],
                           dict(d_ks=[8, 2], batch_size=3, seq_len=5, train=False, train_steps=9, train_d_k=4,
                                seed=11, seeds=2, full=True, html=True)),
    'residual_highway': (['--n-layers', '3', '--d-model', '12', '--n-heads', '3', '--batch-size', '2',
                          '--seq-len', '5', '--seed', '4', '--html'],
                         dict(n_layers=3, d_model=12, n_heads=3, batch_size=2, seq_len=5, seed=4, html=True)),
    'rnn_vs_attention': (['--seq-len', '3', '--d-model', '6', '--batch-size', '1', '--seed', '5'],
                         dict(seq_len=3, d_model=6, batch_size=1, seed=5)),
    'layernorm_vs_batchnorm': (['--d-model', '5', '--companions', '1', '--batch-sizes', '3', '2', '--seed', '6'],
                               dict(d_model=5, companions=1, batch_sizes=[3, 2], seed=6)),
    'train_reverse': (['--steps', '7', '--length', '3', '--n-test', '4', '--batch-size', '5', '--d-model', '12',
                       '--n-heads', '3', '--n-layers', '2', '--lr', '0.25', '--warmup', '0', '--seed', '2',
                       '--seeds', '2', '--full'],
                      dict(steps=7, length=3, n_test=4, batch_size=5, d_model=12, n_heads=3, n_layers=2, lr=0.25,
                           warmup=0, seed=2, seeds=2, full=True)),
    'attention_by_hand': (['--samples', '7', '--seed', '3'], dict(samples=7, seed=3)),
    'why_separate_qk': (['--steps', '3', '--seq-len', '5', '--d-model', '4', '--batch-size', '2', '--seed', '1',
                         '--full'], dict(steps=3, seq_len=5, d_model=4, batch_size=2, seed=1, full=True)),
    'kv_cache': (['--small', '--new-tokens', '3'], dict(small=True, new_tokens=3)),
    'scale_variants': (['--steps', '3', '--d-model', '8', '--d-ks', '4', '8', '--seed', '2', '--full'],
                       dict(steps=3, d_model=8, d_ks=[4, 8], seed=2, full=True)),
    'attention_cost': (['--max-n', '512', '--d', '8', '--repeats', '2', '--full'],
                       dict(max_n=512, d=8, repeats=2, full=True)),
    'attention_maps': (['--steps', '3', '--gpt-steps', '4', '--seed', '1', '--seeds', '2', '--full'],
                       dict(steps=3, gpt_steps=4, seed=1, seeds=2, full=True)),
    'pre_vs_post_ln': (['--n-layers', '2', '--steps', '3', '--warmup', '2', '--lr', '0.5', '--seeds', '2', '--depths',
                        '1', '2', '--grad-seeds', '2', '--full'],
                       dict(n_layers=2, steps=3, warmup=2, lr=0.5, seeds=2, depths=[1, 2], grad_seeds=2, full=True)),
    'positions': (['--train-len', '4', '--steps', '3', '--batch-size', '2', '--seeds', '2', '--full'],
                  dict(train_len=4, steps=3, batch_size=2, seeds=2, full=True)),
    'residual_variants': (['--steps', '3', '--n-layers', '2', '--seed', '1'], dict(steps=3, n_layers=2, seed=1)),
    'feedforward': (['--steps', '3', '--copy-steps', '4', '--seeds', '2', '--full'],
                    dict(steps=3, copy_steps=4, seeds=2, full=True)),
    'encoder_only_mlm': (['--steps', '3', '--batch-size', '2', '--n-test', '10', '--seed', '1', '--seeds', '2', '--full'],
                         dict(steps=3, batch_size=2, n_test=10, seed=1, seeds=2, full=True)),
    'small_numbers': (['--seq-len', '8', '--n-layers', '3', '--repeats', '1', '--seed', '1'],
                      dict(seq_len=8, n_layers=3, repeats=1, seed=1)),
    'qkv_roles': (['--steps', '3', '--lookup-steps', '4', '--seed', '1', '--full'],
                  dict(steps=3, lookup_steps=4, seed=1, full=True)),
    'scale_alternatives': (['--rows', '3', '--steps', '4', '--seed', '1', '--full'],
                           dict(rows=3, steps=4, seed=1, full=True)),
    'heads_specialise': (['--steps', '3', '--seed', '1', '--full'], dict(steps=3, seed=1, full=True)),
    'positional_add_vs_concat': (['--steps', '3', '--seed', '1', '--full'], dict(steps=3, seed=1, full=True)),
    'residual_stream': (['--steps', '3', '--seed', '1', '--full'], dict(steps=3, seed=1, full=True)),
    'ffn_memory': (['--facts', '5', '--steps', '3', '--seed', '1', '--full'],
                   dict(facts=5, steps=3, seed=1, full=True)),
    'dependency_span': (['--steps', '3', '--seed', '1', '--full'], dict(steps=3, seed=1, full=True)),
    'score_matrix_size': (['--n-max', '256', '--seed', '1'], dict(n_max=256, seed=1)),
}


def spy_on_run(monkeypatch, module):
    """Replace module.run by a stand-in with its signature that records its keyword arguments."""
    seen = {}

    @functools.wraps(module.run)
    def spy(**kwargs):
        seen.update(kwargs)
        return 'ran'
    monkeypatch.setattr(module, 'run', spy)
    return seen


@pytest.mark.parametrize('name', OWN)
def test_every_option_reaches_run_with_its_type(name, monkeypatch):
    argv, expected = EVERY_OPTION[name]
    seen = spy_on_run(monkeypatch, lesson(name))
    assert lesson(name).main(argv + ['--device', 'auto']) == 'ran'
    assert seen == {**expected, 'device': 'cuda' if mt.cuda.is_available() else 'cpu'}
    assert all(type(seen[k]) is type(v) for k, v in expected.items())
    assert all(type(x) is type(v[0]) for k, v in expected.items() if isinstance(v, list) for x in seen[k])


@pytest.mark.parametrize('name', OWN)
def test_defaults_are_run_defaults(name, monkeypatch):
    seen = spy_on_run(monkeypatch, lesson(name))
    lesson(name).main([])
    defaults = {k: p.default for k, p in inspect.signature(lesson(name).run).parameters.items()
                if k in seen}
    assert seen == defaults and seen['device'] == 'cpu'


def test_demos_passes_options_through_to_any_lesson(monkeypatch):
    seen = spy_on_run(monkeypatch, train_gpt)
    tour.main(['train_gpt', '--steps', '50'])
    assert seen['steps'] == 50 and seen['device'] == 'cpu'
    seen = spy_on_run(monkeypatch, train_xor)
    tour.main(['train_xor', '--lr', '0.125'])
    assert seen['lr'] == 0.125


def test_demos_refuses_options_after_several_lessons_and_unknown_lessons(capsys):
    for argv, message in ((['train_xor', 'temperature', '--steps', '3'], 'single lesson name'),
                          (['bogus', '--steps', '3'], "unknown lesson 'bogus'"),
                          (['--device', 'cpu', 'bogus'], "unknown lesson 'bogus'")):
        with pytest.raises(SystemExit):
            tour.main(argv)
        assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------- tiny real runs on each device
TINY = {  # lesson: (argv, check(result, device))
    'train_xor': (['--steps', '7', '--hidden', '3'],
                  lambda r, d: len(r[0]) == 7 and r[1].device == d),
    'temperature': (['--logits', '1', '-2', '0.5', '--temperatures', '0.5', '2'],
                    lambda r, d: [T for T, _, _ in r] == [0.5, 2.0] and r[0][1].shape == (3,)
                    and r[0][1].device == d),
    'article_trace': ([], lambda r, d: r['weights'][2].device == d),
    'softmax_saturation': (['--d-ks', '4', '8', '--batch-size', '2', '--seq-len', '4', '--train-steps', '3',
                            '--train-d-k', '8'],
                           lambda r, d: [row['d_k'] for row in r['rows']] == [4, 4, 8, 8]
                           and len(r['curves'][True]) == 3 and r['rows'][0]['device'] == d),
    'residual_highway': (['--n-layers', '2', '--d-model', '8', '--batch-size', '2', '--seq-len', '3'],
                         lambda r, d: all(len(g) == 2 for g in r['grads'].values()) and r['device'] == d),
    'rnn_vs_attention': (['--seq-len', '5', '--d-model', '4', '--batch-size', '2'],
                         lambda r, d: len(r['grads']['RNN']) == 5 and r['device'] == d),
    'layernorm_vs_batchnorm': (['--d-model', '4', '--companions', '2', '--batch-sizes', '2', '5'],
                               lambda r, d: 'x + 2 small tokens' in r['results']
                               and len(r['by_batch_size']['BatchNorm1d']) == 2 and r['device'] == d),
    'train_reverse': (['--steps', '3', '--length', '2', '--n-test', '3', '--d-model', '8', '--n-heads', '2',
                       '--batch-size', '4'],
                      lambda r, d: len(r['losses']) == 3 and len(r['test']) == 3 and r['device'] == d),
    'attention_by_hand': (['--samples', '100'],
                          lambda r, d: [row[0] for row in r['small']['stds']] == [64, 128, 512] and r['device'] == d),
    'why_separate_qk': (['--steps', '2', '--seq-len', '4', '--d-model', '8', '--batch-size', '2'],
                        lambda r, d: all(len(t['losses']) == 2 for t in r['training'].values())
                        and len(r['staircase']) == 3 and r['device'] == d),
    'kv_cache': (['--small', '--new-tokens', '2'],
                 lambda r, d: [row['context'] for row in r['rows']] == [9] * 4 and 'deepseek' not in r
                 and r['device'] == d),
    'scale_variants': (['--steps', '2', '--d-model', '8', '--d-ks', '4', '8'],
                       lambda r, d: [row[1] for row in r['statistics']] == [4, 8] * 3
                       and all(len(t['losses']) == 2 for t in r['training'].values()) and r['device'] == d),
    'attention_cost': (['--max-n', '256', '--d', '8', '--repeats', '1'],
                       lambda r, d: [row['n'] for row in r['rows']] == [64, 128, 256] and r['device'] == d),
    'attention_maps': (['--steps', '2', '--gpt-steps', '2'],
                       lambda r, d: len(r['reverse']['argmax'][0]) == 6 and r['gpt']['weights'] and r['device'] == d),
    'pre_vs_post_ln': (['--n-layers', '1', '--steps', '2', '--warmup', '1', '--depths', '1', '2', '--grad-seeds', '1'],
                       lambda r, d: sorted(r['ratios']) == [1, 2]
                       and all(len(runs[0]) == 2 for runs in r['curves'].values()) and r['device'] == d),
    'positions': (['--train-len', '4', '--steps', '2', '--batch-size', '2'],
                  lambda r, d: r['N'] == 4 and r['extrapolation']['learned']['acc'][8] is None and r['device'] == d),
    'residual_variants': (['--steps', '2', '--n-layers', '1'],
                          lambda r, d: len(r['trained']['losses']) == 2 and len(r['init']) == 6 and r['device'] == d),
    'feedforward': (['--steps', '2', '--copy-steps', '2'],
                    lambda r, d: len(r['final']) == 6 and r['device'] == d),
    'encoder_only_mlm': (['--steps', '2', '--batch-size', '2', '--n-test', '10'],
                         lambda r, d: len(r['losses']) == 2 and r['device'] == d),
    'small_numbers': (['--seq-len', '8', '--n-layers', '2', '--repeats', '1'],
                      lambda r, d: len(r['factors']) == 4 and r['device'] == d),
    'qkv_roles': (['--steps', '2', '--lookup-steps', '2'],
                  lambda r, d: len(r['copy'][True]['losses']) == 2 and r['device'] == d),
    'scale_alternatives': (['--rows', '1', '--steps', '2'], lambda r, d: sorted(r['small_d_k']) == [2, 4, 8, 16]
                           and r['device'] == d),
    'heads_specialise': (['--steps', '2'], lambda r, d: len(r['training'][4]['offsets']) == 4 and r['device'] == d),
    'positional_add_vs_concat': (['--steps', '2'], lambda r, d: len(r['training']) == 3 and r['device'] == d),
    'residual_stream': (['--steps', '2'], lambda r, d: len(r['sweep']) == 6 and r['device'] == d),
    'ffn_memory': (['--facts', '8', '--steps', '2'], lambda r, d: len(r['memory']) == 4 and r['device'] == d),
    'dependency_span': (['--steps', '2'], lambda r, d: len(r['accuracy']) == 8 and r['device'] == d),
    'score_matrix_size': (['--n-max', '128'], lambda r, d: list(r['sizes']) == [128] and r['device'] == d),
}


TINY['train_gpt'] = (['--steps', '4', '--batch-size', '2', '--context', '16', '--d-model', '16', '--n-layers', '1',
                      '--n-heads', '2', '--log-every', '2', '--eval-every', '4', '--ckpt-every', '4',
                      '--sample-length', '8'],
                     lambda r, d: len(r['losses']) == 4 and r['model'].parameters()[0].device == d)

TINY['compare_with_torch'] = (['--d-model', '8', '--n-layers', '1', '--n-heads', '2', '--seq-len', '4',
                               '--batch-size', '1'],
                              lambda r, d: r is None or r['variant']['largest'][2] < 1e-9)  # None: no torch here


def test_every_lesson_has_a_tiny_run():
    assert sorted(TINY) == sorted(ALL)


@pytest.mark.slow
@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('name', sorted(TINY))
def test_tiny_run_through_python_m_demos_lands_on_the_device(name, device, capsys):
    argv, check = TINY[name]
    result = tour.main([name, *argv, '--device', device])[name]
    assert check(result, device)
    out = capsys.readouterr().out
    assert 'issue' not in out.lower()  # the lessons speak of the articles, never of how they were made
    if lesson(name).SECTIONS:  # the lesson names its articles and sections first
        header = articles.header(lesson(name).SECTIONS)
        assert out.index(header) < out.index('\n', out.index(f"=== {name}:")) + 2


CUDA_RUN = {'train_xor': dict(steps=2), 'temperature': {}, 'article_trace': {},
            'softmax_saturation': dict(d_ks=(4,), batch_size=2, seq_len=4, train=False),
            'residual_highway': dict(n_layers=1, d_model=4, batch_size=1, seq_len=2),
            'rnn_vs_attention': dict(seq_len=3, d_model=4, batch_size=1),
            'layernorm_vs_batchnorm': dict(d_model=4, batch_sizes=(2,)),
            'train_reverse': dict(steps=2, length=2, n_test=2, d_model=8, n_heads=2, batch_size=2),
            'attention_by_hand': dict(samples=10), 'why_separate_qk': dict(steps=1, seq_len=3, d_model=4, batch_size=1),
            'kv_cache': dict(small=True, new_tokens=1), 'scale_variants': dict(steps=1, d_model=4, d_ks=(4,)),
            'attention_cost': dict(max_n=256, d=4, repeats=1), 'attention_maps': dict(steps=1, gpt_steps=1),
            'pre_vs_post_ln': dict(n_layers=1, steps=1, depths=(1,), grad_seeds=1),
            'positions': dict(train_len=2, steps=1, batch_size=1), 'residual_variants': dict(steps=1, n_layers=1),
            'feedforward': dict(steps=1, copy_steps=1), 'encoder_only_mlm': dict(steps=1, batch_size=1, n_test=10),
            'small_numbers': dict(seq_len=4, n_layers=2, repeats=1),
            'qkv_roles': dict(steps=1, lookup_steps=1), 'scale_alternatives': dict(rows=1, steps=1),
            'heads_specialise': dict(steps=1), 'positional_add_vs_concat': dict(steps=1),
            'residual_stream': dict(steps=1), 'ffn_memory': dict(facts=4, steps=1), 'dependency_span': dict(steps=1),
            'score_matrix_size': dict(n_max=128)}


@pytest.mark.skipif(mt.cuda.is_available(), reason="a GPU is here: the tiny runs above run on it")
@pytest.mark.parametrize('name', OWN)
def test_run_hands_the_device_to_the_engine(name):
    """Without a GPU the engine refuses 'cuda': a lesson that ignored its device would run on the CPU instead."""
    with pytest.raises(RuntimeError, match='cuda'):
        lesson(name).run(device='cuda', **CUDA_RUN[name])


@pytest.mark.skipif(mt.cuda.is_available(), reason="a GPU is here")
def test_device_cuda_without_a_gpu_says_why_and_what_to_do(capsys):
    err = usage_error(capsys, 'train_xor', ['--device', 'cuda'])
    assert 'no GPU is usable' in err and "pip install -e '.[gpu]'" in err and '--device auto' in err


# ---------------------------------------------------------------------------- a diverging run stops
def test_check_loss_passes_finite_values_and_names_the_step_otherwise():
    assert report.check_loss(0.25, 3, 'lesson') == 0.25
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(report.Diverged, match=r"lesson: the loss became -?(nan|inf) at step 4.*--lr"):
            report.check_loss(bad, 4, 'lesson')
    with pytest.raises(report.Diverged, match='a longer --warmup'):
        report.check_loss(math.nan, 1, 'train_gpt', tries=('a lower --lr', 'a longer --warmup'))


@pytest.mark.filterwarnings('ignore::RuntimeWarning')  # numpy's own overflow warnings on the way to NaN
def test_train_xor_stops_when_the_loss_becomes_nan(capsys):
    with pytest.raises(report.Diverged) as diverged:
        train_xor.run(steps=50, lr=1e38, verbose=False)
    step = int(re.search(r"at step (\d+)", str(diverged.value)).group(1))
    assert 1 < step < 50
    with pytest.raises(SystemExit) as exit_:  # from the command line: the message, no traceback
        train_xor.main(['--steps', '50', '--lr', '1e38'])
    assert str(exit_.value).startswith(f"error: train_xor: the loss became nan at step {step}")
    assert 'lower --lr' in str(exit_.value)


# ---------------------------------------------------------------------------- tables and the tour's file list
@pytest.mark.slow
def test_error_messages_stay_out_of_table_cells(capsys):
    with pytest.raises(TypeError, match='under the table'):
        report.table(['a'], [[ValueError('x')]])
    layernorm_vs_batchnorm.main(['--d-model', '4', '--batch-sizes', '2'])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith('x alone (batch of 1)'))
    assert row.endswith('ValueError (below)') and 'training needs' not in row
    assert re.search(r"^BatchNorm1d, x alone \(batch of 1\): ValueError: BatchNorm1d: training needs", out, re.M)


def test_the_tour_ends_by_listing_every_file_it_wrote(tmp_path, capsys):
    pytest.importorskip('matplotlib', reason="plots need matplotlib")
    tour.main(['temperature', 'article_trace'])
    out = capsys.readouterr().out
    listing = out[out.index('Files written'):].strip().splitlines()
    assert 'What next' not in out  # only at the end of the whole tour
    assert str(tmp_path) in listing[0]
    paths = [line.split()[0] for line in listing[1:]]
    assert paths == [os.path.join('runs', 'temperature.png'), os.path.join('runs', 'article_trace.png')]
    assert all(os.path.getsize(tmp_path / p) > 1000 for p in paths)
    assert sorted(os.listdir(tmp_path / 'runs')) == ['article_trace.png', 'temperature.png']  # nothing unlisted


def test_the_tour_without_matplotlib_says_how_to_get_plots(tmp_path, monkeypatch, capsys):
    for module in ('matplotlib', 'matplotlib.figure'):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    tour.main(['temperature'])
    out = capsys.readouterr().out
    assert '(no plot: matplotlib is not installed' in out
    assert 'No files written (plots need matplotlib' in out and not (tmp_path / 'runs').exists()


# ---------------------------------------------------------------------------- tests on any laptop
def test_readme_test_command_needs_no_gpu_and_is_what_ci_runs():
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    setup = readme[readme.index('\n## Set up'):readme.index('\n## ', readme.index('\n## Set up') + 1)]
    test_command = next(c for c in re.findall(r"```bash\n(.*?)\n```", setup, re.S) if 'pytest' in c)
    assert "'.[test]'" in test_command and 'gpu' not in test_command
    with open(os.path.join(ROOT, '.ci', 'run'), encoding='utf-8') as f:
        ci = f.read()
    assert test_command in ci                                         # CI runs the README's command ...
    gpu = ci[ci.index(test_command) + len(test_command):]
    assert "'.[gpu]'" in gpu and 'tests/test_cupy_api.py' in gpu and 'tests/test_gpu.py' in gpu  # ... then cupy's
    with open(os.path.join(ROOT, 'pyproject.toml'), encoding='utf-8') as f:
        extras = re.search(r"\[project\.optional-dependencies\](.*?)\n\[", f.read(), re.S).group(1)
    assert 'cupy' not in re.search(r"^test = (.*)$", extras, re.M).group(1)


def test_what_next_ends_the_whole_tour_only(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(tour, 'LESSONS', [('temperature', 'a lesson'), ('train_xor', 'another')])
    monkeypatch.setattr(tour.importlib, 'import_module',
                        lambda name: type('Lesson', (), {'main': staticmethod(lambda argv: ran.append(name))}))
    tour.main([])
    out = capsys.readouterr().out
    assert ran == ['demos.temperature', 'demos.train_xor'] and out.rstrip().endswith('docs/articles.md')
    assert out.count('What next:') == 1 and out.index('What next:') > out.index('=== train_xor')
    tour.main(['temperature'])
    assert 'What next' not in capsys.readouterr().out
