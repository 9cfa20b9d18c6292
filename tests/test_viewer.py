"""mt.BackpropViewer, the Python side: the recorded steps are backward_steps', the page is
self-contained and stays within its size limits.  (tests/test_viewer_browser.py opens it in Chromium.)"""
import json
import os
import re
import shutil
import sys

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn
from transformer import Encoder

HAS_DOT = shutil.which('dot') is not None


def encoder_loss(n_layers=2, d_model=8, seed=0, dtype='float64'):
    """A Pre-LN encoder stack (residual connections, attention, LayerNorm), modules recorded."""
    mt.manual_seed(seed)
    encoder = Encoder(n_layers, d_model, 2, d_ff=2 * d_model).to(dtype=dtype)
    x = mt.randn(2, 3, d_model, requires_grad=True, name='x', dtype=dtype)
    with mt.record_modules(encoder):
        out = encoder(x)
    return (out * mt.randn(*out.shape, dtype=dtype)).sum(), encoder, x


def page_data(html):
    """The DATA object the page's script reads."""
    return json.loads(re.search(r'const DATA = (.*?);\n</script>', html, re.S).group(1))


@pytest.mark.slow
def test_steps_are_backward_steps_and_grads_are_backward_grads():
    loss, encoder, x = encoder_loss()
    viewer = mt.BackpropViewer(loss, params=encoder)
    viewer_grads = {name: p.grad.numpy().copy() for name, p in encoder.named_parameters()}
    loss, encoder, x = encoder_loss()  # the same graph again (same seed): now through backward_steps
    steps = list(mt.backward_steps(loss))
    assert len(viewer.steps) == len(steps) > 50
    for record, step in zip(viewer.steps, steps):
        assert record.index == step.index and record.op == step.op_name
        assert record.module == mt.inspect.module_of(step.op)
        node = viewer.nodes[record.node]
        assert node.kind == 'op' and node.title == step.op_name and node.shape == tuple(step.output.shape)
        assert [viewer.nodes[i].shape for i in record.inputs] == [tuple(t.shape) for t in step.inputs]
        assert record.grad_in == pytest.approx(mt.inspect.norm(step.grad_output), rel=1e-12)
        assert list(record.sent) == [None if g is None else pytest.approx(mt.inspect.norm(g), rel=1e-12)
                                     for g in step.grad_inputs]
    # running the viewer filled .grad exactly as backward does
    for name, p in encoder.named_parameters():
        np.testing.assert_allclose(viewer_grads[name], p.grad.numpy(), rtol=1e-12, atol=0)


def test_graph_nodes_and_edges_follow_the_steps():
    loss, encoder, x = encoder_loss()
    viewer = mt.BackpropViewer(loss, params=encoder)
    # every op node made exactly one step; each step's inputs are edges into its node
    assert sorted(s.node for s in viewer.steps) == [i for i, n in enumerate(viewer.nodes) if n.kind == 'op']
    assert viewer.edges == [(i, s.node, ('+1', 'F')[k] if s.op == 'ResidualAdd' else None)
                            for s in viewer.steps for k, i in enumerate(s.inputs)]
    residual = [viewer.nodes[s.node] for s in viewer.steps if s.op == 'ResidualAdd']
    assert sorted(n.residual for n in residual) == ['layers.0.ffn residual', 'layers.0.self_attn residual',
                                                    'layers.1.ffn residual', 'layers.1.self_attn residual']
    params = {n.name: n for n in viewer.nodes if n.kind == 'param'}
    assert params['layers.1.ffn.W_1.weight'].module == 'layers.1.ffn.W_1'
    assert viewer.grad_norms[viewer.nodes.index(params['x'])] == pytest.approx(mt.inspect.norm(x.grad), rel=1e-12)
    data = page_data(viewer.html())
    assert data['modules'][:3] == ['final_norm', 'layers', 'layers.0']
    assert [s['g'] for s in data['steps']] == pytest.approx([s.grad_in for s in viewer.steps], rel=1e-5)
    assert [data['tensors'][s['y']] for s in data['steps'][:3]] == ['Sum output ()', 'Mul output (2, 3, 8)',
                                                                   'LayerNormOp output (2, 3, 8)']


