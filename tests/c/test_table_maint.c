/*
 * tests/c/test_table_maint.c - table maintenance through the public API
 * (hyperstream/table.h "Maintenance"): expire_snapshots (retain last N,
 * older than, explicit ids, tags and branches kept, dry run, the files it
 * deletes are exactly those no remaining snapshot reaches), remove_orphan
 * files (stray files in every directory, the safety window, dry run),
 * rewrite_manifests, compaction (rows unchanged as a multiset against the
 * rows the test generated, deletes applied and dropped, sidecars rebuilt
 * and used, a concurrent append kept, a concurrent delete of rewritten rows
 * a conflict, cancel), cherrypick, rewrite_position_delete_files (v2
 * merge, dangling deletes dropped, v3 folding into deletion vectors, a
 * concurrent delete kept by the retry, a fault at every I/O step),
 * compaction with partial progress (one commit a file group or max_commits,
 * a cancel or a fault keeps the committed groups and leaves no orphan).  The oracle is the generator: row i has
 * id = i and cat = "c<i % 5>", and the test knows which ids it deleted.
 * Every test checks that the library's allocations return to where they
 * started.
 */
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/index.h"
#include "hyperstream/table.h"
#include "io/io.h"
#include "parquet/reader.h"
#include "table/mcache.h"
#include "table/table_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

/* ---- rows ---- */

static hs_batch *make_rows(int64_t start, int64_t n)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "cat", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    char buf[16];
    for (int64_t i = start; i < start + n; i++) {
        int len = snprintf(buf, sizeof buf, "c%d", (int)(i % 5));
        if (hs_col_append_fixed(b->cols[0], &i) != HS_OK ||
            hs_col_append_bytes(b->cols[1], buf, (size_t)len) != HS_OK)
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

static hs_status append_rows(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    hs_batch *b = make_rows(start, n);
    if (!b)
        return HS_NOMEM;
    one_src *s = hs_calloc(1, sizeof *s);
    s->b = b;
    hs_batch_source src = {.next = one_next, .close = one_close, .ctx = s};
    struct ArrowArrayStream out;
    if (hs_field_copy(&b->schema, &src.schema) != HS_OK)
        return HS_NOMEM;
    HS_TRY(hs_arrow_export_stream(&src, &out, err));
    return hs_table_append(t, &out, err);
}

/* ---- reading back: the multiset of ids as count, sum, sum of squares ---- */

typedef struct digest { int64_t n, sum, sq; } digest;

static void digest_add(digest *d, int64_t id)
{
    d->n++;
    d->sum += id;
    d->sq += id * id;
}

static bool digest_eq(digest a, digest b) { return a.n == b.n && a.sum == b.sum && a.sq == b.sq; }

/* Scan of snapshot `snap` (-1 = current) with filter; -1 in n on failure.
 * stats (may be NULL) gets the index counters. */
static digest scan_digest(hs_table *t, int64_t snap, const char *filter, hs_index_stats *stats)
{
    digest d = {-1, 0, 0};
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    const char *cols[] = {"id"};
    o.columns = cols;
    o.n_columns = 1;
    o.filter = filter;
    if (snap >= 0) {
        o.use_snapshot_id = 1;
        o.snapshot_id = snap;
    }
    hs_scan *s = NULL;
    hs_error err = {0};
    if (hs_scan_plan(t, &o, &s, &err) != HS_OK) {
        fprintf(stderr, "scan: %s\n", err.msg);
        return d;
    }
    struct ArrowArrayStream st;
    if (hs_scan_stream(s, &st, &err) != HS_OK)
        return d;
    d.n = 0;
    struct ArrowArray a;
    while (st.get_next(&st, &a) == 0 && a.release) {
        const int64_t *v = a.children[0]->buffers[1];
        for (int64_t i = 0; i < a.length; i++)
            digest_add(&d, v[i + a.children[0]->offset]);
        a.release(&a);
    }
    if (stats)
        hs_scan_get_index_stats(s, stats);
    st.release(&st);
    return d;
}

static digest expect_digest(int64_t n, bool (*deleted)(int64_t), bool (*match)(int64_t))
{
    digest d = {0, 0, 0};
    for (int64_t i = 0; i < n; i++)
        if ((!deleted || !deleted(i)) && (!match || match(i)))
            digest_add(&d, i);
    return d;
}

/* ---- tables and files ---- */

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/maint-%s-%d", hs_test_table_root(), name, (int)getpid());
    return buf[k];
}

static hs_table *create_table(hs_catalog *cat, const char *name, int fv, const char *partition,
                              hs_error *err)
{
    hs_batch *b = make_rows(0, 0);
    struct ArrowSchema as;
    if (!b || hs_arrow_export_schema(&b->schema, &as, err) != HS_OK)
        return NULL;
    hs_batch_free(b);
    hs_table_create_options o = {.arrow_schema = &as, .format_version = fv,
                                 .partition_spec = partition};
    hs_table *t = NULL;
    hs_status st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    return st == HS_OK ? t : NULL;
}

/* local or S3 alike (tests/c/harness.c) */
static bool file_exists(const char *p) { return hs_test_exists(p); }

/* Files under dir (recursive), counted; names containing `part` only. */
static int count_files(const char *dir, const char *part) { return hs_test_count_files(dir, part); }

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The current snapshot's summary value of key, as a number (-1 if none). */
static int64_t summary_of(hs_table *t, int64_t snap, const char *key)
{
    char *s = NULL;
    if (hs_table_snapshots(t, &s, NULL) != HS_OK)
        return -2;
    json_t *j = json_loads(s, 0, NULL);
    hs_string_free(s);
    int64_t r = -1;
    size_t i;
    json_t *o;
    json_array_foreach(j, i, o) {
        if (json_integer_value(json_object_get(o, "snapshot-id")) != snap)
            continue;
        const char *v = json_string_value(json_object_get(json_object_get(o, "summary"), key));
        if (v)
            r = strcmp(key, "operation") == 0 ? (strcmp(v, "replace") == 0 ? 1 : 0)
                                              : strtoll(v, NULL, 10);
    }
    json_decref(j);
    return r;
}

static void cleanup_caches(void)
{
    pq_footer_cache_clear();
    tbl_index_cache_clear();
    tbl_mcache_clear();
}

/* ---- expire_snapshots ---- */

static bool del_mod7(int64_t i) { return i % 7 == 3; }

