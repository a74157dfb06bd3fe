/*
 * index/vector/vq_int.h - internals shared by the quantizer files:
 *
 *   vq.c       dispatch by type, FLAT, training driver, vq_save/vq_load
 *   vq_tq.c    the random rotation, Lloyd-Max codebooks, TQ8/TQ4/BIN codes
 *              and their distance loops (scalar + AVX2)
 *   vq_pq.c    product quantization
 *   kmeans.c   vq_kmeans (also for IVF)
 *
 * Code layouts (code_size bytes per vector; floats little-endian, read with
 * memcpy so codes need no alignment):
 *
 *   type  bytes                      content
 *   ----  -------------------------  -----------------------------------------
 *   FLAT  4d                         the vector (COSINE: normalized)
 *   TQ8   4 + d                      float ||x||, then one level index per
 *                                    rotated coordinate
 *   TQ4   4 + ceil(d/2)              float ||x||, then two level indexes per
 *                                    byte: coordinate 2i in the low nibble of
 *                                    byte i, 2i+1 in the high nibble (the last
 *                                    high nibble of an odd d is 0)
 *   PQ    m                          one centroid index per subspace
 *   BIN   8 + ceil(d/8)              float ||x||, float 1/||r||_1 (r = rotated
 *                                    unit vector), then sign bits of r:
 *                                    coordinate j = bit (j % 8) of byte j / 8,
 *                                    1 = positive
 *
 * COSINE stores ||x|| = 1 (vectors are normalized before encoding).
 */
#ifndef HS_INDEX_VECTOR_VQ_INT_H
#define HS_INDEX_VECTOR_VQ_INT_H

#include "base/threadpool.h"
#include "index/vector/distance.h"
#include "index/vector/vq.h"

#include <string.h>

#define VQ_MAX_DIM 65536u      /* vq_train and vq_load refuse larger d */
#define VQ_ROT_ROUNDS 3        /* sign flip + permutation + Hadamard rounds */
#define VQ_MAX_ROUNDS 8
#define VQ_DEFAULT_SEED 0x5eed0f7e11a7ull
#define VQ_TQ4_GRID 127        /* TQ4 levels lie on a 7-bit grid (see vq_tq.c) */

/* The rotation: rounds of  y[i] = sign[i] * x[perm[i]]  followed by the
 * normalized Walsh-Hadamard transform of y[0..P) and, when d > P, of
 * y[d-P..d), where P is the largest power of two <= d.  Every step is
 * orthogonal, so the whole is; it is regenerated from the seed (never
 * stored). */
typedef struct vq_rot {
    size_t d;
    size_t P;
    int rounds;
    uint32_t *perm;           /* rounds * d; owned */
    float *sign;              /* rounds * d, +-1; owned */
} vq_rot;

struct vq {
    vq_type type;
    hs_metric metric;
    size_t d;
    size_t code_size;
    uint64_t seed;
    int n_threads;

    /* TQ8 / TQ4 / BIN */
    vq_rot rot;
    int n_levels;             /* 256 (TQ8), 16 (TQ4), 0 otherwise */
    float level[256];         /* codebook in units of one N(0,1) coordinate:
                               * a unit vector's rotated coordinate y is
                               * coded as level[k] / sqrt(d); increasing */
    float bound[256];         /* bound[k] = (level[k] + level[k+1]) / 2;
                               * bound[n_levels - 1 ..] = +inf */
    uint8_t level_u[16];      /* TQ4: level[k] = level0 + level_step * level_u[k] */
    float level0, level_step; /* TQ4; TQ8 when uniform */
    int uniform;              /* TQ8: level[k] = level0 + level_step * k */

    /* PQ */
    int pq_m;                 /* subspaces */
    int pq_k;                 /* centroids per subspace (<= 256) */
    uint32_t *pq_off;         /* m + 1 coordinate offsets; owned */
    float *pq_cent;           /* subspace s: pq_k rows of (off[s+1]-off[s])
                               * floats at pq_cent + pq_k * off[s]; owned */
    float *pq_ct;             /* the same transposed: subspace s is ds rows of
                               * 256 floats (columns >= pq_k: +huge) at
                               * pq_ct + 256 * off[s]; owned */
};

typedef float (*vq_dist_fn)(const vq_query *qq, const uint8_t *code);

