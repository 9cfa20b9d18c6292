"""One Transformer layer: sub-layers wrapped in residual connections and normalisation.

Shapes: x (B, T, d_model) in, (B, T, d_model) out -- a layer never changes the shape,
which is why layers stack.

Where the norm goes (the articles' Pre-LN vs Post-LN):

    norm='post' (original Transformer):  x = Norm(x + F(x))        "compute, add, normalise"
    norm='pre'  (GPT-2, LLaMA, ...):     x = x + F(Norm(x))        "normalise, compute, add"

With Pre-LN the residual path x -> x + ... -> x + ... is untouched from the first layer to
the last (dy/dx = I + dF/dx at every step); with Post-LN every layer's gradient must pass
through a Norm. `residual=False` drops the "x +" (for the vanishing-gradient lesson),
`alpha` scales the branch: x + alpha * F(x) (the articles' "scaled residual"); gate=True
gives every sub-layer a learned gate (layer.gate_self_attn, gate_cross_attn, gate_ffn):
x + g * F(x), g = ResidualGate(what F reads) (the "gated residual").  relative=True gives
the self-attention T5's learned relative position bias, shared_qk=True one projection for
its queries and keys (W_K = W_Q; the cross-attention keeps two: its Q and K read different
sequences).

EncoderLayer:  x = Sub(x, self-attention(., mask))            -> norm1
               x = Sub(x, FFN)                                 -> norm2
DecoderLayer:  x = Sub(x, masked self-attention(., self_mask)) -> norm1
               x = Sub(x, cross-attention(., memory))          -> norm2   (Q from x, K and V from memory)
               x = Sub(x, FFN)                                 -> norm3
               (norms are numbered in the order their sub-layers run)

A DecoderLayer built with cross_attention=False has no cross-attention sub-layer (and
norm2 goes with the FFN): that is the decoder-only GPT block.  Each sub-layer's output
goes through dropout before the residual addition, as in the original paper.
"""
import microtensor as mt
from microtensor import argcheck, nn

from . import checks
from .attention import MultiHeadAttention
from .feedforward import ACTIVATIONS, FeedForward
from .norm import BatchNorm1d, LayerNorm, RMSNorm
from .residual import ResidualGate, residual_connection

NORM_TYPES = {'layer': LayerNorm, 'rms': RMSNorm, 'batch': BatchNorm1d}


class _Layer(nn.Module):
    """What both layer types share: the norm placement, the residual switch, the probe hook."""

    def __init__(self, d_model, dropout, norm, residual, alpha, norm_type, gate=False):
        super().__init__()
        if norm not in ('pre', 'post'):
            raise ValueError(f"{type(self).__name__}: norm must be 'pre' or 'post', not {norm!r}")
        argcheck.choice(norm_type, type(self).__name__, 'norm_type', sorted(NORM_TYPES))
        d_model, dropout, residual, alpha = checks.arguments(type(self).__name__, d_model=d_model, dropout=dropout,
                                                             residual=residual, alpha=alpha)
        self.d_model, self.dropout, self.norm = d_model, dropout, norm
        self.residual, self.alpha = residual, alpha
        self.norm_type = norm_type
        self.residual_probe = None
        self.gated = gate

    def _new_gate(self):
        return ResidualGate(self.d_model) if self.gated else None

    def _new_norm(self):
        return NORM_TYPES[self.norm_type](self.d_model)

    def sublayer(self, name, x, norm, F):
        """pre: x + alpha * F(norm(x));  post: norm(x + alpha * F(x)).  Gated: g(h) * F(h), h what F reads."""
        h = norm(x) if self.norm == 'pre' else x
        fx = mt.dropout(F(h), self.dropout, self.training)
        gate = getattr(self, 'gate_' + name)
        y = residual_connection(self, name, x, fx, None if gate is None else gate(h))
        return y if self.norm == 'pre' else norm(y)

    def _check_input(self, x):
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise mt.ShapeError(f"{type(self).__name__}(d_model={self.d_model}): expected x of shape "
                                f"(B, T, {self.d_model}), got {x.shape}")

    def extra_repr(self):
        extra = ('' if self.alpha == 1 else f", alpha={self.alpha}") + (', gate=True' if self.gated else '')
        return f"d_model={self.d_model}, norm={self.norm!r}, residual={self.residual}{extra}"