static void test_expire(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("expire"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, NULL, &err);
    REQUIRE(t);
    int64_t snaps[6];
    for (int k = 0; k < 5; k++) {
        CHECK_OK(append_rows(t, k * 100, 100, &err), &err);
        snaps[k] = hs_table_current_snapshot_id(t);
    }
    int64_t n_del = 0;
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", &n_del, &err), &err);
    snaps[5] = hs_table_current_snapshot_id(t);
    CHECK(n_del == expect_digest(500, NULL, del_mod7).n);
    CHECK_OK(hs_table_create_tag(t, "keep", snaps[1], &err), &err);
    /* the rows each snapshot holds, before */
    digest at[6];
    for (int k = 0; k < 6; k++)
        at[k] = scan_digest(t, snaps[k], NULL, NULL);
    CHECK(digest_eq(at[5], expect_digest(500, del_mod7, NULL)));
    char *ml_expired = NULL;
    {
        /* the manifest list of snapshot 0 (to be expired) */
        char *s = NULL;
        CHECK_OK(hs_table_snapshots(t, &s, &err), &err);
        json_t *j = json_loads(s, 0, NULL);
        hs_string_free(s);
        ml_expired = strdup(json_string_value(json_object_get(json_array_get(j, 0),
                                                              "manifest-list")));
        json_decref(j);
    }
    /* the current snapshot cannot be expired by id; a tagged one neither */
    hs_expire_options o = HS_EXPIRE_OPTIONS_INIT;
    o.snapshot_ids = &snaps[5];
    o.n_snapshot_ids = 1;
    CHECK(hs_table_expire_snapshots(t, &o, NULL, &err) == HS_INVALID);
    hs_err_clear(&err);
    o.snapshot_ids = &snaps[1];
    CHECK(hs_table_expire_snapshots(t, &o, NULL, &err) == HS_INVALID);
    hs_err_clear(&err);
    /* dry run: lists, changes nothing */
    hs_expire_options d = HS_EXPIRE_OPTIONS_INIT;
    d.retain_last = 2;
    d.dry_run = 1;
    char *res = NULL;
    CHECK_OK(hs_table_expire_snapshots(t, &d, &res, &err), &err);
    json_t *jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    /* retain 2 of main (snaps 5, 4) + the tag (snap 1): 0, 2, 3 go */
    CHECK(json_array_size(json_object_get(jr, "expired_snapshot_ids")) == 3);
    size_t n_listed = json_array_size(json_object_get(jr, "deleted_files"));
    CHECK(n_listed > 0);
    json_decref(jr);
    CHECK(hs_snapshot_count(t) == 6);
    CHECK(file_exists(ml_expired));
    /* the real thing */
    CHECK_OK(hs_table_expire_snapshots(t, &(hs_expire_options){.struct_size = sizeof d,
                                                               .retain_last = 2}, &res, &err),
             &err);
    jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    CHECK(json_array_size(json_object_get(jr, "deleted_files")) == n_listed);
    /* every deleted file is gone; none is reachable any more */
    size_t i;
    json_t *f;
    int n_data = 0;
    json_array_foreach(json_object_get(jr, "deleted_files"), i, f) {
        CHECK(!file_exists(json_string_value(json_object_get(f, "path"))));
        n_data += strcmp(json_string_value(json_object_get(f, "kind")), "data") == 0;
    }
    /* appends only add files: the expired snapshots' data files all stay
     * reachable from the kept ones */
    CHECK(n_data == 0);
    json_decref(jr);
    CHECK(hs_snapshot_count(t) == 3);
    CHECK(!file_exists(ml_expired));
    free(ml_expired);
    /* the kept snapshots still read what they held */
    CHECK(digest_eq(scan_digest(t, snaps[1], NULL, NULL), at[1]));
    CHECK(digest_eq(scan_digest(t, snaps[4], NULL, NULL), at[4]));
    CHECK(digest_eq(scan_digest(t, snaps[5], NULL, NULL), at[5]));
    /* the history names no expired snapshot */
    char *h = NULL;
    CHECK_OK(hs_table_history(t, &h, &err), &err);
    json_t *jh = json_loads(h, 0, NULL);
    hs_string_free(h);
    CHECK(json_array_size(jh) == 3);
    json_t *he;
    json_array_foreach(jh, i, he) {
        int64_t sid = json_integer_value(json_object_get(he, "snapshot_id"));
        CHECK(sid == snaps[1] || sid == snaps[4] || sid == snaps[5]);
    }
    json_decref(jh);
    /* older than: nothing is older than an hour ago */
    hs_expire_options ot = HS_EXPIRE_OPTIONS_INIT;
    ot.use_older_than = 1;
    ot.older_than_ms = now_ms() - 3600 * 1000;
    CHECK_OK(hs_table_expire_snapshots(t, &ot, NULL, &err), &err);
    CHECK(hs_snapshot_count(t) == 3);
    /* dropping the tag frees snapshot 1; expiring everything but the
     * current one now deletes the data files only snapshot 1 held (none:
     * appends), and the snapshot-4 files the delete removed (none either:
     * the delete wrote position deletes) */
    CHECK_OK(hs_table_remove_tag(t, "keep", &err), &err);
    ot.older_than_ms = now_ms() + 1000;
    ot.retain_last = 1;
    CHECK_OK(hs_table_expire_snapshots(t, &ot, NULL, &err), &err);
    CHECK(hs_snapshot_count(t) == 1);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), at[5]));
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* expire after compaction deletes the rewritten data files and delete files */
static void test_expire_after_compact(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("expire2"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, NULL, &err);
    REQUIRE(t);
    for (int k = 0; k < 4; k++)
        CHECK_OK(append_rows(t, k * 100, 100, &err), &err);
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", NULL, &err), &err);
    char data[600];
    snprintf(data, sizeof data, "%s/data", hs_table_location(t));
    CHECK(count_files(data, ".parquet") == 8);   /* 4 data + 4 position delete files */
    CHECK_OK(hs_table_compact(t, NULL, NULL, &err), &err);
    CHECK(count_files(data, ".parquet") == 9);
    hs_expire_options o = HS_EXPIRE_OPTIONS_INIT;
    o.retain_last = 1;
    char *res = NULL;
    CHECK_OK(hs_table_expire_snapshots(t, &o, &res, &err), &err);
    CHECK(strstr(res, "\"position-deletes\"") != NULL);
    hs_string_free(res);
    CHECK(count_files(data, ".parquet") == 1);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(400, del_mod7, NULL)));
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* ---- remove_orphan_files ---- */

static void touch(const char *path)
{
    CHECK(hs_test_write_file(path, "junk", 4) == 0);
}

static void test_orphans(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("orphans"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, "cat", &err);
    REQUIRE(t);
    for (int k = 0; k < 3; k++)
        CHECK_OK(append_rows(t, k * 50, 50, &err), &err);
    hs_index_options io = {.kind = "inverted", .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "id", &io, &err), &err);
    CHECK_OK(hs_table_delete(t, "id = 7", NULL, &err), &err);
    char loc[600];   /* a copy: the borrowed string changes with refreshes */
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    char p[5][700];
    snprintf(p[0], sizeof p[0], "%s/data/stray.parquet", loc);
    snprintf(p[1], sizeof p[1], "%s/data/cat=c1/stray2.parquet", loc);
    snprintf(p[2], sizeof p[2], "%s/metadata/0000-stray-m0.avro", loc);
    snprintf(p[3], sizeof p[3], "%s/index/stray.1.inverted", loc);
    snprintf(p[4], sizeof p[4], "%s/index/registry/stray.json", loc);
    for (int k = 0; k < 5; k++)
        touch(p[k]);
    int before = count_files(loc, "");
    digest d0 = scan_digest(t, -1, NULL, NULL);
    /* the default window (3 days) keeps everything just written */
    char *res = NULL;
    CHECK_OK(hs_table_remove_orphan_files(t, NULL, &res, &err), &err);
    CHECK(strstr(res, "\"deleted_files\":[]") != NULL);
    hs_string_free(res);
    /* a window that includes now: dry run lists exactly the strays */
    hs_orphan_options o = HS_ORPHAN_OPTIONS_INIT;
    o.use_older_than = 1;
    o.older_than_ms = now_ms() + 5000;
    o.dry_run = 1;
    CHECK_OK(hs_table_remove_orphan_files(t, &o, &res, &err), &err);
    json_t *jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    json_t *files = json_object_get(jr, "deleted_files");
    CHECK(json_array_size(files) == 5);
    for (int k = 0; k < 5; k++) {
        bool found = false;
        size_t i;
        json_t *f;
        json_array_foreach(files, i, f) found |= strcmp(json_string_value(json_object_get(f, "path")), p[k]) == 0;
        CHECK(found);
    }
    json_decref(jr);
    CHECK(count_files(loc, "") == before);
    o.dry_run = 0;
    CHECK_OK(hs_table_remove_orphan_files(t, &o, NULL, &err), &err);
    CHECK(count_files(loc, "") == before - 5);
    for (int k = 0; k < 5; k++)
        CHECK(!file_exists(p[k]));
    /* a registry that cannot be read (here: a directory in its place) fails
     * the call: its sidecars must not pass for orphans */
    char *props = NULL;
    CHECK_OK(hs_table_properties(t, &props, &err), &err);
    json_t *jp = json_loads(props, 0, NULL);
    hs_string_free(props);
    char reg[800], bak[820];
    snprintf(reg, sizeof reg, "%s/%s", loc,
             json_string_value(json_object_get(jp, "hyperstream.index-registry")));
    json_decref(jp);
    snprintf(bak, sizeof bak, "%s.bak", reg);
    int n_index = count_files(loc, ".inverted");
    if (!hs_test_on_s3()) {   /* (a directory in an object's place: local only) */
        CHECK(n_index > 0 && rename(reg, bak) == 0 && mkdir(reg, 0755) == 0);
        hs_status ost = hs_table_remove_orphan_files(t, &o, NULL, &err);
        CHECK(ost != HS_OK);
        CHECK(strstr(err.msg, "index registry") != NULL);
        hs_err_clear(&err);
        CHECK(count_files(loc, ".inverted") == n_index);
        CHECK(rmdir(reg) == 0 && rename(bak, reg) == 0);
    }
    /* a statistics file another engine listed in the metadata is kept: a
     * new metadata version (as Java's UpdateStatistics writes) names one */
    char *mj = NULL;
    CHECK_OK(hs_table_metadata_json(t, &mj, &err), &err);
    json_t *meta = json_loads(mj, 0, NULL);
    hs_string_free(mj);
    char stats[800], next[800], hint[800];
    snprintf(stats, sizeof stats, "%s/metadata/stats-1.puffin", loc);
    touch(stats);
    json_object_set_new(meta, "statistics",
                        json_pack("[{s:I,s:s,s:i,s:i,s:[]}]", "snapshot-id",
                                  (json_int_t)hs_table_current_snapshot_id(t), "statistics-path",
                                  stats, "file-size-in-bytes", 4, "file-footer-size-in-bytes", 0,
                                  "blob-metadata"));
    int v = -1;
    sscanf(strrchr(hs_table_metadata_location(t), '/'), "/v%d.metadata.json", &v);
    snprintf(next, sizeof next, "%s/metadata/v%d.metadata.json", loc, v + 1);
    snprintf(hint, sizeof hint, "%s/metadata/version-hint.text", loc);
    char *next_json = json_dumps(meta, 0);
    CHECK(v > 0 && next_json && hs_test_write_file(next, next_json, strlen(next_json)) == 0);
    free(next_json);
    json_decref(meta);
    char hint_text[16];
    snprintf(hint_text, sizeof hint_text, "%d", v + 1);
    CHECK(hs_test_write_file(hint, hint_text, strlen(hint_text)) == 0);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    o.dry_run = 1;
    char *sr = NULL;
    CHECK_OK(hs_table_remove_orphan_files(t, &o, &sr, &err), &err);
    CHECK(sr && strstr(sr, "stats-1.puffin") == NULL);
    hs_string_free(sr);
    o.dry_run = 0;
    /* the table reads the same, indexes included, and every snapshot too */
    hs_index_stats is = HS_INDEX_STATS_INIT;
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), d0));
    scan_digest(t, -1, "id = 8", &is);
    CHECK(is.files_indexed >= 1 && is.index_files_skipped == 0);
    for (int i = 0; i < hs_snapshot_count(t); i++) {
        hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
        CHECK_OK(hs_snapshot_get(t, i, &si, &err), &err);
        CHECK(scan_digest(t, si.snapshot_id, NULL, NULL).n >= 0);
    }
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* ---- compaction ---- */

