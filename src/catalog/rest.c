/*
 * catalog/rest.c - the Iceberg REST catalog client behind the catalog
 * interface (catalog.h), over libcurl, so `namespace.table` resolves through
 * any REST catalog (ours, `hyperstream serve`; Apache Iceberg's; Polaris,
 * Nessie, Unity, Glue and the others that speak the protocol).
 *
 *   catalog operation     request
 *   --------------------  ---------------------------------------------------
 *   open                  [POST oauth/tokens], GET /v1/config?warehouse=
 *   load / current_loc.   GET  namespaces/{ns}/tables/{t}
 *   create                POST namespaces/{ns}/tables/{t} with assert-create
 *                         and the updates that build the table (our uuid and
 *                         field ids, so the handle's metadata stays true)
 *   commit                POST namespaces/{ns}/tables/{t}: requirements
 *                         (table uuid, main's snapshot, and the ids of what
 *                         changed) + updates, diffed from the base metadata
 *   drop                  DELETE ...?purgeRequested=
 *   rename                POST tables/rename
 *   register              POST namespaces/{ns}/register {name, metadata-location,
 *                         overwrite}
 *   list / exists         GET namespaces/{ns}/tables, HEAD .../tables/{t}
 *   list views            GET namespaces/{ns}/views (a server without views -
 *                         404/400/405/501 on the route - lists none)
 *   namespaces            GET/POST namespaces, GET/DELETE namespaces/{ns},
 *                         POST namespaces/{ns}/properties
 *
 * Identifiers are "a.b.t" (the last dot splits; namespace levels travel
 * joined by %1F).  Status mapping: 404 -> HS_NOT_FOUND, 409 -> HS_CONFLICT
 * (so the commit loop reloads and retries), 400/422 -> HS_INVALID,
 * 401/403 -> HS_INVALID "not authorized", 406 -> HS_UNSUPPORTED, other
 * failures -> HS_IO; messages carry the server's error type and message.
 *
 * Options (hs_catalog_open_uri's JSON): "token" (sent as Authorization:
 * Bearer), "credential" ("client_id:client_secret", exchanged at the token
 * endpoint: "oauth2-server-uri" or <uri>/v1/oauth/tokens, "scope" default
 * "catalog"; the token is fetched again before it expires - its expires_in,
 * min(5 min, half its life) ahead - and once after a 401 or 419, then the
 * request is sent again; the vended-key refresher's copy does the same),
 * "warehouse" (sent to the config endpoint), "prefix".  The
 * config response's defaults and overrides are merged as the spec says
 * (defaults < client options < overrides); "uri", "prefix" and "warehouse"
 * from it are honoured.  Options "header.<Name>" are sent as HTTP headers
 * on every catalog request (pyiceberg's and Java's convention), e.g.
 * "header.X-Iceberg-Access-Delegation": "vended-credentials".
 * "rest-page-size" (as in Java and pyiceberg): the pageSize list requests
 * ask for; lists always follow next-page-token to the last page.
 *
 * Storage settings a catalog vends: the merged config's FileIO properties
 * (s3.endpoint, s3.access-key-id, s3.secret-access-key, s3.session-token,
 * s3.region, client.region, s3.path-style-access) under a LoadTableResult's
 * "config" (table's wins) and its "storage-credentials" ({prefix, config}
 * pairs) become io scopes (io.h's hs_io_set_scope) for the table's location
 * and the given prefixes, set whenever a table is loaded, created, committed
 * or registered - before anyone reads the table's files.  The catalog-wide
 * ones also cover the warehouse when it is an s3:// URI.
 *
 * Vended keys are refreshed (io.h's hs_io_refresher): when a LoadTableResult
 * carries keys, its scopes hold a refresher with its own connection to the
 * catalog (a copy of this handle's settings, its own curl handle, so any
 * thread may run it while this handle is busy or closed).  io/s3_scope.c
 * runs it before a request whose keys expire soon
 * (s3.session-token-expires-at-ms) or after a 403 ExpiredToken: GET
 * namespaces/{ns}/tables/{t}/credentials when the config's "endpoints" list
 * it (the spec's LoadCredentialsResponse: {storage-credentials}), else - or
 * when it fails - a load of the table (GET namespaces/{ns}/tables/{t}); the
 * new keys replace the scopes' for every thread at once.
 *
 * Remote signing (s3.remote-signing-enabled=true in the merged config, a
 * table's "config" or a storage credential): the table's refresher also
 * carries a signer (vend_sign), so io/s3_sign.c has each S3 request under
 * the table signed by POSTing an S3SignRequest to s3.signer.uri (default
 * the catalog's uri) + s3.signer.endpoint (default v1/aws/s3/sign) with the
 * catalog's token, on the refresher's connection; an answer with
 * Cache-Control: private may be reused (the signature cache).
 *
 * The base of a commit: the last metadata loaded or committed through this
 * handle when its location is the base location, else a fresh GET (a moved
 * table is HS_CONFLICT).  The handle holds one curl easy handle (keep-alive);
 * like every catalog handle it is not thread-safe.
 */
#include "catalog/catalog_int.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct rest_catalog {
    cat_catalog base;
    CURL *curl;
    char *uri;       /* base URL without trailing '/' */
    char *prefix;    /* NULL = none */
    char *auth;      /* "Authorization: Bearer ..." or NULL */
    /* OAuth2 client credentials (option "credential"), kept to fetch a new
     * token: before the current one expires (its expires_in) and once after a
     * 401/419 from the catalog.  NULL = a fixed "token" or no auth. */
    char *credential, *scope, *token_uri;
    int64_t token_at_ms, token_expires_ms;   /* when fetched; 0 = no expires_in */
    char *warehouse;
    char *ns_sep;    /* namespace level separator in paths, escaped (default %1F) */
    json_t *io;      /* the merged config's FileIO properties (object of strings) */
    struct curl_slist *headers;   /* "header.<Name>" options, as "Name: value" */
    long page_size;  /* "rest-page-size": the pageSize lists ask for; 0 = none */
    bool creds_endpoint;   /* the config lists GET .../tables/{table}/credentials */
    bool resp_private;     /* the last answer had Cache-Control: private */
    /* the last metadata seen: ident, its location, the document */
    char *cache_ident, *cache_loc;
    json_t *cache_doc;
} rest_catalog;

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- HTTP ------------------------------------------------------------------------------------ */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    hs_buf *b = ud;
    return hs_buf_append(b, p, size * n) == HS_OK ? size * n : 0;
}

/* Notes "Cache-Control: private" (the S3 signer's mark of a reusable answer). */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    rest_catalog *rc = ud;
    size_t len = size * n;
    if (len > 14 && strncasecmp(p, "Cache-Control:", 14) == 0) {
        char v[64];
        size_t vl = len - 14 < sizeof v - 1 ? len - 14 : sizeof v - 1;
        memcpy(v, p + 14, vl);
        v[vl] = 0;
        if (strstr(v, "private"))
            rc->resp_private = true;
    }
    return len;
}

/* One request: method to url (absolute), body (NULL = none; form = urlencoded
 * instead of JSON).  *status = the HTTP status; resp = the body. */
