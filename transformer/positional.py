"""Positional information: self-attention alone is blind to word order.

Without it, Attention(P X) = P Attention(X) for any permutation P of the rows:
"猫吃鱼" and "鱼吃猫" give the same vectors, only reordered.  Four remedies:

Sinusoidal (Vaswani et al. 2017), added to the embeddings:
    PE[pos, 2i]   = sin(pos / 10000^(2i/d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))
  Each (2i, 2i+1) pair is a point on a circle turning at its own frequency, so
  PE[pos + k] is PE[pos] rotated by angles that depend only on k: a fixed linear map.
  Any position can be computed, so it extrapolates beyond the training length.

Learned (BERT, GPT-2), added to the embeddings: a trainable row P[pos] per position;
  flexible, but it has no row for positions beyond max_len.

RoPE (RoFormer; LLaMA, Qwen), applied to Q and K inside attention: rotate each pair
  (x_2i, x_2i+1) of a query/key at position m by the angle m * theta_i,
  theta_i = base^(-2i/d_k).  Rotations compose, so q_m . k_n = q . R_(n-m) k depends
  only on the offset n - m: relative position, without adding anything to X.

ALiBi (Press et al. 2021), added to the attention scores: bias[h, i, j] = -m_h |i - j|,
  a per-head slope m_h times the distance, so far-away keys are penalised linearly.

Relative position bias (T5, Raffel et al. 2019), added to the attention scores:
  bias[h, i, j] = B[bucket(j - i), h], a learned scalar per head and bucket of offsets.
  Small offsets get a bucket each, larger ones share logarithmically wider buckets, and
  every offset beyond max_distance falls in the last one, so any length has a bias.
"""
import math

import microtensor as mt
from microtensor import argcheck, nn

from . import checks


