/*
 * tests/c/test_table.c - the table API (hyperstream/table.h) end to end
 * through path and SQL catalogs: create, append (unpartitioned and
 * partitioned), scan with filters and projection, pruning counters, time
 * travel, tags, rollback, schema evolution, deletes (v2 position deletes and
 * v3 deletion vectors), overwrite, row lineage, upgrade.
 *
 * Expected values are computed independently in the test (the rows it wrote,
 * filtered by hand); pyiceberg is the external oracle in
 * tests/python/test_table_pyiceberg.py.
 */
#include "harness.h"

#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "io/io.h"
#include "hyperstream/config.h"
#include "hyperstream/table.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- building input ---- */

/* rows i in [start, start+n): id = i, name = "n<i>", v = i * 0.5 (null when
 * i % 10 == 3), cat = "c<i % 3>" */
static hs_batch *make_rows(int64_t start, int64_t n)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "name", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "v", HS_TYPE_FLOAT64, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "cat", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    char buf[32];
    for (int64_t i = start; i < start + n; i++) {
        double v = (double)i * 0.5;
        int len = snprintf(buf, sizeof buf, "n%lld", (long long)i);
        if (hs_col_append_fixed(b->cols[0], &i) != HS_OK ||
            hs_col_append_bytes(b->cols[1], buf, (size_t)len) != HS_OK ||
            (i % 10 == 3 ? hs_col_append_null(b->cols[2]) : hs_col_append_fixed(b->cols[2], &v)) != HS_OK)
            return NULL;
        len = snprintf(buf, sizeof buf, "c%lld", (long long)(i % 3));
        if (hs_col_append_bytes(b->cols[3], buf, (size_t)len) != HS_OK)
            return NULL;
    }
    b->n_rows = n;
    return b;
}

typedef struct one_src { hs_batch *b; } one_src;

static hs_status one_next(void *ctx, hs_batch **out, hs_error *err)
{
    one_src *s = ctx;
    *out = s->b;
    s->b = NULL;
    return HS_OK;
}

static void one_close(void *ctx)
{
    one_src *s = ctx;
    hs_batch_free(s->b);
    hs_free(s);
}

static int stream_of(hs_batch *b, struct ArrowArrayStream *out)
{
    one_src *s = hs_calloc(1, sizeof *s);
    s->b = b;
    hs_batch_source src = {.next = one_next, .close = one_close, .ctx = s};
    if (hs_field_copy(&b->schema, &src.schema) != HS_OK)
        return -1;
    return hs_arrow_export_stream(&src, out, NULL) == HS_OK ? 0 : -1;
}

static hs_status append_rows(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    struct ArrowArrayStream s;
    if (stream_of(make_rows(start, n), &s) != 0)
        return HS_NOMEM;
    return hs_table_append(t, &s, err);
}

/* ---- reading results ---- */

typedef struct result {
    int64_t n;
    int64_t id_sum;
    int64_t ids[4096];
    int n_cols;
    char names[8][64];
    int64_t row_ids[4096];
    int has_row_id;
} result;

static int scan_into(hs_table *t, const hs_scan_options *o, result *r, hs_error *err)
{
    memset(r, 0, sizeof *r);
    struct ArrowArrayStream s;
    if (hs_table_scan(t, o, &s, err) != HS_OK)
        return -1;
    struct ArrowSchema sch;
    if (s.get_schema(&s, &sch) != 0) {
        s.release(&s);
        return -1;
    }
    hs_field f = {0};
    int rc = hs_arrow_import_schema(&sch, &f, err) == HS_OK ? 0 : -1;
    sch.release(&sch);
    r->n_cols = f.n_children;
    int id_col = -1, rid_col = -1;
    for (int i = 0; i < f.n_children && i < 8; i++) {
        snprintf(r->names[i], sizeof r->names[i], "%s", f.children[i].name);
        if (strcmp(f.children[i].name, "id") == 0)
            id_col = i;
        if (strcmp(f.children[i].name, "_row_id") == 0)
            rid_col = i;
    }
    r->has_row_id = rid_col >= 0;
    while (rc == 0) {
        struct ArrowArray a;
        if (s.get_next(&s, &a) != 0) {
            fprintf(stderr, "get_next: %s\n", s.get_last_error(&s));
            rc = -1;
            break;
        }
        if (!a.release)
            break;
        hs_batch *b = NULL;
        if (hs_arrow_import_batch(&a, &f, &b, err) != HS_OK) {
            rc = -1;
            break;
        }
        for (int64_t i = 0; i < b->n_rows; i++) {
            int64_t id = id_col >= 0 ? HS_COL_VALUES(b->cols[id_col], int64_t)[i] : 0;
            if (r->n < 4096) {
                r->ids[r->n] = id;
                if (rid_col >= 0)
                    r->row_ids[r->n] = hs_col_is_valid(b->cols[rid_col], i)
                                           ? HS_COL_VALUES(b->cols[rid_col], int64_t)[i] : -1;
            }
            r->id_sum += id;
            r->n++;
        }
        hs_batch_free(b);
    }
    hs_field_clear(&f);
    s.release(&s);
    return rc;
}

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s-%d", hs_test_table_root(), name, (int)getpid());
    return buf[k];
}

