/*
 * tests/c/test_sql_dml.c - SQL DML through the session API (src/sql/dml.c),
 * small and exact, so that ASan/UBSan see every path:
 *
 *   test            what it checks
 *   --------------  ------------------------------------------------------
 *   statements      INSERT VALUES / SELECT / column list, UPDATE, UPDATE
 *                   FROM, DELETE, DELETE USING, MERGE (update, delete,
 *                   insert, DO NOTHING): tags and the rows read back (scan
 *                   of the table) against values written here; each
 *                   statement commits one snapshot
 *                   and subqueries (IN, NOT IN, EXISTS, scalar) in WHERE/SET
 *   errors          42703, 42601, 42804, 23502, 21000, 0A000 with the
 *                   table unchanged
 *   transactions    BEGIN ... ROLLBACK leaves the table; BEGIN ... COMMIT
 *                   commits one snapshot; statements see earlier ones;
 *                   25P02 after an error
 *   conflict        a transaction whose rows were deleted concurrently
 *                   fails COMMIT with 40001
 *   returning       INSERT/UPDATE/DELETE [USING] ... RETURNING: rows, names,
 *                   tags (also for no rows)
 *   copy            COPY FROM csv (quotes, NULL vs '', HEADER, DELIMITER,
 *                   column list) and parquet, COPY TO csv and parquet;
 *                   corrupt, malformed and missing files fail cleanly
 *   cancel          hs_session_cancel from another thread stops a long
 *                   UPDATE ... FROM with 57014, nothing committed
 *   crash_merge     cat_set_io_fault(k) for k = 1.. until a MERGE (update,
 *                   delete, insert) passes: after each failure the table,
 *                   reopened through a new catalog handle, reads exactly
 *                   the old or the new rows (v2 and v3)
 *
 * tests/python/test_sql_dml.py compares random sequences against DuckDB.
 */
#define _DEFAULT_SOURCE 1
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/sql.h"
#include "hyperstream/table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *tmp_dir(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/sqldml-%s-%d", hs_test_tmpdir(), name, (int)getpid());
    mkdir(buf, 0777);
    return buf;
}

/* t(id bigint not null, k int, s text) with fv, plus src with the same
 * columns; both registered. */
static hs_status setup(const char *dir, int fv, hs_catalog **cat, hs_table **t, hs_table **src,
                       hs_session **s, hs_error *err)
{
    HS_TRY(hs_catalog_open_path(dir, cat, err));
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return HS_NOMEM;
    hs_field_init(&f, "k", HS_TYPE_INT32, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return HS_NOMEM;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return HS_NOMEM;
    for (int i = 0; i < 2; i++) {
        struct ArrowSchema as;
        hs_status st = hs_arrow_export_schema(&schema, &as, err);
        if (st != HS_OK) {
            hs_field_clear(&schema);
            return st;
        }
        hs_table_create_options o = {.arrow_schema = &as, .format_version = i ? 2 : fv};
        st = hs_table_create(*cat, i ? "src" : "t", &o, i ? src : t, err);
        as.release(&as);
        if (st != HS_OK) {
            hs_field_clear(&schema);
            return st;
        }
    }
    hs_field_clear(&schema);
    HS_TRY(hs_session_open(NULL, s, err));
    HS_TRY(hs_session_register(*s, "t", *t, err));
    return hs_session_register(*s, "src", *src, err);
}

/* Runs sql; returns its status, the tag into tag (may be NULL). */
static hs_status run(hs_session *s, const char *sql, char *tag, size_t cap, hs_error *err)
{
    hs_result *r = NULL;
    hs_status st = hs_session_execute(s, sql, &r, err);
    if (st == HS_OK && tag)
        snprintf(tag, cap, "%s", hs_result_tag(r));
    hs_result_free(r);
    return st;
}

/* The table's rows as text "id:k:s" sorted by id, joined with spaces. */
static hs_status rows_text(hs_table *t, char *out, size_t cap, hs_error *err)
{
    out[0] = 0;
    HS_TRY(hs_table_refresh(t, err));
    struct ArrowArrayStream st_;
    HS_TRY(hs_table_scan(t, NULL, &st_, err));
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(&st_, &src, err));
    typedef struct { int64_t id; char text[48]; } rowt;
    rowt rows[64];
    int n = 0;
    hs_status st = HS_OK;
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        for (int64_t i = 0; i < b->n_rows && n < 64; i++) {
            const hs_column *ci = b->cols[0], *ck = b->cols[1], *cs = b->cols[2];
            char kbuf[16] = "-", sbuf[24] = "-";
            if (hs_col_is_valid(ck, i))
                snprintf(kbuf, sizeof kbuf, "%d", HS_COL_VALUES(ck, int32_t)[i]);
            if (hs_col_is_valid(cs, i)) {
                const int32_t *off = HS_COL_OFFSETS(cs);
                int len = off[i + 1] - off[i];
                snprintf(sbuf, sizeof sbuf, "%.*s", len > 20 ? 20 : len,
                         (const char *)cs->values.data + off[i]);
            }
            rows[n].id = HS_COL_VALUES(ci, int64_t)[i];
            snprintf(rows[n].text, sizeof rows[n].text, "%lld:%s:%s", (long long)rows[n].id, kbuf,
                     sbuf);
            n++;
        }
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    for (int i = 1; i < n; i++)   /* insertion sort by id */
        for (int j = i; j > 0 && rows[j - 1].id > rows[j].id; j--) {
            rowt tmp = rows[j];
            rows[j] = rows[j - 1];
            rows[j - 1] = tmp;
        }
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s", i ? " " : "",
                                rows[i].text);
    return st;
}

