/*
 * io/s3_scope.c - S3 settings for a part of the object namespace, as an
 * Iceberg catalog vends them ("storage credential vending"): a REST
 * catalog's config endpoint and its LoadTableResult "config" carry FileIO
 * properties for the tables it serves, and the requests for objects under
 * such a table's location must use them instead of the environment's
 * (catalog/rest.c registers them; docs/catalogs.md lists the keys).
 *
 *   property (Iceberg's FileIO names)   overrides (s3_config)
 *   ----------------------------------  ---------------------------------------
 *   s3.endpoint                         endpoint (and custom_endpoint: path-
 *                                       style addressing unless told otherwise)
 *   s3.path-style-access                path_style ("true" / "false")
 *   s3.region, client.region            region (the SigV4 scope)
 *   s3.access-key-id + s3.secret-access-key
 *                                       access_key, secret_key; requests are
 *                                       signed (the session token is dropped
 *                                       unless the scope names one)
 *   s3.session-token                    session_token
 *   s3.session-token-expires-at-ms      when the keys expire (ms since the
 *                                       epoch): the refresh deadline below
 *   s3.remote-signing-enabled           "true": requests are signed by the
 *                                       catalog (the refresher's signer,
 *                                       s3_sign.c), never with local keys
 *
 * Other keys are ignored.  A scope is a prefix "bucket/key-prefix" (from an
 * s3:// or s3a:// URI: both spellings name the same objects); a request
 * takes the longest scope whose bucket is its bucket and whose key prefix
 * is a '/'-bounded prefix of its key.  Setting a scope for the same prefix
 * replaces it; at most S3_MAX_SCOPES are kept (the oldest goes).  Scopes
 * survive hs_s3_reset (they come from catalogs, not from the environment);
 * hs_s3_clear_scopes forgets them.  g_s3_lock guards the table.
 *
 * Refreshing vended credentials.  A scope may hold a reference to a
 * refresher (hs_io_refresher: the catalog's callback with its own catalog
 * connection, shared by the scopes one LoadTableResult set).  s3_do asks
 * s3_scope_apply for a ticket (the scope's refresher and its generation)
 * and calls s3_scope_refresh before a request whose keys expire within the
 * margin (5 minutes, or half their lifetime when that is shorter, so keys
 * that live seconds are not refreshed before every request) and once
 * after a 403 that says the token expired or is invalid.  The callback
 * fetches new keys and sets the scopes again (hs_io_set_scope_ex with the
 * same refresher), which swaps them for every thread at once under
 * g_s3_lock.  Many threads due at once refresh once: the refresher's mutex
 * admits one caller; the callback bumps the generation, and a caller whose
 * ticket's generation is older than the refresher's finds the work done
 * and only takes the new keys.  A refusal that is not due to an expiry the
 * scope announced refreshes at most every S3_REFUSED_REFRESH_MS.  Lock order: a refresher's mutex, then
 * g_s3_lock (never the reverse; refresher references are dropped outside
 * g_s3_lock, as their callbacks' state may be freed then).
 */
#include "io/s3_int.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S3_MAX_SCOPES 1024
#define S3_REFRESH_MARGIN_MS ((int64_t)300000)

struct hs_io_refresher {
    pthread_mutex_t mu;          /* held while fn runs: one refresh at a time */
    uint64_t gen;                /* refreshes done (atomic) */
    int refs;                    /* atomic */
    hs_io_refresh_fn fn;
    hs_io_sign_fn sign;          /* remote signing (s3_sign.c) or NULL */
    void *arg;
    void (*arg_free)(void *arg);
    int64_t last_ms;             /* when fn last ran (under mu) */
};

/* A refusal (not an expiry) refreshes at most this often: a 403 that new
 * keys do not cure (a key without the permission) must not send every
 * request to the catalog. */
#define S3_REFUSED_REFRESH_MS 2000

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

