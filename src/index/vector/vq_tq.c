/*
 * index/vector/vq_tq.c - TurboQuant's MSE quantizer (TQ8, TQ4) and 1-bit
 * sign codes (BIN), after arXiv 2504.19874.
 *
 * Encoding x (dimension d):
 *   1. n = ||x|| is kept as a float; u = x / n (COSINE: n is stored as 1).
 *   2. r = R u with a random orthogonal R (below).  Every coordinate of r is
 *      then close to N(0, 1/d) whatever u was; y = sqrt(d) r is ~N(0, 1).
 *   3. TQ8/TQ4: each y_j is replaced by the index of the nearest level of one
 *      codebook shared by all coordinates.  BIN: the sign of y_j, plus
 *      c = 1 / ||r||_1.
 *
 * The rotation R, orthogonal on exactly d coordinates (no padding), is
 * VQ_ROT_ROUNDS rounds of
 *       t[i] = sign[i] * v[perm[i]]        (random signs and permutation)
 *       t[0..P)   <- H_P t[0..P)           (normalized Walsh-Hadamard, P the
 *       t[d-P..d) <- H_P t[d-P..d)          largest power of two <= d; the
 *                                           second block only when d > P)
 * Since P > d/2 the two blocks overlap and together cover every coordinate;
 * the permutations mix the coordinates across rounds.  Each step is
 * orthogonal; H_P is symmetric and its own inverse, so R^T runs the rounds
 * backwards.  perm and sign are regenerated from the seed (splitmix64), so
 * the saved parameters are only the seed and the codebook.  Cost: O(d log d).
 *
 * Codebooks, fitted to the actual rotated training coordinates (up to 2^20
 * of them, sorted, with prefix sums: an iteration costs L binary searches):
 *   TQ4  Lloyd-Max: Lloyd iterations on the N(0,1) density (started from the
 *        companding solution, quantiles of N(0,3)), then on the data.  The
 *        16 levels are then snapped to a 7-bit grid level0 + step * u_k
 *        (u_k in 0..127; +0.0002 MSE on Lloyd-Max's 0.0095) so that the
 *        distance loop is integer.
 *   TQ8  uniform levels lo + step * k, fitted by Lloyd's alternation for a
 *        uniform quantizer (assign, then least-squares (lo, step)).  MSE for
 *        N(0,1) 8.8e-5 against Lloyd-Max's 4.1e-5, both far below what
 *        changes a ranking; in exchange the distance is an integer dot
 *        product (~25 ns at d = 784 on AVX2) where any table lookup, scalar
 *        or AVX2-gathered, costs 220-380 ns.  Parameters with non-uniform
 *        levels (vq_load accepts any increasing levels) use a table loop.
 *
 * Asymmetric distances (exact query q, coded x; q_r = R q, and for COSINE
 * R (q / ||q||); c(x) the decoded levels / sqrt(d)):
 *   L2      ||q||^2 + ||x||^2 - 2 ||x|| <q_r, c(x)>
 *   COSINE  1 - <q_r, c(x)>
 *   IP      -||x|| <q_r, c(x)>
 * TQ8:  q_r is quantized once per query to int16 (q_r ~= s * qi, |qi| <=
 *       32767, less for d > 2048 so no int32 lane can overflow), and
 *       <q_r, c> = a + b * sum_j qi_j * code_j: pmovzxbw + pmaddwd.
 * TQ4:  q_r is quantized to int8 (|qi| <= 127) and <q_r, c> = a + b *
 *       sum_j qi_j * u[code_j]: pshufb looks up the 7-bit u of 32 nibbles at
 *       once and pmaddubsw multiplies by qi (u <= 127, |qi| <= 127: the
 *       pairwise sums cannot saturate).
 *       Integer sums are exact, so SIMD and scalar paths agree exactly.
 * BIN:  the query is quantized to 4 bits per coordinate (q_r ~= lo + step *
 *       v_j) and stored as 4 bit planes; sum over set sign bits of v =
 *       sum_k 2^k popcount(code & plane_k) (RaBitQ's bitwise estimator):
 *       <q_r, r> ~= c * <q_r, sign(r)> with c = 1/||r||_1 (RaBitQ's scaling).
 * Code-to-code distances (graph build on codes) use the same integer sums.
 *
 * AVX2 functions never call legacy-SSE code: on the CPUs measured here a
 * call with dirty upper registers cost more than a whole distance.
 */
#include "index/vector/vq_int.h"

#include "base/mem.h"
#include "index/vector/distance.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define VQ_X86 1
#else
#define VQ_X86 0
#endif

/* ======================================================================
 * Rotation
 * ====================================================================== */

static size_t pow2_floor(size_t d)
{
    size_t p = 1;
    while (p * 2 <= d)
        p *= 2;
    return p;
}

