/*
 * io/s3_http.c - one S3 request: URL, SigV4 signature (libcurl's
 * CURLOPT_AWS_SIGV4, or the catalog's remote signer: s3_sign.c), retries; the configuration snapshot and the pool of
 * connections it runs on.
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
 * Which writes are safe to retry is the caller's business (s3.c).
 *
 * Connections: easy handles are pooled (up to 64 idle) and share one
 * curl share handle (connections, DNS, TLS sessions), so keep-alive
 * connections are reused across files and threads.
 *
 * Configuration: loaded (s3_creds.c) on first use and again when temporary
 * credentials are within 5 minutes of their expiry; every request takes a
 * copy, so hs_s3_reset or a refresh never pulls it from under a request.
 */
#include "io/s3_int.h"
#include "base/fork.h"
#include "base/mem.h"

#include <curl/curl.h>
#include <openssl/sha.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

pthread_mutex_t g_s3_lock = PTHREAD_MUTEX_INITIALIZER;  /* config, pool, cache, stats */
HS_FORK_GUARD(g_s3_lock, HS_FORK_RANK_S3)
bool g_s3_loaded;
s3_config g_s3_cfg;
hs_s3_stats g_s3_stats;


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

/* DNS cache, TLS sessions and the connection cache, shared by the pool's
 * handles; NULL when curl cannot make one (then each handle keeps its own). */
static CURLSH *share_new(void)
{
    CURLSH *sh = curl_share_init();
    if (sh) {
        curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    }
    return sh;
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) {
        pthread_mutex_init(&g_share_locks[i], NULL);
        hs_fork_guard(&g_share_locks[i], HS_FORK_RANK_LEAF);
    }
    g_share = share_new();
}

/* A forked child must not send requests over its parent's connections: the
 * idle handles and the share's connection cache hold the parent's sockets
 * (and TLS state), which the parent keeps using, so two processes' requests
 * and answers would interleave on one socket.  The child's first request
 * forgets them - no cleanup, which would close or shut down the parent's
 * connections - and starts a share of its own.  g_s3_lock held. */
static uint64_t g_pool_gen;   /* hs_fork_generation() of the idle handles and the share */
static void pool_after_fork_locked(void)
{
    uint64_t gen = hs_fork_generation();
    if (gen == g_pool_gen)
        return;
    g_pool_gen = gen;
    g_n_idle = 0;
    g_share = share_new();
}

/* Takes the configuration (copied: a reset cannot pull it from under a
 * request) and an easy handle. */
static CURL *pool_get(s3_config *cfg, CURLSH **share)
{
    pthread_once(&g_curl_once, curl_init_once);
    pthread_mutex_lock(&g_s3_lock);
    if (!g_s3_loaded ||
        (g_s3_cfg.creds_refresh_at && (int64_t)time(NULL) > g_s3_cfg.creds_refresh_at)) {
        s3_load_config_locked();   /* first use, or temporary credentials about to expire */
        g_s3_loaded = true;
    }
    *cfg = g_s3_cfg;
    cfg->session_token = g_s3_cfg.session_token ? hs_strdup(g_s3_cfg.session_token) : NULL;
    pool_after_fork_locked();
    *share = g_share;
    CURL *h = g_n_idle > 0 ? g_idle[--g_n_idle] : NULL;
    pthread_mutex_unlock(&g_s3_lock);
    if (!h)
        h = curl_easy_init();
    return h;
}

/* Frees the idle handles (hs_s3_reset); g_s3_lock held. */
void s3_pool_clear_locked(void)
{
    while (g_n_idle > 0)
        curl_easy_cleanup(g_idle[--g_n_idle]);
}

/* The settings that need no handle (no copy of the session token). */
s3_config s3_cfg_now(void)
{
    pthread_mutex_lock(&g_s3_lock);
    if (!g_s3_loaded) {
        s3_load_config_locked();
        g_s3_loaded = true;
    }
    s3_config c = g_s3_cfg;
    pthread_mutex_unlock(&g_s3_lock);
    c.session_token = NULL;
    return c;
}

static void pool_put(CURL *h, s3_config *cfg)
{
    hs_free(cfg->session_token);
    cfg->session_token = NULL;
    if (!h)
        return;
    pthread_mutex_lock(&g_s3_lock);
    if (g_n_idle < (int)(sizeof g_idle / sizeof g_idle[0])) {
        g_idle[g_n_idle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&g_s3_lock);
    if (h)
        curl_easy_cleanup(h);
}

/* ---- URIs -------------------------------------------------------------------- */

bool hs_s3_is_uri(const char *uri)
{
    return uri && (strncmp(uri, "s3://", 5) == 0 || strncmp(uri, "s3a://", 6) == 0);
}

hs_status s3_parse_uri(const char *uri, s3_loc *loc, hs_error *err)
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

hs_status s3_url_encode(hs_buf *b, const char *s, bool keep_slash)
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
    HS_TRY(s3_url_encode(url, key, true));
    if (query && *query)
        HS_TRY(hs_buf_printf(url, "?%s", query));
    hs_buf_cstr(url);
    return HS_OK;
}

