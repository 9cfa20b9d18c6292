"""The softmaxes, fast: the row statistics of rows.py, and attention's mask and softmax as one
op each way.

The textbook (ops/nn.py, ops/attention.py) builds masked attention from two ops with an array
each way:

    masked = where(mask, S, -inf)          Where:    forward one array, backward another
    P = softmax(masked)                    Softmax:  x - max, exp, / sum: three arrays

FusedMaskedSoftmax does the same arithmetic in place, a block of rows at a time (rows.by_rows:
the temporaries stay in the CPU's cache), and its backward is one FusedSoftmaxGrad op instead
of four elementwise ops and the Where's.
"""
import math

from .. import backend
from ..autograd import Function
from ..ops import args
from ..ops.nn import LogSoftmax, Softmax
from . import rows


class FusedSoftmax(Softmax):
    """Softmax (the same formulas, the same backward), with the row max and sum of rows.py."""

    def forward(self, x, axis):
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
        e = xp.exp(x - rows.max_along(x, axis))
        return e / rows.sum_along(e, axis)


class FusedLogSoftmax(LogSoftmax):
    """LogSoftmax (the same formulas, the same backward), with the row max and sum of rows.py."""

    def forward(self, x, axis):
        self.axis = axis = args.axis(axis, x.shape)
        xp = backend.array_module(x)
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

        rows.by_rows(softmax_grad, p, g, d)
        return d

    def backward(self, e):
        p, g = self.inputs
        u = (e * p).sum(axis=-1, keepdims=True)
        gp = e * (g - (g * p).sum(axis=-1, keepdims=True)) - g * u if self.needs_grad(0) else None
        gg = p * (e - u) if self.needs_grad(1) else None
        return gp, gg
