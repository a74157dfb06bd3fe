/*
 * sql/plan_subq.c - subqueries: [NOT] EXISTS / [NOT] IN (subquery) as semi/anti joins,
 * scalar subqueries as joined columns, decorrelation of correlated ones (the
 * forms a join answers exactly; the rest go to plan_apply.c's Apply),
 * EXISTS / ANY / ALL and (a, b) [NOT] IN inside expressions (counts),
 * aggregates of an enclosing block written inside its subqueries at any
 * depth, the lazy subqueries of CASE / COALESCE branches (a guarded Apply),
 * subqueries in JOIN ... ON (WHERE conjuncts for inner joins, a per-row
 * LATERAL for LEFT joins), and the group keys a grouping set's branch
 * leaves out, read inside subqueries (NULL).
 * See plan_int.h for how the planner files divide the work.
 */
#include "sql/plan_int.h"

/* ------------------------------------------------------------------ */
/* subqueries                                                          */



static void corr_free(corr *c)
{
    json_decref(c->inner);
    json_decref(c->corr);
    pl_fromc_free(&c->fc);
}

/* Splits the subquery's WHERE into inner and correlated conjuncts. */
static hs_status sub_split(planner *p, const json_t *sub, corr *c)
{
    memset(c, 0, sizeof *c);
    c->inner = json_array();
    c->corr = json_array();
    if (!c->inner || !c->corr)
        return pl_nomem(p);
    if (pl_jget(sub, "withClause"))
        return HS_OK;   /* planned as written; outer references fail to bind */
    HS_TRY(pl_fromc_build(p, pl_jget(sub, "fromClause"), &c->fc));
    conjs cs = {0};
    HS_TRY(pl_conjs_make(p, pl_jget(sub, "whereClause"), &c->fc, &cs));
    for (int i = 0; i < cs.n; i++)
        json_array_append(cs.a[i].outer ? c->corr : c->inner, cs.a[i].node);
    pl_conjs_free(&cs);
    c->leaves = c->fc.leaves;
    c->n_leaves = c->fc.n_leaves;
    return HS_OK;
}

/* Whether every ColumnRef under j resolves among the leaves (inner) or
 * none does (outer); *inner / *outer say which kinds occur. */
typedef struct kinds_ctx {
    const corr *c;
    bool *inner, *outer;
    json_t *arr;   /* inner_refs: where they go */
} kinds_ctx;

/* pl_leaf_find of a ColumnRef body among the leaves (-1: not found; -2
 * and below: found ambiguously), -1 for a name it cannot look up. */
static int inner_col(const corr *c, json_t *b)
{
    const char *names[8];
    int n = pl_colref_names(b, names, 8), col;
    if (n > 0 && names[n - 1])
        return pl_leaf_find(c->leaves, c->n_leaves, names, n, &col);
    return -1;
}

static pl_walk_res visit_kind(const json_t *j, void *ctx)
{
    kinds_ctx *k = ctx;
    json_t *b;
    if (pl_is_kind(j, "SubLink", &b)) {
        *k->inner = *k->outer = true;  /* not a plain expression */
        return PL_SKIP;
    }
    if (pl_is_kind(j, "ColumnRef", &b)) {
        if (inner_col(k->c, b) != -1)
            *k->inner = true;
        else
            *k->outer = true;
        return PL_SKIP;
    }
    return PL_DESCEND;
}

static void ref_kinds(const json_t *j, const corr *c, bool *inner, bool *outer, int depth)
{
    kinds_ctx k = {c, inner, outer, NULL};
    pl_walk(j, visit_kind, &k, depth);
}

/* Inner ColumnRefs under j appended (once) to arr. */
static pl_walk_res visit_inner_ref(const json_t *j, void *ctx)
{
    kinds_ctx *k = ctx;
    json_t *b;
    if (!pl_is_kind(j, "ColumnRef", &b))
        return PL_DESCEND;
    if (inner_col(k->c, b) >= 0) {
        for (size_t i = 0; i < json_array_size(k->arr); i++)
            if (pl_jeq(json_array_get(k->arr, i), j))
                return PL_SKIP;
        json_array_append(k->arr, (json_t *)j);
    }
    return PL_SKIP;
}

static void inner_refs(const json_t *j, const corr *c, json_t *arr, int depth)
{
    kinds_ctx k = {c, NULL, NULL, arr};
    pl_walk(j, visit_inner_ref, &k, depth);
}

/* If conjunct j is `a = b` with one side only outer, the other only inner:
 * *o / *in get them (borrowed). */
static bool corr_equality(const json_t *j, const corr *c, json_t **o, json_t **in)
{
    json_t *b;
    if (!pl_is_kind(j, "A_Expr", &b) || strcmp(pl_jstrv(b, "kind") ? pl_jstrv(b, "kind") : "", "AEXPR_OP"))
        return false;
    json_t *nm = pl_jget(b, "name");
    if (json_array_size(nm) != 1 || !sq_str(json_array_get(nm, 0)) ||
        strcmp(sq_str(json_array_get(nm, 0)), "="))
        return false;
    json_t *x = pl_jget(b, "lexpr"), *y = pl_jget(b, "rexpr");
    bool xi = false, xo = false, yi = false, yo = false;
    ref_kinds(x, c, &xi, &xo, 0);
    ref_kinds(y, c, &yi, &yo, 0);
    if (xo && !xi && yi && !yo) {
        *o = x;
        *in = y;
        return true;
    }
    if (yo && !yi && xi && !xo) {
        *o = y;
        *in = x;
        return true;
    }
    return false;
}

static json_t *res_target(json_t *val)
{
    return json_pack("{s:{s:O,s:i}}", "ResTarget", "val", val, "location", -1);
}

static bool has_aggs_or_group(const json_t *sub)
{
    json_t *a = json_array();
    pl_collect_aggs(pl_jget(sub, "targetList"), a, 0);
    pl_collect_aggs(pl_jget(sub, "havingClause"), a, 0);
    bool r = json_array_size(a) > 0 || json_array_size(pl_jget(sub, "groupClause")) > 0 ||
             pl_jget(sub, "havingClause") != NULL;
    json_decref(a);
    return r;
}

static bool plain_select(const json_t *sub)
{
    const char *op = pl_jstrv(sub, "op");
    return (!op || !strcmp(op, "SETOP_NONE")) && !pl_jget(sub, "valuesLists");
}

/* Attaches [NOT] EXISTS / [NOT] IN (subquery) to cur as a semi/anti join. */
static hs_status attach_semi(planner *p, rel *cur, const json_t *sublink, bool neg)
{
    json_t *sb = pl_jget(sublink, "subselect"), *sub;
    const char *type = pl_jstrv(sublink, "subLinkType");
    int loc = sq_loc(sublink);
    bool is_in = type && !strcmp(type, "ANY_SUBLINK");
    if (!pl_is_kind(sb, "SelectStmt", &sub))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported subquery");
    if (is_in) {
        json_t *opn = pl_jget(sublink, "operName");
        if (json_array_size(opn) > 0 && strcmp(sq_str(json_array_get(opn, 0)) ? sq_str(json_array_get(opn, 0)) : "", "="))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "only = ANY (IN) subqueries are supported");
    }
    json_t *rowb = NULL;
    bool row = is_in && pl_is_kind(pl_jget(sublink, "testexpr"), "RowExpr", &rowb);
    size_t nrow = row ? json_array_size(pl_jget(rowb, "args")) : 1;
    corr c;
    hs_status st = plain_select(sub) ? sub_split(p, sub, &c) : (memset(&c, 0, sizeof c), HS_OK);
    if (st == HS_OK && !c.inner)
        c.inner = json_array(), c.corr = json_array();
    bool correlated = st == HS_OK && json_array_size(c.corr) > 0;
    json_t *rw = NULL;
    json_t *targets = json_array();
    int *lk = NULL, *rk = NULL, nk = 0;
    size_t ncorr = json_array_size(c.corr);
    lk = hs_calloc(ncorr + nrow + 2, sizeof *lk);
    rk = hs_calloc(ncorr + nrow + 2, sizeof *rk);
    json_t **resid = hs_calloc(ncorr + 2, sizeof *resid);
    int nres = 0;
    if (st == HS_OK && (!targets || !lk || !rk || !resid))
        st = pl_nomem(p);
    /* per outer row, LIMIT / OFFSET and aggregates cut or change the
     * subquery's rows: not a semi join (pl_apply_sub_conj counts instead) */
    if (st == HS_OK && correlated &&
        (has_aggs_or_group(sub) || pl_jget(sub, "limitCount") || pl_jget(sub, "limitOffset")))
        st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc,
                  "correlated subqueries with GROUP BY, aggregates or LIMIT under EXISTS/IN are not supported");
    if (st == HS_OK && row && correlated)
        st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "row IN (correlated subquery) is not supported");
    if (st == HS_OK && is_in) {
        if (json_array_size(pl_jget(sub, "targetList")) != nrow && plain_select(sub))
            st = pl_fail(p, HS_INVALID, "42601", loc, "subquery has too %s columns",
                      json_array_size(pl_jget(sub, "targetList")) > nrow ? "many" : "few");
        for (size_t i = 0; i < nrow && st == HS_OK; i++) {
            int col = -1;
            st = pl_rel_add_expr(p, cur, row ? json_array_get(pl_jget(rowb, "args"), i)
                                          : pl_jget(sublink, "testexpr"), &col);
            lk[nk] = col;
            rk[nk++] = (int)i;
        }
    }
    /* correlated NOT IN: an anti join on the correlation keys alone, whose
     * residual `x = v OR v IS NULL OR x IS NULL` holds for a subquery row
     * when it makes `x NOT IN (...)` false or NULL - so an outer row stays
     * only when its group is empty or every v is non-NULL and differs from a
     * non-NULL x (the IN key as a hash key would keep x = NULL and groups
     * holding a NULL v) */
    json_t *nullaware = NULL;
    bool na = neg && is_in && correlated && !row;
    char xname[32] = "";
    if (st == HS_OK && na) {
        nk = 0;
        /* x as a column of its own with a name no subquery column can take
         * (the residual binds over both sides: an unqualified x could
         * resolve to an inner column of the same name) */
        json_t *wrapped = json_pack("{s:{s:[O],s:i}}", "CoalesceExpr", "args",
                                    pl_jget(sublink, "testexpr"), "location", -1);
        int xcol = -1;
        st = wrapped ? pl_rel_add_expr(p, cur, wrapped, &xcol) : pl_nomem(p);
        json_decref(wrapped);
        snprintf(xname, sizeof xname, "x%d", xcol);
        if (st == HS_OK) {
            qcol *q = &cur->cols[xcol];
            hs_free(q->qual);
            hs_free(q->name);
            q->qual = hs_strdup("__hs_not_in");
            q->name = hs_strdup(xname);
            q->hidden = true;
            if (!q->qual || !q->name)
                st = pl_nomem(p);
        }
    }
    if (st == HS_OK && na) {
        json_t *x = json_pack("{s:{s:[{s:{s:s}},{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String",
                              "sval", "__hs_not_in", "String", "sval", xname, "location", -1);
        json_t *v = pl_jget(pl_jget(json_array_get(pl_jget(sub, "targetList"), 0), "ResTarget"), "val");
        json_t *vnull = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", v, "nulltesttype",
                                  "IS_NULL", "location", -1);
        json_t *xnull = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", x, "nulltesttype",
                                  "IS_NULL", "location", -1);
        json_t *eq = x ? pl_mk_op("=", json_incref(x), json_incref(v)) : NULL;
        json_decref(x);
        nullaware = vnull && xnull && eq
                        ? json_pack("{s:{s:s,s:[o,o,o],s:i}}", "BoolExpr", "boolop", "OR_EXPR",
                                    "args", eq, vnull, xnull, "location", -1)
                        : NULL;
        if (!nullaware) {
            json_decref(vnull);
            json_decref(xnull);
            json_decref(eq);
            st = pl_nomem(p);
        }
    }
    if (st == HS_OK && correlated) {
        if (is_in)
            json_array_append(targets, pl_jget(pl_jget(json_array_get(pl_jget(sub, "targetList"), 0), "ResTarget"), "val"));
        if (nullaware) {
            resid[nres++] = nullaware;
            inner_refs(nullaware, &c, targets, 0);
        }
        for (size_t i = 0; i < ncorr && st == HS_OK; i++) {
            json_t *cj = json_array_get(c.corr, i), *o, *in;
            if (corr_equality(cj, &c, &o, &in)) {
                int col;
                st = pl_rel_add_expr(p, cur, o, &col);
                lk[nk] = col;
                rk[nk++] = (int)json_array_size(targets);
                json_array_append(targets, in);
            } else {
                resid[nres++] = cj;
                inner_refs(cj, &c, targets, 0);
            }
        }
        if (st == HS_OK) {
            rw = json_deep_copy(sub);
            json_t *tl = json_array();
            for (size_t i = 0; tl && i < json_array_size(targets); i++)
                json_array_append_new(tl, res_target(json_array_get(targets, i)));
            if (!rw || !tl)
                st = pl_nomem(p);
            else
                json_object_set_new(rw, "targetList", tl);
            json_t *w = pl_mk_and((json_t **)NULL, 0);
            size_t ni = json_array_size(c.inner);
            json_t **inn = hs_calloc(ni + 1, sizeof *inn);
            for (size_t i = 0; inn && i < ni; i++)
                inn[i] = json_array_get(c.inner, i);
            w = inn ? pl_mk_and(inn, (int)ni) : NULL;
            hs_free(inn);
            if (rw) {
                if (w)
                    json_object_set_new(rw, "whereClause", w);
                else
                    json_object_del(rw, "whereClause");
            }
        }
    }
    rel s = {0};
    if (st == HS_OK)
        st = pl_plan_select(p, rw ? rw : sub, &s);
    if (st == HS_OK && is_in && !correlated && s.n != (int)nrow)
        st = pl_fail(p, HS_INVALID, "42601", loc, "subquery has too many columns");
    for (size_t i = 1; st == HS_OK && row && i < nrow; i++)
        if (!pl_key_types_ok(&cur->op->schema.children[lk[i]], &s.op->schema.children[i]))
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "row IN (subquery) with different column types");
    if (st == HS_OK && is_in && !pl_key_types_ok(&cur->op->schema.children[lk[0]], &s.op->schema.children[0])) {
        /* cast the subquery's column to the outer key's type */
        hs_field *types = hs_calloc((size_t)s.n + 1, sizeof *types);
        if (!types)
            st = pl_nomem(p);
        for (int i = 0; types && i < s.n; i++)
            types[i] = s.op->schema.children[i];
        if (types) {
            hs_field u;
            pl_unify_type(&cur->op->schema.children[lk[0]], &s.op->schema.children[0], &u);
            types[0] = u;
            st = pl_cast_rel(p, &s, types);
            hs_free(types);
            if (st == HS_OK && !pl_key_types_ok(&cur->op->schema.children[lk[0]], &s.op->schema.children[0])) {
                int col = -1;
                json_t *tn = pl_cast_json(pl_jget(sublink, "testexpr"), &s.op->schema.children[0]);
                st = tn ? pl_rel_add_expr(p, cur, tn, &col) : pl_nomem(p);
                json_decref(tn);
                lk[0] = col;
            }
        }
    }
    xo_join_kind kind = !neg ? XO_JOIN_SEMI
                      : is_in && !correlated ? XO_JOIN_ANTI_NULL_AWARE : XO_JOIN_ANTI;
    rel joined;
    if (st == HS_OK) {
        rel l = *cur;
        memset(cur, 0, sizeof *cur);
        if (!is_in && !correlated)
            nk = 0;
        st = pl_join_rels(p, &l, &s, kind, resid, nres, lk, rk, nk, true, &joined);
        if (st == HS_OK)
            *cur = joined;
    } else {
        pl_rel_clear(&s);
    }
    hs_free(lk);
    hs_free(rk);
    hs_free(resid);
    json_decref(nullaware);
    json_decref(targets);
    json_decref(rw);
    corr_free(&c);
    return st;
}


