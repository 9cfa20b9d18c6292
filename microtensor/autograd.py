"""Autograd: the Function base class and the backward loop.

How a gradient travels (set a breakpoint in `backward_loop` and watch):

    loss.backward()
      -> run_backward([loss], [ones])
      -> for each tensor t, from the loss back to the leaves (reverse topological order):
             g = grads.pop(t)                       # the total gradient dL/dt
             hooks may replace g; leaves (and retain_grad tensors) store it in t.grad
             input_grads = t.creator.backward(g)    # the op's chain rule, e.g. Exp: g * y
             add each input's gradient into grads[input]

Each op is a small `Function` subclass with `forward` (on backend arrays) and
`backward` (on Tensors, so that with create_graph=True the backward pass itself is
recorded and second derivatives come for free).
"""
import contextlib
import functools
import inspect
import os
import sys
import threading
import weakref

from . import argcheck, backend

_anomaly_mode = False


# ----------------------------------------------------------------------------
# grad mode: one switch per thread, as in PyTorch (no_grad in a data-loading or evaluation
# thread leaves the training thread recording)
class _GradMode(threading.local):
    enabled = True  # each new thread starts with recording on


_grad_mode = _GradMode()


class _GradModeSwitch:
    """with mt.no_grad(): ... sets this thread's grad mode for the block and restores it after.
    Also a decorator: @mt.no_grad() on a function sets it for each call; on a generator function, for
    the generator's own code each time it runs (not for the caller's code between two of its
    yields), as in PyTorch."""

    def __init__(self, enabled):
        self.enabled = enabled
        self._previous = []  # a stack: the same switch may be entered again inside its own block

    def __enter__(self):
        self._previous.append(_grad_mode.enabled)
        if self.enabled is not None:  # (None: inference_mode(False), which changes nothing)
            _grad_mode.enabled = self.enabled

    def __exit__(self, *exc_info):
        _grad_mode.enabled = self._previous.pop()

    def __call__(self, function):
        enabled = self.enabled
        if inspect.isgeneratorfunction(function):
            @functools.wraps(function)
            def generator(*args, **kwargs):
                return (yield from _run_generator(function(*args, **kwargs), enabled))
            return generator

        @functools.wraps(function)
        def call(*args, **kwargs):
            with _GradModeSwitch(enabled):
                return function(*args, **kwargs)
        return call


def _run_generator(gen, enabled):
    """Drive `gen`, each of its steps under the grad mode `enabled`; what the caller sends or throws
    in is passed on, and its return value returned."""
    to_send, to_throw = None, None
    while True:
        try:
            with _GradModeSwitch(enabled):
                item = gen.send(to_send) if to_throw is None else gen.throw(to_throw)
        except StopIteration as stop:
            return stop.value
        to_send, to_throw = None, None
        try:
            to_send = yield item
        except GeneratorExit:
            with _GradModeSwitch(enabled):
                gen.close()
            raise
        except BaseException as error:  # thrown in by the caller: gen decides what to do with it
            to_throw = error


def no_grad(function=None):
    """Ops inside record no graph (in this thread): for evaluation and for parameter updates.
    `with mt.no_grad():`, or `@mt.no_grad()` (or `@mt.no_grad`, as PyTorch allows) on a function
    or a generator function."""
    switch = _GradModeSwitch(False)
    return switch if function is None else switch(function)


def enable_grad(function=None):
    """Ops inside record the graph again (in this thread), e.g. within a no_grad block;
    a context manager or a decorator, as no_grad."""
    switch = _GradModeSwitch(True)
    return switch if function is None else switch(function)


def inference_mode(mode=True):
    """PyTorch's inference_mode: here the same as no_grad (no graph is recorded; microtensor has no
    inference tensors to mark).  inference_mode(False) leaves the grad mode as it is.  A context
    manager or a decorator, with or without parentheses, as in PyTorch."""
    if callable(mode):  # @mt.inference_mode
        return no_grad(mode)
    return _GradModeSwitch(False if argcheck.boolean(mode, 'inference_mode', 'mode') else None)


