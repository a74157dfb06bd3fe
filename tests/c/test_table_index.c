/*
 * tests/c/test_table_index.c - sidecar indexes on tables through the public
 * API (hyperstream/index.h): add_index over a multi-file table, filtered
 * scans with and without indexes against a brute-force oracle (the test
 * evaluates each filter on the rows it generated, by hand), the counters of
 * the filtered path (files pruned by the index, pages decoded for a point
 * lookup), appends / overwrites / deletes keeping the registry in the same
 * commit, drop_index, damaged sidecars (corrupt, truncated, deleted, stale)
 * that change no result and are counted, cancel through the progress
 * callback, concurrent add_index and appends from two handles, orphan
 * removal, explain.  Every test checks that the library's allocations
 * return to where they started.
 */
#include "harness.h"

#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/index.h"
#include "hyperstream/table.h"
#include "index/registry.h"
#include "io/io.h"
#include "parquet/reader.h"
#include "table/table_int.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the rows ---- */

/* Row i: id = i; cat = "c<i%7>" (null when i%11 == 5); v = (i%1000)*0.25
 * (null when i%13 == 0, NaN when i%17 == 0 and not null); name =
 * "n<i * 7919 % 300000>" (scattered over every file, so that the files'
 * bounds cannot prune a lookup by name). */
static int name_of(int64_t i, char *buf, size_t cap)
{
    return snprintf(buf, cap, "n%lld", (long long)(i * 7919 % 300000));
}

typedef struct row {
    int64_t id;
    bool cat_null;
    int cat;
    bool v_null;
    double v;
} row;

static row row_of(int64_t i)
{
    row r;
    r.id = i;
    r.cat_null = i % 11 == 5;
    r.cat = (int)(i % 7);
    r.v_null = i % 13 == 0;
    r.v = i % 17 == 0 ? NAN : (double)(i % 1000) * 0.25;
    return r;
}

static hs_batch *make_rows(int64_t start, int64_t n)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "cat", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "v", HS_TYPE_FLOAT64, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "name", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    char buf[32];
    for (int64_t i = start; i < start + n; i++) {
        row r = row_of(i);
        int len = snprintf(buf, sizeof buf, "c%d", r.cat);
        if (hs_col_append_fixed(b->cols[0], &r.id) != HS_OK ||
            (r.cat_null ? hs_col_append_null(b->cols[1])
                        : hs_col_append_bytes(b->cols[1], buf, (size_t)len)) != HS_OK ||
            (r.v_null ? hs_col_append_null(b->cols[2]) : hs_col_append_fixed(b->cols[2], &r.v)) != HS_OK)
            return NULL;
        len = name_of(i, buf, sizeof buf);
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
    if (!b)
        return -1;
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

/* ---- the oracle ---- */

typedef bool (*pred_fn)(const row *r);

static bool p_point(const row *r) { return r->id == 123457; }
static bool p_cat3(const row *r) { return !r->cat_null && r->cat == 3; }
static bool p_cat3_small(const row *r) { return p_cat3(r) && r->id < 5000; }
static bool p_in_or(const row *r)
{
    return (!r->cat_null && (r->cat == 1 || r->cat == 5)) || r->id >= 299990;
}
static bool p_v_gt(const row *r) { return !r->v_null && (isnan(r->v) || r->v > 200.0); }
static bool p_v_null(const row *r) { return r->v_null; }
/* NaN sorts above every number: bounds (which exclude NaN) must not prune it */
static bool p_v_gt_max(const row *r) { return !r->v_null && isnan(r->v); }
static bool p_cat_null_or_v(const row *r) { return r->cat_null || (!r->v_null && r->v < 1.0); }
static bool p_cat_ne(const row *r) { return !r->cat_null && r->cat != 2; }
static bool p_not_in(const row *r) { return !r->cat_null && r->cat != 0 && r->cat != 1; }
static bool p_name(const row *r) { return r->id * 7919 % 300000 == 777; }
static bool p_name_range(const row *r)
{
    /* 'n77' < name <= 'n78': names "n77<digits>" (and "n78") */
    char buf[32];
    name_of(r->id, buf, sizeof buf);
    return strcmp(buf, "n77") > 0 && strcmp(buf, "n78") <= 0;
}
static bool p_mixed(const row *r)
{
    return (!r->cat_null && r->cat == 4 && !r->v_null && !isnan(r->v) && r->v <= 10.0) ||
           (r->id >= 150000 && r->id < 150020);
}
static bool p_false(const row *r) { return r->id < 0; }
static bool p_all(const row *r) { return r->id >= 0; }

typedef struct query { const char *filter; pred_fn pred; } query;

static const query queries[] = {
    {"id = 123457", p_point},
    {"cat = 'c3'", p_cat3},
    {"cat = 'c3' AND id < 5000", p_cat3_small},
    {"cat IN ('c1', 'c5') OR id >= 299990", p_in_or},
    {"v > 200.0", p_v_gt},
    {"v IS NULL", p_v_null},
    {"v > 300.0", p_v_gt_max},
    {"cat IS NULL OR v < 1", p_cat_null_or_v},
    {"cat <> 'c2'", p_cat_ne},
    {"NOT (cat IN ('c0', 'c1'))", p_not_in},
    {"name = 'n777'", p_name},
    {"name > 'n77' AND name <= 'n78'", p_name_range},
    {"(cat = 'c4' AND v <= 10) OR (id >= 150000 AND id < 150020)", p_mixed},
    {"id < 0", p_false},
    {"id >= 0", p_all},
};
#define N_QUERIES ((int)(sizeof queries / sizeof queries[0]))

#define N_FILES 5
#define ROWS_PER_FILE 60000
#define N_ROWS (N_FILES * ROWS_PER_FILE)

/* ---- reading results ---- */

typedef struct ids {
    int64_t *v;
    int64_t n, cap;
} ids;

static void ids_push(ids *s, int64_t x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n++] = x;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Scans with filter (and columns); ids of the rows, sorted; the index
 * counters in *st (may be NULL).  Also checks that every row's other
 * columns hold what row i holds. */
static int scan_ids(hs_table *t, const char *filter, ids *out, hs_index_stats *st, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_scan_options o = {.filter = filter, .batch_size = 7000};
    hs_scan *sc = NULL;
    if (hs_scan_plan(t, &o, &sc, err) != HS_OK)
        return -1;
    struct ArrowArrayStream s;
    if (hs_scan_stream(sc, &s, err) != HS_OK)
        return -1;
    struct ArrowSchema sch;
    if (s.get_schema(&s, &sch) != 0) {
        s.release(&s);
        return -1;
    }
    hs_field f = {0};
    int rc = hs_arrow_import_schema(&sch, &f, err) == HS_OK ? 0 : -1;
    sch.release(&sch);
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
        for (int64_t i = 0; i < b->n_rows && rc == 0; i++) {
            int64_t id = HS_COL_VALUES(b->cols[0], int64_t)[i];
            row r = row_of(id);
            /* the other columns of the row are the row's */
            if (hs_col_is_valid(b->cols[1], i) == r.cat_null ||
                hs_col_is_valid(b->cols[2], i) == r.v_null) {
                fprintf(stderr, "row %lld: wrong nulls\n", (long long)id);
                rc = -1;
            }
            if (!r.v_null && rc == 0) {
                double v = HS_COL_VALUES(b->cols[2], double)[i];
                if (!(v == r.v || (isnan(v) && isnan(r.v)))) {
                    fprintf(stderr, "row %lld: v %g, expected %g\n", (long long)id, v, r.v);
                    rc = -1;
                }
            }
            char buf[32];
            int len = name_of(id, buf, sizeof buf);
            const int32_t *off = HS_COL_OFFSETS(b->cols[3]);
            if (rc == 0 && (off[i + 1] - off[i] != len ||
                            memcmp(b->cols[3]->values.data + off[i], buf, (size_t)len) != 0)) {
                fprintf(stderr, "row %lld: wrong name\n", (long long)id);
                rc = -1;
            }
            ids_push(out, id);
        }
        hs_batch_free(b);
    }
    hs_field_clear(&f);
    if (st)
        hs_scan_get_index_stats(sc, st);
    s.release(&s);
    if (out->n > 1)
        qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_i64);
    return rc;
}