static hs_status one_row_next(xo_op *op, hs_batch **out, hs_error *err)
{
    one_row_op *o = (one_row_op *)op;
    HS_TRY(xo_next(op->children[0], out, err));
    if (*out && (o->seen += (*out)->n_rows) > 1) {
        hs_batch_free(*out);
        *out = NULL;
        return hs_err_set(err, HS_INVALID, "more than one row returned by a subquery used as an expression");
    }
    return HS_OK;
}

static hs_status one_row(planner *p, rel *r)
{
    one_row_op *o = hs_calloc(1, sizeof *o);
    xo_op **kids = o ? hs_calloc(1, sizeof *kids) : NULL;
    if (!o || !kids || hs_field_copy(&r->op->schema, &o->op.schema) != HS_OK) {
        if (o)
            hs_field_clear(&o->op.schema);
        hs_free(o);
        hs_free(kids);
        return pl_nomem(p);
    }
    kids[0] = r->op;
    o->op.name = "ScalarSubquery";
    o->op.ctx = r->op->ctx;
    o->op.n_children = 1;
    o->op.children = kids;
    o->op.next = one_row_next;
    r->op = &o->op;
    return HS_OK;
}

static hs_status decorrelate_scalar(planner *p, rel *cur, const json_t *sublink, const json_t *sub,
                                    int *col);

/* Joins the value of a scalar subquery into cur; *col = its column. */
static hs_status attach_scalar(planner *p, rel *cur, const json_t *sublink, int *col)
{
    json_t *sb = pl_jget(sublink, "subselect"), *sub;
    int loc = sq_loc(sublink);
    if (!pl_is_kind(sb, "SelectStmt", &sub))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported subquery");
    if (pl_apply_needed(sub))
        return pl_apply_attach(p, cur, sublink, col);   /* over functions of the outer row */
    hs_status st = decorrelate_scalar(p, cur, sublink, sub, col);
    if ((st == HS_UNSUPPORTED || st == HS_NOT_FOUND) && cur->op) {
        /* not a form the join handles (correlation by inequality, outer
         * references outside WHERE or several levels down, LIMIT, ...):
         * the Apply runs it as written per outer row; a subquery that is
         * wrong in itself fails there again with its own error */
        sq_fail_clear(p->s, p->err);
        st = pl_apply_attach(p, cur, sublink, col);
    }
    return st;
}

/* Whether an aggregate subquery's select expression t is NULL over no
 * rows, as the left join gives a key without rows: its aggregates (count
 * aside, patched by the caller) are NULL then, and t is made of operators,
 * casts and constants that a NULL operand makes NULL.  COALESCE, CASE, IS
 * [NOT] NULL, AND / OR, functions (concat ignores NULLs) need not be:
 * coalesce(sum(w), 0) is 0 over no rows. */
static bool null_on_empty(const json_t *t, int depth)
{
    json_t *b;
    if (!t || depth > 100)
        return false;
    if (pl_is_agg_call(t))
        return true;
    if (pl_is_kind(t, "A_Const", NULL))
        return false;   /* alone: a constant, not NULL */
    if (pl_is_kind(t, "TypeCast", &b))
        return null_on_empty(pl_jget(b, "arg"), depth + 1);
    if (pl_is_kind(t, "A_Expr", &b)) {
        const char *k = pl_jstrv(b, "kind");
        if (!k || strcmp(k, "AEXPR_OP"))
            return false;
        json_t *l = pl_jget(b, "lexpr"), *r = pl_jget(b, "rexpr");
        /* one NULL operand suffices; the other may be a constant */
        return (l && null_on_empty(l, depth + 1)) || (r && null_on_empty(r, depth + 1));
    }
    return false;
}

static json_t *mk_bool(bool v);
json_t *pl_when(json_t *cond, json_t *res);

/* Whether the select expression t evaluated over no rows cannot fail:
 * aggregates, constants, casts, + - * and comparisons, COALESCE, CASE,
 * IS [NOT] NULL, AND / OR / NOT (no division, no functions). */
static bool safe_on_empty(const json_t *t, int depth)
{
    json_t *b;
    if (!t || depth > 100)
        return false;
    if (pl_is_agg_call(t) || pl_is_kind(t, "A_Const", NULL))
        return true;
    if (pl_is_kind(t, "TypeCast", &b))
        return safe_on_empty(pl_jget(b, "arg"), depth + 1) && pl_is_kind(pl_jget(b, "arg"), "A_Const", NULL);
    if (pl_is_kind(t, "NullTest", &b))
        return safe_on_empty(pl_jget(b, "arg"), depth + 1);
    if (pl_is_kind(t, "A_Expr", &b)) {
        const char *k = pl_jstrv(b, "kind");
        json_t *nm = pl_jget(b, "name");
        const char *op = json_array_size(nm) == 1 ? sq_str(json_array_get(nm, 0)) : NULL;
        static const char *const ok[] = {"+", "-", "*", "=", "<>", "<", "<=", ">", ">="};
        bool good = false;
        for (size_t i = 0; op && i < sizeof ok / sizeof *ok; i++)
            good |= !strcmp(op, ok[i]);
        return k && !strcmp(k, "AEXPR_OP") && good &&
               (!pl_jget(b, "lexpr") || safe_on_empty(pl_jget(b, "lexpr"), depth + 1)) &&
               safe_on_empty(pl_jget(b, "rexpr"), depth + 1);
    }
    json_t *args = NULL;
    if (pl_is_kind(t, "CoalesceExpr", &b) || pl_is_kind(t, "BoolExpr", &b))
        args = pl_jget(b, "args");
    else if (pl_is_kind(t, "CaseExpr", &b)) {
        if (pl_jget(b, "arg") || (pl_jget(b, "defresult") && !safe_on_empty(pl_jget(b, "defresult"), depth + 1)))
            return false;
        for (size_t i = 0; i < json_array_size(pl_jget(b, "args")); i++) {
            json_t *w = pl_jget(json_array_get(pl_jget(b, "args"), i), "CaseWhen");
            if (!safe_on_empty(pl_jget(w, "expr"), depth + 1) || !safe_on_empty(pl_jget(w, "result"), depth + 1))
                return false;
        }
        return true;
    } else
        return false;
    for (size_t i = 0; i < json_array_size(args); i++)
        if (!safe_on_empty(json_array_get(args, i), depth + 1))
            return false;
    return json_array_size(args) > 0;
}

/* The join form's missing keys (the inner key at column base of cur is
 * NULL: a matched key never is) get the select expression's value over no
 * rows: one row of (SELECT expr FROM <sub's FROM> WHERE false), crossed
 * in; *col becomes CASE WHEN key IS NULL THEN that ELSE *col END. */
