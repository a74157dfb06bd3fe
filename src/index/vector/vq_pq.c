/*
 * index/vector/vq_pq.c - product quantization.
 *
 * The d coordinates are cut into m contiguous subspaces; when d % m != 0 the
 * first d % m subspaces get one coordinate more (off[s] = s * (d / m) +
 * min(s, d % m)).  Each subspace has its own k <= 256 centroids, trained by
 * vq_kmeans on the sample's sub-vectors (COSINE: of the normalized vectors);
 * the subspaces train as tasks on the thread pool, each with its own seed
 * (seed + s), so the result does not depend on the thread count.  A code is
 * m bytes: the nearest centroid of each sub-vector.
 *
 * Query: an m x k table of partial distances, L2 ||q_s - c||^2, IP and
 * COSINE -<q_s, c> (COSINE adds 1 and uses the normalized query); the
 * distance to a code is the sum of m table entries (AVX2: 8 gathers at a
 * time).  Symmetric distances compare centroids directly.
 */
#include "index/vector/vq_int.h"

#include "base/mem.h"
#include "index/vector/distance.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define PQ_X86 1
#else
#define PQ_X86 0
#endif

#define PQ_POINTS_PER_CENTROID 64
#define PQ_ITERS 15

hs_status vq_pq_layout(vq *q, int m, hs_error *err)
{
    size_t d = q->d;
    if (m < 1 || (size_t)m > d)
        return hs_err_set(err, HS_INVALID, "PQ: %d subspaces for dimension %zu", m, d);
    q->pq_m = m;
    q->pq_off = hs_malloc(((size_t)m + 1) * sizeof *q->pq_off);
    if (!q->pq_off)
        return hs_err_nomem(err, ((size_t)m + 1) * sizeof *q->pq_off);
    size_t base = d / (size_t)m, extra = d % (size_t)m;
    for (size_t s = 0; s <= (size_t)m; s++)
        q->pq_off[s] = (uint32_t)(s * base + (s < extra ? s : extra));
    return HS_OK;
}

static inline size_t sub_dim(const vq *q, int s) { return q->pq_off[s + 1] - q->pq_off[s]; }
static inline const float *sub_cent(const vq *q, int s)
{
    return q->pq_cent + (size_t)q->pq_k * q->pq_off[s];
}

/* 1/||x|| for COSINE (0 for a zero vector), 1 otherwise. */
static float inv_norm(const vq *q, const float *x)
{
    if (q->metric != HS_METRIC_COSINE)
        return 1.0f;
    double s = 0;
    for (size_t j = 0; j < q->d; j++)
        s += (double)x[j] * x[j];
    return s > 0 && isfinite(s) ? (float)(1.0 / sqrt(s)) : 0.0f;
}

/* ---- training ---------------------------------------------------------- */

typedef struct pq_task {
    vq *q;
    int s;
    const float *x;
    const size_t *rows;       /* n_use sampled rows */
    const float *inv;         /* n_use inverse norms */
    size_t n_use;
} pq_task;

static hs_status pq_train_sub(void *arg, hs_error *err)
{
    pq_task *t = arg;
    vq *q = t->q;
    size_t ds = sub_dim(q, t->s), off = q->pq_off[t->s], d = q->d;
    float *sub = hs_malloc(t->n_use * ds * sizeof *sub);
    if (!sub)
        return hs_err_nomem(err, t->n_use * ds * sizeof *sub);
    for (size_t i = 0; i < t->n_use; i++)
        for (size_t j = 0; j < ds; j++)
            sub[i * ds + j] = t->x[t->rows[i] * d + off + j] * t->inv[i];
    hs_status st = vq_kmeans_pool(sub, t->n_use, ds, q->pq_k, PQ_ITERS, q->seed + (uint64_t)t->s,
                                  NULL, (float *)sub_cent(q, t->s), NULL, err);
    hs_free(sub);
    if (st != HS_OK)
        hs_err_prefix(err, "PQ subspace %d", t->s);
    return st;
}

