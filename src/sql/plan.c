/*
 * sql/plan.c - queries: libpg_query JSON -> bound relations -> a tree of
 * physical operators (exec/exec.h).  The planner spans plan*.c (FROM items,
 * joins, subqueries, SELECT blocks, parse-tree rewrites, EXPLAIN and
 * CREATE/DROP INDEX in their own files); plan_int.h lists which file holds
 * what.  This file holds relations, scopes, projections and the entry points.
 *
 * A relation (rel) is an operator plus the SQL names of its output columns
 * (qualifier = the table's alias, name).  Expressions bind against a chain
 * of relations (the scope: inner ones first, as SQL resolves names) through
 * ex_bind_json; every column of a relation is the field with id i+1 of its
 * operator's schema.
 *
 * plan_select, one SELECT block:
 *   1. WITH: the CTEs become visible by name (planned at each reference).
 *   2. FROM: the items become a join tree whose leaves are base tables not
 *      yet scanned (so WHERE can still reach them), derived tables, CTEs
 *      and VALUES (already planned).
 *   3. WHERE is split into conjuncts.  A conjunct that reads one base table
 *      only, with no subquery, and whose table is not on the nullable side
 *      of an outer join, is pushed into the table scan as filter text (the
 *      bound conjunct printed by ex_format), so partition/bound pruning and
 *      sidecar indexes apply.  [NOT] EXISTS / [NOT] IN (subquery) conjuncts
 *      become semi/anti joins (correlated ones decorrelated: the subquery's
 *      conjuncts that read outer columns become join keys or residuals);
 *      scalar subqueries become joined columns (uncorrelated: a left
 *      cross join of the one-row result; correlated with equality
 *      correlation: the subquery grouped by its correlated columns, left
 *      hash-joined; over a FROM function of the outer row, unnest(t.tags):
 *      an Apply that plans and runs it per outer row, plan_apply.c).
 *   4. Scans are built (only the columns the statement names, unless it
 *      has a '*'), joins are formed: explicit JOINs as written, comma
 *      items greedily (the largest table streams, connected items join in
 *      as hash-join build sides by estimated size, equality conjuncts
 *      between plain columns are the hash keys, others residuals).
 *   5. GROUP BY / aggregates (a projection of keys and arguments, then a
 *      hash aggregate; later expressions find keys and aggregates as
 *      columns through the binder's node hook), HAVING, the select list,
 *      DISTINCT, ORDER BY (sort or top-k; keys not in the select list ride
 *      along as hidden columns), LIMIT/OFFSET.
 * Set operations plan both sides and cast the right to the left's types;
 * VALUES rows are projections of a one-row source, unioned.
 * Vector search: ORDER BY <distance>(col, constant) LIMIT k over one table
 * becomes a VectorSearch (the WHERE conjuncts its filter) when the table
 * has a vector index on col; otherwise the ordinary plan computes it
 * exactly (top-k).
 */
#include "sql/plan_int.h"

#include "columnar/jsonl.h"

/* ------------------------------------------------------------------ */
/* relations                                                           */



void  pl_qcols_free(qcol *c, int n)
{
    for (int i = 0; i < n; i++) {
        hs_free(c[i].qual);
        hs_free(c[i].name);
    }
    hs_free(c);
}

void  pl_rel_clear(rel *r)
{
    xo_free(r->op);
    pl_qcols_free(r->cols, r->n);
    memset(r, 0, sizeof *r);
}

char *pl_dup_or_null(const char *s) { return s ? hs_strdup(s) : NULL; }

