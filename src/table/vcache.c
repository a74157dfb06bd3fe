/*
 * table/vcache.c - the process-wide cache of clustered vector sections on
 * object stores and their chunked, parallel background fetch (interface,
 * purpose and bound: vcache.h).
 *
 * State, all under g_mu (a leaf: nothing is taken while it is held):
 * up to TBL_VCACHE_SLOTS sections, each with its buffer (reserved whole at
 * the start of its fetch: the bound counts it at once) and its chunks,
 * each pending, in flight, done or failed.  Workers (at most
 * TBL_VCACHE_THREADS, detached threads of hs_io_background) take pending
 * chunks (lowest chunk index first, then the oldest section), one ranged
 * GET each, until none is left, each after the idle gate
 * (tbl_plan_wait_idle: a query pauses the fetch); a worker stops
 * when io asks background tasks to stop (process exit, S3 cache reset).
 * A reader copies under g_mu.  A section is in use (busy) while a worker
 * fetches one of its chunks, and is never dropped then.
 *
 * A forked child has none of the parent's workers: at the first use in a
 * child, chunks in flight go back to pending and the counts restart.
 */
#include "table/vcache.h"

#include "base/config.h"
#include "base/fork.h"
#include "base/mem.h"
#include "io/io.h"
#include "table/table_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CH_PENDING, CH_FLIGHT, CH_DONE, CH_FAILED };

typedef struct vc_chunk {
    uint64_t off, len;        /* in the sidecar */
    int state;
} vc_chunk;

typedef struct vc_sec {
    char *uri;                /* NULL: a free slot */
    uint64_t size, off, len;  /* the sidecar's size; the section [off, off + len) */
    uint8_t *buf;             /* len bytes */
    vc_chunk *ch;
    uint32_t n_ch, next;      /* next: no pending chunk before it */
    uint32_t n_done;
    int busy;
    uint64_t used;            /* LRU tick */
    uint64_t order;           /* when its fetch was asked for: workers take the oldest */
    int64_t t_first_ns;       /* its first chunk's start (0: none yet) */
} vc_sec;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_mu, HS_FORK_RANK_LEAF)
static vc_sec g_sec[TBL_VCACHE_SLOTS];
static uint64_t g_bytes, g_tick, g_order;
static int g_workers;
static uint64_t g_gen;
static tbl_vcache_stats g_st;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Takes g_mu; in a forked child first forgets the parent's workers. */
static void lock(void)
{
    pthread_mutex_lock(&g_mu);
    uint64_t gen = hs_fork_generation();
    if (gen == g_gen)
        return;
    g_gen = gen;
    g_workers = 0;
    for (int i = 0; i < TBL_VCACHE_SLOTS; i++) {
        vc_sec *s = &g_sec[i];
        s->busy = 0;
        for (uint32_t c = 0; s->uri && c < s->n_ch; c++)
            if (s->ch[c].state == CH_FLIGHT) {
                s->ch[c].state = CH_PENDING;
                s->next = 0;
            }
    }
}

static void unlock(void) { pthread_mutex_unlock(&g_mu); }

static vc_sec *find_locked(const char *uri, uint64_t size)
{
    for (int i = 0; i < TBL_VCACHE_SLOTS; i++)
        if (g_sec[i].uri && g_sec[i].size == size && strcmp(g_sec[i].uri, uri) == 0)
            return &g_sec[i];
    return NULL;
}

static void drop_locked(vc_sec *s)
{
    g_bytes -= s->len;
    hs_free(s->uri);
    hs_free_aligned(s->buf);
    hs_free(s->ch);
    memset(s, 0, sizeof *s);
}

static bool has_pending(const vc_sec *s)
{
    for (uint32_t c = s->next; c < s->n_ch; c++)
        if (s->ch[c].state == CH_PENDING)
            return true;
    return false;
}

/* Pending chunks of all sections (workers to start, at most the cap). */
static int work_locked(void)
{
    int n = 0;
    for (int i = 0; i < TBL_VCACHE_SLOTS && n < TBL_VCACHE_THREADS; i++)
        for (uint32_t c = g_sec[i].uri ? g_sec[i].next : 0;
             g_sec[i].uri && c < g_sec[i].n_ch && n < TBL_VCACHE_THREADS; c++)
            n += g_sec[i].ch[c].state == CH_PENDING;
    return n;
}

/* ------------------------------------------------------------------ */
/* reading                                                             */