#define EXPECT_TAG(sql, want)                                                           \
    do {                                                                                \
        char tag_[64] = "";                                                             \
        CHECK_OK(run(s, sql, tag_, sizeof tag_, &err), &err);                           \
        CHECK(strcmp(tag_, want) == 0);                                                 \
        if (strcmp(tag_, want) != 0)                                                    \
            fprintf(stderr, "  %s: tag \"%s\", want \"%s\"\n", sql, tag_, want);        \
    } while (0)

#define EXPECT_ROWS(tbl, want)                                                          \
    do {                                                                                \
        char got_[2048];                                                                \
        CHECK_OK(rows_text(tbl, got_, sizeof got_, &err), &err);                        \
        CHECK(strcmp(got_, want) == 0);                                                 \
        if (strcmp(got_, want) != 0)                                                    \
            fprintf(stderr, "  rows \"%s\"\n  want \"%s\"\n", got_, want);               \
    } while (0)

#define EXPECT_STATE(sql, state)                                                        \
    do {                                                                                \
        hs_err_clear(&err);                                                             \
        CHECK(run(s, sql, NULL, 0, &err) != HS_OK);                                     \
        CHECK(strcmp(hs_session_sqlstate(s), state) == 0);                              \
        if (strcmp(hs_session_sqlstate(s), state) != 0)                                 \
            fprintf(stderr, "  %s: sqlstate %s (%s), want %s\n", sql,                   \
                    hs_session_sqlstate(s), err.msg, state);                            \
    } while (0)

/* The operation of t's current snapshot ("" when none). */
static const char *current_op(hs_table *t)
{
    static hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
    hs_error err = {0};
    memset(&si, 0, sizeof si);
    for (int i = 0; i < hs_snapshot_count(t); i++) {
        hs_snapshot_info x = HS_SNAPSHOT_INFO_INIT;
        if (hs_snapshot_get(t, i, &x, &err) == HS_OK &&
            x.snapshot_id == hs_table_current_snapshot_id(t))
            si = x;
    }
    return si.operation;
}