hs_status vq_rot_init(vq_rot *r, size_t d, int rounds, uint64_t seed, hs_error *err)
{
    memset(r, 0, sizeof *r);
    if (d == 0 || d > VQ_MAX_DIM || rounds < 1 || rounds > VQ_MAX_ROUNDS)
        return hs_err_set(err, HS_INVALID, "rotation: bad dimension %zu or rounds %d", d, rounds);
    r->d = d;
    r->P = pow2_floor(d);
    r->rounds = rounds;
    r->perm = hs_malloc((size_t)rounds * d * sizeof *r->perm);
    r->sign = hs_malloc((size_t)rounds * d * sizeof *r->sign);
    if (!r->perm || !r->sign) {
        vq_rot_free(r);
        return hs_err_nomem(err, (size_t)rounds * d * 8);
    }
    uint64_t s = seed ^ 0x726f746174696f6eull; /* "rotation" */
    for (int t = 0; t < rounds; t++) {
        uint32_t *perm = r->perm + (size_t)t * d;
        float *sign = r->sign + (size_t)t * d;
        for (size_t i = 0; i < d; i++)
            perm[i] = (uint32_t)i;
        for (size_t i = d - 1; i > 0; i--) { /* Fisher-Yates */
            size_t j = (size_t)vq_rand_below(&s, i + 1);
            uint32_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        uint64_t bits = 0;
        for (size_t i = 0; i < d; i++) {
            if (i % 64 == 0)
                bits = vq_rand(&s);
            sign[i] = (bits >> (i % 64)) & 1 ? -1.0f : 1.0f;
        }
    }
    return HS_OK;
}

void vq_rot_free(vq_rot *r)
{
    hs_free(r->perm);
    hs_free(r->sign);
    r->perm = NULL;
    r->sign = NULL;
}

/* In-place normalized Walsh-Hadamard transform of x[0..n), n a power of 2. */
static void fwht_scalar(float *x, size_t n)
{
    size_t h = 1;
    if (n >= 4) { /* first two stages fused: radix 4 */
        for (size_t i = 0; i < n; i += 4) {
            float a = x[i], b = x[i + 1], c = x[i + 2], e = x[i + 3];
            float s0 = a + b, d0 = a - b, s1 = c + e, d1 = c - e;
            x[i] = s0 + s1;
            x[i + 1] = d0 + d1;
            x[i + 2] = s0 - s1;
            x[i + 3] = d0 - d1;
        }
        h = 4;
    }
    for (; h < n; h *= 2)
        for (size_t i = 0; i < n; i += 2 * h)
            for (size_t j = i; j < i + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    float s = (float)(1.0 / sqrt((double)n));
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

#if VQ_X86
__attribute__((target("avx2,fma"))) static void fwht_avx2(float *x, size_t n)
{
    if (n < 32) {
        fwht_scalar(x, n);
        return;
    }
    /* stages h = 1, 2, 4 inside each 8-float register */
    const __m256 sg1 = _mm256_setr_ps(1, -1, 1, -1, 1, -1, 1, -1);
    const __m256 sg2 = _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1);
    const __m256 sg4 = _mm256_setr_ps(1, 1, 1, 1, -1, -1, -1, -1);
    for (size_t i = 0; i < n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 sw = _mm256_permute_ps(v, 0xb1);           /* swap pairs */
        v = _mm256_fmadd_ps(v, sg1, sw);                  /* a+b, a-b... */
        sw = _mm256_permute_ps(v, 0x4e);                  /* swap 64-bit halves */
        v = _mm256_fmadd_ps(v, sg2, sw);
        sw = _mm256_permute2f128_ps(v, v, 0x01);          /* swap 128-bit lanes */
        v = _mm256_fmadd_ps(v, sg4, sw);
        _mm256_storeu_ps(x + i, v);
    }
    for (size_t h = 8; h < n; h *= 2)
        for (size_t i = 0; i < n; i += 2 * h)
            for (size_t j = i; j < i + h; j += 8) {
                __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + h);
                _mm256_storeu_ps(x + j, _mm256_add_ps(a, b));
                _mm256_storeu_ps(x + j + h, _mm256_sub_ps(a, b));
            }
    const __m256 s = _mm256_set1_ps((float)(1.0 / sqrt((double)n)));
    for (size_t i = 0; i < n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
}
#endif

static void fwht(float *x, size_t n)
{
#if VQ_X86
    if (vq_use_avx2()) {
        fwht_avx2(x, n);
        return;
    }
#endif
    fwht_scalar(x, n);
}

void vq_rot_apply(const vq_rot *r, const float *x, float *out, float *tmp)
{
    size_t d = r->d, P = r->P;
    const float *src = x;
    for (int t = 0; t < r->rounds; t++) {
        const uint32_t *perm = r->perm + (size_t)t * d;
        const float *sign = r->sign + (size_t)t * d;
        for (size_t i = 0; i < d; i++)
            tmp[i] = sign[i] * src[perm[i]];
        fwht(tmp, P);
        if (d > P)
            fwht(tmp + d - P, P);
        memcpy(out, tmp, d * sizeof *out);
        src = out;
    }
    if (r->rounds == 0 && out != x)
        memcpy(out, x, d * sizeof *out);
}

void vq_rot_inverse(const vq_rot *r, const float *x, float *out, float *tmp)
{
    size_t d = r->d, P = r->P;
    const float *src = x;
    for (int t = r->rounds - 1; t >= 0; t--) {
        const uint32_t *perm = r->perm + (size_t)t * d;
        const float *sign = r->sign + (size_t)t * d;
        memcpy(tmp, src, d * sizeof *tmp);
        if (d > P)
            fwht(tmp + d - P, P);
        fwht(tmp, P);
        for (size_t i = 0; i < d; i++)
            out[perm[i]] = sign[i] * tmp[i];
        src = out;
    }
    if (r->rounds == 0 && out != x)
        memcpy(out, x, d * sizeof *out);
}

/* ======================================================================
 * Lloyd-Max codebooks
 * ====================================================================== */

static double phi(double x) { return exp(-0.5 * x * x) * 0.39894228040143267794; }

/* P(a < Z < b) for Z ~ N(0,1), accurate in both tails. */
static double gauss_mass(double a, double b)
{
    const double r = 0.70710678118654752440;
    if (a >= 0)
        return 0.5 * (erfc(a * r) - erfc(b * r));
    if (b <= 0)
        return 0.5 * (erfc(-b * r) - erfc(-a * r));
    return 1.0 - 0.5 * erfc(b * r) - 0.5 * erfc(-a * r);
}

/* Phi^-1(p) by bisection (p in (0,1)). */
static double gauss_quantile(double p)
{
    double lo = -40, hi = 40;
    for (int i = 0; i < 200 && hi - lo > 1e-13; i++) {
        double mid = 0.5 * (lo + hi);
        if (gauss_mass(-INFINITY, mid) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

void vq_lloyd_gauss(int L, float *level)
{
    double c[256], b[257];
    for (int k = 0; k < L; k++)
        c[k] = sqrt(3.0) * gauss_quantile((k + 0.5) / L);
    for (int it = 0; it < 3000; it++) {
        b[0] = -INFINITY;
        b[L] = INFINITY;
        for (int k = 1; k < L; k++)
            b[k] = 0.5 * (c[k - 1] + c[k]);
        double change = 0;
        for (int k = 0; k < L; k++) {
            double m = gauss_mass(b[k], b[k + 1]);
            double pa = isinf(b[k]) ? 0 : phi(b[k]), pb = isinf(b[k + 1]) ? 0 : phi(b[k + 1]);
            double nc = m > 0 ? (pa - pb) / m : c[k];
            change = fmax(change, fabs(nc - c[k]));
            c[k] = nc;
        }
        if (change < 1e-10)
            break;
    }
    for (int k = 0; k < L; k++)
        level[k] = (float)c[k];
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* First index i in s[0..n) with s[i] >= v. */
static size_t lower_bound_f(const float *s, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)s[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void vq_lloyd_fit(float *s, size_t n, int L, float *level)
{
    if (n < (size_t)L * 64)
        return; /* too few samples: keep the Gaussian codebook */
    qsort(s, n, sizeof *s, cmp_float);
    double *pre = hs_malloc((n + 1) * sizeof *pre);
    if (!pre)
        return; /* keeping the Gaussian codebook is a fine answer */
    pre[0] = 0;
    for (size_t i = 0; i < n; i++)
        pre[i + 1] = pre[i] + s[i];
    double c[256];
    for (int k = 0; k < L; k++)
        c[k] = level[k];
    for (int it = 0; it < 1000; it++) {
        size_t start = 0;
        double change = 0;
        for (int k = 0; k < L; k++) {
            size_t end = k == L - 1 ? n : lower_bound_f(s, n, 0.5 * (c[k] + c[k + 1]));
            if (end > start) {
                double nc = (pre[end] - pre[start]) / (double)(end - start);
                change = fmax(change, fabs(nc - c[k]));
                c[k] = nc;
            }
            start = end;
        }
        if (change < 1e-7)
            break;
    }
    /* keep the levels strictly increasing (an empty cell could tie) */
    int ok = 1;
    for (int k = 1; k < L; k++)
        ok &= c[k] > c[k - 1];
    if (ok)
        for (int k = 0; k < L; k++)
            level[k] = (float)c[k];
    hs_free(pre);
}

/* Uniform levels lo + step * k (k < L) on samples s[0..n) (sorted), by
 * Lloyd's alternation for a uniform quantizer: assign each sample to the
 * nearest level, then refit (lo, step) by least squares; starts from the
 * Gaussian optimum (clip at +-3.92 for L = 256) and keeps it when n is
 * small.  MSE for N(0,1): 8.8e-5 at L = 256 (Lloyd-Max: 4.1e-5). */
static void uniform_fit(const float *s, size_t n, int L, float *level)
{
    double lo = -3.92, step = 2 * 3.92 / (L - 1);
    double *pre = n >= (size_t)L * 64 ? hs_malloc((n + 1) * sizeof *pre) : NULL;
    if (pre) {
        pre[0] = 0;
        for (size_t i = 0; i < n; i++)
            pre[i + 1] = pre[i] + s[i];
        for (int it = 0; it < 200; it++) {
            /* normal equations of min sum_k sum_{i in k} (y_i - lo - step k)^2 */
            double N = 0, K = 0, KK = 0, Y = 0, KY = 0;
            size_t start = 0;
            for (int k = 0; k < L; k++) {
                size_t end = k == L - 1 ? n : lower_bound_f(s, n, lo + step * (k + 0.5));
                double cnt = (double)(end - start), sum = pre[end] - pre[start];
                N += cnt;
                K += cnt * k;
                KK += cnt * (double)k * k;
                Y += sum;
                KY += sum * k;
                start = end;
            }
            double det = N * KK - K * K;
            if (!(det > 0))
                break;
            double nstep = (N * KY - K * Y) / det, nlo = (Y - nstep * K) / N;
            if (!(nstep > 0) || !isfinite(nlo))
                break;
            double change = fabs(nstep - step) * L + fabs(nlo - lo);
            lo = nlo;
            step = nstep;
            if (change < 1e-9)
                break;
        }
        hs_free(pre);
    }
    for (int k = 0; k < L; k++)
        level[k] = (float)(lo + step * k);
}

static int tq_levels(vq_type t) { return t == VQ_TQ8 ? 256 : t == VQ_TQ4 ? 16 : 0; }

/* Snaps TQ4's 16 increasing levels to level0 + step * u, u in 0..127. */
static void tq4_snap(float *level)
{
    double lo = level[0], step = ((double)level[15] - level[0]) / VQ_TQ4_GRID;
    int prev = -1;
    for (int k = 0; k < 16; k++) {
        int u = (int)lrint((level[k] - lo) / step);
        if (u <= prev)
            u = prev + 1;
        if (u > VQ_TQ4_GRID - (15 - k))
            u = VQ_TQ4_GRID - (15 - k);
        level[k] = (float)(lo + step * u);
        prev = u;
    }
}

void vq_tq_finish(vq *q)
{
    int L = q->n_levels;
    for (int k = 0; k < 256; k++)
        q->bound[k] = k + 1 < L ? 0.5f * (q->level[k] + q->level[k + 1]) : INFINITY;
    q->uniform = 0;
    if (q->type == VQ_TQ8) {
        double lo = q->level[0], step = ((double)q->level[255] - lo) / 255;
        int uni = step > 0;
        for (int k = 0; k < 256 && uni; k++)
            uni = fabs(q->level[k] - (lo + step * k)) <= 1e-4 * step;
        q->uniform = uni;
        q->level0 = (float)lo;
        q->level_step = (float)step;
    }
    if (q->type == VQ_TQ4) {
        q->level0 = q->level[0];
        q->level_step = (q->level[15] - q->level[0]) / VQ_TQ4_GRID;
        for (int k = 0; k < 16; k++) {
            double u = q->level_step > 0 ? (q->level[k] - q->level0) / q->level_step : 0;
            q->level_u[k] = (uint8_t)(u < 0 ? 0 : u > VQ_TQ4_GRID ? VQ_TQ4_GRID : lrint(u));
        }
    }
}

/* ======================================================================
 * Training, encoding, decoding
 * ====================================================================== */

/* ||x|| and u = x / ||x|| (zeros for a zero or non-finite norm). */
static float unit(const float *x, size_t d, float *u)
{
    double s = 0;
    for (size_t j = 0; j < d; j++)
        s += (double)x[j] * x[j];
    double n = sqrt(s);
    if (!(n > 0) || !isfinite(n)) {
        memset(u, 0, d * sizeof *u);
        return 0;
    }
    float inv = (float)(1.0 / n);
    for (size_t j = 0; j < d; j++)
        u[j] = x[j] * inv;
    return (float)n;
}

hs_status vq_tq_train(vq *q, const float *x, const size_t *rows, size_t n_rows, hs_error *err)
{
    size_t d = q->d;
    HS_TRY(vq_rot_init(&q->rot, d, VQ_ROT_ROUNDS, q->seed, err));
    q->n_levels = tq_levels(q->type);
    if (q->type == VQ_BIN)
        return HS_OK;
    int L = q->n_levels;
    if (q->type == VQ_TQ8)
        uniform_fit(NULL, 0, L, q->level);
    else
        vq_lloyd_gauss(L, q->level);

    /* up to 2^20 rotated coordinates from rows spread over the sample */
    size_t use = ((size_t)1 << 20) / d + 1;
    if (use > n_rows)
        use = n_rows;
    if (use == 0) { /* no data: the Gaussian codebook */
        if (q->type == VQ_TQ4)
            tq4_snap(q->level);
        vq_tq_finish(q);
        return HS_OK;
    }
    float *s = hs_malloc(use * d * sizeof *s);
    float *u = hs_malloc(2 * d * sizeof *u);
    if (!s || !u) {
        hs_free(s);
        hs_free(u);
        return hs_err_nomem(err, use * d * sizeof *s);
    }
    size_t ns = 0;
    float scale = (float)sqrt((double)d);
    for (size_t i = 0; i < use; i++) {
        size_t row = rows[(size_t)((double)i * n_rows / use)];
        if (unit(x + row * d, d, u) == 0)
            continue;
        vq_rot_apply(&q->rot, u, u, u + d);
        for (size_t j = 0; j < d; j++)
            s[ns++] = u[j] * scale;
    }
    if (q->type == VQ_TQ8) {
        qsort(s, ns, sizeof *s, cmp_float);
        uniform_fit(s, ns, L, q->level);
    } else {
        vq_lloyd_fit(s, ns, L, q->level);
    }
    hs_free(s);
    hs_free(u);
    if (q->type == VQ_TQ4)
        tq4_snap(q->level);
    vq_tq_finish(q);
    return HS_OK;
}

/* Index of the level nearest to y (bounds increasing; NaN -> 0). */
static inline unsigned tq_index(const float *bound, int L, float y)
{
    unsigned k = 0;
    for (unsigned step = (unsigned)L / 2; step; step /= 2)
        k += y >= bound[k + step - 1] ? step : 0;
    return k;
}

void vq_tq_encode_one(const vq *q, const float *x, uint8_t *code, float *tmp)
{
    size_t d = q->d;
    float *u = tmp, *scratch = tmp + d;
    float n = unit(x, d, u);
    if (q->metric == HS_METRIC_COSINE && n > 0)
        n = 1;
    vq_put_f32(code, n);
    vq_rot_apply(&q->rot, u, u, scratch);
    float scale = (float)sqrt((double)d);
    if (q->type == VQ_TQ8) {
        for (size_t j = 0; j < d; j++)
            code[4 + j] = (uint8_t)tq_index(q->bound, 256, u[j] * scale);
    } else if (q->type == VQ_TQ4) {
        uint8_t *c = code + 4;
        memset(c, 0, (d + 1) / 2);
        for (size_t j = 0; j < d; j++)
            c[j / 2] |= (uint8_t)(tq_index(q->bound, 16, u[j] * scale) << (4 * (j & 1)));
    } else { /* VQ_BIN */
        uint8_t *c = code + 8;
        double l1 = 0;
        memset(c, 0, (d + 7) / 8);
        for (size_t j = 0; j < d; j++) {
            l1 += fabsf(u[j]);
            if (u[j] > 0)
                c[j / 8] |= (uint8_t)(1u << (j % 8));
        }
        vq_put_f32(code + 4, l1 > 0 ? (float)(1.0 / l1) : 0.0f);
    }
}

void vq_tq_decode_one(const vq *q, const uint8_t *code, float *out, float *tmp)
{
    size_t d = q->d;
    float n = vq_get_f32(code);
    float inv = (float)(1.0 / sqrt((double)d));
    if (q->type == VQ_TQ8) {
        for (size_t j = 0; j < d; j++)
            tmp[j] = q->level[code[4 + j]] * inv;
    } else if (q->type == VQ_TQ4) {
        for (size_t j = 0; j < d; j++)
            tmp[j] = q->level[(code[4 + j / 2] >> (4 * (j & 1))) & 15] * inv;
    } else {
        float c = vq_get_f32(code + 4);
        float a = c > 0 ? (float)(1.0 / (c * (double)d)) : 0.0f; /* ||r||_1 / d */
        for (size_t j = 0; j < d; j++)
            tmp[j] = (code[8 + j / 8] >> (j % 8)) & 1 ? a : -a;
    }
    vq_rot_inverse(&q->rot, tmp, out, tmp + d);
    for (size_t j = 0; j < d; j++)
        out[j] *= n;
}

/* ======================================================================
 * Asymmetric distances
 * ====================================================================== */

static inline float finish_dist(const vq_query *qq, float xn, float dot)
{
    switch (qq->q->metric) {
    case HS_METRIC_COSINE: return 1.0f - dot;
    case HS_METRIC_IP: return -xn * dot;
    default: return qq->qn2 + xn * xn - 2.0f * xn * dot;
    }
}

/* ---- TQ8 ---- */

/* Uniform levels (what training makes): integer sum_j qi_j * code_j, with
 * codes widened to int16 and pmaddwd against the int16 query; the query's
 * range keeps every int32 lane from overflowing (vq_tq_query_new). */
static int64_t tq8u_sum_scalar(const int16_t *qi, const uint8_t *c, size_t d)
{
    int64_t s = 0;
    for (size_t j = 0; j < d; j++)
        s += qi[j] * c[j];
    return s;
}

#if VQ_X86
__attribute__((target("avx2,fma"))) static int64_t tq8u_sum_avx2(const int16_t *qi,
                                                                 const uint8_t *c, size_t d)
{
    __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    size_t j = 0;
    for (; j + 32 <= d; j += 32) {
        __m256i v0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(c + j)));
        __m256i v1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(c + j + 16)));
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(v0, _mm256_loadu_si256((const __m256i *)(qi + j))));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(v1, _mm256_loadu_si256((const __m256i *)(qi + j + 16))));
    }
    if (j + 16 <= d) {
        __m256i v0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(c + j)));
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(v0, _mm256_loadu_si256((const __m256i *)(qi + j))));
        j += 16;
    }
    /* lanes to int64 before adding them up */
    __m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(a0)),
                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a0, 1)));
    w = _mm256_add_epi64(w, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a1)));
    w = _mm256_add_epi64(w, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a1, 1)));
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    int64_t s = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
    for (; j < d; j++)
        s += qi[j] * c[j];
    return s;
}
#endif

