/*
 * tests/c/test_rowdelta.c - row deltas (hyperstream/table.h hs_row_delta_*):
 *
 *   test                  what it checks
 *   --------------------  ----------------------------------------------------
 *   update_v2 / _v3       positions read with _file/_pos deleted + rows added
 *                         in ONE "overwrite" snapshot; the table reads exactly
 *                         the expected rows (computed here); v2 writes
 *                         position delete files, v3 deletion vectors; v3
 *                         updated rows keep their _row_id and read the new
 *                         sequence number, untouched rows keep both, new
 *                         rows get fresh ids
 *   whole_file            deleting every live row of a file drops the file
 *   conflicts             two deltas on one file from one snapshot: the
 *                         second is HS_CONFLICT and commits nothing; a
 *                         concurrent append or a delete of another file
 *                         rebases; a consumed delta is refused
 *   bad_input             position past the end of the file, unknown file,
 *                         extra column
 *   crash_v2 / _v3        cat_set_io_fault(k) for k = 1.. until the delta
 *                         passes: after each failure the reopened table reads
 *                         exactly the old or the new rows, and takes writes
 *
 * Expected rows are computed by the test from what it wrote.
 */
#define _DEFAULT_SOURCE 1
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- input ---- */

/* rows id (long, required), name (string); with_rowid adds _row_id
 * (rowids[i] < 0 = null) */
static hs_batch *make_rows(const int64_t *ids, const char *const *names, int64_t n,
                           const int64_t *rowids)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "name", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    if (rowids) {
        hs_field_init(&f, "_row_id", HS_TYPE_INT64, true);
        if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    }
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
        const char *nm = names ? names[i] : buf;
        if (!names)
            snprintf(buf, sizeof buf, "n%lld", (long long)ids[i]);
        if (hs_col_append_fixed(b->cols[0], &ids[i]) != HS_OK ||
            hs_col_append_bytes(b->cols[1], nm, strlen(nm)) != HS_OK)
            goto fail;
        if (rowids && (rowids[i] < 0 ? hs_col_append_null(b->cols[2])
                                     : hs_col_append_fixed(b->cols[2], &rowids[i])) != HS_OK)
            goto fail;
    }
    b->n_rows = n;
    return b;
fail:
    hs_batch_free(b);
    return NULL;
}

static int stream_of(hs_batch *b, struct ArrowArrayStream *out)
{
    if (!b)
        return -1;
    return hs_arrow_export_one_batch(b, out, NULL) == HS_OK ? 0 : -1;
}

static hs_status append_range(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    int64_t ids[64];
    for (int64_t i = 0; i < n; i++)
        ids[i] = start + i;
    struct ArrowArrayStream s;
    if (stream_of(make_rows(ids, NULL, n, NULL), &s) != 0)
        return hs_err_set(err, HS_NOMEM, "stream");
    return hs_table_append(t, &s, err);
}

/* ---- reading ---- */

typedef struct row {
    int64_t id;
    char name[24];
    char file[400];
    int64_t pos, row_id, seq;   /* -1 = null */
} row;

typedef struct rowset {
    int n;
    row r[128];
} rowset;

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int64_t i64_at(const hs_column *c, int64_t i)
{
    return hs_col_is_valid(c, i) ? HS_COL_VALUES(c, int64_t)[i] : -1;
}

static void str_at(const hs_column *c, int64_t i, char *out, size_t cap)
{
    out[0] = 0;
    if (!hs_col_is_valid(c, i))
        return;
    const int32_t *off = HS_COL_OFFSETS(c);
    size_t len = (size_t)(off[i + 1] - off[i]);
    if (len >= cap)
        len = cap - 1;
    memcpy(out, c->values.data + off[i], len);
    out[len] = 0;
}

