"""Three lessons in Chinese: encoder_only_mlm, attention_maps and train_gpt print the same numbers with --lang zh
as in English, in Chinese words.

Each lesson runs once per language in its smallest size; the numbers printed must be the same, in
the same order, the Chinese output must hold the given Chinese sentences and none of the English
sentences they translate, and --help shows the lesson's description in Chinese.
"""
import pytest

from demos import encoder_only_mlm
from microtensor import i18n
from tests.test_lessons_zh_group1 import assert_same_numbers_in_chinese, help_of


@pytest.fixture(autouse=True)
def _english_afterwards(in_tmp_path):
    yield
    i18n.use('en')


@pytest.mark.parametrize('lesson, english, chinese', [
    (encoder_only_mlm, 'Lesson: an encoder-only (BERT-style) model', '课：一个 encoder-only（BERT 式）模型'),
])
def test_help_describes_the_lesson_in_chinese(lesson, english, chinese, capsys):
    zh, en = help_of(lesson, 'zh', capsys), help_of(lesson, 'en', capsys)
    assert chinese in zh and english not in zh and english in en


def test_encoder_only_mlm_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        encoder_only_mlm, ['--steps', '2', '--batch-size', '2', '--n-test', '10', '--seeds', '2'], capsys,
        ['BERT 的破坏方式', '选中位置占全部位置', '恰好抽到原 token 的随机替换', 'logits 从损失得到梯度的位置',
         'EncoderOnly 训练 2 步', 'MLM 损失', '显示为随机 token', '前半：搭档在右边', '随机猜是 10%',
         '对角线以上（未来的键）', '全部选中'],
        ["BERT's corruption", 'chosen of all positions', 'a random token equal to the original',
         'Positions whose logits get a gradient', 'EncoderOnly trained 2 steps', 'MLM loss', 'shown as a random token',
         'first half: partner to the right', 'Chance is 10%', 'above the diagonal (future keys)', 'all chosen'])