/* The first chunk of s that ends after off (binary search). */
static uint32_t chunk_at(const vc_sec *s, uint64_t off)
{
    uint32_t lo = 0, hi = s->n_ch;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->ch[mid].off + s->ch[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool tbl_vcache_read(const char *uri, uint64_t size, uint64_t off, uint64_t len, uint8_t *dst)
{
    if (len == 0)
        return false;
    lock();
    vc_sec *s = find_locked(uri, size);
    bool hit = s && off >= s->off && len <= s->len && off - s->off <= s->len - len;
    for (uint32_t c = hit ? chunk_at(s, off) : 0; hit && c < s->n_ch && s->ch[c].off < off + len;
         c++)
        hit = s->ch[c].state == CH_DONE;
    if (hit) {
        memcpy(dst, s->buf + (off - s->off), (size_t)len);
        s->used = ++g_tick;
        g_st.hits++;
    } else {
        g_st.misses++;
    }
    unlock();
    return hit;
}

/* ------------------------------------------------------------------ */
/* fetching                                                            */

static void worker(void *arg)
{
    (void)arg;
    bool go = true;
    lock();
    while (go) {
        /* each chunk after the query's answer, when no query runs (plan.c's
         * idle gate): a query issued meanwhile competes only with the GETs
         * already in flight, and the fetch goes on 50 ms after it */
        unlock();
        go = tbl_plan_wait_idle();
        lock();
        if (!go)
            break;
        /* the lowest pending chunk index of all sections, then the oldest
         * section: the sections of one search advance together, so a
         * value's blocks (the same chunk index in every file, plan_chunks)
         * are all in early, not one file after another */
        vc_sec *s = NULL;
        for (int i = 0; i < TBL_VCACHE_SLOTS; i++) {
            vc_sec *o = &g_sec[i];
            if (!o->uri || !has_pending(o))
                continue;
            while (o->ch[o->next].state != CH_PENDING)
                o->next++;
            if (!s || o->next < s->next || (o->next == s->next && o->order < s->order))
                s = o;
        }
        if (!s)
            break;
        uint32_t c = s->next++;
        s->ch[c].state = CH_FLIGHT;
        s->busy++;
        if (s->t_first_ns == 0)
            s->t_first_ns = now_ns();
        char *uri = hs_strdup(s->uri);
        uint64_t size = s->size, off = s->ch[c].off, len = s->ch[c].len;
        uint8_t *dst = s->buf + (off - s->off);
        unlock();
        /* the slot stays (busy), so dst stays valid; another thread never
         * writes this chunk (in flight) */
        bool ok = uri && !hs_io_background_stop() &&
                  hs_io_read_range(uri, dst, off, len, size, NULL) == HS_OK;
        hs_free(uri);
        lock();
        s->busy--;
        if (hs_fork_generation() == g_gen && s->ch[c].state == CH_FLIGHT) {
            s->ch[c].state = ok ? CH_DONE : CH_FAILED;
            if (ok) {
                g_st.chunks_fetched++;
                if (++s->n_done == s->n_ch)
                    g_st.last_fetch_ms = (uint64_t)(now_ns() - s->t_first_ns) / 1000000;
            } else {
                g_st.chunks_failed++;
            }
        }
        if (hs_io_background_stop())
            break;
    }
    g_workers--;
    unlock();
}

/* Starts workers for the pending chunks (called without g_mu). */
static void start_workers(void)
{
    lock();
    int want = work_locked();
    if (want > TBL_VCACHE_THREADS - g_workers)
        want = TBL_VCACHE_THREADS - g_workers;
    if (want < 0)
        want = 0;
    g_workers += want;
    unlock();
    int failed = 0;
    for (int i = 0; i < want; i++)
        failed += !hs_io_background(worker, NULL);
    if (failed) {
        lock();
        g_workers -= failed;
        unlock();
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The chunks of a section: runs of the same number of whole blocks (in
 * offset order, which is value order), from the first block to the
 * sidecar's end, about a target size each.  Files that hold the same values
 * get chunks of the same values, which the workers fetch together.  NULL on
 * no memory or nothing to fetch. */
static vc_chunk *plan_chunks(uint64_t size, const tbl_vcdir *dir, uint64_t *first,
                             uint32_t *n_out)
{
    size_t nv = json_array_size(dir->values), n = 0;
    uint64_t *offs = hs_malloc((nv + 1) * sizeof *offs);
    if (!offs)
        return NULL;
    size_t i;
    json_t *e;
    json_array_foreach(dir->values, i, e) {
        json_t *o = json_array_get(e, 1);
        if (json_is_integer(o) && json_integer_value(o) >= 0 &&
            (uint64_t)json_integer_value(o) < size)
            offs[n++] = (uint64_t)json_integer_value(o);
    }
    if (n == 0) {
        hs_free(offs);
        return NULL;
    }
    qsort(offs, n, sizeof *offs, u64_cmp);
    size_t u = 1;   /* distinct offsets */
    for (size_t j = 1; j < n; j++)
        if (offs[j] != offs[u - 1])
            offs[u++] = offs[j];
    n = u;
    uint64_t len = size - offs[0];
    uint64_t target = len / 16;
    if (target < TBL_VCACHE_CHUNK_MIN)
        target = TBL_VCACHE_CHUNK_MIN;
    if (target > TBL_VCACHE_CHUNK_MAX)
        target = TBL_VCACHE_CHUNK_MAX;
    uint64_t chunks = (len + target - 1) / target;
    size_t per = (size_t)((n + chunks - 1) / chunks);   /* blocks a chunk */
    vc_chunk *ch = hs_malloc((n / per + 1) * sizeof *ch);
    uint32_t k = 0;
    for (size_t j = 0; ch && j < n; j += per) {
        if (k > 0)
            ch[k - 1].len = offs[j] - ch[k - 1].off;
        ch[k++] = (vc_chunk){offs[j], 0, CH_PENDING};
    }
    if (ch)
        ch[k - 1].len = size - ch[k - 1].off;
    *first = offs[0];
    *n_out = k;
    hs_free(offs);
    return ch;
}

void tbl_vcache_warm(const char *uri, uint64_t size, const tbl_vcdir *dir)
{
    uint64_t budget = (uint64_t)hs_cfg_get(HS_CFG_CLUSTER_CACHE_MB) << 20;
    if (budget == 0 || !hs_io_is_object_uri(uri))
        return;
    lock();
    vc_sec *s = find_locked(uri, size);
    if (s) {
        /* held: chunks that failed (or that workers gave up on) again */
        for (uint32_t c = 0; c < s->n_ch; c++)
            if (s->ch[c].state == CH_FAILED) {
                s->ch[c].state = CH_PENDING;
                s->next = 0;
            }
        s->used = ++g_tick;
        bool more = has_pending(s);
        unlock();
        if (more)
            start_workers();
        return;
    }
    unlock();
    uint64_t first = 0;
    uint32_t n_ch = 0;
    vc_chunk *ch = plan_chunks(size, dir, &first, &n_ch);
    uint64_t len = size - first;
    uint8_t *buf = ch && len <= budget ? hs_malloc_aligned((size_t)len) : NULL;
    char *name = buf ? hs_strdup(uri) : NULL;
    bool placed = false;
    lock();
    if (name && !find_locked(uri, size)) {
        /* room: the least recently used sections not in use, fetched ones first */
        while (g_bytes + len > budget) {
            vc_sec *old = NULL;
            for (int pass = 0; pass < 2 && !old; pass++)
                for (int i = 0; i < TBL_VCACHE_SLOTS; i++) {
                    vc_sec *o = &g_sec[i];
                    if (o->uri && o->busy == 0 && (pass == 1 || o->n_done == o->n_ch) &&
                        (!old || o->used < old->used))
                        old = o;
                }
            if (!old)
                break;
            drop_locked(old);
            g_st.evicted++;
        }
        vc_sec *slot = NULL;
        for (int i = 0; i < TBL_VCACHE_SLOTS && !slot; i++)
            if (!g_sec[i].uri)
                slot = &g_sec[i];
        if (slot && g_bytes + len <= budget) {
            *slot = (vc_sec){.uri = name, .size = size, .off = first, .len = len, .buf = buf,
                             .ch = ch, .n_ch = n_ch, .used = ++g_tick, .order = ++g_order};
            g_bytes += len;
            placed = true;
        }
    }
    unlock();
    if (!placed) {
        hs_free(name);
        hs_free_aligned(buf);
        hs_free(ch);
        return;
    }
    start_workers();
}

void tbl_vcache_get_stats(tbl_vcache_stats *out)
{
    lock();
    *out = g_st;
    out->bytes = g_bytes;
    out->sections = 0;
    for (int i = 0; i < TBL_VCACHE_SLOTS; i++)
        out->sections += g_sec[i].uri != NULL;
    unlock();
}