/* Current rows with metadata columns (lineage only on v3), sorted by id. */
static hs_status read_rows(hs_table *t, rowset *rs, hs_error *err)
{
    memset(rs, 0, sizeof *rs);
    bool v3 = hs_table_format_version(t) >= 3;
    const char *cols[] = {"id", "name", "_file", "_pos", "_row_id",
                          "_last_updated_sequence_number"};
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = v3 ? 6 : 4;
    struct ArrowArrayStream s;
    HS_TRY(hs_table_scan(t, &o, &s, err));
    struct ArrowSchema sch;
    if (s.get_schema(&s, &sch) != 0) {
        s.release(&s);
        return hs_err_set(err, HS_INTERNAL, "get_schema");
    }
    hs_field f = {0};
    hs_status st = hs_arrow_import_schema(&sch, &f, err);
    sch.release(&sch);
    while (st == HS_OK) {
        struct ArrowArray a;
        if (s.get_next(&s, &a) != 0) {
            st = hs_err_set(err, HS_IO, "%s", s.get_last_error(&s));
            break;
        }
        if (!a.release)
            break;
        hs_batch *b = NULL;
        st = hs_arrow_import_batch(&a, &f, &b, err);
        for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++) {
            if (rs->n == 128) {
                st = hs_err_set(err, HS_INTERNAL, "too many rows");
                break;
            }
            row *r = &rs->r[rs->n++];
            r->id = i64_at(b->cols[0], i);
            str_at(b->cols[1], i, r->name, sizeof r->name);
            str_at(b->cols[2], i, r->file, sizeof r->file);
            r->pos = i64_at(b->cols[3], i);
            r->row_id = v3 ? i64_at(b->cols[4], i) : -1;
            r->seq = v3 ? i64_at(b->cols[5], i) : -1;
        }
        hs_batch_free(b);
    }
    hs_field_clear(&f);
    s.release(&s);
    qsort(rs->r, (size_t)rs->n, sizeof(row), cmp_row);
    return st;
}

static const row *find_id(const rowset *rs, int64_t id)
{
    for (int i = 0; i < rs->n; i++)
        if (rs->r[i].id == id)
            return &rs->r[i];
    return NULL;
}

/* (id, name) pairs equal to want[0..n) (sorted by id here)? */
typedef struct idname { int64_t id; const char *name; } idname;
static int cmp_idname(const void *a, const void *b)
{
    const idname *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}
static bool rows_are(const rowset *rs, idname *want, int n)
{
    qsort(want, (size_t)n, sizeof *want, cmp_idname);
    if (rs->n != n)
        return false;
    for (int i = 0; i < n; i++)
        if (rs->r[i].id != want[i].id || strcmp(rs->r[i].name, want[i].name) != 0)
            return false;
    return true;
}

/* ---- scratch ---- */

static const char *tmp_dir(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/rowdelta-%s-%d", hs_test_table_root(), name,
             (int)getpid());
    if (!hs_test_on_s3())
        mkdir(buf[k], 0777);
    return buf[k];
}

static hs_status create_table(hs_catalog *cat, const char *name, int fv, hs_table **out,
                              hs_error *err)
{
    hs_batch *b = make_rows(NULL, NULL, 0, NULL);
    struct ArrowSchema as;
    if (!b)
        return hs_err_set(err, HS_NOMEM, "schema");
    hs_status st = hs_arrow_export_schema(&b->schema, &as, err);
    hs_batch_free(b);
    HS_TRY(st);
    hs_table_create_options o = {.arrow_schema = &as, .format_version = fv};
    st = hs_table_create(cat, name, &o, out, err);
    as.release(&as);
    return st;
}

/* base: ids 0..9 (file A) and 10..19 (file B), names n<id> */
static hs_status setup(hs_catalog *cat, const char *name, int fv, hs_table **t, hs_error *err)
{
    HS_TRY(create_table(cat, name, fv, t, err));
    HS_TRY(append_range(*t, 0, 10, err));
    return append_range(*t, 10, 10, err);
}

/* The change used by most tests: delete ids 2 and 15, update id 3 (name
 * "upd3") and id 12 ("upd12"), insert id 100.  Positions come from rs. */