hs_status vq_pq_train(vq *q, const float *x, const size_t *rows, size_t n_rows, hs_error *err)
{
    size_t d = q->d;
    int m = q->pq_m;
    size_t n_use = (size_t)PQ_POINTS_PER_CENTROID * 256;
    if (n_use > n_rows)
        n_use = n_rows;
    q->pq_k = n_use < 256 ? (int)n_use : 256;
    q->pq_cent = hs_malloc((size_t)q->pq_k * d * sizeof *q->pq_cent);
    size_t *use = hs_malloc(n_use * sizeof *use);
    float *inv = hs_malloc(n_use * sizeof *inv);
    pq_task *tasks = hs_calloc((size_t)m, sizeof *tasks);
    hs_status st = HS_OK;
    if (!q->pq_cent || !use || !inv || !tasks)
        st = hs_err_nomem(err, (size_t)q->pq_k * d * sizeof *q->pq_cent);
    hs_pool *pool = NULL;
    if (st == HS_OK) {
        for (size_t i = 0; i < n_use; i++) {
            use[i] = rows[(size_t)((double)i * n_rows / n_use)];
            inv[i] = inv_norm(q, x + use[i] * d);
        }
        for (int s = 0; s < m; s++)
            tasks[s] = (pq_task){q, s, x, use, inv, n_use};
        if (q->n_threads != 1 && m > 1)
            st = hs_pool_create(q->n_threads < 0 ? 0 : q->n_threads, &pool, err);
    }
    if (st == HS_OK && pool) {
        hs_group *g = NULL;
        st = hs_group_create(pool, &g, err);
        for (int s = 0; st == HS_OK && s < m; s++)
            if ((st = hs_group_submit(g, pq_train_sub, &tasks[s])) != HS_OK)
                hs_err_set(err, st, "PQ: cannot submit a training task");
        if (g) {
            hs_status w = hs_group_wait(g, err);
            if (st == HS_OK)
                st = w;
        }
        hs_group_destroy(g);
    } else {
        for (int s = 0; st == HS_OK && s < m; s++)
            st = pq_train_sub(&tasks[s], err);
    }
    hs_pool_destroy(pool);
    hs_free(use);
    hs_free(inv);
    hs_free(tasks);
    if (st == HS_OK)
        st = vq_pq_finish(q, err);
    return st;
}

hs_status vq_pq_finish(vq *q, hs_error *err)
{
    size_t d = q->d, k = (size_t)q->pq_k;
    hs_free(q->pq_ct);
    q->pq_ct = hs_malloc(256 * d * sizeof *q->pq_ct);
    if (!q->pq_ct)
        return hs_err_nomem(err, 256 * d * sizeof *q->pq_ct);
    for (int s = 0; s < q->pq_m; s++) {
        size_t ds = sub_dim(q, s);
        const float *c = sub_cent(q, s);
        float *t = q->pq_ct + 256 * (size_t)q->pq_off[s];
        for (size_t j = 0; j < ds; j++)
            for (size_t i = 0; i < 256; i++)
                t[j * 256 + i] = i < k ? c[i * ds + j] : 1e18f;
    }
    return HS_OK;
}

/* out[c] = ||xs - centroid c||^2 of subspace s for all 256 columns (those
 * >= pq_k are huge), from the transposed centroids: 8 centroids per step. */
static void sub_l2_scalar(const vq *q, int s, const float *xs, float *out)
{
    size_t ds = sub_dim(q, s);
    const float *t = q->pq_ct + 256 * (size_t)q->pq_off[s];
    for (size_t c = 0; c < 256; c++)
        out[c] = 0;
    for (size_t j = 0; j < ds; j++)
        for (size_t c = 0; c < 256; c++) {
            float e = xs[j] - t[j * 256 + c];
            out[c] += e * e;
        }
}

/* out[c] = -<xs, centroid c> (columns >= pq_k: garbage, never looked up
 * by valid codes; the query table keeps them finite-or-huge). */
static void sub_nip_scalar(const vq *q, int s, const float *xs, float *out)
{
    size_t ds = sub_dim(q, s);
    const float *t = q->pq_ct + 256 * (size_t)q->pq_off[s];
    for (size_t c = 0; c < 256; c++)
        out[c] = 0;
    for (size_t j = 0; j < ds; j++)
        for (size_t c = 0; c < 256; c++)
            out[c] -= xs[j] * t[j * 256 + c];
}

