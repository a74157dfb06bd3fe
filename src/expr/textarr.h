/*
 * expr/textarr.h - text[] values: PostgreSQL's one-dimensional arrays of
 * text as expression values (ex_ty EX_T_ARRAY with elem PV_E_TEXT).
 *
 * The numeric arrays of pgvector.h (int4[], real[], double precision[],
 * numeric[]) are blobs of fixed-width elements; a text[] is the same kind
 * of value (a blob held in ex_value.s / ex_vec.v.s, lower bound 1, one
 * dimension) whose elements have lengths:
 *
 *   offset        size     field
 *   0             4        int32 n: elements
 *   4             4        int32 flags: PV_ARR_HAS_NULL when an element is NULL
 *   8             4 * n    uint32 end[n]: end of element i in the bytes below
 *                          (element i is bytes[end[i-1] .. end[i]), end[-1] = 0)
 *   8 + 4n        n        uint8 null[n]: 1 = element i is NULL (its bytes empty)
 *   8 + 5n        ...      the element bytes, back to back (UTF-8 text)
 *
 * Blobs are built here only (ta_b_*, ta_in), never read from files, and
 * live in an arena (the chunk's or the expression's).  No alignment is
 * assumed: the fields are read with memcpy.  The columns that hold such
 * values are list<string> (expr_pgvector.c ex_pv_append writes them,
 * expr_textarr.c reads them back into blobs).
 *
 * Text compares as bytes (PostgreSQL's "C" collation, the reference
 * server's); array order and equality are array_cmp / array_eq's: element
 * by element, a NULL element after every value and equal to another NULL,
 * then the shorter array first.
 */
#ifndef HS_EXPR_TEXTARR_H
#define HS_EXPR_TEXTARR_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "expr/pgvector.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most elements of one array (PostgreSQL's MaxArraySize is larger; a
 * blob's offsets are 32-bit). */
#define TA_MAX_ELEMS (1 << 27)

/* Elements of blob v (0 for a malformed one). */
int64_t ta_len(pv_val v);
/* Element i (0-based, i < ta_len) of v: false when it is NULL, else its
 * bytes in *p, *n (borrowed from v). */
bool ta_get(pv_val v, int64_t i, const uint8_t **p, size_t *n);
bool ta_has_null(pv_val v);
/* True when v is a well-formed blob (lengths and offsets in bounds). */
bool ta_valid(pv_val v);

/* ---- building: ta_b_add per element, then ta_b_done (or ta_b_free) ---- */
typedef struct ta_builder {
    hs_buf ends, nul, bytes;
    int64_t n;
    bool has_null;
} ta_builder;

/* p may be NULL when n is 0; is_null adds a NULL element. */
HS_MUST_USE hs_status ta_b_add(ta_builder *b, const void *p, size_t n, bool is_null);
/* Every element of v[from, to) (0-based). */
HS_MUST_USE hs_status ta_b_add_range(ta_builder *b, pv_val v, int64_t from, int64_t to);
/* The blob, copied into ar; frees b's buffers (always, also on error). */
HS_MUST_USE hs_status ta_b_done(ta_builder *b, hs_arena *ar, pv_val *out);
void ta_b_free(ta_builder *b);

/* ---- text forms ---- */

/* PostgreSQL's array_in for text[] of s[0..n) (stops at a NUL byte):
 * '{a,"b c",NULL}' with its quoting, escapes and whitespace rules.  Errors:
 * "malformed array literal: ..." (HS_INVALID, SQLSTATE 22P02) and
 * HS_UNSUPPORTED for multidimensional arrays and dimension decorations
 * ("[1:2]={...}"). */
HS_MUST_USE hs_status ta_in(const char *s, size_t n, hs_arena *ar, pv_val *out, hs_error *err);
/* array_out: '{a,"b c",NULL,""}' (elements quoted when empty, when they
 * are NULL in any case or hold whitespace or any of {}",\ ; " and \
 * escaped), appended to out. */
HS_MUST_USE hs_status ta_out(pv_val v, hs_buf *out);

/* ---- operators ---- */

/* array_cmp: <0, 0, >0. */
int ta_cmp(pv_val a, pv_val b);
/* a @> b (every non-NULL element of b is in a; a NULL element of b fails)
 * or, overlap, a && b (an element of b is in a). */
bool ta_contains(pv_val a, pv_val b, bool overlap);

#endif
