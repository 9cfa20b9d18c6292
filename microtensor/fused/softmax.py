"""The softmaxes, fast: the row statistics of rows.py, and attention's mask and softmax as one
op each way.

The textbook (ops/nn.py, ops/attention.py) builds masked attention from two ops with an array
each way:

    masked = where(mask, S, -inf)          Where:    forward one array, backward another
    P = softmax(masked)                    Softmax:  x - max, exp, / sum: three arrays

FusedMaskedSoftmax does the same arithmetic in place, a block of rows at a time (rows.by_rows:
the temporaries stay in the CPU's cache), and its backward is one FusedSoftmaxGrad op instead
of four elementwise ops and the Where's.  Where a C compiler is found, both run as one compiled loop
over the rows (compiled.py, kernels.c): the same formulas, number by number.
"""
import math

from .. import backend
from ..autograd import Function
from ..ops import args
from ..ops.nn import LogSoftmax, Softmax
from . import compiled, rows


class FusedSoftmax(Softmax):
    """Softmax (the same formulas, the same backward), with the row max and sum of rows.py."""

    def forward(self, x, axis):
        if x.size == 0:  # (the textbook's empty answer)
            return super().forward(x, axis)
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        e = xp.exp(x - rows.max_along(x, axis))
        return e / rows.sum_along(e, axis)


class FusedLogSoftmax(LogSoftmax):
    """LogSoftmax (the same formulas, the same backward), with the row max and sum of rows.py, or
    over the last axis as one compiled loop (compiled.py)."""

    def forward(self, x, axis):
        if x.size == 0:  # (the textbook's empty answer)
            return super().forward(x, axis)
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        if axis == x.ndim - 1 and x.dtype == compiled.FLOAT32:  # over rows: the compiled loop, where it can run
            x_rows = xp.ascontiguousarray(x)  # e.g. logits[:, :-1] (the next-token loss): one block of rows
            if compiled.can_run(x_rows):
                y = xp.empty(x.shape, x.dtype)
                compiled.run('log_softmax', x_rows, y)
                return y
        shifted = x - rows.max_along(x, axis)
        return shifted - xp.log(rows.sum_along(xp.exp(shifted), axis))


class FusedMaskedSoftmax(Function):
    """P = softmax(where(mask, S, -inf)) over the last axis      S: (..., T_q, T_k) scores
        dL/dS = P * (G - sum(G * P))                              (= 0 where masked: P is 0 there)

    mask: a boolean array broadcastable to S (True = may attend), or None; it is a
    constant, not an input.  A row with no key allowed (all -inf) gets P = 0, hence dL/dS = 0,
    as in the textbook's masked_softmax: its max is taken as the lowest finite float (so
    exp(-inf - max) = 0, not nan) and its sum as 1 (every other row's sum is >= 1 anyway: its
    largest entry contributes exp(0) = 1).
    """

    def forward(self, s, mask):
        xp = backend.array_module(s)
        allowed = _mask_rows(mask, s.shape, xp)
        if allowed is not None and compiled.can_run(s, allowed):
            p = xp.empty(s.shape, s.dtype)
            compiled.run('masked_softmax', s, allowed, p, numbers=[len(allowed)])
            return p
        lowest = xp.finfo(s.dtype).min

        def softmax(p):  # in place, a block of rows at a time (rows.by_rows)
            p -= xp.maximum(rows.max_along(p, -1), lowest)  # exp(x - max): no overflow
            xp.exp(p, out=p)
            p /= xp.maximum(rows.sum_along(p, -1), 1)

        if mask is None:
            p = s.copy()  # the op's one new array
        else:  # where(mask, s, -inf), ~1.3x faster than numpy's where
            p = xp.full(s.shape, -math.inf, dtype=s.dtype)
            xp.copyto(p, s, where=mask)
        rows.by_rows(softmax, p)
        return p

    def backward(self, g):
        return (FusedSoftmaxGrad.apply(self.output, g),)


class FusedSoftmaxGrad(Function):
    """The softmax's backward as one op, over the last axis:
        D = P * (G - s),   s = sum(G * P)     (einsum: the row sums without a temporary G * P)
    and its own derivatives (for second derivatives), with E the gradient arriving at D
    and u = sum(E * P):
        dL/dP = E * (G - s) - G * u,    dL/dG = P * (E - u)
    """

    def forward(self, p, g):
        xp = backend.array_module(p)
        d = xp.empty(p.shape, xp.result_type(p, g))

        def softmax_grad(p, g, d):  # a block of rows at a time (rows.by_rows), into d
            xp.subtract(g, xp.einsum('...k,...k->...', g, p)[..., None], out=d)
            d *= p

        compiled.by_rows('softmax_grad', softmax_grad, p, g, d)
        return d

    def backward(self, e):
        p, g = self.inputs
        u = (e * p).sum(axis=-1, keepdims=True)
        gp = e * (g - (g * p).sum(axis=-1, keepdims=True)) - g * u if self.needs_grad(0) else None
        gg = p * (e - u) if self.needs_grad(1) else None
        return gp, gg


def _mask_rows(mask, shape, xp):
    """The mask as rows (M, T) that repeat down the scores' rows (row i of the scores, flattened to
    (rows, T), takes row i % M), or None when it is not of that form (then the numpy form runs).
    No mask: one row of True.  A causal (T, T) mask over (B, H, T, T) scores gives M = T."""
    if mask is None:
        return xp.ones((1, shape[-1]), dtype=bool)
    axes = (1,) * (len(shape) - mask.ndim) + mask.shape
    for i in range(len(shape)):
        if axes[i:] == shape[i:]:  # the scores' last axes, after axes of 1 that broadcast over every row
            return xp.ascontiguousarray(mask).reshape(-1, shape[-1]) if mask.size else None
        if axes[i] != 1:
            return None
    return None
