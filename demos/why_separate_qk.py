"""Lesson: why Q and K have separate projections -- a shared W_Q = W_K makes attention symmetric.

The attention article (§2.2.2): "if Q = K, 'I attend to you' equals 'you attend to
me' ... mathematically a symmetric matrix", and "if Q = K, the attention matrix
A = Softmax(Q K^T) is symmetric: A_ij = A_ji".  Its design table lists "shared projection
W_Q = W_K: fewer parameters, but less expressive".

1. What is true: with one projection W for both, Q = K = X W and the scores
   S = Q K^T = X W W^T X^T are exactly symmetric, S_ij = S_ji: before the softmax, word i
   scores word j exactly as j scores i.  What the article overstates: the softmax
   normalises each row on its own, A_ij = exp(S_ij) / Z_i with Z_i = sum_k exp(S_ik), so
   A_ij / A_ji = Z_j / Z_i -- A is not symmetric, only "symmetric up to each row's
   normaliser".  Shown on MultiHeadAttention(shared_qk=True) against the default.
2. Why it matters: a task that needs direction.  Each position must output the token
   just before it ("copy the previous token"), with bidirectional attention (no mask) and
   learned positions, through one attention layer (no residual: the answer has to come
   through attention).  Position t must score t - 1 high and t + 1 low, but with a shared
   projection S_{t,t-1} = S_{t-1,t}: whatever makes t look back makes t - 1 look forward.
   The two models are trained the same way (Adam, same seed, same batches); we compare
   accuracy and where the attention goes (weight on t - 1 vs t + 1).

   What happens (run it): the shared model learns the task too, but slower and with
   blurrier attention.  It cannot make S asymmetric, so it uses the learned positions to
   build a staircase instead: S_{t,t-1} falls steadily along the sequence, so that
   S_{t,t-1} > S_{t+1,t} = S_{t,t+1} at every t (position t prefers t - 1 over t + 1
   because t + 1's own look-back score is lower).  The step height it can afford shrinks
   as the sequence grows (--full also trains n = 32), and the diagonal S_tt = |q_t|^2 sits
   close behind, so part of each row stays on the token itself.  The article's
   "less expressive" holds; "cannot attend directionally" is too strong once positions
   are learned.

    python -m demos.why_separate_qk            # the defaults (run time: end of --help)
    python -m demos.why_separate_qk --full     # longer training
"""
import microtensor as mt
from microtensor import nn, optim
from microtensor.i18n import N_, _
from transformer import Embed, MultiHeadAttention, Projection

from . import budget, claims
from .figures import below
from .report import check_loss, command_line, options_of, run_lesson, save_lines, table, window_means

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('attention', '2.2.2'), ('attention', '2.2.4')]
# the two models, by name (English: the keys of the results; shown translated)
PROJECTIONS = ((N_('shared W_Q = W_K'), True), (N_('separate W_Q, W_K'), False))


# ---------------------------------------------------------------------------- 1. the symmetry
def symmetry(n=5, d_model=8, seed=0, device='cpu'):
    """Scores and weights of one head, shared vs separate W_Q, W_K, on the same random X (n, d_model)."""
    mt.manual_seed(seed)  # weights and data drawn on the CPU and moved: the same numbers on every device
    X = mt.randn(1, n, d_model, dtype='float64').to(device)
    out = {}
    for shared in (True, False):
        mt.manual_seed(seed + 1)
        mha = MultiHeadAttention(d_model, 1, shared_qk=shared).to(device, dtype='float64')
        with mt.no_grad():
            mha(X)
        S, A = mha.last_scores[0, 0], mha.last_weights[0, 0]
        Z = S.exp().sum(axis=-1, keepdims=True)                              # each row's normaliser Z_i
        out[shared] = {'S': S.tolist(), 'A': A.tolist(),
                       'S_asym': (S - S.T).abs().max().item(), 'A_asym': (A - A.T).abs().max().item(),
                       # A_ij Z_i = exp(S_ij): symmetric exactly when S is
                       'AZ_asym': (A * Z - (A * Z).T).abs().max().item()}
    return out


# ---------------------------------------------------------------------------- 2. the directional task
class CopyPrevious(nn.Module):
    """logits = Linear(MultiHeadAttention(Embed(ids)));  position t should output ids[t - 1].

    No mask (every position sees both neighbours) and no residual connection (the previous
    token can only arrive through the attention weights).  Extra options go to the attention.
    """

    def __init__(self, vocab=10, n=8, d_model=32, n_heads=1, **attention_options):
        super().__init__()
        self.embed = Embed(vocab, d_model, n, 'learned')
        self.attention = MultiHeadAttention(d_model, n_heads, **attention_options)
        self.head = Projection(d_model, vocab)

    def forward(self, ids):
        return self.head(self.attention(self.embed(ids)))


