"""Adam's (AdamW's) update, fast: optim/adam.py's formulas as one compiled loop (kernels.c).

The textbook update (Adam.update) makes about ten passes over a parameter's numbers, each a
numpy call with its own temporary; the loop makes one, in place, with the same roundings but
for a * b + c, which the compiler may fuse.  It runs when the fused layer is on and the
parameter, its gradient and its moments are float32 arrays on the CPU (compiled.can_run).
"""
from . import compiled, switch


def adam_update(p, g, m, v, t, lr, betas, eps, weight_decay, decoupled):
    """Adam.update's arithmetic on p, m and v in place (g holds Adam's L2 term already, where there
    is one): True when the compiled loop ran, False when it cannot (then Adam.update runs its formulas)."""
    if not (switch.enabled and compiled.can_run(p, g, m, v)):
        return False
    beta1, beta2 = betas
    decay = 1 - lr * weight_decay if decoupled else 1.0
    compiled.run('adam', *(a.reshape(-1) for a in (p, g, m, v)),  # views: the arrays are C-contiguous
                 numbers=[beta1, 1 - beta1, beta2, 1 - beta2, eps, decay, lr / (1 - beta1 ** t), (1 - beta2 ** t) ** 0.5])
    return True
