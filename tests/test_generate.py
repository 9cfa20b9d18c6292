"""Generation (transformer/generate.py) and incremental decoding with the KV cache.

Proves: feeding a GPT (every positional scheme, GQA) or the encoder-decoder one token at a
time through the KV cache gives the logits of full recomputation; greedy generation is
deterministic and equals step-by-step argmax of full recomputation; sampling draws from
softmax(logits / T) (empirical frequencies), T -> 0 becomes greedy and low T is sharper than
high T (the articles' table); top_k=1 equals greedy and top_k=k draws only the k best;
a seed reproduces a sample; generation restores train mode and records no graph; clear
errors for out-of-vocabulary prompts, prompts longer than the learned position table,
a missing bos_id and bad options.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from microtensor import nn
from transformer import GPT, Transformer, generate, pick_next, top_k_filter

TINY = dict(d_model=16, n_heads=2, n_layers=2)
V = 11


def sharp_gpt(**options):
    """A fresh GPT whose output layer is N(0, 1): logits differ by O(1), so argmax is well defined."""
    model = GPT(V, max_len=12, **TINY, **options)
    nn.init.normal_(model.lm_head.weight, 0.0, 1.0)
    return model


def prompt(B=2, T=3, seed=0):
    return mt.tensor(np.random.default_rng(seed).integers(0, V, size=(B, T)))


# ---------------------------------------------------------------------------- the KV cache
@pytest.mark.parametrize('options', [dict(), dict(positional='sinusoidal'), dict(positional='rope'),
                                     dict(positional='alibi', n_kv_heads=1), dict(norm='post')], ids=str)
def test_gpt_kv_cache_equals_full_recomputation(options):
    model = GPT(V, max_len=12, **TINY, **options)
    x = prompt(T=7)
    full = model(x).numpy()
    cache = model.new_cache()
    chunks = [model(x[:, :3], cache=cache)]  # a prompt, then one token at a time
    chunks += [model(x[:, t:t + 1], cache=cache) for t in range(3, 7)]
    np.testing.assert_allclose(np.concatenate([c.numpy() for c in chunks], axis=1), full, rtol=1e-4, atol=1e-5)


def test_encoder_decoder_kv_cache_equals_full_recomputation():
    model = Transformer(V, V, bos_id=1, pad_id=0, **TINY)
    src, tgt = prompt(T=4), prompt(T=5, seed=1)
    full = model(src, tgt).numpy()
    memory, src_mask = model.encode(src)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t:t + 1], memory, src_mask, cache).numpy() for t in range(5)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- greedy
def test_gpt_greedy_is_deterministic_and_equals_argmax_of_full_recomputation():
    model = sharp_gpt()
    out = generate(model, prompt(), 6, greedy=True)
    assert out.shape == (2, 9) and out.tolist() == generate(model, prompt(), 6, greedy=True).tolist()
    ids = prompt().numpy()
    for _ in range(6):  # no cache: the whole sequence again at each step
        next_ids = model(mt.tensor(ids)).numpy()[:, -1].argmax(axis=-1)
        ids = np.concatenate([ids, next_ids[:, None]], axis=1)
    assert out.tolist() == ids.tolist()


def test_encoder_decoder_greedy_equals_argmax_of_full_recomputation():
    model = Transformer(V, V, bos_id=1, **TINY)
    nn.init.normal_(model.generator.weight, 0.0, 1.0)
    src = prompt(T=4)
    out = generate(model, src, 5, greedy=True)
    tgt = np.ones((2, 1), dtype=np.int64)
    for _ in range(5):
        next_ids = model(src, mt.tensor(tgt)).numpy()[:, -1].argmax(axis=-1)
        tgt = np.concatenate([tgt, next_ids[:, None]], axis=1)
    assert out.tolist() == tgt[:, 1:].tolist()
    assert generate(model, src[0], 5, greedy=True).tolist() == out.tolist()[0]  # a 1-D prompt


# ---------------------------------------------------------------------------- sampling
@pytest.mark.parametrize('temperature', [0.7, 1.0, 1.5])
def test_sampling_follows_softmax_of_logits_over_temperature(temperature):
    logits = mt.tensor([[2.0, 1.0, 0.1, -1.0]])  # the article's example, plus one
    n = 4000
    draws = pick_next(logits.broadcast_to((n, 4)), temperature).numpy().ravel()
    frequencies = np.bincount(draws, minlength=4) / n
    expected = mt.softmax(logits / temperature).numpy().ravel()
    np.testing.assert_allclose(frequencies, expected, atol=4 * math.sqrt(0.25 / n))  # 4 sigma


def test_low_temperature_approaches_greedy():
    model = sharp_gpt()
    x = prompt(B=200, seed=3)
    greedy = generate(model, x, 1, greedy=True).numpy()[:, -1]
    agreement = {T: (generate(model, x, 1, temperature=T, seed=7).numpy()[:, -1] == greedy).mean()
                 for T in (1e-3, 0.2, 1.0, 1.5)}
    assert agreement[1e-3] == 1.0
    assert agreement[0.2] > agreement[1.0] > agreement[1.5], agreement  # the articles' temperature table
    assert generate(model, x, 3, temperature=0).tolist() == generate(model, x, 3, greedy=True).tolist()


def test_top_k():
    model = sharp_gpt()
    x = prompt(B=50)
    assert generate(model, x, 4, top_k=1, seed=1).tolist() == generate(model, x, 4, greedy=True).tolist()
    logits = mt.tensor(np.random.default_rng(0).standard_normal((1, V)))
    top3 = set(np.argsort(logits.numpy()[0])[-3:])
    draws = pick_next(logits.broadcast_to((500, V)), temperature=2.0, top_k=3).numpy().ravel()
    assert set(draws) == top3
    kept = top_k_filter(logits, 3).numpy()[0]
    assert set(np.flatnonzero(np.isfinite(kept))) == top3


@given(st.integers(0, 2**16))
def test_a_seed_reproduces_a_sample(seed):
    model = sharp_gpt()
    a = generate(model, prompt(), 5, temperature=1.5, seed=seed)
    assert a.tolist() == generate(model, prompt(), 5, temperature=1.5, seed=seed).tolist()


def test_different_seeds_give_different_samples():
    model = sharp_gpt()
    samples = {tuple(generate(model, prompt(B=1), 8, temperature=1.5, seed=s).numpy().ravel()) for s in range(5)}
    assert len(samples) > 1


def test_generation_restores_train_mode_and_records_no_graph():
    model = GPT(V, dropout=0.1, **TINY)
    out = generate(model, prompt(), 3)
    assert model.training and not out.requires_grad
    model.eval()
    generate(model, prompt(), 3)
    assert not model.training


# ---------------------------------------------------------------------------- errors
def test_bad_prompts_and_options_are_clear_errors():
    model = GPT(V, max_len=5, **TINY)
    with pytest.raises(IndexError, match=rf'\[0, {V}\)'):
        generate(model, [[1, V]], 2)
    with pytest.raises(ValueError, match='max_len=5'):
        generate(model, prompt(T=6), 1)  # the prompt alone is longer than the table
    with pytest.raises(ValueError, match='max_len=5'):
        generate(model, prompt(T=3), 4)  # prompt + new tokens run past it
    assert generate(model, prompt(T=3), 3).shape == (2, 6)  # positions 0..4 exactly fit
    with pytest.raises(ValueError, match=r'shape \(B, T\)'):
        generate(model, [[]], 2)
    with pytest.raises(ValueError, match='temperature'):
        generate(model, prompt(), 2, temperature=-1)
    with pytest.raises(ValueError, match='top_k'):
        generate(model, prompt(), 2, top_k=0)
    with pytest.raises(ValueError, match='max_new_tokens'):
        generate(model, prompt(), -1)
    with pytest.raises(ValueError, match='bos_id'):
        generate(Transformer(V, V, **TINY), prompt(), 2)
