"""`python -m microtensor`: version, backends, graphviz, and the first commands to run."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np

from microtensor import __main__ as main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_python_m_microtensor_prints_version_backends_and_first_steps(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, '-m', 'microtensor'], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60, check=True).stdout
    with open(os.path.join(ROOT, 'pyproject.toml'), encoding='utf-8') as f:
        version = re.search(r'^version = "(.+)"', f.read(), re.M)[1]
    assert out.startswith(f"microtensor {version}")
    assert f"numpy {np.__version__}" in out
    assert re.search(r"^  cuda   (cupy \S+, GPU: .+|not available: .+)$", out, re.M)
    for command in ('python -m demos', 'python -m pytest', 'python -m microtensor.selftest'):
        assert re.search(rf"^  {re.escape(command)} +\S", out, re.M), command
    if shutil.which('dot'):
        assert re.search(r"graphs: graphviz package \S+; dot - graphviz version", out)


def test_without_dot_it_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(main.shutil, 'which', lambda name: None)
    line = main.dot_line()
    for how in ('apt-get install graphviz', 'brew install graphviz', 'conda install -c conda-forge graphviz'):
        assert how in line


def test_without_cupy_it_says_why_there_is_no_gpu(without_cupy):
    assert main.gpu_line().startswith("not available: cupy is not installed")
    assert "pip install -e '.[gpu]'" in main.gpu_line()
