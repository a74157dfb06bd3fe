/*
 * sql/plan_srf.c - set-returning functions: unnest and generate_series,
 * in the select list and in FROM (PostgreSQL 15's semantics, on the
 * ProjectSet operator of exec/srf.c).
 *
 *   SELECT id, unnest(tags) FROM t            the select list's SRFs run
 *                                             after WHERE, GROUP BY, HAVING
 *                                             and windows, before DISTINCT,
 *                                             ORDER BY and LIMIT; several
 *                                             run in lockstep (the shorter
 *                                             padded with NULL)
 *   FROM generate_series(1, 10) [WITH ORDINALITY] [AS] g(i[, n])
 *   FROM unnest(t.a[, t.b ...]) u(x, y), ROWS FROM (f(...), g(...))
 *   FROM t, unnest(t.tags) u(tag)             lateral: arguments that read
 *   FROM t CROSS JOIN LATERAL unnest(...)     columns of earlier FROM items
 *   FROM t [LEFT] JOIN LATERAL f(...) ON true run over the joined rows of
 *                                             the other items (a left join
 *                                             keeps rows the function
 *                                             gives nothing for)
 *
 * The functions: string_to_table(s, delim[, null_string]) (also written
 * unnest(string_to_array(...))), unnest(list) (a list column: a table's array column, or
 * an array_agg result), unnest(ARRAY[e1, ...][::type[]]) (the elements,
 * cast to their common type, as one argument column each), generate_series(start, stop[, step]) of integers
 * (int4, or int8 when an argument is bigint), of numeric (decimal(38, s),
 * s the largest scale of the arguments) and of timestamps or
 * timestamptz with an interval step (dates become timestamptz, as
 * PostgreSQL resolves them).  Their arguments are projected into columns
 * first (pl_rel_add_expr_in), then one ProjectSet computes them.
 *
 * Names as PostgreSQL gives them: a FROM function's column is named after
 * the function, or after the table alias when the alias has no column
 * list and the function returns one column; WITH ORDINALITY adds
 * "ordinality".
 *
 * Refused with 0A000: SRFs nested in other expressions' arguments in the
 * select list (`unnest(x) + 1` works; `f(unnest(x))` inside an aggregate
 * does not, as in PostgreSQL), lateral functions in FROM placed before an
 * ordinary item, lateral joins with conditions other than true, and other
 * set-returning functions (unnest of other array
 * expressions: expressions cannot produce lists).
 */
#include "sql/plan_int.h"

#define SRF_MAX 32

static bool srf_name(const char *nm)
{
    return nm && (!strcmp(nm, "unnest") || !strcmp(nm, "generate_series") ||
                  !strcmp(nm, "string_to_table"));
}

static bool is_srf_call(const json_t *j)
{
    json_t *b;
    return json_is_object(j) && json_object_size(j) == 1 && pl_is_kind(j, "FuncCall", &b) &&
           !pl_jget(b, "over") && srf_name(pl_func_name(b));
}

/* A cast of node to the named type (PostgreSQL's type name). */
static json_t *cast_named(json_t *node, const char *type)
{
    return json_pack("{s:{s:O,s:{s:[{s:{s:s}}],s:i,s:i},s:i}}", "TypeCast", "arg", node,
                     "typeName", "names", "String", "sval", type, "typemod", -1, "location", -1,
                     "location", -1);
}

static bool string_literal(const json_t *j)
{
    json_t *b;
    return pl_is_kind(j, "A_Const", &b) && pl_jget(b, "sval");
}

typedef struct srf_env {
    const nmap *m;
    const layer *pre;
    const int *key_of_col;
} srf_env;

/* The column of r that is node as it is: a mapped node (aggregate
 * results), a column reference (list columns cannot be computed); -1 when
 * node must be computed. */
static int direct_col(const rel *r, const json_t *node, const srf_env *env)
{
    for (int k = 0; env->m && k < env->m->n; k++)
        if (env->m->nodes[k] == node || pl_jeq(env->m->nodes[k], node))
            return env->m->cols[k];
    json_t *cb;
    if (pl_is_kind(node, "ColumnRef", &cb)) {
        const char *nn[8];
        int k = pl_colref_names(cb, nn, 8);
        if (k > 0 && nn[k - 1]) {
            if (env->pre) {
                int pc = pl_layer_find(env->pre, nn, k);
                return pc >= 0 ? env->key_of_col[pc] : -1;
            }
            layer l = {r->cols, r->n, 0};
            return pl_layer_find(&l, nn, k);
        }
    }
    return -1;
}

static void scope_for(scope *sc, planner *p, const rel *r, const srf_env *env)
{
    pl_scope_rel(sc, p, r);
    sc->no_aggs = "this context";
    if (env->m) {
        sc->map_nodes = env->m->nodes;
        sc->map_cols = env->m->cols;
        sc->n_map = env->m->n;
    }
    sc->pre = env->pre;
    sc->key_of_col = env->key_of_col;
}

/* The type of node's value over r (bound, not computed). */
static hs_status arg_type(planner *p, const rel *r, const json_t *node, const srf_env *env, hs_field *out)
{
    int c = direct_col(r, node, env);
    if (c >= 0) {
        *out = r->op->schema.children[c];
        return HS_OK;
    }
    scope sc;
    scope_for(&sc, p, r, env);
    ex_expr *e;
    HS_TRY(pl_bind_in(&sc, node, false, &e));
    *out = *ex_type(e);   /* shallow: only type, tz and the like are read */
    out->name = NULL;
    out->children = NULL;
    out->n_children = 0;
    out->meta_keys = out->meta_values = NULL;
    out->n_meta = 0;
    ex_free(e);
    return HS_OK;
}

