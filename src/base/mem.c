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
 *     raw                         aligned (64-byte boundary)
 *     | padding ... | void *raw  | size bytes of user data ... |
 *
 * The original pointer is stashed in the word just before the aligned
 * address; hs_free_aligned reads it back and frees it with hs_free.
 *
 * The decode memory limit (memlimit.h, end of file) lives here too: two
 * atomics, defaulted from the environment once, that decoders of untrusted
 * bytes read through a hs_decode_budget.
 */
#include "base/mem.h"

#include "base/config.h"
#include "base/memlimit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

void *hs_malloc_aligned(size_t size)
{
    size_t total;
    if (__builtin_add_overflow(size, (size_t)HS_ALIGN + sizeof(void *), &total))
        return NULL;
    uint8_t *raw = hs_malloc(total);
    if (!raw)
        return NULL;
    uintptr_t a = ((uintptr_t)raw + sizeof(void *) + HS_ALIGN - 1) & ~(uintptr_t)(HS_ALIGN - 1);
    memcpy((void *)(a - sizeof(void *)), &raw, sizeof raw);
    return (void *)a;
}

void hs_free_aligned(void *p)
{
    if (!p)
        return;
    void *raw;
    memcpy(&raw, (uint8_t *)p - sizeof(void *), sizeof raw);
    hs_free(raw);
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
