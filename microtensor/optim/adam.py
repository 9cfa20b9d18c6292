"""Adam and AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019)."""
from .. import argcheck, backend
from ..fused import adam as fused_adam
from .optimizer import Optimizer


class Adam(Optimizer):
    """Adam: a per-parameter step size from running averages of the gradient and its square.

        g = grad (+ weight_decay * p: Adam's L2 penalty, which Adam then rescales)
        m = beta1 * m + (1 - beta1) * g            first moment (mean of g)
        v = beta2 * v + (1 - beta2) * g**2         second moment (mean of g**2)
        m_hat = m / (1 - beta1**t)                 bias correction: m and v start at 0,
        v_hat = v / (1 - beta2**t)                 so early averages are too small
        p = p - lr * m_hat / (sqrt(v_hat) + eps)
    """
    decoupled = False  # AdamW sets True: weight decay shrinks p directly instead of entering g
    state_fields = ('exp_avg', 'exp_avg_sq')

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *, fused=None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.fused = argcheck.boolean(fused, type(self).__name__, 'fused') if fused is not None else None

    def _check_hyperparameters(self, group, where=None):
        group = super()._check_hyperparameters(group, where)
        name, betas = where or type(self).__name__, group['betas']
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"{name}: betas must be two numbers in [0, 1), not {argcheck.describe(betas)}")
        group['betas'] = tuple(argcheck.number(b, name, f'betas[{i}]', min=0, max=1, max_open=True)
                               for i, b in enumerate(betas))
        group['eps'] = argcheck.number(group['eps'], name, 'eps', min=0)
        group['weight_decay'] = argcheck.number(group['weight_decay'], name, 'weight_decay', min=0)
        return group

    def update(self, p, g, state, group):
        xp = backend.array_module(p)
        lr, (beta1, beta2), eps, weight_decay = group['lr'], group['betas'], group['eps'], group['weight_decay']
        if weight_decay and not self.decoupled:
            g = g + weight_decay * p
        m, v = self.moments(p, state)
        t = state['step']
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * (g * g)
        # lr * m_hat / (sqrt(v_hat) + eps), with the bias corrections folded into two numbers (as PyTorch)
        denominator = xp.sqrt(v)
        denominator /= (1 - beta2 ** t) ** 0.5
        denominator += eps
        step = m / denominator
        step *= lr / (1 - beta1 ** t)
        if weight_decay and self.decoupled:
            p *= 1 - lr * weight_decay
        p -= step  # into the parameter's own memory

    def moments(self, p, state):
        """m and v for parameter array p: zeros at its first step, then the optimizer's own arrays,
        updated in place (state_dict() hands out copies)."""
        if 'exp_avg' not in state:
            xp = backend.array_module(p)
            state['exp_avg'], state['exp_avg_sq'] = xp.zeros_like(p), xp.zeros_like(p)
        return state['exp_avg'], state['exp_avg_sq']

    def update_all(self, stepped, group):
        """With the fused layer on (or fused=True, PyTorch's argument; fused=False: never), one compiled
        loop updates the whole group (fused/adam.py, as PyTorch's fused Adam), where it can run; else
        update() each parameter by the formulas above."""
        if not fused_adam.adam_update(stepped, self.moments, group['lr'], group['betas'], group['eps'],
                                      group['weight_decay'], self.decoupled, self.fused):
            super().update_all(stepped, group)


class AdamW(Adam):
    """Adam with decoupled weight decay: before the Adam step, p = p * (1 - lr * weight_decay).

    In plain Adam an L2 term in g is divided by sqrt(v_hat), so parameters with large
    gradients are barely decayed; AdamW shrinks every weight by the same factor.
    """
    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, *, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, fused=fused)
