"""docs/articles.zh.md, the companion in the articles' language, is rendered from the same claim records
(docs/claims/*.json) as docs/articles.md, so the two editions cannot disagree: the same sections in the
same order, the same verdicts (成立 / 部分成立 / 原文有误 / 本任务未检验), the same figures; each links
to the other in its first lines."""
import collections
import dataclasses
import os
import re

from demos import articles, claims, claims_page
from microtensor import i18n

VERDICT_WORDS = {'holds': '成立', 'partly': '部分成立', 'the article is wrong': '原文有误',
                 'not tested by this task': '本任务未检验'}
NUMBER = re.compile(r"\d+(?:\.\d+)?")
FIX = "python -m demos.articles --render"


def page(lang):
    with open(articles.PAGES[lang], encoding='utf-8') as f:
        return f.read()


def entries(text):
    """[(heading line, its body)] of every section, up to the glossary (the page's last part)."""
    body = text[:text.rindex('\n## ')]
    return [tuple(part.split('\n', 1)) for part in re.split(r"\n### ", body)[1:]]


def test_the_chinese_page_is_the_records_rendered():
    assert claims_page.render(claims.read_records(), 'zh') == page('zh'), \
        f"docs/articles.zh.md is not what the records under docs/claims/ render: run {FIX}"


def test_the_two_editions_link_to_each_other_in_their_first_lines():
    english, chinese = ('\n'.join(page(lang).splitlines()[:3]) for lang in ('en', 'zh'))
    assert '](articles.zh.md)' in english and '](articles.md)' in chinese


def test_both_editions_have_the_same_sections_verdicts_and_figures():
    english, chinese = entries(page('en')), entries(page('zh'))
    assert len(english) == len(chinese) == sum(map(len, articles.HEADINGS.values()))
    expected = [(articles.section_line(key, number, 'en'), articles.section_line(key, number, 'zh'))
                for key in articles.HEADINGS for number in articles.HEADINGS[key]]
    for (en_heading, en_body), (zh_heading, zh_body), (en_line, zh_line) in zip(english, chinese, expected):
        assert (en_heading, zh_heading) == (en_line, zh_line)
        verdicts = re.findall(r"\*\*([^*]+)\*\*", en_body)
        assert [VERDICT_WORDS[v] for v in verdicts] == re.findall(r"\*\*([^*]+)\*\*", zh_body), en_heading
        assert collections.Counter(NUMBER.findall(en_body)) == collections.Counter(NUMBER.findall(zh_body)), \
            f"{en_heading}: the two editions print different figures"
        assert re.findall(r"`python -m demos [^`]*`", en_body) == re.findall(r"`python -m demos [^`]*`", zh_body)


def test_the_glance_tables_give_the_same_verdicts():
    def rows(text):
        return [line.split(' | ') for line in text.splitlines() if re.match(r"\| (attention|architecture|deep_dive) \|", line)]
    english, chinese = rows(page('en')), rows(page('zh'))
    assert [row[:3] for row in english] == [row[:3] for row in chinese] and len(english) == 107
    for en_row, zh_row in zip(english, chinese):
        words = [VERDICT_WORDS.get(v, v) for v in en_row[3][:-2].split(', ')]
        assert ', '.join(words).replace('nothing to compute', '无需计算') == zh_row[3][:-2]


def test_every_record_keeps_the_template_its_finding_was_filled_from():
    """Either edition fills the record's template with its figures: in English that is the finding itself."""
    for record in claims.read_records().values():
        for claim in record['claims']:
            assert claim.template and claim.finding_in(lambda text: text) == claim.finding, \
                f"{claim.lesson}: {claim.article} §{claim.section}: run python -m demos.articles --write {claim.lesson}"


def test_a_translated_finding_keeps_its_figures():
    claim = claims.read_records()['article_trace', 'quick']['claims'][0]
    catalog = {claim.template: '译文 ' + claim.template, 'holds': '成立', 'the article is wrong': '原文有误'}
    line = claim.line(lambda text: catalog.get(text, text))
    assert '译文 ' + claim.finding in line and f"**{VERDICT_WORDS[claim.verdict]}**" in line
    assert NUMBER.findall(line) == NUMBER.findall(claim.line())


def test_a_lesson_prints_its_claim_in_the_learners_language(capsys, monkeypatch):
    monkeypatch.setattr(claims, 'RECORDED', [])
    try:
        for lang in ('en', 'zh'):
            i18n.use(lang)
            claims.record('deep_dive', '8.5', '全文的灵魂', 'not tested by this task',
                          "{n} steps, nothing would test it", look='part 1', n=3)
    finally:
        i18n.use(os.environ.get('MICROTENSOR_LANG', 'en'))
    english, chinese = capsys.readouterr().out.splitlines()
    assert english.endswith('— not tested by this task: 3 steps, nothing would test it')
    assert '深入篇 §8.5' in chinese and '— 本任务未检验：3 steps, nothing would test it' in chinese   # no entry: English
    assert [c.finding for c in claims.RECORDED] == ['3 steps, nothing would test it'] * 2
    assert claims.RECORDED[1].template == "{n} steps, nothing would test it"


def test_the_machine_line_is_translated_and_unknown_words_are_kept():
    zh = i18n.translator('zh')
    english = claims.machine()
    chinese = claims.machine_in(english, zh)
    assert 'CPU cores' in english and 'CPU cores' not in chinese and '个 CPU 核' in chinese
    assert NUMBER.findall(chinese) == NUMBER.findall(english)
    assert claims.machine_in('a Raspberry Pi', zh) == 'a Raspberry Pi'


ENGLISH_PHRASE = re.compile(r"\b[a-z]{2,} [a-z]{2,}\b")


def english_figures(record):
    """The figures of a record that are English phrases saved as plain text: the Chinese page would print
    them in English (they should be i18n.words)."""
    return [(c.section, name, value) for c in record['claims'] for name, value in c.figures.items()
            if type(value) is str and ENGLISH_PHRASE.search(value)]   # Words and figures.* translate themselves


def test_no_record_keeps_an_english_phrase_as_a_plain_figure():
    for (lesson, mode), record in claims.read_records().items():
        assert not english_figures(record), f"{lesson} ({mode}): make these figures i18n.words(...)"


def test_the_check_for_english_figures_finds_one():
    planted = claims.Claim('small_numbers', 'deep_dive', '8.1', 'q', 'holds', 'faster on numpy on a CPU',
                           '{speed} on {device}', figures={'speed': 'faster', 'device': 'numpy on a CPU'})
    words = dataclasses.replace(planted, figures={'speed': 'faster', 'device': {'template': 'numpy on a CPU',
                                                                                  'fields': {}}})
    assert english_figures({'claims': [planted]}) == [('8.1', 'device', 'numpy on a CPU')]
    assert english_figures({'claims': [words]}) == []
    assert words.finding_in(i18n.translator('zh')) == 'faster on CPU 上的 numpy'


def test_every_figure_in_words_has_a_chinese_entry():
    zh = i18n.translator('zh')

    def templates(figure):
        if isinstance(figure, dict):
            yield figure['template']
            for value in figure['fields'].values():
                yield from templates(value)
    for (lesson, mode), record in claims.read_records().items():
        for claim in record['claims']:
            for figure in claim.figures.values():
                for template in templates(figure):
                    assert zh(template) != template, f"{lesson}: no Chinese entry for the words {template!r}"
