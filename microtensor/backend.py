"""The backend: the only engine file that imports numpy or cupy.

Every array call the engine makes goes through here, so the same op code runs on
the CPU (numpy) and on an NVIDIA GPU (cupy).  The array module is chosen by the
data, never by a global switch:

    xp = backend.array_module(x.data)     # numpy or cupy
    y = xp.exp(x.data)

Things numpy and cupy spell differently (scatter-add, erf, random generators,
host copies) live here too.

The engine imports the module `cupy`, whichever wheel provides it (cupy-cuda12x,
cupy-cuda13x, a source build): any cupy build works.
"""
import contextlib
import io
import math
import os
import sys

import numpy

from . import argcheck

try:  # cupy is optional: the engine runs without it, and imports without a GPU.
    import cupy
    import cupyx
    _cupy_import_error = None
except Exception as error:  # ImportError, or a broken CUDA install that fails on import
    cupy = None
    cupyx = None
    _cupy_import_error = None if isinstance(error, ModuleNotFoundError) else error

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


INSTALL_CUPY = ("from this checkout, `pip install -e '.[gpu]'` installs cupy-cuda12x (for CUDA 12.x); "
                "for CUDA 13.x install cupy-cuda13x instead; with only the NVIDIA driver and no CUDA "
                "toolkit, add the `[ctk]` extra (pip install 'cupy-cuda12x[ctk]' or 'cupy-cuda13x[ctk]'). "
                "`nvidia-smi` shows your CUDA version; any cupy build works, the engine imports `cupy`")


def no_gpu_reason():
    """Why device 'cuda' cannot be used here, and how to fix it."""
    if cupy is None and _cupy_import_error is not None:
        return f"cupy is installed but failed to import ({_cupy_import_error}); {INSTALL_CUPY}"
    if cupy is None:
        return f"cupy is not installed; {INSTALL_CUPY}"
    return (f"cupy {cupy.__version__} is installed but sees no GPU (check `nvidia-smi`, and that "
            f"the cupy package matches your CUDA version); {INSTALL_CUPY}")


def check_device(device, op=None):
    """Normalise 'cuda:0' to 'cuda', and refuse what we cannot run on (naming `op` if given)."""
    where = f"{op}: " if op else ""
    device = str(device).split(':')[0]
    if device not in DEVICES:
        raise ValueError(f"{where}unknown device {device!r}: use 'cpu' or 'cuda'")
    if device == 'cuda' and not cuda_is_available():
        raise RuntimeError(f"{where}device 'cuda' requested but no GPU is available: {no_gpu_reason()}")
    return device


def check_on_device(array, device, op, what):
    """An array given to an op as a parameter (an index, a mask, targets, a copy source)
    must already live on the tensor's device: the engine never copies between host
    and GPU behind your back, and says which two devices met."""
    found = device_of(array)
    if found != device:
        raise RuntimeError(f"{op}: the {what} is on '{found}' but the tensor is on '{device}'; "
                           f"move it with .to('{device}') first (no implicit host/device copies)")


def set_default_device(device):
    """Device used by factory functions (mt.tensor, mt.zeros, ...) when none is given."""
    global _default_device
    _default_device = check_device(device, 'set_default_device')


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
def asarray(value, dtype=None, device=None, copy=False):
    """An array on `device` (default: the default device); a new one when copy=True (what
    mt.tensor(...) holds), else `value` itself where it already fits.  Explicit copies only:
    a GPU array is never silently brought to the CPU."""
    device = _default_device if device is None else check_device(device)
    if device == 'cuda':
        return (cupy.array if copy else cupy.asarray)(value, dtype=dtype)
    if cupy is not None and isinstance(value, cupy.ndarray):
        raise TypeError("a cupy array was given for device 'cpu': call .cpu() / .get() explicitly")
    return (numpy.array if copy else numpy.asarray)(value, dtype=dtype)


def numeric(dtype):
    """True for the dtypes a tensor may hold: bool, integers and floats (not object, str, complex)."""
    return dtype.kind in 'biuf'


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


INDEX = numpy.dtype(numpy.intp)  # the platform's index type (int64 on 64-bit systems): what offsets are computed in


def owns_memory(array):
    """True if `array` is not a view of another array and may be written (a broadcast view may not)."""
    return array.base is None and getattr(array.flags, 'writeable', True)


