/*
 * index/registry.c - the index registry model, its JSON form, and reading
 * and writing versions (the format is in registry.h).
 *
 * Parsing is strict about what it needs and lenient about the rest: each
 * declaration and entry must have its required keys with the right JSON
 * types (else HS_CORRUPT naming the registry file and the item), unknown keys
 * are ignored, sizes must be >= 0 and field ids >= 0.  Strings are checked
 * to be non-empty.  The checksum is "xxh64:" + 16 hex digits.
 *
 * Writing goes through cat_io_create_ex (fault points for crash tests) with
 * an exclusive create under a fresh UUID name, so two writers never share a
 * version file and a crash leaves at most an unreferenced orphan.
 */
#include "index/registry.h"

#include "base/hashmap.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "catalog/catalog.h"
#include "io/io.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* model                                                               */

static void decl_clear(ix_decl *d)
{
    hs_free(d->column);
    hs_free(d->kind);
    hs_free(d->params);
    memset(d, 0, sizeof *d);
}

static void entry_clear(ix_entry *e)
{
    hs_free(e->data_file);
    hs_free(e->kind);
    hs_free(e->index_file);
    memset(e, 0, sizeof *e);
}

static void drop_index(ix_registry *r)
{
    hs_map_free(&r->by_file);
    hs_free(r->next);
    r->next = NULL;
    r->indexed = false;
}

void ix_registry_clear(ix_registry *r)
{
    for (int i = 0; i < r->n_decls; i++)
        decl_clear(&r->decls[i]);
    for (int i = 0; i < r->n_entries; i++)
        entry_clear(&r->entries[i]);
    hs_free(r->decls);
    hs_free(r->entries);
    drop_index(r);
    memset(r, 0, sizeof *r);
}

static hs_status entry_copy(const ix_entry *s, ix_entry *d)
{
    memset(d, 0, sizeof *d);
    d->data_file = hs_strdup(s->data_file);
    d->kind = hs_strdup(s->kind);
    d->index_file = hs_strdup(s->index_file);
    d->data_file_size = s->data_file_size;
    d->field_id = s->field_id;
    d->index_file_size = s->index_file_size;
    d->checksum = s->checksum;
    if (!d->data_file || !d->kind || !d->index_file) {
        entry_clear(d);
        return HS_NOMEM;
    }
    return HS_OK;
}

int ix_registry_find_decl(const ix_registry *r, int32_t field_id, const char *kind)
{
    for (int i = 0; i < r->n_decls; i++)
        if (r->decls[i].field_id == field_id && (!kind || strcmp(r->decls[i].kind, kind) == 0))
            return i;
    return -1;
}

/* Appends a declaration (the caller knows it is new). */
static hs_status push_decl(ix_registry *r, const char *column, int32_t field_id, const char *kind,
                           const char *params, hs_error *err)
{
    if (r->n_decls == r->cap_decls) {
        int cap = r->cap_decls ? r->cap_decls * 2 : 4;
        ix_decl *nd = hs_realloc(r->decls, (size_t)cap * sizeof *nd);
        if (!nd)
            return hs_err_nomem(err, (size_t)cap * sizeof *nd);
        r->decls = nd;
        r->cap_decls = cap;
    }
    ix_decl d = {0};
    d.column = hs_strdup(column);
    d.kind = hs_strdup(kind);
    d.params = hs_strdup(params && *params ? params : "{}");
    d.field_id = field_id;
    if (!d.column || !d.kind || !d.params) {
        decl_clear(&d);
        return hs_err_nomem(err, 64);
    }
    r->decls[r->n_decls++] = d;
    return HS_OK;
}

hs_status ix_registry_add_decl(ix_registry *r, const char *column, int32_t field_id,
                               const char *kind, const char *params, hs_error *err)
{
    if (ix_registry_find_decl(r, field_id, kind) >= 0)
        return HS_OK;
    return push_decl(r, column, field_id, kind, params, err);
}

typedef struct decl_key { int32_t field_id; const char *kind; } decl_key;

static bool keep_not_decl(void *ctx, const ix_entry *e)
{
    const decl_key *k = ctx;
    return !(e->field_id == k->field_id && (!k->kind || strcmp(e->kind, k->kind) == 0));
}

int ix_registry_remove_decls(ix_registry *r, int32_t field_id, const char *kind)
{
    int removed = 0, k = 0;
    for (int i = 0; i < r->n_decls; i++) {
        ix_decl *d = &r->decls[i];
        if (d->field_id == field_id && (!kind || strcmp(d->kind, kind) == 0)) {
            decl_clear(d);
            removed++;
        } else {
            r->decls[k++] = *d;
        }
    }
    r->n_decls = k;
    decl_key key = {field_id, kind};
    (void)ix_registry_retain(r, keep_not_decl, &key);
    return removed;
}

