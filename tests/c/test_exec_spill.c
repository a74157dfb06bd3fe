/*
 * tests/c/test_exec_spill.c - partitioned spilling of set operations,
 * Distinct and Window (exec/spill.c, setop.c, agg.c, window.c) under a
 * memory limit small enough that they write partitions (one level or
 * more), serially and on a pool.
 *
 * Oracles, written out here: set operations and Distinct by counting each
 * row value (NULLs equal) on both sides of sorted copies
 *   UNION 1 if cl + cr > 0, INTERSECT 1 if both > 0, INTERSECT ALL
 *   min(cl, cr), EXCEPT 1 if cl > 0 and cr = 0, EXCEPT ALL max(cl - cr, 0),
 *   Distinct 1 if cl > 0;
 * row_number() OVER (PARTITION BY a ORDER BY id) as 1 + the rows of the
 * same a (NULLs one partition) with a smaller id.  Results compared as
 * multisets; every accounted byte is given back; EXPLAIN ANALYZE shows the
 * spill.
 */
#include "exec_testutil.h"

#include "base/threadpool.h"
#include "exec/exec_int.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* (a int64, s string): a in [0, range), s one of 3, NULLs at null_pct. */
static void schema2(hs_field *f)
{
    hs_field_init(f, "", HS_TYPE_STRUCT, false);
    xt_add_field(f, "a", HS_TYPE_INT64);
    xt_add_field(f, "s", HS_TYPE_STRING);
}

static xt_val *rows2(int64_t n, int64_t range, int null_pct)
{
    xt_val *r = hs_calloc((size_t)(n * 2 + 1), sizeof *r);
    for (int64_t i = 0; i < n; i++) {
        xt_val *v = r + i * 2;
        v[0].null = (int)(xt_rnd() % 100) < null_pct;
        if (!v[0].null)
            v[0].i = (int64_t)(xt_rnd() % (uint64_t)range);
        v[1].null = (int)(xt_rnd() % 100) < null_pct;
        if (!v[1].null)
            snprintf(v[1].s, sizeof v[1].s, "v%c", 'a' + (int)(xt_rnd() % 3));
    }
    return r;
}

static bool spilled(xo_op *op)
{
    hs_buf ex = {0};
    hs_error err = {0};
    bool ok = xo_explain(op, true, &ex, &err) == HS_OK && hs_buf_append_byte(&ex, 0) == HS_OK;
    CHECK(ok);
    bool s = ok && strstr((const char *)ex.data, "spilled:") != NULL;
    hs_buf_free(&ex);
    return s;
}

/* Count of row v (2 columns) in sorted rows r[0..n) from *at on. */
static int64_t count_run(const xt_val *r, int64_t n, int64_t *at, const xt_val *v)
{
    xt_ncols_for_sort = 2;
    while (*at < n && xt_row_cmp(r + *at * 2, v) < 0)
        (*at)++;
    int64_t c = 0;
    while (*at < n && xt_row_cmp(r + *at * 2, v) == 0) {
        (*at)++;
        c++;
    }
    return c;
}

