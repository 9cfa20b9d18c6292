"""No English sentence reaches a Chinese reader untranslated.

Every `_("...")` and `N_("...")` in the code has its Chinese entry in the catalog (so a new message
cannot forget its translation), pybabel extracts exactly those messages, and in the workbook
(demos/exercises/) every sentence-like string goes through `_` or `N_`, apart from a short, explicit
list of strings that are not sentences for a learner.  Then the workbook itself, run in Chinese,
prints Chinese and the very numbers it prints in English.
"""
import ast
import glob
import os
import re
import subprocess
import sys

import pytest

from microtensor import i18n

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ('microtensor', 'demos', 'transformer')   # what babel.cfg lists
MARKERS = ('_', 'N_')


def _python_files(*folders):
    return sorted(path for folder in folders
                  for path in glob.glob(os.path.join(ROOT, folder, '**', '*.py'), recursive=True))


def _marked(tree):
    """(line, the call's first argument) of every _(...) and N_(...) call in a module."""
    return [(node.lineno, node.args[0]) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS
            and node.args]


def _parsed(path):
    with open(path, encoding='utf-8') as f:
        return ast.parse(f.read(), path)


def source_messages():
    """{msgid: 'file:line'} of every literal message in the code, and of the workbook's hints (the
    `# hint:` comments of its answers, which the exercise files say in the learner's language)."""
    from demos.exercises import workbook
    found = {}
    for path in _python_files(*SOURCES):
        for line, arg in _marked(_parsed(path)):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.setdefault(arg.value, f"{os.path.relpath(path, ROOT)}:{line}")
    for name in workbook.EXERCISES:
        found.setdefault(workbook.hint(name), f"demos/exercises/answers/{name}.py")
    return found


def _catalog(lang):
    pofile = pytest.importorskip('babel.messages.pofile', reason='the .po reader is babel (the test extra has it)')
    with open(i18n.catalog_path(lang, 'po'), 'rb') as f:
        return {m.id: m.string for m in pofile.read_po(f, locale=lang) if m.id}


def test_the_code_has_messages_to_check():
    assert len(source_messages()) > 200   # (the workbook alone has more: an empty scan would pass anything)


@pytest.mark.parametrize('lang', i18n.LANGUAGES[1:])
def test_every_message_in_the_code_has_a_translation(lang):
    catalog = _catalog(lang)
    missing = {msgid: where for msgid, where in source_messages().items() if not catalog.get(msgid)}
    assert not missing, (f"{len(missing)} message(s) with no {lang} entry in {i18n.catalog_path(lang, 'po')} "
                         "(add them, then: python -m microtensor.i18n compile):\n"
                         + '\n'.join(f"  {where}: {msgid!r}" for msgid, where in missing.items()))


def test_a_message_is_a_literal_template_not_an_fstring():
    """_(f"...") would look up the filled-in text, which no catalog holds: the fields go in .format()."""
    built = [f"{os.path.relpath(path, ROOT)}:{line}" for path in _python_files(*SOURCES)
             for line, arg in _marked(_parsed(path)) if isinstance(arg, (ast.JoinedStr, ast.BinOp))]
    assert not built, "translate a template, then fill it: _('{n} steps').format(n=n); not at " + ', '.join(built)


def test_pybabel_extracts_the_same_messages():
    """babel.cfg makes `pybabel extract -F babel.cfg` see every message the scan above sees (a message
    babel cannot see, e.g. an N_() inside another _() call, would never reach a translator)."""
    extract = pytest.importorskip('babel.messages.extract', reason='pybabel is babel (the test extra has it)')
    frontend = pytest.importorskip('babel.messages.frontend')
    with open(os.path.join(ROOT, 'babel.cfg'), encoding='utf-8') as f:
        method_map, options_map = frontend.parse_mapping_cfg(f)
    extracted = {message for _, _, message, _, _ in extract.extract_from_dir(ROOT, method_map, options_map)
                 if isinstance(message, str)}
    assert set(source_messages()) <= extracted, sorted(set(source_messages()) - extracted)


