/*
 * tests/c/test_vq.c - quantizers (TQ8/TQ4/PQ/BIN/FLAT) and k-means.
 *
 * Oracles: brute force in double precision (exact distances, nearest
 * centroids, k-means objectives, top-k), the published Lloyd-Max levels and
 * TurboQuant's MSE figures for unit vectors, and the algebra of orthogonal
 * maps (norms and inner products preserved).  tests/python/test_vq_numpy.py
 * checks the same library against numpy/scipy.
 *
 * HS_VQ_BENCH=1 also prints ns per distance call at d = 384 and 784 (TQ8,
 * TQ4, PQ, BIN and the float kernels), outside the checks.
 */
#include "base/buf.h"
#include "base/hash.h"
#include "base/mem.h"
#include "harness.h"
#include "index/vector/distance.h"
#include "index/vector/vq.h"
#include "index/vector/vq_int.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* ---- data ---------------------------------------------------------------- */

static uint64_t rng_state = 12345;
static double urand(void) { return vq_rand_unit(&rng_state); }
static double nrand(void)
{
    double u = urand(), v = urand();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static float *gauss(size_t n, size_t d)
{
    float *x = malloc(n * d * sizeof *x);
    for (size_t i = 0; i < n * d; i++)
        x[i] = (float)nrand();
    return x;
}

static void normalize_rows(float *x, size_t n, size_t d)
{
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += (double)x[i * d + j] * x[i * d + j];
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = (float)(x[i * d + j] / sqrt(s));
    }
}

/* n points around n_clusters random centres (spread sigma), norms varying. */
static float *clustered(size_t n, size_t d, int n_clusters, double sigma)
{
    float *c = gauss((size_t)n_clusters, d);
    float *x = malloc(n * d * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        const float *ci = c + (size_t)(urand() * n_clusters) * d;
        double scale = 0.5 + urand();
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = (float)(scale * (ci[j] + sigma * nrand()));
    }
    free(c);
    return x;
}

/* Realistic neighbourhoods: n points of a mixture of n_clusters Gaussians
 * in 16 dimensions, embedded into d by a random linear map, plus a little
 * isotropic noise, with norms varying by 0.5..1.5 (low intrinsic dimension,
 * like embeddings: nearest neighbours are clearly nearer than the rest). */
static float *manifold(size_t n, size_t d, int n_clusters)
{
    const size_t k = 16;
    float *a = gauss(d, k), *c = gauss((size_t)n_clusters, k);
    float *x = malloc(n * d * sizeof *x);
    double z[16];
    for (size_t i = 0; i < n; i++) {
        const float *ci = c + (size_t)(urand() * n_clusters) * k;
        for (size_t t = 0; t < k; t++)
            z[t] = ci[t] + 0.6 * nrand();
        double scale = (0.5 + urand()) / sqrt((double)k);
        for (size_t j = 0; j < d; j++) {
            double s = 0;
            for (size_t t = 0; t < k; t++)
                s += a[j * k + t] * z[t];
            x[i * d + j] = (float)(scale * (s + 0.3 * nrand()));
        }
    }
    free(a);
    free(c);
    return x;
}

static double exact_dist(hs_metric m, const float *a, const float *b, size_t d)
{
    double s = 0, na = 0, nb = 0;
    for (size_t j = 0; j < d; j++) {
        double t = (double)a[j] - b[j];
        s += m == HS_METRIC_L2 ? t * t : (double)a[j] * b[j];
        na += (double)a[j] * a[j];
        nb += (double)b[j] * b[j];
    }
    if (m == HS_METRIC_L2)
        return s;
    if (m == HS_METRIC_IP)
        return -s;
    return na > 0 && nb > 0 ? 1.0 - s / sqrt(na * nb) : 1.0;
}

static vq *train(vq_type t, hs_metric m, const float *x, size_t n, size_t d, int pq_m)
{
    vq_params p = {.type = t, .metric = m, .pq_m = pq_m, .seed = 7, .n_threads = 2};
    vq *q = NULL;
    hs_error err = {0};
    if (vq_train(&p, x, n, d, &q, &err) != HS_OK) {
        fprintf(stderr, "vq_train: %s\n", err.msg);
        return NULL;
    }
    return q;
}

static uint8_t *encode(const vq *q, const float *x, size_t n)
{
    uint8_t *codes = malloc(n * vq_code_size(q) + 1);
    vq_encode(q, x, n, codes);
    return codes;
}

/* mean over rows of ||x - decode(code)||^2 / ||x||^2 */
static double rel_mse(const vq *q, const float *x, size_t n, size_t d)
{
    uint8_t *codes = encode(q, x, n);
    float *y = malloc(n * d * sizeof *y);
    hs_error err = {0};
    double tot = 0;
    if (vq_decode(q, codes, n, y, &err) == HS_OK)
        for (size_t i = 0; i < n; i++) {
            double e = 0, s = 0;
            for (size_t j = 0; j < d; j++) {
                double t = (double)x[i * d + j] - y[i * d + j];
                e += t * t;
                s += (double)x[i * d + j] * x[i * d + j];
            }
            tot += e / s;
        }
    else
        tot = NAN;
    free(codes);
    free(y);
    return tot / (double)n;
}

/* ---- rotation ------------------------------------------------------------ */

