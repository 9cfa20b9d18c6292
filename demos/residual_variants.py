"""Lesson: residual variants -- standard, scaled, gated -- and what they do to the "+1" share.

The attention article lists the variants of the residual connection:

    standard   x + f(x)           simple and effective       the standard Transformer
    scaled     x + alpha f(x)     controls the increment     when training is unstable
    gated      x + g(x) f(x)      controls the flow          advanced architectures

(its fourth, "dense: Concat(x, f(x))", changes the width, so layers would no longer stack).
Here g(x) = sigmoid(h W_g + b_g) per channel (transformer.residual.ResidualGate, h what the
sub-layer reads), built with EncoderLayer(..., gate=True).  dL/dx = dL/dy (the "+1" road)
+ the F road, which the gate scales by g (and its own small gradient adds to), so a
closing gate hands the gradient to the highway.  ResidualProbe measures it: the "+1 share"
|via +1| / (|via +1| + |via F|) of every connection.

Part 1: one random batch through a 6-layer Pre-LN encoder, at initialisation, for the
standard, scaled and gated forms (the gate's bias set to start it nearly closed, half open
or nearly open).  Part 2: a 2-layer gated GPT learns the copy task; the gates and the
share are read before and after training.

    python -m demos.residual_variants            # the defaults (run time: end of --help)
    python -m demos.residual_variants --steps 400
"""
import random

import microtensor as mt
from microtensor import i18n, optim
from microtensor.i18n import N_, _
from transformer import GPT, Encoder
from transformer.probes import ResidualProbe
from transformer.residual import ResidualGate

from . import budget, claims
from .copy_task import VOCAB, copy_batch, copy_loss
from .report import check_learned, check_loss, command_line, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.3.5')]



def set_gate_bias(model, bias):
    """Start every gate at sigmoid(bias) (W_g stays small and random)."""
    for m in model.modules():
        if isinstance(m, ResidualGate):
            m.W_g.bias.data = mt.full(m.W_g.bias.shape, float(bias), device=m.W_g.bias.device).data


def probe(model, forward):
    """(mean "+1" share over every residual connection, mean gate value or None) for one forward + backward;
    forward(model) returns the loss."""
    gates = []
    handles = [m.register_forward_hook(lambda m, args, g: gates.append(g.mean().item()))
               for m in model.modules() if isinstance(m, ResidualGate)]
    with ResidualProbe(model) as residual:
        forward(model).backward()
    for handle in handles:
        handle.remove()
    shares = [r.identity_share for r in residual.records]
    return sum(shares) / len(shares), (sum(gates) / len(gates) if gates else None)


VARIANTS = [  # (name, layer options, gate bias)
    (N_('standard x + f(x)'), {}, None),
    (N_('scaled x + 0.5 f(x)'), {'alpha': 0.5}, None),
    (N_('scaled x + 0.1 f(x)'), {'alpha': 0.1}, None),
    (N_('gated, b_g = +3 (open)'), {'gate': True}, 3.0),
    (N_('gated, b_g = 0 (half)'), {'gate': True}, 0.0),
    (N_('gated, b_g = -3 (closed)'), {'gate': True}, -3.0),
]


def shares_at_init(n_layers=6, d_model=16, n_heads=2, B=4, n=8, seed=0, device='cpu'):
    """{variant name: (mean +1 share, mean gate)} for L = sum(Encoder(x) * G), G ~ N(0, 1)."""
    out = {}
    for name, options, bias in VARIANTS:
        mt.manual_seed(seed)
        encoder = Encoder(n_layers, d_model, n_heads, **options).to(device)
        if bias is not None:
            set_gate_bias(encoder, bias)
        x = mt.randn(B, n, d_model).to(device).requires_grad_()  # drawn on the CPU: the same on every device
        G = mt.randn(B, n, d_model).to(device)
        out[name] = probe(encoder, lambda m: (m(x) * G).sum())
    return out


