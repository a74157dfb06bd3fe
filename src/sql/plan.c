/*
 * sql/plan.c - queries: libpg_query JSON -> bound relations -> a tree of
 * physical operators (exec/exec.h); EXPLAIN; CREATE/DROP INDEX.
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
#include "base/numfmt.h"
#include "sql/sql_int.h"

#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "exec/exec.h"
#include "expr/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DEPTH 64      /* nesting of subqueries / CTE references */

/* ------------------------------------------------------------------ */
/* relations                                                           */

typedef struct qcol {
    char *qual;      /* table alias or NULL */
    char *name;
    bool hidden;     /* not visible unqualified nor to '*' (right USING column) */
} qcol;

typedef struct rel {
    xo_op *op;       /* owned */
    int n;
    qcol *cols;      /* owned */
} rel;

static void qcols_free(qcol *c, int n)
{
    for (int i = 0; i < n; i++) {
        hs_free(c[i].qual);
        hs_free(c[i].name);
    }
    hs_free(c);
}

static void rel_clear(rel *r)
{
    xo_free(r->op);
    qcols_free(r->cols, r->n);
    memset(r, 0, sizeof *r);
}

static char *dup_or_null(const char *s) { return s ? hs_strdup(s) : NULL; }

/* Names r's columns from its operator's schema, all qualified by qual. */
static hs_status rel_name(rel *r, const char *qual, hs_error *err)
{
    const hs_field *sch = &r->op->schema;
    qcols_free(r->cols, r->n);
    r->n = sch->n_children;
    r->cols = hs_calloc((size_t)r->n + 1, sizeof *r->cols);
    if (!r->cols) {
        r->n = 0;
        return hs_err_nomem(err, 0);
    }
    for (int i = 0; i < r->n; i++) {
        r->cols[i].qual = dup_or_null(qual);
        r->cols[i].name = hs_strdup(sch->children[i].name ? sch->children[i].name : "");
        if ((qual && !r->cols[i].qual) || !r->cols[i].name)
            return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* planner state                                                       */

typedef struct cte {
    const char *name;
    const json_t *query;      /* SelectStmt body */
    const json_t *colnames;   /* aliascolnames or NULL */
    struct cte *next;
    int in_use;               /* recursion guard */
} cte;

typedef struct planner {
    sq_session *s;
    xo_ctx *ctx;
    const char *text;
    hs_error *err;
    cte *ctes;
    bool all_columns;         /* the statement has a '*' or NATURAL join */
    json_t *names;            /* object: lower-case column names the statement mentions */
    int depth;
} planner;

static hs_status fail(planner *p, hs_status code, const char *state, int loc, const char *fmt,
                      ...) HS_PRINTF(5, 6);
static hs_status fail(planner *p, hs_status code, const char *state, int loc, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sq_fail(p->s, p->err, code, state, p->text, loc, "%s", msg);
}

static hs_status nomem(planner *p) { return hs_err_nomem(p->err, 0); }

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

static json_t *jget(const json_t *o, const char *k) { return json_object_get(o, k); }

static const char *jstrv(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool is_kind(const json_t *j, const char *kind, json_t **body)
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
static int first_loc(const json_t *j, int depth)
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
            int x = first_loc(v, depth + 1);
            if (x >= 0)
                return x;
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            int x = first_loc(v, depth + 1);
            if (x >= 0)
                return x;
        }
    }
    return -1;
}

static int node_loc(const json_t *j)
{
    const char *k;
    json_t *b;
    if (sq_node(j, &k, &b)) {
        int l = sq_loc(b);
        if (l >= 0)
            return l;
    }
    return first_loc(j, 0);
}

