/*
 * columnar/arrow_c.c - the Arrow C Data Interface and C Stream Interface for
 * hs_field / hs_column / hs_batch.
 *
 * Formats (ArrowSchema.format) and buffers (ArrowArray.buffers):
 *
 *   hs_type        export format       buffers exported               import also takes
 *   ------------   ------------------  -----------------------------  -------------------------
 *   NA             n                   (none)
 *   BOOL           b                   validity, bits
 *   INT8..UINT64   c s i l / C S I L   validity, values
 *   FLOAT16/32/64  e f g               validity, values
 *   DECIMAL128     d:P,S               validity, values (16 B LE)     d:P,S,128
 *   DATE32         tdD                 validity, values
 *   TIME32/64      tts ttm / ttu ttn   validity, values
 *   TIMESTAMP      ts{s,m,u,n}:TZ      validity, values
 *   STRING/BINARY  u / z               validity, offsets32, bytes     U Z (int64 offsets), vu vz
 *   FIXED_BINARY   w:N                 validity, values
 *   LIST           +l                  validity, offsets32            +L (int64 offsets)
 *   FIXED_LIST     +w:N                validity
 *   STRUCT         +s                  validity
 *   MAP            +m                  validity, offsets32
 *   INTERVAL       tin                 validity, values (converted)   (copied, converted)
 *   (any)          dictionary-encoded  -                              decoded to plain values
 *
 * Schema metadata: hs_field.field_id travels as "PARQUET:field_id" (as
 * pyarrow writes it); HS_EXT_UUID / HS_EXT_JSON as "ARROW:extension:name" =
 * "arrow.uuid" / "arrow.json"; every other hs_field meta pair as itself.
 * Import records what our layout cannot say in reserved meta keys, which
 * export never emits:
 *   "hs.arrow.format"      the original format when it is a large/view variant
 *                          ("U", "Z", "+L", "vu", "vz"), so that
 *                          hs_arrow_import_column knows the buffer layout;
 *   "hs.arrow.dict_index"  the index format of a dictionary-encoded field.
 *
 * Export (zero copy): the column tree is handed to a refcounted hs_col_owner;
 * every exported ArrowArray node points at its column's buffers and holds one
 * reference, so a consumer may move a child out and release the parent first
 * (as the spec allows).  A missing validity bitmap exports as NULL; empty
 * non-validity buffers export as a pointer to a static zeroed block (some
 * consumers reject NULL data buffers).
 *
 * Import (zero copy where possible): the producer's ArrowArray is moved into
 * a heap copy held by an hs_col_owner whose release calls the producer's
 * release; the source struct is marked released (release = NULL), also on
 * failure.  Columns borrow the buffers (cap == 0) and each holds an owner
 * reference.  Copies are made (1) for int64 offsets (converted, HS_INVALID
 * past 2 GiB), (2) for misaligned buffers, (3) for arrays with a non-zero
 * offset or children longer than needed (the borrowed view is validated as
 * Arrow data, then hs_col_slice makes it compact), (4) for views and
 * dictionaries (decoded).  Every import ends with hs_col_validate.
 */
#include "columnar/arrow_c.h"
#include "base/interval.h"
#include "base/mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARROW_MAX_DEPTH 64
#define META_FORMAT "hs.arrow.format"
#define META_DICT_INDEX "hs.arrow.dict_index"

static const uint8_t zero_block[64] __attribute__((aligned(64)));

/* ================================================================ schema export */

typedef struct schema_priv {
    char *format;
    char *name;
    char *metadata;
    struct ArrowSchema **child_ptrs;
    struct ArrowSchema *children;
    int64_t n_children;
} schema_priv;

static void schema_release(struct ArrowSchema *s)
{
    if (!s || !s->release)
        return;
    schema_priv *p = s->private_data;
    if (p) {
        for (int64_t i = 0; i < p->n_children; i++)
            if (p->children[i].release)
                p->children[i].release(&p->children[i]);
        hs_free(p->format);
        hs_free(p->name);
        hs_free(p->metadata);
        hs_free(p->child_ptrs);
        hs_free(p->children);
        hs_free(p);
    }
    s->release = NULL;
    s->private_data = NULL;
}

static const char *unit_char(hs_time_unit u)
{
    switch (u) {
    case HS_UNIT_SECOND: return "s";
    case HS_UNIT_MILLI: return "m";
    case HS_UNIT_MICRO: return "u";
    case HS_UNIT_NANO: return "n";
    }
    return "u";
}

/* The format string of f, in buf. */
static hs_status format_of(const hs_field *f, char *buf, size_t cap, hs_error *err)
{
    const char *s = NULL;
    switch (f->type) {
    case HS_TYPE_NA: s = "n"; break;
    case HS_TYPE_BOOL: s = "b"; break;
    case HS_TYPE_INT8: s = "c"; break;
    case HS_TYPE_UINT8: s = "C"; break;
    case HS_TYPE_INT16: s = "s"; break;
    case HS_TYPE_UINT16: s = "S"; break;
    case HS_TYPE_INT32: s = "i"; break;
    case HS_TYPE_UINT32: s = "I"; break;
    case HS_TYPE_INT64: s = "l"; break;
    case HS_TYPE_UINT64: s = "L"; break;
    case HS_TYPE_FLOAT16: s = "e"; break;
    case HS_TYPE_FLOAT32: s = "f"; break;
    case HS_TYPE_FLOAT64: s = "g"; break;
    case HS_TYPE_DATE32: s = "tdD"; break;
    case HS_TYPE_STRING: s = "u"; break;
    case HS_TYPE_BINARY: s = "z"; break;
    case HS_TYPE_LIST: s = "+l"; break;
    case HS_TYPE_STRUCT: s = "+s"; break;
    case HS_TYPE_MAP: s = "+m"; break;
    case HS_TYPE_INTERVAL: s = "tin"; break;
    case HS_TYPE_DECIMAL128:
        snprintf(buf, cap, "d:%d,%d", f->precision, f->scale);
        return HS_OK;
    case HS_TYPE_TIME32:
        s = f->unit == HS_UNIT_SECOND ? "tts" : "ttm";
        break;
    case HS_TYPE_TIME64:
        s = f->unit == HS_UNIT_NANO ? "ttn" : "ttu";
        break;
    case HS_TYPE_TIMESTAMP:
        if (snprintf(buf, cap, "ts%s:%s", unit_char(f->unit), f->tz ? f->tz : "") >= (int)cap)
            return hs_err_set(err, HS_INVALID, "field '%s': time zone too long", f->name);
        return HS_OK;
    case HS_TYPE_FIXED_BINARY:
        snprintf(buf, cap, "w:%d", f->width);
        return HS_OK;
    case HS_TYPE_FIXED_LIST:
        snprintf(buf, cap, "+w:%d", f->width);
        return HS_OK;
    default:
        return hs_err_set(err, HS_INVALID, "field '%s': cannot export type id %d", f->name, (int)f->type);
    }
    snprintf(buf, cap, "%s", s);
    return HS_OK;
}

static bool meta_key_reserved(const char *k)
{
    return strncmp(k, "hs.arrow.", 9) == 0;
}

