/*
 * io/s3_sign.c - remote signing of S3 requests (Apache Iceberg's S3 signer
 * API, aws/src/main/resources/s3-signer-open-api.yaml), both ends:
 *
 *   client  a scope with s3.remote-signing-enabled=true (s3_scope.c) has
 *           its requests signed by the catalog: s3_http.c calls
 *           s3_remote_sign, which POSTs an S3SignRequest through the
 *           scope's refresher (catalog/rest.c sends it to the signer
 *           endpoint with the catalog's token) and lays the answer's
 *           headers over the request (the request's own headers win, as
 *           in Java's S3V4RestSignerClient) and sends it to the answer's uri;
 *   server  hs_s3_sign_remote answers an S3SignRequest with SigV4 headers
 *           made with this process's own keys (server/restcat.c's
 *           POST /v1/aws/s3/sign), after asking the caller whether every
 *           object the request touches may be touched.
 *
 *   S3SignRequest  {"region", "uri", "method", "headers": {name: [values]},
 *                   "properties"?: {..}, "body"?: "..." (DeleteObjects)}
 *   S3SignResponse {"uri", "headers": {name: [values]}} + HTTP header
 *                  Cache-Control: private (may be reused) | no-cache
 *
 * Caching (as Java's client): an answer marked Cache-Control: private is
 * kept for S3_SIGN_CACHE_S seconds, at most S3_SIGN_CACHE_N of them, keyed
 * by (method, region, uri); a request with the same key within that time is
 * not sent to the signer.  Our server marks GET and HEAD answers private
 * and signs no Range header, so one signature serves every range read of
 * an object for those seconds (SigV4 signatures stay valid 15 minutes).
 *
 * What the server signs: every header the client listed except the ones
 * that transports and SDKs add or change on the way (UNSIGNED below), plus
 * host (from the uri), x-amz-date (the client's when it sent one, else
 * now), x-amz-content-sha256 (the client's, else UNSIGNED-PAYLOAD) and
 * x-amz-security-token when the server's keys are temporary.  It answers
 * only those headers that it added (Authorization, X-Amz-Date, ...): some
 * clients (pyiceberg) append the answer's headers to their own, so an echo
 * would send a header twice.
 *
 * Which objects a request touches (the server's check): path-style
 * <endpoint>/<bucket>/<key> or virtual-hosted <bucket>.<host>/<key>, as the
 * server's own configuration addresses them; a listing (GET on the bucket)
 * touches its prefix= argument; a DeleteObjects (POST ?delete) each <Key>
 * of its body, which must then be given and hash to the request's
 * x-amz-content-sha256.
 */
#include "io/s3_int.h"
#include "base/fork.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S3_SIGN_CACHE_S 30
#define S3_SIGN_CACHE_N 100
#define S3_SIGN_MAX_HEADERS 64

static const char *const UNSIGNED[] = {
    "authorization", "range", "user-agent", "expect", "connection", "content-length",
    "transfer-encoding", "accept-encoding", "amz-sdk-invocation-id", "amz-sdk-retry",
    "amz-sdk-request", "x-amzn-trace-id", "cache-control", "host", "x-amz-date",
    "x-amz-content-sha256", "x-amz-security-token", NULL,
};

static bool unsigned_header(const char *lname)
{
    for (int i = 0; UNSIGNED[i]; i++)
        if (strcmp(UNSIGNED[i], lname) == 0)
            return true;
    return false;
}

static void hex32(const uint8_t *md, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = 0;
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
    uint8_t md[SHA256_DIGEST_LENGTH];
    SHA256(p ? p : (const void *)"", n, md);
    hex32(md, out);
}

static void hmac256(const uint8_t *key, size_t kl, const char *msg, uint8_t out[32])
{
    unsigned int ol = 32;
    HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, strlen(msg), out, &ol);
}

/* ---- parsing an S3 URL ----------------------------------------------------------------------- */

typedef struct sign_url {
    char host[300];      /* host[:port] as written */
    char *path;          /* the encoded path ("/" when none; owned) */
    char *query;         /* the encoded query without '?' ("" when none; owned) */
} sign_url;

static void sign_url_free(sign_url *u)
{
    hs_free(u->path);
    hs_free(u->query);
    memset(u, 0, sizeof *u);
}

