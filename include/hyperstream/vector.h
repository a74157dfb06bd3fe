/*
 * hyperstream/vector.h - public C API for vector distances: dense float32
 * (and float16, int8) vectors, sparse vectors, packed binary vectors; one
 * pair, and batched many-to-many.
 *
 * Semantics follow pgvector (see each metric), so SQL, Python and the
 * search engine agree:
 *   HS_METRIC_L2       Euclidean distance sqrt(sum (a-b)^2)             (<->)
 *   HS_METRIC_COSINE   1 - a.b / (|a| |b|), the similarity clamped to
 *                      [-1, 1]; NaN when either vector is all zeros      (<=>)
 *   HS_METRIC_IP       the inner product a.b itself (hs_distance_* return
 *                      it; ordering "nearest first" uses -a.b, as <#>)
 *   HS_METRIC_L1       sum |a-b|                                          (<+>)
 *   HS_METRIC_HAMMING  dense: number of positions where a != b; packed
 *                      bits: popcount(a xor b)                            (<~>)
 *   HS_METRIC_JACCARD  dense: sets of nonzero positions; packed bits:
 *                      1 - |a&b| / |a|b|, and 0 when both are empty       (<%>)
 * Sums are accumulated in float32 with SIMD lanes (results equal a scalar
 * double reference within float tolerance, ~1e-5 relative).
 *
 * CPU dispatch: the best level the CPU supports is chosen at first use
 * (AVX-512F, AVX2+FMA, NEON on Arm, else scalar); hs_simd_set_level forces
 * one (tests compare levels).  All functions are thread-safe.
 */
#ifndef HYPERSTREAM_VECTOR_H
#define HYPERSTREAM_VECTOR_H

#include "hyperstream/common.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_metric {
    HS_METRIC_L2 = 0,
    HS_METRIC_COSINE = 1,
    HS_METRIC_IP = 2,
    HS_METRIC_L1 = 3,
    HS_METRIC_HAMMING = 4,
    HS_METRIC_JACCARD = 5
} hs_metric;

/* "l2" | "euclidean" | "cosine" | "ip" | "inner_product" | "dot" | "l1" |
 * "manhattan" | "hamming" | "jaccard" (case-insensitive) -> metric. */
hs_status hs_metric_from_name(const char *name, hs_metric *out, hs_error *err);
const char *hs_metric_name(hs_metric m);  /* "l2", "cosine", ... */

/* One pair of dense float32 vectors of dimension d (d may be 0). */
double hs_distance_f32(hs_metric m, const float *a, const float *b, size_t d);
/* float16 (IEEE half, as uint16 bits) and int8 vectors. */
double hs_distance_f16(hs_metric m, const uint16_t *a, const uint16_t *b, size_t d);
double hs_distance_i8(hs_metric m, const int8_t *a, const int8_t *b, size_t d);

/* Many-to-many: out[i * nx + j] = distance(q_i, x_j) for nq queries and nx
 * vectors, all of dimension d, row-major.  Large batches of L2, cosine and
 * IP go through OpenBLAS sgemm.  n_threads 0 = one per core.
 * HS_INVALID for a bad metric or NULL pointers with nonzero sizes. */
hs_status hs_distance_batch_f32(hs_metric m, const float *q, size_t nq, const float *x,
                                size_t nx, size_t d, float *out, int n_threads, hs_error *err);

/* Sparse vectors: n pairs (index, value), indices strictly increasing and
 * < dim.  hs_sparse_check validates one (HS_INVALID naming the problem). */
hs_status hs_sparse_check(const uint32_t *idx, const float *val, size_t n, uint32_t dim,
                          hs_error *err);
double hs_distance_sparse(hs_metric m, const uint32_t *ai, const float *av, size_t an,
                          const uint32_t *bi, const float *bv, size_t bn);

/* Packed binary vectors of nbytes bytes (numpy.packbits order): HAMMING and
 * JACCARD; other metrics are NaN. */
double hs_distance_packed(hs_metric m, const uint8_t *a, const uint8_t *b, size_t nbytes);

/* The dispatch level in use: "scalar", "avx2", "avx512" or "neon". */
const char *hs_simd_level(void);
/* Forces a level (NULL = best available again).  HS_UNSUPPORTED when the CPU
 * lacks it. */
hs_status hs_simd_set_level(const char *level, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
