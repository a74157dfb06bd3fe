/*
 * base/mem.h - the one allocation hook.
 *
 * All library memory goes through hs_malloc/hs_calloc/hs_realloc/hs_free so
 * that tests can count live allocations (leak checks) and inject failures
 * (the k-th allocation fails, like SQLite's fault-injection tests).  The
 * default hook is the C library's allocator.  hs_free(NULL) is a no-op.
 */
#ifndef HS_BASE_MEM_H
#define HS_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_alloc_hook {
    void *(*malloc_fn)(size_t size, void *ctx);
    void *(*realloc_fn)(void *p, size_t size, void *ctx);
    void (*free_fn)(void *p, void *ctx);
    void *ctx;
} hs_alloc_hook;

void *hs_malloc(size_t size);
void *hs_calloc(size_t n, size_t size);   /* checks n*size for overflow */
void *hs_realloc(void *p, size_t size);
void hs_free(void *p);
char *hs_strdup(const char *s);            /* caller frees with hs_free */
char *hs_strndup(const char *s, size_t n); /* caller frees with hs_free */
/* 64-byte aligned allocation for column buffers; free with hs_free_aligned. */
/* Advice that [p, p + size) is fresh memory worth 2 MiB pages (where the
 * system grants them on request, one fault instead of 512); only for sizes
 * of 8 MiB or more, and only the 2 MiB-aligned interior.  No effect on
 * correctness. */
void hs_mem_advise_huge(void *p, size_t size);
/* Blocks of 256 KiB - 64 MiB come from (and go back to) a bounded pool of
 * recently freed ones (mem.c: "Buffer pool"): their contents are undefined,
 * like malloc's. */
void *hs_malloc_aligned(size_t size);
void hs_free_aligned(void *p);
/* Frees every block the buffer pool keeps (tests, before counting memory). */
void hs_mem_pool_trim(void);
/* What the pool keeps now, and how many allocations it served since start-up. */
void hs_mem_pool_stats(int64_t *blocks, int64_t *bytes, int64_t *hits);

/* Install a hook (NULL restores the default).  Not thread-safe: call at start-up or in tests. */
void hs_set_alloc_hook(const hs_alloc_hook *hook);

/* Test support: fail the allocation number `nth` counted from now (0 = disable),
 * and read the number of allocations made and still live since start-up. */
void hs_mem_fail_after(int64_t nth);
int64_t hs_mem_live_count(void);

#endif
