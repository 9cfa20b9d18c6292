"""The claims saved under docs/claims/ are what the lessons compute: each lesson's quick (tour) run,
done again here, records the same findings digit for digit.  Timings (a speed ratio, a time slope)
vary with the machine, so their test checks their shape: who is faster, which curve grows faster.
Figures that depend on the environment (depends_on: the stdlib corpus is the docstrings of the
running Python) are left out of the comparison.

The quick lessons are run in every test session; the slower ones (a recorded run time above
QUICK_SECONDS) when HYPOTHESIS_PROFILE=ci, as CI runs the suite.  --full records (several seeds)
are not repeated: `python -m demos.articles --write --full` makes them.
"""
import os
import re

import pytest

from demos import articles, claims

QUICK_SECONDS = 5.0
RECORDS = {lesson: record for (lesson, mode), record in claims.read_records().items() if mode == 'quick'}
EVERYTHING = os.environ.get('HYPOTHESIS_PROFILE') == 'ci'

# {(lesson, article, section): the shape a timing must have, as a test of its figures}
TIMING_SHAPES = {
    ('small_numbers', 'deep_dive', '8.1'): lambda f: f['ratio'] > 1,                 # attention beats the RNN at 512
    ('attention_cost', 'deep_dive', '8.1'): lambda f: f['att_slope'] > f['rnn_slope'],   # attention's n^2 shows
}


def lessons():
    marks = {lesson: () if record['run_time_s'] <= QUICK_SECONDS or EVERYTHING else
             pytest.mark.skip(reason=f"{lesson} took {record['run_time_s']} s when recorded; HYPOTHESIS_PROFILE=ci "
                                     "runs it")
             for lesson, record in RECORDS.items()}
    return [pytest.param(lesson, marks=marks[lesson]) for lesson in sorted(RECORDS)]


def test_there_are_records():
    assert len(RECORDS) >= 25, "run: python -m demos.articles --write"


@pytest.mark.parametrize('lesson', lessons())
def test_a_fresh_quick_run_records_the_same_claims(lesson, monkeypatch):
    monkeypatch.setattr(claims, 'RECORDED', [])
    fresh, _, _ = articles.run_for_records(lesson)
    saved = RECORDS[lesson]['claims']
    key = lambda c: (c.article, c.section, str(c.quote))  # noqa: E731
    assert [key(c) for c in fresh] == [key(c) for c in saved], \
        f"{lesson} records other claims than docs/claims/{lesson}.json: run python -m demos.articles --write {lesson}"
    for now, then in zip(fresh, saved):
        where = f"{lesson}: {now.article} §{now.section}"
        if now.timing:
            shape = TIMING_SHAPES[lesson, now.article, now.section]
            assert shape(now.figures) and shape(then.figures), f"{where}: the timing lost its shape: {now.finding}"
        elif now.depends_on is None:
            assert (now.verdict, now.finding, now.template) == (then.verdict, then.finding, then.template), \
                f"{where} now finds\n  {now.verdict}: {now.finding}\nnot\n  {then.verdict}: {then.finding}\n" \
                f"run python -m demos.articles --write {lesson}"


def test_every_timing_has_a_shape_to_check():
    for lesson, record in RECORDS.items():
        for claim in record['claims']:
            if claim.timing:
                assert (lesson, claim.article, claim.section) in TIMING_SHAPES, (lesson, claim.section)


def test_the_readme_figures_of_each_lesson_are_in_its_records():
    """README's table of lessons quotes their figures: every number with a decimal point in a lesson's row
    is one its records print (its findings, its quotes, or its run's own figures)."""
    from readme import ROOT
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        rows = [line for line in f.read().splitlines() if line.startswith('| `')]
    every = claims.read_records()
    checked = 0
    for row in rows:
        lesson = row.split('`')[1]
        texts = [c.finding + ' ' + ' '.join(c.quotes()) for (name, _), r in every.items() if name == lesson
                 for c in r['claims']]
        if not texts:
            continue
        for figure in re.findall(r"(?<![\w.§])\d+\.\d+(?![\d.])", row.split('|')[2]):
            checked += 1
            assert any(figure in text for text in texts), f"README's row for {lesson} says {figure}, which its " \
                                                         f"records do not: run python -m demos {lesson} and update it"
    assert checked > 10


def test_every_lesson_help_gives_its_measured_run_time(capsys):
    import importlib
    for lesson, record in RECORDS.items():
        with pytest.raises(SystemExit):
            importlib.import_module(f"demos.{lesson}").main(['--help'])
        out = ' '.join(capsys.readouterr().out.split())
        assert f"Typical run time: {record['run_time_s']:g} s (the defaults" in out, lesson


def test_the_readme_stdlib_sample_names_what_it_depends_on_and_reads_like_train_gpt():
    """README's train_gpt output on the stdlib corpus depends on the Python version (its docstrings are
    the text), so it is not compared digit for digit: it names the version it was made with, and its
    lines are train_gpt's progress and validation lines."""
    from readme import ROOT
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    intro = text[text.index('tiny preset on the stdlib corpus'):]
    assert re.match(r"tiny preset on the stdlib corpus, on a CPU, with CPython \d+\.\d+\.\d+ ", ' '.join(intro.split()))
    block = intro[intro.index('```text') + 7:intro.index('```', intro.index('```text') + 7)].strip().splitlines()
    progress = r"step +\d+/\d+  loss \d\.\d{4}  lr \d\.\d\de[-+]\d\d  tok/s [\d,]+"
    validation = r"step \d+: validation loss \d\.\d{4} \(unigram baseline \d\.\d{4}\)"
    assert block and all(re.fullmatch(progress, line) or re.fullmatch(validation, line) or line == '...'
                         for line in block), block
