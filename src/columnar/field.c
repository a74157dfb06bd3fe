/*
 * columnar/field.c - the type model: building, copying, comparing and
 * printing hs_field trees.
 *
 * An hs_field is a plain struct (not a handle) that owns everything it points
 * to: its name, time zone, children array and metadata strings.  The rules:
 *
 *   operation            ownership
 *   -------------------  -----------------------------------------------------
 *   hs_field_init        f owns a copy of name; children/meta empty
 *   hs_field_add_child   parent takes the child's contents (the child struct is
 *                        "moved": the caller must not clear it afterwards),
 *                        also on failure, when the contents are freed
 *   hs_field_set_meta    copies key and value; replaces an existing key
 *   hs_field_copy        dst gets a deep copy; on failure dst is left zeroed
 *   hs_field_clear       frees everything and zeroes f (accepts a zeroed f)
 *
 * Defaults set by hs_field_init: field_id -1, TIME32 unit MILLI, TIME64 and
 * TIMESTAMP unit MICRO, DECIMAL128 precision 38 scale 0; FIXED_BINARY and
 * FIXED_LIST width 0 (the caller sets it; a UUID is FIXED_BINARY width 16 with
 * ext HS_EXT_UUID).
 *
 * Type names follow pyarrow's spelling ("float" for float32, "double",
 * "halffloat"), so that hs_field_format reads like pyarrow's str(schema).
 */
#include "columnar/column.h"
#include "base/mem.h"

#include <string.h>

static const char *const type_names[HS_TYPE__COUNT] = {
    [HS_TYPE_NA] = "null",
    [HS_TYPE_BOOL] = "bool",
    [HS_TYPE_INT8] = "int8",
    [HS_TYPE_INT16] = "int16",
    [HS_TYPE_INT32] = "int32",
    [HS_TYPE_INT64] = "int64",
    [HS_TYPE_UINT8] = "uint8",
    [HS_TYPE_UINT16] = "uint16",
    [HS_TYPE_UINT32] = "uint32",
    [HS_TYPE_UINT64] = "uint64",
    [HS_TYPE_FLOAT16] = "halffloat",
    [HS_TYPE_FLOAT32] = "float",
    [HS_TYPE_FLOAT64] = "double",
    [HS_TYPE_DECIMAL128] = "decimal128",
    [HS_TYPE_DATE32] = "date32",
    [HS_TYPE_TIME32] = "time32",
    [HS_TYPE_TIME64] = "time64",
    [HS_TYPE_TIMESTAMP] = "timestamp",
    [HS_TYPE_STRING] = "string",
    [HS_TYPE_BINARY] = "binary",
    [HS_TYPE_FIXED_BINARY] = "fixed_size_binary",
    [HS_TYPE_LIST] = "list",
    [HS_TYPE_FIXED_LIST] = "fixed_size_list",
    [HS_TYPE_STRUCT] = "struct",
    [HS_TYPE_MAP] = "map",
    [HS_TYPE_INTERVAL] = "interval",
};

const char *hs_type_name(hs_type t)
{
    if ((unsigned)t >= HS_TYPE__COUNT)
        return "unknown";
    return type_names[t];
}

void hs_field_init(hs_field *f, const char *name, hs_type type, bool nullable)
{
    memset(f, 0, sizeof *f);
    f->name = hs_strdup(name ? name : "");
    f->type = type;
    f->nullable = nullable;
    f->field_id = -1;
    switch (type) {
    case HS_TYPE_TIME32: f->unit = HS_UNIT_MILLI; break;
    case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: f->unit = HS_UNIT_MICRO; break;
    case HS_TYPE_DECIMAL128: f->precision = 38; f->scale = 0; break;
    default: break;
    }
}

void hs_field_clear(hs_field *f)
{
    if (!f)
        return;
    hs_free(f->name);
    hs_free(f->tz);
    for (int i = 0; i < f->n_children; i++)
        hs_field_clear(&f->children[i]);
    hs_free(f->children);
    for (int i = 0; i < f->n_meta; i++) {
        hs_free(f->meta_keys[i]);
        hs_free(f->meta_values[i]);
    }
    hs_free(f->meta_keys);
    hs_free(f->meta_values);
    memset(f, 0, sizeof *f);
}

hs_status hs_field_add_child(hs_field *parent, const hs_field *child_moved)
{
    hs_field *a = hs_realloc(parent->children, sizeof(hs_field) * (size_t)(parent->n_children + 1));
    if (!a) {
        hs_field tmp = *child_moved;
        hs_field_clear(&tmp);
        /* the caller's struct is left zeroed, so a caller that clears it
         * anyway (many do on their error path) frees nothing twice */
        memset((hs_field *)child_moved, 0, sizeof *child_moved);
        return HS_NOMEM;
    }
    a[parent->n_children] = *child_moved;
    parent->children = a;
    parent->n_children++;
    return HS_OK;
}

