"""Masked-language modelling (BERT): hide some tokens, predict them from both sides.

The encoder-only model sees the whole sentence at once (no causal mask), so it cannot be
trained to predict "the next token": it would simply look at it.  BERT instead corrupts
the input and asks for the originals back (Devlin et al. 2018):

    choose 15% of the positions (each position independently, probability p)
    of the chosen:  80% -> [MASK]            the model must infer the token from context
                    10% -> a random token    it cannot trust a token just because it is not [MASK]
                    10% -> left unchanged    the same, and the input it sees at inference has no [MASK]
    loss = cross-entropy at the chosen positions only (labels = IGNORE elsewhere)

    inputs, labels = mlm_mask(ids, mask_id=MASK, vocab_size=V)
    logits = model.masked_token_logits(inputs)          (B, T, vocab)
    loss = mlm_loss(logits, labels)

Only ~15% of the positions give a training signal, against every position in a causal
LM (the architecture article's point on why CLM trains more efficiently).
"""
import microtensor as mt
from microtensor import argcheck

IGNORE = -100  # the label of a position that is not scored (as PyTorch's ignore_index)


def mlm_mask(ids, mask_id, vocab_size, p=0.15, mask_share=0.8, random_share=0.1, pad_id=None):
    """BERT's corruption of ids (B, T) -> (inputs (B, T), labels (B, T)).

    labels: the original token where a position was chosen, IGNORE elsewhere.
    inputs: ids with the chosen positions replaced: mask_id with probability mask_share,
    a uniform random token from 0 .. vocab_size - 1 with probability random_share, left
    as they are otherwise.  Keep [MASK] and the other special ids outside 0 .. vocab_size - 1
    so that a random replacement is an ordinary token.  pad_id positions are never chosen.
    Randomness: mt's generator (mt.manual_seed).  Both come back as int64, whatever the ids'
    dtype (as PyTorch's class targets are): IGNORE and mask_id may not fit in uint8 ids.
    """
    if not isinstance(ids, mt.Tensor) or ids.dtype.kind not in 'iu' or ids.ndim != 2:
        raise TypeError(f"mlm_mask: ids must be a (B, T) integer Tensor, got "
                        f"{getattr(ids, 'dtype', type(ids).__name__)} of shape {getattr(ids, 'shape', None)}")
    mask_id = argcheck.integer(mask_id, 'mlm_mask', 'mask_id', min=0)
    vocab_size = argcheck.integer(vocab_size, 'mlm_mask', 'vocab_size', min=1)  # replacements: 0 .. vocab_size - 1
    pad_id = argcheck.integer(pad_id, 'mlm_mask', 'pad_id', allow_none=True)
    p, mask_share, random_share = (argcheck.number(value, 'mlm_mask', name, min=0, max=1) for name, value in
                                   (('p', p), ('mask_share', mask_share), ('random_share', random_share)))
    if mask_share + random_share > 1:
        raise ValueError(f"mlm_mask: need mask_share + random_share <= 1 (the rest is left unchanged), got "
                         f"mask_share={mask_share}, random_share={random_share}")
    shape, device = ids.shape, ids.device
    ids = ids.to(mt.int64)  # IGNORE (-100) and mask_id need not fit the ids' own dtype (uint8, uint16)
    chosen = mt.rand(*shape, device=device) < p
    if pad_id is not None:
        chosen = chosen & (ids != pad_id)
    action = mt.rand(*shape, device=device)               # one draw decides [MASK] / random / kept
    to_mask = chosen & (action < mask_share)
    to_random = chosen & (action >= mask_share) & (action < mask_share + random_share)
    random_ids = mt.randint(0, vocab_size, shape, device=device)
    inputs = mt.where(to_mask, mask_id, mt.where(to_random, random_ids, ids))
    labels = mt.where(chosen, ids, IGNORE)
    return inputs, labels


def mlm_loss(logits, labels):
    """Mean cross-entropy over the chosen positions: logits (B, T, vocab), labels (B, T) from mlm_mask."""
    if logits.shape[:-1] != tuple(labels.shape):
        raise mt.ShapeError(f"mlm_loss: logits {logits.shape} and labels {tuple(labels.shape)} must share (B, T)")
    if not (labels != IGNORE).any():
        raise ValueError("mlm_loss: no position was chosen in this batch (every label is IGNORE); "
                         "use a larger batch or a larger p")
    return mt.cross_entropy(logits, labels, ignore_index=IGNORE)


def masked_accuracy(logits, labels):
    """The fraction of chosen positions whose argmax prediction is the original token (a float)."""
    chosen = labels != IGNORE
    n = chosen.sum().item()
    if n == 0:
        raise ValueError("masked_accuracy: no position was chosen (every label is IGNORE)")
    hits = (logits.argmax(dim=-1) == labels) & chosen
    return hits.sum().item() / n
