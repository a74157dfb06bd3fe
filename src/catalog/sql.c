/*
 * catalog/sql.c - the SQL catalog in SQLite, compatible with pyiceberg's
 * SqlCatalog and Java's JdbcCatalog (both open our file; we open theirs).
 *
 * Schema (exactly what pyiceberg's SQLAlchemy models create; Java's JDBC
 * "V1" schema is the same):
 *
 *   iceberg_tables                          iceberg_namespace_properties
 *   --------------------------------------  -----------------------------------
 *   catalog_name VARCHAR(255) NOT NULL  PK  catalog_name VARCHAR(255) NOT NULL  PK
 *   table_namespace VARCHAR(255) NOT NULL PK namespace VARCHAR(255) NOT NULL   PK
 *   table_name VARCHAR(255) NOT NULL    PK  property_key VARCHAR(255) NOT NULL  PK
 *   metadata_location VARCHAR(1000)         property_value VARCHAR(1000) NOT NULL
 *   previous_metadata_location VARCHAR(1000)
 *   iceberg_type VARCHAR(5)   ('TABLE'; absent in "V0" files, then not used)
 *
 * Identifiers: "ns1.ns2.table" - the namespace column holds "ns1.ns2".  A
 * namespace exists when it (or a namespace below it) has a property row or a
 * table row, as in pyiceberg; an empty create stores {"exists": "true"}.
 *
 * Metadata files: <location>/metadata/<version %05d>-<uuid>.metadata.json,
 * version 0 at create and (version of the base file name) + 1 at commit, the
 * names Java and pyiceberg use.  They are written exclusively (never over an
 * existing file) and published by the row change:
 *
 *   create:  write 00000-<uuid>  ->  INSERT row (PK violation: HS_CONFLICT)
 *   commit:  write 0000N-<uuid>  ->  UPDATE iceberg_tables SET metadata_location
 *            = new, previous_metadata_location = base WHERE catalog_name = ? AND
 *            table_namespace = ? AND table_name = ? AND metadata_location = base
 *            (0 rows: HS_CONFLICT, or HS_NOT_FOUND when the row is gone)
 *
 * A commit that lost removes its metadata file again (best effort: a crash
 * leaves an orphan that nothing references).  Each statement runs in
 * autocommit mode (multi-statement changes in BEGIN IMMEDIATE), with a busy
 * timeout so concurrent processes queue on SQLite's lock instead of failing.
 * A handle must not cross fork(): open one per process.
 */
#include "catalog/catalog_int.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "io/io.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>

#define SQL_BUSY_TIMEOUT_MS 60000

typedef struct sql_catalog {
    cat_catalog base;
    sqlite3 *db;
    char *name;        /* catalog_name column value; owned */
    char *warehouse;   /* owned, no trailing slash */
    char *db_path;     /* owned, for messages */
    bool v1;           /* iceberg_type column present */
    int busy_ms;       /* SQLite busy timeout */
} sql_catalog;

static const char *SCHEMA_SQL =
    "CREATE TABLE IF NOT EXISTS iceberg_tables (\n"
    "\tcatalog_name VARCHAR(255) NOT NULL, \n"
    "\ttable_namespace VARCHAR(255) NOT NULL, \n"
    "\ttable_name VARCHAR(255) NOT NULL, \n"
    "\tmetadata_location VARCHAR(1000), \n"
    "\tprevious_metadata_location VARCHAR(1000), \n"
    "\ticeberg_type VARCHAR(5), \n"
    "\tPRIMARY KEY (catalog_name, table_namespace, table_name)\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (\n"
    "\tcatalog_name VARCHAR(255) NOT NULL, \n"
    "\tnamespace VARCHAR(255) NOT NULL, \n"
    "\tproperty_key VARCHAR(255) NOT NULL, \n"
    "\tproperty_value VARCHAR(1000) NOT NULL, \n"
    "\tPRIMARY KEY (catalog_name, namespace, property_key)\n"
    ");";

/* ---- statement helpers ------------------------------------------------------------ */

/* SQLite result -> status.  SQLITE_BUSY / SQLITE_LOCKED (another connection
 * held the lock past the busy timeout) are HS_CONFLICT: the commit loop
 * (catalog.c) retries them with backoff like a lost compare-and-swap, since
 * nothing was changed. */
static hs_status sql_error(sql_catalog *sc, int rc, const char *what, hs_error *err)
{
    int prim = rc & 0xff;
    if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
        return hs_err_set(err, HS_CONFLICT, "%s: %s: the catalog database stayed locked by "
                          "another connection for the busy timeout (%d ms): %s", sc->db_path,
                          what, sc->busy_ms, sqlite3_errmsg(sc->db));
    hs_status code = rc == SQLITE_NOMEM ? HS_NOMEM
                     : rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? HS_CORRUPT
                     : prim == SQLITE_CONSTRAINT ? HS_CONFLICT : HS_IO;
    return hs_err_set(err, code, "%s: %s: %s", sc->db_path, what, sqlite3_errmsg(sc->db));
}

