"""Matrix multiplication, batched over leading axes as numpy's `@`; linear (x @ W^T + b, PyTorch's layout)
and project (x @ W + b, the articles')."""
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

    transpose_b=True: the input is B^T, a matrix (m, k), as nn.Linear stores its weight (out, in);
    B = input^T is a view, so Y = X @ W^T is this one node, and dL/d(input) = (dL/dB)^T = G^T @ X.
    """

    def forward(self, a, b, transpose_b=False):
        self.transpose_b = transpose_b
        if transpose_b:
            b = b.T
        if b.ndim == 2:
            return (rows(a) @ b).reshape(a.shape[:-1] + b.shape[-1:])
        return a @ b

    def backward(self, g):
        a, b = self.inputs
        if self.transpose_b:
            b = b.T
        ga = g @ b.swapaxes(-1, -2) if self.needs_grad(0) else None
        if not self.needs_grad(1):
            gb = None
        elif b.ndim == 2:
            gb = rows(g).T @ rows(a) if self.transpose_b else rows(a).T @ rows(g)
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
    """y = x @ weight^T + bias, PyTorch's F.linear and nn.Linear: x (..., n_in), weight (n_out, n_in),
    bias (n_out,) or None -> y (..., n_out).

    Two ops, MatMul (weight^T read in place: dL/dx = G @ weight, dL/dweight = G^T @ x) and Add (dL/db = G
    summed over the rows); one, FusedLinear (microtensor/fused/linear.py), when the fused layer is on."""
    return _affine('linear', x, weight, bias, transposed=True)


def project(x, W, b=None):
    """y = x @ W + b, the articles' notation (Q = X @ W_Q): x (..., n_in), W (n_in, n_out), b (n_out,) or None
    -> y (..., n_out).  Two ops, MatMul and Add (dL/dx = G @ W^T, dL/dW = x^T @ G, dL/db = G summed over
    the rows); one, FusedLinear, when the fused layer is on."""
    return _affine('project', x, W, b, transposed=False)


def _affine(op, x, weight, bias, transposed):
    """x @ weight^T + bias (transposed: weight is (n_out, n_in)) or x @ weight + bias (weight (n_in, n_out))."""
    layout = '(n_out, n_in)' if transposed else '(n_in, n_out)'
    n_in = weight.shape[-1 if transposed else 0] if weight.ndim == 2 else None
    if x.ndim == 0 or weight.ndim != 2 or x.shape[-1] != n_in:
        raise ShapeError(f"{op}: x {x.shape} and weight {weight.shape} do not fit: x is (..., n_in) and "
                         f"weight {layout}")
    n_out = weight.shape[0 if transposed else 1]
    if bias is not None and bias.shape != (n_out,):
        raise ShapeError(f"{op}: bias has shape {bias.shape}, expected ({n_out},) (n_out,)")
    if fused_switch.enabled:
        promotion.refuse_bool(op, promotion.result_type(x, weight))
        operands = [x, weight] if bias is None else [x, weight, bias]
        if any(t.dtype != x.dtype for t in operands):  # mixed dtypes: promoted as x @ W + b would be
            operands = promotion.operands(op, *operands)
        return FusedLinear.apply(*operands, transposed=transposed)
    if transposed:
        if x.dtype != weight.dtype:
            x, weight = promotion.operands(op, x, weight)
        promotion.refuse_bool(op, x.dtype)
        y = MatMul.apply(x, weight, transpose_b=True)
    else:
        y = x @ weight
    return y if bias is None else y + bias


# The fused layer's twin of linear (it reuses rows above).
from ..fused.linear import FusedLinear  # noqa: E402
