/*
 * index/vector/distance.c - scalar distance kernels, CPU detection and
 * dispatch, and the metric ordering used by search.
 *
 * Levels.  Each level is a vd_table of function pointers built in its own
 * file, compiled with function target attributes so that the library needs
 * no -march flag:
 *
 *   level    file               needs (checked at run time)
 *   scalar   distance.c         nothing
 *   avx2     distance_avx2.c    AVX2, FMA, F16C (and OS support for YMM state)
 *   avx512   distance_avx512.c  the above + AVX-512 F, BW, VL (ZMM state);
 *                               popcounts use VPOPCNTDQ when present, else AVX2
 *   neon     distance_neon.c    aarch64 (Advanced SIMD is architectural)
 *
 * Dispatch.  The first call of vd_kernels() detects the CPU (pthread_once)
 * and stores the best table in an atomic pointer; hs_simd_set_level swaps
 * it.  A caller that holds a table pointer keeps using that level: tables
 * are static and never freed.
 *
 * Scalar kernels.  Eight independent float accumulators (a fixed order, so
 * results do not depend on the compiler) which the compiler may map to SSE
 * registers; the tail goes into the accumulators in order.  They are the
 * fallback on unknown CPUs, not the test reference: tests compare every
 * level with a double-precision reference of their own.
 *
 * Ordering distances ("smaller is nearer", vd_order_dist_f32):
 *   L2 -> sum (a-b)^2    COSINE -> 1 - clamp(a.b / (|a| |b|), -1, 1)
 *   IP -> -a.b           L1 -> sum |a-b|
 *   HAMMING / JACCARD on floats -> the dense definitions of vector.h
 * vd_user_dist maps them back to what the public API returns.
 */
#include "index/vector/distance_int.h"
#include "base/error.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#if defined(VD_X86)
#include <cpuid.h>
#endif

/* ------------------------------------------------------------------ */
/* Scalar kernels                                                       */
/* ------------------------------------------------------------------ */

#define VD_LANES 8

static float sum_lanes(const float s[VD_LANES])
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static float sc_l2sq_f32(const float *a, const float *b, size_t d)
{
    float s[VD_LANES] = {0};
    size_t i = 0, k;
    for (; i + VD_LANES <= d; i += VD_LANES)
        for (k = 0; k < VD_LANES; k++) {
            float t = a[i + k] - b[i + k];
            s[k] += t * t;
        }
    for (k = 0; i < d; i++, k++) {
        float t = a[i] - b[i];
        s[k] += t * t;
    }
    return sum_lanes(s);
}

static float sc_ip_f32(const float *a, const float *b, size_t d)
{
    float s[VD_LANES] = {0};
    size_t i = 0, k;
    for (; i + VD_LANES <= d; i += VD_LANES)
        for (k = 0; k < VD_LANES; k++)
            s[k] += a[i + k] * b[i + k];
    for (k = 0; i < d; i++, k++)
        s[k] += a[i] * b[i];
    return sum_lanes(s);
}

static float sc_l1_f32(const float *a, const float *b, size_t d)
{
    float s[VD_LANES] = {0};
    size_t i = 0, k;
    for (; i + VD_LANES <= d; i += VD_LANES)
        for (k = 0; k < VD_LANES; k++)
            s[k] += fabsf(a[i + k] - b[i + k]);
    for (k = 0; i < d; i++, k++)
        s[k] += fabsf(a[i] - b[i]);
    return sum_lanes(s);
}

static float sc_norm2_f32(const float *a, size_t d)
{
    return sc_ip_f32(a, a, d);
}

static void sc_ip_norms_f32(const float *a, const float *b, size_t d, float out[3])
{
    float ab[VD_LANES] = {0}, aa[VD_LANES] = {0}, bb[VD_LANES] = {0};
    size_t i = 0, k;
    for (; i + VD_LANES <= d; i += VD_LANES)
        for (k = 0; k < VD_LANES; k++) {
            ab[k] += a[i + k] * b[i + k];
            aa[k] += a[i + k] * a[i + k];
            bb[k] += b[i + k] * b[i + k];
        }
    for (k = 0; i < d; i++, k++) {
        ab[k] += a[i] * b[i];
        aa[k] += a[i] * a[i];
        bb[k] += b[i] * b[i];
    }
    out[0] = sum_lanes(ab);
    out[1] = sum_lanes(aa);
    out[2] = sum_lanes(bb);
}

