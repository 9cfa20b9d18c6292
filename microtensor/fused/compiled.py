"""Compiled loops for the fused layer: kernels.c, built by the machine's C compiler on first use.

    MICROTENSOR_COMPILED=0 python train.py     # the numpy forms only
    CC=clang python train.py                   # another compiler (default: cc)

A fused op runs the loop of kernels.c when every array it touches is float32, in the CPU's
memory, C-contiguous and not empty (a training step's arrays) and a C compiler is found;
otherwise it runs its numpy form: float64 (gradient checks), float16, the GPU, a machine
without a compiler.  The loops compute the numpy forms' formulas number by number, so the two
agree to float32 rounding (tests/test_compiled.py).  tinygrad's CPU backend works the same
way: C source, the system's compiler, ctypes.

The first fused op of a run builds the library (about a second) into __pycache__ beside this
file, or into ~/.cache/microtensor where that is not writable, named by a hash of the source,
the compiler's flags and version and the CPU, so a changed file, compiler or machine builds
its own; later runs load it at once.  A compiler that fails is reported once, as a warning,
and the numpy forms run.  The loops run on one thread: splitting their rows over two threads
did not make a training step faster, because OpenBLAS's idle thread spins on the second core
after every product (benchmarks/README.md, "Compiled loops", which also says why numba, tried
first, was not kept: ~105 MiB more memory).
"""
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import warnings

from .. import backend
from . import rows as row_blocks
from .switch import from_environment

enabled = from_environment('MICROTENSOR_COMPILED', 'compiled loops where a C compiler is found, the default',
                           'the numpy forms only', default=True)

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kernels.c')
# -fno-math-errno, -fno-trapping-math: sqrt and float-to-int need no library call or trap check
# (the results are the same), so the loops vectorise; -fopenmp-simd: the #pragma omp simd sums.
FLAGS = ['-O3', '-fPIC', '-shared', '-fno-math-errno', '-fno-trapping-math', '-fopenmp-simd']
NATIVE = ['-march=native']  # this CPU's vector instructions (AVX2 on a recent x86); left out if refused

P, N, F = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float  # an array's address, a count, a float32
ARGUMENTS = {  # each loop's C arguments: its arrays, then rows and n, then its numbers
    'exp_all': (P, P, N),
    'masked_softmax': (P, P, P, N, N, N),
    'softmax_grad': (P, P, P, N, N),
    'log_softmax': (P, P, N, N),
    'gelu_tanh': (P, P, P, N, N),
    'gelu_tanh_grad': (P, P, P, P, N, N),
    'layer_norm': (P, P, P, P, P, P, N, N, F),
    'layer_norm_grad': (P, P, P, P, P, P, N, N),
    'adam': (P,) * 7 + (N,) + (F,) * 7,  # over many parameters: see run_for_each
}

FLOAT32 = backend.dtype('float32')
_TYPES = (FLOAT32, backend.dtype(bool))  # what the loops take: float32 numbers, boolean masks

_library = None  # the loaded library once built, or False where it cannot be
compiler_version = None  # the first line of `cc --version` once a library is loaded (for benchmarks' tables)


def library():
    """kernels.c as a loaded library (ctypes.CDLL), built on first use; None where there is no
    C compiler or it failed (then the fused ops run their numpy forms)."""
    global _library
    if _library is None:
        _library = _build() or False
    return _library or None


def can_run(*arrays):
    """True when the compiled loops are on and can take these arrays: float32 (or boolean, a
    mask), on the CPU, C-contiguous and not empty."""
    return enabled and all(
        backend.device_of(a) == 'cpu' and a.dtype in _TYPES and a.flags.c_contiguous and a.size > 0
        for a in arrays) and library() is not None


