/*
 * tests/c/test_exec_agg.c - HashAggregate and Distinct.
 *
 * Oracle: brute force in this file.  For every output group the test
 * rescans all input rows with that key (NULL keys equal) and computes each
 * aggregate by PostgreSQL's definition (NULL inputs skipped, NULL for no
 * input except count, DISTINCT over the non-null values, string_agg in
 * input order); results are compared as multisets.  Also: a global
 * aggregate over no rows gives one row (count 0, others NULL), sum(int64)
 * beyond int64 is exact (decimal128), array_agg keeps NULLs and order,
 * the memory limit fails with HS_NOMEM naming the operator.
 */
#include "exec_testutil.h"
#include "exec/exec_int.h"

#include "base/threadpool.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* g1 int64, g2 string, x int32, y float64, z decimal(18,2), b bool, s string, w int64 */
#define NC 8
static void schema8(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "g1", HS_TYPE_INT64);
    xt_add_field(s, "g2", HS_TYPE_STRING);
    xt_add_field(s, "x", HS_TYPE_INT32);
    xt_add_field(s, "y", HS_TYPE_FLOAT64);
    xt_add_field(s, "z", HS_TYPE_DECIMAL128);
    xt_add_field(s, "b", HS_TYPE_BOOL);
    xt_add_field(s, "s", HS_TYPE_STRING);
    xt_add_field(s, "w", HS_TYPE_INT64);
}

static int64_t wide_groups;   /* > 0: g1 takes this many values (spill tests) */

static xt_val *random_rows(int64_t n)
{
    xt_val *rows = hs_calloc((size_t)(n * NC + 1), sizeof *rows);
    for (int64_t r = 0; r < n; r++) {
        xt_val *v = rows + r * NC;
        for (int c = 0; c < NC; c++)
            v[c].null = xt_rnd() % 7 == 0;
        v[0].i = (int64_t)(xt_rnd() % (wide_groups > 0 ? (uint64_t)wide_groups : 5));
        if (wide_groups > 0)   /* a small NULL group (string_agg fits the test's strings) */
            v[0].null = xt_rnd() % 2000 == 0;
        snprintf(v[1].s, sizeof v[1].s, "k%d", (int)(xt_rnd() % 3));
        v[2].i = (int64_t)(xt_rnd() % 21) - 10;
        v[3].d = (double)((int64_t)(xt_rnd() % 41) - 20) / 4;
        v[4].i = (int64_t)(xt_rnd() % 2001) - 1000;
        v[5].i = (int64_t)(xt_rnd() % 4 != 0);
        snprintf(v[6].s, sizeof v[6].s, "%c", 'a' + (int)(xt_rnd() % 4));
        v[7].i = (int64_t)(xt_rnd() % 1000000) * 1000000000;
    }
    return rows;
}

typedef struct agg_case {
    xo_agg_fn fn;
    int arg;
    bool distinct;
} agg_case;

static bool key_eq(const xt_val *a, const xt_val *b, int ng)
{
    for (int c = 0; c < ng; c++)
        if (xt_val_cmp(&a[c], &b[c]) != 0)
            return false;
    return true;
}

/* The brute-force value of aggregate ac over the input rows whose first ng
 * columns equal key. */
