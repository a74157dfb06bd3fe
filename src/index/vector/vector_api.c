/*
 * index/vector/vector_api.c - the public distance API (hyperstream/vector.h):
 * metric names, one pair of dense / sparse / packed vectors, batches, and
 * the SIMD level switch.
 *
 * One pair.  Dense float32 pairs go straight to the kernels of the level in
 * use (distance.h); float16 metrics other than L2 and IP convert blocks of
 * 256 halves to floats and reuse the float32 kernels; int8 sums are exact
 * integers (the kernels run on chunks of 32768 so int32 lanes cannot
 * overflow).  Sparse pairs merge the two sorted index lists in one pass,
 * summing in double.  Degenerate inputs: d = 0 gives the distance of two
 * empty vectors (0, and NaN for cosine); a NULL pointer with a nonzero size
 * or an unknown metric gives NaN (these functions return a double, not a
 * status).
 *
 * Batches (hs_distance_batch_f32) compute out[i * nx + j] over rectangles
 * of (query, vector) pairs:
 *
 *   path     when                                   how
 *   direct   small batches; L1, HAMMING, JACCARD    x tiled in ~128 KiB blocks; per
 *                                                   query, the level's *_many kernel
 *                                                   (L2, IP, COSINE) or pair kernels
 *   blas     L2, IP, COSINE with nq >= 16 and       cblas_sgemm of q x^T, then
 *            nq * nx * d >= 2^22                    L2:  |q|^2 + |x|^2 - 2 q.x, clamped
 *                                                        at 0, then sqrt
 *                                                   COSINE: 1 - q.x / (|q| |x|)
 *
 * The L2 identity loses digits when the distance is small next to the
 * norms (cancellation), so pairs whose squared distance comes out below
 * 1/16 of |q|^2 + |x|^2 are recomputed with the direct kernel: both paths
 * then agree with a double reference within ~1e-5 relative.  For cosine the
 * BLAS path has an absolute error of ~1e-6 (float products over d terms).
 *
 * Threads: n_threads 0 = one per online CPU; batches under 2^22
 * multiply-adds run on the calling thread.  Rectangles (split over queries,
 * or over vectors when there are fewer queries than threads) run on a
 * thread pool made for the call (hs_pool, the caller's thread helps).
 * OpenBLAS runs one thread while BLAS batches are in flight
 * (openblas_set_num_threads(1)), so its own threads never multiply ours:
 * all parallelism comes from the rectangles.  That setting is process-wide
 * in OpenBLAS 0.3.21 (no per-thread form), so the first batch to start
 * saves the host's value and the last to finish restores it (unless the
 * host changed it meanwhile).
 */
#include "hyperstream/vector.h"
#include "index/vector/distance_int.h"
#include "base/error.h"
#include "base/fork.h"
#include "base/mem.h"
#include "base/threadpool.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Metric names and SIMD levels                                         */
/* ------------------------------------------------------------------ */

static const struct {
    const char *name;
    hs_metric metric;
} metric_aliases[] = {
    {"l2", HS_METRIC_L2},          {"euclidean", HS_METRIC_L2},  {"cosine", HS_METRIC_COSINE},
    {"ip", HS_METRIC_IP},          {"inner_product", HS_METRIC_IP}, {"dot", HS_METRIC_IP},
    {"l1", HS_METRIC_L1},          {"manhattan", HS_METRIC_L1},  {"hamming", HS_METRIC_HAMMING},
    {"jaccard", HS_METRIC_JACCARD},
};

static const char *const metric_names[] = {"l2", "cosine", "ip", "l1", "hamming", "jaccard"};

static int metric_valid(hs_metric m)
{
    return (int)m >= (int)HS_METRIC_L2 && (int)m <= (int)HS_METRIC_JACCARD;
}

hs_status hs_metric_from_name(const char *name, hs_metric *out, hs_error *err)
{
    size_t i;
    if (!name || !out)
        return hs_err_set(err, HS_INVALID, "metric name: NULL argument");
    for (i = 0; i < sizeof metric_aliases / sizeof metric_aliases[0]; i++)
        if (strcasecmp(name, metric_aliases[i].name) == 0) {
            *out = metric_aliases[i].metric;
            return HS_OK;
        }
    return hs_err_set(err, HS_INVALID,
                      "unknown metric '%.64s' (expected l2, euclidean, cosine, ip, "
                      "inner_product, dot, l1, manhattan, hamming or jaccard)",
                      name);
}

