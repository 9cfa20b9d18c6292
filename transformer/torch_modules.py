"""The transformer/ models written in plain PyTorch: what transformer.to_torch(model) builds.

Every class here mirrors the microtensor class of the same name, with the same attribute
names, so a parameter has the same dotted path in both engines ('decoder.layers.0.self_attn.W_Q');
only the last part of some names and the layout of a projection's weight differ (the table in
torch_bridge.py).  The formulas are those of the microtensor modules (their docstrings
explain them); where PyTorch has the piece built in (nn.Linear, nn.LayerNorm, nn.RMSNorm,
F.gelu) it is used.  Each class is built from the settings of its microtensor twin by
to_torch; `config` on the models and attention modules keeps the microtensor constructor's
arguments, so that from_torch can rebuild the microtensor model.

This file imports torch: transformer/ imports it only when to_torch or from_torch runs.
A model here has no KV cache: forward takes whole sequences (PyTorch's own tools, e.g.
torch.compile or F.scaled_dot_product_attention, are the way on from here).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention import merge_heads, split_heads  # plain reshapes: they work on torch tensors too
from .positional import alibi_slopes, relative_position_bucket


def causal_mask(T, device=None):
    """(T, T) bool, True where query t may look at key s: s <= t."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(ids, pad_id):
    """(B, 1, 1, T) bool, False at padding tokens."""
    return (ids != pad_id)[:, None, None, :]


def sinusoid_angles(T, dim, base=10000.0, device=None):
    """(T, dim/2) angles pos * base^(-2i/dim), in float64 (the sin/cos of large angles need the digits)."""
    position = torch.arange(T, dtype=torch.float64, device=device)[:, None]
    inv_freq = (torch.arange(0, dim, 2, dtype=torch.float64, device=device) * (-math.log(base) / dim)).exp()
    return position * inv_freq


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model, scale):
        super().__init__()
        self.d_model, self.scale = d_model, scale
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))

    def forward(self, ids):
        X = F.embedding(ids, self.weight)
        return X * math.sqrt(self.d_model) if self.scale else X

    def extra_repr(self):
        return f"vocab_size={self.weight.shape[0]}, d_model={self.d_model}, scale={self.scale}"


class SinusoidalPositionalEncoding(nn.Module):
    """x + PE[:T], PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...)."""

    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model

    def forward(self, x):
        T = x.shape[-2]
        angles = sinusoid_angles(T, self.d_model, device=x.device)
        return x + torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(T, self.d_model).to(x.dtype)

    def extra_repr(self):
        return f"d_model={self.d_model}"


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(max_len, d_model))

    def forward(self, x):
        T, max_len = x.shape[-2], self.weight.shape[0]
        if T > max_len:
            raise ValueError(f"LearnedPositionalEmbedding: a sequence of {T} tokens, but the learned position "
                             f"table only has max_len={max_len} rows")
        return x + self.weight[:T]

    def extra_repr(self):
        return f"max_len={self.weight.shape[0]}, d_model={self.weight.shape[1]}"


class Embed(nn.Module):
    """x = TokenEmbedding(ids) + positions (sinusoidal or learned; RoPE and ALiBi act in attention), dropout."""

    def __init__(self, tok, pos, dropout):
        super().__init__()
        self.tok, self.pos, self.dropout = tok, pos, dropout

    def forward(self, ids):
        x = self.tok(ids)
        if self.pos is not None:
            x = self.pos(x)
        return F.dropout(x, self.dropout, self.training)

    def extra_repr(self):
        return f"dropout={self.dropout}"


class RotaryEmbedding(nn.Module):
    """RoPE: each pair (x_2i, x_2i+1) at position m rotated by m * base^(-2i/d_k)."""

    def __init__(self, d_k, base):
        super().__init__()
        self.d_k, self.base = d_k, base

    def forward(self, x):
        *lead, T, d_k = x.shape
        angles = sinusoid_angles(T, d_k, self.base, device=x.device)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        pairs = x.reshape(*lead, T, d_k // 2, 2)
        x_even, x_odd = pairs[..., 0], pairs[..., 1]
        return torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1).reshape(x.shape)

    def extra_repr(self):
        return f"d_k={self.d_k}, base={self.base}"


