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

Any model, written for PyTorch or for microtensor, is probed the same way: where the model has no
residual_connection or MultiHeadAttention of transformer/'s, the probes find the residual adds and
the softmaxes in the graph each module's call records (ModuleCalls).  A residual add is y = a + b
with b the output of a module called inside the layer and a an input b was computed from
(x + self.attn(self.ln_1(x))); a softmax is a Softmax op, its input the scores.
"""
import math
from typing import NamedTuple

import microtensor as mt
from microtensor.fused.softmax import FusedMaskedSoftmax
from microtensor.inspect import norm
from microtensor.inspect.modules import tensors_in
from microtensor.inspect.table import fmt, format_table
from microtensor.ops.nn import Softmax

from .attention import MultiHeadAttention

SOFTMAXES = (Softmax, FusedMaskedSoftmax)  # (FusedSoftmax is a Softmax)


# ---------------------------------------------------------------------------- any model's graph
class ModuleCalls:
    """Forward hooks on every module of `model`: after each call, on_op(name, fn) for each op the call
    made that no call inside it made (the innermost module's ops, as record_modules names them).
    outputs: {id(tensor): module name} of every call's output so far."""

    def __init__(self, model, on_op):
        self.modules = list(model.named_modules())
        self.on_op = on_op
        self.outputs, self._kept, self._claimed, self._handles = {}, [], set(), []

    def __enter__(self):
        self._handles = [m.register_forward_hook(self._hook(name)) for name, m in self.modules]
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        self._handles, self._kept, self.outputs = [], [], {}

    def _hook(self, name):
        def after_forward(module, args, output):
            arguments = {id(t) for t in tensors_in(args)}
            stack, seen, made = list(tensors_in(output)), set(), []
            while stack:  # back from the output to the arguments: the ops this call made
                t = stack.pop()
                fn = t.creator
                if id(t) in seen or id(t) in arguments or fn is None or fn.inputs is None:
                    continue
                seen.add(id(t))
                if id(fn) not in self._claimed:
                    self._claimed.add(id(fn))
                    self._kept.append(fn)  # (ids stay unique while the graph is alive)
                    made.append(fn)
                stack.extend(fn.inputs)
            for fn in reversed(made):  # about the order the forward made them in
                self.on_op(name, fn)
            for t in tensors_in(output):
                self.outputs.setdefault(id(t), name)
                self._kept.append(t)
        return after_forward


def descends_from(b, a):
    """Is tensor b computed from tensor a (a in b's graph)?"""
    stack, seen = [b], set()
    while stack:
        t = stack.pop()
        if t is a:
            return True
        if id(t) in seen or t.creator is None or t.creator.inputs is None:
            continue
        seen.add(id(t))
        stack.extend(t.creator.inputs)
    return False


def relative(name, layer):
    """The first part of a module's name below `layer` ('transformer.h.0.attn.c_proj' in
    'transformer.h.0': 'attn')."""
    rest = name[len(layer) + 1:] if layer else name
    return rest.split('.')[0] or name


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
        # a model without transformer's layers: its residual adds found in the graph
        self.calls = None if self.layers else ModuleCalls(model, self._found)
        self.records = []
        self._previous = []

    def __enter__(self):
        if self.calls is not None:
            self.calls.__enter__()
        for name, layer in self.layers:
            self._previous.append(layer.residual_probe)
            layer.residual_probe = self._watcher(name, layer.residual_probe)
        return self

    def __exit__(self, *exc):
        if self.calls is not None:
            self.calls.__exit__(*exc)
        for (_, layer), previous in zip(self.layers, self._previous):
            layer.residual_probe = previous
        self._previous = []

    def _found(self, layer, fn):
        """An op the call of module `layer` made: a residual add y = x + F(x), F through a module call?"""
        if type(fn).__name__ != 'Add' or len(fn.inputs) != 2:
            return
        y = fn._output()
        for x, fx in (fn.inputs, fn.inputs[::-1]):
            branch = self.calls.outputs.get(id(fx))
            if y is not None and y.requires_grad and branch is not None and descends_from(fx, x):
                self._watch(ResidualRecord(layer or '(model)', relative(branch, layer)), True, x, y)
                return

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

    scores: the softmax's input (..., n); weights: its output (default softmax(scores)).  Var(scores)
    is over the finite scores (a causal mask's -inf are not scores).
    With a mask, give the masked weights: masked keys (p = 0) then count as saturated entries.
    """
    if scores is None and weights is None:
        raise ValueError("saturation_stats: give the scores (softmax input), the weights (its output), or both")
    with mt.no_grad():
        p = weights if weights is not None else scores.softmax(axis=-1)
        score_var = None if scores is None else scores[scores.abs() < math.inf].var(correction=0).item()
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
        # a model without transformer's attention: its softmaxes found in the graph
        self.calls = None if self.attentions else ModuleCalls(model, self._found)
        self.records = []  # (name, scores, weights) per forward call
        self._handles = []

    def __enter__(self):
        if self.calls is not None:
            self.calls.__enter__()
        self._handles = [m.register_forward_hook(self._hook(name)) for name, m in self.attentions]
        return self

    def __exit__(self, *exc):
        if self.calls is not None:
            self.calls.__exit__(*exc)
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _found(self, name, fn):
        """An op the call of module `name` made: a softmax over attention scores?"""
        if not isinstance(fn, SOFTMAXES):
            return
        scores, weights = fn.inputs[0], fn._output()
        if weights is not None and scores.ndim >= 2:
            self._keep(name or '(model)', scores, weights)

    def _hook(self, name):
        def after_forward(module, args, output):
            self._keep(name, module.last_scores, module.last_weights)
        return after_forward

    def _keep(self, name, scores, weights):
        if weights.requires_grad:  # keep their gradients: they are not leaves
            scores.retain_grad()
            weights.retain_grad()
        self.records.append((name, scores, weights))

    def rows(self):
        rows = []
        with mt.no_grad():  # slicing the heads out records no graph
            for name, scores, weights in self.records:
                s, p, g_s, g_p = scores, weights, scores.grad, weights.grad
                if scores.ndim != 4:  # one head's (B, T_q, T_k), or (T_q, T_k): as head 0
                    s, p, g_s, g_p = (None if t is None else t.unsqueeze(-3) for t in (s, p, g_s, g_p))
                for head in range(s.shape[-3]):  # (B, h, T_q, T_k)
                    pick = (Ellipsis, head, slice(None), slice(None))
                    grads = [None if g is None else norm(g[pick]) for g in (g_p, g_s)]
                    rows.append(SaturationRow(name, head, saturation_stats(s[pick], p[pick]), *grads))
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