static void test_rotation_orthogonal(void)
{
    LEAK_START();
    const size_t dims[] = {1, 2, 3, 5, 7, 8, 64, 100, 384, 784, 1000};
    for (size_t t = 0; t < sizeof dims / sizeof *dims; t++) {
        size_t d = dims[t];
        vq_rot r;
        hs_error err = {0};
        CHECK_OK(vq_rot_init(&r, d, VQ_ROT_ROUNDS, 99, &err), &err);
        float *x = gauss(2, d), *y = malloc(2 * d * sizeof *y), *z = malloc(d * sizeof *z);
        float *tmp = malloc(d * sizeof *tmp);
        vq_rot_apply(&r, x, y, tmp);
        vq_rot_apply(&r, x + d, y + d, tmp);
        double nx = 0, ny = 0, ixy = 0, iyy = 0, back = 0;
        for (size_t j = 0; j < d; j++) {
            nx += (double)x[j] * x[j];
            ny += (double)y[j] * y[j];
            ixy += (double)x[j] * x[d + j];
            iyy += (double)y[j] * y[d + j];
        }
        vq_rot_inverse(&r, y, z, tmp);
        for (size_t j = 0; j < d; j++)
            back = fmax(back, fabs((double)z[j] - x[j]));
        CHECK(fabs(ny - nx) <= 1e-5 * nx);          /* norms preserved */
        CHECK(fabs(iyy - ixy) <= 1e-5 * nx + 1e-5); /* inner products preserved */
        CHECK(back <= 1e-5);                          /* R^T R = I */
        /* in place: out == x */
        memcpy(z, x, d * sizeof *z);
        vq_rot_apply(&r, z, z, tmp);
        CHECK(memcmp(z, y, d * sizeof *z) == 0);
        free(x);
        free(y);
        free(z);
        free(tmp);
        vq_rot_free(&r);
    }
    /* The rotation is regenerated from the saved seed, so its construction is
     * part of the file format: these values (R e_0, d = 6, seed 1) must never
     * change without a new format version.  (A pin, not an oracle.) */
    {
        vq_rot r;
        hs_error err = {0};
        float e[6] = {1, 0, 0, 0, 0, 0}, tmp[6];
        const float want[6] = {0.375f, -0.875f, 0.125f, -0.25f, -0.125f, 0.0f};
        CHECK_OK(vq_rot_init(&r, 6, 3, 1, &err), &err);
        vq_rot_apply(&r, e, e, tmp);
        CHECK(memcmp(e, want, sizeof e) == 0);
        vq_rot_free(&r);
    }
    /* a one-hot vector is spread: the largest rotated coordinate of e_0 at
     * d = 784 is small (a Gaussian's max over 784 draws is ~3.2 sigma) */
    {
        size_t d = 784;
        vq_rot r;
        hs_error err = {0};
        CHECK_OK(vq_rot_init(&r, d, VQ_ROT_ROUNDS, 5, &err), &err);
        float *e = calloc(d, sizeof *e), *tmp = malloc(d * sizeof *tmp);
        e[0] = 1;
        vq_rot_apply(&r, e, e, tmp);
        double mx = 0;
        for (size_t j = 0; j < d; j++)
            mx = fmax(mx, fabs(e[j]) * sqrt((double)d));
        CHECK(mx < 5.0);
        free(e);
        free(tmp);
        vq_rot_free(&r);
    }
    LEAK_END();
}

/* ---- codebooks and MSE --------------------------------------------------- */

static void test_lloyd_gauss(void)
{
    float l[256];
    vq_lloyd_gauss(2, l); /* +-sqrt(2/pi) */
    CHECK(fabs(l[1] - 0.7978846) < 1e-4 && fabs(l[0] + 0.7978846) < 1e-4);
    vq_lloyd_gauss(4, l); /* Max (1960): +-0.4528, +-1.5104 */
    CHECK(fabs(l[2] - 0.4528) < 1e-3 && fabs(l[3] - 1.5104) < 1e-3);
    CHECK(fabs(l[0] + 1.5104) < 1e-3);
    vq_lloyd_gauss(16, l); /* Max (1960) 16 levels: largest 2.733, smallest 0.1284 */
    CHECK(fabs(l[15] - 2.733) < 2e-3 && fabs(l[8] - 0.1284) < 1e-3);
    vq_lloyd_gauss(256, l);
    for (int k = 1; k < 256; k++)
        CHECK(l[k] > l[k - 1]);
    CHECK(fabs(l[128] + l[127]) < 1e-5); /* symmetric */
}

static void test_tq_mse(void)
{
    LEAK_START();
    size_t d = 768, n_train = 2000, n = 500;
    float *tr = gauss(n_train, d), *x = gauss(n, d);
    normalize_rows(tr, n_train, d);
    normalize_rows(x, n, d);
    vq *q4 = train(VQ_TQ4, HS_METRIC_L2, tr, n_train, d, 0);
    vq *q8 = train(VQ_TQ8, HS_METRIC_L2, tr, n_train, d, 0);
    vq *qb = train(VQ_BIN, HS_METRIC_L2, tr, n_train, d, 0);
    REQUIRE(q4 && q8 && qb);
    double m4 = rel_mse(q4, x, n, d), m8 = rel_mse(q8, x, n, d), mb = rel_mse(qb, x, n, d);
    fprintf(stderr, "  unit vectors d=%zu: MSE TQ4 %.5f  TQ8 %.7f  BIN %.4f\n", d, m4, m8, mb);
    /* TurboQuant (unit vectors): 4 bits ~0.009 (Lloyd-Max 0.0095); 1 bit
     * 1 - 2/pi = 0.36.  TQ8 uses uniform levels (fast integer distances):
     * the best uniform 256-level quantizer of N(0,1) has MSE 8.8e-5 (a
     * Lloyd-Max codebook 4.1e-5: test_tq8_table_levels). */
    CHECK(m4 > 0.0085 && m4 < 0.0105);
    CHECK(m8 > 6e-5 && m8 < 1.1e-4);
    CHECK(mb > 0.30 && mb < 0.40);

    /* vectors the rotation must spread: one-hot and constant vectors */
    float *adv = calloc(2 * d, sizeof *adv);
    adv[3] = 1;
    for (size_t j = 0; j < d; j++)
        adv[d + j] = 1;
    double a4 = rel_mse(q4, adv, 2, d);
    CHECK(a4 < 0.015);

    /* norms are kept exactly: scaled copies reconstruct to scaled copies */
    for (size_t j = 0; j < d; j++)
        adv[j] = 37.0f * x[j];
    double s4 = rel_mse(q4, adv, 1, d), u4 = rel_mse(q4, x, 1, d);
    CHECK(fabs(s4 - u4) < 1e-5);
    vq_free(q4);
    vq_free(q8);
    vq_free(qb);
    free(tr);
    free(x);
    free(adv);
    LEAK_END();
}

