/*
 * sql/ddl.c - data definition statements of a SQL session:
 *
 *   statement                                    does
 *   -------------------------------------------  --------------------------------------
 *   CREATE TABLE [IF NOT EXISTS] name (cols)     hs_table_create: column types as
 *     [PARTITION BY {RANGE|LIST|HASH} (elems)]   casts bind them (so every type a cast
 *     [WITH (key = value, ...)]                  names, pgvector's vector included);
 *                                                elems are Iceberg transforms:
 *                                                col, bucket(n, col), truncate(w, col),
 *                                                year/month/day/hour(col) (and the
 *                                                plural forms), identity(col), void(col);
 *                                                WITH: format_version, location, any
 *                                                other key a table property
 *   CREATE TABLE name [(cols)] AS query          the query's columns, then its rows
 *     [WITH NO DATA]                             appended in one commit
 *   DROP TABLE [IF EXISTS] name [, ...]          hs_catalog_drop_table (no purge)
 *   ALTER TABLE name ADD/DROP COLUMN, ALTER      hs_table_update_schema (Iceberg's
 *     COLUMN c TYPE t, ALTER COLUMN c DROP NOT   rules: promotions only), table
 *     NULL, SET (k = v), RESET (k)               properties
 *   ALTER TABLE name RENAME [COLUMN] a TO b,     rename a column, or the table
 *     ALTER TABLE name RENAME TO new             (hs_catalog_rename_table)
 *   CREATE SCHEMA [IF NOT EXISTS] ns,            the catalog's namespaces
 *     DROP SCHEMA [IF EXISTS] ns
 *
 * Names: with the session's catalog, "ns.table" (nested namespaces
 * "a.b.table"); without a namespace, a quoted path ("/data/t") is a path
 * table, as in queries.  A registered name is an alias of the session, not
 * something DDL changes (0A000).  Spark's "PARTITIONED BY (...)" is accepted
 * for PARTITION BY RANGE (...) (the text is rewritten before parsing:
 * session.c).  DDL is refused inside BEGIN ... COMMIT (0A000): each
 * statement commits on its own.
 */
#include "sql/sql_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "iceberg/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* names                                                               */

/* A RangeVar's target: catalog and identifier (ident hs_malloc'ed). */
typedef struct ddl_name {
    hs_catalog *cat;
    char *ident;
    const char *shown;       /* for messages: ident */
} ddl_name;

static hs_status resolve_name(sq_session *s, const json_t *rv, const char *text, ddl_name *out,
                              hs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *ns = json_string_value(json_object_get(rv, "schemaname"));
    const char *rel = json_string_value(json_object_get(rv, "relname"));
    int loc = sq_loc(rv);
    if (!rel)
        return sq_fail(s, err, HS_INVALID, "42601", text, loc, "a table name is needed");
    if (json_is_string(json_object_get(rv, "catalogname")))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                       "cross-database references are not implemented");
    if (!ns) {
        for (int i = 0; i < s->n_reg; i++)
            if (!strcmp(s->reg[i].name, rel))
                return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                               "\"%s\" is a table registered in the session (an alias): "
                               "change it through its catalog or path", rel);
        if (!strchr(rel, '/'))
            return sq_fail(s, err, HS_INVALID, "3F000", text, loc,
                           "no schema has been selected for \"%s\": name it "
                           "namespace.table in the session's catalog, or give a quoted "
                           "path (\"/dir/table\")", rel);
        HS_TRY(sq_file_access(s, "path tables", text, loc, err));
        if (!s->path_cat)
            HS_TRY(hs_catalog_open_path(NULL, &s->path_cat, err));
        out->cat = s->path_cat;
        out->ident = hs_strdup(rel);
    } else {
        if (!s->catalog)
            return sq_fail(s, err, HS_NOT_FOUND, "3F000", text, loc,
                           "schema \"%s\" does not exist (the session has no catalog)", ns);
        size_t n = strlen(ns) + strlen(rel) + 2;
        out->ident = hs_malloc(n);
        if (out->ident)
            snprintf(out->ident, n, "%s.%s", ns, rel);
        out->cat = s->catalog;
    }
    if (!out->ident)
        return hs_err_nomem(err, 0);
    out->shown = out->ident;
    return HS_OK;
}

/* Forgets (and closes) the session's handle on a table it opened by name. */
static void forget_opened(sq_session *s, const char *ident)
{
    for (int i = 0; i < s->n_opened; i++) {
        if (strcmp(s->opened[i].name, ident) != 0)
            continue;
        if (s->opened[i].owned)
            hs_table_close(s->opened[i].t);
        hs_free(s->opened[i].name);
        memmove(&s->opened[i], &s->opened[i + 1],
                (size_t)(s->n_opened - i - 1) * sizeof *s->opened);
        s->n_opened--;
        return;
    }
}

/* ------------------------------------------------------------------ */
/* values of options and transforms                                    */

/* The text of a DefElem's argument (Integer, Float, String, Boolean,
 * TypeName word), into buf. */
