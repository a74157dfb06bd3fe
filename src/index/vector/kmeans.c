/*
 * index/vector/kmeans.c - k-means (Lloyd's algorithm) for PQ codebooks and
 * IVF partitions.
 *
 *   init      k-means++ (D^2 sampling) on at most 32k of the points (spread
 *             evenly) when that costs <= 2^30 flops, else k distinct points
 *             drawn uniformly (selection sampling); both from the seed
 *   iterate   assign every point to its nearest centroid, then move each
 *             centroid to the mean of its points (sums in double, in point
 *             order: the result does not depend on the number of threads);
 *             stop early when no assignment changed
 *   empty     a centroid left without points moves onto the point farthest
 *             from its own centroid (taken from a cluster of >= 2 points), so
 *             the objective never increases
 *   result    a last assignment against the returned centroids, so
 *             assign[i] is the nearest of cent for every point
 *
 * The objective sum_i ||x_i - cent[assign_i]||^2 after t iterations is
 * non-increasing in t (Lloyd's steps never increase it, and the empty-cluster
 * rule only adds better options).
 *
 * Assignment, the O(n k d) step, runs one of two kernels:
 *   small d (< 32) or few centroids: per point, squared differences against
 *     the centroids transposed (d rows of k, padded to 8), 8 centroids per
 *     AVX2 register; blocks of 256 points run as tasks on the thread pool.
 *   otherwise: OpenBLAS sgemm of 256-point blocks against all centroids
 *     (||x||^2 - 2 x.c + ||c||^2), argmin per row; OpenBLAS threads itself.
 * Blocks have a fixed size, so every point's distances are computed the
 * same way whatever the thread count: results are deterministic for a seed.
 */
#include "index/vector/vq_int.h"

#include "base/mem.h"
#include "index/vector/distance.h"

#include <cblas.h>
#include <float.h>
#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define KM_X86 1
#else
#define KM_X86 0
#endif

#define KM_BLOCK 256
#define KM_INIT_PP_MAX ((double)(1u << 30))
#define KM_PP_PER_CENTROID 32

typedef struct km_assign {
    const float *x;
    size_t n, d;
    int k;
    size_t kpad;              /* k rounded up to 8 */
    const float *cent;        /* k * d, borrowed */
    float *ct;                /* small kernel: d * kpad, transposed; else NULL */
    float *cn2;               /* BLAS kernel: ||c||^2, k */
    int blas;
    uint32_t *assign;         /* n, borrowed */
    float *dist;              /* n, borrowed (may be NULL) */
} km_assign;

/* ---- small kernel ------------------------------------------------------ */

static void small_dists_scalar(const km_assign *a, const float *x, float *acc)
{
    size_t kp = a->kpad;
    for (size_t c = 0; c < kp; c++)
        acc[c] = 0;
    for (size_t j = 0; j < a->d; j++) {
        const float *row = a->ct + j * kp;
        float xj = x[j];
        for (size_t c = 0; c < kp; c++) {
            float t = xj - row[c];
            acc[c] += t * t;
        }
    }
}

#if KM_X86
__attribute__((target("avx2,fma"))) static void small_dists_avx2(const km_assign *a,
                                                                 const float *x, float *acc)
{
    size_t kp = a->kpad, d = a->d, c = 0;
    for (; c + 32 <= kp; c += 32) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (size_t j = 0; j < d; j++) {
            const float *row = a->ct + j * kp + c;
            __m256 xj = _mm256_set1_ps(x[j]);
            __m256 t0 = _mm256_sub_ps(xj, _mm256_loadu_ps(row));
            __m256 t1 = _mm256_sub_ps(xj, _mm256_loadu_ps(row + 8));
            __m256 t2 = _mm256_sub_ps(xj, _mm256_loadu_ps(row + 16));
            __m256 t3 = _mm256_sub_ps(xj, _mm256_loadu_ps(row + 24));
            s0 = _mm256_fmadd_ps(t0, t0, s0);
            s1 = _mm256_fmadd_ps(t1, t1, s1);
            s2 = _mm256_fmadd_ps(t2, t2, s2);
            s3 = _mm256_fmadd_ps(t3, t3, s3);
        }
        _mm256_storeu_ps(acc + c, s0);
        _mm256_storeu_ps(acc + c + 8, s1);
        _mm256_storeu_ps(acc + c + 16, s2);
        _mm256_storeu_ps(acc + c + 24, s3);
    }
    for (; c < kp; c += 8) {
        __m256 s0 = _mm256_setzero_ps();
        for (size_t j = 0; j < d; j++) {
            __m256 t0 = _mm256_sub_ps(_mm256_set1_ps(x[j]), _mm256_loadu_ps(a->ct + j * kp + c));
            s0 = _mm256_fmadd_ps(t0, t0, s0);
        }
        _mm256_storeu_ps(acc + c, s0);
    }
}
#endif

