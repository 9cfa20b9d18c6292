"""demos/figures.py: a finding's figures kept raw, with what their printed form promises, and the judge
that compares a fresh run with a record (disagreements).  The judge is tested with planted mistakes
(a figure moved past its last printed digit, a bound that flipped, a changed label) and with unusual
right answers (a value that moved less than its last digit, a span whose middle seed moved)."""
import json

import pytest

from demos import claims, figures
from microtensor import i18n
from microtensor.i18n import N_


@pytest.mark.parametrize('text, one', [('93.4%', 0.001), ('2.7e-15', 1e-16), ('0.12', 0.01), ('1,024', 1),
                                       ('5', 1), ('1e-12', 1e-12), ('-0.730', 0.001), ('100%', 0.01)])
def test_the_unit_is_one_in_the_last_printed_digit(text, one):
    assert figures.unit(text) == pytest.approx(one)


def test_the_kinds_print_as_the_lessons_did_and_come_back_from_a_record():
    made = {'series': figures.series([0.119, 0.559], '.1%'), 'labelled': figures.series([0.6, 0.42], '.0%', labels='猫吃'),
            'sep': figures.series([0.2, 0.65], '.1%', sep=' / '), 'span': figures.span([0.525, 0.609, 0.55], '.1%'),
            'one': figures.span([0.7304, 0.7296], '.2f'), 'none': figures.span([], '.2f'),
            'noise': figures.below(2.7e-15, 1e-12), 'margin': figures.above(0.934, 0.85, '.0%'),
            'flipped': figures.above(0.3, 0.5, 'g'), 'timing': figures.measured(13.04, '.1f')}
    assert {k: str(v) for k, v in made.items()} == {
        'series': '11.9%, 55.9%', 'labelled': '猫 60%, 吃 42%', 'sep': '20.0% / 65.0%', 'span': '52.5-60.9%',
        'one': '0.73', 'none': '-', 'noise': '< 1e-12', 'margin': '> 85%', 'flipped': '<= 0.5', 'timing': '13.0'}
    for name, figure in made.items():
        back = figures.restored(json.loads(json.dumps(figures.stored(figure))))
        assert type(back) is type(figure) and str(back) == str(figure) and back.values == figure.values, name


def test_an_outcome_is_a_span_over_seeds_and_a_bound_from_one():
    assert str(figures.outcome([0.91, 0.95], '.1%', 2, above=0.5)) == '91.0-95.0%'
    assert str(figures.outcome([0.91], '.1%', 1, above=0.5)) == '> 50%'
    assert str(figures.outcome([0.69], '.2f', 1, above=0.5, bound_spec='g')) == '> 0.5'
    assert str(figures.outcome([0.11, 0.05], '.2f', 1, below=0.2, bound_spec='g')) == '< 0.2'   # every value
    assert str(figures.outcome([0.11, 0.25], '.2f', 1, below=0.2, bound_spec='g')) == '>= 0.2'  # the worst decides
    assert str(figures.outcome([], '.2f', 1, below=0.2)) == '-'


def test_the_tolerance_is_what_the_template_prints():
    words = i18n.words(N_("k = {k}: {accuracy}"), k=3, accuracy=figures.span([1.0], '.1%'))
    promised = figures.tolerance("{left:.1%} {merged} {n} {x:.2g} {words} {text} {gap}",
                                 {'left': 0.9994, 'merged': figures.below(3e-15, 1e-12), 'n': 8, 'x': 0.0123,
                                  'words': words, 'text': 'sin(2x)', 'unprinted': 0.123,
                                  'gap': figures.measured(1.5, '.1f')})
    assert promised == {'left': pytest.approx(0.001), 'merged': 'bound', 'n': 0, 'x': pytest.approx(0.001),
                        'words': {'fields': {'k': 0, 'accuracy': [pytest.approx(0.001)] * 2}}, 'text': 0,
                        'unprinted': None, 'gap': 'measured'}


def agree(template, then, now):
    """disagreements() of a fresh run `now` against a record `then`, both as a record keeps them."""
    saved = {k: figures.stored(v) for k, v in then.items()}
    fresh = {k: figures.stored(v) for k, v in now.items()}
    promised = figures.tolerance(template, then)
    return [d for name in then for d in figures.disagreements(saved[name], fresh[name], promised[name], name)]


