"""The learner's language: how it is chosen, and the catalogs that gettext reads.

The compiled .mo files are committed (pip does not compile a .po), so each must say exactly what
its .po says; a translation keeps every {field} of its English template, so that .format() fills it.
"""
import gettext
import re
import string
import subprocess
import sys

import pytest

from microtensor import i18n


@pytest.mark.parametrize('explicit, environ, expected', [
    (None, {}, 'en'),
    ('zh', {'MICROTENSOR_LANG': 'en', 'LANG': 'en_US.UTF-8'}, 'zh'),          # --lang first
    (None, {'MICROTENSOR_LANG': 'zh', 'LANG': 'en_US.UTF-8'}, 'zh'),           # then MICROTENSOR_LANG
    (None, {'LANG': 'zh_CN.UTF-8'}, 'zh'),                                     # then the locale
    (None, {'LANGUAGE': 'fr:zh_TW', 'LANG': 'en_US.UTF-8'}, 'zh'),             # LANGUAGE: a list, first known
    (None, {'LC_ALL': 'C', 'LANG': 'zh_CN.UTF-8'}, 'en'),                      # the first variable set decides
    (None, {'LC_MESSAGES': 'zh_CN', 'LANG': 'en_GB'}, 'zh'),
    (None, {'LANGUAGE': '', 'LANG': 'fr_FR'}, 'en'),                           # no catalog: English
])
def test_language_order(explicit, environ, expected):
    assert i18n.language(explicit, environ) == expected


@pytest.mark.parametrize('explicit, environ', [('fr', {}), (None, {'MICROTENSOR_LANG': 'klingon'})])
def test_unknown_language_is_refused_naming_the_source(explicit, environ):
    with pytest.raises(ValueError, match='--lang|MICROTENSOR_LANG') as error:
        i18n.language(explicit, environ)
    assert 'en, zh' in str(error.value)


def _po(lang):
    pofile = pytest.importorskip('babel.messages.pofile', reason='the .po reader is babel (the test extra has it)')
    with open(i18n.catalog_path(lang, 'po'), 'rb') as f:
        return pofile.read_po(f, locale=lang)


@pytest.mark.parametrize('lang', i18n.LANGUAGES[1:])
def test_each_mo_says_what_its_po_says(lang):
    po = {}
    for m in _po(lang):
        if isinstance(m.id, tuple):   # a plural: gettext keeps each form under (singular, index)
            po.update({(m.id[0], i): form for i, form in enumerate(m.string)})
        elif m.id:
            po[m.id] = m.string
    with open(i18n.catalog_path(lang, 'mo'), 'rb') as f:
        mo = {k: v for k, v in gettext.GNUTranslations(f)._catalog.items() if k}
    assert po == mo, "the .mo is stale: run `python -m microtensor.i18n compile` and commit both files"


def _fields(template, percent=False):
    """The {fields} of a template; percent: its %-placeholders (argparse's messages are python-format)."""
    if percent:
        return sorted(re.findall(r"%(?:\(\w+\))?[sdr]", template))
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name is not None)


@pytest.mark.parametrize('lang', i18n.LANGUAGES[1:])
def test_translations_are_complete_and_keep_their_fields(lang):
    for message in _po(lang):
        if not message.id:
            continue
        assert message.string, f"{lang}: no translation for {message.id!r}"
        assert not message.fuzzy, f"{lang}: {message.id!r} is marked fuzzy (unreviewed)"
        percent = 'python-format' in message.flags
        singular, forms = (message.id[0], message.string) if message.pluralizable else (message.id, [message.string])
        for form in forms:
            assert _fields(form, percent) == _fields(singular, percent), \
                f"{lang}: the translation of {message.id!r} must keep the fields {_fields(singular, percent)}"


def test_lesson_help_speaks_the_chosen_language():
    help_zh = subprocess.run([sys.executable, '-m', 'demos.train_xor', '--lang', 'zh', '--help'],
                             capture_output=True, text=True, check=True).stdout
    help_en = subprocess.run([sys.executable, '-m', 'demos.train_xor', '--help'],
                             capture_output=True, text=True, check=True).stdout
    assert '输出的语言' in help_zh and '输出的语言' not in help_en
    assert 'the language of the output' in help_en


def test_a_bad_language_is_a_usage_error_not_a_traceback():
    result = subprocess.run([sys.executable, '-m', 'demos.train_xor', '--lang', 'fr'],
                            capture_output=True, text=True)
    assert result.returncode != 0 and 'Traceback' not in result.stderr and 'en, zh' in result.stderr


