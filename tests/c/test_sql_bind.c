/*
 * tests/c/test_sql_bind.c - the SQL front end: name binding errors with
 * PostgreSQL's SQLSTATEs and positions, ex_bind_json's scope resolution,
 * and the plans the planner chooses (read from EXPLAIN): filter pushdown
 * into scans, hash joins on equalities, semi/anti joins for EXISTS and IN,
 * outer-join conjuncts kept above the join, vector search with an index;
 * unknown functions (42883) and errors raised while a result streams
 * (the session's SQLSTATE and message).
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

/* rows of table 2 ("big": id 0..BIG_N-1, several executor batches) */
#define BIG_N 200000

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
    } else if (which == 1) {
        hs_field_init(&f, "k", HS_TYPE_INT64, true);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
        hs_field_init(&f, "s", HS_TYPE_STRING, true);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
    } else {
        hs_field_init(&f, "id", HS_TYPE_INT64, false);
        if (hs_field_add_child(&s, &f) != HS_OK) abort();
    }
    int n = which == 0 ? 100 : which == 1 ? 20 : BIG_N;
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
        } else if (which == 2) {
            if (hs_col_append_fixed(b->cols[0], &i) != HS_OK)
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
    expect_error(fx.s, "SELECT sum(id) OVER (ORDER BY id, id RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t", "42P20", 8);
    expect_error(fx.s, "SELECT (SELECT k FROM u) FROM t", "21000", -1);
    /* string_agg of a non-text column, with ORDER BY (fuzz_sql found a double free) */
    expect_error(fx.s, "SELECT g, string_agg(3, ',' ORDER BY s) FROM t GROUP BY ROLLUP (g)", "42883", 11);
    /* an unknown function is 42883 (undefined_function), as PostgreSQL;
     * a PostgreSQL function we lack is 0A000; argument errors come first */
    expect_error(fx.s, "SELECT nosuchfunc(1)", "42883", 8);
    expect_error(fx.s, "SELECT id, nosuchfunc(s, id) FROM t", "42883", 12);
    expect_error(fx.s, "SELECT nosuchfunc(nosuchcol) FROM t", "42703", 19);
    expect_error(fx.s, "SELECT to_hex(id) FROM t", "0A000", 8);
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

/* An error met while the rows stream (after hs_session_execute returned:
 * division by zero, a bad cast in a later batch) sets the session's
 * SQLSTATE and message, as PostgreSQL reports it for the statement;
 * the stream's get_last_error says the same. */
static void test_stream_errors(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "stream_errors", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    hs_table *big = make_table(fx.cat, "big", 2, &err);
    CHECK(big != NULL);
    if (!big) {
        teardown(&fx);
        return;
    }
    CHECK_OK(hs_session_register(fx.s, "big", big, &err), &err);
    static const struct { const char *sql, *state, *msg; } qs[] = {
        {"SELECT 100 / (id - 150000) AS x FROM big", "22012", "division by zero"},
        {"SELECT CAST(CASE WHEN id = 190000 THEN 'x' ELSE '1' END AS integer) FROM big",
         "22P02", "invalid input syntax"},
    };
    for (int q = 0; q < 2; q++) {
        /* a failed statement first: the stream's error must replace its state */
        expect_error(fx.s, "SELECT * FROM missing", "42P01", 15);
        hs_result *r = NULL;
        CHECK_OK(hs_session_execute(fx.s, qs[q].sql, &r, &err), &err);
        CHECK(strcmp(hs_session_sqlstate(fx.s), "00000") == 0);
        CHECK(strcmp(hs_session_error_message(fx.s), "") == 0);
        struct ArrowArrayStream st;
        CHECK_OK(hs_result_stream(r, &st, &err), &err);
        hs_result_free(r);
        int rc = 0;
        int64_t n = 0;
        for (;;) {
            struct ArrowArray a;
            rc = st.get_next(&st, &a);
            if (rc != 0 || !a.release)
                break;
            n += a.length;
            a.release(&a);
        }
        CHECK(rc != 0);
        CHECK(n > 0 && n < BIG_N);   /* rows came before the error */
        const char *m = st.get_last_error(&st);
        CHECK(m && strstr(m, qs[q].msg));
        if (strcmp(hs_session_sqlstate(fx.s), qs[q].state) != 0)
            fprintf(stderr, "  %s: %s (%s)\n", qs[q].sql, hs_session_sqlstate(fx.s), m);
        CHECK(strcmp(hs_session_sqlstate(fx.s), qs[q].state) == 0);
        CHECK(strstr(hs_session_error_message(fx.s), qs[q].msg) != NULL);
        CHECK(hs_session_error_position(fx.s) == 0);
        st.release(&st);
        /* and the next success clears both */
        CHECK(count_rows(fx.s, "SELECT 1", &err) == 1);
        CHECK(strcmp(hs_session_sqlstate(fx.s), "00000") == 0);
        CHECK(strcmp(hs_session_error_message(fx.s), "") == 0);
    }
    CHECK_OK(hs_session_unregister(fx.s, "big", &err), &err);
    hs_table_close(big);
    teardown(&fx);
    CHECK(hs_mem_live_count() == live0);
}

static bool has(const char *plan, const char *what)
{
    bool ok = plan && strstr(plan, what) != NULL;
    if (!ok)
        fprintf(stderr, "  plan lacks \"%s\":\n%s\n", what, plan ? plan : "(null)");
    return ok;
}

/* Subqueries over functions of the outer row run through an Apply
 * (sql/plan_apply.c), planned once per outer row: counts known by
 * construction (g = id % 10, ten rows per g), the 21000 of a subquery
 * giving two rows, and no memory left behind. */
static void test_apply(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "apply", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    /* some x in 1..g above 5: g >= 6 */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM generate_series(1, t.g) x WHERE x > 5)", &err) == 40);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM generate_series(1, g) x WHERE x > 5)", &err) == 60);
    /* count over no rows is 0, sum NULL */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (SELECT count(*) FROM generate_series(1, t.g) x) = t.g", &err) == 100);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (SELECT sum(x) FROM generate_series(1, t.g) x) IS NULL", &err) == 10);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE 7 = ANY (SELECT * FROM generate_series(t.g, 9))", &err) == 80);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (SELECT count(*) FROM u JOIN generate_series(0, t.id) x ON u.k = x) = 3", &err) == 2);
    char *plan = explain(fx.s, "SELECT (SELECT count(*) FROM generate_series(1, t.g) x) FROM t", &err);
    CHECK(has(plan, "Apply"));
    hs_free(plan);
    /* two rows for one outer row: 21000, from execute or from the stream */
    hs_result *r = NULL;
    if (hs_session_execute(fx.s, "SELECT (SELECT x FROM generate_series(1, t.g) x) FROM t", &r, &err) == HS_OK) {
        struct ArrowArrayStream st;
        CHECK_OK(hs_result_stream(r, &st, &err), &err);
        hs_result_free(r);
        struct ArrowArray a;
        int rc;
        while ((rc = st.get_next(&st, &a)) == 0 && a.release)
            a.release(&a);
        CHECK(rc != 0);
        st.release(&st);
    }
    CHECK(strcmp(hs_session_sqlstate(fx.s), "21000") == 0);
    expect_error(fx.s, "SELECT (SELECT count(*) FROM unnest(t.nope) x) FROM t", "42703", 37);
    teardown(&fx);
    CHECK(hs_mem_live_count() == live0);
}