static xt_val oracle(const xt_val *rows, int64_t n, const xt_val *key, int ng, const agg_case *ac)
{
    xt_val out = {0};
    int64_t cnt = 0, isum = 0;
    double fsum = 0;
    bool flag = ac->fn == XO_AGG_BOOL_AND;
    xt_val best = {.null = true};
    char sbuf[128] = "";
    const xt_val *seen[4096];
    int n_seen = 0;
    for (int64_t r = 0; r < n; r++) {
        const xt_val *row = rows + r * NC;
        if (!key_eq(row, key, ng))
            continue;
        if (ac->fn == XO_AGG_COUNT_STAR) {
            cnt++;
            continue;
        }
        const xt_val *v = &row[ac->arg];
        if (v->null)
            continue;
        if (ac->distinct) {
            bool dup = false;
            for (int k = 0; k < n_seen && !dup; k++)
                dup = xt_val_cmp(seen[k], v) == 0;
            if (dup)
                continue;
            seen[n_seen++] = v;
        }
        cnt++;
        isum += v->i;
        fsum += v->d;
        if (ac->fn == XO_AGG_BOOL_AND)
            flag = flag && v->i;
        if (ac->fn == XO_AGG_BOOL_OR)
            flag = flag || v->i;
        if (ac->fn == XO_AGG_MIN && (best.null || xt_val_cmp(v, &best) < 0))
            best = *v;
        if (ac->fn == XO_AGG_MAX && (best.null || xt_val_cmp(v, &best) > 0))
            best = *v;
        if (ac->fn == XO_AGG_STRING_AGG) {
            if (strlen(sbuf) + strlen(v->s) + 2 > sizeof sbuf)
                abort();   /* the test keeps inputs small enough */
            if (cnt > 1)
                strcat(sbuf, ",");
            strcat(sbuf, v->s);
        }
    }
    switch (ac->fn) {
    case XO_AGG_COUNT_STAR: case XO_AGG_COUNT: out.i = cnt; return out;
    default: break;
    }
    if (cnt == 0) {
        out.null = true;
        return out;
    }
    switch (ac->fn) {
    case XO_AGG_SUM:
        if (ac->arg == 3)
            out.d = fsum;
        else
            out.i = isum;
        break;
    case XO_AGG_AVG:
        /* compared after rounding to 1e-9 */
        out.d = ac->arg == 3 ? fsum / (double)cnt
                             : (double)isum / (double)cnt / (ac->arg == 4 ? 100.0 : 1.0);
        out.d = round(out.d * 1e9) / 1e9;
        break;
    case XO_AGG_MIN: case XO_AGG_MAX: out = best; break;
    case XO_AGG_BOOL_AND: case XO_AGG_BOOL_OR: out.i = flag; break;
    case XO_AGG_STRING_AGG: memcpy(out.s, sbuf, sizeof out.s); break;
    default: break;
    }
    return out;
}

static xo_ctx case_ctx;   /* the context run_case uses (a pool in the parallel test) */

static void run_case(int64_t n, int ng, int n_aggs, const agg_case *cases, int64_t chunk)
{
    hs_field s;
    schema8(&s);
    xo_ctx ctx = case_ctx;
    xt_val *rows = random_rows(n);
    xo_op *v = xt_values(&ctx, &s, rows, n, chunk), *op;
    xo_agg aggs[32];
    for (int j = 0; j < n_aggs; j++) {
        aggs[j] = (xo_agg){.fn = cases[j].fn, .arg = cases[j].arg, .distinct = cases[j].distinct,
                           .sep_col = -1, .sep = ","};
    }
    hs_error err = {0};
    CHECK_OK(xo_hashagg(v, ng, n_aggs, aggs, &op, &err), &err);
    int nc = ng + n_aggs;
    CHECK(op->schema.n_children == nc);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    /* the groups: distinct keys of the input */
    xt_val *want = hs_calloc((size_t)((n + 1) * nc), sizeof *want);
    int64_t n_want = 0;
    for (int64_t r = 0; r < n || (ng == 0 && r == 0); r++) {
        const xt_val *key = rows + r * NC;
        bool dup = false;
        for (int64_t k = 0; k < n_want && !dup; k++)
            dup = key_eq(want + k * nc, key, ng);
        if (dup)
            continue;
        xt_val *w = want + n_want * nc;
        for (int c = 0; c < ng; c++)
            w[c] = key[c];
        for (int j = 0; j < n_aggs; j++)
            w[ng + j] = oracle(rows, n, key, ng, &cases[j]);
        n_want++;
    }
    for (int64_t r = 0; r < n_got; r++)
        for (int j = 0; j < n_aggs; j++)
            if (cases[j].fn == XO_AGG_AVG && !got[r * nc + ng + j].null)
                got[r * nc + ng + j].d = round(got[r * nc + ng + j].d * 1e9) / 1e9;
    CHECK(n_got == n_want);
    xt_sort_rows(got, n_got, nc);
    xt_sort_rows(want, n_want, nc);
    bool same = n_got == n_want && xt_rows_equal(got, want, n_want, nc);
    CHECK(same);
    if (!same) {
        xt_print_rows("got", got, n_got, nc);
        xt_print_rows("want", want, n_want, nc);
    }
    xo_free(op);
    hs_free(got);
    hs_free(want);
    hs_free(rows);
    hs_field_clear(&s);
}

