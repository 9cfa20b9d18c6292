"""Autoregressive generation: pick a token, append it, feed it back, repeat.

    logits = model(tokens so far)[:, -1]          (B, V): scores for the next token
    next   = argmax(logits)                       greedy
           ~ softmax(logits / T)                  sampling at temperature T

Temperature (the articles' table): T = 0.2 is very sharp, almost argmax; T = 1 is the
model's own distribution; T = 1.5 is flatter and more diverse.  T -> 0 becomes greedy:
greedy=True (or temperature=0) is the way to ask for it; a tiny positive T gives the
argmax too.  top_k keeps only the k largest logits before sampling (top_k=1 is greedy too).

Sampling uses the Gumbel-max trick: argmax(logits / T + g) with g = -log(-log(u)),
u ~ U(0, 1) per entry, is an exact sample from softmax(logits / T) -- no cumulative sums,
only microtensor ops, so it runs on the GPU as is.  For T < 1 the same argmax is computed
as argmax(logits + T g) (multiplied through by T > 0), which cannot overflow: logits / 1e-39
would be +-inf in float32, and every positive logit would tie.  (Both in float64, so that
any finite T > 0 works, 1e300 included.)  u comes from the backend's generator:
mt.manual_seed(s), or seed=s here, makes generation reproducible.

The KV cache: each layer's self-attention keeps the K and V of every position seen so far,
so each step runs the model on the one new token only (T_q = 1) instead of the whole prefix;
the result is the same as recomputing everything (tests/test_generate.py checks it).
"""
import math

import microtensor as mt
from microtensor import argcheck

from . import checks
from .models import GPT, Transformer


def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, greedy=False, seed=None):
    """Continue `prompt` by max_new_tokens tokens.

    GPT (decoder-only): prompt (B, T) token ids -> (B, T + max_new_tokens), the prompt followed
    by the new tokens.  Transformer (encoder-decoder): prompt is the source (B, S) -> the
    generated target (B, max_new_tokens), decoded from `model.bos_id`.  A 1-D prompt (T,)
    gives a 1-D result.  The model runs in eval mode (no dropout) and records no graph.
    seed: calls mt.manual_seed(seed) first (so it also reseeds later random draws).
    """
    if not isinstance(model, (GPT, Transformer)):
        raise TypeError(f"generate: model must be a GPT or a Transformer, not {argcheck.describe(model)}")
    max_new_tokens = argcheck.integer(max_new_tokens, 'generate', 'max_new_tokens', min=0)
    temperature, top_k, greedy = _check_sampling('generate', temperature, top_k, greedy)
    seed = argcheck.integer(seed, 'generate', 'seed', min=0, allow_none=True)
    vocab_size = model.src_vocab if isinstance(model, Transformer) else model.vocab_size
    ids = checks.token_ids(prompt, 'generate', vocab_size, model.parameters()[0].device, ndims=(2, 1),
                           name='the prompt')
    if seed is not None:
        mt.manual_seed(seed)
    one_sequence = ids.ndim == 1
    if one_sequence:
        ids = ids.reshape(1, -1)

    was_training = model.training
    model.eval()
    try:
        with mt.no_grad():
            cache = model.new_cache()
            if isinstance(model, Transformer):
                if model.bos_id is None:
                    raise ValueError("generate: the Transformer has no bos_id to start the target from; "
                                     "build it with Transformer(..., bos_id=...)")
                _check_positions(model.tgt_embed, max_new_tokens, 'the target (max_new_tokens)')
                memory, src_mask = model.encode(ids)
                start = mt.full((ids.shape[0], 1), model.bos_id, dtype='int64', device=ids.device)
                new = _decode(lambda y: model.decode(y, memory, src_mask, cache), start,
                              max_new_tokens, temperature, top_k, greedy)
                out = mt.concatenate([start] + new, axis=1)[:, 1:]  # without BOS
            else:
                _check_positions(model.embed, ids.shape[1] + max_new_tokens - 1,
                                 f'the prompt ({ids.shape[1]} tokens) plus max_new_tokens - 1')
                new = _decode(lambda x: model(x, cache=cache), ids, max_new_tokens, temperature, top_k, greedy)
                out = mt.concatenate([ids] + new, axis=1)
    finally:
        model.train(was_training)
    return out.reshape(-1) if one_sequence else out


