/*
 * expr/pgvector.h - pgvector 0.8.1's four types as values: vector, halfvec,
 * sparsevec and bit, with their text input and output, operators, functions,
 * casts and the avg/sum accumulators, behaving exactly as PostgreSQL 15 with
 * pgvector 0.8.1 does (same results to the last bit, same error messages; the
 * SQLSTATE of a message is pv_sqlstate()).  The expression layer
 * (expr_bind.c, expr_eval.c) binds SQL onto these functions; the hash
 * aggregate uses the pv_agg accumulators.
 *
 * Values are flat byte strings ("blobs", held in ex_str / pv_val rows):
 *
 *   type        bytes                                              limits
 *   ---------   -------------------------------------------------  -------------------------
 *   vector      float32 x[dim]                   (n = 4 * dim)      1 <= dim <= 16000
 *   halfvec     uint16 x[dim] (IEEE binary16)    (n = 2 * dim)      1 <= dim <= 16000
 *   sparsevec   int32 dim, int32 nnz, int32 index[nnz] (0-based,    1 <= dim <= 1e9,
 *               strictly ascending), float32 value[nnz] (non-zero)  nnz <= 16000 (text input)
 *   bit         int32 nbits, uint8 bits[(nbits + 7) / 8]             0 <= nbits
 *               (first bit = high bit of byte 0; padding bits 0)
 *
 * Every element is finite (NaN and infinities are rejected on the way in,
 * and arithmetic that overflows is an error, as in pgvector).  Blobs are
 * read with memcpy-free typed access, so a blob must be 4-byte aligned
 * (halfvec: 2); the functions here allocate their results in the caller's
 * arena with that alignment.
 *
 * Arithmetic.  pgvector computes distances in float32 accumulators (in an
 * order its compiler chose: auto-vectorized loops with reassociation, and on
 * x86-64 a target clone that uses FMA), norms in double, and its halfvec
 * kernels dispatch to F16C code at run time.  The last digits of a result
 * depend on all of that, so the kernels live in pgvector_kern.c, a copy of
 * pgvector's loops compiled with pgvector's own compiler flags
 * (-ftree-vectorize -fassociative-math -fno-signed-zeros -fno-trapping-math,
 * no -march) and the same dispatch: on the same machine and compiler family
 * the results agree bit for bit with the reference server
 * (tests/python/test_sql_pgvector.py checks it).
 *
 * Errors: HS_INVALID (HS_NOMEM for allocation) with pgvector's or
 * PostgreSQL's message text; pv_sqlstate(msg) gives the SQLSTATE
 * PostgreSQL reports with that message ("22P02", "22000", "22003",
 * "54000", ...).
 */
#ifndef HS_EXPR_PGVECTOR_H
#define HS_EXPR_PGVECTOR_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PV_VECTOR_MAX_DIM 16000
#define PV_HALFVEC_MAX_DIM 16000
#define PV_SPARSEVEC_MAX_DIM 1000000000
#define PV_SPARSEVEC_MAX_NNZ 16000
#define PV_BIT_MAX_LEN 83886080     /* PostgreSQL's VARBITMAXLEN */

typedef enum pv_type { PV_VECTOR = 1, PV_HALFVEC, PV_SPARSEVEC, PV_BIT } pv_type;

/* One value (a blob as above).  Borrowed: the bytes belong to an arena or a
 * column. */
typedef struct pv_val {
    const uint8_t *p;
    size_t n;
} pv_val;

/* Distance / product kinds (the operators and functions). */
typedef enum pv_dist {
    PV_L2 = 0,        /* <->, l2_distance */
    PV_NEG_IP,        /* <#>, negative inner product */
    PV_COSINE,        /* <=>, cosine_distance */
    PV_L1,            /* <+>, l1_distance */
    PV_IP,            /* inner_product */
    PV_L2_SQUARED,    /* vector_l2_squared_distance */
    PV_HAMMING,       /* <~>, hamming_distance (bit) */
    PV_JACCARD        /* <%>, jaccard_distance (bit) */
} pv_dist;

/* Element kinds of the arrays that cast to and from the vector types. */
/* PV_E_TEXT: text[], an array of the expression layer only (never cast to a
 * vector; its blob is expr/textarr.h's, not pv_arr's).  PV_E_INT8: bigint[]
 * (no vector casts either). */
