/*
 * tests/c/test_exec_sort.c - Sort and TopK: random multi-key orders (ASC /
 * DESC, NULLS FIRST / LAST, PostgreSQL defaults) over int64, string,
 * float64 with NaN and -0, decimal and bool columns with NULLs.
 *
 * Oracle: a brute-force stable sort in this file (qsort with the input
 * position as the last tie-breaker) written from PostgreSQL's rules
 * (NaN above every number, strings as bytes, NULLS LAST for ASC and FIRST
 * for DESC by default); TopK must equal the first k rows of that order.
 */
#include "exec_testutil.h"
#include "exec/exec_int.h"

#include "base/threadpool.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

#define NC 6  /* a int64, b string, c float64, d decimal(18,2), e bool, id int64 */

static void schema6(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "a", HS_TYPE_INT64);
    xt_add_field(s, "b", HS_TYPE_STRING);
    xt_add_field(s, "c", HS_TYPE_FLOAT64);
    xt_add_field(s, "d", HS_TYPE_DECIMAL128);
    xt_add_field(s, "e", HS_TYPE_BOOL);
    xt_add_field(s, "id", HS_TYPE_INT64);
}

static xt_val *random_rows(int64_t n, int spread)
{
    xt_val *rows = hs_calloc((size_t)(n * NC), sizeof *rows);
    static const double specials[] = {NAN, -0.0, 0.0, INFINITY, -INFINITY, 1.5};
    for (int64_t r = 0; r < n; r++) {
        xt_val *v = rows + r * NC;
        for (int c = 0; c < 5; c++)
            v[c].null = xt_rnd() % 6 == 0;
        v[0].i = (int64_t)(xt_rnd() % (uint64_t)spread) - spread / 2;
        static const char *strs[] = {"", "a", "abcdefghij", "b", "\xc3\xa9", "abcdefgh", "abcdefghi", "zz"};
        snprintf(v[1].s, sizeof v[1].s, "%s%d", strs[xt_rnd() % 8], (int)(xt_rnd() % 3));
        if (xt_rnd() % 5 == 0)
            v[2].d = specials[xt_rnd() % 6];
        else
            v[2].d = (double)((int64_t)(xt_rnd() % 200) - 100) / 4;
        v[3].i = (int64_t)(xt_rnd() % 2000) - 1000;
        v[4].i = (int64_t)(xt_rnd() % 2);
        v[5].i = r;
    }
    return rows;
}

/* the oracle */
static const xo_sort_key *o_keys;
static int o_nkeys;

static int o_cmp_val(int col, const xt_val *a, const xt_val *b)
{
    switch (col) {
    case 1: {
        int r = strcmp(a->s, b->s);   /* C's strcmp compares as unsigned char */
        return r < 0 ? -1 : r > 0;
    }
    case 2: {
        double x = a->d == 0 ? 0 : a->d, y = b->d == 0 ? 0 : b->d;
        if (isnan(x) || isnan(y))
            return isnan(x) - isnan(y);
        return x < y ? -1 : x > y;
    }
    default: return a->i < b->i ? -1 : a->i > b->i;
    }
}

static int o_cmp(const void *x, const void *y)
{
    const xt_val *a = x, *b = y;
    for (int k = 0; k < o_nkeys; k++) {
        int c = o_keys[k].col;
        if (a[c].null != b[c].null) {
            bool a_first = a[c].null == o_keys[k].nulls_first;
            return a_first ? -1 : 1;
        }
        if (a[c].null)
            continue;
        int r = o_cmp_val(c, &a[c], &b[c]);
        if (r)
            return o_keys[k].desc ? -r : r;
    }
    return a[5].i < b[5].i ? -1 : a[5].i > b[5].i;   /* stable */
}

static xo_ctx case_ctx;   /* run_case's context (a pool in the parallel test) */

