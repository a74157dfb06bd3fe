/*
 * base/avro.c - Avro schemas, binary encoding, object container files.
 * The design (and why this is not Avro C) is in avro.h.
 *
 * Binary encoding, as the Avro spec defines it:
 *   null      nothing
 *   boolean   one byte, 0 or 1
 *   int/long  zigzag varint (int: at most 5 bytes, long: at most 10)
 *   float     4 bytes little-endian; double: 8 bytes little-endian
 *   bytes     long length, then the bytes; string: the same, UTF-8
 *   record    the fields in schema order
 *   enum      int symbol index
 *   array     blocks: long count (negative: |count| then a long byte size),
 *             the items; a zero count ends; map: the same with string keys
 *   union     long branch index, then the branch's value
 *   fixed     `size` bytes
 */
#include "base/avro.h"

#include "base/fork.h"
#include "base/hash.h"
#include "base/mem.h"
#include "base/memlimit.h"
#include "base/numfmt.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#define AVRO_MAX_DEPTH 64
#define AVRO_MAX_ZERO_SIZE_ITEMS (1 << 20)
#define AVRO_MAX_BLOCK_BYTES ((size_t)1 << 30)
#define AVRO_WRITER_BLOCK_BYTES (64 * 1024)
/* A reader of a compressed container may spend the decode memory limit of
 * this many times its file size.  Manifests decode to 10-15 times their
 * uncompressed bytes and deflate 3-10 times, but a manifest of near-identical
 * entries deflates 100 times (20,000 entries in 75 KB decoded to 68 MB):
 * generous, as a refused manifest makes its table unreadable.  (Deflate
 * cannot expand more than 1032 times; zstd bombs are what this bounds.) */
#define AVRO_COMPRESSED_ALLOWANCE 32

static const uint8_t avro_magic[4] = {'O', 'b', 'j', 1};

/* ------------------------------------------------------------------ */
/* Schema parsing                                                      */
/* ------------------------------------------------------------------ */

typedef struct named_type {
    const char *fullname;
    const char *shortname;
    hs_avro_schema *schema;
    struct named_type *next;
} named_type;

typedef struct schema_ctx {
    hs_arena *arena;
    hs_error *err;
    named_type *names;
    int depth;
} schema_ctx;

static const struct { const char *name; hs_avro_kind kind; } avro_primitives[] = {
    {"null", HS_AVRO_NULL},     {"boolean", HS_AVRO_BOOLEAN}, {"int", HS_AVRO_INT},
    {"long", HS_AVRO_LONG},     {"float", HS_AVRO_FLOAT},     {"double", HS_AVRO_DOUBLE},
    {"bytes", HS_AVRO_BYTES},   {"string", HS_AVRO_STRING},
};

static char *arena_str(hs_arena *a, const char *s)
{
    return s ? hs_arena_strndup(a, s, strlen(s)) : NULL;
}

static hs_avro_schema *new_schema(schema_ctx *c, hs_avro_kind kind)
{
    hs_avro_schema *s = hs_arena_calloc(c->arena, 1, sizeof *s);
    if (s) {
        s->kind = kind;
        s->element_id = s->key_id = s->value_id = -1;
    }
    return s;
}

static int32_t json_int_attr(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        return (int32_t)json_integer_value(v);
    if (json_is_string(v))
        return (int32_t)strtol(json_string_value(v), NULL, 10);
    return -1;
}

static hs_status parse_schema(schema_ctx *c, json_t *j, const char *ns, hs_avro_schema **out);

static hs_status register_name(schema_ctx *c, json_t *obj, const char *ns, hs_avro_schema *s,
                               const char **ns_out)
{
    const char *name = json_string_value(json_object_get(obj, "name"));
    const char *own_ns = json_string_value(json_object_get(obj, "namespace"));
    if (!name)
        return hs_err_set(c->err, HS_CORRUPT, "avro schema: named type without a name");
    char full[512];
    const char *use_ns = own_ns ? own_ns : ns;
    if (strchr(name, '.') || !use_ns || !*use_ns)
        snprintf(full, sizeof full, "%s", name);
    else
        snprintf(full, sizeof full, "%s.%s", use_ns, name);
    named_type *n = hs_arena_calloc(c->arena, 1, sizeof *n);
    if (!n)
        return hs_err_nomem(c->err, sizeof *n);
    n->fullname = arena_str(c->arena, full);
    const char *dot = strrchr(full, '.');
    n->shortname = arena_str(c->arena, dot ? dot + 1 : full);
    n->schema = s;
    n->next = c->names;
    c->names = n;
    s->name = n->fullname;
    if (ns_out) {
        const char *d = strrchr(full, '.');
        *ns_out = d ? hs_arena_strndup(c->arena, full, (size_t)(d - full)) : ns;
    }
    return HS_OK;
}

static hs_avro_schema *lookup_name(schema_ctx *c, const char *name, const char *ns)
{
    char full[512];
    if (ns && *ns && !strchr(name, '.')) {
        snprintf(full, sizeof full, "%s.%s", ns, name);
        for (named_type *n = c->names; n; n = n->next)
            if (strcmp(n->fullname, full) == 0)
                return n->schema;
    }
    for (named_type *n = c->names; n; n = n->next)
        if (strcmp(n->fullname, name) == 0 || strcmp(n->shortname, name) == 0)
            return n->schema;
    return NULL;
}

static hs_status parse_record(schema_ctx *c, json_t *j, const char *ns, hs_avro_schema *s)
{
    const char *inner_ns = ns;
    HS_TRY(register_name(c, j, ns, s, &inner_ns));
    json_t *fields = json_object_get(j, "fields");
    if (!json_is_array(fields))
        return hs_err_set(c->err, HS_CORRUPT, "avro schema: record %s has no fields array",
                          s->name);
    s->n = (int)json_array_size(fields);
    s->fields = hs_arena_calloc(c->arena, s->n ? (size_t)s->n : 1, sizeof *s->fields);
    if (!s->fields)
        return hs_err_nomem(c->err, 0);
    for (int i = 0; i < s->n; i++) {
        json_t *f = json_array_get(fields, (size_t)i);
        const char *fname = json_string_value(json_object_get(f, "name"));
        if (!json_is_object(f) || !fname)
            return hs_err_set(c->err, HS_CORRUPT, "avro schema: record %s field %d has no name",
                              s->name, i);
        hs_avro_field *fd = &s->fields[i];
        fd->name = arena_str(c->arena, fname);
        fd->field_id = json_int_attr(f, "field-id");
        fd->doc = arena_str(c->arena, json_string_value(json_object_get(f, "doc")));
        json_t *def = json_object_get(f, "default");
        if (def) {
            char *txt = hs_json_dumps(def, JSON_ENCODE_ANY | JSON_COMPACT);
            fd->default_json = arena_str(c->arena, txt);
            free(txt);
        }
        HS_TRY(parse_schema(c, json_object_get(f, "type"), inner_ns, &fd->type));
    }
    return HS_OK;
}

static hs_status parse_object(schema_ctx *c, json_t *j, const char *ns, hs_avro_schema **out)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    json_t *type_j = json_object_get(j, "type");
    hs_avro_schema *s = NULL;
    if (!type) {
        /* {"type": {...}} or {"type": [...]}: a wrapped schema */
        if (type_j)
            return parse_schema(c, type_j, ns, out);
        return hs_err_set(c->err, HS_CORRUPT, "avro schema: object without a type");
    }
    for (size_t i = 0; i < sizeof avro_primitives / sizeof avro_primitives[0]; i++)
        if (strcmp(type, avro_primitives[i].name) == 0) {
            s = new_schema(c, avro_primitives[i].kind);
            break;
        }
    if (s) {
        /* primitive with attributes */
    } else if (strcmp(type, "record") == 0 || strcmp(type, "error") == 0) {
        s = new_schema(c, HS_AVRO_RECORD);
        if (!s)
            return hs_err_nomem(c->err, 0);
        s->logical_type = arena_str(c->arena, json_string_value(json_object_get(j, "logicalType")));
        *out = s;
        return parse_record(c, j, ns, s);
    } else if (strcmp(type, "enum") == 0) {
        s = new_schema(c, HS_AVRO_ENUM);
        if (!s)
            return hs_err_nomem(c->err, 0);
        HS_TRY(register_name(c, j, ns, s, NULL));
        json_t *syms = json_object_get(j, "symbols");
        if (!json_is_array(syms))
            return hs_err_set(c->err, HS_CORRUPT, "avro schema: enum %s without symbols", s->name);
        s->n = (int)json_array_size(syms);
        s->symbols = hs_arena_calloc(c->arena, s->n ? (size_t)s->n : 1, sizeof(char *));
        if (!s->symbols)
            return hs_err_nomem(c->err, 0);
        for (int i = 0; i < s->n; i++) {
            const char *sym = json_string_value(json_array_get(syms, (size_t)i));
            if (!sym)
                return hs_err_set(c->err, HS_CORRUPT, "avro schema: enum %s symbol %d", s->name, i);
            s->symbols[i] = arena_str(c->arena, sym);
        }
    } else if (strcmp(type, "array") == 0) {
        s = new_schema(c, HS_AVRO_ARRAY);
        if (!s)
            return hs_err_nomem(c->err, 0);
        s->element_id = json_int_attr(j, "element-id");
        HS_TRY(parse_schema(c, json_object_get(j, "items"), ns, &s->items));
    } else if (strcmp(type, "map") == 0) {
        s = new_schema(c, HS_AVRO_MAP);
        if (!s)
            return hs_err_nomem(c->err, 0);
        HS_TRY(parse_schema(c, json_object_get(j, "values"), ns, &s->items));
    } else if (strcmp(type, "fixed") == 0) {
        s = new_schema(c, HS_AVRO_FIXED);
        if (!s)
            return hs_err_nomem(c->err, 0);
        HS_TRY(register_name(c, j, ns, s, NULL));
        json_t *size = json_object_get(j, "size");
        if (!json_is_integer(size) || json_integer_value(size) < 0 ||
            json_integer_value(size) > (1 << 20))
            return hs_err_set(c->err, HS_CORRUPT, "avro schema: fixed %s has a bad size", s->name);
        s->size = (int32_t)json_integer_value(size);
    } else {
        hs_avro_schema *named = lookup_name(c, type, ns);
        if (!named)
            return hs_err_set(c->err, HS_CORRUPT, "avro schema: unknown type \"%s\"", type);
        *out = named;
        return HS_OK;
    }
    if (!s)
        return hs_err_nomem(c->err, 0);
    s->logical_type = arena_str(c->arena, json_string_value(json_object_get(j, "logicalType")));
    s->precision = json_int_attr(j, "precision");
    s->scale = json_int_attr(j, "scale");
    int32_t kid = json_int_attr(j, "key-id"), vid = json_int_attr(j, "value-id");
    if (kid >= 0)
        s->key_id = kid;
    if (vid >= 0)
        s->value_id = vid;
    *out = s;
    return HS_OK;
}

