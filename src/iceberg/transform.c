/*
 * iceberg/transform.c - partition transforms, partition specs and sort orders.
 *
 *   transform     source types                          result   value
 *   -----------   -----------------------------------   ------   --------------------------
 *   identity      any primitive                         source   v
 *   bucket[N]     int long decimal date time timestamp* int      (murmur3_32(ser(v)) & INT_MAX) % N
 *                 string uuid fixed binary
 *   truncate[W]   int long decimal string binary        source   v - (((v % W) + W) % W);
 *                                                                 strings: W code points;
 *                                                                 binary: W bytes
 *   year          date timestamp*                       int      years since 1970 (floor)
 *   month         date timestamp*                       int      months since 1970-01 (floor)
 *   day           date timestamp*                       date     days since 1970-01-01 (floor)
 *   hour          timestamp*                            int      hours since epoch (floor)
 *   void          any                                   source   null
 *
 * Bucket hash input ser(v) (spec Appendix B): int/long/date/time/timestamp as
 * the 8-byte little-endian long (ints widened, so int 34 and long 34 agree;
 * *_ns timestamps are first floor-divided to micros); decimal as its minimal
 * big-endian unscaled bytes; string UTF-8; uuid 16 bytes big-endian;
 * fixed/binary as is.
 *
 * Spec JSON:  {"spec-id": 0, "fields": [{"name": "id_bucket", "transform":
 * "bucket[16]", "source-id": 1, "field-id": 1000}]}
 * Sort order JSON: {"order-id": 1, "fields": [{"transform": "identity",
 * "source-id": 2, "direction": "asc", "null-order": "nulls-first"}]}
 */
#include "iceberg/model_int.h"

#include "base/hash.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ transforms */

hs_status ice_transform_parse(const char *s, ice_transform *out, hs_error *err)
{
    static const struct { const char *name; ice_transform_kind kind; } simple[] = {
        {"identity", ICE_TR_IDENTITY}, {"year", ICE_TR_YEAR}, {"month", ICE_TR_MONTH},
        {"day", ICE_TR_DAY},           {"hour", ICE_TR_HOUR}, {"void", ICE_TR_VOID},
    };
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (strcmp(s, simple[i].name) == 0) {
            out->kind = simple[i].kind;
            return HS_OK;
        }
    }
    const char *arg = NULL;
    if (strncmp(s, "bucket[", 7) == 0) {
        out->kind = ICE_TR_BUCKET;
        arg = s + 7;
    } else if (strncmp(s, "truncate[", 9) == 0) {
        out->kind = ICE_TR_TRUNCATE;
        arg = s + 9;
    }
    if (arg) {
        char *end;
        long v = strtol(arg, &end, 10);
        if (end == arg || *end != ']' || end[1] != '\0' || v <= 0 || v > INT32_MAX)
            return hs_err_set(err, HS_INVALID, "transform \"%s\": parameter must be a positive "
                                               "integer", s);
        out->param = (int32_t)v;
        return HS_OK;
    }
    out->kind = ICE_TR_UNKNOWN;
    snprintf(out->unknown_name, sizeof out->unknown_name, "%s", s);
    return HS_OK;
}

hs_status ice_transform_format(const ice_transform *t, hs_buf *out)
{
    switch (t->kind) {
    case ICE_TR_IDENTITY: return hs_buf_puts(out, "identity");
    case ICE_TR_BUCKET: return hs_buf_printf(out, "bucket[%d]", (int)t->param);
    case ICE_TR_TRUNCATE: return hs_buf_printf(out, "truncate[%d]", (int)t->param);
    case ICE_TR_YEAR: return hs_buf_puts(out, "year");
    case ICE_TR_MONTH: return hs_buf_puts(out, "month");
    case ICE_TR_DAY: return hs_buf_puts(out, "day");
    case ICE_TR_HOUR: return hs_buf_puts(out, "hour");
    case ICE_TR_VOID: return hs_buf_puts(out, "void");
    default: return hs_buf_puts(out, t->unknown_name);
    }
}

static bool is_timestamp(ice_type_id t)
{
    return t == ICE_T_TIMESTAMP || t == ICE_T_TIMESTAMPTZ || t == ICE_T_TIMESTAMP_NS ||
           t == ICE_T_TIMESTAMPTZ_NS;
}

static bool is_ns(ice_type_id t) { return t == ICE_T_TIMESTAMP_NS || t == ICE_T_TIMESTAMPTZ_NS; }

