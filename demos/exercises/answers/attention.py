"""attention: scaled dot-product attention, built from your own ops (no backward to write).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Q: (..., n, d_k) queries, K: (..., T_k, d_k) keys, V: (..., T_k, d_v) values ->
(..., n, d_v).  mask (optional): booleans broadcastable to the scores (..., n, T_k), True
where a query may attend; masked scores become -inf (weight 0) before the softmax.

Write it with Tensor operations (@, *, .swapaxes, .softmax, mt.where).  `check` runs it
with your passing exercises in place of the engine's ops (MatMul, Mul, Softmax, ...), so
its gradients come from your backward passes: the composition must match the engine's
attention, values and gradients.

Second order: not asked (attention has no backward of its own).
"""
import math

import microtensor as mt


def attention(q, k, v, mask=None):
    # hint: scores = q @ k^T (transpose k's last two axes) times 1/sqrt(d_k); mask with mt.where(mask, scores,
    #   -math.inf); softmax over the keys (the last axis); then @ v.
    scores = q @ k.swapaxes(-1, -2) * (1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = mt.where(mask, scores, -math.inf)
    return scores.softmax(axis=-1) @ v
