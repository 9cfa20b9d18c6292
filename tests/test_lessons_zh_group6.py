"""Three lessons in Chinese: encoder_only_mlm, attention_maps and train_gpt print the same numbers with --lang zh
as in English, in Chinese words.

Each lesson runs once per language in its smallest size; the numbers printed must be the same, in
the same order, the Chinese output must hold the given Chinese sentences and none of the English
sentences they translate, and --help shows the lesson's description in Chinese.
"""
import pytest

from demos import attention_maps, encoder_only_mlm, train_gpt
from microtensor import i18n
from tests.test_lessons_zh_group1 import CLAIM, NUMBER, help_of
from tests.test_lessons_zh_group1 import numbers as numbers_of_the_lesson

# report.check_learned's remark on a run that did not learn (the smallest runs here do not) names its two losses in
# the order each language reads best, so its numbers are compared apart from the lesson's; the training's progress
# lines carry its speed (tok/s), a run-time figure
NOT_LEARNED = ('this run did not learn', '这次运行没有学到东西')


def numbers(text):
    lines = [line for line in text.splitlines() if 'tok/s' not in line]
    remarks = [line for line in lines if any(said in line for said in NOT_LEARNED)]
    rest = '\n'.join(line for line in lines if line not in remarks)
    return (*numbers_of_the_lesson(rest), sorted(NUMBER.findall('\n'.join(remarks))))


def printed(lesson, argv, lang, capsys):
    """What `python -m demos.LESSON ARGV --lang LANG` prints; argv may be a function of the language."""
    capsys.readouterr()
    lesson.main([*(argv(lang) if callable(argv) else argv), '--lang', lang])
    return capsys.readouterr().out


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


@pytest.fixture(autouse=True)
def _english_afterwards(in_tmp_path):
    yield
    i18n.use('en')


@pytest.mark.parametrize('lesson, english, chinese', [
    (encoder_only_mlm, 'Lesson: an encoder-only (BERT-style) model', '课：一个 encoder-only（BERT 式）模型'),
    (attention_maps, 'reversal is an anti-diagonal', '反转是一条反对角线'),
    (train_gpt, 'Lesson: train a character-level GPT', '课：在任意文本上训练一个字符级 GPT'),
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


def test_attention_maps_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        attention_maps, ['--steps', '2', '--gpt-steps', '2', '--seeds', '2'], capsys,
        ['attention_maps（反转模型）：', '1. 反转 6 个数字', '反对角线 s = L-1-t 上的权重', '每个输出位置上权重最高的源位置', '反转需要',
         '2 个种子：在每个 t 上都落在反对角线的头', '2. 字符级 GPT 训练 2 步后', '落在前一个字符', '（前一个字符份额最大），逐个查询',
         '回看距离', '2 个种子：最大的前一个字符份额'],
        ['attention_maps (the reversal model): ', '1. Reversing 6 digits', 'weight on the anti-diagonal', 'highest-weight source position', 'reversal wants',
         'from 2 seeds: heads on the anti-diagonal', '2. The char GPT after 2 steps', 'on the previous char',
         '(the largest previous-char share), query by query', 'distance back', 'from 2 seeds: the largest'])


TINY = ['--steps', '4', '--log-every', '2', '--eval-every', '2', '--ckpt-every', '2', '--d-model', '16', '--n-layers',
        '1', '--n-heads', '2', '--context', '16', '--batch-size', '2', '--sample-length', '12']


def test_train_gpt_in_chinese(capsys):
    assert_same_numbers_in_chinese(
        train_gpt, lambda lang: [*TINY, '--seeds', '2', '--out', f'gpt_{lang}'], capsys,
        ['这首小诗：', '步     2/4  损失', '第 2 步：验证损失', '个训练字符和', '个参数，在 cpu 上；检查点：', 'unigram 基线（一个只数字符的模型）',
         '平均训练损失', "'Twinkle' 的续写", '--- 贪心', '最佳验证损失', 'T = 0.2 跟随贪心'],
        ['the poem: ', 'step     2/4  loss', 'step 2: validation loss', 'training and', 'parameters on cpu; checkpoint:',
         'unigram baseline (a model', 'mean training loss', "Continuations of 'Twinkle'", '--- greedy',
         'best validation loss', 'T = 0.2 follows greedy'])


def test_train_gpt_stops_resumes_and_samples_in_chinese(capsys):
    def run(lang, *argv):
        capsys.readouterr()
        train_gpt.main([*argv, '--out', f'gpt_{lang}', '--lang', lang])
        return capsys.readouterr().out
    for lang in ('en', 'zh'):
        stopped = run(lang, *TINY, '--stop-after', '2')
        assert ('stopped at step 2; continue with --resume' in stopped) == (lang == 'en')
        assert ('停在第 2 步；用 --resume 继续' in stopped) == (lang == 'zh')
        resumed = run(lang, *TINY, '--steps', '6', '--resume')
        assert ("the checkpoint's run was 4 steps long; the schedule now runs to 6" in resumed) == (lang == 'en')
        assert ('检查点的运行长 4 步；调度现在一直到 6 步' in resumed) == (lang == 'zh')
        assert (f'从 gpt_{lang}/ckpt.npz 的第 2 步继续' in resumed) == (lang == 'zh')
        again = run(lang, *TINY)
        assert ('开始新的运行：' in again) == (lang == 'zh') and ('starting a new run:' in again) == (lang == 'en')
        sampled = run(lang, '--sample', f'gpt_{lang}/ckpt.npz', '--sample-length', '5')
        assert ('个参数的 GPT，训练了 4 步' in sampled) == (lang == 'zh')
        assert ("'\\n' 的续写：" in sampled) == (lang == 'zh') and ('Continuations of' in sampled) == (lang == 'en')


def test_train_gpt_refuses_to_resume_in_chinese(capsys):
    train_gpt.main([*TINY, '--sample-length', '0', '--out', 'gpt'])
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        train_gpt.main([*TINY, '--sample-length', '0', '--out', 'gpt', '--resume', '--lr', '0.01', '--lang', 'zh'])
    said = capsys.readouterr()
    assert ('是用别的设置做的。--lr：检查点里是 0.003，现在是 0.01。要从它继续，请给出检查点的设置（--lr 0.003）'
            in f"{said.out}{said.err}{refused.value.code}")


def test_train_gpt_says_in_chinese_what_the_text_and_prompt_cannot_do(capsys):
    for argv, says in ((['--prompt', 'Zq#'], "提示里有文本从未用过的字符：['#', 'Z', 'q']"),
                       (['--context', '600'], '文本的训练部分有 493 个字符；--context 为 600 至少需要这么多')):
        with pytest.raises(SystemExit):
            train_gpt.main([*argv, '--lang', 'zh'])
        assert says in capsys.readouterr().err