static hs_status parse_schema(schema_ctx *c, json_t *j, const char *ns, hs_avro_schema **out)
{
    hs_status st;
    if (!j)
        return hs_err_set(c->err, HS_CORRUPT, "avro schema: missing type");
    if (++c->depth > AVRO_MAX_DEPTH)
        return hs_err_set(c->err, HS_CORRUPT, "avro schema: nested deeper than %d", AVRO_MAX_DEPTH);
    if (json_is_string(j)) {
        const char *name = json_string_value(j);
        hs_avro_schema *s = NULL;
        for (size_t i = 0; i < sizeof avro_primitives / sizeof avro_primitives[0]; i++)
            if (strcmp(name, avro_primitives[i].name) == 0) {
                s = new_schema(c, avro_primitives[i].kind);
                if (!s)
                    return hs_err_nomem(c->err, 0);
                break;
            }
        if (!s)
            s = lookup_name(c, name, ns);
        if (!s)
            return hs_err_set(c->err, HS_CORRUPT, "avro schema: unknown type \"%s\"", name);
        *out = s;
        st = HS_OK;
    } else if (json_is_array(j)) {
        hs_avro_schema *s = new_schema(c, HS_AVRO_UNION);
        if (!s)
            return hs_err_nomem(c->err, 0);
        s->n = (int)json_array_size(j);
        if (s->n == 0)
            return hs_err_set(c->err, HS_CORRUPT, "avro schema: empty union");
        s->branches = hs_arena_calloc(c->arena, (size_t)s->n, sizeof *s->branches);
        if (!s->branches)
            return hs_err_nomem(c->err, 0);
        for (int i = 0; i < s->n; i++)
            HS_TRY(parse_schema(c, json_array_get(j, (size_t)i), ns, &s->branches[i]));
        *out = s;
        st = HS_OK;
    } else if (json_is_object(j)) {
        st = parse_object(c, j, ns, out);
    } else {
        st = hs_err_set(c->err, HS_CORRUPT, "avro schema: a type must be a string, array or object");
    }
    c->depth--;
    return st;
}

hs_status hs_avro_schema_parse(const char *json, size_t len, hs_arena *arena,
                               hs_avro_schema **out, hs_error *err)
{
    json_error_t jerr;
    json_t *j = hs_json_loadb(json, len, JSON_DECODE_ANY, &jerr);
    if (!j)
        return hs_err_set(err, HS_CORRUPT, "avro schema: invalid JSON at line %d: %s", jerr.line,
                          jerr.text);
    schema_ctx c = {.arena = arena, .err = err};
    hs_status st = parse_schema(&c, j, "", out);
    json_decref(j);
    return st;
}

int hs_avro_field_index(const hs_avro_schema *record, const char *name)
{
    if (!record || record->kind != HS_AVRO_RECORD)
        return -1;
    for (int i = 0; i < record->n; i++)
        if (strcmp(record->fields[i].name, name) == 0)
            return i;
    return -1;
}

int hs_avro_field_index_by_id(const hs_avro_schema *record, int32_t field_id)
{
    if (!record || record->kind != HS_AVRO_RECORD)
        return -1;
    for (int i = 0; i < record->n; i++)
        if (record->fields[i].field_id == field_id)
            return i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Binary decoding                                                     */
/* ------------------------------------------------------------------ */

/* What one decode may still spend: the memory budget (base/memlimit.h) and the
 * number of zero-size items (null, empty records), which cost no input bytes
 * and so are capped by count.  A container reader keeps one for all its
 * records; hs_avro_decode one per call. */
typedef struct dec_limits {
    hs_decode_budget mem;
    int64_t zero_items;
} dec_limits;

typedef struct dec {
    const uint8_t *p;
    size_t len, pos;
    hs_arena *arena;
    hs_error *err;
    int depth;
    dec_limits *lim;
} dec;

/* Arena memory for decoded values, charged to the decode's budget first. */
static hs_status dec_alloc(dec *d, size_t n, void **out)
{
    if (d->lim)
        HS_TRY(HS_DECODE_CHARGE(&d->lim->mem, n, d->err, "avro"));
    *out = hs_arena_alloc(d->arena, n);
    return *out ? HS_OK : hs_err_nomem(d->err, n);
}

static hs_status dec_zero_items(dec *d, int64_t n)
{
    if (d->lim && (d->lim->zero_items += n) > AVRO_MAX_ZERO_SIZE_ITEMS)
        return HS_CORRUPT_AT(d->err, "avro: more than %d items of zero size (null or empty records) "
                             "at byte %zu: past the decode limit", AVRO_MAX_ZERO_SIZE_ITEMS, d->pos);
    return HS_OK;
}

static hs_status get_long(dec *d, int64_t *out)
{
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
        if (d->pos >= d->len)
            return HS_CORRUPT_AT(d->err, "avro: varint runs past the end at byte %zu", d->pos);
        uint8_t b = d->p[d->pos++];
        if (shift == 63 && (b & 0x7e))
            return HS_CORRUPT_AT(d->err, "avro: varint longer than 64 bits at byte %zu", d->pos);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
        shift += 7;
        if (shift > 63)
            return HS_CORRUPT_AT(d->err, "avro: varint longer than 10 bytes at byte %zu", d->pos);
    }
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return HS_OK;
}

/* Does a value of this schema take zero bytes? (null, empty record...) */
static bool zero_size(const hs_avro_schema *s, int depth)
{
    if (depth > AVRO_MAX_DEPTH)
        return false;
    switch (s->kind) {
    case HS_AVRO_NULL: return true;
    case HS_AVRO_FIXED: return s->size == 0;
    case HS_AVRO_RECORD:
        for (int i = 0; i < s->n; i++)
            if (!zero_size(s->fields[i].type, depth + 1))
                return false;
        return true;
    default: return false;
    }
}

static hs_status get_count(dec *d, const hs_avro_schema *item, int64_t *count)
{
    HS_TRY(get_long(d, count));
    if (*count < 0) {
        int64_t bytes;
        if (*count == INT64_MIN)
            return HS_CORRUPT_AT(d->err, "avro: block count out of range at byte %zu", d->pos);
        *count = -*count;
        HS_TRY(get_long(d, &bytes));
        if (bytes < 0 || (uint64_t)bytes > d->len - d->pos)
            return HS_CORRUPT_AT(d->err, "avro: block of %lld bytes at byte %zu exceeds the data",
                                 (long long)bytes, d->pos);
    }
    size_t remaining = d->len - d->pos;
    if ((item == NULL || !zero_size(item, 0)) ? (uint64_t)*count > remaining
                                              : *count > AVRO_MAX_ZERO_SIZE_ITEMS)
        return HS_CORRUPT_AT(d->err, "avro: block of %lld items at byte %zu exceeds the data",
                             (long long)*count, d->pos);
    return HS_OK;
}

static hs_status decode_value(dec *d, const hs_avro_schema *s, hs_avro_value *v);

/* Copies n bytes (which may contain NULs) and terminates them, for convenience. */
static hs_status arena_copy(dec *d, const uint8_t *p, size_t n, const uint8_t **out)
{
    void *c;
    HS_TRY(dec_alloc(d, n + 1, &c));
    memcpy(c, p, n);
    ((char *)c)[n] = 0;
    *out = c;
    return HS_OK;
}

static hs_status get_bytes(dec *d, hs_avro_value *v, hs_avro_kind kind)
{
    int64_t n;
    HS_TRY(get_long(d, &n));
    if (n < 0 || (uint64_t)n > d->len - d->pos)
        return HS_CORRUPT_AT(d->err, "avro: %s of %lld bytes at byte %zu exceeds the data",
                             kind == HS_AVRO_STRING ? "string" : "bytes", (long long)n, d->pos);
    HS_TRY(arena_copy(d, d->p + d->pos, (size_t)n, &v->u.bytes.p));
    v->u.bytes.len = (uint32_t)n;
    d->pos += (size_t)n;
    return HS_OK;
}

