"""Activation functions as modules, for nn.Sequential.  The math lives in microtensor/ops/elementwise.py."""
from . import functional
from .module import Module


class ReLU(Module):
    """max(x, 0)"""

    def forward(self, x):
        return x.relu()


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    """1 / (1 + exp(-x))"""

    def forward(self, x):
        return x.sigmoid()


class GELU(Module):
    """x * Phi(x); approximate='none' (the exact erf form, the default as in PyTorch) or 'tanh' (GPT-2's formula)."""

    def __init__(self, approximate='none'):
        super().__init__()
        if approximate not in ('tanh', 'none'):
            raise ValueError(f"GELU: approximate must be 'tanh' or 'none', not {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return x.gelu(self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (swish), LLaMA's activation: nn.functional.silu."""

    def forward(self, x):
        return functional.silu(x)
