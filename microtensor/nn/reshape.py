"""Modules that pass a tensor on, or only change its shape: nn.Identity, nn.Flatten, nn.Unflatten
(for nn.Sequential: a classifier's features flattened, a placeholder layer)."""
from .. import argcheck
from .module import Module


class Identity(Module):
    """y = x (its arguments, as PyTorch's, are accepted and ignored: a placeholder for a layer)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Module):
    """x.flatten(start_dim, end_dim): dims start_dim..end_dim as one (by default all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = argcheck.integer(start_dim, 'Flatten', 'start_dim')
        self.end_dim = argcheck.integer(end_dim, 'Flatten', 'end_dim')

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """x.unflatten(dim, unflattened_size): dim split into the sizes (their product is its size)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = argcheck.integer(dim, 'Unflatten', 'dim')
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple or list of sizes, not "
                            f"{argcheck.describe(unflattened_size)}")
        self.unflattened_size = tuple(argcheck.integer(n, 'Unflatten', 'each size in unflattened_size', min=-1)
                                      for n in unflattened_size)

    def forward(self, x):
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
