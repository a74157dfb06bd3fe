/*
 * table/table.c - catalogs and tables of the public API (hyperstream/table.h):
 * opening, creating, accessors, snapshot and history views, and every commit
 * that changes only metadata (rollback, tags, properties, schema, partition
 * spec, sort order, format upgrade).
 *
 * Every metadata change is a rebase callback for the catalog's commit loop
 * (catalog/catalog.h): it copies the freshly loaded base and applies the
 * change again, so a concurrent commit between load and swap only costs a
 * retry, and a change that is no longer valid on the new base (a dropped
 * column, a missing snapshot) fails with the same error it would have had.
 *
 *   call                      change applied to a copy of the base
 *   ------------------------  ---------------------------------------------
 *   rollback_to_snapshot      ice_metadata_rollback (must be an ancestor)
 *   create_tag / remove_tag   ice_metadata_set_ref / ice_metadata_remove_ref
 *   set/remove_properties     ice_metadata_set_property / remove_property
 *   update_schema             ice_schema_* chain, ice_metadata_add_schema
 *   update_spec               tbl_parse_spec_text, ice_metadata_add_spec
 *   replace_sort_order        tbl_parse_sort_text, ice_metadata_add_sort_order
 *   upgrade_format_version    ice_metadata_upgrade
 */
#include "table/table_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "base/opts.h"
#include "columnar/arrow_c.h"
#include "io/io.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tbl_local(const char *s) { return cat_local_path(s); }

/* ------------------------------------------------------------------ */
/* catalogs                                                            */

hs_status hs_catalog_open_path(const char *warehouse, hs_catalog **out, hs_error *err)
{
    *out = NULL;
    hs_catalog *c = hs_calloc(1, sizeof *c);
    if (!c)
        return hs_err_nomem(err, sizeof *c);
    if (warehouse) {
        hs_status st = cat_io_mkdirs(tbl_local(warehouse), err);
        if (st != HS_OK) {
            hs_free(c);
            return st;
        }
    }
    hs_status st = cat_path_open(warehouse, &c->cat, err);
    if (st != HS_OK) {
        hs_free(c);
        return st;
    }
    *out = c;
    return HS_OK;
}

hs_status hs_catalog_open_sql(const char *sqlite_path, const char *catalog_name,
                              const char *warehouse, hs_catalog **out, hs_error *err)
{
    *out = NULL;
    if (!sqlite_path)
        return hs_err_set(err, HS_INVALID, "hs_catalog_open_sql: no SQLite file given");
    hs_catalog *c = hs_calloc(1, sizeof *c);
    if (!c)
        return hs_err_nomem(err, sizeof *c);
    hs_status st = cat_sql_open(sqlite_path, catalog_name ? catalog_name : "default", warehouse,
                                &c->cat, err);
    if (st != HS_OK) {
        hs_free(c);
        return st;
    }
    *out = c;
    return HS_OK;
}

void hs_catalog_close(hs_catalog *c)
{
    if (!c)
        return;
    cat_free(c->cat);
    hs_free(c);
}

hs_status hs_catalog_create_namespace(hs_catalog *c, const char *ns, hs_error *err)
{
    if (cat_get_kind(c->cat) == CAT_PATH) {
        /* a namespace of path tables is a directory under the warehouse */
        char *loc = NULL;
        HS_TRY(cat_default_location(c->cat, ns, &loc, err));
        hs_status st = cat_io_mkdirs(tbl_local(loc), err);
        hs_free(loc);
        return st;
    }
    return cat_namespace_create(c->cat, ns, NULL, NULL, 0, err);
}

hs_status hs_catalog_list_tables(hs_catalog *c, const char *ns, char **out, hs_error *err)
{
    *out = NULL;
    char **names = NULL;
    size_t n = 0;
    HS_TRY(cat_list(c->cat, ns, &names, &n, err));
    json_t *arr = json_array();
    hs_status st = arr ? HS_OK : hs_err_nomem(err, 64);
    /* identifiers hs_table_open accepts on this catalog: "ns.name" for SQL
     * and REST catalogs; a path catalog's namespace is a directory under
     * its root, so its tables are "dir/name" (docs/catalogs.md) */
    bool path = cat_get_kind(c->cat) == CAT_PATH;
    size_t nl = ns ? strlen(ns) : 0;
    while (path && nl > 0 && ns[nl - 1] == '/')
        nl--;
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        hs_buf b = {0};
        if (nl)
            st = hs_buf_printf(&b, "%.*s%c%s", (int)nl, ns, path ? '/' : '.', names[i]);
        else
            st = hs_buf_puts(&b, names[i]);
        if (st == HS_OK && json_array_append_new(arr, json_string(hs_buf_cstr(&b))) != 0)
            st = HS_NOMEM;
        hs_buf_free(&b);
        if (st != HS_OK)
            hs_err_nomem(err, 64);
    }
    cat_strv_free(names, n);
    if (st == HS_OK) {
        char *s = hs_json_dumps(arr, JSON_COMPACT);
        *out = s ? hs_strdup(s) : NULL;
        free(s);
        if (!*out)
            st = hs_err_nomem(err, 64);
    }
    json_decref(arr);
    return st;
}