static bool is_cat2(int64_t i) { return i % 5 == 2; }
static bool is_id_17(int64_t i) { return i == 17 || i == 617; }

static void test_compact(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("compact"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, NULL, &err);
    REQUIRE(t);
    hs_index_options io = {.kind = "inverted", .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "cat", &io, &err), &err);
    for (int k = 0; k < 6; k++)
        CHECK_OK(append_rows(t, k * 200, 200, &err), &err);
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", NULL, &err), &err);
    digest want = expect_digest(1200, del_mod7, NULL);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* dry run */
    char *res = NULL;
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    o.dry_run = 1;
    int64_t snap0 = hs_table_current_snapshot_id(t);
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(strstr(res, "\"rewritten_data_files\":6") != NULL);
    CHECK(strstr(res, "\"removed_delete_files\":6") != NULL);
    hs_string_free(res);
    CHECK(hs_table_current_snapshot_id(t) == snap0);
    o.dry_run = 0;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    json_t *jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    CHECK(json_integer_value(json_object_get(jr, "rewritten_data_files")) == 6);
    CHECK(json_integer_value(json_object_get(jr, "added_data_files")) == 1);
    CHECK(json_integer_value(json_object_get(jr, "removed_delete_files")) == 6);
    int64_t snap1 = json_integer_value(json_object_get(jr, "snapshot_id"));
    json_decref(jr);
    CHECK(snap1 == hs_table_current_snapshot_id(t));
    CHECK(summary_of(t, snap1, "operation") == 1);
    CHECK(summary_of(t, snap1, "total-data-files") == 1);
    CHECK(summary_of(t, snap1, "total-delete-files") == 0);
    CHECK(summary_of(t, snap1, "total-records") == want.n);
    /* the same rows, no delete file applies, the index answers */
    hs_scan *s = NULL;
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(s, &ss);
    CHECK(ss.delete_files == 0 && ss.data_files_total == 1);
    hs_scan_free(s);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    hs_index_stats is = HS_INDEX_STATS_INIT;
    CHECK(digest_eq(scan_digest(t, -1, "cat = 'c2'", &is), expect_digest(1200, del_mod7, is_cat2)));
    CHECK(is.files_indexed == 1 && is.index_files_skipped == 0);
    /* the old snapshot still reads its rows (time travel) */
    CHECK(digest_eq(scan_digest(t, snap0, NULL, NULL), want));
    /* nothing left to do: no commit */
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(strstr(res, "\"snapshot_id\":null") != NULL);
    hs_string_free(res);
    CHECK(hs_table_current_snapshot_id(t) == snap1);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

static void test_compact_partitioned(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("compactp"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, "cat", &err);
    REQUIRE(t);
    for (int k = 0; k < 3; k++)
        CHECK_OK(append_rows(t, k * 100, 100, &err), &err);   /* 5 files each */
    CHECK_OK(hs_table_delete(t, "id = 17 OR id = 617", NULL, &err), &err);
    /* only partition c2 (the filter prunes the others) */
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    o.filter = "cat = 'c2'";
    char *res = NULL;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    json_t *jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    CHECK(json_integer_value(json_object_get(jr, "rewritten_data_files")) == 3);
    CHECK(json_array_size(json_object_get(jr, "groups")) == 1);
    json_decref(jr);
    hs_scan *s = NULL;
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(s, &ss);
    CHECK(ss.data_files_total == 13);
    hs_scan_free(s);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(300, is_id_17, NULL)));
    /* all partitions: one file each */
    CHECK_OK(hs_table_compact(t, NULL, NULL, &err), &err);
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_get_stats(s, &ss);
    CHECK(ss.data_files_total == 5 && ss.delete_files == 0);
    hs_scan_free(s);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(300, is_id_17, NULL)));
    /* a small target size: bins of at most that many bytes (one file each) */
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* The progress callback runs after each file is read, before the commit:
 * it commits from a second handle (an append, or a delete). */
typedef struct race {
    hs_table *other;
    int what;            /* 0 append, 1 delete rows of a rewritten file, 2 cancel,
                          * 3 compact */
    int calls;
    hs_status st;
    const char *del_filter;   /* what == 1; NULL = "id = 5" */
} race;

static int race_progress(void *ctx, const char *what, int64_t done, int64_t total)
{
    race *r = ctx;
    if (r->calls++ != 0)
        return 0;
    hs_error err = {0};
    if (r->what == 0)
        r->st = append_rows(r->other, 5000, 10, &err);
    else if (r->what == 1)
        r->st = hs_table_delete(r->other, r->del_filter ? r->del_filter : "id = 5", NULL, &err);
    else if (r->what == 3)
        r->st = hs_table_compact(r->other, NULL, NULL, &err);
    else
        return 1;
    if (r->st != HS_OK)
        fprintf(stderr, "race: %s\n", err.msg);
    return 0;
}

static bool is_5(int64_t i) { return i == 5; }

static void test_compact_concurrent(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("compactc"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, NULL, &err);
    REQUIRE(t);
    for (int k = 0; k < 4; k++)
        CHECK_OK(append_rows(t, k * 100, 100, &err), &err);
    hs_table *other = NULL;
    CHECK_OK(hs_table_open(cat, "t", &other, &err), &err);
    char data[600];
    snprintf(data, sizeof data, "%s/data", hs_table_location(t));
    /* a concurrent append survives the compaction */
    race r = {other, 0, 0, HS_OK};
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    o.progress = race_progress;
    o.progress_ctx = &r;
    CHECK_OK(hs_table_compact(t, &o, NULL, &err), &err);
    CHECK(r.st == HS_OK);
    digest d5010 = expect_digest(400, NULL, NULL);
    for (int64_t i = 5000; i < 5010; i++)
        digest_add(&d5010, i);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), d5010));
    hs_scan *s = NULL;
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(s, &ss);
    CHECK(ss.data_files_total == 2);   /* the compacted file + the append */
    hs_scan_free(s);
    /* a concurrent delete of a rewritten row: carried over to the new file
     * in the compaction's snapshot (one position delete file), the
     * delete's own file dropped with the file it applied to */
    int files_before = count_files(data, ".parquet");
    race r2 = {other, 1, 0, HS_OK};
    o.progress_ctx = &r2;
    o.min_input_files = 1;
    o.target_file_size_bytes = 1 << 30;
    char *res = NULL;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(r2.st == HS_OK);
    CHECK(res && strstr(res, "\"carried_deletes\":1,") != NULL);
    hs_string_free(res);
    /* + the delete's file, the new data file, the carried delete file */
    CHECK(count_files(data, ".parquet") == files_before + 3);
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_get_stats(s, &ss);
    CHECK(ss.data_files_total == 1 && ss.delete_files == 1);
    hs_scan_free(s);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    digest want = expect_digest(400, is_5, NULL);
    for (int64_t i = 5000; i < 5010; i++)
        digest_add(&want, i);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* compacting again now succeeds and applies that delete */
    o.progress = NULL;
    CHECK_OK(hs_table_compact(t, &o, NULL, &err), &err);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* two compactions at once: the second to commit fails, rows unchanged */
    CHECK_OK(append_rows(t, 7000, 10, &err), &err);
    CHECK_OK(append_rows(t, 7010, 10, &err), &err);
    for (int64_t i = 7000; i < 7020; i++)
        digest_add(&want, i);
    race r4 = {other, 3, 0, HS_OK};
    o.progress = race_progress;
    o.progress_ctx = &r4;
    o.min_input_files = 2;
    CHECK(hs_table_compact(t, &o, NULL, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    CHECK(r4.st == HS_OK);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* cancel: nothing committed, nothing left behind */
    CHECK_OK(append_rows(t, 6000, 10, &err), &err);
    files_before = count_files(data, ".parquet");
    int64_t snap = hs_table_current_snapshot_id(t);
    race r3 = {other, 2, 0, HS_OK};
    o.progress = race_progress;
    o.progress_ctx = &r3;
    CHECK(hs_table_compact(t, &o, NULL, &err) == HS_CANCELLED);
    hs_err_clear(&err);
    CHECK(hs_table_current_snapshot_id(t) == snap);
    CHECK(count_files(data, ".parquet") == files_before);
    hs_table_close(other);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}


/* A concurrent delete in a partition the compaction does not rewrite: the
 * delete file's file_path bounds show it cannot apply, so both commit. */
static bool is_8(int64_t i) { return i == 8; }
static bool is_8_or_10(int64_t i) { return i == 8 || i == 10; }

static void test_compact_concurrent_other_partition(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("compacto"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, "cat", &err);
    REQUIRE(t);
    for (int k = 0; k < 3; k++)
        CHECK_OK(append_rows(t, k * 100, 100, &err), &err);
    hs_table *other = NULL;
    CHECK_OK(hs_table_open(cat, "t", &other, &err), &err);
    race r = {other, 1, 0, HS_OK, "id = 8"};    /* 8 is in partition c3 */
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    o.filter = "cat = 'c2'";
    o.progress = race_progress;
    o.progress_ctx = &r;
    char *res = NULL;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(r.st == HS_OK);
    CHECK(strstr(res, "\"rewritten_data_files\":3") != NULL);
    hs_string_free(res);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(300, is_8, NULL)));
    /* and one in the rewritten partition is carried over */
    race r2 = {other, 1, 0, HS_OK, "id = 10"};   /* c0: 3 files, rewritten */
    o.filter = NULL;
    o.progress_ctx = &r2;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(r2.st == HS_OK);
    CHECK(res && strstr(res, "\"carried_deletes\":1,") != NULL);
    hs_string_free(res);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(300, is_8_or_10, NULL)));
    hs_table_close(other);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* (id, _row_id, _last_updated_sequence_number) of every row, sorted by id;
 * *n rows (-1 on failure).  Caller frees. */
