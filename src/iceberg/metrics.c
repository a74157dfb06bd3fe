/*
 * iceberg/metrics.c - data-file metrics from a Parquet footer (see metrics.h
 * for what each metric holds and when it is omitted).
 *
 * The footer's schema is walked depth first; its leaves are the column chunks
 * of every row group, in order.  Per leaf we keep the field id, the physical
 * type, and whether a repeated group lies above it (list and map contents:
 * counted, but without bounds, as Java does).  Bounds are kept as ice_values
 * while merging row groups (ice_value_compare orders them as Iceberg does,
 * e.g. strings by unsigned bytes), then truncated and serialized once.
 *
 * Plain encoding -> Iceberg single-value form:
 *   BOOLEAN 1 byte          -> boolean
 *   INT32 4 LE              -> int, date, decimal (unscaled), long (promoted)
 *   INT64 8 LE              -> long, time, timestamp*, decimal
 *   FLOAT / DOUBLE LE       -> float / double (double from float when promoted)
 *   BYTE_ARRAY              -> string, binary, decimal (big-endian unscaled)
 *   FIXED_LEN_BYTE_ARRAY    -> fixed, uuid, decimal
 *   INT96                   -> not converted (no bound)
 */
#include "iceberg/metrics.h"

#include "base/mem.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct leaf {
    int32_t field_id;       /* -1 when absent */
    bool nested;            /* under a repeated group */
    pq_ptype ptype;
} leaf;

static hs_status walk(const pq_file_meta *m, int *pos, bool nested, hs_buf *leaves, int depth,
                      hs_error *err)
{
    if (*pos >= m->n_schema || depth > 64)
        return HS_CORRUPT_AT(err, "parquet schema: element %d out of range", *pos);
    const pq_schema_element *e = &m->schema[(*pos)++];
    bool rep = e->has_repetition && e->repetition == PQ_REPEATED;
    if (e->num_children <= 0) {
        leaf l = {e->has_field_id ? e->field_id : -1, nested || rep, e->type};
        return hs_buf_append(leaves, &l, sizeof l) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    }
    for (int i = 0; i < e->num_children; i++)
        HS_TRY(walk(m, pos, nested || rep, leaves, depth + 1, err));
    return HS_OK;
}

static int64_t le_int(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    if (n == 4)
        return (int64_t)(int32_t)(uint32_t)v;
    return (int64_t)v;
}

static __int128 be_int(const uint8_t *p, size_t n)
{
    __int128 v = (n > 0 && (p[0] & 0x80)) ? -1 : 0;
    for (size_t i = 0; i < n; i++)
        v = (__int128)(((unsigned __int128)v << 8) | p[i]);
    return v;
}

hs_status ice_metrics_plain_to_value(const hs_field *f, pq_ptype ptype, const uint8_t *p, size_t n,
                                     ice_value *out, hs_error *err)
{
    ice_type_id t = ice_type_of(f);
    memset(out, 0, sizeof *out);
    switch (t) {
    case ICE_T_BOOLEAN:
        if (ptype != PQ_BOOLEAN || n < 1)
            break;
        out->type = t;
        out->v.b = p[0] != 0;
        return HS_OK;
    case ICE_T_INT: case ICE_T_DATE:
        if (ptype != PQ_INT32 || n != 4)
            break;
        ice_value_set_int(out, t, le_int(p, 4));
        return HS_OK;
    case ICE_T_LONG: case ICE_T_TIME: case ICE_T_TIMESTAMP: case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS: case ICE_T_TIMESTAMPTZ_NS:
        if (!((ptype == PQ_INT64 && n == 8) || (t == ICE_T_LONG && ptype == PQ_INT32 && n == 4)))
            break;
        ice_value_set_int(out, t, le_int(p, n));
        return HS_OK;
    case ICE_T_FLOAT:
        if (ptype != PQ_FLOAT || n != 4)
            break;
        out->type = t;
        memcpy(&out->v.f, p, 4);
        return HS_OK;
    case ICE_T_DOUBLE:
        out->type = t;
        if (ptype == PQ_DOUBLE && n == 8) {
            memcpy(&out->v.d, p, 8);
            return HS_OK;
        }
        if (ptype == PQ_FLOAT && n == 4) {
            float x;
            memcpy(&x, p, 4);
            out->v.d = x;
            return HS_OK;
        }
        out->type = ICE_T_INVALID;
        break;
    case ICE_T_DECIMAL: {
        __int128 u;
        if (ptype == PQ_INT32 && n == 4)
            u = le_int(p, 4);
        else if (ptype == PQ_INT64 && n == 8)
            u = le_int(p, 8);
        else if ((ptype == PQ_BYTE_ARRAY || ptype == PQ_FIXED_LEN_BYTE_ARRAY) && n >= 1 && n <= 16)
            u = be_int(p, n);
        else
            break;
        if (ice_value_set_decimal(out, u, f->precision, f->scale) != HS_OK)
            return hs_err_nomem(err, 16);
        return HS_OK;
    }
    case ICE_T_STRING: case ICE_T_BINARY: case ICE_T_FIXED: case ICE_T_UUID:
        if (ptype != PQ_BYTE_ARRAY && ptype != PQ_FIXED_LEN_BYTE_ARRAY)
            break;
        if ((t == ICE_T_UUID && n != 16) || (t == ICE_T_FIXED && n != (size_t)f->width))
            break;
        if (ice_value_set_bytes(out, t, p, n) != HS_OK)
            return hs_err_nomem(err, n);
        out->width = f->width;
        return HS_OK;
    default:
        break;
    }
    memset(out, 0, sizeof *out);
    return hs_err_set(err, HS_UNSUPPORTED, "statistics of physical type %d for field %s",
                      (int)ptype, f->name);
}

