/*
 * base/mem.c - the one allocation hook, live-allocation counting, and
 * out-of-memory injection.
 *
 * Every allocation of the library passes through hs_malloc / hs_calloc /
 * hs_realloc (and is released by hs_free), which
 *   1. asks the fault injector whether this allocation should fail
 *      (hs_mem_fail_after(n): the n-th allocation from now returns NULL, once);
 *   2. calls the installed hook (default: the C library);
 *   3. counts live blocks: +1 per successful malloc/calloc/realloc(NULL, ..),
 *      -1 per hs_free of a non-NULL pointer.
 *
 * Counters are C11 atomics, so worker threads may allocate concurrently; the
 * hook pointer itself is only swapped at start-up or in tests (not thread-safe,
 * as mem.h says).  Size 0 requests are rounded up to 1 byte so that a NULL
 * return always means out-of-memory.
 *
 * Aligned blocks (hs_malloc_aligned) are over-allocated through the hook:
 *
 *     raw                                              aligned (64-byte boundary)
 *     | padding ... | put_ms | next | cap | void *raw | cap (or size) bytes of user data |
 *                     a-32     a-24   a-16  a-8        a
 *
 * The original pointer is stashed in the word just before the aligned
 * address; hs_free_aligned reads it back and frees it with hs_free.
 *
 * Buffer pool.  Column buffers of a scan are large (a 65,536-row batch:
 * 256 KiB - 2 MiB per column) and short-lived (freed when the consumer
 * releases the Arrow arrays), and glibc returns such blocks to the kernel
 * on free (mmap'd chunks, heap trimming), so every scan faulted all its
 * output in afresh, 4 KiB at a time: a third of the CPU time of a full
 * lineitem scan was page faults.  So aligned blocks of POOL_MIN..POOL_MAX
 * bytes are rounded up to a size class (4 per power of two; cap stores
 * it, 0 for blocks outside the pool's range) and, when freed, kept in a
 * per-class LIFO list instead (next, put_ms) for the next allocation of
 * that class.  Bounded by bytes (buffer_pool_mb: default 1/16 of physical
 * memory within [64 MiB, 1 GiB]; 0 = off) and by age: blocks idle for
 * POOL_DECAY_MS are freed by the next pool operation after that, as
 * jemalloc decays dirty pages; hs_mem_pool_trim frees them all.  A pooled
 * block does not count as live (hs_mem_live_count: leak checks see it
 * freed), its bytes are poisoned under ASan (a use after release is still
 * caught), and the pool is bypassed while a non-default hook is installed
 * or a failure is armed (the hook sees every allocation, as before).
 *
 * The decode memory limit (memlimit.h, end of file) lives here too: two
 * atomics, defaulted from the environment once, that decoders of untrusted
 * bytes read through a hs_decode_budget.
 */
#include "base/mem.h"

#include "base/config.h"
#include "base/fork.h"
#include "base/memlimit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POOL_POISON(p, n) ((void)(p), (void)(n))
#define POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static void *default_malloc(size_t size, void *ctx) { (void)ctx; return malloc(size); }
static void *default_realloc(void *p, size_t size, void *ctx) { (void)ctx; return realloc(p, size); }
static void default_free(void *p, void *ctx) { (void)ctx; free(p); }

static const hs_alloc_hook default_hook = { default_malloc, default_realloc, default_free, NULL };
static hs_alloc_hook g_hook = { default_malloc, default_realloc, default_free, NULL };
static bool g_hook_is_default = true;

static _Atomic int64_t g_live;          /* live blocks */
static _Atomic int64_t g_fail_countdown; /* > 0: the allocation that brings it to 0 fails */

void hs_set_alloc_hook(const hs_alloc_hook *hook)
{
    hs_mem_pool_trim();   /* pooled blocks belong to the default hook */
    if (hook && hook->malloc_fn && hook->realloc_fn && hook->free_fn) {
        g_hook = *hook;
        g_hook_is_default = false;
    } else {
        g_hook = default_hook;
        g_hook_is_default = true;
    }
}

void hs_mem_fail_after(int64_t nth)
{
    atomic_store(&g_fail_countdown, nth > 0 ? nth : 0);
}

int64_t hs_mem_live_count(void)
{
    return atomic_load(&g_live);
}