hs_status hs_catalog_drop_table(hs_catalog *c, const char *name, int purge, hs_error *err)
{
    return cat_drop(c->cat, name, purge != 0, err);
}

hs_status hs_catalog_rename_table(hs_catalog *c, const char *from, const char *to, hs_error *err)
{
    return cat_rename(c->cat, from, to, err);
}

/* ------------------------------------------------------------------ */
/* tables                                                              */

/* The handle's pin follows its metadata (pins.c). */
static void pin_current(hs_table *t)
{
    tbl_pin_set(t, &t->meta, t->meta.current_snapshot_id);
}

static void table_free(hs_table *t)
{
    if (!t)
        return;
    tbl_search_cache_clear(t);
    tbl_tail_detach(t);
    tbl_pin_drop(t);
    ice_metadata_free(&t->meta);
    hs_free(t->ident);
    hs_free(t->metadata_location);
    hs_free(t);
}

void hs_table_close(hs_table *t) { table_free(t); }

hs_status tbl_check_writable(const hs_table *t, hs_error *err)
{
    if (!t->catalog)
        return hs_err_set(err, HS_UNSUPPORTED, "%s: table opened from a metadata file is "
                          "read-only; open it through a catalog to change it",
                          t->metadata_location ? t->metadata_location : "table");
    return HS_OK;
}

hs_status hs_table_open(hs_catalog *cat, const char *name, hs_table **out, hs_error *err)
{
    *out = NULL;
    hs_table *t = hs_calloc(1, sizeof *t);
    if (!t)
        return hs_err_nomem(err, sizeof *t);
    t->catalog = cat;
    t->ident = hs_strdup(name);
    if (!t->ident) {
        hs_free(t);
        return hs_err_nomem(err, strlen(name));
    }
    tbl_pin_loading(t);
    hs_status st = cat_load(cat->cat, name, &t->meta, &t->metadata_location, err);
    if (st != HS_OK) {
        table_free(t);
        return st;
    }
    pin_current(t);
    tbl_index_auto_refresh(t);   /* index catch-up, when the table asks for it (index.c) */
    tbl_wal_recover_on_open(t);  /* an append stream's log left by a crash (stream.c) */
    *out = t;
    return HS_OK;
}

hs_status hs_table_open_metadata(const char *metadata_path, hs_table **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    HS_TRY(hs_io_read_all(tbl_local(metadata_path), &b, err));
    hs_table *t = hs_calloc(1, sizeof *t);
    hs_status st = t ? HS_OK : hs_err_nomem(err, sizeof *t);
    if (st == HS_OK) {
        t->metadata_location = hs_strdup(metadata_path);
        if (!t->metadata_location)
            st = hs_err_nomem(err, strlen(metadata_path));
    }
    if (st == HS_OK) {
        st = ice_metadata_parse((const char *)b.data, b.len, &t->meta, err);
        if (st != HS_OK)
            hs_err_prefix(err, "%s", metadata_path);
    }
    hs_buf_free(&b);
    if (st != HS_OK) {
        table_free(t);
        return st;
    }
    *out = t;
    return HS_OK;
}

hs_status hs_table_refresh(hs_table *t, hs_error *err)
{
    if (!t->catalog)
        return HS_OK;
    ice_table_metadata m = {0};
    char *loc = NULL;
    tbl_pin_loading(t);
    hs_status st = cat_load(t->catalog->cat, t->ident, &m, &loc, err);
    if (st == HS_OK) {
        ice_metadata_free(&t->meta);
        t->meta = m;
        hs_free(t->metadata_location);
        t->metadata_location = loc;
    }
    pin_current(t);
    return st;
}

/* ---- create ---- */

