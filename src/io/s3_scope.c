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
 *
 * Other keys are ignored.  A scope is a prefix "bucket/key-prefix" (from an
 * s3:// or s3a:// URI: both spellings name the same objects); a request
 * takes the longest scope whose bucket is its bucket and whose key prefix
 * is a '/'-bounded prefix of its key.  Setting a scope for the same prefix
 * replaces it; at most S3_MAX_SCOPES are kept (the oldest goes).  Scopes
 * survive hs_s3_reset (they come from catalogs, not from the environment);
 * hs_s3_clear_scopes forgets them.  g_s3_lock guards the table.
 */
#include "io/s3_int.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S3_MAX_SCOPES 1024

typedef struct s3_scope {
    char *prefix;            /* "bucket/key-prefix", no trailing '/' (owned) */
    size_t bucket_len;       /* bytes of prefix before the first '/' (or all) */
    char region[64];         /* "" = keep */
    char endpoint[512];      /* "" = keep */
    int path_style;          /* -1 keep, 0 virtual-hosted, 1 path */
    char access_key[256];    /* "" = keep the environment's credentials */
    char secret_key[256];
    char *session_token;     /* owned or NULL */
} s3_scope;

static s3_scope *g_scopes;
static size_t g_n_scopes;

static void scope_free(s3_scope *s)
{
    hs_free(s->prefix);
    hs_free(s->session_token);
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
    char *pk = prefix ? scope_key(prefix) : NULL;
    if (!pk)
        return hs_err_set(err, HS_INVALID, "%s: an S3 scope is an s3:// or s3a:// URI with a "
                          "bucket", prefix ? prefix : "(null)");
    s3_scope s = { .prefix = pk, .path_style = -1 };
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
                scope_free(&s);
                return hs_err_nomem(err, strlen(v));
            }
        }
    }
    if (custom && s.path_style < 0)
        s.path_style = 1;   /* as for AWS_ENDPOINT_URL: S3-compatible servers want paths */
    if (!s.access_key[0] != !s.secret_key[0]) {
        scope_free(&s);
        return hs_err_set(err, HS_INVALID, "%s: s3.access-key-id and s3.secret-access-key come "
                          "together", prefix);
    }
    pthread_mutex_lock(&g_s3_lock);
    size_t i;
    for (i = 0; i < g_n_scopes; i++)
        if (strcmp(g_scopes[i].prefix, pk) == 0)
            break;
    hs_status st = HS_OK;
    if (i < g_n_scopes) {
        scope_free(&g_scopes[i]);
        g_scopes[i] = s;
    } else {
        if (g_n_scopes == S3_MAX_SCOPES) {   /* the oldest goes */
            scope_free(&g_scopes[0]);
            memmove(g_scopes, g_scopes + 1, (g_n_scopes - 1) * sizeof *g_scopes);
            g_n_scopes--;
        }
        s3_scope *a = hs_realloc(g_scopes, (g_n_scopes + 1) * sizeof *a);
        if (a) {
            g_scopes = a;
            g_scopes[g_n_scopes++] = s;
        } else {
            scope_free(&s);
            st = hs_err_nomem(err, sizeof *a);
        }
    }
    pthread_mutex_unlock(&g_s3_lock);
    return st;
}

void hs_s3_clear_scopes(void)
{
    pthread_mutex_lock(&g_s3_lock);
    for (size_t i = 0; i < g_n_scopes; i++)
        scope_free(&g_scopes[i]);
    hs_free(g_scopes);
    g_scopes = NULL;
    g_n_scopes = 0;
    pthread_mutex_unlock(&g_s3_lock);
}

void s3_scope_apply(const char *bucket, const char *key, s3_config *cfg)
{
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
        if (best->access_key[0]) {
            s3_copy_str(cfg->access_key, sizeof cfg->access_key, best->access_key);
            s3_copy_str(cfg->secret_key, sizeof cfg->secret_key, best->secret_key);
            cfg->sign = true;
            have_tok = true;
            tok = best->session_token ? hs_strdup(best->session_token) : NULL;
        } else if (best->session_token) {
            have_tok = true;
            tok = hs_strdup(best->session_token);
        }
    }
    pthread_mutex_unlock(&g_s3_lock);
    if (have_tok) {
        hs_free(cfg->session_token);
        cfg->session_token = tok;
    }
}
