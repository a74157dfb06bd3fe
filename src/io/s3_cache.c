/*
 * io/s3_cache.c - what the S3 backend remembers between requests: the byte
 * cache, the HEAD cache, the table of opens in flight, prefetching, and the
 * counters (hs_s3_get_stats, hs_s3_reset).
 *
 * Byte cache: extents of objects (whole 64 KiB blocks, and the tail block
 * of every open) in a process-wide LRU list (HS_S3_CACHE_MB, default 256;
 * 0 = off) keyed by bucket, key and ETag: an object rewritten in place gets
 * another ETag, so the cache never serves old bytes for a new object.
 *
 * HEAD cache: size and ETag of objects opened recently (HS_S3_HEAD_CACHE_S),
 * so a warm query opens its data files, manifests and sidecars without a
 * request; 4-way set associative (below).
 *
 * Opens in flight and prefetch: hs_s3_prefetch(_async) opens objects on
 * other threads so their tails land in the caches; an open of an object
 * whose fetch is in flight waits for it instead of sending the same GET.
 */
#include "io/s3_int.h"
#include "base/fork.h"
#include "base/mem.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

uint64_t s3_fnv(const char *s)
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
bool s3_cache_get(const char *ident, uint64_t h, uint64_t off, size_t len, void *dst)
{
    bool hit = false;
    pthread_mutex_lock(&g_s3_lock);
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
        g_s3_stats.cache_hits++;
    else
        g_s3_stats.cache_misses++;
    pthread_mutex_unlock(&g_s3_lock);
    return hit;
}

/* Takes ownership of data. */
void s3_cache_put(const char *ident, uint64_t h, uint64_t off, uint8_t *data, size_t len,
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
    pthread_mutex_lock(&g_s3_lock);
    lru_push(e);
    g_cache_bytes += len;
    while (g_cache_bytes > budget && g_lru_tail) {
        cache_ent *v = g_lru_tail;
        lru_unlink(v);
        g_cache_bytes -= v->len;
        ent_free(v);
    }
    g_s3_stats.cache_bytes = g_cache_bytes;
    pthread_mutex_unlock(&g_s3_lock);
}

uint64_t s3_cache_budget(void)
{
    return s3_cfg_now().cache_budget;
}

void hs_s3_get_stats(hs_s3_stats *out)
{
    pthread_mutex_lock(&g_s3_lock);
    *out = g_s3_stats;
    out->cache_bytes = g_cache_bytes;
    pthread_mutex_unlock(&g_s3_lock);
}


/* asynchronous prefetch groups running (prefetch, below); hs_s3_reset waits for them */
static int g_async_running;
static pthread_cond_t g_async_cv = PTHREAD_COND_INITIALIZER;
/* Threads in hs_s3_reset or hs_s3_background_wait: a background task that
 * has not begun its work yet gives it up rather than keep them waiting. */
static atomic_int g_bg_waiters;


