"""Run the engine with the learner's ops in place of its own, for the duration of a `with`.

    with substituted({'softmax': MySoftmax, 'matmul': MyMatMul}):
        loss = next_token_loss(model(ids), ids)      # attention's softmax is MySoftmax, every @ MyMatMul

Each exercise replaces the op class the engine's entry points look up on every call (REPLACES):
Tensor.__mul__ calls elementwise.Mul.apply, mt.softmax and attention's masked softmax call
nn.Softmax.apply, mt.layer_norm calls nn.LayerNormOp.apply, and so on.  Cross-entropy, one op
in the workbook but two in the engine (LogSoftmax, then NLLLoss), replaces mt.cross_entropy.
The fused layer is switched off inside (its Fused... ops would bypass the textbook classes),
and everything is put back on exit.
"""
import contextlib

import microtensor as mt
from microtensor import autograd
from microtensor.i18n import _
from microtensor.ops import elementwise, linalg, nn, reduce
import transformer.residual


def _cross_entropy(cls):
    def cross_entropy(logits, targets, ignore_index=None):
        if ignore_index is not None:
            raise NotImplementedError(_("the workbook's CrossEntropy has no ignore_index"))
        return cls.apply(logits, targets=mt.as_tensor(targets).data)
    return cross_entropy


def _same(impl):
    return impl


# exercise -> (owner, attribute, the replacement made from the learner's class or function)
REPLACES = {
    'mul': (elementwise, 'Mul', _same),
    'matmul': (linalg, 'MatMul', _same),
    'sum': (reduce, 'Sum', _same),
    'broadcast_add': (elementwise, 'Add', _same),
    'exp': (elementwise, 'Exp', _same),
    'tanh': (elementwise, 'Tanh', _same),
    'relu': (elementwise, 'Relu', _same),
    'softmax': (nn, 'Softmax', _same),
    'log_softmax': (nn, 'LogSoftmax', _same),
    'cross_entropy': (mt, 'cross_entropy', _cross_entropy),
    'layer_norm': (nn, 'LayerNormOp', _same),
    'gelu': (nn, 'GeluTanh', _same),
    'residual_add': (transformer.residual, 'ResidualAdd', _same),
    'backward_loop': (autograd, 'topological_order', _same),
}


@contextlib.contextmanager
def substituted(impls):
    """Within the block, the engine uses impls[name] (the learner's class or function) for each
    exercise named, with the fused layer off; the engine's own are restored afterwards, even
    after an error."""
    unknown = sorted(set(impls) - set(REPLACES))
    if unknown:
        raise ValueError(f"substituted: no entry points for {unknown}; known: {sorted(REPLACES)}")
    saved = []
    try:
        with mt.fused(False):
            for name, impl in impls.items():
                owner, attribute, make = REPLACES[name]
                saved.append((owner, attribute, getattr(owner, attribute)))
                setattr(owner, attribute, make(impl))
            yield
    finally:
        for owner, attribute, value in reversed(saved):
            setattr(owner, attribute, value)
