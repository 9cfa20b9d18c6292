"""The one switch between the textbook ops (microtensor/ops/, the default) and the fused layer.

    mt.set_fused(True)          # on for the rest of the run; returns the previous setting
    with mt.fused():            # on inside the block (and back to what it was after)
        with mt.fused(False):   # off again inside it
            ...
    MICROTENSOR_FUSED=1 python train.py     # on from the start, for the whole run

The functional entry points (mt.linear, mt.softmax, mt.masked_softmax, mt.log_softmax,
mt.cross_entropy, mt.gelu, mt.layer_norm, sum_to) read `enabled` on every call and pick the
Fused... op when it is True; model code never branches.  One process-wide setting (a module
variable, read once per call): set it before starting threads that build graphs.
"""
import contextlib
import os

from .. import argcheck

_ON, _OFF = ('1', 'true', 'yes', 'on'), ('', '0', 'false', 'no', 'off')


def from_environment(name, on, off, default=False):
    """The flag in environment variable `name` (1/true/yes/on or 0/false/no/off); unset or empty: default.
    on, off: what 1 and 0 mean, for the error a misspelt value gets."""
    value = os.environ.get(name, '').strip().lower()
    if value not in _ON + _OFF:
        raise ValueError(f"{name}={os.environ[name]!r}: use 1 ({on}) or 0 ({off})")
    return default if value == '' else value in _ON


enabled = from_environment('MICROTENSOR_FUSED', 'the fused layer on', 'off, the default')


def is_fused():
    """True while the fused layer is on."""
    return enabled


def set_fused(flag):
    """Turn the fused layer on (True) or off (False) for the rest of the run; returns the previous setting."""
    global enabled
    previous, enabled = enabled, argcheck.boolean(flag, 'set_fused', 'flag')
    return previous


@contextlib.contextmanager
def fused(flag=True):
    """`with mt.fused():` runs the block with the fused layer on, `with mt.fused(False):` with it off;
    the setting before the block comes back after it, also when the block raises."""
    previous = set_fused(flag)
    try:
        yield
    finally:
        set_fused(previous)