void hs_s3_reset(void)
{
    atomic_fetch_add(&g_bg_waiters, 1);
    pthread_mutex_lock(&g_s3_lock);
    s3_inflight_after_fork_locked();
    while (g_async_running > 0)   /* asynchronous prefetches finish first */
        pthread_cond_wait(&g_async_cv, &g_s3_lock);
    atomic_fetch_sub(&g_bg_waiters, 1);
    while (g_lru_head) {
        cache_ent *e = g_lru_head;
        lru_unlink(e);
        ent_free(e);
    }
    g_cache_bytes = 0;
    s3_head_clear_locked();
    s3_pool_clear_locked();
    hs_free(g_s3_cfg.session_token);
    memset(&g_s3_cfg, 0, sizeof g_s3_cfg);
    g_s3_loaded = false;
    memset(&g_s3_stats, 0, sizeof g_s3_stats);
    pthread_mutex_unlock(&g_s3_lock);
    s3_sign_cache_clear();   /* remote signatures (s3_sign.c; its own lock) */
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

bool s3_head_get(const char *key, uint64_t h, int64_t ttl, uint64_t *size, char *etag)
{
    if (ttl <= 0)
        return false;
    bool hit = false;
    pthread_mutex_lock(&g_s3_lock);
    head_ent *e = head_find_locked(key, h);
    if (e && mono_s() - e->when < ttl) {
        *size = e->size;
        memcpy(etag, e->etag, sizeof e->etag);
        hit = true;
        g_s3_stats.head_hits++;
    }
    pthread_mutex_unlock(&g_s3_lock);
    return hit;
}

void s3_head_put(const char *key, uint64_t h, uint64_t size, const char *etag)
{
    char *k = hs_strdup(key);
    if (!k)
        return;
    pthread_mutex_lock(&g_s3_lock);
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
    s3_copy_str(e->etag, sizeof e->etag, etag);
    e->when = mono_s();
    pthread_mutex_unlock(&g_s3_lock);
}

void s3_head_drop(const char *key, uint64_t h)
{
    pthread_mutex_lock(&g_s3_lock);
    head_ent *e = head_find_locked(key, h);
    if (e) {
        hs_free(e->key);
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&g_s3_lock);
}

void s3_head_clear_locked(void)
{
    for (int i = 0; i < HEAD_SLOTS; i++) {
        hs_free(g_heads[i].key);
        memset(&g_heads[i], 0, sizeof g_heads[i]);
    }
}

/* Opens in flight: an open of an object whose tail another thread (an
 * asynchronous prefetch) is fetching waits for that answer instead of
 * sending the same GET again.  Bounded; with no free slot an open just goes
 * ahead.  Slots and waits use g_s3_lock. */
#define INFLIGHT_SLOTS 64
static uint64_t g_inflight[INFLIGHT_SLOTS];   /* hashes of "bucket/key"; 0 = free */
static pthread_cond_t g_inflight_cv = PTHREAD_COND_INITIALIZER;

/* >= 0: this thread fetches (a slot to leave); -1: it waited for another
 * thread's fetch (look in the caches again); -2: no slot, fetch anyway. */
static uint64_t g_inflight_gen;   /* hs_fork_generation() the slots belong to */
void s3_inflight_after_fork_locked(void)
{
    /* a forked child has none of the threads that held slots or ran jobs */
    uint64_t gen = hs_fork_generation();
    if (gen != g_inflight_gen) {
        memset(g_inflight, 0, sizeof g_inflight);
        g_async_running = 0;
        g_inflight_gen = gen;
    }
}

int s3_inflight_enter(uint64_t h)
{
    if (h == 0)
        h = 1;
    pthread_mutex_lock(&g_s3_lock);
    s3_inflight_after_fork_locked();
    bool waited = false;
    for (;;) {
        int busy = -1;
        for (int i = 0; i < INFLIGHT_SLOTS && busy < 0; i++)
            if (g_inflight[i] == h)
                busy = i;
        if (busy < 0)
            break;
        waited = true;
        pthread_cond_wait(&g_inflight_cv, &g_s3_lock);
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
    pthread_mutex_unlock(&g_s3_lock);
    return slot;
}

void s3_inflight_leave(int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&g_s3_lock);
    g_inflight[slot] = 0;
    pthread_cond_broadcast(&g_inflight_cv);
    pthread_mutex_unlock(&g_s3_lock);
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
    if (n < 2 || s3_cfg_now().cache_budget == 0)
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
 * for its GET (s3_inflight_enter) instead of repeating it.  hs_s3_reset waits
 * for running jobs. */
typedef struct async_job {
    prefetch_job j;
    char **owned;
} async_job;

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
        pthread_mutex_lock(&g_s3_lock);
        g_async_running--;
        pthread_cond_broadcast(&g_async_cv);
        pthread_mutex_unlock(&g_s3_lock);
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
    pthread_mutex_lock(&g_s3_lock);
    while (g_async_running > 0)
        if (pthread_cond_timedwait(&g_async_cv, &g_s3_lock, &until) != 0)
            break;
    pthread_mutex_unlock(&g_s3_lock);
}

static pthread_once_t g_async_atexit_once = PTHREAD_ONCE_INIT;
static void async_atexit_register(void) { atexit(async_atexit); }

void hs_s3_prefetch_async(const char *const *uris, size_t n)
{
    if (n == 0 || s3_cfg_now().cache_budget == 0 || atomic_load(&g_prefetch_stop))
        return;
    pthread_once(&g_async_atexit_once, async_atexit_register);
    async_group *g = hs_calloc(1, sizeof *g);
    char **owned = g ? hs_calloc(n, sizeof *owned) : NULL;
    size_t k = 0;
    int64_t ttl = s3_cfg_now().head_ttl_s;
    for (size_t i = 0; owned && i < n; i++) {
        if (!hs_s3_is_uri(uris[i]))
            continue;
        s3_loc loc;
        char hkey[1100], etag[72];
        uint64_t size;
        int hn;
        if (s3_parse_uri(uris[i], &loc, NULL) == HS_OK &&
            (hn = snprintf(hkey, sizeof hkey, "%s/%s", loc.bucket, loc.key)) > 0 &&
            (size_t)hn < sizeof hkey && s3_head_get(hkey, s3_fnv(hkey), ttl, &size, etag))
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
    pthread_mutex_lock(&g_s3_lock);
    g_async_running++;
    pthread_mutex_unlock(&g_s3_lock);
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
            pthread_mutex_lock(&g_s3_lock);
            g_async_running--;
            pthread_cond_broadcast(&g_async_cv);
            pthread_mutex_unlock(&g_s3_lock);
        }
    }
}

typedef struct bg_job {
    void (*fn)(void *arg);
    void *arg;
} bg_job;

static void *bg_main(void *a)
{
    bg_job j = *(bg_job *)a;
    hs_free(a);
    j.fn(j.arg);
    pthread_mutex_lock(&g_s3_lock);
    g_async_running--;
    pthread_cond_broadcast(&g_async_cv);
    pthread_mutex_unlock(&g_s3_lock);
    return NULL;
}

bool hs_s3_background(void (*fn)(void *arg), void *arg)
{
    if (atomic_load(&g_prefetch_stop))
        return false;
    pthread_once(&g_async_atexit_once, async_atexit_register);
    bg_job *j = hs_malloc(sizeof *j);
    if (!j)
        return false;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&g_s3_lock);
    g_async_running++;
    pthread_mutex_unlock(&g_s3_lock);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    bool ok = pthread_create(&th, &at, bg_main, j) == 0;
    pthread_attr_destroy(&at);
    if (!ok) {
        hs_free(j);
        pthread_mutex_lock(&g_s3_lock);
        g_async_running--;
        pthread_cond_broadcast(&g_async_cv);
        pthread_mutex_unlock(&g_s3_lock);
    }
    return ok;
}

bool hs_s3_background_stop(void)
{
    return atomic_load(&g_prefetch_stop) != 0 || atomic_load(&g_bg_waiters) > 0;
}

void hs_s3_background_wait(void)
{
    atomic_fetch_add(&g_bg_waiters, 1);
    pthread_mutex_lock(&g_s3_lock);
    s3_inflight_after_fork_locked();
    while (g_async_running > 0)
        pthread_cond_wait(&g_async_cv, &g_s3_lock);
    pthread_mutex_unlock(&g_s3_lock);
    atomic_fetch_sub(&g_bg_waiters, 1);
}
