/*
 * exec/sort.c - Sort and TopK.
 *
 * Sort materialises its whole input (xo_rows, accounted against the
 * memory limit), sorts a permutation of row indices with a stable merge
 * sort whose comparator walks the keys (xo_keys_cmp: direction and NULL
 * placement per key, value order of value.c), and emits the permutation in
 * batches of XO_BATCH_ROWS taken from the materialised rows.
 *
 * TopK (ORDER BY ... LIMIT k) keeps at most about 2k rows: it appends each
 * input batch to its row set and, once that holds 2k rows (and at least one
 * batch more than k), sorts it and keeps the first k.  Rows enter in input
 * order and the sort is stable, so ties resolve as in Sort + Limit.
 */
#include "exec/exec_int.h"

#include <stdio.h>

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

typedef struct cmp_ctx {
    const sort_op *s;
    hs_column *const *cols;
} cmp_ctx;

static int row_cmp(void *ctx, int64_t a, int64_t b)
{
    cmp_ctx *c = ctx;
    return xo_keys_cmp(c->s->keys, c->s->n_keys, c->cols, a, c->cols, b);
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
    for (int64_t i = 0; i < n; i++)
        s->perm[i] = i;
    cmp_ctx c = {s, s->rows.b->cols};
    return xo_msort(s->perm, n, row_cmp, &c, err);
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
