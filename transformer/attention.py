"""Attention: every query looks at every key and takes a weighted mix of the values.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    Q: (..., T_q, d_k)   "what am I looking for?"     scores S = Q K^T: (..., T_q, T_k)
    K: (..., T_k, d_k)   "what do I contain?"         weights A = softmax(S / sqrt(d_k)), rows sum to 1
    V: (..., T_k, d_v)   "what do I pass on?"         output A V: (..., T_q, d_v)

Why / sqrt(d_k): for q, k with independent unit-variance entries, q . k is a sum of
d_k unit-variance terms, so Var(q . k) = d_k.  Large scores push the softmax towards
one-hot, where its Jacobian diag(p) - p p^T (the p(1-p) terms) vanishes and no gradient
gets through.  Dividing by sqrt(d_k) brings the variance back to 1.

Multi-head attention (d_model = h * d_k): each head attends in its own d_k-dim subspace,

    head_i = Attention(X W_i^Q, X W_i^K, X W_i^V)
    MultiHead(X) = Concat(head_1, ..., head_h) W^O

computed for all heads at once: Q = X W_Q (B, T, d_model) is split into (B, h, T, d_k).
Grouped-query attention (GQA): only n_kv_heads heads of K and V, each shared by
h / n_kv_heads query heads; the KV cache shrinks by that factor (n_kv_heads = 1 is MQA).
shared_qk=True uses one projection for both (W_K = W_Q, so Q K^T is symmetric: the
articles' "shared projection"); scale='learned' learns one log-scale per head, starting
at log(1/sqrt(d_k)).  Multi-head Latent Attention (low-rank K, V) is in mla.py.
"""
import math

import microtensor as mt
from microtensor import argcheck, nn
from microtensor.argcheck import ShapeError
from microtensor.ops.attention import attention

from . import checks
from .projection import Projection
from .positional import RelativePositionBias, RotaryEmbedding, alibi_bias


def scaled_dot_product_attention(q, k, v, mask=None, scale=None, bias=None, dropout=0.0, training=False):
    """softmax(q k^T * scale + bias, masked) v  ->  (output (..., T_q, d_v), weights (..., T_q, T_k)).

    scale: None means 1/sqrt(d_k); a number overrides it (scale=1.0: no scaling, for the
    saturation lesson).  bias: added to the scaled scores (ALiBi), broadcastable to them.
    mask: bool, True = may attend, broadcastable to the scores (..., T_q, T_k); masked keys
    get -inf, hence weight exactly 0.  A query row with no allowed key is an error (its
    softmax would be 0/0).  dropout: on the weights when training (the returned weights
    are the softmax before dropout).
    """
    output, weights, _ = attend(q, k, v, mask, scale, bias, dropout, training)
    return output, weights


def attend(q, k, v, mask=None, scale=None, bias=None, dropout=0.0, training=False):
    """scaled_dot_product_attention that also returns the scores fed to the softmax (before the mask):
    microtensor's attention() (microtensor/ops/attention.py, which F.scaled_dot_product_attention runs too),
    after the checks of a boolean mask.

    The mask and the softmax are mt.masked_softmax: Where + Softmax, the ops a learner steps
    through, or one op, FusedMaskedSoftmax, with the fused layer on (mt.fused()).
    """
    if mask is not None:
        _check_mask(mask, q, k)
    return attention(q, k, v, mask, scale, bias, dropout if training else 0.0)


def _check_mask(mask, q, k):
    if not isinstance(mask, mt.Tensor) or mask.dtype != mt.bool_:
        raise TypeError(f"attention: the mask must be a boolean Tensor (True = may attend), "
                        f"not {getattr(mask, 'dtype', type(mask).__name__)}")
    try:
        scores_shape = mt.backend.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    except (ValueError, IndexError):  # q and k do not fit: attention() says so
        return mask
    if not mt.backend.broadcasts_to(mask.shape, scores_shape):
        raise ShapeError(f"attention: a mask of shape {mask.shape} does not broadcast to the scores' shape "
                         f"{tuple(scores_shape)} (B, h, T_q, T_k); use e.g. causal_mask(T_q, T_k) -> (T_q, T_k) "
                         "or padding_mask(ids, pad_id) -> (B, 1, 1, T_k)")
    if (mask.sum(axis=-1) == 0).any():
        raise ValueError("attention: the mask leaves a query with no key to attend to (a row of all False, "
                         "e.g. a sequence made only of padding); its softmax would be 0/0")
    return mask


