/*
 * base/keyfilter.h - a compact membership filter over a set of 64-bit
 * integer keys, for runtime join filters: a hash join that has built its
 * table hands one of these to the scan on its probe side, which drops rows
 * whose key cannot be in the set before decoding their other columns.
 *
 * A filter always holds the keys' range [min, max] and then one of:
 *   bitmap  one bit per value of [min, max] (exact) when the range is at
 *           most 32 bits a key or 1M bits (dense keys: TPC-H part, supplier, orders)
 *   bloom   a split-block bloom filter (Parquet's SBBF layout: 256-bit
 *           blocks of eight 32-bit words, one bit set per word by eight
 *           odd salts), 16 bits a key (false positives about 0.1%), at
 *           most HS_KEYFILTER_MAX_BYTES; otherwise
 *   range   the range only (no keys: empty, which keeps nothing).
 * A filter never says no to a key that was added (no false negatives).
 * It is immutable once built, so threads may probe it at once.
 */
#ifndef HS_BASE_KEYFILTER_H
#define HS_BASE_KEYFILTER_H

#include "base/error.h"

#include <stdbool.h>
#include <stdint.h>

#define HS_KEYFILTER_MAX_BYTES ((int64_t)64 << 20)

typedef enum hs_keyfilter_kind {
    HS_KEYFILTER_EMPTY = 0, HS_KEYFILTER_RANGE, HS_KEYFILTER_BITMAP, HS_KEYFILTER_BLOOM
} hs_keyfilter_kind;

typedef struct hs_keyfilter {
    hs_keyfilter_kind kind;
    int64_t n_keys;        /* keys added (with repeats) */
    int64_t min, max;      /* of the keys (kind != EMPTY) */
    uint64_t *bits;        /* BITMAP: bit v - min; BLOOM: the blocks (owned) */
    uint64_t n_blocks;     /* BLOOM: 256-bit blocks */
} hs_keyfilter;

/* A filter of the n keys (may repeat; n 0 = the empty filter).  Caller
 * frees with hs_keyfilter_free. */
HS_MUST_USE hs_status hs_keyfilter_build(const int64_t *keys, int64_t n, hs_keyfilter **out,
                                         hs_error *err);
void hs_keyfilter_free(hs_keyfilter *f);   /* accepts NULL */
/* Whether key may be in the set (true for every key added). */
bool hs_keyfilter_may_contain(const hs_keyfilter *f, int64_t key);
/* sel[i] = 0 for each of n values (int64 or int32 by width 8 or 4) that
 * cannot be in the set; rows with sel[i] 0 are not looked at.  Returns the
 * rows still selected. */
int64_t hs_keyfilter_apply(const hs_keyfilter *f, const void *values, int width, int64_t n,
                           uint8_t *sel);
/* Bytes the filter holds; its kind's name ("bitmap", "bloom", ...). */
int64_t hs_keyfilter_bytes(const hs_keyfilter *f);
const char *hs_keyfilter_kind_name(const hs_keyfilter *f);

#endif