def copy_batch(rng_step, B, n, vocab, seed, device='cpu'):
    """(B, n) random ids, the same for every model (and device) at a given (seed, step)."""
    mt.manual_seed(seed * 100_003 + rng_step)
    return mt.randint(0, vocab, (B, n)).to(device)


def train_copy_previous(steps=200, vocab=10, n=8, d_model=32, n_heads=1, B=32, lr=3e-3, seed=0, device='cpu',
                        lesson='why_separate_qk', optimizer='adam', **attention_options):
    """Train CopyPrevious with Adam (or optimizer='sgd': plain SGD at lr); returns {'model', 'losses', 'accuracy',
    'back', 'forward'} where back / forward are the mean attention weights on t - 1 and t + 1 (over positions
    1 .. n-2, head-averaged) on a test batch."""
    mt.manual_seed(seed)
    model = CopyPrevious(vocab, n, d_model, n_heads, **attention_options).to(device)
    opt = (optim.Adam if optimizer == 'adam' else optim.SGD)(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        ids = copy_batch(step, B, n, vocab, seed, device)
        loss = mt.cross_entropy(model(ids)[:, 1:], ids[:, :-1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(check_loss(loss.item(), step + 1, lesson))
    ids = copy_batch(10 ** 6, 256, n, vocab, seed, device)               # a test batch never trained on
    with mt.no_grad():
        predicted = model(ids)[:, 1:].argmax(dim=-1)
        A = model.attention.last_weights.mean(axis=(0, 1))              # (n, n), over batch and heads
    t = list(range(1, n - 1))
    return {'model': model, 'losses': losses,
            'accuracy': (predicted == ids[:, :-1]).astype('float32').mean().item(),
            'back': sum(A[i, i - 1].item() for i in t) / len(t),
            'forward': sum(A[i, i + 1].item() for i in t) / len(t),
            'A': A.tolist(), 'S': model.attention.last_scores.mean(axis=(0, 1)).tolist()}


def compare(steps=200, seed=0, **options):
    """{'shared': result, 'separate': result} of train_copy_previous."""
    return {name: train_copy_previous(steps, seed=seed, shared_qk=shared, **options)
            for name, shared in PROJECTIONS}


FULL = dict(steps=1000, seeds=5)  # --full: the comparison over 5 seeds, and with 4 x seq-len tokens


def run(steps=200, seq_len=8, d_model=32, batch_size=32, seed=0, full=False, device='cpu'):
    steps, n = (FULL['steps'] if full else steps), seq_len
    sym = symmetry(seed=seed, device=device)
    print(_("1. One head on the same random X (5 tokens): asymmetry = max |M - M^T|; Z_i = sum_k exp(S_ik), the "
            "normaliser of row i"))
    print(table([_('projection'), 'S = Q K^T / sqrt(d_k)', 'A = softmax(S)', 'A_ij Z_i = exp(S_ij)'],
                [[_(name)] + [below(v, 1e-12) if v < 1e-12 else v   # rounding noise: a bound, never its value
                              for v in (sym[shared]['S_asym'], sym[shared]['A_asym'], sym[shared]['AZ_asym'])]
                 for name, shared in PROJECTIONS], fmt='.2e'))
    print(_("With a shared projection S is exactly symmetric, but A is not: each row is divided by its own\n"
            "Z_i = sum_k exp(S_ik), so A_ij / A_ji = Z_j / Z_i.  The attention article's 'A_ij = A_ji' (§2.2.2)\n"
            "overstates it: what is symmetric is the score (before the row normalisation).  Shared-projection weights:"))
    print(table(['Q \\ K'] + [str(j) for j in range(5)], [[i] + row for i, row in enumerate(sym[True]['A'])],
                fmt='.3f'))
    claims.record('attention', '2.2.2', '如果 Q = K，那么注意力矩阵 A = Softmax(QK^T) 是对称的。A_ij = A_ji', 'partly',
                  N_("with W_Q = W_K the scores are symmetric (max |S - S^T| {s}), the weights are not ({a:.1e}): "
                     "each row is divided by its own Z_i = Σ_k exp(S_ik), so A_ij / A_ji = Z_j / Z_i"),
                  N_('part 1: the table "projection, S = Q K^T / sqrt(d_k), A = softmax(S)"'),
                  s=below(sym[True]['S_asym'], 1e-12), a=sym[True]['A_asym'])

    sizes = dict(d_model=d_model, B=batch_size, device=device)
    results = compare(steps, seed, n=n, **sizes)
    print(_("\n2. Copy the previous token ({n} tokens, 10 symbols, no mask, one head, {steps} Adam steps):").format(
        n=n, steps=steps))
    print(table([_('projection'), _('parameters'), _('final loss (mean of last 20)'), _('test accuracy'),
                 _('weight on t-1'), _('weight on t+1')],
                [[_(name), r['model'].num_parameters(), sum(r['losses'][-20:]) / 20, f"{100 * r['accuracy']:.1f}%",
                  r['back'], r['forward']] for name, r in results.items()]))
    print(_("(chance: 10%; a perfect model puts weight 1 on t-1 and 0 on t+1)"))
    (shared_name, shared), (separate_name, separate) = results.items()
    print(table([_('steps')] + [_("loss, {projection}").format(projection=_(name))
                                for name in (shared_name, separate_name)],
                [[w, a, b] for (w, a), (_w, b) in zip(window_means(shared['losses'], 5),
                                                      window_means(separate['losses'], 5))]))
    staircase = [[t, shared['S'][t][t - 1], shared['S'][t][t], shared['A'][t][t - 1], shared['A'][t][t]]
                 for t in range(1, n)]
    print(_("\nHow the shared model does it (test batch means): S_{t,t-1} = S_{t-1,t} falls along t, so each t\n"
            "prefers t-1 to t+1; the diagonal S_tt = |q_t|^2 stays close:"))
    print(table(['t', 'S_{t,t-1}', 'S_{t,t}', 'A_{t,t-1}', 'A_{t,t}'], staircase))
    runs = [results] + [compare(steps, seed + k, n=n, **sizes) for k in range(1, FULL['seeds'] if full else 1)]
    shared_runs, separate_runs = [r[shared_name] for r in runs], [r[separate_name] for r in runs]
    claims.record('attention', '2.2.4', '共享投影 W_Q = W_K 减少参数，但损失表达能力', 'holds',
                  N_("the shared model has {shared_p} parameters against {separate_p}, and its attention is blurrier: "
                     "weight {shared} on t-1 against {separate}"), N_('part 2: the table "projection, parameters, ..."'),
                  seeds=claims.seeds_note(len(runs)), shared_p=shared['model'].num_parameters(),
                  separate_p=separate['model'].num_parameters(), shared=claims.between([r['back'] for r in shared_runs]),
                  separate=claims.between([r['back'] for r in separate_runs]))
    learned_shared = sum(r['accuracy'] > 0.9 for r in shared_runs)
    claims.record('attention', '2.2.2', 'Q 和 K 的分离，是为了打破对称性，建立有向的关注。',
                  'partly' if 2 * learned_shared >= len(shared_runs) else 'holds',
                  N_("the shared model still learns to copy the previous token (above 90% in {learned} of {n} seeds; "
                     "{acc} test accuracy) through learned positions, but blurrier (weight {shared} on t-1 against "
                     "{separate} with separate projections)"),
                  N_('part 2: the table "projection, parameters, final loss" and the staircase table "t, S_{{t,t-1}}"'),
                  seeds=claims.seeds_note(len(runs)), acc=claims.spread([r['accuracy'] for r in shared_runs]),
                  learned=learned_shared, n=len(shared_runs),
                  shared=claims.between([r['back'] for r in shared_runs]), separate=claims.between([r['back'] for r in separate_runs]))
    save_lines('why_separate_qk', {_(name): r['losses'] for name, r in results.items()}, _('step'), _('cross-entropy'),
               _('Copy the previous token: shared vs separate W_Q, W_K'))
    longer = None
    if full:
        longer = compare(steps, seed, n=4 * n, **sizes)
        print(_("\nThe same with {n} tokens:").format(n=4 * n))
        print(table([_('projection'), _('test accuracy'), _('weight on t-1'), _('weight on t+1')],
                    [[_(name), f"{100 * r['accuracy']:.1f}%", r['back'], r['forward']] for name, r in longer.items()]))
    return {'symmetry': sym, 'training': results, 'staircase': staircase, 'longer': longer,
            'device': results[shared_name]['model'].head.weight.device}


def main(argv=None):
    options = options_of(run, steps=N_('Adam steps of each training'), seq_len=(N_('tokens per sequence n'), 3),
                         d_model=N_('model width d_model (one head: d_k = d_model)'),
                         batch_size=N_('sequences per batch'), seed=N_('random seed'),
                         full=N_('train 1000 steps, 5 seeds, and also with 4 x seq-len tokens'))
    return run_lesson(run, command_line('why_separate_qk', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    steps = FULL['steps'] if args.full else args.steps
    lengths = (args.seq_len,) * FULL['seeds'] + (4 * args.seq_len,) if args.full else (args.seq_len,)
    cost = budget.Cost(0, 0, 0)
    for T in lengths:  # one head (d_k = d_model), shared and separate projections
        cost = cost + 2 * budget.transformer(args.batch_size, T, args.d_model, n_layers=1, vocab=10, heads=1,
                                             steps=steps)
    return budget.refuse({'--steps': steps, '--seq-len': args.seq_len, '--d-model': args.d_model,
                          '--batch-size': args.batch_size}, cost, args.device)


if __name__ == '__main__':
    main()
