"""Lessons on positions, the residual stream, the FFN as memory, dependency span, the score matrix's
size and the PyTorch bridge, in Chinese: the same numbers as in English, Chinese words, and none of
the English sentences that were translated."""
import importlib
import re

import pytest

from microtensor import i18n

NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')

# lesson: (the quick options, English sentences it prints, what the Chinese edition says instead)
LESSONS = {
    'positional_add_vs_concat': (
        ['--steps', '2'],
        ['the dot product depends on the distance k only', "Add's advantage is the cost above", 'test accuracy'],
        ['点积只依赖距离 k', '相加的优势就是上面的代价', '测试准确率']),
    'residual_stream': (
        ['--steps', '2'],
        ["'100% kept' is wrong as a measure", "Deeper plain nets do worse than shallower ones", 'learns?'],
        ['“100% 保留”作为度量是错的', '更深的普通网络连在训练数据上都比浅的差', '学会了？', '图已保存到']),
    'ffn_memory': (
        ['--facts', '8', '--steps', '2'],
        ['Sum of the four known terms', 'Shapes through the module', 'facts per 100 parameters'],
        ['四个已知项之和', '经过模块的形状', '每 100 个参数存的事实']),
    'dependency_span': (
        ['--steps', '2'],
        ['since its path from the last position to the first is one step at any k', 'RNN: test accuracy'],
        ['从最后一个位置到第一个位置的路径都只有一步', 'RNN：测试准确率', '种子 0']),
    'score_matrix_size': (
        ['--n-max', '128'],
        ["the article's number holds", 'scores (one head)', 'patch vectors (tokens x numbers)'],
        ['文章的数字成立', '分数（一个头）', '小方块向量']),
    'compare_with_torch': (
        ['--d-model', '8', '--n-layers', '1', '--n-heads', '2', '--seq-len', '5'],
        ['1. The tiny GPT, float32', 'which shrinks with the precision; a mistake would not'],
        ['1. 小 GPT，float32', '它随精度提高而缩小；错误则不会']),
}

pytestmark = pytest.mark.usefixtures('in_tmp_path')  # lessons write plots under runs/ of the working folder


@pytest.fixture
def speak(capsys):
    """speak(name, argv, lang): what lesson `name`'s main(argv + --lang lang) prints."""
    def run(name, argv, lang):
        importlib.import_module(f"demos.{name}").main(argv + ['--lang', lang])
        return capsys.readouterr().out
    yield run
    i18n.use('en')


def numbers(text):
    """The numbers printed, in order, without the articles' headings (their English glosses are left
    out in Chinese)."""
    return NUMBER.findall('\n'.join(line for line in text.splitlines() if not line.strip().startswith('§')))


@pytest.mark.parametrize('name', LESSONS)
def test_a_lesson_prints_the_same_numbers_in_chinese(name, speak):
    if name == 'compare_with_torch':
        pytest.importorskip('torch', reason="compare_with_torch needs torch (pip install 'microtensor[torch]')")
    argv, english_says, chinese_says = LESSONS[name]
    english, chinese = speak(name, argv, 'en'), speak(name, argv, 'zh')
    assert numbers(chinese) == numbers(english) and len(numbers(english)) > 10
    for said in english_says:
        assert said in english and said not in chinese, said
    for said in chinese_says:
        assert said in chinese, said


@pytest.mark.parametrize('name', LESSONS)
def test_a_lessons_help_speaks_chinese(name, capsys):
    lesson = importlib.import_module(f"demos.{name}")
    chinese = i18n.translator('zh')(lesson.__doc__)
    try:
        with pytest.raises(SystemExit):
            lesson.main(['--help', '--lang', 'zh'])
    finally:
        i18n.use('en')
    out = capsys.readouterr().out
    assert chinese != lesson.__doc__ and chinese.splitlines()[0] in out
    assert lesson.__doc__.splitlines()[0] not in out


def test_a_usage_error_of_score_matrix_size_speaks_chinese(capsys):
    from demos import score_matrix_size
    try:
        with pytest.raises(SystemExit) as exit_:
            score_matrix_size.main(['--n-max', '9000', '--lang', 'zh'])
    finally:
        i18n.use('en')
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and '--n-max 9000：这一课数的是 n = 128, 256' in err and 'so at most' not in err, err
