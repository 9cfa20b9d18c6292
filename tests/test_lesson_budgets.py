"""Every lesson estimates what its sizes cost before it starts (demos/budget.py) and refuses, as a
usage error naming the option and the limit, what this machine cannot do: each size option of
every lesson, set far too large, is refused at once; the defaults and --full are accepted.
The lessons are parsed in-process with run_lesson replaced, so nothing is ever trained here."""
import argparse
import importlib

import pytest
from hypothesis import given, settings, strategies as st

from demos import budget
from demos.__main__ import LESSONS

# options that set no size: a huge value costs nothing (fewer logs, a later checkpoint, no warm-up)
NOT_SIZES = ('seed', 'warmup', 'log_every', 'eval_every', 'ckpt_every', 'stop_after')


class Parsed(Exception):
    """Raised instead of parsing: the lesson's parser, caught."""


def size_options(name, monkeypatch):
    """[(flag, takes a list)] of the lesson's integer options that set a size."""
    module = importlib.import_module(f'demos.{name}')
    parsers = []

    def capture(self, args=None, namespace=None):
        parsers.append(self)
        raise Parsed
    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, 'parse_args', capture)
        with pytest.raises(Parsed):
            module.main([])
    options = []
    for action in parsers[-1]._actions:
        default = action.default
        values = default if isinstance(default, (tuple, list)) else [default]
        if (action.option_strings and action.dest not in NOT_SIZES and values
                and all(type(v) is int for v in values)):
            options.append((action.option_strings[0], isinstance(default, (tuple, list))))
    return module, options


def outcome(module, argv, monkeypatch, capsys):
    """'started' when the lesson would have run, else the usage error it printed."""
    monkeypatch.setattr(module, 'run_lesson', lambda run, args: 'started')
    try:
        return module.main(argv)
    except SystemExit as error:
        assert error.code == 2, error.code
        return capsys.readouterr().err


@pytest.mark.parametrize('name', sorted(name for name, _ in LESSONS))
def test_every_size_option_of_every_lesson_is_refused_when_too_large(name, monkeypatch, capsys):
    module, options = size_options(name, monkeypatch)
    assert outcome(module, [], monkeypatch, capsys) == 'started'           # the defaults fit
    if any(flag == '--full' for flag, _ in options) or hasattr(module, 'FULL'):
        assert outcome(module, ['--full'], monkeypatch, capsys) == 'started'
    for flag, many in options:
        message = outcome(module, [flag, str(10 ** 12)], monkeypatch, capsys)
        assert message != 'started', f"{name} {flag} 10**12 was accepted"
        assert f"{flag} 1000000000000" in message and 'error:' in message, message


@pytest.mark.parametrize('name, argv, limit', [
    ('positions', ['--train-len', '1000000000000'], 'memory'),
    ('encoder_only_mlm', ['--batch-size', '1000000000000'], 'memory'),
    ('train_xor', ['--steps', '1000000000000'], 'hours'),
    ('train_gpt', ['--steps', '100000000'], 'hours'),
    ('kv_cache', ['--small', '--new-tokens', '58'], 'at most 57 new tokens'),
])
def test_the_message_names_the_option_and_the_limit(name, argv, limit, monkeypatch, capsys):
    message = outcome(importlib.import_module(f'demos.{name}'), argv, monkeypatch, capsys)
    assert f"{argv[-2]} {argv[-1]}" in message and limit in message, message
    if limit == 'memory':
        assert "more than this machine's" in message and 'GiB' in message
    if limit == 'hours':
        assert f"the limit is {budget.LIMIT_SECONDS // 3600} hours" in message


@settings(deadline=None)
@given(B=st.integers(1, 10 ** 6), T=st.integers(1, 10 ** 6), d=st.integers(1, 4096), L=st.integers(1, 64),
       steps=st.integers(1, 10 ** 9))
def test_a_refused_run_is_one_a_larger_run_would_also_exceed(B, T, d, L, steps):
    """The estimate grows with every size: refusing is monotone, so the limit is a boundary."""
    small = budget.transformer(B, T, d, L, steps=steps)
    larger = budget.transformer(2 * B, T + 1, d + 1, L + 1, steps=steps + 1)
    assert larger.numbers > small.numbers and larger.work > small.work
    if budget.refuse({'--x': 1}, small) is not None:
        assert budget.refuse({'--x': 1}, larger) is not None
