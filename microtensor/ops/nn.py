"""Neural-network ops whose math is the lesson: softmax, log-softmax, cross-entropy,
layer norm, GELU, dropout.  Each is one op whose backward is the formula in its docstring,
written on tensors (so second derivatives come for free).  The functional entry points at
the end of each section pick the fused layer's op (microtensor/fused/) when it is on.
"""
import math
import numbers

from .. import argcheck, backend, promotion
from ..argcheck import DTypeError, ShapeError
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
        if x.size == 0:  # no row to normalise (and no max to subtract): empty, as PyTorch
            return x.copy()
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
        if x.size == 0:  # no row to normalise: empty, as PyTorch
            return x.copy()
        xp = backend.array_module(x)
        shifted = x - x.max(axis=axis, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(self, g):
        y = self.output
        return (g - y.exp() * g.sum(axis=self.axis, keepdims=True),)


def softmax(x, dim=-1, *, axis=-1):
    """softmax along dim (PyTorch's name) or axis (numpy's); the last one by default."""
    axis = args.one_dim('softmax', dim, axis, -1)
    x = promotion.floating(tensor_arg(x, 'softmax'))  # integer scores: the default float, as exp(ids)
    if x.ndim == 0 and axis in (0, -1):  # as PyTorch: a 0-d tensor is a row of one
        return softmax(x.reshape(1), 0).reshape(())
    return promotion.widened((FusedSoftmax if fused_switch.enabled else Softmax).apply, x, axis=axis)


def log_softmax(x, dim=-1, *, axis=-1):
    """log(softmax) along dim (PyTorch's name) or axis (numpy's); the last one by default."""
    axis = args.one_dim('log_softmax', dim, axis, -1)
    x = promotion.floating(tensor_arg(x, 'log_softmax'))
    if x.ndim == 0 and axis in (0, -1):  # as PyTorch: a 0-d tensor is a row of one
        return log_softmax(x.reshape(1), 0).reshape(())
    return promotion.widened((FusedLogSoftmax if fused_switch.enabled else LogSoftmax).apply, x, axis=axis)


class NLLLoss(Function):
    """Per position i, with target t_i and weight w_i = weight[t_i] (0 where t_i is ignore_index):
        l_i = -w_i * logp[i, t_i]
        L = l                          reduction 'none'  (shape (...))
        L = sum_i l_i                  reduction 'sum'
        L = sum_i l_i / sum_i w_i      reduction 'mean'  (nan when every target is ignored, as in PyTorch)
        dL/dlogp[i, c] = -w_i * [c == t_i] * (g_i,  g,  or g / sum_i w_i)       for the counted i; 0 for the ignored

    With weights that sum to 0 over the counted positions the mean's gradient is -w_i / 0 there
    (nan, or +-inf), as PyTorch's; with every position ignored it is 0.
    logp: (..., C) log-probabilities; targets: (...) class ids, already checked, with 0 in place of
    ignored ones; weights: (...) the w_i; counted: (...) whether t_i counts (is not ignore_index).
    L is linear in logp, so its backward is one constant mask times g.  The mask is made here from
    the targets, so changing them in place after the forward pass cannot change the gradient.
    """

    def forward(self, logp, targets, weights, counted, reduction):
        xp = backend.array_module(logp)
        self.reduction = reduction
        picked = (targets[..., None] == xp.arange(logp.shape[-1])) & counted[..., None]  # (i, t_i) of each counted i
        self.mask = picked * -weights[..., None]  # -w_i at (i, t_i)
        with backend.quiet_float_errors(logp):
            losses = xp.where(weights != 0, -weights * xp.take_along_axis(logp, targets[..., None], -1)[..., 0], 0)
            if reduction == 'none':
                return losses.astype(logp.dtype, copy=False)
            total = losses.sum()
            if reduction == 'sum':
                return total.astype(logp.dtype)
            weight_sum = weights.sum()
            self.mask = xp.where(picked, self.mask / weight_sum, 0)
            return (total / weight_sum).astype(logp.dtype)

    def backward(self, g):
        if self.reduction == 'none':
            g = g.expand_dims(-1)  # (..., 1): each position's own g
        return (g * Tensor._wrap(self.mask.astype(g.dtype, copy=False)),)


REDUCTIONS = ('mean', 'sum', 'none')


def _class_targets(op, scores, targets, weight, ignore_index):
    """(targets, w, counted): class ids (...) checked against the C classes of scores (..., C), with 0
    where ignored; each position's weight w_i = weight[t_i] (1 without weight), 0 where ignored;
    and whether each position counts (its target is not ignore_index).
    Ids are checked on every device (cupy would wrap an id past the end around): one reduction on
    the device, then one host sync."""
    if targets.shape != scores.shape[:-1]:
        what = 'logits' if op == 'cross_entropy' else 'logp'
        torch_layout = scores.ndim >= 2 and targets.shape == scores.shape[:1] + scores.shape[2:]
        raise ShapeError(f"{op}: targets of shape {targets.shape} do not match {what} {scores.shape} "
                         f"(expected the {what}' shape without its last, class axis, for class ids"
                         + (f"; or the {what}' whole shape, for probabilities)" if op == 'cross_entropy' else ")")
                         + ("; these are PyTorch's (N, C, ...) shapes: here the class axis is last, so pass "
                            f"{what}.permute{(0, *range(2, scores.ndim), 1)}" if torch_layout else ""))
    if targets.dtype.kind not in 'iu':
        raise DTypeError(f"{op}: targets must be integer class ids, not {targets.dtype}")
    if ignore_index is not None:
        ignore_index = argcheck.integer(ignore_index, op, 'ignore_index')
    xp, n_classes = backend.array_module(targets), scores.shape[-1]
    counted = targets != ignore_index if ignore_index is not None else xp.ones(targets.shape, dtype=bool)
    bad = counted & ((targets < 0) | (targets >= n_classes))
    if bool(bad.any()):
        example = int(targets[bad].ravel()[0])
        raise IndexError(f"{op}: a target id is outside [0, {n_classes}) (e.g. {example}) for scores "
                         f"of shape {scores.shape}; check the vocabulary size or pass ignore_index")
    safe = xp.where(counted, targets, 0).astype(backend.INDEX)
    w = counted.astype(scores.dtype) if weight is None else xp.where(counted, weight[safe], 0).astype(scores.dtype)
    return safe, w, counted


def _class_weights(op, weight, scores, constant=True):
    """weight: None, or one per class, shape (C,), on the scores' device, as an array.  With class-id
    targets it is a constant: PyTorch has no gradient for it there either (with probabilities it has)."""
    if weight is None:
        return None
    if constant and isinstance(weight, Tensor) and weight.requires_grad:
        raise RuntimeError(f"{op}: weight has no gradient with class-id targets (PyTorch's backward refuses it "
                           "too); pass weight.detach()")
    weight = param_array(weight, scores, op, 'weight')
    if weight.shape != scores.shape[-1:]:
        raise ShapeError(f"{op}: weight must have one entry per class, shape {scores.shape[-1:]}, not {weight.shape}")
    return weight.astype(scores.dtype)


def _scores(op, x, what):
    x = tensor_arg(x, op, what)
    if x.ndim == 0:
        raise ShapeError(f"{op}: {what} must have a class axis (shape (..., C)), not shape (); for one position "
                         "of C classes pass shape (C,)")
    if not backend.float_dtype(x.dtype):
        raise DTypeError(f"{op}: {what} must be floating-point, not {x.dtype}")
    return x


def nll_loss(logp, targets, weight=None, ignore_index=None, reduction='mean'):
    """The negative log-likelihood of class ids under log-probabilities, as torch.nn.functional.nll_loss
    but with the class axis LAST: logp (..., C) (e.g. log_softmax(logits)), targets (...) integer ids.

    weight: one weight per class (C,): the mean is then weighted, sum_i w_i l_i / sum_i w_i.
    ignore_index: positions whose target equals it count for nothing (None: every position counts;
    PyTorch's default is -100).  reduction: 'mean', 'sum' or 'none' (the loss per position)."""
    logp = _scores('nll_loss', logp, 'logp')
    if promotion.accumulation_dtype(logp.dtype) != logp.dtype:  # float16: summed in float32, as PyTorch
        return promotion.widened(nll_loss, logp, targets, weight, ignore_index, reduction)
    reduction = argcheck.choice(reduction, 'nll_loss', 'reduction', REDUCTIONS)
    targets = param_array(targets, logp, 'nll_loss', 'targets')
    weight = _class_weights('nll_loss', weight, logp)
    targets, w, counted = _class_targets('nll_loss', logp, targets, weight, ignore_index)
    return NLLLoss.apply(logp, targets=targets, weights=w, counted=counted, reduction=reduction)


def cross_entropy(logits, targets, weight=None, ignore_index=None, reduction='mean', label_smoothing=0.0):
    """-log softmax(logits)[target] per position, reduced (by default the mean), as
    torch.nn.functional.cross_entropy but with the class axis LAST: logits (..., C) (e.g. (B, T, vocab)),
    not PyTorch's (N, C, ...).

    targets: (...) integer class ids; or probabilities of the logits' own shape (..., C), floats.
    weight: one weight per class (C,); with class ids the mean is weighted (sum_i w_i l_i / sum_i w_i),
      with probabilities each class's term is weighted and the mean is over positions.
    ignore_index: class-id positions whose target equals it count for nothing (None: all count;
      PyTorch's default is -100).  If every target is ignored the mean is over nothing: nan.
    reduction: 'mean', 'sum' or 'none' (the loss per position, shape (...)).
    label_smoothing e in [0, 1]: the target becomes (1 - e) one_hot + e / C, as in PyTorch.
    Stable for huge logits: it goes through log_softmax, never through log(softmax).
    """
    logits = _scores('cross_entropy', logits, 'logits')
    if promotion.accumulation_dtype(logits.dtype) != logits.dtype:  # float16: in float32, as PyTorch
        return promotion.widened(cross_entropy, logits, targets, weight, ignore_index, reduction, label_smoothing)
    reduction = argcheck.choice(reduction, 'cross_entropy', 'reduction', REDUCTIONS)
    smoothing = argcheck.number(label_smoothing, 'cross_entropy', 'label_smoothing', min=0, max=1)
    given = param_array(targets, logits, 'cross_entropy', 'targets')  # on the logits' device, a Tensor's too
    probabilities = given.dtype.kind == 'f' and given.shape == logits.shape  # per class, as in PyTorch
    n_classes = logits.shape[-1]
    logp = log_softmax(logits, axis=-1)
    weights = _class_weights('cross_entropy', weight, logits, constant=not probabilities)
    w = None if weights is None else Tensor._wrap(weights)
    if probabilities:
        if weights is not None:  # a Tensor's gradient flows (a weight being learned)
            w = as_tensor(weight, logits, 'cross_entropy').to(dtype=logits.dtype)
        if ignore_index is not None:
            raise ValueError("cross_entropy: ignore_index applies to class-id targets, not to probabilities")
        p = as_tensor(targets, logits, 'cross_entropy').to(dtype=logits.dtype)  # a Tensor's gradient flows
        if smoothing:
            p = p * (1 - smoothing) + smoothing / n_classes
        losses = -(logp * (p if w is None else p * w)).sum(axis=-1)
        return losses if reduction == 'none' else losses.sum() if reduction == 'sum' else losses.mean()
    ids, weights, counted = _class_targets('cross_entropy', logits, given, weights, ignore_index)
    loss = NLLLoss.apply(logp, targets=ids, weights=weights, counted=counted, reduction=reduction)
    if not smoothing:
        return loss
    uniform = (-(logp if w is None else logp * w).sum(axis=-1)).masked_fill(~counted, 0.0)  # -sum_c w_c logp_c, counted
    if reduction == 'sum':
        uniform = uniform.sum()
    elif reduction == 'mean':  # over the same total weight as the NLL term (nan when every target is ignored)
        total = float(weights.sum())
        uniform = uniform.sum() * (1 / total if total else float('nan'))
    return loss * (1 - smoothing) + uniform * (smoothing / n_classes)


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


def normalized_dims(normalized_shape, where):
    """normalized_shape as a tuple of sizes: an int, or a tuple or list of them (PyTorch's argument)."""
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        normalized_shape = (normalized_shape,)
    if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape:
        argcheck.fail(TypeError, where, f"normalized_shape must be a size or a non-empty tuple of sizes (the trailing "
                                        f"dims to normalise, e.g. d_model), not {argcheck.describe(normalized_shape)}")
    return tuple(argcheck.integer(n, where, 'each size in normalized_shape', min=0) for n in normalized_shape)


def check_trailing(x, shape, where):
    """x must end in the normalized shape: (..., *shape)."""
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        dims = ', '.join(map(str, shape))
        raise ShapeError(f"{where}: expected x of shape (..., {dims}), the normalized_shape ({dims}) as its last "
                         f"dims, got {x.shape}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias over x's trailing dims normalized_shape,
    as PyTorch's F.layer_norm: x (..., *normalized_shape), weight and bias normalized_shape or None
    (no scale, no shift).  One op, LayerNormOp (the trailing dims taken as one axis of features)."""
    x = tensor_arg(input, 'layer_norm')
    shape = normalized_dims(normalized_shape, 'layer_norm')
    eps = argcheck.real(eps, 'layer_norm', 'eps')
    if not 0 <= eps < math.inf:
        raise ValueError(f"layer_norm: eps must be a finite number >= 0 (it keeps 1/sqrt(var + eps) finite), not {eps}")
    if x.ndim == 0:
        raise ShapeError("layer_norm: x must have a last axis to normalise over, not shape (); pass shape (D,) "
                         "or (..., D)")
    if not backend.float_dtype(x.dtype):
        raise DTypeError(f"layer_norm: needs a floating-point x, not {x.dtype} (use x.float())")
    check_trailing(x, shape, 'layer_norm')
    gamma = ones(*shape, dtype=x.dtype, device=x.device) if weight is None else as_tensor(weight, x, 'layer_norm')
    beta = zeros(*shape, dtype=x.dtype, device=x.device) if bias is None else as_tensor(bias, x, 'layer_norm')
    if gamma.shape != shape or beta.shape != shape:
        raise ShapeError(f"layer_norm: weight {gamma.shape} and bias {beta.shape} must have the normalized_shape "
                         f"{shape} (the last dims of x, shape {x.shape})")
    n = math.prod(shape)  # the trailing dims as one axis of n features
    if len(shape) > 1:
        return layer_norm(x.reshape(x.shape[:x.ndim - len(shape)] + (n,)), n, gamma.reshape(n), beta.reshape(n),
                          eps).reshape(x.shape)
    op = FusedLayerNorm if fused_switch.enabled else LayerNormOp
    if promotion.accumulation_dtype(x.dtype) != x.dtype and {gamma.dtype, beta.dtype} <= {x.dtype, promotion.FLOAT32}:
        return promotion.widened(op.apply, x, gamma, beta, eps=eps)  # float16 x: in float32, the result float16
    return op.apply(x, gamma, beta, eps=eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """y = x / sqrt(mean(x^2) + eps) * weight over x's trailing dims normalized_shape, as PyTorch's
    F.rms_norm (LLaMA's norm: no centring, no bias); eps=None is the machine epsilon of the dtype it
    computes in (float32 for float16 x).
    Built from the elementwise ops and a mean, so each step shows in the graph."""
    x = tensor_arg(input, 'rms_norm')
    shape = normalized_dims(normalized_shape, 'rms_norm')
    eps = argcheck.number(eps, 'rms_norm', 'eps', min=0, allow_none=True)
    if not backend.float_dtype(x.dtype):
        raise DTypeError(f"rms_norm: needs a floating-point x, not {x.dtype} (use x.float())")
    check_trailing(x, shape, 'rms_norm')
    if weight is not None:
        weight = as_tensor(weight, x, 'rms_norm')
        if weight.shape != shape:
            raise ShapeError(f"rms_norm: weight {weight.shape} must have the normalized_shape {shape}")
    eps = backend.machine_epsilon(promotion.accumulation_dtype(x.dtype)) if eps is None else eps
    dims = tuple(range(x.ndim - len(shape), x.ndim))

    def normalise(x, weight):
        rms = ((x * x).mean(axis=dims if len(dims) > 1 else -1, keepdims=True) + eps).sqrt()
        return x / rms if weight is None else x / rms * weight
    return promotion.widened(normalise, x, weight)  # float16 x: in float32 (x * x overflows past 256)


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
        raise DTypeError(f"dropout: needs a floating-point tensor, not {x.dtype}")
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


def gelu(x, approximate='none'):
    """GELU(x) = x Phi(x); approximate='none' (the default, as PyTorch's: exact, with erf) or 'tanh'
    (GPT-2's and BERT's formula, which transformer.FeedForward uses)."""
    x = promotion.floating(tensor_arg(x, 'gelu'))  # integers: the default float, as tanh(ids) and erf(ids)
    if approximate == 'tanh':  # float16: in float32, as PyTorch does on the CPU
        return promotion.widened((FusedGeluTanh if fused_switch.enabled else GeluTanh).apply, x)
    if approximate == 'none':
        return promotion.widened(GeluErf.apply, x)
    raise ValueError(f"gelu: approximate must be 'tanh' or 'none', not {approximate!r}")


from ..creation import ones, uniform_array, zeros  # noqa: E402  (creation.py imports the ops package)

# The fused layer's twins of the ops above (they subclass or reuse them).
from ..fused.gelu import FusedGeluTanh  # noqa: E402
from ..fused.layer_norm import FusedLayerNorm  # noqa: E402
from ..fused.softmax import FusedLogSoftmax, FusedSoftmax  # noqa: E402
