"""mt.trace: one row per op; its gradient norms equal those read by hand with hooks."""
import re

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn


def host_norm(t):
    return float(np.linalg.norm(t.numpy().astype(np.float64).ravel()))


def test_norms_equal_those_read_with_hooks(device):
    x = mt.randn(2, 3, device=device, requires_grad=True, name='x')
    W = mt.randn(3, 4, device=device, requires_grad=True, name='W')
    c = mt.randn(4, device=device)  # a constant: no gradient is sent to it
    seen = {}

    def watch(t, name):
        t.register_hook(lambda g: seen.__setitem__(name, g))
        return t

    h = watch(x @ W, 'h')
    t = watch(h.tanh(), 't')
    s = watch(t * c, 's')
    loss = s.sum()
    rows = {row.op: row for row in mt.trace(loss)}

    assert list(rows) == ['Sum', 'Mul', 'Tanh', 'MatMul']
    assert rows['Sum'].grad_in == pytest.approx(1.0)
    assert rows['Sum'].inputs[0][1] == pytest.approx(host_norm(seen['s']), rel=1e-6)
    assert rows['Mul'].grad_in == pytest.approx(host_norm(seen['s']), rel=1e-6)
    assert rows['Mul'].inputs[0][1] == pytest.approx(host_norm(seen['t']), rel=1e-6)
    assert rows['Mul'].inputs[1] == ('(4,)', None)
    assert rows['Tanh'].grad_in == pytest.approx(host_norm(seen['t']), rel=1e-6)
    assert rows['Tanh'].inputs[0][1] == pytest.approx(host_norm(seen['h']), rel=1e-6)
    assert rows['MatMul'].grad_in == pytest.approx(host_norm(seen['h']), rel=1e-6)
    (x_label, x_norm), (W_label, W_norm) = rows['MatMul'].inputs
    assert (x_label, W_label) == ('x (2, 3)', 'W (3, 4)')
    assert x_norm == pytest.approx(host_norm(x.grad), rel=1e-6)  # trace ran the backward pass
    assert W_norm == pytest.approx(host_norm(W.grad), rel=1e-6)
    assert rows['MatMul'].output == '(2, 4)'


def test_table_has_one_line_per_op_and_shares_of_time():
    x = mt.randn(3, 3, requires_grad=True)
    tr = mt.trace((x.exp() * x).sum())
    lines = str(tr).splitlines()
    assert lines[0].split()[:3] == ['#', 'module', 'op']
    assert len(lines) == 1 + len(tr) + 1  # header, rows, summary
    assert lines[-1].startswith(f"{len(tr)} of {len(tr)} ops")
    shares = [float(line.rsplit(None, 1)[1].rstrip('%')) for line in lines[1:-1]]
    assert sum(shares) == pytest.approx(100, abs=0.5)
    assert all(row.seconds >= 0 for row in tr)


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def test_filter_by_module():
    model = TwoLayers()
    x = mt.randn(5, 4)
    with mt.record_modules(model):
        out = model(x)
    loss = (out * out).sum()  # made outside every module
    tr = mt.trace(loss, params=model)

    by_module = {}
    for row in tr:
        by_module.setdefault(row.module, []).append(row.op)
    assert by_module == {None: ['Sum', 'Mul'],  # the loss
                         'fc2': ['Add', 'MatMul'], '': ['Relu'], 'fc1': ['Add', 'MatMul']}  # x @ W^T + b
    assert [row.op for row in tr.filter('fc1')] == ['Add', 'MatMul']
    table = tr.table(module='fc2')
    assert 'fc2.weight (2, 8)' in table and 'fc1' not in table  # nn.Linear(8, 2): PyTorch's (out, in)
    assert table.splitlines()[-1].startswith(f"2 of {len(tr)} ops")
    assert '(model)' in str(tr)  # the Relu, made by the model's own forward
    assert [row.op for row in tr.filter('(model)')] == ['Relu']  # filters take what the table prints
    assert [row.op for row in tr.filter('(no module)')] == ['Sum', 'Mul']
    assert len(tr.filter('')) == 5  # '' is the whole model, as a dotted-name prefix

    with mt.record_modules(model):
        pass
    assert model.fc1._forward_hooks == []  # nothing left behind


def test_trace_fills_grads_like_backward():
    model = TwoLayers()
    x = mt.randn(5, 4)
    model(x).sum().backward()
    expected = [p.grad.numpy() for p in model.parameters()]
    model.zero_grad()
    mt.trace(model(x).sum())
    for e, p in zip(expected, model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-6)


def test_residual_rows_name_their_layer_and_sub_layer():
    from transformer import GPT
    model = GPT(vocab_size=7, d_model=4, n_layers=2, n_heads=2, max_len=4)
    with mt.record_modules(model):
        loss = mt.cross_entropy(model(mt.tensor([[1, 2, 3]]))[0], mt.tensor([2, 3, 4]))
    tr = mt.trace(loss, params=model)
    residual = [row.module for row in tr if row.op == 'ResidualAdd']
    assert residual == ['decoder.layers.1.ffn residual', 'decoder.layers.1.self_attn residual',
                        'decoder.layers.0.ffn residual', 'decoder.layers.0.self_attn residual']
    assert [row.op for row in tr.filter('decoder.layers.1.ffn residual')] == ['ResidualAdd']
    assert 'ResidualAdd' in [row.op for row in tr.filter('decoder.layers.1')]
    assert 'ResidualAdd' not in [row.op for row in tr.filter('decoder.layers.1.ffn')]  # not inside the FFN
    # every label the module column prints picks its rows back
    lines = tr.table().splitlines()[1:-1]
    for line in lines:
        index, label = re.split(r'  +', line.strip())[:2]
        assert int(index) in [row.index for row in tr.filter(label)], (label, line)