static const char *arg_text(const json_t *arg, char *buf, size_t cap)
{
    const char *k;
    json_t *b;
    if (!arg)
        return "true";   /* WITH (flag) */
    if (!sq_node(arg, &k, &b))
        return NULL;
    if (!strcmp(k, "Integer")) {
        snprintf(buf, cap, "%lld", (long long)json_integer_value(json_object_get(b, "ival")));
        return buf;
    }
    if (!strcmp(k, "Float"))
        return json_string_value(json_object_get(b, "fval"));
    if (!strcmp(k, "String"))
        return json_string_value(json_object_get(b, "sval"));
    if (!strcmp(k, "Boolean"))
        return json_is_true(json_object_get(b, "boolval")) ? "true" : "false";
    if (!strcmp(k, "TypeName")) {
        json_t *names = json_object_get(b, "names");
        return sq_str(json_array_get(names, json_array_size(names) - 1));
    }
    return NULL;
}

/* A DefElem's key: "ns.name" when a namespace was given (WITH (a.b = 1)). */
static const char *def_key(const json_t *de, char *buf, size_t cap)
{
    const char *nm = json_string_value(json_object_get(de, "defname"));
    const char *ns = json_string_value(json_object_get(de, "defnamespace"));
    if (!nm)
        return NULL;
    if (!ns)
        return nm;
    snprintf(buf, cap, "%s.%s", ns, nm);
    return buf;
}

/* Table options of WITH (...): format_version and location apart, the rest
 * properties (keys/values point into opts or into bufs, owned by props). */
typedef struct ddl_props {
    char **keys, **values;
    int n;
    int format_version;
    char *location;
} ddl_props;

static void props_free(ddl_props *p)
{
    for (int i = 0; i < p->n; i++) {
        hs_free(p->keys[i]);
        hs_free(p->values[i]);
    }
    hs_free(p->keys);
    hs_free(p->values);
    hs_free(p->location);
    memset(p, 0, sizeof *p);
}

static hs_status props_from(sq_session *s, const json_t *opts, const char *text, bool values,
                            ddl_props *p, hs_error *err)
{
    size_t n = json_array_size(opts);
    p->keys = hs_calloc(n + 1, sizeof *p->keys);
    p->values = hs_calloc(n + 1, sizeof *p->values);
    if (!p->keys || !p->values)
        return hs_err_nomem(err, 0);
    for (size_t i = 0; i < n; i++) {
        const char *k;
        json_t *de;
        if (!sq_node(json_array_get(opts, i), &k, &de) || strcmp(k, "DefElem") != 0)
            return sq_fail(s, err, HS_INVALID, "42601", text, -1, "malformed WITH option");
        char kb[512], vb[64];
        const char *key = def_key(de, kb, sizeof kb);
        const char *val = values ? arg_text(json_object_get(de, "arg"), vb, sizeof vb) : "";
        if (!key || !val)
            return sq_fail(s, err, HS_INVALID, "22023", text, sq_loc(de),
                           "option \"%s\" needs a constant value", key ? key : "?");
        if (values && (!strcasecmp(key, "format_version") || !strcasecmp(key, "format-version"))) {
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || (v != 2 && v != 3))
                return sq_fail(s, err, HS_INVALID, "22023", text, sq_loc(de),
                               "format_version must be 2 or 3, not \"%s\"", val);
            p->format_version = (int)v;
            continue;
        }
        if (values && !strcasecmp(key, "location")) {
            hs_free(p->location);
            p->location = hs_strdup(val);
            if (!p->location)
                return hs_err_nomem(err, 0);
            continue;
        }
        p->keys[p->n] = hs_strdup(key);
        p->values[p->n] = hs_strdup(val);
        if (!p->keys[p->n] || !p->values[p->n]) {
            p->n++;
            return hs_err_nomem(err, 0);
        }
        p->n++;
    }
    return HS_OK;
}

/* One PartitionElem as the API's spec text ("bucket(16, id)"), into out. */
static hs_status part_elem(sq_session *s, const json_t *pe, const char *text, hs_buf *out,
                           hs_error *err)
{
    const char *col = json_string_value(json_object_get(pe, "name"));
    if (col) {
        HS_TRY(hs_buf_printf(out, "%s", col));
        return HS_OK;
    }
    const char *k;
    json_t *fc;
    int loc = sq_loc(pe);
    if (!sq_node(json_object_get(pe, "expr"), &k, &fc) || strcmp(k, "FuncCall") != 0)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                       "a partition field is a column or a transform: bucket(n, col), "
                       "truncate(w, col), year/month/day/hour(col), identity(col), void(col)");
    json_t *fn = json_object_get(fc, "funcname");
    const char *name = sq_str(json_array_get(fn, json_array_size(fn) - 1));
    static const struct { const char *sql, *api; int n_int; } tr[] = {
        {"bucket", "bucket", 1}, {"truncate", "truncate", 1}, {"year", "year", 0},
        {"years", "year", 0}, {"month", "month", 0}, {"months", "month", 0}, {"day", "day", 0},
        {"days", "day", 0}, {"hour", "hour", 0}, {"hours", "hour", 0},
        {"identity", "identity", 0}, {"void", "void", 0},
    };
    json_t *args = json_object_get(fc, "args");
    for (size_t i = 0; name && i < sizeof tr / sizeof tr[0]; i++) {
        if (strcasecmp(name, tr[i].sql) != 0)
            continue;
        if (json_array_size(args) != (size_t)tr[i].n_int + 1)
            break;
        HS_TRY(hs_buf_printf(out, "%s(", tr[i].api));
        for (size_t a = 0; a < json_array_size(args); a++) {
            json_t *ab;
            json_t *arg = json_array_get(args, a);
            if ((int)a < tr[i].n_int) {
                json_t *iv;
                if (!sq_node(arg, &k, &ab) || strcmp(k, "A_Const") != 0 ||
                    !(iv = json_object_get(json_object_get(ab, "ival"), "ival")))
                    return sq_fail(s, err, HS_INVALID, "42601", text, loc,
                                   "%s takes an integer constant first", name);
                HS_TRY(hs_buf_printf(out, "%lld, ", (long long)json_integer_value(iv)));
            } else {
                json_t *fields;
                if (!sq_node(arg, &k, &ab) || strcmp(k, "ColumnRef") != 0 ||
                    json_array_size(fields = json_object_get(ab, "fields")) != 1 ||
                    !sq_str(json_array_get(fields, 0)))
                    return sq_fail(s, err, HS_INVALID, "42601", text, loc,
                                   "%s takes a column name last", name);
                HS_TRY(hs_buf_printf(out, "%s)", sq_str(json_array_get(fields, 0))));
            }
        }
        return HS_OK;
    }
    return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                   "unknown partition transform %s(): bucket(n, col), truncate(w, col), "
                   "year/month/day/hour(col), identity(col), void(col)", name ? name : "?");
}

