"""Projection: y = x @ W + b, the articles' notation (Q = X @ W_Q, W_Q of shape (d_model, d_k)).

Every projection of the Transformer (W_Q, W_K, W_V, W_O, the feed-forward's W_1 and W_2, the heads)
is one of these, so that a weight reads as the articles print it: rows are inputs, columns outputs.
PyTorch's nn.Linear (microtensor.nn.Linear) stores the transpose, (out_features, in_features);
transformer.to_torch transposes between the two.
"""
from microtensor import nn
from microtensor.nn.linear import check_features, check_input, uniform_parameters
from microtensor.ops.linalg import project


class Projection(nn.Module):
    """y = x @ W + b

    x: (..., in_features)    W: (in_features, out_features)    b: (out_features,)
    W and b start uniform in [-1/sqrt(in), 1/sqrt(in)], as nn.Linear's.
    In the graph: MatMul and Add; one op, FusedLinear, with the fused layer on.
    """

    def __init__(self, in_features, out_features, bias=True, dtype=None, device=None):
        super().__init__()
        self.in_features, self.out_features = check_features(type(self).__name__, in_features, out_features, bias,
                                                             dtype, device)
        self.weight, self.bias = uniform_parameters((in_features, out_features), out_features if bias else None,
                                                    in_features, dtype, device)

    def forward(self, x):
        check_input(self, x)
        return project(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
