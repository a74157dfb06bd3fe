/*
 * sql/dml_rows.c - the rows UPDATE, DELETE and MERGE work on: name scopes,
 * the target's rows, assignment casts, the source and its joins with the
 * target, subqueries in expressions, and writing the changed rows (the
 * row delta itself is dml.c's transaction).
 *
 * The target of UPDATE / DELETE / MERGE is read into memory (the table's
 * columns, _file, _pos, _row_id), with the transaction's deletes removed
 * and its added rows appended (their _file is null, their _pos the index in
 * the buffer).  Without a join, the WHERE is pushed into the scan as filter
 * text (when the scan's parser reads it back) and only the rows it holds
 * for are kept; with a join, the source is read first and its keys narrow
 * the target's scan (semijoin_text).  Joins (MERGE's ON, UPDATE ... FROM,
 * DELETE ... USING) hash on the equality conjuncts between a target column
 * and a source column, then evaluate the whole condition on the candidate
 * pairs; without such conjuncts every pair is evaluated.  The source is any
 * FROM item, planned as SELECT * FROM item (sq_plan_query).
 *
 * Assignment (INSERT values, SET, MERGE's UPDATE/INSERT) casts to the
 * column's type as CAST does; PostgreSQL's assignment rules refuse some
 * casts that CAST allows (text expression into integer, boolean into
 * integer and back): those are 42804 here too, except that INSERT accepts
 * text for any column type (VALUES literals are typed text by the planner).
 * A null into a required column is 23502.
 */
#include "sql/dml_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* name scopes                                                         */

void dml_dscope_clear(dscope *s)
{
    hs_free(s->cols);
    hs_field_clear(&s->schema);
    memset(s, 0, sizeof *s);
}

/* Adds the children of schema, qualified by qual (borrowed), the last
 * n_hidden of them hidden. */
hs_status dml_dscope_add(dscope *s, const hs_field *schema, const char *qual, int n_hidden,
                         hs_error *err)
{
    if (!s->schema.type)
        hs_field_init(&s->schema, "", HS_TYPE_STRUCT, false);
    int n = schema->n_children;
    dcol *c = hs_realloc(s->cols, (size_t)(s->n + n + 1) * sizeof *c);
    if (!c)
        return hs_err_nomem(err, 64);
    s->cols = c;
    for (int i = 0; i < n; i++) {
        HS_TRY(dml_push_field(&s->schema, &schema->children[i], NULL, err));
        s->cols[s->n] = (dcol){qual, schema->children[i].name, i >= n - n_hidden};
        s->n++;
    }
    dml_renumber(&s->schema);
    /* names point into s->schema (stable: children are not reallocated
     * below this point by callers that keep using the scope) */
    for (int i = 0; i < s->n; i++)
        s->cols[i].name = s->schema.children[i].name;
    return HS_OK;
}

static int dscope_column(void *ctx, const char *const *names, int n)
{
    const dscope *s = ctx;
    const char *qual = n >= 2 ? names[n - 2] : NULL;
    const char *name = names[n - 1];
    int found = -1;
    for (int pass = 0; pass < 2 && found < 0; pass++) {
        for (int i = 0; i < s->n; i++) {
            const dcol *c = &s->cols[i];
            if (c->hidden)
                continue;
            if (qual && (!c->qual || strcmp(c->qual, qual) != 0))
                continue;
            bool eq = pass == 0 ? strcmp(c->name, name) == 0 : strcasecmp(c->name, name) == 0;
            if (!eq)
                continue;
            if (found >= 0)
                return -2;
            found = i;
        }
    }
    return found;
}

ex_scope dml_scope_of(dscope *s)
{
    ex_scope sc = {&s->schema, dscope_column, NULL, s};
    return sc;
}

/* ------------------------------------------------------------------ */
/* the target: its rows with _file, _pos, _row_id                      */

void dml_target_clear(target *g)
{
    hs_batch_free(g->rows);
    memset(g, 0, sizeof *g);
}

const char *dml_rel_qual(const json_t *rv)
{
    json_t *al = json_object_get(rv, "alias");
    const char *a = al ? dml_jstr(al, "aliasname") : NULL;
    return a ? a : dml_jstr(rv, "relname");
}

/* The schema of target rows (table columns + hidden metadata columns). */
static hs_status target_schema(const txn *x, hs_field *out, hs_error *err)
{
    hs_field_init(out, "", HS_TYPE_STRUCT, false);
    for (int i = 0; i < x->tschema.n_children; i++)
        HS_TRY(dml_push_field(out, &x->tschema.children[i], NULL, err));
    hs_field f;
    hs_field_init(&f, "_file", HS_TYPE_STRING, true);
    if (hs_field_add_child(out, &f) != HS_OK)
        return hs_err_nomem(err, 64);
    hs_field_init(&f, "_pos", HS_TYPE_INT64, true);
    if (hs_field_add_child(out, &f) != HS_OK)
        return hs_err_nomem(err, 64);
    hs_field_init(&f, "_row_id", HS_TYPE_INT64, true);
    if (hs_field_add_child(out, &f) != HS_OK)
        return hs_err_nomem(err, 64);
    dml_renumber(out);
    return HS_OK;
}

/* Reads the target rows the transaction sees (filter: pushed-down text or
 * NULL; rows not matching it may still come back). */
hs_status dml_target_load(dctx *c, txn *x, target *g, const char *filter,
                          const ex_expr *keep_expr, hs_error *err)
{
    int nt = x->tschema.n_children;
    g->nt = nt;
    hs_field schema;
    HS_TRY(target_schema(x, &schema, err));
    hs_status st = hs_batch_create(&schema, 0, &g->rows, err);
    if (st == HS_OK && x->read_snap >= 0) {
        const char **cols = hs_calloc((size_t)nt + 3, sizeof *cols);
        if (!cols)
            st = hs_err_nomem(err, 64);
        for (int i = 0; st == HS_OK && i < nt; i++)
            cols[i] = x->tschema.children[i].name;
        struct ArrowArrayStream s;
        if (st == HS_OK) {
            cols[nt] = "_file";
            cols[nt + 1] = "_pos";
            cols[nt + 2] = "_row_id";
            hs_scan_options o = HS_SCAN_OPTIONS_INIT;
            o.use_snapshot_id = 1;
            o.snapshot_id = x->read_snap;
            o.columns = cols;
            o.n_columns = nt + 3;
            o.filter = filter;
            st = hs_table_scan(x->t, &o, &s, err);
            if (st != HS_OK && filter) {   /* the pushed-down text did not bind: read all */
                hs_err_clear(err);
                o.filter = NULL;
                st = hs_table_scan(x->t, &o, &s, err);
            }
        }
        hs_free(cols);
        hs_batch_source src = {0};
        if (st == HS_OK)
            st = hs_arrow_import_stream(&s, &src, err);
        while (st == HS_OK && (st = dml_check_cancel(c, err)) == HS_OK) {
            hs_batch *b = NULL;
            st = src.next(src.ctx, &b, err);
            if (st != HS_OK || !b)
                break;
            /* drop rows this transaction deleted */
            int64_t *keep = hs_malloc((size_t)b->n_rows * 8 + 8);
            int64_t m = 0;
            if (!keep)
                st = hs_err_nomem(err, (size_t)b->n_rows * 8);
            const hs_column *fc = b->cols[nt], *pc = b->cols[nt + 1];
            for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++) {
                const int32_t *off = HS_COL_OFFSETS(fc);
                char path[4096];
                size_t len = (size_t)(off[i + 1] - off[i]);
                if (len >= sizeof path)
                    len = sizeof path - 1;
                memcpy(path, fc->values.data + off[i], len);
                path[len] = 0;
                if (!dml_txn_deleted(x, path, (uint32_t)HS_COL_VALUES(pc, int64_t)[i]))
                    keep[m++] = i;
            }
            /* the surviving rows under the target's schema (positional
             * ids), then only those keep_expr holds for */
            hs_column **tcols = st == HS_OK ? hs_calloc((size_t)b->n_cols + 1, sizeof *tcols)
                                            : NULL;
            hs_batch *tb = NULL;
            if (st == HS_OK && !tcols)
                st = hs_err_nomem(err, 64);
            if (st == HS_OK)
                st = dml_take_cols(b, 0, b->n_cols, keep, m, tcols, err);
            if (st == HS_OK)
                st = dml_mk_batch(&schema, tcols, b->n_cols, m, &tb, err);
            hs_free(tcols);
            if (st == HS_OK && keep_expr && m > 0) {
                uint8_t *sel = hs_malloc((size_t)m);
                int64_t mm = 0;
                if (!sel)
                    st = hs_err_nomem(err, (size_t)m);
                if (st == HS_OK)
                    st = ex_eval_filter(keep_expr, tb, NULL, sel, &mm, err);
                int64_t k2 = 0;
                for (int64_t i = 0; st == HS_OK && i < m; i++)
                    if (sel[i])
                        keep[k2++] = i;
                for (int c = 0; st == HS_OK && c < tb->n_cols; c++) {
                    hs_column *tc = NULL;
                    st = hs_col_take(tb->cols[c], keep, k2, &tc, err);
                    if (st == HS_OK)
                        st = hs_col_append_column(g->rows->cols[c], tc, err);
                    hs_col_free(tc);
                }
                if (st == HS_OK)
                    g->rows->n_rows += k2;
                hs_free(sel);
            } else if (st == HS_OK) {
                st = dml_batch_append(&g->rows, tb, err);
            }
            hs_batch_free(tb);
            hs_free(keep);
            hs_batch_free(b);
        }
        if (src.close)
            src.close(src.ctx);
        hs_field_clear(&src.schema);
    }
    /* the transaction's added rows: _file null, _pos = index */
    for (size_t i = 0; st == HS_OK && x->added && i < x->added_dead.len; i++) {
        if (x->added_dead.data[i])
            continue;
        int64_t idx = (int64_t)i, one = -1;
        for (int c = 0; st == HS_OK && c < nt; c++) {
            hs_column *tc = NULL;
            st = hs_col_take(x->added->cols[c], &idx, 1, &tc, err);
            if (st == HS_OK)
                st = hs_col_append_column(g->rows->cols[c], tc, err);
            hs_col_free(tc);
        }
        hs_column *rid = NULL;
        if (st == HS_OK)
            st = hs_col_take(x->added->cols[nt], &idx, 1, &rid, err);
        if (st == HS_OK && (hs_col_append_null(g->rows->cols[nt]) != HS_OK ||
                            hs_col_append_fixed(g->rows->cols[nt + 1], &idx) != HS_OK))
            st = hs_err_nomem(err, 8);
        if (st == HS_OK)
            st = hs_col_append_column(g->rows->cols[nt + 2], rid, err);
        hs_col_free(rid);
        (void)one;
        if (st == HS_OK)
            g->rows->n_rows++;
    }
    hs_field_clear(&schema);
    return st;
}