/* Arrays and maps arrive in blocks (any number of them, each with any
 * positive count).  The items collect in heap buffers that grow
 * geometrically and are copied once into the arena at the end, so the work
 * and memory are linear in the items whatever the blocking (re-allocating
 * the whole array in the arena per block was quadratic: 8 KiB of one-item
 * blocks asked for 280 MB).  Every item is charged to the decode's budget
 * before it is reserved; zero-size items also count against their cap. */
static hs_status decode_blocks(dec *d, const hs_avro_schema *s, hs_avro_value *v, bool is_map)
{
    hs_buf items = {0}, keys = {0};
    int64_t n = 0;
    hs_status st = HS_OK;
    bool zero = !is_map && zero_size(s->items, 0);
    uint64_t item_bytes = (is_map ? 2 : 1) * sizeof(hs_avro_value);
    for (;;) {
        int64_t count;
        if ((st = get_count(d, is_map ? NULL : s->items, &count)) != HS_OK)
            break;
        if (count == 0)
            break;
        /* count <= the bytes left, or <= the zero-size cap: no overflow below */
        if (zero && (st = dec_zero_items(d, count)) != HS_OK)
            break;
        if (d->lim && (st = HS_DECODE_CHARGE(&d->lim->mem, (uint64_t)count * item_bytes, d->err,
                                             "avro")) != HS_OK)
            break;
        if (hs_buf_reserve(&items, (size_t)count * sizeof(hs_avro_value)) != HS_OK ||
            (is_map && hs_buf_reserve(&keys, (size_t)count * sizeof(hs_avro_value)) != HS_OK)) {
            st = hs_err_nomem(d->err, (size_t)count * sizeof(hs_avro_value));
            break;
        }
        hs_avro_value *iv = (hs_avro_value *)items.data, *kv = (hs_avro_value *)keys.data;
        memset(iv + n, 0, (size_t)count * sizeof(hs_avro_value));
        if (is_map)
            memset(kv + n, 0, (size_t)count * sizeof(hs_avro_value));
        for (int64_t i = 0; i < count && st == HS_OK; i++) {
            if (is_map) {
                kv[n + i].kind = HS_AVRO_STRING;
                kv[n + i].branch = -1;
                st = get_bytes(d, &kv[n + i], HS_AVRO_STRING);
            }
            if (st == HS_OK)
                st = decode_value(d, s->items, &iv[n + i]);
        }
        if (st != HS_OK)
            break;
        n += count;
        items.len = keys.len = (size_t)n * sizeof(hs_avro_value);
    }
    hs_avro_value *ni = NULL, *nk = NULL;
    if (st == HS_OK && n) {  /* an empty array or map keeps NULL items */
        /* already charged, item by item */
        size_t bytes = (size_t)n * sizeof(hs_avro_value);
        ni = hs_arena_alloc(d->arena, bytes);
        nk = is_map ? hs_arena_alloc(d->arena, bytes) : NULL;
        if (!ni || (is_map && !nk))
            st = hs_err_nomem(d->err, bytes);
    }
    if (st == HS_OK && n) {
        memcpy(ni, items.data, (size_t)n * sizeof(hs_avro_value));
        if (is_map)
            memcpy(nk, keys.data, (size_t)n * sizeof(hs_avro_value));
    }
    hs_buf_free(&items);
    hs_buf_free(&keys);
    if (st != HS_OK)
        return st;
    if (is_map) {
        v->u.map.keys = nk;
        v->u.map.vals = ni;
        v->u.map.n = n;
    } else {
        v->u.arr.items = ni;
        v->u.arr.n = n;
    }
    return HS_OK;
}

static hs_status decode_value(dec *d, const hs_avro_schema *s, hs_avro_value *v)
{
    int64_t l;
    if (++d->depth > AVRO_MAX_DEPTH)
        return HS_CORRUPT_AT(d->err, "avro: values nested deeper than %d", AVRO_MAX_DEPTH);
    v->kind = s->kind;
    v->branch = -1;
    switch (s->kind) {
    case HS_AVRO_NULL:
        break;
    case HS_AVRO_BOOLEAN:
        if (d->pos >= d->len || d->p[d->pos] > 1)
            return HS_CORRUPT_AT(d->err, "avro: bad boolean at byte %zu", d->pos);
        v->u.b = d->p[d->pos++] != 0;
        break;
    case HS_AVRO_INT:
        HS_TRY(get_long(d, &l));
        if (l < INT32_MIN || l > INT32_MAX)
            return HS_CORRUPT_AT(d->err, "avro: int out of range at byte %zu", d->pos);
        v->u.l = l;
        break;
    case HS_AVRO_LONG:
        HS_TRY(get_long(d, &v->u.l));
        break;
    case HS_AVRO_FLOAT:
        if (d->len - d->pos < 4)
            return HS_CORRUPT_AT(d->err, "avro: float past the end at byte %zu", d->pos);
        memcpy(&v->u.f, d->p + d->pos, 4);
        d->pos += 4;
        break;
    case HS_AVRO_DOUBLE:
        if (d->len - d->pos < 8)
            return HS_CORRUPT_AT(d->err, "avro: double past the end at byte %zu", d->pos);
        memcpy(&v->u.d, d->p + d->pos, 8);
        d->pos += 8;
        break;
    case HS_AVRO_BYTES:
    case HS_AVRO_STRING:
        HS_TRY(get_bytes(d, v, s->kind));
        break;
    case HS_AVRO_FIXED: {
        if ((size_t)s->size > d->len - d->pos)
            return HS_CORRUPT_AT(d->err, "avro: fixed(%d) past the end at byte %zu", s->size, d->pos);
        HS_TRY(arena_copy(d, d->p + d->pos, (size_t)s->size, &v->u.bytes.p));
        v->u.bytes.len = (uint32_t)s->size;
        d->pos += (size_t)s->size;
        break;
    }
    case HS_AVRO_ENUM:
        HS_TRY(get_long(d, &l));
        if (l < 0 || l >= s->n)
            return HS_CORRUPT_AT(d->err, "avro: enum index %lld out of range at byte %zu",
                                 (long long)l, d->pos);
        v->u.l = l;
        break;
    case HS_AVRO_RECORD: {
        size_t bytes = (s->n ? (size_t)s->n : 1) * sizeof(hs_avro_value);
        void *items;
        HS_TRY(dec_alloc(d, bytes, &items));
        memset(items, 0, bytes);
        v->u.arr.items = items;
        v->u.arr.n = s->n;
        for (int i = 0; i < s->n; i++)
            HS_TRY(decode_value(d, s->fields[i].type, &v->u.arr.items[i]));
        break;
    }
    case HS_AVRO_ARRAY:
        HS_TRY(decode_blocks(d, s, v, false));
        break;
    case HS_AVRO_MAP:
        HS_TRY(decode_blocks(d, s, v, true));
        break;
    case HS_AVRO_UNION:
        HS_TRY(get_long(d, &l));
        if (l < 0 || l >= s->n)
            return HS_CORRUPT_AT(d->err, "avro: union branch %lld out of range at byte %zu",
                                 (long long)l, d->pos);
        HS_TRY(decode_value(d, s->branches[l], v));
        v->branch = (int32_t)l;
        break;
    }
    d->depth--;
    return HS_OK;
}