/* The ids the oracle expects among live ids [0, n_rows) minus deleted ones. */
static void expected_ids(pred_fn p, int64_t n_rows, bool (*deleted)(int64_t), ids *out)
{
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < n_rows; i++) {
        row r = row_of(i);
        if ((!deleted || !deleted(i)) && p(&r))
            ids_push(out, i);
    }
}

static bool same_ids(const ids *a, const ids *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, (size_t)a->n * sizeof *a->v) == 0);
}

/* Runs every query and compares with the oracle; returns the failures. */
static int check_queries(hs_table *t, int64_t n_rows, bool (*deleted)(int64_t),
                         hs_index_stats *sum)
{
    int bad = 0;
    if (sum)
        memset(sum, 0, sizeof *sum);
    for (int q = 0; q < N_QUERIES; q++) {
        hs_error err = {0};
        ids got, want;
        hs_index_stats st = HS_INDEX_STATS_INIT;
        int rc = scan_ids(t, queries[q].filter, &got, &st, &err);
        expected_ids(queries[q].pred, n_rows, deleted, &want);
        if (rc != 0 || !same_ids(&got, &want)) {
            fprintf(stderr, "query \"%s\": rc %d (%s), %lld rows, expected %lld\n",
                    queries[q].filter, rc, hs_test_errmsg(&err), (long long)got.n,
                    (long long)want.n);
            bad++;
        }
        if (sum) {
            sum->files_indexed += st.files_indexed;
            sum->files_pruned_by_index += st.files_pruned_by_index;
            sum->index_files_skipped += st.index_files_skipped;
            sum->index_lookups += st.index_lookups;
        }
        free(got.v);
        free(want.v);
    }
    return bad;
}

/* Scans columns {id, _pos} (and the filter's other columns behind the
 * scene) and checks _pos against the row's place in its file (appends of
 * ROWS_PER_FILE rows each, in id order).  Returns the row count or -1. */