typedef enum pv_elem { PV_E_INT4 = 0, PV_E_FLOAT4, PV_E_FLOAT8, PV_E_NUMERIC, PV_E_TEXT, PV_E_INT8 } pv_elem;

const char *pv_type_name(pv_type t);   /* "vector", "halfvec", "sparsevec", "bit" */

/* The SQLSTATE PostgreSQL + pgvector report with message msg (an error set
 * by this module or by the expression layer's pgvector paths), "XX000"
 * when unknown. */
const char *pv_sqlstate(const char *msg);

/* ---- checks and shape ---- */

/* True when v is a well-formed blob of type t (lengths, limits, order of
 * sparse indices, finite non-zero values): for values from untrusted columns. */
bool pv_valid(pv_type t, pv_val v);
/* Dimensions (vector_dims), or bits for bit. */
int64_t pv_dims(pv_type t, pv_val v);
/* Checks v against type modifier typmod (-1 = none): "expected %d dimensions,
 * not %d" (bit: "bit string length %d does not match type bit(%d)"). */
HS_MUST_USE hs_status pv_check_typmod(pv_type t, pv_val v, int32_t typmod, hs_error *err);
/* Validates a type modifier as vector_typmod_in does ("dimensions for type
 * vector must be at least 1" ...). */
HS_MUST_USE hs_status pv_typmod_in(pv_type t, int64_t typmod, hs_error *err);

/* ---- text ---- */

/* Text input (vector_in, halfvec_in, sparsevec_in, bit_in) of s[0..n)
 * (stops at a NUL byte, as a C string would), checked against typmod. */
HS_MUST_USE hs_status pv_in(pv_type t, const char *s, size_t n, int32_t typmod, hs_arena *a,
                            pv_val *out, hs_error *err);
/* Text output, appended to out. */
HS_MUST_USE hs_status pv_out(pv_type t, pv_val v, hs_buf *out);
/* PostgreSQL's float4 / float8 output (shortest round trip, exponent form
 * outside 1e-4..1e6 (float4) / 1e-4..1e15 (float8)); dst needs 32 bytes.
 * Returns the length.  NaN / Infinity / -Infinity included. */
int pv_fmt_float4(float v, char *dst);
int pv_fmt_float8(double v, char *dst);

/* ---- operators and functions ---- */

/* Distances: a and b of type t (vector, halfvec, sparsevec; bit for
 * HAMMING / JACCARD).  Errors: "different vector dimensions %d and %d". */
HS_MUST_USE hs_status pv_distance(pv_type t, pv_dist d, pv_val a, pv_val b, double *out,
                                  hs_error *err);
/* a op b for op '+', '-', '*' (vector, halfvec) and '|' (||: vector, halfvec
 * concatenation). */
HS_MUST_USE hs_status pv_arith(pv_type t, int op, pv_val a, pv_val b, hs_arena *ar, pv_val *out,
                               hs_error *err);
/* btree order (vector_cmp, halfvec_cmp, sparsevec_cmp; bit: bitcmp): <0, 0, >0. */
int pv_cmp(pv_type t, pv_val a, pv_val b);
/* vector_norm (vector) / l2_norm (halfvec, sparsevec). */
double pv_norm(pv_type t, pv_val v);
HS_MUST_USE hs_status pv_l2_normalize(pv_type t, pv_val v, hs_arena *ar, pv_val *out,
                                      hs_error *err);
/* binary_quantize (vector, halfvec) -> bit. */
HS_MUST_USE hs_status pv_binary_quantize(pv_type t, pv_val v, hs_arena *ar, pv_val *out,
                                         hs_error *err);
/* subvector(v, start, count) (vector, halfvec). */
HS_MUST_USE hs_status pv_subvector(pv_type t, pv_val v, int64_t start, int64_t count,
                                   hs_arena *ar, pv_val *out, hs_error *err);

/* ---- casts ---- */

/* Between vector, halfvec and sparsevec (and to the same type, which only
 * checks typmod). */