/* TQ with no training data uses the Gaussian codebook and still works. */
static void test_tq_untrained(void)
{
    LEAK_START();
    size_t d = 256, n = 300;
    float *x = gauss(n, d);
    vq *q = train(VQ_TQ4, HS_METRIC_L2, NULL, 0, d, 0);
    REQUIRE(q);
    float l[16];
    vq_lloyd_gauss(16, l);
    CHECK(fabs(q->level[15] - l[15]) < 0.03); /* snapped to the 7-bit grid */
    double m = rel_mse(q, x, n, d);
    CHECK(m > 0.0085 && m < 0.0105);
    vq_free(q);
    free(x);
    LEAK_END();
}

/* TQ8 parameters with non-uniform levels (as another writer could save):
 * the Lloyd-Max codebook reaches its MSE (Panter-Dite: sqrt(3) pi / 2 *
 * 4^-8 = 4.1e-5) and distances take the table path. */
static void test_tq8_table_levels(void)
{
    LEAK_START();
    size_t d = 512, n = 400;
    float *x = gauss(n, d), *qv = gauss(1, d);
    normalize_rows(x, n, d);
    vq *q = train(VQ_TQ8, HS_METRIC_L2, NULL, 0, d, 0);
    REQUIRE(q);
    CHECK(q->uniform);
    hs_buf b = {0};
    hs_error err = {0};
    CHECK_OK(vq_save(q, &b, &err), &err);
    vq_free(q);
    float lm[256];
    vq_lloyd_gauss(256, lm);
    for (int k = 0; k < 256; k++)
        memcpy(b.data + 40 + 4 * k, &lm[k], 4); /* little-endian host */
    uint32_t crc = hs_crc32(0, b.data, b.len - 4);
    memcpy(b.data + b.len - 4, &crc, 4);
    q = NULL;
    CHECK_OK(vq_load(b.data, b.len, &q, &err), &err);
    hs_buf_free(&b);
    CHECK(!q->uniform);
    double m = rel_mse(q, x, n, d);
    fprintf(stderr, "  TQ8 Lloyd-Max levels: MSE %.7f\n", m);
    CHECK(m > 2.5e-5 && m < 6e-5);
    uint8_t *codes = encode(q, x, n);
    float *y = malloc(n * d * sizeof *y);
    CHECK_OK(vq_decode(q, codes, n, y, &err), &err);
    vq_query *qq = NULL;
    CHECK_OK(vq_query_new(q, qv, &qq, &err), &err);
    double qn2 = -exact_dist(HS_METRIC_IP, qv, qv, d), worst = 0;
    for (size_t i = 0; i < n; i++) {
        double xn = vq_get_f32(codes + i * vq_code_size(q));
        double ex = qn2 + xn * xn + 2 * exact_dist(HS_METRIC_IP, qv, y + i * d, d);
        worst = fmax(worst, fabs(vq_query_dist(qq, codes + i * vq_code_size(q)) - ex));
    }
    CHECK(worst < 1e-4 * qn2);
    vq_query_free(qq);
    free(codes);
    free(y);
    free(x);
    free(qv);
    vq_free(q);
    LEAK_END();
}

/* ---- estimated distances ------------------------------------------------- */

/* Estimated distance vs the distance to the decoded vector y, in double:
 *   IP  -<q, y>      COSINE  1 - <q/|q|, y>
 *   L2  FLAT, PQ: ||q - y||^2;  TQ: ||q||^2 + ||x||^2 - 2 <q, y> with the
 *       stored ||x|| (the estimate keeps the true norm, not ||y||)
 * TQ8, PQ and FLAT equal it up to float rounding; TQ4 adds the int8
 * rounding of the query (small).  Errors relative to ||q|| ||y||. */
