/*
 * base/arena.c - region allocator with one named lifetime.
 *
 * Chunk list, newest first (a->head is where allocations are carved from):
 *
 *     hs_arena.head -> [chunk k] -> [chunk k-1] -> ... -> [chunk 0] -> NULL
 *     chunk: | next | size | used | pad to 16 | data[size] |
 *
 * Normal chunks double in size from 4 KiB up to 1 MiB.  A request larger than
 * the next normal chunk gets a chunk of its own, linked *behind* the head so
 * the head's free space keeps being used.  Pieces are 16-byte aligned (the
 * cursor is rounded up, so any hook alignment works).
 *
 * hs_arena_reset keeps one chunk (the largest normal one, so a per-batch arena
 * settles at a size that fits one batch without further mallocs) and frees
 * the rest; hs_arena_destroy frees all.  A zeroed hs_arena is valid.
 */
#include "base/arena.h"
#include "base/mem.h"

#include <stdint.h>
#include <string.h>

#define ARENA_ALIGN 16
#define ARENA_MIN_CHUNK ((size_t)4096)
#define ARENA_MAX_CHUNK ((size_t)1 << 20)

struct hs_arena_chunk {
    hs_arena_chunk *next;
    size_t size;   /* usable bytes after the header */
    size_t used;   /* cursor, relative to chunk_data() */
    size_t pad_;
};

static inline uint8_t *chunk_data(hs_arena_chunk *c)
{
    uintptr_t p = (uintptr_t)(c + 1);
    return (uint8_t *)((p + ARENA_ALIGN - 1) & ~(uintptr_t)(ARENA_ALIGN - 1));
}

static hs_arena_chunk *chunk_new(size_t size)
{
    size_t total;
    if (__builtin_add_overflow(size, sizeof(hs_arena_chunk) + ARENA_ALIGN, &total))
        return NULL;
    hs_arena_chunk *c = hs_malloc(total);
    if (!c)
        return NULL;
    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

/* Aligned offset of a `size` piece in c, or SIZE_MAX when it does not fit. */
static inline size_t chunk_fit(const hs_arena_chunk *c, size_t size)
{
    size_t off = (c->used + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (off > c->size || c->size - off < size)
        return SIZE_MAX;
    return off;
}

void *hs_arena_alloc(hs_arena *a, size_t size)
{
    hs_arena_chunk *c = a->head;
    if (__builtin_expect(c != NULL, 1)) {
        size_t off = chunk_fit(c, size);
        if (off != SIZE_MAX) {
            c->used = off + size;
            a->used_total += size;
            return chunk_data(c) + off;
        }
    }
    size_t next = c ? c->size * 2 : ARENA_MIN_CHUNK;
    if (next > ARENA_MAX_CHUNK)
        next = ARENA_MAX_CHUNK;
    if (next < ARENA_MIN_CHUNK)
        next = ARENA_MIN_CHUNK;
    if (size > next) {
        /* Oversized: its own chunk, behind the head. */
        hs_arena_chunk *big = chunk_new(size);
        if (!big)
            return NULL;
        big->used = size;
        if (c) {
            big->next = c->next;
            c->next = big;
        } else {
            a->head = big;
        }
        a->used_total += size;
        return chunk_data(big);
    }
    hs_arena_chunk *n = chunk_new(next);
    if (!n)
        return NULL;
    n->next = c;
    a->head = n;
    n->used = size;
    a->used_total += size;
    return chunk_data(n);
}

void *hs_arena_calloc(hs_arena *a, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    void *p = hs_arena_alloc(a, total);
    if (p)
        memset(p, 0, total);
    return p;
}

char *hs_arena_strndup(hs_arena *a, const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = hs_arena_alloc(a, len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

void hs_arena_reset(hs_arena *a)
{
    hs_arena_chunk *keep = NULL;
    for (hs_arena_chunk *c = a->head; c; c = c->next)
        if (c->size <= ARENA_MAX_CHUNK && (!keep || c->size > keep->size))
            keep = c;
    hs_arena_chunk *c = a->head;
    while (c) {
        hs_arena_chunk *next = c->next;
        if (c != keep)
            hs_free(c);
        c = next;
    }
    if (keep) {
        keep->next = NULL;
        keep->used = 0;
    }
    a->head = keep;
    a->used_total = 0;
}

void hs_arena_destroy(hs_arena *a)
{
    if (!a)
        return;
    hs_arena_chunk *c = a->head;
    while (c) {
        hs_arena_chunk *next = c->next;
        hs_free(c);
        c = next;
    }
    a->head = NULL;
    a->used_total = 0;
}