/* Deletes target row i (of g->rows). */
hs_status dml_target_delete(txn *x, const target *g, int64_t i, hs_error *err)
{
    const hs_column *fc = g->rows->cols[g->nt], *pc = g->rows->cols[g->nt + 1];
    int64_t pos = HS_COL_VALUES(pc, int64_t)[i];
    if (!hs_col_is_valid(fc, i))
        return dml_txn_delete(x, NULL, pos, err);
    const int32_t *off = HS_COL_OFFSETS(fc);
    size_t len = (size_t)(off[i + 1] - off[i]);
    char *path = hs_malloc(len + 1);
    if (!path)
        return hs_err_nomem(err, len);
    memcpy(path, fc->values.data + off[i], len);
    path[len] = 0;
    hs_status st = dml_txn_delete(x, path, pos, err);
    hs_free(path);
    return st;
}

/* ------------------------------------------------------------------ */
/* assignment casts                                                    */

/* PostgreSQL's name of the type of f, into buf (with typmods for
 * decimals: *p, *s >= 0), or NULL when it has none we cast to. */
static const char *pg_type_name(const hs_field *f, int *p, int *s)
{
    *p = *s = -1;
    switch (f->type) {
    case HS_TYPE_BOOL: return "bool";
    case HS_TYPE_INT8: case HS_TYPE_INT16: return "int2";
    case HS_TYPE_INT32: return "int4";
    case HS_TYPE_INT64: return "int8";
    case HS_TYPE_FLOAT32: return "float4";
    case HS_TYPE_FLOAT64: return "float8";
    case HS_TYPE_DECIMAL128: *p = f->precision; *s = f->scale; return "numeric";
    case HS_TYPE_STRING: return "text";
    case HS_TYPE_BINARY: return "bytea";
    case HS_TYPE_DATE32: return "date";
    case HS_TYPE_TIME64: return "time";
    case HS_TYPE_TIMESTAMP: return f->tz ? "timestamptz" : "timestamp";
    case HS_TYPE_FIXED_BINARY: return f->ext == HS_EXT_UUID ? "uuid" : NULL;
    case HS_TYPE_LIST:
    case HS_TYPE_FIXED_LIST:   /* pgvector's column forms (docs/sql.md) */
        if (f->n_children == 1 && f->children[0].type == HS_TYPE_FLOAT32)
            return "vector";
        if (f->n_children == 1 && f->children[0].type == HS_TYPE_FLOAT16)
            return "halfvec";
        return NULL;
    default: return NULL;
    }
}

static bool is_numeric(hs_type t)
{
    return (t >= HS_TYPE_INT8 && t <= HS_TYPE_FLOAT64) || t == HS_TYPE_DECIMAL128;
}

/* The class of a type for assignment casts: 'n' numbers, 's' text, 'b'
 * boolean, 'd' dates and timestamps, 't' time, 'v' vectors, 'x' bytea,
 * 'u' uuid, 'o' others. */
static char type_class(const hs_field *f)
{
    int p, s;
    const char *nm = pg_type_name(f, &p, &s);
    if (is_numeric(f->type))
        return 'n';
    switch (f->type) {
    case HS_TYPE_STRING: return 's';
    case HS_TYPE_BOOL: return 'b';
    case HS_TYPE_DATE32: case HS_TYPE_TIMESTAMP: return 'd';
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: return 't';
    case HS_TYPE_BINARY: return 'x';
    case HS_TYPE_FIXED_BINARY: return f->ext == HS_EXT_UUID ? 'u' : 'o';
    default: return nm && (!strcmp(nm, "vector") || !strcmp(nm, "halfvec")) ? 'v' : 'o';
    }
}

/* {"TypeCast": {"arg": arg (a new reference), "typeName": ...}} for type
 * `to`, or NULL when `to` has no cast target. */
static json_t *cast_node(json_t *arg, const hs_field *to)
{
    int p, s;
    const char *nm = pg_type_name(to, &p, &s);
    if (!nm)
        return NULL;
    json_t *names = json_pack("[{s:{s:s}}]", "String", "sval", nm);
    json_t *tn = json_pack("{s:o, s:i, s:i}", "names", names, "typemod", -1, "location", -1);
    if (tn && p >= 0) {
        json_t *mods = json_pack("[{s:{s:{s:i}, s:i}}, {s:{s:{s:i}, s:i}}]",
                                 "A_Const", "ival", "ival", p, "location", -1,
                                 "A_Const", "ival", "ival", s, "location", -1);
        json_object_set_new(tn, "typmods", mods);
    }
    return json_pack("{s:{s:O, s:o, s:i}}", "TypeCast", "arg", arg, "typeName", tn,
                     "location", -1);
}

/* Binds expression node (of the statement) for assignment into column `to`
 * (named col): bound as is when its type is `to`'s, else wrapped in a
 * cast.  strict: PostgreSQL's assignment rules (text expressions other
 * than literals and boolean <-> number are 42804). */
static hs_status bind_assign(dctx *c, json_t *node, dscope *sc, const hs_field *to,
                             const char *col, bool strict, ex_expr **out, hs_error *err)
{
    *out = NULL;
    ex_scope scope = dml_scope_of(sc);
    ex_expr *e = NULL;
    HS_TRY(ex_bind_json(node, c->text, &scope, false, &e, err));
    const hs_field *ty = ex_type(e);
    if (hs_field_same_type(ty, to, false)) {
        *out = e;
        return HS_OK;
    }
    const char *k = NULL;
    json_t *body = NULL;
    bool literal = sq_node(node, &k, &body) && !strcmp(k, "A_Const");
    bool text_in = ty->type == HS_TYPE_STRING && to->type != HS_TYPE_STRING;
    int p, s;
    const char *tname = pg_type_name(to, &p, &s), *fname = pg_type_name(ty, &p, &s);
    /* PostgreSQL's assignment casts: within numbers, within dates and
     * timestamps, within vector types, anything to text, text (literals
     * always; other text only when not strict) to anything */
    char cf = type_class(ty), ct = type_class(to);
    bool no_cast = ty->type != HS_TYPE_NA && cf != ct && ct != 's' && cf != 's';
    if ((strict && text_in && !literal) || no_cast || !tname) {
        ex_free(e);
        int loc = body ? sq_loc(body) : -1;
        return FAIL(c, HS_INVALID, "42804", loc, "column \"%s\" is of type %s but expression is "
                    "of type %s", col, tname ? tname : "a nested type",
                    fname ? fname : "a nested type");
    }
    ex_free(e);
    json_t *cn = cast_node(node, to);
    if (!cn)
        return hs_err_nomem(err, 64);
    hs_status st = ex_bind_json(cn, c->text, &scope, false, &e, err);
    json_decref(cn);
    HS_TRY(st);
    if (!hs_field_same_type(ex_type(e), to, false)) {
        ex_free(e);
        return FAIL(c, HS_INVALID, "42804", -1, "column \"%s\": cannot assign a value of this "
                    "type", col);
    }
    *out = e;
    return HS_OK;
}

/* Evaluates e over b into a column of exactly type `to` (same physical
 * type; nullability checked: 23502). */
static hs_status eval_assign(dctx *c, const ex_expr *e, const hs_batch *b, const hs_field *to,
                             hs_column **out, hs_error *err)
{
    HS_TRY(ex_eval(e, b, out, err));
    if ((*out)->type != to->type) {
        hs_col_free(*out);
        *out = NULL;
        return FAIL(c, HS_INVALID, "42804", -1, "column \"%s\": the value has another type",
                    to->name);
    }
    if (!to->nullable && (*out)->null_count > 0) {
        hs_col_free(*out);
        *out = NULL;
        return FAIL(c, HS_INVALID, "23502", -1, "null value in column \"%s\" violates not-null "
                    "constraint", to->name);
    }
    return HS_OK;
}

/* Casts column col (type from, named name) of n rows to `to`, for INSERT
 * ... SELECT/VALUES and COPY (text accepted for any type). */