static hs_status patch_empty(planner *p, rel *cur, const json_t *sub, int base, int *col)
{
    json_t *e = json_deep_copy(sub);
    json_t *f = mk_bool(false);
    if (!e || !f || json_object_set_new(e, "whereClause", f) != 0) {
        json_decref(e);
        return pl_nomem(p);
    }
    json_object_del(e, "sortClause");
    rel er = {0};
    hs_status st = pl_plan_select(p, e, &er);
    json_decref(e);
    if (st == HS_OK && er.n != 1)
        st = pl_fail(p, HS_INVALID, "42601", -1, "subquery must return only one column");
    if (st == HS_OK)
        st = one_row(p, &er);
    if (st != HS_OK) {
        pl_rel_clear(&er);
        return st;
    }
    char kn[32], vn[32], en[32];
    snprintf(kn, sizeof kn, "\x01" "ek%d", *col);
    snprintf(vn, sizeof vn, "\x01" "ev%d", *col);
    snprintf(en, sizeof en, "\x01" "ee%d", *col);
    hs_free(er.cols[0].qual);
    er.cols[0].qual = NULL;
    hs_free(er.cols[0].name);
    er.cols[0].name = hs_strdup(en);
    er.cols[0].hidden = false;
    rel l = *cur, joined;
    memset(cur, 0, sizeof *cur);
    st = er.cols[0].name ? pl_join_rels(p, &l, &er, XO_JOIN_INNER, NULL, 0, NULL, NULL, 0, false, &joined)
                         : (pl_rel_clear(&l), pl_rel_clear(&er), pl_nomem(p));
    if (st != HS_OK)
        return st;
    *cur = joined;
    const int at[2] = {base, *col};
    const char *nm[2] = {kn, vn};
    for (int i = 0; i < 2; i++) {
        hs_free(cur->cols[at[i]].qual);
        cur->cols[at[i]].qual = NULL;
        hs_free(cur->cols[at[i]].name);
        cur->cols[at[i]].name = hs_strdup(nm[i]);
        cur->cols[at[i]].hidden = false;
        if (!cur->cols[at[i]].name)
            return pl_nomem(p);
    }
    json_t *refs[3];
    const char *rn[3] = {kn, en, vn};
    for (int i = 0; i < 3; i++)
        refs[i] = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", rn[i],
                            "location", -1);
    json_t *ce = NULL;
    if (refs[0] && refs[1] && refs[2]) {
        /* json_pack's 'o' takes each reference, also when it fails */
        json_t *test = json_pack("{s:{s:o,s:s,s:i}}", "NullTest", "arg", refs[0], "nulltesttype", "IS_NULL",
                                 "location", -1);
        json_t *w = test ? pl_when(test, refs[1]) : (json_decref(refs[1]), NULL);
        ce = w ? json_pack("{s:{s:[o],s:o,s:i}}", "CaseExpr", "args", w, "defresult", refs[2], "location", -1)
               : (json_decref(refs[2]), NULL);
    } else {
        for (int i = 0; i < 3; i++)
            json_decref(refs[i]);
    }
    st = ce ? pl_rel_add_expr(p, cur, ce, col) : pl_nomem(p);
    json_decref(ce);
    return st;
}

/* Whether the correlated scalar subquery sub decorrelates into a left join
 * on its equality keys exactly: an aggregate over each key's rows (one row
 * per key, count's empty value patched), no LIMIT / OFFSET / DISTINCT /
 * window that would cut or reorder per key. */
static bool join_exact(const json_t *sub)
{
    return has_aggs_or_group(sub) && !pl_jget(sub, "limitCount") && !pl_jget(sub, "limitOffset") &&
           !pl_jget(sub, "distinctClause") && !pl_jget(sub, "withClause");
}

/* The join form of attach_scalar: HS_UNSUPPORTED / HS_NOT_FOUND before cur
 * is touched (but for hidden key columns added) when it does not apply. */
static hs_status decorrelate_scalar(planner *p, rel *cur, const json_t *sublink, const json_t *sub,
                                    int *col)
{
    int loc = sq_loc(sublink);
    corr c;
    hs_status st = plain_select(sub) ? sub_split(p, sub, &c) : (memset(&c, 0, sizeof c), HS_OK);
    if (st == HS_OK && !c.inner)
        c.inner = json_array(), c.corr = json_array();
    size_t ncorr = st == HS_OK ? json_array_size(c.corr) : 0;
    json_t *rw = NULL;
    int *lk = hs_calloc(ncorr + 1, sizeof *lk), *rk = hs_calloc(ncorr + 1, sizeof *rk);
    if (st == HS_OK && (!lk || !rk))
        st = pl_nomem(p);
    bool count_target = false, empty_value = false;
    if (st == HS_OK && ncorr > 0 && !join_exact(sub))
        st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "this correlated scalar subquery is not a join");
    if (st == HS_OK && ncorr > 0) {
        if (json_array_size(pl_jget(sub, "groupClause")) || pl_jget(sub, "havingClause") ||
            json_array_size(pl_jget(sub, "targetList")) != 1)
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc,
                      "this correlated scalar subquery is not supported (GROUP BY/HAVING or several columns)");
        json_t *tv = pl_jget(pl_jget(json_array_get(pl_jget(sub, "targetList"), 0), "ResTarget"), "val"), *fb;
        json_t *ag = json_array();
        pl_collect_aggs(tv, ag, 0);
        bool has_count = false;
        for (size_t i = 0; i < json_array_size(ag); i++) {
            const char *fn = pl_func_name(pl_jget(json_array_get(ag, i), "FuncCall"));
            has_count |= fn && !strcmp(fn, "count");
        }
        json_decref(ag);
        count_target = pl_is_kind(tv, "FuncCall", &fb) && pl_func_name(fb) && !strcmp(pl_func_name(fb), "count");
        /* a value over no rows other than NULL (count(*) + 1,
         * coalesce(sum(w), 0)): the join's missing keys get it from the
         * select expression evaluated once over no rows, when that cannot
         * fail (no division); else per row (the Apply) */
        empty_value = !count_target && (has_count || !null_on_empty(tv, 0));
        if (st == HS_OK && empty_value && !safe_on_empty(tv, 0))
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc,
                      "a correlated scalar subquery whose value over no rows may fail");
        json_t *tl = json_array(), *gl = json_array();
        if (st == HS_OK && (!tl || !gl))
            st = pl_nomem(p);
        bool aggs = st == HS_OK && has_aggs_or_group(sub);
        for (size_t i = 0; i < ncorr && st == HS_OK; i++) {
            json_t *o, *in;
            if (!corr_equality(json_array_get(c.corr, i), &c, &o, &in)) {
                st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(json_array_get(c.corr, i)),
                          "correlated scalar subqueries are supported with equality correlation only");
                break;
            }
            st = pl_rel_add_expr(p, cur, o, &lk[i]);
            rk[i] = (int)i;
            json_array_append_new(tl, res_target(in));
            if (aggs)
                json_array_append(gl, in);
        }
        if (st == HS_OK) {
            json_array_append(tl, json_array_get(pl_jget(sub, "targetList"), 0));
            rw = json_deep_copy(sub);
            if (!rw)
                st = pl_nomem(p);
        }
        if (st == HS_OK) {
            json_object_set(rw, "targetList", tl);
            if (aggs)
                json_object_set(rw, "groupClause", gl);
            size_t ni = json_array_size(c.inner);
            json_t **inn = hs_calloc(ni + 1, sizeof *inn);
            for (size_t i = 0; inn && i < ni; i++)
                inn[i] = json_array_get(c.inner, i);
            json_t *w = inn ? pl_mk_and(inn, (int)ni) : NULL;
            hs_free(inn);
            if (w)
                json_object_set_new(rw, "whereClause", w);
            else
                json_object_del(rw, "whereClause");
        }
        json_decref(tl);
        json_decref(gl);
    }
    rel s = {0};
    if (st == HS_OK)
        st = pl_plan_select(p, rw ? rw : sub, &s);
    if (st == HS_OK && s.n != (int)ncorr + 1)
        st = pl_fail(p, HS_INVALID, "42601", loc, "subquery must return only one column");
    if (st == HS_OK && ncorr == 0)
        st = one_row(p, &s);
    /* correlation keys of different types (numeric = integer, from
     * n IN (SELECT k ...)): both sides in the type they unify to */
    for (size_t i = 0; i < ncorr && st == HS_OK; i++) {
        const hs_field *lf = &cur->op->schema.children[lk[i]], *rf = &s.op->schema.children[i];
        if (pl_key_types_ok(lf, rf))
            continue;
        hs_field u;
        pl_unify_type(lf, rf, &u);
        hs_field *types = hs_calloc((size_t)s.n + 1, sizeof *types);
        if (!types) {
            st = pl_nomem(p);
            break;
        }
        for (int k = 0; k < s.n; k++)
            types[k] = s.op->schema.children[k];
        types[i] = u;
        st = pl_cast_rel(p, &s, types);
        hs_free(types);
        json_t *o, *in;
        if (st == HS_OK && !pl_key_types_ok(&cur->op->schema.children[lk[i]], &s.op->schema.children[i]) &&
            corr_equality(json_array_get(c.corr, i), &c, &o, &in)) {
            json_t *tn = pl_cast_json(o, &s.op->schema.children[i]);
            st = tn ? pl_rel_add_expr(p, cur, tn, &lk[i]) : pl_nomem(p);
            json_decref(tn);
        }
    }
    if (st == HS_OK) {
        for (int i = 0; i < s.n; i++)
            s.cols[i].hidden = true;
        int base = cur->n;
        rel l = *cur;
        memset(cur, 0, sizeof *cur);
        rel joined;
        st = pl_join_rels(p, &l, &s, XO_JOIN_LEFT, NULL, 0, lk, rk, (int)ncorr, false, &joined);
        if (st == HS_OK) {
            *cur = joined;
            *col = base + (int)ncorr;
        }
        /* the COUNT bug: outer rows without a group must see count's value
         * over no rows, 0, not the join's NULL */
        if (st == HS_OK && ncorr > 0 && count_target) {
            char nm[32];
            snprintf(nm, sizeof nm, "\x01count%d", *col);
            hs_free(cur->cols[*col].name);
            cur->cols[*col].name = hs_strdup(nm);
            cur->cols[*col].hidden = false;   /* the unique name resolves only here */
            json_t *co = json_pack("{s:{s:[{s:{s:[{s:{s:s}}],s:i}},{s:{s:{s:i},s:i}}],s:i}}",
                                   "CoalesceExpr", "args", "ColumnRef", "fields", "String", "sval",
                                   nm, "location", -1, "A_Const", "ival", "ival", 0, "location",
                                   -1, "location", -1);
            st = cur->cols[*col].name && co ? pl_rel_add_expr(p, cur, co, col) : pl_nomem(p);
            json_decref(co);
        }
        if (st == HS_OK && ncorr > 0 && empty_value)
            st = patch_empty(p, cur, sub, base, col);
    } else {
        pl_rel_clear(&s);
    }
    hs_free(lk);
    hs_free(rk);
    json_decref(rw);
    corr_free(&c);
    return st;
}



hs_status  pl_nmap_add(planner *p, nmap *m, const json_t *node, int col)
{
    if (m->n == m->cap) {
        int nc = m->cap ? m->cap * 2 : 16;
        const json_t **nn = hs_realloc(m->nodes, (size_t)nc * sizeof *nn);
        if (!nn)
            return pl_nomem(p);
        m->nodes = nn;
        int *ncol = hs_realloc(m->cols, (size_t)nc * sizeof *ncol);
        if (!ncol)
            return pl_nomem(p);
        m->cols = ncol;
        m->cap = nc;
    }
    m->nodes[m->n] = node;
    m->cols[m->n++] = col;
    return HS_OK;
}

void  pl_nmap_free(nmap *m)
{
    hs_free(m->nodes);
    hs_free(m->cols);
    memset(m, 0, sizeof *m);
}

