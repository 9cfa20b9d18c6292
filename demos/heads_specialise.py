"""Lesson: several heads, several jobs -- the deep dive's three tables, and heads that learn different offsets.

1. The deep dive (§2.5) prints attention weights for 我 爱 你 with d_model = 12, h = 3, d_k = 4:
   head 1 "seems to attend more to neighbouring words", head 2 ("semantic roles") sends 爱 -> 你
   "as high as 0.85", head 3 "is more uniform: it captures global information".  Checked on the
   printed tables: every row's sum (softmax rows sum to 1), each head's mean entropy (the uniform
   one should have the largest), and each head's weight on the neighbours |i - j| = 1.  Then the
   step the tables feed, head_i = A_i V_i and Concat(head_1, head_2, head_3) W^O, through a
   MultiHeadAttention(12, 3)'s own W^V and W^O: the shapes (3 x 4 per head, 3 x 12 after).
2. More than one head specialising (§2.6: Clark et al. found heads that "attend almost entirely
   to the next word", others to syntax ...).  A task that needs two relations at once: at every
   position t, name both the previous token and the next one (two readouts, no mask, learned
   positions, one attention layer without residual, so everything comes through attention).
   One head must split its weight between t-1 and t+1 and gets their vectors summed: the
   readout cannot tell which token came from which side.  With two or more heads, training
   alone decides who looks where; printed: each head's weight on t-1, t and t+1, and accuracy.

    python -m demos.heads_specialise            # the defaults (run time: end of --help)
    python -m demos.heads_specialise --full     # longer training, 8 heads too
"""
import math

import microtensor as mt
from microtensor import nn
from microtensor.i18n import N_, _
from transformer import Embed, MultiHeadAttention, Projection
from transformer.attention import merge_heads, split_heads

from . import why_separate_qk
from . import budget, claims
from .articles import cite
from .figures import series
from .report import command_line, options_of, run_lesson, table
from .toy_training import fit, tail_mean

SECTIONS = [('deep_dive', '2.5'), ('deep_dive', '2.3'), ('deep_dive', '2.6')]
WORDS = ['我', '爱', '你']
TABLES = {  # the deep dive §2.5: A1 (local collocation), A2 (semantic roles), A3 (global topic)
    1: [[0.60, 0.30, 0.10], [0.35, 0.25, 0.40], [0.10, 0.45, 0.45]],
    2: [[0.80, 0.05, 0.15], [0.10, 0.05, 0.85], [0.20, 0.75, 0.05]],
    3: [[0.45, 0.35, 0.20], [0.30, 0.40, 0.30], [0.25, 0.35, 0.40]],
}


# ---------------------------------------------------------------------------- 1. the printed tables
def table_facts():
    """{head: {'sums': row sums, 'entropy': mean row entropy (nats), 'neighbours': mean weight on |i - j| = 1}}."""
    out = {}
    for head, A in TABLES.items():
        n = len(A)
        out[head] = {'sums': [sum(row) for row in A],
                     'entropy': sum(-sum(p * math.log(p) for p in row) for row in A) / n,
                     'neighbours': sum(A[i][j] for i in range(n) for j in range(n) if abs(i - j) == 1) / n}
    return out


def concat_shapes(seed=0, device='cpu'):
    """head_i = A_i V_i with V = X W^V of a MultiHeadAttention(12, 3) (X random: the article gives no 我爱你
    embeddings), then Concat(...) W^O: the shapes [V_i, head_i, Concat, output]."""
    mt.manual_seed(seed)
    mha = MultiHeadAttention(12, 3).to(device)
    X = mt.randn(1, 3, 12).to(device)
    V = split_heads(mha.W_V(X), 3)                                     # (1, 3 heads, 3 words, 4)
    A = mt.tensor([TABLES[h] for h in (1, 2, 3)], device=device)[None]  # (1, 3 heads, 3, 3)
    heads = A @ V                                                      # head_i = A_i V_i
    concat = merge_heads(heads)                                        # (1, 3, 12)
    return [tuple(V.shape[2:]), tuple(heads.shape[2:]), tuple(concat.shape[1:]), tuple(mha.W_O(concat).shape[1:])]


# ---------------------------------------------------------------------------- 2. two jobs
class Neighbours(nn.Module):
    """ids (B, n) -> (previous-token logits, next-token logits), each (B, n, vocab): one MultiHeadAttention
    (no mask, no residual) on token + learned position embeddings, two Linear readouts."""

    def __init__(self, n_heads, vocab=10, n=8, d_model=32):
        super().__init__()
        self.embed = Embed(vocab, d_model, n, 'learned')
        self.attention = MultiHeadAttention(d_model, n_heads)
        self.previous, self.next = Projection(d_model, vocab), Projection(d_model, vocab)

    def forward(self, ids):
        y = self.attention(self.embed(ids))
        return self.previous(y), self.next(y)


