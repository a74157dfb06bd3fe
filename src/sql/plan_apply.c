/*
 * sql/plan_apply.c - subqueries over FROM functions of the outer row: Apply.
 *
 *   SELECT id, (SELECT count(*) FROM unnest(t.tags) x WHERE x > 5) FROM t
 *   SELECT * FROM t WHERE EXISTS (SELECT 1 FROM generate_series(1, t.n) g ...)
 *
 * A subquery whose FROM holds a function reading columns (of the outer
 * query, or of an earlier item of its own FROM) is not decorrelated into a
 * join: its rows are a function of the outer row's values, not of a table
 * that could be grouped by a correlation key, and PostgreSQL's results
 * over empty and NULL arrays (count(*) = 0, max = NULL, EXISTS false, ANY
 * false or NULL, string_agg NULL) fall out of running the subquery as
 * written rather than of patching a join's missing rows afterwards.  So
 * this is an Apply (PostgreSQL's SubPlan with parameters): the operator
 * pulls the outer batches and, for each row,
 *
 *   1. makes a one-row relation of the outer row's columns, marked outer
 *      (qcol.outer: a name finds them only when no column of the subquery
 *      has it, as PostgreSQL resolves names innermost first; '*' skips
 *      them);
 *   2. plans the subquery (a fresh copy of its parse tree) with
 *      planner.outer_row set: every SELECT block planned then joins that
 *      row in before its FROM functions run (plan_select.c, plan_block),
 *      so unnest(t.tags) is the ordinary lateral function of plan_srf.c
 *      over one row, and nested derived tables see the row too;
 *   3. runs it: no row gives NULL, one row its value, two or more fail
 *      with 21000 like any scalar subquery; the value is appended to the
 *      outer batch as a new column.
 *
 * EXISTS / IN / op ANY / op ALL over such subqueries reach here as count,
 * min, max scalar subqueries (plan_subq.c, sublink_expr), so their
 * three-valued results are PostgreSQL's.  Planning happens once at plan
 * time over an empty outer row (result type, binding errors with their
 * SQLSTATE), then once per outer row; the schemas a row's plan keeps are
 * released after it (sq_ctx_keep_release).  The cost is a plan per outer
 * row (tens of microseconds), which is what keeps the semantics exact.
 * A subquery that also plans with no outer row at all reads none of its
 * columns (ARRAY(SELECT k FROM u) in a select list): it runs once, at the
 * first row, and every row gets that value (PostgreSQL's InitPlan).
 * The subquery may read CTEs of the enclosing statement: they are planned
 * again in each row's plan (see "the enclosing statement's CTEs" below).
 *
 * A guard column (pl_apply_attach_guarded) makes the Apply lazy as
 * PostgreSQL's CASE and COALESCE are: a row whose guard is not true gets
 * NULL and the subquery does not run for it (nor, if constant, at all
 * until a row reaches it).
 * plan_subq.c also sends here the correlated scalar subqueries that do not
 * decorrelate into a join exactly (correlation by inequality, outer
 * references in the select list or several levels down, LIMIT, a
 * non-aggregate subquery that must fail with 21000 on two rows, outer
 * columns that are group keys of a grouped query).
 */
#include "sql/plan_int.h"

typedef struct apply_row {
    const hs_field *schema;   /* STRUCT: the outer relation's columns */
    const qcol *cols;
    int n;
    const hs_batch *row;      /* one row; NULL: no rows (planning for the type) */
} apply_row;

typedef struct apply_op {
    xo_op op;
    sq_session *s;            /* borrowed: a result never outlives its session */
    char *text;               /* the statement text (owned) */
    json_t *sub;              /* the subquery's SelectStmt body (owned) */
    json_t *names;            /* planner.names (a reference) */
    bool all_columns;
    int depth;
    qcol *cols;               /* the outer relation's names (owned) */
    int n;
    xo_ctx *rctx;             /* the per-row plans' context (owned): one thread */
    cte *ctes;                /* the enclosing statement's CTEs (owned definitions) */
    int n_ctes;
    bool array;               /* ARRAY(subquery): all rows' values as one list */
    bool constant;            /* the subquery reads no outer column: run once */
    hs_column *cached;        /* its value then (owned), after the first row */
    bool lateral;             /* LATERAL (subquery) in FROM: all its rows and columns per row */
    bool left;                /* LEFT JOIN LATERAL: a row without any gets NULLs */
    int n_sub;                /* lateral: the subquery's columns */
    int guard;                /* a BOOL column of the input: rows where it is not true get NULL
                                 without running the subquery (CASE, COALESCE); -1 none */
} apply_op;

