"""Draw the graph behind a tensor with Graphviz.

    g = mt.draw_graph(loss, params=model)          # a graphviz.Digraph (shows inline in Jupyter)
    mt.draw_graph(loss, params=model, path='loss.svg')   # also .png, .pdf; .gv saves the source
    mt.draw_graph(loss, params=model, module='decoder.layers.1', rankdir='LR')   # one layer, left to right

One box per op (its name, its label such as 'ffn residual', the output's name and
shape) and one node per input that no op made (parameters and other leaves in
yellow, constants in grey); an edge runs from each input to the op that uses it.
Every node shows |grad|: for an op, |dL/d(output)|, the gradient arriving at it; for
a leaf, |dL/d(leaf)|.  draw_graph computes them with one backward pass of its own
(the engine's loop, keeping the graph and changing no .grad; tensor hooks do run).
backward() frees the graph, so to draw it afterwards call backward(retain_graph=True).

Ops made inside `with mt.record_modules(model):` are grouped in one box (cluster) per
module, nested as the modules are.  A residual addition (ResidualAdd) sits in its
layer's cluster, and its "+1" edge, the input whose gradient passes unchanged (an op's
`highway_inputs`), is drawn thick and orange: follow it to see the highway through
the model.  For a deep model, `module=` keeps one module's ops and `max_depth=` the ops
nearest the output; an input cut off by either is drawn as a small dotted stub.

Needs the `graphviz` Python package (pip install graphviz); rendering to an image
(and inline in Jupyter) also needs Graphviz's `dot` program.  Without it the source
is saved as a .gv file and a warning says how to install `dot` and render the file.
"""
import collections
import os
import shutil
import warnings

from .. import argcheck, autograd
from ..atomic_write import write_atomically
from ..autograd import no_grad
from ..tensor import Tensor
from .modules import in_module, leaf_module, module_of, scope_label, scope_of
from .steps import norm
from .trace import tensor_names

INSTALL_DOT = ("install Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; macOS: brew install "
               "graphviz; conda: conda install -c conda-forge graphviz; Windows: https://graphviz.org/download/)")
RENDER_FORMATS = ('svg', 'png', 'pdf')
RANKDIRS = ('BT', 'TB', 'LR', 'RL')
LEAF_STYLE = {  # a leaf that requires grad (a parameter), one that does not (a constant)
    'param': {'shape': 'ellipse', 'style': 'filled', 'fillcolor': '#fff2cc'},
    'const': {'shape': 'ellipse', 'style': 'dashed', 'color': 'grey50', 'fontcolor': 'grey30'},
}
HIGHWAY = {'color': '#e69138', 'penwidth': '3', 'label': '+1', 'fontcolor': '#e69138', 'fontname': 'Helvetica'}


MAX_NODES = 1000  # Graphviz's layout takes seconds at a few hundred nodes and minutes at thousands


