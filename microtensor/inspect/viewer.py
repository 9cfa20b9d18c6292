"""Watch the backward pass in a browser: one self-contained HTML page, step by step.

    with mt.record_modules(model):               # optional: group the ops by module
        loss = loss_fn(model(x), y)
    viewer = mt.BackpropViewer(loss, params=model)   # runs the backward pass (fills .grad)
    viewer.save('backprop.html')                 # open it in any browser, offline
    viewer                                       # in Jupyter: shown inline

The page shows the graph (ops as boxes, parameters as yellow ovals, constants grey;
modules as nested boxes; residual connections, the ResidualAdd op of
transformer/residual.py, in green with their "+1" and F roads) and plays the
backward pass one op at a time: next / previous (arrow keys), play / pause with a
speed, click a node to jump to it, filter by module.  At each step it shows the op,
its formula (the op's docstring), the shapes, |g| = |dL/d(output)| arriving, the
|gradient| sent to each input and, for the first rows and columns, the values.
Edges already traversed are coloured by the gradient's norm on a log scale, so a
vanishing path fades at a glance.

Recorded with mt.backward_steps (the engine's own loop), so the steps are exactly
loss.backward()'s.  Laid out by Graphviz's `dot` when the graphviz package and
program are installed, else by a simple layered layout computed here: the page
always works.  Everything is inline (no network): it opens from disk.

Size limits: above `max_nodes` nodes the graph shows one box per module (the finest
module depth that fits) instead of one per op, and values (then whole steps) are
left out beyond `max_bytes`; the page says so in a note.
"""
import bisect
import html as html_lib
import inspect
import itertools
import json
import math
import os
import re
from typing import NamedTuple

from .. import backend
from .modules import module_of
from .steps import backward_steps, norm
from .trace import tensor_names

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'viewer.html')
RESIDUAL_OP = 'ResidualAdd'   # transformer/residual.py: y = x + alpha * F(x)
ROADS = ('+1', 'F')           # what ResidualAdd sends to x and to F(x)
VALUE_ROWS, VALUE_COLS = 6, 6  # the values shown per tensor (the rest is noted, not embedded)


class StepRecord(NamedTuple):
    """One step of the recorded pass, reduced to what the page shows (no tensors kept)."""
    index: int
    op: str            # the op's class name, e.g. 'MatMul'
    module: str        # the module that made it (mt.record_modules), or None
    node: int          # index of the op's node in viewer.nodes
    grad_in: float     # |dL/d(output)|: the gradient arriving
    sent: tuple        # |gradient| sent to each input (None where none)
    inputs: tuple      # the node index of each input


class Node(NamedTuple):
    """An op (its output tensor) or a leaf of the graph."""
    kind: str          # 'op', 'param' (a leaf that requires grad), 'const' (a leaf that does not)
    title: str         # the op's class name; a scalar constant's value; else None
    name: str          # the tensor's name (params=, or tensor.name), or None
    shape: tuple
    module: str        # the module it belongs to (mt.record_modules), or None
    residual: str      # for a ResidualAdd: 'layers.1.ffn residual' (the sub-layer F it adds); else ''