#if PQ_X86
__attribute__((target("avx2,fma"))) static void sub_dists_avx2(const vq *q, int s,
                                                               const float *xs, float *out,
                                                               int l2)
{
    size_t ds = sub_dim(q, s);
    const float *t = q->pq_ct + 256 * (size_t)q->pq_off[s];
    for (size_t c = 0; c < 256; c += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (size_t j = 0; j < ds; j++) {
            const float *row = t + j * 256 + c;
            __m256 x = _mm256_set1_ps(xs[j]);
            if (l2) {
                __m256 e0 = _mm256_sub_ps(x, _mm256_loadu_ps(row));
                __m256 e1 = _mm256_sub_ps(x, _mm256_loadu_ps(row + 8));
                __m256 e2 = _mm256_sub_ps(x, _mm256_loadu_ps(row + 16));
                __m256 e3 = _mm256_sub_ps(x, _mm256_loadu_ps(row + 24));
                a0 = _mm256_fmadd_ps(e0, e0, a0);
                a1 = _mm256_fmadd_ps(e1, e1, a1);
                a2 = _mm256_fmadd_ps(e2, e2, a2);
                a3 = _mm256_fmadd_ps(e3, e3, a3);
            } else {
                a0 = _mm256_fnmadd_ps(x, _mm256_loadu_ps(row), a0);
                a1 = _mm256_fnmadd_ps(x, _mm256_loadu_ps(row + 8), a1);
                a2 = _mm256_fnmadd_ps(x, _mm256_loadu_ps(row + 16), a2);
                a3 = _mm256_fnmadd_ps(x, _mm256_loadu_ps(row + 24), a3);
            }
        }
        _mm256_storeu_ps(out + c, a0);
        _mm256_storeu_ps(out + c + 8, a1);
        _mm256_storeu_ps(out + c + 16, a2);
        _mm256_storeu_ps(out + c + 24, a3);
    }
}
#endif

/* Index of the nearest of the pq_k centroids of subspace s (dists: 256
 * floats of scratch).  The AVX2 variant runs the argmin in VEX code too. */
#if PQ_X86
__attribute__((target("avx2,fma"))) static int sub_nearest_avx2(const vq *q, int s,
                                                                const float *xs, float *dists)
{
    /* columns >= pq_k hold huge distances, so all 256 take part */
    sub_dists_avx2(q, s, xs, dists, 1);
    __m256 mn = _mm256_loadu_ps(dists);
    for (int c = 8; c < 256; c += 8)
        mn = _mm256_min_ps(mn, _mm256_loadu_ps(dists + c));
    mn = _mm256_min_ps(mn, _mm256_permute2f128_ps(mn, mn, 1));
    mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0x4e));
    mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0xb1));
    for (int c = 0; c < 256; c += 8) {
        int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(dists + c), mn, _CMP_EQ_OQ));
        if (m)
            return c + __builtin_ctz((unsigned)m);
    }
    return 0; /* NaN distances (non-finite input) */
}
#endif

static void sub_dists(const vq *q, int s, const float *xs, float *out, int l2, int avx2)
{
#if PQ_X86
    if (avx2) {
        sub_dists_avx2(q, s, xs, out, l2);
        return;
    }
#endif
    (void)avx2;
    if (l2)
        sub_l2_scalar(q, s, xs, out);
    else
        sub_nip_scalar(q, s, xs, out);
}

/* ---- encoding / decoding ----------------------------------------------- */

void vq_pq_encode_one(const vq *q, const float *x, uint8_t *code, float *tmp)
{
    float inv = inv_norm(q, x);
    float *dists = tmp; /* 256 */
    float *sub = tmp + 256;
    int avx2 = vq_use_avx2();
    for (int s = 0; s < q->pq_m; s++) {
        size_t ds = sub_dim(q, s);
        const float *xs = x + q->pq_off[s];
        for (size_t j = 0; j < ds; j++)
            sub[j] = xs[j] * inv;
        int best = 0;
#if PQ_X86
        if (avx2)
            best = sub_nearest_avx2(q, s, sub, dists);
        else
#endif
        {
            sub_dists(q, s, sub, dists, 1, 0);
            float bv = dists[0];
            for (int c = 1; c < q->pq_k; c++)
                if (dists[c] < bv) {
                    bv = dists[c];
                    best = c;
                }
        }
        code[s] = (uint8_t)best;
    }
}

