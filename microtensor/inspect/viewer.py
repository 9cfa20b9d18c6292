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
vanishing path fades at a glance.  It opens at the loss (step 0): the whole graph when its
labels stay legible, else zoomed to legible labels there, with the whole graph in an overview
in a corner; the ops before the first recorded module's are named as the loss's.

Recorded with mt.backward_steps (the engine's own loop), so the steps are exactly
loss.backward()'s.  Laid out by Graphviz's `dot` when the graphviz package and
program are installed, else by a simple layered layout (layout.py): the page
always works.  Everything is inline (no network): it opens from disk.

Colours: each page spans the gradient norms it shows (.norm_range), on a log scale;
scale=(lo, hi) fixes the span instead, so that pages side by side share one scale:

    a, b = mt.BackpropViewer(loss_a), mt.BackpropViewer(loss_b)
    a.scale = b.scale = mt.inspect.shared_scale(a, b)   # before .save(): equal colours, equal norms

Language: lang='zh' writes the page in Chinese (its labels, buttons, tooltips, help and notes;
numbers and op names stay as they are); by default, the language the lessons speak
(microtensor.i18n: --lang, MICROTENSOR_LANG, the locale).

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

from .. import argcheck, backend, i18n
from ..atomic_write import write_atomically
from ..tensor import Tensor
from . import layout
from .graph import constant_value, no_graph
from .modules import leaf_module, module_of, scope_of
from .steps import backward_steps, norm
from .trace import tensor_names

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'viewer.html')
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
    residual: str      # for a residual connection: 'layers.1.ffn residual' (the sub-layer F it adds); else ''


