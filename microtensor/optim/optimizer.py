"""Optimizer: the base of SGD, Adam and AdamW.

An optimizer holds the parameters in `param_groups` (lists of parameters that share
hyper-parameters, e.g. one group without weight decay for biases) and, for each
parameter, a small `state` dict (momentum buffers, Adam's moments, its step count).

    opt = optim.AdamW(model.parameters(), lr=3e-4)
    loss.backward()
    opt.step()          # p <- p - lr * update(p.grad), for every parameter with a gradient
    opt.zero_grad()

An update writes the new values into p's own memory (p.data, in place), as PyTorch's
optimizers do: the parameter and its array stay the same objects, so the model and the
optimizer keep their references, a tensor made with mt.from_numpy keeps sharing its array,
and model.state_dict()'s tensors (which share memory with the parameters) show the new
values.  Gradient arrays are only read.  A step counts as an in-place change of p (its
version goes up, as in PyTorch), so a graph recorded before the step cannot be
back-propagated after it: that backward would mix the new weights with activations
computed from the old ones.
State arrays are created on the parameter's device at the first step, and follow
the parameter if model.to(device) moves it later.
"""
from .. import argcheck, backend
from ..nn.utils import clear_grads
from ..tensor import Tensor


class Optimizer:
    # names of the per-parameter arrays update() keeps in `state` (load_state_dict checks them)
    state_fields = ()

    def __init__(self, params, defaults):
        name = type(self).__name__
        if isinstance(params, (Tensor, dict)) or not hasattr(params, '__iter__'):
            raise TypeError(f"{name}: params must be an iterable of tensors (e.g. model.parameters()) "
                            f"or of dicts, not {argcheck.describe(params)}")
        groups = list(params)
        if not groups:
            raise ValueError(f"{name}: got an empty parameter list "
                             "(does the model register its layers as attributes?)")
        if not isinstance(groups[0], dict):
            groups = [{'params': groups}]
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}  # id(parameter) -> {'step': int, name: array}
        seen = set()
        for group in groups:
            if not isinstance(group, dict) or 'params' not in group:
                raise TypeError(f"{name}: give either tensors or dicts with a 'params' entry, not a mix "
                                f"(got {argcheck.describe(group)})")
            group = {**self.defaults, **group}
            group['params'] = [group['params']] if isinstance(group['params'], Tensor) else list(group['params'])
            for i, p in enumerate(group['params']):
                self._check_parameter(p, i, seen)
                seen.add(id(p))
            self.param_groups.append(self._check_hyperparameters(group))

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

    def _check_hyperparameters(self, group, where=None):
        """`group` with its hyper-parameters checked and made plain Python numbers; returned.
        Each optimizer checks its own; every one has a learning rate.  Errors begin with `where`
        (by default the optimizer's name)."""
        where = where or type(self).__name__
        group['lr'] = argcheck.number(group['lr'], where, 'lr', min=0)
        if 'initial_lr' in group:  # the base lr a schedule scales (optim/schedules.py)
            group['initial_lr'] = argcheck.number(group['initial_lr'], where, 'initial_lr', min=0)
        return group

    def _checked_groups_for_step(self):
        """Every group's hyper-parameters, checked before any parameter moves: param_groups is a
        plain list of dicts that anyone may edit (opt.param_groups[1]['lr'] = ...), so a value that
        is not a number is named here, with its group and key, not deep inside an update."""
        name = type(self).__name__
        checked = []
        for i, group in enumerate(self.param_groups):
            where = f"{name}.step: param_groups[{i}]"
            missing = sorted(set(self.defaults) - set(group))
            if missing:
                raise ValueError(f"{where} has no {missing[0]!r} (it was deleted?); set it again, e.g. "
                               f"opt.param_groups[{i}][{missing[0]!r}] = {self.defaults[missing[0]]!r}")
            checked.append(self._check_hyperparameters(dict(group), where))
        return checked

    # ------------------------------------------------------------------ the learning rate
    @property
    def lr(self):
        """The learning rate of the first group; setting it sets every group's (a schedule sets
        each group's own, see schedules.py)."""
        return self.param_groups[0]['lr']

    @lr.setter
    def lr(self, value):
        value = argcheck.number(value, type(self).__name__, 'lr', min=0)
        for group in self.param_groups:
            group['lr'] = value

    # ------------------------------------------------------------------ one step
    def step(self):
        """Update every parameter that has a gradient."""
        for group, checked in zip(self.param_groups, self._checked_groups_for_step()):
            group.update(checked)
        for group in self.param_groups:
            stepped = []
            for p in group['params']:
                if p.grad is None:
                    continue
                if p.grad.shape != p.shape or p.grad.device != p.device:
                    raise RuntimeError(f"{type(self).__name__}: gradient of shape {p.grad.shape} on "
                                       f"{p.grad.device} for a parameter of shape {p.shape} on {p.device}")
                state = self._state_of(p)
                state['step'] += 1
                stepped.append((p, state))
            self.update_all(stepped, group)
            for p, _ in stepped:
                p._version[0] += 1  # a pending backward that saved p (or a view of it) will refuse to run

    def update(self, p, g, state, group):
        """Write the new value of parameter array p into p itself (p -= lr * ...), given its gradient
        array g (never modified)."""
        raise NotImplementedError

    def update_all(self, stepped, group):
        """update() each (parameter, state) of `stepped`, the parameters of `group` that have a
        gradient.  (Adam's fused layer updates them all in one pass instead.)"""
        for p, state in stepped:
            self.update(p.data, p.grad.data, state, group)

    def _state_of(self, p):
        """p's state, created at its first step; arrays follow p to its current device."""
        state = self.state.setdefault(id(p), {'step': 0})
        for name, value in state.items():
            if backend.is_array(value) and backend.device_of(value) != p.device:
                state[name] = backend.to_device(value, p.device)
        return state

    def zero_grad(self, set_to_none=True):
        """Set every parameter's .grad to None, before the next backward() (or, with set_to_none=False,
        fill it with zeros, as PyTorch does)."""
        clear_grads(self._parameters(), set_to_none, f"{type(self).__name__}.zero_grad")

    # ------------------------------------------------------------------ checkpoints
    def _parameters(self):
        return [p for group in self.param_groups for p in group['params']]

    def state_dict(self):
        """{'optimizer': class name, 'state': {index: {'step': n, name: Tensor}},
        'param_groups': [hyper-parameters, 'params': indices]}.  The Tensors are copies: the
        optimizer updates its own arrays in place, and a saved state must not move with them.

        Parameters are named by their position (0, 1, ...) across the groups, so the state
        loads into a fresh optimizer of the same class built over the same model.
        """
        state = {}
        for i, p in enumerate(self._parameters()):
            if id(p) in self.state:
                state[i] = {name: Tensor._wrap(value.copy()) if backend.is_array(value) else value
                            for name, value in self.state[id(p)].items()}
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group['params'])
            groups.append({**{k: v for k, v in group.items() if k != 'params'},
                           'params': list(range(start, start + n))})
            start += n
        return {'optimizer': type(self).__name__, 'state': state, 'param_groups': groups}

    def load_state_dict(self, state_dict):
        """Restore hyper-parameters and state saved by state_dict() of the same optimizer class;
        arrays are copied onto each parameter's device.  Everything is checked first: anything
        that does not fit raises and changes nothing."""
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise TypeError(f"{where}: expected the dict made by state_dict(), not {argcheck.describe(state_dict)}")
        missing = [k for k in ('optimizer', 'state', 'param_groups') if k not in state_dict]
        if missing:
            raise ValueError(f"{where}: the dict lacks {missing}; pass what state_dict() returned")
        if state_dict['optimizer'] != type(self).__name__:
            raise ValueError(f"{where}: the state was saved by {state_dict['optimizer']!r}; it only fits a "
                             f"{type(self).__name__} (the hyper-parameters and buffers differ between optimizers)")
        hypers = self._checked_groups(where, state_dict['param_groups'])
        new_state = self._checked_state(where, state_dict['state'])
        for group, hyper in zip(self.param_groups, hypers):
            group.update(hyper)
        self.state = new_state

    def _checked_groups(self, where, saved_groups):
        """The saved groups' hyper-parameters, checked against this optimizer's groups."""
        if not isinstance(saved_groups, (list, tuple)) or not all(
                isinstance(g, dict) and isinstance(g.get('params'), (list, tuple)) for g in saved_groups):
            raise ValueError(f"{where}: 'param_groups' must be a list of dicts with 'params' lists, "
                             f"not {argcheck.describe(saved_groups)}")
        if [len(g['params']) for g in saved_groups] != [len(g['params']) for g in self.param_groups]:
            raise ValueError(f"{where}: the saved groups hold {[len(g['params']) for g in saved_groups]} "
                             f"parameters, this optimizer's {[len(g['params']) for g in self.param_groups]}")
        hypers, start = [], 0
        for saved, group in zip(saved_groups, self.param_groups):
            expected = list(range(start, start + len(group['params'])))
            start += len(group['params'])
            if list(saved['params']) != expected:
                raise ValueError(f"{where}: a saved group holds parameters {list(saved['params'])}, "
                                 f"expected {expected}")
            hyper = {k: list(v) if isinstance(v, tuple) else v for k, v in saved.items() if k != 'params'}
            if 'initial_lr' in group:  # a scheduler's base lr stays when the saved group has none
                hyper.setdefault('initial_lr', group['initial_lr'])
            own = sorted(k for k in group if k not in ('params', 'initial_lr'))
            if sorted(k for k in hyper if k != 'initial_lr') != own:
                raise ValueError(f"{where}: the saved hyper-parameters are {sorted(hyper)}, "
                                 f"{type(self).__name__}'s are {own}")
            try:
                hypers.append(self._check_hyperparameters(hyper))
            except (ValueError, TypeError) as error:
                raise type(error)(f"{where}: a saved hyper-parameter is invalid ({error})") from None
        return hypers

    def _checked_state(self, where, saved_state):
        """{id(parameter): state entry} from the saved state, each array checked and copied."""
        if not isinstance(saved_state, dict):
            raise ValueError(f"{where}: 'state' must be a dict, not {argcheck.describe(saved_state)}")
        params, new_state = self._parameters(), {}
        for key, saved in saved_state.items():
            i = int(key) if isinstance(key, str) and key.isdigit() else key
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(params):
                raise ValueError(f"{where}: state for parameter {key!r}, but there are {len(params)} (0 .. "
                                 f"{len(params) - 1})")
            if not isinstance(saved, dict) or 'step' not in saved:
                raise ValueError(f"{where}: the state of parameter {i} must be a dict with a 'step' count")
            p, entry = params[i], {'step': argcheck.integer(saved['step'], where, f"parameter {i}'s step", min=0)}
            fields = sorted(k for k in saved if k != 'step')
            if fields and fields != sorted(self.state_fields):
                raise ValueError(f"{where}: the state of parameter {i} holds {fields}; "
                                 f"{type(self).__name__} keeps {sorted(self.state_fields)} (all of them or none)")
            for field in fields:
                array = saved[field].data if isinstance(saved[field], Tensor) else saved[field]
                if not backend.is_array(array) or array.dtype.kind not in 'fiu':
                    raise ValueError(f"{where}: {field!r} of parameter {i} must be a tensor or an array of "
                                     f"numbers, not {argcheck.describe(saved[field])}")
                if tuple(array.shape) != p.shape:
                    raise ValueError(f"{where}: {field!r} of parameter {i} has shape "
                                     f"{tuple(array.shape)}, the parameter {p.shape}")
                entry[field] = backend.to_device(array, p.device).astype(p.dtype, copy=True)
            new_state[id(p)] = entry
        return new_state

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for i, group in enumerate(self.param_groups):
            hyper = ', '.join(f"{k}={v}" for k, v in group.items() if k != 'params')
            lines.append(f"  group {i}: {len(group['params'])} parameters, {hyper}")
        return '\n'.join(lines) + '\n)'
