/*
 * io/s3.c - the S3 backend: objects read by ranged GETs, written by PUT or
 * multipart upload, created exclusively by conditional PUT.
 *
 * Requests (libcurl; SigV4 signing by curl's CURLOPT_AWS_SIGV4):
 *
 *   operation            request                                  status -> result
 *   -------------------  ---------------------------------------  -------------------------
 *   open / stat          HEAD key                                 200 size+ETag, 404 NOT_FOUND
 *   read_at              GET key, Range: bytes=a-b, If-Match: ETag 206 (200 for the whole
 *                                                                 object), 412 -> "changed"
 *   small write / close  PUT key                                  200
 *   exclusive create     PUT key, If-None-Match: *                200, 412 -> HS_CONFLICT
 *   large write          POST ?uploads=, PUT ?partNumber=&uploadId=
 *                        (each part_size bytes), POST ?uploadId=   200 (body checked for
 *                        with the part list; abort: DELETE          <Error>)
 *   delete               DELETE key                               204 (404 too)
 *   list                 GET ?continuation-token=&delimiter=/&    200 (page after page)
 *                        list-type=2&prefix=
 *
 * Addressing: with an endpoint override (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 * the profile's endpoint_url) path-style <endpoint>/<bucket>/<key>, which is
 * what S3-compatible servers serve; on AWS virtual-hosted style
 * https://<bucket>.s3.<region>.amazonaws.com/<key>.  HS_S3_ADDRESSING=path or
 * virtual forces one.  Keys are percent-encoded except '/' and unreserved
 * characters (SigV4's canonical URI); query strings are written sorted and
 * encoded, as SigV4 canonicalizes them.
 *
 * Retries: a request is retried (up to HS_S3_MAX_ATTEMPTS, default 10) on
 * transport errors (refused, reset, timeouts, empty or truncated responses),
 * HTTP 408, 429, 500, 502, 503 (SlowDown), 504, 409 on a conditional PUT
 * (AWS's ConditionalRequestConflict) and 400 RequestTimeout, after a sleep
 * drawn uniformly from [0, min(2 s, 25 ms * 2^attempt)] ("full jitter").
 * Retried writes are idempotent except two, which check what happened
 * (always: curl itself resends a request whose reused connection died
 * without an answer, so "first attempt" cannot be told from the outside):
 *   - a conditional PUT that gets 412 may have been applied by an attempt
 *     whose response was lost: the object is read back and, when its bytes
 *     equal ours, the create succeeded (metadata files carry unique snapshot
 *     ids and timestamps, so equal bytes are our write);
 *   - a CompleteMultipartUpload that gets 404 NoSuchUpload: the object is
 *     HEADed and its size compared.
 *
 * Reads and the byte cache: read_at calls of at most 1 MiB are widened to
 * whole 64 KiB blocks (aligned, clipped to the object) and the fetched extent
 * is kept in a process-wide LRU cache (HS_S3_CACHE_MB, default 256; 0 = off)
 * keyed by bucket, key and ETag, so a Parquet footer read (8 bytes, then the
 * footer), the page index, column chunks of small files and index sidecars
 * cost one request per block, and a second query reads no bytes again.  An
 * object rewritten in place gets another ETag, so the cache never serves old
 * bytes for a new object (If-Match on the GET catches a change after open).
 * Larger reads go to the store directly.
 *
 * Connections: easy handles are pooled (up to 64 idle) and share one
 * curl share handle (connections, DNS, TLS sessions), so keep-alive
 * connections are reused across files and threads.
 *
 * Credentials, in order: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
 * AWS_SESSION_TOKEN); the profile AWS_PROFILE (or "default") in
 * AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and AWS_CONFIG_FILE
 * (~/.aws/config, "[profile name]" sections); container credentials
 * (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI, refreshed before they
 * expire); none = unsigned requests
 * (public buckets), also forced by AWS_NO_SIGN_REQUEST=true.  Region:
 * AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1.
 *
 * Stores without conditional writes (HS_S3_CONDITIONAL_WRITES=0): an
 * exclusive create is a HEAD then a PUT, correct only while every writer of
 * the table holds the commit lock (catalog/fsio.c: HS_S3_LOCK_DIR).
 */
#include "io/s3.h"
#include "base/fork.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <jansson.h>

#include <curl/curl.h>
#include <openssl/sha.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define S3_BLOCK ((uint64_t)64 << 10)
#define S3_CACHE_MAX_READ ((size_t)1 << 20)
/* A small read that misses fetches at least this much (aligned, within the
 * object): the next small reads near it (the other columns' pages of a row
 * group, the rest of a sidecar) then cost no round trip. */
#define S3_READAHEAD ((uint64_t)256 << 10)
#define S3_MIN_PART ((size_t)5 << 20)
#define S3_MAX_PARTS 10000

/* ---- configuration -------------------------------------------------------- */

typedef struct s3_config {
    char region[64];
    char endpoint[512];       /* scheme://host[:port][/path], no trailing '/' */
    bool path_style;
    bool custom_endpoint;
    bool sign;
    char access_key[256];
    char secret_key[256];
    char *session_token;      /* owned or NULL */
    int max_attempts;
    long connect_timeout_ms;
    long low_speed_s;         /* a transfer slower than 1 B/s for this long fails */
    size_t part_size;
    uint64_t cache_budget;
    bool conditional_writes;
    bool verbose;
    int64_t head_ttl_s;
    int64_t creds_expire;     /* container credentials: epoch seconds, 0 = never */
} s3_config;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;  /* config, pool, cache, stats */
static bool g_loaded;
static s3_config g_cfg;
static hs_s3_stats g_stats;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static bool env_true(const char *name, bool dflt)
{
    const char *v = env(name);
    if (!v)
        return dflt;
    return strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
           strcasecmp(v, "on") == 0;
}

static int64_t env_int(const char *name, int64_t dflt, int64_t lo, int64_t hi)
{
    const char *v = env(name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return dflt;
    return x;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Reads a whole small text file (the AWS shared files); NULL when absent. */
static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    hs_buf b = { 0 };
    char chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, fp)) > 0 && b.len < ((size_t)1 << 20))
        if (hs_buf_append(&b, chunk, k) != HS_OK)
            break;
    fclose(fp);
    *len = b.len;
    if (!b.data)
        return NULL;
    return (char *)hs_buf_detach(&b, len);
}

static char *home_file(const char *override_var, const char *rel)
{
    const char *o = env(override_var);
    if (o)
        return hs_strdup(o);
    const char *h = env("HOME");
    if (!h)
        return NULL;
    size_t n = strlen(h) + strlen(rel) + 2;
    char *p = hs_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", h, rel);
    return p;
}

/* The profile's value of key from the credentials file, then the config file. */
static char *profile_value(const char *profile, const char *key)
{
    char *out = NULL;
    for (int pass = 0; pass < 2 && !out; pass++) {
        char *path = pass == 0 ? home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials")
                               : home_file("AWS_CONFIG_FILE", ".aws/config");
        size_t len = 0;
        char *text = path ? slurp(path, &len) : NULL;
        if (text)
            out = s3_ini_get(text, len, profile, pass == 1, key);
        hs_free(text);
        hs_free(path);
    }
    return out;
}

static size_t creds_body(char *p, size_t sz, size_t nm, void *u)
{
    hs_buf *b = u;
    size_t n = sz * nm;
    if (b->len + n > 65536 || hs_buf_append(b, p, n) != HS_OK)
        return 0;
    return n;
}

/* Container credentials (ECS/EKS Pod Identity style): GET
 * AWS_CONTAINER_CREDENTIALS_FULL_URI, or http://169.254.170.2 +
 * AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with Authorization from
 * AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE); the JSON answer carries
 * AccessKeyId, SecretAccessKey, Token and Expiration (ISO 8601, UTC). */
static void container_credentials(s3_config *c)
{
    const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    if (!full && !rel)
        return;
    char url[1024], auth[2100] = "";
    snprintf(url, sizeof url, "%s%s", full ? "" : "http://169.254.170.2", full ? full : rel);
    const char *tok = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    char *tokf = NULL;
    size_t tl = 0;
    if (!tok && env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"))
        tok = tokf = slurp(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), &tl);
    if (tok) {
        size_t n = strcspn(tok, "\r\n");
        snprintf(auth, sizeof auth, "Authorization: %.*s", (int)(n < 2048 ? n : 2048), tok);
    }
    hs_free(tokf);
    CURL *h = curl_easy_init();
    if (!h)
        return;
    hs_buf body = { 0 };
    struct curl_slist *hl = auth[0] ? curl_slist_append(NULL, auth) : NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (hl)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, creds_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    json_error_t je;
    json_t *j = code == 200 ? hs_json_loadb((const char *)body.data, body.len, 0, &je) : NULL;
    hs_buf_free(&body);
    const char *ak = json_string_value(json_object_get(j, "AccessKeyId"));
    const char *sk = json_string_value(json_object_get(j, "SecretAccessKey"));
    const char *st = json_string_value(json_object_get(j, "Token"));
    const char *ex = json_string_value(json_object_get(j, "Expiration"));
    if (ak && sk && *ak && *sk) {
        copy_str(c->access_key, sizeof c->access_key, ak);
        copy_str(c->secret_key, sizeof c->secret_key, sk);
        c->session_token = st && *st ? hs_strdup(st) : NULL;
        struct tm tm = { 0 };
        if (ex && sscanf(ex, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                         &tm.tm_hour, &tm.tm_min, &tm.tm_sec) == 6) {
            tm.tm_year -= 1900;
            tm.tm_mon -= 1;
            c->creds_expire = (int64_t)timegm(&tm);
        } else {
            c->creds_expire = (int64_t)time(NULL) + 600;   /* no expiry given: ask again */
        }
    }
    json_decref(j);
}

