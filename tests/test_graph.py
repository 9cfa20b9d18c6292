"""mt.draw_graph: the graphviz source of a known expression, clusters, rendering with and without `dot`."""
import re
import shutil
import sys

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn

NODE = re.compile(r'^\t(\w+) \[label=(?:"([^"]*)"|(\S+?))[ \]]', re.M)
EDGE = re.compile(r'^\t(\w+) -> (\w+)', re.M)


def parse(source):
    """{node id: label lines} and the edges as (label, label) pairs, read from the DOT text."""
    labels = {m[1]: (m[2] if m[2] is not None else m[3]).split('\n') for m in NODE.finditer(source)}
    edges = [(labels[a][0], labels[b][0]) for a, b in EDGE.findall(source)]
    return labels, edges


def expression():
    x = mt.tensor([[1.0, 2.0]], name='x')
    W = mt.tensor([[0.5, -1.0, 2.0], [0.0, 1.0, -0.5]], requires_grad=True, name='W')
    return x, W, (x @ W).tanh().sum()


def test_known_expression_has_exactly_its_nodes_and_edges():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    x, W, y = expression()
    labels, edges = parse(mt.draw_graph(y).source)
    assert sorted(lines[0] for lines in labels.values()) == ['MatMul', 'Sum', 'Tanh', 'W', 'x']
    assert sorted(edges) == [('MatMul', 'Tanh'), ('Tanh', 'Sum'), ('W', 'MatMul'), ('x', 'MatMul')]
    shapes = {lines[0]: lines[1] for lines in labels.values()}
    assert shapes == {'x': '(1, 2)', 'W': '(2, 3)', 'MatMul': '(1, 3)', 'Tanh': '(1, 3)', 'Sum': '()'}


def test_gradient_norms_appear_after_backward():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    x, W, y = expression()
    y.backward(retain_graph=True)
    labels, _ = parse(mt.draw_graph(y).source)
    by_name = {lines[0]: lines for lines in labels.values()}
    assert by_name['W'][-1] == f"|grad| {np.linalg.norm(W.grad.numpy()):.3g}"
    assert not any(line.startswith('|grad|') for line in by_name['x'])  # x has no gradient


def test_freed_graph_is_a_clear_error():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    _, _, y = expression()
    y.backward()
    with pytest.raises(RuntimeError, match='retain_graph=True'):
        mt.draw_graph(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)

    def forward(self, x):
        return self.inner(x).tanh()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(3, 1)

    def forward(self, x):
        return self.head(self.block(x))


def cluster_of(source, node_label):
    """The innermost cluster name around the node labelled `node_label`, by reading the nesting."""
    stack = []
    for line in source.splitlines():
        start = re.match(r'\s*subgraph "?(cluster_[^"\s]+)"? \{', line)
        if start:
            stack.append(start[1])
        elif line.strip() == '}' and stack:
            stack.pop()
        elif re.match(rf'\s*\w+ \[label="?{re.escape(node_label)}\b', line):
            return stack[-1] if stack else None
    raise AssertionError(f"no node labelled {node_label!r}")


def test_modules_are_nested_clusters():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    model = Model()
    with mt.record_modules(model):
        out = model(mt.randn(2, 3)).sum()
    source = mt.draw_graph(out, params=model).source
    assert cluster_of(source, 'block.inner.weight') == 'cluster_block.inner'
    assert cluster_of(source, 'Tanh') == 'cluster_block'
    assert cluster_of(source, 'head.bias') == 'cluster_head'
    assert cluster_of(source, 'Sum') is None  # made outside the model
    assert re.search(r'subgraph cluster_block \{[^}]*subgraph "cluster_block\.inner" \{', source)


def test_renders_an_svg_when_dot_is_installed(tmp_path):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    if shutil.which('dot') is None:
        pytest.skip("Graphviz's `dot` program is not installed (apt-get install graphviz): rendering not tested")
    _, _, y = expression()
    path = tmp_path / 'graph.svg'
    mt.draw_graph(y, path=path)
    assert '<svg' in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ['graph.svg']  # no temporary left behind


def test_without_dot_saves_the_source_and_says_how_to_render(tmp_path, monkeypatch):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))  # no `dot` anywhere on PATH
    _, _, y = expression()
    path = tmp_path / 'graph.png'
    with pytest.warns(UserWarning, match=r'apt-get install graphviz.*dot -Tpng .*graph\.gv -o .*graph\.png'):
        mt.draw_graph(y, path=path)
    assert not path.exists()
    assert (tmp_path / 'graph.gv').read_text().startswith('digraph')


def test_source_only_and_bad_extensions(tmp_path):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    _, _, y = expression()
    mt.draw_graph(y, path=tmp_path / 'g.gv')
    assert 'MatMul' in (tmp_path / 'g.gv').read_text()
    with pytest.raises(ValueError, match=r'\.svg'):
        mt.draw_graph(y, path=tmp_path / 'g.jpeg2000')


def test_missing_graphviz_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'graphviz', None)  # import graphviz now fails
    _, _, y = expression()
    with pytest.raises(ImportError, match='pip install graphviz'):
        mt.draw_graph(y)
