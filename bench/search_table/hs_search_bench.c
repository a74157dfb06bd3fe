/*
 * bench/search_table/hs_search_bench.c - what a filter costs a vector search
 * through the public C API (hs_table_search), without Python in the way.
 *
 *   hs_search_bench TABLE COLUMN QUERIES.f32 DIM NQ K EF RERANK FRACS COLUMNS
 *
 * TABLE is a path table with an int64 column "sel" holding a permutation of
 * 0..n-1 (bench.py's tables: "sel < m" keeps exactly m rows); QUERIES NQ x
 * DIM float32, row-major.  FRACS is a comma list of selectivities (0.1 =
 * 10%), COLUMNS a comma list of output columns ("" = all).  EF 0 and
 * RERANK 0 are the index's defaults.  For the unfiltered search and for each
 * selectivity, the median over the queries of the wall time per call, the
 * best of 3 passes, in four modes:
 *
 *   kept   the same text every query (the handle keeps its preparation)
 *   alt    two spellings in turn ("sel < m", "sel <  m"): the handle's kept
 *          preparation never applies, the process's bound-filter cache does
 *   new    a spelling no earlier call used (997 whitespace variants,
 *          cycled: more than the bound-filter cache holds), so every call
 *          parses and binds, plans and prepares: a filter's first query
 *
 * HS_BENCH_CLOCK=cpu times process CPU instead of wall time.
 * HS_BENCH_MODE=kept|alt|new times that mode alone (for a profiler);
 * HS_BENCH_PASSES=N makes it N passes instead of 3 (a longer profile).
 * One JSON line per selectivity: {"frac":..,"kept_ms":..,"alt_ms":..,
 * "new_ms":..,"none_ms":..}.  Built by bench/search_table/run_c.sh.
 */
#include "hyperstream/index.h"
#include "hyperstream/table.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* HS_BENCH_CLOCK=cpu: process CPU time instead of wall time (steadier on a
 * shared machine; every thread of the process counts). */
