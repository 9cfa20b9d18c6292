"""nn.Embedding, PyTorch's lookup table: row ids of weight (num_embeddings, embedding_dim), drawn from
N(0, 1) as PyTorch's.  The lookup is indexing, so its gradient is a scatter-add: the gradient of row v
is the sum over every position holding id v.  transformer/'s TokenEmbedding is this layer."""
from .. import argcheck
from ..creation import randn
from . import functional
from .module import Module
from .parameter import Parameter


class Embedding(Module):
    """y = weight[ids], ids of any shape -> (..., embedding_dim); a padding_idx row starts at 0 and gets no
    gradient, as in PyTorch."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None):
        super().__init__()
        where = type(self).__name__
        self.num_embeddings = argcheck.integer(num_embeddings, where, 'num_embeddings', min=1)
        self.embedding_dim = argcheck.integer(embedding_dim, where, 'embedding_dim', min=1)
        if padding_idx is not None:
            padding_idx = argcheck.integer(padding_idx, where, 'padding_idx', min=-self.num_embeddings,
                                           max=self.num_embeddings - 1) % self.num_embeddings
        self.padding_idx = padding_idx
        argcheck.memory(where, self.num_embeddings * self.embedding_dim, 'parameters',
                        f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}")
        self.weight = Parameter(randn(self.num_embeddings, self.embedding_dim))
        if padding_idx is not None:
            self.weight.data[padding_idx] = 0

    def forward(self, ids):
        return functional.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