HS_MUST_USE hs_status pv_convert(pv_type from, pv_type to, pv_val v, int32_t typmod, hs_arena *ar,
                                 pv_val *out, hs_error *err);
/* array_to_vector / array_to_halfvec / array_to_sparsevec: n elements given
 * as doubles (int4 and float4 values are exact in a double; numeric values
 * must already be rounded to float4 as numeric_float4 does, and float8
 * values are converted to float4 here).  has_null: "array must not contain
 * nulls". */
HS_MUST_USE hs_status pv_from_array(pv_type to, pv_elem e, const double *x, int64_t n,
                                    bool has_null, int32_t typmod, hs_arena *ar, pv_val *out,
                                    hs_error *err);
/* vector / halfvec -> real[]: the n = dims float4 elements into x. */
void pv_to_float4(pv_type t, pv_val v, float *x);

/* ---- arrays: the int4[], real[], double precision[] and numeric[] values
 * that cast to and from the vector types ----
 * Blob (n elements, no alignment assumed for x):
 *
 *   offset      size   field
 *   0           4      int32 n
 *   4           4      int32 flags (PV_ARR_HAS_NULL, PV_ARR_MULTIDIM)
 *   8           8n     double d[n]: the element (numeric, bigint: nearest double)
 *   8 + 8n      4n     float f[n]: the element as float4 the way PostgreSQL
 *                      converts it (numeric through its text)
 *   8 + 12n     n      uint8 null[n]
 *   8 + 13n     n      uint8 scale[n]: numeric: the display scale + 1 that
 *                      array_out prints, from the element's text (0: printed
 *                      as a float8: NaN, Infinity)
 *   8 + 14n     n      uint8 tag[n]: 0: d is the value (real, double
 *                      precision; a numeric past 38 digits); 1: x holds the
 *                      integer exactly (integer, bigint); 2: x holds the
 *                      numeric exactly, unscaled at its display scale
 *   8 + 15n     16n    int128 x[n] (tag 1, 2)
 *
 *   (multidimensional arrays, flags PV_ARR_MULTIDIM, then:)
 *   8 + 31n     4      int32 ndim (2..PV_ARR_MAXDIM)
 *   12 + 31n    4ndim  int32 dims[ndim], outermost first; the elements are
 *                      in row-major order
 *
 * So bigint elements are exact over their whole range and numeric ones up
 * to 38 digits (scale <= 38); comparisons are exact when both elements are,
 * array_out prints x.  Arrays are expression values only (no column form). */
#define PV_ARR_HAS_NULL 1
#define PV_ARR_MULTIDIM 2
size_t pv_arr_size(int64_t n);
/* A new array of n elements in ar (zeroed); pointers into it. */
HS_MUST_USE hs_status pv_arr_new(hs_arena *ar, int64_t n, pv_val *out, double **d, float **f,
                                 uint8_t **nul, hs_error *err);
/* Element i of kind e set from text (the element's input function: errors
 * "invalid input syntax for type integer: ..." etc.). */
HS_MUST_USE hs_status pv_arr_set_text(pv_elem e, pv_val arr, int64_t i, const char *s, size_t n,
                                      hs_error *err);
/* PostgreSQL's array input ('{1,2,NULL}', "malformed array literal"). */
HS_MUST_USE hs_status pv_arr_in(pv_elem e, const char *s, size_t n, hs_arena *ar, pv_val *out,
                                hs_error *err);
HS_MUST_USE hs_status pv_arr_out(pv_elem e, pv_val v, hs_buf *out);
/* Element i (0 <= i < pv_arr_len) of array v of kind e as array_out
 * prints it ("NULL" for a NULL one) into num (48 bytes); its length. */
int pv_arr_elem_text(pv_elem e, pv_val v, int64_t i, char *num);
/* Element i exactly: false when it is NULL or held as a double only; else
 * the unscaled value at *scale (integers: 0). */
bool pv_arr_get_exact(pv_val v, int64_t i, __int128 *x, int *scale);
/* Sets element i (not NULL) of arr, of kind e (int4 / int8), to v. */
void pv_arr_set_int(pv_elem e, pv_val arr, int64_t i, int64_t v);
/* True when v is multidimensional ('{{1},{2}}'::int[]: PV_ARR_MULTIDIM). */
bool pv_arr_multidim(pv_val v);
/* The dimensions of v into dims (PV_ARR_MAXDIM entries), outermost first;
 * returns their number: 0 for an empty array, 1 ({n}) for a
 * one-dimensional one. */