class RelativePositionBias(nn.Module):
    """T5's bias[h, i, j] = weight[bucket(j - i), h], buckets as transformer.relative_position_bucket."""

    def __init__(self, n_heads, num_buckets, max_distance, bidirectional):
        super().__init__()
        self.num_buckets, self.max_distance, self.bidirectional = num_buckets, max_distance, bidirectional
        self.weight = nn.Parameter(torch.zeros(num_buckets, n_heads))

    def forward(self, T_q, T_k):
        i = torch.arange(T_q, device=self.weight.device)[:, None]
        j = torch.arange(T_k, device=self.weight.device)[None, :]
        per_offset = torch.tensor([relative_position_bucket(n, self.bidirectional, self.num_buckets,
                                                            self.max_distance) for n in range(1 - T_q, T_k)],
                                  device=self.weight.device)
        return self.weight[per_offset[j - i + T_q - 1]].permute(2, 0, 1)   # (T_q, T_k, h) -> (h, T_q, T_k)

    def extra_repr(self):
        return (f"n_heads={self.weight.shape[1]}, num_buckets={self.num_buckets}, "
                f"max_distance={self.max_distance}, bidirectional={self.bidirectional}")


def alibi_bias(n_heads, T_q, T_k, dtype, device):
    """(h, T_q, T_k): -m_h |i - j|, the slopes of transformer.alibi_slopes."""
    slopes = torch.tensor(alibi_slopes(n_heads, dtype='float64').tolist(), dtype=dtype, device=device)
    i = torch.arange(T_q, device=device)[:, None]
    j = torch.arange(T_k, device=device)[None, :]
    return -slopes[:, None, None] * (i - j).abs().to(dtype)


def attend(Q, K, V, mask, scale, bias, dropout, training):
    """softmax(Q K^T * scale + bias, masked) V, the scale applied to Q first (as microtensor does)."""
    scores = (Q * scale) @ K.transpose(-1, -2)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return F.dropout(scores.softmax(dim=-1), dropout, training) @ V


class MultiHeadAttention(nn.Module):
    """Concat(head_1 .. head_h) W_O, head_i = Attention(X W_Q_i, C W_K_i, C W_V_i), C = context or X;
    GQA/MQA (n_kv_heads), shared W_K = W_Q, a fixed or learned scale, RoPE / ALiBi / T5 bias in self-attention."""

    def __init__(self, config, rope_base, relative):
        super().__init__()
        self.config = config
        d_model, n_heads = config['d_model'], config['n_heads']
        self.n_heads, self.n_kv_heads, self.d_k = n_heads, config['n_kv_heads'] or n_heads, d_model // n_heads
        self.dropout, self.alibi = config['dropout'], config['alibi']
        scale = config['scale']
        self.scale = 1 / math.sqrt(self.d_k) if scale is None or scale == 'learned' else scale
        bias = config['bias']
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = self.W_Q if config['shared_qk'] else nn.Linear(d_model, self.n_kv_heads * self.d_k, bias=bias)
        self.W_V = nn.Linear(d_model, self.n_kv_heads * self.d_k, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)
        self.rope = RotaryEmbedding(self.d_k, rope_base) if config['rope'] else None
        self.log_scale = nn.Parameter(torch.empty(n_heads, 1, 1)) if scale == 'learned' else None
        self.relative_bias = RelativePositionBias(n_heads, **relative) if config['relative'] else None

    def forward(self, x, context=None, mask=None):
        self_attention = context is None
        source = x if self_attention else context
        Q = split_heads(self.W_Q(x), self.n_heads)                  # (B, h, T_q, d_k)
        K = split_heads(self.W_K(source), self.n_kv_heads)          # (B, h_kv, T_k, d_k)
        V = split_heads(self.W_V(source), self.n_kv_heads)
        if self.rope is not None and self_attention:
            Q, K = self.rope(Q), self.rope(K)
        group = self.n_heads // self.n_kv_heads                     # query head i reads K/V head i // group
        K, V = K.repeat_interleave(group, dim=1), V.repeat_interleave(group, dim=1)
        T_q, T_k = Q.shape[-2], K.shape[-2]
        bias = None
        if self.alibi and self_attention:
            bias = alibi_bias(self.n_heads, T_q, T_k, x.dtype, x.device)
        elif self.relative_bias is not None and self_attention:
            bias = self.relative_bias(T_q, T_k)
        scale = self.scale if self.log_scale is None else self.log_scale.exp()
        heads = attend(Q, K, V, mask, scale, bias, self.dropout, self.training)
        return self.W_O(merge_heads(heads))

    def extra_repr(self):
        return ', '.join(f"{name}={value!r}" for name, value in self.config.items())