hs_io_refresher *hs_io_refresher_new(hs_io_refresh_fn fn, void *arg, void (*arg_free)(void *))
{
    hs_io_refresher *r = hs_calloc(1, sizeof *r);
    if (!r) {
        if (arg_free)
            arg_free(arg);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->refs = 1;
    r->fn = fn;
    r->arg = arg;
    r->arg_free = arg_free;
    return r;
}

static hs_io_refresher *refresher_ref(hs_io_refresher *r)
{
    if (r)
        __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
    return r;
}

void hs_io_refresher_release(hs_io_refresher *r)
{
    if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (r->arg_free)
        r->arg_free(r->arg);
    pthread_mutex_destroy(&r->mu);
    hs_free(r);
}

void hs_io_refresher_set_signer(hs_io_refresher *r, hs_io_sign_fn fn)
{
    if (r)
        r->sign = fn;
}

hs_status s3_scope_sign(s3_scope_ticket *t, const char *req_json, hs_buf *resp, bool *cacheable,
                        hs_error *err)
{
    hs_io_refresher *r = t->refresher;
    if (!r || !r->sign)
        return hs_err_set(err, HS_UNSUPPORTED, "S3: remote signing is enabled for this location "
                          "but no catalog signer is attached to it");
    pthread_mutex_lock(&r->mu);
    hs_status st = r->sign(r->arg, req_json, resp, cacheable, err);
    pthread_mutex_unlock(&r->mu);
    return st;
}

uint64_t hs_io_refresher_generation(const hs_io_refresher *r)
{
    return r ? __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) : 0;
}

hs_status s3_scope_refresh(s3_scope_ticket *t, hs_error *err)
{
    hs_io_refresher *r = t->refresher;
    if (!r)
        return hs_err_set(err, HS_INVALID, "no refresher for these S3 credentials");
    pthread_mutex_lock(&r->mu);
    hs_status st = HS_OK;
    int64_t now = now_ms();
    if (__atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) == t->gen &&
        (t->due || !r->last_ms || now - r->last_ms >= S3_REFUSED_REFRESH_MS)) {
        r->last_ms = now;
        st = r->fn(r, r->arg, err);
        /* bumped on failure too: the threads waiting behind this one go on
         * with what they have rather than each asking the catalog again */
        __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
        t->refreshed = true;
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

void s3_scope_ticket_done(s3_scope_ticket *t)
{
    hs_io_refresher_release(t->refresher);
    memset(t, 0, sizeof *t);
}

typedef struct s3_scope {
    char *prefix;            /* "bucket/key-prefix", no trailing '/' (owned) */
    size_t bucket_len;       /* bytes of prefix before the first '/' (or all) */
    char region[64];         /* "" = keep */
    char endpoint[512];      /* "" = keep */
    int path_style;          /* -1 keep, 0 virtual-hosted, 1 path */
    bool remote_sign;        /* s3.remote-signing-enabled: the refresher's signer signs */
    char access_key[256];    /* "" = keep the environment's credentials */
    char secret_key[256];
    char *session_token;     /* owned or NULL */
    int64_t expires_ms;      /* s3.session-token-expires-at-ms; 0 = not said */
    int64_t set_ms;          /* when these settings came */
    hs_io_refresher *refresher;   /* a reference, or NULL */
} s3_scope;

static s3_scope *g_scopes;
static size_t g_n_scopes;

/* Frees s's strings; its refresher reference moves to *drop (released by
 * the caller outside g_s3_lock) or is released here when drop is NULL. */
static void scope_free(s3_scope *s, hs_io_refresher **drop)
{
    hs_free(s->prefix);
    hs_free(s->session_token);
    if (drop)
        *drop = s->refresher;
    else
        hs_io_refresher_release(s->refresher);
    s->refresher = NULL;
}

/* "s3://b/k/" -> "b/k" (hs_malloc'ed) or NULL when not an S3 URI. */
static char *scope_key(const char *uri)
{
    const char *p = strncmp(uri, "s3://", 5) == 0 ? uri + 5
                  : strncmp(uri, "s3a://", 6) == 0 ? uri + 6 : NULL;
    if (!p || !*p || *p == '/')
        return NULL;
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] == '/')
        n--;
    return hs_strndup(p, n);
}