hs_status hs_avro_decode(const hs_avro_schema *s, const uint8_t *p, size_t len, size_t *pos,
                         hs_arena *arena, hs_avro_value *out, hs_error *err)
{
    if (*pos > len)
        return hs_err_set(err, HS_INVALID, "avro: position past the end");
    dec_limits lim = {.zero_items = 0};
    hs_decode_budget_init(&lim.mem, len - *pos);
    dec d = {.p = p, .len = len, .pos = *pos, .arena = arena, .err = err, .lim = &lim};
    HS_TRY(decode_value(&d, s, out));
    *pos = d.pos;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* Binary encoding                                                     */
/* ------------------------------------------------------------------ */

hs_status hs_avro_put_long(hs_buf *out, int64_t v)
{
    uint8_t tmp[10];
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int n = 0;
    while (z >= 0x80) {
        tmp[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (uint8_t)z;
    return hs_buf_append(out, tmp, (size_t)n);
}

hs_status hs_avro_put_bytes(hs_buf *out, const void *p, size_t n)
{
    HS_TRY(hs_avro_put_long(out, (int64_t)n));
    return hs_buf_append(out, p, n);
}

static bool kind_matches(const hs_avro_schema *s, const hs_avro_value *v)
{
    if (s->kind == v->kind)
        return true;
    /* numeric and byte-ish values may be written as a compatible kind */
    if ((s->kind == HS_AVRO_INT || s->kind == HS_AVRO_LONG) &&
        (v->kind == HS_AVRO_INT || v->kind == HS_AVRO_LONG))
        return true;
    if ((s->kind == HS_AVRO_FLOAT || s->kind == HS_AVRO_DOUBLE) &&
        (v->kind == HS_AVRO_FLOAT || v->kind == HS_AVRO_DOUBLE))
        return true;
    if ((s->kind == HS_AVRO_BYTES || s->kind == HS_AVRO_STRING || s->kind == HS_AVRO_FIXED) &&
        (v->kind == HS_AVRO_BYTES || v->kind == HS_AVRO_STRING || v->kind == HS_AVRO_FIXED))
        return true;
    if (s->kind == HS_AVRO_ENUM && (v->kind == HS_AVRO_LONG || v->kind == HS_AVRO_INT))
        return true;
    if (s->kind == HS_AVRO_RECORD && v->kind == HS_AVRO_ARRAY)
        return true;
    if (s->kind == HS_AVRO_ARRAY && v->kind == HS_AVRO_RECORD)
        return false;
    return false;
}

static double value_as_double(const hs_avro_value *v)
{
    return v->kind == HS_AVRO_FLOAT ? (double)v->u.f : v->u.d;
}

static hs_status encode_value(const hs_avro_schema *s, const hs_avro_value *v, hs_buf *out,
                              hs_error *err, int depth)
{
    if (depth > AVRO_MAX_DEPTH)
        return hs_err_set(err, HS_INVALID, "avro: values nested deeper than %d", AVRO_MAX_DEPTH);
    if (s->kind == HS_AVRO_UNION) {
        int b = v->branch;
        if (b < 0 || b >= s->n || !kind_matches(s->branches[b], v)) {
            b = -1;
            for (int i = 0; i < s->n; i++)
                if (kind_matches(s->branches[i], v)) {
                    b = i;
                    break;
                }
        }
        if (b < 0)
            return hs_err_set(err, HS_INVALID, "avro: no union branch accepts a value of kind %d",
                              (int)v->kind);
        if (hs_avro_put_long(out, b) != HS_OK)
            return hs_err_nomem(err, 0);
        return encode_value(s->branches[b], v, out, err, depth + 1);
    }
    if (!kind_matches(s, v))
        return hs_err_set(err, HS_INVALID, "avro: value of kind %d does not match schema kind %d%s%s",
                          (int)v->kind, (int)s->kind, s->name ? " " : "", s->name ? s->name : "");
    hs_status st = HS_OK;
    switch (s->kind) {
    case HS_AVRO_NULL:
        break;
    case HS_AVRO_BOOLEAN:
        st = hs_buf_append_byte(out, v->u.b ? 1 : 0);
        break;
    case HS_AVRO_INT:
        if (v->u.l < INT32_MIN || v->u.l > INT32_MAX)
            return hs_err_set(err, HS_INVALID, "avro: %lld does not fit an int", (long long)v->u.l);
        st = hs_avro_put_long(out, v->u.l);
        break;
    case HS_AVRO_LONG:
    case HS_AVRO_ENUM:
        if (s->kind == HS_AVRO_ENUM && (v->u.l < 0 || v->u.l >= s->n))
            return hs_err_set(err, HS_INVALID, "avro: enum index %lld out of range", (long long)v->u.l);
        st = hs_avro_put_long(out, v->u.l);
        break;
    case HS_AVRO_FLOAT: {
        float f = (float)value_as_double(v);
        st = hs_buf_append(out, &f, 4);
        break;
    }
    case HS_AVRO_DOUBLE: {
        double dd = value_as_double(v);
        st = hs_buf_append(out, &dd, 8);
        break;
    }
    case HS_AVRO_BYTES:
    case HS_AVRO_STRING:
        st = hs_avro_put_bytes(out, v->u.bytes.p, v->u.bytes.len);
        break;
    case HS_AVRO_FIXED:
        if (v->u.bytes.len != (uint32_t)s->size)
            return hs_err_set(err, HS_INVALID, "avro: fixed %s needs %d bytes, got %u",
                              s->name ? s->name : "", s->size, v->u.bytes.len);
        st = hs_buf_append(out, v->u.bytes.p, v->u.bytes.len);
        break;
    case HS_AVRO_RECORD:
        if (v->u.arr.n != s->n)
            return hs_err_set(err, HS_INVALID, "avro: record %s has %d fields, value has %lld",
                              s->name ? s->name : "", s->n, (long long)v->u.arr.n);
        for (int i = 0; i < s->n; i++)
            HS_TRY(encode_value(s->fields[i].type, &v->u.arr.items[i], out, err, depth + 1));
        break;
    case HS_AVRO_ARRAY:
        if (v->u.arr.n > 0) {
            if (hs_avro_put_long(out, v->u.arr.n) != HS_OK)
                return hs_err_nomem(err, 0);
            for (int64_t i = 0; i < v->u.arr.n; i++)
                HS_TRY(encode_value(s->items, &v->u.arr.items[i], out, err, depth + 1));
        }
        st = hs_buf_append_byte(out, 0);
        break;
    case HS_AVRO_MAP:
        if (v->u.map.n > 0) {
            if (hs_avro_put_long(out, v->u.map.n) != HS_OK)
                return hs_err_nomem(err, 0);
            for (int64_t i = 0; i < v->u.map.n; i++) {
                const hs_avro_value *k = &v->u.map.keys[i];
                if (hs_avro_put_bytes(out, k->u.bytes.p, k->u.bytes.len) != HS_OK)
                    return hs_err_nomem(err, 0);
                HS_TRY(encode_value(s->items, &v->u.map.vals[i], out, err, depth + 1));
            }
        }
        st = hs_buf_append_byte(out, 0);
        break;
    case HS_AVRO_UNION:
        break; /* handled above */
    }
    return st == HS_OK ? HS_OK : hs_err_nomem(err, 0);
}

hs_status hs_avro_encode(const hs_avro_schema *s, const hs_avro_value *v, hs_buf *out,
                         hs_error *err)
{
    return encode_value(s, v, out, err, 0);
}

hs_avro_value hs_avro_null(void) { return (hs_avro_value){.kind = HS_AVRO_NULL, .branch = -1}; }
hs_avro_value hs_avro_long(int64_t v)
{
    return (hs_avro_value){.kind = HS_AVRO_LONG, .branch = -1, .u.l = v};
}
hs_avro_value hs_avro_bool(bool v)
{
    return (hs_avro_value){.kind = HS_AVRO_BOOLEAN, .branch = -1, .u.b = v};
}
hs_avro_value hs_avro_double(double v)
{
    return (hs_avro_value){.kind = HS_AVRO_DOUBLE, .branch = -1, .u.d = v};
}
hs_avro_value hs_avro_float(float v)
{
    return (hs_avro_value){.kind = HS_AVRO_FLOAT, .branch = -1, .u.f = v};
}
hs_avro_value hs_avro_str(const char *s)
{
    hs_avro_value v = {.kind = HS_AVRO_STRING, .branch = -1};
    v.u.bytes.p = (const uint8_t *)s;
    v.u.bytes.len = (uint32_t)strlen(s);
    return v;
}
hs_avro_value hs_avro_bytes(const void *p, size_t n)
{
    hs_avro_value v = {.kind = HS_AVRO_BYTES, .branch = -1};
    v.u.bytes.p = p;
    v.u.bytes.len = (uint32_t)n;
    return v;
}

hs_avro_value *hs_avro_new_array(hs_arena *a, hs_avro_kind kind, int64_t n, hs_avro_value *out)
{
    hs_avro_value *items = hs_arena_calloc(a, n > 0 ? (size_t)n : 1, sizeof *items);
    if (!items)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        items[i].branch = -1;
    out->kind = kind;
    out->branch = -1;
    out->u.arr.items = items;
    out->u.arr.n = n;
    return items;
}

/* ------------------------------------------------------------------ */
/* Schema cache                                                        */
/* ------------------------------------------------------------------ */

/*
 * Parsed writer schemas of container readers, shared process-wide and keyed
 * by the exact schema text (hash + bytes).  Iceberg tables hold many
 * manifests with the same few schema texts, and parsing the JSON was the
 * largest cost of reading a small manifest.  A parsed schema is immutable,
 * so readers on any thread share it: an entry is refcounted (the cache holds
 * one reference, every reader one), and a reader keeps its entry alive after
 * eviction or hs_avro_schema_cache_clear.  Bounded by entry count and text
 * bytes; the oldest entry goes first.  Memory comes from hs_malloc, so the
 * cache shows in hs_mem_live_count until it is cleared.
 */
#define AVRO_SCHEMA_CACHE_MAX 64
#define AVRO_SCHEMA_CACHE_BYTES ((size_t)4 << 20)

typedef struct avro_schema_ent avro_schema_ent;
struct avro_schema_ent {
    int refs;
    uint64_t hash;
    size_t len;
    char *text;                 /* the schema JSON (not NUL-terminated) */
    hs_arena arena;             /* the parsed schema */
    hs_avro_schema *schema;
    avro_schema_ent *next;      /* cache list, newest first */
};

static pthread_mutex_t g_sc_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_sc_mu, HS_FORK_RANK_LEAF)
static avro_schema_ent *g_sc;
static int g_sc_n;
static size_t g_sc_bytes;

static void sc_destroy(avro_schema_ent *e)
{
    if (!e)
        return;
    hs_arena_destroy(&e->arena);
    hs_free(e->text);
    hs_free(e);
}

static void sc_release(avro_schema_ent *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&g_sc_mu);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&g_sc_mu);
    if (last)
        sc_destroy(e);
}

void hs_avro_schema_cache_clear(void)
{
    pthread_mutex_lock(&g_sc_mu);
    avro_schema_ent *e = g_sc, *dead = NULL;
    g_sc = NULL;
    g_sc_n = 0;
    g_sc_bytes = 0;
    while (e) {
        avro_schema_ent *next = e->next;
        if (--e->refs == 0) {
            e->next = dead;
            dead = e;
        }
        e = next;
    }
    pthread_mutex_unlock(&g_sc_mu);
    while (dead) {
        avro_schema_ent *next = dead->next;
        sc_destroy(dead);
        dead = next;
    }
}