class EncoderLayer(_Layer):
    """Bidirectional self-attention + FFN, each in a residual connection.

    forward(x (B, T, d_model), mask=None) -> (B, T, d_model); mask: bool, True = may attend,
    broadcastable to (B, h, T, T) (e.g. a padding mask (B, 1, 1, T)).
    """

    def __init__(self, d_model, n_heads, d_ff=None, dropout=0.0, norm='pre', residual=True, alpha=1.0,
                 activation='gelu', n_kv_heads=None, rope=False, alibi=False, norm_type='layer', relative=False,
                 gate=False, shared_qk=False):
        checks.heads('EncoderLayer', d_model, n_heads, n_kv_heads)
        checks.arguments('EncoderLayer', d_ff=d_ff, rope=rope, alibi=alibi, relative=relative, gate=gate,
                         shared_qk=shared_qk)
        argcheck.choice(activation, 'EncoderLayer', 'activation', sorted(ACTIVATIONS))
        super().__init__(d_model, dropout, norm, residual, alpha, norm_type, gate)
        self.self_attn = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, dropout=dropout,
                                            rope=rope, alibi=alibi, relative=relative, shared_qk=shared_qk)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout)
        self.norm1 = self._new_norm()
        self.norm2 = self._new_norm()
        self.gate_self_attn, self.gate_ffn = self._new_gate(), self._new_gate()

    def forward(self, x, mask=None):
        self._check_input(x)
        x = self.sublayer('self_attn', x, self.norm1, lambda h: self.self_attn(h, mask=mask))
        return self.sublayer('ffn', x, self.norm2, self.ffn)


class DecoderLayer(_Layer):
    """Masked self-attention + cross-attention over the encoder's output + FFN.

    forward(x (B, T, d_model), memory=None (B, S, d_model), self_mask=None, memory_mask=None, cache=None)
    -> (B, T, d_model).  self_mask is usually causal (position t sees positions <= t);
    memory_mask hides padded source positions ((B, 1, 1, S)).  `cache` is the self-attention's
    KVCache for incremental decoding: x then holds only the new positions.  The
    cross-attention recomputes K, V from memory at each call (memory is fixed and short).
    """

    def __init__(self, d_model, n_heads, d_ff=None, dropout=0.0, norm='pre', residual=True, alpha=1.0,
                 activation='gelu', n_kv_heads=None, rope=False, alibi=False, norm_type='layer',
                 cross_attention=True, relative=False, gate=False, shared_qk=False):
        checks.heads('DecoderLayer', d_model, n_heads, n_kv_heads)
        checks.arguments('DecoderLayer', d_ff=d_ff, rope=rope, alibi=alibi, cross_attention=cross_attention,
                         relative=relative, gate=gate, shared_qk=shared_qk)
        argcheck.choice(activation, 'DecoderLayer', 'activation', sorted(ACTIVATIONS))
        super().__init__(d_model, dropout, norm, residual, alpha, norm_type, gate)
        self.self_attn = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, dropout=dropout,
                                            rope=rope, alibi=alibi, relative=relative, shared_qk=shared_qk)
        # positions of two different sequences: no RoPE/ALiBi in the cross-attention
        self.cross_attn = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads,
                                             dropout=dropout) if cross_attention else None
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout)
        self.norm1 = self._new_norm()
        self.norm2 = self._new_norm()
        self.norm3 = self._new_norm() if cross_attention else None
        self.gate_self_attn, self.gate_ffn = self._new_gate(), self._new_gate()
        self.gate_cross_attn = self._new_gate() if cross_attention else None

    def forward(self, x, memory=None, self_mask=None, memory_mask=None, cache=None):
        self._check_input(x)
        x = self.sublayer('self_attn', x, self.norm1, lambda h: self.self_attn(h, mask=self_mask, cache=cache))
        if self.cross_attn is None:
            if memory is not None:
                raise ValueError("DecoderLayer: `memory` was given but this layer was built with "
                                 "cross_attention=False (a decoder-only block)")
            return self.sublayer('ffn', x, self.norm2, self.ffn)
        if memory is None:
            raise ValueError("DecoderLayer: this layer has cross-attention, so it needs `memory` "
                             "(the encoder output, (B, S, d_model)); build it with cross_attention=False "
                             "for a decoder-only (GPT) block")
        x = self.sublayer('cross_attn', x, self.norm2,
                          lambda h: self.cross_attn(h, context=memory, mask=memory_mask))
        return self.sublayer('ffn', x, self.norm3, self.ffn)