static bool truthy(const char *v)
{
    return strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0;
}

hs_status hs_s3_set_scope(const char *prefix, const char *const *keys,
                          const char *const *values, size_t n, hs_error *err)
{
    return hs_s3_set_scope_ex(prefix, keys, values, n, NULL, err);
}

hs_status hs_s3_set_scope_ex(const char *prefix, const char *const *keys,
                             const char *const *values, size_t n, hs_io_refresher *refresher,
                             hs_error *err)
{
    char *pk = prefix ? scope_key(prefix) : NULL;
    if (!pk)
        return hs_err_set(err, HS_INVALID, "%s: an S3 scope is an s3:// or s3a:// URI with a "
                          "bucket", prefix ? prefix : "(null)");
    s3_scope s = { .prefix = pk, .path_style = -1, .set_ms = now_ms() };
    const char *slash = strchr(pk, '/');
    s.bucket_len = slash ? (size_t)(slash - pk) : strlen(pk);
    bool custom = false;
    for (size_t i = 0; i < n; i++) {
        const char *k = keys[i], *v = values[i];
        if (!k || !v)
            continue;
        if (strcmp(k, "s3.endpoint") == 0 && *v) {
            s3_copy_str(s.endpoint, sizeof s.endpoint, v);
            size_t l = strlen(s.endpoint);
            while (l > 0 && s.endpoint[l - 1] == '/')
                s.endpoint[--l] = 0;
            custom = true;
        } else if (strcmp(k, "s3.path-style-access") == 0) {
            s.path_style = truthy(v) ? 1 : 0;
        } else if (strcmp(k, "s3.remote-signing-enabled") == 0) {
            s.remote_sign = truthy(v);
        } else if ((strcmp(k, "s3.region") == 0 || strcmp(k, "client.region") == 0) && *v) {
            if (strcmp(k, "s3.region") == 0 || !s.region[0])
                s3_copy_str(s.region, sizeof s.region, v);
        } else if (strcmp(k, "s3.access-key-id") == 0) {
            s3_copy_str(s.access_key, sizeof s.access_key, v);
        } else if (strcmp(k, "s3.secret-access-key") == 0) {
            s3_copy_str(s.secret_key, sizeof s.secret_key, v);
        } else if (strcmp(k, "s3.session-token") == 0 && *v) {
            hs_free(s.session_token);
            if (!(s.session_token = hs_strdup(v))) {
                scope_free(&s, NULL);
                return hs_err_nomem(err, strlen(v));
            }
        } else if (strcmp(k, "s3.session-token-expires-at-ms") == 0 && *v) {
            char *end = NULL;
            long long ms = strtoll(v, &end, 10);
            if (*end || ms <= 0) {
                scope_free(&s, NULL);
                return hs_err_set(err, HS_INVALID, "%s: s3.session-token-expires-at-ms \"%s\" "
                                  "is not a time in milliseconds since the epoch", prefix, v);
            }
            s.expires_ms = ms;
        }
    }
    if (custom && s.path_style < 0)
        s.path_style = 1;   /* as for AWS_ENDPOINT_URL: S3-compatible servers want paths */
    if (!s.access_key[0] != !s.secret_key[0]) {
        scope_free(&s, NULL);
        return hs_err_set(err, HS_INVALID, "%s: s3.access-key-id and s3.secret-access-key come "
                          "together", prefix);
    }
    s.refresher = refresher_ref(refresher);
    hs_io_refresher *drop = NULL;
    pthread_mutex_lock(&g_s3_lock);
    size_t i;
    for (i = 0; i < g_n_scopes; i++)
        if (strcmp(g_scopes[i].prefix, pk) == 0)
            break;
    hs_status st = HS_OK;
    hs_io_refresher *drop2 = NULL;
    if (i < g_n_scopes) {
        scope_free(&g_scopes[i], &drop);
        g_scopes[i] = s;
    } else {
        if (g_n_scopes == S3_MAX_SCOPES) {   /* the oldest goes */
            scope_free(&g_scopes[0], &drop);
            memmove(g_scopes, g_scopes + 1, (g_n_scopes - 1) * sizeof *g_scopes);
            g_n_scopes--;
        }
        s3_scope *a = hs_realloc(g_scopes, (g_n_scopes + 1) * sizeof *a);
        if (a) {
            g_scopes = a;
            g_scopes[g_n_scopes++] = s;
        } else {
            scope_free(&s, &drop2);
            st = hs_err_nomem(err, sizeof *a);
        }
    }
    pthread_mutex_unlock(&g_s3_lock);
    hs_io_refresher_release(drop);
    hs_io_refresher_release(drop2);
    return st;
}