/* ---- which subqueries ---- */

static bool item_has_lateral(const json_t *item, int depth)
{
    json_t *b;
    if (depth > 50)
        return false;
    if (pl_srf_is_lateral(item))
        return true;
    if (pl_is_kind(item, "JoinExpr", &b))
        return item_has_lateral(pl_jget(b, "larg"), depth + 1) ||
               item_has_lateral(pl_jget(b, "rarg"), depth + 1);
    if (pl_is_kind(item, "RangeSubselect", &b)) {
        json_t *sel = pl_jget(pl_jget(b, "subquery"), "SelectStmt");
        return sel && pl_apply_needed(sel);
    }
    return false;
}

static bool from_has_lateral(const json_t *from, int depth)
{
    for (size_t i = 0; i < json_array_size(from); i++)
        if (item_has_lateral(json_array_get(from, i), depth))
            return true;
    return false;
}

bool pl_apply_needed(const json_t *sub)
{
    if (!sub)
        return false;
    /* a set operation's sides: SelectStmt bodies, wrapped or not */
    json_t *l = pl_jget(sub, "larg"), *r = pl_jget(sub, "rarg"), *b;
    if (pl_is_kind(l, "SelectStmt", &b))
        l = b;
    if (pl_is_kind(r, "SelectStmt", &b))
        r = b;
    if (l || r)
        return pl_apply_needed(l) || pl_apply_needed(r);
    return from_has_lateral(pl_jget(sub, "fromClause"), 0);
}

/* ---- the enclosing statement's CTEs ----
 * The subquery may read CTEs of the statement around it.  The Apply keeps
 * their definitions (name, query and column names, references held) and
 * gives each row's plan a fresh list of them: a plain CTE is planned where
 * it is read, a recursive one runs again for the row (its rows are
 * released with the row's plan).  Marked enclosing, they are planned
 * without the outer row, as PostgreSQL scopes them. */

static void ctes_free(cte *a, int n)
{
    for (int i = 0; a && i < n; i++) {
        hs_free((char *)a[i].name);
        json_decref((json_t *)a[i].query);
        json_decref((json_t *)a[i].colnames);
    }
    hs_free(a);
}

/* *out (caller frees with ctes_free) = the definitions of the list l. */
static hs_status ctes_keep(planner *p, const cte *l, cte **out, int *n_out)
{
    int n = 0;
    for (const cte *c = l; c; c = c->next)
        n++;
    *out = NULL;
    *n_out = 0;
    if (n == 0)
        return HS_OK;
    cte *a = hs_calloc((size_t)n, sizeof *a);
    if (!a)
        return pl_nomem(p);
    int i = 0;
    for (const cte *c = l; c; c = c->next, i++) {
        a[i].name = hs_strdup(c->name ? c->name : "");
        a[i].query = json_incref((json_t *)c->query);
        a[i].colnames = c->colnames ? json_incref((json_t *)c->colnames) : NULL;
        a[i].recursive = c->recursive;
        a[i].enclosing = true;
        if (!a[i].name) {
            ctes_free(a, i + 1);
            return pl_nomem(p);
        }
    }
    *out = a;
    *n_out = n;
    return HS_OK;
}

/* A fresh list over the kept definitions (borrowed from them), NULL when
 * there are none or no memory (*ok false then). */
static cte *ctes_fresh(const cte *defs, int n, bool *ok)
{
    *ok = true;
    if (n == 0)
        return NULL;
    cte *a = hs_calloc((size_t)n, sizeof *a);
    if (!a) {
        *ok = false;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        a[i].name = defs[i].name;
        a[i].query = defs[i].query;
        a[i].colnames = defs[i].colnames;
        a[i].recursive = defs[i].recursive;
        a[i].enclosing = true;
        a[i].next = i + 1 < n ? &a[i + 1] : NULL;
    }
    return a;
}

static void ctes_fresh_free(cte *a, int n)
{
    for (int i = 0; a && i < n; i++)
        pl_cte_clear(&a[i]);
    hs_free(a);
}

/* ---- the outer row as a relation ---- */

