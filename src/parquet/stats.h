/*
 * parquet/stats.h - typed min/max/null-count accumulators for the writer, in
 * the column order's semantics, and their Parquet (PLAIN) byte form.
 *
 *   order            physical types              comparison
 *   PQ_ORD_SIGNED    INT32, INT64                signed integers
 *   PQ_ORD_UNSIGNED  INT32, INT64 (UINT_*)       unsigned integers
 *   PQ_ORD_FLOAT     FLOAT, DOUBLE               IEEE, NaN ignored, -0.0/+0.0 equal
 *   PQ_ORD_FLOAT16   FLBA(2) FLOAT16             as FLOAT, on half-precision values
 *   PQ_ORD_BYTES     BYTE_ARRAY, FLBA            unsigned lexicographic (memcmp)
 *   PQ_ORD_DECIMAL   FLBA (DECIMAL)              signed big-endian two's complement
 *   PQ_ORD_BOOL      BOOLEAN                     false < true
 *   PQ_ORD_NONE      (null type)                 no min/max
 *
 * Fixed-width values are kept in the union (i: signed, u: unsigned/bool,
 * d: float, double and float16 widened to double, which is exact); byte
 * values are copied into the accumulator's own buffers (bmin, bmax), so an
 * accumulator never points into caller memory.  The float rules of the
 * Parquet spec are applied when encoding: if every value was NaN there is no
 * min/max; a zero minimum is written as -0.0 and a zero maximum as +0.0.
 *
 * Ownership: pq_wstats owns bmin/bmax; free with pq_wstats_free.
 */
#ifndef HS_PARQUET_STATS_H
#define HS_PARQUET_STATS_H

#include "base/buf.h"
#include "parquet/meta.h"

typedef enum pq_order {
    PQ_ORD_NONE = 0, PQ_ORD_SIGNED, PQ_ORD_UNSIGNED, PQ_ORD_FLOAT, PQ_ORD_FLOAT16,
    PQ_ORD_BYTES, PQ_ORD_DECIMAL, PQ_ORD_BOOL
} pq_order;

typedef union pq_sval { int64_t i; uint64_t u; double d; } pq_sval;

typedef struct pq_wstats {
    bool has;                 /* min/max hold at least one (non-NaN) value */
    int64_t null_count;
    pq_sval min, max;         /* fixed-width orders */
    hs_buf bmin, bmax;        /* PQ_ORD_BYTES / PQ_ORD_DECIMAL: owned copies */
} pq_wstats;

/* Empties s (keeps buffer capacity). */
void pq_wstats_reset(pq_wstats *s);
void pq_wstats_free(pq_wstats *s);

/* Updates from n values in their physical representation (INT32: int32_t,
 * INT64: int64_t, FLOAT: float, DOUBLE: double, FLBA/FLOAT16: width bytes each). */
HS_MUST_USE hs_status pq_wstats_update_fixed(pq_wstats *s, pq_order order, pq_ptype type,
                                            int32_t width, const void *values, int64_t n);
/* Updates from n byte-array values given as Arrow offsets and data (values i
 * = data[off[i] .. off[i+1])). */
HS_MUST_USE hs_status pq_wstats_update_binary(pq_wstats *s, pq_order order, const int32_t *off,
                                             const uint8_t *data, int64_t n);
/* Updates from one byte-array (or FLBA) value. */
HS_MUST_USE hs_status pq_wstats_update_one(pq_wstats *s, pq_order order, const uint8_t *p,
                                          uint32_t len);
/* Boolean values: n bits starting at bit `bit_off` of bits. */
void pq_wstats_update_bool(pq_wstats *s, const uint8_t *bits, int64_t bit_off, int64_t n);
/* Merges src into dst (null counts add). */
HS_MUST_USE hs_status pq_wstats_merge(pq_wstats *dst, const pq_wstats *src, pq_order order);

/* Appends the PLAIN form of min and max (no length prefix) to min_out and
 * max_out; returns false (appending nothing) when there is no min/max. */
HS_MUST_USE hs_status pq_wstats_encode(const pq_wstats *s, pq_order order, pq_ptype type,
                                       int32_t width, hs_buf *min_out, hs_buf *max_out,
                                       bool *has);

/* Compares two encoded statistic values (as produced by pq_wstats_encode,
 * possibly truncated for byte orders): <0, 0, >0. */
int pq_stat_cmp(pq_order order, pq_ptype type, const uint8_t *a, uint32_t alen,
                const uint8_t *b, uint32_t blen);

/* Page-index truncation of byte-array bounds (Arrow's rule, limit 64 bytes):
 * a min longer than limit keeps its first `limit` bytes; a max keeps its first
 * `limit` bytes with the last byte that is not 0xFF incremented (bytes after it
 * dropped); a max that cannot be incremented stays whole.  Returns the new
 * length; max is modified in place. */
uint32_t pq_truncate_min(uint32_t len, uint32_t limit);
uint32_t pq_truncate_max(uint8_t *max, uint32_t len, uint32_t limit);

/* Half-precision <-> double (exact for every half value). */
double pq_half_to_double(uint16_t h);
uint16_t pq_double_to_half(double d);

#endif
