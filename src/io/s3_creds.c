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
 *   3. the profile's credential_process (a command printing JSON keys);
 *   4. container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI /
 *      _RELATIVE_URI);
 *   5. EC2 instance metadata, IMDSv2 (AWS_EC2_METADATA_SERVICE_ENDPOINT);
 *   none: unsigned requests (public buckets), also forced by
 *   AWS_NO_SIGN_REQUEST=true.  A provider that is configured but gives no
 *   keys leaves a note (creds_note) that errors of refused requests carry.
 * Temporary credentials carry their expiry (creds_expire); s3_http.c reloads
 * the configuration at creds_refresh_at, 5 minutes before it (halfway when
 * they live less than 10 minutes); a reload that
 * gets no keys keeps the old ones while they are valid (retrying every 30 s).
 * Providers run under g_s3_lock (requests wait for a refresh, once).
 *
 * Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else
 * us-east-1.
 */
#include "io/s3_int.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <jansson.h>

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/wait.h>
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

/* Records why a configured provider gave no keys (appended to 403 errors). */
__attribute__((format(printf, 2, 3))) static void note(s3_config *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->creds_note, sizeof c->creds_note, fmt, ap);
    va_end(ap);
}

/* One exchange with a local credential endpoint (container, instance
 * metadata): GET, or PUT with an empty body; hdrs NULL-terminated (may be
 * NULL).  The body (at most 64 KiB) into out.  Returns the HTTP status, 0
 * when no answer came (refused, timed out: no such endpoint here). */