/* Whether the last statement failed on a constraint (a duplicate key), not
 * on a busy lock: both are HS_CONFLICT. */
static bool is_constraint(sql_catalog *sc)
{
    return (sqlite3_errcode(sc->db) & 0xff) == SQLITE_CONSTRAINT;
}

/* Prepares sql and binds args[0..n) as text (?1..?n). */
static hs_status q_prepare(sql_catalog *sc, const char *sql, const char *const *args, int n,
                           sqlite3_stmt **out, hs_error *err)
{
    *out = NULL;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(sc->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_error(sc, rc, "prepare", err);
    for (int i = 0; i < n; i++) {
        rc = args[i] ? sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_STATIC)
                     : sqlite3_bind_null(st, i + 1);
        if (rc != SQLITE_OK) {
            sqlite3_finalize(st);
            return sql_error(sc, rc, "bind", err);
        }
    }
    *out = st;
    return HS_OK;
}

/* Runs a statement without result rows; *changes (may be NULL) = rows changed. */
static hs_status q_exec(sql_catalog *sc, const char *sql, const char *const *args, int n,
                        int *changes, hs_error *err)
{
    sqlite3_stmt *st;
    HS_TRY(q_prepare(sc, sql, args, n, &st, err));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    }
    hs_status s = HS_OK;
    if (rc != SQLITE_DONE)
        s = sql_error(sc, rc, sql, err);
    else if (changes)
        *changes = sqlite3_changes(sc->db);
    sqlite3_finalize(st);
    return s;
}

/* Collects column 0 (and column 1 into v1 when non-NULL) of every row. */
static hs_status q_strings(sql_catalog *sc, const char *sql, const char *const *args, int n,
                           char ***v0, char ***v1, size_t *count, hs_error *err)
{
    *v0 = NULL;
    if (v1)
        *v1 = NULL;
    *count = 0;
    sqlite3_stmt *st;
    HS_TRY(q_prepare(sc, sql, args, n, &st, err));
    char **a = NULL, **b = NULL;
    size_t len = 0, cap = 0;
    hs_status s = HS_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            char **na = hs_realloc(a, ncap * sizeof *na);
            if (na)
                a = na;
            char **nb = v1 ? hs_realloc(b, ncap * sizeof *nb) : NULL;
            if (nb)
                b = nb;
            if (!na || (v1 && !nb)) {
                s = hs_err_nomem(err, ncap * sizeof *na);
                break;
            }
            cap = ncap;
        }
        const char *x = (const char *)sqlite3_column_text(st, 0);
        const char *y = v1 ? (const char *)sqlite3_column_text(st, 1) : NULL;
        a[len] = hs_strdup(x ? x : "");
        if (v1)
            b[len] = hs_strdup(y ? y : "");
        len++;
        if (!a[len - 1] || (v1 && !b[len - 1])) {
            s = hs_err_nomem(err, 64);
            break;
        }
    }
    if (s == HS_OK && rc != SQLITE_DONE)
        s = sql_error(sc, rc, sql, err);
    sqlite3_finalize(st);
    if (s != HS_OK) {
        cat_strv_free(a, len);
        if (v1)
            cat_strv_free(b, len);
        return s;
    }
    *v0 = a;
    if (v1)
        *v1 = b;
    *count = len;
    return HS_OK;
}

/* First column of the first row as a string (NULL when no row or SQL NULL). */
static hs_status q_string(sql_catalog *sc, const char *sql, const char *const *args, int n,
                          char **out, hs_error *err)
{
    *out = NULL;
    sqlite3_stmt *st;
    HS_TRY(q_prepare(sc, sql, args, n, &st, err));
    int rc = sqlite3_step(st);
    hs_status s = HS_OK;
    if (rc == SQLITE_ROW) {
        const char *x = (const char *)sqlite3_column_text(st, 0);
        if (x && !(*out = hs_strdup(x)))
            s = hs_err_nomem(err, strlen(x));
    } else if (rc != SQLITE_DONE) {
        s = sql_error(sc, rc, sql, err);
    }
    sqlite3_finalize(st);
    return s;
}

static hs_status q_begin(sql_catalog *sc, hs_error *err)
{
    return q_exec(sc, "BEGIN IMMEDIATE", NULL, 0, NULL, err);
}

static hs_status q_end(sql_catalog *sc, hs_status st, hs_error *err)
{
    if (st == HS_OK)
        return q_exec(sc, "COMMIT", NULL, 0, NULL, err);
    (void)!q_exec(sc, "ROLLBACK", NULL, 0, NULL, NULL);
    return st;
}

/* ---- identifiers and namespaces ---------------------------------------------------- */

typedef struct tident {
    char *ns;     /* owned */
    char *name;   /* owned */
} tident;

static void tident_free(tident *t)
{
    hs_free(t->ns);
    hs_free(t->name);
}

