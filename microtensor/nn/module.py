"""nn.Module: the base of every layer and model.

Assigning a Parameter, a Module or a buffer to an attribute registers it:

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(2, 16)        # a sub-module: its parameters are ours too
            self.register_buffer('steps', mt.zeros(()))   # saved in state_dict, not trained

Registration order is the assignment order, so parameters(), state_dict() and the
optimizer all see the same deterministic order, with dotted names ('fc1.weight').
"""
from collections import namedtuple

from .. import argcheck, backend, contract, convert
from ..tensor import Tensor
from .parameter import Parameter
from .utils import clear_grads

LoadResult = namedtuple('LoadResult', ['missing_keys', 'unexpected_keys'])


class Module:
    def __init__(self):
        object.__setattr__(self, '_parameters', {})
        object.__setattr__(self, '_buffers', {})
        object.__setattr__(self, '_non_persistent', set())  # buffer names state_dict leaves out
        object.__setattr__(self, '_modules', {})
        object.__setattr__(self, '_forward_hooks', [])
        object.__setattr__(self, 'training', True)

    def __setattr__(self, name, value):
        if '_parameters' not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        if name in self._buffers:  # a registered buffer stays a buffer when reassigned
            self._check_buffer(name, value)
            self._buffers[name] = value
        else:
            self._parameters.pop(name, None)
            self._modules.pop(name, None)
            if isinstance(value, Parameter):
                self._parameters[name] = value
            elif isinstance(value, Module):
                self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent.discard(name)
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """Non-trainable state (e.g. running statistics): moved by to(), saved in state_dict unless
        persistent=False (a causal mask the model rebuilds, as nanoGPT's `bias`)."""
        self._check_buffer(name, tensor)
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self._buffers[name] = tensor
        if argcheck.boolean(persistent, f"{type(self).__name__}.register_buffer", 'persistent'):
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def _check_buffer(self, name, value):
        if value is not None and (not isinstance(value, Tensor) or isinstance(value, Parameter)):
            raise TypeError(f"{type(self).__name__}: buffer {name!r} must be a Tensor (not a Parameter) "
                            f"or None, not {type(value).__name__}")

    def forward(self, *args, **kwargs):
        """The module's computation; model(x) calls it (then the forward hooks). Subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        out = self.forward(*args, **kwargs)
        for hook in self._forward_hooks:
            result = hook(self, args, out)
            if result is not None:
                out = self._check_hook_result(hook, out, result)
        return out

    def _check_hook_result(self, hook, out, result):
        """A forward hook's replacement output: like the output (a Tensor of its shape for a Tensor, a
        tuple as long for a tuple); else an error naming the hook and what it returned."""
        if isinstance(out, Tensor):
            fits, wanted = isinstance(result, Tensor) and result.shape == out.shape, f"an output of shape {out.shape}"
        elif isinstance(out, tuple):
            fits, wanted = isinstance(result, tuple) and len(result) == len(out), f"an output tuple of {len(out)}"
        else:
            fits = True
        if not fits:
            got = f"a Tensor of shape {result.shape}" if isinstance(result, Tensor) else contract.describe(result)
            raise TypeError(f"{type(self).__name__}: the forward hook {contract.name(hook)} returned {got} for "
                            f"{wanted}; a forward hook returns None (keep the output) or a replacement like it")
        return result

    def register_forward_hook(self, hook):
        """Call hook(module, inputs, output) after each forward; a returned value (a Tensor of the
        output's shape, or a tuple as long) replaces output.
        Probes use this to record activations without touching the model's code."""
        self._forward_hooks.append(hook)
        return _HookHandle(self._forward_hooks, hook)

    # ------------------------------------------------------------------ walking the tree
    def named_modules(self, prefix=''):
        """(dotted name, module) for this module and every sub-module, depth first;
        a module used twice appears once."""
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{n}" if name else n, m) for n, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        """This module and every sub-module, depth first."""
        return [m for _, m in self.named_modules()]

    def named_children(self):
        """(attribute name, module) for each direct sub-module."""
        return [(n, m) for n, m in self._modules.items() if m is not None]

    def children(self):
        """The direct sub-modules."""
        return [m for _, m in self.named_children()]

    def named_parameters(self):
        """(dotted name, parameter) pairs in registration order; a shared parameter appears once."""
        return self._named_tensors('_parameters')

    def parameters(self):
        """Every parameter of this module and its sub-modules (what an optimizer gets)."""
        return [p for _, p in self.named_parameters()]

    def named_buffers(self):
        """(dotted name, buffer) pairs in registration order."""
        return self._named_tensors('_buffers')

    def buffers(self):
        """Every buffer (non-trainable state) of this module and its sub-modules."""
        return [b for _, b in self.named_buffers()]

    def _named_tensors(self, table, persistent_only=False, every_name=False):
        """(dotted name, tensor) of `table` over every module; a tensor held twice (tied weights) once,
        under its first name, unless every_name."""
        seen, out = set(), []
        for prefix, module in self.named_modules():
            for name, t in getattr(module, table).items():
                if persistent_only and name in module._non_persistent:
                    continue
                if t is not None and (every_name or id(t) not in seen):
                    seen.add(id(t))
                    out.append((f"{prefix}.{name}" if prefix else name, t))
        return out

    def num_parameters(self, trainable_only=False):
        """The number of parameter elements (only the trainable ones with trainable_only=True)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    # ------------------------------------------------------------------ training state
    def zero_grad(self, set_to_none=True):
        """Set every parameter's .grad to None (or, with set_to_none=False, fill it with zeros)."""
        clear_grads(self.parameters(), set_to_none, f"{type(self).__name__}.zero_grad")

    def apply(self, fn):
        """fn(module) on every sub-module, then on this one (children first, as PyTorch's apply, which
        nanoGPT's self.apply(self._init_weights) uses); returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def train(self, mode=True):
        """Set the `training` flag that dropout and batch norm read, on every sub-module."""
        for m in self.modules():
            object.__setattr__(m, 'training', bool(mode))
        return self

    def eval(self):
        """Evaluation mode: train(False) (dropout off, batch norm uses its running statistics)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Freeze (False) or unfreeze every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def to(self, device=None, dtype=None):
        """Move every parameter and buffer to `device` and/or cast the floating-point ones to `dtype`,
        in place: the parameters stay the same objects, so an optimizer keeps its references
        (and moves its own state to the new device at its next step)."""
        where = f"{type(self).__name__}.to"
        device = None if device is None else backend.check_device(device, where)
        dtype = None if dtype is None else convert.check_dtype(dtype, where)
        if dtype is not None and not backend.float_dtype(dtype):
            raise TypeError(f"{type(self).__name__}.to: dtype must be a floating-point type, not {dtype}")

        def moved(array):
            if device is not None:
                array = backend.to_device(array, device)
            if dtype is not None and backend.float_dtype(array.dtype) and array.dtype != dtype:
                array = array.astype(dtype)
            return array

        for t in self.parameters() + self.buffers():
            new = moved(t.data)
            if new is not t.data:
                t.data = new
                t._version[0] += 1  # a graph recorded before the move holds the old values
            if t.grad is not None:
                t.grad = Tensor._wrap(moved(t.grad.data))
        return self

    def cpu(self):
        """Move everything to the CPU: to('cpu')."""
        return self.to('cpu')

    def cuda(self):
        """Move everything to the GPU: to('cuda')."""
        return self.to('cuda')

    def float(self):
        """Cast floating-point parameters and buffers to float32."""
        return self.to(dtype='float32')

    def double(self):
        """Cast floating-point parameters and buffers to float64."""
        return self.to(dtype='float64')

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self):
        """{dotted name: tensor} of parameters, then buffers (the persistent ones).

        The tensors are detached and share memory with the model (as in PyTorch);
        mt.save(model.state_dict(), path) writes them to disk.
        """
        return {name: t.detach() for name, t in self._state_tensors()}

    def _state_tensors(self):
        """(dotted name, tensor): the parameters, then the persistent buffers (what a checkpoint holds); a tied
        tensor under each of its names, as PyTorch's state_dict lists it (lm_head.weight and wte.weight)."""
        return self._named_tensors('_parameters', every_name=True) + self._named_tensors(
            '_buffers', persistent_only=True, every_name=True)

    def load_state_dict(self, state, strict=True):
        """Copy the values in `state` (tensors or arrays) into this module's parameters and buffers.

        Each value is copied into the parameter's own memory (on its device, cast to its dtype), as
        PyTorch does: the parameters stay the same objects over the same arrays.  Everything is
        checked before anything is copied: missing or unexpected keys (unless strict=False),
        values that are not arrays of numbers and shape mismatches raise a RuntimeError that
        lists them, and leave the model untouched.  A loaded tensor counts as changed in place
        (its version goes up), so a graph recorded before cannot be back-propagated after.
        Returns (missing_keys, unexpected_keys).
        """
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict):
            raise TypeError(f"{where}: expected a dict of {{name: tensor}} (from state_dict()), "
                            f"not {argcheck.describe(state)}")
        strict = argcheck.boolean(strict, where, 'strict')
        own = dict(self._state_tensors())
        loaded = {id(own[k]) for k in own if k in state}  # a tied tensor is loaded through any one of its names
        missing = [k for k in own if k not in state and id(own[k]) not in loaded]
        unexpected = [k for k in state if k not in own]
        problems = []
        if strict and missing:
            problems.append(f"missing keys (in the model, not in the state): {missing}")
        if strict and unexpected:
            problems.append(f"unexpected keys (in the state, not in the model): {unexpected}")
        arrays = {}
        for key, target in own.items():
            if key not in state:
                continue
            value = state[key]
            array = value.data if isinstance(value, Tensor) else backend.as_array(value)
            if not backend.is_array(array) or array.dtype.kind not in 'biuf':
                of_dtype = f" of {array.dtype}" if backend.is_array(array) else ''
                problems.append(f"{key!r}: expected a tensor or an array of numbers, got {type(value).__name__}{of_dtype}")
            elif tuple(array.shape) != target.shape:
                problems.append(f"size mismatch for {key!r}: shape {tuple(array.shape)} in the state, "
                                f"{target.shape} in the model")
            else:
                arrays[key] = array
        if problems:
            raise RuntimeError(f"{where}: nothing was loaded because of:\n  " + '\n  '.join(problems))
        for key, array in arrays.items():
            target = own[key]
            target.data[...] = backend.to_device(array, target.device)  # into its memory, as PyTorch's copy_
            target._version[0] += 1
        return LoadResult(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def extra_repr(self):
        """Extra text for this module's line in repr(model), e.g. 'd_model=64'; override it."""
        return ''

    def __repr__(self):
        """The module tree, one child per line, with parameter counts on containers:

        MLP(
          (fc1): Linear(in_features=2, out_features=16, bias=True)
          (fc2): Linear(in_features=16, out_features=2, bias=True)
        )  # 82 parameters
        """
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, child in self.named_children():
            child_repr = repr(child).replace('\n', '\n  ')
            lines.append(f"  ({name}): {child_repr}")
        if len(lines) == 1:
            return lines[0] + ')'
        return '\n'.join(lines) + f"\n)  # {self.num_parameters():,} parameters"


class _HookHandle:
    """Returned by register_forward_hook; handle.remove() takes the hook off again."""

    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def from_function(name, function, **defaults):
    """A Module class `name` whose forward is function(*inputs, **settings); the settings are the keyword
    arguments of its constructor, with these defaults (PyTorch's), and show in its repr."""
    def __init__(self, *args, **settings):
        Module.__init__(self)
        if len(args) > len(defaults):
            raise TypeError(f"{name}() takes at most {len(defaults)} settings ({', '.join(defaults)}), "
                            f"got {len(args)}")
        unknown = sorted(set(settings) - set(defaults))
        if unknown:
            raise TypeError(f"{name}() got unexpected settings {unknown}; its settings are {list(defaults)}")
        self.settings = {**defaults, **dict(zip(defaults, args)), **settings}
        for key, value in self.settings.items():
            setattr(self, key, value)

    def forward(self, *inputs):
        return function(*inputs, **self.settings)

    def extra_repr(self):
        return ', '.join(f"{k}={v!r}" for k, v in self.settings.items())

    doc = f"{function.__doc__.splitlines()[0]}  (F.{function.__name__}, settings {defaults or 'none'})"
    return type(name, (Module,), dict(__init__=__init__, forward=forward, extra_repr=extra_repr, __doc__=doc,
                                      __module__=__name__, __qualname__=name))
