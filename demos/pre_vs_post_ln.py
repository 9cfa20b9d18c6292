"""Lesson: Pre-LN vs Post-LN -- the last layers' gradients at initialisation, and warm-up.

Pre-LN is the attention article's "Pre-Norm", x + f(LayerNorm(x)) (§2.3.5), Post-LN its
"Post-Norm", LayerNorm(x + f(x)).  The deep dive (§4.4): "The original Transformer uses
Post-LN ... later people found Post-LN unstable to train -- it needs careful warm-up (the
learning rate rising slowly from 0), 否则梯度会爆炸 (otherwise the gradients explode).
Today's mainstream is Pre-LN ... more stable, no warm-up needed", because in Post-LN "子层
接收到的信号方差越来越大" (the sub-layers receive a signal of ever larger variance).  Its
footnote points to Xiong et al. 2020, "On Layer Normalization in the Transformer
Architecture", which measures why:

1. At initialisation the gradient of the last layer's weights (the FFN's W_1, W_2) does
   not depend on the depth L for Post-LN, but shrinks like 1/sqrt(L) for Pre-LN (the
   residual stream grows like sqrt(L) and the final LayerNorm divides by it).  So
   Post/Pre grows about like sqrt(L): with Post-LN the top layers take large steps from
   the very first update, and a large learning rate throws them off course.
   The variances, measured layer by layer, are the reverse of the deep dive's account:
   Post-LN's stream is renormalised to variance 1 after every layer, Pre-LN's grows.
2. Hence the training consequence: at a high learning rate without warm-up Post-LN
   stalls while Pre-LN learns; with a warm-up both learn.  The gradient norm, printed
   per configuration, shows that it stalls rather than explodes.

Both parts use Xiong's setting: Xavier-initialised Linear layers, biases 0 (the library's
GPT-2 initialisation instead shrinks the residual projections by 1/sqrt(2 L), which is
itself a cure for depth).  Part 1: an Encoder of L layers on a random batch with a
cross-entropy head, L = 3, 6, 12, 24, averaged over seeds.  Part 2: a small GPT learns to
copy (the second half of each sequence repeats the first; loss on the second half; chance
is ln 10 = 2.30), Adam at lr 1e-2, with and without a linear warm-up.

    python -m demos.pre_vs_post_ln            # quick: 4 layers, 80 steps, 1 seed (run time: end of --help)
    python -m demos.pre_vs_post_ln --full     # 6 layers, 200 steps, 3 seeds
"""
import math
import random

import microtensor as mt
from microtensor import nn, optim
from microtensor.i18n import N_, _
from microtensor.inspect import norm
from transformer import Encoder, GPT, Projection

from . import budget, claims
from .copy_task import VOCAB, copy_batch, copy_loss
from .figures import outcome
from .report import command_line, options_of, run_lesson, save_lines, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '4.4'), ('attention', '2.3.5')]

DEPTHS = (3, 6, 12, 24)
FULL = dict(n_layers=6, steps=200, warmup=50, seeds=5, grad_seeds=10)  # --full


def xavier_init(model):
    """Xiong et al.'s initialisation: every projection's weight Xavier-normal, every bias 0."""
    for m in model.modules():
        if isinstance(m, Projection):
            nn.init.xavier_normal_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


def last_layer_gradients(norm_place, n_layers, d_model=32, n_heads=4, B=8, n=16, n_classes=16, seed=0,
                         device='cpu'):
    """|dL/dW_1|, |dL/dW_2| of the last layer's FFN at initialisation (a dict, with the device of the
    gradients), for one random batch: L = cross-entropy(head(Encoder(x)), random classes), x ~ N(0, 1)."""
    mt.manual_seed(seed)
    encoder = xavier_init(Encoder(n_layers, d_model, n_heads, norm=norm_place)).to(device)
    head = xavier_init(Projection(d_model, n_classes)).to(device)
    x = mt.randn(B, n, d_model).to(device)  # drawn on the CPU and moved: the same batch on every device
    y = mt.randint(0, n_classes, (B, n)).to(device)
    mt.cross_entropy(head(encoder(x)), y).backward()
    ffn = encoder.layers[-1].ffn
    return {'W_1': norm(ffn.W_1.weight.grad), 'W_2': norm(ffn.W_2.weight.grad), 'device': ffn.W_2.weight.grad.device}


