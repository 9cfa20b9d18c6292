"""Every sentence the code marks for translation has a translation in each catalog.

A sentence a learner reads is written `_("...")` where it is printed (or `N_("...")` where it is
defined before the language is chosen, in a table made at import); this test finds each such call
with a string literal in microtensor/ and demos/ (an ast walk, so no code is run) and fails naming
every one that has no entry in the .po of a language, so that a new lesson cannot forget its
translation.
"""
import ast
import os

import pytest

from microtensor import i18n

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ('microtensor', 'demos')
MARKERS = ('_', 'N_')  # gettext's names: translate here, and mark for a later translation


def marked(path):
    """(msgid, line) of every `_("...")` and `N_("...")` in the Python file at `path`."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value, node.lineno


def all_marked():
    """{msgid: ['demos/report.py:123', ...]} over the packages' Python files."""
    found = {}
    for package in PACKAGES:
        for folder, _dirs, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if name.endswith('.py'):
                    path = os.path.join(folder, name)
                    for msgid, line in marked(path):
                        found.setdefault(msgid, []).append(f"{os.path.relpath(path, ROOT)}:{line}")
    return found


def test_the_walk_finds_the_marked_sentences():
    """The walk itself works: it finds sentences known to be marked (else the test below would pass on nothing)."""
    found = all_marked()
    assert 'the language of the output: en or zh (default: MICROTENSOR_LANG, then the locale, then en)' in found
    assert any(place.startswith(os.path.join('demos', '')) for places in found.values() for place in places)


@pytest.mark.parametrize('lang', i18n.LANGUAGES[1:])
def test_every_marked_sentence_has_a_translation(lang):
    pofile = pytest.importorskip('babel.messages.pofile', reason='the .po reader is babel (the test extra has it)')
    with open(i18n.catalog_path(lang, 'po'), 'rb') as f:
        translated = {m.id for m in pofile.read_po(f, locale=lang) if m.id and m.string}
    missing = {msgid: places for msgid, places in all_marked().items() if msgid not in translated}
    assert not missing, (f"{len(missing)} sentences have no {lang} translation in {i18n.catalog_path(lang, 'po')} "
                         "(add them, then `python -m microtensor.i18n compile`):\n" +
                         '\n'.join(f"  {places[0]}: {msgid!r}" for msgid, places in missing.items()))
