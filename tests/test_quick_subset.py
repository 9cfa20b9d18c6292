"""The quick subset a contributor runs while editing, `pytest -m "not slow"`: every test file keeps at
least one test in it, so no part of the project goes unchecked in the edit-run loop."""
import glob
import os
import subprocess
import sys

import pytest

from readme import ROOT


def collected_files(*options):
    """The test files that have a test collected with these pytest options."""
    out = subprocess.run([sys.executable, '-m', 'pytest', '--collect-only', '-p', 'no:cacheprovider', *options,
                          'tests'], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {line.split('::')[0] for line in out.stdout.splitlines() if line.startswith('tests/') and '::' in line}


@pytest.mark.slow
def test_every_test_file_has_a_test_outside_the_slow_marker():
    every, quick = collected_files(), collected_files('-m', 'not slow')
    on_disk = {os.path.relpath(path, ROOT).replace(os.sep, '/')
               for path in glob.glob(os.path.join(ROOT, 'tests', 'test_*.py'))}
    assert every and every <= on_disk
    assert not every - quick, f"only slow tests in {sorted(every - quick)}: keep a quick one in each"


def test_the_slow_marker_is_registered(request):
    assert "slow: takes more than a few seconds; deselect with -m 'not slow'" in request.config.getini('markers')
