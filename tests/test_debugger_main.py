"""`python -m microtensor`: version, backends, graphviz, and the first commands to run."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from microtensor import __main__ as main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
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


def test_it_reports_pytorch_build_and_gloo_or_how_to_get_the_cpu_build(monkeypatch):
    line = main.torch_line()
    try:
        import torch
    except ImportError:
        assert line.startswith('not installed') and 'download.pytorch.org/whl/cpu' in line
    else:
        build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU build"
        assert line.startswith(f"torch {torch.__version__}, {build}; gloo ")
        assert ('gloo available' in line) == torch.distributed.is_gloo_available()
    monkeypatch.setattr(main.importlib.util, 'find_spec', lambda name: None)  # as if not installed
    assert main.torch_line() == ("not installed (the bridge and examples/ddp_train.py need it): "
                                 f"{main.INSTALL_TORCH}")
    assert 'pip install torch --index-url https://download.pytorch.org/whl/cpu' in main.INSTALL_TORCH


def test_microtensor_does_not_import_torch_until_the_report_asks(tmp_path):
    code = "import sys, microtensor, microtensor.__main__; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60, check=True).stdout
    assert out.strip() == 'False'
