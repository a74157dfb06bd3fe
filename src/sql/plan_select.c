/*
 * sql/plan_select.c - one SELECT block after FROM and WHERE: result column names,
 * GROUP BY / aggregates / HAVING, window functions, the select list,
 * DISTINCT, ORDER BY (sort or top-k), LIMIT/OFFSET; set operations and
 * VALUES; ORDER BY <distance> LIMIT k as a VectorSearch.
 * See plan_int.h for how the planner files divide the work.
 */
#include "sql/plan_int.h"

#include <errno.h>

/* ------------------------------------------------------------------ */
/* result column names (PostgreSQL's FigureColname)                    */

static const char *figure_name(const json_t *j, int depth)
{
    const char *k;
    json_t *b;
    if (depth > 50 || !sq_node(j, &k, &b))
        return NULL;
    if (pl_jstrv(b, "hs_name"))
        return pl_jstrv(b, "hs_name");
    if (!strcmp(k, "ColumnRef")) {
        json_t *f = pl_jget(b, "fields");
        return sq_str(json_array_get(f, json_array_size(f) - 1));
    }
    if (!strcmp(k, "FuncCall"))
        return pl_func_name(b);
    if (!strcmp(k, "TypeCast")) {
        if (pl_jget(b, "hs_folded"))
            return NULL;   /* a folded date +- interval: PostgreSQL's ?column? */
        const char *n = figure_name(pl_jget(b, "arg"), depth + 1);
        if (n)
            return n;
        json_t *names = pl_jget(pl_jget(b, "typeName"), "names");
        return sq_str(json_array_get(names, json_array_size(names) - 1));
    }
    if (!strcmp(k, "A_Indirection")) {
        /* (s).f is named f, a[i] after a (PostgreSQL's FigureColname) */
        json_t *ind = pl_jget(b, "indirection");
        for (size_t i = json_array_size(ind); i-- > 0;) {
            const char *f = sq_str(json_array_get(ind, i));
            if (f)
                return f;
        }
        return figure_name(pl_jget(b, "arg"), depth + 1);
    }
    if (!strcmp(k, "CaseExpr"))
        return "case";
    if (!strcmp(k, "CoalesceExpr"))
        return "coalesce";
    if (!strcmp(k, "MinMaxExpr")) {
        const char *op = pl_jstrv(b, "op");
        return op && !strcmp(op, "IS_GREATEST") ? "greatest" : "least";
    }
    if (!strcmp(k, "A_Expr")) {
        const char *kind = pl_jstrv(b, "kind");
        if (kind && !strcmp(kind, "AEXPR_NULLIF"))
            return "nullif";
        return NULL;
    }
    if (!strcmp(k, "SubLink")) {
        const char *t = pl_jstrv(b, "subLinkType");
        if (t && !strcmp(t, "EXISTS_SUBLINK"))
            return "exists";
        if (t && !strcmp(t, "EXPR_SUBLINK")) {
            json_t *sub = pl_jget(pl_jget(b, "subselect"), "SelectStmt");
            json_t *rt = pl_jget(json_array_get(pl_jget(sub, "targetList"), 0), "ResTarget");
            const char *nm = pl_jstrv(rt, "name");
            return nm ? nm : figure_name(pl_jget(rt, "val"), depth + 1);
        }
        return NULL;
    }
    if (!strcmp(k, "GroupingFunc"))
        return "grouping";
    return NULL;
}

static const char *target_name(const json_t *rt)
{
    const char *nm = pl_jstrv(rt, "name");
    if (nm)
        return nm;
    nm = figure_name(pl_jget(rt, "val"), 0);
    return nm ? nm : "?column?";
}

/* ------------------------------------------------------------------ */
/* constants                                                           */

/* An integer constant (LIMIT, OFFSET, positions): *null for NULL/ALL. */
/* LIMIT / OFFSET as an expression: evaluated
 * once, as `SELECT (e)::bigint` (PostgreSQL runs an uncorrelated
 * subquery there once too); a column of the query is 42P10. */
static pl_walk_res visit_var(const json_t *j, void *ctx)
{
    (void)ctx;
    if (json_object_get(j, "SubLink"))
        return PL_SKIP;
    return json_object_get(j, "ColumnRef") ? PL_STOP : PL_DESCEND;
}

static hs_status int_expr(planner *p, const json_t *j, const char *what, int64_t *out, bool *null)
{
    int loc = pl_node_loc(j);
    if (strcmp(what, "LIMIT") && strcmp(what, "OFFSET"))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "%s must be an integer constant", what);
    if (pl_walk(j, visit_var, NULL, 0))
        return pl_fail(p, HS_INVALID, "42P10", loc, "argument of %s must not contain variables", what);
    json_t *sel = json_pack("{s:[{s:{s:{s:{s:O,s:{s:[{s:{s:s}},{s:{s:s}}],s:i,s:i},s:i}},s:i}}],s:s,s:s}",
                            "targetList", "ResTarget", "val", "TypeCast", "arg", j, "typeName",
                            "names", "String", "sval", "pg_catalog", "String", "sval", "int8", "typemod", -1,
                            "location", -1, "location", -1, "location", -1,
                            "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE");
    if (!sel)
        return pl_nomem(p);
    rel r = {0};
    const void *saved_row = p->outer_row;
    p->outer_row = NULL;
    hs_status st = pl_plan_select(p, sel, &r);
    p->outer_row = saved_row;
    json_decref(sel);
    hs_batch *b = NULL;
    if (st == HS_OK)
        st = xo_next(r.op, &b, p->err);
    if (st == HS_OK && (!b || b->n_rows != 1 || b->n_cols < 1 || b->cols[0]->type != HS_TYPE_INT64))
        st = pl_fail(p, HS_INTERNAL, "XX000", loc, "%s: the expression gave no value", what);
    if (st == HS_OK) {
        *null = !hs_col_is_valid(b->cols[0], 0);
        *out = *null ? 0 : HS_COL_VALUES(b->cols[0], int64_t)[0];
    }
    hs_batch_free(b);
    pl_rel_clear(&r);
    return st;
}

static hs_status int_const(planner *p, const json_t *j, const char *what, int64_t *out, bool *null)
{
    json_t *b;
    *null = false;
    int loc = pl_node_loc(j);
    if (!pl_is_kind(j, "A_Const", &b))
        return int_expr(p, j, what, out, null);
    if (json_is_true(pl_jget(b, "isnull"))) {
        *null = true;
        return HS_OK;
    }
    json_t *iv = pl_jget(b, "ival");
    if (!iv)
        return pl_fail(p, HS_INVALID, "22023", loc, "%s must be an integer", what);
    json_t *v = pl_jget(iv, "ival");
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return HS_OK;
    }
    /* libpg_query prints 0 and negatives without a value: read the text */
    const char *t = p->text + (loc >= 0 ? loc : 0);
    while (*t == '(' || isspace((unsigned char)*t))
        t++;
    *out = strtoll(t, NULL, 10);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* SELECT blocks                                                       */


/* The expression a GROUP BY item stands for (positions, output names). */
static hs_status group_node(planner *p, const json_t *g, const json_t *tl, const rel *cur,
                            json_t **out)
{
    json_t *b;
    *out = (json_t *)g;
    if (pl_is_kind(g, "A_Const", &b) && pl_jget(b, "ival")) {
        int64_t k;
        bool null;
        HS_TRY(int_const(p, g, "GROUP BY position", &k, &null));
        if (k < 1 || k > (int64_t)json_array_size(tl))
            return pl_fail(p, HS_INVALID, "42P10", pl_node_loc(g), "GROUP BY position %lld is not in select list",
                        (long long)k);
        *out = pl_jget(pl_jget(json_array_get(tl, (size_t)(k - 1)), "ResTarget"), "val");
        return HS_OK;
    }
    if (pl_is_kind(g, "ColumnRef", &b)) {
        const char *names[8];
        int n = pl_colref_names(b, names, 8);
        layer l = {cur->cols, cur->n, 0};
        if (n == 1 && names[0] && pl_layer_find(&l, names, 1) == -1) {
            for (size_t i = 0; i < json_array_size(tl); i++) {
                json_t *rt = pl_jget(json_array_get(tl, i), "ResTarget");
                if (pl_name_eq(pl_jstrv(rt, "name"), names[0])) {
                    *out = pl_jget(rt, "val");
                    return HS_OK;
                }
            }
        }
    }
    if (pl_is_kind(g, "GroupingSet", NULL))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(g), "GROUPING SETS, ROLLUP and CUBE are not supported");
    return HS_OK;
}

static hs_status sort_dir(const json_t *sb, bool *desc, bool *nf);

/* pgvector 0.8.1 defines only avg and sum (of vector and halfvec) among the
 * aggregates over its types, besides the polymorphic count and array_agg;
 * anything else is PostgreSQL's 42883 "function max(vector) does not
 * exist", reported here at bind time.  at: the argument's type (a field
 * tagged EX_PV_META, or a list<float32|float16> column, which is a vector
 * or halfvec). */
/* The aggregates that take an interval (exec/agg.c); any other is
 * PostgreSQL's 42883. */
static hs_status interval_agg_check(planner *p, const char *fname, const hs_field *at, int loc)
{
    static const char *const ok[] = {"count", "min", "max", "sum", "avg", "array_agg", NULL};
    if (!at || at->type != HS_TYPE_INTERVAL)
        return HS_OK;
    for (int i = 0; ok[i]; i++)
        if (!strcmp(fname, ok[i]))
            return HS_OK;
    return pl_fail(p, HS_NOT_FOUND, "42883", loc, "function %s(interval) does not exist", fname);
}

static hs_status pv_agg_check(planner *p, const char *fname, const hs_field *at, int loc)
{
    if (fname)
        HS_TRY(interval_agg_check(p, fname, at, loc));
    const char *pv = at ? hs_field_get_meta(at, EX_PV_META) : NULL;
    if (!pv && at && (at->type == HS_TYPE_LIST || at->type == HS_TYPE_FIXED_LIST) &&
        at->n_children == 1)
        pv = at->children[0].type == HS_TYPE_FLOAT32 ? "vector"
             : at->children[0].type == HS_TYPE_FLOAT16 ? "halfvec" : NULL;
    if (!pv || !fname || !strcmp(fname, "count") || !strcmp(fname, "array_agg"))
        return HS_OK;
    bool dense = !strcmp(pv, "vector") || !strcmp(pv, "halfvec");
    if (dense && (!strcmp(fname, "sum") || !strcmp(fname, "avg")))
        return HS_OK;
    return pl_fail(p, HS_NOT_FOUND, "42883", loc, "function %s(%s) does not exist", fname, pv);
}

