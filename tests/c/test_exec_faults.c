/*
 * tests/c/test_exec_faults.c - out-of-memory at every allocation of an
 * operator tree's life (construction, every xo_next, EXPLAIN, free):
 * Values -> Filter -> Project -> HashAggregate -> Sort, a HashJoin with a
 * residual, SetOp, Distinct, TopK and Window; an aggregate and a RIGHT join
 * again on a pool of two threads (the parallel paths); an aggregate and a
 * sort under a tiny memory limit (their spill paths); DISTINCT aggregates
 * (a Distinct with packed keys below them), serial and on a pool.  Each run either succeeds
 * with the result of the fault-free run or fails with HS_NOMEM; nothing
 * leaks (hs_mem_live_count) and nothing crashes (ASan build).
 *
 * Oracle: the fault-free run of the same tree (whose operators the other
 * test_exec_* files check against brute force); here only the failure
 * paths are under test.
 */
#include "exec_testutil.h"

#include "expr/expr.h"

static void schema3(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "a", HS_TYPE_INT64);
    xt_add_field(s, "b", HS_TYPE_STRING);
    xt_add_field(s, "c", HS_TYPE_FLOAT64);
}

static xt_val rows[300 * 3];

static void init_rows(void)
{
    for (int r = 0; r < 300; r++) {
        rows[r * 3].null = r % 11 == 0;
        rows[r * 3].i = r % 17;
        rows[r * 3 + 1].null = r % 7 == 0;
        snprintf(rows[r * 3 + 1].s, sizeof rows[r * 3 + 1].s, "s%d", r % 5);
        rows[r * 3 + 2].d = r * 0.25;
    }
}

/* Builds tree `which` without aborting on allocation failures. */
static hs_status build(int which, xo_ctx *ctx, const hs_field *s, xo_op **out, hs_error *err)
{
    *out = NULL;
    int nb = 3;
    hs_batch *bs[2][3] = {{NULL}};
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < nb; i++) {
            hs_status st = hs_batch_create(s, 100, &bs[side][i], err);
            for (int r = i * 100; st == HS_OK && r < i * 100 + 100; r++)
                for (int c = 0; c < 3 && st == HS_OK; c++) {
                    const xt_val *v = &rows[r * 3 + c];
                    if (v->null)
                        st = hs_col_append_null(bs[side][i]->cols[c]);
                    else if (c == 0)
                        st = hs_col_append_fixed(bs[side][i]->cols[c], &v->i);
                    else if (c == 1)
                        st = hs_col_append_bytes(bs[side][i]->cols[c], v->s, strlen(v->s));
                    else
                        st = hs_col_append_fixed(bs[side][i]->cols[c], &v->d);
                }
            if (st != HS_OK) {
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 3; b++)
                        hs_batch_free(bs[a][b]);
                return HS_NOMEM;
            }
            bs[side][i]->n_rows = 100;
        }
    xo_op *l, *r = NULL, *op;
    hs_status st = xo_values(ctx, s, nb, bs[0], &l, err);
    if (st != HS_OK) {
        for (int b = 0; b < 3; b++)
            hs_batch_free(bs[1][b]);
        return st;
    }
    st = xo_values(ctx, s, nb, bs[1], &r, err);
    if (st != HS_OK) {
        xo_free(l);
        return st;
    }
    ex_expr *e = NULL, *p[2] = {NULL, NULL};
    switch (which) {
    case 0: case 4: {   /* 4: the same on a pool (ctx from the caller) */
        xo_free(r);
        st = ex_parse_filter("a > 2 OR b = 's1'", &l->schema, &e, err);
        if (st != HS_OK) { xo_free(l); return st; }
        HS_TRY(xo_filter(l, e, &op, err));
        st = ex_parse_scalar("a % 3", &op->schema, &p[0], err);
        if (st == HS_OK)
            st = ex_parse_scalar("b || 'x'", &op->schema, &p[1], err);
        if (st != HS_OK) { ex_free(p[0]); xo_free(op); return st; }
        const char *names[2] = {"k", "bx"};
        HS_TRY(xo_project(op, 2, p, names, &op, err));
        xo_agg aggs[4] = {{.fn = XO_AGG_COUNT_STAR, .sep_col = -1},
                          {.fn = XO_AGG_STRING_AGG, .arg = 1, .sep = ",", .sep_col = -1},
                          {.fn = XO_AGG_MIN, .arg = 1, .distinct = true, .sep_col = -1},
                          {.fn = XO_AGG_ARRAY_AGG, .arg = 1, .sep_col = -1}};
        if (which == 4) {   /* mergeable aggregates only: the parallel aggregation */
            aggs[1] = (xo_agg){.fn = XO_AGG_MAX, .arg = 1, .sep_col = -1};
            aggs[2].distinct = false;
        }
        HS_TRY(xo_hashagg(op, 1, which == 4 ? 3 : 4, aggs, &op, err));
        xo_sort_key k = {0, true, true};
        return xo_sort(op, 1, &k, out, err);
    }
    case 1: case 5: {   /* 5: a RIGHT join on a pool (parallel probes) */
        int lk = 0, rk = 0;
        HS_TRY(xo_hashjoin(l, r, which == 5 ? XO_JOIN_RIGHT : XO_JOIN_FULL, 1, &lk, &rk, NULL, &op, err));
        st = ex_parse_filter("a <> 3 AND c < 60", xo_join_input_schema(op), &e, err);
        if (st == HS_OK)
            st = xo_join_set_residual(op, e, err);
        if (st != HS_OK) { xo_free(op); return st; }
        *out = op;
        return HS_OK;
    }
    case 6: {   /* under a tiny memory limit (ctx from the caller): both spill */
        xo_free(r);
        xo_agg aggs[3] = {{.fn = XO_AGG_COUNT_STAR, .sep_col = -1},
                          {.fn = XO_AGG_MAX, .arg = 2, .sep_col = -1},
                          {.fn = XO_AGG_MIN, .arg = 1, .sep_col = -1}};
        HS_TRY(xo_hashagg(l, 2, 3, aggs, &op, err));
        xo_sort_key k = {3, true, true};
        return xo_sort(op, 1, &k, out, err);
    }
    case 8: case 9: {   /* DISTINCT aggregates only: Distinct(b, a) with packed keys; 9 on a pool */
        xo_free(r);
        xo_agg aggs[2] = {{.fn = XO_AGG_COUNT, .arg = 0, .distinct = true, .sep_col = -1},
                          {.fn = XO_AGG_MIN, .arg = 0, .distinct = true, .sep_col = -1}};
        ex_expr *p[2] = {NULL, NULL};
        st = ex_parse_scalar("b", &l->schema, &p[0], err);
        if (st == HS_OK)
            st = ex_parse_scalar("a", &l->schema, &p[1], err);
        if (st != HS_OK) { ex_free(p[0]); xo_free(l); return st; }
        const char *names[2] = {"b", "a"};
        HS_TRY(xo_project(l, 2, p, names, &op, err));
        HS_TRY(xo_hashagg(op, 1, 2, aggs, &op, err));
        xo_sort_key k = {0, true, true};
        return xo_sort(op, 1, &k, out, err);
    }
    case 7: {
        xo_free(r);
        xo_sort_key k[2] = {{2, true, true}, {1, false, false}};
        return xo_sort(l, 2, k, out, err);
    }
    case 2:
        HS_TRY(xo_setop(XO_SET_INTERSECT, true, l, r, &op, err));
        return xo_distinct(op, out, err);
    default: {
        xo_free(r);
        xo_sort_key k = {2, true, false};
        HS_TRY(xo_topk(l, 1, &k, 50, &op, err));
        int part = 0;
        xo_win w[2] = {{XO_WIN_RANK}, {XO_WIN_SUM, 2}};
        return xo_window(op, 1, &part, 1, &k, 2, w, out, err);
    }
    }
}

