/*
 * catalog/catalog.c - the catalog front: dispatch to the path and SQL
 * implementations (catalog_int.h's vtable), the commit retry loop, and the
 * wrappers that speak the iceberg model instead of JSON text.
 *
 * Retry loop (cat_commit_json_with_retry):
 *
 *   attempt = 1
 *   loop:
 *     load current metadata (json, location)        errors -> return
 *     policy = commit.retry.* of that metadata
 *     callback(base) -> new json                     HS_CONFLICT -> "cannot be
 *                                                     applied" -> return
 *     commit(base location, new json)                OK -> return
 *       HS_CONFLICT and attempt <= num-retries
 *       and time left                                -> sleep backoff, attempt++
 *       otherwise                                    -> return (conflict message
 *                                                       says how many attempts)
 *
 * Backoff before retry i: min(max-wait, min-wait * 2^(i-1)) * U[0.5, 1.0),
 * cut to the remaining total timeout (Java's Tasks.exponentialBackoff with
 * jitter; its default num-retries is 4, ours 10 - see catalog.h).
 *
 * The model wrappers use ice_metadata_parse / ice_metadata_to_json; the
 * retry loop with a model callback is the JSON loop with an adapter that
 * parses the base, calls the user's callback, adds the metadata-log entry
 * for the base file, and serializes.
 */
#include "catalog/catalog_int.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "iceberg/model.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ----------------------------------------------------------- */

char *cat_sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = hs_malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

char *cat_path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 1 && a[la - 1] == '/')
        la--;
    while (*b == '/')
        b++;
    if (la == 0)
        return hs_strdup(b);
    return cat_sprintf("%.*s/%s", (int)la, a, b);
}

static int strv_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

void cat_strv_sort(char **v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, strv_cmp);
}

hs_status cat_json_get_string(const char *json, size_t len, const char *key, char **out,
                              hs_error *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = hs_json_loadb(json, len, 0, &jerr);
    if (!root)
        return HS_CORRUPT_AT(err, "metadata JSON is malformed at line %d column %d: %s",
                             jerr.line, jerr.column, jerr.text);
    json_t *v = json_is_object(root) ? json_object_get(root, key) : NULL;
    hs_status st = HS_OK;
    if (!json_is_string(v))
        st = hs_err_set(err, HS_INVALID, "metadata JSON has no string field \"%s\"", key);
    else if (!(*out = hs_strdup(json_string_value(v))))
        st = hs_err_nomem(err, strlen(json_string_value(v)));
    json_decref(root);
    return st;
}

bool cat_json_table_uuid(const char *json, size_t len, char out[64])
{
    static const char key[] = "\"table-uuid\"";
    const size_t klen = sizeof key - 1;
    const char *hit = NULL;
    int hits = 0;
    for (size_t i = 0; json && i + klen <= len && hits < 2; i++)
        if (json[i] == '"' && memcmp(json + i, key, klen) == 0) {
            hit = json + i;
            hits++;
        }
    out[0] = 0;
    if (hits == 0)
        return false;
    if (hits == 1) {
        const char *p = hit + klen, *e = json + len;
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p < e && *p == ':') {
            p++;
            while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
                p++;
            if (p < e && *p == '"') {
                const char *q = ++p;
                while (q < e && *q != '"' && *q != '\\' && q - p < 63)
                    q++;
                if (q < e && *q == '"') {
                    memcpy(out, p, (size_t)(q - p));
                    out[q - p] = 0;
                    return q > p;
                }
            }
        }
    }
    /* the key also occurs elsewhere (a property?) or an unusual form: parse */
    json_t *root = hs_json_loadb(json, len, 0, NULL);
    json_t *v = json_is_object(root) ? json_object_get(root, "table-uuid") : NULL;
    bool ok = json_is_string(v) && strlen(json_string_value(v)) > 0 &&
              strlen(json_string_value(v)) < 64;
    if (ok)
        strcpy(out, json_string_value(v));
    json_decref(root);
    return ok;
}

/* ---- dispatch ----------------------------------------------------------------- */

void cat_free(cat_catalog *c)
{
    if (c)
        c->vt->free(c);
}

