/*
 * base/hashmap.c - open-addressing hash map from byte strings to uint64.
 *
 * Table: `cap` slots (a power of two, >= 16 once used), linear probing,
 * grown x2 before an insert would take the load above 0.7.
 *
 *     h        = XXH3-64(key)          (the 64-bit xxhash family; see below)
 *     hash_hi  = (uint32_t)(h >> 32)   stored in the slot
 *     home     = hash_hi & (cap - 1)   first slot probed
 *
 * Because the home slot is derived from the stored hash_hi, growing the table
 * re-places slots without hashing any key again; and a lookup compares
 * hash_hi (all 32 bits) before key_len and memcmp, so a false key compare
 * happens with probability 2^-32.  Capacity is therefore limited to 2^31.
 *
 * Why XXH3 rather than the classic XXH64: hashes never leave memory, and XXH3
 * is several times faster on the short keys dictionary encoding produces
 * (8-byte integers, short strings); it is the same library (libxxhash, here
 * inlined for the hot path).
 *
 * Invariants: slot.key == NULL means empty (zero-length keys point at a
 * zero-byte arena piece, never NULL).  There are no tombstones: hs_map_remove
 * shifts later members of the probe run back (backward-shift deletion), so
 * every key stays reachable from its home slot without passing an empty slot.
 * Keys live in m->keys (an arena); removed keys' bytes are reclaimed only by
 * hs_map_clear / hs_map_free.
 *
 * hs_imap (integer keys, at the end of this file) keeps key and value inline
 * in 16-byte slots and places them by Fibonacci hashing:
 *     home = (key * 0x9E3779B97F4A7C15) >> shift,   shift = 64 - log2(cap)
 * (the multiply's top bits mix every key bit).  value_plus1 == 0 marks an
 * empty slot.  Same load factor and probing; no removal.
 */
#include "base/hashmap.h"
#include "base/mem.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define MAP_MIN_CAP 16
#define MAP_MAX_CAP ((size_t)1 << 31)

static inline uint32_t map_hash(const void *key, size_t key_len)
{
    return (uint32_t)(XXH3_64bits(key, key_len) >> 32);
}

static inline bool slot_matches(const hs_map_slot *s, uint32_t h, const void *key, size_t key_len)
{
    if (s->hash_hi != h || s->key_len != key_len)
        return false;
    /* Fixed-width values (dictionary encoding) compare without a libc call. */
    if (key_len == 8) {
        uint64_t a, b;
        memcpy(&a, s->key, 8);
        memcpy(&b, key, 8);
        return a == b;
    }
    if (key_len == 4) {
        uint32_t a, b;
        memcpy(&a, s->key, 4);
        memcpy(&b, key, 4);
        return a == b;
    }
    return key_len == 0 || memcmp(s->key, key, key_len) == 0;
}

/* Index of key's slot, or of the empty slot where it would go. */
static inline size_t map_find(const hs_map *m, uint32_t h, const void *key, size_t key_len)
{
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    for (;;) {
        const hs_map_slot *s = &m->slots[i];
        if (!s->key || slot_matches(s, h, key, key_len))
            return i;
        i = (i + 1) & mask;
    }
}

static hs_status map_resize(hs_map *m, size_t new_cap)
{
    if (new_cap > MAP_MAX_CAP)
        return HS_NOMEM;
    hs_map_slot *ns = hs_calloc(new_cap, sizeof *ns);
    if (!ns)
        return HS_NOMEM;
    hs_mem_advise_huge(ns, new_cap * sizeof *ns);   /* filled at random: faults */
    size_t mask = new_cap - 1;
    for (size_t j = 0; j < m->cap; j++) {
        const hs_map_slot *s = &m->slots[j];
        if (!s->key)
            continue;
        size_t i = s->hash_hi & mask;
        while (ns[i].key)
            i = (i + 1) & mask;
        ns[i] = *s;
    }
    hs_free(m->slots);
    m->slots = ns;
    m->cap = new_cap;
    return HS_OK;
}

/* Makes room for one more key. */
static inline hs_status map_reserve_one(hs_map *m)
{
    if (HS_LIKELY((m->count + 1) * 10 <= m->cap * 7))
        return HS_OK;
    return map_resize(m, m->cap ? m->cap * 2 : MAP_MIN_CAP);
}

static inline hs_status map_insert_at(hs_map *m, size_t i, uint32_t h, const void *key,
                                      size_t key_len, uint64_t value)
{
    uint8_t *copy = hs_arena_alloc(&m->keys, key_len);
    if (!copy)
        return HS_NOMEM;
    if (key_len)
        memcpy(copy, key, key_len);
    hs_map_slot *s = &m->slots[i];
    s->key = copy;
    s->key_len = (uint32_t)key_len;
    s->hash_hi = h;
    s->value = value;
    m->count++;
    return HS_OK;
}

bool hs_map_get(const hs_map *m, const void *key, size_t key_len, uint64_t *value)
{
    if (m->count == 0 || key_len > UINT32_MAX)
        return false;
    uint32_t h = map_hash(key, key_len);
    size_t i = map_find(m, h, key, key_len);
    if (!m->slots[i].key)
        return false;
    if (value)
        *value = m->slots[i].value;
    return true;
}

hs_status hs_map_put(hs_map *m, const void *key, size_t key_len, uint64_t value)
{
    if (key_len > UINT32_MAX)
        return HS_INVALID;
    HS_TRY(map_reserve_one(m));
    uint32_t h = map_hash(key, key_len);
    size_t i = map_find(m, h, key, key_len);
    if (m->slots[i].key) {
        m->slots[i].value = value;
        return HS_OK;
    }
    return map_insert_at(m, i, h, key, key_len, value);
}