void hs_field_init_list(hs_field *f, const char *name, bool nullable, const hs_field *elem_moved)
{
    hs_field_init(f, name, HS_TYPE_LIST, nullable);
    /* On failure the element is freed and the list has no child; validation of
     * anything built from it reports the missing child. */
    (void)!hs_field_add_child(f, elem_moved);
}

const char *hs_field_get_meta(const hs_field *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0)
            return f->meta_values[i];
    return NULL;
}

hs_status hs_field_set_meta(hs_field *f, const char *key, const char *value)
{
    char *v = hs_strdup(value ? value : "");
    if (!v)
        return HS_NOMEM;
    for (int i = 0; i < f->n_meta; i++) {
        if (strcmp(f->meta_keys[i], key) == 0) {
            hs_free(f->meta_values[i]);
            f->meta_values[i] = v;
            return HS_OK;
        }
    }
    char *k = hs_strdup(key);
    char **ks = k ? hs_realloc(f->meta_keys, sizeof(char *) * (size_t)(f->n_meta + 1)) : NULL;
    if (ks)
        f->meta_keys = ks;
    char **vs = ks ? hs_realloc(f->meta_values, sizeof(char *) * (size_t)(f->n_meta + 1)) : NULL;
    if (!vs) {
        hs_free(k);
        hs_free(v);
        return HS_NOMEM;
    }
    f->meta_values = vs;
    f->meta_keys[f->n_meta] = k;
    f->meta_values[f->n_meta] = v;
    f->n_meta++;
    return HS_OK;
}

hs_status hs_field_copy(const hs_field *src, hs_field *dst)
{
    memset(dst, 0, sizeof *dst);
    *dst = *src;
    dst->name = NULL;
    dst->tz = NULL;
    dst->children = NULL;
    dst->n_children = 0;
    dst->meta_keys = NULL;
    dst->meta_values = NULL;
    dst->n_meta = 0;
    dst->name = hs_strdup(src->name ? src->name : "");
    if (!dst->name)
        goto nomem;
    if (src->tz && !(dst->tz = hs_strdup(src->tz)))
        goto nomem;
    if (src->n_children > 0) {
        dst->children = hs_calloc((size_t)src->n_children, sizeof(hs_field));
        if (!dst->children)
            goto nomem;
        for (int i = 0; i < src->n_children; i++) {
            if (hs_field_copy(&src->children[i], &dst->children[i]) != HS_OK)
                goto nomem;
            dst->n_children = i + 1;
        }
    }
    for (int i = 0; i < src->n_meta; i++)
        if (hs_field_set_meta(dst, src->meta_keys[i], src->meta_values[i]) != HS_OK)
            goto nomem;
    return HS_OK;
nomem:
    hs_field_clear(dst);
    return HS_NOMEM;
}

static bool str_eq_nullable(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

bool hs_field_same_type(const hs_field *a, const hs_field *b, bool nested_deep)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case HS_TYPE_DECIMAL128: return a->precision == b->precision && a->scale == b->scale;
    case HS_TYPE_TIMESTAMP: return a->unit == b->unit && (a->tz == NULL) == (b->tz == NULL);
    case HS_TYPE_TIME32:
    case HS_TYPE_TIME64: return a->unit == b->unit;
    case HS_TYPE_FIXED_BINARY: return a->width == b->width;
    case HS_TYPE_FIXED_LIST:
        if (a->width != b->width)
            return false;
        return !nested_deep || hs_field_equals(a, b, false, false);
    case HS_TYPE_LIST:
    case HS_TYPE_STRUCT:
    case HS_TYPE_MAP: return !nested_deep || hs_field_equals(a, b, false, false);
    default: return true;
    }
}

bool hs_field_equals(const hs_field *a, const hs_field *b, bool check_names, bool check_ids)
{
    if (a->type != b->type || a->nullable != b->nullable || a->ext != b->ext)
        return false;
    if (check_names && !str_eq_nullable(a->name ? a->name : "", b->name ? b->name : ""))
        return false;
    if (check_ids && a->field_id != b->field_id)
        return false;
    switch (a->type) {
    case HS_TYPE_DECIMAL128:
        if (a->precision != b->precision || a->scale != b->scale)
            return false;
        break;
    case HS_TYPE_FIXED_BINARY:
    case HS_TYPE_FIXED_LIST:
        if (a->width != b->width)
            return false;
        break;
    case HS_TYPE_TIME32:
    case HS_TYPE_TIME64:
        if (a->unit != b->unit)
            return false;
        break;
    case HS_TYPE_TIMESTAMP:
        if (a->unit != b->unit || !str_eq_nullable(a->tz, b->tz))
            return false;
        break;
    case HS_TYPE_MAP:
        if (a->keys_sorted != b->keys_sorted)
            return false;
        break;
    default:
        break;
    }
    if (a->n_children != b->n_children)
        return false;
    for (int i = 0; i < a->n_children; i++)
        if (!hs_field_equals(&a->children[i], &b->children[i], check_names, check_ids))
            return false;
    return true;
}

