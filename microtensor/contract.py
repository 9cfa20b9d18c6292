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


def check_inputs(cls, inputs):
    """What cls.apply was given: one or more Tensors, all on one device; else an error naming the op."""
    op = cls.__name__
    if not inputs:
        raise TypeError(f"{op}.apply() got no inputs; pass the tensors forward works on, in the order of its "
                        f"arguments: {op}.apply(x) or {op}.apply(x, y) (settings that are not differentiated go "
                        "by keyword)")
    first = inputs[0]
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}.apply: input {i} is {describe(t)}, not a Tensor; make it one with mt.tensor(...) "
                            f"(a setting that is not differentiated, such as a scale, goes by keyword: "
                            f"{op}.apply(x, scale=2.0))")
        if type(t.data) is not type(first.data):
            raise RuntimeError(f"{op}: inputs are on different devices ({first.device} and {t.device}); "
                               "move one with .to(device)")


# ----------------------------------------------------------------------------
# the incoming gradient is read-only during backward: the loop may pass one array to several ops
# (Add sends its g to both of its inputs), so an op that wrote into its g would change its sibling's.
class IncomingGradients:
    """Refuses a backward that writes into its incoming gradient, naming the op.  The loop calls
    guard(fn, g) before fn.backward(g); the guard lasts until the next guard, or `release`.

    numpy: g's array is read-only meanwhile, so numpy refuses the write where it happens, and
    `refusal` turns numpy's error into one naming the op.  cupy has no read-only arrays: a checksum
    of g's bits taken by guard is compared with one taken at release, on the GPU, and `check` (at
    the end of the backward pass) reads every comparison in one transfer."""

    def __init__(self):
        self.fn = None  # the op whose backward runs
        self.frozen = None  # numpy: the array made read-only
        self.checking = None  # cupy: (op, g's array, its checksum before the op's backward)
        self.pending = []  # cupy: (op, g's device-side 'unchanged' flag)

    def guard(self, fn, g):
        self.release()
        self.fn, array = fn, g.data
        if not hasattr(array.flags, 'writeable'):  # cupy
            self.checking = (fn, array, _checksum(array))
        elif array.flags.writeable:  # (an array already read-only, such as a broadcast view, is guarded)
            array.flags.writeable = False
            self.frozen = array

    def release(self):
        if self.frozen is not None:
            self.frozen.flags.writeable = True
            self.frozen = None
        if self.checking is not None:
            fn, array, before = self.checking
            self.pending.append((fn, _checksum(array) == before))
            self.checking = None

    def refusal(self, error):
        """The error to raise for `error`, raised while the guarded op ran: numpy's refusal to write into
        a read-only array becomes one naming the op; anything else stays as it is."""
        if self.fn is not None and 'read-only' in str(error):
            refused = wrote_into_g(self.fn)
            refused.__suppress_context__ = True
            return refused
        return error

    def check(self):
        if not self.pending:
            return
        xp = backend.array_module(self.pending[0][1])
        unchanged = xp.stack([same for _, same in self.pending])
        if not bool(unchanged.all()):
            raise wrote_into_g(self.pending[int(unchanged.argmin())][0])


def _checksum(array):
    """The sum of the array's bits as unsigned integers (wrapping): any write that changes g changes it,
    but for a vanishing few."""
    return array.view(f'uint{8 * array.itemsize}').sum(dtype='uint64')


def wrote_into_g(fn):
    op = type(fn).__name__
    return RuntimeError(
        f"{op}.backward wrote into its incoming gradient g (e.g. g *= 2, or g.data[...] = ...); g may be shared "
        "with other branches of the graph (Add passes one g to both of its inputs), whose gradients would "
        f"change too. Compute a new tensor instead: return g * 2, not g after g *= 2")
