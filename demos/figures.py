"""The figures a finding prints, kept raw, with what their printed form promises.

A reader who runs a lesson's command on another machine (another BLAS kernel, other SIMD loops in
numpy) gets other last bits in every product, and a training run that is chaotic turns those bits
into other outcomes.  So a figure promises only what its printed form can keep:

    a number, printed at a precision      {left:.1%} -> 99.9%         within 1 in its last digit: 0.001
    several numbers                       series(accs, '.1%')         each within 1 in its last digit
    a range over seeds                    span(accs, '.1%') -> 52.5-60.9%   (one number when all agree)
    rounding noise                        below(gap, 1e-12) -> < 1e-12      never its value or its decade
    what one chaotic run shows            above(acc, 0.8, '.0%') -> > 80%   a bound with a margin
                                          (outcome(): over several seeds, their span; from one, a bound)
    a count (an int), or words            exact
    a run time or a speed ratio           measured(ratio, '.1f')       this machine's: compared by its shape only

Each is a str (what the finding prints) that keeps its raw numbers, so a record stores the raw
values (stored()) and the tolerance each printed form promises (tolerance()), and a test compares
a fresh run's raw values with the record's within that tolerance (disagreements()), never the
strings.  A number typed as text ('93.4%') would promise nothing a test can check: record()
refuses it (pre_formatted()).
"""
import math
import re
import string

from microtensor import i18n

# text that holds a printed number: 93.4, 55.9%, 2.7e-15
PRE_FORMATTED = re.compile(r"\d\.\d|\d%|\de[-+]\d")


def unit(text):
    """1 in the last printed digit of a number as printed: '93.4%' -> 0.001, '2.7e-15' -> 1e-16,
    '0.12' -> 0.01, '1,024' -> 1."""
    text = text.strip().replace(',', '')
    scale = 0.01 if text.endswith('%') else 1.0
    mantissa, _, exponent = text.rstrip('%').lower().partition('e')
    decimals = len(mantissa.split('.')[1]) if '.' in mantissa else 0
    return scale * 10.0 ** (int(exponent or 0) - decimals)


class Figure(str):
    """A figure as it prints (the str) with its raw numbers: values, each printed with `spec`."""
    values: list
    spec: str

    def printed(self):
        """The values the text shows."""
        return self.values

    def tolerance(self):
        """1 in the last printed digit of each value printed (a count printed with 'd' is exact: 0)."""
        return [0 if self.spec.endswith('d') else unit(format(v, self.spec)) for v in self.printed()]


class Series(Figure):
    """Several numbers printed alike: '11.9%, 55.9%, 93.4%'; with labels, '猫 60%, 吃 42%, 鱼 47%'."""

    @classmethod
    def make(cls, values, spec, sep=', ', labels=None):
        values = [_number(v) for v in values]
        texts = [format(v, spec) for v in values]
        figure = cls(sep.join(texts if labels is None else (f"{label} {text}" for label, text in zip(labels, texts))))
        figure.values, figure.spec, figure.sep, figure.labels = values, spec, sep, labels
        return figure

    def stored(self):
        return {'kind': 'series', 'values': self.values, 'spec': self.spec, 'sep': self.sep, 'labels': self.labels}


class Span(Figure):
    """The lowest and highest of several values (a figure over seeds): '52.5-60.9%'; one value when
    they print the same, '-' when there are none."""

    @classmethod
    def make(cls, values, spec):
        values = [_number(v) for v in values]
        if not values:
            text = '-'
        else:
            low, high = format(min(values), spec), format(max(values), spec)
            text = low if low == high else f"{low[:-1] if spec.endswith('%') else low}-{high}"
        figure = cls(text)
        figure.values, figure.spec = values, spec
        return figure

    def printed(self):
        return [min(self.values), max(self.values)] if self.values else []

    def stored(self):
        return {'kind': 'span', 'values': self.values, 'spec': self.spec}


class Bound(Figure):
    """A figure printed as a bound, '< 1e-12' or '> 80%': rounding noise (whose value and order of
    magnitude change with the machine), or what one chaotic training run shows with a margin.  It
    prints what holds: a value on the wrong side prints '>= 1e-12', and no record will match it."""

    @classmethod
    def make(cls, value, limit, spec, upper):
        value = _number(value)
        holds = value < limit if upper else value > limit
        sign = ('<' if holds else '>=') if upper else ('>' if holds else '<=')
        figure = cls(f"{sign} {format(limit, spec)}")
        figure.values, figure.spec, figure.limit, figure.upper = [value], spec, limit, upper
        return figure

    def stored(self):
        return {'kind': 'bound', 'value': self.values[0], 'limit': self.limit, 'spec': self.spec,
                'upper': self.upper}

    def tolerance(self):
        return 'bound'   # the bound is the promise: the same sign, the same limit


class Measured(Figure):
    """A run time or a speed ratio: this machine's, under its load; it promises nothing another machine
    can check (the records' test checks its shape: who is faster), and decides no verdict."""

    @classmethod
    def make(cls, value, spec):
        value = _number(value)
        figure = cls(format(value, spec))
        figure.values, figure.spec = [value], spec
        return figure

    def stored(self):
        return {'kind': 'measured', 'value': self.values[0], 'spec': self.spec}

    def tolerance(self):
        return 'measured'


def series(values, spec, sep=', ', labels=None):
    """Several numbers, each printed with `spec` (after its label, if given), joined by `sep`."""
    return Series.make(values, spec, sep, None if labels is None else [str(label) for label in labels])


def span(values, spec):
    """'0.70-0.76' over seeds, or '0.73' when they agree at `spec`'s precision."""
    return Span.make(values, spec)