# ---------------------------------------------------------------------------- the workbook
# Sentence-like strings of demos/exercises/ that are not text for a learner, each with its reason.
NOT_FOR_TRANSLATION = {
    ('__main__.py', 'python -m demos.exercises: error: '): 'a bad --lang: no language is chosen yet (as argparse)',
    ('__main__.py', 'python -m demos.exercises'): "the command's name",
    ('messages.py', 'second order'): 'a kind of failure: a key, shown through KINDS',
    ('scenarios.py', 'second order'): 'the key of the step function second_order in STEPS',
    ('messages.py', ', line , in :\n    '): "a traceback's frame, in Python's own words",
    ('substitute.py', 'substituted: no entry points for ; known: '): 'a programming error in the checker itself',
    ('workbook.py', 'raise NotImplementedError(\n)\n'): "code written into the learner's file",
}


def _sentence(text):
    return ' ' in text.strip() and len(re.findall(r"[A-Za-z]{2,}", text)) >= 2


def bare_sentences(path):
    """[(line, text)] of the sentence-like string literals (and f-strings) of a module that do not go
    through _ or N_, docstrings aside."""
    tree = _parsed(path)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []

    def visit(node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS:
            return
        if isinstance(node, ast.JoinedStr):
            text = ''.join(part.value for part in node.values if isinstance(part, ast.Constant))
            if _sentence(text):
                found.append((node.lineno, text))
            return
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and _sentence(node.value)):
            found.append((node.lineno, node.value))
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    return found


def test_the_planted_bare_sentence_is_found(tmp_path):
    """The scan below finds what it is for: print(f"...") and a hint table left unmarked."""
    module = tmp_path / 'planted.py'
    module.write_text('"""A docstring is fine."""\nHINTS = {"value": "derive it on paper"}\n'
                      'print(f"{n} of {m} pass")\nprint(_("{n} of {m} pass").format(n=1, m=2))\n')
    assert [line for line, _ in bare_sentences(str(module))] == [2, 3]


def test_every_sentence_the_workbook_prints_goes_through_the_catalog():
    bare = [(os.path.basename(path), line, text) for path in _python_files(os.path.join('demos', 'exercises'))
            if os.sep + 'answers' + os.sep not in path for line, text in bare_sentences(path)
            if (os.path.basename(path), text) not in NOT_FOR_TRANSLATION]
    assert not bare, "wrap in _() (or N_() in a table defined at import), then translate:\n" + '\n'.join(
        f"  demos/exercises/{name}:{line}: {text!r}" for name, line, text in bare)


def test_every_hint_keeps_its_nudge_in_chinese():
    """A hint 'what is wrong: the formula' shows the nudge alone: the Chinese hint splits where the English
    one does (at '：'), or, like it, not at all."""
    from demos.exercises import catalogue, messages, order
    hints = ([m.hint for e in catalogue.EXERCISES.values() for m in e.mistakes]
             + [m.hint for m in order.ORDER_MISTAKES] + list(messages.GENERAL_HINTS.values())
             + [hint for _, hint in messages.ERROR_HINTS]
             + [messages.OTHER_ERROR_HINT])
    try:
        i18n.use('zh')
        for hint in hints:
            chinese = i18n._(hint)
            assert chinese != hint, hint
            has_formula = messages.nudge_and_formula(hint)[0] != hint
            assert (messages.nudge_and_formula(chinese)[0] != chinese) == has_formula, (hint, chinese)
    finally:
        i18n.use()


def _workbook(folder):
    """A workbook with a right answer (mul), a planted mistake (tanh: 1 - x^2 for 1 - y^2), a crash
    (softmax), one not written yet (relu) and one missing (gelu)."""
    from demos.exercises import workbook
    workbook.start(str(folder))
    for name in ('mul', 'tanh'):
        with open(os.path.join(workbook.ANSWERS, f'{name}.py'), encoding='utf-8') as f:
            (folder / f'{name}.py').write_text(f.read())
    tanh = (folder / 'tanh.py').read_text()
    assert 'g * (1 - self.output ** 2)' in tanh
    (folder / 'tanh.py').write_text(tanh.replace('g * (1 - self.output ** 2)', 'g * (1 - self.inputs[0] ** 2)'))
    softmax = (folder / 'softmax.py').read_text()
    (folder / 'softmax.py').write_text(re.sub(r"raise NotImplementedError\((.|\n)*?\n(\s*)\)",
                                              "return (g.reshape((7, 7)),)", softmax, count=1))
    (folder / 'gelu.py').unlink()


