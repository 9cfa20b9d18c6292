"""Type promotion: which dtype a + b (or where(c, a, b), or exp(ids)) computes in, as PyTorch decides.

numpy's rules differ in ways that make a GPU many times slower without a word: int64 + float32
and int64 * 0.5 give float64 there, as does a 0-d float64 times a float32 vector.  PyTorch's:

    1. Kinds rank bool < integer < float.  The result has the highest kind among the operands.
    2. Within that kind, the dtype comes from the operands of the highest priority that have it:
           tensors with dimensions  >  0-d tensors  >  Python numbers
       so float32 vector * 0-d float64 -> float32, int32 vector + 1 -> int32, uint8 ids + 1 -> uint8,
       and float16 vector * 0.5 -> float16.
    3. A Python float is the default float dtype (float32), a Python int is int64 and a bool is
       bool: int64 vector * 0.5 -> float32, bool vector + 1 -> int64.
    4. Two dtypes of one kind promote as usual (int8 + uint8 -> int16, float16 + float32 ->
       float32); an integer and a float give the float (int64 + float16 -> float16).

    result_type(x, 0.5)            the dtype, from Tensors, arrays, numbers and lists
    operands('mul', x, 0.5)        the operands as Tensors of that dtype (constants on x's device)

Division and the functions only floats have (exp, log, sqrt, tanh, sin, cos, sigmoid, erf) turn
integer and bool inputs into the default float first (floating), as PyTorch does: 7 / 2 is 3.5,
and uint8 ids / 256 divides by 256 (the number is never made a uint8 first).

A Python number meets a tensor as a constant of the dtype the op computes in (scalar):
    - in a float dtype it is that float (float16 + 70000 is inf, as in PyTorch);
    - in an integer dtype, arithmetic wraps around as the dtype's own results do: uint8 200 + 100
      is 44, and so is 200 + 356 (+ - * // % & | ^ << >> and the base of a power);
    - a number that is stored as an element rather than combined (where's and masked_fill's
      value, a clip bound, full's value, a power's exponent) must fit the dtype, or the op refuses,
      as PyTorch does (fit): masked_fill(uint8, mask, 300) is an error, not 44.
Comparisons are exact (compare): uint8 ids < 256 is True everywhere (PyTorch wraps 256 to 0 there).
"""
import math
import numbers

from . import backend
from .convert import as_tensor
from .tensor import DEFAULT_FLOAT, Tensor
from .argcheck import DTypeError

PYTHON_INT = backend.dtype('int64')
BOOL = backend.dtype('bool')


def promote_types(a, b):
    """The common dtype of two dtypes (rule 4): the float one if exactly one is a float, else numpy's."""
    if a is None or b is None:
        return b if a is None else a
    if (a.kind == 'f') != (b.kind == 'f'):
        return a if a.kind == 'f' else b
    return backend.promote_types(a, b)