static float tq8u_dist_scalar(const vq_query *qq, const uint8_t *code)
{
    float dot = qq->dot_a + qq->dot_b * (float)tq8u_sum_scalar(qq->qi16, code + 4, qq->q->d);
    return finish_dist(qq, vq_get_f32(code), dot);
}

#if VQ_X86
static float tq8u_dist_avx2(const vq_query *qq, const uint8_t *code)
{
    float dot = qq->dot_a + qq->dot_b * (float)tq8u_sum_avx2(qq->qi16, code + 4, qq->q->d);
    return finish_dist(qq, vq_get_f32(code), dot);
}
#endif

/* Any other increasing levels (parameters written by someone else): a float
 * table lookup per coordinate.  Table lookups, scalar or gathered, cost
 * 5-10x the integer loop above, which is why training makes uniform levels. */
static float tq8_dist_table(const vq_query *qq, const uint8_t *code)
{
    const float *T = qq->table, *q = qq->qv;
    const uint8_t *c = code + 4;
    size_t d = qq->q->d, j = 0;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; j + 4 <= d; j += 4) {
        s0 += q[j] * T[c[j]];
        s1 += q[j + 1] * T[c[j + 1]];
        s2 += q[j + 2] * T[c[j + 2]];
        s3 += q[j + 3] * T[c[j + 3]];
    }
    for (; j < d; j++)
        s0 += q[j] * T[c[j]];
    return finish_dist(qq, vq_get_f32(code), (s0 + s1) + (s2 + s3));
}

