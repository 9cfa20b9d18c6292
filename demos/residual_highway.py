"""Lesson: the residual "+1" highway -- gradients in a deep stack with and without it.

The deep dive (§4.1-4.2): "Backpropagation multiplies the gradient by each
layer's derivative (usually less than 1).  Through 20 layers it becomes 0.9^20 ~ 12%,
through 56 layers 0.9^56 ~ 0.3%: the parameters near the input receive almost no
gradient signal."  And the remedy, Output = x + F(x):

    dL/dx = dL/dOutput * (1 + dF/dx)

"The gradient has two roads: one through F(x) (the learning road, possibly tiny) and
one straight to x (the highway, always 1).  Even when the learning road's gradient is
close to zero, the highway guarantees the gradient flows back."  And on the norm's
place (§4.4): Post-LN is x -> LayerNorm(x + F(x)), "compute, add, normalise"; Pre-LN is
x -> x + F(LayerNorm(x)), "normalise first": its residual path is "cleaner".

Here a stack of EncoderLayers ("Transformers routinely have 6, 12, 24 layers") gets one
random batch and a random upstream gradient; a forward hook on every layer keeps its
input's gradient (retain_grad), and we print |dL/d input| per layer for four
configurations: Pre-LN / Post-LN, with / without the residual.  Without it the
gradient shrinks by orders of magnitude on its way down; with it, it stays the same
size at every depth.  transformer.probes.ResidualProbe splits each residual
connection's gradient into the part that came through "+1" and the part through F:
the highway's share.

    python -m demos.residual_highway --n-layers 48 --d-model 32 --n-heads 4
"""
import microtensor as mt
from microtensor.i18n import N_, _
from microtensor.inspect import norm
from transformer import Encoder
from transformer.probes import ResidualProbe, rank_collapse, token_uniformity

from . import budget, claims
from .figures import below
from .report import command_line, options_of, run_lesson, save_lines, save_viewer, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '4.2'), ('attention', '2.3.5')]

CONFIGS = [('pre', True), ('post', True), ('pre', False), ('post', False)]


def label(norm_place, residual):
    return (_("{norm}-LN, residual") if residual else _("{norm}-LN, no residual")).format(norm=norm_place.capitalize())


def layer_gradients(norm_place, residual, n_layers=24, d_model=16, n_heads=2, B=4, n=8, seed=0, device='cpu',
                    html=None):
    """|dL/dx_l| for the input x_l of each layer l = 1..n_layers, each layer's "+1" share, and the device
    the gradients were computed on.

    L = sum(output * G) with G ~ N(0, 1): the gradient arriving at the top is G itself.
    html: a name: the backward pass also goes to a BackpropViewer page, runs/<html>.html.
    """
    mt.manual_seed(seed)  # weights and data drawn on the CPU and moved: the same numbers on every device
    encoder = Encoder(n_layers, d_model, n_heads, norm=norm_place, residual=residual).to(device)
    inputs = []

    def keep_input(layer, args, output):
        args[0].retain_grad()
        inputs.append(args[0])

    handles = [layer.register_forward_hook(keep_input) for layer in encoder.layers]
    x = mt.randn(B, n, d_model).to(device).requires_grad_()
    with ResidualProbe(encoder) as probe, mt.record_modules(encoder):
        out = encoder(x)
        loss = (out * mt.randn(*out.shape).to(device)).sum()
        if html:
            title = _("{label}, {n} layers").format(label=label(norm_place, residual), n=n_layers)
            save_viewer(html, loss, title, encoder, group='residual_highway')
        else:
            loss.backward()
    for handle in handles:
        handle.remove()
    return [norm(t.grad) for t in inputs], identity_shares(probe), x.grad.device


def identity_shares(probe):
    """Per layer, the mean over its residual connections of |via +1| / (|via +1| + |via F|)."""
    names = [name for name, _ in probe.layers]  # the layers in order, as the probe names them
    shares = [[] for _ in names]
    for r in probe.records:
        shares[names.index(r.layer)].append(r.identity_share or 0.0)
    return [sum(s) / len(s) if s else 0.0 for s in shares]


