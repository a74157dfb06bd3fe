/* libFuzzer target: the SQL front end (hyperstream/sql.h).  The input is a
 * statement (untrusted: it arrives from API callers and, later, the Postgres
 * wire), run in a session over two small tables (t: 12 rows of id/g/s with
 * NULLs; u: 6 rows of k/s) created once in a scratch directory: parsing,
 * binding, planning and execution, reading at most 64 batches of the
 * result.  Every failure must carry a five-character SQLSTATE; nothing may
 * crash or leak.  The session has no file access (path tables, COPY files:
 * 42501), so DDL and COPY inputs cannot write to the machine. */
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/sql.h"
#include "hyperstream/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hs_catalog *cat;
static hs_table *tt, *tu;

static hs_table *make(const char *name, int which)
{
    hs_field s, f;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    const char *names[3] = {which ? "k" : "id", which ? "s" : "g", "s"};
    hs_type types[3] = {HS_TYPE_INT64, which ? HS_TYPE_STRING : HS_TYPE_INT32, HS_TYPE_STRING};
    int nc = which ? 2 : 3, n = which ? 6 : 12;
    for (int i = 0; i < nc; i++) {
        hs_field_init(&f, names[i], types[i], true);
        if (hs_field_add_child(&s, &f) != HS_OK)
            abort();
    }
    hs_batch *b;
    if (hs_batch_create(&s, n, &b, NULL) != HS_OK)
        abort();
    for (int64_t i = 0; i < n; i++) {
        char buf[8];
        int len = snprintf(buf, sizeof buf, "x%d", (int)(i % 4));
        int32_t g = (int32_t)(i % 3);
        hs_status st = i == 5 ? hs_col_append_null(b->cols[0]) : hs_col_append_fixed(b->cols[0], &i);
        if (st == HS_OK)
            st = which ? hs_col_append_bytes(b->cols[1], buf, (size_t)len)
                       : (i == 7 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &g));
        if (st == HS_OK && !which)
            st = i == 2 ? hs_col_append_null(b->cols[2]) : hs_col_append_bytes(b->cols[2], buf, (size_t)len);
        if (st != HS_OK)
            abort();
    }
    b->n_rows = n;
    struct ArrowSchema as;
    if (hs_arrow_export_schema(&s, &as, NULL) != HS_OK)
        abort();
    hs_field_clear(&s);
    hs_table_create_options o = HS_TABLE_CREATE_OPTIONS_INIT;
    o.arrow_schema = &as;
    hs_table *t = NULL;
    struct ArrowArrayStream stream;
    if (hs_table_create(cat, name, &o, &t, NULL) != HS_OK ||
        hs_arrow_export_one_batch(b, &stream, NULL) != HS_OK || hs_table_append(t, &stream, NULL) != HS_OK)
        abort();
    as.release(&as);
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char dir[] = "/tmp/hs-fuzz-sql-XXXXXX";
    if (!mkdtemp(dir) || hs_catalog_open_path(dir, &cat, NULL) != HS_OK)
        abort();
    tt = make("t", 0);
    tu = make("u", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *sql = malloc(size + 1);
    if (!sql)
        return 0;
    memcpy(sql, data, size);
    sql[size] = '\0';
    hs_session *s = NULL;
    hs_error err = {0};
    /* no files by name: a found "CREATE TABLE \"/x\"" or COPY TO must not write
     * outside the scratch directory */
    hs_session_options so = HS_SESSION_OPTIONS_INIT;
    so.no_file_access = 1;
    if (hs_session_open(&so, &s, &err) != HS_OK || hs_session_register(s, "t", tt, &err) != HS_OK ||
        hs_session_register(s, "u", tu, &err) != HS_OK || hs_session_set(s, "threads", "1", &err) != HS_OK)
        abort();
    hs_result *r = NULL;
    hs_status st = hs_session_execute(s, sql, &r, &err);
    if (st != HS_OK) {
        if (r || strlen(hs_session_sqlstate(s)) != 5 || !strcmp(hs_session_sqlstate(s), "00000"))
            abort();
    } else if (hs_result_has_rows(r)) {
        struct ArrowArrayStream stream;
        if (hs_result_stream(r, &stream, &err) != HS_OK)
            abort();
        for (int i = 0; i < 64; i++) {
            struct ArrowArray a;
            if (stream.get_next(&stream, &a) != 0 || !a.release)
                break;
            a.release(&a);
        }
        stream.release(&stream);
    }
    hs_result_free(r);
    hs_session_close(s);
    free(sql);
    return 0;
}