#if KM_X86
/* Points [lo, hi): distances and a vector argmin, all in VEX code.  The
 * padding columns hold 1e18 - x, so the minimum is a real centroid's; ties
 * go to the smaller index, as in the scalar loop. */
__attribute__((target("avx2,fma"))) static void small_range_avx2(const km_assign *a, size_t lo,
                                                                 size_t hi, float *acc)
{
    size_t kp = a->kpad;
    for (size_t i = lo; i < hi; i++) {
        small_dists_avx2(a, a->x + i * a->d, acc);
        __m256 mn = _mm256_loadu_ps(acc);
        for (size_t c = 8; c < kp; c += 8)
            mn = _mm256_min_ps(mn, _mm256_loadu_ps(acc + c));
        mn = _mm256_min_ps(mn, _mm256_permute2f128_ps(mn, mn, 1));
        mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0x4e));
        mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0xb1));
        uint32_t best = 0;
        for (size_t c = 0; c < kp; c += 8) {
            int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(acc + c), mn, _CMP_EQ_OQ));
            if (m) {
                best = (uint32_t)(c + (size_t)__builtin_ctz((unsigned)m));
                break;
            }
        }
        if (best >= (uint32_t)a->k)
            best = 0; /* NaN input */
        a->assign[i] = best;
        if (a->dist)
            a->dist[i] = acc[best];
    }
}
#endif

/* Points [lo, hi) with the small kernel; acc: kpad floats. */
static void small_range(const km_assign *a, size_t lo, size_t hi, float *acc)
{
#if KM_X86
    if (vq_use_avx2()) {
        small_range_avx2(a, lo, hi, acc);
        return;
    }
#endif
    for (size_t i = lo; i < hi; i++) {
        small_dists_scalar(a, a->x + i * a->d, acc);
        uint32_t best = 0;
        float bd = acc[0];
        for (int c = 1; c < a->k; c++)
            if (acc[c] < bd) {
                bd = acc[c];
                best = (uint32_t)c;
            }
        a->assign[i] = best;
        if (a->dist)
            a->dist[i] = bd;
    }
}

/* Points [lo, hi) (at most KM_BLOCK) with sgemm; g: KM_BLOCK * k floats. */
static void blas_range(const km_assign *a, size_t lo, size_t hi, float *g)
{
    size_t m = hi - lo, d = a->d;
    int k = a->k;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, k, (int)d, 1.0f,
                a->x + lo * d, (int)d, a->cent, (int)d, 0.0f, g, k);
    const vd_table *vk = vd_kernels();
    for (size_t r = 0; r < m; r++) {
        const float *row = g + r * (size_t)k;
        uint32_t best = 0;
        float bd = a->cn2[0] - 2.0f * row[0];
        for (int c = 1; c < k; c++) {
            float v = a->cn2[c] - 2.0f * row[c];
            if (v < bd) {
                bd = v;
                best = (uint32_t)c;
            }
        }
        a->assign[lo + r] = best;
        if (a->dist) {
            float dd = vk->norm2_f32(a->x + (lo + r) * d, d) + bd;
            a->dist[lo + r] = dd > 0 ? dd : 0;
        }
    }
}

typedef struct km_task {
    const km_assign *a;
    size_t lo, hi;
} km_task;

static hs_status small_task(void *arg, hs_error *err)
{
    km_task *t = arg;
    float *acc = hs_malloc(t->a->kpad * sizeof *acc);
    if (!acc)
        return hs_err_nomem(err, t->a->kpad * sizeof *acc);
    small_range(t->a, t->lo, t->hi, acc);
    hs_free(acc);
    return HS_OK;
}