void vq_pq_decode_one(const vq *q, const uint8_t *code, float *out)
{
    for (int s = 0; s < q->pq_m; s++) {
        size_t ds = sub_dim(q, s);
        int c = code[s] < q->pq_k ? code[s] : 0;
        memcpy(out + q->pq_off[s], sub_cent(q, s) + (size_t)c * ds, ds * sizeof *out);
    }
}

/* ---- distances --------------------------------------------------------- */

static float pq_sum_scalar(const float *table, int k, const uint8_t *code, int m)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int s = 0;
    for (; s + 4 <= m; s += 4) {
        s0 += table[(size_t)s * k + code[s]];
        s1 += table[(size_t)(s + 1) * k + code[s + 1]];
        s2 += table[(size_t)(s + 2) * k + code[s + 2]];
        s3 += table[(size_t)(s + 3) * k + code[s + 3]];
    }
    for (; s < m; s++)
        s0 += table[(size_t)s * k + code[s]];
    return (s0 + s1) + (s2 + s3);
}

#if PQ_X86
__attribute__((target("avx2,fma"))) static float pq_sum_avx2(const float *table, int k,
                                                             const uint8_t *code, int m)
{
    __m256 acc = _mm256_setzero_ps();
    const __m256i step = _mm256_set1_epi32(8 * k);
    __m256i base = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                      _mm256_set1_epi32(k));
    int s = 0;
    for (; s + 8 <= m; s += 8) {
        __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(code + s)));
        acc = _mm256_add_ps(acc, _mm256_i32gather_ps(table, _mm256_add_epi32(base, c), 4));
        base = _mm256_add_epi32(base, step);
    }
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    for (; s < m; s++)
        r += table[(size_t)s * k + code[s]];
    return r;
}
#endif

static float pq_dist_scalar(const vq_query *qq, const uint8_t *code)
{
    float s = pq_sum_scalar(qq->pq_table, 256, code, qq->q->pq_m);
    return qq->q->metric == HS_METRIC_COSINE ? 1.0f + s : s;
}

#if PQ_X86
static float pq_dist_avx2(const vq_query *qq, const uint8_t *code)
{
    float s = pq_sum_avx2(qq->pq_table, 256, code, qq->q->pq_m);
    return qq->q->metric == HS_METRIC_COSINE ? 1.0f + s : s;
}
#endif

hs_status vq_pq_query_new(const vq *q, const float *query, vq_query *qq, hs_error *err)
{
    size_t k = (size_t)q->pq_k, m = (size_t)q->pq_m;
    /* the table, padded with 0 entries up to 256 per subspace so that a
     * corrupt code byte >= k still reads inside it */
    size_t bytes = (m * 256 + q->d) * sizeof(float);
    qq->mem = hs_calloc(1, bytes);
    if (!qq->mem)
        return hs_err_nomem(err, bytes);
    float *table = qq->mem, *qn = table + m * 256;
    float inv = inv_norm(q, query);
    for (size_t j = 0; j < q->d; j++)
        qn[j] = query[j] * inv;
    int avx2 = vq_use_avx2();
    for (int s = 0; s < q->pq_m; s++) {
        float *row = table + (size_t)s * 256;
        sub_dists(q, s, qn + q->pq_off[s], row, q->metric == HS_METRIC_L2, avx2);
        for (size_t c = k; c < 256; c++)
            row[c] = 0; /* a corrupt code byte >= k reads 0 */
    }
    qq->pq_table = table;
    qq->dist = pq_dist_scalar;
#if PQ_X86
    if (vq_use_avx2())
        qq->dist = pq_dist_avx2;
#endif
    return HS_OK;
}

float vq_pq_code_dist(const vq *q, const uint8_t *a, const uint8_t *b)
{
    const vd_table *vk = vd_kernels();
    float s = 0;
    for (int i = 0; i < q->pq_m; i++) {
        size_t ds = sub_dim(q, i);
        int ca = a[i] < q->pq_k ? a[i] : 0, cb = b[i] < q->pq_k ? b[i] : 0;
        const float *pa = sub_cent(q, i) + (size_t)ca * ds, *pb = sub_cent(q, i) + (size_t)cb * ds;
        s += q->metric == HS_METRIC_L2 ? vk->l2sq_f32(pa, pb, ds) : -vk->ip_f32(pa, pb, ds);
    }
    return q->metric == HS_METRIC_COSINE ? 1.0f + s : s;
}
