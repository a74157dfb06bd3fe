/*
 * table/lists.c - the list results of the public API (tables of a catalog,
 * snapshots, the snapshot log, refs, indexes, the files of an explain
 * report) as Arrow streams of typed columns, beside their JSON text forms.
 *
 * Each stream is made from the JSON form of the same call, so the two
 * never disagree: one row per element of the JSON array (refs: per member
 * of the object), one column per entry of a column table naming the JSON
 * member (a dotted path reaches into nested objects), the Arrow type and
 * whether it may be null.  A JSON null or a missing member is a null; a
 * member of the wrong JSON type for its column is HS_INTERNAL (the JSON
 * forms are ours).  The column names and types of snapshots, history and
 * refs are pyiceberg's (Table.inspect.snapshots(), .history(), .refs()),
 * with extra columns after them, so the two can be compared or combined.
 *
 * The stream has one record batch (none when the list is empty).
 */
#include "table/table_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/arrow_c.h"
#include "hyperstream/index.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef enum lc_kind {
    LC_STRING,      /* utf8; non-string JSON values as their JSON text */
    LC_INT64,
    LC_INT32,
    LC_BOOL,
    LC_TS_MS,       /* timestamp[ms] without time zone, from epoch milliseconds */
    LC_JSON,        /* utf8: the value's JSON text */
    LC_MAP,         /* map<utf8, utf8> from an object (skip: one key left out) */
    LC_LIST         /* list<utf8> from an array of strings */
} lc_kind;

typedef struct lc_col {
    const char *name;
    const char *path;     /* member, or "a.b" inside a nested object */
    lc_kind kind;
    bool nullable;
    const char *skip;     /* LC_MAP: key not copied */
} lc_col;

static json_t *lookup(json_t *row, const char *path)
{
    char key[64];
    while (row && json_is_object(row)) {
        const char *dot = strchr(path, '.');
        if (!dot)
            return json_object_get(row, path);
        size_t n = (size_t)(dot - path);
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = 0;
        row = json_object_get(row, key);
        path = dot + 1;
    }
    return NULL;
}

static hs_status make_field(const lc_col *c, hs_field *f)
{
    static const hs_type types[] = {[LC_STRING] = HS_TYPE_STRING, [LC_INT64] = HS_TYPE_INT64,
                                    [LC_INT32] = HS_TYPE_INT32, [LC_BOOL] = HS_TYPE_BOOL,
                                    [LC_TS_MS] = HS_TYPE_TIMESTAMP, [LC_JSON] = HS_TYPE_STRING};
    if (c->kind == LC_MAP) {
        hs_field entries, k, v;
        hs_field_init(&entries, "entries", HS_TYPE_STRUCT, false);
        hs_field_init(&k, "key", HS_TYPE_STRING, false);
        hs_field_init(&v, "value", HS_TYPE_STRING, true);
        hs_field_init(f, c->name, HS_TYPE_MAP, c->nullable);
        if (hs_field_add_child(&entries, &k) != HS_OK || hs_field_add_child(&entries, &v) != HS_OK ||
            hs_field_add_child(f, &entries) != HS_OK) {
            hs_field_clear(&entries);
            return HS_NOMEM;
        }
        return HS_OK;
    }
    if (c->kind == LC_LIST) {
        hs_field item;
        hs_field_init(&item, "item", HS_TYPE_STRING, true);
        hs_field_init_list(f, c->name, c->nullable, &item);
        return HS_OK;
    }
    hs_field_init(f, c->name, types[c->kind], c->nullable);
    if (c->kind == LC_TS_MS)
        f->unit = HS_UNIT_MILLI;
    return HS_OK;
}

static hs_status append_text(hs_column *col, json_t *v)
{
    if (json_is_string(v))
        return hs_col_append_bytes(col, json_string_value(v), json_string_length(v));
    char *s = hs_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return HS_NOMEM;
    hs_status st = hs_col_append_bytes(col, s, strlen(s));
    free(s);
    return st;
}

