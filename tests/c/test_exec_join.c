/*
 * tests/c/test_exec_join.c - HashJoin and NestedLoopJoin, every kind
 * (INNER, LEFT, RIGHT, FULL, SEMI, ANTI, null-aware ANTI), one or two keys
 * of different integer widths and strings, NULL keys, residual conditions,
 * cross joins with more pairs than one batch.
 *
 * Oracle: a brute-force nested loop over the same rows in this file, with
 * SQL's rules written out (a pair matches when every key is non-null and
 * equal and the residual is TRUE; outer joins add unmatched rows padded
 * with NULLs; NOT IN is false/unknown as soon as the right side holds a
 * NULL); results compared as multisets.
 *
 * Spilling (grace hash join): the same random cases under a memory limit
 * small enough that the join partitions both sides to files (one level
 * or more), checked against the same oracle, with every accounted byte
 * given back; one key shared by every row fails cleanly after the last
 * level; an injected spill I/O failure fails cleanly.
 *
 * A right child with a row bound (a filtered scan's) that takes runtime
 * filters: the right-first read ahead and the filters from a left side
 * read ahead, checked against the same oracle (the filters, checked to
 * keep every left key, are then dropped).
 */
#include "exec_testutil.h"

#include "base/threadpool.h"
#include "exec/exec_int.h"
#include "expr/expr.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)
#define APPEND(...)                                  \
    do {                                             \
        if (hs_buf_append(__VA_ARGS__) != HS_OK)     \
            abort();                                 \
    } while (0)

/* left: a int64, s string, lv int64;  right: b int32, t string, rv float64 */
static void schemas(hs_field *l, hs_field *r)
{
    hs_field_init(l, "", HS_TYPE_STRUCT, false);
    xt_add_field(l, "a", HS_TYPE_INT64);
    xt_add_field(l, "s", HS_TYPE_STRING);
    xt_add_field(l, "lv", HS_TYPE_INT64);
    hs_field_init(r, "", HS_TYPE_STRUCT, false);
    xt_add_field(r, "b", HS_TYPE_INT32);
    xt_add_field(r, "t", HS_TYPE_STRING);
    xt_add_field(r, "rv", HS_TYPE_FLOAT64);
}

static int64_t key_range = 12;   /* keys a are 0 .. key_range - 1 */

static xt_val *random_rows(int64_t n, bool right, int null_pct)
{
    xt_val *rows = hs_calloc((size_t)(n * 3 + 1), sizeof *rows);
    for (int64_t r = 0; r < n; r++) {
        xt_val *v = rows + r * 3;
        for (int c = 0; c < 3; c++)
            v[c].null = (int)(xt_rnd() % 100) < null_pct;
        v[0].i = (int64_t)(xt_rnd() % (uint64_t)key_range);
        snprintf(v[1].s, sizeof v[1].s, "%c", 'p' + (int)(xt_rnd() % 3));
        if (right)
            v[2].d = (double)(xt_rnd() % 100);
        else
            v[2].i = (int64_t)(xt_rnd() % 100);
    }
    return rows;
}

static bool pair_matches(const xt_val *l, const xt_val *r, int n_keys, bool residual)
{
    if (l[0].null || r[0].null || l[0].i != r[0].i)
        return false;
    if (n_keys > 1 && (l[1].null || r[1].null || strcmp(l[1].s, r[1].s) != 0))
        return false;
    if (residual && (l[2].null || r[2].null || !((double)l[2].i < r[2].d)))
        return false;
    return true;
}

static xo_ctx case_ctx;   /* run_case's context (a pool in the parallel test) */
static int cases_spilled; /* run_case calls whose join spilled */

/* test_hashjoin_bounded: the right child states a bound on its rows (as a
 * filtered scan does) and takes runtime filters, each checked here to keep
 * every non-null left key (no false negatives) and then dropped. */
static bool case_bounded;
static int64_t bound_rows;
static const xt_val *filter_left;   /* the left rows (3 columns) */
static int64_t filter_nl;
static int filters_taken, filters_missed;

static int64_t bounded_max_rows(const xo_op *op)
{
    (void)op;
    return bound_rows;
}

static bool checking_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    (void)op;
    filters_taken++;
    for (int64_t i = 0; col == 0 && i < filter_nl; i++) {
        const xt_val *v = filter_left + i * 3;
        filters_missed += !v[0].null && !hs_keyfilter_may_contain(kf, v[0].i);
    }
    hs_keyfilter_free(kf);
    return true;
}

