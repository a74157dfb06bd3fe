/*
 * tests/c/test_exec_basic.c - the operator frame (xo_next statistics,
 * cancellation, EXPLAIN) and the streaming operators Values, Filter,
 * Project, Limit and the ArrowArrayStream adapter.
 *
 * Oracles: random rows with NULLs, expectations computed by brute force
 * over the same rows in C (filter predicate, arithmetic, limit/offset
 * windows); the batch-size and early-stop rules of exec/op.h checked
 * through the statistics.
 */
#include "exec_testutil.h"

#include "base/threadpool.h"
#include "columnar/arrow_c.h"
#include "expr/expr.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* a int64, b string, c float64 */
static void schema3(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "a", HS_TYPE_INT64);
    xt_add_field(s, "b", HS_TYPE_STRING);
    xt_add_field(s, "c", HS_TYPE_FLOAT64);
}

static xt_val *random_rows(int64_t n)
{
    xt_val *rows = hs_calloc((size_t)(n * 3), sizeof *rows);
    for (int64_t r = 0; r < n; r++) {
        xt_val *v = rows + r * 3;
        v[0].null = xt_rnd() % 10 == 0;
        v[0].i = (int64_t)(xt_rnd() % 100) - 20;
        v[1].null = xt_rnd() % 8 == 0;
        snprintf(v[1].s, sizeof v[1].s, "s%d", (int)(xt_rnd() % 30));
        v[2].null = xt_rnd() % 7 == 0;
        v[2].d = (double)(int64_t)(xt_rnd() % 1000) / 8.0;
    }
    return rows;
}

static void test_values_roundtrip(void)
{
    LEAK_START();
    hs_field s;
    schema3(&s);
    xo_ctx ctx = {0};
    int64_t n = 20000;
    xt_val *rows = random_rows(n);
    /* one big batch: Values must split it into batches of at most XO_BATCH_ROWS */
    xo_op *op = xt_values(&ctx, &s, rows, n, n);
    CHECK(op->schema.n_children == 3);
    CHECK(op->schema.children[2].field_id == 3);
    xt_val *got;
    int64_t n_got;
    hs_error err = {0};
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    CHECK(n_got == n);
    CHECK(xt_rows_equal(got, rows, n, 3));
    CHECK(op->rows_out == n);
    CHECK(op->batches_out == (n + XO_BATCH_ROWS - 1) / XO_BATCH_ROWS);
    xo_free(op);
    hs_free(got);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

static void filter_project_case(xo_ctx *ctxp, int64_t n, int64_t chunk)
{
    xo_ctx ctx = *ctxp;
    hs_field s;
    schema3(&s);
    xt_val *rows = random_rows(n);
    xo_op *v = xt_values(&ctx, &s, rows, n, chunk);
    ex_expr *pred;
    hs_error err = {0};
    CHECK_OK(ex_parse_filter("a > 10 AND (b IS NOT NULL OR c < 20)", &v->schema, &pred, &err), &err);
    xo_op *f;
    CHECK_OK(xo_filter(v, pred, &f, &err), &err);
    ex_expr *e[3];
    CHECK_OK(ex_parse_scalar("a * 3 - 1", &f->schema, &e[0], &err), &err);
    CHECK_OK(ex_parse_scalar("c + a", &f->schema, &e[1], &err), &err);
    CHECK_OK(ex_parse_scalar("b", &f->schema, &e[2], &err), &err);
    const char *names[3] = {"x", "y", NULL};
    xo_op *p;
    CHECK_OK(xo_project(f, 3, e, names, &p, &err), &err);
    CHECK(strcmp(p->schema.children[0].name, "x") == 0);
    CHECK(strcmp(p->schema.children[2].name, "?column?") == 0);
    CHECK(p->schema.children[1].type == HS_TYPE_FLOAT64);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(p, &got, &n_got, &err), &err);
    /* brute force */
    xt_val *want = hs_calloc((size_t)n * 3, sizeof *want);
    int64_t k = 0;
    for (int64_t r = 0; r < n; r++) {
        const xt_val *x = rows + r * 3;
        bool a_gt = !x[0].null && x[0].i > 10;
        bool b_nn = !x[1].null;
        bool c_lt_known = !x[2].null, c_lt = c_lt_known && x[2].d < 20;
        /* (b IS NOT NULL OR c < 20) is TRUE when b not null or c < 20 */
        bool rhs = b_nn || c_lt;
        if (!(a_gt && rhs))
            continue;
        xt_val *w = want + k * 3;
        w[0].i = x[0].i * 3 - 1;
        w[1].null = x[2].null;
        w[1].d = x[2].d + (double)x[0].i;
        w[2] = x[1];
        k++;
    }
    CHECK(n_got == k);
    CHECK(xt_rows_equal(got, want, k, 3));
    CHECK(f->rows_out == k);
    CHECK(v->rows_out == n);

    hs_buf ex = {0};
    CHECK_OK(xo_explain(p, true, &ex, &err), &err);
    const char *txt = hs_buf_cstr(&ex);
    CHECK(strstr(txt, "Project") == txt);
    CHECK(strstr(txt, "\n  -> Filter  (filter: ") != NULL);
    CHECK(strstr(txt, "\n    -> Values") != NULL);
    char want_rows[64];
    snprintf(want_rows, sizeof want_rows, "actual rows=%lld ", (long long)k);
    CHECK(strstr(txt, want_rows) != NULL);
    hs_buf_free(&ex);
    CHECK_OK(xo_explain(p, false, &ex, &err), &err);
    CHECK(strstr(hs_buf_cstr(&ex), "actual") == NULL);
    hs_buf_free(&ex);

    xo_free(p);
    hs_free(got);
    hs_free(want);
    hs_free(rows);
    hs_field_clear(&s);
}