/* ---- TQ4 ---- */

static int32_t tq4_sum_scalar(const uint8_t *u, const int8_t *qlo, const int8_t *qhi,
                              const uint8_t *c, size_t nb)
{
    int32_t s = 0;
    for (size_t b = 0; b < nb; b++)
        s += qlo[b] * u[c[b] & 15] + qhi[b] * u[c[b] >> 4];
    return s;
}

#if VQ_X86
/* SSSE3 is part of the x86-64-v2 baseline the library is built for. */
__attribute__((target("ssse3"))) static int32_t tq4_sum_ssse3(const uint8_t *u,
                                                              const int8_t *qlo,
                                                              const int8_t *qhi,
                                                              const uint8_t *c, size_t nb)
{
    const __m128i lut = _mm_loadu_si128((const __m128i *)u);
    const __m128i m4 = _mm_set1_epi8(0x0f), ones = _mm_set1_epi16(1);
    __m128i acc = _mm_setzero_si128();
    size_t b = 0;
    for (; b + 16 <= nb; b += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(c + b));
        __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(v, m4));
        __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(v, 4), m4));
        __m128i p0 = _mm_maddubs_epi16(lo, _mm_loadu_si128((const __m128i *)(qlo + b)));
        __m128i p1 = _mm_maddubs_epi16(hi, _mm_loadu_si128((const __m128i *)(qhi + b)));
        acc = _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(p0, ones), _mm_madd_epi16(p1, ones)));
    }
    acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4e));
    acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xb1));
    return _mm_cvtsi128_si32(acc) + tq4_sum_scalar(u, qlo + b, qhi + b, c + b, nb - b);
}

