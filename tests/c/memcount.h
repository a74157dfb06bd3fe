/*
 * tests/c/memcount.h - byte-counting allocation hook for tests that bound a
 * decoder's memory against the size of its input.
 *
 * memcount_install() puts a hook behind hs_malloc that prefixes every block
 * with its size, so the test can read the bytes live now, the peak since the
 * last memcount_reset() and the total asked for since then (every malloc and
 * every realloc's new size).  Install it first thing in main and never remove
 * it: a block allocated before the hook and freed after it (or the reverse)
 * would be freed by the wrong allocator.  Memory the C library or third-party
 * libraries allocate without hs_malloc is not seen.
 */
#ifndef HS_TEST_MEMCOUNT_H
#define HS_TEST_MEMCOUNT_H

#include "base/mem.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct memcount {
    uint64_t live;    /* bytes live now */
    uint64_t peak;    /* highest `live` since memcount_reset */
    uint64_t total;   /* bytes requested since memcount_reset */
    uint64_t largest; /* largest single request since memcount_reset */
} memcount;

static memcount g_memcount;

#define MEMCOUNT_HDR 16 /* keeps the 16-byte alignment malloc gives */

static void memcount_add(uint64_t n)
{
    g_memcount.live += n;
    g_memcount.total += n;
    if (g_memcount.live > g_memcount.peak)
        g_memcount.peak = g_memcount.live;
    if (n > g_memcount.largest)
        g_memcount.largest = n;
}

static void *memcount_malloc(size_t n, void *ctx)
{
    (void)ctx;
    if (n > SIZE_MAX - MEMCOUNT_HDR)
        return NULL;
    unsigned char *p = malloc(n + MEMCOUNT_HDR);
    if (!p)
        return NULL;
    *(size_t *)p = n;
    memcount_add(n);
    return p + MEMCOUNT_HDR;
}

static void *memcount_realloc(void *q, size_t n, void *ctx)
{
    (void)ctx;
    if (n > SIZE_MAX - MEMCOUNT_HDR)
        return NULL;
    unsigned char *p = (unsigned char *)q - MEMCOUNT_HDR;
    size_t old = *(size_t *)p;
    unsigned char *r = realloc(p, n + MEMCOUNT_HDR);
    if (!r)
        return NULL;
    *(size_t *)r = n;
    g_memcount.live -= old;
    memcount_add(n);
    return r + MEMCOUNT_HDR;
}

static void memcount_free(void *q, void *ctx)
{
    (void)ctx;
    unsigned char *p = (unsigned char *)q - MEMCOUNT_HDR;
    g_memcount.live -= *(size_t *)p;
    free(p);
}

static inline void memcount_install(void)
{
    static const hs_alloc_hook hook = {memcount_malloc, memcount_realloc, memcount_free, NULL};
    hs_set_alloc_hook(&hook);
}

/* Starts a measurement: peak and total count from the bytes live now. */
static inline void memcount_reset(void)
{
    g_memcount.peak = g_memcount.live;
    g_memcount.total = 0;
    g_memcount.largest = 0;
}

/* Bytes above the live level at the last reset, at the peak. */
static inline uint64_t memcount_peak_since(uint64_t base) { return g_memcount.peak - base; }

#endif
