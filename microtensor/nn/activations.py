"""Activation functions as modules, for nn.Sequential.  The math lives in microtensor/ops/elementwise.py
and microtensor/ops/activations.py; most modules here are made by `from_function`, which stores the
function's settings (nn.Softplus(beta=2.0)) and calls it."""
from . import functional
from .module import Module, from_function


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


Softplus = from_function('Softplus', functional.softplus, beta=1.0, threshold=20.0)
LeakyReLU = from_function('LeakyReLU', functional.leaky_relu, negative_slope=0.01)
ELU = from_function('ELU', functional.elu, alpha=1.0)
CELU = from_function('CELU', functional.celu, alpha=1.0)
SELU = from_function('SELU', functional.selu)
Mish = from_function('Mish', functional.mish)
Hardtanh = from_function('Hardtanh', functional.hardtanh, min_val=-1.0, max_val=1.0)
ReLU6 = from_function('ReLU6', functional.relu6)
Hardsigmoid = from_function('Hardsigmoid', functional.hardsigmoid)
Hardswish = from_function('Hardswish', functional.hardswish)
LogSigmoid = from_function('LogSigmoid', functional.logsigmoid)
Softsign = from_function('Softsign', functional.softsign)
Softmin = from_function('Softmin', functional.softmin, dim=None)
Softmax = from_function('Softmax', functional.softmax, dim=None)
LogSoftmax = from_function('LogSoftmax', functional.log_softmax, dim=None)