/* Projects cur into [group exprs, aggregate args] and aggregates it. */
hs_status  pl_aggregate(planner *p, rel *cur, json_t *groups, json_t *aggs, const nmap *pre_map,
                        nmap *m, int **key_of_col)
{
    int ng = (int)json_array_size(groups), na = (int)json_array_size(aggs);
    int n_ord_max = 0;
    for (int j = 0; j < na; j++)
        n_ord_max += (int)json_array_size(pl_jget(pl_jget(json_array_get(aggs, (size_t)j), "FuncCall"), "agg_order"));
    int cap = ng + 2 * na + n_ord_max + 1;
    ex_expr **ex = hs_calloc((size_t)cap, sizeof *ex);
    const char **names = hs_calloc((size_t)cap, sizeof *names);
    xo_agg *ag = hs_calloc((size_t)(2 * na) + 1, sizeof *ag);
    int *avg_cnt = hs_calloc((size_t)na + 1, sizeof *avg_cnt); /* avg j: its count aggregate, or 0 */
    char (*avg_names)[2][32] = hs_calloc((size_t)na + 1, sizeof *avg_names);
    int n_extra = 0;
    /* aggregate arguments bound so far (shared by equal ones) */
    const json_t **arg_json = hs_calloc((size_t)na + 1, sizeof *arg_json);
    bool *arg_nested = hs_calloc((size_t)na + 1, sizeof *arg_nested);
    int *arg_col = hs_calloc((size_t)na + 1, sizeof *arg_col);
    int n_args = 0;
    *key_of_col = hs_calloc((size_t)cur->n + 1, sizeof **key_of_col);
    hs_status st = ex && names && ag && avg_cnt && avg_names && *key_of_col && arg_json &&
                           arg_nested && arg_col ? HS_OK : pl_nomem(p);
    for (int i = 0; *key_of_col && i < cur->n; i++)
        (*key_of_col)[i] = -1;
    scope sc;
    pl_scope_rel(&sc, p, cur);
    sc.no_aggs = "GROUP BY";
    if (pre_map) {
        /* subqueries of aggregate arguments, joined into cur before */
        sc.map_nodes = pre_map->nodes;
        sc.map_cols = pre_map->cols;
        sc.n_map = pre_map->n;
    }
    int ne = 0;
    for (int i = 0; i < ng && st == HS_OK; i++) {
        json_t *g = json_array_get(groups, (size_t)i), *b;
        st = pl_bind_in(&sc, g, false, &ex[ne]);
        names[ne++] = figure_name(g, 0) ? figure_name(g, 0) : "?column?";
        if (st == HS_OK && pl_is_kind(g, "ColumnRef", &b)) {
            const char *nm[8];
            int n = pl_colref_names(b, nm, 8);
            int c = n > 0 && nm[n - 1] ? pl_layer_find(&sc.layers[0], nm, n) : -1;
            if (c >= 0 && (*key_of_col)[c] < 0)
                (*key_of_col)[c] = i;
        }
        if (st == HS_OK)
            st = pl_nmap_add(p, m, g, i);
    }
    sc.no_aggs = "aggregate function calls";   /* "cannot be nested" */
    for (int j = 0; j < na && st == HS_OK; j++) {
        json_t *a = json_array_get(aggs, (size_t)j), *fc = pl_jget(a, "FuncCall");
        const char *fname = pl_func_name(fc);
        xo_agg_fn fn = XO_AGG_COUNT;
        pl_agg_name(fname, &fn);
        json_t *args = pl_jget(fc, "args");
        int loc = sq_loc(fc);
        ag[j].sep_col = -1;
        ag[j].name = fname;
        ag[j].distinct = json_is_true(pl_jget(fc, "agg_distinct"));
        json_t *filt = pl_jget(fc, "agg_filter");
        json_t *one = NULL, *wrapped = NULL;
        if (json_is_true(pl_jget(fc, "agg_within_group")))
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "WITHIN GROUP is not supported");
        else if (json_is_true(pl_jget(fc, "agg_star")) && fn != XO_AGG_COUNT)
            st = pl_fail(p, HS_INVALID, "42809", loc, "%s(*) must be used to call a parameterless "
                      "aggregate function", fname);
        else if (json_is_true(pl_jget(fc, "agg_star")) && !filt)
            ag[j].fn = XO_AGG_COUNT_STAR;
        else {
            /* agg(x) FILTER (WHERE c) = agg(CASE WHEN c THEN x END);
             * count(*) FILTER (WHERE c) = count(CASE WHEN c THEN 1 END) */
            if (json_is_true(pl_jget(fc, "agg_star"))) {
                one = json_pack("[{s:{s:{s:i},s:i}}]", "A_Const", "ival", "ival", 1, "location", -1);
                args = one;
            }
            if (filt && args && json_array_size(args) >= 1) {
                wrapped = json_copy(args);
                json_t *cw = json_pack("{s:{s:[{s:{s:O,s:O,s:i}}],s:i}}", "CaseExpr", "args",
                                       "CaseWhen", "expr", filt, "result", json_array_get(args, 0),
                                       "location", -1, "location", -1);
                if (!wrapped || !cw || json_array_set_new(wrapped, 0, cw) != 0) {
                    json_decref(wrapped);
                    wrapped = NULL;
                    st = pl_nomem(p);
                }
                args = wrapped;
            }
            size_t want = fn == XO_AGG_STRING_AGG ? 2 : 1;
            if (json_array_size(args) != want)
                st = pl_fail(p, HS_NOT_FOUND, "42883", loc, "function %s with %zu arguments does not exist",
                          fname, json_array_size(args));
            ag[j].fn = fn;
            if (st == HS_OK) {
                /* count and array_agg take nested columns as they are */
                bool nested = fn == XO_AGG_COUNT || fn == XO_AGG_ARRAY_AGG;
                json_t *a0 = json_array_get(args, 0);
                /* an argument equal to an earlier one's (sum(x), avg(x)) reads
                 * its column: evaluated once, not copied (unless volatile) */
                int same = -1;
                bool shareable = !one && !wrapped && !pl_volatile(a0);
                for (int k = 0; shareable && k < n_args && same < 0; k++)
                    if (arg_nested[k] == nested && pl_jeq(arg_json[k], a0))
                        same = arg_col[k];
                if (same >= 0) {
                    ag[j].arg = same;
                } else {
                    sc.nested_ok = nested;
                    st = pl_bind_in(&sc, a0, false, &ex[ne]);
                    sc.nested_ok = false;
                    names[ne] = fname;
                    if (shareable) {
                        arg_json[n_args] = a0;
                        arg_nested[n_args] = nested;
                        arg_col[n_args++] = ne;
                    }
                    ag[j].arg = ne++;
                }
                if (st == HS_OK)
                    st = pv_agg_check(p, fname, ex_type(ex[ag[j].arg]), loc);
            }
            if (st == HS_OK && fn == XO_AGG_STRING_AGG) {
                json_t *sepn = json_array_get(args, 1), *cb;
                const char *sv = NULL;
                if (pl_is_kind(sepn, "A_Const", &cb) && pl_jget(cb, "sval"))
                    sv = pl_jstrv(pl_jget(cb, "sval"), "sval");
                if (pl_is_kind(sepn, "A_Const", &cb) && json_is_true(pl_jget(cb, "isnull")))
                    sv = NULL;
                else if (!sv) {
                    st = pl_bind_in(&sc, sepn, false, &ex[ne]);
                    names[ne] = "sep";
                    ag[j].sep_col = ne++;
                }
                ag[j].sep = sv;
                /* string_agg(text, text) / (bytea, bytea) only, as in PostgreSQL */
                const hs_field *at = st == HS_OK ? ex_type(ex[ag[j].arg]) : NULL;
                const hs_field *sp = st == HS_OK && ag[j].sep_col >= 0 ? ex_type(ex[ag[j].sep_col]) : NULL;
                if (at && ((at->type != HS_TYPE_STRING && at->type != HS_TYPE_BINARY) ||
                           (sp && sp->type != at->type)))
                    st = pl_fail(p, HS_NOT_FOUND, "42883", loc, "function string_agg(%s, %s) does not exist",
                              hs_type_name(at->type), sp ? hs_type_name(sp->type) : "text");
            }
        }
        json_t *ao = pl_jget(fc, "agg_order");
        if (st == HS_OK && ao) {
            /* string_agg/array_agg(... ORDER BY keys): the aggregate orders
             * its group's values by these columns */
            int no = (int)json_array_size(ao);
            if (fn != XO_AGG_STRING_AGG && fn != XO_AGG_ARRAY_AGG)
                no = 0;   /* the order does not change other aggregates */
            if (no > 16)
                st = pl_fail(p, HS_UNSUPPORTED, "54000", loc, "more than 16 ORDER BY keys in an aggregate");
            xo_sort_key *ok = no ? hs_calloc((size_t)no, sizeof *ok) : NULL;
            if (no && !ok && st == HS_OK)
                st = pl_nomem(p);
            for (int k = 0; k < no && st == HS_OK; k++) {
                json_t *sb = pl_jget(json_array_get(ao, (size_t)k), "SortBy");
                bool desc, nf;
                if (sort_dir(sb, &desc, &nf) != HS_OK) {
                    st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
                    break;
                }
                st = pl_bind_in(&sc, pl_jget(sb, "node"), false, &ex[ne]);
                names[ne] = "ord";
                ok[k] = (xo_sort_key){ne++, desc, nf};
            }
            ag[j].n_order = no;
            ag[j].order = ok;
        }
        if (st == HS_OK && ag[j].fn == XO_AGG_AVG) {
            /* PostgreSQL: avg of integers and numerics is numeric, the sum
             * divided by the count as numeric_div does: sum and count here,
             * the division in a projection after the aggregate */
            const hs_field *at = ex_type(ex[ag[j].arg]);
            bool exact = at->type == HS_TYPE_INT8 || at->type == HS_TYPE_INT16 ||
                         at->type == HS_TYPE_INT32 || at->type == HS_TYPE_INT64 ||
                         at->type == HS_TYPE_UINT8 || at->type == HS_TYPE_UINT16 ||
                         at->type == HS_TYPE_UINT32 || at->type == HS_TYPE_UINT64 ||
                         at->type == HS_TYPE_DECIMAL128 ||
                         at->type == HS_TYPE_INTERVAL;   /* interval_avg: sum / (float8) count */
            if (exact) {
                snprintf(avg_names[j][0], 32, "hs_avg_sum_%d", j);
                snprintf(avg_names[j][1], 32, "hs_avg_cnt_%d", j);
                ag[j].fn = XO_AGG_SUM;
                ag[j].name = avg_names[j][0];
                xo_agg *c = &ag[na + n_extra];
                *c = ag[j];
                c->fn = XO_AGG_COUNT;
                c->name = avg_names[j][1];
                c->n_order = 0;
                c->order = NULL;
                avg_cnt[j] = na + n_extra + 1;
                n_extra++;
            }
        }
        if (one || wrapped) {
            /* the bound expressions keep no reference into the JSON */
            json_decref(one);
            json_decref(wrapped);
        }
        if (st == HS_OK)
            st = pl_nmap_add(p, m, a, ng + j);
    }
    if (st == HS_OK && ne == 0) {
        /* count(*) only: aggregate a projection of one constant */
        json_t *one = json_pack("{s:{s:{s:i},s:i}}", "A_Const", "ival", "ival", 1, "location", -1);
        st = one ? pl_bind_in(&sc, one, false, &ex[ne]) : pl_nomem(p);
        names[ne++] = "one";
        json_decref(one);
    }
    xo_op *op = NULL;
    if (st == HS_OK) {
        st = xo_project(cur->op, ne, ex, names, &op, p->err);
        cur->op = NULL;
        ne = 0;
    }

    for (int i = 0; i < ne; i++)
        ex_free(ex[i]);
    if (st == HS_OK) {
        xo_op *agg;
        st = xo_hashagg(op, ng, na + n_extra, ag, &agg, p->err);
        op = st == HS_OK ? agg : NULL;
    }
    if (st == HS_OK && n_extra > 0) {
        /* avg = sum / count as numerics; the count columns are dropped */
        int nk = ng + na;
        int *src = hs_calloc((size_t)nk, sizeof *src);
        ex_expr **pe = hs_calloc((size_t)nk, sizeof *pe);
        const char **pn = hs_calloc((size_t)nk, sizeof *pn);
        st = src && pe && pn ? HS_OK : pl_nomem(p);
        for (int i = 0; i < nk && st == HS_OK; i++) {
            src[i] = i;
            pn[i] = op->schema.children[i].name;
            int j = i - ng;
            if (j < 0 || !avg_cnt[j])
                continue;
            const hs_field *sf = &op->schema.children[i];
            char txt[200];
            if (sf->type == HS_TYPE_INTERVAL)
                snprintf(txt, sizeof txt, "\"%s\" / CAST(\"%s\" AS double precision)", avg_names[j][0],
                         avg_names[j][1]);
            else
                snprintf(txt, sizeof txt, "%s\"%s\"%s / CAST(\"%s\" AS numeric(19,0))",
                         sf->type == HS_TYPE_DECIMAL128 ? "" : "CAST(", avg_names[j][0],
                         sf->type == HS_TYPE_DECIMAL128 ? "" : " AS numeric(38,0))", avg_names[j][1]);
            st = ex_parse_scalar(txt, &op->schema, &pe[i], p->err);
            src[i] = -1;
            pn[i] = "avg";
        }
        if (st == HS_OK) {
            xo_op *pr = NULL;
            st = pl_project_mixed(p, op, nk, src, pe, pn, &pr);
            op = st == HS_OK ? pr : NULL;
        } else {
            for (int i = 0; pe && i < nk; i++)
                ex_free(pe[i]);
        }
        hs_free(src);
        hs_free(pe);
        hs_free(pn);
    }
    hs_free(avg_cnt);
    hs_free(avg_names);
    hs_free(arg_json);
    hs_free(arg_nested);
    hs_free(arg_col);
    hs_free(ex);
    hs_free(names);
    for (int j = 0; ag && j < na; j++)
        hs_free((void *)ag[j].order);
    hs_free(ag);
    if (st != HS_OK) {
        xo_free(op);
        return st;
    }
    pl_qcols_free(cur->cols, cur->n);
    cur->cols = NULL;
    cur->n = 0;
    cur->op = op;
    HS_TRY(pl_rel_name(cur, NULL, p->err));
    for (int i = 0; i < cur->n; i++)
        cur->cols[i].hidden = true;
    return HS_OK;
}


static hs_status sort_dir(const json_t *sb, bool *desc, bool *nf)
{
    const char *d = pl_jstrv(sb, "sortby_dir"), *nl = pl_jstrv(sb, "sortby_nulls");
    *desc = d && !strcmp(d, "SORTBY_DESC");
    *nf = *desc;
    if (nl && !strcmp(nl, "SORTBY_NULLS_FIRST"))
        *nf = true;
    else if (nl && !strcmp(nl, "SORTBY_NULLS_LAST"))
        *nf = false;
    return d && !strcmp(d, "SORTBY_USING") ? HS_UNSUPPORTED : HS_OK;
}

/* ORDER BY / DISTINCT / LIMIT over r (whose first n_out columns are the
 * output; the rest hidden sort keys). */
static hs_status finish(planner *p, rel *r, int n_out, const sortk *keys, int nk, bool distinct,
                        const json_t *sel)
{
    hs_status st = HS_OK;
    xo_op *op;
    if (distinct) {
        HS_TRY(xo_distinct(r->op, &op, p->err));
        r->op = op;
    }
    int64_t limit = -1, offset = 0;
    bool null;
    json_t *lc = pl_jget(sel, "limitCount"), *lo = pl_jget(sel, "limitOffset");
    const char *lopt = pl_jstrv(sel, "limitOption");
    if (lopt && !strcmp(lopt, "LIMIT_OPTION_WITH_TIES"))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(lc), "FETCH ... WITH TIES is not supported");
    if (lc) {
        HS_TRY(int_const(p, lc, "LIMIT", &limit, &null));
        if (null)
            limit = -1;
        else if (limit < 0)
            return pl_fail(p, HS_INVALID, "2201W", pl_node_loc(lc), "LIMIT must not be negative");
    }
    if (lo) {
        HS_TRY(int_const(p, lo, "OFFSET", &offset, &null));
        if (null)
            offset = 0;
        else if (offset < 0)
            return pl_fail(p, HS_INVALID, "2201X", pl_node_loc(lo), "OFFSET must not be negative");
    }
    if (nk > 0) {
        xo_sort_key *k = hs_calloc((size_t)nk, sizeof *k);
        if (!k)
            return pl_nomem(p);
        for (int i = 0; i < nk; i++)
            k[i] = (xo_sort_key){keys[i].col, keys[i].desc, keys[i].nulls_first};
        if (limit >= 0 && limit <= INT64_MAX - offset && limit + offset < (1 << 20))
            st = xo_topk(r->op, nk, k, limit + offset, &op, p->err);
        else
            st = xo_sort(r->op, nk, k, &op, p->err);
        hs_free(k);
        r->op = st == HS_OK ? op : NULL;
        HS_TRY(st);
    }
    if (limit >= 0 || offset > 0) {
        HS_TRY(xo_limit(r->op, limit, offset, &op, p->err));
        r->op = op;
    }
    if (n_out < r->op->schema.n_children) {
        ex_expr **ex = hs_calloc((size_t)n_out + 1, sizeof *ex);
        const char **names = hs_calloc((size_t)n_out + 1, sizeof *names);
        int *src = hs_calloc((size_t)n_out + 1, sizeof *src);
        st = ex && names && src ? HS_OK : pl_nomem(p);
        for (int i = 0; i < n_out && st == HS_OK; i++) {
            names[i] = r->op->schema.children[i].name;
            src[i] = i;
        }
        if (st == HS_OK) {
            st = pl_project_mixed(p, r->op, n_out, src, ex, names, &op);
            r->op = st == HS_OK ? op : NULL;
        }
        hs_free(ex);
        hs_free(names);
        hs_free(src);
        if (st == HS_OK && r->n > n_out) {
            for (int i = n_out; i < r->n; i++) {
                hs_free(r->cols[i].qual);
                hs_free(r->cols[i].name);
            }
            r->n = n_out;
        }
    }
    return st;
}

static hs_status plan_setop(planner *p, const json_t *sel, rel *out);
static hs_status plan_values(planner *p, const json_t *sel, rel *out);

static hs_status check_clauses(planner *p, const json_t *sel)
{
    static const struct { const char *key, *what; } t[] = {
        {"intoClause", "SELECT INTO"}, {"lockingClause", "FOR UPDATE/SHARE"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_t *v = pl_jget(sel, t[i].key);
        if (v && !(json_is_array(v) && json_array_size(v) == 0))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(v, 0), "%s is not supported", t[i].what);
    }
    return HS_OK;
}

/* Registers the WITH clause's CTEs (prepended to p->ctes). */
static hs_status push_ctes(planner *p, const json_t *sel, cte **saved, cte **mine, int *n_mine)
{
    *saved = p->ctes;
    *mine = NULL;
    *n_mine = 0;
    json_t *w = pl_jget(sel, "withClause"), *wb;
    if (!w)
        return HS_OK;
    wb = pl_jget(w, "WithClause") ? pl_jget(w, "WithClause") : w;
    bool recursive = json_is_true(pl_jget(wb, "recursive"));
    json_t *list = pl_jget(wb, "ctes");
    size_t n = json_array_size(list);
    *mine = hs_calloc(n + 1, sizeof **mine);
    if (!*mine)
        return pl_nomem(p);
    for (size_t i = 0; i < n; i++) {
        json_t *c = pl_jget(json_array_get(list, i), "CommonTableExpr"), *q;
        if (!c || !pl_is_kind(pl_jget(c, "ctequery"), "SelectStmt", &q))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(c, 0),
                        "only SELECT is supported in WITH");
        cte *e = &(*mine)[i];
        e->name = pl_jstrv(c, "ctename");
        e->query = q;
        e->colnames = pl_jget(c, "aliascolnames");
        /* WITH RECURSIVE: a UNION [ALL] runs as a recursive CTE (plan_from.c);
         * other CTEs of the list are plain ones */
        const char *op = pl_jstrv(q, "op");
        e->recursive = recursive && op && !strcmp(op, "SETOP_UNION");
        e->next = p->ctes;
        p->ctes = e;
        (*n_mine)++;
    }
    return HS_OK;
}

/* ---- GROUPING SETS / ROLLUP / CUBE ----
 * The query becomes a UNION ALL of one grouped query per set, in which the
 * group expressions outside the set read as NULL (not inside aggregate
 * arguments); ORDER BY and LIMIT apply to the union.  GROUPING() is not
 * supported. */

static bool in_list(const json_t *arr, const json_t *x)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (pl_jeq(json_array_get(arr, i), x))
            return true;
    return false;
}

/* Replaces (in place) nodes of j equal to one of absent by NULL. */
static void null_absent(json_t *j, const json_t *absent, int depth)
{
    if (depth > 400 || !j)
        return;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            if (pl_is_agg_call(v) || pl_is_kind(v, "SubLink", NULL))
                continue;
            if (json_is_object(v) && json_object_size(v) == 1 && in_list(absent, v))
                json_object_set_new(j, k, pl_mk_null());
            else
                null_absent(v, absent, depth + 1);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            if (pl_is_agg_call(v) || pl_is_kind(v, "SubLink", NULL))
                continue;
            if (json_is_object(v) && json_object_size(v) == 1 && in_list(absent, v))
                json_array_set_new(j, i, pl_mk_null());
            else
                null_absent(v, absent, depth + 1);
        }
    }
}

/* The grouping sets of one GROUP BY item: *out a new array of sets, each
 * an array of expressions (a plain expression is one set of itself;
 * ROLLUP and CUBE read a parenthesised list as one unit). */
static hs_status item_sets(planner *p, const json_t *g, int depth, json_t **out)
{
    json_t *b, *r = json_array();
    *out = NULL;
    if (!r)
        return pl_nomem(p);
    if (depth > 16) {
        json_decref(r);
        return pl_fail(p, HS_INVALID, "54001", sq_loc(g), "grouping sets nested too deeply");
    }
    if (pl_is_kind(g, "RowExpr", &b)) {
        json_array_append_new(r, json_copy(pl_jget(b, "args")));
        *out = r;
        return HS_OK;
    }
    if (!pl_is_kind(g, "GroupingSet", &b)) {
        json_array_append_new(r, json_pack("[O]", g));
        *out = r;
        return HS_OK;
    }
    const char *kind = pl_jstrv(b, "kind");
    json_t *content = pl_jget(b, "content");
    size_t n = json_array_size(content);
    /* the units of ROLLUP / CUBE */
    json_t *units = json_array();
    hs_status st = units ? HS_OK : pl_nomem(p);
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        json_t *e = json_array_get(content, i), *rb;
        json_array_append_new(units, pl_is_kind(e, "RowExpr", &rb) ? json_copy(pl_jget(rb, "args"))
                                                                  : json_pack("[O]", e));
    }
    if (st != HS_OK) {
    } else if (kind && !strcmp(kind, "GROUPING_SET_EMPTY")) {
        json_array_append_new(r, json_array());
    } else if (kind && !strcmp(kind, "GROUPING_SET_SIMPLE")) {
        json_t *set = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_extend(set, json_array_get(units, i));
        json_array_append_new(r, set);
    } else if (kind && !strcmp(kind, "GROUPING_SET_ROLLUP")) {
        for (size_t k = n + 1; k-- > 0;) {
            json_t *set = json_array();
            for (size_t e = 0; e < k; e++)
                json_array_extend(set, json_array_get(units, e));
            json_array_append_new(r, set);
        }
    } else if (kind && !strcmp(kind, "GROUPING_SET_CUBE")) {
        if (n > 12)
            st = pl_fail(p, HS_INVALID, "54001", sq_loc(b), "CUBE is limited to 12 elements");
        for (size_t mask = (1u << n); st == HS_OK && mask-- > 0;) {
            json_t *set = json_array();
            for (size_t e = 0; e < n; e++)
                if (mask & (1u << e))
                    json_array_extend(set, json_array_get(units, e));
            json_array_append_new(r, set);
        }
    } else if (kind && !strcmp(kind, "GROUPING_SET_SETS")) {
        for (size_t i = 0; st == HS_OK && i < n; i++) {
            json_t *sub;
            st = item_sets(p, json_array_get(content, i), depth + 1, &sub);
            if (st == HS_OK)
                json_array_extend(r, sub);
            json_decref(sub);
        }
    } else {
        st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(b), "this grouping set is not supported");
    }
    json_decref(units);
    if (st != HS_OK) {
        json_decref(r);
        return st;
    }
    *out = r;
    return HS_OK;
}