static bool can_apply_type(const ice_transform *t, ice_type_id st)
{
    switch (t->kind) {
    case ICE_TR_IDENTITY: return ice_type_is_primitive(st) && st != ICE_T_UNKNOWN;
    case ICE_TR_VOID:
    case ICE_TR_UNKNOWN: return true;
    case ICE_TR_BUCKET:
        return st == ICE_T_INT || st == ICE_T_LONG || st == ICE_T_DECIMAL || st == ICE_T_DATE ||
               st == ICE_T_TIME || is_timestamp(st) || st == ICE_T_STRING || st == ICE_T_UUID ||
               st == ICE_T_FIXED || st == ICE_T_BINARY;
    case ICE_TR_TRUNCATE:
        return st == ICE_T_INT || st == ICE_T_LONG || st == ICE_T_DECIMAL || st == ICE_T_STRING ||
               st == ICE_T_BINARY;
    case ICE_TR_YEAR:
    case ICE_TR_MONTH:
    case ICE_TR_DAY: return st == ICE_T_DATE || is_timestamp(st);
    case ICE_TR_HOUR: return is_timestamp(st);
    }
    return false;
}

bool ice_transform_can_apply(const ice_transform *t, const hs_field *source)
{
    return can_apply_type(t, ice_type_of(source));
}

hs_status ice_transform_result_type(const ice_transform *t, const hs_field *source, hs_field *out,
                                    hs_error *err)
{
    ice_type_id st = ice_type_of(source);
    if (!can_apply_type(t, st)) {
        hs_buf tb = {0}, sb = {0};
        hs_status s1 = ice_transform_format(t, &tb), s2 = ice_type_to_string(source, &sb);
        hs_err_set(err, HS_INVALID, "transform %s cannot be applied to %s column %s",
                   s1 ? "?" : hs_buf_cstr(&tb), s2 ? "?" : hs_buf_cstr(&sb),
                   source->name ? source->name : "?");
        hs_buf_free(&tb);
        hs_buf_free(&sb);
        return HS_INVALID;
    }
    hs_status s;
    switch (t->kind) {
    case ICE_TR_BUCKET:
    case ICE_TR_YEAR:
    case ICE_TR_MONTH:
    case ICE_TR_HOUR: s = ice_field_set_type(out, ICE_T_INT, 0, 0, 0); break;
    case ICE_TR_DAY: s = ice_field_set_type(out, ICE_T_DATE, 0, 0, 0); break;
    default:
        s = ice_field_set_type(out, st, source->precision, source->scale, source->width);
        break;
    }
    return s ? hs_err_nomem(err, 4) : HS_OK;
}

bool ice_transform_preserves_order(const ice_transform *t)
{
    return t->kind == ICE_TR_IDENTITY || t->kind == ICE_TR_TRUNCATE || t->kind == ICE_TR_YEAR ||
           t->kind == ICE_TR_MONTH || t->kind == ICE_TR_DAY || t->kind == ICE_TR_HOUR;
}

bool ice_transform_equals(const ice_transform *a, const ice_transform *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == ICE_TR_UNKNOWN)
        return strcmp(a->unknown_name, b->unknown_name) == 0;
    return a->param == b->param;
}

int32_t ice_bucket_hash(const ice_value *v)
{
    uint8_t b[16];
    switch (v->type) {
    case ICE_T_INT:
    case ICE_T_LONG:
    case ICE_T_DATE:
    case ICE_T_TIME:
    case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS:
    case ICE_T_TIMESTAMPTZ_NS: {
        int64_t x = is_ns(v->type) ? ice_floor_div(v->v.i, 1000) : v->v.i;
        uint64_t u = (uint64_t)x;
        for (int i = 0; i < 8; i++)
            b[i] = (uint8_t)(u >> (8 * i));
        return (int32_t)hs_murmur3_32(b, 8, 0);
    }
    case ICE_T_DECIMAL: {
        int n = ice_decimal_to_be(ice_value_decimal(v), b);
        return (int32_t)hs_murmur3_32(b, (size_t)n, 0);
    }
    default: return (int32_t)hs_murmur3_32(v->bytes ? v->bytes : b, v->len, 0);
    }
}

/* v - (((v % w) + w) % w), wrapping on overflow as Java's long arithmetic does */
static int64_t trunc_int(int64_t v, int64_t w)
{
    int64_t mod = ((v % w) + w) % w;
    return (int64_t)((uint64_t)v - (uint64_t)mod);
}

