"""Lesson: a tiny encoder-decoder Transformer learns to reverse digit sequences.

The original architecture (the architecture article; the deep dive §7.5): the
encoder reads the whole source at once; the decoder writes the target one token at a
time with "masked self-attention" (it "cannot peek at" the tokens after its own) and
"cross-attention: the decoder's junction with the encoder.  Each decoder word uses its
own Q to query the K and V of the encoder's output", which is how a translation finds
its alignment.  Reversing is the cleanest alignment task there is: output position t
must find source position L - 1 - t, and attention reaches it in one hop, whatever L is.

    src = 3 1 4 1 5 9    ->  target = 9 5 1 4 1 3
    training (teacher forcing): decoder input [bos, 9, 5, 1, 4, 1], loss = CE(logits, target)
    testing (generate, greedy, KV cache): bos -> 9 -> 5 -> ... one token at a time

The --n-test test sequences are drawn first and held out: each training step draws a fresh
batch of random sequences that never contains one of them, so the accuracy measures the
rule, not memory (at most half of the 10^length sequences can be held out).  Chance is 10%
per token (ten digits).

    python -m demos.train_reverse                           # the tour's run
    python -m demos.train_reverse --device cuda --length 12 --steps 1000
    python -m demos.train_reverse --full                    # the tour's run from 5 seeds
"""
import random

import microtensor as mt
from microtensor import nn, optim
from microtensor.i18n import N_, _
from transformer import Transformer, generate, seq2seq_loss, shift_right

from . import budget, claims
from .report import check_learned, check_loss, command_line, options_of, run_lesson, save_lines, table, window_means

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('architecture', '2.8'), ('deep_dive', '7.5')]

DIGITS, BOS = 10, 10  # tokens 0-9 are digits; the decoder's start token is 10
TRIES = (N_('a lower --lr (say 10x smaller)'), N_('a longer --warmup'))  # for a run whose loss went up
FULL = dict(seeds=5)  # --full
LEARNED = 0.9         # a token accuracy the verdict counts as having learned to reverse (chance: 10%)


def random_sequences(rng, n, length, exclude=frozenset()):
    """n distinct digit sequences (tuples) of `length` not in `exclude`; ValueError if fewer exist."""
    available = DIGITS ** length - len(exclude)
    if n > available:
        raise ValueError(f"random_sequences: asked for {n} distinct sequences of length {length}, but only "
                         f"{available} exist{' outside the excluded ones' if exclude else ''}")
    out = {}  # a dict keeps the order of drawing
    while len(out) < n:
        seq = tuple(rng.randrange(DIGITS) for _ in range(length))
        if seq not in exclude:
            out[seq] = None
    return list(out)


def draw(rng, length, exclude=frozenset()):
    """One random digit sequence of `length` outside `exclude` (which must leave some)."""
    while True:
        seq = tuple(rng.randrange(DIGITS) for _ in range(length))
        if seq not in exclude:
            return seq


def max_test_sequences(length):
    """At most half of the 10^length sequences are held out: the rest is what training draws from."""
    return DIGITS ** length // 2


