/*
 * sql/plan_rewrite.c - rewrites of the parse tree before binding: constant
 * date/timestamp +- interval folded to literals, variance and standard
 * deviation in terms of sum and count (float8, or numeric for exact
 * arguments once their type is known: pl_stats_numeric).
 * See plan_int.h for how the planner files divide the work.
 */
#include "sql/plan_int.h"

/* ------------------------------------------------------------------ */
/* constant date/timestamp +- interval (folded before binding)          */

const char *pl_cast_type(const json_t *j, const char **val)
{
    json_t *b, *cb;
    if (!pl_is_kind(j, "TypeCast", &b) || !pl_is_kind(pl_jget(b, "arg"), "A_Const", &cb) || !pl_jget(cb, "sval"))
        return NULL;
    *val = pl_jstrv(pl_jget(cb, "sval"), "sval");
    json_t *names = pl_jget(pl_jget(b, "typeName"), "names");
    return *val ? sq_str(json_array_get(names, json_array_size(names) - 1)) : NULL;
}

/* The field qualifier of interval '90' day (PostgreSQL's INTERVAL_MASK
 * bits; 0 for none or the full range, 0x7FFF). */
static int interval_mask(const json_t *tc)
{
    json_t *mods = pl_jget(pl_jget(pl_jget(tc, "TypeCast"), "typeName"), "typmods");
    json_t *iv = pl_jget(pl_jget(pl_jget(json_array_get(mods, 0), "A_Const"), "ival"), "ival");
    long long mask = json_is_integer(iv) ? json_integer_value(iv) : 0;
    return mask > 0 && mask < 0x7FFF ? (int)mask : 0;
}

/* date/timestamp literal +- interval literal -> a timestamp literal. */
static json_t *fold_interval(const json_t *j)
{
    json_t *b;
    if (!pl_is_kind(j, "A_Expr", &b) || strcmp(pl_jstrv(b, "kind") ? pl_jstrv(b, "kind") : "", "AEXPR_OP"))
        return NULL;
    const char *op = sq_str(json_array_get(pl_jget(b, "name"), 0));
    if (!op || (strcmp(op, "+") && strcmp(op, "-")))
        return NULL;
    json_t *l = pl_jget(b, "lexpr"), *r = pl_jget(b, "rexpr");
    const char *lv = NULL, *rv = NULL;
    const char *lt = pl_cast_type(l, &lv), *rt = pl_cast_type(r, &rv);
    if (!lt || !rt)
        return NULL;
    if (!strcmp(lt, "interval") && !strcmp(op, "+")) {
        json_t *t = l;
        const char *tv = lv, *tt = lt;
        l = r, lv = rv, lt = rt;
        r = t, rv = tv, rt = tt;
    }
    if (strcmp(rt, "interval") || (strcmp(lt, "date") && strcmp(lt, "timestamp")))
        return NULL;
    /* the expression engine's reading of both literals and its arithmetic
     * (expr_interval.c); what it does not read is left to the binder */
    char buf[64];
    if (!ex_ts_interval_text(lv, !strcmp(lt, "date"), rv, interval_mask(r), !strcmp(op, "-") ? -1 : 1,
                             buf, sizeof buf))
        return NULL;
    int loc = sq_loc(b);
    return json_pack("{s:{s:{s:{s:{s:s},s:i}},s:{s:[{s:{s:s}}],s:i,s:i},s:i,s:b}}", "TypeCast",
                     "arg", "A_Const", "sval", "sval", buf, "location", loc, "typeName", "names",
                     "String", "sval", "timestamp", "typemod", -1, "location", loc, "location", loc,
                     "hs_folded", 1);
}

/* ------------------------------------------------------------------ */
/* variance and standard deviation in terms of sum and count            */

/* name(arg) with like's DISTINCT and FILTER; arg is borrowed (the call
 * takes a reference of its own). */
static json_t *mk_fn(const char *name, json_t *arg, const json_t *like)
{
    json_t *f = json_pack("{s:{s:[{s:{s:s}}],s:[O],s:i}}", "FuncCall", "funcname", "String", "sval",
                          name, "args", arg, "location", -1);
    json_t *b = f ? pl_jget(f, "FuncCall") : NULL;
    if (b && json_is_true(pl_jget(like, "agg_distinct")))
        json_object_set_new(b, "agg_distinct", json_true());
    if (b && pl_jget(like, "agg_filter"))
        json_object_set(b, "agg_filter", pl_jget(like, "agg_filter"));
    return f;
}