static void load_config(void)
{
    s3_config *c = &g_cfg;
    hs_free(c->session_token);
    memset(c, 0, sizeof *c);
    const char *profile = env("AWS_PROFILE");
    if (!profile)
        profile = "default";
    const char *region = env("AWS_REGION");
    if (!region)
        region = env("AWS_DEFAULT_REGION");
    char *pregion = region ? NULL : profile_value(profile, "region");
    copy_str(c->region, sizeof c->region, region ? region : pregion ? pregion : "us-east-1");
    hs_free(pregion);

    const char *ep = env("AWS_ENDPOINT_URL_S3");
    if (!ep)
        ep = env("AWS_ENDPOINT_URL");
    char *pep = ep ? NULL : profile_value(profile, "endpoint_url");
    if (ep || pep) {
        copy_str(c->endpoint, sizeof c->endpoint, ep ? ep : pep);
        c->custom_endpoint = true;
    } else {
        snprintf(c->endpoint, sizeof c->endpoint, "https://s3.%.63s.amazonaws.com", c->region);
    }
    hs_free(pep);
    size_t n = strlen(c->endpoint);
    while (n > 0 && c->endpoint[n - 1] == '/')
        c->endpoint[--n] = 0;
    const char *addr = env("HS_S3_ADDRESSING");
    c->path_style = addr ? strcasecmp(addr, "path") == 0 : c->custom_endpoint;

    const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
    if (ak && sk) {
        copy_str(c->access_key, sizeof c->access_key, ak);
        copy_str(c->secret_key, sizeof c->secret_key, sk);
        const char *tok = env("AWS_SESSION_TOKEN");
        c->session_token = tok ? hs_strdup(tok) : NULL;
    } else {
        char *pak = profile_value(profile, "aws_access_key_id");
        char *psk = profile_value(profile, "aws_secret_access_key");
        if (pak && psk) {
            copy_str(c->access_key, sizeof c->access_key, pak);
            copy_str(c->secret_key, sizeof c->secret_key, psk);
            c->session_token = profile_value(profile, "aws_session_token");
        }
        hs_free(pak);
        hs_free(psk);
        if (!c->access_key[0])
            container_credentials(c);
    }
    c->sign = c->access_key[0] && !env_true("AWS_NO_SIGN_REQUEST", false);
    c->max_attempts = (int)env_int("HS_S3_MAX_ATTEMPTS", 10, 1, 100);
    c->connect_timeout_ms = (long)env_int("HS_S3_CONNECT_TIMEOUT_MS", 5000, 1, 600000);
    c->low_speed_s = (long)env_int("HS_S3_TIMEOUT_S", 30, 1, 3600);
    c->part_size = (size_t)env_int("HS_S3_PART_MB", 8, 5, 4096) << 20;
    c->cache_budget = (uint64_t)env_int("HS_S3_CACHE_MB", 256, 0, 1 << 20) << 20;
    c->conditional_writes = env_true("HS_S3_CONDITIONAL_WRITES", true);
    c->verbose = env_true("HS_S3_VERBOSE", false);
    c->head_ttl_s = env_int("HS_S3_HEAD_CACHE_S", 3600, 0, INT32_MAX);
}