def is_grad_enabled():
    """Whether ops in this thread record the graph."""
    return _grad_mode.enabled


@contextlib.contextmanager
def detect_anomaly():
    """Record where each op was created and raise as soon as backward makes NaN/Inf.

    Slower (it inspects the call stack for every op), so only on request.
    """
    global _anomaly_mode
    previous, _anomaly_mode = _anomaly_mode, True
    try:
        yield
    finally:
        _anomaly_mode = previous


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_call_site():
    """'file:line' of the first frame outside microtensor: where the user called the op."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return '<unknown>'
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


# ----------------------------------------------------------------------------
# Function: the base of every op
class Function:
    """One op in the graph.  Subclasses define

        forward(self, *arrays, **params) -> array     on backend arrays (numpy or cupy)
        backward(self, g) -> tuple of Tensors         one gradient per input, or None

    `self.inputs` are the input Tensors; `self.output` is the output Tensor (held
    weakly, so an output and the op that made it form no reference cycle).
    Anything else backward needs is saved on `self` in forward.
    """
    inputs = ()
    created_at = None  # 'file:line', recorded in anomaly mode

    @classmethod
    def apply(cls, *inputs, **params):
        """Run forward on the inputs' arrays; record the op if a gradient will be needed."""
        fn = cls()
        check_inputs(cls, inputs)
        try:
            out_data = fn.forward(*[t.data for t in inputs], **params)
        except (ValueError, IndexError, TypeError, OverflowError) as error:  # a bad argument: numpy's or ours
            shapes = ', '.join(str(tuple(t.shape)) for t in inputs)
            raise error_kind(error)(f"{cls.__name__}: cannot apply to inputs of shapes {shapes}: {error}") from None
        out = check_forward_result(cls, Tensor._wrap(out_data))
        _share_version(out, inputs)
        # (lists, not generators: this runs for every op, and a generator costs ~1 us more)
        if _grad_mode.enabled and any([t.requires_grad for t in inputs]):
            fn.inputs = inputs
            fn.input_versions = [t._version[0] for t in inputs]
            fn._output = weakref.ref(out)
            fn.output_version = out._version[0]
            if _anomaly_mode:
                fn.created_at = _user_call_site()
            out.requires_grad = True
            out.creator = fn
        return out

    @property
    def output(self):
        """The output tensor, for ops whose backward reuses it (Exp: g * y)."""
        y = self._output()
        if y._version[0] != self.output_version:
            raise RuntimeError(
                f"{type(self).__name__}: its output of shape {y.shape} was modified in place after the forward "
                "pass, but backward needs its old value; use an out-of-place op (y = y + z) instead")
        return y

    def needs_grad(self, i):
        return self.inputs[i].requires_grad

    @property
    def next_functions(self):
        """PyTorch's name for where the gradient goes next, one (node, 0) per input: the op that made the
        input, an AccumulateGrad for a leaf that requires grad, None for a constant (tools such as
        torchviz walk grad_fn.next_functions).  Empty once backward has freed the graph."""
        return tuple((_node_of(t), 0) for t in self.inputs or ())

    def name(self):
        """The op's name (PyTorch's grad_fn.name() says 'MulBackward0'; here it is 'Mul')."""
        return type(self).__name__

    def release(self):
        """Drop the inputs and everything saved: the graph behind this op is freed."""
        self.__dict__.clear()
        self.inputs = None

    def __repr__(self):  # <Softmax decoder.layers.0.self_attn>: `p self` in a backward says where it was made
        return f"<{type(self).__name__}{_made_in(self)}{getattr(self, 'repr_extra', '')}>"


class AccumulateGrad:
    """A leaf's end of the graph, as PyTorch names it in grad_fn.next_functions: `variable` is the leaf
    whose .grad the backward fills.  One node per leaf, so a walk over the graph meets it once."""
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return 'AccumulateGrad'

    def __repr__(self):
        return f"<AccumulateGrad of a leaf of shape {self.variable.shape}>"