static hs_status props_from_opt(const hs_table_create_options *o, ice_kv *kv, hs_error *err)
{
    for (int i = 0; o && i < o->n_properties; i++) {
        if (!o->property_keys || !o->property_values || !o->property_keys[i] ||
            !o->property_values[i])
            return hs_err_set(err, HS_INVALID, "table properties: entry %d is NULL", i);
        if (ice_kv_set(kv, o->property_keys[i], o->property_values[i]) != HS_OK)
            return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

/* Widths of top-level fixed_size_list<float32> columns of an Arrow schema
 * (0 for other columns): they become recorded vector dimensions. */
static int *vector_widths(const hs_field *f)
{
    int *w = hs_calloc((size_t)f->n_children + 1, sizeof *w);
    for (int i = 0; w && i < f->n_children; i++) {
        const hs_field *c = &f->children[i];
        if (c->type == HS_TYPE_FIXED_LIST && c->n_children == 1 &&
            c->children[0].type == HS_TYPE_FLOAT32)
            w[i] = c->width;
    }
    return w;
}

static hs_status schema_from_opt(const hs_table_create_options *o, int fv, ice_schema *out,
                                 int **vec_widths, hs_error *err)
{
    if (o->arrow_schema && o->schema_json)
        return hs_err_set(err, HS_INVALID, "hs_table_create: give arrow_schema or schema_json, "
                          "not both");
    if (o->schema_json)
        return ice_schema_parse_json(o->schema_json, strlen(o->schema_json), out, err);
    if (!o->arrow_schema)
        return hs_err_set(err, HS_INVALID, "hs_table_create: no schema given");
    hs_field f = {0};
    HS_TRY(hs_arrow_import_schema(o->arrow_schema, &f, err));
    hs_status st = HS_OK;
    if (f.type != HS_TYPE_STRUCT)
        st = hs_err_set(err, HS_INVALID, "hs_table_create: the Arrow schema is not a struct");
    if (st == HS_OK && !(*vec_widths = vector_widths(&f)))
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = tbl_icebergify(&f, fv, err);
    if (st == HS_OK)
        st = ice_schema_from_field(&f, 0, out, err);
    hs_field_clear(&f);
    return st;
}

hs_status hs_table_create(hs_catalog *cat, const char *name, const hs_table_create_options *opt,
                          hs_table **out, hs_error *err)
{
    if (out)
        *out = NULL;
    if (!opt)
        return hs_err_set(err, HS_INVALID, "hs_table_create: no options (a schema is needed)");
    HS_OPTS_IN(opt, hs_table_create_options, err);
    int fv = opt->format_version ? opt->format_version : ICE_DEFAULT_FORMAT_VERSION;
    if (fv < 2 || fv > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_INVALID, "hs_table_create: format version %d is not "
                          "supported for new tables (2 or 3)", fv);
    ice_schema schema = {0};
    ice_partition_spec spec = {0};
    ice_sort_order order = {0};
    ice_kv props = {0};
    ice_table_metadata meta = {0};
    char *location = NULL, *mloc = NULL;
    int32_t next_id = 1;
    int *vec_widths = NULL;
    hs_status st = schema_from_opt(opt, fv, &schema, &vec_widths, err);
    /* ids first, so spec and sort source ids refer to the final ids */
    if (st == HS_OK && ice_schema_assign_fresh_ids(&schema, &next_id, NULL) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = ice_schema_validate(&schema, fv, err);
    if (st == HS_OK)
        st = tbl_parse_spec_text(opt->partition_spec, &schema, 0, &spec, err);
    if (st == HS_OK)
        st = tbl_parse_sort_text(opt->sort_order, &schema, &order, err);
    if (st == HS_OK)
        st = props_from_opt(opt, &props, err);
    for (int i = 0; st == HS_OK && vec_widths && i < schema.root.n_children; i++)
        if (vec_widths[i] > 0)
            st = tbl_vector_set_dimension(&props, schema.root.children[i].field_id,
                                          vec_widths[i], err);
    hs_free(vec_widths);
    vec_widths = NULL;
    if (st == HS_OK) {
        if (opt->location) {
            location = hs_strdup(opt->location);
            if (!location)
                st = hs_err_nomem(err, strlen(opt->location));
        } else {
            st = cat_default_location(cat->cat, name, &location, err);
        }
    }
    if (st == HS_OK && location[0] != '/' && !strstr(location, "://") &&
        strncmp(location, "file:", 5) != 0) {
        /* a relative directory: other engines resolve paths in the metadata
         * against their own working directory, so store it absolute */
        char cwd[4096];
        hs_buf abs = {0};
        if (!getcwd(cwd, sizeof cwd) || hs_buf_printf(&abs, "%s/%s", cwd, location) != HS_OK) {
            hs_buf_free(&abs);
            st = hs_err_set(err, HS_IO, "cannot resolve relative table location \"%s\"",
                            location);
        } else {
            hs_free(location);
            size_t n;
            location = (char *)hs_buf_detach(&abs, &n);
        }
    }
    if (st == HS_OK)
        st = ice_metadata_new(location, &schema, &spec, &order, &props, fv, &meta, err);
    if (st == HS_OK)
        st = cat_create(cat->cat, name, &meta, &mloc, err);
    if (st == HS_OK && out) {
        hs_table *t = hs_calloc(1, sizeof *t);
        if (!t || !(t->ident = hs_strdup(name))) {
            hs_free(t);
            st = hs_err_nomem(err, sizeof *t);
        } else {
            t->catalog = cat;
            t->meta = meta;
            memset(&meta, 0, sizeof meta);
            t->metadata_location = mloc;
            mloc = NULL;
            pin_current(t);
            *out = t;
        }
    }
    ice_schema_clear(&schema);
    ice_spec_clear(&spec);
    ice_sort_order_clear(&order);
    ice_kv_clear(&props);
    ice_metadata_free(&meta);
    hs_free(location);
    hs_free(mloc);
    return st;
}

/* ---- accessors ---- */

const char *hs_table_location(const hs_table *t) { return t->meta.location; }
const char *hs_table_metadata_location(const hs_table *t) { return t->metadata_location; }
int hs_table_format_version(const hs_table *t) { return t->meta.format_version; }
int64_t hs_table_current_snapshot_id(const hs_table *t)
{
    return t->meta.current_snapshot_id >= 0 && ice_metadata_current_snapshot(&t->meta)
               ? t->meta.current_snapshot_id : -1;
}

hs_status hs_table_schema(const hs_table *t, struct ArrowSchema *out, hs_error *err)
{
    const ice_schema *s = ice_metadata_current_schema(&t->meta);
    if (!s)
        return hs_err_set(err, HS_CORRUPT, "%s: no current schema", t->metadata_location);
    return hs_arrow_export_schema(&s->root, out, err);
}

static hs_status dup_out(hs_buf *b, char **out, hs_error *err)
{
    size_t n;
    if (hs_buf_append_byte(b, 0) != HS_OK)
        return hs_err_nomem(err, b->len);
    *out = (char *)hs_buf_detach(b, &n);
    return HS_OK;
}

hs_status hs_table_metadata_json(const hs_table *t, char **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    hs_status st = ice_metadata_to_json(&t->meta, &b, err);
    if (st == HS_OK)
        st = dup_out(&b, out, err);
    hs_buf_free(&b);
    return st;
}

/* A member of the metadata JSON document, dumped compactly into *out. */
static hs_status metadata_member(const hs_table *t, const char *key, const char *empty,
                                 char **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    HS_TRY(ice_metadata_to_json(&t->meta, &b, err));
    json_t *root = hs_json_loadb((const char *)b.data, b.len, 0, NULL);
    hs_buf_free(&b);
    if (!root)
        return hs_err_set(err, HS_INTERNAL, "metadata JSON does not parse back");
    json_t *v = json_object_get(root, key);
    char *s = v ? hs_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    *out = hs_strdup(s ? s : empty);
    free(s);
    json_decref(root);
    return *out ? HS_OK : hs_err_nomem(err, 64);
}

hs_status hs_table_snapshots(const hs_table *t, char **out, hs_error *err)
{
    return metadata_member(t, "snapshots", "[]", out, err);
}

hs_status hs_table_refs(const hs_table *t, char **out, hs_error *err)
{
    return metadata_member(t, "refs", "{}", out, err);
}

hs_status hs_table_properties(const hs_table *t, char **out, hs_error *err)
{
    return metadata_member(t, "properties", "{}", out, err);
}

static bool is_current_ancestor(const ice_table_metadata *m, int64_t id)
{
    const ice_snapshot *s = ice_metadata_current_snapshot(m);
    for (int guard = 0; s && guard <= m->n_snapshots; guard++) {
        if (s->snapshot_id == id)
            return true;
        s = s->has_parent ? ice_metadata_snapshot(m, s->parent_id) : NULL;
    }
    return false;
}

hs_status hs_table_history(const hs_table *t, char **out, hs_error *err)
{
    *out = NULL;
    const ice_table_metadata *m = &t->meta;
    hs_buf b = {0};
    hs_status st = hs_buf_puts(&b, "[");
    for (int i = 0; st == HS_OK && i < m->n_snapshot_log; i++) {
        const ice_snapshot_log_entry *e = &m->snapshot_log[i];
        const ice_snapshot *s = ice_metadata_snapshot(m, e->snapshot_id);
        st = hs_buf_printf(&b, "%s{\"made_current_at\":%lld,\"snapshot_id\":%lld,\"parent_id\":",
                           i ? "," : "", (long long)e->timestamp_ms, (long long)e->snapshot_id);
        if (st == HS_OK)
            st = s && s->has_parent ? hs_buf_printf(&b, "%lld", (long long)s->parent_id)
                                    : hs_buf_puts(&b, "null");
        if (st == HS_OK)
            st = hs_buf_printf(&b, ",\"is_current_ancestor\":%s}",
                               is_current_ancestor(m, e->snapshot_id) ? "true" : "false");
    }
    if (st == HS_OK)
        st = hs_buf_puts(&b, "]");
    if (st != HS_OK) {
        hs_buf_free(&b);
        return hs_err_nomem(err, b.len);
    }
    st = dup_out(&b, out, err);
    hs_buf_free(&b);
    return st;
}

int hs_snapshot_count(const hs_table *t) { return t->meta.n_snapshots; }

static int64_t summary_long(const ice_snapshot *s, const char *key)
{
    const char *v = ice_kv_get(&s->summary, key);
    if (!v)
        return -1;
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end ? -1 : x;
}

hs_status hs_snapshot_get(const hs_table *t, int i, hs_snapshot_info *out, hs_error *err)
{
    if (i < 0 || i >= t->meta.n_snapshots)
        return hs_err_set(err, HS_INVALID, "snapshot index %d out of range (%d snapshots)", i,
                          t->meta.n_snapshots);
    if (!out)
        return hs_err_set(err, HS_INVALID, "hs_snapshot_get: out is required");
    const ice_snapshot *s = &t->meta.snapshots[i];
    hs_snapshot_info x = {0}, *o = &x;   /* published through HS_OUT */
    o->snapshot_id = s->snapshot_id;
    o->parent_id = s->has_parent ? s->parent_id : -1;
    o->sequence_number = s->sequence_number;
    o->timestamp_ms = s->timestamp_ms;
    o->schema_id = s->has_schema_id ? s->schema_id : -1;
    const char *op = ice_snapshot_operation(s);
    snprintf(o->operation, sizeof o->operation, "%s", op ? op : "");
    o->added_records = summary_long(s, "added-records");
    o->deleted_records = summary_long(s, "deleted-records");
    o->total_records = summary_long(s, "total-records");
    o->added_data_files = summary_long(s, "added-data-files");
    o->deleted_data_files = summary_long(s, "deleted-data-files");
    o->total_data_files = summary_long(s, "total-data-files");
    o->first_row_id = s->has_first_row_id ? s->first_row_id : -1;
    o->added_rows = s->has_added_rows ? s->added_rows : -1;
    o->added_files_size = summary_long(s, "added-files-size");
    o->total_files_size = summary_long(s, "total-files-size");
    return HS_OUT(hs_snapshot_info, out, x, offsetof(hs_snapshot_info, added_files_size), err);
}

/* ------------------------------------------------------------------ */
/* commits                                                             */

hs_status tbl_commit(hs_table *t, cat_rebase_fn fn, void *ctx, hs_error *err)
{
    HS_TRY(tbl_check_writable(t, err));
    char *loc = NULL;
    ice_table_metadata committed = { 0 };
    hs_status st = cat_commit_with_retry_ex(t->catalog->cat, t->ident, &t->meta,
                                            t->metadata_location, fn, ctx, &loc, &committed,
                                            NULL, err);
    if (st == HS_OK) {
        ice_metadata_free(&t->meta);
        t->meta = committed;
        hs_free(t->metadata_location);
        t->metadata_location = loc;
        loc = NULL;
        pin_current(t);
    }
    hs_free(loc);
    return st;
}

/* ---- rollback ---- */

typedef struct rollback_ctx { int64_t id; } rollback_ctx;

static hs_status rollback_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                             ice_table_metadata *m, hs_error *err)
{
    rollback_ctx *c = vctx;
    if (!ice_metadata_snapshot(base, c->id))
        return hs_err_set(err, HS_NOT_FOUND, "rollback: no snapshot %lld in the table",
                          (long long)c->id);
    if (!is_current_ancestor(base, c->id))
        return hs_err_set(err, HS_INVALID, "rollback: snapshot %lld is not an ancestor of the "
                          "current snapshot", (long long)c->id);
    HS_TRY(ice_metadata_copy(base, m, err));
    return ice_metadata_rollback(m, c->id, err);
}

hs_status hs_table_rollback_to_snapshot(hs_table *t, int64_t snapshot_id, hs_error *err)
{
    rollback_ctx c = {snapshot_id};
    return tbl_commit(t, rollback_cb, &c, err);
}

/* ---- tags ---- */

typedef struct tag_ctx { const char *name; int64_t id; bool remove; } tag_ctx;

static hs_status tag_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                        ice_table_metadata *m, hs_error *err)
{
    tag_ctx *c = vctx;
    const ice_ref *r = ice_metadata_ref(base, c->name);
    if (c->remove) {
        if (!r || !r->is_tag)
            return hs_err_set(err, r ? HS_INVALID : HS_NOT_FOUND, "remove tag: %s \"%s\"",
                              r ? "not a tag:" : "no tag", c->name);
        HS_TRY(ice_metadata_copy(base, m, err));
        ice_metadata_remove_ref(m, c->name);
        return HS_OK;
    }
    if (r)
        return hs_err_set(err, HS_CONFLICT, "create tag: a ref named \"%s\" already exists",
                          c->name);
    int64_t id = c->id;
    if (id < 0) {
        if (!ice_metadata_current_snapshot(base))
            return hs_err_set(err, HS_INVALID, "create tag: the table has no snapshot yet");
        id = base->current_snapshot_id;
    }
    HS_TRY(ice_metadata_copy(base, m, err));
    return ice_metadata_set_ref(m, c->name, id, true, err);
}

hs_status hs_table_create_tag(hs_table *t, const char *name, int64_t snapshot_id, hs_error *err)
{
    if (!name || !*name)
        return hs_err_set(err, HS_INVALID, "create tag: empty name");
    tag_ctx c = {name, snapshot_id, false};
    return tbl_commit(t, tag_cb, &c, err);
}

hs_status hs_table_remove_tag(hs_table *t, const char *name, hs_error *err)
{
    tag_ctx c = {name, -1, true};
    return tbl_commit(t, tag_cb, &c, err);
}

/* ---- properties ---- */

typedef struct props_ctx {
    const char *const *keys, *const *values;
    int n;
} props_ctx;

static hs_status props_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                          ice_table_metadata *m, hs_error *err)
{
    props_ctx *c = vctx;
    HS_TRY(ice_metadata_copy(base, m, err));
    for (int i = 0; i < c->n; i++) {
        if (c->values)
            HS_TRY(ice_metadata_set_property(m, c->keys[i], c->values[i], err));
        else
            ice_metadata_remove_property(m, c->keys[i]);
    }
    return HS_OK;
}

