"""SGD with momentum, Nesterov momentum and weight decay (PyTorch's formulas)."""
from .. import argcheck
from .optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent.

        g = grad + weight_decay * p                  (L2 penalty, folded into the gradient)
        b = momentum * b + g                         (b = g at the first step)
        update = g + momentum * b   if nesterov      (look ahead along the velocity)
                 b                  otherwise
        p = p - lr * update                          (with momentum=0: p = p - lr * g)
    """
    state_fields = ('momentum_buffer',)

    def __init__(self, params, lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False):  # PyTorch's default lr
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))

    def _check_hyperparameters(self, group, where=None):
        group = super()._check_hyperparameters(group, where)
        where = where or 'SGD'
        group['momentum'] = argcheck.number(group['momentum'], where, 'momentum', min=0, max=1, max_open=True)
        group['weight_decay'] = argcheck.number(group['weight_decay'], where, 'weight_decay', min=0)
        group['nesterov'] = argcheck.boolean(group['nesterov'], where, 'nesterov')
        if group['nesterov'] and group['momentum'] <= 0:
            raise ValueError(f"{where}: nesterov=True needs a momentum > 0")
        return group

    def update(self, p, g, state, group):
        momentum, weight_decay = group['momentum'], group['weight_decay']
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            b = state.get('momentum_buffer')
            b = g.copy() if b is None else momentum * b + g
            state['momentum_buffer'] = b
            g = g + momentum * b if group['nesterov'] else b
        p -= group['lr'] * g  # into the parameter's own memory
