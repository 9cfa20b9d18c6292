"""Six lessons in Chinese: temperature, article_trace, residual_highway, rnn_vs_attention,
layernorm_vs_batchnorm and attention_by_hand print the same numbers with --lang zh as in English,
in Chinese words.

Each lesson runs once per language in its smallest size; the numbers printed must be the same, in
the same order, the Chinese output must hold the given Chinese sentences and none of the English
sentences they translate, and --help shows the lesson's description in Chinese.
"""
import re

import pytest

from demos import article_trace, attention_by_hand, layernorm_vs_batchnorm, residual_highway, rnn_vs_attention, \
    temperature
from microtensor import i18n

NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')


@pytest.fixture(autouse=True)
def _english_afterwards(in_tmp_path):
    yield
    i18n.use('en')


def printed(lesson, argv, lang, capsys):
    """What `python -m demos.LESSON ARGV --lang LANG` prints."""
    capsys.readouterr()
    lesson.main([*argv, '--lang', lang])
    return capsys.readouterr().out


def numbers(text):
    """The numbers printed, in order; the articles' headings (whose English glosses Chinese leaves out) skipped."""
    return NUMBER.findall('\n'.join(line for line in text.splitlines() if not line.strip().startswith('§')))


def assert_same_numbers_in_chinese(lesson, argv, capsys, chinese_says, english_says):
    english, chinese = printed(lesson, argv, 'en', capsys), printed(lesson, argv, 'zh', capsys)
    assert numbers(chinese) == numbers(english) and len(numbers(english)) > 10
    for said in chinese_says:
        assert said in chinese and said not in english, said
    for said in english_says:
        assert said in english and said not in chinese, said
    return english, chinese


def help_of(lesson, lang, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit):
        lesson.main(['--help', '--lang', lang])
    return capsys.readouterr().out


@pytest.mark.parametrize('lesson, english, chinese', [
    (temperature, 'Lesson: temperature.', '课：温度。'),
])
def test_help_describes_the_lesson_in_chinese(lesson, english, chinese, capsys):
    zh, en = help_of(lesson, 'zh', capsys), help_of(lesson, 'en', capsys)
    assert chinese in zh and english not in zh and english in en


def test_temperature_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        temperature, ['--temperatures', '0.2', '1.5'], capsys,
        ['T 为温度', '熵（最大 1.099）', 'T 低时几乎全部概率都落在最大的 logit 上'],
        ['T the temperature', 'entropy (max', 'Low T puts almost all the mass'])