def train_gated(steps=150, half=6, B=16, lr=3e-3, seed=0, device='cpu'):
    """A 2-layer gated GPT on the copy task: its losses, and (share, gate) before and after training."""
    mt.manual_seed(seed)
    rng = random.Random(seed)
    model = GPT(VOCAB, d_model=32, n_layers=2, n_heads=4, max_len=2 * half, init_std=0.1, gate=True).to(device)
    test = copy_batch(random.Random(seed + 1), 64, half, device)

    def loss_of(m, ids=test):
        return copy_loss(m(ids), ids, half)

    before = probe(model, loss_of)
    channels_before = gate_channels(model, test)
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(1, steps + 1):
        loss = loss_of(model, copy_batch(rng, B, half, device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(check_loss(loss.item(), step, 'residual_variants'))
    opt.zero_grad()
    after = probe(model, loss_of)
    return {'losses': losses, 'before': before, 'after': after, 'channels_before': channels_before,
            'channels_after': gate_channels(model, test), 'device': model.parameters()[0].device}


def gate_channels(model, ids):
    """{gate name: its per-channel opening, averaged over the batch and positions (a list of d_model floats)}."""
    channels = {}
    handles = [m.register_forward_hook(lambda m, args, g, name=name: channels.update({name: g.mean(axis=(0, 1))}))
               for name, m in model.named_modules() if isinstance(m, ResidualGate)]
    with mt.no_grad():
        model(ids)
    for handle in handles:
        handle.remove()
    return {name: g.tolist() for name, g in channels.items()}


def layer_name(module_name):
    """'decoder.layers.0.gate_ffn' -> 'layer 1 gate_ffn': layers numbered from 1, as the articles number them."""
    index, gate = module_name.removeprefix('decoder.layers.').split('.', 1)
    return _("layer {n} {gate}").format(n=int(index) + 1, gate=gate)


def run(steps=150, n_layers=6, seed=0, device='cpu'):
    init = shares_at_init(n_layers, seed=seed, device=device)
    print(_("The attention article's table of residual variants (§2.3.5): standard x + f(x), scaled x + α f(x), "
            "gated x + g(x) f(x)."))
    print(_("1. At initialisation, {n_layers} Pre-LN EncoderLayers (the attention article's Pre-Norm), one random "
            "batch: the mean over the\n   {connections} residual connections of the '+1 share' |via +1| / (|via +1| + "
            "|via F|), and the mean gate g,\n   g = sigmoid(h W_g + b_g) per channel (h: what the sub-layer reads), in "
            "y = x + g * F(h)").format(n_layers=n_layers, connections=2 * n_layers))
    print(table([_('residual'), _('mean gate g'), _('+1 share')],
                [[_(name), '-' if g is None else f"{g:.3f}", f"{100 * s:.1f}%"] for name, (s, g) in init.items()]))
    print(_("Scaling F by alpha, or gating it by g, narrows the F road: the smaller alpha or g, the larger\n"
            "the part of the gradient that reaches x along the identity.  An open gate behaves like the standard form."))
    names = list(init)
    claims.record('attention', '2.3.5', ['缩放残差 x + α·f(x) 控制增量大小', '门控残差 x + g(x)·f(x) 动态控制信息流'], 'holds',
                  N_("scaling or closing the gate narrows the F road: the \"+1\" share rises from {standard:.1%} "
                     "(standard) to {scaled:.1%} ({scaled_name}) and {closed:.1%} ({closed_name}, g = {g:.3f})"),
                  N_('part 1: the table "residual, mean gate g, +1 share"'), standard=init[names[0]][0],
                  scaled=init[names[2]][0], scaled_name=i18n.words(names[2]), closed=init[names[-1]][0],
                  closed_name=i18n.words(names[-1]),
                  g=init[names[-1]][1])

    trained = train_gated(steps, seed=seed, device=device)
    (s0, g0), (s1, g1) = trained['before'], trained['after']
    losses = trained['losses']
    print("\n" + _("2. A 2-layer gated GPT learns to copy ({steps} steps): loss {first:.3f} -> {last:.3f}").format(
        steps=steps, first=sum(losses[:10]) / 10, last=sum(losses[-10:]) / 10))
    check_learned(losses, 'residual_variants', rose=(N_('another --seed'),), flat=(N_('more --steps'),))
    print(table(['', _('mean gate g'), _('+1 share')],
                [[_('before training'), f"{g0:.3f}", f"{100 * s0:.1f}%"],
                 [_('after training'), f"{g1:.3f}", f"{100 * s1:.1f}%"]]))
    before, after = trained['channels_before'], trained['channels_after']
    print(table([_('gate (channels: min / mean / max)'), _('before training'), _('after training')],
                [[layer_name(name)] +
                 [f"{min(g[name]):.2f} / {sum(g[name]) / len(g[name]):.2f} / {max(g[name]):.2f}"
                  for g in (before, after)]
                 for name in before]))
    moved = max(abs(a - b) for name in before for a, b in zip(before[name], after[name]))
    print(_("The largest change of one channel's mean opening: {moved:.2f}.  ").format(moved=moved) +
          (_("Here the gates stay\nnear half open while the task is learned: the copy task gives them no "
             "reason to close or open.") if moved < 0.25 else
           _("Training has opened some channels and closed others: the gate decides, per channel, how much\n"
             "of the sub-layer gets into the stream.")))

    def draw(ax):
        names = list(init)
        ax.barh([_(n) for n in names], [100 * init[n][0] for n in names])
        ax.set(xlabel=_("'+1 share' of the gradient (%)"), xlim=(0, 100))
        ax.invert_yaxis()
    save_plot('residual_variants', draw, _('Residual variants at initialisation ({n_layers} Pre-LN layers)').format(
        n_layers=n_layers))
    return {'init': init, 'trained': trained, 'device': trained['device']}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of the gated GPT (part 2)'), n_layers=N_('EncoderLayers in part 1'),
                         seed=N_('random seed'))
    return run_lesson(run, command_line('residual_variants', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    shares = 2 * budget.transformer(4, 8, d_model=16, n_layers=args.n_layers, heads=2)   # part 1, two stacks
    training = budget.transformer(16, 12, d_model=32, n_layers=2, vocab=VOCAB, steps=args.steps)
    return budget.refuse({'--steps': args.steps, '--n-layers': args.n_layers}, shares + training, args.device)


if __name__ == '__main__':
    main()
