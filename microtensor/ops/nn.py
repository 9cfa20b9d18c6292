"""Neural-network ops whose math is the lesson: softmax, log-softmax, cross-entropy,
layer norm, GELU, dropout.  Each is one fused op (one forward, one backward formula);
tests/test_fused.py checks each against the same function built from primitives.
"""
import math

from .. import argcheck, backend
from ..autograd import Function, is_grad_enabled
from ..convert import as_tensor, param_array, tensor_arg
from ..tensor import Tensor
from . import args


class Softmax(Function):
    """p = exp(x - max(x)) / sum(exp(x - max(x)))     (shifting by max(x) avoids overflow)
        dL/dx = p * (g - sum(g * p))                      sums over `axis`

    The Jacobian is diag(p) - p p^T: when one p_i -> 1 (saturation) every entry -> 0,
    which is why attention scores are divided by sqrt(d_k).
    """

    def forward(self, x, axis):
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        e = xp.exp(x - backend.max_along(x, axis))
        return e / backend.sum_along(e, axis)

    def backward(self, g):
        p = self.output
        return (p * (g - (g * p).sum(axis=self.axis, keepdims=True)),)


class LogSoftmax(Function):
    """y = x - max(x) - log(sum(exp(x - max(x))))
        dL/dx = g - softmax(x) * sum(g),    softmax(x) = exp(y)"""

    def forward(self, x, axis):
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        shifted = x - backend.max_along(x, axis)
        return shifted - xp.log(backend.sum_along(xp.exp(shifted), axis))

    def backward(self, g):
        y = self.output
        return (g - y.exp() * g.sum(axis=self.axis, keepdims=True),)


def softmax(x, axis=-1):
    return Softmax.apply(tensor_arg(x, 'softmax'), axis=axis)


def log_softmax(x, axis=-1):
    return LogSoftmax.apply(tensor_arg(x, 'log_softmax'), axis=axis)


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
    return NLLLoss.apply(LogSoftmax.apply(logits, axis=-1), targets=targets, counted=counted)


class LayerNorm(Function):
    """y = gamma * x_hat + beta,   x_hat = (x - mean(x)) / sqrt(var(x) + eps)   over the last axis (size D)
        dL/dx = (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / sqrt(var + eps),  dx_hat = g * gamma
        dL/dgamma = sum(g * x_hat),   dL/dbeta = sum(g)     (the loop sums over the leading axes)
    """

    def forward(self, x, gamma, beta, eps):
        self.eps = eps
        xp = backend.array_module(x)
        y = xp.empty(x.shape, xp.result_type(x, gamma, beta))
        self.x_hat, self.inv_std = xp.empty(x.shape, x.dtype), xp.empty(x.shape[:-1] + (1,), x.dtype)  # for backward

        def layer_norm(x, y, x_hat_out, inv_std_out):  # a block of rows (backend.by_rows), into the outputs
            x_hat_out[...], inv_std_out[...] = _normalise(x, eps)
            xp.multiply(x_hat_out, gamma, out=y)
            y += beta

        backend.by_rows(layer_norm, x, y, self.x_hat, self.inv_std)
        return y

    def backward(self, g):
        x, gamma, _ = self.inputs
        if not is_grad_enabled():  # the usual case: arrays, with the forward's x_hat and 1/std
            xp = backend.array_module(g.data)
            dx = xp.empty(x.shape, xp.result_type(g.data, gamma.data, x.data))

            def layer_norm_dx(g, x_hat, inv_std, dx):
                dx[...] = _layer_norm_dx(g * gamma.data, x_hat, inv_std)

            backend.by_rows(layer_norm_dx, g.data, self.x_hat, self.inv_std, dx)
            return Tensor._wrap(dx), g * Tensor._wrap(self.x_hat), g
        x_hat, inv_std = _normalise(x, self.eps)  # create_graph=True: as tensors, so this backward is differentiable
        return _layer_norm_dx(g * gamma, x_hat, inv_std), g * x_hat, g


# LayerNorm's pieces, written once for arrays (forward, backward) and tensors (create_graph).
def _normalise(x, eps):
    """x_hat = (x - mean(x)) / sqrt(var(x) + eps) and 1 / sqrt(var(x) + eps), over the last axis."""
    centered = x - _row_mean(x)
    inv_std = (_row_mean(centered * centered) + eps) ** -0.5
    return centered * inv_std, inv_std


