/*
 * table/scan.c - reading a planned scan: data files -> batches of the table
 * schema, merge-on-read of deletes, row lineage, residual filter, projection;
 * and the public hs_scan_* / hs_table_scan entry points.
 *
 * Per data file:
 *
 *   Parquet file --pq_scan--> batch in the FILE's schema (names and types of
 *     (only the top-level      the time it was written, field ids)
 *      columns needed)           |
 *                                | tbl_conform_column per column, by field id:
 *                                |   rename, promote (int->long, float->double,
 *                                |   decimal), add missing nested fields as
 *                                v   null, drop removed ones
 *                             batch in the READ schema = projected columns +
 *                               columns only the filter needs + metadata
 *                               columns (_row_id, _last_updated_sequence_number,
 *                               _file, _pos) computed from the file position
 *                                |
 *                                | selection = not deleted (roaring bitmap of
 *                                |   positions from position deletes and DVs)
 *                                |   AND filter (three-valued, exact)
 *                                v
 *                             rows taken (hs_col_take) when some are dropped,
 *                             then the extra filter columns are cut off
 *
 * Row lineage (v3, spec "Row Lineage"): a row's _row_id is the value stored
 * in the file when not null, else the data file's first_row_id + its
 * position; _last_updated_sequence_number is the stored value when not
 * null, else the file's data sequence number.  Files without first_row_id
 * (written before an upgrade to v3 and not yet assigned) read null for both.
 *
 * Ownership: an hs_scan owns a copy of the table metadata, so the table
 * handle may be closed while a scan or its stream is alive.
 */
#include "table/table_int.h"

#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/jsonl.h"
#include "io/io.h"
#include "parquet/reader.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* conformance                                                         */

