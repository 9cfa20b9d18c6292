"""mt.draw_graph: the graphviz source of a known expression, clusters, rendering with and without `dot`."""
import re
import shutil
import sys

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn

NODE = re.compile(r'^\t+(\w+) \[label=(?:"([^"]*)"|(\S+?))[ \]]', re.M)  # (nodes in clusters are indented more)
EDGE = re.compile(r'^\t+(\w+) -> (\w+)', re.M)


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


def test_unnamed_leaves_say_what_they_are():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    mt.manual_seed(0)
    y = (mt.randn(2, 3, requires_grad=True) * mt.randn(2, 3)).sum()
    labels, _ = parse(mt.draw_graph(y).source)
    assert sorted(lines[:2] for lines in labels.values() if lines[0] not in ('Mul', 'Sum')) == \
        [['constant', '(2, 3)'], ['leaf', '(2, 3)']]


def test_every_node_shows_the_gradient_arriving_at_it():
    """Ops: |dL/d(output)|, as the backward loop hands it to the op; leaves: |dL/d(leaf)|."""
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    x, W, y = expression()
    labels, _ = parse(mt.draw_graph(y).source)
    by_name = {lines[0]: lines for lines in labels.values()}
    expected = {step.op_name: np.linalg.norm(step.grad_output.numpy()) for step in mt.backward_steps(y)}
    assert expected.keys() == {'Sum', 'Tanh', 'MatMul'}
    for op, size in expected.items():
        assert by_name[op][-1] == f"|grad| {size:.3g}"
    assert by_name['W'][-1] == f"|grad| {np.linalg.norm(W.grad.numpy()):.3g}"  # backward_steps filled it
    assert not any(line.startswith('|grad|') for line in by_name['x'])  # x has no gradient


def test_drawing_changes_no_grad_and_keeps_the_graph():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    x, W, y = expression()
    mt.draw_graph(y)
    assert W.grad is None
    y.backward()  # the graph is still there
    assert W.grad is not None
    labels, _ = parse(mt.draw_graph((x @ W).sum(), grads=False).source)
    assert not any(line.startswith('|grad|') for lines in labels.values() for line in lines)


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


def clusters_of(source, node_label):
    """The innermost cluster around each node whose label's first line is `node_label`."""
    stack, found = [], []
    for line in source.splitlines():
        start = re.match(r'\s*subgraph "?(cluster_[^"\s]+)"? \{', line)
        if start:
            stack.append(start[1])
        elif line.strip() == '}' and stack:
            stack.pop()
        elif re.match(rf'\s*\w+ \[label="?{re.escape(node_label)}("|$)', line):
            found.append(stack[-1] if stack else None)
    assert found, f"no node labelled {node_label!r}"
    return found


def test_modules_are_nested_clusters():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    model = Model()
    with mt.record_modules(model):
        out = model(mt.randn(2, 3)).sum()
    source = mt.draw_graph(out, params=model).source
    assert sorted(clusters_of(source, 'weight')) == ['cluster_block.inner', 'cluster_head']  # named in their cluster
    assert clusters_of(source, 'Tanh') == ['cluster_block']
    assert sorted(clusters_of(source, 'bias')) == ['cluster_block.inner', 'cluster_head']
    assert clusters_of(source, 'Sum') == [None]  # made outside the model
    assert re.search(r'subgraph cluster_block \{[^}]*subgraph "cluster_block\.inner" \{', source)


def tiny_gpt():
    from transformer import GPT
    model = GPT(vocab_size=7, d_model=4, n_layers=2, n_heads=2, max_len=4)
    with mt.record_modules(model):
        loss = mt.cross_entropy(model(mt.tensor([[1, 2, 3]]))[0], mt.tensor([2, 3, 4]))
    return model, loss


