"""Lesson: how far back can an RNN learn to look? The "10-20 steps", as a learning test.

The attention article (§2.1.1): "if every dh_i/dh_(i-1) < 1 (as is usual), the product decays
exponentially.  Result: an RNN has great difficulty learning dependencies of more than 10-20
time steps."  The rnn_vs_attention lesson measures the gradient; this one trains.  The task:
read k + 1 random tokens and output the first one at the end -- a dependency over exactly k
steps, with k distractors in between.  Trained the same way (Adam, same batches), at growing k:

    RNN:        tokens -> transformer.RNN (tanh, width 32) -> Linear(h_n)
    attention:  tokens + learned positions -> one MultiHeadAttention -> Linear(output at the last position)

    python -m demos.dependency_span            # k = 3, 6, 12, 24 (about 20-60 s on 2 busy cores)
    python -m demos.dependency_span --full     # k = 3 ... 24, 5 seeds each (about 5x as long)
"""
import random

import microtensor as mt
from microtensor import i18n, nn
from microtensor.i18n import N_, _
from transformer import Embed, MultiHeadAttention, Projection, RNN, TokenEmbedding

from . import budget, claims
from .articles import cite
from .figures import outcome
from .report import command_line, options_of, run_lesson, table
from .toy_training import accuracy, fit

SECTIONS = [('attention', '2.1.1'), ('architecture', '2.1.2')]
VOCAB = 8


class Recall(nn.Module):
    """ids (B, k + 1) -> logits (B, VOCAB) for the first token, read at the last position; kind 'rnn' or 'attention'."""

    def __init__(self, kind, n, d_model=32):
        super().__init__()
        self.kind = kind
        if kind == 'rnn':
            self.tok, self.rnn = TokenEmbedding(VOCAB, d_model), RNN(d_model, d_model)
        else:
            self.embed, self.attention = Embed(VOCAB, d_model, n, 'learned'), MultiHeadAttention(d_model, 1)
        self.head = Projection(d_model, VOCAB)

    def forward(self, ids):
        if self.kind == 'rnn':
            return self.head(self.rnn(self.tok(ids))[1])                      # h_n: the state after the last token
        return self.head(self.attention(self.embed(ids))[:, -1])


def recall_batch(rng, B, n, device='cpu'):
    """(ids (B, n) random tokens, targets (B,) = ids[:, 0])."""
    rows = [[rng.randrange(VOCAB) for _ in range(n)] for _ in range(B)]
    return mt.tensor(rows, device=device), mt.tensor([r[0] for r in rows], device=device)


def span(kind, k, steps=300, B=32, seed=0, device='cpu'):
    """(test accuracy, device) of Recall(kind) trained to carry a token over k steps."""
    mt.manual_seed(seed)
    model = Recall(kind, k + 1).to(device)
    rng = random.Random(seed)
    fit(model, lambda step: recall_batch(rng, B, k + 1, device), steps, 'dependency_span')
    ids, targets = recall_batch(random.Random(seed + 10 ** 6), 512, k + 1, device)
    with mt.no_grad():
        return accuracy(model(ids), targets), model.head.weight.device


def learned(acc):
    """The verdict on one run: well above chance (1/8) means the dependency was learned (a run that learns
    it ends near 100%, one that does not near chance: 50% keeps a margin from both)."""
    return acc > 0.5


DISTANCES = (3, 6, 12, 24)
FULL = dict(distances=(3, 6, 12, 18, 24), seeds=5)  # --full


