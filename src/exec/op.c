/*
 * exec/op.c - the operator frame shared by every physical operator:
 * xo_next (statistics, cancellation), xo_free, xo_explain, and the small
 * services operators build on: output schemas renumbered to positional
 * field ids, batches assembled from columns or taken by row index, memory
 * accounting against ctx->mem_limit, materialised row sets (xo_rows) and
 * an output queue.
 *
 * EXPLAIN text, one operator per line, children below their parent
 * indented by two spaces and introduced by "-> ":
 *     HashAggregate  (groups: #1; aggs: count(*))
 *       -> Filter  (filter: ...)
 *     with ANALYZE each line ends with
 *           (actual rows=N batches=B time=T.TTT ms)
 *     and explain_extra's lines (pruned files, index use) follow, indented.
 */
#include "exec/exec_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int64_t xo_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

hs_status xo_check_cancel(const xo_ctx *ctx, hs_error *err)
{
    if (xo_cancelled(ctx))
        return hs_err_set(err, HS_CANCELLED, "canceling statement due to user request");
    return HS_OK;
}

hs_status xo_next(xo_op *op, hs_batch **out, hs_error *err)
{
    *out = NULL;
    if (xo_cancelled(op->ctx))
        return xo_check_cancel(op->ctx, err);
    int64_t t0 = xo_now_ns();
    hs_status s = op->next(op, out, err);
    op->ns += xo_now_ns() - t0;
    if (s != HS_OK) {
        hs_batch_free(*out);
        *out = NULL;
        return s;
    }
    if (*out) {
        op->rows_out += (*out)->n_rows;
        op->batches_out++;
    }
    return HS_OK;
}

bool xo_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    if (op && op->push_keyfilter && col >= 0 && col < op->schema.n_children)
        return op->push_keyfilter(op, col, kf);
    hs_keyfilter_free(kf);
    return false;
}

int64_t xo_exact_rows(const xo_op *op)
{
    return op && op->exact_rows ? op->exact_rows(op) : -1;
}

hs_status xo_count_rows(xo_op *op, int64_t *n, hs_error *err)
{
    *n = -1;
    return op && op->count_rows ? op->count_rows(op, n, err) : HS_OK;
}

int64_t xo_max_rows(const xo_op *op)
{
    return op && op->max_rows ? op->max_rows(op) : -1;
}

void xo_free(xo_op *op)
{
    if (!op)
        return;
    if (op->destroy)
        op->destroy(op);
    for (int i = 0; i < op->n_children; i++)
        xo_free(op->children[i]);
    hs_free(op->children);
    hs_field_clear(&op->schema);
    hs_free(op->detail);
    hs_free(op);
}

