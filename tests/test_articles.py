"""The lessons and the articles point at each other: every lesson's SECTIONS are sections of the
articles (demos/articles.py) and have an entry in docs/articles.md that runs that lesson, and
that page's entries name only sections and lessons that exist."""
import importlib
import os
import re

import pytest

import transformer
from demos import __main__ as tour, articles
from readme import ROOT

DOC = os.path.join(ROOT, 'docs', 'articles.md')
VERDICTS = ('holds', 'partly', 'the article is wrong')
ENGINE_LESSONS = {'compare_with_torch'}  # lessons about the engine itself: SECTIONS = [], no article checked
GLOSSARY_TERMS = ('缩放点积注意力', '多头注意力', '残差连接', '层归一化', '前馈网络', '位置编码', '外推', '预热', '掩码',
                  '键值缓存')


def lesson_sections():
    """{lesson: its SECTIONS}; an AttributeError names a lesson that declares none (SECTIONS = [] says
    explicitly that it checks no article's claim, as compare_with_torch, which checks the engine)."""
    return {name: importlib.import_module(f"demos.{name}").SECTIONS for name, _ in tour.LESSONS}


def documented():
    """{(article key, number): the text of its entry} from docs/articles.md, and the at-a-glance table's rows."""
    with open(DOC, encoding='utf-8') as f:
        text = f.read()
    titles = {f"## {a.title} ({a.short})": key for key, a in articles.ARTICLES.items()}
    entries, article, number = {}, None, None
    for line in text[:text.index('\n## Glossary')].splitlines():
        if line.startswith('## '):
            article, number = titles.get(line), None
        elif line.startswith('### '):
            assert article is not None, f"docs/articles.md: {line!r} is not under an article's title"
            match = re.match(r"### §(\S+) ", line)
            number = match.group(1)
            assert line == f"### {articles.section_line(article, number)}", line  # the registry's heading
            entries[article, number] = ''
        elif number is not None:
            entries[article, number] += line + '\n'
    glance = [line.split(' | ') for line in text.splitlines()
              if re.match(r"\| (attention|architecture|deep_dive) \|", line)]
    return entries, [(row[0][2:], row[1], row[2].split(', '), row[3][:-2].split(', ')) for row in glance], text


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


@pytest.mark.skipif(not os.path.isdir(os.environ.get('ARTICLES_DIR', os.path.join(ROOT, os.pardir, 'shared', 'seeds'))),
                    reason="the articles' text is not in the repository: set ARTICLES_DIR to the folder that holds "
                           "attention-atom.zh.txt, transformer-architecture.zh.txt and transformer-deep-dive.zh.txt")
def test_the_registry_headings_are_the_articles_own():
    folder = os.environ.get('ARTICLES_DIR', os.path.join(ROOT, os.pardir, 'shared', 'seeds'))
    files = {'attention': 'attention-atom.zh.txt', 'architecture': 'transformer-architecture.zh.txt',
             'deep_dive': 'transformer-deep-dive.zh.txt'}
    for key, name in files.items():
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            lines = set(f.read().splitlines())
        for number, (chinese, _) in articles.HEADINGS[key].items():
            assert f"{number}{'' if '.' in number else '.'} {chinese}" in lines, (key, number)


def test_every_lesson_declares_sections_of_the_articles():
    for name, sections in lesson_sections().items():
        assert isinstance(sections, list), f"{name}.SECTIONS must be a list of (article, number)"
        assert bool(sections) == (name not in ENGINE_LESSONS), f"{name} declares no sections"
        for article, number in sections:
            articles.heading(article, number)  # a KeyError names what is missing
        assert len(set(sections)) == len(sections), name


def test_every_lesson_section_has_an_entry_that_runs_the_lesson():
    entries, _, _ = documented()
    for name, sections in lesson_sections().items():
        for section in sections:
            assert section in entries, f"docs/articles.md has no entry for {section} ({name})"
            assert f"`python -m demos {name}" in entries[section], f"{section}'s entry does not run {name}"


def test_every_entry_runs_lessons_that_declare_it_and_gives_verdicts():
    entries, glance, _ = documented()
    sections = lesson_sections()
    rows = []
    for (article, number), text in entries.items():
        named = list(dict.fromkeys(re.findall(r"`python -m demos (\w+)", text)))
        assert named, (article, number)
        for name in named:
            assert (article, number) in sections[name], f"docs/articles.md runs {name} for {article} §{number}, " \
                                                        f"which {name}.SECTIONS does not name"
        verdicts = re.findall(r"\*\*(holds|partly|the article is wrong)\*\*", ' '.join(text.split()))
        assert verdicts and all(v in VERDICTS for v in verdicts), (article, number)
        claims = [line for line in text.splitlines() if line.startswith('- ')]
        assert claims and all(line.startswith('- 「') for line in claims), (article, number)  # each claim quoted
        assert len(verdicts) == len(claims), (article, number)                                # with its verdict
        rows.append((article, f"§{number}", named, verdicts))
    assert glance == rows  # the at-a-glance table is the entries, in order


def test_the_glossary_has_the_articles_terms_and_real_names():
    _, _, text = documented()
    glossary = text[text.index('\n## Glossary'):]
    for term in GLOSSARY_TERMS:
        assert f"| {term}" in glossary, term
    for name in re.findall(r"`transformer\.(\w+)", glossary):
        assert hasattr(transformer, name) or importlib.util.find_spec(f"transformer.{name}"), name
    for name in re.findall(r"`(\w+)` lesson", glossary):
        assert name in dict(tour.LESSONS), name