static hs_status split_ident(const char *ident, tident *t, hs_error *err)
{
    t->ns = t->name = NULL;
    const char *dot = strrchr(ident, '.');
    if (!dot || dot == ident || !dot[1])
        return hs_err_set(err, HS_INVALID, "%s: a SQL-catalog table identifier is "
                          "\"namespace.table\"", ident);
    t->ns = hs_strndup(ident, (size_t)(dot - ident));
    t->name = hs_strdup(dot + 1);
    if (!t->ns || !t->name) {
        tident_free(t);
        return hs_err_nomem(err, strlen(ident));
    }
    return HS_OK;
}

/* LIKE pattern "<ns escaped with !>.%" matching namespaces below ns. */
static char *below_pattern(const char *ns)
{
    size_t n = strlen(ns);
    char *p = hs_malloc(2 * n + 3);
    if (!p)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ns[i] == '!' || ns[i] == '_' || ns[i] == '%')
            p[k++] = '!';
        p[k++] = ns[i];
    }
    p[k++] = '.';
    p[k++] = '%';
    p[k] = 0;
    return p;
}

static hs_status ns_exists(sql_catalog *sc, const char *ns, bool *exists, hs_error *err)
{
    *exists = false;
    char *pat = below_pattern(ns);
    if (!pat)
        return hs_err_nomem(err, strlen(ns));
    const char *args[] = { sc->name, ns, pat };
    char *hit = NULL;
    hs_status st = q_string(sc,
                            "SELECT 1 FROM iceberg_tables WHERE catalog_name = ?1 AND "
                            "(table_namespace = ?2 OR table_namespace LIKE ?3 ESCAPE '!') "
                            "UNION ALL SELECT 1 FROM iceberg_namespace_properties WHERE "
                            "catalog_name = ?1 AND (namespace = ?2 OR namespace LIKE ?3 "
                            "ESCAPE '!') LIMIT 1",
                            args, 3, &hit, err);
    hs_free(pat);
    *exists = hit != NULL;
    hs_free(hit);
    return st;
}

static hs_status need_ns(sql_catalog *sc, const char *ns, hs_error *err)
{
    bool e;
    HS_TRY(ns_exists(sc, ns, &e, err));
    if (!e)
        return hs_err_set(err, HS_NOT_FOUND, "namespace %s does not exist in catalog %s", ns,
                          sc->name);
    return HS_OK;
}

/* ---- tables -------------------------------------------------------------------------- */

static const char *type_filter(sql_catalog *sc)
{
    return sc->v1 ? " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)" : "";
}

static hs_status table_location(sql_catalog *sc, const tident *t, char **mloc, hs_error *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT metadata_location FROM iceberg_tables WHERE "
             "catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3%s",
             type_filter(sc));
    const char *args[] = { sc->name, t->ns, t->name };
    HS_TRY(q_string(sc, sql, args, 3, mloc, err));
    if (!*mloc)
        return hs_err_set(err, HS_NOT_FOUND, "table %s.%s does not exist in catalog %s", t->ns,
                          t->name, sc->name);
    return HS_OK;
}

/* What fsio.c takes for a location URI: a local path for a local path or
 * file:// URI, the URI itself for an object store (s3://, s3a://);
 * HS_UNSUPPORTED for any other scheme. */
static hs_status local_of(const char *uri, const char **path, hs_error *err)
{
    *path = cat_local_path(uri);
    if (strstr(*path, "://") && !hs_io_is_object_uri(*path))
        return hs_err_set(err, HS_UNSUPPORTED, "%s: only local paths, file:// and s3:// URIs "
                          "are supported by this build", uri);
    return HS_OK;
}

static hs_status s_default_location(cat_catalog *c, const char *ident, char **location,
                                    hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    const char *args[] = { sc->name, t.ns };
    char *ns_loc = NULL;
    hs_status st = q_string(sc, "SELECT property_value FROM iceberg_namespace_properties WHERE "
                            "catalog_name = ?1 AND namespace = ?2 AND property_key = 'location'",
                            args, 2, &ns_loc, err);
    if (st == HS_OK) {
        if (ns_loc) {
            size_t n = strlen(ns_loc);
            while (n > 0 && ns_loc[n - 1] == '/')
                ns_loc[--n] = 0;
            *location = cat_sprintf("%s/%s", ns_loc, t.name);
        } else {
            *location = cat_sprintf("%s/%s/%s", sc->warehouse, t.ns, t.name);
        }
        if (!*location)
            st = hs_err_nomem(err, strlen(ident));
    }
    hs_free(ns_loc);
    tident_free(&t);
    return st;
}

static hs_status s_current_location(cat_catalog *c, const char *ident, char **mloc,
                                    hs_error *err)
{
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    hs_status st = table_location((sql_catalog *)c, &t, mloc, err);
    tident_free(&t);
    return st;
}