class MultiHeadLatentAttention(nn.Module):
    """MLA (DeepSeek-V2): K and V re-expanded from a latent c = x W_DKV, plus a shared RoPE key x W_KR."""

    def __init__(self, config, rope_base):
        super().__init__()
        self.config = config
        d_model, h, d_c, bias = config['d_model'], config['n_heads'], config['d_c'], config['bias']
        self.n_heads, self.d_head, self.d_rope = h, config['d_head'], config['d_rope']
        self.dropout = config['dropout']
        d_cq = config['d_cq']
        self.W_DQ = None if d_cq is None else nn.Linear(d_model, d_cq, bias=bias)
        d_q_in = d_model if d_cq is None else d_cq
        self.W_UQ = nn.Linear(d_q_in, h * self.d_head, bias=bias)
        self.W_QR = nn.Linear(d_q_in, h * self.d_rope, bias=bias)
        self.W_DKV = nn.Linear(d_model, d_c, bias=bias)
        self.W_UK = nn.Linear(d_c, h * self.d_head, bias=bias)
        self.W_UV = nn.Linear(d_c, h * self.d_head, bias=bias)
        self.W_KR = nn.Linear(d_model, self.d_rope, bias=bias)
        self.W_O = nn.Linear(h * self.d_head, d_model, bias=bias)
        self.rope = RotaryEmbedding(self.d_rope, rope_base)

    def forward(self, x, context=None, mask=None):
        B, T, _ = x.shape
        c_Q = x if self.W_DQ is None else self.W_DQ(x)
        q_C = split_heads(self.W_UQ(c_Q), self.n_heads)
        q_R = self.rope(split_heads(self.W_QR(c_Q), self.n_heads))
        c = self.W_DKV(x)
        k_C = split_heads(self.W_UK(c), self.n_heads)
        V = split_heads(self.W_UV(c), self.n_heads)
        k_R = self.rope(self.W_KR(x))[:, None].expand(B, self.n_heads, T, self.d_rope)
        Q, K = torch.cat([q_C, q_R], dim=-1), torch.cat([k_C, k_R], dim=-1)
        heads = attend(Q, K, V, mask, 1 / math.sqrt(self.d_head + self.d_rope), None, self.dropout, self.training)
        return self.W_O(merge_heads(heads))

    def extra_repr(self):
        return ', '.join(f"{name}={value!r}" for name, value in self.config.items())


class BatchNorm1d(nn.Module):
    """Each feature (the last axis) normalised over all other axes; running statistics as microtensor's
    (and torch.nn.BatchNorm1d's, which wants the features on axis 1 instead)."""

    def __init__(self, num_features, eps, momentum):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer('running_mean', torch.zeros(num_features))
        self.register_buffer('running_var', torch.ones(num_features))

    def forward(self, x):
        if not self.training:
            mean, var = self.running_mean, self.running_var
        else:
            axes = tuple(range(x.ndim - 1))
            n = x.numel() // x.shape[-1]
            mean, var = x.mean(dim=axes), x.var(dim=axes, unbiased=False)
            with torch.no_grad():
                m = self.momentum
                self.running_mean.copy_(self.running_mean * (1 - m) + mean * m)
                self.running_var.copy_(self.running_var * (1 - m) + var * (m * n / (n - 1)))
        return (x - mean) / (var + self.eps).sqrt() * self.weight + self.bias

    def extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}, momentum={self.momentum}"


class FeedForward(nn.Module):
    """act(x W_1 + b_1) W_2 + b_2, act = GELU (tanh form) or ReLU."""

    def __init__(self, d_model, d_ff, activation, dropout):
        super().__init__()
        self.activation = activation
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        hidden = F.gelu(self.W_1(x), approximate='tanh') if self.activation == 'gelu' else F.relu(self.W_1(x))
        return self.W_2(self.dropout(hidden))

    def extra_repr(self):
        return f"activation={self.activation!r}"


class ResidualGate(nn.Module):
    """g = sigmoid(h W_g + b_g): the gated residual's opening, x + g * F(x)."""

    def __init__(self, d_model):
        super().__init__()
        self.W_g = nn.Linear(d_model, d_model)

    def forward(self, h):
        return torch.sigmoid(self.W_g(h))


class _Layer(nn.Module):
    """pre: x + alpha * F(norm(x));  post: norm(x + alpha * F(x));  gated: the F road times g(h)."""

    def __init__(self, settings):
        super().__init__()
        self.norm, self.residual, self.alpha, self.dropout = (settings[k] for k in ('norm', 'residual', 'alpha',
                                                                                   'dropout'))

    def sublayer(self, name, x, norm, F_):
        h = norm(x) if self.norm == 'pre' else x
        fx = F.dropout(F_(h), self.dropout, self.training)
        gate = getattr(self, 'gate_' + name)
        if gate is not None:
            fx = gate(h) * fx
        y = (x + fx if self.alpha == 1 else x + self.alpha * fx) if self.residual else fx
        return y if self.norm == 'pre' else norm(y)

    def extra_repr(self):
        return f"norm={self.norm!r}, residual={self.residual}, alpha={self.alpha}, dropout={self.dropout}"