/* Sets up the kernel for the centroids a->cent (call after every update). */
static hs_status km_prepare(km_assign *a, hs_error *err)
{
    size_t d = a->d, k = (size_t)a->k;
    if (a->blas) {
        const vd_table *vk = vd_kernels();
        for (size_t c = 0; c < k; c++)
            a->cn2[c] = vk->norm2_f32(a->cent + c * d, d);
        return HS_OK;
    }
    size_t kp = a->kpad;
    for (size_t j = 0; j < d; j++) {
        float *row = a->ct + j * kp;
        for (size_t c = 0; c < k; c++)
            row[c] = a->cent[c * d + j];
        for (size_t c = k; c < kp; c++)
            row[c] = 1e18f; /* padding: never nearest */
    }
    (void)err;
    return HS_OK;
}

static hs_status km_init(km_assign *a, const float *x, size_t n, size_t d, int k,
                         const float *cent, uint32_t *assign, float *dist, hs_error *err)
{
    memset(a, 0, sizeof *a);
    a->x = x;
    a->n = n;
    a->d = d;
    a->k = k;
    a->kpad = ((size_t)k + 7) / 8 * 8;
    a->cent = cent;
    a->assign = assign;
    a->dist = dist;
    a->blas = d >= 32 && k >= 32;
    size_t bytes = a->blas ? (size_t)k * sizeof(float) : d * a->kpad * sizeof(float);
    float *mem = hs_malloc(bytes);
    if (!mem)
        return hs_err_nomem(err, bytes);
    if (a->blas)
        a->cn2 = mem;
    else
        a->ct = mem;
    return km_prepare(a, err);
}

static void km_release(km_assign *a)
{
    hs_free(a->blas ? a->cn2 : a->ct);
    a->cn2 = a->ct = NULL;
}

/* One assignment pass over all points. */
static hs_status km_run(const km_assign *a, hs_pool *pool, hs_error *err)
{
    size_t n = a->n;
    if (a->blas) {
        float *g = hs_malloc((size_t)KM_BLOCK * (size_t)a->k * sizeof *g);
        if (!g)
            return hs_err_nomem(err, (size_t)KM_BLOCK * (size_t)a->k * sizeof *g);
        for (size_t lo = 0; lo < n; lo += KM_BLOCK)
            blas_range(a, lo, lo + KM_BLOCK < n ? lo + KM_BLOCK : n, g);
        hs_free(g);
        return HS_OK;
    }
    size_t n_blocks = (n + KM_BLOCK - 1) / KM_BLOCK;
    double work = (double)n * a->k * a->d;
    if (!pool || n_blocks < 2 || work < 4e6) {
        km_task t = {a, 0, n};
        return small_task(&t, err);
    }
    /* a few tasks per thread, each a run of whole blocks */
    size_t n_tasks = (size_t)hs_pool_size(pool) * 4;
    if (n_tasks > n_blocks)
        n_tasks = n_blocks;
    km_task *tasks = hs_calloc(n_tasks, sizeof *tasks);
    if (!tasks)
        return hs_err_nomem(err, n_tasks * sizeof *tasks);
    hs_group *g = NULL;
    hs_status st = hs_group_create(pool, &g, err);
    for (size_t t = 0; st == HS_OK && t < n_tasks; t++) {
        size_t b0 = n_blocks * t / n_tasks, b1 = n_blocks * (t + 1) / n_tasks;
        tasks[t] = (km_task){a, b0 * KM_BLOCK, b1 * KM_BLOCK < n ? b1 * KM_BLOCK : n};
        st = hs_group_submit(g, small_task, &tasks[t]);
        if (st != HS_OK)
            hs_err_set(err, st, "k-means: cannot submit a task");
    }
    if (g) {
        hs_status w = hs_group_wait(g, err);
        if (st == HS_OK)
            st = w;
    }
    hs_group_destroy(g);
    hs_free(tasks);
    return st;
}

/* The slow loop that needs no memory (fallback when allocation fails). */
static void nearest_plain(const float *x, size_t n, size_t d, const float *cent, int k,
                          uint32_t *assign, float *dist)
{
    const vd_table *vk = vd_kernels();
    for (size_t i = 0; i < n; i++) {
        uint32_t best = 0;
        float bd = FLT_MAX;
        for (int c = 0; c < k; c++) {
            float v = vk->l2sq_f32(x + i * d, cent + (size_t)c * d, d);
            if (v < bd) {
                bd = v;
                best = (uint32_t)c;
            }
        }
        assign[i] = best;
        if (dist)
            dist[i] = bd;
    }
}

