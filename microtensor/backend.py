"""The backend: the only engine file that imports numpy or cupy.

Every array call the engine makes goes through here, so the same op code runs on
the CPU (numpy) and on an NVIDIA GPU (cupy).  The array module is chosen by the
data, never by a global switch:

    xp = backend.array_module(x.data)     # numpy or cupy
    y = xp.exp(x.data)

Things numpy and cupy spell differently (scatter-add, erf, random generators,
host copies) live here too.
"""
import contextlib
import math
import os
import sys

import numpy

try:  # cupy is optional: the engine runs without it, and imports without a GPU.
    import cupy
    import cupyx
except Exception:  # ImportError, or a broken CUDA install that fails on import
    cupy = None
    cupyx = None

DEVICES = ('cpu', 'cuda')
_default_device = 'cpu'
_generators = {}  # device -> random generator, created on first use
_seed = None


# ----------------------------------------------------------------------------
# devices
def cuda_is_available():
    """True when cupy is installed and can see at least one GPU."""
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver, no device
        return False


def check_device(device):
    """Normalise 'cuda:0' to 'cuda', and refuse what we cannot run on."""
    device = str(device).split(':')[0]
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda'")
    if device == 'cuda' and not cuda_is_available():
        raise RuntimeError("device 'cuda' requested but no GPU is available "
                           "(is cupy installed with `pip install microtensor[gpu]`?)")
    return device


def set_default_device(device):
    """Device used by factory functions (mt.tensor, mt.zeros, ...) when none is given."""
    global _default_device
    _default_device = check_device(device)


def default_device():
    return _default_device


def array_module(array):
    """numpy or cupy, whichever owns `array`."""
    if cupy is not None and isinstance(array, cupy.ndarray):
        return cupy
    return numpy


def module_for(device):
    return cupy if device == 'cuda' else numpy


def device_of(array):
    return 'cuda' if cupy is not None and isinstance(array, cupy.ndarray) else 'cpu'


def is_array(value):
    return isinstance(value, numpy.ndarray) or (cupy is not None and isinstance(value, cupy.ndarray))


# ----------------------------------------------------------------------------
# creating and moving arrays
def asarray(value, dtype=None, device=None):
    """An array on `device` (default: the default device).  Explicit copies only."""
    device = _default_device if device is None else check_device(device)
    if device == 'cuda':
        return cupy.asarray(value, dtype=dtype)
    if cupy is not None and isinstance(value, cupy.ndarray):
        raise TypeError("a cupy array was given for device 'cpu': call .cpu() / .get() explicitly")
    return numpy.asarray(value, dtype=dtype)


def as_array(value):
    """numpy turns full reductions and element picks into scalars (numpy.float64, ...);
    a Tensor always holds an array, so those become 0-d arrays."""
    return numpy.asarray(value) if isinstance(value, numpy.generic) else value


def to_device(array, device):
    """Copy `array` to `device` (no copy when it is already there)."""
    device = check_device(device)
    if device_of(array) == device:
        return array
    return cupy.asarray(array) if device == 'cuda' else cupy.asnumpy(array)


def to_numpy(array):
    """A host numpy array (copies from the GPU)."""
    return cupy.asnumpy(array) if device_of(array) == 'cuda' else numpy.asarray(array)


def float_dtype(dtype):
    return numpy.dtype(dtype).kind == 'f'


def dtype(name):
    return numpy.dtype(name)


def unravel_index(flat, shape):
    """The multi-index (a tuple of ints) of element `flat` of an array of `shape`."""
    return tuple(int(k) for k in numpy.unravel_index(flat, shape))


def broadcast_shapes(*shapes):
    """The shape numpy broadcasting gives (a pure shape computation, same on every device)."""
    return numpy.broadcast_shapes(*shapes)


