"""Probes for the two gradient lessons: the residual "+1" highway and softmax saturation
(and rank_collapse: how alike the tokens of each layer's output have become).

    with ResidualProbe(model) as residual, SaturationProbe(model) as saturation:
        loss = next_token_loss(model(ids), ids)
        loss.backward()
    print(residual.table())
    print(saturation.table())

Residual highway.  For y = x + alpha * F(x) the gradient reaching x is

    dL/dx = dL/dy  +  alpha * (dF/dx)^T dL/dy
            ------     ----------------------
            via +1     via F

A hook on y reads dL/dy (the "+1" part, exactly); a hook on x reads the total, and
the F part is the difference (x feeds only this block: the add and F).  The share
of the highway is |via +1| / (|via +1| + |via F|).

Softmax saturation.  p = softmax(s) has Jacobian diag(p) - p p^T: its diagonal is
p(1-p), which vanishes when a row turns one-hot (max p -> 1, entropy -> 0), and the
gradient reaching the scores, dL/ds = p * (g - sum(g * p)), vanishes with it.
saturation_stats works on any scores/weights tensor; SaturationProbe reads each
MultiHeadAttention's last_scores / last_weights (retain_grad for their gradients).

Probes only read, through the model's own hooks (layer.residual_probe, forward
hooks, tensor hooks, retain_grad); outside the `with` block they cost nothing.
"""
from typing import NamedTuple

import microtensor as mt
from microtensor.inspect import norm
from microtensor.inspect.table import fmt, format_table

from .attention import MultiHeadAttention


# ---------------------------------------------------------------------------- residual highway
class ResidualRecord:
    """One residual connection in one forward pass; the norms arrive during backward."""

    def __init__(self, layer, branch):
        self.layer, self.branch = layer, branch
        self.via_identity = self.via_F = None
        self.grad_y = None  # dL/dy, kept from y's hook until x's hook subtracts it

    @property
    def identity_share(self):
        if self.via_identity is None or self.via_F is None:
            return None
        total = self.via_identity + self.via_F
        return self.via_identity / total if total > 0 else None


class ResidualProbe:
    """Records, for every residual connection of `model`, the gradient through +1 and through F."""

    def __init__(self, model):
        self.layers = [(name or type(m).__name__, m) for name, m in model.named_modules()
                       if hasattr(m, 'residual_probe')]
        if not self.layers:
            raise ValueError(f"ResidualProbe: {type(model).__name__} has no layer with a residual_probe "
                             "(EncoderLayer / DecoderLayer, or any module calling residual_connection)")
        self.records = []
        self._previous = []

    def __enter__(self):
        for name, layer in self.layers:
            self._previous.append(layer.residual_probe)
            layer.residual_probe = self._watcher(name, layer.residual_probe)
        return self

    def __exit__(self, *exc):
        for (_, layer), previous in zip(self.layers, self._previous):
            layer.residual_probe = previous
        self._previous = []

    def _watcher(self, layer_name, previous):
        def watch(layer, branch, x, fx, y):
            if previous is not None:  # probes stack: another one may be watching too
                previous(layer, branch, x, fx, y)
            if y.requires_grad:
                self._watch(ResidualRecord(layer_name, branch), layer.residual, x, y)
        return watch

    def _watch(self, record, residual, x, y):
        self.records.append(record)

        def at_y(g):  # runs first: y is computed from x
            record.grad_y = g if residual else None
            record.via_identity = norm(g) if residual else 0.0

        def at_x(g):
            via_F = g if record.grad_y is None else g - record.grad_y
            record.via_F, record.grad_y = norm(via_F), None

        y.register_hook(at_y)
        if x.requires_grad:
            x.register_hook(at_x)

    def table(self):
        header = ('layer', 'branch', '|via +1|', '|via F|', '|F|/|+1|', '+1 share')
        rows = [(r.layer, r.branch, fmt(r.via_identity), fmt(r.via_F),
                 fmt(r.via_F / r.via_identity if r.via_identity and r.via_F is not None else None),
                 '-' if r.identity_share is None else f"{100 * r.identity_share:.1f}%")
                for r in self.records]
        return format_table(header, rows, '<<>>>>')


