"""The losses beyond cross-entropy (ops/nn.py), as torch.nn.functional has them.  Each is its formula
on l = the loss per element, composed of the textbook ops (so its gradient is the chain rule), then
reduced: reduction 'mean' (the default), 'sum' or 'none'.

    mse_loss            l = (x - y)^2
    l1_loss             l = |x - y|
    smooth_l1_loss      l = 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta       (d = x - y)
    huber_loss          l = 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)
    binary_cross_entropy               l = -w (y log p + (1 - y) log(1 - p)),  each log at least -100
    binary_cross_entropy_with_logits   l = -w (pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))),
                                       from softplus, so no log of an underflowed sigmoid
    kl_div              l = y (log y - x)   (x: log-probabilities; y log y = 0 at y = 0);
                        log_target: l = e^y (y - x);  reduction 'batchmean': the sum / the batch size
"""
from .. import argcheck, backend, promotion
from ..argcheck import DTypeError, ShapeError
from ..autograd import Function
from ..convert import tensor_arg
from .activations import softplus
from .select import where

REDUCTIONS = ('mean', 'sum', 'none')


def _operands(op, input, target):
    """input and target as float tensors of one dtype, of one shape (PyTorch broadcasts them with a
    warning; a shape mistake here is almost always a bug: refused, saying both shapes)."""
    x, y = tensor_arg(input, op, 'input'), tensor_arg(target, op, 'target')
    if x.shape != y.shape:
        raise ShapeError(f"{op}: input {x.shape} and target {y.shape} must have one shape (PyTorch would "
                         "broadcast them, with a warning); reshape the target, e.g. target.view(input.shape)")
    if x.dtype.kind != 'f':
        raise DTypeError(f"{op}: needs a float input, not {x.dtype} (as in PyTorch); use input.float()")
    x, y = promotion.operands(op, x, y)
    return x, y


def _reduce(op, l, reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {', '.join(map(repr, REDUCTIONS))}, not {reduction!r}")
    return l if reduction == 'none' else l.sum() if reduction == 'sum' else l.mean()


def mse_loss(input, target, reduction='mean'):
    """the mean (or sum) of (x - y)^2           dL/dx = 2 (x - y) / n"""
    x, y = _operands('mse_loss', input, target)
    d = x - y
    return _reduce('mse_loss', d * d, reduction)


def l1_loss(input, target, reduction='mean'):
    """the mean (or sum) of |x - y|             dL/dx = sign(x - y) / n  (0 at x = y)"""
    x, y = _operands('l1_loss', input, target)
    return _reduce('l1_loss', (x - y).abs(), reduction)


def smooth_l1_loss(input, target, reduction='mean', beta=1.0):
    """0.5 d^2 / beta near 0 (|d| < beta), |d| - 0.5 beta beyond: quadratic at the bottom, linear in the tails"""
    x, y = _operands('smooth_l1_loss', input, target)
    beta = argcheck.number(beta, 'smooth_l1_loss', 'beta', min=0)
    d = x - y
    a = d.abs()
    if beta == 0:
        return _reduce('smooth_l1_loss', a, reduction)
    return _reduce('smooth_l1_loss', where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), reduction)


def huber_loss(input, target, reduction='mean', delta=1.0):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) beyond: smooth_l1_loss * delta"""
    x, y = _operands('huber_loss', input, target)
    delta = argcheck.number(delta, 'huber_loss', 'delta')
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be > 0, not {delta}")
    d = x - y
    a = d.abs()
    return _reduce('huber_loss', where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)), reduction)


def _weighted(op, l, weight):
    if weight is None:
        return l
    weight = tensor_arg(weight, op, 'weight')
    if not backend.broadcasts_to(weight.shape, l.shape):
        raise ShapeError(f"{op}: weight of shape {weight.shape} does not broadcast to the loss's {l.shape}")
    return l * weight


class BinaryCrossEntropy(Function):
    """l = -(y log p + (1 - y) log(1 - p)), each log at least -100 (so p = 0 or 1 gives a finite loss)
        dL/dp = g (p - y) / max(p (1 - p), 1e-12),   dL/dy = g (log(1 - p) - log p)      (PyTorch's)"""

    def forward(self, p, y):
        xp = backend.array_module(p)
        with backend.quiet_float_errors(p):
            log_p, log_q = xp.maximum(xp.log(p), -100), xp.maximum(xp.log1p(-p), -100)
        return -(y * log_p + (1 - y) * log_q)

    def backward(self, g):
        p, y = self.inputs
        gp = g * (p - y) / (p * (1 - p)).clip(min=1e-12) if self.needs_grad(0) else None
        gy = g * ((1 - p).log() - p.log()) if self.needs_grad(1) else None
        return gp, gy


def binary_cross_entropy(input, target, weight=None, reduction='mean'):
    """-(y log p + (1 - y) log(1 - p)), p = input in [0, 1]; each log is at least -100, as PyTorch's, so
    that p = 0 or 1 gives a finite loss"""
    p, y = _operands('binary_cross_entropy', input, target)
    if p.numel() and bool(((p < 0) | (p > 1)).any()):
        raise ValueError("binary_cross_entropy: every input must be a probability in [0, 1] (as in PyTorch); "
                         "for logits use binary_cross_entropy_with_logits")
    return _reduce('binary_cross_entropy', _weighted('binary_cross_entropy', BinaryCrossEntropy.apply(p, y), weight),
                   reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction='mean', pos_weight=None):
    """binary cross-entropy of sigmoid(x), computed from x: (1 - y) x + (1 + (pw - 1) y) softplus(-x)
    (pos_weight pw weighs the positive term, per class)"""
    x, y = _operands('binary_cross_entropy_with_logits', input, target)
    log_weight = 1 if pos_weight is None else 1 + (tensor_arg(pos_weight, 'binary_cross_entropy_with_logits',
                                                              'pos_weight') - 1) * y
    l = (1 - y) * x + log_weight * softplus(-x)
    return _reduce('binary_cross_entropy_with_logits',
                   _weighted('binary_cross_entropy_with_logits', l, weight), reduction)


def kl_div(input, target, reduction='mean', log_target=False):
    """KL(y || q) pointwise, input = log q: y (log y - log q), 0 where y = 0; log_target: y given as log y.
    reduction 'batchmean' divides the sum by the batch size (input.shape[0]), the KL divergence per example"""
    x, y = _operands('kl_div', input, target)
    argcheck.boolean(log_target, 'kl_div', 'log_target')
    if log_target:
        l = y.exp() * (y - x)
    else:
        l = where(y > 0, y * (where(y > 0, y, 1.0).log() - x), 0.0 * x)  # y log y -> 0 as y -> 0
    if reduction == 'batchmean':
        return l.sum() / (x.shape[0] if x.ndim else 1)
    return _reduce('kl_div', l, reduction)
