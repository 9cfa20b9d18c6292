"""Lesson: check your model against the industry engine -- the same model in PyTorch, gradient by gradient.

Everything in microtensor is written out so that you can step through it; PyTorch is what you will
use next.  transformer.to_torch(model) rebuilds a model in plain PyTorch (nn.Linear, nn.LayerNorm,
F.gelu, a hand-written attention) with the same weights, and compare_with_torch(model, batch) runs
one forward and backward in both engines and prints, for every parameter, how far apart the two
gradients are.

1. The tiny GPT (learned positions, Pre-LN, LayerNorm, GELU) in float32: the gradients agree to
   within about 1e-6 of their size.  That is rounding: the two engines add the same numbers in another
   order, and float32 keeps about 7 digits.
2. A LLaMA-like variant (RoPE, RMSNorm, grouped-query attention, gated residuals) in float64:
   about 1e-15, float64's 16 digits.  An agreement that improves with the precision like this is
   the sign that both engines compute the same function; a real mistake (a transposed weight, a
   missing 1/sqrt(d_k)) would leave a difference the size of the gradient itself, in the module
   that has it.

The rows with a tiny |grad| are worth a look: W_K's bias gets a gradient of exactly 0 in exact
arithmetic (it adds q . b to every score of a row, and a softmax ignores a constant), so all that
is left there is rounding noise; with RoPE, which rotates b differently at every position, it
learns something.

    python -m demos.compare_with_torch
    python -m demos.compare_with_torch --d-model 32 --n-layers 4
"""
import microtensor as mt
from microtensor.i18n import N_, _
from transformer import GPT

from . import budget
from .figures import below
from .report import command_line, options_of, run_lesson

SECTIONS = []


def torch_missing():
    """Why this lesson cannot run here (None when torch imports)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return _("it needs PyTorch, which is not installed here: pip install 'microtensor[torch]'")
    return None


def run(d_model=16, n_layers=2, n_heads=4, seq_len=8, batch_size=2, seed=0, device='cpu'):
    reason = torch_missing()
    if reason is not None:
        print(_("compare_with_torch: skipped, {reason}").format(reason=reason))
        return None
    from transformer import compare_with_torch
    mt.manual_seed(seed)
    vocab = 16
    ids = mt.randint(0, vocab, (batch_size, seq_len), device=device)
    results = {}
    print(_("1. The tiny GPT, float32\n"))
    tiny = GPT(vocab, d_model=d_model, n_layers=n_layers, n_heads=n_heads, max_len=seq_len, init_std=0.1).to(device)
    results['tiny GPT'] = compare_with_torch(tiny, ids)
    print(_("\n2. RoPE, RMSNorm, grouped-query attention (2 K/V heads), gated residuals, float64\n"))
    variant = GPT(vocab, d_model=d_model, n_layers=n_layers, n_heads=n_heads, max_len=seq_len, init_std=0.1,
                  positional='rope', norm_type='rms', n_kv_heads=max(1, n_heads // 2), gate=True)
    results['variant'] = compare_with_torch(variant.to(device, dtype='float64'), ids)
    worst32, worst64 = results['tiny GPT']['largest'][2], results['variant']['largest'][2]
    print(_("\nLargest relative difference: {worst32} in float32, {worst64} in float64 -- rounding, which "
            "shrinks with the precision; a mistake would not.").format(worst32=below(worst32, 1e-5),
                                                                     worst64=below(worst64, 1e-12)))
    return results


def main(argv=None):
    options = options_of(run, d_model=N_('width of both models'), n_layers=N_('layers'), n_heads=N_('attention heads'),
                         seq_len=N_('tokens per sequence'), batch_size=N_('sequences in the batch'),
                         seed=N_('random seed'))
    return run_lesson(run, command_line('compare_with_torch', __doc__, options, argv, check=_budget))


def _budget(args):
    """A usage error, before any work, for sizes the models cannot take (both split d_model into n_heads
    heads; the variant rotates pairs of each head's d_k and has max(1, n_heads // 2) K/V heads) or
    this machine cannot afford (demos/budget.py)."""
    model = budget.heads({'--d-model': args.d_model, '--n-heads': args.n_heads},
                         n_kv_heads=max(1, args.n_heads // 2), rope=True)
    if model:
        return model
    one = budget.transformer(args.batch_size, args.seq_len, args.d_model, args.n_layers, heads=args.n_heads)
    return budget.refuse({'--d-model': args.d_model, '--n-layers': args.n_layers, '--n-heads': args.n_heads,
                          '--seq-len': args.seq_len, '--batch-size': args.batch_size}, 2 * one, args.device)


if __name__ == '__main__':
    main()