static void agg_random(void)
{
    const agg_case all[] = {
        {XO_AGG_COUNT_STAR, 0, false}, {XO_AGG_COUNT, 2, false}, {XO_AGG_SUM, 2, false},
        {XO_AGG_SUM, 3, false}, {XO_AGG_SUM, 4, false}, {XO_AGG_SUM, 7, false},
        {XO_AGG_AVG, 2, false}, {XO_AGG_AVG, 3, false}, {XO_AGG_AVG, 4, false},
        {XO_AGG_MIN, 6, false}, {XO_AGG_MAX, 6, false}, {XO_AGG_MIN, 3, false},
        {XO_AGG_MAX, 4, false}, {XO_AGG_MIN, 1, false}, {XO_AGG_BOOL_AND, 5, false},
        {XO_AGG_BOOL_OR, 5, false}, {XO_AGG_COUNT, 2, true}, {XO_AGG_SUM, 2, true},
        {XO_AGG_AVG, 3, true}, {XO_AGG_COUNT, 6, true}, {XO_AGG_MAX, 2, true},
        {XO_AGG_STRING_AGG, 6, false}, {XO_AGG_STRING_AGG, 6, true},
    };
    int n_all = (int)(sizeof all / sizeof all[0]);
    const int64_t sizes[] = {0, 1, 2, 17, 150, 3000};
    for (int t = 0; t < 36; t++) {
        int64_t n = sizes[t % 6];
        int ng = (t / 6) % 3;
        /* string_agg results must fit the test's 128-byte strings: small inputs only */
        int na = n <= 17 ? n_all : n_all - 2;
        run_case(n, ng, na, all, 1 + (int64_t)(xt_rnd() % 400));
    }
}

static void test_agg_random(void)
{
    LEAK_START();
    case_ctx = (xo_ctx){0};
    agg_random();
    LEAK_END();
}

/* The same on a pool: the aggregates without DISTINCT/string_agg/array_agg
 * take the parallel partial-aggregation path (checked through the cases
 * below that have only such aggregates). */
static void test_agg_parallel(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(3, &pool, &err), &err);
    LEAK_START();
    case_ctx = (xo_ctx){.pool = pool, .threads = 3};
    agg_random();
    const agg_case mergeable[] = {
        {XO_AGG_COUNT_STAR, 0, false}, {XO_AGG_COUNT, 2, false}, {XO_AGG_SUM, 2, false},
        {XO_AGG_SUM, 3, false}, {XO_AGG_SUM, 4, false}, {XO_AGG_SUM, 7, false},
        {XO_AGG_AVG, 2, false}, {XO_AGG_AVG, 3, false}, {XO_AGG_AVG, 4, false},
        {XO_AGG_MIN, 6, false}, {XO_AGG_MAX, 6, false}, {XO_AGG_MIN, 3, false},
        {XO_AGG_MAX, 4, false}, {XO_AGG_MIN, 1, false}, {XO_AGG_BOOL_AND, 5, false},
        {XO_AGG_BOOL_OR, 5, false}};
    const int64_t sizes[] = {0, 1, 50, 3000, 20000};
    for (int t = 0; t < 15; t++)
        run_case(sizes[t % 5], t / 5, 16, mergeable, 1 + (int64_t)(xt_rnd() % 700));
    case_ctx = (xo_ctx){0};
    LEAK_END();
    hs_pool_destroy(pool);
}

/* Aggregates that share one state (agg.c share_states): repeats, count
 * beside sum/avg of the same argument in either order, repeated count(*),
 * beside DISTINCT ones that must not share; serial and on a pool, few and
 * many groups, each compared with the brute-force oracle. */