static void statements(int fv)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *s = NULL;
    CHECK_OK(setup(tmp_dir(fv == 3 ? "st3" : "st2"), fv, &cat, &t, &src, &s, &err), &err);
    EXPECT_TAG("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'c')", "INSERT 0 3");
    EXPECT_TAG("INSERT INTO t (s, id) VALUES ('d', 4)", "INSERT 0 1");
    EXPECT_TAG("INSERT INTO src VALUES (2, 200, 'x'), (3, 300, 'y'), (9, 900, 'z')", "INSERT 0 3");
    EXPECT_ROWS(t, "1:10:a 2:20:b 3:-:c 4:-:d");
    CHECK(strcmp(current_op(t), "append") == 0);   /* only rows added */
    int n0 = hs_snapshot_count(t);
    EXPECT_TAG("UPDATE t SET k = k + 1, s = s || '!' WHERE id <= 2", "UPDATE 2");
    CHECK(hs_snapshot_count(t) == n0 + 1);
    CHECK(strcmp(current_op(t), "overwrite") == 0);
    EXPECT_ROWS(t, "1:11:a! 2:21:b! 3:-:c 4:-:d");
    EXPECT_TAG("UPDATE t SET k = src.k FROM src WHERE t.id = src.id", "UPDATE 2");
    EXPECT_ROWS(t, "1:11:a! 2:200:b! 3:300:c 4:-:d");
    EXPECT_TAG("DELETE FROM t WHERE k IS NULL", "DELETE 1");
    EXPECT_TAG("DELETE FROM t WHERE id > 100", "DELETE 0");
    EXPECT_ROWS(t, "1:11:a! 2:200:b! 3:300:c");
    EXPECT_TAG("DELETE FROM t USING src AS q WHERE t.id = q.id AND q.s = 'y'", "DELETE 1");
    EXPECT_ROWS(t, "1:11:a! 2:200:b!");
    EXPECT_TAG("INSERT INTO t SELECT id + 10, k, s FROM src WHERE id > 2", "INSERT 0 2");
    EXPECT_ROWS(t, "1:11:a! 2:200:b! 13:300:y 19:900:z");
    EXPECT_TAG("MERGE INTO t USING src ON t.id = src.id "
               "WHEN MATCHED AND src.k > 1000 THEN DO NOTHING "
               "WHEN MATCHED THEN UPDATE SET s = 'm' "
               "WHEN NOT MATCHED AND src.id = 9 THEN INSERT VALUES (src.id, 1, 'ins') "
               "WHEN NOT MATCHED THEN DO NOTHING", "MERGE 2");
    EXPECT_ROWS(t, "1:11:a! 2:200:m 9:1:ins 13:300:y 19:900:z");
    EXPECT_TAG("MERGE INTO t AS x USING (SELECT id + 11 AS id FROM src WHERE id = 2) AS y "
               "ON x.id = y.id WHEN MATCHED THEN DELETE", "MERGE 1");
    EXPECT_ROWS(t, "1:11:a! 2:200:m 9:1:ins 19:900:z");
    /* uncorrelated subqueries in WHERE and SET */
    EXPECT_TAG("DELETE FROM t WHERE id IN (SELECT id FROM src WHERE k > 800)", "DELETE 1");
    EXPECT_TAG("UPDATE t SET k = (SELECT max(k) FROM src) WHERE id = 1", "UPDATE 1");
    EXPECT_TAG("DELETE FROM t WHERE EXISTS (SELECT 1 FROM src WHERE k < 0)", "DELETE 0");
    EXPECT_TAG("UPDATE t SET s = 'n' WHERE k NOT IN (SELECT k FROM src WHERE k < 500)",
               "UPDATE 2");
    EXPECT_ROWS(t, "1:900:n 2:200:m 19:900:n");
    EXPECT_STATE("UPDATE t SET k = (SELECT k FROM src)", "21000");
    /* joins whose equality narrows the target's scan (an IN list of the
     * source's keys; none at all for an empty source) */
    EXPECT_TAG("MERGE INTO t USING (SELECT * FROM src WHERE id < 0) AS e ON t.id = e.id "
               "WHEN NOT MATCHED THEN INSERT VALUES (e.id, 1, 'z')", "MERGE 0");
    EXPECT_TAG("DELETE FROM t USING src WHERE t.k = src.k AND src.s = 'z'", "DELETE 2");
    EXPECT_TAG("UPDATE t SET k = 7 FROM (SELECT 'm' AS s) AS q WHERE t.s = q.s", "UPDATE 1");
    EXPECT_ROWS(t, "2:7:m");
    /* correlated subqueries in SET and WHERE: per target row (planner) */
    EXPECT_TAG("UPDATE t SET k = (SELECT max(x.k) + t.id FROM t x WHERE x.id = t.id)", "UPDATE 1");
    EXPECT_ROWS(t, "2:9:m");
    EXPECT_TAG("UPDATE t SET k = k + 1 WHERE k < ALL (SELECT x.k + 1 FROM t x WHERE x.id = t.id)", "UPDATE 1");
    EXPECT_TAG("DELETE FROM t WHERE EXISTS (SELECT 1 FROM t x WHERE x.id = t.id AND x.k > 100)", "DELETE 0");
    EXPECT_STATE("UPDATE t SET k = (SELECT x.k FROM t x, generate_series(1, 2) g WHERE x.id = t.id)", "21000");
    EXPECT_ROWS(t, "2:10:m");
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

static void test_statements_v2(void) { statements(2); }
static void test_statements_v3(void) { statements(3); }

