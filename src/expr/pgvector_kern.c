/*
 * expr/pgvector_kern.c - pgvector 0.8.1's arithmetic, copied loop for loop.
 *
 * Why a copy: pgvector accumulates distances in float32 inside loops that
 * its build auto-vectorizes with reassociation (it compiles every file with
 * -ftree-vectorize -fassociative-math -fno-signed-zeros -fno-trapping-math),
 * dispatches vector kernels through target_clones("default", "fma") and
 * halfvec kernels to F16C/FMA intrinsics when the CPU has them.  The order
 * of the additions, and so the last bits of every distance, follow from
 * that code and those flags.  This file keeps pgvector's loops, dispatch and
 * expression shapes unchanged (function names differ), and CMakeLists.txt
 * compiles it with pgvector's flags and without our -march, so that a result
 * here is the result the reference server computes on the same machine.
 * Do not "clean up" the loops: any change of shape may change results.
 *
 * pgvector is Copyright (c) 2021-2025 Andrew Kane, under the PostgreSQL
 * License (the same terms as PostgreSQL); the loops below are from its
 * src/vector.c, halfvec.c, halfutils.c, sparsevec.c and bitutils.c.
 */
#include "expr/pgvector_kern.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* pgvector's dispatch conditions (halfvec.h) */
#if defined(__x86_64__) && defined(__GNUC__) && ((!defined(__clang__) && __GNUC__ >= 9) || \
                                                 (defined(__clang_major__) && __clang_major__ >= 7))
#define PVK_DISPATCH
#endif
#if defined(PVK_DISPATCH) && defined(__gnu_linux__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define PVK_USE_TARGET_CLONES
#endif
#endif
#if defined(PVK_USE_TARGET_CLONES) && !defined(__FMA__)
#define VECTOR_TARGET_CLONES __attribute__((target_clones("default", "fma")))
#else
#define VECTOR_TARGET_CLONES
#endif

#ifdef PVK_DISPATCH
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#define TARGET_F16C __attribute__((target("avx,f16c,fma")))
#define TARGET_XSAVE __attribute__((target("xsave")))
#endif

typedef uint16_t half;

/* ------------------------------------------------------------------ */
/* half <-> float (halfutils.h, software paths: pgvector is built without F16C) */

float pvk_half_to_float(half num)
{
    union { float f; uint32_t i; } swapfloat;
    uint16_t bin = num;
    uint32_t exponent = (bin & 0x7C00) >> 10;
    uint32_t mantissa = bin & 0x03FF;
    uint32_t result = (uint32_t)(bin & 0x8000) << 16;

    if (__builtin_expect(exponent == 31, 0)) {
        if (mantissa == 0)
            result |= 0x7F800000;
        else
            result |= 0x7FC00000;
    } else if (__builtin_expect(exponent == 0, 0)) {
        if (mantissa != 0) {
            exponent = (uint32_t)-14;
            for (int i = 0; i < 10; i++) {
                mantissa <<= 1;
                exponent -= 1;
                if ((mantissa >> 10) % 2 == 1) {
                    mantissa &= 0x03ff;
                    break;
                }
            }
            result |= (exponent + 127) << 23;
        }
    } else {
        result |= (exponent - 15 + 127) << 23;
    }
    result |= mantissa << 13;
    swapfloat.i = result;
    return swapfloat.f;
}

half pvk_float_to_half(float num)
{
    union { float f; uint32_t i; } swapfloat;
    swapfloat.f = num;
    uint32_t bin = swapfloat.i;
    int exponent = (int)((bin & 0x7F800000) >> 23);
    int mantissa = (int)(bin & 0x007FFFFF);
    uint16_t result = (uint16_t)((bin & 0x80000000) >> 16);

    if (isinf(num)) {
        result |= 0x7C00;
    } else if (isnan(num)) {
        result |= 0x7E00;
        result |= (uint16_t)(mantissa >> 13);
    } else if (exponent > 98) {
        int m, gr, s;
        exponent -= 127;
        s = mantissa & 0x00000FFF;
        if (exponent < -14) {
            int diff = -exponent - 14;
            mantissa >>= diff;
            mantissa += 1 << (23 - diff);
            s |= mantissa & 0x00000FFF;
        }
        m = mantissa >> 13;
        gr = (mantissa >> 12) % 4;
        if (gr == 3 || (gr == 1 && s != 0))
            m += 1;
        if (m == 1024) {
            m = 0;
            exponent += 1;
        }
        if (exponent > 15) {
            result |= 0x7C00;
        } else {
            if (exponent >= -14)
                result |= (uint16_t)((exponent + 15) << 10);
            result |= (uint16_t)m;
        }
    }
    return result;
}

