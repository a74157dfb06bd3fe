/*
 * exec/basic.c - the streaming operators that keep no state across
 * batches beyond a counter: Values (literal batches), Filter, Project,
 * Limit, and the ArrowArrayStream adapter over an operator tree.
 *
 * Filter evaluates the bound predicate into a selection vector and takes
 * the selected rows (a batch whose rows all pass goes through untouched);
 * Project evaluates each expression into a new column (a subexpression
 * that occurs more than once among them once per chunk: ex_share); both run batches in
 * parallel on ctx->pool when ctx->threads > 1 (morsels = the child's
 * batches, results in input order).  Limit slices and stops pulling from
 * its child once it has produced `limit` rows.
 */
#include "exec/exec_int.h"
#include "columnar/arrow_c.h"

#include <inttypes.h>
#include <stdio.h>

/* ---- Values ---- */

typedef struct values_op {
    xo_op op;
    hs_batch **batches;
    int n, next;
    int64_t row;   /* first row of batches[next] not yet produced */
} values_op;

static hs_status values_next(xo_op *op, hs_batch **out, hs_error *err)
{
    values_op *v = (values_op *)op;
    HS_TRY(xo_check_cancel(op->ctx, err));
    while (v->next < v->n && v->row >= v->batches[v->next]->n_rows) {
        v->next++;
        v->row = 0;
    }
    if (v->next >= v->n)
        return HS_OK;
    hs_batch *b = v->batches[v->next];
    if (v->row == 0 && b->n_rows <= XO_BATCH_ROWS) {
        v->batches[v->next++] = NULL;
        *out = b;
        return HS_OK;
    }
    int64_t n = b->n_rows - v->row < XO_BATCH_ROWS ? b->n_rows - v->row : XO_BATCH_ROWS;
    hs_column *stack[64];
    hs_column **cols = b->n_cols <= 64 ? stack : hs_calloc((size_t)b->n_cols, sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 0);
    hs_status s = HS_OK;
    int made = 0;
    for (; made < b->n_cols && s == HS_OK; made++)
        s = hs_col_slice(b->cols[made], v->row, n, &cols[made], err);
    if (s == HS_OK)
        s = xo_batch_wrap(&op->schema, b->n_cols, cols, n, out, err);
    else
        for (int i = 0; i < made - 1; i++)
            hs_col_free(cols[i]);
    if (cols != stack)
        hs_free(cols);
    v->row += n;
    return s;
}

static void values_destroy(xo_op *op)
{
    values_op *v = (values_op *)op;
    for (int i = 0; i < v->n; i++)
        hs_batch_free(v->batches[i]);
    hs_free(v->batches);
}