static void test_errors(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *s = NULL;
    CHECK_OK(setup(tmp_dir("err"), 3, &cat, &t, &src, &s, &err), &err);
    EXPECT_TAG("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')", "INSERT 0 2");
    EXPECT_TAG("INSERT INTO src VALUES (1, 1, 'x'), (1, 2, 'y')", "INSERT 0 2");
    int n0 = hs_snapshot_count(t);
    EXPECT_STATE("UPDATE t SET nope = 1", "42703");
    EXPECT_STATE("UPDATE t SET k = 1, k = 2", "42601");
    EXPECT_STATE("UPDATE t SET k = s", "42804");
    EXPECT_STATE("UPDATE t SET id = NULL", "23502");
    EXPECT_STATE("INSERT INTO t (k) VALUES (5)", "23502");
    EXPECT_STATE("INSERT INTO t VALUES (1, 2, 'x', 4)", "42601");
    EXPECT_STATE("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET k = 0",
                 "21000");
    EXPECT_STATE("INSERT INTO t VALUES (7, 7, 'x') ON CONFLICT DO NOTHING", "0A000");
    EXPECT_STATE("DELETE FROM nosuch", "42P01");
    CHECK(hs_snapshot_count(t) == n0);
    EXPECT_ROWS(t, "1:10:a 2:20:b");
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

static void test_transactions(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *s = NULL;
    CHECK_OK(setup(tmp_dir("tx"), 2, &cat, &t, &src, &s, &err), &err);
    EXPECT_TAG("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')", "INSERT 0 3");
    int n0 = hs_snapshot_count(t);
    EXPECT_TAG("BEGIN", "BEGIN");
    EXPECT_TAG("DELETE FROM t WHERE id = 1", "DELETE 1");
    EXPECT_TAG("INSERT INTO t VALUES (4, 40, 'd')", "INSERT 0 1");
    EXPECT_TAG("UPDATE t SET k = 0 WHERE k >= 20", "UPDATE 3");   /* 2, 3 and the new 4 */
    EXPECT_TAG("DELETE FROM t WHERE id = 4", "DELETE 1");
    EXPECT_ROWS(t, "1:10:a 2:20:b 3:30:c");   /* nothing visible yet */
    EXPECT_TAG("ROLLBACK", "ROLLBACK");
    EXPECT_ROWS(t, "1:10:a 2:20:b 3:30:c");
    CHECK(hs_snapshot_count(t) == n0);
    EXPECT_TAG("BEGIN", "BEGIN");
    EXPECT_TAG("DELETE FROM t WHERE id = 1", "DELETE 1");
    EXPECT_TAG("INSERT INTO t VALUES (4, 40, 'd')", "INSERT 0 1");
    EXPECT_TAG("UPDATE t SET k = 0 WHERE k >= 30", "UPDATE 2");
    EXPECT_TAG("COMMIT", "COMMIT");
    CHECK(hs_snapshot_count(t) == n0 + 1);   /* one snapshot for the transaction */
    EXPECT_ROWS(t, "2:20:b 3:0:c 4:0:d");
    EXPECT_TAG("BEGIN", "BEGIN");
    EXPECT_STATE("UPDATE t SET nope = 1", "42703");
    EXPECT_STATE("DELETE FROM t", "25P02");
    EXPECT_TAG("COMMIT", "ROLLBACK");
    EXPECT_TAG("DELETE FROM t WHERE id = 4", "DELETE 1");   /* usable again */
    EXPECT_ROWS(t, "2:20:b 3:0:c");
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

static void test_conflict(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL, *t2 = NULL;
    hs_session *s = NULL;
    CHECK_OK(setup(tmp_dir("conf"), 3, &cat, &t, &src, &s, &err), &err);
    EXPECT_TAG("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')", "INSERT 0 2");
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    EXPECT_TAG("BEGIN", "BEGIN");
    EXPECT_TAG("UPDATE t SET k = 11 WHERE id = 1", "UPDATE 1");
    /* a concurrent writer deletes a row of the same data file */
    int64_t n = 0;
    CHECK_OK(hs_table_delete(t2, "id = 2", &n, &err), &err);
    CHECK(n == 1);
    EXPECT_STATE("COMMIT", "40001");
    EXPECT_ROWS(t, "1:10:a");
    /* an append meanwhile is no conflict */
    EXPECT_TAG("BEGIN", "BEGIN");
    EXPECT_TAG("UPDATE t SET k = 12 WHERE id = 1", "UPDATE 1");
    hs_session *s2 = NULL;
    CHECK_OK(hs_session_open(NULL, &s2, &err), &err);
    CHECK_OK(hs_session_register(s2, "t", t2, &err), &err);
    CHECK_OK(run(s2, "INSERT INTO t VALUES (5, 50, 'e')", NULL, 0, &err), &err);
    EXPECT_TAG("COMMIT", "COMMIT");
    EXPECT_ROWS(t, "1:12:a 5:50:e");
    hs_session_close(s2);
    hs_session_close(s);
    hs_table_close(t2);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

/* Runs sql and formats the rows it returns: "v|v|v" per row, rows joined
 * by spaces in result order (ints, doubles, strings; NULL as "-"); the
 * column names into names ("a,b") and the tag into tag. */
static hs_status run_rows(hs_session *s, const char *sql, char *out, size_t cap, char *names,
                          size_t ncap, char *tag, size_t tcap, hs_error *err)
{
    out[0] = names[0] = tag[0] = 0;
    hs_result *r = NULL;
    HS_TRY(hs_session_execute(s, sql, &r, err));
    snprintf(tag, tcap, "%s", hs_result_tag(r));
    struct ArrowArrayStream st_;
    hs_status st = hs_result_has_rows(r) ? hs_result_stream(r, &st_, err)
                                         : hs_err_set(err, HS_INVALID, "no rows");
    hs_result_free(r);
    HS_TRY(st);
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(&st_, &src, err));
    size_t len = 0, nlen = 0;
    for (int i = 0; i < src.schema.n_children; i++)
        nlen += (size_t)snprintf(names + nlen, nlen < ncap ? ncap - nlen : 0, "%s%s",
                                 i ? "," : "", src.schema.children[i].name);
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        for (int64_t i = 0; i < b->n_rows; i++) {
            len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s", len ? " " : "");
            for (int c = 0; c < b->n_cols; c++) {
                const hs_column *col = b->cols[c];
                char v[64] = "-";
                if (hs_col_is_valid(col, i)) {
                    if (col->type == HS_TYPE_INT64)
                        snprintf(v, sizeof v, "%lld", (long long)HS_COL_VALUES(col, int64_t)[i]);
                    else if (col->type == HS_TYPE_INT32)
                        snprintf(v, sizeof v, "%d", HS_COL_VALUES(col, int32_t)[i]);
                    else if (col->type == HS_TYPE_FLOAT64)
                        snprintf(v, sizeof v, "%g", HS_COL_VALUES(col, double)[i]);
                    else if (col->type == HS_TYPE_STRING) {
                        const int32_t *off = HS_COL_OFFSETS(col);
                        snprintf(v, sizeof v, "%.*s", (int)(off[i + 1] - off[i]),
                                 (const char *)col->values.data + off[i]);
                    } else
                        snprintf(v, sizeof v, "?");
                }
                len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s",
                                        c ? "|" : "", v);
            }
        }
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    return st;
}

#define EXPECT_RETURNING(sql, want_tag, want_names, want_rows)                          \
    do {                                                                                \
        char rows_[1024], names_[256], tag_[64];                                        \
        CHECK_OK(run_rows(s, sql, rows_, sizeof rows_, names_, sizeof names_, tag_,     \
                          sizeof tag_, &err), &err);                                    \
        CHECK(strcmp(tag_, want_tag) == 0);                                             \
        CHECK(strcmp(names_, want_names) == 0);                                         \
        CHECK(strcmp(rows_, want_rows) == 0);                                           \
        if (strcmp(rows_, want_rows) || strcmp(names_, want_names) ||                   \
            strcmp(tag_, want_tag))                                                     \
            fprintf(stderr, "  %s: %s [%s] \"%s\"\n", sql, tag_, names_, rows_);        \
    } while (0)

static void test_returning(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *s = NULL;
    CHECK_OK(setup(tmp_dir("ret"), 3, &cat, &t, &src, &s, &err), &err);
    EXPECT_TAG("INSERT INTO src VALUES (2, 0, 'x')", "INSERT 0 1");
    EXPECT_RETURNING("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c') "
                     "RETURNING id, k * 2 AS kk", "INSERT 0 3", "id,kk", "1|20 2|40 3|60");
    EXPECT_RETURNING("UPDATE t SET k = k + 1 WHERE id = 2 RETURNING *", "UPDATE 1", "id,k,s",
                     "2|21|b");
    EXPECT_RETURNING("DELETE FROM t WHERE id = 1 RETURNING s, t.id", "DELETE 1", "s,id", "a|1");
    EXPECT_RETURNING("DELETE FROM t USING src WHERE t.id = src.id RETURNING t.id, src.s",
                     "DELETE 1", "id,s", "2|x");
    EXPECT_RETURNING("DELETE FROM t WHERE id = 99 RETURNING id", "DELETE 0", "id", "");
    EXPECT_ROWS(t, "3:30:c");
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

static hs_status write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return HS_IO;
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok ? HS_OK : HS_IO;
}

static char *read_text(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static void test_copy(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *s = NULL;
    const char *dir = tmp_dir("copy");
    char d[600], sql[1400], in1[700], in2[700], out1[700], out2[700], bad[700];
    snprintf(d, sizeof d, "%s", dir);
    CHECK_OK(setup(d, 2, &cat, &t, &src, &s, &err), &err);
    snprintf(in1, sizeof in1, "%s/in1.csv", d);
    snprintf(in2, sizeof in2, "%s/in2.csv", d);
    snprintf(out1, sizeof out1, "%s/out1.csv", d);
    snprintf(out2, sizeof out2, "%s/out2.parquet", d);
    snprintf(bad, sizeof bad, "%s/bad.parquet", d);
    CHECK(write_text(in1, "id,k,s\n1,10,\"a;\"\"b\"\n2,,\"\"\n3,30,\n") == HS_OK);
    CHECK(write_text(in2, "x|4\n") == HS_OK);
    snprintf(sql, sizeof sql, "COPY t FROM '%s' WITH (FORMAT csv, HEADER)", in1);
    EXPECT_TAG(sql, "COPY 3");
    snprintf(sql, sizeof sql, "COPY t (s, id) FROM '%s' WITH (FORMAT csv, DELIMITER '|')", in2);
    EXPECT_TAG(sql, "COPY 1");
    EXPECT_ROWS(t, "1:10:a;\"b 2:-: 3:30:- 4:-:x");
    snprintf(sql, sizeof sql, "COPY (SELECT id, s, k > 5 AS big FROM t ORDER BY id) TO '%s' "
             "(FORMAT csv, HEADER, DELIMITER ';')", out1);
    EXPECT_TAG(sql, "COPY 4");
    const char *got = read_text(out1);
    const char *want = "id;s;big\n1;\"a;\"\"b\";t\n2;\"\";\n3;;t\n4;x;\n";
    CHECK(got && strcmp(got, want) == 0);
    if (got && strcmp(got, want) != 0)
        fprintf(stderr, "  csv out: %s", got);
    snprintf(sql, sizeof sql, "COPY t TO '%s'", out2);
    EXPECT_TAG(sql, "COPY 4");
    snprintf(sql, sizeof sql, "COPY src FROM '%s'", out2);   /* round trip by name */
    EXPECT_TAG(sql, "COPY 4");
    EXPECT_ROWS(src, "1:10:a;\"b 2:-: 3:30:- 4:-:x");
    /* bad input: errors, no crash, nothing committed */
    int n0 = hs_snapshot_count(t);
    CHECK(write_text(bad, "PAR1 this is not parquet") == HS_OK);
    snprintf(sql, sizeof sql, "COPY t FROM '%s'", bad);
    hs_err_clear(&err);
    CHECK(run(s, sql, NULL, 0, &err) != HS_OK);
    CHECK(write_text(in2, "1,\"unterminated\n") == HS_OK);
    snprintf(sql, sizeof sql, "COPY t FROM '%s' (FORMAT csv)", in2);
    CHECK(run(s, sql, NULL, 0, &err) != HS_OK);
    CHECK(write_text(in2, "abc,1,x\n") == HS_OK);
    EXPECT_STATE(sql, "22P02");
    snprintf(sql, sizeof sql, "COPY t FROM '%s/nosuch.csv'", d);
    CHECK(run(s, sql, NULL, 0, &err) != HS_OK);
    CHECK(hs_snapshot_count(t) == n0);
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

/* Appends n rows (id = start + i, k = i % 97, s = "r") to t. */
static hs_status append_rows(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK)
        return HS_NOMEM;
    hs_field_init(&f, "k", HS_TYPE_INT32, true);
    if (hs_field_add_child(&schema, &f) != HS_OK)
        return HS_NOMEM;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK)
        return HS_NOMEM;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, err);
    hs_field_clear(&schema);
    for (int64_t i = 0; st == HS_OK && i < n; i++) {
        int64_t id = start + i;
        int32_t k = (int32_t)(i % 97);
        if (hs_col_append_fixed(b->cols[0], &id) != HS_OK ||
            hs_col_append_fixed(b->cols[1], &k) != HS_OK ||
            hs_col_append_bytes(b->cols[2], "r", 1) != HS_OK)
            st = HS_NOMEM;
        b->n_rows++;
    }
    struct ArrowArrayStream s;
    if (st == HS_OK) {
        st = hs_arrow_export_one_batch(b, &s, err);
        b = NULL;
    }
    hs_batch_free(b);
    return st == HS_OK ? hs_table_append(t, &s, err) : st;
}

