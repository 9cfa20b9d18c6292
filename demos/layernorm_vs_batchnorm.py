"""Lesson: LayerNorm normalises each token on its own; BatchNorm depends on the batch.

The deep-dive article (§5.2-5.3).  LayerNorm, for one token's vector x in R^d:

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
BatchNorm's changes every time (and a batch of one is an error in training mode).
"""
import microtensor as mt
from transformer import BatchNorm1d, LayerNorm
from transformer import article_data as article

from .report import table


def article_example():
    """The article's LayerNorm example, x = [2, 8, -4, -6] with its gamma, beta and eps = 0."""
    ex = article.LAYERNORM_EXAMPLE
    ln = LayerNorm(len(ex['x']), eps=ex['eps'])
    ln.gamma.data, ln.beta.data = mt.tensor(ex['gamma']).data, mt.tensor(ex['beta']).data
    return ln(mt.tensor([ex['x']])).tolist()[0]


def token_in_company(d=8, companions=3, seed=0):
    """The same token x normalised in different batches; {situation: (LayerNorm(x), BatchNorm(x) or error)}.

    Each situation puts x (row 0) in a batch (N, d) or a padded sentence (1, T, d) and
    reads back the output for x.  BatchNorm1d is in training mode (batch statistics)
    except in the last situation, which uses the running averages of the earlier batches.
    """
    mt.manual_seed(seed)
    x = mt.randn(1, d)
    small, large = mt.randn(companions, d), 5.0 + 3.0 * mt.randn(companions, d)
    ln, bn = LayerNorm(d), BatchNorm1d(d)
    sentence = mt.concatenate([x, mt.randn(4, d)]).reshape(1, 5, d)
    batches = {
        'x + 3 small tokens': mt.concatenate([x, small]),
        'x + 3 large tokens': mt.concatenate([x, large]),
        'x alone (batch of 1)': x,
        'x in a sentence of 5': sentence,
        'same sentence + 3 pad': mt.concatenate([sentence, mt.zeros(1, 3, d)], axis=1),
    }
    results = {}
    with mt.no_grad():
        for situation, batch in batches.items():
            results[situation] = (_first_row(ln(batch)), _try(lambda: _first_row(bn(batch))))
        bn.eval()
        results['BatchNorm in eval mode'] = (_first_row(ln(x)), _first_row(bn(x)))
    return results


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
    if isinstance(values, Exception):  # "BatchNorm1d: training needs more than one value per feature ..."
        return f"{type(values).__name__}: {str(values).split(': ', 1)[-1].split(',')[0]}"
    return '[' + ', '.join(f"{v:+.3f}" for v in values[:n]) + ', ...]'


def run(d=8, seed=0):
    y = article_example()
    print(f"The article's example: LayerNorm([2, 8, -4, -6]) with its gamma, beta, eps = 0:\n"
          f"  [{', '.join(f'{v:.3f}' for v in y)}]   article: {article.LAYERNORM_EXAMPLE['y']} "
          "(it rounds x_hat to 3 decimals first)")
    results = token_in_company(d, seed=seed)
    print(f"\nOne token x (d = {d}) normalised in different company; the output for x, first 4 features:")
    print(table(['situation', 'LayerNorm(x)', 'BatchNorm1d(x)'],
                [[situation, _show(ln), _show(bn)] for situation, (ln, bn) in results.items()]))
    changes = {'LayerNorm': largest_change(results, 0), 'BatchNorm1d': largest_change(results, 1)}
    print(f"largest change of x's output across the situations: LayerNorm {changes['LayerNorm']:.1e}, "
          f"BatchNorm1d {changes['BatchNorm1d']:.2f}")
    print("LayerNorm computes mu and sigma from x's own features: the company, padding, batch size and\n"
          "train/eval mode cannot change its output.  BatchNorm computes them per feature over the batch,\n"
          "so the same token comes out differently in every batch, and differently at inference.")
    return {'article_example': y, 'results': results, 'changes': changes}


if __name__ == '__main__':
    run()