/* kind -1: Distinct of l. */
static void setop_case(xo_ctx *ctx, int kind, bool all, int64_t nl, int64_t nr, int64_t range)
{
    hs_field f;
    schema2(&f);
    xt_val *l = rows2(nl, range, 5), *r = rows2(nr, range, 5);
    hs_error err = {0};
    xo_op *op, *lo = xt_values(ctx, &f, l, nl, 1 + (int64_t)(xt_rnd() % 700));
    if (kind < 0)
        CHECK_OK(xo_distinct(lo, &op, &err), &err);
    else
        CHECK_OK(xo_setop((xo_setop_kind)kind, all, lo,
                          xt_values(ctx, &f, r, nr, 1 + (int64_t)(xt_rnd() % 700)), &op, &err),
                 &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(spilled(op));
    xo_free(op);
    CHECK(atomic_load(&ctx->mem_used) == 0);

    /* oracle */
    xt_sort_rows(l, nl, 2);
    xt_sort_rows(r, nr, 2);
    xt_val *both = hs_calloc((size_t)((nl + nr) * 2 + 1), sizeof *both);
    memcpy(both, l, (size_t)nl * 2 * sizeof *both);
    memcpy(both + nl * 2, r, (size_t)nr * 2 * sizeof *both);
    xt_sort_rows(both, nl + nr, 2);
    hs_buf w = {0};
    int64_t al = 0, ar = 0;
    for (int64_t i = 0; i < nl + nr; i++) {
        const xt_val *v = both + i * 2;
        xt_ncols_for_sort = 2;
        if (i > 0 && xt_row_cmp(both + (i - 1) * 2, v) == 0)
            continue;
        int64_t cl = count_run(l, nl, &al, v), cr = count_run(r, nr, &ar, v), k = 0;
        switch (kind) {
        case -1: k = cl > 0; break;
        case XO_SET_UNION: k = cl + cr > 0; break;
        case XO_SET_INTERSECT: k = all ? (cl < cr ? cl : cr) : cl > 0 && cr > 0; break;
        case XO_SET_EXCEPT: k = all ? (cl > cr ? cl - cr : 0) : cl > 0 && cr == 0; break;
        }
        for (int64_t j = 0; j < k; j++)
            if (hs_buf_append(&w, v, 2 * sizeof *v) != HS_OK)
                abort();
    }
    int64_t n_want = (int64_t)(w.len / (2 * sizeof(xt_val)));
    xt_sort_rows(got, n_got, 2);
    bool same = n_got == n_want && xt_rows_equal(got, (xt_val *)w.data, n_want, 2);
    CHECK(same);
    if (!same) {
        fprintf(stderr, "kind %d all %d: %lld rows, want %lld\n", kind, all, (long long)n_got,
                (long long)n_want);
        xt_print_rows("got", got, n_got, 2);
        xt_print_rows("want", (xt_val *)w.data, n_want, 2);
    }
    hs_buf_free(&w);
    hs_free(both);
    hs_free(got);
    hs_free(l);
    hs_free(r);
    hs_field_clear(&f);
}

static void window_case(xo_ctx *ctx, int64_t n, int64_t range)
{
    hs_field f;
    hs_field_init(&f, "", HS_TYPE_STRUCT, false);
    xt_add_field(&f, "a", HS_TYPE_INT64);
    xt_add_field(&f, "id", HS_TYPE_INT64);
    xt_val *rows = hs_calloc((size_t)(n * 2 + 1), sizeof *rows);
    for (int64_t i = 0; i < n; i++) {
        rows[i * 2].null = xt_rnd() % 50 == 0;
        rows[i * 2].i = rows[i * 2].null ? 0 : (int64_t)(xt_rnd() % (uint64_t)range);
        rows[i * 2 + 1].i = (int64_t)((uint64_t)i * 7919 % (uint64_t)n);   /* distinct ids */
    }
    hs_error err = {0};
    xo_op *op;
    int part = 0;
    xo_sort_key key = {1, false, false};
    xo_win fn = {.fn = XO_WIN_ROW_NUMBER, .arg = -1};
    CHECK_OK(xo_window(xt_values(ctx, &f, rows, n, 1 + (int64_t)(xt_rnd() % 900)), 1, &part, 1,
                       &key, 1, &fn, &op, &err),
             &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(spilled(op));
    xo_free(op);
    CHECK(atomic_load(&ctx->mem_used) == 0);
    CHECK(n_got == n);
    xt_val *want = hs_calloc((size_t)(n * 3 + 1), sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        int64_t rn = 1;
        for (int64_t j = 0; j < n; j++)
            rn += xt_val_cmp(&rows[j * 2], &rows[i * 2]) == 0 && rows[j * 2 + 1].i < rows[i * 2 + 1].i;
        want[i * 3] = rows[i * 2];
        want[i * 3 + 1] = rows[i * 2 + 1];
        want[i * 3 + 2].i = rn;
    }
    xt_sort_rows(got, n_got, 3);
    xt_sort_rows(want, n, 3);
    CHECK(n_got == n && xt_rows_equal(got, want, n, 3));
    hs_free(want);
    hs_free(got);
    hs_free(rows);
    hs_field_clear(&f);
}

static void run_all(xo_ctx *ctx)
{
    for (int t = 0; t < 2; t++) {
        int64_t range = t ? 400 : 5000;
        setop_case(ctx, -1, false, 4000 + (int64_t)(xt_rnd() % 1000), 0, range);
        for (int kind = XO_SET_UNION; kind <= XO_SET_EXCEPT; kind++)
            for (int all = 0; all <= 1; all++) {
                if (kind == XO_SET_UNION && all)
                    continue;   /* UNION ALL holds nothing */
                setop_case(ctx, kind, all, 3000 + (int64_t)(xt_rnd() % 1000),
                           3000 + (int64_t)(xt_rnd() % 1000), range);
            }
        window_case(ctx, 3000 + (int64_t)(xt_rnd() % 500), range);
    }
}

static void test_spill_serial(void)
{
    LEAK_START();
    xo_ctx ctx = {.mem_limit = 24000};
    run_all(&ctx);
    LEAK_END();
}

static void test_spill_pooled(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(2, &pool, &err), &err);
    LEAK_START();
    xo_ctx ctx = {.mem_limit = 24000, .pool = pool, .threads = 2};
    run_all(&ctx);
    LEAK_END();
    hs_pool_destroy(pool);
}

/* An injected spill I/O failure at each of the first spill calls of a
 * UNION: HS_IO, nothing leaked, every byte given back. */
static void test_spill_io_failure(void)
{
    LEAK_START();
    hs_field f;
    schema2(&f);
    xo_ctx ctx = {.mem_limit = 24000};
    for (int k = 1; k <= 5; k++) {
        xt_val *l = rows2(3000, 5000, 5), *r = rows2(3000, 5000, 5);
        hs_error err = {0};
        xo_op *op;
        CHECK_OK(xo_setop(XO_SET_UNION, false, xt_values(&ctx, &f, l, 3000, 300),
                          xt_values(&ctx, &f, r, 3000, 300), &op, &err),
                 &err);
        xo_spill_fail_after(k);
        xt_val *got = NULL;
        int64_t n_got;
        hs_status st = xt_run(op, &got, &n_got, &err);
        xo_spill_fail_after(0);
        CHECK(st == HS_IO);
        CHECK(strstr(err.msg, "spill") != NULL);
        hs_free(got);
        xo_free(op);
        CHECK(atomic_load(&ctx.mem_used) == 0);
        hs_free(l);
        hs_free(r);
    }
    hs_field_clear(&f);
    LEAK_END();
}

/* Out of memory at sampled allocations of a spilling UNION, EXCEPT ALL,
 * Distinct and Window: HS_NOMEM or the full result (as many rows as
 * without the fault), nothing leaked, every accounted byte given back. */
static xo_op *oom_op(xo_ctx *ctx, int which, const hs_field *f, const xt_val *l, const xt_val *r,
                     int64_t n)
{
    hs_error err = {0};
    xo_op *op = NULL, *lo = xt_values(ctx, f, l, n, 128);
    hs_status st;
    if (which == 0 || which == 1) {
        st = xo_setop(which ? XO_SET_EXCEPT : XO_SET_UNION, which == 1, lo,
                      xt_values(ctx, f, r, n, 128), &op, &err);
    } else if (which == 2) {
        st = xo_distinct(lo, &op, &err);
    } else {
        int part = 0;
        xo_sort_key key = {1, false, false};
        xo_win fn = {.fn = XO_WIN_ROW_NUMBER, .arg = -1};
        st = xo_window(lo, 1, &part, 1, &key, 1, &fn, &op, &err);
    }
    CHECK(st == HS_OK);
    return op;
}

static void test_spill_oom(void)
{
    LEAK_START();
    hs_field f;
    schema2(&f);
    xt_val *l = rows2(1200, 2000, 5), *r = rows2(1200, 2000, 5);
    for (int which = 0; which < 4; which++) {
        int64_t want = -1;
        int fails = 0;
        for (int64_t k = 0;; k += 1 + k / 8) {
            xo_ctx ctx = {.mem_limit = 8000};
            xo_op *op = oom_op(&ctx, which, &f, l, r, 1200);
            hs_error err = {0};
            int64_t n = 0;
            hs_mem_fail_after(k);
            hs_status st;
            for (;;) {
                hs_batch *b;
                st = xo_next(op, &b, &err);
                if (st != HS_OK || !b)
                    break;
                n += b->n_rows;
                hs_batch_free(b);
            }
            hs_mem_fail_after(0);
            if (k == 0)
                CHECK(spilled(op));
            xo_free(op);
            CHECK(atomic_load(&ctx.mem_used) == 0);
            CHECK(st == HS_OK || st == HS_NOMEM);
            fails += st == HS_NOMEM;
            if (k == 0) {
                CHECK(st == HS_OK);
                want = n;
            } else if (st == HS_OK) {
                CHECK(n == want);
                break;
            }
        }
        CHECK(fails > 10);
    }
    hs_free(l);
    hs_free(r);
    hs_field_clear(&f);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_spill_serial);
    HS_RUN(test_spill_pooled);
    HS_RUN(test_spill_io_failure);
    HS_RUN(test_spill_oom);
    return hs_test_summary();
}