/* GROUPING(a, ...) in j (not inside subqueries) becomes its value for the
 * grouping set `set` (bit k-1-i set where argument i is not in it); every
 * argument must be one of the GROUP BY expressions `all` (42803). */
static hs_status grouping_subst(planner *p, json_t *j, const json_t *set, const json_t *all,
                                int depth)
{
    if (depth > 400 || !j)
        return HS_OK;
    if (json_is_object(j)) {
        if (json_object_get(j, "SubLink"))
            return HS_OK;
        json_t *gf = json_object_get(j, "GroupingFunc");
        if (gf && json_object_size(j) == 1) {
            json_t *args = pl_jget(gf, "args");
            long v = 0;
            for (size_t i = 0; i < json_array_size(args); i++) {
                const json_t *a = json_array_get(args, i);
                if (!all || !in_list(all, a))
                    return pl_fail(p, HS_INVALID, "42803", sq_loc(gf),
                                   "arguments to GROUPING must be grouping expressions of the "
                                   "associated query level");
                v = v * 2 + (set && in_list(set, a) ? 0 : 1);
            }
            json_t *c = pl_mk_int((int)v);
            if (!c)
                return pl_nomem(p);
            json_object_clear(j);
            json_object_update(j, c);
            json_decref(c);
            return HS_OK;
        }
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
            HS_TRY(grouping_subst(p, v, set, all, depth + 1));
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            HS_TRY(grouping_subst(p, json_array_get(j, i), set, all, depth + 1));
    }
    return HS_OK;
}

static bool has_grouping_func(const json_t *j, int depth)
{
    if (depth > 400 || !j)
        return false;
    if (json_is_object(j)) {
        if (json_object_get(j, "SubLink"))
            return false;
        if (json_object_get(j, "GroupingFunc"))
            return true;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            if (has_grouping_func(v, depth + 1))
                return true;
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            if (has_grouping_func(json_array_get(j, i), depth + 1))
                return true;
    }
    return false;
}

static json_t *mk_cref(const char *name)
{
    return json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", name,
                     "location", -1);
}

/* ORDER BY over the union of grouping sets: each item that is not an
 * output column (by position or name) becomes a column __hs_gs_s<k> of
 * every branch; the union is wrapped as SELECT <the outputs> FROM (...)
 * ORDER BY ... so those columns stay out of the result.  *wrap: false when
 * every item names an output. */
static hs_status gs_sort_items(planner *p, const json_t *sel, json_t **extra, json_t **sort,
                               bool *wrap)
{
    json_t *tl = pl_jget(sel, "targetList"), *sc = pl_jget(sel, "sortClause");
    *extra = json_array();
    *sort = json_array();
    *wrap = false;
    if (!*extra || !*sort)
        return pl_nomem(p);
    size_t i;
    json_t *it;
    json_array_foreach(sc, i, it) {
        json_t *sb = json_deep_copy(pl_jget(it, "SortBy")), *node = pl_jget(sb, "node"), *cb;
        if (!sb)
            return pl_nomem(p);
        char ref[32];
        int pos = -1;
        if (pl_is_kind(node, "A_Const", &cb) && pl_jget(cb, "ival")) {
            int64_t k;
            bool null;
            hs_status st = int_const(p, node, "ORDER BY position", &k, &null);
            if (st != HS_OK) {
                json_decref(sb);
                return st;
            }
            if (k < 1 || k > (int64_t)json_array_size(tl)) {
                json_decref(sb);
                return pl_fail(p, HS_INVALID, "42P10", pl_node_loc(node),
                               "ORDER BY position %lld is not in select list", (long long)k);
            }
            pos = (int)k - 1;
        } else if (pl_is_kind(node, "ColumnRef", &cb) && json_array_size(pl_jget(cb, "fields")) == 1) {
            const char *nm = sq_str(json_array_get(pl_jget(cb, "fields"), 0));
            for (size_t t = 0; nm && pos < 0 && t < json_array_size(tl); t++)
                if (!strcmp(target_name(pl_jget(json_array_get(tl, t), "ResTarget")), nm))
                    pos = (int)t;
        }
        if (pos >= 0) {
            snprintf(ref, sizeof ref, "__hs_gs_c%d", pos);
        } else {
            snprintf(ref, sizeof ref, "__hs_gs_s%zu", json_array_size(*extra));
            json_array_append(*extra, node);
            *wrap = true;
        }
        json_object_set_new(sb, "node", mk_cref(ref));
        json_array_append_new(*sort, json_pack("{s:o}", "SortBy", sb));
    }
    return HS_OK;
}

static void collect_windows(const json_t *j, json_t *arr, int depth);

static bool has_window(const json_t *j)
{
    json_t *calls = json_array();
    collect_windows(j, calls, 0);
    bool r = json_array_size(calls) > 0;
    json_decref(calls);
    return r;
}

static bool is_grouping_func(const json_t *j)
{
    return pl_is_kind(j, "GroupingFunc", NULL);
}

/* A copy of j with every subtree equal to a repl[i][0] replaced by a
 * reference to the column named repl[i][1] (subqueries copied as they
 * are). */
static json_t *gw_replace(const json_t *j, const json_t *repl, int depth)
{
    if (depth > 400 || !j)
        return json_deep_copy(j);
    if (json_is_object(j)) {
        if (json_object_get(j, "SubLink"))
            return json_deep_copy(j);
        size_t i;
        json_t *r;
        json_array_foreach(repl, i, r)
            if (pl_jeq(j, json_array_get(r, 0)))
                return mk_cref(json_string_value(json_array_get(r, 1)));
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            json_object_set_new(o, k, gw_replace(v, repl, depth + 1));
        return o;
    }
    if (json_is_array(j)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(j); i++)
            json_array_append_new(a, gw_replace(json_array_get(j, i), repl, depth + 1));
        return a;
    }
    return json_deep_copy(j);
}

/* Window functions over several grouping sets are computed by the query
 * wrapping the union: each set's query yields, as hidden columns, the
 * aggregates, GROUPING() calls and group expressions that the window
 * expressions read (repl: [expression, column name] pairs, aggregates and
 * GROUPING() first so that they are replaced whole), the wrapping query's
 * select list, ORDER BY and WINDOW clause read those columns.  Sort items
 * with windows (extra[k], read through __hs_gs_s<k>) are computed outside
 * too. */
static hs_status gw_plan(planner *p, const json_t *sel, const json_t *all, json_t *extra,
                         json_t *sort, json_t **out)
{
    json_t *tl = pl_jget(sel, "targetList"), *srcs = json_array(), *aggs = json_array(),
           *gfs = json_array(), *repl = json_array();
    *out = NULL;
    if (!srcs || !aggs || !gfs || !repl) {
        json_decref(srcs);
        json_decref(aggs);
        json_decref(gfs);
        json_decref(repl);
        return pl_nomem(p);
    }
    size_t i;
    json_t *it;
    json_array_foreach(tl, i, it)
        if (has_window(pl_jget(pl_jget(it, "ResTarget"), "val")))
            json_array_append(srcs, pl_jget(pl_jget(it, "ResTarget"), "val"));
    json_array_foreach(extra, i, it)
        if (has_window(it))
            json_array_append(srcs, it);
    json_t *wc = pl_jget(sel, "windowClause");
    if (wc)
        json_array_append(srcs, wc);
    json_array_foreach(srcs, i, it) {
        pl_collect_aggs(it, aggs, 0);
        pl_collect_calls(it, gfs, is_grouping_func, 0);
    }
    char nm[32];
    json_array_foreach(aggs, i, it) {
        snprintf(nm, sizeof nm, "__hs_gw_a%zu", i);
        json_array_append_new(repl, json_pack("[O,s]", it, nm));
    }
    json_array_foreach(gfs, i, it) {
        snprintf(nm, sizeof nm, "__hs_gw_f%zu", i);
        json_array_append_new(repl, json_pack("[O,s]", it, nm));
    }
    json_array_foreach(all, i, it) {
        snprintf(nm, sizeof nm, "__hs_gw_k%zu", i);
        json_array_append_new(repl, json_pack("[O,s]", it, nm));
    }
    /* sort items with windows: computed by the wrapping query */
    json_array_foreach(extra, i, it) {
        if (!has_window(it))
            continue;
        char ref[32];
        snprintf(ref, sizeof ref, "__hs_gs_s%zu", i);
        size_t k;
        json_t *sb;
        json_array_foreach(sort, k, sb) {
            json_t *b = pl_jget(sb, "SortBy"), *cr;
            if (pl_is_kind(pl_jget(b, "node"), "ColumnRef", &cr) &&
                !strcmp(sq_str(json_array_get(pl_jget(cr, "fields"), 0)), ref))
                json_object_set_new(b, "node", gw_replace(it, repl, 0));
        }
        json_array_set_new(extra, i, pl_mk_null());
    }
    /* sort items naming an output that holds a window: that expression */
    json_t *sb;
    json_array_foreach(sort, i, sb) {
        json_t *b = pl_jget(sb, "SortBy"), *cr;
        const char *f = pl_is_kind(pl_jget(b, "node"), "ColumnRef", &cr)
                        ? sq_str(json_array_get(pl_jget(cr, "fields"), 0)) : NULL;
        if (!f || strncmp(f, "__hs_gs_c", 9))
            continue;
        const json_t *val = pl_jget(pl_jget(json_array_get(tl, (size_t)atoi(f + 9)), "ResTarget"), "val");
        if (val && has_window(val))
            json_object_set_new(b, "node", gw_replace(val, repl, 0));
    }
    json_t *g = json_pack("{s:o}", "repl", repl);
    if (g && wc)
        json_object_set_new(g, "windowClause", gw_replace(wc, repl, 0));
    json_decref(srcs);
    json_decref(aggs);
    json_decref(gfs);
    *out = g;
    return g ? HS_OK : pl_nomem(p);
}

/* *out: the expanded query (a new SelectStmt body), or NULL when sel has
 * no grouping sets and no GROUPING().  Several grouping set items in one
 * GROUP BY multiply (GROUP BY ROLLUP(a), CUBE(b): every set of the one
 * with every set of the other, plain expressions in all). */
static hs_status expand_grouping_sets(planner *p, const json_t *sel, json_t **out)
{
    *out = NULL;
    json_t *gc = pl_jget(sel, "groupClause");
    size_t i;
    json_t *g;
    bool any = false;
    json_array_foreach(gc, i, g)
        any |= pl_is_kind(g, "GroupingSet", NULL);
    if (!any) {
        if (!has_grouping_func(pl_jget(sel, "targetList"), 0) &&
            !has_grouping_func(pl_jget(sel, "havingClause"), 0) &&
            !has_grouping_func(pl_jget(sel, "sortClause"), 0))
            return HS_OK;
        json_t *b = json_deep_copy(sel);
        if (!b)
            return pl_nomem(p);
        hs_status st = HS_OK;
        static const char *const parts[] = {"targetList", "havingClause", "sortClause"};
        for (size_t k = 0; k < 3 && st == HS_OK; k++)
            st = grouping_subst(p, pl_jget(b, parts[k]), gc, json_array_size(gc) ? gc : NULL, 0);
        if (st != HS_OK) {
            json_decref(b);
            return st;
        }
        *out = b;
        return HS_OK;
    }
    json_t *sets = json_pack("[[]]"), *all = json_array();
    hs_status st = sets && all ? HS_OK : pl_nomem(p);
    json_array_foreach(gc, i, g) {
        json_t *its, *next = json_array();
        if (st != HS_OK || !next || (st = item_sets(p, g, 0, &its)) != HS_OK) {
            json_decref(next);
            st = st != HS_OK ? st : pl_nomem(p);
            break;
        }
        size_t a, c;
        json_t *sa, *sc2;
        json_array_foreach(sets, a, sa)
            json_array_foreach(its, c, sc2) {
                json_t *set = json_copy(sa);
                json_array_extend(set, sc2);
                json_array_append_new(next, set);
            }
        json_decref(its);
        json_decref(sets);
        sets = next;
        if (json_array_size(sets) > 4096) {
            st = pl_fail(p, HS_INVALID, "54001", sq_loc(g), "too many grouping sets present");
            break;
        }
    }
    if (st == HS_OK && json_is_true(pl_jget(sel, "groupDistinct"))) {
        /* GROUP BY DISTINCT: sets equal as sets of expressions count once */
        json_t *uniq = json_array();
        json_t *a;
        json_array_foreach(sets, i, a) {
            bool dup = false;
            for (size_t k = 0; !dup && k < json_array_size(uniq); k++) {
                json_t *b = json_array_get(uniq, k), *e;
                size_t x;
                bool same = true;
                json_array_foreach(a, x, e)
                    same &= in_list(b, e);
                json_array_foreach(b, x, e)
                    same &= in_list(a, e);
                dup = same;
            }
            if (!dup)
                json_array_append(uniq, a);
        }
        json_decref(sets);
        sets = uniq;
    }
    json_t *s2;
    json_array_foreach(sets, i, s2) {
        size_t k;
        json_t *e;
        json_array_foreach(s2, k, e)
            if (!in_list(all, e))
                json_array_append(all, e);
    }
    json_t *extra = NULL, *sort = NULL, *tl = pl_jget(sel, "targetList");
    bool wrap = false;
    if (st == HS_OK && json_array_size(pl_jget(sel, "sortClause")))
        st = gs_sort_items(p, sel, &extra, &sort, &wrap);
    /* DISTINCT over the union, not per set: the wrapping query's */
    json_t *dc = pl_jget(sel, "distinctClause");
    bool distinct = json_array_size(sets) > 1 && json_array_size(dc) > 0;
    if (st == HS_OK && distinct &&
        !(json_array_size(dc) == 1 && json_object_size(json_array_get(dc, 0)) == 0))
        st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(dc, 0),
                     "SELECT DISTINCT ON with several grouping sets is not supported");
    if (st == HS_OK && distinct) {
        wrap = true;
        if (!sort)
            sort = json_array();
        if (!extra)
            extra = json_array();
        if (!sort || !extra)
            st = pl_nomem(p);
    }
    /* window functions read the rows of every set together: they move to
     * the wrapping query (gw_plan) */
    json_t *gw = NULL;
    bool wins = false;
    if (st == HS_OK && json_array_size(sets) > 1) {
        json_t *calls = json_array();
        collect_windows(tl, calls, 0);
        collect_windows(pl_jget(sel, "sortClause"), calls, 0);
        wins = json_array_size(calls) > 0;
        json_decref(calls);
    }
    if (st == HS_OK && wins) {
        wrap = true;
        if (!sort && !(sort = json_array()))
            st = pl_nomem(p);
        if (!extra && !(extra = json_array()))
            st = pl_nomem(p);
        if (st == HS_OK)
            st = gw_plan(p, sel, all, extra, sort, &gw);
    }
    for (size_t t = 0; wrap && st == HS_OK && t < json_array_size(tl); t++) {
        json_t *cr, *f = NULL;
        if (pl_is_kind(pl_jget(pl_jget(json_array_get(tl, t), "ResTarget"), "val"), "ColumnRef", &cr))
            f = pl_jget(cr, "fields");
        if (f && pl_jget(json_array_get(f, json_array_size(f) - 1), "A_Star"))
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", -1,
                         "SELECT * with grouping sets and ORDER BY expressions is not supported");
    }
    json_t *u = NULL;
    json_array_foreach(sets, i, s2) {
        if (st != HS_OK)
            break;
        json_t *b = json_deep_copy(sel);
        json_t *absent = json_array();
        if (!b || !absent) {
            json_decref(b);
            json_decref(absent);
            st = pl_nomem(p);
            break;
        }
        json_t *grp = json_copy(s2);
        json_object_del(b, "sortClause");
        json_object_del(b, "limitCount");
        json_object_del(b, "limitOffset");
        json_object_del(b, "limitOption");
        json_object_del(b, "withClause");
        if (distinct)
            json_object_del(b, "distinctClause");
        if (json_array_size(grp))
            json_object_set_new(b, "groupClause", grp);
        else {
            json_decref(grp);
            json_object_del(b, "groupClause");
            json_object_set_new(b, "hs_grouped", json_true());   /* one group: () */
        }
        if (wrap) {
            /* the outputs as __hs_gs_c<i>, then the sort expressions */
            json_t *btl = pl_jget(b, "targetList"), *it2;
            size_t t;
            char nm[32];
            json_array_foreach(btl, t, it2) {
                snprintf(nm, sizeof nm, "__hs_gs_c%zu", t);
                json_object_set_new(pl_jget(it2, "ResTarget"), "name", json_string(nm));
            }
            json_array_foreach(extra, t, it2) {
                snprintf(nm, sizeof nm, "__hs_gs_s%zu", t);
                json_array_append_new(btl, json_pack("{s:{s:s,s:o,s:i}}", "ResTarget", "name", nm,
                                                     "val", json_deep_copy(it2), "location", -1));
            }
            if (gw) {
                json_array_foreach(btl, t, it2) {
                    json_t *rt = pl_jget(it2, "ResTarget");
                    if (has_window(pl_jget(rt, "val")))
                        json_object_set_new(rt, "val", pl_mk_null());
                }
                json_array_foreach(pl_jget(gw, "repl"), t, it2)
                    json_array_append_new(btl, json_pack("{s:{s:O,s:o,s:i}}", "ResTarget", "name",
                                                         json_array_get(it2, 1), "val",
                                                         json_deep_copy(json_array_get(it2, 0)),
                                                         "location", -1));
                json_object_del(b, "windowClause");
            }
        }
        if (!wrap) {
            /* the union's column names are its first branch's: name every
             * output as the query does, before NULLs replace the absent */
            json_t *btl = pl_jget(b, "targetList"), *it2;
            size_t t;
            json_array_foreach(btl, t, it2) {
                json_t *rt = pl_jget(it2, "ResTarget");
                if (rt && !pl_jstrv(rt, "name") && !pl_is_kind(pl_jget(rt, "val"), "A_Star", NULL) &&
                    !pl_jget(pl_jget(pl_jget(rt, "val"), "ColumnRef"), "fields"))
                    json_object_set_new(rt, "name", json_string(target_name(rt)));
                else if (rt && !pl_jstrv(rt, "name") && in_list(all, pl_jget(rt, "val")))
                    json_object_set_new(rt, "name", json_string(target_name(rt)));
            }
        }
        static const char *const parts[] = {"targetList", "havingClause"};
        for (size_t k = 0; k < 2 && st == HS_OK; k++)
            st = grouping_subst(p, pl_jget(b, parts[k]), s2, all, 0);
        size_t k;
        json_t *e;
        json_array_foreach(all, k, e)
            if (!in_list(s2, e))
                json_array_append(absent, e);
        null_absent(pl_jget(b, "targetList"), absent, 0);
        null_absent(pl_jget(b, "havingClause"), absent, 0);
        /* and where subqueries read them as outer columns (the FROM
         * planned for their names: b's own, not yet rewritten) */
        if (st == HS_OK && json_array_size(absent) > 0)
            st = pl_sub_null_absent(p, pl_jget(b, "targetList"), absent);
        if (st == HS_OK && json_array_size(absent) > 0)
            st = pl_sub_null_absent(p, pl_jget(b, "havingClause"), absent);
        json_decref(absent);
        if (st != HS_OK) {
            json_decref(b);
            break;
        }
        if (!u) {
            u = b;
        } else {
            json_t *nu = json_pack("{s:s,s:b,s:{s:o},s:{s:o}}", "op", "SETOP_UNION", "all", 1,
                                   "larg", "SelectStmt", u, "rarg", "SelectStmt", b);
            if (!nu) {
                st = pl_nomem(p);
                break;
            }
            u = nu;
        }
    }
    if (st == HS_OK && u && wrap) {
        /* SELECT __hs_gs_c<i> AS <name>, ... FROM (u) __hs_gs ORDER BY ... */
        json_t *otl = json_array(), *it2;
        size_t t;
        char nm[32];
        json_array_foreach(tl, t, it2) {
            snprintf(nm, sizeof nm, "__hs_gs_c%zu", t);
            const json_t *val = pl_jget(pl_jget(it2, "ResTarget"), "val");
            json_t *ov = gw && has_window(val) ? gw_replace(val, pl_jget(gw, "repl"), 0) : mk_cref(nm);
            json_array_append_new(otl, json_pack("{s:{s:s,s:o,s:i}}", "ResTarget", "name",
                                                 target_name(pl_jget(it2, "ResTarget")), "val",
                                                 ov, "location", -1));
        }
        json_t *outer = json_pack("{s:o,s:[{s:{s:{s:o},s:{s:{s:s}}}}],s:O}", "targetList", otl,
                                  "fromClause", "RangeSubselect", "subquery", "SelectStmt", u,
                                  "alias", "Alias", "aliasname", "__hs_gs", "sortClause", sort);
        u = NULL;
        if (!outer)
            st = pl_nomem(p);
        static const char *const keep[] = {"limitCount", "limitOffset", "limitOption",
                                           "distinctClause"};
        for (size_t k = 0; outer && k < sizeof keep / sizeof keep[0]; k++)
            if (pl_jget(sel, keep[k]))
                json_object_set(outer, keep[k], pl_jget(sel, keep[k]));
        if (outer && gw && pl_jget(gw, "windowClause"))
            json_object_set(outer, "windowClause", pl_jget(gw, "windowClause"));
        *out = outer;
    } else if (st == HS_OK && u) {
        json_t *sc = sort ? sort : pl_jget(sel, "sortClause");
        if (sc && json_array_size(sc))
            json_object_set(u, "sortClause", pl_jget(sel, "sortClause"));
        static const char *const keep[] = {"limitCount", "limitOffset", "limitOption"};
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
            if (pl_jget(sel, keep[k]))
                json_object_set(u, keep[k], pl_jget(sel, keep[k]));
        *out = u;
        u = NULL;
    }
    json_decref(u);
    json_decref(sets);
    json_decref(all);
    json_decref(extra);
    json_decref(sort);
    json_decref(gw);
    return st;
}