static hs_status parse_url(const char *uri, sign_url *u, hs_error *err)
{
    memset(u, 0, sizeof *u);
    const char *p = strncmp(uri, "http://", 7) == 0 ? uri + 7
                  : strncmp(uri, "https://", 8) == 0 ? uri + 8 : NULL;
    if (!p)
        return hs_err_set(err, HS_INVALID, "S3 sign request: uri \"%.200s\" is not http(s)", uri);
    size_t hl = strcspn(p, "/?#");
    if (hl == 0 || hl >= sizeof u->host || p[hl] == '#')
        return hs_err_set(err, HS_INVALID, "S3 sign request: uri \"%.200s\" has no valid host",
                          uri);
    for (size_t i = 0; i < hl; i++)
        if (!isalnum((unsigned char)p[i]) && !strchr(".-:[]_", p[i]))
            return hs_err_set(err, HS_INVALID, "S3 sign request: uri \"%.200s\" has no valid "
                              "host", uri);
    memcpy(u->host, p, hl);
    u->host[hl] = 0;
    const char *path = p + hl;
    size_t pl = strcspn(path, "?#");
    const char *q = path[pl] == '?' ? path + pl + 1 : "";
    size_t ql = strcspn(q, "#");
    u->path = pl ? hs_strndup(path, pl) : hs_strdup("/");
    u->query = hs_strndup(q, ql);
    if (!u->path || !u->query) {
        sign_url_free(u);
        return hs_err_nomem(err, strlen(uri));
    }
    return HS_OK;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* %XX-decodes s[0..n) into a new string (NULL when malformed, NUL-bearing
 * or out of memory; *bad says which). */
static char *pct_decode(const char *s, size_t n, bool *bad)
{
    char *o = hs_malloc(n + 1);
    size_t k = 0;
    *bad = false;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int a = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
            int b = a >= 0 ? hexval((unsigned char)s[i + 2]) : -1;
            if (a < 0 || b < 0 || (a == 0 && b == 0)) {
                *bad = true;
                hs_free(o);
                return NULL;
            }
            o[k++] = (char)(a * 16 + b);
            i += 2;
        } else {
            o[k++] = s[i];
        }
    }
    o[k] = 0;
    return o;
}

/* ---- the canonical request (SigV4) ----------------------------------------------------------- */

typedef struct qpair {
    char *k, *v;   /* encoded the SigV4 way (owned) */
} qpair;

static int qpair_cmp(const void *a, const void *b)
{
    const qpair *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

/* The canonical query string of an encoded query (decoded, then encoded
 * again with SigV4's rules, sorted). */
static hs_status canonical_query(const char *q, hs_buf *out, hs_error *err)
{
    size_t n = 0, cap = 0;
    qpair *a = NULL;
    hs_status st = HS_OK;
    for (const char *p = q; *p && st == HS_OK;) {
        size_t l = strcspn(p, "&");
        if (l) {
            const char *eq = memchr(p, '=', l);
            size_t kl = eq ? (size_t)(eq - p) : l;
            bool bad1, bad2;
            char *k = pct_decode(p, kl, &bad1);
            char *v = eq ? pct_decode(eq + 1, l - kl - 1, &bad2) : hs_strdup("");
            if (!eq)
                bad2 = false;
            hs_buf kb = { 0 }, vb = { 0 };
            if (bad1 || bad2)
                st = hs_err_set(err, HS_INVALID, "S3 sign request: malformed %%-escape in the "
                                "query");
            else if (!k || !v || s3_url_encode(&kb, k, false) != HS_OK ||
                     s3_url_encode(&vb, v, false) != HS_OK)
                st = hs_err_nomem(err, l);
            if (st == HS_OK && n == cap) {
                size_t nc = cap ? cap * 2 : 8;
                qpair *na = hs_realloc(a, nc * sizeof *na);
                if (na) {
                    a = na;
                    cap = nc;
                } else {
                    st = hs_err_nomem(err, nc * sizeof *na);
                }
            }
            if (st == HS_OK) {
                a[n].k = hs_strdup(hs_buf_cstr(&kb));
                a[n].v = hs_strdup(hs_buf_cstr(&vb));
                if (!a[n].k || !a[n].v) {
                    hs_free(a[n].k);
                    hs_free(a[n].v);
                    st = hs_err_nomem(err, l);
                } else {
                    n++;
                }
            }
            hs_free(k);
            hs_free(v);
            hs_buf_free(&kb);
            hs_buf_free(&vb);
        }
        p += l + (p[l] == '&');
    }
    if (st == HS_OK) {
        if (n)
            qsort(a, n, sizeof *a, qpair_cmp);
        for (size_t i = 0; i < n && st == HS_OK; i++)
            st = hs_buf_printf(out, "%s%s=%s", i ? "&" : "", a[i].k, a[i].v) == HS_OK
                     ? HS_OK : hs_err_nomem(err, 64);
    }
    for (size_t i = 0; i < n; i++) {
        hs_free(a[i].k);
        hs_free(a[i].v);
    }
    hs_free(a);
    return st;
}

typedef struct shdr {
    char name[128];   /* lower case */
    char *value;      /* trimmed, inner runs of spaces collapsed (owned) */
    char orig[128];   /* the name as sent */
} shdr;

static int shdr_cmp(const void *a, const void *b)
{
    return strcmp(((const shdr *)a)->name, ((const shdr *)b)->name);
}

static char *trim_value(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    char *o = hs_strdup(v);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; o[i]; i++) {
        bool sp = o[i] == ' ' || o[i] == '\t';
        if (sp && (k == 0 || o[k - 1] == ' '))
            continue;
        o[k++] = sp ? ' ' : o[i];
    }
    while (k > 0 && o[k - 1] == ' ')
        k--;
    o[k] = 0;
    return o;
}

