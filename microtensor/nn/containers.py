"""nn.Sequential and nn.ModuleList: modules that hold other modules.

Children are registered under the names '0', '1', ..., so their parameters get
dotted names like '0.weight' and '2.bias' in state_dict().
"""
from .. import argcheck
from ..tensor import Tensor
from .module import Module


class ModuleList(Module):
    """A list of modules whose parameters belong to the parent (a plain Python list would hide them).

        self.layers = nn.ModuleList([EncoderLayer(...) for _ in range(n_layers)])
        for layer in self.layers:
            x = layer(x)
    """

    def __init__(self, modules=()):
        super().__init__()
        self.extend(modules)

    def append(self, module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: can only hold Modules, not {type(module).__name__}")
        setattr(self, str(len(self._modules)), module)
        return self

    def extend(self, modules):
        where = type(self).__name__
        if isinstance(modules, (Module, Tensor, str)) or not hasattr(modules, '__iter__'):
            raise TypeError(f"{where}: modules must be an iterable of Modules (a list, a generator), "
                            f"not {argcheck.describe(modules)}")
        modules = list(modules)
        for i, module in enumerate(modules):  # all checked before any is added
            if not isinstance(module, Module):
                raise TypeError(f"{where}: modules[{i}] is {argcheck.describe(module)}, not a Module")
        for module in modules:
            self.append(module)
        return self

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)().extend(list(self._modules.values())[index])
        index = argcheck.integer(index, type(self).__name__, 'index')  # a list's rule: 0.5, '0' and True are refused
        if not -len(self) <= index < len(self):
            raise IndexError(f"{type(self).__name__}: index {index} out of range for {len(self)} modules")
        return self._modules[str(index % len(self))]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(): iterate over it and call each module")


class Sequential(ModuleList):
    """Calls its modules one after the other: Sequential(f, g, h)(x) == h(g(f(x)))."""

    def __init__(self, *modules):
        super().__init__(modules)

    def forward(self, x):
        for module in self:
            x = module(x)
        return x