/* The subquery forms of plan_subq.c / plan_apply.c beyond EXISTS / IN:
 * correlated scalar subqueries of a grouped query (decorrelated against
 * its group keys, or applied per group), = ALL / <> ANY with PostgreSQL's
 * NULL results, ARRAY(subquery), subqueries inside aggregates and FILTER,
 * an Apply over CTEs of the statement.  t: id 0..99, g = id % 10;
 * u: k = 0, 2, ..., 38.  Expected counts worked out from those. */
static void test_subqueries(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "subq", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    /* u has k = g for even g only */
    CHECK(count_rows(fx.s, "SELECT * FROM (SELECT g, (SELECT count(*) FROM u WHERE u.k = t.g) AS c "
                           "FROM t GROUP BY g) d WHERE c = 1", &err) == 5);
    /* ks below g: ceil(g / 2), 2 for g = 3, 4 (by inequality: an Apply per group) */
    CHECK(count_rows(fx.s, "SELECT * FROM (SELECT g, (SELECT count(*) FROM u WHERE u.k < t.g) AS c "
                           "FROM t GROUP BY g) d WHERE c = 2", &err) == 2);
    char *plan = explain(fx.s, "SELECT g, (SELECT count(*) FROM u WHERE u.k < t.g) FROM t GROUP BY g", &err);
    CHECK(has(plan, "Apply"));
    hs_free(plan);
    plan = explain(fx.s, "SELECT g, (SELECT count(*) FROM u WHERE u.k = t.g) FROM t GROUP BY g", &err);
    CHECK(plan && !strstr(plan, "Apply"));   /* the equality one is a join */
    hs_free(plan);
    /* 10 rows per group, 10 more matches for even g */
    CHECK(count_rows(fx.s, "SELECT g FROM t GROUP BY g HAVING count(*) > "
                           "(SELECT count(*) FROM u WHERE u.k = t.g) * 10", &err) == 5);
    /* {k <= g} = {0, 2, ..}: all equal to g only for g = 0; some differ for the rest */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE g = ALL (SELECT k FROM u WHERE k <= t.g)", &err) == 10);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE g <> ANY (SELECT k FROM u WHERE k <= t.g)", &err) == 90);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE g = ALL (SELECT k FROM u WHERE k > 100)", &err) == 100);
    /* 0 = ALL {0}: true (g 0, 1); {0, NULL}: NULL (g 2, 3); {0, NULL, 4, ..}: false */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (0 = ALL (SELECT NULLIF(k, 2) FROM u WHERE k <= t.g)) IS NULL",
                     &err) == 20);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE 0 = ALL (SELECT NULLIF(k, 2) FROM u WHERE k <= t.g)", &err) == 20);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE cardinality(ARRAY(SELECT k FROM u WHERE k <= t.g ORDER BY k)) = 2",
                     &err) == 20);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE 4 = ANY (ARRAY(SELECT k FROM u WHERE k <= t.g))", &err) == 60);
    /* sum over t of [g even] = 50; FILTER with IN the same */
    CHECK(count_rows(fx.s, "SELECT * FROM (SELECT sum((SELECT count(*) FROM u WHERE u.k = t.g)) AS c FROM t) d "
                           "WHERE c = 50", &err) == 1);
    CHECK(count_rows(fx.s, "SELECT * FROM (SELECT count(*) FILTER (WHERE g IN (SELECT k FROM u)) AS c FROM t) d "
                           "WHERE c = 50", &err) == 1);
    /* an Apply reading CTEs: {0, 2, 4} within 0..g twice for g = 2, 3; the
     * recursive {0, 4, 8} for g = 4..7, and still whole for the outer query */
    CHECK(count_rows(fx.s, "WITH w AS (SELECT k FROM u WHERE k < 6) SELECT id FROM t WHERE "
                           "(SELECT count(*) FROM generate_series(0, t.g) x WHERE x IN (SELECT k FROM w)) = 2",
                     &err) == 20);
    CHECK(count_rows(fx.s, "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 4 FROM r WHERE i < 8) "
                           "SELECT id FROM t WHERE (SELECT count(*) FROM generate_series(0, t.g) x "
                           "WHERE x IN (SELECT i FROM r)) = 2", &err) == 40);
    CHECK(count_rows(fx.s, "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 4 FROM r WHERE i < 8) "
                           "SELECT id FROM t WHERE (SELECT count(*) FROM generate_series(0, t.g) x "
                           "WHERE x IN (SELECT i FROM r)) = 2 AND id IN (SELECT i FROM r)", &err) == 1);
    /* sum(t.g) is the outer block's (10 g per group): no k above it for g >= 4 */
    CHECK(count_rows(fx.s, "SELECT * FROM (SELECT g, (SELECT count(*) FROM u WHERE u.k > sum(t.g)) AS c "
                           "FROM t GROUP BY g) d WHERE c = 0", &err) == 6);
    /* an outer column beside count(*) over no rows: 0 + g */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (SELECT count(*) + t.g FROM u WHERE u.k > 100) = 3", &err) == 10);
    /* not semi joins per outer row: max of the even ks up to g is g for even g; LIMIT 0 */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE g IN (SELECT max(k) FROM u WHERE u.k <= t.g)", &err) == 50);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.g LIMIT 0)", &err) == 100);
    expect_error(fx.s, "SELECT id FROM t WHERE g > (SELECT sum(t.g) FROM u)", "42803", 36);   /* PostgreSQL: not allowed in WHERE */
    expect_error(fx.s, "SELECT g, (SELECT count(*) FROM u WHERE u.k = t.id) FROM t GROUP BY g", "42803", 47);
    /* an outer aggregate two levels down is the block's: one row, max(id) */
    CHECK(count_rows(fx.s, "SELECT * FROM (SELECT (SELECT (SELECT max(t.id) FROM u LIMIT 1) FROM u LIMIT 1) AS m "
                           "FROM t) d WHERE m = 99", &err) == 1);
    expect_error(fx.s, "SELECT id FROM t WHERE g > (SELECT (SELECT sum(t.g) FROM u LIMIT 1))", "42803", 44);
    /* x op ANY / ALL over the block's aggregates: max(id) = 90 + g in {60, 62, ..., 98} */
    CHECK(count_rows(fx.s, "SELECT g FROM t GROUP BY g HAVING max(id) IN (SELECT k + 60 FROM u)", &err) == 5);
    CHECK(count_rows(fx.s, "SELECT g FROM t GROUP BY g HAVING count(*) <> ALL (SELECT 10)", &err) == 0);
    /* CASE / COALESCE run their subqueries only for the rows that reach them */
    CHECK(count_rows(fx.s, "SELECT id, CASE WHEN id < 0 THEN (SELECT 1 / (k - k) FROM u WHERE u.k = t.g LIMIT 1) "
                           "ELSE 0 END FROM t", &err) == 100);
    CHECK(count_rows(fx.s, "SELECT COALESCE(id, (SELECT k FROM u)) FROM t", &err) == 100);
    expect_error(fx.s, "SELECT CASE WHEN id = 7 THEN (SELECT k FROM u) END FROM t", "21000", -1);
    /* LATERAL with an aggregate, per outer row: 10 ids per g; u.k < g holds
     * for ceil(g / 2) even ks (2 for g = 3, 4); of those, k > 4 only 6 for
     * g = 7, 8 and 6, 8 for g = 9: LEFT JOIN gives 1 row for g = 0..8 (NULL
     * or the one match), 2 for g = 9 */
    CHECK(count_rows(fx.s, "SELECT t.id, x.c FROM t, LATERAL (SELECT count(*) AS c FROM u WHERE u.k < t.g) x "
                           "WHERE x.c = 2", &err) == 20);
    CHECK(count_rows(fx.s, "SELECT t.id, x.k FROM t LEFT JOIN LATERAL (SELECT k FROM u WHERE u.k < t.g "
                           "GROUP BY k HAVING count(*) = 1) x ON x.k > 4", &err) == 110);
    /* LIMIT by an uncorrelated subquery (20 rows of u); (a, b) IN in an
     * expression: (id, g) = (k, k) only for id = g = k, i.e. ids 0..9 that
     * are even and equal to id % 10: 0, 2, 4, 6, 8 */
    CHECK(count_rows(fx.s, "SELECT id FROM t ORDER BY id LIMIT (SELECT count(*) FROM u)", &err) == 20);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (id, g) IN (SELECT k, k FROM u) IS TRUE", &err) == 5);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE (id, g) NOT IN (SELECT k, k FROM u)", &err) == 95);
    expect_error(fx.s, "SELECT id FROM t LIMIT g", "42P10", 24);
    /* LEFT JOIN ON with a subquery: per row of t; GROUP BY a scalar subquery */
    CHECK(count_rows(fx.s, "SELECT t.id, u.k FROM t LEFT JOIN u ON u.k = t.g AND EXISTS (SELECT 1 FROM u x "
                           "WHERE x.k = u.k + 2 AND x.k > t.g)", &err) == 100);
    CHECK(count_rows(fx.s, "SELECT (SELECT count(*) FROM u WHERE u.k = t.g) AS c, count(*) FROM t GROUP BY 1", &err) == 2);
    /* an inner join's ON with a subquery: a WHERE conjunct */
    CHECK(count_rows(fx.s, "SELECT t.id FROM t JOIN u ON u.k = t.id AND EXISTS (SELECT 1 FROM u x WHERE x.k = u.k + 2)",
                     &err) == 19);
    expect_error(fx.s, "SELECT g, (SELECT count(*) FROM u WHERE u.k < nope) FROM t GROUP BY g", "42703", 47);
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE 'u3' = ANY (ARRAY(SELECT s FROM u))", &err) == 100);
    /* uncorrelated: one run for all rows */
    CHECK(count_rows(fx.s, "SELECT id FROM t WHERE cardinality(ARRAY(SELECT k FROM u WHERE k < 5)) = 3", &err) == 100);
    plan = explain(fx.s, "SELECT id, ARRAY(SELECT k FROM u WHERE k < 5) FROM t", &err);
    CHECK(has(plan, "run once"));
    hs_free(plan);
    plan = explain(fx.s, "SELECT id, ARRAY(SELECT k FROM u WHERE k < t.g) FROM t", &err);
    CHECK(has(plan, "per outer row"));
    hs_free(plan);
    expect_error(fx.s, "SELECT ARRAY(SELECT ARRAY[1, 2] FROM u)", "0A000", 8);
    expect_error(fx.s, "SELECT ARRAY(SELECT k, s FROM u)", "42601", -1);
    teardown(&fx);
    CHECK(hs_mem_live_count() == live0);
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