typedef struct lrow { int64_t id, row_id, seq; } lrow;

static int cmp_lrow(const void *a, const void *b)
{
    int64_t x = ((const lrow *)a)->id, y = ((const lrow *)b)->id;
    return x < y ? -1 : x > y;
}

static lrow *lineage_rows(hs_table *t, int64_t *n)
{
    *n = -1;
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    const char *cols[] = {"id", "_row_id", "_last_updated_sequence_number"};
    o.columns = cols;
    o.n_columns = 3;
    struct ArrowArrayStream st;
    hs_error err = {0};
    if (hs_table_scan(t, &o, &st, &err) != HS_OK)
        return NULL;
    lrow *v = NULL;
    int64_t cnt = 0;
    struct ArrowArray a;
    while (st.get_next(&st, &a) == 0 && a.release) {
        v = realloc(v, sizeof *v * (size_t)(cnt + a.length + 1));
        for (int64_t i = 0; i < a.length; i++) {
            const int64_t *c0 = a.children[0]->buffers[1], *c1 = a.children[1]->buffers[1],
                          *c2 = a.children[2]->buffers[1];
            int64_t k = i + a.children[0]->offset;
            v[cnt].id = c0[k];
            v[cnt].row_id = a.children[1]->null_count ? -1 : c1[i + a.children[1]->offset];
            v[cnt].seq = a.children[2]->null_count ? -1 : c2[i + a.children[2]->offset];
            cnt++;
        }
        a.release(&a);
    }
    st.release(&st);
    qsort(v, (size_t)cnt, sizeof *v, cmp_lrow);
    *n = cnt;
    return v;
}

/* v3: deletion vectors applied and dropped, every row keeps its _row_id and
 * _last_updated_sequence_number. */
static void test_compact_v3_lineage(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("compact3"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 3, NULL, &err);
    REQUIRE(t);
    for (int k = 0; k < 3; k++)
        CHECK_OK(append_rows(t, k * 30, 30, &err), &err);
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", NULL, &err), &err);
    int64_t n0 = 0, n1 = 0;
    lrow *before = lineage_rows(t, &n0);
    REQUIRE(before && n0 == expect_digest(90, del_mod7, NULL).n);
    /* the oracle: appends assign ids in order, one sequence number each */
    for (int64_t i = 0; i < n0; i++) {
        CHECK(before[i].row_id == before[i].id);
        CHECK(before[i].seq == 1 + before[i].id / 30);
    }
    char *res = NULL;
    CHECK_OK(hs_table_compact(t, NULL, &res, &err), &err);
    CHECK(strstr(res, "\"removed_delete_files\":3") != NULL);
    hs_string_free(res);
    hs_scan *s = NULL;
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(s, &ss);
    CHECK(ss.data_files_total == 1 && ss.delete_files == 0);
    hs_scan_free(s);
    lrow *after = lineage_rows(t, &n1);
    CHECK(after && n1 == n0);
    for (int64_t i = 0; after && i < n0 && i < n1; i++)
        CHECK(after[i].id == before[i].id && after[i].row_id == before[i].row_id &&
              after[i].seq == before[i].seq);
    free(before);
    free(after);
    /* a later append's rows get ids above every id assigned so far */
    CHECK_OK(append_rows(t, 1000, 3, &err), &err);
    after = lineage_rows(t, &n1);
    CHECK(after && n1 == n0 + 3 && after[n1 - 1].row_id >= 90);
    free(after);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* ---- rewrite_manifests ---- */

static void test_rewrite_manifests(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("manifests"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, NULL, &err);
    REQUIRE(t);
    for (int k = 0; k < 8; k++)
        CHECK_OK(append_rows(t, k * 10, 10, &err), &err);
    CHECK_OK(hs_table_delete(t, "id = 5", NULL, &err), &err);
    hs_scan *s = NULL;
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_get_stats(s, &ss);
    CHECK(ss.manifests_total == 8);
    hs_scan_free(s);
    char *res = NULL;
    CHECK_OK(hs_table_rewrite_manifests(t, NULL, &res, &err), &err);
    json_t *jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    CHECK(json_integer_value(json_object_get(jr, "rewritten_manifests")) == 8);
    CHECK(json_integer_value(json_object_get(jr, "kept_manifests")) == 1);  /* the deletes */
    json_decref(jr);
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    hs_scan_get_stats(s, &ss);
    CHECK(ss.manifests_total == 1 && ss.data_files_total == 8 && ss.delete_files == 1);
    hs_scan_free(s);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(80, is_5, NULL)));
    CHECK(summary_of(t, hs_table_current_snapshot_id(t), "operation") == 1);
    /* nothing to merge now */
    CHECK_OK(hs_table_rewrite_manifests(t, NULL, &res, &err), &err);
    CHECK(strstr(res, "\"snapshot_id\":null") != NULL);
    hs_string_free(res);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* ---- cherrypick ---- */

