"""Neural-network ops whose math is the lesson: softmax, log-softmax, cross-entropy,
layer norm, GELU, dropout.  Each is one op whose backward is the formula in its docstring,
written on tensors (so second derivatives come for free).  The functional entry points at
the end of each section pick the fused layer's op (microtensor/fused/) when it is on.
"""
import math

from .. import argcheck, backend, promotion
from ..autograd import Function
from ..convert import as_tensor, param_array, tensor_arg
from ..fused import switch as fused_switch
from ..tensor import Tensor
from . import args
from .elementwise import Erf


class Softmax(Function):
    """p = exp(x - max(x)) / sum(exp(x - max(x)))     over `axis` (shifting by max(x) avoids overflow)
        dL/dx = p * (g - sum(g * p))

    The Jacobian is diag(p) - p p^T: when one p_i -> 1 (saturation) every entry -> 0,
    which is why attention scores are divided by sqrt(d_k).
    """

    def forward(self, x, axis):
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        e = xp.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def backward(self, g):
        p = self.output
        return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x))))      over `axis`
        dL/dx = g - softmax(x) * sum(g),    softmax(x) = exp(y)"""

    def forward(self, x, axis):
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        shifted = x - x.max(axis=axis, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(self, g):
        y = self.output
        return (g - y.exp() * g.sum(axis=self.axis, keepdims=True),)


def softmax(x, axis=-1):
    x = promotion.floating(tensor_arg(x, 'softmax'))  # integer scores: the default float, as exp(ids)
    return promotion.widened((FusedSoftmax if fused_switch.enabled else Softmax).apply, x, axis=axis)


def log_softmax(x, axis=-1):
    x = promotion.floating(tensor_arg(x, 'log_softmax'))
    return promotion.widened((FusedLogSoftmax if fused_switch.enabled else LogSoftmax).apply, x, axis=axis)


class NLLLoss(Function):
    """L = -mean over counted positions i of logp[i, t_i]     (positions with t_i == ignore_index don't count)
        dL/dlogp[i, c] = -g / n  if c == t_i and i counts, else 0

    logp: (..., C) log-probabilities, targets: (...) class ids, checked by cross_entropy;
    counted: (...) booleans, False where the target is ignore_index.
    L is linear in logp, so its backward is one constant mask times g.  The targets are
    not saved: `rows` and `cols`, computed from them here, are new arrays, so changing
    the targets in place after the forward pass cannot change the gradient.
    """

    def forward(self, logp, targets, counted):
        xp = backend.array_module(logp)
        n_classes = logp.shape[-1]
        self.rows = xp.flatnonzero(counted)
        self.cols = targets.reshape(-1)[self.rows]
        self.count = len(self.rows)
        picked = logp.reshape(-1, n_classes)[self.rows, self.cols]
        with backend.quiet_float_errors(logp):
            return -picked.sum() / logp.dtype.type(self.count)

    def backward(self, g):
        logp = self.inputs[0]
        xp = backend.array_module(logp.data)
        weights = xp.zeros((logp.size // logp.shape[-1], logp.shape[-1]), dtype=logp.dtype)
        weights[self.rows, self.cols] = -1.0 / max(self.count, 1)
        return (g * Tensor._wrap(weights.reshape(logp.shape)),)


def cross_entropy(logits, targets, ignore_index=None):
    """Mean of -log softmax(logits)[target] over positions.

    logits: (..., C) (class axis last, e.g. (B, T, vocab)); targets: (...) integer ids.
    Stable for huge logits: it goes through log_softmax, never through log(softmax).
    If every target is ignored the mean is over nothing: nan, as in PyTorch.
    Target ids are checked here on every device (cupy would wrap an id past the end
    around): one reduction on the device, then one host sync.
    """
    logits = tensor_arg(logits, 'cross_entropy', 'logits')
    if logits.ndim == 0:
        raise ValueError("cross_entropy: logits must have a class axis (shape (..., C)), not shape ()")
    if not backend.float_dtype(logits.dtype):
        raise TypeError(f"cross_entropy: logits must be floating-point, not {logits.dtype}")
    targets = param_array(targets, logits, 'cross_entropy', 'targets')
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: targets of shape {targets.shape} do not match logits {logits.shape} "
                         "(expected the logits' shape without its last, class axis)")
    if targets.dtype.kind not in 'iu':
        raise TypeError(f"cross_entropy: targets must be integer class ids, not {targets.dtype}")
    if ignore_index is not None:
        ignore_index = argcheck.integer(ignore_index, 'cross_entropy', 'ignore_index')
    xp, n_classes = backend.array_module(targets), logits.shape[-1]
    counted = targets != ignore_index if ignore_index is not None else xp.ones(targets.shape, dtype=bool)
    bad = counted & ((targets < 0) | (targets >= n_classes))
    if bool(bad.any()):
        example = int(targets[bad].ravel()[0])
        raise IndexError(f"cross_entropy: a target id is outside [0, {n_classes}) (e.g. {example}) for logits "
                         f"of shape {logits.shape}; check the vocabulary size or pass ignore_index")
    return promotion.widened(lambda logits: NLLLoss.apply(log_softmax(logits, axis=-1), targets=targets,
                                                          counted=counted), logits)  # float16: in float32


class LayerNormOp(Function):
    """y = gamma * x_hat + beta,   x_hat = (x - mu) / sigma,   over the last axis (size D), with
    mu = mean(x),  sigma = sqrt(var(x) + eps)
        dx_hat = g * gamma
        dL/dx = (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / sigma
        dL/dgamma = g * x_hat,   dL/dbeta = g        (summed over the leading axes by the backward loop)

    (The op of the module transformer.LayerNorm.)  The backward recomputes x_hat from x, on
    tensors, so that it can itself be differentiated.
    """

    def forward(self, x, gamma, beta, eps):
        self.eps = eps
        x_hat, _ = normalise(x, eps)
        return gamma * x_hat + beta

    def backward(self, g):
        x, gamma, _ = self.inputs
        x_hat, sigma = normalise(x, self.eps)
        dx_hat = g * gamma
        dx = (dx_hat - _mean(dx_hat) - x_hat * _mean(dx_hat * x_hat)) / sigma
        return dx, g * x_hat, g


def normalise(x, eps):
    """(x_hat, sigma): x_hat = (x - mean(x)) / sigma, sigma = sqrt(var(x) + eps), over the last
    axis; the same lines for arrays (forward) and tensors (backward)."""
    centered = x - _mean(x)
    sigma = (_mean(centered * centered) + eps) ** 0.5
    return centered / sigma, sigma


def _mean(x):
    """The mean over the last axis, kept as an axis of size 1 (an array's or a tensor's)."""
    return x.mean(axis=-1, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    """Layer normalisation over the last axis (see LayerNormOp)."""
    x = tensor_arg(x, 'layer_norm')
    gamma, beta = as_tensor(gamma, x, 'layer_norm'), as_tensor(beta, x, 'layer_norm')
    eps = argcheck.real(eps, 'layer_norm', 'eps')
    if not 0 <= eps < math.inf:
        raise ValueError(f"layer_norm: eps must be a finite number >= 0 (it keeps 1/sqrt(var + eps) finite), not {eps}")
    if x.ndim == 0:
        raise ValueError("layer_norm: x must have a last axis to normalise over, not shape ()")
    if not backend.float_dtype(x.dtype):
        raise TypeError(f"layer_norm: needs a floating-point x, not {x.dtype} (use x.float())")
    if gamma.shape != x.shape[-1:] or beta.shape != x.shape[-1:]:
        raise ValueError(f"layer_norm: gamma {gamma.shape} and beta {beta.shape} must have shape {x.shape[-1:]} "
                         f"(the last axis of x, shape {x.shape})")
    op = FusedLayerNorm if fused_switch.enabled else LayerNormOp
    if promotion.accumulation_dtype(x.dtype) != x.dtype and {gamma.dtype, beta.dtype} <= {x.dtype, promotion.FLOAT32}:
        return promotion.widened(op.apply, x, gamma, beta, eps=eps)  # float16 x: in float32, the result float16
    return op.apply(x, gamma, beta, eps=eps)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p) (inverted dropout),
    so eval mode needs no rescaling.  y = x * mask,  dL/dx = g * mask."""
    x = tensor_arg(x, 'dropout')
    p = argcheck.real(p, 'dropout', 'p')
    training = argcheck.boolean(training, 'dropout', 'training')
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1], not {p}")
    if not training or p == 0:
        return x
    if not backend.float_dtype(x.dtype):
        raise TypeError(f"dropout: needs a floating-point tensor, not {x.dtype}")
    keep = uniform_array(x.device, x.shape, x.dtype) >= p
    scale = 0.0 if p == 1 else 1.0 / (1 - p)
    return x * Tensor._wrap(keep * x.dtype.type(scale))


# ---------------------------------------------------------------------------- GELU
# Far from 0, GELU is x (x > 0) or 0 (x < 0) to every float's precision: beyond |x| = _FAR,
# tanh(u) and erf(x / sqrt 2) are exactly +-1.  So the formulas take x clipped to
# [-_FAR, _FAR] inside tanh, erf and the slopes (beyond, x^3 would overflow and the slope give
# 0 * inf = nan), and the factor x clipped to [-_FAR, inf], so gelu(-inf) is 0, not -inf * 0.
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_A = 0.044715
_FAR = 100.0


class GeluTanh(Function):
    """GELU, tanh form (GPT-2, BERT):
        y = 0.5 x (1 + tanh(u)),   u = sqrt(2/pi) (x + 0.044715 x^3)
        dL/dx = g * (0.5 (1 + t) + 0.5 x (1 - t^2) u'),   t = tanh(u),  u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
    """

    def forward(self, x):
        xp = backend.array_module(x)
        near = xp.clip(x, -_FAR, _FAR)  # (see above)
        u = _SQRT_2_OVER_PI * (near + _A * near * near * near)  # (x * x * x: numpy's x ** 3 calls pow, many times slower)
        return 0.5 * xp.maximum(x, -_FAR) * (1 + xp.tanh(u))

    def backward(self, g):
        x = self.inputs[0].clip(-_FAR, _FAR)  # (see above)
        t = (_SQRT_2_OVER_PI * (x + _A * x * x * x)).tanh()
        du = _SQRT_2_OVER_PI * (1 + 3 * _A * x * x)
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du),)