#define PV_ARR_MAXDIM 6
int pv_arr_dims(pv_val v, int32_t *dims);
/* Elements of array v (0 for a blob shorter than its header). */
int64_t pv_arr_len(pv_val v);
/* Element i of v: false when it is NULL, else its value in *x. */
bool pv_arr_get(pv_val v, int64_t i, double *x);
/* The order of two non-NULL elements (float8's btree order: NaN equal to
 * NaN and after every number): <0, 0, >0. */
int pv_arr_elem_cmp(pv_val a, int64_t i, pv_val b, int64_t j);
/* array_cmp of two arrays of one kind: element by element, a NULL element
 * after every value and equal to another NULL; then fewer dimensions
 * first, then the smaller sizes (one-dimensional: the shorter first). */
int pv_arr_cmp(pv_val a, pv_val b);
/* a @> b (every element of b is in a; a NULL element of b fails) or, with
 * overlap, a && b (a non-NULL element of b is in a). */
bool pv_arr_contains(pv_val a, pv_val b, bool overlap);
/* A new array of n elements in ar: element k is v's element idx[k] when
 * idx[k] >= 0, else w's element -1 - idx[k] (slices, array_remove,
 * array_replace).  v and w of one kind. */
HS_MUST_USE hs_status pv_arr_pick(pv_val v, pv_val w, const int64_t *idx, int64_t n, hs_arena *ar,
                                  pv_val *out, hs_error *err);
/* Element casts between array kinds (int4[] -> real[], ...). */
HS_MUST_USE hs_status pv_arr_cast(pv_elem from, pv_elem to, pv_val v, hs_arena *ar, pv_val *out,
                                  hs_error *err);
/* a || b of two arrays of one kind (array_cat; array_append / prepend
 * with a one-element array): "multidimensional arrays are not supported"
 * for either of that shape. */
HS_MUST_USE hs_status pv_arr_cat(pv_val a, pv_val b, hs_arena *ar, pv_val *out, hs_error *err);
/* array_to_vector / array_to_halfvec / array_to_sparsevec. */
HS_MUST_USE hs_status pv_arr_to(pv_type to, pv_elem e, pv_val arr, int32_t typmod, hs_arena *ar,
                                pv_val *out, hs_error *err);
/* vector_to_float4 / halfvec_to_float4: a real[]. */
HS_MUST_USE hs_status pv_to_arr(pv_type from, pv_val v, hs_arena *ar, pv_val *out, hs_error *err);

/* ---- aggregates: avg(vector|halfvec), sum(vector|halfvec) ----
 * Use: pv_agg_init, pv_agg_add per non-null input (in input order),
 * pv_agg_combine to merge partial states (parallel workers), pv_agg_final.
 * avg keeps double sums and a count (vector_accum); sum keeps the running
 * value of its type and adds with vector_add/halfvec_add (float32/half
 * arithmetic, overflow is an error) exactly as pgvector's aggregates do.
 * No input (or only NULLs): the result is NULL. */
typedef struct pv_agg {
    pv_type t;
    bool is_avg;
    int32_t dim;        /* 0 until the first value */
    double n;           /* avg: count */
    double *sum;        /* avg: dim sums (hs_malloc) */
    uint8_t *val;       /* sum: the running value (hs_malloc, 4-byte aligned) */
    size_t val_n;
} pv_agg;

void pv_agg_init(pv_agg *s, pv_type t, bool is_avg);
HS_MUST_USE hs_status pv_agg_add(pv_agg *s, pv_val v, hs_error *err);
HS_MUST_USE hs_status pv_agg_combine(pv_agg *dst, const pv_agg *src, hs_error *err);
/* *is_null when there was no input; else *out (in ar). */
HS_MUST_USE hs_status pv_agg_final(const pv_agg *s, hs_arena *ar, pv_val *out, bool *is_null,
                                   hs_error *err);
void pv_agg_free(pv_agg *s);   /* frees the state's buffers; s may be re-initialized */

#endif
