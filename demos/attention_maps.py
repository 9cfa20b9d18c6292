"""Lesson: attention maps of trained models -- reversal is an anti-diagonal.

The attention article (§2.6) draws an "注意力热力图" (attention heat map) and asks
"我们能从热力图中'看懂'模型的理解吗？" (can we read the model's understanding from it?); the
deep dive (§2.6, §8.3) says heads specialise and that "你可以看见它在'看什么'".  Here are two real ones, from models trained
briefly (run time: end of --help):

1. demos/train_reverse.py's encoder-decoder learns to reverse digit sequences.  Its
   cross-attention (decoder query t over encoder key s) must fetch source position
   L - 1 - t to write output t, so a head that does the job shows an anti-diagonal.
   Printed per head: the weight on the anti-diagonal (mean over test sequences and t),
   and for each output position the source position with the highest weight.
2. demos/train_gpt.py's character GPT, on a line of its poem: for each head, where the
   highest weight of each query character goes (itself, the previous character, further
   back); the head with the largest previous-character share is drawn and tabulated.

Layers and heads are numbered from 1, as the articles number them; positions from 0.
Plots: runs/attention_maps_reverse.png (one panel per head), runs/attention_maps_gpt.png.

    python -m demos.attention_maps            # ~10 s: two short trainings
    python -m demos.attention_maps --full     # both trainings from 5 seeds (the printout is the first's)
"""
import os
import random

import microtensor as mt
from microtensor.i18n import N_, _
from transformer import shift_right

from . import budget, claims, train_gpt, train_reverse
from .report import RUNS, check_learned, command_line, options_of, run_lesson, save_plot, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.6'), ('deep_dive', '2.6'), ('deep_dive', '7.5'), ('deep_dive', '8.3')]


# ---------------------------------------------------------------------------- 1. reversal
def reverse_maps(steps=150, length=6, n_test=64, seed=0, device='cpu'):
    """Train the reversal model; its cross-attention on unseen sequences: {'maps' (h, L, L) means over the
    test batch as lists, 'anti_diagonal' per head, 'argmax' [head][t], 'token_accuracy', 'device'}."""
    model, losses, seen = train_reverse.train(steps=steps, length=length, seed=seed, log_every=steps + 1, device=device)
    check_learned(losses, _('attention_maps (the reversal model)'), rose=(N_('another --seed'),),
                  flat=(N_('more --steps'),))
    test = train_reverse.random_sequences(random.Random(seed + 1), n_test, length, exclude=seen)
    src = mt.tensor(test, device=device)
    tgt = mt.tensor([s[::-1] for s in test], device=device)
    model.eval()
    with mt.no_grad():
        logits = model(src, shift_right(tgt, train_reverse.BOS))
    cross = model.decoder.layers[-1].cross_attn.last_weights.mean(axis=0)     # (h, L_tgt, L_src)
    maps = cross.tolist()
    L = length
    return {'maps': maps,
            'anti_diagonal': [sum(head[t][L - 1 - t] for t in range(L)) / L for head in maps],
            'argmax': [[max(range(L), key=lambda s: head[t][s]) for t in range(L)] for head in maps],
            'token_accuracy': (logits.argmax(dim=-1) == tgt).astype('float32').mean().item(), 'device': logits.device}


