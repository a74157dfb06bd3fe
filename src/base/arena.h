/*
 * base/arena.h - region allocator with one named lifetime.
 *
 * An arena hands out 16-byte aligned pieces from chunks it mallocs (doubling
 * up to 1 MiB, larger requests get their own chunk).  Nothing is freed
 * individually: hs_arena_reset releases everything but the first chunk (the
 * per-batch / per-request pattern), hs_arena_destroy releases all.  A zeroed
 * hs_arena is valid and empty.
 */
#ifndef HS_BASE_ARENA_H
#define HS_BASE_ARENA_H

#include <stddef.h>

typedef struct hs_arena_chunk hs_arena_chunk;
typedef struct hs_arena {
    hs_arena_chunk *head;
    size_t used_total;   /* bytes handed out since the last reset */
} hs_arena;

void *hs_arena_alloc(hs_arena *a, size_t size);   /* NULL on out-of-memory */
void *hs_arena_calloc(hs_arena *a, size_t n, size_t size);
char *hs_arena_strndup(hs_arena *a, const char *s, size_t n);
void hs_arena_reset(hs_arena *a);
void hs_arena_destroy(hs_arena *a);

#endif