static hs_status the_delta(hs_table *t, const rowset *rs, int64_t read_snap, hs_error *err)
{
    hs_row_delta *d = NULL;
    HS_TRY(hs_row_delta_open(t, read_snap, &d, err));
    hs_status st = HS_OK;
    const int64_t gone[] = {2, 15, 3, 12};
    for (int i = 0; i < 4 && st == HS_OK; i++) {
        const row *r = find_id(rs, gone[i]);
        if (!r) {
            st = hs_err_set(err, HS_INTERNAL, "id %lld not found", (long long)gone[i]);
            break;
        }
        st = hs_row_delta_delete(d, r->file, &r->pos, 1, err);
    }
    int64_t ids[] = {3, 12, 100};
    const char *names[] = {"upd3", "upd12", "n100"};
    const row *r3 = find_id(rs, 3), *r12 = find_id(rs, 12);
    int64_t rowids[] = {r3 ? r3->row_id : -1, r12 ? r12->row_id : -1, -1};
    struct ArrowArrayStream s;
    if (st == HS_OK && stream_of(make_rows(ids, names, 3, rowids), &s) != 0)
        st = hs_err_set(err, HS_NOMEM, "stream");
    if (st == HS_OK)
        st = hs_row_delta_add(d, &s, err);
    if (st == HS_OK && (hs_row_delta_rows_deleted(d) != 4 || hs_row_delta_rows_added(d) != 3))
        st = hs_err_set(err, HS_INTERNAL, "counts %lld/%lld",
                        (long long)hs_row_delta_rows_deleted(d),
                        (long long)hs_row_delta_rows_added(d));
    if (st == HS_OK)
        st = hs_row_delta_commit(d, err);
    hs_row_delta_free(d);
    return st;
}

static int expected_after(idname *want)
{
    int n = 0;
    static char names[20][8];
    for (int i = 0; i < 20; i++) {
        if (i == 2 || i == 15)
            continue;
        snprintf(names[i], sizeof names[i], "n%d", i);
        want[n++] = (idname){i, i == 3 ? "upd3" : i == 12 ? "upd12" : names[i]};
    }
    want[n++] = (idname){100, "n100"};
    return n;
}

static int64_t snap_count(hs_table *t) { return hs_snapshot_count(t); }

static void last_snapshot(hs_table *t, hs_snapshot_info *out)
{
    hs_error err = {0};
    memset(out, 0, sizeof *out);
    int n = hs_snapshot_count(t);
    for (int i = 0; i < n; i++) {
        hs_snapshot_info s = HS_SNAPSHOT_INFO_INIT;
        if (hs_snapshot_get(t, i, &s, &err) == HS_OK && s.snapshot_id == hs_table_current_snapshot_id(t))
            *out = s;
    }
}