const char *hs_metric_name(hs_metric m)
{
    return metric_valid(m) ? metric_names[m] : "unknown";
}

const char *hs_simd_level(void)
{
    return vd_kernels()->name;
}

hs_status hs_simd_set_level(const char *level, hs_error *err)
{
    static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
    int l;
    if (!level || strcasecmp(level, "best") == 0 || strcasecmp(level, "auto") == 0) {
        vd_set_kernels(NULL);
        return HS_OK;
    }
    for (l = 0; l < 4; l++)
        if (strcasecmp(level, names[l]) == 0)
            break;
    if (l == 4)
        return hs_err_set(err, HS_INVALID,
                          "unknown SIMD level '%.64s' (expected scalar, avx2, avx512, neon "
                          "or best)",
                          level);
    const vd_table *t = vd_kernels_level((vd_level)l);
    if (!t)
        return hs_err_set(err, HS_UNSUPPORTED, "SIMD level '%s' is not available on this CPU",
                          names[l]);
    vd_set_kernels(t);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* One pair                                                             */
/* ------------------------------------------------------------------ */

/* The distance of two empty vectors. */
static double empty_distance(hs_metric m)
{
    if (m == HS_METRIC_COSINE || !metric_valid(m))
        return NAN;
    return 0.0;
}

/* Dense HAMMING and JACCARD over any element type: V(p, i) reads element i
 * as a value that compares like the number (-0 == 0, NaN != NaN). */
#define DENSE_SET_METRIC(m, a, b, d, V)                                              \
    do {                                                                             \
        size_t i_, diff_ = 0, inter_ = 0, uni_ = 0;                                  \
        for (i_ = 0; i_ < (d); i_++) {                                               \
            int x_ = V(a, i_) != 0, y_ = V(b, i_) != 0;                              \
            diff_ += V(a, i_) != V(b, i_);                                           \
            inter_ += (size_t)(x_ & y_);                                             \
            uni_ += (size_t)(x_ | y_);                                               \
        }                                                                            \
        if ((m) == HS_METRIC_HAMMING)                                                \
            return (double)diff_;                                                    \
        return uni_ ? 1.0 - (double)inter_ / (double)uni_ : 0.0;                     \
    } while (0)

#define V_PLAIN(p, i) ((p)[i])
#define V_HALF(p, i) vd_f16_to_f32((p)[i])

double hs_distance_f32(hs_metric m, const float *a, const float *b, size_t d)
{
    const vd_table *k = vd_kernels();
    float s[3];
    if (d == 0 || !metric_valid(m))
        return empty_distance(m);
    if (!a || !b)
        return NAN;
    switch (m) {
    case HS_METRIC_L2:
        return sqrt((double)k->l2sq_f32(a, b, d));
    case HS_METRIC_IP:
        return (double)k->ip_f32(a, b, d);
    case HS_METRIC_L1:
        return (double)k->l1_f32(a, b, d);
    case HS_METRIC_COSINE:
        k->ip_norms_f32(a, b, d, s);
        return vd_cosine_from_sums(s[0], s[1], s[2]);
    case HS_METRIC_HAMMING:
    case HS_METRIC_JACCARD:
        DENSE_SET_METRIC(m, a, b, d, V_PLAIN);
    }
    return NAN;
}

#define F16_BLOCK 256

double hs_distance_f16(hs_metric m, const uint16_t *a, const uint16_t *b, size_t d)
{
    const vd_table *k = vd_kernels();
    float fa[F16_BLOCK], fb[F16_BLOCK], s[3];
    double ab = 0, aa = 0, bb = 0, l1 = 0;
    size_t i, n;
    if (d == 0 || !metric_valid(m))
        return empty_distance(m);
    if (!a || !b)
        return NAN;
    switch (m) {
    case HS_METRIC_L2:
        return sqrt((double)k->l2sq_f16(a, b, d));
    case HS_METRIC_IP:
        return (double)k->ip_f16(a, b, d);
    case HS_METRIC_L1:
    case HS_METRIC_COSINE:
        for (i = 0; i < d; i += n) {
            n = d - i < F16_BLOCK ? d - i : F16_BLOCK;
            k->f16_to_f32(a + i, fa, n);
            k->f16_to_f32(b + i, fb, n);
            if (m == HS_METRIC_L1) {
                l1 += k->l1_f32(fa, fb, n);
            } else {
                k->ip_norms_f32(fa, fb, n, s);
                ab += s[0];
                aa += s[1];
                bb += s[2];
            }
        }
        return m == HS_METRIC_L1 ? l1 : vd_cosine_from_sums(ab, aa, bb);
    case HS_METRIC_HAMMING:
    case HS_METRIC_JACCARD:
        DENSE_SET_METRIC(m, a, b, d, V_HALF);
    }
    return NAN;
}

/* int8 sums stay exact: 32768 * 255^2 and 32768 * 128^2 fit in int32. */
#define I8_CHUNK 32768

static int64_t i8_sum(int32_t (*fn)(const int8_t *, const int8_t *, size_t), const int8_t *a,
                      const int8_t *b, size_t d)
{
    int64_t s = 0;
    size_t i, n;
    for (i = 0; i < d; i += n) {
        n = d - i < I8_CHUNK ? d - i : I8_CHUNK;
        s += fn(a + i, b + i, n);
    }
    return s;
}

double hs_distance_i8(hs_metric m, const int8_t *a, const int8_t *b, size_t d)
{
    const vd_table *k = vd_kernels();
    size_t i;
    int64_t l1 = 0;
    if (d == 0 || !metric_valid(m))
        return empty_distance(m);
    if (!a || !b)
        return NAN;
    switch (m) {
    case HS_METRIC_L2:
        return sqrt((double)i8_sum(k->l2sq_i8, a, b, d));
    case HS_METRIC_IP:
        return (double)i8_sum(k->ip_i8, a, b, d);
    case HS_METRIC_COSINE:
        return vd_cosine_from_sums((double)i8_sum(k->ip_i8, a, b, d),
                                   (double)i8_sum(k->ip_i8, a, a, d),
                                   (double)i8_sum(k->ip_i8, b, b, d));
    case HS_METRIC_L1:
        for (i = 0; i < d; i++)
            l1 += a[i] > b[i] ? (int32_t)a[i] - b[i] : (int32_t)b[i] - a[i];
        return (double)l1;
    case HS_METRIC_HAMMING:
    case HS_METRIC_JACCARD:
        DENSE_SET_METRIC(m, a, b, d, V_PLAIN);
    }
    return NAN;
}

/* ------------------------------------------------------------------ */
/* Sparse and packed                                                    */
/* ------------------------------------------------------------------ */

hs_status hs_sparse_check(const uint32_t *idx, const float *val, size_t n, uint32_t dim,
                          hs_error *err)
{
    size_t i;
    if (n > 0 && (!idx || !val))
        return hs_err_set(err, HS_INVALID, "sparse vector: NULL indices or values with %zu entries",
                          n);
    if (n > (size_t)dim)
        return hs_err_set(err, HS_INVALID,
                          "sparse vector: %zu entries exceed the dimension %u", n, dim);
    for (i = 0; i < n; i++) {
        if (idx[i] >= dim)
            return hs_err_set(err, HS_INVALID,
                              "sparse vector: entry %zu has index %u, not below the dimension %u",
                              i, idx[i], dim);
        if (i > 0 && idx[i] <= idx[i - 1])
            return hs_err_set(err, HS_INVALID,
                              "sparse vector: entry %zu has index %u after %u (indices must be "
                              "strictly increasing)",
                              i, idx[i], idx[i - 1]);
        if (!isfinite(val[i]))
            return hs_err_set(err, HS_INVALID,
                              "sparse vector: entry %zu (index %u) is %s (values must be finite)",
                              i, idx[i], isnan(val[i]) ? "NaN" : "infinite");
    }
    return HS_OK;
}

/* One merge of the two index lists; a missing index is the value 0.  Every
 * step consumes at least one entry, so unsorted input gives a meaningless
 * number but never reads out of bounds. */
double hs_distance_sparse(hs_metric m, const uint32_t *ai, const float *av, size_t an,
                          const uint32_t *bi, const float *bv, size_t bn)
{
    double ab = 0, aa = 0, bb = 0, l2 = 0, l1 = 0;
    size_t i = 0, j = 0, diff = 0, inter = 0, uni = 0;
    if (!metric_valid(m))
        return NAN;
    if ((an > 0 && (!ai || !av)) || (bn > 0 && (!bi || !bv)))
        return NAN;
    while (i < an || j < bn) {
        double x = 0, y = 0;
        if (j >= bn || (i < an && ai[i] < bi[j])) {
            x = av[i++];
        } else if (i >= an || bi[j] < ai[i]) {
            y = bv[j++];
        } else {
            x = av[i++];
            y = bv[j++];
        }
        ab += x * y;
        aa += x * x;
        bb += y * y;
        l2 += (x - y) * (x - y);
        l1 += fabs(x - y);
        diff += x != y;
        inter += (size_t)((x != 0) & (y != 0));
        uni += (size_t)((x != 0) | (y != 0));
    }
    switch (m) {
    case HS_METRIC_L2:
        return sqrt(l2);
    case HS_METRIC_IP:
        return ab;
    case HS_METRIC_COSINE:
        return vd_cosine_from_sums(ab, aa, bb);
    case HS_METRIC_L1:
        return l1;
    case HS_METRIC_HAMMING:
        return (double)diff;
    case HS_METRIC_JACCARD:
        return uni ? 1.0 - (double)inter / (double)uni : 0.0;
    }
    return NAN;
}

double hs_distance_packed(hs_metric m, const uint8_t *a, const uint8_t *b, size_t nbytes)
{
    const vd_table *k = vd_kernels();
    if (m != HS_METRIC_HAMMING && m != HS_METRIC_JACCARD)
        return NAN;
    if (nbytes > 0 && (!a || !b))
        return NAN;
    if (nbytes == 0)
        return 0.0;
    if (m == HS_METRIC_HAMMING)
        return (double)k->hamming_bytes(a, b, nbytes);
    uint64_t uni = k->or_count_bytes(a, b, nbytes);
    if (uni == 0)
        return 0.0; /* two empty sets */
    return 1.0 - (double)k->and_count_bytes(a, b, nbytes) / (double)uni;
}

/* ------------------------------------------------------------------ */
/* Batches                                                              */
/* ------------------------------------------------------------------ */

#define BATCH_PAR_MIN (1.0 * (1 << 22)) /* multiply-adds worth a thread pool */
#define BATCH_BLAS_MIN (1.0 * (1 << 22)) /* multiply-adds worth sgemm */
#define BATCH_BLAS_MIN_NQ 16
#define BATCH_TILE_BYTES (128u * 1024u)
#define L2_RECHECK (1.0 / 16.0)

typedef struct batch_job {
    hs_metric m;
    const float *q, *x;
    size_t nq, nx, d;
    float *out;
    const float *qn, *xn; /* squared norms (BLAS path, direct cosine), else NULL */
    int blas;
    const vd_table *k;
} batch_job;

typedef struct batch_rect {
    const batch_job *job;
    size_t i0, i1, j0, j1;
} batch_rect;

static float pair_distance(const batch_job *b, const float *q, const float *x)
{
    if (b->m == HS_METRIC_L1)
        return b->k->l1_f32(q, x, b->d);
    return (float)hs_distance_f32(b->m, q, x, b->d); /* HAMMING, JACCARD: exact counts */
}

static void direct_rect(const batch_job *b, size_t i0, size_t i1, size_t j0, size_t j1)
{
    const vd_table *k = b->k;
    size_t d = b->d, tile = BATCH_TILE_BYTES / (d * sizeof(float));
    size_t jb, i, j, n;
    if (tile < 4)
        tile = 4;
    for (jb = j0; jb < j1; jb += n) {
        n = j1 - jb < tile ? j1 - jb : tile;
        const float *xb = b->x + jb * d;
        for (i = i0; i < i1; i++) {
            const float *qi = b->q + i * d;
            float *row = b->out + i * b->nx + jb;
            switch (b->m) {
            case HS_METRIC_L2:
                k->l2sq_f32_many(qi, xb, n, d, row);
                for (j = 0; j < n; j++)
                    row[j] = sqrtf(row[j]);
                break;
            case HS_METRIC_IP:
                k->ip_f32_many(qi, xb, n, d, row);
                break;
            case HS_METRIC_COSINE:
                k->ip_f32_many(qi, xb, n, d, row);
                for (j = 0; j < n; j++)
                    row[j] = (float)vd_cosine_from_sums(row[j], b->qn[i], b->xn[jb + j]);
                break;
            default:
                for (j = 0; j < n; j++)
                    row[j] = pair_distance(b, qi, xb + j * d);
                break;
            }
        }
    }
}

static void blas_rect(const batch_job *b, size_t i0, size_t i1, size_t j0, size_t j1)
{
    size_t d = b->d, nx = b->nx, i, j;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(i1 - i0), (int)(j1 - j0), (int)d,
                1.0f, b->q + i0 * d, (int)d, b->x + j0 * d, (int)d, 0.0f, b->out + i0 * nx + j0,
                (int)nx);
    if (b->m == HS_METRIC_IP)
        return;
    for (i = i0; i < i1; i++) {
        float *row = b->out + i * nx;
        double qn = b->qn[i];
        for (j = j0; j < j1; j++) {
            if (b->m == HS_METRIC_COSINE) {
                row[j] = (float)vd_cosine_from_sums(row[j], qn, b->xn[j]);
                continue;
            }
            double norms = qn + b->xn[j];
            double d2 = norms - 2.0 * row[j];
            if (!(d2 >= L2_RECHECK * norms)) /* cancellation (or NaN): exact kernel */
                d2 = b->k->l2sq_f32(b->q + i * d, b->x + j * d, d);
            if (d2 < 0)
                d2 = 0;
            row[j] = (float)sqrt(d2); /* NaN stays NaN */
        }
    }
}

