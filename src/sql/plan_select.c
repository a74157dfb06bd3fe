/*
 * sql/plan_select.c - one SELECT block after FROM and WHERE: result column names,
 * GROUP BY / aggregates / HAVING, the select list, DISTINCT, ORDER BY (sort
 * or top-k), LIMIT/OFFSET; set operations and VALUES; ORDER BY <distance>
 * LIMIT k as a VectorSearch.  Grouping sets are rewritten before a block is
 * planned (plan_grouping.c); window functions are planned by plan_window.c.
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

const char *pl_target_name(const json_t *rt)
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
/* LIMIT / OFFSET and ROWS / GROUPS frame offsets as an expression: evaluated
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
    bool lag = !strcmp(what, "lag/lead offset");
    if (strcmp(what, "LIMIT") && strcmp(what, "OFFSET") && strcmp(what, "ROWS") && strcmp(what, "GROUPS") && !lag)
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "%s must be an integer constant", what);
    if (lag && pl_walk(j, visit_var, NULL, 0))   /* a per-row offset (PostgreSQL has them) */
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "a lag/lead offset that reads columns is not supported");
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

hs_status pl_int_const(planner *p, const json_t *j, const char *what, int64_t *out, bool *null)
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
        HS_TRY(pl_int_const(p, g, "GROUP BY position", &k, &null));
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