/* Names r's columns from its operator's schema, all qualified by qual. */
hs_status  pl_rel_name(rel *r, const char *qual, hs_error *err)
{
    const hs_field *sch = &r->op->schema;
    pl_qcols_free(r->cols, r->n);
    r->n = sch->n_children;
    r->cols = hs_calloc((size_t)r->n + 1, sizeof *r->cols);
    if (!r->cols) {
        r->n = 0;
        return hs_err_nomem(err, 0);
    }
    for (int i = 0; i < r->n; i++) {
        r->cols[i].qual = pl_dup_or_null(qual);
        r->cols[i].name = hs_strdup(sch->children[i].name ? sch->children[i].name : "");
        if ((qual && !r->cols[i].qual) || !r->cols[i].name)
            return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* planner state                                                       */



hs_status  pl_fail(planner *p, hs_status code, const char *state, int loc, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sq_fail(p->s, p->err, code, state, p->text, loc, "%s", msg);
}

hs_status  pl_nomem(planner *p) { return hs_err_nomem(p->err, 0); }

/* Keeps a schema alive as long as the statement's operators (bound
 * expressions borrow it): the statement context owns it. */
static hs_status keep_schema(planner *p, hs_field *f)
{
    return sq_ctx_keep(p->ctx, f, p->err);
}

static void planner_free(planner *p)
{
    json_decref(p->names);
}

/* ------------------------------------------------------------------ */
/* JSON helpers                                                        */

json_t *pl_jget(const json_t *o, const char *k) { return json_object_get(o, k); }

const char *pl_jstrv(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

bool  pl_is_kind(const json_t *j, const char *kind, json_t **body)
{
    const char *k;
    json_t *b;
    if (!sq_node(j, &k, &b) || strcmp(k, kind) != 0)
        return false;
    if (body)
        *body = b;
    return true;
}

/* First location inside a node (for errors about nodes without one). */
int  pl_first_loc(const json_t *j, int depth)
{
    if (depth > 100)
        return -1;
    if (json_is_object(j)) {
        json_t *l = json_object_get(j, "location");
        if (json_is_integer(l) && json_integer_value(l) >= 0)
            return (int)json_integer_value(l);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            int x = pl_first_loc(v, depth + 1);
            if (x >= 0)
                return x;
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            int x = pl_first_loc(v, depth + 1);
            if (x >= 0)
                return x;
        }
    }
    return -1;
}

int  pl_node_loc(const json_t *j)
{
    const char *k;
    json_t *b;
    if (sq_node(j, &k, &b)) {
        int l = sq_loc(b);
        if (l >= 0)
            return l;
    }
    return pl_first_loc(j, 0);
}

/* Structural equality ignoring "location" keys. */
bool  pl_jeq(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        size_t na = 0, nb = 0;
        json_object_foreach((json_t *)a, k, v) {
            if (!strcmp(k, "location"))
                continue;
            na++;
            json_t *w = json_object_get(b, k);
            if (!w || !pl_jeq(v, w))
                return false;
        }
        json_object_foreach((json_t *)b, k, v)
            nb += strcmp(k, "location") != 0;
        return na == nb;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!pl_jeq(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* The function name of a FuncCall body (last part, lower case as parsed). */
const char *pl_func_name(const json_t *fc)
{
    json_t *names = pl_jget(fc, "funcname");
    size_t n = json_array_size(names);
    return n ? sq_str(json_array_get(names, n - 1)) : NULL;
}

bool  pl_agg_name(const char *nm, xo_agg_fn *fn)
{
    static const struct { const char *n; xo_agg_fn f; } t[] = {
        {"count", XO_AGG_COUNT}, {"sum", XO_AGG_SUM}, {"avg", XO_AGG_AVG}, {"min", XO_AGG_MIN},
        {"max", XO_AGG_MAX}, {"bool_and", XO_AGG_BOOL_AND}, {"bool_or", XO_AGG_BOOL_OR},
        {"every", XO_AGG_BOOL_AND}, {"string_agg", XO_AGG_STRING_AGG},
        {"array_agg", XO_AGG_ARRAY_AGG},
    };
    for (size_t i = 0; nm && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(nm, t[i].n)) {
            if (fn)
                *fn = t[i].f;
            return true;
        }
    return false;
}

bool  pl_is_agg_call(const json_t *j)
{
    json_t *b;
    return pl_is_kind(j, "FuncCall", &b) && !pl_jget(b, "over") && pl_agg_name(pl_func_name(b), NULL);
}

/* Collects the calls under j (not inside subqueries) for which want() holds
 * into arr, each distinct call once; calls inside a collected call are not
 * visited. */
bool pl_walk(const json_t *j, pl_visit_fn visit, void *ctx, int depth)
{
    if (!j || depth > 400)
        return false;
    if (json_is_object(j)) {
        pl_walk_res r = visit(j, ctx);
        if (r != PL_DESCEND)
            return r == PL_STOP;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            if (pl_walk(v, visit, ctx, depth + 1))
                return true;
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            if (pl_walk(v, visit, ctx, depth + 1))
                return true;
    }
    return false;
}

/* Appends x to arr unless an equal node is there. */
static void append_once(json_t *arr, const json_t *x)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (pl_jeq(json_array_get(arr, i), x))
            return;
    json_array_append(arr, (json_t *)x);
}

typedef struct calls_ctx {
    json_t *arr;
    bool (*want)(const json_t *);
} calls_ctx;

static pl_walk_res visit_call(const json_t *j, void *ctx)
{
    calls_ctx *c = ctx;
    if (c->want(j)) {
        append_once(c->arr, j);
        return PL_SKIP;
    }
    json_t *sl = json_object_get(j, "SubLink");
    if (sl) {
        /* the operand of `x op ANY/ALL (subquery)` is the block's own
         * expression (HAVING max(v) = ALL (...)); the subquery is not */
        json_t *x = json_object_get(sl, "testexpr");
        if (x)
            pl_walk(x, visit_call, c, 0);
        return PL_SKIP;
    }
    return PL_DESCEND;
}

void  pl_collect_calls(const json_t *j, json_t *arr, bool (*want)(const json_t *), int depth)
{
    calls_ctx c = {arr, want};
    pl_walk(j, visit_call, &c, depth);
}

/* Aggregate calls under j (not inside subqueries, but in the operand of
 * x op ANY / ALL (subquery)), into arr. */
void  pl_collect_aggs(const json_t *j, json_t *arr, int depth)
{
    pl_collect_calls(j, arr, pl_is_agg_call, depth);
}

/* Collects SubLink nodes under j (not inside other subqueries). */
static pl_walk_res visit_sublink(const json_t *j, void *arr)
{
    if (json_object_get(j, "SubLink") && json_object_size(j) == 1) {
        json_array_append((json_t *)arr, (json_t *)j);
        return PL_SKIP;
    }
    return PL_DESCEND;
}

void  pl_collect_sublinks(const json_t *j, json_t *arr, int depth)
{
    pl_walk(j, visit_sublink, arr, depth);
}

static pl_walk_res visit_sublink_noagg(const json_t *j, void *arr)
{
    if (pl_is_agg_call(j))
        return PL_SKIP;
    return visit_sublink(j, arr);
}

void  pl_collect_sublinks_noagg(const json_t *j, json_t *arr, int depth)
{
    pl_walk(j, visit_sublink_noagg, arr, depth);
}

static bool targets_aggregate(const json_t *sub)
{
    json_t *a = json_array();
    pl_collect_aggs(pl_jget(sub, "targetList"), a, 0);
    bool r = json_array_size(a) > 0 || pl_jget(sub, "havingClause") || pl_jget(sub, "groupClause");
    json_decref(a);
    return r;
}

/* Every column name (last part, lower case) the statement mentions, and
 * whether it has a '*' or a NATURAL join (then scans read all columns). */
static void collect_names(planner *p, const json_t *j, int depth)
{
    if (depth > 2000 || !j)
        return;
    if (json_is_object(j)) {
        json_t *cr = json_object_get(j, "ColumnRef");
        if (cr && json_object_size(j) == 1) {
            json_t *f = pl_jget(cr, "fields");
            json_t *last = json_array_get(f, json_array_size(f) - 1);
            if (pl_is_kind(last, "A_Star", NULL)) {
                p->all_columns = true;
            } else {
                const char *nm = sq_str(last);
                for (size_t i = 0; i < json_array_size(f); i++) {
                    const char *x = sq_str(json_array_get(f, i));
                    if (x) {
                        char low[256];
                        size_t k = 0;
                        for (; x[k] && k < sizeof low - 1; k++)
                            low[k] = (char)tolower((unsigned char)x[k]);
                        low[k] = 0;
                        json_object_set_new(p->names, low, json_true());
                    }
                }
                (void)nm;
            }
            return;
        }
        json_t *sl = json_object_get(j, "SubLink"), *sub;
        if (sl && json_object_size(j) == 1 && pl_jstrv(sl, "subLinkType")
            && !strcmp(pl_jstrv(sl, "subLinkType"), "EXISTS_SUBLINK")
            && pl_is_kind(pl_jget(sl, "subselect"), "SelectStmt", &sub)
            && !pl_jget(sub, "distinctClause") && !targets_aggregate(sub)) {
            /* EXISTS ignores its select list: its '*' reads no column
             * (but aggregates make it one row and are computed) */
            const char *k;
            json_t *v;
            json_object_foreach(sub, k, v)
                if (strcmp(k, "targetList"))
                    collect_names(p, v, depth + 1);
            return;
        }
        if (json_is_true(json_object_get(j, "isNatural")))
            p->all_columns = true;
        json_t *using = json_object_get(j, "usingClause");
        size_t i;
        json_t *v;
        json_array_foreach(using, i, v) {
            const char *x = sq_str(v);
            if (x)
                json_object_set_new(p->names, x, json_true());
        }
        const char *k;
        json_object_foreach((json_t *)j, k, v)
            collect_names(p, v, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            collect_names(p, v, depth + 1);
    }
}

bool  pl_name_needed(const planner *p, const char *name)
{
    if (p->all_columns)
        return true;
    char low[256];
    size_t k = 0;
    for (; name[k] && k < sizeof low - 1; k++)
        low[k] = (char)tolower((unsigned char)name[k]);
    low[k] = 0;
    return json_object_get(p->names, low) != NULL;
}

/* ------------------------------------------------------------------ */
/* scopes: name resolution and binding                                 */




bool  pl_name_eq(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* Column of a layer for names[0..n) among its own columns (outer false)
 * or among the enclosing query's row (outer true): -1 none, -2 ambiguous. */
static int layer_find(const layer *l, const char *const *names, int n, bool outer)
{
    const char *qual = n >= 2 ? names[n - 2] : NULL, *name = names[n - 1];
    int hit = -1, count = 0;
    for (int i = 0; i < l->n; i++) {
        const qcol *c = &l->cols[i];
        if (c->outer != outer || !pl_name_eq(c->name, name) || (qual && !pl_name_eq(c->qual, qual)) ||
            (!qual && c->hidden))
            continue;
        if (hit < 0)
            hit = i;
        count++;
    }
    if (count > 1 && !outer)
        return -2;
    for (int i = hit + 1; count > 1 && i < l->n; i++) {
        /* the enclosing row may be joined in twice (a block and a FROM
         * function under it, plan_apply.c): one column unless the
         * qualifiers differ */
        const qcol *c = &l->cols[i];
        if (c->outer && pl_name_eq(c->name, name) && (!qual || pl_name_eq(c->qual, qual)) &&
            !(!qual && c->hidden) && !(c->qual == l->cols[hit].qual ||
                                       pl_name_eq(c->qual, l->cols[hit].qual)))
            return -2;
    }
    if (hit >= 0)
        return hit;
    /* case-insensitive, unique (columns of files written with upper case) */
    for (int i = 0; i < l->n; i++) {
        const qcol *c = &l->cols[i];
        if (c->outer != outer || !c->name || strcasecmp(c->name, name) != 0 || (!qual && c->hidden) ||
            (qual && (!c->qual || strcasecmp(c->qual, qual) != 0)))
            continue;
        if (hit >= 0)
            return -2;
        hit = i;
    }
    return hit;
}

/* Column of a layer for names[0..n): -1 none, -2 ambiguous.  The query's
 * own columns hide the enclosing row's (PostgreSQL resolves a name in the
 * innermost query that has it). */
int  pl_layer_find(const layer *l, const char *const *names, int n)
{
    int c = layer_find(l, names, n, false);
    return c == -1 ? layer_find(l, names, n, true) : c;
}

int  pl_scope_column(void *ctx, const char *const *names, int n)
{
    scope *sc = ctx;
    for (int i = 0; i < sc->n_layers; i++) {
        int c = pl_layer_find(&sc->layers[i], names, n);
        if (c == -2)
            return -2;
        if (c >= 0)
            return sc->layers[i].offset + c;
    }
    return -1;
}

/* names of a ColumnRef body (NULL entries for '*'); returns n or -1. */
int  pl_colref_names(const json_t *cr, const char **names, int max)
{
    json_t *f = pl_jget(cr, "fields");
    int n = (int)json_array_size(f);
    if (n < 1 || n > max)
        return -1;
    for (int i = 0; i < n; i++)
        names[i] = sq_str(json_array_get(f, i));
    return n;
}

static hs_status scope_node(void *ctx, const json_t *node, int *col, hs_error *err)
{
    scope *sc = ctx;
    planner *p = sc->p;
    (void)err;
    *col = -1;
    for (int i = 0; i < sc->n_map; i++)
        if (sc->map_nodes[i] == node || pl_jeq(sc->map_nodes[i], node)) {
            *col = sc->map_cols[i];
            return HS_OK;
        }
    json_t *b;
    if (!sc->pre && p->ungrouped && pl_is_kind(node, "ColumnRef", &b)) {
        const char *names[8];
        int n = pl_colref_names(b, names, 8);
        int c = n > 0 && names[n - 1] && pl_scope_column(sc, names, n) == -1
                    ? pl_layer_find(p->ungrouped, names, n) : -1;
        if (c >= 0 && p->ungrouped_key[c] < 0)
            return pl_fail(p, HS_INVALID, "42803", sq_loc(b),
                           "subquery uses ungrouped column \"%s%s%s\" from outer query",
                           n > 1 && names[n - 2] ? names[n - 2] : "", n > 1 ? "." : "", names[n - 1]);
    }
    if (sc->pre && pl_is_kind(node, "ColumnRef", &b)) {
        const char *names[8];
        int n = pl_colref_names(b, names, 8);
        if (n > 0 && names[n - 1]) {
            int c = pl_layer_find(sc->pre, names, n);
            if (c >= 0) {
                if (sc->key_of_col[c] >= 0) {
                    *col = sc->key_of_col[c];
                    return HS_OK;
                }
                if (sc->pre->cols[c].outer)
                    return HS_OK;   /* an Apply's outer row, joined again after aggregation */
                return pl_fail(p, HS_INVALID, "42803", sq_loc(b),
                            "column \"%s%s%s\" must appear in the GROUP BY clause or be used in an "
                            "aggregate function",
                            n > 1 && names[n - 2] ? names[n - 2] : "", n > 1 ? "." : "",
                            names[n - 1]);
            }
        }
        return HS_OK;
    }
    if (pl_is_kind(node, "FuncCall", &b)) {
        if (pl_jget(b, "over") && sc->no_aggs && !strcmp(sc->no_aggs, "aggregate function calls"))
            return pl_fail(p, HS_INVALID, "42803", sq_loc(b),
                           "aggregate function calls cannot contain window function calls");
        if (pl_jget(b, "over") && sc->no_aggs && strcmp(sc->no_aggs, "this context"))
            return pl_fail(p, HS_INVALID, "42P20", sq_loc(b), "window functions are not allowed in %s",
                           sc->no_aggs);
        if (pl_jget(b, "over"))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(b), "window functions are not supported");
        if (pl_agg_name(pl_func_name(b), NULL))
            return pl_fail(p, HS_INVALID, "42803", sq_loc(b), "aggregate functions are not allowed in %s",
                        sc->no_aggs ? sc->no_aggs : "this context");
    }
    if (pl_is_kind(node, "SubLink", &b))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(node),
                    "this form of subquery is not supported here");
    return HS_OK;
}

hs_status  pl_bind_in(scope *sc, const json_t *node, bool filter, ex_expr **out)
{
    ex_scope es = {.schema = sc->schema, .column = pl_scope_column, .node = scope_node, .ctx = sc,
                   .nested_ok = sc->nested_ok};
    return ex_bind_json(node, sc->p->text, &es, filter, out, sc->p->err);
}

/* A scope over one relation. */
void  pl_scope_rel(scope *sc, planner *p, const rel *r)
{
    memset(sc, 0, sizeof *sc);
    sc->p = p;
    sc->layers[0] = (layer){r->cols, r->n, 0};
    sc->n_layers = 1;
    sc->schema = r->op ? &r->op->schema : NULL;
}

/* A schema of a's columns then b's (kept by the planner), ids 1..n. */
static hs_status concat_schema(planner *p, const hs_field *a, const hs_field *b,
                               const hs_field **out)
{
    hs_field *f = hs_calloc(1, sizeof *f);
    if (!f)
        return pl_nomem(p);
    hs_field_init(f, "", HS_TYPE_STRUCT, false);
    hs_status st = HS_OK;
    for (int k = 0; k < 2 && st == HS_OK; k++) {
        const hs_field *s = k ? b : a;
        for (int i = 0; s && i < s->n_children && st == HS_OK; i++) {
            hs_field c;
            st = hs_field_copy(&s->children[i], &c);
            if (st == HS_OK) {
                c.nullable = true;
                st = hs_field_add_child(f, &c);
                if (st != HS_OK)
                    hs_field_clear(&c);
            }
        }
    }
    if (st != HS_OK) {
        hs_field_clear(f);
        hs_free(f);
        return pl_nomem(p);
    }
    /* ids: top level 1..n, nested above n */
    int next = f->n_children + 1;
    for (int i = 0; i < f->n_children; i++) {
        f->children[i].field_id = i + 1;
        /* nested ids */
        hs_field *stack[64];
        int sp = 0;
        stack[sp++] = &f->children[i];
        while (sp > 0) {
            hs_field *x = stack[--sp];
            for (int j = 0; j < x->n_children; j++) {
                x->children[j].field_id = next++;
                if (sp < 64)
                    stack[sp++] = &x->children[j];
            }
        }
    }
    HS_TRY(keep_schema(p, f));
    *out = f;
    return HS_OK;
}

/* A scope whose schema is inner||outer: inner names resolve first. */
hs_status  pl_scope_pair(scope *sc, planner *p, const rel *outer, const rel *inner,
                            bool inner_first)
{
    memset(sc, 0, sizeof *sc);
    sc->p = p;
    const hs_field *sch = NULL;
    HS_TRY(concat_schema(p, &outer->op->schema, &inner->op->schema, &sch));
    sc->schema = sch;
    layer lo = {outer->cols, outer->n, 0}, li = {inner->cols, inner->n, outer->n};
    sc->layers[0] = inner_first ? li : lo;
    sc->layers[1] = inner_first ? lo : li;
    sc->n_layers = 2;
    return HS_OK;
}

static int pos_column(void *ctx, const char *const *names, int n)
{
    (void)names;
    (void)n;
    return ((pos_ctx *)ctx)->col;
}

/* An expression reading column idx of schema. */
hs_status pl_col_expr(planner *p, const hs_field *schema, int idx, ex_expr **out)
{
    json_t *j = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", "c",
                          "location", -1);
    if (!j)
        return pl_nomem(p);
    pos_ctx pc = {idx};
    ex_scope es = {.schema = schema, .column = pos_column, .ctx = &pc};
    hs_status st = ex_bind_json(j, p->text, &es, false, out, p->err);
    json_decref(j);
    return st;
}

/* ------------------------------------------------------------------ */
/* projections that pass columns through                               */


static hs_status pass_next(xo_op *op, hs_batch **out, hs_error *err)
{
    pass_op *po = (pass_op *)op;
    hs_batch *b = NULL;
    *out = NULL;
    HS_TRY(xo_next(op->children[0], &b, err));
    if (!b)
        return HS_OK;
    hs_column **cols = hs_calloc((size_t)po->n + 1, sizeof *cols);
    hs_status st = cols ? HS_OK : hs_err_nomem(err, 0);
    for (int i = 0; i < po->n && st == HS_OK; i++)
        if (po->src[i] < 0)
            st = ex_eval(po->ex[i], b, &cols[i], err);
    for (int i = 0; i < po->n && st == HS_OK; i++) {
        int c = po->src[i];
        if (c < 0)
            continue;
        if (b->cols[c]) {
            cols[i] = b->cols[c];
            b->cols[c] = NULL;
        } else {
            int j = 0;
            while (po->src[j] != c)
                j++;
            st = hs_col_slice(cols[j], 0, b->n_rows, &cols[i], err);
        }
    }
    hs_batch *o = NULL;
    if (st == HS_OK)
        st = hs_batch_create(&op->schema, 0, &o, err);
    if (st == HS_OK) {
        for (int i = 0; i < po->n; i++) {
            hs_col_free(o->cols[i]);
            o->cols[i] = cols[i];
            cols[i] = NULL;
        }
        o->n_rows = b->n_rows;
    }
    for (int i = 0; cols && i < po->n; i++)
        hs_col_free(cols[i]);
    hs_free(cols);
    hs_batch_free(b);
    if (st != HS_OK) {
        hs_batch_free(o);
        return st;
    }
    *out = o;
    return HS_OK;
}

static void pass_destroy(xo_op *op)
{
    pass_op *po = (pass_op *)op;
    for (int i = 0; i < po->n; i++)
        ex_free(po->ex[i]);
    hs_free(po->ex);
    hs_free(po->src);
}

/* Whether column idx of schema binds as an expression (not nested). */
static bool col_bindable(planner *p, const hs_field *schema, int idx)
{
    json_t *j = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", "c",
                          "location", -1);
    if (!j)
        return false;
    hs_error e = {0};
    ex_expr *x = NULL;
    pos_ctx pc = {idx};
    ex_scope es = {.schema = schema, .column = pos_column, .ctx = &pc};
    hs_status st = ex_bind_json(j, p->text, &es, false, &x, &e);
    ex_free(x);
    json_decref(j);
    return st == HS_OK;
}

/* Projects child into n columns: src[i] >= 0 passes child column src[i]
 * through (ex[i] unused), else ex[i] (taken).  Uses xo_project when every
 * column binds as an expression. */
hs_status  pl_project_mixed(planner *p, xo_op *child, int n, const int *src, ex_expr **ex,
                               const char *const *names, xo_op **out)
{
    *out = NULL;
    bool plain = true;
    hs_status st = HS_OK;
    for (int i = 0; i < n && plain; i++)
        if (src[i] >= 0 && !col_bindable(p, &child->schema, src[i]))
            plain = false;
    if (plain) {
        for (int i = 0; i < n && st == HS_OK; i++)
            if (src[i] >= 0) {
                ex_free(ex[i]);
                ex[i] = NULL;
                st = pl_col_expr(p, &child->schema, src[i], &ex[i]);
            }
        if (st == HS_OK) {
            st = xo_project(child, n, ex, names, out, p->err);
            for (int i = 0; i < n; i++)
                ex[i] = NULL;   /* taken by xo_project, also on failure */
            return st;
        }
        for (int i = 0; i < n; i++) {
            ex_free(ex[i]);
            ex[i] = NULL;
        }
        xo_free(child);
        return st;
    }
    pass_op *po = hs_calloc(1, sizeof *po);
    xo_op **kids = po ? hs_calloc(1, sizeof *kids) : NULL;
    if (po) {
        po->src = hs_calloc((size_t)n + 1, sizeof *po->src);
        po->ex = hs_calloc((size_t)n + 1, sizeof *po->ex);
    }
    st = po && kids && po->src && po->ex ? HS_OK : pl_nomem(p);
    if (st == HS_OK)
        hs_field_init(&po->op.schema, "", HS_TYPE_STRUCT, false);
    for (int i = 0; i < n && st == HS_OK; i++) {
        hs_field f;
        const hs_field *from = src[i] >= 0 ? &child->schema.children[src[i]] : ex_type(ex[i]);
        st = hs_field_copy(from, &f);
        if (st == HS_OK) {
            hs_free(f.name);
            f.name = hs_strdup(names[i] ? names[i] : "?column?");
            f.nullable = true;
            st = f.name ? hs_field_add_child(&po->op.schema, &f) : HS_NOMEM;
            if (st != HS_OK)
                hs_field_clear(&f);
        }
        if (st != HS_OK)
            st = pl_nomem(p);
        po->src[i] = src[i];
        po->ex[i] = src[i] >= 0 ? NULL : ex[i];
        if (src[i] >= 0)
            ex_free(ex[i]);
        ex[i] = NULL;
    }
    if (st != HS_OK) {
        for (int i = 0; i < n; i++) {
            ex_free(ex[i]);
            ex[i] = NULL;
        }
        if (po) {
            for (int i = 0; po->ex && i < n; i++)
                ex_free(po->ex[i]);
            hs_free(po->ex);
            hs_free(po->src);
            hs_field_clear(&po->op.schema);
        }
        hs_free(po);
        hs_free(kids);
        xo_free(child);
        return st;
    }
    /* ids: top level 1..n, nested above n */
    hs_field *f = &po->op.schema;
    int next = f->n_children + 1;
    for (int i = 0; i < f->n_children; i++) {
        f->children[i].field_id = i + 1;
        hs_field *stack[64];
        int sp = 0;
        stack[sp++] = &f->children[i];
        while (sp > 0) {
            hs_field *x = stack[--sp];
            for (int j = 0; j < x->n_children; j++) {
                x->children[j].field_id = next++;
                if (sp < 64)
                    stack[sp++] = &x->children[j];
            }
        }
    }
    kids[0] = child;
    po->n = n;
    po->op.name = "Project";
    po->op.ctx = child->ctx;
    po->op.n_children = 1;
    po->op.children = kids;
    po->op.next = pass_next;
    po->op.destroy = pass_destroy;
    *out = &po->op;
    return HS_OK;
}

/* A TypeName node for field f's type (casts in set operations and VALUES). */
static json_t *type_json(const hs_field *f)
{
    const char *nm = "text";
    int prec = -1, scale = -1;
    switch (f->type) {
    case HS_TYPE_BOOL: nm = "bool"; break;
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_UINT8: nm = "int2"; break;
    case HS_TYPE_INT32: case HS_TYPE_UINT16: nm = "int4"; break;
    case HS_TYPE_INT64: case HS_TYPE_UINT32: case HS_TYPE_UINT64: nm = "int8"; break;
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: nm = "float4"; break;
    case HS_TYPE_FLOAT64: nm = "float8"; break;
    case HS_TYPE_DECIMAL128: nm = "numeric"; prec = f->precision; scale = f->scale; break;
    case HS_TYPE_DATE32: nm = "date"; break;
    case HS_TYPE_TIMESTAMP: nm = f->tz ? "timestamptz" : "timestamp"; break;
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: nm = "time"; break;
    case HS_TYPE_BINARY: nm = "bytea"; break;
    case HS_TYPE_FIXED_BINARY: nm = f->ext == HS_EXT_UUID ? "uuid" : "bytea"; break;
    case HS_TYPE_INTERVAL: nm = "interval"; break;
    default: nm = "text"; break;
    }
    /* pgvector's types (tagged by the expression layer) and one-dimensional
     * arrays of scalars */
    const char *pv = hs_field_get_meta(f, EX_PV_META);
    bool array = false;
    char abuf[32];
    if (pv) {
        /* bit(n)'s length is not in the field: varbit casts without padding
         * or truncating */
        nm = strcmp(pv, "bit") == 0 ? "varbit" : pv;
    } else if (f->type == HS_TYPE_LIST && f->n_children == 1) {
        hs_field e = f->children[0];
        e.n_meta = 0;
        json_t *et = e.type == HS_TYPE_LIST || e.type == HS_TYPE_STRUCT ? NULL : type_json(&e);
        json_t *names = et ? json_object_get(et, "names") : NULL;
        json_t *last = names ? json_array_get(names, json_array_size(names) - 1) : NULL;
        const char *en = last ? json_string_value(json_object_get(json_object_get(last, "String"),
                                                                  "sval")) : NULL;
        if (en && strlen(en) < sizeof abuf) {
            snprintf(abuf, sizeof abuf, "%s", en);
            nm = abuf;
            array = true;
        }
        json_decref(et);
    }
    json_t *tn = json_pack("{s:[{s:{s:s}}],s:i,s:i}", "names", "String", "sval", nm, "typemod", -1,
                           "location", -1);
    if (tn && array)
        json_object_set_new(tn, "arrayBounds", json_pack("[{s:{s:i}}]", "Integer", "ival", -1));
    if (tn && prec > 0)
        json_object_set_new(tn, "typmods",
                            json_pack("[{s:{s:{s:i},s:i}},{s:{s:{s:i},s:i}}]", "A_Const", "ival",
                                      "ival", prec, "location", -1, "A_Const", "ival", "ival", scale,
                                      "location", -1));
    return tn;
}

static bool is_num_type(hs_type t)
{
    return pl_is_int_type(t) || t == HS_TYPE_FLOAT16 || t == HS_TYPE_FLOAT32 ||
           t == HS_TYPE_FLOAT64 || t == HS_TYPE_DECIMAL128;
}

/* The type two columns unify to (set operations, VALUES, CASE-like). */
void  pl_unify_type(const hs_field *a, const hs_field *b, hs_field *out)
{
    *out = *a;
    if (hs_field_same_type(a, b, true) || b->type == HS_TYPE_NA)
        return;
    if (a->type == HS_TYPE_NA) {
        *out = *b;
        return;
    }
    if (pl_is_int_type(a->type) && pl_is_int_type(b->type)) {
        out->type = HS_TYPE_INT64;
        return;
    }
    if (is_num_type(a->type) && is_num_type(b->type)) {
        if (a->type == HS_TYPE_DECIMAL128 && b->type == HS_TYPE_DECIMAL128) {
            out->type = HS_TYPE_DECIMAL128;
            out->scale = a->scale > b->scale ? a->scale : b->scale;
            out->precision = 38;
        } else if ((a->type == HS_TYPE_DECIMAL128 && pl_is_int_type(b->type)) ||
                   (b->type == HS_TYPE_DECIMAL128 && pl_is_int_type(a->type))) {
            const hs_field *d = a->type == HS_TYPE_DECIMAL128 ? a : b;
            out->type = HS_TYPE_DECIMAL128;
            out->scale = d->scale;
            out->precision = 38;
        } else {
            out->type = HS_TYPE_FLOAT64;
        }
        return;
    }
    out->type = HS_TYPE_STRING;
}

/* Wraps node in CAST(node AS type of f) (a new reference). */
json_t *pl_cast_json(json_t *node, const hs_field *f)
{
    json_t *tn = type_json(f);
    if (!tn)
        return NULL;
    return json_pack("{s:{s:O,s:o,s:i}}", "TypeCast", "arg", node, "typeName", tn, "location", -1);
}

/* Projects r so column i has type types[i] (casting where needed). */
hs_status  pl_cast_rel(planner *p, rel *r, const hs_field *types)
{
    const hs_field *sch = &r->op->schema;
    bool need = false;
    for (int i = 0; i < sch->n_children; i++)
        need |= !hs_field_same_type(&sch->children[i], &types[i], true);
    if (!need)
        return HS_OK;
    int n = sch->n_children;
    ex_expr **ex = hs_calloc((size_t)n, sizeof *ex);
    const char **names = hs_calloc((size_t)n, sizeof *names);
    hs_status st = ex && names ? HS_OK : pl_nomem(p);
    json_t *cref = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval",
                             "c", "location", -1);
    if (!cref && st == HS_OK)
        st = pl_nomem(p);
    for (int i = 0; i < n && st == HS_OK; i++) {
        names[i] = sch->children[i].name;
        pos_ctx pc = {i};
        ex_scope es = {.schema = sch, .column = pos_column, .ctx = &pc};
        if (hs_field_same_type(&sch->children[i], &types[i], true)) {
            st = ex_bind_json(cref, p->text, &es, false, &ex[i], p->err);
        } else {
            /* a column of NULLs (type NA) becomes a typed NULL constant */
            json_t *src = sch->children[i].type == HS_TYPE_NA
                              ? json_pack("{s:{s:b,s:i}}", "A_Const", "isnull", 1, "location", -1)
                              : json_incref(cref);
            json_t *c = src ? pl_cast_json(src, &types[i]) : NULL;
            json_decref(src);
            st = c ? ex_bind_json(c, p->text, &es, false, &ex[i], p->err) : pl_nomem(p);
            json_decref(c);
        }
    }
    json_decref(cref);
    if (st == HS_OK) {
        xo_op *op;
        st = xo_project(r->op, n, ex, names, &op, p->err);
        r->op = st == HS_OK ? op : NULL;
        ex = st == HS_OK ? (hs_free(ex), NULL) : (hs_free(ex), NULL);
    } else {
        for (int i = 0; i < n && ex; i++)
            ex_free(ex[i]);
        hs_free(ex);
    }
    hs_free(names);
    return st;
}