/* True when this allocation is the one chosen to fail. */
static inline bool should_fail(void)
{
    int64_t c = atomic_load_explicit(&g_fail_countdown, memory_order_relaxed);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&g_fail_countdown, &c, c - 1))
            return c == 1;
    }
    return false;
}

void *hs_malloc(size_t size)
{
    if (should_fail())
        return NULL;
    void *p = g_hook.malloc_fn(size ? size : 1, g_hook.ctx);
    if (p)
        atomic_fetch_add_explicit(&g_live, 1, memory_order_relaxed);
    return p;
}

void *hs_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    if (should_fail())
        return NULL;
    if (total == 0)
        total = 1;
    void *p;
    if (g_hook_is_default) {
        p = calloc(1, total);   /* lets the C library hand out pre-zeroed pages */
    } else {
        p = g_hook.malloc_fn(total, g_hook.ctx);
        if (p)
            memset(p, 0, total);
    }
    if (p)
        atomic_fetch_add_explicit(&g_live, 1, memory_order_relaxed);
    return p;
}

void *hs_realloc(void *p, size_t size)
{
    if (!p)
        return hs_malloc(size);
    if (should_fail())
        return NULL;
    return g_hook.realloc_fn(p, size ? size : 1, g_hook.ctx);
}

void hs_free(void *p)
{
    if (!p)
        return;
    atomic_fetch_sub_explicit(&g_live, 1, memory_order_relaxed);
    g_hook.free_fn(p, g_hook.ctx);
}

char *hs_strdup(const char *s)
{
    if (!s)
        return NULL;
    return hs_strndup(s, strlen(s));
}

char *hs_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = hs_malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

#define HS_ALIGN 64
#define HDR 32                          /* put_ms, next, cap, raw: see the top */
#define POOL_MIN ((size_t)256 << 10)
#define POOL_MAX ((size_t)64 << 20)
#define POOL_K0 17                      /* classes start above 2^17 */
#define POOL_CLASSES 36                 /* (2^17, 2^26] in quarter steps */
#define POOL_DECAY_MS 5000

static inline size_t *hdr_cap(uint8_t *a) { return (size_t *)(void *)(a - 16); }
static inline uint8_t **hdr_next(uint8_t *a) { return (uint8_t **)(void *)(a - 24); }
static inline uint64_t *hdr_put(uint8_t *a) { return (uint64_t *)(void *)(a - 32); }
static inline void *hdr_raw(uint8_t *a) { void *r; memcpy(&r, a - 8, sizeof r); return r; }

static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_pool_mu, HS_FORK_RANK_MEMPOOL)
static uint8_t *g_pool_head[POOL_CLASSES];   /* LIFO per class, linked through hdr_next */
static size_t g_pool_bytes;
static int64_t g_pool_blocks, g_pool_hits;
static uint64_t g_pool_swept_ms;

/* The size class of a POOL_MIN..POOL_MAX request: its index, and its
 * capacity in *cap (the next of 2^k * 5/4, 6/4, 7/4, 8/4 at or above). */
static int pool_class(size_t size, size_t *cap)
{
    int k = 63 - __builtin_clzll((unsigned long long)(size - 1));   /* 2^k <= size-1 */
    size_t base = (size_t)1 << k, q = base / 4;
    size_t step = (size - base + q - 1) / q;                         /* 1..4 */
    *cap = base + step * q;
    return (k - POOL_K0) * 4 + (int)step - 1;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static size_t pool_budget(void)
{
    int64_t mb = hs_cfg_get(HS_CFG_BUFFER_POOL_MB);
    if (mb >= 0)
        return (size_t)mb << 20;
    static _Atomic size_t dflt;   /* computed once; racing threads compute the same */
    size_t d = atomic_load_explicit(&dflt, memory_order_relaxed);
    if (!d) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        size_t b = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 16 : 0;
        d = b < ((size_t)64 << 20) ? (size_t)64 << 20 : b > ((size_t)1 << 30) ? (size_t)1 << 30 : b;
        atomic_store_explicit(&dflt, d, memory_order_relaxed);
    }
    return d;
}

static bool pool_usable(void)
{
    return g_hook_is_default && atomic_load_explicit(&g_fail_countdown, memory_order_relaxed) == 0;
}

/* Unlinks (under the lock) the blocks put before `older_than` (all with
 * UINT64_MAX), or while the pool holds more than `keep` bytes, onto *dead. */