def _fenced(document):
    """Every fenced block's text (```bash, ```python, ...) in a document of the repository."""
    import os
    import re
    import textwrap
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), document),
              encoding='utf-8') as f:
        return [textwrap.dedent(block).strip() for block in re.findall(r"```[a-z]*\n(.*?)```", f.read(), re.S)]


def test_the_chinese_readme_gives_the_english_commands_and_code():
    """README.zh.md's blocks are the English README's own, character for character: the two set-up
    commands, the first look and the workbook's commands are the same in both editions."""
    english, chinese = _fenced('README.md'), _fenced('README.zh.md')
    assert len(chinese) >= 4
    for block in chinese:
        assert block in english, f"README.zh.md has a block that README.md does not:\n{block}"
    for command in ("python3 -m venv .venv && .venv/bin/pip install -e '.[demos]' && .venv/bin/python -m demos",
                    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest"):
        assert command in english and command in chinese


def test_the_two_readmes_link_to_each_other():
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, 'README.md'), encoding='utf-8') as f:
        english_top = ''.join(f.readlines()[:5])
    with open(os.path.join(root, 'README.zh.md'), encoding='utf-8') as f:
        chinese_top = ''.join(f.readlines()[:5])
    assert '(README.zh.md)' in english_top and '(README.md)' in chinese_top


# ---------------------------------------------------------------------------- words kept translatable
ZH = i18n.translator('zh')


def test_words_print_english_and_translate_with_the_same_numbers():
    accuracy = i18n.words("k = {k}: {accuracy} ({m} of {n} learned)", k=6, accuracy='23.2-100.0%', m=4, n=5)
    both = i18n.joined([accuracy, i18n.words("k = {k}: {accuracy}", k=12, accuracy='10.5%')], "{first}; {second}")
    assert both == "k = 6: 23.2-100.0% (4 of 5 learned); k = 12: 10.5%"
    chinese = i18n.in_language(both, ZH)
    assert chinese == "k = 6：23.2-100.0%（5 个中学会 4 个）；k = 12：10.5%"
    saved = {'template': both.template, 'fields': {'first': {'template': accuracy.template, 'fields': accuracy.fields},
                                                   'second': both.fields['second']}}
    assert i18n.in_language(saved, ZH) == chinese    # as a record saves it: the same page


def test_words_without_an_entry_stay_english_and_other_figures_stay_as_they_are():
    assert i18n.in_language(i18n.words("{n} wombats", n=3), ZH) == "3 wombats"
    for figure in (3, 0.5, 'ReLU', None, {'template': 'x'}):
        assert i18n.in_language(figure, ZH) == figure


# ---------------------------------------------------------------------------- argparse's own words
def _parser():
    parser = i18n.ArgumentParser(prog='lesson')
    parser.add_argument('--device', choices=['cpu', 'cuda'])
    parser.add_argument('folder')
    return parser


@pytest.mark.parametrize('argv, english, chinese', [
    (['--device', 'gpu', 'x'], "lesson: error: argument --device: invalid choice: 'gpu'",
     "lesson：错误：参数 --device：无效的选择：'gpu'"),
    ([], 'lesson: error: the following arguments are required: folder', 'lesson：错误：缺少以下必需的参数：folder'),
    (['x', '--bogus'], 'lesson: error: unrecognized arguments: --bogus', 'lesson：错误：无法识别的参数：--bogus'),
    (['x', '--device'], 'lesson: error: argument --device: expected one argument',
     'lesson：错误：参数 --device：需要一个参数值'),
])
def test_argparse_errors_speak_the_learners_language(argv, english, chinese, capsys):
    import argparse
    own = argparse._
    try:
        for lang, expected in (('en', english), ('zh', chinese)):
            i18n.use(lang)
            with pytest.raises(SystemExit):
                _parser().parse_args(argv)
            err = capsys.readouterr().err
            assert expected in err, err
            assert ('用法：' in err) == (lang == 'zh') and ('usage:' in err) == (lang == 'en')
    finally:
        i18n.use('en')
    assert argparse._ is own, "argparse's own gettext is given back after parsing"
    with pytest.raises(SystemExit):
        argparse.ArgumentParser(prog='plain').parse_args(['--bogus'])
    assert 'plain: error: unrecognized arguments' in capsys.readouterr().err   # other parsers untouched


def test_help_headings_speak_the_learners_language():
    try:
        i18n.use('zh')
        text = _parser().format_help()
    finally:
        i18n.use('en')
    assert text.startswith('用法：lesson') and '位置参数' in text and '显示本帮助并退出' in text
    assert 'usage' not in text and 'show this help' not in text