static int find_entry(const ix_registry *r, const char *data_file, int32_t field_id,
                      const char *kind)
{
    for (int i = 0; i < r->n_entries; i++) {
        const ix_entry *e = &r->entries[i];
        if (e->field_id == field_id && strcmp(e->data_file, data_file) == 0 &&
            strcmp(e->kind, kind) == 0)
            return i;
    }
    return -1;
}

const ix_entry *ix_registry_find_entry(const ix_registry *r, const char *data_file,
                                       int32_t field_id, const char *kind)
{
    if (r->indexed) {
        for (int i = ix_registry_first(r, data_file); i >= 0; i = ix_registry_next(r, i))
            if (r->entries[i].field_id == field_id && strcmp(r->entries[i].kind, kind) == 0)
                return &r->entries[i];
        return NULL;
    }
    int i = find_entry(r, data_file, field_id, kind);
    return i >= 0 ? &r->entries[i] : NULL;
}

static hs_status push_entry(ix_registry *r, ix_entry *copy, hs_error *err);

hs_status ix_registry_add_entry(ix_registry *r, const ix_entry *e, hs_error *err)
{
    drop_index(r);
    ix_entry copy;
    if (entry_copy(e, &copy) != HS_OK)
        return hs_err_nomem(err, 256);
    int i = find_entry(r, e->data_file, e->field_id, e->kind);
    if (i >= 0) {
        entry_clear(&r->entries[i]);
        r->entries[i] = copy;
        return HS_OK;
    }
    return push_entry(r, &copy, err);
}

/* Appends copy (taking ownership; freed on failure). */
static hs_status push_entry(ix_registry *r, ix_entry *copy, hs_error *err)
{
    if (r->n_entries == r->cap_entries) {
        int cap = r->cap_entries ? r->cap_entries * 2 : 16;
        ix_entry *ne = hs_realloc(r->entries, (size_t)cap * sizeof *ne);
        if (!ne) {
            entry_clear(copy);
            return hs_err_nomem(err, (size_t)cap * sizeof *ne);
        }
        r->entries = ne;
        r->cap_entries = cap;
    }
    r->entries[r->n_entries++] = *copy;
    return HS_OK;
}

int ix_registry_retain(ix_registry *r, bool (*keep)(void *ctx, const ix_entry *e), void *ctx)
{
    drop_index(r);
    int k = 0, dropped = 0;
    for (int i = 0; i < r->n_entries; i++) {
        if (keep(ctx, &r->entries[i])) {
            r->entries[k++] = r->entries[i];
        } else {
            entry_clear(&r->entries[i]);
            dropped++;
        }
    }
    r->n_entries = k;
    return dropped;
}

hs_status ix_registry_copy(const ix_registry *src, ix_registry *dst, hs_error *err)
{
    memset(dst, 0, sizeof *dst);
    hs_status st = HS_OK;
    for (int i = 0; i < src->n_decls && st == HS_OK; i++) {
        const ix_decl *d = &src->decls[i];
        st = ix_registry_add_decl(dst, d->column, d->field_id, d->kind, d->params, err);
    }
    if (st == HS_OK && src->n_entries) {
        dst->entries = hs_calloc((size_t)src->n_entries, sizeof *dst->entries);
        if (!dst->entries)
            st = hs_err_nomem(err, (size_t)src->n_entries * sizeof *dst->entries);
        else
            dst->cap_entries = src->n_entries;
    }
    for (int i = 0; i < src->n_entries && st == HS_OK; i++) {
        if (entry_copy(&src->entries[i], &dst->entries[i]) != HS_OK)
            st = hs_err_nomem(err, 256);
        else
            dst->n_entries++;
    }
    if (st != HS_OK)
        ix_registry_clear(dst);
    return st;
}

hs_status ix_registry_build_index(ix_registry *r, hs_error *err)
{
    drop_index(r);
    r->next = hs_malloc(((size_t)r->n_entries + 1) * sizeof *r->next);
    if (!r->next)
        return hs_err_nomem(err, (size_t)r->n_entries * sizeof *r->next);
    /* insert in reverse so that chains list entries in registry order */
    for (int i = r->n_entries - 1; i >= 0; i--) {
        const char *p = r->entries[i].data_file;
        uint64_t head = 0;
        bool found = hs_map_get(&r->by_file, p, strlen(p), &head);
        r->next[i] = found ? (int)head - 1 : -1;
        if (hs_map_put(&r->by_file, p, strlen(p), (uint64_t)i + 1) != HS_OK) {
            drop_index(r);
            return hs_err_nomem(err, 64);
        }
    }
    r->indexed = true;
    return HS_OK;
}

