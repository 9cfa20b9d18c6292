"""Making tensors: mt.tensor, zeros, ones, full, arange, randn, rand, randint, eye, *_like.

Floating-point tensors are float32 unless dtype= says otherwise; each lands on
device= or on the default device (mt.set_default_device).
"""
from . import backend
from .tensor import DEFAULT_FLOAT, Tensor


def tensor(data, dtype=None, device=None, requires_grad=False, name=None):
    """A new leaf tensor from a list, number or array (Python floats become float32)."""
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad, name=name)


def _make(fill, shape, dtype, device, requires_grad, name):
    device = backend.default_device() if device is None else backend.check_device(device)
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    array = fill(device, shape, backend.dtype(dtype or DEFAULT_FLOAT))
    return Tensor(array, requires_grad=requires_grad, name=name)


def zeros(*shape, dtype=None, device=None, requires_grad=False, name=None):
    return _make(lambda device, s, d: backend.module_for(device).zeros(s, dtype=d), shape, dtype, device, requires_grad, name)


def ones(*shape, dtype=None, device=None, requires_grad=False, name=None):
    return _make(lambda device, s, d: backend.module_for(device).ones(s, dtype=d), shape, dtype, device, requires_grad, name)


def full(shape, value, dtype=None, device=None, requires_grad=False, name=None):
    return _make(lambda device, s, d: backend.module_for(device).full(s, value, dtype=d), (shape,), dtype, device, requires_grad, name)


def eye(n, dtype=None, device=None, requires_grad=False, name=None):
    return _make(lambda device, s, d: backend.module_for(device).eye(n, dtype=d), (), dtype, device, requires_grad, name)


def randn(*shape, dtype=None, device=None, requires_grad=False, name=None):
    """Standard normal samples from the device's generator (seeded by mt.manual_seed)."""
    def fill(device, s, d):
        return backend.generator(device).standard_normal(s, dtype=d)
    return _make(fill, shape, dtype, device, requires_grad, name)


def rand(*shape, dtype=None, device=None, requires_grad=False, name=None):
    """Uniform samples in [0, 1) from the device's generator."""
    def fill(device, s, d):
        return backend.generator(device).random(s, dtype=d)
    return _make(fill, shape, dtype, device, requires_grad, name)


def randint(low, high, shape, device=None, dtype='int64'):
    """Integers in [low, high) from the device's generator."""
    def fill(device, s, d):
        return backend.generator(device).integers(low, high, s).astype(d)
    return _make(fill, (shape,), dtype, device, False, None)


def arange(start, stop=None, step=1, dtype=None, device=None):
    """numpy.arange: integers unless a float is involved or dtype= is given."""
    if stop is None:
        start, stop = 0, start
    device = backend.default_device() if device is None else backend.check_device(device)
    array = backend.module_for(device).arange(start, stop, step, dtype=dtype)
    if dtype is None and array.dtype == backend.dtype('float64'):
        array = array.astype(DEFAULT_FLOAT)
    return Tensor(array)


def zeros_like(t, dtype=None, requires_grad=False):
    return zeros(t.shape, dtype=dtype or t.dtype, device=t.device, requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return ones(t.shape, dtype=dtype or t.dtype, device=t.device, requires_grad=requires_grad)
