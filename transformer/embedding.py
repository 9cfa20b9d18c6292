"""Token embedding: a lookup table from token ids to d_model-dimensional vectors.

    X = E[ids]          E: (vocab_size, d_model)    ids: (B, T) integers    X: (B, T, d_model)

The lookup is indexing, so its gradient is a scatter-add: dL/dE[v] is the sum of
dL/dX over every position holding token v (rows of unused tokens get zero).
With scale=True the vectors are multiplied by sqrt(d_model), as in the original
Transformer, so they are not drowned by the positional encoding added next.
"""
import math

from microtensor import argcheck, nn

from . import checks


class TokenEmbedding(nn.Embedding):
    """microtensor's nn.Embedding (vocab_size, d_model), its weight drawn from N(0, 1) as PyTorch's, with
    the ids checked against the vocabulary and the original Transformer's scale=True."""

    def __init__(self, vocab_size, d_model, scale=False):
        vocab_size, d_model = checks.arguments('TokenEmbedding', vocab_size=vocab_size, d_model=d_model)
        scale = argcheck.boolean(scale, 'TokenEmbedding', 'scale')
        argcheck.memory('TokenEmbedding', vocab_size * d_model, 'parameters',
                        f"vocab_size={vocab_size}, d_model={d_model}")
        super().__init__(vocab_size, d_model)
        self.vocab_size, self.d_model, self.scale = vocab_size, d_model, scale

    def forward(self, ids):
        """ids: (B, T) integer Tensor (or nested list) -> (B, T, d_model)."""
        ids = checks.token_ids(ids, 'TokenEmbedding', self.vocab_size, self.weight.device)
        X = self.weight[ids]
        return X * math.sqrt(self.d_model) if self.scale else X

    def extra_repr(self):
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}" + (", scale=True" if self.scale else "")
