/*
 * sql/plan_lateral.c - LATERAL subqueries in FROM, decorrelated into joins.
 *
 * A LATERAL subquery whose references to the FROM items before it are
 * equalities `inner = outer` among the conjuncts of its WHERE becomes an
 * ordinary subquery joined on those keys:
 *
 *   d JOIN LATERAL (SELECT x FROM e WHERE e.k = d.k AND c ORDER BY o LIMIT n OFFSET m) l ON q
 * =>
 *   d JOIN (SELECT x, e.k AS hs_lat_k1,
 *                  row_number() OVER (PARTITION BY e.k ORDER BY o) AS hs_lat_rn
 *           FROM e WHERE c) l
 *     ON q AND l.hs_lat_k1 = d.k AND l.hs_lat_rn > m AND l.hs_lat_rn <= m + n
 *
 * (the top-k-per-group form; without LIMIT/OFFSET there is no row number
 * and the ORDER BY, which cannot change a join's rows, is dropped).  NULL
 * keys match nothing on either side, as the correlated equality does.
 * CROSS JOIN LATERAL and `, LATERAL (...)` are inner joins (the conditions
 * go to ON or to WHERE), LEFT JOIN LATERAL a left join.
 *
 * Every other correlated LATERAL subquery — outer references anywhere but
 * such equalities (select list, ORDER BY, FROM functions, its own
 * subqueries), aggregates, GROUP BY, HAVING, DISTINCT, set operations,
 * window functions or CTEs in it — is marked hs_lateral_apply and runs per
 * outer row (plan_apply.c pl_apply_lateral, reached through
 * plan_srf.c's lateral items).  Refused with 0A000: ORDER BY positions,
 * non-constant LIMIT/OFFSET in the join form, and `*` over the decorrelated
 * subquery in the outer select list (it would show the key columns).  Outer columns must be qualified (`d.k`): an unqualified name
 * is the subquery's own, as PostgreSQL resolves it first.
 *
 * The rewrite edits the statement's parse tree in place, once (the LATERAL
 * flag is cleared): a prepared statement executed again plans the result.
 */
#include "sql/plan_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define LAT_MAX_KEYS 16

typedef struct lat_ctx {
    planner *p;
    const char *inner[64];  /* names (aliases or relation names) of the subquery's FROM items */
    int n_inner;
} lat_ctx;

/* 0: no column references; 1: inner only; 2: outer only; 3: both. */
typedef struct refs_ctx {
    lat_ctx *c;
    int r;
} refs_ctx;

static pl_walk_res visit_ref(const json_t *j, void *ctx)
{
    refs_ctx *rc = ctx;
    json_t *cr = json_object_get(j, "ColumnRef");
    if (cr && json_object_size(j) == 1) {
        json_t *f = pl_jget(cr, "fields");
        if (json_array_size(f) < 2) {
            rc->r |= 1; /* unqualified (or *): the subquery's own */
            return PL_SKIP;
        }
        const char *q = sq_str(json_array_get(f, json_array_size(f) - 2));
        for (int i = 0; q && i < rc->c->n_inner; i++)
            if (!strcmp(q, rc->c->inner[i])) {
                rc->r |= 1;
                return PL_SKIP;
            }
        rc->r |= 2;
        return PL_SKIP;
    }
    return json_object_get(j, "SubLink") ? PL_SKIP : PL_DESCEND; /* SubLinks: sublink_outer */
}

static int refs(lat_ctx *c, const json_t *j, int depth)
{
    refs_ctx rc = {c, 0};
    pl_walk(j, visit_ref, &rc, depth);
    return rc.r;
}

/* Whether a SubLink under j mentions a qualified name that is not one of
 * the inner names (conservative: the subquery's own FROM names are not
 * known here, so any qualifier outside the inner list counts). */
