/*
 * index/scalar/sidx_int.h - internals shared by sidx.c (file format, open,
 * lookup dispatch, builder), inverted.c and range.c.
 *
 * The builder sorts the non-null rows of a column by (value, position) into
 * a sidx_sorted view; inverted.c and range.c serialize that view into their
 * sections.  At read time the opened sidx_index holds borrowed pointers into
 * the file image; a lookup turns each leaf into one or more "probes"
 * (intervals of the sorted value order, see sidx_probe) that the kind's
 * collect function resolves into row positions, gathered in a sidx_acc.
 *
 * Everything here is little-endian on disk; rd/wr helpers never assume
 * alignment.
 */
#ifndef HS_INDEX_SCALAR_SIDX_INT_H
#define HS_INDEX_SCALAR_SIDX_INT_H

#include "index/scalar/sidx.h"

#include <string.h>

#define SIDX_MAGIC "HSIX"
#define SIDX_VERSION 1
#define SIDX_HEADER_SIZE 64
#define SIDX_N_SECTIONS 4
#define SIDX_TABLE_SIZE (SIDX_N_SECTIONS * 16)
#define SIDX_TRAILER_SIZE 12
#define SIDX_FLAG_WIDE 1u            /* 64-bit offsets in values / postings tables */
#define SIDX_BLOCK_ROWS 4096         /* range index: (value, position) pairs per block */
#define SIDX_MAX_ROWS 0xFFFFFFFFll   /* positions are uint32; n_rows <= 2^32 - 1 */

/* Section numbers. */
enum { SIDX_S_NULLS = 0, SIDX_S_VALUES = 1, SIDX_S_OFFSETS = 2, SIDX_S_DATA = 3 };

static inline uint16_t sidx_rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t sidx_rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t sidx_rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void sidx_wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void sidx_wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Order-preserving unsigned keys of I64 and F64 values (F64: -0.0 is
 * stored as 0.0 and every NaN as the one quiet NaN, which sorts last). */
static inline uint64_t sidx_i64_key(int64_t v) { return (uint64_t)v ^ (1ull << 63); }
static inline int64_t sidx_key_i64(uint64_t k) { return (int64_t)(k ^ (1ull << 63)); }
uint64_t sidx_f64_key(double x);
double sidx_key_f64(uint64_t k);
double sidx_canon_f64(double x);

/* ---- sorted rows (builder side) ---- */

typedef struct sidx_sorted {
    pr_vkind vk;
    int32_t scale;
    int64_t n;                 /* non-null rows */
    const uint32_t *pos;       /* n positions ordered by (value, position) */
    const uint64_t *keys;      /* I64/F64: n order keys, same order */
    const uint32_t *rank;      /* I128/BYTES: n dictionary ranks, same order */
    const uint8_t **dict_p;    /* I128/BYTES: values by rank (16 LE bytes for I128) */
    const uint32_t *dict_n;
    int64_t n_distinct;
} sidx_sorted;

static inline bool sidx_sorted_same(const sidx_sorted *s, int64_t a, int64_t b)
{
    return s->keys ? s->keys[a] == s->keys[b] : s->rank[a] == s->rank[b];
}
/* Fixed width of stored values (8, 8, 16), 0 for BYTES. */
int sidx_value_width(pr_vkind vk);
/* Appends the stored form of item j's value: fixed-width LE bytes, or for
 * BYTES the raw bytes (the caller writes offsets). */
HS_MUST_USE hs_status sidx_sorted_put_value(const sidx_sorted *s, int64_t j, hs_buf *out);
static inline size_t sidx_sorted_value_len(const sidx_sorted *s, int64_t j)
{
    return s->keys || s->vk == PR_V_I128 ? (size_t)sidx_value_width(s->vk) : s->dict_n[s->rank[j]];
}

/* Appends a values table of the items idx[0..n): fixed width, or for BYTES
 * (n+1) offsets (u32, u64 when wide) then the bytes. */
HS_MUST_USE hs_status sidx_put_values(const sidx_sorted *s, const int64_t *idx, int64_t n,
                                      bool wide, hs_buf *out);

/* ---- the opened index ---- */

/* A values table inside the file (dictionary, fences). */
typedef struct sidx_vals {
    pr_vkind vk;
    int32_t scale;
    int64_t n;
    int width;                 /* fixed width, 0 for BYTES */
    bool wide;                 /* BYTES: u64 offsets */
    const uint8_t *off;        /* BYTES: n+1 offsets */
    const uint8_t *data;
    size_t data_n;
} sidx_vals;

/* Parses and checks a values table of n entries occupying exactly p[0..len)
 * (offsets monotone and in bounds; strictly increasing values when
 * `strict`, non-decreasing otherwise). */