static void test_cherrypick(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("pick"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, NULL, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, 10, &err), &err);
    int64_t a = hs_table_current_snapshot_id(t);
    CHECK_OK(append_rows(t, 10, 10, &err), &err);
    int64_t b = hs_table_current_snapshot_id(t);
    CHECK(hs_table_cherrypick_snapshot(t, b, &err) == HS_INVALID);   /* an ancestor */
    hs_err_clear(&err);
    CHECK(hs_table_cherrypick_snapshot(t, 12345, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    /* fast-forward: b's parent is current again after the rollback */
    CHECK_OK(hs_table_rollback_to_snapshot(t, a, &err), &err);
    CHECK_OK(hs_table_cherrypick_snapshot(t, b, &err), &err);
    CHECK(hs_table_current_snapshot_id(t) == b);
    /* a real pick: roll back, append c, pick b onto c */
    CHECK_OK(hs_table_rollback_to_snapshot(t, a, &err), &err);
    CHECK_OK(append_rows(t, 100, 10, &err), &err);
    CHECK_OK(hs_table_cherrypick_snapshot(t, b, &err), &err);
    int64_t p = hs_table_current_snapshot_id(t);
    CHECK(p != b);
    CHECK(summary_of(t, p, "source-snapshot-id") == b);
    CHECK(summary_of(t, p, "added-records") == 10);
    CHECK(summary_of(t, p, "total-records") == 30);
    digest want = expect_digest(20, NULL, NULL);
    for (int64_t i = 100; i < 110; i++)
        digest_add(&want, i);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK(hs_table_cherrypick_snapshot(t, b, &err) == HS_INVALID);   /* picked already */
    hs_err_clear(&err);
    /* deletes cannot be picked onto another parent */
    CHECK_OK(hs_table_delete(t, "id = 3", NULL, &err), &err);
    int64_t d = hs_table_current_snapshot_id(t);
    CHECK_OK(hs_table_rollback_to_snapshot(t, a, &err), &err);
    CHECK_OK(append_rows(t, 200, 1, &err), &err);
    CHECK(hs_table_cherrypick_snapshot(t, d, &err) == HS_UNSUPPORTED);
    hs_err_clear(&err);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}


/* The same cycle on a SQL catalog table (metadata files named
 * <seq>-<uuid>.metadata.json, no version hint). */
static void test_sql_catalog(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    char db[700], wh[600];
    snprintf(wh, sizeof wh, "%s", tmp_path("sqlwh"));
    /* the SQLite file stays local; the warehouse follows the storage matrix */
    snprintf(db, sizeof db, "%s/maint-catalog-%d.db", hs_test_tmpdir(), (int)getpid());
    unlink(db);
    if (!hs_test_on_s3())
        CHECK(mkdir(wh, 0755) == 0);
    CHECK_OK(hs_catalog_open_sql(db, NULL, wh, &cat, &err), &err);
    CHECK_OK(hs_catalog_create_namespace(cat, "db", &err), &err);
    hs_table *t = create_table(cat, "db.t", 2, NULL, &err);
    REQUIRE(t);
    for (int k = 0; k < 4; k++)
        CHECK_OK(append_rows(t, k * 50, 50, &err), &err);
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", NULL, &err), &err);
    digest want = expect_digest(200, del_mod7, NULL);
    CHECK_OK(hs_table_compact(t, NULL, NULL, &err), &err);
    CHECK_OK(hs_table_rewrite_manifests(t, NULL, NULL, &err), &err);
    hs_expire_options eo = HS_EXPIRE_OPTIONS_INIT;
    eo.retain_last = 1;
    CHECK_OK(hs_table_expire_snapshots(t, &eo, NULL, &err), &err);
    CHECK(hs_snapshot_count(t) == 1);
    hs_orphan_options oo = HS_ORPHAN_OPTIONS_INIT;
    oo.use_older_than = 1;
    oo.older_than_ms = now_ms() + 5000;
    oo.dry_run = 1;
    char *res = NULL;
    CHECK_OK(hs_table_remove_orphan_files(t, &oo, &res, &err), &err);
    /* the metadata files that left the log are orphans; nothing else is */
    json_t *jr = json_loads(res, 0, NULL);
    hs_string_free(res);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(jr, "deleted_files"), i, f)
        CHECK(strcmp(json_string_value(json_object_get(f, "kind")), "metadata") == 0);
    json_decref(jr);
    oo.dry_run = 0;
    CHECK_OK(hs_table_remove_orphan_files(t, &oo, NULL, &err), &err);
    hs_table_close(t);
    t = NULL;
    CHECK_OK(hs_table_open(cat, "db.t", &t, &err), &err);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* ---- rewrite_position_delete_files ---- */

static bool del_rpd(int64_t i) { return i % 7 == 3 || i % 11 == 5 || i == 4; }

/* Delete entries in the current snapshot (the plan's count: every position
 * delete file and deletion vector listed, dangling ones too). */
static int64_t n_delete_files(hs_table *t)
{
    hs_scan *s = NULL;
    hs_error err = {0};
    if (hs_scan_plan(t, NULL, &s, &err) != HS_OK)
        return -1;
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(s, &ss);
    hs_scan_free(s);
    return ss.delete_files;
}

/* An integer (or bool) member of a JSON result; -1 when absent. */
static int64_t res_int(const char *res, const char *key)
{
    json_t *j = res ? json_loads(res, 0, NULL) : NULL;
    json_t *v = j ? json_object_get(j, key) : NULL;
    int64_t r = !v ? -1 : json_is_boolean(v) ? json_is_true(v) : json_integer_value(v);
    json_decref(j);
    return r;
}

/* A table partitioned by cat (5 partitions) of 2 appends of 100 rows (2
 * data files a partition), then three deletes, each one position delete
 * file per data file it touches: 21 delete files.  With v3, the table is
 * upgraded after the first delete, so the later deletes are deletion
 * vectors beside 10 position delete files. */
static hs_table *rpd_table(hs_catalog *cat, bool v3, hs_error *err)
{
    hs_table *t = create_table(cat, "t", 2, "cat", err);
    if (!t)
        return NULL;
    hs_status st = append_rows(t, 0, 100, err);
    if (st == HS_OK)
        st = append_rows(t, 100, 100, err);
    if (st == HS_OK)
        st = hs_table_delete(t, "id % 7 = 3", NULL, err);
    if (st == HS_OK && v3)
        st = hs_table_upgrade_format_version(t, 3, err);
    if (st == HS_OK)
        st = hs_table_delete(t, "id % 11 = 5", NULL, err);
    if (st == HS_OK)
        st = hs_table_delete(t, "id = 4", NULL, err);
    if (st != HS_OK) {
        fprintf(stderr, "rpd_table: %s\n", err->msg);
        hs_table_close(t);
        return NULL;
    }
    return t;
}

static int64_t count_rpd(int64_t lo, int64_t hi, int part)
{
    int64_t n = 0;
    for (int64_t i = lo; i < hi; i++)
        n += del_rpd(i) && (part < 0 || i % 5 == part);
    return n;
}

static bool del_rpd_c0low(int64_t i) { return del_rpd(i) || (i % 5 == 0 && i < 100); }
static bool del_rpd_c0low_c1(int64_t i) { return del_rpd_c0low(i) || i % 5 == 1; }

static void test_rewrite_pos_deletes(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("rpd"), &cat, &err), &err);
    hs_table *t = rpd_table(cat, false, &err);
    REQUIRE(t);
    digest want = expect_digest(200, del_rpd, NULL);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK(n_delete_files(t) == 21);
    int64_t snap0 = hs_table_current_snapshot_id(t);
    /* dry run: lists, changes nothing */
    hs_rewrite_deletes_options o = HS_REWRITE_DELETES_OPTIONS_INIT;
    o.dry_run = 1;
    char *res = NULL;
    CHECK_OK(hs_table_rewrite_position_delete_files(t, &o, &res, &err), &err);
    CHECK(res_int(res, "rewritten_delete_files") == 21 && res_int(res, "added_delete_files") == 5);
    CHECK(res_int(res, "deletes") == count_rpd(0, 200, -1) && res_int(res, "dry_run") == 1);
    CHECK(res && strstr(res, "\"snapshot_id\":null") != NULL);
    hs_string_free(res);
    CHECK(hs_table_current_snapshot_id(t) == snap0 && n_delete_files(t) == 21);
    /* merge: one file a partition, the same rows */
    o.dry_run = 0;
    CHECK_OK(hs_table_rewrite_position_delete_files(t, &o, &res, &err), &err);
    CHECK(res_int(res, "rewritten_delete_files") == 21 && res_int(res, "added_delete_files") == 5);
    CHECK(res_int(res, "dangling_deletes") == 0 && res_int(res, "attempts") == 1);
    CHECK(res_int(res, "deletes") == count_rpd(0, 200, -1));
    hs_string_free(res);
    int64_t snap1 = hs_table_current_snapshot_id(t);
    CHECK(snap1 != snap0 && summary_of(t, snap1, "operation") == 1);
    CHECK(summary_of(t, snap1, "removed-delete-files") == 21);
    CHECK(summary_of(t, snap1, "added-delete-files") == 5);
    CHECK(summary_of(t, snap1, "total-delete-files") == 5);
    CHECK(n_delete_files(t) == 5);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK(digest_eq(scan_digest(t, -1, "id < 50", NULL), expect_digest(50, del_rpd, NULL)));
    /* the old snapshot still reads the same */
    CHECK(digest_eq(scan_digest(t, snap0, NULL, NULL), want));
    /* again: nothing to do */
    CHECK_OK(hs_table_rewrite_position_delete_files(t, &o, &res, &err), &err);
    CHECK(res_int(res, "nothing_to_do") == 1 && hs_table_current_snapshot_id(t) == snap1);
    hs_string_free(res);
    /* a partially dangling file: c0's first data file loses all its rows
     * (removed), its deletes in c0's merged file become dangling */
    CHECK_OK(hs_table_delete(t, "cat = 'c0' AND id < 100", NULL, &err), &err);
    want = expect_digest(200, del_rpd_c0low, NULL);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK(n_delete_files(t) >= 5);
    CHECK_OK(hs_table_rewrite_position_delete_files(t, &o, &res, &err), &err);
    CHECK(res_int(res, "dangling_deletes") == count_rpd(0, 100, 0));
    CHECK(res_int(res, "deletes") == count_rpd(100, 200, 0));
    hs_string_free(res);
    CHECK(n_delete_files(t) == 5);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* a wholly dangling file: every data file of c1 removed */
    CHECK_OK(hs_table_delete(t, "cat = 'c1'", NULL, &err), &err);
    want = expect_digest(200, del_rpd_c0low_c1, NULL);
    int64_t nd = n_delete_files(t);
    CHECK_OK(hs_table_rewrite_position_delete_files(t, &o, &res, &err), &err);
    if (nd == 5) {   /* the delete kept c1's delete file: dangling now */
        CHECK(res_int(res, "dangling_delete_files") == 1);
        CHECK(res_int(res, "dangling_deletes") == count_rpd(0, 200, 1));
    } else {
        CHECK(res_int(res, "nothing_to_do") == 1);
    }
    hs_string_free(res);
    CHECK(n_delete_files(t) == 4);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* bad options */
    o.min_input_files = -1;
    CHECK(hs_table_rewrite_position_delete_files(t, &o, NULL, &err) == HS_INVALID);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* The io hook: when the rewrite is about to take the commit lock (its
 * delete files and metadata written), another handle commits a delete, so
 * that the rewrite's first commit attempt loses the race. */
