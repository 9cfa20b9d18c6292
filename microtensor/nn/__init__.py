"""microtensor.nn: modules, layers and their helpers (PyTorch-style, kept small).

    module.py       Module: registration, parameters(), state_dict(), to(), train()/eval()
    parameter.py    Parameter: a tensor a Module trains
    linear.py       Linear: y = x @ W^T + b, W of shape (out, in) as in PyTorch
    containers.py   Sequential, ModuleList, ModuleDict
    dropout.py      Dropout        activations.py  ReLU, Tanh, Sigmoid, GELU, SiLU
    loss.py         CrossEntropyLoss, NLLLoss (PyTorch's layout)
    norm.py         LayerNorm, RMSNorm     embedding.py    Embedding
    init.py         uniform_, normal_, xavier_*, kaiming_*, zeros_, ones_
    utils.py        clip_grad_norm_
    functional.py   torch.nn.functional's names (F.cross_entropy in PyTorch's (N, C, ...) layout)
"""
from . import functional, init, utils
from .activations import GELU, ReLU, Sigmoid, SiLU, Tanh
from .containers import ModuleDict, ModuleList, Sequential
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .loss import CrossEntropyLoss, NLLLoss
from .module import Module
from .norm import LayerNorm, RMSNorm
from .parameter import Parameter