static hs_status plan_block(planner *p, const json_t *sel, rel *out);
static hs_status plan_setop(planner *p, const json_t *sel, rel *out);

/* VALUES reading the enclosing row of an Apply ((VALUES (t1.v), (1)) in a
 * correlated subquery): SELECT e1 AS column1, ... UNION ALL ..., whose
 * blocks see that row as any block under the Apply does. */
static hs_status plan_values_outer(planner *p, const json_t *sel, rel *out)
{
    json_t *rows = pl_jget(sel, "valuesLists");
    size_t nc = json_array_size(pl_jget(pl_jget(json_array_get(rows, 0), "List"), "items"));
    json_t *u = NULL;
    for (size_t r = 0; r < json_array_size(rows); r++) {
        json_t *items = pl_jget(pl_jget(json_array_get(rows, r), "List"), "items");
        if (json_array_size(items) != nc) {
            json_decref(u);
            return pl_fail(p, HS_INVALID, "42601", pl_first_loc(json_array_get(rows, r), 0),
                           "VALUES lists must all be the same length");
        }
        json_t *tl = json_array();
        for (size_t c = 0; tl && c < nc; c++) {
            char nm[32];
            snprintf(nm, sizeof nm, "column%zu", c + 1);
            if (json_array_append_new(tl, json_pack("{s:{s:s,s:O,s:i}}", "ResTarget", "name", nm, "val",
                                                    json_array_get(items, c), "location", -1)) != 0) {
                json_decref(tl);
                tl = NULL;
            }
        }
        json_t *b = tl ? json_pack("{s:o,s:s,s:s}", "targetList", tl, "limitOption", "LIMIT_OPTION_DEFAULT",
                                   "op", "SETOP_NONE") : NULL;
        json_t *nu = !b ? NULL : !u ? b
                   : json_pack("{s:s,s:b,s:{s:o},s:{s:o},s:s}", "op", "SETOP_UNION", "all", 1, "larg",
                               "SelectStmt", u, "rarg", "SelectStmt", b, "limitOption", "LIMIT_OPTION_DEFAULT");
        if (!nu) {
            if (!b)
                json_decref(u);
            return pl_nomem(p);
        }
        u = nu;
    }
    static const char *const keep[] = {"sortClause", "limitCount", "limitOffset", "limitOption"};
    for (size_t k = 0; u && pl_jget(u, "op") && strcmp(pl_jstrv(u, "op"), "SETOP_NONE") &&
                       k < sizeof keep / sizeof keep[0]; k++)
        if (pl_jget(sel, keep[k]))
            json_object_set(u, keep[k], pl_jget(sel, keep[k]));
    hs_status st = !u ? pl_plan_select(p, sel, out)   /* no rows: cannot be */
                 : strcmp(pl_jstrv(u, "op"), "SETOP_NONE") ? plan_setop(p, u, out) : plan_block(p, u, out);
    json_decref(u);
    return st;
}

hs_status  pl_plan_select(planner *p, const json_t *sel, rel *out)
{
    memset(out, 0, sizeof *out);
    if (++p->depth > MAX_DEPTH) {
        p->depth--;
        return pl_fail(p, HS_INVALID, "54001", -1, "query nested too deeply (more than %d levels)", MAX_DEPTH);
    }
    cte *saved, *mine;
    int n_mine;
    hs_status st = push_ctes(p, sel, &saved, &mine, &n_mine);
    const char *op = pl_jstrv(sel, "op");
    json_t *expanded = NULL;
    if (st == HS_OK && (!op || !strcmp(op, "SETOP_NONE")))
        st = expand_grouping_sets(p, sel, &expanded);
    if (st == HS_OK && expanded) {
        const char *eop = pl_jstrv(expanded, "op");
        st = eop && strcmp(eop, "SETOP_NONE") ? plan_setop(p, expanded, out)
                                              : plan_block(p, expanded, out);
    } else if (st == HS_OK) {
        if (op && strcmp(op, "SETOP_NONE") != 0)
            st = plan_setop(p, sel, out);
        else if (pl_jget(sel, "valuesLists") && p->outer_row && pl_walk(pl_jget(sel, "valuesLists"), visit_var, NULL, 0))
            st = plan_values_outer(p, sel, out);
        else if (pl_jget(sel, "valuesLists"))
            st = plan_values(p, sel, out);
        else
            st = plan_block(p, sel, out);
    }
    json_decref(expanded);
    p->ctes = saved;
    for (int i = 0; i < n_mine; i++)
        pl_cte_clear(&mine[i]);
    hs_free(mine);
    p->depth--;
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

hs_status  pl_plan_query(planner *p, const json_t *sel, rel *out)
{
    HS_TRY(pl_plan_select(p, sel, out));
    for (int i = 0; i < out->n; i++) {
        hs_free(out->cols[i].qual);
        out->cols[i].qual = NULL;
        out->cols[i].hidden = false;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* window functions                                                    */

static bool is_window_call(const json_t *j)
{
    json_t *b;
    return pl_is_kind(j, "FuncCall", &b) && pl_jget(b, "over");
}

static void collect_windows(const json_t *j, json_t *arr, int depth)
{
    pl_collect_calls(j, arr, is_window_call, depth);
}

/* avg(x) OVER w of integers or numerics is numeric in PostgreSQL
 * (numeric_avg: the sum divided by the count as numeric_div does): such a
 * call is rewritten in place into (sum(x) OVER w)::numeric / count(x) OVER
 * w, named avg, before the window functions are planned; avg(interval)
 * OVER w the same without the cast (interval_avg divides the sum by the
 * count); the Window operator's own avg stays double precision for
 * doubles. */
static hs_status numeric_window_avgs(planner *p, rel *cur, json_t *j, const nmap *m,
                                     const layer *pre, const int *key_of_col, int depth)
{
    if (depth > 400 || !j)
        return HS_OK;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            HS_TRY(numeric_window_avgs(p, cur, json_array_get(j, i), m, pre, key_of_col, depth + 1));
        return HS_OK;
    }
    if (!json_is_object(j) || json_object_get(j, "SubLink"))
        return HS_OK;
    json_t *fc = json_object_get(j, "FuncCall");
    const char *fname = fc && json_object_size(j) == 1 ? pl_func_name(fc) : NULL;
    json_t *args = fc ? pl_jget(fc, "args") : NULL;
    if (fname && !strcmp(fname, "avg") && pl_jget(fc, "over") && json_array_size(args) == 1 &&
        !json_is_true(pl_jget(fc, "agg_distinct")) && !pl_jget(fc, "agg_filter")) {
        int col;
        HS_TRY(pl_rel_add_expr_in(p, cur, json_array_get(args, 0), m, pre, key_of_col, &col));
        hs_type t = cur->op->schema.children[col].type;
        bool iv = t == HS_TYPE_INTERVAL;   /* interval_avg: the sum / the count */
        if ((t >= HS_TYPE_INT8 && t <= HS_TYPE_UINT64) || t == HS_TYPE_DECIMAL128 || iv) {
            json_t *sum = json_deep_copy(fc), *cnt = json_deep_copy(fc);
            json_t *num = json_pack("{s:[{s:{s:s}}],s:i,s:i}", "names", "String", "sval", "numeric",
                                    "typemod", -1, "location", -1);
            if (sum)
                json_object_set_new(sum, "funcname", json_pack("[{s:{s:s}}]", "String", "sval", "sum"));
            if (cnt)
                json_object_set_new(cnt, "funcname", json_pack("[{s:{s:s}}]", "String", "sval", "count"));
            json_t *cast = iv ? (json_decref(num), sum ? json_pack("{s:o}", "FuncCall", sum) : NULL)
                   : sum && num ? json_pack("{s:{s:{s:o},s:o,s:i}}", "TypeCast", "arg", "FuncCall",
                                            sum, "typeName", num, "location", -1)
                                : NULL;
            json_t *div = cast && cnt ? pl_mk_op("/", cast, json_pack("{s:o}", "FuncCall", cnt)) : NULL;
            json_t *body = div ? json_object_get(div, "A_Expr") : NULL;
            if (!body) {
                json_decref(div);
                return pl_nomem(p);
            }
            json_object_set_new(body, "hs_name", json_string("avg"));
            json_object_clear(j);
            json_object_set(j, "A_Expr", body);
            json_decref(div);
        }
        return HS_OK;
    }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
        HS_TRY(numeric_window_avgs(p, cur, v, m, pre, key_of_col, depth + 1));
    return HS_OK;
}

/* PostgreSQL's FRAMEOPTION_* bits (nodes/parsenodes.h) */
#define FO_NONDEFAULT 0x1
#define FO_RANGE 0x2
#define FO_ROWS 0x4
#define FO_GROUPS 0x8
#define FO_START_UNB_PREC 0x20
#define FO_END_UNB_FOLL 0x100
#define FO_START_CURRENT 0x200
#define FO_END_CURRENT 0x400
#define FO_START_OFF_PREC 0x800
#define FO_END_OFF_PREC 0x1000
#define FO_START_OFF_FOLL 0x2000
#define FO_END_OFF_FOLL 0x4000
#define FO_EXCL_CURRENT 0x8000
#define FO_EXCL_GROUP 0x10000
#define FO_EXCL_TIES 0x20000
#define FO_DEFAULTS 1058   /* RANGE UNBOUNDED PRECEDING AND CURRENT ROW */

static json_t *cast_named(json_t *node, const char *type)
{
    return json_pack("{s:{s:o,s:{s:[{s:{s:s}}],s:i,s:i},s:i}}", "TypeCast", "arg", node, "typeName",
                     "names", "String", "sval", type, "typemod", -1, "location", -1, "location", -1);
}

/* PostgreSQL's name of a column type, for the messages of RANGE offsets. */
static const char *pg_type_of(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_BOOL: return "boolean";
    case HS_TYPE_INT8: case HS_TYPE_INT16: return "smallint";
    case HS_TYPE_INT32: return "integer";
    case HS_TYPE_INT64: case HS_TYPE_UINT64: case HS_TYPE_UINT32: return "bigint";
    case HS_TYPE_FLOAT32: return "real";
    case HS_TYPE_FLOAT64: return "double precision";
    case HS_TYPE_DECIMAL128: return "numeric";
    case HS_TYPE_DATE32: return "date";
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: return "time without time zone";
    case HS_TYPE_TIMESTAMP: return f->tz ? "timestamp with time zone" : "timestamp without time zone";
    case HS_TYPE_STRING: return "text";
    case HS_TYPE_BINARY: return "bytea";
    case HS_TYPE_INTERVAL: return "interval";
    default: return hs_type_name(f->type);
    }
}

/* A ROWS or GROUPS offset: a non-negative integer constant. */
static hs_status rows_offset(planner *p, const json_t *node, bool start, bool preceding,
                             int64_t *out)
{
    int64_t x = 0;
    bool null = false;
    json_t *b;
    /* 2::bigint, '2' (an unknown literal PostgreSQL reads as bigint) */
    while (pl_is_kind(node, "TypeCast", &b) && pl_jget(b, "arg"))
        node = pl_jget(b, "arg");
    const char *sv = pl_is_kind(node, "A_Const", &b) ? pl_jstrv(pl_jget(b, "sval"), "sval") : NULL;
    const char *fv = pl_is_kind(node, "A_Const", &b) ? pl_jstrv(pl_jget(b, "fval"), "fval") : NULL;
    if (fv) {
        /* a numeric constant: to bigint as numeric_int8 rounds (half away
         * from zero) */
        double d = hs_strtod(fv, NULL);
        if (!(d > -9.2e18 && d < 9.2e18))
            return pl_fail(p, HS_INVALID, "22003", pl_node_loc(node), "bigint out of range");
        x = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
    } else if (sv) {
        char *end;
        errno = 0;
        x = strtoll(sv, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (end == sv || *end || errno)
            return pl_fail(p, HS_INVALID, "22P02", pl_node_loc(node),
                           "invalid input syntax for type bigint: \"%s\"", sv);
    } else {
        HS_TRY(int_const(p, node, "frame offset", &x, &null));
    }
    if (null)
        return pl_fail(p, HS_INVALID, "22004", pl_node_loc(node), "frame %s offset must not be null",
                       start ? "starting" : "ending");
    if (x < 0)
        return pl_fail(p, HS_INVALID, "22013", pl_node_loc(node),
                       "frame %s offset must not be negative", start ? "starting" : "ending");
    *out = preceding ? -x : x;
    return HS_OK;
}

typedef struct win_ctx {
    rel *cur;
    nmap *m;
    const layer *pre;
    const int *key_of_col;
} win_ctx;

/* RANGE offset bounds: the columns key -/+ offset (bound) in a type where
 * the arithmetic cannot overflow (integers as numeric, dates as
 * timestamps, reals as double precision), the key in that type, and the
 * offset for the executor's checks (PostgreSQL's in_range support:
 * integers with integer offsets, floats with double precision, numerics
 * with numerics, date/timestamp/timestamptz with intervals, intervals with
 * intervals; other pairs are 0A000 as there). */
static hs_status range_bounds(planner *p, const win_ctx *wc, const json_t *over, const json_t *ord,
                              long long v, xo_win *w)
{
    json_t *sb = pl_jget(json_array_get(ord, 0), "SortBy"), *key = pl_jget(sb, "node");
    bool desc, nf;
    HS_TRY(sort_dir(sb, &desc, &nf));
    int kc;
    HS_TRY(pl_rel_add_expr_in(p, wc->cur, key, wc->m, wc->pre, wc->key_of_col, &kc));
    const hs_field *kf = &wc->cur->op->schema.children[kc];
    const char *as = NULL, *off_as = NULL;
    bool int_key = pl_is_int_type(kf->type);
    if (int_key)
        as = "numeric", off_as = "numeric";
    else if (kf->type == HS_TYPE_FLOAT32 || kf->type == HS_TYPE_FLOAT64)
        as = "float8", off_as = "float8";
    else if (kf->type == HS_TYPE_DECIMAL128)
        as = "numeric", off_as = "numeric";
    else if (kf->type == HS_TYPE_DATE32 || (kf->type == HS_TYPE_TIMESTAMP && !kf->tz))
        as = "timestamp", off_as = "interval";
    else if (kf->type == HS_TYPE_TIMESTAMP)
        as = "timestamptz", off_as = "interval";
    else if (kf->type == HS_TYPE_INTERVAL)
        as = "interval", off_as = "interval";
    else
        return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(key),
                       "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s",
                       pg_type_of(kf));
    w->range_desc = desc;
    w->range_key = w->range_lo = w->range_hi = w->range_off_lo = w->range_off_hi = -1;
    hs_field bound = {0};
    bool have_bound = false;
    hs_status st = HS_OK;
    for (int end = 0; end < 2 && st == HS_OK; end++) {
        long long prec = end ? FO_END_OFF_PREC : FO_START_OFF_PREC;
        long long foll = end ? FO_END_OFF_FOLL : FO_START_OFF_FOLL;
        if (!(v & (prec | foll)))
            continue;
        json_t *off = pl_jget(over, end ? "endOffset" : "startOffset");
        int oc;
        json_t *cb;
        bool unknown = pl_is_kind(off, "A_Const", &cb) && pl_jget(cb, "sval");
        st = pl_rel_add_expr_in(p, wc->cur, off, wc->m, wc->pre, wc->key_of_col, &oc);
        if (st != HS_OK)
            break;
        hs_type ot = wc->cur->op->schema.children[oc].type;
        bool ok = unknown || ot == HS_TYPE_NA;
        if (!ok && int_key)
            ok = pl_is_int_type(ot);
        else if (!ok && (kf->type == HS_TYPE_FLOAT32 || kf->type == HS_TYPE_FLOAT64))
            ok = pl_is_int_type(ot) || ot == HS_TYPE_DECIMAL128 || ot == HS_TYPE_FLOAT32 ||
                 ot == HS_TYPE_FLOAT64;
        else if (!ok && kf->type == HS_TYPE_DECIMAL128)
            ok = pl_is_int_type(ot) || ot == HS_TYPE_DECIMAL128;
        else if (!ok)
            ok = ot == HS_TYPE_INTERVAL;
        if (!ok) {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(off),
                         "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s "
                         "and offset type %s", pg_type_of(kf),
                         pg_type_of(&wc->cur->op->schema.children[oc]));
            break;
        }
        /* the bound: "preceding" is toward the start of the ORDER BY */
        bool minus = (v & prec) ? !desc : desc;
        json_t *oq = cast_named(json_deep_copy(off), off_as);
        json_t *kq = cast_named(json_deep_copy(key), as);
        json_t *bx = oq && kq ? pl_mk_op(minus ? "-" : "+", kq, oq) : NULL;
        if (bx && !strcmp(as, "float8")) {
            /* in_range_float8_float8: an infinite key and offset whose sum
             * is NaN (inf - inf) put every row but NaN in range: the bound
             * becomes the infinity that admits them */
            bool less = end != desc;
            json_t *nan = cast_named(json_pack("{s:{s:{s:s},s:i}}", "A_Const", "sval", "sval", "NaN",
                                               "location", -1), "float8");
            json_t *inf = cast_named(json_pack("{s:{s:{s:s},s:i}}", "A_Const", "sval", "sval",
                                               less ? "Infinity" : "-Infinity", "location", -1),
                                     "float8");
            json_t *kn = cast_named(json_deep_copy(key), as);
            json_t *c1 = nan ? pl_mk_op("=", json_deep_copy(bx), json_deep_copy(nan)) : NULL;
            json_t *c2 = kn && nan ? pl_mk_op("<>", kn, nan) : NULL;
            json_t *both[2] = {c1, c2};
            json_t *cond = c1 && c2 ? pl_mk_and(both, 2) : NULL;
            json_decref(c1);
            json_decref(c2);
            if (!c2)
                json_decref(nan);   /* not taken by pl_mk_op */
            json_t *cs = NULL;
            if (cond && inf)   /* (json_pack takes the "o" values, also when it fails) */
                cs = json_pack("{s:{s:[{s:{s:o,s:o,s:i}}],s:o,s:i}}", "CaseExpr", "args",
                               "CaseWhen", "expr", cond, "result", inf, "location", -1,
                               "defresult", bx, "location", -1);
            else {
                json_decref(cond);
                json_decref(inf);
                json_decref(bx);
            }
            bx = cs;
        }
        if (have_bound && bx)
            bx = pl_cast_json(bx, &bound);
        json_t *ox = cast_named(json_deep_copy(off), off_as);
        int bc = -1, occ = -1;
        st = bx && ox ? pl_rel_add_expr_in(p, wc->cur, bx, wc->m, wc->pre, wc->key_of_col, &bc)
                      : pl_nomem(p);
        if (st == HS_OK)
            st = pl_rel_add_expr_in(p, wc->cur, ox, wc->m, wc->pre, wc->key_of_col, &occ);
        json_decref(bx);
        json_decref(ox);
        if (st != HS_OK)
            break;
        if (!have_bound) {
            if (hs_field_copy(&wc->cur->op->schema.children[bc], &bound) != HS_OK) {
                st = pl_nomem(p);
                break;
            }
            have_bound = true;
        }
        if (end)
            w->range_hi = bc, w->range_off_hi = occ, w->hi = 1;
        else
            w->range_lo = bc, w->range_off_lo = occ, w->lo = 1;
    }
    if (st == HS_OK && have_bound) {
        json_t *kx = pl_cast_json(cast_named(json_deep_copy(key), as), &bound);
        st = kx ? pl_rel_add_expr_in(p, wc->cur, kx, wc->m, wc->pre, wc->key_of_col, &w->range_key)
                : pl_nomem(p);
        json_decref(kx);
    }
    if (have_bound)
        hs_field_clear(&bound);
    return st;
}