static hs_status null_column(const hs_field *f, int64_t n, hs_column **out, hs_error *err)
{
    HS_TRY(hs_col_create(f, n, out, err));
    hs_status st = hs_col_append_nulls(*out, n);
    if (st != HS_OK) {
        hs_col_free(*out);
        *out = NULL;
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

/* One value of a primitive ice_value appended to c (a column of f's type). */
static hs_status append_ice_value(const hs_field *f, hs_column *c, const ice_value *v)
{
    switch (f->type) {
    case HS_TYPE_BOOL: { uint8_t b = v->v.b; return hs_col_append_fixed(c, &b); }
    case HS_TYPE_INT32:
    case HS_TYPE_DATE32: { int32_t x = (int32_t)v->v.i; return hs_col_append_fixed(c, &x); }
    case HS_TYPE_INT64:
    case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: return hs_col_append_fixed(c, &v->v.i);
    case HS_TYPE_FLOAT32: return hs_col_append_fixed(c, &v->v.f);
    case HS_TYPE_FLOAT64: return hs_col_append_fixed(c, &v->v.d);
    case HS_TYPE_STRING:
    case HS_TYPE_BINARY:
    case HS_TYPE_FIXED_BINARY: return hs_col_append_bytes(c, v->bytes, v->len);
    case HS_TYPE_DECIMAL128: {
        __int128 x = ice_value_decimal(v);
        return hs_col_append_fixed(c, &x);
    }
    default: return HS_UNSUPPORTED;
    }
}

/* The column of a field that a data file lacks, or that rows being written
 * lack: the field's v3 default under `key` ("iceberg.initial-default" when
 * reading: the value for rows written before the field was added;
 * "iceberg.write-default" when writing) for primitive fields, else nulls. */
static hs_status missing_column(const hs_field *f, const char *key, int64_t n, hs_column **out,
                                hs_error *err)
{
    const char *dj = hs_field_get_meta(f, key);
    if (!dj || strcmp(dj, "null") == 0)
        return null_column(f, n, out, err);
    ice_value v;
    memset(&v, 0, sizeof v);
    HS_TRY(ice_value_from_json(f, dj, strlen(dj), &v, err));
    hs_status st = v.is_null ? HS_OK : hs_col_create(f, n, out, err);
    for (int64_t i = 0; st == HS_OK && !v.is_null && i < n; i++)
        st = append_ice_value(f, *out, &v);
    ice_value_clear(&v);
    if (v.is_null)
        return null_column(f, n, out, err);
    if (st != HS_OK) {
        hs_col_free(*out);
        *out = NULL;
        if (st == HS_UNSUPPORTED)
            return null_column(f, n, out, err);  /* nested defaults: not applied */
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

static int64_t unit_mul(hs_time_unit from, hs_time_unit to, bool *div)
{
    static const int64_t per_s[] = {1, 1000, 1000000, 1000000000};
    *div = per_s[from] > per_s[to];
    return *div ? per_s[from] / per_s[to] : per_s[to] / per_s[from];
}

/* Primitive casts row by row (rare paths: promotions and Arrow input). */
static hs_status cast_column(const hs_field *from, hs_column *c, const hs_field *to,
                             hs_column **out, hs_error *err)
{
    tbl_vkind fk = tbl_kind_of(from), tk = tbl_kind_of(to);
    bool ok = (fk == TBL_V_I64 && (tk == TBL_V_I64 || tk == TBL_V_F64)) ||
              (fk == TBL_V_F64 && tk == TBL_V_F64) ||
              (fk == TBL_V_I128 && tk == TBL_V_I128 && from->scale == to->scale);
    if (from->type == HS_TYPE_BOOL && to->type != HS_TYPE_BOOL)
        ok = false;
    if (to->type == HS_TYPE_BOOL && from->type != HS_TYPE_BOOL)
        ok = false;
    if ((from->type == HS_TYPE_DATE32) != (to->type == HS_TYPE_DATE32))
        ok = false;
    if (!ok) {
        hs_col_free(c);
        return hs_err_set(err, HS_INVALID, "column \"%s\": cannot read %s as %s", to->name,
                          hs_type_name(from->type), hs_type_name(to->type));
    }
    int64_t n = c->length;
    hs_column *r = NULL;
    hs_status st = hs_col_create(to, n, &r, err);
    bool div = false;
    int64_t mul = 1;
    bool timed = (from->type == HS_TYPE_TIMESTAMP && to->type == HS_TYPE_TIMESTAMP) ||
                 ((from->type == HS_TYPE_TIME32 || from->type == HS_TYPE_TIME64) &&
                  to->type == HS_TYPE_TIME64);
    if (timed)
        mul = unit_mul(from->unit, to->unit, &div);
    int w = hs_type_width(to);
    for (int64_t i = 0; st == HS_OK && i < n; i++) {
        tbl_val v;
        if (!tbl_val_get(from, c, i, &v)) {
            st = hs_col_append_null(r);
            continue;
        }
        uint8_t buf[16] = {0};
        if (tk == TBL_V_I64) {
            int64_t x = v.i;
            if (timed)
                x = div ? (x >= 0 ? x / mul : -((-x + mul - 1) / mul)) : x * mul;
            if (w == 4) {
                int32_t y = (int32_t)x;
                memcpy(buf, &y, 4);
            } else {
                memcpy(buf, &x, 8);
            }
        } else if (tk == TBL_V_F64) {
            double x = v.kind == TBL_V_F64 ? v.f : (double)v.i;
            if (w == 4) {
                float y = (float)x;
                memcpy(buf, &y, 4);
            } else {
                memcpy(buf, &x, 8);
            }
        } else {
            memcpy(buf, &v.d, 16);
        }
        st = hs_col_append_fixed(r, buf);
    }
    hs_col_free(c);
    if (st != HS_OK) {
        hs_col_free(r);
        return st == HS_NOMEM ? hs_err_nomem(err, (size_t)n) : st;
    }
    *out = r;
    return HS_OK;
}

static int match_child(const hs_field *from, const hs_field *want, bool by_name)
{
    if (!by_name) {
        for (int k = 0; k < from->n_children; k++)
            if (from->children[k].field_id == want->field_id && want->field_id >= 0)
                return k;
        return -1;
    }
    for (int k = 0; k < from->n_children; k++)
        if (strcmp(from->children[k].name, want->name) == 0)
            return k;
    for (int k = 0; k < from->n_children; k++)
        if (strcasecmp(from->children[k].name, want->name) == 0)
            return k;
    return -1;
}

static bool same_physical(const hs_field *a, const hs_field *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case HS_TYPE_TIMESTAMP: case HS_TYPE_TIME32: case HS_TYPE_TIME64:
        return a->unit == b->unit;
    case HS_TYPE_FIXED_BINARY:
        return a->width == b->width;
    case HS_TYPE_DECIMAL128:
        return a->scale == b->scale;
    default:
        return true;
    }
}

/* Turns a FIXED_LIST column into a LIST in place: offsets i * width, and the
 * elements under null rows dropped (our LIST invariant: null rows are empty). */
static hs_status fixed_list_to_list(hs_column *c, hs_error *err)
{
    int64_t w = c->width, n = c->length;
    if (c->n_children != 1 || w < 0 || n > INT32_MAX / (w ? w : 1))
        return hs_err_set(err, HS_INVALID, "fixed_size_list column too large for a list");
    int32_t *off = hs_malloc_aligned((size_t)(n + 1) * sizeof(int32_t));
    if (!off)
        return hs_err_nomem(err, (size_t)(n + 1) * sizeof(int32_t));
    if (c->null_count > 0) {
        int64_t *idx = hs_malloc((size_t)(n * w + 1) * sizeof(int64_t));
        if (!idx) {
            hs_free_aligned(off);
            return hs_err_nomem(err, (size_t)(n * w) * sizeof(int64_t));
        }
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) {
            off[i] = (int32_t)k;
            if (hs_col_is_valid(c, i))
                for (int64_t j = 0; j < w; j++)
                    idx[k++] = i * w + j;
        }
        off[n] = (int32_t)k;
        hs_column *child = NULL;
        hs_status st = hs_col_take(c->children[0], idx, k, &child, err);
        hs_free(idx);
        if (st != HS_OK) {
            hs_free_aligned(off);
            return st;
        }
        hs_col_free(c->children[0]);
        c->children[0] = child;
    } else {
        for (int64_t i = 0; i <= n; i++)
            off[i] = (int32_t)(i * w);
    }
    c->offsets.data = (uint8_t *)off;
    c->offsets.len = c->offsets.cap = (size_t)(n + 1) * sizeof(int32_t);
    c->type = HS_TYPE_LIST;
    c->width = 0;
    return HS_OK;
}

hs_status tbl_conform_column(const hs_field *from, hs_column *c, const hs_field *to, bool by_name,
                             hs_column **out, hs_error *err)
{
    *out = NULL;
    if (to->type == HS_TYPE_STRUCT) {
        if (from->type != HS_TYPE_STRUCT) {
            hs_col_free(c);
            return hs_err_set(err, HS_INVALID, "column \"%s\": expected a struct, got %s",
                              to->name, hs_type_name(from->type));
        }
        hs_column **kids = hs_calloc((size_t)to->n_children + 1, sizeof *kids);
        if (!kids) {
            hs_col_free(c);
            return hs_err_nomem(err, sizeof *kids);
        }
        hs_status st = HS_OK;
        for (int i = 0; i < to->n_children && st == HS_OK; i++) {
            const hs_field *tf = &to->children[i];
            int k = match_child(from, tf, by_name);
            if (k >= 0 && k < c->n_children && c->children[k]) {
                hs_column *child = c->children[k];
                c->children[k] = NULL;
                st = tbl_conform_column(&from->children[k], child, tf, by_name, &kids[i], err);
            } else if (!tf->nullable && by_name && !hs_field_get_meta(tf, "iceberg.write-default")) {
                st = hs_err_set(err, HS_INVALID, "required field \"%s\" is missing", tf->name);
            } else {
                /* by_name: rows being appended; else a data file being read */
                st = missing_column(tf, by_name ? "iceberg.write-default" : "iceberg.initial-default",
                                    c->length, &kids[i], err);
            }
        }
        if (st != HS_OK) {
            for (int i = 0; i < to->n_children; i++)
                hs_col_free(kids[i]);
            hs_free(kids);
            hs_col_free(c);
            return st;
        }
        if (by_name)
            for (int k = 0; k < c->n_children; k++)
                if (c->children[k]) {
                    st = hs_err_set(err, HS_INVALID, "field \"%s\" is not in the table schema",
                                    from->children[k].name);
                    break;
                }
        for (int k = 0; k < c->n_children; k++)
            hs_col_free(c->children[k]);
        hs_free(c->children);
        c->children = kids;
        c->n_children = to->n_children;
        if (st != HS_OK) {
            hs_col_free(c);
            return st;
        }
        *out = c;
        return HS_OK;
    }
    if (to->type == HS_TYPE_LIST && from->type == HS_TYPE_FIXED_LIST) {
        /* Iceberg has no fixed-size list: an embedding column arrives as
         * fixed_size_list<float>[d] and is stored as list<float>. */
        hs_status st = fixed_list_to_list(c, err);
        if (st != HS_OK) {
            hs_col_free(c);
            return st;
        }
        hs_field as_list = *from;
        as_list.type = HS_TYPE_LIST;
        as_list.width = 0;
        return tbl_conform_column(&as_list, c, to, by_name, out, err);
    }
    if (to->type == HS_TYPE_LIST || to->type == HS_TYPE_MAP) {
        if (from->type != to->type || c->n_children != 1 || from->n_children != 1) {
            hs_col_free(c);
            return hs_err_set(err, HS_INVALID, "column \"%s\": expected %s, got %s", to->name,
                              hs_type_name(to->type), hs_type_name(from->type));
        }
        hs_column *child = c->children[0];
        c->children[0] = NULL;
        hs_status st = tbl_conform_column(&from->children[0], child, &to->children[0], by_name,
                                          &c->children[0], err);
        if (st != HS_OK) {
            hs_col_free(c);
            return st;
        }
        *out = c;
        return HS_OK;
    }
    if (same_physical(from, to) ||
        (from->type == HS_TYPE_NA && to->type == HS_TYPE_NA)) {
        *out = c;
        return HS_OK;
    }
    if (from->type == HS_TYPE_NA) {
        int64_t n = c->length;
        hs_col_free(c);
        return null_column(to, n, out, err);
    }
    return cast_column(from, c, to, out, err);
}

hs_status tbl_batch_from_cols(const hs_field *schema, hs_column **cols, int n, int64_t n_rows,
                              hs_batch **out, hs_error *err)
{
    *out = NULL;
    hs_batch *b = hs_calloc(1, sizeof *b);
    hs_status st = b ? HS_OK : HS_NOMEM;
    if (st == HS_OK && hs_field_copy(schema, &b->schema) != HS_OK)
        st = HS_NOMEM;
    if (st == HS_OK && n > 0 && !(b->cols = hs_calloc((size_t)n, sizeof(hs_column *))))
        st = HS_NOMEM;
    if (st != HS_OK) {
        for (int i = 0; i < n; i++)
            hs_col_free(cols[i]);
        hs_batch_free(b);
        return hs_err_nomem(err, sizeof *b);
    }
    for (int i = 0; i < n; i++)
        b->cols[i] = cols[i];
    b->n_cols = n;
    b->n_rows = n_rows;
    *out = b;
    return HS_OK;
}

hs_status tbl_conform_batch(hs_batch *b, const hs_field *schema, bool by_name, hs_batch **out,
                            hs_error *err)
{
    *out = NULL;
    /* treat the batch as one struct column */
    hs_column root = {.type = HS_TYPE_STRUCT, .length = b->n_rows, .n_children = b->n_cols,
                      .children = b->cols};
    hs_column *rc = hs_calloc(1, sizeof *rc);
    if (!rc) {
        hs_batch_free(b);
        return hs_err_nomem(err, sizeof *rc);
    }
    *rc = root;
    hs_field from = b->schema;
    int64_t n_rows = b->n_rows;
    b->cols = NULL;
    b->n_cols = 0;
    hs_column *res = NULL;
    hs_status st = tbl_conform_column(&from, rc, schema, by_name, &res, err);
    hs_batch_free(b); /* frees the schema `from` pointed to (no longer used) */
    if (st != HS_OK)
        return st;
    st = tbl_batch_from_cols(schema, res->children, res->n_children, n_rows, out, err);
    hs_free(res->children);  /* the pointers moved into the batch */
    res->children = NULL;
    res->n_children = 0;
    hs_col_free(res);
    return st;
}

/* ------------------------------------------------------------------ */
/* reading one data file                                               */

static bool is_meta_id(int32_t id)
{
    return id == ICE_FIELD_ID_ROW_ID || id == ICE_FIELD_ID_LAST_UPDATED_SEQ ||
           id == ICE_FIELD_ID_FILE_PATH || id == ICE_FIELD_ID_POS;
}

static int file_col_by_id(const hs_field *fs, const hs_field *want)
{
    for (int k = 0; k < fs->n_children; k++)
        if (fs->children[k].field_id == want->field_id)
            return k;
    return -1;
}

static bool file_has_ids(const hs_field *fs)
{
    for (int k = 0; k < fs->n_children; k++)
        if (fs->children[k].field_id >= 0)
            return true;
    return false;
}

static hs_status meta_column(const tbl_plan_file *pf, const hs_field *f, const hs_column *stored,
                             int64_t pos0, int64_t n, hs_column **out, hs_error *err)
{
    HS_TRY(hs_col_create(f, n, out, err));
    hs_column *c = *out;
    hs_status st = HS_OK;
    if (f->field_id == ICE_FIELD_ID_FILE_PATH) {
        size_t len = strlen(pf->path);
        for (int64_t i = 0; i < n && st == HS_OK; i++)
            st = hs_col_append_bytes(c, pf->path, len);
    } else if (f->field_id == ICE_FIELD_ID_POS) {
        for (int64_t i = 0; i < n && st == HS_OK; i++) {
            int64_t v = pos0 + i;
            st = hs_col_append_fixed(c, &v);
        }
    } else {
        bool row_id = f->field_id == ICE_FIELD_ID_ROW_ID;
        for (int64_t i = 0; i < n && st == HS_OK; i++) {
            if (stored && stored->type == HS_TYPE_INT64 && hs_col_is_valid(stored, i)) {
                st = hs_col_append_fixed(c, &HS_COL_VALUES(stored, int64_t)[i]);
                continue;
            }
            if (!pf->has_first_row_id) {
                st = hs_col_append_null(c);
                continue;
            }
            int64_t v = row_id ? pf->first_row_id + pos0 + i : pf->data_seq;
            st = hs_col_append_fixed(c, &v);
        }
    }
    if (st != HS_OK) {
        hs_col_free(c);
        *out = NULL;
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

hs_status tbl_read_file(const tbl_plan_file *pf, const hs_field *rs, const tbl_filter *filter,
                        int64_t batch_size, tbl_emit_fn emit, void *ctx,
                        roaring_bitmap_t **positions_out, int64_t *rows_deleted, hs_error *err)
{
    if (positions_out)
        *positions_out = NULL;
    hs_file *f = NULL;
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    roaring_bitmap_t *del = NULL, *hits = NULL;
    int *src = NULL, *cols = NULL;
    uint8_t *sel = NULL;
    int64_t *idx = NULL;
    size_t cap = 0;
    int n_cols = 0;
    hs_status st = hs_local_open(tbl_local(pf->path), &f, err);
    if (st == HS_OK) {
        st = pq_reader_open(f, &r, err);
        if (st != HS_OK)
            hs_err_prefix(err, "%s", pf->path);
    }
    if (st == HS_OK)
        st = tbl_plan_load_deletes(pf, &del, err);
    if (st == HS_OK && positions_out && !(hits = roaring_bitmap_create()))
        st = hs_err_nomem(err, 64);
    const hs_field *fs = r ? pq_reader_schema(r) : NULL;
    int n = rs->n_children;
    /* src[i]: index into the scan's columns of read column i, or -1 */
    if (st == HS_OK) {
        src = hs_calloc((size_t)n + 2, sizeof *src);
        cols = hs_calloc((size_t)n + 2, sizeof *cols);
        if (!src || !cols)
            st = hs_err_nomem(err, (size_t)n);
    }
    bool ids = fs && file_has_ids(fs);
    int stored_row_id = -1, stored_seq = -1;
    for (int i = 0; st == HS_OK && i < n; i++) {
        const hs_field *want = &rs->children[i];
        int k;
        if (is_meta_id(want->field_id)) {
            src[i] = -1;
            if (want->field_id != ICE_FIELD_ID_ROW_ID && want->field_id != ICE_FIELD_ID_LAST_UPDATED_SEQ)
                continue;
            k = file_col_by_id(fs, want);
        } else {
            k = ids ? file_col_by_id(fs, want) : match_child(fs, want, true);
        }
        if (k < 0) {
            src[i] = -1;
            continue;
        }
        int at = -1;
        for (int j = 0; j < n_cols; j++)
            if (cols[j] == k)
                at = j;
        if (at < 0) {
            at = n_cols;
            cols[n_cols++] = k;
        }
        if (want->field_id == ICE_FIELD_ID_ROW_ID)
            stored_row_id = at;
        else if (want->field_id == ICE_FIELD_ID_LAST_UPDATED_SEQ)
            stored_seq = at;
        else
            src[i] = at;
    }
    if (st == HS_OK) {
        int dummy = 0;
        pq_scan_options so = {.columns = n_cols ? cols : &dummy, .n_columns = n_cols,
                              .batch_size = batch_size};
        if (n_cols == 0) {
            /* no stored column is needed (counts, metadata columns): read the
             * narrowest column to learn the row count per batch */
            so.n_columns = fs->n_children ? 1 : 0;
        }
        st = pq_scan_open(r, &so, &s, err);
        if (st != HS_OK)
            hs_err_prefix(err, "%s", pf->path);
    }
    int64_t pos0 = 0;
    while (st == HS_OK) {
        hs_batch *fb = NULL;
        st = pq_scan_next(s, &fb, err);
        if (st != HS_OK) {
            hs_err_prefix(err, "%s", pf->path);
            break;
        }
        if (!fb)
            break;
        int64_t rows = fb->n_rows;
        hs_column **out = hs_calloc((size_t)n + 1, sizeof *out);
        if (!out) {
            hs_batch_free(fb);
            st = hs_err_nomem(err, (size_t)n);
            break;
        }
        for (int i = 0; i < n && st == HS_OK; i++) {
            const hs_field *want = &rs->children[i];
            if (is_meta_id(want->field_id)) {
                const hs_column *stored = NULL;
                if (want->field_id == ICE_FIELD_ID_ROW_ID && stored_row_id >= 0)
                    stored = fb->cols[stored_row_id];
                if (want->field_id == ICE_FIELD_ID_LAST_UPDATED_SEQ && stored_seq >= 0)
                    stored = fb->cols[stored_seq];
                st = meta_column(pf, want, stored, pos0, rows, &out[i], err);
            } else if (src[i] >= 0 && fb->cols[src[i]]) {
                int k = src[i];
                hs_column *c = fb->cols[k];
                fb->cols[k] = NULL;
                /* a column read twice (projected and also meta) is not possible: ids differ */
                st = tbl_conform_column(&fb->schema.children[k], c, want, !ids, &out[i], err);
                if (st != HS_OK)
                    hs_err_prefix(err, "%s", pf->path);
            } else {
                st = missing_column(want, "iceberg.initial-default", rows, &out[i], err);
            }
        }
        hs_batch_free(fb);
        hs_batch *b = NULL;
        if (st == HS_OK)
            st = tbl_batch_from_cols(rs, out, n, rows, &b, err);
        else
            for (int i = 0; i < n; i++)
                hs_col_free(out[i]);
        hs_free(out);
        if (st != HS_OK)
            break;
        /* selection */
        if ((size_t)rows > cap) {
            hs_free(sel);
            hs_free(idx);
            cap = (size_t)rows;
            sel = hs_malloc(cap + 1);
            idx = hs_malloc((cap + 1) * sizeof *idx);
            if (!sel || !idx) {
                hs_batch_free(b);
                st = hs_err_nomem(err, cap);
                break;
            }
        }
        int64_t n_match = rows;
        if (filter && !tbl_filter_is_true(filter))
            st = tbl_filter_eval(filter, b, sel, &n_match, err);
        else if (rows)
            memset(sel, 1, (size_t)rows);
        if (st != HS_OK) {
            hs_batch_free(b);
            break;
        }
        int64_t m = 0;
        for (int64_t i = 0; i < rows; i++) {
            if (del && roaring_bitmap_contains(del, (uint32_t)(pos0 + i))) {
                if (rows_deleted)
                    (*rows_deleted)++;
                continue;
            }
            if (sel[i]) {
                idx[m++] = i;
                if (hits)
                    roaring_bitmap_add(hits, (uint32_t)(pos0 + i));
            }
        }
        pos0 += rows;
        if (!emit || m == 0) {
            hs_batch_free(b);
            continue;
        }
        if (m < rows) {
            for (int i = 0; i < b->n_cols && st == HS_OK; i++) {
                hs_column *t = NULL;
                st = hs_col_take(b->cols[i], idx, m, &t, err);
                if (st == HS_OK) {
                    hs_col_free(b->cols[i]);
                    b->cols[i] = t;
                }
            }
            b->n_rows = m;
        }
        if (st == HS_OK)
            st = emit(ctx, b, err);
        else
            hs_batch_free(b);
    }
    hs_free(sel);
    hs_free(idx);
    hs_free(src);
    hs_free(cols);
    pq_scan_close(s);
    pq_reader_close(r);
    hs_file_close(f);
    tbl_bitmap_free(del);
    if (st == HS_OK && positions_out)
        *positions_out = hits;
    else
        tbl_bitmap_free(hits);
    return st;
}

/* ------------------------------------------------------------------ */
/* public scans                                                        */

struct hs_scan {
    ice_table_metadata meta;   /* copy: the plan borrows from it */
    tbl_plan *plan;
    hs_field read_schema;      /* output columns first, then filter-only columns */
    hs_field out_schema;
    int n_out;
    int64_t batch_size;
    int next_file;
    hs_batch **queue;          /* batches of the current file */
    int q_len, q_pos, q_cap;
};

static void scan_clear_queue(hs_scan *s)
{
    for (int i = s->q_pos; i < s->q_len; i++)
        hs_batch_free(s->queue[i]);
    s->q_len = s->q_pos = 0;
}

void hs_scan_free(hs_scan *s)
{
    if (!s)
        return;
    scan_clear_queue(s);
    hs_free(s->queue);
    tbl_plan_free(s->plan);
    hs_field_clear(&s->read_schema);
    hs_field_clear(&s->out_schema);
    ice_metadata_free(&s->meta);
    hs_free(s);
}

static hs_status add_meta_field(hs_field *schema, const char *name, int32_t id, hs_type type,
                                hs_error *err)
{
    for (int i = 0; i < schema->n_children; i++)
        if (schema->children[i].field_id == id)
            return HS_OK;
    hs_field f;
    hs_field_init(&f, name, type, true);
    f.field_id = id;
    if (hs_field_add_child(schema, &f) != HS_OK) {
        hs_field_clear(&f);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

static bool contains_id(const hs_field *f, int32_t id)
{
    if (f->field_id == id)
        return true;
    for (int i = 0; i < f->n_children; i++)
        if (contains_id(&f->children[i], id))
            return true;
    return false;
}

static int top_index_of_id(const hs_field *root, int32_t id)
{
    for (int i = 0; i < root->n_children; i++)
        if (contains_id(&root->children[i], id))
            return i;
    return -1;
}

static hs_status add_column(hs_field *rs, const hs_field *f, hs_error *err)
{
    for (int i = 0; i < rs->n_children; i++)
        if (rs->children[i].field_id == f->field_id)
            return HS_OK;
    hs_field copy = {0};
    if (hs_field_copy(f, &copy) != HS_OK || hs_field_add_child(rs, &copy) != HS_OK) {
        hs_field_clear(&copy);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

static hs_status build_schemas(hs_scan *s, const ice_schema *sc, const hs_scan_options *o,
                               hs_error *err)
{
    hs_field_init(&s->read_schema, "", HS_TYPE_STRUCT, false);
    hs_field *rs = &s->read_schema;
    if (o && o->columns) {
        for (int i = 0; i < o->n_columns; i++) {
            const char *nm = o->columns[i];
            if (!nm)
                return hs_err_set(err, HS_INVALID, "scan: column %d is NULL", i);
            if (strcmp(nm, "_row_id") == 0)
                HS_TRY(add_meta_field(rs, "_row_id", ICE_FIELD_ID_ROW_ID, HS_TYPE_INT64, err));
            else if (strcmp(nm, "_last_updated_sequence_number") == 0)
                HS_TRY(add_meta_field(rs, nm, ICE_FIELD_ID_LAST_UPDATED_SEQ, HS_TYPE_INT64, err));
            else if (strcmp(nm, "_file") == 0)
                HS_TRY(add_meta_field(rs, nm, ICE_FIELD_ID_FILE_PATH, HS_TYPE_STRING, err));
            else if (strcmp(nm, "_pos") == 0)
                HS_TRY(add_meta_field(rs, nm, ICE_FIELD_ID_POS, HS_TYPE_INT64, err));
            else {
                const hs_field *f = NULL;
                for (int k = 0; k < sc->root.n_children && !f; k++)
                    if (strcmp(sc->root.children[k].name, nm) == 0)
                        f = &sc->root.children[k];
                for (int k = 0; k < sc->root.n_children && !f; k++)
                    if (strcasecmp(sc->root.children[k].name, nm) == 0)
                        f = &sc->root.children[k];
                if (!f)
                    return hs_err_set(err, HS_NOT_FOUND, "scan: no column \"%s\" in the table "
                                      "schema", nm);
                HS_TRY(add_column(rs, f, err));
            }
        }
    } else {
        for (int k = 0; k < sc->root.n_children; k++)
            HS_TRY(add_column(rs, &sc->root.children[k], err));
    }
    if (o && o->include_row_lineage) {
        HS_TRY(add_meta_field(rs, "_row_id", ICE_FIELD_ID_ROW_ID, HS_TYPE_INT64, err));
        HS_TRY(add_meta_field(rs, "_last_updated_sequence_number", ICE_FIELD_ID_LAST_UPDATED_SEQ,
                              HS_TYPE_INT64, err));
    }
    s->n_out = rs->n_children;
    if (hs_field_copy(rs, &s->out_schema) != HS_OK)
        return hs_err_nomem(err, 64);
    /* columns only the filter reads */
    hs_buf ids = {0};
    if (tbl_filter_field_ids(s->plan->filter, &ids) != HS_OK) {
        hs_buf_free(&ids);
        return hs_err_nomem(err, 64);
    }
    hs_status st = HS_OK;
    for (size_t i = 0; i < HS_VEC_LEN(&ids, int32_t) && st == HS_OK; i++) {
        int top = top_index_of_id(&sc->root, HS_VEC_AT(&ids, int32_t, i));
        if (top >= 0)
            st = add_column(rs, &sc->root.children[top], err);
    }
    hs_buf_free(&ids);
    return st;
}

hs_status hs_scan_plan(hs_table *t, const hs_scan_options *opt, hs_scan **out, hs_error *err)
{
    *out = NULL;
    hs_scan *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    const ice_snapshot *snap = NULL;
    const ice_schema *sc = NULL;
    hs_status st = ice_metadata_copy(&t->meta, &s->meta, err);
    if (st == HS_OK)
        st = tbl_resolve_snapshot(&s->meta, opt, &snap, &sc, err);
    if (st == HS_OK)
        st = tbl_plan_make(&s->meta, snap, sc, opt ? opt->filter : NULL, &s->plan, err);
    if (st == HS_OK)
        st = build_schemas(s, sc, opt, err);
    s->batch_size = opt && opt->batch_size > 0 ? opt->batch_size : 65536;
    if (st != HS_OK) {
        hs_scan_free(s);
        return st;
    }
    *out = s;
    return HS_OK;
}

void hs_scan_get_stats(const hs_scan *s, hs_scan_stats *out) { *out = s->plan->stats; }

hs_status hs_scan_files_json(const hs_scan *s, char **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    hs_status st = hs_buf_puts(&b, "[");
    for (int i = 0; i < s->plan->n_files && st == HS_OK; i++) {
        const tbl_plan_file *f = &s->plan->files[i];
        st = hs_buf_puts(&b, i ? ",{\"file_path\":" : "{\"file_path\":");
        if (st == HS_OK)
            st = hs_json_append_string(&b, (const uint8_t *)f->path, strlen(f->path));
        if (st == HS_OK)
            st = hs_buf_printf(&b, ",\"record_count\":%lld,\"file_size_in_bytes\":%lld,"
                               "\"spec_id\":%d,\"sequence_number\":%lld,\"partition\":[",
                               (long long)f->record_count, (long long)f->file_size,
                               (int)f->spec_id, (long long)f->data_seq);
        for (int k = 0; k < f->n_partition && st == HS_OK; k++) {
            if (k)
                st = hs_buf_puts(&b, ",");
            if (st == HS_OK)
                st = ice_value_to_json(&f->partition[k], &b);
        }
        if (st == HS_OK)
            st = hs_buf_puts(&b, "],\"deletes\":[");
        for (int k = 0; k < f->n_deletes && st == HS_OK; k++) {
            if (k)
                st = hs_buf_puts(&b, ",");
            if (st == HS_OK)
                st = hs_json_append_string(&b, (const uint8_t *)f->deletes[k].path,
                                           strlen(f->deletes[k].path));
        }
        if (st == HS_OK)
            st = hs_buf_puts(&b, "]}");
    }
    if (st == HS_OK)
        st = hs_buf_puts(&b, "]");
    if (st == HS_OK)
        st = hs_buf_append_byte(&b, 0);
    if (st != HS_OK) {
        hs_buf_free(&b);
        return hs_err_nomem(err, 64);
    }
    size_t n;
    *out = (char *)hs_buf_detach(&b, &n);
    return HS_OK;
}

static hs_status queue_push(void *ctx, hs_batch *b, hs_error *err)
{
    hs_scan *s = ctx;
    if (s->q_len == s->q_cap) {
        int cap = s->q_cap ? s->q_cap * 2 : 8;
        hs_batch **q = hs_realloc(s->queue, (size_t)cap * sizeof *q);
        if (!q) {
            hs_batch_free(b);
            return hs_err_nomem(err, (size_t)cap * sizeof *q);
        }
        s->queue = q;
        s->q_cap = cap;
    }
    s->queue[s->q_len++] = b;
    return HS_OK;
}

static hs_status scan_next(void *ctx, hs_batch **out, hs_error *err)
{
    hs_scan *s = ctx;
    *out = NULL;
    while (s->q_pos >= s->q_len) {
        s->q_len = s->q_pos = 0;
        if (s->next_file >= s->plan->n_files)
            return HS_OK;
        const tbl_plan_file *f = &s->plan->files[s->next_file++];
        HS_TRY(tbl_read_file(f, &s->read_schema, s->plan->filter, s->batch_size, queue_push, s,
                             NULL, &s->plan->stats.rows_deleted, err));
    }
    hs_batch *b = s->queue[s->q_pos++];
    s->plan->stats.rows_emitted += b->n_rows;
    if (b->n_cols > s->n_out) {
        for (int i = s->n_out; i < b->n_cols; i++)
            hs_col_free(b->cols[i]);
        b->n_cols = s->n_out;
        hs_field_clear(&b->schema);
        if (hs_field_copy(&s->out_schema, &b->schema) != HS_OK) {
            hs_batch_free(b);
            return hs_err_nomem(err, 64);
        }
    }
    *out = b;
    return HS_OK;
}

static void scan_close(void *ctx) { hs_scan_free(ctx); }

hs_status hs_scan_stream(hs_scan *s, struct ArrowArrayStream *out, hs_error *err)
{
    hs_batch_source src = {.next = scan_next, .close = scan_close, .ctx = s};
    if (hs_field_copy(&s->out_schema, &src.schema) != HS_OK) {
        hs_scan_free(s);
        return hs_err_nomem(err, 64);
    }
    return hs_arrow_export_stream(&src, out, err);
}

hs_status hs_table_scan(hs_table *t, const hs_scan_options *opt, struct ArrowArrayStream *out,
                        hs_error *err)
{
    hs_scan *s = NULL;
    HS_TRY(hs_scan_plan(t, opt, &s, err));
    return hs_scan_stream(s, out, err);
}