static pl_walk_res visit_sublink_outer(const json_t *j, void *ctx)
{
    lat_ctx *c = ctx;
    json_t *sl = json_object_get(j, "SubLink");
    if (!sl || json_object_size(j) != 1)
        return PL_DESCEND;
    if ((refs(c, pl_jget(sl, "subselect"), 0) & 2) || (refs(c, pl_jget(sl, "testexpr"), 0) & 2))
        return PL_STOP;
    return PL_SKIP;
}

static bool sublink_outer(lat_ctx *c, const json_t *j, int depth)
{
    return pl_walk(j, visit_sublink_outer, c, depth);
}

static pl_walk_res visit_key(const json_t *j, void *key)
{
    return json_object_get(j, key) ? PL_STOP : PL_DESCEND;
}

static bool has_key(const json_t *j, const char *key, int depth)
{
    return pl_walk(j, visit_key, (void *)key, depth);
}

/* The FROM names of the subquery (top level items and joins in it). */
static void inner_names(lat_ctx *c, const json_t *item, int depth)
{
    json_t *b;
    if (depth > 50 || c->n_inner >= 64)
        return;
    if (pl_is_kind(item, "RangeVar", &b)) {
        json_t *al = pl_jget(b, "alias");
        const char *n = al ? pl_jstrv(al, "aliasname") : pl_jstrv(b, "relname");
        if (n)
            c->inner[c->n_inner++] = n;
    } else if (pl_is_kind(item, "RangeSubselect", &b) || pl_is_kind(item, "RangeFunction", &b)) {
        json_t *al = pl_jget(b, "alias");
        if (al && pl_jstrv(al, "aliasname"))
            c->inner[c->n_inner++] = pl_jstrv(al, "aliasname");
    } else if (pl_is_kind(item, "JoinExpr", &b)) {
        inner_names(c, pl_jget(b, "larg"), depth + 1);
        inner_names(c, pl_jget(b, "rarg"), depth + 1);
        json_t *al = pl_jget(b, "alias");
        if (al && pl_jstrv(al, "aliasname") && c->n_inner < 64)
            c->inner[c->n_inner++] = pl_jstrv(al, "aliasname");
    }
}

static json_t *colref2(const char *q, const char *n)
{
    return json_pack("{s:{s:[{s:{s:s}},{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", q,
                     "String", "sval", n, "location", -1);
}

static json_t *op2(const char *op, json_t *l, json_t *r)
{
    return json_pack("{s:{s:s,s:[{s:{s:s}}],s:o,s:o,s:i}}", "A_Expr", "kind", "AEXPR_OP", "name",
                     "String", "sval", op, "lexpr", l, "rexpr", r, "location", -1);
}

static json_t *iconst(long long v)
{
    return json_pack("{s:{s:{s:I},s:i}}", "A_Const", "ival", "ival", (json_int_t)v, "location", -1);
}

/* Appends conjunct x to the AND list *acc (creating it). */
static bool and_add(json_t **acc, json_t *x)
{
    if (!x)
        return false;
    if (!*acc) {
        *acc = json_pack("{s:{s:s,s:[],s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", "location", -1);
        if (!*acc) {
            json_decref(x);
            return false;
        }
    }
    return json_array_append_new(pl_jget(pl_jget(*acc, "BoolExpr"), "args"), x) == 0;
}

static bool const_int(const json_t *j, long long *out)
{
    json_t *b, *iv;
    if (!pl_is_kind(j, "A_Const", &b))
        return false;
    if (json_is_true(pl_jget(b, "isnull"))) {
        *out = -1;
        return true;
    }
    if (!(iv = pl_jget(b, "ival")))
        return false;
    json_t *v = pl_jget(iv, "ival");
    *out = v ? (long long)json_integer_value(v) : 0;
    return true;
}

/* Rewrites one lateral RangeSubselect (body rs); *cond gets the join
 * conditions on its alias (NULL when it is not correlated). */