typedef struct canceller {
    hs_session *s;
    atomic_int done;
} canceller;

static void *cancel_loop(void *arg)
{
    canceller *cn = arg;
    while (!atomic_load(&cn->done)) {
        hs_session_cancel(cn->s);
        usleep(2000);
    }
    return NULL;
}

/* hs_session_cancel from another thread stops a long statement with 57014
 * and nothing committed: an UPDATE ... FROM without an equality (every one
 * of 3000 x 3000 pairs evaluated, seconds of work) is cancelled by a
 * thread that keeps cancelling until it returns. */
/* hs_session_options.no_file_access: path tables (queries, INSERT, DDL) and
 * COPY files are 42501; registered tables still work; nothing is created. */
static void test_no_file_access(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *open_s = NULL;
    const char *dir = tmp_dir("nofile");
    char d[600], sql[1400], p[700];
    snprintf(d, sizeof d, "%s", dir);
    CHECK_OK(setup(d, 2, &cat, &t, &src, &open_s, &err), &err);
    hs_session_close(open_s);
    hs_session_options o = HS_SESSION_OPTIONS_INIT;
    o.no_file_access = 1;
    hs_session *s = NULL;
    CHECK_OK(hs_session_open(&o, &s, &err), &err);
    CHECK_OK(hs_session_register(s, "t", t, &err), &err);
    EXPECT_TAG("INSERT INTO t VALUES (1, 2, 'x')", "INSERT 0 1");
    snprintf(p, sizeof p, "%s/t", d);
    const char *stmts[] = {"SELECT * FROM \"%s\"", "INSERT INTO \"%s\" VALUES (1, 2, 'y')",
                           "CREATE TABLE \"%s2\" (a int)", "DROP TABLE \"%s\"",
                           "COPY t TO '%s.csv'", "COPY t FROM '%s.csv'",
                           "CREATE TABLE \"%s3\" AS SELECT * FROM t"};
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        snprintf(sql, sizeof sql, stmts[i], p);
        hs_error e2 = {0};
        CHECK(run(s, sql, NULL, 0, &e2) != HS_OK);
        CHECK(strcmp(hs_session_sqlstate(s), "42501") == 0);
        if (strcmp(hs_session_sqlstate(s), "42501") != 0)
            fprintf(stderr, "  %s: %s %s\n", sql, hs_session_sqlstate(s), e2.msg);
    }
    struct stat sb;
    snprintf(sql, sizeof sql, "%s2", p);
    CHECK(stat(sql, &sb) != 0);
    snprintf(sql, sizeof sql, "%s.csv", p);
    CHECK(stat(sql, &sb) != 0);
    EXPECT_ROWS(t, "1:2:x");
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

