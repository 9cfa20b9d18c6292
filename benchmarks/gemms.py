"""The matrix products of one vs_torch training step, alone: numpy's BLAS against PyTorch's.

    python benchmarks/vs_torch.py --gemm --torch-python /tmp/venv-torch/bin/python

Both systems compute the same 51 products with the same shapes and operand layouts as the
GPT step (forward, and the two products of each backward), so the difference is the BLAS
library's alone: numpy's wheels ship OpenBLAS, PyTorch's CPU wheels MKL.  Only the standard
library is imported here; numpy or torch is imported by the worker that runs it.
"""


def products(library, d_model, vocab, n_layers, n_heads, context, batch):
    """step(): every product of one training step, with `library` 'numpy' or 'torch'."""
    pairs = operands(library, d_model, vocab, n_layers, n_heads, context, batch)

    def step():
        for a, b in pairs:
            a @ b
        return 0.0

    return step


def operands(library, d_model, vocab, n_layers, n_heads, context, batch):
    """[(a, b), ...]: the operands of every product a @ b of one step, random, in `library`'s arrays."""
    if library == 'torch':
        import torch
        randn, transpose = torch.randn, lambda a: a.transpose(-1, -2)
    else:
        import numpy as np
        rng = np.random.default_rng(0)
        randn, transpose = (lambda *shape: rng.standard_normal(shape, dtype=np.float32)), (lambda a: a.swapaxes(-1, -2))
    n, d_k = batch * context, d_model // n_heads

    def linear(n_in, n_out):
        """Y = X W, then dX = G W^T and dW = X^T G, as in transformer's Projection (2-D products)."""
        x, w, g = randn(n, n_in), randn(n_in, n_out), randn(n, n_out)
        return [(x, w), (g, transpose(w)), (transpose(x), g)]

    def heads():  # (B, h, T, d_k): a view of a (B, T, h, d_k) array, as split_heads makes it
        a = randn(batch, context, n_heads, d_k)
        return a.transpose(1, 2) if library == 'torch' else a.swapaxes(1, 2)

    pairs = []
    for _ in range(n_layers):
        for _ in range(4):  # W_Q, W_K, W_V, W_O
            pairs += linear(d_model, d_model)
        pairs += linear(d_model, 4 * d_model) + linear(4 * d_model, d_model)  # the FFN
        q, k, v, g = heads(), heads(), heads(), heads()
        p, gp = randn(batch, n_heads, context, context), randn(batch, n_heads, context, context)
        pairs += [(q, transpose(k)), (p, v),  # scores, weights @ V
                  (g, transpose(v)), (transpose(p), g),  # backward of P V: dP, dV
                  (gp, k), (transpose(q), gp)]  # backward of Q K^T: dQ, d(K^T)
    return pairs + linear(d_model, vocab)  # the head