hs_status dml_cast_column(dctx *c, const hs_column *col, const hs_field *from,
                          const hs_field *to, int64_t n, hs_column **out, hs_error *err)
{
    *out = NULL;
    if (hs_field_same_type(from, to, false)) {
        HS_TRY(hs_col_slice(col, 0, n, out, err));
        if (!to->nullable && (*out)->null_count > 0) {
            hs_col_free(*out);
            *out = NULL;
            return FAIL(c, HS_INVALID, "23502", -1, "null value in column \"%s\" violates "
                        "not-null constraint", to->name);
        }
        return HS_OK;
    }
    dscope sc = {0};
    hs_field one;
    hs_field_init(&one, "", HS_TYPE_STRUCT, false);
    hs_status st = dml_push_field(&one, from, "v", err);
    if (st == HS_OK)
        st = dml_dscope_add(&sc, &one, NULL, 0, err);
    json_t *ref = json_pack("{s:{s:[{s:{s:s}}], s:i}}", "ColumnRef", "fields", "String", "sval",
                            "v", "location", -1);
    ex_expr *e = NULL;
    if (st == HS_OK && !ref)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = bind_assign(c, ref, &sc, to, to->name, false, &e, err);
    json_decref(ref);
    hs_batch *b = NULL;
    hs_column *cp = NULL;
    if (st == HS_OK)
        st = hs_col_slice(col, 0, n, &cp, err);
    if (st == HS_OK) {
        hs_column *cols[1] = {cp};
        st = dml_mk_batch(&sc.schema, cols, 1, n, &b, err);
    }
    if (st == HS_OK)
        st = eval_assign(c, e, b, to, out, err);
    hs_batch_free(b);
    ex_free(e);
    dml_dscope_clear(&sc);
    hs_field_clear(&one);
    return st;
}

/* ------------------------------------------------------------------ */
/* sources and joins                                                   */

/* Plans the SelectStmt sel (borrowed) and reads its rows into one batch
 * (*out, never NULL on success, with the query's columns).  n_target >= 0
 * is the column count an INSERT expects: a mismatch fails before any row is
 * read. */
hs_status dml_run_select(dctx *c, json_t *sel, int n_target, hs_batch **out, hs_error *err)
{
    *out = NULL;
    xo_ctx *ctx = NULL;
    xo_op *op = NULL;
    hs_status st = sq_ctx_new(c->s, &ctx, err);
    if (st == HS_OK)
        st = sq_plan_query(c->s, ctx, sel, c->text, &op, err);
    if (st == HS_OK && n_target >= 0 && op->schema.n_children > n_target)
        st = FAIL(c, HS_INVALID, "42601", -1, "INSERT has more expressions than target columns");
    if (st == HS_OK && n_target >= 0 && op->schema.n_children < n_target)
        st = FAIL(c, HS_INVALID, "42601", -1, "INSERT has more target columns than expressions");
    if (st == HS_OK)
        st = hs_batch_create(&op->schema, 0, out, err);
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = xo_next(op, &b, err);
        if (st != HS_OK || !b)
            break;
        st = dml_batch_append(out, b, err);
        hs_batch_free(b);
    }
    xo_free(op);
    sq_ctx_free(ctx);
    if (st != HS_OK) {
        hs_batch_free(*out);
        *out = NULL;
    }
    return st;
}

/* Plans SELECT * FROM <items> (a JSON array of FROM items, borrowed) and
 * reads it whole. */
static hs_status load_source(dctx *c, json_t *items, hs_batch **out, hs_error *err)
{
    *out = NULL;
    json_t *sel = json_pack("{s:[{s:{s:{s:{s:[{s:{}}], s:i}}, s:i}}], s:O, s:s, s:s}",
                            "targetList", "ResTarget", "val", "ColumnRef", "fields", "A_Star",
                            "location", -1, "location", -1, "fromClause", items,
                            "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE");
    if (!sel)
        return hs_err_nomem(err, 64);
    hs_status st = dml_run_select(c, sel, -1, out, err);
    json_decref(sel);
    return st;
}

/* The qualifier of a FROM item: alias or relation name (RangeVar), alias
 * (subquery, function); NULL when none. */
static const char *item_qual(const json_t *item)
{
    const char *k;
    json_t *b;
    if (!sq_node(item, &k, &b))
        return NULL;
    if (!strcmp(k, "RangeVar"))
        return dml_rel_qual(b);
    json_t *al = json_object_get(b, "alias");
    return al ? dml_jstr(al, "aliasname") : NULL;
}

/* Hash key bytes of row i of column col (type f) appended to k: 1, or 0
 * when the value is null (never equal), -1 when out of memory.  Numbers
 * become doubles (so 1 = 1.0 hash alike); equal values give equal keys,
 * and the join condition is evaluated exactly afterwards. */
static int key_bytes(const hs_column *col, const hs_field *f, int64_t i, hs_buf *k)
{
    bool ok = true;
    if (!hs_col_is_valid(col, i))
        return 0;
    double d = 0;
    bool num = true;
    switch (f->type) {
    case HS_TYPE_INT8: d = HS_COL_VALUES(col, int8_t)[i]; break;
    case HS_TYPE_INT16: d = HS_COL_VALUES(col, int16_t)[i]; break;
    case HS_TYPE_INT32: d = HS_COL_VALUES(col, int32_t)[i]; break;
    case HS_TYPE_INT64: d = (double)HS_COL_VALUES(col, int64_t)[i]; break;
    case HS_TYPE_FLOAT32: d = HS_COL_VALUES(col, float)[i]; break;
    case HS_TYPE_FLOAT64: d = HS_COL_VALUES(col, double)[i]; break;
    case HS_TYPE_DECIMAL128: {
        const uint8_t *p = col->values.data + (size_t)i * 16;
        int64_t lo;
        memcpy(&lo, p, 8);
        d = (double)lo / pow(10, f->scale);
        break;
    }
    default: num = false;
    }
    if (num) {
        if (d == 0)
            d = 0;   /* -0 */
        ok = hs_buf_append(k, "n", 1) == HS_OK && hs_buf_append(k, &d, 8) == HS_OK;
        return ok ? 1 : -1;
    }
    if (f->type == HS_TYPE_STRING || f->type == HS_TYPE_BINARY) {
        const int32_t *off = HS_COL_OFFSETS(col);
        uint32_t len = (uint32_t)(off[i + 1] - off[i]);
        ok = hs_buf_append(k, "s", 1) == HS_OK && hs_buf_append(k, &len, 4) == HS_OK &&
             (len == 0 || hs_buf_append(k, col->values.data + off[i], len) == HS_OK);
        return ok ? 1 : -1;
    }
    if (col->width > 0 && f->n_children == 0) {
        ok = hs_buf_append(k, "f", 1) == HS_OK &&
             hs_buf_append(k, col->values.data + (size_t)i * (size_t)col->width,
                           (size_t)col->width) == HS_OK;
        return ok ? 1 : -1;
    }
    return 0;
}

static bool hashable_pair(const hs_field *a, const hs_field *b)
{
    if (is_numeric(a->type) && is_numeric(b->type))
        return true;
    if ((a->type == HS_TYPE_STRING || a->type == HS_TYPE_BINARY) && a->type == b->type)
        return true;
    return a->n_children == 0 && b->n_children == 0 && hs_field_equals(a, b, false, false) &&
           a->type != HS_TYPE_BOOL;
}

/* Equality conjuncts col(left side) = col(right side) of cond, as
 * positions: lk[i] < n_left <= rk[i]. */
static void equi_keys(dscope *sc, int n_left, const json_t *cond, int *lk, int *rk, int *nk,
                      int max)
{
    const char *k;
    json_t *b;
    if (!cond || !sq_node(cond, &k, &b))
        return;
    if (!strcmp(k, "BoolExpr")) {
        const char *op = dml_jstr(b, "boolop");
        if (!op || strcmp(op, "AND_EXPR") != 0)
            return;
        json_t *args = json_object_get(b, "args");
        for (size_t i = 0; i < json_array_size(args); i++)
            equi_keys(sc, n_left, json_array_get(args, i), lk, rk, nk, max);
        return;
    }
    if (strcmp(k, "A_Expr") != 0 || *nk >= max)
        return;
    const char *kind = dml_jstr(b, "kind");
    json_t *name = json_object_get(b, "name");
    if (!kind || strcmp(kind, "AEXPR_OP") != 0 || json_array_size(name) != 1)
        return;
    const char *op = sq_str(json_array_get(name, 0));
    if (!op || strcmp(op, "=") != 0)
        return;
    int pos[2];
    const char *sides[2] = {"lexpr", "rexpr"};
    for (int s = 0; s < 2; s++) {
        json_t *ref = NULL;
        const char *rk2;
        if (!sq_node(json_object_get(b, sides[s]), &rk2, &ref) || strcmp(rk2, "ColumnRef") != 0)
            return;
        json_t *fields = json_object_get(ref, "fields");
        size_t n = json_array_size(fields);
        if (n < 1 || n > 3)
            return;
        const char *names[3];
        for (size_t i = 0; i < n; i++)
            if (!(names[i] = sq_str(json_array_get(fields, i))))
                return;
        pos[s] = dscope_column(sc, names, (int)n);
        if (pos[s] < 0)
            return;
    }
    int l = pos[0] < pos[1] ? pos[0] : pos[1], r = pos[0] < pos[1] ? pos[1] : pos[0];
    if (l >= n_left || r < n_left)
        return;
    if (!hashable_pair(&sc->schema.children[l], &sc->schema.children[r]))
        return;
    lk[*nk] = l;
    rk[*nk] = r;
    (*nk)++;
}

#define PAIR_CHUNK 65536

/* Pair batch: L rows li[0..n) ++ R rows ri[0..n) (-1 = null row), schema
 * sc->schema (nl + nr columns). */
hs_status dml_pair_batch(const dscope *sc, const hs_batch *L, const hs_batch *R,
                         const int64_t *li, const int64_t *ri, int64_t n, hs_batch **out,
                         hs_error *err)
{
    int nl = L->n_cols, nr = R ? R->n_cols : 0;
    hs_column **cols = hs_calloc((size_t)(nl + nr) + 1, sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 64);
    hs_status st = dml_take_cols(L, 0, nl, li, n, cols, err);
    if (st == HS_OK && nr) {
        st = dml_take_cols(R, 0, nr, ri, n, cols + nl, err);
        if (st != HS_OK)
            for (int i = 0; i < nl; i++)
                hs_col_free(cols[i]);
    }
    if (st == HS_OK)
        st = dml_mk_batch(&sc->schema, cols, nl + nr, n, out, err);
    hs_free(cols);
    return st;
}

