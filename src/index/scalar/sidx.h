/*
 * index/scalar/sidx.h - scalar sidecar indexes of one data file: inverted
 * (value -> roaring bitmap of row positions) and range (sorted (value,
 * position) blocks with sparse fences), and their checksummed file format.
 *
 * An index covers one column (by field id) of one immutable data file; row
 * positions are the file's row numbers 0..n_rows-1 (uint32).  Deletes are
 * not the index's business: the scan applies them afterwards.
 *
 * Kinds:
 *   inverted  distinct values sorted, each with a roaring bitmap; a null
 *             bitmap.  Equality and IN are lookups; ranges and string
 *             prefixes are unions over a contiguous run of the sorted
 *             values.  For strings, binary, integers, booleans, dates,
 *             timestamps, decimals, floats.
 *   range     (value, position) pairs sorted by value, in blocks with a
 *             sparse fence (first value of each block) so that a range
 *             touches only the blocks it overlaps; a null bitmap.  For
 *             high-cardinality numbers, dates and timestamps (and strings).
 *   auto      resolved by the builder at finish: inverted when the number of
 *             distinct values is at most max(1024, n_rows / 8) or the
 *             column is boolean, else range.
 *
 * Values are compared exactly as expr/pred.h compares them (pr_val:
 * I64, F64 with NaN above everything and NaN = NaN, I128 decimals, BYTES as
 * unsigned bytes), so an index lookup returns exactly the rows for which the
 * leaf predicate is TRUE under SQL semantics (nulls never match a
 * comparison, IN or NOT IN; they match only IS NULL).
 *
 * File format: owned by sidx.c (its header comment has the byte table).
 * It starts with a magic and version, records kind, value kind, row count
 * and the data file's size, and ends with a checksum over everything
 * before it, so that truncation or corruption is detected by sidx_open
 * (HS_CORRUPT), never by a crash.
 */
#ifndef HS_INDEX_SCALAR_SIDX_H
#define HS_INDEX_SCALAR_SIDX_H

#include "base/buf.h"
#include "base/error.h"
#include "columnar/column.h"
#include "expr/pred.h"
#include <roaring/roaring.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum sidx_kind { SIDX_AUTO = 0, SIDX_INVERTED = 1, SIDX_RANGE = 2 } sidx_kind;

/* "inverted" | "range" | "auto" -> kind; false for other names. */
bool sidx_kind_from_name(const char *name, sidx_kind *out);
const char *sidx_kind_name(sidx_kind k);
/* Whether a column of type f can carry a scalar index (pr_kind_of(f) !=
 * PR_V_NULL and not nested). */
bool sidx_supports(const hs_field *f);

/* ---- building ---- */

typedef struct sidx_builder sidx_builder;

/* A builder for column type f (borrowed until finish/free).  data_file_size
 * is recorded in the file (the registry and the reader check it).
 * Caller frees with sidx_builder_free. */
HS_MUST_USE hs_status sidx_builder_new(sidx_kind kind, const hs_field *f, int64_t data_file_size,
                                       sidx_builder **out, hs_error *err);
/* Adds rows [0, c->length) of column c (type f) at positions first_pos...
 * Batches must come in position order without gaps. */
HS_MUST_USE hs_status sidx_builder_add(sidx_builder *b, const hs_column *c, int64_t first_pos,
                                       hs_error *err);
/* Serializes the index into out (appended).  *kind_out (may be NULL) gets the
 * kind chosen (auto resolved). */
HS_MUST_USE hs_status sidx_builder_finish(sidx_builder *b, hs_buf *out, sidx_kind *kind_out,
                                          hs_error *err);
void sidx_builder_free(sidx_builder *b);  /* accepts NULL */
/* Tuning (tests): strings, binary and decimals are collected through a
 * dictionary until it holds more than max_distinct values (default 65536)
 * and more than a quarter of the rows; then the rows are kept and sorted
 * directly.  Call before the first add. */
void sidx_builder_set_dict_limit(sidx_builder *b, int64_t max_distinct);
/* The file has n_rows rows (before the first add): the position and key
 * arrays of a numeric column are allocated at that size instead of grown by
 * doubling (up to twice it).  A hint: nothing changes when it fails. */
void sidx_builder_expect_rows(sidx_builder *b, int64_t n_rows);

/* ---- reading ---- */

typedef struct sidx_index sidx_index;

typedef struct sidx_info {
    sidx_kind kind;
    pr_vkind value_kind;
    int64_t n_rows;
    int64_t n_distinct;       /* inverted: exact; range: -1 */
    int64_t n_nulls;
    int64_t data_file_size;
} sidx_info;

/* Validates and opens an index file image p[0..n) (borrowed: must outlive
 * the index, e.g. an mmap).  Checks magic, version, checksum and every
 * internal offset; HS_CORRUPT with a message on any mismatch.  f is the
 * column type the caller expects (a different value kind is HS_CORRUPT; NULL
 * skips that check).
 * Caller frees with sidx_close. */
HS_MUST_USE hs_status sidx_open(const uint8_t *p, size_t n, const hs_field *f, sidx_index **out,
                                hs_error *err);
void sidx_close(sidx_index *ix);  /* accepts NULL */
void sidx_get_info(const sidx_index *ix, sidx_info *out);

/* Rows for which the bound leaf predicate `leaf` is TRUE: leaf->kind is one
 * of PR_E_CMP (any op), PR_E_IN, PR_E_NOT_IN, PR_E_IS_NULL,
 * PR_E_NOT_NULL, PR_E_TRUE, PR_E_FALSE, with leaf->vals converted to
 * this column's kind (pr_filter_bind did it).  *out is a new bitmap
 * (caller frees with roaring_bitmap_free).  HS_UNSUPPORTED for other kinds
 * (the caller then treats the leaf as "all rows"). */
HS_MUST_USE hs_status sidx_lookup(const sidx_index *ix, const pr_expr *leaf,
                                  roaring_bitmap_t **out, hs_error *err);

/* Rows for which every leaf of leaves[0..n) is TRUE (n = 0: all rows): the
 * AND of their sidx_lookup results, but comparisons (other than !=) are
 * intersected as spans of the sorted order before any row is read, so a
 * range such as `x >= a AND x < b` costs only the rows between a and b.
 * Every leaf must be on this index's column and of a kind sidx_lookup
 * takes (else HS_UNSUPPORTED).  *out: caller frees with roaring_bitmap_free. */
HS_MUST_USE hs_status sidx_lookup_all(const sidx_index *ix, const pr_expr *const *leaves, int n,
                                      roaring_bitmap_t **out, hs_error *err);

/* The number of rows a lookup would return, estimated cheaply from the
 * index (for planning; exact for comparisons on a range index and for
 * equality / IN on an inverted one; a damaged index estimates high). */
int64_t sidx_estimate(const sidx_index *ix, const pr_expr *leaf);

#endif
