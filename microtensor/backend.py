"""The backend: the only engine file that imports numpy or cupy.

Every array call the engine makes goes through here, so the same op code runs on
the CPU (numpy) and on an NVIDIA GPU (cupy).  The array module is chosen by the
data, never by a global switch:

    xp = backend.array_module(x.data)     # numpy or cupy
    y = xp.exp(x.data)

Things numpy and cupy spell differently (scatter-add, erf, random generators,
host copies) live here too.  Nothing else: checkpoint members are read in npy_format.py,
glibc's malloc is tuned in malloc_tuning.py, GPU memory is reported by cuda.py, and the
fused layer's row blocks are in fused/rows.py.

The engine imports the module `cupy`, whichever wheel provides it (cupy-cuda12x,
cupy-cuda13x, a source build): any cupy build works.
"""
import contextlib
import functools
import math

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


def machine_epsilon(dtype):
    """The gap between 1 and the next float of `dtype` (numpy's finfo(dtype).eps), as a Python float."""
    return float(numpy.finfo(dtype).eps)


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
            and target.flags.c_contiguous and len(target):  # (a table with no rows has no target[0])
        # rows picked by one integer array (an embedding's ids): numpy's add.at is ~5x faster
        # on flat indices into a 1-D array, so address every element of those rows directly
        row = target[0].size
        index = index.astype(INDEX, copy=False)  # offsets row * width: uint8/uint16 ids would overflow
        flat = (numpy.where(index < 0, index + len(target), index).reshape(-1, 1) * row + numpy.arange(row)).ravel()
        numpy.add.at(target.reshape(-1), flat, numpy.broadcast_to(values, index.shape + target.shape[1:]).ravel())
    else:
        array_module(target).add.at(target, index, values)
    return target


def quiet_float_errors(array):
    """Silence numpy's divide/invalid/overflow warnings where inf/nan is the documented result."""
    if array_module(array) is numpy:
        return numpy.errstate(divide='ignore', invalid='ignore', over='ignore')
    return contextlib.nullcontext()  # cupy does not warn


def sign(array):
    """-1, 0 or 1 in the array's dtype, and 0 at nan, as PyTorch's sign (numpy's is nan there):
    the derivative of |x| that PyTorch uses, so that a nan entry passes no gradient on."""
    return ((array > 0).astype(array.dtype) - (array < 0)).astype(array.dtype, copy=False)


_math_erf = numpy.frompyfunc(math.erf, 1, 1)


def erf(array):
    """The error function, exact to the dtype's precision on both backends, in the input's float
    type (ints give float64, as numpy's tanh does; scipy and cupy would give float32 for float16)."""
    xp = array_module(array)
    float_type = xp.result_type(array.dtype, 1.0)
    if xp is not numpy:
        import cupyx.scipy.special
        return cupyx.scipy.special.erf(array).astype(float_type, copy=False)
    if _scipy_erf() is None:  # scipy is optional: math.erf per element is exact but slower
        return numpy.asarray(_math_erf(array), dtype=float_type)  # (a 0-d input gives a float)
    return numpy.asarray(_scipy_erf()(array), dtype=float_type)


@functools.lru_cache(maxsize=None)
def _scipy_erf():
    """scipy.special.erf, or None without scipy: looked for once (a failed import, retried on every
    call, costs time and leaves memory behind in the import machinery)."""
    try:
        from scipy.special import erf
    except ImportError:
        return None
    return erf


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
