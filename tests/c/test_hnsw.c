/*
 * tests/c/test_hnsw.c - HNSW and IVF indexes (index/vector/hnsw.h).
 *
 * Oracle: brute-force k-nearest neighbours computed here in double
 * precision (no library code involved).  Recall@10 is |ours ∩ truth| / 10,
 * averaged over the queries.  Data are Gaussian clusters (HNSW's realistic
 * case; uniform random high-dimensional data has no neighbourhood structure).
 * Sizes stay small (a few thousand vectors, d 16-64) so the test is quick
 * under ASan too.
 */
#include "base/buf.h"
#include "base/hash.h"
#include "base/mem.h"
#include "harness.h"
#include "index/vector/hnsw.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- data and the oracle ------------------------------------------------ */

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double urand(void) { return ((rnd() >> 11) + 0.5) / 9007199254740992.0; }
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

/* n vectors around `clusters` centres (row-major, caller frees).  The
 * centres depend only on (clusters, d), so data and queries made by two
 * calls share them. */
static float *make_data(size_t n, size_t d, int clusters, double spread)
{
    float *c = malloc((size_t)clusters * d * sizeof(float));
    float *x = malloc(n * d * sizeof(float));
    uint64_t saved = rng_state;
    rng_state = 0x51ed270b4a7f3c11ull ^ ((uint64_t)clusters << 32) ^ d;
    for (size_t i = 0; i < (size_t)clusters * d; i++)
        c[i] = (float)(2 * urand() - 1);
    rng_state = saved;
    for (size_t i = 0; i < n; i++) {
        size_t k = rnd() % (size_t)clusters;
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = c[k * d + j] + (float)(spread * nrand());
    }
    free(c);
    return x;
}

static double ref_dist(hs_metric m, const float *a, const float *b, size_t d)
{
    double s = 0, na = 0, nb = 0;
    for (size_t j = 0; j < d; j++) {
        if (m == HS_METRIC_L2)
            s += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
        else
            s += (double)a[j] * b[j];
        na += (double)a[j] * a[j];
        nb += (double)b[j] * b[j];
    }
    if (m == HS_METRIC_L2)
        return s;
    if (m == HS_METRIC_IP)
        return -s;
    return 1 - s / sqrt(na * nb);
}

typedef struct ref_hit {
    double d;
    uint32_t id;
} ref_hit;
static int cmp_ref(const void *a, const void *b)
{
    const ref_hit *x = a, *y = b;
    return x->d < y->d ? -1 : x->d > y->d ? 1 : (x->id > y->id) - (x->id < y->id);
}

/* Brute-force top-k (allow NULL = all rows); returns how many (<= k). */
static int brute_force(const float *x, size_t n, size_t d, hs_metric m, const float *q, int k,
                       const roaring_bitmap_t *allow, ref_hit *out)
{
    ref_hit *all = malloc(n * sizeof *all);
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (!allow || roaring_bitmap_contains(allow, (uint32_t)i))
            all[c++] = (ref_hit){ ref_dist(m, q, x + i * d, d), (uint32_t)i };
    qsort(all, c, sizeof *all, cmp_ref);
    int r = (int)(c < (size_t)k ? c : (size_t)k);
    memcpy(out, all, (size_t)r * sizeof *out);
    free(all);
    return r;
}

static int overlap(const hnsw_hit *a, int na, const ref_hit *b, int nb)
{
    int c = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a[i].id == b[j].id) {
                c++;
                break;
            }
    return c;
}

/* ---- fetch callback ------------------------------------------------------- */

typedef struct fetch_ctx {
    const float *x;
    size_t n, d;
    int64_t calls, rows;
    int fail;          /* nonzero: return HS_IO */
    int check_sorted;  /* ids must be strictly increasing */
    int unsorted;
} fetch_ctx;

static hs_status fetch_rows(void *ctx, const uint32_t *ids, size_t n, float *out, hs_error *err)
{
    fetch_ctx *f = ctx;
    f->calls++;
    if (f->fail)
        return hs_err_set(err, HS_IO, "test fetch failure");
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= f->n)
            return hs_err_set(err, HS_INVALID, "fetch of row %u >= %zu", ids[i], f->n);
        if (i > 0 && ids[i] <= ids[i - 1])
            f->unsorted = 1;
        memcpy(out + i * f->d, f->x + (size_t)ids[i] * f->d, f->d * sizeof(float));
    }
    f->rows += (int64_t)n;
    return HS_OK;
}

/* Mean recall@k of an index over nq queries (allow may be NULL). */
static double recall_of(const hnsw_index *ix, const float *x, size_t n, size_t d, hs_metric m,
                        const float *qs, int nq, int k, int ef, const roaring_bitmap_t *allow,
                        int64_t exact_threshold, int *short_answers)
{
    fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
    hnsw_hit *hits = malloc((size_t)k * sizeof *hits);
    ref_hit *ref = malloc((size_t)k * sizeof *ref);
    double sum = 0;
    int counted = 0;
    *short_answers = 0;
    for (int qi = 0; qi < nq; qi++) {
        const float *q = qs + (size_t)qi * d;
        hnsw_search_opts o = { .k = k, .ef = ef, .allow = allow, .exact_threshold = exact_threshold,
                               .fetch = fetch_rows, .fetch_ctx = &f };
        int got = -1;
        hs_error err = { 0 };
        if (hnsw_search(ix, q, &o, hits, &got, NULL, &err) != HS_OK) {
            fprintf(stderr, "search failed: %s\n", err.msg);
            (*short_answers)++;
            continue;
        }
        int want = brute_force(x, n, d, m, q, k, allow, ref);
        if (got != want)
            (*short_answers)++;
        if (want == 0)
            continue;
        sum += (double)overlap(hits, got, ref, want) / want;
        counted++;
    }
    free(hits);
    free(ref);
    return counted ? sum / counted : 1.0;
}