static hs_status apply_time(const ice_transform *t, const ice_value *in, ice_value *out)
{
    int64_t days, hours = 0;
    if (in->type == ICE_T_DATE) {
        days = in->v.i;
    } else {
        int64_t us = is_ns(in->type) ? ice_floor_div(in->v.i, 1000) : in->v.i;
        days = ice_floor_div(us, 86400000000LL);
        hours = ice_floor_div(us, 3600000000LL);
    }
    int64_t y;
    unsigned m, d;
    ice_civil_from_days(days, &y, &m, &d);
    switch (t->kind) {
    case ICE_TR_YEAR: ice_value_set_int(out, ICE_T_INT, y - 1970); break;
    case ICE_TR_MONTH: ice_value_set_int(out, ICE_T_INT, (y - 1970) * 12 + (m - 1)); break;
    case ICE_TR_DAY: ice_value_set_int(out, ICE_T_DATE, days); break;
    default: ice_value_set_int(out, ICE_T_INT, hours); break;
    }
    return HS_OK;
}

hs_status ice_transform_apply(const ice_transform *t, const ice_value *in, ice_value *out,
                              hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!can_apply_type(t, in->type) || t->kind == ICE_TR_UNKNOWN) {
        hs_buf tb = {0};
        hs_status s1 = ice_transform_format(t, &tb);
        hs_err_set(err, HS_INVALID, "transform %s cannot be applied to a value of type %d",
                   s1 ? "?" : hs_buf_cstr(&tb), (int)in->type);
        hs_buf_free(&tb);
        return HS_INVALID;
    }
    /* result type of a null input */
    ice_type_id rt = in->type;
    if (t->kind == ICE_TR_BUCKET || t->kind == ICE_TR_YEAR || t->kind == ICE_TR_MONTH ||
        t->kind == ICE_TR_HOUR)
        rt = ICE_T_INT;
    else if (t->kind == ICE_TR_DAY)
        rt = ICE_T_DATE;
    if (in->is_null || t->kind == ICE_TR_VOID) {
        out->type = rt;
        out->is_null = true;
        out->precision = in->precision;
        out->scale = in->scale;
        out->width = in->width;
        return HS_OK;
    }
    switch (t->kind) {
    case ICE_TR_IDENTITY:
        return ice_value_copy(in, out) ? hs_err_nomem(err, in->len) : HS_OK;
    case ICE_TR_BUCKET: {
        uint32_t h = (uint32_t)ice_bucket_hash(in) & INT32_MAX;
        ice_value_set_int(out, ICE_T_INT, (int64_t)(h % (uint32_t)t->param));
        return HS_OK;
    }
    case ICE_TR_TRUNCATE:
        switch (in->type) {
        case ICE_T_INT:
        case ICE_T_LONG:
            *out = *in;
            out->bytes = NULL;
            out->v.i = trunc_int(in->v.i, t->param);
            return HS_OK;
        case ICE_T_DECIMAL: {
            __int128 u = ice_value_decimal(in), w = t->param;
            __int128 r = u - (((u % w) + w) % w);
            return ice_value_set_decimal(out, r, in->precision, in->scale) ? hs_err_nomem(err, 16)
                                                                            : HS_OK;
        }
        default: /* string: code points; binary: bytes */
            return ice_value_truncate_lower(in, t->param, out) ? hs_err_nomem(err, in->len)
                                                                : HS_OK;
        }
    default: return apply_time(t, in, out);
    }
}

/* ------------------------------------------------------ human strings */