/* The 32-byte loop, then a 16-byte step and the scalar tail; all VEX-encoded
 * (calling legacy-SSE code with dirty upper registers costs more than the
 * whole sum on some CPUs). */
__attribute__((target("avx2,fma"))) static int32_t tq4_sum_avx2(const uint8_t *u,
                                                                const int8_t *qlo,
                                                                const int8_t *qhi,
                                                                const uint8_t *c, size_t nb)
{
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)u));
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    __m256i acc = _mm256_setzero_si256();
    size_t b = 0;
    for (; b + 32 <= nb; b += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(c + b));
        __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
        __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(qlo + b)));
        __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(qhi + b)));
        acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(p0, ones),
                                                     _mm256_madd_epi16(p1, ones)));
    }
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    if (b + 16 <= nb) {
        const __m128i l128 = _mm256_castsi256_si128(lut), m = _mm_set1_epi8(0x0f);
        __m128i v = _mm_loadu_si128((const __m128i *)(c + b));
        __m128i lo = _mm_shuffle_epi8(l128, _mm_and_si128(v, m));
        __m128i hi = _mm_shuffle_epi8(l128, _mm_and_si128(_mm_srli_epi16(v, 4), m));
        __m128i p0 = _mm_maddubs_epi16(lo, _mm_loadu_si128((const __m128i *)(qlo + b)));
        __m128i p1 = _mm_maddubs_epi16(hi, _mm_loadu_si128((const __m128i *)(qhi + b)));
        const __m128i one = _mm_set1_epi16(1);
        s = _mm_add_epi32(s, _mm_add_epi32(_mm_madd_epi16(p0, one), _mm_madd_epi16(p1, one)));
        b += 16;
    }
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    int32_t r = _mm_cvtsi128_si32(s);
    for (; b < nb; b++)
        r += qlo[b] * u[c[b] & 15] + qhi[b] * u[c[b] >> 4];
    return r;
}
#endif