json_t *pl_mk_op(const char *op, json_t *l, json_t *r)
{
    return json_pack("{s:{s:s,s:[{s:{s:s}}],s:o,s:o,s:i}}", "A_Expr", "kind", "AEXPR_OP", "name",
                     "String", "sval", op, "lexpr", l, "rexpr", r, "location", -1);
}

json_t *pl_mk_int(int v)
{
    return json_pack("{s:{s:{s:i},s:i}}", "A_Const", "ival", "ival", v, "location", -1);
}

/* sum(x * x) as like's call takes it (FILTER kept); with DISTINCT, the
 * squares of the distinct x: sum(DISTINCT x * x) alone would count one
 * square for x and -x, so the squares of x >= 0 and of x < 0 are summed
 * apart (squaring is one-to-one on each side):
 *   COALESCE(sum(DISTINCT CASE WHEN x >= 0 THEN x * x END), 0) +
 *   COALESCE(sum(DISTINCT CASE WHEN x < 0 THEN x * x END), 0)
 * (a group of NULLs only has count 0, which makes the result NULL). */
static json_t *sum_squares(json_t *x, const json_t *like)
{
    if (!json_is_true(pl_jget(like, "agg_distinct"))) {
        json_t *sq = pl_mk_op("*", json_incref(x), json_incref(x));
        json_t *sum = sq ? mk_fn("sum", sq, like) : NULL;
        json_decref(sq);
        return sum;
    }
    json_t *side[2];
    for (int i = 0; i < 2; i++) {
        json_t *when = pl_mk_op(i ? "<" : ">=", json_incref(x), pl_mk_int(0));
        json_t *sq = pl_mk_op("*", json_incref(x), json_incref(x));
        json_t *cs = json_pack("{s:{s:[{s:{s:o,s:o,s:i}}],s:i}}", "CaseExpr", "args", "CaseWhen", "expr",
                               when, "result", sq, "location", -1, "location", -1);
        json_t *sum = cs ? mk_fn("sum", cs, like) : NULL;
        json_decref(cs);
        side[i] = json_pack("{s:{s:[o,o],s:i}}", "CoalesceExpr", "args", sum, pl_mk_int(0), "location", -1);
    }
    return pl_mk_op("+", side[0], side[1]);
}

/* var_samp/var_pop/variance/stddev*(x) as
 *   v = (sum(x*x) - sum(x)*sum(x)/count(x)) / NULLIF(count(x) - k, 0)
 * over x::float8 (k = 1 for the sample forms), clamped at 0, sqrt for
 * stddev: PostgreSQL's definitions (NULL for no rows, and for one row with
 * the sample forms). */