/* ---- which objects a request touches --------------------------------------------------------- */

/* bucket and key of u under cfg's addressing; *key is a new decoded string. */
static hs_status object_of(const s3_config *cfg, const sign_url *u, char bucket[64], char **key,
                           hs_error *err)
{
    *key = NULL;
    const char *path = u->path + (u->path[0] == '/');
    bool path_style = cfg->path_style;
    if (!path_style) {
        /* virtual-hosted: <bucket>.<endpoint host> */
        const char *sep = strstr(cfg->endpoint, "://");
        const char *eh = sep ? sep + 3 : cfg->endpoint;
        size_t hl = strlen(u->host), el = strcspn(eh, "/");
        if (hl > el + 1 && strncasecmp(u->host + hl - el, eh, el) == 0 &&
            u->host[hl - el - 1] == '.' && hl - el - 1 < 64) {
            memcpy(bucket, u->host, hl - el - 1);
            bucket[hl - el - 1] = 0;
        } else {
            path_style = true;   /* an address the server's endpoint does not take */
        }
    }
    if (path_style) {
        size_t bl = strcspn(path, "/");
        if (bl == 0 || bl >= 64)
            return hs_err_set(err, HS_INVALID, "S3 sign request: no bucket in the uri's path");
        memcpy(bucket, path, bl);
        bucket[bl] = 0;
        path += bl + (path[bl] == '/');
    }
    bool bad = false;
    *key = pct_decode(path, strlen(path), &bad);
    if (!*key)
        return bad ? hs_err_set(err, HS_INVALID, "S3 sign request: malformed %%-escape in the "
                                "uri") : hs_err_nomem(err, strlen(path));
    return HS_OK;
}

/* The value of query argument name (decoded; NULL when absent). */
static char *query_arg(const char *q, const char *name, bool *present)
{
    size_t nl = strlen(name);
    *present = false;
    for (const char *p = q; *p;) {
        size_t l = strcspn(p, "&");
        if (l >= nl && strncmp(p, name, nl) == 0 && (l == nl || p[nl] == '=')) {
            *present = true;
            bool bad;
            return l == nl ? hs_strdup("") : pct_decode(p + nl + 1, l - nl - 1, &bad);
        }
        p += l + (p[l] == '&');
    }
    return NULL;
}

static bool allowed(hs_s3_sign_allow_fn allow, void *arg, const char *bucket, const char *key)
{
    char *u = hs_malloc(strlen(bucket) + strlen(key) + 8);
    if (!u)
        return false;
    sprintf(u, "s3://%s/%s", bucket, key);
    bool ok = allow(arg, u);
    hs_free(u);
    return ok;
}

/* Un-escapes the five XML entities of s in place. */
static void xml_unescape(char *s)
{
    static const struct { const char *e; char c; } ents[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
    };
    char *o = s;
    while (*s) {
        bool done = false;
        for (size_t i = 0; *s == '&' && i < 5 && !done; i++) {
            size_t l = strlen(ents[i].e);
            if (strncmp(s, ents[i].e, l) == 0) {
                *o++ = ents[i].c;
                s += l;
                done = true;
            }
        }
        if (!done)
            *o++ = *s++;
    }
    *o = 0;
}

