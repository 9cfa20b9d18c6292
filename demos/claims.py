"""The articles' claims a lesson checks, recorded as data where the lesson prints them.

A lesson computes a figure, prints it, and records the claim it bears on in the same call:

    claims.record('deep_dive', '8.2', '梯度路径长度：1……"一跳直达"', 'holds',
                  N_("from distance 1 to {far} the RNN's gradient falls by {rnn:.1e}, attention's changes by "
                     "{attention:.2f}x"), look=N_('the line "from distance 1 to ..."'), far=31, rnn=6.3e-12,
                  attention=1.19)

record() fills the finding with the figures, prints it under the lesson's output and keeps it in
RECORDED; the printed line and the record are one string, so they cannot disagree.  The record keeps
the English finding and its template; the line printed is in the learner's language (the template's
catalog entry, filled with the same figures, and the verdict's words: 成立, 部分成立, 原文有误, 本任务未检验).
The record keeps each figure raw, with the tolerance its printed form promises (demos/figures.py: 1 in
its last printed digit, or a bound such as "< 1e-12"), so that a run on another machine is compared
with it number by number, within that tolerance.
`python -m demos.articles --write` runs the lessons, saves what each recorded as JSON under
docs/claims/ (write_records) and renders docs/articles.md and docs/articles.zh.md from those records and
the headings in demos/articles.py.  A figure that depends on the machine is recorded with timing=True (a run
time, a speed ratio) and labelled with the machine; one that depends on the environment with
depends_on='...' (the stdlib corpus: the Python version).  Tests compare everything else with a fresh
run: the verdict and the template exactly, each figure within its tolerance.

A quote is the article's words, verbatim, "…" where words are left out (quote_in() checks it);
a claim quoting several places gives them as a list.
"""
import dataclasses
import json
import os
import platform
import re
import sys

from microtensor import i18n
from microtensor.atomic_write import write_atomically
from microtensor.i18n import N_, _

from . import figures as figure_kinds

