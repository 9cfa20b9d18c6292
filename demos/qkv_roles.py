"""Lesson: the three roles Q, K, V -- what goes wrong without projections, with K = V, and why not a fourth.

1. No projections (the architecture article, §2.3.2): "if Q/K/V all simply equal X, with no
   transformation, the model cannot learn 'from which angle to ask', 'which label to match',
   'what content to return'".  With Q = K = V = X the scores S = X X^T / sqrt(d) are
   symmetric, and the diagonal S_ii = |x_i|^2 / sqrt(d) is the largest entry of its row
   whenever the rows have equal length (Cauchy-Schwarz: x_i . x_j <= |x_i| |x_j|), so every
   word looks mostly at itself.  Shown on the deep dive's 猫 吃 鱼 X0, and on a task that
   needs the previous token (the why_separate_qk lesson's "copy the previous token").
2. Why K != V (the attention article, §2.2.3): "it may find animal by matching its part of
   speech (Key), but what it needs is animal's meaning (Value)".  A lookup task says exactly
   that: each position carries an address and a content (two random vectors added), the
   last position asks for an address, and the answer is the content stored there.  One head,
   trained with W_V separate from W_K and with W_V = W_K, at several d_k.  (Here d_k is the
   head's width; the projections map the 32-d input to d_k.)
3. Why three, not five (§2.2.4): "a fourth vector can be written as a linear combination of
   the first three: U = a Q + b K + c V".  Measured: the best a, b, c for a random fourth
   projection W_U.  What does hold: Q and K enter only through Q K^T, so a fifth matrix
   in the same role merges into them (Q K_1^T + Q K_2^T = Q (K_1 + K_2)^T), and W_Q, W_K
   are not even unique (scale column i of W_Q by s_i and of W_K by 1/s_i: the same scores).
4. MLA (§2.2.4): "compress K/V into a latent space ... but Q stays full (Q 保持完整)".
   DeepSeek-V2 compresses the queries as well, to a latent of d_c' = 1536 (the queries are
   never cached, so this does not change the KV cache).  transformer.MultiHeadLatentAttention
   has it as d_cq; counted here from the module.
5. The 'it' table (§2.1.3): it's weights over "The animal didn't cross the street because
   it was too tired", their sum, the score gaps they imply, and how they fit the heat map
   of §2.6.

    python -m demos.qkv_roles            # the defaults (run time: end of --help)
    python -m demos.qkv_roles --full     # longer training, three seeds for the lookup
"""
import math
import random

import microtensor as mt
from microtensor import nn
from microtensor.i18n import N_, _
from transformer import KVCache, MultiHeadAttention, Projection, causal_mask, scaled_dot_product_attention
from transformer import article_data as article
from transformer.mla import MultiHeadLatentAttention

from . import article_trace, toy_training, why_separate_qk
from . import budget, claims
from .articles import cite
from .figures import below, series
from .report import command_line, options_of, run_lesson, table
from .toy_training import accuracy, fit, tail_mean

SECTIONS = [('architecture', '2.3.2'), ('attention', '2.1.3'), ('attention', '2.2.3'),
            ('attention', '2.2.4'), ('attention', '2.6')]


# ---------------------------------------------------------------------------- 1. no projections
class NoProjections(nn.Module):
    """softmax(X X^T / sqrt(d)) X: attention with Q = K = V = X (nothing to learn).  last_weights as in MHA."""

    def forward(self, x):
        out, self.last_weights = scaled_dot_product_attention(x, x, x)
        return out


def self_attention_of_x0(device='cpu'):
    """The deep dive's 猫 吃 鱼 X0 (3, 12) with Q = K = V = X0: (S, A) as lists."""
    X = mt.tensor(article_trace.x0(device=device), dtype='float64', device=device)
    S = X @ X.T / math.sqrt(X.shape[-1])
    return S.tolist(), S.softmax(axis=-1).tolist()


def diagonal_share(n=8, d=64, samples=200, seed=0, device='cpu'):
    """Over random X (n, d) with rows of equal length: the fraction of rows whose largest weight is the diagonal,
    and the mean weight on the diagonal, for Q = K = V = X."""
    mt.manual_seed(seed)
    X = mt.randn(samples, n, d, dtype='float64').to(device)
    X = X / (X * X).sum(axis=-1, keepdims=True).sqrt() * math.sqrt(d)     # |x_i| = sqrt(d) for every row
    attention = NoProjections()
    attention(X)
    A = attention.last_weights                                            # (samples, n, n)
    eye = mt.eye(n, dtype='float64', device=device)
    on_diagonal = (A * eye).sum(axis=-1)                                  # (samples, n)
    is_max = (A.argmax(dim=-1) == mt.arange(n, device=device)).astype('float64')
    return is_max.mean().item(), on_diagonal.mean().item()