/* A DeleteObjects body: every <Key> must be allowed (false when one is
 * not, or when there is none). */
static bool delete_keys_allowed(const char *body, const char *bucket, hs_s3_sign_allow_fn allow,
                                void *arg)
{
    int n = 0;
    for (const char *p = strstr(body, "<Key>"); p; p = strstr(p, "<Key>")) {
        p += 5;
        const char *e = strstr(p, "</Key>");
        if (!e)
            return false;
        char *k = hs_strndup(p, (size_t)(e - p));
        if (!k)
            return false;
        xml_unescape(k);
        bool ok = allowed(allow, arg, bucket, k);
        hs_free(k);
        if (!ok)
            return false;
        n++;
        p = e;
    }
    return n > 0;
}

/* ---- the server: answering an S3SignRequest --------------------------------------------------- */

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

hs_status hs_s3_sign_remote(const char *body, size_t len, hs_s3_sign_allow_fn allow, void *arg,
                            char **out, bool *cacheable, bool *refused, hs_error *err)
{
    *out = NULL;
    *cacheable = false;
    *refused = false;
    json_error_t je;
    json_t *j = hs_json_loadb(body, len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return hs_err_set(err, HS_INVALID, "S3 sign request: not a JSON object");
    }
    const char *region = jstr(j, "region"), *uri = jstr(j, "uri"), *method = jstr(j, "method");
    json_t *hdrs = json_object_get(j, "headers");
    json_t *jbody = json_object_get(j, "body");
    static const char *const METHODS[] = { "GET", "HEAD", "PUT", "POST", "DELETE", NULL };
    bool method_ok = false;
    for (int i = 0; method && METHODS[i]; i++)
        method_ok |= strcmp(method, METHODS[i]) == 0;
    if (!region || !uri || !method || !json_is_object(hdrs) ||
        (jbody && !json_is_null(jbody) && !json_is_string(jbody))) {
        json_decref(j);
        return hs_err_set(err, HS_INVALID, "S3 sign request: needs region, uri, method (strings) "
                          "and headers (an object of string arrays)");
    }
    if (!method_ok || !*region || strlen(region) > 63 || strchr(region, '/')) {
        hs_status bad = hs_err_set(err, HS_INVALID, "S3 sign request: method \"%.16s\" or "
                                   "region \"%.64s\" not signable", method, region);
        json_decref(j);   /* after the message: it quotes j's strings */
        return bad;
    }
    sign_url u;
    hs_status st = parse_url(uri, &u, err);
    if (st != HS_OK) {
        json_decref(j);
        return st;
    }
    /* the headers: lower-cased, values joined by "," */
    shdr *h = hs_calloc(S3_SIGN_MAX_HEADERS + 4, sizeof *h);
    size_t nh = 0;
    const char *name;
    json_t *vals;
    const char *client_date = NULL, *client_sha = NULL;
    if (!h)
        st = hs_err_nomem(err, sizeof *h);
    json_object_foreach(hdrs, name, vals) {
        if (st != HS_OK)
            break;
        size_t nl = strlen(name);
        if (!json_is_array(vals) || nl == 0 || nl >= sizeof h->name) {
            st = hs_err_set(err, HS_INVALID, "S3 sign request: header \"%.64s\" is not a list of "
                            "strings", name);
            break;
        }
        char lname[128];
        for (size_t i = 0; i <= nl; i++) {
            unsigned char c = (unsigned char)name[i];
            if (c && (c <= ' ' || c >= 127 || c == ':')) {
                st = hs_err_set(err, HS_INVALID, "S3 sign request: bad header name");
                break;
            }
            lname[i] = (char)tolower(c);
        }
        if (st != HS_OK)
            break;
        hs_buf v = { 0 };
        size_t i;
        json_t *e;
        json_array_foreach(vals, i, e) {
            const char *s = json_string_value(e);
            if (!s || strpbrk(s, "\r\n")) {
                st = hs_err_set(err, HS_INVALID, "S3 sign request: header \"%.64s\" has a value "
                                "that is not a one-line string", name);
                break;
            }
            if ((i && hs_buf_append_byte(&v, ',') != HS_OK) || hs_buf_puts(&v, s) != HS_OK) {
                st = hs_err_nomem(err, strlen(s));
                break;
            }
        }
        if (st == HS_OK && strcmp(lname, "x-amz-date") == 0)
            client_date = json_string_value(json_array_get(vals, 0));
        if (st == HS_OK && strcmp(lname, "x-amz-content-sha256") == 0)
            client_sha = json_string_value(json_array_get(vals, 0));
        if (st == HS_OK && !unsigned_header(lname)) {
            if (nh == S3_SIGN_MAX_HEADERS) {
                st = hs_err_set(err, HS_INVALID, "S3 sign request: more than %d headers",
                                S3_SIGN_MAX_HEADERS);
            } else {
                memcpy(h[nh].name, lname, nl + 1);
                memcpy(h[nh].orig, name, nl + 1);
                if (!(h[nh].value = trim_value(hs_buf_cstr(&v) ? hs_buf_cstr(&v) : "")))
                    st = hs_err_nomem(err, v.len);
                else
                    nh++;
            }
        }
        hs_buf_free(&v);
    }
    /* the date: the client's (it may send its own and keep it), else now */
    char amzdate[17], ymd[9];
    if (st == HS_OK) {
        if (client_date) {
            bool ok = strlen(client_date) == 16 && client_date[8] == 'T' && client_date[15] == 'Z';
            for (int i = 0; ok && i < 15; i++)
                ok = i == 8 || isdigit((unsigned char)client_date[i]);
            if (!ok)
                st = hs_err_set(err, HS_INVALID, "S3 sign request: x-amz-date \"%.32s\" is not "
                                "YYYYMMDDTHHMMSSZ", client_date);
            else
                memcpy(amzdate, client_date, 17);
        } else {
            time_t now = time(NULL);
            struct tm tm;
            gmtime_r(&now, &tm);
            strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm);
        }
        memcpy(ymd, amzdate, 8);
        ymd[8] = 0;
    }
    if (st == HS_OK && client_sha) {
        /* a SHA-256 in hex, or a word such as UNSIGNED-PAYLOAD or
         * STREAMING-UNSIGNED-PAYLOAD-TRAILER (botocore's checksummed uploads) */
        size_t l = strlen(client_sha);
        bool hex = l == 64, word = l > 0 && l < 64;
        for (size_t i = 0; i < l; i++) {
            unsigned char ch = (unsigned char)client_sha[i];
            hex = hex && isxdigit(ch);
            word = word && (isupper(ch) || isdigit(ch) || ch == '-');
        }
        if (!hex && !word)
            st = hs_err_set(err, HS_INVALID, "S3 sign request: x-amz-content-sha256 is neither "
                            "a SHA-256 in hex nor a payload word such as UNSIGNED-PAYLOAD");
    }
    /* what it touches, and whether the caller may */
    s3_config cfg = s3_cfg_now();
    char bucket[64] = "";
    char *key = NULL;
    if (st == HS_OK)
        st = object_of(&cfg, &u, bucket, &key, err);
    if (st == HS_OK) {
        bool present = false, ok;
        char *prefix = NULL;
        if (!*key && (prefix = query_arg(u.query, "prefix", &present)) != NULL) {
            ok = strcmp(method, "GET") == 0 && allowed(allow, arg, bucket, prefix);
        } else if (!*key) {
            ok = false;   /* the bucket itself: every object in it */
        } else if (strcmp(method, "POST") == 0 &&
                   (hs_free(query_arg(u.query, "delete", &present)), present)) {
            const char *b = json_string_value(jbody);
            char bh[65];
            if (b)
                sha256_hex(b, strlen(b), bh);
            ok = b && client_sha && strcmp(client_sha, bh) == 0 &&
                 delete_keys_allowed(b, bucket, allow, arg);
        } else {
            ok = allowed(allow, arg, bucket, key);
        }
        hs_free(prefix);
        if (!ok) {
            *refused = true;
            st = hs_err_set(err, HS_INVALID, "S3 sign request: %s %.300s is outside the tables "
                            "this caller may access", method, uri);
        }
    }
    hs_free(key);
    if (st == HS_OK && !cfg.sign)
        st = hs_err_set(err, HS_UNSUPPORTED, "S3 sign request: this server has no S3 "
                        "credentials to sign with%s%s", cfg.creds_note[0] ? ": " : "",
                        cfg.creds_note);
    /* the headers it adds */
    char sha[65];
    snprintf(sha, sizeof sha, "%s", client_sha ? client_sha : "UNSIGNED-PAYLOAD");
    if (st == HS_OK) {
        snprintf(h[nh].name, sizeof h->name, "host");
        h[nh++].value = hs_strdup(u.host);
        snprintf(h[nh].name, sizeof h->name, "x-amz-content-sha256");
        h[nh++].value = hs_strdup(sha);
        snprintf(h[nh].name, sizeof h->name, "x-amz-date");
        h[nh++].value = hs_strdup(amzdate);
        if (cfg.session_token) {
            snprintf(h[nh].name, sizeof h->name, "x-amz-security-token");
            h[nh++].value = hs_strdup(cfg.session_token);
        }
        for (size_t i = 0; i < nh; i++)
            if (!h[i].value)
                st = hs_err_nomem(err, 64);
    }
    hs_buf canon = { 0 }, sh = { 0 }, sts = { 0 }, auth = { 0 };
    if (st == HS_OK) {
        qsort(h, nh, sizeof *h, shdr_cmp);
        for (size_t i = 1; i < nh && st == HS_OK; i++)
            if (strcmp(h[i].name, h[i - 1].name) == 0)
                st = hs_err_set(err, HS_INVALID, "S3 sign request: header \"%s\" given twice",
                                h[i].name);
    }
    if (st == HS_OK) {
        bool ok = hs_buf_printf(&canon, "%s\n%s\n", method, u.path) == HS_OK;
        st = ok ? canonical_query(u.query, &canon, err) : hs_err_nomem(err, 256);
        ok = st == HS_OK && hs_buf_append_byte(&canon, '\n') == HS_OK;
        for (size_t i = 0; ok && i < nh; i++)
            ok = hs_buf_printf(&canon, "%s:%s\n", h[i].name, h[i].value) == HS_OK &&
                 hs_buf_printf(&sh, "%s%s", i ? ";" : "", h[i].name) == HS_OK;
        ok = ok && hs_buf_printf(&canon, "\n%s\n%s", hs_buf_cstr(&sh), sha) == HS_OK;
        if (st == HS_OK && !ok)
            st = hs_err_nomem(err, 256);
    }
    json_t *resp = NULL;
    if (st == HS_OK) {
        char ch[65], sig[65];
        sha256_hex(canon.data, canon.len, ch);
        bool ok = hs_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", amzdate,
                                ymd, region, ch) == HS_OK;
        uint8_t k[32];
        size_t sl = strlen(cfg.secret_key);
        uint8_t *k0 = hs_malloc(sl + 5);
        if (ok && k0) {
            memcpy(k0, "AWS4", 4);
            memcpy(k0 + 4, cfg.secret_key, sl);
            hmac256(k0, sl + 4, ymd, k);
            hmac256(k, 32, region, k);
            hmac256(k, 32, "s3", k);
            hmac256(k, 32, "aws4_request", k);
            uint8_t s[32];
            hmac256(k, 32, hs_buf_cstr(&sts), s);
            hex32(s, sig);
            ok = hs_buf_printf(&auth, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, "
                               "SignedHeaders=%s, Signature=%s", cfg.access_key, ymd, region,
                               hs_buf_cstr(&sh), sig) == HS_OK;
        }
        hs_free(k0);
        if (ok) {
            json_t *hj = json_pack("{s:[s], s:[s]}", "Authorization", hs_buf_cstr(&auth),
                                   "x-amz-date", amzdate);
            if (hj && !client_sha)
                json_object_set_new(hj, "x-amz-content-sha256", json_pack("[s]", sha));
            if (hj && cfg.session_token)
                json_object_set_new(hj, "x-amz-security-token",
                                    json_pack("[s]", cfg.session_token));
            resp = hj ? json_pack("{s:s, s:o}", "uri", uri, "headers", hj) : NULL;
        }
        if (!resp || !(*out = hs_json_dumps(resp, JSON_COMPACT)))
            st = hs_err_nomem(err, 512);
        *cacheable = st == HS_OK && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0);
    }
    json_decref(resp);
    for (size_t i = 0; h && i < nh; i++)
        hs_free(h[i].value);
    hs_free(h);
    hs_buf_free(&canon);
    hs_buf_free(&sh);
    hs_buf_free(&sts);
    hs_buf_free(&auth);
    hs_free(cfg.session_token);
    sign_url_free(&u);
    json_decref(j);
    return st;
}