/* ---- EXISTS / ANY / ALL / IN inside expressions ----
 * Outside a WHERE conjunct (under OR, CASE, in the select list) these
 * become expressions over scalar subqueries that the joins above handle
 * (correlated ones too, when their correlation is by equality):
 *   EXISTS (S)          cnt > 0
 *   x op ANY (S)        CASE WHEN cnt = 0 THEN false WHEN x IS NULL THEN NULL
 *                       WHEN <x matches> THEN true WHEN cnt > nn THEN NULL ELSE false END
 *   x op ALL (S)        CASE WHEN cnt = 0 THEN true WHEN x IS NULL THEN NULL
 *                       WHEN <x fails> THEN false
 *                       WHEN cnt > nn THEN NULL ELSE true END
 * with cnt = count(*), nn = count(t) of S's one column t, neq the count of
 * t = x; <x matches> for = ANY is neq > 0, for <> ANY nn > neq; <x fails>
 * for <> ALL neq > 0, for = ALL nn > neq; for < <= > >= a comparison with
 * min(t) or max(t): PostgreSQL's three-valued results.  The counts are
 * scalar subqueries (attach_scalar): joins when they decorrelate exactly,
 * else the Apply. */

static json_t *mk_bool(bool v)
{
    return json_pack("{s:{s:{s:{s:{s:s},s:i}},s:{s:[{s:{s:s}}],s:i,s:i},s:i}}", "TypeCast", "arg",
                     "A_Const", "sval", "sval", v ? "true" : "false", "location", -1, "typeName",
                     "names", "String", "sval", "bool", "typemod", -1, "location", -1, "location", -1);
}

json_t *pl_mk_null(void)
{
    return json_pack("{s:{s:b,s:i}}", "A_Const", "isnull", 1, "location", -1);
}

static bool star_target(const json_t *sub)
{
    json_t *t = pl_jget(pl_jget(json_array_get(pl_jget(sub, "targetList"), 0), "ResTarget"), "val"), *cb;
    json_t *f = pl_is_kind(t, "ColumnRef", &cb) ? pl_jget(cb, "fields") : NULL;
    return f && pl_is_kind(json_array_get(f, json_array_size(f) - 1), "A_Star", NULL);
}

/* A subquery whose select list agg_sublink may replace by an aggregate of
 * its own rows (no aggregates of its own, no clause that depends on them). */
static bool simple_select(const json_t *sub)
{
    return plain_select(sub) && !has_aggs_or_group(sub) &&
           !pl_jget(sub, "distinctClause") && !pl_jget(sub, "limitCount") && !pl_jget(sub, "limitOffset") &&
           !pl_jget(sub, "withClause") && !pl_jget(sub, "sortClause");
}

/* (SELECT agg FROM S...) where agg reads S's column (use_col) or is
 * count(*); with eq_x, the extra conjunct `column = eq_x`. */
static json_t *agg_sublink(const json_t *sub, const char *fn, bool use_col, const json_t *eq_x, int loc)
{
    json_t *t = pl_jget(pl_jget(json_array_get(pl_jget(sub, "targetList"), 0), "ResTarget"), "val");
    json_t *q;
    json_t *col = NULL;
    /* a '*' target is read as the derived table's one column */
    if (simple_select(sub) && !((use_col || eq_x) && star_target(sub))) {
        q = json_deep_copy(sub);
        col = t ? json_incref(t) : NULL;
    } else {
        /* SELECT agg(_hs_q.c) FROM (S) _hs_q(c) */
        q = json_pack("{s:[{s:{s:{s:O},s:{s:s,s:[{s:{s:s}}]}}}]}", "fromClause", "RangeSubselect",
                      "subquery", "SelectStmt", sub, "alias", "aliasname", "_hs_q", "colnames",
                      "String", "sval", "c");
        col = json_pack("{s:{s:[{s:{s:s}},{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval",
                        "_hs_q", "String", "sval", "c", "location", -1);
    }
    if (!q || (use_col && !col)) {
        json_decref(q);
        json_decref(col);
        return NULL;
    }
    json_t *call = use_col
        ? json_pack("{s:{s:[{s:{s:s}}],s:[O],s:i}}", "FuncCall", "funcname", "String", "sval", fn,
                    "args", col, "location", -1)
        : json_pack("{s:{s:[{s:{s:s}}],s:b,s:i}}", "FuncCall", "funcname", "String", "sval", "count",
                    "agg_star", 1, "location", -1);
    json_object_set_new(q, "targetList", json_pack("[{s:{s:o,s:i}}]", "ResTarget", "val", call,
                                                   "location", -1));
    if (eq_x) {
        json_t *cond = pl_mk_op("=", json_incref(col), json_incref((json_t *)eq_x));
        json_t *w = pl_jget(q, "whereClause");
        json_t *both[2] = {w, cond};
        json_t *nw = w ? pl_mk_and(both, 2) : json_incref(cond);
        json_decref(cond);
        json_object_set_new(q, "whereClause", nw);
    }
    json_decref(col);
    return json_pack("{s:{s:s,s:{s:o},s:i}}", "SubLink", "subLinkType", "EXPR_SUBLINK", "subselect",
                     "SelectStmt", q, "location", loc);
}

json_t *pl_when(json_t *cond, json_t *res)
{
    return json_pack("{s:{s:o,s:o,s:i}}", "CaseWhen", "expr", cond, "result", res, "location", -1);
}

static bool has_sublink(const json_t *j)
{
    json_t *a = json_array();
    pl_collect_sublinks(j, a, 0);
    bool r = json_array_size(a) > 0;
    json_decref(a);
    return r;
}

static json_t *is_null_of(json_t *x)   /* takes x */
{
    return x ? json_pack("{s:{s:o,s:s,s:i}}", "NullTest", "arg", x, "nulltesttype", "IS_NULL", "location", -1)
             : NULL;
}

/* (x1, ..., xn) IN (S) / NOT IN (S) in an expression, three-valued as
 * PostgreSQL's row comparison: true when a row of S equals in every
 * column, else NULL when a row has no column that differs (a NULL on
 * either side), else false (NOT IN: the negation).  Two counts over S:
 * the rows equal in every column (a join on the columns) and those with
 * no column known to differ (per outer row).  The xi become columns of
 * cur that S reads as outer columns. */
static json_t *row_in_expr(planner *p, rel *cur, const nmap *m, bool after_agg, const json_t *sl, bool in,
                           hs_status *st)
{
    json_t *sub = pl_jget(pl_jget(sl, "subselect"), "SelectStmt");
    json_t *args = pl_jget(pl_jget(pl_jget(sl, "testexpr"), "RowExpr"), "args");
    int loc = sq_loc(sl);
    size_t n = json_array_size(args);
    size_t nt = json_array_size(pl_jget(sub, "targetList"));
    if (plain_select(sub) && !star_target(sub) && nt != n) {
        *st = pl_fail(p, HS_INVALID, "42601", loc, "subquery has too %s columns", nt > n ? "many" : "few");
        return NULL;
    }
    if (n == 0 || n > 64) {
        *st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "row comparisons with subqueries are not supported here");
        return NULL;
    }
    json_t *names = json_array(), *eq = json_array(), *maybe = json_array();
    *st = names && eq && maybe ? HS_OK : pl_nomem(p);
    for (size_t i = 0; *st == HS_OK && i < n; i++) {
        char c[16], nm[32];
        snprintf(c, sizeof c, "c%zu", i + 1);
        json_array_append_new(names, json_pack("{s:{s:s}}", "String", "sval", c));
        int col = -1;
        json_t *wrapped = json_pack("{s:{s:[O],s:i}}", "CoalesceExpr", "args", json_array_get(args, i), "location", -1);
        *st = !wrapped ? pl_nomem(p)
            : after_agg ? pl_rel_add_expr_in(p, cur, wrapped, m, p->ungrouped, p->ungrouped_key, &col)
                        : pl_rel_add_expr_in(p, cur, wrapped, m, NULL, NULL, &col);
        json_decref(wrapped);
        if (*st != HS_OK)
            break;
        snprintf(nm, sizeof nm, "\x01in%d", col);
        hs_free(cur->cols[col].name);
        cur->cols[col].name = hs_strdup(nm);
        cur->cols[col].hidden = false;
        if (!cur->cols[col].name) {
            *st = pl_nomem(p);
            break;
        }
        json_t *xr = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", nm, "location", -1);
        json_t *cr = json_pack("{s:{s:[{s:{s:s}},{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval",
                               "_hs_q", "String", "sval", c, "location", -1);
        json_t *e = xr && cr ? pl_mk_op("=", json_incref(cr), json_incref(xr)) : NULL;
        json_t *ors[3] = {e ? json_incref(e) : NULL, is_null_of(json_incref(cr)), is_null_of(json_incref(xr))};
        json_t *any_of = ors[0] && ors[1] && ors[2]
            ? json_pack("{s:{s:s,s:[o,o,o],s:i}}", "BoolExpr", "boolop", "OR_EXPR", "args", ors[0], ors[1], ors[2],
                        "location", -1)
            : NULL;
        if (!any_of)
            for (int k = 0; k < 3; k++)
                json_decref(ors[k]);
        if (!e || !any_of || json_array_append_new(eq, e) != 0 || json_array_append_new(maybe, any_of) != 0)
            *st = pl_nomem(p);
        json_decref(xr);
        json_decref(cr);
    }
    json_t *r = NULL;
    if (*st == HS_OK) {
        json_t *conds[2] = {eq, maybe}, *cnt[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            json_t *w = json_array_size(conds[k]) == 1 ? json_incref(json_array_get(conds[k], 0))
                      : json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", conds[k], "location", -1);
            json_t *q = w ? json_pack("{s:[{s:{s:{s:{s:[{s:{s:s}}],s:b,s:i}},s:i}}],"
                                      "s:[{s:{s:{s:O},s:{s:s,s:O}}}],s:o,s:s,s:s}",
                                      "targetList", "ResTarget", "val", "FuncCall", "funcname", "String", "sval",
                                      "count", "agg_star", 1, "location", -1, "location", -1,
                                      "fromClause", "RangeSubselect", "subquery", "SelectStmt", sub, "alias",
                                      "aliasname", "_hs_q", "colnames", names,
                                      "whereClause", w, "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE")
                          : NULL;
            cnt[k] = q ? json_pack("{s:{s:s,s:{s:o},s:i}}", "SubLink", "subLinkType", "EXPR_SUBLINK",
                                   "subselect", "SelectStmt", q, "location", loc)
                       : NULL;
        }
        json_t *cw = cnt[0] && cnt[1]
            ? json_pack("[o,o]", pl_when(pl_mk_op(">", cnt[0], pl_mk_int(0)), mk_bool(in)),
                        pl_when(pl_mk_op(">", cnt[1], pl_mk_int(0)), pl_mk_null()))
            : NULL;
        if (!cw) {
            json_decref(cnt[0]);
            json_decref(cnt[1]);
        }
        r = cw ? json_pack("{s:{s:o,s:o,s:i,s:b}}", "CaseExpr", "args", cw, "defresult", mk_bool(!in),
                           "location", loc, "hs_eager", 1)
               : NULL;
        if (!r)
            *st = pl_nomem(p);
    }
    json_decref(names);
    json_decref(eq);
    json_decref(maybe);
    return r;
}

