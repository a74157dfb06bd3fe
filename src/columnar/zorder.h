/*
 * columnar/zorder.h - the z-order (Morton order) of a batch's rows over some
 * of its columns, for compaction's z-order clustering (table/maint_compact.c).
 *
 * Each chosen column is reduced to an order-preserving 64-bit key per row
 * (integers and dates/times with the sign bit flipped, floats by their IEEE
 * bits made monotone, -0.0 = 0.0, NaN last; strings and binaries by their
 * first 8 bytes, big-endian; booleans 0/1; NULL before every value), the keys
 * are replaced by their dense rank among the batch's distinct keys scaled to
 * 32 bits (so a column whose values span a narrow range still gets all the
 * bits: the rank-based z-order of Delta Lake and Spark's "zorder" strategy),
 * and the ranks' bits are interleaved, most significant first, into one key
 * per row.  Rows sorted by that key keep rows close in every chosen column
 * close in the file, so min/max statistics prune on each of them.
 *
 * Written here rather than taken from a library: no C library on the
 * registries computes z-order over Arrow-layout columns.
 */
#ifndef HS_COLUMNAR_ZORDER_H
#define HS_COLUMNAR_ZORDER_H

#include "columnar/column.h"

/* Whether a column of this type can take part (scalar, orderable). */
bool hs_zorder_type_ok(hs_type t);

/* *perm (hs_malloc'd, b->n_rows entries; caller frees with hs_free) = the
 * row indexes of b in z-order over the columns cols[0..n_cols) (1..16;
 * ties keep row order).  HS_INVALID for a column type that cannot be
 * ordered (hs_zorder_type_ok). */
HS_MUST_USE hs_status hs_zorder_permutation(const hs_batch *b, const int *cols, int n_cols,
                                            int64_t **perm, hs_error *err);

/* A new batch with rows idx[0..n) of b (deep copies). */
HS_MUST_USE hs_status hs_batch_take(const hs_batch *b, const int64_t *idx, int64_t n,
                                    hs_batch **out, hs_error *err);

#endif
