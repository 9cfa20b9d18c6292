"""A pytest plugin: run the engine's tests with the learner's topological_order.

    WORKBOOK_FOLDER=DIR python -m pytest -p demos.exercises.engine_tests tests/test_autograd.py
"""
import os

from . import workbook
from .substitute import substituted


def pytest_configure(config):
    order = workbook.load(os.environ['WORKBOOK_FOLDER'], 'backward_loop').topological_order
    config.workbook_substitution = substituted({'backward_loop': order})
    config.workbook_substitution.__enter__()


def pytest_unconfigure(config):
    config.workbook_substitution.__exit__(None, None, None)