def sinusoid_angles(T, dim, base=10000.0, offset=0, device=None):
    """(T, dim/2) angles pos * base^(-2i/dim) for pos = offset .. offset+T-1, i = 0 .. dim/2-1.

    Shared by the sinusoidal encoding (dim = d_model) and RoPE (dim = d_k).  float64:
    the sin/cos of a large angle needs the digits; callers cast their sin/cos afterwards.
    """
    if dim % 2:
        raise ValueError(f"sinusoidal angles need an even dimension (sin/cos pairs), got {dim}")
    position = mt.arange(offset, offset + T, dtype='float64', device=device).reshape(T, 1)
    two_i = mt.arange(0, dim, 2, dtype='float64', device=device).reshape(1, dim // 2)
    inv_freq = (two_i * (-math.log(base) / dim)).exp()  # base^(-2i/dim)
    return position * inv_freq


class SinusoidalPositionalEncoding(nn.Module):
    """forward(x (B, T, d_model), offset=0) -> x + PE[offset : offset + T].

    No parameters.  Rows are computed on demand and cached (max_len rows at first,
    more when a longer sequence comes), so any length works.  `offset` is the position
    of x's first row (the KV cache's length during generation).
    """

    def __init__(self, d_model, max_len=None):
        super().__init__()
        d_model = checks.arguments('SinusoidalPositionalEncoding', d_model=d_model)
        max_len = argcheck.integer(max_len, 'SinusoidalPositionalEncoding', 'max_len', min=1, allow_none=True)
        if d_model % 2:
            raise ValueError(f"SinusoidalPositionalEncoding: d_model must be even (sin/cos pairs), got {d_model}")
        self.d_model, self.max_len = d_model, max_len
        self._cache = None

    def table(self, T, offset=0, dtype=None, device=None):
        """PE rows offset .. offset+T-1: a (T, d_model) Tensor, even columns sin, odd columns cos."""
        offset = _check_offset(self, offset)
        dtype = mt.float32 if dtype is None else mt.backend.dtype(dtype)
        cache = self._cache
        if cache is None or len(cache) < offset + T or cache.dtype != dtype or (device and cache.device != device):
            length = max(offset + T, self.max_len or 0, 2 * len(cache) if cache is not None else 0)
            angles = sinusoid_angles(length, self.d_model, device=device)
            # interleave: (length, d/2, 2) [sin, cos] pairs -> (length, d)
            cache = mt.stack([angles.sin(), angles.cos()], axis=-1).reshape(length, self.d_model).to(dtype=dtype)
            self._cache = cache
        return cache[offset:offset + T]

    def forward(self, x, offset=0):
        _check_features(self, x, self.d_model)
        return x + self.table(x.shape[-2], offset, dtype=x.dtype, device=x.device)

    def extra_repr(self):
        return f"d_model={self.d_model}" + (f", max_len={self.max_len}" if self.max_len else "")


class LearnedPositionalEmbedding(nn.Module):
    """forward(x (B, T, d_model), offset=0) -> x + P[offset : offset + T],  P: (max_len, d_model) trained."""

    def __init__(self, max_len, d_model):
        super().__init__()
        max_len, d_model = checks.arguments('LearnedPositionalEmbedding', max_len=max_len, d_model=d_model)
        self.max_len, self.d_model = max_len, d_model
        argcheck.memory('LearnedPositionalEmbedding', max_len * d_model, 'parameters',
                        f"max_len={max_len}, d_model={d_model}")
        self.weight = nn.Parameter(mt.randn(max_len, d_model))  # N(0, 1), as torch.nn.Embedding

    def check_positions(self, offset, T, where='LearnedPositionalEmbedding'):
        """Refuse positions offset .. offset+T-1 beyond the table (callers check before computing)."""
        offset = _check_offset(self, offset)
        if offset + T > self.max_len:
            raise ValueError(f"{where}: positions {offset}..{offset + T - 1} were asked for, but the learned "
                             f"position table only has max_len={self.max_len} rows (positions 0..{self.max_len - 1}); "
                             "a learned table cannot extrapolate: use a larger max_len or a shorter sequence")
        return offset

    def forward(self, x, offset=0):
        _check_features(self, x, self.d_model)
        T = x.shape[-2]
        offset = self.check_positions(offset, T)
        return x + self.weight[offset:offset + T]

    def extra_repr(self):
        return f"max_len={self.max_len}, d_model={self.d_model}"


class RotaryEmbedding(nn.Module):
    """RoPE: rotate(x (B, h, T, d_k), offset=0) rotates each pair (x_2i, x_2i+1) at position
    m = offset + t by the angle m * theta_i:

        x'_2i   = x_2i cos(m theta_i) - x_2i+1 sin(m theta_i)
        x'_2i+1 = x_2i sin(m theta_i) + x_2i+1 cos(m theta_i)

    Applied to Q and K (never V).  No parameters.
    """

    def __init__(self, d_k, base=10000):
        super().__init__()
        d_k = checks.arguments('RotaryEmbedding', d_k=d_k)
        base = argcheck.number(base, 'RotaryEmbedding', 'base', min=0, min_open=True)
        if d_k % 2:
            raise ValueError(f"RotaryEmbedding: d_k must be even (it rotates pairs), got {d_k}")
        self.d_k, self.base = d_k, base

    def rotate(self, x, offset=0):
        """x (..., T, d_k) with each pair of features rotated by its position (offset + t) times theta_i."""
        offset = argcheck.integer(offset, 'RotaryEmbedding', 'offset')  # any integer: rotations go both ways
        if x.ndim < 2 or x.shape[-1] != self.d_k:
            raise mt.ShapeError(f"RotaryEmbedding(d_k={self.d_k}): got x of shape {x.shape}")
        *lead, T, d_k = x.shape
        angles = sinusoid_angles(T, d_k, self.base, offset, device=x.device)  # (T, d_k/2)
        cos, sin = angles.cos().to(dtype=x.dtype), angles.sin().to(dtype=x.dtype)
        pairs = x.reshape(*lead, T, d_k // 2, 2)
        x_even, x_odd = pairs[..., 0], pairs[..., 1]
        rotated = mt.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], axis=-1)
        return rotated.reshape(x.shape)

    forward = rotate

    def extra_repr(self):
        return f"d_k={self.d_k}, base={self.base}"


def alibi_slopes(n_heads, dtype=None, device=None):
    """(h,) slopes m_h: the geometric sequence 2^(-8/h), 2^(-16/h), ..., 2^(-8) for h a power
    of two; otherwise those of the nearest smaller power of two n, then every other slope
    of 2n heads (the ALiBi paper's recipe)."""
    def geometric(n):
        return [2 ** (-8 * (k + 1) / n) for k in range(n)]

    n_heads = checks.arguments('alibi_slopes', n_heads=n_heads)
    n = 2 ** int(math.log2(n_heads))
    slopes = geometric(n) + geometric(2 * n)[0::2][:n_heads - n]
    return mt.tensor(slopes, dtype=dtype or mt.float32, device=device)


def alibi_bias(n_heads, T_q, T_k, offset=0, dtype=None, device=None):
    """(h, T_q, T_k) bias -m_h |i - j| added to the attention scores, for query i at
    position offset + i and key j.  (With a causal mask only j <= i remains, where this
    is ALiBi's -m (i - j); without one it is the symmetric, bidirectional variant.)"""
    n_heads = checks.arguments('alibi_bias', n_heads=n_heads)
    T_q, T_k, offset = _check_lengths('alibi_bias', T_q, T_k, offset)
    i = mt.arange(offset, offset + T_q, device=device).reshape(1, T_q, 1)
    j = mt.arange(T_k, device=device).reshape(1, 1, T_k)
    distance = (i - j).abs().to(dtype=dtype or mt.float32)
    return -alibi_slopes(n_heads, dtype, device).reshape(n_heads, 1, 1) * distance