hs_status pl_apply_outer_rel(planner *p, rel *out)
{
    const apply_row *ar = p->outer_row;
    memset(out, 0, sizeof *out);
    hs_batch *b = NULL;
    hs_status st = HS_OK;
    if (ar->row) {
        b = hs_calloc(1, sizeof *b);
        st = b ? hs_field_copy(ar->schema, &b->schema) : pl_nomem(p);
        if (st == HS_OK) {
            b->cols = hs_calloc((size_t)ar->row->n_cols + 1, sizeof *b->cols);
            st = b->cols ? HS_OK : pl_nomem(p);
        }
        for (int i = 0; st == HS_OK && i < ar->row->n_cols; i++) {
            st = hs_col_slice(ar->row->cols[i], 0, 1, &b->cols[i], p->err);
            if (st == HS_OK)
                b->n_cols++;
        }
        if (st == HS_OK)
            b->n_rows = 1;
        if (st != HS_OK) {
            hs_batch_free(b);
            return st;
        }
    }
    HS_TRY(xo_values(p->ctx, ar->schema, b ? 1 : 0, b ? &b : NULL, &out->op, p->err));
    out->cols = hs_calloc((size_t)ar->n + 1, sizeof *out->cols);
    if (!out->cols) {
        pl_rel_clear(out);
        return pl_nomem(p);
    }
    out->n = ar->n;
    for (int i = 0; i < ar->n; i++) {
        out->cols[i].qual = pl_dup_or_null(ar->cols[i].qual);
        out->cols[i].name = hs_strdup(ar->cols[i].name ? ar->cols[i].name : "");
        out->cols[i].hidden = ar->cols[i].hidden;
        out->cols[i].outer = true;
        if ((ar->cols[i].qual && !out->cols[i].qual) || !out->cols[i].name) {
            pl_rel_clear(out);
            return pl_nomem(p);
        }
    }
    return HS_OK;
}

hs_status pl_apply_with_row(planner *p, const rel *cur, hs_status (*fn)(planner *, void *), void *ctx)
{
    apply_row ar = {&cur->op->schema, cur->cols, cur->n, NULL};
    const apply_row *saved = p->outer_row;
    p->outer_row = &ar;
    hs_status st = fn(p, ctx);
    p->outer_row = saved;
    return st;
}

/* Plans sub with the outer row ar; *out its one column. */
static hs_status plan_for_row(planner *p, const json_t *sub, const apply_row *ar, rel *out)
{
    const apply_row *saved = p->outer_row;
    p->outer_row = ar;
    json_t *copy = json_deep_copy(sub);
    hs_status st = copy ? pl_plan_select(p, copy, out) : pl_nomem(p);
    json_decref(copy);
    p->outer_row = saved;
    if (st == HS_OK && out->n != 1) {
        pl_rel_clear(out);
        st = pl_fail(p, HS_INVALID, "42601", -1, "subquery must return only one column");
    }
    return st;
}

/* ---- the operator ---- */

/* The subquery's value for row i of b into col. */
static hs_status apply_row_value(apply_op *a, const hs_batch *b, int64_t i, hs_column *col,
                                 hs_error *err)
{
    hs_batch row = {0};
    row.n_cols = b->n_cols;
    row.n_rows = 1;
    row.cols = hs_calloc((size_t)b->n_cols + 1, sizeof *row.cols);
    if (!row.cols)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    for (int c = 0; c < b->n_cols && st == HS_OK; c++)
        st = hs_col_slice(b->cols[c], i, 1, &row.cols[c], err);
    planner p = {.s = a->s, .ctx = a->rctx, .text = a->text, .err = err, .names = a->names,
                 .all_columns = a->all_columns, .depth = a->depth};
    apply_row ar = {&a->op.children[0]->schema, a->cols, a->n, &row};
    int mark = sq_ctx_keep_mark(a->rctx);
    rel s = {0};
    bool ok;
    cte *ctes = ctes_fresh(a->ctes, a->n_ctes, &ok);
    p.ctes = ctes;
    if (st == HS_OK && !ok)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK)
        st = plan_for_row(&p, a->sub, &ar, &s);
    int64_t seen = 0;
    while (st == HS_OK && a->array) {
        /* ARRAY(subquery): the rows in the subquery's order, {} for none */
        hs_batch *o = NULL;
        st = xo_next(s.op, &o, err);
        if (st != HS_OK || !o)
            break;
        if (o->n_rows > 0)
            st = hs_col_append_column(col->children[0], o->cols[0], err);
        hs_batch_free(o);
    }
    if (st == HS_OK && a->array)
        st = hs_col_list_end(col) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    while (st == HS_OK && !a->array) {
        hs_batch *o = NULL;
        st = xo_next(s.op, &o, err);
        if (st != HS_OK || !o)
            break;
        if (o->n_rows > 0 && (seen += o->n_rows) > 1)
            st = hs_err_set(err, HS_INVALID, "more than one row returned by a subquery used as an expression");
        else if (o->n_rows == 1)
            st = hs_col_append_column(col, o->cols[0], err);
        hs_batch_free(o);
    }
    if (st == HS_OK && seen == 0 && !a->array)
        st = hs_col_append_null(col) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    pl_rel_clear(&s);
    ctes_fresh_free(ctes, a->n_ctes);
    sq_ctx_keep_release(a->rctx, mark);
    for (int c = 0; c < b->n_cols; c++)
        hs_col_free(row.cols[c]);
    hs_free(row.cols);
    return st;
}

