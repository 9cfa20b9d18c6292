"""Matrix multiplication, batched over leading axes as numpy's `@`, and linear: x @ W + b."""
import math

from ..argcheck import ShapeError
from ..autograd import Function
from .. import promotion
from ..fused import switch as fused_switch
from ..tensor import Tensor


class MatMul(Function):
    """Y = A @ B,  A: (..., n, k), B: (..., k, m) -> Y: (..., n, m)
        dL/dA = G @ B^T,   dL/dB = A^T @ G    (the backward loop sums these over broadcast batch axes)

    X @ W, with B one matrix (every Linear): A's leading axes only hold more rows, each multiplied by the
    same W, so the product is one 2-D product over all of them, Y = rows(A) @ W, and the batch sum of
    dL/dW is inside one product too, rows(A)^T @ rows(G) (numpy's batched @ would call BLAS once per
    batch entry).
    """

    def forward(self, a, b):
        if b.ndim == 2:
            return (rows(a) @ b).reshape(a.shape[:-1] + b.shape[-1:])
        return a @ b

    def backward(self, g):
        a, b = self.inputs
        ga = g @ b.swapaxes(-1, -2) if self.needs_grad(0) else None
        if not self.needs_grad(1):
            gb = None
        elif b.ndim == 2:
            gb = rows(a).swapaxes(-1, -2) @ rows(g)
        else:
            gb = a.swapaxes(-1, -2) @ g
        return ga, gb


def rows(x):
    """x (..., k) as a matrix of rows (N, k), N the product of the leading axes."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def matmul(a, b):
    """a @ b with numpy's rules: 1-D operands are promoted to matrices and squeezed back."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype == b.dtype):  # a constant, or mixed dtypes
        if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
            raise TypeError(f"matmul: needs a Tensor as a or b, got {type(a).__name__} and {type(b).__name__}")
        a, b = promotion.operands('matmul', a, b)  # PyTorch's rule, as for a * b (int64 @ float32 -> float32)
    promotion.refuse_bool('matmul', a.dtype)  # numpy's product of booleans is an or of ands
    a_ndim, b_ndim = a.data.ndim, b.data.ndim
    if a_ndim == 0 or b_ndim == 0:
        raise ShapeError(f"MatMul: scalars cannot be matrix-multiplied (shapes {a.shape} and {b.shape}); use *")
    k = b.shape[-2] if b_ndim > 1 else b.shape[0]
    if a.shape[-1] != k:
        raise ShapeError(f"MatMul: shapes {a.shape} @ {b.shape} do not fit: the inner dimensions differ "
                         f"({a.shape[-1]} != {k})")
    if a_ndim == 1 and b_ndim == 1:
        return (a.expand_dims(0) @ b.expand_dims(1)).reshape(())
    if a_ndim == 1:
        return MatMul.apply(a.expand_dims(0), b).squeeze(-2)
    if b_ndim == 1:
        return MatMul.apply(a, b.expand_dims(1)).squeeze(-1)
    return MatMul.apply(a, b)


def outer(a, b):
    """out[i, j] = a[i] * b[j]: a (n,), b (m,) -> (n, m), PyTorch's torch.outer (a column times a row,
    broadcast: its gradient is the Mul's, summed back)."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: needs two 1-D tensors, not shapes {a.shape} and {b.shape} "
                         "(for batches use einsum('bi,bj->bij', a, b))")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def linear(x, weight, bias=None):
    """y = x @ weight + bias: x (..., n_in), weight (n_in, n_out), bias (n_out,) or None -> y (..., n_out).

    Two ops, MatMul and Add (dL/dx = G @ W^T, dL/dW = x^T @ G, dL/db = G summed over the rows);
    one, FusedLinear (microtensor/fused/linear.py), when the fused layer is on."""
    if x.ndim == 0 or weight.ndim != 2 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"linear: x {x.shape} @ weight {weight.shape} do not fit "
                         "(need x (..., n_in) and weight (n_in, n_out))")
    if bias is not None and bias.shape != weight.shape[1:]:
        raise ShapeError(f"linear: bias has shape {bias.shape}, expected {weight.shape[1:]} (n_out,)")
    if fused_switch.enabled:
        promotion.refuse_bool('linear', promotion.result_type(x, weight))
        operands = [x, weight] if bias is None else [x, weight, bias]
        if any(t.dtype != x.dtype for t in operands):  # mixed dtypes: promoted as x @ weight + bias would be
            operands = promotion.operands('linear', *operands)
        return FusedLinear.apply(*operands)
    y = x @ weight
    return y if bias is None else y + bias


# The fused layer's twin of linear (it reuses rows above).
from ..fused.linear import FusedLinear  # noqa: E402
