"""The position-wise feed-forward network: "expand, bend, shrink back".

    FFN(x) = act(x W_1 + b_1) W_2 + b_2

    x: (B, T, d_model)  ->  x W_1 + b_1: (B, T, d_ff)  ->  act  ->  W_2: (B, T, d_model)
    W_1: (d_model, d_ff),  W_2: (d_ff, d_model),  d_ff = 4 d_model by default

Each position is transformed on its own (attention mixes positions; the FFN "thinks"
about each one).  act is GELU (tanh form, GPT-2/BERT):
    GELU(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
or ReLU (the original Transformer).  Without it the two layers would collapse into one
linear map.  Dropout, when on, acts on the d_ff hidden activations.
"""
import microtensor as mt
from microtensor import argcheck, nn

from . import checks
from .projection import Projection



def gelu_tanh(x):
    """GELU in GPT-2's tanh form (mt.gelu's default is the exact erf form, as PyTorch's)."""
    return mt.gelu(x, approximate='tanh')


ACTIVATIONS = {'gelu': gelu_tanh, 'relu': mt.relu}


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff=None, activation='gelu', dropout=0.0):
        super().__init__()
        d_model, d_ff, dropout = checks.arguments('FeedForward', d_model=d_model, d_ff=d_ff, dropout=dropout)
        argcheck.choice(activation, 'FeedForward', 'activation', sorted(ACTIVATIONS))
        self.d_model, self.d_ff = d_model, 4 * d_model if d_ff is None else d_ff
        self.activation = activation
        self.W_1 = Projection(d_model, self.d_ff)
        self.W_2 = Projection(self.d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        hidden = ACTIVATIONS[self.activation](self.W_1(x))
        return self.W_2(self.dropout(hidden))

    def extra_repr(self):
        return f"d_model={self.d_model}, d_ff={self.d_ff}, activation={self.activation!r}"
