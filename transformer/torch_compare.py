"""Check your model against the industry engine: one forward and backward in both, side by side.

    compare_with_torch(model, batch)        prints the table, returns its numbers

The loss is the model's training loss on `batch`:
    GPT          batch = ids (B, T)                 next-token cross-entropy of model(ids)
    EncoderOnly  batch = ids, (ids, labels) or      cross-entropy of masked_token_logits(ids) against labels
                 (ids, labels, classes)             (default ids; -100 = not scored), plus that of
                                                    classify(ids) against classes when given
    Transformer  batch = (src, tgt)                 teacher forcing: model(src, tgt[:, :-1]) scored on
                                                    tgt[:, 1:], pad_id ignored

One row per parameter: the largest |gradient|, the largest absolute difference between the two
engines' gradients, and that difference relative to the largest |gradient| of the parameter, or to
a tenth of the model's largest |gradient| where the parameter's own is smaller (elementwise ratios blow
up where a gradient is near 0).  A gradient that is 0 in exact arithmetic is all rounding noise:
W_K's bias adds q . b to every score of a row, which no softmax sees (RoPE aside, which rotates b
differently at each position).  float32 agrees to about 1e-6, float64 to about 1e-14: what is
left is rounding, summed in a different order.  A real mistake (a transposed
weight, a missing scale) shows up as a difference of the size of the gradient itself, in the
module that has it.
"""
import math

import microtensor as mt
from microtensor import nn
from microtensor.i18n import _

from .mlm import IGNORE
from .models import GPT, EncoderOnly, Transformer
from .torch_bridge import _torch, to_torch, translate


def _batch(model, batch):
    """The batch as a tuple of integer Tensors, in the form the model's loss takes (a tuple holds several)."""
    items = batch if isinstance(batch, tuple) else (batch,)
    items = tuple(x if isinstance(x, mt.Tensor) else mt.tensor(x) for x in items)
    expected = {GPT: (1,), EncoderOnly: (1, 2, 3), Transformer: (2,)}[type(model)]
    if len(items) not in expected:
        forms = {GPT: 'ids (B, T)', EncoderOnly: 'ids, (ids, labels) or (ids, labels, classes)',
                 Transformer: '(src, tgt)'}
        raise ValueError(f"compare_with_torch: a {type(model).__name__} takes a batch of the form {forms[type(model)]}, "
                         f"got {len(items)} arrays")
    return items


def _loss(kind, model, batch, cross_entropy):
    """(outputs, loss) of one batch: the same code runs in both engines (cross_entropy is the engine's)."""
    if kind is GPT:
        ids, = batch
        logits = model(ids)
        return logits, cross_entropy(logits[:, :-1], ids[:, 1:], None)
    if kind is EncoderOnly:
        ids, labels, *classes = batch if len(batch) > 1 else (batch[0], batch[0])
        logits = model.masked_token_logits(ids)
        loss = cross_entropy(logits, labels, IGNORE)
        return logits, (loss + cross_entropy(model.classify(ids), classes[0], None) if classes else loss)
    src, tgt = batch
    logits = model(src, tgt[:, :-1])
    return logits, cross_entropy(logits, tgt[:, 1:], model.pad_id)


def side_by_side(model, batch):
    """One forward and backward of `model` and of to_torch(model) on `batch`:
    {'loss': (microtensor, PyTorch), 'outputs': (both as host arrays), 'grads': {name: (both, microtensor's
    layout; zeros where a parameter got no gradient)}, 'unused': the names microtensor's backward did not reach}."""
    torch = _torch()
    import torch.nn.functional as F
    if type(model) not in (GPT, EncoderOnly, Transformer):
        raise TypeError(f"compare_with_torch: compares GPT, EncoderOnly and Transformer models, not "
                        f"{type(model).__name__}")
    if model.training and any(_dropout(m) > 0 for m in model.modules()):
        raise ValueError("compare_with_torch: the model uses dropout in training mode, and each engine draws its own "
                         "random masks; call model.eval() first (or build it with dropout=0)")
    batch = _batch(model, batch)
    net = to_torch(model)

    def torch_cross_entropy(logits, targets, ignore):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=-100 if ignore is None else ignore)

    outputs, loss = _loss(type(model), model, batch, lambda x, t, ignore: mt.cross_entropy(x, t, ignore_index=ignore))
    names, params = zip(*model.named_parameters())
    grads = mt.grad(loss, list(params), allow_unused=True)
    torch_batch = tuple(torch.from_numpy(x.numpy()).long() for x in batch)
    torch_outputs, torch_loss = _loss(type(model), net, torch_batch, torch_cross_entropy)
    torch_names, torch_params = zip(*net.named_parameters())
    torch_grads = torch.autograd.grad(torch_loss, torch_params, allow_unused=True)
    unused = {n for n, g in zip(names, grads) if g is None}
    mine = {n: (mt.zeros(*p.shape, dtype=p.dtype) if g is None else g).numpy() for n, p, g in zip(names, params, grads)}
    theirs = translate(model, {n: torch.zeros_like(p) if g is None else g
                               for n, p, g in zip(torch_names, torch_params, torch_grads)},
                       'compare_with_torch', buffers=False)
    return {'loss': (loss.item(), torch_loss.item()), 'outputs': (outputs.numpy(), torch_outputs.detach().numpy()),
            'grads': {n: (mine[n], theirs[n]) for n in names}, 'unused': unused}


