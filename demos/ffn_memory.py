"""Lesson: the feed-forward network -- one step by hand, and an FFN that stores facts.

1. The deep dive (§6.2) computes one hidden unit by hand: d_model = 12, d_ff = 48, the
   vector x = [-0.6, 0.29, -0.77, 1.28, ...] "of 爱 after the residual and LayerNorm", the first
   four entries of W_1's first column [0.12, -0.08, 0.15, 0.22] and b_1[0] = -0.01:
       hidden[0] = GELU(-0.072 - 0.0232 - 0.1155 + 0.2816 + ... + (-0.01)) ≈ GELU(0.06 + ...) ≈ 0.03
   "(GELU of a small positive value is about half of it)".  Recomputed: each product, the sum of
   the four known terms, GELU of it (exact and the tanh approximation), and the same unit through
   a FeedForward(12, 48) loaded with those numbers (the 8 unknown entries set to 0), with the
   shapes 12 -> 48 -> 12 of every step.
2. The architecture article (§2.7): "research shows the FFN layers store a great deal of factual
   knowledge: think of them as the model's memory store".  An FFN trained as a key-value memory:
   N facts (subject -> object), each subject a fixed random key vector k_s, each object a fixed
   random vector e_o; the model is FFN(k_s) . e_o (the object vectors are not trained, so
   everything learned lives in the FFN's W_1, W_2).  Recall after training, for a single Linear
   (no hidden layer) and for FFNs of growing d_ff; and the reading of Geva et al. (2021), "the
   FFN's rows of W_1 are keys, the rows of W_2 values": for each fact, does the hidden unit that
   fires most write (its W_2 row) towards the right object?

    python -m demos.ffn_memory            # the defaults (run time: end of --help)
    python -m demos.ffn_memory --full     # d_ff = 512 too, over 5 seeds
"""
import math
import random

import microtensor as mt
from microtensor import i18n, nn
from microtensor.i18n import N_, _
from transformer import FeedForward, Projection
from transformer.feedforward import ACTIVATIONS

from . import budget, claims
from .articles import cite
from .report import command_line, options_of, run_lesson, table
from .toy_training import accuracy, fit

SECTIONS = [('deep_dive', '6.2'), ('architecture', '2.7')]
X_KNOWN = [-0.6, 0.29, -0.77, 1.28]          # the deep dive §6.2: x's first four entries
W1_COLUMN = [0.12, -0.08, 0.15, 0.22]        # W_1[:4, 0]
B1_0 = -0.01                                 # b_1[0]
PRODUCTS_PRINTED = [-0.072, -0.0232, -0.1155, 0.2816]
X_MID_EAT = [-0.6000, 0.2923, -0.7739, 1.2763]   # the deep dive §7.3 (b): X_mid(吃), first four entries


# ---------------------------------------------------------------------------- 1. by hand
def by_hand(device='cpu'):
    """{'products', 'pre': sum of the known terms + b_1[0], 'gelu': GELU(pre) exact, 'gelu_tanh', 'module':
    hidden[0] from FeedForward(12, 48), 'shapes': [x, x W_1 + b_1, GELU(.), FFN(x)]} (float64)."""
    products = [a * b for a, b in zip(X_KNOWN, W1_COLUMN)]
    pre = sum(products) + B1_0
    x = mt.tensor([pre], dtype='float64', device=device)
    exact = (0.5 * x * (1 + mt.erf(x / math.sqrt(2)))).item()                     # x Phi(x)
    approx = ACTIVATIONS['gelu'](x).item()                                          # the library's (tanh form)
    ffn = FeedForward(12, 48).to(device, dtype='float64')
    W_1 = ffn.W_1.weight.tolist()                                                   # (12, 48): y = x W_1 + b_1
    for i in range(12):
        W_1[i][0] = W1_COLUMN[i] if i < 4 else 0.0
    ffn.W_1.weight.data = mt.tensor(W_1, dtype='float64', device=device).data
    b_1 = ffn.W_1.bias.tolist()
    b_1[0] = B1_0
    ffn.W_1.bias.data = mt.tensor(b_1, dtype='float64', device=device).data
    x_row = mt.tensor([X_KNOWN + [0.0] * 8], dtype='float64', device=device)       # (1, 12)
    with mt.no_grad():
        pre_act = ffn.W_1(x_row)
        hidden = ACTIVATIONS[ffn.activation](pre_act)
        out = ffn(x_row)
    return {'products': products, 'pre': pre, 'gelu': exact, 'gelu_tanh': approx, 'module': hidden[0, 0].item(),
            'shapes': [x_row.shape, pre_act.shape, hidden.shape, out.shape]}


