/*
 * base/hashmap.h - open-addressing hash map from byte-string keys to uint64.
 *
 * Linear probing over a power-of-two table, load factor <= 0.7, hashing with
 * xxhash64.  Keys are copied into an internal arena (the map owns them); the
 * value is a uint64 (an index, an id, or a pointer cast to uintptr_t).  Used
 * for dictionary encoding, name lookups and string interning, so the lookup
 * path does not allocate.  A zeroed hs_map is a valid empty map.
 */
#ifndef HS_BASE_HASHMAP_H
#define HS_BASE_HASHMAP_H

#include "base/arena.h"
#include "base/error.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct hs_map_slot {
    const uint8_t *key;  /* NULL = empty */
    uint32_t key_len;
    uint32_t hash_hi;    /* top bits of the hash, to skip most key compares */
    uint64_t value;
} hs_map_slot;

typedef struct hs_map {
    hs_map_slot *slots;
    size_t cap;          /* power of two, or 0 */
    size_t count;
    hs_arena keys;
} hs_map;

/* Finds key; returns true and stores its value in *value (if non-NULL). */
bool hs_map_get(const hs_map *m, const void *key, size_t key_len, uint64_t *value);
/* Inserts or overwrites. */
HS_MUST_USE hs_status hs_map_put(hs_map *m, const void *key, size_t key_len, uint64_t value);
/* Returns the existing value in *value and *found=true, or inserts `value` and
 * sets *found=false (the dictionary-encoder primitive: one probe). */
HS_MUST_USE hs_status hs_map_get_or_put(hs_map *m, const void *key, size_t key_len,
                                        uint64_t value, uint64_t *value_out, bool *found);
bool hs_map_remove(hs_map *m, const void *key, size_t key_len);
void hs_map_clear(hs_map *m);  /* empties, keeps the table */
void hs_map_free(hs_map *m);   /* frees everything, zeroes m */
/* Iteration: for (i = 0; i < m->cap; i++) if (m->slots[i].key) ... */

/*
 * hs_imap: the same map for fixed-width keys of up to 8 bytes (INT32/INT64/
 * FLOAT/DOUBLE dictionary encoding: pass the value's bit pattern as a
 * uint64).  Keys and values live inline in 16-byte slots, so a lookup touches
 * one cache line instead of a slot plus an arena key.  Values must be below
 * UINT64_MAX.  A zeroed hs_imap is a valid empty map.
 * Iteration: for (i = 0; i < m->cap; i++) if (m->slots[i].value_plus1)
 *                use m->slots[i].key, m->slots[i].value_plus1 - 1
 */
typedef struct hs_imap_slot {
    uint64_t key;
    uint64_t value_plus1;  /* 0 = empty */
} hs_imap_slot;

typedef struct hs_imap {
    hs_imap_slot *slots;
    size_t cap;            /* power of two, or 0 */
    size_t count;
    unsigned shift;        /* 64 - log2(cap) */
} hs_imap;

bool hs_imap_get(const hs_imap *m, uint64_t key, uint64_t *value);
HS_MUST_USE hs_status hs_imap_put(hs_imap *m, uint64_t key, uint64_t value);
HS_MUST_USE hs_status hs_imap_get_or_put(hs_imap *m, uint64_t key, uint64_t value,
                                         uint64_t *value_out, bool *found);
/* Grows the table once so that n keys fit without further resizing. */
HS_MUST_USE hs_status hs_imap_reserve(hs_imap *m, size_t n);
void hs_imap_clear(hs_imap *m);
void hs_imap_free(hs_imap *m);

#endif