/* Columns of r for nodes[0..n): direct ones as they are, the others
 * computed by one projection appending them (hidden) to r. */
static hs_status add_cols(planner *p, rel *r, json_t *const *nodes, int n, const srf_env *env, int *cols)
{
    int n0 = r->n, add = 0;
    for (int i = 0; i < n; i++) {
        cols[i] = direct_col(r, nodes[i], env);
        if (cols[i] < 0)
            add++;
    }
    if (add == 0)
        return HS_OK;
    int tot = n0 + add;
    ex_expr **ex = hs_calloc((size_t)tot + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)tot + 1, sizeof *names);
    int *src = hs_calloc((size_t)tot + 1, sizeof *src);
    qcol *nc = hs_realloc(r->cols, (size_t)(tot + 1) * sizeof *nc);
    hs_status st = ex && names && src && nc ? HS_OK : pl_nomem(p);
    if (nc)
        r->cols = nc;
    for (int i = 0; i < n0 && st == HS_OK; i++) {
        names[i] = r->op->schema.children[i].name;
        src[i] = i;
    }
    scope sc;
    scope_for(&sc, p, r, env);
    int k = n0;
    for (int i = 0; i < n && st == HS_OK; i++) {
        if (cols[i] >= 0)
            continue;
        src[k] = -1;
        names[k] = "?column?";
        st = pl_bind_in(&sc, nodes[i], false, &ex[k]);
        cols[i] = k++;
    }
    if (st == HS_OK) {
        xo_op *op;
        st = pl_project_mixed(p, r->op, tot, src, ex, names, &op);
        for (int i = 0; i < tot; i++)
            ex[i] = NULL;   /* taken */
        r->op = st == HS_OK ? op : NULL;
        for (int i = n0; i < tot && st == HS_OK; i++) {
            r->cols[i] = (qcol){NULL, hs_strdup(""), true};
            r->n = i + 1;
            if (!r->cols[i].name)
                st = pl_nomem(p);
        }
    }
    for (int i = 0; ex && i < tot; i++)
        ex_free(ex[i]);
    hs_free(ex);
    hs_free(names);
    hs_free(src);
    return st;
}

/* PostgreSQL's name of a column's type, for "function f(type) does not exist". */
static const char *type_name(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_BOOL: return "boolean";
    case HS_TYPE_INT8: case HS_TYPE_INT16: return "smallint";
    case HS_TYPE_INT32: return "integer";
    case HS_TYPE_INT64: return "bigint";
    case HS_TYPE_FLOAT32: return "real";
    case HS_TYPE_FLOAT64: return "double precision";
    case HS_TYPE_DECIMAL128: return "numeric";
    case HS_TYPE_STRING: return "text";
    case HS_TYPE_BINARY: return "bytea";
    case HS_TYPE_DATE32: return "date";
    case HS_TYPE_TIMESTAMP: return f->tz ? "timestamp with time zone" : "timestamp without time zone";
    case HS_TYPE_INTERVAL: return "interval";
    case HS_TYPE_STRUCT: return "record";
    default: return "unknown";
    }
}

/* unnest(ARRAY[e1, ..., en]): the elements, cast to their common type
 * (string literals take the type of the others, as PostgreSQL resolves
 * unknown literals), appended to args. */
static hs_status array_elems_flat(planner *p, const rel *r, const json_t *els, int at, const srf_env *env,
                                  json_t *args);

/* The elements of ARRAY[[...], ...] (A_ArrayExpr body arr) in row-major
 * order appended to out, as unnest reads a multidimensional array; *shape:
 * the sizes below this level as text, which every sibling must share
 * (else 2202E, PostgreSQL's ExecEvalArrayExpr).  A level mixing arrays and
 * scalars stays 0A000. */
static hs_status flat_elems(planner *p, const json_t *arr, json_t *out, hs_buf *shape, int depth)
{
    json_t *els = pl_jget(arr, "elements"), *e, *sub;
    size_t n = json_array_size(els), i, nsub = 0;
    json_array_foreach(els, i, e)
        nsub += pl_is_kind(e, "A_ArrayExpr", NULL);
    char num[32];
    snprintf(num, sizeof num, "%zu,", n);
    HS_TRY(hs_buf_append(shape, num, strlen(num)) == HS_OK ? HS_OK : pl_nomem(p));
    if (nsub == 0) {
        json_array_foreach(els, i, e)
            if (json_array_append(out, e) != 0)
                return pl_nomem(p);
        return HS_OK;
    }
    if (nsub != n || depth > 6)
        return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(arr, 0),
                       "unnest of multidimensional arrays is not supported");
    hs_buf first = {0};
    hs_status st = HS_OK;
    json_array_foreach(els, i, e) {
        pl_is_kind(e, "A_ArrayExpr", &sub);
        hs_buf mine = {0};
        st = flat_elems(p, sub, out, &mine, depth + 1);
        if (st == HS_OK && i == 0)
            st = hs_buf_append(&first, mine.data, mine.len) == HS_OK ? HS_OK : pl_nomem(p);
        else if (st == HS_OK && (mine.len != first.len || memcmp(mine.data, first.data, mine.len)))
            st = pl_fail(p, HS_INVALID, "2202E", pl_node_loc(e),
                         "multidimensional arrays must have array expressions with matching dimensions");
        hs_buf_free(&mine);
        if (st != HS_OK)
            break;
    }
    if (st == HS_OK)
        st = hs_buf_append(shape, first.data, first.len) == HS_OK ? HS_OK : pl_nomem(p);
    hs_buf_free(&first);
    return st;
}