/* ---- one request, with retries ---------------------------------------------- */

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

static void count(const char *method, uint64_t in, uint64_t out, bool retry, long connects)
{
    pthread_mutex_lock(&g_s3_lock);
    g_s3_stats.requests++;
    g_s3_stats.connects += connects > 0 ? (uint64_t)connects : 0;
    g_s3_stats.retries += retry;
    g_s3_stats.bytes_in += in;
    g_s3_stats.bytes_out += out;
    switch (method[0]) {
    case 'G': g_s3_stats.gets++; break;
    case 'H': g_s3_stats.heads++; break;
    case 'P': if (method[1] == 'U') g_s3_stats.puts++; else g_s3_stats.posts++; break;
    case 'D': g_s3_stats.deletes++; break;
    default: break;
    }
    pthread_mutex_unlock(&g_s3_lock);
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

/* A refusal that fresh credentials may cure: 403 (or 400) with S3's code for
 * an expired or unknown session token or key; a HEAD's 403 has no body to
 * say why, so any 403 of a HEAD counts. */
static bool expired_token(const s3_req *r)
{
    if (r->status != 403 && r->status != 400)
        return false;
    if (r->status == 403 && strcmp(r->method, "HEAD") == 0)
        return true;
    char code[64] = "", msg[8];
    if (!s3_parse_error((const char *)r->errbody.data, r->errbody.len, code, sizeof code, msg,
                        sizeof msg))
        return false;
    return strcmp(code, "ExpiredToken") == 0 || strcmp(code, "InvalidToken") == 0 ||
           strcmp(code, "TokenRefreshRequired") == 0 || strcmp(code, "InvalidAccessKeyId") == 0 ||
           strcmp(code, "ExpiredTokenException") == 0;
}

void s3_req_done(s3_req *r)
{
    hs_buf_free(&r->errbody);
}

/* Sends r, retrying transient failures.  HS_OK with r->status set for any
 * HTTP answer that is not transient (the caller maps statuses); HS_IO when
 * the attempts ran out. */
hs_status s3_do(s3_req *r, const char *what, hs_error *err)
{
    s3_config cfg;
    CURLSH *share = NULL;
    CURL *h = pool_get(&cfg, &share);
    /* settings a catalog vended (s3_scope.c); keys about to expire are
     * fetched again first (a failed refresh goes on with the old keys: the
     * store says whether they still work) */
    s3_scope_ticket tk;
    s3_scope_apply(r->bucket, r->key, &cfg, &tk);
    if (tk.due) {
        hs_error rerr = { 0 };
        if (s3_scope_refresh(&tk, &rerr) == HS_OK || tk.refreshed)
            s3_scope_apply(r->bucket, r->key, &cfg, NULL);
    }
    hs_buf url = { 0 }, auth = { 0 }, tokhdr = { 0 }, tokbuf = { 0 };
    hs_s3_signed rs = { 0 };   /* a remote signer's headers (s3_sign.c) */
    hs_status st = HS_OK;
    bool retried_expired = false;
    if (!h) {
        s3_scope_ticket_done(&tk);
        pool_put(h, &cfg);
        return hs_err_set(err, HS_NOMEM, "%s: cannot create a curl handle", what);
    }
signing:
    hs_buf_reset(&url);
    hs_buf_reset(&auth);
    hs_buf_reset(&tokhdr);
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
    /* remote signing: the catalog signs the request as it will be sent
     * (our headers; Range unsigned), once for all attempts */
    hs_s3_signed_free(&rs);
    if (cfg.remote_sign) {
        const char *own[8];
        size_t n_own = 0;
        own[n_own++] = sha_hdr;
        if (strcmp(r->method, "POST") == 0)
            own[n_own++] = "Content-Type: application/xml";
        else if (strcmp(r->method, "PUT") == 0)
            own[n_own++] = "Content-Type: application/octet-stream";
        for (int i = 0; r->hdr[i] && n_own < 8; i++)
            own[n_own++] = r->hdr[i];
        hs_error serr = { 0 };
        if (s3_remote_sign(&tk, cfg.region, r->method, hs_buf_cstr(&url), own, n_own, NULL, &rs,
                           &serr) != HS_OK) {
            st = hs_err_set(err, serr.code, "%s: %s: %s", what, r->method, serr.msg);
            goto out;
        }
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
        for (size_t i = 0; i < rs.n; i++) {   /* the signer's, where ours say nothing */
            size_t nl = strcspn(rs.hdr[i], ":");
            bool ours = nl == 4 && strncasecmp(rs.hdr[i], "Host", 4) == 0;
            for (struct curl_slist *x = hl; x && !ours; x = x->next)
                ours = strncasecmp(x->data, rs.hdr[i], nl) == 0 && x->data[nl] == ':';
            if (!ours)
                ADD_HDR(rs.hdr[i]);
        }
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
        curl_easy_setopt(h, CURLOPT_URL, rs.uri ? rs.uri : hs_buf_cstr(&url));
        if (share)
            curl_easy_setopt(h, CURLOPT_SHARE, share);
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
        long connects = 0;
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
        if (cc == CURLE_OK) {
            long code = 0;
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
            r->status = code;
        }
        count(r->method, r->got + r->errbody.len, r->body_len, attempt > 0, connects);
        /* vended keys refused as expired: fetch them again, retry once */
        if (cc == CURLE_OK && tk.refresher && !retried_expired && expired_token(r)) {
            retried_expired = true;
            hs_error rerr = { 0 };
            if (s3_scope_refresh(&tk, &rerr) == HS_OK) {
                s3_scope_apply(r->bucket, r->key, &cfg, NULL);
                goto signing;
            }
        }
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
                st = hs_err_set(err, HS_IO, "%s: %s failed after %d attempts: HTTP %ld%s%s%s%s",
                                what, r->method, attempt + 1, r->status,
                                truncated ? " (truncated body)" : "",
                                cfg.creds_note[0] ? " (no credentials: " : "", cfg.creds_note,
                                cfg.creds_note[0] ? ")" : "");
            break;
        }
        backoff(attempt);
    }
out:
    hs_s3_signed_free(&rs);
    s3_scope_ticket_done(&tk);
    hs_buf_free(&url);
    hs_buf_free(&auth);
    hs_buf_free(&tokhdr);
    hs_buf_free(&tokbuf);
    pool_put(h, &cfg);
    return st;
}

