"""mt.gradient_flow: per-parameter |grad|, |W| and update/weight around one optimizer step."""
import sys

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn, optim


def host_norm(array):
    return float(np.linalg.norm(np.asarray(array, dtype=np.float64).ravel()))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)
        self.unused = nn.Linear(2, 2)  # no gradient reaches it

    def forward(self, x):
        return self.fc2(self.fc1(x).tanh())


def trained_net():
    model = Net()
    (model(mt.randn(5, 3)) ** 2).mean().backward()
    return model


def test_sgd_update_ratio_is_lr_times_grad_over_weight():
    model = trained_net()
    before = {name: p.numpy().copy() for name, p in model.named_parameters()}
    grads = {name: p.grad.numpy().copy() for name, p in model.named_parameters() if p.grad is not None}
    flow = mt.gradient_flow(model, optim.SGD(model.parameters(), lr=0.1))

    assert [row.name for row in flow] == [name for name, _ in model.named_parameters()]
    for name, p in model.named_parameters():
        row = flow[name]
        assert row.shape == p.shape
        assert row.weight == pytest.approx(host_norm(before[name]), rel=1e-6)
        if name.startswith('unused'):
            assert row.grad is None
            continue
        assert row.grad == pytest.approx(host_norm(grads[name]), rel=1e-6)
        assert row.update == pytest.approx(0.1 * row.grad / row.weight, rel=1e-4)
        np.testing.assert_allclose(p.numpy(), before[name] - 0.1 * grads[name], rtol=1e-5, atol=1e-7)  # one step


def test_any_optimizer_with_a_step_method():
    class Halve:  # not an optim.Optimizer at all
        def __init__(self, params):
            self.params = params

        def step(self):
            with mt.no_grad():
                for p in self.params:
                    p.copy_(p * 0.5)

    model = trained_net()
    flow = mt.gradient_flow(model, Halve(model.parameters()))
    assert all(row.update == pytest.approx(0.5, rel=1e-5) for row in flow)


def test_without_an_optimizer_nothing_changes():
    model = trained_net()
    before = [p.numpy().copy() for p in model.parameters()]
    flow = mt.gradient_flow(model)
    assert all(row.update is None for row in flow)
    for b, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(b, p.numpy())


def test_table_and_lookup():
    flow = mt.gradient_flow(trained_net())
    lines = str(flow).splitlines()
    assert lines[0].split() == ['parameter', 'shape', '|grad|', '|W|', '|dW|/|W|']
    assert len(lines) == 1 + len(flow)
    assert lines[-1].split()[0] == 'unused.bias' and lines[-1].split()[2] == '-'
    with pytest.raises(KeyError, match='fc3'):
        flow['fc3.weight']


def test_plot_when_matplotlib_is_installed(tmp_path):
    pytest.importorskip('matplotlib', reason='matplotlib is not installed (pip install matplotlib): plot not tested')
    model = trained_net()
    flow = mt.gradient_flow(model, optim.SGD(model.parameters(), lr=0.1))
    fig = flow.plot(tmp_path / 'flow.png')
    assert (tmp_path / 'flow.png').stat().st_size > 0 and len(fig.axes) == 2


def test_plot_without_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    with pytest.raises(ImportError, match='pip install matplotlib'):
        mt.gradient_flow(trained_net()).plot()
