"""Step through the backward pass without a debugger.

    for step in mt.backward_steps(loss):
        print(step)            # #1 Tanh -> 'h' (4, 3)  |g| 1.7  =>  (4, 3) |g| 0.9
        if step.op_name == 'MatMul':
            break              # stop halfway: the rest of the graph is still there

Each step is one op's backward, in the order loss.backward() runs them: both are
driven by the same loop, `backward_loop` in microtensor/autograd.py (no second copy
of it here).  Running the steps to the end fills every .grad exactly as
loss.backward() does.

Stopping early: by default the graph is kept (retain_graph=True), so after a
`break` you can call loss.backward() (or backward_steps again) on the same graph.
The leaves reached before the break already hold their .grad, so zero them first
(model.zero_grad(), or x.grad = None) if you start over.  With retain_graph=False
each op is freed right after its step, as backward() does to save memory.
"""
import time
from typing import NamedTuple

from .. import autograd, backend
from ..autograd import Function, no_grad
from ..tensor import Tensor
from .table import fmt


class Step(NamedTuple):
    """One op's backward: g = dL/d(output) came in, one gradient went out per input."""
    index: int            # 0 for the first op visited: the one that made the loss
    op: Function          # e.g. <MatMul>; its backward is op.backward (ops/linalg.py)
    output: Tensor        # the tensor the op made
    inputs: tuple         # the op's input tensors
    grad_output: Tensor   # g = dL/d(output), after the output's hooks ran
    grad_inputs: tuple    # dL/d(input) sent to each input (summed to its shape); None where none
    seconds: float        # time the step took: hooks, op.backward, summing into the inputs' slots

    @property
    def op_name(self):
        return type(self.op).__name__

    def __str__(self):
        sent = ', '.join(f"{_label(x)}{tuple(x.shape)} |g| {fmt(norm(gx), '.3g')}"
                         for x, gx in zip(self.inputs, self.grad_inputs))
        return (f"#{self.index} {self.op_name} -> {_label(self.output)}{tuple(self.output.shape)}  "
                f"|g| {fmt(norm(self.grad_output), '.3g')}  =>  {sent}")


def backward_steps(tensor, grad=None, retain_graph=True):
    """Yield one Step per op of tensor's backward pass, in execution order.

    grad: dL/d(tensor), as for tensor.backward(grad); ones for a scalar.
    retain_graph: keep the graph (default) so that stopping early leaves it usable;
    False frees each op after its step, like backward().
    Between steps your code runs in the grad mode it had, not the loop's no_grad.
    """
    root_grad = autograd._initial_grad(tensor, grad)
    loop = autograd.backward_loop([tensor], [root_grad], retain_graph)
    index = 0
    while True:
        start = time.perf_counter()
        with no_grad():  # only while the loop runs one op, as in backward()
            item = next(loop, None)
        seconds = time.perf_counter() - start
        if item is None:
            return
        op, output, grad_output, sent = item
        yield Step(index, op, output, tuple(op.inputs), grad_output, tuple(sent), seconds)
        index += 1


def norm(t):
    """The L2 norm sqrt(sum(t**2)) of a Tensor or array as a Python float (None for None).

    Summed in float64, so float32 gradients of any size neither overflow nor round away.
    """
    if t is None:
        return None
    data = t.data if isinstance(t, Tensor) else t
    xp = backend.array_module(data)
    flat = data.astype(xp.float64).ravel()
    return float(xp.sqrt(flat @ flat))


def _label(t):
    return f"{t.name!r} " if t.name else ''
