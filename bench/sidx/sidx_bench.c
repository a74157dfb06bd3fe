/*
 * bench/sidx/sidx_bench.c - scalar index micro-benchmark: build time and
 * size of inverted / range / auto indexes against writing the same column
 * as Parquet (zstd, as table appends write it), and lookup latency.
 *
 * Columns (N rows each, default 1M, random order, no nulls unless said):
 *   i64_1000   int64, 1000 distinct values drawn from [0, 1e9)
 *   i64_ids    int64, unique: a shuffled 0..N-1
 *   i64_rand   int64, unique-ish random 63-bit values
 *   ts_sorted  timestamp[us], ascending, ~1 ms apart, 1% nulls
 *   f64_rand   double, random in [0, 1)
 *   str_100    string, 100 distinct values of 12-20 bytes
 *   str_ids    string, unique: "user-<shuffled id>@example.com"
 *
 * Output: one line per (column, kind): build ms, index bytes, index size as
 * a share of the column's Parquet bytes, build time as a share of the
 * Parquet write time, and lookup microseconds (best of 5) for = (a present
 * value), a range holding ~1% of the rows (sidx_lookup_all of its two
 * leaves), and IN of 10 values.  Times are process CPU time, which stays
 * put on a busy machine.
 */
#include "base/mem.h"
#include "index/scalar/sidx.h"
#include "io/io.h"
#include "parquet/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: steady on a busy machine */
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t rs = 12345;
static uint64_t rnd(void)
{
    uint64_t z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static hs_column *gen(const char *name, const hs_field *f, int64_t n)
{
    hs_column *c = NULL;
    if (hs_col_create(f, n, &c, NULL) != HS_OK)
        DIE("alloc");
    int64_t pool[1000];
    for (int i = 0; i < 1000; i++)
        pool[i] = (int64_t)(rnd() % 1000000000);
    int64_t *ids = NULL;
    if (strcmp(name, "i64_ids") == 0 || strcmp(name, "str_ids") == 0) {
        ids = malloc(sizeof *ids * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            ids[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)), t = ids[i];
            ids[i] = ids[j];
            ids[j] = t;
        }
    }
    int64_t ts = 1700000000000000ll;
    for (int64_t i = 0; i < n; i++) {
        hs_status st;
        if (strcmp(name, "i64_1000") == 0) {
            st = hs_col_append_fixed(c, &pool[rnd() % 1000]);
        } else if (ids && f->type == HS_TYPE_INT64) {
            st = hs_col_append_fixed(c, &ids[i]);
        } else if (strcmp(name, "i64_rand") == 0) {
            int64_t v = (int64_t)(rnd() >> 1);
            st = hs_col_append_fixed(c, &v);
        } else if (strcmp(name, "ts_sorted") == 0) {
            ts += 500 + (int64_t)(rnd() % 1000);
            st = rnd() % 100 == 0 ? hs_col_append_null(c) : hs_col_append_fixed(c, &ts);
        } else if (strcmp(name, "f64_rand") == 0) {
            double d = (double)(rnd() >> 11) / 9007199254740992.0;
            st = hs_col_append_fixed(c, &d);
        } else if (ids) {
            char s[48];
            int len = snprintf(s, sizeof s, "user-%lld@example.com", (long long)ids[i]);
            st = hs_col_append_bytes(c, s, (size_t)len);
        } else {
            char s[32];
            uint64_t k = rnd() % 100;
            int len = snprintf(s, sizeof s, "category-%llu-%.*s", (unsigned long long)k,
                               (int)(k % 8), "xxxxxxxx");
            st = hs_col_append_bytes(c, s, (size_t)len);
        }
        if (st != HS_OK)
            DIE("append");
    }
    free(ids);
    return c;
}