# ---------------------------------------------------------------------------- softmax saturation
class SaturationStats(NamedTuple):
    score_var: float   # Var(scores) over every entry (None when only weights were given)
    max_p: float       # mean over query rows of the largest probability (1: one-hot)
    mean_p1p: float    # mean of p(1-p), the Jacobian's diagonal (0: saturated)
    entropy: float     # mean over rows of -sum p log p, in nats (log n: uniform, 0: one-hot)

    def __str__(self):
        return (f"Var(scores) {fmt(self.score_var, '.3g')}  max p {self.max_p:.3f}  mean p(1-p) {self.mean_p1p:.3g}  "
                f"entropy {self.entropy:.3g}")


def saturation_stats(scores=None, weights=None):
    """How saturated a softmax over the last axis is; give the scores, the weights, or both.

    scores: the softmax's input (..., n); weights: its output (default softmax(scores)).
    With a mask, give the masked weights: masked keys (p = 0) then count as saturated entries.
    """
    if scores is None and weights is None:
        raise ValueError("saturation_stats: give the scores (softmax input), the weights (its output), or both")
    with mt.no_grad():
        p = weights if weights is not None else scores.softmax(axis=-1)
        score_var = None if scores is None else scores.var(correction=0).item()
        max_p = p.amax(dim=-1).mean().item()
        mean_p1p = (p * (1 - p)).mean().item()
        plogp = p * p.clip(min=1e-30).log()  # p log p -> 0 as p -> 0
        entropy = -plogp.sum(axis=-1).mean().item()
    return SaturationStats(score_var, max_p, mean_p1p, entropy)


class SaturationRow(NamedTuple):
    attention: str
    head: int
    stats: SaturationStats
    grad_weights: float   # |dL/dp|: the gradient arriving at the softmax's output
    grad_scores: float    # |dL/ds|: what gets back through the softmax (None before backward)


class SaturationProbe:
    """Per attention module and head: saturation_stats, and the gradient norms around the softmax."""

    def __init__(self, model):
        self.attentions = [(name or type(m).__name__, m) for name, m in model.named_modules()
                           if isinstance(m, MultiHeadAttention)]
        if not self.attentions:
            raise ValueError(f"SaturationProbe: {type(model).__name__} has no MultiHeadAttention")
        self.records = []  # (name, scores, weights) per forward call
        self._handles = []

    def __enter__(self):
        self._handles = [m.register_forward_hook(self._hook(name)) for name, m in self.attentions]
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _hook(self, name):
        def after_forward(module, args, output):
            scores, weights = module.last_scores, module.last_weights
            if weights.requires_grad:  # keep their gradients: they are not leaves
                scores.retain_grad()
                weights.retain_grad()
            self.records.append((name, scores, weights))
        return after_forward

    def rows(self):
        rows = []
        with mt.no_grad():  # slicing the heads out records no graph
            for name, scores, weights in self.records:
                for head in range(scores.shape[1]):  # (B, h, T_q, T_k)
                    stats = saturation_stats(scores[:, head], weights[:, head])
                    grads = [None if t.grad is None else norm(t.grad[:, head]) for t in (weights, scores)]
                    rows.append(SaturationRow(name, head, stats, *grads))
        return rows

    def table(self):
        header = ('attention', 'head', 'Var(scores)', 'max p', 'mean p(1-p)', 'entropy', '|dL/dp|', '|dL/dscores|')
        rows = [(r.attention, str(r.head), fmt(r.stats.score_var), f"{r.stats.max_p:.3f}",
                 f"{r.stats.mean_p1p:.4f}", f"{r.stats.entropy:.3f}", fmt(r.grad_weights), fmt(r.grad_scores))
                for r in self.rows()]
        return format_table(header, rows, '<>>>>>>>')



# ---------------------------------------------------------------------------- rank collapse
def token_uniformity(X):
    """||X - 1 mean(X)||_F / ||X||_F for hidden states X (B, T, d_model), summed over the batch.

    1 mean(X) repeats the mean token in every row: the nearest matrix whose rows are all equal
    (the rank-1 form 1 x^T of Dong et al. 2021, "Attention is not all you need: pure attention
    loses rank doubly exponentially with depth").  1: the tokens share nothing; 0: every token
    has become the same vector, and the sequence has collapsed.
    """
    with mt.no_grad():
        centred = X - X.mean(axis=-2, keepdims=True)
        return ((centred * centred).sum() / (X * X).sum()).sqrt().item()


def rank_collapse(model, x, **forward_kwargs):
    """token_uniformity of the output of each layer in model.layers, for one forward pass of x."""
    outputs = []
    handles = [layer.register_forward_hook(lambda layer, args, out: outputs.append(out)) for layer in model.layers]
    try:
        with mt.no_grad():
            model(x, **forward_kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return [token_uniformity(out) for out in outputs]
