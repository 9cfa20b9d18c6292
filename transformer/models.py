"""Whole models: the three architectures of the articles, built from EncoderLayer/DecoderLayer.

    Encoder-only (BERT):        ids -> Embed -> [EncoderLayer] x N  (bidirectional, no mask)
                                     -> classify (pooled) or masked-token logits (MLM)
    Decoder-only (GPT):         ids -> Embed -> [DecoderLayer without cross-attention] x N (causal mask)
                                     -> logits for the next token (CLM)
    Encoder-decoder (original): src -> Encoder -> memory;  tgt -> Decoder(causal self-attention,
                                     cross-attention to memory) -> logits for the next target token

Shapes: ids (B, T) integer token ids; hidden states (B, T, d_model); logits (B, T, vocab).
Embed(ids) = TokenEmbedding(ids) + positions (sinusoidal or learned, added to the input), or
positions inside attention (RoPE rotates Q and K, ALiBi adds a distance bias to the scores).
With norm='pre' the residual stream is never normalised inside the layers, so the stack ends
with a final norm (GPT-2's ln_f); with norm='post' each layer's output is already normalised.

Initialisation (GPT-2, `gpt2_init`): every projection weight and embedding ~ N(0, 0.02^2), biases 0,
norms gamma=1, beta=0; the projections that write into the residual stream (attention's W_O
and the FFN's W_2) get std 0.02 / sqrt(2 * n_layers), so that the sum of 2 * n_layers residual
branches keeps the stream's variance independent of depth.  A fresh model therefore predicts
nearly uniform distributions: its loss is ~ ln(vocab_size).
One exception, from the original Transformer: with sinusoidal positions (sin/cos of amplitude 1)
the token vectors are multiplied by sqrt(d_model) and start ~ N(0, 1/d_model), so that token
and position arrive at the same scale (with 0.02 the positions drown the tokens and a model
can fail to learn at all).
`init_std` (every model's keyword) replaces 0.02: GPT-2 chose it for d_model = 768 (about
0.55 / sqrt(d_model)); a tiny model's attention starts almost uniform with it (scores are
products of two 0.02-sized matrices) and learns where to look slowly, so the toy tasks in
the tests use init_std=0.1 with d_model=32.

Extra keyword arguments of the models (residual=False, alpha=0.5, activation='relu',
norm_type='rms', n_kv_heads=2, ...) go to every layer (see layers.py).
"""
import inspect
import math

import microtensor as mt
from microtensor import argcheck, nn

from . import checks
from .projection import Projection
from .attention import KVCache
from .embedding import TokenEmbedding
from .layers import NORM_TYPES, DecoderLayer, EncoderLayer
from .masks import causal_mask, padding_mask
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

POSITIONAL = ('sinusoidal', 'learned', 'rope', 'alibi', 'none')


# what a model sets in its layers itself: never one of its extra keyword arguments
SET_BY_THE_MODEL = ('self', 'd_model', 'n_heads', 'd_ff', 'dropout', 'norm', 'cross_attention', 'rope', 'alibi')