/* Float4ToHalf: 1 when a finite float becomes infinite ("out of range for type halfvec") */
int pvk_float_to_half_checked(float f, uint16_t *out)
{
    half r = pvk_float_to_half(f);
    *out = r;
    return pvk_half_is_inf(r) && !isinf(f);
}

float pvk_double_to_float(double d) { return (float)d; }

/* ------------------------------------------------------------------ */
/* vector (vector.c) */

VECTOR_TARGET_CLONES static float
VectorL2SquaredDistance(int dim, const float *ax, const float *bx)
{
    float distance = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++) {
        float diff = ax[i] - bx[i];

        distance += diff * diff;
    }
    return distance;
}

VECTOR_TARGET_CLONES static float
VectorInnerProduct(int dim, const float *ax, const float *bx)
{
    float distance = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        distance += ax[i] * bx[i];
    return distance;
}

VECTOR_TARGET_CLONES static double
VectorCosineSimilarity(int dim, const float *ax, const float *bx)
{
    float similarity = 0.0;
    float norma = 0.0;
    float normb = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++) {
        similarity += ax[i] * bx[i];
        norma += ax[i] * ax[i];
        normb += bx[i] * bx[i];
    }

    /* Use sqrt(a * b) over sqrt(a) * sqrt(b) */
    return (double)similarity / sqrt((double)norma * (double)normb);
}

VECTOR_TARGET_CLONES static float
VectorL1Distance(int dim, const float *ax, const float *bx)
{
    float distance = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        distance += fabsf(ax[i] - bx[i]);
    return distance;
}

double pvk_vec_l2(int dim, const float *a, const float *b)
{
    return sqrt((double)VectorL2SquaredDistance(dim, a, b));
}

double pvk_vec_l2sq(int dim, const float *a, const float *b)
{
    return (double)VectorL2SquaredDistance(dim, a, b);
}

double pvk_vec_ip(int dim, const float *a, const float *b)
{
    return (double)VectorInnerProduct(dim, a, b);
}

double pvk_vec_neg_ip(int dim, const float *a, const float *b)
{
    return (double)-VectorInnerProduct(dim, a, b);
}

double pvk_vec_cosine(int dim, const float *a, const float *b)
{
    double similarity = VectorCosineSimilarity(dim, a, b);

    /* Keep in range */
    if (similarity > 1)
        similarity = 1.0;
    else if (similarity < -1)
        similarity = -1.0;
    return 1.0 - similarity;
}

double pvk_vec_l1(int dim, const float *a, const float *b)
{
    return (double)VectorL1Distance(dim, a, b);
}

double pvk_vec_norm(int dim, const float *ax)
{
    double norm = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        norm += (double)ax[i] * (double)ax[i];
    return sqrt(norm);
}

int pvk_vec_normalize(int dim, const float *ax, float *rx)
{
    double norm = 0;

    memset(rx, 0, sizeof(float) * (size_t)dim);
    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        norm += (double)ax[i] * (double)ax[i];

    norm = sqrt(norm);

    /* Return zero vector for zero norm */
    if (norm > 0) {
        for (int i = 0; i < dim; i++)
            rx[i] = ax[i] / norm;

        /* Check for overflow */
        for (int i = 0; i < dim; i++) {
            if (isinf(rx[i]))
                return 1;
        }
    }
    return 0;
}

static int vector_add(int dim, const float *ax, const float *bx, float *rx)
{
    /* Auto-vectorized */
    for (int i = 0, imax = dim; i < imax; i++)
        rx[i] = ax[i] + bx[i];

    /* Check for overflow */
    for (int i = 0, imax = dim; i < imax; i++) {
        if (isinf(rx[i]))
            return 1;
    }
    return 0;
}

static int vector_sub(int dim, const float *ax, const float *bx, float *rx)
{
    /* Auto-vectorized */
    for (int i = 0, imax = dim; i < imax; i++)
        rx[i] = ax[i] - bx[i];

    /* Check for overflow */
    for (int i = 0, imax = dim; i < imax; i++) {
        if (isinf(rx[i]))
            return 1;
    }
    return 0;
}