/* Encodes the metadata blob (int32 n, then n x (int32 len, key, int32 len, value)). */
static hs_status encode_metadata(const hs_field *f, char **out)
{
    *out = NULL;
    const char *keys[64 + 3];
    const char *vals[64 + 3];
    char idbuf[16];
    int n = 0;
    bool has_id = false, has_ext = false;
    for (int i = 0; i < f->n_meta; i++) {
        if (strcmp(f->meta_keys[i], "PARQUET:field_id") == 0)
            has_id = true;
        if (strcmp(f->meta_keys[i], "ARROW:extension:name") == 0)
            has_ext = true;
    }
    if (f->field_id >= 0 && !has_id) {
        snprintf(idbuf, sizeof idbuf, "%d", (int)f->field_id);
        keys[n] = "PARQUET:field_id";
        vals[n++] = idbuf;
    }
    if (f->ext != HS_EXT_NONE && !has_ext) {
        keys[n] = "ARROW:extension:name";
        vals[n++] = f->ext == HS_EXT_UUID ? "arrow.uuid" : "arrow.json";
        keys[n] = "ARROW:extension:metadata";
        vals[n++] = "";
    }
    /* Fields with more pairs than fit here are rare; they go through a heap array. */
    int total = n + f->n_meta;
    const char **k = keys, **v = vals;
    if (total > (int)(sizeof keys / sizeof keys[0])) {
        k = hs_malloc(sizeof(char *) * (size_t)total);
        v = hs_malloc(sizeof(char *) * (size_t)total);
        if (!k || !v) {
            if (k != keys)
                hs_free((void *)k);
            if (v != vals)
                hs_free((void *)v);
            return HS_NOMEM;
        }
        memcpy(k, keys, sizeof(char *) * (size_t)n);
        memcpy(v, vals, sizeof(char *) * (size_t)n);
    }
    for (int i = 0; i < f->n_meta; i++) {
        if (meta_key_reserved(f->meta_keys[i]))
            continue;
        k[n] = f->meta_keys[i];
        v[n++] = f->meta_values[i];
    }
    hs_status st = HS_OK;
    if (n > 0) {
        size_t size = 4;
        for (int i = 0; i < n; i++)
            size += 8 + strlen(k[i]) + strlen(v[i]);
        char *blob = hs_malloc(size);
        if (!blob) {
            st = HS_NOMEM;
        } else {
            char *p = blob;
            int32_t n32 = n;
            memcpy(p, &n32, 4);
            p += 4;
            for (int i = 0; i < n; i++) {
                int32_t kl = (int32_t)strlen(k[i]), vl = (int32_t)strlen(v[i]);
                memcpy(p, &kl, 4);
                memcpy(p + 4, k[i], (size_t)kl);
                p += 4 + kl;
                memcpy(p, &vl, 4);
                memcpy(p + 4, v[i], (size_t)vl);
                p += 4 + vl;
            }
            *out = blob;
        }
    }
    if (k != keys) {
        hs_free((void *)k);
        hs_free((void *)v);
    }
    return st;
}

static hs_status export_schema_rec(const hs_field *f, struct ArrowSchema *out, int depth, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (depth > ARROW_MAX_DEPTH)
        return hs_err_set(err, HS_INVALID, "field '%s': nested deeper than %d", f->name, ARROW_MAX_DEPTH);
    char fmt[128];
    HS_TRY(format_of(f, fmt, sizeof fmt, err));
    schema_priv *p = hs_calloc(1, sizeof *p);
    if (!p)
        return hs_err_nomem(err, sizeof *p);
    out->private_data = p;
    out->release = schema_release;
    p->format = hs_strdup(fmt);
    p->name = hs_strdup(f->name ? f->name : "");
    if (!p->format || !p->name || encode_metadata(f, &p->metadata) != HS_OK)
        goto nomem;
    if (f->n_children > 0) {
        p->children = hs_calloc((size_t)f->n_children, sizeof(struct ArrowSchema));
        p->child_ptrs = hs_calloc((size_t)f->n_children, sizeof(struct ArrowSchema *));
        if (!p->children || !p->child_ptrs)
            goto nomem;
        for (int i = 0; i < f->n_children; i++) {
            p->child_ptrs[i] = &p->children[i];
            p->n_children = i + 1;
            hs_status s = export_schema_rec(&f->children[i], &p->children[i], depth + 1, err);
            if (s != HS_OK) {
                schema_release(out);
                return s;
            }
        }
    }
    out->format = p->format;
    out->name = p->name;
    out->metadata = p->metadata;
    out->flags = (f->nullable ? ARROW_FLAG_NULLABLE : 0) |
                 (f->type == HS_TYPE_MAP && f->keys_sorted ? ARROW_FLAG_MAP_KEYS_SORTED : 0);
    out->n_children = f->n_children;
    out->children = p->child_ptrs;
    out->dictionary = NULL;
    return HS_OK;
nomem:
    schema_release(out);
    return hs_err_nomem(err, 0);
}

hs_status hs_arrow_export_schema(const hs_field *f, struct ArrowSchema *out, hs_error *err)
{
    return export_schema_rec(f, out, 0, err);
}

/* ================================================================ array export */

typedef struct array_priv {
    hs_col_owner *owner;              /* one reference */
    const void *buffers[3];
    struct ArrowArray **child_ptrs;
    struct ArrowArray *children;
    int64_t n_children;
} array_priv;

static void array_release(struct ArrowArray *a)
{
    if (!a || !a->release)
        return;
    array_priv *p = a->private_data;
    if (p) {
        for (int64_t i = 0; i < p->n_children; i++)
            if (p->children[i].release)
                p->children[i].release(&p->children[i]);
        hs_free(p->child_ptrs);
        hs_free(p->children);
        hs_col_owner_unref(p->owner);
        hs_free(p);
    }
    a->release = NULL;
    a->private_data = NULL;
}

static const void *buf_or_zero(const hs_colbuf *b)
{
    return b->data ? (const void *)b->data : (const void *)zero_block;
}

static hs_status export_node(hs_column *c, hs_col_owner *owner, struct ArrowArray *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > ARROW_MAX_DEPTH)
        return HS_INVALID;
    array_priv *p = hs_calloc(1, sizeof *p);
    if (!p)
        return HS_NOMEM;
    hs_col_owner_ref(owner);
    p->owner = owner;
    out->private_data = p;
    out->release = array_release;
    out->length = c->length;
    out->null_count = c->null_count;
    out->offset = 0;
    int nb;
    switch (c->type) {
    case HS_TYPE_NA:
        nb = 0;
        break;
    case HS_TYPE_STRING: case HS_TYPE_BINARY:
        nb = 3;
        p->buffers[1] = buf_or_zero(&c->offsets);
        p->buffers[2] = buf_or_zero(&c->values);
        break;
    case HS_TYPE_LIST: case HS_TYPE_MAP:
        nb = 2;
        p->buffers[1] = buf_or_zero(&c->offsets);
        break;
    case HS_TYPE_FIXED_LIST: case HS_TYPE_STRUCT:
        nb = 1;
        break;
    default:
        nb = 2;
        p->buffers[1] = buf_or_zero(&c->values);
        break;
    }
    if (nb > 0)
        p->buffers[0] = c->validity.data;  /* NULL when all valid */
    out->n_buffers = nb;
    out->buffers = p->buffers;
    if (c->n_children > 0) {
        p->children = hs_calloc((size_t)c->n_children, sizeof(struct ArrowArray));
        p->child_ptrs = hs_calloc((size_t)c->n_children, sizeof(struct ArrowArray *));
        if (!p->children || !p->child_ptrs) {
            array_release(out);
            return HS_NOMEM;
        }
        for (int i = 0; i < c->n_children; i++) {
            p->child_ptrs[i] = &p->children[i];
            p->n_children = i + 1;
            hs_status s = export_node(c->children[i], owner, &p->children[i], depth + 1);
            if (s != HS_OK) {
                array_release(out);
                return s;
            }
        }
    }
    out->n_children = c->n_children;
    out->children = p->child_ptrs;
    out->dictionary = NULL;
    return HS_OK;
}