hs_status ice_value_to_human(const ice_transform *t, const ice_value *v, hs_buf *out)
{
    char b[96];
    if (v->is_null)
        return hs_buf_puts(out, "null");
    if (t) {
        switch (t->kind) {
        case ICE_TR_YEAR:
            return hs_buf_printf(out, "%04lld", (long long)(1970 + v->v.i));
        case ICE_TR_MONTH: {
            int64_t y = 1970 + ice_floor_div(v->v.i, 12);
            return hs_buf_printf(out, "%04lld-%02d", (long long)y, (int)ice_floor_mod(v->v.i, 12) + 1);
        }
        case ICE_TR_DAY:
            ice_fmt_date(v->v.i, b);
            return hs_buf_puts(out, b);
        case ICE_TR_HOUR: {
            int64_t days = ice_floor_div(v->v.i, 24);
            ice_fmt_date(days, b);
            return hs_buf_printf(out, "%s-%02d", b, (int)ice_floor_mod(v->v.i, 24));
        }
        default: break;
        }
    }
    switch (v->type) {
    case ICE_T_BOOLEAN: return hs_buf_puts(out, v->v.b ? "true" : "false");
    case ICE_T_INT:
    case ICE_T_LONG: return hs_buf_printf(out, "%lld", (long long)v->v.i);
    case ICE_T_FLOAT:
    case ICE_T_DOUBLE: {
        double d = v->type == ICE_T_FLOAT ? (double)v->v.f : v->v.d;
        for (int prec = v->type == ICE_T_FLOAT ? 6 : 15; prec <= 17; prec++) {
            hs_snprintf_c(b, sizeof b, "%.*g", prec, d);
            if (v->type == ICE_T_FLOAT ? hs_strtof(b, NULL) == v->v.f : hs_strtod(b, NULL) == d)
                break;
        }
        HS_TRY(hs_buf_puts(out, b));
        if (!strpbrk(b, ".eni")) /* Java's Double.toString always has a '.' */
            HS_TRY(hs_buf_puts(out, ".0"));
        return HS_OK;
    }
    case ICE_T_DATE: ice_fmt_date(v->v.i, b); return hs_buf_puts(out, b);
    case ICE_T_TIME: {
        char tm[40];
        ice_fmt_time(v->v.i * 1000, -1, tm);
        return hs_buf_puts(out, tm);
    }
    case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS:
    case ICE_T_TIMESTAMPTZ_NS:
        ice_fmt_timestamp(v->v.i, is_ns(v->type), -1, b);
        HS_TRY(hs_buf_puts(out, b));
        if (v->type == ICE_T_TIMESTAMPTZ || v->type == ICE_T_TIMESTAMPTZ_NS)
            HS_TRY(hs_buf_puts(out, "Z"));
        return HS_OK;
    case ICE_T_STRING: return v->len ? hs_buf_append(out, v->bytes, v->len) : HS_OK;
    case ICE_T_UUID:
        if (v->len == 16) {
            ice_fmt_uuid(v->bytes, b);
            return hs_buf_puts(out, b);
        }
        return HS_OK;
    case ICE_T_BINARY:
    case ICE_T_FIXED: return ice_base64_append(out, v->bytes, v->len);
    case ICE_T_DECIMAL: return ice_decimal_append(out, ice_value_decimal(v), v->scale);
    default: return HS_OK;
    }
}

/* java.net.URLEncoder.encode(s, UTF-8) */
static hs_status url_encode(hs_buf *out, const uint8_t *s, size_t n)
{
    static const char hx[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '-' || c == '*' || c == '_') {
            HS_TRY(hs_buf_append_byte(out, c));
        } else if (c == ' ') {
            HS_TRY(hs_buf_append_byte(out, '+'));
        } else {
            char e[3] = {'%', hx[c >> 4], hx[c & 15]};
            HS_TRY(hs_buf_append(out, e, 3));
        }
    }
    return HS_OK;
}

hs_status ice_spec_partition_path(const ice_partition_spec *s, const ice_value *values,
                                  hs_buf *out, hs_error *err)
{
    hs_buf tmp = {0};
    hs_status st = HS_OK;
    for (int i = 0; i < s->n_fields && st == HS_OK; i++) {
        const ice_partition_field *pf = &s->fields[i];
        hs_buf_reset(&tmp);
        if (i > 0)
            st = hs_buf_append_byte(out, '/');
        if (st == HS_OK)
            st = url_encode(out, (const uint8_t *)pf->name, strlen(pf->name));
        if (st == HS_OK)
            st = hs_buf_append_byte(out, '=');
        if (st == HS_OK)
            st = ice_value_to_human(&pf->transform, &values[i], &tmp);
        if (st == HS_OK)
            st = url_encode(out, tmp.data ? tmp.data : (const uint8_t *)"", tmp.len);
    }
    hs_buf_free(&tmp);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

/* ---------------------------------------------------------- partition specs */

void ice_spec_clear(ice_partition_spec *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_fields; i++)
        hs_free(s->fields[i].name);
    hs_free(s->fields);
    memset(s, 0, sizeof *s);
}

hs_status ice_spec_copy(const ice_partition_spec *src, ice_partition_spec *dst)
{
    ice_partition_spec t = {.spec_id = src->spec_id};
    if (src->n_fields) {
        t.fields = hs_calloc((size_t)src->n_fields, sizeof *t.fields);
        if (!t.fields)
            return HS_NOMEM;
    }
    for (int i = 0; i < src->n_fields; i++) {
        t.fields[i] = src->fields[i];
        t.fields[i].name = hs_strdup(src->fields[i].name);
        t.n_fields = i + 1;
        if (!t.fields[i].name) {
            ice_spec_clear(&t);
            return HS_NOMEM;
        }
    }
    *dst = t;
    return HS_OK;
}

static hs_status push_spec_field(ice_partition_spec *s, int32_t source_id, int32_t field_id,
                                 const char *name, const ice_transform *t)
{
    ice_partition_field *f = hs_realloc(s->fields, sizeof *f * (size_t)(s->n_fields + 1));
    if (!f)
        return HS_NOMEM;
    s->fields = f;
    char *nm = hs_strdup(name);
    if (!nm)
        return HS_NOMEM;
    f[s->n_fields].source_id = source_id;
    f[s->n_fields].field_id = field_id;
    f[s->n_fields].name = nm;
    f[s->n_fields].transform = *t;
    s->n_fields++;
    return HS_OK;
}