def neighbour_loss(logits, ids):
    """Cross-entropy of both readouts at the inner positions 1 .. n-2 (each has both neighbours)."""
    previous, following = logits
    return (mt.cross_entropy(previous[:, 1:-1], ids[:, :-2]) + mt.cross_entropy(following[:, 1:-1], ids[:, 2:])) / 2


def train_neighbours(n_heads, steps=300, n=8, B=32, seed=0, device='cpu'):
    """{'losses', 'accuracy': (previous, next) on a test batch, 'offsets': per head, mean weight on t-1, t, t+1}."""
    mt.manual_seed(seed)
    model = Neighbours(n_heads, n=n).to(device)
    def batch(step):                                                 # the targets are the ids themselves
        ids = why_separate_qk.copy_batch(step, B, n, 10, seed, device)
        return ids, ids

    losses = fit(model, batch, steps, 'heads_specialise', loss=neighbour_loss)
    ids = why_separate_qk.copy_batch(10 ** 6, 256, n, 10, seed, device)
    with mt.no_grad():
        previous, following = model(ids)
    hits = [(logits[:, 1:-1].argmax(dim=-1) == target).astype('float32').mean().item()
            for logits, target in ((previous, ids[:, :-2]), (following, ids[:, 2:]))]
    A = model.attention.last_weights.mean(axis=0)                    # (h, n, n)
    inner = range(1, n - 1)
    offsets = [[sum(A[h, t, t + d].item() for t in inner) / len(inner) for d in (-1, 0, 1)] for h in range(n_heads)]
    return {'losses': losses, 'accuracy': hits, 'offsets': offsets, 'device': model.previous.weight.device}


def role(weights):
    """A head's name from its mean weights on (t-1, t, t+1)."""
    best = max(range(3), key=lambda i: weights[i])
    if weights[best] < 0.5:
        return N_('mixed')
    return (N_('previous token'), N_('itself'), N_('next token'))[best]


HEAD_COUNTS = (1, 2, 4)
FULL = dict(steps=1000, head_counts=(1, 2, 4, 8), seeds=5)  # --full: 1 and 2 heads over 5 seeds