def copy_previous(projections, steps, n=8, d_model=32, B=32, seed=0, device='cpu'):
    """Train why_separate_qk's CopyPrevious (position t outputs token t-1, one attention layer, no residual)
    with or without W_Q, W_K, W_V; returns {'losses', 'accuracy', 'back': mean weight on t-1, 'itself': on t,
    'model', 'scores': the test batch's scaled scores}."""
    mt.manual_seed(seed)
    model = why_separate_qk.CopyPrevious(n=n, d_model=d_model).to(device)
    if not projections:
        model.attention = NoProjections()
    losses, acc = toy_training.copy_previous(model, steps, 'qkv_roles', n, B, seed=seed, device=device)
    A = model.attention.last_weights.reshape(-1, n, n).mean(axis=0)        # (n, n), over batch (and head)
    back = sum(A[t, t - 1].item() for t in range(1, n)) / (n - 1)
    itself = sum(A[t, t].item() for t in range(1, n)) / (n - 1)
    return {'losses': losses, 'accuracy': acc, 'back': back, 'itself': itself, 'model': model,
            'scores': getattr(model.attention, 'last_scores', None)}


# ---------------------------------------------------------------------------- 2. K != V: a lookup
class Lookup(nn.Module):
    """One head reads a table: position j holds address a_j and content c_j as x_j = E_a[a_j] + E_c[c_j]
    (fixed random vectors, d_in each), the last position holds the asked address and a 'no content' vector;
    logits = Linear(attention output at the last position).  tie_kv=True uses one matrix for W_K and W_V;
    scale: as in scaled_dot_product_attention (None: 1/sqrt(d_k))."""

    def __init__(self, m=8, d_k=8, d_in=32, tie_kv=False, scale=None):
        super().__init__()
        self.scale = scale
        self.register_buffer('E_a', mt.randn(m, d_in))      # buffers, not Parameters: the model cannot
        self.register_buffer('E_c', mt.randn(m + 1, d_in))  # arrange addresses and contents apart for W_K
        self.W_Q, self.W_K = Projection(d_in, d_k), Projection(d_in, d_k)
        self.W_V = self.W_K if tie_kv else Projection(d_in, d_k)
        self.head = Projection(d_k, m)

    def forward(self, ids):
        addresses, contents = ids
        x = self.E_a[addresses] + self.E_c[contents]                      # (B, n + 1, d_in)
        out, _ = scaled_dot_product_attention(self.W_Q(x[:, -1:]), self.W_K(x), self.W_V(x), scale=self.scale)
        return self.head(out[:, 0])                                       # (B, m)


def lookup_batch(rng, B, n=6, m=8, device='cpu'):
    """((addresses, contents) (B, n + 1) each, answers (B,)): n distinct addresses with random contents, then
    the query: one of the addresses, with content id m ('none')."""
    addresses, contents, answers = [], [], []
    for _ in range(B):
        a, c = rng.sample(range(m), n), [rng.randrange(m) for _ in range(n)]
        r = rng.randrange(n)
        addresses.append(a + [a[r]])
        contents.append(c + [m])
        answers.append(c[r])
    return (mt.tensor(addresses, device=device), mt.tensor(contents, device=device)), mt.tensor(answers, device=device)


def train_lookup(tie_kv, d_k, steps=400, m=8, B=32, scale=None, seed=0, device='cpu'):
    """(parameters, final loss, test accuracy) of a Lookup trained with Adam."""
    mt.manual_seed(seed)
    model = Lookup(m, d_k, tie_kv=tie_kv, scale=scale).to(device)
    rng = random.Random(seed)
    losses = fit(model, lambda step: lookup_batch(rng, B, m=m, device=device), steps, 'qkv_roles', lr=1e-2)
    ids, answers = lookup_batch(random.Random(seed + 10 ** 6), 512, m=m, device=device)
    with mt.no_grad():
        return model.num_parameters(), tail_mean(losses), accuracy(model(ids), answers)


# ---------------------------------------------------------------------------- 3. a fourth projection
def solve3(G, r):
    """x with G x = r for a 3 x 3 G (lists), by Cramer's rule."""
    def det(M):
        return (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0])
                + M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]))
    D = det(G)
    return [det([[r[i] if j == k else G[i][j] for j in range(3)] for i in range(3)]) / D for k in range(3)]