/* The expression that replaces an EXISTS/ANY/ALL SubLink (NULL: not one). */
static json_t *sublink_expr(planner *p, rel *cur, nmap *m, bool after_agg, const json_t *sl, hs_status *st)
{
    const char *type = pl_jstrv(sl, "subLinkType");
    json_t *sub = pl_jget(pl_jget(sl, "subselect"), "SelectStmt");
    int loc = sq_loc(sl);
    *st = HS_OK;
    if (!type || !sub)
        return NULL;
    if (!strcmp(type, "EXISTS_SUBLINK")) {
        json_t *cnt = agg_sublink(sub, "count", false, NULL, loc);
        return cnt ? pl_mk_op(">", cnt, pl_mk_int(0)) : NULL;
    }
    bool any = !strcmp(type, "ANY_SUBLINK"), all = !strcmp(type, "ALL_SUBLINK");
    if (!any && !all)
        return NULL;
    const char *op = sq_str(json_array_get(pl_jget(sl, "operName"), 0));
    json_t *x = pl_jget(sl, "testexpr");
    if (!op)
        op = "=";
    if (pl_is_kind(x, "RowExpr", NULL) && cur && (!strcmp(op, "=") ? any : (!strcmp(op, "<>") && all)))
        return row_in_expr(p, cur, m, after_agg, sl, any, st);
    if (pl_is_kind(x, "RowExpr", NULL) || (plain_select(sub) && json_array_size(pl_jget(sub, "targetList")) != 1)) {
        *st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "row comparisons with subqueries are not supported here");
        return NULL;
    }
    bool eq = !strcmp(op, "="), ne = !strcmp(op, "<>") || !strcmp(op, "!=");
    bool gt = !strcmp(op, ">") || !strcmp(op, ">="), lt = !strcmp(op, "<") || !strcmp(op, "<=");
    if (!eq && !ne && !gt && !lt) {
        *st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "%s %s with a subquery is not supported", op,
                   any ? "ANY" : "ALL");
        return NULL;
    }
    json_t *cnt = agg_sublink(sub, "count", false, NULL, loc);
    json_t *nn = agg_sublink(sub, "count", true, NULL, loc);
    json_t *hit;
    if (eq || ne) {
        /* x moves into the subquery's WHERE: it reads a column of its own
         * (a name no table has), so inner columns of the same name cannot
         * capture its references */
        json_t *xin = json_incref(x);
        if (cur) {
            int col = -1;
            /* COALESCE(x) = x, as a new column (never renaming a column of cur) */
            json_t *wrapped = json_pack("{s:{s:[O],s:i}}", "CoalesceExpr", "args", x, "location", -1);
            /* x's own scalar subqueries ((SELECT ...) IN (SELECT ...))
             * first; after aggregation x reads the block's aggregates and
             * group keys (HAVING max(v) = ALL (...)) */
            nmap local = {0};
            nmap *mm = m ? m : &local;
            json_t *hold = wrapped ? json_pack("[O]", wrapped) : NULL;
            *st = !wrapped || !hold ? pl_nomem(p) : HS_OK;
            if (*st == HS_OK && has_sublink(wrapped))
                *st = pl_attach_scalars(p, cur, &hold, 1, mm, after_agg);
            if (*st == HS_OK)
                *st = after_agg ? pl_rel_add_expr_in(p, cur, json_array_get(hold, 0), mm, p->ungrouped, p->ungrouped_key, &col)
                                : pl_rel_add_expr_in(p, cur, json_array_get(hold, 0), mm, NULL, NULL, &col);
            json_decref(hold);
            pl_nmap_free(&local);
            json_decref(wrapped);
            if (*st != HS_OK) {
                json_decref(xin);
                json_decref(cnt);
                json_decref(nn);
                return NULL;
            }
            char nm[32];
            snprintf(nm, sizeof nm, "\x01in%d", col);
            hs_free(cur->cols[col].name);
            cur->cols[col].name = hs_strdup(nm);
            cur->cols[col].hidden = false;
            json_decref(xin);
            xin = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", nm,
                            "location", -1);
        }
        /* neq = the count of elements equal to x: = ANY holds and <> ALL
         * fails when neq > 0; <> ANY holds and = ALL fails when some
         * non-NULL element differs from x, nn > neq (x is not NULL here;
         * counting `t <> x` would be a correlation by inequality) */
        json_t *neq = agg_sublink(sub, "count", false, xin, loc);
        hit = eq == any ? pl_mk_op(">", neq, pl_mk_int(0)) : pl_mk_op(">", json_incref(nn), neq);
        json_decref(xin);
    }
    else {
        /* ANY: x > min, x < max; ALL: x > max, x < min */
        const char *fn = (gt == any) ? "min" : "max";
        hit = pl_mk_op(op, json_incref(x), agg_sublink(sub, fn, true, NULL, loc));
    }
    json_t *xnull = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", x, "nulltesttype", "IS_NULL",
                              "location", -1);
    json_t *some_null = pl_mk_op(">", json_incref(cnt), nn);
    json_t *cw;
    if (any)
        cw = json_pack("[o,o,o,o]", pl_when(pl_mk_op("=", json_incref(cnt), pl_mk_int(0)), mk_bool(false)),
                       pl_when(xnull, pl_mk_null()), pl_when(hit, mk_bool(true)), pl_when(some_null, pl_mk_null()));
    else {
        /* ALL: for = and <> the count of failing comparisons */
        json_t *fails = (eq || ne) ? hit
                           : json_pack("{s:{s:s,s:[o],s:i}}", "BoolExpr", "boolop", "NOT_EXPR", "args",
                                       hit, "location", -1);
        cw = json_pack("[o,o,o,o]", pl_when(pl_mk_op("=", json_incref(cnt), pl_mk_int(0)), mk_bool(true)),
                       pl_when(xnull, pl_mk_null()), pl_when(fails, mk_bool(false)), pl_when(some_null, pl_mk_null()));
    }
    json_decref(cnt);
    /* hs_eager: not a CASE of the query, its subqueries run for every row */
    json_t *r = cw ? json_pack("{s:{s:o,s:o,s:i,s:b}}", "CaseExpr", "args", cw, "defresult",
                               mk_bool(all), "location", loc, "hs_eager", 1) : NULL;
    if (!r)
        *st = pl_nomem(p);
    return r;
}

/* Replaces EXISTS/ANY/ALL SubLinks under j (in their parents). */
static hs_status rewrite_sublinks(planner *p, rel *cur, nmap *m, json_t *j, bool after_agg, int depth)
{
    if (depth > 400 || !j || (after_agg && pl_is_agg_call(j)))
        return HS_OK;
    hs_status st = HS_OK;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            json_t *b;
            if (pl_is_kind(v, "SubLink", &b)) {
                json_t *r = sublink_expr(p, cur, m, after_agg, b, &st);
                if (st != HS_OK)
                    return st;
                if (r)
                    json_object_set_new(j, k, r);
            } else if (strcmp(k, "SubLink") != 0) {
                HS_TRY(rewrite_sublinks(p, cur, m, v, after_agg, depth + 1));
            }
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i), *b;
            if (pl_is_kind(v, "SubLink", &b)) {
                json_t *r = sublink_expr(p, cur, m, after_agg, b, &st);
                if (st != HS_OK)
                    return st;
                if (r)
                    json_array_set_new(j, i, r);
            } else {
                HS_TRY(rewrite_sublinks(p, cur, m, v, after_agg, depth + 1));
            }
        }
    }
    return HS_OK;
}

/* ---- CASE and COALESCE evaluate lazily ----
 * PostgreSQL runs a subquery in a CASE branch, or in a COALESCE argument
 * after the first, only for the rows that reach it: 1 / 0 or a second row
 * (21000) in a branch no row takes is no error.  Such a subquery goes to
 * the Apply with a guard column (the condition under which the row reaches
 * it): rows whose guard is not true get NULL without running it. */

static json_t *is_true(json_t *c)   /* takes c: COALESCE(c, false) */
{
    return c ? json_pack("{s:{s:[o,o],s:i}}", "CoalesceExpr", "args", c, mk_bool(false), "location", -1)
             : NULL;
}

static json_t *not_of(json_t *c)    /* takes c */
{
    return c ? json_pack("{s:{s:s,s:[o],s:i}}", "BoolExpr", "boolop", "NOT_EXPR", "args", c, "location", -1)
             : NULL;
}

/* a AND b, taking both; NULL stands for true (and *oom is set when a
 * node could not be made). */
static json_t *and2(json_t *a, json_t *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return json_pack("{s:{s:s,s:[o,o],s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", a, b, "location", -1);
}

static json_t *copy_or_null(const json_t *j)
{
    return j ? json_incref((json_t *)j) : NULL;
}

/* The condition under which the node target (by identity) under j is
 * evaluated (a new reference, NULL: always); *found says whether it lies
 * under j; *oom when a node could not be made. */
static json_t *lazy_guard(const json_t *j, const json_t *target, bool *found, bool *oom, int depth)
{
    json_t *b;
    *found = false;
    if (!j || depth > 400)
        return NULL;
    if (j == target) {
        *found = true;
        return NULL;
    }
    if (pl_is_kind(j, "CaseExpr", &b) && !json_is_true(pl_jget(b, "hs_eager"))) {
        json_t *arg = pl_jget(b, "arg");
        json_t *g = lazy_guard(arg, target, found, oom, depth + 1);
        if (*found)
            return g;
        json_t *prior = NULL;   /* no earlier WHEN held */
        for (size_t i = 0; i < json_array_size(pl_jget(b, "args")); i++) {
            json_t *w = pl_jget(json_array_get(pl_jget(b, "args"), i), "CaseWhen");
            json_t *expr = pl_jget(w, "expr");
            g = lazy_guard(expr, target, found, oom, depth + 1);
            if (*found)
                return and2(prior, g);
            json_t *cond = arg ? pl_mk_op("=", json_incref(arg), copy_or_null(expr)) : copy_or_null(expr);
            g = lazy_guard(pl_jget(w, "result"), target, found, oom, depth + 1);
            if (*found) {
                json_t *r = and2(prior, and2(is_true(cond), g));
                *oom |= !r;
                return r;
            }
            prior = and2(prior, not_of(is_true(cond)));
            *oom |= !prior;
        }
        g = lazy_guard(pl_jget(b, "defresult"), target, found, oom, depth + 1);
        if (*found)
            return and2(prior, g);
        json_decref(prior);
        return NULL;
    }
    if (pl_is_kind(j, "CoalesceExpr", &b)) {
        json_t *prior = NULL;   /* the arguments before were NULL */
        for (size_t i = 0; i < json_array_size(pl_jget(b, "args")); i++) {
            json_t *a = json_array_get(pl_jget(b, "args"), i);
            json_t *g = lazy_guard(a, target, found, oom, depth + 1);
            if (*found)
                return and2(prior, g);
            json_t *isnull = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", a, "nulltesttype", "IS_NULL",
                                       "location", -1);
            prior = and2(prior, isnull);
            *oom |= !prior;
        }
        json_decref(prior);
        return NULL;
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            json_t *g = lazy_guard(v, target, found, oom, depth + 1);
            if (*found)
                return g;
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *g = lazy_guard(json_array_get(j, i), target, found, oom, depth + 1);
            if (*found)
                return g;
        }
    }
    return NULL;
}

typedef struct scalars_ctx {
    json_t *const *nodes;
    int n;
    nmap *m;
    bool after_agg;
} scalars_ctx;

static hs_status attach_one(planner *p, rel *cur, scalars_ctx *x, json_t *node, int depth);
static bool replace_node(json_t *j, const json_t *target, json_t *with, int depth);

/* After aggregation: the SubLinks outside aggregate calls and outside
 * expressions already mapped to columns (a group key `(SELECT ...) + 1`
 * whose subquery ran before aggregation). */
typedef struct mapped_ctx {
    const nmap *m;
    json_t *arr;
} mapped_ctx;