static hs_status http_once(rest_catalog *rc, const char *method, const char *url, const char *body,
                      bool form, bool with_auth, long *status, hs_buf *resp, hs_error *err)
{
    hs_buf_reset(resp);
    if (!rc->curl && !(rc->curl = curl_easy_init()))   /* a refresher's copy: made on use */
        return hs_err_set(err, HS_NOMEM, "REST catalog: cannot create a curl handle");
    CURL *c = rc->curl;
    curl_easy_reset(c);
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, form ? "Content-Type: application/x-www-form-urlencoded"
                                  : "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "X-Client-Version: hyperstream");
    if (with_auth && rc->auth)
        h = curl_slist_append(h, rc->auth);
    for (struct curl_slist *x = with_auth ? rc->headers : NULL; x; x = x->next)
        h = curl_slist_append(h, x->data);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    rc->resp_private = false;
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, rc);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (cc != CURLE_OK)
        return hs_err_set(err, HS_IO, "REST catalog %s %s: %s", method, url,
                          curl_easy_strerror(cc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    return HS_OK;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static hs_status fetch_token(rest_catalog *rc, hs_error *err);

/* The token is due when it expires within min(5 min, half its life) - the
 * rule the vended S3 keys follow (io/s3_scope.c). */
static bool token_due(const rest_catalog *rc)
{
    if (!rc->credential || !rc->token_expires_ms)
        return false;
    int64_t life = rc->token_expires_ms - rc->token_at_ms, margin = life / 2;
    if (margin > 300000)
        margin = 300000;
    return wall_ms() >= rc->token_expires_ms - margin;
}

/* http_once with the OAuth2 token kept fresh: a due token is fetched again
 * first (a failure there leaves the old one, which may still work; the 401
 * that follows reports it), and a 401 or 419 (the spec's "authentication
 * timeout") with client credentials fetches a new token and sends the
 * request once more. */
static hs_status http(rest_catalog *rc, const char *method, const char *url, const char *body,
                      bool form, bool with_auth, long *status, hs_buf *resp, hs_error *err)
{
    bool refreshed = false;
    if (with_auth && token_due(rc)) {
        hs_error e2 = { 0 };
        refreshed = fetch_token(rc, &e2) == HS_OK;
        hs_err_clear(&e2);
    }
    HS_TRY(http_once(rc, method, url, body, form, with_auth, status, resp, err));
    if (with_auth && rc->credential && !refreshed && (*status == 401 || *status == 419)) {
        hs_error e2 = { 0 };
        if (fetch_token(rc, &e2) != HS_OK) {
            hs_err_clear(&e2);   /* the caller reports the catalog's 401 */
            return HS_OK;
        }
        hs_err_clear(&e2);
        HS_TRY(http_once(rc, method, url, body, form, with_auth, status, resp, err));
    }
    return HS_OK;
}

/* An error response as a status + message naming the server's error. */
static hs_status http_error(long status, const hs_buf *resp, const char *what, hs_error *err)
{
    const char *type = "", *msg = "";
    json_error_t je;
    json_t *j = resp->len ? hs_json_loadb((const char *)resp->data, resp->len, 0, &je) : NULL;
    json_t *e = json_object_get(j, "error");
    if (json_is_object(e)) {
        type = json_string_value(json_object_get(e, "type")) ? json_string_value(
                   json_object_get(e, "type")) : "";
        msg = json_string_value(json_object_get(e, "message")) ? json_string_value(
                  json_object_get(e, "message")) : "";
    } else if (json_is_string(e)) {   /* OAuth2 errors: {"error": "...", ...} */
        type = json_string_value(e);
        msg = json_string_value(json_object_get(j, "error_description"))
                  ? json_string_value(json_object_get(j, "error_description")) : "";
    }
    hs_status st = status == 404 ? HS_NOT_FOUND
                 : status == 409 ? HS_CONFLICT
                 : status == 406 ? HS_UNSUPPORTED
                 : (status == 400 || status == 422 || status == 401 || status == 403)
                     ? HS_INVALID : HS_IO;
    hs_status r = hs_err_set(err, st, "REST catalog: %s: HTTP %ld%s%s%s%s%s", what, status,
                             *type ? " " : "", type, *msg ? ": " : "", msg,
                             status == 401 || status == 403 ? " (not authorized: check the "
                                                              "token or credential)" : "");
    json_decref(j);
    return r;
}

/* Decodes %XX escapes in place; false when one is malformed or NUL. */
static bool url_unescape_inplace(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int v = 0;
        for (int i = 1; i <= 2; i++) {
            char c = r[i];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return false;
            v = v * 16 + d;
        }
        if (!v)
            return false;
        *w++ = (char)v;
        r += 2;
    }
    *w = 0;
    return true;
}

static char *esc(rest_catalog *rc, const char *s)
{
    char *e = curl_easy_escape(rc->curl, s, 0);
    char *r = e ? hs_strdup(e) : NULL;
    curl_free(e);
    return r;
}

/* "a.b" -> "a%1Fb" (each level escaped). */
static char *ns_path(rest_catalog *rc, const char *ns)
{
    hs_buf b = { 0 };
    const char *p = ns;
    bool ok = true;
    while (ok && *p) {
        const char *d = strchr(p, '.');
        size_t n = d ? (size_t)(d - p) : strlen(p);
        char *lvl = hs_malloc(n + 1);
        char *e = NULL;
        if (lvl) {
            memcpy(lvl, p, n);
            lvl[n] = 0;
            e = esc(rc, lvl);
        }
        ok = e && (p == ns || hs_buf_puts(&b, rc->ns_sep ? rc->ns_sep : "%1F") == HS_OK) &&
             hs_buf_puts(&b, e) == HS_OK;
        hs_free(lvl);
        hs_free(e);
        p += n + (d ? 1 : 0);
    }
    char *out = ok ? hs_strdup(hs_buf_cstr(&b)) : NULL;
    hs_buf_free(&b);
    return out;
}

/* <uri>/v1/[<prefix>/]<path> */
static char *url_of(rest_catalog *rc, const char *path)
{
    return rc->prefix ? cat_sprintf("%s/v1/%s/%s", rc->uri, rc->prefix, path)
                      : cat_sprintf("%s/v1/%s", rc->uri, path);
}

/* A request to an API path; 2xx -> HS_OK with the parsed body in *out (may be
 * NULL for none); else the mapped error. */
static hs_status call(rest_catalog *rc, const char *method, const char *path, json_t *body,
                      const char *what, json_t **out, long *status_out, hs_error *err)
{
    if (out)
        *out = NULL;
    char *url = url_of(rc, path);
    char *text = body ? hs_json_dumps(body, JSON_COMPACT) : NULL;
    if (!url || (body && !text)) {
        hs_free(url);
        free(text);
        return hs_err_nomem(err, 256);
    }
    hs_buf resp = { 0 };
    long status = 0;
    hs_status st = http(rc, method, url, text, false, true, &status, &resp, err);
    hs_free(url);
    free(text);
    if (status_out)
        *status_out = status;
    if (st == HS_OK && (status < 200 || status > 299))
        st = http_error(status, &resp, what, err);
    if (st == HS_OK && out && resp.len) {
        json_error_t je;
        *out = hs_json_loadb((const char *)resp.data, resp.len, 0, &je);
        if (!*out)
            st = hs_err_set(err, HS_IO, "REST catalog: %s: the response is not JSON (%s)", what,
                            je.text);
    }
    hs_buf_free(&resp);
    return st;
}

/* A list endpoint (GET path, which may carry a query already), every page:
 * the spec's pagination - pageToken="" first (with pageSize when
 * "rest-page-size" is set), then each response's next-page-token until it is
 * null or absent - with the arrays under key concatenated into
 * *out = {key: [...]}.  A token seen twice (a server going in circles) is an
 * error, not a loop. */
static hs_status list_pages(rest_catalog *rc, const char *path, const char *key,
                            const char *what, json_t **out, long *status_out, hs_error *err)
{
    *out = NULL;
    json_t *all = json_array(), *seen = json_object();
    char *token = hs_strdup("");
    hs_status st = all && seen && token ? HS_OK : hs_err_nomem(err, 256);
    const char *join = strchr(path, '?') ? "&" : "?";
    while (st == HS_OK) {
        char *et = esc(rc, token);
        char ps[32] = "";
        if (rc->page_size > 0)
            snprintf(ps, sizeof ps, "&pageSize=%ld", rc->page_size);
        char *p = et ? cat_sprintf("%s%spageToken=%s%s", path, join, et, ps) : NULL;
        hs_free(et);
        json_t *r = NULL;
        st = p ? call(rc, "GET", p, NULL, what, &r, status_out, err) : hs_err_nomem(err, 256);
        hs_free(p);
        if (st != HS_OK)
            break;
        json_t *a = json_object_get(r, key);
        if (a && !json_is_array(a))
            st = hs_err_set(err, HS_IO, "REST catalog: %s: \"%s\" is not an array", what, key);
        else if (a && json_array_extend(all, a) != 0)
            st = hs_err_nomem(err, 256);
        json_t *nt = json_object_get(r, "next-page-token");
        const char *next = json_string_value(nt);
        if (st == HS_OK && nt && !json_is_null(nt) && !json_is_string(nt))
            st = hs_err_set(err, HS_IO, "REST catalog: %s: next-page-token is not a string",
                            what);
        bool more = st == HS_OK && next && *next;
        if (more && json_object_get(seen, next))
            st = hs_err_set(err, HS_IO, "REST catalog: %s: the server returned the page "
                            "token \"%s\" twice", what, next);
        else if (more && json_object_set_new(seen, next, json_true()) != 0)
            st = hs_err_nomem(err, 256);
        hs_free(token);
        token = more && st == HS_OK ? hs_strdup(next) : NULL;
        json_decref(r);
        if (st == HS_OK && !more)
            break;
        if (st == HS_OK && !token)
            st = hs_err_nomem(err, 256);
    }
    hs_free(token);
    json_decref(seen);
    if (st == HS_OK && !(*out = json_pack("{s:o}", key, all)))
        st = hs_err_nomem(err, 256);
    else if (st != HS_OK)
        json_decref(all);
    return st;
}

/* ---- identifiers -------------------------------------------------------------------------------- */

/* "ns.t" -> "namespaces/<ns>/tables/<t>" (suffix appended). */
static hs_status table_path(rest_catalog *rc, const char *ident, char **out, hs_error *err)
{
    *out = NULL;
    const char *dot = strrchr(ident, '.');
    if (!dot || dot == ident || !dot[1])
        return hs_err_set(err, HS_INVALID, "%s: a REST catalog table is namespace.table",
                          ident);
    char *ns = hs_malloc((size_t)(dot - ident) + 1);
    if (!ns)
        return hs_err_nomem(err, strlen(ident));
    memcpy(ns, ident, (size_t)(dot - ident));
    ns[dot - ident] = 0;
    char *np = ns_path(rc, ns), *tp = esc(rc, dot + 1);
    hs_free(ns);
    if (np && tp)
        *out = cat_sprintf("namespaces/%s/tables/%s", np, tp);
    hs_free(np);
    hs_free(tp);
    return *out ? HS_OK : hs_err_nomem(err, strlen(ident));
}

static json_t *ns_json(const char *ns)
{
    json_t *a = json_array();
    const char *p = ns;
    while (a && *p) {
        const char *d = strchr(p, '.');
        size_t n = d ? (size_t)(d - p) : strlen(p);
        json_array_append_new(a, json_stringn(p, n));
        p += n + (d ? 1 : 0);
    }
    return a;
}

static json_t *ident_json(const char *ident)
{
    const char *dot = strrchr(ident, '.');
    if (!dot)
        return NULL;
    char *ns = hs_malloc((size_t)(dot - ident) + 1);
    if (!ns)
        return NULL;
    memcpy(ns, ident, (size_t)(dot - ident));
    ns[dot - ident] = 0;
    json_t *j = json_pack("{s:o, s:s}", "namespace", ns_json(ns), "name", dot + 1);
    hs_free(ns);
    return j;
}

/* A namespace array ["a","b"] -> "a.b" (hs_malloc'ed). */
static char *ns_dotted(json_t *a)
{
    hs_buf b = { 0 };
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if ((i && hs_buf_append_byte(&b, '.') != HS_OK) ||
            hs_buf_puts(&b, json_string_value(e) ? json_string_value(e) : "") != HS_OK) {
            hs_buf_free(&b);
            return NULL;
        }
    }
    char *s = hs_strdup(hs_buf_cstr(&b));
    hs_buf_free(&b);
    return s;
}