/* What an Apply and a LateralApply both keep once planned (st: the status so
 * far; nothing is done past a failure): the statement's text and the
 * subquery's tree (re-planned per row), a serial context, the CTE
 * definitions (owned by a from here on, freed here when a is NULL), and
 * copies of cur's column names (a->cols has room for one more). */
static hs_status apply_take(planner *p, apply_op *a, const rel *cur, const json_t *sub,
                            cte *defs, int n_defs, hs_status st)
{
    if (st == HS_OK) {
        a->cols = hs_calloc((size_t)cur->n + 1, sizeof *a->cols);
        a->text = hs_strdup(p->text ? p->text : "");
        a->sub = json_deep_copy(sub);
        if (!a->cols || !a->text || !a->sub)
            st = pl_nomem(p);
    }
    if (st == HS_OK)
        st = sq_ctx_new_serial(p->ctx, &a->rctx, p->err);
    if (a) {
        a->ctes = defs;   /* apply_destroy frees them from here on */
        a->n_ctes = n_defs;
    } else {
        ctes_free(defs, n_defs);
    }
    for (int i = 0; st == HS_OK && i < cur->n; i++) {
        a->cols[i].qual = pl_dup_or_null(cur->cols[i].qual);
        a->cols[i].name = pl_dup_or_null(cur->cols[i].name);
        a->cols[i].hidden = cur->cols[i].hidden;
        a->n++;
        if ((cur->cols[i].qual && !a->cols[i].qual) || (cur->cols[i].name && !a->cols[i].name))
            st = pl_nomem(p);
    }
    return st;
}

/* apply_row_value, or the one value of a constant subquery (computed at the
 * first row, as PostgreSQL runs an uncorrelated subquery once). */
static hs_status apply_value(apply_op *a, const hs_batch *b, int64_t i, hs_column *col, hs_error *err)
{
    if (!a->constant)
        return apply_row_value(a, b, i, col, err);
    if (!a->cached) {
        hs_column *one = NULL;
        HS_TRY(hs_col_create(&a->op.schema.children[a->op.schema.n_children - 1], 1, &one, err));
        hs_status st = apply_row_value(a, b, i, one, err);
        if (st != HS_OK) {
            hs_col_free(one);
            return st;
        }
        a->cached = one;
    }
    return hs_col_append_column(col, a->cached, err);
}

static hs_status apply_next(xo_op *op, hs_batch **out, hs_error *err)
{
    apply_op *a = (apply_op *)op;
    *out = NULL;
    hs_batch *in = NULL;
    HS_TRY(xo_next(op->children[0], &in, err));
    if (!in)
        return HS_OK;
    const hs_field *rf = &op->schema.children[op->schema.n_children - 1];
    hs_column *col = NULL;
    hs_status st = hs_col_create(rf, in->n_rows, &col, err);
    for (int64_t i = 0; i < in->n_rows && st == HS_OK; i++) {
        const hs_column *g = a->guard >= 0 ? in->cols[a->guard] : NULL;
        if (xo_cancelled(op->ctx))
            st = hs_err_set(err, HS_CANCELLED, "canceling statement due to user request");
        else if (g && !(hs_col_is_valid(g, i) && hs_bit_get(g->values.data, i)))
            st = hs_col_append_null(col) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
        else
            st = apply_value(a, in, i, col, err);
    }
    hs_batch *b = st == HS_OK ? hs_calloc(1, sizeof *b) : NULL;
    if (st == HS_OK && !b)
        st = hs_err_nomem(err, sizeof *b);
    if (st == HS_OK && hs_field_copy(&op->schema, &b->schema) != HS_OK)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK) {
        b->cols = hs_calloc((size_t)in->n_cols + 2, sizeof *b->cols);
        if (!b->cols)
            st = hs_err_nomem(err, 0);
    }
    if (st != HS_OK) {
        hs_batch_free(b);
        hs_batch_free(in);
        hs_col_free(col);
        return st;
    }
    for (int c = 0; c < in->n_cols; c++) {
        b->cols[c] = in->cols[c];
        in->cols[c] = NULL;
    }
    b->cols[in->n_cols] = col;
    b->n_cols = in->n_cols + 1;
    b->n_rows = in->n_rows;
    in->n_cols = 0;
    hs_batch_free(in);
    *out = b;
    return HS_OK;
}