void hs_s3_clear_scopes(void)
{
    pthread_mutex_lock(&g_s3_lock);
    s3_scope *a = g_scopes;
    size_t n = g_n_scopes;
    g_scopes = NULL;
    g_n_scopes = 0;
    pthread_mutex_unlock(&g_s3_lock);
    for (size_t i = 0; i < n; i++)
        scope_free(&a[i], NULL);
    hs_free(a);
}

void s3_scope_apply(const char *bucket, const char *key, s3_config *cfg, s3_scope_ticket *t)
{
    if (t)
        memset(t, 0, sizeof *t);
    size_t bl = strlen(bucket);
    if (!key)
        key = "";
    pthread_mutex_lock(&g_s3_lock);
    const s3_scope *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < g_n_scopes; i++) {
        const s3_scope *s = &g_scopes[i];
        if (s->bucket_len != bl || memcmp(s->prefix, bucket, bl) != 0)
            continue;
        const char *kp = s->prefix[bl] == '/' ? s->prefix + bl + 1 : "";
        size_t kl = strlen(kp);
        if (kl && (strncmp(key, kp, kl) != 0 || (key[kl] != 0 && key[kl] != '/')))
            continue;
        if (!best || kl + 1 > best_len) {
            best = s;
            best_len = kl + 1;
        }
    }
    char *tok = NULL;
    bool have_tok = false;
    if (best) {
        if (best->endpoint[0]) {
            s3_copy_str(cfg->endpoint, sizeof cfg->endpoint, best->endpoint);
            cfg->custom_endpoint = true;
        }
        if (best->path_style >= 0)
            cfg->path_style = best->path_style == 1;
        if (best->region[0]) {
            s3_copy_str(cfg->region, sizeof cfg->region, best->region);
            if (!cfg->custom_endpoint)
                snprintf(cfg->endpoint, sizeof cfg->endpoint, "https://s3.%.63s.amazonaws.com",
                         cfg->region);
        }
        cfg->remote_sign = best->remote_sign;
        if (best->remote_sign) {
            cfg->sign = false;   /* the catalog signs (s3_sign.c), not our keys */
            have_tok = true;     /* nor our session token */
        } else if (best->access_key[0]) {
            s3_copy_str(cfg->access_key, sizeof cfg->access_key, best->access_key);
            s3_copy_str(cfg->secret_key, sizeof cfg->secret_key, best->secret_key);
            cfg->sign = true;
            have_tok = true;
            tok = best->session_token ? hs_strdup(best->session_token) : NULL;
        } else if (best->session_token) {
            have_tok = true;
            tok = hs_strdup(best->session_token);
        }
        if (t && best->refresher) {
            t->refresher = refresher_ref(best->refresher);
            t->gen = hs_io_refresher_generation(best->refresher);
            if (best->expires_ms) {
                int64_t life = best->expires_ms - best->set_ms;
                int64_t margin = life / 2 < S3_REFRESH_MARGIN_MS ? life / 2
                                                                 : S3_REFRESH_MARGIN_MS;
                t->due = now_ms() >= best->expires_ms - (margin > 0 ? margin : 0);
            }
        }
    }
    pthread_mutex_unlock(&g_s3_lock);
    if (have_tok) {
        hs_free(cfg->session_token);
        cfg->session_token = tok;
    }
}