def split_heads(X, n):
    """(B, T, n * d) -> (B, n, T, d): head i owns columns i*d .. (i+1)*d - 1."""
    B, T, width = X.shape
    return X.reshape(B, T, n, width // n).swapaxes(1, 2)


def merge_heads(heads):
    """(B, n, T, d) -> (B, T, n * d): Concat(head_1, ..., head_n), split_heads undone."""
    B, n, T, d = heads.shape
    return heads.swapaxes(1, 2).reshape(B, T, n * d)


class KVCache:
    """The keys and values of the positions seen so far, for incremental decoding.

    Self-attention: each step appends this step's K, V (B, n_kv_heads, T_new, d_k) and
    attends over all of them, so a generated token costs one row of attention instead of
    recomputing the whole prefix.  Cross-attention: K, V of the fixed memory are stored
    on the first step and reused.  `length` is the number of positions cached (the next
    token's position, for RoPE, ALiBi and causal_mask(T, offset=cache.length)).
    """

    def __init__(self):
        self.K = self.V = None

    @property
    def length(self):
        """How many positions the cache holds."""
        return 0 if self.K is None else self.K.shape[-2]

    @staticmethod
    def check(cache, B, where):
        """An attention's `cache` argument: None, or a KVCache for a batch of B sequences."""
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"{where}: cache must be a KVCache, not {argcheck.describe(cache)}")
            cache.check_batch(B, where)

    def check_batch(self, B, where, name='cache (a KVCache)'):
        """A cache holds the keys of one batch of B sequences: refuse another batch size (`name`
        says which cache, e.g. 'cache[1]' for layer 1's)."""
        if self.K is not None and self.K.shape[0] != B:
            raise ShapeError(f"{where}: {name} holds the keys of a batch of {self.K.shape[0]}, but this input is a "
                             f"batch of {B}; a cache serves the batch it was filled with: make a new one "
                             "(model.new_cache(), or KVCache()) for another batch size")

    def update(self, K, V):
        """Append K, V along the time axis; return the full K, V."""
        if self.K is not None:
            K, V = mt.concatenate([self.K, K], axis=-2), mt.concatenate([self.V, V], axis=-2)
        self.K, self.V = K, V
        return K, V


