/*
 * index/registry.c - the index registry model, its JSON form, and reading
 * and writing versions: format-1 files, format-2 roots and segments, the
 * composition of segments and the merge policy (the format is in
 * registry.h).
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
    hs_free(e->cluster);
    memset(e, 0, sizeof *e);
}

static void drop_index(ix_registry *r)
{
    hs_map_free(&r->by_file);
    hs_free(r->next);
    r->next = NULL;
    r->indexed = false;
}

static void seg_clear(ix_segment *sg)
{
    hs_free(sg->path);
    hs_free(sg->inline_json);
    sg->path = sg->inline_json = NULL;
}

static void segments_free(ix_segment *a, int n)
{
    for (int i = 0; i < n; i++)
        seg_clear(&a[i]);
    hs_free(a);
}

/* A copy of jansson-allocated text in hs_ memory (NULL on failure). */
static char *json_text(const json_t *v)
{
    char *s = hs_json_dumps(v, JSON_COMPACT);
    char *c = s ? hs_strdup(s) : NULL;
    free(s);
    return c;
}

static void bounds_clear(ix_mbound *b, int n)
{
    for (int k = 0; k < n; k++) {
        hs_free(b[k].lower);
        hs_free(b[k].upper);
    }
    hs_free(b);
}

static void msum_clear(ix_msum *m)
{
    bounds_clear(m->bounds, m->n_bounds);
    for (int i = 0; i < m->n_files; i++) {
        bounds_clear(m->files[i].bounds, m->files[i].n_bounds);
        hs_free(m->files[i].path);
    }
    hs_free(m->files);
    hs_free(m->path);
    memset(m, 0, sizeof *m);
}

void ix_msums_free_one(ix_msum *m) { msum_clear(m); }

void ix_msums_free(ix_msum *a, int n)
{
    for (int i = 0; a && i < n; i++)
        msum_clear(&a[i]);
    hs_free(a);
}