/* hs_session_cancel stops the stream being read; prepared statements
 * report their parameters and result columns. */
static void test_cancel_and_prepare(void)
{
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "cancel", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    CHECK_OK(hs_session_set(fx.s, "threads", "1", &err), &err);
    hs_result *r = NULL;
    /* a cross join of 100 x 100 x 20 rows: many batches */
    CHECK_OK(hs_session_execute(fx.s, "SELECT a.id, b.id FROM t a, t b, u", &r, &err), &err);
    struct ArrowArrayStream st;
    CHECK_OK(hs_result_stream(r, &st, &err), &err);
    hs_result_free(r);
    hs_session_cancel(fx.s);
    int rc = 0;
    for (int i = 0; i < 1000 && rc == 0; i++) {
        struct ArrowArray a;
        rc = st.get_next(&st, &a);
        if (rc == 0 && !a.release)
            break;
        if (rc == 0)
            a.release(&a);
    }
    CHECK(rc != 0);   /* cancelled before the 200000 rows were produced */
    const char *msg = st.get_last_error(&st);
    CHECK(msg && strstr(msg, "cancel") != NULL);
    st.release(&st);
    /* the next statement runs again */
    CHECK(count_rows(fx.s, "SELECT 1", &err) == 1);

    const char *types[2] = {"bigint", NULL};
    hs_prepared *pr = NULL;
    CHECK_OK(hs_session_prepare(fx.s, "SELECT id, s FROM t WHERE id < $1 AND s <> $2", 2, types, &pr, &err), &err);
    CHECK(hs_prepared_param_count(pr) == 2);
    CHECK(strcmp(hs_prepared_param_type(pr, 0), "bigint") == 0);
    CHECK(strcmp(hs_prepared_param_type(pr, 1), "unknown") == 0);
    struct ArrowSchema sch;
    CHECK_OK(hs_prepared_schema(pr, &sch, &err), &err);
    CHECK(sch.n_children == 2 && strcmp(sch.children[0]->name, "id") == 0);
    sch.release(&sch);
    const char *vals[2] = {"10", "s1"};
    CHECK_OK(hs_prepared_execute(pr, 2, vals, &r, &err), &err);
    CHECK_OK(hs_result_stream(r, &st, &err), &err);
    hs_result_free(r);
    int64_t n = 0;
    for (;;) {
        struct ArrowArray a;
        if (st.get_next(&st, &a) != 0 || !a.release)
            break;
        n += a.length;
        a.release(&a);
    }
    st.release(&st);
    CHECK(n == 8);   /* ids 0..9 without s1 (ids 1 and 8) */
    CHECK(hs_prepared_execute(pr, 1, vals, &r, &err) == HS_INVALID);
    hs_prepared_free(pr);
    teardown(&fx);
}