/* Structural equality ignoring "location" keys. */
static bool jeq(const json_t *a, const json_t *b)
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
            if (!w || !jeq(v, w))
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
            if (!jeq(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* The function name of a FuncCall body (last part, lower case as parsed). */
static const char *func_name(const json_t *fc)
{
    json_t *names = jget(fc, "funcname");
    size_t n = json_array_size(names);
    return n ? sq_str(json_array_get(names, n - 1)) : NULL;
}

static bool agg_name(const char *nm, xo_agg_fn *fn)
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

static bool is_agg_call(const json_t *j)
{
    json_t *b;
    return is_kind(j, "FuncCall", &b) && !jget(b, "over") && agg_name(func_name(b), NULL);
}

/* Collects the calls under j (not inside subqueries) for which want() holds
 * into arr, each distinct call once; calls inside a collected call are not
 * visited. */
static void collect_calls(const json_t *j, json_t *arr, bool (*want)(const json_t *), int depth)
{
    if (depth > 400 || !j)
        return;
    if (want(j)) {
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (jeq(json_array_get(arr, i), j))
                return;
        json_array_append(arr, (json_t *)j);
        return;
    }
    if (json_is_object(j)) {
        if (json_object_get(j, "SubLink"))
            return;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            collect_calls(v, arr, want, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            collect_calls(v, arr, want, depth + 1);
    }
}

/* Aggregate calls under j (not inside subqueries), into arr. */
static void collect_aggs(const json_t *j, json_t *arr, int depth)
{
    collect_calls(j, arr, is_agg_call, depth);
}

/* Collects SubLink nodes under j (not inside other subqueries). */
static void collect_sublinks(const json_t *j, json_t *arr, int depth)
{
    if (depth > 400 || !j)
        return;
    if (json_is_object(j)) {
        if (json_object_get(j, "SubLink") && json_object_size(j) == 1) {
            json_array_append(arr, (json_t *)j);
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            collect_sublinks(v, arr, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            collect_sublinks(v, arr, depth + 1);
    }
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
            json_t *f = jget(cr, "fields");
            json_t *last = json_array_get(f, json_array_size(f) - 1);
            if (is_kind(last, "A_Star", NULL)) {
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

static bool name_needed(const planner *p, const char *name)
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

typedef struct layer {
    const qcol *cols;
    int n;
    int offset;      /* position of the layer's first column in the scope's schema */
} layer;

#define MAX_LAYERS 4

typedef struct scope {
    planner *p;
    layer layers[MAX_LAYERS];
    int n_layers;
    const hs_field *schema;
    /* node hook: these nodes bind as these columns */
    const json_t **map_nodes;
    int *map_cols;
    int n_map;
    /* after aggregation: ColumnRefs must be group keys */
    const layer *pre;        /* the relation before aggregation */
    const int *key_of_col;   /* pre column -> output column, -1 = not a key */
    const char *no_aggs;     /* clause name where aggregates are not allowed (NULL = allowed via map) */
} scope;

static bool name_eq(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* Column of a layer for names[0..n): -1 none, -2 ambiguous. */
static int layer_find(const layer *l, const char *const *names, int n)
{
    const char *qual = n >= 2 ? names[n - 2] : NULL, *name = names[n - 1];
    int hit = -1, count = 0;
    for (int i = 0; i < l->n; i++) {
        const qcol *c = &l->cols[i];
        if (!name_eq(c->name, name) || (qual && !name_eq(c->qual, qual)) || (!qual && c->hidden))
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

static int scope_column(void *ctx, const char *const *names, int n)
{
    scope *sc = ctx;
    for (int i = 0; i < sc->n_layers; i++) {
        int c = layer_find(&sc->layers[i], names, n);
        if (c == -2)
            return -2;
        if (c >= 0)
            return sc->layers[i].offset + c;
    }
    return -1;
}

/* names of a ColumnRef body (NULL entries for '*'); returns n or -1. */
static int colref_names(const json_t *cr, const char **names, int max)
{
    json_t *f = jget(cr, "fields");
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
        if (sc->map_nodes[i] == node || jeq(sc->map_nodes[i], node)) {
            *col = sc->map_cols[i];
            return HS_OK;
        }
    json_t *b;
    if (sc->pre && is_kind(node, "ColumnRef", &b)) {
        const char *names[8];
        int n = colref_names(b, names, 8);
        if (n > 0 && names[n - 1]) {
            int c = layer_find(sc->pre, names, n);
            if (c >= 0) {
                if (sc->key_of_col[c] >= 0) {
                    *col = sc->key_of_col[c];
                    return HS_OK;
                }
                return fail(p, HS_INVALID, "42803", sq_loc(b),
                            "column \"%s%s%s\" must appear in the GROUP BY clause or be used in an "
                            "aggregate function",
                            n > 1 && names[n - 2] ? names[n - 2] : "", n > 1 ? "." : "",
                            names[n - 1]);
            }
        }
        return HS_OK;
    }
    if (is_kind(node, "FuncCall", &b)) {
        if (jget(b, "over"))
            return fail(p, HS_UNSUPPORTED, "0A000", sq_loc(b), "window functions are not supported");
        if (agg_name(func_name(b), NULL))
            return fail(p, HS_INVALID, "42803", sq_loc(b), "aggregate functions are not allowed in %s",
                        sc->no_aggs ? sc->no_aggs : "this context");
    }
    if (is_kind(node, "SubLink", &b))
        return fail(p, HS_UNSUPPORTED, "0A000", node_loc(node),
                    "this form of subquery is not supported here");
    return HS_OK;
}

static hs_status bind_in(scope *sc, const json_t *node, bool filter, ex_expr **out)
{
    ex_scope es = {.schema = sc->schema, .column = scope_column, .node = scope_node, .ctx = sc};
    return ex_bind_json(node, sc->p->text, &es, filter, out, sc->p->err);
}

/* A scope over one relation. */
static void scope_rel(scope *sc, planner *p, const rel *r)
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
        return nomem(p);
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
        return nomem(p);
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

/* {"ColumnRef": ...} for a column index of a scope (positional binding). */
typedef struct pos_ctx {
    int col;
} pos_ctx;
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
        return nomem(p);
    pos_ctx pc = {idx};
    ex_scope es = {.schema = schema, .column = pos_column, .ctx = &pc};
    hs_status st = ex_bind_json(j, p->text, &es, false, out, p->err);
    json_decref(j);
    return st;
}

/* ------------------------------------------------------------------ */
/* projections that pass columns through                               */

/* Expressions cannot produce nested values (lists, structs, maps), so a
 * projection that passes such a column through is this operator: output
 * column i is the child's column src[i] (moved out of the child's batch,
 * copied when taken twice) or ex[i] evaluated over the batch. */
typedef struct pass_op {
    xo_op op;
    int n;
    int *src;
    ex_expr **ex;
} pass_op;

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
static hs_status project_mixed(planner *p, xo_op *child, int n, const int *src, ex_expr **ex,
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
    st = po && kids && po->src && po->ex ? HS_OK : nomem(p);
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
            st = nomem(p);
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
    default: nm = "text"; break;
    }
    json_t *tn = json_pack("{s:[{s:{s:s}}],s:i,s:i}", "names", "String", "sval", nm, "typemod", -1,
                           "location", -1);
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

static bool same_type(const hs_field *a, const hs_field *b)
{
    if (a->type != b->type)
        return false;
    if (a->type == HS_TYPE_DECIMAL128)
        return a->precision == b->precision && a->scale == b->scale;
    if (a->type == HS_TYPE_TIMESTAMP)
        return a->unit == b->unit && !a->tz == !b->tz;
    if (a->type == HS_TYPE_LIST || a->type == HS_TYPE_FIXED_LIST || a->type == HS_TYPE_STRUCT ||
        a->type == HS_TYPE_MAP)
        return hs_field_equals(a, b, false, false);
    return true;
}

/* The type two columns unify to (set operations, VALUES, CASE-like). */
static void unify_type(const hs_field *a, const hs_field *b, hs_field *out)
{
    *out = *a;
    if (same_type(a, b) || b->type == HS_TYPE_NA)
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
static json_t *cast_json(json_t *node, const hs_field *f)
{
    json_t *tn = type_json(f);
    if (!tn)
        return NULL;
    return json_pack("{s:{s:O,s:o,s:i}}", "TypeCast", "arg", node, "typeName", tn, "location", -1);
}

/* Projects r so column i has type types[i] (casting where needed). */
static hs_status cast_rel(planner *p, rel *r, const hs_field *types)
{
    const hs_field *sch = &r->op->schema;
    bool need = false;
    for (int i = 0; i < sch->n_children; i++)
        need |= !same_type(&sch->children[i], &types[i]);
    if (!need)
        return HS_OK;
    int n = sch->n_children;
    ex_expr **ex = hs_calloc((size_t)n, sizeof *ex);
    const char **names = hs_calloc((size_t)n, sizeof *names);
    hs_status st = ex && names ? HS_OK : nomem(p);
    json_t *cref = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval",
                             "c", "location", -1);
    if (!cref && st == HS_OK)
        st = nomem(p);
    for (int i = 0; i < n && st == HS_OK; i++) {
        names[i] = sch->children[i].name;
        pos_ctx pc = {i};
        ex_scope es = {.schema = sch, .column = pos_column, .ctx = &pc};
        if (same_type(&sch->children[i], &types[i])) {
            st = ex_bind_json(cref, p->text, &es, false, &ex[i], p->err);
        } else {
            /* a column of NULLs (type NA) becomes a typed NULL constant */
            json_t *src = sch->children[i].type == HS_TYPE_NA
                              ? json_pack("{s:{s:b,s:i}}", "A_Const", "isnull", 1, "location", -1)
                              : json_incref(cref);
            json_t *c = src ? cast_json(src, &types[i]) : NULL;
            json_decref(src);
            st = c ? ex_bind_json(c, p->text, &es, false, &ex[i], p->err) : nomem(p);
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

enum { F_TABLE, F_REL, F_JOIN };

typedef struct fnode {
    int kind;
    int loc;
    bool nullable;            /* on the nullable side of an outer join */
    /* F_TABLE */
    hs_table *t;
    hs_field ts;              /* the table's schema (owned) */
    hs_scan_options so;       /* snapshot (time travel) */
    hs_buf filt;              /* pushed conjuncts, " AND "-joined */
    double est;               /* estimated rows */
    /* F_REL */
    rel rl;
    /* F_TABLE and F_REL: names for resolution */
    char *alias;
    qcol *ns;
    int n_ns;
    /* F_JOIN */
    const char *jtype;        /* JOIN_INNER, JOIN_LEFT, JOIN_RIGHT, JOIN_FULL */
    struct fnode *l, *r;
    const json_t *quals, *using;
    bool natural;
    char *jalias;
} fnode;

typedef struct fromc {
    fnode **items;
    int n_items;
    fnode **leaves;
    int n_leaves;
    fnode **all;
    int n_all;
} fromc;

static void fnode_free(fnode *f)
{
    if (!f)
        return;
    hs_field_clear(&f->ts);
    hs_buf_free(&f->filt);
    rel_clear(&f->rl);
    hs_free(f->alias);
    hs_free(f->jalias);
    qcols_free(f->ns, f->n_ns);
    hs_free(f);
}

static void fromc_free(fromc *fc)
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
        return nomem(p);
    *a = na;
    na[(*n)++] = f;
    return HS_OK;
}

static hs_status new_fnode(planner *p, fromc *fc, int kind, int loc, fnode **out)
{
    fnode *f = hs_calloc(1, sizeof *f);
    if (!f)
        return nomem(p);
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

static hs_status plan_query(planner *p, const json_t *sel, rel *out);

/* Rows of the table's current snapshot (summary), or 1000. */
static double table_rows(hs_table *t)
{
    int64_t cur = hs_table_current_snapshot_id(t);
    int n = hs_snapshot_count(t);
    for (int i = 0; i < n; i++) {
        hs_snapshot_info si;
        hs_error e = {0};
        if (hs_snapshot_get(t, i, &si, &e) == HS_OK && si.snapshot_id == cur)
            return si.total_records >= 0 ? (double)si.total_records : 1000.0;
    }
    return n == 0 ? 0.0 : 1000.0;
}

/* Renames r's columns with alias (qualifier) and optional column aliases. */
static hs_status apply_alias(planner *p, rel *r, const char *alias, const json_t *colnames, int loc)
{
    HS_TRY(rel_name(r, alias, p->err));
    size_t nc = json_array_size(colnames);
    if ((int)nc > r->n)
        return fail(p, HS_INVALID, "42P10", loc,
                    "table \"%s\" has %d columns available but %zu columns specified",
                    alias ? alias : "?", r->n, nc);
    for (size_t i = 0; i < nc; i++) {
        const char *nm = sq_str(json_array_get(colnames, i));
        char *d = hs_strdup(nm ? nm : "");
        if (!d)
            return nomem(p);
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
        return nomem(p);
    for (int i = 0; i < f->n_ns; i++) {
        f->ns[i].qual = dup_or_null(f->rl.cols[i].qual);
        f->ns[i].name = hs_strdup(f->rl.cols[i].name);
        f->ns[i].hidden = f->rl.cols[i].hidden;
        if (!f->ns[i].name)
            return nomem(p);
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

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d);

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
            return fail(p, HS_INVALID, "22007", tt->off,
                        "invalid timestamp \"%s\" in FOR SYSTEM_TIME AS OF (YYYY-MM-DD[ HH:MM:SS] UTC)",
                        tt->ts);
        int64_t ms = (days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60) * 1000 +
                     (int64_t)(sec * 1000 + 0.5);
        f->so.use_as_of = 1;
        f->so.as_of_ms = ms;
        return HS_OK;
    }
    return HS_OK;
}

static hs_status from_rangevar(planner *p, fromc *fc, json_t *b, fnode **out)
{
    const char *rel_name_s = jstrv(b, "relname");
    json_t *alias = jget(b, "alias");
    const char *an = alias ? jstrv(alias, "aliasname") : NULL;
    json_t *colnames = alias ? jget(alias, "colnames") : NULL;
    int loc = sq_loc(b);
    cte *c = !jget(b, "schemaname") && rel_name_s ? find_cte(p, rel_name_s) : NULL;
    fnode *f;
    if (c) {
        if (c->in_use)
            return fail(p, HS_UNSUPPORTED, "0A000", loc, "recursive CTEs are not supported");
        HS_TRY(new_fnode(p, fc, F_REL, loc, &f));
        c->in_use = 1;
        /* the CTE sees only the CTEs defined before it */
        cte *saved = p->ctes;
        p->ctes = c->next;
        hs_status st = plan_query(p, c->query, &f->rl);
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
    f->est = table_rows(f->t);
    f->alias = hs_strdup(an ? an : rel_name_s ? rel_name_s : "");
    if (!f->alias)
        return nomem(p);
    f->n_ns = f->ts.n_children;
    f->ns = hs_calloc((size_t)f->n_ns + 1, sizeof *f->ns);
    if (!f->ns)
        return nomem(p);
    size_t nc = json_array_size(colnames);
    if ((int)nc > f->n_ns)
        return fail(p, HS_INVALID, "42P10", loc,
                    "table \"%s\" has %d columns available but %zu columns specified", f->alias,
                    f->n_ns, nc);
    for (int i = 0; i < f->n_ns; i++) {
        const char *nm = (size_t)i < nc ? sq_str(json_array_get(colnames, i)) : f->ts.children[i].name;
        f->ns[i].qual = hs_strdup(f->alias);
        f->ns[i].name = hs_strdup(nm ? nm : "");
        if (!f->ns[i].qual || !f->ns[i].name)
            return nomem(p);
    }
    *out = f;
    return HS_OK;
}

static hs_status from_item(planner *p, fromc *fc, const json_t *item, fnode **out)
{
    const char *k;
    json_t *b;
    if (!sq_node(item, &k, &b))
        return fail(p, HS_INTERNAL, "XX000", -1, "malformed FROM item");
    if (fc->n_leaves >= 200)
        return fail(p, HS_UNSUPPORTED, "54000", first_loc(b, 0), "more than 200 tables in one FROM");
    if (!strcmp(k, "RangeVar")) {
        HS_TRY(from_rangevar(p, fc, b, out));
        return push_ptr(p, &fc->leaves, &fc->n_leaves, *out);
    }
    if (!strcmp(k, "RangeSubselect")) {
        if (json_is_true(jget(b, "lateral")))
            return fail(p, HS_UNSUPPORTED, "0A000", first_loc(b, 0), "LATERAL is not supported");
        json_t *alias = jget(b, "alias");
        json_t *sb;
        if (!is_kind(jget(b, "subquery"), "SelectStmt", &sb))
            return fail(p, HS_UNSUPPORTED, "0A000", first_loc(b, 0), "unsupported subquery in FROM");
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_REL, first_loc(b, 0), &f));
        HS_TRY(plan_query(p, sb, &f->rl));
        HS_TRY(apply_alias(p, &f->rl, alias ? jstrv(alias, "aliasname") : NULL,
                           alias ? jget(alias, "colnames") : NULL, f->loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return push_ptr(p, &fc->leaves, &fc->n_leaves, f);
    }
    if (!strcmp(k, "JoinExpr")) {
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_JOIN, first_loc(b, 0), &f));
        f->jtype = jstrv(b, "jointype");
        if (!f->jtype)
            f->jtype = "JOIN_INNER";
        if (strcmp(f->jtype, "JOIN_INNER") && strcmp(f->jtype, "JOIN_LEFT") &&
            strcmp(f->jtype, "JOIN_RIGHT") && strcmp(f->jtype, "JOIN_FULL"))
            return fail(p, HS_UNSUPPORTED, "0A000", f->loc, "unsupported join type %s", f->jtype);
        f->quals = jget(b, "quals");
        f->using = jget(b, "usingClause");
        f->natural = json_is_true(jget(b, "isNatural"));
        json_t *alias = jget(b, "alias");
        if (alias && jstrv(alias, "aliasname")) {
            f->jalias = hs_strdup(jstrv(alias, "aliasname"));
            if (!f->jalias)
                return nomem(p);
        }
        HS_TRY(from_item(p, fc, jget(b, "larg"), &f->l));
        HS_TRY(from_item(p, fc, jget(b, "rarg"), &f->r));
        *out = f;
        return HS_OK;
    }
    if (!strcmp(k, "RangeFunction"))
        return fail(p, HS_UNSUPPORTED, "0A000", first_loc(b, 0), "functions in FROM are not supported");
    return fail(p, HS_UNSUPPORTED, "0A000", first_loc(b, 0), "unsupported FROM item (%s)", k);
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
static int leaf_find(fnode **leaves, int n_leaves, const char *const *names, int n, int *col)
{
    int hit = -1;
    for (int i = 0; i < n_leaves; i++) {
        layer l = {leaves[i]->ns, leaves[i]->n_ns, 0};
        int c = layer_find(&l, names, n);
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
            return nomem(p);
        for (int i = 0; i < nl; i++)
            for (int c = 0; c < lv[i]->n_ns; c++) {
                if (lv[i]->ns[c].hidden)
                    continue;
                const char *nm = lv[i]->ns[c].name;
                int col;
                if (leaf_find(rv, nr, &nm, 1, &col) >= 0)
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
        int li = nm ? leaf_find(lv, nl, &nm, 1, &lc) : -1;
        int ri = nm ? leaf_find(rv, nr, &nm, 1, &rc) : -1;
        if (li < 0 || ri < 0)
            return fail(p, HS_NOT_FOUND, "42703", f->loc,
                        "column \"%s\" specified in USING clause does not exist in %s table",
                        nm ? nm : "?", li < 0 ? "left" : "right");
        rv[ri]->ns[rc].hidden = true;
    }
    return HS_OK;
}

static hs_status fromc_build(planner *p, const json_t *from, fromc *fc)
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

typedef struct conj {
    json_t *node;
    unsigned char *lset;      /* leaves it reads (n_leaves) */
    int n_refs;               /* leaves it reads */
    bool sub;                 /* contains a subquery */
    bool outer;               /* reads a column that is not in this FROM */
    bool used;
} conj;

typedef struct conjs {
    conj *a;
    int n;
} conjs;

static void conjs_free(conjs *c)
{
    for (int i = 0; i < c->n; i++) {
        hs_free(c->a[i].lset);
        json_decref(c->a[i].node);
    }
    hs_free(c->a);
    memset(c, 0, sizeof *c);
}

/* Splits an AND tree into conjuncts (new references appended to arr). */
static void split_and(const json_t *j, json_t *arr)
{
    json_t *b;
    if (!j)
        return;
    if (is_kind(j, "BoolExpr", &b) && jstrv(b, "boolop") && !strcmp(jstrv(b, "boolop"), "AND_EXPR")) {
        size_t i;
        json_t *v;
        json_array_foreach(jget(b, "args"), i, v)
            split_and(v, arr);
        return;
    }
    json_array_append(arr, (json_t *)j);
}

/* AND of the nodes (a new reference; NULL for none). */
static json_t *mk_and(json_t **nodes, int n)
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
        if (json_object_size(j) == 1 && is_kind(j, "SubLink", &b)) {
            c->sub = true;
            conj_refs(jget(b, "testexpr"), leaves, n_leaves, c, depth + 1);
            return;
        }
        if (json_object_size(j) == 1 && is_kind(j, "ColumnRef", &b)) {
            const char *names[8];
            int n = colref_names(b, names, 8);
            int col;
            if (n < 1 || !names[n - 1])
                return;
            int li = leaf_find(leaves, n_leaves, names, n, &col);
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

static hs_status conjs_make(planner *p, const json_t *where, fromc *fc, conjs *out)
{
    json_t *arr = json_array();
    if (!arr)
        return nomem(p);
    split_and(where, arr);
    size_t n = json_array_size(arr);
    out->a = hs_calloc(n + 1, sizeof *out->a);
    if (!out->a) {
        json_decref(arr);
        return nomem(p);
    }
    for (size_t i = 0; i < n; i++) {
        conj *c = &out->a[out->n++];
        c->node = json_incref(json_array_get(arr, i));
        c->lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
        if (!c->lset) {
            json_decref(arr);
            return nomem(p);
        }
        conj_refs(c->node, fc->leaves, fc->n_leaves, c, 0);
    }
    json_decref(arr);
    return HS_OK;
}

static int leaf_index(const fromc *fc, const fnode *f)
{
    for (int i = 0; i < fc->n_leaves; i++)
        if (fc->leaves[i] == f)
            return i;
    return -1;
}

/* Pushes the conjuncts that read one base table into its scan filter. */
static hs_status push_filters(planner *p, fromc *fc, conjs *cs)
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
        scope sc;
        memset(&sc, 0, sizeof sc);
        sc.p = p;
        sc.layers[0] = (layer){f->ns, f->n_ns, 0};
        sc.n_layers = 1;
        sc.schema = &f->ts;
        sc.no_aggs = "WHERE";
        ex_expr *e;
        HS_TRY(bind_in(&sc, c->node, true, &e));
        char *txt = NULL;
        hs_status st = ex_format(e, &txt, p->err);
        ex_free(e);
        HS_TRY(st);
        /* only text the scan's filter parser reads back is pushed (the
         * conjunct stays a filter above the scan otherwise) */
        ex_expr *chk = NULL;
        hs_error e2 = {0};
        if (ex_parse_filter(txt, &f->ts, &chk, &e2) != HS_OK) {
            hs_free(txt);
            continue;
        }
        ex_free(chk);
        if (f->filt.len)
            st = hs_buf_puts(&f->filt, " AND ");
        if (st == HS_OK)
            st = hs_buf_puts(&f->filt, txt);
        hs_free(txt);
        if (st != HS_OK)
            return nomem(p);
        f->est = f->est / 4 + 1;
        c->used = true;
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
        return nomem(p);
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (name_needed(p, f->ts.children[i].name) || name_needed(p, f->ns[i].name)) {
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
            st = nomem(p);
        for (int i = 0; i < k && st == HS_OK; i++) {
            out->cols[i].qual = hs_strdup(f->alias);
            out->cols[i].name = hs_strdup(f->ns[idx[i]].name);
            out->cols[i].hidden = f->ns[idx[i]].hidden;
            if (!out->cols[i].qual || !out->cols[i].name)
                st = nomem(p);
        }
    }
    hs_free(idx);
    if (st != HS_OK)
        rel_clear(out);
    return st;
}

static bool key_types_ok(const hs_field *a, const hs_field *b)
{
    if (is_int_type(a->type) && is_int_type(b->type))
        return true;
    return same_type(a, b) && a->type != HS_TYPE_FLOAT16;
}

/* If c is `x = y` with x a column of l and y one of r (or swapped). */
static bool equi_cols(const json_t *c, const rel *l, const rel *r, int *lc, int *rc)
{
    json_t *b;
    if (!is_kind(c, "A_Expr", &b) || strcmp(jstrv(b, "kind") ? jstrv(b, "kind") : "", "AEXPR_OP"))
        return false;
    json_t *nm = jget(b, "name");
    if (json_array_size(nm) != 1 || !sq_str(json_array_get(nm, 0)) ||
        strcmp(sq_str(json_array_get(nm, 0)), "="))
        return false;
    json_t *x, *y;
    if (!is_kind(jget(b, "lexpr"), "ColumnRef", &x) || !is_kind(jget(b, "rexpr"), "ColumnRef", &y))
        return false;
    const char *nx[8], *ny[8];
    int n1 = colref_names(x, nx, 8), n2 = colref_names(y, ny, 8);
    if (n1 < 1 || n2 < 1 || !nx[n1 - 1] || !ny[n2 - 1])
        return false;
    layer L = {l->cols, l->n, 0}, R = {r->cols, r->n, 0};
    int a = layer_find(&L, nx, n1), bb = layer_find(&R, ny, n2);
    int a2 = layer_find(&R, nx, n1), b2 = layer_find(&L, ny, n2);
    if (a >= 0 && bb >= 0 && a2 < 0 && b2 < 0) {
        *lc = a;
        *rc = bb;
    } else if (a2 >= 0 && b2 >= 0 && a < 0 && bb < 0) {
        *lc = b2;
        *rc = a2;
    } else {
        return false;
    }
    return key_types_ok(&l->op->schema.children[*lc], &r->op->schema.children[*rc]);
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
        return nomem(p);
    out->n = n;
    for (int i = 0; i < n; i++) {
        const qcol *c = i < l->n ? &l->cols[i] : &r->cols[i - l->n];
        out->cols[i].qual = dup_or_null(c->qual);
        out->cols[i].name = hs_strdup(c->name ? c->name : "");
        out->cols[i].hidden = c->hidden;
        if ((c->qual && !out->cols[i].qual) || !out->cols[i].name)
            return nomem(p);
    }
    return HS_OK;
}

/* Joins l and r (both taken) on conditions cond[0..n): equalities of
 * columns become hash keys (extra pairs lk/rk may be given), the rest a
 * residual.  *out gets the joined relation. */
static hs_status join_rels(planner *p, rel *l, rel *r, xo_join_kind kind, json_t **cond, int n,
                           const int *xlk, const int *xrk, int nx, bool right_first, rel *out)
{
    memset(out, 0, sizeof *out);
    int *lk = hs_calloc((size_t)(n + nx) + 1, sizeof *lk);
    int *rk = hs_calloc((size_t)(n + nx) + 1, sizeof *rk);
    json_t **res = hs_calloc((size_t)n + 1, sizeof *res);
    hs_status st = lk && rk && res ? HS_OK : nomem(p);
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
        json_t *all = mk_and(res, nr);
        scope sc;
        st = all ? scope_pair(&sc, p, l, r, right_first) : nomem(p);
        if (st == HS_OK) {
            sc.no_aggs = "JOIN conditions";
            st = bind_in(&sc, all, true, &resid);
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
    rel_clear(l);
    rel_clear(r);
    if (st != HS_OK)
        rel_clear(out);
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
    hs_status st = ex && names && cols ? HS_OK : nomem(p);
    int k = 0, extra = n;
    for (int i = 0; i < n && st == HS_OK; i++) {
        const qcol *c = &r->cols[i];
        int ui = -1, rc = -1;
        for (int u = 0; i < nl && u < nu && ui < 0; u++)
            if (name_eq(sq_str(json_array_get(using, (size_t)u)), c->name) && !c->hidden)
                ui = u;
        for (int j = nl; ui >= 0 && j < n && rc < 0; j++)
            if (name_eq(r->cols[j].name, c->name) && r->cols[j].hidden)
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
            st = co ? ex_bind_json(co, p->text, &es, false, &ex[k], p->err) : nomem(p);
            json_decref(co);
            cols[k] = (qcol){NULL, hs_strdup(c->name), false};
            names[k++] = c->name;
            /* the original, qualified only */
            if (st == HS_OK)
                st = col_expr(p, &r->op->schema, i, &ex[extra]);
            cols[extra] = (qcol){dup_or_null(c->qual), hs_strdup(c->name), true};
            names[extra++] = c->name;
            continue;
        }
        st = col_expr(p, &r->op->schema, i, &ex[k]);
        cols[k] = (qcol){dup_or_null(c->qual), hs_strdup(c->name), c->hidden};
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
        qcols_free(cols, n + nu);
        return st;
    }
    qcols_free(r->cols, r->n);
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
        return join_rels(p, l, r, kind, cond, n, lk, rk, nk, false, out);
    xo_join_kind sk = kind == XO_JOIN_LEFT ? XO_JOIN_RIGHT : kind == XO_JOIN_RIGHT ? XO_JOIN_LEFT : kind;
    int nl = l->n, nr = r->n;
    rel sw;
    HS_TRY(join_rels(p, r, l, sk, cond, n, rk, lk, nk, false, &sw));
    int tot = nl + nr;
    int *src = hs_calloc((size_t)tot + 1, sizeof *src);
    ex_expr **ex = hs_calloc((size_t)tot + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)tot + 1, sizeof *names);
    qcol *cols = hs_calloc((size_t)tot + 1, sizeof *cols);
    hs_status st = src && ex && names && cols ? HS_OK : nomem(p);
    for (int i = 0; i < tot && st == HS_OK; i++) {
        int from = i < nl ? nr + i : i - nl;
        src[i] = from;
        names[i] = sw.op->schema.children[from].name;
        cols[i] = sw.cols[from];
        sw.cols[from] = (qcol){0};
    }
    xo_op *op = NULL;
    if (st == HS_OK) {
        st = project_mixed(p, sw.op, tot, src, ex, names, &op);
        sw.op = NULL;
    }
    hs_free(src);
    hs_free(ex);
    hs_free(names);
    rel_clear(&sw);
    if (st != HS_OK) {
        qcols_free(cols, tot);
        return st;
    }
    out->op = op;
    out->cols = cols;
    out->n = tot;
    return HS_OK;
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
        st = nomem(p);
    if (st == HS_OK)
        split_and(f->quals, arr);
    int nu = (int)json_array_size(f->using);
    int *lk = hs_calloc((size_t)nu + 1, sizeof *lk), *rk = hs_calloc((size_t)nu + 1, sizeof *rk);
    if (st == HS_OK && (!lk || !rk))
        st = nomem(p);
    for (int i = 0; i < nu && st == HS_OK; i++) {
        const char *nm = sq_str(json_array_get(f->using, (size_t)i));
        layer L = {l.cols, l.n, 0};
        lk[i] = nm ? layer_find(&L, &nm, 1) : -1;
        rk[i] = -1;
        for (int c = 0; nm && c < r.n; c++)
            if (name_eq(r.cols[c].name, nm) && (rk[i] < 0 || r.cols[c].hidden))
                rk[i] = c;
        if (lk[i] < 0 || rk[i] < 0)
            st = fail(p, HS_NOT_FOUND, "42703", f->loc,
                      "column \"%s\" specified in USING clause does not exist", nm ? nm : "?");
        else if (!key_types_ok(&l.op->schema.children[lk[i]], &r.op->schema.children[rk[i]]))
            st = fail(p, HS_INVALID, "42804", f->loc, "JOIN/USING types for column \"%s\" differ", nm);
    }
    int nl = l.n;
    if (st == HS_OK) {
        size_t n = json_array_size(arr);
        json_t **c = hs_calloc(n + 1, sizeof *c);
        if (!c)
            st = nomem(p);
        for (size_t i = 0; c && i < n; i++)
            c[i] = json_array_get(arr, i);
        if (st == HS_OK)
            st = join_sides(p, &l, &r, join_kind(f->jtype), c, (int)n, lk, rk, nu,
                            item_est(f->l), item_est(f->r), out);
        hs_free(c);
    }
    hs_free(lk);
    hs_free(rk);
    json_decref(arr);
    rel_clear(&l);
    rel_clear(&r);
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
#define INDEX_JOIN_MAX 10000
static hs_status filter_rel(planner *p, rel *r, json_t **nodes, int n, const json_t **map_nodes,
                            int *map_cols, int n_map, const char *clause);
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
        if (name_eq(f->ns[k].name, r->cols[rc].name))
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
        const char *c = jstrv(v, "column"), *kind = jstrv(v, "kind");
        if (c && kind && !strcmp(c, tcol) && strncmp(kind, "hnsw", 4) && strncmp(kind, "ivf", 3))
            indexed = true;
    }
    json_decref(arr);
    if (!indexed)
        return HS_OK;
    /* the same columns the scan of r reads */
    const char **cols = hs_calloc((size_t)r->n + 1, sizeof *cols);
    if (!cols)
        return nomem(p);
    for (int c = 0; c < r->n; c++)
        for (int k = 0; k < f->n_ns; k++)
            if (name_eq(f->ns[k].name, r->cols[c].name))
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
    rel_clear(cur);
    rel_clear(r);
    *done = true;
    if (st == HS_OK && n > 1) {
        json_t **rest = hs_calloc((size_t)n, sizeof *rest);
        int nr = 0;
        for (int k = 0; rest && k < n; k++)
            if (k != key)
                rest[nr++] = cond[k];
        st = rest ? filter_rel(p, out, rest, nr, NULL, NULL, 0, "WHERE") : nomem(p);
        hs_free(rest);
    }
    if (st != HS_OK)
        rel_clear(out);
    return st;
}

/* Joins the FROM items with the remaining (not pushed, subquery-free)
 * conjuncts; *out is the whole FROM. */
static hs_status build_from(planner *p, fromc *fc, conjs *cs, rel *out)
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
    hs_status st = leaf_item && inset && items && est ? HS_OK : nomem(p);
    for (int i = 0; i < n && st == HS_OK; i++) {
        fnode *lv[256];
        int nl = 0;
        leaves_of(fc->items[i], lv, &nl);
        for (int k = 0; k < nl; k++)
            leaf_item[leaf_index(fc, lv[k])] = i;
        est[i] = item_est(fc->items[i]);
        st = build_fnode(p, fc->items[i], &items[i]);
    }
    int start = 0;
    for (int i = 1; i < n; i++)
        if (est[i] > est[start])
            start = i;
    double cur_est = est ? est[start] : 0;
    int *sizes = hs_calloc((size_t)n + 1, sizeof *sizes), *order = hs_calloc((size_t)n + 1, sizeof *order);
    if (st == HS_OK && (!sizes || !order))
        st = nomem(p);
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
        bool best_conn = false;
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
            if (best < 0 || (conn && !best_conn) || (conn == best_conn && est[j] < est[best])) {
                best = j;
                best_conn = conn;
            }
        }
        inset[best] = 1;
        order[step] = best;
        json_t **cond = hs_calloc((size_t)cs->n + 1, sizeof *cond);
        int nc = 0;
        if (!cond) {
            st = nomem(p);
            break;
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
        st = index_join_try(p, out, cur_est, fc->items[best], &items[best], est[best], cond, nc,
                            &joined, &done);
        if (st == HS_OK && !done && step == 1) {
            /* the small item probes the first (largest) table through its index */
            st = index_join_try(p, &items[best], est[best], fc->items[start], out, cur_est, cond, nc,
                                &joined, &done);
            if (st == HS_OK && done) {
                order[0] = best;
                order[1] = start;
            }
        }
        if (st == HS_OK && !done)
            st = join_rels(p, out, &items[best], XO_JOIN_INNER, cond, nc, NULL, NULL, 0, false, &joined);
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
        st = src && ex && names && cols ? HS_OK : nomem(p);
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
            st = project_mixed(p, out->op, tot, src, ex, names, &op);
            out->op = st == HS_OK ? op : NULL;
            qcols_free(out->cols, out->n);
            out->cols = cols;
            cols = NULL;
        } else if (st == HS_OK) {
            st = fail(p, HS_INTERNAL, "XX000", -1, "join column bookkeeping: %d of %d columns", o, tot);
        }
        if (cols)
            qcols_free(cols, tot);
        hs_free(src);
        hs_free(ex);
        hs_free(names);
    }
    hs_free(sizes);
    hs_free(order);
    for (int i = 0; i < n && items; i++)
        rel_clear(&items[i]);
    hs_free(items);
    hs_free(est);
    hs_free(inset);
    hs_free(leaf_item);
    if (st != HS_OK)
        rel_clear(out);
    return st;
}

/* Filters r by the AND of nodes (bound with sc's hooks over r). */
static hs_status filter_rel(planner *p, rel *r, json_t **nodes, int n, const json_t **map_nodes,
                            int *map_cols, int n_map, const char *clause)
{
    if (n == 0)
        return HS_OK;
    json_t *all = mk_and(nodes, n);
    if (!all)
        return nomem(p);
    scope sc;
    scope_rel(&sc, p, r);
    sc.map_nodes = map_nodes;
    sc.map_cols = map_cols;
    sc.n_map = n_map;
    sc.no_aggs = clause;
    ex_expr *e;
    hs_status st = bind_in(&sc, all, true, &e);
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
/* Node-to-column map used while binding (subquery results, aggregates,
 * window functions). */
typedef struct nmap {
    const json_t **nodes;
    int *cols;
    int n, cap;
} nmap;
static hs_status rel_add_expr_in(planner *p, rel *r, const json_t *node, const nmap *m,
                                 const layer *pre, const int *key_of_col, int *col);

static hs_status rel_add_expr(planner *p, rel *r, const json_t *node, int *col)
{
    return rel_add_expr_in(p, r, node, NULL, NULL, NULL, col);
}

static hs_status rel_add_expr_in(planner *p, rel *r, const json_t *node, const nmap *m,
                                 const layer *pre, const int *key_of_col, int *col)
{
    json_t *b;
    if (is_kind(node, "ColumnRef", &b)) {
        const char *names[8];
        int n = colref_names(b, names, 8);
        layer l = {r->cols, r->n, 0};
        int c = n > 0 && names[n - 1] ? layer_find(&l, names, n) : -1;
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
    hs_status st = ex && names && nc && src ? HS_OK : nomem(p);
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
        scope_rel(&sc, p, r);
        sc.no_aggs = "this context";
        if (m) {
            sc.map_nodes = m->nodes;
            sc.map_cols = m->cols;
            sc.n_map = m->n;
        }
        sc.pre = pre;
        sc.key_of_col = key_of_col;
        st = bind_in(&sc, node, false, &ex[n]);
        names[n] = "?column?";
    }
    if (st == HS_OK) {
        xo_op *op;
        st = project_mixed(p, r->op, n + 1, src, ex, names, &op);
        r->op = st == HS_OK ? op : NULL;
        if (st == HS_OK) {
            r->cols[n] = (qcol){NULL, hs_strdup(""), true};
            r->n = n + 1;
            *col = n;
            if (!r->cols[n].name)
                st = nomem(p);
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
/* subqueries                                                          */

static hs_status plan_select(planner *p, const json_t *sel, rel *out);

typedef struct corr {
    json_t *inner;    /* conjuncts reading only the subquery's FROM */
    json_t *corr;     /* conjuncts reading outer columns */
    fnode **leaves;   /* the subquery's FROM leaves (borrowed from fc) */
    int n_leaves;
    fromc fc;
} corr;

static void corr_free(corr *c)
{
    json_decref(c->inner);
    json_decref(c->corr);
    fromc_free(&c->fc);
}

/* Splits the subquery's WHERE into inner and correlated conjuncts. */
static hs_status sub_split(planner *p, const json_t *sub, corr *c)
{
    memset(c, 0, sizeof *c);
    c->inner = json_array();
    c->corr = json_array();
    if (!c->inner || !c->corr)
        return nomem(p);
    if (jget(sub, "withClause"))
        return HS_OK;   /* planned as written; outer references fail to bind */
    HS_TRY(fromc_build(p, jget(sub, "fromClause"), &c->fc));
    conjs cs = {0};
    HS_TRY(conjs_make(p, jget(sub, "whereClause"), &c->fc, &cs));
    for (int i = 0; i < cs.n; i++)
        json_array_append(cs.a[i].outer ? c->corr : c->inner, cs.a[i].node);
    conjs_free(&cs);
    c->leaves = c->fc.leaves;
    c->n_leaves = c->fc.n_leaves;
    return HS_OK;
}

/* Whether every ColumnRef under j resolves among the leaves (inner) or
 * none does (outer); *inner / *outer say which kinds occur. */
static void ref_kinds(const json_t *j, const corr *c, bool *inner, bool *outer, int depth)
{
    if (depth > 400 || !j)
        return;
    json_t *b;
    if (is_kind(j, "SubLink", &b)) {
        *inner = *outer = true;  /* not a plain expression */
        return;
    }
    if (is_kind(j, "ColumnRef", &b)) {
        const char *names[8];
        int n = colref_names(b, names, 8), col;
        if (n > 0 && names[n - 1] && leaf_find(c->leaves, c->n_leaves, names, n, &col) != -1)
            *inner = true;
        else
            *outer = true;
        return;
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            ref_kinds(v, c, inner, outer, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            ref_kinds(v, c, inner, outer, depth + 1);
    }
}

/* Inner ColumnRefs under j appended (once) to arr. */
static void inner_refs(const json_t *j, const corr *c, json_t *arr, int depth)
{
    if (depth > 400 || !j)
        return;
    json_t *b;
    if (is_kind(j, "ColumnRef", &b)) {
        const char *names[8];
        int n = colref_names(b, names, 8), col;
        if (n > 0 && names[n - 1] && leaf_find(c->leaves, c->n_leaves, names, n, &col) >= 0) {
            for (size_t i = 0; i < json_array_size(arr); i++)
                if (jeq(json_array_get(arr, i), j))
                    return;
            json_array_append(arr, (json_t *)j);
        }
        return;
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            inner_refs(v, c, arr, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            inner_refs(v, c, arr, depth + 1);
    }
}

/* If conjunct j is `a = b` with one side only outer, the other only inner:
 * *o / *in get them (borrowed). */
static bool corr_equality(const json_t *j, const corr *c, json_t **o, json_t **in)
{
    json_t *b;
    if (!is_kind(j, "A_Expr", &b) || strcmp(jstrv(b, "kind") ? jstrv(b, "kind") : "", "AEXPR_OP"))
        return false;
    json_t *nm = jget(b, "name");
    if (json_array_size(nm) != 1 || !sq_str(json_array_get(nm, 0)) ||
        strcmp(sq_str(json_array_get(nm, 0)), "="))
        return false;
    json_t *x = jget(b, "lexpr"), *y = jget(b, "rexpr");
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
    collect_aggs(jget(sub, "targetList"), a, 0);
    collect_aggs(jget(sub, "havingClause"), a, 0);
    bool r = json_array_size(a) > 0 || json_array_size(jget(sub, "groupClause")) > 0 ||
             jget(sub, "havingClause") != NULL;
    json_decref(a);
    return r;
}

static bool plain_select(const json_t *sub)
{
    const char *op = jstrv(sub, "op");
    return (!op || !strcmp(op, "SETOP_NONE")) && !jget(sub, "valuesLists");
}

/* Attaches [NOT] EXISTS / [NOT] IN (subquery) to cur as a semi/anti join. */
static hs_status attach_semi(planner *p, rel *cur, const json_t *sublink, bool neg)
{
    json_t *sb = jget(sublink, "subselect"), *sub;
    const char *type = jstrv(sublink, "subLinkType");
    int loc = sq_loc(sublink);
    bool is_in = type && !strcmp(type, "ANY_SUBLINK");
    if (!is_kind(sb, "SelectStmt", &sub))
        return fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported subquery");
    if (is_in) {
        json_t *opn = jget(sublink, "operName");
        if (json_array_size(opn) > 0 && strcmp(sq_str(json_array_get(opn, 0)) ? sq_str(json_array_get(opn, 0)) : "", "="))
            return fail(p, HS_UNSUPPORTED, "0A000", loc, "only = ANY (IN) subqueries are supported");
    }
    json_t *rowb = NULL;
    bool row = is_in && is_kind(jget(sublink, "testexpr"), "RowExpr", &rowb);
    size_t nrow = row ? json_array_size(jget(rowb, "args")) : 1;
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
    json_t **resid = hs_calloc(ncorr + 1, sizeof *resid);
    int nres = 0;
    if (st == HS_OK && (!targets || !lk || !rk || !resid))
        st = nomem(p);
    if (st == HS_OK && correlated && has_aggs_or_group(sub))
        st = fail(p, HS_UNSUPPORTED, "0A000", loc,
                  "correlated subqueries with GROUP BY or aggregates under EXISTS/IN are not supported");
    if (st == HS_OK && row && correlated)
        st = fail(p, HS_UNSUPPORTED, "0A000", loc, "row IN (correlated subquery) is not supported");
    if (st == HS_OK && is_in) {
        if (json_array_size(jget(sub, "targetList")) != nrow && plain_select(sub))
            st = fail(p, HS_INVALID, "42601", loc, "subquery has too %s columns",
                      json_array_size(jget(sub, "targetList")) > nrow ? "many" : "few");
        for (size_t i = 0; i < nrow && st == HS_OK; i++) {
            int col = -1;
            st = rel_add_expr(p, cur, row ? json_array_get(jget(rowb, "args"), i)
                                          : jget(sublink, "testexpr"), &col);
            lk[nk] = col;
            rk[nk++] = (int)i;
        }
    }
    if (st == HS_OK && correlated) {
        if (is_in)
            json_array_append(targets, jget(jget(json_array_get(jget(sub, "targetList"), 0), "ResTarget"), "val"));
        for (size_t i = 0; i < ncorr && st == HS_OK; i++) {
            json_t *cj = json_array_get(c.corr, i), *o, *in;
            if (corr_equality(cj, &c, &o, &in)) {
                int col;
                st = rel_add_expr(p, cur, o, &col);
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
                st = nomem(p);
            else
                json_object_set_new(rw, "targetList", tl);
            json_t *w = mk_and((json_t **)NULL, 0);
            size_t ni = json_array_size(c.inner);
            json_t **inn = hs_calloc(ni + 1, sizeof *inn);
            for (size_t i = 0; inn && i < ni; i++)
                inn[i] = json_array_get(c.inner, i);
            w = inn ? mk_and(inn, (int)ni) : NULL;
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
        st = plan_select(p, rw ? rw : sub, &s);
    if (st == HS_OK && is_in && !correlated && s.n != (int)nrow)
        st = fail(p, HS_INVALID, "42601", loc, "subquery has too many columns");
    for (size_t i = 1; st == HS_OK && row && i < nrow; i++)
        if (!key_types_ok(&cur->op->schema.children[lk[i]], &s.op->schema.children[i]))
            st = fail(p, HS_UNSUPPORTED, "0A000", loc, "row IN (subquery) with different column types");
    if (st == HS_OK && is_in && !key_types_ok(&cur->op->schema.children[lk[0]], &s.op->schema.children[0])) {
        /* cast the subquery's column to the outer key's type */
        hs_field *types = hs_calloc((size_t)s.n + 1, sizeof *types);
        if (!types)
            st = nomem(p);
        for (int i = 0; types && i < s.n; i++)
            types[i] = s.op->schema.children[i];
        if (types) {
            hs_field u;
            unify_type(&cur->op->schema.children[lk[0]], &s.op->schema.children[0], &u);
            types[0] = u;
            st = cast_rel(p, &s, types);
            hs_free(types);
            if (st == HS_OK && !key_types_ok(&cur->op->schema.children[lk[0]], &s.op->schema.children[0])) {
                int col = -1;
                json_t *tn = cast_json(jget(sublink, "testexpr"), &s.op->schema.children[0]);
                st = tn ? rel_add_expr(p, cur, tn, &col) : nomem(p);
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
        st = join_rels(p, &l, &s, kind, resid, nres, lk, rk, nk, true, &joined);
        if (st == HS_OK)
            *cur = joined;
    } else {
        rel_clear(&s);
    }
    hs_free(lk);
    hs_free(rk);
    hs_free(resid);
    json_decref(targets);
    json_decref(rw);
    corr_free(&c);
    return st;
}

/* A scalar subquery's rows pass through this operator, which fails with
 * SQLSTATE 21000 when there is more than one (PostgreSQL's check). */
typedef struct one_row_op {
    xo_op op;
    int64_t seen;
} one_row_op;

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
        return nomem(p);
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

/* Joins the value of a scalar subquery into cur; *col = its column. */
static hs_status attach_scalar(planner *p, rel *cur, const json_t *sublink, int *col)
{
    json_t *sb = jget(sublink, "subselect"), *sub;
    int loc = sq_loc(sublink);
    if (!is_kind(sb, "SelectStmt", &sub))
        return fail(p, HS_UNSUPPORTED, "0A000", loc, "unsupported subquery");
    corr c;
    hs_status st = plain_select(sub) ? sub_split(p, sub, &c) : (memset(&c, 0, sizeof c), HS_OK);
    if (st == HS_OK && !c.inner)
        c.inner = json_array(), c.corr = json_array();
    size_t ncorr = st == HS_OK ? json_array_size(c.corr) : 0;
    json_t *rw = NULL;
    int *lk = hs_calloc(ncorr + 1, sizeof *lk), *rk = hs_calloc(ncorr + 1, sizeof *rk);
    if (st == HS_OK && (!lk || !rk))
        st = nomem(p);
    bool count_target = false;
    if (st == HS_OK && ncorr > 0) {
        if (json_array_size(jget(sub, "groupClause")) || jget(sub, "havingClause") ||
            json_array_size(jget(sub, "targetList")) != 1)
            st = fail(p, HS_UNSUPPORTED, "0A000", loc,
                      "this correlated scalar subquery is not supported (GROUP BY/HAVING or several columns)");
        json_t *tv = jget(jget(json_array_get(jget(sub, "targetList"), 0), "ResTarget"), "val"), *fb;
        json_t *ag = json_array();
        collect_aggs(tv, ag, 0);
        bool has_count = false;
        for (size_t i = 0; i < json_array_size(ag); i++) {
            const char *fn = func_name(jget(json_array_get(ag, i), "FuncCall"));
            has_count |= fn && !strcmp(fn, "count");
        }
        json_decref(ag);
        count_target = is_kind(tv, "FuncCall", &fb) && func_name(fb) && !strcmp(func_name(fb), "count");
        if (st == HS_OK && has_count && !count_target)
            st = fail(p, HS_UNSUPPORTED, "0A000", loc,
                      "a correlated scalar subquery with count() inside an expression is not supported");
        json_t *tl = json_array(), *gl = json_array();
        if (st == HS_OK && (!tl || !gl))
            st = nomem(p);
        bool aggs = st == HS_OK && has_aggs_or_group(sub);
        for (size_t i = 0; i < ncorr && st == HS_OK; i++) {
            json_t *o, *in;
            if (!corr_equality(json_array_get(c.corr, i), &c, &o, &in)) {
                st = fail(p, HS_UNSUPPORTED, "0A000", node_loc(json_array_get(c.corr, i)),
                          "correlated scalar subqueries are supported with equality correlation only");
                break;
            }
            st = rel_add_expr(p, cur, o, &lk[i]);
            rk[i] = (int)i;
            json_array_append_new(tl, res_target(in));
            if (aggs)
                json_array_append(gl, in);
        }
        if (st == HS_OK) {
            json_array_append(tl, json_array_get(jget(sub, "targetList"), 0));
            rw = json_deep_copy(sub);
            if (!rw)
                st = nomem(p);
        }
        if (st == HS_OK) {
            json_object_set(rw, "targetList", tl);
            if (aggs)
                json_object_set(rw, "groupClause", gl);
            size_t ni = json_array_size(c.inner);
            json_t **inn = hs_calloc(ni + 1, sizeof *inn);
            for (size_t i = 0; inn && i < ni; i++)
                inn[i] = json_array_get(c.inner, i);
            json_t *w = inn ? mk_and(inn, (int)ni) : NULL;
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
        st = plan_select(p, rw ? rw : sub, &s);
    if (st == HS_OK && s.n != (int)ncorr + 1)
        st = fail(p, HS_INVALID, "42601", loc, "subquery must return only one column");
    if (st == HS_OK && ncorr == 0)
        st = one_row(p, &s);
    if (st == HS_OK) {
        for (int i = 0; i < s.n; i++)
            s.cols[i].hidden = true;
        int base = cur->n;
        rel l = *cur;
        memset(cur, 0, sizeof *cur);
        rel joined;
        st = join_rels(p, &l, &s, XO_JOIN_LEFT, NULL, 0, lk, rk, (int)ncorr, false, &joined);
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
            st = cur->cols[*col].name && co ? rel_add_expr(p, cur, co, col) : nomem(p);
            json_decref(co);
        }
    } else {
        rel_clear(&s);
    }
    hs_free(lk);
    hs_free(rk);
    json_decref(rw);
    corr_free(&c);
    return st;
}



static hs_status nmap_add(planner *p, nmap *m, const json_t *node, int col)
{
    if (m->n == m->cap) {
        int nc = m->cap ? m->cap * 2 : 16;
        const json_t **nn = hs_realloc(m->nodes, (size_t)nc * sizeof *nn);
        if (!nn)
            return nomem(p);
        m->nodes = nn;
        int *ncol = hs_realloc(m->cols, (size_t)nc * sizeof *ncol);
        if (!ncol)
            return nomem(p);
        m->cols = ncol;
        m->cap = nc;
    }
    m->nodes[m->n] = node;
    m->cols[m->n++] = col;
    return HS_OK;
}

static void nmap_free(nmap *m)
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
 *                       WHEN NOT <x passes the extreme> THEN false
 *                       WHEN cnt > nn THEN NULL ELSE true END
 * with cnt = count(*), nn = count(t) of S's one column t, <x matches> for
 * = the count of t = x above 0, for < <= > >= a comparison with min(t) or
 * max(t): PostgreSQL's three-valued results. */
static json_t *mk_op(const char *op, json_t *l, json_t *r);
static json_t *mk_int(int v);

static json_t *mk_bool(bool v)
{
    return json_pack("{s:{s:{s:{s:{s:s},s:i}},s:{s:[{s:{s:s}}],s:i,s:i},s:i}}", "TypeCast", "arg",
                     "A_Const", "sval", "sval", v ? "true" : "false", "location", -1, "typeName",
                     "names", "String", "sval", "bool", "typemod", -1, "location", -1, "location", -1);
}

static json_t *mk_null(void)
{
    return json_pack("{s:{s:b,s:i}}", "A_Const", "isnull", 1, "location", -1);
}

static bool simple_select(const json_t *sub)
{
    return plain_select(sub) && !jget(sub, "groupClause") && !jget(sub, "havingClause") &&
           !jget(sub, "distinctClause") && !jget(sub, "limitCount") && !jget(sub, "limitOffset") &&
           !jget(sub, "withClause") && !jget(sub, "sortClause");
}

/* (SELECT agg FROM S...) where agg reads S's column through `arg`:
 * arg NULL = count(*); where (may be NULL) an extra conjunct on it. */
static json_t *agg_sublink(const json_t *sub, const char *fn, bool use_col, const json_t *eq_x, int loc)
{
    json_t *t = jget(jget(json_array_get(jget(sub, "targetList"), 0), "ResTarget"), "val");
    json_t *q;
    json_t *col = NULL;
    if (simple_select(sub)) {
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
        json_t *cond = mk_op("=", json_incref(col), json_incref((json_t *)eq_x));
        json_t *w = jget(q, "whereClause");
        json_t *both[2] = {w, cond};
        json_t *nw = w ? mk_and(both, 2) : json_incref(cond);
        json_decref(cond);
        json_object_set_new(q, "whereClause", nw);
    }
    json_decref(col);
    return json_pack("{s:{s:s,s:{s:o},s:i}}", "SubLink", "subLinkType", "EXPR_SUBLINK", "subselect",
                     "SelectStmt", q, "location", loc);
}

static json_t *when(json_t *cond, json_t *res)
{
    return json_pack("{s:{s:o,s:o,s:i}}", "CaseWhen", "expr", cond, "result", res, "location", -1);
}

/* The expression that replaces an EXISTS/ANY/ALL SubLink (NULL: not one). */
static json_t *sublink_expr(planner *p, rel *cur, const json_t *sl, hs_status *st)
{
    const char *type = jstrv(sl, "subLinkType");
    json_t *sub = jget(jget(sl, "subselect"), "SelectStmt");
    int loc = sq_loc(sl);
    *st = HS_OK;
    if (!type || !sub)
        return NULL;
    if (!strcmp(type, "EXISTS_SUBLINK")) {
        json_t *cnt = agg_sublink(sub, "count", false, NULL, loc);
        return cnt ? mk_op(">", cnt, mk_int(0)) : NULL;
    }
    bool any = !strcmp(type, "ANY_SUBLINK"), all = !strcmp(type, "ALL_SUBLINK");
    if (!any && !all)
        return NULL;
    const char *op = sq_str(json_array_get(jget(sl, "operName"), 0));
    json_t *x = jget(sl, "testexpr");
    if (!op)
        op = "=";
    if (is_kind(x, "RowExpr", NULL) || (plain_select(sub) && json_array_size(jget(sub, "targetList")) != 1)) {
        *st = fail(p, HS_UNSUPPORTED, "0A000", loc, "row comparisons with subqueries are not supported here");
        return NULL;
    }
    bool eq = !strcmp(op, "="), ne = !strcmp(op, "<>") || !strcmp(op, "!=");
    bool gt = !strcmp(op, ">") || !strcmp(op, ">="), lt = !strcmp(op, "<") || !strcmp(op, "<=");
    if (!(eq && any) && !(ne && all) && !gt && !lt) {
        *st = fail(p, HS_UNSUPPORTED, "0A000", loc, "%s %s with a subquery is not supported", op,
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
            *st = wrapped ? rel_add_expr(p, cur, wrapped, &col) : nomem(p);
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
        hit = mk_op(">", agg_sublink(sub, "count", false, xin, loc), mk_int(0));
        json_decref(xin);
    }
    else {
        /* ANY: x > min, x < max; ALL: x > max, x < min */
        const char *fn = (gt == any) ? "min" : "max";
        hit = mk_op(op, json_incref(x), agg_sublink(sub, fn, true, NULL, loc));
    }
    json_t *xnull = json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", x, "nulltesttype", "IS_NULL",
                              "location", -1);
    json_t *some_null = mk_op(">", json_incref(cnt), nn);
    json_t *cw;
    if (any)
        cw = json_pack("[o,o,o,o]", when(mk_op("=", json_incref(cnt), mk_int(0)), mk_bool(false)),
                       when(xnull, mk_null()), when(hit, mk_bool(true)), when(some_null, mk_null()));
    else {
        /* ALL: for <> it is NOT (x = ANY) */
        json_t *fails = ne ? hit
                           : json_pack("{s:{s:s,s:[o],s:i}}", "BoolExpr", "boolop", "NOT_EXPR", "args",
                                       hit, "location", -1);
        cw = json_pack("[o,o,o,o]", when(mk_op("=", json_incref(cnt), mk_int(0)), mk_bool(true)),
                       when(xnull, mk_null()), when(fails, mk_bool(false)), when(some_null, mk_null()));
    }
    json_decref(cnt);
    json_t *r = cw ? json_pack("{s:{s:o,s:o,s:i}}", "CaseExpr", "args", cw, "defresult",
                               mk_bool(all), "location", loc) : NULL;
    if (!r)
        *st = nomem(p);
    return r;
}

/* Replaces EXISTS/ANY/ALL SubLinks under j (in their parents). */
static hs_status rewrite_sublinks(planner *p, rel *cur, json_t *j, int depth)
{
    if (depth > 400 || !j)
        return HS_OK;
    hs_status st = HS_OK;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            json_t *b;
            if (is_kind(v, "SubLink", &b)) {
                json_t *r = sublink_expr(p, cur, b, &st);
                if (st != HS_OK)
                    return st;
                if (r)
                    json_object_set_new(j, k, r);
            } else if (strcmp(k, "SubLink") != 0) {
                HS_TRY(rewrite_sublinks(p, cur, v, depth + 1));
            }
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i), *b;
            if (is_kind(v, "SubLink", &b)) {
                json_t *r = sublink_expr(p, cur, b, &st);
                if (st != HS_OK)
                    return st;
                if (r)
                    json_array_set_new(j, i, r);
            } else {
                HS_TRY(rewrite_sublinks(p, cur, v, depth + 1));
            }
        }
    }
    return HS_OK;
}

/* Joins every scalar subquery under the nodes into cur, mapping them. */
static hs_status attach_scalars(planner *p, rel *cur, json_t *const *nodes, int n, nmap *m)
{
    json_t *arr = json_array();
    if (!arr)
        return nomem(p);
    hs_status st = HS_OK;
    for (int i = 0; i < n && st == HS_OK; i++)
        st = rewrite_sublinks(p, cur, nodes[i], 0);
    for (int i = 0; i < n; i++)
        collect_sublinks(nodes[i], arr, 0);
    for (size_t i = 0; i < json_array_size(arr) && st == HS_OK; i++) {
        json_t *node = json_array_get(arr, i), *b = jget(node, "SubLink");
        const char *type = jstrv(b, "subLinkType");
        if (!type || strcmp(type, "EXPR_SUBLINK") != 0)
            continue;   /* the binder reports it */
        bool seen = false;
        for (int k = 0; k < m->n && !seen; k++)
            seen = jeq(m->nodes[k], node);
        if (seen)
            continue;   /* the same subquery twice: joined once */
        int col = -1;
        st = attach_scalar(p, cur, b, &col);
        if (st == HS_OK) {
            /* earlier mapped columns keep their positions (joins append) */
            st = nmap_add(p, m, node, col);
        }
    }
    json_decref(arr);
    return st;
}

/* A WHERE conjunct with subqueries: semi/anti joins for top-level
 * [NOT] EXISTS / [NOT] IN, else scalar subqueries joined then a filter. */
static hs_status apply_sub_conj(planner *p, rel *cur, json_t *node)
{
    json_t *b, *x = node;
    bool neg = false;
    if (is_kind(node, "BoolExpr", &b) && jstrv(b, "boolop") && !strcmp(jstrv(b, "boolop"), "NOT_EXPR") &&
        json_array_size(jget(b, "args")) == 1) {
        x = json_array_get(jget(b, "args"), 0);
        neg = true;
    }
    json_t *sl;
    json_t *own = NULL;
    if (is_kind(x, "SubLink", &sl)) {
        const char *t = jstrv(sl, "subLinkType");
        const char *op = sq_str(json_array_get(jget(sl, "operName"), 0));
        bool row = is_kind(jget(sl, "testexpr"), "RowExpr", NULL);
        if (t && (!strcmp(t, "EXISTS_SUBLINK") ||
                  (!strcmp(t, "ANY_SUBLINK") && (!op || !strcmp(op, "=")) && !(row && neg))))
            return attach_semi(p, cur, sl, neg);
        if (t && (!strcmp(t, "ANY_SUBLINK") || !strcmp(t, "ALL_SUBLINK"))) {
            hs_status st2;
            json_t *r = sublink_expr(p, cur, sl, &st2);
            HS_TRY(st2);
            if (r && neg) {
                own = json_pack("{s:{s:s,s:[o],s:i}}", "BoolExpr", "boolop", "NOT_EXPR", "args", r,
                                "location", -1);
            } else {
                own = r;
            }
            if (!own)
                return nomem(p);
            node = own;
        }
    }
    nmap m = {0};
    hs_status st = attach_scalars(p, cur, &node, 1, &m);
    if (st == HS_OK)
        st = filter_rel(p, cur, &node, 1, m.nodes, m.cols, m.n, "WHERE");
    nmap_free(&m);
    json_decref(own);
    return st;
}

/* ------------------------------------------------------------------ */
/* result column names (PostgreSQL's FigureColname)                    */

static const char *figure_name(const json_t *j, int depth)
{
    const char *k;
    json_t *b;
    if (depth > 50 || !sq_node(j, &k, &b))
        return NULL;
    if (jstrv(b, "hs_name"))
        return jstrv(b, "hs_name");
    if (!strcmp(k, "ColumnRef")) {
        json_t *f = jget(b, "fields");
        return sq_str(json_array_get(f, json_array_size(f) - 1));
    }
    if (!strcmp(k, "FuncCall"))
        return func_name(b);
    if (!strcmp(k, "TypeCast")) {
        if (jget(b, "hs_folded"))
            return NULL;   /* a folded date +- interval: PostgreSQL's ?column? */
        const char *n = figure_name(jget(b, "arg"), depth + 1);
        if (n)
            return n;
        json_t *names = jget(jget(b, "typeName"), "names");
        return sq_str(json_array_get(names, json_array_size(names) - 1));
    }
    if (!strcmp(k, "CaseExpr"))
        return "case";
    if (!strcmp(k, "CoalesceExpr"))
        return "coalesce";
    if (!strcmp(k, "MinMaxExpr")) {
        const char *op = jstrv(b, "op");
        return op && !strcmp(op, "IS_GREATEST") ? "greatest" : "least";
    }
    if (!strcmp(k, "A_Expr")) {
        const char *kind = jstrv(b, "kind");
        if (kind && !strcmp(kind, "AEXPR_NULLIF"))
            return "nullif";
        return NULL;
    }
    if (!strcmp(k, "SubLink")) {
        const char *t = jstrv(b, "subLinkType");
        if (t && !strcmp(t, "EXISTS_SUBLINK"))
            return "exists";
        if (t && !strcmp(t, "EXPR_SUBLINK")) {
            json_t *sub = jget(jget(b, "subselect"), "SelectStmt");
            json_t *rt = jget(json_array_get(jget(sub, "targetList"), 0), "ResTarget");
            const char *nm = jstrv(rt, "name");
            return nm ? nm : figure_name(jget(rt, "val"), depth + 1);
        }
        return NULL;
    }
    if (!strcmp(k, "SQLValueFunction"))
        return NULL;
    return NULL;
}

static const char *target_name(const json_t *rt)
{
    const char *nm = jstrv(rt, "name");
    if (nm)
        return nm;
    nm = figure_name(jget(rt, "val"), 0);
    return nm ? nm : "?column?";
}

/* ------------------------------------------------------------------ */
/* constants                                                           */

/* An integer constant (LIMIT, OFFSET, positions): *null for NULL/ALL. */
static hs_status int_const(planner *p, const json_t *j, const char *what, int64_t *out, bool *null)
{
    json_t *b;
    *null = false;
    int loc = node_loc(j);
    if (!is_kind(j, "A_Const", &b))
        return fail(p, HS_UNSUPPORTED, "0A000", loc, "%s must be an integer constant", what);
    if (json_is_true(jget(b, "isnull"))) {
        *null = true;
        return HS_OK;
    }
    json_t *iv = jget(b, "ival");
    if (!iv)
        return fail(p, HS_INVALID, "22023", loc, "%s must be an integer", what);
    json_t *v = jget(iv, "ival");
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

typedef struct agg_info {
    json_t *aggs;        /* aggregate call nodes */
    json_t *groups;      /* group expressions */
} agg_info;

/* The expression a GROUP BY item stands for (positions, output names). */
static hs_status group_node(planner *p, const json_t *g, const json_t *tl, const rel *cur,
                            json_t **out)
{
    json_t *b;
    *out = (json_t *)g;
    if (is_kind(g, "A_Const", &b) && jget(b, "ival")) {
        int64_t k;
        bool null;
        HS_TRY(int_const(p, g, "GROUP BY position", &k, &null));
        if (k < 1 || k > (int64_t)json_array_size(tl))
            return fail(p, HS_INVALID, "42P10", node_loc(g), "GROUP BY position %lld is not in select list",
                        (long long)k);
        *out = jget(jget(json_array_get(tl, (size_t)(k - 1)), "ResTarget"), "val");
        return HS_OK;
    }
    if (is_kind(g, "ColumnRef", &b)) {
        const char *names[8];
        int n = colref_names(b, names, 8);
        layer l = {cur->cols, cur->n, 0};
        if (n == 1 && names[0] && layer_find(&l, names, 1) == -1) {
            for (size_t i = 0; i < json_array_size(tl); i++) {
                json_t *rt = jget(json_array_get(tl, i), "ResTarget");
                if (name_eq(jstrv(rt, "name"), names[0])) {
                    *out = jget(rt, "val");
                    return HS_OK;
                }
            }
        }
    }
    if (is_kind(g, "GroupingSet", NULL))
        return fail(p, HS_UNSUPPORTED, "0A000", node_loc(g), "GROUPING SETS, ROLLUP and CUBE are not supported");
    return HS_OK;
}

static hs_status sort_dir(const json_t *sb, bool *desc, bool *nf);

/* Projects cur into [group exprs, aggregate args] and aggregates it. */
static hs_status aggregate(planner *p, rel *cur, json_t *groups, json_t *aggs, nmap *m,
                           int **key_of_col)
{
    int ng = (int)json_array_size(groups), na = (int)json_array_size(aggs);
    int n_ord_max = 0;
    for (int j = 0; j < na; j++)
        n_ord_max += (int)json_array_size(jget(jget(json_array_get(aggs, (size_t)j), "FuncCall"), "agg_order"));
    int cap = ng + 2 * na + n_ord_max + 1;
    ex_expr **ex = hs_calloc((size_t)cap, sizeof *ex);
    const char **names = hs_calloc((size_t)cap, sizeof *names);
    xo_agg *ag = hs_calloc((size_t)na + 1, sizeof *ag);
    *key_of_col = hs_calloc((size_t)cur->n + 1, sizeof **key_of_col);
    hs_status st = ex && names && ag && *key_of_col ? HS_OK : nomem(p);
    for (int i = 0; *key_of_col && i < cur->n; i++)
        (*key_of_col)[i] = -1;
    scope sc;
    scope_rel(&sc, p, cur);
    sc.no_aggs = "GROUP BY";
    int ne = 0;
    for (int i = 0; i < ng && st == HS_OK; i++) {
        json_t *g = json_array_get(groups, (size_t)i), *b;
        st = bind_in(&sc, g, false, &ex[ne]);
        names[ne++] = figure_name(g, 0) ? figure_name(g, 0) : "?column?";
        if (st == HS_OK && is_kind(g, "ColumnRef", &b)) {
            const char *nm[8];
            int n = colref_names(b, nm, 8);
            int c = n > 0 && nm[n - 1] ? layer_find(&sc.layers[0], nm, n) : -1;
            if (c >= 0 && (*key_of_col)[c] < 0)
                (*key_of_col)[c] = i;
        }
        if (st == HS_OK)
            st = nmap_add(p, m, g, i);
    }
    sc.no_aggs = "aggregate function calls";   /* "cannot be nested" */
    for (int j = 0; j < na && st == HS_OK; j++) {
        json_t *a = json_array_get(aggs, (size_t)j), *fc = jget(a, "FuncCall");
        const char *fname = func_name(fc);
        xo_agg_fn fn = XO_AGG_COUNT;
        agg_name(fname, &fn);
        json_t *args = jget(fc, "args");
        int loc = sq_loc(fc);
        ag[j].sep_col = -1;
        ag[j].name = fname;
        ag[j].distinct = json_is_true(jget(fc, "agg_distinct"));
        json_t *filt = jget(fc, "agg_filter");
        json_t *one = NULL, *wrapped = NULL;
        if (json_is_true(jget(fc, "agg_within_group")))
            st = fail(p, HS_UNSUPPORTED, "0A000", loc, "WITHIN GROUP is not supported");
        else if (json_is_true(jget(fc, "agg_star")) && fn != XO_AGG_COUNT)
            st = fail(p, HS_INVALID, "42809", loc, "%s(*) must be used to call a parameterless "
                      "aggregate function", fname);
        else if (json_is_true(jget(fc, "agg_star")) && !filt)
            ag[j].fn = XO_AGG_COUNT_STAR;
        else {
            /* agg(x) FILTER (WHERE c) = agg(CASE WHEN c THEN x END);
             * count(*) FILTER (WHERE c) = count(CASE WHEN c THEN 1 END) */
            if (json_is_true(jget(fc, "agg_star"))) {
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
                    st = nomem(p);
                }
                args = wrapped;
            }
            size_t want = fn == XO_AGG_STRING_AGG ? 2 : 1;
            if (json_array_size(args) != want)
                st = fail(p, HS_NOT_FOUND, "42883", loc, "function %s with %zu arguments does not exist",
                          fname, json_array_size(args));
            ag[j].fn = fn;
            if (st == HS_OK) {
                st = bind_in(&sc, json_array_get(args, 0), false, &ex[ne]);
                names[ne] = fname;
                ag[j].arg = ne++;
            }
            if (st == HS_OK && fn == XO_AGG_STRING_AGG) {
                json_t *sepn = json_array_get(args, 1), *cb;
                const char *sv = NULL;
                if (is_kind(sepn, "A_Const", &cb) && jget(cb, "sval"))
                    sv = jstrv(jget(cb, "sval"), "sval");
                if (is_kind(sepn, "A_Const", &cb) && json_is_true(jget(cb, "isnull")))
                    sv = NULL;
                else if (!sv) {
                    st = bind_in(&sc, sepn, false, &ex[ne]);
                    names[ne] = "sep";
                    ag[j].sep_col = ne++;
                }
                ag[j].sep = sv;
                /* string_agg(text, text) / (bytea, bytea) only, as in PostgreSQL */
                const hs_field *at = st == HS_OK ? ex_type(ex[ag[j].arg]) : NULL;
                const hs_field *sp = st == HS_OK && ag[j].sep_col >= 0 ? ex_type(ex[ag[j].sep_col]) : NULL;
                if (at && ((at->type != HS_TYPE_STRING && at->type != HS_TYPE_BINARY) ||
                           (sp && sp->type != at->type)))
                    st = fail(p, HS_NOT_FOUND, "42883", loc, "function string_agg(%s, %s) does not exist",
                              hs_type_name(at->type), sp ? hs_type_name(sp->type) : "text");
            }
        }
        json_t *ao = jget(fc, "agg_order");
        if (st == HS_OK && ao) {
            /* string_agg/array_agg(... ORDER BY keys): the aggregate orders
             * its group's values by these columns */
            int no = (int)json_array_size(ao);
            if (fn != XO_AGG_STRING_AGG && fn != XO_AGG_ARRAY_AGG)
                no = 0;   /* the order does not change other aggregates */
            if (no > 16)
                st = fail(p, HS_UNSUPPORTED, "54000", loc, "more than 16 ORDER BY keys in an aggregate");
            xo_sort_key *ok = no ? hs_calloc((size_t)no, sizeof *ok) : NULL;
            if (no && !ok && st == HS_OK)
                st = nomem(p);
            for (int k = 0; k < no && st == HS_OK; k++) {
                json_t *sb = jget(json_array_get(ao, (size_t)k), "SortBy");
                bool desc, nf;
                if (sort_dir(sb, &desc, &nf) != HS_OK) {
                    st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
                    break;
                }
                st = bind_in(&sc, jget(sb, "node"), false, &ex[ne]);
                names[ne] = "ord";
                ok[k] = (xo_sort_key){ne++, desc, nf};
            }
            ag[j].n_order = no;
            ag[j].order = ok;
        }
        if (one || wrapped) {
            /* the bound expressions keep no reference into the JSON */
            json_decref(one);
            json_decref(wrapped);
        }
        if (st == HS_OK)
            st = nmap_add(p, m, a, ng + j);
    }
    if (st == HS_OK && ne == 0) {
        /* count(*) only: aggregate a projection of one constant */
        json_t *one = json_pack("{s:{s:{s:i},s:i}}", "A_Const", "ival", "ival", 1, "location", -1);
        st = one ? bind_in(&sc, one, false, &ex[ne]) : nomem(p);
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
        st = xo_hashagg(op, ng, na, ag, &agg, p->err);
        op = st == HS_OK ? agg : NULL;
    }
    hs_free(ex);
    hs_free(names);
    for (int j = 0; ag && j < na; j++)
        hs_free((void *)ag[j].order);
    hs_free(ag);
    if (st != HS_OK) {
        xo_free(op);
        return st;
    }
    qcols_free(cur->cols, cur->n);
    cur->cols = NULL;
    cur->n = 0;
    cur->op = op;
    HS_TRY(rel_name(cur, NULL, p->err));
    for (int i = 0; i < cur->n; i++)
        cur->cols[i].hidden = true;
    return HS_OK;
}

typedef struct sortk {
    int col;          /* output column (or hidden extra) */
    bool desc, nulls_first;
} sortk;

static hs_status sort_dir(const json_t *sb, bool *desc, bool *nf)
{
    const char *d = jstrv(sb, "sortby_dir"), *nl = jstrv(sb, "sortby_nulls");
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
    json_t *lc = jget(sel, "limitCount"), *lo = jget(sel, "limitOffset");
    const char *lopt = jstrv(sel, "limitOption");
    if (lopt && !strcmp(lopt, "LIMIT_OPTION_WITH_TIES"))
        return fail(p, HS_UNSUPPORTED, "0A000", node_loc(lc), "FETCH ... WITH TIES is not supported");
    if (lc) {
        HS_TRY(int_const(p, lc, "LIMIT", &limit, &null));
        if (null)
            limit = -1;
        else if (limit < 0)
            return fail(p, HS_INVALID, "2201W", node_loc(lc), "LIMIT must not be negative");
    }
    if (lo) {
        HS_TRY(int_const(p, lo, "OFFSET", &offset, &null));
        if (null)
            offset = 0;
        else if (offset < 0)
            return fail(p, HS_INVALID, "2201X", node_loc(lo), "OFFSET must not be negative");
    }
    if (nk > 0) {
        xo_sort_key *k = hs_calloc((size_t)nk, sizeof *k);
        if (!k)
            return nomem(p);
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
        st = ex && names && src ? HS_OK : nomem(p);
        for (int i = 0; i < n_out && st == HS_OK; i++) {
            names[i] = r->op->schema.children[i].name;
            src[i] = i;
        }
        if (st == HS_OK) {
            st = project_mixed(p, r->op, n_out, src, ex, names, &op);
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
        {"windowClause", "WINDOW"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_t *v = jget(sel, t[i].key);
        if (v && !(json_is_array(v) && json_array_size(v) == 0))
            return fail(p, HS_UNSUPPORTED, "0A000", first_loc(v, 0), "%s is not supported", t[i].what);
    }
    return HS_OK;
}

/* Registers the WITH clause's CTEs (prepended to p->ctes). */
static hs_status push_ctes(planner *p, const json_t *sel, cte **saved, cte **mine, int *n_mine)
{
    *saved = p->ctes;
    *mine = NULL;
    *n_mine = 0;
    json_t *w = jget(sel, "withClause"), *wb;
    if (!w)
        return HS_OK;
    wb = jget(w, "WithClause") ? jget(w, "WithClause") : w;
    if (json_is_true(jget(wb, "recursive")))
        return fail(p, HS_UNSUPPORTED, "0A000", sq_loc(wb), "WITH RECURSIVE is not supported");
    json_t *list = jget(wb, "ctes");
    size_t n = json_array_size(list);
    *mine = hs_calloc(n + 1, sizeof **mine);
    if (!*mine)
        return nomem(p);
    for (size_t i = 0; i < n; i++) {
        json_t *c = jget(json_array_get(list, i), "CommonTableExpr"), *q;
        if (!c || !is_kind(jget(c, "ctequery"), "SelectStmt", &q))
            return fail(p, HS_UNSUPPORTED, "0A000", first_loc(c, 0),
                        "only SELECT is supported in WITH");
        cte *e = &(*mine)[i];
        e->name = jstrv(c, "ctename");
        e->query = q;
        e->colnames = jget(c, "aliascolnames");
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
        if (jeq(json_array_get(arr, i), x))
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
            if (is_agg_call(v) || is_kind(v, "SubLink", NULL))
                continue;
            if (json_is_object(v) && json_object_size(v) == 1 && in_list(absent, v))
                json_object_set_new(j, k, mk_null());
            else
                null_absent(v, absent, depth + 1);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            if (is_agg_call(v) || is_kind(v, "SubLink", NULL))
                continue;
            if (json_is_object(v) && json_object_size(v) == 1 && in_list(absent, v))
                json_array_set_new(j, i, mk_null());
            else
                null_absent(v, absent, depth + 1);
        }
    }
}

/* *out: the expanded query (a new SelectStmt body), or NULL when sel has
 * no grouping sets. */
static hs_status expand_grouping_sets(planner *p, const json_t *sel, json_t **out)
{
    *out = NULL;
    json_t *gc = jget(sel, "groupClause"), *gs = NULL;
    size_t i;
    json_t *g;
    json_array_foreach(gc, i, g) {
        json_t *b;
        if (is_kind(g, "GroupingSet", &b)) {
            if (gs)
                return fail(p, HS_UNSUPPORTED, "0A000", sq_loc(b), "several grouping sets in one GROUP BY are not supported");
            gs = b;
        }
    }
    if (!gs)
        return HS_OK;
    const char *kind = jstrv(gs, "kind");
    json_t *content = jget(gs, "content");
    size_t n = json_array_size(content);
    json_t *sets = json_array(), *all = json_array(), *plain = json_array();
    hs_status st = sets && all && plain ? HS_OK : nomem(p);
    json_array_foreach(gc, i, g)
        if (!is_kind(g, "GroupingSet", NULL))
            json_array_append(plain, g);
    if (st == HS_OK && kind && !strcmp(kind, "GROUPING_SET_ROLLUP")) {
        for (size_t k = n + 1; k-- > 0;) {
            json_t *set = json_array();
            for (size_t e = 0; e < k; e++)
                json_array_append(set, json_array_get(content, e));
            json_array_append_new(sets, set);
        }
    } else if (st == HS_OK && kind && !strcmp(kind, "GROUPING_SET_CUBE")) {
        if (n > 8)
            st = fail(p, HS_UNSUPPORTED, "54000", sq_loc(gs), "CUBE of more than 8 expressions");
        for (size_t mask = (1u << n); st == HS_OK && mask-- > 0;) {
            json_t *set = json_array();
            for (size_t e = 0; e < n; e++)
                if (mask & (1u << e))
                    json_array_append(set, json_array_get(content, e));
            json_array_append_new(sets, set);
        }
    } else if (st == HS_OK && kind && !strcmp(kind, "GROUPING_SET_SETS")) {
        json_t *it;
        json_array_foreach(content, i, it) {
            json_t *b, *set = json_array();
            if (is_kind(it, "RowExpr", &b))
                json_array_extend(set, jget(b, "args"));
            else if (is_kind(it, "GroupingSet", &b)) {
                const char *k2 = jstrv(b, "kind");
                if (k2 && !strcmp(k2, "GROUPING_SET_SIMPLE"))
                    json_array_extend(set, jget(b, "content"));
                else if (!k2 || strcmp(k2, "GROUPING_SET_EMPTY")) {
                    json_decref(set);
                    st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(b), "nested grouping sets are not supported");
                    break;
                }
            } else {
                json_array_append(set, it);
            }
            json_array_append_new(sets, set);
        }
    } else if (st == HS_OK) {
        st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(gs), "this grouping set is not supported");
    }
    json_t *s2;
    json_array_foreach(sets, i, s2) {
        size_t k;
        json_t *e;
        json_array_foreach(s2, k, e)
            if (!in_list(all, e) && !in_list(plain, e))
                json_array_append(all, e);
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
            st = nomem(p);
            break;
        }
        json_t *grp = json_copy(plain);
        json_array_extend(grp, s2);
        json_object_del(b, "sortClause");
        json_object_del(b, "limitCount");
        json_object_del(b, "limitOffset");
        json_object_del(b, "limitOption");
        json_object_del(b, "withClause");
        if (json_array_size(grp))
            json_object_set_new(b, "groupClause", grp);
        else {
            json_decref(grp);
            json_object_del(b, "groupClause");
            json_object_set_new(b, "hs_grouped", json_true());   /* one group: () */
        }
        size_t k;
        json_t *e;
        json_array_foreach(all, k, e)
            if (!in_list(s2, e))
                json_array_append(absent, e);
        null_absent(jget(b, "targetList"), absent, 0);
        null_absent(jget(b, "havingClause"), absent, 0);
        json_decref(absent);
        if (!u) {
            u = b;
        } else {
            json_t *nu = json_pack("{s:s,s:b,s:{s:o},s:{s:o}}", "op", "SETOP_UNION", "all", 1,
                                   "larg", "SelectStmt", u, "rarg", "SelectStmt", b);
            if (!nu) {
                st = nomem(p);
                break;
            }
            u = nu;
        }
    }
    if (st == HS_OK && u) {
        static const char *const keep[] = {"sortClause", "limitCount", "limitOffset", "limitOption"};
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
            if (jget(sel, keep[k]))
                json_object_set(u, keep[k], jget(sel, keep[k]));
        *out = u;
        u = NULL;
    }
    json_decref(u);
    json_decref(sets);
    json_decref(all);
    json_decref(plain);
    return st;
}

static hs_status plan_block(planner *p, const json_t *sel, rel *out);

static hs_status plan_select(planner *p, const json_t *sel, rel *out)
{
    memset(out, 0, sizeof *out);
    if (++p->depth > MAX_DEPTH) {
        p->depth--;
        return fail(p, HS_INVALID, "54001", -1, "query nested too deeply (more than %d levels)", MAX_DEPTH);
    }
    cte *saved, *mine;
    int n_mine;
    hs_status st = push_ctes(p, sel, &saved, &mine, &n_mine);
    const char *op = jstrv(sel, "op");
    json_t *expanded = NULL;
    if (st == HS_OK && (!op || !strcmp(op, "SETOP_NONE")))
        st = expand_grouping_sets(p, sel, &expanded);
    if (st == HS_OK && expanded) {
        st = jget(expanded, "op") ? plan_setop(p, expanded, out) : plan_block(p, expanded, out);
    } else if (st == HS_OK) {
        if (op && strcmp(op, "SETOP_NONE") != 0)
            st = plan_setop(p, sel, out);
        else if (jget(sel, "valuesLists"))
            st = plan_values(p, sel, out);
        else
            st = plan_block(p, sel, out);
    }
    json_decref(expanded);
    p->ctes = saved;
    hs_free(mine);
    p->depth--;
    if (st != HS_OK)
        rel_clear(out);
    return st;
}

static hs_status plan_query(planner *p, const json_t *sel, rel *out)
{
    HS_TRY(plan_select(p, sel, out));
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
    return is_kind(j, "FuncCall", &b) && jget(b, "over");
}

static void collect_windows(const json_t *j, json_t *arr, int depth)
{
    collect_calls(j, arr, is_window_call, depth);
}

#define FO_NONDEFAULT 0x1
#define FO_RANGE 0x2
#define FO_ROWS 0x4
#define FO_START_UNB_PREC 0x20
#define FO_END_UNB_FOLL 0x100
#define FO_END_CURRENT 0x400

static bool frame_of(planner *p, const json_t *over, xo_win *w)
{
    xo_frame *fr = &w->frame;
    json_t *fo = jget(over, "frameOptions");
    long long v = json_is_integer(fo) ? json_integer_value(fo) : 0;
    if (!(v & FO_NONDEFAULT)) {
        *fr = XO_FRAME_DEFAULT;
        return true;
    }
    if ((v & FO_ROWS) && (v & (0x800 | 0x1000 | 0x2000 | 0x4000)) && !(v & 0x38000 /* EXCLUDE */)) {
        /* ROWS BETWEEN <n PRECEDING|FOLLOWING|UNBOUNDED|CURRENT ROW> AND ... */
        int64_t lo = 0, hi = 0, x;
        bool null;
        if (v & FO_START_UNB_PREC)
            lo = INT64_MIN;
        else if (v & (0x800 | 0x2000)) {
            if (int_const(p, jget(over, "startOffset"), "frame offset", &x, &null) != HS_OK || null || x < 0)
                return false;
            lo = v & 0x800 ? -x : x;
        }
        if (v & FO_END_UNB_FOLL)
            hi = INT64_MAX;
        else if (v & (0x1000 | 0x4000)) {
            if (int_const(p, jget(over, "endOffset"), "frame offset", &x, &null) != HS_OK || null || x < 0)
                return false;
            hi = v & 0x1000 ? -x : x;
        }
        *fr = XO_FRAME_ROWS_BETWEEN;
        w->lo = lo;
        w->hi = hi;
        return true;
    }
    long long bounds = v & ~(long long)(FO_NONDEFAULT | FO_RANGE | FO_ROWS | 0x10 /* BETWEEN */);
    if (bounds == (FO_START_UNB_PREC | FO_END_UNB_FOLL)) {
        *fr = XO_FRAME_WHOLE;
        return true;
    }
    if (bounds == (FO_START_UNB_PREC | FO_END_CURRENT)) {
        *fr = v & FO_ROWS ? XO_FRAME_ROWS : XO_FRAME_DEFAULT;
        return !(v & 0x8);  /* not GROUPS */
    }
    return false;
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
            if (*fn == XO_WIN_COUNT && json_is_true(jget(fc, "agg_star")))
                *fn = XO_WIN_COUNT_STAR;
            return true;
        }
    return false;
}

/* Computes the window functions of the select list and ORDER BY over cur
 * (one Window operator per distinct window), mapping each call to its
 * column. */
static hs_status apply_windows(planner *p, rel *cur, json_t *const *nodes, int n_nodes, nmap *m,
                               const layer *pre, const int *key_of_col)
{
    json_t *calls = json_array();
    if (!calls)
        return nomem(p);
    for (int i = 0; i < n_nodes; i++)
        collect_windows(nodes[i], calls, 0);
    hs_status st = HS_OK;
    size_t n = json_array_size(calls);
    bool *done = hs_calloc(n + 1, sizeof *done);
    xo_win *fns = hs_calloc(n + 1, sizeof *fns);
    const json_t **which = hs_calloc(n + 1, sizeof *which);
    if (!done || !fns || !which)
        st = nomem(p);
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        if (done[i])
            continue;
        json_t *fc0 = jget(json_array_get(calls, i), "FuncCall"), *over = jget(fc0, "over");
        int loc = sq_loc(fc0);
        if (jstrv(over, "name") || jstrv(over, "refname")) {
            st = fail(p, HS_UNSUPPORTED, "0A000", loc, "named windows are not supported");
            break;
        }
        json_t *parts = jget(over, "partitionClause"), *ord = jget(over, "orderClause");
        int np = (int)json_array_size(parts), nk = (int)json_array_size(ord);
        int *pc = hs_calloc((size_t)np + 1, sizeof *pc);
        xo_sort_key *keys = hs_calloc((size_t)nk + 1, sizeof *keys);
        if (!pc || !keys)
            st = nomem(p);
        for (int k = 0; k < np && st == HS_OK; k++)
            st = rel_add_expr_in(p, cur, json_array_get(parts, (size_t)k), m, pre, key_of_col, &pc[k]);
        for (int k = 0; k < nk && st == HS_OK; k++) {
            json_t *sb = jget(json_array_get(ord, (size_t)k), "SortBy");
            bool desc, nf;
            if (sort_dir(sb, &desc, &nf) != HS_OK)
                st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            else
                st = rel_add_expr_in(p, cur, jget(sb, "node"), m, pre, key_of_col, &keys[k].col);
            keys[k].desc = desc;
            keys[k].nulls_first = nf;
        }
        int nf_ = 0;
        for (size_t j = i; j < n && st == HS_OK; j++) {
            json_t *fc = jget(json_array_get(calls, j), "FuncCall"), *ov = jget(fc, "over");
            if (done[j] || !jeq(jget(ov, "partitionClause"), parts) || !jeq(jget(ov, "orderClause"), ord))
                continue;
            xo_win *w = &fns[nf_];
            const char *fname = func_name(fc);
            json_t *args = jget(fc, "args");
            size_t na = json_array_size(args);
            if (!win_fn(fname, fc, &w->fn) || json_is_true(jget(fc, "agg_distinct")) ||
                jget(fc, "agg_filter")) {
                st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "window function %s is not supported",
                          fname ? fname : "?");
                break;
            }
            if (!frame_of(p, ov, w)) {
                st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "this window frame is not supported");
                break;
            }
            w->name = fname;
            bool needs_arg = w->fn != XO_WIN_ROW_NUMBER && w->fn != XO_WIN_RANK &&
                             w->fn != XO_WIN_DENSE_RANK && w->fn != XO_WIN_COUNT_STAR &&
                             w->fn != XO_WIN_NTILE && w->fn != XO_WIN_PERCENT_RANK &&
                             w->fn != XO_WIN_CUME_DIST;
            bool lagish = w->fn == XO_WIN_LAG || w->fn == XO_WIN_LEAD;
            size_t min_args = w->fn == XO_WIN_NTILE ? 1 : w->fn == XO_WIN_NTH_VALUE ? 2 : needs_arg ? 1 : 0;
            size_t max_args = lagish ? 3 : w->fn == XO_WIN_NTH_VALUE ? 2 : min_args;
            if (na < min_args || na > max_args) {
                st = fail(p, HS_NOT_FOUND, "42883", sq_loc(fc), "function %s with %zu arguments is not supported",
                          fname, na);
                break;
            }
            if (needs_arg)
                st = rel_add_expr_in(p, cur, json_array_get(args, 0), m, pre, key_of_col, &w->arg);
            if (st == HS_OK && (w->fn == XO_WIN_NTILE || w->fn == XO_WIN_NTH_VALUE)) {
                int64_t nb;
                bool null;
                st = int_const(p, json_array_get(args, w->fn == XO_WIN_NTILE ? 0 : 1), fname, &nb, &null);
                if (st == HS_OK && (null || nb <= 0))
                    st = fail(p, HS_INVALID, w->fn == XO_WIN_NTILE ? "22014" : "22016", sq_loc(fc),
                              "argument of %s must be greater than zero", fname);
                w->offset = nb;
            } else if (st == HS_OK && lagish && na == 3) {
                /* the default, of the argument's type */
                json_t *cd = cast_json(json_array_get(args, 2), &cur->op->schema.children[w->arg]);
                st = cd ? rel_add_expr_in(p, cur, cd, m, pre, key_of_col, &w->def_col) : nomem(p);
                json_decref(cd);
                w->has_default = true;
            }
            if (st == HS_OK && lagish && na >= 2) {
                int64_t off;
                bool null;
                st = int_const(p, json_array_get(args, 1), "lag/lead offset", &off, &null);
                if (st == HS_OK && (null || off < 0))
                    st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "lag/lead offset must be a non-negative constant");
                w->offset = off == 0 ? -1 : off;
                if (off == 0)
                    st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "lag/lead offset 0 is not supported");
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
                    st = nomem(p);
                else
                    cur->cols = nc;
                for (int k = 0; k < nf_ && st == HS_OK; k++) {
                    cur->cols[base + k] = (qcol){NULL, hs_strdup(""), true};
                    cur->n++;
                    st = nmap_add(p, m, which[k], base + k);
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

/* One SELECT ... FROM ... WHERE ... GROUP BY ... HAVING ... ORDER BY ... LIMIT. */
static hs_status plan_block(planner *p, const json_t *sel, rel *out)
{
    HS_TRY(check_clauses(p, sel));
    json_t *dc = jget(sel, "distinctClause");
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
    json_t *tl = jget(sel, "targetList");
    json_t **extra = NULL;
    hs_status st = aggs && groups ? HS_OK : nomem(p);
    if (st == HS_OK)
        st = fromc_build(p, jget(sel, "fromClause"), &fc);
    if (st == HS_OK)
        st = conjs_make(p, jget(sel, "whereClause"), &fc, &cs);
    bool vs = false;
    if (st == HS_OK)
        st = vsearch_try(p, sel, &fc, &cs, &cur, &vs);
    if (st == HS_OK && !vs)
        st = push_filters(p, &fc, &cs);
    if (st == HS_OK && !vs)
        st = build_from(p, &fc, &cs, &cur);
    /* the rest of WHERE: plain conjuncts first, then those with subqueries */
    if (st == HS_OK) {
        json_t **plain = hs_calloc((size_t)cs.n + 1, sizeof *plain);
        int np = 0;
        if (!plain)
            st = nomem(p);
        for (int i = 0; plain && i < cs.n; i++)
            if (!cs.a[i].used && !cs.a[i].sub)
                plain[np++] = cs.a[i].node;
        if (st == HS_OK)
            st = filter_rel(p, &cur, plain, np, NULL, NULL, 0, "WHERE");
        hs_free(plain);
    }
    for (int i = 0; i < cs.n && st == HS_OK; i++)
        if (!cs.a[i].used && cs.a[i].sub)
            st = apply_sub_conj(p, &cur, cs.a[i].node);
    /* aggregation */
    if (st == HS_OK) {
        collect_aggs(tl, aggs, 0);
        collect_aggs(jget(sel, "havingClause"), aggs, 0);
        collect_aggs(jget(sel, "sortClause"), aggs, 0);
        size_t i;
        json_t *g;
        json_array_foreach(jget(sel, "groupClause"), i, g) {
            json_t *gn;
            if ((st = group_node(p, g, tl, &cur, &gn)) != HS_OK)
                break;
            bool dup = false;
            for (size_t k = 0; k < json_array_size(groups); k++)
                dup |= jeq(json_array_get(groups, k), gn);
            if (!dup)
                json_array_append(groups, gn);
        }
    }
    bool grouped = json_array_size(aggs) > 0 || json_array_size(groups) > 0 ||
                   jget(sel, "havingClause") != NULL || json_is_true(jget(sel, "hs_grouped"));
    if (st == HS_OK && grouped) {
        n_pre = cur.n;
        pre_cols = cur.cols;
        cur.cols = NULL;
        cur.n = 0;
        cur.cols = hs_calloc((size_t)n_pre + 1, sizeof *cur.cols);
        if (!cur.cols)
            st = nomem(p);
        for (int i = 0; i < n_pre && st == HS_OK; i++) {
            cur.cols[i].qual = dup_or_null(pre_cols[i].qual);
            cur.cols[i].name = hs_strdup(pre_cols[i].name);
            cur.cols[i].hidden = pre_cols[i].hidden;
        }
        cur.n = n_pre;
        if (st == HS_OK)
            st = aggregate(p, &cur, groups, aggs, &m, &key_of_col);
    }
    layer pre = {pre_cols, n_pre, 0};
    json_t *having = jget(sel, "havingClause");
    if (st == HS_OK && having) {
        st = attach_scalars(p, &cur, &having, 1, &m);
        if (st == HS_OK) {
            scope sc;
            scope_rel(&sc, p, &cur);
            sc.map_nodes = m.nodes;
            sc.map_cols = m.cols;
            sc.n_map = m.n;
            sc.pre = &pre;
            sc.key_of_col = key_of_col;
            ex_expr *e;
            st = bind_in(&sc, having, true, &e);
            if (st == HS_OK) {
                xo_op *op;
                st = xo_filter(cur.op, e, &op, p->err);
                cur.op = st == HS_OK ? op : NULL;
            }
        }
    }
    /* scalar subqueries and window functions of the select list and ORDER BY */
    json_t *sortc = jget(sel, "sortClause");
    if (st == HS_OK) {
        json_t *both[2] = {tl, sortc};
        st = attach_scalars(p, &cur, both, 2, &m);
        if (st == HS_OK)
            st = apply_windows(p, &cur, both, 2, &m, grouped ? &pre : NULL, key_of_col);
    }
    /* DISTINCT ON (e...): row_number() OVER (PARTITION BY e... ORDER BY the
     * query's ORDER BY) = 1; PostgreSQL requires ORDER BY to start with e... */
    json_t *don = NULL;
    if (st == HS_OK && distinct_on) {
        size_t nd = json_array_size(distinct_on);
        for (size_t i = 0; i < nd && st == HS_OK; i++) {
            json_t *sb = jget(json_array_get(sortc, i), "SortBy");
            if (!sb || !jeq(jget(sb, "node"), json_array_get(distinct_on, i)))
                st = fail(p, HS_INVALID, "42P10", first_loc(distinct_on, 0),
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
                st = nomem(p);
        }
        if (st == HS_OK)
            st = apply_windows(p, &cur, &don, 1, &m, grouped ? &pre : NULL, key_of_col);
        if (st == HS_OK) {
            json_t *eq1 = mk_op("=", json_incref(don), mk_int(1));
            st = eq1 ? filter_rel(p, &cur, &eq1, 1, m.nodes, m.cols, m.n, "DISTINCT ON") : nomem(p);
            json_decref(eq1);
        }
    }
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
            st = nomem(p);
        for (int i = 0; srcs && i < cap; i++)
            srcs[i] = -1;
    }
    scope sc;
    scope_rel(&sc, p, &cur);
    sc.map_nodes = m.nodes;
    sc.map_cols = m.cols;
    sc.n_map = m.n;
    if (grouped) {
        sc.pre = &pre;
        sc.key_of_col = key_of_col;
    }
    sc.no_aggs = grouped ? "this context" : NULL;
    for (size_t i = 0; i < json_array_size(tl) && st == HS_OK; i++) {
        json_t *rt = jget(json_array_get(tl, i), "ResTarget"), *val = jget(rt, "val"), *cb;
        if (is_kind(val, "ColumnRef", &cb)) {
            json_t *f = jget(cb, "fields");
            size_t nf = json_array_size(f);
            if (is_kind(json_array_get(f, nf - 1), "A_Star", NULL)) {
                const char *qual = nf >= 2 ? sq_str(json_array_get(f, nf - 2)) : NULL;
                if (grouped) {
                    st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(cb), "'*' with GROUP BY or aggregates is not supported");
                    break;
                }
                int found = 0;
                for (int c = 0; c < cur.n && st == HS_OK; c++) {
                    if (cur.cols[c].hidden && !(qual && name_eq(cur.cols[c].qual, qual) && *cur.cols[c].name))
                        continue;
                    if (qual && !name_eq(cur.cols[c].qual, qual))
                        continue;
                    found++;
                    srcs[n_out] = c;
                    names[n_out] = hs_strdup(cur.cols[c].name);
                    ocols[n_out].qual = dup_or_null(cur.cols[c].qual);
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
                            st = nomem(p);
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
                    st = fail(p, HS_NOT_FOUND, "42P01", sq_loc(cb),
                              "missing FROM-clause entry for table \"%s\"", qual);
                continue;
            }
        }
        /* a column of the input as it is (passed through: nested types too) */
        int direct = -1;
        for (int k = 0; k < sc.n_map && direct < 0; k++)
            if (sc.map_nodes[k] == val || jeq(sc.map_nodes[k], val))
                direct = sc.map_cols[k];
        if (direct < 0 && is_kind(val, "ColumnRef", &cb)) {
            const char *nn[8];
            int k = colref_names(cb, nn, 8);
            if (k > 0 && nn[k - 1] && !grouped)
                direct = scope_column(&sc, nn, k);
            else if (k > 0 && nn[k - 1] && grouped) {
                int pc = layer_find(&pre, nn, k);
                direct = pc >= 0 ? key_of_col[pc] : -1;
            }
        }
        if (direct >= 0)
            srcs[n_out] = direct;   /* passed through (nested columns too) */
        else
            st = bind_in(&sc, val, false, &ex[n_out]);
        if (st != HS_OK)
            break;
        const char *nm = target_name(rt);
        names[n_out] = hs_strdup(nm);
        ocols[n_out].name = hs_strdup(nm);
        ovals[n_out] = val;
        if (is_kind(val, "ColumnRef", &cb) && !jstrv(rt, "name")) {
            const char *nn[8];
            int k = colref_names(cb, nn, 8);
            int c = k > 0 ? scope_column(&sc, nn, k) : -1;
            if (c >= 0 && c < cur.n)
                ocols[n_out].qual = dup_or_null(cur.cols[c].qual);
            else if (c < 0 && grouped) {
                int pc = layer_find(&pre, nn, k);
                if (pc >= 0)
                    ocols[n_out].qual = dup_or_null(pre_cols[pc].qual);
            }
        }
        n_out++;
        if (n_out >= cap - (int)json_array_size(sortc) - 2) {
            st = fail(p, HS_INTERNAL, "XX000", -1, "select list grew past its estimate");
            break;
        }
    }
    /* ORDER BY */
    int n_vis = n_out;
    for (size_t i = 0; i < json_array_size(sortc) && st == HS_OK; i++) {
        json_t *sb = jget(json_array_get(sortc, i), "SortBy"), *node = jget(sb, "node"), *cb;
        sortk *k = &keys[nk];
        if (sort_dir(sb, &k->desc, &k->nulls_first) != HS_OK) {
            st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            break;
        }
        k->col = -1;
        if (is_kind(node, "A_Const", &cb) && jget(cb, "ival")) {
            int64_t pos;
            bool null;
            st = int_const(p, node, "ORDER BY position", &pos, &null);
            if (st == HS_OK && (pos < 1 || pos > n_vis))
                st = fail(p, HS_INVALID, "42P10", node_loc(node),
                          "ORDER BY position %lld is not in select list", (long long)pos);
            k->col = (int)pos - 1;
        } else if (is_kind(node, "ColumnRef", &cb) && json_array_size(jget(cb, "fields")) == 1) {
            const char *nm = sq_str(json_array_get(jget(cb, "fields"), 0));
            for (int c = 0; nm && c < n_vis && k->col < 0; c++)
                if (name_eq(names[c], nm))
                    k->col = c;
        }
        for (int c = 0; k->col < 0 && c < n_vis; c++)
            if (ovals[c] && jeq(ovals[c], node))
                k->col = c;
        if (st == HS_OK && k->col < 0) {
            if (distinct) {
                st = fail(p, HS_INVALID, "42P10", node_loc(node),
                          "for SELECT DISTINCT, ORDER BY expressions must appear in select list");
                break;
            }
            st = bind_in(&sc, node, false, &ex[n_out]);
            names[n_out] = hs_strdup("?sort?");
            ocols[n_out].name = hs_strdup("");
            ocols[n_out].hidden = true;
            k->col = n_out++;
        }
        nk++;
    }
    if (st == HS_OK) {
        xo_op *op;
        st = project_mixed(p, cur.op, n_out, srcs, ex, (const char *const *)names, &op);
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
        qcols_free(ocols, cap);
    hs_free(ex);
    hs_free(names);
    hs_free(ovals);
    hs_free(srcs);
    hs_free(keys);
    hs_free(extra);
    json_decref(don);
    hs_free(key_of_col);
    qcols_free(pre_cols, n_pre);
    nmap_free(&m);
    json_decref(aggs);
    json_decref(groups);
    rel_clear(&cur);
    conjs_free(&cs);
    fromc_free(&fc);
    return st;
}

/* ------------------------------------------------------------------ */
/* set operations and VALUES                                           */

static hs_status order_outputs(planner *p, rel *r, const json_t *sel)
{
    json_t *sortc = jget(sel, "sortClause");
    int nk = (int)json_array_size(sortc);
    sortk *keys = hs_calloc((size_t)nk + 1, sizeof *keys);
    if (!keys)
        return nomem(p);
    hs_status st = HS_OK;
    for (int i = 0; i < nk && st == HS_OK; i++) {
        json_t *sb = jget(json_array_get(sortc, (size_t)i), "SortBy"), *node = jget(sb, "node"), *cb;
        sortk *k = &keys[i];
        if (sort_dir(sb, &k->desc, &k->nulls_first) != HS_OK) {
            st = fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            break;
        }
        k->col = -1;
        if (is_kind(node, "A_Const", &cb) && jget(cb, "ival")) {
            int64_t pos;
            bool null;
            st = int_const(p, node, "ORDER BY position", &pos, &null);
            if (st == HS_OK && (pos < 1 || pos > r->n))
                st = fail(p, HS_INVALID, "42P10", node_loc(node),
                          "ORDER BY position %lld is not in select list", (long long)pos);
            k->col = (int)pos - 1;
        } else if (is_kind(node, "ColumnRef", &cb)) {
            const char *nn[8];
            int n = colref_names(cb, nn, 8);
            layer l = {r->cols, r->n, 0};
            k->col = n > 0 && nn[n - 1] ? layer_find(&l, nn + n - 1, 1) : -1;
            if (k->col < 0)
                st = fail(p, HS_NOT_FOUND, "42703", sq_loc(cb), "column \"%s\" does not exist",
                          nn[n - 1] ? nn[n - 1] : "?");
        } else {
            st = fail(p, HS_UNSUPPORTED, "0A000", node_loc(node),
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
    const char *op = jstrv(sel, "op");
    json_t *lb, *rb;
    if (!is_kind(jget(sel, "larg"), "SelectStmt", &lb) && !(lb = jget(sel, "larg")))
        return fail(p, HS_INTERNAL, "XX000", -1, "malformed set operation");
    if (!is_kind(jget(sel, "rarg"), "SelectStmt", &rb) && !(rb = jget(sel, "rarg")))
        return fail(p, HS_INTERNAL, "XX000", -1, "malformed set operation");
    xo_setop_kind kind = !strcmp(op, "SETOP_UNION") ? XO_SET_UNION
                       : !strcmp(op, "SETOP_INTERSECT") ? XO_SET_INTERSECT : XO_SET_EXCEPT;
    const char *kw = kind == XO_SET_UNION ? "UNION" : kind == XO_SET_INTERSECT ? "INTERSECT" : "EXCEPT";
    bool all = json_is_true(jget(sel, "all"));
    rel l = {0}, r = {0};
    hs_status st = plan_query(p, lb, &l);
    if (st == HS_OK)
        st = plan_query(p, rb, &r);
    if (st == HS_OK && l.n != r.n)
        st = fail(p, HS_INVALID, "42601", first_loc(rb, 0), "each %s query must have the same number of columns", kw);
    hs_field *types = NULL;
    if (st == HS_OK) {
        types = hs_calloc((size_t)l.n + 1, sizeof *types);
        if (!types)
            st = nomem(p);
        for (int i = 0; types && i < l.n; i++) {
            const hs_field *a = &l.op->schema.children[i], *b = &r.op->schema.children[i];
            unify_type(a, b, &types[i]);
            if ((a->type == HS_TYPE_STRING) != (b->type == HS_TYPE_STRING) &&
                a->type != HS_TYPE_NA && b->type != HS_TYPE_NA)
                st = fail(p, HS_INVALID, "42804", first_loc(rb, 0), "%s types %s and %s cannot be matched",
                          kw, hs_type_name(a->type), hs_type_name(b->type));
        }
    }
    if (st == HS_OK)
        st = cast_rel(p, &l, types);
    if (st == HS_OK)
        st = cast_rel(p, &r, types);
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
    rel_clear(&l);
    rel_clear(&r);
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

static hs_status plan_values(planner *p, const json_t *sel, rel *out)
{
    json_t *rows = jget(sel, "valuesLists");
    size_t nr = json_array_size(rows);
    size_t nc = json_array_size(jget(jget(json_array_get(rows, 0), "List"), "items"));
    hs_field empty;
    hs_field_init(&empty, "", HS_TYPE_STRUCT, false);
    hs_batch *one = NULL;
    hs_field *types = hs_calloc(nc + 1, sizeof *types);
    ex_expr **ex = hs_calloc(nc + 1, sizeof *ex);
    hs_column **cols = hs_calloc(nc + 1, sizeof *cols);
    hs_status st = types && ex && cols ? hs_batch_create(&empty, 1, &one, p->err) : nomem(p);
    if (st == HS_OK)
        one->n_rows = 1;
    ex_scope es = {.schema = &empty, .column = no_column};
    /* types: unify over rows */
    for (size_t r = 0; r < nr && st == HS_OK; r++) {
        json_t *items = jget(jget(json_array_get(rows, r), "List"), "items");
        if (json_array_size(items) != nc) {
            st = fail(p, HS_INVALID, "42601", first_loc(json_array_get(rows, r), 0),
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
            bool null_lit = is_kind(cn, "A_Const", &cb) && json_is_true(jget(cb, "isnull"));
            if (r == 0 || types[c].type == HS_TYPE_NA) {
                types[c] = *t;
                if (null_lit)
                    types[c].type = HS_TYPE_NA;
            } else if (!null_lit) {
                hs_field u;
                unify_type(&types[c], t, &u);
                types[c] = u;
            }
            types[c].name = NULL;
            types[c].children = NULL;
            types[c].n_children = 0;
            types[c].tz = NULL;
            types[c].n_meta = 0;
            types[c].meta_keys = types[c].meta_values = NULL;
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
        hs_field_init(&f, nm, types[c].type, true);
        f.precision = types[c].precision;
        f.scale = types[c].scale;
        f.unit = types[c].unit;
        f.field_id = (int32_t)c + 1;
        st = hs_field_add_child(&schema, &f);
        if (st != HS_OK) {
            hs_field_clear(&f);
            st = nomem(p);
        }
    }
    for (size_t r = 0; r < nr && st == HS_OK; r++) {
        json_t *items = jget(jget(json_array_get(rows, r), "List"), "items");
        for (size_t c = 0; c < nc && st == HS_OK; c++) {
            json_t *node = json_array_get(items, c);
            json_t *cast = cast_json(node, &types[c]);
            ex_expr *e = NULL;
            hs_column *col = NULL;
            st = cast ? ex_bind_json(cast, p->text, &es, false, &e, p->err) : nomem(p);
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
    hs_free(types);
    hs_batch_free(one);
    hs_field_clear(&schema);
    hs_field_clear(&empty);
    if (st == HS_OK)
        st = rel_name(out, NULL, p->err);
    if (st == HS_OK)
        st = order_outputs(p, out, sel);
    return st;
}

/* ------------------------------------------------------------------ */
/* vector search                                                       */

static const char *cast_type(const json_t *j, const char **val);

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
    json_t *sortc = jget(sel, "sortClause"), *sb, *ae, *lc = jget(sel, "limitCount");
    if (fc->n_items != 1 || fc->items[0]->kind != F_TABLE || json_array_size(sortc) != 1 || !lc ||
        jget(sel, "groupClause") || jget(sel, "havingClause") || jget(sel, "distinctClause"))
        return HS_OK;
    json_t *aggs = json_array();
    collect_aggs(jget(sel, "targetList"), aggs, 0);
    size_t na = json_array_size(aggs);
    json_decref(aggs);
    if (na)
        return HS_OK;
    for (int i = 0; i < cs->n; i++)
        if (cs->a[i].sub || cs->a[i].outer || cs->a[i].n_refs != 1)
            return HS_OK;
    sb = jget(json_array_get(sortc, 0), "SortBy");
    const char *dir = jstrv(sb, "sortby_dir"), *nulls = jstrv(sb, "sortby_nulls");
    if ((dir && strcmp(dir, "SORTBY_DEFAULT") && strcmp(dir, "SORTBY_ASC")) ||
        (nulls && strcmp(nulls, "SORTBY_NULLS_DEFAULT")))
        return HS_OK;
    if (!is_kind(jget(sb, "node"), "A_Expr", &ae))
        return HS_OK;
    const char *op = sq_str(json_array_get(jget(ae, "name"), 0));
    const char *metric = !op ? NULL : !strcmp(op, "<->") ? "l2" : !strcmp(op, "<=>") ? "cosine"
                       : !strcmp(op, "<#>") ? "ip" : NULL;
    if (!metric)
        return HS_OK;
    json_t *cr = NULL, *cn = NULL, *x;
    for (int side = 0; side < 2; side++) {
        json_t *a = jget(ae, side ? "rexpr" : "lexpr"), *b = jget(ae, side ? "lexpr" : "rexpr");
        if (is_kind(a, "ColumnRef", &x)) {
            cr = x;
            cn = b;
        }
    }
    const char *lit = NULL, *tn;
    if (!cr || !cn)
        return HS_OK;
    if ((tn = cast_type(cn, &lit)) == NULL) {
        json_t *cb;
        if (!is_kind(cn, "A_Const", &cb) || !jget(cb, "sval"))
            return HS_OK;
        lit = jstrv(jget(cb, "sval"), "sval");
    } else if (strcmp(tn, "vector") != 0) {
        return HS_OK;
    }
    int64_t k, off = 0;
    bool null;
    if (!is_kind(lc, "A_Const", NULL) || int_const(p, lc, "LIMIT", &k, &null) != HS_OK || null ||
        k <= 0 || k > 100000)
        return HS_OK;
    json_t *lo = jget(sel, "limitOffset");
    if (lo && (!is_kind(lo, "A_Const", NULL) || int_const(p, lo, "OFFSET", &off, &null) != HS_OK ||
               off < 0 || off > 100000))
        return HS_OK;
    fnode *f = fc->items[0];
    const char *names[8];
    int n = colref_names(cr, names, 8);
    layer l = {f->ns, f->n_ns, 0};
    int col = n > 0 && names[n - 1] ? layer_find(&l, names, n) : -1;
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
        const char *c = jstrv(v, "column"), *kind = jstrv(v, "kind");
        const char *m = jstrv(jget(v, "params"), "metric");
        if (c && kind && !strcmp(c, colname) && (!strncmp(kind, "hnsw", 4) || !strncmp(kind, "ivf", 3)) &&
            !strcmp(m ? m : "l2", metric))
            found = true;
    }
    json_decref(arr);
    int dim = 0;
    float *q = found && lit ? parse_vec(lit, &dim) : NULL;
    if (!q)
        return HS_OK;
    hs_status st = push_filters(p, fc, cs);
    int nc = f->ts.n_children, kc = 0;
    const char **cols = hs_calloc((size_t)nc + 1, sizeof *cols);
    int *idx = hs_calloc((size_t)nc + 1, sizeof *idx);
    if (st == HS_OK && (!cols || !idx))
        st = nomem(p);
    for (int c = 0; st == HS_OK && c < nc; c++)
        if (name_needed(p, f->ts.children[c].name) || name_needed(p, f->ns[c].name)) {
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
            st = nomem(p);
        for (int c = 0; st == HS_OK && c < out->n; c++) {
            bool dist = c >= kc;
            out->cols[c].qual = hs_strdup(f->alias);
            out->cols[c].name = hs_strdup(dist ? "" : f->ns[idx[c]].name);
            out->cols[c].hidden = dist;
            if (!out->cols[c].qual || !out->cols[c].name)
                st = nomem(p);
        }
    }
    /* rows whose vector is NULL have no distance and no place in the
     * index; an exact ORDER BY returns them last (NULLS LAST), so they are
     * added from a scan and the top-k above orders the union */
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
            st = nomem(p);
        }
        hs_buf_free(&nf);
        if (st == HS_OK)
            st = rel_name(&nulls, NULL, p->err);
        json_t *nd = st == HS_OK ? json_pack("{s:{s:{s:{s:b,s:i}},s:{s:[{s:{s:s}}],s:i,s:i},s:i}}",
                                             "TypeCast", "arg", "A_Const", "isnull", 1, "location",
                                             -1, "typeName", "names", "String", "sval", "float8",
                                             "typemod", -1, "location", -1, "location", -1)
                                 : NULL;
        int dc;
        if (st == HS_OK)
            st = nd ? rel_add_expr(p, &nulls, nd, &dc) : nomem(p);
        json_decref(nd);
        if (st == HS_OK) {
            xo_op *u;
            xo_op *vo = out->op, *no = nulls.op;
            out->op = nulls.op = NULL;
            st = xo_setop(XO_SET_UNION, true, vo, no, &u, p->err);
            out->op = st == HS_OK ? u : NULL;
        }
        rel_clear(&nulls);
    }
    hs_free(cols);
    hs_free(idx);
    hs_free(q);
    if (st == HS_OK) {
        for (int c = 0; c < cs->n; c++)
            cs->a[c].used = true;
        *used = true;
    } else {
        rel_clear(out);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* constant date/timestamp +- interval (folded before binding)          */

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp + (mp < 10 ? 3 : -9);
    *y = yoe + era * 400 + (*m <= 2);
}

static const char *cast_type(const json_t *j, const char **val)
{
    json_t *b, *cb;
    if (!is_kind(j, "TypeCast", &b) || !is_kind(jget(b, "arg"), "A_Const", &cb) || !jget(cb, "sval"))
        return NULL;
    *val = jstrv(jget(cb, "sval"), "sval");
    json_t *names = jget(jget(b, "typeName"), "names");
    return *val ? sq_str(json_array_get(names, json_array_size(names) - 1)) : NULL;
}

/* Parses an interval literal into months, days and seconds. */
static bool parse_interval(const json_t *tc, const char *s, int64_t *mon, int64_t *day, int64_t *sec)
{
    *mon = *day = *sec = 0;
    json_t *mods = jget(jget(jget(tc, "TypeCast"), "typeName"), "typmods");
    if (json_array_size(mods) >= 1) {
        json_t *iv = jget(jget(jget(json_array_get(mods, 0), "A_Const"), "ival"), "ival");
        long long mask = json_is_integer(iv) ? json_integer_value(iv) : 0;
        char *end;
        long long n = strtoll(s, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (end == s || *end)
            return false;
        switch (mask) {
        case 4: *mon = n * 12; return true;
        case 2: *mon = n; return true;
        case 8: *day = n; return true;
        case 1024: *sec = n * 3600; return true;
        case 2048: *sec = n * 60; return true;
        case 4096: *sec = n; return true;
        default: return false;
        }
    }
    const char *q = s;
    bool any = false;
    while (*q) {
        while (isspace((unsigned char)*q))
            q++;
        if (!*q)
            break;
        char *end;
        long long n = strtoll(q, &end, 10);
        if (end == q)
            return false;
        q = end;
        while (isspace((unsigned char)*q))
            q++;
        const char *u = q;
        while (isalpha((unsigned char)*q))
            q++;
        size_t ul = (size_t)(q - u);
        if (ul >= 1 && !strncasecmp(u, "years", ul < 5 ? ul : 5) && ul >= 1 && (u[0] == 'y' || u[0] == 'Y'))
            *mon += n * 12;
        else if (ul >= 3 && !strncasecmp(u, "months", ul < 6 ? ul : 6) && !strncasecmp(u, "mon", 3))
            *mon += n;
        else if (ul >= 1 && (u[0] == 'w' || u[0] == 'W'))
            *day += n * 7;
        else if (ul >= 1 && (u[0] == 'd' || u[0] == 'D'))
            *day += n;
        else if (ul >= 1 && (u[0] == 'h' || u[0] == 'H'))
            *sec += n * 3600;
        else if (ul >= 3 && !strncasecmp(u, "min", 3))
            *sec += n * 60;
        else if (ul >= 1 && (u[0] == 's' || u[0] == 'S'))
            *sec += n;
        else
            return false;
        any = true;
    }
    return any;
}

/* date/timestamp literal +- interval literal -> a timestamp literal. */
static json_t *fold_interval(const json_t *j)
{
    json_t *b;
    if (!is_kind(j, "A_Expr", &b) || strcmp(jstrv(b, "kind") ? jstrv(b, "kind") : "", "AEXPR_OP"))
        return NULL;
    const char *op = sq_str(json_array_get(jget(b, "name"), 0));
    if (!op || (strcmp(op, "+") && strcmp(op, "-")))
        return NULL;
    json_t *l = jget(b, "lexpr"), *r = jget(b, "rexpr");
    const char *lv = NULL, *rv = NULL;
    const char *lt = cast_type(l, &lv), *rt = cast_type(r, &rv);
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
    int y, mo, d, hh = 0, mi = 0, ss = 0;
    if (sscanf(lv, "%d-%d-%d %d:%d:%d", &y, &mo, &d, &hh, &mi, &ss) < 3)
        return NULL;
    int64_t mon, day, sec;
    if (!parse_interval(r, rv, &mon, &day, &sec))
        return NULL;
    int sign = !strcmp(op, "-") ? -1 : 1;
    int64_t ym = (int64_t)y * 12 + (mo - 1) + sign * mon;
    int64_t ny = ym >= 0 ? ym / 12 : -((-ym + 11) / 12), nm = ym - ny * 12 + 1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t lim = mdays[nm - 1] + (nm == 2 && ((ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0));
    int64_t nd = d > lim ? lim : d;
    int64_t days = days_from_civil(ny, nm, nd) + sign * day;
    int64_t secs = (int64_t)hh * 3600 + mi * 60 + ss + sign * sec;
    days += secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    secs -= (secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400)) * 86400;
    int64_t oy, om, od;
    civil_from_days(days, &oy, &om, &od);
    char buf[160];
    snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld", (long long)oy,
             (long long)om, (long long)od, (long long)(secs / 3600), (long long)(secs / 60 % 60),
             (long long)(secs % 60));
    int loc = sq_loc(b);
    return json_pack("{s:{s:{s:{s:{s:s},s:i}},s:{s:[{s:{s:s}}],s:i,s:i},s:i,s:b}}", "TypeCast",
                     "arg", "A_Const", "sval", "sval", buf, "location", loc, "typeName", "names",
                     "String", "sval", "timestamp", "typemod", -1, "location", loc, "location", loc,
                     "hs_folded", 1);
}

/* ------------------------------------------------------------------ */
/* variance and standard deviation in terms of sum and count            */

static json_t *mk_fn(const char *name, json_t *arg, const json_t *like)
{
    json_t *f = json_pack("{s:{s:[{s:{s:s}}],s:[O],s:i}}", "FuncCall", "funcname", "String", "sval",
                          name, "args", arg, "location", -1);
    json_t *b = f ? jget(f, "FuncCall") : NULL;
    if (b && json_is_true(jget(like, "agg_distinct")))
        json_object_set_new(b, "agg_distinct", json_true());
    if (b && jget(like, "agg_filter"))
        json_object_set(b, "agg_filter", jget(like, "agg_filter"));
    return f;
}

static json_t *mk_op(const char *op, json_t *l, json_t *r)
{
    return json_pack("{s:{s:s,s:[{s:{s:s}}],s:o,s:o,s:i}}", "A_Expr", "kind", "AEXPR_OP", "name",
                     "String", "sval", op, "lexpr", l, "rexpr", r, "location", -1);
}

static json_t *mk_int(int v)
{
    return json_pack("{s:{s:{s:i},s:i}}", "A_Const", "ival", "ival", v, "location", -1);
}

/* var_samp/var_pop/variance/stddev*(x) as
 *   v = (sum(x*x) - sum(x)*sum(x)/count(x)) / NULLIF(count(x) - k, 0)
 * over x::float8 (k = 1 for the sample forms), clamped at 0, sqrt for
 * stddev: PostgreSQL's definitions (NULL for no rows, and for one row with
 * the sample forms). */
static json_t *stat_agg(const json_t *node)
{
    json_t *b;
    if (!is_kind(node, "FuncCall", &b) || jget(b, "over") || json_array_size(jget(b, "args")) != 1)
        return NULL;
    const char *nm = func_name(b);
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
    json_t *x = json_array_get(jget(b, "args"), 0);
    json_t *f8 = json_pack("{s:[{s:{s:s}}],s:i,s:i}", "names", "String", "sval", "float8", "typemod",
                           -1, "location", -1);
    json_t *xf = json_pack("{s:{s:O,s:o,s:i}}", "TypeCast", "arg", x, "typeName", f8, "location", -1);
    if (!xf)
        return NULL;
    json_t *sxx = mk_fn("sum", mk_op("*", json_incref(xf), json_incref(xf)), b);
    json_t *sx = mk_fn("sum", json_incref(xf), b);
    json_t *n1 = mk_fn("count", json_incref(xf), b), *n2 = mk_fn("count", json_incref(xf), b);
    json_t *num = mk_op("-", sxx, mk_op("/", mk_op("*", json_incref(sx), sx), n1));
    json_t *den = json_pack("{s:{s:s,s:[{s:{s:s}}],s:o,s:o,s:i}}", "A_Expr", "kind", "AEXPR_NULLIF",
                            "name", "String", "sval", "=", "lexpr",
                            sample ? mk_op("-", n2, mk_int(1)) : n2, "rexpr", mk_int(0),
                            "location", -1);
    json_t *v = mk_op("/", num, den);
    /* CASE WHEN v < 0 THEN 0 ELSE v END (rounding can leave -1e-17) */
    json_t *clamped = json_pack("{s:{s:[{s:{s:o,s:o,s:i}}],s:o,s:i}}", "CaseExpr", "args", "CaseWhen",
                                "expr", mk_op("<", json_incref(v), mk_int(0)), "result", mk_int(0),
                                "location", -1, "defresult", v, "location", -1);
    json_decref(xf);
    if (!clamped)
        return NULL;
    json_t *out = !root ? clamped
                : json_pack("{s:{s:[{s:{s:s}}],s:[o],s:i}}", "FuncCall", "funcname", "String", "sval",
                            "sqrt", "args", clamped, "location", sq_loc(b));
    const char *k;
    json_t *ob;
    if (out && sq_node(out, &k, &ob))
        json_object_set_new(ob, "hs_name", json_string(nm));   /* the result column's name */
    return out;
}

/* GREATEST(a, b, ...) / LEAST(...) as CASE (PostgreSQL: NULL arguments are
 * ignored; NULL only when all are NULL), folded pairwise from the left. */
static json_t *minmax_expr(const json_t *node)
{
    json_t *b;
    if (!is_kind(node, "MinMaxExpr", &b))
        return NULL;
    const char *op = jstrv(b, "op");
    json_t *args = jget(b, "args");
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
        json_t *ge = mk_op(cmp, json_incref(acc), json_incref(x));
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

static void rewrite_stats(json_t *j, int depth)
{
    if (depth > 2000)
        return;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            rewrite_stats(v, depth + 1);
            json_t *r = stat_agg(v);
            if (!r)
                r = minmax_expr(v);
            if (r)
                json_object_set_new(j, k, r);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            rewrite_stats(v, depth + 1);
            json_t *r = stat_agg(v);
            if (!r)
                r = minmax_expr(v);
            if (r)
                json_array_set_new(j, i, r);
        }
    }
}

static void fold_intervals(json_t *j, int depth)
{
    if (depth > 2000)
        return;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            fold_intervals(v, depth + 1);
            json_t *f = fold_interval(v);
            if (f)
                json_object_set_new(j, k, f);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            fold_intervals(v, depth + 1);
            json_t *f = fold_interval(v);
            if (f)
                json_array_set_new(j, i, f);
        }
    }
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
    fold_intervals((json_t *)stmt, 0);
    rewrite_stats((json_t *)stmt, 0);
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
    hs_status st = plan_query(&p, select, &r);
    for (int i = 0; st == HS_OK && i < s->n_tt; i++)
        if (!s->tt[i].used)
            st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, s->tt[i].off,
                         "FOR SYSTEM_%s AS OF must follow a table name in FROM",
                         s->tt[i].version ? "VERSION" : "TIME");
    if (st == HS_OK) {
        *out = r.op;
        r.op = NULL;
    }
    rel_clear(&r);
    planner_free(&p);
    return st;
}

/* The first batch is pulled while the statement executes, so that errors
 * of evaluation that show in it (division by zero, bad casts) fail the
 * statement itself with their SQLSTATE, as PostgreSQL reports them; this
 * operator hands that batch out first, then pulls from its child. */
typedef struct prefetch_op {
    xo_op op;
    hs_batch *first;
    bool given;
} prefetch_op;

static hs_status prefetch_next(xo_op *op, hs_batch **out, hs_error *err)
{
    prefetch_op *pf = (prefetch_op *)op;
    if (!pf->given) {
        pf->given = true;
        *out = pf->first;
        pf->first = NULL;
        return HS_OK;
    }
    return xo_next(op->children[0], out, err);
}

static void prefetch_destroy(xo_op *op) { hs_batch_free(((prefetch_op *)op)->first); }

static hs_status prefetch(xo_op *child, xo_op **out, hs_error *err)
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
        st = prefetch(op, &op, err);
    if (st != HS_OK) {
        sq_ctx_free(ctx);
        return st;
    }
    struct ArrowArrayStream stream;
    HS_TRY(xo_to_stream(op, sq_ctx_free, ctx, &stream, err));
    return sq_result_rows("SELECT", &stream, out, err);
}

/* ------------------------------------------------------------------ */
/* EXPLAIN                                                             */

hs_status sq_exec_explain(sq_session *s, const json_t *stmt, const char *text, hs_result **out,
                          hs_error *err)
{
    json_t *q = jget(stmt, "query"), *sel;
    bool analyze = false;
    size_t i;
    json_t *o;
    json_array_foreach(jget(stmt, "options"), i, o) {
        json_t *d = jget(o, "DefElem");
        const char *nm = jstrv(d, "defname");
        json_t *arg = jget(d, "arg");
        bool on = true;
        if (arg) {
            json_t *bv = jget(arg, "Boolean");
            const char *sv = sq_str(arg);
            if (bv)
                on = json_is_true(jget(bv, "boolval"));
            else if (sv)
                on = !strcasecmp(sv, "true") || !strcasecmp(sv, "on") || !strcmp(sv, "1");
        }
        if (nm && !strcmp(nm, "analyze"))
            analyze = on;
        else if (nm && strcmp(nm, "verbose") && strcmp(nm, "costs") && strcmp(nm, "timing") &&
                 strcmp(nm, "summary") && strcmp(nm, "buffers"))
            return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, sq_loc(d),
                           "EXPLAIN option \"%s\" is not supported", nm);
    }
    if (!is_kind(q, "SelectStmt", &sel))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, node_loc(q),
                       "EXPLAIN is supported for queries only");
    xo_ctx *ctx;
    HS_TRY(sq_ctx_new(s, &ctx, err));
    xo_op *op = NULL;
    hs_status st = sq_plan_query(s, ctx, sel, text, &op, err);
    while (st == HS_OK && analyze) {
        hs_batch *b = NULL;
        st = xo_next(op, &b, err);
        if (!b)
            break;
        hs_batch_free(b);
    }
    hs_buf buf = {0};
    if (st == HS_OK)
        st = xo_explain(op, analyze, &buf, err);
    xo_free(op);
    sq_ctx_free(ctx);
    if (st != HS_OK) {
        hs_buf_free(&buf);
        return st;
    }
    /* one row per line */
    const char *t = buf.len ? hs_buf_cstr(&buf) : "";
    int n = 0;
    for (const char *c = t; *c; c++)
        n += *c == '\n';
    n += 1;
    char **rows = hs_calloc((size_t)n + 1, sizeof *rows);
    char *copy = hs_strdup(t);
    int k = 0;
    if (rows && copy) {
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            rows[k++] = line;
        st = sq_result_text("EXPLAIN", "QUERY PLAN", k, (const char *const *)rows, out, err);
    } else {
        st = hs_err_nomem(err, buf.len);
    }
    hs_free(rows);
    hs_free(copy);
    hs_buf_free(&buf);
    return st;
}

/* ------------------------------------------------------------------ */
/* CREATE INDEX / DROP INDEX                                           */

/* USING method + operator class -> our index kind and metric. */
static hs_status index_kind(sq_session *s, const char *text, int loc, const char *method,
                            const char *opclass, const char **kind, const char **metric,
                            hs_error *err)
{
    *metric = NULL;
    if (!strcmp(method, "hnsw") || !strcmp(method, "ivfflat")) {
        *kind = !strcmp(method, "hnsw") ? "hnsw" : "ivf_hnsw";
        if (!opclass || !strcmp(opclass, "vector_l2_ops"))
            *metric = "l2";
        else if (!strcmp(opclass, "vector_cosine_ops"))
            *metric = "cosine";
        else if (!strcmp(opclass, "vector_ip_ops"))
            *metric = "ip";
        else
            return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                           "operator class \"%s\" is not supported for access method \"%s\"",
                           opclass, method);
        return HS_OK;
    }
    if (!strcmp(method, "btree") || !strcmp(method, "brin"))
        *kind = "range";
    else if (!strcmp(method, "hash") || !strcmp(method, "gin"))
        *kind = "inverted";
    else
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                       "access method \"%s\" is not supported", method);
    return HS_OK;
}

static hs_status create_index(sq_session *s, const json_t *b, const char *text, hs_result **out,
                              hs_error *err)
{
    int loc = first_loc(b, 0);
    if (json_is_true(jget(b, "unique")) || json_is_true(jget(b, "primary")))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc, "unique indexes are not supported");
    if (jget(b, "whereClause"))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc, "partial indexes are not supported");
    json_t *params = jget(b, "indexParams");
    if (json_array_size(params) != 1)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                       "indexes are on one column");
    json_t *ie = jget(json_array_get(params, 0), "IndexElem");
    const char *col = jstrv(ie, "name");
    if (!col)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc, "expression indexes are not supported");
    json_t *oc = jget(ie, "opclass");
    const char *opclass = json_array_size(oc) ? sq_str(json_array_get(oc, json_array_size(oc) - 1)) : NULL;
    const char *method = jstrv(b, "accessMethod");
    const char *kind = NULL, *metric = NULL;
    HS_TRY(index_kind(s, text, loc, method ? method : "btree", opclass, &kind, &metric, err));
    json_t *rv = jget(b, "relation");
    hs_table *t;
    HS_TRY(sq_table_lookup(s, rv, text, &t, err));
    json_t *pj = json_object();
    if (!pj)
        return hs_err_nomem(err, 0);
    if (metric)
        json_object_set_new(pj, "metric", json_string(metric));
    size_t i;
    json_t *o;
    hs_status st = HS_OK;
    json_array_foreach(jget(b, "options"), i, o) {
        json_t *d = jget(o, "DefElem"), *arg = jget(d, "arg");
        const char *nm = jstrv(d, "defname");
        json_t *iv = jget(jget(arg, "Integer"), "ival");
        long long v = json_is_integer(iv) ? json_integer_value(iv) : 0;
        const char *key = !nm ? NULL : !strcmp(nm, "m") ? "m"
                        : !strcmp(nm, "ef_construction") ? "ef_construction"
                        : !strcmp(nm, "lists") ? "ivf_lists" : NULL;
        if (!key || (!jget(arg, "Integer"))) {
            st = sq_fail(s, err, HS_INVALID, "22023", text, sq_loc(d),
                         "unrecognized parameter \"%s\"", nm ? nm : "?");
            break;
        }
        if (v < 1 || v > 100000) {
            st = sq_fail(s, err, HS_INVALID, "22023", text, sq_loc(d),
                         "value %lld out of bounds for option \"%s\"", v, nm);
            break;
        }
        json_object_set_new(pj, key, json_integer(v));
    }
    char *pstr = st == HS_OK ? hs_json_dumps(pj, JSON_COMPACT) : NULL;
    json_decref(pj);
    if (st != HS_OK)
        return st;
    hs_index_options io = HS_INDEX_OPTIONS_INIT;
    io.kind = kind;
    io.params_json = pstr;
    st = hs_table_add_index(t, col, &io, err);
    free(pstr);
    HS_TRY(st);
    /* remember the name for DROP INDEX (default: <table>_<column>_idx) */
    const char *relname = jstrv(jget(rv, "RangeVar") ? jget(rv, "RangeVar") : rv, "relname");
    char defname[256];
    const char *name = jstrv(b, "idxname");
    if (!name) {
        snprintf(defname, sizeof defname, "%s_%s_idx", relname ? relname : "t", col);
        name = defname;
    }
    if (!s->index_names && !(s->index_names = json_object()))
        return hs_err_nomem(err, 0);
    json_object_set_new(s->index_names, name, json_pack("{s:O,s:s,s:s}", "rel", rv, "col", col,
                                                        "kind", kind));
    return sq_result_tag("CREATE INDEX", -1, out, err);
}

static hs_status drop_index(sq_session *s, const json_t *b, const char *text, hs_result **out,
                            hs_error *err)
{
    bool missing_ok = json_is_true(jget(b, "missing_ok"));
    size_t i;
    json_t *o;
    json_array_foreach(jget(b, "objects"), i, o) {
        json_t *items = jget(jget(o, "List"), "items");
        const char *name = sq_str(json_array_get(items, json_array_size(items) - 1));
        json_t *ent = name && s->index_names ? json_object_get(s->index_names, name) : NULL;
        if (!ent) {
            if (missing_ok)
                continue;
            return sq_fail(s, err, HS_NOT_FOUND, "42704", text, first_loc(b, 0),
                           "index \"%s\" does not exist", name ? name : "?");
        }
        hs_table *t;
        HS_TRY(sq_table_lookup(s, jget(ent, "rel"), text, &t, err));
        HS_TRY(hs_table_drop_index(t, jstrv(ent, "col"), jstrv(ent, "kind"), err));
        json_object_del(s->index_names, name);
    }
    return sq_result_tag("DROP INDEX", -1, out, err);
}

hs_status sq_exec_index(sq_session *s, const char *kind, const json_t *stmt, const char *text,
                        hs_result **out, hs_error *err)
{
    if (!strcmp(kind, "IndexStmt"))
        return create_index(s, stmt, text, out, err);
    return drop_index(s, stmt, text, out, err);
}
