"""Making tensors: mt.tensor, from_numpy, as_tensor, zeros, ones, full, arange, randn, rand,
randint, eye, *_like.

Floating-point tensors are float32 unless dtype= says otherwise; each lands on
device= or on the default device (mt.set_default_device).  mt.tensor always copies its
data; mt.from_numpy and mt.as_tensor share memory with an array when they can.
Sizes, dtypes and values are checked first: a bad one is an error naming the function.
"""
from . import argcheck, backend, promotion
from .ops import args
from .convert import check_dtype, new_array, share_counter, tensor_arg
from .tensor import DEFAULT_FLOAT, Tensor
from .argcheck import DTypeError, ShapeError


def tensor(data, dtype=None, device=None, requires_grad=False, name=None):
    """A new leaf tensor holding a copy of `data` (a number, list, array or Tensor), as
    torch.tensor: writing to `data` later never changes it.  Python floats become float32."""
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad, name=name)


def from_numpy(array):
    """A tensor over the memory of the numpy array `array` (no copy), as torch.from_numpy;
    its dtype is the array's (float64 stays float64).  A write to either shows in both.
    Tensors made from the same memory (mt.from_numpy twice, x.numpy()) share one in-place
    counter, so such a write is caught by a backward that needs the old values."""
    if not backend.is_array(array) or backend.device_of(array) != 'cpu':
        raise TypeError(f"from_numpy: expected a numpy.ndarray, not {type(array).__name__} "
                        "(for other data use mt.tensor(...), which copies)")
    if not backend.numeric(array.dtype):
        raise TypeError(f"from_numpy: a tensor holds numbers (bool, int, float), not {array.dtype}")
    return share_counter(Tensor._wrap(array))


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor, sharing memory when it can, as torch.as_tensor:
    a Tensor already of this dtype and device is returned as it is (else converted with .to,
    which stays in the graph); a numpy or cupy array of this dtype on this device shares its
    memory (numpy: as mt.from_numpy); anything else is copied, as mt.tensor does."""
    dtype = None if dtype is None else check_dtype(dtype, 'as_tensor')
    device = None if device is None else backend.check_device(device, 'as_tensor')
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if backend.is_array(data):
        same_dtype = dtype is None or dtype == data.dtype
        same_device = device is None or device == backend.device_of(data)
        if same_dtype and same_device and backend.numeric(data.dtype):
            return from_numpy(data) if backend.device_of(data) == 'cpu' else Tensor._wrap(data)
    return Tensor._wrap(new_array(data, dtype, device, 'as_tensor'))


def _make(op, fill, shape, dtype, device, requires_grad, name):
    """A fresh array from fill(device, shape, dtype) as a leaf (no copy: nothing else holds it)."""
    device = backend.default_device() if device is None else backend.check_device(device, op)
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    shape = args.sizes(shape, op)
    dtype = check_dtype(DEFAULT_FLOAT if dtype is None else dtype, op)
    try:
        t = Tensor._wrap(fill(device, shape, dtype))
    except (ValueError, OverflowError) as error:  # numpy: "Maximum allowed dimension exceeded"
        raise ValueError(f"{op}: cannot make a tensor of shape {shape}: {error}") from None
    except MemoryError as error:
        raise MemoryError(f"{op}: a tensor of shape {shape} and dtype {dtype} does not fit in memory "
                          f"({error})") from None
    t.name = name
    if requires_grad:
        if not backend.float_dtype(dtype):
            raise DTypeError(f"{op}: only floating-point tensors can require grad, not {dtype}")
        t.requires_grad_()
    return t


def _zeros(device, shape, dtype):
    return backend.module_for(device).zeros(shape, dtype=dtype)


def _ones(device, shape, dtype):
    return backend.module_for(device).ones(shape, dtype=dtype)


def zeros(*shape, dtype=None, device=None, requires_grad=False, name=None):
    return _make('zeros', _zeros, shape, dtype, device, requires_grad, name)


def ones(*shape, dtype=None, device=None, requires_grad=False, name=None):
    return _make('ones', _ones, shape, dtype, device, requires_grad, name)


def full(shape, value, dtype=None, device=None, requires_grad=False, name=None):
    """A tensor of `value` everywhere, as torch.full: its dtype is value's unless dtype= says
    otherwise (True: bool, 7: int64, 1.5: float32); a value that does not fit dtype= is refused."""
    value = argcheck.real(value, 'full', 'value')
    if dtype is None:
        dtype = promotion.result_type(value)
    else:
        dtype = check_dtype(dtype, 'full')
        value = promotion.fit('full', value, dtype)
    return _make('full', lambda device, s, d: backend.module_for(device).full(s, value, dtype=d),
                 (shape,), dtype, device, requires_grad, name)


def eye(n, m=None, dtype=None, device=None, requires_grad=False, name=None):
    """The n x m matrix (m = n by default) with ones on its diagonal, as torch.eye."""
    n = argcheck.integer(n, 'eye', 'n', min=0)
    m = n if m is None else argcheck.integer(m, 'eye', 'm', min=0)
    return _make('eye', lambda device, s, d: backend.module_for(device).eye(n, m, dtype=d),
                 (), dtype, device, requires_grad, name)


def normal_array(device, shape, dtype):
    """Standard normal samples as an array of the float dtype `dtype` on `device`, from the
    device's generator.  The generators draw float32 and float64 only: float16 samples are
    drawn in float32 and rounded."""
    wide = promotion.accumulation_dtype(dtype)
    return backend.generator(device).standard_normal(shape, dtype=wide).astype(dtype, copy=False)


def uniform_array(device, shape, dtype):
    """Uniform samples in [0, 1) as an array of the float dtype `dtype` on `device` (float16:
    drawn in float32 and rounded; a sample that rounds up to 1 becomes the float16 just below)."""
    wide = promotion.accumulation_dtype(dtype)
    u = backend.generator(device).random(shape, dtype=wide)
    if wide == dtype:
        return u
    xp = backend.module_for(device)
    return xp.minimum(u.astype(dtype), xp.nextafter(xp.asarray(1, dtype=dtype), xp.asarray(0, dtype=dtype)))


def randn(*shape, dtype=None, device=None, requires_grad=False, name=None):
    """Standard normal samples from the device's generator (seeded by mt.manual_seed)."""
    def fill(device, s, d):
        if not backend.float_dtype(d):
            raise DTypeError(f"randn: samples are floats; dtype {d} is not a float dtype")
        return normal_array(device, s, d)
    return _make('randn', fill, shape, dtype, device, requires_grad, name)