cat_kind cat_get_kind(const cat_catalog *c) { return c->kind; }

static hs_status need_ident(const char *ident, hs_error *err)
{
    if (!ident || !*ident)
        return hs_err_set(err, HS_INVALID, "empty table identifier");
    return HS_OK;
}

hs_status cat_default_location(cat_catalog *c, const char *ident, char **location,
                               hs_error *err)
{
    *location = NULL;
    HS_TRY(need_ident(ident, err));
    return c->vt->default_location(c, ident, location, err);
}

static _Atomic int64_t g_load_count;

int64_t cat_load_count(void) { return atomic_load_explicit(&g_load_count, memory_order_relaxed); }

hs_status cat_load_json(cat_catalog *c, const char *ident, hs_buf *json,
                        char **metadata_location, hs_error *err)
{
    if (metadata_location)
        *metadata_location = NULL;
    HS_TRY(need_ident(ident, err));
    atomic_fetch_add_explicit(&g_load_count, 1, memory_order_relaxed);
    char *loc = NULL;
    hs_status st = c->vt->load(c, ident, json, &loc, err);
    if (st == HS_OK && metadata_location)
        *metadata_location = loc;
    else
        hs_free(loc);
    return st;
}

hs_status cat_current_location(cat_catalog *c, const char *ident, char **out, hs_error *err)
{
    *out = NULL;
    HS_TRY(need_ident(ident, err));
    char *loc = NULL;
    hs_status st = c->vt->current_location(c, ident, &loc, err);
    if (st == HS_OK)
        *out = loc;
    else
        hs_free(loc);
    return st;
}

hs_status cat_create_json(cat_catalog *c, const char *ident, const char *json, size_t len,
                          char **metadata_location, hs_error *err)
{
    if (metadata_location)
        *metadata_location = NULL;
    HS_TRY(need_ident(ident, err));
    if (!json || len == 0)
        return hs_err_set(err, HS_INVALID, "%s: empty metadata", ident);
    char *loc = NULL;
    hs_status st = c->vt->create(c, ident, json, len, &loc, err);
    if (st == HS_OK && metadata_location)
        *metadata_location = loc;
    else
        hs_free(loc);
    return st;
}

hs_status cat_commit_json(cat_catalog *c, const char *ident, const char *base_metadata_location,
                          const char *json, size_t len, char **new_location, hs_error *err)
{
    if (new_location)
        *new_location = NULL;
    HS_TRY(need_ident(ident, err));
    if (!base_metadata_location || !*base_metadata_location)
        return hs_err_set(err, HS_INVALID, "%s: commit without a base metadata location",
                          ident);
    if (!json || len == 0)
        return hs_err_set(err, HS_INVALID, "%s: empty metadata", ident);
    char *loc = NULL;
    hs_status st = c->vt->commit(c, ident, base_metadata_location, json, len, &loc, err);
    if (st == HS_OK && new_location)
        *new_location = loc;
    else
        hs_free(loc);
    return st;
}

hs_status cat_drop(cat_catalog *c, const char *ident, bool purge, hs_error *err)
{
    HS_TRY(need_ident(ident, err));
    return c->vt->drop(c, ident, purge, err);
}

hs_status cat_rename(cat_catalog *c, const char *from, const char *to, hs_error *err)
{
    HS_TRY(need_ident(from, err));
    HS_TRY(need_ident(to, err));
    return c->vt->rename(c, from, to, err);
}

hs_status cat_list(cat_catalog *c, const char *ns, char ***names, size_t *n, hs_error *err)
{
    *names = NULL;
    *n = 0;
    return c->vt->list(c, ns ? ns : "", names, n, err);
}

hs_status cat_exists(cat_catalog *c, const char *ident, bool *exists, hs_error *err)
{
    *exists = false;
    HS_TRY(need_ident(ident, err));
    return c->vt->exists(c, ident, exists, err);
}

hs_status cat_register(cat_catalog *c, const char *ident, const char *metadata_location,
                       bool overwrite, hs_error *err)
{
    HS_TRY(need_ident(ident, err));
    if (!metadata_location || !*metadata_location)
        return hs_err_set(err, HS_INVALID, "%s: register needs a metadata location", ident);
    return c->vt->register_table(c, ident, metadata_location, overwrite, err);
}

