/*
 * server/restcat.c - the Iceberg REST catalog server: routing, auth,
 * namespaces and tables over the SQL catalog (see restcat.h).
 *
 *   method  path (after /v1/)                      answer
 *   ------  -------------------------------------  ------------------------------
 *   GET     config                                 {defaults, overrides, endpoints}
 *   POST    oauth/tokens                           client credentials -> the token
 *   GET     namespaces[?parent=a%1Fb]              {namespaces: [[..], ..]}
 *           (the three lists page with pageToken / pageSize: see page_of)
 *   POST    namespaces                             create {namespace, properties}
 *   GET     namespaces/{ns}                        {namespace, properties}
 *   HEAD    namespaces/{ns}                        204 | 404
 *   DELETE  namespaces/{ns}                        204 (409 when it has tables)
 *   POST    namespaces/{ns}/properties             {updated, removed, missing}
 *   GET     namespaces/{ns}/tables                 {identifiers: [{namespace, name}]}
 *   POST    namespaces/{ns}/tables                 create (stage-create too)
 *   POST    namespaces/{ns}/register               register a metadata file
 *   GET     namespaces/{ns}/tables/{t}             LoadTableResult
 *   GET     namespaces/{ns}/tables/{t}/credentials {storage-credentials} (vending)
 *   POST    namespaces/{ns}/tables/{t}/sign        S3 signer for that table's objects
 *   POST    aws/s3/sign                            S3 signer for any table's objects
 *   HEAD    namespaces/{ns}/tables/{t}             204 | 404
 *   POST    namespaces/{ns}/tables/{t}             commit (requirements + updates)
 *   DELETE  namespaces/{ns}/tables/{t}[?purgeRequested=true]   204
 *   POST    tables/rename                          204
 *   GET     namespaces/{ns}/views                  {identifiers: []} (no views)
 *
 * Namespaces travel as path segments whose levels are joined by %1F (the
 * spec's unit separator) and are stored dotted ("a.b") in the SQL catalog,
 * so a level containing '.' is refused (400).  Errors have the spec's shape
 * {"error": {"message", "type", "code"}}:
 *
 *   status  type                              when
 *   ------  --------------------------------  ------------------------------------
 *   400     BadRequestException               malformed JSON, fields, identifiers
 *   401     NotAuthorizedException            missing or wrong bearer token
 *   404     NoSuchNamespaceException /        absent namespace / table / view;
 *           NoSuchTableException / ...        unknown route
 *   405     MethodNotAllowedException         known path, other method
 *   409     AlreadyExistsException            create / rename onto an existing name
 *   409     CommitFailedException             a requirement failed; lost CAS race
 *   409     NamespaceNotEmptyException        drop of a namespace with tables
 *   422     UnprocessableEntityException      a property both set and removed
 *   500     InternalServerError               I/O and other failures
 *
 * Commits: load the current metadata, check the requirements, apply the
 * updates (restcat_update.c), validate, then compare-and-swap through the
 * catalog from the loaded location.  A lost swap is retried (up to 8 times)
 * from a fresh load, with the requirements checked again, as Java's
 * CatalogHandlers do; a requirement that fails on the fresh base is a 409.
 *
 * Credential vending (rc_config.vend_credentials): a table on S3 comes with
 * this server's own S3 settings and keys for its location (io.h's
 * hs_io_vend_properties: temporary keys with s3.session-token-expires-at-ms,
 * refreshed by the server as they come due) in the LoadTableResult's
 * "config" and as its one "storage-credentials" entry; the credentials
 * endpoint answers the same entry, so clients refresh without a reload.
 */
#include "server/restcat.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "catalog/catalog.h"
#include "iceberg/model.h"
#include "io/s3.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RC_MAX_SEG 12

struct rc_server {
    char *sqlite_path, *catalog_name, *warehouse, *token, *client_id, *client_secret;
    bool vend;
    bool remote_signing;   /* vend s3.remote-signing-enabled instead of keys */
};

typedef struct rc_call {
    rc_server *s;
    const hs_http_request *http;
    hs_http_response *resp;
    cat_catalog *cat;
    char *seg[RC_MAX_SEG];
    int n_seg;
} rc_call;

/* ---- responses ---------------------------------------------------------------------------- */

static const char OOM_BODY[] = "{\"error\":{\"message\":\"cannot build the response\","
                               "\"type\":\"InternalServerError\",\"code\":500}}";

/* Sends j (consumed); j NULL: no body for 204, else a 500 (a response that
 * could not be built, e.g. out of memory). */
static void reply_json(rc_call *c, int status, json_t *j)
{
    c->resp->status = status;
    hs_buf_reset(&c->resp->body);
    if (!j) {
        if (status != 204) {
            c->resp->status = 500;
            if (hs_buf_puts(&c->resp->body, OOM_BODY) != HS_OK)
                hs_buf_reset(&c->resp->body);
        }
        return;
    }
    char *s = hs_json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s || hs_buf_puts(&c->resp->body, s) != HS_OK) {
        c->resp->status = 500;
        hs_buf_reset(&c->resp->body);
    }
    free(s);
}

static void reply_error(rc_call *c, int status, const char *type, const char *msg)
{
    json_t *j = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", msg ? msg : "", "type",
                          type, "code", status);
    if (!j)   /* a message quoting bytes that are not UTF-8 */
        j = json_pack("{s:{s:s, s:s, s:i}}", "error", "message",
                      "(the message quotes input that is not valid UTF-8)", "type", type, "code",
                      status);
    reply_json(c, status, j);
}

/* An error status of the catalog layer as the spec's error.  not_found: the
 * exception type for HS_NOT_FOUND; conflict: for HS_CONFLICT. */
static void reply_status(rc_call *c, hs_status st, const hs_error *err, const char *not_found,
                         const char *conflict)
{
    const char *msg = err && err->msg[0] ? err->msg : hs_status_name(st);
    switch (st) {
    case HS_NOT_FOUND: reply_error(c, 404, not_found, msg); break;
    case HS_CONFLICT: reply_error(c, 409, conflict, msg); break;
    case HS_INVALID: reply_error(c, 400, "BadRequestException", msg); break;
    case HS_UNSUPPORTED: reply_error(c, 406, "UnsupportedOperationException", msg); break;
    default: reply_error(c, 500, "InternalServerError", msg); break;
    }
}

static void bad_request(rc_call *c, const char *msg)
{
    reply_error(c, 400, "BadRequestException", msg);
}

/* ---- identifiers --------------------------------------------------------------------------- */

/* A namespace path segment (levels joined by 0x1F, already URL-decoded) to
 * the dotted form; NULL (with a 400 sent) when a level is empty or has '.'. */