class EncoderLayer(_Layer):
    def __init__(self, settings, self_attn, ffn, norm1, norm2, gate_self_attn, gate_ffn):
        super().__init__(settings)
        self.self_attn, self.ffn, self.norm1, self.norm2 = self_attn, ffn, norm1, norm2
        self.gate_self_attn, self.gate_ffn = gate_self_attn, gate_ffn

    def forward(self, x, mask=None):
        x = self.sublayer('self_attn', x, self.norm1, lambda h: self.self_attn(h, mask=mask))
        return self.sublayer('ffn', x, self.norm2, self.ffn)


class DecoderLayer(_Layer):
    def __init__(self, settings, self_attn, cross_attn, ffn, norm1, norm2, norm3, gate_self_attn, gate_ffn,
                 gate_cross_attn):
        super().__init__(settings)
        self.self_attn, self.cross_attn, self.ffn = self_attn, cross_attn, ffn
        self.norm1, self.norm2, self.norm3 = norm1, norm2, norm3
        self.gate_self_attn, self.gate_ffn, self.gate_cross_attn = gate_self_attn, gate_ffn, gate_cross_attn

    def forward(self, x, memory=None, self_mask=None, memory_mask=None):
        x = self.sublayer('self_attn', x, self.norm1, lambda h: self.self_attn(h, mask=self_mask))
        if self.cross_attn is None:
            return self.sublayer('ffn', x, self.norm2, self.ffn)
        x = self.sublayer('cross_attn', x, self.norm2, lambda h: self.cross_attn(h, context=memory, mask=memory_mask))
        return self.sublayer('ffn', x, self.norm3, self.ffn)


class Encoder(nn.Module):
    def __init__(self, layers, final_norm):
        super().__init__()
        self.layers, self.final_norm = nn.ModuleList(layers), final_norm

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask=mask)
        return self.final_norm(x) if self.final_norm is not None else x


class Decoder(nn.Module):
    def __init__(self, layers, final_norm):
        super().__init__()
        self.layers, self.final_norm = nn.ModuleList(layers), final_norm

    def forward(self, x, memory=None, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
        return self.final_norm(x) if self.final_norm is not None else x


class GPT(nn.Module):
    """logits = Head(Decoder(Embed(ids), causal mask)): ids (B, T) -> (B, T, vocab_size)."""

    def __init__(self, config, embed, decoder, lm_head):
        super().__init__()
        self.config = config
        self.embed, self.decoder, self.lm_head = embed, decoder, lm_head

    def forward(self, ids):
        h = self.decoder(self.embed(ids), self_mask=causal_mask(ids.shape[1], ids.device))
        return h @ self.embed.tok.weight.T if self.lm_head is None else self.lm_head(h)


class EncoderOnly(nn.Module):
    """forward(ids) -> hidden states (B, T, d_model); masked_token_logits(ids); classify(ids)."""

    def __init__(self, config, embed, encoder, mlm_head, classifier):
        super().__init__()
        self.config, self.pad_id = config, config['pad_id']
        self.embed, self.encoder, self.mlm_head, self.classifier = embed, encoder, mlm_head, classifier

    def forward(self, ids):
        return self.encoder(self.embed(ids), mask=None if self.pad_id is None else padding_mask(ids, self.pad_id))

    def masked_token_logits(self, ids):
        return self.mlm_head(self(ids))

    def classify(self, ids):
        h = self(ids)
        if self.pad_id is None:
            return self.classifier(h.mean(dim=1))
        keep = (ids != self.pad_id).to(h.dtype)[..., None]     # the mean over the real positions only
        return self.classifier((h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0))


class Transformer(nn.Module):
    """The encoder-decoder: forward(src (B, S), tgt (B, T) decoder input) -> logits (B, T, tgt_vocab)."""

    def __init__(self, config, src_embed, tgt_embed, encoder, decoder, generator):
        super().__init__()
        self.config, self.pad_id = config, config['pad_id']
        self.src_embed, self.tgt_embed, self.encoder, self.decoder = src_embed, tgt_embed, encoder, decoder
        self.generator = generator

    def encode(self, src):
        src_mask = None if self.pad_id is None else padding_mask(src, self.pad_id)
        return self.encoder(self.src_embed(src), mask=src_mask), src_mask

    def decode(self, tgt, memory, src_mask=None):
        h = self.decoder(self.tgt_embed(tgt), memory, self_mask=causal_mask(tgt.shape[1], tgt.device),
                         memory_mask=src_mask)
        return self.generator(h)

    def forward(self, src, tgt):
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)