bool dml_has_sublink(const json_t *j, int depth)
{
    if (depth > 400 || !j)
        return false;
    const char *k;
    json_t *b, *v;
    if (sq_node(j, &k, &b) && !strcmp(k, "SubLink"))
        return true;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            if (dml_has_sublink(json_array_get(j, i), depth + 1))
                return true;
    } else if (json_is_object(j)) {
        const char *key;
        json_object_foreach((json_t *)j, key, v)
            if (dml_has_sublink(v, depth + 1))
                return true;
    }
    return false;
}

/* node (with subqueries that read the rows of b, named by sc) evaluated per
 * row of b: *out a column of b->n_rows values (caller frees). */
hs_status dml_eval_with_sublinks(dctx *c, const dscope *sc, const hs_batch *b, json_t *node,
                                 hs_column **out, hs_error *err)
{
    const char **quals = hs_calloc((size_t)sc->n + 1, sizeof *quals);
    bool *hidden = hs_calloc((size_t)sc->n + 1, sizeof *hidden);
    hs_status st = quals && hidden ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK && sc->n != b->n_cols)
        st = hs_err_set(err, HS_INTERNAL, "correlated subqueries: %d names for %d columns", sc->n, b->n_cols);
    for (int i = 0; st == HS_OK && i < sc->n; i++) {
        quals[i] = sc->cols[i].qual;
        hidden[i] = sc->cols[i].hidden;
    }
    if (st == HS_OK)
        st = sq_eval_correlated(c->s, c->text, b, quals, hidden, &node, 1, out, err);
    hs_free(quals);
    hs_free(hidden);
    return st;
}

/* Pairs (li, ri) of L x R for which cond (bound on sc: L's columns then
 * R's) is TRUE, in order of L then R.  Candidates come from a hash of R on
 * the equality conjuncts when there are any. */
static hs_status join_pairs(dctx *c, dscope *sc, const hs_batch *L, const hs_batch *R,
                            json_t *cond, hs_buf *lo, hs_buf *ro, hs_error *err)
{
    ex_expr *e = NULL;
    ex_scope scope = dml_scope_of(sc);
    if (cond)
        HS_TRY(ex_bind_json(cond, c->text, &scope, true, &e, err));
    int lk[16], rk[16], nk = 0;
    equi_keys(sc, L->n_cols, cond, lk, rk, &nk, 16);
    hs_buf cl = {0}, cr = {0};   /* candidate pairs */
    hs_status st = HS_OK;
    int64_t *next = NULL;
    hs_map heads = {0};
    hs_buf key = {0};
    if (nk > 0) {
        next = hs_malloc((size_t)R->n_rows * 8 + 8);
        if (!next)
            st = hs_err_nomem(err, (size_t)R->n_rows * 8);
        for (int64_t j = R->n_rows - 1; st == HS_OK && j >= 0; j--) {
            hs_buf_reset(&key);
            int ok = 1;
            for (int k = 0; k < nk && ok == 1; k++)
                ok = key_bytes(R->cols[rk[k] - L->n_cols], &sc->schema.children[rk[k]], j, &key);
            next[j] = -1;
            if (ok < 0)
                st = hs_err_nomem(err, key.len);
            if (ok != 1)
                continue;
            uint64_t h;
            if (hs_map_get(&heads, key.data, key.len, &h))
                next[j] = (int64_t)h;
            if (hs_map_put(&heads, key.data, key.len, (uint64_t)j) != HS_OK)
                st = hs_err_nomem(err, key.len);
        }
        for (int64_t i = 0; st == HS_OK && i < L->n_rows; i++) {
            hs_buf_reset(&key);
            int ok = 1;
            for (int k = 0; k < nk && ok == 1; k++)
                ok = key_bytes(L->cols[lk[k]], &sc->schema.children[lk[k]], i, &key);
            uint64_t h;
            if (ok < 0)
                st = hs_err_nomem(err, key.len);
            if (ok != 1 || !hs_map_get(&heads, key.data, key.len, &h))
                continue;
            for (int64_t j = (int64_t)h; j >= 0 && st == HS_OK; j = next[j])
                if (HS_VEC_PUSH(&cl, int64_t, i) != HS_OK || HS_VEC_PUSH(&cr, int64_t, j) != HS_OK)
                    st = hs_err_nomem(err, 16);
        }
    }
    /* evaluate the condition on candidate pairs, a chunk at a time */
    int64_t n_all = nk > 0 ? (int64_t)HS_VEC_LEN(&cl, int64_t) : L->n_rows * R->n_rows;
    int64_t *li = hs_malloc(PAIR_CHUNK * 8), *ri = hs_malloc(PAIR_CHUNK * 8);
    uint8_t *sel = hs_malloc(PAIR_CHUNK);
    if (st == HS_OK && (!li || !ri || !sel))
        st = hs_err_nomem(err, PAIR_CHUNK * 8);
    for (int64_t off = 0; st == HS_OK && off < n_all; off += PAIR_CHUNK) {
        int64_t n = n_all - off < PAIR_CHUNK ? n_all - off : PAIR_CHUNK;
        st = dml_check_cancel(c, err);
        if (st != HS_OK)
            break;
        for (int64_t k = 0; k < n; k++) {
            if (nk > 0) {
                li[k] = HS_VEC_AT(&cl, int64_t, off + k);
                ri[k] = HS_VEC_AT(&cr, int64_t, off + k);
            } else {
                li[k] = (off + k) / R->n_rows;
                ri[k] = (off + k) % R->n_rows;
            }
        }
        int64_t m = n;
        if (e) {
            hs_batch *pb = NULL;
            st = dml_pair_batch(sc, L, R, li, ri, n, &pb, err);
            if (st == HS_OK)
                st = ex_eval_filter(e, pb, NULL, sel, &m, err);
            hs_batch_free(pb);
        } else {
            memset(sel, 1, (size_t)n);
        }
        for (int64_t k = 0; st == HS_OK && k < n; k++)
            if (sel[k] && (HS_VEC_PUSH(lo, int64_t, li[k]) != HS_OK ||
                           HS_VEC_PUSH(ro, int64_t, ri[k]) != HS_OK))
                st = hs_err_nomem(err, 16);
    }
    hs_free(li);
    hs_free(ri);
    hs_free(sel);
    hs_free(next);
    hs_map_free(&heads);
    hs_buf_free(&key);
    hs_buf_free(&cl);
    hs_buf_free(&cr);
    ex_free(e);
    return st;
}

/* ------------------------------------------------------------------ */
/* writing rows                                                        */

/* Index of table column `name` in x->tschema, or -1. */
/* join_pairs for a condition with subqueries (reading the target's and
 * the source's columns): the conjuncts without any pair the rows, those
 * with are evaluated per pair by the planner (sq_eval_correlated). */
hs_status dml_join_pairs_sub(dctx *c, dscope *sc, const hs_batch *L, const hs_batch *R,
                             json_t *cond, hs_buf *lo, hs_buf *ro, hs_error *err)
{
    if (!cond || !dml_has_sublink(cond, 0))
        return join_pairs(c, sc, L, R, cond, lo, ro, err);
    const char *k;
    json_t *b;
    bool and = sq_node(cond, &k, &b) && !strcmp(k, "BoolExpr") && dml_jstr(b, "boolop") &&
               !strcmp(dml_jstr(b, "boolop"), "AND_EXPR");
    json_t *args = and ? json_object_get(b, "args") : NULL;
    json_t *plain = json_array(), *subs = json_array();
    hs_status st = plain && subs ? HS_OK : hs_err_nomem(err, 64);
    for (size_t i = 0; st == HS_OK && i < (and ? json_array_size(args) : 1); i++) {
        json_t *x = and ? json_array_get(args, i) : cond;
        if (json_array_append(dml_has_sublink(x, 0) ? subs : plain, x) != 0)
            st = hs_err_nomem(err, 64);
    }
    json_t *pc = NULL, *sq = NULL;
    if (st == HS_OK) {
        pc = json_array_size(plain) == 0 ? NULL
           : json_array_size(plain) == 1 ? json_incref(json_array_get(plain, 0))
           : json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", plain, "location", -1);
        sq = json_array_size(subs) == 1 ? json_incref(json_array_get(subs, 0))
           : json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", subs, "location", -1);
        if ((json_array_size(plain) && !pc) || !sq)
            st = hs_err_nomem(err, 64);
    }
    hs_buf l0 = {0}, r0 = {0};
    if (st == HS_OK)
        st = join_pairs(c, sc, L, R, pc, &l0, &r0, err);
    int64_t n = (int64_t)HS_VEC_LEN(&l0, int64_t);
    hs_batch *pb = NULL;
    hs_column *v = NULL;
    if (st == HS_OK && n > 0)
        st = dml_pair_batch(sc, L, R, (const int64_t *)l0.data, (const int64_t *)r0.data, n, &pb, err);
    if (st == HS_OK && n > 0)
        st = dml_eval_with_sublinks(c, sc, pb, sq, &v, err);
    if (st == HS_OK && v && v->type != HS_TYPE_BOOL)
        st = FAIL(c, HS_INVALID, "42804", -1, "argument of WHERE must be type boolean");
    for (int64_t i = 0; st == HS_OK && v && i < n; i++)
        if (hs_col_is_valid(v, i) && hs_bit_get(v->values.data, i) &&
            (HS_VEC_PUSH(lo, int64_t, HS_VEC_AT(&l0, int64_t, i)) != HS_OK ||
             HS_VEC_PUSH(ro, int64_t, HS_VEC_AT(&r0, int64_t, i)) != HS_OK))
            st = hs_err_nomem(err, 16);
    hs_col_free(v);
    hs_batch_free(pb);
    hs_buf_free(&l0);
    hs_buf_free(&r0);
    json_decref(pc);
    json_decref(sq);
    json_decref(plain);
    json_decref(subs);
    return st;
}