/* A path table's name is a file path, which may be longer than the 63
 * bytes the parser keeps of an identifier (PostgreSQL's NAMEDATALEN): the
 * whole path is used, never its 63-byte prefix (which, when it names a
 * table, is another table). */
static void test_long_path_names(void)
{
    hs_error err = {0};
    char d[512], lp[800], sp[800], sql[2048];
    snprintf(d, sizeof d, "%s", tmp_dir("longpath"));
    snprintf(lp, sizeof lp, "%s/a_table_whose_path_is_longer_than_sixty_three_bytes_%0100d", d, 7);
    REQUIRE(strlen(lp) > 150);
    hs_session *s = NULL;
    CHECK_OK(hs_session_open(NULL, &s, &err), &err);
    /* the 63-byte prefix as a table of its own, when it lies inside d/ */
    int prefix_table = strlen(d) + 2 < 63;
    if (prefix_table) {
        snprintf(sp, sizeof sp, "%.63s", lp);
        snprintf(sql, sizeof sql, "CREATE TABLE \"%s\" (a int)", sp);
        EXPECT_TAG(sql, "CREATE TABLE");
        snprintf(sql, sizeof sql, "INSERT INTO \"%s\" VALUES (1), (1)", sp);
        EXPECT_TAG(sql, "INSERT 0 2");
    }
    snprintf(sql, sizeof sql, "CREATE TABLE \"%s\" (a int)", lp);
    EXPECT_TAG(sql, "CREATE TABLE");
    snprintf(sql, sizeof sql, "INSERT INTO \"%s\" VALUES (7), (8), (9)", lp);
    EXPECT_TAG(sql, "INSERT 0 3");
    snprintf(sql, sizeof sql, "INSERT INTO \"%s\" SELECT a FROM \"%s\" AS t WHERE t.a > 1", lp, lp);
    EXPECT_TAG(sql, "INSERT 0 3");
    snprintf(sql, sizeof sql, "DELETE FROM \"%s\" WHERE a = 7", lp);
    EXPECT_TAG(sql, "DELETE 2");
    snprintf(sql, sizeof sql, "UPDATE \"%s\" SET a = a + 1", lp);
    EXPECT_TAG(sql, "UPDATE 4");
    struct stat sb;
    snprintf(sql, sizeof sql, "%s/metadata", lp);
    CHECK(stat(sql, &sb) == 0 && S_ISDIR(sb.st_mode));   /* created at the whole path */
    if (prefix_table) {
        snprintf(sql, sizeof sql, "UPDATE \"%s\" SET a = a WHERE a = 1", sp);
        EXPECT_TAG(sql, "UPDATE 2");   /* its two rows, untouched */
    }
    hs_session_close(s);
}