class MultiHeadAttention(nn.Module):
    """forward(x (B, T_q, d_model), context=None, mask=None, cache=None) -> (B, T_q, d_model).

    Self-attention when context is None; cross-attention (Q from x, K and V from context
    (B, T_k, d_model)) otherwise.  rope=True rotates Q and K by position (RoPE); alibi=True
    adds ALiBi's distance bias to the scores, relative=True T5's learned bias per bucket of
    offsets (RelativePositionBias); all only in self-attention (in cross-attention queries
    and keys come from two different sequences).
    After each forward: last_scores (scaled scores + bias, before mask and softmax) and
    last_weights (the softmax), both (B, h, T_q, T_k) graph tensors, for inspection.
    """

    def __init__(self, d_model, n_heads, n_kv_heads=None, bias=True, dropout=0.0, rope=False, alibi=False,
                 scale=None, shared_qk=False, relative=False):
        super().__init__()
        d_model, n_heads, n_kv_heads = checks.heads('MultiHeadAttention', d_model, n_heads, n_kv_heads)
        bias, dropout, rope, alibi, relative, shared_qk = checks.arguments(
            'MultiHeadAttention', bias=bias, dropout=dropout, rope=rope, alibi=alibi, relative=relative,
            shared_qk=shared_qk)
        if isinstance(scale, str):
            if scale != 'learned':
                raise ValueError(f"MultiHeadAttention: scale must be None (1/sqrt(d_k)), a number or 'learned', "
                                 f"not {scale!r}")
        else:
            scale = checks.arguments('MultiHeadAttention', scale=scale)
        if shared_qk and n_kv_heads != n_heads:
            raise ValueError(f"MultiHeadAttention: shared_qk=True needs n_kv_heads == n_heads (K = Q), "
                             f"got n_heads={n_heads}, n_kv_heads={n_kv_heads}")
        if alibi and relative:
            raise ValueError("MultiHeadAttention: alibi=True and relative=True both add a distance bias "
                             "to the scores; choose one")
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_k = d_model // n_heads
        self.dropout, self.scale, self.alibi = dropout, scale, alibi
        self.W_Q = Projection(d_model, d_model, bias=bias)
        self.W_K = self.W_Q if shared_qk else Projection(d_model, n_kv_heads * self.d_k, bias=bias)
        self.W_V = Projection(d_model, n_kv_heads * self.d_k, bias=bias)
        self.W_O = Projection(d_model, d_model, bias=bias)
        self.rope = RotaryEmbedding(self.d_k) if rope else None
        self.log_scale = learned_log_scale(n_heads, self.d_k) if scale == 'learned' else None
        self.relative_bias = RelativePositionBias(n_heads) if relative else None
        self.last_scores = self.last_weights = None

    def forward(self, x, context=None, mask=None, cache=None):
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ShapeError(f"MultiHeadAttention(d_model={self.d_model}): expected x of shape "
                             f"(B, T, {self.d_model}), got {x.shape}")
        B, T_q, _ = x.shape
        self_attention = context is None
        if not self_attention and (context.ndim != 3 or context.shape[0] != B or context.shape[-1] != self.d_model):
            raise ShapeError(f"MultiHeadAttention(d_model={self.d_model}): expected context of shape "
                             f"({B}, T_k, {self.d_model}) (x's batch of {B}), got {context.shape}")
        KVCache.check(cache, B, 'MultiHeadAttention')
        offset = cache.length if cache is not None and self_attention else 0  # position of x's first row

        Q = split_heads(self.W_Q(x), self.n_heads)                     # (B, h, T_q, d_k)
        if not self_attention and cache is not None and cache.length:
            K, V = cache.K, cache.V                                           # the memory's, from step one
        else:
            source = x if self_attention else context
            K = split_heads(self.W_K(source), self.n_kv_heads)          # (B, h_kv, T_new, d_k)
            V = split_heads(self.W_V(source), self.n_kv_heads)
            if self.rope is not None and self_attention:
                Q, K = self.rope.rotate(Q, offset), self.rope.rotate(K, offset)
            if cache is not None:
                K, V = cache.update(K, V)                                     # (B, h_kv, T_k, d_k)
        K, V = self._repeat_kv(K), self._repeat_kv(V)                         # (B, h, T_k, d_k)

        bias = None
        if self.alibi and self_attention:
            bias = alibi_bias(self.n_heads, T_q, K.shape[-2], offset, dtype=x.dtype, device=x.device)
        elif self.relative_bias is not None and self_attention:
            bias = self.relative_bias(T_q, K.shape[-2], offset)
        heads, self.last_weights, self.last_scores = attend(
            Q, K, V, mask, self.scale if self.log_scale is None else self.log_scale.exp(), bias, self.dropout,
            self.training)                # (B, h, T_q, d_k)
        return self.W_O(merge_heads(heads))                                   # Concat(head_1, ..., head_h) W_O

    def _repeat_kv(self, X):
        """GQA: (B, h_kv, T, d_k) -> (B, h, T, d_k), query head i using K/V head i // (h / h_kv)."""
        group = self.n_heads // self.n_kv_heads
        if group == 1:
            return X
        B, h_kv, T, d_k = X.shape
        return X.reshape(B, h_kv, 1, T, d_k).broadcast_to((B, h_kv, group, T, d_k)).reshape(B, self.n_heads, T, d_k)

    def extra_repr(self):
        extras = [f"d_model={self.d_model}", f"n_heads={self.n_heads}", f"d_k={self.d_k}"]
        if self.n_kv_heads != self.n_heads:
            extras.append(f"n_kv_heads={self.n_kv_heads}")
        extras += [name for name, on in (('rope', self.rope is not None), ('alibi', self.alibi),
                                         ('shared_qk', self.W_K is self.W_Q),
                                         ("scale='learned'", self.log_scale is not None)) if on]
        return ', '.join(extras)


def learned_log_scale(n_heads, d_k):
    """A Parameter (n_heads, 1, 1) holding log(scale) per head, starting at log(1/sqrt(d_k)).

    The scores become q k^T * exp(log_scale): the log keeps the scale positive, and the
    (h, 1, 1) shape broadcasts over (B, h, T_q, d_k).  The attention-atom article's
    thought experiment ("what if sqrt(d_k) were learnable?"), as a module option.
    """
    return nn.Parameter(mt.full((n_heads, 1, 1), -0.5 * math.log(d_k)))