static long creds_http(const char *method, const char *url, const char *const *hdrs,
                       long timeout_ms, hs_buf *out)
{
    hs_buf_reset(out);
    CURL *h = curl_easy_init();
    if (!h)
        return 0;
    struct curl_slist *hl = NULL;
    for (int i = 0; hdrs && hdrs[i]; i++) {
        struct curl_slist *t = curl_slist_append(hl, hdrs[i]);
        if (!t) {
            curl_slist_free_all(hl);
            curl_easy_cleanup(h);
            return 0;
        }
        hl = t;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (hl)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, creds_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return code;
}

/* "2026-12-06T08:05:00Z" (ISO 8601, UTC; fractions and offsets other than Z
 * are not used by the providers) as epoch seconds; -1 when unparsable. */
static int64_t parse_expiration(const char *s)
{
    struct tm tm = { 0 };
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

/* Takes AccessKeyId, SecretAccessKey, the session token (under token_key) and
 * Expiration from a provider's JSON answer; false (and a note naming what)
 * when the keys are missing.  Without an Expiration the keys are asked for
 * again in 10 minutes when refresh_without_expiry, else kept. */
static bool creds_from_json(s3_config *c, json_t *j, const char *token_key,
                            bool refresh_without_expiry, const char *what)
{
    const char *ak = json_string_value(json_object_get(j, "AccessKeyId"));
    const char *sk = json_string_value(json_object_get(j, "SecretAccessKey"));
    const char *st = json_string_value(json_object_get(j, token_key));
    const char *ex = json_string_value(json_object_get(j, "Expiration"));
    if (!ak || !sk || !*ak || !*sk) {
        note(c, "%s gave no AccessKeyId and "
                 "SecretAccessKey", what);
        return false;
    }
    s3_copy_str(c->access_key, sizeof c->access_key, ak);
    s3_copy_str(c->secret_key, sizeof c->secret_key, sk);
    hs_free(c->session_token);
    c->session_token = st && *st ? hs_strdup(st) : NULL;
    int64_t when = parse_expiration(ex);
    if (when > 0)
        c->creds_expire = when;
    else if (refresh_without_expiry || ex)
        c->creds_expire = (int64_t)time(NULL) + 600;   /* no (usable) expiry: ask again */
    /* 5 minutes early, or halfway when the keys live less than 10 minutes
     * (keys that live seconds would otherwise be fetched for every request) */
    int64_t life = c->creds_expire - (int64_t)time(NULL);
    c->creds_refresh_at = c->creds_expire ? c->creds_expire - (life / 2 < 300 ? (life > 0 ? life / 2
                                                                                   : 0) : 300)
                                          : 0;
    c->creds_note[0] = 0;
    return true;
}

/* Container credentials (ECS/EKS Pod Identity style): GET
 * AWS_CONTAINER_CREDENTIALS_FULL_URI, or http://169.254.170.2 +
 * AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with Authorization from
 * AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE); the JSON answer carries
 * AccessKeyId, SecretAccessKey, Token and Expiration (ISO 8601, UTC). */
static bool container_credentials(s3_config *c)
{
    const char *full = s3_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *rel = s3_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    if (!full && !rel)
        return false;
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
    const char *hdrs[2] = { auth[0] ? auth : NULL, NULL };
    hs_buf body = { 0 };
    long code = creds_http("GET", url, hdrs, 5000, &body);
    json_error_t je;
    json_t *j = code == 200 ? hs_json_loadb((const char *)body.data, body.len, 0, &je) : NULL;
    hs_buf_free(&body);
    bool ok = false;
    if (j)
        ok = creds_from_json(c, j, "Token", true, "the container credentials endpoint");
    else
        note(c, "the container credentials endpoint "
                 "%.200s answered %s %ld", url, code ? "HTTP" : "nothing, status", code);
    json_decref(j);
    return ok;
}

/* EC2 instance metadata, IMDSv2: PUT /latest/api/token (TTL header) for a
 * session token, then with it GET /latest/meta-data/iam/security-credentials/
 * (the role's name) and .../<role> (JSON: Code, AccessKeyId,
 * SecretAccessKey, Token, Expiration).  A token PUT answered 404 or 405
 * (IMDSv1 only) goes on without a token, as the AWS SDKs do.  Endpoint
 * AWS_EC2_METADATA_SERVICE_ENDPOINT (default http://169.254.169.254);
 * AWS_EC2_METADATA_DISABLED=true skips it; each exchange may take
 * AWS_METADATA_SERVICE_TIMEOUT seconds (default 1: off EC2 nothing answers). */
static bool imds_credentials(s3_config *c)
{
    if (s3_env_true("AWS_EC2_METADATA_DISABLED", false))
        return false;
    const char *ep = s3_env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    char base[512];
    s3_copy_str(base, sizeof base, ep ? ep : "http://169.254.169.254");
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        base[--bl] = 0;
    long to = (long)s3_env_int("AWS_METADATA_SERVICE_TIMEOUT", 1, 1, 60) * 1000;
    char url[1200], tokhdr[1200] = "";
    hs_buf b = { 0 };
    snprintf(url, sizeof url, "%s/latest/api/token", base);
    const char *ttl[2] = { "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL };
    long code = creds_http("PUT", url, ttl, to, &b);
    bool ok = false;
    if (code == 0) {
        if (ep)   /* named explicitly: say that it did not answer */
            note(c, "the instance metadata service "
                     "%.200s did not answer", base);
        goto out;
    }
    if (code == 200 && b.len > 0 && b.len < 1000) {
        size_t n = 0;   /* the body is not NUL-terminated */
        while (n < b.len && b.data[n] != '\r' && b.data[n] != '\n')
            n++;
        snprintf(tokhdr, sizeof tokhdr, "X-aws-ec2-metadata-token: %.*s", (int)n,
                 (const char *)b.data);
    } else if (code != 404 && code != 405) {
        note(c, "the instance metadata service refused "
                 "a session token: HTTP %ld", code);
        goto out;
    }
    const char *hdrs[2] = { tokhdr[0] ? tokhdr : NULL, NULL };
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
    code = creds_http("GET", url, hdrs, to, &b);
    char role[256] = "";
    if (code == 200 && b.len > 0) {
        size_t n = 0;
        const char *p = (const char *)b.data;
        while (n < b.len && n < sizeof role - 1 && p[n] != '\n' && p[n] != '\r')
            n++;
        memcpy(role, p, n);
        role[n] = 0;
    }
    bool role_ok = role[0] != 0;
    for (const char *q = role; *q; q++)   /* a role name: [\w+=,.@-], nothing to escape */
        if (!(isalnum((unsigned char)*q) || strchr("_+=,.@-", *q)))
            role_ok = false;
    if (!role_ok) {
        note(c, "the instance metadata service names no "
                 "IAM role (HTTP %ld)", code);
        goto out;
    }
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", base, role);
    code = creds_http("GET", url, hdrs, to, &b);
    json_error_t je;
    json_t *j = code == 200 ? hs_json_loadb((const char *)b.data, b.len, 0, &je) : NULL;
    const char *status = json_string_value(json_object_get(j, "Code"));
    if (!j)
        note(c, "the instance metadata service gave no "
                 "credentials for role %.64s (HTTP %ld)", role, code);
    else if (status && strcmp(status, "Success") != 0)
        note(c, "the instance metadata service: role "
                 "%.64s: %.64s", role, status);
    else
        ok = creds_from_json(c, j, "Token", true, "the instance metadata service");
    json_decref(j);
out:
    hs_buf_free(&b);
    return ok;
}

/* credential_process of the profile: runs the command (through /bin/sh, as
 * the AWS CLI's shell-like splitting allows) and reads its standard output,
 * JSON: Version 1, AccessKeyId, SecretAccessKey, SessionToken, optional
 * Expiration (without one the keys are kept for the process's lifetime). */
static bool process_credentials(s3_config *c, const char *profile, char *cmd)
{
    fflush(NULL);
    FILE *fp = popen(cmd, "re");
    if (!fp) {
        note(c, "credential_process of profile %.64s "
                 "could not start: %s", profile, strerror(errno));
        return false;
    }
    hs_buf out = { 0 };
    char chunk[4096];
    size_t k;
    bool too_long = false;
    while ((k = fread(chunk, 1, sizeof chunk, fp)) > 0)
        if (out.len + k > 65536 || hs_buf_append(&out, chunk, k) != HS_OK)
            too_long = true;   /* keep reading: the child must not block on a full pipe */
    int rc = pclose(fp);
    bool ok = false;
    json_error_t je;
    json_t *j = NULL;
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        note(c, "credential_process of profile %.64s "
                 "failed (%s %d)", profile, rc != -1 && WIFEXITED(rc) ? "exit status" : "status",
                 rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
    else if (too_long || !(j = hs_json_loadb((const char *)out.data, out.len, 0, &je)))
        note(c, "credential_process of profile %.64s "
                 "printed no JSON object", profile);
    else if (json_integer_value(json_object_get(j, "Version")) != 1)
        note(c, "credential_process of profile %.64s: "
                 "\"Version\" must be 1", profile);
    else
        ok = creds_from_json(c, j, "SessionToken", false, "credential_process");
    json_decref(j);
    hs_buf_free(&out);
    return ok;
}

void s3_load_config_locked(void)
{
    s3_config *c = &g_s3_cfg;
    /* a refresh of temporary credentials that fails keeps the old ones while
     * they are valid (and tries again in 30 s) */
    s3_config old = *c;
    int64_t now = (int64_t)time(NULL);
    bool keep_old = g_s3_loaded && old.access_key[0] && old.creds_expire > now;
    if (!keep_old)
        hs_free(old.session_token);
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
        char *proc = c->access_key[0] ? NULL : profile_value(profile, "credential_process");
        if (proc)
            (void)process_credentials(c, profile, proc);
        hs_free(proc);
        if (!c->access_key[0] && !proc && !container_credentials(c) && !c->creds_note[0] &&
            !s3_env_true("AWS_NO_SIGN_REQUEST", false))
            (void)imds_credentials(c);
    }
    if (keep_old && !c->access_key[0]) {
        s3_copy_str(c->access_key, sizeof c->access_key, old.access_key);
        s3_copy_str(c->secret_key, sizeof c->secret_key, old.secret_key);
        c->session_token = old.session_token;
        old.session_token = NULL;
        c->creds_expire = old.creds_expire;
        c->creds_refresh_at = now + 30;
    }
    if (keep_old)
        hs_free(old.session_token);
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