/* The frame of a window function's OVER (PostgreSQL's frameOptions). */
static hs_status frame_of(planner *p, const win_ctx *wc, const json_t *over, int loc, xo_win *w)
{
    json_t *fo = pl_jget(over, "frameOptions");
    json_t *ord = pl_jget(over, "orderClause");
    long long v = json_is_integer(fo) ? json_integer_value(fo) : 0;
    w->frame = XO_FRAME_DEFAULT;
    w->range_key = w->range_lo = w->range_hi = w->range_off_lo = w->range_off_hi = -1;
    if (!(v & FO_NONDEFAULT))
        return HS_OK;
    w->exclude = v & FO_EXCL_CURRENT ? XO_EXCL_CURRENT : v & FO_EXCL_GROUP ? XO_EXCL_GROUP
               : v & FO_EXCL_TIES ? XO_EXCL_TIES : XO_EXCL_NONE;
    if ((v & FO_GROUPS) && json_array_size(ord) == 0)
        return pl_fail(p, HS_INVALID, "42P20", loc, "GROUPS mode requires an ORDER BY clause");
    bool offsets = v & (FO_START_OFF_PREC | FO_START_OFF_FOLL | FO_END_OFF_PREC | FO_END_OFF_FOLL);
    int64_t lo = v & FO_START_UNB_PREC ? INT64_MIN : 0, hi = v & FO_END_UNB_FOLL ? INT64_MAX : 0;
    if (v & FO_RANGE) {
        if (offsets && json_array_size(ord) != 1)
            return pl_fail(p, HS_INVALID, "42P20", loc,
                           "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column");
        w->lo = lo;
        w->hi = hi;
        if (offsets)
            HS_TRY(range_bounds(p, wc, over, ord, v, w));
        if (!offsets && w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == 0)
            w->frame = XO_FRAME_DEFAULT;
        else if (!offsets && w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == INT64_MAX)
            w->frame = XO_FRAME_WHOLE;
        else
            w->frame = XO_FRAME_RANGE;
        return HS_OK;
    }
    if (v & (FO_START_OFF_PREC | FO_START_OFF_FOLL))
        HS_TRY(rows_offset(p, pl_jget(over, "startOffset"), true, v & FO_START_OFF_PREC, &lo));
    if (v & (FO_END_OFF_PREC | FO_END_OFF_FOLL))
        HS_TRY(rows_offset(p, pl_jget(over, "endOffset"), false, v & FO_END_OFF_PREC, &hi));
    w->lo = lo;
    w->hi = hi;
    if (v & FO_GROUPS)
        w->frame = XO_FRAME_GROUPS;
    else if (w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == 0)
        w->frame = XO_FRAME_ROWS;
    else if (w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == INT64_MAX)
        w->frame = XO_FRAME_WHOLE;
    else
        w->frame = XO_FRAME_ROWS_BETWEEN;
    return HS_OK;
}

static bool win_fn(const char *nm, json_t *fc, xo_win_fn *fn)
{
    static const struct { const char *n; xo_win_fn f; } t[] = {
        {"row_number", XO_WIN_ROW_NUMBER}, {"rank", XO_WIN_RANK}, {"dense_rank", XO_WIN_DENSE_RANK},
        {"count", XO_WIN_COUNT}, {"sum", XO_WIN_SUM}, {"avg", XO_WIN_AVG}, {"min", XO_WIN_MIN},
        {"max", XO_WIN_MAX}, {"lag", XO_WIN_LAG}, {"lead", XO_WIN_LEAD},
        {"first_value", XO_WIN_FIRST_VALUE}, {"last_value", XO_WIN_LAST_VALUE},
        {"ntile", XO_WIN_NTILE}, {"percent_rank", XO_WIN_PERCENT_RANK},
        {"cume_dist", XO_WIN_CUME_DIST}, {"nth_value", XO_WIN_NTH_VALUE},
    };
    for (size_t i = 0; nm && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(nm, t[i].n)) {
            *fn = t[i].f;
            if (*fn == XO_WIN_COUNT && json_is_true(pl_jget(fc, "agg_star")))
                *fn = XO_WIN_COUNT_STAR;
            return true;
        }
    return false;
}

/* ---- named windows ----
 * WINDOW w AS (...) and OVER w / OVER (w ...) become inline definitions
 * before the calls are planned, by PostgreSQL's rules
 * (transformWindowDefinitions): a definition may name an earlier one and
 * then copies its PARTITION BY (it may not give its own), its ORDER BY
 * (it may give its own only where that one has none), and never its frame
 * (the named one may not have one: OVER w takes w's frame, OVER (w)
 * cannot). */

static const json_t *find_window(const json_t *defs, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(defs, i, d) {
        const char *nm = pl_jstrv(d, "name");
        if (nm && !strcmp(nm, name))
            return d;
    }
    return NULL;
}

/* *out: def with its refname resolved against defs (new reference). */
static hs_status merge_window(planner *p, const json_t *defs, const json_t *def, json_t **out)
{
    const char *ref = pl_jstrv(def, "refname");
    int loc = sq_loc(def);
    *out = NULL;
    if (!ref) {
        *out = json_deep_copy(def);
        return *out ? HS_OK : pl_nomem(p);
    }
    const json_t *rw = find_window(defs, ref);
    if (!rw)
        return pl_fail(p, HS_NOT_FOUND, "42704", loc, "window \"%s\" does not exist", ref);
    if (json_array_size(pl_jget(def, "partitionClause")))
        return pl_fail(p, HS_INVALID, "42P20", loc, "cannot override PARTITION BY clause of window \"%s\"", ref);
    if (json_array_size(pl_jget(def, "orderClause")) && json_array_size(pl_jget(rw, "orderClause")))
        return pl_fail(p, HS_INVALID, "42P20", loc, "cannot override ORDER BY clause of window \"%s\"", ref);
    json_t *rfo = pl_jget(rw, "frameOptions");
    if (json_is_integer(rfo) && json_integer_value(rfo) != FO_DEFAULTS)
        return pl_fail(p, HS_INVALID, "42P20", loc, "cannot copy window \"%s\" because it has a frame clause", ref);
    json_t *m = json_deep_copy(def);
    if (!m)
        return pl_nomem(p);
    json_object_del(m, "refname");
    json_t *pc = pl_jget(rw, "partitionClause"), *oc = pl_jget(rw, "orderClause");
    if (pc)
        json_object_set_new(m, "partitionClause", json_deep_copy(pc));
    if (oc && !json_array_size(pl_jget(def, "orderClause")))
        json_object_set_new(m, "orderClause", json_deep_copy(oc));
    *out = m;
    return HS_OK;
}

/* agg(x) FILTER (WHERE c) OVER w is agg(CASE WHEN c THEN x END) OVER w,
 * count(*) FILTER (WHERE c) is count(CASE WHEN c THEN 1 END): rewritten in
 * place (PostgreSQL allows FILTER only on aggregates used as window
 * functions). */
static hs_status window_filter(planner *p, json_t *fc)
{
    json_t *flt = pl_jget(fc, "agg_filter");
    if (!flt)
        return HS_OK;
    static const char *const aggs[] = {"count", "sum", "avg", "min", "max"};
    const char *nm = pl_func_name(fc);
    bool agg = false;
    for (size_t i = 0; nm && i < sizeof aggs / sizeof aggs[0]; i++)
        agg |= !strcmp(nm, aggs[i]);
    json_t *args = pl_jget(fc, "args");
    if (!agg || json_array_size(args) > 1 || (json_array_size(args) == 0 && strcmp(nm, "count")))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc),
                       "FILTER is not implemented for non-aggregate window functions");
    bool star = json_is_true(pl_jget(fc, "agg_star"));
    json_t *val = star ? pl_mk_int(1) : json_incref(json_array_get(args, 0));
    json_t *cs = val ? json_pack("{s:{s:[{s:{s:O,s:o,s:i}}],s:i}}", "CaseExpr", "args", "CaseWhen",
                                 "expr", flt, "result", val, "location", -1, "location", -1)
                     : NULL;
    if (!cs)
        return pl_nomem(p);
    json_object_set_new(fc, "args", json_pack("[o]", cs));
    json_object_del(fc, "agg_filter");
    json_object_del(fc, "agg_star");
    return HS_OK;
}

static hs_status resolve_windows(planner *p, const json_t *sel)
{
    json_t *wcl = pl_jget(sel, "windowClause"), *defs = json_array(), *calls = json_array();
    hs_status st = defs && calls ? HS_OK : pl_nomem(p);
    size_t i;
    json_t *it;
    json_array_foreach(wcl, i, it) {
        json_t *d = pl_jget(it, "WindowDef") ? pl_jget(it, "WindowDef") : it, *mg;
        const char *nm = pl_jstrv(d, "name");
        if (st != HS_OK)
            break;
        if (nm && find_window(defs, nm)) {
            st = pl_fail(p, HS_INVALID, "42P20", sq_loc(d), "window \"%s\" is already defined", nm);
            break;
        }
        if ((st = merge_window(p, defs, d, &mg)) == HS_OK)
            json_array_append_new(defs, mg);
    }
    if (st == HS_OK) {
        collect_windows(pl_jget(sel, "targetList"), calls, 0);
        collect_windows(pl_jget(sel, "sortClause"), calls, 0);
    }
    json_array_foreach(calls, i, it) {
        json_t *fc = pl_jget(it, "FuncCall"), *over = pl_jget(fc, "over"), *res = NULL;
        const char *nm = pl_jstrv(over, "name");
        if (st != HS_OK)
            break;
        if (nm) {
            const json_t *d = find_window(defs, nm);
            if (!d)
                st = pl_fail(p, HS_NOT_FOUND, "42704", sq_loc(over), "window \"%s\" does not exist", nm);
            else if (!(res = json_deep_copy(d)))
                st = pl_nomem(p);
        } else if (pl_jstrv(over, "refname")) {
            st = merge_window(p, defs, over, &res);
        }
        if (res) {
            json_object_del(res, "name");
            json_object_set_new(fc, "over", res);
        }
        if (st == HS_OK)
            st = window_filter(p, fc);
    }
    json_decref(defs);
    json_decref(calls);
    return st;
}