/* ---- connection pool --------------------------------------------------------- */

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLSH *g_share;
static pthread_mutex_t g_share_locks[CURL_LOCK_DATA_LAST];
static CURL *g_idle[64];
static int g_n_idle;

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    (void)h;
    (void)a;
    (void)u;
    pthread_mutex_lock(&g_share_locks[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    (void)h;
    (void)u;
    pthread_mutex_unlock(&g_share_locks[d]);
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&g_share_locks[i], NULL);
    g_share = curl_share_init();
    if (g_share) {
        curl_share_setopt(g_share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(g_share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(g_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(g_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(g_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    }
}

/* Takes the configuration (copied: a reset cannot pull it from under a
 * request) and an easy handle. */
static CURL *pool_get(s3_config *cfg)
{
    pthread_once(&g_curl_once, curl_init_once);
    pthread_mutex_lock(&g_lock);
    if (!g_loaded || (g_cfg.creds_expire && (int64_t)time(NULL) > g_cfg.creds_expire - 300)) {
        load_config();   /* first use, or temporary credentials about to expire */
        g_loaded = true;
    }
    *cfg = g_cfg;
    cfg->session_token = g_cfg.session_token ? hs_strdup(g_cfg.session_token) : NULL;
    CURL *h = g_n_idle > 0 ? g_idle[--g_n_idle] : NULL;
    pthread_mutex_unlock(&g_lock);
    if (!h)
        h = curl_easy_init();
    return h;
}

/* The settings that need no handle (no copy of the session token). */
static s3_config cfg_now(void)
{
    pthread_mutex_lock(&g_lock);
    if (!g_loaded) {
        load_config();
        g_loaded = true;
    }
    s3_config c = g_cfg;
    pthread_mutex_unlock(&g_lock);
    c.session_token = NULL;
    return c;
}

static void pool_put(CURL *h, s3_config *cfg)
{
    hs_free(cfg->session_token);
    cfg->session_token = NULL;
    if (!h)
        return;
    pthread_mutex_lock(&g_lock);
    if (g_n_idle < (int)(sizeof g_idle / sizeof g_idle[0])) {
        g_idle[g_n_idle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    if (h)
        curl_easy_cleanup(h);
}

/* ---- URIs -------------------------------------------------------------------- */

bool hs_s3_is_uri(const char *uri)
{
    return uri && (strncmp(uri, "s3://", 5) == 0 || strncmp(uri, "s3a://", 6) == 0);
}

typedef struct s3_loc {
    char bucket[64];   /* S3 bucket names are 3-63 characters */
    const char *key;   /* borrowed from the URI: may be "" */
} s3_loc;

static hs_status parse_uri(const char *uri, s3_loc *loc, hs_error *err)
{
    const char *p = strncmp(uri, "s3://", 5) == 0 ? uri + 5
                    : strncmp(uri, "s3a://", 6) == 0 ? uri + 6 : NULL;
    if (!p)
        return hs_err_set(err, HS_INVALID, "%s: not an s3:// URI", uri);
    const char *slash = strchr(p, '/');
    size_t bn = slash ? (size_t)(slash - p) : strlen(p);
    if (bn < 1 || bn >= sizeof loc->bucket)
        return hs_err_set(err, HS_INVALID, "%s: bad bucket name (1-63 characters)", uri);
    for (size_t i = 0; i < bn; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (!(islower(ch) || isdigit(ch) || ch == '-' || ch == '.' || ch == '_' || isupper(ch)))
            return hs_err_set(err, HS_INVALID, "%s: bad character in the bucket name", uri);
    }
    memcpy(loc->bucket, p, bn);
    loc->bucket[bn] = 0;
    loc->key = slash ? slash + 1 : "";
    return HS_OK;
}

static bool unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

static hs_status url_encode(hs_buf *b, const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (unreserved(c) || (keep_slash && c == '/'))
            HS_TRY(hs_buf_append_byte(b, c));
        else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            HS_TRY(hs_buf_append(b, e, 3));
        }
    }
    return HS_OK;
}

/* <endpoint>/<bucket>/<key> or https://<bucket>.<host>/<key>, plus ?query. */
static hs_status build_url(const s3_config *c, const char *bucket, const char *key,
                           const char *query, hs_buf *url)
{
    hs_buf_reset(url);
    if (c->path_style) {
        HS_TRY(hs_buf_puts(url, c->endpoint));
        HS_TRY(hs_buf_append_byte(url, '/'));
        HS_TRY(hs_buf_puts(url, bucket));
    } else {
        const char *sep = strstr(c->endpoint, "://");
        const char *host = sep ? sep + 3 : c->endpoint;
        HS_TRY(hs_buf_append(url, c->endpoint, (size_t)(host - c->endpoint)));
        HS_TRY(hs_buf_printf(url, "%s.%s", bucket, host));
    }
    HS_TRY(hs_buf_append_byte(url, '/'));
    HS_TRY(url_encode(url, key, true));
    if (query && *query)
        HS_TRY(hs_buf_printf(url, "?%s", query));
    hs_buf_cstr(url);
    return HS_OK;
}

/* ---- one request, with retries ---------------------------------------------- */

typedef struct s3_req {
    const char *method;        /* GET HEAD PUT POST DELETE */
    const char *bucket, *key;
    const char *query;         /* sorted, encoded; NULL = none */
    const char *hdr[4];        /* extra headers; NULL-terminated */
    const uint8_t *body;       /* request body (PUT/POST) */
    size_t body_len;
    /* response */
    long status;
    hs_buf *resp;              /* 2xx body when dst is NULL (may be NULL: discarded) */
    uint8_t *dst;              /* 2xx body into dst[0..dst_cap) */
    size_t dst_cap;
    size_t got;                /* body bytes received into resp/dst */
    hs_buf errbody;            /* non-2xx body (owned, freed by req_done) */
    char etag[72];
    uint64_t content_length;
    bool have_length;
    uint64_t total_size;       /* from Content-Range: bytes a-b/<total> */
    bool have_total;
    int64_t last_modified;     /* Last-Modified, seconds since the epoch; -1 = none */
    int attempts;              /* how many attempts the last s3_do made */
    bool overflow;
} s3_req;

static size_t on_body(char *p, size_t sz, size_t nm, void *u)
{
    s3_req *r = u;
    size_t n = sz * nm;
    bool ok = r->status >= 200 && r->status < 300;
    if (!ok) {
        if (r->errbody.len < 65536)
            (void)!hs_buf_append(&r->errbody, p, n);
        return n;
    }
    if (r->dst) {
        if (n > r->dst_cap - r->got) {
            r->overflow = true;
            return 0;   /* more than asked for: abort the transfer */
        }
        memcpy(r->dst + r->got, p, n);
    } else if (r->resp && hs_buf_append(r->resp, p, n) != HS_OK) {
        return 0;
    }
    r->got += n;
    return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *u)
{
    s3_req *r = u;
    size_t n = sz * nm;
    if (n > 5 && strncmp(p, "HTTP/", 5) == 0) {   /* a new response (after 100, redirects) */
        const char *sp = memchr(p, ' ', n);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        r->etag[0] = 0;
        r->have_length = false;
        r->have_total = false;
        r->last_modified = -1;
        return n;
    }
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return n;
    size_t kn = (size_t)(colon - p);
    const char *v = colon + 1, *end = p + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t vn = (size_t)(end - v);
    if (kn == 4 && strncasecmp(p, "etag", 4) == 0) {
        if (vn >= sizeof r->etag)
            vn = sizeof r->etag - 1;
        memcpy(r->etag, v, vn);
        r->etag[vn] = 0;
    } else if (kn == 13 && strncasecmp(p, "content-range", 13) == 0 && vn < 80) {
        const char *slash = memchr(v, '/', vn);
        if (slash && slash + 1 < v + vn && (size_t)(v + vn - slash - 1) < 21) {
            char tmp[24];
            size_t tl = (size_t)(v + vn - slash - 1);
            memcpy(tmp, slash + 1, tl);
            tmp[tl] = 0;
            char *e;
            unsigned long long x = strtoull(tmp, &e, 10);
            if (*e == 0 && isdigit((unsigned char)tmp[0])) {
                r->total_size = x;
                r->have_total = true;
            }
        }
    } else if (kn == 14 && strncasecmp(p, "content-length", 14) == 0 && vn > 0 && vn < 21) {
        char tmp[24];
        memcpy(tmp, v, vn);
        tmp[vn] = 0;
        char *e;
        unsigned long long x = strtoull(tmp, &e, 10);
        if (*e == 0 && isdigit((unsigned char)tmp[0])) {
            r->content_length = x;
            r->have_length = true;
        }
    } else if (kn == 13 && strncasecmp(p, "last-modified", 13) == 0 && vn > 0 && vn < 64) {
        char tmp[64];
        memcpy(tmp, v, vn);
        tmp[vn] = 0;
        time_t t = curl_getdate(tmp, NULL);   /* RFC 1123 dates (and the older forms) */
        r->last_modified = t >= 0 ? (int64_t)t : -1;
    }
    return n;
}

static void count(const char *method, uint64_t in, uint64_t out, bool retry)
{
    pthread_mutex_lock(&g_lock);
    g_stats.requests++;
    g_stats.retries += retry;
    g_stats.bytes_in += in;
    g_stats.bytes_out += out;
    switch (method[0]) {
    case 'G': g_stats.gets++; break;
    case 'H': g_stats.heads++; break;
    case 'P': if (method[1] == 'U') g_stats.puts++; else g_stats.posts++; break;
    case 'D': g_stats.deletes++; break;
    default: break;
    }
    pthread_mutex_unlock(&g_lock);
}

static void backoff(int attempt)
{
    uint64_t cap_us = 2000000, base_us = 25000;
    uint64_t lim = attempt >= 7 ? cap_us : base_us << attempt;
    if (lim > cap_us)
        lim = cap_us;
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint64_t)clock() * 6364136223846793005ULL + (uint64_t)attempt;
    uint64_t us = rnd % (lim + 1);
    struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static bool transient_curl(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
        return true;
    default:
        return false;
    }
}

static bool transient_status(const s3_req *r, bool conditional)
{
    long s = r->status;
    if (s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504)
        return true;
    if (s == 409 && conditional)
        return true;
    if (s == 400) {
        char code[64], msg[8];
        if (s3_parse_error((const char *)r->errbody.data, r->errbody.len, code, sizeof code, msg,
                           sizeof msg) &&
            (strcmp(code, "RequestTimeout") == 0 || strcmp(code, "SlowDown") == 0))
            return true;
    }
    return false;
}

static void req_done(s3_req *r)
{
    hs_buf_free(&r->errbody);
}

/* Sends r, retrying transient failures.  HS_OK with r->status set for any
 * HTTP answer that is not transient (the caller maps statuses); HS_IO when
 * the attempts ran out. */
static hs_status s3_do(s3_req *r, const char *what, hs_error *err)
{
    s3_config cfg;
    CURL *h = pool_get(&cfg);
    hs_buf url = { 0 }, auth = { 0 }, tokhdr = { 0 }, tokbuf = { 0 };
    hs_status st = HS_OK;
    if (!h) {
        pool_put(h, &cfg);
        return hs_err_set(err, HS_NOMEM, "%s: cannot create a curl handle", what);
    }
    if (build_url(&cfg, r->bucket, r->key, r->query, &url) != HS_OK ||
        (cfg.sign && (hs_buf_printf(&auth, "aws:amz:%s:s3", cfg.region) != HS_OK ||
                      hs_buf_printf(&tokhdr, "%s:%s", cfg.access_key, cfg.secret_key) != HS_OK))) {
        st = hs_err_nomem(err, 256);
        goto out;
    }
    bool conditional = false;
    for (int i = 0; r->hdr[i]; i++)
        if (strncasecmp(r->hdr[i], "If-None-Match", 13) == 0)
            conditional = true;
    /* The payload's SHA-256, in x-amz-content-sha256 (S3 requires the header;
     * curl 7.x signs the hash of the POSTFIELDS body, curl 8 the header's
     * value: both are this hash, so the signature agrees on either). */
    char sha_hdr[64 + 32];
    {
        static const char hex[] = "0123456789abcdef";
        uint8_t md[SHA256_DIGEST_LENGTH];
        SHA256(r->body ? r->body : (const uint8_t *)"", r->body_len, md);
        int k = snprintf(sha_hdr, sizeof sha_hdr, "x-amz-content-sha256: ");
        for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
            sha_hdr[k++] = hex[md[i] >> 4];
            sha_hdr[k++] = hex[md[i] & 15];
        }
        sha_hdr[k] = 0;
    }
    char curl_msg[CURL_ERROR_SIZE];
    for (int attempt = 0;; attempt++) {
        r->attempts = attempt + 1;
        r->status = 0;
        r->got = 0;
        r->overflow = false;
        r->etag[0] = 0;
        r->have_length = false;
        r->have_total = false;
        if (r->resp)
            hs_buf_reset(r->resp);
        hs_buf_reset(&r->errbody);
        curl_msg[0] = 0;

        curl_easy_reset(h);
        struct curl_slist *hl = NULL, *t;
        bool oom = false;
#define ADD_HDR(s) (t = curl_slist_append(hl, (s)), t ? (void)(hl = t) : (void)(oom = true))
        ADD_HDR(sha_hdr);
        /* not curl's default form type: servers would parse the body as a form */
        if (strcmp(r->method, "POST") == 0)
            ADD_HDR("Content-Type: application/xml");
        else if (strcmp(r->method, "PUT") == 0)
            ADD_HDR("Content-Type: application/octet-stream");
        for (int i = 0; r->hdr[i]; i++)
            ADD_HDR(r->hdr[i]);
        if (cfg.sign && cfg.session_token) {
            hs_buf_reset(&tokbuf);
            if (hs_buf_printf(&tokbuf, "x-amz-security-token: %s", cfg.session_token) != HS_OK)
                oom = true;
            else
                ADD_HDR(hs_buf_cstr(&tokbuf));
        }
#undef ADD_HDR
        if (oom) {
            curl_slist_free_all(hl);
            st = hs_err_nomem(err, 64);
            goto out;
        }
        curl_easy_setopt(h, CURLOPT_URL, hs_buf_cstr(&url));
        if (g_share)
            curl_easy_setopt(h, CURLOPT_SHARE, g_share);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, cfg.connect_timeout_ms);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, cfg.low_speed_s);
        curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
        /* no waiting for "100 Continue" before large bodies (an empty
         * "Expect:" header would suppress it, but curl's SigV4 would sign
         * that header, which it then does not send) */
        curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
        curl_easy_setopt(h, CURLOPT_VERBOSE, cfg.verbose ? 1L : 0L);
        if (cfg.sign) {
            curl_easy_setopt(h, CURLOPT_AWS_SIGV4, hs_buf_cstr(&auth));
            curl_easy_setopt(h, CURLOPT_USERPWD, hs_buf_cstr(&tokhdr));
        }
        if (strcmp(r->method, "HEAD") == 0) {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        } else if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) {
            /* the body as POSTFIELDS (curl hashes it for the signature), sent
             * with the method's name */
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
            if (r->method[1] == 'U')
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        } else if (strcmp(r->method, "GET") != 0) {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
        }
        CURLcode cc = curl_easy_perform(h);
        curl_slist_free_all(hl);
        if (cc == CURLE_OK) {
            long code = 0;
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
            r->status = code;
        }
        count(r->method, r->got + r->errbody.len, r->body_len, attempt > 0);
        /* a body shorter than its Content-Length is a truncated response */
        bool truncated = cc == CURLE_OK && r->status >= 200 && r->status < 300 &&
                         strcmp(r->method, "HEAD") != 0 && r->have_length &&
                         r->content_length != r->got;
        bool retry = (cc != CURLE_OK && transient_curl(cc) && !r->overflow) || truncated ||
                     (cc == CURLE_OK && transient_status(r, conditional));
        if (!retry && r->overflow) {
            st = hs_err_set(err, HS_IO, "%s: %s answered more bytes than asked for (the "
                            "server ignored the Range header?)", what, r->method);
            break;
        }
        if (!retry && cc != CURLE_OK) {
            st = hs_err_set(err, HS_IO, "%s: %s %s failed: %s", what, r->method,
                            hs_buf_cstr(&url), curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
            break;
        }
        if (!retry)
            break;
        if (attempt + 1 >= cfg.max_attempts) {
            if (cc != CURLE_OK)
                st = hs_err_set(err, HS_IO, "%s: %s failed after %d attempts: %s", what,
                                r->method, attempt + 1,
                                curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
            else
                st = hs_err_set(err, HS_IO, "%s: %s failed after %d attempts: HTTP %ld%s",
                                what, r->method, attempt + 1, r->status,
                                truncated ? " (truncated body)" : "");
            break;
        }
        backoff(attempt);
    }
out:
    hs_buf_free(&url);
    hs_buf_free(&auth);
    hs_buf_free(&tokhdr);
    hs_buf_free(&tokbuf);
    pool_put(h, &cfg);
    return st;
}

/* An error for a non-2xx answer: 404 NOT_FOUND, 403 IO with the server's code. */
static hs_status http_error(s3_req *r, const char *what, hs_error *err)
{
    char code[64] = "", msg[256] = "";
    (void)s3_parse_error((const char *)r->errbody.data, r->errbody.len, code, sizeof code, msg,
                         sizeof msg);
    hs_status s = r->status == 404 ? HS_NOT_FOUND : r->status == 412 ? HS_CONFLICT : HS_IO;
    return hs_err_set(err, s, "%s: %s: HTTP %ld%s%s%s%s", what, r->method, r->status,
                      code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
}

static bool ok2xx(const s3_req *r) { return r->status >= 200 && r->status < 300; }

/* ---- the byte cache ----------------------------------------------------------- */

typedef struct cache_ent {
    struct cache_ent *prev, *next;   /* LRU list, most recent first */
    uint64_t hash;                   /* of ident */
    char *ident;                     /* "bucket/key\netag"; owned */
    uint64_t off;
    size_t len;
    uint8_t *data;                   /* owned */
} cache_ent;

static cache_ent *g_lru_head, *g_lru_tail;
static uint64_t g_cache_bytes;

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static void lru_unlink(cache_ent *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        g_lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        g_lru_tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(cache_ent *e)
{
    e->next = g_lru_head;
    e->prev = NULL;
    if (g_lru_head)
        g_lru_head->prev = e;
    g_lru_head = e;
    if (!g_lru_tail)
        g_lru_tail = e;
}

static void ent_free(cache_ent *e)
{
    hs_free(e->ident);
    hs_free(e->data);
    hs_free(e);
}

/* Copies [off, off+len) from a cached extent; true on a hit. */
static bool cache_get(const char *ident, uint64_t h, uint64_t off, size_t len, void *dst)
{
    bool hit = false;
    pthread_mutex_lock(&g_lock);
    for (cache_ent *e = g_lru_head; e; e = e->next) {
        if (e->hash == h && off >= e->off && off + len <= e->off + e->len &&
            strcmp(e->ident, ident) == 0) {
            memcpy(dst, e->data + (off - e->off), len);
            lru_unlink(e);
            lru_push(e);
            hit = true;
            break;
        }
    }
    if (hit)
        g_stats.cache_hits++;
    else
        g_stats.cache_misses++;
    pthread_mutex_unlock(&g_lock);
    return hit;
}

/* Takes ownership of data. */
static void cache_put(const char *ident, uint64_t h, uint64_t off, uint8_t *data, size_t len,
                      uint64_t budget)
{
    cache_ent *e = hs_calloc(1, sizeof *e);
    char *id = hs_strdup(ident);
    if (!e || !id || len > budget) {
        hs_free(e);
        hs_free(id);
        hs_free(data);
        return;
    }
    e->hash = h;
    e->ident = id;
    e->off = off;
    e->len = len;
    e->data = data;
    pthread_mutex_lock(&g_lock);
    lru_push(e);
    g_cache_bytes += len;
    while (g_cache_bytes > budget && g_lru_tail) {
        cache_ent *v = g_lru_tail;
        lru_unlink(v);
        g_cache_bytes -= v->len;
        ent_free(v);
    }
    g_stats.cache_bytes = g_cache_bytes;
    pthread_mutex_unlock(&g_lock);
}

static uint64_t cache_budget(void)
{
    return cfg_now().cache_budget;
}

void hs_s3_get_stats(hs_s3_stats *out)
{
    pthread_mutex_lock(&g_lock);
    *out = g_stats;
    out->cache_bytes = g_cache_bytes;
    pthread_mutex_unlock(&g_lock);
}

static void head_clear_locked(void);

static int g_async_running;
static pthread_cond_t g_async_cv;
static void inflight_after_fork_locked(void);

void hs_s3_reset(void)
{
    pthread_mutex_lock(&g_lock);
    inflight_after_fork_locked();
    while (g_async_running > 0)   /* asynchronous prefetches finish first */
        pthread_cond_wait(&g_async_cv, &g_lock);
    while (g_lru_head) {
        cache_ent *e = g_lru_head;
        lru_unlink(e);
        ent_free(e);
    }
    g_cache_bytes = 0;
    head_clear_locked();
    while (g_n_idle > 0)
        curl_easy_cleanup(g_idle[--g_n_idle]);
    hs_free(g_cfg.session_token);
    memset(&g_cfg, 0, sizeof g_cfg);
    g_loaded = false;
    memset(&g_stats, 0, sizeof g_stats);
    pthread_mutex_unlock(&g_lock);
}

/* ---- HEAD cache ---------------------------------------------------------------- */

/* The size and ETag of objects opened recently, so a warm query opens its
 * data files, manifests and sidecars without a HEAD each.  Tables write
 * those once under unique names; an object replaced anyway is caught by the
 * If-Match of the next GET (412: "changed since it was opened"), which also
 * drops its entry here.  Set associative (below), bounded; entries older than
 * HS_S3_HEAD_CACHE_S seconds (default 3600; 0 = off) are ignored. */
#define HEAD_SLOTS 4096
typedef struct head_ent {
    uint64_t hash;
    char *key;          /* "bucket/key"; owned */
    uint64_t size;
    char etag[72];
    int64_t when;       /* CLOCK_MONOTONIC seconds */
} head_ent;
static head_ent g_heads[HEAD_SLOTS];

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* 4-way set associative: a set's ways are g_heads[set * 4 .. set * 4 + 3] (a
 * direct-mapped table let two objects of one query evict each other, and
 * every lookup of the decoded-object caches then cost a GET). */
#define HEAD_WAYS 4
static head_ent *head_find_locked(const char *key, uint64_t h)
{
    head_ent *set = &g_heads[(h % (HEAD_SLOTS / HEAD_WAYS)) * HEAD_WAYS];
    for (int i = 0; i < HEAD_WAYS; i++)
        if (set[i].key && set[i].hash == h && strcmp(set[i].key, key) == 0)
            return &set[i];
    return NULL;
}

static bool head_get(const char *key, uint64_t h, int64_t ttl, uint64_t *size, char *etag)
{
    if (ttl <= 0)
        return false;
    bool hit = false;
    pthread_mutex_lock(&g_lock);
    head_ent *e = head_find_locked(key, h);
    if (e && mono_s() - e->when < ttl) {
        *size = e->size;
        memcpy(etag, e->etag, sizeof e->etag);
        hit = true;
        g_stats.head_hits++;
    }
    pthread_mutex_unlock(&g_lock);
    return hit;
}

static void head_put(const char *key, uint64_t h, uint64_t size, const char *etag)
{
    char *k = hs_strdup(key);
    if (!k)
        return;
    pthread_mutex_lock(&g_lock);
    head_ent *e = head_find_locked(key, h);
    if (!e) {   /* a free way, else the least recently stored */
        head_ent *set = &g_heads[(h % (HEAD_SLOTS / HEAD_WAYS)) * HEAD_WAYS];
        e = &set[0];
        for (int i = 0; i < HEAD_WAYS; i++) {
            if (!set[i].key) {
                e = &set[i];
                break;
            }
            if (set[i].when < e->when)
                e = &set[i];
        }
    }
    hs_free(e->key);
    e->key = k;
    e->hash = h;
    e->size = size;
    copy_str(e->etag, sizeof e->etag, etag);
    e->when = mono_s();
    pthread_mutex_unlock(&g_lock);
}

static void head_drop(const char *key, uint64_t h)
{
    pthread_mutex_lock(&g_lock);
    head_ent *e = head_find_locked(key, h);
    if (e) {
        hs_free(e->key);
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&g_lock);
}

static void head_clear_locked(void)
{
    for (int i = 0; i < HEAD_SLOTS; i++) {
        hs_free(g_heads[i].key);
        memset(&g_heads[i], 0, sizeof g_heads[i]);
    }
}

/* ---- reading ------------------------------------------------------------------- */

typedef struct s3_file {
    hs_file base;
    s3_loc loc;
    char *uri;      /* owned; loc.key points into it */
    char *ident;    /* cache key; owned */
    uint64_t ident_hash;
    char *hkey;     /* HEAD cache key "bucket/key"; owned */
    uint64_t hkey_hash;
} s3_file;

static hs_status head(const s3_loc *loc, const char *what, s3_req *r, hs_error *err)
{
    memset(r, 0, sizeof *r);
    r->method = "HEAD";
    r->bucket = loc->bucket;
    r->key = loc->key;
    return s3_do(r, what, err);
}

static hs_status get_range(s3_file *sf, uint64_t off, size_t len, void *dst, hs_error *err)
{
    char range[64], ifm[100];
    snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = sf->loc.bucket;
    r.key = sf->loc.key;
    int nh = 0;
    r.hdr[nh++] = range;
    if (sf->base.id.version[0]) {
        snprintf(ifm, sizeof ifm, "If-Match: %s", sf->base.id.version);
        r.hdr[nh++] = ifm;
    }
    r.dst = dst;
    r.dst_cap = len;
    hs_status st = s3_do(&r, sf->uri, err);
    if (st == HS_OK && r.status == 412) {
        head_drop(sf->hkey, sf->hkey_hash);
        st = hs_err_set(err, HS_IO, "%s: object changed since it was opened (ETag %s)",
                        sf->uri, sf->base.id.version);
    }
    else if (st == HS_OK && !ok2xx(&r))
        st = http_error(&r, sf->uri, err);
    else if (st == HS_OK && r.status == 200 && !(off == 0 && len == sf->base.size))
        st = hs_err_set(err, HS_IO, "%s: the server ignored the Range header", sf->uri);
    else if (st == HS_OK && r.got != len)
        st = hs_err_set(err, HS_IO, "%s: short read: %zu of %zu bytes at offset %" PRIu64,
                        sf->uri, r.got, len, off);
    req_done(&r);
    return st;
}

/* Whether block [a, min(a + S3_BLOCK, size)) of the object is cached; copies
 * the part of it inside [off, off + len) into dst (dst holds [off, off+len)). */
static bool block_cached(const s3_file *sf, uint64_t a, uint64_t off, size_t len, uint8_t *dst)
{
    uint64_t e = a + S3_BLOCK < sf->base.size ? a + S3_BLOCK : sf->base.size;
    uint64_t lo = a > off ? a : off, hi = e < off + len ? e : off + len;
    if (hi <= lo)
        return true;
    return cache_get(sf->ident, sf->ident_hash, lo, (size_t)(hi - lo), dst + (lo - off));
}

static hs_status s3_read_at(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err)
{
    s3_file *sf = (s3_file *)f;
    uint64_t budget = cache_budget();
    if (budget == 0 || len > S3_CACHE_MAX_READ)
        return get_range(sf, off, len, dst, err);
    if (cache_get(sf->ident, sf->ident_hash, off, len, dst))
        return HS_OK;
    uint64_t a = off / S3_BLOCK * S3_BLOCK;
    uint64_t b = (off + len + S3_BLOCK - 1) / S3_BLOCK * S3_BLOCK;
    if (b > f->size)
        b = f->size;
    /* the range may straddle cached extents (a footer's tail block, an
     * earlier read): serve the cached blocks at both ends, fetch the rest */
    while (a < b && block_cached(sf, a, off, len, dst))
        a += S3_BLOCK;
    while (b > a && block_cached(sf, (b - 1) / S3_BLOCK * S3_BLOCK, off, len, dst))
        b = (b - 1) / S3_BLOCK * S3_BLOCK;
    if (a >= b)
        return HS_OK;
    uint64_t need_a = a, need_b = b;   /* what dst still lacks, within [off, off+len) */
    if (b - a < S3_READAHEAD) {        /* read ahead, but not over cached blocks */
        uint64_t ra = b;
        while (ra - a < S3_READAHEAD && ra < f->size) {
            uint8_t probe;
            if (cache_get(sf->ident, sf->ident_hash, ra, 1, &probe))
                break;
            ra += S3_BLOCK;
        }
        b = ra > f->size ? f->size : ra;
    }
    size_t n = (size_t)(b - a);
    uint8_t *blk = hs_malloc(n);
    if (!blk)
        return get_range(sf, off, len, dst, err);
    hs_status st = get_range(sf, a, n, blk, err);
    if (st != HS_OK) {
        hs_free(blk);
        return st;
    }
    uint64_t lo = need_a > off ? need_a : off;
    uint64_t hi = need_b < off + len ? need_b : off + len;
    if (hi > lo)
        memcpy((uint8_t *)dst + (lo - off), blk + (lo - a), (size_t)(hi - lo));
    cache_put(sf->ident, sf->ident_hash, a, blk, n, budget);
    return HS_OK;
}

static void s3_close(hs_file *f)
{
    s3_file *sf = (s3_file *)f;
    hs_free(sf->uri);
    hs_free(sf->ident);
    hs_free(sf->hkey);
    hs_free(sf);
}

static hs_status s3_restat(hs_file *f, hs_file_id *id, uint64_t *size, hs_error *err)
{
    s3_file *sf = (s3_file *)f;
    char etag[72];
    uint64_t sz;
    /* a cached identity is as good as a HEAD: any change this process made
     * dropped it, and a change by others fails the next GET's If-Match */
    if (head_get(sf->hkey, sf->hkey_hash, cfg_now().head_ttl_s, &sz, etag)) {
        memset(id, 0, sizeof *id);
        id->kind = HS_FILE_ID_OBJECT;
        copy_str(id->version, sizeof id->version, etag);
        *size = sz;
        return HS_OK;
    }
    s3_req r;
    hs_status st = head(&sf->loc, sf->uri, &r, err);
    if (st == HS_OK && !ok2xx(&r))
        st = r.status == 404 ? hs_err_set(err, HS_IO, "%s: object removed since it was opened",
                                          sf->uri)
                             : http_error(&r, sf->uri, err);
    if (st == HS_OK) {
        memset(id, 0, sizeof *id);
        id->kind = HS_FILE_ID_OBJECT;
        copy_str(id->version, sizeof id->version, r.etag);
        *size = r.content_length;
    }
    req_done(&r);
    return st;
}

static const hs_file_vtbl s3_vtbl = { s3_read_at, s3_close, NULL, s3_restat };

/* GET bytes=-S3_BLOCK.  *known = true with *size, etag set (and the tail
 * cached) when the answer tells them; false (HS_OK) to fall back to a HEAD:
 * an empty object (416), a server that ignored the Range on a large object. */
static hs_status open_by_tail(s3_file *sf, uint64_t *size, char *etag, bool *known,
                              hs_error *err)
{
    *known = false;
    uint8_t *blk = hs_malloc(S3_BLOCK);
    if (!blk)
        return HS_OK;
    char range[48];
    snprintf(range, sizeof range, "Range: bytes=-%" PRIu64, S3_BLOCK);
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = sf->loc.bucket;
    r.key = sf->loc.key;
    r.hdr[0] = range;
    r.dst = blk;
    r.dst_cap = S3_BLOCK;
    hs_error e2 = { 0 };
    hs_status st = s3_do(&r, sf->uri, &e2);
    if (st == HS_OK && r.status == 404) {
        st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", sf->uri);
    } else if (st == HS_OK && ok2xx(&r) && r.etag[0]) {
        uint64_t total = r.status == 206 && r.have_total ? r.total_size
                         : r.status == 200 ? (uint64_t)r.got : UINT64_MAX;
        if (total != UINT64_MAX && r.got <= total && (r.got == total || r.got == S3_BLOCK)) {
            *size = total;
            copy_str(etag, 72, r.etag);
            *known = true;
            head_put(sf->hkey, sf->hkey_hash, total, r.etag);
            size_t n = strlen(sf->hkey) + strlen(r.etag) + 2;
            char *ident = hs_malloc(n);
            if (ident && r.got > 0) {
                snprintf(ident, n, "%s\n%s", sf->hkey, r.etag);
                cache_put(ident, fnv(ident), total - r.got, blk, r.got, cfg_now().cache_budget);
                blk = NULL;   /* the cache owns it */
            }
            hs_free(ident);
        }
    } else if (st != HS_OK && r.status == 0 && !r.overflow) {
        if (err && err->code == HS_OK)
            *err = e2;   /* transport failure after the retries: report it */
    } else {
        st = HS_OK;      /* 416, an ignored Range, a missing ETag: ask with HEAD */
    }
    req_done(&r);
    hs_free(blk);
    return st;
}

/* Opens in flight: an open of an object whose tail another thread (an
 * asynchronous prefetch) is fetching waits for that answer instead of
 * sending the same GET again.  Bounded; with no free slot an open just goes
 * ahead.  Slots and waits use g_lock. */
#define INFLIGHT_SLOTS 64
static uint64_t g_inflight[INFLIGHT_SLOTS];   /* hashes of "bucket/key"; 0 = free */
static pthread_cond_t g_inflight_cv = PTHREAD_COND_INITIALIZER;

/* >= 0: this thread fetches (a slot to leave); -1: it waited for another
 * thread's fetch (look in the caches again); -2: no slot, fetch anyway. */
static uint64_t g_inflight_gen;   /* hs_fork_generation() the slots belong to */
static int g_async_running;
static void inflight_after_fork_locked(void)
{
    /* a forked child has none of the threads that held slots or ran jobs */
    uint64_t gen = hs_fork_generation();
    if (gen != g_inflight_gen) {
        memset(g_inflight, 0, sizeof g_inflight);
        g_async_running = 0;
        g_inflight_gen = gen;
    }
}

static int inflight_enter(uint64_t h)
{
    if (h == 0)
        h = 1;
    pthread_mutex_lock(&g_lock);
    inflight_after_fork_locked();
    bool waited = false;
    for (;;) {
        int busy = -1;
        for (int i = 0; i < INFLIGHT_SLOTS && busy < 0; i++)
            if (g_inflight[i] == h)
                busy = i;
        if (busy < 0)
            break;
        waited = true;
        pthread_cond_wait(&g_inflight_cv, &g_lock);
    }
    int slot = -2;
    if (waited)
        slot = -1;
    else
        for (int i = 0; i < INFLIGHT_SLOTS && slot < 0; i++)
            if (g_inflight[i] == 0) {
                g_inflight[i] = h;
                slot = i;
            }
    pthread_mutex_unlock(&g_lock);
    return slot;
}

static void inflight_leave(int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&g_lock);
    g_inflight[slot] = 0;
    pthread_cond_broadcast(&g_inflight_cv);
    pthread_mutex_unlock(&g_lock);
}

hs_status hs_s3_open(const char *uri, hs_file **out, hs_error *err)
{
    *out = NULL;
    s3_file *sf = hs_calloc(1, sizeof *sf);
    if (!sf || !(sf->uri = hs_strdup(uri))) {
        hs_free(sf);
        return hs_err_nomem(err, strlen(uri));
    }
    hs_status st = parse_uri(sf->uri, &sf->loc, err);
    if (st == HS_OK && !sf->loc.key[0])
        st = hs_err_set(err, HS_INVALID, "%s: names a bucket, not an object", uri);
    size_t hn = st == HS_OK ? strlen(sf->loc.bucket) + strlen(sf->loc.key) + 2 : 0;
    if (st == HS_OK && !(sf->hkey = hs_malloc(hn)))
        st = hs_err_nomem(err, hn);
    uint64_t size = 0;
    char etag[72] = "";
    s3_req r = { 0 };
    if (st == HS_OK) {
        snprintf(sf->hkey, hn, "%s/%s", sf->loc.bucket, sf->loc.key);
        sf->hkey_hash = fnv(sf->hkey);
        s3_config cfg = cfg_now();
        bool known = head_get(sf->hkey, sf->hkey_hash, cfg.head_ttl_s, &size, etag);
        if (!known && cfg.cache_budget > 0) {
            /* one GET of the last block instead of a HEAD: size and ETag from
             * its headers, and the tail (a Parquet footer, or all of a small
             * manifest or sidecar) into the byte cache */
            int slot = inflight_enter(sf->hkey_hash);
            if (slot == -1)   /* a prefetch just fetched it */
                known = head_get(sf->hkey, sf->hkey_hash, cfg.head_ttl_s, &size, etag);
            if (!known)
                st = open_by_tail(sf, &size, etag, &known, err);
            inflight_leave(slot);
        }
        if (st == HS_OK && !known) {
            st = head(&sf->loc, uri, &r, err);
            if (st == HS_OK && r.status == 404)
                st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", uri);
            else if (st == HS_OK && !ok2xx(&r))
                st = http_error(&r, uri, err);
            else if (st == HS_OK && !r.have_length)
                st = hs_err_set(err, HS_IO, "%s: HEAD gave no Content-Length", uri);
            if (st == HS_OK) {
                size = r.content_length;
                copy_str(etag, sizeof etag, r.etag);
                if (etag[0])
                    head_put(sf->hkey, sf->hkey_hash, size, etag);
            }
        }
    }
    if (st == HS_OK) {
        sf->base.vt = &s3_vtbl;
        sf->base.size = size;
        sf->base.id.kind = HS_FILE_ID_OBJECT;
        copy_str(sf->base.id.version, sizeof sf->base.id.version, etag);
        sf->base.name = sf->uri;   /* s3_close frees uri; base.name is not freed twice */
        size_t n = hn + strlen(etag) + 2;
        sf->ident = hs_malloc(n);
        if (!sf->ident)
            st = hs_err_nomem(err, n);
        else {
            snprintf(sf->ident, n, "%s\n%s", sf->hkey, etag);
            sf->ident_hash = fnv(sf->ident);
        }
    }
    req_done(&r);
    if (st != HS_OK) {
        hs_free(sf->ident);
        hs_free(sf->hkey);
        hs_free(sf->uri);
        hs_free(sf);
        return st;
    }
    *out = &sf->base;
    return HS_OK;
}

/* This process changed the object: its cached HEAD is stale. */
static void forget_head(const s3_loc *loc)
{
    char key[1100];
    int n = snprintf(key, sizeof key, "%s/%s", loc->bucket, loc->key);
    if (n > 0 && (size_t)n < sizeof key)
        head_drop(key, fnv(key));
}

/* A whole object from the caches without a request: its size and ETag in the
 * HEAD cache (trusted, as for an open) and all of its bytes in one cached
 * extent (the tail block of a small object that was opened: a sidecar,
 * manifest or registry segment).  Objects only ever read with read_all
 * (version-hint.text, metadata JSON) are never in the HEAD cache. */
static bool read_all_cached(const s3_loc *loc, hs_buf *out)
{
    s3_config cfg = cfg_now();
    if (cfg.cache_budget == 0)
        return false;
    char hkey[1100];
    int hn = snprintf(hkey, sizeof hkey, "%s/%s", loc->bucket, loc->key);
    if (hn <= 0 || (size_t)hn >= sizeof hkey)
        return false;
    uint64_t size = 0;
    char etag[72];
    if (!head_get(hkey, fnv(hkey), cfg.head_ttl_s, &size, etag) || size > S3_BLOCK)
        return false;
    char ident[1200];
    int n = snprintf(ident, sizeof ident, "%s\n%s", hkey, etag);
    if (n <= 0 || (size_t)n >= sizeof ident || hs_buf_reserve(out, (size_t)size + 1) != HS_OK)
        return false;
    if (size > 0 && !cache_get(ident, fnv(ident), 0, (size_t)size, out->data))
        return false;
    out->len = (size_t)size;
    return true;
}

hs_status hs_s3_read_all(const char *uri, hs_buf *out, hs_error *err)
{
    hs_buf_reset(out);
    s3_loc loc;
    HS_TRY(parse_uri(uri, &loc, err));
    if (!loc.key[0])
        return hs_err_set(err, HS_INVALID, "%s: names a bucket, not an object", uri);
    if (read_all_cached(&loc, out))
        return HS_OK;
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = loc.bucket;
    r.key = loc.key;
    r.resp = out;
    hs_status st = s3_do(&r, uri, err);
    if (st == HS_OK && r.status == 404)
        st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", uri);
    else if (st == HS_OK && !ok2xx(&r))
        st = http_error(&r, uri, err);
    req_done(&r);
    return st;
}

hs_status hs_s3_stat(const char *uri, bool *exists, uint64_t *size, hs_error *err)
{
    return hs_s3_stat_mtime(uri, exists, size, NULL, err);
}

hs_status hs_s3_stat_mtime(const char *uri, bool *exists, uint64_t *size, int64_t *mtime_ms,
                           hs_error *err)
{
    if (exists)
        *exists = false;
    if (mtime_ms)
        *mtime_ms = -1;
    s3_loc loc;
    HS_TRY(parse_uri(uri, &loc, err));
    s3_req r;
    hs_status st = head(&loc, uri, &r, err);
    if (st == HS_OK && ok2xx(&r)) {
        if (exists)
            *exists = true;
        if (size)
            *size = r.content_length;
        if (mtime_ms && r.last_modified >= 0)
            *mtime_ms = r.last_modified * 1000;
    } else if (st == HS_OK && r.status != 404) {
        st = http_error(&r, uri, err);
    }
    req_done(&r);
    return st;
}

hs_status hs_s3_delete(const char *uri, hs_error *err)
{
    s3_loc loc;
    HS_TRY(parse_uri(uri, &loc, err));
    s3_req r = { 0 };
    r.method = "DELETE";
    r.bucket = loc.bucket;
    r.key = loc.key;
    hs_status st = s3_do(&r, uri, err);
    if (st == HS_OK && !ok2xx(&r) && r.status != 404)
        st = http_error(&r, uri, err);
    req_done(&r);
    forget_head(&loc);
    return st;
}

/* ---- writing ------------------------------------------------------------------- */

typedef struct s3_wfile {
    hs_wfile base;
    s3_loc loc;
    char *uri;            /* owned; loc.key points into it */
    bool exclusive;
    hs_buf buf;           /* bytes not yet uploaded */
    char *upload_id;      /* multipart upload in progress, or NULL */
    char **etags;         /* ETag of each uploaded part */
    int n_parts;
    uint64_t uploaded;
} s3_wfile;

static void wfree(s3_wfile *w)
{
    for (int i = 0; i < w->n_parts; i++)
        hs_free(w->etags[i]);
    hs_free(w->etags);
    hs_free(w->upload_id);
    hs_buf_free(&w->buf);
    hs_free(w->uri);
    hs_free(w);
}

static hs_status put_object(s3_wfile *w, hs_error *err);

/* Reads the object back after an ambiguous 412 on a retried conditional PUT:
 * true when it holds exactly our bytes. */
static bool holds_our_bytes(s3_wfile *w)
{
    hs_file *f = NULL;
    hs_error e2 = { 0 };
    bool same = false;
    if (hs_s3_open(w->uri, &f, &e2) == HS_OK && f->size == w->buf.len) {
        uint8_t *tmp = hs_malloc(w->buf.len ? w->buf.len : 1);
        s3_file *sf = (s3_file *)f;
        if (tmp && (w->buf.len == 0 || get_range(sf, 0, w->buf.len, tmp, &e2) == HS_OK))
            same = w->buf.len == 0 || memcmp(tmp, w->buf.data, w->buf.len) == 0;
        hs_free(tmp);
    }
    hs_file_close(f);
    return same;
}

static hs_status put_object(s3_wfile *w, hs_error *err)
{
    bool conditional = cfg_now().conditional_writes;
    if (w->exclusive && !conditional) {
        /* lock-based fallback: the caller holds the table's commit lock */
        bool exists = false;
        HS_TRY(hs_s3_stat(w->uri, &exists, NULL, err));
        if (exists)
            return hs_err_set(err, HS_CONFLICT, "%s: already exists", w->uri);
    }
    s3_req r = { 0 };
    r.method = "PUT";
    r.bucket = w->loc.bucket;
    r.key = w->loc.key;
    r.body = w->buf.data;
    r.body_len = w->buf.len;
    if (w->exclusive && conditional)
        r.hdr[0] = "If-None-Match: *";
    hs_status st = s3_do(&r, w->uri, err);
    if (st == HS_OK && r.status == 412 && w->exclusive) {
        /* not only after our own retries: curl itself resends a request
         * whose reused connection died without an answer */
        if (holds_our_bytes(w))
            st = HS_OK;   /* our earlier attempt landed; its answer was lost */
        else
            st = hs_err_set(err, HS_CONFLICT, "%s: already exists (conditional PUT refused)",
                            w->uri);
    } else if (st == HS_OK && r.status == 501 && w->exclusive) {
        st = hs_err_set(err, HS_UNSUPPORTED, "%s: the store does not support conditional "
                        "writes (If-None-Match); set HS_S3_CONDITIONAL_WRITES=0 and "
                        "HS_S3_LOCK_DIR (docs/storage.md)", w->uri);
    } else if (st == HS_OK && !ok2xx(&r)) {
        st = http_error(&r, w->uri, err);
    }
    req_done(&r);
    return st;
}

static hs_status upload_part(s3_wfile *w, const uint8_t *p, size_t n, hs_error *err)
{
    if (w->n_parts >= S3_MAX_PARTS)
        return hs_err_set(err, HS_INVALID, "%s: more than %d parts (raise HS_S3_PART_MB)",
                          w->uri, S3_MAX_PARTS);
    if (!w->upload_id) {
        s3_req r = { 0 };
        hs_buf body = { 0 };
        r.method = "POST";
        r.bucket = w->loc.bucket;
        r.key = w->loc.key;
        r.query = "uploads=";
        r.resp = &body;
        hs_status st = s3_do(&r, w->uri, err);
        if (st == HS_OK && !ok2xx(&r))
            st = http_error(&r, w->uri, err);
        if (st == HS_OK &&
            !(w->upload_id = s3_xml_text((const char *)body.data, body.len, "UploadId")))
            st = hs_err_set(err, HS_IO, "%s: CreateMultipartUpload answered without an "
                            "UploadId", w->uri);
        req_done(&r);
        hs_buf_free(&body);
        HS_TRY(st);
    }
    char **ne = hs_realloc(w->etags, (size_t)(w->n_parts + 1) * sizeof *ne);
    if (!ne)
        return hs_err_nomem(err, 8);
    w->etags = ne;
    hs_buf q = { 0 };
    if (hs_buf_printf(&q, "partNumber=%d&uploadId=", w->n_parts + 1) != HS_OK ||
        url_encode(&q, w->upload_id, false) != HS_OK) {
        hs_buf_free(&q);
        return hs_err_nomem(err, 64);
    }
    s3_req r = { 0 };
    r.method = "PUT";
    r.bucket = w->loc.bucket;
    r.key = w->loc.key;
    r.query = hs_buf_cstr(&q);
    r.body = p;
    r.body_len = n;
    hs_status st = s3_do(&r, w->uri, err);
    if (st == HS_OK && !ok2xx(&r))
        st = http_error(&r, w->uri, err);
    if (st == HS_OK && !r.etag[0])
        st = hs_err_set(err, HS_IO, "%s: UploadPart %d answered without an ETag", w->uri,
                        w->n_parts + 1);
    if (st == HS_OK) {
        if (!(w->etags[w->n_parts] = hs_strdup(r.etag)))
            st = hs_err_nomem(err, 72);
        else
            w->n_parts++;
    }
    req_done(&r);
    hs_buf_free(&q);
    if (st == HS_OK)
        w->uploaded += n;
    return st;
}

static hs_status complete_upload(s3_wfile *w, hs_error *err)
{
    hs_buf body = { 0 }, q = { 0 }, resp = { 0 };
    hs_status st = HS_OK;
    if (hs_buf_puts(&body, "<CompleteMultipartUpload>") != HS_OK)
        st = hs_err_nomem(err, 64);
    for (int i = 0; st == HS_OK && i < w->n_parts; i++) {
        /* ETags are "hex" in quotes: nothing to escape for XML but & and < */
        if (hs_buf_printf(&body, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1) != HS_OK)
            st = hs_err_nomem(err, 64);
        for (const char *c = w->etags[i]; st == HS_OK && *c; c++)
            if ((*c == '&' ? hs_buf_puts(&body, "&amp;")
                 : *c == '<' ? hs_buf_puts(&body, "&lt;") : hs_buf_append_byte(&body, (uint8_t)*c)) != HS_OK)
                st = hs_err_nomem(err, 64);
        if (st == HS_OK && hs_buf_puts(&body, "</ETag></Part>") != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK && (hs_buf_puts(&body, "</CompleteMultipartUpload>") != HS_OK ||
                        hs_buf_puts(&q, "uploadId=") != HS_OK ||
                        url_encode(&q, w->upload_id, false) != HS_OK))
        st = hs_err_nomem(err, 64);
    s3_req r = { 0 };
    if (st == HS_OK) {
        r.method = "POST";
        r.bucket = w->loc.bucket;
        r.key = w->loc.key;
        r.query = hs_buf_cstr(&q);
        r.body = body.data;
        r.body_len = body.len;
        r.resp = &resp;
        st = s3_do(&r, w->uri, err);
    }
    if (st == HS_OK && r.status == 404) {
        /* NoSuchUpload on a resend (ours or curl's): an earlier attempt
         * completed it */
        uint64_t size = 0;
        bool exists = false;
        hs_error e2 = { 0 };
        if (hs_s3_stat(w->uri, &exists, &size, &e2) != HS_OK || !exists || size != w->uploaded)
            st = http_error(&r, w->uri, err);
    } else if (st == HS_OK && !ok2xx(&r)) {
        st = http_error(&r, w->uri, err);
    } else if (st == HS_OK) {
        /* S3 may answer 200 and report the failure in the body */
        char code[64], msg[256];
        if (s3_parse_error((const char *)resp.data, resp.len, code, sizeof code, msg, sizeof msg))
            st = hs_err_set(err, HS_IO, "%s: CompleteMultipartUpload: %s: %s", w->uri, code, msg);
    }
    req_done(&r);
    hs_buf_free(&body);
    hs_buf_free(&q);
    hs_buf_free(&resp);
    return st;
}

static void abort_upload(s3_wfile *w)
{
    if (!w->upload_id)
        return;
    hs_buf q = { 0 };
    if (hs_buf_puts(&q, "uploadId=") == HS_OK && url_encode(&q, w->upload_id, false) == HS_OK) {
        s3_req r = { 0 };
        r.method = "DELETE";
        r.bucket = w->loc.bucket;
        r.key = w->loc.key;
        r.query = hs_buf_cstr(&q);
        hs_error ignored = { 0 };
        (void)!s3_do(&r, w->uri, &ignored);
        req_done(&r);
    }
    hs_buf_free(&q);
}

static hs_status s3_wwrite(hs_wfile *f, const void *p, size_t n, hs_error *err)
{
    s3_wfile *w = (s3_wfile *)f;
    if (hs_buf_append(&w->buf, p, n) != HS_OK)
        return hs_err_nomem(err, n);
    if (w->exclusive)
        return HS_OK;   /* one conditional PUT at close */
    size_t part = cfg_now().part_size;
    if (w->buf.len < part)
        return HS_OK;
    size_t done = 0;
    while (w->buf.len - done >= part) {
        HS_TRY(upload_part(w, w->buf.data + done, part, err));
        done += part;
    }
    memmove(w->buf.data, w->buf.data + done, w->buf.len - done);
    w->buf.len -= done;
    return HS_OK;
}

static hs_status s3_wclose(hs_wfile *f, hs_error *err)
{
    s3_wfile *w = (s3_wfile *)f;
    hs_status st;
    forget_head(&w->loc);
    if (w->upload_id) {
        st = w->buf.len ? upload_part(w, w->buf.data, w->buf.len, err) : HS_OK;
        if (st == HS_OK)
            st = complete_upload(w, err);
        if (st != HS_OK)
            abort_upload(w);
    } else {
        st = put_object(w, err);
    }
    wfree(w);
    return st;
}

static void s3_wabort(hs_wfile *f)
{
    s3_wfile *w = (s3_wfile *)f;
    abort_upload(w);
    wfree(w);
}

static const hs_wfile_vtbl s3_wvtbl = { s3_wwrite, s3_wclose, s3_wabort };

hs_status hs_s3_create(const char *uri, int flags, hs_wfile **out, hs_error *err)
{
    *out = NULL;
    s3_wfile *w = hs_calloc(1, sizeof *w);
    if (!w || !(w->uri = hs_strdup(uri))) {
        hs_free(w);
        return hs_err_nomem(err, strlen(uri));
    }
    hs_status st = parse_uri(w->uri, &w->loc, err);
    if (st == HS_OK && (!w->loc.key[0] || w->loc.key[strlen(w->loc.key) - 1] == '/'))
        st = hs_err_set(err, HS_INVALID, "%s: names no object (empty key or ends with '/')", uri);
    if (st != HS_OK) {
        wfree(w);
        return st;
    }
    w->base.vt = &s3_wvtbl;
    w->base.name = w->uri;   /* freed by wfree, once */
    w->exclusive = (flags & HS_WFILE_EXCLUSIVE) != 0;
    *out = &w->base;
    return HS_OK;
}

/* ---- listing --------------------------------------------------------------------- */

static hs_status push_name(char ***v, size_t *n, size_t *cap, const char *s, size_t len,
                           hs_error *err)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char **nv = hs_realloc(*v, nc * sizeof *nv);
        if (!nv)
            return hs_err_nomem(err, nc * sizeof *nv);
        *v = nv;
        *cap = nc;
    }
    if (!((*v)[*n] = hs_strndup(s, len)))
        return hs_err_nomem(err, len);
    (*n)++;
    return HS_OK;
}

hs_status hs_s3_list(const char *uri, bool recursive, char ***names, size_t *n_out,
                     hs_error *err)
{
    *names = NULL;
    *n_out = 0;
    s3_loc loc;
    HS_TRY(parse_uri(uri, &loc, err));
    hs_buf prefix = { 0 };
    if (hs_buf_puts(&prefix, loc.key) != HS_OK)
        return hs_err_nomem(err, strlen(loc.key));
    if (prefix.len && prefix.data[prefix.len - 1] != '/' &&
        hs_buf_append_byte(&prefix, '/') != HS_OK) {
        hs_buf_free(&prefix);
        return hs_err_nomem(err, 1);
    }
    const char *pfx = hs_buf_cstr(&prefix);
    size_t plen = prefix.len;
    char **v = NULL, *token = NULL;
    size_t n = 0, cap = 0;
    hs_status st = HS_OK;
    hs_buf q = { 0 }, body = { 0 };
    int max_keys = (int)env_int("HS_S3_LIST_MAX_KEYS", 0, 1, 1000);   /* tests: small pages */
    for (int page = 0; st == HS_OK; page++) {
        hs_buf_reset(&q);
        if ((token && (hs_buf_puts(&q, "continuation-token=") != HS_OK ||
                       url_encode(&q, token, false) != HS_OK || hs_buf_puts(&q, "&") != HS_OK)) ||
            (!recursive && hs_buf_puts(&q, "delimiter=%2F&") != HS_OK) ||
            hs_buf_puts(&q, "list-type=2&") != HS_OK ||
            (max_keys && hs_buf_printf(&q, "max-keys=%d&", max_keys) != HS_OK) ||
            hs_buf_puts(&q, "prefix=") != HS_OK || url_encode(&q, pfx, false) != HS_OK) {
            st = hs_err_nomem(err, 64);
            break;
        }
        s3_req r = { 0 };
        r.method = "GET";
        r.bucket = loc.bucket;
        r.key = "";
        r.query = hs_buf_cstr(&q);
        r.resp = &body;
        st = s3_do(&r, uri, err);
        if (st == HS_OK && r.status == 404)
            st = http_error(&r, uri, err);   /* NoSuchBucket */
        else if (st == HS_OK && !ok2xx(&r))
            st = http_error(&r, uri, err);
        req_done(&r);
        s3_list_page pg = { 0 };
        if (st == HS_OK)
            st = s3_parse_list((const char *)body.data, body.len, &pg, err);
        for (size_t i = 0; st == HS_OK && i < pg.n_keys; i++) {
            const char *k = pg.keys[i];
            if (strncmp(k, pfx, plen) != 0 || !k[plen])
                continue;   /* the "directory marker" itself, or outside the prefix */
            st = push_name(&v, &n, &cap, k + plen, strlen(k + plen), err);
        }
        for (size_t i = 0; st == HS_OK && i < pg.n_prefixes; i++) {
            const char *k = pg.prefixes[i];
            size_t kl = strlen(k);
            if (strncmp(k, pfx, plen) != 0 || kl <= plen)
                continue;
            if (k[kl - 1] == '/')
                kl--;
            st = push_name(&v, &n, &cap, k + plen, kl - plen, err);
        }
        bool more = st == HS_OK && pg.truncated && pg.next_token && pg.next_token[0];
        hs_free(token);
        token = more ? pg.next_token : NULL;
        if (more)
            pg.next_token = NULL;
        s3_list_page_free(&pg);
        if (!more)
            break;
        if (page > 1000000) {
            st = hs_err_set(err, HS_IO, "%s: listing does not end", uri);
            break;
        }
    }
    hs_free(token);
    hs_buf_free(&q);
    hs_buf_free(&body);
    hs_buf_free(&prefix);
    if (st != HS_OK) {
        for (size_t i = 0; i < n; i++)
            hs_free(v[i]);
        hs_free(v);
        return st;
    }
    *names = v;
    *n_out = n;
    return HS_OK;
}

/* ---- decoders ------------------------------------------------------------------ */

/* Finds the next element <name> (exactly: followed by '>' or whitespace or
 * '/') in [p, end); *content and *clen span its text up to the matching
 * </name>.  Elements we read are never nested in themselves.  Self-closing
 * <name/> gives an empty content. */
static bool xml_find(const char *p, const char *end, const char *name, const char **content,
                     size_t *clen, const char **after)
{
    size_t nl = strlen(name);
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt)
            return false;
        const char *q = lt + 1;
        if ((size_t)(end - q) > nl && memcmp(q, name, nl) == 0 &&
            (q[nl] == '>' || q[nl] == ' ' || q[nl] == '\t' || q[nl] == '\n' || q[nl] == '\r' ||
             q[nl] == '/')) {
            const char *gt = memchr(q + nl, '>', (size_t)(end - (q + nl)));
            if (!gt)
                return false;
            if (gt[-1] == '/') {
                *content = gt + 1;
                *clen = 0;
                *after = gt + 1;
                return true;
            }
            const char *c = gt + 1, *s = c;
            while (s < end) {
                const char *l2 = memchr(s, '<', (size_t)(end - s));
                if (!l2)
                    return false;
                if ((size_t)(end - l2) >= nl + 3 && l2[1] == '/' &&
                    memcmp(l2 + 2, name, nl) == 0 && l2[2 + nl] == '>') {
                    *content = c;
                    *clen = (size_t)(l2 - c);
                    *after = l2 + 3 + nl;
                    return true;
                }
                s = l2 + 1;
            }
            return false;
        }
        p = lt + 1;
    }
    return false;
}