static hs_status append_value(const lc_col *c, hs_column *col, json_t *v, int64_t row,
                              hs_error *err)
{
    if (!v || json_is_null(v)) {
        if (!c->nullable)
            return hs_err_set(err, HS_INTERNAL, "list row %lld: no \"%s\"", (long long)row,
                              c->path);
        return hs_col_append_null(col);
    }
    switch (c->kind) {
    case LC_STRING:
        return append_text(col, v);
    case LC_JSON: {
        char *s = hs_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s)
            return HS_NOMEM;
        hs_status st = hs_col_append_bytes(col, s, strlen(s));
        free(s);
        return st;
    }
    case LC_INT64:
    case LC_TS_MS:
    case LC_INT32: {
        if (!json_is_integer(v))
            break;
        int64_t x = json_integer_value(v);
        if (c->kind != LC_INT32)
            return hs_col_append_fixed(col, &x);
        int32_t y = (int32_t)x;
        if (y != x)
            break;
        return hs_col_append_fixed(col, &y);
    }
    case LC_BOOL: {
        if (!json_is_boolean(v))
            break;
        uint8_t b = json_is_true(v);
        return hs_col_append_fixed(col, &b);
    }
    case LC_MAP: {
        if (!json_is_object(v))
            break;
        hs_column *entries = col->children[0];
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (c->skip && strcmp(k, c->skip) == 0)
                continue;
            HS_TRY(hs_col_append_bytes(entries->children[0], k, strlen(k)));
            HS_TRY(json_is_null(x) ? hs_col_append_null(entries->children[1])
                                   : append_text(entries->children[1], x));
            HS_TRY(hs_col_struct_append_valid(entries));
        }
        return hs_col_list_end(col);
    }
    case LC_LIST: {
        if (!json_is_array(v))
            break;
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            HS_TRY(json_is_null(x) ? hs_col_append_null(col->children[0])
                                   : append_text(col->children[0], x));
        }
        return hs_col_list_end(col);
    }
    }
    return hs_err_set(err, HS_INTERNAL, "list row %lld: \"%s\" has an unexpected JSON type",
                      (long long)row, c->path);
}

/* rows: a JSON array of objects (borrowed).  Fills *out (caller releases). */
static hs_status rows_to_stream(json_t *rows, const lc_col *cols, int n_cols,
                                struct ArrowArrayStream *out, hs_error *err)
{
    hs_field schema = {0};
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < n_cols; i++) {
        hs_field f = {0};
        st = make_field(&cols[i], &f);
        if (st == HS_OK)
            st = hs_field_add_child(&schema, &f);
        else
            hs_field_clear(&f);
    }
    int64_t n = (int64_t)json_array_size(rows);
    hs_batch *b = NULL;
    if (st == HS_OK)
        st = hs_batch_create(&schema, n, &b, err);
    for (int64_t r = 0; st == HS_OK && r < n; r++) {
        json_t *row = json_array_get(rows, (size_t)r);
        for (int i = 0; st == HS_OK && i < n_cols; i++)
            st = append_value(&cols[i], b->cols[i], lookup(row, cols[i].path), r, err);
    }
    hs_field_clear(&schema);
    if (st != HS_OK) {
        hs_batch_free(b);
        return st == HS_NOMEM ? hs_err_nomem(err, 64) : st;
    }
    b->n_rows = n;
    return hs_arrow_export_one_batch(b, out, err);
}

