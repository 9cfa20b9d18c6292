"""nn.utils: helpers used in training loops."""
import math

from .. import argcheck, backend
from ..tensor import Tensor


def clear_grads(parameters, set_to_none, where):
    """zero_grad's work (an optimizer's and a module's): each .grad None, or, with set_to_none=False, a
    new tensor of zeros (a new one, as clip_grad_norm_ makes: a gradient array is never written in place)."""
    set_to_none = argcheck.boolean(set_to_none, where, 'set_to_none')
    for p in parameters:
        p.grad = None if set_to_none or p.grad is None else Tensor._wrap(backend.array_module(p.grad.data).zeros_like(
            p.grad.data))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale all gradients together so that their global norm is at most `max_norm`.

        total = ||(g_1, g_2, ..., g_n)||   (all gradients seen as one long vector)
        if total > max_norm:  every g_i <- g_i * max_norm / (total + 1e-6)

    The direction of the update is kept; only its length is limited.  Returns the
    total norm *before* clipping (a Python float), which is worth logging: spikes
    show instabilities.  Parameters without a gradient are skipped.  Each .grad is
    replaced by a new tensor: gradient arrays are never written in place, so nothing a
    pending backward saved can change (no version to bump, unlike an optimizer step).

    A NaN or Inf in a gradient makes the total NaN or Inf.  As in PyTorch, the gradients are
    then scaled by max_norm / total anyway: by 0 for an Inf total (an infinite entry becomes
    NaN, every other entry 0) and by NaN for a NaN total (every entry becomes NaN), so the
    step that follows shows the problem instead of hiding it.  error_if_nonfinite=True
    raises a RuntimeError instead, before any gradient changes.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    if not hasattr(parameters, '__iter__'):
        raise TypeError(f"clip_grad_norm_: parameters must be a Tensor or an iterable of tensors, "
                        f"not {argcheck.describe(parameters)}")
    parameters = list(parameters)
    for i, p in enumerate(parameters):
        if not isinstance(p, Tensor):
            raise TypeError(f"clip_grad_norm_: parameter {i} is {argcheck.describe(p)}, not a Tensor")
    max_norm = argcheck.number(max_norm, 'clip_grad_norm_', 'max_norm', min=0, allow_inf=True)
    norm_type = argcheck.number(norm_type, 'clip_grad_norm_', 'norm_type', min=0, min_open=True, allow_inf=True)
    error_if_nonfinite = argcheck.boolean(error_if_nonfinite, 'clip_grad_norm_', 'error_if_nonfinite')
    grads = [p for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    devices = {p.grad.device for p in grads}
    if len(devices) > 1:
        raise RuntimeError(f"clip_grad_norm_: gradients are on several devices {sorted(devices)}; "
                           "move the model to one device first")
    xp = backend.array_module(grads[0].grad.data)
    arrays = [p.grad.data.astype('float64') for p in grads if p.grad.numel()]
    # ||g||_p = m * ||g / m||_p with m = max |g|: no |g|**p overflows (or underflows to 0) for a large p
    m = float(xp.stack([xp.abs(g).max() for g in arrays]).max()) if arrays else 0.0
    if norm_type == math.inf or not 0 < m < math.inf:
        total = m  # (0, inf or nan already are the norm)
    else:  # summed in float64 on the device, one host transfer at the end
        with backend.quiet_float_errors(arrays[0]):  # a norm_type near 0: the 1/p power overflows to inf, the norm
            total = m * float(sum(xp.sum((xp.abs(g) / m) ** norm_type) for g in arrays) ** (1.0 / norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}, so "
                           "it cannot be clipped; find where the NaN or Inf comes from (with mt.detect_anomaly(): "
                           "backward names the op that made it), or pass error_if_nonfinite=False to scale the "
                           "gradients by it anyway")
    scale = max_norm / (total + 1e-6)
    if scale < 1 or math.isnan(scale):
        for p in grads:
            g = p.grad.data
            with backend.quiet_float_errors(g):  # (inf * 0 is the documented nan)
                p.grad = Tensor._wrap(g * g.dtype.type(scale))
    return total