/* Text with the five XML entities and numeric references decoded; invalid
 * references are kept as they are.  Caller frees with hs_free. */
static char *xml_decode(const char *s, size_t n)
{
    char *out = hs_malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '&') {
            out[o++] = s[i++];
            continue;
        }
        const char *semi = memchr(s + i, ';', n - i < 12 ? n - i : 12);
        size_t el = semi ? (size_t)(semi - (s + i)) + 1 : 0;
        static const struct { const char *e; char c; } ents[] = {
            { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' }
        };
        bool done = false;
        for (size_t k = 0; semi && k < 5 && !done; k++)
            if (el == strlen(ents[k].e) && memcmp(s + i, ents[k].e, el) == 0) {
                out[o++] = ents[k].c;
                i += el;
                done = true;
            }
        if (!done && semi && el > 3 && s[i + 1] == '#') {
            bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
            uint32_t cp = 0;
            bool ok = true;
            for (size_t k = i + 2 + hex; k < i + el - 1; k++) {
                int d = isdigit((unsigned char)s[k]) ? s[k] - '0'
                        : hex && isxdigit((unsigned char)s[k]) ? (tolower((unsigned char)s[k]) - 'a' + 10)
                        : -1;
                if (d < 0 || cp > 0x10FFFF) {
                    ok = false;
                    break;
                }
                cp = cp * (hex ? 16 : 10) + (uint32_t)d;
            }
            /* the UTF-8 form is never longer than the reference "&#N;" */
            if (ok && cp > 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
                el >= (cp < 0x80 ? 4u : cp < 0x800 ? 5u : cp < 0x10000 ? 6u : 7u)) {
                if (cp < 0x80)
                    out[o++] = (char)cp;
                else if (cp < 0x800) {
                    out[o++] = (char)(0xC0 | (cp >> 6));
                    out[o++] = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    out[o++] = (char)(0xE0 | (cp >> 12));
                    out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    out[o++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    out[o++] = (char)(0xF0 | (cp >> 18));
                    out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    out[o++] = (char)(0x80 | (cp & 0x3F));
                }
                i += el;
                done = true;
            }
        }
        if (!done)
            out[o++] = s[i++];
    }
    out[o] = 0;
    return out;
}