def fourth_projection(d_model=64, n_heads=1, seed=0, device='cpu'):
    """{'abc': best (a, b, c) with W_U ~ a W_Q + b W_K + c W_V, 'residual': |W_U - that| / |W_U|,
    'merged': max |Q K_1^T + Q K_2^T - Q (K_1 + K_2)^T|, 'rescaled': max change of the scores when
    W_Q's columns are scaled by s_i and W_K's by 1 / s_i} for a MultiHeadAttention's own matrices (float64)."""
    mt.manual_seed(seed)
    mha = MultiHeadAttention(d_model, n_heads, bias=False).to(device, dtype='float64')
    W_U = Projection(d_model, d_model, bias=False).to(device, dtype='float64').weight   # a fourth, like the others
    Ws = [mha.W_Q.weight, mha.W_K.weight, mha.W_V.weight]
    G = [[(a * b).sum().item() for b in Ws] for a in Ws]
    abc = solve3(G, [(W * W_U).sum().item() for W in Ws])
    fit_ = sum(c * W for c, W in zip(abc, Ws))
    residual = ((W_U - fit_) ** 2).sum().sqrt().item() / (W_U ** 2).sum().sqrt().item()

    X = mt.randn(5, d_model, dtype='float64').to(device)
    Q, K1, K2 = X @ Ws[0], X @ Ws[1], X @ W_U
    merged = (Q @ K1.T + Q @ K2.T - Q @ (K1 + K2).T).abs().max().item()
    s = mt.rand(d_model, dtype='float64').to(device) + 0.5                           # per-column scales in [0.5, 1.5)
    rescaled = ((X @ (Ws[0] * s)) @ (X @ (Ws[1] / s)).T - Q @ K1.T).abs().max().item()
    return {'abc': abc, 'residual': residual, 'merged': merged, 'rescaled': rescaled}


# ---------------------------------------------------------------------------- 4. MLA's queries
def query_parameters(d_model, n_heads, d_head, d_rope, d_cq=None):
    """Numbers in MLA's query path (no biases): W_DQ (if d_cq), W_UQ and W_QR, sized as in
    MultiHeadLatentAttention."""
    width = d_model if d_cq is None else d_cq
    return (0 if d_cq is None else d_model * d_cq) + width * n_heads * (d_head + d_rope)


def mla_queries(d_model=64, n_heads=4, d_c=16, d_cq=24, n=5, seed=0, device='cpu'):
    """A small MLA with full queries and with d_cq: {d_cq: (query parameters counted on the module,
    the same by query_parameters, cached numbers per token)}."""
    out = {}
    for q in (None, d_cq):
        mt.manual_seed(seed)
        mla = MultiHeadLatentAttention(d_model, n_heads, d_c, d_cq=q).to(device)
        counted = sum(W.weight.numel() for W in (mla.W_DQ, mla.W_UQ, mla.W_QR) if W is not None)
        cache = KVCache()
        with mt.no_grad():
            mla(mt.randn(1, n, d_model).to(device), mask=causal_mask(n, device=device), cache=cache)
        per_token = (cache.K.numel() + cache.V.numel()) // n
        out[q] = (counted, query_parameters(d_model, n_heads, mla.d_head, mla.d_rope, q), per_token)
    return out


# ---------------------------------------------------------------------------- 5. the 'it' table
OTHER_WORDS = N_('other words')   # the 6 words the table does not list
IT_TABLE = [('it', 0.05), ('animal', 0.65), ('street', 0.05), ('tired', 0.15), ('because', 0.05),
            (OTHER_WORDS, 0.05)]   # the attention article §2.1.3
SENTENCE = "The animal didn't cross the street because it was too tired".split()


def it_table():
    """Sum of §2.1.3's weights, the score gap each implies against 'street' (ln of the weight ratio), and what
    §2.6's heat map leaves for the words it does not show."""
    weights = dict(IT_TABLE)
    others = [w for w in SENTENCE if w not in weights]                   # the 6 words behind 'other words'
    heat = dict(zip(article.HEATMAP_COLUMNS, article.HEATMAP_ROWS['it']))
    return {'sum': sum(weights.values()), 'others': others, 'each_other': weights['other words'] / len(others),
            'gaps': {w: math.log(p / weights['street']) for w, p in weights.items() if w != 'other words'},
            'heat_sum': sum(heat.values()), 'heat_the': heat['The']}


