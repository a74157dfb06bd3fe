/*
 * io/s3_creds.c - the S3 configuration: region, endpoint, addressing, limits
 * and credentials, from the environment, the AWS shared files and the
 * credential providers (docs/storage.md lists the variables).
 *
 * Credentials, in order (the AWS SDKs' default chain, as far as it goes):
 *   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *   2. the profile AWS_PROFILE (or "default") in AWS_SHARED_CREDENTIALS_FILE
 *      (~/.aws/credentials) and AWS_CONFIG_FILE (~/.aws/config, "[profile
 *      name]" sections);
 *   3. container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI /
 *      _RELATIVE_URI);
 *   none: unsigned requests (public buckets), also forced by
 *   AWS_NO_SIGN_REQUEST=true.
 * Temporary credentials carry their expiry (creds_expire); s3_http.c reloads
 * the configuration 5 minutes before it.
 *
 * Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else
 * us-east-1.
 */
#include "io/s3_int.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <jansson.h>

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const char *s3_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

bool s3_env_true(const char *name, bool dflt)
{
    const char *v = s3_env(name);
    if (!v)
        return dflt;
    return strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
           strcasecmp(v, "on") == 0;
}

int64_t s3_env_int(const char *name, int64_t dflt, int64_t lo, int64_t hi)
{
    const char *v = s3_env(name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return dflt;
    return x;
}

void s3_copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Reads a whole small text file (the AWS shared files); NULL when absent. */
char *s3_slurp(const char *path, size_t *len)
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
    const char *o = s3_env(override_var);
    if (o)
        return hs_strdup(o);
    const char *h = s3_env("HOME");
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
        char *text = path ? s3_slurp(path, &len) : NULL;
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
    const char *full = s3_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *rel = s3_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    if (!full && !rel)
        return;
    char url[1024], auth[2100] = "";
    snprintf(url, sizeof url, "%s%s", full ? "" : "http://169.254.170.2", full ? full : rel);
    const char *tok = s3_env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    char *tokf = NULL;
    size_t tl = 0;
    if (!tok && s3_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"))
        tok = tokf = s3_slurp(s3_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), &tl);
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
        s3_copy_str(c->access_key, sizeof c->access_key, ak);
        s3_copy_str(c->secret_key, sizeof c->secret_key, sk);
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

void s3_load_config_locked(void)
{
    s3_config *c = &g_s3_cfg;
    hs_free(c->session_token);
    memset(c, 0, sizeof *c);
    const char *profile = s3_env("AWS_PROFILE");
    if (!profile)
        profile = "default";
    const char *region = s3_env("AWS_REGION");
    if (!region)
        region = s3_env("AWS_DEFAULT_REGION");
    char *pregion = region ? NULL : profile_value(profile, "region");
    s3_copy_str(c->region, sizeof c->region, region ? region : pregion ? pregion : "us-east-1");
    hs_free(pregion);

    const char *ep = s3_env("AWS_ENDPOINT_URL_S3");
    if (!ep)
        ep = s3_env("AWS_ENDPOINT_URL");
    char *pep = ep ? NULL : profile_value(profile, "endpoint_url");
    if (ep || pep) {
        s3_copy_str(c->endpoint, sizeof c->endpoint, ep ? ep : pep);
        c->custom_endpoint = true;
    } else {
        snprintf(c->endpoint, sizeof c->endpoint, "https://s3.%.63s.amazonaws.com", c->region);
    }
    hs_free(pep);
    size_t n = strlen(c->endpoint);
    while (n > 0 && c->endpoint[n - 1] == '/')
        c->endpoint[--n] = 0;
    const char *addr = s3_env("HS_S3_ADDRESSING");
    c->path_style = addr ? strcasecmp(addr, "path") == 0 : c->custom_endpoint;

    const char *ak = s3_env("AWS_ACCESS_KEY_ID"), *sk = s3_env("AWS_SECRET_ACCESS_KEY");
    if (ak && sk) {
        s3_copy_str(c->access_key, sizeof c->access_key, ak);
        s3_copy_str(c->secret_key, sizeof c->secret_key, sk);
        const char *tok = s3_env("AWS_SESSION_TOKEN");
        c->session_token = tok ? hs_strdup(tok) : NULL;
    } else {
        char *pak = profile_value(profile, "aws_access_key_id");
        char *psk = profile_value(profile, "aws_secret_access_key");
        if (pak && psk) {
            s3_copy_str(c->access_key, sizeof c->access_key, pak);
            s3_copy_str(c->secret_key, sizeof c->secret_key, psk);
            c->session_token = profile_value(profile, "aws_session_token");
        }
        hs_free(pak);
        hs_free(psk);
        if (!c->access_key[0])
            container_credentials(c);
    }
    c->sign = c->access_key[0] && !s3_env_true("AWS_NO_SIGN_REQUEST", false);
    c->max_attempts = (int)s3_env_int("HS_S3_MAX_ATTEMPTS", 10, 1, 100);
    c->connect_timeout_ms = (long)s3_env_int("HS_S3_CONNECT_TIMEOUT_MS", 5000, 1, 600000);
    c->low_speed_s = (long)s3_env_int("HS_S3_TIMEOUT_S", 30, 1, 3600);
    c->part_size = (size_t)s3_env_int("HS_S3_PART_MB", 8, 5, 4096) << 20;
    c->cache_budget = (uint64_t)s3_env_int("HS_S3_CACHE_MB", 256, 0, 1 << 20) << 20;
    c->conditional_writes = s3_env_true("HS_S3_CONDITIONAL_WRITES", true);
    c->verbose = s3_env_true("HS_S3_VERBOSE", false);
    c->head_ttl_s = s3_env_int("HS_S3_HEAD_CACHE_S", 3600, 0, INT32_MAX);
}