static void test_estimate_is_decoded_distance(void)
{
    LEAK_START();
    const vq_type types[] = {VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ};
    const hs_metric metrics[] = {HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP};
    size_t d = 97, n = 600; /* odd d: TQ4's padding nibble, uneven PQ subspaces */
    float *x = clustered(n, d, 10, 0.3), *qv = gauss(5, d);
    for (int ti = 0; ti < 4; ti++)
        for (int mi = 0; mi < 3; mi++) {
            hs_metric m = metrics[mi];
            vq *q = train(types[ti], m, x, n, d, 13);
            REQUIRE(q);
            size_t cs = vq_code_size(q);
            uint8_t *codes = encode(q, x, n);
            float *y = malloc(n * d * sizeof *y), *est = malloc(n * sizeof *est);
            hs_error err = {0};
            CHECK_OK(vq_decode(q, codes, n, y, &err), &err);
            double worst = 0;
            for (int k = 0; k < 5; k++) {
                const float *qk = qv + k * d;
                vq_query *qq = NULL;
                CHECK_OK(vq_query_new(q, qk, &qq, &err), &err);
                vq_query_dist_many(qq, codes, n, est);
                double qn = sqrt(-exact_dist(HS_METRIC_IP, qk, qk, d));
                for (size_t i = 0; i < n; i++) {
                    const float *yi = y + i * d;
                    double ip = -exact_dist(HS_METRIC_IP, qk, yi, d);
                    double yn = sqrt(-exact_dist(HS_METRIC_IP, yi, yi, d));
                    double ex;
                    if (m == HS_METRIC_IP)
                        ex = -ip;
                    else if (m == HS_METRIC_COSINE)
                        ex = 1 - ip / qn;
                    else if (types[ti] == VQ_TQ8 || types[ti] == VQ_TQ4) {
                        double xn = vq_get_f32(codes + i * cs);
                        ex = qn * qn + xn * xn - 2 * ip;
                    } else
                        ex = exact_dist(HS_METRIC_L2, qk, yi, d);
                    double scale = m == HS_METRIC_COSINE ? 1 : qn * yn + 1e-9;
                    worst = fmax(worst, fabs(est[i] - ex) / scale);
                    CHECK(est[i] == vq_query_dist(qq, codes + i * cs));
                }
                vq_query_free(qq);
            }
            /* code to code: <y_a, y_b> of the decoded vectors */
            double wsym = 0;
            for (size_t i = 0; i + 1 < n; i += 2) {
                const float *ya = y + i * d, *yb = ya + d;
                double ip = -exact_dist(HS_METRIC_IP, ya, yb, d);
                double na = vq_get_f32(codes + i * cs), nb = vq_get_f32(codes + (i + 1) * cs);
                double ex, scale = 1;
                if (m == HS_METRIC_IP)
                    ex = -ip;
                else if (m == HS_METRIC_COSINE)
                    ex = 1 - ip;
                else if (types[ti] == VQ_TQ8 || types[ti] == VQ_TQ4)
                    ex = na * na + nb * nb - 2 * ip;
                else
                    ex = exact_dist(HS_METRIC_L2, ya, yb, d);
                if (m != HS_METRIC_COSINE)
                    scale = sqrt(-exact_dist(HS_METRIC_IP, ya, ya, d) *
                                 -exact_dist(HS_METRIC_IP, yb, yb, d)) + 1e-9;
                double got = vq_code_dist(q, codes + i * cs, codes + (i + 1) * cs);
                wsym = fmax(wsym, fabs(got - ex) / scale);
            }
            CHECK(wsym <= 1e-4);
            double tol = types[ti] == VQ_TQ4 ? 0.01 : types[ti] == VQ_TQ8 ? 1e-4 : 1e-5;
            if (!(worst <= tol))
                fprintf(stderr, "  type %d metric %d: worst relative error %g\n", types[ti], m,
                        worst);
            CHECK(worst <= tol);
            free(codes);
            free(y);
            free(est);
            vq_free(q);
        }
    free(x);
    free(qv);
    LEAK_END();
}

static double pearson(const double *a, const double *b, size_t n)
{
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; i++) {
        ma += a[i];
        mb += b[i];
    }
    ma /= n;
    mb /= n;
    for (size_t i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / sqrt(saa * sbb);
}

