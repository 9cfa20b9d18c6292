"""nn.Module: the base of every layer and model.

Assigning a Parameter, a Module or a buffer to an attribute registers it:

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(2, 16)        # a sub-module: its parameters are ours too
            self.register_buffer('steps', mt.zeros(()))   # saved in state_dict, not trained

Registration order is the assignment order, so parameters(), state_dict() and the
optimizer all see the same deterministic order.
"""
from .. import backend
from ..tensor import Tensor
from .parameter import Parameter


class Module:
    def __init__(self):
        object.__setattr__(self, '_parameters', {})
        object.__setattr__(self, '_buffers', {})
        object.__setattr__(self, '_modules', {})
        object.__setattr__(self, 'training', True)

    def __setattr__(self, name, value):
        if '_parameters' not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif name in self._buffers_declared():
            self._buffers[name] = value
        object.__setattr__(self, name, value)

    def _buffers_declared(self):
        return self.__dict__.get('_buffer_names', ())

    def register_buffer(self, name, tensor):
        """Non-trainable state (e.g. running statistics): moved by to(), saved in state_dict."""
        if '_buffer_names' not in self.__dict__:
            object.__setattr__(self, '_buffer_names', set())
        self._buffer_names.add(name)
        setattr(self, name, tensor)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ walking the tree
    def named_modules(self, prefix=''):
        """(dotted name, module) for this module and every sub-module, depth first."""
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return [m for _, m in self.named_modules()]

    def children(self):
        return [m for m in self._modules.values() if m is not None]

    def named_parameters(self):
        """(dotted name, parameter) pairs in registration order; a shared parameter appears once."""
        seen = set()
        for prefix, module in self.named_modules():
            for name, p in module._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{prefix}.{name}" if prefix else name), p

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def named_buffers(self):
        for prefix, module in self.named_modules():
            for name, b in module._buffers.items():
                if b is not None:
                    yield (f"{prefix}.{name}" if prefix else name), b

    def num_parameters(self):
        return sum(p.size for p in self.parameters())

    # ------------------------------------------------------------------ training state
    def zero_grad(self):
        for p in self.parameters():
            p.grad = None

    def train(self, mode=True):
        """Set the `training` flag that dropout and batch norm read, on every sub-module."""
        for m in self.modules():
            object.__setattr__(m, 'training', mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, device):
        """Move every parameter and buffer to `device`, in place (optimizers keep their references)."""
        device = backend.check_device(device)
        for _, t in list(self.named_parameters()) + list(self.named_buffers()):
            t.data = backend.to_device(t.data, device)
            if t.grad is not None:
                t.grad = Tensor._wrap(backend.to_device(t.grad.data, device))
        return self

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self):
        """{dotted name: Tensor} of parameters and buffers (the tensors themselves, not copies)."""
        state = dict(self.named_parameters())
        state.update(self.named_buffers())
        return state

    def load_state_dict(self, state, strict=True):
        """Copy values from `state` into this module's parameters and buffers."""
        own = self.state_dict()
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for key, target in own.items():
            if key not in state:
                continue
            value = state[key]
            array = value.data if isinstance(value, Tensor) else value
            if tuple(array.shape) != target.shape:
                raise ValueError(f"load_state_dict: {key!r} has shape {tuple(array.shape)} in the state "
                                 f"but {target.shape} in the model")
            target.data = backend.to_device(array, target.device).astype(target.dtype, copy=True)
        return self

    # ------------------------------------------------------------------ printing
    def extra_repr(self):
        return ''

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, child in self._modules.items():
            child_repr = repr(child).replace('\n', '\n  ')
            lines.append(f"  ({name}): {child_repr}")
        if len(lines) == 1:
            return lines[0] + ')'
        own = sum(p.size for p in self.parameters())
        return '\n'.join(lines) + f"\n)  # {own:,} parameters"