char *s3_xml_text(const char *xml, size_t len, const char *name)
{
    const char *c, *after;
    size_t cl;
    if (!xml || !xml_find(xml, xml + len, name, &c, &cl, &after))
        return NULL;
    return xml_decode(c, cl);
}

bool s3_parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg,
                    size_t msg_cap)
{
    if (code_cap)
        code[0] = 0;
    if (msg_cap)
        msg[0] = 0;
    const char *c, *after;
    size_t cl;
    if (!xml || !xml_find(xml, xml + len, "Error", &c, &cl, &after))
        return false;
    char *cs = s3_xml_text(c, cl, "Code");
    char *ms = s3_xml_text(c, cl, "Message");
    if (cs && code_cap)
        copy_str(code, code_cap, cs);
    if (ms && msg_cap)
        copy_str(msg, msg_cap, ms);
    hs_free(cs);
    hs_free(ms);
    return true;
}

void s3_list_page_free(s3_list_page *p)
{
    for (size_t i = 0; i < p->n_keys; i++)
        hs_free(p->keys[i]);
    for (size_t i = 0; i < p->n_prefixes; i++)
        hs_free(p->prefixes[i]);
    hs_free(p->keys);
    hs_free(p->sizes);
    hs_free(p->prefixes);
    hs_free(p->next_token);
    memset(p, 0, sizeof *p);
}