/* Estimated vs exact distances of random pairs, and code-to-code distances. */
static void test_correlation(void)
{
    LEAK_START();
    size_t d = 128, n = 2000;
    float *x = clustered(n, d, 20, 0.5), *qv = clustered(20, d, 20, 0.5);
    const vq_type types[] = {VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    const double min_r[] = {0.9999, 0.99, 0.97, 0.75};
    const hs_metric metrics[] = {HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP};
    double *ex = malloc(20 * n * sizeof *ex), *es = malloc(20 * n * sizeof *es);
    for (int mi = 0; mi < 3; mi++)
        for (int ti = 0; ti < 4; ti++) {
            vq *q = train(types[ti], metrics[mi], x, n, d, 32);
            REQUIRE(q);
            uint8_t *codes = encode(q, x, n);
            size_t cs = vq_code_size(q), m = 0;
            hs_error err = {0};
            for (int k = 0; k < 20; k++) {
                vq_query *qq = NULL;
                CHECK_OK(vq_query_new(q, qv + k * d, &qq, &err), &err);
                for (size_t i = 0; i < n; i++, m++) {
                    es[m] = vq_query_dist(qq, codes + i * cs);
                    ex[m] = exact_dist(metrics[mi], qv + k * d, x + i * d, d);
                }
                vq_query_free(qq);
            }
            double r = pearson(es, ex, m);
            /* symmetric: code to code vs exact */
            m = 0;
            for (size_t i = 0; i + 1 < n; i += 2, m++) {
                es[m] = vq_code_dist(q, codes + i * cs, codes + (i + 1) * cs);
                ex[m] = exact_dist(metrics[mi], x + i * d, x + (i + 1) * d, d);
            }
            double rs = pearson(es, ex, m);
            if (r < min_r[ti] || rs < min_r[ti] - 0.01)
                fprintf(stderr, "  type %d metric %d: r %.5f symmetric %.5f\n", types[ti],
                        metrics[mi], r, rs);
            CHECK(r >= min_r[ti]);
            CHECK(rs >= min_r[ti] - 0.01);
            free(codes);
            vq_free(q);
        }
    free(ex);
    free(es);
    free(x);
    free(qv);
    LEAK_END();
}

/* ---- search quality ------------------------------------------------------ */

typedef struct cand {
    double d;
    uint32_t id;
} cand;

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* recall@10 of brute force over codes: *codes_only from the estimates
 * alone, returned: the best `rerank` reranked with exact distances. */
static double recall_at_10(const vq *q, const float *x, size_t n, size_t d, const float *qs,
                           int nq, hs_metric m, int rerank, double *codes_only)
{
    uint8_t *codes = encode(q, x, n);
    cand *c = malloc(n * sizeof *c), *t = malloc(n * sizeof *t);
    float *est = malloc(n * sizeof *est);
    int hit = 0, hit0 = 0;
    for (int k = 0; k < nq; k++) {
        const float *qv = qs + (size_t)k * d;
        vq_query *qq = NULL;
        if (vq_query_new(q, qv, &qq, NULL) != HS_OK)
            break;
        vq_query_dist_many(qq, codes, n, est);
        vq_query_free(qq);
        for (size_t i = 0; i < n; i++) {
            c[i] = (cand){est[i], (uint32_t)i};
            t[i] = (cand){exact_dist(m, qv, x + i * d, d), (uint32_t)i};
        }
        qsort(c, n, sizeof *c, cand_cmp);
        qsort(t, n, sizeof *t, cand_cmp);
        for (int i = 0; i < 10; i++)
            for (int j = 0; j < 10; j++)
                hit0 += c[i].id == t[j].id;
        for (int i = 0; i < rerank; i++)
            c[i].d = exact_dist(m, qv, x + c[i].id * d, d);
        qsort(c, (size_t)rerank, sizeof *c, cand_cmp);
        for (int i = 0; i < 10; i++)
            for (int j = 0; j < 10; j++)
                hit += c[i].id == t[j].id;
    }
    free(codes);
    free(c);
    free(t);
    free(est);
    *codes_only = hit0 / (10.0 * nq);
    return hit / (10.0 * nq);
}

static void test_recall(void)
{
    LEAK_START();
    size_t d = 96, n = 8000;
    int nq = 40;
    float *x = manifold(n + nq, d, 40);
    const float *qs = x + n * d; /* queries from the same distribution */
    const hs_metric metrics[] = {HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP};
    for (int mi = 0; mi < 3; mi++) {
        struct {
            vq_type t;
            int rerank;
            double min, min_codes;
        } cases[] = {{VQ_TQ8, 40, 0.99, 0.95}, {VQ_TQ4, 40, 0.99, 0.7}, {VQ_PQ, 40, 0.95, 0.5},
                     {VQ_BIN, 200, 0.95, 0.4}};
        for (int ci = 0; ci < 4; ci++) {
            vq *q = train(cases[ci].t, metrics[mi], x, n, d, 0);
            REQUIRE(q);
            double r0, r = recall_at_10(q, x, n, d, qs, nq, metrics[mi], cases[ci].rerank, &r0);
            fprintf(stderr, "  recall@10 metric %d type %d: codes only %.4f, rerank %d: %.4f\n",
                    metrics[mi], cases[ci].t, r0, cases[ci].rerank, r);
            CHECK(r >= cases[ci].min);
            CHECK(r0 >= cases[ci].min_codes);
            vq_free(q);
        }
    }
    free(x);
    LEAK_END();
}

/* ---- PQ ------------------------------------------------------------------ */

static void test_pq_mse_with_m(void)
{
    LEAK_START();
    size_t d = 60, n = 3000;
    float *x = clustered(n, d, 30, 0.6);
    const int ms[] = {1, 3, 7, 15, 30};
    double prev = INFINITY;
    for (int i = 0; i < 5; i++) {
        vq *q = train(VQ_PQ, HS_METRIC_L2, x, n, d, ms[i]);
        REQUIRE(q);
        CHECK(vq_code_size(q) == (size_t)ms[i]);
        CHECK(q->pq_off[ms[i]] == d);
        double mse = rel_mse(q, x, n, d);
        fprintf(stderr, "  PQ m=%d: relative MSE %.5f\n", ms[i], mse);
        CHECK(mse < prev);
        prev = mse;
        vq_free(q);
    }
    /* decoded sub-vectors are the nearest centroids (brute force) */
    vq *q = train(VQ_PQ, HS_METRIC_L2, x, n, d, 7);
    REQUIRE(q);
    uint8_t *codes = encode(q, x, 200);
    int bad = 0;
    for (size_t i = 0; i < 200; i++)
        for (int s = 0; s < 7; s++) {
            size_t off = q->pq_off[s], ds = q->pq_off[s + 1] - off;
            double best = INFINITY;
            int arg = -1;
            for (int c = 0; c < q->pq_k; c++) {
                double e = 0;
                for (size_t j = 0; j < ds; j++) {
                    double t = (double)x[i * d + off + j] - q->pq_cent[q->pq_k * off + c * ds + j];
                    e += t * t;
                }
                if (e < best - 1e-9) {
                    best = e;
                    arg = c;
                }
            }
            bad += codes[i * 7 + s] != arg;
        }
    CHECK(bad == 0);
    free(codes);
    vq_free(q);
    /* fewer rows than 256: k = n */
    q = train(VQ_PQ, HS_METRIC_IP, x, 50, d, 5);
    REQUIRE(q);
    CHECK(q->pq_k == 50);
    vq_free(q);
    free(x);
    LEAK_END();
}

/* ---- k-means ------------------------------------------------------------- */

static double objective(const float *x, size_t n, size_t d, const float *cent, int k,
                        const uint32_t *assign, int *mismatch)
{
    double tot = 0;
    *mismatch = 0;
    for (size_t i = 0; i < n; i++) {
        double best = INFINITY, mine = 0;
        for (int c = 0; c < k; c++) {
            double e = 0;
            for (size_t j = 0; j < d; j++) {
                double t = (double)x[i * d + j] - cent[(size_t)c * d + j];
                e += t * t;
            }
            if (e < best)
                best = e;
            if ((uint32_t)c == assign[i])
                mine = e;
        }
        if (mine > best * (1 + 1e-5) + 1e-6)
            (*mismatch)++;
        tot += mine;
    }
    return tot;
}

static void kmeans_case(size_t n, size_t d, int k)
{
    float *x = clustered(n, d, k, 0.4);
    float *cent = malloc((size_t)k * d * sizeof *cent), *c2 = malloc((size_t)k * d * sizeof *c2);
    uint32_t *a = malloc(n * sizeof *a), *a2 = malloc(n * sizeof *a2);
    hs_error err = {0};
    double prev = INFINITY;
    for (int it = 0; it <= 12; it++) {
        CHECK_OK(vq_kmeans(x, n, d, k, it, 42, 1, cent, a, &err), &err);
        int mismatch = 0;
        double obj = objective(x, n, d, cent, k, a, &mismatch);
        CHECK(mismatch == 0); /* assign = brute-force nearest */
        CHECK(obj <= prev * (1 + 1e-6));
        prev = obj;
    }
    /* deterministic, and independent of the thread count */
    CHECK_OK(vq_kmeans(x, n, d, k, 12, 42, 2, c2, a2, &err), &err);
    CHECK(memcmp(cent, c2, (size_t)k * d * sizeof *cent) == 0);
    CHECK(memcmp(a, a2, n * sizeof *a) == 0);
    /* no empty clusters on data with k clear clusters */
    int *cnt = calloc((size_t)k, sizeof *cnt);
    for (size_t i = 0; i < n; i++)
        cnt[a[i]]++;
    int empty = 0;
    for (int c = 0; c < k; c++)
        empty += cnt[c] == 0;
    CHECK(empty == 0);
    free(cnt);
    free(x);
    free(cent);
    free(c2);
    free(a);
    free(a2);
}

static void test_kmeans(void)
{
    LEAK_START();
    kmeans_case(3000, 8, 16);   /* small kernel */
    kmeans_case(3000, 40, 40);  /* sgemm kernel */
    kmeans_case(20000, 4, 64);  /* threaded small kernel */

    /* duplicates: 5 distinct points, k = 8: some centroids must coincide,
     * nothing crashes and every point has distance 0 */
    size_t n = 100, d = 3;
    float *x = malloc(n * d * sizeof *x), cent[8 * 3];
    uint32_t a[100];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = (float)((i % 5) * 10 + j);
    hs_error err = {0};
    CHECK_OK(vq_kmeans(x, n, d, 8, 10, 1, 1, cent, a, &err), &err);
    int mismatch = 0;
    CHECK(objective(x, n, d, cent, 8, a, &mismatch) == 0);
    /* k = n and bad arguments */
    CHECK_OK(vq_kmeans(x, 5, d, 5, 3, 1, 1, cent, a, &err), &err);
    CHECK(vq_kmeans(x, 5, d, 6, 3, 1, 1, cent, a, &err) == HS_INVALID);
    hs_error e2 = {0};
    CHECK(vq_kmeans(x, 5, d, 0, 3, 1, 1, cent, a, &e2) == HS_INVALID);
    free(x);
    LEAK_END();
}

/* ---- save / load --------------------------------------------------------- */

static void test_save_load(void)
{
    LEAK_START();
    size_t d = 33, n = 400;
    float *x = clustered(n, d, 8, 0.5), *qv = gauss(1, d);
    const vq_type types[] = {VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    for (int ti = 0; ti < 5; ti++) {
        vq *q = train(types[ti], HS_METRIC_COSINE, x, n, d, 6);
        REQUIRE(q);
        hs_buf b = {0}, b2 = {0};
        hs_error err = {0};
        CHECK_OK(vq_save(q, &b, &err), &err);
        vq *l = NULL;
        CHECK_OK(vq_load(b.data, b.len, &l, &err), &err);
        CHECK_OK(vq_save(l, &b2, &err), &err);
        CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
        CHECK(vq_get_type(l) == types[ti] && vq_dim(l) == d);
        CHECK(vq_code_size(l) == vq_code_size(q));
        uint8_t *c1 = encode(q, x, n), *c2 = encode(l, x, n);
        CHECK(memcmp(c1, c2, n * vq_code_size(q)) == 0);
        vq_query *q1 = NULL, *q2 = NULL;
        CHECK_OK(vq_query_new(q, qv, &q1, &err), &err);
        CHECK_OK(vq_query_new(l, qv, &q2, &err), &err);
        for (size_t i = 0; i < n; i += 7)
            CHECK(vq_query_dist(q1, c1 + i * vq_code_size(q)) ==
                  vq_query_dist(q2, c1 + i * vq_code_size(q)));
        vq_query_free(q1);
        vq_query_free(q2);
        free(c1);
        free(c2);
        vq_free(l);

        /* every truncation and every single-bit flip is rejected */
        int accepted = 0;
        for (size_t len = 0; len < b.len; len++) {
            hs_error e = {0};
            vq *t = NULL;
            if (vq_load(b.data, len, &t, &e) != HS_CORRUPT)
                accepted++;
            vq_free(t);
        }
        for (size_t i = 0; i < b.len; i++)
            for (int bit = 0; bit < 8; bit += (b.len > 2000 ? 3 : 1)) {
                b.data[i] ^= (uint8_t)(1u << bit);
                hs_error e = {0};
                vq *t = NULL;
                if (vq_load(b.data, b.len, &t, &e) != HS_CORRUPT || e.code != HS_CORRUPT)
                    accepted++;
                vq_free(t);
                b.data[i] ^= (uint8_t)(1u << bit);
            }
        CHECK(accepted == 0);
        hs_buf_free(&b);
        hs_buf_free(&b2);
        vq_free(q);
    }
    free(x);
    free(qv);
    LEAK_END();
}

/* ---- edge cases ---------------------------------------------------------- */

static void test_edges(void)
{
    LEAK_START();
    hs_error err = {0};
    vq *q = NULL;
    vq_params p = {.type = VQ_TQ4, .metric = HS_METRIC_L2};
    float bad[4] = {1, NAN, 0, 0};
    CHECK(vq_train(&p, bad, 1, 4, &q, &err) == HS_INVALID && q == NULL);
    CHECK(strstr(err.msg, "non-finite") != NULL);
    hs_error e2 = {0};
    p.metric = HS_METRIC_L1;
    CHECK(vq_train(&p, bad, 0, 4, &q, &e2) == HS_INVALID);
    hs_error e3 = {0};
    p.metric = HS_METRIC_L2;
    CHECK(vq_train(&p, bad, 0, 0, &q, &e3) == HS_INVALID);
    hs_error e4 = {0};
    p.type = VQ_PQ;
    CHECK(vq_train(&p, NULL, 0, 4, &q, &e4) == HS_INVALID);

    /* tiny dimensions, zero vectors */
    const vq_type types[] = {VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    for (size_t d = 1; d <= 3; d++)
        for (int ti = 0; ti < 5; ti++) {
            float *x = gauss(50, d);
            memset(x, 0, d * sizeof *x); /* row 0 is zero */
            q = train(types[ti], ti % 2 ? HS_METRIC_COSINE : HS_METRIC_L2, x, 50, d, 0);
            REQUIRE(q);
            uint8_t *codes = encode(q, x, 50);
            vq_query *qq = NULL;
            CHECK_OK(vq_query_new(q, x, &qq, &err), &err); /* zero query */
            float out[50];
            vq_query_dist_many(qq, codes, 50, out);
            for (int i = 0; i < 50; i++)
                CHECK(isfinite(out[i]));
            vq_query_free(qq);
            CHECK(isfinite(vq_code_dist(q, codes, codes + vq_code_size(q))));
            free(codes);
            free(x);
            vq_free(q);
        }
    LEAK_END();
}

/* Threaded encoding (large batches) gives the codes of one-by-one encoding. */
static void test_encode_threads(void)
{
    LEAK_START();
    size_t d = 300, n = 4000; /* n * d >= 2^20: the pool path */
    float *x = clustered(n, d, 10, 0.5);
    const vq_type types[] = {VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    for (int ti = 0; ti < 5; ti++) {
        vq *q = train(types[ti], HS_METRIC_L2, x, 500, d, 30); /* n_threads = 2 */
        REQUIRE(q);
        size_t cs = vq_code_size(q);
        uint8_t *all = encode(q, x, n), *one = malloc(n * cs);
        for (size_t i = 0; i < n; i++)
            vq_encode(q, x + i * d, 1, one + i * cs);
        CHECK(memcmp(all, one, n * cs) == 0);
        free(all);
        free(one);
        vq_free(q);
    }
    free(x);
    LEAK_END();
}

/* Every allocation failing in turn: HS_NOMEM (never a crash), no leak. */
static void test_out_of_memory(void)
{
    LEAK_START();
    size_t d = 20, n = 300;
    float *x = clustered(n, d, 5, 0.5);
    const vq_type types[] = {VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    for (int ti = 0; ti < 5; ti++) {
        vq_params p = {.type = types[ti], .metric = HS_METRIC_COSINE, .pq_m = 4, .n_threads = 1};
        int ok = 0;
        for (int64_t k = 1; k < 400 && !ok; k++) {
            vq *q = NULL;
            hs_buf b = {0};
            hs_error err = {0};
            hs_mem_fail_after(k);
            hs_status st = vq_train(&p, x, n, d, &q, &err);
            if (st == HS_OK) {
                st = vq_save(q, &b, &err);
                vq *l = NULL;
                if (st == HS_OK)
                    st = vq_load(b.data, b.len, &l, &err);
                vq_query *qq = NULL;
                if (st == HS_OK)
                    st = vq_query_new(l, x, &qq, &err);
                uint8_t code[128];
                if (st == HS_OK)
                    st = vq_encode_checked(l, x, 1, code, &err);
                vq_query_free(qq);
                vq_free(l);
                ok = st == HS_OK;
            }
            hs_mem_fail_after(0);
            CHECK(st == HS_OK || st == HS_NOMEM);
            hs_buf_free(&b);
            vq_free(q);
        }
        CHECK(ok);
    }
    /* k-means */
    float cent[8 * 20];
    for (int64_t k = 1; k < 50; k++) {
        hs_error err = {0};
        hs_mem_fail_after(k);
        hs_status st = vq_kmeans(x, n, d, 8, 5, 1, 1, cent, NULL, &err);
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        if (st == HS_OK)
            break;
    }
    free(x);
    LEAK_END();
}

/* SIMD and scalar paths agree (TQ4 exactly: integer sums). */
static void test_levels_agree(void)
{
    LEAK_START();
    if (!vq_use_avx2()) {
        SKIP("no AVX2");
    }
    size_t d = 784, n = 300;
    float *x = clustered(n, d, 5, 0.5), *qv = gauss(1, d);
    const vq_type types[] = {VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    for (int ti = 0; ti < 4; ti++) {
        vq *q = train(types[ti], HS_METRIC_L2, x, n, d, 98);
        REQUIRE(q);
        uint8_t *codes = encode(q, x, n);
        float a[300], b[300];
        hs_error err = {0};
        vq_query *qq = NULL;
        CHECK_OK(vq_query_new(q, qv, &qq, &err), &err);
        vq_query_dist_many(qq, codes, n, a);
        vq_query_free(qq);
        CHECK_OK(hs_simd_set_level("scalar", &err), &err);
        CHECK_OK(vq_query_new(q, qv, &qq, &err), &err);
        vq_query_dist_many(qq, codes, n, b);
        vq_query_free(qq);
        CHECK_OK(hs_simd_set_level(NULL, &err), &err);
        double worst = 0;
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(a[i] - b[i]) / (fabs(b[i]) + 1));
        CHECK(worst < (types[ti] == VQ_TQ4 || types[ti] == VQ_BIN ? 1e-5 : 1e-4));
        if (types[ti] != VQ_PQ) { /* the rotation is bit-identical on both levels */
            float *ra = malloc(d * sizeof *ra), *rb = malloc(d * sizeof *rb);
            CHECK_OK(vq_rotate(q, x, 1, ra, &err), &err);
            CHECK_OK(hs_simd_set_level("scalar", &err), &err);
            CHECK_OK(vq_rotate(q, x, 1, rb, &err), &err);
            CHECK_OK(hs_simd_set_level(NULL, &err), &err);
            CHECK(memcmp(ra, rb, d * sizeof *ra) == 0);
            free(ra);
            free(rb);
        }
        free(codes);
        vq_free(q);
    }
    free(x);
    free(qv);
    LEAK_END();
}

/* ---- optional micro-benchmark -------------------------------------------- */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The machine may be shared: every figure is the best of 15 short rounds. */
#define BEST_OF(ns_per_item, items, body)                 \
    do {                                                  \
        double best_ = INFINITY;                          \
        for (int round_ = 0; round_ < 15; round_++) {     \
            double t0_ = now_ns();                        \
            body;                                         \
            best_ = fmin(best_, (now_ns() - t0_) / (items)); \
        }                                                 \
        ns_per_item = best_;                              \
    } while (0)

static void bench(void)
{
    const size_t dims[] = {384, 784};
    size_t n = 20000, nb = 1000; /* nb codes stay in cache; n do not */
    volatile float sink = 0;
    for (int di = 0; di < 2; di++) {
        size_t d = dims[di];
        float *x = gauss(n, d), *qv = gauss(1, d);
        const vd_table *vk = vd_kernels();
        double tf, tfr;
        BEST_OF(tf, nb, for (size_t i = 0; i < nb; i++) sink += vk->l2sq_f32(qv, x + i * d, d));
        uint64_t s = 1;
        BEST_OF(tfr, nb,
                for (size_t i = 0; i < nb; i++) sink +=
                vk->l2sq_f32(qv, x + vq_rand_below(&s, n) * d, d));
        fprintf(stderr, "bench d=%zu: float32 l2sq (%s) %4zu B/vector %6.1f ns cached, %6.1f ns "
                "random of %zu MB\n", d, vk->name, 4 * d, tf, tfr, n * d * 4 >> 20);
        const vq_type types[] = {VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
        const char *names[] = {"TQ8", "TQ4", "PQ m=d/4", "BIN"};
        for (int ti = 0; ti < 4; ti++) {
            vq_params p = {.type = types[ti], .metric = HS_METRIC_L2, .seed = 7, .train_max = 5000};
            vq *q = NULL;
            if (vq_train(&p, x, n, d, &q, NULL) != HS_OK)
                continue;
            uint8_t *codes = encode(q, x, n);
            size_t cs = vq_code_size(q);
            vq_query *qq = NULL;
            if (vq_query_new(q, qv, &qq, NULL) == HS_OK) {
                double tq, tr, tn, te;
                BEST_OF(tq, nb, for (size_t i = 0; i < nb; i++) sink +=
                        vq_query_dist(qq, codes + i * cs));
                s = 1;
                BEST_OF(tr, nb, for (size_t i = 0; i < nb; i++) sink +=
                        vq_query_dist(qq, codes + vq_rand_below(&s, n) * cs));
                BEST_OF(tn, 20, for (int r = 0; r < 20; r++) {
                    vq_query *t = NULL;
                    if (vq_query_new(q, qv, &t, NULL) == HS_OK)
                        vq_query_free(t);
                });
                BEST_OF(te, 200, vq_encode(q, x, 200, codes));
                fprintf(stderr,
                        "bench d=%zu: %-8s %4zu B/code   %6.1f ns cached, %6.1f ns random; "
                        "query_new %.1f us; encode %.1f us/vector\n",
                        d, names[ti], cs, tq, tr, tn / 1000, te / 1000);
                vq_query_free(qq);
            }
            free(codes);
            vq_free(q);
        }
        free(x);
        free(qv);
    }
    (void)sink;
}

int main(void)
{
    if (getenv("HS_VQ_BENCH")) {
        bench();
        return 0;
    }
    HS_RUN(test_rotation_orthogonal);
    HS_RUN(test_lloyd_gauss);
    HS_RUN(test_tq_mse);
    HS_RUN(test_tq_untrained);
    HS_RUN(test_tq8_table_levels);
    HS_RUN(test_estimate_is_decoded_distance);
    HS_RUN(test_correlation);
    HS_RUN(test_recall);
    HS_RUN(test_pq_mse_with_m);
    HS_RUN(test_kmeans);
    HS_RUN(test_save_load);
    HS_RUN(test_edges);
    HS_RUN(test_encode_threads);
    HS_RUN(test_out_of_memory);
    HS_RUN(test_levels_agree);
    return hs_test_summary();
}