def rand(*shape, dtype=None, device=None, requires_grad=False, name=None):
    """Uniform samples in [0, 1) from the device's generator."""
    def fill(device, s, d):
        if not backend.float_dtype(d):
            raise DTypeError(f"rand: samples are floats; dtype {d} is not a float dtype")
        return uniform_array(device, s, d)
    return _make('rand', fill, shape, dtype, device, requires_grad, name)


def randint(low, high=None, size=None, *, device=None, dtype='int64'):
    """Integers in [low, high) from the device's generator: randint(low, high, size), or randint(high,
    size) with low 0, as PyTorch's torch.randint(high, size) (the size a tuple)."""
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None and size is not None:  # randint(high, size=size)
        low, high = 0, low
    if high is None or size is None:
        raise TypeError("randint: needs a high and a size: randint(high, size) or randint(low, high, size), "
                        "the size a tuple such as (4, 8)")
    low, high = argcheck.integer(low, 'randint', 'low'), argcheck.integer(high, 'randint', 'high')
    if low >= high:
        raise ValueError(f"randint: needs low < high, got low={low}, high={high}")

    def fill(device, s, d):
        return backend.generator(device).integers(low, high, s).astype(d)
    return _make('randint', fill, (size,), dtype, device, False, None)


def multinomial(input, num_samples, replacement=False):
    """PyTorch's multinomial: num_samples class ids per row of `input`, weights (C,) or (rows, C) that
    need not sum to 1, from the device's generator (seeded by mt.manual_seed).  An int64 tensor of
    shape (num_samples,) or (rows, num_samples).

    With replacement each draw inverts the row's cumulative sum at a uniform u.  Without, the ids are
    the num_samples largest of log(w) + Gumbel noise (-log(-log u)): the same law as drawing one at a
    time and removing it (the Gumbel-top-k trick), so a weight of 0 is never drawn."""
    w = tensor_arg(input, 'multinomial', 'input')
    if not backend.float_dtype(w.dtype):
        raise DTypeError(f"multinomial: the weights must be floating-point, not {w.dtype}")
    if w.ndim not in (1, 2):
        raise ShapeError(f"multinomial: the weights must be (C,) or (rows, C), not shape {w.shape}")
    n = argcheck.integer(num_samples, 'multinomial', 'num_samples', min=1)
    replacement = argcheck.boolean(replacement, 'multinomial', 'replacement')
    xp = backend.array_module(w.data)
    rows = w.data.reshape(-1, w.shape[-1]).astype('float64')
    if rows.shape[-1] == 0 or not bool(xp.isfinite(rows).all()) or bool((rows < 0).any()) \
            or bool((rows.sum(-1) <= 0).any()):
        raise RuntimeError("multinomial: each row of weights must be finite, >= 0, with a positive sum")
    if not replacement and bool(((rows > 0).sum(-1) < n).any()):
        raise RuntimeError(f"multinomial: {n} draws without replacement need at least {n} classes of weight > 0 "
                           "in every row; pass replacement=True or draw fewer")
    u = backend.generator(w.device).random((rows.shape[0], n if replacement else rows.shape[-1]))
    if replacement:
        cdf = xp.cumsum(rows, axis=-1) / rows.sum(-1, keepdims=True)
        ids = xp.minimum((cdf[:, None, :] <= u[:, :, None]).sum(-1), rows.shape[-1] - 1)  # (rounding at the top)
    else:
        with backend.quiet_float_errors(rows):
            keys = xp.log(rows) - xp.log(-xp.log(u))
        ids = xp.argsort(-keys, axis=-1, kind='stable')[:, :n]
    ids = ids.astype('int64')
    return Tensor._wrap(ids if w.ndim == 2 else ids[0])


