/*
 * base/config.c - process-wide settings and the warning handler (see
 * hyperstream/config.h and base/config.h).
 *
 * Settings live in one array of atomics indexed by hs_cfg_key.  The first
 * access runs init() once: each setting takes its environment variable's
 * value when that parses and is in range, else its default; that value is
 * also kept as the "startup" value hs_config_set(key, NULL) restores.
 * Afterwards nothing reads the environment.
 *
 * Text settings (s3_lock_dir) cannot be one atomic: each lives in a fixed
 * buffer of HS_CONFIG_STR_MAX bytes, written and copied out under g_str_mu,
 * a leaf mutex (nothing is taken under it, so readers may hold any other
 * lock).  Readers get a copy, never a pointer that a later set would free.
 *
 * The warning handler (function and user pointer) is swapped and read under
 * g_warn_mu, and called under it too, so once hs_set_warning_handler
 * returns the old handler is not running and never runs again.  The mutex
 * is the innermost of the library (nothing else is taken under it) and is
 * registered with base/fork.c last.
 */
#include "base/config.h"

#include "base/fork.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct cfg_def {
    const char *key, *env;
    int64_t def, lo, hi;
    int is_bool;
} cfg_def;

#define MB_MAX ((int64_t)1 << 40)   /* 1 EiB of MiB: budgets stay below SIZE_MAX bytes */

static const cfg_def g_defs[HS_CFG_N] = {
    [HS_CFG_MANIFEST_CACHE_MB] = {"manifest_cache_mb", "HS_MANIFEST_CACHE_MB", 64, 0, MB_MAX, 0},
    [HS_CFG_INDEX_CACHE_MB] = {"index_cache_mb", "HS_INDEX_CACHE_MB", 256, 0, MB_MAX, 0},
    [HS_CFG_VINDEX_CACHE_MB] = {"vindex_cache_mb", "HS_VINDEX_CACHE_MB", 1024, 0, MB_MAX, 0},
    [HS_CFG_DICT_CACHE_MB] = {"dict_cache_mb", "HS_DICT_CACHE_MB", 128, 0, MB_MAX, 0},
    [HS_CFG_MMAP] = {"mmap", "HS_MMAP", 1, 0, 1, 1},
    [HS_CFG_SCAN_THREADS] = {"scan_threads", "HS_SCAN_THREADS", 0, 0, 64, 0},
    [HS_CFG_SEARCH_THREADS] = {"search_threads", "HS_SEARCH_THREADS", 0, 0, 64, 0},
    /* object stores: after a selective query on a snapshot of at most this
     * many data files, its skipped manifests and the other files' footers
     * and filter sidecars are fetched ahead once the process is idle
     * (table/index_scan.c tbl_ixscan_warm); 0 = off */
    [HS_CFG_WARM_FILES] = {"warm_files", "HS_WARM_FILES", 64, 0, 1 << 20, 0},
    /* object stores: the projected columns of a vector search's files (not
     * the vector) and of the files a selective scan warms, read ahead, at
     * most this much per query (table/plan.c tbl_plan_warm_pages); 0 = off */
    [HS_CFG_WARM_PAGES_MB] = {"warm_pages_mb", "HS_WARM_PAGES_MB", 32, 0, 1 << 20, 0},
    /* the equality-delete key sets one scan plan keeps (table/eqdel.c);
     * past it, delete files are applied in chunks of this size */
    [HS_CFG_EQ_DELETE_MB] = {"eq_delete_mb", "HS_EQ_DELETE_MB", 256, 1, MB_MAX, 0},
    /* -1: 1/16 of physical memory within [64 MiB, 1 GiB] (parquet/pcache.c) */
    [HS_CFG_PAGE_CACHE_MB] = {"page_cache_mb", "HS_PAGE_CACHE_MB", -1, -1, MB_MAX, 0},
    [HS_CFG_PARQUET_MAX_PAGE_MB] = {"parquet_max_page_mb", "HS_PARQUET_MAX_PAGE_MB", 1024, 1,
                                    MB_MAX, 0},
    [HS_CFG_DECODE_LIMIT_MB] = {"decode_limit_mb", "HS_DECODE_LIMIT_MB", 64, 1, MB_MAX, 0},
    [HS_CFG_DECODE_LIMIT_PER_BYTE] = {"decode_limit_per_byte", "HS_DECODE_LIMIT_PER_BYTE", 128, 1,
                                      (int64_t)1 << 20, 0},
    /* the process-wide cache of bound filters (table/plan.c) */
    [HS_CFG_FILTER_CACHE] = {"filter_cache", "HS_FILTER_CACHE", 1, 0, 1, 1},
    /* a table handle keeps its last filtered search's preparation (table/search.c) */
    [HS_CFG_SEARCH_FILTER_CACHE] = {"search_filter_cache", "HS_SEARCH_FILTER_CACHE", 1, 0, 1, 1},
    /* object stores: the clustered vector sections fetched after a
     * clustered search, at most this many MiB (table/vcache.h); 0 = off */
    [HS_CFG_CLUSTER_CACHE_MB] = {"cluster_cache_mb", "HS_CLUSTER_CACHE_MB", 512, 0, MB_MAX, 0},
    /* freed column buffers of 256 KiB - 64 MiB kept for reuse (base/mem.c);
     * -1: 1/16 of physical memory within [64 MiB, 1 GiB]; 0 = off */
    [HS_CFG_BUFFER_POOL_MB] = {"buffer_pool_mb", "HS_BUFFER_POOL_MB", -1, -1, MB_MAX, 0},
};