HS_MUST_USE hs_status sidx_vals_open(sidx_vals *v, pr_vkind vk, int32_t scale, int64_t n,
                                     bool wide, bool strict, const uint8_t *p, size_t len,
                                     const char *what, hs_error *err);
void sidx_vals_get(const sidx_vals *v, int64_t i, pr_val *out);

struct sidx_index {
    sidx_info info;
    uint32_t flags;
    int32_t scale;
    int32_t field_id;
    uint32_t block_rows;
    int64_t n_blocks;
    const uint8_t *base;
    size_t size;
    const uint8_t *sec[SIDX_N_SECTIONS];
    size_t sec_n[SIDX_N_SECTIONS];
    sidx_vals vals;            /* inverted: dictionary; range: fences (2 per block) */
};

static inline uint64_t sidx_off_get(const uint8_t *p, int64_t i, bool wide)
{
    return wide ? sidx_rd64(p + 8 * i) : sidx_rd32(p + 4 * i);
}

/* ---- probes ---- */

/* A probe selects the non-null rows whose value v has clo <= c(v) <= chi,
 * where c(v) = pr_val_cmp(v, lit) in {-1, 0, 1} for ordered v, 2 for a NaN
 * v; or, for a NaN literal, 0 when v is NaN and -1 otherwise.  c is
 * non-decreasing in the index's sort order, so every probe is one
 * contiguous run of it. */
typedef struct sidx_probe {
    const pr_val *lit;
    bool lit_nan;
    int clo, chi;
} sidx_probe;

int sidx_probe_c(const sidx_probe *pr, const pr_val *v);
static inline bool sidx_probe_hit(const sidx_probe *pr, const pr_val *v)
{
    int c = sidx_probe_c(pr, v);
    return c >= pr->clo && c <= pr->chi;
}
/* First index in [lo, hi) of v whose c >= t (hi when none). */
int64_t sidx_vals_lower(const sidx_vals *v, int64_t lo, int64_t hi, const sidx_probe *pr, int t);

/* Accumulates the rows of several probes: whole bitmaps, and single
 * positions.  Single positions are buffered while few; past n_rows / 512
 * of them they go to a dense bitset of n_rows bits instead (random-order
 * inserts into roaring containers cost ~70 ns each; setting a bit and
 * scanning n_rows / 64 words to hand roaring sorted runs is far cheaper). */
typedef struct sidx_acc {
    uint64_t n_rows;
    hs_buf bms;                /* roaring_bitmap_t * (owned) */
    hs_buf singles;            /* uint32 positions */
    uint64_t *dense;           /* hs_calloc'd (n_rows + 63) / 64 words, or NULL */
    roaring_bitmap_t *r;       /* files of over 2^27 rows: flushed singles, or NULL */
} sidx_acc;

static inline void sidx_acc_init(sidx_acc *a, uint64_t n_rows)
{
    memset(a, 0, sizeof *a);
    a->n_rows = n_rows;
}
HS_MUST_USE hs_status sidx_acc_add_bitmap(sidx_acc *a, roaring_bitmap_t *bm, hs_error *err); /* takes ownership */
/* Positions must be < n_rows (callers check). */
HS_MUST_USE hs_status sidx_acc_add_pos(sidx_acc *a, const uint32_t *pos, size_t n, hs_error *err);
/* Where `more` positions may be set directly (callers check them against
 * n_rows first): *out = the dense bitset when a is dense or adding them
 * would make it so (it becomes dense now), else NULL (sidx_acc_add_pos). */
HS_MUST_USE hs_status sidx_acc_dense_for(sidx_acc *a, uint64_t more, uint64_t **out,
                                         hs_error *err);
/* Moves the union into *out (caller frees with roaring_bitmap_free) and clears a. */
HS_MUST_USE hs_status sidx_acc_finish(sidx_acc *a, roaring_bitmap_t **out, hs_error *err);
/* The roaring bitmap of ascending positions v[0..m) (repeats allowed; input
 * out of order is inserted value by value), built whole containers at a
 * time through Roaring's portable format; NULL when out of memory. */
roaring_bitmap_t *sidx_roaring_of_sorted(const uint32_t *v, size_t m);
void sidx_acc_free(sidx_acc *a);

/* Delta-packed sorted positions, the compact alternative to a portable
 * roaring bitmap for sparse postings:
 *
 *   u32 SIDX_DP_TAG, u32 count (>= 2), u32 first position; one byte per
 *   block of 128 deltas: its bit width (0..32); then each block's deltas
 *   (pos[i] - pos[i-1] - 1) bit-packed LSB first, each block starting on a
 *   byte; then 8 zero bytes (unpacker slack).
 *
 * The tag's low 16 bits differ from both roaring cookies, so an entry's
 * first four bytes tell the two apart. */
