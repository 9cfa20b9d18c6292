"""The rules the Transformer's components check their arguments against, in one place.

    d_model, n_layers = checks.arguments('GPT', d_model=d_model, n_layers=n_layers)

Each argument name has one rule (n_layers: an integer >= 1; dropout: a number in [0, 1];
...), so GPT, the layers and the attention say the same thing about the same mistake:
"GPT: n_layers must be an integer >= 1, not 0".  Token ids are checked by token_ids
before any arithmetic (see microtensor/argcheck.py for the message format).
"""
import microtensor as mt
from microtensor import argcheck

MAX_INIT_STD = 3.4e37  # a tenth of float32's largest value: 10-sigma weights stay finite


def _size(value, where, name):
    return argcheck.integer(value, where, name, min=1)


def _optional_size(value, where, name):
    return argcheck.integer(value, where, name, min=1, allow_none=True)


def _probability(value, where, name):
    return argcheck.number(value, where, name, min=0, max=1)


def _non_negative(value, where, name):
    return argcheck.number(value, where, name, min=0)


def _init_std(value, where, name):  # larger, and some float32 weights would overflow to inf
    return argcheck.number(value, where, name, min=0, max=MAX_INIT_STD)


def _optional_positive(value, where, name):
    return argcheck.number(value, where, name, min=0, min_open=True, allow_none=True)


RULES = {
    **dict.fromkeys(['vocab_size', 'src_vocab', 'tgt_vocab', 'd_model', 'n_layers', 'n_heads', 'max_len',
                     'd_in', 'd_hidden', 'num_features', 'd_k', 'd_c'], _size),
    **dict.fromkeys(['d_ff', 'n_kv_heads', 'n_classes', 'd_rope', 'd_head', 'd_cq'], _optional_size),
    **dict.fromkeys(['dropout', 'momentum'], _probability),
    'eps': _non_negative,
    'init_std': _init_std,
    'alpha': argcheck.number,
    'scale': _optional_positive,  # attention's score scale (None: 1 / sqrt(d_k))
    **dict.fromkeys(['tie_weights', 'residual', 'rope', 'alibi', 'cross_attention', 'bias',
                     'relative', 'shared_qk', 'gate'], argcheck.boolean),
}


def arguments(where, **values):
    """The values checked by the rule of their name, as plain Python values, in the order given
    (a single value when one is given)."""
    checked = tuple(RULES[name](value, where, name) for name, value in values.items())
    return checked[0] if len(checked) == 1 else checked


def heads(where, d_model, n_heads, n_kv_heads=None):
    """(d_model, n_heads, n_kv_heads) checked: each head gets d_k = d_model / n_heads dimensions,
    each K/V head serves n_heads / n_kv_heads query heads (n_kv_heads=None means n_heads)."""
    d_model, n_heads, n_kv_heads = arguments(where, d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads)
    n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
    if d_model % n_heads:
        raise ValueError(f"{where}: d_model={d_model} is not divisible by n_heads={n_heads} "
                         "(each head gets d_k = d_model / n_heads dimensions)")
    if n_heads % n_kv_heads:
        raise ValueError(f"{where}: n_heads={n_heads} is not divisible by n_kv_heads={n_kv_heads} "
                         "(each K/V head must serve the same number of query heads)")
    return d_model, n_heads, n_kv_heads


def token_id(value, where, name, vocab_size):
    """An optional special token id (pad_id, bos_id): None or an integer in [0, vocab_size)."""
    return argcheck.integer(value, where, name, min=0, max=vocab_size - 1, allow_none=True)


def token_ids(ids, where, vocab_size, device, ndims=None, name='ids'):
    """`ids` as an integer Tensor on `device` with every id in [0, vocab_size), checked before
    any arithmetic.  A nested list becomes a tensor; float ids are refused, not truncated.
    ndims=(2,): the shape must be (B, T); (1, 2): (T,) or (B, T); and hold at least one token.
    The bounds are checked here on every device: cupy does not raise for an out-of-range
    index, it wraps around."""
    if not isinstance(ids, mt.Tensor):
        try:
            ids = mt.tensor(ids, device=device)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{where}: {name} must be integer token ids (a Tensor or nested lists of ints), "
                            f"not {argcheck.describe(ids)} ({error})") from None
    if ndims is not None and (ids.ndim not in ndims or ids.numel() == 0):
        shapes = ' or '.join({1: '(T,)', 2: '(B, T)'}[n] for n in ndims)
        hint = "; for one sequence use ids.reshape(1, -1)" if ids.ndim == 1 and ids.numel() else ''
        raise mt.ShapeError(f"{where}: {name} must have shape {shapes} with B, T >= 1, got {ids.shape}{hint}")
    if ids.dtype.kind not in 'iu':
        raise TypeError(f"{where}: {name} must be integer token ids, not {ids.dtype} "
                        "(floats are not rounded for you: convert whole numbers with .to(mt.int64))")
    if ids.device != device:
        raise RuntimeError(f"{where}: ids are on {ids.device} but the table is on {device}; "
                           "move one with .to(device)")
    if ids.numel() and ((ids < 0) | (ids >= vocab_size)).any():  # one reduction on the device, one host sync
        low, high = ids.min().item(), ids.max().item()
        raise IndexError(f"{where}: token ids must be in [0, {vocab_size}), got values from {low} to {high} "
                         "(is vocab_size too small?)")
    return ids