def run(n_layers=24, d_model=16, n_heads=2, batch_size=4, seq_len=8, seed=0, device='cpu', html=False):
    grads, shares = {}, {}
    for config in CONFIGS:
        page = f"residual_highway_{'residual' if config[1] else 'no_residual'}" if html and config[0] == 'pre' else None
        grads[config], shares[config], device = layer_gradients(*config, n_layers, d_model, n_heads, batch_size,
                                                                seq_len, seed, device, html=page)
    print(_("Pre-LN: x + F(LayerNorm(x)) (the attention article's Pre-Norm); Post-LN: LayerNorm(x + F(x)) (its "
            "Post-Norm)."))
    print(_("{n_layers} EncoderLayers, d_model = {d_model}, h = {n_heads} heads; |dL/dx| at each layer's input "
            "(layer 1 is the first, nearest the input):").format(n_layers=n_layers, d_model=d_model, n_heads=n_heads))
    step = max(1, n_layers // 12)
    shown = sorted(set(range(0, n_layers, step)) | {n_layers - 1})
    print(table([_('layer')] + [label(*c) for c in CONFIGS] + [_('+1 share (Pre)'), _('+1 share (Post)')],
                [[i + 1] + [grads[c][i] for c in CONFIGS] + [f"{100 * shares[c][i]:.0f}%" for c in CONFIGS[:2]]
                 for i in shown]))
    ratios = {c: grads[c][0] / grads[c][-1] for c in CONFIGS}
    print(_("first / last layer: {ratios}").format(ratios=', '.join(f"{label(*c)} {ratios[c]:.2g}" for c in CONFIGS)))
    print(_("+1 share: of the gradient reaching a residual connection's input, the part that came along the\n"
            "identity, the deep dive's 'highway' (§4.2), measured by ResidualProbe.  With the highway the gradient\n"
            "keeps its size through every layer; without it each layer multiplies it by dF/dx and it fades towards\n"
            "the input."))

    save_lines('residual_highway', {label(*c): grads[c] for c in CONFIGS}, _('layer (1 = nearest the input)'),
               _('|dL/d layer input|'), _('Gradient per layer, {n_layers} EncoderLayers').format(n_layers=n_layers))
    mt.manual_seed(seed)  # rank collapse (Dong et al. 2021): without the "+1" every token becomes the same vector
    x = mt.randn(batch_size, seq_len, d_model).to(device)
    collapse = {c: rank_collapse(Encoder(n_layers, d_model, n_heads, norm=c[0], residual=c[1]).to(device), x)
                for c in CONFIGS}
    print('\n' + _("Rank collapse: ||X - 1 mean(X)|| / ||X|| of each layer's output X, its distance from 'every token "
                    "the same' (input: {input:.2f}; 0: collapsed)").format(input=token_uniformity(x)) + '\n'
          + table([_('layer')] + [label(*c) for c in CONFIGS],
                  [[i + 1] + [collapse[c][i] for c in CONFIGS] for i in shown]))
    with_shares = [share for c in CONFIGS[:2] for share in shares[c]]
    first = next((i for i in range(n_layers) if max(collapse[c][i] for c in CONFIGS[2:]) < 1e-3), n_layers - 1)
    figures = dict(L=n_layers, pre=ratios['pre', True], post=ratios['post', True], pre_no=ratios['pre', False],
                   post_no=ratios['post', False], low=min(with_shares), high=max(with_shares))
    look = N_('the table "layer, Pre-LN, residual, ..., +1 share" and the line "first / last layer"')
    claims.record('attention', '2.3.5', '有残差 ∂y/∂x = 1 + ∂f/∂x 至少有 1，不会消失', 'holds',
                  N_("through {L} layers the input's gradient is {pre:.2g}x (Pre-LN) and {post:.2g}x (Post-LN) the "
                     "last layer's with residuals, {pre_no:.2g} and {post_no:.2g} without; {low:.0%}-{high:.0%} of it "
                     "rides the \"+1\""), look, **figures)
    claims.record('deep_dive', '4.2', '一条直接到 x（"高速公路"——恒为 1）。即使学习路径的梯度接近零，高速公路保证梯度能顺畅回传',
                  'holds', N_("first/last layer gradient {pre:.2g} with residuals vs {pre_no:.2g} without (Pre-LN, "
                              "{L} layers); {low:.0%}-{high:.0%} of each connection's gradient comes along the "
                              "identity; without residuals the tokens' distance from 'every token the same' is "
                              "{pre_c} for Pre-LN and {post_c} for Post-LN at layer {within}: they collapse to "
                              "one vector"),
                  N_('the table "layer, Pre-LN, residual, ..., +1 share" and the line "first / last layer"; the '
                     'rank-collapse table'), within=first + 1, pre_c=below(collapse['pre', False][first], 1e-5),
                  post_c=below(collapse['post', False][first], 1e-5), **figures)
    return {'grads': grads, 'shares': shares, 'ratios': ratios, 'collapse': collapse, 'device': device}


def main(argv=None):
    options = options_of(run, n_layers=N_('EncoderLayers in the stack'), d_model=N_('model width d_model'),
                         n_heads=N_('attention heads (must divide d_model)'), batch_size=N_('sequences in the batch'),
                         seq_len=N_('tokens per sequence'), seed=N_('random seed'),
                         html=N_('also write the Pre-LN backward passes as step-by-step viewer pages (runs/*.html)'))
    return run_lesson(run, command_line('residual_highway', __doc__, options, argv,
                                        check=lambda args: _heads_divide(args) or _budget(args)))


def _heads_divide(args):
    if args.d_model % args.n_heads:
        return _("--n-heads {heads} must divide --d-model {width} (each head gets d_model / n_heads)").format(
            heads=args.n_heads, width=args.d_model)
    return None


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    one = budget.transformer(args.batch_size, args.seq_len, args.d_model, args.n_layers, heads=args.n_heads)
    return budget.refuse({'--n-layers': args.n_layers, '--d-model': args.d_model, '--n-heads': args.n_heads,
                          '--batch-size': args.batch_size, '--seq-len': args.seq_len},
                         len(CONFIGS) * one, args.device)


if __name__ == '__main__':
    main()
