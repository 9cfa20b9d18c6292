/* The fused layer's compiled loops: float32, one thread, one pass over the numbers.
 *
 * compiled.py builds this file with the machine's C compiler on first use and calls it through
 * ctypes (see there for when it runs).  Each loop computes, number by number, the formula that
 * the numpy form in the op's own file computes array by array, so the two agree to float32
 * rounding (tests/test_compiled.py).
 *
 * Why loops are faster: numpy makes one pass over memory per operation (GELU's forward is
 * nine), and its float32 exp costs ~2 ns a number, 14 multiplications' worth.  A compiled loop
 * computes a whole formula for 8 numbers at a time in the CPU's vector registers, and exp32, a
 * polynomial, is vectorised with it.  The compiler may fuse a * b + c into one instruction and
 * add a row's sum in 8 lanes (#pragma omp simd): that changes a result in its last bits, no
 * more; inf and NaN keep their meaning.
 *
 * Arrays are C-contiguous (rows, n); a per-row number (1/sigma) is (rows, 1).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The float32 whose 32 bits are those of `bits`: a reinterpretation, not a conversion. */
static inline float float_with_bits(int32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The 32 bits of a float32, as an int32. */
static inline int32_t bits_of(float f) {
    int32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* e^x in float32, within 2 ulps (about 1 at most, measured over float32's range):
 *     e^x = 2^n e^r,   n = round(x / ln 2),   r = x - n ln 2 in [-ln2/2, ln2/2]
 *     e^r ~ 1 + r + r^2 (p0 r^5 + ... + p5)           (Cephes' expf polynomial)
 *     2^n: the float with exponent bits n + 127, in two halves so that n = 128 fits.
 * ln 2 is split in a high part with few bits (n ln2_high exact) and the rest.  Below the log of
 * the smallest normal float32 the result is 0 (numpy gives a subnormal there, < 1.2e-38); above
 * the log of the largest it is inf; NaN stays NaN.  Written without branches, to vectorise. */
static inline float exp32(float x) {
    /* n = round(x / ln 2): adding 1.5 * 2^23 pushes the fraction out of the float, leaving n in its
     * low bits (read as an integer: no float-to-int conversion, which is undefined for huge x) */
    int32_t k = bits_of(x * 1.44269504088896341f + 12582912.0f) - 0x4B400000;
    k = k < 128 ? k : 128;  /* out of range: the result is replaced below */
    k = k > -126 ? k : -126;
    float n = (float)k;
    float r = x - n * 0.693359375f - n * -2.12194440e-4f;
    float e_r = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
                  + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * (r * r) + r + 1.0f;
    int32_t half = k >> 1;
    float e_x = e_r * float_with_bits((half + 127) << 23) * float_with_bits((k - half + 127) << 23);
    e_x = x < -87.33654f ? 0.0f : e_x;
    e_x = x > 88.72283f ? INFINITY : e_x;
    return x != x ? x : e_x;
}

/* Every x through exp32: for the tests, which hold it to numpy's exp. */
void exp_all(const float *restrict x, float *restrict y, int64_t count) {
    for (int64_t i = 0; i < count; i++)
        y[i] = exp32(x[i]);
}

/* p = softmax(where(mask, s, -inf)) per row; row i of s uses mask row i % mask_rows.  A row with
 * no key allowed gets p = 0: its max is taken as the lowest float, its sum as 1 (any other row's
 * sum is >= 1).  A NaN is skipped by the max, but makes its row's sum, hence the row, NaN. */
void masked_softmax(const float *restrict s, const uint8_t *restrict mask, float *restrict p,
                    int64_t rows, int64_t n, int64_t mask_rows) {
    for (int64_t i = 0; i < rows; i++) {
        const float *row = s + i * n;
        const uint8_t *allowed = mask + (i % mask_rows) * n;
        float *out = p + i * n;
        float largest = -3.4028234663852886e38f;
#pragma omp simd reduction(max : largest)
        for (int64_t j = 0; j < n; j++) {
            out[j] = allowed[j] ? row[j] : -INFINITY;
            largest = out[j] > largest ? out[j] : largest;
        }
        float total = 0.0f;
#pragma omp simd reduction(+ : total)
        for (int64_t j = 0; j < n; j++) {
            out[j] = exp32(out[j] - largest);
            total += out[j];
        }
        float scale = 1.0f / (total < 1.0f ? 1.0f : total);
        for (int64_t j = 0; j < n; j++)
            out[j] *= scale;
    }
}

/* y = x - max - log(sum(exp(x - max))) per row: log_softmax over the last axis.  As in numpy's
 * form, a row with +inf, NaN, or only -inf is NaN (its x - max or its sum is NaN). */
void log_softmax(const float *restrict x, float *restrict y, int64_t rows, int64_t n) {
    for (int64_t i = 0; i < rows; i++) {
        const float *row = x + i * n;
        float largest = -INFINITY, total = 0.0f;
#pragma omp simd reduction(max : largest)
        for (int64_t j = 0; j < n; j++)
            largest = row[j] > largest ? row[j] : largest;
#pragma omp simd reduction(+ : total)
        for (int64_t j = 0; j < n; j++)
            total += exp32(row[j] - largest);
        float log_total = logf(total);
        for (int64_t j = 0; j < n; j++)
            y[i * n + j] = (row[j] - largest) - log_total;
    }
}

/* d = p * (g - sum(g * p)) per row: the softmax's backward. */
void softmax_grad(const float *restrict p, const float *restrict g, float *restrict d, int64_t rows, int64_t n) {
    for (int64_t i = 0; i < rows; i++) {
        const float *pi = p + i * n, *gi = g + i * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < n; j++)
            s += gi[j] * pi[j];
        for (int64_t j = 0; j < n; j++)
            d[i * n + j] = pi[j] * (gi[j] - s);
    }
}

static const float SQRT_2_OVER_PI = 0.7978845608028654f, A = 0.044715f, FAR = 100.0f;

/* GELU, tanh form, elementwise:  h = 1 / (1 + exp(-2u)),  y = x h,  u = sqrt(2/pi) (x + A x^3);
 * y at max(x, -FAR), where h is 0, so that -inf gives -0 and not nan. */
void gelu_tanh(const float *restrict x, float *restrict y, float *restrict h, int64_t rows, int64_t n) {
    const float c3 = -2 * SQRT_2_OVER_PI * A, c1 = -2 * SQRT_2_OVER_PI;  /* -2u = (c3 x^2 + c1) x */
    for (int64_t i = 0; i < rows * n; i++) {
        float v = x[i];
        float gate = 1.0f / (1.0f + exp32((v * v * c3 + c1) * v));
        h[i] = gate;
        y[i] = (v > -FAR ? v : -FAR) * gate;
    }
}

/* dx = g * gelu'(x),  gelu'(x) = h + 2u' x h (1 - h),  2u' = 2 sqrt(2/pi) (1 + 3 A x^2),
 * at x clipped to [-FAR, FAR] (beyond, h is exactly 0 or 1 and the slope 0 or 1). */
void gelu_tanh_grad(const float *restrict x, const float *restrict g, const float *restrict h,
                    float *restrict dx, int64_t rows, int64_t n) {
    const float c2 = 3 * A * 2 * SQRT_2_OVER_PI, c0 = 2 * SQRT_2_OVER_PI;  /* 2u' = c2 x^2 + c0 */
    for (int64_t i = 0; i < rows * n; i++) {
        float v = x[i] > -FAR ? x[i] : -FAR;
        v = v < FAR ? v : FAR;
        float gate = h[i];
        dx[i] = g[i] * ((v * v * c2 + c0) * (v * gate * (1.0f - gate)) + gate);
    }
}

/* Per row:  x_hat = (x - mean) / sqrt(mean((x - mean)^2) + eps),  y = x_hat gamma + beta;
 * inv_sigma (rows, 1) keeps 1 / sqrt(...) for the backward.  x - mean = (x - x0) - mean(x - x0),
 * x0 the row's first number, as the numpy form computes it (layer_norm.py says why). */
void layer_norm(const float *restrict x, float *restrict y, float *restrict x_hat, float *restrict inv_sigma,
                const float *restrict gamma, const float *restrict beta, int64_t rows, int64_t n, float eps) {
    for (int64_t i = 0; i < rows; i++) {
        const float *xi = x + i * n;
        float *hi = x_hat + i * n, *yi = y + i * n;
        float first = xi[0], total = 0.0f, squares = 0.0f;
#pragma omp simd reduction(+ : total)
        for (int64_t j = 0; j < n; j++) {
            hi[j] = xi[j] - first;
            total += hi[j];
        }
        float mean = total / n;  /* of x - x0 */
#pragma omp simd reduction(+ : squares)
        for (int64_t j = 0; j < n; j++) {
            hi[j] -= mean;
            squares += hi[j] * hi[j];
        }
        float inv = 1.0f / sqrtf(squares / n + eps);
        inv_sigma[i] = inv;
        for (int64_t j = 0; j < n; j++) {
            hi[j] *= inv;
            yi[j] = hi[j] * gamma[j] + beta[j];
        }
    }
}

/* Per row:  dx = (dx_hat - mean(dx_hat) - x_hat mean(dx_hat x_hat)) inv_sigma,  dx_hat = g gamma;
 * g_x_hat = g x_hat (gamma's gradient before the sum over rows). */
void layer_norm_grad(const float *restrict g, const float *restrict x_hat, const float *restrict inv_sigma,
                     float *restrict dx, float *restrict g_x_hat, const float *restrict gamma, int64_t rows, int64_t n) {
    for (int64_t i = 0; i < rows; i++) {
        const float *gi = g + i * n, *hi = x_hat + i * n;
        float *di = dx + i * n, total = 0.0f, along = 0.0f;
#pragma omp simd reduction(+ : total, along)
        for (int64_t j = 0; j < n; j++) {
            di[j] = gi[j] * gamma[j];  /* dx_hat, rounded and kept, as numpy's form does: so that */
            total += di[j];            /* dx_hat - mean is exactly 0 where the row is one number */
            along += di[j] * hi[j];
            g_x_hat[i * n + j] = gi[j] * hi[j];
        }
        float mean = total / n, mean_along = along / n, inv = inv_sigma[i];
        for (int64_t j = 0; j < n; j++)
            di[j] = (di[j] - mean - hi[j] * mean_along) * inv;
    }
}

/* One Adam (AdamW) step over one parameter's n numbers, in place, with its numpy form's roundings:
 *     g' = g + l2 p                    (Adam's L2 term, l2 = weight decay; 0 for AdamW)
 *     m = beta1 m + (1 - beta1) g',    v = beta2 v + (1 - beta2) g'^2
 *     p = p decay - step_size m / (sqrt(v) / sqrt_bias2 + eps)      (decay = 1 - lr wd for AdamW, else 1)
 * step_size = lr / (1 - beta1^t) and sqrt_bias2 = sqrt(1 - beta2^t) fold the bias corrections;
 * 1 - beta1 and 1 - beta2 come computed in double, as numpy's form has them. */
static inline void adam_one(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                            int64_t n, float beta1, float one_minus_beta1, float beta2, float one_minus_beta2,
                            float eps, float decay, float l2, float step_size, float sqrt_bias2) {
    for (int64_t i = 0; i < n; i++) {
        float gi = l2 != 0 ? g[i] + l2 * p[i] : g[i];  /* (not g + 0 p: 0 inf is NaN) */
        m[i] = beta1 * m[i] + one_minus_beta1 * gi;
        v[i] = beta2 * v[i] + one_minus_beta2 * (gi * gi);
        p[i] = p[i] * decay - m[i] / (sqrtf(v[i]) / sqrt_bias2 + eps) * step_size;
    }
}

/* Adam's step for `count` parameters at once, as PyTorch's fused Adam: parameter k has n[k]
 * numbers at p[k], g[k], m[k] and v[k], and its own step_size[k] and sqrt_bias2[k] (its own t). */
void adam(float *const *p, const float *const *g, float *const *m, float *const *v, const int64_t *n,
          const float *step_size, const float *sqrt_bias2, int64_t count, float beta1, float one_minus_beta1,
          float beta2, float one_minus_beta2, float eps, float decay, float l2) {
    for (int64_t k = 0; k < count; k++)
        adam_one(p[k], g[k], m[k], v[k], n[k], beta1, one_minus_beta1, beta2, one_minus_beta2, eps, decay, l2,
                 step_size[k], sqrt_bias2[k]);
}
