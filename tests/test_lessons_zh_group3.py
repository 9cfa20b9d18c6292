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
# small_numbers times its part 4 (run times differ from run to run): its numbers are compared before it.
TIMED_FROM = {'small_numbers': '\n4. '}
LESSONS = {
    'residual_variants': (['--steps', '3', '--n-layers', '2', '--seed', '1'],
                          ['初始化时，2 层 Pre-LN EncoderLayer', '门（各通道：最小 / 平均 / 最大）', '训练后'],
                          ["table of residual variants", 'narrows the F road: the smaller alpha',
                           'before training', 'learns to copy', "The largest change of one channel"]),
    'feedforward': (['--steps', '3', '--copy-steps', '4', '--seeds', '2'],
                    ['去掉激活函数的 FeedForward(8, 32)', '2 个 LayerNorm', '最终损失 ReLU', '每个 h 的参数量都一样'],
                    ['without its activation vs', 'mean squared error over the last', 'Lower loss:',
                     'Every h gives the same count', 'share of the layer']),
    'small_numbers': (['--seq-len', '8', '--n-layers', '3', '--repeats', '1', '--seed', '1'],
                      ['梯度每层缩小的倍数', '文章的 0.9', '文章说“压缩了将近 6 倍”（约 6 倍）：实际是', '批均值的标准差',
                       '自注意力（4 个头）', '最长运算链'],
                      ["The gradient's shrink per layer", "the article's arithmetic holds", 'values per statistic',
                       'as the article counts', 'one step at a time', 'longest chain of ops']),
    'qkv_roles': (['--steps', '3', '--lookup-steps', '4', '--seed', '1'],
                  ['不做投影', '测试准确率', '查出存放在某个地址上的内容', '文章的公式是错的', '查询路径的参数量',
                   '其他词   0.050'],
                  ["Each word's largest weight is itself", 'Copy the previous token', 'look up the content stored',
                   "The article's formula is wrong", 'counted on the modules', 'The weights sum to']),
    'scale_alternatives': (['--rows', '3', '--steps', '4', '--seed', '1'],
                           ['30 折合多少个标准差', '缩放的替代方案', '完全不缩放', '一行的平均跨度', '两个说法都成立'],
                           ['standard deviations: about', 'Alternatives to the scale', 'with no scale at all',
                            'rule of thumb for spotting', 'both claims hold']),
    'heads_specialise': (['--steps', '3', '--seed', '1'],
                         ['我 爱 你 的三个头', '平均熵（nats）', '说出每个词元的两个邻居', '前一个：准确率'],
                         ['Every row sums to 1.00', 'Name both neighbours', 'previous: acc',
                          'One head has to look both ways']),
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
    untimed = [text.split(TIMED_FROM[lesson])[0] if lesson in TIMED_FROM else text for text in (english, chinese)]
    assert numbers(untimed[1], lesson) == numbers(untimed[0], lesson) and len(numbers(untimed[0], lesson)) > 10
    for said in chinese_says:
        assert said in chinese and said not in english, said
    for said in english_says:
        assert said in english and said not in chinese, said


@pytest.mark.parametrize('lesson', LESSONS)
def test_a_lessons_help_speaks_chinese(lesson, monkeypatch, capsys):
    monkeypatch.delenv('MICROTENSOR_LANG', raising=False)
    module = importlib.import_module(f'demos.{lesson}')
    with pytest.raises(SystemExit):
        run(lesson, ['--help'], 'zh', capsys)
    said = capsys.readouterr().out
    first = module.__doc__.splitlines()[0]
    assert said.startswith('用法：') and '课程：' in said and first not in said, said
    assert '随机种子' in said or '步数' in said, said       # the options' helps too
    assert f'python -m demos.{lesson}' in said               # commands stay as they are
