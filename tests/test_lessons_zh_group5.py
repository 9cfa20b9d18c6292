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
    'train_reverse': (
        ['--steps', '60', '--length', '3', '--n-test', '20', '--d-model', '16', '--n-heads', '2', '--seeds', '2',
         '--lr', '0.02'],  # learns: a run that does not adds
        # report.py's "did not learn" remark, whose figures Chinese puts in another order
        ['test sequences of length 3', 'token accuracy', 'whole sequences', 'output position', 'greedy decode'],
        ['条长度为 3 的测试序列', 'token 准确率', '整条序列', '输出位置', '贪心解码']),
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


@pytest.mark.parametrize('argv, english, chinese', [
    (['--n-test', '900', '--length', '3'], 'is too many for --length 3', '--n-test 900 对 --length 3 来说太多了'),
    (['--n-heads', '3'], 'must divide --d-model 64', '--n-heads 3 必须整除 --d-model 64'),
])
def test_a_usage_error_of_train_reverse_speaks_chinese(argv, english, chinese, capsys):
    from demos import train_reverse
    for lang, says, not_says in (('en', english, chinese), ('zh', chinese, english)):
        try:
            with pytest.raises(SystemExit) as exit_:
                train_reverse.main(argv + ['--lang', lang])
        finally:
            i18n.use('en')
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and says in err and not_says not in err, err
