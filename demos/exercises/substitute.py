"""Run the engine with the learner's ops in place of its own, for the duration of a `with`.

    with substituted({'softmax': MySoftmax, 'matmul': MyMatMul}):
        loss = next_token_loss(model(ids), ids)      # attention's softmax is MySoftmax, every @ MyMatMul

Each exercise replaces the entry points through which the engine reaches that op (REPLACES):
an op class in microtensor/ops/ (the Tensor operators look it up there on every call), or a
public function (mt.layer_norm, Tensor.softmax), or a setting that routes around a fused op
(attention's masked softmax, nn.Linear's one-op x @ W + b).  Everything is put back on exit.
"""
import contextlib

import microtensor as mt
from microtensor import autograd, nn
from microtensor.ops import elementwise, linalg, reduce
import transformer.attention
import transformer.feedforward
import transformer.residual


def _textbook_linear(self, x):
    """nn.Linear as x @ W + b, so that the product and the bias go through the substituted @ and +."""
    y = x @ self.weight
    return y if self.bias is None else y + self.bias


def _along_axis(cls):
    """mt.softmax / mt.log_softmax from the learner's class."""
    def along_axis(x, axis=-1):
        return cls.apply(x, axis=axis)
    return along_axis


def _cross_entropy(cls):
    def cross_entropy(logits, targets, ignore_index=None):
        if ignore_index is not None:
            raise NotImplementedError("the workbook's CrossEntropy has no ignore_index")
        return cls.apply(logits, targets=mt.as_tensor(targets).data)
    return cross_entropy


def _layer_norm(cls):
    def layer_norm(x, gamma, beta, eps=1e-5):
        return cls.apply(x, gamma, beta, eps=eps)
    return layer_norm


def _gelu(cls):
    def gelu(x, approximate='tanh'):
        if approximate != 'tanh':
            raise NotImplementedError("the workbook's GELU is the tanh form")
        return cls.apply(x)
    return gelu


def _method(function):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    return method


# exercise -> [(owner, attribute, the replacement made from the learner's class or function)]
REPLACES = {
    'mul': [(elementwise, 'Mul', lambda cls: cls)],
    'matmul': [(linalg, 'MatMul', lambda cls: cls), (nn.Linear, 'forward', lambda cls: _textbook_linear)],
    'sum': [(reduce, 'Sum', lambda cls: cls)],
    'broadcast_add': [(elementwise, 'Add', lambda cls: cls), (nn.Linear, 'forward', lambda cls: _textbook_linear)],
    'exp': [(elementwise, 'Exp', lambda cls: cls)],
    'tanh': [(elementwise, 'Tanh', lambda cls: cls)],
    'relu': [(elementwise, 'Relu', lambda cls: cls)],
    'softmax': [(mt, 'softmax', _along_axis), (mt.Tensor, 'softmax', lambda cls: _method(_along_axis(cls))),
                (transformer.attention.MultiHeadAttention, 'fused', lambda cls: False)],
    'log_softmax': [(mt, 'log_softmax', _along_axis),
                    (mt.Tensor, 'log_softmax', lambda cls: _method(_along_axis(cls)))],
    'cross_entropy': [(mt, 'cross_entropy', _cross_entropy)],
    'layer_norm': [(mt, 'layer_norm', _layer_norm)],
    'gelu': [(mt, 'gelu', _gelu), (mt.Tensor, 'gelu', lambda cls: _method(_gelu(cls))),
             (transformer.feedforward.ACTIVATIONS, 'gelu', _gelu)],
    'residual_add': [(transformer.residual, 'ResidualAdd', lambda cls: cls)],
    'backward_loop': [(autograd, 'topological_order', lambda order: order)],
}


@contextlib.contextmanager
def substituted(impls):
    """Within the block, the engine uses impls[name] (the learner's class or function) for each
    exercise named; the engine's own are restored afterwards, even after an error."""
    unknown = sorted(set(impls) - set(REPLACES))
    if unknown:
        raise ValueError(f"substituted: no entry points for {unknown}; known: {sorted(REPLACES)}")
    saved = []
    try:
        for name, impl in impls.items():
            for owner, attribute, make in REPLACES[name]:
                saved.append((owner, attribute, _get(owner, attribute)))
                _set(owner, attribute, make(impl))
        yield
    finally:
        for owner, attribute, value in reversed(saved):
            _set(owner, attribute, value)


def _get(owner, attribute):
    return owner[attribute] if isinstance(owner, dict) else owner.__dict__[attribute]


def _set(owner, attribute, value):
    if isinstance(owner, dict):
        owner[attribute] = value
    else:
        setattr(owner, attribute, value)
