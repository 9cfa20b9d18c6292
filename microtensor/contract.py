"""What an op's forward and backward, and a hook, must return: the engine checks each result
and names the op (or the hook) and the input's position when one is wrong.  A few comparisons
per op, no host sync.  The contract itself is written out in docs/writing-an-op.md.
"""
from . import backend
from .tensor import Tensor


def check_forward_result(cls, out):
    """The output tensor, if forward returned an array (numpy scalars are 0-d arrays by now);
    else an error naming the op."""
    if backend.is_array(out.data):
        return out
    raise TypeError(f"{cls.__name__}.forward returned {describe(out.data)}; forward works on arrays and must "
                    "return one array (numpy's or cupy's), e.g. x * y, not a Tensor, a list or a tuple")


def check_backward_result(fn, grads):
    """What fn.backward returned, as a tuple of one gradient per input; else an error naming
    the op, the input's position and what is wrong (a few comparisons per input: no host sync).

    Each gradient is None or a Tensor on the input's device, of a floating dtype at least as
    precise as the input's, and of the input's shape or a shape it broadcast to (the loop
    sums that back).  A one-input op may return its gradient alone, without the tuple.
    """
    inputs = fn.inputs
    op = type(fn).__name__
    if isinstance(grads, Tensor) and len(inputs) == 1:
        return (grads,)
    if not isinstance(grads, (tuple, list)):
        raise TypeError(f"{op}.backward returned {describe(grads)} for {len(inputs)} inputs; return a tuple with "
                        f"one gradient (a Tensor, or None) per input, in the order of forward's arguments")
    if len(grads) != len(inputs):
        raise ValueError(f"{op}.backward returned {len(grads)} gradient{'s' * (len(grads) != 1)} for "
                         f"{len(inputs)} inputs; return one "
                         "per input, in the order of forward's arguments (None for an input with no gradient)")
    for i, (x, gx) in enumerate(zip(inputs, grads)):
        if gx is None or not x.requires_grad:
            continue
        if not isinstance(gx, Tensor):
            raise TypeError(f"{op}.backward: the gradient for input {i} is {describe(gx)}, not a Tensor; compute "
                            "it with Tensor ops on g and self.inputs (or wrap an array: mt.as_tensor(array))")
        g_array, x_array = gx.data, x.data  # (the arrays' attributes: cheaper than the Tensor's properties)
        if g_array.shape != x_array.shape and not _sums_to(g_array.shape, x_array.shape):
            raise ValueError(f"{op}.backward: the gradient for input {i} has shape {gx.shape}, but the input has "
                             f"shape {x.shape}; it must have the input's shape (or a shape the input was "
                             "broadcast to, which the engine sums back)")
        if type(g_array) is not type(x_array):
            raise RuntimeError(f"{op}.backward: the gradient for input {i} is on '{gx.device}', but the input is "
                               f"on '{x.device}'; build it from g and self.inputs, which are on the input's device")
        if g_array.dtype != x_array.dtype and not (g_array.dtype.kind == 'f'
                                                   and g_array.dtype.itemsize >= x_array.dtype.itemsize):
            raise TypeError(f"{op}.backward: the gradient for input {i} is {gx.dtype}, but the input is {x.dtype}; "
                            "a gradient is a float at least as precise as its input (a constant made in another "
                            "dtype? make it with x.dtype)")
    return grads


def _sums_to(shape, target):
    """Can a gradient of `shape` be summed down to `target` (was `target` broadcast to `shape`)?"""
    return len(shape) >= len(target) and all(n == 1 or n == m for n, m in zip(reversed(target), reversed(shape)))


def check_hook_result(hook, g, new_g):
    """A tensor hook's replacement gradient: a Tensor of g's shape, dtype and device; else an
    error naming the hook."""
    if not isinstance(new_g, Tensor) or new_g.shape != g.shape or type(new_g.data) is not type(g.data) \
            or new_g.dtype != g.dtype:
        got = (f"a Tensor of shape {new_g.shape}, {new_g.dtype} on '{new_g.device}'" if isinstance(new_g, Tensor)
               else describe(new_g))
        raise TypeError(f"register_hook: the hook {name(hook)} returned {got} for a gradient of shape {g.shape}, "
                        f"{g.dtype} on '{g.device}'; a hook returns None (keep the gradient) or a Tensor like it")
    return new_g


def name(fn):
    """How errors name a hook: its qualified name."""
    return getattr(fn, '__qualname__', None) or repr(fn)


def describe(value):
    """A short description of a wrong value for an error: its type, and its length for a sequence."""
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return 'None' if value is None else f"a {type(value).__module__.split('.')[0]}.{type(value).__name__}".replace(
        'a builtins.', 'a ')