static int64_t scan_positions(hs_table *t, const char *filter, hs_error *err)
{
    const char *cols[] = {"_pos", "id"};
    hs_scan_options o = {.filter = filter, .columns = cols, .n_columns = 2, .batch_size = 5000};
    struct ArrowArrayStream s;
    if (hs_table_scan(t, &o, &s, err) != HS_OK)
        return -1;
    struct ArrowSchema sch;
    hs_field f = {0};
    int64_t n = 0;
    if (s.get_schema(&s, &sch) != 0 || hs_arrow_import_schema(&sch, &f, err) != HS_OK)
        n = -1;
    else
        sch.release(&sch);
    while (n >= 0) {
        struct ArrowArray a;
        hs_batch *b = NULL;
        if (s.get_next(&s, &a) != 0) {
            n = -1;
            break;
        }
        if (!a.release)
            break;
        if (hs_arrow_import_batch(&a, &f, &b, err) != HS_OK || b->n_cols != 2) {
            hs_batch_free(b);
            n = -1;
            break;
        }
        for (int64_t i = 0; i < b->n_rows; i++) {
            int64_t pos = HS_COL_VALUES(b->cols[0], int64_t)[i];
            int64_t id = HS_COL_VALUES(b->cols[1], int64_t)[i];
            if (pos != id % ROWS_PER_FILE) {
                fprintf(stderr, "row %lld at _pos %lld\n", (long long)id, (long long)pos);
                n = -1;
                break;
            }
        }
        if (n >= 0)
            n += b->n_rows;
        hs_batch_free(b);
    }
    hs_field_clear(&f);
    s.release(&s);
    return n;
}

static int64_t count_expected(pred_fn p, int64_t n_rows)
{
    int64_t n = 0;
    for (int64_t i = 0; i < n_rows; i++) {
        row r = row_of(i);
        n += p(&r);
    }
    return n;
}

/* ---- tables ---- */

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s-%d", hs_test_table_root(), name, (int)getpid());
    return buf[k];
}

static hs_table *create_table(hs_catalog *cat, const char *name, int fv, hs_error *err)
{
    hs_batch *b = make_rows(0, 0);
    struct ArrowSchema as;
    if (!b || hs_arrow_export_schema(&b->schema, &as, err) != HS_OK)
        return NULL;
    hs_batch_free(b);
    hs_table_create_options o = {.arrow_schema = &as, .format_version = fv};
    hs_table *t = NULL;
    hs_status st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    return st == HS_OK ? t : NULL;
}

static hs_table *filled_table(hs_catalog *cat, const char *name, int fv, hs_error *err)
{
    hs_table *t = create_table(cat, name, fv, err);
    for (int k = 0; t && k < N_FILES; k++)
        if (append_rows(t, (int64_t)k * ROWS_PER_FILE, ROWS_PER_FILE, err) != HS_OK) {
            hs_table_close(t);
            return NULL;
        }
    return t;
}

static hs_status add(hs_table *t, const char *col, const char *kind, hs_error *err)
{
    hs_index_options o = {.kind = kind, .n_threads = 2};
    return hs_table_add_index(t, col, &o, err);
}

/* list_indexes parsed: files_indexed / files_live of the index on col, -1 if none. */
static int64_t indexed_files(hs_table *t, const char *col, int64_t *live)
{
    char *s = NULL;
    hs_error err = {0};
    if (hs_table_list_indexes(t, &s, &err) != HS_OK)
        return -2;
    json_t *j = json_loads(s, 0, NULL);
    hs_string_free(s);
    int64_t r = -1;
    size_t i;
    json_t *o;
    json_array_foreach(j, i, o) {
        if (strcmp(json_string_value(json_object_get(o, "column")), col) == 0) {
            r = json_integer_value(json_object_get(o, "files_indexed"));
            if (live)
                *live = json_integer_value(json_object_get(o, "files_live"));
        }
    }
    json_decref(j);
    return r;
}