static void pool_cut(uint64_t older_than, size_t keep, uint8_t **dead)
{
    for (int c = 0; c < POOL_CLASSES; c++) {
        uint8_t **pp = &g_pool_head[c];
        while (*pp) {
            uint8_t *a = *pp;
            if (*hdr_put(a) < older_than || g_pool_bytes > keep) {
                *pp = *hdr_next(a);
                g_pool_bytes -= *hdr_cap(a);
                g_pool_blocks--;
                *hdr_next(a) = *dead;
                *dead = a;
            } else {
                pp = hdr_next(a);
            }
        }
    }
}

static void pool_free_list(uint8_t *a)
{
    while (a) {
        uint8_t *next = *hdr_next(a);
        POOL_UNPOISON(a, *hdr_cap(a));
        free(hdr_raw(a));   /* pooled blocks come from the default hook */
        a = next;
    }
}

/* Age-based trim, at most once a second; under the lock. */
static void pool_sweep(uint64_t now, uint8_t **dead)
{
    if (now - g_pool_swept_ms < 1000)
        return;
    g_pool_swept_ms = now;
    if (g_pool_blocks > 0)
        pool_cut(now > POOL_DECAY_MS ? now - POOL_DECAY_MS : 0, g_pool_bytes, dead);
}

void hs_mem_pool_trim(void)
{
    uint8_t *dead = NULL;
    pthread_mutex_lock(&g_pool_mu);
    pool_cut(UINT64_MAX, 0, &dead);
    pthread_mutex_unlock(&g_pool_mu);
    pool_free_list(dead);
}

void hs_mem_pool_stats(int64_t *blocks, int64_t *bytes, int64_t *hits)
{
    pthread_mutex_lock(&g_pool_mu);
    if (blocks)
        *blocks = g_pool_blocks;
    if (bytes)
        *bytes = (int64_t)g_pool_bytes;
    if (hits)
        *hits = g_pool_hits;
    pthread_mutex_unlock(&g_pool_mu);
}

static uint8_t *pool_take(int c)
{
    uint8_t *dead = NULL;
    pthread_mutex_lock(&g_pool_mu);
    uint8_t *a = g_pool_head[c];
    if (a) {
        g_pool_head[c] = *hdr_next(a);
        g_pool_bytes -= *hdr_cap(a);
        g_pool_blocks--;
        g_pool_hits++;
    }
    if (g_pool_blocks > 0)
        pool_sweep(now_ms(), &dead);
    pthread_mutex_unlock(&g_pool_mu);
    pool_free_list(dead);
    if (a) {
        POOL_UNPOISON(a, *hdr_cap(a));
        atomic_fetch_add_explicit(&g_live, 1, memory_order_relaxed);
    }
    return a;
}

/* Keeps block a (of a pool class) for reuse; false when the pool is full. */
static bool pool_give(uint8_t *a)
{
    size_t cap = *hdr_cap(a), budget = pool_budget();
    int c = pool_class(cap, &cap);
    uint8_t *dead = NULL;
    bool kept = false;
    uint64_t now = now_ms();
    pthread_mutex_lock(&g_pool_mu);
    pool_sweep(now, &dead);
    if (g_pool_bytes > budget)   /* the budget was lowered */
        pool_cut(0, budget, &dead);
    if (g_pool_bytes + cap <= budget) {
        *hdr_next(a) = g_pool_head[c];
        *hdr_put(a) = now;
        g_pool_head[c] = a;
        g_pool_bytes += cap;
        g_pool_blocks++;
        kept = true;
    }
    pthread_mutex_unlock(&g_pool_mu);
    pool_free_list(dead);
    if (kept) {
        POOL_POISON(a, cap);
        atomic_fetch_sub_explicit(&g_live, 1, memory_order_relaxed);
    }
    return kept;
}

void *hs_malloc_aligned(size_t size)
{
    size_t cap = 0;
    int c = -1;
    if (size >= POOL_MIN && size <= POOL_MAX && pool_usable()) {
        c = pool_class(size, &cap);
        uint8_t *a = pool_take(c);
        if (a)
            return a;
        size = cap;
    }
    size_t total;
    if (__builtin_add_overflow(size, (size_t)HS_ALIGN + HDR, &total))
        return NULL;
    uint8_t *raw = hs_malloc(total);
    if (!raw)
        return NULL;
    uintptr_t a = ((uintptr_t)raw + HDR + HS_ALIGN - 1) & ~(uintptr_t)(HS_ALIGN - 1);
    memcpy((void *)(a - sizeof(void *)), &raw, sizeof raw);
    *hdr_cap((uint8_t *)a) = c >= 0 ? cap : 0;
    return (void *)a;
}