static char *ns_from_segment(rc_call *c, const char *seg)
{
    if (!*seg) {
        bad_request(c, "empty namespace");
        return NULL;
    }
    char *s = hs_strdup(seg);
    if (!s) {
        reply_error(c, 500, "InternalServerError", "out of memory");
        return NULL;
    }
    bool prev_sep = true;
    for (char *p = s; *p; p++) {
        if (*p == '.') {
            hs_free(s);
            bad_request(c, "namespace levels containing '.' are not supported by this "
                           "catalog (it stores namespaces dotted)");
            return NULL;
        }
        if (*p == 0x1f) {
            if (prev_sep)
                break;
            *p = '.';
            prev_sep = true;
        } else {
            prev_sep = false;
        }
    }
    if (prev_sep) {
        hs_free(s);
        bad_request(c, "empty namespace level");
        return NULL;
    }
    return s;
}

/* A JSON array of strings (a namespace) to the dotted form; NULL + 400. */
static char *ns_from_json(rc_call *c, json_t *a, const char *what)
{
    if (!json_is_array(a) || json_array_size(a) == 0) {
        char m[128];
        snprintf(m, sizeof m, "%s: namespace must be a non-empty array of strings", what);
        bad_request(c, m);
        return NULL;
    }
    hs_buf b = { 0 };
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        const char *s = json_string_value(e);
        if (!s || !*s || strchr(s, '.') || strchr(s, 0x1f)) {
            hs_buf_free(&b);
            bad_request(c, "namespace levels must be non-empty strings without '.'");
            return NULL;
        }
        if ((i && hs_buf_append_byte(&b, '.') != HS_OK) || hs_buf_puts(&b, s) != HS_OK) {
            hs_buf_free(&b);
            reply_error(c, 500, "InternalServerError", "out of memory");
            return NULL;
        }
    }
    char *out = hs_strdup(hs_buf_cstr(&b));
    hs_buf_free(&b);
    return out;
}

static json_t *ns_to_json(const char *dotted)
{
    json_t *a = json_array();
    const char *p = dotted;
    while (a && *p) {
        const char *d = strchr(p, '.');
        size_t n = d ? (size_t)(d - p) : strlen(p);
        json_array_append_new(a, json_stringn(p, n));
        p += n + (d ? 1 : 0);
    }
    return a;
}

static bool valid_table_name(rc_call *c, const char *name)
{
    if (!name || !*name || strchr(name, '.') || strchr(name, '/')) {
        bad_request(c, "table names must be non-empty and contain no '.' or '/'");
        return false;
    }
    return true;
}

static char *ident_of(const char *ns, const char *name)
{
    size_t a = strlen(ns), b = strlen(name);
    char *s = hs_malloc(a + b + 2);
    if (s) {
        memcpy(s, ns, a);
        s[a] = '.';
        memcpy(s + a + 1, name, b + 1);
    }
    return s;
}

/* The request body as a JSON object; NULL + 400. */
static json_t *body_object(rc_call *c)
{
    json_error_t je;
    json_t *j = hs_json_loads(c->http->body ? c->http->body : "", 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        char m[256];
        snprintf(m, sizeof m, "request body is not a JSON object: %s (line %d, column %d)",
                 j ? "another JSON value" : je.text, je.line, je.column);
        bad_request(c, m);
        return NULL;
    }
    return j;
}

static const char *query(rc_call *c, const char *key)
{
    return c->http->conn_ ? hs_http_query(c->http, key) : NULL;
}

/* ---- namespaces ------------------------------------------------------------------------------ */

static bool ns_exists(rc_call *c, const char *ns, hs_status *st, hs_error *err)
{
    char **k = NULL, **v = NULL;
    size_t n = 0;
    *st = cat_namespace_properties(c->cat, ns, &k, &v, &n, err);
    cat_strv_free(k, n);
    cat_strv_free(v, n);
    if (*st == HS_NOT_FOUND) {
        *st = HS_OK;
        return false;
    }
    return *st == HS_OK;
}

/* 404 NoSuchNamespaceException unless ns exists; false when answered. */
static bool need_ns(rc_call *c, const char *ns)
{
    hs_error err = { 0 };
    hs_status st;
    bool e = ns_exists(c, ns, &st, &err);
    if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
        return false;
    }
    if (!e) {
        char m[300];
        snprintf(m, sizeof m, "Namespace does not exist: %s", ns);
        reply_error(c, 404, "NoSuchNamespaceException", m);
        return false;
    }
    return true;
}

/* The spec's list pagination over names sorted by strcmp (as cat_list and
 * cat_namespace_list give them): no pageToken and no
 * pageSize -> everything, next-page-token null; else at most pageSize
 * (default and cap RC_PAGE_MAX) names after the token, which is the last
 * name of the previous page ("" or absent = from the start), and
 * next-page-token the last name sent while more follow.  Sets [*from, *to)
 * and *next (borrowed from names, NULL on the last page); false when it
 * answered 400 for a bad pageSize. */
#define RC_PAGE_MAX 1000
static bool page_of(rc_call *c, char **names, size_t n, size_t *from, size_t *to,
                    const char **next)
{
    const char *tok = query(c, "pageToken"), *ps = query(c, "pageSize");
    *from = 0;
    *to = n;
    *next = NULL;
    if (!tok && !ps)
        return true;
    long size = RC_PAGE_MAX;
    if (ps) {
        char *end = NULL;
        size = strtol(ps, &end, 10);
        if (!*ps || *end || size <= 0) {
            bad_request(c, "pageSize must be a positive integer");
            return false;
        }
        if (size > RC_PAGE_MAX)
            size = RC_PAGE_MAX;
    }
    if (tok && *tok)
        while (*from < n && strcmp(names[*from], tok) <= 0)
            (*from)++;
    if (n - *from > (size_t)size) {
        *to = *from + (size_t)size;
        *next = names[*to - 1];
    }
    return true;
}

static void ns_list(rc_call *c)
{
    const char *parent_q = query(c, "parent");
    char *parent = NULL;
    if (parent_q && *parent_q) {
        if (!(parent = ns_from_segment(c, parent_q)))
            return;
        if (!need_ns(c, parent)) {
            hs_free(parent);
            return;
        }
    }
    char **names = NULL;
    size_t n = 0;
    hs_error err = { 0 };
    hs_status st = cat_namespace_list(c->cat, parent, &names, &n, &err);
    hs_free(parent);
    if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
        return;
    }
    size_t from, to;
    const char *next;
    if (!page_of(c, names, n, &from, &to, &next)) {
        cat_strv_free(names, n);
        return;
    }
    json_t *a = json_array();
    for (size_t i = from; a && i < to; i++)
        json_array_append_new(a, ns_to_json(names[i]));
    reply_json(c, 200, json_pack("{s:o, s:s?}", "namespaces", a, "next-page-token", next));
    cat_strv_free(names, n);
}

