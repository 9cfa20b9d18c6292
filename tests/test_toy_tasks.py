"""Learning tests: the models learn, end to end, on CPU in a few seconds.

Proves: a tiny GPT overfits a fixed batch (loss < 0.05: it memorises eight sequences), and
a tiny encoder-decoder Transformer learns to reverse sequences it has never seen (>= 95%
token accuracy with greedy generation through the KV cache).  Not timing tests: they bound
the number of steps (measured when written; see the figures in each test).
"""
import numpy as np
import pytest

import microtensor as mt
from microtensor import optim
from transformer import GPT, Transformer, generate, next_token_loss, seq2seq_loss, shift_right

PAD, BOS = 0, 1  # reversal vocabulary: 0 pad, 1 bos, 2..7 the symbols


def test_tiny_gpt_overfits_a_fixed_batch():
    """8 sequences of 8 tokens; their first tokens differ, so every next token is determined
    by its prefix and the loss can reach 0.  Measured (seeds 0-4): < 0.05 after 26-36 steps (~0.5 s)."""
    V, B, T = 8, 8, 8
    rng = np.random.default_rng(0)
    data = rng.integers(0, V, size=(B, T))
    data[:, 0] = rng.permutation(B)
    x = mt.tensor(data)
    model = GPT(V, d_model=32, n_layers=2, n_heads=2, max_len=T)
    opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    first = None
    for step in range(200):
        loss = next_token_loss(model(x), x)
        first = loss.item() if first is None else first
        if loss.item() < 0.05:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05 < first, (step, first, loss.item())


def reversal_batch(rng, n, length=5, n_symbols=6):
    src = rng.integers(BOS + 1, BOS + 1 + n_symbols, size=(n, length))
    return mt.tensor(src), mt.tensor(src[:, ::-1].copy())


@pytest.mark.slow
def test_tiny_transformer_learns_to_reverse_unseen_sequences():
    """Random sequences of 5 symbols (6 possible), a fresh batch of 32 each step; scored on
    200 other sequences.  Measured (seeds 0-4): 100% accuracy, final loss 0.017-0.021, after
    150 steps (~4 s).  init_std=0.1: with GPT-2's 0.02 it learns slowly and unreliably (seeds 0-3,
    250 steps: 91-100% accuracy at lr 3e-3, 27-100% at lr 1e-2), see models.py."""
    rng = np.random.default_rng(0)
    model = Transformer(8, 8, d_model=32, n_heads=2, n_layers=1, pad_id=PAD, bos_id=BOS, init_std=0.1)
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    schedule = optim.WarmupCosine(opt, warmup_steps=10, total_steps=150)
    for _ in range(150):
        src, tgt = reversal_batch(rng, 32)
        loss = seq2seq_loss(model(src, shift_right(tgt, BOS)), tgt, pad_id=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    src, tgt = reversal_batch(np.random.default_rng(123), 200)
    accuracy = (generate(model, src, max_new_tokens=5, greedy=True).numpy() == tgt.numpy()).mean()
    assert accuracy >= 0.95, (accuracy, loss.item())
