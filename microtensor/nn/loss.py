"""Loss modules with PyTorch's names and arguments: nn.CrossEntropyLoss and nn.NLLLoss call
nn.functional's cross_entropy and nll_loss (the class axis second, (N, C, ...), ignore_index=-100);
the others call the function of their name (microtensor/ops/losses.py) with their settings."""
from . import functional
from .module import Module, from_function


class CrossEntropyLoss(Module):
    """loss(input (N, C, ...), target) = F.cross_entropy(input, target, ...) with these settings."""

    def __init__(self, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0):
        super().__init__()
        self.register_buffer('weight', weight)
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing

    def forward(self, input, target):
        return functional.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                        reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    """loss(log_probs (N, C, ...), target) = F.nll_loss(log_probs, target, ...) with these settings."""

    def __init__(self, weight=None, ignore_index=-100, reduction='mean'):
        super().__init__()
        self.register_buffer('weight', weight)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input, target):
        return functional.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                   reduction=self.reduction)


class BCELoss(Module):
    """loss(p, target) = F.binary_cross_entropy(p, target, weight, reduction): p probabilities in [0, 1]."""

    def __init__(self, weight=None, reduction='mean'):
        super().__init__()
        self.register_buffer('weight', weight)
        self.reduction = reduction

    def forward(self, input, target):
        return functional.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(Module):
    """loss(logits, target) = F.binary_cross_entropy_with_logits(logits, target, weight, reduction, pos_weight)."""

    def __init__(self, weight=None, reduction='mean', pos_weight=None):
        super().__init__()
        self.register_buffer('weight', weight)
        self.register_buffer('pos_weight', pos_weight)
        self.reduction = reduction

    def forward(self, input, target):
        return functional.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                           reduction=self.reduction, pos_weight=self.pos_weight)


MSELoss = from_function('MSELoss', functional.mse_loss, reduction='mean')
L1Loss = from_function('L1Loss', functional.l1_loss, reduction='mean')
SmoothL1Loss = from_function('SmoothL1Loss', functional.smooth_l1_loss, reduction='mean', beta=1.0)
HuberLoss = from_function('HuberLoss', functional.huber_loss, reduction='mean', delta=1.0)
KLDivLoss = from_function('KLDivLoss', functional.kl_div, reduction='mean', log_target=False)