typedef struct acc {
    int32_t id;
    const hs_field *f;        /* NULL: counts only */
    int64_t size, values, nulls;
    bool nulls_ok;
    bool bounds_ok, has_bounds;
    ice_value lo, hi;
} acc;

static bool is_nan_value(const ice_value *v)
{
    return (v->type == ICE_T_FLOAT && isnan(v->v.f)) || (v->type == ICE_T_DOUBLE && isnan(v->v.d));
}

static hs_status merge_bounds(acc *a, const pq_column_meta *cm, hs_error *err)
{
    if (!a->bounds_ok)
        return HS_OK;
    const pq_statistics *st = &cm->statistics;
    int64_t nulls = cm->has_statistics && st->has_null_count ? st->null_count : -1;
    if (nulls >= 0 && nulls >= cm->num_values)
        return HS_OK;  /* all null: nothing to bound */
    pq_bytes mn = st->min_value, mx = st->max_value;
    bool legacy_ok = cm->type != PQ_BYTE_ARRAY && cm->type != PQ_FIXED_LEN_BYTE_ARRAY;
    if (!mn.p && legacy_ok)
        mn = st->min;
    if (!mx.p && legacy_ok)
        mx = st->max;
    if (!cm->has_statistics || !mn.p || !mx.p) {
        a->bounds_ok = false;
        return HS_OK;
    }
    ice_value lo, hi;
    hs_error ignore = {0};
    hs_status s = ice_metrics_plain_to_value(a->f, cm->type, mn.p, mn.len, &lo, &ignore);
    if (s == HS_NOMEM)
        return hs_err_nomem(err, 0);
    if (s != HS_OK) {
        a->bounds_ok = false;
        return HS_OK;
    }
    s = ice_metrics_plain_to_value(a->f, cm->type, mx.p, mx.len, &hi, &ignore);
    if (s != HS_OK) {
        ice_value_clear(&lo);
        a->bounds_ok = false;
        return s == HS_NOMEM ? hs_err_nomem(err, 0) : HS_OK;
    }
    if (is_nan_value(&lo) || is_nan_value(&hi)) {
        ice_value_clear(&lo);
        ice_value_clear(&hi);
        a->bounds_ok = false;
        return HS_OK;
    }
    if (!a->has_bounds) {
        a->lo = lo;
        a->hi = hi;
        a->has_bounds = true;
        return HS_OK;
    }
    if (ice_value_compare(&lo, &a->lo) < 0) {
        ice_value_clear(&a->lo);
        a->lo = lo;
    } else {
        ice_value_clear(&lo);
    }
    if (ice_value_compare(&hi, &a->hi) > 0) {
        ice_value_clear(&a->hi);
        a->hi = hi;
    } else {
        ice_value_clear(&hi);
    }
    return HS_OK;
}

