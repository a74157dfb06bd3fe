/*
 * tests/c/test_distance.c - distance kernels (index/vector/distance.h) and
 * the public API (hyperstream/vector.h).
 *
 * Oracle: double-precision references written here (plain loops, an
 * independent binary16 decoder with ldexp, byte-table popcounts), never our
 * own kernels.  Every level this CPU has (vd_kernels_level) is checked on
 * random inputs of odd and round dimensions (0..67, 127..129, 383..385,
 * 511..513, 783..785, 960, 1000), zeros, extreme magnitudes (1e30, 1e15,
 * 1e-30, denormals, mixed signs) and overflow to infinity.  Each vector is
 * its own malloc block of exactly d elements, so an over-read past a tail
 * shows up under ASan.
 *
 * Tolerance: |got - ref| <= 1e-5 * sum|terms| + tiny, where sum|terms| is
 * the sum of absolute values of the summed terms (for L2, L1 and norms the
 * result itself; for IP it bounds the cancellation that float sums cannot
 * avoid).  int8 and popcounts are exact.
 *
 * Built with -DHS_TEST_EMULATED_AVX512 (bench/distance/check_avx512_emulated.sh),
 * the same checks also run the AVX-512 kernels under SIMDe emulation.
 */
#include "harness.h"

#include "base/error.h"
#include "base/mem.h"
#include "hyperstream/vector.h"
#include "index/vector/distance_int.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

#define RTOL 1e-5
#define TINY 1e-40

/* ------------------------------------------------------------------ */
/* Random inputs                                                        */
/* ------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double urand(void)
{
    return (double)(rnd() >> 11) * 0x1p-53;
}

static float gauss(void)
{
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

enum { K_GAUSS, K_UNIT, K_EXTREME, K_ZERO, K_DENORMAL, K_LARGE, N_KINDS };
static const char *const kind_names[] = {"gauss", "unit", "extreme", "zero", "denormal", "large"};

static float value_of_kind(int kind)
{
    static const float extreme[] = {0.0f, 1e-30f, 1e-40f, 1e-3f, 1.0f, 1e15f, 1.17549435e-38f, 3.0f};
    static const float denormal[] = {0.0f, 1e-40f, 1e-44f, 1.4e-45f, 5e-39f};
    static const float large[] = {1e15f, 1e10f, 3.5e12f};
    float s = (rnd() & 1) ? -1.0f : 1.0f;
    switch (kind) {
    case K_GAUSS:
        return gauss();
    case K_UNIT:
        return (float)urand();
    case K_EXTREME:
        return s * extreme[rnd() % 8];
    case K_ZERO:
        return 0.0f;
    case K_DENORMAL:
        return s * denormal[rnd() % 5];
    default:
        return s * large[rnd() % 3] * (float)(0.5 + urand());
    }
}

static float *vec_new(size_t d, int kind)
{
    float *v = malloc(d ? d * sizeof(float) : 1);
    size_t i;
    for (i = 0; i < d; i++)
        v[i] = value_of_kind(kind);
    return v;
}

static const size_t dims[] = {0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,
                              13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,
                              26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,
                              39,  40,  41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,
                              52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  62,  63,  64,
                              65,  66,  67,  127, 128, 129, 383, 384, 385, 511, 512, 513, 783,
                              784, 785, 960, 1000};
#define N_DIMS (sizeof dims / sizeof dims[0])

/* ------------------------------------------------------------------ */
/* References                                                           */
/* ------------------------------------------------------------------ */

typedef struct ref {
    double v;     /* the exact-ish value */
    double absum; /* sum of |terms| */
} ref;

static ref ref_l2sq(const float *a, const float *b, size_t d)
{
    ref r = {0, 0};
    size_t i;
    for (i = 0; i < d; i++) {
        double t = (double)a[i] - (double)b[i];
        r.v += t * t;
    }
    r.absum = r.v;
    return r;
}

static ref ref_ip(const float *a, const float *b, size_t d)
{
    ref r = {0, 0};
    size_t i;
    for (i = 0; i < d; i++) {
        r.v += (double)a[i] * (double)b[i];
        r.absum += fabs((double)a[i] * (double)b[i]);
    }
    return r;
}

static ref ref_l1(const float *a, const float *b, size_t d)
{
    ref r = {0, 0};
    size_t i;
    for (i = 0; i < d; i++)
        r.v += fabs((double)a[i] - (double)b[i]);
    r.absum = r.v;
    return r;
}