hs_status hs_table_set_properties(hs_table *t, const char *const *keys, const char *const *values,
                                  int n, hs_error *err)
{
    for (int i = 0; i < n; i++)
        if (!keys[i] || !values[i])
            return hs_err_set(err, HS_INVALID, "set properties: entry %d is NULL", i);
    props_ctx c = {keys, values, n};
    return tbl_commit(t, props_cb, &c, err);
}

hs_status hs_table_remove_properties(hs_table *t, const char *const *keys, int n, hs_error *err)
{
    for (int i = 0; i < n; i++)
        if (!keys[i])
            return hs_err_set(err, HS_INVALID, "remove properties: entry %d is NULL", i);
    props_ctx c = {keys, NULL, n};
    return tbl_commit(t, props_cb, &c, err);
}

/* ---- upgrade ---- */

typedef struct upgrade_ctx { int v; } upgrade_ctx;

static hs_status upgrade_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                            ice_table_metadata *m, hs_error *err)
{
    upgrade_ctx *c = vctx;
    if (c->v < base->format_version)
        return hs_err_set(err, HS_INVALID, "upgrade: cannot lower the format version from %d "
                          "to %d", base->format_version, c->v);
    HS_TRY(ice_metadata_copy(base, m, err));
    if (c->v == base->format_version)
        return HS_OK;
    return ice_metadata_upgrade(m, c->v, err);
}

