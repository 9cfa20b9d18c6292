"""SGD with momentum, Nesterov momentum and weight decay (PyTorch's formulas)."""
from .optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent.

        g = grad + weight_decay * p                  (L2 penalty, folded into the gradient)
        b = momentum * b + g                         (b = g at the first step)
        update = g + momentum * b   if nesterov      (look ahead along the velocity)
                 b                  otherwise
        p = p - lr * update                          (with momentum=0: p = p - lr * g)
    """

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))

    def _check_hyperparameters(self, group):
        super()._check_hyperparameters(group)
        if not group['momentum'] >= 0:
            raise ValueError(f"SGD: momentum must be >= 0, not {group['momentum']}")
        if not group['weight_decay'] >= 0:
            raise ValueError(f"SGD: weight_decay must be >= 0, not {group['weight_decay']}")
        if group['nesterov'] and group['momentum'] <= 0:
            raise ValueError("SGD: nesterov=True needs a momentum > 0")

    def update(self, p, g, state, group):
        momentum, weight_decay = group['momentum'], group['weight_decay']
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            b = state.get('momentum_buffer')
            b = g.copy() if b is None else momentum * b + g
            state['momentum_buffer'] = b
            g = g + momentum * b if group['nesterov'] else b
        return p - group['lr'] * g