# ---------------------------------------------------------------------------- 2. the char GPT
def gpt_maps(steps=150, line='Twinkle, twinkle, little star,', seed=0, device='cpu', **options):
    """Train the char GPT briefly; self-attention of every head on `line`:
    {'weights' [layer][head] (n, n) lists, 'heads' rows of per-head statistics (layers and heads numbered from
    1), 'line', 'final_loss' (mean of the last 10 steps), 'mean_loss' (of all steps, as the progress line logs it)}."""
    result = train_gpt.train(out=os.path.join(RUNS, 'attention_maps_gpt'), steps=steps, seed=seed,
                             log_every=steps, eval_every=steps, ckpt_every=steps, device=device, **options)
    check_learned(result['losses'], _('attention_maps (the char GPT)'), rose=(N_('another --seed'),),
                  flat=(N_('more --gpt-steps'),))
    model, chars = result['model'], result['chars']
    ids = mt.tensor([chars.encode(line)], device=device)
    model.eval()
    with mt.no_grad():
        model(ids)
    weights = [layer.self_attn.last_weights[0].tolist() for layer in model.layers]    # [layer][head][t][s]
    heads = []
    for l, layer in enumerate(weights):
        for h, A in enumerate(layer):
            back = [t - max(range(t + 1), key=lambda s: A[t][s]) for t in range(1, len(line))]  # 0 = itself
            heads.append({'layer': l + 1, 'head': h + 1, 'self': back.count(0) / len(back),  # numbered from 1
                          'previous': back.count(1) / len(back), 'mean_back': sum(back) / len(back)})
    return {'weights': weights, 'heads': heads, 'line': line, 'final_loss': sum(result['losses'][-10:]) / 10,
            'mean_loss': sum(result['losses']) / len(result['losses'])}


FULL = dict(seeds=5)  # --full


def aligned_heads(rev):
    """How many cross-attention heads put their highest weight for every output t on source L-1-t."""
    L = len(rev['argmax'][0])
    return sum(all(head[t] == L - 1 - t for t in range(L)) for head in rev['argmax'])


def previous_shares(gpt):
    """(the largest previous-character share of a head, the other heads' shares)."""
    shares = sorted((r['previous'] for r in gpt['heads']), reverse=True)
    return shares[0], shares[1:]


