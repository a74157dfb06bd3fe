/*
 * exec/sort.c - Sort and TopK.
 *
 * Sort materialises its whole input (xo_rows, accounted against the
 * memory limit), sorts a permutation of row indices (xo_sort_perm, below:
 * a stable merge sort of 64-bit key images with the full comparison of
 * xo_keys_cmp on ties), and emits the permutation in batches of
 * XO_BATCH_ROWS taken from the materialised rows.
 *
 * TopK (ORDER BY ... LIMIT k) keeps at most about 2k rows: it appends each
 * input batch to its row set and, once that holds 2k rows (and at least one
 * batch more than k), sorts it and keeps the first k.  Rows enter in input
 * order and the sort is stable, so ties resolve as in Sort + Limit.
 */
#include "exec/exec_int.h"

#include <stdio.h>
#include <string.h>

typedef struct sort_op {
    xo_op op;
    int n_keys;
    xo_sort_key *keys;
    int64_t k;            /* TopK: rows kept; Sort: -1 */
    xo_rows rows;
    int64_t *perm;
    int64_t n_perm, emitted;
    bool sorted;
} sort_op;

/* ---- sorting a permutation ----
 *
 * The comparator of xo_keys_cmp reads values through the columns, which
 * for a large input is one cache miss per comparison.  So the sort works
 * on an array of (prefix, row) pairs: prefix is a 64-bit image of the
 * first key that orders like the key (direction and NULL placement
 * included) wherever two prefixes differ; only equal prefixes fall back to
 * the full comparison.  Images: integers and dates/times with the sign bit
 * flipped; floats by their IEEE bits made monotonic (NaN highest, -0 = 0);
 * decimals by their high 64 bits; strings/binaries by their first 8 bytes,
 * big-endian; booleans 1/2; other types 0 (always the full comparison).
 * NULLs get 0 (NULLS FIRST) or UINT64_MAX (NULLS LAST); a value whose image
 * collides with that also falls back to the full comparison, which is
 * exact.  Entries carry the images of up to XO_IMG_MAX leading keys, as
 * long as ties of the earlier images mean equal keys (image_exact).  The
 * merge sort is stable. */

static uint64_t image_of(const hs_column *c, int64_t i)
{
    switch (c->type) {
    case HS_TYPE_BOOL: return 1 + hs_bit_get(c->values.data, i);
    case HS_TYPE_UINT64: return HS_COL_VALUES(c, uint64_t)[i];
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: {
        double d = xo_float_at(c, i);
        if (d != d)
            return UINT64_MAX - 1;
        if (d == 0)
            d = 0;
        uint64_t b;
        memcpy(&b, &d, 8);
        return (b >> 63) ? ~b : b | (1ull << 63);
    }
    case HS_TYPE_DECIMAL128: {
        __int128 v;
        memcpy(&v, c->values.data + 16 * i, 16);
        return (uint64_t)(v >> 64) ^ (1ull << 63);
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(c);
        int32_t n = o[i + 1] - o[i];
        const uint8_t *p = c->values.data + o[i];
        uint64_t k = 0;
        for (int b = 0; b < 8; b++)
            k = (k << 8) | (b < n ? p[b] : 0);
        return k;
    }
    default:
        if (xo_is_int_type(c->type)) {
            bool big;
            return (uint64_t)xo_int_at(c, i, &big) ^ (1ull << 63);
        }
        return 0;
    }
}

/* Entries: XO_IMG_MAX words of key images, then the row. */
#define XO_IMG_MAX 4

typedef struct perm_ctx {
    const xo_sort_key *keys;
    int n_keys;
    int n_img;             /* images per entry (<= XO_IMG_MAX) */
    hs_column *const *cols;
} perm_ctx;

typedef struct sort_ent {
    uint64_t k[XO_IMG_MAX];
    int64_t row;
} sort_ent;

static inline int ent_cmp(const perm_ctx *c, const sort_ent *a, const sort_ent *b)
{
    for (int i = 0; i < c->n_img; i++)
        if (a->k[i] != b->k[i])
            return a->k[i] < b->k[i] ? -1 : 1;
    return xo_keys_cmp(c->keys, c->n_keys, c->cols, a->row, c->cols, b->row);
}

