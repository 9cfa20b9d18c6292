"""Loss modules with PyTorch's names and arguments: nn.CrossEntropyLoss and nn.NLLLoss call
nn.functional's cross_entropy and nll_loss (the class axis second, (N, C, ...), ignore_index=-100)."""
from . import functional
from .module import Module


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