hs_status hs_table_upgrade_format_version(hs_table *t, int format_version, hs_error *err)
{
    if (format_version < 2 || format_version > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_INVALID, "upgrade: format version %d is not supported (2..%d)",
                          format_version, ICE_MAX_FORMAT_VERSION);
    upgrade_ctx c = {format_version};
    return tbl_commit(t, upgrade_cb, &c, err);
}

/* ---- partition spec and sort order ---- */

typedef struct text_ctx { const char *text; } text_ctx;

static hs_status spec_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                         ice_table_metadata *m, hs_error *err)
{
    text_ctx *c = vctx;
    const ice_schema *s = ice_metadata_current_schema(base);
    if (!s)
        return hs_err_set(err, HS_CORRUPT, "metadata has no current schema");
    ice_partition_spec spec = {0};
    HS_TRY(tbl_parse_spec_text(c->text, s, 0, &spec, err));
    hs_status st = ice_metadata_copy(base, m, err);
    int32_t id;
    if (st == HS_OK)
        st = ice_metadata_add_spec(m, &spec, true, &id, err);
    ice_spec_clear(&spec);
    return st;
}

hs_status hs_table_update_spec(hs_table *t, const char *spec, hs_error *err)
{
    text_ctx c = {spec};
    return tbl_commit(t, spec_cb, &c, err);
}