static hs_status array_elems(planner *p, const rel *r, const json_t *arr, const srf_env *env, json_t *args)
{
    json_t *flat = json_array();
    hs_buf shape = {0};
    hs_status fs = flat ? flat_elems(p, arr, flat, &shape, 0) : pl_nomem(p);
    hs_buf_free(&shape);
    if (fs != HS_OK) {
        json_decref(flat);
        return fs;
    }
    hs_status st = array_elems_flat(p, r, flat, pl_first_loc(arr, 0), env, args);
    json_decref(flat);
    return st;
}

static hs_status array_elems_flat(planner *p, const rel *r, const json_t *els, int at, const srf_env *env,
                                  json_t *args)
{
    size_t n = json_array_size(els);
    if (n == 0)
        return pl_fail(p, HS_INVALID, "42P18", at, "cannot determine type of empty array");
    hs_field u;
    memset(&u, 0, sizeof u);
    u.type = HS_TYPE_NA;
    bool typed = false;
    for (size_t i = 0; i < n; i++)
        typed |= !string_literal(json_array_get(els, i));
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(els, i);
        if (typed && string_literal(e))
            continue;
        if (pl_is_kind(e, "A_ArrayExpr", NULL))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(e), "unnest of multidimensional arrays is not supported");
        hs_field t;
        HS_TRY(arg_type(p, r, e, env, &t));
        if (t.type == HS_TYPE_LIST || t.type == HS_TYPE_STRUCT || t.type == HS_TYPE_MAP ||
            t.type == HS_TYPE_FIXED_LIST)
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(e), "unnest of arrays of nested values is not supported");
        hs_field o;
        pl_unify_type(&u, &t, &o);
        u = o;
    }
    if (u.type == HS_TYPE_NA)
        u.type = HS_TYPE_STRING;   /* ARRAY[NULL, ...] is text[] */
    u.name = NULL;
    u.n_meta = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = pl_cast_json(json_array_get(els, i), &u);
        if (!c || json_array_append_new(args, c) != 0)
            return pl_nomem(p);
    }
    return HS_OK;
}

/* The kind of one call into f, its argument nodes (new references, cast
 * to the function's types; JSON null = absent) appended to args. */
