"""Lesson: LayerNorm normalises each token on its own; BatchNorm depends on the batch.

The deep dive (§5.2-5.3).  LayerNorm, for one token's vector x in R^d:

    mu = mean(x),  sigma^2 = mean((x - mu)^2),  x_hat = (x - mu) / sqrt(sigma^2 + eps),  y = gamma * x_hat + beta

"It does not look at the batch.  Each word's 512-d vector is compared with itself ...
whether the batch size is 1 or 1000, each word is normalised exactly the same" and
"training = inference".  BatchNorm normalises each feature over the whole mini-batch:
"unstable when the batch is small", "variable-length sequences need padding, and the
padded positions disturb the statistics", and "training and inference behave
differently: training uses the current batch's statistics, inference the global ones
accumulated during training".  In one line: "BN slices across (the same feature over
different samples), LN slices along (the different features of the same sample)".

Here one token goes through transformer.LayerNorm and transformer.BatchNorm1d in
different company: other tokens that are small or large, a batch of one, padding
added to its sentence, and BatchNorm in eval mode.  LayerNorm's output never changes;
BatchNorm's changes every time (and a batch of one is an error in training mode).  A
sweep over batch sizes 2 .. 64 (x plus random companions) shows it as a plot.

    python -m demos.layernorm_vs_batchnorm --d-model 16 --batch-sizes 2 3 4 1000
"""
import microtensor as mt
from microtensor.i18n import N_, _
from transformer import BatchNorm1d, LayerNorm
from transformer import article_data as article

from . import budget, claims
from .figures import series
from .report import command_line, options_of, run_lesson, save_lines, table

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('deep_dive', '5.2'), ('deep_dive', '5.3')]

BATCH_SIZES = (2, 4, 8, 16, 32, 64)


def article_example():
    """The article's LayerNorm example, x = [2, 8, -4, -6] with its gamma, beta and eps = 0."""
    ex = article.LAYERNORM_EXAMPLE
    ln = LayerNorm(len(ex['x']), eps=ex['eps'])
    ln.gamma.data, ln.beta.data = mt.tensor(ex['gamma']).data, mt.tensor(ex['beta']).data
    return ln(mt.tensor([ex['x']])).tolist()[0]


def token_in_company(d=8, companions=3, seed=0, device='cpu'):
    """The same token x normalised in different batches; {situation: (LayerNorm(x), BatchNorm(x) or error)}.

    Each situation puts x (row 0) in a batch (N, d) or a padded sentence (1, n, d) and
    reads back the output for x.  BatchNorm1d is in training mode (batch statistics)
    except in the last situation, which uses the running averages of the earlier batches.
    """
    mt.manual_seed(seed)  # drawn on the CPU and moved: the same numbers on every device
    x = mt.randn(1, d).to(device)
    small, large = mt.randn(companions, d).to(device), (5.0 + 3.0 * mt.randn(companions, d)).to(device)
    ln, bn = LayerNorm(d).to(device), BatchNorm1d(d).to(device)
    sentence = mt.concatenate([x, mt.randn(4, d).to(device)]).reshape(1, 5, d)
    batches = {  # named in the reader's language: the names are the table's first column
        _('x + {n} small tokens').format(n=companions): mt.concatenate([x, small]),
        _('x + {n} large tokens').format(n=companions): mt.concatenate([x, large]),
        _('x alone (batch of 1)'): x,
        _('x in a sentence of 5'): sentence,
        _('same sentence + 3 pad'): mt.concatenate([sentence, mt.zeros(1, 3, d, device=device)], axis=1),
    }
    results = {}
    with mt.no_grad():
        for situation, batch in batches.items():
            results[situation] = (_first_row(ln(batch)), _try(lambda: _first_row(bn(batch))))
        bn.eval()
        results[_('BatchNorm in eval mode')] = (_first_row(ln(x)), _first_row(bn(x)))
    return results


def by_batch_size(d=8, sizes=BATCH_SIZES, seed=0, device='cpu'):
    """x's first output feature when x is normalised with N - 1 random companions, for each N in sizes;
    {'LayerNorm': [...], 'BatchNorm1d': [...]} (BatchNorm1d in training mode) and the outputs' device."""
    mt.manual_seed(seed)
    x = mt.randn(1, d).to(device)
    ln, bn = LayerNorm(d).to(device), BatchNorm1d(d).to(device)
    curves = {'LayerNorm': [], 'BatchNorm1d': []}
    with mt.no_grad():
        for n in sizes:
            batch = mt.concatenate([x, mt.randn(n - 1, d).to(device)])
            for name, norm in (('LayerNorm', ln), ('BatchNorm1d', bn)):
                y = norm(batch)
                curves[name].append(y[0, 0].item())
    return curves, y.device


def _first_row(y):
    return y.reshape(-1, y.shape[-1])[0].tolist()


def _try(compute):
    try:
        return compute()
    except ValueError as error:
        return error