static void update_test(int fv)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_dir(fv == 3 ? "upd3" : "upd2"), &cat, &err), &err);
    CHECK_OK(setup(cat, "t", fv, &t, &err), &err);
    rowset before;
    CHECK_OK(read_rows(t, &before, &err), &err);
    REQUIRE(before.n == 20);
    int64_t snaps = snap_count(t);
    int64_t read_snap = hs_table_current_snapshot_id(t);
    CHECK_OK(the_delta(t, &before, read_snap, &err), &err);
    CHECK(snap_count(t) == snaps + 1);   /* ONE snapshot */
    hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
    last_snapshot(t, &si);
    CHECK(strcmp(si.operation, "overwrite") == 0);
    CHECK(si.added_records == 3);
    CHECK(si.total_records == 23);   /* 20 + 3 added; deletes are position deletes */
    rowset after;
    CHECK_OK(read_rows(t, &after, &err), &err);
    idname want[32];
    int nw = expected_after(want);
    CHECK(rows_are(&after, want, nw));
    char *snaps_json = NULL;
    CHECK_OK(hs_table_snapshots(t, &snaps_json, &err), &err);
    CHECK(strstr(snaps_json, fv >= 3 ? "\"added-position-deletes\":\"4\""
                                     : "\"added-position-deletes\":\"4\"") != NULL);
    CHECK(strstr(snaps_json, "\"added-delete-files\":\"2\"") != NULL);
    hs_string_free(snaps_json);
    if (fv >= 3) {
        /* lineage: updated rows keep their id and read the new sequence
         * number; untouched rows keep both; the new row gets a fresh id */
        int64_t new_seq = si.sequence_number;
        for (int i = 0; i < after.n; i++) {
            const row *a = &after.r[i];
            const row *b = find_id(&before, a->id);
            CHECK(a->row_id >= 0 && a->seq >= 0);
            if (a->id == 3 || a->id == 12) {
                CHECK(b && a->row_id == b->row_id);
                CHECK(a->seq == new_seq);
            } else if (a->id == 100) {
                CHECK(a->row_id >= 20);   /* next-row-id was 20 */
                CHECK(a->seq == new_seq);
            } else {
                CHECK(b && a->row_id == b->row_id && a->seq == b->seq);
            }
        }
        /* row ids stay unique */
        for (int i = 0; i < after.n; i++)
            for (int j = i + 1; j < after.n; j++)
                CHECK(after.r[i].row_id != after.r[j].row_id);
        /* a second delta on the same file merges the deletion vector */
        rowset cur;
        CHECK_OK(read_rows(t, &cur, &err), &err);
        hs_row_delta *d = NULL;
        const row *r5 = find_id(&cur, 5);
        REQUIRE(r5);
        CHECK_OK(hs_row_delta_open(t, hs_table_current_snapshot_id(t), &d, &err), &err);
        CHECK_OK(hs_row_delta_delete(d, r5->file, &r5->pos, 1, &err), &err);
        CHECK_OK(hs_row_delta_commit(d, &err), &err);
        hs_row_delta_free(d);
        CHECK_OK(read_rows(t, &cur, &err), &err);
        CHECK(cur.n == nw - 1 && !find_id(&cur, 5) && !find_id(&cur, 2) && find_id(&cur, 4));
    }
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_update_v2(void) { update_test(2); }
static void test_update_v3(void) { update_test(3); }

