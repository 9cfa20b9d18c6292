"""Checking the axes and shapes ops are given, at the boundary.

Every op that takes an axis or a shape checks it here, so a bad one raises IndexError /
ValueError / TypeError naming the function, the argument and what it accepts, instead of
an internal traceback from deep inside numpy (or, worse, a silent wrong answer: numpy 2
reads reshape(-2) as reshape(-1)).  The checks run once per call, never per element.
Integers are Python ints and numpy integers; bools are not (axis=True is a mistake, not
axis 1).  Scalar arguments (numbers, flags) go through microtensor/argcheck.py.

Dims are spelt as PyTorch spells them (dim=, keepdim=) or as numpy does (axis=, keepdims=):
dim_keepdim and one_dim take either, refuse both at once, and refuse what the two libraries
read differently (an empty dim tuple; dim=None where PyTorch takes one dim).
"""
import numbers

from ..argcheck import ShapeError, boolean, fail, integer


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
    returned as a sorted tuple of non-negative ints.  A 0-d tensor takes dim 0 or -1 (and
    reduces nothing), as in PyTorch."""
    if value is None:
        return tuple(range(len(shape)))
    if not shape and _whole(value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value):
        return ()  # as PyTorch: a 0-d tensor reduces over dim 0 (or -1), which is the tensor itself
    if isinstance(value, (tuple, list)):
        result = [axis(a, shape, op) for a in value]
        if len(set(result)) != len(result):
            fail(ShapeError, op, f"axis {tuple(value)} names an axis twice")
        return tuple(sorted(result))
    return (axis(value, shape, op),)


def _whole(value):
    """Is value dim 0 or -1 (an integer, not a bool)?"""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and type(value).__name__ != 'bool_' \
        and value in (0, -1)


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
        fail(ShapeError, op, f"shape {shape}: each size must be >= 0, or one of them -1 (inferred)")
    return shape


def one_dim(op, dim, axis, default):
    """The one dim an op works along, spelt dim= (PyTorch) or axis= (numpy), both `default` unless given.
    None is refused: numpy reads axis=None as "the flattened tensor", which PyTorch's dim never means."""
    if not (type(axis) is int and axis == default):
        if not (type(dim) is int and dim == default) and dim is not axis:
            fail(TypeError, op, f"got dim={dim!r} and axis={axis!r}; axis is numpy's name for dim: pass one of them")
        dim = axis
    if dim is None:
        fail(TypeError, op, "dim=None: numpy's axis=None means the flattened tensor, PyTorch's dim is one dim; "
                            "flatten it yourself (t.reshape(-1)) and pass dim=0")
    return dim


def dim_keepdim(op, dim, keepdim, axis=None, keepdims=None):
    """A reduction's (dim, keepdim), spelt as PyTorch (dim, keepdim) or as numpy (axis, keepdims).

    dim=() is refused: numpy reads axis=() as "reduce nothing", PyTorch reads dim=() as
    "reduce every dimension", and a silent choice would surprise one of the two habits."""
    if axis is not None:
        if dim is not None:
            fail(TypeError, op, f"got dim={dim!r} and axis={axis!r}; axis is numpy's name for dim: pass one of them")
        dim = axis
    if keepdims is not None:
        keepdims = boolean(keepdims, op, 'keepdims')
        if keepdim is not False and boolean(keepdim, op, 'keepdim') != keepdims:
            fail(TypeError, op, f"got keepdim={keepdim!r} and keepdims={keepdims!r}; keepdims is numpy's name for "
                                "keepdim: pass one of them")
        keepdim = keepdims
    if isinstance(dim, (tuple, list)) and not dim:
        fail(ValueError, op, f"dim={dim!r} is ambiguous: numpy reads an empty axis tuple as 'reduce nothing', "
                             "PyTorch as 'reduce every dimension'; pass dim=None to reduce every dimension, or "
                             "leave the tensor as it is to reduce nothing")
    return dim, boolean(keepdim, op, 'keepdim')