static void apply_destroy(xo_op *op)
{
    apply_op *a = (apply_op *)op;
    hs_free(a->text);
    json_decref(a->sub);
    json_decref(a->names);
    pl_qcols_free(a->cols, a->n);
    sq_ctx_free(a->rctx);
    ctes_free(a->ctes, a->n_ctes);
    hs_col_free(a->cached);
}

hs_status pl_apply_attach(planner *p, rel *cur, const json_t *sl, int *col)
{
    return pl_apply_attach_guarded(p, cur, sl, -1, col);
}

hs_status pl_apply_attach_guarded(planner *p, rel *cur, const json_t *sl, int guard, int *col)
{
    json_t *sub = pl_jget(pl_jget(sl, "subselect"), "SelectStmt");
    int loc = sq_loc(sl);
    if (!sub)
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported subquery");
    int oloc = pl_sub_outer_agg(p, sub);
    if (oloc != -2)
        return pl_fail(p, HS_UNSUPPORTED, "0A000", oloc,
                       "an aggregate of an outer query inside this subquery is not supported");
    /* once now, over no outer row: the result's type and binding errors */
    apply_row ar = {&cur->op->schema, cur->cols, cur->n, NULL};
    rel s = {0};
    cte *defs;
    int n_defs;
    HS_TRY(ctes_keep(p, p->ctes, &defs, &n_defs));
    bool ok;
    cte *saved = p->ctes, *fresh = ctes_fresh(defs, n_defs, &ok);
    p->ctes = fresh;   /* a recursive one must not run over the empty row into saved's */
    hs_status st0 = ok ? plan_for_row(p, sub, &ar, &s) : pl_nomem(p);
    p->ctes = saved;
    if (st0 != HS_OK) {
        ctes_fresh_free(fresh, n_defs);
        ctes_free(defs, n_defs);
        return st0;
    }
    /* planned with no outer row at all, it binds: it reads none (names
     * resolve innermost first, so the same ones), its value is a constant */
    bool constant = false;
    {
        bool ok2;
        cte *fresh2 = ctes_fresh(defs, n_defs, &ok2);
        const apply_row *saved_row = p->outer_row;
        json_t *copy = ok2 ? json_deep_copy(sub) : NULL;
        rel t = {0};
        p->ctes = fresh2;
        p->outer_row = NULL;
        hs_status stc = copy ? pl_plan_select(p, copy, &t) : HS_NOMEM;
        p->outer_row = saved_row;
        p->ctes = saved;
        constant = stc == HS_OK;
        pl_rel_clear(&t);
        json_decref(copy);
        ctes_fresh_free(fresh2, n_defs);
        if (stc != HS_OK)
            sq_fail_clear(p->s, p->err);
    }
    apply_op *a = hs_calloc(1, sizeof *a);
    xo_op **kids = a ? hs_calloc(1, sizeof *kids) : NULL;
    qcol *ncols = hs_calloc((size_t)cur->n + 2, sizeof *ncols);
    hs_status st = a && kids && ncols ? HS_OK : pl_nomem(p);
    if (st == HS_OK && hs_field_copy(&cur->op->schema, &a->op.schema) != HS_OK)
        st = pl_nomem(p);
    const char *slt = pl_jstrv(sl, "subLinkType");
    bool array = slt && !strcmp(slt, "ARRAY_SUBLINK");
    if (st == HS_OK && array) {
        hs_type et = s.op->schema.children[0].type;
        if (et == HS_TYPE_BINARY || et == HS_TYPE_LIST || et == HS_TYPE_STRUCT ||
            et == HS_TYPE_MAP || et == HS_TYPE_FIXED_LIST || et == HS_TYPE_FIXED_BINARY)
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "ARRAY(subquery) of %s is not supported",
                         hs_type_name(et));
    }
    if (st == HS_OK) {
        hs_field f;
        if (hs_field_copy(&s.op->schema.children[0], &f) != HS_OK)
            st = pl_nomem(p);
        else {
            f.nullable = true;
            hs_free(f.name);
            f.name = hs_strdup(array ? "item" : "?column?");
            if (f.name && array) {
                hs_field item = f;
                hs_field_init_list(&f, "?column?", false, &item);
                if (!f.name || f.n_children != 1) {
                    hs_field_clear(&f);
                    f.name = NULL;
                }
            }
            if (f.name)
                f.field_id = a->op.schema.n_children + 1;
            if (!f.name || hs_field_add_child(&a->op.schema, &f) != HS_OK) {
                hs_field_clear(&f);
                st = pl_nomem(p);
            }
        }
    }
    pl_rel_clear(&s);
    ctes_fresh_free(fresh, n_defs);   /* after the plan that may read their rows */
    st = apply_take(p, a, cur, sub, defs, n_defs, st);
    if (st != HS_OK) {
        if (a) {
            hs_field_clear(&a->op.schema);
            apply_destroy(&a->op);
        }
        hs_free(a);
        hs_free(kids);
        hs_free(ncols);
        return st;
    }
    a->s = p->s;
    a->guard = guard >= 0 && guard < cur->n && cur->op->schema.children[guard].type == HS_TYPE_BOOL ? guard : -1;
    a->array = array;
    a->constant = constant;
    a->names = json_incref(p->names);
    a->all_columns = p->all_columns;
    a->depth = p->depth;
    kids[0] = cur->op;
    a->op.name = "Apply";
    a->op.ctx = cur->op->ctx;
    a->op.n_children = 1;
    a->op.children = kids;
    a->op.next = apply_next;
    a->op.destroy = apply_destroy;
    a->op.detail = hs_strdup(constant ? "subquery reads no outer column: run once"
                                      : "subquery planned and run per outer row");   /* NULL: no detail */
    if (cur->n)   /* no columns yet: cur->cols may be NULL */
        memcpy(ncols, cur->cols, (size_t)cur->n * sizeof *ncols);
    ncols[cur->n] = (qcol){.qual = NULL, .name = hs_strdup(""), .hidden = true};
    cur->op = &a->op;   /* cur's first columns stay as they were */
    if (!ncols[cur->n].name) {
        hs_free(ncols);
        return pl_nomem(p);
    }
    hs_free(cur->cols);
    cur->cols = ncols;
    *col = cur->n;
    cur->n++;
    return HS_OK;
}