static void test_agg_shared(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(3, &pool, &err), &err);
    LEAK_START();
    const agg_case cases[] = {
        {XO_AGG_COUNT, 2, false}, {XO_AGG_SUM, 2, false}, {XO_AGG_SUM, 2, false},
        {XO_AGG_AVG, 2, false}, {XO_AGG_COUNT, 2, false}, {XO_AGG_COUNT_STAR, 0, false},
        {XO_AGG_COUNT_STAR, 0, false}, {XO_AGG_SUM, 4, false}, {XO_AGG_AVG, 4, false},
        {XO_AGG_COUNT, 4, false}, {XO_AGG_AVG, 3, false}, {XO_AGG_SUM, 3, false},
        {XO_AGG_COUNT, 3, false}, {XO_AGG_SUM, 7, false}, {XO_AGG_SUM, 7, false}};
    const agg_case with_distinct[] = {
        {XO_AGG_COUNT, 2, true}, {XO_AGG_COUNT, 2, false}, {XO_AGG_SUM, 2, true},
        {XO_AGG_SUM, 2, false}, {XO_AGG_COUNT, 2, false}};
    const int64_t sizes[] = {0, 1, 150, 3000, 20000};
    for (int par = 0; par < 2; par++) {
        case_ctx = par ? (xo_ctx){.pool = pool, .threads = 3} : (xo_ctx){0};
        for (int t = 0; t < 15; t++) {
            wide_groups = t % 3 == 2 ? 700 : 0;   /* few groups, then many */
            run_case(sizes[t % 5], t / 5 % 2 ? 1 : 2, 15, cases, 1 + (int64_t)(xt_rnd() % 700));
            run_case(sizes[t % 5] / 10, 1, 5, with_distinct, 1 + (int64_t)(xt_rnd() % 300));
        }
    }
    wide_groups = 0;
    case_ctx = (xo_ctx){0};
    LEAK_END();
    hs_pool_destroy(pool);
}

/* string_agg(s, ',' ORDER BY y DESC NULLS FIRST, x) and
 * string_agg(g2 ORDER BY x) per g1 group; oracle: each group's rows
 * stably sorted by the keys in this file, then joined. */
static const xt_val *ord_rows;
static int ord_cmp_rows(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    const xt_val *x = ord_rows + a * NC, *y = ord_rows + b * NC;
    /* y DESC NULLS FIRST */
    if (x[3].null != y[3].null)
        return x[3].null ? -1 : 1;
    if (!x[3].null && x[3].d != y[3].d)
        return x[3].d > y[3].d ? -1 : 1;
    /* x ASC NULLS LAST */
    if (x[2].null != y[2].null)
        return x[2].null ? 1 : -1;
    if (!x[2].null && x[2].i != y[2].i)
        return x[2].i < y[2].i ? -1 : 1;
    return a < b ? -1 : a > b;   /* stable */
}

static void test_agg_order(void)
{
    LEAK_START();
    hs_field s;
    schema8(&s);
    for (int t = 0; t < 10; t++) {
        int64_t n = 60;
        xt_val *rows = random_rows(n);
        xo_ctx ctx = {0};
        xo_op *v = xt_values(&ctx, &s, rows, n, 1 + (int64_t)(xt_rnd() % 30)), *op;
        xo_sort_key k2[2] = {{3, true, true}, {2, false, false}};
        xo_agg aggs[1] = {{.fn = XO_AGG_STRING_AGG, .arg = 6, .sep = ",", .sep_col = -1,
                           .n_order = 2, .order = k2}};
        hs_error err = {0};
        CHECK_OK(xo_hashagg(v, 1, 1, aggs, &op, &err), &err);
        xt_val *got;
        int64_t n_got;
        CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
        bool same = true;
        int64_t groups = 0;
        for (int64_t r = 0; r < n; r++) {
            bool first = true;
            for (int64_t q = 0; q < r && first; q++)
                first = xt_val_cmp(&rows[q * NC], &rows[r * NC]) != 0;
            if (!first)
                continue;
            groups++;
            int64_t idx[64], m = 0;
            for (int64_t q = 0; q < n; q++)
                if (xt_val_cmp(&rows[q * NC], &rows[r * NC]) == 0 && !rows[q * NC + 6].null)
                    idx[m++] = q;
            ord_rows = rows;
            qsort(idx, (size_t)m, sizeof *idx, ord_cmp_rows);
            char want[128] = "";
            for (int64_t k = 0; k < m; k++) {
                if (k)
                    strcat(want, ",");
                strcat(want, rows[idx[k] * NC + 6].s);
            }
            bool found = false;
            for (int64_t g = 0; g < n_got && !found; g++)
                if (xt_val_cmp(&got[g * 2], &rows[r * NC]) == 0) {
                    found = true;
                    same = same && (m == 0 ? got[g * 2 + 1].null : strcmp(got[g * 2 + 1].s, want) == 0);
                    if (!same)
                        fprintf(stderr, "group %lld: got '%s' want '%s'\n", (long long)rows[r * NC].i,
                                got[g * 2 + 1].s, want);
                }
            same = same && found;
        }
        CHECK(n_got == groups);
        CHECK(same);
        xo_free(op);
        hs_free(got);
        hs_free(rows);
    }
    hs_field_clear(&s);
    LEAK_END();
}

