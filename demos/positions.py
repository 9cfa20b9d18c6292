"""Lesson: positions -- what attention cannot see, four ways to show it, and going past the training length.

The deep dive (§3).  3.1: "Attention(P X) = P Attention(X) where P is a
permutation matrix: self-attention is permutation-equivariant" -- 猫追狗 and 狗追猫 differ
only in the order of the rows.  3.3 gives three reasons for sin/cos:
  1. extrapolation: "given pos+100, even a position never seen in training, the same
     formula computes it ... a model trained on positions 0-511 can handle 512-1023
     (maybe slightly worse, but it will not fail completely)", whereas a learned table
     ("BERT's way") has no vector for an unseen position: "the model collapses";
  2. relative position: PE(pos + k) is a linear function of PE(pos) (sin(a + k) =
     sin a cos k + cos a sin k): a rotation by angles that depend on k alone;
  3. many scales: wavelength 2π at i = 0 ("positions 0 and 6 almost the same") up to
     10000·2π ≈ 62832 at i = d_model/2 - 1 ("not one period from 0 to 50000").
3.5 names the alternatives: learned, relative (Transformer-XL, T5: "encode the distance
between two words") and RoPE (q_i . k_j contains only j - i; "better extrapolation").

This lesson checks each statement on the library's modules, then trains the same tiny
GPT (1 layer, d_model = 32, 4 heads) with six kinds of position on a task where order
matters: the sequence mixes filler tokens with "key" tokens, and the answer at each
position is the most recent key so far (recency: which of the earlier keys is the latest).
It trains on sequences of length n = 16 and is tested on n, 2n and 4n.

    python -m demos.positions            # quick: 150 steps per model (about 10 s)
    python -m demos.positions --full     # 400 steps, batch 32, 3 seeds
"""
import math
import random

import microtensor as mt
from microtensor import i18n, optim
from microtensor.i18n import N_, _
from transformer import GPT, MultiHeadAttention, RotaryEmbedding, SinusoidalPositionalEncoding
from transformer.positional import relative_position_bucket

from . import budget, claims
from .figures import below
from .report import check_loss, command_line, options_of, run_lesson, save_lines, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '3.1'), ('deep_dive', '3.3'), ('deep_dive', '3.5'), ('attention', '2.5'), ('attention', '2.5.1'),
            ('architecture', '2.6'), ('architecture', '2.10.5')]

KINDS = ('none', 'sinusoidal', 'learned', 'rope', 'alibi', 'relative')
N_KEYS, VOCAB = 6, 16  # tokens 0-5 are keys, 6-15 fillers
FULL = dict(steps=400, batch_size=32, seeds=5)  # --full


# ---------------------------------------------------------------------------- 1. permutation equivariance
PERMUTATIONS = {N_('reversed'): [2, 1, 0], N_('first two swapped'): [1, 0, 2]}  # 猫吃鱼 -> 鱼吃猫, 吃猫鱼


def equivariance_gaps(d_model=16, n_heads=4, seed=0, device='cpu'):
    """{kind: {permutation: max |f(P X) - P f(X)|}} for one attention layer f with each kind of position,
    on 3 random rows (float64); 0 = equivariant."""
    mt.manual_seed(seed)  # weights and data drawn on the CPU and moved: the same numbers on every device
    X = mt.randn(1, 3, d_model, dtype='float64').to(device)
    pe = SinusoidalPositionalEncoding(d_model)
    gaps = {}
    for kind in ('none', 'sinusoidal', 'rope', 'alibi', 'relative'):
        mha = MultiHeadAttention(d_model, n_heads, rope=kind == 'rope', alibi=kind == 'alibi',
                                 relative=kind == 'relative').to(device, dtype='float64')
        if kind == 'relative':  # it starts at 0 (no preference, hence equivariant): give it a learned-looking bias
            mha.relative_bias.weight.data = mt.randn(*mha.relative_bias.weight.shape, dtype='float64').to(device).data
        f = (lambda x: mha(pe(x))) if kind == 'sinusoidal' else mha
        with mt.no_grad():
            gaps[kind] = {name: (f(X[:, perm]) - f(X)[:, perm]).abs().max().item()
                          for name, perm in PERMUTATIONS.items()}
    return gaps