/* ---- the metadata cache ------------------------------------------------------------------------- */

static void cache_set(rest_catalog *rc, const char *ident, const char *loc, json_t *doc)
{
    hs_free(rc->cache_ident);
    hs_free(rc->cache_loc);
    json_decref(rc->cache_doc);
    rc->cache_ident = ident ? hs_strdup(ident) : NULL;
    rc->cache_loc = loc ? hs_strdup(loc) : NULL;
    rc->cache_doc = doc ? json_incref(doc) : NULL;
    if (!rc->cache_ident || !rc->cache_loc || !rc->cache_doc) {
        hs_free(rc->cache_ident);
        hs_free(rc->cache_loc);
        json_decref(rc->cache_doc);
        rc->cache_ident = rc->cache_loc = NULL;
        rc->cache_doc = NULL;
    }
}

/* ---- storage settings the catalog vends ------------------------------------------------------- */

static bool io_key(const char *k)
{
    return strncmp(k, "s3.", 3) == 0 || strcmp(k, "client.region") == 0;
}

/* Sets the io scope of location from base (may be NULL) overlaid with over
 * (may be NULL): the FileIO keys of both; refresher (may be NULL) fetches
 * them again. */
static hs_status scope_set(const char *location, json_t *base, json_t *over,
                           hs_io_refresher *refresher, hs_error *err)
{
    json_t *m = json_is_object(base) ? json_deep_copy(base) : json_object();
    if (!m)
        return hs_err_nomem(err, 256);
    const char *k;
    json_t *v;
    json_object_foreach(over, k, v) {
        if (io_key(k) && json_is_string(v))
            json_object_set(m, k, v);
    }
    size_t n = json_object_size(m), i = 0;
    const char **keys = hs_calloc(n + 1, sizeof *keys), **vals = hs_calloc(n + 1, sizeof *vals);
    hs_status st = keys && vals ? HS_OK : hs_err_nomem(err, n * 16);
    if (st == HS_OK) {
        json_object_foreach(m, k, v) {
            keys[i] = k;
            vals[i++] = json_string_value(v) ? json_string_value(v) : "";
        }
        if (n)
            st = hs_io_set_scope_ex(location, keys, vals, n, refresher, err);
    }
    hs_free(keys);
    hs_free(vals);
    json_decref(m);
    return st;
}

/* The storage-credentials entry whose prefix is the longest prefix of loc
 * (NULL when none). */
static json_t *cred_for(json_t *creds, const char *loc)
{
    json_t *best = NULL, *e;
    size_t best_len = 0, i;
    json_array_foreach(creds, i, e) {
        const char *p = json_string_value(json_object_get(e, "prefix"));
        size_t n = p ? strlen(p) : 0;
        while (n > 0 && p[n - 1] == '/')
            n--;
        if (!p || strncmp(loc, p, n) != 0 || (loc[n] && loc[n] != '/') || (best && n < best_len))
            continue;
        best = e;
        best_len = n;
    }
    return best;
}