hs_status ice_spec_add_field(ice_partition_spec *s, const ice_schema *schema, int32_t source_id,
                             const ice_transform *t, const char *name, int32_t field_id,
                             hs_error *err)
{
    const hs_field *src = schema ? ice_schema_find_id(schema, source_id) : NULL;
    if (schema && !src)
        return hs_err_set(err, HS_NOT_FOUND, "partition source column id %d not in schema",
                          (int)source_id);
    if (src && !ice_transform_can_apply(t, src))
        return ice_transform_result_type(t, src, &(hs_field){0}, err); /* sets the message */
    hs_buf nb = {0};
    hs_status st = HS_OK;
    if (!name) {
        hs_buf full = {0};
        const char *col = "col";
        if (schema && ice_schema_name_of(schema, source_id, &full) == HS_OK)
            col = hs_buf_cstr(&full);
        switch (t->kind) {
        case ICE_TR_IDENTITY: st = hs_buf_puts(&nb, col); break;
        case ICE_TR_BUCKET: st = hs_buf_printf(&nb, "%s_bucket", col); break;
        case ICE_TR_TRUNCATE: st = hs_buf_printf(&nb, "%s_trunc", col); break;
        case ICE_TR_YEAR: st = hs_buf_printf(&nb, "%s_year", col); break;
        case ICE_TR_MONTH: st = hs_buf_printf(&nb, "%s_month", col); break;
        case ICE_TR_DAY: st = hs_buf_printf(&nb, "%s_day", col); break;
        case ICE_TR_HOUR: st = hs_buf_printf(&nb, "%s_hour", col); break;
        case ICE_TR_VOID: st = hs_buf_printf(&nb, "%s_null", col); break;
        default: st = hs_buf_printf(&nb, "%s_%s", col, t->unknown_name); break;
        }
        hs_buf_free(&full);
        name = st == HS_OK ? hs_buf_cstr(&nb) : "";
    }
    for (int i = 0; st == HS_OK && i < s->n_fields; i++)
        if (strcmp(s->fields[i].name, name) == 0) {
            hs_err_set(err, HS_INVALID, "partition field name \"%s\" is used twice", name);
            hs_buf_free(&nb);
            return HS_INVALID;
        }
    if (st == HS_OK)
        st = push_spec_field(s, source_id, field_id, name, t);
    hs_buf_free(&nb);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

bool ice_spec_is_unpartitioned(const ice_partition_spec *s)
{
    for (int i = 0; i < s->n_fields; i++)
        if (s->fields[i].transform.kind != ICE_TR_VOID)
            return false;
    return true;
}

bool ice_spec_equals(const ice_partition_spec *a, const ice_partition_spec *b)
{
    if (a->n_fields != b->n_fields)
        return false;
    for (int i = 0; i < a->n_fields; i++) {
        const ice_partition_field *x = &a->fields[i], *y = &b->fields[i];
        if (x->source_id != y->source_id || x->field_id != y->field_id ||
            strcmp(x->name, y->name) != 0 || !ice_transform_equals(&x->transform, &y->transform))
            return false;
    }
    return true;
}

hs_status ice_spec_partition_type(const ice_partition_spec *s, const ice_schema *schema,
                                  hs_field *out, hs_error *err)
{
    hs_field_init(out, "partition", HS_TYPE_STRUCT, false);
    for (int i = 0; i < s->n_fields; i++) {
        const ice_partition_field *pf = &s->fields[i];
        const hs_field *src = ice_schema_find_id(schema, pf->source_id);
        hs_field f;
        hs_field_init(&f, pf->name, HS_TYPE_INT32, true);
        f.field_id = pf->field_id;
        hs_status st;
        if (!src) {
            /* the source column was dropped: Java keeps the field; its values are
             * unknown to us, so type it by the transform where that decides it */
            if (pf->transform.kind == ICE_TR_DAY)
                st = ice_field_set_type(&f, ICE_T_DATE, 0, 0, 0) ? hs_err_nomem(err, 4) : HS_OK;
            else if (pf->transform.kind == ICE_TR_BUCKET || pf->transform.kind == ICE_TR_YEAR ||
                     pf->transform.kind == ICE_TR_MONTH || pf->transform.kind == ICE_TR_HOUR)
                st = HS_OK;
            else
                st = hs_err_set(err, HS_INVALID, "partition field %s: source column id %d is not "
                                                 "in the schema", pf->name, (int)pf->source_id);
        } else {
            st = ice_transform_result_type(&pf->transform, src, &f, err);
        }
        if (st == HS_OK)
            st = hs_field_add_child(out, &f) ? hs_err_nomem(err, 0) : HS_OK;
        if (st != HS_OK) {
            hs_field_clear(&f);
            hs_field_clear(out);
            return st;
        }
    }
    return HS_OK;
}

hs_status ice_spec_validate(const ice_partition_spec *s, const ice_schema *schema, hs_error *err)
{
    for (int i = 0; i < s->n_fields; i++) {
        const ice_partition_field *pf = &s->fields[i];
        const hs_field *src = ice_schema_find_id(schema, pf->source_id);
        if (!src)
            return hs_err_set(err, HS_INVALID, "partition field %s: source column id %d is not in "
                                               "the schema", pf->name, (int)pf->source_id);
        if (!ice_type_is_primitive(ice_type_of(src)))
            return hs_err_set(err, HS_INVALID, "partition field %s: source column %s is not a "
                                               "primitive", pf->name, src->name);
        if (!ice_transform_can_apply(&pf->transform, src))
            return ice_transform_result_type(&pf->transform, src, &(hs_field){0}, err);
        for (int j = 0; j < i; j++)
            if (strcmp(s->fields[j].name, pf->name) == 0)
                return hs_err_set(err, HS_INVALID, "partition field name \"%s\" is used twice",
                                  pf->name);
    }
    return HS_OK;
}

hs_status ice_spec_to_jansson(const ice_partition_spec *s, bool fields_only, json_t **out,
                              hs_error *err)
{
    json_t *arr = json_array();
    hs_buf tb = {0};
    if (!arr)
        return ice_json_nomem(err);
    for (int i = 0; i < s->n_fields; i++) {
        const ice_partition_field *pf = &s->fields[i];
        hs_buf_reset(&tb);
        if (ice_transform_format(&pf->transform, &tb) != HS_OK)
            goto nomem;
        json_t *o = json_pack("{s:s, s:s, s:i, s:i}", "name", pf->name, "transform",
                              hs_buf_cstr(&tb), "source-id", (int)pf->source_id, "field-id",
                              (int)pf->field_id);
        if (!o || json_array_append_new(arr, o))
            goto nomem;
    }
    hs_buf_free(&tb);
    if (fields_only) {
        *out = arr;
        return HS_OK;
    }
    *out = json_pack("{s:i, s:o}", "spec-id", (int)s->spec_id, "fields", arr);
    return *out ? HS_OK : ice_json_nomem(err);
nomem:
    hs_buf_free(&tb);
    json_decref(arr);
    return ice_json_nomem(err);
}

static hs_status json_int32(const json_t *o, const char *key, const char *what, bool required,
                            int32_t dflt, int32_t *out, hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return HS_CORRUPT_AT(err, "%s: required field \"%s\" is missing", what, key);
        *out = dflt;
        return HS_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
        json_integer_value(v) > INT32_MAX)
        return HS_CORRUPT_AT(err, "%s: \"%s\" must be a 32-bit integer", what, key);
    *out = (int32_t)json_integer_value(v);
    return HS_OK;
}

