"""microtensor.nn.functional: torch.nn.functional's names, signatures and defaults, so that
`from microtensor.nn import functional as F` (or `microtensor.nn.functional.X` inline) runs a
model file written for PyTorch.

A name microtensor has too (mt.relu, mt.softmax, mt.linear, ...) is the same function.  The
losses differ on purpose: here cross_entropy and nll_loss take PyTorch's layout, the class axis
second, (N, C, ...), and ignore_index=-100; mt.cross_entropy keeps the class axis last (README's
table).  Both run the one op of ops/nn.py: this layout moves the class axis last first.
"""
from .. import functional as _mt
from ..convert import tensor_arg as _tensor_arg
from ..ops import attention as _attention, gather as _gather, nn as _nn, rearrange as _rearrange

relu, gelu, sigmoid, tanh = _mt.relu, _mt.gelu, _mt.sigmoid, _mt.tanh
softmax, log_softmax, dropout, linear = _mt.softmax, _mt.log_softmax, _mt.dropout, _mt.linear
layer_norm, rms_norm = _mt.layer_norm, _mt.rms_norm
one_hot, pad = _gather.one_hot, _rearrange.pad
scaled_dot_product_attention = _attention.scaled_dot_product_attention
from ..ops.activations import (celu, elu, hardsigmoid, hardswish, hardtanh, leaky_relu, logsigmoid,  # noqa: E402
                               mish, quick_gelu, relu6, selu, softmin, softplus, softsign)
from ..ops.reduce import normalize  # noqa: E402
from ..ops.conv import conv1d, conv2d, conv3d, fold, unfold  # noqa: E402
from ..ops.pool import avg_pool2d, avg_pool3d, max_pool1d, max_pool2d  # noqa: E402
from ..ops.losses import (binary_cross_entropy, binary_cross_entropy_with_logits, huber_loss, kl_div,  # noqa: E402
                          l1_loss, mse_loss, smooth_l1_loss)


def silu(input, inplace=False):
    """SiLU (swish): x * sigmoid(x), as LLaMA's feed-forward uses; its gradient is the product rule's,
    sigmoid(x) * (1 + x * (1 - sigmoid(x)))."""
    x = _tensor_arg(input, 'silu', 'input')
    if inplace:
        raise ValueError("silu: inplace=True is not supported (it would overwrite the input the graph needs); "
                         "use inplace=False, the default")
    return x * x.sigmoid()


def embedding(input, weight, padding_idx=None):
    """weight[input]: the rows of weight (num_embeddings, embedding_dim) at the ids in input (any shape);
    the gradient of each row is the sum of the gradients of its lookups (an indexing op's backward).
    A padding_idx row gets no gradient, as in PyTorch."""
    ids, weight = _tensor_arg(input, 'embedding', 'input'), _tensor_arg(weight, 'embedding', 'weight')
    rows = weight[ids]
    if padding_idx is None:
        return rows
    return _mt.where((ids != padding_idx).unsqueeze(-1), rows, rows.detach())  # the same values, no gradient there


def _class_axis_last(input, target):
    """PyTorch's (N, C, d1, ...) logits (and probability targets) with the class axis moved last."""
    x = _tensor_arg(input, 'cross_entropy', 'input')
    if x.ndim <= 2:
        return x, target
    order = (0,) + tuple(range(2, x.ndim)) + (1,)
    if isinstance(target, type(x)) and target.dtype.kind == 'f' and target.shape == x.shape:
        target = target.permute(order)
    return x.permute(order), target


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0):
    """torch.nn.functional.cross_entropy: input (N, C, ...) or (C,), target class ids (N, ...) or
    probabilities of input's shape; the defaults are PyTorch's (ignore_index=-100)."""
    x, target = _class_axis_last(input, target)
    if getattr(target, 'dtype', None) is not None and target.dtype.kind == 'f' and ignore_index == -100:
        ignore_index = None  # probabilities: the default ignores nothing, as in PyTorch
    return _nn.cross_entropy(x, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                             label_smoothing=label_smoothing)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction='mean'):
    """torch.nn.functional.nll_loss: log-probabilities input (N, C, ...) or (C,), class ids target (N, ...)."""
    x, target = _class_axis_last(input, target)
    return _nn.nll_loss(x, target, weight=weight, ignore_index=ignore_index, reduction=reduction)
