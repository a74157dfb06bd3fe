/*
 * tests/c/test_sql_bind.c - the SQL front end: name binding errors with
 * PostgreSQL's SQLSTATEs and positions, ex_bind_json's scope resolution,
 * and the plans the planner chooses (read from EXPLAIN): filter pushdown
 * into scans, hash joins on equalities, semi/anti joins for EXISTS and IN,
 * outer-join conjuncts kept above the join, vector search with an index.
 *
 * Oracles: the expected SQLSTATE/position are PostgreSQL 15's for the same
 * statements; row counts are known by construction (t: id 0..99, g = id %
 * 10, s = "s<id % 7>"; u: k 0..19 step 2 (even ids below 40)).
 */
#include "harness.h"
#include "memcount.h"

#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "expr/expr.h"
#include "hyperstream/sql.h"
#include "hyperstream/table.h"
#include "parquet/reader.h"
#include "table/table_int.h"

#include <jansson.h>
#include <pg_query.h>
#include <stdio.h>
#include <string.h>

static hs_table *make_table(hs_catalog *cat, const char *name, int which, hs_error *err)
{
    hs_field s, f;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    if (which == 0) {
        hs_field_init(&f, "id", HS_TYPE_INT64, false);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
        hs_field_init(&f, "g", HS_TYPE_INT32, true);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
        hs_field_init(&f, "s", HS_TYPE_STRING, true);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
    } else {
        hs_field_init(&f, "k", HS_TYPE_INT64, true);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
        hs_field_init(&f, "s", HS_TYPE_STRING, true);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
    }
    int n = which == 0 ? 100 : 20;
    hs_batch *b;
    if (hs_batch_create(&s, n, &b, NULL) != HS_OK) abort();
    for (int64_t i = 0; i < n; i++) {
        char buf[16];
        if (which == 0) {
            int32_t g = (int32_t)(i % 10);
            int len = snprintf(buf, sizeof buf, "s%d", (int)(i % 7));
            if (hs_col_append_fixed(b->cols[0], &i) != HS_OK ||
                hs_col_append_fixed(b->cols[1], &g) != HS_OK ||
                hs_col_append_bytes(b->cols[2], buf, (size_t)len) != HS_OK)
                abort();
        } else {
            int64_t k = i * 2;
            int len = snprintf(buf, sizeof buf, "u%d", (int)i);
            if (hs_col_append_fixed(b->cols[0], &k) != HS_OK ||
                hs_col_append_bytes(b->cols[1], buf, (size_t)len) != HS_OK)
                abort();
        }
    }
    b->n_rows = n;
    struct ArrowSchema as;
    if (hs_arrow_export_schema(&s, &as, err) != HS_OK) abort();
    hs_field_clear(&s);
    hs_table_create_options o = HS_TABLE_CREATE_OPTIONS_INIT;
    o.arrow_schema = &as;
    hs_table *t = NULL;
    hs_status st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    struct ArrowArrayStream stream;
    if (st != HS_OK || hs_arrow_export_one_batch(b, &stream, err) != HS_OK ||
        hs_table_append(t, &stream, err) != HS_OK) {
        hs_table_close(t);
        return NULL;
    }
    return t;
}

typedef struct fixture {
    hs_catalog *cat;
    hs_table *t, *u;
    hs_session *s;
} fixture;

static bool setup(fixture *fx, const char *dir, hs_error *err)
{
    memset(fx, 0, sizeof *fx);
    char wh[1024];
    snprintf(wh, sizeof wh, "%s/%s", hs_test_tmpdir(), dir);
    if (hs_catalog_open_path(wh, &fx->cat, err) != HS_OK)
        return false;
    fx->t = make_table(fx->cat, "t", 0, err);
    fx->u = fx->t ? make_table(fx->cat, "u", 1, err) : NULL;
    return fx->u && hs_session_open(NULL, &fx->s, err) == HS_OK &&
           hs_session_register(fx->s, "t", fx->t, err) == HS_OK &&
           hs_session_register(fx->s, "u", fx->u, err) == HS_OK;
}

