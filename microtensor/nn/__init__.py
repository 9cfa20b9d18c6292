"""microtensor.nn: modules, layers and their helpers (PyTorch-style, kept small).

    module.py       Module: registration, parameters(), state_dict(), to(), train()/eval()
    parameter.py    Parameter: a tensor a Module trains
    linear.py       Linear: y = x @ W + b, W of shape (in, out)
    containers.py   Sequential, ModuleList, ModuleDict
    dropout.py      Dropout        activations.py  ReLU, Tanh, Sigmoid, GELU
    init.py         uniform_, normal_, xavier_*, kaiming_*, zeros_, ones_
    utils.py        clip_grad_norm_
"""
from . import init, utils
from .activations import GELU, ReLU, Sigmoid, Tanh
from .containers import ModuleDict, ModuleList, Sequential
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .parameter import Parameter
