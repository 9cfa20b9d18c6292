"""Attention masks: which keys each query may look at.

A mask is a boolean tensor, True = keep (may attend), broadcastable to the scores'
shape (B, h, T_q, T_k).  Attention puts -inf where it is False before the softmax,
so those keys get exactly zero weight (e^-inf = 0).

    causal_mask(4)          padding_mask([[5, 7, 0, 0]], pad_id=0)
    1 0 0 0                 (B, 1, 1, T_k):  1 1 0 0   the same row for every query and head
    1 1 0 0
    1 1 1 0                 combine(causal, padding): both at once (logical and)
    1 1 1 1
"""
import microtensor as mt
from microtensor import argcheck


def causal_mask(T_q, T_k=None, offset=0, device=None):
    """(T_q, T_k) bool: query t (at absolute position t + offset) sees keys 0 .. t + offset.

    offset is the number of positions already processed (the KV cache's length), so
    T_k defaults to offset + T_q: the new queries see every cached key and the new
    keys up to themselves.  The decoder's "no peeking at future words".
    """
    T_q = argcheck.integer(T_q, 'causal_mask', 'T_q', min=0)
    offset = argcheck.integer(offset, 'causal_mask', 'offset', min=0)
    T_k = offset + T_q if T_k is None else argcheck.integer(T_k, 'causal_mask', 'T_k', min=0)
    query_position = mt.arange(offset, offset + T_q, device=device).reshape(T_q, 1)
    key_position = mt.arange(T_k, device=device).reshape(1, T_k)
    return key_position <= query_position


def padding_mask(ids, pad_id):
    """(B, 1, 1, T_k) bool, False at padding tokens: no query attends to a [PAD] key.

    ids: (B, T_k) integer token ids (a Tensor or a nested list).
    """
    try:
        ids = ids if isinstance(ids, mt.Tensor) else mt.tensor(ids)
    except (TypeError, ValueError) as error:
        raise TypeError(f"padding_mask: ids must be integer token ids (a Tensor or nested lists of ints), "
                        f"not {argcheck.describe(ids)} ({error})") from None
    pad_id = argcheck.integer(pad_id, 'padding_mask', 'pad_id')
    if ids.dtype.kind not in 'iu':
        raise TypeError(f"padding_mask: ids must be integer token ids, not {ids.dtype}")
    if ids.ndim != 2:
        raise mt.ShapeError(f"padding_mask: ids must have shape (B, T), got {ids.shape}")
    B, T_k = ids.shape
    return (ids != pad_id).reshape(B, 1, 1, T_k)


def combine(*masks):
    """Logical and of the masks that are not None (None if all are): a key is visible
    only if every mask allows it.  Shapes broadcast, e.g. (T, T) & (B, 1, 1, T) -> (B, 1, T, T)."""
    result = None
    for mask in masks:
        if mask is not None:
            result = mask if result is None else result & mask
    return result