/* A local scratch path (SQLite catalog files), whatever the storage matrix says. */
static const char *local_path(const char *name)
{
    static char buf[2][512];
    static int k;
    k = (k + 1) % 2;
    snprintf(buf[k], sizeof buf[k], "%s/%s-%d", hs_test_tmpdir(), name, (int)getpid());
    return buf[k];
}

static hs_table *create_table(hs_catalog *cat, const char *name, const char *spec, int fv,
                              const char *sort, hs_error *err)
{
    hs_batch *b = make_rows(0, 0);
    struct ArrowSchema as;
    if (!b || hs_arrow_export_schema(&b->schema, &as, err) != HS_OK)
        return NULL;
    hs_batch_free(b);
    hs_table_create_options o = {.arrow_schema = &as, .partition_spec = spec,
                                 .format_version = fv, .sort_order = sort};
    hs_table *t = NULL;
    hs_status st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    return st == HS_OK ? t : NULL;
}

/* ---- tests ---- */

static void test_filter_errors(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_err"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", NULL, 2, NULL, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 10, &err), &err);
    result r;
    hs_scan_options o = {.filter = "id >"};
    hs_err_clear(&err);
    CHECK(scan_into(t, &o, &r, &err) != 0);
    CHECK(strstr(err.msg, "filter") != NULL);
    o.filter = "nope = 1";
    hs_err_clear(&err);
    CHECK(scan_into(t, &o, &r, &err) != 0);
    CHECK(strstr(err.msg, "nope") != NULL);
    o.filter = "name = 5";
    hs_err_clear(&err);
    CHECK(scan_into(t, &o, &r, &err) != 0);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_append_scan_unpartitioned(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh1"), &cat, &err), &err);
    hs_table *t = create_table(cat, "db/t1", NULL, 2, NULL, &err);
    if (!t)
        fprintf(stderr, "create: %s\n", err.msg);
    REQUIRE(t);
    CHECK(hs_table_current_snapshot_id(t) == -1);
    result r;
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 0);
    CHECK(r.n_cols == 4);
    CHECK_OK(append_rows(t, 0, 100, &err), &err);
    int64_t s1 = hs_table_current_snapshot_id(t);
    CHECK(s1 > 0);
    CHECK_OK(append_rows(t, 100, 50, &err), &err);
    CHECK(hs_snapshot_count(t) == 2);
    hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
    CHECK_OK(hs_snapshot_get(t, 1, &si, &err), &err);
    CHECK(si.total_records == 150);
    CHECK(si.added_records == 50);
    CHECK(si.parent_id == s1);
    CHECK(strcmp(si.operation, "append") == 0);

    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 150);
    CHECK(r.id_sum == 149 * 150 / 2);

    /* reopen from the catalog */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "db/t1", &t2, &err), &err);
    CHECK(hs_table_current_snapshot_id(t2) == hs_table_current_snapshot_id(t));

    /* filter + projection */
    const char *cols[] = {"id", "cat"};
    hs_scan_options o = {.columns = cols, .n_columns = 2, .filter = "id >= 10 AND id < 20 OR id IN (120, 121)"};
    CHECK(scan_into(t2, &o, &r, &err) == 0);
    CHECK(r.n == 12);
    CHECK(r.n_cols == 2);
    CHECK(strcmp(r.names[1], "cat") == 0);
    CHECK(r.id_sum == 145 + 241);
    o.filter = "v IS NULL";
    CHECK(scan_into(t2, &o, &r, &err) == 0);
    CHECK(r.n == 15);
    o.filter = "NOT (v IS NULL) AND cat = 'c1'";
    CHECK(scan_into(t2, &o, &r, &err) == 0);
    int64_t expect = 0;
    for (int i = 0; i < 150; i++)
        expect += i % 10 != 3 && i % 3 == 1;
    CHECK(r.n == expect);

    /* manifest-bound pruning: the second file holds ids 100..149 */
    hs_scan *sc = NULL;
    hs_scan_options po = {.filter = "id < 50"};
    CHECK_OK(hs_scan_plan(t2, &po, &sc, &err), &err);
    hs_scan_stats stt = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(sc, &stt);
    CHECK(stt.data_files_total == 2);
    CHECK(stt.data_files_pruned == 1);
    hs_scan_free(sc);

    /* time travel */
    hs_scan_options tt = {.use_snapshot_id = 1, .snapshot_id = s1};
    CHECK(scan_into(t2, &tt, &r, &err) == 0);
    CHECK(r.n == 100);
    CHECK_OK(hs_table_create_tag(t2, "first", s1, &err), &err);
    hs_scan_options tg = {.ref = "first"};
    CHECK(scan_into(t2, &tg, &r, &err) == 0);
    CHECK(r.n == 100);
    CHECK(hs_table_create_tag(t2, "first", s1, &err) == HS_CONFLICT);
    hs_err_clear(&err);

    /* rollback */
    CHECK_OK(hs_table_rollback_to_snapshot(t2, s1, &err), &err);
    CHECK(hs_table_current_snapshot_id(t2) == s1);
    CHECK(scan_into(t2, NULL, &r, &err) == 0);
    CHECK(r.n == 100);
    char *hist = NULL;
    CHECK_OK(hs_table_history(t2, &hist, &err), &err);
    CHECK(hist && strstr(hist, "is_current_ancestor"));
    hs_string_free(hist);
    char *snaps = NULL;
    CHECK_OK(hs_table_snapshots(t2, &snaps, &err), &err);
    CHECK(snaps && strstr(snaps, "total-records"));
    hs_string_free(snaps);

    hs_table_close(t2);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_partitioned(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh2"), &cat, &err), &err);
    hs_table *t = create_table(cat, "p", "cat, bucket(4, id)", 2, "id DESC", &err);
    if (!t)
        fprintf(stderr, "create: %s\n", err.msg);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 300, &err), &err);
    result r;
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 300);
    CHECK(r.id_sum == 299 * 300 / 2);
    hs_scan *sc = NULL;
    hs_scan_options po = {.filter = "cat = 'c2'"};
    CHECK_OK(hs_scan_plan(t, &po, &sc, &err), &err);
    hs_scan_stats stt = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(sc, &stt);
    CHECK(stt.data_files_total == 12);
    CHECK(stt.data_files_pruned == 8);
    hs_scan_free(sc);
    CHECK(scan_into(t, &po, &r, &err) == 0);
    CHECK(r.n == 100);
    /* within a file, rows are sorted by id DESC */
    po.filter = "cat = 'c2' AND id = 5";
    CHECK_OK(hs_scan_plan(t, &po, &sc, &err), &err);
    hs_scan_get_stats(sc, &stt);
    CHECK(stt.data_files_total - stt.data_files_pruned == 1);
    hs_scan_free(sc);
    CHECK(scan_into(t, &po, &r, &err) == 0);
    CHECK(r.n == 1 && r.ids[0] == 5);

    /* spec evolution: old files keep their spec */
    CHECK_OK(hs_table_update_spec(t, "truncate(2, name)", &err), &err);
    CHECK_OK(append_rows(t, 300, 20, &err), &err);
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 320);
    po.filter = "name = 'n305'";
    CHECK(scan_into(t, &po, &r, &err) == 0);
    CHECK(r.n == 1 && r.ids[0] == 305);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_schema_evolution(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh3"), &cat, &err), &err);
    hs_table *t = create_table(cat, "s", NULL, 2, NULL, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 10, &err), &err);
    CHECK_OK(hs_table_update_schema(t, "[{\"op\":\"rename\",\"name\":\"name\",\"to\":\"label\"},"
                                       "{\"op\":\"add\",\"name\":\"extra\",\"type\":\"int\"},"
                                       "{\"op\":\"drop\",\"name\":\"v\"},"
                                       "{\"op\":\"move\",\"name\":\"cat\",\"first\":true}]", &err),
             &err);
    result r;
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 10);
    CHECK(r.n_cols == 4);
    CHECK(strcmp(r.names[0], "cat") == 0);
    CHECK(strcmp(r.names[2], "label") == 0);
    CHECK(strcmp(r.names[3], "extra") == 0);
    hs_scan_options o = {.filter = "label = 'n4'"};
    CHECK(scan_into(t, &o, &r, &err) == 0);
    CHECK(r.n == 1 && r.ids[0] == 4);
    o.filter = "extra IS NULL";
    CHECK(scan_into(t, &o, &r, &err) == 0);
    CHECK(r.n == 10);
    CHECK(hs_table_update_schema(t, "[{\"op\":\"drop\",\"name\":\"zzz\"}]", &err) != HS_OK);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_deletes(int fv)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path(fv == 3 ? "wh5" : "wh4"), &cat, &err), &err);
    hs_table *t = create_table(cat, "d", "cat", fv, NULL, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 60, &err), &err);
    int64_t n = 0;
    CHECK_OK(hs_table_delete(t, "id < 10", &n, &err), &err);
    CHECK(n == 10);
    result r;
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 50);
    /* second delete on the same files (v3: merged DVs) */
    CHECK_OK(hs_table_delete(t, "id >= 10 AND id < 15", &n, &err), &err);
    CHECK(n == 5);
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    CHECK(r.n == 45);
    /* a whole partition: files removed */
    CHECK_OK(hs_table_delete(t, "cat = 'c0'", &n, &err), &err);
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    int64_t expect = 0, sum = 0;
    for (int i = 15; i < 60; i++)
        if (i % 3 != 0) {
            expect++;
            sum += i;
        }
    CHECK(r.n == expect);
    CHECK(r.id_sum == sum);
    CHECK(hs_table_delete(t, "id = 100000", &n, &err) == HS_OK && n == 0);
    /* overwrite by filter: replace c1 rows */
    struct ArrowArrayStream s;
    REQUIRE(stream_of(make_rows(1000, 3), &s) == 0);
    CHECK_OK(hs_table_overwrite(t, &s, "cat = 'c1' AND id < 40", &err), &err);
    CHECK(scan_into(t, NULL, &r, &err) == 0);
    expect = 0;
    sum = 0;
    for (int i = 15; i < 60; i++)
        if (i % 3 == 2 || (i % 3 == 1 && i >= 40)) {
            expect++;
            sum += i;
        }
    CHECK(r.n == expect + 3);
    CHECK(r.id_sum == sum + 3003);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_deletes_v2(void) { test_deletes(2); }