static hs_status bind_call(planner *p, const rel *r, const json_t *call, const srf_env *env, xo_srf *f,
                           json_t *args_out)
{
    json_t *b;
    pl_is_kind(call, "FuncCall", &b);
    const char *nm = pl_func_name(b);
    json_t *args = pl_jget(b, "args");
    size_t na = json_array_size(args);
    int loc = pl_node_loc(call);
    if (pl_jget(b, "agg_order") || pl_jget(b, "agg_filter") || json_is_true(pl_jget(b, "agg_star")) ||
        json_is_true(pl_jget(b, "agg_distinct")) || json_is_true(pl_jget(b, "func_variadic")))
        return pl_fail(p, HS_INVALID, "42809", loc, "%s is not an aggregate function", nm);
    f->arg[0] = f->arg[1] = f->arg[2] = -1;
    json_t *sb;
    if (!strcmp(nm, "unnest") && na == 1 && pl_is_kind(json_array_get(args, 0), "FuncCall", &sb) &&
        !strcmp(pl_func_name(sb) ? pl_func_name(sb) : "", "string_to_array")) {
        /* unnest(string_to_array(...)) is string_to_table(...) */
        b = sb;
        args = pl_jget(b, "args");
        na = json_array_size(args);
        nm = "string_to_table";
    }
    if (!strcmp(nm, "string_to_table")) {
        if (na < 2 || na > 3)
            return pl_fail(p, HS_NOT_FOUND, "42883", loc, "function %s with %zu arguments does not exist",
                           nm, na);
        f->kind = XO_SRF_SPLIT;
        for (size_t i = 0; i < na; i++) {
            json_t *c = cast_named(json_array_get(args, i), "text");
            if (!c || json_array_append_new(args_out, c) != 0)
                return pl_nomem(p);
        }
        if (na == 2 && json_array_append_new(args_out, json_null()) != 0)
            return pl_nomem(p);
        return HS_OK;
    }
    if (!strcmp(nm, "unnest")) {
        if (na != 1)
            return pl_fail(p, HS_UNSUPPORTED, "0A000", loc,
                           "unnest with %zu arguments is supported in FROM only", na);
        f->kind = XO_SRF_UNNEST;
        json_t *a = json_array_get(args, 0), *ab;
        if (pl_is_kind(a, "A_ArrayExpr", &ab)) {
            f->kind = XO_SRF_VALUES;
            return array_elems(p, r, ab, env, args_out);
        }
        if (pl_is_kind(a, "TypeCast", &ab) && pl_is_kind(pl_jget(ab, "arg"), "A_ArrayExpr", &ab)) {
            /* ARRAY[...]::type[]: the elements cast to the element type */
            json_t *tn = json_deep_copy(pl_jget(pl_jget(a, "TypeCast"), "typeName"));
            if (!tn || json_object_del(tn, "arrayBounds") != 0) {
                json_decref(tn);
                return tn ? pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(a),
                                    "unnest of this array expression is not supported")
                          : pl_nomem(p);
            }
            json_t *els = json_array();
            json_t *src = pl_jget(ab, "elements");
            for (size_t i = 0; els && i < json_array_size(src); i++)
                json_array_append_new(els, json_pack("{s:{s:O,s:O,s:i}}", "TypeCast", "arg",
                                                     json_array_get(src, i), "typeName", tn, "location", -1));
            json_decref(tn);
            json_t *arr = els ? json_pack("{s:o,s:i}", "elements", els, "location", pl_node_loc(a)) : NULL;
            if (!arr)
                return pl_nomem(p);
            f->kind = XO_SRF_VALUES;
            hs_status st = array_elems(p, r, arr, env, args_out);
            json_decref(arr);
            return st;
        }
        hs_field at;
        HS_TRY(arg_type(p, r, a, env, &at));   /* '{a,b}'::text[], text[] expressions: lists */
        json_t *cb;
        bool non_array_cast = pl_is_kind(a, "TypeCast", &cb) &&   /* '[1,2]'::vector is not an array */
                              !json_array_size(pl_jget(pl_jget(cb, "typeName"), "arrayBounds"));
        if ((at.type != HS_TYPE_LIST && at.type != HS_TYPE_FIXED_LIST) || non_array_cast)
            return pl_fail(p, HS_NOT_FOUND, "42883", loc, "function unnest(%s) does not exist",
                           type_name(&at));
        return json_array_append(args_out, a) == 0 ? HS_OK : pl_nomem(p);
    }
    /* generate_series */
    if (na < 2 || na > 3)
        return pl_fail(p, HS_NOT_FOUND, "42883", loc, "function generate_series with %zu arguments does not exist", na);
    const json_t *an[3] = {json_array_get(args, 0), json_array_get(args, 1), na > 2 ? json_array_get(args, 2) : NULL};
    /* the kind: from the first argument that is not a bare string literal */
    int typed = -1;
    for (int i = 0; i < 2 && typed < 0; i++)
        if (!string_literal(an[i]))
            typed = i;
    if (typed < 0)
        return pl_fail(p, HS_INVALID, "42725", loc, "function generate_series(unknown, unknown) is not unique");
    hs_field t0f;
    HS_TRY(arg_type(p, r, an[typed], env, &t0f));
    const hs_field *t0 = &t0f;
    const char *to = NULL, *step_to = NULL;
    switch (t0->type) {
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
        to = "int4";
        break;
    case HS_TYPE_TIMESTAMP:
        to = t0->tz ? "timestamptz" : "timestamp";
        step_to = "interval";
        break;
    case HS_TYPE_DATE32:
        to = "timestamptz";
        step_to = "interval";
        break;
    case HS_TYPE_DECIMAL128:
        to = "numeric";
        break;
    default:
        return pl_fail(p, HS_NOT_FOUND, "42883", loc, "function generate_series(%s, ...) does not exist",
                       type_name(t0));
    }
    hs_field dec;   /* numeric series: the arguments' common decimal(38, s) */
    memset(&dec, 0, sizeof dec);
    dec.type = HS_TYPE_DECIMAL128;
    dec.precision = 38;
    if (!step_to) {
        /* integers: int8 when any argument is bigint (literals too large
         * for int4 are); numeric when any is numeric */
        for (int i = 0; i < (int)na; i++) {
            hs_field af;
            if (string_literal(an[i]))
                continue;
            HS_TRY(arg_type(p, r, an[i], env, &af));
            hs_type t = af.type;
            if (t == HS_TYPE_INT64 && strcmp(to, "numeric"))
                to = "int8";
            else if (t == HS_TYPE_DECIMAL128) {
                to = "numeric";
                if (af.scale > dec.scale)
                    dec.scale = af.scale;
            } else if (t != HS_TYPE_INT8 && t != HS_TYPE_INT16 && t != HS_TYPE_INT32 && t != HS_TYPE_INT64)
                return pl_fail(p, HS_NOT_FOUND, "42883", pl_node_loc(an[i]),
                               "function generate_series(%s, ...) does not exist", type_name(&af));
        }
    } else if (na < 3) {
        return pl_fail(p, HS_NOT_FOUND, "42883", loc,
                       "function generate_series(%s, %s) does not exist", to, to);
    }
    bool numeric = !strcmp(to, "numeric");
    f->kind = step_to ? XO_SRF_SERIES_TS : numeric ? XO_SRF_SERIES_DEC : XO_SRF_SERIES_INT;
    for (int i = 0; i < (int)na; i++) {
        const char *want = i == 2 && step_to ? step_to : to;
        json_t *c = numeric ? pl_cast_json((json_t *)an[i], &dec) : cast_named((json_t *)an[i], want);
        if (!c || json_array_append_new(args_out, c) != 0)
            return pl_nomem(p);
    }
    if (na == 2) {
        /* a numeric series's step of 1 at the arguments' scale */
        json_t *one = numeric ? pl_mk_int(1) : NULL;
        json_t *step = numeric ? (one ? pl_cast_json(one, &dec) : NULL) : json_null();
        json_decref(one);
        if (!step || json_array_append_new(args_out, step) != 0)
            return pl_nomem(p);
    }
    return HS_OK;
}