def test_a_gated_residual_is_named_by_its_sub_layer_too():
    """The label comes from the op (transformer/residual.py labels it), not from guessing which
    module made F(x): with a gate, F(x) = g * FFN(h) is made by the layer itself."""
    from transformer.layers import EncoderLayer
    mt.manual_seed(0)
    layer = EncoderLayer(8, 2, d_ff=16, gate=True).to(dtype='float64')
    with mt.record_modules(layer):
        loss = layer(mt.randn(2, 3, 8, dtype='float64')).sum()
    viewer = mt.BackpropViewer(loss, params=layer)
    assert sorted(n.residual for n in viewer.nodes if n.residual) == ['ffn residual', 'self_attn residual']


@pytest.mark.parametrize('layout', [pytest.param('dot', marks=pytest.mark.skipif(not HAS_DOT, reason="no `dot`")),
                                    'layered'])
def test_page_is_self_contained(layout, tmp_path):
    loss, encoder, _ = encoder_loss()
    viewer = mt.BackpropViewer(loss, params=encoder, layout=layout, title='a https://example.com title')
    html = viewer.html()
    assert 'http://' not in html and 'https://' not in html
    assert not re.search(r'''\b(src|href)\s*=|@import|url\(''', html)  # nothing fetched from anywhere
    # every node and edge the script colours is in the drawing
    ids = set(re.findall(r'<g id="([ne]\d+)" class="(?:node|edge)"', html))
    assert ids == {f'n{i}' for i in range(len(viewer.nodes))} | {f'e{j}' for j in range(len(viewer.edges))}
    path = viewer.save(tmp_path / 'backprop.html')
    assert open(path, encoding='utf-8').read() == html
    assert viewer._repr_html_().startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;')


def test_values_are_the_gradients_first_rows_and_columns():
    x = mt.tensor([[1.0, -2.0, 0.5]], requires_grad=True, dtype='float64', name='x')
    W = mt.randn(3, 20, requires_grad=True, dtype='float64', name='W')
    viewer = mt.BackpropViewer((x @ W).tanh().sum())
    (sum_g, _), (tanh_g, _), (matmul_g, (x_g, W_g)) = viewer.values
    assert sum_g == {'shape': [], 'rows': [[1.0]]}
    assert tanh_g == {'shape': [1, 20], 'rows': [[1.0] * 6]}  # the first 6 of 20 columns
    assert matmul_g['shape'] == [1, 20] and len(matmul_g['rows']) == 1 and len(matmul_g['rows'][0]) == 6
    assert x_g['shape'] == [1, 3]
    np.testing.assert_allclose(x_g['rows'], x.grad.numpy(), rtol=1e-3)
    np.testing.assert_allclose(W_g['rows'], W.grad.numpy()[:3, :6], rtol=1e-3)
    assert W_g['rows'] != W.grad.numpy()[:3, :6].tolist()  # 4 significant digits: a small page


def test_without_graphviz_the_layered_layout_is_used(monkeypatch):
    monkeypatch.setitem(sys.modules, 'graphviz', None)  # import graphviz now fails
    loss, encoder, _ = encoder_loss()
    viewer = mt.BackpropViewer(loss, params=encoder, retain_graph=True)
    data = page_data(viewer.html())
    assert any('without Graphviz' in note for note in data['notes'])
    with pytest.raises(RuntimeError, match='graphviz'):
        mt.BackpropViewer(loss, layout='dot').html()
    with pytest.raises(ValueError, match="'auto', 'dot' or 'layered'"):
        mt.BackpropViewer(loss, layout='circles')
    with pytest.raises(ValueError, match='nothing to show'):
        mt.BackpropViewer(mt.tensor(1.0, requires_grad=True))


