"""The claims saved under docs/claims/ are what the lessons compute: each lesson's quick (tour) run,
done again here, records the same claims with the same verdicts, and every figure within the
tolerance its printed form promises (demos/figures.py: 1 in its last printed digit, or a bound), so
that the records hold on a machine whose BLAS kernel or SIMD loops round otherwise.  Timings (a speed
ratio, a time slope) vary with the machine, so their test checks their shape: who is faster, which
curve grows faster.  Figures that depend on the environment (depends_on: the stdlib corpus is the
docstrings of the running Python) are left out of the comparison.

The quick lessons are run in every test session; the slower ones (a recorded run time above
QUICK_SECONDS) when HYPOTHESIS_PROFILE=ci, as CI runs the suite.  The --full records (several seeds,
minutes each) are re-run by the tests marked `full`, which only `pytest -m full` selects.
"""
import os
import re

import pytest

from demos import articles, claims, figures

QUICK_SECONDS = 5.0
EVERY_RECORD = claims.read_records()
RECORDS = {lesson: record for (lesson, mode), record in EVERY_RECORD.items() if mode == 'quick'}
FULL_RECORDS = {lesson: record for (lesson, mode), record in EVERY_RECORD.items() if mode == 'full'}
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
    assert_the_same_claims(lesson, fresh, RECORDS[lesson], '')


@pytest.mark.full
@pytest.mark.parametrize('lesson', sorted(FULL_RECORDS))
def test_a_fresh_full_run_records_the_same_claims(lesson, monkeypatch):
    monkeypatch.setattr(claims, 'RECORDED', [])
    fresh, _, _ = articles.run_for_records(lesson, full=True)
    assert_the_same_claims(lesson, fresh, FULL_RECORDS[lesson], ' --full')


def assert_the_same_claims(lesson, fresh, record, full):
    """The fresh claims are the record's: the same sections and quotes, the same verdicts and templates,
    each figure within what the record says its printed form promises."""
    saved = record['claims']
    again = f"run python -m demos.articles --write{full} {lesson}"
    key = lambda c: (c.article, c.section, str(c.quote))  # noqa: E731
    assert [key(c) for c in fresh] == [key(c) for c in saved], \
        f"{lesson} records other claims than docs/claims/{lesson}.json: {again}"
    for now, then in zip(fresh, saved):
        where = f"{lesson}{full}: {now.article} §{now.section}"
        assert now.verdict == then.verdict, \
            f"{where} now finds\n  {now.verdict}: {now.finding}\nnot\n  {then.verdict}: {then.finding}\n{again}"
        if now.depends_on is not None:
            continue
        if now.timing:   # its wording may follow the timing (who is faster); its verdict may not
            shape = TIMING_SHAPES[lesson, now.article, now.section]
            assert shape(raw(now.figures)) and shape(raw(then.figures)), \
                f"{where}: the timing lost its shape: {now.finding}"
        else:
            assert now.template == then.template, f"{where} now finds\n  {now.finding}\nnot\n  {then.finding}\n{again}"
        assert set(now.figures) == set(then.figures), f"{where}: other figures than the record's: {again}"
        differ = [d for name, value in then.figures.items()
                  for d in figures.disagreements(value, now.figures[name], then.tolerance[name], name)]
        assert not differ, f"{where} now finds\n  {now.finding}\nnot\n  {then.finding}\n" + '\n'.join(differ)


def raw(found):
    """A claim's figures with each timing (figures.measured) as its number, for TIMING_SHAPES."""
    kept = {name: figures.restored(value) for name, value in found.items()}
    return {name: value.values[0] if isinstance(value, figures.Measured) else value for name, value in kept.items()}


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