static void teardown(fixture *fx)
{
    hs_session_close(fx->s);
    hs_table_close(fx->t);
    hs_table_close(fx->u);
    hs_catalog_close(fx->cat);
    pq_footer_cache_clear();
    tbl_index_cache_clear();
}

/* Rows of the statement's result (-1 on error). */
static int64_t count_rows(hs_session *s, const char *sql, hs_error *err)
{
    hs_result *r = NULL;
    if (hs_session_execute(s, sql, &r, err) != HS_OK)
        return -1;
    struct ArrowArrayStream st;
    int64_t n = 0;
    if (hs_result_stream(r, &st, err) != HS_OK) {
        hs_result_free(r);
        return -1;
    }
    hs_result_free(r);
    for (;;) {
        struct ArrowArray a;
        if (st.get_next(&st, &a) != 0) {
            n = -1;
            break;
        }
        if (!a.release)
            break;
        n += a.length;
        a.release(&a);
    }
    st.release(&st);
    return n;
}

/* EXPLAIN's text (caller frees with hs_free), NULL on error. */
static char *explain(hs_session *s, const char *sql, hs_error *err)
{
    char q[2048];
    snprintf(q, sizeof q, "EXPLAIN %s", sql);
    hs_result *r = NULL;
    if (hs_session_execute(s, q, &r, err) != HS_OK)
        return NULL;
    struct ArrowArrayStream st;
    hs_buf out = {0};
    if (hs_result_stream(r, &st, err) == HS_OK) {
        struct ArrowSchema sch;
        if (st.get_schema(&st, &sch) == 0) {
            hs_field f;
            if (hs_arrow_import_schema(&sch, &f, err) == HS_OK) {
                for (;;) {
                    struct ArrowArray a;
                    if (st.get_next(&st, &a) != 0 || !a.release)
                        break;
                    hs_batch *b = NULL;
                    if (hs_arrow_import_batch(&a, &f, &b, err) != HS_OK)
                        break;
                    const hs_column *c = b->cols[0];
                    const int32_t *off = (const int32_t *)c->offsets.data;
                    for (int64_t i = 0; i < b->n_rows; i++) {
                        if (hs_buf_append(&out, c->values.data + off[i], (size_t)(off[i + 1] - off[i])) != HS_OK ||
                            hs_buf_append_byte(&out, '\n') != HS_OK)
                            abort();
                    }
                    hs_batch_free(b);
                }
                hs_field_clear(&f);
            }
            sch.release(&sch);
        }
        st.release(&st);
    }
    hs_result_free(r);
    return (char *)hs_buf_detach(&out, NULL);
}

static void expect_error(hs_session *s, const char *sql, const char *state, int pos)
{
    hs_result *r = NULL;
    hs_error err = {0};
    hs_status st = hs_session_execute(s, sql, &r, &err);
    CHECK(st != HS_OK);
    CHECK(r == NULL);
    if (strcmp(hs_session_sqlstate(s), state) != 0 || (pos >= 0 && hs_session_error_position(s) != pos))
        fprintf(stderr, "  %s: got %s at %d (%s), want %s at %d\n", sql, hs_session_sqlstate(s),
                hs_session_error_position(s), err.msg, state, pos);
    CHECK(strcmp(hs_session_sqlstate(s), state) == 0);
    if (pos >= 0)
        CHECK(hs_session_error_position(s) == pos);
}