static void owner_free_column(void *ctx)
{
    hs_col_free(ctx);
}

/* INTERVAL columns (base/interval.h) leave as Arrow's month_day_nano:
 * their values are rewritten in place, as export owns the column (and its
 * interval values buffers: import copies them).  Fails
 * when a time part does not fit in int64 nanoseconds. */
static hs_status intervals_to_mdn(hs_column *c, int depth, hs_error *err)
{
    if (depth > ARROW_MAX_DEPTH)
        return HS_OK;   /* export_node refuses it */
    for (int i = 0; i < c->n_children; i++)
        HS_TRY(intervals_to_mdn(c->children[i], depth + 1, err));
    if (c->type != HS_TYPE_INTERVAL || c->length == 0)
        return HS_OK;
    if (c->values.cap == 0)   /* never: import copies interval values */
        return hs_err_set(err, HS_UNSUPPORTED, "cannot export a borrowed interval column");
    uint8_t *v = c->values.data;
    for (int64_t i = 0; i < c->length; i++) {
        hs_interval iv;
        memcpy(&iv, v + i * 16, 16);
        if (!hs_col_is_valid(c, i)) {
            memset(v + i * 16, 0, 16);
        } else if (!hs_interval_to_mdn(iv, v + i * 16)) {
            char txt[128];
            hs_interval_format(iv, txt, sizeof txt);
            return hs_err_set(err, HS_INVALID, "interval '%s' does not fit Arrow's month_day_nano "
                              "(its nanoseconds overflow int64)", txt);
        }
    }
    return HS_OK;
}

hs_status hs_arrow_export_column(hs_column *c, struct ArrowArray *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_status cs = intervals_to_mdn(c, 0, err);
    if (cs != HS_OK) {
        hs_col_free(c);
        return cs;
    }
    hs_col_owner *owner = hs_col_owner_new(owner_free_column, c);
    if (!owner) {
        hs_col_free(c);
        return hs_err_nomem(err, 0);
    }
    hs_type t = c->type;
    hs_status s = export_node(c, owner, out, 0);
    hs_col_owner_unref(owner);  /* the exported nodes hold the remaining references */
    if (s != HS_OK)
        return hs_err_set(err, s, "exporting a %s column failed", hs_type_name(t));
    return HS_OK;
}

/* Turns a batch into one STRUCT column (moving its columns); frees b. */
static hs_status batch_to_struct(hs_batch *b, hs_column **out, hs_error *err)
{
    *out = NULL;
    if (b->n_cols != b->schema.n_children) {
        hs_status s = hs_err_set(err, HS_INVALID, "batch has %d columns, its schema %d", b->n_cols,
                                 b->schema.n_children);
        hs_batch_free(b);
        return s;
    }
    for (int i = 0; i < b->n_cols; i++) {
        if (b->cols[i]->length != b->n_rows) {
            hs_status s = hs_err_set(err, HS_INVALID, "batch column '%s' has %lld rows, batch has %lld",
                                     i < b->schema.n_children ? b->schema.children[i].name : "?",
                                     (long long)b->cols[i]->length, (long long)b->n_rows);
            hs_batch_free(b);
            return s;
        }
    }
    hs_column *sc = hs_calloc(1, sizeof *sc);
    if (!sc) {
        hs_batch_free(b);
        return hs_err_nomem(err, sizeof *sc);
    }
    sc->type = HS_TYPE_STRUCT;
    sc->length = b->n_rows;
    sc->n_children = b->n_cols;
    sc->children = b->cols;
    b->cols = NULL;
    b->n_cols = 0;
    hs_batch_free(b);
    *out = sc;
    return HS_OK;
}

hs_status hs_arrow_export_batch(hs_batch *b, struct ArrowSchema *schema_out,
                                struct ArrowArray *array_out, hs_error *err)
{
    memset(array_out, 0, sizeof *array_out);
    hs_status s = hs_arrow_export_schema(&b->schema, schema_out, err);
    if (s != HS_OK) {
        hs_batch_free(b);
        return s;
    }
    hs_column *sc;
    s = batch_to_struct(b, &sc, err);
    if (s == HS_OK)
        s = hs_arrow_export_column(sc, array_out, err);
    if (s != HS_OK)
        schema_release(schema_out);
    return s;
}

/* ================================================================ schema import */

static hs_status parse_int(const char *s, const char **end, int64_t lo, int64_t hi, int64_t *out)
{
    char *e;
    errno = 0;
    long long v = strtoll(s, &e, 10);
    if (e == s || errno != 0 || v < lo || v > hi)
        return HS_INVALID;
    *end = e;
    *out = v;
    return HS_OK;
}

static hs_status parse_format(const char *fmt, hs_field *f, const char **large, hs_error *err)
{
    *large = NULL;
    const char *nm = f->name;
    struct { const char *fmt; hs_type t; } simple[] = {
        {"n", HS_TYPE_NA}, {"b", HS_TYPE_BOOL}, {"c", HS_TYPE_INT8}, {"C", HS_TYPE_UINT8},
        {"s", HS_TYPE_INT16}, {"S", HS_TYPE_UINT16}, {"i", HS_TYPE_INT32}, {"I", HS_TYPE_UINT32},
        {"l", HS_TYPE_INT64}, {"L", HS_TYPE_UINT64}, {"e", HS_TYPE_FLOAT16}, {"f", HS_TYPE_FLOAT32},
        {"g", HS_TYPE_FLOAT64}, {"tdD", HS_TYPE_DATE32}, {"u", HS_TYPE_STRING}, {"z", HS_TYPE_BINARY},
        {"+l", HS_TYPE_LIST}, {"+s", HS_TYPE_STRUCT}, {"+m", HS_TYPE_MAP},
        {"U", HS_TYPE_STRING}, {"Z", HS_TYPE_BINARY}, {"+L", HS_TYPE_LIST},
        {"vu", HS_TYPE_STRING}, {"vz", HS_TYPE_BINARY}, {"tin", HS_TYPE_INTERVAL},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (strcmp(fmt, simple[i].fmt) == 0) {
            f->type = simple[i].t;
            if (i >= 19)
                *large = simple[i].fmt;
            return HS_OK;
        }
    }
    const char *e;
    int64_t v;
    if (fmt[0] == 'd' && fmt[1] == ':') {
        int64_t prec, scale, bits = 128;
        if (parse_int(fmt + 2, &e, 1, 76, &prec) != HS_OK || *e != ',' ||
            parse_int(e + 1, &e, -1000, 1000, &scale) != HS_OK)
            goto bad;
        if (*e == ',' && (parse_int(e + 1, &e, 0, 1024, &bits) != HS_OK))
            goto bad;
        if (*e != '\0')
            goto bad;
        if (bits != 128)
            return hs_err_set(err, HS_UNSUPPORTED, "field '%s': decimal of %lld bits (format '%s') is not supported",
                              nm, (long long)bits, fmt);
        f->type = HS_TYPE_DECIMAL128;
        f->precision = (int32_t)prec;
        f->scale = (int32_t)scale;
        return HS_OK;
    }
    if ((fmt[0] == 'w' && fmt[1] == ':') || (fmt[0] == '+' && fmt[1] == 'w' && fmt[2] == ':')) {
        bool list = fmt[0] == '+';
        if (parse_int(fmt + (list ? 3 : 2), &e, 0, INT32_MAX, &v) != HS_OK || *e != '\0')
            goto bad;
        f->type = list ? HS_TYPE_FIXED_LIST : HS_TYPE_FIXED_BINARY;
        f->width = (int32_t)v;
        return HS_OK;
    }
    if (fmt[0] == 't' && fmt[1] == 't' && fmt[2] && !fmt[3]) {
        switch (fmt[2]) {
        case 's': f->type = HS_TYPE_TIME32; f->unit = HS_UNIT_SECOND; return HS_OK;
        case 'm': f->type = HS_TYPE_TIME32; f->unit = HS_UNIT_MILLI; return HS_OK;
        case 'u': f->type = HS_TYPE_TIME64; f->unit = HS_UNIT_MICRO; return HS_OK;
        case 'n': f->type = HS_TYPE_TIME64; f->unit = HS_UNIT_NANO; return HS_OK;
        default: goto bad;
        }
    }
    if (fmt[0] == 't' && fmt[1] == 's' && fmt[2] && fmt[3] == ':') {
        switch (fmt[2]) {
        case 's': f->unit = HS_UNIT_SECOND; break;
        case 'm': f->unit = HS_UNIT_MILLI; break;
        case 'u': f->unit = HS_UNIT_MICRO; break;
        case 'n': f->unit = HS_UNIT_NANO; break;
        default: goto bad;
        }
        f->type = HS_TYPE_TIMESTAMP;
        hs_free(f->tz);
        f->tz = NULL;
        if (fmt[4] && !(f->tz = hs_strdup(fmt + 4)))
            return hs_err_nomem(err, strlen(fmt));
        return HS_OK;
    }
    return hs_err_set(err, HS_UNSUPPORTED, "field '%s': Arrow format '%s' is not supported", nm, fmt);
bad:
    return hs_err_set(err, HS_INVALID, "field '%s': malformed Arrow format '%s'", nm, fmt);
}