/* Adds a ProjectSet of the n calls over r (its new columns named "" and
 * hidden; the caller names them); *first = the first new column. */
static hs_status add_projset(planner *p, rel *r, json_t *const *calls, int n, bool ord, bool outer,
                             const srf_env *env, int *first)
{
    xo_srf fs[SRF_MAX];
    if (n > SRF_MAX)
        return pl_fail(p, HS_UNSUPPORTED, "54000", pl_node_loc(calls[SRF_MAX]),
                       "more than %d set-returning functions in one list", SRF_MAX);
    json_t *args[SRF_MAX] = {0};
    json_t *all = json_array();
    int *cols = NULL;
    hs_status st = all ? HS_OK : pl_nomem(p);
    for (int i = 0; i < n && st == HS_OK; i++) {
        memset(&fs[i], 0, sizeof fs[i]);
        args[i] = json_array();
        st = args[i] ? bind_call(p, r, calls[i], env, &fs[i], args[i]) : pl_nomem(p);
        for (size_t k = 0; st == HS_OK && k < json_array_size(args[i]); k++)
            if (!json_is_null(json_array_get(args[i], k)) && json_array_append(all, json_array_get(args[i], k)) != 0)
                st = pl_nomem(p);
    }
    /* every argument's column (one projection computes those not there) */
    size_t na = json_array_size(all);
    json_t **nodes = hs_calloc(na + 1, sizeof *nodes);
    cols = hs_calloc(na + 1, sizeof *cols);
    if (st == HS_OK && (!nodes || !cols))
        st = pl_nomem(p);
    for (size_t k = 0; st == HS_OK && k < na; k++)
        nodes[k] = json_array_get(all, k);
    if (st == HS_OK)
        st = add_cols(p, r, nodes, (int)na, env, cols);
    int at = 0;
    for (int i = 0; i < n && st == HS_OK; i++) {
        size_t m = json_array_size(args[i]);
        if (fs[i].kind == XO_SRF_VALUES) {
            fs[i].vals = cols + at;
            fs[i].n_vals = (int)m;
            at += (int)m;
            continue;
        }
        for (size_t k = 0; k < m && k < 3; k++)
            fs[i].arg[k] = json_is_null(json_array_get(args[i], k)) ? -1 : cols[at++];
    }
    for (int i = 0; i < n; i++)
        json_decref(args[i]);
    json_decref(all);
    hs_free(nodes);
    if (st != HS_OK) {
        hs_free(cols);
        return st;
    }
    xo_op *op;
    st = xo_projset(r->op, n, fs, ord, outer, &op, p->err);
    hs_free(cols);
    r->op = st == HS_OK ? op : NULL;
    HS_TRY(st);
    int add = n + (ord ? 1 : 0);
    qcol *nc = hs_realloc(r->cols, (size_t)(r->n + add + 1) * sizeof *nc);
    if (!nc)
        return pl_nomem(p);
    r->cols = nc;
    *first = r->n;
    for (int i = 0; i < add; i++) {
        r->cols[r->n] = (qcol){NULL, hs_strdup(""), true};
        if (!r->cols[r->n].name)
            return pl_nomem(p);
        r->n++;
    }
    return HS_OK;
}

/* ---- select list ---- */

/* SRF calls nested inside another SRF's or an aggregate's arguments: 0A000. */
static hs_status check_nesting(planner *p, const json_t *j, int in_srf, int depth)
{
    if (!j || depth > 400)
        return HS_OK;
    if (json_is_object(j)) {
        if (json_object_get(j, "SubLink"))
            return HS_OK;
        json_t *b;
        if (pl_is_kind(j, "FuncCall", &b)) {
            bool srf = is_srf_call(j);
            if (srf && in_srf)
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(j),
                               in_srf == 2 ? "aggregate function calls cannot contain set-returning function calls"
                                           : "set-returning functions nested in set-returning functions are not supported");
            if (pl_jget(b, "over") && srf_name(pl_func_name(b)))
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(j),
                               "window function call requires an OVER clause");
            int inner = srf ? 1 : pl_is_agg_call(j) || pl_jget(b, "over") ? 2 : in_srf;
            return check_nesting(p, pl_jget(b, "args"), inner, depth + 1);
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            HS_TRY(check_nesting(p, v, in_srf, depth + 1));
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            HS_TRY(check_nesting(p, v, in_srf, depth + 1));
    }
    return HS_OK;
}

bool pl_has_srf(const json_t *j)
{
    json_t *arr = json_array();
    if (!arr)
        return false;
    pl_collect_calls(j, arr, is_srf_call, 0);
    bool any = json_array_size(arr) > 0;
    json_decref(arr);
    return any;
}

