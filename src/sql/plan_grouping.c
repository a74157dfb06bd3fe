/*
 * sql/plan_grouping.c - GROUP BY GROUPING SETS / ROLLUP / CUBE and GROUPING()
 * as a rewrite of the parse tree, before the SELECT block is planned
 * (pl_expand_grouping_sets, called by pl_plan_select in plan_select.c).
 *
 *   GROUP BY ROLLUP(a, b)     the sets (a, b), (a), (); several items
 *                             multiply (ROLLUP(a), CUBE(b)); GROUP BY
 *                             DISTINCT drops sets equal as sets
 *   one set                   becomes one grouped SELECT in which the group
 *                             expressions outside the set read NULL (not
 *                             inside aggregate arguments; in subqueries
 *                             through pl_sub_null_absent) and GROUPING(x)
 *                             its constant for the set
 *   several sets              a UNION ALL of those SELECTs; ORDER BY,
 *                             LIMIT / OFFSET and DISTINCT apply to the
 *                             union: when ORDER BY reads expressions that are
 *                             not outputs, DISTINCT or window functions are
 *                             present, the union is wrapped as
 *                             SELECT <outputs> FROM (<union>) __hs_gs ...,
 *                             each branch yielding the outputs as
 *                             __hs_gs_c<i>, the sort expressions as
 *                             __hs_gs_s<k> and, for window functions (which
 *                             read every set's rows, gw_plan), the
 *                             aggregates / GROUPING() / keys they read as
 *                             __hs_gw_a<i> / _f<i> / _k<i>
 *   no sets, GROUPING()       GROUPING(x) replaced by its constant (0)
 *
 * The output is a new SelectStmt body; nothing here binds columns.
 */
#include "sql/plan_int.h"

/* ---- GROUPING SETS / ROLLUP / CUBE ----
 * The query becomes a UNION ALL of one grouped query per set, in which the
 * group expressions outside the set read as NULL (not inside aggregate
 * arguments); ORDER BY and LIMIT apply to the union (see the header). */

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
            hs_status st = pl_int_const(p, node, "ORDER BY position", &k, &null);
            if (st != HS_OK) {
                json_decref(sb);
                return st;
            }
            if (k < 1 || k > (int64_t)json_array_size(tl)) {
                int loc = pl_node_loc(node);    /* node lives in sb */
                json_decref(sb);
                return pl_fail(p, HS_INVALID, "42P10", loc,
                               "ORDER BY position %lld is not in select list", (long long)k);
            }
            pos = (int)k - 1;
        } else if (pl_is_kind(node, "ColumnRef", &cb) && json_array_size(pl_jget(cb, "fields")) == 1) {
            const char *nm = sq_str(json_array_get(pl_jget(cb, "fields"), 0));
            for (size_t t = 0; nm && pos < 0 && t < json_array_size(tl); t++)
                if (!strcmp(pl_target_name(pl_jget(json_array_get(tl, t), "ResTarget")), nm))
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

static bool has_window(const json_t *j)
{
    json_t *calls = json_array();
    pl_collect_windows(j, calls, 0);
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
hs_status pl_expand_grouping_sets(planner *p, const json_t *sel, json_t **out)
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
    bool distinct_on = distinct && !(json_array_size(dc) == 1 && json_object_size(json_array_get(dc, 0)) == 0);
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
        pl_collect_windows(tl, calls, 0);
        pl_collect_windows(pl_jget(sel, "sortClause"), calls, 0);
        if (distinct_on)
            pl_collect_windows(dc, calls, 0);
        wins = json_array_size(calls) > 0;
        json_decref(calls);
    }
    /* DISTINCT ON (e...) over the union: each e that is the ORDER BY item
     * at its position reads that item's column, any other one a column
     * __hs_gs_s<k> of its own (the wrapping block then checks the ORDER BY
     * match, 42P10, as for any DISTINCT ON) */
    json_t *don = NULL;
    if (st == HS_OK && distinct_on && wins)
        st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(dc, 0),
                     "SELECT DISTINCT ON with window functions and several grouping sets is not supported");
    if (st == HS_OK && distinct_on && !(don = json_array()))
        st = pl_nomem(p);
    for (size_t d = 0; st == HS_OK && distinct_on && d < json_array_size(dc); d++) {
        const json_t *e = json_array_get(dc, d);
        const json_t *ob = pl_jget(pl_jget(json_array_get(pl_jget(sel, "sortClause"), d), "SortBy"), "node");
        json_t *node;
        if (ob && pl_jeq(ob, e)) {
            node = json_deep_copy(pl_jget(pl_jget(json_array_get(sort, d), "SortBy"), "node"));
        } else {
            char ref[32];
            snprintf(ref, sizeof ref, "__hs_gs_s%zu", json_array_size(extra));
            json_array_append(extra, (json_t *)e);
            node = mk_cref(ref);
        }
        if (!node || json_array_append_new(don, node) != 0)
            st = pl_nomem(p);
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
                    json_object_set_new(rt, "name", json_string(pl_target_name(rt)));
                else if (rt && !pl_jstrv(rt, "name") && in_list(all, pl_jget(rt, "val")))
                    json_object_set_new(rt, "name", json_string(pl_target_name(rt)));
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
                                                 pl_target_name(pl_jget(it2, "ResTarget")), "val",
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
        if (outer && don)
            json_object_set(outer, "distinctClause", don);
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
    json_decref(don);
    return st;
}