LOOKUP_D_KS = (2, 4, 8)
FULL = dict(steps=1000, lookup_steps=1000, seeds=5)  # --full


def run(steps=200, lookup_steps=400, seed=0, full=False, device='cpu'):
    if full:
        steps, lookup_steps, seeds = FULL['steps'], FULL['lookup_steps'], FULL['seeds']
    else:
        seeds = 1

    print(_("1. Q = K = V = X, no projections ({cite}).  The 猫 吃 鱼 X0 of {cite_x0}:").format(
        cite=cite('architecture', '2.3.2'), cite_x0=cite('deep_dive', '7.2')))
    S, A = self_attention_of_x0(device)
    words = article.TOKENS
    print(table(['Q \\ K'] + words + ['|'] + words, [[w] + S[i] + ['|'] + A[i] for i, w in enumerate(words)],
                fmt='.3f'))
    print(_("(left: S = X0 X0^T / sqrt(12), symmetric; right: softmax(S))\nEach word's largest weight is itself: "
            "{weights}.").format(weights=', '.join(f"{w} {A[i][i]:.0%}" for i, w in enumerate(words))))
    is_max, on_diag = diagonal_share(seed=seed, device=device)
    print(_("Random X (8 words, d = 64, rows of equal length): the diagonal is the largest weight\nin "
            "{is_max:.0%} of the rows, mean weight on itself {on_diag:.3f}.").format(is_max=is_max, on_diag=on_diag))
    results = {p: copy_previous(p, steps, seed=seed, device=device) for p in (True, False)}
    print(_("Copy the previous token (8 tokens, 10 symbols, learned positions, one layer, {steps} Adam steps):").format(
        steps=steps))
    print(table([_('attention'), _('final loss'), _('test accuracy'), _('weight on t-1'), _('weight on t itself')],
                [[name, tail_mean(results[p]['losses']), f"{100 * results[p]['accuracy']:.1f}%", results[p]['back'],
                  results[p]['itself']]
                 for name, p in (('W_Q, W_K, W_V', True), ('Q = K = V = X', False))]))
    print(_("(chance: 10%)  Without projections the embeddings are all that can learn, and a row's largest score "
            "stays on its own\ntoken: the article's point holds."))
    copies = [results[False]] + [copy_previous(False, steps, seed=seed + s, device=device) for s in range(1, seeds)]
    claims.record('architecture', '2.3.2', '如果让 Q/K/V 都直接等于 X 不做变换，模型就没法学到「该从什么角度提问」', 'holds',
                  N_("with Q = K = V = X each word's largest weight is itself ({itself} on the deep dive's X0; {is_max:.0%} "
                     "of the rows of random X of equal-length rows), and copying the previous token is not learned "
                     "({without}, chance 10%; {with_:.1%} with W_Q, W_K, W_V)"),
                  N_("part 1: the 猫 吃 鱼 table and the table \"attention, final loss, test accuracy\""),
                  seeds=claims.seeds_note(seeds),
                  itself=series([A[i][i] for i in range(len(words))], '.0%', labels=words), is_max=is_max,
                  without=claims.spread([c['accuracy'] for c in copies]), with_=results[True]['accuracy'])

    d_ks = LOOKUP_D_KS
    lookup = {(tie, d_k): [train_lookup(tie, d_k, lookup_steps, seed=seed + s, device=device) for s in range(seeds)]
              for d_k in d_ks for tie in (False, True)}
    seed_count = _(', {n} seeds').format(n=seeds) if seeds > 1 else ''
    print("\n" + _("2. K != V ({cite}): look up the content stored at an address (8 addresses, 6 stored,\n   one head, "
                   "{steps} Adam steps{seeds}):").format(cite=cite('attention', '2.2.3'), steps=lookup_steps,
                                                         seeds=seed_count))
    print(table(['d_k', _('W_V separate: params'), _('accuracy'), _('W_V = W_K: params'), _('accuracy')],
                [[d_k] + [v for tie in (False, True) for v in
                          (lookup[tie, d_k][0][0], f"{100 * sum(r[2] for r in lookup[tie, d_k]) / seeds:.1f}%")]
                 for d_k in d_ks]))
    roomy = [d_k for d_k in d_ks if sum(r[2] for r in lookup[True, d_k]) / seeds > 0.95]
    print(_("(chance: 12.5%)  With W_V = W_K one d_k-wide vector must carry both the address (to be matched) and "
            "the content\n(to be returned); separate projections give each its own d_k.  So the article's point "
            "holds where d_k is tight;\n")
          + (_("with room for both (d_k = {d_k} here) a shared projection does the job too: 'must' is too "
               "strong.").format(d_k=roomy[0]) if roomy else
             _("here no d_k tried gave the shared projection enough room.")))
    mean = {key: sum(r[2] for r in runs) / seeds for key, runs in lookup.items()}
    claims.record('attention', '2.2.3', ['it 可能会通过匹配 animal 的词性（Key）找到它。',
                                         '但 it 真正需要的是 animal 的语义（Value）'], 'partly' if roomy else 'holds',
                  N_("with W_V tied to W_K one head reaches {tied} at d_k = {d_ks} against {separate} with separate "
                     "projections; at d_k = {roomy} the shared projection has room for address and content and "
                     "also reaches {roomy_acc:.1%}: \"must\" is too strong") if roomy else
                  N_("with W_V tied to W_K one head reaches {tied} at d_k = {d_ks} against {separate} with separate "
                     "projections"),
                  N_('part 2: the table "d_k, W_V separate, W_V = W_K"'), seeds=claims.seeds_note(seeds),
                  tied=series([mean[True, d] for d in d_ks if d not in roomy], '.1%', sep=' / '),
                  d_ks=' / '.join(str(d) for d in d_ks if d not in roomy),
                  separate=claims.spread([mean[False, d] for d in d_ks]), roomy=roomy[0] if roomy else None,
                  roomy_acc=mean[True, roomy[0]] if roomy else None)

    four = fourth_projection(seed=seed, device=device)
    a, b, c = four['abc']
    print("\n" + _("3. A fourth projection ({cite}: 'U = a Q + b K + c V'): for a random W_U (64 x 64,\n   initialised "
                   "like W_Q, W_K, W_V) the best scalars are a = {a:.3f}, b = {b:.3f}, c = {c:.3f}, and they leave\n"
                   "   {left:.1%} of W_U unexplained.").format(cite=cite('attention', '2.2.4'), a=a, b=b, c=c,
                                                               left=four['residual']))
    print(_("The article's formula is wrong: a fourth projection is not a combination of the three.  What is true "
            "is that a\nfourth matrix in a role already filled adds parameters but nothing the model can express:"))
    print(table([_('check'), _('largest difference')],
                [[_('Q K_1^T + Q K_2^T  vs  Q (K_1 + K_2)^T: two key projections are one'), below(four['merged'], 1e-12)],
                 [_('W_Q columns x s_i, W_K columns / s_i: the scores do not change'), below(four['rescaled'], 1e-12)]]))
    claims.record('attention', '2.2.4', '第四个向量可以被前三个的线性组合表示：U = a·Q + b·K + c·V',
                  'the article is wrong',
                  N_("for a random fourth projection the best a, b, c leave {left:.1%} of W_U unexplained.  What holds is "
                     "that a fourth matrix in a role already filled adds nothing: Q K_1^T + Q K_2^T = Q (K_1 + K_2)^T "
                     "(difference {merged})"), N_('part 3'), left=four['residual'], merged=below(four['merged'], 1e-12))

    mla = mla_queries(device=device)
    (full_q, full_formula, full_cache), (small_q, small_formula, small_cache) = mla[None], mla[24]
    v2 = article.DEEPSEEK_V2
    shape = (v2['d_model'], v2['n_heads'], v2['d_head'], v2['d_rope'])
    v2_full, v2_small = query_parameters(*shape), query_parameters(*shape, v2['d_cq'])
    print("\n" + _("4. MLA ({cite}: 'Q 保持完整', Q stays full).  MultiHeadLatentAttention(d_model = 64, 4 heads,\n"
                   "   d_c = 16, the width of the cached K/V latent) with full queries and with d_cq = 24 (the queries' "
                   "own latent:\n   queries compressed too), counted on the modules:").format(
        cite=cite('attention', '2.2.4')))
    print(table([_('queries'), _('query-path parameters'), _('cached numbers per token')],
                [[_('full (d_cq = None)'), full_q, full_cache], [_('compressed (d_cq = 24)'), small_q, small_cache]]))
    print(_("DeepSeek-V2 (d_model = {d_model}, {n_heads} heads of {d_head} + {d_rope} RoPE) compresses its queries to "
            "d_c' = {d_cq}: {small:.1f} M query\nnumbers per layer instead of {full:.1f} M, the cache unchanged.  So "
            "'Q stays full' is not what DeepSeek-V2 does; what holds is\nthat queries are never cached, so compressing "
            "them saves no cache (in transformer.mla: d_cq).").format(
        d_model=v2['d_model'], n_heads=v2['n_heads'], d_head=v2['d_head'], d_rope=v2['d_rope'], d_cq=v2['d_cq'],
        small=v2_small / 1e6, full=v2_full / 1e6))
    claims.record('attention', '2.2.4', '但 Q 保持完整，保证查询能力', 'the article is wrong',
                  N_("for DeepSeek-V2, which compresses its queries too (d_c' = {d_cq}: {small:.1f} M query numbers per "
                     "layer instead of {full:.1f} M); queries are never cached, so the cache is the same ({cache} numbers "
                     "per token in the lesson's MLA with and without `d_cq`)"), N_("part 4"),
                  d_cq=v2['d_cq'], small=v2_small / 1e6, full=v2_full / 1e6, cache=full_cache)

    it = it_table()
    print("\n" + _("5. The 'it' table ({cite}).  'gap to street' = ln(p / p_street): how much larger that word's\n"
                   "   scaled score q . k / sqrt(d_k) must be than street's to get its weight:").format(
        cite=cite('attention', '2.1.3')))
    print(table([_('word'), _('weight'), _('gap to street')],
                [[_(w) if w == OTHER_WORDS else w, p, it['gaps'].get(w, '')] for w, p in IT_TABLE], fmt='.3f'))
    print(_("The weights sum to {total:.2f}: a distribution, as softmax rows are;\n'other words' are the "
            "{n} words {words} ({each:.4f} each).\nThe heat map of {cite_heat} shows the 'it' row over five of these "
            "words, summing to {heat_sum:.2f},\nbut gives 'The' {the:.2f} alone ({cite_table}: 'The' is among the 6 "
            "'other words' sharing 0.05).\nWith because at 0.05 as well, the remaining five words would get 0, which a "
            "softmax never gives: the two tables\ndo not quite agree.").format(
        total=it['sum'], n=len(it['others']), words=', '.join(it['others']), each=it['each_other'],
        cite_heat=cite('attention', '2.6'), heat_sum=it['heat_sum'], the=it['heat_the'],
        cite_table=cite('attention', '2.1.3')))
    claims.record('attention', '2.1.3', 'it 的注意力分布：… animal │ 0.65 … tired │ 0.15 … 其他词 │ 0.05', 'holds',
                  N_("the six weights sum to {total:.2f} (the {n} \"other words\" get {each:.4f} each); animal's weight "
                     "means a scaled score ln(0.65 / 0.05) = {gap:.2f} above street's"), N_("part 5: the 'it' table"),
                  total=it['sum'], n=len(it['others']), each=it['each_other'], gap=it['gaps']['animal'])
    claims.record('attention', '2.6', 'it │ 0.05 │ 0.65 │ 0.05 │ 0.05 │ 0.15', 'partly',
                  N_("the 'it' row of the heat map gives 'The' {the:.2f} alone and sums to {heat:.2f}, while §2.1.3's "
                     "table counts 'The' among the {n} words that share 0.05; with because at 0.05 (§2.1.3) the other "
                     "five words would get 0, which a softmax never gives"),
                  N_("part 5: the lines under the 'it' table"),
                  the=it['heat_the'], heat=it['heat_sum'], n=len(it['others']))
    return {'device': results[True]['model'].head.weight.device,
            'x0': (S, A), 'diagonal': (is_max, on_diag), 'copy': results, 'lookup': lookup, 'fourth': four,
            'mla': mla, 'deepseek_v2_queries': (v2_full, v2_small), 'it': it}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of the copy-the-previous-token training'),
                         lookup_steps=N_('Adam steps of each lookup training'), seed=N_('random seed'),
                         full=N_('train 1000 steps, three seeds for the lookup'))
    return run_lesson(run, command_line('qkv_roles', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    a = budget.effective(args, FULL)
    seeds = a['seeds'] if args.full else 1
    cost = (2 * budget.Cost(0, 0, a['steps'])                                        # with and without W_Q, W_K, W_V
            + 2 * len(LOOKUP_D_KS) * seeds * budget.Cost(0, 0, a['lookup_steps']))
    return budget.refuse({'--steps': a['steps'], '--lookup-steps': a['lookup_steps']}, cost, args.device)


if __name__ == '__main__':
    main()