hs_status xo_values(xo_ctx *ctx, const hs_field *schema, int n, hs_batch **batches, xo_op **out,
                    hs_error *err)
{
    *out = NULL;
    xo_op *op;
    hs_status s = xo_op_alloc(sizeof(values_op), ctx, "Values", 0, NULL, &op, err);
    if (s != HS_OK) {
        for (int i = 0; i < n; i++)
            hs_batch_free(batches[i]);
        return s;
    }
    values_op *v = (values_op *)op;
    op->next = values_next;
    op->destroy = values_destroy;
    v->batches = n > 0 ? hs_calloc((size_t)n, sizeof *v->batches) : NULL;
    if (n > 0 && !v->batches) {
        for (int i = 0; i < n; i++)
            hs_batch_free(batches[i]);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    v->n = n;
    for (int i = 0; i < n; i++)
        v->batches[i] = batches[i];
    hs_field_clear(&op->schema);
    if (schema->type != HS_TYPE_STRUCT || hs_field_copy(schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return schema->type != HS_TYPE_STRUCT
                   ? hs_err_set(err, HS_INVALID, "Values: schema must be a struct")
                   : hs_err_nomem(err, 0);
    }
    xo_schema_renumber(&op->schema);
    for (int i = 0; i < n; i++) {
        hs_batch *b = v->batches[i];
        if (b->n_cols != schema->n_children) {
            s = hs_err_set(err, HS_INVALID, "Values: batch %d has %d columns, schema has %d", i,
                           b->n_cols, schema->n_children);
            xo_free(op);
            return s;
        }
        for (int c = 0; c < b->n_cols; c++)
            if (b->cols[c]->type != schema->children[c].type || b->cols[c]->length != b->n_rows) {
                xo_free(op);
                return hs_err_set(err, HS_INVALID,
                                  "Values: batch %d column %d does not match the schema", i, c);
            }
        s = xo_batch_set_schema(b, &op->schema, err);
        if (s != HS_OK) {
            xo_free(op);
            return s;
        }
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%d batch%s", n, n == 1 ? "" : "es");
    if (!(op->detail = hs_strdup(buf))) {
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    *out = op;
    return HS_OK;
}

/* ---- parallel map: Filter and Project ----
 *
 * Filter and Project transform each batch on its own (apply).  With a
 * pool in ctx (ctx->threads > 1) they pull up to ctx->threads batches from
 * the child on the calling thread, apply them as tasks of one group, and
 * return the results in input order; otherwise they apply inline. */

typedef hs_status (*apply_fn)(xo_op *op, hs_batch *in, hs_batch **out, hs_error *err);

typedef struct par_job {
    xo_op *op;
    apply_fn fn;
    hs_batch *in, *out;
} par_job;

typedef struct par_state {
    par_job *jobs;
    int n, pos, cap;
    bool eof;
    bool serial;   /* nothing to evaluate (a Project of bare columns): inline */
} par_state;

static hs_status par_task(void *arg, hs_error *err)
{
    par_job *j = arg;
    hs_batch *in = j->in;
    j->in = NULL;
    return j->fn(j->op, in, &j->out, err);
}

static void par_free(par_state *ps)
{
    for (int i = 0; i < ps->n; i++) {
        hs_batch_free(ps->jobs[i].in);
        hs_batch_free(ps->jobs[i].out);
    }
    hs_free(ps->jobs);
    memset(ps, 0, sizeof *ps);
}

static hs_status par_next(xo_op *op, apply_fn fn, par_state *ps, hs_batch **out, hs_error *err)
{
    xo_ctx *ctx = op->ctx;
    int window = !ps->serial && ctx && ctx->pool && ctx->threads > 1 ? ctx->threads : 1;
    for (;;) {
        while (ps->pos < ps->n) {
            par_job *j = &ps->jobs[ps->pos++];
            *out = j->out;
            j->out = NULL;
            if (*out)
                return HS_OK;
        }
        if (ps->eof)
            return HS_OK;
        if (window == 1) {
            hs_batch *b;
            HS_TRY(xo_next(op->children[0], &b, err));
            if (!b) {
                ps->eof = true;
                return HS_OK;
            }
            HS_TRY(fn(op, b, out, err));
            if (*out)
                return HS_OK;
            continue;
        }
        if (ps->cap < window) {
            par_job *a = hs_realloc(ps->jobs, (size_t)window * sizeof *a);
            if (!a)
                return hs_err_nomem(err, 0);
            ps->jobs = a;
            ps->cap = window;
        }
        ps->n = ps->pos = 0;
        while (ps->n < window) {
            hs_batch *b;
            HS_TRY(xo_next(op->children[0], &b, err));
            if (!b) {
                ps->eof = true;
                break;
            }
            ps->jobs[ps->n++] = (par_job){op, fn, b, NULL};
        }
        if (ps->n == 1) {
            par_job *j = &ps->jobs[0];
            hs_batch *in = j->in;
            j->in = NULL;
            HS_TRY(fn(op, in, &j->out, err));
            continue;
        }
        hs_group *g;
        HS_TRY(hs_group_create(ctx->pool, &g, err));
        hs_status st = HS_OK;
        for (int i = 0; i < ps->n && st == HS_OK; i++)
            st = hs_group_submit(g, par_task, &ps->jobs[i]);
        hs_status wst = hs_group_wait(g, err);
        hs_group_destroy(g);
        if (st != HS_OK)
            return hs_err_nomem(err, 0);
        HS_TRY(wst);
    }
}

/* ---- Filter ---- */

typedef struct filter_op {
    xo_op op;
    ex_expr *pred;
    par_state par;
} filter_op;

/* Takes `in`; *out = its rows that pass (NULL when none). */
static hs_status filter_apply(xo_op *op, hs_batch *b, hs_batch **out, hs_error *err)
{
    filter_op *f = (filter_op *)op;
    *out = NULL;
    size_t n = (size_t)b->n_rows;
    uint8_t *sel = hs_malloc(n);
    if (!sel) {
        hs_batch_free(b);
        return hs_err_nomem(err, n);
    }
    int64_t n_match;
    hs_status s = ex_eval_filter(f->pred, b, NULL, sel, &n_match, err);
    if (s == HS_OK && n_match == b->n_rows) {
        hs_free(sel);
        *out = b;
        return HS_OK;
    }
    if (s == HS_OK && n_match > 0) {
        int64_t *idx = hs_malloc((size_t)n_match * sizeof *idx);
        if (!idx) {
            s = hs_err_nomem(err, 0);
        } else {
            int64_t k = 0;
            for (int64_t i = 0; i < b->n_rows; i++)
                if (sel[i])
                    idx[k++] = i;
            s = xo_batch_take(&op->schema, b, idx, k, out, err);
            hs_free(idx);
        }
    }
    hs_free(sel);
    hs_batch_free(b);
    return s;
}

static hs_status filter_next(xo_op *op, hs_batch **out, hs_error *err)
{
    return par_next(op, filter_apply, &((filter_op *)op)->par, out, err);
}

static void filter_destroy(xo_op *op)
{
    filter_op *f = (filter_op *)op;
    ex_free(f->pred);
    par_free(&f->par);
}

static int64_t child_max_rows(const xo_op *op) { return xo_max_rows(op->children[0]); }

/* A runtime join filter on a column passes to the child (same columns). */
static bool filter_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    return xo_push_keyfilter(op->children[0], col, kf);
}

hs_status xo_filter(xo_op *child, ex_expr *pred, xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    hs_status s = xo_op_alloc(sizeof(filter_op), child->ctx, "Filter", 1, &child, &op, err);
    if (s != HS_OK) {
        ex_free(pred);
        return s;
    }
    ((filter_op *)op)->pred = pred;
    op->next = filter_next;
    op->destroy = filter_destroy;
    op->push_keyfilter = filter_push_keyfilter;
    op->max_rows = child_max_rows;
    hs_field_clear(&op->schema);
    if (hs_field_copy(&child->schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    char *txt = NULL;
    s = ex_format(pred, &txt, err);
    if (s != HS_OK) {
        xo_free(op);
        return s;
    }
    hs_buf d = {0};
    if (hs_buf_printf(&d, "filter: %s", txt) != HS_OK) {
        hs_free(txt);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    hs_free(txt);
    op->detail = (char *)hs_buf_detach(&d, NULL);
    *out = op;
    return HS_OK;
}

/* ---- Project ---- */

typedef struct project_op {
    xo_op op;
    int n;
    ex_expr **exprs;
    int n_shared;   /* common subexpressions of exprs (ex_share) */
    par_state par;
} project_op;

static hs_status project_apply(xo_op *op, hs_batch *b, hs_batch **out, hs_error *err)
{
    project_op *p = (project_op *)op;
    *out = NULL;
    hs_column **cols = hs_calloc((size_t)(p->n > 0 ? p->n : 1), sizeof *cols);
    if (!cols) {
        hs_batch_free(b);
        return hs_err_nomem(err, 0);
    }
    hs_status s = HS_OK;
    /* bare column references pass the batch's column through (moved when
     * no later one takes it too, else copied): computed columns first, as
     * they may read the columns that move */
    if (p->n_shared > 0) {
        bool *skip = hs_calloc((size_t)p->n, sizeof *skip);
        s = skip ? HS_OK : hs_err_nomem(err, 0);
        for (int i = 0; i < p->n && s == HS_OK; i++)
            skip[i] = ex_passthrough(p->exprs[i], b) != NULL;
        if (s == HS_OK)
            s = ex_eval_shared(p->exprs, p->n, p->n_shared, b, skip, cols, err);
        hs_free(skip);
    } else {
        for (int i = 0; i < p->n && s == HS_OK; i++)
            if (!ex_passthrough(p->exprs[i], b))
                s = ex_eval(p->exprs[i], b, &cols[i], err);
    }
    for (int i = 0; i < p->n && s == HS_OK; i++) {
        const hs_column *src = ex_passthrough(p->exprs[i], b);
        if (!src)
            continue;
        bool later = false;
        for (int k = i + 1; k < p->n && !later; k++)
            later = ex_passthrough(p->exprs[k], b) == src;
        int at = -1;
        for (int c = 0; c < b->n_cols && at < 0; c++)
            if (b->cols[c] == src)
                at = c;
        if (!later && at >= 0 && src->length == b->n_rows) {
            cols[i] = b->cols[at];
            b->cols[at] = NULL;
        } else {
            s = hs_col_slice(src, 0, b->n_rows, &cols[i], err);
        }
    }
    if (s == HS_OK)
        s = xo_batch_wrap(&op->schema, p->n, cols, b->n_rows, out, err);
    else
        for (int i = 0; i < p->n; i++)
            hs_col_free(cols[i]);
    hs_free(cols);
    hs_batch_free(b);
    return s;
}

static hs_status project_next(xo_op *op, hs_batch **out, hs_error *err)
{
    return par_next(op, project_apply, &((project_op *)op)->par, out, err);
}

static void project_destroy(xo_op *op)
{
    project_op *p = (project_op *)op;
    for (int i = 0; i < p->n; i++)
        ex_free(p->exprs[i]);
    hs_free(p->exprs);
    par_free(&p->par);
}

/* A runtime join filter on an output column that is a bare child column
 * passes to the child. */
static bool project_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    const project_op *p = (const project_op *)op;
    int32_t id = col < p->n ? ex_column_id(p->exprs[col]) : -1;
    if (id < 1 || id > op->children[0]->schema.n_children) {
        hs_keyfilter_free(kf);
        return false;
    }
    return xo_push_keyfilter(op->children[0], id - 1, kf);
}

static int64_t project_exact_rows(const xo_op *op) { return xo_exact_rows(op->children[0]); }
static hs_status project_count_rows(xo_op *op, int64_t *n, hs_error *err)
{
    return xo_count_rows(op->children[0], n, err);
}


hs_status xo_project(xo_op *child, int n, ex_expr **exprs, const char *const *names, xo_op **out,
                     hs_error *err)
{
    *out = NULL;
    xo_op *op;
    hs_status s = xo_op_alloc(sizeof(project_op), child->ctx, "Project", 1, &child, &op, err);
    project_op *p = (project_op *)op;
    if (s == HS_OK) {
        p->exprs = hs_calloc((size_t)(n > 0 ? n : 1), sizeof *p->exprs);
        if (!p->exprs) {
            xo_free(op);
            s = hs_err_nomem(err, 0);
        }
    }
    if (s != HS_OK) {
        for (int i = 0; i < n; i++)
            ex_free(exprs[i]);
        return s;
    }
    p->n = n;
    for (int i = 0; i < n; i++)
        p->exprs[i] = exprs[i];
    p->n_shared = ex_share(p->exprs, n);
    /* bare columns only: each batch's columns move (or are sliced), which
     * costs less than a pool round (one per `threads` batches) */
    p->par.serial = true;
    for (int i = 0; i < n; i++)
        p->par.serial &= ex_column_id(p->exprs[i]) >= 1;
    op->next = project_next;
    op->destroy = project_destroy;
    op->push_keyfilter = project_push_keyfilter;
    op->exact_rows = project_exact_rows;
    op->count_rows = project_count_rows;
    op->max_rows = child_max_rows;
    hs_buf d = {0};
    s = hs_buf_puts(&d, "");
    for (int i = 0; i < n && s == HS_OK; i++) {
        hs_field f;
        if (hs_field_copy(ex_type(exprs[i]), &f) != HS_OK) {
            s = hs_err_nomem(err, 0);
            break;
        }
        hs_free(f.name);
        f.name = hs_strdup(names && names[i] ? names[i] : "?column?");
        f.nullable = true;
        if (!f.name || hs_field_add_child(&op->schema, &f) != HS_OK) {
            hs_field_clear(&f);
            s = hs_err_nomem(err, 0);
            break;
        }
        char *txt = NULL;
        s = ex_format(exprs[i], &txt, err);
        if (s == HS_OK && hs_buf_printf(&d, "%s%s", i ? ", " : "", txt) != HS_OK)
            s = hs_err_nomem(err, 0);
        hs_free(txt);
    }
    if (s != HS_OK) {
        hs_buf_free(&d);
        xo_free(op);
        return s;
    }
    xo_schema_renumber(&op->schema);
    op->detail = (char *)hs_buf_detach(&d, NULL);
    *out = op;
    return HS_OK;
}

/* ---- Limit ---- */

typedef struct limit_op {
    xo_op op;
    int64_t limit, offset;   /* remaining */
    bool done;
} limit_op;

static hs_status limit_next(xo_op *op, hs_batch **out, hs_error *err)
{
    limit_op *l = (limit_op *)op;
    for (;;) {
        if (l->done || l->limit == 0)
            return HS_OK;
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b) {
            l->done = true;
            return HS_OK;
        }
        int64_t start = 0, n = b->n_rows;
        if (l->offset > 0) {
            int64_t skip = l->offset < n ? l->offset : n;
            l->offset -= skip;
            start = skip;
            n -= skip;
        }
        if (l->limit >= 0 && n > l->limit)
            n = l->limit;
        if (l->limit > 0)
            l->limit -= n;
        if (n == 0) {
            hs_batch_free(b);
            continue;
        }
        if (start == 0 && n == b->n_rows) {
            *out = b;
            return HS_OK;
        }
        int64_t *idx = hs_malloc((size_t)n * sizeof *idx);
        if (!idx) {
            hs_batch_free(b);
            return hs_err_nomem(err, 0);
        }
        for (int64_t i = 0; i < n; i++)
            idx[i] = start + i;
        hs_status s = xo_batch_take(&op->schema, b, idx, n, out, err);
        hs_free(idx);
        hs_batch_free(b);
        return s;
    }
}

hs_status xo_limit(xo_op *child, int64_t limit, int64_t offset, xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(limit_op), child->ctx, "Limit", 1, &child, &op, err));
    limit_op *l = (limit_op *)op;
    l->limit = limit < 0 ? -1 : limit;
    l->offset = offset > 0 ? offset : 0;
    op->next = limit_next;
    hs_field_clear(&op->schema);
    char buf[96];
    if (limit >= 0)
        snprintf(buf, sizeof buf, "limit: %" PRId64 ", offset: %" PRId64, limit, l->offset);
    else
        snprintf(buf, sizeof buf, "offset: %" PRId64, l->offset);
    if (hs_field_copy(&child->schema, &op->schema) != HS_OK || !(op->detail = hs_strdup(buf))) {
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    *out = op;
    return HS_OK;
}

/* ---- stream adapter ---- */

typedef struct stream_src {
    xo_op *op;
    void (*on_close)(void *);
    void *owner;
} stream_src;

static hs_status stream_next(void *ctx, hs_batch **out, hs_error *err)
{
    stream_src *s = ctx;
    return xo_next(s->op, out, err);
}

static void stream_close(void *ctx)
{
    stream_src *s = ctx;
    xo_free(s->op);
    if (s->on_close)
        s->on_close(s->owner);
    hs_free(s);
}

hs_status xo_to_stream(xo_op *op, void (*on_close)(void *owner), void *owner,
                       struct ArrowArrayStream *out, hs_error *err)
{
    stream_src *s = hs_calloc(1, sizeof *s);
    hs_batch_source src = {0};
    if (!s || hs_field_copy(&op->schema, &src.schema) != HS_OK) {
        hs_free(s);
        xo_free(op);
        if (on_close)
            on_close(owner);
        return hs_err_nomem(err, 0);
    }
    s->op = op;
    s->on_close = on_close;
    s->owner = owner;
    src.next = stream_next;
    src.close = stream_close;
    src.ctx = s;
    return hs_arrow_export_stream(&src, out, err);
}