def _check_stack(where, d_model, n_heads, n_kv_heads, d_ff, dropout, norm, positional, layer_options,
                 layer_types=(EncoderLayer, DecoderLayer)):
    """What a model's arguments must satisfy before its embedding and layers are built, checked
    here so that the error names the model (the layers check the options that have no rule here).
    layer_options must be keywords that every one of layer_types takes."""
    accepted = set.intersection(*(set(inspect.signature(t).parameters) for t in layer_types)) - set(SET_BY_THE_MODEL)
    for name in layer_options:
        if name in ('rope', 'alibi'):
            raise TypeError(f"{where}: {name} is chosen by positional={name!r}, not by a keyword {name}=")
        if name not in accepted:
            raise TypeError(f"{where}: unexpected keyword argument {name!r}; the extra keywords a model passes "
                            f"to its layers are {', '.join(sorted(accepted))}")
    d_model, n_heads, _ = checks.heads(where, d_model, n_heads, n_kv_heads)
    checks.arguments(where, d_ff=d_ff, dropout=dropout,
                     **{name: value for name, value in layer_options.items() if name in checks.RULES})
    argcheck.choice(norm, where, 'norm', ('pre', 'post'))
    argcheck.choice(positional, where, 'positional', POSITIONAL)
    if positional == 'sinusoidal' and d_model % 2:
        raise ValueError(f"{where}: positional='sinusoidal' needs an even d_model (sin/cos pairs), got {d_model}")
    if positional == 'rope' and (d_model // n_heads) % 2:
        raise ValueError(f"{where}: positional='rope' needs an even d_k = d_model / n_heads (it rotates pairs), "
                         f"got {d_model} / {n_heads} = {d_model // n_heads}")


def _check_parameters(where, sizes, attentions, ffns, d_model, d_ff=None, table_rows=0):
    """Refuse a model whose parameters cannot fit in memory, before any is made.  A lower bound
    (so a model that fits is never refused): 2 d_model^2 per attention (W_Q and W_O; with GQA
    W_K and W_V are smaller), 2 d_model d_ff per FFN (d_ff = 4 d_model by default) and d_model
    per row of its embedding and output tables.  sizes: {option: value}, for the message."""
    d_model = int(d_model)
    d_ff = 4 * d_model if d_ff is None else int(d_ff)
    n = attentions * 2 * d_model ** 2 + ffns * 2 * d_model * d_ff + table_rows * d_model
    argcheck.memory(where, n, 'parameters', ', '.join(f"{name}={value}" for name, value in sizes.items()
                                                      if value is not None))


class Embed(nn.Module):
    """x = TokenEmbedding(ids) + position, then dropout:  ids (B, T) -> x (B, T, d_model).

    positional: 'sinusoidal' (fixed sin/cos table, extrapolates), 'learned' (a trainable
    (max_len, d_model) table), or 'rope' / 'alibi' / 'none' (nothing added here; the layers'
    attention handles RoPE and ALiBi).  `offset` is the position of ids[:, 0] (the number of
    tokens already in a KV cache).
    """

    def __init__(self, vocab_size, d_model, max_len, positional, dropout=0.0):
        super().__init__()
        vocab_size, d_model, max_len, dropout = checks.arguments('Embed', vocab_size=vocab_size, d_model=d_model,
                                                                 max_len=max_len, dropout=dropout)
        argcheck.choice(positional, 'Embed', 'positional', POSITIONAL)
        self.vocab_size, self.max_len, self.positional, self.dropout = vocab_size, max_len, positional, dropout
        # sin/cos rows have unit amplitude: scale the tokens up to match (see gpt2_init)
        self.tok = TokenEmbedding(vocab_size, d_model, scale=positional == 'sinusoidal')
        self.pos = None
        if positional == 'sinusoidal':
            self.pos = SinusoidalPositionalEncoding(d_model)
        elif positional == 'learned':
            self.pos = LearnedPositionalEmbedding(max_len, d_model)

    @property
    def layer_options(self):
        """What the layers' attention must do for this kind of position."""
        return {'rope': self.positional == 'rope', 'alibi': self.positional == 'alibi'}

    def check(self, ids, where, offset=0):
        """ids as a (B, T) integer Tensor of token ids whose positions offset .. offset+T-1 this
        embedding can encode; a clear error (naming `where`) before any arithmetic otherwise."""
        ids = checks.token_ids(ids, where, self.vocab_size, self.tok.weight.device, ndims=(2,))
        if self.positional == 'learned':
            self.pos.check_positions(offset, ids.shape[1], where)
        return ids

    def forward(self, ids, offset=0):
        x = self.tok(ids)
        if self.pos is not None:
            x = self.pos(x, offset=offset)
        return mt.dropout(x, self.dropout, self.training)


class Encoder(nn.Module):
    """A stack of EncoderLayers (+ a final norm for Pre-LN).  forward(x (B, T, d_model), mask=None)."""

    def __init__(self, n_layers, d_model, n_heads, d_ff=None, dropout=0.0, norm='pre', norm_type='layer',
                 **layer_options):
        super().__init__()
        n_layers = checks.arguments('Encoder', n_layers=n_layers)
        d_model, _, _ = checks.heads('Encoder', d_model, n_heads, layer_options.get('n_kv_heads'))
        d_ff = checks.arguments('Encoder', d_ff=d_ff)
        _check_parameters('Encoder', dict(n_layers=n_layers, d_model=d_model, d_ff=d_ff), n_layers, n_layers, d_model,
                          d_ff)
        self.layers = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout, norm=norm, norm_type=norm_type,
                                                 **layer_options) for _ in range(n_layers))
        self.final_norm = NORM_TYPES[norm_type](d_model) if norm == 'pre' else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask=mask)
        return self.final_norm(x) if self.final_norm is not None else x