class BackpropViewer:
    """Record tensor's backward pass (as tensor.backward(grad, retain_graph)) for the HTML viewer.

    params: a Module, or a dict {name: tensor}, naming the parameters (else tensor.name).
    layout: 'auto' (dot when installed, else layered), 'dot' or 'layered'.
    scale: (lo, hi), the gradient norms at the two ends of the colour scale (log); None: the
    page's own .norm_range.  May also be set later, before .html() or .save().
    max_nodes: above this many nodes, one node per module; max_bytes: the page's size limit
    (values, then steps, are left out beyond it; the drawing itself is bounded by max_nodes).
    lang: the page's language, 'en' or 'zh' (None: the current one, microtensor.i18n.current()).

    What was recorded: .steps (a StepRecord per op, in backward order), .nodes (a Node per
    op and leaf), .edges ((input node, op node, road) per input of each step), .grad_norms
    (|dL/d(tensor)| per node), .values (the first rows and columns of each step's gradients).
    """

    def __init__(self, tensor, grad=None, params=None, retain_graph=False, title=None, layout='auto',
                 max_nodes=2000, max_bytes=4_000_000, scale=None, lang=None):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"BackpropViewer: tensor must be a Tensor (the loss whose backward pass to show), "
                            f"not {argcheck.describe(tensor)}")
        if tensor.creator is None:  # refused before the pass, which would fill the leaf's .grad
            raise no_graph('BackpropViewer', tensor)
        if layout not in ('auto', 'dot', 'layered'):
            raise ValueError(f"BackpropViewer: layout must be 'auto', 'dot' or 'layered', not {layout!r}")
        if lang is not None and lang not in i18n.LANGUAGES:
            raise ValueError(f"BackpropViewer: lang must be one of {', '.join(i18n.LANGUAGES)} (or None: the "
                             f"current language), not {lang!r}")
        self.lang = i18n.current() if lang is None else lang
        self.translate = i18n.translator(self.lang)  # the page's `_`: its own language, whatever the lessons speak
        self.layout = layout
        self.max_nodes = argcheck.integer(max_nodes, 'BackpropViewer', 'max_nodes', min=1)
        self.max_bytes = argcheck.integer(max_bytes, 'BackpropViewer', 'max_bytes', min=1)
        self.scale = scale
        self.nodes, self.edges, self.steps, self.values, self.formulas = [], [], [], [], {}
        self._record(tensor, grad, retain_graph, tensor_names(params))
        _ = self.translate
        self.title = title or _("Backward pass: {n} ops").format(n=len(self.steps))
        self._drawing = None  # (graph, svg, notes): laid out once; the page is rebuilt when the scale changes

    @property
    def scale(self):
        """(lo, hi): the gradient norms at the ends of the colour scale, or None (the page's own range)."""
        return self._scale

    @scale.setter
    def scale(self, scale):
        if scale is not None:
            if isinstance(scale, (str, bytes)) or not hasattr(scale, '__len__') or len(scale) != 2:
                raise TypeError(f"BackpropViewer: scale must be (lo, hi), two gradient norms, or None; not "
                                f"{argcheck.describe(scale)}")
            lo = argcheck.number(scale[0], 'BackpropViewer', 'scale[0] (lo)', min=0, min_open=True)
            hi = argcheck.number(scale[1], 'BackpropViewer', 'scale[1] (hi)', min=lo, min_open=True)
            scale = (lo, hi)
        self._scale, self._html = scale, None

    @property
    def norm_range(self):
        """(smallest, largest) positive finite gradient norm of the steps (None when there is none)."""
        norms = [g for s in self.steps for g in (s.grad_in, *s.sent) if g is not None and 0 < g < math.inf]
        return (min(norms), max(norms)) if norms else None

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
            for src, road, gx in zip(inputs, _roads(step.op, len(inputs)), step.grad_inputs):
                self.edges.append((src, me, road))
                if self.nodes[src].kind != 'op' and gx is not None:
                    done_at[src] = step.index  # a leaf's .grad is complete after its last consumer
                    sums[src] = gx if src not in sums else sums[src] + gx
            self.steps.append(StepRecord(step.index, step.op_name, module_of(step.op), me,
                                         norm(step.grad_output), sent, inputs))
            self.values.append((_values(step.grad_output), tuple(_values(gx) for gx in step.grad_inputs)))
            if step.op_name not in self.formulas:
                self.formulas[step.op_name] = inspect.cleandoc(type(step.op).__doc__ or '(no docstring)')
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
        data = self.html().encode('utf-8')
        return write_atomically(path, lambda f: f.write(data), who='BackpropViewer.save')

    def _repr_html_(self):
        """Jupyter: the page in an iframe, so its script and styles stay out of the notebook's."""
        return (f'<iframe srcdoc="{html_lib.escape(self.html(), quote=True)}" '
                'style="width:100%;height:720px;border:1px solid #ccc"></iframe>')

    def __repr__(self):
        return f"<BackpropViewer of {len(self.steps)} ops, {len(self.nodes)} nodes>"

    def _build(self):
        if self._drawing is None:
            notes = []
            graph = _Graph.of(self)
            if len(self.nodes) > self.max_nodes:
                graph = graph.by_module(self.max_nodes, self.translate)
                notes.append(graph.note)
            svg, layout_note = layout.svg(graph, self.layout, self.translate)
            self._drawing = graph, svg, notes + [layout_note] * bool(layout_note)
        graph, svg, notes = self._drawing
        data = graph.data(self, list(notes))
        return _fit(self, data, svg, data['notes'])

    def _log_scale(self):
        """[lo, hi] as powers of ten: the scale given, else the page's own (shared_scale of itself)."""
        return [math.log10(g) for g in (self.scale or shared_scale(self))]


