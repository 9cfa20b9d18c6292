"""Function forms of the Tensor methods: mt.exp(x), mt.sum(x, axis), mt.maximum(a, b), ...

Each one names the op in microtensor/ops/ that does the work.
"""
from .ops import elementwise, linalg, nn, select, shape
from .tensor import Tensor, as_tensor


def _binary(op):
    def apply(a, b):
        like = a if isinstance(a, Tensor) else b
        return op.apply(as_tensor(a, like), as_tensor(b, like))
    apply.__name__ = op.__name__.lower()
    apply.__doc__ = op.__doc__
    return apply


add = _binary(elementwise.Add)
sub = _binary(elementwise.Sub)
mul = _binary(elementwise.Mul)
div = _binary(elementwise.Div)
pow = _binary(elementwise.Pow)
maximum = _binary(elementwise.Maximum)
minimum = _binary(elementwise.Minimum)
matmul = linalg.matmul
concatenate, stack, split = shape.concatenate, shape.stack, shape.split
where, masked_fill = select.where, select.masked_fill
softmax, log_softmax, cross_entropy, gelu = nn.softmax, nn.log_softmax, nn.cross_entropy, nn.gelu
layer_norm, dropout = nn.layer_norm, nn.dropout


def neg(x): return -x
def exp(x): return x.exp()
def log(x): return x.log()
def sqrt(x): return x.sqrt()
def tanh(x): return x.tanh()
def sin(x): return x.sin()
def cos(x): return x.cos()
def sigmoid(x): return x.sigmoid()
def relu(x): return x.relu()
def abs(x): return x.abs()
def erf(x): return elementwise.Erf.apply(x)
def clip(x, min=None, max=None): return x.clip(min, max)
def sum(x, axis=None, keepdims=False): return x.sum(axis, keepdims)
def mean(x, axis=None, keepdims=False): return x.mean(axis, keepdims)
def var(x, axis=None, keepdims=False, ddof=0): return x.var(axis, keepdims, ddof)
def max(x, axis=None, keepdims=False): return x.max(axis, keepdims)
def min(x, axis=None, keepdims=False): return x.min(axis, keepdims)
def reshape(x, *shape): return x.reshape(*shape)
def transpose(x, *axes): return x.transpose(*axes)
def swapaxes(x, axis1, axis2): return x.swapaxes(axis1, axis2)
def expand_dims(x, axis): return x.expand_dims(axis)
def squeeze(x, axis=None): return x.squeeze(axis)
def broadcast_to(x, shape): return x.broadcast_to(shape)