struct vq_query {
    const vq *q;              /* borrowed */
    vq_dist_fn dist;
    const vd_table *vk;       /* kernels at vq_query_new (FLAT) */
    float qn2;                /* ||q||^2 (L2) */
    float *qv;                /* FLAT: query (COSINE: normalized); TQ8: rotated
                               * query (COSINE: of the unit query); d floats */
    float table[256];         /* TQ8, levels not uniform: level[k] / sqrt(d) */
    int16_t *qi16;            /* TQ8 uniform: q_r[j] ~= qscale * qi16[j] */
    /* TQ4 integer path: q_rot[j] ~= qscale * qi[j] */
    int8_t *qlo, *qhi;        /* qi[2b], qi[2b+1] for byte b; nbytes each (+pad) */
    float qscale;
    int32_t qi_sum;
    float dot_a, dot_b;       /* <q_rot, c> = dot_a + dot_b * sum qi * level_u */
    /* BIN: q_rot[j] ~= bin_lo + bin_step * (4-bit value); planes[k] holds
     * bit k of every coordinate's value, packed like the code */
    uint64_t *planes;         /* 4 * words; owned */
    size_t words;
    float bin_lo, bin_step, bin_sum;
    /* PQ */
    float *pq_table;          /* m * pq_k partial distances; owned */
    void *mem;                /* the one allocation behind the arrays above */
};

/* ---- vq_tq.c ----------------------------------------------------------- */
HS_MUST_USE hs_status vq_rot_init(vq_rot *r, size_t d, int rounds, uint64_t seed, hs_error *err);
void vq_rot_free(vq_rot *r);
/* out = R x (out may equal x); tmp: d floats of scratch. */
void vq_rot_apply(const vq_rot *r, const float *x, float *out, float *tmp);
/* out = R^T x. */
void vq_rot_inverse(const vq_rot *r, const float *x, float *out, float *tmp);

/* Lloyd-Max codebook for N(0,1) with L levels (increasing) into level. */
void vq_lloyd_gauss(int L, float *level);
/* Refines level (L, increasing) on samples s[0..n) (sorted in place). */
void vq_lloyd_fit(float *s, size_t n, int L, float *level);
/* Fills bound[] from level[] (and the TQ4 grid) after training or loading. */
void vq_tq_finish(vq *q);

/* Trains on the rows x[rows[i] * d] (i < n_rows; sorted, distinct). */
HS_MUST_USE hs_status vq_tq_train(vq *q, const float *x, const size_t *rows, size_t n_rows,
                                  hs_error *err);
void vq_tq_encode_one(const vq *q, const float *x, uint8_t *code, float *tmp);
void vq_tq_decode_one(const vq *q, const uint8_t *code, float *out, float *tmp);
HS_MUST_USE hs_status vq_tq_query_new(const vq *q, const float *query, vq_query *qq,
                                      hs_error *err);
float vq_tq_code_dist(const vq *q, const uint8_t *a, const uint8_t *b);

/* ---- vq_pq.c ----------------------------------------------------------- */
HS_MUST_USE hs_status vq_pq_layout(vq *q, int m, hs_error *err);
/* Builds pq_ct from pq_cent (after training or loading). */
HS_MUST_USE hs_status vq_pq_finish(vq *q, hs_error *err);
HS_MUST_USE hs_status vq_pq_train(vq *q, const float *x, const size_t *rows, size_t n_rows,
                                  hs_error *err);
void vq_pq_encode_one(const vq *q, const float *x, uint8_t *code, float *tmp);
void vq_pq_decode_one(const vq *q, const uint8_t *code, float *out);
HS_MUST_USE hs_status vq_pq_query_new(const vq *q, const float *query, vq_query *qq,
                                      hs_error *err);
float vq_pq_code_dist(const vq *q, const uint8_t *a, const uint8_t *b);

/* ---- kmeans.c ---------------------------------------------------------- */
/* vq_kmeans on a caller's pool (NULL = this thread only). */
HS_MUST_USE hs_status vq_kmeans_pool(const float *x, size_t n, size_t d, int k, int iters,
                                     uint64_t seed, hs_pool *pool, float *cent,
                                     uint32_t *assign, hs_error *err);
/* Nearest of k centroids (cent: k * d) to each of n vectors, with the
 * squared distance (dist may be NULL).  Used by encoders and tests. */
void vq_nearest(const float *x, size_t n, size_t d, const float *cent, int k,
                uint32_t *assign, float *dist);

/* ---- shared helpers ---------------------------------------------------- */
static inline float vq_get_f32(const uint8_t *p)
{
    float v;
    memcpy(&v, p, 4);
    return v;
}
static inline void vq_put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }

/* splitmix64: the deterministic generator behind seeds (rotation, sampling,
 * k-means), the same on every platform. */
static inline uint64_t vq_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [0, n) (n > 0). */
static inline uint64_t vq_rand_below(uint64_t *s, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)vq_rand(s) * n) >> 64);
}
/* Uniform in [0, 1). */
static inline double vq_rand_unit(uint64_t *s) { return (double)(vq_rand(s) >> 11) * 0x1.0p-53; }

/* Whether AVX2+FMA paths may run now (follows vd_kernels()'s level, so
 * hs_simd_set_level("scalar") also turns them off). */
int vq_use_avx2(void);

#endif
