"""cross_entropy: L = mean over the n positions of -log softmax(logits)[target].

logits: (..., C) (the class axis last); targets: (...) integer class ids, a parameter
(an array, not an input with a gradient).  Forward flattens the positions to rows, (n, C).

Derive, for one row z with target t:  -log softmax(z)_t = -z_t + log sum_c exp(z_c), so

    d/dz_c = softmax(z)_c - [c == t]        (softmax minus the one-hot target)

and the mean divides by n.  Forward keeps softmax as self.p (n, C) and the target ids as
self.targets (n,).  L is a scalar, so g is a 0-d Tensor; the result has the logits' shape.

Second order: not asked.  backward may work on arrays (wrap the result with
mt.as_tensor); `check` tests first-order gradients only.
"""
import microtensor as mt
from microtensor import Function, backend


class CrossEntropy(Function):
    """L = -mean(log softmax(logits)[i, targets_i])        logits: (..., C), targets: (...) -> L: ()"""

    def forward(self, logits, targets):
        xp = backend.array_module(logits)
        z = logits.reshape(-1, logits.shape[-1])
        self.targets = targets.reshape(-1).copy()
        shifted = z - z.max(axis=-1, keepdims=True)
        logp = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))
        self.p = xp.exp(logp)
        self.n = len(self.targets)
        return -logp[xp.arange(self.n), self.targets].sum() / self.n

    def backward(self, g):
        # hint: per row, softmax minus the one-hot of the target; all divided by the number of rows self.n.
        #   Build it on arrays, then mt.as_tensor(array).
        (logits,) = self.inputs
        xp = backend.array_module(self.p)
        d = self.p.copy()
        d[xp.arange(self.n), self.targets] -= 1
        return (g * mt.as_tensor(d.reshape(logits.shape) / self.n),)