# the verdict keys, as the records keep them (English); each one's words in Chinese are its catalog entry:
# holds 成立, partly 部分成立, the article is wrong 原文有误, not tested by this task 本任务未检验
VERDICTS = (N_('holds'), N_('partly'), N_('the article is wrong'), N_('not tested by this task'))
RECORDS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs', 'claims')
RECORDED = []   # every Claim recorded in this process, oldest first


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of one article's section and what a lesson found.

    lesson: the lesson that computed it; article, section: where the claim is (demos/articles.py);
    quote: the article's words (a list when it quotes several places); verdict: one of VERDICTS;
    finding: the sentence with the figures, in English; template: the English format string it was
    filled from (its Chinese is the catalog's entry, so either edition renders from the record); look:
    what to look at in the lesson's output (labels it prints); figures: {name: value} the finding was filled with
    (raw: numbers, or demos/figures.py's kinds); tolerance: {name: what its printed form promises}
    (figures.tolerance); timing: the finding
    holds run times or speed ratios (this machine's); depends_on: what else the figures depend
    on (None: only on the code and the seed); seeds: how many training seeds the verdict rests on
    (None: nothing trained)."""
    lesson: str
    article: str
    section: str
    quote: object
    verdict: str
    finding: str
    template: str = ''
    look: str = ''
    figures: dict = dataclasses.field(default_factory=dict)
    timing: bool = False
    depends_on: object = None
    seeds: object = None
    tolerance: dict = dataclasses.field(default_factory=dict)

    def quotes(self):
        return [self.quote] if isinstance(self.quote, str) else list(self.quote)

    def line(self, tr=None):
        """「quote」 — **verdict**: finding (a line of docs/articles.md); with `tr`, a language's gettext
        (i18n.translator('zh')), the verdict and the finding in that language, the same figures."""
        quoted = ', '.join(f"「{q}」" for q in self.quotes())
        if tr is None:
            return f"{quoted} — **{self.verdict}**: {self.finding}"
        return tr(N_("{quotes} — **{verdict}**: {finding}")).format(
            quotes=quoted, verdict=tr(self.verdict), finding=self.finding_in(tr))

    def finding_in(self, tr):
        """The finding in the language of `tr`: its template translated, filled with the same figures (a
        figure in words, words(), in that language too)."""
        if not self.template:
            return self.finding
        return tr(self.template).format(**{name: i18n.in_language(figure_kinds.restored(value), tr)
                                           for name, value in self.figures.items()})


def record(article, section, quote, verdict, finding, look='', timing=False, depends_on=None, seeds=None,
           **figures):
    """Record a claim of `article` §`section` the calling lesson has just computed, print it, return the finding.

    finding: a format string filled from **figures (the same numbers the lesson prints), marked N_() in
    the lesson, as is `look`: the line printed is in the current language, the record keeps English.
    A figure is given raw (a number, the template giving its precision; or figures.series, span, below,
    above), never as text that holds a printed number."""
    from . import articles
    articles.heading(article, section)               # a KeyError names a section that does not exist
    if verdict not in VERDICTS:
        raise ValueError(f"claims.record: verdict {verdict!r} is not one of {VERDICTS}")
    lesson = _calling_lesson()
    typed = figure_kinds.pre_formatted(figures, finding)
    if typed:
        raise ValueError(f"claims.record ({lesson}, {article} §{section}): the figures {', '.join(typed)} are text "
                         "that holds printed numbers; give them raw (a number with its precision in the template, "
                         "or demos/figures.py's series(), span(), below(), above()) so that a record can compare "
                         "them within the tolerance their printed form promises")
    text = finding.format(**figures)
    claim = Claim(lesson, article, section, quote, verdict, text, finding, look,
                  {k: figure_kinds.stored(v) for k, v in figures.items()}, timing, depends_on, seeds,
                  figure_kinds.tolerance(finding, figures))
    RECORDED.append(claim)
    line = claim.line() if i18n.current() == 'en' else claim.line(_)
    print(f"  [{articles.cite(article, section)}] {line.replace('**', '')}")
    return text


def _calling_lesson():
    """The name of the lesson module two frames up (demos.NAME, or __main__ under python -m demos.NAME)."""
    module = sys._getframe(2).f_globals
    spec = module.get('__spec__')
    name = spec.name if spec is not None else module['__name__']
    return name.split('.')[-1]


# ---------------------------------------------------------------------------- the records on disk
MACHINE = N_("{cpu}, {cores} CPU cores, {system}, Python {python}")


def machine():
    """The machine a run time was measured on, in a few words (English: the records keep it so)."""
    return MACHINE.format(cpu=platform.machine() or 'unknown CPU', cores=os.cpu_count(), system=platform.system(),
                          python=platform.python_version())


def machine_in(text, tr):
    """A record's machine, machine()'s words, in the language of `tr` (as it is when it has other words)."""
    pattern = re.sub(r'\\\{(\w+)\\\}', r'(?P<\1>.+?)', re.escape(MACHINE))
    found = re.fullmatch(pattern, text)
    return tr(MACHINE).format(**found.groupdict()) if found else text


def path_of(lesson, full=False):
    return os.path.join(RECORDS, f"{lesson}{'.full' if full else ''}.json")


def write_records(lesson, claims, seconds, full=False, load=None, folder=None):
    """Save a run's claims as docs/claims/LESSON.json (LESSON.full.json for the run over several seeds:
    --full, or --seeds 5, articles.seeded_argv), atomically."""
    from .articles import seeded_argv
    data = {'lesson': lesson, 'mode': 'full' if full else 'quick',
            'command': ' '.join(['python -m demos', lesson] + (seeded_argv(lesson) if full else [])),
            'run_time_s': round(seconds, 1), 'load': load, 'machine': machine(),
            'claims': [dataclasses.asdict(c) for c in claims]}
    path = path_of(lesson, full) if folder is None else os.path.join(folder, os.path.basename(path_of(lesson, full)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = json.dumps(data, ensure_ascii=False, indent=1) + '\n'
    write_atomically(path, lambda f: f.write(text.encode('utf-8')), who='claims.write_records')
    return path


def read_records(folder=RECORDS):
    """{(lesson, 'quick' or 'full'): the record as saved} of every file under docs/claims/."""
    records = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.endswith('.json'):
            with open(os.path.join(folder, name), encoding='utf-8') as f:
                data = json.load(f)
            data['claims'] = [Claim(**dict(c, figures={k: figure_kinds.restored(v) for k, v in c['figures'].items()}))
                              for c in data['claims']]
            records[data['lesson'], data['mode']] = data
    return records


# ---------------------------------------------------------------------------- quotes and the articles' text
SEED_FILES = {'attention': 'attention-atom.zh.txt', 'architecture': 'transformer-architecture.zh.txt',
              'deep_dive': 'transformer-deep-dive.zh.txt'}


def articles_folder():
    """ARTICLES_DIR when set (the folder with the three texts, SEED_FILES), else None."""
    folder = os.environ.get('ARTICLES_DIR')
    return folder if folder and all(os.path.isfile(os.path.join(folder, f)) for f in SEED_FILES.values()) else None


def section_text(article, section, folder):
    """The text of `section` of `article`, from its heading line to the next heading of the registry."""
    from . import articles
    with open(os.path.join(folder, SEED_FILES[article]), encoding='utf-8') as f:
        text = f.read()
    numbers = list(articles.HEADINGS[article])
    starts = []
    for number in numbers:
        line = f"{number}{'' if '.' in number else '.'} {articles.HEADINGS[article][number][0]}\n"
        at = ('\n' + text).find('\n' + line)
        starts.append(at)
    start = starts[numbers.index(section)]
    later = [s for s in starts if s > start]
    return text[start:min(later) if later else len(text)]


LATEX = {r'\sqrt': '√', r'\cdot': '·', r'\approx': '≈', r'\times': '×', r'\pi': 'π', r'\alpha': 'α',
         r'\partial': '∂', r'\theta': 'θ', r'\pm': '±', r'\le': '≤', r'\ge': '≥', r'\to': '→', r'\rightarrow': '→'}


def _squash(text):
    """The text as it reads: LaTeX's $, braces and \\text dropped, its symbols as characters, no white space."""
    text = re.sub(r'\\frac\{([^{}]*)\}\{([^{}]*)\}', r'\1/\2', text.replace('²', '^2'))
    text = re.sub(r'\\([%#&_])', r'\1', text)
    text = re.sub(r'\\(text|mathrm|operatorname|left|right)', '', text)
    text = re.sub(r'\\[a-zA-Z]+', lambda m: LATEX.get(m.group(0), m.group(0)), text)
    return re.sub(r'[\s${}]+', '', text)


def quote_in(quote, text):
    """True when `quote` is in `text` word for word, its parts ("…" marks a gap) in order; white
    space is not compared (tables and line breaks), everything else is."""
    at = 0
    squashed = _squash(text)
    for part in re.split(r'\s*…+\s*', quote):
        part = _squash(part)
        if not part:
            continue
        found = squashed.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def spread(fractions):
    """'91.4%' for one run (or several that agree to 0.1%), '88.1-93.0%' for several: the range over the seeds."""
    return figure_kinds.span(fractions, '.1%')


def seeds_note(n):
    """'1 seed', '5 seeds': what a training verdict rests on."""
    return f"{n} seed{'s' * (n != 1)}"


def between(values, spec='.2f'):
    """'0.73' or '0.70-0.76': a figure over the seeds, formatted with `spec`."""
    return figure_kinds.span(values, spec)


def _load(record):
    return '' if record['load'] is None else _(", load {load:.1f}").format(load=record['load'])


def run_time(lesson, folder=RECORDS):
    """'Typical run time: 2.4 s (quick), 146 s (--full), measured on ... under load 1.7' from the lesson's
    saved records, or None when it has none."""
    found = []
    for full in (False, True):
        path = os.path.join(folder, os.path.basename(path_of(lesson, full)))
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as f:
                found.append(json.load(f))
    if not found:
        return None
    defaults = _('the defaults')
    times = ', '.join(f"{r['run_time_s']:g} s ({r['command'].split(lesson, 1)[1].strip() or defaults}{_load(r)})"
                      for r in found)
    return _("Typical run time: {times}, measured on {machine} (docs/claims/).").format(
        times=times, machine=machine_in(found[0]['machine'], _))
