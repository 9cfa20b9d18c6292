"""Checking what ops are given, at the boundary: axes, shapes, integers, numbers, flags.

Every public op and function checks its arguments with these helpers, so a bad
argument raises ValueError / TypeError / IndexError that names the function, the
argument, what it got and what it accepts, instead of an internal traceback from
deep inside numpy (or, worse, a silent wrong answer: numpy 2 reads reshape(-2) as
reshape(-1)).  The checks run once per call in Python, on the arguments, never per
element.

Integers are Python ints and numpy integers (x.sum(axis=np.int64(1)) works);
bools are not integers here (axis=True is a mistake, not axis 1).  `op` names the
function for the message; inside an op's forward it is None, because
Function.apply adds the op's name and the input shapes itself.
"""
import numbers
import operator


def _fail(error, op, message):
    raise error(f"{op}: {message}" if op else message) from None


def short(value, limit=40):
    """repr(value), cut to `limit` characters (a bad argument may be a huge list)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def integer(value, what, op=None):
    """`value` as a Python int; a float, str, bool, None... is a TypeError."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    _fail(TypeError, op, f"{what} must be an integer, not {type(value).__name__} ({short(value)})")


def axis(value, shape, op=None, new=False):
    """One axis of a tensor of `shape`, maybe negative, as an index in range(len(shape));
    new=True: where to insert a new axis (expand_dims, stack), so len(shape) is valid too."""
    ndim = len(shape) + new
    a = value if type(value) is int else integer(value, 'axis', op)  # a plain int: the common case, checked fast
    if not -ndim <= a < ndim:
        why = "a 0-d tensor has no axes" if ndim == 0 else f"valid: {-ndim} to {ndim - 1}"
        _fail(IndexError, op, f"axis {a} is out of range for a tensor of shape {tuple(shape)} ({why})")
    return a % ndim


def axes(value, shape, op=None):
    """A reduction's `axis`: None (every axis), one axis, or a tuple/list of distinct axes;
    returned as a sorted tuple of non-negative ints."""
    if value is None:
        return tuple(range(len(shape)))
    if isinstance(value, (tuple, list)):
        result = [axis(a, shape, op) for a in value]
        if len(set(result)) != len(result):
            _fail(ValueError, op, f"axis {tuple(value)} names an axis twice")
        return tuple(sorted(result))
    return (axis(value, shape, op),)


def sizes(value, op, what='shape'):
    """A shape: one size or a tuple/list of sizes, each an integer >= 0."""
    parts = value if isinstance(value, (tuple, list)) else (value,)
    for n in parts:  # the common case, plain ints >= 0, checked without building anything
        if type(n) is not int or n < 0:
            break
    else:
        return tuple(parts)
    result = tuple(integer(n, f"each size in {what}", op) for n in parts)
    if any(n < 0 for n in result):
        _fail(ValueError, op, f"{what} {result} has a negative size")
    return result


def new_shape(value, op):
    """The shape asked of reshape: integers >= 0, and at most one -1 (inferred from the others).
    (numpy itself checks that the sizes multiply up, but reads -2 as -1.)"""
    parts = value if isinstance(value, (tuple, list)) else (value,)
    for n in parts:  # the common case, plain ints, checked without building anything
        if type(n) is not int or n < -1:
            break
    else:
        if parts.count(-1) <= 1:
            return tuple(parts)
    shape = tuple(integer(n, 'each size in the new shape', op) for n in parts)
    if shape and (min(shape) < -1 or shape.count(-1) > 1):
        _fail(ValueError, op, f"shape {shape}: each size must be >= 0, or one of them -1 (inferred)")
    return shape


def flag(value, what, op=None):
    """A yes/no option (keepdims=, training=): True or False, numpy bools too."""
    if value is True or value is False:
        return value
    if type(value).__name__ in ('bool', 'bool_'):  # numpy's (no numpy import here)
        return bool(value)
    _fail(TypeError, op, f"{what} must be True or False, not {type(value).__name__} ({short(value)})")


def number(value, what, op=None):
    """A real number (int, float, numpy number); None, str, complex, ... are a TypeError."""
    if isinstance(value, numbers.Real):
        return value
    _fail(TypeError, op, f"{what} must be a real number, not {type(value).__name__} ({short(value)})")
