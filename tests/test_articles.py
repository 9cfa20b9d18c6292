"""The lessons and the articles point at each other: every lesson's SECTIONS are sections of the
articles (demos/articles.py), docs/articles.md is rendered from the claims the lessons recorded
(docs/claims/*.json) and lists every section of the three articles, in order; with the articles'
text at hand (ARTICLES_DIR), every heading and every quote is checked against it."""
import importlib
import os
import re

import pytest

import transformer
from demos import __main__ as tour, articles, claims, claims_page
from readme import ROOT

DOC = os.path.join(ROOT, 'docs', 'articles.md')
ENGINE_LESSONS = {'compare_with_torch'}  # lessons about the engine itself: SECTIONS = [], no article checked
GLOSSARY_TERMS = ('缩放点积注意力', '多头注意力', '残差连接', '层归一化', '前馈网络', '位置编码', '外推', '预热', '掩码',
                  '键值缓存')
FIX = "python -m demos.articles --render (or --write to run the lessons again, --full for their seeds)"
SEEDS = ', '.join(claims.SEED_FILES.values())


def lesson_sections():
    """{lesson: its SECTIONS}; an AttributeError names a lesson that declares none (SECTIONS = [] says
    explicitly that it checks no article's claim, as compare_with_torch, which checks the engine)."""
    return {name: importlib.import_module(f"demos.{name}").SECTIONS for name, _ in tour.LESSONS}


def page():
    with open(DOC, encoding='utf-8') as f:
        return f.read()


def recorded():
    """[(record, claim)] of every claim saved under docs/claims/."""
    return [(record, claim) for record in claims.read_records().values() for claim in record['claims']]


def test_the_registry_knows_the_three_articles_and_formats_a_header():
    assert set(articles.ARTICLES) == {'attention', 'architecture', 'deep_dive'}
    assert articles.ARTICLES['attention'].title == '第二章：智能的原子 —— 注意力机制的解构'
    assert articles.heading('attention', '2.3.2') == ('Softmax 的饱和区', "softmax's saturation zone")
    lines = articles.header([('attention', '2.3.2'), ('deep_dive', '1.5'), ('attention', '2.3.3')]).splitlines()
    assert lines == ['第二章：智能的原子 —— 注意力机制的解构 (the attention article)',
                     "  §2.3.2 Softmax 的饱和区 (softmax's saturation zone)",
                     '  §2.3.3 缩放的作用：方差归一化 (what the scale does: normalising the variance)',
                     '深入篇 (the deep dive)',
                     '  §1.5 缩放——为什么除以 $\\sqrt{d_k}$ (the scale: why divide by sqrt(d_k))']
    assert articles.cite('deep_dive', '4.4') == 'the deep dive §4.4'
    with pytest.raises(KeyError, match=r"the architecture article .* has no section '2\.3\.4'; its sections are 2\.1,"):
        articles.heading('architecture', '2.3.4')
    with pytest.raises(KeyError, match="no article 'atom'"):
        articles.cite('atom', '2.1')


def test_every_lesson_declares_sections_of_the_articles():
    for name, sections in lesson_sections().items():
        assert isinstance(sections, list), f"{name}.SECTIONS must be a list of (article, number)"
        assert bool(sections) == (name not in ENGINE_LESSONS), f"{name} declares no sections"
        for article, number in sections:
            articles.heading(article, number)  # a KeyError names what is missing
        assert len(set(sections)) == len(sections), name


# ---------------------------------------------------------------------------- the records
def test_the_page_is_the_records_rendered():
    assert claims_page.render(claims.read_records()) == page(), \
        f"docs/articles.md is not what the records under docs/claims/ render: run {FIX}"


def test_every_lesson_records_a_claim_for_every_section_it_declares_and_only_those():
    by_lesson = {}
    for record, claim in recorded():
        assert claim.lesson == record['lesson']
        by_lesson.setdefault(claim.lesson, set()).add((claim.article, claim.section))
    for name, sections in lesson_sections().items():
        assert by_lesson.get(name, set()) == set(sections), \
            f"{name} declares {sorted(set(sections) - by_lesson.get(name, set()))} without recording a claim there, " \
            f"or records {sorted(by_lesson.get(name, set()) - set(sections))} without declaring it; then run {FIX}"