static void sc_f16_to_f32(const uint16_t *in, float *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = vd_f16_to_f32(in[i]);
}

static float sc_l2sq_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    float s[VD_LANES] = {0};
    size_t i;
    for (i = 0; i < d; i++) {
        float t = vd_f16_to_f32(a[i]) - vd_f16_to_f32(b[i]);
        s[i % VD_LANES] += t * t;
    }
    return sum_lanes(s);
}

static float sc_ip_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    float s[VD_LANES] = {0};
    size_t i;
    for (i = 0; i < d; i++)
        s[i % VD_LANES] += vd_f16_to_f32(a[i]) * vd_f16_to_f32(b[i]);
    return sum_lanes(s);
}

/* int8 sums: int64 accumulation, then modulo 2^32 like the SIMD lanes. */
static int32_t sc_l2sq_i8(const int8_t *a, const int8_t *b, size_t d)
{
    int64_t s = 0;
    size_t i;
    for (i = 0; i < d; i++) {
        int32_t t = (int32_t)a[i] - (int32_t)b[i];
        s += t * t;
    }
    return (int32_t)(uint32_t)(uint64_t)s;
}

static int32_t sc_ip_i8(const int8_t *a, const int8_t *b, size_t d)
{
    int64_t s = 0;
    size_t i;
    for (i = 0; i < d; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return (int32_t)(uint32_t)(uint64_t)s;
}

uint64_t vd_scalar_hamming_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    return vd_popcount_xor(a, b, n);
}

uint64_t vd_scalar_and_count_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    return vd_popcount_and(a, b, n);
}

uint64_t vd_scalar_or_count_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    return vd_popcount_or(a, b, n);
}

static void sc_l2sq_f32_many(const float *q, const float *x, size_t n, size_t d, float *out)
{
    size_t j;
    for (j = 0; j < n; j++)
        out[j] = sc_l2sq_f32(q, x + j * d, d);
}

static void sc_ip_f32_many(const float *q, const float *x, size_t n, size_t d, float *out)
{
    size_t j;
    for (j = 0; j < n; j++)
        out[j] = sc_ip_f32(q, x + j * d, d);
}

static const vd_table scalar_table = {
    .level = VD_SCALAR,
    .name = "scalar",
    .l2sq_f32 = sc_l2sq_f32,
    .ip_f32 = sc_ip_f32,
    .l1_f32 = sc_l1_f32,
    .norm2_f32 = sc_norm2_f32,
    .l2sq_f16 = sc_l2sq_f16,
    .ip_f16 = sc_ip_f16,
    .l2sq_i8 = sc_l2sq_i8,
    .ip_i8 = sc_ip_i8,
    .hamming_bytes = vd_scalar_hamming_bytes,
    .and_count_bytes = vd_scalar_and_count_bytes,
    .or_count_bytes = vd_scalar_or_count_bytes,
    .l2sq_f32_many = sc_l2sq_f32_many,
    .ip_f32_many = sc_ip_f32_many,
    .ip_norms_f32 = sc_ip_norms_f32,
    .f16_to_f32 = sc_f16_to_f32,
};

const vd_table *vd_scalar_table(void)
{
    return &scalar_table;
}

/* ------------------------------------------------------------------ */
/* Detection and dispatch                                               */
/* ------------------------------------------------------------------ */

static const vd_table *g_levels[4];   /* by vd_level; NULL = absent */
static const vd_table *g_best;
static _Atomic(const vd_table *) g_current;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(VD_X86)
static int cpu_has_f16c(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    return (ecx & bit_F16C) != 0;
}
#endif

