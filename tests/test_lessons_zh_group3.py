"""Six lessons in Chinese: the same numbers as in English, other words.

Each lesson runs its quick options (those of tests/test_cli.py) once with --lang en and once with
--lang zh; the numbers printed must be the same, in the same order, and the Chinese run must say
its sentences in Chinese (the English ones gone).  Lessons: residual_variants, feedforward,
small_numbers, qkv_roles, scale_alternatives, heads_specialise.
"""
import importlib
import re

import pytest

from microtensor import i18n

NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')

# lesson: (quick options, sentences only the Chinese run says, English sentences it must not say)
LESSONS = {
    'residual_variants': (['--steps', '3', '--n-layers', '2', '--seed', '1'],
                          ['初始化时，2 层 Pre-LN EncoderLayer', '门（各通道：最小 / 平均 / 最大）', '训练后'],
                          ["table of residual variants", 'narrows the F road: the smaller alpha',
                           'before training', 'learns to copy', "The largest change of one channel"]),
    'feedforward': (['--steps', '3', '--copy-steps', '4', '--seeds', '2'],
                    ['去掉激活函数的 FeedForward(8, 32)', '2 个 LayerNorm', '最终损失 ReLU', '每个 h 的参数量都一样'],
                    ['without its activation vs', 'mean squared error over the last', 'Lower loss:',
                     'Every h gives the same count', 'share of the layer']),
}


def numbers(text, lesson):
    """The numbers printed, in order.  Skipped: the articles' headings (whose English glosses are left
    out in Chinese) and the shared remark of a run too short to learn ("LESSON: this run did not
    learn: ..."), which says its numbers in another order in Chinese (tests/test_tour_in_chinese.py
    checks it)."""
    lines = [line for line in text.splitlines()
             if not line.strip().startswith('§') and not line.startswith((f'{lesson}:', f'{lesson}：'))]
    return NUMBER.findall('\n'.join(lines))


def run(lesson, argv, lang, capsys):
    module = importlib.import_module(f'demos.{lesson}')
    capsys.readouterr()
    try:
        module.main([*argv, '--lang', lang])
    finally:
        i18n.use('en')
    return capsys.readouterr().out


@pytest.mark.parametrize('lesson', LESSONS)
def test_a_lesson_prints_the_same_numbers_in_chinese(lesson, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)            # the plots go to runs/ under the working folder
    monkeypatch.delenv('MICROTENSOR_LANG', raising=False)
    argv, chinese_says, english_says = LESSONS[lesson]
    english = run(lesson, argv, 'en', capsys)
    chinese = run(lesson, argv, 'zh', capsys)
    assert numbers(chinese, lesson) == numbers(english, lesson) and len(numbers(english, lesson)) > 10
    for said in chinese_says:
        assert said in chinese and said not in english, said
    for said in english_says:
        assert said in english and said not in chinese, said