def run(steps=300, seed=0, full=False, device='cpu'):
    distances, seeds = (FULL['distances'], range(seed, seed + FULL['seeds'])) if full else (DISTANCES, [seed])
    runs = {(kind, k, s): span(kind, k, steps, seed=s, device=device) for s in seeds for k in distances
            for kind in ('rnn', 'attention')}
    every = {(kind, k): [runs[kind, k, s][0] for s in seeds] for kind in ('rnn', 'attention') for k in distances}
    results = {key: accs[0] for key, accs in every.items()}
    print(_("Output the first of k + 1 random tokens ({vocab} symbols) at the end, {steps} Adam steps, {which}\n"
            "({cite}: 'more than 10-20 time steps'):").format(
        vocab=VOCAB, steps=steps, which=i18n.in_language(_seeds(seeds)), cite=cite('attention', '2.1.1')))
    print(table([_('distance k'), _('RNN: test accuracy'), _('attention: test accuracy')],
                [[k, claims.spread(every['rnn', k]), claims.spread(every['attention', k])] for k in distances]))
    rnn_fails = [k for k in distances if not all(map(learned, every['rnn', k]))]
    attention_fails = [k for k in distances if not all(map(learned, every['attention', k]))]
    reach = max((k for k in distances if all(map(learned, every['rnn', k]))), default=None)
    print((_("(chance: {chance:.1%})  The RNN learns the dependency up to k = {reach} and not from k = {fail} on")
           .format(chance=1 / VOCAB, reach=reach, fail=rnn_fails[0]) if rnn_fails else
           _("(chance: {chance:.1%})  The RNN learns the dependency up to k = {reach} and not from k = none tried on "
             "(none failed)").format(chance=1 / VOCAB, reach=reach)) +
          (_("; attention learns every distance tried,\nsince its path from the last position to the first is one "
             "step at any k.\n") if not attention_fails else
           _("; attention learns every distance tried except {fails},\nsince its path from the last position to the "
             "first is one step at any k.\n").format(fails=attention_fails)) +
          (_("The article's '10-20 steps' holds here: the RNN's reach ends in that range or before it")
           if rnn_fails and rnn_fails[0] <= 24 else _("The RNN reached further than the article's 10-20 steps here")) +
          (_("\n(with this training budget and one seed; --full trains 5 seeds).") if not full else "."))
    n = len(seeds)
    learns = {k: sum(map(learned, every['rnn', k])) for k in distances}
    fail = next((k for k in distances if 2 * learns[k] < n), None)        # the first k most seeds do not learn
    per_k = i18n.joined([i18n.words(N_("k = {k}: {accuracy} ({m} of {n} learned)") if n > 1 else
                                    N_("k = {k}: {accuracy}"), k=k, m=learns[k],
                                    accuracy=outcome(every['rnn', k], '.1%', n, **{'above' if learns[k] else 'below': 0.5}),
                                    n=n) for k in distances], N_("{first}; {second}"))
    figures = dict(steps=steps, per_k=per_k, fail=fail, chance=1 / VOCAB, top=distances[-1],
                   attention=claims.spread(every['attention', distances[-1]]), which=_seeds(seeds))
    verdict = 'holds' if fail is not None and fail <= 24 and not attention_fails else 'partly'
    look = N_('the table "distance k, RNN: test accuracy, attention: test accuracy"')
    claims.record('attention', '2.1.1', 'RNN 很难学习超过 10-20 个时间步的依赖关系', verdict,
                  N_("or sooner: after {steps} Adam steps ({which}) the RNN recalls the token k steps back with "
                     "{per_k} (chance {chance:.1%}); one attention layer reaches {attention} at k = {top}"), look,
                  seeds=claims.seeds_note(n), **figures)
    claims.record('architecture', '2.1.2', '网络很难学到「第 1 个词和第 800 个词之间的关系」', verdict,
                  N_("far sooner than 800: most RNN runs fail from {fail} steps, attention learns every distance "
                     "tried ({attention} at {top}); {which}"), look, seeds=claims.seeds_note(n), **figures)
    return {'device': runs['rnn', distances[0], seeds[0]][1], 'accuracy': results, 'every': every,
            'rnn_fails': rnn_fails, 'attention_fails': attention_fails, 'rnn_reach': reach}


def _seeds(seeds):
    """'seed 0' or 'seeds 0-4', as words kept translatable (i18n.words)."""
    return i18n.words(N_("seed {first}") if len(seeds) == 1 else N_("seeds {first}-{last}"), first=seeds[0],
                      last=seeds[-1])


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each training'), seed=N_('random seed'),
                         full=N_('distances 3 ... 24, 5 seeds each (about 5x as long)'))
    return run_lesson(run, command_line('dependency_span', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    distances, seeds = (FULL['distances'], FULL['seeds']) if args.full else (DISTANCES, 1)
    cost = sum((2 * seeds * budget.Cost(0, 0, args.steps * (k + 1)) for k in distances), budget.Cost(0, 0, 0))  # an RNN: k + 1 steps
    return budget.refuse({'--steps': args.steps}, cost, args.device)


if __name__ == '__main__':
    main()