static hs_status sort_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                         ice_table_metadata *m, hs_error *err)
{
    text_ctx *c = vctx;
    const ice_schema *s = ice_metadata_current_schema(base);
    if (!s)
        return hs_err_set(err, HS_CORRUPT, "metadata has no current schema");
    ice_sort_order o = {0};
    HS_TRY(tbl_parse_sort_text(c->text, s, &o, err));
    hs_status st = ice_metadata_copy(base, m, err);
    int32_t id;
    if (st == HS_OK)
        st = ice_metadata_add_sort_order(m, &o, true, &id, err);
    ice_sort_order_clear(&o);
    return st;
}

hs_status hs_table_replace_sort_order(hs_table *t, const char *sort_order, hs_error *err)
{
    text_ctx c = {sort_order};
    return tbl_commit(t, sort_cb, &c, err);
}

/* ---- schema changes ---- */

/* A type from a change: a primitive type string or Iceberg type JSON. */
static hs_status change_type(const json_t *jt, const char *name, bool required, hs_field *out,
                             hs_error *err)
{
    if (json_is_string(jt)) {
        hs_field_init(out, name, HS_TYPE_NA, !required);
        hs_status st = ice_type_parse(json_string_value(jt), out, err);
        if (st != HS_OK)
            hs_field_clear(out);
        return st;
    }
    if (!json_is_object(jt))
        return hs_err_set(err, HS_INVALID, "schema change: \"type\" of \"%s\" must be a string or "
                          "an Iceberg type object", name);
    /* wrap in a one-field schema and let the model parse it */
    json_t *fld = json_pack("{s:i, s:s, s:b, s:O}", "id", 1, "name", name, "required", required,
                            "type", jt);
    json_t *sch = fld ? json_pack("{s:s, s:i, s:[o]}", "type", "struct", "schema-id", 0, "fields",
                                  fld) : NULL;
    if (!sch) {
        json_decref(fld);
        return hs_err_nomem(err, 64);
    }
    char *txt = hs_json_dumps(sch, JSON_COMPACT);
    json_decref(sch);
    if (!txt)
        return hs_err_nomem(err, 64);
    ice_schema tmp = {0};
    hs_status st = ice_schema_parse_json(txt, strlen(txt), &tmp, err);
    free(txt);
    if (st == HS_OK) {
        if (tmp.root.n_children != 1)
            st = hs_err_set(err, HS_INVALID, "schema change: bad type for \"%s\"", name);
        else
            st = hs_field_copy(&tmp.root.children[0], out);
    }
    ice_schema_clear(&tmp);
    return st;
}

