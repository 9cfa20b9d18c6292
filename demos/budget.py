"""What a lesson's sizes cost, estimated before it starts: memory, and steps x size.

A lesson given --batch-size 1000000000000 would otherwise start, and fill the memory or loop
for hours.  Each lesson's option check describes its run in a few numbers, and refuse()
turns a run this machine cannot do into a usage error that names the options and the limit:

    def _budget(args):                                  # in the lesson: check=_budget
        cost = budget.transformer(args.batch_size, args.seq_len, d_model=32, n_layers=2, steps=args.steps)
        return budget.refuse({'--batch-size': args.batch_size, '--seq-len': args.seq_len, '--steps': args.steps},
                             cost, args.device)

heads() is the other usage error a lesson with --d-model and --n-heads needs: sizes the model
itself cannot take (6 dimensions do not split into 4 heads).

The estimates are lower bounds (every product counted once, optimistic speeds), so a run
that fits is never refused; what is refused cannot fit in this machine's memory, or would
take more than a day even at those speeds.
"""
import collections
import os

from microtensor.argcheck import gib, machine_memory
from microtensor.i18n import _

BYTES = 4                                         # float32
PER_CORE = 1e10                                   # multiply-adds per second and CPU core (optimistic)
GPU = 5e13                                        # multiply-adds per second on a GPU (optimistic)
STEP_SECONDS = 1e-4                               # the least a training step costs (a tiny MLP takes ~3x more)
LIMIT_SECONDS = 24 * 3600                         # a lesson that needs more than a day cannot be run here


class Cost(collections.namedtuple('Cost', 'numbers work steps')):
    """numbers: float32 numbers held at once; work: multiply-adds; steps: optimizer steps (or other
    rounds of many small ops, e.g. an RNN's time steps).  a + b: one run after the other (the memory
    is reused); n * a: a, n times."""

    def __add__(self, other):
        return Cost(max(self.numbers, other.numbers), self.work + other.work, self.steps + other.steps)

    def __rmul__(self, n):
        return Cost(self.numbers, n * self.work, n * self.steps)


def transformer(B, T, d_model, n_layers, vocab=0, heads=4, d_ff=None, T_k=None, steps=1):
    """Cost of `steps` training steps (forward and backward) of n_layers Transformer layers over B
    sequences of T tokens (keys: T_k, default T), with a vocab-sized embedding and output head.
    Held at once: the weights with their gradients and Adam's moments, each layer's activations
    and its (B, heads, T, T_k) attention maps."""
    T_k = T if T_k is None else T_k
    d_ff = 4 * d_model if d_ff is None else d_ff
    weights = n_layers * (4 * d_model ** 2 + 2 * d_model * d_ff)
    per_token = weights + vocab * d_model                                              # the matrix products
    attention = n_layers * 2 * B * T * T_k * d_model                                   # Q K^T and A V
    activations = n_layers * (B * T * (6 * d_model + 2 * d_ff) + 2 * B * heads * T * T_k) + 2 * B * T * vocab
    step = 3 * (B * T * per_token + attention)                                         # backward: about 2x forward
    return Cost(4 * (weights + 2 * vocab * d_model) + activations, steps * step, steps)


def dense(numbers, work=None, steps=1):
    """Cost of plain array work: `numbers` held at once, `work` multiply-adds (default: numbers), `steps` rounds."""
    return Cost(numbers, numbers if work is None else work, steps)


def effective(args, full):
    """{name: value} of args, with the values of `full` when args.full (the lesson's --full)."""
    values = vars(args)
    return {**values, **full} if values.get('full') else values


def refuse(options, cost, device='cpu'):
    """The usage error for a run of this Cost when this machine cannot do it; None when it can.
    options: {'--flag': value} of the options that set those sizes, named in the message."""
    named = ', '.join(f"{flag} {value}" for flag, value in options.items())
    have, need = machine_memory(), cost.numbers * BYTES
    if have is not None and need > have:
        return _("{options}: the run would hold at least {need} at once, more than this machine's {have} of memory; "
                 "choose smaller values").format(options=named, need=gib(need), have=gib(have))
    cores = os.cpu_count() or 1
    rate = GPU if device == 'cuda' else PER_CORE * cores
    seconds = cost.work / rate + cost.steps * STEP_SECONDS
    if seconds > LIMIT_SECONDS:
        where = (_('the GPU') if device == 'cuda' else _("this machine's {n} CPU core").format(n=cores) if cores == 1
                 else _("this machine's {n} CPU cores").format(n=cores))
        return _("{options}: the run would take at least {hours} hours on {where} ({work} multiply-adds in {steps} "
                 "steps; the limit is {limit} hours); choose smaller values").format(
            options=named, hours=f"{seconds / 3600:.3g}", where=where, work=f"{cost.work:.3g}",
            steps=f"{cost.steps:.3g}", limit=LIMIT_SECONDS // 3600)
    return None


def heads(options, n_kv_heads=None, rope=False):
    """The usage error for a model width and head count the model cannot take; None when it can.
    options: {'--d-model': d_model, '--n-heads': n_heads} (the lesson's flags, named in the message).
    The rules are the model's own (transformer/checks.py): n_heads divides d_model, n_kv_heads (if
    the lesson sets one) divides n_heads; with rope=True each head's d_k is even (RoPE rotates pairs)."""
    (d_flag, d_model), (h_flag, n_heads) = options.items()
    if d_model % n_heads:
        return _("{heads} must divide {width}: each head gets d_model / n_heads dimensions (e.g. {example})").format(
            heads=f"{h_flag} {n_heads}", width=f"{d_flag} {d_model}",
            example=f"{h_flag} {_divisor_near(d_model, n_heads)}")
    if n_kv_heads is not None and n_heads % n_kv_heads:
        return _("{heads}: the lesson gives the model {n_kv} K/V heads, which must divide the {n} query heads (each "
                 "K/V head serves as many query heads as the others)").format(
            heads=f"{h_flag} {n_heads}", n_kv=n_kv_heads, n=n_heads)
    if rope and (d_model // n_heads) % 2:
        return _("{options}: each head gets d_k = {d_k} dimensions, and RoPE rotates pairs of them, so d_k must be "
                 "even").format(options=f"{d_flag} {d_model} {h_flag} {n_heads}", d_k=d_model // n_heads)
    return None


def _divisor_near(n, k):
    """A divisor of n close to k (the closest within 64 of it, the smaller one on a tie; else 1)."""
    near = [d for d in range(max(1, k - 64), k + 65) if n % d == 0]
    return min(near, key=lambda d: (abs(d - k), d)) if near else 1