_leaf_nodes = weakref.WeakValueDictionary()  # id(leaf) -> its AccumulateGrad, while someone holds the node


def _node_of(t):
    """The node a gradient reaches from an op's input t: the op that made t, a leaf's AccumulateGrad, or None."""
    if t.creator is not None:
        return t.creator
    if not t.requires_grad:
        return None
    node = _leaf_nodes.get(id(t))
    if node is None or node.variable is not t:
        node = _leaf_nodes[id(t)] = AccumulateGrad(t)
    return node


def _share_version(out, inputs):
    """Give `out` the in-place counter of the input whose memory it is (a forward that returned its
    input) or views (reshape, slice, transpose...): an in-place change of either changes both, so
    both count it."""
    data = out.data
    base = data.base
    for t in inputs:
        if t.data is data or base is not None and (t.data is base or t.data.base is base):
            out._version = t._version
            return


# ----------------------------------------------------------------------------
# the backward loop
def topological_order(roots):
    """Tensors reachable from `roots`, each after every tensor that uses it.

    Iterative depth-first search (a 10,000-op chain must not hit the recursion
    limit); the order is deterministic: it follows the inputs' order.
    """
    order, visited = [], set()
    stack = [(root, False) for root in reversed(roots)]
    while stack:
        t, inputs_done = stack.pop()
        if inputs_done:
            order.append(t)  # after everything it depends on
            continue
        if id(t) in visited:
            continue
        visited.add(id(t))
        stack.append((t, True))
        fn = t.creator
        if fn is None:
            continue
        if fn.inputs is None:
            raise RuntimeError(
                f"backward through a graph that was already freed (at {type(fn).__name__}): "
                "the saved values were released by the previous backward(); "
                "pass retain_graph=True to the first backward() to go through it twice")
        for x in reversed(fn.inputs):
            if x.requires_grad and id(x) not in visited:
                stack.append((x, False))
    order.reverse()
    return order


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None):
    """Backpropagate `root_grads` from `roots`.

    With `inputs=None` gradients accumulate into the `.grad` of leaves (and of
    tensors that called retain_grad()); otherwise nothing's .grad changes and the
    total gradient of each tensor in `inputs` is returned (this is `mt.grad`).
    """
    wanted = None if inputs is None else {id(t): None for t in inputs}
    with (enable_grad() if create_graph else no_grad()):
        for _ in backward_loop(roots, root_grads, retain_graph, wanted):
            pass
    if wanted is not None:
        return tuple(wanted[id(t)] for t in inputs)
    return None


def backward_loop(roots, root_grads, retain_graph=False, wanted=None):
    """The backward pass, one op at a time (the caller sets the grad mode).

    A generator: after each op's backward it yields (op, output, g, sent), where
    g = dL/d(output) and sent[i] is the gradient sent to op.inputs[i] (None if none).
    run_backward runs it to the end; mt.backward_steps can stop after any op.
    """
    grads, owned = {}, set()  # owned: ids of the tensors whose gradient sum the engine made (_accumulate)
    incoming = IncomingGradients()  # no backward may write into its g (contract.py)
    for root, g in zip(roots, root_grads):
        _accumulate(grads, root, g, owned)

    try:
        for t in topological_order(roots):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            exclusive = id(t) in owned  # a sum only this loop holds: .grad may keep it without a copy
            for hook in t._hooks or ():
                new_g = hook(g)
                if new_g is not None and new_g is not g:
                    g, exclusive = check_hook_result(hook, g, new_g), False  # the hook's tensor: the hook may keep it
            fn = t.creator
            if wanted is not None:
                if id(t) in wanted:
                    wanted[id(t)] = _own(g, exclusive)
            elif fn is None or t._retains_grad:
                t.grad = _own(g, exclusive) if t.grad is None else t.grad + g
            if fn is None:
                continue

            _check_versions(fn)
            incoming.guard(fn, g)  # g is read-only until the next op: it may be another op's g too
            input_grads = fn.backward(g)

            sent = []
            for x, gx in zip(fn.inputs, check_backward_result(fn, input_grads)):
                if gx is None or not x.requires_grad:
                    sent.append(None)
                    continue
                if gx.shape != x.shape:  # undo broadcasting, in one place for every op
                    gx = gx.sum_to(x.shape)
                if gx.dtype != x.dtype:  # a float32 x used in a float64 op still gets a float32 gradient
                    gx = gx.to(dtype=x.dtype)
                if _anomaly_mode:
                    _check_finite(fn, gx)
                _accumulate(grads, x, gx, owned)
                sent.append(gx)
            yield fn, t, g, sent
            if not retain_graph:
                fn.release()
    except ValueError as error:  # numpy refused a write into a guarded g: name the op that tried
        raise incoming.refusal(error)
    finally:
        incoming.release()
    incoming.check()


