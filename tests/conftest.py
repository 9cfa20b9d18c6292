"""Shared test set-up: the backend fixture and the hypothesis profiles.

Every test that takes `device` runs once per available backend: 'cpu' always,
'cuda' too when a GPU is present.  HYPOTHESIS_PROFILE=ci runs more examples.
"""
import os

import pytest
from hypothesis import HealthCheck, settings

import microtensor as mt

settings.register_profile('dev', max_examples=12, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('ci', max_examples=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'dev'))

DEVICES = ['cpu'] + (['cuda'] if mt.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    mt.manual_seed(0)