/* ---- LATERAL (subquery) in FROM ----
 *   FROM t1, LATERAL (SELECT k, count(*) FROM t2 WHERE t2.k < t1.g GROUP BY k) x
 *   t1 LEFT JOIN LATERAL (SELECT max(w) FROM t2 WHERE t2.w > t1.v) x ON true
 * A LATERAL subquery that plan_lateral.c does not decorrelate exactly
 * (aggregates, GROUP BY / HAVING / DISTINCT, outer columns outside WHERE
 * equalities, set operations, its own subqueries) runs here, per row of
 * the FROM items before it, as the scalar Apply runs its subquery: the
 * output is each outer row joined with every row the subquery gives for
 * it, and for LEFT JOIN the outer row with NULLs when it gives none.  The
 * subquery's columns are named by its alias (and column aliases). */

static hs_status lateral_rows(apply_op *a, const hs_batch *in, int64_t i, hs_batch *acc, hs_error *err)
{
    hs_batch row = {0};
    row.n_cols = in->n_cols;
    row.n_rows = 1;
    row.cols = hs_calloc((size_t)in->n_cols + 1, sizeof *row.cols);
    if (!row.cols)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    for (int c = 0; c < in->n_cols && st == HS_OK; c++)
        st = hs_col_slice(in->cols[c], i, 1, &row.cols[c], err);
    planner p = {.s = a->s, .ctx = a->rctx, .text = a->text, .err = err, .names = a->names,
                 .all_columns = a->all_columns, .depth = a->depth};
    apply_row ar = {&a->op.children[0]->schema, a->cols, a->n, &row};
    int mark = sq_ctx_keep_mark(a->rctx);
    rel s = {0};
    bool ok;
    cte *ctes = ctes_fresh(a->ctes, a->n_ctes, &ok);
    p.ctes = ctes;
    if (st == HS_OK && !ok)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK) {
        const apply_row *saved = p.outer_row;
        p.outer_row = &ar;
        json_t *copy = json_deep_copy(a->sub);
        st = copy ? pl_plan_select(&p, copy, &s) : hs_err_nomem(err, 0);
        json_decref(copy);
        p.outer_row = saved;
        if (st == HS_OK && s.op->schema.n_children != a->n_sub)
            st = hs_err_set(err, HS_INTERNAL, "LATERAL subquery: %d columns, planned with %d",
                            s.op->schema.n_children, a->n_sub);
    }
    int64_t seen = 0;
    int64_t *idx = NULL;
    while (st == HS_OK) {
        hs_batch *o = NULL;
        st = xo_next(s.op, &o, err);
        if (st != HS_OK || !o)
            break;
        if (o->n_rows > 0) {
            hs_free(idx);
            idx = hs_malloc((size_t)o->n_rows * sizeof *idx);
            if (!idx)
                st = hs_err_nomem(err, 0);
            for (int64_t r = 0; st == HS_OK && r < o->n_rows; r++)
                idx[r] = 0;
            for (int c = 0; st == HS_OK && c < in->n_cols; c++) {
                hs_column *t = NULL;
                st = hs_col_take(row.cols[c], idx, o->n_rows, &t, err);
                if (st == HS_OK)
                    st = hs_col_append_column(acc->cols[c], t, err);
                hs_col_free(t);
            }
            for (int c = 0; st == HS_OK && c < a->n_sub; c++)
                st = hs_col_append_column(acc->cols[in->n_cols + c], o->cols[c], err);
            if (st == HS_OK) {
                acc->n_rows += o->n_rows;
                seen += o->n_rows;
            }
        }
        hs_batch_free(o);
        if (st == HS_OK && xo_cancelled(a->op.ctx))
            st = hs_err_set(err, HS_CANCELLED, "canceling statement due to user request");
    }
    if (st == HS_OK && seen == 0 && a->left) {
        for (int c = 0; st == HS_OK && c < in->n_cols; c++)
            st = hs_col_append_column(acc->cols[c], row.cols[c], err);
        for (int c = 0; st == HS_OK && c < a->n_sub; c++)
            st = hs_col_append_null(acc->cols[in->n_cols + c]) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
        if (st == HS_OK)
            acc->n_rows++;
    }
    hs_free(idx);
    pl_rel_clear(&s);
    ctes_fresh_free(ctes, a->n_ctes);
    sq_ctx_keep_release(a->rctx, mark);
    for (int c = 0; c < in->n_cols; c++)
        hs_col_free(row.cols[c]);
    hs_free(row.cols);
    return st;
}