/* Computes the window functions of the select list and ORDER BY over cur
 * (one Window operator per distinct window), mapping each call to its
 * column. */
static hs_status apply_windows(planner *p, rel *cur, json_t *const *nodes, int n_nodes, nmap *m,
                               const layer *pre, const int *key_of_col)
{
    json_t *calls = json_array();
    if (!calls)
        return pl_nomem(p);
    for (int i = 0; i < n_nodes; i++)
        collect_windows(nodes[i], calls, 0);
    hs_status st = HS_OK;
    size_t n = json_array_size(calls);
    bool *done = hs_calloc(n + 1, sizeof *done);
    xo_win *fns = hs_calloc(n + 1, sizeof *fns);
    const json_t **which = hs_calloc(n + 1, sizeof *which);
    if (!done || !fns || !which)
        st = pl_nomem(p);
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        if (done[i])
            continue;
        json_t *fc0 = pl_jget(json_array_get(calls, i), "FuncCall"), *over = pl_jget(fc0, "over");
        json_t *parts = pl_jget(over, "partitionClause"), *ord = pl_jget(over, "orderClause");
        int np = (int)json_array_size(parts), nk = (int)json_array_size(ord);
        int *pc = hs_calloc((size_t)np + 1, sizeof *pc);
        xo_sort_key *keys = hs_calloc((size_t)nk + 1, sizeof *keys);
        if (!pc || !keys)
            st = pl_nomem(p);
        for (int k = 0; k < np && st == HS_OK; k++)
            st = pl_rel_add_expr_in(p, cur, json_array_get(parts, (size_t)k), m, pre, key_of_col, &pc[k]);
        for (int k = 0; k < nk && st == HS_OK; k++) {
            json_t *sb = pl_jget(json_array_get(ord, (size_t)k), "SortBy");
            bool desc, nf;
            if (sort_dir(sb, &desc, &nf) != HS_OK)
                st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            else
                st = pl_rel_add_expr_in(p, cur, pl_jget(sb, "node"), m, pre, key_of_col, &keys[k].col);
            keys[k].desc = desc;
            keys[k].nulls_first = nf;
        }
        int nf_ = 0;
        for (size_t j = i; j < n && st == HS_OK; j++) {
            json_t *fc = pl_jget(json_array_get(calls, j), "FuncCall"), *ov = pl_jget(fc, "over");
            if (done[j] || !pl_jeq(pl_jget(ov, "partitionClause"), parts) || !pl_jeq(pl_jget(ov, "orderClause"), ord))
                continue;
            xo_win *w = &fns[nf_];
            memset(w, 0, sizeof *w);   /* the slot served the previous window's functions */
            const char *fname = pl_func_name(fc);
            json_t *args = pl_jget(fc, "args");
            size_t na = json_array_size(args);
            if (!win_fn(fname, fc, &w->fn) || json_is_true(pl_jget(fc, "agg_distinct")) ||
                pl_jget(fc, "agg_filter")) {
                st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "window function %s is not supported",
                          fname ? fname : "?");
                break;
            }
            win_ctx wc = {cur, m, pre, key_of_col};
            if ((st = frame_of(p, &wc, ov, sq_loc(fc), w)) != HS_OK)
                break;
            w->name = fname;
            bool needs_arg = w->fn != XO_WIN_ROW_NUMBER && w->fn != XO_WIN_RANK &&
                             w->fn != XO_WIN_DENSE_RANK && w->fn != XO_WIN_COUNT_STAR &&
                             w->fn != XO_WIN_NTILE && w->fn != XO_WIN_PERCENT_RANK &&
                             w->fn != XO_WIN_CUME_DIST;
            bool lagish = w->fn == XO_WIN_LAG || w->fn == XO_WIN_LEAD;
            size_t min_args = w->fn == XO_WIN_NTILE ? 1 : w->fn == XO_WIN_NTH_VALUE ? 2 : needs_arg ? 1 : 0;
            size_t max_args = lagish ? 3 : w->fn == XO_WIN_NTH_VALUE ? 2 : min_args;
            if (na < min_args || na > max_args) {
                st = pl_fail(p, HS_NOT_FOUND, "42883", sq_loc(fc), "function %s with %zu arguments is not supported",
                          fname, na);
                break;
            }
            if (needs_arg)
                st = pl_rel_add_expr_in(p, cur, json_array_get(args, 0), m, pre, key_of_col, &w->arg);
            if (st == HS_OK && needs_arg && w->fn >= XO_WIN_COUNT && w->fn <= XO_WIN_MAX)
                st = pv_agg_check(p, fname, &cur->op->schema.children[w->arg], sq_loc(fc));
            if (st == HS_OK && (w->fn == XO_WIN_NTILE || w->fn == XO_WIN_NTH_VALUE)) {
                int64_t nb;
                bool null;
                st = int_const(p, json_array_get(args, w->fn == XO_WIN_NTILE ? 0 : 1), fname, &nb, &null);
                if (st == HS_OK && (null || nb <= 0))
                    st = pl_fail(p, HS_INVALID, w->fn == XO_WIN_NTILE ? "22014" : "22016", sq_loc(fc),
                              "argument of %s must be greater than zero", fname);
                w->offset = nb;
            } else if (st == HS_OK && lagish && na == 3) {
                /* the default, of the argument's type */
                json_t *cd = pl_cast_json(json_array_get(args, 2), &cur->op->schema.children[w->arg]);
                st = cd ? pl_rel_add_expr_in(p, cur, cd, m, pre, key_of_col, &w->def_col) : pl_nomem(p);
                json_decref(cd);
                w->has_default = true;
            }
            if (st == HS_OK && lagish && na >= 2) {
                int64_t off;
                bool null;
                st = int_const(p, json_array_get(args, 1), "lag/lead offset", &off, &null);
                if (st == HS_OK && (null || off < 0))
                    st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "lag/lead offset must be a non-negative constant");
                w->offset = off == 0 ? -1 : off;
                if (off == 0)
                    st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "lag/lead offset 0 is not supported");
            }
            which[nf_++] = json_array_get(calls, j);
            done[j] = true;
        }
        if (st == HS_OK) {
            int base = cur->n;
            xo_op *op;
            st = xo_window(cur->op, np, pc, nk, keys, nf_, fns, &op, p->err);
            cur->op = st == HS_OK ? op : NULL;
            if (st == HS_OK) {
                qcol *nc = hs_realloc(cur->cols, (size_t)(base + nf_ + 1) * sizeof *nc);
                if (!nc)
                    st = pl_nomem(p);
                else
                    cur->cols = nc;
                for (int k = 0; k < nf_ && st == HS_OK; k++) {
                    cur->cols[base + k] = (qcol){NULL, hs_strdup(""), true};
                    cur->n++;
                    st = pl_nmap_add(p, m, which[k], base + k);
                }
            }
        }
        hs_free(pc);
        hs_free(keys);
    }
    hs_free(done);
    hs_free(fns);
    hs_free(which);
    json_decref(calls);
    return st;
}

static hs_status vsearch_try(planner *p, const json_t *sel, fromc *fc, conjs *cs, rel *out,
                             bool *used);

/* Subqueries in the arguments and FILTER clauses of the aggregates (sum((SELECT
 * ...)), count(*) FILTER (WHERE x IN (SELECT ...))) read the row before
 * aggregation: they are joined into cur (correlated ones decorrelated or
 * applied like any scalar subquery of a select list, plan_subq.c) and map
 * to those columns when pl_aggregate binds the arguments. */
static hs_status attach_agg_subqueries(planner *p, rel *cur, json_t *aggs, json_t *groups, nmap *am)
{
    size_t na = json_array_size(aggs), ng = json_array_size(groups);
    json_t **nodes = hs_calloc(na + ng + 1, sizeof *nodes);
    if (!nodes)
        return pl_nomem(p);
    int n = 0;
    json_t *sl = json_array();
    for (size_t j = 0; sl && j < na; j++) {
        /* the call's body: EXISTS / IN / ANY / ALL directly under it (the
         * FILTER's condition) are rewritten in it, their parent */
        json_t *fc = pl_jget(json_array_get(aggs, j), "FuncCall");
        json_array_clear(sl);
        pl_collect_sublinks(fc, sl, 0);
        if (fc && json_array_size(sl) > 0)
            nodes[n++] = fc;
    }
    /* a group key with a scalar subquery (GROUP BY 1 over (SELECT ...)):
     * its value per row, before aggregation, is what the rows group by */
    for (size_t j = 0; sl && j < ng; j++) {
        json_t *g = json_array_get(groups, j);
        json_array_clear(sl);
        pl_collect_sublinks(g, sl, 0);
        bool scalar = json_array_size(sl) > 0;
        for (size_t k = 0; k < json_array_size(sl); k++) {
            const char *t = pl_jstrv(pl_jget(json_array_get(sl, k), "SubLink"), "subLinkType");
            scalar &= t && (!strcmp(t, "EXPR_SUBLINK") || !strcmp(t, "ARRAY_SUBLINK"));
        }
        if (scalar)
            nodes[n++] = g;
    }
    hs_status st = sl ? HS_OK : pl_nomem(p);
    if (st == HS_OK && n > 0)
        st = pl_attach_scalars(p, cur, nodes, n, am, false);
    json_decref(sl);
    hs_free(nodes);
    return st;
}

/* After aggregation, a group key that is a plain column keeps that column's
 * name (and qualifier), so a correlated subquery of the select list, HAVING
 * or ORDER BY finds `t1.g` among the aggregated relation's columns and is
 * decorrelated against it like over any relation (plan_subq.c).  The
 * select list itself binds through the pre-aggregation layer (scope.pre)
 * and is not changed by this.  Ungrouped columns stay out of reach. */
static hs_status expose_group_keys(planner *p, rel *cur, const qcol *pre, int n_pre,
                                   const int *key_of_col)
{
    for (int c = 0; c < n_pre; c++) {
        int k = key_of_col[c];
        if (k < 0 || k >= cur->n || pre[c].outer)
            continue;
        char *q = pl_dup_or_null(pre[c].qual), *nm = hs_strdup(pre[c].name);
        if ((pre[c].qual && !q) || !nm) {
            hs_free(q);
            hs_free(nm);
            return pl_nomem(p);
        }
        hs_free(cur->cols[k].qual);
        hs_free(cur->cols[k].name);
        cur->cols[k].qual = q;
        cur->cols[k].name = nm;
        cur->cols[k].hidden = pre[c].hidden;
    }
    return HS_OK;
}