def draw_graph(tensor, params=None, path=None, title=None, grads=True, rankdir='BT', max_depth=None,
               module=None, max_nodes=MAX_NODES):
    """The graph that computed `tensor`, as a graphviz.Digraph; also written to `path` if given.

    params: a Module, or a dict {name: tensor}, naming the parameters (else tensor.name).
    path: 'name.svg' / '.png' / '.pdf' renders with `dot`; 'name.gv' saves only the source.
    grads: show |grad| on every node (needs a scalar `tensor` that requires grad; False: none).
    rankdir: 'BT' (inputs at the bottom, the default), 'LR' (left to right: deep models), 'TB', 'RL'.
    max_depth: draw only ops at most this many ops away from `tensor` (0: its own op).
    module: draw only the ops of this module, named as trace tables print it ('decoder.layers.1',
        'decoder.layers.1.ffn residual', '(model)', '(no module)'; see mt.record_modules).
    max_nodes: a picture of more nodes (ops and their inputs) is refused at once, before Graphviz,
        whose layout of thousands of nodes takes minutes: draw a part (module=, max_depth=), or
        raise it.  mt.BackpropViewer shows big graphs by module.
    """
    graphviz = _import_graphviz()
    if rankdir not in RANKDIRS:
        raise ValueError(f"draw_graph: rankdir must be one of {RANKDIRS}, not {rankdir!r}")
    max_depth = argcheck.integer(max_depth, 'draw_graph', 'max_depth (0 draws only the last op)', min=0,
                                 allow_none=True)
    max_nodes = argcheck.integer(max_nodes, 'draw_graph', 'max_nodes', min=1)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"draw_graph: tensor must be a Tensor (the output whose graph to draw), "
                        f"not {argcheck.describe(tensor)}")
    if tensor.creator is None:
        raise no_graph('draw_graph', tensor)
    names = tensor_names(params)
    made, depth = _walk(tensor)
    kept = [t for t in made if (max_depth is None or depth[id(t)] <= max_depth)
            and (module is None or in_module(scope_of(t.creator), module))]
    if not kept:
        scopes = sorted({str(scope_of(t.creator)) for t in made})
        raise ValueError(f"draw_graph: no op to draw with module={module!r}, max_depth={max_depth}; "
                         f"the graph's ops are in {scopes}")
    _check_size(kept, max_nodes, module, max_depth)
    arriving = _arriving_grads(tensor) if grads and tensor.requires_grad and tensor.numel() == 1 else {}
    nodes, edges = _nodes_and_edges(tensor, kept, names, arriving)
    dot = graphviz.Digraph(name='microtensor', graph_attr={'rankdir': rankdir, 'label': title or '',
                                                           'fontname': 'Helvetica'},
                           node_attr={'fontname': 'Helvetica', 'fontsize': '10'})
    add_clusters(graphviz, dot, nodes)
    for a, b, attrs in edges:
        dot.edge(a, b, **attrs)
    if path is not None:
        save(dot, path)
    elif shutil.which('dot') is None:
        warnings.warn("draw_graph: Graphviz's `dot` program is not installed, so the returned graph cannot be "
                      f"rendered (Jupyter shows no picture; its text is in .source). To see it, {INSTALL_DOT}",
                      stacklevel=2)
    return dot


def no_graph(who, tensor):
    """The error for a tensor with no op behind it: nothing required grad (PyTorch: "element 0 of tensors
    does not require grad and does not have a grad_fn"), or it is a leaf."""
    if not tensor.requires_grad:
        return ValueError(
            f"{who}: nothing required grad, so no graph was recorded: this tensor of shape {tuple(tensor.shape)} "
            "does not require grad and has no op behind it (was it computed under no_grad(), or only from "
            "tensors without requires_grad=True?); make the inputs with requires_grad=True, e.g. "
            "mt.tensor(..., requires_grad=True), or use a model's parameters")
    return ValueError(f"{who}: nothing to show: this tensor of shape {tuple(tensor.shape)} was not made by an op "
                      "(it is a leaf: a parameter, or an input made with requires_grad=True), so it has no graph")


def _check_size(kept, max_nodes, module, max_depth):
    """Refuse, before any layout, a picture of more than max_nodes nodes: each op, and each input of
    theirs that no kept op made (a leaf, or a stub for a cut-off op)."""
    kept_ids = {id(t) for t in kept}
    inputs = {id(x) for t in kept for x in t.creator.inputs if id(x) not in kept_ids}
    count = len(kept) + len(inputs)
    if count > max_nodes:
        modules = collections.Counter(_part(scope_of(t.creator)) for t in kept)
        biggest = ', '.join(f"{name!r} ({n} ops)" for name, n in modules.most_common(4))
        raise ValueError(
            f"draw_graph: the picture would have {count} nodes ({len(kept)} ops with module={module!r}, "
            f"max_depth={max_depth}), more than max_nodes={max_nodes}: Graphviz could take minutes to lay it out. "
            f"Draw a part, module='...' (the ops are in {biggest}) or max_depth=20, or raise max_nodes; "
            "mt.BackpropViewer shows a big graph by module")