# ---------------------------------------------------------------------------- 2. a memory of facts
class FactMemory(nn.Module):
    """logits[s, o] = FFN(k_s) . e_o * sharpness: N subjects with fixed random keys k_s (d), N objects with
    fixed random vectors e_o (d); d_ff=None: one Linear(d, d) instead of the FFN."""

    def __init__(self, N, d=32, d_ff=None, sharpness=8.0):
        super().__init__()
        self.register_buffer('keys', mt.randn(N, d) / math.sqrt(d))       # buffers: not trained
        self.register_buffer('objects', mt.randn(N, d) / math.sqrt(d))
        self.ffn = Projection(d, d) if d_ff is None else FeedForward(d, d_ff)
        self.sharpness = sharpness

    def forward(self, subjects):
        return self.ffn(self.keys[subjects]) @ self.objects.T * self.sharpness


def store(N=512, d_ff=None, steps=300, seed=0, device='cpu'):
    """Train a FactMemory on N facts (subject s -> object perm[s], a random permutation) with Adam, full batch:
    (model, parameters, recall = fraction of subjects whose top object is right)."""
    mt.manual_seed(seed)
    model = FactMemory(N, d_ff=d_ff).to(device)
    objects = list(range(N))
    random.Random(seed).shuffle(objects)
    subjects, answers = mt.arange(N, device=device), mt.tensor(objects, device=device)
    fit(model, lambda step: (subjects, answers), steps, 'ffn_memory', lr=1e-2)
    with mt.no_grad():
        return model, model.num_parameters(), accuracy(model(subjects), answers), answers


def key_value_reading(model, answers):
    """For each fact: the hidden unit with the largest activation; fraction of facts for which that unit's
    W_2 row (what it writes) has its largest dot product with the right object."""
    ffn = model.ffn
    with mt.no_grad():
        hidden = ACTIVATIONS[ffn.activation](ffn.W_1(model.keys))                # (N, d_ff)
        top = hidden.argmax(dim=-1)                                             # (N,)
        writes = ffn.W_2.weight[top] @ model.objects.T                           # (N, N): unit's value vs objects
    return (writes.argmax(dim=-1) == answers).astype('float64').mean().item()


FULL = dict(facts=512, steps=300, seeds=5)  # --full: d_ff = 512 too, 5 seeds