/* Tables of the session's SQL catalog as namespace.table; path tables by
 * a quoted path. */
static void test_catalog_names(void)
{
    hs_error err = {0};
    char dir[1024], db[1100], path[1200];
    snprintf(dir, sizeof dir, "%s/sqlcat", hs_test_tmpdir());
    snprintf(db, sizeof db, "%s.db", dir);
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_sql(db, "default", dir, &cat, &err), &err);
    CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
    hs_table *t = make_table(cat, "ns.tab", 1, &err);
    REQUIRE(t);
    hs_session_options o = HS_SESSION_OPTIONS_INIT;
    o.catalog = cat;
    hs_session *s = NULL;
    CHECK_OK(hs_session_open(&o, &s, &err), &err);
    CHECK(count_rows(s, "SELECT * FROM ns.tab WHERE k < 10", &err) == 5);
    CHECK(count_rows(s, "SELECT a.k FROM ns.tab a JOIN ns.tab b ON a.k = b.k", &err) == 20);
    expect_error(s, "SELECT * FROM ns.nosuch", "42P01", 15);
    expect_error(s, "SELECT * FROM nosuch", "42P01", 15);
    hs_session_close(s);
    /* a path table by its quoted location, without a catalog */
    char pdir[1100];
    snprintf(pdir, sizeof pdir, "%s/pathcat", hs_test_tmpdir());
    hs_catalog *pcat = NULL;
    CHECK_OK(hs_catalog_open_path(pdir, &pcat, &err), &err);
    hs_table *pt = make_table(pcat, "pt", 1, &err);
    REQUIRE(pt);
    CHECK_OK(hs_session_open(NULL, &s, &err), &err);
    const char *loc = hs_table_location(pt);
    if (!strncmp(loc, "file://", 7))
        loc += 7;
    snprintf(path, sizeof path, "SELECT count(*) FROM \"%s\"", loc);
    int64_t n = count_rows(s, path, &err);
    if (n != 1)
        fprintf(stderr, "  %s: %lld rows: %s\n", path, (long long)n, err.msg);
    CHECK(n == 1);
    hs_session_close(s);
    hs_table_close(pt);
    hs_catalog_close(pcat);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_index_cache_clear();
}