def _part(scope):
    """The module= that draws the part of the graph an op at `scope` is in: its first three levels
    ('decoder.layers.3'), or what trace tables print for the model and for no module."""
    return scope_label(scope if not scope else '.'.join(scope.split('.')[:3]))


def _walk(root):
    """(every tensor an op made, nearest first; {id(tensor): ops between it and root}), breadth first."""
    made, depth, queue = [], {id(root): 0}, collections.deque([root])
    while queue:
        t = queue.popleft()
        fn = t.creator
        if fn is None:
            continue
        if fn.inputs is None:
            raise RuntimeError(
                f"draw_graph: the graph behind this tensor (at {type(fn).__name__}) was freed by backward(); "
                "draw it before backward, or call backward(retain_graph=True) first")
        made.append(t)
        for x in fn.inputs:
            if id(x) not in depth:
                depth[id(x)] = depth[id(t)] + 1
                queue.append(x)
    return made, depth


def _arriving_grads(root):
    """{id(tensor): dL/d(tensor)} for every tensor the backward pass of `root` reaches.

    Runs the engine's own loop with wanted={} (so no .grad changes) and retain_graph=True.
    An op's output gets the g the loop hands to its backward; a leaf, the sum of what it was sent.
    """
    grads = {}
    with no_grad():
        for fn, output, g, sent in autograd.backward_loop([root], [autograd._initial_grad(root, None)],
                                                          retain_graph=True, wanted={}):
            grads[id(output)] = g
            for x, gx in zip(fn.inputs, sent):
                if gx is not None and x.creator is None:
                    grads[id(x)] = gx if id(x) not in grads else grads[id(x)] + gx
    return grads


def _nodes_and_edges(root, kept, names, arriving):
    """nodes: (id, label, attrs, module); edges: (input id, op id, attrs), for the ops in `kept`."""
    nodes, edges, ids = [], [], {}
    kept_ids = {id(t) for t in kept}

    def node_id(t, prefix):
        if id(t) not in ids:
            ids[id(t)] = f"{prefix}{len(ids)}"
            return ids[id(t)], True
        return ids[id(t)], False

    for t in kept:
        fn = t.creator
        attrs = {'shape': 'box', 'style': 'filled', 'fillcolor': '#cfe2f3'}
        if t is root:
            attrs.update(penwidth='2', fillcolor='#9fc5e8')
        op_id, _ = node_id(t, 'op')
        nodes.append((op_id, _op_label(fn, t, names, arriving), attrs, module_of(fn)))
        highways = getattr(fn, 'highway_inputs', ())
        for i, x in enumerate(fn.inputs):
            if x.creator is None:
                x_id, new = node_id(x, 't')
                if new:
                    nodes.append((x_id, _leaf_label(x, names, arriving), _leaf_attrs(x),
                                  leaf_module(x, names, fn)))
            elif id(x) in kept_ids:
                x_id, _ = node_id(x, 'op')
            else:  # made by an op this picture leaves out
                x_id, new = node_id(x, 'cut')
                if new:
                    nodes.append((x_id, _cut_label(x, arriving), {'shape': 'box', 'style': 'dotted',
                                                                 'fontcolor': 'grey30'}, None))
            edges.append((x_id, op_id, HIGHWAY if i in highways else {}))
    return nodes, edges


def _op_label(fn, t, names, arriving):
    lines = [type(fn).__name__]
    if getattr(fn, 'label', None):
        lines.append(fn.label)
    name = names.get(id(t)) or t.name
    if name:
        lines.append(name)
    lines.append(str(tuple(t.shape)))
    return '\n'.join(lines + _grad_line(t, arriving))


def constant_value(x, name):
    """A scalar constant's value, '0.5' (it says more than its shape); None for other leaves."""
    return f"{x.item():.4g}" if name is None and x.numel() == 1 and not x.requires_grad else None


