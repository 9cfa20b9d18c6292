"""Adam's (AdamW's) update, fast: optim/adam.py's formulas as one compiled loop (kernels.c) over
all of a group's parameters, as PyTorch's fused Adam.

The textbook update (Adam.update) makes about ten passes over a parameter's numbers, each a
numpy call with its own temporary, and Python takes a turn for every parameter; the loop makes
one pass over every parameter's numbers, in place, with the same roundings but for a * b + c,
which the compiler may fuse.  It runs when the fused layer is on and every parameter, its
gradient and its moments are float32 arrays on the CPU (compiled.can_run).
"""
from . import compiled, switch


def adam_update(stepped, moments, lr, betas, eps, weight_decay, decoupled, fused=None):
    """Adam.update's arithmetic for each (parameter, state) of `stepped`, on the parameter and its
    moments (moments(p, state): m and v) in place: True when the compiled loop ran, False when it
    cannot or is not asked to (then Adam.update runs its formulas for each).  fused: the optimizer's
    own choice, True or False; None follows the switch (mt.fused())."""
    if not (stepped and (switch.enabled if fused is None else fused)):
        return False
    items = [(p.data, p.grad.data, *moments(p.data, state), state['step']) for p, state in stepped]
    if not (compiled.can_run(*[a for item in items for a in item[:4]])
            and all(a.flags.writeable for item in items for a in (item[0], *item[2:4]))):
        return False  # (a read-only parameter: the formulas' p -= step says so)
    beta1, beta2 = betas
    steps = [item[4] for item in items]
    compiled.run_for_each('adam', [[item[i] for item in items] for i in range(4)],
                          columns=[[lr / (1 - beta1 ** t) for t in steps], [(1 - beta2 ** t) ** 0.5 for t in steps]],
                          numbers=[beta1, 1 - beta1, beta2, 1 - beta2, eps, 1 - lr * weight_decay if decoupled else 1.0,
                                   0.0 if decoupled else weight_decay])
    return True