static json_t *props_json(char **k, char **v, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        json_object_set_new(o, k[i], json_string(v[i]));
    return o;
}

static void ns_create(rc_call *c)
{
    json_t *b = body_object(c);
    if (!b)
        return;
    char *ns = ns_from_json(c, json_object_get(b, "namespace"), "create namespace");
    json_t *props = json_object_get(b, "properties");
    if (ns && props && !json_is_object(props) && !json_is_null(props)) {
        bad_request(c, "properties must be an object of strings");
        hs_free(ns);
        ns = NULL;
    }
    size_t n = json_is_object(props) ? json_object_size(props) : 0, i = 0;
    const char **keys = hs_calloc(n + 1, sizeof *keys), **vals = hs_calloc(n + 1, sizeof *vals);
    const char *k;
    json_t *v;
    bool ok = ns && keys && vals;
    if (ok && n)
        json_object_foreach(props, k, v) {
            if (!json_is_string(v)) {
                bad_request(c, "properties must be an object of strings");
                ok = false;
                break;
            }
            keys[i] = k;
            vals[i++] = json_string_value(v);
        }
    if (ok) {
        hs_error err = { 0 };
        hs_status st = cat_namespace_create(c->cat, ns, keys, vals, n, &err);
        if (st == HS_CONFLICT) {
            char m[300];
            snprintf(m, sizeof m, "Namespace already exists: %s", ns);
            reply_error(c, 409, "AlreadyExistsException", m);
        } else if (st != HS_OK) {
            reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
        } else {
            reply_json(c, 200, json_pack("{s:o, s:o}", "namespace", ns_to_json(ns),
                                         "properties",
                                         json_is_object(props) ? json_deep_copy(props)
                                                               : json_object()));
        }
    } else if (ns) {
        if (!keys || !vals)
            reply_error(c, 500, "InternalServerError", "out of memory");
    }
    hs_free(keys);
    hs_free(vals);
    hs_free(ns);
    json_decref(b);
}

static void ns_load(rc_call *c, const char *ns, bool head)
{
    char **k = NULL, **v = NULL;
    size_t n = 0;
    hs_error err = { 0 };
    hs_status st = cat_namespace_properties(c->cat, ns, &k, &v, &n, &err);
    if (st == HS_NOT_FOUND) {
        char m[300];
        snprintf(m, sizeof m, "Namespace does not exist: %s", ns);
        reply_error(c, 404, "NoSuchNamespaceException", m);
    } else if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
    } else if (head) {
        reply_json(c, 204, NULL);
    } else {
        reply_json(c, 200, json_pack("{s:o, s:o}", "namespace", ns_to_json(ns), "properties",
                                     props_json(k, v, n)));
    }
    cat_strv_free(k, n);
    cat_strv_free(v, n);
}

static void ns_drop(rc_call *c, const char *ns)
{
    hs_error err = { 0 };
    hs_status st = cat_namespace_drop(c->cat, ns, &err);
    if (st == HS_INVALID)
        reply_error(c, 409, "NamespaceNotEmptyException", err.msg);
    else if (st != HS_OK)
        reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
    else
        reply_json(c, 204, NULL);
}

static void ns_update(rc_call *c, const char *ns)
{
    if (!need_ns(c, ns))
        return;
    json_t *b = body_object(c);
    if (!b)
        return;
    json_t *rm = json_object_get(b, "removals"), *up = json_object_get(b, "updates");
    if ((rm && !json_is_array(rm) && !json_is_null(rm)) ||
        (up && !json_is_object(up) && !json_is_null(up))) {
        bad_request(c, "removals must be an array of strings, updates an object of strings");
        json_decref(b);
        return;
    }
    size_t n_rm = json_array_size(rm), n_up = json_is_object(up) ? json_object_size(up) : 0;
    const char **rk = hs_calloc(n_rm + 1, sizeof *rk), **uk = hs_calloc(n_up + 1, sizeof *uk),
               **uv = hs_calloc(n_up + 1, sizeof *uv);
    char **k = NULL, **v = NULL;
    size_t n = 0;
    hs_error err = { 0 };
    hs_status st = (rk && uk && uv) ? cat_namespace_properties(c->cat, ns, &k, &v, &n, &err)
                                    : HS_NOMEM;
    json_t *removed = json_array(), *missing = json_array(), *updated = json_array();
    bool answered = false;
    for (size_t i = 0; st == HS_OK && i < n_rm; i++) {
        const char *key = json_string_value(json_array_get(rm, i));
        if (!key) {
            bad_request(c, "removals must be strings");
            answered = true;
            break;
        }
        if (json_is_object(up) && json_object_get(up, key)) {
            char m[300];
            snprintf(m, sizeof m, "Duplicate key to update and remove: %s", key);
            reply_error(c, 422, "UnprocessableEntityException", m);
            answered = true;
            break;
        }
        rk[i] = key;
        bool have = false;
        for (size_t j = 0; j < n; j++)
            have = have || strcmp(k[j], key) == 0;
        json_array_append_new(have ? removed : missing, json_string(key));
    }
    size_t i = 0;
    const char *key;
    json_t *val;
    if (st == HS_OK && !answered && n_up)
        json_object_foreach(up, key, val) {
            if (!json_is_string(val)) {
                bad_request(c, "updates must be an object of strings");
                answered = true;
                break;
            }
            uk[i] = key;
            uv[i++] = json_string_value(val);
            json_array_append_new(updated, json_string(key));
        }
    if (st == HS_OK && !answered)
        st = cat_namespace_update(c->cat, ns, uk, uv, n_up, rk, n_rm, &err);
    if (!answered) {
        if (st != HS_OK)
            reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
        else
            reply_json(c, 200, json_pack("{s:O, s:O, s:O}", "updated", updated, "removed",
                                         removed, "missing", missing));
    }
    json_decref(removed);
    json_decref(missing);
    json_decref(updated);
    cat_strv_free(k, n);
    cat_strv_free(v, n);
    hs_free(rk);
    hs_free(uk);
    hs_free(uv);
    json_decref(b);
}

/* ---- tables ------------------------------------------------------------------------------------ */