static uint8_t *bytes_dup(const uint8_t *p, uint32_t n)
{
    uint8_t *d = hs_malloc(n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

/* Copies src[0..n) into *dst (NULL when n == 0), *dn counting those made. */
static bool bounds_copy(const ix_mbound *src, int n, ix_mbound **dst, int *dn)
{
    *dst = NULL;
    *dn = 0;
    if (n == 0)
        return true;
    if (!(*dst = hs_calloc((size_t)n, sizeof **dst)))
        return false;
    for (int k = 0; k < n; k++) {
        const ix_mbound *b = &src[k];
        ix_mbound *o = &(*dst)[(*dn)++];
        *o = (ix_mbound){b->field_id, b->lower_len, b->upper_len, NULL, NULL};
        o->lower = bytes_dup(b->lower, b->lower_len);
        o->upper = bytes_dup(b->upper, b->upper_len);
        if (!o->lower || !o->upper)
            return false;
    }
    return true;
}

hs_status ix_msum_copy(const ix_msum *src, ix_msum *dst, hs_error *err)
{
    memset(dst, 0, sizeof *dst);
    dst->length = src->length;
    dst->snapshot = src->snapshot;
    dst->seq = src->seq;
    dst->path = hs_strdup(src->path);
    bool ok = dst->path && bounds_copy(src->bounds, src->n_bounds, &dst->bounds, &dst->n_bounds);
    dst->has_files = src->has_files;
    if (ok && src->has_files) {
        if (src->n_files > 0 && !(dst->files = hs_calloc((size_t)src->n_files, sizeof *dst->files)))
            ok = false;
        for (int i = 0; ok && i < src->n_files; i++) {
            const ix_mfile *f = &src->files[i];
            ix_mfile *o = &dst->files[dst->n_files++];
            *o = *f;
            o->bounds = NULL;
            o->n_bounds = 0;
            o->path = hs_strdup(f->path);
            ok = o->path && bounds_copy(f->bounds, f->n_bounds, &o->bounds, &o->n_bounds);
        }
    }
    if (!ok) {
        msum_clear(dst);
        return hs_err_nomem(err, 256);
    }
    return HS_OK;
}

const ix_msum *ix_registry_find_msum(const ix_registry *r, const char *path, int64_t length,
                                     int64_t snapshot)
{
    for (int i = 0; i < r->n_msums; i++)
        if (r->msums[i].length == length && r->msums[i].snapshot == snapshot &&
            strcmp(r->msums[i].path, path) == 0)
            return &r->msums[i];
    return NULL;
}

void ix_registry_set_msums(ix_registry *r, ix_msum *a, int n)
{
    ix_msums_free(r->msums, r->n_msums);
    r->msums = a;
    r->n_msums = n;
}

void ix_registry_clear(ix_registry *r)
{
    ix_msums_free(r->msums, r->n_msums);
    segments_free(r->segments, r->n_segments);
    for (int i = 0; i < r->n_decls; i++)
        decl_clear(&r->decls[i]);
    for (int i = 0; i < r->n_entries; i++)
        entry_clear(&r->entries[i]);
    hs_free(r->decls);
    hs_free(r->entries);
    drop_index(r);
    memset(r, 0, sizeof *r);
}

void ix_registry_clear_entries(ix_registry *r)
{
    drop_index(r);
    for (int i = 0; i < r->n_entries; i++)
        entry_clear(&r->entries[i]);
    hs_free(r->entries);
    r->entries = NULL;
    r->n_entries = r->cap_entries = 0;
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
    d->head = s->head;
    d->cluster = s->cluster ? hs_strdup(s->cluster) : NULL;
    if (!d->data_file || !d->kind || !d->index_file || (s->cluster && !d->cluster)) {
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

hs_status ix_registry_append_entry(ix_registry *r, const ix_entry *e, hs_error *err)
{
    drop_index(r);
    ix_entry copy;
    if (entry_copy(e, &copy) != HS_OK)
        return hs_err_nomem(err, 256);
    return push_entry(r, &copy, err);
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
    dst->format_version = src->format_version;
    if (src->n_segments) {
        dst->segments = hs_calloc((size_t)src->n_segments, sizeof *dst->segments);
        if (!dst->segments)
            return hs_err_nomem(err, (size_t)src->n_segments * sizeof *dst->segments);
        for (int i = 0; i < src->n_segments && st == HS_OK; i++) {
            dst->segments[i] = src->segments[i];
            dst->segments[i].path = hs_strdup(src->segments[i].path);
            dst->segments[i].inline_json = src->segments[i].inline_json ?
                hs_strdup(src->segments[i].inline_json) : NULL;
            dst->n_segments++;
            if (!dst->segments[i].path ||
                (src->segments[i].inline_json && !dst->segments[i].inline_json))
                st = hs_err_nomem(err, 64);
        }
    }
    for (int i = 0; i < src->n_decls && st == HS_OK; i++) {
        const ix_decl *d = &src->decls[i];
        st = ix_registry_add_decl(dst, d->column, d->field_id, d->kind, d->params, err);
    }
    if (st == HS_OK && src->n_msums) {
        dst->msums = hs_calloc((size_t)src->n_msums, sizeof *dst->msums);
        if (!dst->msums)
            st = hs_err_nomem(err, (size_t)src->n_msums * sizeof *dst->msums);
        for (int i = 0; st == HS_OK && i < src->n_msums; i++)
            if ((st = ix_msum_copy(&src->msums[i], &dst->msums[i], err)) == HS_OK)
                dst->n_msums++;
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

/* A segment path must be a plain file under index/registry/ (relative, no
 * "..", no URI): a root is untrusted and must not point readers, or the
 * maintenance that keeps what it names, elsewhere. */
static bool segment_path_ok(const char *p)
{
    return p && strncmp(p, "index/registry/", 15) == 0 && p[15] && !strstr(p, "..") &&
           !strchr(p + 15, '/') && !strchr(p, '\\') && strlen(p) < 512;
}

static hs_status parse_segment_list(const char *name, const json_t *segs, ix_registry *r,
                                    hs_error *err)
{
    if (!json_is_array(segs))
        return HS_CORRUPT_AT(err, "index registry %s: format 2 without a \"segments\" array",
                             name);
    size_t n = json_array_size(segs);
    if (n > 100000)
        return HS_CORRUPT_AT(err, "index registry %s: %zu segments", name, n);
    if (n == 0)
        return HS_OK;
    r->segments = hs_calloc(n, sizeof *r->segments);
    if (!r->segments)
        return hs_err_nomem(err, n * sizeof *r->segments);
    size_t i;
    const json_t *o;
    json_array_foreach(segs, i, o) {
        const char *path = str_of(o, "path");
        ix_segment sg = {0};
        if (!json_is_object(o) || !segment_path_ok(path))
            return bad(err, name, "segment", i, "path");
        if (!int_of(o, "entries", 0, INT32_MAX, &sg.n_entries))
            return bad(err, name, "segment", i, "entries");
        if (!int_of(o, "removed", 0, INT32_MAX, &sg.n_removed))
            return bad(err, name, "segment", i, "removed");
        if (!int_of(o, "bytes", 0, INT64_MAX, &sg.bytes))
            return bad(err, name, "segment", i, "bytes");
        if (!(sg.path = hs_strdup(path)))
            return hs_err_nomem(err, 64);
        const json_t *inl = json_object_get(o, "inline");
        if (json_is_object(inl) && !(sg.inline_json = json_text(inl))) {
            hs_free(sg.path);
            return hs_err_nomem(err, 4096);
        }
        r->segments[r->n_segments++] = sg;
    }
    return HS_OK;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Lower-case hex text to bytes (owned); false on bad text. */
static bool hex_bytes(const json_t *v, uint8_t **out, uint32_t *n)
{
    const char *s = json_string_value(v);
    size_t len = s ? strlen(s) : 1;
    if (!s || len % 2 || len / 2 > IX_MSUM_BOUND_MAX)
        return false;
    uint8_t *b = hs_malloc(len / 2 + 1);
    if (!b)
        return false;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            hs_free(b);
            return false;
        }
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = b;
    *n = (uint32_t)(len / 2);
    return true;
}

/* [[field-id, lower-hex, upper-hex], ...] into *out (n_out made). */
static bool parse_bounds(const json_t *bs, ix_mbound **out, int *n_out)
{
    if (!json_is_array(bs) || json_array_size(bs) > IX_MSUM_FIELDS)
        return false;
    size_t n = json_array_size(bs);
    if (n && !(*out = hs_calloc(n, sizeof **out)))
        return false;
    size_t i;
    const json_t *b;
    json_array_foreach(bs, i, b) {
        ix_mbound *x = &(*out)[*n_out];
        int64_t id = 0;
        if (!json_is_array(b) || json_array_size(b) != 3 ||
            !json_is_integer(json_array_get(b, 0)) ||
            (id = json_integer_value(json_array_get(b, 0))) < 0 || id > INT32_MAX)
            return false;
        x->field_id = (int32_t)id;
        if (!hex_bytes(json_array_get(b, 1), &x->lower, &x->lower_len))
            return false;
        (*n_out)++;
        if (!hex_bytes(json_array_get(b, 2), &x->upper, &x->upper_len))
            return false;
    }
    return true;
}

static bool parse_mfile(const json_t *o, ix_mfile *f)
{
    const char *path = str_of(o, "path");
    if (!json_is_object(o) || !path || !int_of(o, "size", 0, INT64_MAX, &f->size) ||
        !int_of(o, "records", 0, INT64_MAX, &f->records) ||
        !int_of(o, "entry", 0, INT64_MAX, &f->entry) ||
        !int_of(o, "seq", INT64_MIN, INT64_MAX, &f->data_seq) ||
        !int_of(o, "fseq", INT64_MIN, INT64_MAX, &f->file_seq) || !(f->path = hs_strdup(path)))
        return false;
    if (json_object_get(o, "first-row-id")) {
        if (!int_of(o, "first-row-id", 0, INT64_MAX, &f->first_row_id))
            return false;
        f->has_first_row_id = true;
    }
    return parse_bounds(json_object_get(o, "bounds"), &f->bounds, &f->n_bounds);
}

static bool parse_msum(const json_t *o, ix_msum *m)
{
    const char *path = str_of(o, "path");
    if (!path || !int_of(o, "length", 0, INT64_MAX, &m->length) ||
        !int_of(o, "snapshot", INT64_MIN, INT64_MAX, &m->snapshot) ||
        !(m->path = hs_strdup(path)) ||
        !parse_bounds(json_object_get(o, "bounds"), &m->bounds, &m->n_bounds))
        return false;
    const json_t *fs = json_object_get(o, "files");
    if (!fs)
        return true;
    size_t n = json_array_size(fs);
    if (!json_is_array(fs) || !int_of(o, "seq", INT64_MIN, INT64_MAX, &m->seq) ||
        (n && !(m->files = hs_calloc(n, sizeof *m->files))))
        return false;
    m->has_files = true;
    size_t i;
    const json_t *f;
    json_array_foreach(fs, i, f) {
        if (!parse_mfile(f, &m->files[m->n_files++]))
            return false;
    }
    return true;
}

/* The root's "manifests" (optional): anything malformed drops them all
 * (they only save reads). */
static void parse_msums(const json_t *arr, ix_registry *r)
{
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n == 0 || n > IX_MSUM_MAX)
        return;
    ix_msum *a = hs_calloc(n, sizeof *a);
    if (!a)
        return;
    size_t i;
    const json_t *o;
    json_array_foreach(arr, i, o) {
        if (!json_is_object(o) || !parse_msum(o, &a[i])) {
            ix_msums_free(a, (int)n);
            return;
        }
    }
    ix_registry_set_msums(r, a, (int)n);
}

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
    if (json_is_true(json_object_get(root, "segment")))
        return HS_CORRUPT_AT(err, "index registry %s: a segment, not a registry root", name);
    const json_t *decls = json_object_get(root, "declared");
    const json_t *ents = fv >= 2 ? NULL : json_object_get(root, "entries");
    if ((decls && !json_is_array(decls)) || (ents && !json_is_array(ents)))
        return HS_CORRUPT_AT(err, "index registry %s: \"declared\" and \"entries\" must be "
                             "arrays", name);
    r->format_version = (int)fv;
    if (fv >= 2)
        HS_TRY(parse_segment_list(name, json_object_get(root, "segments"), r, err));
    if (fv >= 2)
        parse_msums(json_object_get(root, "manifests"), r);
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
        e.head = json_is_true(json_object_get(o, "head"));
        json_t *cl = json_object_get(o, "cluster");
        char *cl_text = json_is_object(cl) ? hs_json_dumps(cl, JSON_COMPACT) : NULL;
        if (json_is_object(cl) && !cl_text)
            return hs_err_nomem(err, 256);
        e.cluster = cl_text;   /* entry_copy copies it; freed below */
        e.field_id = (int32_t)fid;
        e.data_file_size = dsz;
        e.index_file_size = isz;
        ix_entry copy;
        uint64_t at = 0;
        bool dup = false;
        if (seen_key(key, 'E', e.field_id, e.kind, e.data_file) != HS_OK ||
            hs_map_get_or_put(seen, key->data, key->len, (uint64_t)r->n_entries, &at, &dup) !=
                HS_OK || entry_copy(&e, &copy) != HS_OK) {
            free(cl_text);
            return hs_err_nomem(err, 256);
        }
        free(cl_text);
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

/* Appends the JSON objects of decls / entries to arrays; nonzero on OOM. */
static int decls_to_array(const ix_decl *a, int n, json_t *arr)
{
    int bad_alloc = 0;
    for (int i = 0; !bad_alloc && i < n; i++) {
        const ix_decl *d = &a[i];
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
            bad_alloc |= json_array_append(arr, o);
        }
        json_decref(p);
        json_decref(o);
    }
    return bad_alloc;
}

static int entries_to_array(const ix_entry *a, int n, json_t *arr)
{
    int bad_alloc = 0;
    for (int i = 0; !bad_alloc && i < n; i++) {
        const ix_entry *e = &a[i];
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
            if (e->head)
                bad_alloc |= json_object_set_new(o, "head", json_true()) != 0;
            json_t *cl = e->cluster ? hs_json_loads(e->cluster, 0, NULL) : NULL;
            if (cl && json_is_object(cl))
                bad_alloc |= json_object_set_new(o, "cluster", cl) != 0;
            else
                json_decref(cl);
            bad_alloc |= json_array_append(arr, o);
        }
        json_decref(o);
    }
    return bad_alloc;
}

/* Dumps root (stolen) compactly into out. */
static hs_status dump_into(json_t *root, int bad_alloc, hs_buf *out, hs_error *err)
{
    char *s = bad_alloc || !root ? NULL : hs_json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s)
        return hs_err_nomem(err, 256);
    hs_status st = hs_buf_puts(out, s);
    free(s);
    return st == HS_OK ? HS_OK : hs_err_nomem(err, out->len);
}

hs_status ix_registry_to_json(const ix_registry *r, hs_buf *out, hs_error *err)
{
    json_t *root = json_object(), *decls = json_array(), *ents = json_array();
    int bad_alloc = !root || !decls || !ents;
    if (!bad_alloc) {
        bad_alloc |= set_int(root, "format-version", 1);
        bad_alloc |= json_object_set(root, "declared", decls);
        bad_alloc |= json_object_set(root, "entries", ents);
    }
    bad_alloc |= bad_alloc || decls_to_array(r->decls, r->n_decls, decls);
    bad_alloc |= bad_alloc || entries_to_array(r->entries, r->n_entries, ents);
    json_decref(decls);
    json_decref(ents);
    return dump_into(root, bad_alloc, out, err);
}

static json_t *hex_string(const uint8_t *p, uint32_t n)
{
    static const char dig[] = "0123456789abcdef";
    char buf[2 * IX_MSUM_BOUND_MAX + 1];
    if (n > IX_MSUM_BOUND_MAX)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        buf[2 * i] = dig[p[i] >> 4];
        buf[2 * i + 1] = dig[p[i] & 15];
    }
    buf[2 * n] = '\0';
    return json_string(buf);
}

/* [[field-id, lower-hex, upper-hex], ...] (new reference), NULL on OOM. */
static json_t *bounds_json(const ix_mbound *a, int n)
{
    json_t *bs = json_array();
    int bad_alloc = !bs;
    for (int k = 0; !bad_alloc && k < n && k < IX_MSUM_FIELDS; k++) {
        json_t *b = json_array();
        bad_alloc |= !b || json_array_append_new(b, json_integer(a[k].field_id)) ||
                     json_array_append_new(b, hex_string(a[k].lower, a[k].lower_len)) ||
                     json_array_append_new(b, hex_string(a[k].upper, a[k].upper_len)) ||
                     json_array_append(bs, b);
        json_decref(b);
    }
    if (bad_alloc) {
        json_decref(bs);
        return NULL;
    }
    return bs;
}

static json_t *mfile_json(const ix_mfile *f)
{
    json_t *o = json_object(), *bs = bounds_json(f->bounds, f->n_bounds);
    int bad_alloc = !o || !bs;
    if (!bad_alloc) {
        bad_alloc |= set_str(o, "path", f->path);
        bad_alloc |= set_int(o, "size", f->size);
        bad_alloc |= set_int(o, "records", f->records);
        bad_alloc |= set_int(o, "entry", f->entry);
        bad_alloc |= set_int(o, "seq", f->data_seq);
        bad_alloc |= set_int(o, "fseq", f->file_seq);
        if (f->has_first_row_id)
            bad_alloc |= set_int(o, "first-row-id", f->first_row_id);
        bad_alloc |= json_object_set(o, "bounds", bs);
    }
    json_decref(bs);
    if (bad_alloc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Adds r's manifest summaries to a root object; nonzero on OOM. */
static int msums_to_json(const ix_registry *r, json_t *root)
{
    json_t *arr = json_array();
    int bad_alloc = !arr;
    for (int i = 0; !bad_alloc && i < r->n_msums && i < IX_MSUM_MAX; i++) {
        const ix_msum *m = &r->msums[i];
        json_t *o = json_object(), *bs = bounds_json(m->bounds, m->n_bounds);
        json_t *fs = m->has_files ? json_array() : NULL;
        bad_alloc |= !o || !bs || (m->has_files && !fs);
        for (int k = 0; !bad_alloc && k < m->n_files; k++)
            bad_alloc |= json_array_append_new(fs, mfile_json(&m->files[k]));
        if (!bad_alloc) {
            bad_alloc |= set_str(o, "path", m->path);
            bad_alloc |= set_int(o, "length", m->length);
            bad_alloc |= set_int(o, "snapshot", m->snapshot);
            bad_alloc |= json_object_set(o, "bounds", bs);
            if (fs) {
                bad_alloc |= set_int(o, "seq", m->seq);
                bad_alloc |= json_object_set(o, "files", fs);
            }
            bad_alloc |= json_array_append(arr, o);
        }
        json_decref(fs);
        json_decref(bs);
        json_decref(o);
    }
    if (!bad_alloc)
        bad_alloc |= json_object_set(root, "manifests", arr);
    json_decref(arr);
    return bad_alloc;
}

/* A format-2 root: r's declarations and the segments segs[0..n). */
static hs_status root_to_json(const ix_registry *r, const ix_segment *segs, int n, hs_buf *out,
                              hs_error *err)
{
    json_t *root = json_object(), *decls = json_array(), *sa = json_array();
    int bad_alloc = !root || !decls || !sa;
    if (!bad_alloc) {
        bad_alloc |= set_int(root, "format-version", 2);
        bad_alloc |= json_object_set(root, "declared", decls);
        bad_alloc |= json_object_set(root, "segments", sa);
    }
    bad_alloc |= bad_alloc || decls_to_array(r->decls, r->n_decls, decls);
    /* the segments' texts inline when all of them are at hand and small */
    size_t inl_bytes = 0;
    bool inl = true;
    for (int i = 0; i < n; i++) {
        inl &= segs[i].inline_json != NULL;
        inl_bytes += segs[i].inline_json ? strlen(segs[i].inline_json) : 0;
    }
    inl &= n > 0 && inl_bytes <= IX_INLINE_MAX;
    for (int i = 0; !bad_alloc && i < n; i++) {
        json_t *o = json_object();
        bad_alloc |= !o;
        if (!bad_alloc) {
            bad_alloc |= set_str(o, "path", segs[i].path);
            bad_alloc |= set_int(o, "entries", segs[i].n_entries);
            bad_alloc |= set_int(o, "removed", segs[i].n_removed);
            bad_alloc |= set_int(o, "bytes", segs[i].bytes);
            if (inl && !bad_alloc) {
                json_t *v = hs_json_loads(segs[i].inline_json, 0, NULL);
                bad_alloc |= !v || json_object_set_new(o, "inline", v);
            }
            bad_alloc |= json_array_append(sa, o);
        }
        json_decref(o);
    }
    json_decref(decls);
    json_decref(sa);
    if (!bad_alloc && r->n_msums > 0)
        bad_alloc |= msums_to_json(r, root);
    return dump_into(root, bad_alloc, out, err);
}

hs_status ix_segment_to_json(const ix_segdata *sd, hs_buf *out, hs_error *err)
{
    json_t *root = json_object(), *rm = json_array(), *ents = json_array();
    int bad_alloc = !root || !rm || !ents;
    if (!bad_alloc) {
        bad_alloc |= set_int(root, "format-version", 2);
        bad_alloc |= json_object_set_new(root, "segment", json_true());
        bad_alloc |= json_object_set(root, "removed", rm);
        bad_alloc |= json_object_set(root, "entries", ents);
    }
    for (int i = 0; !bad_alloc && i < sd->n_removed; i++)
        bad_alloc |= json_array_append_new(rm, json_string(sd->removed[i]));
    bad_alloc |= bad_alloc || entries_to_array(sd->entries, sd->n_entries, ents);
    json_decref(rm);
    json_decref(ents);
    return dump_into(root, bad_alloc, out, err);
}

/* ------------------------------------------------------------------ */
/* segments                                                            */

void ix_segdata_clear(ix_segdata *sd)
{
    for (int i = 0; i < sd->n_entries; i++)
        entry_clear(&sd->entries[i]);
    for (int i = 0; i < sd->n_removed; i++)
        hs_free(sd->removed[i]);
    hs_free(sd->entries);
    hs_free(sd->removed);
    memset(sd, 0, sizeof *sd);
}

static hs_status seg_push_removed(ix_segdata *sd, const char *path, hs_error *err)
{
    if (sd->n_removed == sd->cap_removed) {
        int cap = sd->cap_removed ? sd->cap_removed * 2 : 8;
        char **nr = hs_realloc(sd->removed, (size_t)cap * sizeof *nr);
        if (!nr)
            return hs_err_nomem(err, (size_t)cap * sizeof *nr);
        sd->removed = nr;
        sd->cap_removed = cap;
    }
    char *c = hs_strdup(path);
    if (!c)
        return hs_err_nomem(err, strlen(path));
    sd->removed[sd->n_removed++] = c;
    return HS_OK;
}

static hs_status seg_push_entry(ix_segdata *sd, const ix_entry *e, hs_error *err)
{
    if (sd->n_entries == sd->cap_entries) {
        int cap = sd->cap_entries ? sd->cap_entries * 2 : 16;
        ix_entry *ne = hs_realloc(sd->entries, (size_t)cap * sizeof *ne);
        if (!ne)
            return hs_err_nomem(err, (size_t)cap * sizeof *ne);
        sd->entries = ne;
        sd->cap_entries = cap;
    }
    if (entry_copy(e, &sd->entries[sd->n_entries]) != HS_OK)
        return hs_err_nomem(err, 256);
    sd->n_entries++;
    return HS_OK;
}

static hs_status parse_segment(const char *name, const json_t *root, ix_segdata *out,
                               hs_error *err)
{
    if (!json_is_object(root))
        return HS_CORRUPT_AT(err, "index registry segment %s: not a JSON object", name);
    int64_t fv = 0;
    if (!int_of(root, "format-version", 2, INT32_MAX, &fv))
        return HS_CORRUPT_AT(err, "index registry segment %s: no valid \"format-version\"", name);
    if (fv > IX_REGISTRY_FORMAT_VERSION)
        return hs_err_set(err, HS_UNSUPPORTED, "index registry segment %s: format version %lld "
                          "is newer than this build reads (%d)", name, (long long)fv,
                          IX_REGISTRY_FORMAT_VERSION);
    if (!json_is_true(json_object_get(root, "segment")))
        return HS_CORRUPT_AT(err, "index registry segment %s: not a segment", name);
    const json_t *rm = json_object_get(root, "removed");
    const json_t *ents = json_object_get(root, "entries");
    if ((rm && !json_is_array(rm)) || (ents && !json_is_array(ents)))
        return HS_CORRUPT_AT(err, "index registry segment %s: \"removed\" and \"entries\" must "
                             "be arrays", name);
    size_t i;
    const json_t *o;
    json_array_foreach(rm, i, o) {
        const char *p = json_string_value(o);
        if (!p || !*p)
            return bad(err, name, "removed item", i, "(string)");
        HS_TRY(seg_push_removed(out, p, err));
    }
    /* entries through the registry parser (its checks and deduplication) */
    ix_registry tmp = {0};
    hs_map seen = {0};
    hs_buf key = {0};
    hs_status st = parse_items(name, NULL, ents, &tmp, &seen, &key, err);
    hs_map_free(&seen);
    hs_buf_free(&key);
    if (st == HS_OK) {
        out->entries = tmp.entries;
        out->n_entries = tmp.n_entries;
        out->cap_entries = tmp.cap_entries;
        tmp.entries = NULL;
        tmp.n_entries = tmp.cap_entries = 0;
    }
    ix_registry_clear(&tmp);
    return st;
}

hs_status ix_segment_parse(const char *name, const char *json, size_t len, ix_segdata *out,
                           hs_error *err)
{
    json_error_t je;
    json_t *root = hs_json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return HS_CORRUPT_AT(err, "index registry segment %s: not valid JSON: %s (line %d)",
                             name, je.text, je.line);
    hs_status st = parse_segment(name, root, out, err);
    json_decref(root);
    if (st != HS_OK)
        ix_segdata_clear(out);
    return st;
}

/* Newest segment first: an entry survives unless a newer segment removed
 * its data file or holds the same key; the survivors are then put back
 * oldest first (the order the segments give). */
static hs_status compose(const ix_segdata *segs, int n, bool drop_removed, ix_segdata *out,
                         hs_error *err)
{
    hs_map dead = {0}, seen = {0};
    hs_buf key = {0};
    hs_status st = HS_OK;
    for (int s = n - 1; s >= 0 && st == HS_OK; s--) {
        const ix_segdata *sd = &segs[s];
        for (int i = sd->n_entries - 1; i >= 0 && st == HS_OK; i--) {
            const ix_entry *e = &sd->entries[i];
            if (hs_map_get(&dead, e->data_file, strlen(e->data_file), NULL))
                continue;
            bool dup = false;
            if (seen_key(&key, 'E', e->field_id, e->kind, e->data_file) != HS_OK ||
                hs_map_get_or_put(&seen, key.data, key.len, 0, NULL, &dup) != HS_OK)
                st = hs_err_nomem(err, 256);
            else if (!dup)
                st = seg_push_entry(out, e, err);
        }
        for (int i = 0; i < sd->n_removed && st == HS_OK; i++) {
            const char *p = sd->removed[i];
            bool dup = false;
            if (hs_map_get_or_put(&dead, p, strlen(p), 0, NULL, &dup) != HS_OK)
                st = hs_err_nomem(err, 256);
            else if (!dup && !drop_removed)
                st = seg_push_removed(out, p, err);
        }
    }
    for (int i = 0, j = out->n_entries - 1; i < j; i++, j--) {
        ix_entry t = out->entries[i];
        out->entries[i] = out->entries[j];
        out->entries[j] = t;
    }
    hs_map_free(&dead);
    hs_map_free(&seen);
    hs_buf_free(&key);
    return st;
}

hs_status ix_segments_compose(const ix_segdata *segs, int n, bool drop_removed, ix_segdata *out,
                              hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_status st = compose(segs, n, drop_removed, out, err);
    if (st != HS_OK)
        ix_segdata_clear(out);
    return st;
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

/* Reads the file at location-relative rel. */
static hs_status read_rel(const char *location, const char *rel, hs_buf *text, hs_error *err)
{
    hs_buf path = {0};
    if (ix_resolve_path(location, rel, &path) != HS_OK) {
        hs_buf_free(&path);
        return hs_err_nomem(err, strlen(rel));
    }
    hs_status st = hs_io_read_all(cat_local_path(hs_buf_cstr(&path)), text, err);
    hs_buf_free(&path);
    return st;
}

hs_status ix_registry_load_root(const char *location, const char *rel, ix_registry *out,
                                hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!rel || !*rel)
        return HS_OK;
    hs_buf text = {0};
    hs_status st = read_rel(location, rel, &text, err);
    if (st == HS_OK)
        st = ix_registry_parse(rel, (const char *)text.data, text.len, out, err);
    else
        hs_err_prefix(err, "index registry");
    hs_buf_free(&text);
    return st;
}

/* Reads and parses segment sg; its size must be the root's record of it. */
hs_status ix_segment_load(const char *location, const ix_segment *sg, ix_segdata *out,
                          hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (sg->inline_json) {
        /* the root's copy, when it parses to the counts the root gives */
        hs_error ie;
        hs_err_clear(&ie);
        hs_status is = ix_segment_parse(sg->path, sg->inline_json, strlen(sg->inline_json), out,
                                        &ie);
        if (is == HS_OK && out->n_entries == sg->n_entries && out->n_removed == sg->n_removed)
            return HS_OK;
        if (is == HS_NOMEM)
            return hs_err_nomem(err, strlen(sg->inline_json));
        ix_segdata_clear(out);
    }
    hs_buf text = {0};
    hs_status st = read_rel(location, sg->path, &text, err);
    if (st != HS_OK)
        hs_err_prefix(err, "index registry segment");
    else if ((int64_t)text.len != sg->bytes)
        st = HS_CORRUPT_AT(err, "index registry segment %s: %zu bytes, the root says %lld",
                           sg->path, text.len, (long long)sg->bytes);
    else
        st = ix_segment_parse(sg->path, (const char *)text.data, text.len, out, err);
    hs_buf_free(&text);
    return st;
}

static void segdatas_free(ix_segdata *a, int n)
{
    for (int i = 0; a && i < n; i++)
        ix_segdata_clear(&a[i]);
    hs_free(a);
}

/* Loads segments [from, to) of sgs. */
static hs_status load_run(const char *location, const ix_segment *sgs, int from, int to,
                          ix_segdata **out, hs_error *err)
{
    *out = NULL;
    if (to <= from)
        return HS_OK;
    ix_segdata *a = hs_calloc((size_t)(to - from), sizeof *a);
    if (!a)
        return hs_err_nomem(err, (size_t)(to - from) * sizeof *a);
    hs_status st = HS_OK;
    for (int i = from; i < to && st == HS_OK; i++)
        st = ix_segment_load(location, &sgs[i], &a[i - from], err);
    if (st != HS_OK) {
        segdatas_free(a, to - from);
        return st;
    }
    *out = a;
    return HS_OK;
}

/* r's entries become the composed ones of all (moved; all is cleared). */
static void adopt_entries(ix_registry *r, ix_segdata *all)
{
    ix_registry_clear_entries(r);
    r->entries = all->entries;
    r->n_entries = all->n_entries;
    r->cap_entries = all->cap_entries;
    all->entries = NULL;
    all->n_entries = 0;
    ix_segdata_clear(all);
}

hs_status ix_registry_load_segments(const char *location, ix_registry *r, hs_error *err)
{
    if (r->format_version < 2)
        return HS_OK;
    ix_segdata *segs = NULL, all = {0};
    hs_status st = load_run(location, r->segments, 0, r->n_segments, &segs, err);
    if (st == HS_OK)
        st = ix_segments_compose(segs, r->n_segments, true, &all, err);
    segdatas_free(segs, r->n_segments);
    if (st == HS_OK)
        adopt_entries(r, &all);
    return st;
}

hs_status ix_registry_load_segments_lenient(const char *location, ix_registry *r,
                                            int *n_skipped, hs_error *why, hs_error *err)
{
    *n_skipped = 0;
    if (r->format_version < 2 || r->n_segments == 0)
        return HS_OK;
    ix_segdata *segs = hs_calloc((size_t)r->n_segments, sizeof *segs), all = {0};
    if (!segs)
        return hs_err_nomem(err, (size_t)r->n_segments * sizeof *segs);
    hs_status st = HS_OK;
    for (int i = 0; i < r->n_segments && st == HS_OK; i++) {
        hs_error e;
        hs_err_clear(&e);
        hs_status ls = ix_segment_load(location, &r->segments[i], &segs[i], &e);
        if (ls == HS_NOMEM)
            st = hs_err_nomem(err, (size_t)r->segments[i].bytes);
        else if (ls != HS_OK && (*n_skipped)++ == 0 && why)
            *why = e;
    }
    if (st == HS_OK)
        st = ix_segments_compose(segs, r->n_segments, true, &all, err);
    segdatas_free(segs, r->n_segments);
    if (st == HS_OK)
        adopt_entries(r, &all);
    return st;
}

hs_status ix_registry_load(const char *location, const char *rel, ix_registry *out,
                           hs_error *err)
{
    HS_TRY(ix_registry_load_root(location, rel, out, err));
    hs_status st = ix_registry_load_segments(location, out, err);
    if (st != HS_OK)
        ix_registry_clear(out);
    return st;
}

/* ---- writing ---- */

/* Files written by one call, removed again when the call fails. */
typedef struct wrote {
    const char *location;
    hs_buf rels;                   /* char * (owned) */
} wrote;

static void wrote_undo(wrote *w)
{
    hs_buf p = {0};
    for (size_t i = 0; i < HS_VEC_LEN(&w->rels, char *); i++) {
        char *rel = HS_VEC_AT(&w->rels, char *, i);
        if (ix_resolve_path(w->location, rel, &p) == HS_OK) {
            hs_status ignored = cat_io_unlink(cat_local_path(hs_buf_cstr(&p)), NULL);
            (void)ignored;   /* best effort: an orphan that orphan removal finds */
        }
        hs_free(rel);
    }
    hs_buf_free(&p);
    hs_buf_free(&w->rels);
}

/* Moves the names into created (or frees them when created is NULL). */
static hs_status wrote_keep(wrote *w, hs_buf *created, hs_error *err)
{
    hs_status st = HS_OK;
    for (size_t i = 0; i < HS_VEC_LEN(&w->rels, char *); i++) {
        char *rel = HS_VEC_AT(&w->rels, char *, i);
        if (created && st == HS_OK && HS_VEC_PUSH(created, char *, rel) == HS_OK)
            continue;
        if (created && st == HS_OK)
            st = hs_err_nomem(err, 64);
        hs_free(rel);
    }
    hs_buf_free(&w->rels);
    return st;
}

/* Writes bytes as <location>/index/registry/<prefix><uuid>.json. */
static hs_status write_new(wrote *w, const char *prefix, const hs_buf *bytes, int wflags,
                           char **rel_out, hs_error *err)
{
    *rel_out = NULL;
    char uuid[37];
    cat_uuid4(uuid);
    hs_buf rel = {0}, path = {0};
    hs_status st = HS_OK;
    if (hs_buf_printf(&rel, "index/registry/%s%s.json", prefix, uuid) != HS_OK ||
        ix_resolve_path(w->location, hs_buf_cstr(&rel), &path) != HS_OK)
        st = hs_err_nomem(err, 256);
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
        st = cat_io_write_all_ex(local, wflags | HS_WFILE_EXCLUSIVE, bytes->data, bytes->len, err);
    char *r = NULL;
    if (st == HS_OK) {
        r = (char *)hs_buf_detach(&rel, NULL);
        char *keep = r ? hs_strdup(r) : NULL;
        if (!r || !keep || HS_VEC_PUSH(&w->rels, char *, keep) != HS_OK) {
            hs_free(keep);
            hs_status ignored = cat_io_unlink(local, NULL);
            (void)ignored;
            hs_free(r);
            r = NULL;
            st = hs_err_nomem(err, 64);
        }
    }
    hs_buf_free(&rel);
    hs_buf_free(&path);
    *rel_out = r;
    return st;
}

/* Writes sd as a new segment; *out describes it (path owned). */
static hs_status write_segment(wrote *w, const ix_segdata *sd, int wflags, ix_segment *out,
                               hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_buf json = {0};
    hs_status st = ix_segment_to_json(sd, &json, err);
    if (st == HS_OK)
        st = write_new(w, "seg-", &json, wflags, &out->path, err);
    out->n_entries = sd->n_entries;
    out->n_removed = sd->n_removed;
    out->bytes = (int64_t)json.len;
    /* kept for the root to carry inline (small ones only; NULL on OOM: not inline) */
    if (st == HS_OK && json.len <= IX_INLINE_MAX)
        out->inline_json = hs_strdup(hs_buf_cstr(&json));
    hs_buf_free(&json);
    return st;
}

static hs_status write_root(wrote *w, const ix_registry *decls, const ix_segment *segs, int n,
                            int wflags, char **rel_out, hs_error *err)
{
    hs_buf json = {0};
    hs_status st = root_to_json(decls, segs, n, &json, err);
    if (st == HS_OK)
        st = write_new(w, "", &json, wflags, rel_out, err);
    hs_buf_free(&json);
    return st;
}

/* A growable list of segments (paths owned). */
typedef struct seglist {
    int n, cap;
    ix_segment *a;
    bool stuck;                    /* a segment could not be read: no more merging */
} seglist;

static hs_status seglist_push(seglist *l, const ix_segment *sg, bool copy_path, hs_error *err)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        ix_segment *na = hs_realloc(l->a, (size_t)cap * sizeof *na);
        if (!na)
            return hs_err_nomem(err, (size_t)cap * sizeof *na);
        l->a = na;
        l->cap = cap;
    }
    ix_segment c = *sg;
    if (copy_path) {
        c.path = hs_strdup(sg->path);
        c.inline_json = sg->inline_json ? hs_strdup(sg->inline_json) : NULL;
        if (!c.path || (sg->inline_json && !c.inline_json)) {
            seg_clear(&c);
            return hs_err_nomem(err, 64);
        }
    }
    l->a[l->n++] = c;
    return HS_OK;
}

static int seg_level(const ix_segment *sg)
{
    int64_t items = sg->n_entries + sg->n_removed;
    int level = 0;
    while (items >= IX_SEG_FANIN) {
        items /= IX_SEG_FANIN;
        level++;
    }
    return level;
}

/* Replaces segments [from, n) of l by their merge.  Segments that cannot
 * be read are no reason to fail the write that merges: then nothing is
 * merged and l->stuck is set (scans skip the damaged segment; a refresh or
 * add_index rewrites the registry whole without it).  Only HS_NOMEM and
 * write errors fail. */
static hs_status merge_or_keep(wrote *w, const char *location, seglist *l, int from, int wflags,
                               hs_error *err)
{
    ix_segdata *segs = NULL, merged = {0};
    hs_error le;
    hs_err_clear(&le);
    hs_status st = load_run(location, l->a, from, l->n, &segs, &le);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 256);
    if (st != HS_OK) {
        l->stuck = true;
        return HS_OK;
    }
    if (st == HS_OK)
        st = ix_segments_compose(segs, l->n - from, from == 0, &merged, err);
    segdatas_free(segs, l->n - from);
    ix_segment out = {0};
    if (st == HS_OK)
        st = write_segment(w, &merged, wflags, &out, err);
    ix_segdata_clear(&merged);
    if (st != HS_OK) {
        seg_clear(&out);
        return st;
    }
    for (int i = from; i < l->n; i++)
        seg_clear(&l->a[i]);
    l->a[from] = out;
    l->n = from + 1;
    return HS_OK;
}