static void test_cancel(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *src = NULL;
    hs_session *s = NULL;
    CHECK_OK(setup(tmp_dir("cancel"), 2, &cat, &t, &src, &s, &err), &err);
    CHECK_OK(append_rows(t, 0, 3000, &err), &err);
    CHECK_OK(append_rows(src, 0, 3000, &err), &err);
    int n0 = hs_snapshot_count(t);
    canceller cn = {.s = s};
    atomic_init(&cn.done, 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, cancel_loop, &cn) == 0);
    hs_status st = run(s, "UPDATE t SET k = src.k FROM src WHERE t.k + src.k < -5", NULL, 0,
                       &err);
    atomic_store(&cn.done, 1);
    pthread_join(th, NULL);
    CHECK(st == HS_CANCELLED);
    CHECK(strcmp(hs_session_sqlstate(s), "57014") == 0);
    CHECK(hs_snapshot_count(t) == n0);
    /* the session goes on */
    EXPECT_TAG("DELETE FROM t WHERE id < 10", "DELETE 10");
    hs_session_close(s);
    hs_table_close(t);
    hs_table_close(src);
    hs_catalog_close(cat);
}

/* Rows of table `name` read through a fresh catalog handle. */
static hs_status reopen_rows(const char *dir, const char *name, char *out, size_t cap,
                             hs_error *err)
{
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    hs_status st = hs_catalog_open_path(dir, &cat, err);
    if (st == HS_OK)
        st = hs_table_open(cat, name, &t, err);
    if (st == HS_OK)
        st = rows_text(t, out, cap, err);
    hs_table_close(t);
    hs_catalog_close(cat);
    return st;
}

