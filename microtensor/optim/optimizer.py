"""Optimizer: the base of SGD, Adam and AdamW.

An optimizer holds the parameters in `param_groups` (lists of parameters that share
hyper-parameters, e.g. one group without weight decay for biases) and, for each
parameter, a small `state` dict (momentum buffers, Adam's moments, its step count).

    opt = optim.AdamW(model.parameters(), lr=3e-4)
    loss.backward()
    opt.step()          # p <- p - lr * update(p.grad), for every parameter with a gradient
    opt.zero_grad()

An update assigns a new array to p.data: the parameter stays the same object (the
model and the optimizer keep their references) and gradient arrays are only read.
State arrays are created on the parameter's device at the first step, and follow
the parameter if model.to(device) moves it later.
"""
from .. import backend
from ..tensor import Tensor


class Optimizer:
    def __init__(self, params, defaults):
        if isinstance(params, Tensor) or isinstance(params, dict):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of tensors (e.g. "
                            f"model.parameters()) or of dicts, not a single {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list "
                             "(does the model register its layers as attributes?)")
        if not isinstance(groups[0], dict):
            groups = [{'params': groups}]
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}  # id(parameter) -> {'step': int, name: array}
        seen = set()
        for group in groups:
            group = {**self.defaults, **group}
            group['params'] = [group['params']] if isinstance(group['params'], Tensor) else list(group['params'])
            for i, p in enumerate(group['params']):
                self._check_parameter(p, i, seen)
                seen.add(id(p))
            self._check_hyperparameters(group)
            self.param_groups.append(group)

    def _check_parameter(self, p, i, seen):
        where = f"{type(self).__name__}: parameter {i}"
        if not isinstance(p, Tensor):
            raise TypeError(f"{where} is a {type(p).__name__}, not a Tensor")
        if id(p) in seen:
            raise ValueError(f"{where} (shape {p.shape}) appears more than once; "
                             "each parameter may be given once (shared weights are one parameter)")
        if not p.is_leaf:
            raise ValueError(f"{where} (shape {p.shape}) is not a leaf tensor (it was computed by "
                             f"{type(p.creator).__name__}); optimize the tensors it came from")
        if not backend.float_dtype(p.dtype):
            raise TypeError(f"{where} has dtype {p.dtype}; only floating-point tensors can be trained")

    def _check_hyperparameters(self, group):
        """Each optimizer checks its own; every one has a learning rate."""
        if not group['lr'] >= 0:
            raise ValueError(f"{type(self).__name__}: learning rate must be >= 0, not {group['lr']}")

    # ------------------------------------------------------------------ the learning rate
    @property
    def lr(self):
        """The learning rate (of the first group); schedules set it before each step."""
        return self.param_groups[0]['lr']

    @lr.setter
    def lr(self, value):
        if not value >= 0:
            raise ValueError(f"{type(self).__name__}: learning rate must be >= 0, not {value}")
        for group in self.param_groups:
            group['lr'] = value

    # ------------------------------------------------------------------ one step
    def step(self):
        """Update every parameter that has a gradient."""
        for group in self.param_groups:
            for p in group['params']:
                if p.grad is None:
                    continue
                if p.grad.shape != p.shape or p.grad.device != p.device:
                    raise RuntimeError(f"{type(self).__name__}: gradient of shape {p.grad.shape} on "
                                       f"{p.grad.device} for a parameter of shape {p.shape} on {p.device}")
                state = self._state_of(p)
                state['step'] += 1
                p.data = self.update(p.data, p.grad.data, state, group).astype(p.dtype, copy=False)

    def update(self, p, g, state, group):
        """The new value of parameter array p given its gradient array g (never modified)."""
        raise NotImplementedError

    def _state_of(self, p):
        """p's state, created at its first step; arrays follow p to its current device."""
        state = self.state.setdefault(id(p), {'step': 0})
        for name, value in state.items():
            if backend.is_array(value) and backend.device_of(value) != p.device:
                state[name] = backend.to_device(value, p.device)
        return state

    def zero_grad(self):
        """Set every parameter's .grad to None, before the next backward()."""
        for group in self.param_groups:
            for p in group['params']:
                p.grad = None

    # ------------------------------------------------------------------ checkpoints
    def _parameters(self):
        return [p for group in self.param_groups for p in group['params']]

    def state_dict(self):
        """{'state': {index: {'step': n, name: Tensor}}, 'param_groups': [hyper-parameters, 'params': indices]}.

        Parameters are named by their position (0, 1, ...) across the groups, so the state
        loads into a fresh optimizer built over the same model.
        """
        state = {}
        for i, p in enumerate(self._parameters()):
            if id(p) in self.state:
                state[i] = {name: Tensor._wrap(value) if backend.is_array(value) else value
                            for name, value in self.state[id(p)].items()}
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group['params'])
            groups.append({**{k: v for k, v in group.items() if k != 'params'},
                           'params': list(range(start, start + n))})
            start += n
        return {'state': state, 'param_groups': groups}

    def load_state_dict(self, state_dict):
        """Restore hyper-parameters and state saved by state_dict(); arrays are copied onto
        each parameter's device.  Checked first: a mismatch raises and changes nothing."""
        name = type(self).__name__
        params = self._parameters()
        groups = state_dict['param_groups']
        if [len(g['params']) for g in groups] != [len(g['params']) for g in self.param_groups]:
            raise ValueError(f"{name}.load_state_dict: the saved groups hold "
                             f"{[len(g['params']) for g in groups]} parameters, this optimizer's "
                             f"{[len(g['params']) for g in self.param_groups]}")
        new_state = {}
        for key, saved in state_dict['state'].items():
            i = int(key)
            if not 0 <= i < len(params):
                raise ValueError(f"{name}.load_state_dict: state for parameter {i}, but there are {len(params)}")
            p, entry = params[i], {}
            for field, value in saved.items():
                array = value.data if isinstance(value, Tensor) else value
                if backend.is_array(array):
                    if tuple(array.shape) != p.shape:
                        raise ValueError(f"{name}.load_state_dict: {field!r} of parameter {i} has shape "
                                         f"{tuple(array.shape)}, the parameter {p.shape}")
                    value = backend.to_device(array, p.device).astype(p.dtype, copy=True)
                entry[field] = value
            new_state[id(p)] = entry
        hypers = [{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k != 'params'}
                  for saved in groups]
        for group, hyper in zip(self.param_groups, hypers):
            self._check_hyperparameters({**group, **hyper})
        for group, hyper in zip(self.param_groups, hypers):
            group.update(hyper)
        self.state = new_state

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for i, group in enumerate(self.param_groups):
            hyper = ', '.join(f"{k}={v}" for k, v in group.items() if k != 'params')
            lines.append(f"  group {i}: {len(group['params'])} parameters, {hyper}")
        return '\n'.join(lines) + '\n)'