/* The parsed schema of `json` with a reference for the caller (*out), or
 * HS_NOMEM / a parse error.  Parses outside the lock; two threads that miss
 * at once both parse and the second insert is dropped. */
static hs_status sc_get(const char *json, size_t len, avro_schema_ent **out, hs_error *err)
{
    *out = NULL;
    uint64_t h = hs_xxh64(json, len, 0);
    pthread_mutex_lock(&g_sc_mu);
    for (avro_schema_ent *e = g_sc; e; e = e->next)
        if (e->hash == h && e->len == len && memcmp(e->text, json, len) == 0) {
            e->refs++;
            *out = e;
            pthread_mutex_unlock(&g_sc_mu);
            return HS_OK;
        }
    pthread_mutex_unlock(&g_sc_mu);
    avro_schema_ent *e = hs_calloc(1, sizeof *e);
    if (!e || !(e->text = hs_malloc(len + 1))) {
        hs_free(e);
        return hs_err_nomem(err, len);
    }
    memcpy(e->text, json, len);
    e->len = len;
    e->hash = h;
    e->refs = 1;
    hs_status st = hs_avro_schema_parse(json, len, &e->arena, &e->schema, err);
    if (st != HS_OK) {
        sc_destroy(e);
        return st;
    }
    avro_schema_ent *dead = NULL;
    pthread_mutex_lock(&g_sc_mu);
    bool dup = false;
    for (avro_schema_ent *x = g_sc; x && !dup; x = x->next)
        dup = x->hash == h && x->len == len && memcmp(x->text, json, len) == 0;
    if (!dup && len <= AVRO_SCHEMA_CACHE_BYTES) {
        e->refs++;   /* the cache's reference */
        e->next = g_sc;
        g_sc = e;
        g_sc_n++;
        g_sc_bytes += len;
        while (g_sc_n > AVRO_SCHEMA_CACHE_MAX || g_sc_bytes > AVRO_SCHEMA_CACHE_BYTES) {
            avro_schema_ent **pp = &g_sc;   /* drop the oldest (the tail) */
            while ((*pp)->next)
                pp = &(*pp)->next;
            avro_schema_ent *old = *pp;
            *pp = NULL;
            g_sc_n--;
            g_sc_bytes -= old->len;
            if (--old->refs == 0) {
                old->next = dead;
                dead = old;
            }
        }
    }
    pthread_mutex_unlock(&g_sc_mu);
    while (dead) {
        avro_schema_ent *next = dead->next;
        sc_destroy(dead);
        dead = next;
    }
    *out = e;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* Container reader                                                    */
/* ------------------------------------------------------------------ */

struct hs_avro_reader {
    char *name;
    const uint8_t *buf;
    size_t len;
    size_t pos;                 /* next block in buf */
    uint8_t sync[16];
    hs_avro_codec codec;
    hs_arena arena;             /* schema and metadata */
    int n_meta;
    char **meta_keys;
    char **meta_vals;
    size_t *meta_lens;
    hs_avro_schema *schema;     /* borrowed from sc */
    avro_schema_ent *sc;        /* the shared parsed schema (one reference) */
    hs_buf block;               /* decompressed current block */
    const uint8_t *blk;         /* records of the current block */
    size_t blk_len, blk_pos;
    int64_t blk_left;           /* records left in the current block */
    dec_limits lim;             /* what decoding all records may spend: the
                                   budget is hs_decode_limit(file length), which
                                   also caps all decompressed blocks together */
    uint64_t inflated;          /* bytes decompressed by earlier blocks */
};

/* The most bytes the next decompressed block may hold: what is left of the
 * reader's limit after the blocks before it (so that the work of
 * decompressing, like the memory, is linear in the file), and 1 GiB. */
static uint64_t block_max(const hs_avro_reader *r)
{
    uint64_t left = r->lim.mem.limit > r->inflated ? r->lim.mem.limit - r->inflated : 0;
    return left < AVRO_MAX_BLOCK_BYTES ? left : AVRO_MAX_BLOCK_BYTES;
}

/* Room to decompress into at the end of b: what it has, but never more than
 * one byte past block_max (which the caller then reports). */
static size_t block_room(const hs_avro_reader *r, const hs_buf *b)
{
    uint64_t left = block_max(r) + 1 - b->len;  /* b->len <= block_max */
    size_t room = b->cap - b->len;
    return room < left ? room : (size_t)left;
}

/* Fails when a decompressed block would hold more than the reader's limit. */
static hs_status block_fits(hs_avro_reader *r, uint64_t bytes, hs_error *err)
{
    hs_decode_budget b = r->lim.mem;
    b.used = r->inflated;
    if (bytes > AVRO_MAX_BLOCK_BYTES)
        return HS_CORRUPT_AT(err, "%s: block decompresses past %zu bytes", r->name,
                             AVRO_MAX_BLOCK_BYTES);
    char what[300];
    snprintf(what, sizeof what, "%s: compressed block (a compressed file counts %d times its "
             "%zu bytes)", r->name, AVRO_COMPRESSED_ALLOWANCE, r->len);
    return HS_DECODE_CHARGE(&b, bytes, err, what);
}

/* Makes room for at least 64 KiB more in b (doubling), but never grows it
 * past block_max + 1 bytes: the buffer of a block that is refused at the
 * limit stays within the limit. */
static hs_status block_grow(const hs_avro_reader *r, hs_buf *b, hs_error *err)
{
    if (b->cap - b->len >= 65536 || b->cap > block_max(r))
        return HS_OK;
    uint64_t want = b->cap < 65536 ? 65536 : (uint64_t)b->cap * 2;
    if (want < (uint64_t)b->len + 65536)
        want = (uint64_t)b->len + 65536;
    if (want > block_max(r) + 1)
        want = block_max(r) + 1;
    if (want <= b->cap)
        return HS_OK;
    uint8_t *d = hs_realloc(b->data, (size_t)want);
    if (!d)
        return hs_err_nomem(err, (size_t)want);
    b->data = d;
    b->cap = (size_t)want;
    return HS_OK;
}

static hs_status inflate_raw(hs_avro_reader *r, const uint8_t *src, size_t n, hs_buf *out,
                             hs_error *err)
{
    const char *name = r->name;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK)
        return hs_err_nomem(err, 0);
    hs_buf_reset(out);
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    int rc;
    do {
        if (out->len > block_max(r)) {
            inflateEnd(&zs);
            return block_fits(r, out->len, err);
        }
        if (block_grow(r, out, err) != HS_OK) {
            inflateEnd(&zs);
            return HS_NOMEM;
        }
        size_t room = block_room(r, out);
        zs.next_out = out->data + out->len;
        zs.avail_out = (uInt)room;
        rc = inflate(&zs, Z_NO_FLUSH);
        out->len += room - zs.avail_out;
        if (rc == Z_BUF_ERROR && zs.avail_in == 0)
            break; /* input ended without a final block: take what we have only if complete */
    } while (rc == Z_OK);
    inflateEnd(&zs);
    if (out->len > block_max(r))
        return block_fits(r, out->len, err);
    if (rc != Z_STREAM_END)
        return HS_CORRUPT_AT(err, "%s: deflate block is corrupt (zlib %d)", name, rc);
    return HS_OK;
}

static hs_status decompress_block(hs_avro_reader *r, const uint8_t *src, size_t n, hs_error *err)
{
    switch (r->codec) {
    case HS_AVRO_CODEC_NULL:
        r->blk = src;
        r->blk_len = n;
        return HS_OK;
    case HS_AVRO_CODEC_DEFLATE:
        HS_TRY(inflate_raw(r, src, n, &r->block, err));
        break;
    case HS_AVRO_CODEC_SNAPPY: {
        size_t ulen;
        if (n < 4 || snappy_uncompressed_length((const char *)src, n - 4, &ulen) != SNAPPY_OK)
            return HS_CORRUPT_AT(err, "%s: snappy block is corrupt", r->name);
        HS_TRY(block_fits(r, ulen, err));
        hs_buf_reset(&r->block);
        if (hs_buf_reserve(&r->block, ulen + 1) != HS_OK)
            return hs_err_nomem(err, ulen);
        if (snappy_uncompress((const char *)src, n - 4, (char *)r->block.data, &ulen) != SNAPPY_OK)
            return HS_CORRUPT_AT(err, "%s: snappy block is corrupt", r->name);
        r->block.len = ulen;
        uint32_t crc = (uint32_t)crc32(0, r->block.data, (uInt)ulen);
        const uint8_t *c = src + n - 4;
        uint32_t want = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
        if (crc != want)
            return HS_CORRUPT_AT(err, "%s: snappy block checksum mismatch", r->name);
        break;
    }
    case HS_AVRO_CODEC_ZSTD: {
        ZSTD_DStream *zs = ZSTD_createDStream();
        if (!zs)
            return hs_err_nomem(err, 0);
        hs_buf_reset(&r->block);
        ZSTD_inBuffer in = {src, n, 0};
        size_t rc = 1;
        while (rc != 0) {
            if (r->block.len > block_max(r)) {
                ZSTD_freeDStream(zs);
                return block_fits(r, r->block.len, err);
            }
            if (block_grow(r, &r->block, err) != HS_OK) {
                ZSTD_freeDStream(zs);
                return HS_NOMEM;
            }
            ZSTD_outBuffer o = {r->block.data + r->block.len, block_room(r, &r->block), 0};
            rc = ZSTD_decompressStream(zs, &o, &in);
            r->block.len += o.pos;
            if (ZSTD_isError(rc) || (rc != 0 && in.pos == in.size && o.pos == 0)) {
                ZSTD_freeDStream(zs);
                return HS_CORRUPT_AT(err, "%s: zstandard block is corrupt", r->name);
            }
        }
        ZSTD_freeDStream(zs);
        if (r->block.len > block_max(r))
            return block_fits(r, r->block.len, err);
        break;
    }
    }
    r->blk = r->block.data;
    r->blk_len = r->block.len;
    r->inflated += r->block.len;
    return HS_OK;
}