typedef struct rpd_race {
    hs_table *other;
    const char *filter;
    int fired;
    hs_status st;
} rpd_race;

static void rpd_race_hook(const char *what, void *ctx)
{
    rpd_race *r = ctx;
    if (r->fired || strcmp(what, "commit lock") != 0)
        return;
    r->fired = 1;
    hs_error err = {0};
    r->st = hs_table_delete(r->other, r->filter, NULL, &err);
    if (r->st != HS_OK)
        fprintf(stderr, "race: %s\n", err.msg);
}

static bool del_rpd_20(int64_t i) { return del_rpd(i) || i == 20; }
static bool del_rpd_20_22(int64_t i) { return del_rpd_20(i) || i == 22; }

/* A delete committed while the rewrite runs (v2 and v3) is read by the
 * retry, not lost: the rows stay deleted and its file is merged too. */
static void test_rewrite_pos_deletes_concurrent(void)
{
    int64_t live0 = hs_test_live_count();
    for (int v3 = 0; v3 <= 1; v3++) {
        hs_error err = {0};
        hs_catalog *cat = NULL;
        CHECK_OK(hs_catalog_open_path(tmp_path(v3 ? "rpdc3" : "rpdc2"), &cat, &err), &err);
        hs_table *t = rpd_table(cat, v3, &err);
        REQUIRE(t);
        hs_table *other = NULL;
        CHECK_OK(hs_table_open(cat, "t", &other, &err), &err);
        rpd_race r = {other, "id = 20", 0, HS_OK};
        cat_set_io_hook(rpd_race_hook, &r);
        char *res = NULL;
        CHECK_OK(hs_table_rewrite_position_delete_files(t, NULL, &res, &err), &err);
        cat_set_io_hook(NULL, NULL);
        CHECK(r.fired && r.st == HS_OK);
        CHECK(res_int(res, "attempts") == 2);
        hs_string_free(res);
        CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(200, del_rpd_20, NULL)));
        /* v2: one merged file a partition; v3: one vector a data file */
        CHECK(n_delete_files(t) == (v3 ? 10 : 5));
        /* the other handle, stale, deletes again: re-planned, both kept */
        CHECK_OK(hs_table_delete(other, "id = 22", NULL, &err), &err);
        CHECK_OK(hs_table_refresh(t, &err), &err);
        CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(200, del_rpd_20_22, NULL)));
        hs_table_close(other);
        hs_table_close(t);
        hs_catalog_close(cat);
    }
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* v3: the position delete files left from v2 are folded into the data
 * files' deletion vectors; then nothing is left to do. */
static void test_rewrite_pos_deletes_v3(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("rpd3"), &cat, &err), &err);
    hs_table *t = rpd_table(cat, true, &err);
    REQUIRE(t);
    digest want = expect_digest(200, del_rpd, NULL);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    int64_t nd0 = n_delete_files(t);
    CHECK(nd0 > 10);
    char *res = NULL;
    CHECK_OK(hs_table_rewrite_position_delete_files(t, NULL, &res, &err), &err);
    CHECK(res_int(res, "format_version") == 3 && res_int(res, "converted_data_files") == 10);
    CHECK(res_int(res, "rewritten_delete_files") == nd0 && res_int(res, "added_delete_files") == 1);
    CHECK(res_int(res, "deletes") == count_rpd(0, 200, -1));
    hs_string_free(res);
    CHECK(n_delete_files(t) == 10);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* every delete file of the snapshot is a deletion vector now */
    hs_scan *s = NULL;
    char *files = NULL;
    CHECK_OK(hs_scan_plan(t, NULL, &s, &err), &err);
    CHECK_OK(hs_scan_files_json(s, &files, &err), &err);
    CHECK(files && strstr(files, "deletes.parquet") == NULL && strstr(files, ".puffin") != NULL);
    hs_string_free(files);
    hs_scan_free(s);
    CHECK_OK(hs_table_rewrite_position_delete_files(t, NULL, &res, &err), &err);
    CHECK(res_int(res, "nothing_to_do") == 1);
    hs_string_free(res);
    /* a dangling vector: c2's data files all removed */
    CHECK_OK(hs_table_delete(t, "cat = 'c2'", NULL, &err), &err);
    int64_t nd = n_delete_files(t);
    CHECK_OK(hs_table_rewrite_position_delete_files(t, NULL, &res, &err), &err);
    CHECK(res_int(res, "dangling_delete_files") == nd - 8 || res_int(res, "nothing_to_do") == 1);
    hs_string_free(res);
    CHECK(n_delete_files(t) == 8);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* A fault at every I/O step of the rewrite (writes: cat fault points; with
 * `reads`, every read call, EIO): each failure leaves the table at its old
 * snapshot with the same rows and the same files on disk; the pass leaves
 * it at the new one with the same rows. */
static void rpd_fault_loop(bool v3, bool reads)
{
    if (reads)
        SKIP_ON_S3("the read-fault backend wraps local files only");
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path(v3 ? (reads ? "rpdf3r" : "rpdf3")
                                              : (reads ? "rpdf2r" : "rpdf2")), &cat, &err), &err);
    hs_table *t = rpd_table(cat, v3, &err);
    REQUIRE(t);
    digest want = expect_digest(200, del_rpd, NULL);
    char loc[600];
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    int files0 = count_files(loc, "");
    int64_t snap0 = hs_table_current_snapshot_id(t);
    int k, failures = 0;
    hs_status st = HS_IO;
    int64_t reached = 0;
    for (k = 1; k < 2000; k++) {
        cleanup_caches();
        if (reads)
            hs_io_set_read_fault(k, EIO);
        else
            cat_set_io_fault(k);
        st = hs_table_rewrite_position_delete_files(t, NULL, NULL, &err);
        reached = reads ? hs_io_read_fault_count() : cat_io_fault_count();
        hs_io_set_read_fault(0, 0);
        cat_set_io_fault(0);
        CHECK(st == HS_OK || st == HS_IO);
        hs_err_clear(&err);
        hs_table *r = NULL;
        CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
        CHECK(digest_eq(scan_digest(r, -1, NULL, NULL), want));
        if (st != HS_OK) {
            failures++;
            CHECK(hs_table_current_snapshot_id(r) == snap0);
            CHECK(count_files(loc, "") == files0);   /* nothing left behind */
        }
        hs_table_close(r);
        if (st == HS_OK)
            break;
        CHECK_OK(hs_table_refresh(t, &err), &err);
    }
    CHECK(st == HS_OK && failures > 3);
    fprintf(stderr, "  rewrite_position_delete_files v%d, %s: %d fault points failed cleanly, "
            "then passed (%lld points reached)\n", v3 ? 3 : 2, reads ? "reads" : "writes",
            failures, (long long)reached);
    CHECK(hs_table_current_snapshot_id(t) != snap0);
    CHECK(n_delete_files(t) == (v3 ? 10 : 5));
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK_OK(append_rows(t, 1000, 5, &err), &err);
    for (int i = 0; i < 5; i++)
        digest_add(&want, 1000 + i);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

static void test_rewrite_pos_deletes_faults(void)
{
    rpd_fault_loop(false, false);
    rpd_fault_loop(false, true);
    rpd_fault_loop(true, false);
    rpd_fault_loop(true, true);
}

/* ---- compaction with partial progress ---- */

/* A table partitioned by cat: 3 appends of 100 rows, 3 small files in each
 * of the 5 partitions (5 file groups of 60 rows). */
static hs_table *pp_table(hs_catalog *cat, const char *name, hs_error *err)
{
    hs_table *t = create_table(cat, name, 2, "cat", err);
    for (int k = 0; t && k < 3; k++)
        if (append_rows(t, k * 100, 100, err) != HS_OK) {
            hs_table_close(t);
            return NULL;
        }
    return t;
}

static int64_t n_data_files(hs_table *t)
{
    hs_scan *s = NULL;
    hs_error err = {0};
    if (hs_scan_plan(t, NULL, &s, &err) != HS_OK)
        return -1;
    hs_scan_stats ss = HS_SCAN_STATS_INIT;
    hs_scan_get_stats(s, &ss);
    hs_scan_free(s);
    return ss.data_files_total;
}

/* Files that nothing references (remove_orphan_files, dry run, no window). */
static bool no_orphans(hs_table *t)
{
    hs_orphan_options oo = HS_ORPHAN_OPTIONS_INIT;
    oo.use_older_than = 1;
    oo.older_than_ms = now_ms() + 5000;
    oo.dry_run = 1;
    char *res = NULL;
    hs_error err = {0};
    bool ok = hs_table_remove_orphan_files(t, &oo, &res, &err) == HS_OK &&
              strstr(res, "\"deleted_files\":[]") != NULL;
    if (!ok)
        fprintf(stderr, "orphans: %s %s\n", res ? res : "", err.msg);
    hs_string_free(res);
    return ok;
}