/* Reads the metadata blob into f (field id, extension, other pairs). */
static hs_status decode_metadata(const char *md, hs_field *f, hs_error *err)
{
    if (!md)
        return HS_OK;
    int32_t n;
    memcpy(&n, md, 4);
    if (n < 0 || n > 100000)
        return hs_err_set(err, HS_INVALID, "field '%s': metadata claims %d pairs", f->name, (int)n);
    const char *p = md + 4;
    const char *ext_name = NULL;
    size_t ext_len = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t kl, vl;
        memcpy(&kl, p, 4);
        if (kl < 0)
            return hs_err_set(err, HS_INVALID, "field '%s': negative metadata key length", f->name);
        const char *k = p + 4;
        p = k + kl;
        memcpy(&vl, p, 4);
        if (vl < 0)
            return hs_err_set(err, HS_INVALID, "field '%s': negative metadata value length", f->name);
        const char *v = p + 4;
        p = v + vl;
        char *ks = hs_strndup(k, (size_t)kl), *vs = hs_strndup(v, (size_t)vl);
        hs_status s = HS_NOMEM;
        if (ks && vs) {
            s = HS_OK;
            if (strcmp(ks, "PARQUET:field_id") == 0) {
                const char *e;
                int64_t id;
                if (parse_int(vs, &e, 0, INT32_MAX, &id) == HS_OK && *e == '\0')
                    f->field_id = (int32_t)id;
                else
                    s = hs_field_set_meta(f, ks, vs);
            } else if (strcmp(ks, "ARROW:extension:name") == 0) {
                ext_name = v;
                ext_len = (size_t)vl;
                s = hs_field_set_meta(f, ks, vs);
            } else if (!meta_key_reserved(ks)) {
                s = hs_field_set_meta(f, ks, vs);
            }
        }
        hs_free(ks);
        hs_free(vs);
        if (s != HS_OK)
            return hs_err_nomem(err, (size_t)kl + (size_t)vl);
    }
    /* Recognised extensions become hs_ext and leave the meta (export re-adds them). */
    hs_ext ext = HS_EXT_NONE;
    if (ext_name && ext_len == 10 && memcmp(ext_name, "arrow.uuid", 10) == 0 &&
        f->type == HS_TYPE_FIXED_BINARY && f->width == 16)
        ext = HS_EXT_UUID;
    if (ext_name && ext_len == 10 && memcmp(ext_name, "arrow.json", 10) == 0 &&
        f->type == HS_TYPE_STRING)
        ext = HS_EXT_JSON;
    if (ext != HS_EXT_NONE) {
        f->ext = ext;
        for (int i = 0; i < f->n_meta; i++) {
            if (strcmp(f->meta_keys[i], "ARROW:extension:name") == 0 ||
                strcmp(f->meta_keys[i], "ARROW:extension:metadata") == 0) {
                hs_free(f->meta_keys[i]);
                hs_free(f->meta_values[i]);
                f->meta_keys[i] = f->meta_keys[f->n_meta - 1];
                f->meta_values[i] = f->meta_values[f->n_meta - 1];
                f->n_meta--;
                i--;
            }
        }
    }
    return HS_OK;
}

static bool is_index_format(const char *fmt)
{
    return fmt && fmt[0] && !fmt[1] && strchr("cCsSiIlL", fmt[0]) != NULL;
}

