"""Attention's mask and softmax: P = softmax(where(mask, S, -inf)), two ops.

    masked = where(mask, S, -inf)     Where:    masked keys get -inf, hence weight exactly 0
    P = softmax(masked)               Softmax:  dL/dS = P * (G - sum(G * P)), 0 where masked

transformer.attention.attend calls masked_softmax; with the fused layer on it is one op,
FusedMaskedSoftmax (microtensor/fused/softmax.py), with the same weights (to float32 rounding).

A query row whose mask allows no key at all has no distribution to follow: softmax of a row of
-inf is 0/0 = nan.  Both paths define it as weights 0 (that query's attention output is 0) and
gradient 0 there, so such a row can be left out of the loss without NaN reaching the scores.
"""
import math

from .. import backend, promotion
from ..convert import param_array, tensor_arg
from ..tensor import Tensor
from ..fused import switch as fused_switch
from ..fused.softmax import FusedMaskedSoftmax
from .nn import softmax
from .select import where
from ..argcheck import DTypeError


def masked_softmax(scores, mask=None):
    """softmax(where(mask, scores, -inf), axis=-1); mask: a boolean Tensor or array on the scores'
    device (checked as every parameter array is: convert.param_array), broadcastable to the
    scores, True = may attend, or None (no mask).  A query row with no key allowed gets weights
    0 and gradient 0 (not nan), in the textbook and the fused layer alike.  float16 scores are
    computed in float32 and the weights returned in float16, as softmax's."""
    scores = promotion.floating(tensor_arg(scores, 'masked_softmax'))
    if mask is not None:
        mask = param_array(mask, scores, 'masked_softmax', 'mask')
        if mask.dtype != bool:
            raise DTypeError(f"masked_softmax: the mask must be boolean (True = may attend), not {mask.dtype}; "
                            "e.g. mask != 0")
        if not backend.broadcasts_to(mask.shape, scores.shape):
            raise ValueError(f"masked_softmax: a mask of shape {mask.shape} does not broadcast to the scores' "
                             f"shape {scores.shape}")
    if fused_switch.enabled:
        return promotion.widened(lambda s: FusedMaskedSoftmax.apply(s, mask=mask), scores)
    if mask is None:
        return softmax(scores, axis=-1)
    has_key = mask.any(axis=-1, keepdims=True)
    if bool(has_key.all()):
        return softmax(where(mask, scores, -math.inf), axis=-1)
    # a row without a key: the softmax of its unmasked scores (finite), times 0
    weights = softmax(where(mask | ~has_key, scores, -math.inf), axis=-1)
    return weights * Tensor._wrap(has_key.astype(weights.dtype))
