"""Argument checks at the public boundary: one rule, one message format, everywhere
(ops, modules, optimizers, the Transformer; axes and shapes are in ops/args.py).

    d_model = argcheck.integer(d_model, 'GPT', 'd_model', min=1)      # -> a Python int
    lr = argcheck.number(lr, 'SGD', 'lr', min=0)                       # -> a Python float
    value = argcheck.real(value, 'fill_', 'value')                     # any real number, as given

A value of the wrong kind raises TypeError (a bool, float or string where an integer
belongs; anything but a real number where a number belongs); a value outside its range
raises ValueError.  Both messages name the function or class, the argument, what it got
and the rule:

    GPT: n_layers must be an integer >= 1, not 0
    Adam: eps must be a finite number >= 0, not nan

numpy integers count as integers and numpy floats as numbers (they come out of arrays and
configs); the checks return plain Python values, so a model stores `d_model` as an int.
`where` is None inside an op's forward: Function.apply adds the op's name and shapes itself.
memory() refuses sizes whose numbers cannot fit in this machine's memory, before any is allocated.
"""
import math
import numbers
import operator
import os


class ShapeError(RuntimeError, ValueError):
    """Shapes that do not fit together (broadcasting, matmul, reshape, cat, ...).

    PyTorch raises RuntimeError for these and numpy ValueError: this class is both, so
    `except RuntimeError` (a PyTorch habit) and `except ValueError` (a numpy habit) both catch it."""


class DTypeError(TypeError, NotImplementedError):
    """A tensor of a dtype the op does not take (sqrt of bool, bitwise_and of floats, a float index).

    PyTorch raises RuntimeError (its NotImplementedError: "not implemented for 'Float'") for these;
    this class is that and a TypeError, so `except RuntimeError`, `except NotImplementedError` and
    `except TypeError` all catch it."""


def fail(error, where, message):
    """Raise error("where: message") (just the message when where is None)."""
    raise error(f"{where}: {message}" if where else message) from None


def integer(value, where, name, min=None, max=None, allow_none=False):
    """`value` as a Python int in [min, max] (either bound may be None)."""
    if value is None and allow_none:
        return None
    original = value
    if type(value) is int and min is None and max is None:  # the common case (an op's axis, a size), fast
        return value
    rule = 'an integer' + _range(min, max, False, False) + (' or None' if allow_none else '')
    try:
        # numpy ints too; not a one-element tensor, whose __index__ is for Python's own slices (data[i:i + 8])
        value = operator.index(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None
    except TypeError:
        value = None
    if value is None:
        fail(TypeError, where, f"{name} must be {rule}, not {describe(original)}")
    if (min is not None and value < min) or (max is not None and value > max):
        fail(ValueError, where, f"{name} must be {rule}, not {value}")
    return value


def number(value, where, name, min=None, max=None, min_open=False, max_open=False, allow_inf=False,
           allow_none=False):
    """`value` as a Python float, finite (unless allow_inf) and within the bounds
    (min_open / max_open exclude the bound itself)."""
    if value is None and allow_none:
        return None
    finite = '' if allow_inf else 'finite '
    rule = f'a {finite}number' + _range(min, max, min_open, max_open) + (' or None' if allow_none else '')
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(TypeError, where, f"{name} must be {rule}, not {describe(value)}")
    value = float(value)
    inside = ((min is None or (value > min if min_open else value >= min))
              and (max is None or (value < max if max_open else value <= max)))
    if math.isnan(value) or (math.isinf(value) and not allow_inf) or not inside:
        fail(ValueError, where, f"{name} must be {rule}, not {value}")
    return value


def real(value, where, name):
    """`value` unchanged if it is a real number, nan and inf included (a fill value, a clip
    bound); None, str, complex, ... are a TypeError."""
    if isinstance(value, numbers.Real):
        return value
    fail(TypeError, where, f"{name} must be a real number, not {describe(value)}")


def boolean(value, where, name):
    """`value` as True or False (numpy bools too); a flag given as 1, 'yes' or None is refused,
    not guessed."""
    if value is True or value is False:
        return value
    if type(value).__name__ == 'bool_':  # numpy's (this module imports no numpy)
        return bool(value)
    fail(TypeError, where, f"{name} must be True or False, not {describe(value)}")


def choice(value, where, name, options):
    """`value` if it is one of the strings in `options`."""
    if not isinstance(value, str) or value not in options:
        fail(ValueError, where, f"{name} must be one of {', '.join(map(repr, options))}, not {describe(value)}")
    return value


def _range(low, high, low_open, high_open):
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high}"
    return ''


def short(value, limit=40):
    """repr(value), cut to `limit` characters (a bad argument may be a huge list)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def describe(value):
    """What a bad value was, short: "float 2.5", "str '3'", "None"."""
    return 'None' if value is None else f"{type(value).__name__} {short(value)}"


def machine_memory():
    """This machine's memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (AttributeError, OSError, ValueError):
        return None


def gib(n_bytes):
    """n_bytes in GiB, for messages: '23.4 GiB', '3.6e+03 GiB'."""
    return f"{n_bytes / 2 ** 30:.3g} GiB"


def memory(where, n_numbers, what, sizes, itemsize=4):
    """Refuse, before anything is allocated, n_numbers `what` (e.g. 'parameters') of itemsize bytes
    each (float32: 4) that cannot fit in this machine's memory; `sizes` names the options that set
    them (e.g. "d_model=100000, n_layers=2").  numpy alone would either refuse the first huge array
    or, with the memory promised lazily, fill it until the system stops the process."""
    have, need = machine_memory(), n_numbers * itemsize
    if have is not None and need > have:
        raise ValueError(f"{where}: {sizes} make at least {n_numbers:.3g} {what} ({gib(need)} at {itemsize} bytes "
                         f"each), more than this machine's {gib(have)} of memory; choose smaller sizes")
