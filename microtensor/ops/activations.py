"""The activation functions beyond relu, gelu, sigmoid and tanh (ops/elementwise.py, ops/nn.py), as
torch.nn.functional has them.  Each is its formula, composed of the textbook ops, so its gradient
(and second gradient) is the chain rule through them; where a formula would overflow or leak a
nan into the gradient (exp of a large x), the branch that is not taken is computed on a clipped x.

    softplus(x)     log(1 + exp(beta x)) / beta, and x where beta x > threshold
    leaky_relu(x)   x where x > 0, else negative_slope * x
    elu(x)          x where x > 0, else alpha (exp(x) - 1)
    celu(x)         x where x > 0, else alpha (exp(x / alpha) - 1)
    selu(x)         scale * elu(x, alpha), alpha = 1.6732632..., scale = 1.0507009...
    mish(x)         x tanh(softplus(x))
    hardtanh(x)     x clipped to [min_val, max_val]; gradient 1 strictly inside, 0 elsewhere
    relu6(x)        hardtanh(x, 0, 6)
    hardsigmoid(x)  relu6(x + 3) / 6
    hardswish(x)    x relu6(x + 3) / 6
    logsigmoid(x)   log(sigmoid(x)) = -softplus(-x)
    softsign(x)     x / (1 + |x|)
    softmin(x)      softmax(-x)
    quick_gelu(x)   x sigmoid(1.702 x)      (CLIP's GELU; not in PyTorch)

float16 is computed in float32 and rounded back, as PyTorch does on the CPU (softsign's two terms
would cancel, and exp overflows past 11).  Integers are refused, except by hardtanh and relu6,
which clip them, and softsign and quick_gelu, which compute them in float32, as PyTorch's do.
"""
from .. import argcheck, promotion
from ..argcheck import DTypeError
from ..convert import tensor_arg
from .exponential import expm1, log1p
from .nn import softmax
from .select import where

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _floats(x, op, inplace=False):
    """x, a float tensor (PyTorch's activations refuse integers)."""
    x = tensor_arg(x, op, 'input')
    _no_inplace(op, inplace)
    if x.dtype.kind != 'f':
        raise DTypeError(f"{op}: needs a float tensor, not {x.dtype} (as in PyTorch); convert it first (x.float())")
    return x


def _no_inplace(op, inplace):
    if argcheck.boolean(inplace, op, 'inplace'):
        raise ValueError(f"{op}: inplace=True is not supported (it would overwrite the input the graph needs); "
                         "use inplace=False, the default")


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (where the two agree to float
    precision)      dy/dx = sigmoid(beta x), 1 past the threshold"""
    x = _floats(input, 'softplus')
    beta, threshold = argcheck.real(beta, 'softplus', 'beta'), argcheck.real(threshold, 'softplus', 'threshold')

    def f(x):
        bx = x * beta
        past = bx > threshold
        return where(past, x, log1p(where(past, 0.0, bx).exp()) / beta)  # (exp of a clipped bx: no overflow)
    return promotion.widened(f, x)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x       dy/dx = 1 or negative_slope (at 0: negative_slope)"""
    x = _floats(input, 'leaky_relu', inplace)
    negative_slope = argcheck.real(negative_slope, 'leaky_relu', 'negative_slope')
    return promotion.widened(lambda x: where(x > 0, x, x * negative_slope), x)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (exp(x) - 1)      dy/dx = 1, or alpha exp(x)"""
    x = _floats(input, 'elu', inplace)
    alpha = argcheck.real(alpha, 'elu', 'alpha')
    return promotion.widened(lambda x: where(x > 0, x, alpha * expm1(x.clip(max=0))), x)


def celu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (exp(x / alpha) - 1)     dy/dx = 1, or exp(x / alpha)"""
    x = _floats(input, 'celu', inplace)
    alpha = argcheck.real(alpha, 'celu', 'alpha')
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides x), as in PyTorch")
    return promotion.widened(lambda x: where(x > 0, x, alpha * expm1(x.clip(max=0) / alpha)), x)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants (Klambauer et al., 2017)"""
    x = _floats(input, 'selu', inplace)
    return promotion.widened(lambda x: SELU_SCALE * where(x > 0, x, SELU_ALPHA * expm1(x.clip(max=0))), x)


def mish(input, inplace=False):
    """x tanh(softplus(x))"""
    x = _floats(input, 'mish', inplace)
    return promotion.widened(lambda x: x * softplus(x).tanh(), x)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]      dy/dx = 1 where min_val < x < max_val, else 0 (integers stay integers)"""
    x = tensor_arg(input, 'hardtanh', 'input')
    _no_inplace('hardtanh', inplace)
    low, high = argcheck.real(min_val, 'hardtanh', 'min_val'), argcheck.real(max_val, 'hardtanh', 'max_val')
    if low > high:
        raise ValueError(f"hardtanh: min_val ({low}) must not exceed max_val ({high})")
    if x.dtype.kind in 'bu':
        raise DTypeError(f"hardtanh: needs a signed number tensor, not {x.dtype} (as in PyTorch)")
    return _clipped(x, low, high)