static json_t *stat_agg(const json_t *node)
{
    json_t *b;
    if (!pl_is_kind(node, "FuncCall", &b) || pl_jget(b, "over") || json_array_size(pl_jget(b, "args")) != 1)
        return NULL;
    const char *nm = pl_func_name(b);
    if (!nm)
        return NULL;
    bool sample, root;
    if (!strcmp(nm, "var_samp") || !strcmp(nm, "variance"))
        sample = true, root = false;
    else if (!strcmp(nm, "var_pop"))
        sample = false, root = false;
    else if (!strcmp(nm, "stddev_samp") || !strcmp(nm, "stddev"))
        sample = true, root = true;
    else if (!strcmp(nm, "stddev_pop"))
        sample = false, root = true;
    else
        return NULL;
    json_t *x = json_array_get(pl_jget(b, "args"), 0);
    json_t *f8 = json_pack("{s:[{s:{s:s}}],s:i,s:i}", "names", "String", "sval", "float8", "typemod",
                           -1, "location", -1);
    json_t *xf = json_pack("{s:{s:O,s:o,s:i,s:b}}", "TypeCast", "arg", x, "typeName", f8, "location", -1,
                           "hs_stat_arg", 1);
    if (!xf)
        return NULL;
    json_t *sxx = sum_squares(xf, b);
    json_t *sx = mk_fn("sum", xf, b);
    json_t *n1 = mk_fn("count", xf, b), *n2 = mk_fn("count", xf, b);
    json_t *num = pl_mk_op("-", sxx, pl_mk_op("/", pl_mk_op("*", json_incref(sx), sx), n1));
    json_t *den = json_pack("{s:{s:s,s:[{s:{s:s}}],s:o,s:o,s:i}}", "A_Expr", "kind", "AEXPR_NULLIF",
                            "name", "String", "sval", "=", "lexpr",
                            sample ? pl_mk_op("-", n2, pl_mk_int(1)) : n2, "rexpr", pl_mk_int(0),
                            "location", -1);
    json_t *v = pl_mk_op("/", num, den);
    /* CASE WHEN v < 0 THEN 0 ELSE v END (rounding can leave -1e-17) */
    json_t *clamped = json_pack("{s:{s:[{s:{s:o,s:o,s:i}}],s:o,s:i}}", "CaseExpr", "args", "CaseWhen",
                                "expr", pl_mk_op("<", json_incref(v), pl_mk_int(0)), "result", pl_mk_int(0),
                                "location", -1, "defresult", v, "location", -1);
    json_decref(xf);
    if (!clamped)
        return NULL;
    json_t *out = !root ? clamped
                : json_pack("{s:{s:[{s:{s:s}}],s:[o],s:i}}", "FuncCall", "funcname", "String", "sval",
                            "sqrt", "args", clamped, "location", sq_loc(b));
    const char *k;
    json_t *ob;
    if (out && sq_node(out, &k, &ob)) {
        json_object_set_new(ob, "hs_name", json_string(nm));   /* the result column's name */
        json_object_set_new(ob, "hs_stat", json_string(nm));  /* pl_stats_numeric */
    }
    return out;
}

/* ---- variance and stddev of integers and numerics: numeric ----
 * PostgreSQL's var_*, variance, stddev* of smallint, integer, bigint and
 * numeric are numeric (numeric_stddev_internal): N = count(x), S = sum(x),
 * Q = sum(x * x) in exact numerics, v = (N * Q - S * S) / (N * (N - 1))
 * (N * N for the _pop forms) in one division rounded at select_div_scale,
 * 0 when the numerator is <= 0, NULL for N = 0 (N <= 1 for the sample
 * forms), stddev the square root of v rounded at the same scale.  The
 * rewrite above cannot see types, so a SELECT block, once its FROM and
 * WHERE are planned, binds each rewritten call's argument and replaces the
 * float8 form of an exact one by
 *   hs_numeric_{var,stddev}_{samp,pop}(count(x), sum(x), sum(x' * x'), S)
 * with x' = x::numeric(19, s) (expr_num.c: the arithmetic in 256 bits)
 * and S the result's scale: the column holds one scale where PostgreSQL's
 * numeric has one per value, so S is the largest that every value of x's
 * type fits (a variance of bigint: 0, of integer: 17, of numeric(12,3):
 * 19; a stddev of bigint: 18, of integer: 27), PostgreSQL's value being
 * rounded there, half away from zero, where it has more decimals. */

static pl_walk_res visit_stat_arg(const json_t *j, void *ctx)
{
    json_t *b;
    if (pl_is_kind(j, "TypeCast", &b) && json_is_true(pl_jget(b, "hs_stat_arg"))) {
        *(const json_t **)ctx = pl_jget(b, "arg");
        return PL_STOP;
    }
    return PL_DESCEND;
}

static pl_walk_res visit_count(const json_t *j, void *ctx)
{
    json_t *b;
    if (pl_is_kind(j, "FuncCall", &b) && pl_func_name(b) && !strcmp(pl_func_name(b), "count")) {
        *(const json_t **)ctx = b;
        return PL_STOP;
    }
    return PL_DESCEND;
}

static bool exact_type(hs_type t)
{
    return t == HS_TYPE_INT8 || t == HS_TYPE_INT16 || t == HS_TYPE_INT32 || t == HS_TYPE_INT64 ||
           t == HS_TYPE_UINT8 || t == HS_TYPE_UINT16 || t == HS_TYPE_UINT32 ||
           t == HS_TYPE_UINT64 || t == HS_TYPE_DECIMAL128;
}

/* The numeric form of rewritten call node (whose body has hs_stat = nm),
 * or NULL: the argument is not exact (or does not bind here). */