static void tables_list(rc_call *c, const char *ns)
{
    if (!need_ns(c, ns))
        return;
    char **names = NULL;
    size_t n = 0;
    hs_error err = { 0 };
    hs_status st = cat_list(c->cat, ns, &names, &n, &err);
    if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
        return;
    }
    size_t from, to;
    const char *next;
    if (!page_of(c, names, n, &from, &to, &next)) {
        cat_strv_free(names, n);
        return;
    }
    json_t *a = json_array();
    for (size_t i = from; a && i < to; i++)
        json_array_append_new(a, json_pack("{s:o, s:s}", "namespace", ns_to_json(ns), "name",
                                           names[i]));
    reply_json(c, 200, json_pack("{s:o, s:s?}", "identifiers", a, "next-page-token", next));
    cat_strv_free(names, n);
}

/* The FileIO properties vended for location: a new object (empty when
 * not vending or not on S3), NULL when they could not be had (*err says). */
static json_t *vend_config(rc_call *c, const char *location, hs_error *err)
{
    json_t *o = json_object();
    if (!o || !(c->s->vend || c->s->remote_signing) || !location)
        return o;
    char **k = NULL, **v = NULL;
    size_t n = 0;
    if (hs_io_vend_properties(location, &k, &v, &n, err) != HS_OK) {
        json_decref(o);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        /* remote signing: where the store is, never the keys */
        if (!c->s->remote_signing || strcmp(k[i], "s3.endpoint") == 0 ||
            strcmp(k[i], "s3.path-style-access") == 0 || strcmp(k[i], "s3.region") == 0)
            json_object_set_new(o, k[i], json_string(v[i]));
        hs_free(k[i]);
        hs_free(v[i]);
    }
    if (n && c->s->remote_signing) {
        json_object_set_new(o, "s3.remote-signing-enabled", json_string("true"));
        json_object_set_new(o, "s3.signer", json_string("S3V4RestSigner"));   /* pyiceberg */
        /* Java's S3V4RestSignerClient insists on an endpoint property */
        json_object_set_new(o, "s3.signer.endpoint", json_string("v1/aws/s3/sign"));
    }
    hs_free(k);
    hs_free(v);
    return o;
}

/* [{prefix: location, config}] for vended config (empty: []); new reference. */
static json_t *vend_credentials(const char *location, json_t *config)
{
    if (!location || !json_object_size(config))
        return json_array();
    return json_pack("[{s:s, s:O}]", "prefix", location, "config", config);
}

/* GET .../tables/{t}/credentials: the spec's LoadCredentialsResponse. */
static void table_credentials(rc_call *c, const char *ident)
{
    char *mloc = NULL;
    hs_error err = { 0 };
    hs_buf json = { 0 };
    hs_status st = cat_load_json(c->cat, ident, &json, &mloc, &err);
    json_error_t je;
    json_t *doc = st == HS_OK ? hs_json_loads(hs_buf_cstr(&json), 0, &je) : NULL;
    if (st == HS_NOT_FOUND) {
        char m[300];
        snprintf(m, sizeof m, "Table does not exist: %s", ident);
        reply_error(c, 404, "NoSuchTableException", m);
    } else if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchTableException", "CommitFailedException");
    } else if (!doc) {
        reply_error(c, 500, "InternalServerError", "the table's metadata file is not JSON");
    } else {
        const char *loc = json_string_value(json_object_get(doc, "location"));
        json_t *cfg = vend_config(c, loc, &err);
        if (!cfg)
            reply_error(c, 500, "InternalServerError", err.msg);
        else
            reply_json(c, 200, json_pack("{s:o}", "storage-credentials",
                                         vend_credentials(loc, cfg)));
        json_decref(cfg);
    }
    json_decref(doc);
    hs_buf_free(&json);
    hs_free(mloc);
}

/* LoadTableResult for the table's current metadata. */
static void reply_table(rc_call *c, int status, const char *ident)
{
    hs_buf json = { 0 };
    char *loc = NULL;
    hs_error err = { 0 };
    hs_status st = cat_load_json(c->cat, ident, &json, &loc, &err);
    json_error_t je;
    json_t *doc = st == HS_OK ? hs_json_loads(hs_buf_cstr(&json), 0, &je) : NULL;
    if (st == HS_NOT_FOUND) {
        char m[300];
        snprintf(m, sizeof m, "Table does not exist: %s", ident);
        reply_error(c, 404, "NoSuchTableException", m);
    } else if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchTableException", "CommitFailedException");
    } else if (!doc) {
        reply_error(c, 500, "InternalServerError", "the table's metadata file is not JSON");
    } else {
        const char *tl = json_string_value(json_object_get(doc, "location"));
        json_t *cfg = vend_config(c, tl, &err);
        if (!cfg) {
            reply_error(c, 500, "InternalServerError", err.msg);
        } else {
            json_t *r = json_pack("{s:s, s:o, s:o}", "metadata-location", loc, "metadata", doc,
                                  "config", cfg);
            doc = NULL;
            /* "storage-credentials" only when vending (older clients know no such key) */
            if (r && json_object_size(json_object_get(r, "config")))
                json_object_set_new(r, "storage-credentials",
                                    vend_credentials(tl ? tl : "", json_object_get(r, "config")));
            reply_json(c, status, r);
        }
    }
    json_decref(doc);
    hs_buf_free(&json);
    hs_free(loc);
}

static void table_exists(rc_call *c, const char *ident)
{
    bool e = false;
    hs_error err = { 0 };
    hs_status st = cat_exists(c->cat, ident, &e, &err);
    if (st != HS_OK)
        reply_status(c, st, &err, "NoSuchTableException", "AlreadyExistsException");
    else if (!e)
        reply_error(c, 404, "NoSuchTableException", "Table does not exist");
    else
        reply_json(c, 204, NULL);
}

static char *dump_sub(json_t *j)
{
    return j && !json_is_null(j) ? hs_json_dumps(j, JSON_COMPACT) : NULL;
}