static hs_status rect_task(void *arg, hs_error *err)
{
    const batch_rect *r = arg;
    (void)err;
    if (r->job->blas)
        blas_rect(r->job, r->i0, r->i1, r->j0, r->j1);
    else
        direct_rect(r->job, r->i0, r->i1, r->j0, r->j1);
    return HS_OK;
}

static pthread_mutex_t g_blas_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_blas_mu, HS_FORK_RANK_LEAF)
static int g_blas_users;    /* batches running BLAS */
static int g_blas_saved;    /* the host's thread count before the first of them */

static void blas_enter(void)
{
    pthread_mutex_lock(&g_blas_mu);
    if (g_blas_users++ == 0) {
        g_blas_saved = openblas_get_num_threads();
        if (g_blas_saved != 1)
            openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&g_blas_mu);
}

static void blas_leave(void)
{
    pthread_mutex_lock(&g_blas_mu);
    if (--g_blas_users == 0 && g_blas_saved != 1 && openblas_get_num_threads() == 1)
        openblas_set_num_threads(g_blas_saved);
    pthread_mutex_unlock(&g_blas_mu);
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 1024 ? 1024 : (int)n);
}

/* Runs the job over n_rect rectangles on n_threads threads (the caller's
 * included). */
static hs_status run_rects(const batch_job *job, int n_threads, hs_error *err)
{
    size_t nq = job->nq, nx = job->nx, n_rect, r;
    int by_rows = nq >= (size_t)n_threads;
    size_t span = by_rows ? nq : nx;
    n_rect = (size_t)n_threads * 4;
    if (n_rect > span)
        n_rect = span;
    if (n_threads <= 1 || n_rect <= 1) {
        batch_rect one = {job, 0, nq, 0, nx};
        return rect_task(&one, err);
    }
    batch_rect *rects = hs_calloc(n_rect, sizeof *rects);
    if (!rects)
        return hs_err_nomem(err, n_rect * sizeof *rects);
    for (r = 0; r < n_rect; r++) {
        size_t lo = span * r / n_rect, hi = span * (r + 1) / n_rect;
        rects[r] = by_rows ? (batch_rect){job, lo, hi, 0, nx} : (batch_rect){job, 0, nq, lo, hi};
    }
    hs_pool *pool = NULL;
    hs_group *group = NULL;
    hs_status st = hs_pool_create(n_threads - 1, &pool, err);
    if (st == HS_OK)
        st = hs_group_create(pool, &group, err);
    for (r = 0; st == HS_OK && r < n_rect; r++)
        st = hs_group_submit(group, rect_task, &rects[r]);
    if (group) {
        hs_status w = hs_group_wait(group, err);
        if (st == HS_OK)
            st = w;
    }
    hs_group_destroy(group);
    hs_pool_destroy(pool);
    hs_free(rects);
    if (st == HS_NOMEM)
        hs_err_prefix(err, "distance batch");
    return st;
}

