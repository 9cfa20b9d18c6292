"""`python -m microtensor`: which version, which backends this machine has, and where to start."""
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys

import microtensor as mt
from microtensor import backend
from microtensor.inspect.graph import INSTALL_DOT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mt.__file__)))
INSTALL_TORCH = ("pip install torch --index-url https://download.pytorch.org/whl/cpu, then pip install -e '.[torch]' "
                 "(the CPU build; the default Linux wheel pulls several GB of CUDA libraries)")
FIRST_STEPS = [
    ('python -m demos', "the tour: every lesson in order (--list names them; python -m demos NAME runs one)"),
    ('python -m pytest', "the tests (pip install -e '.[test]'), from the repository folder"),
    ('python -m microtensor.selftest', "every op, forward and backward, against a float64 reference"),
]


def version():
    """The installed version; from pyproject.toml when running from a source folder that is not installed."""
    try:
        return importlib.metadata.version('microtensor')
    except importlib.metadata.PackageNotFoundError:
        try:
            with open(os.path.join(ROOT, 'pyproject.toml'), encoding='utf-8') as f:
                found = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
            return f"{found[1]} (not installed: imported from {ROOT})" if found else 'unknown'
        except OSError:
            return 'unknown'


def gpu_line():
    """cupy and the GPU it sees, or why there is none."""
    if not backend.cuda_is_available():
        return f"not available: {backend.no_gpu_reason()}"
    cupy = backend.cupy
    names = [cupy.cuda.runtime.getDeviceProperties(i)['name'].decode()
             for i in range(cupy.cuda.runtime.getDeviceCount())]
    return f"cupy {cupy.__version__}, GPU: {', '.join(names)} (device='cuda')"


def dot_line():
    """Graphviz: the Python package for mt.draw_graph, and the `dot` program that renders."""
    package = (f"graphviz package {importlib.metadata.version('graphviz')}"
               if importlib.util.find_spec('graphviz') else "graphviz package missing (pip install graphviz)")
    path = shutil.which('dot')
    if path is None:
        return f"{package}; `dot` not found, so graphs cannot be rendered: {INSTALL_DOT}"
    try:
        found = subprocess.run([path, '-V'], capture_output=True, text=True, timeout=10).stderr.strip()
    except (OSError, subprocess.SubprocessError):
        found = path
    return f"{package}; {found or path}"


def torch_line():
    """PyTorch (the bridge and the DDP example): its version, CPU or CUDA build, gloo; or how to get it.
    Imported here only: microtensor itself never needs it."""
    if importlib.util.find_spec('torch') is None:
        return f"not installed (the bridge and examples/ddp_train.py need it): {INSTALL_TORCH}"
    try:
        import torch
    except Exception as error:  # a broken install: say what it raised, not a traceback
        return f"installed but fails to import ({type(error).__name__}: {error}); reinstall: {INSTALL_TORCH}"
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU build"
    gloo = torch.distributed.is_available() and torch.distributed.is_gloo_available()
    return (f"torch {torch.__version__}, {build}; gloo " +
            ("available (examples/ddp_train.py runs)" if gloo else "not available (examples/ddp_train.py needs it)"))


def report():
    """The whole report, as text."""
    lines = [f"microtensor {version()}",
             f"  python {platform.python_version()} ({sys.executable})",
             "backends:",
             f"  cpu    numpy {backend.numpy.__version__}",
             f"  cuda   {gpu_line()}",
             f"graphs: {dot_line()}",
             f"pytorch: {torch_line()}",
             "first steps:"]
    width = max(len(command) for command, _ in FIRST_STEPS)
    lines += [f"  {command.ljust(width)}  {what}" for command, what in FIRST_STEPS]
    lines.append("then: docs/stepping-through-backprop.md (backprop in a debugger), README.md")
    return '\n'.join(lines)


if __name__ == '__main__':
    print(report())