static hnsw_params params_of(hs_metric m, vq_type t)
{
    hnsw_params p;
    memset(&p, 0, sizeof p);
    p.metric = m;
    p.quant.type = t;
    p.n_threads = 1;
    p.ef_construction = 100;
    return p;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_exact_search(void)
{
    size_t n = 1500, d = 24;
    float *x = make_data(n, d, 10, 0.4);
    float *qs = make_data(20, d, 10, 0.4);
    hs_metric metrics[] = { HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP, HS_METRIC_L1 };
    roaring_bitmap_t *allow = roaring_bitmap_create();
    for (uint32_t i = 0; i < n; i += 7)
        roaring_bitmap_add(allow, i);
    roaring_bitmap_add(allow, (uint32_t)n + 5);  /* rows past the file are ignored */
    int64_t live = hs_mem_live_count();
    for (int mi = 0; mi < 4; mi++) {
        hs_metric m = metrics[mi];
        for (int qi = 0; qi < 20; qi++) {
            const float *q = qs + (size_t)qi * d;
            for (int use_allow = 0; use_allow < 2; use_allow++) {
                const roaring_bitmap_t *al = use_allow ? allow : NULL;
                ref_hit ref[15];
                hnsw_hit a[15], b[15];
                int na = -1, nb = -1;
                hs_error err = { 0 };
                fetch_ctx f = { x, n, d, 0, 0, 0, 1, 0 };
                int want;
                if (m == HS_METRIC_L1) {  /* the oracle has no L1: brute force here */
                    ref_hit *all = malloc(n * sizeof *all);
                    size_t c = 0;
                    for (size_t i = 0; i < n; i++) {
                        if (al && !roaring_bitmap_contains(al, (uint32_t)i))
                            continue;
                        double s = 0;
                        for (size_t j = 0; j < d; j++)
                            s += fabs((double)q[j] - x[i * d + j]);
                        all[c++] = (ref_hit){ s, (uint32_t)i };
                    }
                    qsort(all, c, sizeof *all, cmp_ref);
                    want = c < 15 ? (int)c : 15;
                    memcpy(ref, all, (size_t)want * sizeof *ref);
                    free(all);
                } else {
                    want = brute_force(x, n, d, m, q, 15, al, ref);
                }
                CHECK_OK(hnsw_exact_search(x, n, d, m, q, 15, al, NULL, NULL, a, &na, &err), &err);
                CHECK_OK(hnsw_exact_search(NULL, n, d, m, q, 15, al, fetch_rows, &f, b, &nb, &err),
                         &err);
                CHECK(na == want && nb == want);
                CHECK(f.unsorted == 0);
                for (int i = 0; i < want && i < na && i < nb; i++) {
                    double tol = 1e-4 * (fabs(ref[i].d) + 1);
                    CHECK(fabs(a[i].dist - ref[i].d) < tol);
                    CHECK(a[i].id == b[i].id && a[i].dist == b[i].dist);
                    /* same row, or a tie within float tolerance */
                    double da = m == HS_METRIC_L1 ? ref[i].d : ref_dist(m, q, x + (size_t)a[i].id * d, d);
                    CHECK(a[i].id == ref[i].id || fabs(da - ref[i].d) < tol);
                }
            }
        }
    }
    /* k larger than the allowed rows: all of them */
    roaring_bitmap_t *few = roaring_bitmap_create();
    roaring_bitmap_add(few, 3);
    roaring_bitmap_add(few, 99);
    hnsw_hit h[10];
    int nh = -1;
    hs_error err = { 0 };
    CHECK_OK(hnsw_exact_search(x, n, d, HS_METRIC_L2, qs, 10, few, NULL, NULL, h, &nh, &err), &err);
    CHECK(nh == 2);
    /* errors */
    CHECK(hnsw_exact_search(NULL, n, d, HS_METRIC_L2, qs, 10, NULL, NULL, NULL, h, &nh, &err) ==
          HS_INVALID);
    hs_error e2 = { 0 };
    CHECK(hnsw_exact_search(x, n, d, HS_METRIC_HAMMING, qs, 10, NULL, NULL, NULL, h, &nh, &e2) ==
          HS_INVALID);
    fetch_ctx bad = { x, n, d, 0, 0, 1, 0, 0 };
    hs_error e3 = { 0 };
    CHECK(hnsw_exact_search(NULL, n, d, HS_METRIC_L2, qs, 10, NULL, fetch_rows, &bad, h, &nh,
                            &e3) == HS_IO);
    CHECK(strstr(e3.msg, "test fetch failure") != NULL);
    CHECK(hs_mem_live_count() == live);
    roaring_bitmap_free(few);
    roaring_bitmap_free(allow);
    free(x);
    free(qs);
}

static void test_recall_flat(void)
{
    size_t n = 2000, d = 32;
    float *x = make_data(n, d, 1, 1.0);  /* one Gaussian: the hard case */
    float *qs = make_data(50, d, 1, 1.0);
    hs_metric metrics[] = { HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP };
    for (int mi = 0; mi < 3; mi++) {
        hnsw_params p = params_of(metrics[mi], VQ_FLAT);
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        int short_answers;
        double r = recall_of(ix, x, n, d, metrics[mi], qs, 50, 10, 64, NULL, 0, &short_answers);
        fprintf(stderr, "  flat %s: recall@10 %.3f at ef 64\n", hs_metric_name(metrics[mi]), r);
        CHECK(r >= 0.95);
        CHECK(short_answers == 0);
        hnsw_info info;
        hnsw_get_info(ix, &info);
        CHECK(info.n == n && info.d == d && info.M == 16 && info.quant == VQ_FLAT);
        CHECK(info.memory_bytes >= n * d * 4);
        hnsw_free(ix);
    }
    free(x);
    free(qs);
}

static void test_recall_quantized(void)
{
    size_t n = 2000, d = 48;
    float *x = make_data(n, d, 10, 0.6);
    float *qs = make_data(40, d, 10, 0.6);
    struct { vq_type t; const char *name; hs_metric m; } cases[] = {
        { VQ_TQ8, "tq8", HS_METRIC_L2 }, { VQ_TQ8, "tq8", HS_METRIC_COSINE },
        { VQ_TQ4, "tq4", HS_METRIC_L2 }, { VQ_PQ, "pq", HS_METRIC_L2 },
        { VQ_BIN, "bin", HS_METRIC_L2 },
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        hs_metric m = cases[ci].m;
        hnsw_params p = params_of(m, cases[ci].t);
        if (cases[ci].t == VQ_BIN)
            p.rerank = 10;  /* 1 bit per coordinate needs a deeper rerank */
        int rr = p.rerank ? p.rerank : (cases[ci].t == VQ_TQ8 ? 1 : 4);
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        int short_answers;
        double r = recall_of(ix, x, n, d, m, qs, 40, 10, 64, NULL, 0, &short_answers);
        fprintf(stderr, "  %s %s: recall@10 %.3f at ef 64, rerank %d\n", cases[ci].name,
                hs_metric_name(m), r, rr);
        /* the target covers tq8/tq4/pq; 1-bit codes get a looser bound */
        CHECK(r >= (cases[ci].t == VQ_BIN ? 0.85 : 0.95));
        CHECK(short_answers == 0);
        /* without fetch: refused */
        hnsw_search_opts o = { .k = 10 };
        hnsw_hit h[10];
        int nh;
        hs_error e2 = { 0 };
        CHECK(hnsw_search(ix, qs, &o, h, &nh, NULL, &e2) == HS_INVALID);
        /* a failing fetch fails the search with its error */
        fetch_ctx bad = { x, n, d, 0, 0, 1, 0, 0 };
        hnsw_search_opts ob = { .k = 10, .fetch = fetch_rows, .fetch_ctx = &bad };
        hs_error e3 = { 0 };
        CHECK(hnsw_search(ix, qs, &ob, h, &nh, NULL, &e3) == HS_IO && nh == 0);
        /* the rerank asks for max(k * rerank, ef) rows in ascending order */
        fetch_ctx f = { x, n, d, 0, 0, 0, 1, 0 };
        hnsw_search_opts of = { .k = 10, .ef = 20, .fetch = fetch_rows, .fetch_ctx = &f };
        hnsw_search_stats st;
        hs_error e4 = { 0 };
        CHECK_OK(hnsw_search(ix, qs, &of, h, &nh, &st, &e4), &e4);
        CHECK(nh == 10);
        CHECK(st.reranked == (10 * rr > 20 ? 10 * rr : 20) && f.rows == st.reranked);
        CHECK(f.unsorted == 0);
        for (int i = 0; i < nh; i++)  /* exact distances after rerank */
            CHECK(fabs(h[i].dist - ref_dist(m, qs, x + (size_t)h[i].id * d, d)) <
                  1e-4 * (1 + fabs(h[i].dist)));
        hnsw_free(ix);
    }
    free(x);
    free(qs);
}

/* Under a 10% allow-list the graph walk steps through rejected rows
 * without measuring them: over 20 queries it evaluates at most 2x the
 * distances of the unfiltered walk with the same ef (it measured every
 * visited row before: about 4 ef / selectivity), at recall >= 0.95. */
static void test_filtered_distances(void)
{
    size_t n = 6000, d = 32;
    float *x = make_data(n, d, 10, 0.6);
    float *qs = make_data(20, d, 10, 0.6);
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
    roaring_bitmap_t *allow = roaring_bitmap_create();
    for (uint32_t i = 0; i < n; i++)
        if (urand() < 0.1)
            roaring_bitmap_add(allow, i);
    int64_t dist_all = 0, dist_f = 0;
    for (int qi = 0; qi < 20; qi++) {
        hnsw_hit h[10];
        int nh;
        hnsw_search_stats st;
        hnsw_search_opts o = { .k = 10, .ef = 32 };
        CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h, &nh, &st, &err), &err);
        dist_all += st.distances;
        o.allow = allow;
        o.exact_threshold = 1;   /* the graph, whatever the size */
        CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h, &nh, &st, &err), &err);
        CHECK(nh == 10 && st.exact == 0);
        dist_f += st.distances;
    }
    fprintf(stderr, "  distances over 20 queries: unfiltered %lld, 10%% allowed %lld\n",
            (long long)dist_all, (long long)dist_f);
    CHECK(dist_f <= 2 * dist_all);
    int short_answers;
    double r = recall_of(ix, x, n, d, HS_METRIC_L2, qs, 20, 10, 32, allow, 1, &short_answers);
    CHECK(short_answers == 0 && r >= 0.95);
    roaring_bitmap_free(allow);
    hnsw_free(ix);
    free(x);
    free(qs);
}

