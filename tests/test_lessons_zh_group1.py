"""Six lessons in Chinese: temperature, article_trace, residual_highway, rnn_vs_attention,
layernorm_vs_batchnorm and attention_by_hand print the same numbers with --lang zh as in English,
in Chinese words.

Each lesson runs once per language in its smallest size; the numbers printed must be the same, in
the same order, the Chinese output must hold the given Chinese sentences and none of the English
sentences they translate, and --help shows the lesson's description in Chinese.
"""
import math
import re

import pytest

from demos import article_trace, attention_by_hand, layernorm_vs_batchnorm, residual_highway, rnn_vs_attention, \
    temperature
from microtensor import i18n

NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')
CLAIM = re.compile(r'^  \[')   # a claim's line: "  [the attention article §2.4.2] «quote» — verdict: finding"


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
    """The numbers printed, in order, the articles' headings (whose English glosses Chinese leaves out) skipped;
    then those of the claims' findings (a translation may put a sentence's figures in another order), sorted."""
    lines = [line for line in text.splitlines() if not line.strip().startswith('§')]
    claims = [line for line in lines if CLAIM.match(line)]
    return (NUMBER.findall('\n'.join(line for line in lines if not CLAIM.match(line))),
            sorted(NUMBER.findall('\n'.join(claims))))


def assert_same_numbers_in_chinese(lesson, argv, capsys, chinese_says, english_says):
    english, chinese = printed(lesson, argv, 'en', capsys), printed(lesson, argv, 'zh', capsys)
    assert numbers(chinese) == numbers(english) and len(numbers(english)[0]) > 10
    # the lesson's own words; the claims' findings are demos/claims.py's to put into the reader's language
    english, chinese = (''.join(line for line in text.splitlines(True) if not CLAIM.match(line))
                        for text in (english, chinese))
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
    (article_trace, 'recomputed (the deep dive', '重新算一遍（深入篇'),
    (residual_highway, 'the residual "+1" highway', '残差的“+1”高速公路'),
    (rnn_vs_attention, 'Lesson: path length', '课：路径长度'),
    (layernorm_vs_batchnorm, 'LayerNorm normalises each token on its own', '层归一化（LayerNorm）独自归一化每个 token'),
    (attention_by_hand, 'Lesson: attention by hand', '课：手算注意力'),
])
def test_help_describes_the_lesson_in_chinese(lesson, english, chinese, capsys):
    zh, en = help_of(lesson, 'zh', capsys), help_of(lesson, 'en', capsys)
    assert chinese in zh and english not in zh and english in en


def test_temperature_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        temperature, ['--temperatures', '0.2', '1.5'], capsys,
        ['T 为温度', '熵（最大 1.099）', 'T 低时几乎全部概率都落在最大的 logit 上'],
        ['T the temperature', 'entropy (max', 'Low T puts almost all the mass'])


def test_temperature_with_logits_whose_quotient_overflows_in_both_languages(capsys):
    """--logits 1e308 1e308 0 --temperatures 0.5: 1e308 / 0.5 overflows float64, yet the table's row is the
    true softmax, [0.5, 0.5, 0], and its entropy, ln 2, in English and in Chinese: no nan."""
    english, chinese = assert_same_numbers_in_chinese(
        temperature, ['--logits', '1e308', '1e308', '0', '--temperatures', '0.5'], capsys,
        ['熵（最大 1.099）'], ['entropy (max 1.099)'])
    for text in (english, chinese):
        assert 'nan' not in text.lower().split()
        assert [line.split() for line in text.splitlines() if line.startswith('0.5 ')] == \
            [['0.5', '0.500', '0.500', '0.000', f"{math.log(2):.3f}"]]


def test_article_trace_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        article_trace, [], capsys,
        ['1. 正弦位置编码（§7.2）', '笔误', '用公式的 PE', '文章的 X0 与公式的 PE 一致', '头 2：这里算出的 A',
         '最大差异：', '头 1 近乎均匀', '每个词收到的平均权重', '6. 经过文章尺寸的 2 层编码器时的形状',
         'FFN 隐藏层 1 (3, 48), 第 1 层 (3, 12)'],
        ['1. Sinusoidal PE', 'typo', 'with the formula PE', "The article's X0 matches", 'head 2: A = softmax',
         'largest difference:', 'Head 1 is near uniform', 'Mean weight each word receives', '6. Shapes through',
         'FFN hidden 1 (3, 48), layer 1 (3, 12)'])


def test_residual_highway_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        residual_highway, ['--n-layers', '4', '--d-model', '8'], capsys,
        ['4 个 EncoderLayer，d_model = 8', 'Pre-LN，有残差', 'Post-LN，无残差', '+1 份额 (Pre)', '第一层 / 最后一层：',
         '由 ResidualProbe 测得', '秩坍缩：'],
        ['4 EncoderLayers, d_model = 8', 'Pre-LN, residual', 'Post-LN, no residual', '+1 share (Pre)',
         'first / last layer:', 'measured by ResidualProbe', 'Rank collapse:'])


def test_residual_highway_says_in_chinese_that_the_heads_must_divide_the_width(capsys):
    with pytest.raises(SystemExit):
        residual_highway.main(['--d-model', '7', '--lang', 'zh'])
    assert '--n-heads 2 必须整除 --d-model 7（每个头分到 d_model / n_heads 维）' in capsys.readouterr().err


def test_rnn_vs_attention_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        rnn_vs_attention, ['--seq-len', '8', '--batch-size', '2'], capsys,
        ['深入篇的梯度路径', '随距离 n - t 的变化', '从距离 1 到 7：RNN x', '按几何级数衰减'],
        ["The deep dive's gradient path", 'by distance n - t', 'from distance 1 to 7: RNN x', 'fades geometrically'])


def test_rnn_vs_attention_says_in_chinese_that_the_width_must_be_even(capsys):
    with pytest.raises(SystemExit):
        rnn_vs_attention.main(['--d-model', '7', '--lang', 'zh'])
    assert '--d-model 必须是偶数（2 个注意力头），得到的是 7' in capsys.readouterr().err


def test_layernorm_vs_batchnorm_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        layernorm_vs_batchnorm, ['--d-model', '4', '--batch-sizes', '2', '3'], capsys,
        ['深入篇的例子（§5.2）', '在不同同伴中归一化', '只有 x（批次大小 1）', 'ValueError（见下文）',
         'eval 模式下的 BatchNorm', '最大变化：LayerNorm', '批次大小 N', '同一个 token 在每个批次中的输出都不同'],
        ["The deep dive's example", 'normalised in different company', 'x alone (batch of 1)', 'ValueError (below)',
         'BatchNorm in eval mode', 'largest change of', 'batch size N', 'comes out differently in every batch'])


def test_attention_by_hand_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        attention_by_hand, ['--samples', '200'], capsys,
        ['1. 我 爱 你（深入篇的例子', '有 6 个印出的权重不是 softmax(S / 2)', '所以 我 把 66% 留给自己', '正文提到的单元格',
         '2. 硬注意力与软注意力', '硬：onehot(argmax S) V', '3. 各章的小数字', '不可能：大于 1', '每个 d_k 抽样 200 次'],
        ["(the deep dive's example", 'printed weights are not softmax', 'So 我 keeps 66%', 'The cells the text names',
         '2. Hard vs soft attention', 'hard: onehot(argmax S) V', "3. The chapters' small numbers", 'IMPOSSIBLE',
         '200 samples per d_k'])