def run(facts=512, steps=300, seed=0, full=False, device='cpu'):
    facts, steps = (FULL['facts'], FULL['steps']) if full else (facts, steps)
    h = by_hand(device)
    print(_("1. One hidden unit by hand ({cite}): x[:4] = {x},\n   W_1[:4, 0] = {w}, b_1[0] = {b}").format(
        cite=cite('deep_dive', '6.2'), x=X_KNOWN, w=W1_COLUMN, b=B1_0))
    print(table(['x_i', 'W_1[i, 0]', _('product'), _('printed')],
                [[a, b, f"{p:.4f}", printed] for a, b, p, printed in zip(X_KNOWN, W1_COLUMN, h['products'],
                                                                          PRODUCTS_PRINTED)]))
    print(_("Sum of the four known terms + b_1[0] = {pre:.4f} (the article: '0.06 + ...');\nGELU({pre:.4f}) = "
            "{gelu:.4f} exact, {gelu_tanh:.4f} by the tanh form;\nthrough FeedForward(12, 48) with the 8 unknown "
            "entries at 0: hidden[0] = {module:.4f}.  GELU(x) / x = {ratio:.3f}: 'about half' holds\nfor small x "
            "(Phi(0) = 0.5).  The article's products and its ≈ 0.03 hold, for these four terms; the other 8 are not "
            "printed.").format(pre=h['pre'], gelu=h['gelu'], gelu_tanh=h['gelu_tanh'], module=h['module'],
                               ratio=h['gelu'] / h['pre']))
    print(_("Shapes through the module: {shapes} (x, x W_1 + b_1, GELU, FFN(x)): 12 -> 48 -> 12.").format(
        shapes=' -> '.join(str(s) for s in h['shapes'])))
    gap = max(abs(a - b) for a, b in zip(X_KNOWN, X_MID_EAT))
    print(_("(This x is labelled 爱 of 我 爱 你, but it is {cite}'s X_mid(吃) of 猫 吃 鱼,\n{x_mid}, rounded: largest "
            "difference {gap:.4f}.)").format(cite=cite('deep_dive', '7.3'), x_mid=X_MID_EAT, gap=gap))
    claims.record('deep_dive', '6.2', 'GELU(-0.072 - 0.0232 - 0.1155 + 0.2816 + ... + (-0.01)) ≈ GELU(0.06 + ...) ≈ 0.03',
                  'holds', N_("for the four printed terms: the products are exact, their sum with b_1[0] is {pre:.4f}, "
                              "GELU({pre:.4f}) = {gelu:.4f} (exact and tanh form; FeedForward(12, 48) gives "
                              "{module:.4f}); the x labelled 爱 is §7.3's X_mid(吃), rounded (largest difference "
                              "{gap:.4f})"),
                  N_('part 1: the table "x_i, W_1[i, 0], product, printed" and the lines under it'), pre=h['pre'],
                  gelu=h['gelu'], module=h['module'], gap=gap)

    sizes = (None, 8, 32, 128, 512) if full else (None, 8, 32, 128)
    stored = {d_ff: store(facts, d_ff, steps, seed, device) for d_ff in sizes}
    print(_("\n2. An FFN as a memory ({cite}): {facts} facts subject -> object,\n   keys and objects fixed random 32-d "
            "vectors, {steps} Adam steps; recall = the right object ranked first:").format(
              cite=cite('architecture', '2.7'), facts=facts, steps=steps))
    print(table([_('memory'), _('parameters'), _('recall'), _('facts per 100 parameters')],
                [[_('Linear(32, 32), no hidden layer') if d_ff is None else f"FFN, d_ff = {d_ff}", n, f"{r:.1%}",
                  f"{100 * r * facts / n:.1f}"] for d_ff, (model, n, r, answers) in stored.items()]))
    best = sizes[-1]
    reading = key_value_reading(stored[best][0], stored[best][3])
    linear = stored[None][2]
    print(_("(chance: 1/{facts})  The single Linear recalls {linear:.0%}: a 32 x 32 matrix holds only so many "
            "arbitrary pairs.  With a hidden\nlayer the recall grows with d_ff: the FFN does store facts, and more hidden units "
            "store more.  Read as key-value memory\n(d_ff = {best}): for {reading:.0%} of the facts the most active "
            "hidden unit alone writes towards the right object (chance\n{chance:.2%}); the rest is spread over "
            "several units.  The architecture article's claim holds for this toy memory; that\nreal models keep "
            "their facts there is the research it cites, not something a toy can show.").format(
              facts=facts, linear=linear, best=best, reading=reading, chance=1 / facts))
    _record(stored, facts, steps, seed, full, device)
    return {'device': stored[best][0].ffn.W_1.weight.device, 'by_hand': h, 'reading': reading, 'x_mid_gap': gap,
            'memory': {d_ff: (n, r) for d_ff, (_, n, r, _) in stored.items()}}


def _record(stored, facts, steps, seed, full, device):
    """The verdict on the architecture article's 记忆仓库 (§2.7), over the seeds --full trains."""
    seeds = range(seed, seed + (FULL['seeds'] if full else 1))
    recalls = {d_ff: [r] + [store(facts, d_ff, steps, s, device)[2] for s in list(seeds)[1:]]
               for d_ff, (_, _, r, _) in stored.items()}
    sizes = [d_ff for d_ff in recalls if d_ff is not None]
    claims.record('architecture', '2.7', '研究表明 FFN 层储存了大量事实知识，可以理解为模型的「记忆仓库」', 'holds',
                  N_("for a toy memory: {facts} facts (fixed random keys and objects, only the FFN learns) are "
                     "recalled {linear} by one Linear(32, 32), {ffn} by FFNs with d_ff = {sizes}.  That real models "
                     "keep theirs there is the cited research"), N_('part 2: the table "memory, parameters, recall"'),
                  seeds=claims.seeds_note(len(seeds)), facts=facts, linear=claims.spread(recalls[None]),
                  ffn=i18n.joined([claims.spread(recalls[d]) for d in sizes], N_("{first}, {second}")),
                  sizes=', '.join(map(str, sizes)))


def main(argv=None):
    options = options_of(run, facts=N_('facts (subject -> object pairs) to store'),
                         steps=N_('Adam steps (full batch)'), seed=N_('random seed'),
                         full=N_('d_ff = 512 too, and 5 seeds'))
    return run_lesson(run, command_line('ffn_memory', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    N, steps = a['facts'], a['steps']
    one = budget.dense(2 * N * 32 + 4 * N * N, 3 * steps * N * (32 * 2 * 512 + 32 * N), steps)   # d_ff up to 512
    return budget.refuse({'--facts': N, '--steps': steps}, 5 * a.get('seeds', 1) * one, args.device)


if __name__ == '__main__':
    main()