def _run(*argv):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    return subprocess.run([sys.executable, '-m', 'demos.exercises', *argv], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def _numbers(text):
    return re.findall(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)


def test_check_speaks_chinese_with_the_same_numbers(tmp_path):
    _workbook(tmp_path)
    argv = ['check', str(tmp_path), 'mul', 'tanh', 'softmax', 'relu', 'gelu', '--examples', '4']
    english, chinese = _run(*argv, '--lang', 'en'), _run(*argv, '--lang', 'zh')
    assert english.returncode == chinese.returncode == 1, (english.stderr, chinese.stderr)
    for words in ('pass', 'FAIL', 'wrong value', 'hint: 1 - tanh(x)^2 is in terms of the output', 'crash',
                  'todo', 'missing', '1 of 5 pass'):
        assert words in english.stdout, (words, english.stdout)
    for words in ('通过', '未通过', '值错误', '提示：1 - tanh(x)^2 要用输出', '崩溃', '待写', '缺失', '1 / 5 通过'):
        assert words in chinese.stdout, (words, chinese.stdout)   # (the child process that ran the code too)
    for words in ('wrong value', 'hint:', 'differs from', 'not yet', 'of 5 pass'):
        assert words not in chinese.stdout, (words, chinese.stdout)
    assert _numbers(chinese.stdout) == _numbers(english.stdout)


def test_the_usage_errors_and_help_speak_chinese(tmp_path):
    for argv, chinese in ((['check', str(tmp_path / 'nowhere')], '没有文件夹'),
                          (['check', str(tmp_path), '--examples', '0'], '必须大于 0'),
                          (['start', ' '], 'DIR 为空'), (['check', '--help'], '每个练习的随机样例数')):
        english, translated = _run(*argv, '--lang', 'en'), _run(*argv, '--lang', 'zh')
        assert chinese in translated.stdout + translated.stderr and chinese not in english.stdout + english.stderr
        assert 'Traceback' not in translated.stderr
        assert english.returncode == translated.returncode
    environ = _run('start', str(tmp_path / 'ops'))   # the environment's choice, without --lang
    assert 'wrote' in environ.stdout
    env = dict(os.environ, MICROTENSOR_LANG='zh', PYTHONPATH=ROOT)
    chosen = subprocess.run([sys.executable, '-m', 'demos.exercises', 'start', str(tmp_path / 'more')],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert '已把 16 个文件写进' in chosen.stdout
    assert '亲手写反向传播' in (tmp_path / 'more' / 'README.txt').read_text(encoding='utf-8')


def test_the_exercise_files_say_their_hint_in_the_learners_language(tmp_path):
    """`start --lang zh` writes each NotImplementedError's hint in Chinese (the code around it is the
    English edition's), and `check` says it."""
    from demos.exercises import workbook
    assert _run('start', str(tmp_path / 'en'), '--lang', 'en').returncode == 0
    assert _run('start', str(tmp_path / 'zh'), '--lang', 'zh').returncode == 0
    try:
        i18n.use('zh')
        for name in workbook.EXERCISES:
            english, chinese = ((tmp_path / lang / f'{name}.py').read_text(encoding='utf-8') for lang in ('en', 'zh'))
            hint, translated = workbook.hint(name), i18n._(workbook.hint(name))
            module = workbook.load(str(tmp_path / 'zh'), name)   # (it imports: the strings are well formed)
            assert module is not None and hint != translated
            raised = re.search(r'raise NotImplementedError\(\n((?:\s*".*"\n)+)\s*\)', chinese)
            assert ''.join(ast.literal_eval(line.strip()) for line in raised.group(1).splitlines()) == translated
            outside = [re.sub(r'raise NotImplementedError\((.|\n)*?\n\s*\)', '', text) for text in (english, chinese)]
            assert outside[0] == outside[1], name
    finally:
        i18n.use()
    check = _run('check', str(tmp_path / 'zh'), 'tanh', '--examples', '1', '--lang', 'zh')
    assert '还没写（1 / cosh^2 = 1 - tanh^2：用输出 y = self.output 来表示。）' in check.stdout, check.stdout


@pytest.mark.parametrize('text', [("dL/dA has A's shape (n, k): build each from G (n, m) and the other input, "
                                   "transposing where the shapes need it; " * 3).strip(),
                                  '三个梯度（x、gamma、beta）。对 x，从 dx_hat = g * gamma 开始，再减去 mu 和 var '
                                  '带来的行均值：mean(dx_hat) 和 x_hat * mean(dx_hat * x_hat)。' * 3])
def test_a_hint_is_cut_into_lines_that_join_back(text):
    from demos.exercises import workbook
    pieces = workbook._pieces(text, 60)
    assert ''.join(pieces) == text and len(pieces) > 2
    assert all(sum(1 if c.isascii() else 2 for c in piece.rstrip()) <= 60 for piece in pieces)


def _answer(name):
    from demos.exercises import workbook
    from demos.exercises.catalogue import EXERCISES
    return getattr(workbook.load_answer(name), EXERCISES[name].attr)


@pytest.mark.parametrize('right', [True, False], ids=['trained', 'diverges'])
def test_gpt_speaks_chinese_with_the_same_numbers(tmp_path, capsys, right):
    pytest.importorskip('matplotlib')
    from demos.exercises import gpt
    softmax = _answer('softmax')
    if not right:   # a backward 1.5 times too large
        softmax = type('Softmax', (softmax,), {'backward': lambda self, g: tuple(
            1.5 * d for d in _answer('softmax').backward(self, g))})
    ops, left_out = {'softmax': softmax, 'gelu': _answer('gelu')}, {'tanh': 'fail', 'relu': 'todo'}
    printed = {}
    try:
        for lang in ('en', 'zh'):
            i18n.use(lang)
            gpt.run(str(tmp_path / lang), ops, left_out, steps=2, size=dict(d_model=8, n_layers=1, n_heads=2,
                                                                            context=8, batch_size=2))
            printed[lang] = capsys.readouterr().out
    finally:
        i18n.use()
    english, chinese = printed['en'], printed['zh']
    assert ('trained the Transformer' in english) == right and ('训练了这个 Transformer' in chinese) == right
    assert ('the gradients differ' in english) != right and ('梯度与引擎的不同' in chinese) != right
    assert '未采用（没有通过 check）：tanh（未通过）, relu（待写）' in chinese and '引擎的损失' in chinese
    assert 'left out' not in chinese and "engine's loss" not in chinese
    assert _numbers(chinese) == _numbers(english)
    assert (tmp_path / 'zh' / 'gpt_loss.png').stat().st_size > 0


# ---------------------------------------------------------------------------- the lessons
# Lessons whose sentences are still being put through the catalog; the scan below skips them until
# their translation lands (then delete the name here: the scan covers them from then on).
LESSONS_STILL_TO_TRANSLATE = {
}

# Whole definitions of demos/*.py that hold no text for a learner, each with its reason.
NOT_FOR_A_LEARNER = {
    ('corpus.py', 'POEM'): 'data: the text the tiny GPT learns',
    ('articles.py', 'ARTICLES'): "the articles' titles and their English glosses (the Chinese edition shows the titles)",
    ('articles.py', 'HEADINGS'): "the headings as printed and their English glosses, shown in the English edition only",
    ('articles.py', 'write_page'): 'the command that regenerates docs/ from the records, in English like the records',
    ('articles.py', 'main'): 'the command that regenerates docs/ from the records, in English like the records',
    ('claims.py', 'machine'): 'the machine a record was measured on: a figure of the English records',
    ('claims.py', 'record'): "a lesson's programming error (a figure given as text), for whoever writes the lesson",
    ('figures.py', 'disagreements'): "what the records' test reports: for whoever maintains the records",
    ('report.py', 'CJK_FONTS'): "font families' names",
}

# Sentence-like strings of the lessons that are not text for a learner, each with its reason; a text
# listed with file None is allowed in every lesson.
LESSON_STRINGS = {
    ('corpus.py', 'unknown corpus : choose from , or give a file'): 'a programming error: --corpus has choices',
    ('corpus.py', 'no docstrings found under '): "a broken Python install (its standard library has no .py files)",
    ('corpus.py', 'split: val_fraction must be in [0, 1), got '): 'a programming error: --val-fraction is checked first',
    ('train_gpt.py', 'Return the '): 'data: the prompt for the stdlib corpus (Python docstrings)',
    ('train_gpt.py', 'train_gpt.train: unknown options ; known:  and seed'): 'a programming error of train()',
    ('train_gpt.py', ' characters beginning '): 'data saved in the checkpoint (what its text was)',
    ('train_gpt.py', 'the text'): 'a key of the settings that differ (shown translated)',
    ('train_gpt.py', 'another text'): 'data: a checkpoint that says nothing of its text',
    ('attention_maps.py', 'Twinkle, twinkle, little star,'): 'data: the line of the poem the char GPT reads',
    ('attention_maps.py', 'upper right'): "matplotlib's legend location",
    ('encoder_only_mlm.py', 'first half'): 'a key of the accuracies (the table shows its own translated header)',
    ('encoder_only_mlm.py', 'second half'): 'a key of the accuracies',
    ('softmax_saturation.py', 'scale 1/sqrt(d_k)'): 'a formula: the name of the scaled run in the plot',
    ('softmax_saturation.py', 'scores / sqrt(d_k)'): 'a formula: the legend of the scaled curves',
    ('train_reverse.py', 'random_sequences: asked for  distinct sequences of length , but only  exist'):
        'a programming error of the helper: the lesson refuses --n-test beyond it first, in the learner\'s language',
    (None, 'the article is wrong'): 'a verdict keyword: claims.py shows it as 原文有误',
    (None, 'not tested by this task'): 'a verdict keyword: claims.py shows it as 本任务未检验',
    (None, 'python -m demos'): "the command's name",
    ('__main__.py', 'python -m demos: error: '): 'a bad --lang: no language is chosen yet (as argparse)',
    ('__main__.py', 'python -m demos  --html'): 'a command',
    ('__main__.py', 'python -m demos.exercises start my_ops'): 'a command',
    ('report.py', 'python -m demos.: error: '): 'a bad --lang: no language is chosen yet (as argparse)',
    ('report.py', 'python -m demos.'): "the command's name",
    ('report.py', 'table: a cell holds the error : ; put a short marker in the cell and print the message under '
                  'the table'): "a programming error in a lesson's table",
    ('report.py', 'Glyph .* missing from'): "a pattern matching matplotlib's warning",
    ('claims_page.py', ' § has no claim recorded by a lesson and no line in claims_page.NOTHING'):
        'a programming error found while rendering the companion',
    ('claims_page.py', '<!-- Generated by `python -m demos.articles --write` from docs/claims/*.json and '
                       'demos/articles.py: do not edit. -->'): "a comment in the page's source",
    ('articles.py', 'no article : the articles are '): "a programming error in a lesson's citation",
    ('articles.py', ' () has no section ; its sections are '): "a programming error in a lesson's citation",
    ('article_trace.py', 'FFN hidden '): "a point's name; _named() shows it translated",
    ('qkv_roles.py', "The animal didn't cross the street because it was too tired"):
        "the attention article's own example sentence, in English there",
    ('heads_specialise.py', 'previous token'): 'a role: a key, shown through _() in the table',
    ('heads_specialise.py', 'next token'): 'a role: a key, shown through _() in the table',
    ('pre_vs_post_ln.py', 'no warm-up'): "a run's name in the English records; `labels` holds the learner's",
}


def _cjk(text):
    return re.search(r'[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]', text) is not None


def _formula(text):
    """A formula or a symbol, not a sentence: 'Pre-LN: Var(x_l)', '|dL/dS| (autograd)', 'std / sqrt(d_k)'."""
    return re.search(r'[=|/^≈(]', text) is not None and len(set(re.findall(r'[A-Za-z]{4,}', text))) <= 1


def _keys(tree):
    """ids of the string literals used as keys (d['x'], {'x': ...}, a == 'x', 'x' in d, {'x', 'y'}): they
    name data; what is shown of the data passes through _() where it is shown.  Also a namedtuple's field
    names and a docstring set by `X.__doc__ = ...`: code, not output."""
    found = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, 'attr', getattr(node.func, 'id', None)) == 'namedtuple'
                and len(node.args) > 1):
            found.add(id(node.args[1]))
        elif (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute)
              and node.targets[0].attr == '__doc__'):
            found.add(id(node.value))
        if isinstance(node, ast.Subscript):
            found.add(id(node.slice))
        elif isinstance(node, ast.Dict):
            found.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Compare):
            found.update(id(n) for n in [node.left, *node.comparators])
        elif isinstance(node, ast.Set):
            found.update(id(n) for n in node.elts)
    return found


