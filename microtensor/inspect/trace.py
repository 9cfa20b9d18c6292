"""A table of one whole backward pass: one row per op.

    tr = mt.trace(loss, params=model)   # runs the backward pass: fills .grad like loss.backward()
    print(tr)                           # op, shapes, |grad in|, |grad out| per input, share of time
    print(tr.table(module='layers.0'))  # only ops made inside that module (needs mt.record_modules)
    print(tr.table(module='(no module)'))   # the filter takes what the module column prints

Built on mt.backward_steps: each row is one Step, reduced to names, shapes and
gradient norms (the trace holds no tensors, so it keeps no memory alive).
|grad in| is |dL/d(output)|, the gradient arriving at the op; |grad out| is the
gradient it sends to each input.  Time is the share of the whole backward pass
spent in that step (the first row also pays for sorting the graph).
"""
from typing import NamedTuple

from .modules import in_module, scope_label, scope_of
from .steps import backward_steps, norm
from .table import Rows, fmt, format_table


class TraceRow(NamedTuple):
    index: int
    op: str           # the op's class name, e.g. 'MatMul'
    module: str       # where it was made: 'layers.0.ffn', 'layers.0.ffn residual' (a labelled op),
                      # '' the model itself, None no module (see mt.record_modules)
    output: str       # the output's name and shape, e.g. "h (4, 3)"
    grad_in: float    # |dL/d(output)|
    inputs: tuple     # (input's name and shape, |grad sent to it| or None) per input
    seconds: float


class Trace(Rows):
    """The rows of one backward pass; print it for the table."""

    def __getitem__(self, i):
        return self.rows[i]

    @property
    def seconds(self):
        return sum(row.seconds for row in self.rows)

    def filter(self, module):
        """The rows of ops made in `module` or in any module nested in it ('layers.0');
        '(model)' and '(no module)', as the table prints them, pick those rows."""
        return Trace(row for row in self.rows if in_module(row.module, module))

    def table(self, module=None):
        """The trace as text, optionally only the rows of `module` (and its sub-modules).

        Shares of time stay shares of the whole pass, so a filtered table shows what
        that module costs.
        """
        rows = self.rows if module is None else self.filter(module).rows
        total = self.seconds or 1.0
        header = ('#', 'module', 'op', 'output', '|grad in|', 'inputs: |grad out|', 'time')
        lines = [(str(r.index), scope_label(r.module), r.op, r.output, fmt(r.grad_in),
                  ', '.join(f"{name} {fmt(g)}" for name, g in r.inputs), f"{100 * r.seconds / total:.1f}%")
                 for r in rows]
        summary = f"{len(rows)} of {len(self.rows)} ops, backward took {1000 * self.seconds:.2f} ms"
        return format_table(header, lines, '><<<><>') + '\n' + summary

    def __repr__(self):
        return f"<Trace of {len(self.rows)} ops>"


def trace(tensor, grad=None, retain_graph=False, params=None):
    """Run tensor's backward pass (as tensor.backward(grad, retain_graph)) and return its Trace.

    params: a Module, or a dict {name: tensor}, whose names label the inputs
    (otherwise tensor.name, or nothing).  For the module column, make the graph
    inside `with mt.record_modules(model):`.
    """
    names = tensor_names(params)
    rows = []
    for step in backward_steps(tensor, grad, retain_graph):
        inputs = tuple((_describe(x, names), norm(gx)) for x, gx in zip(step.inputs, step.grad_inputs))
        rows.append(TraceRow(step.index, step.op_name, scope_of(step.op),
                             _describe(step.output, names), norm(step.grad_output), inputs, step.seconds))
    return Trace(rows)


def tensor_names(params):
    """{id(tensor): name} from a Module (its named_parameters) or a dict {name: tensor}."""
    if params is None:
        return {}
    pairs = params.items() if isinstance(params, dict) else params.named_parameters()
    return {id(t): name for name, t in pairs}


def _describe(t, names):
    name = names.get(id(t)) or t.name
    shape = str(tuple(t.shape))
    return f"{name} {shape}" if name else shape