/* Filtered search at each selectivity: exactly min(k, allowed) rows and
 * recall >= 0.95, through the default path (exact below the threshold) and
 * forced through the graph (threshold 1). */
static void test_filtered(void)
{
    size_t n = 3000, d = 32;
    float *x = make_data(n, d, 10, 0.6);
    float *qs = make_data(20, d, 10, 0.6);
    double sel[] = { 0.5, 0.1, 0.01, 0.001, 0.0001 };
    vq_type types[] = { VQ_FLAT, VQ_TQ8 };
    for (int ti = 0; ti < 2; ti++) {
        hnsw_params p = params_of(HS_METRIC_L2, types[ti]);
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        for (int si = 0; si < 5; si++) {
            roaring_bitmap_t *allow = roaring_bitmap_create();
            for (uint32_t i = 0; i < n; i++)
                if (urand() < sel[si])
                    roaring_bitmap_add(allow, i);
            for (int forced = 0; forced < 2; forced++) {
                int short_answers;
                double r = recall_of(ix, x, n, d, HS_METRIC_L2, qs, 20, 10, 64, allow,
                                     forced ? 1 : 0, &short_answers);
                fprintf(stderr, "  %s filter %.4f (%llu rows)%s: recall@10 %.3f\n",
                        ti ? "tq8" : "flat", sel[si],
                        (unsigned long long)roaring_bitmap_get_cardinality(allow),
                        forced ? " graph" : "", r);
                CHECK(short_answers == 0);
                CHECK(r >= 0.95);
            }
            /* stats say which path ran */
            fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
            hnsw_search_opts o = { .k = 10, .allow = allow, .fetch = fetch_rows, .fetch_ctx = &f };
            hnsw_hit h[10];
            int nh;
            hnsw_search_stats st;
            o.exact_threshold = 1000;
            CHECK_OK(hnsw_search(ix, qs, &o, h, &nh, &st, &err), &err);
            uint64_t card = roaring_bitmap_get_cardinality(allow);
            CHECK(card == 0 || st.exact == (card <= 1000));
            CHECK(nh == (card < 10 ? (int)card : 10));
            roaring_bitmap_free(allow);
        }
        /* nothing allowed, or only rows past the file: no rows, no error */
        roaring_bitmap_t *none = roaring_bitmap_create();
        roaring_bitmap_add(none, (uint32_t)n + 10);
        fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
        hnsw_search_opts o = { .k = 10, .allow = none, .fetch = fetch_rows, .fetch_ctx = &f };
        hnsw_hit h[10];
        int nh = -1;
        CHECK_OK(hnsw_search(ix, qs, &o, h, &nh, NULL, &err), &err);
        CHECK(nh == 0);
        roaring_bitmap_free(none);
        hnsw_free(ix);
    }
    free(x);
    free(qs);
}

/* The default path in the two-hop band (1/16 to 1/4 of the rows allowed):
 * the walk measures allowed rows only, so an allow-list above the
 * crossover sqrt(4 ef n) is walked even below the flat floors (2,000 rows,
 * 6 MiB streamed) that apply outside the band; below the band they still
 * apply.  The allow-lists are roaring arrays (< 4,096 rows), which the walk
 * reads as a dense bitset; a row past the file must not count. */
static void test_two_hop_band_default(void)
{
    size_t n = 8000, d = 16;
    float *x = make_data(n, d, 10, 0.6);
    float *qs = make_data(20, d, 10, 0.6);
    vq_type types[] = { VQ_FLAT, VQ_TQ8 };
    for (int ti = 0; ti < 2; ti++) {
        hnsw_params p = params_of(HS_METRIC_L2, types[ti]);
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        /* ef 16: crossover sqrt(4 * 16 * 8000) = 715 rows; band 500..1999 */
        double sel[] = { 0.125, 0.2, 0.04 };
        for (int si = 0; si < 3; si++) {
            roaring_bitmap_t *allow = roaring_bitmap_create();
            for (uint32_t i = 0; i < n; i++)
                if (urand() < sel[si])
                    roaring_bitmap_add(allow, i);
            roaring_bitmap_add(allow, (uint32_t)n + 5);   /* past the file: ignored */
            uint64_t card = roaring_bitmap_range_cardinality(allow, 0, n);
            bool band = card >= n / 16 && card < n / 4;
            CHECK(band == (si < 2));
            fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
            int exact = 0;
            for (int qi = 0; qi < 20; qi++) {
                hnsw_search_opts o = { .k = 10, .ef = 16, .allow = allow, .fetch = fetch_rows,
                                       .fetch_ctx = &f };
                hnsw_hit h[10];
                int nh;
                hnsw_search_stats st;
                CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h, &nh, &st, &err), &err);
                CHECK(nh == 10);
                for (int i = 0; i < nh; i++)
                    CHECK(h[i].id < n && roaring_bitmap_contains(allow, h[i].id));
                exact += st.exact;
            }
            /* in the band: walked (before: exact up to 2,000 rows); below: exact */
            CHECK(exact == (band ? 0 : 20));
            /* the caller's bitset (built once for many queries): exactly
             * allow's rows below n, and the same answers as without it */
            uint64_t *bits = NULL;
            CHECK_OK(hnsw_allow_bits(ix, allow, &bits, &err), &err);
            CHECK(bits != NULL);
            size_t set = 0;
            for (uint32_t i = 0; i < n; i++) {
                bool b = (bits[i >> 6] >> (i & 63)) & 1;
                CHECK(b == roaring_bitmap_contains(allow, i));
                set += b;
            }
            CHECK(set == card);
            for (int qi = 0; qi < 20; qi++) {
                hnsw_search_opts o = { .k = 10, .ef = 16, .allow = allow, .fetch = fetch_rows,
                                       .fetch_ctx = &f };
                hnsw_hit h1[10], h2[10];
                int n1, n2;
                CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h1, &n1, NULL, &err), &err);
                o.allow_bits = bits;
                CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h2, &n2, NULL, &err), &err);
                CHECK(n1 == n2);
                for (int i = 0; i < n1 && i < n2; i++)
                    CHECK(h1[i].id == h2[i].id && h1[i].dist == h2[i].dist);
            }
            hs_free(bits);
            int short_answers;
            double r = recall_of(ix, x, n, d, HS_METRIC_L2, qs, 20, 10, 16, allow, 0,
                                 &short_answers);
            fprintf(stderr, "  %s %.3f (%llu rows)%s: recall@10 %.3f\n", ti ? "tq8" : "flat",
                    sel[si], (unsigned long long)card, band ? " two-hop walk" : " exact", r);
            CHECK(short_answers == 0 && r >= 0.95);
            roaring_bitmap_free(allow);
        }
        /* 60% of the rows, dense roaring containers: the walk reads roaring
         * itself, so no bitset is built; no allow-list: none either */
        roaring_bitmap_t *most = roaring_bitmap_create();
        for (uint32_t i = 0; i < n; i++)
            if (urand() < 0.6)
                roaring_bitmap_add(most, i);
        uint64_t *bits = (uint64_t *)&err;
        CHECK_OK(hnsw_allow_bits(ix, most, &bits, &err), &err);
        CHECK(bits == NULL);
        bits = (uint64_t *)&err;
        CHECK_OK(hnsw_allow_bits(ix, NULL, &bits, &err), &err);
        CHECK(bits == NULL);
        roaring_bitmap_free(most);
        hnsw_free(ix);
    }
    free(x);
    free(qs);
}