static json_t *numeric_stat(planner *p, const rel *cur, const json_t *node, const char *nm, hs_status *st)
{
    const json_t *x = NULL, *like = NULL;
    pl_walk(node, visit_stat_arg, &x, 0);
    pl_walk(node, visit_count, &like, 0);
    if (!x || !like)
        return NULL;
    json_t *probe = json_array();
    pl_collect_aggs(x, probe, 0);
    pl_collect_sublinks(x, probe, 0);
    bool plain = probe && json_array_size(probe) == 0;
    json_decref(probe);
    if (!plain)
        return NULL;
    scope sc;
    pl_scope_rel(&sc, p, cur);
    ex_expr *e = NULL;
    hs_error saved = *p->err;
    if (pl_bind_in(&sc, x, false, &e) != HS_OK) {
        *p->err = saved;   /* the block's own binding reports it */
        return NULL;
    }
    hs_type t = ex_type(e)->type;
    int scale = t == HS_TYPE_DECIMAL128 ? ex_type(e)->scale : 0;
    int digits = t == HS_TYPE_DECIMAL128 ? ex_type(e)->precision - scale
               : t == HS_TYPE_INT8 || t == HS_TYPE_UINT8 ? 3
               : t == HS_TYPE_INT16 || t == HS_TYPE_UINT16 ? 5
               : t == HS_TYPE_INT32 || t == HS_TYPE_UINT32 ? 10 : 19 + (t == HS_TYPE_UINT64);
    ex_free(e);
    if (t == HS_TYPE_STRING || t == HS_TYPE_BOOL) {
        *st = pl_fail(p, HS_NOT_FOUND, "42883", pl_node_loc(node), "function %s(%s) does not exist", nm,
                      t == HS_TYPE_STRING ? "text" : "boolean");
        return NULL;
    }
    if (!exact_type(t) || scale > 9)
        return NULL;   /* floats; numerics of more than 9 decimals (x * x needs 2 s): float8 */
    bool sample = !strcmp(nm, "var_samp") || !strcmp(nm, "variance") || !strcmp(nm, "stddev_samp") ||
                  !strcmp(nm, "stddev");
    bool root = !strncmp(nm, "stddev", 6);
    /* x * x exact: x as numeric(19, s) (a square of more digits does not
     * fit 38), the count and the sums as they come */
    hs_field d19;
    hs_field_init(&d19, "", HS_TYPE_DECIMAL128, true);
    d19.precision = 19;
    d19.scale = scale;
    json_t *xn = pl_cast_json((json_t *)x, &d19);
    json_t *n = mk_fn("count", (json_t *)x, like), *sx = mk_fn("sum", (json_t *)x, like);
    json_t *sxx = xn ? sum_squares(xn, like) : NULL;
    char fname[40];
    snprintf(fname, sizeof fname, "hs_numeric_%s_%s", root ? "stddev" : "var", sample ? "samp" : "pop");
    /* the result's scale: the most that leaves room for every value of
     * x's type (x' has at most 19 - s integer digits: a variance at most
     * 2 (19 - s) + 1 of them, a standard deviation 19 - s + 1), and at
     * least 2 s, the scale PostgreSQL never goes below */
    if (digits > 19 - scale)
        digits = 19 - scale;
    int S = 38 - (root ? digits + 1 : 2 * digits + 1);
    if (S < 2 * scale)
        S = 2 * scale;
    if (S > 38)
        S = 38;
    json_t *out = n && sx && sxx
        ? json_pack("{s:{s:[{s:{s:s}}],s:[o,o,o,o],s:i,s:s}}", "FuncCall", "funcname", "String", "sval",
                    fname, "args", n, sx, sxx, pl_mk_int(S), "location", pl_node_loc(node), "hs_name", nm)
        : NULL;
    hs_field_clear(&d19);
    json_decref(xn);
    return out;
}

/* Replaces rewritten variance/stddev calls of exact arguments under j (not
 * inside subqueries: their blocks do their own). */