static bool truthy(const char *v)
{
    return v && (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* A FileIO property of a LoadTableResult r: its "config" over the catalog's. */
static const char *io_prop(rest_catalog *rc, json_t *r, const char *k)
{
    const char *v = json_string_value(json_object_get(json_object_get(r, "config"), k));
    return v ? v : json_string_value(json_object_get(rc->io, k));
}

/* Whether r's files are signed by the catalog (s3.remote-signing-enabled),
 * in its config or any of its storage credentials. */
static bool remote_signing(rest_catalog *rc, json_t *r)
{
    json_t *e;
    size_t i;
    if (truthy(io_prop(rc, r, "s3.remote-signing-enabled")))
        return true;
    json_array_foreach(json_object_get(r, "storage-credentials"), i, e) {
        if (truthy(json_string_value(json_object_get(json_object_get(e, "config"),
                                                     "s3.remote-signing-enabled"))))
            return true;
    }
    return false;
}

/* Whether a LoadTableResult r vends keys (so they may need refreshing). */
static bool vends_keys(rest_catalog *rc, json_t *r)
{
    json_t *e;
    size_t i;
    if (remote_signing(rc, r))
        return true;   /* the refresher carries the signer */
    if (json_object_get(rc->io, "s3.access-key-id") || json_object_get(rc->io, "s3.session-token"))
        return true;
    json_t *cfg = json_object_get(r, "config");
    if (json_object_get(cfg, "s3.access-key-id") || json_object_get(cfg, "s3.session-token"))
        return true;
    json_array_foreach(json_object_get(r, "storage-credentials"), i, e) {
        json_t *c = json_object_get(e, "config");
        if (json_object_get(c, "s3.access-key-id") || json_object_get(c, "s3.session-token"))
            return true;
    }
    return false;
}

static hs_status apply_io_with(rest_catalog *rc, json_t *r, hs_io_refresher *refresher,
                               hs_error *err);
static hs_io_refresher *refresher_new(rest_catalog *rc, const char *ident, json_t *r);

/* The settings of a LoadTableResult r (a load, create, commit or register
 * answer of table ident) for the table's files: the catalog's FileIO
 * properties overlaid with r's "config", for the table location (and the
 * metadata file's directory when it lies elsewhere), then each
 * "storage-credentials" entry for its prefix; a credential whose prefix
 * covers the location wins over "config" for it.  Vended keys get a
 * refresher. */
static hs_status apply_io(rest_catalog *rc, json_t *r, const char *ident, hs_error *err)
{
    hs_io_refresher *ref = NULL;
    if (ident && vends_keys(rc, r) && !(ref = refresher_new(rc, ident, r)))
        return hs_err_nomem(err, 256);
    hs_status st = apply_io_with(rc, r, ref, err);
    hs_io_refresher_release(ref);   /* the scopes hold their own references */
    return st;
}

static hs_status apply_io_with(rest_catalog *rc, json_t *r, hs_io_refresher *refresher,
                               hs_error *err)
{
    json_t *cfg = json_object_get(r, "config");
    json_t *creds = json_object_get(r, "storage-credentials");
    const char *loc = json_string_value(json_object_get(json_object_get(r, "metadata"),
                                                        "location"));
    const char *mloc = json_string_value(json_object_get(r, "metadata-location"));
    json_t *base = json_is_object(rc->io) ? json_deep_copy(rc->io) : json_object();
    if (!base)
        return hs_err_nomem(err, 256);
    const char *k;
    json_t *v;
    json_object_foreach(cfg, k, v) {
        if (io_key(k) && json_is_string(v))
            json_object_set(base, k, v);
    }
    hs_status st = HS_OK;
    if (loc)
        st = scope_set(loc, base, json_object_get(cred_for(creds, loc), "config"), refresher,
                       err);
    if (st == HS_OK && mloc && (!loc || strncmp(mloc, loc, strlen(loc)) != 0)) {
        const char *slash = strrchr(mloc, '/');
        char *dir = slash ? hs_strndup(mloc, (size_t)(slash - mloc)) : NULL;
        st = dir ? scope_set(dir, base, json_object_get(cred_for(creds, dir), "config"),
                             refresher, err) : HS_OK;
        hs_free(dir);
    }
    json_decref(base);
    size_t i;
    json_t *e;
    json_array_foreach(creds, i, e) {
        const char *prefix = json_string_value(json_object_get(e, "prefix"));
        if (st == HS_OK && prefix)
            st = scope_set(prefix, rc->io, json_object_get(e, "config"), refresher, err);
    }
    return st;
}

/* ---- refreshing vended keys ---------------------------------------------------------------------- */

static void r_free(cat_catalog *c);

/* A refresher's state: its own connection (a copy of the catalog handle's
 * settings; curl made on first use), the table, and the last answer's
 * table-level parts (its location, metadata location and "config"), which
 * a credentials-endpoint answer (storage-credentials only) is laid over. */
typedef struct rest_vend {
    rest_catalog *conn;
    char *ident;
    char *signer_url;   /* the S3 signer endpoint (remote signing) or NULL */
    json_t *last;   /* {"metadata": {"location"}, "metadata-location", "config"} */
} rest_vend;

static void vend_free(void *arg)
{
    rest_vend *v = arg;
    if (!v)
        return;
    if (v->conn)
        r_free(&v->conn->base);
    hs_free(v->ident);
    hs_free(v->signer_url);
    json_decref(v->last);
    hs_free(v);
}

static struct curl_slist *slist_copy(const struct curl_slist *l, bool *ok)
{
    struct curl_slist *out = NULL, *t;
    for (; l; l = l->next) {
        if (!(t = curl_slist_append(out, l->data))) {
            curl_slist_free_all(out);
            *ok = false;
            return NULL;
        }
        out = t;
    }
    return out;
}

/* A request to GET the credentials or the table: LoadTableResult-like r. */
static hs_status vend_fetch(rest_vend *v, json_t **r, hs_error *err)
{
    rest_catalog *rc = v->conn;
    char *path = NULL;
    HS_TRY(table_path(rc, v->ident, &path, err));
    hs_status st = HS_UNSUPPORTED;
    if (rc->creds_endpoint) {
        char *cp = cat_sprintf("%s/credentials", path);
        json_t *c = NULL;
        hs_error e2 = { 0 };
        st = cp ? call(rc, "GET", cp, NULL, v->ident, &c, NULL, &e2) : HS_NOMEM;
        hs_free(cp);
        if (st == HS_OK && json_is_array(json_object_get(c, "storage-credentials"))) {
            /* the table-level parts of the last answer + the new credentials */
            *r = json_deep_copy(v->last);
            if (!*r || json_object_set(*r, "storage-credentials",
                                       json_object_get(c, "storage-credentials")) != 0)
                st = HS_NOMEM;
            else
                /* keys vended only in "config" before: the credentials
                 * endpoint's entry for the table replaces them */
                st = HS_OK;
        } else if (st == HS_OK) {
            st = HS_IO;
        }
        json_decref(c);
        if (st != HS_OK) {
            json_decref(*r);
            *r = NULL;
        }
    }
    if (st != HS_OK)   /* no credentials endpoint (or it failed): load the table */
        st = call(rc, "GET", path, NULL, v->ident, r, NULL, err);
    hs_free(path);
    return st;
}

/* The table-level parts of a LoadTableResult (new reference or NULL). */
static json_t *vend_last(json_t *r)
{
    return json_pack("{s:{s:O?}, s:O?, s:O?}", "metadata", "location",
                     json_object_get(json_object_get(r, "metadata"), "location"),
                     "metadata-location", json_object_get(r, "metadata-location"),
                     "config", json_object_get(r, "config"));
}

static hs_status vend_refresh(hs_io_refresher *self, void *arg, hs_error *err)
{
    rest_vend *v = arg;
    json_t *r = NULL;
    HS_TRY(vend_fetch(v, &r, err));
    hs_status st = apply_io_with(v->conn, r, self, err);
    if (st == HS_OK) {
        json_t *last = vend_last(r);
        if (last) {
            json_decref(v->last);
            v->last = last;
        }
    }
    json_decref(r);
    return st;
}

/* Remote signing (io.h's hs_io_sign_fn): POST the S3SignRequest to the
 * signer endpoint with the catalog's token (kept fresh as for the catalog's
 * own requests); any answer but 200 is an error naming the signer's. */
static hs_status vend_sign(void *arg, const char *request_json, hs_buf *response, bool *cacheable,
                           hs_error *err)
{
    rest_vend *v = arg;
    long status = 0;
    *cacheable = false;
    HS_TRY(http(v->conn, "POST", v->signer_url, request_json, false, true, &status, response,
                err));
    if (status < 200 || status > 299)
        return http_error(status, response, "S3 signer", err);
    *cacheable = v->conn->resp_private;
    return HS_OK;
}

/* The signer endpoint: s3.signer.uri (default: the catalog's uri) joined
 * with s3.signer.endpoint (default v1/aws/s3/sign; an absolute URL as is),
 * as Java's RESTUtil.resolveEndpoint does. */
static char *signer_url(rest_catalog *rc, json_t *r)
{
    const char *base = io_prop(rc, r, "s3.signer.uri");
    const char *ep = io_prop(rc, r, "s3.signer.endpoint");
    if (!ep || !*ep)
        ep = "v1/aws/s3/sign";
    if (strncmp(ep, "http://", 7) == 0 || strncmp(ep, "https://", 8) == 0)
        return hs_strdup(ep);
    if (!base || !*base)
        base = rc->uri;
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    while (*ep == '/')
        ep++;
    return cat_sprintf("%.*s/%s", (int)bl, base, ep);
}

static hs_io_refresher *refresher_new(rest_catalog *rc, const char *ident, json_t *r)
{
    rest_vend *v = hs_calloc(1, sizeof *v);
    rest_catalog *c = hs_calloc(1, sizeof *c);
    if (!v || !c) {
        hs_free(v);
        hs_free(c);
        return NULL;
    }
    v->conn = c;
    c->base.vt = rc->base.vt;
    c->base.kind = CAT_REST;
    bool ok = true;
    c->uri = hs_strdup(rc->uri);
    c->prefix = rc->prefix ? hs_strdup(rc->prefix) : NULL;
    c->auth = rc->auth ? hs_strdup(rc->auth) : NULL;
    c->credential = rc->credential ? hs_strdup(rc->credential) : NULL;
    c->scope = rc->scope ? hs_strdup(rc->scope) : NULL;
    c->token_uri = rc->token_uri ? hs_strdup(rc->token_uri) : NULL;
    c->token_at_ms = rc->token_at_ms;
    c->token_expires_ms = rc->token_expires_ms;
    c->warehouse = rc->warehouse ? hs_strdup(rc->warehouse) : NULL;
    c->ns_sep = rc->ns_sep ? hs_strdup(rc->ns_sep) : NULL;
    c->io = rc->io ? json_deep_copy(rc->io) : json_object();
    c->headers = slist_copy(rc->headers, &ok);
    c->page_size = rc->page_size;
    c->creds_endpoint = rc->creds_endpoint;
    v->ident = hs_strdup(ident);
    v->last = vend_last(r);
    bool sign = remote_signing(rc, r);
    if (sign && !(v->signer_url = signer_url(rc, r)))
        ok = false;
    if (!ok || !c->uri || (rc->prefix && !c->prefix) || (rc->auth && !c->auth) ||
        (rc->credential && !c->credential) || (rc->scope && !c->scope) ||
        (rc->token_uri && !c->token_uri) ||
        (rc->warehouse && !c->warehouse) || (rc->ns_sep && !c->ns_sep) || !c->io || !v->ident ||
        !v->last) {
        vend_free(v);
        return NULL;
    }
    hs_io_refresher *ref = hs_io_refresher_new(vend_refresh, v, vend_free);
    if (ref && sign)
        hs_io_refresher_set_signer(ref, vend_sign);
    return ref;
}

/* GET the table: its metadata document and location. */
static hs_status load_table(rest_catalog *rc, const char *ident, json_t **doc, char **loc,
                            hs_error *err)
{
    *doc = NULL;
    *loc = NULL;
    char *path = NULL;
    HS_TRY(table_path(rc, ident, &path, err));
    json_t *r = NULL;
    hs_status st = call(rc, "GET", path, NULL, ident, &r, NULL, err);
    hs_free(path);
    if (st != HS_OK)
        return st;
    json_t *m = json_object_get(r, "metadata");
    const char *l = json_string_value(json_object_get(r, "metadata-location"));
    if (!json_is_object(m) || !l) {
        json_decref(r);
        return hs_err_set(err, HS_IO, "REST catalog: %s: LoadTableResult without metadata or "
                          "metadata-location", ident);
    }
    st = apply_io(rc, r, ident, err);
    if (st != HS_OK) {
        json_decref(r);
        return st;
    }
    *doc = json_incref(m);
    *loc = hs_strdup(l);
    json_decref(r);
    if (!*loc) {
        json_decref(*doc);
        *doc = NULL;
        return hs_err_nomem(err, strlen(l));
    }
    cache_set(rc, ident, *loc, *doc);
    return HS_OK;
}

/* ---- metadata diff -> requirements + updates --------------------------------------------------------- */

static json_int_t jint(json_t *o, const char *k, json_int_t d)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : d;
}

static json_t *by_id(json_t *a, const char *key, json_int_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (jint(e, key, INT64_MIN) == id)
            return e;
    }
    return NULL;
}

#define PUSH(arr, j) json_array_append_new((arr), (j))

