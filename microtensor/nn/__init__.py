"""microtensor.nn: modules, layers and their helpers (PyTorch-style, kept small)."""
from .linear import Linear
from .module import Module
from .parameter import Parameter
