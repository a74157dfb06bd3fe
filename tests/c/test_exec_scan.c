/*
 * tests/c/test_exec_scan.c - the table sources: Scan (columns, filter text
 * pushed down to pruning and sidecar indexes, time travel, positional
 * field ids, EXPLAIN counters) and VectorSearch (top-k with the distance
 * column), over a real table of two data files.
 *
 * Oracles: the rows the test appended (known by construction: id = row
 * number, v = id * 0.5 with every 10th row NULL at id % 10 == 3, cat =
 * "c" id % 3, emb = (id, id % 7, 1, 0)), filtered and top-k'd by brute force
 * in C (exact L2 distances).
 */
#include "exec_testutil.h"

#include "columnar/arrow_c.h"
#include "expr/expr.h"
#include "hyperstream/index.h"
#include "hyperstream/table.h"
#include "parquet/reader.h"
#include "table/table_int.h"

#include <stdio.h>

/* The table layer caches manifests and footers per table: leaks are
 * counted from before the table is opened to after it is closed. */
#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END()                                                                 \
    do {                                                                           \
        pq_footer_cache_clear(); /* the process-wide caches are not leaks */      \
        tbl_index_cache_clear();                                                   \
        CHECK(hs_mem_live_count() == live0_);                                      \
    } while (0)

static void make_schema(hs_field *s)
{
    hs_field f, elem;
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(s, &f) != HS_OK) abort();
    hs_field_init(&f, "v", HS_TYPE_FLOAT64, true);
    if (hs_field_add_child(s, &f) != HS_OK) abort();
    hs_field_init(&f, "cat", HS_TYPE_STRING, true);
    if (hs_field_add_child(s, &f) != HS_OK) abort();
    hs_field_init(&elem, "item", HS_TYPE_FLOAT32, true);
    hs_field_init(&f, "emb", HS_TYPE_FIXED_LIST, true);
    f.width = 4;
    if (hs_field_add_child(&f, &elem) != HS_OK || hs_field_add_child(s, &f) != HS_OK) abort();
}

static hs_batch *make_rows(int64_t start, int64_t n)
{
    hs_field s;
    make_schema(&s);
    hs_batch *b;
    if (hs_batch_create(&s, n, &b, NULL) != HS_OK) abort();
    hs_field_clear(&s);
    for (int64_t i = start; i < start + n; i++) {
        double v = (double)i * 0.5;
        char buf[16];
        int len = snprintf(buf, sizeof buf, "c%d", (int)(i % 3));
        float e[4] = {(float)i, (float)(i % 7), 1, 0};
        if (hs_col_append_fixed(b->cols[0], &i) != HS_OK ||
            (i % 10 == 3 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &v)) != HS_OK ||
            hs_col_append_bytes(b->cols[2], buf, (size_t)len) != HS_OK ||
            hs_col_append_fixed_n(b->cols[3]->children[0], e, 4) != HS_OK ||
            hs_col_list_end(b->cols[3]) != HS_OK)
            abort();
    }
    b->n_rows = n;
    return b;
}

static hs_status append_rows(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    struct ArrowArrayStream s;
    HS_TRY(hs_arrow_export_one_batch(make_rows(start, n), &s, err));
    return hs_table_append(t, &s, err);
}

static hs_table *setup(hs_catalog **cat, const char *name, int64_t *snap1, hs_error *err)
{
    char wh[1024];
    snprintf(wh, sizeof wh, "%s/%s", hs_test_tmpdir(), name);
    if (hs_catalog_open_path(wh, cat, err) != HS_OK)
        return NULL;
    hs_batch *b = make_rows(0, 0);
    struct ArrowSchema as;
    if (hs_arrow_export_schema(&b->schema, &as, err) != HS_OK)
        return NULL;
    hs_batch_free(b);
    hs_table_create_options o = HS_TABLE_CREATE_OPTIONS_INIT;
    o.arrow_schema = &as;
    hs_table *t = NULL;
    hs_status st = hs_table_create(*cat, "t", &o, &t, err);
    as.release(&as);
    if (st != HS_OK || append_rows(t, 0, 1000, err) != HS_OK)
        return NULL;
    *snap1 = hs_table_current_snapshot_id(t);
    if (append_rows(t, 1000, 1000, err) != HS_OK)
        return NULL;
    return t;
}