static int mul_overflows(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

hs_status vd_batch_f32(hs_metric m, const float *q, size_t nq, const float *x, size_t nx,
                       size_t d, float *out, int n_threads, int path, hs_error *err)
{
    size_t n_out, nqd, nxd, i;
    if (!metric_valid(m))
        return hs_err_set(err, HS_INVALID, "distance batch: unknown metric %d", (int)m);
    int blas_metric = m == HS_METRIC_L2 || m == HS_METRIC_IP || m == HS_METRIC_COSINE;
    if (path == 2 && !blas_metric)
        return hs_err_set(err, HS_INVALID, "distance batch: no BLAS path for metric %s",
                          hs_metric_name(m));
    if (n_threads < 0)
        return hs_err_set(err, HS_INVALID, "distance batch: n_threads %d is negative", n_threads);
    if (mul_overflows(nq, nx, &n_out) || mul_overflows(nq, d, &nqd) ||
        mul_overflows(nx, d, &nxd) || n_out > SIZE_MAX / sizeof(float))
        return hs_err_set(err, HS_INVALID, "distance batch: %zu x %zu x %zu overflows", nq, nx, d);
    if (n_out == 0)
        return HS_OK;
    if (!out || (nqd > 0 && !q) || (nxd > 0 && !x))
        return hs_err_set(err, HS_INVALID, "distance batch: NULL %s for %zu x %zu, d = %zu",
                          !out ? "out" : !q ? "q" : "x", nq, nx, d);
    if (d == 0) {
        for (i = 0; i < n_out; i++)
            out[i] = (float)empty_distance(m);
        return HS_OK;
    }

    double work = (double)nq * (double)nx * (double)d;
    /* OpenBLAS takes int sizes: larger shapes stay on the direct path */
    int blas_ok = blas_metric && d <= INT_MAX && nx <= INT_MAX && nq <= INT_MAX;
    int blas = path == 2 ? blas_ok
               : path == 1 ? 0
                           : blas_ok && nq >= BATCH_BLAS_MIN_NQ && work >= BATCH_BLAS_MIN;
    if (n_threads == 0)
        n_threads = online_cpus();
    if (work < BATCH_PAR_MIN)
        n_threads = 1;

    batch_job job = {m, q, x, nq, nx, d, out, NULL, NULL, blas, vd_kernels()};
    float *norms = NULL;
    if (m == HS_METRIC_COSINE || (blas && m == HS_METRIC_L2)) {
        size_t n_norms = nq + nx;
        norms = hs_malloc(n_norms * sizeof(float));
        if (!norms)
            return hs_err_nomem(err, n_norms * sizeof(float));
        for (i = 0; i < nq; i++)
            norms[i] = job.k->norm2_f32(q + i * d, d);
        for (i = 0; i < nx; i++)
            norms[nq + i] = job.k->norm2_f32(x + i * d, d);
        job.qn = norms;
        job.xn = norms + nq;
    }
    if (blas)
        blas_enter();
    hs_status st = run_rects(&job, n_threads, err);
    if (blas)
        blas_leave();
    hs_free(norms);
    return st;
}

hs_status hs_distance_batch_f32(hs_metric m, const float *q, size_t nq, const float *x,
                                size_t nx, size_t d, float *out, int n_threads, hs_error *err)
{
    return vd_batch_f32(m, q, nq, x, nx, d, out, n_threads, 0, err);
}