hs_status pl_srf_select(planner *p, rel *cur, const json_t *tl, nmap *m, const layer *pre,
                        const int *key_of_col)
{
    json_t *calls = json_array();
    if (!calls)
        return pl_nomem(p);
    pl_collect_calls(tl, calls, is_srf_call, 0);
    size_t n = json_array_size(calls);
    hs_status st = HS_OK;
    if (n > 0)
        st = check_nesting(p, tl, 0, 0);
    if (st == HS_OK && n > 0) {
        json_t *arr[SRF_MAX + 1];
        for (size_t i = 0; i < n && i <= SRF_MAX; i++)
            arr[i] = json_array_get(calls, i);
        srf_env env = {m, pre, key_of_col};
        int first;
        st = add_projset(p, cur, arr, (int)n, false, false, &env, &first);
        for (size_t i = 0; i < n && st == HS_OK; i++)
            st = pl_nmap_add(p, m, arr[i], first + (int)i);
    }
    json_decref(calls);
    return st;
}

/* ---- FROM ---- */

static pl_walk_res visit_colref(const json_t *j, void *ctx)
{
    (void)ctx;
    if (json_object_get(j, "ColumnRef"))
        return PL_STOP;
    return json_object_get(j, "SubLink") ? PL_SKIP : PL_DESCEND;
}

/* Whether j reads a column (outside subqueries). */
static bool reads_columns(const json_t *j, int depth)
{
    return pl_walk(j, visit_colref, NULL, depth);
}

/* The calls of a RangeFunction (one, or ROWS FROM's several). */
static hs_status rf_calls(planner *p, const json_t *rf, json_t **calls, int *n)
{
    json_t *fns = pl_jget(rf, "functions");
    *n = 0;
    for (size_t i = 0; i < json_array_size(fns); i++) {
        json_t *items = pl_jget(pl_jget(json_array_get(fns, i), "List"), "items");
        json_t *call = json_array_get(items, 0);
        json_t *cdl = json_array_get(items, 1);
        if (cdl && json_array_size(cdl) > 0)
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(rf, 0),
                           "a column definition list is only allowed for functions returning \"record\"");
        json_t *b;
        if (!pl_is_kind(call, "FuncCall", &b) || !srf_name(pl_func_name(b)))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(rf, 0),
                           "only unnest and generate_series are supported in FROM");
        if (*n >= SRF_MAX)
            return pl_fail(p, HS_UNSUPPORTED, "54000", pl_first_loc(rf, 0), "too many functions in ROWS FROM");
        /* unnest(a, b, ...) in FROM: one unnest per argument, in lockstep */
        json_t *args = pl_jget(b, "args");
        if (!strcmp(pl_func_name(b), "unnest") && json_array_size(args) > 1 &&
            !json_is_true(pl_jget(rf, "is_rowsfrom"))) {
            for (size_t k = 0; k < json_array_size(args); k++) {
                if (*n >= SRF_MAX)
                    return pl_fail(p, HS_UNSUPPORTED, "54000", pl_first_loc(rf, 0), "too many unnest arguments");
                json_t *one = json_deep_copy(call);
                json_t *ob = one ? json_object_get(one, "FuncCall") : NULL;
                json_t *a1 = json_pack("[O]", json_array_get(args, k));
                if (!ob || !a1 || json_object_set_new(ob, "args", a1) != 0) {
                    json_decref(one);
                    return pl_nomem(p);
                }
                calls[(*n)++] = one;
            }
            continue;
        }
        calls[(*n)++] = json_incref(call);
    }
    if (*n == 0)
        return pl_fail(p, HS_INTERNAL, "XX000", pl_first_loc(rf, 0), "malformed function in FROM");
    return HS_OK;
}

/* Names the function columns [first, first + n_out) of r as FROM item rf
 * names them (alias, column aliases, function names). */
static hs_status name_outputs(planner *p, rel *r, const json_t *rf, json_t *const *calls, int n,
                              int first)
{
    bool ord = json_is_true(pl_jget(rf, "ordinality"));
    int n_out = n + (ord ? 1 : 0);
    json_t *alias = pl_jget(rf, "alias");
    const char *an = alias ? pl_jstrv(alias, "aliasname") : NULL;
    json_t *colnames = alias ? pl_jget(alias, "colnames") : NULL;
    size_t nc = json_array_size(colnames);
    if ((int)nc > n_out)
        return pl_fail(p, HS_INVALID, "42P10", pl_first_loc(rf, 0),
                       "table \"%s\" has %d columns available but %zu columns specified",
                       an ? an : "?", n_out, nc);
    const char *qual = an;
    if (!qual) {
        json_t *b;
        pl_is_kind(calls[0], "FuncCall", &b);
        qual = pl_func_name(b);
    }
    for (int i = 0; i < n_out; i++) {
        const char *nm;
        if ((size_t)i < nc)
            nm = sq_str(json_array_get(colnames, i));
        else if (ord && i == n)
            nm = "ordinality";
        else if (an && n == 1 && nc == 0)
            nm = an;   /* a function returning one column takes the alias's name */
        else {
            json_t *b;
            pl_is_kind(calls[i], "FuncCall", &b);
            nm = pl_func_name(b);
        }
        qcol *c = &r->cols[first + i];
        hs_free(c->qual);
        hs_free(c->name);
        c->qual = hs_strdup(qual);
        c->name = hs_strdup(nm ? nm : "");
        c->hidden = false;
        if (!c->qual || !c->name)
            return pl_nomem(p);
    }
    return HS_OK;
}

/* Applies FROM function item rf over r (lateral: r holds the other FROM
 * items' rows; otherwise r is one row of no columns). */
