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
integer and bool inputs into the default float first (floating), as PyTorch does: 7 / 2 is 3.5.
Comparisons are exact and need no common dtype (uint8 ids == 300 is False).
"""
import numbers

from . import backend
from .convert import as_tensor
from .tensor import DEFAULT_FLOAT, Tensor

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


def operands(op, *values, like=None):
    """`values` as Tensors of their result_type on the device of `like` (default: the first Tensor).

    A Tensor of another dtype is cast (in the graph: a float32 weight used with a float64 input
    gets its gradient back in float32); a number, list or array becomes a constant of that dtype
    (a Python int too large for the dtype wraps around, as in PyTorch: uint8 200 + 100 is 44)."""
    like = like if like is not None else next(v for v in values if isinstance(v, Tensor))
    dtype = result_type(*values)
    if dtype is None:  # nothing with a dtype: as_tensor names what is wrong
        return [as_tensor(v, like, op) for v in values]
    return [_as(v, like, dtype, op) for v in values]


def _as(value, like, dtype, op):
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.to(dtype=dtype)
    return as_tensor(value, like, op, dtype)  # checked: numbers, on like's device, a private copy


def check_booleans(op, a, b, subtract):
    """What PyTorch refuses of booleans: a subtraction with a bool operand, and a power of two."""
    bools = [v is True or v is False or (isinstance(v, Tensor) or backend.is_array(v)) and v.dtype == BOOL
             for v in (a, b)]
    if subtract and any(bools):
        raise TypeError(f"{op}: subtraction with a bool tensor is not defined, as in PyTorch; to invert a mask use "
                        "~mask, to compare two masks use a ^ b or a != b, to count use mask.astype(mt.int64)")
    if not subtract and all(bools):
        raise TypeError(f"{op}: a power of two booleans is not defined, as in PyTorch; convert one first "
                        "(x.astype(mt.int64))")


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
