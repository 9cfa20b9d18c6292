"""Seeing gradients: tools that watch the backward pass without changing it.

    steps.py     backward_steps(loss): iterate over the backward pass, one op at a time
    trace.py     trace(loss): a table of the whole pass (op, shapes, gradient norms, time)
    modules.py   record_modules(model): remember which module made each op (for the two below)
    graph.py     draw_graph(tensor): the graph as a graphviz.Digraph, modules as clusters;
                 graph_depth(tensor): its longest chain of ops
    flow.py      gradient_flow(model, optimizer): per-parameter |grad|, |W|, update/weight
    viewer.py    BackpropViewer(loss).save('backprop.html'): step through the pass in a browser;
                 shared_scale(a, b): one colour scale for several pages
    layout.py    ... its graph laid out as SVG (Graphviz's dot, or a layered layout without it)

All of them are built on the engine's own loop (autograd.backward_loop), hooks and
.grad; none is a special path in the engine, and none costs anything while unused.
"""
from .flow import FlowReport, gradient_flow
from .graph import draw_graph, graph_depth
from .modules import module_of, record_modules
from .steps import Step, backward_steps, norm
from .trace import Trace, trace
from .viewer import BackpropViewer, shared_scale