int hs_type_width(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_INT8:
    case HS_TYPE_UINT8: return 1;
    case HS_TYPE_INT16:
    case HS_TYPE_UINT16:
    case HS_TYPE_FLOAT16: return 2;
    case HS_TYPE_INT32:
    case HS_TYPE_UINT32:
    case HS_TYPE_FLOAT32:
    case HS_TYPE_DATE32:
    case HS_TYPE_TIME32: return 4;
    case HS_TYPE_INT64:
    case HS_TYPE_UINT64:
    case HS_TYPE_FLOAT64:
    case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: return 8;
    case HS_TYPE_DECIMAL128: case HS_TYPE_INTERVAL: return 16;
    case HS_TYPE_FIXED_BINARY: return f->width > 0 ? f->width : 0;
    default: return 0;
    }
}

static const char *unit_name(hs_time_unit u)
{
    switch (u) {
    case HS_UNIT_SECOND: return "s";
    case HS_UNIT_MILLI: return "ms";
    case HS_UNIT_MICRO: return "us";
    case HS_UNIT_NANO: return "ns";
    }
    return "?";
}

static hs_status format_type(const hs_field *f, hs_buf *out, int depth);

static hs_status format_named(const hs_field *f, hs_buf *out, int depth)
{
    HS_TRY(hs_buf_printf(out, "%s: ", f->name ? f->name : ""));
    HS_TRY(format_type(f, out, depth));
    if (!f->nullable)
        HS_TRY(hs_buf_puts(out, " not null"));
    return HS_OK;
}

static hs_status format_child_type(const hs_field *f, int i, hs_buf *out, int depth)
{
    if (i >= f->n_children)
        return hs_buf_puts(out, "?");
    HS_TRY(format_type(&f->children[i], out, depth + 1));
    if (!f->children[i].nullable)
        HS_TRY(hs_buf_puts(out, " not null"));
    return HS_OK;
}

static hs_status format_type(const hs_field *f, hs_buf *out, int depth)
{
    if (depth > 64)
        return hs_buf_puts(out, "...");
    switch (f->type) {
    case HS_TYPE_DECIMAL128:
        return hs_buf_printf(out, "decimal128(%d, %d)", f->precision, f->scale);
    case HS_TYPE_DATE32:
        return hs_buf_puts(out, "date32[day]");
    case HS_TYPE_TIME32:
    case HS_TYPE_TIME64:
        return hs_buf_printf(out, "%s[%s]", hs_type_name(f->type), unit_name(f->unit));
    case HS_TYPE_TIMESTAMP:
        if (f->tz)
            return hs_buf_printf(out, "timestamp[%s, tz=%s]", unit_name(f->unit), f->tz);
        return hs_buf_printf(out, "timestamp[%s]", unit_name(f->unit));
    case HS_TYPE_FIXED_BINARY:
        if (f->ext == HS_EXT_UUID)
            return hs_buf_puts(out, "uuid");
        return hs_buf_printf(out, "fixed_size_binary[%d]", f->width);
    case HS_TYPE_STRING:
        return hs_buf_puts(out, f->ext == HS_EXT_JSON ? "json" : "string");
    case HS_TYPE_LIST:
        HS_TRY(hs_buf_puts(out, "list<"));
        HS_TRY(format_child_type(f, 0, out, depth));
        return hs_buf_puts(out, ">");
    case HS_TYPE_FIXED_LIST:
        HS_TRY(hs_buf_puts(out, "fixed_size_list<"));
        HS_TRY(format_child_type(f, 0, out, depth));
        return hs_buf_printf(out, ">[%d]", f->width);
    case HS_TYPE_MAP: {
        HS_TRY(hs_buf_puts(out, "map<"));
        const hs_field *e = f->n_children > 0 ? &f->children[0] : NULL;
        if (e && e->n_children == 2) {
            HS_TRY(format_child_type(e, 0, out, depth + 1));
            HS_TRY(hs_buf_puts(out, ", "));
            HS_TRY(format_child_type(e, 1, out, depth + 1));
        } else {
            HS_TRY(hs_buf_puts(out, "?"));
        }
        return hs_buf_puts(out, ">");
    }
    case HS_TYPE_STRUCT:
        HS_TRY(hs_buf_puts(out, "struct<"));
        for (int i = 0; i < f->n_children; i++) {
            if (i > 0)
                HS_TRY(hs_buf_puts(out, ", "));
            HS_TRY(format_named(&f->children[i], out, depth + 1));
        }
        return hs_buf_puts(out, ">");
    default:
        return hs_buf_puts(out, hs_type_name(f->type));
    }
}

hs_status hs_field_format(const hs_field *f, hs_buf *out)
{
    return format_type(f, out, 0);
}