def run(steps=300, seed=0, full=False, device='cpu'):
    steps, head_counts = (FULL['steps'], FULL['head_counts']) if full else (steps, HEAD_COUNTS)
    facts = table_facts()
    print(_("1. The three heads of 我 爱 你 ({cite}), as printed:").format(cite=cite('deep_dive', '2.5')))
    print(table([_('head'), _('row sums'), _('mean entropy (nats)'), _('weight on neighbours |i-j| = 1'), '爱 -> 你'],
                [[h, ', '.join(f"{s:.2f}" for s in f['sums']), f['entropy'], f['neighbours'], TABLES[h][1][2]]
                 for h, f in facts.items()], fmt='.3f'))
    most_uniform = max(facts, key=lambda h: facts[h]['entropy'])
    most_local = max(facts, key=lambda h: facts[h]['neighbours'])
    print(_("Every row sums to 1.00.  Head {uniform} has the largest entropy ({log3:.3f} would be "
            "uniform): {uniform_verdict}.\n"
            "The largest weight on neighbours is head {local}'s, not head 1's: in a 3-word sentence 爱 has "
            "both words as neighbours, and\nhead 2 sends 爱 -> 你 0.85 and 你 -> 爱 0.75.\nSo {local_verdict}; "
            "爱 -> 你 = 0.85 is as printed.").format(
        uniform=most_uniform, log3=math.log(3), local=most_local,
        uniform_verdict=_("'head 3 is the most uniform' holds") if most_uniform == 3 else
        _("'head 3 is the most uniform' does not hold"),
        local_verdict=_("'head 1 attends to neighbours' is right") if most_local == 1 else
        _("'head 1 attends to neighbours' is not what the numbers show")))
    claims.record('deep_dive', '2.5', ['头 1 看起来更关注相邻词', '头 3 的权重分布更均匀'],
                  'holds' if most_local == 1 and most_uniform == 3 else 'partly',
                  N_("every row sums to 1.00 and head {uniform} has the largest entropy ({entropy:.3f} nats; uniform "
                     "{log3:.3f}), but head {local}, not head 1, puts the most weight on neighbours ({local_w:.3f} vs "
                     "{one_w:.3f})"), N_('part 1: the table "head, row sums, mean entropy, weight on neighbours"'),
                  uniform=most_uniform, entropy=facts[most_uniform]['entropy'], log3=math.log(3), local=most_local,
                  local_w=facts[most_local]['neighbours'], one_w=facts[1]['neighbours'])
    print(_("Through MultiHeadAttention(12, 3)'s W^V and W^O (random X):\nV_i, head_i = A_i V_i, Concat, output "
            "shapes: {shapes}").format(shapes=' -> '.join(str(s) for s in concat_shapes(seed, device))))

    results = {h: train_neighbours(h, steps, seed=seed, device=device) for h in head_counts}
    print("\n" + _("2. Name both neighbours of every token (8 tokens, 10 symbols, no mask, one layer, {steps} Adam "
                   "steps); per head, the mean weight\n   on t-1, t, t+1 (heads numbered from 1):").format(steps=steps))
    rows = []
    for h, r in results.items():
        for i, w in enumerate(r['offsets'], 1):
            rows.append([h if i == 1 else '', i, *w, _(role(w)),
                         *((f"{100 * r['accuracy'][0]:.1f}%", f"{100 * r['accuracy'][1]:.1f}%", tail_mean(r['losses']))
                           if i == 1 else ('', '', ''))])
    print(table([_('heads'), _('head'), _('on t-1'), _('on t'), _('on t+1'), _('role'), _('previous: acc'),
                 _('next: acc'), _('final loss')], rows, fmt='.3f'))
    roles = {h: {role(w) for w in r['offsets']} for h, r in results.items()}
    split = [h for h in head_counts if {'previous token', 'next token'} <= roles[h]]
    one, back, middle, forward = results[1]['accuracy'], *results[1]['offsets'][0]
    print(_("(chance: 10%)  One head has to look both ways at once (weights {back:.2f} / {forward:.2f}) and gets one "
            "vector for both\nneighbours: ").format(back=back, forward=forward)
          + (_("it reaches only {previous:.0f}% (previous) / {next:.0f}% (next).").format(
              previous=100 * one[0], next=100 * one[1]) if min(one) < 0.9 else
             _("it still gets there, more slowly (final loss {one:.3f} against {more:.3f} with {heads} heads).").format(
              one=tail_mean(results[1]['losses']), more=tail_mean(results[head_counts[1]]['losses']),
              heads=head_counts[1])) + "\n" +
          (_("With {heads} heads, one head takes the previous token and another the next: nobody\nassigned them, "
             "training did -- the emergence the deep dive describes\n({cite}: 'this is not design, it is "
             "emergence').").format(heads=split[0], cite=cite('deep_dive', '2.3')) if split else
           _("No head count tried here split the two jobs between heads.")))
    seeds = range(seed, seed + (FULL['seeds'] if full else 1))
    runs = {h: [results[h]] + [train_neighbours(h, steps, seed=k, device=device) for k in list(seeds)[1:]]
            for h in head_counts[:2]}
    two = head_counts[1]
    splits = sum({'previous token', 'next token'} <= {role(w) for w in r['offsets']} for r in runs[two])
    look = N_('part 2: the table "heads, head, on t-1, on t, on t+1, role, previous: acc, next: acc"')
    n = len(seeds)
    claims.record('deep_dive', '2.3', '注意：这不是设计，是涌现。', 'holds' if splits == n else 'partly',
                  N_("on a toy: trained to name both neighbours, {two} heads split the jobs by themselves (one on t-1, "
                     "one on t+1) in {splits} of {n} seeds, reaching {acc} on both"), look, seeds=claims.seeds_note(n),
                  two=two, splits=splits, n=n, acc=claims.spread([a for r in runs[two] for a in r['accuracy']]))
    on = lambda h, k: [w[k] for r in runs[h] for w in r['offsets'] if role(w) == ('next token' if k == 2 else
                                                                                  'previous token')]
    claims.record('deep_dive', '2.6', '一些头几乎完全关注下一个词（像是一个"相邻性探测器"）', 'holds' if on(two, 2) else 'partly',
                  N_("with {two} heads on the two-neighbours task, next-token heads put {next_w} on t+1 and "
                     "previous-token heads {prev_w} on t-1; one head alone splits {back:.2f} / {forward:.2f} and "
                     "reaches {one}"), look,
                  seeds=claims.seeds_note(n), two=two, next_w=claims.between(on(two, 2)) if on(two, 2) else '-',
                  prev_w=claims.between(on(two, 0)) if on(two, 0) else '-', back=back, forward=forward,
                  one=series(one, '.0%', sep=' / '))
    return {'device': results[1]['device'], 'tables': facts, 'most_uniform': most_uniform, 'most_local': most_local,
            'training': results,
            'roles': roles, 'split': split}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each training'), seed=N_('random seed'),
                         full=N_('1000 steps, 8 heads as well, and 1 and 2 heads over 5 seeds'))
    return run_lesson(run, command_line('heads_specialise', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    steps, head_counts = (FULL['steps'], FULL['head_counts']) if args.full else (args.steps, HEAD_COUNTS)
    seeds = FULL['seeds'] if args.full else 1
    return budget.refuse({'--steps': steps}, (len(head_counts) + 2 * (seeds - 1)) * budget.Cost(0, 0, steps), args.device)


if __name__ == '__main__':
    main()