static hs_status ent_sort(const perm_ctx *c, sort_ent *e, int64_t n, hs_error *err)
{
    const int64_t run = 16;
    for (int64_t lo = 0; lo < n; lo += run) {
        int64_t hi = lo + run < n ? lo + run : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            sort_ent v = e[i];
            int64_t j = i;
            while (j > lo && ent_cmp(c, &e[j - 1], &v) > 0) {
                e[j] = e[j - 1];
                j--;
            }
            e[j] = v;
        }
    }
    if (n <= run)
        return HS_OK;
    sort_ent *tmp = hs_malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return hs_err_nomem(err, (size_t)n * sizeof *tmp);
    sort_ent *src = e, *dst = tmp;
    for (int64_t w = run; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            if (mid >= hi || ent_cmp(c, &src[mid - 1], &src[mid]) <= 0) {
                memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *dst);
                continue;
            }
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = ent_cmp(c, &src[i], &src[j]) <= 0 ? src[i++] : src[j++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        sort_ent *t = src;
        src = dst;
        dst = t;
    }
    if (src != e)
        memcpy(e, src, (size_t)n * sizeof *e);
    hs_free(tmp);
    return HS_OK;
}

/* True when equal images mean equal keys (NULLs included), so that the
 * next key's image may decide: booleans (images 1, 2) and floats (images
 * never 0 or UINT64_MAX); integers only without NULLs (they use all 64
 * bits, so a NULL's image may equal a value's). */
static bool image_exact(const hs_column *c)
{
    return c->type == HS_TYPE_BOOL || c->type == HS_TYPE_FLOAT32 || c->type == HS_TYPE_FLOAT64 ||
           c->type == HS_TYPE_FLOAT16 || (xo_is_int_type(c->type) && c->null_count == 0);
}

hs_status xo_sort_perm(hs_column *const *cols, int n_keys, const xo_sort_key *keys, int64_t n,
                       int64_t *perm, hs_error *err)
{
    if (n <= 1) {
        if (n == 1)
            perm[0] = 0;
        return HS_OK;
    }
    sort_ent *e = hs_malloc((size_t)n * sizeof *e);
    if (!e)
        return hs_err_nomem(err, (size_t)n * sizeof *e);
    /* images for the leading keys, up to the first whose image is inexact
     * (a tie there must be settled by the full comparison anyway) */
    int n_img = 0;
    while (n_img < n_keys && n_img < XO_IMG_MAX) {
        n_img++;
        if (!image_exact(cols[keys[n_img - 1].col]))
            break;
    }
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < n_img; k++) {
            const hs_column *c = cols[keys[k].col];
            uint64_t v;
            if (!hs_col_is_valid(c, i) || c->type == HS_TYPE_NA) {
                v = keys[k].nulls_first ? 0 : UINT64_MAX;
            } else {
                v = image_of(c, i);
                if (keys[k].desc)
                    v = ~v;
            }
            e[i].k[k] = v;
        }
        e[i].row = i;
    }
    perm_ctx c = {keys, n_keys, n_img, cols};
    hs_status st = ent_sort(&c, e, n, err);
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        perm[i] = e[i].row;
    hs_free(e);
    return st;
}

/* Sorts the current rows into s->perm (n_perm = all rows). */
static hs_status sort_rows(sort_op *s, hs_error *err)
{
    int64_t n = xo_rows_count(&s->rows);
    hs_free(s->perm);
    s->perm = NULL;
    s->n_perm = n;
    if (n == 0)
        return HS_OK;
    s->perm = hs_malloc((size_t)n * sizeof *s->perm);
    if (!s->perm)
        return hs_err_nomem(err, (size_t)n * sizeof *s->perm);
    return xo_sort_perm(s->rows.b->cols, s->n_keys, s->keys, n, s->perm, err);
}

/* TopK: keeps the first k rows of the sorted row set. */
static hs_status topk_compact(sort_op *s, hs_error *err)
{
    HS_TRY(sort_rows(s, err));
    int64_t keep = s->n_perm < s->k ? s->n_perm : s->k;
    xo_rows fresh = {0};
    hs_status st = xo_rows_append_take(&fresh, s->op.ctx, s->op.name, s->rows.b, s->perm, keep, err);
    if (st != HS_OK) {
        xo_rows_free(&fresh, s->op.ctx);
        return st;
    }
    xo_rows_free(&s->rows, s->op.ctx);
    s->rows = fresh;
    hs_free(s->perm);
    s->perm = NULL;
    s->n_perm = 0;
    return HS_OK;
}