/* ---- the client: a signer's answer ------------------------------------------------------------ */

void hs_s3_signed_free(hs_s3_signed *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        hs_free(s->hdr[i]);
    hs_free(s->hdr);
    hs_free(s->uri);
    memset(s, 0, sizeof *s);
}

hs_status hs_s3_sign_response_parse(const char *body, size_t len, hs_s3_signed *out,
                                    hs_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *j = hs_json_loadb(body, len, 0, &je);
    const char *uri = jstr(j, "uri");
    json_t *hdrs = json_object_get(j, "headers");
    if (!json_is_object(j) || !uri || !json_is_object(hdrs)) {
        json_decref(j);
        return hs_err_set(err, HS_CORRUPT, "S3 signer: the answer is not an S3SignResponse "
                          "({\"uri\": string, \"headers\": {name: [values]}})");
    }
    hs_status st = HS_OK;
    if (strncmp(uri, "http://", 7) != 0 && strncmp(uri, "https://", 8) != 0)
        st = hs_err_set(err, HS_CORRUPT, "S3 signer: the answer's uri \"%.200s\" is not http(s)",
                        uri);
    else if (strpbrk(uri, " \r\n"))
        st = hs_err_set(err, HS_CORRUPT, "S3 signer: the answer's uri has spaces or line breaks");
    size_t n = json_object_size(hdrs);
    if (st == HS_OK && n > S3_SIGN_MAX_HEADERS)
        st = hs_err_set(err, HS_CORRUPT, "S3 signer: the answer has %zu headers", n);
    if (st == HS_OK && (!(out->uri = hs_strdup(uri)) ||
                        !(out->hdr = hs_calloc(n ? n : 1, sizeof *out->hdr))))
        st = hs_err_nomem(err, 256);
    const char *name;
    json_t *vals;
    json_object_foreach(hdrs, name, vals) {
        if (st != HS_OK)
            break;
        if (!json_is_array(vals) || !*name || strpbrk(name, ": \t\r\n")) {
            st = hs_err_set(err, HS_CORRUPT, "S3 signer: the answer's header \"%.64s\" is not a "
                            "name with a list of strings", name);
            break;
        }
        if (strcasecmp(name, "Cache-Control") == 0)
            continue;
        hs_buf b = { 0 };
        bool ok = hs_buf_printf(&b, "%s: ", name) == HS_OK;
        size_t i;
        json_t *e;
        json_array_foreach(vals, i, e) {
            const char *s = json_string_value(e);
            if (!s || strpbrk(s, "\r\n")) {
                st = hs_err_set(err, HS_CORRUPT, "S3 signer: the answer's header \"%.64s\" has "
                                "a value that is not a one-line string", name);
                break;
            }
            ok = ok && (!i || hs_buf_puts(&b, ", ") == HS_OK) && hs_buf_puts(&b, s) == HS_OK;
        }
        if (st == HS_OK && (!ok || !hs_buf_cstr(&b) || !(out->hdr[out->n] = hs_strdup(
                                                             hs_buf_cstr(&b)))))
            st = hs_err_nomem(err, b.len);
        else if (st == HS_OK)
            out->n++;
        hs_buf_free(&b);
    }
    if (st == HS_OK) {
        bool has_auth = false;
        for (size_t i = 0; i < out->n; i++)
            has_auth |= strncasecmp(out->hdr[i], "Authorization:", 14) == 0;
        if (!has_auth)
            st = hs_err_set(err, HS_CORRUPT, "S3 signer: the answer has no Authorization header");
    }
    json_decref(j);
    if (st != HS_OK)
        hs_s3_signed_free(out);
    return st;
}