/* A graph split into two unconnected clusters: a filtered graph search that
 * cannot reach the allowed rows must still return them (exact fallback). */
static void test_unreachable_fallback(void)
{
    size_t n = 600, d = 8;
    float *x = malloc(n * d * sizeof(float));
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = (float)((i < n / 2 ? 0.0 : 1000.0) + nrand());
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    p.M = 4;
    p.ef_construction = 8;
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
    roaring_bitmap_t *allow = roaring_bitmap_create();
    for (uint32_t i = 0; i < n; i++)
        roaring_bitmap_add(allow, i);
    /* all rows allowed, k = n: every row must come back */
    hnsw_hit *h = malloc(n * sizeof *h);
    int nh;
    hnsw_search_opts o = { .k = (int)n, .ef = 10, .allow = allow, .exact_threshold = 1 };
    hnsw_search_stats st;
    CHECK_OK(hnsw_search(ix, x, &o, h, &nh, &st, &err), &err);
    CHECK(nh == (int)n);
    roaring_bitmap_t *seen = roaring_bitmap_create();
    for (int i = 0; i < nh; i++)
        roaring_bitmap_add(seen, h[i].id);
    CHECK(roaring_bitmap_get_cardinality(seen) == n);
    for (int i = 1; i < nh; i++)
        CHECK(h[i - 1].dist <= h[i].dist);
    roaring_bitmap_free(seen);
    free(h);
    roaring_bitmap_free(allow);
    hnsw_free(ix);
    free(x);
}

static void test_multithreaded_build(void)
{
    size_t n = 6000, d = 16;
    float *x = make_data(n, d, 1, 1.0);
    float *qs = make_data(50, d, 1, 1.0);
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    p.n_threads = 4;
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    int64_t live = hs_mem_live_count();
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
    int short_answers;
    double r = recall_of(ix, x, n, d, HS_METRIC_L2, qs, 50, 10, 64, NULL, 0, &short_answers);
    fprintf(stderr, "  4 threads: recall@10 %.3f\n", r);
    CHECK(r >= 0.95);
    CHECK(short_answers == 0);
    hnsw_free(ix);
    CHECK(hs_mem_live_count() == live);
    free(x);
    free(qs);
}

/* Vectors on a few lines (4-d, coordinates linear in the row number modulo
 * primes: consecutive rows are neighbours on a line), built by 2 threads
 * that insert consecutive rows at the same time.  A thread that reached a
 * node being inserted through an upper-level back-link used to descend into
 * its still-empty lower lists and link its own node to that one alone: with
 * these two seeds (ef_construction 100), 33 and 378 of the 16384 rows were
 * not found by a search for their own vector at ef 200; now 7 to 11 (27 once
 * under ASan, whose timing changes the interleaving: the bound is 64, which
 * the old race's 378 on seed 5 still fails by far).
 * The level draws matter on such data (1 thread, seeds 1..10: 0 to 83 rows;
 * hnswlib 0.8.0, its seeds 1..10: 0 to 38), hence fixed seeds. */
static void test_multithreaded_build_lines(void)
{
    size_t n = 16384, d = 4;
    static const long mod[4] = { 1009, 997, 991, 983 };
    float *x = malloc(n * d * sizeof(float));
    CHECK(x != NULL);
    if (!x)
        return;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < d; j++)
            x[k * d + j] = (float)((long)(k * (7 + 2 * j) + j * 131) % mod[j]);
    static const uint64_t seeds[] = { 2, 5 };   /* levels whose 1-thread build finds every row */
    for (size_t si = 0; si < 2; si++) {
        uint64_t seed = seeds[si];
        hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
        p.n_threads = 2;
        p.seed = seed;
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        if (!ix)
            break;
        size_t missed = 0;
        for (size_t i = 0; i < n; i++) {
            hnsw_search_opts o = { .k = 1, .ef = 200 };
            hnsw_hit h[1];
            int nh = 0;
            if (hnsw_search(ix, x + i * d, &o, h, &nh, NULL, &err) != HS_OK || nh != 1 ||
                h[0].id != i)
                missed++;
        }
        fprintf(stderr, "  lines, 2 threads, seed %d: %zu of %zu rows not found by their own "
                "vector\n", (int)seed, missed, n);
        CHECK(missed <= 64);   /* 0.4% */
        hnsw_free(ix);
    }
    free(x);
}

/* Searches from several threads at once on one index (the scratch pool is
 * shared) give the single-threaded answers. */
typedef struct conc_job {
    const hnsw_index *ix;
    const float *x, *qs;
    size_t n, d;
    int nq;
    const hnsw_hit *want;  /* nq * 10 */
    int mismatches;
} conc_job;

static void *conc_thread(void *arg)
{
    conc_job *j = arg;
    fetch_ctx f = { j->x, j->n, j->d, 0, 0, 0, 0, 0 };
    for (int rep = 0; rep < 3; rep++) {
        for (int qi = 0; qi < j->nq; qi++) {
            hnsw_search_opts o = { .k = 10, .fetch = fetch_rows, .fetch_ctx = &f };
            hnsw_hit h[10];
            int nh = 0;
            hs_error err = { 0 };
            if (hnsw_search(j->ix, j->qs + (size_t)qi * j->d, &o, h, &nh, NULL, &err) != HS_OK ||
                nh != 10) {
                j->mismatches++;
                continue;
            }
            for (int i = 0; i < 10; i++)
                if (h[i].id != j->want[qi * 10 + i].id || h[i].dist != j->want[qi * 10 + i].dist)
                    j->mismatches++;
        }
    }
    return NULL;
}

static void test_concurrent_search(void)
{
    size_t n = 2000, d = 24;
    float *x = make_data(n, d, 10, 0.5);
    float *qs = make_data(40, d, 10, 0.5);
    for (int quant = 0; quant < 2; quant++) {
        hnsw_params p = params_of(HS_METRIC_L2, quant ? VQ_TQ8 : VQ_FLAT);
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        hnsw_hit *want = malloc(40 * 10 * sizeof *want);
        fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
        for (int qi = 0; qi < 40; qi++) {
            hnsw_search_opts o = { .k = 10, .fetch = fetch_rows, .fetch_ctx = &f };
            int nh;
            CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, want + qi * 10, &nh, NULL, &err),
                     &err);
        }
        conc_job jobs[4];
        pthread_t th[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = (conc_job){ ix, x, qs, n, d, 40, want, 0 };
            CHECK(pthread_create(&th[t], NULL, conc_thread, &jobs[t]) == 0);
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            CHECK(jobs[t].mismatches == 0);
        }
        free(want);
        hnsw_free(ix);
    }
    free(x);
    free(qs);
}

static void test_deterministic(void)
{
    size_t n = 800, d = 16;
    float *x = make_data(n, d, 10, 0.3);
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    hnsw_index *a = NULL, *b = NULL;
    hs_error err = { 0 };
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &a, &err), &err);
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &b, &err), &err);
    hs_buf ia = { 0 }, ib = { 0 };
    CHECK_OK(hnsw_save(a, &ia, &err), &err);
    CHECK_OK(hnsw_save(b, &ib, &err), &err);
    CHECK(ia.len == ib.len && memcmp(ia.data, ib.data, ia.len) == 0);
    hs_buf_free(&ia);
    hs_buf_free(&ib);
    hnsw_free(a);
    hnsw_free(b);
    free(x);
}