static hs_status spec_text(sq_session *s, const json_t *partspec, const char *text, hs_buf *out,
                           hs_error *err)
{
    json_t *ps = json_object_get(partspec, "PartitionSpec");
    if (!ps)
        ps = (json_t *)partspec;
    json_t *elems = json_object_get(ps, "partParams");
    for (size_t i = 0; i < json_array_size(elems); i++) {
        const char *k;
        json_t *pe;
        if (!sq_node(json_array_get(elems, i), &k, &pe) || strcmp(k, "PartitionElem") != 0)
            return sq_fail(s, err, HS_INVALID, "42601", text, -1, "malformed PARTITION BY");
        if (i)
            HS_TRY(hs_buf_printf(out, ", "));
        HS_TRY(part_elem(s, pe, text, out, err));
    }
    return hs_buf_append(out, "", 1);
}

/* ------------------------------------------------------------------ */
/* column types                                                        */

static int no_column(void *ctx, const char *const *names, int n)
{
    (void)ctx;
    (void)names;
    (void)n;
    return -1;
}

/* The field a TypeName names (as CAST(NULL AS type) binds it), named name.
 * numeric / decimal without precision and scale is refused (0A000): a
 * column of PostgreSQL's unconstrained numeric keeps each value's own
 * scale, which a decimal128 column (one scale) cannot, and numeric
 * division rounds at a scale chosen from it (docs/sql.md, DDL). */
static hs_status column_field(sq_session *s, json_t *type_name, const char *name, bool not_null,
                              const char *text, hs_field *out, hs_error *err)
{
    json_t *names = json_object_get(type_name, "names");
    const char *tn = sq_str(json_array_get(names, json_array_size(names) - 1));
    if (tn && (!strcmp(tn, "numeric") || !strcmp(tn, "decimal")) &&
        json_array_size(json_object_get(type_name, "typmods")) == 0) {
        json_t *l = json_object_get(type_name, "location");
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text,
                       json_is_integer(l) ? (int)json_integer_value(l) : -1,
                       "column \"%s\": numeric without precision and scale is not supported "
                       "(a column has one scale; declare numeric(p,s), p <= 38)", name);
    }
    json_t *cast = json_pack("{s:{s:{s:{s:b,s:i}},s:O,s:i}}", "TypeCast", "arg", "A_Const",
                             "isnull", 1, "location", -1, "typeName", type_name, "location", -1);
    if (!cast)
        return hs_err_nomem(err, 0);
    hs_field empty;
    hs_field_init(&empty, "", HS_TYPE_STRUCT, false);
    ex_scope es = {.schema = &empty, .column = no_column};
    ex_expr *e = NULL;
    hs_status st = ex_bind_json(cast, text, &es, false, &e, err);
    json_decref(cast);
    if (st == HS_OK) {
        st = hs_field_copy(ex_type(e), out) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
        if (st == HS_OK) {
            hs_free(out->name);
            out->name = hs_strdup(name);
            out->nullable = !not_null;
            out->field_id = 0;
            if (!out->name)
                st = hs_err_nomem(err, 0);
        }
    }
    ex_free(e);
    hs_field_clear(&empty);
    if (st != HS_OK && !s->sqlstate[0]) {
        char msg[HS_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        sq_fail(s, err, st, sq_guess_sqlstate(st, msg), NULL, -1, "%s", msg);
    }
    return st;
}

