"""The engine room: the fused layer, off by default (mt.set_fused, `with mt.fused():`,
MICROTENSOR_FUSED=1; see switch.py).

microtensor/ops/ is the textbook: each op's forward and backward are the formulas in its
docstring, out of place, one per line.  Every op here computes the same function faster and
is named Fused..., so a trace, the viewer and pdb say which layer a step is in.  Each is
tested equal to its textbook twin (values, first and second derivatives; tests/test_fused.py).

    linear.py      FusedLinear: x @ W + b as one op, one 2-D product for N-D inputs, the bias
                   added in place into the product
    softmax.py     FusedMaskedSoftmax + FusedSoftmaxGrad: attention's mask and softmax as one op
                   each way, instead of Where, Softmax and their backward ops; FusedSoftmax,
                   FusedLogSoftmax: the textbook ops with the row statistics of rows.py
    gelu.py        FusedGeluTanh (+ FusedGeluTanhGrad, FusedGeluTanhSlope): the forward keeps the
                   gate h, the backward is one op, g * gelu'(x) from h and y
    layer_norm.py  FusedLayerNorm: keeps x_hat and 1/sigma for its backward
    reduce.py      FusedSumTo: a bias's (gamma's, beta's) gradient as ones @ G, by BLAS
    rows.py        by_rows: long elementwise chains a block of rows at a time, in the CPU's
                   cache; max_along, sum_along: a short row's max by argmax, its sum by einsum
    adam.py        Adam's (AdamW's) update of a whole parameter group in one compiled loop, as
                   PyTorch's fused Adam (optim/adam.py keeps the formulas, one parameter at a time)
    kernels.c      the same formulas as compiled loops, one pass over the numbers in the CPU's
                   vector registers (masked softmax and its backward, GELU, layer norm,
                   log_softmax, Adam)
    compiled.py    builds kernels.c with the machine's C compiler on first use, and runs a loop
                   where every array is float32 on the CPU; elsewhere the numpy forms run

What they buy, measured on a tiny GPT's training step (benchmarks/vs_torch.py: d_model 64 and
256, 1 and 2 threads, alternating rounds; benchmarks/README.md has the tables): the one-op
fusions, with GELU and layer norm keeping what their backward needs, -8 to -11% of the step;
row blocks, row statistics and the sums by BLAS a further -11% (GELU's forward and backward
~1.3x faster at d_ff 256, ~1.8x at 1024; a short row's max 1.5-2.5x, a bias's gradient 2-6x).
With glibc's malloc tuning (malloc_tuning.py) the step went from 1.7-1.9x PyTorch eager's
time on one thread to 0.9x.  The compiled loops make those ops 2-3.5x faster than their numpy
forms (the step -13 to -22%).
"""
from .switch import fused, is_fused, set_fused  # noqa: F401  (mt.fused, mt.is_fused, mt.set_fused)