def _own(g, exclusive):
    """The gradient a tensor keeps in .grad (or mt.grad returns): its own writable array, as in PyTorch.
    g itself when nothing else holds it (a sum the engine made); else a copy, so that no two leaves
    share a .grad, and the grad= a user passed, the gradient Add passed to both of its inputs, a
    read-only broadcast view, or a tensor a custom backward returned (one of its inputs, its g)
    never become one.  With create_graph=True the copy is itself in the graph (as PyTorch clones)."""
    if exclusive:
        return g
    if g.requires_grad and _grad_mode.enabled:
        return _ew.Cast.apply(g, dtype=g.dtype)
    return Tensor._wrap(g.data.copy())


def _accumulate(grads, t, g, owned):
    """Add g into t's gradient slot.

    The first gradient is stored as it is, never written to: it may be another tensor's
    too (Add sends the same g to both inputs) or a user's array.  The second makes a new
    sum, which only this slot holds; the third and later are added into it in place (no
    new array), unless create_graph is recording the backward pass, whose tensors are
    never modified.
    """
    key = id(t)
    previous = grads.get(key)
    if previous is None:
        grads[key] = g
    elif key in owned:
        previous.data += g.data
    else:
        grads[key] = previous + g
        if not _grad_mode.enabled:
            owned.add(key)


def _check_versions(fn):
    for x, version in zip(fn.inputs, fn.input_versions):
        if x._version[0] != version:
            raise RuntimeError(
                f"{type(fn).__name__}: an input of shape {x.shape} was modified in place after the "
                f"forward pass (version {version} -> {x._version[0]}), but backward needs its old value; "
                "use an out-of-place op (x = x + y) instead")


def _check_finite(fn, g):
    xp = backend.array_module(g.data)
    if not bool(xp.isfinite(g.data).all()):
        kind = 'NaN' if bool(xp.isnan(g.data).any()) else 'Inf'
        raise FloatingPointError(
            f"anomaly: {type(fn).__name__}.backward produced {kind} in a gradient of shape {g.shape}; "
            f"the op was created at {fn.created_at}")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """d(outputs)/d(inputs) as a tuple of Tensors, without touching any .grad.

    `grad_outputs` defaults to ones for scalar outputs.  With create_graph=True the
    result is itself differentiable (for second derivatives).
    """
    outputs, inputs = _tensors(outputs, 'outputs'), _tensors(inputs, 'inputs')
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    elif not isinstance(grad_outputs, (list, tuple)):
        raise TypeError(f"mt.grad: grad_outputs must be a Tensor or a list of them (or None), "
                        f"not {type(grad_outputs).__name__}")
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"mt.grad: {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    root_grads = [_initial_grad(y, g, 'mt.grad', f'grad_outputs[{i}]')
                  for i, (y, g) in enumerate(zip(outputs, grad_outputs))]
    for x in inputs:
        if not x.requires_grad:
            raise RuntimeError(f"mt.grad: an input of shape {x.shape} does not require grad")
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outputs, root_grads, retain, create_graph, inputs=inputs)
    for x, g in zip(inputs, result):
        if g is None and not allow_unused:
            raise RuntimeError(f"mt.grad: an input of shape {x.shape} is not used to compute the outputs "
                               "(pass allow_unused=True to get None for it)")
    return result


