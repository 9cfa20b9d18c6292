"""microtensor: a small reverse-mode autodiff engine on numpy (CPU) and cupy (GPU).

    import microtensor as mt
    x = mt.tensor([[1.0, 2.0]], requires_grad=True)
    y = (x * x).sum()
    y.backward()          # x.grad == 2 * x

Where things live: tensor.py (Tensor), autograd.py (the backward loop),
ops/ (every op's forward and backward: the textbook), fused/ (the same ops, fast, opt-in:
mt.set_fused(True) or `with mt.fused():`), backend.py (numpy/cupy).
"""
from . import backend, cuda, malloc_tuning  # noqa: F401  (malloc_tuning: applied at import)
from .autograd import Function, detect_anomaly, enable_grad, grad, inference_mode, is_grad_enabled, no_grad
from .backend import manual_seed, set_default_device
from .fused import fused, is_fused, set_fused  # mt.fused() is the switch (the package: import microtensor.fused.<module>)
from .creation import (arange, as_tensor, eye, from_numpy, full, multinomial, ones, ones_like, rand, randint, randn,
                       tensor, zeros, zeros_like)
from .functional import (abs, add, amax, amin, argmax, argmin, broadcast_to, cat, chunk, clip, clone, concatenate, cos,
                         cross_entropy, div, dropout, erf, exp, expand_dims, flatten, gelu, layer_norm, linear, log,
                         log_softmax, masked_fill, masked_softmax, matmul, max, maximum, mean, min, minimum, mul, neg,
                         numel, outer, permute, pow, relu, reshape, rms_norm, rsqrt, sigmoid, sin, softmax, split, sqrt, squeeze,
                         stack, std, sub, sum, swapaxes, tanh, transpose, unbind, unflatten, unsqueeze, var, where)
from .argcheck import DTypeError, ShapeError
from .functional import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift,
                         bitwise_xor, floor_divide, remainder)
from .functional import (acos, acosh, asin, asinh, atan, atan2, atanh, ceil, copysign, cosh, exp2, expm1, floor,
                         fmod, frac, hypot, isfinite, isinf, isnan, lerp, log10, log1p, log2, logaddexp, logical_and,
                         logical_not, logical_or, logical_xor, nan_to_num, reciprocal, round, sign, sinh, square, tan,
                         trunc)
from .functional import (argsort, cummax, cummin, diag, diag_embed, diagonal, kthvalue, logcumsumexp, masked_select,
                         meshgrid, nonzero, prod, repeat_interleave, sort, std_mean, tile, var_mean)
from .ops.einsum import einsum
from .ops.gather import gather, one_hot, scatter, scatter_add, scatter_reduce, topk
from .ops.logic import all, allclose, any, isclose
from .ops.nn import nll_loss
from .ops.rearrange import flip, pad, roll, tril, triu
from .ops.reduce import logsumexp
from .ops.scan import cumprod, cumsum
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .serialization import CheckpointError, load, save, upgrade_checkpoint
from .tensor import Tensor
from . import nn, optim  # noqa: E402  (after Tensor and the ops they build on)
from . import inspect  # noqa: E402
from .inspect import Trace, backward_steps, draw_graph, gradient_flow, record_modules, trace  # noqa: E402
from .inspect import BackpropViewer  # noqa: E402

float16 = backend.dtype('float16')
float32 = backend.dtype('float32')
float64 = backend.dtype('float64')
uint8 = backend.dtype('uint8')
int8 = backend.dtype('int8')
int16 = backend.dtype('int16')
int32 = backend.dtype('int32')
int64 = backend.dtype('int64')
bool_ = backend.dtype('bool')
# PyTorch's names of the same dtypes (torch.long, torch.float, ...): a model file's dtype=torch.long works as it is
bool = bool_  # noqa: A001  (shadows the builtin only as mt.bool, as torch.bool does)
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
