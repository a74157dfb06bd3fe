/*
 * sql/plan.c - queries: libpg_query JSON -> bound relations -> a tree of
 * physical operators (exec/exec.h).  The planner spans plan*.c (subqueries,
 * SELECT blocks, parse-tree rewrites, EXPLAIN and CREATE/DROP INDEX in their
 * own files); plan_int.h lists which file holds what.
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
 *      hash-joined).
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
    return json_object_get(j, "SubLink") ? PL_SKIP : PL_DESCEND;
}

void  pl_collect_calls(const json_t *j, json_t *arr, bool (*want)(const json_t *), int depth)
{
    calls_ctx c = {arr, want};
    pl_walk(j, visit_call, &c, depth);
}

/* Aggregate calls under j (not inside subqueries), into arr. */
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
            && !pl_jget(sub, "distinctClause")) {
            /* EXISTS ignores its select list: its '*' reads no column */
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

/* Column of a layer for names[0..n): -1 none, -2 ambiguous. */
int  pl_layer_find(const layer *l, const char *const *names, int n)
{
    const char *qual = n >= 2 ? names[n - 2] : NULL, *name = names[n - 1];
    int hit = -1, count = 0;
    for (int i = 0; i < l->n; i++) {
        const qcol *c = &l->cols[i];
        if (!pl_name_eq(c->name, name) || (qual && !pl_name_eq(c->qual, qual)) || (!qual && c->hidden))
            continue;
        if (hit < 0)
            hit = i;
        count++;
    }
    if (count > 1)
        return -2;
    if (hit >= 0)
        return hit;
    /* case-insensitive, unique (columns of files written with upper case) */
    for (int i = 0; i < l->n; i++) {
        const qcol *c = &l->cols[i];
        if (!c->name || strcasecmp(c->name, name) != 0 || (!qual && c->hidden) ||
            (qual && (!c->qual || strcasecmp(c->qual, qual) != 0)))
            continue;
        if (hit >= 0)
            return -2;
        hit = i;
    }
    return hit;
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
static hs_status scope_pair(scope *sc, planner *p, const rel *outer, const rel *inner,
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
static hs_status col_expr(planner *p, const hs_field *schema, int idx, ex_expr **out)
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
                st = col_expr(p, &child->schema, src[i], &ex[i]);
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

static bool is_int_type(hs_type t) { return t >= HS_TYPE_INT8 && t <= HS_TYPE_UINT64; }
static bool is_num_type(hs_type t)
{
    return is_int_type(t) || t == HS_TYPE_FLOAT16 || t == HS_TYPE_FLOAT32 ||
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
    if (is_int_type(a->type) && is_int_type(b->type)) {
        out->type = HS_TYPE_INT64;
        return;
    }
    if (is_num_type(a->type) && is_num_type(b->type)) {
        if (a->type == HS_TYPE_DECIMAL128 && b->type == HS_TYPE_DECIMAL128) {
            out->type = HS_TYPE_DECIMAL128;
            out->scale = a->scale > b->scale ? a->scale : b->scale;
            out->precision = 38;
        } else if ((a->type == HS_TYPE_DECIMAL128 && is_int_type(b->type)) ||
                   (b->type == HS_TYPE_DECIMAL128 && is_int_type(a->type))) {
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

/* ------------------------------------------------------------------ */
/* FROM                                                                */




static void fnode_free(fnode *f)
{
    if (!f)
        return;
    hs_field_clear(&f->ts);
    hs_buf_free(&f->filt);
    pl_rel_clear(&f->rl);
    hs_free(f->alias);
    hs_free(f->jalias);
    pl_qcols_free(f->ns, f->n_ns);
    hs_free(f);
}

void  pl_fromc_free(fromc *fc)
{
    for (int i = 0; i < fc->n_all; i++)
        fnode_free(fc->all[i]);
    hs_free(fc->all);
    hs_free(fc->items);
    hs_free(fc->leaves);
    memset(fc, 0, sizeof *fc);
}

static hs_status push_ptr(planner *p, fnode ***a, int *n, fnode *f)
{
    fnode **na = hs_realloc(*a, (size_t)(*n + 1) * sizeof *na);
    if (!na)
        return pl_nomem(p);
    *a = na;
    na[(*n)++] = f;
    return HS_OK;
}

static hs_status new_fnode(planner *p, fromc *fc, int kind, int loc, fnode **out)
{
    fnode *f = hs_calloc(1, sizeof *f);
    if (!f)
        return pl_nomem(p);
    f->kind = kind;
    f->loc = loc;
    hs_status st = push_ptr(p, &fc->all, &fc->n_all, f);
    if (st != HS_OK) {
        hs_free(f);
        return st;
    }
    *out = f;
    return HS_OK;
}


/* Rows of the table's current snapshot (summary), or 1000. */
static double table_rows(hs_table *t)
{
    int64_t cur = hs_table_current_snapshot_id(t);
    int n = hs_snapshot_count(t);
    for (int i = 0; i < n; i++) {
        hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
        hs_error e = {0};
        if (hs_snapshot_get(t, i, &si, &e) == HS_OK && si.snapshot_id == cur)
            return si.total_records >= 0 ? (double)si.total_records : 1000.0;
    }
    return n == 0 ? 0.0 : 1000.0;
}

/* Renames r's columns with alias (qualifier) and optional column aliases. */
static hs_status apply_alias(planner *p, rel *r, const char *alias, const json_t *colnames, int loc)
{
    HS_TRY(pl_rel_name(r, alias, p->err));
    size_t nc = json_array_size(colnames);
    if ((int)nc > r->n)
        return pl_fail(p, HS_INVALID, "42P10", loc,
                    "table \"%s\" has %d columns available but %zu columns specified",
                    alias ? alias : "?", r->n, nc);
    for (size_t i = 0; i < nc; i++) {
        const char *nm = sq_str(json_array_get(colnames, i));
        char *d = hs_strdup(nm ? nm : "");
        if (!d)
            return pl_nomem(p);
        hs_free(r->cols[i].name);
        r->cols[i].name = d;
    }
    return HS_OK;
}

static hs_status leaf_ns_from_rel(planner *p, fnode *f)
{
    f->n_ns = f->rl.n;
    f->ns = hs_calloc((size_t)f->n_ns + 1, sizeof *f->ns);
    if (!f->ns)
        return pl_nomem(p);
    for (int i = 0; i < f->n_ns; i++) {
        f->ns[i].qual = pl_dup_or_null(f->rl.cols[i].qual);
        f->ns[i].name = hs_strdup(f->rl.cols[i].name);
        f->ns[i].hidden = f->rl.cols[i].hidden;
        if (!f->ns[i].name)
            return pl_nomem(p);
    }
    return HS_OK;
}

static cte *find_cte(planner *p, const char *name)
{
    for (cte *c = p->ctes; c; c = c->next)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

static hs_status from_item(planner *p, fromc *fc, const json_t *item, fnode **out);


/* End of a (possibly qualified, possibly quoted) name starting at t, or NULL. */
static const char *name_end(const char *t)
{
    for (;;) {
        if (*t == '"') {
            t++;
            while (*t && !(*t == '"' && t[1] != '"'))
                t += *t == '"' ? 2 : 1;
            if (!*t)
                return NULL;
            t++;
        } else if (isalpha((unsigned char)*t) || *t == '_' || (unsigned char)*t >= 0x80) {
            while (isalnum((unsigned char)*t) || *t == '_' || *t == '$' || (unsigned char)*t >= 0x80)
                t++;
        } else {
            return NULL;
        }
        if (*t != '.')
            return t;
        t++;
    }
}

/* Applies a FOR SYSTEM_VERSION/SYSTEM_TIME clause written right after the
 * table name of RangeVar b (session.c cut it out of the text). */
static hs_status time_travel(planner *p, const json_t *b, fnode *f)
{
    int loc = sq_loc(b);
    if (loc < 0 || p->s->n_tt == 0)
        return HS_OK;
    const char *e = name_end(p->text + loc);
    if (!e)
        return HS_OK;
    int off0 = (int)(e - p->text);
    while (*e == ' ' || *e == '\t' || *e == '\n' || *e == '\r')
        e++;
    int off1 = (int)(e - p->text);
    for (int i = 0; i < p->s->n_tt; i++) {
        sq_tt *tt = &p->s->tt[i];
        if (tt->off < off0 || tt->off > off1)
            continue;
        tt->used = true;
        if (tt->version) {
            f->so.use_snapshot_id = 1;
            f->so.snapshot_id = tt->snapshot_id;
            return HS_OK;
        }
        int y, mo, d, hh = 0, mi = 0;
        double sec = 0;
        char tz[16] = "", secs[32] = "";
        /* seconds as text, converted locale-independently (hs_strtod) */
        int n = sscanf(tt->ts, "%d-%d-%d%*[ T]%d:%d:%31[0-9.]%15s", &y, &mo, &d, &hh, &mi, secs, tz);
        if (n >= 6)
            sec = hs_strtod(secs, NULL);
        if (n < 3 || mo < 1 || mo > 12 || d < 1 || d > 31 || (tz[0] && strcmp(tz, "Z") &&
                                                               strcmp(tz, "+00") && strcmp(tz, "+00:00")))
            return pl_fail(p, HS_INVALID, "22007", tt->off,
                        "invalid timestamp \"%s\" in FOR SYSTEM_TIME AS OF (YYYY-MM-DD[ HH:MM:SS] UTC)",
                        tt->ts);
        int64_t ms = (hs_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + hh * 3600 + mi * 60) * 1000 +
                     (int64_t)(sec * 1000 + 0.5);
        f->so.use_as_of = 1;
        f->so.as_of_ms = ms;
        return HS_OK;
    }
    return HS_OK;
}

/* ---- WITH RECURSIVE ----
 * A recursive CTE (anchor UNION [ALL] recursive term) is run the first time
 * it is referenced, while planning: the anchor's rows are the first working
 * table; then, until an iteration adds no rows, the recursive term is
 * planned again (its self-reference reads the working table as Values)
 * and run, and its rows (UNION: only rows not seen before, as EXCEPT
 * against all rows so far) become the next working table.  Every
 * reference then reads all rows as Values.  Column types are the anchor's;
 * the recursive term must produce the same (else 42804, as PostgreSQL).
 * At most PL_REC_MAX_ITER iterations (54001 past them). */

#define PL_REC_MAX_ITER 100000

void pl_cte_clear(cte *c)
{
    for (int i = 0; i < c->n_rows; i++)
        hs_batch_free(c->rows[i]);
    for (int i = 0; i < c->n_work; i++)
        hs_batch_free(c->work[i]);
    hs_free(c->rows);
    hs_free(c->work);
    c->rows = c->work = NULL;
    c->n_rows = c->n_work = 0;
    if (c->rec_schema.name)
        hs_field_clear(&c->rec_schema);
    c->rec_state = 0;
}

/* Appends b (taken) to the array *a of *n. */
static hs_status push_batch(planner *p, hs_batch ***a, int *n, hs_batch *b)
{
    hs_batch **na = hs_realloc(*a, (size_t)(*n + 1) * sizeof *na);
    if (!na) {
        hs_batch_free(b);
        return pl_nomem(p);
    }
    na[(*n)++] = b;
    *a = na;
    return HS_OK;
}

/* A deep copy of b with schema. */
static hs_status copy_batch(planner *p, const hs_field *schema, const hs_batch *b, hs_batch **out)
{
    HS_TRY(hs_batch_create(schema, 0, out, p->err));
    for (int c = 0; c < b->n_cols && c < (*out)->n_cols; c++) {
        hs_column *col;
        hs_status st = hs_col_slice(b->cols[c], 0, b->n_rows, &col, p->err);
        if (st != HS_OK) {
            hs_batch_free(*out);
            *out = NULL;
            return st;
        }
        hs_col_free((*out)->cols[c]);
        (*out)->cols[c] = col;
    }
    (*out)->n_rows = b->n_rows;
    return HS_OK;
}

/* Values over copies of the n batches. */
static hs_status values_of(planner *p, const hs_field *schema, hs_batch *const *bs, int n,
                           xo_op **out)
{
    hs_batch **cp = hs_calloc((size_t)n + 1, sizeof *cp);
    if (!cp)
        return pl_nomem(p);
    hs_status st = HS_OK;
    for (int i = 0; i < n && st == HS_OK; i++)
        st = copy_batch(p, schema, bs[i], &cp[i]);
    if (st == HS_OK) {
        st = xo_values(p->ctx, schema, n, cp, out, p->err);   /* takes cp[i] */
        hs_free(cp);
        return st;
    }
    for (int i = 0; i < n; i++)
        hs_batch_free(cp[i]);
    hs_free(cp);
    return st;
}

/* Runs op to its end (freed), appending its batches (schema set to c's)
 * to *a. */
static hs_status drain(planner *p, cte *c, xo_op *op, hs_batch ***a, int *n)
{
    hs_status st = HS_OK;
    for (;;) {
        hs_batch *b;
        st = xo_next(op, &b, p->err);
        if (st != HS_OK || !b)
            break;
        hs_batch *cp;
        st = copy_batch(p, &c->rec_schema, b, &cp);   /* (with the CTE's names) */
        hs_batch_free(b);
        if (st == HS_OK)
            st = push_batch(p, a, n, cp);
        if (st != HS_OK)
            break;
    }
    xo_free(op);
    return st;
}

static hs_status cte_materialize(planner *p, cte *c, int loc)
{
    const json_t *q = c->query;
    json_t *lb, *rb;
    if (!pl_is_kind(pl_jget(q, "larg"), "SelectStmt", &lb) && !(lb = pl_jget(q, "larg")))
        return pl_fail(p, HS_INVALID, "42P19", loc, "recursive query \"%s\" has no anchor", c->name);
    if (!pl_is_kind(pl_jget(q, "rarg"), "SelectStmt", &rb) && !(rb = pl_jget(q, "rarg")))
        return pl_fail(p, HS_INVALID, "42P19", loc, "recursive query \"%s\" has no recursive term",
                       c->name);
    bool all = json_is_true(pl_jget(q, "all"));
    cte *saved = p->ctes;
    /* the anchor sees the CTEs before this one */
    rel r = {0};
    p->ctes = c->next;
    c->in_use = 1;
    hs_status st = pl_plan_query(p, lb, &r);
    c->in_use = 0;
    p->ctes = saved;
    HS_TRY(st);
    if (hs_field_copy(&r.op->schema, &c->rec_schema) != HS_OK) {
        pl_rel_clear(&r);
        return pl_nomem(p);
    }
    for (int i = 0; i < c->rec_schema.n_children && i < r.n; i++) {
        char *nm = hs_strdup(r.cols[i].name ? r.cols[i].name : "");
        if (!nm) {
            pl_rel_clear(&r);
            return pl_nomem(p);
        }
        hs_free(c->rec_schema.children[i].name);
        c->rec_schema.children[i].name = nm;
    }
    xo_op *op = r.op;
    r.op = NULL;
    pl_rel_clear(&r);
    if (!all) {
        st = xo_distinct(op, &op, p->err);
        if (st != HS_OK)
            return st;
    }
    st = drain(p, c, op, &c->work, &c->n_work);
    for (int i = 0; i < c->n_work && st == HS_OK; i++) {
        hs_batch *cp;
        st = copy_batch(p, &c->rec_schema, c->work[i], &cp);
        if (st == HS_OK)
            st = push_batch(p, &c->rows, &c->n_rows, cp);
    }
    int64_t iter = 0;
    while (st == HS_OK && c->n_work > 0) {
        if (++iter > PL_REC_MAX_ITER) {
            st = pl_fail(p, HS_INVALID, "54001", loc,
                         "recursive query \"%s\" did not end within %d iterations", c->name,
                         PL_REC_MAX_ITER);
            break;
        }
        /* the recursive term sees this CTE (reading the working table) */
        c->rec_state = 1;
        p->ctes = c;
        st = pl_plan_query(p, rb, &r);
        p->ctes = saved;
        c->rec_state = 0;
        if (st != HS_OK)
            break;
        const hs_field *rs = &r.op->schema;
        if (rs->n_children != c->rec_schema.n_children) {
            pl_rel_clear(&r);
            st = pl_fail(p, HS_INVALID, "42601", loc,
                         "each UNION query must have the same number of columns");
            break;
        }
        for (int i = 0; i < rs->n_children && st == HS_OK; i++) {
            hs_field a = c->rec_schema.children[i], b = rs->children[i];
            a.nullable = b.nullable = true;
            if (!hs_field_equals(&a, &b, false, false))
                st = pl_fail(p, HS_INVALID, "42804",
                             loc, "recursive query \"%s\" column %d has type %s in non-recursive "
                             "term but type %s overall", c->name, i + 1,
                             hs_type_name(a.type), hs_type_name(b.type));
        }
        if (st != HS_OK) {
            pl_rel_clear(&r);
            break;
        }
        op = r.op;
        r.op = NULL;
        pl_rel_clear(&r);
        if (!all) {   /* only rows not seen before */
            xo_op *seen;
            st = values_of(p, &c->rec_schema, c->rows, c->n_rows, &seen);
            if (st == HS_OK)
                st = xo_setop(XO_SET_EXCEPT, false, op, seen, &op, p->err);
            else
                xo_free(op);
            if (st != HS_OK)
                break;
        }
        hs_batch **next = NULL;
        int n_next = 0;
        st = drain(p, c, op, &next, &n_next);
        for (int i = 0; i < c->n_work; i++)
            hs_batch_free(c->work[i]);
        hs_free(c->work);
        c->work = next;
        c->n_work = n_next;
        for (int i = 0; i < c->n_work && st == HS_OK; i++) {
            hs_batch *cp;
            st = copy_batch(p, &c->rec_schema, c->work[i], &cp);
            if (st == HS_OK)
                st = push_batch(p, &c->rows, &c->n_rows, cp);
        }
    }
    for (int i = 0; i < c->n_work; i++)
        hs_batch_free(c->work[i]);
    hs_free(c->work);
    c->work = NULL;
    c->n_work = 0;
    if (st == HS_OK)
        c->rec_state = 2;
    return st;
}

/* A reference to a recursive CTE: its rows (the working table inside its
 * own recursive term). */
static hs_status from_recursive(planner *p, cte *c, fnode *f, int loc)
{
    if (c->rec_state == 0)
        HS_TRY(cte_materialize(p, c, loc));
    if (c->rec_state == 1)
        HS_TRY(values_of(p, &c->rec_schema, c->work, c->n_work, &f->rl.op));
    else
        HS_TRY(values_of(p, &c->rec_schema, c->rows, c->n_rows, &f->rl.op));
    return pl_rel_name(&f->rl, NULL, p->err);
}

static hs_status from_rangevar(planner *p, fromc *fc, json_t *b, fnode **out)
{
    const char *rel_name_s = pl_jstrv(b, "relname");
    json_t *alias = pl_jget(b, "alias");
    const char *an = alias ? pl_jstrv(alias, "aliasname") : NULL;
    json_t *colnames = alias ? pl_jget(alias, "colnames") : NULL;
    int loc = sq_loc(b);
    cte *c = !pl_jget(b, "schemaname") && rel_name_s ? find_cte(p, rel_name_s) : NULL;
    fnode *f;
    if (c && c->recursive) {
        HS_TRY(new_fnode(p, fc, F_REL, loc, &f));
        HS_TRY(from_recursive(p, c, f, loc));
        HS_TRY(apply_alias(p, &f->rl, an ? an : c->name, c->colnames, loc));
        if (colnames)
            HS_TRY(apply_alias(p, &f->rl, an, colnames, loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return HS_OK;
    }
    if (c) {
        if (c->in_use)
            return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "recursive CTEs are not supported");
        HS_TRY(new_fnode(p, fc, F_REL, loc, &f));
        c->in_use = 1;
        /* the CTE sees only the CTEs defined before it */
        cte *saved = p->ctes;
        p->ctes = c->next;
        hs_status st = pl_plan_query(p, c->query, &f->rl);
        p->ctes = saved;
        c->in_use = 0;
        HS_TRY(st);
        HS_TRY(apply_alias(p, &f->rl, an ? an : c->name, c->colnames, loc));
        if (colnames)
            HS_TRY(apply_alias(p, &f->rl, an, colnames, loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return HS_OK;
    }
    HS_TRY(new_fnode(p, fc, F_TABLE, loc, &f));
    HS_TRY(sq_table_lookup(p->s, b, p->text, &f->t, p->err));
    struct ArrowSchema as;
    HS_TRY(hs_table_schema(f->t, &as, p->err));
    hs_status st = hs_arrow_import_schema(&as, &f->ts, p->err);
    if (as.release)
        as.release(&as);
    HS_TRY(st);
    f->so = (hs_scan_options)HS_SCAN_OPTIONS_INIT;
    HS_TRY(time_travel(p, b, f));
    if (!f->so.use_snapshot_id && !f->so.use_as_of) {
        /* inside BEGIN ... COMMIT, a table the transaction wrote reads as
         * the transaction sees it (its uncommitted changes included) */
        hs_batch *view;
        HS_TRY(sq_txn_view(p->s, f->t, &view, p->err));
        if (view) {
            f->kind = F_REL;
            HS_TRY(xo_values(p->ctx, &view->schema, 1, &view, &f->rl.op, p->err));
            HS_TRY(pl_rel_name(&f->rl, NULL, p->err));
            HS_TRY(apply_alias(p, &f->rl, an ? an : rel_name_s, colnames, loc));
            HS_TRY(leaf_ns_from_rel(p, f));
            *out = f;
            return HS_OK;
        }
    }
    f->est = table_rows(f->t);
    f->alias = hs_strdup(an ? an : rel_name_s ? rel_name_s : "");
    if (!f->alias)
        return pl_nomem(p);
    f->n_ns = f->ts.n_children;
    f->ns = hs_calloc((size_t)f->n_ns + 1, sizeof *f->ns);
    if (!f->ns)
        return pl_nomem(p);
    size_t nc = json_array_size(colnames);
    if ((int)nc > f->n_ns)
        return pl_fail(p, HS_INVALID, "42P10", loc,
                    "table \"%s\" has %d columns available but %zu columns specified", f->alias,
                    f->n_ns, nc);
    for (int i = 0; i < f->n_ns; i++) {
        const char *nm = (size_t)i < nc ? sq_str(json_array_get(colnames, i)) : f->ts.children[i].name;
        f->ns[i].qual = hs_strdup(f->alias);
        f->ns[i].name = hs_strdup(nm ? nm : "");
        if (!f->ns[i].qual || !f->ns[i].name)
            return pl_nomem(p);
    }
    *out = f;
    return HS_OK;
}

static hs_status from_item(planner *p, fromc *fc, const json_t *item, fnode **out)
{
    const char *k;
    json_t *b;
    if (!sq_node(item, &k, &b))
        return pl_fail(p, HS_INTERNAL, "XX000", -1, "malformed FROM item");
    if (fc->n_leaves >= 200)
        return pl_fail(p, HS_UNSUPPORTED, "54000", pl_first_loc(b, 0), "more than 200 tables in one FROM");
    if (!strcmp(k, "RangeVar")) {
        HS_TRY(from_rangevar(p, fc, b, out));
        return push_ptr(p, &fc->leaves, &fc->n_leaves, *out);
    }
    if (!strcmp(k, "RangeSubselect")) {
        /* a LATERAL subquery that references nothing before it (the
         * correlated ones were rewritten into joins: plan_lateral.c) */
        json_t *alias = pl_jget(b, "alias");
        json_t *sb;
        if (!pl_is_kind(pl_jget(b, "subquery"), "SelectStmt", &sb))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(b, 0), "unsupported subquery in FROM");
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_REL, pl_first_loc(b, 0), &f));
        HS_TRY(pl_plan_query(p, sb, &f->rl));
        HS_TRY(apply_alias(p, &f->rl, alias ? pl_jstrv(alias, "aliasname") : NULL,
                           alias ? pl_jget(alias, "colnames") : NULL, f->loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return push_ptr(p, &fc->leaves, &fc->n_leaves, f);
    }
    if (!strcmp(k, "JoinExpr")) {
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_JOIN, pl_first_loc(b, 0), &f));
        f->jtype = pl_jstrv(b, "jointype");
        if (!f->jtype)
            f->jtype = "JOIN_INNER";
        if (strcmp(f->jtype, "JOIN_INNER") && strcmp(f->jtype, "JOIN_LEFT") &&
            strcmp(f->jtype, "JOIN_RIGHT") && strcmp(f->jtype, "JOIN_FULL"))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", f->loc, "unsupported join type %s", f->jtype);
        f->quals = pl_jget(b, "quals");
        f->using = pl_jget(b, "usingClause");
        f->natural = json_is_true(pl_jget(b, "isNatural"));
        json_t *alias = pl_jget(b, "alias");
        if (alias && pl_jstrv(alias, "aliasname")) {
            f->jalias = hs_strdup(pl_jstrv(alias, "aliasname"));
            if (!f->jalias)
                return pl_nomem(p);
        }
        HS_TRY(from_item(p, fc, pl_jget(b, "larg"), &f->l));
        HS_TRY(from_item(p, fc, pl_jget(b, "rarg"), &f->r));
        *out = f;
        return HS_OK;
    }
    if (!strcmp(k, "RangeFunction")) {
        /* unnest / generate_series (plan_srf.c); lateral ones, reading
         * earlier items' columns, were taken out of the FROM list by
         * plan_block and run over the joined rows */
        if (pl_srf_is_lateral(item))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(b, 0),
                           "a lateral function is supported as a top-level FROM item only");
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_REL, pl_first_loc(b, 0), &f));
        HS_TRY(pl_srf_from_item(p, b, &f->rl));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return push_ptr(p, &fc->leaves, &fc->n_leaves, f);
    }
    return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(b, 0), "unsupported FROM item (%s)", k);
}

/* Marks the leaves under f nullable. */
static void mark_nullable(fnode *f)
{
    if (!f)
        return;
    f->nullable = true;
    mark_nullable(f->l);
    mark_nullable(f->r);
}

/* Leaves under f (in order) into arr. */
static void leaves_of(fnode *f, fnode **arr, int *n)
{
    if (f->kind == F_JOIN) {
        leaves_of(f->l, arr, n);
        leaves_of(f->r, arr, n);
    } else {
        arr[(*n)++] = f;
    }
}

/* Which leaf a name belongs to among leaves (USING-hidden columns skipped
 * unqualified); -1 none, -2 ambiguous.  *col gets the column. */
int  pl_leaf_find(fnode **leaves, int n_leaves, const char *const *names, int n, int *col)
{
    int hit = -1;
    for (int i = 0; i < n_leaves; i++) {
        layer l = {leaves[i]->ns, leaves[i]->n_ns, 0};
        int c = pl_layer_find(&l, names, n);
        if (c == -2)
            return -2;
        if (c >= 0) {
            if (hit >= 0)
                return -2;
            hit = i;
            *col = c;
        }
    }
    return hit;
}

/* Sets up the joins' nullability and USING visibility. */
static hs_status prepare_joins(planner *p, fnode *f)
{
    if (f->kind != F_JOIN)
        return HS_OK;
    HS_TRY(prepare_joins(p, f->l));
    HS_TRY(prepare_joins(p, f->r));
    if (!strcmp(f->jtype, "JOIN_LEFT") || !strcmp(f->jtype, "JOIN_FULL"))
        mark_nullable(f->r);
    if (!strcmp(f->jtype, "JOIN_RIGHT") || !strcmp(f->jtype, "JOIN_FULL"))
        mark_nullable(f->l);
    /* NATURAL: the common column names become a USING list */
    fnode *lv[256], *rv[256];
    int nl = 0, nr = 0;
    leaves_of(f->l, lv, &nl);
    leaves_of(f->r, rv, &nr);
    if (f->natural) {
        json_t *u = json_array();
        if (!u)
            return pl_nomem(p);
        for (int i = 0; i < nl; i++)
            for (int c = 0; c < lv[i]->n_ns; c++) {
                if (lv[i]->ns[c].hidden)
                    continue;
                const char *nm = lv[i]->ns[c].name;
                int col;
                if (pl_leaf_find(rv, nr, &nm, 1, &col) >= 0)
                    json_array_append_new(u, json_pack("{s:{s:s}}", "String", "sval", nm));
            }
        /* kept alive by the planner's names object */
        char key[32];
        snprintf(key, sizeof key, "\x01natural%p", (void *)f);
        json_object_set_new(p->names, key, u);
        f->using = u;
    }
    size_t i;
    json_t *v;
    json_array_foreach(f->using, i, v) {
        const char *nm = sq_str(v);
        int lc, rc;
        int li = nm ? pl_leaf_find(lv, nl, &nm, 1, &lc) : -1;
        int ri = nm ? pl_leaf_find(rv, nr, &nm, 1, &rc) : -1;
        if (li < 0 || ri < 0)
            return pl_fail(p, HS_NOT_FOUND, "42703", f->loc,
                        "column \"%s\" specified in USING clause does not exist in %s table",
                        nm ? nm : "?", li < 0 ? "left" : "right");
        rv[ri]->ns[rc].hidden = true;
    }
    return HS_OK;
}

hs_status  pl_fromc_build(planner *p, const json_t *from, fromc *fc)
{
    size_t i;
    json_t *v;
    json_array_foreach(from, i, v) {
        fnode *f;
        HS_TRY(from_item(p, fc, v, &f));
        HS_TRY(push_ptr(p, &fc->items, &fc->n_items, f));
        HS_TRY(prepare_joins(p, f));
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* WHERE conjuncts                                                     */



void  pl_conjs_free(conjs *c)
{
    for (int i = 0; i < c->n; i++) {
        hs_free(c->a[i].lset);
        json_decref(c->a[i].node);
    }
    hs_free(c->a);
    memset(c, 0, sizeof *c);
}

static void split_and(const json_t *j, json_t *arr);

/* Whether j calls a volatile function (two calls may differ, so equal
 * texts are not equal values) or holds a subquery. */
static pl_walk_res visit_volatile(const json_t *j, void *ctx)
{
    (void)ctx;
    json_t *b;
    if (json_object_size(j) == 1 && pl_is_kind(j, "SubLink", &b))
        return PL_STOP;
    if (json_object_size(j) == 1 && pl_is_kind(j, "FuncCall", &b)) {
        static const char *const vol[] = {"random", "gen_random_uuid", "uuid_generate_v4",
                                          "setseed", "nextval", "clock_timestamp",
                                          "timeofday", NULL};
        const char *fn = pl_func_name(b);
        for (int i = 0; fn && vol[i]; i++)
            if (!strcmp(fn, vol[i]))
                return PL_STOP;
    }
    return PL_DESCEND;
}

static bool volatile_node(const json_t *j, int depth)
{
    return pl_walk(j, visit_volatile, NULL, depth);
}

bool pl_volatile(const json_t *j) { return volatile_node(j, 0); }

static bool arr_has(const json_t *arr, const json_t *x)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (pl_jeq(json_array_get(arr, i), x))
            return true;
    return false;
}

/* An OR whose branches share conjuncts: (A AND B) OR (A AND C) is
 * A AND (B OR C), and (A) OR (A AND C) is A (both hold in three-valued
 * logic: AND and OR form a distributive lattice over false < NULL < true).
 * Appends the common conjuncts and the OR of the rest to arr and returns
 * true; false (nothing appended) when the branches share nothing.  This
 * turns TPC-H Q19's p_partkey = l_partkey, repeated in each branch, into a
 * hash join key. */
static bool factor_or(json_t *args, json_t *arr)
{
    size_t n = json_array_size(args);
    if (n < 2 || n > 64)
        return false;
    json_t *br[64] = {0};
    json_t *common = json_array();
    bool ok = common != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        br[i] = json_array();
        ok = br[i] != NULL;
        if (ok)
            split_and(json_array_get(args, i), br[i]);
    }
    for (size_t k = 0; ok && k < json_array_size(br[0]); k++) {
        json_t *c = json_array_get(br[0], k);
        bool all = !volatile_node(c, 0) && !arr_has(common, c);
        for (size_t i = 1; all && i < n; i++)
            all = arr_has(br[i], c);
        if (all)
            ok = json_array_append(common, c) == 0;
    }
    bool done = false;
    if (ok && json_array_size(common) > 0) {
        json_t *ors = json_array();
        bool absorbed = false;
        for (size_t i = 0; ors && i < n && !absorbed; i++) {
            json_t *rest[256];
            int nr = 0;
            for (size_t k = 0; k < json_array_size(br[i]); k++) {
                json_t *c = json_array_get(br[i], k);
                if (!arr_has(common, c) && nr < 256)
                    rest[nr++] = c;
            }
            if (nr == 0) {
                absorbed = true;
                break;
            }
            if (nr == 256 || json_array_append_new(ors, pl_mk_and(rest, nr)) != 0) {
                json_decref(ors);
                ors = NULL;
            }
        }
        json_t *orn = NULL;
        if (ors && !absorbed)
            orn = json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "OR_EXPR", "args", ors,
                            "location", -1);
        if (ors && (absorbed || orn)) {
            for (size_t k = 0; k < json_array_size(common); k++)
                json_array_append(arr, json_array_get(common, k));
            if (orn)
                json_array_append(arr, orn);
            done = true;
        }
        json_decref(orn);
        json_decref(ors);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(br[i]);
    json_decref(common);
    return done;
}

/* Splits an AND tree into conjuncts (new references appended to arr);
 * conjuncts common to every branch of an OR are factored out of it. */
static void split_and(const json_t *j, json_t *arr)
{
    json_t *b;
    if (!j)
        return;
    if (pl_is_kind(j, "BoolExpr", &b) && pl_jstrv(b, "boolop") && !strcmp(pl_jstrv(b, "boolop"), "AND_EXPR")) {
        size_t i;
        json_t *v;
        json_array_foreach(pl_jget(b, "args"), i, v)
            split_and(v, arr);
        return;
    }
    if (pl_is_kind(j, "BoolExpr", &b) && pl_jstrv(b, "boolop") && !strcmp(pl_jstrv(b, "boolop"), "OR_EXPR")
        && factor_or(pl_jget(b, "args"), arr))
        return;
    json_array_append(arr, (json_t *)j);
}

/* AND of the nodes (a new reference; NULL for none). */
json_t *pl_mk_and(json_t **nodes, int n)
{
    if (n == 0)
        return NULL;
    if (n == 1)
        return json_incref(nodes[0]);
    json_t *args = json_array();
    for (int i = 0; args && i < n; i++)
        json_array_append(args, nodes[i]);
    return json_pack("{s:{s:s,s:o,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", args,
                     "location", -1);
}

/* Walks ColumnRefs under j (not inside subqueries), recording leaves. */
static void conj_refs(const json_t *j, fnode **leaves, int n_leaves, conj *c, int depth)
{
    if (depth > 400 || !j)
        return;
    if (json_is_object(j)) {
        json_t *b;
        if (json_object_size(j) == 1 && pl_is_kind(j, "SubLink", &b)) {
            c->sub = true;
            conj_refs(pl_jget(b, "testexpr"), leaves, n_leaves, c, depth + 1);
            return;
        }
        if (json_object_size(j) == 1 && pl_is_kind(j, "ColumnRef", &b)) {
            const char *names[8];
            int n = pl_colref_names(b, names, 8);
            int col;
            if (n < 1 || !names[n - 1])
                return;
            int li = pl_leaf_find(leaves, n_leaves, names, n, &col);
            if (li >= 0) {
                if (!c->lset[li])
                    c->n_refs++;
                c->lset[li] = 1;
            } else if (li == -1) {
                c->outer = true;
            }
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            conj_refs(v, leaves, n_leaves, c, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            conj_refs(v, leaves, n_leaves, c, depth + 1);
    }
}

/* For an OR conjunct over several tables whose every branch has conjuncts
 * on one table T alone, the OR of those (per branch, ANDed) is implied
 * by it and reads T only: it is added as a conjunct of its own, so it is
 * pushed into T's scan (the OR itself stays).  TPC-H Q7's
 * (n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY') OR (n1.n_name =
 * 'GERMANY' AND n2.n_name = 'FRANCE') gives n1.n_name = 'FRANCE' OR
 * n1.n_name = 'GERMANY', and the same for n2. */
static hs_status derive_or_filters(planner *p, fromc *fc, conjs *out)
{
    int n0 = out->n;
    for (int ci = 0; ci < n0; ci++) {
        json_t *b;
        conj *c0 = &out->a[ci];
        if (c0->sub || c0->outer || c0->n_refs < 2 || !pl_is_kind(c0->node, "BoolExpr", &b)
            || !pl_jstrv(b, "boolop") || strcmp(pl_jstrv(b, "boolop"), "OR_EXPR"))
            continue;
        json_t *args = pl_jget(b, "args");
        size_t nb = json_array_size(args);
        if (nb < 2 || nb > 64)
            continue;
        for (int li = 0; li < fc->n_leaves; li++) {
            if (!out->a[ci].lset[li])
                continue;
            json_t *ors = json_array();
            if (!ors)
                return pl_nomem(p);
            bool all = true;
            for (size_t k = 0; all && k < nb; k++) {
                json_t *parts = json_array();
                if (!parts) {
                    json_decref(ors);
                    return pl_nomem(p);
                }
                split_and(json_array_get(args, k), parts);
                json_t *mine[64];
                int nm = 0;
                for (size_t q = 0; q < json_array_size(parts) && nm < 64; q++) {
                    json_t *x = json_array_get(parts, q);
                    conj t = {0};
                    t.lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
                    if (!t.lset) {
                        json_decref(parts);
                        json_decref(ors);
                        return pl_nomem(p);
                    }
                    conj_refs(x, fc->leaves, fc->n_leaves, &t, 0);
                    if (!t.sub && !t.outer && t.n_refs == 1 && t.lset[li] && !volatile_node(x, 0))
                        mine[nm++] = x;
                    hs_free(t.lset);
                }
                all = nm > 0 && json_array_append_new(ors, pl_mk_and(mine, nm)) == 0;
                json_decref(parts);
            }
            json_t *node = NULL;
            if (all)
                node = json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "OR_EXPR", "args",
                                 ors, "location", -1);
            json_decref(ors);
            if (!node)
                continue;
            conj *na = hs_realloc(out->a, ((size_t)out->n + 1) * sizeof *na);
            if (!na) {
                json_decref(node);
                return pl_nomem(p);
            }
            out->a = na;
            conj *c = &out->a[out->n];
            memset(c, 0, sizeof *c);
            c->node = node;
            c->lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
            if (!c->lset) {
                json_decref(node);
                return pl_nomem(p);
            }
            out->n++;
            conj_refs(c->node, fc->leaves, fc->n_leaves, c, 0);
        }
    }
    return HS_OK;
}

hs_status  pl_conjs_make(planner *p, const json_t *where, fromc *fc, conjs *out)
{
    json_t *arr = json_array();
    if (!arr)
        return pl_nomem(p);
    split_and(where, arr);
    size_t n = json_array_size(arr);
    out->a = hs_calloc(n + 1, sizeof *out->a);
    if (!out->a) {
        json_decref(arr);
        return pl_nomem(p);
    }
    for (size_t i = 0; i < n; i++) {
        conj *c = &out->a[out->n++];
        c->node = json_incref(json_array_get(arr, i));
        c->lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
        if (!c->lset) {
            json_decref(arr);
            return pl_nomem(p);
        }
        conj_refs(c->node, fc->leaves, fc->n_leaves, c, 0);
    }
    json_decref(arr);
    return derive_or_filters(p, fc, out);
}

static int leaf_index(const fromc *fc, const fnode *f)
{
    for (int i = 0; i < fc->n_leaves; i++)
        if (fc->leaves[i] == f)
            return i;
    return -1;
}

/* Whether a conjunct keeps most rows (a negation: NOT ..., x <> c,
 * x NOT LIKE p, x IS NOT NULL), so that it barely lowers its table's row
 * estimate.  The others count as selective (a quarter kept).  Joins pick
 * their hash side by these estimates: Q13's o_comment NOT LIKE '...' made
 * orders (1.5M rows) look smaller than four customers (150K), so the join
 * hashed orders (256 MB) instead of customer. */
static bool conj_keeps_most(const json_t *node)
{
    json_t *b;
    if (pl_is_kind(node, "BoolExpr", &b)) {
        const char *t = json_string_value(json_object_get(b, "boolop"));
        return t && !strcmp(t, "NOT_EXPR");
    }
    if (pl_is_kind(node, "NullTest", &b)) {
        const char *t = json_string_value(json_object_get(b, "nulltesttype"));
        return t && !strcmp(t, "IS_NOT_NULL");
    }
    if (pl_is_kind(node, "A_Expr", &b)) {
        const char *op = sq_str(json_array_get(json_object_get(b, "name"), 0));
        return op && (!strcmp(op, "<>") || !strcmp(op, "!=") || !strcmp(op, "!~~") ||
                      !strcmp(op, "!~~*") || !strcmp(op, "!~") || !strcmp(op, "!~*"));
    }
    return false;
}

/* Adds conjunct node (reading the base table f only) to f's scan filter
 * text; *pushed false when its printed form is not text the scan's filter
 * parser reads back (it then stays a filter above the scan). */
static hs_status push_into_leaf(planner *p, fnode *f, const json_t *node, const char *clause,
                                bool *pushed)
{
    *pushed = false;
    scope sc;
    memset(&sc, 0, sizeof sc);
    sc.p = p;
    sc.layers[0] = (layer){f->ns, f->n_ns, 0};
    sc.n_layers = 1;
    sc.schema = &f->ts;
    sc.no_aggs = clause;
    ex_expr *e;
    HS_TRY(pl_bind_in(&sc, node, true, &e));
    char *txt = NULL;
    hs_status st = ex_format(e, &txt, p->err);
    ex_free(e);
    HS_TRY(st);
    ex_expr *chk = NULL;
    hs_error e2 = {0};
    if (ex_parse_filter(txt, &f->ts, &chk, &e2) != HS_OK) {
        hs_free(txt);
        return HS_OK;
    }
    ex_free(chk);
    if (f->filt.len)
        st = hs_buf_puts(&f->filt, " AND ");
    if (st == HS_OK)
        st = hs_buf_puts(&f->filt, txt);
    hs_free(txt);
    if (st != HS_OK)
        return pl_nomem(p);
    f->est = conj_keeps_most(node) ? f->est * 0.9 + 1 : f->est / 4 + 1;
    *pushed = true;
    return HS_OK;
}

/* Pushes the conjuncts that read one base table into its scan filter. */
hs_status  pl_push_filters(planner *p, fromc *fc, conjs *cs)
{
    for (int i = 0; i < cs->n; i++) {
        conj *c = &cs->a[i];
        if (c->sub || c->outer || c->n_refs != 1)
            continue;
        int li = 0;
        while (!c->lset[li])
            li++;
        fnode *f = fc->leaves[li];
        if (f->kind != F_TABLE || f->nullable)
            continue;
        bool pushed;
        HS_TRY(push_into_leaf(p, f, c->node, "WHERE", &pushed));
        c->used |= pushed;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* scans and joins                                                     */

static hs_status build_leaf(planner *p, fnode *f, rel *out)
{
    memset(out, 0, sizeof *out);
    if (f->kind == F_REL) {
        for (int i = 0; i < f->rl.n && i < f->n_ns; i++)
            f->rl.cols[i].hidden = f->ns[i].hidden;
        *out = f->rl;
        memset(&f->rl, 0, sizeof f->rl);
        return HS_OK;
    }
    int n = f->ts.n_children;
    const char **cols = hs_calloc((size_t)n + 1, sizeof *cols);
    int *idx = hs_calloc((size_t)n + 1, sizeof *idx);
    if (!cols || !idx) {
        hs_free(cols);
        hs_free(idx);
        return pl_nomem(p);
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (pl_name_needed(p, f->ts.children[i].name) || pl_name_needed(p, f->ns[i].name)) {
            idx[k] = i;
            cols[k++] = f->ts.children[i].name;
        }
    if (k == 0 && n > 0) {
        idx[0] = 0;
        cols[k++] = f->ts.children[0].name;
    }
    hs_scan_options so = f->so;
    so.columns = cols;
    so.n_columns = k;
    so.filter = f->filt.len ? hs_buf_cstr(&f->filt) : NULL;
    hs_status st = xo_scan(p->ctx, f->t, &so, &out->op, p->err);
    hs_free(cols);
    if (st == HS_OK) {
        out->n = k;
        out->cols = hs_calloc((size_t)k + 1, sizeof *out->cols);
        if (!out->cols)
            st = pl_nomem(p);
        for (int i = 0; i < k && st == HS_OK; i++) {
            out->cols[i].qual = hs_strdup(f->alias);
            out->cols[i].name = hs_strdup(f->ns[idx[i]].name);
            out->cols[i].hidden = f->ns[idx[i]].hidden;
            if (!out->cols[i].qual || !out->cols[i].name)
                st = pl_nomem(p);
        }
    }
    hs_free(idx);
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

bool  pl_key_types_ok(const hs_field *a, const hs_field *b)
{
    if (is_int_type(a->type) && is_int_type(b->type))
        return true;
    return hs_field_same_type(a, b, true) && a->type != HS_TYPE_FLOAT16;
}

/* If c is `x = y` with x a column of l and y one of r (or swapped). */
static bool equi_cols(const json_t *c, const rel *l, const rel *r, int *lc, int *rc)
{
    json_t *b;
    if (!pl_is_kind(c, "A_Expr", &b) || strcmp(pl_jstrv(b, "kind") ? pl_jstrv(b, "kind") : "", "AEXPR_OP"))
        return false;
    json_t *nm = pl_jget(b, "name");
    if (json_array_size(nm) != 1 || !sq_str(json_array_get(nm, 0)) ||
        strcmp(sq_str(json_array_get(nm, 0)), "="))
        return false;
    json_t *x, *y;
    if (!pl_is_kind(pl_jget(b, "lexpr"), "ColumnRef", &x) || !pl_is_kind(pl_jget(b, "rexpr"), "ColumnRef", &y))
        return false;
    const char *nx[8], *ny[8];
    int n1 = pl_colref_names(x, nx, 8), n2 = pl_colref_names(y, ny, 8);
    if (n1 < 1 || n2 < 1 || !nx[n1 - 1] || !ny[n2 - 1])
        return false;
    layer L = {l->cols, l->n, 0}, R = {r->cols, r->n, 0};
    int a = pl_layer_find(&L, nx, n1), bb = pl_layer_find(&R, ny, n2);
    int a2 = pl_layer_find(&R, nx, n1), b2 = pl_layer_find(&L, ny, n2);
    if (a >= 0 && bb >= 0 && a2 < 0 && b2 < 0) {
        *lc = a;
        *rc = bb;
    } else if (a2 >= 0 && b2 >= 0 && a < 0 && bb < 0) {
        *lc = b2;
        *rc = a2;
    } else {
        return false;
    }
    return pl_key_types_ok(&l->op->schema.children[*lc], &r->op->schema.children[*rc]);
}

static xo_join_kind join_kind(const char *t)
{
    if (!strcmp(t, "JOIN_LEFT"))
        return XO_JOIN_LEFT;
    if (!strcmp(t, "JOIN_RIGHT"))
        return XO_JOIN_RIGHT;
    if (!strcmp(t, "JOIN_FULL"))
        return XO_JOIN_FULL;
    return XO_JOIN_INNER;
}

/* Output names of joining l and r (l's then r's; only l's for semi/anti). */
static hs_status join_names(planner *p, const rel *l, const rel *r, xo_join_kind kind, rel *out)
{
    int n = l->n + (kind == XO_JOIN_SEMI || kind == XO_JOIN_ANTI || kind == XO_JOIN_ANTI_NULL_AWARE ? 0 : r->n);
    out->cols = hs_calloc((size_t)n + 1, sizeof *out->cols);
    if (!out->cols)
        return pl_nomem(p);
    out->n = n;
    for (int i = 0; i < n; i++) {
        const qcol *c = i < l->n ? &l->cols[i] : &r->cols[i - l->n];
        out->cols[i].qual = pl_dup_or_null(c->qual);
        out->cols[i].name = hs_strdup(c->name ? c->name : "");
        out->cols[i].hidden = c->hidden;
        if ((c->qual && !out->cols[i].qual) || !out->cols[i].name)
            return pl_nomem(p);
    }
    return HS_OK;
}

/* Joins l and r (both taken) on conditions cond[0..n): equalities of
 * columns become hash keys (extra pairs lk/rk may be given), the rest a
 * residual.  *out gets the joined relation. */
hs_status  pl_join_rels(planner *p, rel *l, rel *r, xo_join_kind kind, json_t **cond, int n,
                           const int *xlk, const int *xrk, int nx, bool right_first, rel *out)
{
    memset(out, 0, sizeof *out);
    int *lk = hs_calloc((size_t)(n + nx) + 1, sizeof *lk);
    int *rk = hs_calloc((size_t)(n + nx) + 1, sizeof *rk);
    json_t **res = hs_calloc((size_t)n + 1, sizeof *res);
    hs_status st = lk && rk && res ? HS_OK : pl_nomem(p);
    int nk = 0, nr = 0;
    for (int i = 0; i < nx && st == HS_OK; i++) {
        lk[nk] = xlk[i];
        rk[nk++] = xrk[i];
    }
    for (int i = 0; i < n && st == HS_OK; i++) {
        int a, b;
        if (equi_cols(cond[i], l, r, &a, &b)) {
            lk[nk] = a;
            rk[nk++] = b;
        } else {
            res[nr++] = cond[i];
        }
    }
    ex_expr *resid = NULL;
    if (st == HS_OK && nr > 0) {
        json_t *all = pl_mk_and(res, nr);
        scope sc;
        st = all ? scope_pair(&sc, p, l, r, right_first) : pl_nomem(p);
        if (st == HS_OK) {
            sc.no_aggs = "JOIN conditions";
            st = pl_bind_in(&sc, all, true, &resid);
        }
        json_decref(all);
    }
    if (st == HS_OK)
        st = join_names(p, l, r, kind, out);
    if (st == HS_OK) {
        xo_op *lo = l->op, *ro = r->op;
        l->op = r->op = NULL;
        if (nk > 0)
            st = xo_hashjoin(lo, ro, kind, nk, lk, rk, resid, &out->op, p->err);
        else
            st = xo_nljoin(lo, ro, kind, resid, &out->op, p->err);
        resid = NULL;
    }
    ex_free(resid);
    hs_free(lk);
    hs_free(rk);
    hs_free(res);
    pl_rel_clear(l);
    pl_rel_clear(r);
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

/* Positional references "\x01<n>" in a JSON template (merge_using). */
static int pos_name_column(void *ctx, const char *const *names, int n)
{
    (void)ctx;
    const char *nm = names[n - 1];
    return nm && nm[0] == '\x01' ? atoi(nm + 1) : -1;
}

/* RIGHT/FULL JOIN ... USING (c): the visible c is COALESCE(left.c,
 * right.c) at the left column's place (PostgreSQL's merged column; * keeps
 * the left table's column order); the originals stay reachable qualified. */
static hs_status merge_using(planner *p, rel *r, int nl, const json_t *using)
{
    int n = r->n, nu = (int)json_array_size(using);
    ex_expr **ex = hs_calloc((size_t)(n + nu) + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)(n + nu) + 1, sizeof *names);
    qcol *cols = hs_calloc((size_t)(n + nu) + 1, sizeof *cols);
    hs_status st = ex && names && cols ? HS_OK : pl_nomem(p);
    int k = 0, extra = n;
    for (int i = 0; i < n && st == HS_OK; i++) {
        const qcol *c = &r->cols[i];
        int ui = -1, rc = -1;
        for (int u = 0; i < nl && u < nu && ui < 0; u++)
            if (pl_name_eq(sq_str(json_array_get(using, (size_t)u)), c->name) && !c->hidden)
                ui = u;
        for (int j = nl; ui >= 0 && j < n && rc < 0; j++)
            if (pl_name_eq(r->cols[j].name, c->name) && r->cols[j].hidden)
                rc = j;
        if (ui >= 0 && rc >= 0) {
            char a[24], b[24];
            snprintf(a, sizeof a, "\x01%d", i);
            snprintf(b, sizeof b, "\x01%d", rc);
            json_t *co = json_pack("{s:{s:[{s:{s:[{s:{s:s}}],s:i}},{s:{s:[{s:{s:s}}],s:i}}],s:i}}",
                                   "CoalesceExpr", "args", "ColumnRef", "fields", "String", "sval",
                                   a, "location", -1, "ColumnRef", "fields", "String", "sval", b,
                                   "location", -1, "location", -1);
            ex_scope es = {.schema = &r->op->schema, .column = pos_name_column};
            st = co ? ex_bind_json(co, p->text, &es, false, &ex[k], p->err) : pl_nomem(p);
            json_decref(co);
            cols[k] = (qcol){NULL, hs_strdup(c->name), false};
            names[k++] = c->name;
            /* the original, qualified only */
            if (st == HS_OK)
                st = col_expr(p, &r->op->schema, i, &ex[extra]);
            cols[extra] = (qcol){pl_dup_or_null(c->qual), hs_strdup(c->name), true};
            names[extra++] = c->name;
            continue;
        }
        st = col_expr(p, &r->op->schema, i, &ex[k]);
        cols[k] = (qcol){pl_dup_or_null(c->qual), hs_strdup(c->name), c->hidden};
        names[k++] = c->name;
    }
    /* move the originals after the right columns' slots: k == n here */
    xo_op *op = NULL;
    if (st == HS_OK) {
        st = xo_project(r->op, extra, ex, names, &op, p->err);
        r->op = NULL;
        for (int i = 0; i < extra; i++)
            ex[i] = NULL;
    }
    for (int i = 0; ex && i < n + nu; i++)
        ex_free(ex[i]);
    hs_free(ex);
    hs_free(names);
    if (st != HS_OK) {
        pl_qcols_free(cols, n + nu);
        return st;
    }
    pl_qcols_free(r->cols, r->n);
    r->op = op;
    r->cols = cols;
    r->n = extra;
    return HS_OK;
}

static double item_est(fnode *f);

/* join_rels with the smaller side (by estimate) as the hash table: when the
 * left is much smaller, the sides swap (LEFT <-> RIGHT) and a projection
 * restores the column order. */
static hs_status join_sides(planner *p, rel *l, rel *r, xo_join_kind kind, json_t **cond, int n,
                            const int *lk, const int *rk, int nk, double lest, double rest,
                            rel *out)
{
    if (!(lest * 4 < rest) || kind == XO_JOIN_SEMI || kind == XO_JOIN_ANTI ||
        kind == XO_JOIN_ANTI_NULL_AWARE || (nk == 0 && n == 0))
        return pl_join_rels(p, l, r, kind, cond, n, lk, rk, nk, false, out);
    xo_join_kind sk = kind == XO_JOIN_LEFT ? XO_JOIN_RIGHT : kind == XO_JOIN_RIGHT ? XO_JOIN_LEFT : kind;
    int nl = l->n, nr = r->n;
    rel sw;
    HS_TRY(pl_join_rels(p, r, l, sk, cond, n, rk, lk, nk, false, &sw));
    int tot = nl + nr;
    int *src = hs_calloc((size_t)tot + 1, sizeof *src);
    ex_expr **ex = hs_calloc((size_t)tot + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)tot + 1, sizeof *names);
    qcol *cols = hs_calloc((size_t)tot + 1, sizeof *cols);
    hs_status st = src && ex && names && cols ? HS_OK : pl_nomem(p);
    for (int i = 0; i < tot && st == HS_OK; i++) {
        int from = i < nl ? nr + i : i - nl;
        src[i] = from;
        names[i] = sw.op->schema.children[from].name;
        cols[i] = sw.cols[from];
        sw.cols[from] = (qcol){0};
    }
    xo_op *op = NULL;
    if (st == HS_OK) {
        st = pl_project_mixed(p, sw.op, tot, src, ex, names, &op);
        sw.op = NULL;
    }
    hs_free(src);
    hs_free(ex);
    hs_free(names);
    pl_rel_clear(&sw);
    if (st != HS_OK) {
        pl_qcols_free(cols, tot);
        return st;
    }
    out->op = op;
    out->cols = cols;
    out->n = tot;
    return HS_OK;
}

/* Which side of a join an ON conjunct reads: 1 only l's columns, 2 only
 * r's, 0 both, none, an unknown or ambiguous name, or a subquery. */
static void on_side_walk(const json_t *j, const rel *l, const rel *r, int *mask, int depth)
{
    if (!j || depth > 400 || *mask & 4)
        return;
    if (json_is_object(j)) {
        json_t *b;
        if (json_object_size(j) == 1 && pl_is_kind(j, "SubLink", NULL)) {
            *mask |= 4;
            return;
        }
        if (json_object_size(j) == 1 && pl_is_kind(j, "ColumnRef", &b)) {
            const char *names[8];
            int n = pl_colref_names(b, names, 8);
            if (n < 1 || !names[n - 1]) {
                *mask |= 4;
                return;
            }
            layer L = {l->cols, l->n, 0}, R = {r->cols, r->n, 0};
            int a = pl_layer_find(&L, names, n), c = pl_layer_find(&R, names, n);
            if (a == -2 || c == -2 || (a >= 0) == (c >= 0))
                *mask |= 4;
            else
                *mask |= a >= 0 ? 1 : 2;
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            on_side_walk(v, l, r, mask, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            on_side_walk(v, l, r, mask, depth + 1);
    }
}

static int on_side(const json_t *c, const rel *l, const rel *r)
{
    int mask = 0;
    on_side_walk(c, l, r, &mask, 0);
    return mask == 1 ? 1 : mask == 2 ? 2 : 0;
}


/* The conjuncts side[0..*n) of an ON clause that read the side only and
 * filter it before the join: when the side is a base table (fnode f, its
 * scan x built already), those whose text the scan's filter reads move
 * into the scan (rebuilt with them: pruning, sidecar indexes, the scan's
 * threads); side[] keeps the others. */
static hs_status push_on_into_scan(planner *p, fnode *f, rel *x, json_t **side, int *n)
{
    if (*n == 0 || !f || f->kind != F_TABLE)
        return HS_OK;
    int k = 0;
    bool any = false;
    for (int i = 0; i < *n; i++) {
        bool pushed = false;
        if (!volatile_node(side[i], 0))
            HS_TRY(push_into_leaf(p, f, side[i], "JOIN conditions", &pushed));
        any |= pushed;
        if (!pushed)
            side[k++] = side[i];
    }
    *n = k;
    if (!any)
        return HS_OK;
    pl_rel_clear(x);
    return build_leaf(p, f, x);
}

/* ON conjuncts that read one side only and may filter that side before
 * the join: the inner side of a LEFT/RIGHT join (it only decides which of
 * its rows match; TPC-H Q13's o_comment NOT LIKE ... under customer LEFT
 * JOIN orders), either side of an INNER join; into the side's scan when it
 * is a base table.  The rest is left in c. */
static hs_status push_on_conds(planner *p, xo_join_kind jk, fnode *fl, fnode *fr, rel *l, rel *r,
                               json_t **c, int *n)
{
    if (jk == XO_JOIN_FULL)
        return HS_OK;
    json_t **ls = hs_calloc((size_t)*n + 1, sizeof *ls), **rs = hs_calloc((size_t)*n + 1, sizeof *rs);
    if (!ls || !rs) {
        hs_free(ls);
        hs_free(rs);
        return pl_nomem(p);
    }
    int nl = 0, nr = 0, k = 0;
    for (int i = 0; i < *n; i++) {
        int side = on_side(c[i], l, r);
        if (side == 1 && (jk == XO_JOIN_INNER || jk == XO_JOIN_RIGHT))
            ls[nl++] = c[i];
        else if (side == 2 && (jk == XO_JOIN_INNER || jk == XO_JOIN_LEFT))
            rs[nr++] = c[i];
        else
            c[k++] = c[i];
    }
    *n = k;
    hs_status st = push_on_into_scan(p, fl, l, ls, &nl);
    if (st == HS_OK)
        st = push_on_into_scan(p, fr, r, rs, &nr);
    if (st == HS_OK)
        st = pl_filter_rel(p, l, ls, nl, NULL, NULL, 0, "JOIN conditions");
    if (st == HS_OK)
        st = pl_filter_rel(p, r, rs, nr, NULL, NULL, 0, "JOIN conditions");
    hs_free(ls);
    hs_free(rs);
    return st;
}

static hs_status build_fnode(planner *p, fnode *f, rel *out)
{
    if (f->kind != F_JOIN)
        return build_leaf(p, f, out);
    rel l = {0}, r = {0};
    hs_status st = build_fnode(p, f->l, &l);
    if (st == HS_OK)
        st = build_fnode(p, f->r, &r);
    json_t *arr = json_array();
    if (st == HS_OK && !arr)
        st = pl_nomem(p);
    if (st == HS_OK)
        split_and(f->quals, arr);
    int nu = (int)json_array_size(f->using);
    int *lk = hs_calloc((size_t)nu + 1, sizeof *lk), *rk = hs_calloc((size_t)nu + 1, sizeof *rk);
    if (st == HS_OK && (!lk || !rk))
        st = pl_nomem(p);
    for (int i = 0; i < nu && st == HS_OK; i++) {
        const char *nm = sq_str(json_array_get(f->using, (size_t)i));
        layer L = {l.cols, l.n, 0};
        lk[i] = nm ? pl_layer_find(&L, &nm, 1) : -1;
        rk[i] = -1;
        for (int c = 0; nm && c < r.n; c++)
            if (pl_name_eq(r.cols[c].name, nm) && (rk[i] < 0 || r.cols[c].hidden))
                rk[i] = c;
        if (lk[i] < 0 || rk[i] < 0)
            st = pl_fail(p, HS_NOT_FOUND, "42703", f->loc,
                      "column \"%s\" specified in USING clause does not exist", nm ? nm : "?");
        else if (!pl_key_types_ok(&l.op->schema.children[lk[i]], &r.op->schema.children[rk[i]]))
            st = pl_fail(p, HS_INVALID, "42804", f->loc, "JOIN/USING types for column \"%s\" differ", nm);
    }
    int nl = l.n;
    if (st == HS_OK) {
        size_t n = json_array_size(arr);
        json_t **c = hs_calloc(n + 1, sizeof *c);
        if (!c)
            st = pl_nomem(p);
        for (size_t i = 0; c && i < n; i++)
            c[i] = json_array_get(arr, i);
        int nc = (int)n;
        if (st == HS_OK)
            st = push_on_conds(p, join_kind(f->jtype), f->l, f->r, &l, &r, c, &nc);
        if (st == HS_OK)
            st = join_sides(p, &l, &r, join_kind(f->jtype), c, nc, lk, rk, nu,
                            item_est(f->l), item_est(f->r), out);
        hs_free(c);
    }
    hs_free(lk);
    hs_free(rk);
    json_decref(arr);
    pl_rel_clear(&l);
    pl_rel_clear(&r);
    xo_join_kind jk = join_kind(f->jtype);
    if (st == HS_OK && nu > 0 && (jk == XO_JOIN_RIGHT || jk == XO_JOIN_FULL))
        st = merge_using(p, out, nl, f->using);
    if (st == HS_OK && f->jalias)
        for (int i = 0; i < out->n; i++) {
            hs_free(out->cols[i].qual);
            out->cols[i].qual = hs_strdup(f->jalias);
        }
    return st;
}

static double item_est(fnode *f)
{
    if (f->kind == F_TABLE)
        return f->est;
    if (f->kind == F_REL)
        return 1000;
    double a = item_est(f->l), b = item_est(f->r);
    return a > b ? a : b;
}

/* Whether a FROM item has a table with filters pushed into its scan. */
static bool item_filtered(const fnode *f)
{
    if (f->kind == F_TABLE)
        return f->filt.len > 0;
    if (f->kind == F_JOIN)
        return item_filtered(f->l) || item_filtered(f->r);
    return false;
}

/* Whether conjunct c reads only leaves in the item set inset (leaf -> item). */
static bool covered(const conj *c, const fromc *fc, const int *leaf_item, const unsigned char *inset)
{
    for (int i = 0; i < fc->n_leaves; i++)
        if (c->lset[i] && !inset[leaf_item[i]])
            return false;
    return true;
}

/* Index nested-loop join: when the joined item is a table with a scalar
 * index on the key column of an equality with the (much smaller, at most
 * INDEX_JOIN_MAX rows estimated) current side, the current side's keys go
 * into the table's scan as an IN list (xo_index_join), so pruning and the
 * sidecar index select the rows.  Other conditions filter the result.
 * *done = false leaves the join to join_rels (nothing taken then). */
static hs_status index_join_try(planner *p, rel *cur, double cur_est, fnode *f, rel *r, double r_est,
                                json_t **cond, int n, rel *out, bool *done)
{
    *done = false;
    if (f->kind != F_TABLE || cur_est > INDEX_JOIN_MAX || r_est < 10 * cur_est || n == 0)
        return HS_OK;
    int key = -1, lc = -1, rc = -1;
    for (int i = 0; i < n && key < 0; i++)
        if (equi_cols(cond[i], cur, r, &lc, &rc)) {
            hs_type lt = cur->op->schema.children[lc].type, rt = r->op->schema.children[rc].type;
            if ((is_int_type(lt) && is_int_type(rt)) || (lt == HS_TYPE_STRING && rt == HS_TYPE_STRING))
                key = i;
        }
    if (key < 0)
        return HS_OK;
    /* the table column of rc */
    const char *tcol = NULL;
    for (int k = 0; k < f->n_ns && !tcol; k++)
        if (pl_name_eq(f->ns[k].name, r->cols[rc].name))
            tcol = f->ts.children[k].name;
    char *js = NULL;
    hs_error e2 = {0};
    if (!tcol || hs_table_list_indexes(f->t, &js, &e2) != HS_OK)
        return HS_OK;
    json_t *arr = hs_json_loads(js, 0, NULL);
    hs_string_free(js);
    bool indexed = false;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *c = pl_jstrv(v, "column"), *kind = pl_jstrv(v, "kind");
        if (c && kind && !strcmp(c, tcol) && strncmp(kind, "hnsw", 4) && strncmp(kind, "ivf", 3))
            indexed = true;
    }
    json_decref(arr);
    if (!indexed)
        return HS_OK;
    /* the same columns the scan of r reads */
    const char **cols = hs_calloc((size_t)r->n + 1, sizeof *cols);
    if (!cols)
        return pl_nomem(p);
    for (int c = 0; c < r->n; c++)
        for (int k = 0; k < f->n_ns; k++)
            if (pl_name_eq(f->ns[k].name, r->cols[c].name))
                cols[c] = f->ts.children[k].name;
    hs_scan_options so = f->so;
    so.columns = cols;
    so.n_columns = r->n;
    so.filter = f->filt.len ? hs_buf_cstr(&f->filt) : NULL;
    memset(out, 0, sizeof *out);
    hs_status st = join_names(p, cur, r, XO_JOIN_INNER, out);
    if (st == HS_OK) {
        xo_op *l = cur->op;
        cur->op = NULL;
        st = xo_index_join(l, lc, f->t, &so, tcol, XO_JOIN_INNER, &out->op, p->err);
    }
    hs_free(cols);
    pl_rel_clear(cur);
    pl_rel_clear(r);
    *done = true;
    if (st == HS_OK && n > 1) {
        json_t **rest = hs_calloc((size_t)n, sizeof *rest);
        int nr = 0;
        for (int k = 0; rest && k < n; k++)
            if (k != key)
                rest[nr++] = cond[k];
        st = rest ? pl_filter_rel(p, out, rest, nr, NULL, NULL, 0, "WHERE") : pl_nomem(p);
        hs_free(rest);
    }
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

/* Joins the FROM items with the remaining (not pushed, subquery-free)
 * conjuncts; *out is the whole FROM. */
hs_status  pl_build_from(planner *p, fromc *fc, conjs *cs, rel *out)
{
    memset(out, 0, sizeof *out);
    int n = fc->n_items;
    if (n == 0) {
        /* no FROM: one row of no columns */
        hs_field sch;
        hs_field_init(&sch, "", HS_TYPE_STRUCT, false);
        hs_batch *b = NULL;
        hs_status st = hs_batch_create(&sch, 1, &b, p->err);
        if (st == HS_OK) {
            b->n_rows = 1;
            st = xo_values(p->ctx, &sch, 1, &b, &out->op, p->err);
        }
        hs_field_clear(&sch);
        return st;
    }
    int *leaf_item = hs_calloc((size_t)fc->n_leaves + 1, sizeof *leaf_item);
    unsigned char *inset = hs_calloc((size_t)n + 1, 1);
    rel *items = hs_calloc((size_t)n + 1, sizeof *items);
    double *est = hs_calloc((size_t)n + 1, sizeof *est);
    hs_status st = leaf_item && inset && items && est ? HS_OK : pl_nomem(p);
    for (int i = 0; i < n && st == HS_OK; i++) {
        fnode *lv[256];
        int nl = 0;
        leaves_of(fc->items[i], lv, &nl);
        for (int k = 0; k < nl; k++)
            leaf_item[leaf_index(fc, lv[k])] = i;
        est[i] = item_est(fc->items[i]);
        st = build_fnode(p, fc->items[i], &items[i]);
    }
    /* uncorrelated [NOT] EXISTS / IN whose operand reads one item: that
     * item's semi/anti join, before the items join (TPC-H Q18's
     * o_orderkey IN (...) cuts orders to 57 rows before lineitem joins) */
    for (int i = 0; i < cs->n && st == HS_OK && n > 1; i++) {
        conj *c = &cs->a[i];
        if (c->used || !c->sub || c->outer || c->n_refs == 0)
            continue;
        int it = -1;
        bool one = true;
        for (int k = 0; k < fc->n_leaves; k++)
            if (c->lset[k]) {
                one &= it < 0 || it == leaf_item[k];
                it = leaf_item[k];
            }
        bool ok = false;
        if (one && it >= 0)
            st = pl_sub_pushable(p, c->node, &ok);
        if (st == HS_OK && ok) {
            st = pl_apply_sub_conj(p, &items[it], c->node);
            c->used = true;
            est[it] = est[it] / 4 + 1;
        }
    }
    int start = 0;
    for (int i = 1; i < n; i++)
        if (est[i] > est[start])
            start = i;
    double cur_est = est ? est[start] : 0;
    int *sizes = hs_calloc((size_t)n + 1, sizeof *sizes), *order = hs_calloc((size_t)n + 1, sizeof *order);
    if (st == HS_OK && (!sizes || !order))
        st = pl_nomem(p);
    for (int i = 0; st == HS_OK && i < n; i++)
        sizes[i] = items[i].n;
    if (st == HS_OK) {
        order[0] = start;
        *out = items[start];
        memset(&items[start], 0, sizeof items[start]);
        inset[start] = 1;
    }
    for (int step = 1; step < n && st == HS_OK; step++) {
        int best = -1;
        bool best_conn = false, best_filt = false;
        int best_nb = -1;
        for (int j = 0; j < n; j++) {
            if (inset[j])
                continue;
            bool conn = false;
            for (int i = 0; i < cs->n && !conn; i++) {
                conj *c = &cs->a[i];
                int a, b;
                if (c->used || c->sub || c->outer)
                    continue;
                inset[j] = 1;
                bool cov = covered(c, fc, leaf_item, inset);
                inset[j] = 0;
                conn = cov && equi_cols(c->node, out, &items[j], &a, &b);
            }
            /* connected first; then items with pushed filters (a join with
             * an unfiltered table on its key rarely cuts rows: TPC-H Q9's
             * part with p_name LIKE comes before supplier), smallest first */
            bool filt = item_filtered(fc->items[j]);
            int nbj = -1;
            /* or one join away from a filtered item not joined yet (a
             * dimension chain: TPC-H Q21's supplier before nation's
             * n_name = '...') */
            for (int i = 0; i < cs->n && !filt; i++) {
                conj *c = &cs->a[i];
                if (c->used || c->sub || c->outer || c->n_refs != 2)
                    continue;
                int it[2], m = 0;
                for (int k = 0; k < fc->n_leaves && m < 2; k++)
                    if (c->lset[k])
                        it[m++] = leaf_item[k];
                if (m == 2 && (it[0] == j || it[1] == j)) {
                    int o = it[0] == j ? it[1] : it[0];
                    filt = o != j && !inset[o] && item_filtered(fc->items[o]);
                    if (filt)
                        nbj = o;
                }
            }
            if (best < 0 || (conn && !best_conn) ||
                (conn == best_conn && filt && !best_filt) ||
                (conn == best_conn && filt == best_filt && est[j] < est[best])) {
                best = j;
                best_conn = conn;
                best_filt = filt;
                best_nb = nbj;
            }
        }
        inset[best] = 1;
        order[step] = best;
        json_t **cond = hs_calloc((size_t)cs->n + 1, sizeof *cond);
        int nc = 0;
        if (!cond) {
            st = pl_nomem(p);
            break;
        }
        /* chosen for a filtered neighbor (a dimension chain, TPC-H Q11's
         * supplier and nation): the two join each other first, and the
         * joined pair is the build side */
        bool paired = false;
        if (best_nb >= 0 && best_conn && !inset[best_nb] && step + 1 < n) {
            unsigned char *pin = hs_calloc((size_t)n + 1, 1);
            if (!pin) {
                hs_free(cond);
                st = pl_nomem(p);
                break;
            }
            pin[best] = pin[best_nb] = 1;
            int npc = 0;
            for (int i = 0; i < cs->n; i++) {
                conj *c = &cs->a[i];
                if (c->used || c->sub || c->outer || c->n_refs == 0 || !covered(c, fc, leaf_item, pin))
                    continue;
                cond[npc++] = c->node;
                c->used = true;
            }
            hs_free(pin);
            rel pr;
            st = pl_join_rels(p, &items[best], &items[best_nb], XO_JOIN_INNER, cond, npc, NULL, NULL,
                              0, false, &pr);
            if (st != HS_OK) {
                hs_free(cond);
                break;
            }
            items[best] = pr;
            inset[best_nb] = 1;
            order[++step] = best_nb;
            est[best] = est[best] / 4 + 1;
            paired = true;
        }
        for (int i = 0; i < cs->n; i++) {
            conj *c = &cs->a[i];
            if (c->used || c->sub || c->outer || c->n_refs == 0 || !covered(c, fc, leaf_item, inset))
                continue;
            cond[nc++] = c->node;
            c->used = true;
        }
        rel joined;
        bool done = false;
        if (!paired)
            st = index_join_try(p, out, cur_est, fc->items[best], &items[best], est[best], cond, nc,
                                &joined, &done);
        if (st == HS_OK && !done && step == 1 && !paired) {
            /* the small item probes the first (largest) table through its index */
            st = index_join_try(p, &items[best], est[best], fc->items[start], out, cur_est, cond, nc,
                                &joined, &done);
            if (st == HS_OK && done) {
                order[0] = best;
                order[1] = start;
            }
        }
        if (st == HS_OK && !done)
            st = pl_join_rels(p, out, &items[best], XO_JOIN_INNER, cond, nc, NULL, NULL, 0, false, &joined);
        cur_est = cur_est > est[best] ? cur_est : est[best];
        hs_free(cond);
        if (st == HS_OK)
            *out = joined;
    }
    /* the columns in FROM order (what * expands to), whatever the join order */
    bool moved = false;
    for (int k = 0; st == HS_OK && k < n; k++)
        moved |= order[k] != k;
    if (st == HS_OK && moved) {
        int tot = out->n, *src = hs_calloc((size_t)tot + 1, sizeof *src);
        ex_expr **ex = hs_calloc((size_t)tot + 1, sizeof *ex);
        const char **names = hs_calloc((size_t)tot + 1, sizeof *names);
        qcol *cols = hs_calloc((size_t)tot + 1, sizeof *cols);
        st = src && ex && names && cols ? HS_OK : pl_nomem(p);
        int o = 0;
        for (int i = 0; st == HS_OK && i < n; i++) {
            int base = 0;
            for (int k = 0; order[k] != i; k++)
                base += sizes[order[k]];
            for (int c = 0; c < sizes[i]; c++, o++) {
                src[o] = base + c;
                names[o] = out->op->schema.children[base + c].name;
                cols[o] = out->cols[base + c];
                out->cols[base + c] = (qcol){0};
            }
        }
        if (st == HS_OK && o == tot) {
            xo_op *op;
            st = pl_project_mixed(p, out->op, tot, src, ex, names, &op);
            out->op = st == HS_OK ? op : NULL;
            pl_qcols_free(out->cols, out->n);
            out->cols = cols;
            cols = NULL;
        } else if (st == HS_OK) {
            st = pl_fail(p, HS_INTERNAL, "XX000", -1, "join column bookkeeping: %d of %d columns", o, tot);
        }
        if (cols)
            pl_qcols_free(cols, tot);
        hs_free(src);
        hs_free(ex);
        hs_free(names);
    }
    hs_free(sizes);
    hs_free(order);
    for (int i = 0; i < n && items; i++)
        pl_rel_clear(&items[i]);
    hs_free(items);
    hs_free(est);
    hs_free(inset);
    hs_free(leaf_item);
    if (st != HS_OK)
        pl_rel_clear(out);
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