class GeluErf(Function):
    """GELU, exact form:  y = x Phi(x),   Phi(x) = 0.5 (1 + erf(x / sqrt 2)), the normal CDF
        dL/dx = g * (Phi(x) + x phi(x)),   phi(x) = exp(-x^2 / 2) / sqrt(2 pi), the normal density
    """

    def forward(self, x):
        xp = backend.array_module(x)
        Phi = 0.5 * (1 + backend.erf(x / math.sqrt(2)))
        return xp.maximum(x, -_FAR) * Phi  # (see above)

    def backward(self, g):
        x = self.inputs[0].clip(-_FAR, _FAR)  # (see above)
        Phi = 0.5 * (1 + Erf.apply(x / math.sqrt(2)))
        phi = (-0.5 * x * x).exp() / math.sqrt(2 * math.pi)
        return (g * (Phi + x * phi),)


def gelu(x, approximate='tanh'):
    """GELU(x) = x Phi(x); approximate='tanh' (default, GPT-2) or 'none' (exact, with erf)."""
    x = promotion.floating(tensor_arg(x, 'gelu'))  # integers: the default float, as tanh(ids) and erf(ids)
    if approximate == 'tanh':  # float16: in float32, as PyTorch does on the CPU
        return promotion.widened((FusedGeluTanh if fused_switch.enabled else GeluTanh).apply, x)
    if approximate == 'none':
        return promotion.widened(GeluErf.apply, x)
    raise ValueError(f"gelu: approximate must be 'tanh' or 'none', not {approximate!r}")


from ..creation import uniform_array  # noqa: E402  (creation.py imports the ops package)

# The fused layer's twins of the ops above (they subclass or reuse them).
from ..fused.gelu import FusedGeluTanh  # noqa: E402
from ..fused.layer_norm import FusedLayerNorm  # noqa: E402
from ..fused.softmax import FusedLogSoftmax, FusedSoftmax  # noqa: E402