hs_status pl_pv_agg_check(planner *p, const char *fname, const hs_field *at, int loc)
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
    int *avg_fit = hs_calloc((size_t)na + 1, sizeof *avg_fit); /* avg j: the scale its quotient
                                                                  * is rounded at, or 0 */
    char (*avg_names)[2][32] = hs_calloc((size_t)na + 1, sizeof *avg_names);
    int n_extra = 0;
    /* aggregate arguments bound so far (shared by equal ones) */
    const json_t **arg_json = hs_calloc((size_t)na + 1, sizeof *arg_json);
    bool *arg_nested = hs_calloc((size_t)na + 1, sizeof *arg_nested);
    int *arg_col = hs_calloc((size_t)na + 1, sizeof *arg_col);
    int n_args = 0;
    *key_of_col = hs_calloc((size_t)cur->n + 1, sizeof **key_of_col);
    hs_status st = ex && names && ag && avg_cnt && avg_fit && avg_names && *key_of_col && arg_json &&
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
                    st = pl_pv_agg_check(p, fname, ex_type(ex[ag[j].arg]), loc);
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
                if (pl_sort_dir(sb, &desc, &nf) != HS_OK) {
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
                /* the mean of 64-bit integers has up to 19 (20 unsigned)
                 * integer digits: at the division's usual scale 20 such a
                 * mean would need more than 38 digits, so it is rounded at
                 * 19 (18): PostgreSQL gives 0 to 4 decimals for means of
                 * 1e12 and more, and at most 20 significant digits */
                if (at->type == HS_TYPE_INT64 || at->type == HS_TYPE_UINT64)
                    avg_fit[j] = at->type == HS_TYPE_INT64 ? 19 : 18;
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
            else if (avg_fit[j])
                snprintf(txt, sizeof txt,
                         "CAST(%s\"%s\"%s / CAST(\"%s\" AS numeric(19,0)) AS numeric(38,%d))",
                         sf->type == HS_TYPE_DECIMAL128 ? "" : "CAST(", avg_names[j][0],
                         sf->type == HS_TYPE_DECIMAL128 ? "" : " AS numeric(38,0))", avg_names[j][1],
                         avg_fit[j]);
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
    hs_free(avg_fit);
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


hs_status pl_sort_dir(const json_t *sb, bool *desc, bool *nf)
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
        HS_TRY(pl_int_const(p, lc, "LIMIT", &limit, &null));
        if (null)
            limit = -1;
        else if (limit < 0)
            return pl_fail(p, HS_INVALID, "2201W", pl_node_loc(lc), "LIMIT must not be negative");
    }
    if (lo) {
        HS_TRY(pl_int_const(p, lo, "OFFSET", &offset, &null));
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
        st = pl_expand_grouping_sets(p, sel, &expanded);
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
    /* window calls of WHERE / HAVING, also in the operand of x IN
     * (subquery) (transformWindowFuncCall) */
    static const struct { const char *key, *what; } no_win[] = {
        {"whereClause", "WHERE"}, {"havingClause", "HAVING"},
    };
    for (size_t i = 0; i < sizeof no_win / sizeof no_win[0]; i++) {
        json_t *calls = json_array();
        if (!calls)
            return pl_nomem(p);
        pl_collect_windows(pl_jget(sel, no_win[i].key), calls, 0);
        int loc = json_array_size(calls) ? sq_loc(pl_jget(json_array_get(calls, 0), "FuncCall")) : -2;
        json_decref(calls);
        if (loc != -2)
            return pl_fail(p, HS_INVALID, "42P20", loc, "window functions are not allowed in %s",
                           no_win[i].what);
    }
    HS_TRY(pl_resolve_windows(p, sel));
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
        st = pl_apply_operand_windows(p, &cur, both, 2, &m, grouped ? &pre : NULL, key_of_col);
        if (st == HS_OK)
            st = pl_attach_scalars(p, &cur, both, 2, &m, grouped);
        p->ungrouped = saved_ug;
        p->ungrouped_key = saved_key;
        for (int i = 0; i < 2 && st == HS_OK; i++)
            st = pl_numeric_window_avgs(p, &cur, both[i], &m, grouped ? &pre : NULL, key_of_col, 0);
        if (st == HS_OK)
            st = pl_apply_windows(p, &cur, both, 2, &m, grouped ? &pre : NULL, key_of_col);
    }
    /* DISTINCT ON (e...): row_number() OVER (PARTITION BY e... ORDER BY the
     * query's ORDER BY) = 1; PostgreSQL requires ORDER BY to start with e... */
    json_t *don = NULL;
    if (st == HS_OK && distinct_on) {
        /* transformDistinctOnClause: the leading ORDER BY items, until
         * every e is met, must be among the e... (in any order); no ORDER
         * BY, or one that ends first, is fine (any row of a group) */
        size_t nd = json_array_size(distinct_on), met = 0;
        for (size_t i = 0; met < nd && i < json_array_size(sortc) && st == HS_OK; i++) {
            json_t *node = pl_jget(pl_jget(json_array_get(sortc, i), "SortBy"), "node");
            bool in = false;
            for (size_t d = 0; d < nd && !in; d++)
                in = pl_jeq(node, json_array_get(distinct_on, d));
            bool again = false;
            for (size_t k = 0; k < i && in && !again; k++)
                again = pl_jeq(node, pl_jget(pl_jget(json_array_get(sortc, k), "SortBy"), "node"));
            if (!in)
                st = pl_fail(p, HS_INVALID, "42P10", pl_first_loc(distinct_on, 0),
                          "SELECT DISTINCT ON expressions must match initial ORDER BY expressions");
            met += !again;
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
            st = pl_apply_windows(p, &cur, &don, 1, &m, grouped ? &pre : NULL, key_of_col);
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
        const char *nm = pl_target_name(rt);
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
        if (pl_sort_dir(sb, &k->desc, &k->nulls_first) != HS_OK) {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            break;
        }
        k->col = -1;
        if (pl_is_kind(node, "A_Const", &cb) && pl_jget(cb, "ival")) {
            int64_t pos;
            bool null;
            st = pl_int_const(p, node, "ORDER BY position", &pos, &null);
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
        if (pl_sort_dir(sb, &k->desc, &k->nulls_first) != HS_OK) {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            break;
        }
        k->col = -1;
        if (pl_is_kind(node, "A_Const", &cb) && pl_jget(cb, "ival")) {
            int64_t pos;
            bool null;
            st = pl_int_const(p, node, "ORDER BY position", &pos, &null);
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
    if (!pl_is_kind(lc, "A_Const", NULL) || pl_int_const(p, lc, "LIMIT", &k, &null) != HS_OK || null ||
        k <= 0 || k > 100000)
        return HS_OK;
    json_t *lo = pl_jget(sel, "limitOffset");
    if (lo && (!pl_is_kind(lo, "A_Const", NULL) || pl_int_const(p, lo, "OFFSET", &off, &null) != HS_OK ||
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