static hs_status run(xo_op *op, int64_t *n_rows, hs_buf *text, hs_error *err)
{
    *n_rows = 0;
    for (;;) {
        hs_batch *b;
        HS_TRY(xo_next(op, &b, err));
        if (!b)
            break;
        *n_rows += b->n_rows;
        hs_batch_free(b);
    }
    return xo_explain(op, false, text, err);
}

static void test_oom_everywhere(void)
{
    init_rows();
    hs_field s;
    schema3(&s);
    hs_pool *pool;
    hs_error perr = {0};
    CHECK_OK(hs_pool_create(2, &pool, &perr), &perr);
    for (int which = 0; which < 10; which++) {
        /* the fault-free run */
        xo_ctx ctx = {0};
        if (which == 4 || which == 5 || which == 9) {
            ctx.pool = pool;
            ctx.threads = 2;
        }
        if (which >= 6)
            ctx.mem_limit = which == 6 ? 14000 : which == 7 ? 8000 : (int64_t)1 << 30;
        hs_error err = {0};
        xo_op *op;
        CHECK_OK(build(which, &ctx, &s, &op, &err), &err);
        int64_t want;
        hs_buf want_text = {0};
        CHECK_OK(run(op, &want, &want_text, &err), &err);
        if (which == 6 || which == 7) {   /* tree 6: the aggregate and the sort both spilled */
            const char *sp = strstr(hs_buf_cstr(&want_text), "spilled: ");
            CHECK(sp != NULL && (which == 7 || strstr(sp + 1, "spilled: ") != NULL));
        }
        xo_free(op);
        int failures = 0, successes = 0;
        for (int64_t k = 1; k < 20000; k++) {
            int64_t live0 = hs_mem_live_count();
            hs_mem_fail_after(k);
            hs_error e2 = {0};
            xo_op *o = NULL;
            int64_t got = -1;
            hs_buf text = {0};
            hs_status st = build(which, &ctx, &s, &o, &e2);
            if (st == HS_OK)
                st = run(o, &got, &text, &e2);
            xo_free(o);
            hs_mem_fail_after(0);
            bool text_same = st != HS_OK || strcmp(hs_buf_cstr(&text), hs_buf_cstr(&want_text)) == 0;
            if (!text_same)
                fprintf(stderr, "tree %d, failing allocation %lld: EXPLAIN\n%s\ninstead of\n%s\n", which,
                        (long long)k, hs_buf_cstr(&text), hs_buf_cstr(&want_text));
            hs_buf_free(&text);
            CHECK(st == HS_OK || st == HS_NOMEM);
            if (st != HS_OK && st != HS_NOMEM)
                fprintf(stderr, "tree %d, failing allocation %lld: %d %s\n", which, (long long)k, st,
                        e2.msg);
            CHECK(hs_mem_live_count() == live0);
            CHECK(atomic_load(&ctx.mem_used) == 0);
            if (st == HS_OK) {
                CHECK(got == want);
                CHECK(text_same);
                if (++successes >= 3)
                    break;   /* three in a row: the fault point is past the end */
            } else {
                failures++;
                successes = 0;
            }
        }
        CHECK(failures > 20);
        hs_buf_free(&want_text);
    }
    hs_field_clear(&s);
    hs_pool_destroy(pool);
}

int main(void)
{
    HS_RUN(test_oom_everywhere);
    return hs_test_summary();
}