hs_status cat_list_views(cat_catalog *c, const char *ns, char ***names, size_t *n,
                         hs_error *err)
{
    *names = NULL;
    *n = 0;
    return c->vt->list_views(c, ns ? ns : "", names, n, err);
}

hs_status cat_check_metadata_file(const char *metadata_location, hs_error *err)
{
    hs_buf text = { 0 };
    hs_status st = cat_io_read_all(cat_local_path(metadata_location), &text, err);
    if (st == HS_NOT_FOUND) {
        hs_err_clear(err);
        st = hs_err_set(err, HS_INVALID, "%s does not exist", metadata_location);
    }
    json_t *doc = st == HS_OK ? hs_json_loadb((const char *)text.data, text.len, 0, NULL) : NULL;
    if (st == HS_OK && (!json_is_object(doc) ||
                        !json_is_integer(json_object_get(doc, "format-version")) ||
                        !json_is_string(json_object_get(doc, "location"))))
        st = hs_err_set(err, HS_INVALID, "%s is not Iceberg table metadata (no format-version "
                        "or location)", metadata_location);
    json_decref(doc);
    hs_buf_free(&text);
    return st;
}

hs_status cat_namespace_create(cat_catalog *c, const char *ns, const char *const *keys,
                               const char *const *values, size_t n, hs_error *err)
{
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace");
    return c->vt->ns_create(c, ns, keys, values, n, err);
}

hs_status cat_namespace_list(cat_catalog *c, const char *parent, char ***names, size_t *n,
                             hs_error *err)
{
    *names = NULL;
    *n = 0;
    return c->vt->ns_list(c, parent ? parent : "", names, n, err);
}

hs_status cat_namespace_drop(cat_catalog *c, const char *ns, hs_error *err)
{
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace");
    return c->vt->ns_drop(c, ns, err);
}

hs_status cat_namespace_properties(cat_catalog *c, const char *ns, char ***keys, char ***values,
                                   size_t *n, hs_error *err)
{
    *keys = NULL;
    *values = NULL;
    *n = 0;
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace");
    return c->vt->ns_properties(c, ns, keys, values, n, err);
}

hs_status cat_namespace_update(cat_catalog *c, const char *ns, const char *const *set_keys,
                               const char *const *set_values, size_t n_set,
                               const char *const *remove_keys, size_t n_remove, hs_error *err)
{
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace");
    return c->vt->ns_update(c, ns, set_keys, set_values, n_set, remove_keys, n_remove, err);
}

/* ---- retry ---------------------------------------------------------------------- */

/* A property's integer text; dflt when absent, unparsable or below lo. */
static int64_t str_int(const char *s, int64_t dflt, int64_t lo)
{
    if (!s)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo)
        return dflt;
    return x;
}

static int64_t prop_int(json_t *props, const char *key, int64_t dflt, int64_t lo)
{
    json_t *v = json_object_get(props, key);
    if (json_is_integer(v))
        return json_integer_value(v) >= lo ? json_integer_value(v) : dflt;
    return json_is_string(v) ? str_int(json_string_value(v), dflt, lo) : dflt;
}

void cat_retry_policy_from_json(const char *json, size_t len, cat_retry_policy *out)
{
    out->num_retries = 10;
    out->min_wait_ms = 100;
    out->max_wait_ms = 60000;
    out->total_timeout_ms = 1800000;
    /* Parse only when a commit.retry.* key occurs at all: the metadata of a
     * table with many snapshots is large, and this runs once per attempt. */
    static const char key[] = "commit.retry.";
    const size_t klen = sizeof key - 1;
    bool present = false;
    for (size_t i = 0; json && !present && i + klen <= len; i++)
        present = json[i] == 'c' && memcmp(json + i, key, klen) == 0;
    json_t *root = present ? hs_json_loadb(json, len, 0, NULL) : NULL;
    json_t *props = root ? json_object_get(root, "properties") : NULL;
    if (json_is_object(props)) {
        out->num_retries = (int)prop_int(props, "commit.retry.num-retries", 10, 0);
        if (out->num_retries > 1000000)
            out->num_retries = 1000000;
        out->min_wait_ms = prop_int(props, "commit.retry.min-wait-ms", 100, 0);
        out->max_wait_ms = prop_int(props, "commit.retry.max-wait-ms", 60000, 0);
        out->total_timeout_ms = prop_int(props, "commit.retry.total-timeout-ms", 1800000, 0);
    }
    if (out->max_wait_ms < out->min_wait_ms)
        out->max_wait_ms = out->min_wait_ms;
    json_decref(root);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Uniform in [0, 1) from the kernel's randomness (a per-process PRNG would
 * make forked writers back off in lock step). */