def largest_change(results, column):
    """Largest |difference| from the first situation's output, over the situations that gave one."""
    reference = list(results.values())[0][column]
    return max(abs(a - b) for values in results.values() if isinstance(values[column], list)
               for a, b in zip(values[column], reference))


def _show(values, n=4):
    """The first n values, or a pointer to the error printed under the table (never the message itself)."""
    if isinstance(values, Exception):
        return _("{error} (below)").format(error=type(values).__name__)
    return '[' + ', '.join(f"{v:+.3f}" for v in values[:n]) + ', ...]'


def run(d_model=8, companions=3, batch_sizes=BATCH_SIZES, seed=0, device='cpu'):
    y = article_example()
    print(_("The deep dive's example (§5.2): LayerNorm([2, 8, -4, -6]) with its gamma, beta, eps = 0:\n"
            "  [{y}]   article: {printed} (it rounds x_hat to 3 decimals first)").format(
        y=', '.join(f'{v:.3f}' for v in y), printed=article.LAYERNORM_EXAMPLE['y']))
    claims.record('deep_dive', '5.2', 'x = [2.0, 8.0, -4.0, -6.0] … = [0.538, 1.069, -0.730, -1.444]', 'holds',
                  N_("transformer.LayerNorm gives [{y}], the printed one to within the article's rounding of x̂"),
                  N_('the first lines'), y=series(y, '.3f'))
    results = token_in_company(d_model, companions, seed, device)
    print('\n' + _("One token x (d = {d}) normalised in different company; the output for x, first 4 features:").format(
        d=d_model))
    print(table([_('situation'), 'LayerNorm(x)', 'BatchNorm1d(x)'],
                [[situation, _show(ln), _show(bn)] for situation, (ln, bn) in results.items()]))
    for situation, outputs in results.items():
        for name, value in zip(('LayerNorm', 'BatchNorm1d'), outputs):
            if isinstance(value, Exception):
                print(f"{name}, {situation}: {type(value).__name__}: {value}")
    changes = {'LayerNorm': largest_change(results, 0), 'BatchNorm1d': largest_change(results, 1)}
    print(_("largest change of x's output across the situations: LayerNorm {ln:.1e}, BatchNorm1d {bn:.2f}").format(
        ln=changes['LayerNorm'], bn=changes['BatchNorm1d']))
    claims.record('deep_dive', '5.3', ['不看 batch', '训练 = 推理', '训练和推理行为不同'], 'holds',
                  N_("the same token's LayerNorm output changes by {ln:.1e} across {n} situations (other tokens, "
                     "padding, a batch of one, eval mode), BatchNorm's by up to {bn:.2f}"),
                  N_('the table "situation, LayerNorm(x), BatchNorm1d(x)" and the line "largest change"'),
                  ln=changes['LayerNorm'], n=len(results), bn=changes['BatchNorm1d'])

    curves, device = by_batch_size(d_model, batch_sizes, seed, device)
    print('\n' + _("x with N - 1 random companions (training mode), x's first output feature:"))
    print(table([_('batch size N'), 'LayerNorm(x)[0]', 'BatchNorm1d(x)[0]'],
                [[n, a, b] for n, a, b in zip(batch_sizes, curves['LayerNorm'], curves['BatchNorm1d'])], fmt='+.4f'))
    save_lines('layernorm_vs_batchnorm', curves, _('batch size N (x and N - 1 random tokens)'),
               _("x's first output feature"), _('The same token x, normalised in batches of different sizes'),
               x=list(batch_sizes), logx=True, logy=False)
    print(_("LayerNorm computes mu and sigma from x's own features: the company, padding, batch size and\n"
            "train/eval mode cannot change its output.  BatchNorm computes them per feature over the batch,\n"
            "so the same token comes out differently in every batch, and differently at inference."))
    return {'article_example': y, 'results': results, 'changes': changes, 'by_batch_size': curves, 'device': device}


def main(argv=None):
    options = options_of(run, d_model=N_('features per token (d)'),
                         companions=N_('other tokens in the first two batches'),
                         batch_sizes=(N_('batch sizes of the sweep (BatchNorm needs 2 or more in training)'), 2),
                         seed=N_('random seed'))
    return run_lesson(run, command_line('layernorm_vs_batchnorm', __doc__, options, argv, check=_budget))


def _budget(args):
    """What these sizes cost (demos/budget.py): a usage error, before any work, when this machine cannot."""
    rows = max(args.batch_sizes) + 2 * args.companions + 5          # the largest batch, or x with its companions
    cost = budget.dense(4 * rows * args.d_model, 4 * (sum(args.batch_sizes) + 4 * args.companions) * args.d_model,
                        steps=2 * len(args.batch_sizes))
    return budget.refuse({'--d-model': args.d_model, '--companions': args.companions,
                          '--batch-sizes': ' '.join(map(str, args.batch_sizes))}, cost, args.device)


if __name__ == '__main__':
    main()