static hs_status lateral_next(xo_op *op, hs_batch **out, hs_error *err)
{
    apply_op *a = (apply_op *)op;
    *out = NULL;
    for (;;) {
        hs_batch *in = NULL;
        HS_TRY(xo_next(op->children[0], &in, err));
        if (!in)
            return HS_OK;
        hs_batch *acc = NULL;
        hs_status st = hs_batch_create(&op->schema, in->n_rows, &acc, err);
        for (int64_t i = 0; i < in->n_rows && st == HS_OK; i++) {
            if (xo_cancelled(op->ctx))
                st = hs_err_set(err, HS_CANCELLED, "canceling statement due to user request");
            else
                st = lateral_rows(a, in, i, acc, err);
        }
        hs_batch_free(in);
        if (st != HS_OK) {
            hs_batch_free(acc);
            return st;
        }
        if (acc->n_rows > 0) {
            *out = acc;
            return HS_OK;
        }
        hs_batch_free(acc);
    }
}

/* The subquery planned without rows: *schema (caller clears) its columns'
 * types, *names (caller frees with pl_qcols_free, *n of them) their names. */
static hs_status lateral_plan_empty(planner *p, rel *cur, const json_t *sub, cte *defs, int n_defs,
                                    hs_field *schema, qcol **names, int *n)
{
    apply_row ar = {&cur->op->schema, cur->cols, cur->n, NULL};
    bool ok;
    cte *saved = p->ctes, *fresh = ctes_fresh(defs, n_defs, &ok);
    const apply_row *saved_row = p->outer_row;
    p->ctes = fresh;
    p->outer_row = &ar;
    json_t *copy = ok ? json_deep_copy(sub) : NULL;
    rel s = {0};
    hs_status st = copy ? pl_plan_select(p, copy, &s) : pl_nomem(p);
    json_decref(copy);
    p->outer_row = saved_row;
    p->ctes = saved;
    *names = NULL;
    *n = 0;
    if (st == HS_OK && hs_field_copy(&s.op->schema, schema) != HS_OK)
        st = pl_nomem(p);
    if (st == HS_OK) {
        *names = s.cols;
        *n = s.n;
        s.cols = NULL;
        s.n = 0;
    }
    pl_rel_clear(&s);   /* before the CTEs whose rows it may read */
    ctes_fresh_free(fresh, n_defs);
    return st;
}