class Decoder(nn.Module):
    """A stack of DecoderLayers (+ a final norm for Pre-LN).

    forward(x (B, T, d_model), memory=None, self_mask=None, memory_mask=None, cache=None):
    `cache` is a list with one KVCache per layer (see new_cache) for incremental decoding.
    cross_attention=False builds the decoder-only (GPT) stack.
    """

    def __init__(self, n_layers, d_model, n_heads, d_ff=None, dropout=0.0, norm='pre', norm_type='layer',
                 cross_attention=True, **layer_options):
        super().__init__()
        n_layers = checks.arguments('Decoder', n_layers=n_layers)
        d_model, _, _ = checks.heads('Decoder', d_model, n_heads, layer_options.get('n_kv_heads'))
        d_ff = checks.arguments('Decoder', d_ff=d_ff)
        _check_parameters('Decoder', dict(n_layers=n_layers, d_model=d_model, d_ff=d_ff),
                          n_layers * (2 if cross_attention is True else 1), n_layers, d_model, d_ff)
        self.layers = nn.ModuleList(DecoderLayer(d_model, n_heads, d_ff, dropout, norm=norm, norm_type=norm_type,
                                                 cross_attention=cross_attention, **layer_options)
                                    for _ in range(n_layers))
        self.final_norm = NORM_TYPES[norm_type](d_model) if norm == 'pre' else None

    def new_cache(self):
        """One empty KVCache per layer, for incremental decoding."""
        return [KVCache() for _ in self.layers]

    def forward(self, x, memory=None, self_mask=None, memory_mask=None, cache=None):
        check_cache(cache, 'Decoder', len(self.layers), x.shape[0] if x.ndim else None)
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask,
                      cache=None if cache is None else cache[i])
        return self.final_norm(x) if self.final_norm is not None else x


def cache_length(cache):
    """How many positions a model's cache (a list of per-layer KVCaches) already holds."""
    return 0 if cache is None else cache[0].length


def check_cache(cache, where, n_layers, B=None):
    """None, or the list of n_layers KVCaches that new_cache() makes (and, given B, filled by a batch of B
    sequences if at all)."""
    if cache is None:
        return
    if not isinstance(cache, (list, tuple)) or not all(isinstance(c, KVCache) for c in cache):
        raise TypeError(f"{where}: cache must be the list of KVCaches made by model.new_cache(), "
                        f"not {argcheck.describe(cache)}")
    if len(cache) != n_layers:
        raise ValueError(f"{where}: cache has {len(cache)} entries but there are {n_layers} layers "
                         "(make it with new_cache())")
    for i, layer_cache in enumerate(cache if B is not None else ()):
        layer_cache.check_batch(B, where, f"cache[{i}] (layer {i}'s KVCache)")