static void run_case(xo_join_kind kind, int64_t nl, int64_t nr, int n_keys, bool residual,
                     int null_pct)
{
    hs_field ls, rs;
    schemas(&ls, &rs);
    xo_ctx ctx = case_ctx;
    xt_val *lrows = random_rows(nl, false, null_pct), *rrows = random_rows(nr, true, null_pct);
    xo_op *l = xt_values(&ctx, &ls, lrows, nl, 1 + (int64_t)(xt_rnd() % 200));
    xo_op *r = xt_values(&ctx, &rs, rrows, nr, 1 + (int64_t)(xt_rnd() % 200));
    if (case_bounded) {
        /* -1: unknown (INNER then reads the left side ahead first) */
        bound_rows = xt_rnd() % 4 == 0 ? -1 : nr + (int64_t)(xt_rnd() % 3) * nr;
        r->exact_rows = NULL;
        r->max_rows = bounded_max_rows;
        r->push_keyfilter = checking_push_keyfilter;
        filter_left = lrows;
        filter_nl = nl;
    }
    hs_error err = {0};
    ex_expr *res = NULL;
    hs_field cat;
    CHECK_OK(xo_schema_concat(&l->schema, &r->schema, &cat, &err), &err);
    /* the residual is bound against the caller's concatenated schema, or
     * (every other case) against the join's own and set afterwards */
    bool late = xt_rnd() % 2;
    if (residual && !late)
        CHECK_OK(ex_parse_filter("lv < rv", &cat, &res, &err), &err);
    int lk[2] = {0, 1}, rk[2] = {0, 1};
    xo_op *op;
    CHECK_OK(xo_hashjoin(l, r, kind, n_keys, lk, rk, res, &op, &err), &err);
    CHECK(hs_field_equals(xo_join_input_schema(op), &cat, true, true));
    if (residual && late) {
        CHECK_OK(ex_parse_filter("lv < rv", xo_join_input_schema(op), &res, &err), &err);
        CHECK_OK(xo_join_set_residual(op, res, &err), &err);
    }
    bool wide = kind <= XO_JOIN_FULL;
    int nc = wide ? 6 : 3;
    CHECK(op->schema.n_children == nc);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    if (ctx.mem_limit > 0) {
        hs_buf ex = {0};
        CHECK_OK(xo_explain(op, true, &ex, &err), &err);
        CHECK_OK(hs_buf_append_byte(&ex, 0), &err);
        cases_spilled += strstr((const char *)ex.data, "spilled:") != NULL;
        hs_buf_free(&ex);
    }

    /* brute force */
    hs_buf w = {0};
    uint8_t *rmatched = hs_calloc((size_t)(nr + 1), 1);
    bool right_null = false;
    for (int64_t j = 0; j < nr; j++)
        right_null = right_null || rrows[j * 3].null;
    xt_val nulls[3] = {{.null = true}, {.null = true}, {.null = true}};
    for (int64_t i = 0; i < nl; i++) {
        const xt_val *lr = lrows + i * 3;
        bool matched = false;
        for (int64_t j = 0; j < nr; j++) {
            const xt_val *rr = rrows + j * 3;
            if (!pair_matches(lr, rr, n_keys, residual))
                continue;
            matched = true;
            rmatched[j] = 1;
            if (wide) {
                APPEND(&w, lr, 3 * sizeof *lr);
                APPEND(&w, rr, 3 * sizeof *rr);
            }
        }
        bool emit_left = false;
        switch (kind) {
        case XO_JOIN_LEFT: case XO_JOIN_FULL:
            if (!matched) {
                APPEND(&w, lr, 3 * sizeof *lr);
                APPEND(&w, nulls, sizeof nulls);
            }
            break;
        case XO_JOIN_SEMI: emit_left = matched; break;
        case XO_JOIN_ANTI: emit_left = !matched; break;
        case XO_JOIN_ANTI_NULL_AWARE:
            emit_left = nr == 0 || (!lr[0].null && !right_null && !matched);
            break;
        default: break;
        }
        if (emit_left)
            APPEND(&w, lr, 3 * sizeof *lr);
    }
    if (kind == XO_JOIN_RIGHT || kind == XO_JOIN_FULL)
        for (int64_t j = 0; j < nr; j++)
            if (!rmatched[j]) {
                APPEND(&w, nulls, sizeof nulls);
                APPEND(&w, rrows + j * 3, 3 * sizeof(xt_val));
            }
    xt_val *want = (xt_val *)w.data;
    int64_t n_want = (int64_t)(w.len / (sizeof(xt_val) * (size_t)nc));
    CHECK(n_got == n_want);
    xt_sort_rows(got, n_got, nc);
    if (want)
        xt_sort_rows(want, n_want, nc);
    bool same = n_got == n_want && xt_rows_equal(got, want, n_want, nc);
    CHECK(same);
    if (!same) {
        fprintf(stderr, "kind %d nl %lld nr %lld keys %d residual %d\n", (int)kind, (long long)nl,
                (long long)nr, n_keys, residual);
        xt_print_rows("got", got, n_got, nc);
        xt_print_rows("want", want, n_want, nc);
    }
    hs_buf_free(&w);
    hs_free(rmatched);
    xo_free(op);
    CHECK(atomic_load(&ctx.mem_used) == 0);
    hs_free(got);
    hs_free(lrows);
    hs_free(rrows);
    hs_field_clear(&cat);
    hs_field_clear(&ls);
    hs_field_clear(&rs);
}