static hs_status import_schema_rec(const struct ArrowSchema *s, hs_field *out, int depth, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (depth > ARROW_MAX_DEPTH)
        return hs_err_set(err, HS_INVALID, "schema nested deeper than %d", ARROW_MAX_DEPTH);
    if (!s || !s->release || !s->format)
        return hs_err_set(err, HS_INVALID, "schema is released or has no format");
    hs_field_init(out, s->name ? s->name : "", HS_TYPE_NA, (s->flags & ARROW_FLAG_NULLABLE) != 0);
    if (!out->name)
        return hs_err_nomem(err, 0);
    hs_status st;
    const char *large = NULL;
    const struct ArrowSchema *vs = s;   /* the schema of the values */
    if (s->dictionary) {
        if (!is_index_format(s->format)) {
            st = hs_err_set(err, HS_INVALID, "field '%s': dictionary index format '%s'", out->name, s->format);
            goto fail;
        }
        if ((st = hs_field_set_meta(out, META_DICT_INDEX, s->format)) != HS_OK)
            goto fail;
        vs = s->dictionary;
        if (!vs->format || vs->dictionary) {
            st = hs_err_set(err, HS_UNSUPPORTED, "field '%s': nested dictionary", out->name);
            goto fail;
        }
    }
    if ((st = parse_format(vs->format, out, &large, err)) != HS_OK)
        goto fail;
    if (large && (st = hs_field_set_meta(out, META_FORMAT, large)) != HS_OK)
        goto fail;
    if (out->type == HS_TYPE_MAP)
        out->keys_sorted = (s->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0;
    if (vs->n_children < 0 || (vs->n_children > 0 && !vs->children) || vs->n_children > 100000) {
        st = hs_err_set(err, HS_INVALID, "field '%s': %lld children", out->name, (long long)vs->n_children);
        goto fail;
    }
    int want = -1;
    switch (out->type) {
    case HS_TYPE_LIST: case HS_TYPE_FIXED_LIST: case HS_TYPE_MAP: want = 1; break;
    case HS_TYPE_STRUCT: break;
    default: want = 0; break;
    }
    if (want >= 0 && vs->n_children != want) {
        st = hs_err_set(err, HS_INVALID, "field '%s': format '%s' with %lld children", out->name,
                        vs->format, (long long)vs->n_children);
        goto fail;
    }
    for (int64_t i = 0; i < vs->n_children; i++) {
        hs_field child;
        if ((st = import_schema_rec(vs->children[i], &child, depth + 1, err)) != HS_OK) {
            hs_err_prefix(err, "in '%s'", out->name);
            goto fail;
        }
        if ((st = hs_field_add_child(out, &child)) != HS_OK)
            goto fail;
    }
    if (out->type == HS_TYPE_MAP &&
        (out->children[0].type != HS_TYPE_STRUCT || out->children[0].n_children != 2)) {
        st = hs_err_set(err, HS_INVALID, "field '%s': map entries are not a struct of key and value", out->name);
        goto fail;
    }
    if ((st = decode_metadata(s->metadata, out, err)) != HS_OK)
        goto fail;
    return HS_OK;
fail:
    if (st == HS_NOMEM)
        hs_err_nomem(err, 0);
    hs_field_clear(out);
    return st;
}

hs_status hs_arrow_import_schema(const struct ArrowSchema *s, hs_field *out, hs_error *err)
{
    return import_schema_rec(s, out, 0, err);
}

/* ================================================================ array import */

typedef struct import_holder {
    struct ArrowArray array;  /* the moved producer struct */
} import_holder;

static void holder_release(void *ctx)
{
    import_holder *h = ctx;
    if (h->array.release)
        h->array.release(&h->array);
    hs_free(h);
}

static hs_column *new_col(const hs_field *f, hs_col_owner *owner)
{
    hs_column *c = hs_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->type = f->type;
    c->width = f->type == HS_TYPE_FIXED_LIST ? f->width : hs_type_width(f);
    if (f->n_children > 0) {
        c->children = hs_calloc((size_t)f->n_children, sizeof(hs_column *));
        if (!c->children) {
            hs_free(c);
            return NULL;
        }
        c->n_children = f->n_children;
    }
    if (owner) {
        hs_col_owner_ref(owner);
        c->owner = owner;
    }
    return c;
}

/* Points b at producer memory, copying it into an owned aligned buffer when
 * it is not aligned to `align`. */
static hs_status borrow(hs_colbuf *b, const void *p, size_t len, size_t align)
{
    if (!p || len == 0) {
        b->data = (uint8_t *)(p ? p : zero_block);
        b->len = len;
        b->cap = 0;
        return HS_OK;
    }
    if (((uintptr_t)p & (align - 1)) == 0) {
        b->data = (uint8_t *)p;
        b->len = len;
        b->cap = 0;
        return HS_OK;
    }
    uint8_t *d = hs_malloc_aligned(len);
    if (!d)
        return HS_NOMEM;
    memcpy(d, p, len);
    b->data = d;
    b->len = len;
    b->cap = len;
    return HS_OK;
}

static hs_status import_node(const struct ArrowArray *a, const hs_field *f, hs_col_owner *owner,
                             bool allow_dict, int depth, hs_column **out, hs_error *err);

/* Dictionary-encoded array: decode indices through the dictionary. */
static hs_status import_dict(const struct ArrowArray *a, const hs_field *f, hs_col_owner *owner,
                             int depth, hs_column **out, hs_error *err)
{
    const char *ifmt = hs_field_get_meta(f, META_DICT_INDEX);
    if (!is_index_format(ifmt))
        return hs_err_set(err, HS_INVALID, "field '%s': dictionary array but the field has no index type",
                          f->name);
    if (a->n_buffers != 2 || (a->length > 0 && !a->buffers[1]))
        return HS_CORRUPT_AT(err, "field '%s': dictionary indices need 2 buffers, got %lld", f->name,
                             (long long)a->n_buffers);
    hs_column *dict;
    HS_TRY(import_node(a->dictionary, f, owner, false, depth + 1, &dict, err));
    int64_t *idx = hs_malloc(sizeof(int64_t) * (size_t)(a->length > 0 ? a->length : 1));
    if (!idx) {
        hs_col_free(dict);
        return hs_err_nomem(err, sizeof(int64_t) * (size_t)a->length);
    }
    const uint8_t *valid = a->null_count != 0 ? a->buffers[0] : NULL;
    const void *ib = a->buffers[1];
    hs_status st = HS_OK;
    for (int64_t i = 0; i < a->length; i++) {
        int64_t r = a->offset + i, v;
        if (valid && !hs_bit_get(valid, r)) {
            idx[i] = -1;
            continue;
        }
        switch (ifmt[0]) {
        case 'c': v = ((const int8_t *)ib)[r]; break;
        case 'C': v = ((const uint8_t *)ib)[r]; break;
        case 's': { int16_t x; memcpy(&x, (const char *)ib + 2 * r, 2); v = x; break; }
        case 'S': { uint16_t x; memcpy(&x, (const char *)ib + 2 * r, 2); v = x; break; }
        case 'i': { int32_t x; memcpy(&x, (const char *)ib + 4 * r, 4); v = x; break; }
        case 'I': { uint32_t x; memcpy(&x, (const char *)ib + 4 * r, 4); v = x; break; }
        case 'l': { int64_t x; memcpy(&x, (const char *)ib + 8 * r, 8); v = x; break; }
        default: { uint64_t x; memcpy(&x, (const char *)ib + 8 * r, 8); v = x > INT64_MAX ? -1 : (int64_t)x; break; }
        }
        if (v < 0 || v >= dict->length) {
            st = HS_CORRUPT_AT(err, "field '%s': dictionary index %lld at row %lld outside a dictionary of %lld",
                               f->name, (long long)v, (long long)i, (long long)dict->length);
            break;
        }
        idx[i] = v;
    }
    if (st == HS_OK)
        st = hs_col_validate_arrow(dict, f, err);
    if (st == HS_OK)
        st = hs_col_take_nullable(dict, idx, a->length, out, err);
    hs_free(idx);
    hs_col_free(dict);
    return st;
}

/* String/binary view array ("vu"/"vz"): copied into our layout. */
static hs_status import_view(const struct ArrowArray *a, const hs_field *f, hs_column **out, hs_error *err)
{
    if (a->n_buffers < 3 || (!a->buffers[1] && a->length > 0))
        return HS_CORRUPT_AT(err, "field '%s': view array with %lld buffers", f->name, (long long)a->n_buffers);
    int64_t n_data = a->n_buffers - 3;
    const int64_t *sizes = a->buffers[a->n_buffers - 1];
    if (n_data > 0 && !sizes)
        return HS_CORRUPT_AT(err, "field '%s': view array without buffer sizes", f->name);
    hs_field plain;
    hs_field_init(&plain, f->name, f->type, true);
    hs_column *c;
    hs_status st = hs_col_create(&plain, a->length, &c, err);
    hs_field_clear(&plain);
    HS_TRY(st);
    const uint8_t *valid = a->null_count != 0 ? a->buffers[0] : NULL;
    const uint8_t *views = a->buffers[1];
    for (int64_t i = 0; i < a->length && st == HS_OK; i++) {
        int64_t r = a->offset + i;
        if (valid && !hs_bit_get(valid, r)) {
            st = hs_col_append_null(c);
            continue;
        }
        const uint8_t *v = views + 16 * r;
        int32_t len, bi, off;
        memcpy(&len, v, 4);
        if (len < 0) {
            st = HS_CORRUPT_AT(err, "field '%s': view %lld has length %d", f->name, (long long)i, (int)len);
            break;
        }
        if (len <= 12) {
            st = hs_col_append_bytes(c, v + 4, (size_t)len);
            continue;
        }
        memcpy(&bi, v + 8, 4);
        memcpy(&off, v + 12, 4);
        if (bi < 0 || bi >= n_data || off < 0 || (int64_t)off + len > sizes[bi] || !a->buffers[2 + bi]) {
            st = HS_CORRUPT_AT(err, "field '%s': view %lld points outside its data buffers", f->name,
                               (long long)i);
            break;
        }
        st = hs_col_append_bytes(c, (const uint8_t *)a->buffers[2 + bi] + off, (size_t)len);
    }
    if (st != HS_OK) {
        hs_col_free(c);
        return st == HS_CORRUPT ? st : hs_err_set(err, st, "field '%s': copying a view array failed", f->name);
    }
    *out = c;
    return HS_OK;
}

/* Converts n+1 int64 offsets to int32 ones (minus base) in an owned buffer. */
static hs_status convert_offsets(hs_colbuf *b, const int64_t *o64, int64_t n, int64_t base,
                                 const hs_field *f, hs_error *err)
{
    size_t bytes = (size_t)(n + 1) * 4;
    int32_t *o = hs_malloc_aligned(bytes);
    if (!o)
        return hs_err_nomem(err, bytes);
    for (int64_t i = 0; i <= n; i++) {
        int64_t v = o64[i] - base;
        if (v < 0 || v > INT32_MAX || (i > 0 && o64[i] < o64[i - 1])) {
            hs_free_aligned(o);
            if (v > INT32_MAX)
                return hs_err_set(err, HS_INVALID, "field '%s': large offsets reach %lld, past the 2 GiB of 32-bit offsets",
                                  f->name, (long long)v);
            return HS_CORRUPT_AT(err, "field '%s': large offsets[%lld] = %lld out of order", f->name,
                                 (long long)i, (long long)o64[i]);
        }
        o[i] = (int32_t)v;
    }
    b->data = (uint8_t *)o;
    b->len = bytes;
    b->cap = bytes;
    return HS_OK;
}

static int expected_buffers(hs_type t)
{
    switch (t) {
    case HS_TYPE_NA: return 0;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: return 3;
    case HS_TYPE_FIXED_LIST: case HS_TYPE_STRUCT: return 1;
    default: return 2;
    }
}

/* Builds a column of a's logical rows [0, a->length): a borrowed view of rows
 * [0, offset + length) first, sliced (copied) when offset != 0. */
static hs_status import_node(const struct ArrowArray *a, const hs_field *f, hs_col_owner *owner,
                             bool allow_dict, int depth, hs_column **out, hs_error *err)
{
    *out = NULL;
    const char *nm = f->name;
    if (depth > ARROW_MAX_DEPTH)
        return hs_err_set(err, HS_INVALID, "array nested deeper than %d", ARROW_MAX_DEPTH);
    if (!a || !a->release)
        return hs_err_set(err, HS_INVALID, "field '%s': array is missing or released", nm);
    int64_t full;
    if (a->length < 0 || a->offset < 0 || __builtin_add_overflow(a->length, a->offset, &full) ||
        full > INT64_MAX / 64)
        return HS_CORRUPT_AT(err, "field '%s': length %lld offset %lld", nm, (long long)a->length,
                             (long long)a->offset);
    if (a->n_buffers < 0 || (a->n_buffers > 0 && !a->buffers) || a->n_children < 0 ||
        (a->n_children > 0 && !a->children))
        return HS_CORRUPT_AT(err, "field '%s': %lld buffers, %lld children", nm,
                             (long long)a->n_buffers, (long long)a->n_children);
    if (a->dictionary) {
        if (!allow_dict)
            return hs_err_set(err, HS_UNSUPPORTED, "field '%s': nested dictionary", nm);
        return import_dict(a, f, owner, depth, out, err);
    }
    const char *layout = hs_field_get_meta(f, META_FORMAT);
    if (layout && layout[0] == 'v')
        return import_view(a, f, out, err);
    if (a->n_buffers != expected_buffers(f->type))
        return HS_CORRUPT_AT(err, "field '%s' (%s): %lld buffers, expected %d", nm,
                             hs_type_name(f->type), (long long)a->n_buffers, expected_buffers(f->type));
    if (a->n_children != f->n_children)
        return HS_CORRUPT_AT(err, "field '%s' (%s): %lld child arrays, the schema has %d", nm,
                             hs_type_name(f->type), (long long)a->n_children, f->n_children);
    hs_column *c = new_col(f, owner);
    if (!c)
        return hs_err_nomem(err, sizeof *c);
    hs_status st = HS_OK;
    c->length = full;
    if (f->type == HS_TYPE_NA) {
        c->null_count = full;
        goto children;
    }
    for (int i = 1; i < a->n_buffers; i++) {
        if (!a->buffers[i] && full > 0 && i != 2) {  /* string bytes may be NULL when empty */
            st = HS_CORRUPT_AT(err, "field '%s' (%s): buffer %d is NULL", nm, hs_type_name(f->type), i);
            goto fail;
        }
    }
    if (a->buffers[0] && a->null_count != 0) {
        if ((st = borrow(&c->validity, a->buffers[0], (size_t)(full + 7) / 8, 1)) != HS_OK)
            goto nomem;
        c->null_count = full - hs_bits_count(c->validity.data, 0, full);  /* the whole view */
    } else if (a->null_count > 0 && full > 0) {
        st = HS_CORRUPT_AT(err, "field '%s': null_count %lld without a validity bitmap", nm,
                           (long long)a->null_count);
        goto fail;
    }
    switch (f->type) {
    case HS_TYPE_BOOL:
        st = borrow(&c->values, a->buffers[1], (size_t)(full + 7) / 8, 1);
        break;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        if (layout && (layout[0] == 'U' || layout[0] == 'Z')) {
            const int64_t *o64 = a->buffers[1];
            if ((uintptr_t)o64 & 7) {
                st = hs_err_set(err, HS_UNSUPPORTED, "field '%s': misaligned large offsets", nm);
                goto fail;
            }
            if (!o64) {
                st = HS_CORRUPT_AT(err, "field '%s': large offsets buffer is NULL", nm);
                goto fail;
            }
            if ((st = convert_offsets(&c->offsets, o64, full, o64[0], f, err)) != HS_OK)
                goto fail;
            const uint8_t *vals = a->buffers[2] ? (const uint8_t *)a->buffers[2] + o64[0] : NULL;
            st = borrow(&c->values, vals, (size_t)HS_COL_OFFSETS(c)[full], 1);
        } else if (!a->buffers[1]) {
            st = HS_CORRUPT_AT(err, "field '%s': offsets buffer is NULL", nm);
            goto fail;
        } else {
            if ((st = borrow(&c->offsets, a->buffers[1], (size_t)(full + 1) * 4, 4)) != HS_OK)
                goto nomem;
            int32_t end = HS_COL_OFFSETS(c)[full];
            if (end < 0) {
                st = HS_CORRUPT_AT(err, "field '%s': offsets end at %d", nm, (int)end);
                goto fail;
            }
            st = borrow(&c->values, a->buffers[2], (size_t)end, 1);
        }
        break;
    }
    case HS_TYPE_LIST: case HS_TYPE_MAP:
        if (!a->buffers[1]) {
            st = HS_CORRUPT_AT(err, "field '%s': offsets buffer is NULL", nm);
            goto fail;
        }
        if (layout && strcmp(layout, "+L") == 0) {
            if ((uintptr_t)a->buffers[1] & 7) {
                st = hs_err_set(err, HS_UNSUPPORTED, "field '%s': misaligned large offsets", nm);
                goto fail;
            }
            if ((st = convert_offsets(&c->offsets, a->buffers[1], full, 0, f, err)) != HS_OK)
                goto fail;
        } else {
            st = borrow(&c->offsets, a->buffers[1], (size_t)(full + 1) * 4, 4);
        }
        break;
    case HS_TYPE_FIXED_LIST: case HS_TYPE_STRUCT:
        break;
    case HS_TYPE_INTERVAL: {  /* month_day_nano -> base/interval.h, copied */
        size_t bytes = (size_t)full * 16;
        const uint8_t *src = a->buffers[1];
        c->values.data = hs_malloc_aligned(bytes ? bytes : 16);
        if (!c->values.data)
            goto nomem;
        c->values.cap = bytes ? bytes : 16;
        c->values.len = bytes;
        for (int64_t i = 0; i < full; i++) {
            hs_interval v = hs_interval_from_mdn(src + 16 * i);
            memcpy(c->values.data + 16 * i, &v, 16);
        }
        break;
    }
    default: {  /* fixed width */
        size_t w = (size_t)c->width;
        size_t align = f->type == HS_TYPE_FIXED_BINARY ? 1 : (w >= 8 ? 8 : w);
        st = borrow(&c->values, a->buffers[1], (size_t)full * w, align ? align : 1);
        break;
    }
    }
    if (st != HS_OK)
        goto nomem;
children:
    for (int i = 0; i < f->n_children; i++) {
        st = import_node(a->children[i], &f->children[i], owner, true, depth + 1, &c->children[i], err);
        if (st != HS_OK) {
            hs_err_prefix(err, "in '%s'", nm);
            goto fail;
        }
    }
    if (a->offset != 0) {
        hs_column *s;
        if ((st = hs_col_validate_arrow(c, f, err)) != HS_OK)
            goto fail;
        if ((st = hs_col_slice(c, a->offset, a->length, &s, err)) != HS_OK)
            goto fail;
        hs_col_free(c);
        c = s;
    }
    *out = c;
    return HS_OK;
nomem:
    st = hs_err_nomem(err, 0);
fail:
    hs_col_free(c);
    return st;
}