hs_status s3_parse_list(const char *xml, size_t len, s3_list_page *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *end = xml + len, *c, *after;
    size_t cl;
    if (!xml || !xml_find(xml, end, "ListBucketResult", &c, &cl, &after))
        return HS_CORRUPT_AT(err, "ListObjectsV2: the answer has no <ListBucketResult>");
    const char *body_end = c + cl;
    size_t kcap = 0, pcap = 0;
    hs_status st = HS_OK;
    /* <Contents> and <CommonPrefixes> elements, in document order */
    for (const char *p = c; st == HS_OK;) {
        const char *ec, *ea;
        size_t ecl;
        if (!xml_find(p, body_end, "Contents", &ec, &ecl, &ea))
            break;
        char *key = s3_xml_text(ec, ecl, "Key");
        char *size = s3_xml_text(ec, ecl, "Size");
        if (!key) {
            hs_free(size);
            st = HS_CORRUPT_AT(err, "ListObjectsV2: <Contents> without <Key>");
            break;
        }
        if (out->n_keys == kcap) {
            size_t nc = kcap ? kcap * 2 : 16;
            char **nk = hs_realloc(out->keys, nc * sizeof *nk);
            uint64_t *ns = nk ? hs_realloc(out->sizes, nc * sizeof *ns) : NULL;
            if (nk)
                out->keys = nk;
            if (ns)
                out->sizes = ns;
            if (!nk || !ns) {
                hs_free(key);
                hs_free(size);
                st = hs_err_nomem(err, nc * 8);
                break;
            }
            kcap = nc;
        }
        uint64_t sz = 0;
        if (size) {
            char *e;
            errno = 0;
            unsigned long long x = strtoull(size, &e, 10);
            if (errno || *e || !isdigit((unsigned char)size[0])) {
                hs_free(key);
                hs_free(size);
                st = HS_CORRUPT_AT(err, "ListObjectsV2: bad <Size>");
                break;
            }
            sz = x;
        }
        hs_free(size);
        out->keys[out->n_keys] = key;
        out->sizes[out->n_keys] = sz;
        out->n_keys++;
        p = ea;
    }
    for (const char *p = c; st == HS_OK;) {
        const char *ec, *ea;
        size_t ecl;
        if (!xml_find(p, body_end, "CommonPrefixes", &ec, &ecl, &ea))
            break;
        char *pre = s3_xml_text(ec, ecl, "Prefix");
        if (!pre) {
            st = HS_CORRUPT_AT(err, "ListObjectsV2: <CommonPrefixes> without <Prefix>");
            break;
        }
        if (out->n_prefixes == pcap) {
            size_t nc = pcap ? pcap * 2 : 16;
            char **np = hs_realloc(out->prefixes, nc * sizeof *np);
            if (!np) {
                hs_free(pre);
                st = hs_err_nomem(err, nc * 8);
                break;
            }
            out->prefixes = np;
            pcap = nc;
        }
        out->prefixes[out->n_prefixes++] = pre;
        p = ea;
    }
    if (st == HS_OK) {
        char *tr = s3_xml_text(c, cl, "IsTruncated");
        out->truncated = tr && strcmp(tr, "true") == 0;
        hs_free(tr);
        out->next_token = s3_xml_text(c, cl, "NextContinuationToken");
        if (out->truncated && (!out->next_token || !out->next_token[0]))
            st = HS_CORRUPT_AT(err, "ListObjectsV2: truncated page without a "
                               "NextContinuationToken");
    }
    if (st != HS_OK)
        s3_list_page_free(out);
    return st;
}

