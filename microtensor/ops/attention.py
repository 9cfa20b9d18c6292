"""Attention's mask and softmax as one op (the fast path of transformer.MultiHeadAttention).

The composed version, which transformer.attention.attend builds by default and the lessons
step through, is two ops with an array each way:

    masked = where(mask, S, -inf)          Where:    forward one array, backward another
    P = softmax(masked)                    Softmax:  x - max, exp, / sum: three arrays

MaskedSoftmax does the same arithmetic in the same order (so P is the same, bit for bit),
a block of rows at a time (backend.by_rows: the temporaries stay in the CPU's cache), and
its backward is one SoftmaxGrad op instead of four elementwise ops and the Where's.
tests/test_fused.py checks both against the composed version.
"""
import math

from .. import backend
from ..autograd import Function
from ..convert import param_array


class MaskedSoftmax(Function):
    """P = softmax(where(mask, S, -inf)) over the last axis      S: (..., T_q, T_k) scores
        dL/dS = P * (G - sum(G * P))                              (= 0 where masked: P is 0 there)

    mask: a boolean array broadcastable to S (True = may attend), or None; it is a
    constant, not an input.  Every query row must keep at least one key.
    """

    def forward(self, s, mask):
        xp = backend.array_module(s)

        def softmax(p):  # in place, a block of rows at a time (backend.by_rows)
            p -= backend.max_along(p, -1)  # exp(x - max): no overflow
            xp.exp(p, out=p)
            p /= backend.sum_along(p, -1)

        if mask is None:
            p = s.copy()  # the op's one new array
        else:  # where(mask, s, -inf), ~1.3x faster than numpy's where
            p = xp.full(s.shape, -math.inf, dtype=s.dtype)
            xp.copyto(p, s, where=mask)
        backend.by_rows(softmax, p)
        return p

    def backward(self, g):
        return (SoftmaxGrad.apply(self.output, g),)


class SoftmaxGrad(Function):
    """The softmax's backward as one op, over the last axis:
        D = P * (G - s),   s = sum(G * P)     (einsum: the row sums without a temporary G * P)
    and its own derivatives (for second derivatives), with E the gradient arriving at D
    and u = sum(E * P):
        dL/dP = E * (G - s) - G * u,    dL/dG = P * (E - u)
    """

    def forward(self, p, g):
        xp = backend.array_module(p)
        d = xp.empty(p.shape, xp.result_type(p, g))

        def softmax_grad(p, g, d):  # a block of rows at a time (backend.by_rows), into d
            xp.subtract(g, xp.einsum('...k,...k->...', g, p)[..., None], out=d)
            d *= p

        backend.by_rows(softmax_grad, p, g, d)
        return d

    def backward(self, e):
        p, g = self.inputs
        u = (e * p).sum(axis=-1, keepdims=True)
        gp = e * (g - (g * p).sum(axis=-1, keepdims=True)) - g * u if self.needs_grad(0) else None
        gg = p * (e - u) if self.needs_grad(1) else None
        return gp, gg


def masked_softmax(scores, mask=None):
    """softmax(where(mask, scores, -inf), axis=-1) as one op; mask: a boolean Tensor or array
    on the scores' device (checked as every parameter array is: convert.param_array)."""
    if mask is not None:
        mask = param_array(mask, scores, 'masked_softmax', 'mask')
        if mask.dtype != bool:
            raise TypeError(f"masked_softmax: the mask must be boolean (True = may attend), not {mask.dtype}; "
                            "e.g. mask != 0")
        if not backend.broadcasts_to(mask.shape, scores.shape):
            raise ValueError(f"masked_softmax: a mask of shape {mask.shape} does not broadcast to the scores' "
                             f"shape {scores.shape}")
    return MaskedSoftmax.apply(scores, mask=mask)