def _decode(step, first_input, max_new_tokens, temperature, top_k, greedy):
    """The loop both architectures share: logits of the last position -> next token -> feed it back."""
    tokens, x = [], first_input
    for _ in range(max_new_tokens):
        x = _sample(step(x)[:, -1], temperature, top_k, greedy, 'generate')
        tokens.append(x)
    return tokens


def pick_next(logits, temperature=1.0, top_k=None, greedy=False):
    """logits (B, V) -> next token ids (B, 1): greedy, or a sample from softmax(logits / T) (top-k).
    Logits with a NaN, or a row of only -inf, are an error (there is no distribution to follow)."""
    temperature, top_k, greedy = _check_sampling('pick_next', temperature, top_k, greedy)
    return _sample(logits, temperature, top_k, greedy, 'pick_next')


def _sample(logits, temperature, top_k, greedy, where):
    """pick_next with its options already checked; logits are checked here, naming `where`."""
    _check_logits(where, logits)
    B = logits.shape[0]
    if greedy or temperature == 0:
        return logits.argmax(dim=-1).reshape(B, 1)
    if top_k is not None and top_k < logits.shape[-1]:
        logits = _keep_top_k(logits, top_k)  # the k largest of logits / T are those of logits
    u = mt.rand(*logits.shape, dtype=logits.dtype, device=logits.device).clip(min=1e-30)
    gumbel = (-(-u.log()).log()).to(dtype=mt.float64)
    logits = logits.to(dtype=mt.float64)  # so that logits / T and T * g stay finite for any finite T > 0
    scores = logits / temperature + gumbel if temperature >= 1 else logits + gumbel * temperature
    return scores.argmax(dim=-1).reshape(B, 1)


def top_k_filter(logits, k):
    """Keep the k largest logits of each row and set the rest to -inf (equal values stay together)."""
    k = argcheck.integer(k, 'top_k_filter', 'k', min=1)
    _check_logits('top_k_filter', logits)
    return _keep_top_k(logits, k)


def _keep_top_k(logits, k):
    rest = logits
    for _ in range(k - 1):  # remove the current maximum k - 1 times; what is left has the k-th largest on top
        rest = rest.masked_fill(rest == rest.amax(dim=-1, keepdim=True), float('-inf'))
    return logits.masked_fill(logits < rest.amax(dim=-1, keepdim=True), float('-inf'))


def _check_sampling(where, temperature, top_k, greedy):
    """temperature: a finite number >= 0 (0 means greedy); top_k: None or an integer >= 1."""
    return (argcheck.number(temperature, where, 'temperature', min=0),
            argcheck.integer(top_k, where, 'top_k', min=1, allow_none=True),
            argcheck.boolean(greedy, where, 'greedy'))


def _check_logits(where, logits):
    if not isinstance(logits, mt.Tensor) or logits.ndim != 2 or logits.dtype.kind != 'f' or 0 in logits.shape:
        raise mt.ShapeError(f"{where}: logits must be a floating-point Tensor of shape (B, V), "
                            f"not {argcheck.describe(logits) if not isinstance(logits, mt.Tensor) else logits}")
    if not (logits.amax(dim=-1) > -math.inf).all():  # one reduction, one host sync: a NaN makes its row's max NaN
        if (logits != logits).any():
            raise ValueError(f"{where}: the logits contain NaN, so there is no distribution to sample from; "
                             "the model's weights or inputs are probably NaN (did training diverge?)")
        raise ValueError(f"{where}: a row of logits is -inf everywhere, so no token is possible")


def _check_positions(embed, n_positions, what):
    """A learned position table has max_len rows: refuse before running past it."""
    if embed.positional == 'learned' and n_positions > embed.max_len:
        raise ValueError(f"generate: {what} needs {n_positions} positions, but the model's learned "
                         f"position table has max_len={embed.max_len}; shorten the prompt, ask for fewer "
                         "tokens, or use positional='sinusoidal', 'rope' or 'alibi' (they extrapolate)")