static int vector_mul(int dim, const float *ax, const float *bx, float *rx)
{
    /* Auto-vectorized */
    for (int i = 0, imax = dim; i < imax; i++)
        rx[i] = ax[i] * bx[i];

    /* Check for overflow and underflow */
    for (int i = 0, imax = dim; i < imax; i++) {
        if (isinf(rx[i]))
            return 1;

        if (rx[i] == 0 && !(ax[i] == 0 || bx[i] == 0))
            return 2;
    }
    return 0;
}

int pvk_vec_arith(int op, int dim, const float *a, const float *b, float *r)
{
    switch (op) {
    case '+': return vector_add(dim, a, b, r);
    case '-': return vector_sub(dim, a, b, r);
    default: return vector_mul(dim, a, b, r);
    }
}

void pvk_vec_quantize(int dim, const float *ax, uint8_t *rx)
{
    int i = 0;
    int count = (dim / 8) * 8;

    memset(rx, 0, (size_t)(dim + 7) / 8);
    /* Auto-vectorized */
    for (; i < count; i += 8) {
        unsigned char result_byte = 0;

        for (int j = 0; j < 8; j++)
            result_byte |= (ax[i + j] > 0) << (7 - j);

        rx[i / 8] = result_byte;
    }

    for (; i < dim; i++)
        rx[i / 8] |= (ax[i] > 0) << (7 - (i % 8));
}

int pvk_vec_accum(int dim, double *statevalues, const float *x)
{
    for (int i = 0; i < dim; i++) {
        double v = statevalues[i] + x[i];

        /* Check for overflow */
        if (isinf(v))
            return 1;

        statevalues[i] = v;
    }
    return 0;
}

int pvk_state_combine(int dim, double *dst, const double *src)
{
    for (int i = 0; i < dim; i++) {
        double v = dst[i] + src[i];

        /* Check for overflow */
        if (isinf(v))
            return 1;

        dst[i] = v;
    }
    return 0;
}

int pvk_vec_avg(int dim, const double *statevalues, double n, float *rx)
{
    for (int i = 0; i < dim; i++) {
        rx[i] = statevalues[i] / n;
        if (isnan(rx[i]) || isinf(rx[i]))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* halfvec (halfutils.c, halfvec.c) */

static float
HalfvecL2SquaredDistanceDefault(int dim, const half *ax, const half *bx)
{
    float distance = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++) {
        float diff = pvk_half_to_float(ax[i]) - pvk_half_to_float(bx[i]);

        distance += diff * diff;
    }
    return distance;
}

static float
HalfvecInnerProductDefault(int dim, const half *ax, const half *bx)
{
    float distance = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        distance += pvk_half_to_float(ax[i]) * pvk_half_to_float(bx[i]);
    return distance;
}

static double
HalfvecCosineSimilarityDefault(int dim, const half *ax, const half *bx)
{
    float similarity = 0.0;
    float norma = 0.0;
    float normb = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++) {
        float axi = pvk_half_to_float(ax[i]);
        float bxi = pvk_half_to_float(bx[i]);

        similarity += axi * bxi;
        norma += axi * axi;
        normb += bxi * bxi;
    }

    /* Use sqrt(a * b) over sqrt(a) * sqrt(b) */
    return (double)similarity / sqrt((double)norma * (double)normb);
}

static float
HalfvecL1DistanceDefault(int dim, const half *ax, const half *bx)
{
    float distance = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        distance += fabsf(pvk_half_to_float(ax[i]) - pvk_half_to_float(bx[i]));
    return distance;
}

#ifdef PVK_DISPATCH
TARGET_F16C static float
HalfvecL2SquaredDistanceF16c(int dim, const half *ax, const half *bx)
{
    float distance;
    int i;
    float s[8];
    int count = (dim / 8) * 8;
    __m256 dist = _mm256_setzero_ps();

    for (i = 0; i < count; i += 8) {
        __m128i axi = _mm_loadu_si128((const __m128i *)(ax + i));
        __m128i bxi = _mm_loadu_si128((const __m128i *)(bx + i));
        __m256 axs = _mm256_cvtph_ps(axi);
        __m256 bxs = _mm256_cvtph_ps(bxi);
        __m256 diff = _mm256_sub_ps(axs, bxs);

        dist = _mm256_fmadd_ps(diff, diff, dist);
    }

    _mm256_storeu_ps(s, dist);

    distance = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];

    for (; i < dim; i++) {
        float diff = pvk_half_to_float(ax[i]) - pvk_half_to_float(bx[i]);

        distance += diff * diff;
    }
    return distance;
}