/* Adds the elements of new[list] whose id is not in base[list] (add_action,
 * body key), then the current-id change (set_action; -1 when the current one
 * was added now). */
static void diff_versioned(json_t *base, json_t *nw, json_t *ups, const char *list,
                           const char *idkey, const char *add_action, const char *body_key,
                           const char *cur_key, const char *set_action, const char *set_key)
{
    json_t *ba = json_object_get(base, list), *na = json_object_get(nw, list);
    json_int_t cur = jint(nw, cur_key, INT64_MIN);
    bool cur_added = false;
    size_t i;
    json_t *e;
    json_array_foreach(na, i, e) {
        json_int_t id = jint(e, idkey, INT64_MIN);
        if (base && by_id(ba, idkey, id))
            continue;
        json_t *u = json_pack("{s:s, s:O}", "action", add_action, body_key, e);
        if (strcmp(list, "schemas") == 0)
            json_object_set_new(u, "last-column-id", json_integer(jint(nw, "last-column-id", 0)));
        PUSH(ups, u);
        if (id == cur)
            cur_added = true;
    }
    if (cur != INT64_MIN && (!base || jint(base, cur_key, INT64_MIN) != cur || cur_added))
        PUSH(ups, json_pack("{s:s, s:I}", "action", set_action, set_key,
                            cur_added ? (json_int_t)-1 : cur));
}

static void diff_stats(json_t *base, json_t *nw, json_t *ups, const char *list,
                       const char *set_action, const char *rm_action)
{
    json_t *ba = json_object_get(base, list), *na = json_object_get(nw, list);
    size_t i;
    json_t *e;
    json_array_foreach(na, i, e) {
        json_t *old = by_id(ba, "snapshot-id", jint(e, "snapshot-id", INT64_MIN));
        if (!old || !json_equal(old, e))
            PUSH(ups, json_pack("{s:s, s:I, s:O}", "action", set_action, "snapshot-id",
                                jint(e, "snapshot-id", 0), list, e));
    }
    json_array_foreach(ba, i, e) {
        if (!by_id(na, "snapshot-id", jint(e, "snapshot-id", INT64_MIN)))
            PUSH(ups, json_pack("{s:s, s:I}", "action", rm_action, "snapshot-id",
                                jint(e, "snapshot-id", 0)));
    }
}

/* The CommitTableRequest turning base (NULL = create) into nw. */
static json_t *commit_request(const char *ident, json_t *base, json_t *nw)
{
    json_t *reqs = json_array(), *ups = json_array();
    if (!base) {
        PUSH(reqs, json_pack("{s:s}", "type", "assert-create"));
        if (json_object_get(nw, "table-uuid"))
            PUSH(ups, json_pack("{s:s, s:O}", "action", "assign-uuid", "uuid",
                                json_object_get(nw, "table-uuid")));
        PUSH(ups, json_pack("{s:s, s:I}", "action", "upgrade-format-version", "format-version",
                            jint(nw, "format-version", 2)));
    } else {
        if (json_object_get(base, "table-uuid"))
            PUSH(reqs, json_pack("{s:s, s:O}", "type", "assert-table-uuid", "uuid",
                                 json_object_get(base, "table-uuid")));
        /* main's snapshot: every commit is a compare-and-swap on the branch */
        json_t *bm = json_object_get(json_object_get(base, "refs"), "main");
        json_int_t bmain = bm ? jint(bm, "snapshot-id", -1) : jint(base, "current-snapshot-id", -1);
        PUSH(reqs, bmain >= 0 ? json_pack("{s:s, s:s, s:I}", "type", "assert-ref-snapshot-id",
                                          "ref", "main", "snapshot-id", bmain)
                              : json_pack("{s:s, s:s, s:n}", "type", "assert-ref-snapshot-id",
                                          "ref", "main", "snapshot-id"));
        if (jint(nw, "format-version", 2) > jint(base, "format-version", 2))
            PUSH(ups, json_pack("{s:s, s:I}", "action", "upgrade-format-version",
                                "format-version", jint(nw, "format-version", 2)));
        const struct { const char *req, *reqkey, *basekey; } ids[] = {
            { "assert-current-schema-id", "current-schema-id", "current-schema-id" },
            { "assert-last-assigned-field-id", "last-assigned-field-id", "last-column-id" },
            { "assert-default-spec-id", "default-spec-id", "default-spec-id" },
            { "assert-last-assigned-partition-id", "last-assigned-partition-id",
              "last-partition-id" },
            { "assert-default-sort-order-id", "default-sort-order-id", "default-sort-order-id" },
        };
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
            json_t *bv = json_object_get(base, ids[i].basekey);
            if (json_is_integer(bv) &&
                !json_equal(bv, json_object_get(nw, ids[i].basekey)))
                PUSH(reqs, json_pack("{s:s, s:O}", "type", ids[i].req, ids[i].reqkey, bv));
        }
    }
    diff_versioned(base, nw, ups, "schemas", "schema-id", "add-schema", "schema",
                   "current-schema-id", "set-current-schema", "schema-id");
    diff_versioned(base, nw, ups, "partition-specs", "spec-id", "add-spec", "spec",
                   "default-spec-id", "set-default-spec", "spec-id");
    diff_versioned(base, nw, ups, "sort-orders", "order-id", "add-sort-order", "sort-order",
                   "default-sort-order-id", "set-default-sort-order", "sort-order-id");
    json_t *loc = json_object_get(nw, "location");
    if (json_is_string(loc) && (!base || !json_equal(loc, json_object_get(base, "location"))))
        PUSH(ups, json_pack("{s:s, s:O}", "action", "set-location", "location", loc));
    /* properties */
    json_t *bp = json_object_get(base, "properties"), *np = json_object_get(nw, "properties");
    json_t *set = json_object(), *rm = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(np, k, v) {
        if (!json_equal(json_object_get(bp, k), v))
            json_object_set(set, k, v);
    }
    json_object_foreach(bp, k, v) {
        if (!json_object_get(np, k))
            json_array_append_new(rm, json_string(k));
    }
    if (json_object_size(set))
        PUSH(ups, json_pack("{s:s, s:O}", "action", "set-properties", "updates", set));
    if (json_array_size(rm))
        PUSH(ups, json_pack("{s:s, s:O}", "action", "remove-properties", "removals", rm));
    json_decref(set);
    json_decref(rm);
    /* snapshots added, refs set or removed, snapshots removed */
    json_t *bs = json_object_get(base, "snapshots"), *ns = json_object_get(nw, "snapshots");
    size_t i;
    json_t *e;
    json_array_foreach(ns, i, e) {
        if (!by_id(bs, "snapshot-id", jint(e, "snapshot-id", INT64_MIN)))
            PUSH(ups, json_pack("{s:s, s:O}", "action", "add-snapshot", "snapshot", e));
    }
    json_t *br = json_object_get(base, "refs"), *nr = json_object_get(nw, "refs");
    json_object_foreach(br, k, v) {
        if (!json_object_get(nr, k))
            PUSH(ups, json_pack("{s:s, s:s}", "action", "remove-snapshot-ref", "ref-name", k));
    }
    json_object_foreach(nr, k, v) {
        if (json_equal(json_object_get(br, k), v))
            continue;
        json_t *u = json_deep_copy(v);
        json_object_set_new(u, "action", json_string("set-snapshot-ref"));
        json_object_set_new(u, "ref-name", json_string(k));
        PUSH(ups, u);
        json_t *old = json_object_get(br, k);
        if (base && strcmp(k, "main") != 0)
            PUSH(reqs, old ? json_pack("{s:s, s:s, s:I}", "type", "assert-ref-snapshot-id",
                                       "ref", k, "snapshot-id", jint(old, "snapshot-id", -1))
                           : json_pack("{s:s, s:s, s:n}", "type", "assert-ref-snapshot-id",
                                       "ref", k, "snapshot-id"));
    }
    json_t *gone = json_array();
    json_array_foreach(bs, i, e) {
        if (!by_id(ns, "snapshot-id", jint(e, "snapshot-id", INT64_MIN)))
            json_array_append_new(gone, json_integer(jint(e, "snapshot-id", 0)));
    }
    if (json_array_size(gone))
        PUSH(ups, json_pack("{s:s, s:O}", "action", "remove-snapshots", "snapshot-ids", gone));
    json_decref(gone);
    diff_stats(base, nw, ups, "statistics", "set-statistics", "remove-statistics");
    diff_stats(base, nw, ups, "partition-statistics", "set-partition-statistics",
               "remove-partition-statistics");
    return json_pack("{s:o, s:o, s:o}", "identifier", ident_json(ident), "requirements", reqs,
                     "updates", ups);
}

