/*
 * sql/plan_stmt.c - EXPLAIN [ANALYZE] and CREATE INDEX / DROP INDEX (the
 * mapping of pgvector operator classes and index methods to our kinds).
 * See plan_int.h for how the planner files divide the work.
 */
#include "sql/plan_int.h"

/* ------------------------------------------------------------------ */
/* EXPLAIN                                                             */

hs_status sq_exec_explain(sq_session *s, const json_t *stmt, const char *text, hs_result **out,
                          hs_error *err)
{
    json_t *q = pl_jget(stmt, "query"), *sel;
    bool analyze = false;
    size_t i;
    json_t *o;
    json_array_foreach(pl_jget(stmt, "options"), i, o) {
        json_t *d = pl_jget(o, "DefElem");
        const char *nm = pl_jstrv(d, "defname");
        json_t *arg = pl_jget(d, "arg");
        bool on = true;
        if (arg) {
            json_t *bv = pl_jget(arg, "Boolean");
            const char *sv = sq_str(arg);
            if (bv)
                on = json_is_true(pl_jget(bv, "boolval"));
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
    if (!pl_is_kind(q, "SelectStmt", &sel))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, pl_node_loc(q),
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

/* Index names outlive the session: CREATE INDEX records the name as the
 * table property hyperstream.sql.index.<name> = {"column":..,"kind":..}, and
 * DROP INDEX finds it in the properties of the session's tables (registered
 * or opened by name); PostgreSQL's names are unique per schema, ours per
 * table, looked up across the session's tables. */
#define IX_NAME_PREFIX "hyperstream.sql.index."

/* The {"column","kind"} recorded under name on t, or NULL (new reference). */
static json_t *ix_name_get(hs_table *t, const char *name)
{
    char *js = NULL;
    hs_error e = {0};
    if (hs_table_properties(t, &js, &e) != HS_OK)
        return NULL;
    json_t *props = hs_json_loads(js, 0, NULL);
    hs_string_free(js);
    hs_buf key = {0};
    json_t *v = NULL;
    if (props && hs_buf_printf(&key, IX_NAME_PREFIX "%s", name) == HS_OK) {
        const char *txt = json_string_value(json_object_get(props, hs_buf_cstr(&key)));
        v = txt ? hs_json_loads(txt, 0, NULL) : NULL;
        if (v && (!json_is_string(json_object_get(v, "column")) ||
                  !json_is_string(json_object_get(v, "kind")))) {
            json_decref(v);
            v = NULL;
        }
    }
    hs_buf_free(&key);
    json_decref(props);
    return v;
}

/* The session's table holding an index named name (and its record), or NULL. */
static hs_table *ix_name_find(sq_session *s, const char *name, json_t **rec)
{
    *rec = NULL;
    for (int pass = 0; pass < 2; pass++) {
        sq_table_ent *a = pass ? s->opened : s->reg;
        int n = pass ? s->n_opened : s->n_reg;
        for (int i = 0; i < n; i++)
            if (a[i].t && (*rec = ix_name_get(a[i].t, name)) != NULL)
                return a[i].t;
    }
    return NULL;
}

static hs_status create_index(sq_session *s, const json_t *b, const char *text, hs_result **out,
                              hs_error *err)
{
    int loc = pl_first_loc(b, 0);
    if (json_is_true(pl_jget(b, "unique")) || json_is_true(pl_jget(b, "primary")))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc, "unique indexes are not supported");
    if (pl_jget(b, "whereClause"))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc, "partial indexes are not supported");
    json_t *params = pl_jget(b, "indexParams");
    if (json_array_size(params) != 1)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                       "indexes are on one column");
    json_t *ie = pl_jget(json_array_get(params, 0), "IndexElem");
    const char *col = pl_jstrv(ie, "name");
    if (!col)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc, "expression indexes are not supported");
    json_t *oc = pl_jget(ie, "opclass");
    const char *opclass = json_array_size(oc) ? sq_str(json_array_get(oc, json_array_size(oc) - 1)) : NULL;
    const char *method = pl_jstrv(b, "accessMethod");
    const char *kind = NULL, *metric = NULL;
    HS_TRY(index_kind(s, text, loc, method ? method : "btree", opclass, &kind, &metric, err));
    json_t *rv = pl_jget(b, "relation");
    hs_table *t;
    HS_TRY(sq_table_lookup(s, rv, text, &t, err));
    /* the name (default: <table>_<column>_idx), which must be new */
    const char *relname = pl_jstrv(pl_jget(rv, "RangeVar") ? pl_jget(rv, "RangeVar") : rv, "relname");
    char defname[256];
    const char *name = pl_jstrv(b, "idxname");
    if (!name) {
        snprintf(defname, sizeof defname, "%s_%s_idx", relname ? relname : "t", col);
        name = defname;
    }
    json_t *prev = NULL;
    hs_table *holder = ix_name_find(s, name, &prev);
    if (!holder && (prev = ix_name_get(t, name)) != NULL)
        holder = t;
    json_decref(prev);
    if (holder) {
        if (json_is_true(pl_jget(b, "if_not_exists")))
            return sq_result_tag("CREATE INDEX", -1, out, err);
        return sq_fail(s, err, HS_CONFLICT, "42P07", text, loc, "relation \"%s\" already exists",
                       name);
    }
    json_t *pj = json_object();
    if (!pj)
        return hs_err_nomem(err, 0);
    if (metric)
        json_object_set_new(pj, "metric", json_string(metric));
    size_t i;
    json_t *o;
    hs_status st = HS_OK;
    json_array_foreach(pl_jget(b, "options"), i, o) {
        json_t *d = pl_jget(o, "DefElem"), *arg = pl_jget(d, "arg");
        const char *nm = pl_jstrv(d, "defname");
        json_t *iv = pl_jget(pl_jget(arg, "Integer"), "ival");
        long long v = json_is_integer(iv) ? json_integer_value(iv) : 0;
        if (nm && !strcmp(nm, "cluster") && metric) {
            /* a vector index's cluster column (table/vcluster.h) */
            const char *cv = pl_jstrv(pl_jget(arg, "String"), "sval");
            if (!cv) {
                st = sq_fail(s, err, HS_INVALID, "22023", text, sq_loc(d),
                             "option \"cluster\" takes a column name, e.g. cluster = 'category'");
                break;
            }
            json_object_set_new(pj, "cluster", json_string(cv));
            continue;
        }
        const char *key = !nm ? NULL : !strcmp(nm, "m") ? "m"
                        : !strcmp(nm, "ef_construction") ? "ef_construction"
                        : !strcmp(nm, "lists") ? "ivf_lists" : NULL;
        if (!key || (!pl_jget(arg, "Integer"))) {
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
    /* INCLUDE (a, b): the columns a clustered vector index's blocks carry */
    json_t *incl = pl_jget(b, "indexIncludingParams");
    if (st == HS_OK && json_array_size(incl) && !json_object_get(pj, "cluster"))
        st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                     "INCLUDE needs a vector index with a cluster column: USING hnsw (...) "
                     "INCLUDE (...) WITH (cluster = 'column')");
    if (st == HS_OK && json_array_size(incl)) {
        json_t *names = json_array();
        json_array_foreach(incl, i, o) {
            const char *nm = pl_jstrv(pl_jget(o, "IndexElem"), "name");
            if (!nm) {
                st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                             "INCLUDE takes column names");
                break;
            }
            json_array_append_new(names, json_string(nm));
        }
        json_object_set_new(pj, "include", names);
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
    /* record the name with the table (one more commit: properties) */
    json_t *rec = json_pack("{s:s,s:s}", "column", col, "kind", kind);
    char *val = rec ? hs_json_dumps(rec, JSON_COMPACT) : NULL;
    json_decref(rec);
    hs_buf key = {0};
    if (!val || hs_buf_printf(&key, IX_NAME_PREFIX "%s", name) != HS_OK) {
        free(val);
        hs_buf_free(&key);
        return hs_err_nomem(err, 64);
    }
    const char *k1[1] = {hs_buf_cstr(&key)}, *v1[1] = {val};
    st = hs_table_set_properties(t, k1, v1, 1, err);
    free(val);
    hs_buf_free(&key);
    HS_TRY(st);
    return sq_result_tag("CREATE INDEX", -1, out, err);
}