def _leaf_label(x, names, arriving):
    name = names.get(id(x), '').rpartition('.')[2] or x.name  # 'weight': its cluster says whose
    value = constant_value(x, name)
    if value is not None:
        return value
    lines = [name or ('leaf' if x.requires_grad else 'constant'), str(tuple(x.shape))]  # unnamed: what it is
    return '\n'.join(lines + _grad_line(x, arriving))


def _cut_label(x, arriving):
    """A stub for an input whose op is not drawn: which op, from where."""
    scope = scope_of(x.creator)
    lines = [f"{type(x.creator).__name__} ..."] + ([f"from {scope}"] if scope else [])
    return '\n'.join(lines + [str(tuple(x.shape))] + _grad_line(x, arriving))


def _grad_line(t, arriving):
    g = arriving.get(id(t))
    return [] if g is None else [f"|grad| {norm(g):.3g}"]


def _leaf_attrs(x):
    return LEAF_STYLE['param' if x.requires_grad else 'const']


def add_clusters(graphviz, dot, nodes):
    """Put each node in the cluster of its module; clusters nest as the dotted names do."""
    members = {}
    for node_id, label, attrs, module in nodes:
        members.setdefault(module or '', []).append((node_id, label, attrs))
    children = {}
    for module in list(members):
        while module:  # register every ancestor: 'layers' holds 'layers.0' holds 'layers.0.ffn'
            parent = module.rpartition('.')[0]
            if module in children.get(parent, ()):
                break
            children.setdefault(parent, []).append(module)
            module = parent

    def fill(graph, module):
        for node_id, label, attrs in members.get(module, ()):
            graph.node(node_id, label, **attrs)
        for child in children.get(module, ()):
            cluster = graphviz.Digraph(name='cluster_' + child,
                                       graph_attr={'label': child, 'style': 'rounded', 'color': 'grey60'})
            fill(cluster, child)
            graph.subgraph(cluster)

    fill(dot, '')


def save(dot, path):
    """Render `dot` to path ('.svg', '.png', '.pdf') or save its source ('.gv'); returns the file written.

    Without Graphviz's `dot` program, saves the source next to `path` (as .gv) and warns how to render it.
    Files are written to a temporary name, then renamed (microtensor/atomic_write.py).
    """
    stem, ext = os.path.splitext(os.fspath(path))
    fmt = ext.lstrip('.').lower()
    if fmt in ('gv', 'dot'):
        _write(path, dot.source.encode())
        return path
    if fmt not in RENDER_FORMATS:
        raise ValueError(f"draw_graph: cannot tell the format of {path!r}; "
                         f"end it in one of .{', .'.join(RENDER_FORMATS)} (image) or .gv (source)")
    graphviz = _import_graphviz()
    try:
        data = dot.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        source = stem + '.gv'
        _write(source, dot.source.encode())
        warnings.warn(f"draw_graph: Graphviz's `dot` program was not found, so only the graph source was "
                      f"saved, to {source}. To get {path}, {INSTALL_DOT}, then run: "
                      f"dot -T{fmt} {source} -o {path}", stacklevel=3)
        return source
    _write(path, data)
    return path


def _write(path, data):
    write_atomically(path, lambda f: f.write(data), who='draw_graph')


def _import_graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("draw_graph needs the graphviz Python package: pip install graphviz "
                          "(or pip install -e '.[viz]'); rendering images also needs Graphviz's "
                          f"`dot` program: {INSTALL_DOT}") from None
    return graphviz


def graph_depth(tensor):
    """The longest chain of ops that produced `tensor`: the steps that must run one after another,
    however many processors there are (an RNN's grows with the sequence, attention's does not)."""
    depth = {}
    for t in reversed(autograd.topological_order([tensor])):      # inputs before the ops that use them
        fn = t.creator
        depth[id(t)] = 0 if fn is None else 1 + max((depth.get(id(x), 0) for x in fn.inputs), default=0)
    return depth[id(tensor)]