typedef struct pp_cancel {
    int64_t at;          /* cancel once this many rows are done */
    hs_table *other;     /* else: delete `filter` through it at the first call */
    const char *filter;
    int calls;
    hs_status st;
} pp_cancel;

static int pp_progress(void *ctx, const char *what, int64_t done, int64_t total)
{
    pp_cancel *c = ctx;
    if (c->other) {
        if (c->calls++ == 0) {
            hs_error err = {0};
            c->st = hs_table_delete(c->other, c->filter, NULL, &err);
        }
        return 0;
    }
    return done >= c->at;
}

static bool is_250(int64_t i) { return i == 250; }

static void test_compact_partial_progress(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("ppc"), &cat, &err), &err);
    digest want = expect_digest(300, NULL, NULL);
    /* one commit a file group (max_commits 10 > 5 groups): 5 snapshots */
    hs_table *t = pp_table(cat, "t1", &err);
    REQUIRE(t);
    int64_t snap0 = hs_table_current_snapshot_id(t);
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    o.partial_progress = 1;
    o.dry_run = 1;
    char *res = NULL;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(res_int(res, "commits") == 5 && hs_table_current_snapshot_id(t) == snap0);
    hs_string_free(res);
    o.dry_run = 0;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(res_int(res, "commits") == 5 && res_int(res, "rewritten_data_files") == 15);
    hs_string_free(res);
    CHECK(n_data_files(t) == 5);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK(hs_snapshot_count(t) == 3 + 5);
    for (int i = 3; i < 8; i++) {
        hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
        CHECK_OK(hs_snapshot_get(t, i, &si, &err), &err);
        CHECK(strcmp(si.operation, "replace") == 0 && si.deleted_data_files == 3);
        CHECK(digest_eq(scan_digest(t, si.snapshot_id, NULL, NULL), want));
    }
    hs_table_close(t);
        /* max_commits 2: ceil(5 / 2) = 3 groups, then 2 */
    t = pp_table(cat, "t2", &err);
    REQUIRE(t);
    o.max_commits = 2;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(res_int(res, "commits") == 2);
    hs_string_free(res);
    CHECK(n_data_files(t) == 5 && digest_eq(scan_digest(t, -1, NULL, NULL), want));
    hs_table_close(t);
        /* cancel in the third group: the first two stay committed, nothing of
     * the third is left behind */
    t = pp_table(cat, "t3", &err);
    REQUIRE(t);
    o.max_commits = 0;
    pp_cancel pc = {150, NULL, NULL, 0, HS_OK};
    o.progress = pp_progress;
    o.progress_ctx = &pc;
    CHECK(hs_table_compact(t, &o, NULL, &err) == HS_CANCELLED);
    CHECK(strstr(err.msg, "partial progress: 2 of 5 file groups committed") != NULL);
    hs_err_clear(&err);
    hs_table *r = NULL;
    CHECK_OK(hs_table_open(cat, "t3", &r, &err), &err);
    CHECK(n_data_files(r) == 2 + 9 && digest_eq(scan_digest(r, -1, NULL, NULL), want));
    CHECK(no_orphans(r));
    hs_table_close(r);
    /* without partial progress a cancel commits nothing */
    CHECK_OK(hs_table_refresh(t, &err), &err);
    int64_t snap1 = hs_table_current_snapshot_id(t);
    o.partial_progress = 0;
    pc.at = 1;
    CHECK(hs_table_compact(t, &o, NULL, &err) == HS_CANCELLED);
    hs_err_clear(&err);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    CHECK(hs_table_current_snapshot_id(t) == snap1 && no_orphans(t));
    hs_table_close(t);
    /* a delete committed while it runs (at its first progress call, after
     * planning): carried to the new file whichever group has the row */
    t = pp_table(cat, "t4", &err);
    REQUIRE(t);
    hs_table *other = NULL;
    CHECK_OK(hs_table_open(cat, "t4", &other, &err), &err);
    pp_cancel race = {0, other, "id = 250", 0, HS_OK};
    o.partial_progress = 1;
    o.progress_ctx = &race;
    CHECK_OK(hs_table_compact(t, &o, &res, &err), &err);
    CHECK(race.st == HS_OK && res_int(res, "carried_deletes") == 1);
    hs_string_free(res);
    CHECK(n_data_files(t) == 5);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), expect_digest(300, is_250, NULL)));
    hs_table_close(other);
    hs_table_close(t);
    /* a fault at every I/O step, each on a fresh table: a failure keeps
     * the groups committed before it, rows unchanged, no orphan left */
    o.progress = NULL;
    int k, failures = 0, partial = 0;
    for (k = 1; k < 2000; k++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", k);
        t = pp_table(cat, name, &err);
        REQUIRE(t);
        cat_set_io_fault(k);
        hs_status st = hs_table_compact(t, &o, NULL, &err);
        int64_t reached = cat_io_fault_count();
        cat_set_io_fault(0);
        CHECK(st == HS_OK || st == HS_IO);
        bool kept = st != HS_OK && strstr(err.msg, "partial progress") != NULL;
        partial += kept;
        failures += st != HS_OK;
        hs_err_clear(&err);
        hs_table *r = NULL;
        CHECK_OK(hs_table_open(cat, name, &r, &err), &err);
        CHECK(digest_eq(scan_digest(r, -1, NULL, NULL), want));
        int64_t nf = n_data_files(r);
        CHECK(st == HS_OK ? nf == 5 : kept ? nf < 15 && nf > 5 : nf == 15);
        CHECK(no_orphans(r));
        hs_table_close(r);
        hs_table_close(t);
        if (reached < k)
            break;   /* the fault was never reached: every step ran */
    }
    CHECK(failures > 10 && partial > 3);
    fprintf(stderr, "  compaction, partial progress: %d fault points failed (%d after a commit)\n",
            failures, partial);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* ---- faults: every I/O step of compaction and expiry fails once ---- */

/* io hook: at the first removal of a data file, the next fault point (the
 * next removal) fails. */
static void fail_next_unlink(const char *what, void *ctx)
{
    int *armed = ctx;
    size_t n = strlen(what);
    if (n > 8 && strcmp(what + n - 8, ".parquet") == 0 && !*armed) {
        *armed = 1;
        cat_set_io_fault(1);
    }
}