/* binary16 decoder of its own (ldexp), independent of vd_f16_to_f32 */
static double ref_half(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

static uint16_t half_rand(void)
{
    uint16_t sign = (uint16_t)((rnd() & 1) << 15);
    uint16_t e = (uint16_t)(rnd() % 21); /* 0 (subnormal) .. 20 (up to 64) */
    uint16_t m = (uint16_t)(rnd() & 1023);
    if (rnd() % 16 == 0)
        return sign; /* zeros */
    return (uint16_t)(sign | (e << 10) | m);
}

static int popcount_byte(unsigned x)
{
    int n = 0;
    while (x) {
        n += (int)(x & 1);
        x >>= 1;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Comparison                                                           */
/* ------------------------------------------------------------------ */

static int n_reported;

static int near_ref(double got, ref r, double rtol, double atol)
{
    if (isnan(r.v))
        return isnan(got);
    if (fabs(r.v) > FLT_MAX) /* overflows float: the kernels must say infinity */
        return isinf(got) && (got > 0) == (r.v > 0);
    return fabs(got - r.v) <= rtol * r.absum + atol;
}

static int expect(const char *level, const char *fn, const char *kind, size_t d, double got,
                  ref r, double rtol, double atol)
{
    if (near_ref(got, r, rtol, atol))
        return 1;
    if (n_reported++ < 30)
        fprintf(stderr, "  %s %s (%s, d=%zu): got %.9g, want %.9g (sum|terms| %.3g)\n", level,
                fn, kind, d, got, r.v, r.absum);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The levels under test                                                */
/* ------------------------------------------------------------------ */

#ifdef HS_TEST_EMULATED_AVX512
const vd_table *vd_avx512_emulated_table(int with_vpopcntdq);
#endif

static const vd_table *levels[8];
static const char *level_names[8];
static int n_levels;

static void collect_levels(void)
{
    int l;
    for (l = VD_SCALAR; l <= VD_NEON; l++) {
        const vd_table *t = vd_kernels_level((vd_level)l);
        if (t) {
            level_names[n_levels] = t->name;
            levels[n_levels++] = t;
        }
    }
#ifdef HS_TEST_EMULATED_AVX512
    level_names[n_levels] = "avx512-emulated";
    levels[n_levels++] = vd_avx512_emulated_table(0);
    level_names[n_levels] = "avx512-emulated-vpopcntdq";
    levels[n_levels++] = vd_avx512_emulated_table(1);
#endif
    fprintf(stderr, "levels under test:");
    for (l = 0; l < n_levels; l++)
        fprintf(stderr, " %s", level_names[l]);
    fprintf(stderr, " (in use: %s)\n", vd_kernels()->name);
}

/* ------------------------------------------------------------------ */
/* Kernel tests                                                         */
/* ------------------------------------------------------------------ */

static void test_levels_present(void)
{
    CHECK(vd_kernels() != NULL);
    CHECK(vd_kernels_level(VD_SCALAR) != NULL);
    CHECK(vd_kernels_level((vd_level)99) == NULL);
    CHECK(vd_kernels_level((vd_level)-1) == NULL);
    int l;
    for (l = 0; l < n_levels; l++) {
        const vd_table *k = levels[l];
        CHECK(k->name && k->l2sq_f32 && k->ip_f32 && k->l1_f32 && k->norm2_f32 && k->l2sq_f16 &&
              k->ip_f16 && k->l2sq_i8 && k->ip_i8 && k->hamming_bytes && k->and_count_bytes &&
              k->or_count_bytes && k->l2sq_f32_many && k->ip_f32_many && k->ip_norms_f32 &&
              k->f16_to_f32);
    }
#if defined(__x86_64__)
    /* every x86-64 CPU of the last decade: make sure detection finds AVX2 */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        CHECK(vd_kernels_level(VD_AVX2) != NULL);
#endif
}

static void check_f32_pair(const vd_table *k, const char *lv, const char *kind, const float *a,
                           const float *b, size_t d)
{
    double atol = TINY * (double)(d + 1);
    float s[3];
    CHECK(expect(lv, "l2sq_f32", kind, d, k->l2sq_f32(a, b, d), ref_l2sq(a, b, d), RTOL, atol));
    CHECK(expect(lv, "ip_f32", kind, d, k->ip_f32(a, b, d), ref_ip(a, b, d), RTOL, atol));
    CHECK(expect(lv, "l1_f32", kind, d, k->l1_f32(a, b, d), ref_l1(a, b, d), RTOL, atol));
    CHECK(expect(lv, "norm2_f32", kind, d, k->norm2_f32(a, d), ref_ip(a, a, d), RTOL, atol));
    k->ip_norms_f32(a, b, d, s);
    CHECK(expect(lv, "ip_norms[ab]", kind, d, s[0], ref_ip(a, b, d), RTOL, atol));
    CHECK(expect(lv, "ip_norms[aa]", kind, d, s[1], ref_ip(a, a, d), RTOL, atol));
    CHECK(expect(lv, "ip_norms[bb]", kind, d, s[2], ref_ip(b, b, d), RTOL, atol));
}

static void test_f32_kernels(void)
{
    int l, kind, rep;
    size_t di;
    for (l = 0; l < n_levels; l++)
        for (di = 0; di < N_DIMS; di++)
            for (kind = 0; kind < N_KINDS; kind++)
                for (rep = 0; rep < 2; rep++) {
                    size_t d = dims[di];
                    /* mixed kinds too: a extreme, b gaussian */
                    float *a = vec_new(d, kind), *b = vec_new(d, rep ? K_GAUSS : kind);
                    check_f32_pair(levels[l], level_names[l], kind_names[kind], a, b, d);
                    free(a);
                    free(b);
                }
}

/* Sums that leave the float range must come out infinite, never NaN. */
static void test_f32_overflow(void)
{
    int l;
    size_t di;
    for (l = 0; l < n_levels; l++)
        for (di = 1; di < N_DIMS; di++) {
            size_t d = dims[di], pos = rnd() % d;
            const vd_table *k = levels[l];
            float *a = vec_new(d, K_UNIT), *b = vec_new(d, K_UNIT);
            a[pos] = 1e30f;
            CHECK(isinf(k->l2sq_f32(a, b, d)) && k->l2sq_f32(a, b, d) > 0);
            CHECK(isinf(k->norm2_f32(a, d)));
            CHECK(expect(level_names[l], "ip_f32 big", "overflow", d, k->ip_f32(a, b, d),
                         ref_ip(a, b, d), RTOL, 0));
            CHECK(expect(level_names[l], "l1_f32 big", "overflow", d, k->l1_f32(a, b, d),
                         ref_l1(a, b, d), RTOL, 0));
            b[pos] = 2e30f;
            CHECK(isinf(k->ip_f32(a, b, d)) && k->ip_f32(a, b, d) > 0);
            b[pos] = -2e30f;
            CHECK(isinf(k->ip_f32(a, b, d)) && k->ip_f32(a, b, d) < 0);
            free(a);
            free(b);
        }
}

static void test_f32_many(void)
{
    int l;
    size_t di, n, j;
    for (l = 0; l < n_levels; l++)
        for (di = 0; di < N_DIMS; di += 3)
            for (n = 0; n <= 9; n += 3) {
                size_t d = dims[di];
                const vd_table *k = levels[l];
                float *q = vec_new(d, K_GAUSS);
                float *x = vec_new(n * d, K_GAUSS);
                float out_l2[10], out_ip[10];
                k->l2sq_f32_many(q, x, n, d, out_l2);
                k->ip_f32_many(q, x, n, d, out_ip);
                for (j = 0; j < n; j++) {
                    float s = k->l2sq_f32(q, x + j * d, d), p = k->ip_f32(q, x + j * d, d);
                    /* bit for bit the single-pair kernels */
                    CHECK(memcmp(&s, &out_l2[j], 4) == 0);
                    CHECK(memcmp(&p, &out_ip[j], 4) == 0);
                }
                free(q);
                free(x);
            }
}

static void test_f16_kernels(void)
{
    int l, rep;
    size_t di, i;
    for (l = 0; l < n_levels; l++)
        for (di = 0; di < N_DIMS; di++)
            for (rep = 0; rep < 3; rep++) {
                size_t d = dims[di];
                const vd_table *k = levels[l];
                uint16_t *a = malloc(d * 2 + 1), *b = malloc(d * 2 + 1);
                float *fa = malloc(d * 4 + 1);
                ref l2 = {0, 0}, ip = {0, 0};
                for (i = 0; i < d; i++) {
                    a[i] = half_rand();
                    b[i] = half_rand();
                    double x = ref_half(a[i]), y = ref_half(b[i]);
                    l2.v += (x - y) * (x - y);
                    ip.v += x * y;
                    ip.absum += fabs(x * y);
                }
                l2.absum = l2.v;
                CHECK(expect(level_names[l], "l2sq_f16", "half", d, k->l2sq_f16(a, b, d), l2,
                             RTOL, 1e-12));
                CHECK(expect(level_names[l], "ip_f16", "half", d, k->ip_f16(a, b, d), ip, RTOL,
                             1e-12));
                k->f16_to_f32(a, fa, d);
                for (i = 0; i < d; i++)
                    CHECK((double)fa[i] == ref_half(a[i]));
                free(a);
                free(b);
                free(fa);
            }
    /* infinities and NaN convert as such */
    for (l = 0; l < n_levels; l++) {
        uint16_t h[3] = {0x7c00, 0xfc00, 0x7e01};
        float f[3];
        levels[l]->f16_to_f32(h, f, 3);
        CHECK(isinf(f[0]) && f[0] > 0);
        CHECK(isinf(f[1]) && f[1] < 0);
        CHECK(isnan(f[2]));
        CHECK(isinf(vd_f16_to_f32(0x7c00)) && isnan(vd_f16_to_f32(0x7e01)));
        CHECK(vd_f16_to_f32(0x0001) == 0x1p-24f && vd_f16_to_f32(0x3c00) == 1.0f);
        CHECK(vd_f16_to_f32(0xc000) == -2.0f && vd_f16_to_f32(0x7bff) == 65504.0f);
    }
}

static void test_i8_kernels(void)
{
    int l, rep;
    size_t di, i;
    for (l = 0; l < n_levels; l++)
        for (di = 0; di < N_DIMS; di++)
            for (rep = 0; rep < 3; rep++) {
                size_t d = dims[di];
                const vd_table *k = levels[l];
                int8_t *a = malloc(d + 1), *b = malloc(d + 1);
                int64_t l2 = 0, ip = 0;
                for (i = 0; i < d; i++) {
                    a[i] = rep == 2 ? (int8_t)((rnd() & 1) ? -128 : 127) : (int8_t)rnd();
                    b[i] = rep == 2 ? (int8_t)((rnd() & 1) ? -128 : 127) : (int8_t)rnd();
                    l2 += ((int64_t)a[i] - b[i]) * ((int64_t)a[i] - b[i]);
                    ip += (int64_t)a[i] * b[i];
                }
                CHECK(k->l2sq_i8(a, b, d) == l2);
                CHECK(k->ip_i8(a, b, d) == ip);
                free(a);
                free(b);
            }
    /* the documented limits: exact up to d = 33025 (l2sq), 131071 (ip) */
    for (l = 0; l < n_levels; l++) {
        size_t d = 131072;
        int8_t *a = malloc(d), *b = malloc(d);
        memset(a, -128, d);
        memset(b, 127, d);
        CHECK(levels[l]->l2sq_i8(a, b, 33025) == 33025 * 65025);
        CHECK((int64_t)levels[l]->ip_i8(a, a, 131071) == (int64_t)131071 * 16384);
        CHECK((int64_t)levels[l]->ip_i8(a, b, 131072) == (int64_t)131072 * -16256);
        free(a);
        free(b);
    }
}

static void test_popcounts(void)
{
    int l;
    size_t sizes[140], n_sizes = 0, si, i;
    for (i = 0; i <= 130; i++)
        sizes[n_sizes++] = i;
    sizes[n_sizes++] = 255;
    sizes[n_sizes++] = 256;
    sizes[n_sizes++] = 1000;
    sizes[n_sizes++] = 4097;
    for (l = 0; l < n_levels; l++)
        for (si = 0; si < n_sizes; si++) {
            size_t n = sizes[si];
            uint8_t *a = malloc(n + 1), *b = malloc(n + 1);
            uint64_t x = 0, an = 0, o = 0;
            for (i = 0; i < n; i++) {
                a[i] = (uint8_t)rnd();
                b[i] = (uint8_t)(si % 3 == 0 ? 0xff : rnd());
                x += (uint64_t)popcount_byte(a[i] ^ b[i]);
                an += (uint64_t)popcount_byte(a[i] & b[i]);
                o += (uint64_t)popcount_byte(a[i] | b[i]);
            }
            CHECK(levels[l]->hamming_bytes(a, b, n) == x);
            CHECK(levels[l]->and_count_bytes(a, b, n) == an);
            CHECK(levels[l]->or_count_bytes(a, b, n) == o);
            free(a);
            free(b);
        }
}

/* ------------------------------------------------------------------ */
/* Public API                                                           */
/* ------------------------------------------------------------------ */

static double ref_cosine(const float *a, const float *b, size_t d)
{
    double ab = ref_ip(a, b, d).v, aa = ref_ip(a, a, d).v, bb = ref_ip(b, b, d).v;
    if (aa == 0 || bb == 0)
        return NAN;
    double s = ab / sqrt(aa * bb);
    return 1 - (s > 1 ? 1 : s < -1 ? -1 : s);
}

static void test_metric_names(void)
{
    hs_error err = {0};
    hs_metric m;
    static const char *const names[] = {"l2", "cosine", "ip", "l1", "hamming", "jaccard"};
    int i;
    for (i = 0; i < 6; i++) {
        CHECK_OK(hs_metric_from_name(names[i], &m, &err), &err);
        CHECK((int)m == i);
        CHECK(strcmp(hs_metric_name(m), names[i]) == 0);
    }
    CHECK_OK(hs_metric_from_name("Euclidean", &m, &err), &err);
    CHECK(m == HS_METRIC_L2);
    CHECK_OK(hs_metric_from_name("INNER_PRODUCT", &m, &err), &err);
    CHECK(m == HS_METRIC_IP);
    CHECK_OK(hs_metric_from_name("dot", &m, &err), &err);
    CHECK(m == HS_METRIC_IP);
    CHECK_OK(hs_metric_from_name("Manhattan", &m, &err), &err);
    CHECK(m == HS_METRIC_L1);
    CHECK(hs_metric_from_name("cosinus", &m, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "cosinus") != NULL);
    CHECK(hs_metric_from_name(NULL, &m, NULL) == HS_INVALID);
    CHECK(strcmp(hs_metric_name((hs_metric)42), "unknown") == 0);
}

static void test_simd_level_switch(void)
{
    hs_error err = {0};
    int l;
    const char *best = hs_simd_level();
    for (l = VD_SCALAR; l <= VD_NEON; l++) {
        static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
        hs_error e = {0};
        hs_status st = hs_simd_set_level(names[l], &e);
        if (vd_kernels_level((vd_level)l)) {
            CHECK(st == HS_OK);
            CHECK(strcmp(hs_simd_level(), names[l]) == 0);
            CHECK(vd_kernels() == vd_kernels_level((vd_level)l));
        } else {
            CHECK(st == HS_UNSUPPORTED);
            CHECK(strstr(e.msg, names[l]) != NULL);
        }
    }
    CHECK(hs_simd_set_level("sse9", &err) == HS_INVALID);
    CHECK_OK(hs_simd_set_level(NULL, &err), &err);
    CHECK(strcmp(hs_simd_level(), best) == 0);
}

static void check_api_f32(const char *lv, const float *a, const float *b, size_t d)
{
    double atol = 1e-30;
    ref l2 = ref_l2sq(a, b, d);
    ref want = {sqrt(l2.v), sqrt(l2.absum)};
    CHECK(expect(lv, "L2", "api", d, hs_distance_f32(HS_METRIC_L2, a, b, d), want, RTOL, atol));
    CHECK(expect(lv, "IP", "api", d, hs_distance_f32(HS_METRIC_IP, a, b, d), ref_ip(a, b, d),
                 RTOL, atol));
    CHECK(expect(lv, "L1", "api", d, hs_distance_f32(HS_METRIC_L1, a, b, d), ref_l1(a, b, d),
                 RTOL, atol));
    ref c = {ref_cosine(a, b, d), 1};
    CHECK(expect(lv, "COSINE", "api", d, hs_distance_f32(HS_METRIC_COSINE, a, b, d), c, RTOL,
                 0));
    size_t i, diff = 0, inter = 0, uni = 0;
    for (i = 0; i < d; i++) {
        diff += a[i] != b[i];
        inter += a[i] != 0 && b[i] != 0;
        uni += a[i] != 0 || b[i] != 0;
    }
    CHECK(hs_distance_f32(HS_METRIC_HAMMING, a, b, d) == (double)diff);
    CHECK(hs_distance_f32(HS_METRIC_JACCARD, a, b, d) ==
          (uni ? 1.0 - (double)inter / (double)uni : 0.0));
}

static void test_api_dense(void)
{
    hs_error err = {0};
    int l;
    size_t di;
    for (l = VD_SCALAR; l <= VD_NEON; l++) {
        const vd_table *t = vd_kernels_level((vd_level)l);
        if (!t)
            continue;
        CHECK_OK(hs_simd_set_level(t->name, &err), &err);
        for (di = 0; di < N_DIMS; di++) {
            size_t d = dims[di];
            float *a = vec_new(d, K_GAUSS), *b = vec_new(d, K_GAUSS);
            /* some exact zeros and equal positions for the set metrics */
            for (size_t i = 0; i < d; i += 3)
                a[i] = 0;
            for (size_t i = 0; i < d; i += 5)
                b[i] = a[i];
            check_api_f32(t->name, a, b, d);
            free(a);
            free(b);
        }
    }
    CHECK_OK(hs_simd_set_level(NULL, &err), &err);
}

/* pgvector semantics: cosine of a zero vector is NaN, similarity clamped. */
static void test_api_semantics(void)
{
    float z[5] = {0}, a[5] = {1, 2, 3, 4, 5}, na[5] = {-1, -2, -3, -4, -5};
    int rep;
    CHECK(isnan(hs_distance_f32(HS_METRIC_COSINE, z, a, 5)));
    CHECK(isnan(hs_distance_f32(HS_METRIC_COSINE, a, z, 5)));
    CHECK(isnan(hs_distance_f32(HS_METRIC_COSINE, z, z, 5)));
    CHECK(hs_distance_f32(HS_METRIC_COSINE, a, na, 5) == 2.0);
    CHECK(hs_distance_f32(HS_METRIC_L2, a, na, 5) == sqrt(4.0 * 55));
    CHECK(hs_distance_f32(HS_METRIC_IP, a, na, 5) == -55);
    CHECK(hs_distance_f32(HS_METRIC_L1, a, na, 5) == 30);
    CHECK(hs_distance_f32(HS_METRIC_JACCARD, z, z, 5) == 0);
    CHECK(hs_distance_f32(HS_METRIC_JACCARD, a, z, 5) == 1);
    CHECK(hs_distance_f32(HS_METRIC_HAMMING, a, z, 5) == 5);
    for (rep = 0; rep < 200; rep++) {
        size_t d = 1 + rnd() % 300, i;
        float *v = vec_new(d, rep % 2 ? K_GAUSS : K_UNIT), *w = malloc(d * 4);
        for (i = 0; i < d; i++)
            w[i] = -v[i];
        double same = hs_distance_f32(HS_METRIC_COSINE, v, v, d);
        double opp = hs_distance_f32(HS_METRIC_COSINE, v, w, d);
        CHECK(same >= 0 && same <= 1e-6);
        CHECK(opp <= 2 && opp >= 2 - 1e-6);
        free(v);
        free(w);
    }
    /* empty vectors, NULL pointers, bad metrics */
    CHECK(hs_distance_f32(HS_METRIC_L2, NULL, NULL, 0) == 0);
    CHECK(hs_distance_f32(HS_METRIC_IP, NULL, NULL, 0) == 0);
    CHECK(isnan(hs_distance_f32(HS_METRIC_COSINE, NULL, NULL, 0)));
    CHECK(hs_distance_f32(HS_METRIC_JACCARD, NULL, NULL, 0) == 0);
    CHECK(isnan(hs_distance_f32(HS_METRIC_L2, NULL, a, 5)));
    CHECK(isnan(hs_distance_f32((hs_metric)17, a, a, 5)));
    CHECK(isnan(hs_distance_f16((hs_metric)17, NULL, NULL, 0)));
    CHECK(isnan(hs_distance_i8(HS_METRIC_L2, NULL, NULL, 3)));
    CHECK(isnan(hs_distance_packed(HS_METRIC_L2, (const uint8_t *)"a", (const uint8_t *)"b", 1)));
    CHECK(isnan(hs_distance_packed(HS_METRIC_HAMMING, NULL, NULL, 1)));
    CHECK(hs_distance_packed(HS_METRIC_HAMMING, NULL, NULL, 0) == 0);
}

static void test_api_f16_i8(void)
{
    hs_error err = {0};
    int l, rep;
    size_t i;
    for (l = VD_SCALAR; l <= VD_NEON; l++) {
        const vd_table *t = vd_kernels_level((vd_level)l);
        if (!t)
            continue;
        CHECK_OK(hs_simd_set_level(t->name, &err), &err);
        for (rep = 0; rep < 60; rep++) {
            size_t d = rep < 50 ? (size_t)rep : 200 + rnd() % 900;
            uint16_t *ha = malloc(d * 2 + 1), *hb = malloc(d * 2 + 1);
            int8_t *ia = malloc(d + 1), *ib = malloc(d + 1);
            double l2 = 0, ip = 0, ipa = 0, aa = 0, bb = 0, l1 = 0, l1a = 0;
            size_t hd = 0, hi = 0, hu = 0;
            int64_t il2 = 0, iip = 0, iaa = 0, ibb = 0, il1 = 0;
            size_t id = 0, ii = 0, iu = 0;
            for (i = 0; i < d; i++) {
                ha[i] = half_rand();
                hb[i] = rnd() % 4 ? half_rand() : ha[i];
                double x = ref_half(ha[i]), y = ref_half(hb[i]);
                l2 += (x - y) * (x - y);
                ip += x * y;
                ipa += fabs(x * y);
                aa += x * x;
                bb += y * y;
                l1 += fabs(x - y);
                l1a += fabs(x - y);
                hd += x != y;
                hi += x != 0 && y != 0;
                hu += x != 0 || y != 0;
                ia[i] = (int8_t)(rnd() % 5 ? rnd() : 0);
                ib[i] = (int8_t)(rnd() % 5 ? rnd() : ia[i]);
                il2 += ((int64_t)ia[i] - ib[i]) * ((int64_t)ia[i] - ib[i]);
                iip += (int64_t)ia[i] * ib[i];
                iaa += (int64_t)ia[i] * ia[i];
                ibb += (int64_t)ib[i] * ib[i];
                il1 += ia[i] > ib[i] ? ia[i] - ib[i] : ib[i] - ia[i];
                id += ia[i] != ib[i];
                ii += ia[i] != 0 && ib[i] != 0;
                iu += ia[i] != 0 || ib[i] != 0;
            }
            ref r2 = {sqrt(l2), sqrt(l2)}, rip = {ip, ipa}, rl1 = {l1, l1a};
            ref rc = {(aa == 0 || bb == 0) ? NAN : 1 - fmax(-1, fmin(1, ip / sqrt(aa * bb))), 1};
            CHECK(expect(t->name, "f16 L2", "api", d, hs_distance_f16(HS_METRIC_L2, ha, hb, d), r2,
                         RTOL, 1e-12));
            CHECK(expect(t->name, "f16 IP", "api", d, hs_distance_f16(HS_METRIC_IP, ha, hb, d), rip,
                         RTOL, 1e-12));
            CHECK(expect(t->name, "f16 L1", "api", d, hs_distance_f16(HS_METRIC_L1, ha, hb, d), rl1,
                         RTOL, 1e-12));
            CHECK(expect(t->name, "f16 COSINE", "api", d,
                         hs_distance_f16(HS_METRIC_COSINE, ha, hb, d), rc, RTOL, 0));
            CHECK(hs_distance_f16(HS_METRIC_HAMMING, ha, hb, d) == (double)hd);
            CHECK(hs_distance_f16(HS_METRIC_JACCARD, ha, hb, d) ==
                  (hu ? 1 - (double)hi / (double)hu : 0.0));

            CHECK(hs_distance_i8(HS_METRIC_L2, ia, ib, d) == sqrt((double)il2));
            CHECK(hs_distance_i8(HS_METRIC_IP, ia, ib, d) == (double)iip);
            CHECK(hs_distance_i8(HS_METRIC_L1, ia, ib, d) == (double)il1);
            double ic = (iaa == 0 || ibb == 0)
                            ? NAN
                            : 1 - fmax(-1, fmin(1, (double)iip / sqrt((double)iaa * (double)ibb)));
            double gc = hs_distance_i8(HS_METRIC_COSINE, ia, ib, d);
            CHECK(isnan(ic) ? isnan(gc) : fabs(gc - ic) <= 1e-12);
            CHECK(hs_distance_i8(HS_METRIC_HAMMING, ia, ib, d) == (double)id);
            CHECK(hs_distance_i8(HS_METRIC_JACCARD, ia, ib, d) ==
                  (iu ? 1 - (double)ii / (double)iu : 0.0));
            free(ha);
            free(hb);
            free(ia);
            free(ib);
        }
    }
    CHECK_OK(hs_simd_set_level(NULL, &err), &err);
    /* long int8 vectors: chunked sums stay exact past the int32 range */
    size_t d = 200000;
    int8_t *a = malloc(d), *b = malloc(d);
    memset(a, -128, d);
    memset(b, 127, d);
    CHECK(hs_distance_i8(HS_METRIC_L2, a, b, d) == sqrt(200000.0 * 65025));
    CHECK(hs_distance_i8(HS_METRIC_IP, a, b, d) == -200000.0 * 16256);
    CHECK(hs_distance_i8(HS_METRIC_IP, a, a, d) == 200000.0 * 16384);
    CHECK(hs_distance_i8(HS_METRIC_L1, a, b, d) == 200000.0 * 255);
    free(a);
    free(b);
}

static void test_api_packed(void)
{
    hs_error err = {0};
    int l, rep;
    size_t i;
    uint8_t z[9] = {0};
    CHECK(hs_distance_packed(HS_METRIC_JACCARD, z, z, 9) == 0);
    CHECK(hs_distance_packed(HS_METRIC_HAMMING, z, z, 9) == 0);
    for (l = VD_SCALAR; l <= VD_NEON; l++) {
        const vd_table *t = vd_kernels_level((vd_level)l);
        if (!t)
            continue;
        CHECK_OK(hs_simd_set_level(t->name, &err), &err);
        for (rep = 0; rep < 100; rep++) {
            size_t n = rep < 80 ? (size_t)rep : 100 + rnd() % 500;
            uint8_t *a = malloc(n + 1), *b = malloc(n + 1);
            size_t x = 0, an = 0, o = 0;
            for (i = 0; i < n; i++) {
                a[i] = (uint8_t)(rnd() & rnd());
                b[i] = (uint8_t)(rnd() & rnd());
                x += (size_t)popcount_byte(a[i] ^ b[i]);
                an += (size_t)popcount_byte(a[i] & b[i]);
                o += (size_t)popcount_byte(a[i] | b[i]);
            }
            CHECK(hs_distance_packed(HS_METRIC_HAMMING, a, b, n) == (double)x);
            CHECK(hs_distance_packed(HS_METRIC_JACCARD, a, b, n) ==
                  (o ? 1 - (double)an / (double)o : 0.0));
            free(a);
            free(b);
        }
    }
    CHECK_OK(hs_simd_set_level(NULL, &err), &err);
}

/* ------------------------------------------------------------------ */
/* Sparse                                                               */
/* ------------------------------------------------------------------ */

static size_t sparse_rand(uint32_t dim, double density, uint32_t *idx, float *val, float *dense)
{
    size_t n = 0;
    uint32_t i;
    for (i = 0; i < dim; i++) {
        dense[i] = 0;
        if (urand() < density) {
            idx[n] = i;
            val[n] = rnd() % 10 == 0 ? 0.0f : gauss(); /* explicit zeros are allowed */
            dense[i] = val[n];
            n++;
        }
    }
    return n;
}

static void test_sparse(void)
{
    hs_error err = {0};
    int rep, m;
    for (rep = 0; rep < 300; rep++) {
        uint32_t dim = 1 + (uint32_t)(rnd() % 400);
        uint32_t *ai = malloc(dim * 4), *bi = malloc(dim * 4);
        float *av = malloc(dim * 4), *bv = malloc(dim * 4), *ad = malloc(dim * 4),
              *bd = malloc(dim * 4);
        size_t an = sparse_rand(dim, rep % 3 == 0 ? 0.02 : urand(), ai, av, ad);
        size_t bn = sparse_rand(dim, urand(), bi, bv, bd);
        CHECK_OK(hs_sparse_check(ai, av, an, dim, &err), &err);
        CHECK_OK(hs_sparse_check(bi, bv, bn, dim, &err), &err);
        for (m = 0; m <= HS_METRIC_JACCARD; m++) {
            double s = hs_distance_sparse((hs_metric)m, ai, av, an, bi, bv, bn);
            ref want = {0, 0};
            switch (m) {
            case HS_METRIC_L2:
                want.v = want.absum = sqrt(ref_l2sq(ad, bd, dim).v);
                break;
            case HS_METRIC_IP:
                want = ref_ip(ad, bd, dim);
                break;
            case HS_METRIC_L1:
                want = ref_l1(ad, bd, dim);
                break;
            case HS_METRIC_COSINE:
                want.v = ref_cosine(ad, bd, dim);
                want.absum = 1;
                break;
            default:
                /* the set metrics: exactly the dense ones */
                want.v = hs_distance_f32((hs_metric)m, ad, bd, dim);
                break;
            }
            CHECK(expect("sparse", hs_metric_name((hs_metric)m), "sparse", dim, s, want, 1e-9,
                         1e-12));
        }
        free(ai);
        free(bi);
        free(av);
        free(bv);
        free(ad);
        free(bd);
    }
    /* empty sparse vectors */
    CHECK(hs_distance_sparse(HS_METRIC_L2, NULL, NULL, 0, NULL, NULL, 0) == 0);
    CHECK(isnan(hs_distance_sparse(HS_METRIC_COSINE, NULL, NULL, 0, NULL, NULL, 0)));
    CHECK(hs_distance_sparse(HS_METRIC_JACCARD, NULL, NULL, 0, NULL, NULL, 0) == 0);
    CHECK(isnan(hs_distance_sparse(HS_METRIC_L2, NULL, NULL, 2, NULL, NULL, 0)));
    CHECK(isnan(hs_distance_sparse((hs_metric)-1, NULL, NULL, 0, NULL, NULL, 0)));
    {
        uint32_t i1[2] = {1, 3};
        float v1[2] = {2, 5};
        CHECK(hs_distance_sparse(HS_METRIC_L1, i1, v1, 2, NULL, NULL, 0) == 7);
        CHECK(hs_distance_sparse(HS_METRIC_IP, i1, v1, 2, i1, v1, 2) == 29);
    }
}

static void test_sparse_check(void)
{
    hs_error err = {0};
    uint32_t idx[4] = {0, 3, 3, 9};
    float val[4] = {1, 2, 3, 4};
    CHECK_OK(hs_sparse_check(idx, val, 2, 4, &err), &err);
    CHECK_OK(hs_sparse_check(NULL, NULL, 0, 0, &err), &err);
    CHECK(hs_sparse_check(idx, val, 3, 10, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "strictly increasing") != NULL);
    hs_err_clear(&err);
    CHECK(hs_sparse_check(idx, val, 2, 3, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "dimension 3") != NULL);
    hs_err_clear(&err);
    CHECK(hs_sparse_check(NULL, val, 2, 10, &err) == HS_INVALID);
    hs_err_clear(&err);
    val[1] = NAN;
    CHECK(hs_sparse_check(idx, val, 2, 10, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "NaN") != NULL);
    hs_err_clear(&err);
    val[1] = INFINITY;
    CHECK(hs_sparse_check(idx, val, 2, 10, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "infinite") != NULL);
    hs_err_clear(&err);
    uint32_t dec[2] = {5, 2};
    float ok[2] = {1, 1};
    CHECK(hs_sparse_check(dec, ok, 2, 10, &err) == HS_INVALID);
    /* unsorted input to the distance: a meaningless number, no crash */
    (void)hs_distance_sparse(HS_METRIC_L2, dec, ok, 2, idx, ok, 2);
}

/* ------------------------------------------------------------------ */
/* Batches                                                              */
/* ------------------------------------------------------------------ */

static ref ref_metric(hs_metric m, const float *a, const float *b, size_t d)
{
    ref r = {0, 0};
    switch (m) {
    case HS_METRIC_L2:
        r = ref_l2sq(a, b, d);
        r.v = sqrt(r.v);
        r.absum = r.v;
        return r;
    case HS_METRIC_IP:
        return ref_ip(a, b, d);
    case HS_METRIC_L1:
        return ref_l1(a, b, d);
    case HS_METRIC_COSINE:
        r.v = ref_cosine(a, b, d);
        r.absum = 2; /* absolute tolerance 2e-5 for the BLAS path */
        return r;
    default:
        r.v = hs_distance_f32(m, a, b, d); /* exact counts, tested above */
        return r;
    }
}

static void test_batch(void)
{
    static const size_t shapes[][3] = {{1, 1, 1},   {3, 5, 7},     {1, 700, 33}, {9, 300, 129},
                                       {17, 40, 785}, {64, 600, 128}, {12, 50, 0},  {2, 3, 384}};
    hs_error err = {0};
    size_t si, i, j;
    int m, path;
    int64_t live = hs_mem_live_count();
    for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t nq = shapes[si][0], nx = shapes[si][1], d = shapes[si][2];
        float *q = vec_new(nq * d, si % 2 ? K_UNIT : K_GAUSS);
        float *x = vec_new(nx * d, si % 2 ? K_UNIT : K_GAUSS);
        float *out = malloc(nq * nx * 4 + 1), *out1 = malloc(nq * nx * 4 + 1);
        /* near duplicates of the queries: the L2 identity cancels there */
        for (j = 0; j < nx && j < nq; j++)
            for (i = 0; i < d; i++)
                x[j * d + i] = q[j * d + i] * (1 + 1e-4f * gauss());
        if (d)
            for (i = 0; i < d; i++)
                x[(nx - 1) * d + i] = 0; /* a zero vector: cosine NaN */
        for (m = 0; m <= HS_METRIC_JACCARD; m++)
            for (path = 0; path <= 2; path++) {
                int blas_metric = m == HS_METRIC_L2 || m == HS_METRIC_IP || m == HS_METRIC_COSINE;
                int threads = (int)(si % 3) + (path == 0 ? 0 : 1);
                hs_status st = vd_batch_f32((hs_metric)m, q, nq, x, nx, d, out, threads, path, &err);
                if (path == 2 && !blas_metric) {
                    CHECK(st == HS_INVALID);
                    hs_err_clear(&err);
                    continue;
                }
                CHECK_OK(st, &err);
                for (i = 0; i < nq; i++)
                    for (j = 0; j < nx; j++) {
                        ref want = ref_metric((hs_metric)m, q + i * d, x + j * d, d);
                        CHECK(expect(path == 2 ? "blas" : "batch", hs_metric_name((hs_metric)m),
                                     "batch", d, out[i * nx + j], want, RTOL, 1e-30));
                    }
                /* the direct path equals pairwise calls bit for bit (L2, IP, L1, sets) */
                if (path == 1 && m != HS_METRIC_COSINE)
                    for (i = 0; i < nq; i++)
                        for (j = 0; j < nx; j++) {
                            float p = (float)hs_distance_f32((hs_metric)m, q + i * d, x + j * d, d);
                            CHECK(memcmp(&p, &out[i * nx + j], 4) == 0);
                        }
                /* threads do not change the direct path's numbers */
                if (path == 1) {
                    CHECK_OK(vd_batch_f32((hs_metric)m, q, nq, x, nx, d, out1, 4, 1, &err), &err);
                    CHECK(memcmp(out, out1, nq * nx * 4) == 0);
                }
            }
        /* the public entry point chooses a path; same numbers within tolerance */
        CHECK_OK(hs_distance_batch_f32(HS_METRIC_L2, q, nq, x, nx, d, out, 0, &err), &err);
        for (i = 0; i < nq * nx; i++) {
            ref want = ref_metric(HS_METRIC_L2, q + (i / nx) * d, x + (i % nx) * d, d);
            CHECK(near_ref(out[i], want, RTOL, 1e-30));
        }
        free(q);
        free(x);
        free(out);
        free(out1);
    }
    CHECK(hs_mem_live_count() == live);
}

static void test_batch_errors(void)
{
    hs_error err = {0};
    float v[4] = {1, 2, 3, 4}, out[4];
    CHECK(hs_distance_batch_f32((hs_metric)9, v, 1, v, 1, 4, out, 1, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "metric") != NULL);
    hs_err_clear(&err);
    CHECK(hs_distance_batch_f32(HS_METRIC_L2, v, 1, v, 1, 4, NULL, 1, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(hs_distance_batch_f32(HS_METRIC_L2, NULL, 1, v, 1, 4, out, 1, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(hs_distance_batch_f32(HS_METRIC_L2, v, 1, NULL, 1, 4, out, 1, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(hs_distance_batch_f32(HS_METRIC_L2, v, 1, v, 1, 4, out, -2, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(hs_distance_batch_f32(HS_METRIC_L2, v, SIZE_MAX / 2, v, 4, 4, out, 1, &err) ==
          HS_INVALID);
    CHECK(strstr(err.msg, "overflow") != NULL);
    hs_err_clear(&err);
    /* nothing to do */
    CHECK_OK(hs_distance_batch_f32(HS_METRIC_L2, NULL, 0, NULL, 0, 4, NULL, 1, &err), &err);
    CHECK_OK(hs_distance_batch_f32(HS_METRIC_L2, v, 1, NULL, 0, 4, NULL, 1, &err), &err);
    /* d = 0: the distances of empty vectors */
    CHECK_OK(hs_distance_batch_f32(HS_METRIC_COSINE, NULL, 2, NULL, 2, 0, out, 1, &err), &err);
    CHECK(isnan(out[0]) && isnan(out[3]));
    CHECK_OK(hs_distance_batch_f32(HS_METRIC_L2, NULL, 2, NULL, 2, 0, out, 1, &err), &err);
    CHECK(out[0] == 0 && out[3] == 0);
}

/* vd_order_dist_f32 orders like the metric; vd_user_dist maps back. */
static void test_order_dist(void)
{
    int l, m, rep;
    for (l = 0; l < n_levels; l++)
        for (rep = 0; rep < 20; rep++) {
            size_t d = 1 + rnd() % 200;
            float *a = vec_new(d, K_GAUSS), *b = vec_new(d, K_GAUSS);
            for (m = 0; m <= HS_METRIC_JACCARD; m++) {
                float od = vd_order_dist_f32(levels[l], (hs_metric)m, a, b, d);
                ref want = ref_metric((hs_metric)m, a, b, d);
                if (m == HS_METRIC_COSINE)
                    want.absum = 1;
                CHECK(expect(level_names[l], "order->user", hs_metric_name((hs_metric)m), d,
                             vd_user_dist((hs_metric)m, od), want, RTOL, 1e-30));
            }
            CHECK(vd_order_dist_f32(levels[l], HS_METRIC_IP, a, b, d) ==
                  -levels[l]->ip_f32(a, b, d));
            CHECK(vd_order_dist_f32(NULL, HS_METRIC_L2, a, b, d) == vd_kernels()->l2sq_f32(a, b, d));
            free(a);
            free(b);
        }
    CHECK(vd_user_dist(HS_METRIC_L2, 4.0f) == 2.0);
    CHECK(vd_user_dist(HS_METRIC_IP, 4.0f) == -4.0);
    CHECK(vd_user_dist(HS_METRIC_COSINE, 0.25f) == 0.25);
    CHECK(isnan(vd_user_dist(HS_METRIC_L2, NAN)));
}

int main(void)
{
    collect_levels();
    HS_RUN(test_levels_present);
    HS_RUN(test_f32_kernels);
    HS_RUN(test_f32_overflow);
    HS_RUN(test_f32_many);
    HS_RUN(test_f16_kernels);
    HS_RUN(test_i8_kernels);
    HS_RUN(test_popcounts);
    HS_RUN(test_metric_names);
    HS_RUN(test_simd_level_switch);
    HS_RUN(test_api_dense);
    HS_RUN(test_api_semantics);
    HS_RUN(test_api_f16_i8);
    HS_RUN(test_api_packed);
    HS_RUN(test_sparse);
    HS_RUN(test_sparse_check);
    HS_RUN(test_batch);
    HS_RUN(test_batch_errors);
    HS_RUN(test_order_dist);
    return hs_test_summary();
}