void vq_nearest(const float *x, size_t n, size_t d, const float *cent, int k, uint32_t *assign,
                float *dist)
{
    km_assign a;
    if (n == 0 || k <= 0)
        return;
    if (km_init(&a, x, n, d, k, cent, assign, dist, NULL) != HS_OK) {
        nearest_plain(x, n, d, cent, k, assign, dist);
        return;
    }
    if (km_run(&a, NULL, NULL) != HS_OK)
        nearest_plain(x, n, d, cent, k, assign, dist);
    km_release(&a);
}

/* ---- initialization ---------------------------------------------------- */

/* out[i] = ||c - x_i||^2: the kernels, or for tiny d (PQ subspaces) a plain
 * loop, which beats a kernel call per point there. */
static void dists_to(const float *c, const float *x, size_t n, size_t d, float *out)
{
    if (d > 16) {
        vd_kernels()->l2sq_f32_many(c, x, n, d, out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * d;
        float s = 0;
        for (size_t j = 0; j < d; j++) {
            float t = xi[j] - c[j];
            s += t * t;
        }
        out[i] = s;
    }
}

/* k-means++ (D^2 sampling) over a subsample of at most KM_PP_PER_CENTROID
 * points per centroid (rows spread evenly): seeds as good, and the
 * sequential k passes stay cheap. */
static hs_status init_plusplus(const float *x_all, size_t n_all, size_t d, int k, uint64_t *rng,
                               float *cent, hs_error *err)
{
    size_t n = n_all;
    float *sub = NULL;
    const float *x = x_all;
    if (n_all > (size_t)k * KM_PP_PER_CENTROID) {
        n = (size_t)k * KM_PP_PER_CENTROID;
        sub = hs_malloc(n * d * sizeof *sub);
        if (!sub)
            return hs_err_nomem(err, n * d * sizeof *sub);
        for (size_t i = 0; i < n; i++)
            memcpy(sub + i * d, x_all + (size_t)((double)i * n_all / n) * d, d * sizeof *sub);
        x = sub;
    }
    float *mind = hs_malloc(2 * n * sizeof *mind);
    if (!mind) {
        hs_free(sub);
        return hs_err_nomem(err, 2 * n * sizeof *mind);
    }
    float *tmp = mind + n;
    size_t pick = (size_t)vq_rand_below(rng, n);
    memcpy(cent, x + pick * d, d * sizeof *cent);
    dists_to(cent, x, n, d, mind);
    for (int c = 1; c < k; c++) {
        double total = 0;
        for (size_t i = 0; i < n; i++)
            total += mind[i];
        if (total > 0) {
            double r = vq_rand_unit(rng) * total, acc = 0;
            pick = n - 1;
            for (size_t i = 0; i < n; i++) {
                acc += mind[i];
                if (acc > r && mind[i] > 0) {
                    pick = i;
                    break;
                }
            }
        } else {
            pick = (size_t)vq_rand_below(rng, n);
        }
        float *cc = cent + (size_t)c * d;
        memcpy(cc, x + pick * d, d * sizeof *cc);
        dists_to(cc, x, n, d, tmp);
        for (size_t i = 0; i < n; i++)
            if (tmp[i] < mind[i])
                mind[i] = tmp[i];
    }
    hs_free(mind);
    hs_free(sub);
    return HS_OK;
}

/* k distinct points, uniformly (Knuth's selection sampling, in index order). */
static void init_random(const float *x, size_t n, size_t d, int k, uint64_t *rng, float *cent)
{
    size_t need = (size_t)k, c = 0;
    for (size_t i = 0; i < n && need > 0; i++) {
        if (vq_rand_below(rng, n - i) < need) {
            memcpy(cent + c * d, x + i * d, d * sizeof *cent);
            c++;
            need--;
        }
    }
}

/* ---- Lloyd iterations -------------------------------------------------- */

/* Means of the assigned points; returns the number of empty clusters. */
static int update_means(const float *x, size_t n, size_t d, int k, const uint32_t *assign,
                        double *sums, int64_t *count, float *cent)
{
    memset(sums, 0, (size_t)k * d * sizeof *sums);
    memset(count, 0, (size_t)k * sizeof *count);
    for (size_t i = 0; i < n; i++) {
        double *s = sums + (size_t)assign[i] * d;
        const float *xi = x + i * d;
        for (size_t j = 0; j < d; j++)
            s[j] += xi[j];
        count[assign[i]]++;
    }
    int empty = 0;
    for (int c = 0; c < k; c++) {
        if (count[c] == 0) {
            empty++;
            continue;
        }
        double inv = 1.0 / (double)count[c];
        for (size_t j = 0; j < d; j++)
            cent[(size_t)c * d + j] = (float)(sums[(size_t)c * d + j] * inv);
    }
    return empty;
}

/* Moves each empty centroid onto the farthest point of a cluster of >= 2. */
static void fill_empty(const float *x, size_t n, size_t d, int k, uint32_t *assign, float *dist,
                       int64_t *count, float *cent)
{
    for (int c = 0; c < k; c++) {
        if (count[c] != 0)
            continue;
        size_t best = n;
        float bd = 0;
        for (size_t i = 0; i < n; i++)
            if (dist[i] > bd && count[assign[i]] > 1) {
                bd = dist[i];
                best = i;
            }
        if (best == n)
            return; /* every point sits on a centroid: nothing to split */
        memcpy(cent + (size_t)c * d, x + best * d, d * sizeof *cent);
        count[assign[best]]--;
        count[c] = 1;
        assign[best] = (uint32_t)c;
        dist[best] = 0;
    }
}

hs_status vq_kmeans_pool(const float *x, size_t n, size_t d, int k, int iters, uint64_t seed,
                         hs_pool *pool, float *cent, uint32_t *assign, hs_error *err)
{
    if (!x || !cent || n == 0 || d == 0)
        return hs_err_set(err, HS_INVALID, "k-means: no points (n=%zu, d=%zu)", n, d);
    if (k < 1 || (size_t)k > n)
        return hs_err_set(err, HS_INVALID, "k-means: k=%d must be in 1..n=%zu", k, n);
    if (iters < 0)
        return hs_err_set(err, HS_INVALID, "k-means: iters=%d is negative", iters);
    if (n > SIZE_MAX / 64 / d)
        return hs_err_set(err, HS_INVALID, "k-means: %zu x %zu is too large", n, d);

    uint64_t rng = (seed ? seed : VQ_DEFAULT_SEED) ^ 0x6b6d65616e73ull; /* "kmeans" */
    size_t n_pp = n < (size_t)k * KM_PP_PER_CENTROID ? n : (size_t)k * KM_PP_PER_CENTROID;
    if ((double)n_pp * k * d <= KM_INIT_PP_MAX)
        HS_TRY(init_plusplus(x, n, d, k, &rng, cent, err));
    else
        init_random(x, n, d, k, &rng, cent);

    size_t bytes = n * (sizeof(uint32_t) * 2 + sizeof(float)) +
                   (size_t)k * (d * sizeof(double) + sizeof(int64_t));
    uint8_t *mem = hs_malloc(bytes);
    if (!mem)
        return hs_err_nomem(err, bytes);
    double *sums = (double *)mem;
    int64_t *count = (int64_t *)(sums + (size_t)k * d);
    float *dist = (float *)(count + k);
    uint32_t *cur = (uint32_t *)(dist + n);
    uint32_t *prev = cur + n;

    km_assign a;
    hs_status st = km_init(&a, x, n, d, k, cent, cur, dist, err);
    if (st != HS_OK) {
        hs_free(mem);
        return st;
    }
    for (int it = 0; it < iters && st == HS_OK; it++) {
        st = km_run(&a, pool, err);
        if (st != HS_OK)
            break;
        if (it > 0 && memcmp(cur, prev, n * sizeof *cur) == 0)
            break; /* converged: the means would not move */
        if (update_means(x, n, d, k, cur, sums, count, cent) > 0)
            fill_empty(x, n, d, k, cur, dist, count, cent);
        memcpy(prev, cur, n * sizeof *cur);
        st = km_prepare(&a, err);
    }
    if (st == HS_OK)
        st = km_run(&a, pool, err);
    if (st == HS_OK && assign)
        memcpy(assign, cur, n * sizeof *assign);
    km_release(&a);
    hs_free(mem);
    return st;
}

hs_status vq_kmeans(const float *x, size_t n, size_t d, int k, int iters, uint64_t seed,
                    int n_threads, float *cent, uint32_t *assign, hs_error *err)
{
    hs_pool *pool = NULL;
    if (n_threads != 1 && (double)n * (k > 0 ? k : 1) * d >= 4e6)
        HS_TRY(hs_pool_create(n_threads < 0 ? 0 : n_threads, &pool, err));
    hs_status st = vq_kmeans_pool(x, n, d, k, iters, seed, pool, cent, assign, err);
    hs_pool_destroy(pool);
    return st;
}
