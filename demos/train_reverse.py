"""Lesson: a tiny encoder-decoder Transformer learns to reverse digit sequences.

The original architecture (transformer-architecture article; deep-dive §7.5): the
encoder reads the whole source at once; the decoder writes the target one token at a
time with "masked self-attention" (it "cannot peek at" the tokens after its own) and
"cross-attention: the decoder's junction with the encoder.  Each decoder word uses its
own Q to query the K and V of the encoder's output", which is how a translation finds
its alignment.  Reversing is the cleanest alignment task there is: output position t
must find source position L - 1 - t, and attention reaches it in one hop, whatever L is.

    src = 3 1 4 1 5 9    ->  target = 9 5 1 4 1 3
    training (teacher forcing): decoder input [bos, 9, 5, 1, 4, 1], loss = CE(logits, target)
    testing (generate, greedy, KV cache): bos -> 9 -> 5 -> ... one token at a time

Each step draws a fresh batch of random sequences; the test sequences are ones never
seen in training, so the accuracy measures the rule, not memory.  Chance is 10% per
token (ten digits).

    python -m demos.train_reverse                           # the tour's run
    python -m demos.train_reverse --device cuda --length 12 --steps 1000
"""
import random

import microtensor as mt
from microtensor import nn, optim
from transformer import Transformer, generate, seq2seq_loss, shift_right

from .report import command_line, save_lines, table, window_means

DIGITS, BOS = 10, 10  # tokens 0-9 are digits; the decoder's start token is 10


def random_sequences(rng, n, length, exclude=frozenset()):
    """n distinct digit sequences (tuples) of `length` not in `exclude`."""
    out = {}  # a dict keeps the order of drawing
    while len(out) < n:
        seq = tuple(rng.randrange(DIGITS) for _ in range(length))
        if seq not in exclude:
            out[seq] = None
    return list(out)


def train(steps=300, length=6, batch_size=32, d_model=64, n_heads=4, n_layers=1, lr=3e-3, seed=0, device='cpu',
          log_every=None):
    """Train on fresh random batches; returns (model, losses, the set of training sequences)."""
    mt.manual_seed(seed)
    rng = random.Random(seed)
    model = Transformer(DIGITS, DIGITS + 1, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                        max_len=length + 1, bos_id=BOS).to(device)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = optim.WarmupCosine(opt, warmup_steps=min(20, steps - 1), total_steps=steps)
    log_every = log_every or max(1, steps // 5)
    seen, losses = set(), []
    for step in range(steps):
        batch = [tuple(rng.randrange(DIGITS) for _ in range(length)) for _ in range(batch_size)]
        seen.update(batch)
        src = mt.tensor(batch, device=device)
        tgt = mt.tensor([s[::-1] for s in batch], device=device)
        loss = seq2seq_loss(model(src, shift_right(tgt, BOS)), tgt)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        schedule.step()
        losses.append(loss.item())
        if (step + 1) % log_every == 0:
            print(f"step {step + 1:4d}/{steps}  loss {loss.item():.4f}")
    return model, losses, seen


def evaluate(model, sequences):
    """Greedy decodes of `sequences`; (token accuracy, sequence accuracy, accuracy per position, decodes)."""
    src = mt.tensor(sequences, device=model.parameters()[0].device)
    predicted = generate(model, src, len(sequences[0]), greedy=True).tolist()
    targets = [list(s[::-1]) for s in sequences]
    hits = [[p == t for p, t in zip(pred, target)] for pred, target in zip(predicted, targets)]
    n, length = len(sequences), len(targets[0])
    by_position = [sum(h[i] for h in hits) / n for i in range(length)]
    return sum(map(sum, hits)) / (n * length), sum(all(h) for h in hits) / n, by_position, predicted


def run(steps=300, length=6, n_test=200, seed=0, **options):
    model, losses, seen = train(steps, length, seed=seed, **options)
    test = random_sequences(random.Random(seed + 1), n_test, length, exclude=seen)
    token_acc, seq_acc, by_position, predicted = evaluate(model, test)
    print(table(['steps', 'mean loss'], window_means(losses, 8)))
    save_lines('train_reverse', {'training loss': losses}, 'step', 'cross-entropy (nats)',
               f'Reversing {length} digits')
    print(f"\n{n_test} test sequences of length {length}, none seen in training ({len(seen)} were):")
    print(f"token accuracy {100 * token_acc:.1f}% (chance 10%), whole sequences right {100 * seq_acc:.1f}%")
    print(table(['output position'] + [str(i + 1) for i in range(length)],
                [['accuracy'] + [f"{100 * a:.0f}%" for a in by_position]]))
    print("\nsource        -> greedy decode (target)")
    for src, pred in list(zip(test, predicted))[:6]:
        target = list(src[::-1])
        print(f"{' '.join(map(str, src))}  -> {' '.join(map(str, pred))}  "
              f"{'ok' if pred == target else '(' + ' '.join(map(str, target)) + ')'}")
    return {'losses': losses, 'token_accuracy': token_acc, 'sequence_accuracy': seq_acc, 'by_position': by_position}


def main(argv=None):
    options = dict(steps=300, length=6, n_test=200, batch_size=32, d_model=64, n_heads=4, n_layers=1, seed=0, lr=3e-3)
    run(**vars(command_line('train_reverse', __doc__, options, argv)))


if __name__ == '__main__':
    main()