/* Parses the JSON text `text` (freed here) and streams rows of it. */
static hs_status json_to_stream(hs_status st, char *text, json_t *(*rows_of)(json_t *),
                                const lc_col *cols, int n_cols, struct ArrowArrayStream *out,
                                hs_error *err)
{
    if (st != HS_OK)
        return st;
    json_error_t je;
    json_t *doc = hs_json_loads(text, 0, &je);
    hs_string_free(text);
    if (!doc)
        return hs_err_set(err, HS_INTERNAL, "list: cannot parse our own JSON: %s", je.text);
    json_t *rows = rows_of ? rows_of(doc) : json_incref(doc);
    if (!rows || !json_is_array(rows)) {
        json_decref(rows);
        json_decref(doc);
        return hs_err_set(err, rows ? HS_INTERNAL : HS_NOMEM, "list: not an array");
    }
    st = rows_to_stream(rows, cols, n_cols, out, err);
    json_decref(rows);
    json_decref(doc);
    return st;
}

#define N_COLS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- tables of a catalog ---- */

/* sep: what ends the namespace part ('.', path catalogs '/') */
static json_t *identifiers_split(json_t *doc, char sep)
{
    json_t *rows = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(doc, i, v) {
        const char *id = json_string_value(v);
        const char *dot = id ? strrchr(id, sep) : NULL;
        json_t *o = id ? json_object() : NULL;
        if (!rows || !o ||
            json_object_set_new(o, "identifier", json_string(id)) ||
            json_object_set_new(o, "namespace", dot ? json_stringn(id, (size_t)(dot - id))
                                                    : json_null()) ||
            json_object_set_new(o, "name", json_string(dot ? dot + 1 : id)) ||
            json_array_append_new(rows, o)) {
            json_decref(o);
            json_decref(rows);
            return NULL;
        }
    }
    return rows;
}

static json_t *identifiers_to_rows(json_t *doc) { return identifiers_split(doc, '.'); }
static json_t *paths_to_rows(json_t *doc) { return identifiers_split(doc, '/'); }

hs_status hs_catalog_list_tables_stream(hs_catalog *cat, const char *ns,
                                        struct ArrowArrayStream *out, hs_error *err)
{
    static const lc_col cols[] = {{"namespace", "namespace", LC_STRING, true},
                                  {"name", "name", LC_STRING, false},
                                  {"identifier", "identifier", LC_STRING, false}};
    char *text = NULL;
    hs_status st = hs_catalog_list_tables(cat, ns, &text, err);
    bool path = cat && cat_get_kind(cat->cat) == CAT_PATH;
    return json_to_stream(st, text, path ? paths_to_rows : identifiers_to_rows,
                          cols, N_COLS(cols), out, err);
}

/* ---- snapshots, history, refs ---- */

hs_status hs_table_snapshots_stream(const hs_table *t, struct ArrowArrayStream *out,
                                    hs_error *err)
{
    static const lc_col cols[] = {
        {"committed_at", "timestamp-ms", LC_TS_MS, false},
        {"snapshot_id", "snapshot-id", LC_INT64, false},
        {"parent_id", "parent-snapshot-id", LC_INT64, true},
        {"operation", "summary.operation", LC_STRING, true},
        {"manifest_list", "manifest-list", LC_STRING, false},
        {"summary", "summary", LC_MAP, true, "operation"},
        {"sequence_number", "sequence-number", LC_INT64, true},
        {"schema_id", "schema-id", LC_INT32, true},
        {"first_row_id", "first-row-id", LC_INT64, true},
        {"added_rows", "added-rows", LC_INT64, true}};
    char *text = NULL;
    hs_status st = hs_table_snapshots(t, &text, err);
    return json_to_stream(st, text, NULL, cols, N_COLS(cols), out, err);
}

hs_status hs_table_history_stream(const hs_table *t, struct ArrowArrayStream *out, hs_error *err)
{
    static const lc_col cols[] = {{"made_current_at", "made_current_at", LC_TS_MS, false},
                                  {"snapshot_id", "snapshot_id", LC_INT64, false},
                                  {"parent_id", "parent_id", LC_INT64, true},
                                  {"is_current_ancestor", "is_current_ancestor", LC_BOOL, false}};
    char *text = NULL;
    hs_status st = hs_table_history(t, &text, err);
    return json_to_stream(st, text, NULL, cols, N_COLS(cols), out, err);
}