static void test_scan(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    int64_t snap1 = 0;
    hs_table *t = setup(&cat, "exec_scan", &snap1, &err);
    if (!t)
        fprintf(stderr, "setup: %s\n", err.msg);
    REQUIRE(t);
    xo_ctx ctx = {0};
    const char *cols[] = {"cat", "id", "v"};
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = 3;
    o.filter = "id >= 1500";
    xo_op *sc;
    CHECK_OK(xo_scan(&ctx, t, &o, &sc, &err), &err);
    REQUIRE(sc->schema.n_children == 3);
    CHECK(strcmp(sc->schema.children[0].name, "cat") == 0);
    CHECK(sc->schema.children[0].field_id == 1 && sc->schema.children[2].field_id == 3);
    /* a residual filter on top, bound against the scan's positional schema */
    ex_expr *pred;
    CHECK_OK(ex_parse_filter("cat = 'c1' OR v IS NULL", &sc->schema, &pred, &err), &err);
    xo_op *f;
    CHECK_OK(xo_filter(sc, pred, &f, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(f, &got, &n_got, &err), &err);
    int64_t k = 0;
    bool same = true;
    for (int64_t i = 1500; i < 2000; i++) {
        if (!(i % 3 == 1 || i % 10 == 3))
            continue;
        same = same && k < n_got && got[k * 3 + 1].i == i && got[k * 3 + 2].null == (i % 10 == 3) &&
               (got[k * 3 + 2].null || got[k * 3 + 2].d == (double)i * 0.5) &&
               got[k * 3].s[1] == '0' + (char)(i % 3);
        k++;
    }
    CHECK(n_got == k);
    CHECK(same);
    hs_buf ex = {0};
    CHECK_OK(xo_explain(f, true, &ex, &err), &err);
    const char *txt = hs_buf_cstr(&ex);
    CHECK(strstr(txt, "-> Scan  (filter: id >= 1500)") != NULL);
    CHECK(strstr(txt, "Files: 2 total, 1 pruned by partition/bounds") != NULL);
    CHECK(strstr(txt, "actual rows=500 ") != NULL);   /* the scan's rows */
    if (!strstr(txt, "Files: 2 total, 1 pruned"))
        fprintf(stderr, "%s", txt);
    hs_buf_free(&ex);
    xo_free(f);
    hs_free(got);

    /* time travel: the first snapshot has 1000 rows; all columns */
    hs_scan_options o2 = HS_SCAN_OPTIONS_INIT;
    o2.use_snapshot_id = 1;
    o2.snapshot_id = snap1;
    CHECK_OK(xo_scan(&ctx, t, &o2, &sc, &err), &err);
    CHECK(sc->schema.n_children == 4);
    /* nested ids are above the top-level ones */
    CHECK(sc->schema.children[3].field_id == 4 && sc->schema.children[3].children[0].field_id == 5);
    int64_t total = 0;
    for (;;) {
        hs_batch *b;
        CHECK_OK(xo_next(sc, &b, &err), &err);
        if (!b)
            break;
        CHECK(b->n_rows <= XO_BATCH_ROWS && b->n_rows > 0);
        CHECK(b->schema.children[0].field_id == 1);
        total += b->n_rows;
        hs_batch_free(b);
    }
    CHECK(total == 1000);
    xo_free(sc);

    /* errors surface in the constructor */
    hs_scan_options o3 = HS_SCAN_OPTIONS_INIT;
    o3.filter = "nope > 1";
    hs_err_clear(&err);
    CHECK(xo_scan(&ctx, t, &o3, &sc, &err) == HS_NOT_FOUND);
    CHECK(strstr(err.msg, "nope") != NULL);
    hs_table_close(t);
    hs_catalog_close(cat);
    LEAK_END();
}

static void test_scan_index(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    int64_t snap1 = 0;
    hs_table *t = setup(&cat, "exec_scan_idx", &snap1, &err);
    REQUIRE(t);
    hs_index_options io = HS_INDEX_OPTIONS_INIT;
    io.kind = "inverted";
    CHECK_OK(hs_table_add_index(t, "cat", &io, &err), &err);
    xo_ctx ctx = {0};
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    o.filter = "cat = 'c2'";
    xo_op *sc;
    CHECK_OK(xo_scan(&ctx, t, &o, &sc, &err), &err);
    xt_val *got = NULL;
    int64_t n = 0;
    /* emb cannot be read by xt_read: count rows instead */
    for (;;) {
        hs_batch *b;
        CHECK_OK(xo_next(sc, &b, &err), &err);
        if (!b)
            break;
        for (int64_t i = 0; i < b->n_rows; i++)
            CHECK(HS_COL_VALUES(b->cols[0], int64_t)[i] % 3 == 2);
        n += b->n_rows;
        hs_batch_free(b);
    }
    CHECK(n == 666);
    hs_buf ex = {0};
    CHECK_OK(xo_explain(sc, true, &ex, &err), &err);
    CHECK(strstr(hs_buf_cstr(&ex), "Index: 2 files used an index") != NULL);
    hs_buf_free(&ex);
    xo_free(sc);
    hs_free(got);
    hs_table_close(t);
    hs_catalog_close(cat);
    LEAK_END();
}

static void test_vsearch(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    int64_t snap1 = 0;
    hs_table *t = setup(&cat, "exec_vsearch", &snap1, &err);
    REQUIRE(t);
    xo_ctx ctx = {0};
    float q[4] = {500.2f, 3, 1, 0};
    hs_search_options so = HS_SEARCH_OPTIONS_INIT;
    so.column = "emb";
    so.query = q;
    so.dim = 4;
    so.k = 7;
    const char *cols[] = {"id"};
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = 1;
    o.filter = "id % 2 = 0";
    xo_op *vs;
    CHECK_OK(xo_vsearch(&ctx, t, &o, &so, &vs, &err), &err);
    REQUIRE(vs->schema.n_children == 2);
    CHECK(vs->schema.children[1].type == HS_TYPE_FLOAT64);
    CHECK(vs->schema.children[1].field_id == 2);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(vs, &got, &n_got, &err), &err);
    /* brute force: even ids by exact L2 distance */
    double best_d[7];
    int64_t best_id[7];
    int nb = 0;
    for (int64_t i = 0; i < 2000; i += 2) {
        double dx = (double)(float)i - q[0], dy = (double)(i % 7) - q[1];
        double d = sqrt(dx * dx + dy * dy);
        int pos = nb;
        while (pos > 0 && best_d[pos - 1] > d)
            pos--;
        if (pos >= 7)
            continue;
        for (int m = (nb < 7 ? nb : 6); m > pos; m--) {
            best_d[m] = best_d[m - 1];
            best_id[m] = best_id[m - 1];
        }
        best_d[pos] = d;
        best_id[pos] = i;
        if (nb < 7)
            nb++;
    }
    CHECK(n_got == 7);
    bool same = n_got == 7;
    for (int i = 0; i < 7 && same; i++)
        same = got[i * 2].i == best_id[i] && fabs(got[i * 2 + 1].d - best_d[i]) < 1e-3;
    CHECK(same);
    xo_free(vs);
    hs_free(got);
    hs_table_close(t);
    hs_catalog_close(cat);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_scan);
    HS_RUN(test_scan_index);
    HS_RUN(test_vsearch);
    return hs_test_summary();
}
