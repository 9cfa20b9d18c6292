"""Draw the graph behind a tensor with Graphviz.

    g = mt.draw_graph(loss, params=model)          # a graphviz.Digraph (shows inline in Jupyter)
    mt.draw_graph(loss, params=model, path='loss.svg')   # also .png, .pdf; .gv saves the source

One box per op (its name, the output's name and shape) and one node per input
that no op made (parameters and other leaves in yellow, constants in grey); an
edge runs from each input to the op that uses it.  A node shows |grad| once its
tensor has a .grad (leaves after backward; other tensors after retain_grad()).
backward() frees the graph, so to draw it afterwards call backward(retain_graph=True).
Ops made inside `with mt.record_modules(model):` are grouped in one box (cluster) per
module, nested as the modules are, so one transformer block stays readable.

Needs the `graphviz` Python package (pip install graphviz); rendering to an image
also needs Graphviz's `dot` program.  Without it the source is saved as a .gv file
and a warning says how to install `dot` and render the file.
"""
import os
import warnings

from .modules import module_of
from .steps import norm
from .trace import tensor_names

INSTALL_DOT = ("install Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; macOS: brew install "
               "graphviz; conda: conda install -c conda-forge graphviz; Windows: https://graphviz.org/download/)")
RENDER_FORMATS = ('svg', 'png', 'pdf')


def draw_graph(tensor, params=None, path=None, title=None):
    """The graph that computed `tensor`, as a graphviz.Digraph; also written to `path` if given.

    params: a Module, or a dict {name: tensor}, naming the parameters (else tensor.name).
    path: 'name.svg' / '.png' / '.pdf' renders with `dot`; 'name.gv' saves only the source.
    """
    graphviz = _import_graphviz()
    names = tensor_names(params)
    nodes, edges = _walk(tensor, names)
    dot = graphviz.Digraph(name='microtensor', graph_attr={'rankdir': 'BT', 'label': title or '',
                                                           'fontname': 'Helvetica'},
                           node_attr={'fontname': 'Helvetica', 'fontsize': '10'})
    _add_clusters(graphviz, dot, nodes)
    for a, b in edges:
        dot.edge(a, b)
    if path is not None:
        save(dot, path)
    return dot


def _walk(root, names):
    """(nodes, edges): node = (id, label, attrs, module); an edge runs input -> op."""
    nodes, edges, ids = [], [], {}

    def node_id(t):
        if id(t) not in ids:
            ids[id(t)] = f"op{len(ids)}" if t.creator is not None else f"t{len(ids)}"
        return ids[id(t)]

    stack, drawn = [root], set()
    while stack:
        t = stack.pop()
        if id(t) in drawn:
            continue
        drawn.add(id(t))
        fn = t.creator
        if fn is None:
            continue  # leaves are drawn below, with their consumer's module
        if fn.inputs is None:
            raise RuntimeError(
                f"draw_graph: the graph behind this tensor (at {type(fn).__name__}) was freed by backward(); "
                "draw it before backward, or call backward(retain_graph=True) first")
        attrs = {'shape': 'box', 'style': 'filled', 'fillcolor': '#cfe2f3'}
        if t is root:
            attrs.update(penwidth='2', fillcolor='#9fc5e8')
        nodes.append((node_id(t), _label(type(fn).__name__, t, names), attrs, module_of(fn)))
        for x in fn.inputs:
            if x.creator is None and id(x) not in drawn:
                drawn.add(id(x))
                nodes.append((node_id(x), _leaf_label(x, names), _leaf_attrs(x), _leaf_module(x, names, fn)))
            edges.append((node_id(x), node_id(t)))
            stack.append(x)
    return nodes, edges


def _label(op_name, t, names):
    lines = [op_name]
    name = names.get(id(t)) or t.name
    if name:
        lines.append(name)
    lines.append(str(tuple(t.shape)))
    if t.grad is not None:
        lines.append(f"|grad| {norm(t.grad):.3g}")
    return '\n'.join(lines)


def _leaf_label(x, names):
    name = names.get(id(x)) or x.name
    if name is None and x.size == 1 and not x.requires_grad:
        return f"{x.item():.4g}"  # a scalar constant: its value says most
    lines = [name] if name else []
    lines.append(str(tuple(x.shape)))
    if x.grad is not None:
        lines.append(f"|grad| {norm(x.grad):.3g}")
    return '\n'.join(lines)


def _leaf_attrs(x):
    if x.requires_grad:
        return {'shape': 'ellipse', 'style': 'filled', 'fillcolor': '#fff2cc'}
    return {'shape': 'ellipse', 'style': 'dashed', 'color': 'grey50', 'fontcolor': 'grey30'}


def _leaf_module(x, names, consumer):
    """A parameter sits in its own module's cluster; another leaf in its (first) consumer's."""
    name = names.get(id(x))
    if name is not None:
        return name.rpartition('.')[0] or None
    return module_of(consumer)


def _add_clusters(graphviz, dot, nodes):
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
    Files are written to a temporary name, then renamed.
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
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)


def _import_graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("draw_graph needs the graphviz Python package: pip install graphviz "
                          "(or pip install -e '.[viz]'); rendering images also needs Graphviz's "
                          f"`dot` program: {INSTALL_DOT}") from None
    return graphviz