static inline float tq4_finish(const vq_query *qq, const uint8_t *code, int32_t sum)
{
    float dot = qq->dot_a + qq->dot_b * (float)sum;
    return finish_dist(qq, vq_get_f32(code), dot);
}

static float tq4_dist_scalar(const vq_query *qq, const uint8_t *code)
{
    size_t nb = (qq->q->d + 1) / 2;
    return tq4_finish(qq, code, tq4_sum_scalar(qq->q->level_u, qq->qlo, qq->qhi, code + 4, nb));
}

#if VQ_X86
static float tq4_dist_ssse3(const vq_query *qq, const uint8_t *code)
{
    size_t nb = (qq->q->d + 1) / 2;
    return tq4_finish(qq, code, tq4_sum_ssse3(qq->q->level_u, qq->qlo, qq->qhi, code + 4, nb));
}

static float tq4_dist_avx2(const vq_query *qq, const uint8_t *code)
{
    size_t nb = (qq->q->d + 1) / 2;
    return tq4_finish(qq, code, tq4_sum_avx2(qq->q->level_u, qq->qlo, qq->qhi, code + 4, nb));
}
#endif

/* ---- BIN ---- */

static float bin_dist(const vq_query *qq, const uint8_t *code)
{
    const uint8_t *c = code + 8;
    size_t nbytes = (qq->q->d + 7) / 8, words = qq->words;
    const uint64_t *pl = qq->planes;
    uint64_t pop = 0, w[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < words; i++) {
        uint64_t x = 0;
        size_t off = i * 8, len = nbytes - off < 8 ? nbytes - off : 8;
        memcpy(&x, c + off, len); /* little-endian hosts: bit j of the code = bit j of x */
        pop += (uint64_t)__builtin_popcountll(x);
        w[0] += (uint64_t)__builtin_popcountll(x & pl[i]);
        w[1] += (uint64_t)__builtin_popcountll(x & pl[words + i]);
        w[2] += (uint64_t)__builtin_popcountll(x & pl[2 * words + i]);
        w[3] += (uint64_t)__builtin_popcountll(x & pl[3 * words + i]);
    }
    float wsum = (float)(w[0] + 2 * w[1] + 4 * w[2] + 8 * w[3]);
    float set = qq->bin_lo * (float)pop + qq->bin_step * wsum; /* sum of q over set bits */
    float dot = (2.0f * set - qq->bin_sum) * vq_get_f32(code + 4);
    return finish_dist(qq, vq_get_f32(code), dot);
}

/* ======================================================================
 * Per-query state
 * ====================================================================== */

