"""microtensor.optim: optimizers and learning-rate schedules.

    optimizer.py   Optimizer: param groups, state, step(), zero_grad(), state_dict()
    sgd.py         SGD (momentum, Nesterov, weight decay)
    adam.py        Adam, AdamW (decoupled weight decay)
    schedules.py   linear_warmup, cosine_decay, warmup_cosine, LRScheduler, WarmupCosine
    lr_scheduler.py  PyTorch's names: LambdaLR, StepLR, LinearLR, CosineAnnealingLR, SequentialLR, OneCycleLR
"""
from . import lr_scheduler, schedules
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .schedules import LRScheduler, WarmupCosine, cosine_decay, linear_warmup, warmup_cosine
from .sgd import SGD