/* NOT NULL / NULL of a ColumnDef (other constraints are refused). */
static hs_status column_not_null(sq_session *s, const json_t *cd, const char *text, bool *nn,
                                 hs_error *err)
{
    *nn = json_is_true(json_object_get(cd, "is_not_null"));
    json_t *cons = json_object_get(cd, "constraints");
    for (size_t i = 0; i < json_array_size(cons); i++) {
        const char *k;
        json_t *c;
        if (!sq_node(json_array_get(cons, i), &k, &c))
            continue;
        const char *t = json_string_value(json_object_get(c, "contype"));
        if (t && !strcmp(t, "CONSTR_NOTNULL"))
            *nn = true;
        else if (t && !strcmp(t, "CONSTR_NULL"))
            *nn = false;
        else
            return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, sq_loc(c),
                           "constraint %s is not supported on Iceberg tables (NOT NULL is)",
                           t ? t + 7 : "?");
    }
    if (json_object_get(cd, "raw_default") || json_object_get(cd, "collClause"))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, sq_loc(cd),
                       "column defaults and collations are not supported");
    return HS_OK;
}

/* The Iceberg type JSON of field f (fresh ids; a new reference). */
static hs_status iceberg_type_json(const hs_field *f, json_t **out, hs_error *err)
{
    *out = NULL;
    hs_field root;
    hs_field_init(&root, "", HS_TYPE_STRUCT, false);
    hs_field c;
    hs_status st = hs_field_copy(f, &c) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    if (st == HS_OK && (st = hs_field_add_child(&root, &c)) != HS_OK)
        hs_field_clear(&c);
    ice_schema sc;
    memset(&sc, 0, sizeof sc);
    json_t *j = NULL;
    if (st == HS_OK)
        st = ice_schema_from_field(&root, 0, &sc, err);
    int32_t next = 1;
    if (st == HS_OK)
        st = ice_schema_assign_fresh_ids(&sc, &next, NULL);
    hs_buf text = {0};
    if (st == HS_OK)
        st = ice_schema_to_json(&sc, &text, err);
    if (st == HS_OK) {
        j = hs_json_loadb((const char *)text.data, text.len, 0, NULL);
        if (!j)
            st = hs_err_nomem(err, text.len);
    }
    hs_buf_free(&text);
    if (st == HS_OK) {
        json_t *t = json_object_get(json_array_get(json_object_get(j, "fields"), 0), "type");
        *out = t ? json_incref(t) : NULL;
        if (!*out)
            st = hs_err_set(err, HS_INTERNAL, "no Iceberg type for column %s", f->name);
    }
    json_decref(j);
    ice_schema_clear(&sc);
    hs_field_clear(&root);
    return st;
}

/* ------------------------------------------------------------------ */
/* CREATE TABLE                                                        */

static hs_status create_with(sq_session *s, const ddl_name *nm, const json_t *opts,
                             const json_t *partspec, const struct ArrowSchema *schema,
                             const char *text, hs_table **out, hs_error *err)
{
    ddl_props p = {0};
    hs_buf spec = {0};
    hs_status st = props_from(s, opts, text, true, &p, err);
    if (st == HS_OK && partspec)
        st = spec_text(s, partspec, text, &spec, err);
    if (st == HS_OK) {
        hs_table_create_options o = HS_TABLE_CREATE_OPTIONS_INIT;
        o.arrow_schema = schema;
        o.partition_spec = spec.len ? (const char *)spec.data : NULL;
        o.property_keys = (const char *const *)p.keys;
        o.property_values = (const char *const *)p.values;
        o.n_properties = p.n;
        o.format_version = p.format_version;
        o.location = p.location;
        st = hs_table_create(nm->cat, nm->ident, &o, out, err);
        if (st == HS_CONFLICT)
            st = sq_fail(s, err, HS_CONFLICT, "42P07", NULL, -1, "relation \"%s\" already exists",
                         nm->shown);
    }
    hs_buf_free(&spec);
    props_free(&p);
    return st;
}

static bool table_exists(const ddl_name *nm)
{
    hs_table *t = NULL;
    hs_error e = {0};
    if (hs_table_open(nm->cat, nm->ident, &t, &e) != HS_OK)
        return false;
    hs_table_close(t);
    return true;
}

