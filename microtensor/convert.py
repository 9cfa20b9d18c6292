"""From Python values and arrays to tensors: what every op does with its arguments
before any arithmetic.

    as_tensor(0.5, x, 'mul')          an operand: a number, a list, an array or a Tensor
    param_array(ids, x, 'getitem', 'index')   an index, a mask, targets: an array on x's device
    new_array(data, dtype, device, 'tensor')  the copy mt.tensor(...) holds

Each refuses what is not numbers (None, str, objects) with a TypeError naming the op, and
never copies between host and device implicitly.  The end of the file keeps tensors over
the same memory on one in-place counter (mt.from_numpy, x.numpy()).
"""
import numbers
import sys
import weakref

from . import argcheck, autograd, backend
from .tensor import DEFAULT_FLOAT, Tensor


def as_tensor(value, like, op='op', dtype=None):
    """An operand of the op `op` on `like`, as a Tensor.

    A Tensor stays as it is.  A number, or a list of numbers, becomes a constant on like's
    device: in `dtype` if given (promotion.operands gives the common dtype of an op's
    operands), else in like's float dtype (x_float32 * 0.5 stays float32).  An array becomes a
    constant holding a private copy: changing the array after the forward pass cannot
    change a pending gradient.  Anything else (None, a str, an object array, complex
    numbers) is a TypeError that names the op and the type.
    """
    if isinstance(value, Tensor):
        return value
    float_like = backend.float_dtype(like.dtype)
    xp = backend.array_module(like.data)  # like's device: known to exist, no need to check it again
    if type(value) is float or type(value) is int:  # the common case first: x * 0.5, 1 - x
        if dtype is None:
            dtype = like.dtype if float_like else DEFAULT_FLOAT if type(value) is float else None
        if dtype is not None and dtype.kind == 'f':
            with backend.quiet_float_errors(like.data):  # float16 + 70000 is inf, as in PyTorch, without a warning
                return Tensor._wrap(xp.asarray(value, dtype=dtype))
        array = xp.asarray(value)  # (an integer dtype by way of int64: uint8 ids + 300 wraps, as in PyTorch)
        if array.dtype.kind != 'O':  # an int too large for int64 becomes an object array
            return Tensor._wrap(array if dtype is None else array.astype(dtype))
    if backend.is_array(value):
        backend.check_on_device(value, like.device, op, 'operand')
        array = value.copy()
    elif isinstance(value, (numbers.Number, list, tuple)):
        if isinstance(value, (list, tuple)) and holds_tensor(value):
            raise TypeError(f"{op}: an operand is a {type(value).__name__} holding tensors ({argcheck.short(value)}), "
                            "not a tensor: max(dim) and min(dim) return (values, indices), so take .values (or "
                            "unpack it); to join tensors use mt.stack or mt.concatenate")
        try:
            array = xp.asarray(value)
        except (ValueError, TypeError, OverflowError) as error:
            raise ValueError(f"{op}: cannot make an array of numbers from {argcheck.short(value)}: {error}") from None
        if dtype is None and float_like and backend.numeric(array.dtype):
            array = array.astype(like.dtype)
    else:
        array = None
    if array is None or not backend.numeric(array.dtype):
        raise TypeError(f"{op}: expected a Tensor, a number or an array of numbers, got "
                        f"{type(value).__name__} ({argcheck.short(value)})")
    return Tensor._wrap(array if dtype is None else array.astype(dtype, copy=False))


def holds_tensor(value):
    """Does a (nested) list or tuple hold a Tensor?  numpy would turn it into an array of their values."""
    return any(isinstance(v, Tensor) or isinstance(v, (list, tuple)) and holds_tensor(v) for v in value)


def tensor_arg(x, op, what='x'):
    """The functional API takes Tensors, as PyTorch's does: a list or an array is refused
    with a message that says how to make one, rather than converted to a guessed dtype and device."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {what} must be a Tensor, not {type(x).__name__} ({argcheck.short(x)}); "
                        f"make one with mt.tensor(...)")
    return x


def param_array(value, like, op, what):
    """An array an op takes as a parameter rather than as a differentiable input: an index,
    a mask, class targets, a copy_ source.  A Tensor gives its array; a numpy/cupy array
    must already live on like's device (the one check every such parameter goes through:
    no implicit host/device copies); Python data (lists, numbers) is made on like's device."""
    if isinstance(value, Tensor):
        value = value.data
    if backend.is_array(value):
        backend.check_on_device(value, like.device, op, what)
        array = value
    else:
        try:
            array = backend.asarray(value, device=like.device)
        except (ValueError, TypeError, OverflowError) as error:
            raise TypeError(f"{op}: the {what} must be a Tensor, an array or a list of numbers, "
                            f"not {argcheck.short(value)} ({error})") from None
    if not backend.numeric(array.dtype):
        raise TypeError(f"{op}: the {what} must hold numbers or booleans, not {array.dtype} "
                        f"(got {type(value).__name__} {argcheck.short(value)})")
    return array