def test_every_claim_has_a_verdict_a_quote_and_its_seeds():
    for record, claim in recorded():
        where = f"{claim.lesson}: {claim.article} §{claim.section}"
        assert claim.verdict in claims.VERDICTS, where
        assert claim.quotes() and all(q.strip() for q in claim.quotes()), where
        assert claim.finding and not re.search(r"\{\w*\}", claim.finding), where   # every figure filled in
        if record['mode'] == 'full' and claim.seeds is not None:
            assert int(claim.seeds.split()[0]) >= 5, f"{where}: --full rests on {claim.seeds}"
        if claim.verdict == 'not tested by this task':
            assert 'would test it' in claim.finding, f"{where}: say what would test the claim"


def test_every_heading_is_on_the_page_in_the_articles_order():
    text = page()
    expected = [f"### {articles.section_line(key, number)}" for key in articles.HEADINGS
                for number in articles.HEADINGS[key]]
    found = [line for line in text.splitlines() if line.startswith('### ')]
    assert found == expected
    assert len(found) == sum(map(len, articles.HEADINGS.values())) == 107
    entries = re.split(r"\n### ", text[:text.index('\n## Glossary')])[1:]
    for entry in entries:       # each runs a lesson and quotes the article with a verdict, or says why it cannot
        body = entry.split('\n', 1)[1]
        assert '`python -m demos ' in body and '- 「' in body or body.strip().startswith('Nothing'), entry[:60]


def test_the_glance_table_lists_every_section_with_its_lessons_and_verdicts():
    text = page()
    rows = [line.split(' | ') for line in text.splitlines() if re.match(r"\| (attention|architecture|deep_dive) \|", line)]
    assert [(row[0][2:], row[1]) for row in rows] == [(key, f"§{number}") for key in articles.HEADINGS
                                                      for number in articles.HEADINGS[key]]
    grouped = claims_page.claims_by_section(claims.read_records())
    for row in rows:
        key, number = row[0][2:], row[1][1:]
        groups = grouped.get((key, number), [])
        assert row[2] == (', '.join(lesson for lesson, _, _ in groups) or '—')
        assert row[3][:-2] == (', '.join(c.verdict for _, _, cs in groups for c in cs) or 'nothing to compute')


def test_the_glossary_has_the_articles_terms_and_real_names():
    text = page()
    glossary = text[text.index('\n## Glossary'):]
    for term in GLOSSARY_TERMS:
        assert f"| {term}" in glossary, term
    assert '秩坍缩' not in glossary                                        # not a term of the articles
    assert '`EncoderLayer(alpha=…)`' in glossary                           # 缩放残差
    for name in re.findall(r"`transformer\.(\w+)", glossary):
        assert hasattr(transformer, name) or importlib.util.find_spec(f"transformer.{name}"), name
    for name in re.findall(r"`(\w+)` lesson", glossary):
        assert name in dict(tour.LESSONS), name


def test_quote_in_compares_words_not_layout():
    text = "表头\n有残差\t$\\frac{\\partial y}{\\partial x} = 1 + \\frac{\\partial f}{\\partial x}$\t至少有 1，不会消失\t> 100 层"
    assert claims.quote_in('有残差 ∂y/∂x = 1 + ∂f/∂x 至少有 1，不会消失', text)
    assert claims.quote_in('有残差 … > 100 层', text)
    assert not claims.quote_in('有残差 > 100 层', text)                   # a gap needs its "…"
    assert not claims.quote_in('> 100 层 … 有残差', text)                  # parts in the article's order


# ---------------------------------------------------------------------------- against the articles' text
needs_the_articles = pytest.mark.skipif(
    claims.articles_folder() is None,
    reason=f"the articles' text is not in the repository: set ARTICLES_DIR to the folder that holds {SEEDS}")


@needs_the_articles
def test_the_registry_headings_are_the_articles_own():
    folder = claims.articles_folder()
    for key, name in claims.SEED_FILES.items():
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            lines = set(f.read().splitlines())
        for number, (chinese, _) in articles.HEADINGS[key].items():
            assert f"{number}{'' if '.' in number else '.'} {chinese}" in lines, (key, number)


@needs_the_articles
def test_every_quote_is_the_articles_words_under_its_section():
    folder = claims.articles_folder()
    wrong = [f"{claim.lesson}: {claim.article} §{claim.section} 「{quote}」" for _, claim in recorded()
             for quote in claim.quotes()
             if not claims.quote_in(quote, claims.section_text(claim.article, claim.section, folder))]
    assert not wrong, "not word for word in that section (mark omissions with …):\n" + '\n'.join(wrong)