def _layer_norm_dx(dx_hat, x_hat, inv_std):
    """dL/dx from dx_hat = g * gamma."""
    return (dx_hat - _row_mean(dx_hat) - x_hat * _row_mean(dx_hat * x_hat)) * inv_std


def _row_mean(x):
    """The mean over the last axis (keepdims); on arrays by backend.sum_along (an einsum)."""
    if isinstance(x, Tensor):
        return x.mean(axis=-1, keepdims=True)
    return backend.sum_along(x, -1) / x.shape[-1]


def layer_norm(x, gamma, beta, eps=1e-5):
    """Layer normalisation over the last axis (fused; see LayerNorm)."""
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
    return LayerNorm.apply(x, gamma, beta, eps=eps)


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
    keep = backend.generator(x.device).random(x.shape, dtype=x.dtype) >= p
    scale = 0.0 if p == 1 else 1.0 / (1 - p)
    return x * Tensor._wrap(keep * x.dtype.type(scale))


# ---------------------------------------------------------------------------- GELU
# Each form's backward is g * gelu'(x), where gelu'(x) is itself one fused op (its "Slope"):
# one pass over the arrays instead of a dozen tensor ops.  The slope's own backward, written
# with tensors, is only needed for second derivatives.
#
# Far from 0, GELU is x (x > 0) or 0 (x < 0) to every float's precision: beyond |x| = _FAR
# tanh(u) and erf(x / sqrt 2) are exactly +-1.  So the slopes are computed at x clipped
# to [-_FAR, _FAR] (exactly 1 or 0 beyond, where x^3 or x^2 would overflow and give
# 0 * inf = nan); the forward's factor x is clipped to [-_FAR, inf], so gelu(-inf) is 0, not
# -inf * 0 = nan.  (For x beyond ~1e12 in float32, x^3 in the forward overflows to inf: numpy
# warns, and the answer is still right: tanh(inf) = 1, y = x.)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_A = 0.044715
_FAR = 100.0


class GeluTanh(Function):
    """GELU, tanh form (GPT-2, BERT):
        y = 0.5 x (1 + tanh(u)) = x h,   u = sqrt(2/pi) (x + 0.044715 x^3),  h = 0.5 (1 + tanh(u)) the gate
        dL/dx = g * gelu'(x)       (GeluTanhGrad, from the h and y kept here)
    """

    def forward(self, x):
        xp = backend.array_module(x)
        dtype = _float_type(x)
        y, self.h = xp.empty(x.shape, dtype), xp.empty(x.shape, dtype)
        backend.by_rows(_gelu_tanh, x, y, self.h)
        return y

    def backward(self, g):
        return (GeluTanhGrad.apply(self.inputs[0], g, h=self.h),)


class GeluTanhGrad(Function):
    """dx = g * gelu'(x) in one pass over the arrays (GeluTanh's backward; gelu' as in GeluTanhSlope)
        dL/dx = e * g * gelu''(x),   dL/dg = e * gelu'(x)      (e: the gradient arriving at dx)
    """

    def forward(self, x, g, h):
        xp = backend.array_module(x)
        dx = xp.empty(x.shape, xp.result_type(_float_type(x), g))

        def gelu_tanh_grad(x, g, h, dx):
            _gelu_tanh_slope(x, h, dx)
            dx *= g

        backend.by_rows(gelu_tanh_grad, x, g, h, dx)
        return dx

    def backward(self, e):
        x, g = self.inputs
        gx = e * g * _gelu_tanh_curvature(x) if self.needs_grad(0) else None
        gg = e * GeluTanhSlope.apply(x) if self.needs_grad(1) else None
        return gx, gg


class GeluTanhSlope(Function):
    """s = gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) u',    t = tanh(u),  u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
          = h + 2 u' y (1 - h)     (with the gate h = 0.5 (1 + t) and y = x h: 1 - t^2 = 4 h (1 - h))
        dL/dx = g * gelu''(x) = g * (1 - t^2) (u' + 0.5 x (u'' - 2 t u'^2)),   u'' = 6 * 0.044715 sqrt(2/pi) x
    """

    def forward(self, x):
        xp = backend.array_module(x)
        s = xp.empty(x.shape, _float_type(x))

        def gelu_tanh_slope(x, s):
            h = xp.empty_like(s)
            _gelu_gate(x, h)
            _gelu_tanh_slope(x, h, s)

        backend.by_rows(gelu_tanh_slope, x, s)
        return s

    def backward(self, g):
        return (g * _gelu_tanh_curvature(self.inputs[0]),)