def run(steps=150, gpt_steps=150, seed=0, seeds=1, full=False, device='cpu'):
    seeds = FULL['seeds'] if full else seeds
    rev = reverse_maps(steps, seed=seed, device=device)
    L = len(rev['argmax'][0])
    print(_("1. Reversing {L} digits ({steps} training steps, token accuracy {accuracy:.0f}% "
            "on unseen sequences): cross-attention, decoder position t over source position s (positions from 0,\n"
            "   heads numbered from 1)").format(L=L, steps=steps, accuracy=100 * rev['token_accuracy']))
    print(table([_('head'), _('weight on the anti-diagonal s = L-1-t'), _('uniform would be')],
                [[h, a, 1 / L] for h, a in enumerate(rev['anti_diagonal'], 1)]))
    print(_("highest-weight source position per output position (mean map over the test sequences):"))
    print(table([_('output t'), _('reversal wants')] + [_("head {head}").format(head=h)
                                                         for h in range(1, len(rev['maps']) + 1)],
                [[t, L - 1 - t] + [rev['argmax'][h][t] for h in range(len(rev['maps']))] for t in range(L)]))
    plot_reversal(rev['maps'])
    revs = [rev] + [reverse_maps(steps, seed=s, device=device) for s in range(seed + 1, seed + seeds)]
    aligned = [aligned_heads(r) for r in revs]
    if seeds > 1:
        print(_("from {seeds} seeds: heads on the anti-diagonal at every t {aligned} of {heads}; token accuracy "
                "{accuracy}").format(seeds=seeds, aligned=', '.join(map(str, aligned)), heads=len(rev['maps']),
                                     accuracy=claims.spread([r['token_accuracy'] for r in revs])))
    shown = sum(a > 0 for a in aligned)
    look = N_('part 1: the table "output t, reversal wants, head 1, ..." (--full: the line "from 5 seeds")')
    figures = dict(L=L, aligned=claims.between(aligned, 'd'), heads=len(rev['maps']), shown=shown, n=seeds,
                   acc=claims.spread([r['token_accuracy'] for r in revs]))
    claims.record('deep_dive', '7.5', 'Decoder 的每个词用自己的 Q 去查询 Encoder 输出（X_2）的 K 和 V。这就是翻译的"对齐"',
                  'holds' if shown == seeds else 'partly',
                  N_("trained to reverse {L} digits ({acc} of unseen tokens right), {aligned} of {heads} "
                     "cross-attention heads put their highest weight for output t on source L-1-t at every t: the "
                     "alignment (at least one such head in {shown} of {n} seeds)"), look, seeds=claims.seeds_note(seeds), **figures)
    claims.record('attention', '2.6', '我们能从热力图中"看懂"模型的理解吗？', 'holds' if shown == seeds else 'partly',
                  N_("where the task is clear: the reversal model's cross-attention is an anti-diagonal; for "
                     "{aligned} of {heads} heads the highest weight for output t is source L-1-t at every t (token "
                     "accuracy {acc}; at least one such head in {shown} of {n} seeds)"), look, seeds=claims.seeds_note(seeds), **figures)

    gpt = gpt_maps(gpt_steps, seed=seed, device=device, context=32, batch_size=8)
    line = gpt['line']
    print(_("\n2. The char GPT after {steps} steps: training loss {final:.2f} (the mean of the last 10 "
            "steps; the progress line above,\n   {mean:.2f}, is the mean of all {steps} steps).  On "
            "{line}, where each query character's highest\n   weight goes (layers and heads numbered from 1):").format(
        steps=gpt_steps, final=gpt['final_loss'], mean=gpt['mean_loss'], line=repr(line)))
    print(table([_('layer'), _('head'), _('on itself'), _('on the previous char'), _('mean distance back')],
                [[r['layer'], r['head'], f"{100 * r['self']:.0f}%", f"{100 * r['previous']:.0f}%", r['mean_back']]
                 for r in gpt['heads']]))
    best = max(gpt['heads'], key=lambda r: r['previous'])
    A = gpt['weights'][best['layer'] - 1][best['head'] - 1]
    print(_("layer {layer} head {head} (the largest previous-char share), query by query:").format(
        layer=best['layer'], head=best['head']))
    shown = range(1, min(len(line), 16))
    print(table([_('query'), _('argmax key'), _('distance back'), _('weight')],
                [[repr(line[t]), repr(line[s]), t - s, A[t][s]]
                 for t in shown for s in [max(range(t + 1), key=lambda s: A[t][s])]]))
    gpts = [gpt] + [gpt_maps(gpt_steps, seed=s, device=device, context=32, batch_size=8)
                    for s in range(seed + 1, seed + seeds)]
    shares = [previous_shares(g) for g in gpts]
    tops, others = [top for top, rest in shares], [o for top, rest in shares for o in rest]
    if seeds > 1:
        print(_("from {seeds} seeds: the largest previous-char share {tops}; the other heads {others}").format(
            seeds=seeds, tops=', '.join(f'{t:.0%}' for t in tops), others=claims.between(others, '.0%')))
    claims.record('deep_dive', '2.6', '一些头几乎完全关注下一个词（像是一个"相邻性探测器"）', 'not tested by this task',
                  N_("after {steps} steps one of the {n} heads of the char GPT (seed {seed}: layer {layer}, head "
                     "{head}) puts its highest weight on the previous character for {share} of the queries, the others "
                     "{rest}; the rest are diffuse (\"散\"), as the article's last bullet allows.  A causal GPT "
                     "cannot look at the next character, and this one trained briefly: what would test it is the heads "
                     "of a trained bidirectional model, as Clark et al. read BERT's (`python -m demos heads_specialise` "
                     "shows a head learning t+1 by itself on a toy task)"),
                  N_('part 2: the table "layer, head, on itself, on the previous char" (--full: the line "from 5 '
                     'seeds")'),
                  seeds=claims.seeds_note(seeds), steps=gpt_steps, n=len(gpt['heads']), seed=seed, layer=best['layer'],
                  head=best['head'], share=claims.between(tops, '.0%'), rest=claims.between(others, '.0%'))
    claims.record('deep_dive', '8.3', '注意力权重矩阵是直接可视化的', 'holds',
                  N_("the maps (runs/attention_maps_*.png) show the reversal's anti-diagonal ({aligned} of {heads} "
                     "heads exactly) and the char GPT's previous-character head ({share}); they also show that most "
                     "heads of a briefly trained model are not that readable"),
                  N_('both parts, and the plots under runs/'),
                  seeds=claims.seeds_note(seeds), aligned=claims.between(aligned, 'd'), heads=len(rev['maps']),
                  share=claims.between(tops, '.0%'))
    plot_gpt_head(A, line, _("char GPT, layer {layer} head {head}: the previous char gets {share:.0f}% of the "
                             "maxima").format(layer=best['layer'], head=best['head'], share=100 * best['previous']))
    return {'reverse': rev, 'gpt': gpt, 'gpt_head': best, 'device': rev['device']}