static int64_t parquet_bytes(const hs_field *schema, hs_column *c, double *ms)
{
    hs_buf out = {0};
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    hs_error err = {0};
    hs_column *cols[1] = {c};
    hs_batch b = {.schema = *schema, .n_rows = c->length, .n_cols = 1, .cols = cols};
    pq_writer_options wo = {.codec = HS_CODEC_ZSTD};
    double t0 = now_ms();
    if (hs_mem_create(&out, &wf, &err) != HS_OK || pq_writer_open(wf, schema, &wo, &w, &err) ||
        pq_writer_write(w, &b, &err) || pq_writer_finish(w, &err) || hs_wfile_close(wf, &err))
        DIE("parquet: %s", err.msg);
    *ms = now_ms() - t0;
    pq_writer_free(w);
    int64_t n = (int64_t)out.len;
    hs_buf_free(&out);
    return n;
}

static double time_lookup(const sidx_index *ix, const hs_field *schema, const char *text,
                          uint64_t *card)
{
    pr_filter *flt = NULL;
    hs_error err = {0};
    if (pr_filter_parse(text, &flt, &err) || pr_filter_bind(flt, schema, &err))
        DIE("filter %s: %s", text, err.msg);
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        roaring_bitmap_t *bm = NULL;
        double t0 = now_ms();
        if (sidx_lookup(ix, flt->root, &bm, &err) != HS_OK)
            DIE("lookup: %s", err.msg);
        double t = now_ms() - t0;
        best = t < best ? t : best;
        *card = roaring_bitmap_get_cardinality(bm);
        roaring_bitmap_free(bm);
    }
    pr_filter_free(flt);
    return best * 1e3;
}

static int cmp_val(const void *a, const void *b) { return pr_val_cmp(a, b); }

/* Literal text of row i of c (int64/timestamp/double/string). */
static void lit(const hs_column *c, int64_t i, char *s, size_t n)
{
    switch (c->type) {
    case HS_TYPE_FLOAT64: snprintf(s, n, "%.17g", HS_COL_VALUES(c, double)[i]); break;
    case HS_TYPE_STRING: {
        const int32_t *o = HS_COL_OFFSETS(c);
        snprintf(s, n, "'%.*s'", o[i + 1] - o[i], (const char *)c->values.data + o[i]);
        break;
    }
    default: snprintf(s, n, "%lld", (long long)HS_COL_VALUES(c, int64_t)[i]); break;
    }
}

