"""Multi-head Latent Attention (MLA, DeepSeek-V2): cache a small latent c, not K and V.

The attention-atom article's design table, last row, "low-rank projection: MLA ... compress
K/V into a latent space, cache only the compressed version, rebuild at run time".  Per
token x (d_model), with h heads of size d_h:

    c     = x W_DKV                    (d_c)          the latent: the only thing cached for K and V
    k_C   = c W_UK,  v = c W_UV         (h * d_h)      K and V re-expanded from c, every step
    k_R   = RoPE(x W_KR)               (d_rope)       one position-carrying key shared by all heads (cached)
    c_Q   = x W_DQ                     (d_cq)         queries compressed too (optional; never cached)
    q_C   = c_Q W_UQ,  q_R = RoPE(c_Q W_QR)            (h * d_h), (h * d_rope)
    head i: softmax([q_C,i ; q_R,i] [k_C,i ; k_R]^T / sqrt(d_h + d_rope)) v_i
    output  = Concat(heads) W_O

Why the decoupled k_R: RoPE rotates by position, and a rotation between c and W_UK would
stop W_UK from being folded into the queries at inference (DeepSeek-V2 §2.1.3), so the
position goes into a separate small key instead.  Cached per token and layer:
d_c + d_rope numbers, against 2 * h * d_h for MHA (DeepSeek-V2: 512 + 64 = 576 vs
2 * 128 * 128 = 32768).

Simplifications, to stay readable: K and V are re-expanded from c at every step (the
"absorbed" form that multiplies W_UK into the queries instead is an inference-speed
trick with the same result); DeepSeek-V2's RMSNorm on c and c_Q and its YaRN scaling of
RoPE are left out.  Self-attention only.

    mla = MultiHeadLatentAttention(d_model=64, n_heads=4, d_c=16)
    cache = KVCache()                  # MLA keeps c where MHA keeps K, and k_R where MHA keeps V
    y = mla(x, mask=causal_mask(T), cache=cache)
"""
import math

import microtensor as mt
from microtensor import nn

from . import checks
from .projection import Projection
from .attention import KVCache, attend, merge_heads, split_heads
from .positional import RotaryEmbedding


class MultiHeadLatentAttention(nn.Module):
    """forward(x (B, T, d_model), mask=None, cache=None) -> (B, T, d_model).

    d_c: the latent's size; d_head: per-head size (default d_model / n_heads); d_rope: the
    decoupled RoPE key/query size per head (default d_head / 2, as DeepSeek-V2; even);
    d_cq: the query latent's size (None: queries straight from x, the article's "Q stays
    full").  cache: a KVCache (model.new_cache() and generate() work unchanged); MLA
    stores c (B, T, d_c) in its K slot and k_R (B, T, d_rope) in its V slot.
    last_scores / last_weights as in MultiHeadAttention.
    """

    def __init__(self, d_model, n_heads, d_c, d_rope=None, d_head=None, d_cq=None, bias=False, dropout=0.0):
        super().__init__()
        d_model, n_heads, d_c, d_rope, d_head, d_cq, bias, dropout = checks.arguments(
            'MultiHeadLatentAttention', d_model=d_model, n_heads=n_heads, d_c=d_c, d_rope=d_rope, d_head=d_head,
            d_cq=d_cq, bias=bias, dropout=dropout)
        d_head = d_model // n_heads if d_head is None else d_head
        d_rope = d_head // 2 if d_rope is None else d_rope
        if d_head < 1 or d_rope < 2 or d_rope % 2:
            raise ValueError(f"MultiHeadLatentAttention: need d_head >= 1 and an even d_rope >= 2 "
                             f"(got d_head={d_head}, d_rope={d_rope}; d_head defaults to d_model // n_heads)")
        self.d_model, self.n_heads, self.d_c, self.d_rope, self.d_head, self.d_cq = (
            d_model, n_heads, d_c, d_rope, d_head, d_cq)
        self.dropout = dropout
        self.W_DQ = None if d_cq is None else Projection(d_model, d_cq, bias=bias)
        d_q_in = d_model if d_cq is None else d_cq
        self.W_UQ = Projection(d_q_in, n_heads * d_head, bias=bias)
        self.W_QR = Projection(d_q_in, n_heads * d_rope, bias=bias)
        self.W_DKV = Projection(d_model, d_c, bias=bias)
        self.W_UK = Projection(d_c, n_heads * d_head, bias=bias)
        self.W_UV = Projection(d_c, n_heads * d_head, bias=bias)
        self.W_KR = Projection(d_model, d_rope, bias=bias)
        self.W_O = Projection(n_heads * d_head, d_model, bias=bias)
        self.rope = RotaryEmbedding(d_rope)
        self.last_scores = self.last_weights = None

    def forward(self, x, context=None, mask=None, cache=None):
        if context is not None:
            raise ValueError("MultiHeadLatentAttention: self-attention only (context must be None)")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise mt.ShapeError(f"MultiHeadLatentAttention(d_model={self.d_model}): expected x of shape "
                                f"(B, T, {self.d_model}), got {x.shape}")
        B, T, _ = x.shape
        KVCache.check(cache, B, 'MultiHeadLatentAttention')
        offset = 0 if cache is None else cache.length        # position of x's first row

        c_Q = x if self.W_DQ is None else self.W_DQ(x)
        q_C = split_heads(self.W_UQ(c_Q), self.n_heads)                            # (B, h, T, d_h)
        q_R = self.rope.rotate(split_heads(self.W_QR(c_Q), self.n_heads), offset)  # (B, h, T, d_rope)

        c = self.W_DKV(x)                                                               # (B, T, d_c)
        k_R = self.rope.rotate(self.W_KR(x), offset)                                    # (B, T, d_rope)
        if cache is not None:
            c, k_R = cache.update(c, k_R)                                               # all T_k positions
        T_k = c.shape[1]
        k_C = split_heads(self.W_UK(c), self.n_heads)                              # (B, h, T_k, d_h)
        V = split_heads(self.W_UV(c), self.n_heads)
        k_R = k_R.reshape(B, 1, T_k, self.d_rope).broadcast_to((B, self.n_heads, T_k, self.d_rope))

        Q = mt.concatenate([q_C, q_R], axis=-1)                                          # (B, h, T, d_h + d_rope)
        K = mt.concatenate([k_C, k_R], axis=-1)
        heads, self.last_weights, self.last_scores = attend(
            Q, K, V, mask, 1 / math.sqrt(self.d_head + self.d_rope), None, self.dropout, self.training)
        return self.W_O(merge_heads(heads))

    def extra_repr(self):
        q = '' if self.d_cq is None else f", d_cq={self.d_cq}"
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}, d_c={self.d_c}, " \
               f"d_rope={self.d_rope}{q}"


def use_latent_attention(model, d_c, d_rope=None, d_cq=None):
    """Replace every self-attention of a decoder-only model (GPT) by MLA of the same width, in place.

    The new modules start from their own (PyTorch-style) initialisation; the model's KV cache
    (model.new_cache()) then holds each layer's c and k_R.  Returns the model.
    """
    for layer in model.layers:
        old = layer.self_attn
        layer.self_attn = MultiHeadLatentAttention(old.d_model, old.n_heads, d_c, d_rope,
                                                   d_cq=d_cq).to(old.W_O.weight.device)
    return model