static void run_case(int64_t n, int spread, int n_keys, const xo_sort_key *keys, int64_t k,
                     int64_t chunk)
{
    hs_field s;
    schema6(&s);
    xo_ctx ctx = case_ctx;
    xt_val *rows = random_rows(n, spread);
    xo_op *v = xt_values(&ctx, &s, rows, n, chunk), *op;
    hs_error err = {0};
    if (k >= 0)
        CHECK_OK(xo_topk(v, n_keys, keys, k, &op, &err), &err);
    else
        CHECK_OK(xo_sort(v, n_keys, keys, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    o_keys = keys;
    o_nkeys = n_keys;
    qsort(rows, (size_t)n, sizeof(xt_val) * NC, o_cmp);
    int64_t want = k >= 0 && k < n ? k : n;
    CHECK(n_got == want);
    bool same = xt_rows_equal(got, rows, want, NC);
    CHECK(same);
    if (!same) {
        xt_print_rows("got", got, n_got, NC);
        xt_print_rows("want", rows, want, NC);
    }
    xo_free(op);
    hs_free(got);
    hs_free(rows);
    hs_field_clear(&s);
}

static void test_sort_random(void)
{
    LEAK_START();
    for (int t = 0; t < 60; t++) {
        xo_sort_key keys[3];
        int n_keys = 1 + (int)(xt_rnd() % 3);
        for (int i = 0; i < n_keys; i++) {
            keys[i].col = (int)(xt_rnd() % 5);
            keys[i].desc = xt_rnd() % 2;
            /* half the time the PostgreSQL default */
            keys[i].nulls_first = xt_rnd() % 2 ? keys[i].desc : (bool)(xt_rnd() % 2);
        }
        int64_t n = t < 5 ? t : (int64_t)(xt_rnd() % 3000);
        run_case(n, 1 + (int)(xt_rnd() % 50), n_keys, keys, -1, 1 + (int64_t)(xt_rnd() % 700));
    }
    /* more than one output batch */
    xo_sort_key k1 = {0, true, true};
    run_case(3 * XO_BATCH_ROWS + 17, 1000, 1, &k1, -1, 4000);
    LEAK_END();
}

static void test_topk_random(void)
{
    LEAK_START();
    for (int t = 0; t < 60; t++) {
        xo_sort_key keys[2];
        int n_keys = 1 + (int)(xt_rnd() % 2);
        for (int i = 0; i < n_keys; i++) {
            keys[i].col = (int)(xt_rnd() % 5);
            keys[i].desc = xt_rnd() % 2;
            keys[i].nulls_first = keys[i].desc;
        }
        int64_t n = (int64_t)(xt_rnd() % 4000);
        int64_t k = t % 7 == 0 ? 0 : (int64_t)(xt_rnd() % 300);
        if (t % 11 == 0)
            k = n + 5;
        run_case(n, 1 + (int)(xt_rnd() % 100), n_keys, keys, k, 1 + (int64_t)(xt_rnd() % 500));
    }
    LEAK_END();
}

/* Past the memory limit Sort spills sorted runs and merges them: the
 * result is still the brute-force order (stable), nothing leaks, the
 * accounting returns to 0; with many runs, merge passes run first. */
static void test_sort_spill(void)
{
    LEAK_START();
    int64_t limits[] = {100000, 30000, 400000};
    /* Sort (k = -1) and, every other case, a TopK whose k rows do not fit,
     * which spills too: runs of their first k rows, the merge cut at k;
     * both still the stable brute-force order */
    for (int t = 0; t < 24; t++) {
        xo_sort_key keys[3];
        int n_keys = 1 + (int)(xt_rnd() % 3);
        for (int i = 0; i < n_keys; i++) {
            keys[i].col = (int)(xt_rnd() % 5);
            keys[i].desc = xt_rnd() % 2;
            keys[i].nulls_first = xt_rnd() % 2 ? keys[i].desc : (bool)(xt_rnd() % 2);
        }
        case_ctx = (xo_ctx){.mem_limit = limits[(t / 2) % 3]};
        int64_t n = 5000 + (int64_t)(xt_rnd() % 20000);
        int64_t k = t % 2 == 0 ? -1 : t % 8 == 7 ? n + 3 : 1000 + (int64_t)(xt_rnd() % 8000);
        run_case(n, 1 + (int)(xt_rnd() % 200), n_keys, keys, k, 1 + (int64_t)(xt_rnd() % 3000));
    }
    case_ctx = (xo_ctx){0};
    /* EXPLAIN ANALYZE shows the runs and passes */
    hs_field s;
    schema6(&s);
    xo_ctx ctx = {.mem_limit = 30000};
    xt_val *rows = random_rows(30000, 100);
    xo_op *v = xt_values(&ctx, &s, rows, 30000, 1000), *op;
    xo_sort_key k = {0, false, false};
    hs_error err = {0};
    CHECK_OK(xo_sort(v, 1, &k, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(n_got == 30000);
    hs_buf ex = {0};
    CHECK_OK(xo_explain(op, true, &ex, &err), &err);
    CHECK(hs_buf_append_byte(&ex, 0) == HS_OK);
    CHECK(strstr((char *)ex.data, "spilled: 30000 rows") != NULL);
    CHECK(strstr((char *)ex.data, "merge passes") != NULL && !strstr((char *)ex.data, " 1 merge passes"));
    xo_free(op);
    hs_free(got);
    CHECK(atomic_load(&ctx.mem_used) == 0);
    /* a failing spill file write or read at every step: HS_IO, no leak */
    int io_fails = 0;
    for (int64_t f = 1; f < 400; f += 7) {
        xo_ctx c2 = {.mem_limit = 30000};
        v = xt_values(&c2, &s, rows, 30000, 1000);
        hs_err_clear(&err);
        CHECK_OK(xo_sort(v, 1, &k, &op, &err), &err);
        xo_spill_fail_after(f);
        hs_batch *b = NULL;
        hs_status st;
        int64_t n = 0;
        while ((st = xo_next(op, &b, &err)) == HS_OK && b) {
            n += b->n_rows;
            hs_batch_free(b);
        }
        xo_spill_fail_after(0);
        CHECK(st == HS_OK ? n == 30000 : st == HS_IO);
        io_fails += st == HS_IO;
        xo_free(op);
        CHECK(atomic_load(&c2.mem_used) == 0);
    }
    CHECK(io_fails > 10);
    /* a TopK of 10 rows stays far below what the sort needs (1.2 MB) */
    xo_ctx ctx2 = {.mem_limit = 300000};
    v = xt_values(&ctx2, &s, rows, 20000, 1000);
    hs_err_clear(&err);
    CHECK_OK(xo_topk(v, 1, &k, 10, &op, &err), &err);
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(n_got == 10);
    hs_buf_reset(&ex);
    CHECK_OK(xo_explain(op, true, &ex, &err), &err);
    CHECK(hs_buf_append_byte(&ex, 0) == HS_OK && !strstr((char *)ex.data, "spilled"));
    /* ... and one of 8000 rows spills (runs of at most 8000 rows) */
    xo_free(op);
    hs_free(got);
    v = xt_values(&ctx2, &s, rows, 30000, 1000);
    CHECK_OK(xo_topk(v, 1, &k, 8000, &op, &err), &err);
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(n_got == 8000);
    hs_buf_reset(&ex);
    CHECK_OK(xo_explain(op, true, &ex, &err), &err);
    CHECK(hs_buf_append_byte(&ex, 0) == HS_OK && strstr((char *)ex.data, "spilled:"));
    hs_buf_free(&ex);
    xo_free(op);
    CHECK(atomic_load(&ctx2.mem_used) == 0);
    hs_free(got);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

/* 64K rows or more on a pool: chunks sorted in parallel, then merged. */
static void test_sort_parallel(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(3, &pool, &err), &err);
    LEAK_START();
    case_ctx = (xo_ctx){.pool = pool, .threads = 3};
    xo_sort_key k2[2] = {{0, false, false}, {2, true, true}};
    run_case(70001, 300, 2, k2, -1, 8192);
    xo_sort_key k1 = {1, true, false};
    run_case(65536, 50, 1, &k1, -1, 5000);
    case_ctx = (xo_ctx){0};
    LEAK_END();
    hs_pool_destroy(pool);
}

int main(void)
{
    HS_RUN(test_sort_random);
    HS_RUN(test_topk_random);
    HS_RUN(test_sort_parallel);
    HS_RUN(test_sort_spill);
    return hs_test_summary();
}
