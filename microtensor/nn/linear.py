"""nn.Linear: y = x @ W^T + b with W stored (out_features, in_features), PyTorch's layout.

(The articles write Q = X @ W_Q with W_Q (d_model, d_k): transformer/projection.py keeps that layout
for the Transformer's own projections.)"""
import math

from .. import argcheck, backend, convert, creation
from ..argcheck import DTypeError, ShapeError
from ..tensor import DEFAULT_FLOAT
from ..ops.linalg import linear
from . import init
from .module import Module
from .parameter import Parameter


class Linear(Module):
    """y = x @ W^T + b, as PyTorch's nn.Linear

    x: (..., in_features)    W: (out_features, in_features)    b: (out_features,)
    W and b start uniform in [-1/sqrt(in), 1/sqrt(in)], as in PyTorch.
    In the graph: one MatMul (W^T read in place, no Transpose node) and an Add (ops/linalg.py, linear);
    one op, FusedLinear, with the fused layer on.
    """

    def __init__(self, in_features, out_features, bias=True, dtype=None, device=None):
        super().__init__()
        self.in_features, self.out_features = check_features(type(self).__name__, in_features, out_features, bias,
                                                             dtype, device)
        self.weight, self.bias = uniform_parameters((out_features, in_features), out_features if bias else None,
                                                    in_features, dtype, device)

    def forward(self, x):
        check_input(self, x)
        return linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def check_features(where, in_features, out_features, bias, dtype, device):
    """A linear layer's arguments, checked: (in_features, out_features)."""
    in_features = argcheck.integer(in_features, where, 'in_features', min=1)
    out_features = argcheck.integer(out_features, where, 'out_features', min=1)
    argcheck.boolean(bias, where, 'bias')
    if dtype is not None and not backend.float_dtype(convert.check_dtype(dtype, where)):
        raise DTypeError(f"{where}: dtype must be a floating-point dtype (its weights are trained), not {dtype}")
    if device is not None:
        backend.check_device(device, where)
    argcheck.memory(where, in_features * out_features + out_features, 'parameters',
                    f"in_features={in_features}, out_features={out_features}",
                    backend.dtype(DEFAULT_FLOAT if dtype is None else dtype).itemsize)
    return in_features, out_features


def uniform_parameters(weight_shape, bias_size, fan_in, dtype, device):
    """(weight, bias or None), uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)]: the weight drawn first."""
    bound = 1 / math.sqrt(fan_in)
    weight = Parameter(init.uniform_(creation.zeros(*weight_shape, dtype=dtype, device=device), -bound, bound))
    bias = (None if bias_size is None else
            Parameter(init.uniform_(creation.zeros(bias_size, dtype=dtype, device=device), -bound, bound)))
    return weight, bias


def check_input(layer, x):
    """x must be (..., in_features); the error names the layer, e.g. Linear(4, 3)."""
    if x.ndim == 0 or x.shape[-1] != layer.in_features:
        got = f"last dimension {x.shape[-1]}" if x.ndim else "no dimension"
        raise ShapeError(f"{type(layer).__name__}({layer.in_features}, {layer.out_features}): input has {got}, "
                         f"shape {x.shape}; it needs shape (..., {layer.in_features}), in_features as its last "
                         "dimension")