/* One line of an INI file, trimmed: [begin, end). */
static void trim(const char **b, const char **e)
{
    while (*b < *e && isspace((unsigned char)**b))
        (*b)++;
    while (*e > *b && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

char *s3_ini_get(const char *text, size_t len, const char *profile, bool config_style,
                 const char *key)
{
    if (!text || !profile || !key)
        return NULL;
    const char *p = text, *end = text + len;
    bool in = false;
    char *found = NULL;
    size_t pl = strlen(profile), kl = strlen(key);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *b = p, *e = le;
        p = nl ? nl + 1 : end;
        trim(&b, &e);
        if (b == e || *b == '#' || *b == ';')
            continue;
        if (*b == '[') {
            if (e[-1] != ']' || e - b < 2) {
                in = false;
                continue;
            }
            const char *sb = b + 1, *se = e - 1;
            trim(&sb, &se);
            if (config_style && strcmp(profile, "default") != 0) {
                if (se - sb > 8 && memcmp(sb, "profile", 7) == 0 &&
                    isspace((unsigned char)sb[7])) {
                    sb += 8;
                    trim(&sb, &se);
                } else {
                    in = false;
                    continue;
                }
            }
            in = (size_t)(se - sb) == pl && memcmp(sb, profile, pl) == 0;
            continue;
        }
        if (!in)
            continue;
        const char *eq = memchr(b, '=', (size_t)(e - b));
        if (!eq)
            continue;
        const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
        trim(&kb, &ke);
        trim(&vb, &ve);
        if ((size_t)(ke - kb) == kl && strncasecmp(kb, key, kl) == 0) {
            hs_free(found);   /* the last one wins, as in botocore */
            found = hs_strndup(vb, (size_t)(ve - vb));
        }
    }
    return found;
}

/* ---- prefetch ------------------------------------------------------------------ */

typedef struct prefetch_job {
    const char *const *uris;
    size_t n;
    _Atomic size_t next;
} prefetch_job;

/* Set at process exit (async_atexit): prefetch threads stop taking objects. */
static atomic_int g_prefetch_stop;

static void *prefetch_main(void *arg)
{
    prefetch_job *j = arg;
    for (;;) {
        if (atomic_load(&g_prefetch_stop))
            break;
        size_t i = j->next++;
        if (i >= j->n)
            break;
        hs_file *f = NULL;
        hs_error ignored = { 0 };
        if (hs_s3_is_uri(j->uris[i]) && hs_s3_open(j->uris[i], &f, &ignored) == HS_OK)
            hs_file_close(f);
    }
    return NULL;
}

void hs_s3_prefetch(const char *const *uris, size_t n)
{
    if (n < 2 || cfg_now().cache_budget == 0)
        return;   /* one object: the caller's own open costs the same */
    prefetch_job j = { uris, n, 0 };
    pthread_t th[16];
    size_t nt = n < 16 ? n : 16, started = 0;
    for (size_t i = 0; i < nt; i++)
        if (pthread_create(&th[started], NULL, prefetch_main, &j) == 0)
            started++;
    if (started == 0)
        prefetch_main(&j);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* Asynchronous prefetch: detached threads open the objects (tails into the
 * caches) while the caller goes on; an open of one of them meanwhile waits
 * for its GET (inflight_enter) instead of repeating it.  hs_s3_reset waits
 * for running jobs. */
typedef struct async_job {
    prefetch_job j;
    char **owned;
} async_job;

static int g_async_running;
static pthread_cond_t g_async_cv = PTHREAD_COND_INITIALIZER;

typedef struct async_group {
    async_job job;
    _Atomic int threads_left;
} async_group;

static void *group_main(void *arg)
{
    async_group *g = arg;
    prefetch_main(&g->job.j);
    if (atomic_fetch_sub(&g->threads_left, 1) == 1) {
        for (size_t i = 0; i < g->job.j.n; i++)
            hs_free(g->job.owned[i]);
        hs_free(g->job.owned);
        hs_free(g);
        pthread_mutex_lock(&g_lock);
        g_async_running--;
        pthread_cond_broadcast(&g_async_cv);
        pthread_mutex_unlock(&g_lock);
    }
    return NULL;
}

/* At exit, detached prefetch threads must not outlive the process's
 * teardown (OpenSSL's and libc's exit handlers free what their requests
 * use: a thread still in a GET crashed the CLI at exit).  Registered after
 * curl's initialisation, so it runs before OpenSSL's own handler: stop
 * taking objects, wait (up to 5 s) for the requests in flight. */
static void async_atexit(void)
{
    atomic_store(&g_prefetch_stop, 1);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&g_lock);
    while (g_async_running > 0)
        if (pthread_cond_timedwait(&g_async_cv, &g_lock, &until) != 0)
            break;
    pthread_mutex_unlock(&g_lock);
}

static pthread_once_t g_async_atexit_once = PTHREAD_ONCE_INIT;
static void async_atexit_register(void) { atexit(async_atexit); }

void hs_s3_prefetch_async(const char *const *uris, size_t n)
{
    if (n == 0 || cfg_now().cache_budget == 0 || atomic_load(&g_prefetch_stop))
        return;
    pthread_once(&g_async_atexit_once, async_atexit_register);
    async_group *g = hs_calloc(1, sizeof *g);
    char **owned = g ? hs_calloc(n, sizeof *owned) : NULL;
    size_t k = 0;
    int64_t ttl = cfg_now().head_ttl_s;
    for (size_t i = 0; owned && i < n; i++) {
        if (!hs_s3_is_uri(uris[i]))
            continue;
        s3_loc loc;
        char hkey[1100], etag[72];
        uint64_t size;
        int hn;
        if (parse_uri(uris[i], &loc, NULL) == HS_OK &&
            (hn = snprintf(hkey, sizeof hkey, "%s/%s", loc.bucket, loc.key)) > 0 &&
            (size_t)hn < sizeof hkey && head_get(hkey, fnv(hkey), ttl, &size, etag))
            continue;   /* opened before: its open costs no request (a warm query) */
        if ((owned[k] = hs_strdup(uris[i])))
            k++;
    }
    if (!g || !owned || k == 0) {
        for (size_t i = 0; owned && i < k; i++)
            hs_free(owned[i]);
        hs_free(owned);
        hs_free(g);
        return;
    }
    g->job.owned = owned;
    g->job.j.uris = (const char *const *)owned;
    g->job.j.n = k;
    g->job.j.next = 0;
    size_t nt = k < 8 ? k : 8;
    g->threads_left = (int)nt;
    pthread_mutex_lock(&g_lock);
    g_async_running++;
    pthread_mutex_unlock(&g_lock);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    size_t started = 0;
    for (size_t i = 0; i < nt; i++) {
        pthread_t th;
        if (pthread_create(&th, &at, group_main, g) == 0)
            started++;
    }
    pthread_attr_destroy(&at);
    if (started < nt) {   /* fewer threads than counted: account for the missing ones */
        int missing = (int)(nt - started);
        if (started == 0) {
            g->threads_left = 1;
            group_main(g);   /* synchronously, frees g */
        } else if (atomic_fetch_sub(&g->threads_left, missing) == missing) {
            /* every started thread already finished: nothing left to free it */
            for (size_t i = 0; i < k; i++)
                hs_free(owned[i]);
            hs_free(owned);
            hs_free(g);
            pthread_mutex_lock(&g_lock);
            g_async_running--;
            pthread_cond_broadcast(&g_async_cv);
            pthread_mutex_unlock(&g_lock);
        }
    }
}