static void test_whole_file(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_dir("whole"), &cat, &err), &err);
    CHECK_OK(setup(cat, "t", 3, &t, &err), &err);
    rowset rs;
    CHECK_OK(read_rows(t, &rs, &err), &err);
    hs_row_delta *d = NULL;
    CHECK_OK(hs_row_delta_open(t, hs_table_current_snapshot_id(t), &d, &err), &err);
    for (int i = 0; i < rs.n; i++)
        if (rs.r[i].id < 10)
            CHECK_OK(hs_row_delta_delete(d, rs.r[i].file, &rs.r[i].pos, 1, &err), &err);
    CHECK_OK(hs_row_delta_commit(d, &err), &err);
    hs_row_delta_free(d);
    hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
    last_snapshot(t, &si);
    CHECK(si.deleted_data_files == 1 && si.total_data_files == 1 && si.total_records == 10);
    CHECK_OK(read_rows(t, &rs, &err), &err);
    CHECK(rs.n == 10 && rs.r[0].id == 10);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_conflicts(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL, *t2 = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_dir("conf"), &cat, &err), &err);
    CHECK_OK(setup(cat, "t", 2, &t, &err), &err);
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    rowset rs;
    CHECK_OK(read_rows(t, &rs, &err), &err);
    int64_t s0 = hs_table_current_snapshot_id(t);
    const row *r1 = find_id(&rs, 1), *r4 = find_id(&rs, 4), *r11 = find_id(&rs, 11);
    REQUIRE(r1 && r4 && r11);
    /* a concurrent append, then a delta planned before it: rebases */
    CHECK_OK(append_range(t2, 40, 2, &err), &err);
    hs_row_delta *d = NULL;
    CHECK_OK(hs_row_delta_open(t, s0, &d, &err), &err);
    CHECK_OK(hs_row_delta_delete(d, r1->file, &r1->pos, 1, &err), &err);
    CHECK_OK(hs_row_delta_commit(d, &err), &err);
    CHECK(hs_row_delta_commit(d, &err) == HS_INVALID);   /* spent */
    hs_row_delta_free(d);
    rowset cur;
    CHECK_OK(read_rows(t, &cur, &err), &err);
    CHECK(cur.n == 21 && find_id(&cur, 40) && find_id(&cur, 41) && !find_id(&cur, 1));
    /* from s0 again: a delta on file A now conflicts (the delete above
     * touched it), and commits nothing */
    int64_t n_snaps = snap_count(t2);
    CHECK_OK(hs_row_delta_open(t2, s0, &d, &err), &err);
    CHECK_OK(hs_row_delta_delete(d, r4->file, &r4->pos, 1, &err), &err);
    hs_err_clear(&err);
    CHECK(hs_row_delta_commit(d, &err) == HS_CONFLICT);
    CHECK(strstr(err.msg, r4->file) != NULL);
    hs_row_delta_free(d);
    CHECK(snap_count(t2) == n_snaps + 1);   /* t2 refreshed: the delete only */
    /* ... while a delta on file B from s0 rebases over it */
    CHECK_OK(hs_row_delta_open(t2, s0, &d, &err), &err);
    CHECK_OK(hs_row_delta_delete(d, r11->file, &r11->pos, 1, &err), &err);
    CHECK_OK(hs_row_delta_commit(d, &err), &err);
    hs_row_delta_free(d);
    CHECK_OK(read_rows(t2, &cur, &err), &err);
    CHECK(cur.n == 20 && !find_id(&cur, 1) && !find_id(&cur, 11) && find_id(&cur, 4));
    /* an hs_table_delete of a row of file B after s0 also conflicts with a
     * delta on B planned at s0 */
    CHECK_OK(hs_table_delete(t, "id = 13", NULL, &err), &err);
    const row *r14 = find_id(&rs, 14);
    CHECK_OK(hs_row_delta_open(t2, s0, &d, &err), &err);
    CHECK_OK(hs_row_delta_delete(d, r14->file, &r14->pos, 1, &err), &err);
    hs_err_clear(&err);
    CHECK(hs_row_delta_commit(d, &err) == HS_CONFLICT);
    hs_row_delta_free(d);
    /* deleting an already deleted row at the current snapshot is refused */
    int64_t cur_snap = hs_table_current_snapshot_id(t2);
    CHECK_OK(hs_row_delta_open(t2, cur_snap, &d, &err), &err);
    CHECK_OK(hs_row_delta_delete(d, r1->file, &r1->pos, 1, &err), &err);
    CHECK(hs_row_delta_commit(d, &err) == HS_CONFLICT);
    hs_row_delta_free(d);
    hs_table_close(t);
    hs_table_close(t2);
    hs_catalog_close(cat);
}

static void test_bad_input(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_dir("bad"), &cat, &err), &err);
    CHECK_OK(setup(cat, "t", 2, &t, &err), &err);
    rowset rs;
    CHECK_OK(read_rows(t, &rs, &err), &err);
    int64_t s0 = hs_table_current_snapshot_id(t), n_snaps = snap_count(t);
    hs_row_delta *d = NULL;
    int64_t pos = 10;
    CHECK_OK(hs_row_delta_open(t, s0, &d, &err), &err);
    CHECK_OK(hs_row_delta_delete(d, rs.r[0].file, &pos, 1, &err), &err);
    CHECK(hs_row_delta_commit(d, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "position 10") != NULL);
    hs_row_delta_free(d);
    pos = -1;
    CHECK_OK(hs_row_delta_open(t, s0, &d, &err), &err);
    CHECK(hs_row_delta_delete(d, rs.r[0].file, &pos, 1, &err) == HS_INVALID);
    pos = 0;
    CHECK_OK(hs_row_delta_delete(d, "/nonexistent/file.parquet", &pos, 1, &err), &err);
    CHECK(hs_row_delta_commit(d, &err) == HS_CONFLICT);
    hs_row_delta_free(d);
    /* an extra column in the added rows */
    CHECK_OK(hs_row_delta_open(t, s0, &d, &err), &err);
    hs_batch *b = make_rows((const int64_t[]){1}, NULL, 1, (const int64_t[]){5});
    REQUIRE(b);
    b->schema.children[2].name[0] = 'x';   /* "x_row_id": not a table column */
    struct ArrowArrayStream s;
    REQUIRE(stream_of(b, &s) == 0);
    CHECK(hs_row_delta_add(d, &s, &err) == HS_INVALID);
    hs_row_delta_free(d);
    CHECK(snap_count(t) == n_snaps);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* ---- crash consistency ---- */