static pl_walk_res visit_sublink_unmapped(const json_t *j, void *ctx)
{
    mapped_ctx *c = ctx;
    if (pl_is_agg_call(j))
        return PL_SKIP;
    if (json_is_object(j) && json_object_size(j) == 1)
        for (int k = 0; k < c->m->n; k++)
            if (c->m->nodes[k] == j || (!json_object_get(j, "SubLink") && pl_jeq(c->m->nodes[k], j)))
                return PL_SKIP;
    if (json_object_get(j, "SubLink") && json_object_size(j) == 1) {
        json_array_append(c->arr, (json_t *)j);
        return PL_SKIP;
    }
    return PL_DESCEND;
}

/* Attaches the scalar subqueries under j (a guard) first. */
static hs_status attach_under(planner *p, rel *cur, scalars_ctx *x, const json_t *j, int depth)
{
    json_t *arr = json_array();
    if (!arr)
        return pl_nomem(p);
    if (x->after_agg) {
        mapped_ctx mc = {x->m, arr};
        pl_walk(j, visit_sublink_unmapped, &mc, 0);
    } else {
        pl_collect_sublinks(j, arr, 0);
    }
    hs_status st = HS_OK;
    for (size_t i = 0; i < json_array_size(arr) && st == HS_OK; i++)
        st = attach_one(p, cur, x, json_array_get(arr, i), depth + 1);
    json_decref(arr);
    return st;
}

static hs_status attach_one(planner *p, rel *cur, scalars_ctx *x, json_t *node, int depth)
{
    json_t *b = pl_jget(node, "SubLink");
    const char *type = pl_jstrv(b, "subLinkType");
    bool array = type && !strcmp(type, "ARRAY_SUBLINK");
    if (!type || (strcmp(type, "EXPR_SUBLINK") != 0 && !array))
        return HS_OK;   /* the binder reports it */
    if (depth > 64)
        return pl_fail(p, HS_INVALID, "54001", sq_loc(b), "subqueries nested too deeply in CASE");
    for (int k = 0; k < x->m->n; k++)
        if (pl_jeq(x->m->nodes[k], node))
            return HS_OK;   /* the same subquery twice: joined once */
    json_t *guard = NULL;
    bool found = false, oom = false;
    for (int i = 0; i < x->n && !found; i++)
        guard = lazy_guard(x->nodes[i], node, &found, &oom, 0);
    if (oom) {
        json_decref(guard);
        return pl_nomem(p);
    }
    int col = -1, gcol = -1;
    hs_status st = HS_OK;
    if (guard) {
        /* the guard's own subqueries, then the guard as a column */
        st = attach_under(p, cur, x, guard, depth);
        if (st == HS_OK)
            st = x->after_agg ? pl_rel_add_expr_in(p, cur, guard, x->m, p->ungrouped, p->ungrouped_key, &gcol)
                              : pl_rel_add_expr_in(p, cur, guard, x->m, NULL, NULL, &gcol);
        json_decref(guard);
        if (st == HS_OK)
            st = pl_apply_attach_guarded(p, cur, b, gcol, &col);
        /* its column is NULL where the guard is not true: not the value of
         * the same subquery elsewhere, so the node itself (not its equals,
         * as the map would) becomes a reference to that column */
        char nm[32];
        snprintf(nm, sizeof nm, "\x01lazy%d", col);
        json_t *ref = st == HS_OK ? json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval",
                                              nm, "location", -1) : NULL;
        bool done = false;
        for (int i = 0; ref && i < x->n && !done; i++)
            done = replace_node(x->nodes[i], node, ref, 0);
        json_decref(ref);
        if (st == HS_OK && done) {
            hs_free(cur->cols[col].name);
            cur->cols[col].name = hs_strdup(nm);
            cur->cols[col].hidden = false;
            return cur->cols[col].name ? HS_OK : pl_nomem(p);
        }
        if (st == HS_OK && !ref)
            st = pl_nomem(p);
    } else {
        /* ARRAY(subquery): its rows in order, per outer row (plan_apply.c) */
        st = array ? pl_apply_attach(p, cur, b, &col) : attach_scalar(p, cur, b, &col);
    }
    /* earlier mapped columns keep their positions (joins append) */
    return st == HS_OK ? pl_nmap_add(p, x->m, node, col) : st;
}

/* Joins every scalar subquery under the nodes into cur, mapping them. */
hs_status  pl_attach_scalars(planner *p, rel *cur, json_t *const *nodes, int n, nmap *m,
                            bool after_agg)
{
    hs_status st = HS_OK;
    for (int i = 0; i < n && st == HS_OK; i++)
        st = rewrite_sublinks(p, cur, m, nodes[i], after_agg, 0);
    scalars_ctx x = {nodes, n, m, after_agg};
    for (int i = 0; i < n && st == HS_OK; i++)
        st = attach_under(p, cur, &x, nodes[i], 0);
    return st;
}

/* Whether conjunct node is [NOT] EXISTS / [NOT] IN (subquery) that becomes
 * a semi/anti join, with a plain subquery whose WHERE reads no outer
 * column (then only its IN operand reads the outer query, and the join
 * may be applied to the FROM item that operand reads, before the others
 * join: pl_build_from). */
hs_status pl_sub_pushable(planner *p, const json_t *node, bool *ok)
{
    *ok = false;
    json_t *b, *x = (json_t *)node, *sl, *sub;
    bool neg = false;
    if (pl_is_kind(node, "BoolExpr", &b) && pl_jstrv(b, "boolop") && !strcmp(pl_jstrv(b, "boolop"), "NOT_EXPR") &&
        json_array_size(pl_jget(b, "args")) == 1) {
        x = json_array_get(pl_jget(b, "args"), 0);
        neg = true;
    }
    if (!pl_is_kind(x, "SubLink", &sl) || !pl_is_kind(pl_jget(sl, "subselect"), "SelectStmt", &sub))
        return HS_OK;
    const char *t = pl_jstrv(sl, "subLinkType");
    const char *op = sq_str(json_array_get(pl_jget(sl, "operName"), 0));
    bool row = pl_is_kind(pl_jget(sl, "testexpr"), "RowExpr", NULL);
    if (!t || !(!strcmp(t, "EXISTS_SUBLINK") ||
                (!strcmp(t, "ANY_SUBLINK") && (!op || !strcmp(op, "=")) && !(row && neg))))
        return HS_OK;
    if (!plain_select(sub) || pl_jget(sub, "withClause") || pl_apply_needed(sub))
        return HS_OK;
    corr c;
    hs_status st = sub_split(p, sub, &c);
    if (st == HS_OK)
        *ok = json_array_size(c.corr) == 0;
    corr_free(&c);
    return st;
}

/* A WHERE conjunct with subqueries: semi/anti joins for top-level
 * [NOT] EXISTS / [NOT] IN, else scalar subqueries joined then a filter. */
hs_status  pl_apply_sub_conj(planner *p, rel *cur, json_t *node)
{
    json_t *b, *x = node;
    bool neg = false;
    if (pl_is_kind(node, "BoolExpr", &b) && pl_jstrv(b, "boolop") && !strcmp(pl_jstrv(b, "boolop"), "NOT_EXPR") &&
        json_array_size(pl_jget(b, "args")) == 1) {
        x = json_array_get(pl_jget(b, "args"), 0);
        neg = true;
    }
    json_t *sl;
    json_t *own = NULL;
    if (pl_is_kind(x, "SubLink", &sl)) {
        const char *t = pl_jstrv(sl, "subLinkType");
        const char *op = sq_str(json_array_get(pl_jget(sl, "operName"), 0));
        bool row = pl_is_kind(pl_jget(sl, "testexpr"), "RowExpr", NULL);
        /* over functions of the outer row: counts through an Apply */
        bool apply = pl_apply_needed(pl_jget(pl_jget(sl, "subselect"), "SelectStmt"));
        bool semi = !apply && t && (!strcmp(t, "EXISTS_SUBLINK") ||
                  (!strcmp(t, "ANY_SUBLINK") && (!op || !strcmp(op, "=")) && !(row && neg)));
        if (semi) {
            hs_status st1 = attach_semi(p, cur, sl, neg);
            if ((st1 != HS_UNSUPPORTED && st1 != HS_NOT_FOUND) || row || !cur->op)
                return st1;   /* (no cur: it failed in the join, cur went with it) */
            /* not a semi join (aggregates or LIMIT per outer row, outer
             * columns two levels down): counted below, through the scalar
             * subqueries of attach_scalar (a join or the Apply); a subquery
             * wrong in itself fails there again */
            sq_fail_clear(p->s, p->err);
        }
        if (t && (!strcmp(t, "ANY_SUBLINK") || !strcmp(t, "ALL_SUBLINK") || semi ||
                  (apply && !strcmp(t, "EXISTS_SUBLINK")))) {
            hs_status st2;
            json_t *r = sublink_expr(p, cur, NULL, false, sl, &st2);
            HS_TRY(st2);
            if (r && neg) {
                own = json_pack("{s:{s:s,s:[o],s:i}}", "BoolExpr", "boolop", "NOT_EXPR", "args", r,
                                "location", -1);
            } else {
                own = r;
            }
            if (!own)
                return pl_nomem(p);
            node = own;
        }
    }
    nmap m = {0};
    hs_status st = pl_attach_scalars(p, cur, &node, 1, &m, false);
    if (st == HS_OK)
        st = pl_filter_rel(p, cur, &node, 1, m.nodes, m.cols, m.n, "WHERE");
    pl_nmap_free(&m);
    json_decref(own);
    return st;
}

/* ---- aggregates of the outer query inside its subqueries ----
 *   SELECT g, (SELECT count(*) FROM t2 WHERE t2.w > sum(t1.v)) FROM t1 GROUP BY g
 * An aggregate call in a subquery whose arguments read only columns of the
 * enclosing block (none of the subquery's own FROM) is the enclosing
 * block's aggregate, as PostgreSQL assigns it (to the level of its
 * variables).  pl_outer_aggs moves such calls of the select list's,
 * HAVING's and ORDER BY's subqueries out: each becomes a ColumnRef of a
 * name no table has, the call joins the block's aggregates, and after
 * aggregation pl_outer_aggs_expose gives that aggregate's column the name,
 * so the subquery reads it as an outer column (decorrelated or applied per
 * group like any).  The walk goes every level down: max(t1.v) in
 * (SELECT (SELECT max(t1.v) FROM t3) FROM t2) is t1's aggregate too, and a
 * call reading a column of a level between belongs to that level (moved
 * when that level is planned).  A subquery over FROM functions of the
 * block's row (an Apply) has its names looked up as the Apply plans it. */

typedef struct oagg_ctx {
    const corr *const *lv;  /* the subquery levels' FROM leaves, outermost first */
    int nlv;
    const layer *outer;     /* the enclosing block's columns (NULL: any name outside the levels) */
    int n_refs;
    bool ok;
} oagg_ctx;

/* Whether the ColumnRef body b names a column of the level's own FROM (an
 * Apply's enclosing row, joined into its lateral functions, is not). */
static bool level_col(const corr *c, json_t *b)
{
    const char *names[8];
    int n = pl_colref_names(b, names, 8), col = -1;
    if (n < 1 || !names[n - 1])
        return true;
    int l = pl_leaf_find(c->leaves, c->n_leaves, names, n, &col);
    return l == -2 || (l >= 0 && !c->leaves[l]->ns[col].outer);
}

