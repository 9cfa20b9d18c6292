"""Three lessons in Chinese: encoder_only_mlm, attention_maps and train_gpt print the same numbers with --lang zh
as in English, in Chinese words.

Each lesson runs once per language in its smallest size; the numbers printed must be the same, in
the same order, the Chinese output must hold the given Chinese sentences and none of the English
sentences they translate, and --help shows the lesson's description in Chinese.
"""
import pytest

from demos import attention_maps, encoder_only_mlm
from microtensor import i18n
from tests import test_lessons_zh_group1 as group1
from tests.test_lessons_zh_group1 import help_of

# report.check_learned's remark on a run that did not learn (the smallest runs here do not) names its two losses in
# the order each language reads best, so its numbers are compared apart from the lesson's
NOT_LEARNED = ('this run did not learn', '这次运行没有学到东西')
numbers_of_the_lesson = group1.numbers


def numbers(text):
    remarks = [line for line in text.splitlines() if any(said in line for said in NOT_LEARNED)]
    rest = '\n'.join(line for line in text.splitlines() if line not in remarks)
    return (*numbers_of_the_lesson(rest), sorted(group1.NUMBER.findall('\n'.join(remarks))))


def assert_same_numbers_in_chinese(lesson, argv, capsys, chinese_says, english_says, monkeypatch):
    monkeypatch.setattr(group1, 'numbers', numbers)
    return group1.assert_same_numbers_in_chinese(lesson, argv, capsys, chinese_says, english_says)


@pytest.fixture(autouse=True)
def _english_afterwards(in_tmp_path):
    yield
    i18n.use('en')


@pytest.mark.parametrize('lesson, english, chinese', [
    (encoder_only_mlm, 'Lesson: an encoder-only (BERT-style) model', '课：一个 encoder-only（BERT 式）模型'),
    (attention_maps, 'reversal is an anti-diagonal', '反转是一条反对角线'),
])
def test_help_describes_the_lesson_in_chinese(lesson, english, chinese, capsys):
    zh, en = help_of(lesson, 'zh', capsys), help_of(lesson, 'en', capsys)
    assert chinese in zh and english not in zh and english in en


def test_encoder_only_mlm_in_chinese(capsys, monkeypatch):
    assert_same_numbers_in_chinese(
        encoder_only_mlm, ['--steps', '2', '--batch-size', '2', '--n-test', '10', '--seeds', '2'], capsys,
        ['BERT 的破坏方式', '选中位置占全部位置', '恰好抽到原 token 的随机替换', 'logits 从损失得到梯度的位置',
         'EncoderOnly 训练 2 步', 'MLM 损失', '显示为随机 token', '前半：搭档在右边', '随机猜是 10%',
         '对角线以上（未来的键）', '全部选中'],
        ["BERT's corruption", 'chosen of all positions', 'a random token equal to the original',
         'Positions whose logits get a gradient', 'EncoderOnly trained 2 steps', 'MLM loss', 'shown as a random token',
         'first half: partner to the right', 'Chance is 10%', 'above the diagonal (future keys)', 'all chosen'],
        monkeypatch)


def test_attention_maps_in_chinese(capsys, monkeypatch):
    assert_same_numbers_in_chinese(
        attention_maps, ['--steps', '2', '--gpt-steps', '2', '--seeds', '2'], capsys,
        ['1. 反转 6 个数字', '反对角线 s = L-1-t 上的权重', '每个输出位置上权重最高的源位置', '反转需要',
         '2 个种子：在每个 t 上都落在反对角线的头', '2. 字符级 GPT 训练 2 步后', '落在前一个字符', '（前一个字符份额最大），逐个查询',
         '回看距离', '2 个种子：最大的前一个字符份额'],
        ['1. Reversing 6 digits', 'weight on the anti-diagonal', 'highest-weight source position', 'reversal wants',
         'from 2 seeds: heads on the anti-diagonal', '2. The char GPT after 2 steps', 'on the previous char',
         '(the largest previous-char share), query by query', 'distance back', 'from 2 seeds: the largest'],
        monkeypatch)
