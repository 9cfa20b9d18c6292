"""nn.Dropout: mt.dropout as a module, so that model.eval() turns it off."""
from .. import argcheck
from ..ops.nn import dropout
from .module import Module


class Dropout(Module):
    """In training, zero each element with probability p and scale the rest by 1/(1-p);
    in eval mode (model.eval()), return the input unchanged."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = argcheck.number(p, 'Dropout', 'p', min=0, max=1)

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"