static bool id_in_use(const ice_table_metadata *m, int32_t id)
{
    const ice_partition_spec *sp = ice_metadata_default_spec(m);
    for (int i = 0; sp && i < sp->n_fields; i++)
        if (sp->fields[i].source_id == id && sp->fields[i].transform.kind != ICE_TR_VOID)
            return true;
    const ice_sort_order *o = ice_metadata_default_sort_order(m);
    for (int i = 0; o && i < o->n_fields; i++)
        if (o->fields[i].source_id == id)
            return true;
    return false;
}

static hs_status apply_change(const ice_table_metadata *m, const json_t *ch, int idx,
                              ice_schema *cur, int32_t *last_id, hs_error *err)
{
    const char *op = json_string_value(json_object_get(ch, "op"));
    const char *name = json_string_value(json_object_get(ch, "name"));
    if (!op || !name)
        return hs_err_set(err, HS_INVALID, "schema change %d: needs \"op\" and \"name\"", idx);
    ice_schema next = {0};
    hs_status st;
    if (strcmp(op, "add") == 0) {
        const char *parent = json_string_value(json_object_get(ch, "parent"));
        bool required = json_is_true(json_object_get(ch, "required"));
        hs_field f = {0};
        const char *leaf = parent ? name : strrchr(name, '.');
        char *par = NULL;
        if (!parent && leaf) { /* "s.c" = add c under s */
            par = hs_strndup(name, (size_t)(leaf - name));
            if (!par)
                return hs_err_nomem(err, strlen(name));
            parent = par;
            leaf++;
        } else if (!leaf || parent) {
            leaf = name;
        }
        st = change_type(json_object_get(ch, "type"), leaf, required, &f, err);
        const char *doc = json_string_value(json_object_get(ch, "doc"));
        if (st == HS_OK && doc) {
            json_t *d = json_string(doc);
            char *dj = d ? hs_json_dumps(d, JSON_ENCODE_ANY) : NULL;
            json_decref(d);
            st = dj ? hs_field_set_meta(&f, "iceberg.doc", dj) : HS_NOMEM;
            free(dj);
            if (st != HS_OK)
                hs_err_nomem(err, 64);
        }
        json_t *dflt = json_object_get(ch, "default");
        if (st == HS_OK && dflt) {
            char *dj = hs_json_dumps(dflt, JSON_ENCODE_ANY);
            st = dj ? hs_field_set_meta(&f, "iceberg.initial-default", dj) : HS_NOMEM;
            if (st == HS_OK)
                st = hs_field_set_meta(&f, "iceberg.write-default", dj);
            free(dj);
            if (st != HS_OK)
                hs_err_nomem(err, 64);
        }
        if (st == HS_OK)
            st = ice_schema_add_column(cur, parent, &f, last_id, m->format_version, &next, err);
        hs_field_clear(&f);
        hs_free(par);
    } else if (strcmp(op, "drop") == 0) {
        const hs_field *f = ice_schema_find_name(cur, name, true);
        if (f && id_in_use(m, f->field_id))
            return hs_err_set(err, HS_INVALID, "schema change %d: cannot drop \"%s\": the "
                              "partition spec or sort order uses it", idx, name);
        st = ice_schema_drop_column(cur, name, &next, err);
    } else if (strcmp(op, "rename") == 0) {
        const char *to = json_string_value(json_object_get(ch, "to"));
        if (!to)
            return hs_err_set(err, HS_INVALID, "schema change %d: rename needs \"to\"", idx);
        st = ice_schema_rename_column(cur, name, to, &next, err);
    } else if (strcmp(op, "move") == 0) {
        const char *before = json_string_value(json_object_get(ch, "before"));
        const char *after = json_string_value(json_object_get(ch, "after"));
        if (json_is_true(json_object_get(ch, "first")))
            st = ice_schema_move_column(cur, name, ICE_MOVE_FIRST, NULL, &next, err);
        else if (before)
            st = ice_schema_move_column(cur, name, ICE_MOVE_BEFORE, before, &next, err);
        else if (after)
            st = ice_schema_move_column(cur, name, ICE_MOVE_AFTER, after, &next, err);
        else
            return hs_err_set(err, HS_INVALID, "schema change %d: move needs \"first\", "
                              "\"before\" or \"after\"", idx);
    } else if (strcmp(op, "update") == 0 || strcmp(op, "promote") == 0) {
        hs_field f = {0};
        st = change_type(json_object_get(ch, "type"), name, false, &f, err);
        if (st == HS_OK)
            st = ice_schema_update_column_type(cur, name, &f, &next, err);
        hs_field_clear(&f);
    } else if (strcmp(op, "make_optional") == 0) {
        st = ice_schema_make_optional(cur, name, &next, err);
    } else {
        return hs_err_set(err, HS_INVALID, "schema change %d: unknown op \"%s\" (add, drop, "
                          "rename, move, update, make_optional)", idx, op);
    }
    if (st != HS_OK) {
        hs_err_prefix(err, "schema change %d (%s %s)", idx, op, name);
        return st;
    }
    ice_schema_clear(cur);
    *cur = next;
    return HS_OK;
}