static int crash_step(const char *wh, int fv, int k, int *n_old, int *n_new)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    char name[32];
    snprintf(name, sizeof name, "t%d", k);
    int done = 0;
    rowset before, after;
    if (hs_catalog_open_path(wh, &cat, &err) != HS_OK || setup(cat, name, fv, &t, &err) != HS_OK ||
        read_rows(t, &before, &err) != HS_OK) {
        fprintf(stderr, "  setup k=%d: %s\n", k, err.msg);
        CHECK(0);
        goto out;
    }
    cat_set_io_fault(k);
    hs_status st = the_delta(t, &before, hs_table_current_snapshot_id(t), &err);
    int64_t reached = cat_io_fault_count();
    cat_set_io_fault(0);
    CHECK(st == HS_OK || st == HS_IO);
    if (st != HS_OK && st != HS_IO)
        fprintf(stderr, "  k=%d: status %d: %s\n", k, (int)st, err.msg);
    if (st == HS_OK && reached < k)
        done = 1;
    hs_table_close(t);
    t = NULL;
    if (hs_table_open(cat, name, &t, &err) != HS_OK || read_rows(t, &after, &err) != HS_OK) {
        fprintf(stderr, "  reopen k=%d: %s\n", k, err.msg);
        CHECK(0);
        goto out;
    }
    idname want[32];
    int n = 0;
    for (int i = 0; i < 20; i++)
        want[n++] = (idname){i, before.r[i].name};
    int state = rows_are(&after, want, n) ? 0 : -1;
    n = expected_after(want);
    if (state < 0 && rows_are(&after, want, n))
        state = 1;
    CHECK(state >= 0);
    if (st == HS_OK)
        CHECK(state == 1);
    if (st != HS_OK && state == 0)
        (*n_old)++;
    if (st != HS_OK && state == 1)
        (*n_new)++;
    if (state < 0)
        fprintf(stderr, "  fv %d k=%d: neither old nor new (status %d: %s)\n", fv, k, (int)st,
                err.msg);
    /* still takes writes */
    if (append_range(t, 500, 2, &err) != HS_OK || read_rows(t, &after, &err) != HS_OK) {
        fprintf(stderr, "  append after fault k=%d: %s\n", k, err.msg);
        CHECK(0);
    } else {
        CHECK(after.n >= 2 && after.r[after.n - 1].id == 501);
    }
out:
    cat_set_io_fault(0);
    hs_table_close(t);
    hs_catalog_close(cat);
    return done;
}

static void crash_loop(int fv)
{
    const char *wh = tmp_dir(fv == 3 ? "crash3" : "crash2");
    char dir[600];
    snprintf(dir, sizeof dir, "%s", wh);
    int n_old = 0, n_new = 0, k, failures = hs_test_failures;
    for (k = 1; k <= 300; k++) {
        if (crash_step(dir, fv, k, &n_old, &n_new))
            break;
        if (hs_test_failures > failures + 10)
            break;
    }
    CHECK(k <= 300);
    CHECK(n_old > 0);
    fprintf(stderr, "  row delta v%d: %d fault points, %d failures read old, %d read new\n", fv,
            k - 1, n_old, n_new);
}

static void test_crash_v2(void) { crash_loop(2); }
static void test_crash_v3(void) { crash_loop(3); }

int main(void)
{
    HS_RUN(test_update_v2);
    HS_RUN(test_update_v3);
    HS_RUN(test_whole_file);
    HS_RUN(test_conflicts);
    HS_RUN(test_bad_input);
    HS_RUN(test_crash_v2);
    HS_RUN(test_crash_v3);
    return hs_test_summary();
}