static hs_status stats_numeric(planner *p, const rel *cur, json_t *j, int depth)
{
    if (depth > 400 || !j)
        return HS_OK;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            const char *vk;
            json_t *vb;
            if (!strcmp(k, "SubLink"))
                continue;
            if (json_is_object(v) && sq_node(v, &vk, &vb) && json_is_string(pl_jget(vb, "hs_stat"))) {
                hs_status st = HS_OK;
                json_t *r = numeric_stat(p, cur, v, json_string_value(pl_jget(vb, "hs_stat")), &st);
                HS_TRY(st);
                if (r) {
                    json_object_set_new(j, k, r);
                    continue;
                }
            }
            HS_TRY(stats_numeric(p, cur, v, depth + 1));
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i), *vb;
            const char *vk;
            if (json_is_object(v) && sq_node(v, &vk, &vb) && json_is_string(pl_jget(vb, "hs_stat"))) {
                hs_status st = HS_OK;
                json_t *r = numeric_stat(p, cur, v, json_string_value(pl_jget(vb, "hs_stat")), &st);
                HS_TRY(st);
                if (r) {
                    json_array_set_new(j, i, r);
                    continue;
                }
            }
            HS_TRY(stats_numeric(p, cur, v, depth + 1));
        }
    }
    return HS_OK;
}

hs_status pl_stats_numeric(planner *p, const rel *cur, const json_t *sel)
{
    static const char *const clauses[] = {"targetList", "havingClause", "sortClause"};
    for (int i = 0; i < 3; i++)
        HS_TRY(stats_numeric(p, cur, pl_jget(sel, clauses[i]), 0));
    return HS_OK;
}

/* GREATEST(a, b, ...) / LEAST(...) as CASE (PostgreSQL: NULL arguments are
 * ignored; NULL only when all are NULL), folded pairwise from the left. */
static json_t *minmax_expr(const json_t *node)
{
    json_t *b;
    if (!pl_is_kind(node, "MinMaxExpr", &b))
        return NULL;
    const char *op = pl_jstrv(b, "op");
    json_t *args = pl_jget(b, "args");
    size_t n = json_array_size(args);
    if (!op || n == 0)
        return NULL;
    const char *cmp = !strcmp(op, "IS_GREATEST") ? ">=" : "<=";
    json_t *acc = json_incref(json_array_get(args, 0));
    for (size_t i = 1; acc && i < n; i++) {
        json_t *x = json_array_get(args, i);
        json_t *nt_a = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", acc, "nulltesttype",
                                 "IS_NULL", "location", -1);
        json_t *nt_x = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", x, "nulltesttype",
                                 "IS_NULL", "location", -1);
        json_t *ge = pl_mk_op(cmp, json_incref(acc), json_incref(x));
        json_t *c = json_pack("{s:{s:[{s:{s:o,s:O,s:i}},{s:{s:o,s:O,s:i}},{s:{s:o,s:O,s:i}}],s:O,s:i}}",
                              "CaseExpr", "args", "CaseWhen", "expr", nt_a, "result", x, "location", -1,
                              "CaseWhen", "expr", nt_x, "result", acc, "location", -1, "CaseWhen",
                              "expr", ge, "result", acc, "location", -1, "defresult", x, "location",
                              sq_loc(b));
        json_decref(acc);
        acc = c;
    }
    if (acc && n > 1) {
        const char *k;
        json_t *ob;
        if (sq_node(acc, &k, &ob))
            json_object_set_new(ob, "hs_name", json_string(!strcmp(op, "IS_GREATEST") ? "greatest" : "least"));
    }
    return acc;
}

void  pl_rewrite_stats(json_t *j, int depth)
{
    if (depth > 2000)
        return;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            pl_rewrite_stats(v, depth + 1);
            json_t *r = stat_agg(v);
            if (!r)
                r = minmax_expr(v);
            if (r)
                json_object_set_new(j, k, r);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            pl_rewrite_stats(v, depth + 1);
            json_t *r = stat_agg(v);
            if (!r)
                r = minmax_expr(v);
            if (r)
                json_array_set_new(j, i, r);
        }
    }
}

void  pl_fold_intervals(json_t *j, int depth)
{
    if (depth > 2000)
        return;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            pl_fold_intervals(v, depth + 1);
            json_t *f = fold_interval(v);
            if (f)
                json_object_set_new(j, k, f);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            pl_fold_intervals(v, depth + 1);
            json_t *f = fold_interval(v);
            if (f)
                json_array_set_new(j, i, f);
        }
    }
}