/* Filters r by the AND of nodes (bound with sc's hooks over r). */
hs_status  pl_filter_rel(planner *p, rel *r, json_t **nodes, int n, const json_t **map_nodes,
                            int *map_cols, int n_map, const char *clause)
{
    if (n == 0)
        return HS_OK;
    json_t *all = pl_mk_and(nodes, n);
    if (!all)
        return pl_nomem(p);
    scope sc;
    pl_scope_rel(&sc, p, r);
    sc.map_nodes = map_nodes;
    sc.map_cols = map_cols;
    sc.n_map = n_map;
    sc.no_aggs = clause;
    ex_expr *e;
    hs_status st = pl_bind_in(&sc, all, true, &e);
    json_decref(all);
    if (st == HS_OK) {
        xo_op *op;
        st = xo_filter(r->op, e, &op, p->err);
        r->op = st == HS_OK ? op : NULL;
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* projections                                                         */

/* r := r's columns then the expression node (bound over r with sc's
 * hooks); *col gets its position.  The new column is hidden. */

hs_status  pl_rel_add_expr(planner *p, rel *r, const json_t *node, int *col)
{
    return pl_rel_add_expr_in(p, r, node, NULL, NULL, NULL, col);
}

hs_status  pl_rel_add_expr_in(planner *p, rel *r, const json_t *node, const nmap *m,
                                 const layer *pre, const int *key_of_col, int *col)
{
    json_t *b;
    if (pl_is_kind(node, "ColumnRef", &b)) {
        const char *names[8];
        int n = pl_colref_names(b, names, 8);
        layer l = {r->cols, r->n, 0};
        int c = n > 0 && names[n - 1] ? pl_layer_find(&l, names, n) : -1;
        if (c >= 0) {
            *col = c;
            return HS_OK;
        }
    }
    int n = r->n;
    ex_expr **ex = hs_calloc((size_t)n + 2, sizeof *ex);
    const char **names = hs_calloc((size_t)n + 2, sizeof *names);
    int *src = hs_calloc((size_t)n + 2, sizeof *src);
    qcol *nc = hs_realloc(r->cols, (size_t)(n + 1) * sizeof *nc);
    hs_status st = ex && names && nc && src ? HS_OK : pl_nomem(p);
    if (nc)
        r->cols = nc;
    for (int i = 0; i < n && st == HS_OK; i++) {
        names[i] = r->op->schema.children[i].name;
        src[i] = i;
    }
    if (src)
        src[n] = -1;
    if (st == HS_OK) {
        scope sc;
        pl_scope_rel(&sc, p, r);
        sc.no_aggs = "this context";
        if (m) {
            sc.map_nodes = m->nodes;
            sc.map_cols = m->cols;
            sc.n_map = m->n;
        }
        sc.pre = pre;
        sc.key_of_col = key_of_col;
        st = pl_bind_in(&sc, node, false, &ex[n]);
        names[n] = "?column?";
    }
    if (st == HS_OK) {
        xo_op *op;
        st = pl_project_mixed(p, r->op, n + 1, src, ex, names, &op);
        r->op = st == HS_OK ? op : NULL;
        if (st == HS_OK) {
            r->cols[n] = (qcol){NULL, hs_strdup(""), true};
            r->n = n + 1;
            *col = n;
            if (!r->cols[n].name)
                st = pl_nomem(p);
        }
    } else {
        for (int i = 0; ex && i <= n; i++)
            ex_free(ex[i]);
    }
    hs_free(ex);
    hs_free(names);
    hs_free(src);
    return st;
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */

static hs_status planner_init(planner *p, sq_session *s, xo_ctx *ctx, const json_t *stmt,
                              const char *text, hs_error *err)
{
    memset(p, 0, sizeof *p);
    p->s = s;
    p->ctx = ctx;
    p->text = text;
    p->err = err;
    p->names = json_object();
    if (!p->names)
        return hs_err_nomem(err, 0);
    pl_fold_intervals((json_t *)stmt, 0);
    pl_rewrite_stats((json_t *)stmt, 0);
    collect_names(p, stmt, 0);
    return HS_OK;
}

hs_status sq_plan_query(sq_session *s, xo_ctx *ctx, const json_t *select, const char *text,
                        xo_op **out, hs_error *err)
{
    *out = NULL;
    planner p;
    HS_TRY(planner_init(&p, s, ctx, select, text, err));
    rel r = {0};
    hs_status st = pl_plan_query(&p, select, &r);
    for (int i = 0; st == HS_OK && i < s->n_tt; i++)
        if (!s->tt[i].used)
            st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, s->tt[i].off,
                         "FOR SYSTEM_%s AS OF must follow a table name in FROM",
                         s->tt[i].version ? "VERSION" : "TIME");
    if (st == HS_OK) {
        *out = r.op;
        r.op = NULL;
    }
    pl_rel_clear(&r);
    planner_free(&p);
    return st;
}

/* ---- expressions with correlated subqueries over given rows (dml.c) ----
 * The rows become a VALUES relation (plus a hidden ordinal, since joins
 * need not keep their order); each expression's subqueries attach to it as
 * in a SELECT's WHERE or select list (decorrelated joins, the Apply), the
 * expression becomes a column, and the values go back in the rows' order. */

/* The input relation: b's columns and the ordinal, named as given. */
static hs_status eval_input(planner *p, const hs_batch *b, const char *const *quals, const bool *hidden,
                            rel *cur)
{
    hs_batch *in = hs_calloc(1, sizeof *in);
    hs_status st = in ? hs_field_copy(&b->schema, &in->schema) : pl_nomem(p);
    if (st == HS_OK) {
        hs_field f;
        hs_field_init(&f, "\x01ord", HS_TYPE_INT64, false);
        f.field_id = in->schema.n_children + 1;
        st = hs_field_add_child(&in->schema, &f) == HS_OK ? HS_OK : pl_nomem(p);
        if (st != HS_OK)
            hs_field_clear(&f);
    }
    if (st == HS_OK) {
        in->cols = hs_calloc((size_t)b->n_cols + 2, sizeof *in->cols);
        st = in->cols ? HS_OK : pl_nomem(p);
    }
    for (int c = 0; st == HS_OK && c < b->n_cols; c++) {
        st = hs_col_slice(b->cols[c], 0, b->n_rows, &in->cols[c], p->err);
        if (st == HS_OK)
            in->n_cols++;
    }
    if (st == HS_OK)
        st = hs_col_create(&in->schema.children[b->n_cols], b->n_rows, &in->cols[b->n_cols], p->err);
    for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++)
        st = hs_col_append_fixed(in->cols[b->n_cols], &i) == HS_OK ? HS_OK : pl_nomem(p);
    if (st == HS_OK) {
        in->n_cols++;
        in->n_rows = b->n_rows;
    } else {
        hs_batch_free(in);
        return st;
    }
    hs_field schema;
    if (hs_field_copy(&in->schema, &schema) != HS_OK) {
        hs_batch_free(in);
        return pl_nomem(p);
    }
    st = xo_values(p->ctx, &schema, 1, &in, &cur->op, p->err);
    hs_field_clear(&schema);
    HS_TRY(st);
    cur->cols = hs_calloc((size_t)b->n_cols + 2, sizeof *cur->cols);
    if (!cur->cols)
        return pl_nomem(p);
    for (int c = 0; c <= b->n_cols; c++) {
        bool ord = c == b->n_cols;
        cur->cols[c].qual = ord ? NULL : pl_dup_or_null(quals[c]);
        cur->cols[c].name = hs_strdup(ord ? "\x01ord" : b->schema.children[c].name);
        cur->cols[c].hidden = ord || hidden[c];
        cur->n++;
        if (!cur->cols[c].name || (!ord && quals[c] && !cur->cols[c].qual))
            return pl_nomem(p);
    }
    return HS_OK;
}

hs_status sq_eval_correlated(sq_session *s, const char *text, const hs_batch *b, const char *const *quals,
                             const bool *hidden, json_t *const *nodes, int n, hs_column **outs, hs_error *err)
{
    for (int i = 0; i < n; i++)
        outs[i] = NULL;
    xo_ctx *ctx = NULL;
    HS_TRY(sq_ctx_new(s, &ctx, err));
    json_t *keep = json_array();   /* the planned copies: nmap borrows their nodes */
    planner p;
    hs_status st = keep ? HS_OK : hs_err_nomem(err, 0);
    for (int i = 0; st == HS_OK && i < n; i++) {
        json_t *h = json_pack("[o]", json_deep_copy(nodes[i]));
        st = h && json_array_append_new(keep, h) == 0 ? HS_OK : hs_err_nomem(err, 0);
    }
    bool init = false;
    if (st == HS_OK) {
        st = planner_init(&p, s, ctx, keep, text, err);
        init = st == HS_OK;
    }
    rel cur = {0};
    nmap m = {0};
    int *col = hs_calloc((size_t)n + 1, sizeof *col);
    if (st == HS_OK && !col)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK)
        st = eval_input(&p, b, quals, hidden, &cur);
    int ord = b->n_cols;
    for (int i = 0; st == HS_OK && i < n; i++) {
        json_t *h = json_array_get(keep, (size_t)i);
        st = pl_attach_scalars(&p, &cur, &h, 1, &m, false);
        if (st == HS_OK)
            st = pl_rel_add_expr_in(&p, &cur, json_array_get(h, 0), &m, NULL, NULL, &col[i]);
    }
    /* run it: the ordinals and the values, then back into b's order */
    hs_column *ords = NULL, **vals = hs_calloc((size_t)n + 1, sizeof *vals);
    if (st == HS_OK && !vals)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK)
        st = hs_col_create(&cur.op->schema.children[ord], b->n_rows, &ords, err);
    for (int i = 0; st == HS_OK && i < n; i++)
        st = hs_col_create(&cur.op->schema.children[col[i]], b->n_rows, &vals[i], err);
    while (st == HS_OK) {
        hs_batch *o = NULL;
        st = xo_next(cur.op, &o, err);
        if (st != HS_OK || !o)
            break;
        st = hs_col_append_column(ords, o->cols[ord], err);
        for (int i = 0; st == HS_OK && i < n; i++)
            st = hs_col_append_column(vals[i], o->cols[col[i]], err);
        hs_batch_free(o);
    }
    int64_t *pos = NULL;
    if (st == HS_OK && ords->length != b->n_rows)
        st = hs_err_set(err, HS_INTERNAL, "correlated subqueries: %lld rows for %lld",
                        (long long)ords->length, (long long)b->n_rows);
    if (st == HS_OK) {
        pos = hs_malloc((size_t)b->n_rows * sizeof *pos + 1);
        st = pos ? HS_OK : hs_err_nomem(err, 0);
        for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++)
            pos[i] = -1;
        for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++) {
            int64_t o = HS_COL_VALUES(ords, int64_t)[i];
            if (o < 0 || o >= b->n_rows || pos[o] >= 0)
                st = hs_err_set(err, HS_INTERNAL, "correlated subqueries: row %lld twice", (long long)o);
            else
                pos[o] = i;
        }
    }
    for (int i = 0; st == HS_OK && i < n; i++)
        st = hs_col_take(vals[i], pos, b->n_rows, &outs[i], err);
    if (st != HS_OK)
        for (int i = 0; i < n; i++) {
            hs_col_free(outs[i]);
            outs[i] = NULL;
        }
    hs_free(pos);
    hs_col_free(ords);
    for (int i = 0; vals && i < n; i++)
        hs_col_free(vals[i]);
    hs_free(vals);
    hs_free(col);
    pl_nmap_free(&m);
    pl_rel_clear(&cur);
    if (init)
        planner_free(&p);
    json_decref(keep);
    sq_ctx_free(ctx);
    return st;
}

