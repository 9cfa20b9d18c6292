"""nn.Sequential, nn.ModuleList and nn.ModuleDict: modules that hold other modules.

A list's children are registered under the names '0', '1', ..., a dict's under its keys, so
their parameters get dotted names like '0.weight' and 'wte.weight' in state_dict().
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


class ModuleDict(Module):
    """Modules by name, whose parameters belong to the parent (as nanoGPT's `transformer` of wte, wpe, h, ln_f):

        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, d), h=nn.ModuleList([...])))
        x = self.transformer.wte(ids)          # or self.transformer['wte'](ids)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules):
        where = type(self).__name__
        if hasattr(modules, 'items'):
            pairs = list(modules.items())
        elif isinstance(modules, (Module, Tensor, str)) or not hasattr(modules, '__iter__'):
            raise TypeError(f"{where}: modules must be a dict of name: Module (or (name, Module) pairs), "
                            f"not {argcheck.describe(modules)}")
        else:
            pairs = list(modules)
        for i, pair in enumerate(pairs):  # all checked before any is added
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise TypeError(f"{where}: modules[{i}] is {argcheck.describe(pair)}, not a (name, Module) pair")
            if not isinstance(pair[1], Module):
                raise TypeError(f"{where}: modules[{pair[0]!r}] is {argcheck.describe(pair[1])}, not a Module")
        for name, module in pairs:
            self[name] = module

    def __setitem__(self, name, module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: can only hold Modules, not {argcheck.describe(module)}")
        setattr(self, name, module)

    def __getitem__(self, name):
        if name not in self._modules:
            raise KeyError(f"{type(self).__name__} has no module {name!r}; it has {list(self._modules)}")
        return self._modules[name]

    def __delitem__(self, name):
        self[name]  # (the KeyError above, for a name it lacks)
        delattr(self, name)

    def __contains__(self, name):
        return name in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(): call the module you need, e.g. d['name'](x)")
