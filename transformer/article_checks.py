"""The rest of the 猫 吃 鱼 trace (deep-dive §7.3-7.4) that follows from printed numbers.

    residual_sum(X0):        X_mid_raw = X0 + MHA(X0), first 4 dimensions, from the article's own
                             X0 (embedding + PE) and its printed MHA output; the article prints
                             X_mid_raw too, so the "+1" road of the first residual can be checked
    cosine_similarities(X):  cos(u, v) = u . v / (|u| |v|) for the word pairs 猫吃, 吃鱼, 猫鱼 of the
                             rows of X; for X0 (all 12 dimensions known) the article prints 0.8565,
                             0.9396, 0.7298
    relative_changes(a, b):  (b - a) / a per pair: the article's "from 0.73 to 0.91, up 25%"

X0 comes from demos/article_trace.x0() (TokenEmbedding loaded with the article's vectors,
plus SinusoidalPositionalEncoding).  Everything else that the article prints after X_mid_raw
(LayerNorm with its gamma and beta, the FFN, X1, X2) needs the weights or the 8 dimensions
it leaves out, so it cannot be recomputed.
"""
import microtensor as mt
from microtensor.i18n import _

from . import article_data as article


def residual_sum(X0, mha=None):
    """X0[:, :4] + MHA(X0)[:, :4] as (3, 4) lists; mha: the article's printed MHA output by default."""
    mha = article.MHA_PRINTED if mha is None else mha
    X = mt.tensor(X0, dtype='float64')[:, :4]
    return (X + mt.tensor(mha, dtype='float64')).tolist()


def cosine_similarities(X, words=None):
    """{(word_a, word_b): cos(X[a], X[b])} for the article's pairs; X: rows in the order of `words`
    (default 猫 吃 鱼)."""
    words = article.TOKENS if words is None else words
    X = mt.tensor(X, dtype='float64')
    unit = X / (X * X).sum(axis=-1, keepdims=True).sqrt()
    similarity = (unit @ unit.T).tolist()
    return {(a, b): similarity[words.index(a)][words.index(b)] for a, b in article.PAIRS}


def relative_changes(before, after):
    """{pair: (after - before) / before} for two dicts of similarities."""
    return {pair: (after[pair] - before[pair]) / before[pair] for pair in before}


def tables(X0):
    """What the article_trace lesson prints: [(title, header, rows)], from X0 (3, 12)."""
    x_mid_raw = residual_sum(X0)
    cos_x0 = cosine_similarities(X0)
    changes = relative_changes(article.COS_X0_PRINTED, article.COS_X2_PRINTED)
    largest = max(changes, key=changes.get)
    return [
        (_("4. The first residual connection (§7.3 b): X_mid_raw = X0 + MHA(X0), first 4 dimensions "
           "(MHA: the article's printed output)"),
         [_('word'), _('X0 + MHA computed'), _('X_mid_raw printed'), _('max |difference|')],
         [[w, _vector(x_mid_raw[i]), _vector(article.X_MID_RAW_PRINTED[i]),
           f"{max(abs(a - b) for a, b in zip(x_mid_raw[i], article.X_MID_RAW_PRINTED[i])):.1e}"]
          for i, w in enumerate(article.TOKENS)]),
        (_("5. Cosine similarities (§7.4): X0 recomputed (all 12 dimensions) | X2 as printed (only 4 of its 12 "
           "dimensions are printed, so not recomputable); the largest rise: {pair}").format(pair='-'.join(largest)),
         [_('pair'), _('cos X0 computed'), _('cos X0 printed'), _('cos X2 printed'), _('change')],
         [['-'.join(pair), f"{cos_x0[pair]:.4f}", f"{article.COS_X0_PRINTED[pair]:.4f}",
           f"{article.COS_X2_PRINTED[pair]:.4f}", f"{100 * changes[pair]:+.1f}%"] for pair in article.PAIRS]),
    ]


def _vector(values):
    return '[' + ', '.join(f"{v:.4f}" for v in values) + ']'
