"""transformer.probes: the residual highway split and softmax saturation, against closed forms."""
import math

import numpy as np
import pytest

import microtensor as mt
from microtensor import nn
from transformer import EncoderLayer, MultiHeadAttention, residual_connection
from transformer.probes import ResidualProbe, SaturationProbe, saturation_stats


class LinearResidual(nn.Module):
    """y = x + alpha * (x @ A): a residual block whose F has the known Jacobian A^T."""

    def __init__(self, A, alpha=1.0, residual=True):
        super().__init__()
        self.A, self.alpha, self.residual = A, alpha, residual
        self.residual_probe = None

    def forward(self, x):
        return residual_connection(self, 'F', x, x @ self.A)


def run_probe(block, x, c):
    with ResidualProbe(block) as probe:
        (block(x) * c).sum().backward()  # dL/dy = c
    assert block.residual_probe is None  # off again: costs nothing
    (record,) = probe.records
    return record


def test_zero_jacobian_sends_everything_through_the_identity():
    x = mt.randn(3, 4, requires_grad=True)
    record = run_probe(LinearResidual(mt.zeros(4, 4)), x, mt.randn(3, 4))
    assert record.via_F == 0
    assert record.identity_share == 1.0


@pytest.mark.parametrize('alpha', [1.0, 0.5])
def test_linear_F_matches_the_closed_form(alpha):
    A, c = mt.randn(4, 4), mt.randn(3, 4)
    x = mt.randn(3, 4, requires_grad=True)
    record = run_probe(LinearResidual(A, alpha), x, c)
    via_identity = np.linalg.norm(c.numpy())                  # dL/dy * 1
    via_F = np.linalg.norm(alpha * c.numpy() @ A.numpy().T)   # alpha * (dF/dx)^T dL/dy
    assert record.via_identity == pytest.approx(via_identity, rel=1e-5)
    assert record.via_F == pytest.approx(via_F, rel=1e-5)
    assert record.identity_share == pytest.approx(via_identity / (via_identity + via_F), rel=1e-5)


def test_without_the_residual_nothing_goes_through_the_identity():
    A, c = mt.randn(4, 4), mt.randn(3, 4)
    record = run_probe(LinearResidual(A, residual=False), mt.randn(3, 4, requires_grad=True), c)
    assert record.via_identity == 0.0 and record.identity_share == 0.0
    assert record.via_F == pytest.approx(np.linalg.norm(c.numpy() @ A.numpy().T), rel=1e-5)


def test_saturated_scores():
    scores = mt.randn(2, 5, 6) * 1000.0
    stats = saturation_stats(scores)
    assert stats.max_p > 0.999
    assert stats.mean_p1p < 1e-3
    assert stats.entropy < 1e-2
    assert stats.score_var == pytest.approx(float(scores.numpy().var()), rel=1e-4)


def test_zero_scores_give_the_uniform_distribution():
    n = 5
    stats = saturation_stats(mt.zeros(3, 4, n))
    assert stats.max_p == pytest.approx(1 / n)
    assert stats.mean_p1p == pytest.approx((1 / n) * (1 - 1 / n))
    assert stats.entropy == pytest.approx(math.log(n), rel=1e-6)
    assert stats.score_var == 0


def test_weights_alone_and_masked_zeros():
    p = mt.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])  # zeros as a mask leaves them: 0 log 0 = 0
    stats = saturation_stats(weights=p)
    assert stats.score_var is None
    assert stats.max_p == pytest.approx(0.75)
    assert stats.entropy == pytest.approx(math.log(2) / 2)
    with pytest.raises(ValueError, match='scores'):
        saturation_stats()


def test_saturation_probe_reads_each_head_and_the_gradient_through_the_softmax():
    layer = EncoderLayer(d_model=8, n_heads=2, d_ff=16)
    x = mt.randn(2, 3, 8, requires_grad=True)
    with SaturationProbe(layer) as probe:
        (layer(x) ** 2).mean().backward()
    assert layer.self_attn._forward_hooks == []  # off again
    rows = probe.rows()
    assert [(r.attention, r.head) for r in rows] == [('self_attn', 0), ('self_attn', 1)]
    scores, weights = layer.self_attn.last_scores, layer.self_attn.last_weights
    for r in rows:
        assert r.stats == saturation_stats(scores[:, r.head].detach(), weights[:, r.head].detach())
        p, g = weights.numpy()[:, r.head], weights.grad.numpy()[:, r.head]
        through_softmax = p * (g - (g * p).sum(-1, keepdims=True))  # Softmax.backward, by hand
        assert r.grad_weights == pytest.approx(np.linalg.norm(g), rel=1e-5)
        assert r.grad_scores == pytest.approx(np.linalg.norm(through_softmax), rel=1e-4)
    assert 'mean p(1-p)' in probe.table() and len(probe.table().splitlines()) == 3


def test_unscaled_scores_saturate_more():
    mt.manual_seed(1)
    x = mt.randn(1, 6, 64)
    attention = MultiHeadAttention(64, 1)
    stats = {}
    for scale in (None, 1.0):  # 1/sqrt(d_k) vs no scaling, d_k = 64
        attention.scale = scale
        attention(x)
        stats[scale] = saturation_stats(attention.last_scores, attention.last_weights)
    assert stats[1.0].score_var == pytest.approx(64 * stats[None].score_var, rel=1e-3)
    assert stats[1.0].max_p > stats[None].max_p
    assert stats[1.0].entropy < stats[None].entropy


def test_probes_on_a_layer_print_one_row_per_residual():
    layer = EncoderLayer(d_model=8, n_heads=2, d_ff=16, norm='post')
    x = mt.randn(2, 3, 8, requires_grad=True)
    with ResidualProbe(layer) as residual, SaturationProbe(layer):
        (layer(x) ** 2).mean().backward()
    assert [(r.layer, r.branch) for r in residual.records] == [('EncoderLayer', 'self_attn'),
                                                                ('EncoderLayer', 'ffn')]
    assert all(r.via_identity > 0 and r.via_F > 0 for r in residual.records)
    assert len(residual.table().splitlines()) == 3
    linear, x = nn.Linear(2, 2), mt.randn(3, 2, requires_grad=True)
    with ResidualProbe(linear) as none:  # no residual_probe: the graph is searched, and has no x + F(x)
        (linear(x) + x).sum().backward()  # (an add outside every module call is not a layer's residual)
    assert none.records == []