static void test_errors(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "errors", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    expect_error(fx.s, "SELECT nosuch FROM t", "42703", 8);
    expect_error(fx.s, "SELECT t.nosuch FROM t", "42703", 8);
    expect_error(fx.s, "SELECT s FROM t, u", "42702", 8);
    expect_error(fx.s, "SELECT * FROM missing", "42P01", 15);
    expect_error(fx.s, "SELECT id FROM t WHERE\n  nosuch = 1", "42703", 26);
    expect_error(fx.s, "SELECT id, count(*) FROM t", "42803", 8);
    expect_error(fx.s, "SELECT g FROM t GROUP BY g HAVING id > 1", "42803", 35);
    expect_error(fx.s, "SELECT * FROM t WHERE sum(id) > 1", "42803", 23);
    expect_error(fx.s, "SELECT id FROM t ORDER BY 2", "42P10", 27);
    expect_error(fx.s, "SELECT id FROM t WHERE id IN (SELECT k, s FROM u)", "42601", -1);
    expect_error(fx.s, "SELECT FROM WHERE", "42601", -1);
    expect_error(fx.s, "SELECT row_number() OVER () FROM t", "0A000", 8);
    expect_error(fx.s, "SELECT (SELECT k FROM u) FROM t", "21000", -1);
    /* success resets the state */
    CHECK(count_rows(fx.s, "SELECT 1", &err) == 1);
    CHECK(strcmp(hs_session_sqlstate(fx.s), "00000") == 0);
    CHECK(hs_session_error_position(fx.s) == 0);
    teardown(&fx);
    CHECK(hs_mem_live_count() == live0);
}

static void test_results(void)
{
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "results", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    CHECK(count_rows(fx.s, "SELECT * FROM t", &err) == 100);
    CHECK(count_rows(fx.s, "SELECT * FROM t WHERE g = 3", &err) == 10);
    CHECK(count_rows(fx.s, "SELECT * FROM t JOIN u ON t.id = u.k", &err) == 20);
    CHECK(count_rows(fx.s, "SELECT * FROM t LEFT JOIN u ON t.id = u.k WHERE u.k IS NULL", &err) == 80);
    CHECK(count_rows(fx.s, "SELECT * FROM t LEFT JOIN u ON t.id = u.k AND u.k > 10", &err) == 100);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.id)", &err) == 20);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.id)", &err) == 80);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE id NOT IN (SELECT k FROM u)", &err) == 80);
    CHECK(count_rows(fx.s, "SELECT g, count(*) FROM t GROUP BY g", &err) == 10);
    CHECK(count_rows(fx.s, "SELECT DISTINCT s FROM t", &err) == 7);
    CHECK(count_rows(fx.s, "SELECT id FROM t ORDER BY id DESC LIMIT 5 OFFSET 3", &err) == 5);
    CHECK(count_rows(fx.s, "SELECT id FROM t UNION SELECT k FROM u", &err) == 100);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE id > (SELECT max(k) FROM u)", &err) == 61);
    /* a correlated scalar subquery: ids above their group's average */
    CHECK(count_rows(fx.s, "SELECT id FROM t a WHERE id > (SELECT avg(id) FROM t b WHERE b.g = a.g)", &err) == 50);
    teardown(&fx);
}

static bool has(const char *plan, const char *what)
{
    bool ok = plan && strstr(plan, what) != NULL;
    if (!ok)
        fprintf(stderr, "  plan lacks \"%s\":\n%s\n", what, plan ? plan : "(null)");
    return ok;
}

static void test_plans(void)
{
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "plans", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    char *p = explain(fx.s, "SELECT s FROM t WHERE g = 3 AND id < 50", &err);
    CHECK(has(p, "Scan  (filter: (g = 3) AND (id < 50))"));
    CHECK(p && !strstr(p, "Filter"));
    hs_free(p);
    p = explain(fx.s, "SELECT t.s FROM t, u WHERE t.id = u.k AND u.s = 'u3'", &err);
    CHECK(has(p, "HashJoin"));
    CHECK(has(p, "filter: (s = 'u3'"));
    hs_free(p);
    /* the nullable side's WHERE conjunct stays above the join */
    p = explain(fx.s, "SELECT * FROM t LEFT JOIN u ON t.id = u.k WHERE u.s = 'u1'", &err);
    CHECK(has(p, "Filter"));
    CHECK(has(p, "Left"));
    hs_free(p);
    p = explain(fx.s, "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.id)", &err);
    CHECK(has(p, "Semi"));
    hs_free(p);
    p = explain(fx.s, "SELECT id FROM t WHERE id NOT IN (SELECT k FROM u)", &err);
    CHECK(has(p, "Anti"));
    hs_free(p);
    p = explain(fx.s, "SELECT g, count(*) FROM t GROUP BY g ORDER BY 2 DESC LIMIT 3", &err);
    CHECK(has(p, "HashAggregate"));
    CHECK(has(p, "TopK"));
    hs_free(p);
    /* only the referenced columns are read */
    p = explain(fx.s, "SELECT count(*) FROM t WHERE g = 1", &err);
    CHECK(p && !strstr(p, " s,") && !strstr(p, "(s)"));
    hs_free(p);
    teardown(&fx);
}

