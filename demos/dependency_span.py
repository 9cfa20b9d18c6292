"""Lesson: how far back can an RNN learn to look? The "10-20 steps", as a learning test.

The attention article (§2.1.1): "if every dh_i/dh_(i-1) < 1 (as is usual), the product decays
exponentially.  Result: an RNN has great difficulty learning dependencies of more than 10-20
time steps."  The rnn_vs_attention lesson measures the gradient; this one trains.  The task:
read k + 1 random tokens and output the first one at the end -- a dependency over exactly k
steps, with k distractors in between.  Trained the same way (Adam, same batches), at growing k:

    RNN:        tokens -> transformer.RNN (tanh, width 32) -> Linear(h_n)
    attention:  tokens + learned positions -> one MultiHeadAttention -> Linear(output at the last position)

    python -m demos.dependency_span            # a few seconds: k = 3, 6, 12, 24
    python -m demos.dependency_span --full     # k up to 48, 2000 steps
"""
import random

import microtensor as mt
from microtensor import nn
from transformer import RNN, Embed, MultiHeadAttention, TokenEmbedding

from . import budget
from .articles import cite
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
        self.head = nn.Linear(d_model, VOCAB)

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
    """The verdict on one run: well above chance (1/8) means the dependency was learned."""
    return acc > 0.9


DISTANCES = (3, 6, 12, 24)
FULL = dict(distances=(3, 6, 12, 18, 24, 36, 48), steps=2000)  # --full


def run(steps=300, seed=0, full=False, device='cpu'):
    distances, steps = (FULL['distances'], FULL['steps']) if full else (DISTANCES, steps)
    runs = {(kind, k): span(kind, k, steps, seed=seed, device=device) for k in distances
            for kind in ('rnn', 'attention')}
    results = {key: acc for key, (acc, _) in runs.items()}
    print(f"Output the first of k + 1 random tokens ({VOCAB} symbols) at the end, {steps} Adam steps\n"
          f"({cite('attention', '2.1.1')}: 'more than 10-20 time steps'):")
    print(table(['distance k', 'RNN: test accuracy', 'attention: test accuracy'],
                [[k, f"{results['rnn', k]:.1%}", f"{results['attention', k]:.1%}"] for k in distances]))
    rnn_fails = [k for k in distances if not learned(results['rnn', k])]
    attention_fails = [k for k in distances if not learned(results['attention', k])]
    reach = max((k for k in distances if learned(results['rnn', k])), default=None)
    print(f"(chance: {1 / VOCAB:.1%})  The RNN learns the dependency up to k = {reach} and not from k = "
          f"{rnn_fails[0] if rnn_fails else 'none tried'} on" + (
              "" if rnn_fails else " (none failed)") + "; attention learns every distance tried"
          + ("" if not attention_fails else f" except {attention_fails}") + ",\nsince its path from the last "
          "position to the first is one step at any k.\n" +
          ("The article's '10-20 steps' holds here: the RNN's reach ends in that range or before it"
           if rnn_fails and rnn_fails[0] <= 24 else "The RNN reached further than the article's 10-20 steps here") +
          ("\n(with this training budget; --full trains 2000 steps)." if not full else "."))
    return {'device': runs['rnn', distances[0]][1], 'accuracy': results, 'rnn_fails': rnn_fails,
            'attention_fails': attention_fails, 'rnn_reach': reach}


def main(argv=None):
    options = options_of(run, steps='Adam steps of each training', seed='random seed',
                         full='distances up to 48, 2000 steps')
    return run_lesson(run, command_line('dependency_span', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    distances, steps = (FULL['distances'], FULL['steps']) if args.full else (DISTANCES, args.steps)
    cost = sum((2 * budget.Cost(0, 0, steps * (k + 1)) for k in distances), budget.Cost(0, 0, 0))  # an RNN: k + 1 steps
    return budget.refuse({'--steps': steps}, cost, args.device)


if __name__ == '__main__':
    main()
