"""Row blocks and row statistics: the fused ops' helpers (CPU speed, the same numbers).

Row blocks, long elementwise chains at cache speed.  A fused op's formula is a chain of numpy
operations (GELU's forward is nine), each making a temporary as large as the input.  On a
(B, T, d_ff) activation every temporary is megabytes, so each operation streams through main
memory.  by_rows runs the same formula on blocks of rows of about BLOCK elements, whose
temporaries stay in the CPU's cache (GELU: ~1.3x faster at d_ff = 256, ~1.8x at 1024).  Each
block is computed exactly as the whole array would be (rows are independent), so the result
is the same, bit for bit, whatever the block size.  (Threads over the blocks were tried three
times: two threads make GELU alone 1.3-1.6x faster, but a training step no faster.  Each numpy
call of a block takes the GIL, so two threads hand it back and forth hundreds of times per op,
and OpenBLAS's idle thread spins on the other core after each product; see
benchmarks/README.md, "Threads".)

Row statistics: numpy's max and sum over the last axis of short rows (16-256 numbers, a
softmax's or a layer norm's) are not vectorised; max_along and sum_along are 1.5-3x faster
spellings, and sum_rows sums over the first axis (a bias's gradient) by BLAS.
"""
from .. import backend


def sum_rows(x):
    """x.sum(axis=0) for a C-contiguous matrix (n, m) -> (m,), as the vector-matrix product
    ones(n) @ x: BLAS's GEMV is 2-6x faster than numpy's sum over the first axis (a batch's
    rows summed into a bias's gradient)."""
    return backend.array_module(x).ones(len(x), dtype=x.dtype) @ x


def max_along(x, axis):
    """x.max(axis, keepdims=True), as the element at argmax: numpy's argmax is vectorised and
    its max over short rows is not (1.5-2.5x faster for rows of 16 to 256 floats).  The same
    value, NaN included (argmax picks the first NaN)."""
    if x.shape[axis] == 0:
        return x.max(axis=axis, keepdims=True)  # numpy's own error for an empty axis
    return backend.array_module(x).take_along_axis(x, x.argmax(axis=axis, keepdims=True), axis=axis)


def sum_along(x, axis):
    """x.sum(axis, keepdims=True); along the last axis as an einsum, 2-3x faster than numpy's
    sum over short rows, and each row summed on its own (the same bits in any block of rows)."""
    if axis not in (-1, x.ndim - 1):
        return x.sum(axis=axis, keepdims=True)
    return backend.array_module(x).einsum('...i->...', x)[..., None]


BLOCK = 2**16


def by_rows(fn, *arrays):
    """fn(*arrays), computed block of rows by block of rows on the CPU.

    arrays: fn's inputs and the outputs it fills, all with one leading shape, each (..., n)
    or (..., 1) (a per-row statistic, as keepdims=True gives).  fn gets 2-D blocks of rows,
    (rows, n) or (rows, 1), and writes its results into the blocks of its output arrays
    (numpy's out=, or in place), so no result is copied.  fn must treat rows independently:
    elementwise math and reductions over the last axis only; constants (gamma, a Python
    number) come from the closure.
    On the GPU, for arrays of at most two blocks, and when an array is not C-contiguous
    (its blocks would be copies, not views), this is fn(*arrays).
    """
    first = arrays[0]
    if (backend.device_of(first) != 'cpu' or first.size <= 2 * BLOCK or first.ndim == 0
            or not all(a.flags.c_contiguous for a in arrays)):
        fn(*arrays)
        return
    rows = [a.reshape(-1, a.shape[-1]) for a in arrays]  # views: every array is C-contiguous
    step = max(1, BLOCK // first.shape[-1])
    for start in range(0, len(rows[0]), step):
        fn(*[r[start:start + step] for r in rows])
