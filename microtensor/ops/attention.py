"""Attention: its mask and softmax, P = softmax(where(mask, S, -inf)), two ops, and the whole of
scaled dot-product attention, softmax(Q K^T * scale + mask) V, from the textbook ops.

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
from .nn import dropout, softmax
from .select import where
from ..argcheck import DTypeError, ShapeError


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
            raise ShapeError(f"masked_softmax: a mask of shape {mask.shape} does not broadcast to the scores' "
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


def attention(q, k, v, mask=None, scale=None, bias=None, dropout_p=0.0):
    """The steps of scaled dot-product attention, each an op the viewer shows:

        S = (Q * scale) @ K^T  (+ bias)       scores (..., T_q, T_k); scale None: 1/sqrt(d_k)
        P = masked_softmax(S, mask)           mask: bool, True = may attend, or None
        out = dropout(P, dropout_p) @ V       (..., T_q, d_v)

    (Q * scale before the product: T_k / d_k times fewer multiplications than scaling S.)
    Returns (out, P, S): scaled_dot_product_attention keeps out, transformer/'s attention all three."""
    if min(q.ndim, k.ndim, v.ndim) < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "(need q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v))")
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q * scale) @ k.swapaxes(-1, -2)
    if bias is not None:
        scores = scores + bias
    weights = masked_softmax(scores, mask)
    return dropout(weights, dropout_p) @ v, weights, scores


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """PyTorch's F.scaled_dot_product_attention: softmax(Q K^T * scale + mask) V, the output only.

    query (..., L, E), key (..., S, E), value (..., S, Ev).  attn_mask: bool (True = may attend) or
    float (added to the scores), broadcastable to (..., L, S); is_causal: query i sees keys 0..i (the
    lower triangle of (L, S)); the two together are refused, as in PyTorch.  A query with no key left
    gets output 0, as PyTorch's.  dropout_p drops attention weights whenever it is > 0 (pass 0.0 in
    evaluation, as with PyTorch's).  enable_gqa: key and value with fewer heads (dim -3), each serving
    a group of consecutive query heads."""
    q, k, v = (tensor_arg(t, 'scaled_dot_product_attention', name)
               for t, name in ((query, 'query'), (key, 'key'), (value, 'value')))
    if not (backend.float_dtype(q.dtype) and q.dtype == k.dtype == v.dtype):
        raise DTypeError(f"scaled_dot_product_attention: query, key and value must be of one floating-point dtype, "
                         f"as in PyTorch, not {q.dtype}, {k.dtype} and {v.dtype}")
    if attn_mask is not None and is_causal:
        raise RuntimeError("scaled_dot_product_attention: attn_mask and is_causal=True together: give one, as in "
                           "PyTorch (is_causal is the lower-triangular mask)")
    if enable_gqa and min(q.ndim, k.ndim) >= 3 and k.shape[-3] != q.shape[-3]:
        k, v = _repeat_heads(k, q.shape[-3]), _repeat_heads(v, q.shape[-3])
    L, S = q.shape[-2] if q.ndim >= 2 else 0, k.shape[-2] if k.ndim >= 2 else 0
    mask, bias = None, None
    if is_causal:
        mask = backend.array_module(q.data).tril(backend.array_module(q.data).ones((L, S), dtype=bool))
    elif attn_mask is not None:
        attn_mask = tensor_arg(attn_mask, 'scaled_dot_product_attention', 'attn_mask')
        if attn_mask.dtype == bool:
            mask = attn_mask
        else:  # added to the scores; a key at -inf is masked instead, so that a row of them gives 0, not 0/0
            mask = (attn_mask > -math.inf).data
            bias = attn_mask.masked_fill(~mask, 0.0)
    return attention(q, k, v, mask, scale, bias, dropout_p)[0]


def _repeat_heads(t, heads):
    """t (..., H_kv, S, E) with each head repeated for its group: (..., heads, S, E), heads a multiple of H_kv."""
    h = t.shape[-3]
    if heads % h:
        raise ShapeError(f"scaled_dot_product_attention: {heads} query heads cannot be shared by {h} key/value heads "
                         "(enable_gqa needs a whole number of query heads per key/value head)")
    grouped = t.expand_dims(-3).broadcast_to(t.shape[:-2] + (heads // h,) + t.shape[-2:])
    return grouped.reshape(t.shape[:-3] + (heads,) + t.shape[-2:])