static hs_status post_commit(rest_catalog *rc, const char *ident, json_t *base, const char *json,
                             size_t len, char **new_location, hs_error *err)
{
    json_error_t je;
    json_t *nw = hs_json_loadb(json, len, 0, &je);
    if (!json_is_object(nw)) {
        json_decref(nw);
        return hs_err_set(err, HS_INVALID, "%s: new metadata is not a JSON object", ident);
    }
    json_t *req = commit_request(ident, base, nw);
    json_decref(nw);
    if (!req || !json_object_get(req, "identifier"))
        return hs_err_nomem(err, len);
    char *path = NULL;
    hs_status st = table_path(rc, ident, &path, err);
    json_t *r = NULL;
    if (st == HS_OK)
        st = call(rc, "POST", path, req, ident, &r, NULL, err);
    hs_free(path);
    json_decref(req);
    if (st == HS_NOT_FOUND && !base)   /* create: the namespace is missing */
        return st;
    const char *loc = st == HS_OK ? json_string_value(json_object_get(r, "metadata-location"))
                                  : NULL;
    json_t *m = json_object_get(r, "metadata");
    if (st == HS_OK && (!loc || !json_is_object(m)))
        st = hs_err_set(err, HS_IO, "REST catalog: %s: commit response without "
                        "metadata-location or metadata", ident);
    if (st == HS_OK)
        st = apply_io(rc, r, ident, err);
    if (st == HS_OK) {
        cache_set(rc, ident, loc, m);
        if (new_location && !(*new_location = hs_strdup(loc)))
            st = hs_err_nomem(err, strlen(loc));
    }
    json_decref(r);
    return st;
}

/* ---- vtable -------------------------------------------------------------------------------------- */

static hs_status r_default_location(cat_catalog *c, const char *ident, char **location,
                                    hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    const char *dot = strrchr(ident, '.');
    if (!dot)
        return hs_err_set(err, HS_INVALID, "%s: a REST catalog table is namespace.table", ident);
    char *ns = hs_malloc((size_t)(dot - ident) + 1);
    if (!ns)
        return hs_err_nomem(err, strlen(ident));
    memcpy(ns, ident, (size_t)(dot - ident));
    ns[dot - ident] = 0;
    /* the server decides: a staged create answers with the location it would
     * give (nothing is created); servers without staged creates: the
     * namespace's "location" property, else <warehouse>/<ns levels>.db/<table> */
    char *np = ns_path(rc, ns);
    char *path = np ? cat_sprintf("namespaces/%s/tables", np) : NULL;
    hs_free(np);
    json_t *req = json_pack("{s:s, s:{s:s, s:i, s:[]}, s:b}", "name", dot + 1, "schema", "type",
                            "struct", "schema-id", 0, "fields", "stage-create", 1);
    json_t *r = NULL;
    hs_error e2 = { 0 };
    hs_status sst = (path && req) ? call(rc, "POST", path, req, ident, &r, NULL, &e2) : HS_NOMEM;
    hs_free(path);
    json_decref(req);
    const char *sloc = json_string_value(json_object_get(json_object_get(r, "metadata"),
                                                         "location"));
    if (sst == HS_OK && sloc) {
        /* the staged table's settings cover the files about to be written */
        /* a refresher too: the table exists by the time its keys come due */
        hs_status ist = apply_io(rc, r, ident, err);
        if (ist != HS_OK) {
            json_decref(r);
            hs_free(ns);
            return ist;
        }
        *location = hs_strdup(sloc);
        json_decref(r);
        hs_free(ns);
        return *location ? HS_OK : hs_err_nomem(err, strlen(sloc));
    }
    json_decref(r);
    if (sst == HS_NOT_FOUND || sst == HS_CONFLICT) {   /* no such namespace; table exists */
        hs_free(ns);
        if (err)
            *err = e2;
        return sst;
    }
    char **k = NULL, **v = NULL;
    size_t n = 0;
    hs_status st = cat_namespace_properties(c, ns, &k, &v, &n, err);
    const char *nsloc = NULL;
    for (size_t i = 0; st == HS_OK && i < n; i++)
        if (strcmp(k[i], "location") == 0)
            nsloc = v[i];
    if (st == HS_OK) {
        if (nsloc) {
            *location = cat_path_join(nsloc, dot + 1);
        } else if (rc->warehouse) {
            char *nsdir = hs_strdup(ns);
            for (char *p = nsdir; p && *p; p++)
                if (*p == '.')
                    *p = '/';
            *location = nsdir ? cat_sprintf("%s/%s.db/%s", rc->warehouse, nsdir, dot + 1) : NULL;
            hs_free(nsdir);
        } else {
            st = hs_err_set(err, HS_INVALID, "%s: the REST catalog gave no warehouse and the "
                            "namespace has no location: pass a table location", ident);
        }
        if (st == HS_OK && !*location)
            st = hs_err_nomem(err, 256);
    }
    cat_strv_free(k, n);
    cat_strv_free(v, n);
    hs_free(ns);
    return st;
}

static hs_status r_load(cat_catalog *c, const char *ident, hs_buf *json, char **mloc,
                        hs_error *err)
{
    json_t *doc = NULL;
    char *loc = NULL;
    HS_TRY(load_table((rest_catalog *)c, ident, &doc, &loc, err));
    char *s = hs_json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    hs_buf_reset(json);
    hs_status st = s ? hs_buf_puts(json, s) : HS_NOMEM;
    free(s);
    if (st != HS_OK) {
        hs_free(loc);
        return hs_err_nomem(err, 256);
    }
    *mloc = loc;
    return HS_OK;
}

static hs_status r_current_location(cat_catalog *c, const char *ident, char **mloc,
                                    hs_error *err)
{
    json_t *doc = NULL;
    HS_TRY(load_table((rest_catalog *)c, ident, &doc, mloc, err));
    json_decref(doc);
    return HS_OK;
}

static hs_status r_create(cat_catalog *c, const char *ident, const char *json, size_t len,
                          char **mloc, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    hs_status st = post_commit(rc, ident, NULL, json, len, mloc, err);
    if (st == HS_CONFLICT) {
        hs_err_clear(err);
        return hs_err_set(err, HS_CONFLICT, "%s: table already exists", ident);
    }
    return st;
}

static hs_status r_commit(cat_catalog *c, const char *ident, const char *base, const char *json,
                          size_t len, char **new_location, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    json_t *bdoc = NULL;
    if (rc->cache_ident && strcmp(rc->cache_ident, ident) == 0 && rc->cache_loc &&
        strcmp(rc->cache_loc, base) == 0) {
        bdoc = json_incref(rc->cache_doc);
    } else {
        char *loc = NULL;
        HS_TRY(load_table(rc, ident, &bdoc, &loc, err));
        bool moved = strcmp(loc, base) != 0;
        hs_free(loc);
        if (moved) {
            json_decref(bdoc);
            return hs_err_set(err, HS_CONFLICT, "%s: the table moved on since %s was loaded",
                              ident, base);
        }
    }
    hs_status st = post_commit(rc, ident, bdoc, json, len, new_location, err);
    json_decref(bdoc);
    return st;
}

static hs_status r_drop(cat_catalog *c, const char *ident, bool purge, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    char *path = NULL;
    HS_TRY(table_path(rc, ident, &path, err));
    char *p2 = cat_sprintf("%s?purgeRequested=%s", path, purge ? "true" : "false");
    hs_free(path);
    if (!p2)
        return hs_err_nomem(err, 256);
    hs_status st = call(rc, "DELETE", p2, NULL, ident, NULL, NULL, err);
    hs_free(p2);
    if (st == HS_OK && rc->cache_ident && strcmp(rc->cache_ident, ident) == 0)
        cache_set(rc, NULL, NULL, NULL);
    return st;
}

static hs_status r_rename(cat_catalog *c, const char *from, const char *to, hs_error *err)
{
    json_t *b = json_pack("{s:o, s:o}", "source", ident_json(from), "destination",
                          ident_json(to));
    if (!b)
        return hs_err_set(err, HS_INVALID, "rename: identifiers are namespace.table");
    hs_status st = call((rest_catalog *)c, "POST", "tables/rename", b, from, NULL, NULL, err);
    json_decref(b);
    return st;
}

/* The names of a ListTablesResponse's "identifiers" (tables or views),
 * sorted; consumes r. */
static hs_status identifier_names(json_t *r, char ***out, size_t *n_out, hs_error *err)
{
    json_t *ids = json_object_get(r, "identifiers");
    size_t n = json_array_size(ids), i;
    char **names = hs_calloc(n + 1, sizeof *names);
    json_t *e;
    json_array_foreach(ids, i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (names && !(names[i] = hs_strdup(nm ? nm : ""))) {
            cat_strv_free(names, n);
            names = NULL;
        }
    }
    json_decref(r);
    if (!names)
        return hs_err_nomem(err, n * 16);
    cat_strv_sort(names, n);
    *out = names;
    *n_out = n;
    return HS_OK;
}

static hs_status r_list(cat_catalog *c, const char *ns, char ***out, size_t *n_out,
                        hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    if (!*ns)
        return hs_err_set(err, HS_INVALID, "listing tables of a REST catalog needs a namespace");
    char *np = ns_path(rc, ns);
    char *path = np ? cat_sprintf("namespaces/%s/tables", np) : NULL;
    hs_free(np);
    if (!path)
        return hs_err_nomem(err, strlen(ns));
    json_t *r = NULL;
    hs_status st = list_pages(rc, path, "identifiers", ns, &r, NULL, err);
    hs_free(path);
    if (st != HS_OK)
        return st;
    return identifier_names(r, out, n_out, err);
}