static double jitter_unit(void)
{
    uint32_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint32_t)(now_ms() * 2654435761u) ^ (uint32_t)getpid();
    return (double)r / 4294967296.0;
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { (time_t)(ms / 1000), (long)(((int64_t)(ms * 1000) % 1000000) * 1000) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* After a lost race: false (with the "gave up" message) when the policy's
 * retries or time are spent, else sleeps an exponential backoff with jitter
 * and returns true. */
static bool backoff(const char *ident, int attempt, int64_t start, const cat_retry_policy *p,
                    hs_error *err)
{
    int64_t elapsed = now_ms() - start;
    if (attempt > p->num_retries || elapsed >= p->total_timeout_ms) {
        hs_err_prefix(err, "%s: commit conflict: gave up after %d attempts in %" PRId64
                      " ms (commit.retry.num-retries = %d)", ident, attempt, elapsed,
                      p->num_retries);
        return false;
    }
    double wait = (double)p->min_wait_ms;
    for (int i = 1; i < attempt && wait < (double)p->max_wait_ms; i++)
        wait *= 2;
    if (wait > (double)p->max_wait_ms)
        wait = (double)p->max_wait_ms;
    wait *= 0.5 + 0.5 * jitter_unit();
    if (wait > (double)(p->total_timeout_ms - elapsed))
        wait = (double)(p->total_timeout_ms - elapsed);
    hs_err_clear(err);
    sleep_ms(wait);
    return true;
}

/* The base loaded for an attempt must be the table the commit started on:
 * a different table-uuid means the table was dropped and created again (or
 * renamed away and another one took its name) - rebasing onto it would write
 * this change into a table it was not meant for, so stop without retrying.
 * Either side without a uuid (format v1) is not checked. */
static hs_status same_table(const char *ident, const char *expected, const char *have,
                            hs_error *err)
{
    if (!expected || !*expected || !have || !*have || strcasecmp(expected, have) == 0)
        return HS_OK;
    return hs_err_set(err, HS_CONFLICT, "%s: the table was dropped and created again since "
                      "it was loaded (table-uuid %s, now %s): not committed; open the table "
                      "again to write to the new one", ident, expected, have);
}

/* Whether a failed load may be retried: HS_CONFLICT from a load is a
 * catalog lock that stayed busy (SQLITE_BUSY after the busy timeout). */
static bool load_retryable(hs_status st) { return st == HS_CONFLICT; }

hs_status cat_commit_json_with_retry(cat_catalog *c, const char *ident, cat_rebase_json_fn fn,
                                     void *ctx, char **new_location, int *attempts,
                                     hs_error *err)
{
    if (new_location)
        *new_location = NULL;
    if (attempts)
        *attempts = 0;
    hs_buf base = { 0 }, next = { 0 };
    char *base_loc = NULL;
    char uuid0[64] = "", uuid[64];
    int64_t start = now_ms();
    hs_status st;
    cat_retry_policy policy;
    cat_retry_policy_from_json(NULL, 0, &policy);
    for (int attempt = 1;; attempt++) {
        hs_buf_reset(&next);
        hs_free(base_loc);
        base_loc = NULL;
        st = cat_load_json(c, ident, &base, &base_loc, err);
        if (st != HS_OK) {
            if (load_retryable(st) && backoff(ident, attempt, start, &policy, err))
                continue;
            break;
        }
        cat_retry_policy_from_json((const char *)base.data, base.len, &policy);
        if (!cat_json_table_uuid((const char *)base.data, base.len, uuid))
            uuid[0] = 0;
        if (attempt == 1)
            memcpy(uuid0, uuid, sizeof uuid0);
        else if ((st = same_table(ident, uuid0, uuid, err)) != HS_OK)
            break;
        st = fn(ctx, (const char *)base.data, base.len, base_loc, &next, err);
        if (st != HS_OK) {
            if (st == HS_CONFLICT)
                hs_err_prefix(err, "%s: commit conflict (the change cannot be applied to the "
                              "current metadata %s)", ident, base_loc);
            break;
        }
        if (attempts)
            *attempts = attempt;
        st = cat_commit_json(c, ident, base_loc, (const char *)next.data, next.len,
                             new_location, err);
        if (st != HS_CONFLICT)
            break;
        if (!backoff(ident, attempt, start, &policy, err))
            break;
    }
    hs_buf_free(&base);
    hs_buf_free(&next);
    hs_free(base_loc);
    return st;
}

/* ---- model wrappers ------------------------------------------------------------- */

static hs_status parse_located(const char *json, size_t len, const char *loc,
                               ice_table_metadata *out, hs_error *err)
{
    hs_status st = ice_metadata_parse(json, len, out, err);
    if (st != HS_OK)
        hs_err_prefix(err, "%s", loc ? loc : "metadata");
    return st;
}

hs_status cat_load(cat_catalog *c, const char *ident, ice_table_metadata *out,
                   char **metadata_location, hs_error *err)
{
    if (metadata_location)
        *metadata_location = NULL;
    hs_buf json = { 0 };
    char *loc = NULL;
    hs_status st = cat_load_json(c, ident, &json, &loc, err);
    if (st == HS_OK)
        st = parse_located((const char *)json.data, json.len, loc, out, err);
    hs_buf_free(&json);
    if (st == HS_OK && metadata_location)
        *metadata_location = loc;
    else
        hs_free(loc);
    return st;
}

hs_status cat_create(cat_catalog *c, const char *ident, const ice_table_metadata *meta,
                     char **metadata_location, hs_error *err)
{
    hs_buf json = { 0 };
    hs_status st = ice_metadata_to_json(meta, &json, err);
    if (st == HS_OK)
        st = cat_create_json(c, ident, (const char *)json.data, json.len, metadata_location, err);
    hs_buf_free(&json);
    return st;
}

static int previous_versions_max(const ice_table_metadata *m)
{
    const char *v = ice_kv_get(&m->properties, "write.metadata.previous-versions-max");
    long x = v ? strtol(v, NULL, 10) : 0;
    return x > 0 && x < 1000000 ? (int)x : 100;
}

static bool log_ends_with(const ice_table_metadata *m, const char *file)
{
    return m->n_metadata_log > 0 && m->metadata_log[m->n_metadata_log - 1].file &&
           strcmp(m->metadata_log[m->n_metadata_log - 1].file, file) == 0;
}

/* "last-updated-ms" of a metadata JSON document, or -1. */
static int64_t json_last_updated(const char *json, size_t len)
{
    json_t *root = hs_json_loadb(json, len, 0, NULL);
    json_t *v = root ? json_object_get(root, "last-updated-ms") : NULL;
    int64_t t = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
    json_decref(root);
    return t;
}

hs_status cat_commit(cat_catalog *c, const char *ident, const char *base_metadata_location,
                     const ice_table_metadata *new_meta, char **new_location, hs_error *err)
{
    if (new_location)
        *new_location = NULL;
    hs_buf json = { 0 };
    hs_status st;
    if (base_metadata_location && *base_metadata_location &&
        !log_ends_with(new_meta, base_metadata_location)) {
        /* Add the base file to the metadata log, on a copy. */
        int64_t ts = -1;
        hs_buf base = { 0 };
        if (cat_io_read_all(cat_local_path(base_metadata_location), &base, NULL) == HS_OK)
            ts = json_last_updated((const char *)base.data, base.len);
        hs_buf_free(&base);
        if (ts < 0)
            ts = new_meta->last_updated_ms;
        ice_table_metadata copy = { 0 };
        st = ice_metadata_copy(new_meta, &copy, err);
        if (st == HS_OK)
            st = ice_metadata_add_metadata_log(&copy, ts, base_metadata_location,
                                               previous_versions_max(&copy), err);
        if (st == HS_OK)
            st = ice_metadata_to_json(&copy, &json, err);
        ice_metadata_free(&copy);
    } else {
        st = ice_metadata_to_json(new_meta, &json, err);
    }
    if (st == HS_OK)
        st = cat_commit_json(c, ident, base_metadata_location, (const char *)json.data, json.len,
                             new_location, err);
    hs_buf_free(&json);
    return st;
}

/* commit.retry.* from the model's properties, as cat_retry_policy_from_json. */
static int64_t kv_int(const ice_kv *kv, const char *key, int64_t dflt, int64_t lo)
{
    return str_int(ice_kv_get(kv, key), dflt, lo);
}

static void policy_from_model(const ice_table_metadata *m, cat_retry_policy *out)
{
    out->num_retries = (int)kv_int(&m->properties, "commit.retry.num-retries", 10, 0);
    if (out->num_retries > 1000000)
        out->num_retries = 1000000;
    out->min_wait_ms = kv_int(&m->properties, "commit.retry.min-wait-ms", 100, 0);
    out->max_wait_ms = kv_int(&m->properties, "commit.retry.max-wait-ms", 60000, 0);
    out->total_timeout_ms = kv_int(&m->properties, "commit.retry.total-timeout-ms", 1800000, 0);
    if (out->max_wait_ms < out->min_wait_ms)
        out->max_wait_ms = out->min_wait_ms;
}

static bool in_metadata_log(const ice_table_metadata *m, const char *file)
{
    for (int i = 0; i < m->n_metadata_log; i++)
        if (m->metadata_log[i].file && strcmp(m->metadata_log[i].file, file) == 0)
            return true;
    return false;
}

/* Iceberg's write.metadata.delete-after-commit.enabled (default false): after
 * a commit, the metadata files that fell out of the metadata log (beyond
 * write.metadata.previous-versions-max) are deleted, so a table committed
 * to every second keeps a bounded metadata/ directory.  Best effort: a file
 * left behind is an orphan for remove_orphan_files. */
static void delete_dropped_metadata(const ice_table_metadata *base, const char *base_loc,
                                    const ice_table_metadata *next)
{
    const char *v = ice_kv_get(&next->properties, "write.metadata.delete-after-commit.enabled");
    if (!v || strcmp(v, "true") != 0)
        return;
    for (int i = 0; i <= base->n_metadata_log; i++) {
        const char *f = i < base->n_metadata_log ? base->metadata_log[i].file : base_loc;
        if (!f || in_metadata_log(next, f))
            continue;
        hs_error e = {0};
        if (cat_io_unlink(cat_local_path(f), &e) != HS_OK)
            hs_err_clear(&e);   /* left for remove_orphan_files */
    }
}

/* One attempt on the model: base -> fn -> metadata log -> JSON -> commit.
 * On success *committed (when non-NULL, zeroed) takes the written model. */
static hs_status commit_attempt(cat_catalog *c, const char *ident, const ice_table_metadata *base,
                                const char *base_loc, cat_rebase_fn fn, void *ctx,
                                char **new_location, ice_table_metadata *committed,
                                bool *refused, hs_error *err)
{
    ice_table_metadata next = { 0 };
    hs_buf json = { 0 };
    hs_status st = fn(ctx, base, base_loc, &next, err);
    *refused = st != HS_OK;
    if (st == HS_CONFLICT)
        hs_err_prefix(err, "%s: commit conflict (the change cannot be applied to the "
                      "current metadata %s)", ident, base_loc);
    if (st == HS_OK && !log_ends_with(&next, base_loc))
        st = ice_metadata_add_metadata_log(&next, base->last_updated_ms, base_loc,
                                           previous_versions_max(&next), err);
    if (st == HS_OK)
        st = ice_metadata_to_json(&next, &json, err);
    if (st == HS_OK)
        st = cat_commit_json(c, ident, base_loc, (const char *)json.data, json.len,
                             new_location, err);
    hs_buf_free(&json);
    if (st == HS_OK && base_loc)
        delete_dropped_metadata(base, base_loc, &next);
    if (st == HS_OK && committed) {
        *committed = next;
        memset(&next, 0, sizeof next);
    }
    ice_metadata_free(&next);
    return st;
}

hs_status cat_commit_with_retry_ex(cat_catalog *c, const char *ident,
                                   const ice_table_metadata *cached_base,
                                   const char *cached_location, cat_rebase_fn fn, void *ctx,
                                   char **new_location, ice_table_metadata *committed,
                                   int *attempts, hs_error *err)
{
    if (new_location)
        *new_location = NULL;
    if (attempts)
        *attempts = 0;
    HS_TRY(need_ident(ident, err));
    int64_t start = now_ms();
    hs_status st;
    /* the table this commit is for: the caller's, else the first base's */
    char expected[64] = "";
    if (cached_base)
        snprintf(expected, sizeof expected, "%s", cached_base->table_uuid);
    cat_retry_policy policy;
    if (cached_base)
        policy_from_model(cached_base, &policy);
    else
        cat_retry_policy_from_json(NULL, 0, &policy);
    for (int attempt = 1;; attempt++) {
        ice_table_metadata loaded = { 0 };
        const ice_table_metadata *base = NULL;
        char *base_loc = NULL;
        /* First attempt: when the catalog still points at the metadata the
         * caller holds parsed, commit on it without reading and parsing the
         * file again (a large metadata.json costs milliseconds to parse). */
        if (attempt == 1 && cached_base && cached_location) {
            st = c->vt->current_location(c, ident, &base_loc, err);
            if (st != HS_OK) {
                hs_free(base_loc);
                if (load_retryable(st) && backoff(ident, attempt, start, &policy, err))
                    continue;
                break;
            }
            if (strcmp(base_loc, cached_location) == 0) {
                base = cached_base;
                /* Path tables reuse names: v<N> may now belong to a table
                 * created again at the path.  Its uuid, without parsing. */
                if (c->kind == CAT_PATH && cached_base->table_uuid[0]) {
                    hs_buf b = { 0 };
                    char have[64];
                    st = cat_io_read_all(cat_local_path(base_loc), &b, err);
                    if (st == HS_OK && cat_json_table_uuid((const char *)b.data, b.len, have))
                        st = same_table(ident, expected, have, err);
                    hs_buf_free(&b);
                    if (st != HS_OK) {
                        hs_free(base_loc);
                        break;
                    }
                }
            } else {
                hs_free(base_loc);
                base_loc = NULL;
            }
        }
        if (!base) {
            st = cat_load(c, ident, &loaded, &base_loc, err);
            if (st != HS_OK) {
                if (load_retryable(st) && backoff(ident, attempt, start, &policy, err))
                    continue;
                break;
            }
            base = &loaded;
        }
        policy_from_model(base, &policy);
        if (!expected[0])
            snprintf(expected, sizeof expected, "%s", base->table_uuid);
        st = same_table(ident, expected, base->table_uuid, err);
        if (st != HS_OK) {
            ice_metadata_free(&loaded);
            hs_free(base_loc);
            break;
        }
        if (attempts)
            *attempts = attempt;
        bool refused;
        st = commit_attempt(c, ident, base, base_loc, fn, ctx, new_location, committed, &refused,
                            err);
        ice_metadata_free(&loaded);
        hs_free(base_loc);
        if (st != HS_CONFLICT || refused)
            break;
        if (!backoff(ident, attempt, start, &policy, err))
            break;
    }
    return st;
}

hs_status cat_commit_with_retry(cat_catalog *c, const char *ident, cat_rebase_fn fn, void *ctx,
                                char **new_location, int *attempts, hs_error *err)
{
    return cat_commit_with_retry_ex(c, ident, NULL, NULL, fn, ctx, new_location, NULL, attempts,
                                    err);
}