# ----------------------------------------------------------------------------
# things numpy and cupy spell differently
def scatter_add(target, index, values):
    """target[index] += values, adding repeated indices (numpy add.at / cupyx.scatter_add)."""
    if array_module(target) is not numpy:
        cupyx.scatter_add(target, index, values)
    elif isinstance(index, numpy.ndarray) and index.dtype.kind in 'iu' and target.flags.c_contiguous:
        # rows picked by one integer array (an embedding's ids): numpy's add.at is ~5x faster
        # on flat indices into a 1-D array, so address every element of those rows directly
        row = target[0].size
        flat = (numpy.where(index < 0, index + len(target), index).reshape(-1, 1) * row + numpy.arange(row)).ravel()
        numpy.add.at(target.reshape(-1), flat, numpy.broadcast_to(values, index.shape + target.shape[1:]).ravel())
    else:
        numpy.add.at(target, index, values)
    return target


def quiet_float_errors(array):
    """Silence numpy's divide/invalid warnings where inf/nan is the documented result."""
    if array_module(array) is numpy:
        return numpy.errstate(divide='ignore', invalid='ignore')
    return contextlib.nullcontext()  # cupy does not warn


_math_erf = numpy.frompyfunc(math.erf, 1, 1)


def erf(array):
    """The error function, exact to the dtype's precision on both backends."""
    if array_module(array) is not numpy:
        import cupyx.scipy.special
        return cupyx.scipy.special.erf(array)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # scipy is optional: math.erf per element is exact but slower
        return numpy.asarray(_math_erf(array), dtype=array.dtype)  # a 0-d input gives a float
    return scipy_erf(array)


# ----------------------------------------------------------------------------
# random numbers: one generator per device, all seeded by manual_seed
def manual_seed(seed):
    """Seed every backend's generator (the CPU's now, the GPU's when first used)."""
    global _seed
    _seed = int(seed)
    _generators.clear()


def host_rng(seed):
    """A numpy generator for host-side randomness (gradcheck directions, data sets)."""
    return numpy.random.default_rng(seed)


def generator(device):
    if device not in _generators:
        seed = _seed if _seed is not None else numpy.random.SeedSequence().entropy % 2**63
        if device == 'cuda':
            _generators[device] = cupy.random.default_rng(seed)
        else:
            _generators[device] = numpy.random.default_rng(seed)
    return _generators[device]