hs_status ice_spec_from_jansson(const json_t *j, int32_t spec_id_if_array, const char *what,
                                ice_partition_spec *out, hs_error *err)
{
    ice_partition_spec s = {.spec_id = spec_id_if_array};
    const json_t *fields = j;
    if (json_is_object(j)) {
        HS_TRY(json_int32(j, "spec-id", what, true, 0, &s.spec_id, err));
        fields = json_object_get(j, "fields");
        if (!fields)
            return HS_CORRUPT_AT(err, "%s: required field \"fields\" is missing", what);
    }
    if (!json_is_array(fields))
        return HS_CORRUPT_AT(err, "%s: partition fields must be an array", what);
    int32_t next_id = ICE_PARTITION_FIELD_ID_START;
    for (size_t i = 0; i < json_array_size(fields); i++) {
        const json_t *f = json_array_get(fields, i);
        char w[96];
        snprintf(w, sizeof w, "%s: fields[%zu]", what, i);
        hs_status st = HS_OK;
        int32_t src = 0, fid = 0;
        const json_t *nm = json_object_get(f, "name"), *tr = json_object_get(f, "transform");
        ice_transform t;
        if (!json_is_object(f))
            st = HS_CORRUPT_AT(err, "%s: must be an object", w);
        else if (!json_is_string(nm))
            st = HS_CORRUPT_AT(err, "%s: required field \"name\" is missing or not a string", w);
        else if (!json_is_string(tr))
            st = HS_CORRUPT_AT(err, "%s: required field \"transform\" is missing or not a string", w);
        if (st == HS_OK && json_object_get(f, "source-id"))
            st = json_int32(f, "source-id", w, true, 0, &src, err);
        else if (st == HS_OK) { /* v3 multi-argument form: take the first source */
            const json_t *ids = json_object_get(f, "source-ids");
            if (!json_is_array(ids) || json_array_size(ids) < 1 ||
                !json_is_integer(json_array_get(ids, 0)))
                st = HS_CORRUPT_AT(err, "%s: required field \"source-id\" is missing", w);
            else
                src = (int32_t)json_integer_value(json_array_get(ids, 0));
        }
        if (st == HS_OK) /* v1 specs may lack field ids: Java assigns 1000, 1001, ... */
            st = json_int32(f, "field-id", w, false, next_id, &fid, err);
        if (st == HS_OK && ice_transform_parse(json_string_value(tr), &t, err) != HS_OK)
            st = HS_CORRUPT_AT(err, "%s: bad transform \"%s\"", w, json_string_value(tr));
        if (st == HS_OK && push_spec_field(&s, src, fid, json_string_value(nm), &t) != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st != HS_OK) {
            ice_spec_clear(&s);
            return st;
        }
        next_id = fid + 1;
    }
    *out = s;
    return HS_OK;
}