@pytest.mark.slow
def test_thousands_of_ops_are_drawn_by_module_within_max_bytes():
    loss, encoder, _ = encoder_loss(n_layers=90, d_model=4, dtype='float32')
    viewer = mt.BackpropViewer(loss, params=encoder, max_nodes=500, retain_graph=True)
    assert len(viewer.steps) > 2000
    html = viewer.html()
    data = page_data(html)
    assert len(html.encode()) < viewer.max_bytes
    assert len(data['nodes']) <= 500 and len(data['steps']) == len(viewer.steps)
    assert any('too many to draw' in note and 'module depth' in note for note in data['notes'])
    groups = {n['module'] for n in data['nodes']}
    assert 'layers.42.ffn' in groups or 'layers.42' in groups
    # each step shows the group of its module
    step = next(s for s in viewer.steps if s.module == 'layers.42.ffn.W_1')
    assert data['nodes'][data['steps'][step.index]['n']]['module'] in ('layers.42.ffn', 'layers.42')



def test_values_then_steps_are_left_out_beyond_max_bytes():
    loss, encoder, _ = encoder_loss()
    full = mt.BackpropViewer(loss, params=encoder, retain_graph=True).html()
    viewer = mt.BackpropViewer(loss, params=encoder, max_bytes=len(full.encode()) - 20_000)
    data = page_data(viewer.html())
    assert len(viewer.html().encode()) <= viewer.max_bytes
    assert 0 < len(data['values']) < len(data['steps']) == len(viewer.steps)
    assert data['notes'][-1:] == [f"Values are shown for the first {len(data['values'])} of {len(viewer.steps)} "
                                  f"steps, to stay under max_bytes={viewer.max_bytes}."]  # (after a layout note)


@pytest.mark.slow
def test_a_long_chain_without_modules_is_drawn_in_runs_of_steps():
    mt.manual_seed(0)
    x = mt.randn(3, requires_grad=True)
    y = x
    for _ in range(1000):
        y = (y * 0.999).tanh()
    viewer = mt.BackpropViewer(y.sum(), max_nodes=200, max_bytes=300_000)
    html = viewer.html()
    data = page_data(html)
    assert len(viewer.steps) == 2001 and len(html.encode()) <= 300_000
    assert 1 < len(data['steps']) < 2001 and data['values'] == []
    assert f"only the first {len(data['steps'])} of 2001 steps are shown" in data['notes'][-1]
    assert len(data['nodes']) <= 200
    assert any('runs of consecutive steps' in note for note in data['notes'])
    assert data['nodes'][data['steps'][0]['n']]['tip'].startswith('ops #0-#')


def test_mlp_in_a_sequential_gets_module_names_and_a_title():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    with mt.record_modules(model):
        loss = model(mt.randn(5, 3)).mean()
    viewer = mt.BackpropViewer(loss, params=model, title='MLP')
    assert [s.module for s in viewer.steps] == [None, None, '2', '2', '1', '0', '0']  # Linear: Add, MatMul
    assert viewer.title == 'MLP' and '<title>MLP</title>' in viewer.html()
    assert repr(viewer) == f'<BackpropViewer of 7 ops, {len(viewer.nodes)} nodes>'