static hs_status exec_create(sq_session *s, const json_t *b, const char *text, hs_result **out,
                             hs_error *err)
{
    if (json_object_get(b, "inhRelations") || json_object_get(b, "ofTypename") ||
        json_object_get(b, "constraints") || json_object_get(b, "partbound"))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "INHERITS, OF, PARTITION OF and table constraints are not supported");
    const char *pers = json_string_value(json_object_get(b, "relation") ?
                                         json_object_get(json_object_get(b, "relation"),
                                                         "relpersistence") : NULL);
    if (pers && strcmp(pers, "p") != 0)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "TEMPORARY and UNLOGGED tables are not supported");
    ddl_name nm;
    HS_TRY(resolve_name(s, json_object_get(b, "relation"), text, &nm, err));
    hs_status st = HS_OK;
    if (json_is_true(json_object_get(b, "if_not_exists")) && table_exists(&nm)) {
        hs_free(nm.ident);
        return sq_result_tag("CREATE TABLE", -1, out, err);
    }
    hs_field root;
    hs_field_init(&root, "", HS_TYPE_STRUCT, false);
    json_t *elts = json_object_get(b, "tableElts");
    if (json_array_size(elts) == 0)
        st = sq_fail(s, err, HS_INVALID, "42601", text, -1, "a table needs at least one column");
    for (size_t i = 0; st == HS_OK && i < json_array_size(elts); i++) {
        const char *k;
        json_t *cd;
        if (!sq_node(json_array_get(elts, i), &k, &cd) || strcmp(k, "ColumnDef") != 0) {
            st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                         "only column definitions are supported in CREATE TABLE");
            break;
        }
        const char *cn = json_string_value(json_object_get(cd, "colname"));
        for (int j = 0; cn && j < root.n_children; j++)
            if (!strcmp(root.children[j].name, cn))
                st = sq_fail(s, err, HS_INVALID, "42701", text, sq_loc(cd),
                             "column \"%s\" specified more than once", cn);
        bool nn = false;
        if (st == HS_OK)
            st = column_not_null(s, cd, text, &nn, err);
        hs_field f;
        if (st == HS_OK)
            st = column_field(s, json_object_get(cd, "typeName"), cn ? cn : "", nn, text, &f, err);
        if (st == HS_OK && (st = hs_field_add_child(&root, &f)) != HS_OK)
            hs_field_clear(&f);
    }
    struct ArrowSchema as = {0};
    if (st == HS_OK)
        st = hs_arrow_export_schema(&root, &as, err);
    if (st == HS_OK) {
        st = create_with(s, &nm, json_object_get(b, "options"), json_object_get(b, "partspec"), &as,
                         text, NULL, err);
        as.release(&as);
    }
    hs_field_clear(&root);
    hs_free(nm.ident);
    return st == HS_OK ? sq_result_tag("CREATE TABLE", -1, out, err) : st;
}

/* A stream that counts the rows passing through it. */
typedef struct count_stream {
    struct ArrowArrayStream *in;
    int64_t rows;
} count_stream;

static int cs_schema(struct ArrowArrayStream *st, struct ArrowSchema *out)
{
    count_stream *c = st->private_data;
    return c->in->get_schema(c->in, out);
}

static int cs_next(struct ArrowArrayStream *st, struct ArrowArray *out)
{
    count_stream *c = st->private_data;
    int rc = c->in->get_next(c->in, out);
    if (rc == 0 && out->release)
        c->rows += out->length;
    return rc;
}

static const char *cs_error(struct ArrowArrayStream *st)
{
    count_stream *c = st->private_data;
    return c->in->get_last_error(c->in);
}

static void cs_release(struct ArrowArrayStream *st) { st->release = NULL; }

static hs_status exec_create_as(sq_session *s, const json_t *b, const char *text, hs_result **out,
                                hs_error *err)
{
    const char *ot = json_string_value(json_object_get(b, "objtype"));
    if (ot && strcmp(ot, "OBJECT_TABLE") != 0)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "CREATE MATERIALIZED VIEW is not supported");
    json_t *into = json_object_get(json_object_get(b, "into"), "IntoClause");
    if (!into)
        into = json_object_get(b, "into");
    const char *k;
    json_t *q;
    if (!into || !sq_node(json_object_get(b, "query"), &k, &q) || strcmp(k, "SelectStmt") != 0)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "CREATE TABLE AS needs a query");
    ddl_name nm;
    HS_TRY(resolve_name(s, json_object_get(into, "rel"), text, &nm, err));
    if (json_is_true(json_object_get(b, "if_not_exists")) && table_exists(&nm)) {
        hs_free(nm.ident);
        return sq_result_tag("CREATE TABLE AS", -1, out, err);
    }
    /* (cols) AS query: SELECT * FROM (query) AS ctas(cols) */
    json_t *query = json_incref(q), *cols = json_object_get(into, "colNames");
    hs_status st = HS_OK;
    if (json_array_size(cols)) {
        json_t *wrapped = json_pack(
            "{s:[{s:{s:{s:{s:[{s:{}}],s:i}},s:i}}],s:[{s:{s:{s:O},s:{s:s,s:O}}}],"
            "s:s,s:b}",
            "targetList", "ResTarget", "val", "ColumnRef", "fields", "A_Star", "location", -1,
            "location", -1,
            "fromClause", "RangeSubselect", "subquery", "SelectStmt", q, "alias",
            "aliasname", "ctas", "colnames", cols,
            "op", "SETOP_NONE", "all", 0);
        json_decref(query);
        query = wrapped;
        if (!query)
            st = hs_err_nomem(err, 0);
    }
    hs_result *r = NULL;
    if (st == HS_OK)
        st = sq_exec_query(s, query, text, &r, err);
    json_decref(query);
    struct ArrowArrayStream *in = NULL;
    struct ArrowSchema as = {0};
    if (st == HS_OK) {
        in = &r->stream;
        if (in->get_schema(in, &as) != 0)
            st = hs_err_set(err, HS_INTERNAL, "CREATE TABLE AS: %s", in->get_last_error(in));
    }
    hs_table *t = NULL;
    if (st == HS_OK) {
        st = create_with(s, &nm, json_object_get(into, "options"), NULL, &as, text, &t, err);
        as.release(&as);
    }
    int64_t rows = 0;
    if (st == HS_OK && !json_is_true(json_object_get(into, "skipData"))) {
        count_stream c = {in, 0};
        struct ArrowArrayStream cs = {cs_schema, cs_next, cs_error, cs_release, &c};
        st = hs_table_append(t, &cs, err);
        rows = c.rows;
        if (st != HS_OK) {
            /* the table was created empty; the failed append left it so:
             * drop it, so the statement has no effect */
            hs_error e2 = {0};
            hs_table_close(t);
            t = NULL;
            (void)hs_catalog_drop_table(nm.cat, nm.ident, 1, &e2);
        }
    }
    hs_table_close(t);
    if (r)
        hs_result_free(r);
    hs_free(nm.ident);
    return st == HS_OK ? sq_result_tag("SELECT", rows, out, err) : st;
}

