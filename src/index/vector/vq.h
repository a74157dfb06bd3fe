/*
 * index/vector/vq.h - vector quantizers: codes that graph traversal
 * compares against an exact query (asymmetric distance), reranked later
 * with exact vectors.
 *
 *   type      code per vector                      after
 *   --------  -----------------------------------  -----------------------------
 *   VQ_FLAT   d float32 (no quantization)          -
 *   VQ_TQ8    d bytes + float norm                 TurboQuant MSE quantizer: random
 *   VQ_TQ4    ceil(d/2) bytes + float norm          sign flips + fast Walsh-Hadamard
 *                                                  rotation (orthogonal on exactly d
 *                                                  coordinates, no padding), then one
 *                                                  scalar codebook for every rotated
 *                                                  coordinate, fitted to the training
 *                                                  marginal (~N(0, 1/d)): TQ4 Lloyd-
 *                                                  Max, TQ8 uniform (integer distance
 *                                                  loops; see vq_tq.c)
 *   VQ_PQ     m bytes (m subspaces, 256 centroids)  k-means codebooks per subspace
 *   VQ_BIN    ceil(d/8) bytes + float norm         sign bits after the rotation
 *             + float 1/||rotated||_1
 * (Byte layouts: vq_int.h.  FLAT codes must be 4-byte aligned.)
 *
 * Metrics: L2, COSINE (vectors normalized at encode; the query too) and IP.
 * Estimated distances are in the metric's ordering (vd_order_dist_f32):
 * squared L2, 1 - cos, -ip.
 *
 * A trained quantizer is immutable and thread-safe; vq_query holds the
 * per-query state (rotated query, lookup tables) and belongs to one thread.
 */
#ifndef HS_INDEX_VECTOR_VQ_H
#define HS_INDEX_VECTOR_VQ_H

#include "base/buf.h"
#include "base/error.h"
#include "hyperstream/vector.h"
#include <stddef.h>
#include <stdint.h>

typedef enum vq_type { VQ_FLAT = 0, VQ_TQ8 = 1, VQ_TQ4 = 2, VQ_PQ = 3, VQ_BIN = 4 } vq_type;

typedef struct vq_params {
    vq_type type;
    hs_metric metric;
    int pq_m;                 /* PQ subspaces (0 = d/4, clamped so d % m == 0 is not required) */
    int train_max;            /* vectors sampled for training (0 = 65536) */
    uint64_t seed;            /* rotation and k-means seed (0 = fixed default) */
    int n_threads;            /* training/encoding threads (0 = one per core) */
} vq_params;

typedef struct vq vq;
typedef struct vq_query vq_query;

/* Trains on n vectors x (row-major, dimension d).  Caller frees with vq_free. */
HS_MUST_USE hs_status vq_train(const vq_params *p, const float *x, size_t n, size_t d, vq **out,
                               hs_error *err);
void vq_free(vq *q);  /* accepts NULL */
vq_type vq_get_type(const vq *q);
size_t vq_dim(const vq *q);
size_t vq_code_size(const vq *q);   /* bytes per vector */
/* Encodes n vectors into codes (n * code_size bytes).  Uses the training
 * n_threads for large batches.  On out-of-memory vq_encode writes zero codes;
 * vq_encode_checked returns HS_NOMEM instead. */
void vq_encode(const vq *q, const float *x, size_t n, uint8_t *codes);
HS_MUST_USE hs_status vq_encode_checked(const vq *q, const float *x, size_t n, uint8_t *codes,
                                        hs_error *err);
/* Reconstructs n vectors from their codes into out (n * d floats; COSINE:
 * unit vectors).  For tests and diagnostics. */
HS_MUST_USE hs_status vq_decode(const vq *q, const uint8_t *codes, size_t n, float *out,
                                hs_error *err);
/* TQ8/TQ4/BIN: applies the random rotation to n vectors (out: n * d floats;
 * out may equal x); HS_INVALID for other types.  For tests. */
HS_MUST_USE hs_status vq_rotate(const vq *q, const float *x, size_t n, float *out, hs_error *err);

/* Per-query state (caller frees with vq_query_free). */
HS_MUST_USE hs_status vq_query_new(const vq *q, const float *query, vq_query **out, hs_error *err);
void vq_query_free(vq_query *qq);  /* accepts NULL */
/* Estimated ordering distance from the query to one code. */
float vq_query_dist(const vq_query *qq, const uint8_t *code);
/* Same for n codes at codes[i * code_size]. */
void vq_query_dist_many(const vq_query *qq, const uint8_t *codes, size_t n, float *out);
/* Estimated distance between two codes (graph build on codes). */
float vq_code_dist(const vq *q, const uint8_t *a, const uint8_t *b);

/* Serialization of the trained parameters (not the codes): appended to out.
 * vq_load validates (untrusted bytes; HS_CORRUPT) and copies what it needs. */
HS_MUST_USE hs_status vq_save(const vq *q, hs_buf *out, hs_error *err);
HS_MUST_USE hs_status vq_load(const uint8_t *p, size_t n, vq **out, hs_error *err);

/* k-means (Lloyd's, k-means++ init) on n vectors of dimension d: k
 * centroids into cent (k * d floats), assignments into assign (may be NULL).
 * Used by PQ and IVF. */
HS_MUST_USE hs_status vq_kmeans(const float *x, size_t n, size_t d, int k, int iters,
                                uint64_t seed, int n_threads, float *cent, uint32_t *assign,
                                hs_error *err);

#endif