/* An error for a non-2xx answer: 404 NOT_FOUND, 403 IO with the server's code. */
hs_status s3_http_error(s3_req *r, const char *what, hs_error *err)
{
    char code[64] = "", msg[256] = "";
    (void)s3_parse_error((const char *)r->errbody.data, r->errbody.len, code, sizeof code, msg,
                         sizeof msg);
    hs_status s = r->status == 404 ? HS_NOT_FOUND : r->status == 412 ? HS_CONFLICT : HS_IO;
    /* refused: say where the credentials came from, or why they did not */
    char why[300] = "";
    if (r->status == 400 || r->status == 401 || r->status == 403) {
        s3_config c = s3_cfg_now();
        s3_scope_apply(r->bucket, r->key, &c, NULL);   /* the keys a catalog vended count */
        hs_free(c.session_token);
        if (c.sign)
            ;   /* signed (maybe with vended keys): the server's code says why */
        else if (c.creds_note[0])
            snprintf(why, sizeof why, " (no credentials: %s)", c.creds_note);
        else
            snprintf(why, sizeof why, " (the request was not signed: no credentials found)");
    }
    return hs_err_set(err, s, "%s: %s: HTTP %ld%s%s%s%s%s", what, r->method, r->status,
                      code[0] ? " " : "", code, msg[0] ? ": " : "", msg, why);
}

bool s3_ok2xx(const s3_req *r) { return r->status >= 200 && r->status < 300; }

/* ---- settings a catalog server vends (io.h's hs_io_vend_properties) ---- */

hs_status hs_s3_vend_properties(const char *uri, char ***keys, char ***values, size_t *n,
                                hs_error *err)
{
    *keys = *values = NULL;
    *n = 0;
    s3_loc loc;
    HS_TRY(s3_parse_uri(uri, &loc, err));
    s3_config cfg;
    CURLSH *share = NULL;
    CURL *h = pool_get(&cfg, &share);   /* loads, or refreshes keys that are due */
    s3_scope_apply(loc.bucket, loc.key, &cfg, NULL);
    char exp[32] = "";
    if (cfg.creds_expire && cfg.sign)
        snprintf(exp, sizeof exp, "%" PRId64, cfg.creds_expire * 1000);
    const char *k[8], *v[8];
    size_t m = 0;
    if (cfg.custom_endpoint) {
        k[m] = "s3.endpoint", v[m++] = cfg.endpoint;
        k[m] = "s3.path-style-access", v[m++] = cfg.path_style ? "true" : "false";
    }
    k[m] = "s3.region", v[m++] = cfg.region;
    if (cfg.sign) {
        k[m] = "s3.access-key-id", v[m++] = cfg.access_key;
        k[m] = "s3.secret-access-key", v[m++] = cfg.secret_key;
        if (cfg.session_token)
            k[m] = "s3.session-token", v[m++] = cfg.session_token;
        if (exp[0])
            k[m] = "s3.session-token-expires-at-ms", v[m++] = exp;
    }
    char **ka = hs_calloc(m, sizeof *ka), **va = hs_calloc(m, sizeof *va);
    bool ok = ka && va;
    for (size_t i = 0; ok && i < m; i++)
        ok = (ka[i] = hs_strdup(k[i])) && (va[i] = hs_strdup(v[i]));
    pool_put(h, &cfg);
    if (!ok) {
        for (size_t i = 0; i < m; i++) {
            hs_free(ka ? ka[i] : NULL);
            hs_free(va ? va[i] : NULL);
        }
        hs_free(ka);
        hs_free(va);
        return hs_err_nomem(err, 256);
    }
    *keys = ka;
    *values = va;
    *n = m;
    return HS_OK;
}