#define SIDX_DP_TAG 0x31504448u /* "HDP1" */
#define SIDX_DP_BLOCK 128
size_t sidx_dp_size(const uint32_t *pos, size_t n);
HS_MUST_USE hs_status sidx_dp_put(const uint32_t *pos, size_t n, hs_buf *out);
/* Decodes and validates p[0..len) (exact size, positions < limit) into
 * *out (hs_malloc'd, caller frees with hs_free), *n positions ascending. */
HS_MUST_USE hs_status sidx_dp_decode(const uint8_t *p, size_t len, uint64_t limit, uint32_t **out,
                                     size_t *n, hs_error *err);
static inline bool sidx_is_dp(const uint8_t *p, size_t len)
{
    return len >= 12 && sidx_rd32(p) == SIDX_DP_TAG;
}

/* Checks that p[0..n) is exactly one portable-format roaring bitmap whose
 * containers are well formed (sorted keys, sorted arrays, disjoint runs,
 * bitset cardinalities) and whose values are all < limit, then
 * deserializes it with roaring_bitmap_portable_deserialize_safe.  *card
 * (may be NULL) gets its cardinality. */
HS_MUST_USE hs_status sidx_rb_load(const uint8_t *p, size_t n, uint64_t limit, roaring_bitmap_t **out,
                                   uint64_t *card, hs_error *err);
/* Cardinality read from a portable bitmap's header only (0 when malformed). */
uint64_t sidx_rb_header_card(const uint8_t *p, size_t n);
/* Serializes bm (run-optimized) in portable format, appended to out. */
HS_MUST_USE hs_status sidx_rb_put(roaring_bitmap_t *bm, hs_buf *out);

/* ---- bit packing (frame of reference, range blocks) ---- */

/* Bytes of n values of `bits` bits (0..64), plus 8 bytes of padding so the
 * unpacker may always load 9 bytes; 0 when bits == 0. */
static inline size_t sidx_packed_size(size_t n, int bits)
{
    return bits ? (n * (size_t)bits + 7) / 8 + 8 : 0;
}
void sidx_pack(uint8_t *dst, const uint64_t *v, size_t n, int bits); /* writes (n * bits + 7) / 8 bytes */
void sidx_unpack(const uint8_t *p, size_t n, int bits, uint64_t *out);
static inline uint64_t sidx_unpack1(const uint8_t *p, size_t i, int bits)
{
    if (!bits)
        return 0;
    size_t bit = i * (size_t)bits, b = bit >> 3;
    int sh = (int)(bit & 7);
    uint64_t w = sidx_rd64(p + b) >> sh;
    if (sh + bits > 64)
        w |= (uint64_t)p[b + 8] << (64 - sh);
    return bits == 64 ? w : w & ((1ull << bits) - 1);
}
static inline int sidx_bits_for(uint64_t max) { return max ? 64 - __builtin_clzll(max) : 0; }

/* ---- kinds ---- */

/* A probe's rows are one span [lo, hi) of the kind's sorted order: of the
 * distinct values (inverted) or of the (value, position) pairs (range).
 * Spans of one index intersect like intervals, which is how an AND of
 * comparisons is answered without materializing each comparison. */

HS_MUST_USE hs_status sidx_inv_write(const sidx_sorted *s, hs_buf *out, size_t file_start,
                                     uint64_t sec[SIDX_N_SECTIONS][2], uint32_t *flags, hs_error *err);
HS_MUST_USE hs_status sidx_inv_open(sidx_index *ix, hs_error *err);
HS_MUST_USE hs_status sidx_inv_span(const sidx_index *ix, const sidx_probe *pr, int64_t *lo,
                                    int64_t *hi, hs_error *err);
HS_MUST_USE hs_status sidx_inv_collect_span(const sidx_index *ix, int64_t lo, int64_t hi,
                                            sidx_acc *acc, hs_error *err);
int64_t sidx_inv_span_rows(const sidx_index *ix, int64_t lo, int64_t hi); /* estimate */

HS_MUST_USE hs_status sidx_range_write(const sidx_sorted *s, uint32_t block_rows, hs_buf *out,
                                       size_t file_start, uint64_t sec[SIDX_N_SECTIONS][2],
                                       hs_error *err);
HS_MUST_USE hs_status sidx_range_open(sidx_index *ix, hs_error *err);
HS_MUST_USE hs_status sidx_range_span(const sidx_index *ix, const sidx_probe *pr, int64_t *lo,
                                      int64_t *hi, hs_error *err);
HS_MUST_USE hs_status sidx_range_collect_span(const sidx_index *ix, int64_t lo, int64_t hi,
                                              sidx_acc *acc, hs_error *err);

/* Pads out with zeros to a multiple of 8 bytes from file_start. */
HS_MUST_USE hs_status sidx_align8(hs_buf *out, size_t file_start);

#endif