static void test_filter_project(void)
{
    LEAK_START();
    xo_ctx ctx = {0};
    filter_project_case(&ctx, 5000, 777);
    filter_project_case(&ctx, 0, 10);
    LEAK_END();
}

/* The same on a pool of 4 threads: results in input order. */
static void test_filter_project_parallel(void)
{
    hs_pool *pool;
    hs_error err = {0};
    CHECK_OK(hs_pool_create(4, &pool, &err), &err);
    LEAK_START();
    xo_ctx ctx = {.pool = pool, .threads = 4};
    filter_project_case(&ctx, 50000, 1000);
    filter_project_case(&ctx, 3001, 3000);
    filter_project_case(&ctx, 7, 1);
    /* an error in one of the parallel batches is reported */
    hs_field s;
    schema3(&s);
    xt_val *rows = random_rows(20000);
    for (int64_t r = 0; r < 20000; r++)
        rows[r * 3].null = r != 15000;
    rows[15000 * 3].i = 0;
    xo_op *v = xt_values(&ctx, &s, rows, 20000, 500), *f;
    ex_expr *pred;
    CHECK_OK(ex_parse_filter("10 / a > 1", &v->schema, &pred, &err), &err);
    CHECK_OK(xo_filter(v, pred, &f, &err), &err);
    xt_val *got = NULL;
    int64_t n_got;
    CHECK(xt_run(f, &got, &n_got, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "division by zero") != NULL);
    xo_free(f);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
    hs_pool_destroy(pool);
}