static void bench_column(const char *name, hs_type type, int64_t n)
{
    hs_field schema, col;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&col, "c", type, true);
    col.field_id = 1;
    col.unit = HS_UNIT_MICRO;
    if (hs_field_add_child(&schema, &col) != HS_OK)
        DIE("schema");
    const hs_field *f = &schema.children[0];
    hs_column *c = gen(name, f, n);
    double pq_ms;
    int64_t pq = parquet_bytes(&schema, c, &pq_ms);
    printf("%-10s parquet %9lld bytes, write %7.1f ms\n", name, (long long)pq, pq_ms);
    /* literals: a present value; a ~1% range from the sorted order; 10 values */
    char eq[128], a[64], in[1024], rng[256];
    int64_t row = n / 3;
    while (!hs_col_is_valid(c, row))
        row++;
    lit(c, row, a, sizeof a);
    snprintf(eq, sizeof eq, "c = %s", a);
    int k = snprintf(in, sizeof in, "c IN (");
    for (int i = 0; i < 10; i++) {
        int64_t r = (int64_t)(rnd() % (uint64_t)n);
        while (!hs_col_is_valid(c, r))
            r = (r + 1) % n;
        lit(c, r, a, sizeof a);
        k += snprintf(in + k, sizeof in - (size_t)k, "%s%s", i ? ", " : "", a);
    }
    snprintf(in + k, sizeof in - (size_t)k, ")");
    for (int kind = 0; kind < 3; kind++) {
        sidx_builder *bl = NULL;
        hs_buf out = {0};
        hs_error err = {0};
        sidx_kind chosen;
        int64_t live = hs_mem_live_count();
        double t0 = now_ms();
        if (sidx_builder_new((sidx_kind)kind, f, pq, &bl, &err) ||
            sidx_builder_add(bl, c, 0, &err) || sidx_builder_finish(bl, &out, &chosen, &err))
            DIE("build: %s", err.msg);
        sidx_builder_free(bl);
        double build_ms = now_ms() - t0;
        sidx_index *ix = NULL;
        t0 = now_ms();
        if (sidx_open(out.data, out.len, f, &ix, &err))
            DIE("open: %s", err.msg);
        double open_ms = now_ms() - t0;
        /* the ~1% range: values at 1/3 and 1/3 + 1% of a sorted sample */
        if (kind == 0) {
            int64_t m = 10000, *idx = malloc(sizeof *idx * (size_t)m);
            int64_t got = 0;
            for (int64_t i = 0; i < m; i++) {
                int64_t r = (int64_t)(rnd() % (uint64_t)n);
                if (hs_col_is_valid(c, r))
                    idx[got++] = r;
            }
            pr_val *v = malloc(sizeof *v * (size_t)got);
            for (int64_t i = 0; i < got; i++)
                pr_val_get(f, c, idx[i], &v[i]);
            qsort(v, (size_t)got, sizeof *v, cmp_val);
            int64_t lo = got / 3, hi = lo + got / 100;
            char la[64], lb[64];
            if (type == HS_TYPE_STRING) {
                snprintf(la, sizeof la, "'%.*s'", (int)v[lo].n, (const char *)v[lo].p);
                snprintf(lb, sizeof lb, "'%.*s'", (int)v[hi].n, (const char *)v[hi].p);
            } else if (type == HS_TYPE_FLOAT64) {
                snprintf(la, sizeof la, "%.17g", v[lo].f);
                snprintf(lb, sizeof lb, "%.17g", v[hi].f);
            } else {
                snprintf(la, sizeof la, "%lld", (long long)v[lo].i);
                snprintf(lb, sizeof lb, "%lld", (long long)v[hi].i);
            }
            snprintf(rng, sizeof rng, "c >= %s AND c < %s", la, lb);
            free(v);
            free(idx);
        }
        uint64_t c_eq, c_rng, c_in;
        double t_eq = time_lookup(ix, &schema, eq, &c_eq);
        /* the range is an AND of two leaves: one sidx_lookup_all */
        double t_rng;
        {
            pr_filter *flt = NULL;
            if (pr_filter_parse(rng, &flt, &err) || pr_filter_bind(flt, &schema, &err))
                DIE("filter: %s", err.msg);
            const pr_expr *both[2] = {flt->root->l, flt->root->r};
            double best = 1e30;
            for (int r = 0; r < 5; r++) {
                roaring_bitmap_t *x = NULL;
                double t1 = now_ms();
                if (sidx_lookup_all(ix, both, 2, &x, &err))
                    DIE("lookup: %s", err.msg);
                double t = now_ms() - t1;
                best = t < best ? t : best;
                c_rng = roaring_bitmap_get_cardinality(x);
                roaring_bitmap_free(x);
            }
            pr_filter_free(flt);
            t_rng = best * 1e3;
        }
        double t_in = time_lookup(ix, &schema, in, &c_in);
        printf("  %-8s -> %-8s build %7.1f ms (%5.1f%% of parquet write)  %9zu bytes = %6.1f%% "
               "of parquet  open %.2f ms  eq %.0f us (%llu)  range %.0f us (%llu)  in10 %.0f us "
               "(%llu)\n", sidx_kind_name((sidx_kind)kind), sidx_kind_name(chosen), build_ms,
               100.0 * build_ms / pq_ms, out.len, 100.0 * (double)out.len / (double)pq, open_ms,
               t_eq, (unsigned long long)c_eq, t_rng, (unsigned long long)c_rng, t_in,
               (unsigned long long)c_in);
        sidx_close(ix);
        hs_buf_free(&out);
        if (hs_mem_live_count() != live)
            DIE("leak");
    }
    hs_col_free(c);
    hs_field_clear(&schema);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 1000000;
    bench_column("i64_1000", HS_TYPE_INT64, n);
    bench_column("i64_ids", HS_TYPE_INT64, n);
    bench_column("i64_rand", HS_TYPE_INT64, n);
    bench_column("ts_sorted", HS_TYPE_TIMESTAMP, n);
    bench_column("f64_rand", HS_TYPE_FLOAT64, n);
    bench_column("str_100", HS_TYPE_STRING, n);
    bench_column("str_ids", HS_TYPE_STRING, n);
    return 0;
}