static pl_walk_res visit_oagg_ref(const json_t *j, void *ctx)
{
    oagg_ctx *o = ctx;
    json_t *b;
    if (pl_is_kind(j, "SubLink", NULL))
        return PL_SKIP;
    if (!pl_is_kind(j, "ColumnRef", &b))
        return PL_DESCEND;
    const char *names[8];
    int n = pl_colref_names(b, names, 8);
    bool inner = false;
    o->n_refs++;
    for (int i = 0; i < o->nlv && !inner; i++)
        inner = level_col(o->lv[i], b);
    if (inner || n < 1 || !names[n - 1] || (o->outer && pl_layer_find(o->outer, names, n) < 0)) {
        o->ok = false;
        return PL_STOP;
    }
    return PL_SKIP;
}

/* Replaces the node `target` (by identity) under j with `with` (a reference taken). */
static bool replace_node(json_t *j, const json_t *target, json_t *with, int depth)
{
    if (!j || depth > 400)
        return false;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            if (v == target)
                return json_object_set(j, k, with) == 0;
            if (replace_node(v, target, with, depth + 1))
                return true;
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            if (v == target)
                return json_array_set(j, i, with) == 0;
            if (replace_node(v, target, with, depth + 1))
                return true;
        }
    }
    return false;
}

/* The walk over a block's subqueries, every level down: with outer set, the
 * calls of the block move to aggs (names appended to out); without, the
 * location of the first such call is found (loc, -2 none). */
#define OAGG_LEVELS 16

typedef struct oagg_walk {
    const layer *outer;     /* NULL: find mode */
    const rel *row;         /* the block's relation: an Apply subquery's FROM plans over it */
    json_t *aggs, *out;
    int loc;
    const corr *lv[OAGG_LEVELS];
    int nlv;
} oagg_walk;

static const char *const oagg_parts[] = {"targetList", "whereClause", "havingClause", "sortClause"};

static hs_status oagg_split_cb(planner *p, void *ctx)
{
    void **a = ctx;
    return sub_split(p, a[0], a[1]);
}

/* One call of the level: moved (or found) when its columns all lie
 * outside the levels, in the block. */
static hs_status oagg_call(planner *p, oagg_walk *w, json_t *sub, json_t *call)
{
    if (sq_loc(pl_jget(call, "FuncCall")) < 0)
        return HS_OK;   /* the planner's own (agg_sublink: over the subquery's rows by construction) */
    oagg_ctx o = {w->lv, w->nlv, w->outer, 0, true};
    pl_walk(pl_jget(call, "FuncCall"), visit_oagg_ref, &o, 0);
    if (!o.ok || o.n_refs == 0)
        return HS_OK;   /* the subquery's own aggregate (or a level's between) */
    if (!w->outer) {
        w->loc = sq_loc(pl_jget(call, "FuncCall"));
        return HS_OK;
    }
    /* the same call in several subqueries: one aggregate, one name */
    char nm[32];
    const char *seen = NULL;
    for (size_t k = 0; k < json_array_size(w->out) && !seen; k++)
        if (pl_jeq(json_array_get(json_array_get(w->out, k), 1), call))
            seen = json_string_value(json_array_get(json_array_get(w->out, k), 0));
    snprintf(nm, sizeof nm, "%s", seen ? seen : "");
    if (!seen)
        snprintf(nm, sizeof nm, "\x01oagg%zu", json_array_size(w->out));
    json_t *ref = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", nm,
                            "location", -1);
    json_t *keep = json_incref(call);   /* the call outlives its place in sub */
    bool done = ref && keep && replace_node(sub, call, ref, 0);
    if (done && !seen) {
        json_array_append(w->aggs, keep);
        json_array_append_new(w->out, json_pack("[s,O]", nm, keep));
    }
    json_decref(ref);
    json_decref(keep);
    return done ? HS_OK : pl_nomem(p);
}

static hs_status oagg_level(planner *p, oagg_walk *w, json_t *sub)
{
    if (!plain_select(sub) || pl_jget(sub, "withClause") || w->nlv >= OAGG_LEVELS)
        return HS_OK;
    bool apply = pl_apply_needed(sub);
    if (apply && (w->nlv > 0 || !w->row))
        return HS_OK;   /* its FROM reads a level between: planned there */
    corr c;
    hs_status st;
    if (apply) {
        /* a FROM function of the block's row (plan_apply.c): its names
         * as the Apply sees them, over an empty row */
        void *a[2] = {sub, &c};
        memset(&c, 0, sizeof c);
        st = pl_apply_with_row(p, w->row, oagg_split_cb, a);
    } else {
        st = sub_split(p, sub, &c);
    }
    if (st == HS_UNSUPPORTED || st == HS_NOT_FOUND || st == HS_INVALID) {
        /* a FROM the split does not read: planning the subquery reports it */
        corr_free(&c);
        sq_fail_clear(p->s, p->err);
        return HS_OK;
    }
    json_t *calls = json_array(), *sls = json_array();
    if (st == HS_OK && (!calls || !sls))
        st = pl_nomem(p);
    for (size_t i = 0; st == HS_OK && i < sizeof oagg_parts / sizeof *oagg_parts; i++) {
        pl_collect_aggs(pl_jget(sub, oagg_parts[i]), calls, 0);
        pl_collect_sublinks_noagg(pl_jget(sub, oagg_parts[i]), sls, 0);
    }
    w->lv[w->nlv++] = &c;
    for (size_t i = 0; st == HS_OK && w->loc == -2 && i < json_array_size(calls); i++)
        st = oagg_call(p, w, sub, json_array_get(calls, i));
    /* the subqueries of this level, one level down */
    for (size_t i = 0; st == HS_OK && w->loc == -2 && i < json_array_size(sls); i++) {
        json_t *inner = pl_jget(pl_jget(pl_jget(json_array_get(sls, i), "SubLink"), "subselect"), "SelectStmt");
        if (inner)
            st = oagg_level(p, w, inner);
    }
    w->nlv--;
    json_decref(calls);
    json_decref(sls);
    corr_free(&c);
    return st;
}

/* ---- grouping sets: group keys a branch leaves out, inside subqueries ----
 * In the branch of ROLLUP (g) that groups by () the key g reads as NULL,
 * also where a subquery of the select list or HAVING reads it as an outer
 * column (PostgreSQL's grouping column is NULL there).  A ColumnRef of a
 * subquery at any depth that resolves in none of the levels and names the
 * absent key's column (same qualifier when both have one) becomes NULL. */

typedef struct absent_ctx {
    const corr *const *lv;
    int nlv;
    const json_t *absent;   /* ColumnRef nodes of the block */
    json_t *hits;
} absent_ctx;

static bool names_match(const json_t *a, json_t *b)
{
    json_t *ab;
    const char *an[8], *bn[8];
    if (!pl_is_kind(a, "ColumnRef", &ab))
        return false;
    int na = pl_colref_names(ab, an, 8), nb = pl_colref_names(b, bn, 8);
    if (na < 1 || nb < 1 || !an[na - 1] || !bn[nb - 1] || strcmp(an[na - 1], bn[nb - 1]))
        return false;
    return na < 2 || nb < 2 || !an[na - 2] || !bn[nb - 2] || !strcmp(an[na - 2], bn[nb - 2]);
}

static pl_walk_res visit_absent(const json_t *j, void *ctx)
{
    absent_ctx *a = ctx;
    json_t *b;
    if (pl_is_kind(j, "SubLink", NULL))
        return PL_SKIP;
    if (!pl_is_kind(j, "ColumnRef", &b))
        return PL_DESCEND;
    for (int i = 0; i < a->nlv; i++)
        if (level_col(a->lv[i], b))
            return PL_SKIP;
    for (size_t i = 0; i < json_array_size(a->absent); i++)
        if (names_match(json_array_get(a->absent, i), b)) {
            json_array_append(a->hits, (json_t *)j);
            break;
        }
    return PL_SKIP;
}

static hs_status absent_level(planner *p, json_t *sub, const corr **lv, int nlv, const json_t *absent)
{
    if (!plain_select(sub) || pl_jget(sub, "withClause") || pl_apply_needed(sub) || nlv >= OAGG_LEVELS)
        return HS_OK;
    corr c;
    hs_status st = sub_split(p, sub, &c);
    if (st == HS_UNSUPPORTED || st == HS_NOT_FOUND || st == HS_INVALID) {
        corr_free(&c);
        sq_fail_clear(p->s, p->err);
        return HS_OK;
    }
    lv[nlv] = &c;
    json_t *hits = json_array(), *sls = json_array();
    if (st == HS_OK && (!hits || !sls))
        st = pl_nomem(p);
    absent_ctx a = {lv, nlv + 1, absent, hits};
    for (size_t i = 0; st == HS_OK && i < sizeof oagg_parts / sizeof *oagg_parts; i++) {
        pl_walk(pl_jget(sub, oagg_parts[i]), visit_absent, &a, 0);
        pl_collect_sublinks(pl_jget(sub, oagg_parts[i]), sls, 0);
    }
    for (size_t i = 0; st == HS_OK && i < json_array_size(hits); i++) {
        json_t *nul = pl_mk_null();
        if (!nul || !replace_node(sub, json_array_get(hits, i), nul, 0))
            st = pl_nomem(p);
        json_decref(nul);
    }
    for (size_t i = 0; st == HS_OK && i < json_array_size(sls); i++) {
        json_t *inner = pl_jget(pl_jget(pl_jget(json_array_get(sls, i), "SubLink"), "subselect"), "SelectStmt");
        if (inner)
            st = absent_level(p, inner, lv, nlv + 1, absent);
    }
    json_decref(hits);
    json_decref(sls);
    corr_free(&c);
    return st;
}

hs_status pl_sub_null_absent(planner *p, json_t *j, const json_t *absent)
{
    json_t *sls = json_array();
    if (!sls)
        return pl_nomem(p);
    pl_collect_sublinks(j, sls, 0);
    const corr *lv[OAGG_LEVELS];
    hs_status st = HS_OK;
    for (size_t i = 0; st == HS_OK && i < json_array_size(sls); i++) {
        json_t *sub = pl_jget(pl_jget(pl_jget(json_array_get(sls, i), "SubLink"), "subselect"), "SelectStmt");
        if (sub)
            st = absent_level(p, sub, lv, 0, absent);
    }
    json_decref(sls);
    return st;
}

hs_status pl_outer_aggs(planner *p, json_t *const *nodes, int n, const rel *cur, json_t *aggs, json_t *out)
{
    json_t *sls = json_array();
    if (!sls)
        return pl_nomem(p);
    for (int i = 0; i < n; i++)
        pl_collect_sublinks_noagg(nodes[i], sls, 0);
    layer outer = {cur->cols, cur->n, 0};
    oagg_walk w = {.outer = &outer, .row = cur, .aggs = aggs, .out = out, .loc = -2};
    hs_status st = HS_OK;
    for (size_t i = 0; st == HS_OK && i < json_array_size(sls); i++) {
        json_t *sub = pl_jget(pl_jget(pl_jget(json_array_get(sls, i), "SubLink"), "subselect"), "SelectStmt");
        if (sub)
            st = oagg_level(p, &w, sub);
    }
    json_decref(sls);
    return st;
}

hs_status pl_outer_aggs_expose(planner *p, rel *cur, const nmap *m, const json_t *out)
{
    for (size_t i = 0; i < json_array_size(out); i++) {
        json_t *e = json_array_get(out, i);
        const json_t *call = json_array_get(e, 1);
        int col = -1;
        for (int k = 0; k < m->n && col < 0; k++)
            if (m->nodes[k] == call || pl_jeq(m->nodes[k], call))
                col = m->cols[k];
        if (col < 0 || col >= cur->n)
            continue;   /* cannot happen: every call was aggregated */
        char *nm = hs_strdup(json_string_value(json_array_get(e, 0)));
        if (!nm)
            return pl_nomem(p);
        hs_free(cur->cols[col].qual);
        hs_free(cur->cols[col].name);
        cur->cols[col].qual = NULL;
        cur->cols[col].name = nm;
        cur->cols[col].hidden = false;
    }
    return HS_OK;
}