static void compare_results(const hnsw_index *a, const hnsw_index *b, const float *x, size_t n,
                            size_t d, const float *qs, int nq, const roaring_bitmap_t *allow)
{
    fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
    for (int qi = 0; qi < nq; qi++) {
        hnsw_search_opts o = { .k = 10, .allow = allow, .exact_threshold = allow ? 1 : 0,
                               .fetch = fetch_rows, .fetch_ctx = &f };
        hnsw_hit ha[10], hb[10];
        int na = -1, nb = -2;
        hs_error err = { 0 };
        CHECK_OK(hnsw_search(a, qs + (size_t)qi * d, &o, ha, &na, NULL, &err), &err);
        CHECK_OK(hnsw_search(b, qs + (size_t)qi * d, &o, hb, &nb, NULL, &err), &err);
        CHECK(na == nb && na == 10);
        for (int i = 0; i < na && i < nb; i++)
            CHECK(ha[i].id == hb[i].id && ha[i].dist == hb[i].dist);
    }
}

/* Build -> save -> open gives the same answers; the image is what we built. */
static void test_save_open(void)
{
    size_t n = 2000, d = 24;
    float *x = make_data(n, d, 20, 0.3);
    float *qs = make_data(15, d, 20, 0.3);
    roaring_bitmap_t *allow = roaring_bitmap_create();
    for (uint32_t i = 0; i < n; i += 3)
        roaring_bitmap_add(allow, i);
    struct { vq_type t; hs_metric m; int lists; } cases[] = {
        { VQ_FLAT, HS_METRIC_L2, 0 }, { VQ_FLAT, HS_METRIC_COSINE, 0 },
        { VQ_TQ8, HS_METRIC_IP, 0 },  { VQ_FLAT, HS_METRIC_L2, 8 },
        { VQ_TQ4, HS_METRIC_L2, 5 },
    };
    int64_t live = hs_mem_live_count();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        hnsw_params p = params_of(cases[ci].m, cases[ci].t);
        p.ivf_lists = cases[ci].lists;
        hnsw_index *a = NULL, *b = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &a, &err), &err);
        hs_buf img = { 0 };
        REQUIRE(hs_buf_append(&img, "pre", 3) == HS_OK);
        CHECK_OK(hnsw_save(a, &img, &err), &err);
        /* an image appended after 3 bytes: misaligned, opened through a copy */
        CHECK_OK(hnsw_open(img.data + 3, img.len - 3, &b, &err), &err);
        compare_results(a, b, x, n, d, qs, 15, NULL);
        compare_results(a, b, x, n, d, qs, 15, allow);
        hnsw_free(b);
        b = NULL;
        /* aligned: searched in place */
        uint8_t *al = hs_malloc_aligned(img.len - 3);
        memcpy(al, img.data + 3, img.len - 3);
        CHECK_OK(hnsw_open(al, img.len - 3, &b, &err), &err);
        compare_results(a, b, x, n, d, qs, 15, NULL);
        hnsw_info ia, ib;
        hnsw_get_info(a, &ia);
        hnsw_get_info(b, &ib);
        CHECK(ia.n == ib.n && ia.d == ib.d && ia.metric == ib.metric && ia.quant == ib.quant &&
              ia.M == ib.M && ia.ivf_lists == ib.ivf_lists && ia.memory_bytes == ib.memory_bytes);
        /* save of the opened index reproduces the image byte for byte */
        hs_buf img2 = { 0 };
        CHECK_OK(hnsw_save(b, &img2, &err), &err);
        CHECK(img2.len == img.len - 3 && memcmp(img2.data, img.data + 3, img2.len) == 0);
        hs_buf_free(&img2);
        hnsw_free(b);
        hs_free_aligned(al);
        hs_buf_free(&img);
        hnsw_free(a);
    }
    CHECK(hs_mem_live_count() == live);
    roaring_bitmap_free(allow);
    free(x);
    free(qs);
}

/* The image's checksums: version 2 also has one of its header. */
static void fix_checksum(uint8_t *p, size_t n)
{
    uint32_t ver;
    memcpy(&ver, p + 8, 4);
    if (ver == 2 && n >= 128) {
        uint64_t hh = hs_xxh64(p, 112, 0);
        memcpy(p + 112, &hh, 8);
    }
    uint64_t h = hs_xxh64(p, n - 8, 0);
    memcpy(p + n - 8, &h, 8);
}

static void try_open_and_search(const uint8_t *img, size_t len, const float *q, size_t d,
                                const float *x, size_t n, hs_status *st_out)
{
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    hs_status st = hnsw_open(img, len, &ix, &err);
    *st_out = st;
    if (st != HS_OK) {
        CHECK(ix == NULL);
        return;
    }
    hnsw_info info;
    hnsw_get_info(ix, &info);
    if (info.d == d) {  /* a valid-looking image must search without harm */
        fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
        hnsw_search_opts o = { .k = 5, .fetch = fetch_rows, .fetch_ctx = &f };
        hnsw_hit h[5];
        int nh;
        hs_error e2 = { 0 };
        hs_status ss = hnsw_search(ix, q, &o, h, &nh, NULL, &e2);
        CHECK(ss == HS_OK || ss == HS_INVALID || ss == HS_NOMEM);
    }
    hnsw_free(ix);
}

/* Every truncation and random bit flips are HS_CORRUPT; forged checksums
 * over targeted damage are caught by the structural checks. */