/* ex_bind_json: a two-table scope, qualified and unqualified names. */
typedef struct two_tables {
    const char *qual[4], *name[4];
} two_tables;

static int resolve(void *ctx, const char *const *names, int n)
{
    two_tables *tt = ctx;
    int hit = -1;
    for (int i = 0; i < 4; i++) {
        if (strcmp(tt->name[i], names[n - 1]) != 0 || (n > 1 && strcmp(tt->qual[i], names[n - 2]) != 0))
            continue;
        if (hit >= 0)
            return -2;
        hit = i;
    }
    return hit;
}

static hs_status bind_where(const char *sql, const hs_field *schema, two_tables *tt, ex_expr **e,
                            hs_error *err)
{
    PgQueryParseResult r = pg_query_parse(sql);
    if (r.error) {
        pg_query_free_parse_result(r);
        return HS_INVALID;
    }
    json_t *root = json_loads(r.parse_tree, 0, NULL);
    pg_query_free_parse_result(r);
    json_t *w = json_object_get(json_object_get(json_object_get(json_array_get(
        json_object_get(root, "stmts"), 0), "stmt"), "SelectStmt"), "whereClause");
    ex_scope sc = {.schema = schema, .column = resolve, .ctx = tt};
    memset(err, 0, sizeof *err);
    hs_status st = ex_bind_json(w, sql, &sc, true, e, err);
    json_decref(root);
    return st;
}

static void test_bind_json(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_field s, f;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    const char *names[4] = {"id", "x", "id", "y"};
    hs_type types[4] = {HS_TYPE_INT64, HS_TYPE_FLOAT64, HS_TYPE_INT32, HS_TYPE_STRING};
    for (int i = 0; i < 4; i++) {
        hs_field_init(&f, names[i], types[i], true);
        f.field_id = i + 1;
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
    }
    two_tables tt = {{"a", "a", "b", "b"}, {"id", "x", "id", "y"}};
    hs_error err = {0};
    ex_expr *e = NULL;
    CHECK(bind_where("SELECT 1 FROM a, b WHERE a.id = b.id AND x > 1.5", &s, &tt, &e, &err) == HS_OK);
    hs_buf ids = {0};
    CHECK(e && ex_field_ids(e, &ids) == HS_OK && ids.len == 3 * sizeof(int32_t));
    hs_buf_free(&ids);
    ex_free(e);
    e = NULL;
    CHECK(bind_where("SELECT 1 FROM a, b WHERE id = 1", &s, &tt, &e, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "column reference \"id\" is ambiguous at character 26") != NULL);
    CHECK(bind_where("SELECT 1 FROM a, b WHERE b.x = 1", &s, &tt, &e, &err) == HS_NOT_FOUND);
    CHECK(strstr(err.msg, "column \"b.x\" does not exist at character 26") != NULL);
    CHECK(bind_where("SELECT 1 FROM a, b WHERE y", &s, &tt, &e, &err) == HS_INVALID);
    if (!strstr(err.msg, "must be type boolean"))
        fprintf(stderr, "  message: %s\n", err.msg);
    CHECK(strstr(err.msg, "must be type boolean") != NULL);
    CHECK(e == NULL);
    hs_field_clear(&s);
    CHECK(hs_mem_live_count() == live0);
}

int main(void)
{
    HS_RUN(test_bind_json);
    HS_RUN(test_errors);
    HS_RUN(test_results);
    HS_RUN(test_plans);
    return hs_test_summary();
}