def below(value, limit, spec='.0e'):
    """'< 1e-12': rounding noise, or a small figure with a margin."""
    return Bound.make(value, limit, spec, upper=True)


def above(value, limit, spec='g'):
    """'> 80%' (spec '.0%'): what one chaotic run shows, with a margin."""
    return Bound.make(value, limit, spec, upper=False)


def outcome(values, spec, seeds, below=None, above=None, bound_spec='.0%'):
    """What trainings ended at: over several seeds the span() of `values`; from one seed (a lesson's
    quick mode) only what one chaotic run shows with a margin: every value `below` or `above` a bound,
    printed with `bound_spec` ('-' when there are no values)."""
    values = list(values)
    if seeds > 1 or not values:
        return span(values, spec)
    worst = max(values) if below is not None else min(values)
    return Bound.make(worst, above if below is None else below, bound_spec, upper=below is not None)


def measured(value, spec):
    """A timing (seconds, a speed ratio), printed with `spec`: this machine's."""
    return Measured.make(value, spec)


def _number(value):
    return value.item() if hasattr(value, 'item') else value


# ---------------------------------------------------------------------------- records: raw values and tolerances
KINDS = {'series': lambda d: Series.make(d['values'], d['spec'], d['sep'], d['labels']),
         'span': lambda d: Span.make(d['values'], d['spec']),
         'bound': lambda d: Bound.make(d['value'], d['limit'], d['spec'], d['upper']),
         'measured': lambda d: Measured.make(d['value'], d['spec'])}


def stored(value):
    """A figure as a record's JSON holds it: raw numbers (numpy scalars as Python's), a Figure as its
    kind and values, Words as their template and fields (i18n.Words), a tuple (a shape) as the text it
    prints, (3, 48) (JSON has no tuples, and a list prints [3, 48])."""
    if isinstance(value, Figure):
        return value.stored()
    if isinstance(value, i18n.Words):
        return {'template': value.template, 'fields': {k: stored(v) for k, v in value.fields.items()}}
    if isinstance(value, tuple):
        return str(tuple(stored(v) for v in value))
    if isinstance(value, list):
        return [stored(v) for v in value]
    return _number(value)


def restored(value):
    """stored()'s inverse, for a record read back: Figures and Words as the lesson made them."""
    if isinstance(value, dict) and value.get('kind') in KINDS:
        return KINDS[value['kind']](value)
    if isinstance(value, dict) and set(value) == {'template', 'fields'}:
        return i18n.words(value['template'], **{k: restored(v) for k, v in value['fields'].items()})
    return value


def printed_names(template):
    """{figure name: its format spec} of the fields `template` prints."""
    return {name: spec for _, name, spec, _ in string.Formatter().parse(template) if name}


def tolerance(template, figures):
    """{name: what the printed form of each figure promises}: for a number, 1 in the last digit printed
    by `template` (a count, an int, is exact: 0); for a Figure, its own (a list, 'bound' or 'measured');
    for Words, {'fields': ...} of theirs by their template; for text, 0 (exact); None for a figure the
    template does not print (it promises nothing)."""
    printed = printed_names(template)
    promises = {}
    for name, value in figures.items():
        if name not in printed:
            promises[name] = None
        elif isinstance(value, Figure):
            promises[name] = value.tolerance()
        elif isinstance(value, i18n.Words):
            promises[name] = {'fields': tolerance(value.template, value.fields)}
        elif isinstance(value, float) or (hasattr(value, 'dtype') and value.dtype.kind == 'f'):
            promises[name] = unit(format(_number(value), printed[name]))
        else:
            promises[name] = 0
    return promises


def pre_formatted(figures, template=''):
    """The names of figures given as text that holds printed numbers ('93.4%', '0.70-0.76'), which
    no test could compare within a tolerance: they must be given raw (a number, series(), span())."""
    found = []
    printed = printed_names(template) if template else figures
    for name, value in figures.items():
        if isinstance(value, Figure) or name not in printed:
            continue
        if isinstance(value, i18n.Words):
            found += [f"{name}.{inner}" for inner in pre_formatted(value.fields, value.template)]
        elif isinstance(value, str) and PRE_FORMATTED.search(value):
            found.append(name)
    return found


def disagreements(then, now, promised, where=''):
    """What differs between a recorded figure `then` and a fresh run's `now` beyond what `promised`
    (tolerance()'s entry) allows; [] when they agree.  Both as stored() keeps them."""
    then, now = restored(then), restored(now)
    differ = [f"{where}: {then!r} is now {now!r}"]
    if promised is None or promised == 'measured':
        return []
    if promised == 'bound':
        return [] if isinstance(now, Bound) and str(now) == str(then) else differ
    if isinstance(promised, dict):
        if not (isinstance(now, i18n.Words) and now.template == then.template):
            return differ
        return [d for name, p in promised['fields'].items()
                for d in disagreements(then.fields[name], now.fields.get(name), p, f"{where}.{name}")]
    if isinstance(promised, list):
        if type(now) is not type(then) or len(now.printed()) != len(promised) or \
                getattr(now, 'labels', None) != getattr(then, 'labels', None):
            return differ
        return [d for k, (a, b, p) in enumerate(zip(then.printed(), now.printed(), promised))
                for d in disagreements(a, b, p, f"{where}[{k}]")]
    if promised == 0 or not all(isinstance(v, (int, float)) for v in (then, now)):
        return [] if then == now else differ
    if then == now or math.isnan(then) and math.isnan(now):
        return []
    return [] if abs(now - then) <= promised * (1 + 1e-9) else \
        [f"{where}: {then!r} is now {now!r}, more than {promised:g} (1 in the last printed digit) apart"]
