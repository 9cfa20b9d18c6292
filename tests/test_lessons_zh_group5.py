"""train_xor, softmax_saturation and train_reverse in Chinese: the same numbers as in English,
Chinese words, none of the English sentences that were translated, and --help in Chinese."""
import importlib
import re

import pytest

from microtensor import i18n

NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:e[-+]?\d+)?')
CLAIM = re.compile(r'^  \[')   # a claim's line: "  [the deep dive §6.1] «quote» — verdict: finding"

# lesson: (the quick options, English sentences it prints, what the Chinese edition says instead)
LESSONS = {
    'train_xor': (
        ['--steps', '60'],
        ['mean loss', 'predictions [', 'loss 0.'],
        ['平均损失', '预测 [', '损失 0.']),
    'softmax_saturation': (
        ['--d-ks', '4', '64', '--batch-size', '4', '--seq-len', '8', '--train-steps', '10', '--seeds', '2'],
        ['rows cut off', 'every d_k behaves alike', "The attention article's table", 'Mean squared error',
         'lowest in the second half'],
        ['被切断的行', '每个 d_k 表现都一样', '注意力篇的表格', '均方误差', '后半程的最低值']),
}

pytestmark = pytest.mark.usefixtures('in_tmp_path')  # lessons write plots under runs/ of the working folder


@pytest.fixture
def speak(capsys):
    """speak(name, argv, lang): what lesson `name`'s main(argv + --lang lang) prints."""
    def run(name, argv, lang):
        capsys.readouterr()
        importlib.import_module(f"demos.{name}").main(argv + ['--lang', lang])
        return capsys.readouterr().out
    yield run
    i18n.use('en')


def numbers(text):
    """The numbers printed, in order, without the articles' headings (their English glosses are left out
    in Chinese); then those of the claims' findings (a translation may put a sentence's figures in another
    order), sorted."""
    lines = [line for line in text.splitlines() if not line.strip().startswith('§')]
    claims = [line for line in lines if CLAIM.match(line)]
    return (NUMBER.findall('\n'.join(line for line in lines if not CLAIM.match(line))),
            sorted(NUMBER.findall('\n'.join(claims))))


@pytest.mark.parametrize('name', LESSONS)
def test_a_lesson_prints_the_same_numbers_in_chinese(name, speak):
    argv, english_says, chinese_says = LESSONS[name]
    english, chinese = speak(name, argv, 'en'), speak(name, argv, 'zh')
    assert numbers(chinese) == numbers(english) and len(numbers(english)[0]) > 10
    for said in english_says:
        assert said in english and said not in chinese, said
    for said in chinese_says:
        assert said in chinese and said not in english, said


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