static void test_corrupt(void)
{
    size_t n = 300, d = 8;
    float *x = make_data(n, d, 5, 0.3);
    int64_t live = hs_mem_live_count();
    for (int variant = 0; variant < 3; variant++) {
        hnsw_params p = params_of(HS_METRIC_L2, variant == 1 ? VQ_TQ8 : VQ_FLAT);
        p.M = 4;
        if (variant == 2)
            p.ivf_lists = 4;
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
        hs_buf img = { 0 };
        CHECK_OK(hnsw_save(ix, &img, &err), &err);
        hnsw_free(ix);
        size_t len = img.len;
        uint8_t *buf = hs_malloc_aligned(len);
        int bad = 0;
        for (size_t cut = 0; cut < len; cut++) {
            memcpy(buf, img.data, cut);
            hnsw_index *t = NULL;
            hs_error e = { 0 };
            if (hnsw_open(buf, cut, &t, &e) != HS_CORRUPT || t != NULL)
                bad++;
            else if (cut == len / 2 && e.src_line == 0)
                bad++;  /* corruption records the check that fired */
        }
        CHECK(bad == 0);
        bad = 0;
        for (int i = 0; i < 1500; i++) {
            memcpy(buf, img.data, len);
            size_t at = rnd() % len;
            buf[at] ^= (uint8_t)(1u << (rnd() % 8));
            hnsw_index *t = NULL;
            hs_error e = { 0 };
            if (hnsw_open(buf, len, &t, &e) != HS_CORRUPT || t != NULL)
                bad++;
        }
        CHECK(bad == 0);
        /* forged checksums: random damage must never crash open or search */
        for (int i = 0; i < 1500; i++) {
            memcpy(buf, img.data, len);
            int flips = 1 + (int)(rnd() % 4);
            for (int f = 0; f < flips; f++) {
                size_t at = rnd() % (len - 8);
                buf[at] ^= (uint8_t)(1u << (rnd() % 8));
            }
            fix_checksum(buf, len);
            hs_status st;
            try_open_and_search(buf, len, x, d, x, n, &st);
            CHECK(st == HS_OK || st == HS_CORRUPT);
        }
        /* targeted damage with a forged checksum */
        hnsw_index *ok = NULL;
        CHECK_OK(hnsw_open(img.data, len, &ok, &err), &err);
        hnsw_free(ok);
        struct { size_t off; uint32_t val; } hits[] = {
            { 24, 0 },                 /* n = 0 */
            { 32, 9 },                 /* d changed */
            { 36, 7 },                 /* metric */
            { 44, 1 },                 /* M = 1 */
            { 64, 999 },               /* nprobe */
            { 76, 12 },                /* elem size */
            { 88, 5 },                 /* upper blocks */
            { 122, 1 },                /* reserved */
        };
        for (size_t h = 0; h < sizeof hits / sizeof hits[0]; h++) {
            memcpy(buf, img.data, len);
            memcpy(buf + hits[h].off, &hits[h].val, 4);
            fix_checksum(buf, len);
            hnsw_index *t = NULL;
            hs_error e = { 0 };
            hs_status st = hnsw_open(buf, len, &t, &e);
            if (st != HS_CORRUPT)
                fprintf(stderr, "  header damage at %zu opened (%d)\n", hits[h].off, (int)st);
            CHECK(st == HS_CORRUPT && t == NULL);
        }
        /* links: the last level-0 element's first link -> n, its count -> M0 + 1 */
        uint32_t M0 = 8, es;
        memcpy(&es, img.data + 76, 4);
        uint64_t rows;
        memcpy(&rows, img.data + 24, 8);
        /* level 0 is the last section: 64-aligned, n elements, padding to 8, the sum */
        size_t sum_off = len - 8, l0_off = sum_off - (size_t)rows * es;
        while (l0_off % 64 != 0)
            l0_off--;
        uint32_t cnt;
        memcpy(&cnt, img.data + l0_off, 4);
        if (cnt > 0 && cnt <= M0) {
            uint32_t v;
            memcpy(buf, img.data, len);
            v = (uint32_t)rows + 1000;
            memcpy(buf + l0_off + 4, &v, 4);
            fix_checksum(buf, len);
            hnsw_index *t = NULL;
            hs_error e = { 0 };
            CHECK(hnsw_open(buf, len, &t, &e) == HS_CORRUPT);
            CHECK(strstr(e.msg, "link") != NULL);
            memcpy(buf, img.data, len);
            v = M0 + 1;
            memcpy(buf + l0_off, &v, 4);
            fix_checksum(buf, len);
            hs_error e2 = { 0 };
            CHECK(hnsw_open(buf, len, &t, &e2) == HS_CORRUPT);
        } else {
            CHECK(!"could not locate level 0 in the image");
        }
        hs_free_aligned(buf);
        hs_buf_free(&img);
    }
    CHECK(hs_mem_live_count() == live);
    free(x);
}

/* Same answers and, once saved, the same bytes. */
static void check_same(const hnsw_index *a, const hnsw_index *b, const float *x, size_t n,
                       size_t d, const roaring_bitmap_t *allow, bool exact_only)
{
    fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
    for (size_t qi = 0; qi < n; qi += 5) {
        hnsw_search_opts o = { .k = 5, .allow = allow, .exact_threshold = exact_only ? 1 << 30 : 0,
                               .fetch = fetch_rows, .fetch_ctx = &f };
        hnsw_hit ha[5], hb[5];
        int na = -1, nb = -2;
        hs_error err = { 0 };
        CHECK_OK(hnsw_search(a, x + qi * d, &o, ha, &na, NULL, &err), &err);
        CHECK_OK(hnsw_search(b, x + qi * d, &o, hb, &nb, NULL, &err), &err);
        CHECK(na == nb && na > 0);
        for (int i = 0; i < na && i < nb; i++)
            CHECK(ha[i].id == hb[i].id && ha[i].dist == hb[i].dist);
    }
}

/* Version 1 images (payloads inside level 0), as the previous build wrote
 * them (tests/fuzz/seeds-fuzz_hnsw/image-v1-*: gen_seeds_hnsw.c's data and
 * parameters, kept when the format changed), still open and answer as the
 * same index built and saved now (version 2); saving the old image writes
 * the new one byte for byte (the same size where the payloads fill whole
 * 64-byte lines). */
static void test_version1_images(void)
{
    static const struct { const char *name; vq_type t; hs_metric m; int lists; } cases[] = {
        { "image-v1-flat", VQ_FLAT, HS_METRIC_L2, 2 },
        { "image-v1-tq8", VQ_TQ8, HS_METRIC_COSINE, 0 },
        { "image-v1-tq4", VQ_TQ4, HS_METRIC_L2, 0 },
    };
    size_t n = 24, d = 8;
    float x[24 * 8];
    uint64_t s = 12345;
    for (size_t i = 0; i < n * d; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) % 1000) / 100.0f - 5.0f;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    REQUIRE(slash != NULL);
    *slash = 0;   /* tests/c */
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/../fuzz/seeds-fuzz_hnsw/%s", dir, cases[ci].name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        if (!f)
            continue;
        uint8_t raw[1 << 16];
        size_t len = fread(raw, 1, sizeof raw, f);
        fclose(f);
        REQUIRE(len > 1 && len < sizeof raw);
        uint8_t *img = hs_malloc_aligned(len - 1);
        memcpy(img, raw + 1, len - 1);   /* the seed's first byte is fuzz_hnsw's mode */
        uint32_t ver;
        memcpy(&ver, img + 8, 4);
        CHECK(ver == 1);
        hnsw_index *old = NULL, *now = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_open(img, len - 1, &old, &err), &err);
        hnsw_params p;
        memset(&p, 0, sizeof p);
        p.M = 4;
        p.ef_construction = 16;
        p.n_threads = 1;
        p.quant.type = cases[ci].t;
        p.metric = cases[ci].m;
        p.ivf_lists = cases[ci].lists;
        uint32_t rerank;   /* the tq8 seed predates TQ8's default of 1 */
        memcpy(&rerank, img + 56, 4);
        p.rerank = (int)rerank;
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &now, &err), &err);
        if (old && now) {
            roaring_bitmap_t *allow = roaring_bitmap_create();
            for (uint32_t i = 0; i < n; i += 3)
                roaring_bitmap_add(allow, i);
            check_same(old, now, x, n, d, NULL, false);
            check_same(old, now, x, n, d, allow, true);
            roaring_bitmap_free(allow);
            hs_buf a = { 0 }, b = { 0 };
            CHECK_OK(hnsw_save(old, &a, &err), &err);
            CHECK_OK(hnsw_save(now, &b, &err), &err);
            if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0 || a.len != len - 1) {
                size_t at = 0;
                while (at < a.len && at < b.len && a.data[at] == b.data[at])
                    at++;
                fprintf(stderr, "  %s: %zu, %zu, %zu bytes, first difference at %zu\n",
                        cases[ci].name, len - 1, a.len, b.len, at);
            }
            CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
            memcpy(&ver, a.data + 8, 4);
            CHECK(ver == 2);
            /* written as version 1 (what local tables get), the fresh build
             * and the reopened image give the old writer's bytes exactly */
            hs_buf c1 = { 0 }, c2 = { 0 }, c3 = { 0 };
            CHECK_OK(hnsw_save_version(now, 1, &c1, &err), &err);
            CHECK_OK(hnsw_save_version(old, 1, &c2, &err), &err);
            CHECK(c1.len == len - 1 && memcmp(c1.data, img, c1.len) == 0);
            CHECK(c2.len == len - 1 && memcmp(c2.data, img, c2.len) == 0);
            /* an index opened from a version 2 image stays version 2 */
            hnsw_index *v2 = NULL;
            uint8_t *img2 = hs_malloc_aligned(b.len);
            memcpy(img2, b.data, b.len);
            CHECK_OK(hnsw_open(img2, b.len, &v2, &err), &err);
            if (v2) {
                CHECK_OK(hnsw_save_version(v2, 1, &c3, &err), &err);
                CHECK(c3.len == b.len && memcmp(c3.data, b.data, b.len) == 0);
                hnsw_free(v2);
            }
            CHECK(hnsw_save_version(now, 3, &c3, &err) == HS_INVALID);
            hs_free_aligned(img2);
            hs_buf_free(&c1);
            hs_buf_free(&c2);
            hs_buf_free(&c3);
            /* the head of a version 1 image cannot serve alone */
            hnsw_index *t = NULL;
            CHECK(hnsw_open_prefix(img, len - 1, &t, &err) == HS_UNSUPPORTED && t == NULL);
            hs_buf_free(&a);
            hs_buf_free(&b);
        }
        hnsw_free(old);
        hnsw_free(now);
        hs_free_aligned(img);
    }
}