TARGET_F16C static float
HalfvecInnerProductF16c(int dim, const half *ax, const half *bx)
{
    float distance;
    int i;
    float s[8];
    int count = (dim / 8) * 8;
    __m256 dist = _mm256_setzero_ps();

    for (i = 0; i < count; i += 8) {
        __m128i axi = _mm_loadu_si128((const __m128i *)(ax + i));
        __m128i bxi = _mm_loadu_si128((const __m128i *)(bx + i));
        __m256 axs = _mm256_cvtph_ps(axi);
        __m256 bxs = _mm256_cvtph_ps(bxi);

        dist = _mm256_fmadd_ps(axs, bxs, dist);
    }

    _mm256_storeu_ps(s, dist);

    distance = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];

    for (; i < dim; i++)
        distance += pvk_half_to_float(ax[i]) * pvk_half_to_float(bx[i]);
    return distance;
}

TARGET_F16C static double
HalfvecCosineSimilarityF16c(int dim, const half *ax, const half *bx)
{
    float similarity;
    float norma;
    float normb;
    int i;
    float s[8];
    int count = (dim / 8) * 8;
    __m256 sim = _mm256_setzero_ps();
    __m256 na = _mm256_setzero_ps();
    __m256 nb = _mm256_setzero_ps();

    for (i = 0; i < count; i += 8) {
        __m128i axi = _mm_loadu_si128((const __m128i *)(ax + i));
        __m128i bxi = _mm_loadu_si128((const __m128i *)(bx + i));
        __m256 axs = _mm256_cvtph_ps(axi);
        __m256 bxs = _mm256_cvtph_ps(bxi);

        sim = _mm256_fmadd_ps(axs, bxs, sim);
        na = _mm256_fmadd_ps(axs, axs, na);
        nb = _mm256_fmadd_ps(bxs, bxs, nb);
    }

    _mm256_storeu_ps(s, sim);
    similarity = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];

    _mm256_storeu_ps(s, na);
    norma = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];

    _mm256_storeu_ps(s, nb);
    normb = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];

    /* Auto-vectorized */
    for (; i < dim; i++) {
        float axi = pvk_half_to_float(ax[i]);
        float bxi = pvk_half_to_float(bx[i]);

        similarity += axi * bxi;
        norma += axi * axi;
        normb += bxi * bxi;
    }

    /* Use sqrt(a * b) over sqrt(a) * sqrt(b) */
    return (double)similarity / sqrt((double)norma * (double)normb);
}

TARGET_F16C static float
HalfvecL1DistanceF16c(int dim, const half *ax, const half *bx)
{
    float distance;
    int i;
    float s[8];
    int count = (dim / 8) * 8;
    __m256 dist = _mm256_setzero_ps();
    __m256 sign = _mm256_set1_ps(-0.0);

    for (i = 0; i < count; i += 8) {
        __m128i axi = _mm_loadu_si128((const __m128i *)(ax + i));
        __m128i bxi = _mm_loadu_si128((const __m128i *)(bx + i));
        __m256 axs = _mm256_cvtph_ps(axi);
        __m256 bxs = _mm256_cvtph_ps(bxi);

        dist = _mm256_add_ps(dist, _mm256_andnot_ps(sign, _mm256_sub_ps(axs, bxs)));
    }

    _mm256_storeu_ps(s, dist);

    distance = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];

    for (; i < dim; i++)
        distance += fabsf(pvk_half_to_float(ax[i]) - pvk_half_to_float(bx[i]));
    return distance;
}

#define CPU_FEATURE_FMA (1 << 12)
#define CPU_FEATURE_OSXSAVE (1 << 27)
#define CPU_FEATURE_AVX (1 << 28)
#define CPU_FEATURE_F16C (1 << 29)

TARGET_XSAVE static bool SupportsCpuFeature(unsigned int feature)
{
    unsigned int exx[4] = {0, 0, 0, 0};

    __get_cpuid(1, &exx[0], &exx[1], &exx[2], &exx[3]);
    if ((exx[2] & CPU_FEATURE_OSXSAVE) != CPU_FEATURE_OSXSAVE)
        return false;
    if ((_xgetbv(0) & 6) != 6)
        return false;
    return (exx[2] & feature) == feature;
}
#endif