/* Number of files in dir whose name contains `part` (objects under the prefix on S3). */
static int count_files(const char *dir, const char *part)
{
    if (hs_io_is_object_uri(dir)) {
        char **names = NULL;
        size_t nn = 0;
        if (hs_io_list(dir, false, &names, &nn, NULL) != HS_OK)
            return -1;
        int c = 0;
        for (size_t i = 0; i < nn; i++) {
            c += strstr(names[i], part) != NULL;
            hs_free(names[i]);
        }
        hs_free(names);
        return c;
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -c -- '%s'", dir, part);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

/* The registry JSON of t (parsed; caller decrefs) and its path in *path. */
static json_t *registry_of(hs_table *t, char *path, size_t cap)
{
    char *props = NULL;
    if (hs_table_properties(t, &props, NULL) != HS_OK)
        return NULL;
    json_t *p = json_loads(props, 0, NULL);
    hs_string_free(props);
    const char *rel = json_string_value(json_object_get(p, "hyperstream.index-registry"));
    json_t *r = NULL;
    if (rel) {
        /* the registry as a format-1 document: a format-2 root's segments
         * composed (callers that write it back write format 1 over the
         * root, which readers still take) */
        snprintf(path, cap, "%s/%s", hs_table_location(t), rel);
        ix_registry reg = {0};
        hs_buf text = {0};
        if (ix_registry_load(hs_table_location(t), rel, &reg, NULL) == HS_OK &&
            ix_registry_to_json(&reg, &text, NULL) == HS_OK)
            r = json_loadb((const char *)text.data, text.len, 0, NULL);
        hs_buf_free(&text);
        ix_registry_clear(&reg);
    }
    json_decref(p);
    return r;
}

/* The version number N of ".../vN.metadata.json". */
static int metadata_version(hs_table *t)
{
    const char *m = strrchr(hs_table_metadata_location(t), '/');
    int v = -1;
    if (m && sscanf(m, "/v%d.metadata.json", &v) != 1)
        v = -1;
    return v;
}

/* ---- tests ---- */

static void test_filtered_scans(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_scan"), &cat, &err), &err);
    hs_table *t = filled_table(cat, "t", 2, &err);
    REQUIRE(t);
    /* without indexes */
    hs_index_stats sum = HS_INDEX_STATS_INIT;
    CHECK(check_queries(t, N_ROWS, NULL, &sum) == 0);
    CHECK(sum.files_indexed == 0);
    ids base_point;
    hs_index_stats plain = HS_INDEX_STATS_INIT;
    CHECK(scan_ids(t, "name = 'n777'", &base_point, &plain, &err) == 0);
    CHECK(base_point.n == 1);
    free(base_point.v);
    /* with indexes of every kind */
    CHECK_OK(add(t, "cat", "inverted", &err), &err);
    CHECK_OK(add(t, "id", "range", &err), &err);
    CHECK_OK(add(t, "v", "auto", &err), &err);
    CHECK_OK(add(t, "name", "inverted", &err), &err);
    int64_t live = 0;
    CHECK(indexed_files(t, "cat", &live) == N_FILES && live == N_FILES);
    CHECK(indexed_files(t, "name", NULL) == N_FILES);
    CHECK(check_queries(t, N_ROWS, NULL, &sum) == 0);
    CHECK(sum.files_indexed > 0);
    CHECK(sum.index_files_skipped == 0);
    /* positions survive index selections and the two-phase read */
    for (int q = 0; q < N_QUERIES; q++) {
        int64_t got_n = scan_positions(t, queries[q].filter, &err);
        CHECK(got_n == count_expected(queries[q].pred, N_ROWS));
    }
    /* a point lookup: files without the value are pruned without reading
     * their data, and fewer pages are decoded than without the index */
    ids got;
    hs_index_stats st = HS_INDEX_STATS_INIT;
    CHECK(scan_ids(t, "name = 'n777'", &got, &st, &err) == 0);
    CHECK(got.n == 1 && got.v[0] == 236583);
    free(got.v);
    CHECK(st.files_planned == N_FILES);   /* string bounds cannot prune these */
    CHECK(st.files_pruned_by_index == N_FILES - 1);
    CHECK(st.files_indexed == N_FILES);
    CHECK(st.rows_selected_by_index == 1);
    CHECK(st.rows_emitted == 1);
    CHECK(st.pages_decoded > 0 && st.pages_decoded < plain.pages_decoded);
    CHECK(st.rows_decoded < plain.rows_decoded);
    /* index equality with a value in no file: nothing read at all */
    CHECK(scan_ids(t, "cat = 'zzz'", &got, &st, &err) == 0);
    CHECK(got.n == 0 && st.files_pruned_by_index == st.files_planned && st.pages_decoded == 0);
    free(got.v);
    /* adding the same index again builds nothing new */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/index", hs_table_location(t));
    int before = count_files(dir, ".inverted");
    CHECK_OK(add(t, "cat", "inverted", &err), &err);
    CHECK(count_files(dir, ".inverted") == before);
    /* explain */
    char *ex = NULL;
    hs_scan_options eo = {.filter = "name = 'n777'"};
    CHECK_OK(hs_table_explain(t, &eo, &ex, &err), &err);
    json_t *j = json_loads(ex, 0, NULL);
    CHECK(j != NULL);
    json_t *tot = json_object_get(j, "totals");
    CHECK(json_integer_value(json_object_get(tot, "files_pruned_by_index")) == N_FILES - 1);
    CHECK(json_integer_value(json_object_get(tot, "rows_emitted")) == 1);
    CHECK(json_array_size(json_object_get(j, "files")) == N_FILES);
    json_decref(j);
    hs_string_free(ex);
    /* drop: the declaration and its entries go, scans stay right */
    CHECK_OK(hs_table_drop_index(t, "name", NULL, &err), &err);
    CHECK(indexed_files(t, "name", NULL) == -1);
    hs_err_clear(&err);
    CHECK(hs_table_drop_index(t, "name", NULL, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    CHECK(scan_ids(t, "name = 'n777'", &got, &st, &err) == 0);
    CHECK(got.n == 1 && st.files_indexed == 0);
    free(got.v);
    CHECK(check_queries(t, N_ROWS, NULL, NULL) == 0);
    /* the dropped sidecars are orphans now */
    int64_t removed = -1;
    int names = count_files(dir, ".4.inverted");
    CHECK(names == N_FILES);
    CHECK_OK(hs_table_remove_orphan_indexes(t, 0, &removed, &err), &err);
    CHECK(removed >= N_FILES);
    CHECK(count_files(dir, ".4.inverted") == 0);
    CHECK(count_files(dir, ".inverted") == N_FILES);   /* cat's stay */
    CHECK(check_queries(t, N_ROWS, NULL, &sum) == 0);
    CHECK(sum.index_files_skipped == 0);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

static void test_errors(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_err"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, &err);
    REQUIRE(t);
    CHECK(add(t, "nope", "inverted", &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    CHECK(add(t, "id", "bogus", &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(add(t, "v", "hnsw", &err) == HS_INVALID);
    hs_err_clear(&err);
    hs_index_options o = {.kind = "inverted", .params_json = "{\"m\": 16}"};
    CHECK(hs_table_add_index(t, "id", &o, &err) == HS_INVALID);
    hs_err_clear(&err);
    o.params_json = "[1";
    CHECK(hs_table_add_index(t, "id", &o, &err) == HS_INVALID);
    hs_err_clear(&err);
    /* the dict form: params {"type": ...} and no kind */
    hs_index_options d = {.params_json = "{\"type\": \"range\"}"};
    CHECK_OK(hs_table_add_index(t, "id", &d, &err), &err);
    char *s = NULL;
    CHECK_OK(hs_table_list_indexes(t, &s, &err), &err);
    CHECK(strstr(s, "\"kind\":\"range\"") != NULL);
    CHECK(strstr(s, "\"files_live\":0") != NULL);
    hs_string_free(s);
    /* appends to an empty table with a declaration build its sidecars */
    CHECK_OK(append_rows(t, 0, 1000, &err), &err);
    CHECK(indexed_files(t, "id", NULL) == 1);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

static bool deleted_7(int64_t i) { return i == 7 || i == 60007; }

static void test_writes_keep_registry(int fv)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path(fv == 3 ? "wh_w3" : "wh_w2"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", fv, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, ROWS_PER_FILE, &err), &err);
    CHECK_OK(append_rows(t, ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
    CHECK_OK(add(t, "cat", "inverted", &err), &err);
    CHECK_OK(add(t, "id", "range", &err), &err);
    /* an append: data and registry in one commit */
    int v0 = metadata_version(t);
    CHECK_OK(append_rows(t, 2 * ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
    CHECK(metadata_version(t) == v0 + 1);
    int64_t live = 0;
    CHECK(indexed_files(t, "cat", &live) == 3 && live == 3);
    CHECK(indexed_files(t, "id", NULL) == 3);
    /* a fresh handle sees the same */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    CHECK(indexed_files(t2, "cat", NULL) == 3);
    hs_table_close(t2);
    int64_t n_rows = 3 * ROWS_PER_FILE;
    hs_index_stats sum = HS_INDEX_STATS_INIT;
    CHECK(check_queries(t, n_rows, NULL, &sum) == 0);
    CHECK(sum.index_files_skipped == 0 && sum.files_indexed > 0);
    /* delete: a whole file goes (its entries too), others get deletes */
    int64_t n_del = 0;
    CHECK_OK(hs_table_delete(t, "id >= 120000 OR id = 7 OR id = 60007", &n_del, &err), &err);
    CHECK(n_del == ROWS_PER_FILE + 2);
    live = 0;
    CHECK(indexed_files(t, "cat", &live) == 2 && live == 2);
    char rpath[1024];
    json_t *reg = registry_of(t, rpath, sizeof rpath);
    REQUIRE(reg);
    CHECK(json_array_size(json_object_get(reg, "entries")) == 4);  /* 2 files x 2 indexes */
    json_decref(reg);
    CHECK(check_queries(t, 120000, deleted_7, &sum) == 0);
    CHECK(sum.index_files_skipped == 0);
    /* overwrite (v2: rewrites the partly matching file; v3: deletion vector) */
    CHECK_OK(hs_table_overwrite(t, NULL, "id < 10", &err), &err);
    int64_t n_cat = indexed_files(t, "cat", &live), n_id = indexed_files(t, "id", NULL);
    CHECK(n_cat == live && n_id == live && live == 2);
    hs_index_stats st = HS_INDEX_STATS_INIT;
    ids got;
    CHECK(scan_ids(t, "cat = 'c3' AND id < 100", &got, &st, &err) == 0);
    ids want;
    memset(&want, 0, sizeof want);
    for (int64_t i = 10; i < 100; i++) {
        row r = row_of(i);
        if (p_cat3(&r))
            ids_push(&want, i);
    }
    CHECK(same_ids(&got, &want));
    CHECK(st.index_files_skipped == 0);
    free(got.v);
    free(want.v);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

static void test_writes_v2(void) { test_writes_keep_registry(2); }
static void test_writes_v3(void) { test_writes_keep_registry(3); }

/* Damages the sidecars of `col` (by field id suffix) in one of four ways. */
static int damage(hs_table *t, const char *suffix, int how)
{
    char dir[600], cmd[1400];
    snprintf(dir, sizeof dir, "%s/index", hs_table_location(t));
    int n = 0;
    char list[8][256];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -- '%s' | head -2", dir, suffix);
    FILE *p = popen(cmd, "r");
    while (p && n < 8 && fgets(list[n], sizeof list[n], p)) {
        list[n][strcspn(list[n], "\n")] = '\0';
        n++;
    }
    if (p)
        pclose(p);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, list[i]);
        struct stat s;
        if (stat(path, &s) != 0)
            return -1;
        if (how == 0) {            /* corrupt: flip a byte in the middle */
            FILE *f = fopen(path, "r+b");
            if (!f)
                return -1;
            fseek(f, s.st_size / 2, SEEK_SET);
            int c = fgetc(f);
            fseek(f, s.st_size / 2, SEEK_SET);
            fputc(c ^ 0x5a, f);
            fclose(f);
        } else if (how == 1) {     /* truncated */
            if (truncate(path, s.st_size / 3) != 0)
                return -1;
        } else if (how == 2) {     /* deleted */
            if (unlink(path) != 0)
                return -1;
        }
    }
    if (how == 3) {                /* stale: the registry records another data file size */
        char rpath[1024];
        json_t *reg = registry_of(t, rpath, sizeof rpath);
        if (!reg)
            return -1;
        size_t i;
        json_t *e;
        int k = 0;
        json_array_foreach(json_object_get(reg, "entries"), i, e) {
            const char *f = json_string_value(json_object_get(e, "index-file"));
            if (f && strstr(f, suffix) && k++ < 2)
                json_object_set_new(e, "data-file-size",
                                    json_integer(json_integer_value(
                                        json_object_get(e, "data-file-size")) + 1));
        }
        int rc = json_dump_file(reg, rpath, JSON_COMPACT);
        json_decref(reg);
        return rc == 0 ? 2 : -1;
    }
    return n;
}

static void test_damaged_sidecars(void)
{
    SKIP_ON_S3("damages sidecar files in place (truncate, flip a byte)");
    int64_t live0 = hs_test_live_count();
    for (int how = 0; how < 4; how++) {
        hs_error err = {0};
        hs_catalog *cat = NULL;
        char name[32];
        snprintf(name, sizeof name, "wh_dmg%d", how);
        CHECK_OK(hs_catalog_open_path(tmp_path(name), &cat, &err), &err);
        hs_table *t = filled_table(cat, "t", 2, &err);
        REQUIRE(t);
        CHECK_OK(add(t, "cat", "inverted", &err), &err);
        CHECK_OK(add(t, "name", "inverted", &err), &err);
        int n = damage(t, ".2.inverted", how);   /* cat is field 2 */
        CHECK(n == 2);
        hs_index_stats sum = HS_INDEX_STATS_INIT;
        CHECK(check_queries(t, N_ROWS, NULL, &sum) == 0);
        CHECK(sum.index_files_skipped > 0);
        ids got;
        hs_index_stats st = HS_INDEX_STATS_INIT;
        CHECK(scan_ids(t, "cat = 'c3'", &got, &st, &err) == 0);
        CHECK(st.index_files_skipped == 2);
        CHECK(st.files_indexed == N_FILES - 2);
        free(got.v);
        hs_table_close(t);
        hs_catalog_close(cat);
    }
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

typedef struct cancel_ctx { int calls; int cancel_at; } cancel_ctx;

static int cancel_progress(void *vctx, const char *what, int64_t done, int64_t total)
{
    cancel_ctx *c = vctx;
    c->calls++;
    return done >= c->cancel_at;
}

static void test_cancel(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_cancel"), &cat, &err), &err);
    hs_table *t = filled_table(cat, "t", 2, &err);
    REQUIRE(t);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/index", hs_table_location(t));
    for (int threads = 1; threads <= 3; threads += 2) {
        cancel_ctx c = {0, 2};
        hs_index_options o = {.kind = "inverted", .progress = cancel_progress,
                              .progress_ctx = &c, .n_threads = threads};
        int v0 = metadata_version(t);
        CHECK(hs_table_add_index(t, "cat", &o, &err) == HS_CANCELLED);
        hs_err_clear(&err);
        CHECK(c.calls >= 1);
        CHECK(metadata_version(t) == v0);          /* nothing committed */
        CHECK(indexed_files(t, "cat", NULL) == -1);
        CHECK(count_files(dir, ".inverted") == 0);  /* sidecars removed */
    }
    /* progress without cancel sees every file */
    cancel_ctx c = {0, 1 << 30};
    hs_index_options o = {.kind = "inverted", .progress = cancel_progress, .progress_ctx = &c,
                          .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "cat", &o, &err), &err);
    CHECK(c.calls == N_FILES + 1);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

/* add_index whose build is overtaken by an append from another handle (the
 * append lands between planning and commit: the rebase indexes its file). */
typedef struct race_ctx { hs_table *other; int64_t next; int done; } race_ctx;

static int race_progress(void *vctx, const char *what, int64_t done, int64_t total)
{
    race_ctx *c = vctx;
    if (done == 1 && !c->done) {
        c->done = 1;
        if (append_rows(c->other, c->next, 1000, NULL) != HS_OK)
            fprintf(stderr, "race append failed\n");
    }
    return 0;
}

typedef struct thread_arg {
    const char *wh;
    int what;          /* 0 = add_index, 1 = appends */
    hs_status st;
    char msg[512];
} thread_arg;

static void *race_thread(void *vp)
{
    thread_arg *a = vp;
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    a->st = hs_catalog_open_path(a->wh, &cat, &err);
    if (a->st == HS_OK)
        a->st = hs_table_open(cat, "t", &t, &err);
    if (a->st == HS_OK && a->what == 0) {
        hs_index_options o = {.kind = "range", .n_threads = 1};
        a->st = hs_table_add_index(t, "id", &o, &err);
    }
    for (int k = 0; a->st == HS_OK && a->what == 1 && k < 6; k++)
        a->st = append_rows(t, 400000 + k * 500, 500, &err);
    snprintf(a->msg, sizeof a->msg, "%s", err.msg);
    hs_table_close(t);
    hs_catalog_close(cat);
    return NULL;
}

static void test_concurrent(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    const char *wh = tmp_path("wh_conc");
    hs_catalog *cat = NULL, *cat2 = NULL;
    CHECK_OK(hs_catalog_open_path(wh, &cat, &err), &err);
    CHECK_OK(hs_catalog_open_path(wh, &cat2, &err), &err);
    hs_table *t = filled_table(cat, "t", 2, &err);
    REQUIRE(t);
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat2, "t", &t2, &err), &err);
    /* 1. an append from a handle that has not seen the declaration */
    CHECK_OK(add(t, "cat", "inverted", &err), &err);
    CHECK_OK(append_rows(t2, N_ROWS, 1000, &err), &err);
    int64_t live = 0;
    CHECK(indexed_files(t2, "cat", &live) == N_FILES + 1 && live == N_FILES + 1);
    /* 2. an append landing while add_index builds */
    race_ctx rc = {t2, N_ROWS + 1000, 0};
    hs_index_options o = {.kind = "inverted", .progress = race_progress, .progress_ctx = &rc,
                          .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "name", &o, &err), &err);
    CHECK(rc.done == 1);
    CHECK(indexed_files(t, "name", &live) == N_FILES + 2 && live == N_FILES + 2);
    CHECK(indexed_files(t, "cat", NULL) == N_FILES + 2);
    /* 3. threads: add_index on one handle, appends on another, at once */
    hs_table_close(t2);
    hs_catalog_close(cat2);
    thread_arg a = {wh, 0, HS_OK, ""}, b = {wh, 1, HS_OK, ""};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, race_thread, &a);
    pthread_create(&tb, NULL, race_thread, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.st == HS_OK);
    CHECK(b.st == HS_OK);
    if (a.st != HS_OK || b.st != HS_OK)
        fprintf(stderr, "threads: %s / %s\n", a.msg, b.msg);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    int64_t files = N_FILES + 2 + 6;
    CHECK(indexed_files(t, "id", &live) == files && live == files);
    CHECK(indexed_files(t, "cat", NULL) == files);
    CHECK(indexed_files(t, "name", NULL) == files);
    /* every query right, no sidecar skipped */
    ids got, want;
    hs_index_stats st = HS_INDEX_STATS_INIT;
    CHECK(scan_ids(t, "id >= 400000 AND cat = 'c1'", &got, &st, &err) == 0);
    memset(&want, 0, sizeof want);
    for (int64_t i = 400000; i < 403000; i++) {
        row r = row_of(i);
        if (!r.cat_null && r.cat == 1)
            ids_push(&want, i);
    }
    CHECK(same_ids(&got, &want));
    CHECK(st.index_files_skipped == 0);
    free(got.v);
    free(want.v);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

/* Index catch-up: files committed while the registry pointer was away (as
 * by an engine that does not index) lack sidecars; scans stay exact, and
 * hs_table_refresh_indexes builds exactly those, then finds nothing; the
 * property hyperstream.index.auto-refresh does it on open. */
static void test_refresh(void)
{
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_refresh"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, &err);
    REQUIRE(t);
    for (int k = 0; k < 2; k++)
        CHECK_OK(append_rows(t, (int64_t)k * ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
    CHECK_OK(add(t, "cat", "inverted", &err), &err);
    CHECK_OK(add(t, "name", "inverted", &err), &err);
    char *props = NULL;
    CHECK_OK(hs_table_properties(t, &props, &err), &err);
    json_t *jp = json_loads(props, 0, NULL);
    hs_string_free(props);
    char rel[512];
    snprintf(rel, sizeof rel, "%s",
             json_string_value(json_object_get(jp, "hyperstream.index-registry")));
    json_decref(jp);
    const char *key[] = {"hyperstream.index-registry"}, *val[] = {rel};
    for (int k = 2; k < N_FILES; k++) {   /* three files no sidecar covers */
        CHECK_OK(hs_table_remove_properties(t, key, 1, &err), &err);
        CHECK_OK(append_rows(t, (int64_t)k * ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
        CHECK_OK(hs_table_set_properties(t, key, val, 1, &err), &err);
    }
    int64_t live = 0;
    CHECK(indexed_files(t, "cat", &live) == 2 && live == N_FILES);
    hs_index_stats sum = HS_INDEX_STATS_INIT;
    CHECK(check_queries(t, N_ROWS, NULL, &sum) == 0);
    CHECK(sum.index_files_skipped == 0 && sum.files_indexed > 0);
    int64_t n = -1;
    CHECK_OK(hs_table_refresh_indexes(t, NULL, &n, &err), &err);
    CHECK(n == 2 * (N_FILES - 2));
    CHECK(indexed_files(t, "cat", &live) == N_FILES && live == N_FILES);
    CHECK(indexed_files(t, "name", &live) == N_FILES);
    CHECK_OK(hs_table_refresh_indexes(t, NULL, &n, &err), &err);
    CHECK(n == 0);
    CHECK(check_queries(t, N_ROWS, NULL, &sum) == 0);
    ids got;
    hs_index_stats st = HS_INDEX_STATS_INIT;
    CHECK(scan_ids(t, "cat = 'c3'", &got, &st, &err) == 0);
    CHECK(st.files_indexed == N_FILES && st.index_files_skipped == 0);
    free(got.v);
    /* auto-refresh on open */
    const char *ak[] = {"hyperstream.index.auto-refresh"}, *av[] = {"true"};
    CHECK_OK(hs_table_set_properties(t, ak, av, 1, &err), &err);
    CHECK_OK(hs_table_properties(t, &props, &err), &err);
    jp = json_loads(props, 0, NULL);
    hs_string_free(props);
    snprintf(rel, sizeof rel, "%s",
             json_string_value(json_object_get(jp, "hyperstream.index-registry")));
    json_decref(jp);
    CHECK_OK(hs_table_remove_properties(t, key, 1, &err), &err);
    CHECK_OK(append_rows(t, (int64_t)N_FILES * ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
    CHECK_OK(hs_table_set_properties(t, key, val, 1, &err), &err);
    CHECK(indexed_files(t, "cat", &live) == N_FILES && live == N_FILES + 1);
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    CHECK(indexed_files(t2, "cat", &live) == N_FILES + 1 && live == N_FILES + 1);
    CHECK(indexed_files(t2, "name", &live) == N_FILES + 1);
    hs_table_close(t2);
    /* a read-only table (opened from a metadata file) refuses */
    CHECK(hs_table_open_metadata(hs_table_metadata_location(t), &t2, &err) == HS_OK);
    CHECK(hs_table_refresh_indexes(t2, NULL, &n, &err) == HS_UNSUPPORTED);
    hs_table_close(t2);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

/* The root named by t's property (root only), into *out; its rel in rel. */
static int current_root(hs_table *t, ix_registry *out, char *rel, size_t cap)
{
    char *props = NULL;
    if (hs_table_properties(t, &props, NULL) != HS_OK)
        return -1;
    json_t *jp = json_loads(props, 0, NULL);
    hs_string_free(props);
    snprintf(rel, cap, "%s", json_string_value(json_object_get(jp, "hyperstream.index-registry")));
    json_decref(jp);
    return ix_registry_load_root(hs_table_location(t), rel, out, NULL) == HS_OK ? 0 : -1;
}

/* A registry segment deleted: scans still use the other segments' entries
 * (exact results), appends still commit (merges that would need it are
 * skipped), and a refresh rebuilds the lost entries and writes the
 * registry whole without the missing segment. */
static void test_damaged_segment(void)
{
    SKIP_ON_S3("damages registry segment files in place");
    int64_t live0 = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("wh_seg"), &cat, &err), &err);
    hs_table *t = create_table(cat, "t", 2, &err);
    REQUIRE(t);
    CHECK_OK(append_rows(t, 0, ROWS_PER_FILE, &err), &err);
    CHECK_OK(add(t, "cat", "inverted", &err), &err);
    for (int k = 1; k < 4; k++)
        CHECK_OK(append_rows(t, (int64_t)k * ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
    ix_registry root = {0};
    char rel[512], path[1200];
    REQUIRE(current_root(t, &root, rel, sizeof rel) == 0);
    CHECK(root.format_version == 2 && root.n_segments == 4);
    /* a registry this small: the root carries its segments inline */
    for (int i = 0; i < root.n_segments; i++)
        CHECK(root.segments[i].inline_json != NULL);
    snprintf(path, sizeof path, "%s/%s", hs_table_location(t), root.segments[1].path);
    CHECK(unlink(path) == 0);
    ix_registry_clear(&root);
    tbl_index_cache_clear();
    ids got;
    hs_index_stats st = HS_INDEX_STATS_INIT;
    /* the root's inline copy serves the deleted segment's entries */
    CHECK(scan_ids(t, "cat = 'c3'", &got, &st, &err) == 0);
    CHECK(st.files_planned == 4 && st.files_indexed == 4);
    free(got.v);
    /* a root without the inline copies (as a large registry's): the
     * deleted segment's entries are lost, not the others' */
    char root_path[1200];
    snprintf(root_path, sizeof root_path, "%s/%s", hs_table_location(t), rel);
    json_t *rj = json_load_file(root_path, 0, NULL);
    REQUIRE(rj);
    size_t si;
    json_t *so;
    json_array_foreach(json_object_get(rj, "segments"), si, so)
        json_object_del(so, "inline");
    CHECK(json_dump_file(rj, root_path, JSON_COMPACT) == 0);
    json_decref(rj);
    tbl_index_cache_clear();
    hs_index_stats sum = HS_INDEX_STATS_INIT;
    int64_t n_rows = 4 * ROWS_PER_FILE;
    CHECK(check_queries(t, n_rows, NULL, &sum) == 0);
    CHECK(scan_ids(t, "cat = 'c3'", &got, &st, &err) == 0);
    CHECK(st.files_planned == 4 && st.files_indexed == 3);
    free(got.v);
    /* appends past the merge threshold: they commit, the merge is skipped */
    for (int k = 4; k < 12; k++)
        CHECK_OK(append_rows(t, (int64_t)k * ROWS_PER_FILE, ROWS_PER_FILE, &err), &err);
    n_rows = 12 * ROWS_PER_FILE;
    CHECK(check_queries(t, n_rows, NULL, &sum) == 0);
    int64_t live = 0;
    CHECK(indexed_files(t, "cat", &live) == 11 && live == 12);
    int64_t n = 0;
    CHECK_OK(hs_table_refresh_indexes(t, NULL, &n, &err), &err);
    CHECK(n == 1);
    CHECK(indexed_files(t, "cat", &live) == 12 && live == 12);
    REQUIRE(current_root(t, &root, rel, sizeof rel) == 0);
    CHECK(root.n_segments == 1);
    for (int i = 0; i < root.n_segments; i++) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", hs_table_location(t), root.segments[i].path);
        CHECK(stat(path, &sb) == 0);
    }
    ix_registry_clear(&root);
    CHECK(scan_ids(t, "cat = 'c3'", &got, &st, &err) == 0);
    CHECK(st.files_planned == 12 && st.files_indexed == 12);
    free(got.v);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live0);
}

int main(void)
{
    HS_RUN(test_errors);
    HS_RUN(test_filtered_scans);
    HS_RUN(test_writes_v2);
    HS_RUN(test_writes_v3);
    HS_RUN(test_damaged_sidecars);
    HS_RUN(test_cancel);
    HS_RUN(test_concurrent);
    HS_RUN(test_refresh);
    HS_RUN(test_damaged_segment);
    return hs_test_summary();
}