/* ------------------------------------------------------------------ */
/* DROP TABLE / SCHEMA                                                 */

/* A RangeVar from a DropStmt object: a List of String names. */
static json_t *rangevar_of(const json_t *obj)
{
    json_t *items = json_object_get(json_object_get(obj, "List"), "items");
    size_t n = json_array_size(items);
    if (n == 0 || n > 3)
        return NULL;
    const char *rel = sq_str(json_array_get(items, n - 1));
    const char *ns = n >= 2 ? sq_str(json_array_get(items, n - 2)) : NULL;
    const char *cat = n == 3 ? sq_str(json_array_get(items, 0)) : NULL;
    json_t *rv = json_pack("{s:s,s:i}", "relname", rel ? rel : "", "location", -1);
    if (rv && ns)
        json_object_set_new(rv, "schemaname", json_string(ns));
    if (rv && cat)
        json_object_set_new(rv, "catalogname", json_string(cat));
    return rv;
}

static hs_status exec_drop_table(sq_session *s, const json_t *b, const char *text,
                                 hs_result **out, hs_error *err)
{
    bool missing_ok = json_is_true(json_object_get(b, "missing_ok"));
    json_t *objs = json_object_get(b, "objects");
    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *rv = rangevar_of(json_array_get(objs, i));
        if (!rv)
            return hs_err_nomem(err, 0);
        ddl_name nm;
        hs_status st = resolve_name(s, rv, text, &nm, err);
        json_decref(rv);
        HS_TRY(st);
        forget_opened(s, nm.ident);
        st = hs_catalog_drop_table(nm.cat, nm.ident, 0, err);
        if (st == HS_NOT_FOUND) {
            st = missing_ok ? HS_OK
                            : sq_fail(s, err, HS_NOT_FOUND, "42P01", NULL, -1,
                                      "table \"%s\" does not exist", nm.shown);
        }
        hs_free(nm.ident);
        HS_TRY(st);
    }
    return sq_result_tag("DROP TABLE", -1, out, err);
}

static hs_status exec_schema(sq_session *s, const char *kind, const json_t *b, const char *text,
                             hs_result **out, hs_error *err)
{
    if (!s->catalog)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "schemas are the namespaces of the session's catalog, and it has none");
    if (!strcmp(kind, "CreateSchemaStmt")) {
        const char *ns = json_string_value(json_object_get(b, "schemaname"));
        if (!ns || json_array_size(json_object_get(b, "schemaElts")))
            return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                           "CREATE SCHEMA needs a name and no elements");
        hs_status st = hs_catalog_create_namespace(s->catalog, ns, err);
        if (st == HS_CONFLICT)
            st = json_is_true(json_object_get(b, "if_not_exists"))
                     ? HS_OK
                     : sq_fail(s, err, HS_CONFLICT, "42P06", NULL, -1,
                               "schema \"%s\" already exists", ns);
        HS_TRY(st);
        return sq_result_tag("CREATE SCHEMA", -1, out, err);
    }
    bool missing_ok = json_is_true(json_object_get(b, "missing_ok"));
    json_t *objs = json_object_get(b, "objects");
    for (size_t i = 0; i < json_array_size(objs); i++) {
        const char *ns = sq_str(json_array_get(objs, i));
        if (!ns)
            return sq_fail(s, err, HS_INVALID, "42601", text, -1, "malformed DROP SCHEMA");
        hs_status st = hs_catalog_drop_namespace(s->catalog, ns, err);
        if (st == HS_NOT_FOUND)
            st = missing_ok ? HS_OK
                            : sq_fail(s, err, HS_NOT_FOUND, "3F000", NULL, -1,
                                      "schema \"%s\" does not exist", ns);
        else if (st == HS_CONFLICT || st == HS_INVALID) {
            char msg[HS_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            st = sq_fail(s, err, HS_CONFLICT, "2BP01", NULL, -1,
                         "cannot drop schema %s because other objects depend on it (%s)", ns, msg);
        }
        HS_TRY(st);
    }
    return sq_result_tag("DROP SCHEMA", -1, out, err);
}

/* ------------------------------------------------------------------ */
/* ALTER TABLE                                                         */

static hs_status open_target(sq_session *s, const json_t *rv, const char *text, ddl_name *nm,
                             hs_table **t, hs_error *err)
{
    HS_TRY(resolve_name(s, rv, text, nm, err));
    forget_opened(s, nm->ident);
    hs_status st = hs_table_open(nm->cat, nm->ident, t, err);
    if (st == HS_NOT_FOUND)
        st = sq_fail(s, err, HS_NOT_FOUND, "42P01", NULL, -1, "relation \"%s\" does not exist",
                     nm->shown);
    if (st != HS_OK)
        hs_free(nm->ident);
    return st;
}

