/*
 * index/vector/distance.h - distance kernels with runtime CPU dispatch, for
 * the search code (hnsw, quantizers, exact search) and the public API
 * (hyperstream/vector.h).
 *
 * Kernels return the raw quantity the search orders by:
 *   l2sq  sum (a-b)^2 (no sqrt),  ip  sum a*b,  l1  sum |a-b|,
 *   norm2 sum a*a,  hamming/and/or popcounts over bytes.
 * Contracts shared by every level:
 *   - d (or n) may be 0 (the sum is 0; pair kernels then accept NULL).  Kernels
 *     read exactly d elements: tails use masked loads or a zero-padded copy,
 *     never a read past the end.
 *   - float sums are float32 in SIMD lanes (4 vector accumulators), within
 *     ~1e-6 relative of a double reference for sums of nonnegative terms.
 *   - l2sq_f32_many / ip_f32_many give bit for bit the values of l2sq_f32 /
 *     ip_f32 of the same level on each row (same accumulation order), so
 *     exact search and reranking agree with graph search.
 *   - int8 sums are exact modulo 2^32: exact while d <= 33025 (l2sq) or
 *     d <= 131071 (ip); hs_distance_i8 splits longer vectors.
 * vd_kernels() returns the table of the level in use; switching level
 * (hs_simd_set_level) swaps the table atomically.  Each level is compiled
 * with target attributes in its own file (distance_avx2.c, distance_avx512.c)
 * so the library itself needs no -march flag.
 */
#ifndef HS_INDEX_VECTOR_DISTANCE_H
#define HS_INDEX_VECTOR_DISTANCE_H

#include "hyperstream/vector.h"
#include <stddef.h>
#include <stdint.h>

typedef enum vd_level { VD_SCALAR = 0, VD_AVX2 = 1, VD_AVX512 = 2, VD_NEON = 3 } vd_level;

typedef struct vd_table {
    vd_level level;
    const char *name;
    float (*l2sq_f32)(const float *a, const float *b, size_t d);
    float (*ip_f32)(const float *a, const float *b, size_t d);
    float (*l1_f32)(const float *a, const float *b, size_t d);
    float (*norm2_f32)(const float *a, size_t d);
    float (*l2sq_f16)(const uint16_t *a, const uint16_t *b, size_t d);
    float (*ip_f16)(const uint16_t *a, const uint16_t *b, size_t d);
    int32_t (*l2sq_i8)(const int8_t *a, const int8_t *b, size_t d);
    int32_t (*ip_i8)(const int8_t *a, const int8_t *b, size_t d);
    uint64_t (*hamming_bytes)(const uint8_t *a, const uint8_t *b, size_t n);
    uint64_t (*and_count_bytes)(const uint8_t *a, const uint8_t *b, size_t n);
    uint64_t (*or_count_bytes)(const uint8_t *a, const uint8_t *b, size_t n);
    /* one query against n vectors stored contiguously (stride d floats) */
    void (*l2sq_f32_many)(const float *q, const float *x, size_t n, size_t d, float *out);
    void (*ip_f32_many)(const float *q, const float *x, size_t n, size_t d, float *out);
    /* a.b, a.a and b.b in one pass (cosine): out[0], out[1], out[2] */
    void (*ip_norms_f32)(const float *a, const float *b, size_t d, float out[3]);
    /* n IEEE halves -> floats (exact) */
    void (*f16_to_f32)(const uint16_t *in, float *out, size_t n);
} vd_table;

/* The table in use (never NULL). */
const vd_table *vd_kernels(void);
/* The table of one level, or NULL when this CPU (or this build) lacks it. */
const vd_table *vd_kernels_level(vd_level level);

/* Distance in the metric's ordering ("smaller is nearer"): L2 -> l2sq,
 * COSINE -> 1 - cos (vectors need not be normalized), IP -> -ip, L1 -> l1.
 * Used by exact search and reranking. */
float vd_order_dist_f32(const vd_table *k, hs_metric m, const float *a, const float *b, size_t d);
/* Converts an ordering distance to the user-facing one (L2: sqrt; IP: -x). */
double vd_user_dist(hs_metric m, float order_dist);

#endif