/* hnsw_open_prefix: the header and the flat payloads (version 2 keeps them
 * right after the header) answer exact searches as the whole image does;
 * any other search is HS_UNSUPPORTED; damage in the head is HS_CORRUPT (or,
 * in the header, never a wrong answer); heads too short, IVF and version 1
 * are HS_UNSUPPORTED. */
static void test_open_prefix(void)
{
    size_t n = 600, d = 12;
    float *x = make_data(n, d, 8, 0.3);
    roaring_bitmap_t *allow = roaring_bitmap_create();
    for (uint32_t i = 0; i < n; i += 7)
        roaring_bitmap_add(allow, i);
    struct { vq_type t; hs_metric m; int lists; } cases[] = {
        { VQ_FLAT, HS_METRIC_L2, 0 }, { VQ_FLAT, HS_METRIC_COSINE, 0 },
        { VQ_FLAT, HS_METRIC_IP, 0 }, { VQ_TQ8, HS_METRIC_L2, 0 },
        { VQ_FLAT, HS_METRIC_L2, 3 },
    };
    int64_t live = hs_mem_live_count();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        hnsw_params p = params_of(cases[ci].m, cases[ci].t);
        p.ivf_lists = cases[ci].lists;
        hnsw_index *a = NULL, *h = NULL;
        hs_error err = { 0 };
        CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &a, &err), &err);
        hs_buf img = { 0 };
        CHECK_OK(hnsw_save(a, &img, &err), &err);
        bool flat = cases[ci].t == VQ_FLAT;
        size_t head = flat ? 128 + n * d * 4 : 128;
        uint8_t *buf = hs_malloc_aligned(img.len);
        memcpy(buf, img.data, img.len);
        hs_status st = hnsw_open_prefix(buf, head, &h, &err);
        if (cases[ci].lists > 0) {
            CHECK(st == HS_UNSUPPORTED && h == NULL);
        } else {
            CHECK_OK(st, &err);
            if (h) {
                check_same(a, h, x, n, d, allow, true);
                if (flat && cases[ci].m != HS_METRIC_COSINE)
                    CHECK(memcmp(hnsw_exact_vector(h, 5), x + 5 * d, d * 4) == 0);
                /* what needs the graph is refused, never answered from the head */
                fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
                hnsw_search_opts o = { .k = 5, .fetch = fetch_rows, .fetch_ctx = &f };
                hnsw_hit hh[5];
                int nh = -1;
                hs_error e2 = { 0 };
                CHECK(hnsw_search(h, x, &o, hh, &nh, NULL, &e2) == HS_UNSUPPORTED && nh == 0);
                o.allow = allow;   /* 86 of 600 rows: under the default threshold */
                CHECK_OK(hnsw_search(h, x, &o, hh, &nh, NULL, &e2), &e2);
                o.exact_threshold = 10;
                CHECK(hnsw_search(h, x, &o, hh, &nh, NULL, &e2) == HS_UNSUPPORTED);
            }
            hnsw_free(h);
            h = NULL;
            if (flat) {
                /* one byte short of the payloads */
                CHECK(hnsw_open_prefix(buf, head - 1, &h, &err) == HS_UNSUPPORTED && !h);
                /* a payload byte flipped: the payload checksum */
                buf[128 + 17 * d * 4 + 2] ^= 0x40;
                hs_error e3 = { 0 };
                CHECK(hnsw_open_prefix(buf, head, &h, &e3) == HS_CORRUPT && !h);
                buf[128 + 17 * d * 4 + 2] ^= 0x40;
            }
            /* every header byte flipped: the header checksum */
            int bad = 0;
            for (size_t at = 0; at < 128; at++) {
                buf[at] ^= 0x08;
                hs_status s2 = hnsw_open_prefix(buf, head, &h, &err);
                if ((s2 != HS_CORRUPT && s2 != HS_UNSUPPORTED) || h)
                    bad++;
                hnsw_free(h);
                h = NULL;
                buf[at] ^= 0x08;
            }
            CHECK(bad == 0);
        }
        hs_free_aligned(buf);
        hs_buf_free(&img);
        hnsw_free(a);
    }
    CHECK(hs_mem_live_count() == live);
    roaring_bitmap_free(allow);
    free(x);
}

typedef struct prog {
    int calls;
    int cancel_at;   /* cancel on this call (1-based); 0 = never */
    int64_t last_done, total;
    int monotone;
} prog;

static int on_progress(void *ctx, int64_t done, int64_t total)
{
    prog *p = ctx;
    p->calls++;
    if (done < p->last_done || done > total)
        p->monotone = 0;
    p->last_done = done;
    p->total = total;
    return p->cancel_at && p->calls >= p->cancel_at;
}

static void test_progress_cancel(void)
{
    size_t n = 5000, d = 16;
    float *x = make_data(n, d, 20, 0.3);
    int64_t live = hs_mem_live_count();
    for (int threads = 1; threads <= 3; threads += 2) {
        for (int lists = 0; lists <= 4; lists += 4) {
            hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
            p.n_threads = threads;
            p.ivf_lists = lists;
            p.ef_construction = 40;
            prog pr = { 0, 0, 0, 0, 1 };
            hnsw_index *ix = NULL;
            hs_error err = { 0 };
            CHECK_OK(hnsw_build(x, n, d, &p, on_progress, &pr, &ix, &err), &err);
            CHECK(pr.calls > 0 && pr.monotone && pr.total == (int64_t)n);
            hnsw_free(ix);
            ix = NULL;
            prog pc = { 0, 3, 0, 0, 1 };
            hs_error e2 = { 0 };
            CHECK(hnsw_build(x, n, d, &p, on_progress, &pc, &ix, &e2) == HS_CANCELLED);
            CHECK(ix == NULL && pc.calls == 3 && pc.last_done < (int64_t)n);
            CHECK(strstr(e2.msg, "cancel") != NULL);
            CHECK(hs_mem_live_count() == live);
        }
    }
    free(x);
}