static double now_s(void)
{
    static int cpu = -1;
    if (cpu < 0)
        cpu = getenv("HS_BENCH_CLOCK") && strcmp(getenv("HS_BENCH_CLOCK"), "cpu") == 0;
    struct timespec ts;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct bench {
    hs_table *t;
    const char *column;
    const float *q;
    int dim, nq, k, ef, rerank;
    const char **cols;
    int n_cols;
} bench;

static void filter_text(char *buf, size_t n, const char *mode, long m, int call)
{
    if (m < 0)
        buf[0] = '\0';
    else if (strcmp(mode, "alt") == 0)
        snprintf(buf, n, call % 2 ? "sel < %ld" : "sel <  %ld", m);
    else if (strcmp(mode, "new") == 0)
        snprintf(buf, n, "sel <%*s%ld", 1 + call % 997, "", m);
    else
        snprintf(buf, n, "sel < %ld", m);
}

static int one(const bench *b, const char *filter, const float *q)
{
    hs_error err;
    memset(&err, 0, sizeof err);
    hs_scan_options sc;
    memset(&sc, 0, sizeof sc);
    sc.filter = filter[0] ? filter : NULL;
    if (b->n_cols > 0) {
        sc.columns = b->cols;
        sc.n_columns = b->n_cols;
    }
    hs_search_options so;
    memset(&so, 0, sizeof so);
    so.struct_size = sizeof so;
    so.column = b->column;
    so.query = q;
    so.dim = b->dim;
    so.k = b->k;
    so.ef_search = b->ef;
    so.rerank = b->rerank;
    struct ArrowArrayStream s;
    if (hs_table_search(b->t, &sc, &so, &s, &err) != HS_OK) {
        fprintf(stderr, "hs_search_bench: '%s': %s\n", filter, err.msg);
        return -1;
    }
    for (;;) {
        struct ArrowArray a;
        memset(&a, 0, sizeof a);
        if (s.get_next(&s, &a) != 0 || !a.release)
            break;
        a.release(&a);
    }
    s.release(&s);
    return 0;
}

/* Best of 3 medians (ms); -1 on error. */
static double run(const bench *b, const char *mode, long m)
{
    char f[1200];
    static int call;
    double *ts = malloc((size_t)b->nq * sizeof *ts), best = -1;
    for (int i = 0; i < 20 && i < b->nq; i++) {
        filter_text(f, sizeof f, mode, m, ++call);
        if (one(b, f, b->q + (size_t)i * b->dim) != 0)
            return -1;
    }
    int passes = getenv("HS_BENCH_PASSES") ? atoi(getenv("HS_BENCH_PASSES")) : 3;
    for (int p = 0; p < (passes > 0 ? passes : 3); p++) {
        for (int i = 0; i < b->nq; i++) {
            filter_text(f, sizeof f, mode, m, ++call);
            double t0 = now_s();
            if (one(b, f, b->q + (size_t)i * b->dim) != 0)
                return -1;
            ts[i] = now_s() - t0;
        }
        qsort(ts, (size_t)b->nq, sizeof *ts, cmp_d);
        double med = ts[b->nq / 2] * 1e3;
        if (best < 0 || med < best)
            best = med;
    }
    free(ts);
    return best;
}

int main(int argc, char **argv)
{
    if (argc != 11) {
        fprintf(stderr, "usage: hs_search_bench TABLE COLUMN QUERIES.f32 DIM NQ K EF RERANK "
                        "FRACS COLUMNS\n");
        return 2;
    }
    bench b = {.column = argv[2], .dim = atoi(argv[4]), .nq = atoi(argv[5]),
               .k = atoi(argv[6]), .ef = atoi(argv[7]), .rerank = atoi(argv[8])};
    size_t qbytes = (size_t)b.nq * (size_t)b.dim * sizeof(float);
    float *q = malloc(qbytes);
    FILE *fq = fopen(argv[3], "rb");
    if (!q || !fq || fread(q, 1, qbytes, fq) != qbytes) {
        fprintf(stderr, "hs_search_bench: %s: short read\n", argv[3]);
        return 2;
    }
    fclose(fq);
    b.q = q;
    static const char *cols[64];
    char *cl = strdup(argv[10]);
    for (char *s = strtok(cl, ","); s && b.n_cols < 64; s = strtok(NULL, ","))
        cols[b.n_cols++] = s;
    b.cols = cols;
    hs_error err;
    memset(&err, 0, sizeof err);
    hs_catalog *cat = NULL;
    if (hs_catalog_open_path(NULL, &cat, &err) != HS_OK ||
        hs_table_open(cat, argv[1], &b.t, &err) != HS_OK) {
        fprintf(stderr, "hs_search_bench: %s: %s\n", argv[1], err.msg);
        return 1;
    }
    /* the row count: an unfiltered scan of the id column would cost more */
    long n_rows = 0;
    {
        hs_scan_options sc;
        memset(&sc, 0, sizeof sc);
        const char *c1[] = {"sel"};
        sc.columns = c1;
        sc.n_columns = 1;
        hs_scan *s = NULL;
        struct ArrowArrayStream st;
        if (hs_scan_plan(b.t, &sc, &s, &err) != HS_OK || hs_scan_stream(s, &st, &err) != HS_OK) {
            fprintf(stderr, "hs_search_bench: scan: %s\n", err.msg);
            return 1;
        }
        for (;;) {
            struct ArrowArray a;
            memset(&a, 0, sizeof a);
            if (st.get_next(&st, &a) != 0 || !a.release)
                break;
            n_rows += a.length;
            a.release(&a);
        }
        st.release(&st);
    }
    double none = getenv("HS_BENCH_MODE") ? -1 : run(&b, "kept", -1);
    for (char *s = strtok(argv[9], ","); s; s = strtok(NULL, ",")) {
        double frac = atof(s);
        long m = (long)(n_rows * frac);
        if (m < 1)
            m = 1;
        /* HS_BENCH_MODE=kept|alt|new times only that mode (profiling) */
        const char *only = getenv("HS_BENCH_MODE");
        bool all = !only || !*only;
        double kept = all || !strcmp(only, "kept") ? run(&b, "kept", m) : -1;
        double alt = all || !strcmp(only, "alt") ? run(&b, "alt", m) : -1;
        double nw = all || !strcmp(only, "new") ? run(&b, "new", m) : -1;
        printf("{\"frac\":%g,\"rows\":%ld,\"none_ms\":%.4f,\"kept_ms\":%.4f,\"alt_ms\":%.4f,"
               "\"new_ms\":%.4f}\n", frac, n_rows, none, kept, alt, nw);
        fflush(stdout);
    }
    hs_table_close(b.t);
    hs_catalog_close(cat);
    free(cl);
    free(q);
    return 0;
}
