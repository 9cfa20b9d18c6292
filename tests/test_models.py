"""The three architectures and their losses (transformer/models.py, losses.py), and the
quickstart (README: 'Build a Transformer in a few lines').

Proves: float64 end-to-end gradient checks of the GPT loss (tied and untied), the
encoder-decoder loss (with padding) and the encoder-only classification and masked-token
losses; GPT-2 initialisation (std 0.02, residual projections 0.02 / sqrt(2 n_layers), zero
biases) and a fresh GPT's loss ~ ln(vocab); GPT is causal (later tokens change neither the
logits at t nor, by exactly zero gradient, anything before), for every positional scheme;
the encoder-only model is bidirectional; padding changes nothing in the encoder-decoder and
the classifier; shift_right and the losses line targets up; probes can walk model.layers;
clear errors for out-of-vocabulary ids, a too-long sequence, bad options, another device;
every code block of the quickstart runs, and its Transformer does learn to reverse.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from module_check import gradcheck_module
from readme import python_blocks
from transformer import (GPT, DecoderLayer, EncoderLayer, EncoderOnly, Transformer, next_token_loss,
                         seq2seq_loss, shift_right)

TINY = dict(d_model=8, n_heads=2, n_layers=1, d_ff=8)  # vocab 7, T = 3: fast float64 checks
CHECK = dict(max_elements=0)  # every parameter along 3 random directions (layers check elementwise)


def ids(rows, low=1, high=7):
    return mt.tensor(np.random.default_rng(len(rows)).integers(low, high, size=rows)) if isinstance(rows, tuple) \
        else mt.tensor(rows)


# ---------------------------------------------------------------------------- gradient checks
@pytest.mark.slow
@pytest.mark.parametrize('options', [dict(), dict(tie_weights=True, positional='sinusoidal'),
                                     dict(norm='post', positional='rope')], ids=str)
def test_gpt_loss_gradcheck(options):
    model = GPT(7, max_len=4, **TINY, **options)
    x = ids([[1, 2, 3], [4, 5, 6]])
    assert gradcheck_module(model, call=lambda m: next_token_loss(m(x), x), **CHECK)


@pytest.mark.slow
def test_transformer_loss_gradcheck_with_padding():
    model = Transformer(7, 7, pad_id=0, bos_id=1, **TINY)
    src, tgt = ids([[2, 3, 4], [5, 6, 0]]), ids([[4, 3, 2], [6, 5, 0]])
    assert gradcheck_module(model, call=lambda m: seq2seq_loss(m(src, shift_right(tgt, 1)), tgt, pad_id=0),
                            **CHECK)


@pytest.mark.slow
@pytest.mark.parametrize('head', ['classify', 'masked_token_logits'])
def test_encoder_only_losses_gradcheck(head):
    model = EncoderOnly(7, max_len=3, pad_id=0, n_classes=3, **{k: v for k, v in TINY.items()})
    x = ids([[2, 3, 0], [5, 6, 4]])
    if head == 'classify':
        def loss(m):
            return mt.cross_entropy(m.classify(x), mt.tensor([2, 0]))
    else:
        def loss(m):  # predict the hidden tokens (-100: not scored)
            return mt.cross_entropy(m.masked_token_logits(x), mt.tensor([[-100, 3, -100], [5, -100, -100]]),
                                    ignore_index=-100)
    assert gradcheck_module(model, call=loss, **CHECK)


# ---------------------------------------------------------------------------- initialisation
def test_gpt2_initialisation():
    n_layers = 3
    model = GPT(50, d_model=64, n_layers=n_layers, n_heads=4)
    layer = model.layers[0]
    assert abs(layer.self_attn.W_Q.weight.numpy().std() - 0.02) < 0.002
    assert abs(model.embed.tok.weight.numpy().std() - 0.02) < 0.002
    residual_std = 0.02 / math.sqrt(2 * n_layers)
    for W in (layer.self_attn.W_O.weight, layer.ffn.W_2.weight):
        assert abs(W.numpy().std() - residual_std) < 0.1 * residual_std
    assert not layer.self_attn.W_Q.bias.numpy().any() and not layer.ffn.W_1.bias.numpy().any()
    np.testing.assert_array_equal(layer.norm1.gamma.numpy(), 1)


@pytest.mark.parametrize('tie_weights', [False, True])
def test_fresh_gpt_loss_is_about_ln_vocab(tie_weights):
    vocab = 64
    model = GPT(vocab, d_model=32, n_layers=2, n_heads=4, tie_weights=tie_weights)
    x = mt.randint(0, vocab, (8, 16))
    loss = next_token_loss(model(x), x).item()
    assert abs(loss - math.log(vocab)) < 0.1, (loss, math.log(vocab))  # measured: within 0.025


def test_tied_weights_share_the_embedding():
    untied, tied = GPT(20, **TINY), GPT(20, tie_weights=True, **TINY)
    assert tied.lm_head is None
    assert untied.num_parameters() - tied.num_parameters() == 20 * TINY['d_model']
    x = ids([[1, 2, 3]])
    next_token_loss(tied(x), x).backward()
    assert tied.embed.tok.weight.grad.numpy()[0].any()  # token 0 never appears: only the output side reaches it


# ---------------------------------------------------------------------------- structure
@pytest.mark.slow
@pytest.mark.parametrize('positional', ['learned', 'sinusoidal', 'rope', 'alibi'])
@given(t=st.integers(0, 4))
def test_gpt_is_causal(positional, t):
    model = GPT(7, max_len=5, positional=positional, n_kv_heads=1, **TINY)
    x = ids((2, 5))
    later = x.numpy().copy()
    later[:, t + 1:] = (later[:, t + 1:] + 1) % 7
    np.testing.assert_allclose(model(mt.tensor(later)).numpy()[:, :t + 1], model(x).numpy()[:, :t + 1],
                               rtol=1e-5, atol=1e-6)
    embedded = []
    handle = model.embed.register_forward_hook(lambda m, inputs, out: embedded.append(out.retain_grad()))
    model(x)[:, t].sum().backward()
    handle.remove()
    grad = embedded[0].grad.numpy()
    assert not grad[:, t + 1:].any() and grad[:, :t + 1].any()


def test_encoder_only_is_bidirectional_and_the_decoder_sees_the_source():
    encoder = EncoderOnly(7, **TINY)
    a, b = ids([[1, 2, 3]]), ids([[1, 2, 4]])  # only the last token differs
    assert not np.allclose(encoder(a).numpy()[:, 0], encoder(b).numpy()[:, 0])  # the first position sees it
    model = Transformer(7, 7, bos_id=1, **TINY)
    tgt = ids([[1, 5, 6]])
    assert not np.allclose(model(a, tgt).numpy(), model(b, tgt).numpy())


def test_padding_changes_nothing():
    """With pad_id, [a b PAD PAD] gives what [a b] gives: pad keys are masked everywhere."""
    model = Transformer(7, 7, pad_id=0, bos_id=1, **TINY)
    tgt = ids([[1, 4, 5]])
    np.testing.assert_allclose(model(ids([[2, 3, 0, 0]]), tgt).numpy(), model(ids([[2, 3]]), tgt).numpy(),
                               rtol=1e-5, atol=1e-6)
    classifier = EncoderOnly(7, pad_id=0, n_classes=3, positional='sinusoidal', **TINY)
    np.testing.assert_allclose(classifier.classify(ids([[2, 3, 0, 0], [4, 5, 6, 2]])).numpy()[0],
                               classifier.classify(ids([[2, 3]])).numpy()[0], rtol=1e-5, atol=1e-6)


def test_shift_right_and_losses_line_up_targets():
    tgt = ids([[4, 5, 6]])
    assert shift_right(tgt, 1).tolist() == [[1, 4, 5]]
    logits = mt.tensor(np.random.default_rng(0).standard_normal((1, 3, 7)))
    x = ids([[2, 3, 4]])
    expected = -np.mean([mt.log_softmax(logits, dim=-1).numpy()[0, t, x.numpy()[0, t + 1]] for t in range(2)])
    assert abs(next_token_loss(logits, x).item() - expected) < 1e-6
    assert abs(seq2seq_loss(logits, mt.tensor([[2, 0, 0]]), pad_id=0).item()
               + mt.log_softmax(logits, dim=-1).numpy()[0, 0, 2]) < 1e-6


def test_models_expose_their_layers_to_probes():
    model = Transformer(7, 7, bos_id=1, d_model=8, n_heads=2, n_layers=2)
    assert [type(layer) for layer in model.layers] == [EncoderLayer] * 2 + [DecoderLayer] * 2
    seen = []
    for i, layer in enumerate(model.layers):
        layer.residual_probe = lambda layer, name, x, fx, y, i=i: seen.append((i, name))
    model(ids([[2, 3]]), ids([[1, 4]]))
    assert seen == [(0, 'self_attn'), (0, 'ffn'), (1, 'self_attn'), (1, 'ffn')] + \
        [(i, name) for i in (2, 3) for name in ('self_attn', 'cross_attn', 'ffn')]
    gpt = GPT(7, n_layers=3, **{k: v for k, v in TINY.items() if k != 'n_layers'}, residual=False, norm='post')
    assert len(gpt.layers) == 3 and all(not layer.residual and layer.norm == 'post' for layer in gpt.layers)


# ---------------------------------------------------------------------------- errors
def test_bad_inputs_are_clear_errors():
    model = GPT(7, max_len=4, **TINY)
    with pytest.raises(IndexError, match=r'\[0, 7\)'):
        model(ids([[1, 7]]))
    with pytest.raises(ValueError, match='max_len=4'):
        model(ids((1, 5)))
    with pytest.raises(ValueError, match='not divisible by n_heads'):
        GPT(7, d_model=10, n_layers=1, n_heads=3)
    with pytest.raises(ValueError, match='positional must be one of'):
        Transformer(7, 7, positional='relative', **TINY)
    with pytest.raises(ValueError, match='n_classes'):
        EncoderOnly(7, **TINY).classify(ids([[1, 2]]))
    with pytest.raises(ValueError, match='share'):
        next_token_loss(model(ids([[1, 2]])), ids([[1, 2, 3]]))


@pytest.mark.skipif(not mt.cuda.is_available(), reason='needs a GPU (cupy) to put the ids on another device')
def test_ids_on_another_device_are_a_clear_error():
    with pytest.raises(RuntimeError, match='cuda'):
        GPT(7, **TINY)(mt.tensor([[1, 2]], device='cuda'))


@pytest.mark.skipif(not mt.cuda.is_available(), reason='needs a GPU (cupy)')
def test_models_run_on_the_gpu():
    model = GPT(7, **TINY).to('cuda')
    x = mt.tensor([[1, 2, 3]], device='cuda')
    loss = next_token_loss(model(x), x)
    loss.backward()
    assert loss.device == 'cuda' and model.layers[0].self_attn.W_Q.weight.grad.device == 'cuda'


# ---------------------------------------------------------------------------- the quickstart guide
@pytest.mark.slow
def test_quickstart_code_blocks_run():
    blocks = python_blocks('Build a Transformer in a few lines')
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:  # one namespace, like a reader typing them in order
        exec(compile(block, 'README.md', 'exec'), namespace)
    src, model, generate = namespace['src'], namespace['model'], namespace['generate']
    assert generate(model, src, 5, greedy=True).tolist() == src.numpy()[:, ::-1].tolist()  # as printed there