def shared_scale(*viewers):
    """(lo, hi): one colour scale for the pages of `viewers`, spanning all their gradient norms
    (at most 12 powers of ten below the largest, at least one), for BackpropViewer's scale=."""
    ranges = [v.norm_range for v in viewers if v.norm_range is not None]
    if not ranges:
        return (0.1, 1.0)
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    return (min(max(lo, hi * 1e-12), hi / 10), hi)


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
        _ = viewer.translate
        nodes = [dict(kind=n.kind, label=_label(n, False, _), short=_label(n, True, _), module=n.module,
                      residual=bool(n.residual),
                      done=viewer.done_at[i], first=viewer.done_at[i] if n.kind == 'op' else None,
                      g=viewer.grad_norms[i]) for i, n in enumerate(viewer.nodes)]
        edge = iter(range(len(viewer.edges)))
        return cls(nodes, list(viewer.edges), [s.node for s in viewer.steps],
                   [[next(edge) for _ in s.inputs] for s in viewer.steps])

    def by_module(self, max_nodes, _):
        """One node per module, at the finest module depth that leaves at most max_nodes // 2 of them
        (`_`: the page's translator).

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
        merged = [_merge(nodes, key, ids, _) for key, ids in members.items()]
        group_of = [groups[k] for k in keys]
        pairs, edge_map = {}, []
        for a, b, _road in self.edges:
            ga, gb = group_of[a], group_of[b]
            if ga == gb:
                edge_map.append(-1)  # inside one module: not drawn
            else:
                edge_map.append(pairs.setdefault((ga, gb), len(pairs)))
        where = (_("module depth {depth}").format(depth=depth) if depth else
                 _("runs of consecutive steps (modules: see mt.record_modules)"))
        note = _("{n} nodes are too many to draw one by one (max_nodes={max_nodes}): each box is a group "
                 "({where}); the steps still go op by op.").format(n=len(self.nodes), max_nodes=max_nodes, where=where)
        return _Graph(merged, [(a, b, None) for a, b in pairs], [group_of[i] for i in self.node_of_step],
                      [[edge_map[e] for e in row] for row in self.edge_of_sent], note)

    def data(self, viewer, notes):
        """The page's data (values come separately, so they can be left out to fit max_bytes).

        Steps name their tensors by index into `tensors` (each op's output, each leaf); norms
        keep 6 significant digits (the page shows 4).
        """
        steps, roads = [], (road for _, _, road in viewer.edges)  # one edge per input of each step
        for s, node, edges in zip(viewer.steps, self.node_of_step, self.edge_of_sent):
            sent = [dict(e=e, g=_round(g, 6), x=i) for e, g, i in zip(edges, s.sent, s.inputs)]
            for d in sent:
                road = next(roads)
                if road:
                    d['road'] = road
            steps.append(dict(op=s.op, m=s.module, n=node, y=s.node, g=_round(s.grad_in, 6), sent=sent))
        nodes = [{k: _round(v, 6) if k == 'g' else v for k, v in n.items()
                  if k in ('kind', 'module', 'done', 'first', 'g', 'tip')}  # (a tip: groups only)
                 for n in self.nodes]
        return dict(title=viewer.title, scale=viewer._log_scale(), loss_steps=_loss_steps(viewer.steps),
                    nodes=nodes, edges=[[a, b] for a, b, _ in self.edges], steps=steps,
                    tensors=[_describe(n, viewer.translate) for n in viewer.nodes], formulas=viewer.formulas,
                    notes=notes,
                    modules=sorted({m for s in viewer.steps if s.module for m in _prefixes(s.module)}))


def _loss_steps(steps):
    """How many steps the loss takes: those before the first op of a recorded module (the
    backward pass starts at the loss, computed from the model's output outside its modules).
    0 when no module was recorded: then nothing tells the loss from the model."""
    first = next((s.index for s in steps if s.module is not None), None)
    return 0 if first is None else first


def _merge(nodes, key, ids, _):
    """The node that stands for a group of nodes (a module, or a run of steps outside modules)."""
    ops = [i for i in ids if nodes[i]['kind'] == 'op']
    firsts = [nodes[i]['first'] for i in ops if nodes[i]['first'] is not None]
    done = [nodes[i]['done'] for i in ids if nodes[i]['done'] is not None]
    grads = [nodes[i]['g'] for i in ops if nodes[i]['g'] is not None]
    if key[0] == '#':
        name = _("ops #{first}-#{last}").format(first=min(firsts), last=max(firsts)) if firsts else _('leaves')
        module = cluster = None
    else:
        module = key[1]
        name = module or _('(model)')
        cluster = module.rpartition('.')[0] or None
    counts = _("{ops} ops, {leaves} leaves").format(ops=len(ops), leaves=len(ids) - len(ops))
    label = f"{name}\n{counts}"
    return dict(kind='group', label=label, short=label, module=module, cluster=cluster, residual=False,
                tip=f"{name}: {counts}", done=max(done, default=None), first=min(firsts, default=None),
                g=max(grads, default=None))


# ---------------------------------------------------------------------- nodes and labels
def _node(t, names, consumer):
    name = names.get(id(t)) or t.name
    shape = tuple(t.shape)
    op = t.creator
    if op is not None:
        return Node('op', type(op).__name__, name, shape, module_of(op), _residual_label(op))
    return Node('param' if t.requires_grad else 'const', constant_value(t, name), name, shape,
                leaf_module(t, names, consumer), '')


def _residual_label(op):
    """'layers.3.ffn residual' for a residual connection (an op with highway_inputs, labelled by
    transformer/residual.py with its sub-layer: mt.inspect.scope_of); '' for any other op."""
    if not getattr(op, 'highway_inputs', ()):
        return ''
    return scope_of(op) if getattr(op, 'label', None) else 'residual'


def _roads(op, n_inputs):
    """What each input's edge is called: for a residual, '+1' (the highway, x) and 'F' (F(x)); else None."""
    highways = getattr(op, 'highway_inputs', ())
    return tuple(('+1' if i in highways else 'F') if highways else None for i in range(n_inputs))


def _label(n, short, _):
    """The text in a node's box; short: names relative to the module box the node is drawn in."""
    name = n.name
    if short and name and n.module and name.startswith(n.module + '.'):
        name = name[len(n.module) + 1:]
    if n.kind == 'op':
        lines = [n.title, n.residual, name]
    else:  # a leaf: its name, or a scalar constant's value, or what it is
        lines = [n.title or name or (_('leaf') if n.kind == 'param' else _('constant'))]
    return '\n'.join([line for line in lines if line] + [str(n.shape)] * (n.kind == 'op' or not n.title))


def _describe(n, _):
    """An input or output as the side panel names it: 'ffn.W_1.weight (8, 16)', 'MatMul output (2, 4, 16)'."""
    if n.kind == 'op':
        name = n.name or _('{op} output').format(op=n.title)
        return f"{name} {n.shape}"
    if n.title:
        return _("constant {value}").format(value=n.title)
    return f"{n.name or (_('leaf') if n.kind == 'param' else _('constant'))} {n.shape}"


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


# ---------------------------------------------------------------------- the page, within max_bytes
def _fit(viewer, data, svg, notes):
    """Fill the template; leave out values (from the last step back), then steps, to stay under max_bytes."""
    with open(TEMPLATE, encoding='utf-8') as f:
        template = f.read()
    replacements = {'TITLE': _no_scheme(html_lib.escape(viewer.title)), 'SVG': _no_scheme(svg),
                    'LANG': HTML_LANG[viewer.lang], 'TEXT': _js(page_text(viewer.translate))}
    _ = viewer.translate
    steps, values = data['steps'], [[v_in, list(v_sent)] for v_in, v_sent in viewer.values]

    def page(n_steps, n_values):
        data['steps'], data['values'] = steps[:n_steps], values[:n_values]
        left_out = (_("Values are shown for the first {n_values} of {values} steps, and only the first {n_steps} "
                      "of {steps} steps are shown, to stay under max_bytes={max_bytes}.") if n_steps < len(steps) else
                    _("Values are shown for the first {n_values} of {values} steps, to stay under "
                      "max_bytes={max_bytes}."))
        left_out = left_out.format(n_values=n_values, values=len(values), n_steps=n_steps, steps=len(steps),
                                   max_bytes=viewer.max_bytes)
        data['notes'] = notes + [left_out] * (n_values < len(values))
        replacements['DATA'] = _js(data)
        text = re.sub(r'__(TITLE|SVG|DATA|TEXT|LANG)__', lambda m: replacements[m.group(1)], template)
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


HTML_LANG = {'en': 'en', 'zh': 'zh-CN'}  # <html lang>: the browser picks its fonts by it (Simplified Chinese)


def page_text(_):
    """The page's words, {key: text} in the language of `_` (the page's translator): viewer.html
    puts them in its elements (data-text, data-tip); a {field} marks where an element or a number goes."""
    return {
        'first': _('\u00ab first'), 'first_tip': _('first step (Home)'),
        'prev': _('\u25c0 prev'), 'prev_tip': _('previous step (left arrow)'),
        'play': _('\u25b6 play'), 'pause': _('\u23f8 pause'), 'play_tip': _('play / pause (space)'),
        'next': _('next \u25b6'), 'next_tip': _('next step (right arrow)'),
        'last': _('last \u00bb'), 'last_tip': _('last step (End)'),
        'speed': _('speed {slider} {value}/s'), 'speed_tip': _('steps per second while playing'),
        'counter': _('step #{index} (last #{last})'),
        'module_filter': _('module {menu}'), 'all_modules': _('(all)'),
        'zoom_out_tip': _('zoom out'), 'zoom_in_tip': _('zoom in'),
        'fit_width': _('fit width'), 'fit_width_tip': _('fit the width'),
        'fit_page': _('fit page'), 'fit_page_tip': _('fit the whole graph in the window'),
        'overview_tip': _('the whole graph: the frame is the window, red the current op (click or drag to move)'),
        'backward_step': _('backward, step #{index}'),
        'module': _('module'), 'output': _('output'),
        'residual_note': _('A residual connection: the gradient splits. x gets g unchanged (the {highway} road, the '
                           'highway); F(x) gets alpha\u00b7g (the {branch} road, back into the sub-layer).'),
        'gradient': _('gradient'), 'arriving': _('arriving: g = dL/d(output)'),
        'sent_to': _('sent to {road}{tensor}'), 'road': _('{road} road: '),
        'no_gradient': _('none (needs no gradient)'),
        'values_arriving': _('values: g arriving'), 'values_sent': _('values: {sent}'),
        'values_left_out': _('values: not embedded (size limit)'),
        'values_shown': _('showing the first {rows} of {all_rows} rows, {columns} of {all_columns} columns of '
                          'shape {shape}'),
        'legend_title': _('edge colour: |gradient| it carried (log scale)'),
        'not_reached': _('not reached yet'), 'current_op': _('current op'), 'residual': _('residual (+1 / F)'),
        'parameter': _('parameter'), 'dashed': _('dashed: no gradient'),
        'model': _('(model)'), 'loss': _('loss'),
        'loss_module': _("loss (computed from the model's output, outside its modules)"),
        'outside_modules': _('\u2014 (outside the recorded modules; see mt.record_modules)'),
        'kind_op': _('op'), 'kind_param': _('leaf, requires grad'), 'kind_const': _('constant, no gradient'),
        'node_module': _('module: {module}'), 'click_node': _('click: jump to its step'),
    }


def _no_scheme(text):
    """No 'http://' even in a name: the page must not look like it fetches anything."""
    return text.replace('://', ':&#47;&#47;')


def _js(value):
    """A JavaScript literal safe inside <script> (NaN and Infinity allowed; no '</', no '://')."""
    text = json.dumps(value, ensure_ascii=False, separators=(',', ':'))
    return text.replace('</', '<\\/').replace('<!--', '<\\!--').replace('://', ':\\/\\/')