def relative_position_bucket(n, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket (an int in [0, num_buckets)) of the offset n = j - i, key position minus query position.

    bidirectional: half the buckets for keys before the query (n <= 0), half for keys after it;
    otherwise (causal) only the past counts and every n > 0 shares bucket 0.  Of each half,
    the first max_exact = half / 2 buckets hold the distances 0 .. max_exact - 1 one by one; the
    rest cover max_exact .. max_distance on a log scale, and farther distances share the last.
    """
    n = argcheck.integer(n, 'relative_position_bucket', 'n')
    num_buckets, max_distance, bidirectional = _check_buckets('relative_position_bucket', num_buckets, max_distance,
                                                              bidirectional)
    bucket = 0
    if bidirectional:
        num_buckets //= 2
        bucket = num_buckets if n > 0 else 0
        distance = abs(n)
    else:
        distance = max(-n, 0)
    max_exact = num_buckets // 2
    if distance < max_exact:
        return bucket + distance
    log_part = math.log(distance / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    return bucket + min(max_exact + int(log_part), num_buckets - 1)


class RelativePositionBias(nn.Module):
    """T5's learned relative position bias: forward(T_q, T_k, offset=0) -> (h, T_q, T_k),

        bias[h, i, j] = weight[relative_position_bucket(j - i), h]

    for query i at position offset + i and key j, added to the scaled scores like ALiBi's.
    weight: (num_buckets, n_heads), trained; it starts at 0 (no positional preference).
    T5 shares one table across its layers; here each attention module has its own.
    """

    def __init__(self, n_heads, num_buckets=32, max_distance=128, bidirectional=True):
        super().__init__()
        n_heads = checks.arguments('RelativePositionBias', n_heads=n_heads)
        num_buckets, max_distance, bidirectional = _check_buckets('RelativePositionBias', num_buckets, max_distance,
                                                                  bidirectional)
        self.n_heads, self.num_buckets, self.max_distance = n_heads, num_buckets, max_distance
        self.bidirectional = bidirectional
        self.weight = nn.Parameter(mt.zeros(num_buckets, n_heads))

    def buckets(self, T_q, T_k, offset=0):
        """(T_q, T_k) integer Tensor: the bucket of each (query, key) pair."""
        T_q, T_k, offset = _check_lengths(type(self).__name__, T_q, T_k, offset)
        first = -(offset + T_q - 1)                      # the smallest offset j - i
        per_offset = mt.tensor([relative_position_bucket(n, self.bidirectional, self.num_buckets, self.max_distance)
                                for n in range(first, T_k)], device=self.weight.device)
        i = mt.arange(offset, offset + T_q, device=self.weight.device).reshape(T_q, 1)
        j = mt.arange(T_k, device=self.weight.device).reshape(1, T_k)
        return per_offset[j - i - first]

    def forward(self, T_q, T_k, offset=0):
        return self.weight[self.buckets(T_q, T_k, offset)].permute(2, 0, 1)     # (T_q, T_k, h) -> (h, T_q, T_k)

    def extra_repr(self):
        return (f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
                f"bidirectional={self.bidirectional}")


def _check_buckets(where, num_buckets, max_distance, bidirectional):
    """T5's bucket options: each half of num_buckets (one half when not bidirectional) holds
    max_exact >= 1 exact distances, and max_distance lies beyond them (the log-spaced rest)."""
    bidirectional = argcheck.boolean(bidirectional, where, 'bidirectional')
    smallest = 4 if bidirectional else 2
    num_buckets = argcheck.integer(num_buckets, where, 'num_buckets', min=smallest)
    max_exact = num_buckets // smallest
    max_distance = argcheck.integer(max_distance, where, 'max_distance', min=1)
    if max_distance <= max_exact:
        raise ValueError(f"{where}: max_distance must be beyond the {max_exact} exact distances of "
                         f"num_buckets={num_buckets}{'' if bidirectional else ' (causal)'}, not {max_distance}")
    return num_buckets, max_distance, bidirectional


def _check_lengths(where, T_q, T_k, offset):
    """(T_q, T_k, offset) of a bias over queries at offset .. offset + T_q - 1 and keys 0 .. T_k - 1."""
    return (argcheck.integer(T_q, where, 'T_q', min=0), argcheck.integer(T_k, where, 'T_k', min=0),
            argcheck.integer(offset, where, 'offset', min=0))


def _check_offset(module, offset):
    return argcheck.integer(offset, type(module).__name__, 'offset', min=0)


def _check_features(module, x, d_model):
    if x.ndim < 2 or x.shape[-1] != d_model:
        raise mt.ShapeError(f"{type(module).__name__}(d_model={d_model}): expected x of shape (B, T, {d_model}), "
                            f"got {x.shape}")
