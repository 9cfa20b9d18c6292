"""How `check` compares numbers: the learner's against the reference answer's, and against
central finite differences.

Against the reference (the same inputs, the same upstream gradient) the comparison is
norm-wise and tight:

    |got - expected| <= RTOL * |expected| + ATOL        (|.|: the whole gradient's 2-norm)

RTOL = 1e-9 lets through what float64 rounding does to a different but equal formula
(~1e-15 relative, more where terms cancel), and stops a gradient off by one part in 10,000
(a factor 1.0001) and one computed in float32 (~1e-7 relative).
Finite differences are an independent second check, element by element, at their own,
looser tolerance (they are only accurate to about EPS^2 and rounding / EPS).
"""
import numpy as np

RTOL, ATOL = 1e-9, 1e-10            # learner vs reference, norm-wise, float64
RTOL32, ATOL32 = 2e-4, 1e-5         # the same in float32 (float32 rounding is ~6e-8 per operation)
FD_EPS, FD_RTOL, FD_ATOL = 1e-6, 1e-4, 1e-5


def scaled_norm(a, scale):
    """The 2-norm of a / scale (scaled: e^700's gradient squared would overflow)."""
    return float(np.sqrt(np.sum(np.square(a / scale))))


def relative_difference(got, expected):
    """|got - expected| / |expected| norm-wise (inf where got is not finite and expected is)."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if not np.isfinite(got).all() and np.isfinite(expected).all():
        return np.inf
    scale = max(float(np.max(np.abs(expected), initial=0.0)), float(np.max(np.abs(got), initial=0.0)), 1e-300)
    return scaled_norm(got - expected, scale) / max(scaled_norm(expected, scale), 1e-300)


def close(got, expected, rtol=RTOL, atol=ATOL):
    """Is got within rtol * |expected| + atol of expected, norm-wise?  (nan is never close.)"""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or np.isnan(got).any() != np.isnan(expected).any():
        return False
    with np.errstate(invalid='ignore'):
        both = np.isfinite(expected)
        if not (np.isfinite(got) == both).all() or (got[~both] != expected[~both]).any():
            return False
    got, expected = got[both], expected[both]
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
    return scaled_norm(got - expected, scale) <= rtol * scaled_norm(expected, scale) + atol / scale


def worst(got, expected):
    """(index, expected, got) of the element furthest from expected, for a message."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid='ignore'):
        away = np.where(np.isnan(got) | np.isinf(got), np.inf, np.abs(got - expected))
    index = np.unravel_index(int(np.argmax(away)), got.shape) if got.size else ()
    index = tuple(int(i) for i in index)
    return index, float(expected[index]), float(got[index])


def first_wrong(got, expected, rtol=FD_RTOL, atol=FD_ATOL):
    """(index, expected, got) of the first element out of an element-wise tolerance, or None."""
    bad = ~(np.abs(got - expected) <= atol + rtol * np.abs(expected))  # (a nan is never within tolerance)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return index, float(expected[index]), float(got[index])


def finite_differences(L, arrays):
    """Central differences of the scalar function L(list of arrays), for each array, element by element:
    dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)."""
    grads = []
    for i, x in enumerate(arrays):
        g = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i][index] += FD_EPS
            minus[i][index] -= FD_EPS
            g[index] = (L(plus) - L(minus)) / (2 * FD_EPS)
        grads.append(g)
    return grads
