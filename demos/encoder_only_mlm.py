"""Lesson: an encoder-only (BERT-style) model learns by masked-language modelling.

The architecture article: Encoder-only models are "bidirectional, no mask", pre-trained
with "MLM", for "understanding tasks: classification, NER, semantic similarity"; and
"MLM: in each sample only 15% of the positions produce a training signal, CLM every
position; and MLM brings a train/inference mismatch (the [MASK] token at training, none
at inference)".  BERT's recipe against that mismatch (transformer/mlm.py): of the chosen
15%, 80% become [MASK], 10% a random token, 10% stay as they are.

The task: each sequence is 8 random digits written twice (3 1 4 1 5 9 2 6 3 1 4 1 5 9 2 6),
so a hidden digit can be read off its partner 8 positions away -- if the partner was not
hidden too.  transformer.EncoderOnly (2 layers, d_model = 32, learned positions) sees the
corrupted sequence and predicts every position; the loss and the accuracy count the chosen
positions only.  Chance: 10%.

    python -m demos.encoder_only_mlm                 # 300 steps (run time: end of --help)
    python -m demos.encoder_only_mlm --steps 1000
    python -m demos.encoder_only_mlm --full          # the training from 5 seeds
"""
import random

import microtensor as mt
from microtensor import optim
from microtensor.i18n import N_, _
from transformer import EncoderOnly, causal_mask, next_token_loss, scaled_dot_product_attention
from transformer.mlm import IGNORE, masked_accuracy, mlm_loss, mlm_mask

from . import budget, claims
from .copy_task import copy_batch
from .report import check_learned, check_loss, command_line, options_of, run_lesson, save_lines, table, window_means

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('architecture', '2.8'), ('architecture', '2.9.2')]

DIGITS, MASK = 10, 10   # tokens 0-9, then [MASK]
HALF = 8
FULL = dict(seeds=5)  # --full


def corruption_shares(ids, inputs, labels):
    """What mlm_mask did: the chosen share of all positions, and of the chosen the [MASK], random and kept shares
    (a random draw that hit the original token counts as kept)."""
    chosen = labels != IGNORE
    n = chosen.sum().item()
    masked = ((inputs == MASK) & chosen).sum().item()
    kept = ((inputs == ids) & chosen).sum().item()
    return {'chosen': n / ids.numel(), 'mask': masked / n, 'random': (n - masked - kept) / n, 'kept': kept / n}


def recoverable(ids, inputs, labels):
    """The share of chosen positions whose partner (8 positions away) still shows the right digit."""
    partner = mt.concatenate([inputs[:, HALF:], inputs[:, :HALF]], axis=1)
    chosen = labels != IGNORE
    return ((partner == ids) & chosen).sum().item() / chosen.sum().item()


def accuracy_by_kind(logits, ids, inputs, labels):
    """masked_accuracy over all chosen positions; over those shown as [MASK], a random token, or kept; and over
    those in the first half (their partner comes after them) and in the second (it came before)."""
    first_half = mt.arange(2 * HALF, device=ids.device).reshape(1, 2 * HALF) < HALF
    out = {}
    for kind, where in (('all', labels != IGNORE), ('mask', inputs == MASK),
                        ('random', (inputs != MASK) & (inputs != ids)), ('kept', inputs == ids),
                        ('first half', first_half), ('second half', ~first_half)):
        selected = mt.where(where, labels, IGNORE)
        out[kind] = masked_accuracy(logits, selected) if (selected != IGNORE).any() else None
    return out