def arange(start, stop=None, step=1, dtype=None, device=None):
    """numpy.arange: integers unless a float is involved or dtype= is given."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (argcheck.real(start, 'arange', 'start'), argcheck.real(stop, 'arange', 'stop'),
                         argcheck.real(step, 'arange', 'step'))
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if not all(abs(float(v)) < 2 ** 62 for v in (start, stop, step)):
        raise ValueError(f"arange: start, stop and step must be finite, got {start}, {stop}, {step}")
    device = backend.default_device() if device is None else backend.check_device(device, 'arange')
    try:
        array = backend.module_for(device).arange(start, stop, step, dtype=dtype)
    except (TypeError, ValueError) as error:
        raise type(error)(f"arange: {error}") from None
    if dtype is None and array.dtype == backend.dtype('float64'):
        array = array.astype(DEFAULT_FLOAT)
    if not backend.numeric(array.dtype):
        raise TypeError(f"arange: a tensor holds numbers (bool, int, float), not {array.dtype}")
    return Tensor._wrap(array)


def zeros_like(t, dtype=None, requires_grad=False):
    if not isinstance(t, Tensor):
        raise TypeError(f"zeros_like: expected a Tensor, not {type(t).__name__}")
    return _make('zeros_like', _zeros, (t.shape,), t.dtype if dtype is None else dtype, t.device, requires_grad, None)


def ones_like(t, dtype=None, requires_grad=False):
    if not isinstance(t, Tensor):
        raise TypeError(f"ones_like: expected a Tensor, not {type(t).__name__}")
    return _make('ones_like', _ones, (t.shape,), t.dtype if dtype is None else dtype, t.device, requires_grad, None)