static void test_global_empty(void)
{
    LEAK_START();
    hs_field s;
    schema8(&s);
    xo_ctx ctx = {0};
    xo_op *v = xt_values(&ctx, &s, NULL, 0, 10), *op;
    xo_agg aggs[3] = {{.fn = XO_AGG_COUNT_STAR, .sep_col = -1},
                      {.fn = XO_AGG_SUM, .arg = 2, .sep_col = -1},
                      {.fn = XO_AGG_ARRAY_AGG, .arg = 2, .sep_col = -1, .name = "arr"}};
    hs_error err = {0};
    CHECK_OK(xo_hashagg(v, 0, 3, aggs, &op, &err), &err);
    CHECK(strcmp(op->schema.children[0].name, "count") == 0);
    CHECK(strcmp(op->schema.children[2].name, "arr") == 0);
    CHECK(op->schema.children[1].type == HS_TYPE_INT64);   /* sum(int4) -> bigint */
    hs_batch *b;
    CHECK_OK(xo_next(op, &b, &err), &err);
    REQUIRE(b && b->n_rows == 1);
    CHECK(HS_COL_VALUES(b->cols[0], int64_t)[0] == 0);
    CHECK(!hs_col_is_valid(b->cols[1], 0));
    CHECK(!hs_col_is_valid(b->cols[2], 0));
    hs_batch_free(b);
    CHECK_OK(xo_next(op, &b, &err), &err);
    CHECK(b == NULL);
    xo_free(op);
    /* grouped aggregate over no rows: no rows */
    v = xt_values(&ctx, &s, NULL, 0, 10);
    CHECK_OK(xo_hashagg(v, 1, 1, aggs, &op, &err), &err);
    CHECK_OK(xo_next(op, &b, &err), &err);
    CHECK(b == NULL);
    xo_free(op);
    hs_field_clear(&s);
    LEAK_END();
}

static void test_sum_int64_exact_and_array_agg(void)
{
    LEAK_START();
    hs_field s;
    schema8(&s);
    xo_ctx ctx = {0};
    xt_val rows[4 * NC] = {0};
    for (int r = 0; r < 4; r++) {
        rows[r * NC + 0].i = r % 2;            /* groups 0, 1, 0, 1 */
        rows[r * NC + 7].i = INT64_MAX - r;
        rows[r * NC + 2].i = r * 10;
        rows[r * NC + 2].null = r == 2;
        for (int c = 0; c < NC; c++)
            if (c != 0 && c != 7 && c != 2)
                rows[r * NC + c].null = true;
    }
    xo_op *v = xt_values(&ctx, &s, rows, 4, 1), *op;
    xo_agg aggs[2] = {{.fn = XO_AGG_SUM, .arg = 7, .sep_col = -1},
                      {.fn = XO_AGG_ARRAY_AGG, .arg = 2, .sep_col = -1}};
    hs_error err = {0};
    CHECK_OK(xo_hashagg(v, 1, 2, aggs, &op, &err), &err);
    CHECK(op->schema.children[1].type == HS_TYPE_DECIMAL128 && op->schema.children[1].precision == 38);
    CHECK(op->schema.children[2].type == HS_TYPE_LIST);
    hs_batch *b;
    CHECK_OK(xo_next(op, &b, &err), &err);
    REQUIRE(b && b->n_rows == 2);
    /* groups in order of first appearance: 0 then 1 */
    CHECK(HS_COL_VALUES(b->cols[0], int64_t)[0] == 0);
    __int128 s0, s1;
    memcpy(&s0, b->cols[1]->values.data, 16);
    memcpy(&s1, b->cols[1]->values.data + 16, 16);
    CHECK(s0 == (__int128)INT64_MAX * 2 - 2);
    CHECK(s1 == (__int128)INT64_MAX * 2 - 4);
    const hs_column *l = b->cols[2];
    const int32_t *o = HS_COL_OFFSETS(l);
    CHECK(o[0] == 0 && o[1] == 2 && o[2] == 4);
    const hs_column *e = l->children[0];
    CHECK(HS_COL_VALUES(e, int32_t)[0] == 0);
    CHECK(!hs_col_is_valid(e, 1));          /* NULL kept, in input order */
    CHECK(HS_COL_VALUES(e, int32_t)[2] == 10 && HS_COL_VALUES(e, int32_t)[3] == 30);
    CHECK(hs_col_validate(l, &op->schema.children[2], &err) == HS_OK);
    hs_batch_free(b);
    xo_free(op);
    hs_field_clear(&s);
    LEAK_END();
}