void hs_free_aligned(void *p)
{
    if (!p)
        return;
    uint8_t *a = p;
    if (*hdr_cap(a) && g_hook_is_default && pool_give(a))
        return;
    hs_free(hdr_raw(a));
}

/* ---- the decode memory limit (memlimit.h) ---- */

/* The limit's settings live in base/config ("decode_limit_mb",
 * "decode_limit_per_byte" and their environment variables, read once);
 * hs_decode_limit_set overrides both with byte-exact values until either
 * setting changes again (g_decode_seen remembers them at the override). */
static _Atomic uint64_t g_decode_floor, g_decode_per_byte;
static _Atomic int64_t g_decode_seen_mb = INT64_MIN, g_decode_seen_pb = INT64_MIN;

void hs_decode_limit_set(uint64_t floor_bytes, uint64_t per_input_byte)
{
    atomic_store(&g_decode_floor, floor_bytes);
    atomic_store(&g_decode_per_byte, per_input_byte);
    atomic_store(&g_decode_seen_mb, hs_cfg_get(HS_CFG_DECODE_LIMIT_MB));
    atomic_store(&g_decode_seen_pb, hs_cfg_get(HS_CFG_DECODE_LIMIT_PER_BYTE));
}

void hs_decode_limit_get(uint64_t *floor_bytes, uint64_t *per_input_byte)
{
    int64_t mb = hs_cfg_get(HS_CFG_DECODE_LIMIT_MB);
    int64_t pb = hs_cfg_get(HS_CFG_DECODE_LIMIT_PER_BYTE);
    uint64_t floor, per_byte;
    if (atomic_load(&g_decode_seen_mb) == mb && atomic_load(&g_decode_seen_pb) == pb) {
        floor = atomic_load(&g_decode_floor);
        per_byte = atomic_load(&g_decode_per_byte);
    } else {
        floor = (uint64_t)mb > (UINT64_MAX >> 20) ? UINT64_MAX : (uint64_t)mb << 20;
        per_byte = (uint64_t)pb;
    }
    if (floor_bytes)
        *floor_bytes = floor;
    if (per_input_byte)
        *per_input_byte = per_byte;
}

uint64_t hs_decode_limit(uint64_t input_len)
{
    uint64_t floor, per_byte, scaled, sum;
    hs_decode_limit_get(&floor, &per_byte);
    if (__builtin_mul_overflow(input_len, per_byte, &scaled) ||
        __builtin_add_overflow(floor, scaled, &sum))
        return UINT64_MAX;
    return sum;
}

void hs_decode_budget_init(hs_decode_budget *b, uint64_t input_len)
{
    b->input = input_len;
    b->limit = hs_decode_limit(input_len);
    b->used = 0;
}

hs_status hs_decode_charge_at(hs_decode_budget *b, uint64_t n, hs_error *err, const char *what,
                              const char *file, int line)
{
    if (HS_LIKELY(n <= b->limit && b->used <= b->limit - n)) {
        b->used += n;
        return HS_OK;
    }
    uint64_t floor, per_byte;
    hs_decode_limit_get(&floor, &per_byte);
    return hs_err_corrupt_at(err, file, line,
                             "%s: decoding %llu input bytes needs more than %llu bytes of memory "
                             "(the decode memory limit: %llu MiB + %llu per input byte; "
                             "HS_DECODE_LIMIT_MB / HS_DECODE_LIMIT_PER_BYTE raise it)",
                             what ? what : "decode", (unsigned long long)b->input,
                             (unsigned long long)b->limit, (unsigned long long)(floor >> 20),
                             (unsigned long long)per_byte);
}

#define HUGE_PAGE ((size_t)2 << 20)   /* transparent huge page size */
#define HUGE_MIN ((size_t)8 << 20)    /* regions from this size ask for them */

void hs_mem_advise_huge(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    if (p && size >= HUGE_MIN) {
        uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        uintptr_t hi = ((uintptr_t)p + size) & ~(uintptr_t)(HUGE_PAGE - 1);
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#else
    (void)p;
    (void)size;
#endif
}