def run(name, *arrays, numbers=()):
    """The loop `name` of kernels.c over arrays that passed can_run; rows and n (the loop's
    shape) are the first array's, (rows, n) (a single number: (1, 1)); numbers follow them."""
    n = arrays[0].shape[-1] if arrays[0].ndim else 1
    getattr(library(), name)(*[_address(a) for a in arrays], arrays[0].size // n, n, *numbers)


def run_for_each(name, lists, columns=(), numbers=()):
    """The loop `name` over many items at once, item k being (lists[0][k], lists[1][k], ...), arrays
    that passed can_run: its C arguments are each list's addresses (a C array of pointers), the
    items' sizes, each column's numbers (float32, one per item), the count, then `numbers`."""
    count = len(lists[0])
    getattr(library(), name)(*[(P * count)(*[_address(a) for a in arrays]) for arrays in lists],
                             (N * count)(*[a.size for a in lists[0]]), *[(F * count)(*column) for column in columns],
                             count, *numbers)


def _address(array):
    """The address of array's first number: through a ctypes view of its memory, 4x quicker than
    array.ctypes.data (which a read-only array still needs)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(array)) if array.flags.writeable else array.ctypes.data


def by_rows(name, numpy_form, *arrays, constants=()):
    """The loop `name` over arrays (..., n) and constants (arrays such as gamma, then numbers)
    when can_run takes every array; else rows.by_rows(numpy_form, *arrays), with the constants
    that numpy_form keeps in its closure."""
    more = [c for c in constants if backend.is_array(c)]
    if can_run(*arrays, *more):
        run(name, *arrays, *more, numbers=[c for c in constants if not backend.is_array(c)])
    else:
        row_blocks.by_rows(numpy_form, *arrays)


def _build():
    compiler = shutil.which(os.environ.get('CC') or 'cc')
    if compiler is None:
        return None
    with open(SOURCE, 'rb') as f:
        source = f.read()
    version = subprocess.run([compiler, '--version'], capture_output=True).stdout
    key = hashlib.sha256(b'\0'.join([source, ' '.join(FLAGS + NATIVE).encode(), compiler.encode(), version,
                                     _cpu().encode()])).hexdigest()[:16]
    for folder in (os.path.join(os.path.dirname(SOURCE), '__pycache__'),
                   os.path.join(os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'microtensor')):
        path = os.path.join(folder, f'kernels-{key}.so')
        if not os.path.exists(path):
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:
                continue
            if not os.access(folder, os.W_OK):  # e.g. a system-wide install's package folder: the next one
                continue
            if not _compile(compiler, path):
                return None
        try:
            return _load(path, version)
        except OSError as error:  # e.g. a folder whose files may not be run (mounted noexec)
            _warn(f"{path} could not be loaded ({error})")
            return None
    return None


def _compile(compiler, path):
    """Build kernels.c into `path` (through a temporary name, renamed when complete); False and a
    warning with the compiler's message if it fails, with and without -march=native."""
    temporary = f'{path}.{os.getpid()}.tmp'
    try:
        for flags in (FLAGS + NATIVE, FLAGS):
            done = subprocess.run([compiler, *flags, '-o', temporary, SOURCE], capture_output=True, text=True)
            if done.returncode == 0:
                os.replace(temporary, path)
                return True
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    _warn(f"{compiler} could not build {SOURCE}:\n{done.stderr[-2000:]}")
    return False


def _warn(what):
    warnings.warn(f"the fused layer's compiled loops: {what}\nThe fused ops run their numpy forms instead "
                  "(MICROTENSOR_COMPILED=0 skips the attempt).", RuntimeWarning, stacklevel=3)


def _load(path, version):
    global compiler_version
    library = ctypes.CDLL(path)
    compiler_version = version.decode(errors='replace').strip().split('\n')[0]
    for name, arguments in ARGUMENTS.items():
        getattr(library, name).argtypes = arguments
        getattr(library, name).restype = None
    return library


def _cpu():
    """What names this CPU's instruction set: -march=native builds for it."""
    try:
        with open('/proc/cpuinfo') as f:
            return ''.join(sorted({line for line in f if line.startswith(('model name', 'flags'))}))
    except OSError:
        return platform.machine() + platform.processor()