typedef struct schema_ctx { json_t *changes; } schema_ctx;

static hs_status schema_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                           ice_table_metadata *m, hs_error *err)
{
    schema_ctx *c = vctx;
    const ice_schema *s = ice_metadata_current_schema(base);
    if (!s)
        return hs_err_set(err, HS_CORRUPT, "metadata has no current schema");
    ice_schema cur = {0};
    HS_TRY(ice_schema_copy(s, &cur));
    int32_t last_id = base->last_column_id;
    hs_status st = HS_OK;
    size_t i;
    json_t *ch;
    json_array_foreach(c->changes, i, ch) {
        st = apply_change(base, ch, (int)i, &cur, &last_id, err);
        if (st != HS_OK)
            break;
    }
    if (st == HS_OK)
        st = ice_schema_validate(&cur, base->format_version, err);
    if (st == HS_OK)
        st = ice_metadata_copy(base, m, err);
    int32_t id;
    if (st == HS_OK)
        st = ice_metadata_add_schema(m, &cur, true, &id, err);
    if (st == HS_OK && m->last_column_id < last_id)
        m->last_column_id = last_id;
    ice_schema_clear(&cur);
    return st;
}

hs_status hs_table_update_schema(hs_table *t, const char *changes_json, hs_error *err)
{
    json_error_t je;
    json_t *j = changes_json ? hs_json_loads(changes_json, 0, &je) : NULL;
    if (!j)
        return hs_err_set(err, HS_INVALID, "schema changes: not JSON: %s",
                          changes_json ? je.text : "NULL");
    if (json_is_object(j)) { /* a single change */
        json_t *arr = json_array();
        json_array_append_new(arr, j);
        j = arr;
    }
    if (!json_is_array(j)) {
        json_decref(j);
        return hs_err_set(err, HS_INVALID, "schema changes: expected a JSON array of changes");
    }
    schema_ctx c = {j};
    hs_status st = tbl_commit(t, schema_cb, &c, err);
    json_decref(j);
    return st;
}