hs_status hs_map_get_or_put(hs_map *m, const void *key, size_t key_len, uint64_t value,
                            uint64_t *value_out, bool *found)
{
    if (HS_UNLIKELY(key_len > UINT32_MAX))
        return HS_INVALID;
    HS_TRY(map_reserve_one(m));
    uint32_t h = map_hash(key, key_len);
    size_t i = map_find(m, h, key, key_len);
    if (m->slots[i].key) {
        if (value_out)
            *value_out = m->slots[i].value;
        if (found)
            *found = true;
        return HS_OK;
    }
    HS_TRY(map_insert_at(m, i, h, key, key_len, value));
    if (value_out)
        *value_out = value;
    if (found)
        *found = false;
    return HS_OK;
}

bool hs_map_remove(hs_map *m, const void *key, size_t key_len)
{
    if (m->count == 0 || key_len > UINT32_MAX)
        return false;
    uint32_t h = map_hash(key, key_len);
    size_t mask = m->cap - 1;
    size_t i = map_find(m, h, key, key_len);
    if (!m->slots[i].key)
        return false;
    /* Backward-shift: pull later members of the run into the hole when their
     * home slot is not cyclically inside (hole, j]. */
    size_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        hs_map_slot *s = &m->slots[j];
        if (!s->key)
            break;
        size_t home = s->hash_hi & mask;
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            m->slots[hole] = *s;
            hole = j;
        }
    }
    memset(&m->slots[hole], 0, sizeof m->slots[hole]);
    m->count--;
    return true;
}

void hs_map_clear(hs_map *m)
{
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
    hs_arena_reset(&m->keys);
}

void hs_map_free(hs_map *m)
{
    if (!m)
        return;
    hs_free(m->slots);
    hs_arena_destroy(&m->keys);
    memset(m, 0, sizeof *m);
}

/* ---- hs_imap: inline 8-byte keys --------------------------------------- */

static inline size_t imap_home(const hs_imap *m, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> m->shift);
}

static hs_status imap_resize(hs_imap *m, size_t new_cap)
{
    if (new_cap > MAP_MAX_CAP)
        return HS_NOMEM;
    hs_imap_slot *ns = hs_calloc(new_cap, sizeof *ns);
    if (!ns)
        return HS_NOMEM;
    hs_mem_advise_huge(ns, new_cap * sizeof *ns);
    hs_imap_slot *old = m->slots;
    size_t old_cap = m->cap;
    m->slots = ns;
    m->cap = new_cap;
    m->shift = (unsigned)(64 - __builtin_ctzll((unsigned long long)new_cap));
    size_t mask = new_cap - 1;
    for (size_t j = 0; j < old_cap; j++) {
        if (!old[j].value_plus1)
            continue;
        size_t i = imap_home(m, old[j].key);
        while (ns[i].value_plus1)
            i = (i + 1) & mask;
        ns[i] = old[j];
    }
    hs_free(old);
    return HS_OK;
}

/* Index of key's slot, or of the empty slot where it would go. */
static inline size_t imap_find(const hs_imap *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    size_t i = imap_home(m, key);
    while (m->slots[i].value_plus1 && m->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

bool hs_imap_get(const hs_imap *m, uint64_t key, uint64_t *value)
{
    if (m->count == 0)
        return false;
    size_t i = imap_find(m, key);
    if (!m->slots[i].value_plus1)
        return false;
    if (value)
        *value = m->slots[i].value_plus1 - 1;
    return true;
}

static inline hs_status imap_reserve_one(hs_imap *m)
{
    if (HS_LIKELY((m->count + 1) * 10 <= m->cap * 7))
        return HS_OK;
    return imap_resize(m, m->cap ? m->cap * 2 : MAP_MIN_CAP);
}

hs_status hs_imap_reserve(hs_imap *m, size_t n)
{
    if (n > MAP_MAX_CAP / 2)
        return HS_NOMEM;
    size_t cap = m->cap ? m->cap : MAP_MIN_CAP;
    while (n * 10 > cap * 7)
        cap *= 2;
    return cap == m->cap ? HS_OK : imap_resize(m, cap);
}

hs_status hs_imap_put(hs_imap *m, uint64_t key, uint64_t value)
{
    if (value == UINT64_MAX)
        return HS_INVALID;
    HS_TRY(imap_reserve_one(m));
    size_t i = imap_find(m, key);
    if (!m->slots[i].value_plus1) {
        m->slots[i].key = key;
        m->count++;
    }
    m->slots[i].value_plus1 = value + 1;
    return HS_OK;
}

hs_status hs_imap_get_or_put(hs_imap *m, uint64_t key, uint64_t value, uint64_t *value_out,
                             bool *found)
{
    if (HS_UNLIKELY(value == UINT64_MAX))
        return HS_INVALID;
    HS_TRY(imap_reserve_one(m));
    size_t i = imap_find(m, key);
    hs_imap_slot *s = &m->slots[i];
    bool was = s->value_plus1 != 0;
    if (!was) {
        s->key = key;
        s->value_plus1 = value + 1;
        m->count++;
    }
    if (value_out)
        *value_out = s->value_plus1 - 1;
    if (found)
        *found = was;
    return HS_OK;
}

void hs_imap_clear(hs_imap *m)
{
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
}

void hs_imap_free(hs_imap *m)
{
    if (!m)
        return;
    hs_free(m->slots);
    memset(m, 0, sizeof *m);
}