/* CreateTableRequest -> a new table's metadata document (not yet stored). */
static json_t *new_table_metadata(rc_call *c, json_t *b, const char *ident)
{
    json_t *schema = json_object_get(b, "schema"), *spec = json_object_get(b, "partition-spec");
    json_t *order = json_object_get(b, "write-order"), *props = json_object_get(b, "properties");
    json_t *locj = json_object_get(b, "location");
    if (!json_is_object(schema)) {
        bad_request(c, "create table: schema is required (an object)");
        return NULL;
    }
    if ((spec && !json_is_null(spec) && !json_is_object(spec)) ||
        (order && !json_is_null(order) && !json_is_object(order)) ||
        (props && !json_is_null(props) && !json_is_object(props)) ||
        (locj && !json_is_null(locj) && !json_is_string(locj))) {
        bad_request(c, "create table: partition-spec, write-order and properties must be "
                       "objects, location a string");
        return NULL;
    }
    int fv = 2;
    const char *k;
    json_t *v;
    if (json_is_object(props))
        json_object_foreach(props, k, v) {
            if (!json_is_string(v)) {
                bad_request(c, "create table: properties must be strings");
                return NULL;
            }
            if (strcmp(k, "format-version") == 0) {
                const char *f = json_string_value(v);
                if (strcmp(f, "1") != 0 && strcmp(f, "2") != 0 && strcmp(f, "3") != 0) {
                    bad_request(c, "create table: format-version must be 1, 2 or 3");
                    return NULL;
                }
                fv = f[0] - '0';
            }
        }
    char *loc = NULL;
    hs_error err = { 0 };
    hs_status st = HS_OK;
    if (json_is_string(locj))
        loc = hs_strdup(json_string_value(locj));
    else
        st = cat_default_location(c->cat, ident, &loc, &err);
    if (st != HS_OK || !loc) {
        reply_status(c, st ? st : HS_NOMEM, &err, "NoSuchNamespaceException",
                     "AlreadyExistsException");
        return NULL;
    }
    char *sj = dump_sub(schema), *pj = dump_sub(spec), *oj = dump_sub(order);
    char *text = sj ? ice_debug_new_metadata(loc, sj, pj, oj, fv, &err) : NULL;
    free(sj);
    free(pj);
    free(oj);
    hs_free(loc);
    if (!text) {
        char m[600];
        snprintf(m, sizeof m, "create table: %s", err.msg[0] ? err.msg : "out of memory");
        bad_request(c, m);
        return NULL;
    }
    json_error_t je;
    json_t *doc = hs_json_loads(text, 0, &je);
    ice_debug_free(text);
    if (!doc) {
        reply_error(c, 500, "InternalServerError", "new metadata is not JSON");
        return NULL;
    }
    json_t *p = json_object_get(doc, "properties");
    if (!json_is_object(p)) {
        p = json_object();
        json_object_set_new(doc, "properties", p);
    }
    if (json_is_object(props))
        json_object_foreach(props, k, v) {
            if (strcmp(k, "format-version") != 0)
                json_object_set(p, k, v);
        }
    return doc;
}

static void table_create(rc_call *c, const char *ns)
{
    if (!need_ns(c, ns))
        return;
    json_t *b = body_object(c);
    if (!b)
        return;
    const char *name = json_string_value(json_object_get(b, "name"));
    char *ident = NULL;
    json_t *doc = NULL;
    if (!valid_table_name(c, name))
        goto done;
    ident = ident_of(ns, name);
    bool exists = false;
    hs_error err = { 0 };
    if (!ident || cat_exists(c->cat, ident, &exists, &err) != HS_OK) {
        reply_error(c, 500, "InternalServerError", err.msg[0] ? err.msg : "out of memory");
        goto done;
    }
    if (exists) {
        char m[300];
        snprintf(m, sizeof m, "Table already exists: %s", ident);
        reply_error(c, 409, "AlreadyExistsException", m);
        goto done;
    }
    if (!(doc = new_table_metadata(c, b, ident)))
        goto done;
    if (json_is_true(json_object_get(b, "stage-create"))) {
        const char *tl = json_string_value(json_object_get(doc, "location"));
        json_t *cfg = vend_config(c, tl, &err);
        if (!cfg)
            reply_error(c, 500, "InternalServerError", err.msg);
        else
            reply_json(c, 200, json_pack("{s:n, s:O, s:o}", "metadata-location", "metadata",
                                         doc, "config", cfg));
        goto done;
    }
    hs_buf text = { 0 };
    hs_status st = rc_validate_metadata(doc, &text, &err);
    if (st == HS_OK)
        st = cat_create_json(c->cat, ident, (const char *)text.data, text.len, NULL, &err);
    hs_buf_free(&text);
    if (st != HS_OK)
        reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
    else
        reply_table(c, 200, ident);
done:
    json_decref(doc);
    hs_free(ident);
    json_decref(b);
}

static void table_register(rc_call *c, const char *ns)
{
    if (!need_ns(c, ns))
        return;
    json_t *b = body_object(c);
    if (!b)
        return;
    const char *name = json_string_value(json_object_get(b, "name"));
    const char *mloc = json_string_value(json_object_get(b, "metadata-location"));
    bool overwrite = json_is_true(json_object_get(b, "overwrite"));
    char *ident = NULL;
    hs_buf text = { 0 };
    hs_error err = { 0 };
    if (!valid_table_name(c, name))
        goto done;
    if (!mloc || !*mloc) {
        bad_request(c, "register table: metadata-location is required");
        goto done;
    }
    ident = ident_of(ns, name);
    hs_status st = ident ? cat_io_read_all(cat_local_path(mloc), &text, &err) : HS_NOMEM;
    if (st == HS_NOT_FOUND) {
        char m[600];
        snprintf(m, sizeof m, "register table: %s does not exist", mloc);
        bad_request(c, m);
        goto done;
    }
    json_error_t je;
    json_t *doc = st == HS_OK ? hs_json_loads(hs_buf_cstr(&text), 0, &je) : NULL;
    if (st == HS_OK && !doc) {
        bad_request(c, "register table: the metadata file is not JSON");
        goto done;
    }
    if (st == HS_OK)
        st = rc_validate_metadata(doc, &text, &err);
    json_decref(doc);
    if (st == HS_INVALID) {
        bad_request(c, err.msg);
        goto done;
    }
    /* the catalog points at the file itself, as Java's registerTable does:
     * the answer's metadata-location is the one registered */
    if (st == HS_OK)
        st = cat_register(c->cat, ident, mloc, overwrite, &err);
    if (st != HS_OK)
        reply_status(c, st, &err, "NoSuchTableException", "AlreadyExistsException");
    else
        reply_table(c, 200, ident);
done:
    hs_buf_free(&text);
    hs_free(ident);
    json_decref(b);
}