/* ---- the client: asking, with the cache ------------------------------------------------------- */

typedef struct sign_cache_entry {
    char *key;            /* "method\nregion\nuri" */
    int64_t at;           /* seconds (monotonic) */
    hs_s3_signed sig;
} sign_cache_entry;

static pthread_mutex_t g_sign_lock = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_sign_lock, HS_FORK_RANK_LEAF)
static sign_cache_entry g_sign_cache[S3_SIGN_CACHE_N];
static uint64_t g_sign_requests;   /* POSTs to a signer (tests read it) */

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static hs_status signed_copy(const hs_s3_signed *a, hs_s3_signed *b)
{
    memset(b, 0, sizeof *b);
    if (!(b->uri = hs_strdup(a->uri)) || !(b->hdr = hs_calloc(a->n ? a->n : 1, sizeof *b->hdr)))
        goto oom;
    for (; b->n < a->n; b->n++)
        if (!(b->hdr[b->n] = hs_strdup(a->hdr[b->n])))
            goto oom;
    return HS_OK;
oom:
    hs_s3_signed_free(b);
    return HS_NOMEM;
}

static bool cache_get(const char *key, hs_s3_signed *out)
{
    bool hit = false;
    int64_t now = mono_s();
    pthread_mutex_lock(&g_sign_lock);
    for (int i = 0; i < S3_SIGN_CACHE_N && !hit; i++) {
        sign_cache_entry *e = &g_sign_cache[i];
        if (e->key && strcmp(e->key, key) == 0 && now - e->at < S3_SIGN_CACHE_S)
            hit = signed_copy(&e->sig, out) == HS_OK;
    }
    pthread_mutex_unlock(&g_sign_lock);
    return hit;
}