/* One SELECT ... FROM ... WHERE ... GROUP BY ... HAVING ... ORDER BY ... LIMIT. */
static hs_status plan_block(planner *p, const json_t *sel, rel *out)
{
    HS_TRY(check_clauses(p, sel));
    HS_TRY(resolve_windows(p, sel));
    json_t *dc = pl_jget(sel, "distinctClause");
    bool distinct = json_array_size(dc) > 0;
    json_t *distinct_on = NULL;
    if (distinct && !(json_array_size(dc) == 1 && json_object_size(json_array_get(dc, 0)) == 0)) {
        distinct_on = dc;   /* DISTINCT ON (exprs): the first row of each group in ORDER BY order */
        distinct = false;
    }
    fromc fc = {0};
    conjs cs = {0};
    rel cur = {0};
    nmap m = {0};
    int *key_of_col = NULL;
    qcol *pre_cols = NULL;
    int n_pre = 0;
    json_t *aggs = json_array(), *groups = json_array();
    json_t *tl = pl_jget(sel, "targetList");
    json_t **extra = NULL;
    hs_status st = aggs && groups ? HS_OK : pl_nomem(p);
    if (st == HS_OK)
        st = pl_lateral_rewrite(p, sel);
    if (st == HS_OK)
        st = pl_on_subqueries_to_where(p, (json_t *)sel);
    json_t *from_rest = NULL, *from_lateral = NULL;
    if (st == HS_OK)
        st = pl_srf_split_from(p, pl_jget(sel, "fromClause"), &from_rest, &from_lateral);
    if (st == HS_OK)
        st = pl_fromc_build(p, json_array_size(from_rest) ? from_rest : NULL, &fc);
    if (st == HS_OK)
        st = pl_where_outer_aggs(p, pl_jget(sel, "whereClause"));
    if (st == HS_OK)
        st = pl_conjs_make(p, pl_jget(sel, "whereClause"), &fc, &cs);
    bool vs = false;
    if (st == HS_OK)
        st = vsearch_try(p, sel, &fc, &cs, &cur, &vs);
    if (st == HS_OK && !vs)
        st = pl_push_filters(p, &fc, &cs);
    if (st == HS_OK && !vs)
        st = pl_build_from(p, &fc, &cs, &cur);
    if (st == HS_OK && !vs && p->outer_row) {
        /* a block under an Apply: the enclosing row first (plan_apply.c) */
        rel orow = {0}, rest = cur;
        memset(&cur, 0, sizeof cur);
        st = pl_apply_outer_rel(p, &orow);
        if (st == HS_OK)
            st = pl_join_rels(p, &orow, &rest, XO_JOIN_INNER, NULL, 0, NULL, NULL, 0, false, &cur);
        else
            pl_rel_clear(&rest);
    }
    if (st == HS_OK && json_array_size(from_lateral) > 0) {
        if (vs)
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", -1, "vector search with a lateral function in FROM is not supported");
        else
            st = pl_srf_apply_lateral(p, &cur, from_lateral);
    }
    /* the rest of WHERE: plain conjuncts first, then those with subqueries */
    if (st == HS_OK) {
        json_t **plain = hs_calloc((size_t)cs.n + 1, sizeof *plain);
        int np = 0;
        if (!plain)
            st = pl_nomem(p);
        for (int i = 0; plain && i < cs.n; i++)
            if (!cs.a[i].used && !cs.a[i].sub)
                plain[np++] = cs.a[i].node;
        if (st == HS_OK)
            st = pl_filter_rel(p, &cur, plain, np, NULL, NULL, 0, "WHERE");
        hs_free(plain);
    }
    for (int i = 0; i < cs.n && st == HS_OK; i++)
        if (!cs.a[i].used && cs.a[i].sub)
            st = pl_apply_sub_conj(p, &cur, cs.a[i].node);
    /* aggregation (variance / stddev of exact arguments: numeric) */
    if (st == HS_OK)
        st = pl_stats_numeric(p, &cur, sel);
    json_t *oaggs = json_array();   /* the block's aggregates written in its subqueries */
    if (st == HS_OK && !oaggs)
        st = pl_nomem(p);
    if (st == HS_OK) {
        json_t *parts[3] = {tl, pl_jget(sel, "havingClause"), pl_jget(sel, "sortClause")};
        st = pl_outer_aggs(p, parts, 3, &cur, aggs, oaggs);
    }
    if (st == HS_OK) {
        pl_collect_aggs(tl, aggs, 0);
        pl_collect_aggs(pl_jget(sel, "havingClause"), aggs, 0);
        pl_collect_aggs(pl_jget(sel, "sortClause"), aggs, 0);
        size_t i;
        json_t *g;
        json_array_foreach(pl_jget(sel, "groupClause"), i, g) {
            json_t *gn;
            if ((st = group_node(p, g, tl, &cur, &gn)) != HS_OK)
                break;
            bool dup = false;
            for (size_t k = 0; k < json_array_size(groups); k++)
                dup |= pl_jeq(json_array_get(groups, k), gn);
            if (!dup)
                json_array_append(groups, gn);
        }
    }
    bool grouped = json_array_size(aggs) > 0 || json_array_size(groups) > 0 ||
                   pl_jget(sel, "havingClause") != NULL || json_is_true(pl_jget(sel, "hs_grouped"));
    nmap am = {0};   /* subqueries inside aggregate arguments and FILTER */
    if (st == HS_OK && grouped)
        st = attach_agg_subqueries(p, &cur, aggs, groups, &am);
    if (st == HS_OK && grouped) {
        n_pre = cur.n;
        pre_cols = cur.cols;
        cur.cols = NULL;
        cur.n = 0;
        cur.cols = hs_calloc((size_t)n_pre + 1, sizeof *cur.cols);
        if (!cur.cols)
            st = pl_nomem(p);
        for (int i = 0; i < n_pre && st == HS_OK; i++) {
            cur.cols[i].qual = pl_dup_or_null(pre_cols[i].qual);
            cur.cols[i].name = hs_strdup(pre_cols[i].name);
            cur.cols[i].hidden = pre_cols[i].hidden;
            cur.cols[i].outer = pre_cols[i].outer;
        }
        cur.n = n_pre;
        if (st == HS_OK)
            st = pl_aggregate(p, &cur, groups, aggs, &am, &m, &key_of_col);
        if (st == HS_OK)
            st = expose_group_keys(p, &cur, pre_cols, n_pre, key_of_col);
        if (st == HS_OK)
            st = pl_outer_aggs_expose(p, &cur, &m, oaggs);
        if (st == HS_OK && p->outer_row) {
            /* a grouped block under an Apply: the enclosing row's columns
             * are constants of every group, joined again after the
             * aggregation (on the right: the aggregate's columns keep their
             * positions), so the select list and HAVING read them */
            rel orow = {0}, agg = cur;
            memset(&cur, 0, sizeof cur);
            st = pl_apply_outer_rel(p, &orow);
            if (st == HS_OK)
                st = pl_join_rels(p, &agg, &orow, XO_JOIN_INNER, NULL, 0, NULL, NULL, 0, false, &cur);
            else
                pl_rel_clear(&agg);
        }
    }
    layer pre = {pre_cols, n_pre, 0};
    json_t *having = pl_jget(sel, "havingClause");
    json_t *hold = NULL;   /* HAVING x op ALL (...): the SubLink is rewritten in its parent */
    if (st == HS_OK && having) {
        hold = json_pack("[O]", having);
        const layer *saved_ug = p->ungrouped;
        const int *saved_key = p->ungrouped_key;
        p->ungrouped = &pre;
        p->ungrouped_key = key_of_col;
        st = hold ? pl_attach_scalars(p, &cur, &hold, 1, &m, true) : pl_nomem(p);
        p->ungrouped = saved_ug;
        p->ungrouped_key = saved_key;
        having = json_array_get(hold, 0);
        if (st == HS_OK) {
            scope sc;
            pl_scope_rel(&sc, p, &cur);
            sc.map_nodes = m.nodes;
            sc.map_cols = m.cols;
            sc.n_map = m.n;
            sc.pre = &pre;
            sc.key_of_col = key_of_col;
            ex_expr *e;
            st = pl_bind_in(&sc, having, true, &e);
            if (st == HS_OK) {
                xo_op *op;
                st = xo_filter(cur.op, e, &op, p->err);
                cur.op = st == HS_OK ? op : NULL;
            }
        }
    }
    /* scalar subqueries and window functions of the select list and ORDER BY */
    json_t *sortc = pl_jget(sel, "sortClause");
    if (st == HS_OK) {
        json_t *both[2] = {tl, sortc};
        const layer *saved_ug = p->ungrouped;
        const int *saved_key = p->ungrouped_key;
        if (grouped) {
            p->ungrouped = &pre;
            p->ungrouped_key = key_of_col;
        }
        st = pl_attach_scalars(p, &cur, both, 2, &m, grouped);
        p->ungrouped = saved_ug;
        p->ungrouped_key = saved_key;
        for (int i = 0; i < 2 && st == HS_OK; i++)
            st = numeric_window_avgs(p, &cur, both[i], &m, grouped ? &pre : NULL, key_of_col, 0);
        if (st == HS_OK)
            st = apply_windows(p, &cur, both, 2, &m, grouped ? &pre : NULL, key_of_col);
    }
    /* DISTINCT ON (e...): row_number() OVER (PARTITION BY e... ORDER BY the
     * query's ORDER BY) = 1; PostgreSQL requires ORDER BY to start with e... */
    json_t *don = NULL;
    if (st == HS_OK && distinct_on) {
        size_t nd = json_array_size(distinct_on);
        for (size_t i = 0; i < nd && st == HS_OK; i++) {
            json_t *sb = pl_jget(json_array_get(sortc, i), "SortBy");
            if (!sb || !pl_jeq(pl_jget(sb, "node"), json_array_get(distinct_on, i)))
                st = pl_fail(p, HS_INVALID, "42P10", pl_first_loc(distinct_on, 0),
                          "SELECT DISTINCT ON expressions must match initial ORDER BY expressions");
        }
        if (st == HS_OK) {
            json_t *ord = sortc ? json_incref(sortc) : json_array();
            don = ord ? json_pack("{s:{s:[{s:{s:s}}],s:{s:O,s:o,s:i,s:i},s:i}}", "FuncCall",
                                  "funcname", "String", "sval", "row_number", "over",
                                  "partitionClause", distinct_on, "orderClause", ord,
                                  "frameOptions", 1058, "location", -1, "location", -1)
                      : NULL;
            if (!don)
                st = pl_nomem(p);
        }
        if (st == HS_OK)
            st = apply_windows(p, &cur, &don, 1, &m, grouped ? &pre : NULL, key_of_col);
        if (st == HS_OK) {
            json_t *eq1 = pl_mk_op("=", json_incref(don), pl_mk_int(1));
            st = eq1 ? pl_filter_rel(p, &cur, &eq1, 1, m.nodes, m.cols, m.n, "DISTINCT ON") : pl_nomem(p);
            json_decref(eq1);
        }
    }
    /* set-returning functions of the select list (after windows, before
     * DISTINCT, ORDER BY and LIMIT) */
    if (st == HS_OK)
        st = pl_srf_select(p, &cur, tl, &m, grouped ? &pre : NULL, key_of_col);
    /* the select list */
    int cap = 16, n_out = 0;
    ex_expr **ex = NULL;
    char **names = NULL;
    qcol *ocols = NULL;
    json_t **ovals = NULL;
    int *srcs = NULL;
    sortk *keys = NULL;
    int nk = 0;
    if (st == HS_OK) {
        cap = (int)json_array_size(tl) + cur.n + (int)json_array_size(sortc) + 4;
        ex = hs_calloc((size_t)cap, sizeof *ex);
        names = hs_calloc((size_t)cap, sizeof *names);
        ocols = hs_calloc((size_t)cap, sizeof *ocols);
        ovals = hs_calloc((size_t)cap, sizeof *ovals);
        srcs = hs_calloc((size_t)cap, sizeof *srcs);
        keys = hs_calloc((size_t)json_array_size(sortc) + 1, sizeof *keys);
        if (!ex || !names || !ocols || !ovals || !keys || !srcs)
            st = pl_nomem(p);
        for (int i = 0; srcs && i < cap; i++)
            srcs[i] = -1;
    }
    scope sc;
    pl_scope_rel(&sc, p, &cur);
    sc.map_nodes = m.nodes;
    sc.map_cols = m.cols;
    sc.n_map = m.n;
    if (grouped) {
        sc.pre = &pre;
        sc.key_of_col = key_of_col;
    }
    sc.no_aggs = grouped ? "this context" : NULL;
    for (size_t i = 0; i < json_array_size(tl) && st == HS_OK; i++) {
        json_t *rt = pl_jget(json_array_get(tl, i), "ResTarget"), *val = pl_jget(rt, "val"), *cb;
        if (pl_is_kind(val, "ColumnRef", &cb)) {
            json_t *f = pl_jget(cb, "fields");
            size_t nf = json_array_size(f);
            if (pl_is_kind(json_array_get(f, nf - 1), "A_Star", NULL)) {
                const char *qual = nf >= 2 ? sq_str(json_array_get(f, nf - 2)) : NULL;
                if (grouped) {
                    st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(cb), "'*' with GROUP BY or aggregates is not supported");
                    break;
                }
                int found = 0;
                for (int c = 0; c < cur.n && st == HS_OK; c++) {
                    if (cur.cols[c].outer || (cur.cols[c].name && cur.cols[c].name[0] == '\x01'))
                        continue;   /* the enclosing query's row (plan_apply.c); the
                                       planner's own columns (\x01in, \x01count) */
                    if (cur.cols[c].hidden && !(qual && pl_name_eq(cur.cols[c].qual, qual) && *cur.cols[c].name))
                        continue;
                    if (qual && !pl_name_eq(cur.cols[c].qual, qual))
                        continue;
                    found++;
                    srcs[n_out] = c;
                    names[n_out] = hs_strdup(cur.cols[c].name);
                    ocols[n_out].qual = pl_dup_or_null(cur.cols[c].qual);
                    ocols[n_out].name = hs_strdup(cur.cols[c].name);
                    n_out++;
                    if (n_out >= cap - 2) {
                        int nc = cap * 2;
                        ex_expr **a1 = hs_realloc(ex, (size_t)nc * sizeof *ex);
                        if (a1) ex = a1;
                        char **a2 = hs_realloc(names, (size_t)nc * sizeof *names);
                        if (a2) names = a2;
                        qcol *a3 = hs_realloc(ocols, (size_t)nc * sizeof *ocols);
                        if (a3) ocols = a3;
                        json_t **a4 = hs_realloc(ovals, (size_t)nc * sizeof *ovals);
                        if (a4) ovals = a4;
                        int *a5 = hs_realloc(srcs, (size_t)nc * sizeof *srcs);
                        if (a5) srcs = a5;
                        if (!a1 || !a2 || !a3 || !a4 || !a5) {
                            st = pl_nomem(p);
                            break;
                        }
                        for (int z = cap; z < nc; z++) {
                            ex[z] = NULL;
                            names[z] = NULL;
                            ocols[z] = (qcol){0};
                            ovals[z] = NULL;
                            srcs[z] = -1;
                        }
                        cap = nc;
                    }
                }
                if (st == HS_OK && qual && !found)
                    st = pl_fail(p, HS_NOT_FOUND, "42P01", sq_loc(cb),
                              "missing FROM-clause entry for table \"%s\"", qual);
                continue;
            }
        }
        /* a column of the input as it is (passed through: nested types too) */
        int direct = -1;
        for (int k = 0; k < sc.n_map && direct < 0; k++)
            if (sc.map_nodes[k] == val || pl_jeq(sc.map_nodes[k], val))
                direct = sc.map_cols[k];
        if (direct < 0 && pl_is_kind(val, "ColumnRef", &cb)) {
            const char *nn[8];
            int k = pl_colref_names(cb, nn, 8);
            if (k > 0 && nn[k - 1] && !grouped)
                direct = pl_scope_column(&sc, nn, k);
            else if (k > 0 && nn[k - 1] && grouped) {
                int pc = pl_layer_find(&pre, nn, k);
                direct = pc >= 0 ? key_of_col[pc] : -1;
            }
        }
        if (direct >= 0)
            srcs[n_out] = direct;   /* passed through (nested columns too) */
        else
            st = pl_bind_in(&sc, val, false, &ex[n_out]);
        if (st != HS_OK)
            break;
        const char *nm = target_name(rt);
        names[n_out] = hs_strdup(nm);
        ocols[n_out].name = hs_strdup(nm);
        ovals[n_out] = val;
        if (pl_is_kind(val, "ColumnRef", &cb) && !pl_jstrv(rt, "name")) {
            const char *nn[8];
            int k = pl_colref_names(cb, nn, 8);
            int c = k > 0 ? pl_scope_column(&sc, nn, k) : -1;
            if (c >= 0 && c < cur.n)
                ocols[n_out].qual = pl_dup_or_null(cur.cols[c].qual);
            else if (c < 0 && grouped) {
                int pc = pl_layer_find(&pre, nn, k);
                if (pc >= 0)
                    ocols[n_out].qual = pl_dup_or_null(pre_cols[pc].qual);
            }
        }
        n_out++;
        if (n_out >= cap - (int)json_array_size(sortc) - 2) {
            st = pl_fail(p, HS_INTERNAL, "XX000", -1, "select list grew past its estimate");
            break;
        }
    }
    /* ORDER BY */
    int n_vis = n_out;
    for (size_t i = 0; i < json_array_size(sortc) && st == HS_OK; i++) {
        json_t *sb = pl_jget(json_array_get(sortc, i), "SortBy"), *node = pl_jget(sb, "node"), *cb;
        sortk *k = &keys[nk];
        if (sort_dir(sb, &k->desc, &k->nulls_first) != HS_OK) {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            break;
        }
        k->col = -1;
        if (pl_is_kind(node, "A_Const", &cb) && pl_jget(cb, "ival")) {
            int64_t pos;
            bool null;
            st = int_const(p, node, "ORDER BY position", &pos, &null);
            if (st == HS_OK && (pos < 1 || pos > n_vis))
                st = pl_fail(p, HS_INVALID, "42P10", pl_node_loc(node),
                          "ORDER BY position %lld is not in select list", (long long)pos);
            k->col = (int)pos - 1;
        } else if (pl_is_kind(node, "ColumnRef", &cb) && json_array_size(pl_jget(cb, "fields")) == 1) {
            const char *nm = sq_str(json_array_get(pl_jget(cb, "fields"), 0));
            for (int c = 0; nm && c < n_vis && k->col < 0; c++)
                if (pl_name_eq(names[c], nm))
                    k->col = c;
        }
        for (int c = 0; k->col < 0 && c < n_vis; c++)
            if (ovals[c] && pl_jeq(ovals[c], node))
                k->col = c;
        if (st == HS_OK && k->col < 0) {
            if (distinct) {
                st = pl_fail(p, HS_INVALID, "42P10", pl_node_loc(node),
                          "for SELECT DISTINCT, ORDER BY expressions must appear in select list");
                break;
            }
            st = pl_bind_in(&sc, node, false, &ex[n_out]);
            names[n_out] = hs_strdup("?sort?");
            ocols[n_out].name = hs_strdup("");
            ocols[n_out].hidden = true;
            k->col = n_out++;
        }
        nk++;
    }
    if (st == HS_OK) {
        xo_op *op;
        st = pl_project_mixed(p, cur.op, n_out, srcs, ex, (const char *const *)names, &op);
        cur.op = NULL;
        for (int i = 0; i < n_out; i++)
            ex[i] = NULL;
        if (st == HS_OK) {
            out->op = op;
            out->cols = ocols;
            out->n = n_out;
            ocols = NULL;
            st = finish(p, out, n_vis, keys, nk, distinct, sel);
        }
    }
    for (int i = 0; ex && i < cap; i++)
        ex_free(ex[i]);
    for (int i = 0; names && i < cap; i++)
        hs_free(names[i]);
    if (ocols)
        pl_qcols_free(ocols, cap);
    hs_free(ex);
    hs_free(names);
    hs_free(ovals);
    hs_free(srcs);
    hs_free(keys);
    hs_free(extra);
    json_decref(don);
    json_decref(from_rest);
    json_decref(from_lateral);
    hs_free(key_of_col);
    pl_qcols_free(pre_cols, n_pre);
    pl_nmap_free(&m);
    pl_nmap_free(&am);
    json_decref(hold);
    json_decref(oaggs);
    json_decref(aggs);
    json_decref(groups);
    pl_rel_clear(&cur);
    pl_conjs_free(&cs);
    pl_fromc_free(&fc);
    return st;
}

/* ------------------------------------------------------------------ */
/* set operations and VALUES                                           */

static hs_status order_outputs(planner *p, rel *r, const json_t *sel)
{
    json_t *sortc = pl_jget(sel, "sortClause");
    int nk = (int)json_array_size(sortc);
    sortk *keys = hs_calloc((size_t)nk + 1, sizeof *keys);
    if (!keys)
        return pl_nomem(p);
    hs_status st = HS_OK;
    for (int i = 0; i < nk && st == HS_OK; i++) {
        json_t *sb = pl_jget(json_array_get(sortc, (size_t)i), "SortBy"), *node = pl_jget(sb, "node"), *cb;
        sortk *k = &keys[i];
        if (sort_dir(sb, &k->desc, &k->nulls_first) != HS_OK) {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            break;
        }
        k->col = -1;
        if (pl_is_kind(node, "A_Const", &cb) && pl_jget(cb, "ival")) {
            int64_t pos;
            bool null;
            st = int_const(p, node, "ORDER BY position", &pos, &null);
            if (st == HS_OK && (pos < 1 || pos > r->n))
                st = pl_fail(p, HS_INVALID, "42P10", pl_node_loc(node),
                          "ORDER BY position %lld is not in select list", (long long)pos);
            k->col = (int)pos - 1;
        } else if (pl_is_kind(node, "ColumnRef", &cb)) {
            const char *nn[8];
            int n = pl_colref_names(cb, nn, 8);
            layer l = {r->cols, r->n, 0};
            k->col = n > 0 && nn[n - 1] ? pl_layer_find(&l, nn + n - 1, 1) : -1;
            if (k->col < 0)
                st = pl_fail(p, HS_NOT_FOUND, "42703", sq_loc(cb), "column \"%s\" does not exist",
                          nn[n - 1] ? nn[n - 1] : "?");
        } else {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(node),
                      "ORDER BY on a UNION/INTERSECT/EXCEPT result must be on result columns");
        }
    }
    if (st == HS_OK)
        st = finish(p, r, r->n, keys, nk, false, sel);
    hs_free(keys);
    return st;
}

static hs_status plan_setop(planner *p, const json_t *sel, rel *out)
{
    const char *op = pl_jstrv(sel, "op");
    json_t *lb, *rb;
    if (!pl_is_kind(pl_jget(sel, "larg"), "SelectStmt", &lb) && !(lb = pl_jget(sel, "larg")))
        return pl_fail(p, HS_INTERNAL, "XX000", -1, "malformed set operation");
    if (!pl_is_kind(pl_jget(sel, "rarg"), "SelectStmt", &rb) && !(rb = pl_jget(sel, "rarg")))
        return pl_fail(p, HS_INTERNAL, "XX000", -1, "malformed set operation");
    xo_setop_kind kind = !strcmp(op, "SETOP_UNION") ? XO_SET_UNION
                       : !strcmp(op, "SETOP_INTERSECT") ? XO_SET_INTERSECT : XO_SET_EXCEPT;
    const char *kw = kind == XO_SET_UNION ? "UNION" : kind == XO_SET_INTERSECT ? "INTERSECT" : "EXCEPT";
    bool all = json_is_true(pl_jget(sel, "all"));
    rel l = {0}, r = {0};
    hs_status st = pl_plan_query(p, lb, &l);
    if (st == HS_OK)
        st = pl_plan_query(p, rb, &r);
    if (st == HS_OK && l.n != r.n)
        st = pl_fail(p, HS_INVALID, "42601", pl_first_loc(rb, 0), "each %s query must have the same number of columns", kw);
    hs_field *types = NULL;
    if (st == HS_OK) {
        types = hs_calloc((size_t)l.n + 1, sizeof *types);
        if (!types)
            st = pl_nomem(p);
        for (int i = 0; types && i < l.n; i++) {
            const hs_field *a = &l.op->schema.children[i], *b = &r.op->schema.children[i];
            pl_unify_type(a, b, &types[i]);
            if ((a->type == HS_TYPE_STRING) != (b->type == HS_TYPE_STRING) &&
                a->type != HS_TYPE_NA && b->type != HS_TYPE_NA)
                st = pl_fail(p, HS_INVALID, "42804", pl_first_loc(rb, 0), "%s types %s and %s cannot be matched",
                          kw, hs_type_name(a->type), hs_type_name(b->type));
        }
    }
    if (st == HS_OK)
        st = pl_cast_rel(p, &l, types);
    if (st == HS_OK)
        st = pl_cast_rel(p, &r, types);
    hs_free(types);
    if (st == HS_OK) {
        xo_op *o;
        xo_op *lo = l.op, *ro = r.op;
        l.op = r.op = NULL;
        st = xo_setop(kind, all, lo, ro, &o, p->err);
        if (st == HS_OK) {
            out->op = o;
            out->cols = l.cols;
            out->n = l.n;
            l.cols = NULL;
            l.n = 0;
        }
    }
    pl_rel_clear(&l);
    pl_rel_clear(&r);
    if (st == HS_OK)
        st = order_outputs(p, out, sel);
    return st;
}

