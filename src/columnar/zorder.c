/*
 * columnar/zorder.c - z-order permutations of a batch's rows (zorder.h says
 * what the keys are).
 *
 *   step   per chosen column                     cost
 *   -----  ------------------------------------  --------------------------
 *   key    order-preserving uint64 per row       n
 *   rank   sort rows by (valid, key), dense rank  n log n
 *   scale  rank * (2^32 - 1) / (distinct - 1)     n
 *   mix    interleave the columns' 32-bit ranks   n * 32 * columns bits
 *          into one big-endian key per row
 *   order  sort rows by that key (ties: row order) n log n
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include "columnar/zorder.h"

#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

bool hs_zorder_type_ok(hs_type t)
{
    switch (t) {
    case HS_TYPE_BOOL:
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_UINT64:
    case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: case HS_TYPE_DECIMAL128:
    case HS_TYPE_DATE32: case HS_TYPE_TIME32: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP:
    case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY:
        return true;
    default:
        return false;
    }
}

static uint64_t flip(int64_t v) { return (uint64_t)v ^ ((uint64_t)1 << 63); }

static uint64_t float_key(double d)
{
    if (d != d)
        return UINT64_MAX;              /* NaN after every number */
    if (d == 0)
        d = 0;                          /* -0.0 orders as 0.0 */
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

static uint64_t bytes_key(const uint8_t *p, size_t n)
{
    uint64_t k = 0;
    for (size_t i = 0; i < 8; i++)
        k = (k << 8) | (i < n ? p[i] : 0);
    return k;
}

/* The order-preserving key of valid row i. */
static uint64_t key_of(const hs_column *c, int64_t i)
{
    const uint8_t *v = c->values.data;
    switch (c->type) {
    case HS_TYPE_BOOL: return hs_bit_get(v, i);
    case HS_TYPE_INT8: return flip(((const int8_t *)v)[i]);
    case HS_TYPE_INT16: return flip(((const int16_t *)v)[i]);
    case HS_TYPE_INT32: case HS_TYPE_DATE32: case HS_TYPE_TIME32:
        return flip(((const int32_t *)v)[i]);
    case HS_TYPE_INT64: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP:
        return flip(((const int64_t *)v)[i]);
    case HS_TYPE_UINT8: return ((const uint8_t *)v)[i];
    case HS_TYPE_UINT16: return ((const uint16_t *)v)[i];
    case HS_TYPE_UINT32: return ((const uint32_t *)v)[i];
    case HS_TYPE_UINT64: return ((const uint64_t *)v)[i];
    case HS_TYPE_FLOAT32: return float_key(((const float *)v)[i]);
    case HS_TYPE_FLOAT64: return float_key(((const double *)v)[i]);
    case HS_TYPE_DECIMAL128: {
        /* the unscaled int128 (little-endian), saturated to int64 */
        uint64_t lo, hi;
        memcpy(&lo, v + 16 * i, 8);
        memcpy(&hi, v + 16 * i + 8, 8);
        if (hi == 0 && lo < ((uint64_t)1 << 63))
            return flip((int64_t)lo);
        if (hi == UINT64_MAX && lo >= ((uint64_t)1 << 63))
            return flip((int64_t)lo);
        return (hi >> 63) ? 0 : UINT64_MAX;
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *off = (const int32_t *)c->offsets.data;
        return bytes_key(v + off[i], (size_t)(off[i + 1] - off[i]));
    }
    case HS_TYPE_FIXED_BINARY:
        return bytes_key(v + (size_t)c->width * (size_t)i, (size_t)c->width);
    default:
        return 0;
    }
}

typedef struct rank_ctx {
    const uint64_t *key;
    const uint8_t *valid;
} rank_ctx;

static int cmp_key(const void *a, const void *b, void *vctx)
{
    const rank_ctx *c = vctx;
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (c->valid[x] != c->valid[y])
        return c->valid[x] < c->valid[y] ? -1 : 1;
    if (c->key[x] != c->key[y])
        return c->key[x] < c->key[y] ? -1 : 1;
    return (x > y) - (x < y);
}

typedef struct mix_ctx {
    const uint8_t *keys;
    size_t width;
} mix_ctx;

