"""nn.init: fill a weight with good starting values, in place, on its own device and dtype.

Weights are in PyTorch's layout, (out_features, in_features, *kernel), as nn.Linear stores them
(y = x @ W^T):

    fan_in  = W.shape[1] * receptive    the number of inputs each output sums over
    fan_out = W.shape[0] * receptive    receptive = prod(W.shape[2:]), 1 for a Linear

(transformer's Projection keeps the articles' (d_in, d_out): Xavier is symmetric in the two fans;
for Kaiming, its fan-in is mode='fan_out' here.)

Why the scale matters: a sum of fan_in terms with variance Var(W) has variance
fan_in * Var(W) * Var(x), so Var(W) = 1 / fan_in keeps activations at unit scale
through many layers (Kaiming/He, for ReLU with gain sqrt(2)), and
Var(W) = 2 / (fan_in + fan_out) balances the forward and backward passes (Xavier/Glorot).

Every function returns the tensor it filled, draws from the generator of the tensor's
device (seeded by mt.manual_seed), and records no graph.  Filling is an in-place change
(through copy_/fill_): the tensor's version goes up, so a graph recorded before the fill
cannot be back-propagated after it.
"""
import math

from .. import argcheck, backend
from ..argcheck import DTypeError
from ..autograd import no_grad
from ..creation import normal_array, uniform_array
from ..tensor import Tensor

_GAINS = {'linear': 1.0, 'sigmoid': 1.0, 'tanh': 5.0 / 3, 'relu': math.sqrt(2.0)}


def calculate_gain(nonlinearity='linear', negative_slope=0.01):
    """The factor that keeps the activations' variance at 1 through `nonlinearity`."""
    if nonlinearity == 'leaky_relu':
        negative_slope = argcheck.number(negative_slope, 'nn.init.calculate_gain', 'negative_slope')
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if not isinstance(nonlinearity, str) or nonlinearity not in _GAINS:
        raise ValueError(f"nn.init.calculate_gain: unknown nonlinearity {nonlinearity!r}; "
                         f"use one of {sorted(_GAINS) + ['leaky_relu']}")
    return _GAINS[nonlinearity]


def fans(tensor):
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel), as PyTorch counts them."""
    _check_tensor(tensor)
    if tensor.ndim < 2:
        raise ValueError(f"nn.init: a tensor of shape {tensor.shape} has no fan-in and fan-out: they need a "
                         "weight of 2 or more dims, (out_features, in_features, ...)")
    if tensor.numel() == 0:
        raise ValueError(f"nn.init: a tensor of shape {tensor.shape} has no elements, so no fan-in or fan-out")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _check_tensor(tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init: needs a Tensor to fill, not {argcheck.describe(tensor)}")
    if not backend.float_dtype(tensor.dtype):
        raise DTypeError(f"nn.init: needs a floating-point tensor, not {tensor.dtype}")


def _fill(tensor, make, what):
    """tensor[...] = make(device, shape, dtype), without recording a graph.

    Values beyond the dtype's range (a mean, std or bound near float32's 3.4e38) would be
    inf or nan: refused, naming `what` ('nn.init.normal_: mean=0.0, std=1e+300').
    """
    _check_tensor(tensor)
    with backend.quiet_float_errors(tensor.data):  # the overflow is reported below, as an error
        values = make(tensor.device, tensor.shape, tensor.dtype)
    if not bool(backend.array_module(values).isfinite(values).all()):
        raise ValueError(f"{what}: the values overflow {tensor.dtype} (they would be inf or nan); use smaller ones")
    with no_grad():
        tensor.copy_(values)
    return tensor


def uniform_(tensor, a=0.0, b=1.0):
    """Samples from U(a, b)."""
    a, b = argcheck.number(a, 'nn.init.uniform_', 'a'), argcheck.number(b, 'nn.init.uniform_', 'b')
    if a > b:
        raise ValueError(f"nn.init.uniform_: needs a <= b, got a={a}, b={b}")
    return _fill(tensor, lambda device, shape, dtype: a + (b - a) * uniform_array(device, shape, dtype),
                 f"nn.init.uniform_: a={a}, b={b}")


def normal_(tensor, mean=0.0, std=1.0):
    """Samples from N(mean, std**2)."""
    mean = argcheck.number(mean, 'nn.init.normal_', 'mean')
    std = argcheck.number(std, 'nn.init.normal_', 'std', min=0)
    return _fill(tensor, lambda device, shape, dtype: mean + std * normal_array(device, shape, dtype),
                 f"nn.init.normal_: mean={mean}, std={std}")


def constant_(tensor, value):
    _check_tensor(tensor)
    value = argcheck.number(value, 'nn.init.constant_', 'value', allow_inf=True)
    with no_grad():
        return tensor.fill_(value)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), so Var(W) = gain**2 * 2 / (fan_in + fan_out)."""
    fan_in, fan_out = fans(tensor)
    a = argcheck.number(gain, 'nn.init.xavier_uniform_', 'gain', min=0) * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = fans(tensor)
    gain = argcheck.number(gain, 'nn.init.xavier_normal_', 'gain', min=0)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor, mode, nonlinearity):
    if mode not in ('fan_in', 'fan_out'):
        raise ValueError(f"nn.init.kaiming: mode must be 'fan_in' or 'fan_out', not {mode!r}")
    fan_in, fan_out = fans(tensor)
    return calculate_gain(nonlinearity) / math.sqrt(fan_in if mode == 'fan_in' else fan_out)


def kaiming_uniform_(tensor, mode='fan_in', nonlinearity='relu'):
    """U(-a, a) with a = sqrt(3) * gain / sqrt(fan): Var(W) = gain**2 / fan."""
    a = math.sqrt(3.0) * _kaiming_std(tensor, mode, nonlinearity)
    return uniform_(tensor, -a, a)


def kaiming_normal_(tensor, mode='fan_in', nonlinearity='relu'):
    """N(0, std**2) with std = gain / sqrt(fan)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, mode, nonlinearity))


# the same initialisations under their other names
glorot_uniform_, glorot_normal_ = xavier_uniform_, xavier_normal_
he_uniform_, he_normal_ = kaiming_uniform_, kaiming_normal_