static void hashjoin_random(void)
{
    const int64_t sizes[] = {0, 1, 7, 60, 400};
    for (int kind = XO_JOIN_INNER; kind <= XO_JOIN_ANTI; kind++)
        for (int t = 0; t < 14; t++) {
            int64_t nl = sizes[xt_rnd() % 5], nr = sizes[xt_rnd() % 5];
            run_case((xo_join_kind)kind, nl, nr, 1 + t % 2, t % 3 == 0, t % 4 == 0 ? 0 : 15);
        }
    for (int t = 0; t < 20; t++)
        run_case(XO_JOIN_ANTI_NULL_AWARE, sizes[xt_rnd() % 5], sizes[xt_rnd() % 5], 1, false,
                 t % 2 ? 0 : 3);
}

static void test_hashjoin_random(void)
{
    LEAK_START();
    case_ctx = (xo_ctx){0};
    hashjoin_random();
    LEAK_END();
}

/* The same on a pool of 3 threads: left batches are probed in parallel;
 * also a large probe side so that many windows of batches run. */
static void test_hashjoin_parallel(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(3, &pool, &err), &err);
    LEAK_START();
    case_ctx = (xo_ctx){.pool = pool, .threads = 3};
    hashjoin_random();
    for (int kind = XO_JOIN_INNER; kind <= XO_JOIN_ANTI_NULL_AWARE; kind++)
        run_case((xo_join_kind)kind, 3000, 200, kind == XO_JOIN_ANTI_NULL_AWARE ? 1 : 2,
                 kind == XO_JOIN_ANTI_NULL_AWARE ? false : kind % 2 == 0, 5);
    case_ctx = (xo_ctx){0};
    LEAK_END();
    hs_pool_destroy(pool);
}

/* Nested loop joins: the condition is the key equality plus residual, written
 * as one expression; must equal the hash join's result by the same oracle.
 * Also a cross join whose pairs span several batches. */
