"""Where the boxes of BackpropViewer's graph go, drawn as SVG for its page.

    svg, note = layout.svg(graph, 'auto')   # graph.nodes: dicts (kind, label, short, module,
                                            # residual, first); graph.edges: (from, to, road)

Graphviz's `dot` lays it out when the graphviz package and program are installed
(modules become nested clusters, as in mt.draw_graph); otherwise a simple layered
layout computed here does (inputs at the bottom, the loss at the top), so the page
always works.  Node i is drawn as <g id="n{i}">, edge j as <g id="e{j}">: the page's
script colours them by those ids.
"""
import html as html_lib
import re

from .graph import INSTALL_DOT, LEAF_STYLE, add_clusters


def svg(graph, how, _=str):
    """(svg, note): `how` = 'dot', 'layered', or 'auto': dot when it is installed, else layered
    (the note then says so, in the language of `_`, the page's translator; str: English)."""
    if how in ('auto', 'dot'):
        try:
            return _dot_svg(graph), None
        except _NoDot as missing:
            if how == 'dot':
                raise RuntimeError(f"BackpropViewer(layout='dot'): {missing}") from None
            note = _("Laid out without Graphviz ({missing}); with it the layout is tidier.").format(missing=missing)
            return _layered_svg(graph), note
    return _layered_svg(graph), None


class _NoDot(Exception):
    pass


NODE_STYLE = {  # graphviz attributes per kind of node (the layered layout draws the same)
    'op': {'shape': 'box', 'style': 'filled', 'fillcolor': '#ffffff'},
    **LEAF_STYLE,
    'group': {'shape': 'box', 'style': 'rounded,filled', 'fillcolor': '#ffffff'},
}


def _dot_svg(graph):
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
    add_clusters(graphviz, dot, members)
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
