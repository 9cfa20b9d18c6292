"""Diagonals: diagonal (read one), diag_embed (write one into zeros), diag (either, for 1-d and 2-d).

    diagonal(x, offset, dim1, dim2)    y[..., i] = x[..., i, i + offset, ...] over dims dim1, dim2;
                                       the diagonal becomes the last dim (numpy's and PyTorch's rule)
    diag_embed(x, offset, dim1, dim2)  zeros, with x's last dim written on that diagonal

Each is the other's backward: the gradient of a diagonal is written back on the diagonal, and the
gradient of an embedded diagonal is read off it.
"""
from .. import argcheck, backend
from ..argcheck import ShapeError
from ..autograd import Function
from ..convert import tensor_arg


class Diagonal(Function):
    """y = diagonal(x, offset, dim1, dim2)        dL/dx = diag_embed(g, offset, dim1, dim2) (zeros elsewhere)"""

    def forward(self, x, offset, dim1, dim2):
        self.options = dict(offset=offset, dim1=dim1, dim2=dim2)
        return backend.array_module(x).diagonal(x, offset, dim1, dim2).copy()

    def backward(self, g):
        return (DiagEmbed.apply(g, **self.options, shape=self.inputs[0].shape),)


class DiagEmbed(Function):
    """y = zeros of `shape` with x's last dim on the diagonal (offset, dim1, dim2)     dL/dx = diagonal(g, ...)"""

    def forward(self, x, offset, dim1, dim2, shape):
        self.options = dict(offset=offset, dim1=dim1, dim2=dim2)
        xp = backend.array_module(x)
        y = xp.zeros(shape, dtype=x.dtype)
        m, row, col = x.shape[-1], max(-offset, 0), max(offset, 0)
        square = xp.moveaxis(y, (dim1, dim2), (-2, -1))[..., row:row + m, col:col + m]  # (a view of y)
        xp.einsum('...ii->...i', square)[...] = x
        return y

    def backward(self, g):
        return (Diagonal.apply(g, **self.options),)


def _dims(ndim, dim1, dim2, op):
    dim1, dim2 = (argcheck.integer(d, op, name) for d, name in ((dim1, 'dim1'), (dim2, 'dim2')))
    if not (-ndim <= dim1 < ndim and -ndim <= dim2 < ndim):
        raise IndexError(f"{op}: dim1={dim1}, dim2={dim2} out of range for {ndim} dims")
    dim1, dim2 = dim1 % ndim, dim2 % ndim
    if dim1 == dim2:
        raise ValueError(f"{op}: dim1 and dim2 must be two different dims, not both {dim1}")
    return dim1, dim2


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of x over dims dim1 and dim2 (offset > 0: above it, < 0: below), as the last dim."""
    x = tensor_arg(x, 'diagonal')
    if x.ndim < 2:  # (an IndexError, as PyTorch's: dim 1 does not exist)
        raise IndexError(f"diagonal: needs a tensor of at least 2 dims, not shape {x.shape}; for a 1-d tensor's "
                         "matrix use diag or diag_embed")
    dim1, dim2 = _dims(x.ndim, dim1, dim2, 'diagonal')
    return Diagonal.apply(x, offset=argcheck.integer(offset, 'diagonal', 'offset'), dim1=dim1, dim2=dim2)


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """Zeros of one more dim than x, with x's last dim written on the diagonal over dims dim1, dim2."""
    x = tensor_arg(x, 'diag_embed')
    if x.ndim < 1:
        raise ShapeError("diag_embed: needs a tensor of at least 1 dim, not a 0-d one")
    offset = argcheck.integer(offset, 'diag_embed', 'offset')
    dim1, dim2 = _dims(x.ndim + 1, dim1, dim2, 'diag_embed')
    n = x.shape[-1] + abs(offset)
    rest = list(x.shape[:-1])
    shape = []
    for d in range(x.ndim + 1):
        shape.append(n if d in (dim1, dim2) else rest.pop(0))
    return DiagEmbed.apply(x, offset=offset, dim1=dim1, dim2=dim2, shape=tuple(shape))


def diag(x, diagonal=0):
    """1-d x: the square matrix with x on its diagonal (offset `diagonal`); 2-d x: that diagonal of it."""
    x = tensor_arg(x, 'diag')
    if x.ndim == 1:
        return diag_embed(x, diagonal, 0, 1)
    if x.ndim == 2:
        return globals()['diagonal'](x, diagonal)
    raise ShapeError(f"diag: needs a 1-d or 2-d tensor, not shape {x.shape}; for more dims use diagonal or diag_embed")

