"""Lesson: path length -- how far the gradient travels in an RNN and in attention.

The deep dive (§7.7, §8.2): in an RNN, h_t = tanh(W_h h_{t-1} + W_x x_t), "the
gradient from 猫 at the start to 鱼 at the end must pass through the hidden state of
every word in between, h_1 -> h_2 -> ... -> h_n.  Each step multiplies by a matrix's
derivative (usually < 1): after 50 steps the gradient may have decayed to nothing."
In a Transformer, "the attention matrix entry A_{1,n} connects 猫 and 鱼 directly.
Gradient path length: 1.  Not 'through 50 layers', but 'one hop'."

Here both read the same random sequences x_1 .. x_n (n: the sequence length), and we ask
how strongly the output at the last position depends on each input: |d(y_n . g)/dx_t| for a
random g, as a function of the distance n - t.

    RNN:        dh_n/dx_t = prod_{s=t+1..n} [diag(1 - h_s^2) W_hh^T]  @ ...    n - t factors: decays geometrically
    attention:  y_n = sum_j A_nj V_j,  V_j = x_j W_V                          one factor A_nj at any distance

The RNN is transformer.RNN (a tanh Elman cell); the attention is one
MultiHeadAttention layer (no positional encoding, no mask: every position is one hop
from every other).

    python -m demos.rnn_vs_attention --seq-len 64 --d-model 32
"""
import microtensor as mt
from microtensor.i18n import N_, _
from microtensor.inspect import norm
from transformer import RNN, MultiHeadAttention

from . import budget, claims
from .report import command_line, options_of, run_lesson, save_lines, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '7.7'), ('deep_dive', '8.2'), ('architecture', '2.1.2'), ('attention', '2.1.1')]


def gradient_by_distance(model, n=32, d=16, B=8, seed=0, device='cpu'):
    """|dL/dx_t| for t = 1..n listed by distance n - t (index 0 = the last position itself).

    model(x (B, n, d)) -> (B, n, d_out); L = sum(y_n * g) with y_n its last position, g ~ N(0, 1).
    """
    mt.manual_seed(seed)  # drawn on the CPU and moved: the same numbers on every device
    x = mt.randn(B, n, d).to(device).requires_grad_()
    y_last = model(x)[:, -1]
    (y_last * mt.randn(*y_last.shape).to(device)).sum().backward()
    return [norm(x.grad[:, t]) for t in reversed(range(n))]


def compare(n=32, d=16, B=8, seed=0, device='cpu'):
    """{'RNN': [...], 'attention': [...]} gradient norms by distance, fresh models of width d; and their device."""
    mt.manual_seed(seed)
    rnn, attention = RNN(d, d).to(device), MultiHeadAttention(d, n_heads=2).to(device)
    grads = {'RNN': gradient_by_distance(lambda x: rnn(x)[0], n, d, B, seed, device),
             'attention': gradient_by_distance(attention, n, d, B, seed, device)}
    return grads, attention.W_Q.weight.device


def run(seq_len=32, d_model=16, batch_size=8, seed=0, device='cpu'):
    n, d, B = seq_len, d_model, batch_size
    grads, device = compare(n, d, B, seed, device)
    shown = sorted({0, 1, 2, 4, 8, 16, 24, n - 1} & set(range(n)))
    print(_("The deep dive's gradient path, O(n) for the RNN and 1 for attention (§8.2):"))
    print(_("|d(y_n . g)/dx_t| by distance n - t, n = {n}, d = {d}, {B} random sequences:").format(n=n, d=d, B=B))
    print(table([_('distance'), 'RNN', _('attention')],
                [[k, grads['RNN'][k], grads['attention'][k]] for k in shown]))
    far = n - 1
    rnn_ratio, attention_ratio = grads['RNN'][far] / grads['RNN'][1], grads['attention'][far] / grads['attention'][1]
    per_step = rnn_ratio ** (1 / (far - 1))
    print(_("from distance 1 to {far}: RNN x {rnn:.1e} (about x {step:.2f} per step), attention x {attention:.2f}")
          .format(far=far, rnn=rnn_ratio, step=per_step, attention=attention_ratio))
    print(_("The RNN's gradient is a product of one Jacobian per step, so it fades geometrically with the\n"
            "distance; attention reaches every position in one hop, so distance does not matter.\n"
            "(Distance 0 is larger for attention: the last position is also the query.)"))
    look = N_('the table by distance and the line "from distance 1 to ..."')
    figures = dict(far=far, rnn=rnn_ratio, step=per_step, attention=attention_ratio)
    claims.record('attention', '2.1.1', '梯度消失问题……连乘结果会指数级衰减', 'holds',
                  N_("the RNN's gradient shrinks about {step:.2f}x per step, {rnn:.1e} from distance 1 to {far}; "
                     "attention's changes {attention:.2f}x over the same distances"), look, **figures)
    claims.record('architecture', '2.1.2', '梯度在反向传播时会指数级衰减', 'holds',
                  N_("about {step:.2f}x per step, {rnn:.1e} from distance 1 to {far}"), look, **figures)
    claims.record('deep_dive', '7.7', ['梯度要穿过 512 层', '一跳直达'], 'holds',
                  N_("the RNN's gradient is a product of one Jacobian per step ({step:.2f}x each); attention's is the "
                     "same size at every distance ({attention:.2f}x from 1 to {far})"), look, **figures)
    claims.record('deep_dive', '8.2', ['穿 50 步，梯度可能衰减到可以忽略', '梯度路径长度：1……"一跳直达"'], 'holds',
                  N_("from distance 1 to {far} the RNN's gradient falls by {rnn:.1e}, attention's changes by "
                     "{attention:.2f}x; the lesson measures {far} steps, not the article's 50 (`--seq-len 51` "
                     "measures 50): at {step:.2f}x per step 50 steps would leave {fifty:.0e}"), look,
                  fifty=per_step ** 50,
                  **figures)

    save_lines('rnn_vs_attention', {'RNN': grads['RNN'], _('attention'): grads['attention']},
               _('distance n - t'), '|dL/dx_t|', _('Gradient from the last position back to each input'),
               x=list(range(n)))
    return {'grads': grads, 'rnn_ratio': rnn_ratio, 'attention_ratio': attention_ratio, 'device': device}


def main(argv=None):
    options = options_of(run, seq_len=(N_('sequence length n (distances 0 .. n-1)'), 3),
                         d_model=N_('width d of the inputs, the RNN state and the attention (even: 2 heads)'),
                         batch_size=N_('random sequences averaged over'), seed=N_('random seed'))
    return run_lesson(run, command_line('rnn_vs_attention', __doc__, options, argv,
                                        check=lambda args: _even_width(args) or _budget(args)))


def _even_width(args):
    return _("--d-model must be even (2 attention heads), got {width}").format(width=args.d_model) if args.d_model % 2 \
        else None


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    T, d, B = args.seq_len, args.d_model, args.batch_size
    attention = budget.transformer(B, T, d, n_layers=1, heads=2)
    rnn = budget.dense(2 * B * T * d, 3 * B * T * d * d, steps=T)      # T steps, one after another
    return budget.refuse({'--seq-len': T, '--d-model': d, '--batch-size': B}, attention + rnn, args.device)


if __name__ == '__main__':
    main()