hs_status hs_arrow_import_column(struct ArrowArray *a, const hs_field *f, hs_column **out, hs_error *err)
{
    *out = NULL;
    if (!a || !a->release)
        return hs_err_set(err, HS_INVALID, "import: the array is already released");
    import_holder *h = hs_malloc(sizeof *h);
    hs_col_owner *owner = h ? hs_col_owner_new(holder_release, h) : NULL;
    if (!owner) {
        hs_free(h);
        a->release(a);
        a->release = NULL;
        return hs_err_nomem(err, sizeof *h);
    }
    h->array = *a;
    a->release = NULL;  /* moved */
    hs_column *c;
    hs_status st = import_node(&h->array, f, owner, true, 0, &c, err);
    if (st == HS_OK) {
        st = hs_col_validate_arrow(c, f, err);
        if (st == HS_OK && hs_col_validate(c, f, NULL) != HS_OK) {
            /* Arrow-valid but not compact (offsets[0] > 0, longer children): copy. */
            hs_column *s;
            st = hs_col_slice(c, 0, c->length, &s, err);
            hs_col_free(c);
            c = st == HS_OK ? s : NULL;
        }
        if (st == HS_OK)
            st = hs_col_validate(c, f, err);
        if (st != HS_OK)
            hs_col_free(c);
    }
    hs_col_owner_unref(owner);  /* columns hold their own references */
    if (st != HS_OK) {
        hs_err_prefix(err, "importing Arrow array");
        return st;
    }
    *out = c;
    return HS_OK;
}