static float (*HalfvecL2SquaredDistance)(int, const half *, const half *);
static float (*HalfvecInnerProduct)(int, const half *, const half *);
static double (*HalfvecCosineSimilarity)(int, const half *, const half *);
static float (*HalfvecL1Distance)(int, const half *, const half *);

static void HalfvecInit(void)
{
    HalfvecL2SquaredDistance = HalfvecL2SquaredDistanceDefault;
    HalfvecInnerProduct = HalfvecInnerProductDefault;
    HalfvecCosineSimilarity = HalfvecCosineSimilarityDefault;
    HalfvecL1Distance = HalfvecL1DistanceDefault;
#ifdef PVK_DISPATCH
    if (SupportsCpuFeature(CPU_FEATURE_AVX | CPU_FEATURE_F16C | CPU_FEATURE_FMA)) {
        HalfvecL2SquaredDistance = HalfvecL2SquaredDistanceF16c;
        HalfvecInnerProduct = HalfvecInnerProductF16c;
        HalfvecCosineSimilarity = HalfvecCosineSimilarityF16c;
        HalfvecL1Distance = HalfvecL1DistanceF16c;
    }
#endif
}

#ifdef PVK_DISPATCH
static pthread_once_t half_once = PTHREAD_ONCE_INIT;
#define HALF_INIT() pthread_once(&half_once, HalfvecInit)
#else
static int half_inited;
#define HALF_INIT() (half_inited ? (void)0 : (HalfvecInit(), (void)(half_inited = 1)))
#endif

double pvk_half_l2(int dim, const half *a, const half *b)
{
    HALF_INIT();
    return sqrt((double)HalfvecL2SquaredDistance(dim, a, b));
}

double pvk_half_l2sq(int dim, const half *a, const half *b)
{
    HALF_INIT();
    return (double)HalfvecL2SquaredDistance(dim, a, b);
}

double pvk_half_ip(int dim, const half *a, const half *b)
{
    HALF_INIT();
    return (double)HalfvecInnerProduct(dim, a, b);
}

double pvk_half_neg_ip(int dim, const half *a, const half *b)
{
    HALF_INIT();
    return (double)-HalfvecInnerProduct(dim, a, b);
}

double pvk_half_cosine(int dim, const half *a, const half *b)
{
    HALF_INIT();
    double similarity = HalfvecCosineSimilarity(dim, a, b);

    /* Keep in range */
    if (similarity > 1)
        similarity = 1;
    else if (similarity < -1)
        similarity = -1;
    return 1 - similarity;
}

double pvk_half_l1(int dim, const half *a, const half *b)
{
    HALF_INIT();
    return (double)HalfvecL1Distance(dim, a, b);
}

double pvk_half_norm(int dim, const half *ax)
{
    double norm = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < dim; i++) {
        double axi = (double)pvk_half_to_float(ax[i]);

        norm += axi * axi;
    }
    return sqrt(norm);
}

int pvk_half_normalize(int dim, const half *ax, half *rx)
{
    double norm = 0;

    memset(rx, 0, sizeof(half) * (size_t)dim);
    /* Auto-vectorized */
    for (int i = 0; i < dim; i++)
        norm += (double)pvk_half_to_float(ax[i]) * (double)pvk_half_to_float(ax[i]);

    norm = sqrt(norm);

    /* Return zero vector for zero norm */
    if (norm > 0) {
        for (int i = 0; i < dim; i++)
            rx[i] = pvk_float_to_half(pvk_half_to_float(ax[i]) / norm);

        /* Check for overflow */
        for (int i = 0; i < dim; i++) {
            if (pvk_half_is_inf(rx[i]))
                return 1;
        }
    }
    return 0;
}

int pvk_half_arith(int op, int dim, const half *ax, const half *bx, half *rx)
{
    if (op == '+') {
        /* Auto-vectorized */
        for (int i = 0, imax = dim; i < imax; i++)
            rx[i] = pvk_float_to_half(pvk_half_to_float(ax[i]) + pvk_half_to_float(bx[i]));
    } else if (op == '-') {
        for (int i = 0, imax = dim; i < imax; i++)
            rx[i] = pvk_float_to_half(pvk_half_to_float(ax[i]) - pvk_half_to_float(bx[i]));
    } else {
        for (int i = 0, imax = dim; i < imax; i++)
            rx[i] = pvk_float_to_half(pvk_half_to_float(ax[i]) * pvk_half_to_float(bx[i]));
    }

    /* Check for overflow (and underflow for *) */
    for (int i = 0, imax = dim; i < imax; i++) {
        if (pvk_half_is_inf(rx[i]))
            return 1;

        if (op == '*' && pvk_half_is_zero(rx[i]) && !(pvk_half_is_zero(ax[i]) || pvk_half_is_zero(bx[i])))
            return 2;
    }
    return 0;
}