static void test_deletes_v3(void) { test_deletes(3); }

static void test_row_lineage(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh6"), &cat, &err), &err);
    hs_table *t = create_table(cat, "l", NULL, 2, NULL, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 5, &err), &err);
    CHECK_OK(hs_table_upgrade_format_version(t, 3, &err), &err);
    CHECK(hs_table_format_version(t) == 3);
    CHECK_OK(append_rows(t, 5, 5, &err), &err);
    hs_scan_options o = {.include_row_lineage = 1};
    result r;
    CHECK(scan_into(t, &o, &r, &err) == 0);
    CHECK(r.n == 10);
    CHECK(r.has_row_id);
    /* every row has a distinct id after the first v3 commit assigned the old manifest */
    int distinct = 1;
    for (int i = 0; i < r.n; i++)
        for (int k = 0; k < i; k++)
            if (r.row_ids[i] == r.row_ids[k] || r.row_ids[i] < 0)
                distinct = 0;
    CHECK(distinct);
    CHECK(hs_table_upgrade_format_version(t, 2, &err) == HS_INVALID);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* Planning keeps decoded manifests in a process-wide cache (table/mcache.c):
 * warm scans, scans with the cache off (HS_MANIFEST_CACHE_MB=0) and time
 * travel through shared manifests agree with the rows written; a manifest
 * damaged in place is read again (the scan fails instead of answering from
 * the cache), and restored it serves again. */