static void test_ivf(void)
{
    size_t n = 4000, d = 32;
    float *x = make_data(n, d, 10, 0.6);
    float *qs = make_data(30, d, 10, 0.6);
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    p.ivf_lists = 16;
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
    hnsw_info info;
    hnsw_get_info(ix, &info);
    CHECK(info.ivf_lists == 16);
    /* all lists probed: as good as one graph */
    fetch_ctx f = { x, n, d, 0, 0, 0, 0, 0 };
    double sum = 0;
    for (int qi = 0; qi < 30; qi++) {
        hnsw_search_opts o = { .k = 10, .ef = 64, .nprobe = 16, .fetch = fetch_rows,
                               .fetch_ctx = &f };
        hnsw_hit h[10];
        ref_hit ref[10];
        int nh;
        CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h, &nh, NULL, &err), &err);
        int want = brute_force(x, n, d, HS_METRIC_L2, qs + (size_t)qi * d, 10, NULL, ref);
        CHECK(nh == want);
        sum += (double)overlap(h, nh, ref, want) / want;
    }
    fprintf(stderr, "  ivf 16 lists, nprobe 16: recall@10 %.3f\n", sum / 30);
    CHECK(sum / 30 >= 0.95);
    /* default nprobe (2 of 16): still k rows; recall reported only */
    int short_answers;
    double r = recall_of(ix, x, n, d, HS_METRIC_L2, qs, 30, 10, 64, NULL, 0, &short_answers);
    fprintf(stderr, "  ivf 16 lists, nprobe 2: recall@10 %.3f\n", r);
    CHECK(short_answers == 0);
    /* filtered with nprobe 1 and rows only in far lists: widening or fallback gives k rows */
    for (int si = 0; si < 3; si++) {
        double s = si == 0 ? 0.3 : si == 1 ? 0.05 : 0.002;
        roaring_bitmap_t *allow = roaring_bitmap_create();
        for (uint32_t i = 0; i < n; i++)
            if (urand() < s)
                roaring_bitmap_add(allow, i);
        int shorts = 0;
        double rr = 0;
        for (int qi = 0; qi < 30; qi++) {
            hnsw_search_opts o = { .k = 10, .ef = 64, .nprobe = 1, .allow = allow,
                                   .exact_threshold = 1 };
            hnsw_hit h[10];
            ref_hit ref[10];
            int nh;
            CHECK_OK(hnsw_search(ix, qs + (size_t)qi * d, &o, h, &nh, NULL, &err), &err);
            int want = brute_force(x, n, d, HS_METRIC_L2, qs + (size_t)qi * d, 10, allow, ref);
            shorts += nh != want;
            rr += want ? (double)overlap(h, nh, ref, want) / want : 1;
        }
        fprintf(stderr, "  ivf filter %.3f, nprobe 1: recall@10 %.3f\n", s, rr / 30);
        CHECK(shorts == 0);
        roaring_bitmap_free(allow);
    }
    hnsw_free(ix);
    /* more lists than rows, cosine, quantized */
    p = params_of(HS_METRIC_COSINE, VQ_TQ8);
    p.ivf_lists = 50;
    CHECK_OK(hnsw_build(x, 40, d, &p, NULL, NULL, &ix, &err), &err);
    hnsw_get_info(ix, &info);
    CHECK(info.ivf_lists == 40);
    r = recall_of(ix, x, 40, d, HS_METRIC_COSINE, qs, 10, 10, 16, NULL, 0, &short_answers);
    CHECK(short_answers == 0);
    hnsw_free(ix);
    free(x);
    free(qs);
}

/* hnsw_tq8's memory against hnswlib's n * (4d + 4 + 8M + 8) + upper levels, at
 * fashion-mnist's dimension 784. */
static void test_memory(void)
{
    size_t n = 400, d = 784;
    float *x = make_data(n, d, 10, 0.3);
    hnsw_params p = params_of(HS_METRIC_L2, VQ_TQ8);
    p.ef_construction = 40;
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
    hnsw_info info;
    hnsw_get_info(ix, &info);
    double hnswlib = (double)n * (4.0 * d + 4 + 8 * 16 + 8) + (double)n / 15 * (4 + 4 * 16);
    fprintf(stderr, "  tq8 d=784: %zu bytes, %.1f%% of hnswlib's %.0f\n", info.memory_bytes,
            100.0 * info.memory_bytes / hnswlib, hnswlib);
    CHECK(info.memory_bytes <= 0.30 * hnswlib);
    hnsw_free(ix);
    free(x);
}

static void test_bad_input(void)
{
    size_t n = 100, d = 4;
    float *x = make_data(n, d, 3, 0.3);
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    x[37 * d + 2] = NAN;
    CHECK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err) == HS_INVALID && ix == NULL);
    CHECK(strstr(err.msg, "row 37") != NULL);
    x[37 * d + 2] = 0;
    hs_error e1 = { 0 };
    p.M = 1;
    CHECK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &e1) == HS_INVALID);
    p = params_of(HS_METRIC_HAMMING, VQ_FLAT);
    hs_error e2 = { 0 };
    CHECK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &e2) == HS_INVALID);
    p = params_of(HS_METRIC_L2, VQ_FLAT);
    hs_error e3 = { 0 };
    CHECK(hnsw_build(x, 0, d, &p, NULL, NULL, &ix, &e3) == HS_INVALID);
    hs_error e4 = { 0 };
    CHECK(hnsw_build(x, n, 0, &p, NULL, NULL, &ix, &e4) == HS_INVALID);
    CHECK_OK(hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err), &err);
    hnsw_hit h[5];
    int nh;
    float q[4] = { 0, INFINITY, 0, 0 };
    hnsw_search_opts o = { .k = 5 };
    hs_error e5 = { 0 };
    CHECK(hnsw_search(ix, q, &o, h, &nh, NULL, &e5) == HS_INVALID);
    o.k = -1;
    hs_error e6 = { 0 };
    CHECK(hnsw_search(ix, x, &o, h, &nh, NULL, &e6) == HS_INVALID);
    o.k = 0;
    CHECK_OK(hnsw_search(ix, x, &o, h, &nh, NULL, &err), &err);
    CHECK(nh == 0);
    /* k > n: all n rows */
    hnsw_hit *all = malloc((n + 10) * sizeof *all);
    o.k = (int)n + 10;
    CHECK_OK(hnsw_search(ix, x, &o, all, &nh, NULL, &err), &err);
    CHECK(nh == (int)n);
    free(all);
    /* a single vector */
    hnsw_free(ix);
    CHECK_OK(hnsw_build(x, 1, d, &p, NULL, NULL, &ix, &err), &err);
    o.k = 3;
    CHECK_OK(hnsw_search(ix, x + d, &o, h, &nh, NULL, &err), &err);
    CHECK(nh == 1 && h[0].id == 0);
    hnsw_free(ix);
    hnsw_free(NULL);
    free(x);
}

/* Out of memory at every allocation of a small build and search: an error,
 * never a crash or a leak. */
static void test_oom(void)
{
    size_t n = 300, d = 8;
    float *x = make_data(n, d, 5, 0.3);
    hnsw_params p = params_of(HS_METRIC_L2, VQ_FLAT);
    p.M = 4;
    p.ivf_lists = 3;
    int64_t live = hs_mem_live_count();
    int failures = 0, successes = 0;
    for (int64_t nth = 1; nth < 400 && successes == 0; nth++) {
        hnsw_index *ix = NULL;
        hs_error err = { 0 };
        hs_mem_fail_after(nth);
        hs_status st = hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err);
        if (st == HS_OK) {
            hnsw_hit h[5];
            int nh;
            hnsw_search_opts o = { .k = 5 };
            st = hnsw_search(ix, x, &o, h, &nh, NULL, &err);
            successes += st == HS_OK;
        }
        hs_mem_fail_after(0);
        if (st != HS_OK) {
            failures++;
            CHECK(st == HS_NOMEM);
        }
        hnsw_free(ix);
        CHECK(hs_mem_live_count() == live);
    }
    CHECK(failures > 5 && successes == 1);
    free(x);
}

int main(void)
{
    HS_RUN(test_exact_search);
    HS_RUN(test_recall_flat);
    HS_RUN(test_recall_quantized);
    HS_RUN(test_filtered);
    HS_RUN(test_filtered_distances);
    HS_RUN(test_two_hop_band_default);
    HS_RUN(test_unreachable_fallback);
    HS_RUN(test_multithreaded_build);
    HS_RUN(test_multithreaded_build_lines);
    HS_RUN(test_concurrent_search);
    HS_RUN(test_deterministic);
    HS_RUN(test_save_open);
    HS_RUN(test_version1_images);
    HS_RUN(test_open_prefix);
    HS_RUN(test_corrupt);
    HS_RUN(test_progress_cancel);
    HS_RUN(test_ivf);
    HS_RUN(test_memory);
    HS_RUN(test_bad_input);
    HS_RUN(test_oom);
    return hs_test_summary();
}