class BackpropViewer:
    """Record tensor's backward pass (as tensor.backward(grad, retain_graph)) for the HTML viewer.

    params: a Module, or a dict {name: tensor}, naming the parameters (else tensor.name).
    layout: 'auto' (dot when installed, else layered), 'dot' or 'layered'.
    max_nodes: above this many nodes, one node per module; max_bytes: the page's size limit
    (values, then steps, are left out beyond it; the drawing itself is bounded by max_nodes).

    What was recorded: .steps (a StepRecord per op, in backward order), .nodes (a Node per
    op and leaf), .edges ((input node, op node, road) per input of each step), .grad_norms
    (|dL/d(tensor)| per node), .values (the first rows and columns of each step's gradients).
    """

    def __init__(self, tensor, grad=None, params=None, retain_graph=False, title=None, layout='auto',
                 max_nodes=2000, max_bytes=4_000_000):
        if layout not in ('auto', 'dot', 'layered'):
            raise ValueError(f"BackpropViewer: layout must be 'auto', 'dot' or 'layered', not {layout!r}")
        self.layout, self.max_nodes, self.max_bytes = layout, max_nodes, max_bytes
        self.nodes, self.edges, self.steps, self.values, self.formulas = [], [], [], [], {}
        self._record(tensor, grad, retain_graph, tensor_names(params))
        self.title = title or f"Backward pass: {len(self.steps)} ops"
        self._html = None

    # ------------------------------------------------------------------ recording
    def _record(self, tensor, grad, retain_graph, names):
        node_of, keep = {}, []  # keep: the ops and leaves seen, so that their id()s stay unique
        done_at = {}            # node -> the step after which its gradient is complete
        sums = {}               # leaf node -> the sum of the gradients sent to it: its dL/dx

        def node_for(t, consumer):
            owner = t.creator if t.creator is not None else t
            key = id(owner)
            if key not in node_of:
                keep.append(owner)
                node_of[key] = len(self.nodes)
                self.nodes.append(_node(t, names, consumer))
            return node_of[key]

        for step in backward_steps(tensor, grad, retain_graph):
            me = node_for(step.output, None)
            done_at[me] = step.index
            inputs = tuple(node_for(x, step.op) for x in step.inputs)
            sent = tuple(norm(gx) for gx in step.grad_inputs)
            roads = ROADS if self.nodes[me].residual else (None,) * len(inputs)
            for src, road, gx in zip(inputs, roads, step.grad_inputs):
                self.edges.append((src, me, road))
                if self.nodes[src].kind != 'op' and gx is not None:
                    done_at[src] = step.index  # a leaf's .grad is complete after its last consumer
                    sums[src] = gx if src not in sums else sums[src] + gx
            self.steps.append(StepRecord(step.index, step.op_name, module_of(step.op), me,
                                         norm(step.grad_output), sent, inputs))
            self.values.append((_values(step.grad_output), tuple(_values(gx) for gx in step.grad_inputs)))
            if step.op_name not in self.formulas:
                self.formulas[step.op_name] = inspect.cleandoc(type(step.op).__doc__ or '(no docstring)')
        if not self.steps:
            raise ValueError(f"BackpropViewer: nothing to show: this tensor of shape {tuple(tensor.shape)} was not "
                             "made by an op (it is a leaf), so its backward pass has no steps")
        self.done_at = [done_at.get(i) for i in range(len(self.nodes))]
        self.grad_norms = [norm(sums.get(i)) for i in range(len(self.nodes))]  # |dL/dx| per node
        for s in self.steps:
            self.grad_norms[s.node] = s.grad_in

    # ------------------------------------------------------------------ the page
    def html(self):
        """The page as one string (everything inline)."""
        if self._html is None:
            self._html = self._build()
        return self._html

    def save(self, path):
        """Write the page to `path` (to a temporary name, then renamed); returns the path."""
        path = os.fspath(path)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(self.html())
        os.replace(tmp, path)
        return path

    def _repr_html_(self):
        """Jupyter: the page in an iframe, so its script and styles stay out of the notebook's."""
        return (f'<iframe srcdoc="{html_lib.escape(self.html(), quote=True)}" '
                'style="width:100%;height:720px;border:1px solid #ccc"></iframe>')

    def __repr__(self):
        return f"<BackpropViewer of {len(self.steps)} ops, {len(self.nodes)} nodes>"

    def _build(self):
        notes = []
        graph = _Graph.of(self)
        if len(self.nodes) > self.max_nodes:
            graph = graph.by_module(self.max_nodes)
            notes.append(graph.note)
        svg, layout_note = _layout(graph, self.layout)
        if layout_note:
            notes.append(layout_note)
        data = graph.data(self, notes)
        return _fit(self, data, svg, notes)