static void test_nljoin(void)
{
    LEAK_START();
    hs_field ls, rs;
    schemas(&ls, &rs);
    for (int kind = XO_JOIN_INNER; kind <= XO_JOIN_ANTI; kind++) {
        xo_ctx ctx = {0};
        int64_t nl = 150, nr = 90;
        xt_val *lrows = random_rows(nl, false, 10), *rrows = random_rows(nr, true, 10);
        xo_op *l = xt_values(&ctx, &ls, lrows, nl, 64), *r = xt_values(&ctx, &rs, rrows, nr, 50);
        hs_field cat;
        hs_error err = {0};
        CHECK_OK(xo_schema_concat(&l->schema, &r->schema, &cat, &err), &err);
        ex_expr *cond;
        CHECK_OK(ex_parse_filter("a = b AND lv < rv", &cat, &cond, &err), &err);
        xo_op *op;
        CHECK_OK(xo_nljoin(l, r, (xo_join_kind)kind, cond, &op, &err), &err);
        CHECK(strcmp(op->name, "NestedLoopJoin") == 0);
        xt_val *got;
        int64_t n_got;
        CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
        int64_t want = 0, lm = 0;
        uint8_t rm[90] = {0};
        for (int64_t i = 0; i < nl; i++) {
            bool m = false;
            for (int64_t j = 0; j < nr; j++)
                if (pair_matches(lrows + i * 3, rrows + j * 3, 1, true)) {
                    want++;
                    m = true;
                    rm[j] = 1;
                }
            lm += m;
        }
        int64_t rum = 0;
        for (int64_t j = 0; j < nr; j++)
            rum += !rm[j];
        int64_t expect = kind == XO_JOIN_INNER  ? want
                         : kind == XO_JOIN_LEFT ? want + (nl - lm)
                         : kind == XO_JOIN_RIGHT ? want + rum
                         : kind == XO_JOIN_FULL  ? want + (nl - lm) + rum
                         : kind == XO_JOIN_SEMI  ? lm
                                                 : nl - lm;
        CHECK(n_got == expect);
        xo_free(op);
        hs_free(got);
        hs_free(lrows);
        hs_free(rrows);
        hs_field_clear(&cat);
    }
    /* cross join: 200 x 100 = 20000 rows, each pair once */
    xo_ctx ctx = {0};
    xt_val *lrows = random_rows(200, false, 0), *rrows = random_rows(100, true, 0);
    for (int i = 0; i < 200; i++)
        lrows[i * 3 + 2].i = i;
    for (int j = 0; j < 100; j++)
        rrows[j * 3 + 2].d = j;
    xo_op *l = xt_values(&ctx, &ls, lrows, 200, 33), *r = xt_values(&ctx, &rs, rrows, 100, 7), *op;
    hs_error err = {0};
    CHECK_OK(xo_nljoin(l, r, XO_JOIN_INNER, NULL, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(n_got == 20000);
    uint8_t *seen = hs_calloc(20000, 1);
    bool once = true;
    for (int64_t k = 0; k < n_got; k++) {
        int64_t id = got[k * 6 + 2].i * 100 + (int64_t)got[k * 6 + 5].d;
        once = once && id >= 0 && id < 20000 && !seen[id];
        if (id >= 0 && id < 20000)
            seen[id] = 1;
    }
    CHECK(once);
    CHECK(op->batches_out >= 3);
    hs_free(seen);
    xo_free(op);
    hs_free(got);
    hs_free(lrows);
    hs_free(rrows);
    hs_field_clear(&ls);
    hs_field_clear(&rs);
    LEAK_END();
}

static void test_join_errors(void)
{
    LEAK_START();
    hs_field ls, rs;
    schemas(&ls, &rs);
    xo_ctx ctx = {0};
    hs_error err = {0};
    xo_op *l = xt_values(&ctx, &ls, NULL, 0, 1), *r = xt_values(&ctx, &rs, NULL, 0, 1), *op;
    int lk = 1, rk = 2;   /* string = double */
    CHECK(xo_hashjoin(l, r, XO_JOIN_INNER, 1, &lk, &rk, NULL, &op, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "string with double") != NULL);
    /* memory limit on the build side (the left side as large as the right
     * one, so that the right one is built: an inner join builds the
     * smaller side): every row has one key, so the partitions never get
     * smaller, and after the last level of spilling the join fails */
    xo_ctx small = {.mem_limit = 20000};
    key_range = 1;
    xt_val *rows = random_rows(3000, true, 0), *lrows = random_rows(3000, false, 0);
    key_range = 12;
    l = xt_values(&small, &ls, lrows, 3000, 100);
    r = xt_values(&small, &rs, rows, 3000, 100);
    lk = 0;
    rk = 0;
    hs_err_clear(&err);
    CHECK_OK(xo_hashjoin(l, r, XO_JOIN_INNER, 1, &lk, &rk, NULL, &op, &err), &err);
    hs_batch *b;
    CHECK(xo_next(op, &b, &err) == HS_NOMEM);
    CHECK(strstr(err.msg, "HashJoin") != NULL);
    CHECK(strstr(err.msg, "levels of spilling") != NULL);
    xo_free(op);
    CHECK(atomic_load(&small.mem_used) == 0);
    /* a nested loop (no key) cannot spill: out of memory */
    l = xt_values(&small, &ls, lrows, 3000, 100);
    r = xt_values(&small, &rs, rows, 3000, 100);
    hs_err_clear(&err);
    CHECK_OK(xo_nljoin(l, r, XO_JOIN_INNER, NULL, &op, &err), &err);
    CHECK(xo_next(op, &b, &err) == HS_NOMEM);
    xo_free(op);
    CHECK(atomic_load(&small.mem_used) == 0);
    /* an injected spill I/O failure at each of the first few spill calls */
    for (int k = 1; k <= 6; k++) {
        key_range = 400;
        xt_val *r2 = random_rows(3000, true, 5), *l2 = random_rows(3000, false, 5);
        key_range = 12;
        l = xt_values(&small, &ls, l2, 3000, 100);
        r = xt_values(&small, &rs, r2, 3000, 100);
        hs_err_clear(&err);
        CHECK_OK(xo_hashjoin(l, r, XO_JOIN_FULL, 1, &lk, &rk, NULL, &op, &err), &err);
        xo_spill_fail_after(k);
        hs_status st = HS_OK;
        for (;;) {
            st = xo_next(op, &b, &err);
            if (st != HS_OK || !b)
                break;
            hs_batch_free(b);
        }
        xo_spill_fail_after(0);
        CHECK(st == HS_IO);
        CHECK(strstr(err.msg, "spill") != NULL);
        xo_free(op);
        CHECK(atomic_load(&small.mem_used) == 0);
        hs_free(r2);
        hs_free(l2);
    }
    hs_free(rows);
    hs_free(lrows);
    hs_field_clear(&ls);
    hs_field_clear(&rs);
    LEAK_END();
}


/* Integer-keyed builds of 64K rows and more are split into tables filled
 * at once on the pool (join.c).  Right side built (LEFT, RIGHT), or the
 * left side (SEMI, ANTI: reversed), by one int64 key or two packed ones
 * (int64, int32); every built key value k < K occurs at rows k and k + K,
 * some keys NULL.  The oracle is arithmetic: a probe row of key k pairs
 * with the built rows k and k + K in that order (chains keep input
 * order); pairs come out in probe-row order. */
static void big_build_case(xo_join_kind kind, int n_keys, bool pooled)
{
    enum { K = 40000, NB = 2 * K + 500, NP = 6000 };
    hs_pool *pool = NULL;
    hs_error err = {0};
    if (pooled)
        CHECK_OK(hs_pool_create(2, &pool, &err), &err);
    xo_ctx ctx = {.pool = pool, .threads = pooled ? 2 : 1};
    bool rev = kind == XO_JOIN_SEMI || kind == XO_JOIN_ANTI;
    hs_field ps, bs;   /* probe side, built side */
    hs_field_init(&ps, "", HS_TYPE_STRUCT, false);
    xt_add_field(&ps, "a", HS_TYPE_INT64);
    xt_add_field(&ps, "c", HS_TYPE_INT32);
    xt_add_field(&ps, "pv", HS_TYPE_INT64);
    hs_field_init(&bs, "", HS_TYPE_STRUCT, false);
    xt_add_field(&bs, "b", HS_TYPE_INT64);
    xt_add_field(&bs, "d", HS_TYPE_INT32);
    xt_add_field(&bs, "bv", HS_TYPE_INT64);
    xt_val *prow = hs_calloc(NP * 3, sizeof *prow), *brow = hs_calloc(NB * 3, sizeof *brow);
    for (int64_t r = 0; r < NB; r++) {
        xt_val *v = brow + r * 3;
        v[0].null = r >= 2 * K;               /* the last 500: NULL keys */
        v[0].i = r % K;
        v[1].i = (r % K) % 7;
        v[2].i = r;
    }
    for (int64_t r = 0; r < NP; r++) {
        xt_val *v = prow + r * 3;
        v[0].null = r % 11 == 0;
        v[0].i = (int64_t)(xt_rnd() % (K + K / 4));   /* a fifth match nothing */
        v[1].i = v[0].i % 7 + (r % 13 == 0);          /* packed: some miss on c */
        v[2].i = r;
    }
    int k[2] = {0, 1};
    /* reversed kinds build on the left child: the big side goes left */
    xo_op *l = rev ? xt_values(&ctx, &bs, brow, NB, 777) : xt_values(&ctx, &ps, prow, NP, 300);
    xo_op *r = rev ? xt_values(&ctx, &ps, prow, NP, 300) : xt_values(&ctx, &bs, brow, NB, 777);
    xo_op *op;
    CHECK_OK(xo_hashjoin(l, r, kind, n_keys, k, k, NULL, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    int nc = op->schema.n_children;
    hs_buf w = {0};   /* expected rows, same layout */
    uint8_t *bm = hs_calloc(NB, 1);
    int64_t unmatched_probe = 0;
    for (int64_t i = 0; i < NP; i++) {
        const xt_val *pv = prow + i * 3;
        bool hit = !pv[0].null && pv[0].i < K && (n_keys == 1 || pv[1].i == pv[0].i % 7);
        if (hit) {
            bm[pv[0].i] = bm[pv[0].i + K] = 1;
            if (!rev) {
                APPEND(&w, pv, 3 * sizeof *pv);
                APPEND(&w, brow + pv[0].i * 3, 3 * sizeof(xt_val));
                APPEND(&w, pv, 3 * sizeof *pv);
                APPEND(&w, brow + (pv[0].i + K) * 3, 3 * sizeof(xt_val));
            }
        } else {
            unmatched_probe++;
        }
    }
    xt_val *want = (xt_val *)w.data;
    if (kind == XO_JOIN_LEFT) {
        /* the pairs in order, then (per batch) the unmatched left rows */
        int64_t n_pairs = 0, n_lonely = 0;
        bool order_ok = true;
        for (int64_t g = 0; g < n_got; g++) {
            const xt_val *row = got + g * nc;
            if (row[3].null) {
                n_lonely++;
                continue;
            }
            const xt_val *e = want + n_pairs * 6;
            order_ok = order_ok && (int64_t)(w.len / (sizeof(xt_val) * 6)) > n_pairs &&
                       row[2].i == e[2].i && row[5].i == e[5].i;
            n_pairs++;
        }
        CHECK(order_ok);
        CHECK(n_pairs * 6 * (int64_t)sizeof(xt_val) == (int64_t)w.len);
        CHECK(n_lonely == unmatched_probe);
    } else if (kind == XO_JOIN_RIGHT) {
        int64_t n_pairs = 0, n_lonely = 0;
        for (int64_t g = 0; g < n_got; g++)
            if (got[g * nc].null && got[g * nc + 2].null) {
                n_lonely++;
                CHECK(!bm[got[g * nc + 5].i]);
            } else {
                n_pairs++;
            }
        int64_t want_lonely = 0;
        for (int64_t b = 0; b < NB; b++)
            want_lonely += !bm[b];
        CHECK(n_pairs * 6 * (int64_t)sizeof(xt_val) == (int64_t)w.len);
        CHECK(n_lonely == want_lonely);
    } else {
        /* SEMI/ANTI reversed: the built (left) rows marked or not, in order */
        int64_t at = 0;
        bool ok = true;
        for (int64_t b = 0; b < NB; b++)
            if (bm[b] == (kind == XO_JOIN_SEMI)) {
                ok = ok && at < n_got && got[at * nc + 2].i == b;
                at++;
            }
        CHECK(ok && at == n_got);
    }
    hs_buf_free(&w);
    hs_free(bm);
    hs_free(got);
    xo_free(op);
    hs_free(prow);
    hs_free(brow);
    hs_field_clear(&ps);
    hs_field_clear(&bs);
    hs_pool_destroy(pool);
}

static void test_hashjoin_big_build(void)
{
    LEAK_START();
    const xo_join_kind kinds[] = {XO_JOIN_LEFT, XO_JOIN_RIGHT, XO_JOIN_SEMI, XO_JOIN_ANTI};
    for (int i = 0; i < 4; i++)
        for (int keys = 1; keys <= 2; keys++)
            for (int pooled = 0; pooled <= 1; pooled++)
                big_build_case(kinds[i], keys, pooled);
    LEAK_END();
}

/* Every probe row matches exactly one built row: the probe batch's columns
 * move into the output instead of being taken (join.c, pair_batch).  LEFT
 * and FULL build the right side; INNER with the small side on the left
 * builds the left and probes with the right batches.  Oracle: the output
 * is the probe rows in order, each beside the built row of its key. */
static void one_match_case(xo_join_kind kind, bool pooled)
{
    enum { NB = 1000, NP = 3000 };
    hs_pool *pool = NULL;
    hs_error err = {0};
    if (pooled)
        CHECK_OK(hs_pool_create(2, &pool, &err), &err);
    xo_ctx ctx = {.pool = pool, .threads = pooled ? 2 : 1};
    hs_field ps, bs;
    hs_field_init(&ps, "", HS_TYPE_STRUCT, false);
    xt_add_field(&ps, "a", HS_TYPE_INT64);
    xt_add_field(&ps, "s", HS_TYPE_STRING);
    xt_add_field(&ps, "pv", HS_TYPE_INT64);
    hs_field_init(&bs, "", HS_TYPE_STRUCT, false);
    xt_add_field(&bs, "b", HS_TYPE_INT32);
    xt_add_field(&bs, "bv", HS_TYPE_INT64);
    xt_val *prow = hs_calloc(NP * 3, sizeof *prow), *brow = hs_calloc(NB * 2, sizeof *brow);
    for (int64_t r = 0; r < NB; r++) {
        brow[r * 2].i = r;
        brow[r * 2 + 1].i = r * 10;
    }
    for (int64_t r = 0; r < NP; r++) {
        prow[r * 3].i = (r * 37) % NB;
        snprintf(prow[r * 3 + 1].s, sizeof prow[r * 3 + 1].s, "s%lld", (long long)r);
        prow[r * 3 + 2].i = r;
    }
    bool rev = kind == XO_JOIN_INNER;   /* the small built side is the left child */
    xo_op *l = rev ? xt_values(&ctx, &bs, brow, NB, 128) : xt_values(&ctx, &ps, prow, NP, 300);
    xo_op *r = rev ? xt_values(&ctx, &ps, prow, NP, 300) : xt_values(&ctx, &bs, brow, NB, 128);
    int k = 0;
    xo_op *op;
    CHECK_OK(xo_hashjoin(l, r, kind, 1, &k, &k, NULL, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    int nc = op->schema.n_children;
    CHECK(nc == 5);
    int pa = rev ? 2 : 0, ba = rev ? 0 : 3;   /* first column of each side */
    bool ok = n_got == NP;
    for (int64_t g = 0; ok && g < n_got; g++) {
        const xt_val *row = got + g * nc;
        char want_s[32];
        snprintf(want_s, sizeof want_s, "s%lld", (long long)g);
        ok = row[pa + 2].i == g && row[pa].i == (g * 37) % NB && strcmp(row[pa + 1].s, want_s) == 0 &&
             !row[ba].null && row[ba].i == row[pa].i && row[ba + 1].i == row[pa].i * 10;
    }
    if (kind == XO_JOIN_FULL) {
        /* keys (r * 37) % 1000 cover every built row: no right tail */
        CHECK(n_got == NP);
    }
    CHECK(ok);
    hs_free(got);
    xo_free(op);
    hs_free(prow);
    hs_free(brow);
    hs_field_clear(&ps);
    hs_field_clear(&bs);
    hs_pool_destroy(pool);
}

static void test_hashjoin_one_match(void)
{
    LEAK_START();
    const xo_join_kind kinds[] = {XO_JOIN_LEFT, XO_JOIN_FULL, XO_JOIN_INNER};
    for (int i = 0; i < 3; i++)
        for (int pooled = 0; pooled <= 1; pooled++)
            one_match_case(kinds[i], pooled);
    LEAK_END();
}

/* The random cases under a memory limit that makes the joins spill:
 * serially and on a pool of 2 threads (the partitions' joins probe in
 * parallel). */
static void test_hashjoin_spill(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(2, &pool, &err), &err);
    LEAK_START();
    key_range = 300;
    cases_spilled = 0;
    int n = 0;
    for (int pooled = 0; pooled <= 1; pooled++) {
        case_ctx = (xo_ctx){.mem_limit = 24000, .pool = pooled ? pool : NULL,
                            .threads = pooled ? 2 : 1};
        for (int kind = XO_JOIN_INNER; kind <= XO_JOIN_ANTI_NULL_AWARE; kind++)
            for (int t = 0; t < 3; t++, n++) {
                bool na = kind == XO_JOIN_ANTI_NULL_AWARE;
                run_case((xo_join_kind)kind, 1500 + (int64_t)(xt_rnd() % 800),
                         1500 + (int64_t)(xt_rnd() % 800), na ? 1 : 1 + t % 2, !na && t != 1,
                         na && t == 2 ? 0 : 8);
            }
    }
    CHECK(cases_spilled >= n - 2);   /* (a null-aware anti join with a NULL key need not) */
    key_range = 12;
    case_ctx = (xo_ctx){0};
    LEAK_END();
    hs_pool_destroy(pool);
}

/* A right child of unknown size with a bound (a filtered scan): INNER
 * reads it ahead first and builds on it when it ends within the read
 * ahead; INNER and LEFT send the keys of a left side read ahead to its end
 * to the right child.  Serially, on a pool, and under a memory limit
 * that makes the joins spill (the read ahead then stops early and the
 * right batches read ahead go to the partitions).  Same oracle; the
 * filters never drop a left key. */
static void test_hashjoin_bounded(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(2, &pool, &err), &err);
    LEAK_START();
    case_bounded = true;
    filters_taken = filters_missed = 0;
    cases_spilled = 0;
    const xo_join_kind kinds[] = {XO_JOIN_INNER, XO_JOIN_LEFT, XO_JOIN_SEMI, XO_JOIN_ANTI,
                                  XO_JOIN_RIGHT};
    for (int mode = 0; mode < 3; mode++) {
        case_ctx = (xo_ctx){.pool = mode == 1 ? pool : NULL, .threads = mode == 1 ? 2 : 1,
                            .mem_limit = mode == 2 ? 24000 : 0};
        key_range = mode == 2 ? 300 : 12;
        const int64_t sizes[] = {0, 1, 7, 60, 400, 1500};
        for (int k = 0; k < 5; k++)
            for (int t = 0; t < 8; t++) {
                int64_t nl = mode == 2 ? 1500 + (int64_t)(xt_rnd() % 800) : sizes[xt_rnd() % 6];
                int64_t nr = mode == 2 ? 1500 + (int64_t)(xt_rnd() % 800) : sizes[xt_rnd() % 6];
                run_case(kinds[k], nl, nr, 1 + t % 2, t % 3 == 0, t % 4 == 0 ? 0 : 10);
            }
    }
    CHECK(filters_taken > 0);
    CHECK(filters_missed == 0);
    CHECK(cases_spilled > 0);
    case_bounded = false;
    key_range = 12;
    case_ctx = (xo_ctx){0};
    LEAK_END();
    hs_pool_destroy(pool);
}

/* Out of memory at sampled allocations of a spilling FULL join with a
 * residual: HS_NOMEM or the full result, never anything else, nothing
 * leaked, every accounted byte given back. */
static void test_hashjoin_spill_oom(void)
{
    LEAK_START();
    hs_field ls, rs;
    schemas(&ls, &rs);
    key_range = 200;
    xt_val *lrows = random_rows(900, false, 8), *rrows = random_rows(900, true, 8);
    key_range = 12;
    int lk = 0, rk = 0;
    int64_t want = -1;
    int fails = 0;
    for (int64_t k = 0;; k += 1 + k / 8) {
        xo_ctx ctx = {.mem_limit = 8000};
        hs_error err = {0};
        xo_op *l = xt_values(&ctx, &ls, lrows, 900, 64), *r = xt_values(&ctx, &rs, rrows, 900, 64);
        xo_op *op;
        CHECK_OK(xo_hashjoin(l, r, XO_JOIN_FULL, 1, &lk, &rk, NULL, &op, &err), &err);
        ex_expr *res;
        CHECK_OK(ex_parse_filter("lv < rv", xo_join_input_schema(op), &res, &err), &err);
        CHECK_OK(xo_join_set_residual(op, res, &err), &err);
        int64_t live = hs_mem_live_count(), n = 0;
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
        if (k == 0) {
            hs_buf ex = {0};
            CHECK_OK(xo_explain(op, true, &ex, &err), &err);
            CHECK_OK(hs_buf_append_byte(&ex, 0), &err);
            CHECK(strstr((const char *)ex.data, "spilled:") != NULL);
            hs_buf_free(&ex);
        }
        xo_free(op);
        CHECK(hs_mem_live_count() <= live);
        CHECK(atomic_load(&ctx.mem_used) == 0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        if (st != HS_OK && st != HS_NOMEM)
            fprintf(stderr, "k %lld: %s\n", (long long)k, err.msg);
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
    hs_free(lrows);
    hs_free(rrows);
    hs_field_clear(&ls);
    hs_field_clear(&rs);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_hashjoin_random);
    HS_RUN(test_hashjoin_parallel);
    HS_RUN(test_hashjoin_big_build);
    HS_RUN(test_hashjoin_one_match);
    HS_RUN(test_hashjoin_bounded);
    HS_RUN(test_nljoin);
    HS_RUN(test_join_errors);
    HS_RUN(test_hashjoin_spill);
    HS_RUN(test_hashjoin_spill_oom);
    return hs_test_summary();
}
