"""nn.Parameter: a leaf tensor that a Module registers as trainable."""
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor with requires_grad=True that Module collects in parameters()."""
    __slots__ = ()

    def __init__(self, data, dtype=None, device=None, name=None):
        super().__init__(data, dtype=dtype, device=device, requires_grad=True, name=name)

    def __repr__(self):
        return 'Parameter' + super().__repr__()[len('tensor'):]