# ----------------------------------------------------------------------------
# checkpoint files: .npz (a zip of .npy arrays), written and read without pickle
def write_npz(file, arrays):
    """Write {name: array or str} into the open binary `file` as an uncompressed .npz.
    Each member carries a CRC-32, so read_npz notices corrupted bytes."""
    import zipfile
    with zipfile.ZipFile(file, 'w', zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in arrays.items():
            array = numpy.asarray(to_numpy(value) if is_array(value) else value)
            if array.dtype.hasobject:
                raise TypeError(f"mt.save: {name!r} is an object array, which would need pickle; "
                                "store numbers or strings")
            with archive.open(name + '.npy', 'w', force_zip64=True) as member:
                numpy.lib.format.write_array(member, array, allow_pickle=False)


def read_npz(path):
    """{name: numpy array} for every array in the .npz file at `path`, never unpickling."""
    loaded = numpy.load(path, allow_pickle=False)
    if not hasattr(loaded, 'files'):
        raise ValueError(f"it holds a single .npy array of shape {loaded.shape}, not an .npz archive")
    with loaded:
        return {name: loaded[name] for name in loaded.files}


# ----------------------------------------------------------------------------
# memory reuse on the CPU: keep freed working memory instead of giving it back to the OS
#
# A training step allocates and frees the same large arrays (activations, gradients) every
# time.  glibc's malloc serves big requests with mmap and unmaps them on free, and trims the
# heap's free top back to the OS, so the next step's arrays are fresh pages: the kernel
# faults each one in and zeroes it again (a fifth of benchmarks/vs_torch.py's step).  Three
# mallopt settings, once at import, make freed blocks stay in the heap for reuse:
#
#     M_MMAP_THRESHOLD 32 MiB   arrays up to this size come from the heap (glibc's maximum)
#     M_TRIM_THRESHOLD 256 MiB  free memory at the heap's top is given back only beyond this
#     M_TOP_PAD        16 MiB   the heap grows in steps of at least this much
#
# The process's peak memory does not change (a step's peak is the same either way); what
# changes is that RSS stays at that peak between steps instead of falling and rising.
# Linux with glibc only (a no-op on macOS, Windows, musl); MICROTENSOR_MALLOC_TUNING=0 in
# the environment turns it off.  benchmarks/README.md has the measurements.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc's <malloc.h> parameter numbers
MALLOC_SETTINGS = {_M_MMAP_THRESHOLD: 32 * 2**20, _M_TRIM_THRESHOLD: 256 * 2**20, _M_TOP_PAD: 16 * 2**20}


def _tune_malloc():
    """Apply MALLOC_SETTINGS through glibc's mallopt; True if it was done."""
    if os.environ.get('MICROTENSOR_MALLOC_TUNING', '1') == '0' or not sys.platform.startswith('linux'):
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # only glibc has it (musl's mallopt does nothing)
    except (OSError, AttributeError):
        return False
    return all(libc.mallopt(param, value) == 1 for param, value in MALLOC_SETTINGS.items())


malloc_tuned = _tune_malloc()


# ----------------------------------------------------------------------------
# row blocks: long elementwise chains at cache speed
#
# A fused op's formula is a chain of numpy operations (GELU's forward is nine), each making
# a temporary as large as the input.  On a (B, T, d_ff) activation every temporary is
# megabytes, so each operation streams through main memory.  by_rows runs the same formula
# on blocks of rows of about BLOCK elements, whose temporaries stay in the CPU's cache
# (GELU: ~1.3x faster at d_ff = 256, ~1.8x at 1024).  Each block is computed exactly as the
# whole array would be (rows are independent), so the result is the same, bit for bit,
# whatever the block size.  (Threads over the blocks were tried: with the GIL handed back
# and forth between numpy calls on two cores they gained ~15% on GELU alone and nothing
# measurable on a training step; see benchmarks/README.md.)
BLOCK = 2**16


def by_rows(fn, *arrays, out=None):
    """fn(*arrays), computed block of rows by block of rows on the CPU.

    arrays: one leading shape, each (..., n) or (..., 1) (a per-row statistic, as
    keepdims=True gives).  fn gets 2-D blocks of rows, (rows, n) or (rows, 1), and returns
    an array or a tuple of arrays of such blocks.  It must treat rows independently:
    elementwise math and reductions over the last axis only; constants (gamma, a Python
    number) come from the closure.  Results have the inputs' leading shape.
    out=arrays[0], a C-contiguous array the op has just made: fn overwrites its first
    block in place, and that array is the result (no new array, no copy).
    On the GPU, and for arrays of at most two blocks, this is fn(*arrays).
    """
    first = arrays[0]
    if (array_module(first) is not numpy or first.size <= 2 * BLOCK or first.ndim == 0
            or (out is not None and not out.flags.c_contiguous)):
        return fn(*arrays)
    rows = [a.reshape(-1, a.shape[-1]) for a in arrays]  # out's is a view: out is C-contiguous
    step = max(1, BLOCK // first.shape[-1])
    outs = None
    for start in range(0, len(rows[0]), step):
        results = fn(*[r[start:start + step] for r in rows])
        if out is not None:  # fn has written its block in place
            continue
        single = not isinstance(results, tuple)
        results = (results,) if single else results
        if outs is None:
            outs = [numpy.empty((len(rows[0]),) + r.shape[1:], dtype=r.dtype) for r in results]
        for target, result in zip(outs, results):
            target[start:start + step] = result  # while the block is still in the cache
    if out is not None:
        return out
    outs = [target.reshape(first.shape[:-1] + target.shape[1:]) for target in outs]
    return outs[0] if single else tuple(outs)