hs_status vq_tq_query_new(const vq *q, const float *query, vq_query *qq, hs_error *err)
{
    size_t d = q->d, nb = (d + 1) / 2, words = (d + 63) / 64;
    size_t bytes = 2 * d * sizeof(float) + 4 * words * sizeof(uint64_t) + d * sizeof(int16_t) +
                   2 * (nb + 32) + 64;
    qq->mem = hs_calloc(1, bytes);
    if (!qq->mem)
        return hs_err_nomem(err, bytes);
    qq->qv = qq->mem;
    float *tmp = qq->qv + d;
    qq->planes = (uint64_t *)(tmp + d);
    qq->words = words;
    qq->qi16 = (int16_t *)(qq->planes + 4 * words);
    qq->qlo = (int8_t *)(qq->qi16 + d);
    qq->qhi = qq->qlo + nb + 32;

    double s = 0;
    for (size_t j = 0; j < d; j++)
        s += (double)query[j] * query[j];
    qq->qn2 = (float)s;
    float inv = q->metric == HS_METRIC_COSINE && s > 0 ? (float)(1.0 / sqrt(s)) : 1.0f;
    for (size_t j = 0; j < d; j++)
        qq->qv[j] = query[j] * inv;
    vq_rot_apply(&q->rot, qq->qv, qq->qv, tmp);
    const float *r = qq->qv;
    float isd = (float)(1.0 / sqrt((double)d));
    int avx2 = vq_use_avx2();

    if (q->type == VQ_TQ8 && !q->uniform) {
        for (int k = 0; k < 256; k++)
            qq->table[k] = q->level[k] * isd;
        qq->dist = tq8_dist_table;
    } else if (q->type == VQ_TQ8) {
        /* int16 query; lanes sum 2 * ceil(d/16) products of 255 * |qi| */
        double lim = (double)INT32_MAX / (2.0 * 255.0 * (double)((d + 15) / 16));
        float qmax = lim < 32767 ? (float)floor(lim) : 32767.0f;
        float mx = 0;
        for (size_t j = 0; j < d; j++)
            mx = fmaxf(mx, fabsf(r[j]));
        float sc = mx > 0 && isfinite(mx) ? mx / qmax : 0.0f;
        int64_t sum = 0;
        for (size_t j = 0; j < d; j++) {
            float v = sc > 0 ? r[j] / sc : 0.0f;
            int iv = v >= qmax ? (int)qmax : v <= -qmax ? -(int)qmax : v == v ? (int)lrintf(v) : 0;
            qq->qi16[j] = (int16_t)iv;
            sum += iv;
        }
        qq->qscale = sc;
        qq->dot_a = (float)((double)sc * q->level0 * isd * (double)sum);
        qq->dot_b = sc * q->level_step * isd;
        qq->dist = tq8u_dist_scalar;
#if VQ_X86
        if (avx2)
            qq->dist = tq8u_dist_avx2;
#endif
    } else if (q->type == VQ_TQ4) {
        float mx = 0;
        for (size_t j = 0; j < d; j++)
            mx = fmaxf(mx, fabsf(r[j]));
        float sc = mx > 0 && isfinite(mx) ? mx / 127.0f : 0.0f;
        int32_t sum = 0;
        for (size_t j = 0; j < d; j++) {
            float v = sc > 0 ? r[j] / sc : 0.0f;
            int iv = v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? (int)lrintf(v) : 0;
            if (j & 1)
                qq->qhi[j / 2] = (int8_t)iv;
            else
                qq->qlo[j / 2] = (int8_t)iv;
            sum += iv;
        }
        qq->qscale = sc;
        qq->qi_sum = sum;
        qq->dot_a = sc * q->level0 * isd * (float)sum;
        qq->dot_b = sc * q->level_step * isd;
        qq->dist = tq4_dist_scalar;
#if VQ_X86
        qq->dist = avx2 ? tq4_dist_avx2 : tq4_dist_ssse3;
#endif
    } else { /* VQ_BIN */
        float lo = INFINITY, hi = -INFINITY;
        for (size_t j = 0; j < d; j++) {
            lo = fminf(lo, r[j]);
            hi = fmaxf(hi, r[j]);
        }
        if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
            lo = hi = 0;
        float step = (hi - lo) / 15.0f;
        double total = 0;
        for (size_t j = 0; j < d; j++) {
            float v = step > 0 ? (r[j] - lo) / step : 0.0f;
            int iv = v >= 15.0f ? 15 : v > 0 ? (int)lrintf(v) : 0;
            for (int k = 0; k < 4; k++)
                if (iv >> k & 1)
                    qq->planes[(size_t)k * words + j / 64] |= 1ull << (j % 64);
            total += lo + (double)step * iv;
        }
        qq->bin_lo = lo;
        qq->bin_step = step;
        qq->bin_sum = (float)total;
        qq->dist = bin_dist;
    }
    (void)avx2;
    return HS_OK;
}

/* ======================================================================
 * Symmetric distances (graph build on codes)
 * ====================================================================== */

/* Integer sums over two codes: sab = sum ua*ub, sa = sum ua, sb = sum ub,
 * where u is the code byte (TQ8) or level_u of each nibble (TQ4, n full
 * bytes = 2n coordinates). */
typedef struct code_sums {
    int64_t sab, sa, sb;
} code_sums;

static code_sums tq8_sums_scalar(const uint8_t *a, const uint8_t *b, size_t n)
{
    code_sums r = {0, 0, 0};
    for (size_t j = 0; j < n; j++) {
        r.sab += a[j] * b[j];
        r.sa += a[j];
        r.sb += b[j];
    }
    return r;
}

static code_sums tq4_sums_scalar(const uint8_t *u, const uint8_t *a, const uint8_t *b, size_t n)
{
    code_sums r = {0, 0, 0};
    for (size_t j = 0; j < n; j++) {
        int al = u[a[j] & 15], ah = u[a[j] >> 4], bl = u[b[j] & 15], bh = u[b[j] >> 4];
        r.sab += al * bl + ah * bh;
        r.sa += al + ah;
        r.sb += bl + bh;
    }
    return r;
}

