"""Lesson 0: the engine alone. A two-layer MLP learns XOR; the loss falls as you watch.

    h = tanh(X @ W1 + b1);   logits = h @ W2 + b2;   L = cross_entropy(logits, y)

Plain gradient descent, written out: p.data -= lr * p.grad.data for every parameter.

    python -m demos.train_xor --steps 500 --lr 0.1 --hidden 4
    python -m demos.train_xor --full     # the same training from 5 seeds (5 initial weights)
"""
import microtensor as mt

from microtensor.i18n import N_, _

from . import budget, claims
from .report import check_learned, check_loss, command_line, options_of, run_lesson, save_lines, table, window_means

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '6.1')]
FULL = dict(seeds=5)  # --full


def run(steps=300, lr=0.5, hidden=8, seed=0, seeds=1, full=False, device='cpu', verbose=True):
    """Train on the four XOR points; (losses, predictions: a tensor on `device`).

    seeds (full: FULL['seeds']): how many initial weights (seed, seed + 1, ...) the claim's verdict counts."""
    mt.manual_seed(seed)  # the weights are drawn on the CPU and moved: the same start on every device
    X = mt.tensor([[0., 0.], [0., 1.], [1., 0.], [1., 1.]], device=device)
    y = mt.tensor([0, 1, 1, 0], device=device)
    W1 = mt.randn(2, hidden).to(device).requires_grad_()
    b1 = mt.zeros(hidden, device=device, requires_grad=True)
    W2 = (mt.randn(hidden, 2) * 0.5).to(device).requires_grad_()
    b2 = mt.zeros(2, device=device, requires_grad=True)
    params = [W1, b1, W2, b2]
    losses = []
    for step in range(1, steps + 1):
        h = (X @ W1 + b1).tanh()
        loss = mt.cross_entropy(h @ W2 + b2, y)
        losses.append(check_loss(loss.item(), step, 'train_xor'))
        for p in params:
            p.grad = None
        loss.backward()
        with mt.no_grad():
            for p in params:
                p.data -= lr * p.grad.data
        if verbose and (step % 50 == 1 or step == steps):
            print(_("step {step:4d}  loss {loss:.4f}").format(step=step, loss=losses[-1]))
    predictions = ((X @ W1 + b1).tanh() @ W2 + b2).argmax(dim=-1)
    if verbose:
        print(table([_('steps'), _('mean loss')], window_means(losses, 5)))
        print(_("predictions {predictions} targets {targets}").format(predictions=predictions.tolist(),
                                                                       targets=y.tolist()))
        n = FULL['seeds'] if full else seeds
        others = [run(steps, lr, hidden, s, device=device, verbose=False)[1] for s in range(seed + 1, seed + n)]
        rights = [sum(p == t for p, t in zip(found.tolist(), y.tolist())) for found in [predictions, *others]]
        if n > 1:
            print(_("from {n} seeds: {rights} of the 4 points right").format(n=n, rights=', '.join(map(str, rights))))
        solved = sum(right == 4 for right in rights)
        claims.record('deep_dive', '6.1', '如果没有它，两层线性变换叠加 = 一层线性变换', 'holds' if solved == n else 'partly',
                      N_("two Linears around tanh get all 4 XOR points right after {steps} steps in {solved} of {n} "
                         "seeds; no linear map of (x_1, x_2) can (XOR is not linearly separable), and without the tanh "
                         "the two Linears are one"),
                      N_('the line "predictions ... targets ..." (--full: "from 5 seeds ...")'),
                      seeds=claims.seeds_note(n), solved=solved, n=n, steps=steps)
        check_learned(losses, 'train_xor', flat=(N_('more --steps'), N_('a higher --lr'), N_('more --hidden units')))
        save_lines('train_xor', {_('training loss'): losses}, _('step'), _('cross-entropy (nats)'),
                   _('XOR, {hidden} hidden units, lr {lr}').format(hidden=hidden, lr=lr))
    return losses, predictions


def main(argv=None):
    options = options_of(run, steps=N_('gradient-descent steps'), lr=N_('learning rate'), hidden=N_('hidden units'),
                         seed=N_('random seed for the initial weights'),
                         seeds=N_('initial weights to train (seed, seed + 1, ...) for the verdict'), full=N_('5 seeds'))
    return run_lesson(run, command_line('train_xor', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    per_step = 4 * 3 * args.hidden * 3                    # 4 points, 2 -> hidden -> 1, forward and backward
    seeds = FULL['seeds'] if args.full else args.seeds
    return budget.refuse({'--steps': args.steps, '--hidden': args.hidden, '--seeds': seeds},
                         seeds * budget.dense(12 * args.hidden, per_step * args.steps, args.steps), args.device)


if __name__ == '__main__':
    main()