def float_dtype(dtype):
    return numpy.dtype(dtype).kind == 'f'


def dtype(name):
    return numpy.dtype(name)


def promote_types(a, b):
    """numpy's common dtype of two dtypes (int8 and uint8: int16)."""
    return numpy.promote_types(a, b)


def unravel_index(flat, shape):
    """The multi-index (a tuple of ints) of element `flat` of an array of `shape`."""
    return tuple(int(k) for k in numpy.unravel_index(flat, shape))


def broadcast_shapes(*shapes):
    """The shape numpy broadcasting gives (a pure shape computation, same on every device)."""
    return numpy.broadcast_shapes(*shapes)


def broadcasts_to(shape, target):
    """Does an array of `shape` broadcast to exactly `target` (a mask to the tensor it masks)?"""
    try:
        return numpy.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


# ----------------------------------------------------------------------------
# things numpy and cupy spell differently
def scatter_add(target, index, values):
    """target[index] += values, adding repeated indices (add.at: numpy's, and cupy's since
    cupy 13, where cupyx.scatter_add is deprecated)."""
    if isinstance(index, tuple) and len(index) == 1:  # x[ids] arrives as (ids,) from ops/index.py
        index = index[0]
    if array_module(target) is numpy and isinstance(index, numpy.ndarray) and index.dtype.kind in 'iu' \
            and target.flags.c_contiguous:
        # rows picked by one integer array (an embedding's ids): numpy's add.at is ~5x faster
        # on flat indices into a 1-D array, so address every element of those rows directly
        row = target[0].size
        index = index.astype(INDEX, copy=False)  # offsets row * width: uint8/uint16 ids would overflow
        flat = (numpy.where(index < 0, index + len(target), index).reshape(-1, 1) * row + numpy.arange(row)).ravel()
        numpy.add.at(target.reshape(-1), flat, numpy.broadcast_to(values, index.shape + target.shape[1:]).ravel())
    else:
        array_module(target).add.at(target, index, values)
    return target


def sum_rows(x):
    """x.sum(axis=0) for a C-contiguous matrix (n, m) -> (m,), as the vector-matrix product
    ones(n) @ x: BLAS's GEMV is 2-6x faster than numpy's sum over the first axis (a batch's
    rows summed into a bias's gradient)."""
    return array_module(x).ones(len(x), dtype=x.dtype) @ x


def max_along(x, axis):
    """x.max(axis, keepdims=True), as the element at argmax: numpy's argmax is vectorised and
    its max over short rows is not (1.5-2.5x faster for rows of 16 to 256 floats).  The same
    value, NaN included (argmax picks the first NaN)."""
    if x.shape[axis] == 0:
        return x.max(axis=axis, keepdims=True)  # numpy's own error for an empty axis
    return array_module(x).take_along_axis(x, x.argmax(axis=axis, keepdims=True), axis=axis)


def sum_along(x, axis):
    """x.sum(axis, keepdims=True); along the last axis as an einsum, 2-3x faster than numpy's
    sum over short rows, and each row summed on its own (the same bits in any block of rows)."""
    if axis not in (-1, x.ndim - 1):
        return x.sum(axis=axis, keepdims=True)
    return array_module(x).einsum('...i->...', x)[..., None]


def quiet_float_errors(array):
    """Silence numpy's divide/invalid/overflow warnings where inf/nan is the documented result."""
    if array_module(array) is numpy:
        return numpy.errstate(divide='ignore', invalid='ignore', over='ignore')
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
    _seed = argcheck.integer(seed, 'manual_seed', 'seed', min=0)
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
# checkpoint members: one .npy file (numpy's format) per array, written and read without pickle
NPY_KINDS = 'biufcSU'  # bools, integers, floats, complex numbers, byte and unicode strings


def npy_dtype(descr):
    """The dtype a checkpoint declares as `descr` ('<f4', '|b1', '<U5'); ValueError for anything
    else (objects need pickle; structured dtypes are not stored)."""
    try:
        dtype = numpy.dtype(descr) if isinstance(descr, str) and len(descr) <= 16 else None
    except Exception:  # numpy raises TypeError, ValueError or OverflowError for strings it cannot parse
        dtype = None
    if dtype is None or dtype.kind not in NPY_KINDS or dtype.str != descr or dtype.itemsize == 0:
        raise ValueError(f"it declares an array of dtype {descr!r}, not one of the plain dtypes mt.save writes")
    return dtype