def train(steps=300, length=6, batch_size=32, d_model=64, n_heads=4, n_layers=1, lr=3e-3, warmup=20, seed=0,
          device='cpu', held_out=frozenset(), log_every=None):
    """Train on fresh random batches that never contain a `held_out` sequence; returns (model, losses,
    the set of training sequences)."""
    mt.manual_seed(seed)
    rng = random.Random(seed)
    model = Transformer(DIGITS, DIGITS + 1, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                        max_len=length + 1, bos_id=BOS).to(device)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = optim.WarmupCosine(opt, warmup_steps=min(warmup, steps - 1), total_steps=steps)
    log_every = log_every or max(1, steps // 5)
    seen, losses = set(), []
    for step in range(1, steps + 1):
        batch = [draw(rng, length, held_out) for _ in range(batch_size)]
        seen.update(batch)
        src = mt.tensor(batch, device=device)
        tgt = mt.tensor([s[::-1] for s in batch], device=device)
        loss = seq2seq_loss(model(src, shift_right(tgt, BOS)), tgt)
        losses.append(check_loss(loss.item(), step, 'train_reverse', TRIES))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        schedule.step()
        if step % log_every == 0:
            print(_("step {step:4d}/{steps}  loss {loss:.4f}").format(step=step, steps=steps, loss=losses[-1]))
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


def run(steps=300, length=6, n_test=200, batch_size=32, d_model=64, n_heads=4, n_layers=1, lr=3e-3, warmup=20,
        seed=0, seeds=1, full=False, device='cpu'):
    """Hold out n_test sequences, train on the others, then test on the held-out ones (from `seeds` seeds:
    seed, seed + 1, ...; the printout is the first one's)."""
    if n_test > max_test_sequences(length):
        raise ValueError(f"train_reverse: {_too_many(n_test, length)}")
    seeds = FULL['seeds'] if full else seeds
    sizes = (steps, length, batch_size, d_model, n_heads, n_layers, lr, warmup)
    test = random_sequences(random.Random(seed + 1), n_test, length)
    model, losses, seen = train(*sizes, seed, device, held_out=frozenset(test))
    token_acc, seq_acc, by_position, predicted = evaluate(model, test)
    others = [held_out_accuracy(sizes, n_test, s, device) for s in range(seed + 1, seed + seeds)]
    print(table([_('steps'), _('mean loss')], window_means(losses, 8)))
    check_learned(losses, 'train_reverse', rose=TRIES, flat=(N_('more --steps'), N_('a higher --lr')))
    save_lines('train_reverse', {_('training loss'): losses}, _('step'), _('cross-entropy (nats)'),
               _('Reversing {length} digits').format(length=length))
    print("\n" + _("{n_test} test sequences of length {length}, held out of training (which saw {seen} distinct "
                   "ones of the {all:,}):").format(n_test=n_test, length=length, seen=len(seen), all=DIGITS ** length))
    print(_("token accuracy {token:.1f}% (chance 10%), whole sequences right {seq:.1f}%").format(
        token=100 * token_acc, seq=100 * seq_acc))
    runs = [(token_acc, seq_acc)] + others
    if seeds > 1:
        print(table([_('seed'), _('token accuracy'), _('whole sequences')],
                    [[seed + i, f"{100 * t:.1f}%", f"{100 * q:.1f}%"] for i, (t, q) in enumerate(runs)]))
    learned = sum(t >= LEARNED for t, _ in runs)
    figures = dict(token=claims.spread([t for t, _ in runs]), seq=claims.spread([q for _, q in runs]),
                   learned=learned, n=seeds, bar=LEARNED)
    look = N_('the line "token accuracy ..." (--full: the table "seed, token accuracy, whole sequences")')
    claims.record('architecture', '2.8', 'Encoder-Decoder Encoder 双向 + Decoder 单向 + Cross-Attention',
                  'holds' if learned == seeds else 'partly',
                  N_("transformer.Transformer (encoder, causal decoder, cross-attention) learns to reverse unseen "
                     "digit sequences: {token} of the tokens (at least {bar:.0%} in {learned} of {n} seeds)"), look,
                  seeds=claims.seeds_note(seeds), **figures)
    claims.record('deep_dive', '7.5', 'Decoder 的每个词用自己的 Q 去查询 Encoder 输出（X_2）的 K 和 V。这就是翻译的"对齐"',
                  'holds' if learned == seeds else 'partly',
                  N_("trained to reverse digits, the encoder-decoder gets {token} of held-out tokens ({seq} of whole "
                     "sequences) right, reading the source only through cross-attention (at least {bar:.0%} of the tokens "
                     "in {learned} of {n} seeds); `python -m demos attention_maps` shows that attention aligning "
                     "output t with source L-1-t"), look, seeds=claims.seeds_note(seeds), **figures)
    print(table([_('output position')] + [str(i + 1) for i in range(length)],
                [[_('accuracy')] + [f"{100 * a:.0f}%" for a in by_position]]))
    print("\n" + _("source        -> greedy decode (target)"))
    for src, pred in list(zip(test, predicted))[:6]:
        target = list(src[::-1])
        verdict = _('ok') if pred == target else '(' + ' '.join(map(str, target)) + ')'
        print(f"{' '.join(map(str, src))}  -> {' '.join(map(str, pred))}  {verdict}")
    return {'losses': losses, 'token_accuracy': token_acc, 'sequence_accuracy': seq_acc, 'by_position': by_position,
            'test': test, 'seen': seen, 'device': device}


def held_out_accuracy(sizes, n_test, seed, device='cpu'):
    """(token accuracy, sequence accuracy) on n_test held-out sequences after train(*sizes, seed), quietly."""
    test = random_sequences(random.Random(seed + 1), n_test, length=sizes[1])
    model, _, _ = train(*sizes, seed, device, held_out=frozenset(test), log_every=sizes[0] + 1)
    return evaluate(model, test)[:2]


def cost(steps=300, length=6, batch_size=32, d_model=64, n_heads=4, n_layers=1, n_test=200):
    """The budget.Cost of train() and evaluate(): the encoder and the decoder (with its cross-attention)
    over length + 1 positions, trained `steps` times; then n_test sequences decoded one token at a time."""
    sizes = dict(T=length + 1, d_model=d_model, n_layers=3 * n_layers, vocab=DIGITS + 1, heads=n_heads)
    return budget.transformer(batch_size, steps=steps, **sizes) + budget.transformer(n_test, steps=length, **sizes)


def _too_many(n_test, length):
    return _("--n-test {n_test} is too many for --length {length}: there are {all:,} digit sequences of that length "
             "and at most half ({most:,}) are held out for testing, so that training has the rest; lower --n-test or "
             "raise --length").format(n_test=n_test, length=length, all=DIGITS ** length,
                                      most=max_test_sequences(length))


def main(argv=None):
    options = options_of(run, steps=N_('training steps'), length=N_('digits per sequence'),
                         n_test=N_('held-out test sequences'), batch_size=N_('sequences per batch'),
                         d_model=N_('model width'), n_heads=N_('attention heads'),
                         n_layers=N_('encoder and decoder layers'), lr=N_('peak learning rate'),
                         warmup=(N_('learning-rate warmup steps (at most steps - 1)'), 0), seed=N_('random seed'),
                         seeds=N_('trainings (seed, seed + 1, ...) the verdict counts'), full=N_('5 seeds'))

    def check(args):
        if args.d_model % args.n_heads:
            return _("--n-heads {heads} must divide --d-model {d_model}").format(heads=args.n_heads,
                                                                                 d_model=args.d_model)
        sizes = {name: getattr(args, name) for name in ('steps', 'length', 'batch_size', 'd_model', 'n_heads',
                                                        'n_layers', 'n_test')}
        seeds = FULL['seeds'] if args.full else args.seeds
        too_much = budget.refuse({**{'--' + name.replace('_', '-'): value for name, value in sizes.items()},
                                  '--seeds': seeds}, seeds * cost(**sizes), args.device)   # first: 10 ** length takes long for a huge length
        return too_much or (_too_many(args.n_test, args.length) if args.n_test > max_test_sequences(args.length)
                            else None)
    return run_lesson(run, command_line('train_reverse', __doc__, options, argv, check=check))


if __name__ == '__main__':
    main()