static void table_commit(rc_call *c, const char *ident)
{
    json_t *b = body_object(c);
    if (!b)
        return;
    hs_status st = HS_OK;
    hs_error err = { 0 };
    json_t *out = NULL;
    char *newloc = NULL;
    for (int attempt = 0; attempt < 8; attempt++) {
        hs_buf cur = { 0 }, text = { 0 };
        char *loc = NULL;
        json_t *base = NULL;
        hs_err_clear(&err);
        st = cat_load_json(c->cat, ident, &cur, &loc, &err);
        if (st == HS_NOT_FOUND) {
            hs_err_clear(&err);
            st = HS_OK;
        } else if (st == HS_OK) {
            json_error_t je;
            base = hs_json_loads(hs_buf_cstr(&cur), 0, &je);
            if (!base)
                st = hs_err_set(&err, HS_CORRUPT, "the table's current metadata is not JSON");
        }
        if (st == HS_OK)
            st = rc_apply_commit(base, loc, b, &out, &err);
        if (st == HS_OK)
            st = rc_validate_metadata(out, &text, &err);
        if (st == HS_OK && base)
            st = cat_commit_json(c->cat, ident, loc, (const char *)text.data, text.len, &newloc,
                                 &err);
        else if (st == HS_OK)
            st = cat_create_json(c->cat, ident, (const char *)text.data, text.len, &newloc,
                                 &err);
        /* a lost swap (the base moved): retry from a fresh load, unless a
         * requirement failed (rc_apply_commit's own HS_CONFLICT: base unchanged) */
        bool lost_race = st == HS_CONFLICT && out != NULL;
        json_decref(base);
        hs_buf_free(&cur);
        hs_buf_free(&text);
        hs_free(loc);
        if (!lost_race)
            break;
        json_decref(out);
        out = NULL;
    }
    if (st == HS_NOT_FOUND) {
        char m[300];
        snprintf(m, sizeof m, "Table does not exist: %s", ident);
        reply_error(c, 404, "NoSuchTableException", m);
    } else if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchTableException", "CommitFailedException");
    } else {
        reply_json(c, 200, json_pack("{s:s, s:O}", "metadata-location", newloc, "metadata",
                                     out));
    }
    json_decref(out);
    hs_free(newloc);
    json_decref(b);
}

static void table_drop(rc_call *c, const char *ident)
{
    const char *p = query(c, "purgeRequested");
    bool purge = p && strcasecmp(p, "true") == 0;   /* pyiceberg sends "True" */
    hs_error err = { 0 };
    hs_status st = cat_drop(c->cat, ident, purge, &err);
    if (st == HS_NOT_FOUND) {
        char m[300];
        snprintf(m, sizeof m, "Table does not exist: %s", ident);
        reply_error(c, 404, "NoSuchTableException", m);
    } else if (st != HS_OK) {
        reply_status(c, st, &err, "NoSuchTableException", "AlreadyExistsException");
    } else {
        reply_json(c, 204, NULL);
    }
}

static char *ident_from_json(rc_call *c, json_t *o, const char *what)
{
    if (!json_is_object(o)) {
        char m[128];
        snprintf(m, sizeof m, "%s: must be an object {namespace, name}", what);
        bad_request(c, m);
        return NULL;
    }
    char *ns = ns_from_json(c, json_object_get(o, "namespace"), what);
    if (!ns)
        return NULL;
    const char *name = json_string_value(json_object_get(o, "name"));
    char *id = valid_table_name(c, name) ? ident_of(ns, name) : NULL;
    hs_free(ns);
    return id;
}

static void table_rename(rc_call *c)
{
    json_t *b = body_object(c);
    if (!b)
        return;
    char *from = ident_from_json(c, json_object_get(b, "source"), "source");
    char *to = from ? ident_from_json(c, json_object_get(b, "destination"), "destination")
                    : NULL;
    if (from && to) {
        hs_error err = { 0 };
        bool src = false;
        hs_status st = cat_exists(c->cat, from, &src, &err);
        if (st == HS_OK && !src) {
            char m[300];
            snprintf(m, sizeof m, "Table does not exist: %s", from);
            reply_error(c, 404, "NoSuchTableException", m);
        } else {
            if (st == HS_OK)
                st = cat_rename(c->cat, from, to, &err);
            if (st != HS_OK)
                reply_status(c, st, &err, "NoSuchNamespaceException", "AlreadyExistsException");
            else
                reply_json(c, 204, NULL);
        }
    }
    hs_free(from);
    hs_free(to);
    json_decref(b);
}

/* ---- the S3 signer ------------------------------------------------------------------------------ */

/* The directories of the catalog's tables (each table's metadata location
 * up to its "/metadata/" directory), gathered once per sign request. */
typedef struct sign_scope {
    rc_call *c;
    char **dirs;
    size_t n, cap;
    bool loaded, failed;
} sign_scope;

static void sign_add_dir(sign_scope *sc, const char *mloc)
{
    const char *m = strstr(mloc, "/metadata/");
    const char *last;
    for (last = m; m; m = strstr(m + 1, "/metadata/"))
        last = m;
    if (!last)
        return;
    if (sc->n == sc->cap) {
        size_t nc = sc->cap ? sc->cap * 2 : 16;
        char **a = hs_realloc(sc->dirs, nc * sizeof *a);
        if (!a) {
            sc->failed = true;
            return;
        }
        sc->dirs = a;
        sc->cap = nc;
    }
    if (!(sc->dirs[sc->n] = hs_strndup(mloc, (size_t)(last - mloc))))
        sc->failed = true;
    else
        sc->n++;
}

static void sign_collect(sign_scope *sc, const char *parent, int depth)
{
    char **ns = NULL, **t = NULL;
    size_t n_ns = 0, n_t = 0;
    hs_error err = { 0 };
    if (depth > 16 || cat_namespace_list(sc->c->cat, parent, &ns, &n_ns, &err) != HS_OK) {
        sc->failed = depth <= 16;
        return;
    }
    for (size_t i = 0; i < n_ns && !sc->failed; i++) {
        if (cat_list(sc->c->cat, ns[i], &t, &n_t, &err) != HS_OK) {
            sc->failed = true;
            break;
        }
        for (size_t j = 0; j < n_t && !sc->failed; j++) {
            char *ident = ident_of(ns[i], t[j]), *mloc = NULL;
            if (ident && cat_current_location(sc->c->cat, ident, &mloc, &err) == HS_OK)
                sign_add_dir(sc, mloc);
            hs_free(mloc);
            hs_free(ident);
        }
        cat_strv_free(t, n_t);
        t = NULL;
        sign_collect(sc, ns[i], depth + 1);
    }
    cat_strv_free(ns, n_ns);
}

/* hs_s3_sign_allow_fn: uri (s3://bucket/key) lies inside a table's
 * directory ('/'-bounded; s3a:// and s3:// name the same objects). */
static bool sign_allow(void *arg, const char *uri)
{
    sign_scope *sc = arg;
    if (!sc->loaded) {
        sc->loaded = true;
        sign_collect(sc, NULL, 0);
    }
    /* dot segments: an HTTP layer may fold them, reaching beyond the prefix */
    size_t ul = strlen(uri);
    if (sc->failed || strncmp(uri, "s3://", 5) != 0 || strstr(uri, "/../") ||
        strstr(uri, "/./") || (ul >= 3 && strcmp(uri + ul - 3, "/..") == 0))
        return false;
    for (size_t i = 0; i < sc->n; i++) {
        const char *d = sc->dirs[i];
        const char *rest = strncmp(d, "s3://", 5) == 0 ? d + 5
                         : strncmp(d, "s3a://", 6) == 0 ? d + 6 : NULL;
        size_t l = rest ? strlen(rest) : 0;
        if (rest && l && strncmp(uri + 5, rest, l) == 0 && uri[5 + l] == '/')
            return true;
    }
    return false;
}