int dml_table_col(const txn *x, const char *name)
{
    for (int i = 0; i < x->tschema.n_children; i++)
        if (!strcmp(x->tschema.children[i].name, name))
            return i;
    for (int i = 0; i < x->tschema.n_children; i++)
        if (!strcasecmp(x->tschema.children[i].name, name))
            return i;
    return -1;
}

/* Checks a SET list / INSERT column list (ResTarget nodes): known, distinct,
 * plain columns.  cols[k] = table column of entry k. */
hs_status dml_assign_targets(dctx *c, const txn *x, json_t *list, bool with_values,
                             int *cols, hs_error *err)
{
    size_t n = json_array_size(list);
    for (size_t k = 0; k < n; k++) {
        const char *kind;
        json_t *rt;
        if (!sq_node(json_array_get(list, k), &kind, &rt) || strcmp(kind, "ResTarget") != 0)
            return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "unsupported assignment target");
        const char *name = dml_jstr(rt, "name");
        int loc = sq_loc(rt);
        if (json_object_get(rt, "indirection"))
            return FAIL(c, HS_UNSUPPORTED, "0A000", loc, "assignment to a field or element of "
                        "column \"%s\" is not supported", name ? name : "");
        const char *vk;
        json_t *vb;
        if (with_values && sq_node(json_object_get(rt, "val"), &vk, &vb) &&
            !strcmp(vk, "MultiAssignRef"))
            return FAIL(c, HS_UNSUPPORTED, "0A000", loc, "multiple-column assignment (a, b) = "
                        "(...) is not supported");
        int col = name ? dml_table_col(x, name) : -1;
        if (col < 0)
            return FAIL(c, HS_NOT_FOUND, "42703", loc, "column \"%s\" of relation \"%s\" does "
                        "not exist", name ? name : "", x->tname);
        for (size_t j = 0; j < k; j++)
            if (cols[j] == col)
                return FAIL(c, HS_INVALID, "42601", loc, "multiple assignments to same column "
                            "\"%s\"", name);
        cols[k] = col;
    }
    return HS_OK;
}

