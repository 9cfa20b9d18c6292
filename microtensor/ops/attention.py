"""Attention's mask and softmax: P = softmax(where(mask, S, -inf)), two ops.

    masked = where(mask, S, -inf)     Where:    masked keys get -inf, hence weight exactly 0
    P = softmax(masked)               Softmax:  dL/dS = P * (G - sum(G * P)), 0 where masked

transformer.attention.attend calls masked_softmax; with the fused layer on it is one op,
FusedMaskedSoftmax (microtensor/fused/softmax.py), with the same weights (to float32 rounding).
"""
import math

from .. import backend, promotion
from ..convert import param_array, tensor_arg
from ..fused import switch as fused_switch
from ..fused.softmax import FusedMaskedSoftmax
from .nn import softmax
from .select import where


def masked_softmax(scores, mask=None):
    """softmax(where(mask, scores, -inf), axis=-1); mask: a boolean Tensor or array on the scores'
    device (checked as every parameter array is: convert.param_array), broadcastable to the
    scores, True = may attend, or None (no mask).  Every query row must keep at least one key."""
    scores = promotion.floating(tensor_arg(scores, 'masked_softmax'))
    if mask is not None:
        mask = param_array(mask, scores, 'masked_softmax', 'mask')
        if mask.dtype != bool:
            raise TypeError(f"masked_softmax: the mask must be boolean (True = may attend), not {mask.dtype}; "
                            "e.g. mask != 0")
        if not backend.broadcasts_to(mask.shape, scores.shape):
            raise ValueError(f"masked_softmax: a mask of shape {mask.shape} does not broadcast to the scores' "
                             f"shape {scores.shape}")
    if fused_switch.enabled:
        return FusedMaskedSoftmax.apply(scores, mask=mask)
    masked = scores if mask is None else where(mask, scores, -math.inf)
    return softmax(masked, axis=-1)