static hs_status apply_rf(planner *p, rel *r, const json_t *rf, bool outer)
{
    json_t *calls[SRF_MAX + 1] = {0};
    int n = 0;
    hs_status st = rf_calls(p, rf, calls, &n);
    for (int i = 0; i < n && st == HS_OK; i++)
        st = check_nesting(p, pl_jget(pl_jget(calls[i], "FuncCall"), "args"), 1, 0);
    int first = 0;
    bool ord = json_is_true(pl_jget(rf, "ordinality"));
    srf_env env = {0};
    if (st == HS_OK)
        st = add_projset(p, r, calls, n, ord, outer, &env, &first);
    if (st == HS_OK)
        st = name_outputs(p, r, rf, calls, n, first);
    for (int i = 0; i < n; i++)
        json_decref(calls[i]);
    return st;
}

hs_status pl_srf_from_item(planner *p, const json_t *rf, rel *out)
{
    memset(out, 0, sizeof *out);
    hs_field sch;
    hs_field_init(&sch, "", HS_TYPE_STRUCT, false);
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&sch, 1, &b, p->err);
    if (st == HS_OK) {
        b->n_rows = 1;
        st = xo_values(p->ctx, &sch, 1, &b, &out->op, p->err);
    }
    hs_field_clear(&sch);
    if (st == HS_OK)
        st = apply_rf(p, out, rf, false);
    if (st != HS_OK)
        return st;
    /* only the function's columns remain */
    int n = 0;
    for (int i = 0; i < out->n; i++)
        n += !out->cols[i].hidden;
    int *src = hs_calloc((size_t)n + 1, sizeof *src);
    ex_expr **ex = hs_calloc((size_t)n + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)n + 1, sizeof *names);
    qcol *cols = hs_calloc((size_t)n + 1, sizeof *cols);
    st = src && ex && names && cols ? HS_OK : pl_nomem(p);
    int k = 0;
    for (int i = 0; i < out->n && st == HS_OK; i++) {
        if (out->cols[i].hidden)
            continue;
        src[k] = i;
        names[k] = out->cols[i].name;
        cols[k] = out->cols[i];
        out->cols[i] = (qcol){0};
        k++;
    }
    xo_op *op = NULL;
    if (st == HS_OK)
        st = pl_project_mixed(p, out->op, n, src, ex, names, &op);
    if (st == HS_OK) {
        out->op = op;
        pl_qcols_free(out->cols, out->n);
        out->cols = cols;
        out->n = n;
        cols = NULL;
    } else {
        out->op = NULL;
    }
    if (cols)
        pl_qcols_free(cols, n);
    hs_free(src);
    hs_free(ex);
    hs_free(names);
    return st;
}

bool pl_srf_is_lateral(const json_t *item)
{
    json_t *b;
    return pl_is_kind(item, "RangeFunction", &b) && reads_columns(pl_jget(b, "functions"), 0);
}

/* The RangeSubselect body to run per row for `JOIN LATERAL (sub) a ON q`:
 * rs itself for ON true, else (SELECT * FROM (sub) a WHERE q) a, so that a
 * LEFT join's condition decides which of the subquery's rows match (and a
 * row with none gets NULLs).  *out a new reference. */
static hs_status lateral_on(planner *p, json_t *rs, json_t *q, json_t **out)
{
    json_t *qb;
    bool qtrue = !q || (pl_is_kind(q, "A_Const", &qb) && pl_jget(qb, "boolval") &&
                        json_is_true(pl_jget(pl_jget(qb, "boolval"), "boolval")));
    if (qtrue) {
        *out = json_incref(rs);
        return HS_OK;
    }
    json_t *inner = json_deep_copy(rs);
    if (inner)
        json_object_del(inner, "hs_lateral_apply");
    json_t *al = pl_jget(rs, "alias");
    const char *an = al ? pl_jstrv(al, "aliasname") : NULL;
    *out = inner && an ? json_pack("{s:{s:{s:[{s:{s:{s:{s:[{s:{}}],s:i}},s:i}}],s:[{s:o}],s:O,s:s,s:s}},"
                                   "s:{s:s}}",
                                   "subquery", "SelectStmt", "targetList", "ResTarget", "val", "ColumnRef",
                                   "fields", "A_Star", "location", -1, "location", -1,
                                   "fromClause", "RangeSubselect", inner, "whereClause", q,
                                   "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE",
                                   "alias", "aliasname", an)
                       : NULL;
    if (!an)
        json_decref(inner);
    return *out ? HS_OK : pl_nomem(p);
}

/* Whether a JoinExpr holds a LATERAL subquery marked to run per row. */
static bool apply_inside(const json_t *item, int depth)
{
    json_t *b;
    if (depth > 100)
        return false;
    if (pl_is_kind(item, "RangeSubselect", &b))
        return json_is_true(pl_jget(b, "hs_lateral_apply"));
    if (pl_is_kind(item, "JoinExpr", &b))
        return apply_inside(pl_jget(b, "larg"), depth + 1) || apply_inside(pl_jget(b, "rarg"), depth + 1);
    return false;
}