hs_status hs_avro_reader_open(const char *name, const uint8_t *buf, size_t len,
                              hs_avro_reader **out, hs_error *err)
{
    *out = NULL;
    hs_avro_reader *r = hs_calloc(1, sizeof *r);
    if (!r)
        return hs_err_nomem(err, sizeof *r);
    r->name = hs_strdup(name ? name : "avro");
    r->buf = buf;
    r->len = len;
    hs_status st;
    if (!r->name) {
        st = hs_err_nomem(err, 0);
        goto fail;
    }
    if (len < 4 || memcmp(buf, avro_magic, 4) != 0) {
        st = HS_CORRUPT_AT(err, "%s: not an Avro container file (bad magic)", r->name);
        goto fail;
    }
    hs_decode_budget_init(&r->lim.mem, len);
    /* header metadata: map<bytes> */
    dec d = {.p = buf, .len = len, .pos = 4, .arena = &r->arena, .err = err, .lim = &r->lim};
    hs_buf keys = {0}, vals = {0}, lens = {0};
    for (;;) {
        int64_t count;
        if ((st = get_count(&d, NULL, &count)) != HS_OK)
            break;
        if (count == 0)
            break;
        for (int64_t i = 0; i < count && st == HS_OK; i++) {
            hs_avro_value k = {0}, v = {0};
            if ((st = get_bytes(&d, &k, HS_AVRO_STRING)) != HS_OK ||
                (st = get_bytes(&d, &v, HS_AVRO_BYTES)) != HS_OK)
                break;
            char *kp = (char *)k.u.bytes.p, *vp = (char *)v.u.bytes.p;
            size_t vl = v.u.bytes.len;
            if (HS_VEC_PUSH(&keys, char *, kp) != HS_OK || HS_VEC_PUSH(&vals, char *, vp) != HS_OK ||
                HS_VEC_PUSH(&lens, size_t, vl) != HS_OK)
                st = hs_err_nomem(err, 0);
        }
        if (st != HS_OK)
            break;
    }
    r->n_meta = (int)HS_VEC_LEN(&keys, char *);
    r->meta_keys = (char **)keys.data;
    r->meta_vals = (char **)vals.data;
    r->meta_lens = (size_t *)lens.data;
    if (st != HS_OK) {
        hs_err_prefix(err, "%s: header", r->name);
        goto fail;
    }
    if (len - d.pos < 16) {
        st = HS_CORRUPT_AT(err, "%s: header ends before the sync marker", r->name);
        goto fail;
    }
    memcpy(r->sync, buf + d.pos, 16);
    r->pos = d.pos + 16;

    size_t slen;
    const char *schema = hs_avro_reader_meta(r, "avro.schema", &slen);
    if (!schema) {
        st = HS_CORRUPT_AT(err, "%s: header has no avro.schema", r->name);
        goto fail;
    }
    if ((st = sc_get(schema, slen, &r->sc, err)) != HS_OK) {
        hs_err_prefix(err, "%s", r->name);
        goto fail;
    }
    r->schema = r->sc->schema;
    const char *codec = hs_avro_reader_meta(r, "avro.codec", NULL);
    if (!codec || strcmp(codec, "null") == 0)
        r->codec = HS_AVRO_CODEC_NULL;
    else if (strcmp(codec, "deflate") == 0)
        r->codec = HS_AVRO_CODEC_DEFLATE;
    else if (strcmp(codec, "snappy") == 0)
        r->codec = HS_AVRO_CODEC_SNAPPY;
    else if (strcmp(codec, "zstandard") == 0)
        r->codec = HS_AVRO_CODEC_ZSTD;
    else {
        st = hs_err_set(err, HS_UNSUPPORTED, "%s: Avro codec \"%s\" is not supported", r->name, codec);
        goto fail;
    }
    if (r->codec != HS_AVRO_CODEC_NULL) {
        /* compressed records: the limit is that of the file as if it held
         * AVRO_COMPRESSED_ALLOWANCE times its bytes uncompressed */
        uint64_t used = r->lim.mem.used, as_if;
        if (__builtin_mul_overflow((uint64_t)len, (uint64_t)AVRO_COMPRESSED_ALLOWANCE, &as_if))
            as_if = UINT64_MAX;
        hs_decode_budget_init(&r->lim.mem, as_if);
        r->lim.mem.used = used;
    }
    *out = r;
    return HS_OK;
fail:
    hs_avro_reader_close(r);
    return st;
}

void hs_avro_reader_close(hs_avro_reader *r)
{
    if (!r)
        return;
    hs_free(r->meta_keys);
    hs_free(r->meta_vals);
    hs_free(r->meta_lens);
    hs_buf_free(&r->block);
    hs_arena_destroy(&r->arena);
    sc_release(r->sc);
    hs_free(r->name);
    hs_free(r);
}

const hs_avro_schema *hs_avro_reader_schema(const hs_avro_reader *r) { return r->schema; }

const char *hs_avro_reader_meta(const hs_avro_reader *r, const char *key, size_t *len)
{
    for (int i = 0; i < r->n_meta; i++)
        if (strcmp(r->meta_keys[i], key) == 0) {
            if (len)
                *len = r->meta_lens[i];
            return r->meta_vals[i];
        }
    return NULL;
}