static hs_status rewrite_one(planner *p, json_t *rs, json_t **cond)
{
    *cond = NULL;
    int loc = pl_first_loc(rs, 0);
    json_t *sb, *alias = pl_jget(rs, "alias");
    const char *an = alias ? pl_jstrv(alias, "aliasname") : NULL;
    if (!pl_is_kind(pl_jget(rs, "subquery"), "SelectStmt", &sb))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported LATERAL subquery");
    lat_ctx c = {.p = p};
    json_t *from = pl_jget(sb, "fromClause");
    for (size_t i = 0; i < json_array_size(from); i++)
        inner_names(&c, json_array_get(from, i), 0);
    json_object_del(rs, "lateral");
    const char *op = pl_jstrv(sb, "op");
    bool simple = (!op || !strcmp(op, "SETOP_NONE")) && !pl_jget(sb, "groupClause") &&
                  !pl_jget(sb, "havingClause") && !pl_jget(sb, "distinctClause") &&
                  !pl_jget(sb, "withClause") && !pl_jget(sb, "windowClause") &&
                  !has_key(pl_jget(sb, "targetList"), "over", 0);
    json_t *where = pl_jget(sb, "whereClause");
    /* does it reference the outer side at all? */
    int any = refs(&c, sb, 0) | (sublink_outer(&c, sb, 0) ? 2 : 0);
    if (!(any & 2))
        return HS_OK; /* not correlated: a plain subquery */
    if (!an)
        return pl_fail(p, HS_INVALID, "42601", loc, "subquery in FROM must have an alias");
    json_t *tl = pl_jget(sb, "targetList"), *sort = pl_jget(sb, "sortClause");
    bool apply = !simple || pl_jget(sb, "valuesLists") || (refs(&c, tl, 0) & 2) || (refs(&c, sort, 0) & 2) ||
                 sublink_outer(&c, tl, 0) ||
                 sublink_outer(&c, sort, 0) || (refs(&c, from, 0) & 2);
    /* aggregates in the select list: count(*) of no rows would be one row */
    for (size_t i = 0; i < json_array_size(tl) && !apply; i++) {
        json_t *fcs = json_array();
        if (!fcs)
            return pl_nomem(p);
        pl_collect_aggs(json_array_get(tl, i), fcs, 0);
        apply = json_array_size(fcs) > 0;
        json_decref(fcs);
    }
    if (apply) {
        /* not a join exactly: run per outer row (plan_apply.c pl_apply_lateral) */
        return json_object_set_new(rs, "hs_lateral_apply", json_true()) == 0 ? HS_OK : pl_nomem(p);
    }
    /* the WHERE conjuncts: keys and the rest */
    json_t *conj = json_array(), *rest = NULL, *keys_in = json_array(), *keys_out = json_array();
    if (!conj || !keys_in || !keys_out) {
        json_decref(conj);
        json_decref(keys_in);
        json_decref(keys_out);
        return pl_nomem(p);
    }
    json_t *wb;
    if (pl_is_kind(where, "BoolExpr", &wb) && pl_jstrv(wb, "boolop") && !strcmp(pl_jstrv(wb, "boolop"), "AND_EXPR"))
        json_array_extend(conj, pl_jget(wb, "args"));
    else if (where)
        json_array_append(conj, where);
    hs_status st = HS_OK;
    for (size_t i = 0; i < json_array_size(conj) && st == HS_OK; i++) {
        json_t *x = json_array_get(conj, i), *ab;
        int r = refs(&c, x, 0) | (sublink_outer(&c, x, 0) ? 2 : 0);
        if (!(r & 2)) {
            if (!and_add(&rest, json_incref(x)))
                st = pl_nomem(p);
            continue;
        }
        const char *o;
        if (pl_is_kind(x, "A_Expr", &ab) && !strcmp(pl_jstrv(ab, "kind") ? pl_jstrv(ab, "kind") : "", "AEXPR_OP") &&
            json_array_size(pl_jget(ab, "name")) == 1 &&
            (o = sq_str(json_array_get(pl_jget(ab, "name"), 0))) && !strcmp(o, "=") &&
            !sublink_outer(&c, x, 0)) {
            json_t *l = pl_jget(ab, "lexpr"), *rr = pl_jget(ab, "rexpr");
            int rl = refs(&c, l, 0), rrr = refs(&c, rr, 0);
            if (rl == 1 && rrr == 2) {
                json_array_append(keys_in, l);
                json_array_append(keys_out, rr);
                continue;
            }
            if (rl == 2 && rrr == 1) {
                json_array_append(keys_in, rr);
                json_array_append(keys_out, l);
                continue;
            }
        }
        apply = true;   /* another correlated condition: per outer row */
        break;
    }
    size_t nk = json_array_size(keys_in);
    long long lim = -1, off = 0;
    json_t *lc = pl_jget(sb, "limitCount"), *lo = pl_jget(sb, "limitOffset");
    const char *lopt = pl_jstrv(sb, "limitOption");
    if (nk > LAT_MAX_KEYS || (lopt && !strcmp(lopt, "LIMIT_OPTION_WITH_TIES")) ||
        (lc && !const_int(lc, &lim)) || (lo && !const_int(lo, &off)))
        apply = true;
    for (size_t i = 0; !apply && (lc || lo) && i < json_array_size(sort); i++) {
        json_t *n = pl_jget(pl_jget(json_array_get(sort, i), "SortBy"), "node");
        apply = pl_is_kind(n, "A_Const", NULL) ||
                json_is_object(pl_jget(pl_jget(json_array_get(sort, i), "SortBy"), "useOp"));
    }
    if (st == HS_OK && apply) {
        json_decref(rest);
        json_decref(conj);
        json_decref(keys_in);
        json_decref(keys_out);
        return json_object_set_new(rs, "hs_lateral_apply", json_true()) == 0 ? HS_OK : pl_nomem(p);
    }
    if (st == HS_OK && (lim < -1 || off < -1))
        st = pl_fail(p, HS_INVALID, lim < -1 ? "2201W" : "2201X", loc, "%s must not be negative",
                     lim < -1 ? "LIMIT" : "OFFSET");
    if (off < 0)
        off = 0;
    bool numbered = st == HS_OK && (lim >= 0 || off > 0);
    for (size_t i = 0; numbered && i < json_array_size(sort) && st == HS_OK; i++) {
        json_t *n = pl_jget(pl_jget(json_array_get(sort, i), "SortBy"), "node");
        if (pl_is_kind(n, "A_Const", NULL))
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(n, 0),
                         "ORDER BY positions in a LATERAL subquery with LIMIT are not supported");
        else if (json_is_object(pl_jget(pl_jget(json_array_get(sort, i), "SortBy"), "useOp")))
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "ORDER BY ... USING is not supported");
    }
    /* the new subquery */
    for (size_t i = 0; i < nk && st == HS_OK; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "hs_lat_k%zu", i + 1);
        json_t *t = json_pack("{s:{s:s,s:o,s:i}}", "ResTarget", "name", nm, "val",
                              json_deep_copy(json_array_get(keys_in, i)), "location", -1);
        json_t *eq = op2("=", colref2(an, nm), json_deep_copy(json_array_get(keys_out, i)));
        if (!t || json_array_append_new(tl, t) != 0 || !and_add(cond, eq))
            st = pl_nomem(p);
    }
    if (st == HS_OK && numbered) {
        json_t *over = json_pack("{s:o,s:i,s:i}", "partitionClause", json_deep_copy(keys_in), "frameOptions",
                                 1058, "location", -1);
        if (over && sort)
            json_object_set_new(over, "orderClause", json_deep_copy(sort));
        json_t *fc = over ? json_pack("{s:{s:[{s:{s:s}}],s:o,s:s,s:i}}", "FuncCall", "funcname", "String", "sval",
                                      "row_number", "over", over, "funcformat", "COERCE_EXPLICIT_CALL",
                                      "location", -1)
                          : NULL;
        json_t *t = fc ? json_pack("{s:{s:s,s:o,s:i}}", "ResTarget", "name", "hs_lat_rn", "val", fc, "location", -1) : NULL;
        if (!t || json_array_append_new(tl, t) != 0)
            st = pl_nomem(p);
        if (st == HS_OK && off > 0 && !and_add(cond, op2(">", colref2(an, "hs_lat_rn"), iconst(off))))
            st = pl_nomem(p);
        if (st == HS_OK && lim >= 0 && !and_add(cond, op2("<=", colref2(an, "hs_lat_rn"), iconst(off + lim))))
            st = pl_nomem(p);
    }
    if (st == HS_OK) {
        json_object_del(sb, "sortClause");
        json_object_del(sb, "limitCount");
        json_object_del(sb, "limitOffset");
        json_object_set_new(sb, "limitOption", json_string("LIMIT_OPTION_DEFAULT"));
        if (rest)
            json_object_set_new(sb, "whereClause", rest);
        else
            json_object_del(sb, "whereClause");
        rest = NULL;
        /* the alias's column list, if any, must not name the added columns:
         * names past it keep theirs (PostgreSQL's rule for partial lists) */
    }
    json_decref(rest);
    json_decref(conj);
    json_decref(keys_in);
    json_decref(keys_out);
    if (st != HS_OK) {
        json_decref(*cond);
        *cond = NULL;
    }
    return st;
}

