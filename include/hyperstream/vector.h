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
 * double reference within float tolerance, ~1e-5 relative to the sum of
 * the absolute terms; sums past FLT_MAX are infinite).  int8 sums are exact
 * integers; sparse sums are double.
 *
 * Dense HAMMING and JACCARD compare element values as numbers (-0 == 0,
 * NaN != NaN): HAMMING counts positions with a[i] != b[i] (a count, not a
 * fraction: scipy's hamming times d); JACCARD is 1 - |A & B| / |A | B| over
 * the sets of nonzero positions, 0 when both sets are empty (scipy's
 * jaccard of the boolean vectors a != 0, b != 0).  pgvector itself returns
 * 1 for two empty bit strings; we follow scipy there.
 *
 * Degenerate input: d = 0 gives the distance of two empty vectors (0; NaN
 * for cosine).  These functions return a double, not a status, so a NULL
 * pointer with a nonzero size, or an unknown metric, gives NaN.
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
HS_API hs_status hs_metric_from_name(const char *name, hs_metric *out, hs_error *err);
HS_API const char *hs_metric_name(hs_metric m);  /* "l2", "cosine", ... */

/* One pair of dense float32 vectors of dimension d (d may be 0). */
HS_API double hs_distance_f32(hs_metric m, const float *a, const float *b, size_t d);
/* float16 (IEEE half, as uint16 bits; converted exactly, subnormals
 * included) and int8 vectors (sums exact for any d). */
HS_API double hs_distance_f16(hs_metric m, const uint16_t *a, const uint16_t *b, size_t d);
HS_API double hs_distance_i8(hs_metric m, const int8_t *a, const int8_t *b, size_t d);

/* Many-to-many: out[i * nx + j] = distance(q_i, x_j) for nq queries and nx
 * vectors, all of dimension d, row-major; out is caller-owned, nq * nx
 * floats.  Large batches of L2, cosine and IP (nq >= 16, nq*nx*d >= 2^22)
 * go through OpenBLAS sgemm (|q|^2 + |x|^2 - 2 q.x, pairs where that
 * cancels recomputed directly; cosine within ~1e-6 absolute); smaller ones
 * and the other metrics use the pair kernels and give exactly the numbers
 * of hs_distance_f32.  n_threads 0 = one per core; batches under 2^22
 * multiply-adds run on the calling thread.  While BLAS batches run,
 * OpenBLAS runs one thread (openblas_set_num_threads(1); parallelism comes
 * from n_threads instead); when the last of them returns, the host's
 * setting is restored (unless the host changed it meanwhile), so the
 * host's own BLAS calls outside our batches keep their thread count.
 * HS_INVALID for a bad metric, a negative n_threads, sizes whose product
 * overflows, or NULL pointers with nonzero sizes; HS_NOMEM. */
HS_API hs_status hs_distance_batch_f32(hs_metric m, const float *q, size_t nq, const float *x,
                                size_t nx, size_t d, float *out, int n_threads, hs_error *err);

/* Sparse vectors: n pairs (index, value), indices strictly increasing and
 * < dim, values finite; a missing index is the value 0.  hs_sparse_check
 * validates one (HS_INVALID naming the problem).  hs_distance_sparse gives
 * what the dense metric gives on the dense equivalents (one merge of the
 * index lists, double sums); for unvalidated, unsorted input the number is
 * meaningless but nothing is read out of bounds. */
HS_API hs_status hs_sparse_check(const uint32_t *idx, const float *val, size_t n, uint32_t dim,
                          hs_error *err);
HS_API double hs_distance_sparse(hs_metric m, const uint32_t *ai, const float *av, size_t an,
                          const uint32_t *bi, const float *bv, size_t bn);

/* Packed binary vectors of nbytes bytes (numpy.packbits order; pad bits
 * must be equal, e.g. zero): HAMMING = popcount(a ^ b); JACCARD =
 * 1 - popcount(a & b) / popcount(a | b), 0 when both are empty; other
 * metrics are NaN. */
HS_API double hs_distance_packed(hs_metric m, const uint8_t *a, const uint8_t *b, size_t nbytes);

/* The dispatch level in use: "scalar", "avx2", "avx512" or "neon". */
HS_API const char *hs_simd_level(void);
/* Forces a level for the whole process (NULL, "best" or "auto" = the best
 * available again).  HS_INVALID for an unknown name, HS_UNSUPPORTED when
 * the CPU (or this build) lacks it. */
HS_API hs_status hs_simd_set_level(const char *level, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