def _definition_name(node):
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def lesson_bare_sentences(path):
    """[(line, text)] of bare_sentences(path) that are English for a learner: not the articles' Chinese
    words (quotes, headings), not keys, not in the definitions and strings listed above."""
    name = os.path.basename(path)
    tree = _parsed(path)
    keys = _keys(tree)
    skipped = {(n.lineno, n.end_lineno) for n in tree.body if (name, _definition_name(n)) in NOT_FOR_A_LEARNER}
    key_lines = {(n.lineno, n.value) for n in ast.walk(tree) if id(n) in keys and isinstance(n, ast.Constant)}
    return [(line, text) for line, text in bare_sentences(path)
            if not _cjk(text) and not _formula(text) and (line, text) not in key_lines
            and not any(a <= line <= b for a, b in skipped)
            and (name, text) not in LESSON_STRINGS and (None, text) not in LESSON_STRINGS]


def _lesson_files():
    return sorted(path for path in glob.glob(os.path.join(ROOT, 'demos', '*.py'))
                  if os.path.basename(path)[:-3] not in LESSONS_STILL_TO_TRANSLATE)


def test_the_lesson_scan_skips_keys_and_quotes_not_sentences(tmp_path):
    module = tmp_path / 'planted.py'
    module.write_text('x = results["tiny model run"]\nquote = "注意力 is all you need"\n'
                      'print(f"{n} of {m} pass")\nlabel = "the learned scale"\nprint("Pre-LN: Var(x_l)")\n'
                      'print("|dL/d layer input|")\n')
    assert [line for line, _ in lesson_bare_sentences(str(module))] == [3, 4, 6]