static hs_status s_load(cat_catalog *c, const char *ident, hs_buf *json, char **mloc,
                        hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    char *loc = NULL;
    const char *path;
    hs_status st = table_location(sc, &t, &loc, err);
    if (st == HS_OK)
        st = local_of(loc, &path, err);
    if (st == HS_OK) {
        st = cat_io_read_all(path, json, err);
        if (st == HS_NOT_FOUND)
            hs_err_prefix(err, "table %s: current metadata file is missing", ident);
        else if (st == HS_OK && json->len == 0)
            st = HS_CORRUPT_AT(err, "%s: metadata file is empty", loc);
    }
    tident_free(&t);
    if (st == HS_OK)
        *mloc = loc;
    else
        hs_free(loc);
    return st;
}

/* pyiceberg's _parse_metadata_version: the number before the first '-' of the
 * file name, or -1. */
static long parse_metadata_version(const char *loc)
{
    const char *slash = strrchr(loc, '/');
    const char *name = slash ? slash + 1 : loc;
    const char *dash = strchr(name, '-');
    if (!dash || dash == name || dash - name > 9)
        return -1;
    long v = 0;
    for (const char *p = name; p < dash; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* ---- the new metadata's "location", without building a JSON tree ----
 *
 * A commit of a table with many snapshots writes a large metadata document;
 * parsing all of it into a jansson tree only to read one top-level string was
 * a sixth of a small append's CPU.  top_string() walks the top-level object,
 * skipping values by bracket depth (strings and escapes respected), and
 * returns the raw bytes of a top-level string value.  Anything it does not
 * expect (malformed text, an escape inside the value) makes it return false,
 * and the caller falls back to jansson (which agrees on any document without
 * duplicate keys). */

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at '"': returns the byte after the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *e, bool *escaped)
{
    for (p++; p < e; p++) {
        if (*p == '\\') {
            *escaped = true;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

static const char *skip_value(const char *p, const char *e)
{
    bool esc = false;
    if (p < e && *p == '"')
        return skip_string(p, e, &esc);
    int depth = 0;
    for (; p < e; p++) {
        char c = *p;
        if (c == '"') {
            const char *q = skip_string(p, e, &esc);
            if (!q)
                return NULL;
            p = q - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return p;   /* end of the enclosing object: a scalar ended */
            if (--depth == 0)
                return p + 1;
        } else if (c == ',' && depth == 0) {
            return p;
        }
    }
    return depth == 0 ? p : NULL;
}

static bool top_string(const char *json, size_t len, const char *key, const char **val,
                       size_t *vlen)
{
    const char *p = json, *e = json + len;
    size_t klen = strlen(key);
    p = skip_ws(p, e);
    if (p >= e || *p != '{')
        return false;
    p++;
    for (;;) {
        p = skip_ws(p, e);
        if (p >= e || *p != '"')
            return false;
        bool kesc = false;
        const char *ks = p + 1, *ke = skip_string(p, e, &kesc);
        if (!ke)
            return false;
        p = skip_ws(ke, e);
        if (p >= e || *p != ':')
            return false;
        p = skip_ws(p + 1, e);
        if (!kesc && (size_t)(ke - 1 - ks) == klen && memcmp(ks, key, klen) == 0) {
            bool vesc = false;
            const char *ve = p < e && *p == '"' ? skip_string(p, e, &vesc) : NULL;
            if (!ve || vesc)
                return false;
            *val = p + 1;
            *vlen = (size_t)(ve - 1 - (p + 1));
            return true;
        }
        p = skip_value(p, e);
        if (!p)
            return false;
        p = skip_ws(p, e);
        if (p >= e || *p != ',')
            return false;   /* '}': not found; anything else: malformed */
        p++;
    }
}

/* *loc = the metadata's "location" (owned), *flags = the hs_wfile flags of
 * its file: exclusive, and no fsync unless the table property
 * hyperstream.commit.fsync is "true" (docs/tables.md).  jansson parses the
 * document only when the fast paths cannot answer. */
static hs_status location_and_flags(const char *json, size_t len, char **loc, int *flags,
                                    hs_error *err)
{
    *loc = NULL;
    *flags = HS_WFILE_EXCLUSIVE | HS_WFILE_NO_SYNC;
    static const char fkey[] = "hyperstream.commit.fsync";
    const size_t fklen = sizeof fkey - 1;
    bool fsync_key = false;
    for (size_t i = 0; !fsync_key && i + fklen <= len; i++)
        fsync_key = json[i] == 'h' && memcmp(json + i, fkey, fklen) == 0;
    const char *v;
    size_t vlen;
    if (!fsync_key && top_string(json, len, "location", &v, &vlen)) {
        if (!(*loc = hs_strndup(v, vlen)))
            return hs_err_nomem(err, vlen);
        return HS_OK;
    }
    json_error_t jerr;
    json_t *root = hs_json_loadb(json, len, 0, &jerr);
    json_t *jv = json_is_object(root) ? json_object_get(root, "location") : NULL;
    json_t *props = json_is_object(root) ? json_object_get(root, "properties") : NULL;
    json_t *fs = json_is_object(props) ? json_object_get(props, fkey) : NULL;
    if (json_is_string(fs) && strcasecmp(json_string_value(fs), "true") == 0)
        *flags = HS_WFILE_EXCLUSIVE;
    hs_status st = HS_OK;
    if (!json_is_string(jv))
        st = hs_err_set(err, HS_INVALID, "metadata JSON has no string field \"location\"");
    else if (!(*loc = hs_strdup(json_string_value(jv))))
        st = hs_err_nomem(err, strlen(json_string_value(jv)));
    json_decref(root);
    return st;
}

/* Writes json as <location>/metadata/<version>-<uuid>.metadata.json; *mloc = its
 * location in the same form (URI or path) as the metadata's "location". */
static hs_status write_metadata_file(const char *json, size_t len, long version, char **mloc,
                                     hs_error *err)
{
    *mloc = NULL;
    char *loc;
    int flags;
    HS_TRY(location_and_flags(json, len, &loc, &flags, err));
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/')
        loc[--n] = 0;
    char uuid[37];
    cat_uuid4(uuid);
    char *file = cat_sprintf("%s/metadata/%05ld-%s.metadata.json", loc, version, uuid);
    char *mdir = cat_sprintf("%s/metadata", loc);
    const char *path, *dpath;
    hs_status st = (file && mdir) ? HS_OK : hs_err_nomem(err, n);
    if (st == HS_OK)
        st = local_of(file, &path, err);
    if (st == HS_OK)
        st = local_of(mdir, &dpath, err);
    if (st == HS_OK)
        st = cat_io_mkdirs(dpath, err);
    if (st == HS_OK)
        st = cat_io_write_all_ex(path, flags, json, len, err);
    hs_free(mdir);
    hs_free(loc);
    if (st == HS_OK)
        *mloc = file;
    else
        hs_free(file);
    return st;
}

static void remove_orphan(const char *mloc)
{
    const char *path;
    if (local_of(mloc, &path, NULL) == HS_OK)
        (void)!cat_io_unlink(path, NULL);
}

static hs_status s_create(cat_catalog *c, const char *ident, const char *json, size_t len,
                          char **mloc, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    char *file = NULL;
    hs_status st = need_ns(sc, t.ns, err);
    if (st == HS_OK)
        st = write_metadata_file(json, len, 0, &file, err);
    if (st == HS_OK)
        st = cat_io_fault_point("sql insert", err);
    if (st == HS_OK) {
        const char *args[] = { sc->name, t.ns, t.name, file };
        st = q_exec(sc, sc->v1 ? "INSERT INTO iceberg_tables (catalog_name, table_namespace, "
                                 "table_name, metadata_location, previous_metadata_location, "
                                 "iceberg_type) VALUES (?1, ?2, ?3, ?4, NULL, 'TABLE')"
                               : "INSERT INTO iceberg_tables (catalog_name, table_namespace, "
                                 "table_name, metadata_location, previous_metadata_location) "
                                 "VALUES (?1, ?2, ?3, ?4, NULL)",
                    args, 4, NULL, err);
        if (st == HS_CONFLICT && is_constraint(sc)) {   /* not a busy lock */
            hs_err_clear(err);
            st = hs_err_set(err, HS_CONFLICT, "table %s already exists in catalog %s", ident,
                            sc->name);
        }
        if (st != HS_OK)
            remove_orphan(file);
    }
    tident_free(&t);
    if (st == HS_OK)
        *mloc = file;
    else
        hs_free(file);
    return st;
}

/* register: the row points at the given file (nothing is written);
 * overwrite swaps the row of an existing table to it. */
static hs_status s_register(cat_catalog *c, const char *ident, const char *mloc, bool overwrite,
                            hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    hs_status st = need_ns(sc, t.ns, err);
    if (st == HS_OK)
        st = cat_check_metadata_file(mloc, err);
    if (st == HS_OK) {
        const char *args[] = { sc->name, t.ns, t.name, mloc };
        st = q_exec(sc, sc->v1 ? "INSERT INTO iceberg_tables (catalog_name, table_namespace, "
                                 "table_name, metadata_location, previous_metadata_location, "
                                 "iceberg_type) VALUES (?1, ?2, ?3, ?4, NULL, 'TABLE')"
                               : "INSERT INTO iceberg_tables (catalog_name, table_namespace, "
                                 "table_name, metadata_location, previous_metadata_location) "
                                 "VALUES (?1, ?2, ?3, ?4, NULL)",
                    args, 4, NULL, err);
        if (st == HS_CONFLICT && is_constraint(sc)) {
            hs_err_clear(err);
            if (overwrite) {
                char sql[512];
                int changes = 0;
                snprintf(sql, sizeof sql, "UPDATE iceberg_tables SET previous_metadata_location "
                         "= metadata_location, metadata_location = ?4 WHERE catalog_name = ?1 "
                         "AND table_namespace = ?2 AND table_name = ?3%s", type_filter(sc));
                st = q_exec(sc, sql, args, 4, &changes, err);
                if (st == HS_OK && changes == 0)   /* the name is a view */
                    st = hs_err_set(err, HS_CONFLICT, "%s exists in catalog %s and is not a "
                                    "table", ident, sc->name);
            } else {
                st = hs_err_set(err, HS_CONFLICT, "table %s already exists in catalog %s",
                                ident, sc->name);
            }
        }
    }
    tident_free(&t);
    return st;
}

static hs_status s_list_views(cat_catalog *c, const char *ns, char ***names, size_t *n,
                              hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    if (*ns)
        HS_TRY(need_ns(sc, ns, err));
    if (!sc->v1) {   /* the V0 schema cannot hold views */
        *names = hs_calloc(1, sizeof **names);
        return *names ? HS_OK : hs_err_nomem(err, sizeof **names);
    }
    const char *args[] = { sc->name, ns };
    return q_strings(sc, "SELECT table_name FROM iceberg_tables WHERE catalog_name = ?1 AND "
                         "table_namespace = ?2 AND iceberg_type = 'VIEW' ORDER BY table_name",
                     args, 2, names, NULL, n, err);
}

static hs_status s_commit(cat_catalog *c, const char *ident, const char *base, const char *json,
                          size_t len, char **new_location, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    char *file = NULL;
    hs_status st = write_metadata_file(json, len, parse_metadata_version(base) + 1, &file, err);
    if (st == HS_OK)
        st = cat_io_fault_point("sql commit", err);
    int changes = 0;
    if (st == HS_OK) {
        const char *args[] = { file, base, sc->name, t.ns, t.name };
        st = q_exec(sc, "UPDATE iceberg_tables SET metadata_location = ?1, "
                        "previous_metadata_location = ?2 WHERE catalog_name = ?3 AND "
                        "table_namespace = ?4 AND table_name = ?5 AND metadata_location = ?2",
                    args, 5, &changes, err);
        if (st == HS_OK && changes == 0) {
            char *now = NULL;
            hs_error e2 = { 0 };
            if (table_location(sc, &t, &now, &e2) == HS_NOT_FOUND)
                st = hs_err_set(err, HS_NOT_FOUND, "table %s was dropped during the commit",
                                ident);
            else
                st = hs_err_set(err, HS_CONFLICT, "table %s: concurrent commit: current "
                                "metadata is %s, not the base %s", ident, now ? now : "?",
                                base);
            hs_free(now);
        }
        if (st != HS_OK)
            remove_orphan(file);
    }
    tident_free(&t);
    if (st == HS_OK)
        *new_location = file;
    else
        hs_free(file);
    return st;
}

static hs_status s_drop(cat_catalog *c, const char *ident, bool purge, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    char *table_loc = NULL;
    hs_status st = HS_OK;
    if (purge) {
        hs_buf json = { 0 };
        char *mloc = NULL;
        st = s_load(c, ident, &json, &mloc, err);
        if (st == HS_OK)
            st = cat_json_get_string((const char *)json.data, json.len, "location", &table_loc,
                                     err);
        hs_buf_free(&json);
        hs_free(mloc);
    }
    if (st == HS_OK) {
        char sql[512];
        snprintf(sql, sizeof sql, "DELETE FROM iceberg_tables WHERE catalog_name = ?1 AND "
                 "table_namespace = ?2 AND table_name = ?3%s", type_filter(sc));
        const char *args[] = { sc->name, t.ns, t.name };
        int changes = 0;
        st = q_exec(sc, sql, args, 3, &changes, err);
        if (st == HS_OK && changes == 0)
            st = hs_err_set(err, HS_NOT_FOUND, "table %s does not exist in catalog %s", ident,
                            sc->name);
    }
    if (st == HS_OK && table_loc) {
        const char *path;
        st = local_of(table_loc, &path, err);
        if (st == HS_OK)
            st = cat_io_remove_tree(path, err);
    }
    hs_free(table_loc);
    tident_free(&t);
    return st;
}

static hs_status s_rename(cat_catalog *c, const char *from, const char *to, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident f, t;
    HS_TRY(split_ident(from, &f, err));
    hs_status st = split_ident(to, &t, err);
    if (st != HS_OK) {
        tident_free(&f);
        return st;
    }
    st = need_ns(sc, t.ns, err);
    if (st == HS_OK) {
        char sql[512];
        snprintf(sql, sizeof sql, "UPDATE iceberg_tables SET table_namespace = ?1, "
                 "table_name = ?2 WHERE catalog_name = ?3 AND table_namespace = ?4 AND "
                 "table_name = ?5%s", type_filter(sc));
        const char *args[] = { t.ns, t.name, sc->name, f.ns, f.name };
        int changes = 0;
        st = q_exec(sc, sql, args, 5, &changes, err);
        if (st == HS_CONFLICT && is_constraint(sc)) {
            hs_err_clear(err);
            st = hs_err_set(err, HS_CONFLICT, "table %s already exists in catalog %s", to,
                            sc->name);
        } else if (st == HS_OK && changes == 0) {
            st = hs_err_set(err, HS_NOT_FOUND, "table %s does not exist in catalog %s", from,
                            sc->name);
        }
    }
    tident_free(&f);
    tident_free(&t);
    return st;
}

static hs_status s_list(cat_catalog *c, const char *ns, char ***names, size_t *n,
                        hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    if (*ns)
        HS_TRY(need_ns(sc, ns, err));
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT table_name FROM iceberg_tables WHERE catalog_name = ?1 "
             "AND table_namespace = ?2%s ORDER BY table_name", type_filter(sc));
    const char *args[] = { sc->name, ns };
    return q_strings(sc, sql, args, 2, names, NULL, n, err);
}

static hs_status s_exists(cat_catalog *c, const char *ident, bool *exists, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    tident t;
    HS_TRY(split_ident(ident, &t, err));
    char *loc = NULL;
    hs_error e2 = { 0 };
    hs_status st = table_location(sc, &t, &loc, &e2);
    tident_free(&t);
    hs_free(loc);
    if (st == HS_OK)
        *exists = true;
    if (st == HS_NOT_FOUND)
        return HS_OK;
    if (st != HS_OK && err && err->code == HS_OK)
        *err = e2;
    return st;
}

/* ---- namespaces ------------------------------------------------------------------------ */

static hs_status s_ns_create(cat_catalog *c, const char *ns, const char *const *keys,
                             const char *const *values, size_t n, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    static const char *const dk[] = { "exists" }, *const dv[] = { "true" };
    if (n == 0) {
        keys = dk;
        values = dv;
        n = 1;
    }
    HS_TRY(q_begin(sc, err));
    bool e;
    hs_status st = ns_exists(sc, ns, &e, err);
    if (st == HS_OK && e)
        st = hs_err_set(err, HS_CONFLICT, "namespace %s already exists in catalog %s", ns,
                        sc->name);
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        const char *args[] = { sc->name, ns, keys[i], values[i] };
        st = q_exec(sc, "INSERT INTO iceberg_namespace_properties (catalog_name, namespace, "
                        "property_key, property_value) VALUES (?1, ?2, ?3, ?4)",
                    args, 4, NULL, err);
    }
    return q_end(sc, st, err);
}

static hs_status s_ns_list(cat_catalog *c, const char *parent, char ***out, size_t *n_out,
                           hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    if (*parent)
        HS_TRY(need_ns(sc, parent, err));
    const char *args[] = { sc->name };
    char **all = NULL;
    size_t n = 0;
    HS_TRY(q_strings(sc, "SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?1 "
                         "UNION SELECT namespace FROM iceberg_namespace_properties WHERE "
                         "catalog_name = ?1",
                     args, 1, &all, NULL, &n, err));
    /* Keep the children of parent, truncated to one level below it. */
    size_t plen = strlen(parent), kept = 0;
    for (size_t i = 0; i < n; i++) {
        char *s = all[i];
        const char *rest = s;
        if (plen) {
            if (strncmp(s, parent, plen) != 0 || s[plen] != '.' || !s[plen + 1]) {
                hs_free(s);
                continue;
            }
            rest = s + plen + 1;
        }
        const char *dot = strchr(rest, '.');
        if (dot)
            s[dot - s] = 0;
        all[kept++] = s;
    }
    cat_strv_sort(all, kept);
    size_t u = 0;
    for (size_t i = 0; i < kept; i++) {
        if (u > 0 && strcmp(all[u - 1], all[i]) == 0)
            hs_free(all[i]);
        else
            all[u++] = all[i];
    }
    *out = all;
    *n_out = u;
    return HS_OK;
}

static hs_status s_ns_drop(cat_catalog *c, const char *ns, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    HS_TRY(q_begin(sc, err));
    hs_status st = need_ns(sc, ns, err);
    char *hit = NULL;
    if (st == HS_OK) {
        const char *args[] = { sc->name, ns };
        st = q_string(sc, "SELECT table_name FROM iceberg_tables WHERE catalog_name = ?1 AND "
                          "table_namespace = ?2 LIMIT 1",
                      args, 2, &hit, err);
        if (st == HS_OK && hit)
            st = hs_err_set(err, HS_INVALID, "namespace %s is not empty (it holds table %s)",
                            ns, hit);
        if (st == HS_OK)
            st = q_exec(sc, "DELETE FROM iceberg_namespace_properties WHERE catalog_name = ?1 "
                            "AND namespace = ?2",
                        args, 2, NULL, err);
    }
    hs_free(hit);
    return q_end(sc, st, err);
}

static hs_status s_ns_properties(cat_catalog *c, const char *ns, char ***keys, char ***values,
                                 size_t *n, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    HS_TRY(need_ns(sc, ns, err));
    const char *args[] = { sc->name, ns };
    return q_strings(sc, "SELECT property_key, property_value FROM iceberg_namespace_properties "
                         "WHERE catalog_name = ?1 AND namespace = ?2 ORDER BY property_key",
                     args, 2, keys, values, n, err);
}

static hs_status s_ns_update(cat_catalog *c, const char *ns, const char *const *set_keys,
                             const char *const *set_values, size_t n_set,
                             const char *const *remove_keys, size_t n_remove, hs_error *err)
{
    sql_catalog *sc = (sql_catalog *)c;
    HS_TRY(q_begin(sc, err));
    hs_status st = need_ns(sc, ns, err);
    for (size_t i = 0; st == HS_OK && i < n_remove; i++) {
        const char *args[] = { sc->name, ns, remove_keys[i] };
        st = q_exec(sc, "DELETE FROM iceberg_namespace_properties WHERE catalog_name = ?1 AND "
                        "namespace = ?2 AND property_key = ?3",
                    args, 3, NULL, err);
    }
    for (size_t i = 0; st == HS_OK && i < n_set; i++) {
        const char *args[] = { sc->name, ns, set_keys[i], set_values[i] };
        st = q_exec(sc, "INSERT OR REPLACE INTO iceberg_namespace_properties (catalog_name, "
                        "namespace, property_key, property_value) VALUES (?1, ?2, ?3, ?4)",
                    args, 4, NULL, err);
    }
    return q_end(sc, st, err);
}

/* ---- open / free ------------------------------------------------------------------------ */

static void s_free(cat_catalog *c)
{
    sql_catalog *sc = (sql_catalog *)c;
    if (sc->db)
        sqlite3_close(sc->db);
    hs_free(sc->name);
    hs_free(sc->warehouse);
    hs_free(sc->db_path);
    hs_free(sc);
}

static const cat_vtbl sql_vtbl = {
    s_default_location, s_load, s_current_location, s_create, s_commit, s_drop, s_rename, s_list, s_exists,
    s_ns_create, s_ns_list, s_ns_drop, s_ns_properties, s_ns_update, s_register, s_list_views,
    s_free,
};

/* The absolute directory holding path (caller frees). */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *d = slash ? hs_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                    : hs_strdup(".");
    if (!d)
        return NULL;
    char real[PATH_MAX];
    if (realpath(d, real)) {
        hs_free(d);
        return hs_strdup(real);
    }
    return d;
}

hs_status cat_sql_open(const char *db_path, const char *catalog_name, const char *warehouse,
                       cat_catalog **out, hs_error *err)
{
    *out = NULL;
    if (!db_path || !*db_path)
        return hs_err_set(err, HS_INVALID, "SQL catalog: empty database path");
    db_path = cat_local_path(db_path);
    sql_catalog *sc = hs_calloc(1, sizeof *sc);
    if (!sc)
        return hs_err_nomem(err, sizeof *sc);
    sc->base.vt = &sql_vtbl;
    sc->base.kind = CAT_SQL;
    sc->name = hs_strdup(catalog_name && *catalog_name ? catalog_name : "default");
    sc->db_path = hs_strdup(db_path);
    sc->warehouse = warehouse && *warehouse ? hs_strdup(warehouse) : dir_of(db_path);
    if (!sc->name || !sc->db_path || !sc->warehouse) {
        s_free(&sc->base);
        return hs_err_nomem(err, strlen(db_path));
    }
    size_t wn = strlen(sc->warehouse);
    while (wn > 1 && sc->warehouse[wn - 1] == '/')
        sc->warehouse[--wn] = 0;
    int rc = sqlite3_open_v2(db_path, &sc->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             NULL);
    hs_status st = HS_OK;
    if (rc != SQLITE_OK)
        st = sc->db ? sql_error(sc, rc, "open", err)
                    : hs_err_set(err, HS_NOMEM, "%s: cannot open SQLite database", db_path);
    if (st == HS_OK) {
        sc->busy_ms = SQL_BUSY_TIMEOUT_MS;
        sqlite3_busy_timeout(sc->db, sc->busy_ms);
        char *msg = NULL;
        rc = sqlite3_exec(sc->db, SCHEMA_SQL, NULL, NULL, &msg);
        if (rc != SQLITE_OK)
            st = hs_err_set(err, rc == SQLITE_NOTADB ? HS_CORRUPT : HS_IO,
                            "%s: cannot create the catalog tables: %s", db_path,
                            msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
    }
    if (st == HS_OK) {
        sqlite3_stmt *probe = NULL;
        sc->v1 = sqlite3_prepare_v2(sc->db, "SELECT iceberg_type FROM iceberg_tables LIMIT 0",
                                    -1, &probe, NULL) == SQLITE_OK;
        sqlite3_finalize(probe);
    }
    if (st != HS_OK) {
        s_free(&sc->base);
        return st;
    }
    *out = &sc->base;
    return HS_OK;
}

void cat_sql_set_busy_timeout(cat_catalog *c, int ms)
{
    if (!c || c->kind != CAT_SQL)
        return;
    sql_catalog *sc = (sql_catalog *)c;
    sc->busy_ms = ms > 0 ? ms : 0;
    sqlite3_busy_timeout(sc->db, sc->busy_ms);
}
