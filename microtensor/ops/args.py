"""Checking the axes and shapes ops are given, at the boundary.

Every op that takes an axis or a shape checks it here, so a bad one raises IndexError /
ValueError / TypeError naming the function, the argument and what it accepts, instead of
an internal traceback from deep inside numpy (or, worse, a silent wrong answer: numpy 2
reads reshape(-2) as reshape(-1)).  The checks run once per call, never per element.
Integers are Python ints and numpy integers; bools are not (axis=True is a mistake, not
axis 1).  Scalar arguments (numbers, flags) go through microtensor/argcheck.py.
"""
from ..argcheck import fail, integer


def axis(value, shape, op=None, new=False):
    """One axis of a tensor of `shape`, maybe negative, as an index in range(len(shape));
    new=True: where to insert a new axis (expand_dims, stack), so len(shape) is valid too."""
    ndim = len(shape) + new
    a = value if type(value) is int else integer(value, op, 'axis')  # a plain int: the common case, checked fast
    if not -ndim <= a < ndim:
        why = "a 0-d tensor has no axes" if ndim == 0 else f"valid: {-ndim} to {ndim - 1}"
        fail(IndexError, op, f"axis {a} is out of range for a tensor of shape {tuple(shape)} ({why})")
    return a % ndim


def axes(value, shape, op=None):
    """A reduction's `axis`: None (every axis), one axis, or a tuple/list of distinct axes;
    returned as a sorted tuple of non-negative ints."""
    if value is None:
        return tuple(range(len(shape)))
    if isinstance(value, (tuple, list)):
        result = [axis(a, shape, op) for a in value]
        if len(set(result)) != len(result):
            fail(ValueError, op, f"axis {tuple(value)} names an axis twice")
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
    result = tuple(integer(n, op, f"each size in {what}") for n in parts)
    if any(n < 0 for n in result):
        fail(ValueError, op, f"{what} {result} has a negative size")
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
    shape = tuple(integer(n, op, 'each size in the new shape') for n in parts)
    if shape and (min(shape) < -1 or shape.count(-1) > 1):
        fail(ValueError, op, f"shape {shape}: each size must be >= 0, or one of them -1 (inferred)")
    return shape