static hs_status r_exists(cat_catalog *c, const char *ident, bool *exists, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    char *path = NULL;
    HS_TRY(table_path(rc, ident, &path, err));
    long status = 0;
    hs_status st = call(rc, "HEAD", path, NULL, ident, NULL, &status, err);
    hs_free(path);
    if (st == HS_NOT_FOUND) {
        hs_err_clear(err);
        *exists = false;
        return HS_OK;
    }
    *exists = st == HS_OK;
    return st;
}

static hs_status r_ns_create(cat_catalog *c, const char *ns, const char *const *keys,
                             const char *const *values, size_t n, hs_error *err)
{
    json_t *props = json_object();
    for (size_t i = 0; props && i < n; i++)
        json_object_set_new(props, keys[i], json_string(values[i]));
    json_t *b = json_pack("{s:o, s:o}", "namespace", ns_json(ns), "properties", props);
    if (!b)
        return hs_err_nomem(err, 256);
    hs_status st = call((rest_catalog *)c, "POST", "namespaces", b, ns, NULL, NULL, err);
    json_decref(b);
    return st;
}

static hs_status r_ns_list(cat_catalog *c, const char *parent, char ***out, size_t *n_out,
                           hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    char *path;
    if (*parent) {
        char *np = ns_path(rc, parent);
        path = np ? cat_sprintf("namespaces?parent=%s", np) : NULL;
        hs_free(np);
    } else {
        path = hs_strdup("namespaces");
    }
    if (!path)
        return hs_err_nomem(err, 256);
    json_t *r = NULL;
    hs_status st = list_pages(rc, path, "namespaces", "list namespaces", &r, NULL, err);
    hs_free(path);
    if (st != HS_OK)
        return st;
    json_t *a = json_object_get(r, "namespaces");
    size_t n = json_array_size(a), i;
    char **names = hs_calloc(n + 1, sizeof *names);
    json_t *e;
    json_array_foreach(a, i, e) {
        if (names && !(names[i] = ns_dotted(e))) {
            cat_strv_free(names, n);
            names = NULL;
        }
    }
    json_decref(r);
    if (!names)
        return hs_err_nomem(err, n * 16);
    cat_strv_sort(names, n);
    *out = names;
    *n_out = n;
    return HS_OK;
}

static hs_status r_ns_drop(cat_catalog *c, const char *ns, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    char *np = ns_path(rc, ns);
    char *path = np ? cat_sprintf("namespaces/%s", np) : NULL;
    hs_free(np);
    if (!path)
        return hs_err_nomem(err, 256);
    hs_status st = call(rc, "DELETE", path, NULL, ns, NULL, NULL, err);
    hs_free(path);
    if (st == HS_CONFLICT) {   /* NamespaceNotEmptyException: as the SQL catalog says it */
        hs_err_clear(err);
        st = hs_err_set(err, HS_INVALID, "namespace %s is not empty", ns);
    }
    return st;
}

static hs_status r_ns_properties(cat_catalog *c, const char *ns, char ***keys, char ***values,
                                 size_t *n_out, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    char *np = ns_path(rc, ns);
    char *path = np ? cat_sprintf("namespaces/%s", np) : NULL;
    hs_free(np);
    if (!path)
        return hs_err_nomem(err, 256);
    json_t *r = NULL;
    hs_status st = call(rc, "GET", path, NULL, ns, &r, NULL, err);
    hs_free(path);
    if (st != HS_OK)
        return st;
    json_t *p = json_object_get(r, "properties");
    size_t n = json_is_object(p) ? json_object_size(p) : 0, i = 0;
    char **k = hs_calloc(n + 1, sizeof *k), **v = hs_calloc(n + 1, sizeof *v);
    const char *key;
    json_t *val;
    bool ok = k && v;
    if (ok && n)
        json_object_foreach(p, key, val) {
            k[i] = hs_strdup(key);
            v[i] = hs_strdup(json_string_value(val) ? json_string_value(val) : "");
            ok = ok && k[i] && v[i];
            i++;
        }
    json_decref(r);
    if (!ok) {
        cat_strv_free(k, n);
        cat_strv_free(v, n);
        return hs_err_nomem(err, n * 16);
    }
    *keys = k;
    *values = v;
    *n_out = n;
    return HS_OK;
}

static hs_status r_ns_update(cat_catalog *c, const char *ns, const char *const *set_keys,
                             const char *const *set_values, size_t n_set,
                             const char *const *remove_keys, size_t n_remove, hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    json_t *up = json_object(), *rm = json_array();
    for (size_t i = 0; up && i < n_set; i++)
        json_object_set_new(up, set_keys[i], json_string(set_values[i]));
    for (size_t i = 0; rm && i < n_remove; i++)
        json_array_append_new(rm, json_string(remove_keys[i]));
    json_t *b = json_pack("{s:o, s:o}", "updates", up, "removals", rm);
    char *np = ns_path(rc, ns);
    char *path = np ? cat_sprintf("namespaces/%s/properties", np) : NULL;
    hs_free(np);
    hs_status st = (b && path) ? call(rc, "POST", path, b, ns, NULL, NULL, err)
                               : hs_err_nomem(err, 256);
    hs_free(path);
    json_decref(b);
    return st;
}

static hs_status r_register(cat_catalog *c, const char *ident, const char *mloc, bool overwrite,
                            hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    const char *dot = strrchr(ident, '.');
    if (!dot || dot == ident || !dot[1])
        return hs_err_set(err, HS_INVALID, "%s: a REST catalog table is namespace.table", ident);
    char *ns = hs_strndup(ident, (size_t)(dot - ident));
    char *np = ns ? ns_path(rc, ns) : NULL;
    char *path = np ? cat_sprintf("namespaces/%s/register", np) : NULL;
    json_t *b = json_pack("{s:s, s:s, s:b}", "name", dot + 1, "metadata-location", mloc,
                          "overwrite", overwrite);
    json_t *r = NULL;
    hs_status st = (path && b) ? call(rc, "POST", path, b, ident, &r, NULL, err)
                               : hs_err_nomem(err, 256);
    const char *loc = json_string_value(json_object_get(r, "metadata-location"));
    json_t *m = json_object_get(r, "metadata");
    if (st == HS_OK && loc && json_is_object(m)) {
        st = apply_io(rc, r, ident, err);
        if (st == HS_OK)
            cache_set(rc, ident, loc, m);
    }
    json_decref(r);
    json_decref(b);
    hs_free(path);
    hs_free(np);
    hs_free(ns);
    return st;
}

static hs_status r_list_views(cat_catalog *c, const char *ns, char ***out, size_t *n_out,
                              hs_error *err)
{
    rest_catalog *rc = (rest_catalog *)c;
    if (!*ns)
        return hs_err_set(err, HS_INVALID, "listing views of a REST catalog needs a namespace");
    char *np = ns_path(rc, ns);
    char *path = np ? cat_sprintf("namespaces/%s/views", np) : NULL;
    hs_free(np);
    if (!path)
        return hs_err_nomem(err, strlen(ns));
    json_t *r = NULL;
    long status = 0;
    hs_error e2 = { 0 };
    hs_status st = list_pages(rc, path, "identifiers", ns, &r, &status, &e2);
    hs_free(path);
    /* a server without views: no route (404 with no NoSuchNamespaceException,
     * 400 or 405 from routers that do not know it, 501 not implemented) */
    if (st != HS_OK && (status == 400 || status == 405 || status == 501 ||
                        (status == 404 && !strstr(e2.msg, "NoSuchNamespace")))) {
        st = HS_OK;
        json_decref(r);
        r = json_pack("{s:[]}", "identifiers");
    }
    if (st != HS_OK) {
        if (err)
            *err = e2;
        return st;
    }
    return identifier_names(r, out, n_out, err);
}

static void r_free(cat_catalog *c)
{
    rest_catalog *rc = (rest_catalog *)c;
    if (rc->curl)
        curl_easy_cleanup(rc->curl);
    cache_set(rc, NULL, NULL, NULL);
    hs_free(rc->uri);
    hs_free(rc->prefix);
    hs_free(rc->auth);
    hs_free(rc->credential);
    hs_free(rc->scope);
    hs_free(rc->token_uri);
    hs_free(rc->warehouse);
    hs_free(rc->ns_sep);
    json_decref(rc->io);
    curl_slist_free_all(rc->headers);
    hs_free(rc);
}

static const cat_vtbl rest_vtbl = {
    r_default_location, r_load, r_current_location, r_create, r_commit, r_drop, r_rename,
    r_list, r_exists, r_ns_create, r_ns_list, r_ns_drop, r_ns_properties, r_ns_update,
    r_register, r_list_views, r_free,
};

/* ---- opening: OAuth2 and the config endpoint ------------------------------------------------------ */

/* Client credentials -> rc->auth (replacing the old token) and its expiry
 * (the response's expires_in; none = never due). */