/* One AlterTableCmd into a schema change (changes) or properties. */
static hs_status alter_cmd(sq_session *s, hs_table *t, const json_t *cmd, const char *text,
                           json_t *changes, hs_error *err)
{
    const char *sub = json_string_value(json_object_get(cmd, "subtype"));
    const char *name = json_string_value(json_object_get(cmd, "name"));
    const char *k;
    json_t *def = json_object_get(cmd, "def"), *cd = NULL;
    sq_node(def, &k, &cd);
    int loc = -1;
    if (sub && !strcmp(sub, "AT_AddColumn") && cd) {
        bool nn;
        HS_TRY(column_not_null(s, cd, text, &nn, err));
        if (nn)
            return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, sq_loc(cd),
                           "a column added to an existing table must allow NULL");
        const char *cn = json_string_value(json_object_get(cd, "colname"));
        hs_field f;
        HS_TRY(column_field(s, json_object_get(cd, "typeName"), cn ? cn : "", false, text, &f,
                            err));
        json_t *tj = NULL;
        hs_status st = iceberg_type_json(&f, &tj, err);
        hs_field_clear(&f);
        HS_TRY(st);
        return json_array_append_new(changes, json_pack("{s:s,s:s,s:o}", "op", "add", "name", cn,
                                                        "type", tj)) ? hs_err_nomem(err, 0) : HS_OK;
    }
    if (sub && !strcmp(sub, "AT_DropColumn") && name)
        return json_array_append_new(changes, json_pack("{s:s,s:s}", "op", "drop", "name", name))
                   ? hs_err_nomem(err, 0) : HS_OK;
    if (sub && !strcmp(sub, "AT_DropNotNull") && name)
        return json_array_append_new(changes, json_pack("{s:s,s:s}", "op", "make_optional", "name",
                                                        name)) ? hs_err_nomem(err, 0) : HS_OK;
    if (sub && !strcmp(sub, "AT_AlterColumnType") && name && cd) {
        if (json_object_get(cd, "raw_default"))
            return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                           "ALTER COLUMN TYPE ... USING is not supported (Iceberg promotes types "
                           "without rewriting data)");
        hs_field f;
        HS_TRY(column_field(s, json_object_get(cd, "typeName"), name, false, text, &f, err));
        json_t *tj = NULL;
        hs_status st = iceberg_type_json(&f, &tj, err);
        hs_field_clear(&f);
        HS_TRY(st);
        return json_array_append_new(changes, json_pack("{s:s,s:s,s:o}", "op", "update", "name",
                                                        name, "type", tj))
                   ? hs_err_nomem(err, 0) : HS_OK;
    }
    if (sub && (!strcmp(sub, "AT_SetRelOptions") || !strcmp(sub, "AT_ResetRelOptions"))) {
        bool set = !strcmp(sub, "AT_SetRelOptions");
        ddl_props p = {0};
        /* the options come as {"List": {"items": [DefElem...]}} */
        json_t *items = json_is_array(def) ? def
                        : json_object_get(json_object_get(def, "List"), "items");
        hs_status st = props_from(s, items, text, set, &p, err);
        if (st == HS_OK && (p.format_version || p.location))
            st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                         "format_version and location cannot be changed by ALTER TABLE");
        if (st == HS_OK && p.n) {
            if (set)
                st = hs_table_set_properties(t, (const char *const *)p.keys,
                                             (const char *const *)p.values, p.n, err);
            else
                st = hs_table_remove_properties(t, (const char *const *)p.keys, p.n, err);
        }
        props_free(&p);
        return st;
    }
    return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                   "ALTER TABLE %s is not supported (ADD/DROP COLUMN, ALTER COLUMN TYPE, "
                   "ALTER COLUMN DROP NOT NULL, RENAME, SET/RESET (...) are)",
                   sub ? sub + 3 : "?");
}

static hs_status exec_alter(sq_session *s, const json_t *b, const char *text, hs_result **out,
                            hs_error *err)
{
    const char *ot = json_string_value(json_object_get(b, "objtype"));
    if (ot && strcmp(ot, "OBJECT_TABLE") != 0)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1, "only ALTER TABLE is supported");
    ddl_name nm;
    hs_table *t = NULL;
    hs_status st = open_target(s, json_object_get(b, "relation"), text, &nm, &t, err);
    if (st == HS_NOT_FOUND && json_is_true(json_object_get(b, "missing_ok"))) {
        hs_err_clear(err);
        s->sqlstate[0] = 0;
        return sq_result_tag("ALTER TABLE", -1, out, err);
    }
    HS_TRY(st);
    json_t *changes = json_array();
    json_t *cmds = json_object_get(b, "cmds");
    st = changes ? HS_OK : hs_err_nomem(err, 0);
    for (size_t i = 0; st == HS_OK && i < json_array_size(cmds); i++) {
        const char *k;
        json_t *cmd;
        if (!sq_node(json_array_get(cmds, i), &k, &cmd) || strcmp(k, "AlterTableCmd") != 0)
            st = sq_fail(s, err, HS_INVALID, "42601", text, -1, "malformed ALTER TABLE");
        else
            st = alter_cmd(s, t, cmd, text, changes, err);
    }
    if (st == HS_OK && json_array_size(changes)) {
        char *cj = hs_json_dumps(changes, JSON_COMPACT);
        st = cj ? hs_table_update_schema(t, cj, err) : hs_err_nomem(err, 0);
        free(cj);
    }
    json_decref(changes);
    hs_table_close(t);
    hs_free(nm.ident);
    return st == HS_OK ? sq_result_tag("ALTER TABLE", -1, out, err) : st;
}