def gradient_table(depths=DEPTHS, seeds=3, device='cpu'):
    """{(norm_place, L): mean over seeds of last_layer_gradients (and their device)}."""
    out = {}
    for L in depths:
        for place in ('post', 'pre'):
            runs = [last_layer_gradients(place, L, seed=s, device=device) for s in range(seeds)]
            out[place, L] = {**{k: sum(r[k] for r in runs) / seeds for k in ('W_1', 'W_2')},
                             'device': runs[0]['device']}
    return out


def stream_variances(norm_place, n_layers, d_model=32, n_heads=4, B=8, n=16, seed=0, device='cpu'):
    """At initialisation (Xavier), per layer l = 1..n_layers: (Var of the residual stream x_l entering layer l,
    Var of what its self-attention sub-layer receives: LayerNorm(x_l) for Pre-LN, x_l itself for Post-LN)."""
    mt.manual_seed(seed)
    encoder = xavier_init(Encoder(n_layers, d_model, n_heads, norm=norm_place)).to(device)
    stream, received = [], []
    handles = [layer.register_forward_hook(lambda m, args, out: stream.append(args[0].var(correction=0).item()))
               for layer in encoder.layers]
    handles += [layer.self_attn.register_forward_hook(lambda m, args, out: received.append(args[0].var(correction=0).item()))
                for layer in encoder.layers]
    with mt.no_grad():
        encoder(mt.randn(B, n, d_model).to(device))
    for handle in handles:
        handle.remove()
    return list(zip(stream, received))


def train_copy(norm_place, warmup, n_layers=4, steps=80, lr=1e-2, half=6, d_model=32, n_heads=4, B=16, seed=0,
               device='cpu', grad_norms=None):
    """Copy-task losses per step for a GPT of n_layers (Xavier init), Adam at lr, linear warm-up over
    `warmup` updates (0: none).  A non-finite loss (divergence) is recorded as nan.  grad_norms: a list
    that gets each step's gradient norm (all parameters together), to tell exploding from stalling."""
    mt.manual_seed(seed)
    rng = random.Random(seed)
    model = xavier_init(GPT(VOCAB, d_model=d_model, n_layers=n_layers, n_heads=n_heads, max_len=2 * half,
                            norm=norm_place, init_std=0.1)).to(device)
    opt = optim.Adam(model.parameters(), lr=lr)
    schedule = optim.LRScheduler(opt, lambda t: optim.linear_warmup(t, warmup, 1.0))  # a factor of lr
    losses = []
    for _ in range(steps):
        ids = copy_batch(rng, B, half, device)
        loss = copy_loss(model(ids), ids, half)  # predict the repeated half
        opt.zero_grad()
        loss.backward()
        if grad_norms is not None:
            grad_norms.append(math.sqrt(sum(norm(p.grad) ** 2 for p in model.parameters() if p.grad is not None)))
        opt.step()
        schedule.step()
        value = loss.item()
        losses.append(value if math.isfinite(value) else math.nan)
    return losses


def verdict(final):
    chance = math.log(VOCAB)
    if not math.isfinite(final):
        return N_('diverged')
    return N_('stalled') if final > 0.9 * chance else N_('learns') if final < 0.5 * chance else N_('slow')


