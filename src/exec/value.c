/*
 * exec/value.c - what the operators know about single values: the row-key
 * encoding used by every hashing operator (format in exec_int.h) and the
 * total order used by sort, top-k, min/max and merge (exec.h, xo_sort).
 *
 * Order inside nested values follows PostgreSQL's arrays and records: a
 * NULL element sorts above every non-null one; a shorter list that is a
 * prefix of a longer one sorts first.
 */
#include "exec/exec_int.h"
#include "base/interval.h"
#include "columnar/jsonl.h"

#include <math.h>
#include <string.h>

int64_t xo_int_at(const hs_column *c, int64_t i, bool *big)
{
    *big = false;
    switch (c->type) {
    case HS_TYPE_INT8: return HS_COL_VALUES(c, int8_t)[i];
    case HS_TYPE_INT16: return HS_COL_VALUES(c, int16_t)[i];
    case HS_TYPE_INT32: case HS_TYPE_DATE32: case HS_TYPE_TIME32: return HS_COL_VALUES(c, int32_t)[i];
    case HS_TYPE_INT64: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP: return HS_COL_VALUES(c, int64_t)[i];
    case HS_TYPE_UINT8: return HS_COL_VALUES(c, uint8_t)[i];
    case HS_TYPE_UINT16: return HS_COL_VALUES(c, uint16_t)[i];
    case HS_TYPE_UINT32: return HS_COL_VALUES(c, uint32_t)[i];
    case HS_TYPE_UINT64: {
        uint64_t v = HS_COL_VALUES(c, uint64_t)[i];
        *big = v > (uint64_t)INT64_MAX;
        return (int64_t)v;
    }
    default: return 0;
    }
}

double xo_float_at(const hs_column *c, int64_t i)
{
    switch (c->type) {
    case HS_TYPE_FLOAT16: return hs_half_to_float(HS_COL_VALUES(c, uint16_t)[i]);
    case HS_TYPE_FLOAT32: return HS_COL_VALUES(c, float)[i];
    default: return HS_COL_VALUES(c, double)[i];
    }
}

hs_interval xo_interval_at(const hs_column *c, int64_t i)
{
    hs_interval v;
    memcpy(&v, c->values.data + i * 16, 16);
    return v;
}

bool xo_is_int_type(hs_type t)
{
    return (t >= HS_TYPE_INT8 && t <= HS_TYPE_UINT64) || t == HS_TYPE_DATE32 ||
           t == HS_TYPE_TIME32 || t == HS_TYPE_TIME64 || t == HS_TYPE_TIMESTAMP;
}

static void list_range(const hs_column *c, int64_t i, int64_t *start, int64_t *n)
{
    if (c->type == HS_TYPE_FIXED_LIST) {
        *start = i * c->width;
        *n = c->width;
    } else {
        const int32_t *o = HS_COL_OFFSETS(c);
        *start = o[i];
        *n = o[i + 1] - o[i];
    }
}

hs_status xo_key_append(hs_buf *out, const hs_column *c, int64_t row)
{
    if (c->type == HS_TYPE_NA || !hs_col_is_valid(c, row))
        return hs_buf_append_byte(out, 0);
    if (xo_is_int_type(c->type)) {
        bool big;
        int64_t v = xo_int_at(c, row, &big);
        HS_TRY(hs_buf_append_byte(out, big ? 2 : 1));
        return hs_buf_append(out, &v, 8);
    }
    HS_TRY(hs_buf_append_byte(out, 1));
    switch (c->type) {
    case HS_TYPE_BOOL: return hs_buf_append_byte(out, hs_bit_get(c->values.data, row));
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: {
        double d = xo_float_at(c, row);
        if (d == 0)
            d = 0;   /* -0 -> +0 */
        if (isnan(d))
            d = NAN;
        return hs_buf_append(out, &d, 8);
    }
    case HS_TYPE_DECIMAL128: return hs_buf_append(out, c->values.data + row * 16, 16);
    case HS_TYPE_INTERVAL: {   /* the span: '1 mon' and '30 days' are one key */
        uint8_t k[16];
        hs_interval_key(xo_interval_at(c, row), k);
        return hs_buf_append(out, k, 16);
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(c);
        uint32_t n = (uint32_t)(o[row + 1] - o[row]);
        HS_TRY(hs_buf_append(out, &n, 4));
        return hs_buf_append(out, c->values.data + o[row], n);
    }
    case HS_TYPE_FIXED_BINARY:
        return hs_buf_append(out, c->values.data + row * c->width, (size_t)c->width);
    case HS_TYPE_LIST: case HS_TYPE_FIXED_LIST: case HS_TYPE_MAP: {
        int64_t start, n;
        list_range(c, row, &start, &n);
        uint32_t n32 = (uint32_t)n;
        HS_TRY(hs_buf_append(out, &n32, 4));
        for (int64_t k = 0; k < n; k++)
            HS_TRY(xo_key_append(out, c->children[0], start + k));
        return HS_OK;
    }
    case HS_TYPE_STRUCT:
        for (int k = 0; k < c->n_children; k++)
            HS_TRY(xo_key_append(out, c->children[k], row));
        return HS_OK;
    default: return HS_OK;
    }
}