static void cache_put(const char *key, const hs_s3_signed *sig)
{
    sign_cache_entry ne = { .at = mono_s() };
    if (!(ne.key = hs_strdup(key)) || signed_copy(sig, &ne.sig) != HS_OK) {
        hs_free(ne.key);
        return;
    }
    pthread_mutex_lock(&g_sign_lock);
    int slot = 0;   /* the same key, else a free slot, else the oldest */
    for (int i = 0; i < S3_SIGN_CACHE_N; i++) {
        sign_cache_entry *e = &g_sign_cache[i];
        if (e->key && strcmp(e->key, key) == 0) {
            slot = i;
            break;
        }
        if (!e->key || (g_sign_cache[slot].key && e->at < g_sign_cache[slot].at))
            slot = i;
    }
    sign_cache_entry old = g_sign_cache[slot];
    g_sign_cache[slot] = ne;
    pthread_mutex_unlock(&g_sign_lock);
    hs_free(old.key);
    hs_s3_signed_free(&old.sig);
}

void s3_sign_cache_clear(void)
{
    pthread_mutex_lock(&g_sign_lock);
    for (int i = 0; i < S3_SIGN_CACHE_N; i++) {
        hs_free(g_sign_cache[i].key);
        hs_s3_signed_free(&g_sign_cache[i].sig);
        memset(&g_sign_cache[i], 0, sizeof g_sign_cache[i]);
    }
    pthread_mutex_unlock(&g_sign_lock);
}

