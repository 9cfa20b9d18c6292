"""Six lessons in Chinese: why_separate_qk, kv_cache, scale_variants, attention_cost, pre_vs_post_ln, positions.

Each runs its quick options twice in this process, in English and with MICROTENSOR_LANG=zh: the
numbers printed are the same in the same order (only the words change), the Chinese output has
Chinese in it and none of the lesson's English sentences, and --help shows the lesson's Chinese
description.
"""
import importlib
import itertools
import re

import pytest

from microtensor import i18n

NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')
CHINESE = re.compile(r'[\u4e00-\u9fff]')

# lesson: (the smallest options tests/test_cli.py uses, English sentences it prints,
#          a Chinese sentence it prints, a line of its --help in Chinese)
LESSONS = {
    'why_separate_qk': (['--steps', '2', '--seq-len', '4', '--d-model', '8', '--batch-size', '2'],
                        ['One head on the same random X', 'Copy the previous token', 'How the shared model does it',
                         'test accuracy', 'weight on t-1', 'chance: 10%'],
                        '共享投影时 S 严格对称，A 却不对称', '为什么 Q 和 K 要用各自的投影'),
    'kv_cache': (['--small', '--new-tokens', '2'],
                 ["design table (§2.2.4)", 'saves parameters, not cache', 'cached numbers / token',
                  'small GPT (64 wide, 8 heads)', 'their sizes do not depend on the device'],
                 '共享 W_Q = W_K 省的是参数，不是缓存', 'MHA、GQA、MQA 和 MLA 每个词元各存下什么'),
    'scale_variants': (['--steps', '2', '--d-model', '8', '--d-ks', '4', '8'],
                       ["keys per query", 'mean max weight', 'slowest start', 'learned scale after training',
                        'The same four trainings by plain SGD', "'extremely poor' does not"],
                       '所以“慢”\n成立', '得分该用哪种缩放'),
    'attention_cost': (['--max-n', '256', '--d', '8', '--repeats', '1'],
                       ['one sequence of n tokens', 'score matrix', 'log-log slope against n', 'Sequential steps',
                        'Measured: attention is faster up to'],
                       '串行步数：注意力', '序列变长时注意力的代价'),
    'pre_vs_post_ln': (['--n-layers', '1', '--steps', '2', '--warmup', '1', '--depths', '1', '2', '--grad-seeds', '1'],
                       ["At initialisation", 'The variance of the signal', 'It is the other way round',
                        'no warm-up', 'last steps, per seed', 'nothing explodes'],
                       '事实正好相反', 'Pre-LN 与 Post-LN'),
    'positions': (['--train-len', '4', '--steps', '2', '--batch-size', '2'],
                  ['Permutations of 3 input rows', 'Without positions reordering', 'Relative position',
                   'the score depends on the offset only', 'Many scales', 'Extrapolation', 'cannot run',
                   'train loss'],
                  '得分只取决于偏移量', '注意力看不到什么'),
}


def fake_clock(monkeypatch, module):
    """attention_cost's timings, made the same in both runs: attention's grows like n^2, the RNN's like n, so
    that the curves cross between n = 128 and 256 (the lesson calls attention, then the RNN, at each n)."""
    calls = itertools.count()

    def median_seconds(fn, repeats):
        fn()
        k = next(calls)
        return 1e-3 * 4 ** (k // 2) if k % 2 == 0 else 3e-3 * 2 ** (k // 2)
    monkeypatch.setattr(module, 'median_seconds', median_seconds)


def lesson_output(name, argv, lang, monkeypatch, capsys):
    """What `python -m demos.NAME ARGV` prints in `lang`, run in this process (with a fake clock where the
    lesson times something: a real clock never reads the same twice)."""
    monkeypatch.setenv('MICROTENSOR_LANG', lang)
    module = importlib.import_module(f'demos.{name}')
    if hasattr(module, 'median_seconds'):
        fake_clock(monkeypatch, module)
    try:
        module.main(list(argv))
    finally:
        i18n.use('en')
    return capsys.readouterr().out


def numbers(text):
    """The numbers printed, in order; the articles' headings (whose English glosses are left out in
    Chinese) are skipped."""
    return NUMBER.findall('\n'.join(line for line in text.splitlines() if not line.strip().startswith('§')))


@pytest.mark.parametrize('name', LESSONS)
def test_a_lesson_prints_the_same_numbers_in_chinese(name, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)   # the plots go to runs/ here
    argv, english_sentences, chinese_sentence, _ = LESSONS[name]
    english = lesson_output(name, argv, 'en', monkeypatch, capsys)
    chinese = lesson_output(name, argv, 'zh', monkeypatch, capsys)
    assert numbers(chinese) == numbers(english) and len(numbers(english)) > 20
    assert CHINESE.search(chinese) and chinese_sentence in chinese and chinese_sentence not in english
    # the claim lines ('  [article §x] quote — verdict: finding') are claims.record's to translate
    prose = '\n'.join(line for line in chinese.splitlines() if not line.startswith('  ['))
    for said in english_sentences:
        assert said in english and said not in prose, said


@pytest.mark.parametrize('name', LESSONS)
def test_a_lessons_help_speaks_chinese(name, monkeypatch, capsys):
    chinese_help = LESSONS[name][3]
    with pytest.raises(SystemExit):
        lesson_output(name, ['--help'], 'zh', monkeypatch, capsys)
    said = capsys.readouterr().out
    assert chinese_help in said and '用法' in said, said