hs_status xo_op_alloc(size_t size, xo_ctx *ctx, const char *name, int n, xo_op **children,
                      xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op = hs_calloc(1, size < sizeof(xo_op) ? sizeof(xo_op) : size);
    xo_op **kids = n > 0 ? hs_calloc((size_t)n, sizeof *kids) : NULL;
    if (!op || (n > 0 && !kids)) {
        hs_free(op);
        hs_free(kids);
        for (int i = 0; i < n; i++)
            xo_free(children[i]);
        return hs_err_nomem(err, size);
    }
    op->name = name;
    op->ctx = ctx;
    op->n_children = n;
    op->children = kids;
    for (int i = 0; i < n; i++)
        kids[i] = children[i];
    hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
    *out = op;
    if (!op->schema.name) {
        xo_free(op);
        *out = NULL;
        return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

static void renumber_rec(hs_field *f, int32_t *next)
{
    for (int i = 0; i < f->n_children; i++) {
        f->children[i].field_id = (*next)++;
        renumber_rec(&f->children[i], next);
    }
}

void xo_schema_renumber(hs_field *schema)
{
    int32_t next = schema->n_children + 1;
    for (int i = 0; i < schema->n_children; i++)
        schema->children[i].field_id = i + 1;
    for (int i = 0; i < schema->n_children; i++)
        renumber_rec(&schema->children[i], &next);
}

hs_status xo_batch_wrap(const hs_field *schema, int n_cols, hs_column **cols, int64_t n_rows,
                        hs_batch **out, hs_error *err)
{
    *out = NULL;
    hs_batch *b = hs_calloc(1, sizeof *b);
    hs_column **a = n_cols > 0 ? hs_calloc((size_t)n_cols, sizeof *a) : NULL;
    if (!b || (n_cols > 0 && !a) || hs_field_copy(schema, &b->schema) != HS_OK) {
        hs_free(b);
        hs_free(a);
        for (int i = 0; i < n_cols; i++)
            hs_col_free(cols[i]);
        return hs_err_nomem(err, sizeof *b);
    }
    for (int i = 0; i < n_cols; i++)
        a[i] = cols[i];
    b->cols = a;
    b->n_cols = n_cols;
    b->n_rows = n_rows;
    *out = b;
    return HS_OK;
}

hs_status xo_batch_take(const hs_field *schema, const hs_batch *b, const int64_t *idx, int64_t n,
                        hs_batch **out, hs_error *err)
{
    *out = NULL;
    hs_column *stack[16];
    hs_column **cols = b->n_cols <= 16 ? stack : hs_calloc((size_t)b->n_cols, sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 0);
    hs_status s = HS_OK;
    int made = 0;
    for (; made < b->n_cols; made++) {
        s = hs_col_take_nullable(b->cols[made], idx, n, &cols[made], err);
        if (s != HS_OK)
            break;
    }
    if (s == HS_OK)
        s = xo_batch_wrap(schema, b->n_cols, cols, n, out, err);
    else
        for (int i = 0; i < made; i++)
            hs_col_free(cols[i]);
    if (cols != stack)
        hs_free(cols);
    return s;
}

hs_status xo_batch_set_schema(hs_batch *b, const hs_field *schema, hs_error *err)
{
    hs_field f;
    if (hs_field_copy(schema, &f) != HS_OK)
        return hs_err_nomem(err, 0);
    hs_field_clear(&b->schema);
    b->schema = f;
    return HS_OK;
}

int64_t xo_col_bytes(const hs_column *c)
{
    if (!c)
        return 0;
    int64_t n = (int64_t)(c->validity.cap + c->offsets.cap + c->values.cap) + (int64_t)sizeof *c;
    for (int i = 0; i < c->n_children; i++)
        n += xo_col_bytes(c->children[i]);
    return n;
}

int64_t xo_batch_bytes(const hs_batch *b)
{
    int64_t n = 0;
    for (int i = 0; b && i < b->n_cols; i++)
        n += xo_col_bytes(b->cols[i]);
    return n;
}

hs_status xo_mem_reserve(xo_ctx *ctx, int64_t bytes, const char *op, hs_error *err)
{
    if (!ctx || bytes <= 0)
        return HS_OK;
    int64_t now = atomic_fetch_add(&ctx->mem_used, bytes) + bytes;
    if (ctx->mem_limit > 0 && now > ctx->mem_limit) {
        atomic_fetch_sub(&ctx->mem_used, bytes);
        return hs_err_set(err, HS_NOMEM,
                          "%s: out of memory: the statement's memory limit of %" PRId64
                          " bytes would be exceeded (%" PRId64 " bytes in use, %" PRId64
                          " more requested)",
                          op, ctx->mem_limit, now - bytes, bytes);
    }
    int64_t peak = atomic_load(&ctx->mem_peak);
    while (now > peak && !atomic_compare_exchange_weak(&ctx->mem_peak, &peak, now)) {
    }
    return HS_OK;
}

void xo_mem_force(xo_ctx *ctx, int64_t bytes)
{
    if (!ctx || bytes <= 0)
        return;
    int64_t now = atomic_fetch_add(&ctx->mem_used, bytes) + bytes;
    int64_t peak = atomic_load(&ctx->mem_peak);
    while (now > peak && !atomic_compare_exchange_weak(&ctx->mem_peak, &peak, now)) {
    }
}

void xo_mem_release(xo_ctx *ctx, int64_t bytes)
{
    if (ctx && bytes > 0)
        atomic_fetch_sub(&ctx->mem_used, bytes);
}

/* ---- materialised rows ---- */

hs_status xo_rows_init(xo_rows *r, const hs_field *schema, hs_error *err)
{
    if (r->b)
        return HS_OK;
    return hs_batch_create(schema, 0, &r->b, err);
}

static hs_status rows_account(xo_rows *r, xo_ctx *ctx, const char *op, hs_error *err)
{
    int64_t now = xo_batch_bytes(r->b);
    if (now > r->bytes) {
        HS_TRY(xo_mem_reserve(ctx, now - r->bytes, op, err));
        r->bytes = now;
    }
    return HS_OK;
}

hs_status xo_rows_append(xo_rows *r, xo_ctx *ctx, const char *op, const hs_batch *src,
                         hs_error *err)
{
    HS_TRY(xo_rows_init(r, &src->schema, err));
    for (int i = 0; i < src->n_cols && i < r->b->n_cols; i++)
        HS_TRY(hs_col_append_column(r->b->cols[i], src->cols[i], err));
    r->b->n_rows += src->n_rows;
    return rows_account(r, ctx, op, err);
}

hs_status xo_rows_append_take(xo_rows *r, xo_ctx *ctx, const char *op, const hs_batch *src,
                              const int64_t *idx, int64_t n, hs_error *err)
{
    HS_TRY(xo_rows_init(r, &src->schema, err));
    if (n == 0)
        return HS_OK;
    for (int i = 0; i < src->n_cols && i < r->b->n_cols; i++) {
        hs_column *t;
        HS_TRY(hs_col_take_nullable(src->cols[i], idx, n, &t, err));
        hs_status s = hs_col_append_column(r->b->cols[i], t, err);
        hs_col_free(t);
        HS_TRY(s);
    }
    r->b->n_rows += n;
    return rows_account(r, ctx, op, err);
}

void xo_rows_free(xo_rows *r, xo_ctx *ctx)
{
    hs_batch_free(r->b);
    xo_mem_release(ctx, r->bytes);
    r->b = NULL;
    r->bytes = 0;
}

/* ---- output queue ---- */

hs_status xo_queue_push(xo_queue *q, hs_batch *b, hs_error *err)
{
    if (q->head > 0 && q->head == q->n) {
        q->head = q->n = 0;
    }
    if (q->n == q->cap) {
        if (q->head > 0) {
            memmove(q->a, q->a + q->head, (size_t)(q->n - q->head) * sizeof *q->a);
            q->n -= q->head;
            q->head = 0;
        }
        if (q->n == q->cap) {
            int cap = q->cap ? q->cap * 2 : 8;
            hs_batch **a = hs_realloc(q->a, (size_t)cap * sizeof *a);
            if (!a) {
                hs_batch_free(b);
                return hs_err_nomem(err, 0);
            }
            q->a = a;
            q->cap = cap;
        }
    }
    q->a[q->n++] = b;
    return HS_OK;
}

hs_batch *xo_queue_pop(xo_queue *q)
{
    if (q->head >= q->n)
        return NULL;
    return q->a[q->head++];
}

void xo_queue_free(xo_queue *q)
{
    for (int i = q->head; i < q->n; i++)
        hs_batch_free(q->a[i]);
    hs_free(q->a);
    memset(q, 0, sizeof *q);
}

/* ---- EXPLAIN ---- */

static hs_status indent(hs_buf *out, int depth)
{
    for (int i = 0; i < depth; i++)
        HS_TRY(hs_buf_puts(out, "  "));
    return HS_OK;
}

static hs_status explain_rec(const xo_op *op, bool analyze, int depth, hs_buf *out,
                             hs_error *err)
{
    hs_status s = indent(out, depth);
    if (s == HS_OK && depth > 0)
        s = hs_buf_puts(out, "-> ");
    if (s == HS_OK)
        s = hs_buf_puts(out, op->name);
    if (s == HS_OK && op->detail)
        s = hs_buf_printf(out, "  (%s)", op->detail);
    if (s == HS_OK && analyze)
        s = hs_buf_printf(out, "  (actual rows=%" PRId64 " batches=%" PRId64 " time=%.3f ms",
                          op->rows_out, op->batches_out, (double)op->ns / 1e6);
    if (s == HS_OK && analyze && op->mem_peak > 0)
        s = hs_buf_printf(out, " peak memory=%" PRId64 " bytes", op->mem_peak);
    if (s == HS_OK && analyze)
        s = hs_buf_append_byte(out, ')');
    if (s == HS_OK)
        s = hs_buf_append_byte(out, '\n');
    if (s != HS_OK)
        return hs_err_nomem(err, 0);
    if (op->explain_extra) {
        hs_buf extra = {0};
        s = op->explain_extra(op, &extra, err);
        if (s != HS_OK) {
            hs_buf_free(&extra);
            return s;
        }
        /* each line of extra, indented under the operator */
        const char *p = (const char *)extra.data, *end = p ? p + extra.len : NULL;
        while (s == HS_OK && p && p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
            s = indent(out, depth + 2);
            if (s == HS_OK)
                s = hs_buf_append(out, p, len);
            if (s == HS_OK)
                s = hs_buf_append_byte(out, '\n');
            p += len + (nl ? 1 : 0);
        }
        hs_buf_free(&extra);
        if (s != HS_OK)
            return hs_err_nomem(err, 0);
    }
    for (int i = 0; i < op->n_children; i++)
        HS_TRY(explain_rec(op->children[i], analyze, depth + 1, out, err));
    return HS_OK;
}

hs_status xo_explain(const xo_op *op, bool analyze, hs_buf *out, hs_error *err)
{
    HS_TRY(explain_rec(op, analyze, 0, out, err));
    const xo_ctx *ctx = op->ctx;
    if (analyze && ctx &&
        hs_buf_printf(out, "Peak memory: %" PRId64 " bytes (limit %" PRId64 ")\n",
                      atomic_load(&((xo_ctx *)ctx)->mem_peak), ctx->mem_limit) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

hs_status xo_batch_rows(const hs_batch *b, int64_t at, int64_t n, hs_batch **out, hs_error *err)
{
    int64_t *idx = hs_malloc((size_t)(n ? n : 1) * sizeof *idx);
    if (!idx)
        return hs_err_nomem(err, (size_t)n * sizeof *idx);
    for (int64_t i = 0; i < n; i++)
        idx[i] = at + i;
    hs_status st = xo_batch_take(&b->schema, b, idx, n, out, err);
    hs_free(idx);
    return st;
}