static int cmp_mixed(const void *a, const void *b, void *vctx)
{
    const mix_ctx *c = vctx;
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    int r = memcmp(c->keys + (size_t)x * c->width, c->keys + (size_t)y * c->width, c->width);
    return r ? r : (x > y) - (x < y);
}

hs_status hs_zorder_permutation(const hs_batch *b, const int *cols, int n_cols, int64_t **perm,
                                hs_error *err)
{
    *perm = NULL;
    if (n_cols < 1 || n_cols > 16)
        return hs_err_set(err, HS_INVALID, "z-order: 1 to 16 columns, not %d", n_cols);
    for (int j = 0; j < n_cols; j++) {
        if (cols[j] < 0 || cols[j] >= b->n_cols)
            return hs_err_set(err, HS_INVALID, "z-order: no column %d", cols[j]);
        const hs_field *f = &b->schema.children[cols[j]];
        if (!hs_zorder_type_ok(f->type))
            return hs_err_set(err, HS_INVALID, "z-order: column \"%s\" has type %s, which has "
                              "no order (numbers, dates, times, timestamps, strings, binaries "
                              "and booleans do)", f->name, hs_type_name(f->type));
    }
    int64_t n = b->n_rows;
    size_t width = (size_t)n_cols * 4;
    int64_t *idx = hs_malloc(sizeof *idx * (size_t)(n ? n : 1));
    uint64_t *key = hs_malloc(sizeof *key * (size_t)(n ? n : 1));
    uint8_t *valid = hs_malloc((size_t)(n ? n : 1));
    uint8_t *mixed = hs_calloc((size_t)(n ? n : 1), width);
    uint32_t *rank = hs_malloc(sizeof *rank * (size_t)(n ? n : 1));
    if (!idx || !key || !valid || !mixed || !rank) {
        hs_free(idx), hs_free(key), hs_free(valid), hs_free(mixed), hs_free(rank);
        return hs_err_nomem(err, (int64_t)n * (int64_t)(width + 21));
    }
    for (int j = 0; j < n_cols; j++) {
        const hs_column *c = b->cols[cols[j]];
        for (int64_t i = 0; i < n; i++) {
            valid[i] = hs_col_is_valid(c, i);
            key[i] = valid[i] ? key_of(c, i) : 0;
            idx[i] = i;
        }
        rank_ctx rc = {key, valid};
        qsort_r(idx, (size_t)n, sizeof *idx, cmp_key, &rc);
        /* dense ranks, then scaled to the full 32 bits */
        uint64_t distinct = 0;
        for (int64_t k = 0; k < n; k++) {
            if (k == 0 || valid[idx[k]] != valid[idx[k - 1]] || key[idx[k]] != key[idx[k - 1]])
                distinct++;
            rank[idx[k]] = (uint32_t)(distinct - 1);
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = distinct > 1 ? (uint64_t)rank[i] * UINT32_MAX / (distinct - 1) : 0;
            /* interleave: bit 31 - t of this column goes to bit position
             * t * n_cols + j from the top of the row's key */
            uint8_t *row = mixed + (size_t)i * width;
            for (int t = 0; t < 32; t++)
                if ((r >> (31 - t)) & 1) {
                    size_t pos = (size_t)t * (size_t)n_cols + (size_t)j;
                    row[pos >> 3] |= (uint8_t)(0x80u >> (pos & 7));
                }
        }
    }
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    mix_ctx mc = {mixed, width};
    qsort_r(idx, (size_t)n, sizeof *idx, cmp_mixed, &mc);
    hs_free(key), hs_free(valid), hs_free(mixed), hs_free(rank);
    *perm = idx;
    return HS_OK;
}

hs_status hs_batch_take(const hs_batch *b, const int64_t *idx, int64_t n, hs_batch **out,
                        hs_error *err)
{
    *out = NULL;
    hs_batch *nb = NULL;
    HS_TRY(hs_batch_create(&b->schema, 0, &nb, err));
    for (int c = 0; c < b->n_cols; c++) {
        hs_column *col = NULL;
        hs_status st = hs_col_take(b->cols[c], idx, n, &col, err);
        if (st != HS_OK) {
            hs_batch_free(nb);
            return st;
        }
        hs_col_free(nb->cols[c]);
        nb->cols[c] = col;
    }
    nb->n_rows = n;
    *out = nb;
    return HS_OK;
}