hs_status pl_srf_split_from(planner *p, const json_t *from, json_t **rest, json_t **lateral)
{
    *rest = json_array();
    *lateral = json_array();
    if (!*rest || !*lateral)
        return pl_nomem(p);
    bool seen_lateral = false;
    for (size_t i = 0; i < json_array_size(from); i++) {
        json_t *it = json_array_get(from, i), *b;
        json_t *rs = NULL;
        if (pl_is_kind(it, "RangeSubselect", &rs) && json_is_true(pl_jget(rs, "hs_lateral_apply"))) {
            /* `, LATERAL (subquery)` run per row (plan_apply.c) */
            seen_lateral = true;
            if (i == 0 && !p->outer_row)
                return pl_fail(p, HS_INVALID, "42P01", pl_first_loc(it, 0),
                               "invalid reference to FROM-clause entry: a LATERAL subquery reads columns of no earlier item");
            json_array_append_new(*lateral, json_pack("{s:O,s:b}", "sub", rs, "outer", 0));
            continue;
        }
        if (pl_is_kind(it, "JoinExpr", &b) && pl_is_kind(pl_jget(b, "rarg"), "RangeSubselect", &rs) &&
            json_is_true(pl_jget(rs, "hs_lateral_apply"))) {
            const char *jt = pl_jstrv(b, "jointype");
            bool outer = jt && !strcmp(jt, "JOIN_LEFT");
            if (seen_lateral)
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(it, 0),
                               "a FROM item after a lateral function is not supported");
            if (pl_jget(b, "usingClause") || json_is_true(pl_jget(b, "isNatural")))
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(it, 0),
                               "USING and NATURAL with a LATERAL subquery are not supported");
            json_t *item = NULL, *lb;
            HS_TRY(lateral_on(p, rs, pl_jget(b, "quals"), &item));
            json_t *l = pl_jget(b, "larg");
            if (pl_is_kind(l, "RangeSubselect", &lb) && json_is_true(pl_jget(lb, "hs_lateral_apply")))
                /* `, LATERAL (...) x JOIN LATERAL (...) y`: x per row first */
                json_array_append_new(*lateral, json_pack("{s:O,s:b}", "sub", lb, "outer", 0));
            else
                json_array_append(*rest, l);
            seen_lateral = true;
            json_array_append_new(*lateral, json_pack("{s:o,s:b}", "sub", item, "outer", outer));
            continue;
        }
        if (pl_srf_is_lateral(it)) {
            seen_lateral = true;
            if (i == 0 && !p->outer_row)
                return pl_fail(p, HS_INVALID, "42P01", pl_first_loc(it, 0),
                               "invalid reference to FROM-clause entry: a function in FROM reads columns of no earlier item");
            json_array_append_new(*lateral, json_pack("{s:O,s:b}", "rf", pl_jget(it, "RangeFunction"), "outer", 0));
            continue;
        }
        if (pl_is_kind(it, "JoinExpr", &b) && pl_srf_is_lateral(pl_jget(b, "rarg"))) {
            const char *jt = pl_jstrv(b, "jointype");
            bool outer = jt && !strcmp(jt, "JOIN_LEFT");
            bool inner = !jt || !strcmp(jt, "JOIN_INNER");
            json_t *q = pl_jget(b, "quals"), *qb;
            bool qtrue = !q || (pl_is_kind(q, "A_Const", &qb) && pl_jget(qb, "boolval") &&
                                json_is_true(pl_jget(pl_jget(qb, "boolval"), "boolval")));
            bool plain = (inner || outer) && qtrue && !pl_jget(b, "usingClause") &&
                         !json_is_true(pl_jget(b, "isNatural"));
            if (!plain && p->outer_row && !seen_lateral) {
                /* under an Apply (plan_apply.c): a join whose function
                 * reads the enclosing row is an ordinary FROM item */
                json_array_append(*rest, it);
                continue;
            }
            if (!plain)
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(it, 0),
                               "a lateral function is supported in [CROSS | INNER | LEFT] JOIN ... ON true only");
            if (seen_lateral)
                return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(it, 0),
                               "a FROM item after a lateral function is not supported");
            seen_lateral = true;
            json_array_append(*rest, pl_jget(b, "larg"));
            json_array_append_new(*lateral, json_pack("{s:O,s:b}", "rf",
                                                      pl_jget(pl_jget(b, "rarg"), "RangeFunction"), "outer", outer));
            continue;
        }
        /* a plain item after a lateral one: comma items join in any order,
         * so it joins the rest first, when no '*' shows the order (a plain
         * item cannot read the lateral one's columns) */
        if (seen_lateral && (p->all_columns || apply_inside(it, 0) || p->outer_row))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(it, 0),
                           "a FROM item after a lateral function is not supported (list the functions last)");
        if (apply_inside(it, 0))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(it, 0),
                           "a LATERAL subquery that runs per row is supported as the last FROM items only "
                           "(not inside another join)");
        json_array_append(*rest, it);
    }
    return HS_OK;
}

hs_status pl_srf_apply_lateral(planner *p, rel *cur, const json_t *lateral)
{
    for (size_t i = 0; i < json_array_size(lateral); i++) {
        json_t *l = json_array_get(lateral, i);
        if (pl_jget(l, "sub"))
            HS_TRY(pl_apply_lateral(p, cur, pl_jget(l, "sub"), json_is_true(pl_jget(l, "outer"))));
        else
            HS_TRY(apply_rf(p, cur, pl_jget(l, "rf"), json_is_true(pl_jget(l, "outer"))));
    }
    return HS_OK;
}