static int no_column(void *ctx, const char *const *names, int n)
{
    (void)ctx;
    (void)names;
    (void)n;
    return -1;
}

/* Drops f's children and metadata (a VALUES column unified to a scalar type). */
static void values_plain(hs_field *f)
{
    hs_field g;
    hs_field_init(&g, f->name, f->type, f->nullable);
    g.precision = f->precision;
    g.scale = f->scale;
    g.unit = f->unit;
    hs_field_clear(f);
    *f = g;
}

static hs_status plan_values(planner *p, const json_t *sel, rel *out)
{
    json_t *rows = pl_jget(sel, "valuesLists");
    size_t nr = json_array_size(rows);
    size_t nc = json_array_size(pl_jget(pl_jget(json_array_get(rows, 0), "List"), "items"));
    hs_field empty;
    hs_field_init(&empty, "", HS_TYPE_STRUCT, false);
    hs_batch *one = NULL;
    hs_field *types = hs_calloc(nc + 1, sizeof *types);
    ex_expr **ex = hs_calloc(nc + 1, sizeof *ex);
    hs_column **cols = hs_calloc(nc + 1, sizeof *cols);
    hs_status st = types && ex && cols ? hs_batch_create(&empty, 1, &one, p->err) : pl_nomem(p);
    if (st == HS_OK)
        one->n_rows = 1;
    ex_scope es = {.schema = &empty, .column = no_column};
    for (size_t c = 0; types && c < nc; c++)
        types[c].type = HS_TYPE_NA;
    /* types: unify over rows */
    for (size_t r = 0; r < nr && st == HS_OK; r++) {
        json_t *items = pl_jget(pl_jget(json_array_get(rows, r), "List"), "items");
        if (json_array_size(items) != nc) {
            st = pl_fail(p, HS_INVALID, "42601", pl_first_loc(json_array_get(rows, r), 0),
                      "VALUES lists must all be the same length");
            break;
        }
        for (size_t c = 0; c < nc && st == HS_OK; c++) {
            ex_expr *e;
            st = ex_bind_json(json_array_get(items, c), p->text, &es, false, &e, p->err);
            if (st != HS_OK)
                break;
            const hs_field *t = ex_type(e);
            json_t *cn = json_array_get(items, c), *cb;
            /* NULL and quoted literals have no type of their own (PostgreSQL's
             * "unknown"): they take the column's type; all unknown is text */
            bool unknown = pl_is_kind(cn, "A_Const", &cb) &&
                           (json_is_true(pl_jget(cb, "isnull")) || pl_jget(cb, "sval"));
            if (!unknown) {
                /* types[c] is a deep copy: nested types (pgvector's vector is a
                 * list<float32> tagged pgvector.type; arrays; structs) keep
                 * their children and tags */
                hs_field u, copy;
                bool first = types[c].type == HS_TYPE_NA;
                if (first)
                    u = *t;
                else
                    pl_unify_type(&types[c], t, &u);
                bool changed = !first && u.type != types[c].type;
                st = hs_field_copy(&u, &copy) == HS_OK ? HS_OK : pl_nomem(p);
                if (st == HS_OK) {
                    if (changed)  /* to a wider number or to text: no children, no tags */
                        values_plain(&copy);
                    hs_field_clear(&types[c]);
                    types[c] = copy;
                }
            }
            ex_free(e);
        }
    }
    for (size_t c = 0; c < nc && st == HS_OK; c++)
        if (types[c].type == HS_TYPE_NA)
            types[c].type = HS_TYPE_STRING;
    /* evaluate */
    hs_field schema;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    for (size_t c = 0; c < nc && st == HS_OK; c++) {
        char nm[32];
        snprintf(nm, sizeof nm, "column%zu", c + 1);
        hs_field f;
        st = hs_field_copy(&types[c], &f);
        if (st == HS_OK) {
            hs_free(f.name);
            f.name = hs_strdup(nm);
            f.nullable = true;
            f.field_id = (int32_t)c + 1;
            st = f.name ? hs_field_add_child(&schema, &f) : HS_NOMEM;
        }
        if (st != HS_OK) {
            hs_field_clear(&f);
            st = pl_nomem(p);
        }
    }
    for (size_t r = 0; r < nr && st == HS_OK; r++) {
        json_t *items = pl_jget(pl_jget(json_array_get(rows, r), "List"), "items");
        for (size_t c = 0; c < nc && st == HS_OK; c++) {
            json_t *node = json_array_get(items, c);
            json_t *cast = pl_cast_json(node, &types[c]);
            ex_expr *e = NULL;
            hs_column *col = NULL;
            st = cast ? ex_bind_json(cast, p->text, &es, false, &e, p->err) : pl_nomem(p);
            json_decref(cast);
            if (st == HS_OK)
                st = ex_eval(e, one, &col, p->err);
            if (st == HS_OK && !cols[c])
                st = hs_col_create(&schema.children[c], (int64_t)nr, &cols[c], p->err);
            if (st == HS_OK)
                st = hs_col_append_column(cols[c], col, p->err);
            hs_col_free(col);
            ex_free(e);
        }
    }
    hs_batch *b = NULL;
    if (st == HS_OK)
        st = hs_batch_create(&schema, 0, &b, p->err);
    if (st == HS_OK) {
        for (int c = 0; c < b->n_cols; c++) {
            hs_col_free(b->cols[c]);
            b->cols[c] = cols[c];
            cols[c] = NULL;
        }
        b->n_rows = (int64_t)nr;
        st = xo_values(p->ctx, &schema, 1, &b, &out->op, p->err);
    }
    for (size_t c = 0; cols && c < nc; c++)
        hs_col_free(cols[c]);
    hs_free(cols);
    hs_free(ex);
    for (size_t c = 0; types && c < nc; c++)
        hs_field_clear(&types[c]);
    hs_free(types);
    hs_batch_free(one);
    hs_field_clear(&schema);
    hs_field_clear(&empty);
    if (st == HS_OK)
        st = pl_rel_name(out, NULL, p->err);
    if (st == HS_OK)
        st = order_outputs(p, out, sel);
    return st;
}

/* ------------------------------------------------------------------ */
/* vector search                                                       */


/* The float values of a vector literal '[1,2,3]' (hs_malloc'ed). */
static float *parse_vec(const char *t, int *dim)
{
    while (isspace((unsigned char)*t))
        t++;
    if (*t++ != '[')
        return NULL;
    int cap = 16, n = 0;
    float *v = hs_malloc((size_t)cap * sizeof *v);
    while (v) {
        char *end;
        float x = hs_strtof(t, &end);
        if (end == t || !isfinite(x))
            break;
        if (n == cap) {
            float *nv = hs_realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = x;
        t = end;
        while (isspace((unsigned char)*t))
            t++;
        if (*t == ',') {
            t++;
            continue;
        }
        if (*t == ']') {
            t++;
            while (isspace((unsigned char)*t))
                t++;
            if (*t)
                break;
            *dim = n;
            return v;
        }
        break;
    }
    hs_free(v);
    return NULL;
}

/* ORDER BY col <-> const LIMIT k on one indexed table: the FROM becomes a
 * VectorSearch with the WHERE as its filter (*used set).  The rest of the
 * query (select list, ORDER BY on the k rows, LIMIT/OFFSET) plans as
 * usual over it, so the distances are computed exactly as everywhere. */
static hs_status vsearch_try(planner *p, const json_t *sel, fromc *fc, conjs *cs, rel *out,
                             bool *used)
{
    *used = false;
    json_t *sortc = pl_jget(sel, "sortClause"), *sb, *ae, *lc = pl_jget(sel, "limitCount");
    if (fc->n_items != 1 || fc->items[0]->kind != F_TABLE || json_array_size(sortc) != 1 || !lc ||
        pl_jget(sel, "groupClause") || pl_jget(sel, "havingClause") || pl_jget(sel, "distinctClause"))
        return HS_OK;
    json_t *aggs = json_array();
    pl_collect_aggs(pl_jget(sel, "targetList"), aggs, 0);
    size_t na = json_array_size(aggs);
    json_decref(aggs);
    if (na)
        return HS_OK;
    for (int i = 0; i < cs->n; i++)
        if (cs->a[i].sub || cs->a[i].outer || cs->a[i].n_refs != 1)
            return HS_OK;
    sb = pl_jget(json_array_get(sortc, 0), "SortBy");
    const char *dir = pl_jstrv(sb, "sortby_dir"), *nulls = pl_jstrv(sb, "sortby_nulls");
    if ((dir && strcmp(dir, "SORTBY_DEFAULT") && strcmp(dir, "SORTBY_ASC")) ||
        (nulls && strcmp(nulls, "SORTBY_NULLS_DEFAULT")))
        return HS_OK;
    if (!pl_is_kind(pl_jget(sb, "node"), "A_Expr", &ae))
        return HS_OK;
    const char *op = sq_str(json_array_get(pl_jget(ae, "name"), 0));
    const char *metric = !op ? NULL : !strcmp(op, "<->") ? "l2" : !strcmp(op, "<=>") ? "cosine"
                       : !strcmp(op, "<#>") ? "ip" : NULL;
    if (!metric)
        return HS_OK;
    json_t *cr = NULL, *cn = NULL, *x;
    for (int side = 0; side < 2; side++) {
        json_t *a = pl_jget(ae, side ? "rexpr" : "lexpr"), *b = pl_jget(ae, side ? "lexpr" : "rexpr");
        if (pl_is_kind(a, "ColumnRef", &x)) {
            cr = x;
            cn = b;
        }
    }
    const char *lit = NULL, *tn;
    if (!cr || !cn)
        return HS_OK;
    if ((tn = pl_cast_type(cn, &lit)) == NULL) {
        json_t *cb;
        if (!pl_is_kind(cn, "A_Const", &cb) || !pl_jget(cb, "sval"))
            return HS_OK;
        lit = pl_jstrv(pl_jget(cb, "sval"), "sval");
    } else if (strcmp(tn, "vector") != 0) {
        return HS_OK;
    }
    int64_t k, off = 0;
    bool null;
    if (!pl_is_kind(lc, "A_Const", NULL) || int_const(p, lc, "LIMIT", &k, &null) != HS_OK || null ||
        k <= 0 || k > 100000)
        return HS_OK;
    json_t *lo = pl_jget(sel, "limitOffset");
    if (lo && (!pl_is_kind(lo, "A_Const", NULL) || int_const(p, lo, "OFFSET", &off, &null) != HS_OK ||
               off < 0 || off > 100000))
        return HS_OK;
    fnode *f = fc->items[0];
    const char *names[8];
    int n = pl_colref_names(cr, names, 8);
    layer l = {f->ns, f->n_ns, 0};
    int col = n > 0 && names[n - 1] ? pl_layer_find(&l, names, n) : -1;
    if (col < 0)
        return HS_OK;
    const char *colname = f->ts.children[col].name;
    /* an index of the column with the operator's metric */
    char *js = NULL;
    hs_error e2 = {0};
    if (hs_table_list_indexes(f->t, &js, &e2) != HS_OK)
        return HS_OK;
    json_t *arr = hs_json_loads(js, 0, NULL);
    hs_string_free(js);
    bool found = false;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *c = pl_jstrv(v, "column"), *kind = pl_jstrv(v, "kind");
        const char *m = pl_jstrv(pl_jget(v, "params"), "metric");
        if (c && kind && !strcmp(c, colname) && (!strncmp(kind, "hnsw", 4) || !strncmp(kind, "ivf", 3)) &&
            !strcmp(m ? m : "l2", metric))
            found = true;
    }
    json_decref(arr);
    int dim = 0;
    float *q = found && lit ? parse_vec(lit, &dim) : NULL;
    if (!q)
        return HS_OK;
    hs_status st = pl_push_filters(p, fc, cs);
    int nc = f->ts.n_children, kc = 0;
    const char **cols = hs_calloc((size_t)nc + 1, sizeof *cols);
    int *idx = hs_calloc((size_t)nc + 1, sizeof *idx);
    if (st == HS_OK && (!cols || !idx))
        st = pl_nomem(p);
    for (int c = 0; st == HS_OK && c < nc; c++)
        if (pl_name_needed(p, f->ts.children[c].name) || pl_name_needed(p, f->ns[c].name)) {
            idx[kc] = c;
            cols[kc++] = f->ts.children[c].name;
        }
    if (st == HS_OK) {
        hs_scan_options so = f->so;
        so.columns = cols;
        so.n_columns = kc;
        so.filter = f->filt.len ? hs_buf_cstr(&f->filt) : NULL;
        hs_search_options vo = HS_SEARCH_OPTIONS_INIT;
        vo.column = colname;
        vo.query = q;
        vo.dim = dim;
        vo.k = (int)(k + off);
        vo.metric = metric;
        vo.ef_search = p->s->set.ef_search;
        vo.nprobe = p->s->set.probes;
        vo.distance_column = "_distance";
        st = xo_vsearch(p->ctx, f->t, &so, &vo, &out->op, p->err);
    }
    if (st == HS_OK) {
        out->n = out->op->schema.n_children;
        out->cols = hs_calloc((size_t)out->n + 1, sizeof *out->cols);
        if (!out->cols)
            st = pl_nomem(p);
        for (int c = 0; st == HS_OK && c < out->n; c++) {
            bool dist = c >= kc;
            out->cols[c].qual = hs_strdup(f->alias);
            out->cols[c].name = hs_strdup(dist ? "" : f->ns[idx[c]].name);
            out->cols[c].hidden = dist;
            if (!out->cols[c].qual || !out->cols[c].name)
                st = pl_nomem(p);
        }
    }
    /* rows whose vector is NULL have no distance and no place in the
     * index; an exact ORDER BY returns them last (NULLS LAST), so they are
     * added from a scan and the top-k above orders the union - read only
     * when the search found fewer than k + offset rows (otherwise none of
     * them can be among the first k + offset, and the scan would decode the
     * whole vector column to find out) */
    if (st == HS_OK) {
        hs_buf nf = {0};
        st = hs_buf_printf(&nf, "%s%s%s\"", f->filt.len ? "(" : "",
                           f->filt.len ? hs_buf_cstr(&f->filt) : "", f->filt.len ? ") AND " : "");
        for (const char *c = colname; st == HS_OK && *c; c++)
            st = *c == '"' ? hs_buf_puts(&nf, "\"\"") : hs_buf_append_byte(&nf, (uint8_t)*c);
        if (st == HS_OK)
            st = hs_buf_puts(&nf, "\" IS NULL");
        rel nulls = {0};
        if (st == HS_OK) {
            hs_scan_options so = f->so;
            so.columns = cols;
            so.n_columns = kc;
            so.filter = hs_buf_cstr(&nf);
            st = xo_scan(p->ctx, f->t, &so, &nulls.op, p->err);
        } else {
            st = pl_nomem(p);
        }
        hs_buf_free(&nf);
        if (st == HS_OK)
            st = pl_rel_name(&nulls, NULL, p->err);
        json_t *nd = st == HS_OK ? json_pack("{s:{s:{s:{s:b,s:i}},s:{s:[{s:{s:s}}],s:i,s:i},s:i}}",
                                             "TypeCast", "arg", "A_Const", "isnull", 1, "location",
                                             -1, "typeName", "names", "String", "sval", "float8",
                                             "typemod", -1, "location", -1, "location", -1)
                                 : NULL;
        int dc;
        if (st == HS_OK)
            st = nd ? pl_rel_add_expr(p, &nulls, nd, &dc) : pl_nomem(p);
        json_decref(nd);
        if (st == HS_OK) {
            xo_op *u;
            xo_op *vo = out->op, *no = nulls.op;
            out->op = nulls.op = NULL;
            st = xo_union_fill(vo, no, k + off, &u, p->err);
            out->op = st == HS_OK ? u : NULL;
        }
        pl_rel_clear(&nulls);
    }
    hs_free(cols);
    hs_free(idx);
    hs_free(q);
    if (st == HS_OK) {
        for (int c = 0; c < cs->n; c++)
            cs->a[c].used = true;
        *used = true;
    } else {
        pl_rel_clear(out);
    }
    return st;
}