static hs_status drop_index(sq_session *s, const json_t *b, const char *text, hs_result **out,
                            hs_error *err)
{
    bool missing_ok = json_is_true(pl_jget(b, "missing_ok"));
    size_t i;
    json_t *o;
    json_array_foreach(pl_jget(b, "objects"), i, o) {
        json_t *items = pl_jget(pl_jget(o, "List"), "items");
        const char *name = sq_str(json_array_get(items, json_array_size(items) - 1));
        json_t *rec = NULL;
        hs_table *t = name ? ix_name_find(s, name, &rec) : NULL;
        if (!t) {
            if (missing_ok)
                continue;
            return sq_fail(s, err, HS_NOT_FOUND, "42704", text, pl_first_loc(b, 0),
                           "index \"%s\" does not exist", name ? name : "?");
        }
        /* an index dropped outside SQL meanwhile: only its name goes */
        hs_status st = hs_table_drop_index(t, pl_jstrv(rec, "column"), pl_jstrv(rec, "kind"), err);
        json_decref(rec);
        if (st == HS_NOT_FOUND)
            st = HS_OK;
        HS_TRY(st);
        hs_buf key = {0};
        if (hs_buf_printf(&key, IX_NAME_PREFIX "%s", name) != HS_OK)
            return hs_err_nomem(err, 64);
        const char *k1[1] = {hs_buf_cstr(&key)};
        st = hs_table_remove_properties(t, k1, 1, err);
        hs_buf_free(&key);
        HS_TRY(st);
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