#if VQ_X86
__attribute__((target("avx2,fma"))) static int64_t hsum_epi32(__m256i v)
{
    __m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

__attribute__((target("avx2,fma"))) static int64_t hsum_epi64(__m256i w)
{
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

__attribute__((target("avx2,fma"))) static code_sums tq8_sums_avx2(const uint8_t *a,
                                                                   const uint8_t *b, size_t n)
{
    __m256i ab = _mm256_setzero_si256(), sa = ab, sb = ab, zero = ab;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m256i va = _mm256_loadu_si256((const __m256i *)(a + j));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + j));
        __m256i a0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(va));
        __m256i a1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(va, 1));
        __m256i b0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(vb));
        __m256i b1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(vb, 1));
        ab = _mm256_add_epi32(ab, _mm256_add_epi32(_mm256_madd_epi16(a0, b0),
                                                   _mm256_madd_epi16(a1, b1)));
        sa = _mm256_add_epi64(sa, _mm256_sad_epu8(va, zero));
        sb = _mm256_add_epi64(sb, _mm256_sad_epu8(vb, zero));
    }
    code_sums r = {hsum_epi32(ab), hsum_epi64(sa), hsum_epi64(sb)};
    for (; j < n; j++) {
        r.sab += a[j] * b[j];
        r.sa += a[j];
        r.sb += b[j];
    }
    return r;
}

__attribute__((target("avx2,fma"))) static code_sums tq4_sums_avx2(const uint8_t *u,
                                                                   const uint8_t *a,
                                                                   const uint8_t *b, size_t n)
{
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)u));
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    __m256i ab = _mm256_setzero_si256(), sa = ab, sb = ab, zero = ab;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m256i va = _mm256_loadu_si256((const __m256i *)(a + j));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + j));
        __m256i al = _mm256_shuffle_epi8(lut, _mm256_and_si256(va, m4));
        __m256i ah = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(va, 4), m4));
        __m256i bl = _mm256_shuffle_epi8(lut, _mm256_and_si256(vb, m4));
        __m256i bh = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(vb, 4), m4));
        /* u <= 127: pmaddubsw's signed operand holds ub as is */
        ab = _mm256_add_epi32(ab, _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(al, bl), ones),
                                                   _mm256_madd_epi16(_mm256_maddubs_epi16(ah, bh), ones)));
        sa = _mm256_add_epi64(sa, _mm256_add_epi64(_mm256_sad_epu8(al, zero), _mm256_sad_epu8(ah, zero)));
        sb = _mm256_add_epi64(sb, _mm256_add_epi64(_mm256_sad_epu8(bl, zero), _mm256_sad_epu8(bh, zero)));
    }
    code_sums r = {hsum_epi32(ab), hsum_epi64(sa), hsum_epi64(sb)};
    for (; j < n; j++) {
        int xl = u[a[j] & 15], xh = u[a[j] >> 4], yl = u[b[j] & 15], yh = u[b[j] >> 4];
        r.sab += xl * yl + xh * yh;
        r.sa += xl + xh;
        r.sb += yl + yh;
    }
    return r;
}
#endif

/* sum_j level[a_j] * level[b_j] over the d coordinates. */
static double level_dot(const vq *q, const uint8_t *a, const uint8_t *b)
{
    size_t d = q->d;
    const float *L = q->level;
    if (q->type == VQ_TQ8 && !q->uniform) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += L[a[j]] * L[b[j]];
        return s;
    }
    size_t n = q->type == VQ_TQ8 ? d : d / 2; /* TQ4: full bytes */
    size_t coords = q->type == VQ_TQ8 ? d : 2 * n;
    code_sums r;
#if VQ_X86
    if (vq_use_avx2())
        r = q->type == VQ_TQ8 ? tq8_sums_avx2(a, b, n) : tq4_sums_avx2(q->level_u, a, b, n);
    else
#endif
        r = q->type == VQ_TQ8 ? tq8_sums_scalar(a, b, n) : tq4_sums_scalar(q->level_u, a, b, n);
    double l0 = q->level0, st = q->level_step;
    double s = (double)coords * l0 * l0 + l0 * st * (double)(r.sa + r.sb) + st * st * (double)r.sab;
    if (coords < d) /* TQ4, odd d: the low nibble of the last byte */
        s += L[a[n] & 15] * L[b[n] & 15];
    return s;
}

float vq_tq_code_dist(const vq *q, const uint8_t *a, const uint8_t *b)
{
    size_t d = q->d;
    float na = vq_get_f32(a), nb = vq_get_f32(b), dot;
    if (q->type == VQ_BIN) {
        size_t nbytes = (d + 7) / 8;
        uint64_t ham = vd_kernels()->hamming_bytes(a + 8, b + 8, nbytes);
        float ca = vq_get_f32(a + 4), cb = vq_get_f32(b + 4);
        dot = ca > 0 && cb > 0
                  ? (float)(((double)d - 2.0 * (double)ham) / ((double)d * d * ca * cb))
                  : 0.0f;
    } else {
        dot = (float)(level_dot(q, a + 4, b + 4) / (double)d);
    }
    switch (q->metric) {
    case HS_METRIC_COSINE: return 1.0f - dot;
    case HS_METRIC_IP: return -na * nb * dot;
    default: return na * na + nb * nb - 2.0f * na * nb * dot;
    }
}