static json_t *refs_to_rows(json_t *doc)
{
    json_t *rows = json_array();
    const char *name;
    json_t *v;
    json_object_foreach(doc, name, v) {
        json_t *o = json_deep_copy(v);
        if (!rows || !o || !json_is_object(o) || json_object_set_new(o, "name", json_string(name)) ||
            json_array_append_new(rows, o)) {
            json_decref(o);
            json_decref(rows);
            return NULL;
        }
    }
    return rows;
}

hs_status hs_table_refs_stream(const hs_table *t, struct ArrowArrayStream *out, hs_error *err)
{
    static const lc_col cols[] = {{"name", "name", LC_STRING, false},
                                  {"type", "type", LC_STRING, false},
                                  {"snapshot_id", "snapshot-id", LC_INT64, false},
                                  {"max_reference_age_in_ms", "max-ref-age-ms", LC_INT64, true},
                                  {"min_snapshots_to_keep", "min-snapshots-to-keep", LC_INT32, true},
                                  {"max_snapshot_age_in_ms", "max-snapshot-age-ms", LC_INT64, true}};
    char *text = NULL;
    hs_status st = hs_table_refs(t, &text, err);
    return json_to_stream(st, text, refs_to_rows, cols, N_COLS(cols), out, err);
}

/* ---- indexes, explain ---- */

hs_status hs_table_list_indexes_stream(const hs_table *t, struct ArrowArrayStream *out,
                                       hs_error *err)
{
    static const lc_col cols[] = {{"column", "column", LC_STRING, false},
                                  {"field_id", "field_id", LC_INT32, false},
                                  {"kind", "kind", LC_STRING, false},
                                  {"params", "params", LC_JSON, true},
                                  {"files_indexed", "files_indexed", LC_INT64, false},
                                  {"files_live", "files_live", LC_INT64, false},
                                  {"bytes", "bytes", LC_INT64, false}};
    char *text = NULL;
    hs_status st = hs_table_list_indexes(t, &text, err);
    return json_to_stream(st, text, NULL, cols, N_COLS(cols), out, err);
}

static json_t *explain_files(json_t *doc)
{
    return json_incref(json_object_get(doc, "files"));
}

hs_status hs_table_explain_stream(hs_table *t, const hs_scan_options *opt,
                                  struct ArrowArrayStream *out, hs_error *err)
{
    static const lc_col cols[] = {{"file", "file", LC_STRING, false},
                                  {"record_count", "record_count", LC_INT64, false},
                                  {"file_size", "file_size", LC_INT64, false},
                                  {"delete_files", "delete_files", LC_INT64, false},
                                  {"indexes_used", "indexes_used", LC_LIST, false},
                                  {"index_exact", "index_exact", LC_BOOL, false},
                                  {"candidates", "candidates", LC_INT64, true},
                                  {"pruned_by", "pruned_by", LC_STRING, true},
                                  {"sidecars_skipped", "sidecars_skipped", LC_INT64, false},
                                  {"two_phase", "two_phase", LC_BOOL, false},
                                  {"second_phase", "second_phase", LC_STRING, true},
                                  {"index_lookups", "index_lookups", LC_INT64, false},
                                  {"row_groups_read", "row_groups_read", LC_INT64, false},
                                  {"row_groups_skipped", "row_groups_skipped", LC_INT64, false},
                                  {"pages_decoded", "pages_decoded", LC_INT64, false},
                                  {"pages_skipped", "pages_skipped", LC_INT64, false},
                                  {"rows_decoded", "rows_decoded", LC_INT64, false},
                                  {"rows_matched", "rows_matched", LC_INT64, false}};
    char *text = NULL;
    hs_status st = hs_table_explain(t, opt, &text, err);
    return json_to_stream(st, text, explain_files, cols, N_COLS(cols), out, err);
}