hs_status hs_avro_reader_next(hs_avro_reader *r, hs_arena *arena, hs_avro_value *out, bool *done,
                              hs_error *err)
{
    *done = false;
    while (r->blk_left == 0) {
        if (r->pos == r->len) {
            *done = true;
            return HS_OK;
        }
        dec d = {.p = r->buf, .len = r->len, .pos = r->pos, .err = err};
        int64_t count, size;
        HS_TRY(get_long(&d, &count));
        HS_TRY(get_long(&d, &size));
        if (count < 0 || size < 0 || (uint64_t)size > r->len - d.pos ||
            r->len - d.pos - (size_t)size < 16)
            return HS_CORRUPT_AT(err, "%s: block at byte %zu claims %lld records in %lld bytes, "
                                 "past the end of the file", r->name, r->pos, (long long)count,
                                 (long long)size);
        const uint8_t *data = r->buf + d.pos;
        if (memcmp(data + size, r->sync, 16) != 0)
            return HS_CORRUPT_AT(err, "%s: block at byte %zu does not end with the sync marker",
                                 r->name, r->pos);
        if (count > 0) {
            HS_TRY(decompress_block(r, data, (size_t)size, err));
        } else {  /* an empty block: nothing to decompress or decode */
            r->blk = NULL;
            r->blk_len = 0;
        }
        r->blk_pos = 0;
        r->blk_left = count;
        r->pos = d.pos + (size_t)size + 16;
        /* every record takes at least a byte unless the schema is zero-size */
        if (zero_size(r->schema, 0) ? count > AVRO_MAX_ZERO_SIZE_ITEMS
                                    : (uint64_t)count > r->blk_len)
            return HS_CORRUPT_AT(err, "%s: block claims %lld records in %zu bytes", r->name,
                                 (long long)count, r->blk_len);
        if (zero_size(r->schema, 0) && (r->lim.zero_items += count) > AVRO_MAX_ZERO_SIZE_ITEMS)
            return HS_CORRUPT_AT(err, "%s: more than %d records of zero size: past the decode "
                                 "limit", r->name, AVRO_MAX_ZERO_SIZE_ITEMS);
    }
    dec d = {.p = r->blk, .len = r->blk_len, .pos = r->blk_pos, .arena = arena, .err = err,
             .lim = &r->lim};
    hs_status st = decode_value(&d, r->schema, out);
    if (st != HS_OK) {
        hs_err_prefix(err, "%s", r->name);
        return st;
    }
    r->blk_pos = d.pos;
    if (--r->blk_left == 0 && r->blk_pos != r->blk_len)
        return HS_CORRUPT_AT(err, "%s: block has %zu bytes after its last record", r->name,
                             r->blk_len - r->blk_pos);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* Container writer                                                    */
/* ------------------------------------------------------------------ */

struct hs_avro_writer {
    hs_arena arena;
    hs_avro_schema *schema;
    hs_avro_codec codec;
    uint8_t sync[16];
    hs_buf file;
    hs_buf block;
    hs_buf packed;
    int64_t block_count;
};

static void make_sync(uint8_t sync[16])
{
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(sync, 1, 16, f) : 0;
    if (f)
        fclose(f);
    if (got != 16) {
        uint64_t x = (uint64_t)(uintptr_t)sync ^ (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull;
        for (int i = 0; i < 16; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            sync[i] = (uint8_t)x;
        }
    }
}

hs_status hs_avro_writer_open(const char *schema_json, hs_avro_codec codec,
                              const char *const *meta_keys, const char *const *meta_values,
                              int n_meta, hs_avro_writer **out, hs_error *err)
{
    *out = NULL;
    if (codec != HS_AVRO_CODEC_NULL && codec != HS_AVRO_CODEC_DEFLATE)
        return hs_err_set(err, HS_UNSUPPORTED, "avro writer: only null and deflate codecs");
    hs_avro_writer *w = hs_calloc(1, sizeof *w);
    if (!w)
        return hs_err_nomem(err, sizeof *w);
    w->codec = codec;
    hs_status st = hs_avro_schema_parse(schema_json, strlen(schema_json), &w->arena, &w->schema, err);
    if (st != HS_OK) {
        hs_avro_writer_free(w);
        return st;
    }
    make_sync(w->sync);
    const char *codec_name = codec == HS_AVRO_CODEC_DEFLATE ? "deflate" : "null";
    bool ok = hs_buf_append(&w->file, avro_magic, 4) == HS_OK &&
              hs_avro_put_long(&w->file, n_meta + 2) == HS_OK &&
              hs_avro_put_bytes(&w->file, "avro.schema", 11) == HS_OK &&
              hs_avro_put_bytes(&w->file, schema_json, strlen(schema_json)) == HS_OK &&
              hs_avro_put_bytes(&w->file, "avro.codec", 10) == HS_OK &&
              hs_avro_put_bytes(&w->file, codec_name, strlen(codec_name)) == HS_OK;
    for (int i = 0; ok && i < n_meta; i++)
        ok = hs_avro_put_bytes(&w->file, meta_keys[i], strlen(meta_keys[i])) == HS_OK &&
             hs_avro_put_bytes(&w->file, meta_values[i], strlen(meta_values[i])) == HS_OK;
    ok = ok && hs_buf_append_byte(&w->file, 0) == HS_OK &&
         hs_buf_append(&w->file, w->sync, 16) == HS_OK;
    if (!ok) {
        hs_avro_writer_free(w);
        return hs_err_nomem(err, 0);
    }
    *out = w;
    return HS_OK;
}

const hs_avro_schema *hs_avro_writer_schema(const hs_avro_writer *w) { return w->schema; }

static hs_status deflate_raw(const uint8_t *src, size_t n, hs_buf *out, hs_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return hs_err_nomem(err, 0);
    size_t bound = deflateBound(&zs, (uLong)n);
    hs_buf_reset(out);
    if (hs_buf_reserve(out, bound) != HS_OK) {
        deflateEnd(&zs);
        return hs_err_nomem(err, bound);
    }
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    zs.next_out = out->data;
    zs.avail_out = (uInt)out->cap;
    int rc = deflate(&zs, Z_FINISH);
    out->len = out->cap - zs.avail_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END)
        return hs_err_set(err, HS_INTERNAL, "avro writer: deflate failed (%d)", rc);
    return HS_OK;
}

static hs_status flush_block(hs_avro_writer *w, hs_error *err)
{
    if (w->block_count == 0)
        return HS_OK;
    const hs_buf *payload = &w->block;
    if (w->codec == HS_AVRO_CODEC_DEFLATE) {
        HS_TRY(deflate_raw(w->block.data, w->block.len, &w->packed, err));
        payload = &w->packed;
    }
    if (hs_avro_put_long(&w->file, w->block_count) != HS_OK ||
        hs_avro_put_long(&w->file, (int64_t)payload->len) != HS_OK ||
        hs_buf_append(&w->file, payload->data, payload->len) != HS_OK ||
        hs_buf_append(&w->file, w->sync, 16) != HS_OK)
        return hs_err_nomem(err, payload->len);
    hs_buf_reset(&w->block);
    w->block_count = 0;
    return HS_OK;
}

hs_status hs_avro_writer_append(hs_avro_writer *w, const hs_avro_value *v, hs_error *err)
{
    size_t before = w->block.len;
    hs_status st = hs_avro_encode(w->schema, v, &w->block, err);
    if (st != HS_OK) {
        w->block.len = before;
        return st;
    }
    w->block_count++;
    if (w->block.len >= AVRO_WRITER_BLOCK_BYTES)
        return flush_block(w, err);
    return HS_OK;
}

hs_status hs_avro_writer_finish(hs_avro_writer *w, hs_buf *out, hs_error *err)
{
    hs_status st = flush_block(w, err);
    if (st == HS_OK) {
        hs_buf_free(out);
        *out = w->file;
        memset(&w->file, 0, sizeof w->file);
    }
    hs_avro_writer_free(w);
    return st;
}

void hs_avro_writer_free(hs_avro_writer *w)
{
    if (!w)
        return;
    hs_buf_free(&w->file);
    hs_buf_free(&w->block);
    hs_buf_free(&w->packed);
    hs_arena_destroy(&w->arena);
    hs_free(w);
}

/* ------------------------------------------------------------------ */
/* JSON Lines bridge (tests compare with fastavro through it)          */
/* ------------------------------------------------------------------ */

static hs_status json_string_out(hs_buf *out, const uint8_t *p, size_t n)
{
    HS_TRY(hs_buf_append_byte(out, '"'));
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            HS_TRY(hs_buf_append_byte(out, '\\'));
            HS_TRY(hs_buf_append_byte(out, c));
        } else if (c < 0x20) {
            HS_TRY(hs_buf_printf(out, "\\u%04x", c));
        } else {
            HS_TRY(hs_buf_append_byte(out, c));
        }
    }
    return hs_buf_append_byte(out, '"');
}

