"""The gated residual (transformer/residual.py ResidualGate, layers' gate=True) and BERT's masking
(transformer/mlm.py).

Gate, proves: y = x + g * F(x) with g = sigmoid(h W_g + b_g) computed from what F reads, for
Pre- and Post-LN; a closed gate passes x through, an open one is the standard residual;
the F road goes through the same ResidualAdd (a probe still splits the gradient); float64
gradient checks of gated Encoder and Decoder layers.
MLM, proves: 15% of the positions chosen and 80 / 10 / 10 of them masked / random / kept
(statistically, on 100k positions); unchosen positions untouched, labels IGNORE there and the
original token where chosen; padding never chosen; mlm_loss is the cross-entropy over the
chosen positions only; masked_accuracy counts them only; errors for bad input.
"""
import math

import numpy as np
import pytest

import microtensor as mt
from module_check import gradcheck_module
from transformer import DecoderLayer, EncoderLayer, ResidualGate, masked_accuracy, mlm_loss, mlm_mask
from transformer.mlm import IGNORE
from transformer.probes import ResidualProbe


# ---------------------------------------------------------------------------- gated residual
def set_gates(layer, bias):
    for m in layer.modules():
        if isinstance(m, ResidualGate):
            m.W_g.bias.data = mt.full(m.W_g.bias.shape, float(bias), dtype=m.W_g.bias.dtype).data


@pytest.mark.parametrize('norm', ['pre', 'post'])
def test_gated_layer_computes_x_plus_g_times_F(norm):
    mt.manual_seed(0)
    layer = EncoderLayer(8, 2, norm=norm, gate=True).double()
    x = mt.randn(2, 3, 8, dtype='float64')
    read = layer.norm1 if norm == 'pre' else (lambda t: t)
    h = read(x)
    g, fx = layer.gate_self_attn(h), layer.self_attn(h)
    expected = x + g * fx if norm == 'pre' else layer.norm1(x + g * fx)
    stream = layer.sublayer('self_attn', x, layer.norm1, layer.self_attn)
    np.testing.assert_allclose(stream.numpy(), expected.numpy(), atol=1e-12)
    assert g.shape == x.shape and 0 < g.min().item() and g.max().item() < 1


def test_closed_gate_passes_x_through_and_open_gate_is_the_standard_residual():
    mt.manual_seed(0)
    gated, plain = EncoderLayer(8, 2, gate=True).double(), EncoderLayer(8, 2).double()
    plain.load_state_dict({k: v for k, v in gated.state_dict().items() if 'gate' not in k})
    x = mt.randn(2, 4, 8, dtype='float64')
    set_gates(gated, -40.0)
    np.testing.assert_allclose(gated(x).numpy(), x.numpy(), atol=1e-12)
    set_gates(gated, 40.0)
    np.testing.assert_allclose(gated(x).numpy(), plain(x).numpy(), atol=1e-12)
    assert 'gate=True' in repr(gated) and gated.num_parameters() == plain.num_parameters() + 2 * (8 * 8 + 8)


def test_a_closing_gate_raises_the_plus_one_share():
    shares = []
    for bias in (3.0, 0.0, -3.0):
        mt.manual_seed(0)
        layer = EncoderLayer(8, 2, gate=True)
        set_gates(layer, bias)
        x = mt.randn(2, 4, 8, requires_grad=True)
        with ResidualProbe(layer) as probe:
            (layer(x) * mt.randn(2, 4, 8)).sum().backward()
        shares.append(sum(r.identity_share for r in probe.records) / len(probe.records))
    assert shares[0] < shares[1] < shares[2] and shares[2] > 0.9


def test_gated_layers_gradcheck():
    x, memory = mt.randn(1, 2, 2, dtype='float64'), mt.randn(1, 2, 2, dtype='float64')
    assert gradcheck_module(EncoderLayer(2, 1, d_ff=3, norm='pre', gate=True), x)
    assert gradcheck_module(DecoderLayer(2, 1, d_ff=3, norm='post', gate=True), x, memory)