def _tensors(value, what):
    """mt.grad's outputs / inputs: a Tensor, or a list or tuple of Tensors."""
    values = [value] if isinstance(value, Tensor) else value
    if not isinstance(values, (list, tuple)) or not values or not all(isinstance(t, Tensor) for t in values):
        raise TypeError(f"mt.grad: {what} must be a Tensor or a non-empty list of Tensors, not {value!r:.60}")
    return list(values)


def _initial_grad(y, g, op='backward', what='gradient'):
    """The gradient backward starts from: ones for a scalar, else it must be given (`what` names the
    argument), of y's shape and on y's device.  Cast to y's dtype here, once, as PyTorch does (a float32,
    integer or bool gradient for a float64 output), so that no op's backward meets a stranger dtype."""
    if not y.requires_grad:
        raise RuntimeError(f"{op}: this tensor does not require grad and has no graph "
                           "(was it computed under no_grad(), or from tensors without requires_grad=True?)")
    if g is None:
        if y.numel() != 1:
            raise RuntimeError(f"{op}: the output has shape {y.shape}, not a scalar; "
                               f"pass the {what} (a tensor of the output's shape) or reduce it first (e.g. .sum())")
        return Tensor._wrap(backend.array_module(y.data).ones_like(y.data))
    array = param_array(g, y, op, what)  # on y's device, and numbers (complex refused, as PyTorch does for a real y)
    if array.shape != y.shape:
        raise ShapeError(f"{op}: {what} has shape {array.shape} but the output has shape {y.shape}; "
                         "pass one gradient per element of the output, in its shape")
    if not isinstance(g, Tensor):  # an array or a list of numbers: a private copy
        return Tensor._wrap(array.astype(y.dtype))
    return g if g.dtype == y.dtype else g.to(dtype=y.dtype)


# how numpy and cupy word a ValueError about shapes that do not fit together
SHAPE_MISMATCH = ('could not be broadcast', 'could not broadcast', 'non-broadcastable', 'cannot reshape',
                  'must match exactly', 'must have the same shape', 'mismatch in its core dimension',
                  'shape mismatch', 'shapes not aligned')


def error_kind(error):
    """ShapeError, DTypeError, IndexError, ValueError or TypeError: the plain class of a backend's error
    (numpy's AxisError is both an IndexError and a ValueError; some of its TypeErrors cannot be built
    from a message).  A ValueError about shapes is a ShapeError, as our own shape checks raise."""
    if isinstance(error, ShapeError) or isinstance(error, ValueError) and not isinstance(error, IndexError) \
            and any(words in str(error) for words in SHAPE_MISMATCH):
        return ShapeError
    kinds = (DTypeError, IndexError, ValueError, TypeError)
    return next((kind for kind in kinds if isinstance(error, kind)), ValueError)


def take_output(fn, tensor):
    """For an in-place op (buf[i] = v): `tensor` itself, not a new tensor, is fn's output from now on."""
    fn._output = weakref.ref(tensor)
    fn.output_version = tensor._version[0]
    tensor.creator, tensor.requires_grad = fn, True


from .argcheck import DTypeError, ShapeError  # noqa: E402
from .tensor import Tensor  # noqa: E402  (tensor.py imports this module first)
from .contract import (IncomingGradients, check_backward_result, check_forward_result,  # noqa: E402
                       check_hook_result, check_inputs)
from .convert import param_array  # noqa: E402
from .ops import elementwise as _ew  # noqa: E402


def _made_in(op):
    """' decoder.layers.0.self_attn': the module that made op (mt.record_modules; ' (model)' for the
    model's own ops), or '' when not recorded."""
    from .inspect.modules import scope_label, scope_of  # (here: the inspect package builds on the engine)
    where = scope_of(op)
    return '' if where is None else ' ' + scope_label(where)