/* POST /v1/aws/s3/sign: Iceberg's S3 signer API (io/s3_sign.c signs), for
 * the objects of every table; POST .../tables/{t}/sign (ident non-NULL: the
 * per-table route Java 1.12's RESTCatalog uses) for those of that table. */
static void sign_s3(rc_call *c, const char *ident)
{
    sign_scope sc = { .c = c };
    if (ident) {
        char *mloc = NULL;
        hs_error lerr = { 0 };
        hs_status lst = cat_current_location(c->cat, ident, &mloc, &lerr);
        if (lst != HS_OK) {
            reply_status(c, lst, &lerr, "NoSuchTableException", "AlreadyExistsException");
            return;
        }
        sc.loaded = true;   /* only this table */
        sign_add_dir(&sc, mloc);
        hs_free(mloc);
    }
    char *out = NULL;
    bool cacheable = false, refused = false;
    hs_error err = { 0 };
    hs_status st = hs_s3_sign_remote(c->http->body ? c->http->body : "", c->http->body_len,
                                     sign_allow, &sc, &out, &cacheable, &refused, &err);
    for (size_t i = 0; i < sc.n; i++)
        hs_free(sc.dirs[i]);
    hs_free(sc.dirs);
    if (st == HS_OK) {
        c->resp->status = 200;
        c->resp->cache_control = cacheable ? "private" : "no-cache";
        if (hs_buf_puts(&c->resp->body, out) != HS_OK)
            reply_json(c, 500, NULL);
    } else if (refused) {
        reply_error(c, 403, "ForbiddenException", err.msg);
    } else if (st == HS_INVALID) {
        bad_request(c, err.msg);
    } else if (st == HS_UNSUPPORTED) {
        reply_error(c, 503, "ServiceUnavailableException", err.msg);
    } else {
        reply_error(c, 500, "InternalServerError", err.msg);
    }
    hs_free(out);
}

/* ---- config and auth ---------------------------------------------------------------------------- */

static const char *const ENDPOINTS[] = {
    "GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register", "POST /v1/{prefix}/tables/rename",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
};

static void config(rc_call *c)
{
    json_t *eps = json_array();
    for (size_t i = 0; eps && i < sizeof ENDPOINTS / sizeof ENDPOINTS[0]; i++)
        json_array_append_new(eps, json_string(ENDPOINTS[i]));
    reply_json(c, 200, json_pack("{s:{}, s:{}, s:o}", "defaults", "overrides", "endpoints", eps));
}

/* Constant-time string equality (for secrets). */
static bool secret_eq(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

/* One application/x-www-form-urlencoded value (decoded copy, or NULL). */
static char *form_value(const char *body, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = body; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            char *v = hs_malloc(n - kl);
            if (!v)
                return NULL;
            memcpy(v, p + kl + 1, n - kl - 1);
            v[n - kl - 1] = 0;
            for (char *q = v; *q; q++)
                if (*q == '+')
                    *q = ' ';
            if (!hs_http_unescape(v)) {
                hs_free(v);
                return NULL;
            }
            return v;
        }
        p = amp ? amp + 1 : NULL;
    }
    return NULL;
}

static void oauth_tokens(rc_call *c)
{
    rc_server *s = c->s;
    const char *body = c->http->body ? c->http->body : "";
    char *gt = form_value(body, "grant_type"), *id = form_value(body, "client_id");
    char *secret = form_value(body, "client_secret");
    if (!gt || strcmp(gt, "client_credentials") != 0) {
        reply_json(c, 400, json_pack("{s:s, s:s}", "error", "unsupported_grant_type",
                                     "error_description", "only client_credentials"));
    } else if (!s->client_id || !s->token || !id || !secret || !secret_eq(id, s->client_id) ||
               !secret_eq(secret, s->client_secret)) {
        reply_json(c, 401, json_pack("{s:s, s:s}", "error", "invalid_client",
                                     "error_description", "unknown client or wrong secret"));
    } else {
        reply_json(c, 200, json_pack("{s:s, s:s, s:s, s:i}", "access_token", s->token,
                                     "token_type", "bearer", "issued_token_type",
                                     "urn:ietf:params:oauth:token-type:access_token",
                                     "expires_in", 3600));
    }
    hs_free(gt);
    hs_free(id);
    hs_free(secret);
}

static bool authorized(rc_call *c)
{
    if (!c->s->token)
        return true;
    const char *h = c->http->conn_ ? hs_http_header(c->http, "Authorization") : NULL;
    if (h && strncasecmp(h, "Bearer ", 7) == 0 && secret_eq(h + 7, c->s->token))
        return true;
    reply_error(c, 401, "NotAuthorizedException",
                h ? "wrong bearer token" : "authentication required: Authorization: Bearer "
                                           "<token>");
    return false;
}

/* ---- routing ----------------------------------------------------------------------------------- */

static bool split_path(rc_call *c, const char *path)
{
    if (strncmp(path, "/v1/", 4) != 0) {
        reply_error(c, 404, "NoSuchRouteException", "unknown path (the API is under /v1/)");
        return false;
    }
    const char *p = path + 4;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (c->n_seg == RC_MAX_SEG) {
            reply_error(c, 404, "NoSuchRouteException", "path has too many segments");
            return false;
        }
        char *s = hs_malloc(n + 1);
        if (!s) {
            reply_error(c, 500, "InternalServerError", "out of memory");
            return false;
        }
        memcpy(s, p, n);
        s[n] = 0;
        c->seg[c->n_seg++] = s;
        json_t *utf8 = NULL;
        if (!hs_http_unescape(s) || !(utf8 = json_string(s))) {
            bad_request(c, "malformed %-escape or invalid UTF-8 in the path");
            return false;
        }
        json_decref(utf8);
        p += n + (slash ? 1 : 0);
    }
    return true;
}

static bool is(const rc_call *c, int i, const char *s)
{
    return i < c->n_seg && strcmp(c->seg[i], s) == 0;
}

static void method_not_allowed(rc_call *c)
{
    reply_error(c, 405, "MethodNotAllowedException", "method not allowed on this path");
}