class _Graph:
    """What is drawn: nodes, edges, and where each step and each sent gradient lands on them."""

    def __init__(self, nodes, edges, node_of_step, edge_of_sent, note=None):
        self.nodes = nodes                    # dicts: kind, label, module, residual, tip, done, first, g
        self.edges = edges                    # (from node, to node, road label or None)
        self.node_of_step = node_of_step      # step -> the node that shows it
        self.edge_of_sent = edge_of_sent      # step -> per input, the edge its gradient takes (-1: not drawn)
        self.note = note

    @classmethod
    def of(cls, viewer):
        """One node per op and leaf, one edge per input."""
        nodes = [dict(kind=n.kind, label=_label(n, False), short=_label(n, True), module=n.module,
                      residual=bool(n.residual),
                      done=viewer.done_at[i], first=viewer.done_at[i] if n.kind == 'op' else None,
                      g=viewer.grad_norms[i]) for i, n in enumerate(viewer.nodes)]
        edge = iter(range(len(viewer.edges)))
        return cls(nodes, list(viewer.edges), [s.node for s in viewer.steps],
                   [[next(edge) for _ in s.inputs] for s in viewer.steps])

    def by_module(self, max_nodes):
        """One node per module, at the finest module depth that leaves at most max_nodes // 2 of them.

        Nodes made outside every module are grouped in runs of consecutive steps, sized to
        fill the rest of max_nodes.
        """
        nodes = self.nodes
        depth = max([n['module'].count('.') + 1 for n in nodes if n['module']], default=0)
        while depth and len({_group_key(n['module'], depth) for n in nodes} - {None}) > max_nodes // 2:
            depth -= 1  # depth 0: modules ignored, every node in a run of steps
        keys = [_group_key(n['module'], depth) for n in nodes]
        outside = sorted((i for i, k in enumerate(keys) if k is None),
                         key=lambda i: nodes[i]['first'] if nodes[i]['first'] is not None else nodes[i]['done'] or 0)
        run = max(1, -(-len(outside) // max(1, max_nodes - len(set(keys) - {None}))))
        for rank, i in enumerate(outside):
            keys[i] = ('#', rank // run)
        groups, members = {}, {}
        for i, key in enumerate(keys):
            groups.setdefault(key, len(groups))
            members.setdefault(key, []).append(i)
        merged = [_merge(nodes, key, ids) for key, ids in members.items()]
        group_of = [groups[k] for k in keys]
        pairs, edge_map = {}, []
        for a, b, _ in self.edges:
            ga, gb = group_of[a], group_of[b]
            if ga == gb:
                edge_map.append(-1)  # inside one module: not drawn
            else:
                edge_map.append(pairs.setdefault((ga, gb), len(pairs)))
        where = f"module depth {depth}" if depth else "runs of consecutive steps (modules: see mt.record_modules)"
        note = (f"{len(self.nodes)} nodes are too many to draw one by one (max_nodes={max_nodes}): "
                f"each box is a group ({where}); the steps still go op by op.")
        return _Graph(merged, [(a, b, None) for a, b in pairs], [group_of[i] for i in self.node_of_step],
                      [[edge_map[e] for e in row] for row in self.edge_of_sent], note)

    def data(self, viewer, notes):
        """The page's data (values come separately, so they can be left out to fit max_bytes).

        Steps name their tensors by index into `tensors` (each op's output, each leaf); norms
        keep 6 significant digits (the page shows 4).
        """
        steps = []
        for s, node, edges in zip(viewer.steps, self.node_of_step, self.edge_of_sent):
            sent = [dict(e=e, g=_round(g, 6), x=i) for e, g, i in zip(edges, s.sent, s.inputs)]
            if viewer.nodes[s.node].residual:
                for d, road in zip(sent, ROADS):
                    d['road'] = road
            steps.append(dict(op=s.op, m=s.module, n=node, y=s.node, g=_round(s.grad_in, 6), sent=sent))
        nodes = [{k: _round(v, 6) if k == 'g' else v for k, v in n.items()
                  if k in ('kind', 'module', 'done', 'first', 'g') or (k == 'tip' and n['kind'] == 'group')}
                 for n in self.nodes]
        return dict(title=viewer.title, nodes=nodes, edges=[[a, b] for a, b, _ in self.edges], steps=steps,
                    tensors=[_describe(n) for n in viewer.nodes], formulas=viewer.formulas, notes=notes,
                    modules=sorted({m for s in viewer.steps if s.module for m in _prefixes(s.module)}))


def _merge(nodes, key, ids):
    """The node that stands for a group of nodes (a module, or a run of steps outside modules)."""
    ops = [i for i in ids if nodes[i]['kind'] == 'op']
    firsts = [nodes[i]['first'] for i in ops if nodes[i]['first'] is not None]
    done = [nodes[i]['done'] for i in ids if nodes[i]['done'] is not None]
    grads = [nodes[i]['g'] for i in ops if nodes[i]['g'] is not None]
    if key[0] == '#':
        name = f"ops #{min(firsts)}-#{max(firsts)}" if firsts else 'leaves'
        module = cluster = None
    else:
        module = key[1]
        name = module or '(model)'
        cluster = module.rpartition('.')[0] or None
    counts = f"{len(ops)} ops, {len(ids) - len(ops)} leaves"
    label = f"{name}\n{counts}"
    return dict(kind='group', label=label, short=label, module=module, cluster=cluster, residual=False,
                tip=f"{name}: {counts}", done=max(done, default=None), first=min(firsts, default=None),
                g=max(grads, default=None))


# ---------------------------------------------------------------------- nodes and labels
def _node(t, names, consumer):
    name = names.get(id(t)) or t.name
    shape = tuple(t.shape)
    if t.creator is not None:
        op = t.creator
        op_name = type(op).__name__
        return Node('op', op_name, name, shape, module_of(op), _residual_label(op) if op_name == RESIDUAL_OP else '')
    module = name.rpartition('.')[0] if id(t) in names else module_of(consumer)  # a parameter: its module's
    value = f"{t.item():.4g}" if name is None and t.size == 1 and not t.requires_grad else None
    return Node('param' if t.requires_grad else 'const', value, name, shape, module or None, '')


def _residual_label(op):
    """'layers.3.ffn residual': named after the sub-layer F whose output it adds.

    F's output was made in a module inside the residual's own ('layers.3.ffn.W_2' inside
    'layers.3'): the sub-layer is that module's first level below the residual's.
    """
    own, fx = module_of(op), op.inputs[1]
    sub = module_of(fx.creator) if fx.creator is not None else None
    if sub and own is not None and (own == '' or sub.startswith(own + '.')):
        sub = '.'.join(sub.split('.')[:own.count('.') + 2 if own else 1])
    return f"{sub or own or ''} residual".strip()


def _label(n, short):
    """The text in a node's box; short: names relative to the module box the node is drawn in."""
    name = n.name
    if short and name and n.module and name.startswith(n.module + '.'):
        name = name[len(n.module) + 1:]
    if n.kind == 'op':
        lines = [n.title, n.residual, name]
    else:
        lines = [n.title or name]
    return '\n'.join([line for line in lines if line] + [str(n.shape)] * (n.kind == 'op' or not n.title))


def _describe(n):
    """An input or output as the side panel names it: 'ffn.W_1.weight (8, 16)', 'MatMul output (2, 4, 16)'."""
    if n.kind == 'op':
        return f"{n.name or n.title + ' output'} {n.shape}"
    if n.title:
        return f"constant {n.title}"
    return f"{n.name or ('leaf' if n.kind == 'param' else 'constant')} {n.shape}"


def _group_key(module, depth):
    if module is None or depth == 0:
        return None
    return ('m', '.'.join(module.split('.')[:depth]) if module else '')


def _prefixes(module):
    parts = module.split('.')
    return ['.'.join(parts[:k]) for k in range(1, len(parts) + 1)]


# ---------------------------------------------------------------------- values
def _values(t):
    """The first VALUE_ROWS x VALUE_COLS values of a gradient (rows = all axes but the last) and its shape.

    The page labels the rows and notes what is left out.
    """
    if t is None:
        return None
    data = t.data
    cols = data.shape[-1] if data.ndim else 1
    block = data.reshape(-1, cols)[:VALUE_ROWS, :VALUE_COLS] if cols else data.reshape(0, 0)
    rows = backend.to_numpy(block).astype('float64').tolist()
    return dict(shape=list(data.shape), rows=[[_round(v) for v in row] for row in rows])


def _round(v, digits=4):
    """v to `digits` significant digits (None stays None): short numbers make a small page."""
    return v if v is None or not math.isfinite(v) or v == 0 else float(f"{v:.{digits}g}")


# ---------------------------------------------------------------------- layout
def _layout(graph, layout):
    """(svg, note): dot's layout when asked for or available, else the layered one."""
    if layout in ('auto', 'dot'):
        try:
            return _dot_svg(graph), None
        except _NoDot as missing:
            if layout == 'dot':
                raise RuntimeError(f"BackpropViewer(layout='dot'): {missing}") from None
            note = f"Laid out without Graphviz ({missing}); with it the layout is tidier."
            return _layered_svg(graph), note
    return _layered_svg(graph), None


class _NoDot(Exception):
    pass


NODE_STYLE = {  # graphviz attributes per kind of node
    'op': {'shape': 'box', 'style': 'filled', 'fillcolor': '#ffffff'},
    'param': {'shape': 'ellipse', 'style': 'filled', 'fillcolor': '#fff2cc'},
    'const': {'shape': 'ellipse', 'style': 'dashed', 'color': 'grey50', 'fontcolor': 'grey30'},
    'group': {'shape': 'box', 'style': 'rounded,filled', 'fillcolor': '#ffffff'},
}


def _dot_svg(graph):
    from .graph import INSTALL_DOT, _add_clusters
    try:
        import graphviz
    except ImportError:
        raise _NoDot("the graphviz Python package is not installed: pip install graphviz") from None
    dot = graphviz.Digraph(name='backprop', graph_attr={'rankdir': 'BT', 'nodesep': '0.15', 'ranksep': '0.3',
                                                        'fontname': 'Helvetica', 'fontsize': '10'},
                           node_attr={'fontname': 'Helvetica', 'fontsize': '10', 'height': '0.3'},
                           edge_attr={'arrowsize': '0.6', 'fontname': 'Helvetica', 'fontsize': '9'})
    members = []
    for i, n in enumerate(graph.nodes):
        attrs = dict(NODE_STYLE[n['kind']], id=f'n{i}')
        if n['residual']:
            attrs.update(color='#2ca02c', penwidth='2')
        members.append((f'n{i}', n['short'], attrs, n.get('cluster', n['module'])))
    _add_clusters(graphviz, dot, members)
    for j, (a, b, road) in enumerate(graph.edges):
        dot.edge(f'n{a}', f'n{b}', id=f'e{j}', **({'label': road, 'fontcolor': '#2ca02c'} if road else {}))
    try:
        svg = dot.pipe(format='svg').decode('utf-8')
    except graphviz.ExecutableNotFound:
        raise _NoDot(f"Graphviz's `dot` program was not found; {INSTALL_DOT}") from None
    svg = svg[svg.index('<svg'):]
    svg = re.sub(r'<!--.*?-->\n?', '', svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', '', svg)              # inline SVG in HTML needs no namespaces
    svg = re.sub(r'<title>[^<]*</title>\n?', '', svg)              # the page sets its own tooltips
    svg = svg.replace(' font-family="Helvetica,sans-Serif"', '')   # the page's CSS sets the font
    svg = svg.replace(' font-size="10.00"', '')                   # and its size
    return svg


def _layered_svg(graph):
    """A simple layered layout (inputs at the bottom, the loss at the top), drawn as SVG.

    Rank = the longest path from the graph's leaves; a leaf sits one rank below its first
    consumer; within a rank, nodes are ordered by module, then by the mean position of
    their neighbours (a few sweeps up and down), to keep edges short.
    """
    nodes, edges = graph.nodes, graph.edges
    preds, succs = [[] for _ in nodes], [[] for _ in nodes]
    for a, b, _ in edges:
        preds[b].append(a)
        succs[a].append(b)
    order = _topological(nodes, preds, succs)
    rank = [0] * len(nodes)
    for v in order:
        rank[v] = 1 + max((rank[p] for p in preds[v]), default=-1)
    for v in reversed(order):  # leaves up to just below their lowest consumer
        if not preds[v] and succs[v]:
            rank[v] = min(rank[s] for s in succs[v]) - 1
    lowest = min(rank, default=0)
    rank = [r - lowest for r in rank]
    rows = [[] for _ in range(max(rank, default=-1) + 1)]
    for v in sorted(range(len(nodes)), key=lambda v: (nodes[v]['module'] or '', nodes[v]['first'] or 0)):
        rows[rank[v]].append(v)
    position = {}

    def place():
        for row in rows:
            for x, v in enumerate(row):
                position[v] = x - len(row) / 2

    place()
    for sweep in range(4):
        for row in (rows if sweep % 2 == 0 else reversed(rows)):
            def center(v):
                near = preds[v] + succs[v]
                return sum(position[u] for u in near) / len(near) if near else position[v]
            centers = {v: center(v) for v in row}
            by_module = {}
            for v in row:
                by_module.setdefault(nodes[v]['module'], []).append(centers[v])
            row.sort(key=lambda v: (sum(by_module[nodes[v]['module']]) / len(by_module[nodes[v]['module']]),
                                    centers[v]))
            for x, v in enumerate(row):
                position[v] = x - len(row) / 2

    sizes = [_box_size(n['label']) for n in nodes]
    gap, row_height = 12, max((h for _, h in sizes), default=30) + 34
    widths = [sum(sizes[v][0] for v in row) + gap * max(0, len(row) - 1) for row in rows]
    width = max(widths, default=100) + 2 * gap
    height = len(rows) * row_height + gap
    xy = {}
    for r, row in enumerate(rows):
        x = (width - widths[r]) / 2
        y = height - (r + 0.5) * row_height
        for v in row:
            xy[v] = (x + sizes[v][0] / 2, y)
            x += sizes[v][0] + gap
    out = [f'<svg width="{width:.0f}pt" height="{height:.0f}pt" viewBox="0 0 {width:.0f} {height:.0f}">',
           '<g id="graph0" class="graph">']
    for j, (a, b, road) in enumerate(edges):
        (x1, y1), (x2, y2) = xy[a], xy[b]
        y1 -= sizes[a][1] / 2
        y2 += sizes[b][1] / 2 + 5
        mid = (y1 + y2) / 2
        label = (f'<text text-anchor="middle" x="{(x1 + x2) / 2:.1f}" y="{mid:.1f}" fill="#2ca02c">'
                 f'{html_lib.escape(road)}</text>') if road else ''
        out.append(f'<g id="e{j}" class="edge"><path fill="none" stroke="black" d="M{x1:.1f},{y1:.1f} '
                   f'C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"/>'
                   f'<polygon fill="black" stroke="black" points="{x2 - 3.5:.1f},{y2:.1f} {x2:.1f},{y2 - 5:.1f} '
                   f'{x2 + 3.5:.1f},{y2:.1f}"/>{label}</g>')
    for v, n in enumerate(nodes):
        (x, y), (w, h) = xy[v], sizes[v]
        style = NODE_STYLE[n['kind']]
        stroke = '#2ca02c' if n['residual'] else ('grey' if n['kind'] == 'const' else 'black')
        extra = ' stroke-dasharray="4,2"' if n['kind'] == 'const' else ''
        extra += ' stroke-width="2"' if n['residual'] else ''
        if style['shape'] == 'ellipse':
            shape = f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{w / 2:.1f}" ry="{h / 2:.1f}"'
        else:
            radius = 6 if n['kind'] == 'group' else 0
            shape = f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{radius}"'
        fill = style.get('fillcolor', 'none')
        lines = n['label'].splitlines()
        texts = ''.join(f'<text text-anchor="middle" x="{x:.1f}" y="{y + 13 * (k - (len(lines) - 1) / 2) + 3.5:.1f}">'
                        f'{html_lib.escape(line)}</text>' for k, line in enumerate(lines))
        out.append(f'<g id="n{v}" class="node">{shape} fill="{fill}" stroke="{stroke}"{extra}/>{texts}</g>')
    out.append('</g></svg>')
    return '\n'.join(out)


def _box_size(label):
    lines = label.splitlines()
    return max(len(line) for line in lines) * 6 + 16, 13 * len(lines) + 10


def _topological(nodes, preds, succs):
    """Kahn's algorithm over the forward edges (input -> op)."""
    missing = [len(p) for p in preds]
    ready = [v for v in range(len(nodes)) if not missing[v]]
    order = []
    while ready:
        v = ready.pop()
        order.append(v)
        for s in succs[v]:
            missing[s] -= 1
            if not missing[s]:
                ready.append(s)
    return order


# ---------------------------------------------------------------------- the page, within max_bytes
def _fit(viewer, data, svg, notes):
    """Fill the template; leave out values (from the last step back), then steps, to stay under max_bytes."""
    with open(TEMPLATE, encoding='utf-8') as f:
        template = f.read()
    replacements = {'TITLE': _no_scheme(html_lib.escape(viewer.title)), 'SVG': _no_scheme(svg)}
    steps, values = data['steps'], [[v_in, list(v_sent)] for v_in, v_sent in viewer.values]

    def page(n_steps, n_values):
        data['steps'], data['values'] = steps[:n_steps], values[:n_values]
        data['notes'] = notes + [f"Values are shown for the first {n_values} of {len(values)} steps, and "
                                 f"only the first {n_steps} of {len(steps)} steps are shown, to stay under "
                                 f"max_bytes={viewer.max_bytes}." if n_steps < len(steps) else
                                 f"Values are shown for the first {n_values} of {len(values)} steps, to stay "
                                 f"under max_bytes={viewer.max_bytes}."] * (n_values < len(values))
        replacements['DATA'] = _js(data)
        text = re.sub(r'__(TITLE|SVG|DATA)__', lambda m: replacements[m.group(1)], template)
        return text, len(text.encode()) - viewer.max_bytes

    text, over = page(len(steps), len(values))
    if over <= 0:
        return text
    text, over = page(len(steps), 0)
    n_steps, n_values = len(steps), 0
    if over > 0:  # even without values the steps do not fit: keep the first ones
        n_steps = max(1, int(len(steps) * (1 - over / len(_js(steps).encode()))))
    else:  # the values that fit, from the first step on
        sizes = list(itertools.accumulate(len(_js(v).encode()) + 1 for v in values))
        n_values = bisect.bisect_right(sizes, -over - 300)  # 300: room for the note
    text, over = page(n_steps, n_values)
    while over > 0 and n_steps > 1:  # the estimates were a little short
        n_values, n_steps = (n_values * 19 // 20, n_steps) if n_values else (0, n_steps * 19 // 20)
        text, over = page(n_steps, n_values)
    return text


def _no_scheme(text):
    """No 'http://' even in a name: the page must not look like it fetches anything."""
    return text.replace('://', ':&#47;&#47;')


def _js(value):
    """A JavaScript literal safe inside <script> (NaN and Infinity allowed; no '</', no '://')."""
    text = json.dumps(value, ensure_ascii=False, separators=(',', ':'))
    return text.replace('</', '<\\/').replace('<!--', '<\\!--').replace('://', ':\\/\\/')