/* Whether the select list has * or an.* */
static bool star_over(const json_t *tl, const char *an)
{
    for (size_t i = 0; i < json_array_size(tl); i++) {
        json_t *v = pl_jget(pl_jget(json_array_get(tl, i), "ResTarget"), "val"), *cb;
        if (!pl_is_kind(v, "ColumnRef", &cb))
            continue;
        json_t *f = pl_jget(cb, "fields");
        size_t n = json_array_size(f);
        if (!n || !pl_is_kind(json_array_get(f, n - 1), "A_Star", NULL))
            continue;
        if (n == 1)
            return true;
        const char *q = sq_str(json_array_get(f, n - 2));
        if (q && an && !strcmp(q, an))
            return true;
    }
    return false;
}

static hs_status walk(planner *p, json_t *sel, json_t *item, json_t **where_add, int depth)
{
    json_t *b;
    if (depth > 200)
        return HS_OK;
    if (pl_is_kind(item, "JoinExpr", &b)) {
        json_t *l = pl_jget(b, "larg"), *lb;
        const char *ljt = pl_jstrv(b, "jointype");
        if (pl_is_kind(l, "RangeSubselect", &lb) && json_is_true(pl_jget(lb, "lateral")) &&
            (!ljt || !strcmp(ljt, "JOIN_INNER") || !strcmp(ljt, "JOIN_LEFT"))) {
            /* `FROM a, LATERAL (...) x JOIN ...`: x's join conditions filter
             * its (preserved) rows: WHERE conjuncts */
            json_t *cond;
            HS_TRY(rewrite_one(p, lb, &cond));
            json_t *cb = pl_jget(cond, "BoolExpr");
            json_t *args = pl_jget(cb, "args");
            for (size_t k = 0; k < json_array_size(args); k++)
                if (!and_add(where_add, json_incref(json_array_get(args, k)))) {
                    json_decref(cond);
                    return pl_nomem(p);
                }
            json_decref(cond);
        } else {
            HS_TRY(walk(p, sel, l, where_add, depth + 1));
        }
        json_t *r0 = pl_jget(b, "rarg"), *rb0;
        if (pl_is_kind(l, "RangeSubselect", &lb) && json_is_true(pl_jget(lb, "hs_lateral_apply")) &&
            pl_is_kind(r0, "RangeSubselect", &rb0) && pl_jget(rb0, "alias")) {
            /* x runs per row: a subquery joined to it runs per row after it */
            json_object_del(rb0, "lateral");
            return json_object_set_new(rb0, "hs_lateral_apply", json_true()) == 0 ? HS_OK : pl_nomem(p);
        }
        json_t *r = pl_jget(b, "rarg"), *rb;
        if (pl_is_kind(r, "RangeSubselect", &rb) && json_is_true(pl_jget(rb, "lateral"))) {
            const char *jt = pl_jstrv(b, "jointype");
            if (jt && strcmp(jt, "JOIN_INNER") && strcmp(jt, "JOIN_LEFT"))
                return pl_fail(p, HS_INVALID, "42P10", pl_first_loc(r, 0),
                               "the combining JOIN type must be INNER or LEFT for a LATERAL reference");
            json_t *al = pl_jget(rb, "alias");
            const char *an = al ? pl_jstrv(al, "aliasname") : NULL;
            json_t *cond;
            HS_TRY(rewrite_one(p, rb, &cond));
            if (cond && star_over(pl_jget(sel, "targetList"), an)) {
                json_decref(cond);
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(r, 0),
                               "SELECT * over a correlated LATERAL subquery is not supported (name the columns)");
            }
            if (cond) {
                if (pl_jget(b, "usingClause") || json_is_true(pl_jget(b, "isNatural"))) {
                    json_decref(cond);
                    return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(r, 0),
                                   "USING and NATURAL with a LATERAL subquery are not supported");
                }
                json_t *q = pl_jget(b, "quals");
                if (q && !and_add(&cond, json_incref(q))) {
                    json_decref(cond);
                    return pl_nomem(p);
                }
                json_object_set_new(b, "quals", cond);
            }
        } else {
            HS_TRY(walk(p, sel, r, where_add, depth + 1));
        }
        return HS_OK;
    }
    return HS_OK;
}