static void crash_merge(int fv)
{
    static const char *old_rows = "1:10:a 2:20:b 3:30:c 4:40:d";
    static const char *new_rows = "1:100:u 3:30:c 4:40:d 7:70:n";
    const char *merge = "MERGE INTO t USING src ON t.id = src.id "
                        "WHEN MATCHED AND src.s = 'del' THEN DELETE "
                        "WHEN MATCHED THEN UPDATE SET k = src.k, s = 'u' "
                        "WHEN NOT MATCHED THEN INSERT VALUES (src.id, src.k, 'n')";
    int n_old = 0, n_new = 0, k;
    int failures = hs_test_failures;
    for (k = 1; k <= 300; k++) {
        hs_error err = {0};
        hs_catalog *cat = NULL;
        hs_table *t = NULL, *src = NULL;
        hs_session *s = NULL;
        char dir[600], name[16];
        snprintf(dir, sizeof dir, "%s", tmp_dir(fv == 3 ? "crash3" : "crash2"));
        snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/k%d", k);
        mkdir(dir, 0777);
        snprintf(name, sizeof name, "t");
        hs_status st = setup(dir, fv, &cat, &t, &src, &s, &err);
        if (st == HS_OK)
            st = run(s, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')", NULL, 0, &err);
        if (st == HS_OK)
            st = run(s, "INSERT INTO t VALUES (3, 30, 'c'), (4, 40, 'd')", NULL, 0, &err);
        if (st == HS_OK)
            st = run(s, "INSERT INTO src VALUES (1, 100, 'x'), (2, 0, 'del'), (7, 70, 'y')", NULL,
                     0, &err);
        if (st != HS_OK) {
            fprintf(stderr, "  setup k=%d: %s\n", k, err.msg);
            CHECK(0);
            break;
        }
        cat_set_io_fault(k);
        hs_err_clear(&err);
        st = run(s, merge, NULL, 0, &err);
        int64_t reached = cat_io_fault_count();
        cat_set_io_fault(0);
        CHECK(st == HS_OK || st == HS_IO);
        if (st != HS_OK && st != HS_IO)
            fprintf(stderr, "  k=%d: status %d: %s\n", k, (int)st, err.msg);
        hs_session_close(s);
        hs_table_close(t);
        hs_table_close(src);
        hs_catalog_close(cat);
        char got[2048];
        hs_error e2 = {0};
        if (reopen_rows(dir, name, got, sizeof got, &e2) != HS_OK) {
            fprintf(stderr, "  reopen k=%d: %s\n", k, e2.msg);
            CHECK(0);
            break;
        }
        bool is_old = strcmp(got, old_rows) == 0, is_new = strcmp(got, new_rows) == 0;
        CHECK(is_old || is_new);
        if (!is_old && !is_new)
            fprintf(stderr, "  fv %d k=%d: neither old nor new: %s\n", fv, k, got);
        if (st == HS_OK)
            CHECK(is_new);
        n_old += st != HS_OK && is_old;
        n_new += st != HS_OK && is_new;
        if (st == HS_OK && reached < k)
            break;   /* the MERGE no longer reaches fault point k: all steps done */
        if (hs_test_failures > failures + 10)
            break;
    }
    CHECK(k <= 300);
    CHECK(n_old > 0);
    fprintf(stderr, "  MERGE v%d: %d fault points, %d failures read old, %d read new\n", fv,
            k - 1, n_old, n_new);
}

static void test_crash_merge_v2(void) { crash_merge(2); }
static void test_crash_merge_v3(void) { crash_merge(3); }

int main(void)
{
    HS_RUN(test_statements_v2);
    HS_RUN(test_statements_v3);
    HS_RUN(test_errors);
    HS_RUN(test_transactions);
    HS_RUN(test_conflict);
    HS_RUN(test_returning);
    HS_RUN(test_copy);
    HS_RUN(test_no_file_access);
    HS_RUN(test_long_path_names);
    HS_RUN(test_cancel);
    HS_RUN(test_crash_merge_v2);
    HS_RUN(test_crash_merge_v3);
    return hs_test_summary();
}