/* The merge policy (registry.h): trailing runs of IX_SEG_FANIN segments of
 * one level or less, below IX_SEG_MERGE_MAX_LEVEL; everything when there
 * are more than IX_SEG_MAX. */
static hs_status apply_policy(wrote *w, const char *location, seglist *l, int wflags,
                              hs_error *err)
{
    while (!l->stuck) {
        if (l->n > IX_SEG_MAX) {
            hs_status st = merge_or_keep(w, location, l, 0, wflags, err);
            if (st != HS_OK || l->n > IX_SEG_MAX)
                return st;
            continue;
        }
        if (l->n < IX_SEG_FANIN)
            return HS_OK;
        int level = seg_level(&l->a[l->n - 1]);
        if (level >= IX_SEG_MERGE_MAX_LEVEL)
            return HS_OK;
        int from = l->n - 1;
        while (from > 0 && seg_level(&l->a[from - 1]) <= level)
            from--;
        if (l->n - from < IX_SEG_FANIN)
            return HS_OK;
        HS_TRY(merge_or_keep(w, location, l, from, wflags, err));
    }
    return HS_OK;
}

static void seglist_free(seglist *l)
{
    segments_free(l->a, l->n);
    memset(l, 0, sizeof *l);
}

static hs_status finish_write(wrote *w, hs_status st, char **rel_out, char *root_rel,
                              hs_buf *created, hs_error *err)
{
    if (st == HS_OK)
        st = wrote_keep(w, created, err);
    if (st != HS_OK) {
        wrote_undo(w);
        hs_free(root_rel);
        return st;
    }
    *rel_out = root_rel;
    return HS_OK;
}

