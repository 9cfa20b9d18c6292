"""Adam and AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019)."""
from .. import backend
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

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def _check_hyperparameters(self, group):
        super()._check_hyperparameters(group)
        name = type(self).__name__
        if len(group['betas']) != 2 or not all(0 <= b < 1 for b in group['betas']):
            raise ValueError(f"{name}: betas must be two numbers in [0, 1), not {group['betas']}")
        if not group['eps'] >= 0:
            raise ValueError(f"{name}: eps must be >= 0, not {group['eps']}")
        if not group['weight_decay'] >= 0:
            raise ValueError(f"{name}: weight_decay must be >= 0, not {group['weight_decay']}")

    def update(self, p, g, state, group):
        xp = backend.array_module(p)
        lr, (beta1, beta2), eps, weight_decay = group['lr'], group['betas'], group['eps'], group['weight_decay']
        if weight_decay and self.decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        if 'exp_avg' not in state:
            state['exp_avg'], state['exp_avg_sq'] = xp.zeros_like(p), xp.zeros_like(p)
        m = state['exp_avg'] = beta1 * state['exp_avg'] + (1 - beta1) * g
        v = state['exp_avg_sq'] = beta2 * state['exp_avg_sq'] + (1 - beta2) * (g * g)
        t = state['step']
        m_hat = m / (1 - beta1 ** t)
        v_hat = v / (1 - beta2 ** t)
        return p - lr * m_hat / (xp.sqrt(v_hat) + eps)


class AdamW(Adam):
    """Adam with decoupled weight decay: before the Adam step, p = p * (1 - lr * weight_decay).

    In plain Adam an L2 term in g is divided by sqrt(v_hat), so parameters with large
    gradients are barely decayed; AdamW shrinks every weight by the same factor.
    """
    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