/* A column of n nulls of type f (23502 when f is required). */
hs_status dml_null_column(dctx *c, const hs_field *f, int64_t n, hs_column **out,
                          hs_error *err)
{
    *out = NULL;
    if (!f->nullable && n > 0)
        return FAIL(c, HS_INVALID, "23502", -1, "null value in column \"%s\" violates not-null "
                    "constraint", f->name);
    HS_TRY(hs_col_create(f, n, out, err));
    if (hs_col_append_nulls(*out, n) != HS_OK) {
        hs_col_free(*out);
        *out = NULL;
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

/* Adds rows built from cols[0..nt) (taken) plus _row_id (taken; NULL =
 * nulls) to the transaction. */
hs_status dml_add_rows(txn *x, hs_column **cols, hs_column *rid, int64_t n, hs_error *err)
{
    int nt = x->tschema.n_children;
    hs_status st = HS_OK;
    if (!rid) {
        st = hs_col_create(&x->added->schema.children[nt], n, &rid, err);
        if (st == HS_OK && hs_col_append_nulls(rid, n) != HS_OK)
            st = hs_err_nomem(err, (size_t)n);
    }
    hs_column **all = hs_calloc((size_t)nt + 2, sizeof *all);
    if (st == HS_OK && !all)
        st = hs_err_nomem(err, 64);
    if (st != HS_OK) {
        for (int i = 0; i < nt; i++)
            hs_col_free(cols[i]);
        hs_col_free(rid);
        hs_free(all);
        return st;
    }
    for (int i = 0; i < nt; i++)
        all[i] = cols[i];
    all[nt] = rid;
    hs_batch *b = NULL;
    st = dml_mk_batch(&x->added->schema, all, nt + 1, n, &b, err);
    hs_free(all);
    if (st == HS_OK)
        st = dml_txn_add(x, b, err);
    hs_batch_free(b);
    return st;
}

/* RETURNING: evaluates the statement's list over b (rows in scope sc:
 * the rows deleted, the new versions of updated rows, the rows inserted)
 * and appends the result to c->ret.  Called also for no rows, so that an
 * empty result has its columns. */
hs_status dml_returning_add(dctx *c, dscope *sc, const hs_batch *b, hs_error *err)
{
    size_t n_list = json_array_size(c->returning);
    if (!n_list)
        return HS_OK;
    hs_field rs;
    hs_field_init(&rs, "", HS_TYPE_STRUCT, false);
    hs_buf cols = {0};   /* hs_column * */
    hs_status st = HS_OK;
    ex_scope scope = dml_scope_of(sc);
    for (size_t k = 0; st == HS_OK && k < n_list; k++) {
        const char *kind;
        json_t *rt, *vb;
        if (!sq_node(json_array_get(c->returning, k), &kind, &rt) || strcmp(kind, "ResTarget"))
            continue;
        json_t *val = json_object_get(rt, "val");
        const char *alias = dml_jstr(rt, "name");
        json_t *fields = sq_node(val, &kind, &vb) && !strcmp(kind, "ColumnRef")
                             ? json_object_get(vb, "fields") : NULL;
        size_t nf = json_array_size(fields);
        const char *k2;
        json_t *b2;
        if (nf && sq_node(json_array_get(fields, nf - 1), &k2, &b2) && !strcmp(k2, "A_Star")) {
            const char *qual = nf >= 2 ? sq_str(json_array_get(fields, nf - 2)) : NULL;
            int found = 0;
            for (int i = 0; st == HS_OK && i < sc->n; i++) {
                const dcol *dc = &sc->cols[i];
                if (dc->hidden || (qual && (!dc->qual || strcmp(dc->qual, qual) != 0)))
                    continue;
                hs_column *col = NULL;
                found++;
                st = hs_col_slice(b->cols[i], 0, b->n_rows, &col, err);
                if (st == HS_OK && HS_VEC_PUSH(&cols, hs_column *, col) != HS_OK) {
                    hs_col_free(col);
                    st = hs_err_nomem(err, 8);
                }
                if (st == HS_OK)
                    st = dml_push_field(&rs, &sc->schema.children[i], NULL, err);
            }
            if (st == HS_OK && !found)
                st = FAIL(c, HS_NOT_FOUND, "42P01", sq_loc(vb), "missing FROM-clause entry for "
                          "table \"%s\"", qual ? qual : "");
            continue;
        }
        ex_expr *e = NULL;
        hs_column *col = NULL;
        st = ex_bind_json(val, c->text, &scope, false, &e, err);
        if (st == HS_OK)
            st = ex_eval(e, b, &col, err);
        const char *name = alias ? alias
                           : nf ? sq_str(json_array_get(fields, nf - 1)) : NULL;
        if (st == HS_OK)
            st = dml_push_field(&rs, ex_type(e), name ? name : "?column?", err);
        if (st == HS_OK && HS_VEC_PUSH(&cols, hs_column *, col) != HS_OK)
            st = hs_err_nomem(err, 8);
        else if (st == HS_OK)
            col = NULL;
        hs_col_free(col);
        ex_free(e);
    }
    int n = (int)HS_VEC_LEN(&cols, hs_column *);
    hs_batch *res = NULL;
    if (st == HS_OK) {
        dml_renumber(&rs);
        for (int i = 0; i < rs.n_children; i++)
            rs.children[i].nullable = true;
        st = dml_mk_batch(&rs, (hs_column **)cols.data, n, b->n_rows, &res, err);
    } else {
        for (int i = 0; i < n; i++)
            hs_col_free(HS_VEC_AT(&cols, hs_column *, i));
    }
    if (st == HS_OK)
        st = dml_batch_append(&c->ret, res, err);
    hs_batch_free(res);
    hs_buf_free(&cols);
    hs_field_clear(&rs);
    return st;
}

/* UPDATE (and MERGE's UPDATE): pb is a batch in scope sc (the target's
 * columns first, as in g->rows) whose row k is target row trow[k]; SET
 * list `set`.  Deletes those target rows and adds their new versions. */
/* The value of expression val (bound on sc) for the n rows of b, assigned
 * to a column of type `to` (PostgreSQL's assignment rules, bind_assign);
 * subqueries that read b's rows are evaluated per row by the planner and
 * assigned as a column of their type. */
hs_status dml_assign_column(dctx *c, json_t *val, dscope *sc, const hs_batch *b, const hs_field *to,
                            int64_t n, hs_column **out, hs_error *err)
{
    ex_expr *e = NULL;
    hs_status st;
    if (!dml_has_sublink(val, 0)) {
        st = bind_assign(c, val, sc, to, to->name, true, &e, err);
        if (st == HS_OK)
            st = eval_assign(c, e, b, to, out, err);
        ex_free(e);
        return st;
    }
    if (n == 0)
        return dml_null_column(c, to, 0, out, err);
    hs_column *v = NULL;
    hs_batch *vb1 = NULL;
    dscope one = {0};
    hs_field vs, vf;
    hs_field_init(&vs, "", HS_TYPE_STRUCT, false);
    st = dml_eval_with_sublinks(c, sc, b, val, &v, err);
    if (st == HS_OK) {
        hs_field_init(&vf, "\x01v", v->type, true);
        st = hs_field_add_child(&vs, &vf) == HS_OK ? HS_OK : hs_err_nomem(err, 64);
        if (st != HS_OK)
            hs_field_clear(&vf);
    }
    json_t *ref = json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", "\x01v",
                            "location", -1);
    if (st == HS_OK && !ref)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = dml_dscope_add(&one, &vs, NULL, 0, err);
    if (st == HS_OK) {
        hs_column *cv = v;
        v = NULL;
        st = dml_mk_batch(&one.schema, &cv, 1, n, &vb1, err);   /* the scope's field ids */
    }
    if (st == HS_OK)
        st = bind_assign(c, ref, &one, to, to->name, true, &e, err);
    if (st == HS_OK)
        st = eval_assign(c, e, vb1, to, out, err);
    ex_free(e);
    json_decref(ref);
    hs_batch_free(vb1);
    hs_col_free(v);
    dml_dscope_clear(&one);
    hs_field_clear(&vs);
    return st;
}

hs_status dml_write_updates(dctx *c, txn *x, const target *g, dscope *sc, const hs_batch *pb,
                            const int64_t *trow, int64_t n, json_t *set, hs_error *err)
{
    int nt = g->nt;
    size_t n_set = json_array_size(set);
    int *cols = hs_calloc(n_set + 1, sizeof *cols);
    hs_column **nc = hs_calloc((size_t)nt + 1, sizeof *nc);
    hs_status st = cols && nc ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = dml_assign_targets(c, x, set, true, cols, err);
    for (size_t k = 0; st == HS_OK && k < n_set; k++) {
        const char *kind;
        json_t *rt, *vb;
        (void)sq_node(json_array_get(set, k), &kind, &rt);
        json_t *val = json_object_get(rt, "val");
        const hs_field *to = &x->tschema.children[cols[k]];
        if (sq_node(val, &kind, &vb) && !strcmp(kind, "SetToDefault")) {
            st = dml_null_column(c, to, n, &nc[cols[k]], err);
            continue;
        }
        st = dml_assign_column(c, val, sc, pb, to, n, &nc[cols[k]], err);
    }
    /* unchanged columns and the row ids come from the target rows */
    for (int i = 0; st == HS_OK && i < nt; i++)
        if (!nc[i])
            st = hs_col_take(g->rows->cols[i], trow, n, &nc[i], err);
    if (st == HS_OK && json_array_size(c->returning)) {
        /* the new versions, in pb's layout */
        hs_column **rc = hs_calloc((size_t)pb->n_cols + 1, sizeof *rc);
        hs_batch *nb = NULL;
        if (!rc)
            st = hs_err_nomem(err, 64);
        for (int i = 0; st == HS_OK && i < pb->n_cols; i++)
            st = hs_col_slice(i < nt ? nc[i] : pb->cols[i], 0, n, &rc[i], err);
        if (st == HS_OK)
            st = dml_mk_batch(&pb->schema, rc, pb->n_cols, n, &nb, err);
        else
            for (int i = 0; rc && i < pb->n_cols; i++)
                hs_col_free(rc[i]);
        hs_free(rc);
        if (st == HS_OK)
            st = dml_returning_add(c, sc, nb, err);
        hs_batch_free(nb);
    }
    hs_column *rid = NULL;
    if (st == HS_OK)
        st = hs_col_take(g->rows->cols[nt + 2], trow, n, &rid, err);
    if (st == HS_OK) {
        st = dml_add_rows(x, nc, rid, n, err);
        memset(nc, 0, (size_t)nt * sizeof *nc);
    } else {
        hs_col_free(rid);
    }
    for (int64_t k = 0; st == HS_OK && k < n; k++)
        st = dml_target_delete(x, g, trow[k], err);
    for (int i = 0; i < nt; i++)
        hs_col_free(nc[i]);
    hs_free(nc);
    hs_free(cols);
    return st;
}

/* ------------------------------------------------------------------ */
/* statements                                                          */

/* ---- subqueries in expressions ----
 *
 * An uncorrelated subquery in WHERE, SET, ON or a MERGE clause runs once,
 * before binding, and its node is replaced by its value:
 *
 *   subquery                          becomes
 *   --------------------------------  ------------------------------------
 *   (SELECT one column, <= 1 row)     the value as a typed literal (NULL
 *                                     without rows; 21000 for two rows)
 *   EXISTS (SELECT ...)               true / false
 *   x IN (SELECT c ...), x = ANY      x IN (v1, v2, ...) - the same NULL
 *                                     semantics - or false without rows
 *
 * A correlated subquery (one that fails run alone with 42703: it reads the
 * target's columns), `x op ALL (...)` and `x op ANY (...)` but `= ANY` stay
 * in the tree; the planner evaluates them per target row or per (target,
 * source) pair (sq_eval_correlated: the decorrelated joins and the Apply
 * of a SELECT, so PostgreSQL's results, 21000 included): UPDATE's SET and
 * MERGE's INSERT values (dml_assign_column), UPDATE / DELETE's WHERE
 * (dml_where_rows; with FROM / USING dml_join_pairs_sub filters the pairs),
 * MERGE's ON and WHEN conditions.
 */

/* A typed literal: TypeCast('text' or NULL AS type of f). */
static json_t *literal_node(const char *text, const hs_field *f)
{
    json_t *a = text ? json_pack("{s:{s:{s:s}, s:i}}", "A_Const", "sval", "sval", text,
                                 "location", -1)
                     : json_pack("{s:{s:b, s:i}}", "A_Const", "isnull", 1, "location", -1);
    if (!a)
        return NULL;
    json_t *n = cast_node(a, f);
    json_decref(a);
    return n;
}

/* Runs the subselect of a SubLink (body) into one batch. */
static hs_status run_subselect(dctx *c, json_t *body, hs_batch **out, hs_error *err)
{
    const char *k;
    json_t *sel;
    *out = NULL;
    if (!sq_node(json_object_get(body, "subselect"), &k, &sel) || strcmp(k, "SelectStmt") != 0)
        return FAIL(c, HS_UNSUPPORTED, "0A000", sq_loc(body), "unsupported subquery");
    return dml_run_select(c, sel, -1, out, err);
}

/* The replacement of one SubLink node (body); *out a new reference. */
static hs_status sublink_value(dctx *c, json_t *body, json_t **out, hs_error *err)
{
    *out = NULL;
    const char *type = dml_jstr(body, "subLinkType");
    int loc = sq_loc(body);
    if (!type)
        type = "";
    bool exists = !strcmp(type, "EXISTS_SUBLINK"), expr = !strcmp(type, "EXPR_SUBLINK");
    bool any = !strcmp(type, "ANY_SUBLINK");
    json_t *opn = json_object_get(body, "operName");
    if (any && opn && (json_array_size(opn) != 1 || !sq_str(json_array_get(opn, 0)) ||
                       strcmp(sq_str(json_array_get(opn, 0)), "=") != 0))
        any = false;
    if (!exists && !expr && !any)
        return FAIL(c, HS_UNSUPPORTED, "0A000", loc, "this form of subquery is not supported in "
                    "a data-modifying statement (scalar, EXISTS and IN subqueries are)");
    hs_batch *b = NULL;
    HS_TRY(run_subselect(c, body, &b, err));
    hs_field boolf;
    hs_field_init(&boolf, "", HS_TYPE_BOOL, true);
    hs_status st = HS_OK;
    if (exists) {
        *out = literal_node(b->n_rows > 0 ? "t" : "f", &boolf);
    } else if (b->n_cols != 1) {
        st = FAIL(c, HS_INVALID, "42601", loc, "subquery must return only one column");
    } else if (expr && b->n_rows > 1) {
        st = FAIL(c, HS_INVALID, "21000", loc, "more than one row returned by a subquery used "
                  "as an expression");
    } else if (any && b->n_rows == 0) {
        *out = literal_node("f", &boolf);
    } else {
        const hs_field *f = &b->schema.children[0];
        int p, sc;
        if (f->type != HS_TYPE_NA && !pg_type_name(f, &p, &sc))
            st = FAIL(c, HS_UNSUPPORTED, "0A000", loc, "a subquery of this column type is not "
                      "supported in a data-modifying statement");
        hs_field textf;
        hs_field_init(&textf, f->name, HS_TYPE_STRING, true);
        hs_column *txt = NULL;
        if (st == HS_OK && f->type != HS_TYPE_NA && b->n_rows > 0)
            st = dml_cast_column(c, b->cols[0], f, &textf, b->n_rows, &txt, err);
        json_t *items = json_array();
        if (st == HS_OK && !items)
            st = hs_err_nomem(err, 64);
        for (int64_t i = 0; st == HS_OK && i < (expr ? 1 : b->n_rows); i++) {
            char *v = NULL;
            if (txt && i < b->n_rows && hs_col_is_valid(txt, i)) {
                const int32_t *off = HS_COL_OFFSETS(txt);
                size_t len = (size_t)(off[i + 1] - off[i]);
                v = hs_malloc(len + 1);
                if (!v) {
                    st = hs_err_nomem(err, len);
                    break;
                }
                memcpy(v, txt->values.data + off[i], len);
                v[len] = 0;
            }
            json_t *lit = f->type == HS_TYPE_NA
                              ? json_pack("{s:{s:b, s:i}}", "A_Const", "isnull", 1, "location", -1)
                              : literal_node(v, f);
            hs_free(v);
            if (!lit || json_array_append_new(items, lit) != 0)
                st = hs_err_nomem(err, 64);
        }
        hs_col_free(txt);
        hs_field_clear(&textf);
        if (st == HS_OK && expr)
            *out = json_incref(json_array_get(items, 0));
        else if (st == HS_OK)
            *out = json_pack("{s:{s:s, s:[{s:{s:s}}], s:O, s:{s:{s:O}}, s:i}}", "A_Expr", "kind",
                             "AEXPR_IN", "name", "String", "sval", "=", "lexpr",
                             json_object_get(body, "testexpr"), "rexpr", "List", "items", items,
                             "location", loc);
        json_decref(items);
    }
    hs_field_clear(&boolf);
    hs_batch_free(b);
    if (st == HS_OK && !*out)
        st = hs_err_nomem(err, 64);
    return st;
}

/* sublink_value for a subquery that runs once; *out NULL (and no error)
 * for one that reads the statement's rows (42703 run alone) or a form
 * sublink_value does not inline (op ALL, op ANY but =): it stays in the
 * tree, and dml_where_rows / dml_write_updates evaluate it per row through the
 * planner (sq_eval_correlated). */
static hs_status sublink_once(dctx *c, json_t *body, json_t **out, hs_error *err)
{
    *out = NULL;
    const char *type = dml_jstr(body, "subLinkType");
    json_t *opn = json_object_get(body, "operName");
    bool eq_any = type && !strcmp(type, "ANY_SUBLINK") &&
                  (!opn || (json_array_size(opn) == 1 && sq_str(json_array_get(opn, 0)) &&
                            !strcmp(sq_str(json_array_get(opn, 0)), "=")));
    const char *tk;
    json_t *tb;
    if (eq_any && sq_node(json_object_get(body, "testexpr"), &tk, &tb) && !strcmp(tk, "RowExpr"))
        return HS_OK;   /* (a, b) IN (...): the planner's row comparison */
    if (!type || (strcmp(type, "EXISTS_SUBLINK") && strcmp(type, "EXPR_SUBLINK") && !eq_any)) {
        if (type && (!strcmp(type, "ALL_SUBLINK") || !strcmp(type, "ANY_SUBLINK")))
            return HS_OK;
        return sublink_value(c, body, out, err);   /* reports the form */
    }
    hs_status st = sublink_value(c, body, out, err);
    if (st == HS_NOT_FOUND) {
        sq_fail_clear(c->s, err);
        return HS_OK;
    }
    return st;
}

/* Replaces the SubLink nodes in j (a JSON tree the caller owns), not
 * descending into the subqueries themselves. */
static hs_status inline_sublinks(dctx *c, json_t *j, hs_error *err)
{
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            const char *k;
            json_t *b;
            if (sq_node(v, &k, &b) && !strcmp(k, "SubLink")) {
                json_t *r = NULL;
                HS_TRY(sublink_once(c, b, &r, err));
                if (r)
                    json_array_set_new(j, i, r);
            } else {
                HS_TRY(inline_sublinks(c, v, err));
            }
        }
        return HS_OK;
    }
    if (!json_is_object(j))
        return HS_OK;
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(j, tmp, key, v) {
        const char *k;
        json_t *b;
        if (sq_node(v, &k, &b) && !strcmp(k, "SubLink")) {
            json_t *r = NULL;
            HS_TRY(sublink_once(c, b, &r, err));
            if (r)
                json_object_set_new(j, key, r);
        } else if (strcmp(key, "SubLink") != 0 && strcmp(key, "subselect") != 0) {
            HS_TRY(inline_sublinks(c, v, err));
        }
    }
    return HS_OK;
}