typedef struct cfg_str_def {
    const char *key, *env;
} cfg_str_def;

static const cfg_str_def g_str_defs[HS_CFGS_N] = {
    /* object stores without conditional writes: the directory of the
     * per-table commit lock files (catalog/fsio.c cat_io_lock); "" = none */
    [HS_CFGS_S3_LOCK_DIR] = {"s3_lock_dir", "HS_S3_LOCK_DIR"},
};

static _Atomic int64_t g_val[HS_CFG_N];
static int64_t g_startup[HS_CFG_N];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t g_str_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_str[HS_CFGS_N][HS_CONFIG_STR_MAX];           /* under g_str_mu */
static char g_str_startup[HS_CFGS_N][HS_CONFIG_STR_MAX];   /* written once, by init */
HS_FORK_GUARD(g_str_mu, HS_FORK_RANK_LEAF)

static pthread_mutex_t g_warn_mu = PTHREAD_MUTEX_INITIALIZER;
static hs_warning_fn g_warn_fn;
static void *g_warn_user;
HS_FORK_GUARD(g_warn_mu, HS_FORK_RANK_WARN)

/* Text -> value for setting d: a decimal integer in [lo, hi] (booleans also
 * true/false/on/off/yes/no).  0 when it does not parse or is out of range. */
static int parse(const cfg_def *d, const char *s, int64_t *out)
{
    static const char *const yes[] = {"true", "on", "yes"}, *const no[] = {"false", "off", "no"};
    if (d->is_bool) {
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(s, yes[i]) == 0)
                return *out = 1, 1;
            if (strcasecmp(s, no[i]) == 0)
                return *out = 0, 1;
        }
    }
    int neg = *s == '-';
    const char *p = s + (neg || *s == '+');
    if (*p < '0' || *p > '9')
        return 0;
    int64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (*p - '0');
    }
    if (*p)
        return 0;
    v = neg ? -v : v;
    if (v < d->lo || v > d->hi)
        return 0;
    *out = v;
    return 1;
}

static void init(void)
{
    for (int k = 0; k < HS_CFG_N; k++) {
        const cfg_def *d = &g_defs[k];
        int64_t v = d->def;
        const char *e = getenv(d->env);
        if (e && *e) {
            int64_t ev;
            if (k == HS_CFG_SCAN_THREADS || k == HS_CFG_SEARCH_THREADS)
                /* as these variables always read: a number clamped to 1..64 */
                v = atoll(e) < 1 ? 1 : atoll(e) > 64 ? 64 : atoll(e);
            else if (parse(d, e, &ev))
                v = ev;
            else if (d->is_bool)
                v = strcmp(e, "0") != 0;   /* as these variables always read: only "0" is off */
            else
                hs_warn("%s=\"%s\" is not a number in %lld..%lld; using %lld", d->env, e,
                        (long long)d->lo, (long long)d->hi, (long long)d->def);
        }
        g_startup[k] = v;
        atomic_store(&g_val[k], v);
    }
    for (int k = 0; k < HS_CFGS_N; k++) {
        const char *e = getenv(g_str_defs[k].env);
        size_t n = e ? strlen(e) : 0;
        if (n >= HS_CONFIG_STR_MAX) {
            hs_warn("%s is %zu bytes long (at most %d); ignored", g_str_defs[k].env, n,
                    HS_CONFIG_STR_MAX - 1);
            n = 0;
        }
        memcpy(g_str_startup[k], e ? e : "", n);
        g_str_startup[k][n] = 0;
        pthread_mutex_lock(&g_str_mu);
        memcpy(g_str[k], g_str_startup[k], n + 1);
        pthread_mutex_unlock(&g_str_mu);
    }
}

int64_t hs_cfg_get(hs_cfg_key k)
{
    pthread_once(&g_once, init);
    return atomic_load_explicit(&g_val[k], memory_order_relaxed);
}

bool hs_cfg_get_str(hs_cfg_str_key k, char *buf, size_t n)
{
    pthread_once(&g_once, init);
    pthread_mutex_lock(&g_str_mu);
    size_t len = strlen(g_str[k]);
    if (len >= n)
        len = n - 1;
    memcpy(buf, g_str[k], len);
    buf[len] = 0;
    bool set = g_str[k][0] != 0;
    pthread_mutex_unlock(&g_str_mu);
    return set;
}

int hs_cfg_find(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < HS_CFG_N; k++)
        if (strcasecmp(name, g_defs[k].key) == 0 || strcasecmp(name, g_defs[k].env) == 0)
            return k;
    return -1;
}