def _dropout(module):
    """The dropout probability a module applies itself (0 when none; an nn.Dropout inside counts on its own)."""
    p = module.p if isinstance(module, nn.Dropout) else getattr(module, 'dropout', 0)
    return p if isinstance(p, (int, float)) else 0


def difference(a, b, floor=0.0):
    """(max |a - b|, max |a - b| / max(max |b|, floor)): b is the reference (0 when both are all zeros)."""
    largest = float(abs(a - b).max()) if a.size else 0.0
    scale = max(float(abs(b).max()) if b.size else 0.0, floor)
    return largest, (largest / scale if scale else (0.0 if largest == 0 else math.inf))


def gradient_differences(grads):
    """[{'name', 'shape', 'max_grad', 'abs', 'rel'}] for side_by_side's grads, rel as the docstring says."""
    floor = 0.1 * max(float(abs(theirs).max()) for _, theirs in grads.values() if theirs.size)
    rows = []
    for name, (mine, theirs) in grads.items():
        a, r = difference(mine, theirs, floor)
        rows.append({'name': name, 'shape': tuple(mine.shape), 'max_grad': float(abs(theirs).max()), 'abs': a,
                     'rel': r})
    return rows


def compare_with_torch(model, batch, file=None):
    """Print the comparison table (to `file`, default stdout); return {'loss', 'outputs': (abs, rel),
    'rows': [{'name', 'shape', 'max_grad', 'abs', 'rel'}], 'largest': (module, parameter, rel)}."""
    result = side_by_side(model, batch)
    out_abs, out_rel = difference(*result['outputs'])
    rows = gradient_differences(result['grads'])
    worst = max(rows, key=lambda row: row['rel'])
    module, _dot, parameter = worst['name'].rpartition('.')
    mt_loss, torch_loss = result['loss']
    dtype = model.parameters()[0].dtype
    lines = [_("{model} ({dtype}): one forward and backward in microtensor and in PyTorch").format(
                 model=type(model).__name__, dtype=dtype),
             _("loss: microtensor {mine:.8g}, PyTorch {theirs:.8g} (difference {difference:.1e})").format(
                 mine=mt_loss, theirs=torch_loss, difference=abs(mt_loss - torch_loss)),
             _("outputs {shape}: max abs difference {abs:.1e}, max relative {rel:.1e}").format(
                 shape=result['outputs'][0].shape, abs=out_abs, rel=out_rel),
             '']
    header = (_('parameter'), _('shape'), 'max |grad|', _('max abs diff'), _('max rel diff'))
    cells = [header] + [(_("{name} (no gradient)").format(name=row['name']) if row['name'] in result['unused']
                         else row['name'], str(row['shape']), f"{row['max_grad']:.3e}", f"{row['abs']:.1e}",
                         f"{row['rel']:.1e}")
                        for row in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines += ['  '.join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cell, widths))).rstrip()
              for cell in cells]
    lines.append(_("largest relative difference: {rel:.1e}, in {module} ({parameter})").format(
        rel=worst['rel'], module=module or _('the model'), parameter=parameter))
    print('\n'.join(lines), file=file)
    return {'loss': result['loss'], 'outputs': (out_abs, out_rel), 'rows': rows,
            'largest': (module, parameter, worst['rel'])}