def check_dtype(dtype, op):
    """A dtype a tensor may hold (bool, int, float), from a name, a numpy dtype or a type."""
    try:
        dtype = backend.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {argcheck.short(dtype)} is not a dtype (use e.g. 'float32', mt.int64)") from None
    if not backend.numeric(dtype):
        raise TypeError(f"{op}: a tensor holds numbers (bool, int, float), not {dtype}")
    return dtype


def new_array(data, dtype, device, op):
    """A copy of `data` (not a Tensor) as an array of numbers on `device` (default: data's
    own, for an array); Python floats become float32, as in PyTorch.  What cannot be an
    array of numbers is an error naming `op`."""
    if device is None and backend.is_array(data):
        device = backend.device_of(data)
    elif device is not None:
        device = backend.check_device(device, op)
    dtype = None if dtype is None else check_dtype(dtype, op)
    try:
        array = backend.asarray(data, dtype=dtype, device=device, copy=True)
    except (ValueError, TypeError, OverflowError) as error:
        raise (TypeError if isinstance(error, TypeError) else ValueError)(
            f"{op}: cannot make a tensor from {type(data).__name__} {argcheck.short(data)}: {error}") from None
    if not backend.numeric(array.dtype):
        raise TypeError(f"{op}: a tensor holds numbers (bool, int, float), but {type(data).__name__} "
                        f"{argcheck.short(data)} would have dtype {array.dtype}")
    if dtype is None and not backend.is_array(data) and array.dtype == 'float64':
        array = array.astype(DEFAULT_FLOAT)
    return array


def check_cast(source, dtype, op):
    """Writing floats into an integer tensor truncates them, as in numpy and PyTorch; but nan and
    inf have no integer value (numpy would write garbage such as -2**63): an error instead."""
    xp = backend.array_module(source)
    if dtype.kind in 'iu' and source.dtype.kind == 'f' and not bool(xp.isfinite(source).all()):
        raise ValueError(f"{op}: cannot write nan or inf into a tensor of dtype {dtype}")


def backend_call(op, fn, *arrays):
    """fn(*arrays), with numpy's or cupy's ValueError / TypeError / IndexError naming `op`."""
    try:
        return fn(*arrays)
    except (IndexError, ValueError, TypeError, OverflowError) as error:
        raise autograd.error_kind(error)(f"{op}: {error}") from None


def counter_holders(t):
    """How many references t's in-place counter has (as sys.getrefcount counts them): every
    tensor over the same memory (views, slices, detach()) holds the same counter."""
    return sys.getrefcount(t._version)


ONE_HOLDER = counter_holders(Tensor._wrap(backend.asarray(0.0, device='cpu')))  # a counter only its tensor holds


# ------------------------------------------------------------------ memory shared with numpy
# mt.from_numpy(a) and x.numpy() (on the CPU) share memory with a numpy array.  Tensors over
# the same memory share one in-place counter, so a write through one of them is seen by a
# pending backward that saved another (a tensor and its views already share theirs).
_counter_owners = {}  # id(the array owning the memory) -> (weakref to it, weakref to a tensor)


def share_counter(t, adopt=True):
    """Register t as the tensor over its memory; with adopt=True, first take the counter
    of a live tensor already registered for that memory."""
    owner = t.data
    if not backend.is_array(owner):  # a numpy scalar assigned to a 0-d tensor's .data by hand
        return t
    while backend.is_array(owner.base):
        owner = owner.base
    key = id(owner)
    entry = _counter_owners.get(key)
    other = entry[1]() if entry is not None and entry[0]() is owner else None
    if other is None:
        _counter_owners[key] = (weakref.ref(owner, lambda _, key=key: _counter_owners.pop(key, None)),
                                weakref.ref(t))
    elif adopt:
        t._version = other._version
    return t