def _float_type(x):
    """GELU's result type for x: ints give floats, as numpy's tanh does."""
    return backend.array_module(x).result_type(x.dtype, 1.0)


# The forms below write into arrays the op made (backend.by_rows): in place, each numpy call
# is one pass and no temporary is left to copy.
def _gelu_gate(x, h):
    """h = 0.5 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), into h."""
    xp = backend.array_module(x)
    xp.multiply(x, x, out=h, dtype=h.dtype)
    h *= _SQRT_2_OVER_PI * _A
    h += _SQRT_2_OVER_PI
    h *= x  # u
    xp.tanh(h, out=h)
    h += 1
    h *= 0.5


def _gelu_tanh(x, y, h):
    """GELU's output y = x h and its gate h, into y and h (y = -0 for x < -_FAR, where h is
    exactly 0; x is clipped with clip, not maximum: numpy's clip is ~1.5x faster)."""
    _gelu_gate(x, h)
    backend.array_module(x).clip(x, -_FAR, math.inf, out=y)
    y *= h


def _gelu_tanh_slope(x, h, s):
    """gelu'(x) = h + 2 u' y (1 - h) into s, with x clipped to [-_FAR, _FAR] (see above)."""
    xp = backend.array_module(x)
    x = xp.clip(x, -_FAR, _FAR, out=xp.empty_like(s))  # ours to overwrite (an array even when 0-d)
    xp.multiply(x, x, out=s)
    s *= 3 * _A * 2 * _SQRT_2_OVER_PI
    s += 2 * _SQRT_2_OVER_PI  # 2 u'
    x *= h  # y
    s *= x
    xp.subtract(1, h, out=x)
    s *= x
    s += h


def _gelu_tanh_curvature(x):
    """gelu''(x) on tensors (for second derivatives), at x clipped to [-_FAR, _FAR]."""
    x = x.clip(-_FAR, _FAR)
    t = (_SQRT_2_OVER_PI * (x + _A * x * x * x)).tanh()
    du = _SQRT_2_OVER_PI * (1 + 3 * _A * x * x)
    d2u = (6 * _A * _SQRT_2_OVER_PI) * x
    return (1 - t * t) * (du + 0.5 * x * (d2u - 2 * t * du * du))


class GeluErf(Function):
    """GELU, exact form:  y = x Phi(x),   Phi(x) = 0.5 (1 + erf(x / sqrt 2)), the normal CDF
        dL/dx = g * gelu'(x)       (GeluErfSlope)
    """

    def forward(self, x):
        return backend.array_module(x).maximum(x, -_FAR) * (0.5 * (1 + backend.erf(x * (1 / math.sqrt(2)))))

    def backward(self, g):
        return (g * GeluErfSlope.apply(self.inputs[0]),)


class GeluErfSlope(Function):
    """s = gelu'(x) = Phi(x) + x phi(x),    phi(x) = exp(-x^2 / 2) / sqrt(2 pi), the normal density
        dL/dx = g * gelu''(x) = g * phi(x) (2 - x^2)
    """

    def forward(self, x):
        xp = backend.array_module(x)
        x = xp.clip(x, -_FAR, _FAR)
        phi = xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        return 0.5 * (1 + backend.erf(x * (1 / math.sqrt(2)))) + x * phi

    def backward(self, g):
        x = self.inputs[0].clip(-_FAR, _FAR)
        phi = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
        return (g * phi * (2 - x * x),)


def gelu(x, approximate='tanh'):
    """GELU(x) = x Phi(x); approximate='tanh' (default, GPT-2) or 'none' (exact, with erf)."""
    x = tensor_arg(x, 'gelu')
    if approximate == 'tanh':
        return GeluTanh.apply(x)
    if approximate == 'none':
        return GeluErf.apply(x)
    raise ValueError(f"gelu: approximate must be 'tanh' or 'none', not {approximate!r}")