def _clipped(x, low, high):
    """x clipped, the gradient passing strictly inside; integers clipped to integer bounds, as in PyTorch."""
    if x.dtype.kind != 'f':
        low, high = int(low), int(high)
    return where((x > low) & (x < high), x, x.clip(low, high).detach())


def relu6(input, inplace=False):
    """min(max(x, 0), 6)      dy/dx = 1 strictly between 0 and 6 (uint8 too, as in PyTorch)"""
    x = tensor_arg(input, 'relu6', 'input')
    _no_inplace('relu6', inplace)
    if x.dtype.kind == 'b':
        raise DTypeError("relu6: needs a number tensor, not bool (as in PyTorch)")
    return _clipped(x, 0, 6)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, a straight line between     dy/dx = 1/6 strictly between"""
    x = _floats(input, 'hardsigmoid', inplace)
    return promotion.widened(lambda x: relu6(x + 3) / 6, x)


def hardswish(input, inplace=False):
    """x relu6(x + 3) / 6 (MobileNetV3)      dy/dx = 0 below -3, (2x + 3) / 6 from -3 to 3, 1 above 3"""
    x = _floats(input, 'hardswish', inplace)

    def f(x):
        middle = x.clip(-3, 3)  # (the branch not taken sees no inf)
        return where(x > 3, x, where(x < -3, x * 0.0, middle * (middle + 3) / 6))  # (-inf * 0: nan, as PyTorch)
    return promotion.widened(f, x)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), without the log of an underflowed sigmoid"""
    return -softplus(-_floats(input, 'logsigmoid'))


def softsign(input):
    """x / (1 + |x|)       dy/dx = 1 / (1 + |x|)^2      (integers: in float32)"""
    x = tensor_arg(input, 'softsign', 'input')
    if x.dtype.kind == 'b':
        raise DTypeError("softsign: needs a number tensor, not bool (as in PyTorch)")
    x = promotion.floating(x)
    return promotion.widened(lambda x: x / (1 + x.abs()), x)


def softmin(input, dim=None, dtype=None):
    """softmax(-x) along dim: the smallest entries get the largest weights"""
    x = tensor_arg(input, 'softmin', 'input')
    if dtype is not None:
        x = x.to(dtype=dtype)
    if x.dtype.kind != 'f':
        raise DTypeError(f"softmin: needs a float tensor, not {x.dtype} (as in PyTorch); pass dtype=mt.float32")
    return softmax(-x, -1 if dim is None else dim)


def quick_gelu(input):
    """x sigmoid(1.702 x): the sigmoid approximation of GELU that CLIP and some GPT ports use"""
    x = promotion.floating(tensor_arg(input, 'quick_gelu', 'input'))
    return promotion.widened(lambda x: x * (1.702 * x).sigmoid(), x)