static hs_status sort_consume(sort_op *s, hs_error *err)
{
    xo_op *op = &s->op;
    for (;;) {
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b)
            break;
        hs_status st = xo_rows_append(&s->rows, op->ctx, op->name, b, err);
        int64_t bn = b->n_rows;
        hs_batch_free(b);
        HS_TRY(st);
        if (s->k >= 0 && xo_rows_count(&s->rows) >= 2 * s->k &&
            xo_rows_count(&s->rows) >= s->k + bn)
            HS_TRY(topk_compact(s, err));
    }
    HS_TRY(sort_rows(s, err));
    if (s->k >= 0 && s->n_perm > s->k)
        s->n_perm = s->k;
    s->sorted = true;
    return HS_OK;
}

static hs_status sort_next(xo_op *op, hs_batch **out, hs_error *err)
{
    sort_op *s = (sort_op *)op;
    if (!s->sorted)
        HS_TRY(sort_consume(s, err));
    HS_TRY(xo_check_cancel(op->ctx, err));
    if (s->emitted >= s->n_perm)
        return HS_OK;
    int64_t n = s->n_perm - s->emitted;
    if (n > XO_BATCH_ROWS)
        n = XO_BATCH_ROWS;
    HS_TRY(xo_batch_take(&op->schema, s->rows.b, s->perm + s->emitted, n, out, err));
    s->emitted += n;
    if (s->emitted >= s->n_perm) {   /* release the memory early */
        xo_rows_free(&s->rows, op->ctx);
        hs_free(s->perm);
        s->perm = NULL;
    }
    return HS_OK;
}

static void sort_destroy(xo_op *op)
{
    sort_op *s = (sort_op *)op;
    xo_rows_free(&s->rows, op->ctx);
    hs_free(s->perm);
    hs_free(s->keys);
}

static hs_status sort_make(xo_op *child, int n_keys, const xo_sort_key *keys, int64_t k,
                           xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(sort_op), child->ctx, k >= 0 ? "TopK" : "Sort", 1, &child, &op, err));
    sort_op *s = (sort_op *)op;
    op->next = sort_next;
    op->destroy = sort_destroy;
    s->k = k;
    hs_field_clear(&op->schema);
    if (hs_field_copy(&child->schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    s->keys = hs_calloc((size_t)(n_keys > 0 ? n_keys : 1), sizeof *s->keys);
    hs_buf d = {0};
    hs_status st = s->keys ? HS_OK : hs_err_nomem(err, 0);
    s->n_keys = n_keys;
    for (int i = 0; i < n_keys && st == HS_OK; i++) {
        if (keys[i].col < 0 || keys[i].col >= child->schema.n_children) {
            st = hs_err_set(err, HS_INVALID, "%s: key column %d out of range (%d columns)",
                            op->name, keys[i].col, child->schema.n_children);
            break;
        }
        s->keys[i] = keys[i];
        if (hs_buf_printf(&d, "%s#%d%s%s", i ? ", " : "keys: ", keys[i].col + 1,
                          keys[i].desc ? " DESC" : "",
                          keys[i].nulls_first != keys[i].desc
                              ? (keys[i].nulls_first ? " NULLS FIRST" : " NULLS LAST")
                              : "") != HS_OK)
            st = hs_err_nomem(err, 0);
    }
    if (st == HS_OK && k >= 0 && hs_buf_printf(&d, "; k: %lld", (long long)k) != HS_OK)
        st = hs_err_nomem(err, 0);
    if (st != HS_OK) {
        hs_buf_free(&d);
        xo_free(op);
        return st;
    }
    op->detail = d.len ? (char *)hs_buf_detach(&d, NULL) : NULL;
    hs_buf_free(&d);
    *out = op;
    return HS_OK;
}

hs_status xo_sort(xo_op *child, int n_keys, const xo_sort_key *keys, xo_op **out, hs_error *err)
{
    return sort_make(child, n_keys, keys, -1, out, err);
}

hs_status xo_topk(xo_op *child, int n_keys, const xo_sort_key *keys, int64_t k, xo_op **out,
                  hs_error *err)
{
    if (k < 0) {
        xo_free(child);
        return hs_err_set(err, HS_INVALID, "TopK: k must not be negative, got %lld", (long long)k);
    }
    return sort_make(child, n_keys, keys, k, out, err);
}