/* SET (a, b) = (x, y) and SET (a, b) = (SELECT x, y ...): each target's
 * MultiAssignRef becomes its own value, x for a (a row's element, or the
 * subquery reduced to that column; a set operation or `*` is read as a
 * derived table), in place. */
static hs_status split_multiassign(dctx *c, json_t *list, hs_error *err)
{
    for (size_t k = 0; k < json_array_size(list); k++) {
        const char *kind;
        json_t *rt, *mb;
        if (!sq_node(json_array_get(list, k), &kind, &rt) || strcmp(kind, "ResTarget") ||
            !sq_node(json_object_get(rt, "val"), &kind, &mb) || strcmp(kind, "MultiAssignRef"))
            continue;
        json_int_t colno = json_integer_value(json_object_get(mb, "colno"));
        json_int_t ncol = json_integer_value(json_object_get(mb, "ncolumns"));
        json_t *src = json_object_get(mb, "source"), *sb, *sel;
        int loc = sq_loc(rt);
        json_t *val = NULL;
        if (colno < 1 || colno > ncol)
            continue;
        if (sq_node(src, &kind, &sb) && !strcmp(kind, "RowExpr")) {
            json_t *args = json_object_get(sb, "args");
            if ((json_int_t)json_array_size(args) != ncol)
                return FAIL(c, HS_INVALID, "42601", loc, "number of columns does not match number of values");
            val = json_deep_copy(json_array_get(args, (size_t)colno - 1));
        } else if (sq_node(src, &kind, &sb) && !strcmp(kind, "SubLink") && dml_jstr(sb, "subLinkType") &&
                   !strcmp(dml_jstr(sb, "subLinkType"), "EXPR_SUBLINK") &&
                   sq_node(json_object_get(sb, "subselect"), &kind, &sel) && !strcmp(kind, "SelectStmt")) {
            json_t *tl = json_object_get(sel, "targetList");
            const char *op = dml_jstr(sel, "op");
            bool plain = (!op || !strcmp(op, "SETOP_NONE")) && !json_object_get(sel, "valuesLists");
            bool star = false;
            for (size_t i = 0; i < json_array_size(tl); i++) {
                json_t *v = json_object_get(json_object_get(json_array_get(tl, i), "ResTarget"), "val");
                json_t *f = json_object_get(json_object_get(v, "ColumnRef"), "fields");
                star |= f && json_object_get(json_array_get(f, json_array_size(f) - 1), "A_Star");
            }
            json_t *q;
            if (plain && !star) {
                if ((json_int_t)json_array_size(tl) != ncol)
                    return FAIL(c, HS_INVALID, "42601", loc, "number of columns does not match number of values");
                q = json_deep_copy(sel);
                if (q && json_object_set_new(q, "targetList",
                                             json_pack("[O]", json_array_get(tl, (size_t)colno - 1))) != 0) {
                    json_decref(q);
                    q = NULL;
                }
            } else {
                json_t *names = json_array();
                for (json_int_t i = 1; names && i <= ncol; i++) {
                    char nm[24];
                    snprintf(nm, sizeof nm, "c%lld", (long long)i);
                    json_array_append_new(names, json_pack("{s:{s:s}}", "String", "sval", nm));
                }
                char cn[24];
                snprintf(cn, sizeof cn, "c%lld", (long long)colno);
                q = names ? json_pack("{s:[{s:{s:{s:{s:[{s:{s:s}},{s:{s:s}}],s:i}},s:i}}],"
                                      "s:[{s:{s:{s:O},s:{s:s,s:o}}}],s:s,s:s}",
                                      "targetList", "ResTarget", "val", "ColumnRef", "fields", "String", "sval",
                                      "_hs_m", "String", "sval", cn, "location", -1, "location", -1,
                                      "fromClause", "RangeSubselect", "subquery", "SelectStmt", sel,
                                      "alias", "aliasname", "_hs_m", "colnames", names,
                                      "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE")
                          : NULL;
            }
            val = q ? json_pack("{s:{s:s,s:{s:o},s:i}}", "SubLink", "subLinkType", "EXPR_SUBLINK",
                                "subselect", "SelectStmt", q, "location", sq_loc(sb))
                    : NULL;
        } else {
            continue;   /* dml_assign_targets reports it */
        }
        if (!val || json_object_set_new(rt, "val", val) != 0)
            return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

/* A copy of an UPDATE/DELETE/MERGE body with the subqueries of its
 * expressions inlined (FROM/USING items and the MERGE source are left to
 * the planner).  Caller json_decrefs *out. */
hs_status dml_inline_body(dctx *c, const json_t *body, json_t **out, hs_error *err)
{
    *out = json_deep_copy(body);
    if (!*out)
        return hs_err_nomem(err, 64);
    hs_status sm = split_multiassign(c, json_object_get(*out, "targetList"), err);
    for (size_t k = 0; sm == HS_OK && k < json_array_size(json_object_get(*out, "mergeWhenClauses")); k++) {
        json_t *wc = json_object_get(json_array_get(json_object_get(*out, "mergeWhenClauses"), k),
                                     "MergeWhenClause");
        sm = split_multiassign(c, json_object_get(wc, "targetList"), err);
    }
    if (sm != HS_OK) {
        json_decref(*out);
        *out = NULL;
        return sm;
    }
    static const char *const keys[] = {"whereClause", "targetList", "joinCondition",
                                       "mergeWhenClauses", "returningList"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *holder = json_object();   /* so that a root SubLink is replaced too */
        json_t *v = json_object_get(*out, keys[i]);
        if (!v) {
            json_decref(holder);
            continue;
        }
        hs_status st = holder ? HS_OK : hs_err_nomem(err, 64);
        if (st == HS_OK && json_object_set(holder, "x", v) != 0)
            st = hs_err_nomem(err, 64);
        if (st == HS_OK)
            st = inline_sublinks(c, holder, err);
        if (st == HS_OK)
            json_object_set(*out, keys[i], json_object_get(holder, "x"));
        json_decref(holder);
        if (st != HS_OK) {
            json_decref(*out);
            *out = NULL;
            return st;
        }
    }
    return HS_OK;
}

/* The target table of a statement: looked up, bound to the transaction,
 * its rows loaded. */
/* For a WHERE on the target alone: *expr, the WHERE bound on the target's
 * rows (dml_target_load keeps only the rows it holds for), and *text, its form
 * that the table scan's filter parser reads back, for pruning and indexes.
 * Either may be NULL (a WHERE that does not bind is reported later, by
 * dml_where_rows).  Caller frees both. */
static void prepare_where(dctx *c, const txn *x, const char *qual, json_t *where, char **text,
                          ex_expr **expr)
{
    *text = NULL;
    *expr = NULL;
    if (!where)
        return;
    hs_error e2 = {0};
    hs_field schema;
    dscope sc = {0};
    ex_expr *chk = NULL;
    if (target_schema(x, &schema, &e2) == HS_OK && dml_dscope_add(&sc, &schema, qual, 3, &e2) == HS_OK) {
        ex_scope scope = dml_scope_of(&sc);
        if (ex_bind_json(where, c->text, &scope, true, expr, &e2) == HS_OK &&
            ex_format(*expr, text, &e2) == HS_OK &&
            ex_parse_filter(*text, &x->tschema, &chk, &e2) != HS_OK) {
            hs_free(*text);
            *text = NULL;
        }
    }
    ex_free(chk);
    dml_dscope_clear(&sc);
    hs_field_clear(&schema);
}

/* where: a WHERE on the target alone, pushed into its scan (or NULL). */
hs_status dml_open_target(dctx *c, txn *x, json_t *rv, json_t *where, target *g,
                          hs_error *err)
{
    memset(g, 0, sizeof *g);
    hs_table *t = NULL;
    HS_TRY(sq_table_lookup(c->s, rv, c->text, &t, err));
    const char *name = dml_jstr(rv, "relname");
    HS_TRY(dml_txn_use(c, x, t, name ? name : "", sq_loc(rv), err));
    g->t = t;
    g->qual = dml_rel_qual(rv);
    char *filter = NULL;
    ex_expr *e = NULL;
    prepare_where(c, x, g->qual, where, &filter, &e);
    hs_status st = dml_target_load(c, x, g, filter, e, err);
    hs_free(filter);
    ex_free(e);
    return st;
}

/* One FROM/USING item as the source (its columns qualified by the item's
 * alias or name). */
static hs_status one_source(dctx *c, json_t *items, const char *what, hs_batch **S,
                            const char **qual, hs_error *err)
{
    if (json_array_size(items) != 1)
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "%s with more than one item is not supported "
                    "(join them in a subquery)", what);
    *qual = item_qual(json_array_get(items, 0));
    return load_source(c, items, S, err);
}

/* Most distinct source keys pushed into the target's scan as an IN list. */
#define SEMIJOIN_MAX 10000

static bool int_type(hs_type t)
{
    return t == HS_TYPE_INT8 || t == HS_TYPE_INT16 || t == HS_TYPE_INT32 || t == HS_TYPE_INT64;
}

/* For a join of the target (sc's first n_left columns, nt of them table
 * columns) with S on cond: "col IN (source values)" when cond has an
 * equality between a target column and a source column of integer or text
 * type and S has at most SEMIJOIN_MAX distinct non-null values there -
 * target rows outside it cannot match, and a filter lets the scan prune
 * files, pages and use indexes.  NULL when there is no such conjunct. */
static char *semijoin_text(dscope *sc, int nt, int n_left, const hs_batch *S, json_t *cond)
{
    int lk[16], rk[16], nk = 0;
    equi_keys(sc, n_left, cond, lk, rk, &nk, 16);
    for (int k = 0; k < nk; k++) {
        if (lk[k] >= nt)
            continue;
        const hs_field *tf = &sc->schema.children[lk[k]];
        const hs_field *sf = &sc->schema.children[rk[k]];
        const hs_column *col = S->cols[rk[k] - n_left];
        bool ints = int_type(tf->type) && int_type(sf->type);
        bool strs = tf->type == HS_TYPE_STRING && sf->type == HS_TYPE_STRING;
        if (!ints && !strs)
            continue;
        hs_map seen = {0};
        hs_buf txt = {0}, key = {0};
        bool ok = hs_buf_puts(&txt, "\"") == HS_OK;
        for (const char *p = tf->name; ok && *p; p++)
            ok = (*p != '"' || hs_buf_puts(&txt, "\"") == HS_OK) && hs_buf_append(&txt, p, 1) == HS_OK;
        ok = ok && hs_buf_puts(&txt, "\" IN (") == HS_OK;
        int64_t n = 0;
        for (int64_t i = 0; ok && i < S->n_rows; i++) {
            hs_buf_reset(&key);
            int r = key_bytes(col, sf, i, &key);
            if (r < 0)
                ok = false;
            if (r != 1)
                continue;
            bool found = false;
            uint64_t v;
            if (hs_map_get_or_put(&seen, key.data, key.len, 1, &v, &found) != HS_OK) {
                ok = false;
                break;
            }
            if (found)
                continue;
            if (++n > SEMIJOIN_MAX) {
                ok = false;
                break;
            }
            ok = n == 1 || hs_buf_puts(&txt, ", ") == HS_OK;
            if (ints) {
                char num[32];
                int64_t x = sf->type == HS_TYPE_INT64 ? HS_COL_VALUES(col, int64_t)[i]
                            : sf->type == HS_TYPE_INT32 ? HS_COL_VALUES(col, int32_t)[i]
                            : sf->type == HS_TYPE_INT16 ? HS_COL_VALUES(col, int16_t)[i]
                                                        : HS_COL_VALUES(col, int8_t)[i];
                snprintf(num, sizeof num, "%lld", (long long)x);
                ok = ok && hs_buf_puts(&txt, num) == HS_OK;
            } else {
                const int32_t *off = HS_COL_OFFSETS(col);
                ok = ok && hs_buf_puts(&txt, "'") == HS_OK;
                for (int32_t b = off[i]; ok && b < off[i + 1]; b++) {
                    char ch = (char)col->values.data[b];
                    ok = (ch != '\'' || hs_buf_puts(&txt, "'") == HS_OK) &&
                         hs_buf_append(&txt, &ch, 1) == HS_OK;
                }
                ok = ok && hs_buf_puts(&txt, "'") == HS_OK;
            }
        }
        ok = ok && hs_buf_puts(&txt, ")") == HS_OK;
        hs_map_free(&seen);
        hs_buf_free(&key);
        if (ok && n == 0) {
            hs_buf_reset(&txt);
            ok = hs_buf_puts(&txt, "false") == HS_OK;   /* nothing can match */
        }
        char *out = NULL;
        if (ok) {
            out = hs_malloc(txt.len + 1);
            if (out) {
                memcpy(out, txt.data, txt.len);
                out[txt.len] = 0;
            }
        }
        hs_buf_free(&txt);
        if (out)
            return out;
    }
    return NULL;
}

/* The target of a join with one source item (UPDATE ... FROM, DELETE ...
 * USING, MERGE): the source is read first, so that the join's equality
 * can narrow the target's scan (semijoin_text); sc gets the target's
 * columns, then the source's. */
hs_status dml_open_joined(dctx *c, txn *x, json_t *rv, json_t *items, const char *what,
                          json_t *cond, target *g, dscope *sc, hs_batch **S, hs_error *err)
{
    memset(g, 0, sizeof *g);
    hs_table *t = NULL;
    HS_TRY(sq_table_lookup(c->s, rv, c->text, &t, err));
    const char *name = dml_jstr(rv, "relname");
    HS_TRY(dml_txn_use(c, x, t, name ? name : "", sq_loc(rv), err));
    g->t = t;
    g->qual = dml_rel_qual(rv);
    const char *q = NULL;
    HS_TRY(one_source(c, items, what, S, &q, err));
    hs_field ts;
    hs_status st = target_schema(x, &ts, err);
    if (st == HS_OK)
        st = dml_dscope_add(sc, &ts, g->qual, 3, err);
    if (st == HS_OK)
        st = dml_dscope_add(sc, &(*S)->schema, q, 0, err);
    hs_field_clear(&ts);
    if (st != HS_OK)
        return st;
    int nt = x->tschema.n_children;
    char *filter = semijoin_text(sc, nt, nt + 3, *S, cond);
    st = dml_target_load(c, x, g, filter, NULL, err);
    hs_free(filter);
    return st;
}

hs_status dml_no_returning(dctx *c, json_t *body, hs_error *err)
{
    c->returning = json_object_get(body, "returningList");
    if (json_object_get(body, "withClause"))
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "WITH on a data-modifying statement is not "
                    "supported");
    return HS_OK;
}