# ---------------------------------------------------------------------------- MLM
def test_mlm_mask_proportions_and_labels():
    mt.manual_seed(0)
    ids = mt.randint(0, 20, (400, 250))
    inputs, labels = mlm_mask(ids, mask_id=20, vocab_size=20)
    ids_, inputs_, labels_ = ids.numpy(), inputs.numpy(), labels.numpy()
    chosen = labels_ != IGNORE
    n = chosen.sum()
    assert abs(n / ids_.size - 0.15) < 0.005                                  # 15% chosen (100k positions)
    np.testing.assert_array_equal(labels_[chosen], ids_[chosen])               # labels: the originals
    np.testing.assert_array_equal(inputs_[~chosen], ids_[~chosen])             # the rest untouched
    masked = (inputs_ == 20) & chosen
    changed = (inputs_ != ids_) & chosen & ~masked
    kept = (inputs_ == ids_) & chosen
    assert abs(masked.sum() / n - 0.8) < 0.01
    # a random draw equals the original with probability 1/20: 10% * 19/20 shows as changed
    assert abs(changed.sum() / n - 0.1 * 19 / 20) < 0.008
    assert abs(kept.sum() / n - (0.1 + 0.1 / 20)) < 0.008
    assert inputs_[chosen & ~masked].max() < 20 and inputs.dtype == ids.dtype and labels.dtype == ids.dtype


def test_mlm_mask_never_chooses_padding_and_respects_p():
    mt.manual_seed(1)
    ids = mt.tensor([[5, 6, 7, 0, 0, 0]] * 500)
    inputs, labels = mlm_mask(ids, mask_id=9, vocab_size=8, p=0.5, pad_id=0)
    assert (labels.numpy()[:, 3:] == IGNORE).all() and (inputs.numpy()[:, 3:] == 0).all()
    assert abs((labels.numpy()[:, :3] != IGNORE).mean() - 0.5) < 0.05
    inputs, labels = mlm_mask(ids, mask_id=9, vocab_size=8, p=0.0)
    assert (labels.numpy() == IGNORE).all() and (inputs.numpy() == ids.numpy()).all()


def test_mlm_loss_is_cross_entropy_over_the_chosen_positions_only():
    mt.manual_seed(2)
    logits = mt.randn(2, 5, 7, dtype='float64', requires_grad=True)
    labels = mt.tensor([[IGNORE, 3, IGNORE, IGNORE, 6], [1, IGNORE, IGNORE, IGNORE, IGNORE]])
    loss = mlm_loss(logits, labels)
    L = logits.numpy()
    log_p = L - np.log(np.exp(L).sum(-1, keepdims=True))
    expected = -(log_p[0, 1, 3] + log_p[0, 4, 6] + log_p[1, 0, 1]) / 3
    assert math.isclose(loss.item(), expected, rel_tol=1e-12)
    loss.backward()
    assert np.abs(logits.grad.numpy()[0, [0, 2, 3]]).max() == 0                # unchosen: no gradient
    assert mt.gradcheck(lambda z: mlm_loss(z, labels), [logits.detach().requires_grad_()])
    predicted = logits.numpy().argmax(-1)
    hits = [predicted[0, 1] == 3, predicted[0, 4] == 6, predicted[1, 0] == 1]
    assert masked_accuracy(logits, labels) == sum(hits) / 3


def test_mlm_errors():
    ids = mt.randint(0, 5, (2, 4))
    with pytest.raises(TypeError, match='integer'):
        mlm_mask(mt.randn(2, 4), 5, 5)
    with pytest.raises(ValueError, match='mask_share'):
        mlm_mask(ids, 5, 5, mask_share=0.95, random_share=0.1)
    with pytest.raises(ValueError, match='vocab_size'):
        mlm_mask(ids, 5, 0)
    none = mt.full((2, 4), IGNORE, dtype='int64')
    with pytest.raises(ValueError, match='no position was chosen'):
        mlm_loss(mt.randn(2, 4, 5), none)
    with pytest.raises(ValueError, match='share'):
        mlm_loss(mt.randn(2, 3, 5), none)