def train(steps=300, B=32, lr=3e-3, seed=0, device='cpu'):
    mt.manual_seed(seed)
    rng = random.Random(seed)
    model = EncoderOnly(DIGITS + 1, d_model=32, n_layers=2, n_heads=4, max_len=2 * HALF, init_std=0.1).to(device)
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(1, steps + 1):
        inputs, labels = mlm_mask(copy_batch(rng, B, HALF, device, DIGITS), MASK, DIGITS)
        loss = mlm_loss(model.masked_token_logits(inputs), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(check_loss(loss.item(), step, 'encoder_only_mlm'))
    return model, losses


def masked_weights_above_diagonal(n, seed=0, device='cpu'):
    """{'causal': the largest weight above the diagonal with causal_mask, 'none': the smallest without a mask}."""
    mt.manual_seed(seed)
    q, k, v = (mt.randn(1, n, 8).to(device) for _ in range(3))
    above = [[j > i for j in range(n)] for i in range(n)]
    out = {}
    for name, mask in (('causal', causal_mask(n, device=device)), ('none', None)):
        _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        values = [weights[0, i, j].item() for i in range(n) for j in range(n) if above[i][j]]
        out[name] = max(values) if name == 'causal' else min(values)
    return out


def signal_shares(ids, labels):
    """{'MLM': share, 'CLM': share} of the positions whose logits receive a gradient from each loss (measured by
    backward through random logits)."""
    shares = {}
    for name in ('MLM', 'CLM'):
        logits = mt.randn(*ids.shape, DIGITS + 1).to(ids.device).requires_grad_()
        (mlm_loss(logits, labels) if name == 'MLM' else next_token_loss(logits, ids)).backward()
        shares[name] = (logits.grad.abs().sum(axis=-1) > 0).astype('float32').mean().item()
    return shares


def test_batch(n_test, seed, device='cpu'):
    """(ids, inputs, labels): n_test sequences the model has not trained on, corrupted by mlm_mask."""
    mt.manual_seed(seed + 1)
    ids = copy_batch(random.Random(seed + 1), n_test, HALF, device, DIGITS)
    return (ids, *mlm_mask(ids, MASK, DIGITS))


def score(model, ids, inputs, labels):
    """(accuracy_by_kind, the share of chosen positions whose partner shows their digit, the best possible accuracy)."""
    with mt.no_grad():
        logits = model.masked_token_logits(inputs)
    ceiling = recoverable(ids, inputs, labels)
    return accuracy_by_kind(logits, ids, inputs, labels), ceiling, ceiling + (1 - ceiling) / DIGITS


def run(steps=300, batch_size=32, n_test=500, seed=0, seeds=1, full=False, device='cpu'):
    seeds = FULL['seeds'] if full else seeds
    model, losses = train(steps, batch_size, seed=seed, device=device)
    ids, inputs, labels = test_batch(n_test, seed, device)
    shares = corruption_shares(ids, inputs, labels)
    print(_("The architecture article's 'MLM 每个样本只有 15% 的位置产生训练信号' (§2.9.2).  BERT's corruption, measured "
            "on {n_test} test\nsequences of {digits} digits:").format(n_test=n_test, digits=2 * HALF))
    print(table([_('chosen of all positions'), '[MASK]', _('random token'), _('kept')],
                [[f"{100 * shares['chosen']:.1f}%"] + [f"{100 * shares[k]:.1f}%" for k in ('mask', 'random', 'kept')]]))
    print(_("(target 15%; of those 80 / 10 / 10, a random token equal to the original counting as kept)"))
    signal = signal_shares(ids, labels)
    print(_("Positions whose logits get a gradient from the loss, on the same batch: MLM {mlm:.1%}, "
            "CLM (next_token_loss) {clm:.1%} (every position but the last, {shown} of {n})").format(
        mlm=signal['MLM'], clm=signal['CLM'], shown=2 * HALF - 1, n=2 * HALF))
    claims.record('architecture', '2.9.2', 'MLM 每个样本只有 15% 的位置产生训练信号，CLM 是每个位置都产生信号', 'holds',
                  N_("{mlm:.1%} of the positions get a gradient from the MLM loss (chosen {chosen:.1%}; of those "
                     "{mask:.1%} become [MASK], {random:.1%} a random token, {kept:.1%} stay: BERT's 80/10/10), {clm:.1%} "
                     "from the CLM loss (every position but the last of {n})"),
                  N_('the corruption table and the line "Positions whose logits get a gradient"'), mlm=signal['MLM'],
                  clm=signal['CLM'], n=2 * HALF, **shares)

    print(_("\nEncoderOnly trained {steps} steps, batch {batch_size}:").format(steps=steps, batch_size=batch_size))
    print(table([_('steps'), _('MLM loss')], window_means(losses, 6)))
    check_learned(losses, 'encoder_only_mlm', rose=(N_('another --seed'),),
                  flat=(N_('more --steps'), N_('a larger --batch-size')))
    acc, ceiling, best = score(model, ids, inputs, labels)
    print(table([_('chosen positions'), _('accuracy')],
                [[_(k), '-' if v is None else f"{100 * v:.1f}%"] for k, v in
                 ((N_('all'), acc['all']), (N_('shown as [MASK]'), acc['mask']),
                  (N_('shown as a random token'), acc['random']), (N_('shown as themselves (kept)'), acc['kept']),
                  (N_('first half: partner to the right'), acc['first half']),
                  (N_('second half: partner to the left'), acc['second half']))]))
    print(_("Chance is 10%.  {ceiling:.1f}% of the chosen positions have a partner that still shows their digit; "
            "the rest can only be\nguessed, so the best possible is about {best:.1f}%.  The first half reads "
            "its answer from the right: a causal (GPT)\nmodel could not, the encoder attends in both directions.").format(
        ceiling=100 * ceiling, best=100 * best))
    above = masked_weights_above_diagonal(2 * HALF, seed, ids.device)
    print(_("Attention weights above the diagonal (future keys) of random q, k over {n} tokens: causal mask "
            "(decoder-only) largest {causal:.1f}, no mask (this encoder) smallest {none:.2g}").format(
        n=2 * HALF, causal=above['causal'], none=above['none']))
    claims.record('architecture', '2.8', '因果掩码的实现很简单：在 softmax 之前把注意力分数矩阵的上三角置为负无穷，这样每个位置对未来位置的注意力权重就变成 0。',
                  'holds', N_("with transformer.causal_mask every weight above the diagonal is exactly {causal:.1f} "
                              "(the largest of {n} x {n}); without a mask, as in this encoder, the smallest is {none:.2g}"),
                  N_('the line "Attention weights above the diagonal"'), causal=above['causal'], none=above['none'],
                  n=2 * HALF)
    runs = [(acc, best)] + [score(train(steps, batch_size, seed=s, device=device)[0], *test_batch(n_test, s, device))[::2]
                            for s in range(seed + 1, seed + seeds)]
    if seeds > 1:
        print(table([_('seed'), _('all chosen'), _('first half'), _('best possible')],
                    [[seed + i, f"{a['all']:.1%}", f"{a['first half']:.1%}", f"{b:.1%}"] for i, (a, b) in enumerate(runs)]))
    reads = sum(a['first half'] > 0.5 for a, _ in runs)
    claims.record('architecture', '2.8', 'Encoder-only 双向，无遮蔽 MLM … Decoder-only 因果掩码，只看前面 CLM',
                  'holds' if reads == seeds else 'partly',
                  N_("the encoder-only model fills masked digits ({all} of the chosen positions, best possible about "
                     "{best}), {first} in the first half, whose partner is to the right: a causal model could not "
                     "read it (above 50% there in {reads} of {n} seeds); train_gpt (decoder-only, CLM) and "
                     "train_reverse (encoder-decoder, cross-attention) train the other two"),
                  N_('the table "chosen positions, accuracy" (--full: "seed, all chosen, first half, best possible")'),
                  seeds=claims.seeds_note(seeds), all=claims.spread([a['all'] for a, _ in runs]),
                  best=claims.spread([b for _, b in runs]), first=claims.spread([a['first half'] for a, _ in runs]),
                  reads=reads, n=seeds)
    save_lines('encoder_only_mlm', {_('MLM loss'): losses}, _('step'), _('cross-entropy on the chosen positions'),
               _('Encoder-only model, masked-language modelling'))
    return {'losses': losses, 'shares': shares, 'accuracy': acc, 'recoverable': ceiling, 'best': best,
            'device': ids.device}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps'), batch_size=N_('sequences per batch'),
                         n_test=(N_('test sequences (16 digits each) the accuracy is measured on'), 10),
                         seed=N_('random seed'), seeds=N_('trainings (seed, seed + 1, ...) the verdict counts'),
                         full=N_('5 seeds'))
    return run_lesson(run, command_line('encoder_only_mlm', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    sizes = dict(T=2 * HALF, d_model=32, n_layers=2, vocab=DIGITS + 1)
    seeds = FULL['seeds'] if args.full else args.seeds
    cost = seeds * (budget.transformer(args.batch_size, steps=args.steps, **sizes) + budget.transformer(args.n_test, **sizes))
    return budget.refuse({'--steps': args.steps, '--batch-size': args.batch_size, '--n-test': args.n_test,
                          '--seeds': seeds}, cost, args.device)


if __name__ == '__main__':
    main()