def _combine(higher, lower):
    """The dtype of a higher-priority group of operands (rule 2) with a lower one's: the lower group
    counts only if its kind is higher (a float beside integers, an integer beside bools)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.kind == 'f':
        return higher
    if higher.kind == 'b' or lower.kind == 'f':
        return promote_types(higher, lower)
    return higher


def _python_number_dtype(value):
    """Rule 3 for a Python (or numpy) number; None for anything else."""
    if isinstance(value, bool) or type(value).__name__ == 'bool_':
        return BOOL
    if isinstance(value, numbers.Integral):
        return PYTHON_INT
    if isinstance(value, numbers.Real):
        return DEFAULT_FLOAT
    return None


def result_type(*values):
    """The dtype PyTorch computes `values` in (Tensors, numpy/cupy arrays, numbers, lists of numbers)."""
    dims = zero = numbers_ = None
    for v in values:
        if isinstance(v, Tensor) or backend.is_array(v):
            if not backend.numeric(v.dtype):
                continue  # an object or str array: as_tensor says what is wrong with it
            if v.ndim:
                dims = promote_types(dims, v.dtype)
            else:
                zero = promote_types(zero, v.dtype)
            continue
        number = _python_number_dtype(v)
        if number is not None:
            numbers_ = promote_types(numbers_, number)
        elif isinstance(v, (list, tuple)):  # as mt.tensor(v) would hold it
            try:
                array = backend.asarray(v, device='cpu')
            except (ValueError, TypeError, OverflowError):
                continue  # as_tensor says what is wrong with it
            if backend.numeric(array.dtype):
                dtype = DEFAULT_FLOAT if array.dtype.kind == 'f' else array.dtype
                if array.ndim:
                    dims = promote_types(dims, dtype)
                else:
                    zero = promote_types(zero, dtype)
    return _combine(dims, _combine(zero, numbers_))


def operands(op, *values, like=None, dtype=None):
    """`values` as Tensors of `dtype` (default: their result_type) on the device of `like`
    (default: the first Tensor).

    A Tensor of another dtype is cast (in the graph: a float32 weight used with a float64 input
    gets its gradient back in float32); a Python number becomes a constant by `scalar`'s rule; a
    list or array becomes a constant of that dtype."""
    like = like if like is not None else next(v for v in values if isinstance(v, Tensor))
    dtype = result_type(*values) if dtype is None else dtype
    if dtype is None:  # nothing with a dtype: as_tensor names what is wrong
        return [as_tensor(v, like, op) for v in values]
    return [_as(v, like, dtype, op) for v in values]


def _as(value, like, dtype, op):
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.to(dtype=dtype)
    if is_python_number(value):
        return scalar(op, value, dtype, like)
    return as_tensor(value, like, op, dtype)  # checked: numbers, on like's device, a private copy


def _integer_range(dtype):
    """(lowest, highest) of an integer dtype, from its size (no numpy here)."""
    bits = 8 * dtype.itemsize
    return (0, 2 ** bits - 1) if dtype.kind == 'u' else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)


def _wrap(op, value, dtype):
    """The Python int `value` wrapped into an integer dtype, as its arithmetic wraps (two's
    complement: 300 is 44 in uint8, -1 is 255); a number beyond 64 bits is refused, as in PyTorch."""
    if not -2 ** 63 <= value < 2 ** 64:
        raise ValueError(f"{op}: the Python integer {value} does not fit in 64 bits")
    low, high = _integer_range(dtype)
    return (value - low) % (high - low + 1) + low


def scalar(op, value, dtype, like):
    """The Python number `value` (bool, int or float) as a 0-d constant of `dtype` on like's device,
    for an op that computes in `dtype` (one rule, whatever the op):

        float dtype     the number rounded to it (float16: 70000 is inf, as in PyTorch)
        integer dtype   an int wraps around (two's complement), as the op's results do:
                        uint8 x + 300 is x + 44, x * -1 is x * 255, as in PyTorch
        bool            True or False

    A float never meets an integer dtype here: result_type makes it the default float first."""
    xp = backend.array_module(like.data)
    if dtype.kind in 'iu' and is_python_int(value):
        value = _wrap(op, int(value), dtype)
    with backend.quiet_float_errors(like.data):  # float16 + 70000 is inf, as in PyTorch, without a warning
        return Tensor._wrap(xp.asarray(value, dtype=dtype))


def fit(op, value, dtype, what='value', negative_wraps=True):
    """The Python number `value` stored as an element of `dtype` (where's and masked_fill's value,
    full's value, a clip bound, an integer power's exponent), or a RuntimeError, as PyTorch decides:

        integer dtype   an int must lie in the dtype's range; a float must be finite and lie in it
                        (it is then truncated toward 0: 2.7 is 2); into an unsigned dtype a negative
                        int down to -max wraps around (masked_fill(uint8, m, -1) writes 255), unless
                        negative_wraps=False (pad's value: refused, as PyTorch refuses it; clip:
                        uint8.clip(-1) is refused, where PyTorch gives 255)
        float dtype     a finite number must not overflow it (float16: 70000 is refused); inf and
                        nan are themselves
        bool            any number: whether it is nonzero"""
    if dtype.kind == 'b':
        return bool(value)
    if dtype.kind == 'f':
        if math.isfinite(value):
            with backend.quiet_float_errors(backend.asarray(0.0, device='cpu')):
                stored = backend.asarray(value, dtype=dtype, device='cpu')
            if not math.isfinite(float(stored)):
                raise RuntimeError(f"{op}: the {what} {value!r} is beyond the range of {dtype} (it would be inf); "
                                   f"convert the tensor to a wider float first (x.to(mt.float32))")
        return value
    lowest, highest = _integer_range(dtype)
    if isinstance(value, numbers.Integral):
        fits = (-highest if dtype.kind == 'u' and negative_wraps else lowest) <= value <= highest
    else:
        fits = math.isfinite(value) and lowest <= value <= highest
        value = math.trunc(float(value)) if fits else value  # (float(): numpy.float32 has no __trunc__)
    if not fits:
        raise RuntimeError(f"{op}: the {what} {value!r} does not fit in {dtype} ({lowest} to {highest}), as "
                           f"PyTorch refuses too; convert the tensor to a wider dtype first (x.to(mt.int64) "
                           f"or x.to(mt.float32))")
    return _wrap(op, int(value), dtype)


COMPARISONS = {'eq', 'ne', 'lt', 'le', 'gt', 'ge'}


def compare(op, fn, x, value):
    """fn(x, value) for a comparison `op` of an integer tensor x and a Python int, exact: a number
    beyond x's dtype compares as what it is (uint8 ids < 256 is True everywhere; PyTorch wraps 256
    to 0 there).  None for any other operands: the usual path compares them."""
    if op not in COMPARISONS or x.dtype.kind not in 'iu' or not is_python_int(value):
        return None
    low, high = _integer_range(x.dtype)
    xp = backend.array_module(x.data)
    if low <= value <= high:
        return Tensor._wrap(fn(x.data, xp.asarray(value, dtype=x.dtype)))
    beyond = 1 if value > high else -1  # every element lies on the other side of the number
    return Tensor._wrap(xp.full(x.shape, bool(fn(0, beyond)), dtype=BOOL))


def is_python_number(value):
    """A Python (or numpy) bool, int or float: what `scalar` and `fit` take."""
    return _python_number_dtype(value) is not None


def is_python_int(value):
    """A Python (or numpy) int that is not a bool."""
    return _python_number_dtype(value) == PYTHON_INT


def refuse_bool(op, dtype, hint='convert it first (x.float())'):
    """What PyTorch refuses of a bool tensor (-mask, abs, relu, a product mask @ mask): a DTypeError."""
    if dtype == BOOL:
        raise DTypeError(f"{op} of a bool tensor is not defined, as in PyTorch; {hint}")


def check_booleans(op, a, b, subtract):
    """What PyTorch refuses of booleans: a subtraction with a bool operand, and a power of two
    unless the exponent is a Python bool (mask ** True is mask)."""
    bools = [v is True or v is False or (isinstance(v, Tensor) or backend.is_array(v)) and v.dtype == BOOL
             for v in (a, b)]
    if subtract and any(bools):
        raise DTypeError(f"{op}: subtraction with a bool tensor is not defined, as in PyTorch; to invert a mask use "
                        "~mask, to compare two masks use a ^ b or a != b, to count use mask.astype(mt.int64)")
    if not subtract and all(bools) and not (b is True or b is False):
        raise DTypeError(f"{op}: a power of two booleans is not defined, as in PyTorch; convert one first "
                        "(x.astype(mt.int64))")


def check_exponent(op, exponent, dtype):
    """An integer power's Python exponent must be >= 0 and fit the dtype, as in PyTorch
    (uint8 ** -1 has no integer value; uint8 ** 300 is refused, not taken as ** 44)."""
    if dtype.kind not in 'iu' or not is_python_number(exponent):
        return
    if exponent < 0:
        raise RuntimeError(f"{op}: integers to negative integer powers are not allowed, as in PyTorch; "
                           f"use a float base (x.to(mt.float32) ** {exponent})")
    fit(op, exponent, dtype, 'exponent', negative_wraps=False)


FLOAT32 = backend.dtype('float32')
FLOAT64 = backend.dtype('float64')


def accumulation_dtype(dtype):
    """The dtype sums over many elements are computed in: float32 for float16 (as PyTorch does on
    the CPU: 70,000 float16 ones add up to 70,000, not to inf; 100,000 softmax weights of 1e-5
    do not vanish), the dtype itself otherwise."""
    return FLOAT32 if dtype.kind == 'f' and dtype.itemsize < 4 else dtype


def scan_dtype(dtype, device):
    """The dtype a running sum or product (cumsum, cumprod) accumulates in, as PyTorch's on the same
    device: float32 in float64 on the CPU (20,000 float32 0.1s add up to 2000.0 there, not 1999.66),
    but in float32 on the GPU (PyTorch's CUDA kernels add float32 in float32); float16 in float32
    everywhere (3000 float16 ones add up to 3000, not 2048); any other dtype in itself."""
    if dtype == FLOAT32 and device == 'cpu':
        return FLOAT64
    return accumulation_dtype(dtype)


def widened(op_fn, x, *others, **options):
    """op_fn(x, *others, **options) computed in x's accumulation dtype and returned in x's dtype:
    how mean, var, norm, softmax, log_softmax, layer_norm and cross_entropy take float16, as
    PyTorch does on the CPU.  The casts are ops of the graph, so the backward runs in float32
    too and each gradient comes back in its input's dtype.  Tensors among `others` (layer_norm's
    gamma, beta) of x's dtype are widened with it; float32 ones stay (PyTorch's mixed
    float16 x, float32 parameters: the result is float16)."""
    wide = accumulation_dtype(x.dtype)
    if wide == x.dtype:
        return op_fn(x, *others, **options)
    others = [v.to(dtype=wide) if isinstance(v, Tensor) and v.dtype == x.dtype else v for v in others]
    return op_fn(x.to(dtype=wide), *others, **options).to(dtype=x.dtype)


def floating_dtype(dtype):
    """dtype if it is a float, else the default float dtype: what division and exp compute in."""
    return dtype if dtype.kind == 'f' else DEFAULT_FLOAT


def floating(x):
    """x itself if it holds floats; else x as the default float dtype (float32), as exp(ids) is in PyTorch."""
    return x if x.dtype.kind == 'f' else x.to(dtype=DEFAULT_FLOAT)


def check_in_place(op, x, dtype):
    """x += y writes into x, so the result's dtype must be of x's kind or a lower one, as in
    PyTorch: an integer tensor cannot take a float result (ids += 0.5), nor a bool tensor an
    integer one."""
    rank = {'b': 0, 'i': 1, 'u': 1, 'f': 2}
    if rank[dtype.kind] > rank[x.dtype.kind]:
        raise RuntimeError(f"{op}: the result has dtype {dtype}, which cannot be written into this tensor of "
                        f"dtype {x.dtype} in place; compute a new tensor (x = x + y, not x += y) or "
                        f"convert x first (x = x.to(mt.{dtype}))")