# ---------------------------------------------------------------------------- 2. PE(pos + k) = PE(pos) M_k
def shift_matrix(k, d_model, base=10000.0, device='cpu'):
    """The (d_model, d_model) block-diagonal M_k with PE[pos + k] = PE[pos] @ M_k for every pos:
    per pair (sin a, cos a) -> (sin(a + w k), cos(a + w k)), w = base^(-2i/d_model)."""
    M = [[0.0] * d_model for _ in range(d_model)]
    for i in range(d_model // 2):
        angle = k * base ** (-2 * i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        # row vector [sin a, cos a] @ [[c, -s], [s, c]] = [sin a c + cos a s, -sin a s + cos a c]
        M[2 * i][2 * i], M[2 * i][2 * i + 1], M[2 * i + 1][2 * i], M[2 * i + 1][2 * i + 1] = c, -s, s, c
    return mt.tensor(M, dtype='float64', device=device)


def shift_errors(d_model=512, shifts=(1, 5, 50), positions=200, device='cpu'):
    """{k: max over pos < positions of |PE[pos + k] - PE[pos] @ M_k|}."""
    pe = SinusoidalPositionalEncoding(d_model).table(positions + max(shifts), dtype='float64', device=device)
    return {k: (pe[k:k + positions] - pe[:positions] @ shift_matrix(k, d_model, device=device)).abs().max().item()
            for k in shifts}


# ---------------------------------------------------------------------------- 3. RoPE: the offset alone
def rope_scores(d_k=16, offset=3, starts=(0, 10, 100, 1000), seed=0, device='cpu'):
    """q . k after RoPE, for the same q, k placed at positions (m, m + offset): one score per start m."""
    mt.manual_seed(seed)
    rope = RotaryEmbedding(d_k)
    q, k = (mt.randn(1, 1, 1, d_k, dtype='float64').to(device) for _ in range(2))
    return {m: (rope.rotate(q, m) * rope.rotate(k, m + offset)).sum().item() for m in starts}


# ---------------------------------------------------------------------------- 4. wavelengths
def wavelengths(d_model=512, base=10000.0):
    """Wavelength 2π base^(2i/d_model) of each pair i = 0 .. d_model/2 - 1, in positions."""
    return [2 * math.pi * base ** (2 * i / d_model) for i in range(d_model // 2)]


# ---------------------------------------------------------------------------- 5. extrapolation
def recency_batch(rng, B, T, p_key=0.3, device='cpu'):
    """(ids, targets) (B, T): random tokens, keys with probability p_key; targets[t] = the latest key at or
    before t (-1 before the first key: not scored)."""
    ids, targets = [], []
    for _ in range(B):
        seq, answer, last = [], [], -1
        for _ in range(T):
            token = rng.randrange(N_KEYS) if rng.random() < p_key else rng.randrange(N_KEYS, VOCAB)
            last = token if token < N_KEYS else last
            seq.append(token)
            answer.append(last)
        ids.append(seq)
        targets.append(answer)
    return mt.tensor(ids, device=device), mt.tensor(targets, device=device)


def make_model(kind, max_len, seed=0, device='cpu'):
    mt.manual_seed(seed)
    options = dict(positional='none', relative=True) if kind == 'relative' else dict(positional=kind)
    return GPT(VOCAB, d_model=32, n_layers=1, n_heads=4, max_len=max_len, init_std=0.1, **options).to(device)


def train_recency(kind, N=16, steps=150, B=16, lr=3e-3, seed=0, device='cpu'):
    model = make_model(kind, N, seed, device)
    opt = optim.Adam(model.parameters(), lr=lr)
    rng = random.Random(seed)
    for _ in range(steps):
        ids, targets = recency_batch(rng, B, N, device=device)
        loss = mt.cross_entropy(model(ids), targets, ignore_index=-1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, check_loss(loss.item(), steps, 'positions')  # the only loss read back: the last


def accuracy_by_position(model, T, n=64, seed=1, device='cpu'):
    """Accuracy at each position 0 .. T-1 over n test sequences (None where no position was scored),
    and overall; None, None when the model cannot take length T (a learned table)."""
    ids, targets = recency_batch(random.Random(seed), n, T, device=device)
    try:
        with mt.no_grad():
            predicted = model(ids).argmax(dim=-1)
    except ValueError:  # LearnedPositionalEmbedding: no row for positions >= max_len
        return None, None
    scored = targets >= 0
    hits = ((predicted == targets) & scored).astype('float64')
    per_position = [h / s if s else None for h, s in zip(hits.sum(axis=0).tolist(), scored.sum(axis=0).tolist())]
    return per_position, hits.sum().item() / scored.sum().item()


def extrapolation(N=16, steps=150, B=16, seeds=1, kinds=KINDS, device='cpu'):
    """{kind: {'acc': {T: mean accuracy or None}, 'per_position': at 4N (seed 0), 'loss': final training loss,
    'device': where the model trained}}."""
    out = {}
    for kind in kinds:
        accs, losses, per_position = {T: [] for T in (N, 2 * N, 4 * N)}, [], None
        for seed in range(seeds):
            model, loss = train_recency(kind, N, steps, B, seed=seed, device=device)
            losses.append(loss)
            for T in accs:
                positions, acc = accuracy_by_position(model, T, device=device)
                accs[T].append(acc)
                if T == 4 * N and seed == 0:
                    per_position = positions
        out[kind] = {'acc': {T: None if None in a else sum(a) / len(a) for T, a in accs.items()},
                     'accs': accs, 'per_position': per_position, 'loss': sum(losses) / len(losses),
                     'device': model.parameters()[0].device}
    return out


def _pct(value):
    return _('cannot run') if value is None else f"{100 * value:.1f}%"


def run(train_len=16, steps=150, batch_size=16, seeds=1, full=False, device='cpu'):
    if full:
        steps, batch_size, seeds = FULL['steps'], FULL['batch_size'], FULL['seeds']
    N = train_len
    gaps = equivariance_gaps(device=device)
    print(_("1. The deep dive's 'Attention(P·X) = P·Attention(X)' (§3.1).  Permutations of 3 input rows X\n"
            "   (猫吃鱼 -> 鱼吃猫, 吃猫鱼); max |f(P X) - P f(X)| for one attention layer f (float64)"))
    print(table([_('positions')] + [_(name) for name in PERMUTATIONS],
                [[k] + [f"{below(v, 1e-12)} " + _('equivariant') if v < 1e-9 else f"{v:.1e}" for v in g.values()]
                 for k, g in gaps.items()]))
    print(_("Without positions reordering the words only reorders the outputs.  Bidirectional ALiBi's bias\n"
            "-m|i - j| is the same read backwards, so it cannot tell 猫吃鱼 from its reversal 鱼吃猫 (with a\n"
            "causal mask, as in GPT, it can); any other reordering changes its output."))
    none, moved = gaps['none']['reversed'], min(v for k, g in gaps.items() if k != 'none' for v in g.values()
                                                 if v > 1e-9)
    look = N_('part 1: the table "positions, reversed, first two swapped", row "none"')
    alibi_blind = gaps.get('alibi', {}).get('reversed', 1) < 1e-9
    permuted = (  # with and without ALiBi's exception, each a whole sentence to translate
        N_("without positions the reversed sentence gives the same output vectors in the reversed order (max "
           "|f(P X) - P f(X)| {none}): each word's output is the same, the sequence of outputs is permuted, "
           "not identical; any positional scheme changes them (by {moved:.0e} or more; bidirectional ALiBi not for "
           "a reversal)") if alibi_blind else
        N_("without positions the reversed sentence gives the same output vectors in the reversed order (max "
           "|f(P X) - P f(X)| {none}): each word's output is the same, the sequence of outputs is permuted, "
           "not identical; any positional scheme changes them (by {moved:.0e} or more)"))
    claims.record('attention', '2.5', '“我爱中国"和"中国爱我"的 Attention 计算结果一样！', 'partly', permuted, look,
                  none=below(none, 1e-12), moved=moved)
    claims.record('architecture', '2.6', '「我打你」和「你打我」对 Attention 来说可能得到一样的结果', 'partly', permuted, look,
                  none=below(none, 1e-12), moved=moved)
    claims.record('architecture', '2.10.5', 'Self-Attention 本身对顺序不敏感', 'partly', permuted, look,
                  none=below(none, 1e-12), moved=moved)
    claims.record('deep_dive', '3.1', '自注意力是置换等变的', 'holds',
                  N_("max |f(PX) - P f(X)| {none} without positions (float64); every positional scheme breaks "
                     "it ({moved:.0e} or more); bidirectional ALiBi not for a reversal") if alibi_blind else
                  N_("max |f(PX) - P f(X)| {none} without positions (float64); every positional scheme breaks "
                     "it ({moved:.0e} or more)"), look, none=below(none, 1e-12), moved=moved)

    errors = shift_errors(device=device)
    print(_("\n2. Relative position, the deep dive's second reason (§3.3).  PE[pos + k] = PE[pos] @ M_k, M_k\n"
            "   block-diagonal 2x2 rotations by k w_i (k alone), d_model = 512, pos 0..199:"))
    print(table(['k', 'max |PE[pos+k] - PE[pos] M_k|'], [[k, below(e, 1e-12)] for k, e in errors.items()]))
    block = [[round(v, 4) for v in row[:2]] for row in shift_matrix(1, 512)[:2].tolist()]
    print(_("M_1's first block: {block} = [[cos 1, -sin 1], [sin 1, cos 1]]").format(block=block))
    claims.record('deep_dive', '3.3', '可以通过 PE_pos 的线性变换得到 PE_pos+k', 'holds',
                  N_("PE[pos + k] = PE[pos] M_k with M_k a block of 2x2 rotations (largest difference {err}) for "
                     "k = {ks}"),
                  N_('part 2: the table "k, max |PE[pos+k] - PE[pos] M_k|"'), err=below(max(errors.values()), 1e-12),
                  ks=', '.join(map(str, errors)))

    scores = rope_scores(device=device)
    print(_("\n3. RoPE (the deep dive §3.5): the same q and k placed at positions m and m + 3:"))
    print(table(['m', 'm + 3', 'q_m . k_(m+3)'], [[m, m + 3, f"{s:.10f}"] for m, s in scores.items()]))
    spread = max(scores.values()) - min(scores.values())
    print(_("spread {spread}: the score depends on the offset only.").format(spread=below(spread, 1e-12)))
    claims.record('deep_dive', '3.5', '将位置信息通过一个旋转矩阵"旋入"Q 和 K 的计算中——不是"加"到 Embedding 上，而是直接修改 QK^T 的计算', 'holds',
                  N_("the score of the same q, k at positions m and m + 3 is the same for m = {first} … {last} (spread "
                     "{spread})"), N_('part 3: the table "m, m + 3, q_m . k_(m+3)"'), first=min(scores), last=max(scores),
                  spread=below(spread, 1e-12))

    lam = wavelengths()
    print(_("\n4. Many scales, the deep dive's third reason (§3.3).  Sinusoidal wavelengths, d_model = 512:\n"
            "   pair i (dims 2i, 2i+1) repeats every 2π 10000^(2i/512) positions"))
    print(table(['i', _('dims'), _('wavelength')], [[i, f"{2 * i},{2 * i + 1}", lam[i]] for i in (0, 1, 16, 64, 128, 255)]))
    pe = SinusoidalPositionalEncoding(512).table(7, dtype='float64', device=device).tolist()
    print(_("The deep dive (§3.3): 2π = {two_pi:.2f} to 10000·2π = {longest:.0f}.  The last pair is i = 255, "
            "whose wavelength is 2π 10000^(510/512) = {last:.0f}\n(10000·2π would need i = d_model/2); "
            "either way position 50000 is less than one period.  Pair 0 at positions 0 and 6: "
            "({a:.2f}, {b:.2f}) vs ({c:.2f}, {d:.2f}), near as the article says.\n"
            "{long} of the 256 pairs have a wavelength beyond 512 positions: within a "
            "512-token sentence they never repeat, so together they pin the position down.").format(
        two_pi=2 * math.pi, longest=20000 * math.pi, last=lam[-1], a=pe[0][0], b=pe[0][1], c=pe[6][0], d=pe[6][1],
        long=sum(w > 512 for w in lam)))
    claims.record('deep_dive', '3.3', 'i = d_model/2 - 1（高维度）：波长 = 10000·2π ≈ 62832', 'partly',
                  N_("the last pair's wavelength is 2π·10000^(510/512) = {last:.0f} (10000·2π would need i = "
                     "d_model/2); position 50000 is less than one period either way"),
                  N_('part 4: the table "i, dims, wavelength"'),
                  last=lam[-1])

    print(_("\n5. Extrapolation (the deep dive §3.3's first reason; the attention article's table, §2.5.1):"))
    print(_("   trained on sequences of length n = {N} ({steps} steps, batch {batch}, {seeds}), tested on n = {N}, "
            "{two}, {four}").format(N=N, steps=steps, batch=batch_size, two=2 * N, four=4 * N,
                                    seeds=(_("{n} seed") if seeds == 1 else _("{n} seeds")).format(n=seeds)))
    results = extrapolation(N, steps, batch_size, seeds, device=device)
    accuracy_at = _('acc, n = {n}')
    print(table([_('positions'), _('train loss')] + [accuracy_at.format(n=T) for T in (N, 2 * N, 4 * N)],
                [[k, r['loss'], *(_pct(r['acc'][T]) for T in (N, 2 * N, 4 * N))] for k, r in results.items()]))
    seen = sorted({relative_position_bucket(-d) for d in range(N)})
    used = sorted({relative_position_bucket(-d) for d in range(4 * N)})
    print(_("chance: {chance:.0f}% (one of {keys} keys).  'learned' has no row past position {last}: "
            "it cannot even run on longer inputs.\n"
            "'relative' (T5 buckets: 32, max distance 128) saw buckets {first_seen}..{last_seen} in training; at length "
            "{four} the distances use buckets up to {last_used}, and the unseen ones {unseen} "
            "still hold their initial bias 0.\n(T5 trains on 512 tokens, so every bucket up to distance 128 is "
            "learned; here the training length is what limits it.)").format(
        chance=100 / N_KEYS, keys=N_KEYS, last=N - 1, first_seen=seen[0], last_seen=seen[-1], four=4 * N,
        last_used=used[-1], unseen=sorted(set(used) - set(seen))))
    best = max((k for k in results if results[k]['acc'][4 * N] is not None), key=lambda k: results[k]['acc'][4 * N])
    if best == 'alibi':
        print(_("ALiBi holds best at {four} tokens ({alibi}), although the attention "
                "article's table (§2.5.1) gives\nits weakness as '长序列性能下降' (worse on long sequences).  ALiBi was "
                "made for this (Press et al., 'Train Short, Test\nLong'), and a task that needs only the latest key "
                "suits its bias toward nearby tokens; what it cannot do\nwell is attend far back, which this task "
                "never asks for.  So here the article's claim does not hold.").format(
            four=4 * N, alibi=_pct(results['alibi']['acc'][4 * N])))
    else:
        print(_("At {four} tokens {best} holds best ({accuracy}); ALiBi: {alibi} (the attention article, §2.5.1: "
                "'长序列性能下降').").format(four=4 * N, best=best, accuracy=_pct(results[best]['acc'][4 * N]),
                                          alibi=_pct(results['alibi']['acc'][4 * N])))
    save_lines('positions_extrapolation',
               {k: [math.nan if a is None else a for a in r['per_position']] for k, r in results.items()
                if r['per_position'] is not None},
               _('position in a test sequence of length {T}').format(T=4 * N), _('accuracy'),
               _('Trained on length {N} (positions 0..{last}), tested on length {T}').format(N=N, last=N - 1, T=4 * N),
               x=list(range(4 * N)), logy=False, mark=(N - 0.5, _('the training length, {N}').format(N=N)))
    acc = {k: {T: claims.spread(a) if None not in a else None for T, a in r['accs'].items()} for k, r in results.items()}
    rope_better = all(results['rope']['acc'][T] > results['sinusoidal']['acc'][T] for T in (2 * N, 4 * N))
    seeds_note, look = claims.seeds_note(seeds), N_('part 5: the table "positions, train loss, acc, n = ..."')
    claims.record('attention', '2.5.1', '可学习 2018 PE = Embedding(pos) 简单有效 不可外推', 'holds',
                  N_("the learned table cannot even run past position {last}"), look, last=N - 1)
    claims.record('attention', '2.5.1', 'ALiBi 2021 线性偏置 无需位置编码 长序列性能下降', 'not tested by this task',
                  N_("trained on length {N} and tested on {far}, ALiBi scores {alibi} (RoPE {rope}, sinusoidal {sin}): "
                     "it holds best here, but the task needs only the latest key, which suits ALiBi's recency bias, so "
                     "it does not ask for what the article says degrades; what would test it is a task that must "
                     "attend far back in sequences longer than the training ones (recall the first token at length "
                     "{far})") if best == 'alibi' else
                  N_("trained on length {N} and tested on {far}, ALiBi scores {alibi} (RoPE {rope}, sinusoidal {sin}): "
                     "it holds behind {best} here, but the task needs only the latest key, which suits ALiBi's recency "
                     "bias, so it does not ask for what the article says degrades; what would test it is a task that "
                     "must attend far back in sequences longer than the training ones (recall the first token at "
                     "length {far})"),
                  look, seeds=seeds_note, N=N, far=4 * N, alibi=acc['alibi'][4 * N], rope=acc['rope'][4 * N],
                  sin=acc['sinusoidal'][4 * N], best=best)
    claims.record('deep_dive', '3.3', '训练时见过 0-511 的位置，推理时可以处理 512-1023 的位置（虽然效果可能略差，但不会完全失效）',
                  'partly', N_("trained on length {N}, sinusoidal positions fall from {a} to {b} at {two} and {c} at "
                               "{four}, which is what no positions at all score ({none}): it runs, but what it learned "
                               "of positions is gone"), look, seeds=seeds_note, N=N, two=2 * N, four=4 * N, a=acc['sinusoidal'][N],
                  b=acc['sinusoidal'][2 * N], c=acc['sinusoidal'][4 * N], none=acc['none'][4 * N])
    claims.record('deep_dive', '3.5', 'RoPE…数学上更优雅，外推能力更好', 'holds' if rope_better else 'partly',
                  N_("trained on length {N}, RoPE scores {rope2} at {two} and {rope4} at {four}, sinusoidal {sin2} "
                     "and {sin4}"), look, seeds=seeds_note, N=N, two=2 * N, four=4 * N, rope2=acc['rope'][2 * N],
                  rope4=acc['rope'][4 * N], sin2=acc['sinusoidal'][2 * N], sin4=acc['sinusoidal'][4 * N])
    claims.record('deep_dive', '3.3', '如果推理时遇到了位置 1024，那个位置的向量从未被训练过，模型会崩溃', 'holds',
                  N_("learned positions cannot run past their table (position {last})"), look, last=N - 1)
    return {'gaps': gaps, 'shift_errors': errors, 'rope_scores': scores, 'wavelengths': lam, 'extrapolation': results,
            'N': N, 'unseen_buckets': sorted(set(used) - set(seen)), 'device': results['none']['device']}


def main(argv=None):
    options = options_of(run, train_len=(N_('training length n (tested at n, 2n and 4n)'), 2),
                         steps=N_('Adam steps per model'), batch_size=N_('sequences per batch'),
                         seeds=N_('seeds per kind of position'), full=N_('400 steps, batch 32, 5 seeds (a few minutes)'))
    return run_lesson(run, command_line('positions', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    N, steps, B = a['train_len'], a['steps'], a['batch_size']
    one = (budget.transformer(B, N, d_model=32, n_layers=1, vocab=VOCAB, steps=steps)     # training at N
           + budget.transformer(64, 4 * N, d_model=32, n_layers=1, vocab=VOCAB))          # tested up to 4N
    return budget.refuse({'--train-len': N, '--steps': steps, '--batch-size': B, '--seeds': a['seeds']},
                         len(KINDS) * a['seeds'] * one, args.device)


if __name__ == '__main__':
    main()