def test_every_sentence_a_lesson_prints_goes_through_the_catalog():
    """Every lesson of demos/ (and the tour, report.py, budget.py, articles.py, claims.py, claims_page.py):
    what it prints for a learner has a Chinese entry, so a new lesson cannot forget its translation."""
    assert len(_lesson_files()) > 20   # (an empty scan would pass anything)
    bare = [(os.path.basename(path), line, text) for path in _lesson_files()
            for line, text in lesson_bare_sentences(path)]
    assert not bare, "wrap in _() (or N_() in a table defined at import), then translate:\n" + '\n'.join(
        f"  demos/{name}:{line}: {text!r}" for name, line, text in bare)


def test_every_listed_exception_is_still_needed():
    """An entry of LESSON_STRINGS that no lesson needs any more goes (the list stays short and true)."""
    saved = dict(LESSON_STRINGS)
    try:
        LESSON_STRINGS.clear()
        found = {(os.path.basename(path), text) for path in _lesson_files() for _, text in lesson_bare_sentences(path)}
    finally:
        LESSON_STRINGS.update(saved)
    unused = [key for key in saved if key not in found and not any(text == key[1] for _, text in found)]
    assert not unused, unused


def _own_nodes(function):
    """The nodes of a function's own scope (not of the functions, lambdas, classes and comprehensions in it)."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
              ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, scopes):
            stack.extend(ast.iter_child_nodes(node))


def test_no_function_hides_the_translation_function():
    """`text, _ = ...` or `for _ in ...` in a function that also calls _() makes `_` local to it:
    _() then fails (UnboundLocalError) or calls the wrong thing, often only in a rarely taken branch."""
    hidden = []
    for path in _python_files('microtensor', 'demos', 'transformer'):
        for function in ast.walk(_parsed(path)):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            own = list(_own_nodes(function))
            deliberate = {id(n.targets[0]) for n in own if isinstance(n, ast.Assign) and len(n.targets) == 1
                          and isinstance(n.targets[0], ast.Name)}  # `_ = self.translate`: an alias, on purpose
            stray = [n for n in own if isinstance(n, ast.Name) and n.id == '_' and isinstance(n.ctx, ast.Store)
                     and id(n) not in deliberate]
            calls = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == '_'
                        for n in ast.walk(function))
            if stray and calls:
                hidden.append(f"{os.path.relpath(path, ROOT)}:{function.lineno} {function.name}")
    assert not hidden, "these functions assign `_` and call _(): rename the variable\n" + '\n'.join(hidden)