def test_lessons_write_their_viewers_with_html(tmp_path, monkeypatch, capsys):
    """What `--html` adds to residual_highway, softmax_saturation and article_trace (their plots left out)."""
    from demos import article_trace, report, residual_highway, softmax_saturation
    monkeypatch.chdir(tmp_path)
    for lesson in (article_trace, residual_highway, softmax_saturation):
        with pytest.raises(SystemExit):  # --help lists --html
            lesson.main(['--help'])
        assert '--html' in capsys.readouterr().out
    grads, _, _ = residual_highway.layer_gradients('pre', True, n_layers=2, d_model=8, B=2, n=3, html='residual')
    assert grads == residual_highway.layer_gradients('pre', True, n_layers=2, d_model=8, B=2, n=3)[0]
    numbers = softmax_saturation.saturation(64, False, B=2, n=4, html='unscaled')
    assert numbers == softmax_saturation.saturation(64, False, B=2, n=4)
    article_trace.save_backward_viewer()
    out = capsys.readouterr().out
    pages = {name: (tmp_path / 'runs' / f'{name}.html').read_text(encoding='utf-8')
             for name in ('residual', 'unscaled', 'article_trace')}
    for name, html in pages.items():
        assert f"viewer saved to runs/{name}.html" in out
        assert os.path.join('runs', f'{name}.html') in dict(report.WRITTEN)  # the tour lists it
        assert 'https://' not in html and 'http://' not in html
    data = page_data(pages['residual'])
    assert sum(any(x.get('road') for x in s['sent']) for s in data['steps']) == 4  # 2 layers x 2 residuals
    data = page_data(pages['unscaled'])
    softmax = next(s for s in data['steps'] if s['op'] == 'Softmax')
    assert data['tensors'][softmax['y']] == 'p (weights) (2, 4, 4)'
    assert [data['tensors'][x['x']] for x in softmax['sent']] == ['s (scores) (2, 4, 4)']
    data = page_data(pages['article_trace'])
    assert 'encoder.layers.1.ffn' in data['modules'] and data['steps'][-1]['m'] == 'embed'


# ---------------------------------------------------------------------- colour scale, names, bad arguments
def test_the_colour_scale_is_the_pages_norms_or_the_scale_given():
    loss, encoder, _ = encoder_loss()
    viewer = mt.BackpropViewer(loss, params=encoder, retain_graph=True)
    norms = [g for s in viewer.steps for g in (s.grad_in, *s.sent) if g]
    assert viewer.norm_range == (min(norms), max(norms))
    low, high = page_data(viewer.html())['scale']  # at most 12 powers of ten: below, all one colour
    assert high == pytest.approx(np.log10(max(norms))) and low == pytest.approx(max(np.log10(min(norms)), high - 12))
    viewer.scale = (1e-9, 1e3)  # set after recording: the page is rebuilt with it
    assert page_data(viewer.html())['scale'] == pytest.approx([-9, 3])
    other = mt.BackpropViewer(loss * 1e4, params=encoder, scale=(1e-9, 1e3))
    assert page_data(other.html())['scale'] == pytest.approx([-9, 3])
    lo, hi = mt.inspect.shared_scale(viewer, other)
    assert hi == pytest.approx(max(other.norm_range)) and lo == pytest.approx(max(min(norms), hi * 1e-12))
    assert np.log10(mt.inspect.shared_scale(viewer)) == pytest.approx([low, high])
    tiny = mt.BackpropViewer((mt.randn(3, requires_grad=True) * 1).sum())  # every norm alike: one decade
    assert mt.inspect.shared_scale(tiny) == pytest.approx((tiny.norm_range[1] / 10, tiny.norm_range[1]))
    for bad, error in [((1.0,), TypeError), ('1e-3, 1', TypeError), ((0, 1), ValueError), ((2, 1), ValueError),
                       ((1e-3, float('inf')), ValueError), (('a', 1), TypeError)]:
        with pytest.raises(error, match=r'BackpropViewer: scale'):
            mt.BackpropViewer(loss, params=encoder, scale=bad)


@pytest.mark.slow
def test_lesson_pages_share_one_colour_scale(tmp_path, monkeypatch, capsys):
    from demos import report, residual_highway
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(report, 'PAGES', {})
    for residual in (True, False):
        residual_highway.layer_gradients('pre', residual, n_layers=6, d_model=8, B=2, n=3,
                                         html=f"page_{residual}")
    scales = [page_data((tmp_path / 'runs' / f'page_{r}.html').read_text(encoding='utf-8'))['scale']
              for r in (True, False)]
    assert scales[0] == scales[1]
    pages = report.PAGES['residual_highway']
    own = [np.log10(v.norm_range) for v in pages.values()]
    assert scales[0] == pytest.approx([min(o[0] for o in own), max(o[1] for o in own)])
    assert own[0].tolist() != own[1].tolist()  # each page alone would have picked another