static void test_manifest_cache(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    const char *wh = tmp_path("wh_mcache");
    CHECK_OK(hs_catalog_open_path(wh, &cat, &err), &err);
    hs_table *t = create_table(cat, "t", NULL, 2, NULL, &err);
    REQUIRE(t);
    int64_t snaps[5];
    for (int i = 0; i < 5; i++) {
        CHECK_OK(append_rows(t, i * 100, 100, &err), &err);
        snaps[i] = hs_table_current_snapshot_id(t);
    }
    hs_scan_options o = {.filter = "id >= 150 AND id < 420"};
    int64_t want_n = 270, want_sum = 0;
    for (int64_t i = 150; i < 420; i++)
        want_sum += i;
    for (int round = 0; round < 3; round++) {   /* cold, warm, cache off */
        if (round == 2)
            CHECK_OK(hs_config_set_int("manifest_cache_mb", 0, &err), &err);
        result r;
        CHECK(scan_into(t, &o, &r, &err) == 0);
        CHECK(r.n == want_n && r.id_sum == want_sum);
    }
    CHECK_OK(hs_config_set("manifest_cache_mb", NULL, &err), &err);
    for (int k = 0; k < 5; k++) {   /* each snapshot lists a prefix of the manifests */
        hs_scan_options ot = {.use_snapshot_id = 1, .snapshot_id = snaps[k]};
        result r;
        CHECK(scan_into(t, &ot, &r, &err) == 0);
        CHECK(r.n == (k + 1) * 100);
    }
    if (hs_test_on_s3()) {   /* the rest damages a local file in place */
        hs_table_close(t);
        hs_catalog_close(cat);
        return;
    }
    /* damage one data manifest in place (same size, new content) */
    char mdir[600];
    snprintf(mdir, sizeof mdir, "%s/t/metadata", wh);
    DIR *d = opendir(mdir);
    REQUIRE(d);
    char victim[900] = "";
    struct dirent *de;
    while ((de = readdir(d)) && !victim[0])
        if (strstr(de->d_name, ".avro") && strncmp(de->d_name, "snap-", 5) != 0)
            snprintf(victim, sizeof victim, "%s/%s", mdir, de->d_name);
    closedir(d);
    REQUIRE(victim[0]);
    hs_buf orig = {0};
    CHECK_OK(hs_local_read_all(victim, &orig, &err), &err);
    REQUIRE(orig.len > 64);
    hs_buf bad = {0};
    REQUIRE(hs_buf_append(&bad, orig.data, orig.len) == HS_OK);
    memset(bad.data + 16, 0xff, bad.len - 32);
    usleep(20000);   /* a different modification time on coarse clocks too */
    FILE *fp = fopen(victim, "wb");
    REQUIRE(fp);
    REQUIRE(fwrite(bad.data, 1, bad.len, fp) == bad.len);
    fclose(fp);
    hs_scan_options all = {0};
    result r;
    hs_err_clear(&err);
    CHECK(scan_into(t, &all, &r, &err) != 0);
    usleep(20000);
    fp = fopen(victim, "wb");
    REQUIRE(fp);
    REQUIRE(fwrite(orig.data, 1, orig.len, fp) == orig.len);
    fclose(fp);
    hs_err_clear(&err);
    CHECK(scan_into(t, &all, &r, &err) == 0);
    CHECK(r.n == 500);
    hs_buf_free(&orig);
    hs_buf_free(&bad);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_sql_catalog(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    const char *dir = tmp_path("sqlwh");
    char db[600];
    snprintf(db, sizeof db, "%s.db", local_path("sqlwh"));
    CHECK_OK(hs_catalog_open_sql(db, "default", dir, &cat, &err), &err);
    CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
    hs_table *t = create_table(cat, "ns.tab", NULL, 2, NULL, &err);
    if (!t)
        fprintf(stderr, "create_table: %s\n", err.msg);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 20, &err), &err);
    CHECK_OK(append_rows(t, 20, 20, &err), &err);
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "ns.tab", &t2, &err), &err);
    result r;
    CHECK(scan_into(t2, NULL, &r, &err) == 0);
    CHECK(r.n == 40);
    char *names = NULL;
    CHECK_OK(hs_catalog_list_tables(cat, "ns", &names, &err), &err);
    CHECK(names && strstr(names, "tab"));
    hs_string_free(names);
    const char *k[] = {"owner"}, *v[] = {"me"};
    CHECK_OK(hs_table_set_properties(t2, k, v, 1, &err), &err);
    char *props = NULL;
    CHECK_OK(hs_table_properties(t2, &props, &err), &err);
    CHECK(props && strstr(props, "\"owner\""));
    hs_string_free(props);
    CHECK_OK(hs_table_remove_properties(t2, k, 1, &err), &err);
    hs_table_close(t2);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* A handle opened before its table was dropped and created again at the same
 * name: its commits must fail, never land in the new table - neither when the
 * new table reached the handle's metadata version name (path tables: v2 ==
 * v2) nor when it did not (the retry loop would rebase onto the new table). */