hs_status pl_apply_lateral(planner *p, rel *cur, const json_t *rs, bool left)
{
    json_t *sub = pl_jget(pl_jget(rs, "subquery"), "SelectStmt");
    json_t *alias = pl_jget(rs, "alias");
    const char *an = alias ? pl_jstrv(alias, "aliasname") : NULL;
    int loc = pl_first_loc(rs, 0);
    if (!sub)
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported LATERAL subquery");
    cte *defs;
    int n_defs;
    HS_TRY(ctes_keep(p, p->ctes, &defs, &n_defs));
    hs_field sch = {0};
    qcol *snames = NULL;
    int ns = 0;
    hs_status st = lateral_plan_empty(p, cur, sub, defs, n_defs, &sch, &snames, &ns);
    json_t *colnames = alias ? pl_jget(alias, "colnames") : NULL;
    if (st == HS_OK && json_array_size(colnames) > (size_t)ns)
        st = pl_fail(p, HS_INVALID, "42P10", loc, "table \"%s\" has %d columns available but %d columns specified",
                     an ? an : "", ns, (int)json_array_size(colnames));
    apply_op *a = st == HS_OK ? hs_calloc(1, sizeof *a) : NULL;
    xo_op **kids = a ? hs_calloc(1, sizeof *kids) : NULL;
    qcol *ncols = a ? hs_calloc((size_t)(cur->n + ns) + 1, sizeof *ncols) : NULL;
    if (st == HS_OK && (!a || !kids || !ncols))
        st = pl_nomem(p);
    if (st == HS_OK && hs_field_copy(&cur->op->schema, &a->op.schema) != HS_OK)
        st = pl_nomem(p);
    for (int c = 0; st == HS_OK && c < ns; c++) {
        hs_field f;
        if (hs_field_copy(&sch.children[c], &f) != HS_OK) {
            st = pl_nomem(p);
            break;
        }
        f.nullable = true;
        f.field_id = a->op.schema.n_children + 1;
        if (hs_field_add_child(&a->op.schema, &f) != HS_OK) {
            hs_field_clear(&f);
            st = pl_nomem(p);
        }
    }
    st = apply_take(p, a, cur, sub, defs, n_defs, st);
    /* the new columns' names: the alias's column list first */
    for (int c = 0; st == HS_OK && c < ns; c++) {
        const char *cn = c < (int)json_array_size(colnames) ? sq_str(json_array_get(colnames, (size_t)c)) : NULL;
        ncols[cur->n + c].qual = pl_dup_or_null(an);
        ncols[cur->n + c].name = hs_strdup(cn ? cn : snames[c].name ? snames[c].name : "");
        ncols[cur->n + c].hidden = snames[c].hidden;
        if (!ncols[cur->n + c].name || (an && !ncols[cur->n + c].qual))
            st = pl_nomem(p);
    }
    hs_field_clear(&sch);
    pl_qcols_free(snames, ns);
    if (st != HS_OK) {
        if (a) {
            hs_field_clear(&a->op.schema);
            apply_destroy(&a->op);
        }
        hs_free(a);
        hs_free(kids);
        if (ncols)
            pl_qcols_free(ncols + cur->n, ns);   /* the new names only */
        hs_free(ncols);
        return st;
    }
    a->s = p->s;
    a->lateral = true;
    a->left = left;
    a->n_sub = ns;
    a->guard = -1;
    a->names = json_incref(p->names);
    a->all_columns = p->all_columns;
    a->depth = p->depth;
    kids[0] = cur->op;
    a->op.name = "LateralApply";
    a->op.ctx = cur->op->ctx;
    a->op.n_children = 1;
    a->op.children = kids;
    a->op.next = lateral_next;
    a->op.destroy = apply_destroy;
    a->op.detail = hs_strdup(left ? "LEFT JOIN LATERAL subquery planned and run per outer row"
                                  : "LATERAL subquery planned and run per outer row");
    if (cur->n)
        memcpy(ncols, cur->cols, (size_t)cur->n * sizeof *ncols);
    hs_free(cur->cols);
    cur->cols = ncols;
    cur->n += ns;
    cur->op = &a->op;
    return HS_OK;
}