static int cmp_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    int r = memcmp(a, b, na < nb ? na : nb);
    if (r)
        return r < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

static int cmp_double(double x, double y)
{
    bool nx = isnan(x), ny = isnan(y);
    if (nx || ny)
        return nx - ny;
    return x < y ? -1 : x > y;
}

static int cmp_elem(const hs_column *a, int64_t i, const hs_column *b, int64_t j)
{
    bool va = hs_col_is_valid(a, i), vb = hs_col_is_valid(b, j);
    if (!va || !vb)
        return va == vb ? 0 : (va ? -1 : 1);   /* NULL above non-null */
    return xo_val_cmp(a, i, b, j);
}

int xo_val_cmp(const hs_column *a, int64_t i, const hs_column *b, int64_t j)
{
    switch (a->type) {
    case HS_TYPE_NA: return 0;
    case HS_TYPE_BOOL: return (int)hs_bit_get(a->values.data, i) - (int)hs_bit_get(b->values.data, j);
    case HS_TYPE_UINT64: {
        uint64_t x = HS_COL_VALUES(a, uint64_t)[i], y = HS_COL_VALUES(b, uint64_t)[j];
        return x < y ? -1 : x > y;
    }
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64:
        return cmp_double(xo_float_at(a, i), xo_float_at(b, j));
    case HS_TYPE_DECIMAL128: {
        __int128 x, y;
        memcpy(&x, a->values.data + i * 16, 16);
        memcpy(&y, b->values.data + j * 16, 16);
        return x < y ? -1 : x > y;
    }
    case HS_TYPE_INTERVAL: return hs_interval_cmp(xo_interval_at(a, i), xo_interval_at(b, j));
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *oa = HS_COL_OFFSETS(a), *ob = HS_COL_OFFSETS(b);
        return cmp_bytes(a->values.data + oa[i], (size_t)(oa[i + 1] - oa[i]),
                         b->values.data + ob[j], (size_t)(ob[j + 1] - ob[j]));
    }
    case HS_TYPE_FIXED_BINARY:
        return cmp_bytes(a->values.data + i * a->width, (size_t)a->width,
                         b->values.data + j * b->width, (size_t)b->width);
    case HS_TYPE_LIST: case HS_TYPE_FIXED_LIST: case HS_TYPE_MAP: {
        int64_t sa, na, sb, nb;
        list_range(a, i, &sa, &na);
        list_range(b, j, &sb, &nb);
        for (int64_t k = 0; k < na && k < nb; k++) {
            int r = cmp_elem(a->children[0], sa + k, b->children[0], sb + k);
            if (r)
                return r;
        }
        return na < nb ? -1 : na > nb;
    }
    case HS_TYPE_STRUCT:
        for (int k = 0; k < a->n_children && k < b->n_children; k++) {
            int r = cmp_elem(a->children[k], i, b->children[k], j);
            if (r)
                return r;
        }
        return 0;
    default:
        if (xo_is_int_type(a->type)) {
            bool big;
            int64_t x = xo_int_at(a, i, &big), y = xo_int_at(b, j, &big);
            return x < y ? -1 : x > y;
        }
        return 0;
    }
}

int xo_keys_cmp(const xo_sort_key *keys, int n_keys, hs_column *const *a, int64_t i,
                hs_column *const *b, int64_t j)
{
    for (int k = 0; k < n_keys; k++) {
        const hs_column *ca = a[keys[k].col], *cb = b[keys[k].col];
        bool va = hs_col_is_valid(ca, i), vb = hs_col_is_valid(cb, j);
        int r;
        if (!va || !vb) {
            if (va == vb)
                continue;
            /* exactly one null: it goes first or last regardless of direction */
            r = (va ? 1 : -1) * (keys[k].nulls_first ? 1 : -1);
            return r;
        }
        r = xo_val_cmp(ca, i, cb, j);
        if (r)
            return keys[k].desc ? -r : r;
    }
    return 0;
}