static void stale_handle_case(hs_catalog *cat, const char *name)
{
    hs_error err = {0};
    hs_table *old = create_table(cat, name, NULL, 2, NULL, &err);
    if (!old)
        fprintf(stderr, "create_table: %s\n", err.msg);
    REQUIRE(old);
    CHECK_OK(append_rows(old, 0, 10, &err), &err);          /* old at v2 */
    CHECK_OK(hs_catalog_drop_table(cat, name, 0, &err), &err);
    hs_table *fresh = create_table(cat, name, NULL, 2, NULL, &err);
    REQUIRE(fresh);
    /* new table at v1: the old handle's base (v2) is not current */
    CHECK(append_rows(old, 100, 5, &err) == HS_CONFLICT);
    CHECK(strstr(err.msg, "dropped and created again") != NULL);
    hs_err_clear(&err);
    CHECK_OK(append_rows(fresh, 1000, 3, &err), &err);      /* new at v2 */
    /* same version name as the old handle's base */
    CHECK(append_rows(old, 200, 5, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    const char *k[] = {"owner"}, *v[] = {"old"};
    CHECK(hs_table_set_properties(old, k, v, 1, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    hs_table *check = NULL;
    CHECK_OK(hs_table_open(cat, name, &check, &err), &err);
    result r;
    CHECK(scan_into(check, NULL, &r, &err) == 0);
    CHECK(r.n == 3 && r.id_sum == 1000 + 1001 + 1002);
    CHECK(hs_snapshot_count(check) == 1);
    char *props = NULL;
    CHECK_OK(hs_table_properties(check, &props, &err), &err);
    CHECK(props && !strstr(props, "owner"));
    hs_string_free(props);
    /* after a drop alone: HS_NOT_FOUND */
    CHECK_OK(hs_catalog_drop_table(cat, name, 1, &err), &err);
    CHECK(append_rows(fresh, 0, 1, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    hs_table_close(check);
    hs_table_close(fresh);
    hs_table_close(old);
}

static void test_stale_handle_after_recreate(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_recreate"), &cat, &err), &err);
    stale_handle_case(cat, "t");
    hs_catalog_close(cat);
    const char *dir = tmp_path("sql_recreate");
    char db[600];
    snprintf(db, sizeof db, "%s.db", local_path("sql_recreate"));
    CHECK_OK(hs_catalog_open_sql(db, "default", dir, &cat, &err), &err);
    CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
    stale_handle_case(cat, "ns.t");
    hs_catalog_close(cat);
}

int main(void)
{
    HS_RUN(test_filter_errors);
    HS_RUN(test_append_scan_unpartitioned);
    HS_RUN(test_partitioned);
    HS_RUN(test_schema_evolution);
    HS_RUN(test_deletes_v2);
    HS_RUN(test_deletes_v3);
    HS_RUN(test_row_lineage);
    HS_RUN(test_sql_catalog);
    HS_RUN(test_manifest_cache);
    HS_RUN(test_stale_handle_after_recreate);
    return hs_test_summary();
}