/* The text key named `name`, as hs_cfg_find; -1 when there is none. */
static int find_str(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < HS_CFGS_N; k++)
        if (strcasecmp(name, g_str_defs[k].key) == 0 || strcasecmp(name, g_str_defs[k].env) == 0)
            return k;
    return -1;
}

/* *k: the integer key, or -1 and *sk the text key. */
static hs_status find_any(const char *key, hs_error *err, int *k, int *sk)
{
    pthread_once(&g_once, init);
    *k = hs_cfg_find(key);
    *sk = *k < 0 ? find_str(key) : -1;
    if (*k < 0 && *sk < 0)
        return hs_err_set(err, HS_NOT_FOUND, "unknown setting \"%s\"", key ? key : "(null)");
    return HS_OK;
}

static hs_status find_key(const char *key, hs_error *err, int *k)
{
    int sk;
    HS_TRY(find_any(key, err, k, &sk));
    if (*k < 0)
        return hs_err_set(err, HS_INVALID, "setting %s is text, not an integer "
                          "(hs_config_set / hs_config_get_str)", g_str_defs[sk].key);
    return HS_OK;
}

static hs_status set_str(int sk, const char *value, hs_error *err)
{
    const char *v = value ? value : g_str_startup[sk];
    size_t n = strlen(v);
    if (n >= HS_CONFIG_STR_MAX)
        return hs_err_set(err, HS_INVALID, "setting %s: %zu bytes of text (at most %d)",
                          g_str_defs[sk].key, n, HS_CONFIG_STR_MAX - 1);
    pthread_mutex_lock(&g_str_mu);
    memcpy(g_str[sk], v, n + 1);
    pthread_mutex_unlock(&g_str_mu);
    return HS_OK;
}

hs_status hs_config_set(const char *key, const char *value, hs_error *err)
{
    int k, sk;
    HS_TRY(find_any(key, err, &k, &sk));
    if (k < 0)
        return set_str(sk, value, err);
    int64_t v = g_startup[k];
    if (value && !parse(&g_defs[k], value, &v))
        return hs_err_set(err, HS_INVALID, "setting %s: \"%s\" is not %s in %lld..%lld",
                          g_defs[k].key, value, g_defs[k].is_bool ? "a boolean or a number" : "a number",
                          (long long)g_defs[k].lo, (long long)g_defs[k].hi);
    atomic_store(&g_val[k], v);
    return HS_OK;
}

hs_status hs_config_set_int(const char *key, int64_t value, hs_error *err)
{
    int k;
    HS_TRY(find_key(key, err, &k));
    if (value < g_defs[k].lo || value > g_defs[k].hi)
        return hs_err_set(err, HS_INVALID, "setting %s: %lld is not in %lld..%lld", g_defs[k].key,
                          (long long)value, (long long)g_defs[k].lo, (long long)g_defs[k].hi);
    atomic_store(&g_val[k], value);
    return HS_OK;
}

hs_status hs_config_get_int(const char *key, int64_t *out, hs_error *err)
{
    int k;
    HS_TRY(find_key(key, err, &k));
    *out = atomic_load(&g_val[k]);
    return HS_OK;
}

hs_status hs_config_get_str(const char *key, char *buf, size_t n, hs_error *err)
{
    int k, sk;
    HS_TRY(find_any(key, err, &k, &sk));
    if (!buf || n == 0)
        return hs_err_set(err, HS_INVALID, "hs_config_get_str: no buffer");
    char tmp[HS_CONFIG_STR_MAX];
    if (k >= 0)
        snprintf(tmp, sizeof tmp, "%lld", (long long)atomic_load(&g_val[k]));
    else
        hs_cfg_get_str((hs_cfg_str_key)sk, tmp, sizeof tmp);
    size_t len = strlen(tmp);
    if (len >= n) {
        buf[0] = 0;
        return hs_err_set(err, HS_INVALID, "setting %s: its value needs %zu bytes, the buffer "
                          "has %zu", k >= 0 ? g_defs[k].key : g_str_defs[sk].key, len + 1, n);
    }
    memcpy(buf, tmp, len + 1);
    return HS_OK;
}

int hs_config_is_str(const char *key)
{
    pthread_once(&g_once, init);
    return hs_cfg_find(key) >= 0 ? 0 : find_str(key) >= 0 ? 1 : -1;
}

const char *hs_config_key(int i)
{
    if (i >= 0 && i < HS_CFG_N)
        return g_defs[i].key;
    if (i >= HS_CFG_N && i < HS_CFG_N + HS_CFGS_N)
        return g_str_defs[i - HS_CFG_N].key;
    return NULL;
}

/* ---- warnings ---------------------------------------------------------- */

void hs_set_warning_handler(hs_warning_fn fn, void *user)
{
    pthread_mutex_lock(&g_warn_mu);
    g_warn_fn = fn;
    g_warn_user = fn ? user : NULL;
    pthread_mutex_unlock(&g_warn_mu);
}

void hs_warn(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = 0;
    pthread_mutex_lock(&g_warn_mu);
    if (g_warn_fn)   /* none installed: dropped (the library never prints) */
        g_warn_fn(g_warn_user, msg);
    pthread_mutex_unlock(&g_warn_mu);
}