def test_the_loss_ops_and_unnamed_constants_are_labelled():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    with mt.record_modules(model):
        out = model(mt.randn(5, 3))
    loss = (out * mt.randn(5, 1)).sum()
    viewer = mt.BackpropViewer(loss, params=model)
    data = page_data(viewer.html())
    assert [s.module for s in viewer.steps[:3]] == [None, None, '2'] and data['loss_steps'] == 2
    svg = viewer.html()
    assert re.search(r'>constant</text>\s*<text[^>]*>\(5, 1\)</text>', svg), 'the random constant says what it is'
    bare = mt.BackpropViewer((mt.randn(3, requires_grad=True) * 2).sum())
    assert page_data(bare.html())['loss_steps'] == 0  # no modules recorded: nothing to tell the loss by


def test_bad_viewer_and_graph_arguments_name_the_argument_and_leave_no_grad():
    x = mt.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match=r"BackpropViewer: tensor must be a Tensor .*not list"):
        mt.BackpropViewer([x])
    loss = (x * 2).sum()
    for name, value in [('max_nodes', '10'), ('max_bytes', 2.5), ('max_nodes', 0)]:
        with pytest.raises((TypeError, ValueError), match=rf"BackpropViewer: {name} must be an integer"):
            mt.BackpropViewer(loss, retain_graph=True, **{name: value})
    assert x.grad is None  # refused before the backward pass
    with pytest.raises(ValueError, match='nothing to show'):
        mt.BackpropViewer(x)
    assert x.grad is None
    with pytest.raises(TypeError, match=r"draw_graph: max_depth .* must be an integer >= 0 or None, not str '2'"):
        mt.draw_graph(loss, max_depth='2')
    with pytest.raises(ValueError, match=r"draw_graph: max_depth .* not -1"):
        mt.draw_graph(loss, max_depth=-1)


def test_a_page_in_chinese_has_the_same_data_in_other_words():
    from microtensor import i18n
    loss, encoder, _ = encoder_loss()
    english = mt.BackpropViewer(loss, params=encoder, retain_graph=True, lang='en').html()
    chinese_viewer = mt.BackpropViewer(loss, params=encoder, retain_graph=True, lang='zh')
    chinese = chinese_viewer.html()
    assert '<html lang="zh-CN">' in chinese and '<html lang="en">' in english
    assert chinese_viewer.title.startswith('反向传播：') and f'<title>{chinese_viewer.title}</title>' in chinese
    text = json.loads(re.search(r'const TEXT = (.*?);\n', chinese).group(1))
    assert text['next'] == '下一步 ▶' and text['legend_title'].startswith('边的颜色')
    assert text.keys() == json.loads(re.search(r'const TEXT = (.*?);\n', english).group(1)).keys()
    en, zh = page_data(english), page_data(chinese)
    for key in ('steps', 'nodes', 'edges', 'scale', 'formulas', 'modules', 'loss_steps'):  # numbers and op names
        assert en[key] == zh[key], key
    # the page's words are the catalog's: each key of the template is one of page_text's, and back
    with open(mt.inspect.viewer.TEMPLATE, encoding='utf-8') as f:
        template = re.sub(r'<!--.*?-->', '', f.read(), flags=re.S)  # (its comment names the attributes)
    used = set(re.findall(r'data-(?:text|tip)="(\w+)"', template)) | set(re.findall(r'TEXT\.(\w+)', template)) | \
        set(re.findall(r"(?:words|say)\('(\w+)'", template))
    assert used == set(text), used ^ set(text)
    i18n.use('zh')
    try:  # by default, the language the lessons speak
        assert mt.BackpropViewer((mt.randn(3, requires_grad=True) * 2).sum()).lang == 'zh'
    finally:
        i18n.use('en')
    with pytest.raises(ValueError, match="lang must be one of en, zh"):
        mt.BackpropViewer(loss, lang='fr')