static void fault_loop(bool indexed)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path(indexed ? "faultsi" : "faults"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, "cat", &err);
    REQUIRE(t);
    if (indexed) {
        hs_index_options io = {.kind = "inverted", .n_threads = 1};
        CHECK_OK(hs_table_add_index(t, "id", &io, &err), &err);
    }
    for (int k = 0; k < 3; k++)
        CHECK_OK(append_rows(t, k * 40, 40, &err), &err);
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", NULL, &err), &err);
    digest want = expect_digest(120, del_mod7, NULL);
    char loc[600];
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    int files0 = count_files(loc, "");
    int64_t snap0 = hs_table_current_snapshot_id(t);
    int k, failures = 0;
    hs_status st = HS_IO;
    for (k = 1; k < 400 && st != HS_OK; k++) {
        cat_set_io_fault(k);
        st = hs_table_compact(t, NULL, NULL, &err);
        cat_set_io_fault(0);
        hs_err_clear(&err);
        hs_table *r = NULL;
        CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
        digest got = scan_digest(r, -1, NULL, NULL);
        CHECK(digest_eq(got, want));
        if (st != HS_OK && hs_table_current_snapshot_id(r) == snap0) {
            failures++;
            CHECK(count_files(loc, "") == files0);   /* nothing left behind */
        }
        hs_table_close(r);
        if (st != HS_OK)
            CHECK_OK(hs_table_refresh(t, &err), &err);
    }
    CHECK(st == HS_OK && failures > 3);
    hs_index_stats is = HS_INDEX_STATS_INIT;
    CHECK(digest_eq(scan_digest(t, -1, "id = 8", &is), (digest){1, 8, 64}));
    if (indexed)   /* every partition's new file has its sidecar */
        CHECK(is.files_indexed == is.files_planned && is.files_planned == 5 &&
              is.index_files_skipped == 0);
    /* expiry: a failed commit deletes nothing; a failed delete is reported */
    st = HS_IO;
    for (k = 1; k < 400 && st != HS_OK; k++) {
        hs_expire_options o = HS_EXPIRE_OPTIONS_INIT;
        o.retain_last = 1;
        char *res = NULL;
        cat_set_io_fault(k);
        st = hs_table_expire_snapshots(t, &o, &res, &err);
        cat_set_io_fault(0);
        hs_err_clear(&err);
        hs_string_free(res);
        hs_table *r = NULL;
        CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
        CHECK(digest_eq(scan_digest(r, -1, NULL, NULL), want));
        /* every remaining snapshot still reads */
        for (int i = 0; i < hs_snapshot_count(r); i++) {
            hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
            CHECK_OK(hs_snapshot_get(r, i, &si, &err), &err);
            CHECK(scan_digest(r, si.snapshot_id, NULL, NULL).n >= 0);
        }
        hs_table_close(r);
        if (st != HS_OK)
            CHECK_OK(hs_table_refresh(t, &err), &err);
    }
    CHECK(st == HS_OK && hs_snapshot_count(t) == 1);
    /* a delete that fails after the commit is reported, not raised */
    CHECK_OK(hs_table_compact(t, &(hs_compact_options){.struct_size = sizeof(hs_compact_options),
                                                        .min_input_files = 1}, NULL, &err), &err);
    CHECK_OK(append_rows(t, 1000, 5, &err), &err);
    digest_add(&want, 1000);
    digest_add(&want, 1001);
    digest_add(&want, 1002);
    digest_add(&want, 1003);
    digest_add(&want, 1004);
    hs_expire_options eo = HS_EXPIRE_OPTIONS_INIT;
    eo.retain_last = 1;
    char *er = NULL;
    int armed = 0;
    cat_set_io_hook(fail_next_unlink, &armed);
    CHECK_OK(hs_table_expire_snapshots(t, &eo, &er, &err), &err);
    cat_set_io_hook(NULL, NULL);
    cat_set_io_fault(0);
    CHECK(er && strstr(er, "\"delete_errors\":[{") != NULL);
    hs_string_free(er);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    /* orphan removal with a fault at each step: an unreadable registry or
     * metadata file fails the call, never lets referenced sidecars or files
     * pass for orphans */
    st = HS_IO;
    for (k = 1; k < 400 && st != HS_OK; k++) {
        hs_orphan_options oo = HS_ORPHAN_OPTIONS_INIT;
        oo.use_older_than = 1;
        oo.older_than_ms = now_ms() + 5000;
        oo.dry_run = 1;
        char *dr = NULL;
        cat_set_io_fault(k);
        st = hs_table_remove_orphan_files(t, &oo, &dr, &err);
        cat_set_io_fault(0);
        hs_err_clear(&err);
        if (st == HS_OK) {
            /* what the failed delete and the failed attempts left */
            CHECK(strstr(dr, "\"deleted_files\":[{") != NULL);
            hs_string_free(dr);
            break;
        }
        CHECK(st == HS_IO);
    }
    CHECK(st == HS_OK && k > 1);
    for (k = 1; k < 400; k++) {
        hs_orphan_options oo = HS_ORPHAN_OPTIONS_INIT;
        oo.use_older_than = 1;
        oo.older_than_ms = now_ms() + 5000;
        cat_set_io_fault(k);
        st = hs_table_remove_orphan_files(t, &oo, NULL, &err);
        int64_t reached = cat_io_fault_count();
        cat_set_io_fault(0);
        hs_err_clear(&err);
        CHECK(digest_eq(scan_digest(t, -1, "id = 8", &is), (digest){1, 8, 64}));
        if (indexed)
            CHECK(is.files_indexed == is.files_planned && is.index_files_skipped == 0);
        CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
        if (reached < k)
            break;   /* the fault was never reached: every step ran */
    }
    /* the orphans are all gone now */
    hs_orphan_options oo = HS_ORPHAN_OPTIONS_INIT;
    oo.use_older_than = 1;
    oo.older_than_ms = now_ms() + 5000;
    oo.dry_run = 1;
    char *res = NULL;
    CHECK_OK(hs_table_remove_orphan_files(t, &oo, &res, &err), &err);
    CHECK(strstr(res, "\"deleted_files\":[]") != NULL);
    hs_string_free(res);
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

/* Compaction with ENOSPC or EIO at every I/O step: writes (cat fault points:
 * every create, write, close, rename, list and unlink; ENOSPC writes half a
 * buffer first) or, with `reads`, every read call of the files compaction
 * opens (the io/ fault backend).  Each failure is HS_IO naming the errno; a
 * fresh handle reads the old snapshot with the same rows and the same files
 * on disk (no temporaries, no half-written data or sidecars); the next
 * attempt starts from there.  After the pass, the compacted table still takes
 * an append and reads the same multiset through its index. */
static void errno_fault_loop(int errnum, bool reads)
{
    if (errnum == ENOSPC || reads)
        SKIP_ON_S3("ENOSPC half-writes and the read-fault backend are local files' "
                   "(S3 crash steps: test_table_faults crash_*_s3)");
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path(reads ? "efault-r" : errnum == ENOSPC ? "efault-nospc"
                                                                                 : "efault-eio"),
                                  &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, "cat", &err);
    REQUIRE(t);
    hs_index_options io = {.kind = "inverted", .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "id", &io, &err), &err);
    for (int k = 0; k < 3; k++)
        CHECK_OK(append_rows(t, k * 40, 40, &err), &err);
    CHECK_OK(hs_table_delete(t, "id % 7 = 3", NULL, &err), &err);
    digest want = expect_digest(120, del_mod7, NULL);
    char loc[600];
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    int files0 = count_files(loc, "");
    int64_t snap0 = hs_table_current_snapshot_id(t);
    int k, failures = 0;
    hs_status st = HS_IO;
    int64_t reached = 0;
    for (k = 1; k < 2000; k++) {
        cleanup_caches();   /* every read goes to a file opened while armed */
        if (reads)
            hs_io_set_read_fault(k, errnum);
        else
            cat_set_io_fault_errno(k, errnum);
        st = hs_table_compact(t, NULL, NULL, &err);
        reached = reads ? hs_io_read_fault_count() : cat_io_fault_count();
        hs_io_set_read_fault(0, 0);
        cat_set_io_fault(0);
        CHECK(st == HS_OK || st == HS_IO);
        /* the errno's text (read errors: the status only; the Parquet
         * reader's nested messages repeat the path and get cut at
         * HS_ERROR_MSG_MAX before the injected text) */
        if (st != HS_OK && !reads && !strstr(err.msg, strerror(errnum))) {
            fprintf(stderr, "  k=%d: %s\n", k, err.msg);
            CHECK(0);
        }
        hs_err_clear(&err);
        hs_table *r = NULL;
        CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
        CHECK(digest_eq(scan_digest(r, -1, NULL, NULL), want));
        if (st != HS_OK) {
            failures++;
            CHECK(hs_table_current_snapshot_id(r) == snap0);
            CHECK(count_files(loc, "") == files0);   /* nothing left behind */
        }
        hs_table_close(r);
        if (st == HS_OK)
            break;
        CHECK_OK(hs_table_refresh(t, &err), &err);
    }
    CHECK(st == HS_OK && failures > 3);
    fprintf(stderr, "  compaction, %s %s: %d fault points failed cleanly, then passed "
            "(%lld points reached)\n", reads ? "reads" : "writes", strerror(errnum), failures,
            (long long)reached);
    CHECK(hs_table_current_snapshot_id(t) != snap0);
    CHECK_OK(append_rows(t, 1000, 5, &err), &err);
    for (int i = 0; i < 5; i++)
        digest_add(&want, 1000 + i);
    hs_index_stats is = HS_INDEX_STATS_INIT;
    CHECK(digest_eq(scan_digest(t, -1, NULL, NULL), want));
    CHECK(digest_eq(scan_digest(t, -1, "id = 8", &is), (digest){1, 8, 64}));
    CHECK(is.files_indexed == is.files_planned && is.index_files_skipped == 0);
    hs_table_close(t);
    hs_catalog_close(cat);
    cleanup_caches();
    CHECK(hs_test_live_count() == live0);
}

static void test_faults_enospc(void) { errno_fault_loop(ENOSPC, false); }
static void test_faults_eio(void) { errno_fault_loop(EIO, false); }
static void test_faults_eio_reads(void) { errno_fault_loop(EIO, true); }

static void test_faults(void) { fault_loop(false); }
static void test_faults_indexed(void) { fault_loop(true); }

int main(void)
{
    HS_RUN(test_expire);
    HS_RUN(test_expire_after_compact);
    HS_RUN(test_orphans);
    HS_RUN(test_compact);
    HS_RUN(test_compact_partitioned);
    HS_RUN(test_compact_concurrent);
    HS_RUN(test_compact_concurrent_other_partition);
    HS_RUN(test_compact_v3_lineage);
    HS_RUN(test_rewrite_manifests);
    HS_RUN(test_rewrite_pos_deletes);
    HS_RUN(test_rewrite_pos_deletes_concurrent);
    HS_RUN(test_rewrite_pos_deletes_v3);
    HS_RUN(test_rewrite_pos_deletes_faults);
    HS_RUN(test_compact_partial_progress);
    HS_RUN(test_cherrypick);
    HS_RUN(test_sql_catalog);
    HS_RUN(test_faults);
    HS_RUN(test_faults_indexed);
    HS_RUN(test_faults_enospc);
    HS_RUN(test_faults_eio);
    HS_RUN(test_faults_eio_reads);
    return hs_test_summary();
}