def test_residual_adds_sit_in_their_layer_with_the_plus_one_edge_highlighted():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    model, loss = tiny_gpt()
    source = mt.draw_graph(loss, params=model).source
    labels, _ = parse(source)
    residual = {node: lines for node, lines in labels.items() if lines[0] == 'ResidualAdd'}
    assert sorted(lines[1] for lines in residual.values()) == ['ffn residual', 'ffn residual',
                                                                'self_attn residual', 'self_attn residual']
    assert sorted(clusters_of(source, 'ResidualAdd')) == ['cluster_decoder.layers.0'] * 2 + ['cluster_decoder.layers.1'] * 2
    highways = re.findall(r'^\t+(\w+) -> (\w+) \[([^\]]*)\]', source, re.M)
    plus_one = [(a, b) for a, b, attrs in highways if 'label="+1"' in attrs and 'penwidth=3' in attrs]
    assert sorted(b for _, b in plus_one) == sorted(residual)  # one "+1" edge into each ResidualAdd
    # the highway runs from one residual addition to the next: self_attn -> ffn inside a layer, and
    # layer 0's ffn -> layer 1's self_attn
    chained = [(labels[a][1], labels[b][1]) for a, b in plus_one if a in residual]
    assert sorted(chained) == [('ffn residual', 'self_attn residual'),
                               ('self_attn residual', 'ffn residual'), ('self_attn residual', 'ffn residual')]


def test_module_filter_and_max_depth_keep_a_deep_model_readable():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    model, loss = tiny_gpt()
    every = parse(mt.draw_graph(loss, params=model).source)[0]
    layer = mt.draw_graph(loss, params=model, module='decoder.layers.1').source
    ops = [lines[0] for lines in parse(layer)[0].values()]
    assert 0 < ops.count('MatMul') < [lines[0] for lines in every.values()].count('MatMul')
    assert set(clusters_of(layer, 'ResidualAdd')) == {'cluster_decoder.layers.1'}
    assert 'from decoder.layers.0.ffn residual' in layer  # its input: a stub for layer 0's output
    assert 'Embedding' not in layer and 'NLLLoss' not in layer
    only = parse(mt.draw_graph(loss, module='decoder.layers.1.ffn residual').source)[0]
    assert sorted(lines[0] for lines in only.values()) == ['Add ...', 'ResidualAdd', 'ResidualAdd ...']  # x, F(x)
    outside = parse(mt.draw_graph(loss, module='(no module)').source)[0]
    assert 'NLLLoss' in [lines[0] for lines in outside.values()]

    x, W, y = expression()
    assert sorted(lines[0] for lines in parse(mt.draw_graph(y, max_depth=1).source)[0].values()) == \
        ['MatMul ...', 'Sum', 'Tanh']  # x and W belong to the cut MatMul: not drawn
    assert len(parse(mt.draw_graph(y, max_depth=0).source)[0]) == 2
    with pytest.raises(ValueError, match=r"no op to draw with module='decoder.layers.9'.*decoder.layers.1"):
        mt.draw_graph(loss, module='decoder.layers.9')


def test_rankdir():
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    _, _, y = expression()
    assert 'rankdir=LR' in mt.draw_graph(y, rankdir='LR').source
    assert 'rankdir=BT' in mt.draw_graph(y).source
    with pytest.raises(ValueError, match='rankdir'):
        mt.draw_graph(y, rankdir='sideways')


def test_returns_a_digraph_that_jupyter_renders_inline():
    graphviz = pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    if shutil.which('dot') is None:
        pytest.skip("Graphviz's `dot` program is not installed (apt-get install graphviz): rendering not tested")
    _, _, y = expression()
    dot = mt.draw_graph(y)
    assert isinstance(dot, graphviz.Digraph)
    assert '<svg' in dot._repr_mimebundle_()['image/svg+xml']  # what Jupyter calls to show it


def test_without_dot_the_returned_graph_warns_how_to_get_it(tmp_path, monkeypatch):
    pytest.importorskip('graphviz', reason='the graphviz Python package is not installed (pip install graphviz)')
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    _, _, y = expression()
    with pytest.warns(UserWarning, match=r'cannot be rendered.*\.source.*apt-get install graphviz.*'
                                         r'brew install graphviz.*conda install -c conda-forge graphviz'):
        dot = mt.draw_graph(y)
    assert 'MatMul' in dot.source


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
