"""The settings CI runs the figure tests under, each of which rounds differently, and a fingerprint
that shows it does.

    python .ci/kernels.py settings       # one line per setting: NAME VAR=VALUE ...
    python .ci/kernels.py fingerprint    # a hash of products and functions a lesson computes

A lesson's figures must hold on any machine, and a machine differs from this one in its BLAS kernel
(OpenBLAS picks one per CPU), in numpy's SIMD loops (chosen per CPU at import) and in the fused
layer's compiled loops (built with -march=native).  CI runs the tests that print or compare a
computed figure under a setting that changes each of them, after checking, by the fingerprint,
that the setting changes at least one bit of what a lesson computes (a setting the machine ignores
would test nothing).
"""
import hashlib
import os
import sys


def settings():
    """[(name, {variable: value})]: another BLAS kernel twice, numpy's SIMD loops turned down, the
    compiled loops off; the kernels chosen for this CPU so that each one runs here and differs from
    the native one (Zen and Haswell load Haswell's kernel; an AVX-512 CPU its own)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__ as cpu   # numpy >= 2
    avx512 = cpu.get('AVX512F') or cpu.get('X86_V4')
    # numpy's dispatched targets this CPU runs, from the highest group down to AVX2 (the names differ
    # before numpy 2.4: AVX512_SKX, AVX2, FMA3; from 2.4: X86_V4, X86_V3)
    highest = [f for f in __cpu_dispatch__ if cpu.get(f) and f in
               ('X86_V4', 'AVX512_ICL', 'AVX512_SPR', 'AVX512_SKX', 'AVX512F', 'X86_V3', 'AVX2', 'FMA3')]
    other = 'Haswell' if avx512 else 'Sandybridge'
    return [('prescott', {'OPENBLAS_CORETYPE': 'Prescott'}),
            (other.lower(), {'OPENBLAS_CORETYPE': other}),
            ('numpy-simd-down', {'NPY_DISABLE_CPU_FEATURES': ','.join(highest)}),
            ('no-compiled-loops', {'MICROTENSOR_COMPILED': '0'})]


def fingerprint():
    """A hash of what a lesson computes: float32 and float64 products of lesson sizes, numpy's
    elementwise functions, and the fused layer's softmax, GELU and layer norm (compiled loops where
    a C compiler is found)."""
    import numpy as np
    import microtensor as mt
    rng = np.random.default_rng(0)
    digest = hashlib.sha256()
    for m, k, n in [(8, 16, 16), (32, 16, 48), (7, 13, 5), (64, 64, 64), (1, 16, 16)]:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        digest.update((a @ b).tobytes())
        digest.update((a.astype(np.float32) @ b.astype(np.float32)).tobytes())
    x = np.linspace(-0.99, 5, 10001)
    for f in (np.exp, np.tanh, np.expm1, np.log1p):
        digest.update(f(x).tobytes())
        digest.update(f(x.astype(np.float32)).tobytes())
    h = mt.tensor(rng.standard_normal((64, 48)).astype(np.float32))
    with mt.fused(True):
        for y in (h.softmax(axis=-1), mt.gelu(h), mt.layer_norm(h, 48, mt.ones(48), mt.zeros(48))):
            digest.update(y.numpy().tobytes())
    return digest.hexdigest()[:16]


if __name__ == '__main__':
    if sys.argv[1:] == ['settings']:
        for name, variables in settings():
            print(name, ' '.join(f"{k}={v}" for k, v in variables.items()))
    elif sys.argv[1:] == ['fingerprint']:
        print(fingerprint())
    else:
        sys.exit(__doc__)