def plot_reversal(maps):
    """One panel per head: the (L_tgt, L_src) cross-attention, every position ticked, the anti-diagonal outlined."""
    L = len(maps[0])

    def draw(axes):
        for h, (ax, A) in enumerate(zip(axes, maps), 1):
            image = ax.imshow(A, cmap='viridis', vmin=0, vmax=1)
            ax.plot(range(L), range(L - 1, -1, -1), 's', markersize=16, markerfacecolor='none',
                    markeredgecolor='red')
            ax.set(title=_("head {head}").format(head=h), xticks=range(L), yticks=range(L),
                   xlabel=_('source position s'), ylabel=_('output position t') if h == 1 else None)
        axes[-1].figure.colorbar(image, ax=axes, shrink=0.8, label=_('attention weight'))
    return save_plot('attention_maps_reverse', draw,
                     _('Reversal: cross-attention per head (red: the anti-diagonal s = L-1-t)'), panels=len(maps))


def plot_gpt_head(A, line, title):
    """The head's (n, n) self-attention on `line`, characters as ticks; each query's highest weight dotted and
    the previous-character cells outlined, since most weights are small once a query sees many keys."""
    n = len(line)

    def draw(ax):
        image = ax.imshow(A, cmap='Greys', vmin=0, vmax=max(max(row) for row in A[3:]))  # rows 0-2 would set it
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label=_('attention weight'))
        ax.plot(range(n - 1), range(1, n), 's', markersize=7, markerfacecolor='none', markeredgecolor='tab:blue',
                label=_('previous character (s = t - 1)'))
        top = [max(range(t + 1), key=lambda s: A[t][s]) for t in range(n)]
        ax.plot(top, range(n), 'o', markersize=3, color='tab:red', label=_("each query's highest weight"))
        ax.set_xticks(range(n), list(line), fontsize=7)
        ax.set_yticks(range(n), list(line), fontsize=7)
        ax.set(xlabel=_('key'), ylabel=_('query'))
        ax.legend(loc='upper right', fontsize=8)
    return save_plot('attention_maps_gpt', draw, title)


def main(argv=None):
    options = options_of(run, steps=N_('training steps of the reversal model'),
                         gpt_steps=N_('training steps of the char GPT'), seed=N_('random seed'),
                         seeds=N_('trainings of each model (seed, seed + 1, ...) the verdicts count'), full=N_('5 seeds'))
    return run_lesson(run, command_line('attention_maps', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    cost = (train_reverse.cost(steps=a['steps'], n_test=64)
            + train_gpt.cost(**{**train_gpt.PRESETS['tiny'], 'steps': a['gpt_steps'], 'eval_every': a['gpt_steps']}))
    return budget.refuse({'--steps': a['steps'], '--gpt-steps': a['gpt_steps'], '--seeds': a['seeds']},
                         a['seeds'] * cost, args.device)


if __name__ == '__main__':
    main()