static hs_status fetch_token(rest_catalog *rc, hs_error *err)
{
    const char *credential = rc->credential;
    const char *colon = strchr(credential, ':');
    char *id = colon ? hs_malloc((size_t)(colon - credential) + 1) : hs_strdup(credential);
    if (!id)
        return hs_err_nomem(err, 64);
    if (colon) {
        memcpy(id, credential, (size_t)(colon - credential));
        id[colon - credential] = 0;
    }
    char *eid = esc(rc, id), *esec = esc(rc, colon ? colon + 1 : ""),
         *escope = esc(rc, rc->scope ? rc->scope : "catalog");
    hs_free(id);
    char *form = (eid && esec && escope)
                     ? cat_sprintf("grant_type=client_credentials&client_id=%s&client_secret=%s"
                                   "&scope=%s", eid, esec, escope)
                     : NULL;
    hs_free(eid);
    hs_free(esec);
    hs_free(escope);
    char *url = rc->token_uri ? hs_strdup(rc->token_uri)
                              : cat_sprintf("%s/v1/oauth/tokens", rc->uri);
    hs_buf resp = { 0 };
    long status = 0;
    int64_t at = wall_ms();
    hs_status st = (form && url)
                       ? http_once(rc, "POST", url, form, true, false, &status, &resp, err)
                       : hs_err_nomem(err, 256);
    if (st == HS_OK && (status < 200 || status > 299))
        st = http_error(status, &resp, "OAuth2 token request", err);
    json_error_t je;
    json_t *r = st == HS_OK ? hs_json_loadb((const char *)resp.data, resp.len, 0, &je) : NULL;
    const char *tok = json_string_value(json_object_get(r, "access_token"));
    json_t *ei = json_object_get(r, "expires_in");
    if (st == HS_OK && !tok)
        st = hs_err_set(err, HS_IO, "REST catalog: the token endpoint %s returned no "
                        "access_token", url);
    char *auth = st == HS_OK ? cat_sprintf("Authorization: Bearer %s", tok) : NULL;
    if (st == HS_OK && !auth)
        st = hs_err_nomem(err, 256);
    if (st == HS_OK) {
        hs_free(rc->auth);
        rc->auth = auth;
        rc->token_at_ms = at;
        /* expires_in: a number of seconds (some servers send it as a string) */
        double secs = json_is_number(ei) ? json_number_value(ei)
                      : json_is_string(ei) ? hs_strtod(json_string_value(ei), NULL) : 0;
        rc->token_expires_ms = secs > 0 && secs < 1e9 ? at + (int64_t)(secs * 1000) : 0;
    }
    json_decref(r);
    hs_buf_free(&resp);
    hs_free(form);
    hs_free(url);
    return st;
}

static const char *opt(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

hs_status cat_rest_open(const char *uri, const char *options_json, cat_catalog **out,
                        hs_error *err)
{
    *out = NULL;
    pthread_once(&g_curl_once, curl_init_once);
    json_error_t je;
    json_t *o = options_json && *options_json ? hs_json_loads(options_json, 0, &je) : json_object();
    if (!json_is_object(o)) {
        json_decref(o);
        return hs_err_set(err, HS_INVALID, "REST catalog options: not a JSON object");
    }
    rest_catalog *rc = hs_calloc(1, sizeof *rc);
    hs_status st = rc ? HS_OK : hs_err_nomem(err, sizeof *rc);
    if (st == HS_OK) {
        rc->base.vt = &rest_vtbl;
        rc->base.kind = CAT_REST;
        rc->curl = curl_easy_init();
        rc->uri = hs_strdup(uri);
        if (!rc->curl || !rc->uri)
            st = hs_err_nomem(err, strlen(uri));
    }
    if (st == HS_OK) {
        size_t n = strlen(rc->uri);
        while (n > 0 && rc->uri[n - 1] == '/')
            rc->uri[--n] = 0;
        if (n > 3 && strcmp(rc->uri + n - 3, "/v1") == 0)   /* accept ".../v1" too */
            rc->uri[n - 3] = 0;
        const char *hk;
        json_t *hv;
        json_object_foreach(o, hk, hv) {
            if (strncmp(hk, "header.", 7) != 0 || !hk[7] || !json_is_string(hv))
                continue;
            char *line = cat_sprintf("%s: %s", hk + 7, json_string_value(hv));
            struct curl_slist *nh = line ? curl_slist_append(rc->headers, line) : NULL;
            hs_free(line);
            if (!nh) {
                st = hs_err_nomem(err, 256);
                break;
            }
            rc->headers = nh;
        }
    }
    if (st == HS_OK) {
        if (opt(o, "token"))
            rc->auth = cat_sprintf("Authorization: Bearer %s", opt(o, "token"));
        else if (opt(o, "credential")) {
            rc->credential = hs_strdup(opt(o, "credential"));
            rc->scope = opt(o, "scope") ? hs_strdup(opt(o, "scope")) : NULL;
            rc->token_uri = opt(o, "oauth2-server-uri") ? hs_strdup(opt(o, "oauth2-server-uri"))
                                                        : NULL;
            st = !rc->credential || (opt(o, "scope") && !rc->scope) ||
                         (opt(o, "oauth2-server-uri") && !rc->token_uri)
                     ? hs_err_nomem(err, 256)
                     : fetch_token(rc, err);
        }
    }
    /* GET config: defaults < our options < overrides */
    json_t *cfg = NULL;
    if (st == HS_OK) {
        char *wh = opt(o, "warehouse") ? esc(rc, opt(o, "warehouse")) : NULL;
        char *path = wh ? cat_sprintf("%s/v1/config?warehouse=%s", rc->uri, wh)
                        : cat_sprintf("%s/v1/config", rc->uri);
        hs_free(wh);
        hs_buf resp = { 0 };
        long status = 0;
        st = path ? http(rc, "GET", path, NULL, false, true, &status, &resp, err)
                  : hs_err_nomem(err, 256);
        if (st == HS_OK && (status < 200 || status > 299))
            st = http_error(status, &resp, "GET config", err);
        if (st == HS_OK && !(cfg = hs_json_loadb((const char *)resp.data, resp.len, 0, &je)))
            st = hs_err_set(err, HS_IO, "REST catalog: %s: the config response is not JSON",
                            path);
        hs_buf_free(&resp);
        hs_free(path);
    }
    if (st == HS_OK) {
        json_t *merged = json_deep_copy(json_object_get(cfg, "defaults"));
        if (!json_is_object(merged)) {
            json_decref(merged);
            merged = json_object();
        }
        json_object_update(merged, o);
        if (json_is_object(json_object_get(cfg, "overrides")))
            json_object_update(merged, json_object_get(cfg, "overrides"));
        const char *u = opt(merged, "uri");
        if (u && strcmp(u, uri) != 0) {
            hs_free(rc->uri);
            rc->uri = hs_strdup(u);
            size_t n = rc->uri ? strlen(rc->uri) : 0;
            while (n > 0 && rc->uri[n - 1] == '/')
                rc->uri[--n] = 0;
        }
        const char *psz = opt(merged, "rest-page-size");
        if (psz) {
            char *end = NULL;
            rc->page_size = strtol(psz, &end, 10);
            if (!*psz || *end || rc->page_size <= 0)
                st = hs_err_set(err, HS_INVALID, "REST catalog option rest-page-size \"%s\": "
                                "not a positive integer", psz);
        }
        size_t ei;
        json_t *ev;
        json_array_foreach(json_object_get(cfg, "endpoints"), ei, ev) {
            const char *e = json_string_value(ev);
            size_t el = e ? strlen(e) : 0;
            if (e && strncmp(e, "GET ", 4) == 0 && el > 12 &&
                strcmp(e + el - 12, "/credentials") == 0)
                rc->creds_endpoint = true;
        }
        if (opt(merged, "prefix") && *opt(merged, "prefix"))
            rc->prefix = hs_strdup(opt(merged, "prefix"));
        /* "namespace-separator" (URL-encoded, e.g. "%2E"): levels joined by it */
        const char *sep = opt(merged, "namespace-separator");
        if (sep && *sep) {
            char *d = hs_strdup(sep);
            if (d && url_unescape_inplace(d) && *d)
                rc->ns_sep = esc(rc, d);
            hs_free(d);
        }
        if (opt(merged, "warehouse"))
            rc->warehouse = hs_strdup(cat_local_path(opt(merged, "warehouse")));
        rc->io = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(merged, k, v) {
            if (rc->io && io_key(k) && json_is_string(v))
                json_object_set(rc->io, k, v);
        }
        if (!rc->uri || !rc->io)
            st = hs_err_nomem(err, 256);
        if (st == HS_OK && rc->warehouse && json_object_size(rc->io))
            st = scope_set(rc->warehouse, rc->io, NULL, NULL, err);
        json_decref(merged);
    }
    json_decref(cfg);
    json_decref(o);
    if (st != HS_OK) {
        if (rc)
            r_free(&rc->base);
        return st;
    }
    *out = &rc->base;
    return HS_OK;
}
