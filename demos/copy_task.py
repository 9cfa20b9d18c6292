"""The copy task several lessons train on: each row is `half` random tokens written twice
(w + w).  A model can only predict the second half by looking back `half` positions, so it
must learn to attend; chance is ln(vocab) nats per token.
"""
import microtensor as mt

VOCAB = 10


def copy_batch(rng, B, half, device='cpu', vocab=VOCAB):
    """(B, 2 half) token ids: rows w + w, w drawn from `rng` (a random.Random)."""
    first = [[rng.randrange(vocab) for _ in range(half)] for _ in range(B)]
    return mt.tensor([w + w for w in first], device=device)


def copy_loss(logits, ids, half):
    """Cross-entropy on the repeated half only: position t predicts token t + 1 (the first half is noise)."""
    return mt.cross_entropy(logits[:, half - 1:-1], ids[:, half:])