def run(n_layers=4, steps=80, warmup=30, lr=1e-2, seeds=1, depths=DEPTHS, grad_seeds=3, full=False, device='cpu'):
    if full:
        n_layers, steps, warmup, seeds, grad_seeds = (FULL[k] for k in ('n_layers', 'steps', 'warmup', 'seeds',
                                                                          'grad_seeds'))
    depths = tuple(depths)
    grads = gradient_table(depths, grad_seeds, device)
    print(_("Pre-LN: x + f(LayerNorm(x)), the attention article's Pre-Norm; Post-LN: LayerNorm(x + f(x)), its "
            "Post-Norm.  L: the number of layers."))
    print(_("1. At initialisation: |dL/dW| of the last layer's FFN (mean of {seeds} seeds), Xavier init").format(
        seeds=grad_seeds))
    rows, ratios = [], {}
    for L in depths:
        post, pre = grads['post', L], grads['pre', L]
        ratios[L] = post['W_2'] / pre['W_2']
        rows.append([L, post['W_1'], pre['W_1'], post['W_2'], pre['W_2'], f"{pre['W_2'] * math.sqrt(L):.3f}",
                     f"{ratios[L]:.2f}", f"{ratios[L] / ratios[depths[0]]:.2f}",
                     f"{math.sqrt(L / depths[0]):.2f}"])
    print(table(['L', 'Post |dW_1|', 'Pre |dW_1|', 'Post |dW_2|', 'Pre |dW_2|', 'Pre |dW_2| sqrt(L)',
                 'Post/Pre', _('Post/Pre vs L={L}').format(L=depths[0]), f'sqrt(L/{depths[0]})'], rows))
    level = [grads['pre', L]['W_2'] * math.sqrt(L) for L in depths]
    growth = ratios[depths[-1]] / ratios[depths[0]]
    print(_("Pre-LN's gradient times sqrt(L) stays within {spread:.2f}x of itself: it shrinks like "
            "1/sqrt(L) (Xiong's bound).\nPost-LN's goes from {first:.2f} to {last:.2f} (Xiong's bound for it does "
            "not depend on L).  From L = {L0} to {L1} the ratio grows {growth:.1f}x, sqrt({L1}/{L0}) = "
            "{root:.1f}.").format(spread=max(level) / min(level), first=grads['post', depths[0]]['W_2'],
                                  last=grads['post', depths[-1]]['W_2'], L0=depths[0], L1=depths[-1], growth=growth,
                                  root=math.sqrt(depths[-1] / depths[0])))

    L = depths[-1]
    variances = {place: stream_variances(place, L, device=device) for place in ('post', 'pre')}
    shown = sorted({1, 2, L // 4, L // 2, L} & set(range(1, L + 1)))
    print(_("\nThe variance of the signal, {L} layers at initialisation (layers numbered from 1): the residual "
            "stream x_l entering\nlayer l, and what its attention sub-layer receives").format(L=L))
    print(table([_('layer'), 'Post-LN: Var(x_l)', _('Post-LN: sub-layer input'), 'Pre-LN: Var(x_l)',
                 _('Pre-LN: sub-layer input (LayerNorm(x_l))')],
                [[l] + [v for place in ('post', 'pre') for v in variances[place][l - 1]] for l in shown], fmt='.3f'))
    print(_("The deep dive (§4.4) explains Pre-LN's stability by Post-LN's sub-layers receiving '方差越来越大' (an\n"
            "ever larger variance).  It is the other way round: Post-LN normalises after every addition, so its\n"
            "stream stays at variance ~1 ({post:.2f} at layer {L}); Pre-LN adds every "
            "sub-layer's output to an un-normalised stream, whose\nvariance grows with depth "
            "({pre0:.2f} -> {pre:.2f}), and its sub-layers are fine only "
            "because each reads LayerNorm(x_l).\nThat growth is what divides Pre-LN's gradient by sqrt(L) above.").format(
        post=variances['post'][-1][0], L=L, pre0=variances['pre'][0][0], pre=variances['pre'][-1][0]))
    claims.record('deep_dive', '4.4', '而 Post-LN 中，残差路径的输入可能被前面层的累积效应偏移，导致子层接收到的信号方差越来越大',
                  'the article is wrong',
                  N_("the other way round: at initialisation Post-LN's stream stays at variance {post:.2f} through {L} "
                     "layers (it is renormalised after every addition, so each sub-layer reads a LayerNorm output), "
                     "Pre-LN's grows from {pre0:.2f} to {pre:.2f}; both kinds of sub-layer receive variance 1"),
                  N_('part 1: the variance table "layer, Post-LN: Var(x_l), ..."'), post=variances['post'][-1][0], L=L,
                  pre0=variances['pre'][0][0], pre=variances['pre'][-1][0])

    print(_("\n2. Training a {L}-layer GPT to copy, Adam lr {lr}, {steps} steps, {seeds}; chance = ln {vocab} = "
            "{chance:.2f}").format(L=n_layers, lr=lr, steps=steps, vocab=VOCAB, chance=math.log(VOCAB),
                                   seeds=(_("{n} seed") if seeds == 1 else _("{n} seeds")).format(n=seeds)))
    configs = [(place, w) for place in ('post', 'pre') for w in (0, warmup)]
    names = {c: f"{c[0].capitalize()}-LN, " + (f"warm-up {c[1]}" if c[1] else 'no warm-up') for c in configs}
    labels = {c: (_("{norm}, warm-up {steps}") if c[1] else _("{norm}, no warm-up")).format(
        norm=f"{c[0].capitalize()}-LN", steps=c[1]) for c in configs}     # names, in the learner's language
    grad_norms = {c: [] for c in configs}  # every step of every seed
    curves = {c: [train_copy(c[0], c[1], n_layers, steps, lr, seed=s, device=device, grad_norms=grad_norms[c])
                  for s in range(seeds)] for c in configs}
    mean = {c: [sum(r[i] for r in curves[c]) / seeds for i in range(steps)] for c in configs}
    window = max(1, steps // 8)
    print(table([_('steps')] + [labels[c] for c in configs],
                [[f"{a + 1}-{min(a + window, steps)}"] + [sum(mean[c][a:a + window]) / len(mean[c][a:a + window])
                                                          for c in configs] for a in range(0, steps, window)],
                fmt='.3f'))
    finals = {c: [sum(r[-window:]) / window for r in curves[c]] for c in configs}
    print(table([_('last steps, per seed')] + [labels[c] for c in configs],
                [[_("seed {seed}").format(seed=s)] + [f"{finals[c][s]:.3f} {_(verdict(finals[c][s]))}" for c in configs]
                 for s in range(seeds)]))
    print(_("learned (last steps below half of chance): {runs}").format(runs=', '.join(
        f"{labels[c]} {sum(verdict(f) == 'learns' for f in finals[c])}/{seeds}" for c in configs)))
    print(table([_('gradient norm |g| (all parameters)')] + [labels[c] for c in configs],
                [[_('largest, any step')] + [max(grad_norms[c]) for c in configs],
                 [_('median')] + [sorted(grad_norms[c])[len(grad_norms[c]) // 2] for c in configs]]))
    stuck = ('post', 0)
    peak = max(range(len(grad_norms[stuck])), key=grad_norms[stuck].__getitem__) % steps + 1
    ended = verdict(finals[stuck][0])
    print(_("The deep dive (§4.4) says Post-LN without warm-up '否则梯度会爆炸' (else the gradients explode).  Here "
            "it {outcome}:\n"
            "its loss stays near chance ({loss:.3f} vs {chance:.2f}); its gradient norm peaks "
            "at {top:.3g} at step {peak}\n(the runs that learn: up to "
            "{others:.3g}) and then stays small.  The large first "
            "updates throw the top layers\ninto a state they do not leave; nothing explodes.").format(
        outcome=_('stalls') if ended == 'stalled' else _("ends {verdict}").format(verdict=_(ended)),
        loss=finals[stuck][0], chance=math.log(VOCAB), top=max(grad_norms[stuck]), peak=peak,
        others=max(max(grad_norms[c]) for c in configs if c != stuck)))
    learns = {c: sum(verdict(f) == 'learns' for f in finals[c]) for c in configs}
    look = N_('part 2: the loss table, "last steps, per seed", "learned (...)" and the gradient-norm table')
    figures = dict(lr=lr, n=seeds, L=n_layers, steps=steps, chance=math.log(VOCAB),
                   pre=learns['pre', 0], pre_w=learns['pre', warmup], post=learns['post', 0],
                   post_w=learns['post', warmup], pre_loss=claims.between(finals['pre', 0], '.3f'),
                   post_loss=outcome(finals[stuck], '.3f', seeds, above=2, bound_spec='g'))
    seeds_note = claims.seeds_note(seeds)
    claims.record('deep_dive', '4.4', 'Pre-LN 训练更稳定，不需要 warmup', 'holds' if learns['pre', 0] == seeds else 'partly',
                  N_("at lr {lr:g} Pre-LN learns to copy without warm-up in {pre} of {n} seeds (loss {pre_loss}) and "
                     "with it in {pre_w} of {n}; Post-LN's last-layer gradient at init is {ratio:.1f}x Pre-LN's at "
                     "{depth} layers, growing like √L (Xiong et al. 2020)"),
                  N_('part 1: the column "Post/Pre"; part 2: the loss table, "last steps, per seed", "learned (...)" '
                     'and the gradient-norm table'),
                  seeds=seeds_note, ratio=ratios[depths[-1]], depth=depths[-1], **figures)
    claims.record('deep_dive', '4.4', '需要特别小心的 warmup（学习率从 0 慢慢提升），否则梯度会爆炸', 'not tested by this task',
                  N_("without warm-up the {L}-layer Post-LN model stalls in {stalled} of {n} seeds (loss {post_loss}, "
                     "chance {chance:.2f}; with warm-up it learns in {post_w} of {n}), so it does need the warm-up "
                     "here; but its gradient norm peaks at step {peak} ({top:.3g}, the runs that learn reach "
                     "{others:.3g}) and stays small after: nothing explodes.  A {L}-layer model trained {steps} steps "
                     "cannot show what the article describes for deep Post-LN stacks; what would test it is a deep "
                     "Post-LN model (12-24 layers) trained without warm-up at a usual learning rate, its gradient norm "
                     "logged over thousands of steps"), look, seeds=seeds_note, stalled=sum(verdict(f) == 'stalled' for f in finals[stuck]),
                  peak=peak, top=max(grad_norms[stuck]), others=max(max(grad_norms[c]) for c in configs if c != stuck),
                  **figures)
    claims.record('attention', '2.3.5', 'Pre-Norm 成为标准，训练更稳定', 'holds' if learns['pre', 0] > learns['post', 0] else 'partly',
                  N_("at lr {lr:g} without warm-up Pre-LN (this Pre-Norm) learns to copy in {pre} of {n} seeds (loss "
                     "{pre_loss}), Post-LN in {post} of {n} (loss {post_loss}, chance {chance:.2f})"), look,
                  seeds=seeds_note, **figures)
    save_lines('pre_vs_post_ln', {labels[c]: mean[c] for c in configs}, _('step'), _('copy loss (nats)'),
               _('{L}-layer GPT copying, Adam lr {lr}, with and without warm-up').format(L=n_layers, lr=lr),
               logy=False)
    save_lines('pre_vs_post_ln_gradients', {'Post-LN': [grads['post', L]['W_2'] for L in depths],
                                            'Pre-LN': [grads['pre', L]['W_2'] for L in depths]},
               _('layers L'), _("|dL/dW_2| of the last layer at init"), _('Last-layer gradient vs depth'),
               x=list(depths), logx=True)
    return {'grads': grads, 'ratios': ratios, 'variances': variances, 'curves': curves, 'finals': finals,
            'grad_norms': grad_norms, 'names': names,
            'verdicts': {c: [verdict(f) for f in finals[c]] for c in configs}, 'warmup': warmup,
            'device': grads['pre', depths[0]]['device']}


def main(argv=None):
    options = options_of(run, n_layers=N_('layers of the GPT trained in part 2'),
                         steps=N_('Adam steps of each training'),
                         warmup=N_('warm-up steps (linear, from 0 to --lr)'), lr=N_('peak learning rate of part 2'),
                         seeds=N_('training seeds per configuration'), depths=N_('depths L of part 1'),
                         grad_seeds=N_('seeds averaged per depth in part 1'),
                         full=N_('6 layers, 200 steps, warm-up 50, 5 seeds; 10 seeds in part 1'))
    return run_lesson(run, command_line('pre_vs_post_ln', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    gradients = budget.Cost(0, 0, 0)
    for L in a['depths']:   # part 1: one backward pass per depth, norm and seed (B 8, T 16)
        gradients = gradients + 2 * a['grad_seeds'] * budget.transformer(8, 16, d_model=32, n_layers=L, vocab=16)
    training = 4 * a['seeds'] * budget.transformer(16, 12, d_model=32, n_layers=a['n_layers'], vocab=VOCAB,
                                                   steps=a['steps'])
    return budget.refuse({'--n-layers': a['n_layers'], '--steps': a['steps'], '--seeds': a['seeds'],
                          '--depths': ' '.join(map(str, a['depths'])), '--grad-seeds': a['grad_seeds']},
                         gradients + training, args.device)


if __name__ == '__main__':
    main()