hs_status ix_registry_write(const char *location, const ix_registry *r, int wflags,
                            char **rel_out, hs_buf *created, hs_error *err)
{
    *rel_out = NULL;
    wrote w = {location, {0}};
    ix_segment sg = {0};
    ix_segdata sd = {0};
    sd.entries = r->entries;       /* borrowed for writing */
    sd.n_entries = r->n_entries;
    hs_status st = HS_OK;
    if (r->n_entries > 0)
        st = write_segment(&w, &sd, wflags, &sg, err);
    char *root = NULL;
    if (st == HS_OK)
        st = write_root(&w, r, &sg, r->n_entries > 0 ? 1 : 0, wflags, &root, err);
    seg_clear(&sg);
    return finish_write(&w, st, rel_out, root, created, err);
}

hs_status ix_registry_write_delta(const char *location, const ix_registry *root,
                                  const ix_entry *add, int n_add, const char *const *removed,
                                  int n_removed, int wflags, char **rel_out, hs_buf *created,
                                  hs_error *err)
{
    *rel_out = NULL;
    wrote w = {location, {0}};
    seglist l = {0};
    hs_status st = HS_OK;
    ix_segment sg = {0};
    if (root->format_version < 2 && root->n_entries > 0) {
        /* a format-1 registry: its entries become the first segment */
        ix_segdata sd = {0};
        sd.entries = root->entries;
        sd.n_entries = root->n_entries;
        st = write_segment(&w, &sd, wflags, &sg, err);
        if (st == HS_OK)
            st = seglist_push(&l, &sg, false, err);
        else
            seg_clear(&sg);
    }
    for (int i = 0; root->format_version >= 2 && i < root->n_segments && st == HS_OK; i++)
        st = seglist_push(&l, &root->segments[i], true, err);
    if (st == HS_OK && (n_add > 0 || n_removed > 0)) {
        ix_segdata sd = {0};
        memset(&sg, 0, sizeof sg);   /* the first segment's path belongs to l now */
        for (int i = 0; i < n_removed && st == HS_OK; i++)
            st = seg_push_removed(&sd, removed[i], err);
        sd.entries = (ix_entry *)add;   /* borrowed for writing */
        sd.n_entries = n_add;
        if (st == HS_OK)
            st = write_segment(&w, &sd, wflags, &sg, err);
        sd.entries = NULL;
        sd.n_entries = 0;
        ix_segdata_clear(&sd);
        if (st == HS_OK)
            st = seglist_push(&l, &sg, false, err);
        if (st != HS_OK)
            seg_clear(&sg);
    }
    if (st == HS_OK)
        st = apply_policy(&w, location, &l, wflags, err);
    char *root_rel = NULL;
    if (st == HS_OK)
        st = write_root(&w, root, l.a, l.n, wflags, &root_rel, err);
    seglist_free(&l);
    return finish_write(&w, st, rel_out, root_rel, created, err);
}
