"""microtensor.nn: modules, layers and their helpers (PyTorch-style, kept small).

    module.py       Module: registration, parameters(), state_dict(), to(), train()/eval()
    parameter.py    Parameter: a tensor a Module trains
    linear.py       Linear: y = x @ W^T + b, W of shape (out, in) as in PyTorch
    containers.py   Sequential, ModuleList, ModuleDict
    dropout.py      Dropout        activations.py  ReLU, Tanh, Sigmoid, GELU, SiLU, Softplus, ELU, ...
    loss.py         CrossEntropyLoss, NLLLoss (PyTorch's layout), MSELoss, L1Loss, BCELoss, ...
    norm.py         LayerNorm, RMSNorm     embedding.py    Embedding
    reshape.py      Identity, Flatten, Unflatten
    conv.py         Conv1d, Conv2d, Conv3d, MaxPool2d, AvgPool2d, AvgPool3d
    init.py         uniform_, normal_, xavier_*, kaiming_*, zeros_, ones_
    utils.py        clip_grad_norm_
    functional.py   torch.nn.functional's names (F.cross_entropy in PyTorch's (N, C, ...) layout)
"""
from . import functional, init, utils
from .activations import (CELU, ELU, GELU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                          LogSoftmax, Mish, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Softsign, Tanh)
from .containers import ModuleDict, ModuleList, Sequential
from .conv import AvgPool2d, AvgPool3d, Conv1d, Conv2d, Conv3d, MaxPool2d
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)
from .module import Module
from .norm import LayerNorm, RMSNorm
from .reshape import Flatten, Identity, Unflatten
from .parameter import Parameter