/* Rows of g->rows where `where` (NULL = all) is TRUE: sel list. */
hs_status dml_where_rows(dctx *c, dscope *sc, const target *g, json_t *where, hs_buf *rows,
                         hs_error *err)
{
    int64_t n = g->rows->n_rows;
    uint8_t *sel = hs_malloc((size_t)n + 1);
    if (!sel)
        return hs_err_nomem(err, (size_t)n);
    hs_status st = HS_OK;
    if (where && dml_has_sublink(where, 0)) {
        /* correlated subqueries: the planner's, per row of the target */
        hs_column *v = NULL;
        st = n > 0 ? dml_eval_with_sublinks(c, sc, g->rows, where, &v, err) : HS_OK;
        if (st == HS_OK && v && v->type != HS_TYPE_BOOL)
            st = FAIL(c, HS_INVALID, "42804", -1, "argument of WHERE must be type boolean");
        for (int64_t i = 0; st == HS_OK && v && i < n; i++)
            sel[i] = hs_col_is_valid(v, i) && hs_bit_get(v->values.data, i);
        hs_col_free(v);
    } else if (where) {
        ex_scope scope = dml_scope_of(sc);
        ex_expr *e = NULL;
        int64_t m = 0;
        st = ex_bind_json(where, c->text, &scope, true, &e, err);
        if (st == HS_OK && n > 0)
            st = ex_eval_filter(e, g->rows, NULL, sel, &m, err);
        ex_free(e);
    } else {
        memset(sel, 1, (size_t)n);
    }
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        if (sel[i] && HS_VEC_PUSH(rows, int64_t, i) != HS_OK)
            st = hs_err_nomem(err, 8);
    hs_free(sel);
    return st;
}

/* Distinct left rows of pairs, keeping the first pair of each: idx of the
 * pairs kept. */
hs_status dml_first_pairs(const hs_buf *lo, int64_t n_left, hs_buf *keep, hs_error *err)
{
    uint8_t *seen = hs_calloc((size_t)n_left + 1, 1);
    if (!seen)
        return hs_err_nomem(err, (size_t)n_left);
    for (size_t k = 0; k < HS_VEC_LEN(lo, int64_t); k++) {
        int64_t l = HS_VEC_AT(lo, int64_t, k);
        if (seen[l])
            continue;
        seen[l] = 1;
        if (HS_VEC_PUSH(keep, int64_t, (int64_t)k) != HS_OK) {
            hs_free(seen);
            return hs_err_nomem(err, 8);
        }
    }
    hs_free(seen);
    return HS_OK;
}