@pytest.mark.parametrize('template, then, now', [
    ('{x:.1%}', {'x': 0.5594}, {'x': 0.5601}),                        # within 1 in the last digit (55.9% vs 56.0%)
    ('{x:.1e}', {'x': 2.66e-7}, {'x': 2.71e-7}),
    ('{x}', {'x': figures.below(2.7e-15, 1e-12)}, {'x': figures.below(3.1e-15, 1e-12)}),   # noise: another value
    ('{x}', {'x': figures.span([0.5, 0.6, 0.7], '.2f')}, {'x': figures.span([0.5, 0.66, 0.7], '.2f')}),  # the middle seed
    ('{x}', {'x': figures.measured(13.0, '.1f')}, {'x': figures.measured(7.5, '.1f')}),        # a timing: not compared
    ('{y}', {'x': 0.5, 'y': 1}, {'x': 0.9, 'y': 1}),                   # x is not printed: it promises nothing
    ('{x}', {'x': i18n.words(N_("k = {k}: {accuracy}"), k=6, accuracy=figures.span([0.9102], '.1%'))},
     {'x': i18n.words(N_("k = {k}: {accuracy}"), k=6, accuracy=figures.span([0.9108], '.1%'))}),
])
def test_unusual_right_answers_agree(template, then, now):
    assert agree(template, then, now) == []


@pytest.mark.parametrize('template, then, now', [
    ('{x:.1%}', {'x': 0.559}, {'x': 0.543}),                           # a chaotic training's 55.9% -> 54.3%
    ('{x:.2f}', {'x': 0.69}, {'x': 0.77}),
    ('{x:.1e}', {'x': 2.7e-15}, {'x': 2.2e-15}),                       # noise printed as its value
    ('{n}', {'n': 15}, {'n': 16}),                                     # a count is exact
    ('{x}', {'x': 'ReLU'}, {'x': 'GELU'}),
    ('{x}', {'x': figures.below(1.6e-7, 1e-6)}, {'x': figures.below(2e-6, 1e-6)}),     # the bound flipped
    ('{x}', {'x': figures.above(0.93, 0.85, '.0%')}, {'x': figures.above(0.93, 0.8, '.0%')}),   # another bound
    ('{x}', {'x': figures.series([0.119, 0.559], '.1%')}, {'x': figures.series([0.119, 0.543], '.1%')}),
    ('{x}', {'x': figures.series([0.1, 0.5], '.1%')}, {'x': figures.series([0.1, 0.5, 0.9], '.1%')}),
    ('{x}', {'x': figures.series([0.6], '.0%', labels=['猫'])}, {'x': figures.series([0.6], '.0%', labels=['鱼'])}),
    ('{x}', {'x': figures.span([0.5, 0.6, 0.7], '.2f')}, {'x': figures.span([0.5, 0.6, 0.75], '.2f')}),  # its end
    ('{x}', {'x': figures.span([0.5, 0.7], '.2f')}, {'x': figures.below(0.1, 0.2)}),      # another kind
    ('{x}', {'x': i18n.words(N_("k = {k}: {accuracy}"), k=6, accuracy=figures.span([0.910], '.1%'))},
     {'x': i18n.words(N_("k = {k}: {accuracy}"), k=6, accuracy=figures.span([0.890], '.1%'))}),
    ('{x}', {'x': i18n.words(N_("seed {first}"), first=0)}, {'x': i18n.words(N_("seeds {first}-{last}"), first=0,
                                                                             last=4)}),
])
def test_planted_mistakes_are_caught(template, then, now):
    assert agree(template, then, now), (then, now)


def test_text_that_holds_printed_numbers_is_refused():
    words = i18n.words(N_("k = {k}: {accuracy}"), k=6, accuracy='91.0%')
    assert figures.pre_formatted({'accs': '11.9%, 55.9%', 'x': 0.5, 'gap': '2.7e-15', 'task': 'sin(2x)',
                                  'shape': '(3, 12)', 'w': words, 'ok': figures.series([0.1], '.1%')},
                                 '{accs} {x} {gap} {task} {shape} {w} {ok}') == ['accs', 'gap', 'w.accuracy']
    with pytest.raises(ValueError, match="accs.*give them raw"):
        claims.record('attention', '2.3.1', 'q', 'holds', N_("reaches {accs}"), accs='55.9%')
