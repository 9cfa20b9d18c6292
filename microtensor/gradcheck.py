"""Gradient checking: compare backward() with central finite differences in float64.

    L(x) = sum(f(x) * u)       u: a random upstream gradient (ones would hide errors that cancel)
    numeric dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)
                    = sum((f(x + eps e_i) - f(x - eps e_i)) * u) / (2 eps)   (differenced first: exact
                      cancellation of large outputs that do not move, such as a -1e9 mask fill)

Inputs with at most `max_elements` entries are checked element by element; larger
ones along random directions d, comparing the analytic directional derivative
<dL/dx, d> with (L(x + eps d) - L(x - eps d)) / (2 eps), as Chainer's check_backward
does.  A failure reports the worst element: input, index, analytic vs numeric.
"""
import math

from . import autograd, backend
from .tensor import Tensor


class GradcheckError(AssertionError):
    """An analytic gradient disagrees with its finite-difference estimate."""


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, max_elements=256, n_directions=3, seed=0):
    """Check fn's first derivatives w.r.t. every input with requires_grad=True.

    fn takes the tensors in `inputs` and returns a Tensor or a tuple of Tensors.
    Returns True, or raises GradcheckError naming the worst mismatch.
    """
    inputs = _float64_inputs(inputs)
    checked = [i for i, x in enumerate(inputs) if x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True")
    rng = backend.host_rng(seed)
    outputs = _outputs(fn, inputs)
    upstream = [_random_like(rng, y) for y in outputs]
    analytic = autograd.grad(outputs, [inputs[i] for i in checked], grad_outputs=upstream, allow_unused=True)

    def L_difference(plus, minus):
        """L(plus) - L(minus), differenced element by element before summing."""
        total = 0.0
        ys_plus, ys_minus = _outputs(fn, _fresh(plus, inputs)), _outputs(fn, _fresh(minus, inputs))
        for y_plus, y_minus, u in zip(ys_plus, ys_minus, upstream):
            xp = backend.array_module(y_plus.data)
            with backend.quiet_float_errors(y_plus.data):  # -inf - -inf = nan, which `where` drops
                change = xp.where(y_plus.data == y_minus.data, 0, y_plus.data - y_minus.data)
            total += float((change * u.data).sum())
        return total

    worst = None  # (excess over tolerance, message)
    for i, g in zip(checked, analytic):
        for where, a, n in _pairs(L_difference, inputs, i, g, eps, max_elements, n_directions, rng):
            allowed = atol + rtol * abs(n)
            excess = abs(a - n) - allowed
            if math.isnan(excess):  # a NaN on either side never passes
                excess = math.inf
            if excess > 0 and (worst is None or excess > worst[0]):
                worst = (excess,
                         f"input {i} (shape {inputs[i].shape}), {where}: analytic {a:.8g} vs numeric {n:.8g} "
                         f"(difference {abs(a - n):.3g}, allowed {allowed:.3g})")
    if worst is not None:
        raise GradcheckError(f"gradcheck failed; worst mismatch at {worst[1]}")
    return True


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4, rtol=1e-3, max_elements=64, n_directions=3, seed=0):
    """Check fn's second derivatives: gradcheck of the backward pass itself,
        (x, v) -> d<fn(x), v>/dx     built with create_graph=True."""
    inputs = _float64_inputs(inputs)
    checked = [i for i, x in enumerate(inputs) if x.requires_grad]
    rng = backend.host_rng(seed + 1)
    vs = [_random_like(rng, y).requires_grad_() for y in _outputs(fn, inputs)]

    def first_derivatives(*args):
        xs, v = args[:len(inputs)], args[len(inputs):]
        return autograd.grad(_outputs(fn, xs), [xs[i] for i in checked], grad_outputs=list(v),
                             create_graph=True, allow_unused=True)

    return gradcheck(first_derivatives, list(inputs) + vs, eps, atol, rtol, max_elements, n_directions, seed)


def _pairs(L_difference, inputs, i, g, eps, max_elements, n_directions, rng):
    """(where, analytic, numeric) for input i: every element, or random directions."""
    base = [x.data for x in inputs]
    x = base[i]
    g = backend.to_numpy(g.data) if g is not None else 0 * backend.to_numpy(x)  # unused: zero

    def numeric_along(direction):
        plus, minus = list(base), list(base)
        plus[i], minus[i] = x + eps * direction, x - eps * direction
        return L_difference(plus, minus) / (2 * eps)

    if x.size <= max_elements:
        xp = backend.array_module(x)
        for flat in range(x.size):
            e = xp.zeros(x.size, dtype=x.dtype)
            e[flat] = 1
            index = backend.unravel_index(flat, x.shape)
            yield f"element {index}", float(g[index]), numeric_along(e.reshape(x.shape))
    else:
        for k in range(n_directions):
            d = _random_like(rng, inputs[i]).data
            yield f"random direction {k}", float((g * backend.to_numpy(d)).sum()), numeric_along(d)


def _fresh(arrays, like):
    """New leaf tensors around perturbed arrays, requiring grad where the originals do."""
    return [Tensor._wrap(a).requires_grad_(x.requires_grad) for a, x in zip(arrays, like)]


def _outputs(fn, inputs):
    out = fn(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _random_like(rng, t):
    return Tensor._wrap(backend.asarray(rng.standard_normal(t.shape), device=t.device))


def _float64_inputs(inputs):
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for x in inputs:
        if x.requires_grad and x.dtype != backend.dtype('float64'):
            raise TypeError(f"gradcheck needs float64 inputs (finite differences in float32 are too coarse); "
                            f"an input of shape {x.shape} is {x.dtype}: pass x.double()")
    return inputs
