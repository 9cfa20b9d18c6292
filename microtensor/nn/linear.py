"""nn.Linear: y = x @ W + b, in the articles' notation (Q = X @ W_Q)."""
import math

from .. import argcheck, backend, convert, creation
from ..argcheck import DTypeError, ShapeError
from ..tensor import DEFAULT_FLOAT
from ..ops.linalg import linear
from . import init
from .module import Module
from .parameter import Parameter


class Linear(Module):
    """y = x @ W + b

    x: (..., in_features)    W: (in_features, out_features)    b: (out_features,)
    W and b start uniform in [-1/sqrt(in), 1/sqrt(in)], as in PyTorch.
    In the graph: MatMul and Add (ops/linalg.py, linear); one op, FusedLinear, with the fused layer on.
    """

    def __init__(self, in_features, out_features, bias=True, dtype=None, device=None):
        super().__init__()
        in_features = argcheck.integer(in_features, 'Linear', 'in_features', min=1)
        out_features = argcheck.integer(out_features, 'Linear', 'out_features', min=1)
        bias = argcheck.boolean(bias, 'Linear', 'bias')
        if dtype is not None and not backend.float_dtype(convert.check_dtype(dtype, 'Linear')):
            raise DTypeError(f"Linear: dtype must be a floating-point dtype (its weights are trained), not {dtype}")
        if device is not None:
            backend.check_device(device, 'Linear')
        argcheck.memory('Linear', in_features * out_features + out_features, 'parameters',
                        f"in_features={in_features}, out_features={out_features}",
                        backend.dtype(DEFAULT_FLOAT if dtype is None else dtype).itemsize)
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features)
        self.weight = Parameter(init.uniform_(creation.zeros(in_features, out_features, dtype=dtype, device=device),
                                              -bound, bound))
        self.bias = (Parameter(init.uniform_(creation.zeros(out_features, dtype=dtype, device=device), -bound, bound))
                     if bias else None)

    def forward(self, x):
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            got = f"last dimension {x.shape[-1]}" if x.ndim else "no dimension"
            raise ShapeError(f"Linear({self.in_features}, {self.out_features}): input has {got}, shape {x.shape}; "
                             f"it needs shape (..., {self.in_features}), in_features as its last dimension")
        return linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