static hs_status serialize_bound(const ice_value *v, bool upper, hs_arena *arena, ice_id_bytes *out,
                                 bool *ok)
{
    ice_value t;
    hs_status s = upper ? ice_value_truncate_upper(v, ICE_BOUND_TRUNCATE_LEN, &t, ok)
                        : (*ok = true, ice_value_truncate_lower(v, ICE_BOUND_TRUNCATE_LEN, &t));
    if (s != HS_OK)
        return s;
    if (!*ok) {
        ice_value_clear(&t);
        return HS_OK;
    }
    hs_buf b = {0};
    s = ice_value_to_bytes(&t, &b);
    ice_value_clear(&t);
    if (s == HS_OK) {
        uint8_t *p = hs_arena_alloc(arena, b.len ? b.len : 1);
        if (!p)
            s = HS_NOMEM;
        else {
            if (b.len)
                memcpy(p, b.data, b.len);
            out->p = p;
            out->len = (uint32_t)b.len;
        }
    }
    hs_buf_free(&b);
    return s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

hs_status ice_metrics_from_footer(const ice_schema *schema, const pq_file_meta *meta,
                                  const ice_id_long *nan_counts, int n_nan, hs_arena *arena,
                                  ice_data_file *df, hs_error *err)
{
    hs_buf lb = {0};
    int pos = 0;
    hs_status s = HS_OK;
    if (meta->n_schema < 1)
        return HS_CORRUPT_AT(err, "parquet footer has no schema");
    /* the root's children */
    pos = 1;
    for (int i = 0; i < meta->schema[0].num_children && s == HS_OK; i++)
        s = walk(meta, &pos, false, &lb, 1, err);
    int n_leaves = (int)(lb.len / sizeof(leaf));
    const leaf *leaves = (const leaf *)lb.data;
    acc *accs = s == HS_OK ? hs_calloc(n_leaves ? (size_t)n_leaves : 1, sizeof *accs) : NULL;
    if (s == HS_OK && !accs)
        s = hs_err_nomem(err, 0);
    for (int i = 0; i < n_leaves && s == HS_OK; i++) {
        acc *a = &accs[i];
        a->id = leaves[i].field_id;
        const hs_field *f = a->id >= 0 ? ice_schema_find_id(schema, a->id) : NULL;
        if (!f || !ice_type_is_primitive(ice_type_of(f))) {
            a->id = -1;
            continue;
        }
        a->f = f;
        a->nulls_ok = true;
        a->bounds_ok = !leaves[i].nested;
    }
    for (int g = 0; g < meta->n_row_groups && s == HS_OK; g++) {
        const pq_row_group *rg = &meta->row_groups[g];
        if (rg->n_columns != n_leaves) {
            s = HS_CORRUPT_AT(err, "parquet footer: row group %d has %d columns, schema has %d leaves",
                              g, rg->n_columns, n_leaves);
            break;
        }
        for (int i = 0; i < n_leaves && s == HS_OK; i++) {
            acc *a = &accs[i];
            if (a->id < 0)
                continue;
            if (!rg->columns[i].has_meta_data) {
                a->nulls_ok = a->bounds_ok = false;
                continue;
            }
            const pq_column_meta *cm = &rg->columns[i].meta_data;
            a->size += cm->total_compressed_size;
            a->values += cm->num_values;
            if (cm->has_statistics && cm->statistics.has_null_count)
                a->nulls += cm->statistics.null_count;
            else
                a->nulls_ok = false;
            s = merge_bounds(a, cm, err);
        }
    }
    /* emit */
    int n_ids = 0;
    for (int i = 0; i < n_leaves; i++)
        n_ids += accs && accs[i].id >= 0;
    ice_id_long *sizes = NULL, *values = NULL, *nulls = NULL, *nans = NULL;
    ice_id_bytes *lows = NULL, *ups = NULL;
    int64_t *splits = NULL;
    if (s == HS_OK) {
        size_t k = n_ids ? (size_t)n_ids : 1;
        sizes = hs_arena_calloc(arena, k, sizeof *sizes);
        values = hs_arena_calloc(arena, k, sizeof *values);
        nulls = hs_arena_calloc(arena, k, sizeof *nulls);
        lows = hs_arena_calloc(arena, k, sizeof *lows);
        ups = hs_arena_calloc(arena, k, sizeof *ups);
        nans = hs_arena_calloc(arena, n_nan > 0 ? (size_t)n_nan : 1, sizeof *nans);
        splits = hs_arena_calloc(arena, meta->n_row_groups ? (size_t)meta->n_row_groups : 1,
                                 sizeof *splits);
        if (!sizes || !values || !nulls || !lows || !ups || !nans || !splits)
            s = hs_err_nomem(err, 0);
    }
    int n_sz = 0, n_nl = 0, n_lo = 0, n_up = 0;
    for (int i = 0; i < n_leaves && s == HS_OK; i++) {
        acc *a = &accs[i];
        if (a->id < 0)
            continue;
        sizes[n_sz] = (ice_id_long){a->id, a->size};
        values[n_sz++] = (ice_id_long){a->id, a->values};
        if (a->nulls_ok)
            nulls[n_nl++] = (ice_id_long){a->id, a->nulls};
        if (a->bounds_ok && a->has_bounds) {
            bool ok;
            s = serialize_bound(&a->lo, false, arena, &lows[n_lo], &ok);
            if (s == HS_OK && ok)
                lows[n_lo++].id = a->id;
            if (s == HS_OK)
                s = serialize_bound(&a->hi, true, arena, &ups[n_up], &ok);
            if (s == HS_OK && ok)
                ups[n_up++].id = a->id;
            if (s != HS_OK)
                s = hs_err_nomem(err, 0);
        }
    }
    if (s == HS_OK) {
        df->record_count = meta->num_rows;
        df->n_column_sizes = n_sz; df->column_sizes = sizes;
        df->n_value_counts = n_sz; df->value_counts = values;
        df->n_null_value_counts = n_nl; df->null_value_counts = nulls;
        df->n_lower_bounds = n_lo; df->lower_bounds = lows;
        df->n_upper_bounds = n_up; df->upper_bounds = ups;
        df->n_nan_value_counts = 0;
        df->nan_value_counts = nans;
        for (int i = 0; i < n_nan; i++)
            nans[df->n_nan_value_counts++] = nan_counts[i];
        int n_sp = 0;
        for (int g = 0; g < meta->n_row_groups; g++) {
            const pq_row_group *rg = &meta->row_groups[g];
            int64_t off = -1;
            if (rg->has_file_offset && rg->file_offset > 0)
                off = rg->file_offset;
            else if (rg->n_columns > 0 && rg->columns[0].has_meta_data) {
                const pq_column_meta *cm = &rg->columns[0].meta_data;
                off = cm->has_dictionary_page_offset && cm->dictionary_page_offset > 0
                          ? cm->dictionary_page_offset : cm->data_page_offset;
            }
            if (off >= 0)
                splits[n_sp++] = off;
        }
        qsort(splits, (size_t)n_sp, sizeof *splits, cmp_i64);
        df->n_split_offsets = n_sp;
        df->split_offsets = splits;
    }
    for (int i = 0; accs && i < n_leaves; i++) {
        ice_value_clear(&accs[i].lo);
        ice_value_clear(&accs[i].hi);
    }
    hs_free(accs);
    hs_buf_free(&lb);
    return s;
}

hs_status ice_data_file_from_parquet(const char *path, int64_t file_size, const pq_file_meta *meta,
                                     const ice_schema *schema, ice_value *partition, int n_partition,
                                     const ice_id_long *nan_counts, int n_nan, hs_arena *arena,
                                     ice_data_file *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    out->content = ICE_CONTENT_DATA;
    out->file_path = hs_arena_strndup(arena, path, strlen(path));
    if (!out->file_path)
        return hs_err_nomem(err, 0);
    out->file_format = "PARQUET";
    out->file_size_in_bytes = file_size;
    out->n_partition = n_partition;
    out->partition = partition;
    return ice_metrics_from_footer(schema, meta, nan_counts, n_nan, arena, out, err);
}

/* ---- ctypes helper ---- */

static hs_status put_id_longs(hs_buf *b, const char *key, const ice_id_long *m, int n)
{
    hs_status s = hs_buf_printf(b, "\"%s\":{", key);
    for (int i = 0; i < n && s == HS_OK; i++)
        s = hs_buf_printf(b, "%s\"%d\":%lld", i ? "," : "", (int)m[i].id, (long long)m[i].value);
    return s == HS_OK ? hs_buf_puts(b, "}") : s;
}

static hs_status put_id_bytes(hs_buf *b, const char *key, const ice_id_bytes *m, int n)
{
    hs_status s = hs_buf_printf(b, "\"%s\":{", key);
    for (int i = 0; i < n && s == HS_OK; i++) {
        s = hs_buf_printf(b, "%s\"%d\":\"", i ? "," : "", (int)m[i].id);
        for (uint32_t k = 0; k < m[i].len && s == HS_OK; k++)
            s = hs_buf_printf(b, "%02x", m[i].p[k]);
        if (s == HS_OK)
            s = hs_buf_puts(b, "\"");
    }
    return s == HS_OK ? hs_buf_puts(b, "}") : s;
}

char *ice_metrics_debug_json(const char *path, const char *schema_json, hs_error *err)
{
    hs_file *f;
    if (hs_io_open(path, &f, err) != HS_OK)
        return NULL;
    hs_buf tail = {0}, foot = {0}, out = {0};
    hs_arena arena = {0};
    ice_schema schema = {0};
    pq_file_meta meta;
    char *result = NULL;
    hs_status s = f->size >= 12 ? hs_file_read_buf(f, f->size - 8, 8, &tail, err)
                                : HS_CORRUPT_AT(err, "%s: too short for Parquet", path);
    uint32_t flen = 0;
    if (s == HS_OK) {
        flen = (uint32_t)tail.data[0] | (uint32_t)tail.data[1] << 8 | (uint32_t)tail.data[2] << 16 |
               (uint32_t)tail.data[3] << 24;
        if (memcmp(tail.data + 4, "PAR1", 4) != 0 || (uint64_t)flen + 12 > f->size)
            s = HS_CORRUPT_AT(err, "%s: bad Parquet footer", path);
    }
    if (s == HS_OK)
        s = hs_file_read_buf(f, f->size - 8 - flen, flen, &foot, err);
    if (s == HS_OK)
        s = pq_decode_file_meta(foot.data, foot.len, &arena, &meta, err);
    if (s == HS_OK)
        s = ice_schema_parse_json(schema_json, strlen(schema_json), &schema, err);
    ice_data_file df;
    if (s == HS_OK)
        s = ice_data_file_from_parquet(path, (int64_t)f->size, &meta, &schema, NULL, 0, NULL, 0,
                                       &arena, &df, err);
    if (s == HS_OK) {
        hs_status b = hs_buf_printf(&out, "{\"record_count\":%lld,", (long long)df.record_count);
        if (b == HS_OK) b = put_id_longs(&out, "column_sizes", df.column_sizes, df.n_column_sizes);
        if (b == HS_OK) b = hs_buf_puts(&out, ",");
        if (b == HS_OK) b = put_id_longs(&out, "value_counts", df.value_counts, df.n_value_counts);
        if (b == HS_OK) b = hs_buf_puts(&out, ",");
        if (b == HS_OK) b = put_id_longs(&out, "null_value_counts", df.null_value_counts, df.n_null_value_counts);
        if (b == HS_OK) b = hs_buf_puts(&out, ",");
        if (b == HS_OK) b = put_id_bytes(&out, "lower_bounds", df.lower_bounds, df.n_lower_bounds);
        if (b == HS_OK) b = hs_buf_puts(&out, ",");
        if (b == HS_OK) b = put_id_bytes(&out, "upper_bounds", df.upper_bounds, df.n_upper_bounds);
        if (b == HS_OK) b = hs_buf_puts(&out, ",\"split_offsets\":[");
        for (int i = 0; i < df.n_split_offsets && b == HS_OK; i++)
            b = hs_buf_printf(&out, "%s%lld", i ? "," : "", (long long)df.split_offsets[i]);
        if (b == HS_OK) b = hs_buf_puts(&out, "]}");
        if (b == HS_OK)
            result = (char *)hs_buf_detach(&out, NULL);
        else
            hs_err_nomem(err, 0);
    }
    hs_file_close(f);
    hs_buf_free(&tail);
    hs_buf_free(&foot);
    hs_buf_free(&out);
    hs_arena_destroy(&arena);
    ice_schema_clear(&schema);
    return result;
}

void ice_metrics_debug_free(char *s) { hs_free(s); }