hs_status hs_arrow_import_batch(struct ArrowArray *a, const hs_field *schema, hs_batch **out,
                                hs_error *err)
{
    *out = NULL;
    if (schema->type != HS_TYPE_STRUCT) {
        if (a && a->release) {
            a->release(a);
            a->release = NULL;
        }
        return hs_err_set(err, HS_INVALID, "import batch: schema is a %s, not a struct",
                          hs_type_name(schema->type));
    }
    hs_column *sc;
    HS_TRY(hs_arrow_import_column(a, schema, &sc, err));
    if (sc->null_count != 0) {
        hs_col_free(sc);
        return hs_err_set(err, HS_INVALID, "import batch: the struct array has %lld null rows",
                          (long long)sc->null_count);
    }
    hs_batch *b = hs_calloc(1, sizeof *b);
    if (!b || hs_field_copy(schema, &b->schema) != HS_OK) {
        hs_free(b);
        hs_col_free(sc);
        return hs_err_nomem(err, sizeof *b);
    }
    b->n_rows = sc->length;
    b->n_cols = sc->n_children;
    b->cols = sc->children;
    sc->children = NULL;
    sc->n_children = 0;
    hs_col_free(sc);
    *out = b;
    return HS_OK;
}

/* ================================================================ streams */

static int status_errno(hs_status s)
{
    switch (s) {
    case HS_OK: return 0;
    case HS_NOMEM: return ENOMEM;
    case HS_INVALID: return EINVAL;
    case HS_UNSUPPORTED: return ENOSYS;
    case HS_CORRUPT: return EBADMSG;
    case HS_NOT_FOUND: return ENOENT;
    case HS_CANCELLED: return ECANCELED;
    default: return EIO;
    }
}

typedef struct stream_priv {
    hs_batch_source src;
    hs_error err;
    bool ended;
} stream_priv;

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    stream_priv *p = s->private_data;
    hs_err_clear(&p->err);
    return status_errno(hs_arrow_export_schema(&p->src.schema, out, &p->err));
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    stream_priv *p = s->private_data;
    hs_err_clear(&p->err);
    memset(out, 0, sizeof *out);
    if (p->ended)
        return 0;  /* release == NULL: end of stream */
    hs_batch *b = NULL;
    hs_status st = p->src.next(p->src.ctx, &b, &p->err);
    if (st != HS_OK) {
        hs_batch_free(b);
        return status_errno(st);
    }
    if (!b) {
        p->ended = true;
        return 0;
    }
    hs_column *sc;
    st = batch_to_struct(b, &sc, &p->err);
    if (st == HS_OK)
        st = hs_arrow_export_column(sc, out, &p->err);
    return status_errno(st);
}

static const char *stream_get_last_error(struct ArrowArrayStream *s)
{
    stream_priv *p = s->private_data;
    return p->err.code != HS_OK ? p->err.msg : NULL;
}

static void stream_release(struct ArrowArrayStream *s)
{
    if (!s || !s->release)
        return;
    stream_priv *p = s->private_data;
    if (p) {
        if (p->src.close)
            p->src.close(p->src.ctx);
        hs_field_clear(&p->src.schema);
        hs_free(p);
    }
    s->release = NULL;
    s->private_data = NULL;
}