static void detect(void)
{
    g_levels[VD_SCALAR] = vd_scalar_table();
    g_best = g_levels[VD_SCALAR];
#if defined(VD_X86)
    __builtin_cpu_init();
    /* libgcc / compiler-rt report AVX2 and AVX-512 only when the OS saves
     * the YMM / ZMM state (XGETBV), so these checks are complete. */
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    if (avx2) {
        g_levels[VD_AVX2] = vd_avx2_table();
        g_best = g_levels[VD_AVX2];
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl")) {
            g_levels[VD_AVX512] = vd_avx512_table(__builtin_cpu_supports("avx512vpopcntdq") != 0);
            g_best = g_levels[VD_AVX512];
        }
    }
#endif
#if defined(__aarch64__)
    g_levels[VD_NEON] = vd_neon_table();
    g_best = g_levels[VD_NEON];
#endif
    atomic_store_explicit(&g_current, g_best, memory_order_release);
}

const vd_table *vd_kernels(void)
{
    const vd_table *t = atomic_load_explicit(&g_current, memory_order_acquire);
    if (HS_LIKELY(t != NULL))
        return t;
    pthread_once(&g_once, detect);
    return atomic_load_explicit(&g_current, memory_order_acquire);
}

const vd_table *vd_kernels_level(vd_level level)
{
    pthread_once(&g_once, detect);
    if ((int)level < 0 || (int)level > (int)VD_NEON)
        return NULL;
    return g_levels[level];
}

void vd_set_kernels(const vd_table *t)
{
    pthread_once(&g_once, detect);
    atomic_store_explicit(&g_current, t ? t : g_best, memory_order_release);
}

/* ------------------------------------------------------------------ */
/* Ordering distances                                                   */
/* ------------------------------------------------------------------ */

/* 1 - clamp(ab / sqrt(aa bb)); NaN when either norm is 0 (pgvector). */
double vd_cosine_from_sums(double ab, double aa, double bb)
{
    if (aa == 0 || bb == 0)
        return NAN;
    double sim = ab / sqrt(aa * bb);
    if (sim > 1)
        sim = 1;
    else if (sim < -1)
        sim = -1;
    return 1 - sim;
}

/* Dense HAMMING (positions where a != b) and JACCARD (sets of nonzero
 * positions, 0 when both are empty) over floats. */
static float dense_hamming_f32(const float *a, const float *b, size_t d)
{
    size_t i, n = 0;
    for (i = 0; i < d; i++)
        n += a[i] != b[i];
    return (float)n;
}

static float dense_jaccard_f32(const float *a, const float *b, size_t d)
{
    size_t i, inter = 0, uni = 0;
    for (i = 0; i < d; i++) {
        int x = a[i] != 0, y = b[i] != 0;
        inter += x & y;
        uni += x | y;
    }
    return uni ? (float)(1.0 - (double)inter / (double)uni) : 0.0f;
}

float vd_order_dist_f32(const vd_table *k, hs_metric m, const float *a, const float *b, size_t d)
{
    float s[3];
    if (!k)
        k = vd_kernels();
    switch (m) {
    case HS_METRIC_L2:
        return k->l2sq_f32(a, b, d);
    case HS_METRIC_IP:
        return -k->ip_f32(a, b, d);
    case HS_METRIC_L1:
        return k->l1_f32(a, b, d);
    case HS_METRIC_COSINE:
        k->ip_norms_f32(a, b, d, s);
        return (float)vd_cosine_from_sums(s[0], s[1], s[2]);
    case HS_METRIC_HAMMING:
        return dense_hamming_f32(a, b, d);
    case HS_METRIC_JACCARD:
        return dense_jaccard_f32(a, b, d);
    }
    return NAN;
}

double vd_user_dist(hs_metric m, float order_dist)
{
    switch (m) {
    case HS_METRIC_L2:
        if (isnan(order_dist))
            return NAN;
        return order_dist > 0 ? sqrt((double)order_dist) : 0.0; /* never negative */
    case HS_METRIC_IP:
        return -(double)order_dist;
    default:
        return (double)order_dist;
    }
}