static hs_status value_to_json(const hs_avro_schema *s, const hs_avro_value *v, hs_buf *out)
{
    static const char hex[] = "0123456789abcdef";
    if (s->kind == HS_AVRO_UNION)
        s = s->branches[v->branch >= 0 ? v->branch : 0];
    switch (v->kind) {
    case HS_AVRO_NULL: return hs_buf_puts(out, "null");
    case HS_AVRO_BOOLEAN: return hs_buf_puts(out, v->u.b ? "true" : "false");
    case HS_AVRO_INT:
    case HS_AVRO_LONG: return hs_buf_printf(out, "%lld", (long long)v->u.l);
    case HS_AVRO_ENUM: return json_string_out(out, (const uint8_t *)s->symbols[v->u.l],
                                              strlen(s->symbols[v->u.l]));
    case HS_AVRO_FLOAT:
    case HS_AVRO_DOUBLE: {
        double dd = value_as_double(v);
        if (isnan(dd))
            return hs_buf_puts(out, "\"NaN\"");
        if (isinf(dd))
            return hs_buf_puts(out, dd > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return hs_buf_printf(out, v->kind == HS_AVRO_FLOAT ? "%.9g" : "%.17g", dd);
    }
    case HS_AVRO_STRING: return json_string_out(out, v->u.bytes.p, v->u.bytes.len);
    case HS_AVRO_BYTES:
    case HS_AVRO_FIXED:
        HS_TRY(hs_buf_append_byte(out, '"'));
        for (uint32_t i = 0; i < v->u.bytes.len; i++) {
            HS_TRY(hs_buf_append_byte(out, (uint8_t)hex[v->u.bytes.p[i] >> 4]));
            HS_TRY(hs_buf_append_byte(out, (uint8_t)hex[v->u.bytes.p[i] & 15]));
        }
        return hs_buf_append_byte(out, '"');
    case HS_AVRO_RECORD:
        HS_TRY(hs_buf_append_byte(out, '{'));
        for (int i = 0; i < s->n; i++) {
            if (i)
                HS_TRY(hs_buf_append_byte(out, ','));
            HS_TRY(json_string_out(out, (const uint8_t *)s->fields[i].name, strlen(s->fields[i].name)));
            HS_TRY(hs_buf_append_byte(out, ':'));
            HS_TRY(value_to_json(s->fields[i].type, &v->u.arr.items[i], out));
        }
        return hs_buf_append_byte(out, '}');
    case HS_AVRO_ARRAY:
        HS_TRY(hs_buf_append_byte(out, '['));
        for (int64_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                HS_TRY(hs_buf_append_byte(out, ','));
            HS_TRY(value_to_json(s->items, &v->u.arr.items[i], out));
        }
        return hs_buf_append_byte(out, ']');
    case HS_AVRO_MAP:
        HS_TRY(hs_buf_append_byte(out, '{'));
        for (int64_t i = 0; i < v->u.map.n; i++) {
            if (i)
                HS_TRY(hs_buf_append_byte(out, ','));
            HS_TRY(json_string_out(out, v->u.map.keys[i].u.bytes.p, v->u.map.keys[i].u.bytes.len));
            HS_TRY(hs_buf_append_byte(out, ':'));
            HS_TRY(value_to_json(s->items, &v->u.map.vals[i], out));
        }
        return hs_buf_append_byte(out, '}');
    case HS_AVRO_UNION:
        break;
    }
    return HS_OK;
}

hs_status hs_avro_to_jsonl(const uint8_t *buf, size_t len, hs_buf *out, hs_error *err)
{
    hs_avro_reader *r;
    HS_TRY(hs_avro_reader_open("avro", buf, len, &r, err));
    hs_arena arena = {0};
    hs_status st = HS_OK;
    for (;;) {
        hs_avro_value v;
        bool done;
        hs_arena_reset(&arena);
        if ((st = hs_avro_reader_next(r, &arena, &v, &done, err)) != HS_OK || done)
            break;
        if (value_to_json(r->schema, &v, out) != HS_OK || hs_buf_append_byte(out, '\n') != HS_OK) {
            st = hs_err_nomem(err, 0);
            break;
        }
    }
    hs_arena_destroy(&arena);
    hs_avro_reader_close(r);
    return st;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool json_fits(const hs_avro_schema *s, json_t *j)
{
    switch (s->kind) {
    case HS_AVRO_NULL: return json_is_null(j);
    case HS_AVRO_BOOLEAN: return json_is_boolean(j);
    case HS_AVRO_INT:
    case HS_AVRO_LONG: return json_is_integer(j);
    case HS_AVRO_FLOAT:
    case HS_AVRO_DOUBLE: return json_is_number(j) || json_is_string(j);
    case HS_AVRO_BYTES:
    case HS_AVRO_STRING:
    case HS_AVRO_FIXED:
    case HS_AVRO_ENUM: return json_is_string(j);
    case HS_AVRO_RECORD:
    case HS_AVRO_MAP: return json_is_object(j);
    case HS_AVRO_ARRAY: return json_is_array(j);
    case HS_AVRO_UNION: return true;
    }
    return false;
}

static hs_status json_to_value(const hs_avro_schema *s, json_t *j, hs_arena *a, hs_avro_value *v,
                               hs_error *err, int depth)
{
    if (depth > AVRO_MAX_DEPTH)
        return hs_err_set(err, HS_INVALID, "avro json: nested too deeply");
    v->branch = -1;
    if (s->kind == HS_AVRO_UNION) {
        for (int i = 0; i < s->n; i++)
            if (json_fits(s->branches[i], j)) {
                HS_TRY(json_to_value(s->branches[i], j, a, v, err, depth + 1));
                v->branch = i;
                return HS_OK;
            }
        return hs_err_set(err, HS_INVALID, "avro json: no union branch fits a value");
    }
    if (!json_fits(s, j))
        return hs_err_set(err, HS_INVALID, "avro json: value does not fit schema kind %d", s->kind);
    v->kind = s->kind;
    switch (s->kind) {
    case HS_AVRO_NULL: break;
    case HS_AVRO_BOOLEAN: v->u.b = json_is_true(j); break;
    case HS_AVRO_INT:
    case HS_AVRO_LONG: v->u.l = json_integer_value(j); break;
    case HS_AVRO_FLOAT:
    case HS_AVRO_DOUBLE: {
        double dd;
        if (json_is_string(j)) {
            const char *t = json_string_value(j);
            dd = strcmp(t, "NaN") == 0 ? NAN : strcmp(t, "Infinity") == 0 ? INFINITY : -INFINITY;
        } else {
            dd = json_number_value(j);
        }
        if (s->kind == HS_AVRO_FLOAT)
            v->u.f = (float)dd;
        else
            v->u.d = dd;
        break;
    }
    case HS_AVRO_STRING: {
        const char *t = json_string_value(j);
        size_t n = json_string_length(j);
        v->u.bytes.p = (const uint8_t *)hs_arena_strndup(a, t, n);
        v->u.bytes.len = (uint32_t)n;
        if (!v->u.bytes.p)
            return hs_err_nomem(err, n);
        break;
    }
    case HS_AVRO_ENUM: {
        const char *t = json_string_value(j);
        v->u.l = -1;
        for (int i = 0; i < s->n; i++)
            if (strcmp(s->symbols[i], t) == 0)
                v->u.l = i;
        if (v->u.l < 0)
            return hs_err_set(err, HS_INVALID, "avro json: \"%s\" is not a symbol of %s", t, s->name);
        break;
    }
    case HS_AVRO_BYTES:
    case HS_AVRO_FIXED: {
        const char *t = json_string_value(j);
        size_t n = json_string_length(j);
        uint8_t *p = hs_arena_alloc(a, n / 2 + 1);
        if (!p)
            return hs_err_nomem(err, n);
        if (n % 2)
            return hs_err_set(err, HS_INVALID, "avro json: odd-length hex string");
        for (size_t i = 0; i < n / 2; i++) {
            int hi = hexval(t[2 * i]), lo = hexval(t[2 * i + 1]);
            if (hi < 0 || lo < 0)
                return hs_err_set(err, HS_INVALID, "avro json: bad hex string");
            p[i] = (uint8_t)(hi << 4 | lo);
        }
        v->u.bytes.p = p;
        v->u.bytes.len = (uint32_t)(n / 2);
        break;
    }
    case HS_AVRO_RECORD: {
        hs_avro_value *items = hs_avro_new_array(a, HS_AVRO_RECORD, s->n, v);
        if (!items)
            return hs_err_nomem(err, 0);
        for (int i = 0; i < s->n; i++) {
            json_t *f = json_object_get(j, s->fields[i].name);
            json_t *fallback = NULL;
            if (!f)
                f = fallback = json_null();
            hs_status st = json_to_value(s->fields[i].type, f, a, &items[i], err, depth + 1);
            json_decref(fallback);
            HS_TRY(st);
        }
        break;
    }
    case HS_AVRO_ARRAY: {
        size_t n = json_array_size(j);
        hs_avro_value *items = hs_avro_new_array(a, HS_AVRO_ARRAY, (int64_t)n, v);
        if (!items)
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < n; i++)
            HS_TRY(json_to_value(s->items, json_array_get(j, i), a, &items[i], err, depth + 1));
        break;
    }
    case HS_AVRO_MAP: {
        size_t n = json_object_size(j), i = 0;
        v->u.map.n = (int64_t)n;
        v->u.map.keys = hs_arena_calloc(a, n ? n : 1, sizeof(hs_avro_value));
        v->u.map.vals = hs_arena_calloc(a, n ? n : 1, sizeof(hs_avro_value));
        if (!v->u.map.keys || !v->u.map.vals)
            return hs_err_nomem(err, 0);
        const char *key;
        json_t *val;
        json_object_foreach(j, key, val) {
            v->u.map.keys[i] = hs_avro_str(hs_arena_strndup(a, key, strlen(key)));
            HS_TRY(json_to_value(s->items, val, a, &v->u.map.vals[i], err, depth + 1));
            i++;
        }
        break;
    }
    case HS_AVRO_UNION: break;
    }
    return HS_OK;
}

hs_status hs_avro_from_jsonl(const char *schema_json, const char *jsonl, hs_avro_codec codec,
                             hs_buf *out, hs_error *err)
{
    hs_avro_writer *w;
    HS_TRY(hs_avro_writer_open(schema_json, codec, NULL, NULL, 0, &w, err));
    hs_arena arena = {0};
    hs_status st = HS_OK;
    const char *line = jsonl;
    int lineno = 0;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        lineno++;
        if (n > 0) {
            json_error_t jerr;
            json_t *j = hs_json_loadb(line, n, JSON_DECODE_ANY, &jerr);
            if (!j) {
                st = hs_err_set(err, HS_INVALID, "line %d: invalid JSON: %s", lineno, jerr.text);
                break;
            }
            hs_avro_value v;
            hs_arena_reset(&arena);
            st = json_to_value(w->schema, j, &arena, &v, err, 0);
            json_decref(j);
            if (st == HS_OK)
                st = hs_avro_writer_append(w, &v, err);
            if (st != HS_OK) {
                hs_err_prefix(err, "line %d", lineno);
                break;
            }
        }
        line += n + (nl ? 1 : 0);
    }
    hs_arena_destroy(&arena);
    if (st != HS_OK) {
        hs_avro_writer_free(w);
        return st;
    }
    return hs_avro_writer_finish(w, out, err);
}

/* ctypes-friendly file wrappers for the oracle tests. */
char *hs_avro_file_to_jsonl(const char *path, hs_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        hs_err_set(err, HS_IO, "%s: cannot open", path);
        return NULL;
    }
    hs_buf in = {0}, out = {0};
    uint8_t tmp[65536];
    size_t n;
    hs_status st = HS_OK;
    while (st == HS_OK && (n = fread(tmp, 1, sizeof tmp, f)) > 0)
        st = hs_buf_append(&in, tmp, n);
    fclose(f);
    if (st == HS_OK)
        st = hs_avro_to_jsonl(in.data, in.len, &out, err);
    else
        hs_err_nomem(err, in.len);
    hs_buf_free(&in);
    if (st != HS_OK) {
        hs_buf_free(&out);
        return NULL;
    }
    return (char *)hs_buf_detach(&out, NULL);
}

hs_status hs_avro_jsonl_to_file(const char *schema_json, const char *jsonl, int deflate,
                                const char *path, hs_error *err)
{
    hs_buf out = {0};
    HS_TRY(hs_avro_from_jsonl(schema_json, jsonl,
                              deflate ? HS_AVRO_CODEC_DEFLATE : HS_AVRO_CODEC_NULL, &out, err));
    FILE *f = fopen(path, "wb");
    hs_status st = HS_OK;
    if (!f || fwrite(out.data, 1, out.len, f) != out.len)
        st = hs_err_set(err, HS_IO, "%s: cannot write", path);
    if (f && fclose(f) != 0 && st == HS_OK)
        st = hs_err_set(err, HS_IO, "%s: cannot write", path);
    hs_buf_free(&out);
    return st;
}