void pvk_half_quantize(int dim, const half *ax, uint8_t *rx)
{
    int i = 0;
    int count = (dim / 8) * 8;

    memset(rx, 0, (size_t)(dim + 7) / 8);
    for (; i < count; i += 8) {
        unsigned char result_byte = 0;

        for (int j = 0; j < 8; j++)
            result_byte |= (pvk_half_to_float(ax[i + j]) > 0) << (7 - j);

        rx[i / 8] = result_byte;
    }

    for (; i < dim; i++)
        rx[i / 8] |= (pvk_half_to_float(ax[i]) > 0) << (7 - (i % 8));
}

int pvk_half_accum(int dim, double *statevalues, const half *x)
{
    for (int i = 0; i < dim; i++) {
        double v = statevalues[i] + (double)pvk_half_to_float(x[i]);

        /* Check for overflow */
        if (isinf(v))
            return 1;

        statevalues[i] = v;
    }
    return 0;
}

int pvk_half_avg(int dim, const double *statevalues, double n, half *rx, float *bad)
{
    for (int i = 0; i < dim; i++) {
        float f = statevalues[i] / n;   /* Float4ToHalf takes a float4 */

        if (pvk_float_to_half_checked(f, &rx[i])) {
            *bad = f;
            return 2;
        }
        if (pvk_half_is_nan(rx[i]) || pvk_half_is_inf(rx[i]))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* sparsevec (sparsevec.c) */

static float SparsevecL2SquaredDistance(const pvk_sparse *a, const pvk_sparse *b)
{
    const float *ax = a->val;
    const float *bx = b->val;
    float distance = 0.0;
    int bpos = 0;

    for (int i = 0; i < a->nnz; i++) {
        int ai = a->idx[i];
        int bi = -1;

        for (int j = bpos; j < b->nnz; j++) {
            bi = b->idx[j];

            if (ai == bi) {
                float diff = ax[i] - bx[j];

                distance += diff * diff;
            } else if (ai > bi)
                distance += bx[j] * bx[j];

            /* Update start for next iteration */
            if (ai >= bi)
                bpos = j + 1;

            /* Found or passed it */
            if (bi >= ai)
                break;
        }

        if (ai != bi)
            distance += ax[i] * ax[i];
    }

    for (int j = bpos; j < b->nnz; j++)
        distance += bx[j] * bx[j];

    return distance;
}

static float SparsevecInnerProduct(const pvk_sparse *a, const pvk_sparse *b)
{
    const float *ax = a->val;
    const float *bx = b->val;
    float distance = 0.0;
    int bpos = 0;

    for (int i = 0; i < a->nnz; i++) {
        int ai = a->idx[i];

        for (int j = bpos; j < b->nnz; j++) {
            int bi = b->idx[j];

            /* Only update when the same index */
            if (ai == bi)
                distance += ax[i] * bx[j];

            /* Update start for next iteration */
            if (ai >= bi)
                bpos = j + 1;

            /* Found or passed it */
            if (bi >= ai)
                break;
        }
    }
    return distance;
}

double pvk_sparse_l2(const pvk_sparse *a, const pvk_sparse *b)
{
    return sqrt((double)SparsevecL2SquaredDistance(a, b));
}

double pvk_sparse_l2sq(const pvk_sparse *a, const pvk_sparse *b)
{
    return (double)SparsevecL2SquaredDistance(a, b);
}

double pvk_sparse_ip(const pvk_sparse *a, const pvk_sparse *b)
{
    return (double)SparsevecInnerProduct(a, b);
}

double pvk_sparse_neg_ip(const pvk_sparse *a, const pvk_sparse *b)
{
    return (double)-SparsevecInnerProduct(a, b);
}

double pvk_sparse_cosine(const pvk_sparse *a, const pvk_sparse *b)
{
    const float *ax = a->val;
    const float *bx = b->val;
    float norma = 0.0;
    float normb = 0.0;
    double similarity;

    similarity = SparsevecInnerProduct(a, b);

    /* Auto-vectorized */
    for (int i = 0; i < a->nnz; i++)
        norma += ax[i] * ax[i];

    /* Auto-vectorized */
    for (int i = 0; i < b->nnz; i++)
        normb += bx[i] * bx[i];

    /* Use sqrt(a * b) over sqrt(a) * sqrt(b) */
    similarity /= sqrt((double)norma * (double)normb);

    /* Keep in range */
    if (similarity > 1)
        similarity = 1.0;
    else if (similarity < -1)
        similarity = -1.0;
    return 1.0 - similarity;
}

double pvk_sparse_l1(const pvk_sparse *a, const pvk_sparse *b)
{
    const float *ax = a->val;
    const float *bx = b->val;
    float distance = 0.0;
    int bpos = 0;

    for (int i = 0; i < a->nnz; i++) {
        int ai = a->idx[i];
        int bi = -1;

        for (int j = bpos; j < b->nnz; j++) {
            bi = b->idx[j];

            if (ai == bi)
                distance += fabsf(ax[i] - bx[j]);
            else if (ai > bi)
                distance += fabsf(bx[j]);

            /* Update start for next iteration */
            if (ai >= bi)
                bpos = j + 1;

            /* Found or passed it */
            if (bi >= ai)
                break;
        }

        if (ai != bi)
            distance += fabsf(ax[i]);
    }

    for (int j = bpos; j < b->nnz; j++)
        distance += fabsf(bx[j]);

    return (double)distance;
}

double pvk_sparse_norm(const pvk_sparse *a)
{
    const float *ax = a->val;
    double norm = 0.0;

    /* Auto-vectorized */
    for (int i = 0; i < a->nnz; i++)
        norm += (double)ax[i] * (double)ax[i];
    return sqrt(norm);
}

int pvk_sparse_normalize(const pvk_sparse *a, float *rx, int *norm_pos)
{
    const float *ax = a->val;
    double norm = 0;

    /* Auto-vectorized */
    for (int i = 0; i < a->nnz; i++)
        norm += (double)ax[i] * (double)ax[i];

    norm = sqrt(norm);
    *norm_pos = norm > 0;

    /* Return zero vector for zero norm */
    if (norm > 0) {
        for (int i = 0; i < a->nnz; i++) {
            rx[i] = ax[i] / norm;

            if (isinf(rx[i]))
                return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* bit (bitutils.c; the AVX-512 path gives the same integers) */

static uint64_t popcount64(uint64_t x) { return (uint64_t)__builtin_popcountll(x); }

double pvk_bit_hamming(uint32_t bytes, const uint8_t *ax, const uint8_t *bx)
{
    uint64_t distance = 0;

    for (; bytes >= sizeof(uint64_t); bytes -= sizeof(uint64_t)) {
        uint64_t axs, bxs;

        memcpy(&axs, ax, sizeof(uint64_t));
        memcpy(&bxs, bx, sizeof(uint64_t));
        distance += popcount64(axs ^ bxs);
        ax += sizeof(uint64_t);
        bx += sizeof(uint64_t);
    }
    for (uint32_t i = 0; i < bytes; i++)
        distance += (uint64_t)__builtin_popcount((unsigned)(ax[i] ^ bx[i]));
    return (double)distance;
}

double pvk_bit_jaccard(uint32_t bytes, const uint8_t *ax, const uint8_t *bx)
{
    uint64_t ab = 0, aa = 0, bb = 0;

    for (; bytes >= sizeof(uint64_t); bytes -= sizeof(uint64_t)) {
        uint64_t axs, bxs;

        memcpy(&axs, ax, sizeof(uint64_t));
        memcpy(&bxs, bx, sizeof(uint64_t));
        ab += popcount64(axs & bxs);
        aa += popcount64(axs);
        bb += popcount64(bxs);
        ax += sizeof(uint64_t);
        bx += sizeof(uint64_t);
    }
    for (uint32_t i = 0; i < bytes; i++) {
        ab += (uint64_t)__builtin_popcount((unsigned)(ax[i] & bx[i]));
        aa += (uint64_t)__builtin_popcount(ax[i]);
        bb += (uint64_t)__builtin_popcount(bx[i]);
    }

    if (ab == 0)
        return 1;
    else
        return 1 - (ab / ((double)(aa + bb - ab)));
}