uint64_t hs_s3_sign_requests(void)
{
    return __atomic_load_n(&g_sign_requests, __ATOMIC_RELAXED);
}

hs_status s3_remote_sign(s3_scope_ticket *t, const char *region, const char *method,
                         const char *url, const char *const *hdr, size_t n_hdr, const char *body,
                         hs_s3_signed *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_buf key = { 0 };
    if (hs_buf_printf(&key, "%s\n%s\n%s", method, region, url) != HS_OK) {
        hs_buf_free(&key);
        return hs_err_nomem(err, strlen(url));
    }
    if (cache_get(hs_buf_cstr(&key), out)) {
        hs_buf_free(&key);
        return HS_OK;
    }
    json_t *hj = json_object(), *req = NULL;
    for (size_t i = 0; hj && i < n_hdr; i++) {
        const char *c = strchr(hdr[i], ':');
        if (!c)
            continue;
        char *name = hs_strndup(hdr[i], (size_t)(c - hdr[i]));
        const char *v = c + 1;
        while (*v == ' ')
            v++;
        if (name)
            json_object_set_new(hj, name, json_pack("[s]", v));
        hs_free(name);
    }
    if (hj)
        req = json_pack("{s:s, s:s, s:s, s:o, s:s?}", "region", region, "uri", url, "method",
                        method, "headers", hj, "body", body);
    char *js = req ? hs_json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!js) {
        hs_buf_free(&key);
        return hs_err_nomem(err, 512);
    }
    hs_buf resp = { 0 };
    bool cacheable = false;
    __atomic_add_fetch(&g_sign_requests, 1, __ATOMIC_RELAXED);
    hs_status st = s3_scope_sign(t, js, &resp, &cacheable, err);
    hs_free(js);
    if (st == HS_OK)
        st = hs_s3_sign_response_parse((const char *)resp.data, resp.len, out, err);
    if (st == HS_OK && cacheable)
        cache_put(hs_buf_cstr(&key), out);
    hs_buf_free(&resp);
    hs_buf_free(&key);
    return st;
}