/* The location of an aggregate call of sub, or of a subquery of it at any
 * depth, whose columns all lie outside sub's FROM and the levels between,
 * -2 when there is none (or sub's FROM is not one sub_split reads).  Such
 * a call belongs to an enclosing query; run in the subquery per outer row
 * it would aggregate the outer row's value over the subquery's rows
 * instead, so the Apply refuses it. */
int pl_sub_outer_agg(planner *p, const json_t *sub)
{
    oagg_walk w = {.loc = -2};
    if (oagg_level(p, &w, (json_t *)sub) != HS_OK)
        sq_fail_clear(p->s, p->err);
    return w.loc;
}

typedef struct where_agg_ctx {
    planner *p;
    int loc;
} where_agg_ctx;

static pl_walk_res visit_where_sub(const json_t *j, void *ctx)
{
    where_agg_ctx *w = ctx;
    json_t *b;
    if (!pl_is_kind(j, "SubLink", &b))
        return PL_DESCEND;
    json_t *sub = pl_jget(pl_jget(b, "subselect"), "SelectStmt");
    if (sub)
        w->loc = pl_sub_outer_agg(w->p, sub);
    return w->loc != -2 ? PL_STOP : PL_SKIP;
}

/* PostgreSQL assigns an aggregate whose arguments read only the block's
 * columns to the block, also inside a subquery of its WHERE clause, where
 * no aggregate may stand: 42803 (an Apply would aggregate each outer row
 * alone and a semi join would give rows). */
hs_status pl_where_outer_aggs(planner *p, const json_t *where)
{
    where_agg_ctx w = {p, -2};
    if (where)
        pl_walk(where, visit_where_sub, &w, 0);
    if (w.loc != -2)
        return pl_fail(p, HS_INVALID, "42803", w.loc, "aggregate functions are not allowed in WHERE");
    return HS_OK;
}

/* ---- subqueries in JOIN ... ON ----
 * A conjunct of an inner join's ON with a subquery filters the join's rows
 * as a WHERE conjunct would, when no outer join above the inner join
 * makes its side nullable (on the preserved side of a LEFT / RIGHT JOIN
 * the filter commutes with the outer join).  Such conjuncts move to WHERE,
 * where the semi joins and the Apply of WHERE plan them; the join keeps
 * the rest (or ON true).  A LEFT JOIN's ON with a subquery, the join a
 * FROM list item, runs per row of its left side (on_left_lateral), a RIGHT
 * JOIN's as the LEFT JOIN with its sides swapped (when no '*' shows their
 * order); other outer joins' ON keep their subqueries (the binder refuses
 * them, 0A000). */


/* `a LEFT JOIN b ON q` with a subquery in q, the join a FROM list item and
 * b a table or subquery: b becomes LATERAL (SELECT * FROM b WHERE q) b ON
 * true, run per row of a (plan_apply.c pl_apply_lateral): each row of a
 * with the rows of b for which q holds, or NULLs. */
static hs_status on_left_lateral(planner *p, json_t *b)
{
    json_t *r = pl_jget(b, "rarg"), *rb;
    const char *q = NULL;
    if (pl_is_kind(r, "RangeVar", &rb)) {
        json_t *al = pl_jget(rb, "alias");
        q = al && pl_jstrv(al, "aliasname") ? pl_jstrv(al, "aliasname") : pl_jstrv(rb, "relname");
    } else if (pl_is_kind(r, "RangeSubselect", &rb) && !json_is_true(pl_jget(rb, "lateral")) &&
               !json_is_true(pl_jget(rb, "hs_lateral_apply"))) {
        json_t *al = pl_jget(rb, "alias");
        q = al ? pl_jstrv(al, "aliasname") : NULL;
    }
    if (!q)
        return HS_OK;   /* the binder refuses the subquery (0A000) */
    json_t *sel = json_pack("{s:[{s:{s:{s:{s:[{s:{}}],s:i}},s:i}}],s:[O],s:O,s:s,s:s}",
                            "targetList", "ResTarget", "val", "ColumnRef", "fields", "A_Star", "location", -1,
                            "location", -1, "fromClause", r, "whereClause", pl_jget(b, "quals"),
                            "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE");
    json_t *rs = sel ? json_pack("{s:{s:{s:o},s:{s:s},s:b}}", "RangeSubselect", "subquery", "SelectStmt", sel,
                                 "alias", "aliasname", q, "hs_lateral_apply", 1)
                     : NULL;
    json_t *t = rs ? mk_bool(true) : NULL;
    if (!t || json_object_set_new(b, "rarg", rs) != 0 || json_object_set_new(b, "quals", t) != 0) {
        json_decref(t);
        return pl_nomem(p);
    }
    return HS_OK;
}

/* The names (aliases, relation names) of the FROM items under item. */
static void item_names(const json_t *item, json_t *names, int depth)
{
    json_t *b;
    if (!item || depth > 100)
        return;
    json_t *al = NULL;
    if (pl_is_kind(item, "RangeVar", &b)) {
        al = pl_jget(b, "alias");
        const char *n = al && pl_jstrv(al, "aliasname") ? pl_jstrv(al, "aliasname") : pl_jstrv(b, "relname");
        if (n)
            json_array_append_new(names, json_string(n));
        return;
    }
    if (pl_is_kind(item, "RangeSubselect", &b) || pl_is_kind(item, "RangeFunction", &b)) {
        al = pl_jget(b, "alias");
    } else if (pl_is_kind(item, "JoinExpr", &b)) {
        al = pl_jget(b, "alias");
        item_names(pl_jget(b, "larg"), names, depth + 1);
        item_names(pl_jget(b, "rarg"), names, depth + 1);
    }
    if (al && pl_jstrv(al, "aliasname"))
        json_array_append_new(names, json_string(pl_jstrv(al, "aliasname")));
}

typedef struct outside_ctx {
    const json_t *names;
    bool found;
} outside_ctx;

static pl_walk_res visit_outside(const json_t *j, void *ctx)
{
    outside_ctx *o = ctx;
    json_t *b;
    if (pl_is_kind(j, "SubLink", NULL))
        return PL_SKIP;
    if (!pl_is_kind(j, "ColumnRef", &b))
        return PL_DESCEND;
    const char *nm[8];
    int n = pl_colref_names(b, nm, 8);
    if (n < 2 || !nm[n - 2])
        return PL_SKIP;   /* unqualified: the join's own */
    for (size_t i = 0; i < json_array_size(o->names); i++)
        if (!strcmp(json_string_value(json_array_get(o->names, i)), nm[n - 2]))
            return PL_SKIP;
    o->found = true;
    return PL_STOP;
}

/* Under an Apply (per-row plans): whether the join's ON reads a qualified
 * column of no item under it, i.e. of the enclosing row, which the join's
 * inputs do not carry (the row is joined after them). */
static bool on_reads_outer_row(planner *p, const json_t *join, const json_t *q)
{
    if (!p->outer_row || !q)
        return false;
    json_t *names = json_array();
    if (!names)
        return false;
    item_names(join, names, 0);
    outside_ctx o = {names, false};
    pl_walk(q, visit_outside, &o, 0);
    json_decref(names);
    return o.found;
}

static hs_status on_move(planner *p, json_t *item, json_t *moved, int depth)
{
    json_t *b;
    if (depth > 200 || !pl_is_kind(item, "JoinExpr", &b))
        return HS_OK;
    const char *jt = pl_jstrv(b, "jointype");
    bool inner = !jt || !strcmp(jt, "JOIN_INNER");
    json_t *q0 = pl_jget(b, "quals"), *lb;
    json_t *l0 = pl_jget(b, "larg");
    if (depth == 0 && jt && !strcmp(jt, "JOIN_RIGHT") && q0 && has_sublink(q0) && !p->all_columns &&
        !pl_jget(b, "usingClause") && !json_is_true(pl_jget(b, "isNatural")) &&
        (pl_is_kind(l0, "RangeVar", NULL) ||
         (pl_is_kind(l0, "RangeSubselect", &lb) && !json_is_true(pl_jget(lb, "lateral"))))) {
        /* a RIGHT JOIN b ON q with a subquery in q is b LEFT JOIN a ON q
         * (below); the statement has no '*' to show the sides' order */
        json_t *l = json_incref(l0), *r = json_incref(pl_jget(b, "rarg"));
        json_object_set_new(b, "larg", r);
        json_object_set_new(b, "rarg", l);
        json_object_set_new(b, "jointype", json_string("JOIN_LEFT"));
        jt = pl_jstrv(b, "jointype");
    }
    if (depth == 0 && jt && !strcmp(jt, "JOIN_LEFT") && q0 &&
        (has_sublink(q0) || on_reads_outer_row(p, item, q0)) &&
        !pl_jget(b, "usingClause") && !json_is_true(pl_jget(b, "isNatural")))
        HS_TRY(on_left_lateral(p, b));
    if (inner || !strcmp(jt, "JOIN_LEFT"))
        HS_TRY(on_move(p, pl_jget(b, "larg"), moved, depth + 1));
    if (inner || !strcmp(jt, "JOIN_RIGHT"))
        HS_TRY(on_move(p, pl_jget(b, "rarg"), moved, depth + 1));
    json_t *q = pl_jget(b, "quals"), *qb;
    if (!inner || !q || !(has_sublink(q) || on_reads_outer_row(p, item, q)))
        return HS_OK;
    json_t *keep = json_array();
    if (!keep)
        return pl_nomem(p);
    bool and = pl_is_kind(q, "BoolExpr", &qb) && pl_jstrv(qb, "boolop") && !strcmp(pl_jstrv(qb, "boolop"), "AND_EXPR");
    size_t n = and ? json_array_size(pl_jget(qb, "args")) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *c = and ? json_array_get(pl_jget(qb, "args"), i) : q;
        json_array_append(has_sublink(c) || on_reads_outer_row(p, item, c) ? moved : keep, c);
    }
    json_t *nq;
    if (json_array_size(keep) == 0)
        nq = mk_bool(true);
    else if (json_array_size(keep) == 1)
        nq = json_incref(json_array_get(keep, 0));
    else
        nq = json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", keep, "location", -1);
    json_decref(keep);
    if (!nq || json_object_set_new(b, "quals", nq) != 0)
        return pl_nomem(p);
    return HS_OK;
}

hs_status pl_on_subqueries_to_where(planner *p, json_t *sel)
{
    json_t *from = pl_jget(sel, "fromClause");
    json_t *moved = json_array();
    if (!moved)
        return pl_nomem(p);
    hs_status st = HS_OK;
    for (size_t i = 0; st == HS_OK && i < json_array_size(from); i++)
        st = on_move(p, json_array_get(from, i), moved, 0);
    if (st == HS_OK && json_array_size(moved) > 0) {
        json_t *w = pl_jget(sel, "whereClause");
        if (w)
            json_array_insert(moved, 0, w);
        json_t *nw = json_array_size(moved) == 1 ? json_incref(json_array_get(moved, 0))
                   : json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", moved,
                               "location", -1);
        if (!nw || json_object_set_new(sel, "whereClause", nw) != 0)
            st = pl_nomem(p);
    }
    json_decref(moved);
    return st;
}