def npy_parts(value):
    """(.npy header bytes, the data as flat uint8 bytes, dtype descr, shape) of `value` as a
    C-ordered host array: the header followed by the data is the .npy file numpy.save writes."""
    array = numpy.asarray(to_numpy(value) if is_array(value) else value)
    if array.dtype.kind not in NPY_KINDS:
        raise TypeError(f"an array of dtype {array.dtype} cannot be stored without pickle; store numbers or strings")
    if not array.flags.c_contiguous:
        array = array.copy(order='C')
    header = io.BytesIO()
    numpy.lib.format.write_array_header_1_0(header, numpy.lib.format.header_data_from_array_1_0(array))
    return header.getvalue(), array.reshape(-1).view(numpy.uint8), array.dtype.str, array.shape


def read_npy(stream, dtype, shape, member_size, digest, chunk=1 << 20):
    """Read the .npy file in `stream` (member_size bytes) into a new array, after checking that
    its header declares exactly `dtype`, `shape` and C order and that the sizes agree, so
    nothing is allocated for a member that lies; every data byte is fed to `digest`."""
    version = numpy.lib.format.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"its .npy header has version {version}")
    read_header = numpy.lib.format.read_array_header_1_0 if version == (1, 0) else \
        numpy.lib.format.read_array_header_2_0
    header_shape, fortran_order, header_dtype = read_header(stream, max_header_size=4096)
    if (header_shape, fortran_order, header_dtype) != (tuple(shape), False, dtype):
        raise ValueError(f"its .npy header declares dtype {header_dtype.str}, shape {header_shape}"
                         f"{', Fortran order' if fortran_order else ''}; the checkpoint's header says "
                         f"{dtype.str}, {tuple(shape)}")
    nbytes = math.prod(shape) * dtype.itemsize
    if stream.tell() + nbytes != member_size:
        raise ValueError(f"it holds {member_size - stream.tell()} bytes of data where dtype and shape need {nbytes}")
    array = numpy.empty(shape, dtype)
    flat = array.reshape(-1).view(numpy.uint8)
    for start in range(0, nbytes, chunk):
        data = stream.read(min(chunk, nbytes - start))
        if len(data) != min(chunk, nbytes - start):
            raise ValueError("its data ends early")
        flat[start:start + len(data)] = numpy.frombuffer(data, numpy.uint8)
        digest.update(data)
    return array


# ----------------------------------------------------------------------------
# memory: what train_gpt's progress line reports on the GPU
def memory_pool_bytes(device):
    """Bytes cupy's default memory pool holds on the GPU: blocks in use plus freed blocks it keeps
    for reuse (so it stays flat across training steps unless something leaks).  None on the CPU."""
    if check_device(device) != 'cuda':
        return None
    return cupy.get_default_memory_pool().total_bytes()


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
# whatever the block size.  (Threads over the blocks were tried twice: two threads make GELU
# alone 1.35-1.6x faster, but a training step no faster, because OpenBLAS's own second thread
# spins on the other core between matrix products; see benchmarks/README.md, "Threads".)
BLOCK = 2**16


def by_rows(fn, *arrays):
    """fn(*arrays), computed block of rows by block of rows on the CPU.

    arrays: fn's inputs and the outputs it fills, all with one leading shape, each (..., n)
    or (..., 1) (a per-row statistic, as keepdims=True gives).  fn gets 2-D blocks of rows,
    (rows, n) or (rows, 1), and writes its results into the blocks of its output arrays
    (numpy's out=, or in place), so no result is copied.  fn must treat rows independently:
    elementwise math and reductions over the last axis only; constants (gamma, a Python
    number) come from the closure.
    On the GPU, for arrays of at most two blocks, and when an array is not C-contiguous
    (its blocks would be copies, not views), this is fn(*arrays).
    """
    first = arrays[0]
    if (array_module(first) is not numpy or first.size <= 2 * BLOCK or first.ndim == 0
            or not all(a.flags.c_contiguous for a in arrays)):
        fn(*arrays)
        return
    rows = [a.reshape(-1, a.shape[-1]) for a in arrays]  # views: every array is C-contiguous
    step = max(1, BLOCK // first.shape[-1])
    for start in range(0, len(rows[0]), step):
        fn(*[r[start:start + step] for r in rows])