static hs_status exec_rename(sq_session *s, const json_t *b, const char *text, hs_result **out,
                             hs_error *err)
{
    const char *rt = json_string_value(json_object_get(b, "renameType"));
    const char *newname = json_string_value(json_object_get(b, "newname"));
    if (!rt || !newname || (strcmp(rt, "OBJECT_COLUMN") != 0 && strcmp(rt, "OBJECT_TABLE") != 0))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "only ALTER TABLE ... RENAME [COLUMN] is supported");
    ddl_name nm;
    if (!strcmp(rt, "OBJECT_TABLE")) {
        HS_TRY(resolve_name(s, json_object_get(b, "relation"), text, &nm, err));
        forget_opened(s, nm.ident);
        /* the new name stays in the old one's namespace (PostgreSQL's rule) */
        const char *dot = nm.cat == s->catalog ? strrchr(nm.ident, '.') : NULL;
        size_t n = strlen(nm.ident) + strlen(newname) + 2;
        char *to = hs_malloc(n);
        hs_status st = to ? HS_OK : hs_err_nomem(err, n);
        if (st == HS_OK) {
            if (dot)
                snprintf(to, n, "%.*s.%s", (int)(dot - nm.ident), nm.ident, newname);
            else
                snprintf(to, n, "%s", newname);
            st = hs_catalog_rename_table(nm.cat, nm.ident, to, err);
            if (st == HS_NOT_FOUND)
                st = sq_fail(s, err, HS_NOT_FOUND, "42P01", NULL, -1,
                             "relation \"%s\" does not exist", nm.shown);
            else if (st == HS_CONFLICT)
                st = sq_fail(s, err, HS_CONFLICT, "42P07", NULL, -1,
                             "relation \"%s\" already exists", to);
        }
        hs_free(to);
        hs_free(nm.ident);
        return st == HS_OK ? sq_result_tag("ALTER TABLE", -1, out, err) : st;
    }
    hs_table *t = NULL;
    HS_TRY(open_target(s, json_object_get(b, "relation"), text, &nm, &t, err));
    const char *col = json_string_value(json_object_get(b, "subname"));
    json_t *ch = json_pack("[{s:s,s:s,s:s}]", "op", "rename", "name", col ? col : "", "to",
                           newname);
    char *cj = ch ? hs_json_dumps(ch, JSON_COMPACT) : NULL;
    hs_status st = cj ? hs_table_update_schema(t, cj, err) : hs_err_nomem(err, 0);
    free(cj);
    json_decref(ch);
    hs_table_close(t);
    hs_free(nm.ident);
    return st == HS_OK ? sq_result_tag("ALTER TABLE", -1, out, err) : st;
}

/* ------------------------------------------------------------------ */
/* entry                                                               */

bool sq_is_ddl(const char *kind, const json_t *stmt)
{
    if (!strcmp(kind, "CreateStmt") || !strcmp(kind, "CreateTableAsStmt") ||
        !strcmp(kind, "AlterTableStmt") || !strcmp(kind, "CreateSchemaStmt"))
        return true;
    if (!strcmp(kind, "RenameStmt")) {
        const char *rt = json_string_value(json_object_get(stmt, "renameType"));
        return rt && (!strcmp(rt, "OBJECT_COLUMN") || !strcmp(rt, "OBJECT_TABLE"));
    }
    if (!strcmp(kind, "DropStmt")) {
        const char *rt = json_string_value(json_object_get(stmt, "removeType"));
        return rt && (!strcmp(rt, "OBJECT_TABLE") || !strcmp(rt, "OBJECT_SCHEMA"));
    }
    return false;
}

hs_status sq_exec_ddl(sq_session *s, const char *kind, const json_t *b, const char *text,
                      hs_result **out, hs_error *err)
{
    *out = NULL;
    if (sq_txn_open(s))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1,
                       "%s inside a transaction block is not supported: DDL commits on its own",
                       kind);
    if (!strcmp(kind, "CreateStmt"))
        return exec_create(s, b, text, out, err);
    if (!strcmp(kind, "CreateTableAsStmt"))
        return exec_create_as(s, b, text, out, err);
    if (!strcmp(kind, "AlterTableStmt"))
        return exec_alter(s, b, text, out, err);
    if (!strcmp(kind, "RenameStmt"))
        return exec_rename(s, b, text, out, err);
    if (!strcmp(kind, "CreateSchemaStmt"))
        return exec_schema(s, kind, b, text, out, err);
    const char *rt = json_string_value(json_object_get(b, "removeType"));
    if (rt && !strcmp(rt, "OBJECT_SCHEMA"))
        return exec_schema(s, "DropSchema", b, text, out, err);
    return exec_drop_table(s, b, text, out, err);
}