def gpt2_init(model, n_layers, std=0.02):
    """GPT-2's initialisation, in place (see the module docstring); returns the model.
    With another `std`, the residual projections get std / sqrt(2 * n_layers)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"gpt2_init: model must be a Module, not {argcheck.describe(model)}")
    n_layers = checks.arguments('gpt2_init', n_layers=n_layers)
    std = argcheck.number(std, 'gpt2_init', 'std', min=0)
    residual_std = std / math.sqrt(2 * n_layers)
    for m in model.modules():
        if isinstance(m, (Projection, nn.Linear)):
            nn.init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, TokenEmbedding):  # scaled by sqrt(d_model) in use: N(0, 1) rows, like sin/cos
            nn.init.normal_(m.weight, 0.0, 1 / math.sqrt(m.d_model) if m.scale else std)
        elif isinstance(m, LearnedPositionalEmbedding):
            nn.init.normal_(m.weight, 0.0, std)
    for layer in getattr(model, 'layers', ()):
        for attention in (layer.self_attn, getattr(layer, 'cross_attn', None)):
            if attention is not None:
                nn.init.normal_(attention.W_O.weight, 0.0, residual_std)
        nn.init.normal_(layer.ffn.W_2.weight, 0.0, residual_std)
    return model


class GPT(nn.Module):
    """Decoder-only language model:  logits = Head(Decoder(Embed(ids), causal mask)).

    forward(ids (B, T), cache=None) -> logits (B, T, vocab_size): logits[:, t] predicts ids[:, t + 1].
    tie_weights=True uses the token embedding as the output projection (logits = h @ E^T),
    as GPT-2 does.  With a cache (model.new_cache()), ids holds only the new tokens.
    """

    def __init__(self, vocab_size, d_model=64, n_layers=2, n_heads=4, d_ff=None, max_len=256, dropout=0.0,
                 norm='pre', tie_weights=False, positional='learned', n_kv_heads=None, init_std=0.02,
                 **layer_options):
        super().__init__()
        vocab_size, max_len, n_layers, init_std, tie_weights = checks.arguments(
            'GPT', vocab_size=vocab_size, max_len=max_len, n_layers=n_layers, init_std=init_std,
            tie_weights=tie_weights)
        _check_stack('GPT', d_model, n_heads, n_kv_heads, d_ff, dropout, norm, positional, layer_options,
                     (DecoderLayer,))
        _check_parameters('GPT', dict(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, d_ff=d_ff,
                                      max_len=max_len), n_layers, n_layers, d_model, d_ff,
                          vocab_size * (1 if tie_weights else 2) + (max_len if positional == 'learned' else 0))
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embed = Embed(vocab_size, d_model, max_len, positional, dropout)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm, cross_attention=False,
                               n_kv_heads=n_kv_heads, **self.embed.layer_options, **layer_options)
        self.lm_head = None if tie_weights else Projection(d_model, vocab_size, bias=False)
        gpt2_init(self, n_layers, init_std)

    @property
    def layers(self):
        """The decoder layers (for probes and lessons that walk the stack)."""
        return self.decoder.layers

    def new_cache(self):
        """One empty KVCache per decoder layer, for generate()."""
        return self.decoder.new_cache()

    def forward(self, ids, cache=None):
        check_cache(cache, 'GPT', len(self.layers))
        offset = cache_length(cache)
        ids = self.embed.check(ids, 'GPT', offset)  # a clear error before any arithmetic
        check_cache(cache, 'GPT', len(self.layers), ids.shape[0])
        T = ids.shape[1]
        h = self.decoder(self.embed(ids, offset), self_mask=causal_mask(T, offset + T, offset, device=ids.device),
                         cache=cache)
        if self.lm_head is None:  # tied: logits = h @ E^T, E (vocab, d_model) the embedding (F.linear's layout)
            return mt.linear(h, self.embed.tok.weight)
        return self.lm_head(h)


class Transformer(nn.Module):
    """The encoder-decoder Transformer of "Attention Is All You Need".

    forward(src (B, S), tgt (B, T)) -> logits (B, T, tgt_vocab).  tgt is the decoder's input:
    the target shifted right behind `bos_id` (see losses.shift_right); logits[:, t] predicts the
    target token t.  With pad_id, padded source positions are hidden from both attentions
    (pad targets on the right: the causal mask keeps real positions from seeing them, and
    seq2seq_loss ignores them).
    """

    def __init__(self, src_vocab, tgt_vocab, d_model=64, n_heads=4, n_layers=2, d_ff=None, max_len=256,
                 dropout=0.0, norm='pre', pad_id=None, bos_id=None, positional='sinusoidal', init_std=0.02,
                 **layer_options):
        super().__init__()
        src_vocab, tgt_vocab, max_len, n_layers, init_std = checks.arguments(
            'Transformer', src_vocab=src_vocab, tgt_vocab=tgt_vocab, max_len=max_len, n_layers=n_layers,
            init_std=init_std)
        _check_stack('Transformer', d_model, n_heads, layer_options.get('n_kv_heads'), d_ff, dropout, norm, positional,
                     layer_options)
        _check_parameters('Transformer', dict(src_vocab=src_vocab, tgt_vocab=tgt_vocab, d_model=d_model,
                                              n_layers=n_layers, d_ff=d_ff, max_len=max_len),
                          3 * n_layers, 2 * n_layers, d_model, d_ff,
                          src_vocab + 2 * tgt_vocab + (2 * max_len if positional == 'learned' else 0))
        pad_id = checks.token_id(pad_id, 'Transformer', 'pad_id', min(src_vocab, tgt_vocab))
        bos_id = checks.token_id(bos_id, 'Transformer', 'bos_id', tgt_vocab)
        self.src_vocab, self.tgt_vocab, self.max_len = src_vocab, tgt_vocab, max_len
        self.pad_id, self.bos_id = pad_id, bos_id
        self.src_embed = Embed(src_vocab, d_model, max_len, positional, dropout)
        self.tgt_embed = Embed(tgt_vocab, d_model, max_len, positional, dropout)
        options = dict(self.src_embed.layer_options, **layer_options)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm, **options)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm, **options)
        self.generator = Projection(d_model, tgt_vocab)
        gpt2_init(self, n_layers, init_std)

    @property
    def layers(self):
        """Every layer: the encoder's, then the decoder's."""
        return list(self.encoder.layers) + list(self.decoder.layers)

    def new_cache(self):
        """One empty KVCache per decoder layer, for generate()."""
        return self.decoder.new_cache()

    def encode(self, src):
        """src (B, S) -> (memory (B, S, d_model), src_mask (B, 1, 1, S) or None)."""
        src = self.src_embed.check(src, 'Transformer.encode')
        src_mask = padding_mask(src, self.pad_id) if self.pad_id is not None else None
        return self.encoder(self.src_embed(src), mask=src_mask), src_mask

    def decode(self, tgt, memory, src_mask=None, cache=None):
        """tgt (B, T) decoder input -> logits (B, T, tgt_vocab); with a cache tgt holds only new tokens."""
        check_cache(cache, 'Transformer.decode', len(self.decoder.layers))
        offset = cache_length(cache)
        tgt = self.tgt_embed.check(tgt, 'Transformer.decode', offset)
        check_cache(cache, 'Transformer.decode', len(self.decoder.layers), tgt.shape[0])
        T = tgt.shape[1]
        h = self.decoder(self.tgt_embed(tgt, offset), memory,
                         self_mask=causal_mask(T, offset + T, offset, device=tgt.device),
                         memory_mask=src_mask, cache=cache)
        return self.generator(h)

    def forward(self, src, tgt):
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)


class EncoderOnly(nn.Module):
    """Encoder-only (BERT-style) model: every token attends to every token (padding aside).

    forward(ids (B, T)) -> hidden states (B, T, d_model)
    masked_token_logits(ids) -> (B, T, vocab_size)    the MLM head: predict the tokens hidden by a mask id
    classify(ids) -> (B, n_classes)                   the mean of the hidden states over real (non-pad)
                                                      positions, then a Linear
    """

    def __init__(self, vocab_size, d_model=64, n_layers=2, n_heads=4, d_ff=None, max_len=256, dropout=0.0,
                 norm='pre', pad_id=None, positional='learned', n_classes=None, init_std=0.02, **layer_options):
        super().__init__()
        vocab_size, max_len, n_layers, init_std, n_classes = checks.arguments(
            'EncoderOnly', vocab_size=vocab_size, max_len=max_len, n_layers=n_layers, init_std=init_std,
            n_classes=n_classes)
        _check_stack('EncoderOnly', d_model, n_heads, layer_options.get('n_kv_heads'), d_ff, dropout, norm,
                     positional, layer_options, (EncoderLayer,))
        _check_parameters('EncoderOnly', dict(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, d_ff=d_ff,
                                              max_len=max_len), n_layers, n_layers, d_model, d_ff,
                          2 * vocab_size + (max_len if positional == 'learned' else 0))
        pad_id = checks.token_id(pad_id, 'EncoderOnly', 'pad_id', vocab_size)
        self.vocab_size, self.max_len, self.pad_id, self.n_classes = vocab_size, max_len, pad_id, n_classes
        self.embed = Embed(vocab_size, d_model, max_len, positional, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm,
                               **self.embed.layer_options, **layer_options)
        self.mlm_head = Projection(d_model, vocab_size)
        self.classifier = Projection(d_model, n_classes) if n_classes is not None else None
        gpt2_init(self, n_layers, init_std)

    @property
    def layers(self):
        """The encoder layers."""
        return self.encoder.layers

    def _mask(self, ids):
        return padding_mask(ids, self.pad_id) if self.pad_id is not None else None

    def forward(self, ids):
        ids = self.embed.check(ids, 'EncoderOnly')
        return self.encoder(self.embed(ids), mask=self._mask(ids))

    def masked_token_logits(self, ids):
        """Logits (B, T, vocab_size) of the masked-language-model head at every position."""
        return self.mlm_head(self(ids))

    def classify(self, ids):
        """Class logits (B, n_classes) from the encoding averaged over the (non-padding) positions."""
        if self.classifier is None:
            raise ValueError("EncoderOnly.classify: the model has no classification head; "
                             "build it with n_classes=...")
        ids = self.embed.check(ids, 'EncoderOnly.classify')
        h = self(ids)
        if self.pad_id is None:
            pooled = h.mean(axis=1)
        else:  # mean over the real positions only
            keep = (ids != self.pad_id).astype(h.dtype).expand_dims(-1)   # (B, T, 1)
            pooled = (h * keep).sum(axis=1) / keep.sum(axis=1).clip(min=1.0)
        return self.classifier(pooled)