static void test_limit(void)
{
    LEAK_START();
    hs_field s;
    schema3(&s);
    int64_t n = 3000;
    xt_val *rows = random_rows(n);
    const int64_t cases[][2] = {{0, 0}, {5, 0}, {5, 998}, {1000, 1}, {-1, 2500}, {-1, 0},
                                {10, 2995}, {10, 3000}, {100000, 0}, {250, 250}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        xo_ctx ctx = {0};
        xo_op *v = xt_values(&ctx, &s, rows, n, 500), *l;
        hs_error err = {0};
        CHECK_OK(xo_limit(v, cases[c][0], cases[c][1], &l, &err), &err);
        xt_val *got;
        int64_t n_got;
        CHECK_OK(xt_run(l, &got, &n_got, &err), &err);
        int64_t start = cases[c][1] < n ? cases[c][1] : n;
        int64_t want = n - start;
        if (cases[c][0] >= 0 && want > cases[c][0])
            want = cases[c][0];
        CHECK(n_got == want);
        CHECK(xt_rows_equal(got, rows + start * 3, want, 3));
        /* stops pulling: never more than one batch of 500 beyond what it needed */
        if (cases[c][0] >= 0)
            CHECK(v->rows_out <= start + want + 500);
        xo_free(l);
        hs_free(got);
    }
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

static void test_cancel(void)
{
    LEAK_START();
    hs_field s;
    schema3(&s);
    atomic_int cancel = 0;
    xo_ctx ctx = {.cancel = &cancel};
    xt_val *rows = random_rows(100);
    xo_op *v = xt_values(&ctx, &s, rows, 100, 10);
    hs_batch *b;
    hs_error err = {0};
    CHECK_OK(xo_next(v, &b, &err), &err);
    CHECK(b && b->n_rows == 10);
    hs_batch_free(b);
    atomic_store(&cancel, 1);
    CHECK(xo_next(v, &b, &err) == HS_CANCELLED);
    CHECK(b == NULL);
    CHECK(strstr(err.msg, "cancel") != NULL);
    xo_free(v);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

static bool closed_flag;
static void on_close(void *owner)
{
    *(bool *)owner = true;
}

static void test_stream(void)
{
    LEAK_START();
    hs_field s;
    schema3(&s);
    xo_ctx ctx = {0};
    int64_t n = 1234;
    xt_val *rows = random_rows(n);
    xo_op *v = xt_values(&ctx, &s, rows, n, 100);
    struct ArrowArrayStream st;
    hs_error err = {0};
    closed_flag = false;
    CHECK_OK(xo_to_stream(v, on_close, &closed_flag, &st, &err), &err);
    struct ArrowSchema sch;
    CHECK(st.get_schema(&st, &sch) == 0);
    CHECK(sch.n_children == 3 && strcmp(sch.children[1]->name, "b") == 0);
    sch.release(&sch);
    /* read back through the importer and compare values */
    hs_batch_source src;
    CHECK_OK(hs_arrow_import_stream(&st, &src, &err), &err);
    int64_t total = 0;
    bool same = true;
    for (;;) {
        hs_batch *b;
        CHECK_OK(src.next(src.ctx, &b, &err), &err);
        if (!b)
            break;
        for (int64_t r = 0; r < b->n_rows; r++)
            for (int c = 0; c < 3; c++) {
                xt_val x;
                xt_read(b->cols[c], r, &x);
                same = same && xt_val_cmp(&x, &rows[(total + r) * 3 + c]) == 0;
            }
        total += b->n_rows;
        hs_batch_free(b);
    }
    CHECK(total == n);
    CHECK(same);
    CHECK(!closed_flag);
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    CHECK(closed_flag);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

static void test_errors(void)
{
    LEAK_START();
    hs_field s;
    schema3(&s);
    xo_ctx ctx = {0};
    xt_val *rows = random_rows(50);
    /* a batch whose width does not match the schema is refused (and freed) */
    hs_field s2;
    hs_field_init(&s2, "", HS_TYPE_STRUCT, false);
    xt_add_field(&s2, "a", HS_TYPE_INT64);
    hs_batch *b = xt_batch(&s, rows, 50);
    xo_op *op;
    hs_error err = {0};
    CHECK(xo_values(&ctx, &s2, 1, &b, &op, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "3 columns") != NULL);
    hs_err_clear(&err);
    /* a filter whose evaluation fails reports the error */
    xo_op *v = xt_values(&ctx, &s, rows, 50, 50);
    ex_expr *pred;
    CHECK_OK(ex_parse_filter("a / (a - a) > 1", &v->schema, &pred, &err), &err);
    xo_op *f;
    CHECK_OK(xo_filter(v, pred, &f, &err), &err);
    xt_val *got = NULL;
    int64_t n_got;
    CHECK(xt_run(f, &got, &n_got, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "division by zero") != NULL);
    xo_free(f);
    hs_free(rows);
    hs_field_clear(&s);
    hs_field_clear(&s2);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_values_roundtrip);
    HS_RUN(test_filter_project);
    HS_RUN(test_filter_project_parallel);
    HS_RUN(test_limit);
    HS_RUN(test_cancel);
    HS_RUN(test_stream);
    HS_RUN(test_errors);
    return hs_test_summary();
}