hs_status pl_lateral_rewrite(planner *p, const json_t *sel_c)
{
    json_t *sel = (json_t *)sel_c;
    json_t *from = pl_jget(sel, "fromClause");
    if (!from || !has_key(from, "lateral", 0))
        return HS_OK;
    json_t *where_add = NULL;
    for (size_t i = 0; i < json_array_size(from); i++) {
        json_t *item = json_array_get(from, i), *rb;
        if (pl_is_kind(item, "RangeSubselect", &rb) && json_is_true(pl_jget(rb, "lateral"))) {
            json_t *al = pl_jget(rb, "alias");
            const char *an = al ? pl_jstrv(al, "aliasname") : NULL;
            json_t *cond;
            hs_status st = rewrite_one(p, rb, &cond);
            if (st == HS_OK && cond && star_over(pl_jget(sel, "targetList"), an))
                st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(item, 0),
                             "SELECT * over a correlated LATERAL subquery is not supported (name the columns)");
            if (st == HS_OK && cond) {
                /* `FROM a, LATERAL (...) l`: an inner join, its conditions in WHERE */
                json_t *cb = pl_jget(cond, "BoolExpr");
                json_t *args = pl_jget(cb, "args");
                for (size_t k = 0; k < json_array_size(args) && st == HS_OK; k++)
                    if (!and_add(&where_add, json_incref(json_array_get(args, k))))
                        st = pl_nomem(p);
            }
            json_decref(cond);
            if (st != HS_OK) {
                json_decref(where_add);
                return st;
            }
        } else {
            hs_status st = walk(p, sel, item, &where_add, 0);
            if (st != HS_OK) {
                json_decref(where_add);
                return st;
            }
        }
    }
    if (where_add) {
        json_t *w = pl_jget(sel, "whereClause");
        if (w && !and_add(&where_add, json_incref(w))) {
            json_decref(where_add);
            return pl_nomem(p);
        }
        json_object_set_new(sel, "whereClause", where_add);
    }
    return HS_OK;
}
