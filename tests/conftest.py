"""Shared test set-up: the backend fixture and the hypothesis profiles.

Every test that takes `device` runs once per available backend: 'cpu' always,
'cuda' too when a GPU is present.  HYPOTHESIS_PROFILE=ci runs more examples.
"""
import os

# Tiny matrices: BLAS threads only fight each other (and parallel test workers) on 2 cores.
# Set before numpy is first imported (by microtensor, below).
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
# The lessons speak the learner's language (microtensor/i18n.py); the tests read English unless
# a test asks for another.
os.environ['MICROTENSOR_LANG'] = 'en'

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import microtensor as mt  # noqa: E402

# Derandomized, both: a run's result never depends on the draws of the day (the same examples on every
# machine and every run).  A draw that ever failed is kept as an explicit @example beside its test.
settings.register_profile('dev', max_examples=12, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('ci', max_examples=30, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'dev'))

def pytest_collection_modifyitems(config, items):
    """The tests marked `full` (the lessons' --full records, re-run: a quarter of an hour) are left out
    unless the -m expression names them: `pytest -m full` runs them, CI in a step of its own."""
    if 'full' in (config.getoption('markexpr') or ''):
        return
    left_out = [item for item in items if item.get_closest_marker('full')]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not item.get_closest_marker('full')]


DEVICES = ['cpu'] + (['cuda'] if mt.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture
def in_tmp_path(tmp_path, monkeypatch):
    """Run in tmp_path: lessons write plots and checkpoints under runs/ of the working folder,
    which must not be the repository."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def without_cupy(monkeypatch):
    """The engine as if cupy were not installed, whatever this machine has: backend.py imported
    cupy (or failed to, and kept the error) once, at its own import, so both are replaced."""
    monkeypatch.setattr(mt.backend, 'cupy', None)
    monkeypatch.setattr(mt.backend, 'cupyx', None)
    monkeypatch.setattr(mt.backend, '_cupy_import_error', None)


@pytest.fixture(autouse=True)
def _seed():
    mt.manual_seed(0)


FUSED = mt.is_fused()  # the run's setting: off, unless MICROTENSOR_FUSED=1 is in the environment


@pytest.fixture(autouse=True)
def _fused_setting():
    """Every test starts with the run's fused setting, whatever the test before it did."""
    with mt.fused(FUSED):
        yield


@pytest.fixture
def speaks_of_the_articles(capsys):
    """After a lesson test: what the lesson printed (and the test did not read itself) never speaks of
    how the lessons were made ("issue", ...): the lessons speak of the articles."""
    yield
    out = capsys.readouterr().out.lower()
    assert 'issue' not in out, out[max(0, out.index('issue') - 200):out.index('issue') + 100]
