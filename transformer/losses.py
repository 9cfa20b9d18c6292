"""Training losses: cross-entropy over the vocabulary, arranged for each architecture.

Decoder-only (causal LM, "predict the next token"):
    logits = model(ids)                          (B, T, V)
    L = CE(logits[:, :-1], ids[:, 1:])           position t is scored on token t + 1

Encoder-decoder (teacher forcing):
    tgt_in = shift_right(tgt, bos_id)            [bos, y_1, ..., y_{T-1}]
    logits = model(src, tgt_in)                  (B, T, V)
    L = CE(logits, tgt)  ignoring pad_id         position t is scored on y_t

CE is mt.cross_entropy: the mean over counted positions of -log softmax(logits)[target].
"""
import microtensor as mt
from microtensor import argcheck


def _check(where, logits, ids, ids_name, ignore_index, ignore_name):
    if not isinstance(logits, mt.Tensor) or logits.ndim != 3:
        raise mt.ShapeError(f"{where}: logits must be a Tensor of shape (B, T, V), "
                            f"not {logits.shape if isinstance(logits, mt.Tensor) else argcheck.describe(logits)}")
    if not isinstance(ids, mt.Tensor) or ids.ndim != 2 or ids.dtype.kind not in 'iu':
        raise TypeError(f"{where}: {ids_name} must be an integer Tensor of shape (B, T), "
                        f"not {ids.dtype if isinstance(ids, mt.Tensor) else argcheck.describe(ids)}"
                        f"{' of shape ' + str(ids.shape) if isinstance(ids, mt.Tensor) else ''}")
    argcheck.integer(ignore_index, where, ignore_name, allow_none=True)


def next_token_loss(logits, ids, ignore_index=None):
    """Causal LM loss: logits (B, T, V) from model(ids), ids (B, T)."""
    _check('next_token_loss', logits, ids, 'ids', ignore_index, 'ignore_index')
    if logits.shape[:2] != tuple(ids.shape):
        raise mt.ShapeError(f"next_token_loss: logits {logits.shape} and ids {tuple(ids.shape)} must share (B, T)")
    if ids.shape[1] < 2:
        raise mt.ShapeError(f"next_token_loss: needs sequences of at least 2 tokens, got shape {tuple(ids.shape)}")
    return mt.cross_entropy(logits[:, :-1], ids[:, 1:], ignore_index=ignore_index)


def seq2seq_loss(logits, tgt_out, pad_id=None):
    """Encoder-decoder loss: logits (B, T, V) for decoder input shift_right(tgt_out), tgt_out (B, T)."""
    _check('seq2seq_loss', logits, tgt_out, 'tgt_out', pad_id, 'pad_id')
    if logits.shape[:2] != tuple(tgt_out.shape):
        raise mt.ShapeError(f"seq2seq_loss: logits {logits.shape} and tgt_out {tuple(tgt_out.shape)} must share (B, T)")
    return mt.cross_entropy(logits, tgt_out, ignore_index=pad_id)


def shift_right(tgt, bos_id):
    """The decoder input for teacher forcing: [bos, y_1, ..., y_{T-1}]  (B, T) -> (B, T)."""
    if not isinstance(tgt, mt.Tensor) or tgt.ndim != 2 or tgt.dtype.kind not in 'iu':
        raise TypeError(f"shift_right: tgt must be an integer Tensor of shape (B, T), not {argcheck.describe(tgt)}")
    bos_id = argcheck.integer(bos_id, 'shift_right', 'bos_id', min=0)
    bos = mt.full((tgt.shape[0], 1), bos_id, dtype=tgt.dtype, device=tgt.device)
    return mt.concatenate([bos, tgt[:, :-1]], axis=1)