static hs_status prefetch_next(xo_op *op, hs_batch **out, hs_error *err)
{
    prefetch_op *pf = (prefetch_op *)op;
    if (!pf->given) {
        pf->given = true;
        *out = pf->first;
        pf->first = NULL;
        return HS_OK;
    }
    hs_status st = xo_next(op->children[0], out, err);
    if (st != HS_OK)
        sq_stream_failed(pf->s, st, err);   /* the session's SQLSTATE and message */
    return st;
}

static void prefetch_destroy(xo_op *op) { hs_batch_free(((prefetch_op *)op)->first); }

static hs_status prefetch(sq_session *s, xo_op *child, xo_op **out, hs_error *err)
{
    *out = NULL;
    hs_batch *first = NULL;
    hs_status st = xo_next(child, &first, err);
    prefetch_op *pf = st == HS_OK ? hs_calloc(1, sizeof *pf) : NULL;
    xo_op **kids = pf ? hs_calloc(1, sizeof *kids) : NULL;
    if (st == HS_OK && (!pf || !kids || hs_field_copy(&child->schema, &pf->op.schema) != HS_OK))
        st = hs_err_nomem(err, sizeof *pf);
    if (st != HS_OK) {
        if (pf)
            hs_field_clear(&pf->op.schema);
        hs_free(pf);
        hs_free(kids);
        hs_batch_free(first);
        xo_free(child);
        return st;
    }
    kids[0] = child;
    pf->op.name = "Result";
    pf->op.ctx = child->ctx;
    pf->op.n_children = 1;
    pf->op.children = kids;
    pf->op.next = prefetch_next;
    pf->op.destroy = prefetch_destroy;
    pf->first = first;
    pf->s = s;
    *out = &pf->op;
    return HS_OK;
}

hs_status sq_exec_query(sq_session *s, const json_t *select, const char *text, hs_result **out,
                        hs_error *err)
{
    xo_ctx *ctx;
    HS_TRY(sq_ctx_new(s, &ctx, err));
    xo_op *op = NULL;
    hs_status st = sq_plan_query(s, ctx, select, text, &op, err);
    if (st == HS_OK)
        st = prefetch(s, op, &op, err);
    if (st != HS_OK) {
        sq_ctx_free(ctx);
        return st;
    }
    struct ArrowArrayStream stream;
    HS_TRY(xo_to_stream(op, sq_ctx_free, ctx, &stream, err));
    return sq_result_rows("SELECT", &stream, out, err);
}