/* Past the memory limit the aggregate spills the rows of new groups to
 * partitions and aggregates them afterwards: same groups and values as the
 * brute-force oracle, for every aggregate (DISTINCT and string_agg
 * included), serial and on a pool; nothing leaks, accounting back to 0. */
static void test_spill(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(2, &pool, &err), &err);
    LEAK_START();
    const agg_case all[] = {
        {XO_AGG_COUNT_STAR, 0, false}, {XO_AGG_COUNT, 2, false}, {XO_AGG_SUM, 2, false},
        {XO_AGG_SUM, 3, false}, {XO_AGG_SUM, 4, false}, {XO_AGG_SUM, 7, false},
        {XO_AGG_AVG, 2, false}, {XO_AGG_AVG, 3, false}, {XO_AGG_AVG, 4, false},
        {XO_AGG_MIN, 6, false}, {XO_AGG_MAX, 6, false}, {XO_AGG_MIN, 3, false},
        {XO_AGG_MAX, 4, false}, {XO_AGG_MIN, 1, false}, {XO_AGG_BOOL_AND, 5, false},
        {XO_AGG_BOOL_OR, 5, false}, {XO_AGG_COUNT, 2, true}, {XO_AGG_SUM, 2, true},
        {XO_AGG_AVG, 3, true}, {XO_AGG_COUNT, 6, true}, {XO_AGG_MAX, 2, true},
        {XO_AGG_STRING_AGG, 6, false}, {XO_AGG_STRING_AGG, 6, true},
    };
    int n_all = (int)(sizeof all / sizeof all[0]);
    wide_groups = 3000;
    for (int t = 0; t < 8; t++) {
        case_ctx = (xo_ctx){.mem_limit = t % 2 ? 150000 : 400000};
        if (t >= 6)
            case_ctx.pool = pool, case_ctx.threads = 2;
        run_case(3000 + (int64_t)(xt_rnd() % 3000), 1 + t % 2, t >= 6 ? 16 : n_all, all,
                 50 + (int64_t)(xt_rnd() % 700));
    }
    wide_groups = 0;
    case_ctx = (xo_ctx){0};

    /* every row its own group: partitions spill again one level deeper */
    hs_field s;
    schema8(&s);
    xo_ctx ctx = {.mem_limit = 50000};
    int64_t n = 20000;
    xt_val *rows = random_rows(n);
    for (int64_t r = 0; r < n; r++) {
        rows[r * NC].i = r;
        rows[r * NC].null = false;
    }
    xo_op *v = xt_values(&ctx, &s, rows, n, 1000), *op;
    xo_agg a = {.fn = XO_AGG_COUNT_STAR, .sep_col = -1};
    CHECK_OK(xo_hashagg(v, 1, 1, &a, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(n_got == n);
    bool ones = true;
    xt_sort_rows(got, n_got, 2);
    for (int64_t r = 0; r < n_got; r++)
        ones = ones && got[r * 2].i == r && got[r * 2 + 1].i == 1;
    CHECK(ones);
    hs_buf ex = {0};
    CHECK_OK(xo_explain(op, true, &ex, &err), &err);
    CHECK(hs_buf_append_byte(&ex, 0) == HS_OK);
    CHECK(strstr((char *)ex.data, "spilled: ") != NULL);
    CHECK(strstr((char *)ex.data, " 0 rows again") == NULL);
    hs_buf_free(&ex);
    xo_free(op);
    hs_free(got);
    CHECK(atomic_load(&ctx.mem_used) == 0);
    /* a spill file write or read failing at every step: HS_IO, no leak */
    int io_fails = 0;
    for (int64_t f = 1; f < 300; f += 5) {
        xo_ctx c2 = {.mem_limit = 50000};
        v = xt_values(&c2, &s, rows, n, 1000);
        hs_err_clear(&err);
        CHECK_OK(xo_hashagg(v, 1, 1, &a, &op, &err), &err);
        xo_spill_fail_after(f);
        hs_batch *b = NULL;
        hs_status st;
        int64_t m = 0;
        while ((st = xo_next(op, &b, &err)) == HS_OK && b) {
            m += b->n_rows;
            hs_batch_free(b);
        }
        xo_spill_fail_after(0);
        CHECK(st == HS_OK ? m == n : st == HS_IO);
        io_fails += st == HS_IO;
        xo_free(op);
        CHECK(atomic_load(&c2.mem_used) == 0);
    }
    CHECK(io_fails > 10);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
    hs_pool_destroy(pool);
}

static void test_bad_args(void)
{
    LEAK_START();
    hs_field s;
    schema8(&s);
    xo_ctx ctx = {0};
    xo_op *v = xt_values(&ctx, &s, NULL, 0, 10), *op;
    xo_agg a = {.fn = XO_AGG_SUM, .arg = 6, .sep_col = -1};   /* sum(text) */
    hs_error err = {0};
    CHECK(xo_hashagg(v, 0, 1, &a, &op, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "sum(string) does not exist") != NULL);
    hs_field_clear(&s);
    LEAK_END();
}

static void test_distinct(void)
{
    LEAK_START();
    hs_field s;
    schema8(&s);
    for (int t = 0; t < 10; t++) {
        xo_ctx ctx = {0};
        int64_t n = (int64_t)(xt_rnd() % 2000);
        xt_val *rows = random_rows(n);
        /* project to the first 3 columns via a fresh schema */
        hs_field s3;
        hs_field_init(&s3, "", HS_TYPE_STRUCT, false);
        xt_add_field(&s3, "g1", HS_TYPE_INT64);
        xt_add_field(&s3, "g2", HS_TYPE_STRING);
        xt_add_field(&s3, "b", HS_TYPE_BOOL);
        xt_val *r3 = hs_calloc((size_t)(n * 3 + 1), sizeof *r3);
        for (int64_t r = 0; r < n; r++) {
            r3[r * 3] = rows[r * NC];
            r3[r * 3 + 1] = rows[r * NC + 1];
            r3[r * 3 + 2] = rows[r * NC + 5];
        }
        xo_op *v = xt_values(&ctx, &s3, r3, n, 300), *op;
        hs_error err = {0};
        CHECK_OK(xo_distinct(v, &op, &err), &err);
        xt_val *got;
        int64_t n_got;
        CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
        /* brute force: first appearances in input order */
        xt_val *want = hs_calloc((size_t)(n * 3 + 1), sizeof *want);
        int64_t nw = 0;
        for (int64_t r = 0; r < n; r++) {
            bool dup = false;
            for (int64_t k = 0; k < nw && !dup; k++)
                dup = key_eq(want + k * 3, r3 + r * 3, 3);
            if (!dup)
                memcpy(want + (nw++) * 3, r3 + r * 3, 3 * sizeof *want);
        }
        CHECK(n_got == nw);
        CHECK(xt_rows_equal(got, want, nw, 3));
        xo_free(op);
        hs_free(got);
        hs_free(want);
        hs_free(r3);
        hs_free(rows);
        hs_field_clear(&s3);
    }
    hs_field_clear(&s);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_agg_random);
    HS_RUN(test_agg_parallel);
    HS_RUN(test_agg_shared);
    HS_RUN(test_agg_order);
    HS_RUN(test_global_empty);
    HS_RUN(test_sum_int64_exact_and_array_agg);
    HS_RUN(test_spill);
    HS_RUN(test_bad_args);
    HS_RUN(test_distinct);
    return hs_test_summary();
}
