"""transformer: every Transformer component from the articles, built on microtensor ops.

    embedding.py    TokenEmbedding
    positional.py   SinusoidalPositionalEncoding, LearnedPositionalEmbedding, RotaryEmbedding, alibi_bias,
                    RelativePositionBias (T5)
    masks.py        causal_mask, padding_mask, combine
    attention.py    scaled_dot_product_attention, MultiHeadAttention, KVCache
    mla.py          MultiHeadLatentAttention (DeepSeek-V2's MLA), use_latent_attention
    norm.py         LayerNorm, RMSNorm, BatchNorm1d
    projection.py   Projection: y = x @ W + b, W (d_in, d_out) as the articles write it (nn.Linear stores W^T)
    feedforward.py  FeedForward
    article_data.py the numbers printed in the source articles (article_checks.py: the trace's later steps)
    residual.py     residual_connection (the "+1" highway, where probes watch), ResidualGate
    layers.py       EncoderLayer, DecoderLayer (norm='pre'|'post', residual on/off)
    models.py       Encoder, Decoder, Transformer (encoder-decoder), GPT (decoder-only), EncoderOnly
    losses.py       next_token_loss, seq2seq_loss, shift_right
    mlm.py          mlm_mask, mlm_loss, masked_accuracy (BERT's masked-language modelling)
    generate.py     generate (greedy, temperature, top-k; KV cache)
    rnn.py          RNNCell, RNN (the baseline attention replaced)
    torch_bridge.py to_torch, from_torch, the parameter-name table, checkpoints both ways (.npz, no pickle)
    torch_modules.py  the same models in plain PyTorch (imported, with torch, only when used)
    torch_compare.py  compare_with_torch: gradients of both engines, one row per parameter
"""
from .projection import Projection
from .attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from .embedding import TokenEmbedding
from .feedforward import FeedForward
from .masks import causal_mask, combine, padding_mask
from .norm import BatchNorm1d, LayerNorm, RMSNorm
from .positional import (LearnedPositionalEmbedding, RelativePositionBias, RotaryEmbedding,
                         SinusoidalPositionalEncoding, alibi_bias, alibi_slopes, relative_position_bucket)
from .residual import ResidualGate, residual_connection
from .layers import DecoderLayer, EncoderLayer
from .models import GPT, Decoder, Embed, Encoder, EncoderOnly, Transformer, gpt2_init
from .losses import next_token_loss, seq2seq_loss, shift_right
from .mlm import masked_accuracy, mlm_loss, mlm_mask
from .generate import generate, pick_next, top_k_filter
from .rnn import RNN, RNNCell
from .mla import MultiHeadLatentAttention, use_latent_attention
from .torch_bridge import (from_torch, load_microtensor_checkpoint, load_torch_state_dict, save_torch_state_dict,
                           to_torch)
from .torch_compare import compare_with_torch