int ix_registry_first(const ix_registry *r, const char *data_file)
{
    uint64_t v;
    if (!r->indexed || !hs_map_get(&r->by_file, data_file, strlen(data_file), &v))
        return -1;
    return (int)v - 1;
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */

static hs_status bad(hs_error *err, const char *name, const char *what, size_t i,
                     const char *key)
{
    return HS_CORRUPT_AT(err, "index registry %s: %s %zu: \"%s\" is missing or has the wrong "
                         "type", name, what, i, key);
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : NULL;
}

static bool int_of(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return false;
    int64_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

static bool parse_checksum(const char *s, uint64_t *out)
{
    if (!s || strncmp(s, "xxh64:", 6) != 0 || strlen(s + 6) != 16)
        return false;
    uint64_t v = 0;
    for (const char *p = s + 6; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0'
              : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
              : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* The key of a declaration ('D', field id, kind) or an entry ('E', field id,
 * kind, NUL, data file) in parse_root's map of what it has seen. */
static hs_status seen_key(hs_buf *k, char tag, int32_t field_id, const char *kind,
                          const char *data_file)
{
    hs_buf_reset(k);
    HS_TRY(hs_buf_append_byte(k, (uint8_t)tag));
    HS_TRY(hs_buf_append(k, &field_id, sizeof field_id));
    HS_TRY(hs_buf_append(k, kind, strlen(kind) + 1));
    return data_file ? hs_buf_append(k, data_file, strlen(data_file)) : HS_OK;
}

/* Declarations and entries are deduplicated as ix_registry_add_decl and
 * ix_registry_add_entry do (the first declaration of a key stays; a later
 * entry of a key replaces the earlier one in its place), through a hash map:
 * their linear searches made parsing quadratic in the entries. */
static hs_status parse_items(const char *name, const json_t *decls, const json_t *ents,
                             ix_registry *r, hs_map *seen, hs_buf *key, hs_error *err);

static hs_status parse_root(const char *name, const json_t *root, ix_registry *r, hs_error *err)
{
    if (!json_is_object(root))
        return HS_CORRUPT_AT(err, "index registry %s: not a JSON object", name);
    int64_t fv = 0;
    if (!int_of(root, "format-version", 1, INT32_MAX, &fv))
        return HS_CORRUPT_AT(err, "index registry %s: no valid \"format-version\"", name);
    if (fv > IX_REGISTRY_FORMAT_VERSION)
        return hs_err_set(err, HS_UNSUPPORTED, "index registry %s: format version %lld is newer "
                          "than this build reads (%d)", name, (long long)fv,
                          IX_REGISTRY_FORMAT_VERSION);
    const json_t *decls = json_object_get(root, "declared");
    const json_t *ents = json_object_get(root, "entries");
    if ((decls && !json_is_array(decls)) || (ents && !json_is_array(ents)))
        return HS_CORRUPT_AT(err, "index registry %s: \"declared\" and \"entries\" must be "
                             "arrays", name);
    hs_map seen = {0};
    hs_buf key = {0};
    hs_status st = parse_items(name, decls, ents, r, &seen, &key, err);
    hs_map_free(&seen);
    hs_buf_free(&key);
    return st;
}

static hs_status parse_items(const char *name, const json_t *decls, const json_t *ents,
                             ix_registry *r, hs_map *seen, hs_buf *key, hs_error *err)
{
    size_t i;
    const json_t *o;
    json_array_foreach(decls, i, o) {
        const char *col = str_of(o, "column"), *kind = str_of(o, "kind");
        int64_t fid;
        if (!json_is_object(o) || !col)
            return bad(err, name, "declaration", i, "column");
        if (!kind)
            return bad(err, name, "declaration", i, "kind");
        if (!int_of(o, "field-id", 0, INT32_MAX, &fid))
            return bad(err, name, "declaration", i, "field-id");
        const json_t *params = json_object_get(o, "params");
        char *ptxt = NULL;
        if (params && !json_is_null(params)) {
            if (!json_is_object(params))
                return bad(err, name, "declaration", i, "params");
            ptxt = hs_json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);
            if (!ptxt)
                return hs_err_nomem(err, 64);
        }
        bool dup = false;
        hs_status st = seen_key(key, 'D', (int32_t)fid, kind, NULL);
        if (st == HS_OK)
            st = hs_map_get_or_put(seen, key->data, key->len, 0, NULL, &dup);
        if (st == HS_OK && !dup)
            st = push_decl(r, col, (int32_t)fid, kind, ptxt, err);
        else if (st != HS_OK)
            st = hs_err_nomem(err, key->len);
        free(ptxt);
        HS_TRY(st);
    }
    json_array_foreach(ents, i, o) {
        ix_entry e = {0};
        int64_t fid, dsz, isz;
        if (!json_is_object(o) || !(e.data_file = (char *)str_of(o, "data-file")))
            return bad(err, name, "entry", i, "data-file");
        if (!int_of(o, "data-file-size", 0, INT64_MAX, &dsz))
            return bad(err, name, "entry", i, "data-file-size");
        if (!int_of(o, "field-id", 0, INT32_MAX, &fid))
            return bad(err, name, "entry", i, "field-id");
        if (!(e.kind = (char *)str_of(o, "kind")))
            return bad(err, name, "entry", i, "kind");
        if (!(e.index_file = (char *)str_of(o, "index-file")))
            return bad(err, name, "entry", i, "index-file");
        if (!int_of(o, "index-file-size", 0, INT64_MAX, &isz))
            return bad(err, name, "entry", i, "index-file-size");
        if (!parse_checksum(str_of(o, "checksum"), &e.checksum))
            return bad(err, name, "entry", i, "checksum");
        e.field_id = (int32_t)fid;
        e.data_file_size = dsz;
        e.index_file_size = isz;
        ix_entry copy;
        uint64_t at = 0;
        bool dup = false;
        if (seen_key(key, 'E', e.field_id, e.kind, e.data_file) != HS_OK ||
            hs_map_get_or_put(seen, key->data, key->len, (uint64_t)r->n_entries, &at, &dup) !=
                HS_OK || entry_copy(&e, &copy) != HS_OK)
            return hs_err_nomem(err, 256);
        if (dup) {
            entry_clear(&r->entries[at]);
            r->entries[at] = copy;
        } else {
            HS_TRY(push_entry(r, &copy, err));
        }
    }
    return HS_OK;
}

hs_status ix_registry_parse(const char *name, const char *json, size_t len, ix_registry *out,
                            hs_error *err)
{
    json_error_t je;
    json_t *root = hs_json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return HS_CORRUPT_AT(err, "index registry %s: not valid JSON: %s (line %d)", name,
                             je.text, je.line);
    hs_status st = parse_root(name, root, out, err);
    json_decref(root);
    if (st != HS_OK)
        ix_registry_clear(out);
    return st;
}

static int set_str(json_t *o, const char *k, const char *v)
{
    return json_object_set_new(o, k, json_string(v));
}

static int set_int(json_t *o, const char *k, int64_t v)
{
    return json_object_set_new(o, k, json_integer((json_int_t)v));
}

hs_status ix_registry_to_json(const ix_registry *r, hs_buf *out, hs_error *err)
{
    json_t *root = json_object(), *decls = json_array(), *ents = json_array();
    int bad_alloc = !root || !decls || !ents;
    if (!bad_alloc) {
        bad_alloc |= set_int(root, "format-version", IX_REGISTRY_FORMAT_VERSION);
        bad_alloc |= json_object_set(root, "declared", decls);
        bad_alloc |= json_object_set(root, "entries", ents);
    }
    for (int i = 0; !bad_alloc && i < r->n_decls; i++) {
        const ix_decl *d = &r->decls[i];
        json_t *o = json_object();
        json_t *p = hs_json_loads(d->params ? d->params : "{}", 0, NULL);
        if (!p || !json_is_object(p)) {
            json_decref(p);
            p = json_object();
        }
        bad_alloc |= !o || !p;
        if (!bad_alloc) {
            bad_alloc |= set_str(o, "column", d->column);
            bad_alloc |= set_int(o, "field-id", d->field_id);
            bad_alloc |= set_str(o, "kind", d->kind);
            bad_alloc |= json_object_set(o, "params", p);
            bad_alloc |= json_array_append(decls, o);
        }
        json_decref(p);
        json_decref(o);
    }
    for (int i = 0; !bad_alloc && i < r->n_entries; i++) {
        const ix_entry *e = &r->entries[i];
        char ck[32];
        snprintf(ck, sizeof ck, "xxh64:%016" PRIx64, e->checksum);
        json_t *o = json_object();
        bad_alloc |= !o;
        if (!bad_alloc) {
            bad_alloc |= set_str(o, "data-file", e->data_file);
            bad_alloc |= set_int(o, "data-file-size", e->data_file_size);
            bad_alloc |= set_int(o, "field-id", e->field_id);
            bad_alloc |= set_str(o, "kind", e->kind);
            bad_alloc |= set_str(o, "index-file", e->index_file);
            bad_alloc |= set_int(o, "index-file-size", e->index_file_size);
            bad_alloc |= set_str(o, "checksum", ck);
            bad_alloc |= json_array_append(ents, o);
        }
        json_decref(o);
    }
    char *s = bad_alloc ? NULL : hs_json_dumps(root, JSON_COMPACT);
    json_decref(decls);
    json_decref(ents);
    json_decref(root);
    if (!s)
        return hs_err_nomem(err, 256);
    hs_status st = hs_buf_puts(out, s);
    free(s);
    return st == HS_OK ? HS_OK : hs_err_nomem(err, out->len);
}

/* ------------------------------------------------------------------ */
/* files                                                               */

hs_status ix_resolve_path(const char *location, const char *rel, hs_buf *out)
{
    hs_buf_reset(out);
    if (rel[0] == '/' || strstr(rel, "://") || strncmp(rel, "file:", 5) == 0) {
        HS_TRY(hs_buf_puts(out, rel));
    } else {
        size_t n = strlen(location);
        while (n > 1 && location[n - 1] == '/')
            n--;
        HS_TRY(hs_buf_append(out, location, n));
        HS_TRY(hs_buf_printf(out, "/%s", rel));
    }
    hs_buf_cstr(out);
    return HS_OK;
}

hs_status ix_sidecar_rel(const char *data_file, int32_t field_id, const char *kind,
                         const char *suffix, hs_buf *out)
{
    hs_buf_reset(out);
    const char *base = strrchr(data_file, '/');
    base = base ? base + 1 : data_file;
    size_t n = strlen(base);
    if (n > 8 && strcmp(base + n - 8, ".parquet") == 0)
        n -= 8;
    if (n == 0) {
        base = "data";
        n = 4;
    }
    HS_TRY(hs_buf_puts(out, "index/"));
    HS_TRY(hs_buf_append(out, base, n));
    if (suffix)
        HS_TRY(hs_buf_printf(out, "-%s", suffix));
    HS_TRY(hs_buf_printf(out, ".%d.%s", (int)field_id, kind));
    hs_buf_cstr(out);
    return HS_OK;
}

hs_status ix_registry_load(const char *location, const char *rel, ix_registry *out,
                           hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!rel || !*rel)
        return HS_OK;
    hs_buf path = {0}, text = {0};
    if (ix_resolve_path(location, rel, &path) != HS_OK)
        return hs_err_nomem(err, strlen(rel));
    hs_status st = hs_io_read_all(cat_local_path(hs_buf_cstr(&path)), &text, err);
    if (st == HS_OK)
        st = ix_registry_parse(rel, (const char *)text.data, text.len, out, err);
    else
        hs_err_prefix(err, "index registry");
    hs_buf_free(&text);
    hs_buf_free(&path);
    return st;
}

hs_status ix_registry_write(const char *location, const ix_registry *r, int wflags,
                            char **rel_out, hs_error *err)
{
    *rel_out = NULL;
    char uuid[37];
    cat_uuid4(uuid);
    hs_buf rel = {0}, path = {0}, json = {0};
    hs_status st = HS_OK;
    if (hs_buf_printf(&rel, "index/registry/%s.json", uuid) != HS_OK ||
        ix_resolve_path(location, hs_buf_cstr(&rel), &path) != HS_OK)
        st = hs_err_nomem(err, 256);
    if (st == HS_OK)
        st = ix_registry_to_json(r, &json, err);
    const char *local = st == HS_OK ? cat_local_path(hs_buf_cstr(&path)) : NULL;
    if (st == HS_OK) {
        const char *slash = strrchr(local, '/');
        char *dir = slash ? hs_strndup(local, (size_t)(slash - local)) : NULL;
        if (slash && !dir)
            st = hs_err_nomem(err, 256);
        else if (dir)
            st = cat_io_mkdirs(dir, err);
        hs_free(dir);
    }
    if (st == HS_OK)
        st = cat_io_write_all_ex(local, wflags | HS_WFILE_EXCLUSIVE, json.data, json.len, err);
    if (st == HS_OK) {
        size_t n;
        *rel_out = (char *)hs_buf_detach(&rel, &n);
    }
    hs_buf_free(&rel);
    hs_buf_free(&path);
    hs_buf_free(&json);
    return st;
}