hs_status ice_spec_to_json(const ice_partition_spec *s, hs_buf *out, hs_error *err)
{
    json_t *j = NULL;
    HS_TRY(ice_spec_to_jansson(s, false, &j, err));
    hs_status st = ice_json_dump(j, out, false);
    json_decref(j);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

hs_status ice_spec_fields_to_json(const ice_partition_spec *s, hs_buf *out, hs_error *err)
{
    json_t *j = NULL;
    HS_TRY(ice_spec_to_jansson(s, true, &j, err));
    hs_status st = ice_json_dump(j, out, false);
    json_decref(j);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

hs_status ice_spec_parse_json(const char *json, size_t len, int32_t spec_id_if_array,
                              ice_partition_spec *out, hs_error *err)
{
    json_error_t je;
    json_t *j = hs_json_loadb(json, len, 0, &je);
    if (!j)
        return HS_CORRUPT_AT(err, "partition spec JSON: %s (line %d)", je.text, je.line);
    hs_status st = ice_spec_from_jansson(j, spec_id_if_array, "partition spec", out, err);
    json_decref(j);
    return st;
}

/* ------------------------------------------------------------ sort orders */

void ice_sort_order_clear(ice_sort_order *o)
{
    if (!o)
        return;
    hs_free(o->fields);
    memset(o, 0, sizeof *o);
}

hs_status ice_sort_order_copy(const ice_sort_order *src, ice_sort_order *dst)
{
    ice_sort_order t = *src;
    t.fields = NULL;
    if (src->n_fields) {
        t.fields = hs_malloc(sizeof *t.fields * (size_t)src->n_fields);
        if (!t.fields)
            return HS_NOMEM;
        memcpy(t.fields, src->fields, sizeof *t.fields * (size_t)src->n_fields);
    }
    *dst = t;
    return HS_OK;
}

hs_status ice_sort_order_add_field(ice_sort_order *o, int32_t source_id, const ice_transform *t,
                                   ice_sort_direction dir, ice_null_order nulls)
{
    ice_sort_field *f = hs_realloc(o->fields, sizeof *f * (size_t)(o->n_fields + 1));
    if (!f)
        return HS_NOMEM;
    o->fields = f;
    f[o->n_fields].transform = *t;
    f[o->n_fields].source_id = source_id;
    f[o->n_fields].direction = dir;
    f[o->n_fields].null_order = nulls;
    o->n_fields++;
    return HS_OK;
}

bool ice_sort_order_equals(const ice_sort_order *a, const ice_sort_order *b)
{
    if (a->n_fields != b->n_fields)
        return false;
    for (int i = 0; i < a->n_fields; i++) {
        const ice_sort_field *x = &a->fields[i], *y = &b->fields[i];
        if (x->source_id != y->source_id || x->direction != y->direction ||
            x->null_order != y->null_order || !ice_transform_equals(&x->transform, &y->transform))
            return false;
    }
    return true;
}

hs_status ice_sort_order_to_jansson(const ice_sort_order *o, json_t **out, hs_error *err)
{
    json_t *arr = json_array();
    hs_buf tb = {0};
    if (!arr)
        return ice_json_nomem(err);
    for (int i = 0; i < o->n_fields; i++) {
        const ice_sort_field *f = &o->fields[i];
        hs_buf_reset(&tb);
        if (ice_transform_format(&f->transform, &tb) != HS_OK)
            goto nomem;
        json_t *e = json_pack("{s:s, s:i, s:s, s:s}", "transform", hs_buf_cstr(&tb), "source-id",
                              (int)f->source_id, "direction",
                              f->direction == ICE_SORT_DESC ? "desc" : "asc", "null-order",
                              f->null_order == ICE_NULLS_LAST ? "nulls-last" : "nulls-first");
        if (!e || json_array_append_new(arr, e))
            goto nomem;
    }
    hs_buf_free(&tb);
    *out = json_pack("{s:i, s:o}", "order-id", (int)o->order_id, "fields", arr);
    return *out ? HS_OK : ice_json_nomem(err);
nomem:
    hs_buf_free(&tb);
    json_decref(arr);
    return ice_json_nomem(err);
}

hs_status ice_sort_order_from_jansson(const json_t *j, const char *what, ice_sort_order *out,
                                      hs_error *err)
{
    ice_sort_order o = {0};
    if (!json_is_object(j))
        return HS_CORRUPT_AT(err, "%s: must be an object", what);
    HS_TRY(json_int32(j, "order-id", what, true, 0, &o.order_id, err));
    const json_t *fields = json_object_get(j, "fields");
    if (!json_is_array(fields))
        return HS_CORRUPT_AT(err, "%s: required field \"fields\" is missing or not an array", what);
    for (size_t i = 0; i < json_array_size(fields); i++) {
        const json_t *f = json_array_get(fields, i);
        char w[96];
        snprintf(w, sizeof w, "%s: fields[%zu]", what, i);
        int32_t src = 0;
        ice_transform t;
        const json_t *tr = json_object_get(f, "transform");
        const json_t *dir = json_object_get(f, "direction"), *no = json_object_get(f, "null-order");
        hs_status st = HS_OK;
        if (!json_is_object(f) || !json_is_string(tr) || !json_is_string(dir) || !json_is_string(no))
            st = HS_CORRUPT_AT(err, "%s: needs string transform, direction and null-order", w);
        if (st == HS_OK && json_object_get(f, "source-id"))
            st = json_int32(f, "source-id", w, true, 0, &src, err);
        else if (st == HS_OK) {
            const json_t *ids = json_object_get(f, "source-ids");
            if (!json_is_array(ids) || !json_is_integer(json_array_get(ids, 0)))
                st = HS_CORRUPT_AT(err, "%s: required field \"source-id\" is missing", w);
            else
                src = (int32_t)json_integer_value(json_array_get(ids, 0));
        }
        if (st == HS_OK && ice_transform_parse(json_string_value(tr), &t, err) != HS_OK)
            st = HS_CORRUPT_AT(err, "%s: bad transform \"%s\"", w, json_string_value(tr));
        ice_sort_direction d = ICE_SORT_ASC;
        ice_null_order n = ICE_NULLS_FIRST;
        if (st == HS_OK) {
            const char *ds = json_string_value(dir), *ns = json_string_value(no);
            if (strcmp(ds, "desc") == 0)
                d = ICE_SORT_DESC;
            else if (strcmp(ds, "asc") != 0)
                st = HS_CORRUPT_AT(err, "%s: direction \"%s\" is not asc or desc", w, ds);
            if (st == HS_OK && strcmp(ns, "nulls-last") == 0)
                n = ICE_NULLS_LAST;
            else if (st == HS_OK && strcmp(ns, "nulls-first") != 0)
                st = HS_CORRUPT_AT(err, "%s: null-order \"%s\" is not nulls-first or nulls-last",
                                   w, ns);
        }
        if (st == HS_OK && ice_sort_order_add_field(&o, src, &t, d, n) != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st != HS_OK) {
            ice_sort_order_clear(&o);
            return st;
        }
    }
    *out = o;
    return HS_OK;
}

hs_status ice_sort_order_to_json(const ice_sort_order *o, hs_buf *out, hs_error *err)
{
    json_t *j = NULL;
    HS_TRY(ice_sort_order_to_jansson(o, &j, err));
    hs_status st = ice_json_dump(j, out, false);
    json_decref(j);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

hs_status ice_sort_order_parse_json(const char *json, size_t len, ice_sort_order *out,
                                    hs_error *err)
{
    json_error_t je;
    json_t *j = hs_json_loadb(json, len, 0, &je);
    if (!j)
        return HS_CORRUPT_AT(err, "sort order JSON: %s (line %d)", je.text, je.line);
    hs_status st = ice_sort_order_from_jansson(j, "sort order", out, err);
    json_decref(j);
    return st;
}