hs_status hs_arrow_export_stream(hs_batch_source *src, struct ArrowArrayStream *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    stream_priv *p = hs_calloc(1, sizeof *p);
    if (!p) {
        if (src->close)
            src->close(src->ctx);
        hs_field_clear(&src->schema);
        return hs_err_nomem(err, sizeof *p);
    }
    p->src = *src;
    memset(src, 0, sizeof *src);  /* moved */
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_get_last_error;
    out->release = stream_release;
    out->private_data = p;
    return HS_OK;
}

/* hs_arrow_export_one_batch: a source holding one batch. */
typedef struct one_batch {
    hs_batch *b;
} one_batch;

static hs_status one_next(void *ctx, hs_batch **out, hs_error *err)
{
    (void)err;
    one_batch *o = ctx;
    *out = o->b;
    o->b = NULL;
    return HS_OK;
}

static void one_close(void *ctx)
{
    one_batch *o = ctx;
    hs_batch_free(o->b);
    hs_free(o);
}

hs_status hs_arrow_export_one_batch(hs_batch *b, struct ArrowArrayStream *out, hs_error *err)
{
    one_batch *o = hs_calloc(1, sizeof *o);
    hs_batch_source src = {.next = one_next, .close = one_close, .ctx = o};
    if (!o || hs_field_copy(&b->schema, &src.schema) != HS_OK) {
        hs_field_clear(&src.schema);
        hs_batch_free(b);
        hs_free(o);
        return hs_err_nomem(err, 64);
    }
    if (b->n_rows > 0)
        o->b = b;
    else
        hs_batch_free(b);
    return hs_arrow_export_stream(&src, out, err);   /* owns o now, also on failure */
}

/* The status of a producer's errno (status_errno's inverse): a stream of
 * ours exported and imported again (the table scan's, read by the executor)
 * keeps its status, so that e.g. a division by zero in a pushed-down filter
 * stays HS_INVALID (SQLSTATE 22012), not an I/O error (58030). */
static hs_status errno_status(int rc)
{
    switch (rc) {
    case ENOMEM: return HS_NOMEM;
    case EINVAL: return HS_INVALID;
    case ENOSYS: return HS_UNSUPPORTED;
    case EBADMSG: return HS_CORRUPT;
    case ENOENT: return HS_NOT_FOUND;
    case ECANCELED: return HS_CANCELLED;
    default: return HS_IO;
    }
}

typedef struct istream_ctx {
    struct ArrowArrayStream stream;  /* moved producer stream */
    hs_field schema;                 /* own copy: the source's schema may be moved away */
} istream_ctx;

static hs_status istream_next(void *ctx, hs_batch **out, hs_error *err)
{
    istream_ctx *c = ctx;
    *out = NULL;
    struct ArrowArray a;
    memset(&a, 0, sizeof a);
    int rc = c->stream.get_next(&c->stream, &a);
    if (rc != 0) {
        const char *m = c->stream.get_last_error ? c->stream.get_last_error(&c->stream) : NULL;
        return hs_err_set(err, errno_status(rc), "Arrow stream get_next failed (errno %d): %s", rc,
                          m ? m : "");
    }
    if (!a.release)
        return HS_OK;  /* end of stream */
    return hs_arrow_import_batch(&a, &c->schema, out, err);
}

static void istream_close(void *ctx)
{
    istream_ctx *c = ctx;
    if (!c)
        return;
    if (c->stream.release)
        c->stream.release(&c->stream);
    hs_field_clear(&c->schema);
    hs_free(c);
}

bool hs_arrow_own_source(struct ArrowArrayStream *s, hs_batch_source *out)
{
    if (!s || !s->release || s->get_next != stream_get_next || !s->private_data)
        return false;
    stream_priv *p = s->private_data;
    *out = p->src;
    memset(&p->src, 0, sizeof p->src);   /* moved: the release frees p only */
    s->release(s);
    s->release = NULL;
    return true;
}

hs_status hs_arrow_import_stream(struct ArrowArrayStream *s, hs_batch_source *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!s || !s->release)
        return hs_err_set(err, HS_INVALID, "import stream: the stream is already released");
    istream_ctx *c = hs_calloc(1, sizeof *c);
    if (!c) {
        s->release(s);
        s->release = NULL;
        return hs_err_nomem(err, sizeof *c);
    }
    c->stream = *s;
    s->release = NULL;  /* moved */
    struct ArrowSchema sch;
    memset(&sch, 0, sizeof sch);
    int rc = c->stream.get_schema(&c->stream, &sch);
    hs_status st;
    if (rc != 0) {
        const char *m = c->stream.get_last_error ? c->stream.get_last_error(&c->stream) : NULL;
        st = hs_err_set(err, errno_status(rc), "Arrow stream get_schema failed (errno %d): %s", rc,
                        m ? m : "");
    } else {
        st = hs_arrow_import_schema(&sch, &out->schema, err);
        if (sch.release)
            sch.release(&sch);
        if (st == HS_OK && out->schema.type != HS_TYPE_STRUCT) {
            st = hs_err_set(err, HS_INVALID, "import stream: schema is a %s, not a struct",
                            hs_type_name(out->schema.type));
            hs_field_clear(&out->schema);
        }
    }
    if (st != HS_OK) {
        istream_close(c);
        return st;
    }
    if (hs_field_copy(&out->schema, &c->schema) != HS_OK) {
        hs_field_clear(&out->schema);
        istream_close(c);
        return hs_err_nomem(err, 0);
    }
    out->next = istream_next;
    out->close = istream_close;
    out->ctx = c;
    return HS_OK;
}

/* ================================================================ test support */

hs_status hs_arrow_roundtrip(struct ArrowSchema *schema_in, struct ArrowArray *array_in,
                             struct ArrowSchema *schema_out, struct ArrowArray *array_out,
                             hs_error *err)
{
    memset(schema_out, 0, sizeof *schema_out);
    memset(array_out, 0, sizeof *array_out);
    hs_field f;
    hs_status st = hs_arrow_import_schema(schema_in, &f, err);
    if (schema_in && schema_in->release)
        schema_in->release(schema_in);
    if (st != HS_OK) {
        if (array_in && array_in->release) {
            array_in->release(array_in);
            array_in->release = NULL;
        }
        return st;
    }
    hs_column *c = NULL, *copy = NULL;
    st = hs_arrow_import_column(array_in, &f, &c, err);
    if (st == HS_OK)
        st = hs_col_validate(c, &f, err);
    if (st == HS_OK)
        st = hs_col_slice(c, 0, c->length, &copy, err);
    hs_col_free(c);
    if (st == HS_OK)
        st = hs_col_validate(copy, &f, err);
    if (st == HS_OK)
        st = hs_arrow_export_schema(&f, schema_out, err);
    if (st == HS_OK) {
        st = hs_arrow_export_column(copy, array_out, err);
        copy = NULL;
        if (st != HS_OK)
            schema_out->release(schema_out);
    }
    hs_col_free(copy);
    hs_field_clear(&f);
    return st;
}

hs_status hs_arrow_stream_roundtrip(struct ArrowArrayStream *in, struct ArrowArrayStream *out,
                                    hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_batch_source src;
    HS_TRY(hs_arrow_import_stream(in, &src, err));
    return hs_arrow_export_stream(&src, out, err);
}
