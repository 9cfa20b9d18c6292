"""The baseline the articles compare attention against: a plain (Elman) RNN with tanh.

    h_t = tanh(x_t @ W_xh + h_{t-1} @ W_hh + b)          x_t (B, d_in), h_t (B, d_hidden)

The articles write it h_t = tanh(W_h h_{t-1} + W_x x_t) (row vectors here, as in X @ W_Q).
Step t must wait for step t-1, and the gradient from h_T back to h_1 is a product of T - 1
Jacobians
    dh_t/dh_{t-1} = diag(1 - h_t^2) @ W_hh^T
which shrinks (or explodes) geometrically with the distance: the RNN's path between two
tokens has length |i - j|, attention's has length 1.
"""
import math

import microtensor as mt
from microtensor import nn

from . import checks


class RNNCell(nn.Module):
    """One step: h' = tanh(x @ W_xh + h @ W_hh + b).  x (B, d_in), h (B, d_hidden) -> h' (B, d_hidden).

    Weights start uniform in [-1/sqrt(d_hidden), 1/sqrt(d_hidden)], as in PyTorch.
    """

    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.d_in, self.d_hidden = checks.arguments('RNNCell', d_in=d_in, d_hidden=d_hidden)
        d_in, d_hidden = self.d_in, self.d_hidden
        bound = 1 / math.sqrt(d_hidden)
        self.W_xh = nn.Parameter(nn.init.uniform_(mt.zeros(d_in, d_hidden), -bound, bound))
        self.W_hh = nn.Parameter(nn.init.uniform_(mt.zeros(d_hidden, d_hidden), -bound, bound))
        self.b = nn.Parameter(nn.init.uniform_(mt.zeros(d_hidden), -bound, bound))

    def forward(self, x, h=None):
        if x.ndim == 0 or x.shape[-1] != self.d_in:
            raise mt.ShapeError(f"RNNCell({self.d_in}, {self.d_hidden}): input has last dimension "
                                f"{x.shape[-1] if x.ndim else None}, shape {x.shape}; expected (B, {self.d_in})")
        return self.step(x @ self.W_xh, h)

    def step(self, x_proj, h=None):
        """h' = tanh(x_proj + h @ W_hh + b), given x_proj = x @ W_xh; h = None means h = 0."""
        pre = x_proj + self.b if h is None else x_proj + h @ self.W_hh + self.b
        return pre.tanh()

    def extra_repr(self):
        return f"d_in={self.d_in}, d_hidden={self.d_hidden}"


class RNN(nn.Module):
    """The cell unrolled over time.

    forward(x (B, T, d_in), h0=None (B, d_hidden)) -> (outputs (B, T, d_hidden), h_T (B, d_hidden)).
    outputs[:, t] = h_{t+1}; h0 = None means zeros.
    """

    def __init__(self, d_in, d_hidden):
        super().__init__()
        d_in, d_hidden = checks.arguments('RNN', d_in=d_in, d_hidden=d_hidden)
        self.cell = RNNCell(d_in, d_hidden)

    def forward(self, x, h0=None):
        if x.ndim != 3 or x.shape[-1] != self.cell.d_in or x.shape[1] == 0:
            raise mt.ShapeError(f"RNN(d_in={self.cell.d_in}): expected x of shape (B, T, {self.cell.d_in}) with "
                                f"T >= 1, got {x.shape}")
        if h0 is not None and h0.shape != (x.shape[0], self.cell.d_hidden):
            raise mt.ShapeError(f"RNN(d_hidden={self.cell.d_hidden}): h0 must have shape (B, d_hidden) = "
                                f"{(x.shape[0], self.cell.d_hidden)}, got {h0.shape}")
        x_proj = x @ self.cell.W_xh  # (B, T, d_hidden): the part that does not wait, in one matmul
        h, outputs = h0, []
        for t in range(x.shape[1]):  # the part that does: step t needs h_{t-1}
            h = self.cell.step(x_proj[:, t], h)
            outputs.append(h)
        return mt.stack(outputs, axis=1), h