static void route(rc_call *c)
{
    const char *m = c->http->method;
    bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
    bool del = strcmp(m, "DELETE") == 0, head = strcmp(m, "HEAD") == 0;
    if (c->n_seg == 1 && is(c, 0, "config")) {
        get ? config(c) : method_not_allowed(c);
        return;
    }
    if (c->n_seg == 3 && is(c, 0, "aws") && is(c, 1, "s3") && is(c, 2, "sign")) {
        post ? sign_s3(c, NULL) : method_not_allowed(c);
        return;
    }
    if (c->n_seg == 2 && is(c, 0, "tables") && is(c, 1, "rename")) {
        post ? table_rename(c) : method_not_allowed(c);
        return;
    }
    if (c->n_seg < 1 || !is(c, 0, "namespaces")) {
        reply_error(c, 404, "NoSuchRouteException", "unknown path");
        return;
    }
    if (c->n_seg == 1) {
        get ? ns_list(c) : post ? ns_create(c) : method_not_allowed(c);
        return;
    }
    char *ns = ns_from_segment(c, c->seg[1]);
    if (!ns)
        return;
    if (c->n_seg == 2) {
        if (get || head)
            ns_load(c, ns, head);
        else if (del)
            ns_drop(c, ns);
        else
            method_not_allowed(c);
    } else if (c->n_seg == 3 && is(c, 2, "properties")) {
        post ? ns_update(c, ns) : method_not_allowed(c);
    } else if (c->n_seg == 3 && is(c, 2, "register")) {
        post ? table_register(c, ns) : method_not_allowed(c);
    } else if (c->n_seg == 3 && is(c, 2, "tables")) {
        get ? tables_list(c, ns) : post ? table_create(c, ns) : method_not_allowed(c);
    } else if (c->n_seg == 3 && is(c, 2, "views")) {
        size_t from, to;
        const char *next;
        /* no views: every page is the last, empty one (pageSize still checked) */
        if (get && need_ns(c, ns) && page_of(c, NULL, 0, &from, &to, &next))
            reply_json(c, 200, json_pack("{s:[], s:n}", "identifiers", "next-page-token"));
        else if (!get)
            method_not_allowed(c);
    } else if (c->n_seg == 5 && is(c, 2, "tables") && is(c, 4, "credentials")) {
        char *ident = valid_table_name(c, c->seg[3]) ? ident_of(ns, c->seg[3]) : NULL;
        if (ident && get)
            table_credentials(c, ident);
        else if (ident)
            method_not_allowed(c);
        hs_free(ident);
    } else if (c->n_seg == 5 && is(c, 2, "tables") && is(c, 4, "sign")) {
        char *ident = valid_table_name(c, c->seg[3]) ? ident_of(ns, c->seg[3]) : NULL;
        if (ident && post)
            sign_s3(c, ident);
        else if (ident)
            method_not_allowed(c);
        hs_free(ident);
    } else if (c->n_seg == 4 && is(c, 2, "views")) {
        reply_error(c, 404, "NoSuchViewException", "this catalog has no views");
    } else if (c->n_seg == 4 && is(c, 2, "tables")) {
        char *ident = valid_table_name(c, c->seg[3]) ? ident_of(ns, c->seg[3]) : NULL;
        if (ident) {
            if (get)
                reply_table(c, 200, ident);
            else if (head)
                table_exists(c, ident);
            else if (post)
                table_commit(c, ident);
            else if (del)
                table_drop(c, ident);
            else
                method_not_allowed(c);
        }
        hs_free(ident);
    } else {
        reply_error(c, 404, "NoSuchRouteException", "unknown path");
    }
    hs_free(ns);
}

void rc_handle(void *server, const hs_http_request *req, hs_http_response *resp)
{
    rc_call c = { .s = server, .http = req, .resp = resp };
    resp->content_type = "application/json";
    if (!split_path(&c, req->path))
        goto done;
    if (c.n_seg == 2 && is(&c, 0, "oauth") && is(&c, 1, "tokens")) {
        strcmp(req->method, "POST") == 0 ? oauth_tokens(&c) : method_not_allowed(&c);
        goto done;
    }
    if (!authorized(&c))
        goto done;
    hs_error err = { 0 };
    hs_status st = cat_sql_open(c.s->sqlite_path, c.s->catalog_name, c.s->warehouse, &c.cat,
                                &err);
    if (st != HS_OK) {
        reply_error(&c, 500, "InternalServerError", err.msg);
        goto done;
    }
    cat_sql_set_busy_timeout(c.cat, 10000);
    route(&c);
done:
    cat_free(c.cat);
    for (int i = 0; i < c.n_seg; i++)
        hs_free(c.seg[i]);
}

/* ---- lifetime ------------------------------------------------------------------------------------ */

void rc_free(rc_server *s)
{
    if (!s)
        return;
    hs_free(s->sqlite_path);
    hs_free(s->catalog_name);
    hs_free(s->warehouse);
    hs_free(s->token);
    hs_free(s->client_id);
    hs_free(s->client_secret);
    hs_free(s);
}

static bool dup_opt(const char *in, char **out)
{
    *out = in ? hs_strdup(in) : NULL;
    return !in || *out;
}

hs_status rc_new(const rc_config *cfg, rc_server **out, hs_error *err)
{
    *out = NULL;
    if (!cfg->sqlite_path || !*cfg->sqlite_path)
        return hs_err_set(err, HS_INVALID, "REST catalog: no SQLite catalog file given");
    if ((cfg->client_id != NULL) != (cfg->client_secret != NULL))
        return hs_err_set(err, HS_INVALID, "REST catalog: OAuth2 needs both client id and "
                          "secret");
    if (cfg->client_id && !cfg->token)
        return hs_err_set(err, HS_INVALID, "REST catalog: OAuth2 client credentials need a "
                          "token to issue");
    rc_server *s = hs_calloc(1, sizeof *s);
    if (!s || !dup_opt(cfg->sqlite_path, &s->sqlite_path) ||
        !dup_opt(cfg->catalog_name ? cfg->catalog_name : "default", &s->catalog_name) ||
        !dup_opt(cfg->warehouse, &s->warehouse) || !dup_opt(cfg->token, &s->token) ||
        !dup_opt(cfg->client_id, &s->client_id) || !dup_opt(cfg->client_secret, &s->client_secret)) {
        rc_free(s);
        return hs_err_nomem(err, 256);
    }
    s->vend = cfg->vend_credentials;
    s->remote_signing = cfg->remote_signing;
    cat_catalog *cat = NULL;
    hs_status st = cat_sql_open(s->sqlite_path, s->catalog_name, s->warehouse, &cat, err);
    cat_free(cat);
    if (st != HS_OK) {
        rc_free(s);
        return st;
    }
    *out = s;
    return HS_OK;
}