/* Forms that were 0A000 (issue 13), run under ASan for the planner's json
 * and the allocations of their new paths: counts by construction of t
 * (id 0..99, g = id % 10) and u (k = 0, 2, ..., 38); the values are
 * checked against PostgreSQL by test_sql_window_pg / test_sql_subq_pg. */
static void test_issue13_forms(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = {0};
    fixture fx;
    if (!setup(&fx, "forms13", &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        CHECK(0);
        teardown(&fx);
        return;
    }
    static const struct { const char *sql; int64_t rows; } ok[] = {
        {"SELECT id, row_number() OVER (ORDER BY id) IN (SELECT k FROM u) AS a, "
         "rank() OVER (PARTITION BY g ORDER BY id) > ALL (SELECT k FROM u WHERE k < 4) AS b FROM t", 100},
        {"SELECT g, sum(g) OVER (ORDER BY g) IN (SELECT k FROM u) FROM t GROUP BY g", 10},
        {"SELECT id, sum(id) OVER (ORDER BY id ROWS BETWEEN 1 + 1 PRECEDING AND (SELECT 1) FOLLOWING) FROM t", 100},
        {"SELECT id, count(*) OVER (ORDER BY g GROUPS BETWEEN abs(-1) PRECEDING AND CURRENT ROW) FROM t", 100},
        {"SELECT DISTINCT ON (g) g, count(*) FROM t GROUP BY ROLLUP(g, id) ORDER BY g, 2", 11},
        {"SELECT DISTINCT ON (g + 1) g, id FROM t GROUP BY CUBE(g, id) ORDER BY g + 1, id DESC", 11},
        {"SELECT DISTINCT ON (g) g FROM t", 10},
        {"SELECT (ARRAY[1.5, 2.25])[id % 3], ('{1.5,2.250}'::numeric[])[2] FROM t", 100},
        {"SELECT count(*) OVER (ORDER BY x RANGE BETWEEN '1 hour' PRECEDING AND '1 day' FOLLOWING) "
         "FROM (VALUES ('10:00'::time), ('10:30'::time), (NULL)) v(x)", 3},
        {"SELECT t.id, u.k FROM t RIGHT JOIN u ON t.id = u.k AND t.g IN (SELECT g FROM t WHERE g > 4)", 20},
        {"SELECT t.id, x.i FROM t, generate_series(1, t.g) x(i), u WHERE u.k = x.i", 200},
        {"SELECT unnest(ARRAY[[1, 2], [3, 4]]), id FROM t WHERE id < 3", 12},
        {"SELECT id, lag(id, 0) OVER (ORDER BY id), lead(id, -1) OVER (ORDER BY id), lag(g, NULL) OVER (ORDER BY id) FROM t", 100},
        {"SELECT 1 FROM t WHERE 3 = ANY('{{1,2},{3,4}}'::int[]) AND '{{1,2},{3,4}}'::int[] @> ARRAY[4]", 100},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t n = count_rows(fx.s, ok[i].sql, &err);
        if (n != ok[i].rows)
            fprintf(stderr, "  %s: %lld rows (%s), want %lld\n", ok[i].sql, (long long)n, err.msg,
                    (long long)ok[i].rows);
        CHECK(n == ok[i].rows);
    }
    expect_error(fx.s, "SELECT id FROM t WHERE row_number() OVER (ORDER BY id) IN (SELECT k FROM u)", "42P20", 24);
    expect_error(fx.s, "SELECT sum(id) OVER (ORDER BY id ROWS BETWEEN g PRECEDING AND CURRENT ROW) FROM t", "42P10", 47);
    expect_error(fx.s, "SELECT sum(id) OVER (ORDER BY id ROWS BETWEEN 1 - 2 PRECEDING AND CURRENT ROW) FROM t", "22013", -1);
    expect_error(fx.s, "SELECT DISTINCT ON (g) g FROM t GROUP BY ROLLUP(g, id) ORDER BY id", "42P10", -1);
    expect_error(fx.s, "SELECT count(*) OVER (ORDER BY x RANGE BETWEEN '-1 hour' PRECEDING AND CURRENT ROW) "
                       "FROM (VALUES ('10:00'::time)) v(x)", "22013", -1);
    expect_error(fx.s, "SELECT * FROM t FULL JOIN u ON t.id = u.k AND t.g IN (SELECT g FROM t)", "0A000", -1);
    expect_error(fx.s, "SELECT unnest(ARRAY[[1, 2], [3]])", "2202E", -1);
    /* a RANGE frame with offsets at both ends (its bound columns' json leaked before) */
    CHECK(count_rows(fx.s, "SELECT sum(id) OVER (ORDER BY g RANGE BETWEEN 1 PRECEDING AND 2 FOLLOWING) FROM t",
                     &err) == 100);
    teardown(&fx);
    CHECK(hs_mem_live_count() == live0);
}

int main(void)
{
    HS_RUN(test_bind_json);
    HS_RUN(test_errors);
    HS_RUN(test_results);
    HS_RUN(test_stream_errors);
    HS_RUN(test_apply);
    HS_RUN(test_subqueries);
    HS_RUN(test_plans);
    HS_RUN(test_cancel_and_prepare);
    HS_RUN(test_catalog_names);
    HS_RUN(test_issue13_forms);
    return hs_test_summary();
}
