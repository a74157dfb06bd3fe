/*
 * expr/pgvector_kern.h - the arithmetic kernels of pgvector 0.8.1, for
 * expr/pgvector.c only.  pgvector_kern.c holds copies of pgvector's loops and
 * is compiled with pgvector's flags (see CMakeLists.txt and pgvector.h), so
 * that float results agree with the reference server to the last bit.
 *
 * Conventions: dim > 0; halfvec elements are IEEE binary16 bit patterns;
 * functions that can overflow return 0 = ok, 1 = overflow ("value out of
 * range: overflow"), 2 = underflow ("value out of range: underflow").
 */
#ifndef HS_EXPR_PGVECTOR_KERN_H
#define HS_EXPR_PGVECTOR_KERN_H

#include <stdint.h>

/* binary16 <-> float32 exactly as pgvector's software conversions
 * (Float4ToHalfUnchecked rounds to nearest even, overflow gives infinity). */
float pvk_half_to_float(uint16_t h);
uint16_t pvk_float_to_half(float f);
static inline int pvk_half_is_inf(uint16_t h) { return (h & 0x7FFF) == 0x7C00; }
static inline int pvk_half_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x7FFF) != 0x7C00; }
static inline int pvk_half_is_zero(uint16_t h) { return (h & 0x7FFF) == 0; }

/* vector: the values pgvector's SQL functions return */
double pvk_vec_l2(int dim, const float *a, const float *b);
double pvk_vec_l2sq(int dim, const float *a, const float *b);
double pvk_vec_ip(int dim, const float *a, const float *b);
double pvk_vec_neg_ip(int dim, const float *a, const float *b);
double pvk_vec_cosine(int dim, const float *a, const float *b);
double pvk_vec_l1(int dim, const float *a, const float *b);
double pvk_vec_norm(int dim, const float *a);
int pvk_vec_normalize(int dim, const float *a, float *r);
int pvk_vec_arith(int op, int dim, const float *a, const float *b, float *r);
void pvk_vec_quantize(int dim, const float *a, uint8_t *bits);

/* halfvec */
double pvk_half_l2(int dim, const uint16_t *a, const uint16_t *b);
double pvk_half_l2sq(int dim, const uint16_t *a, const uint16_t *b);
double pvk_half_ip(int dim, const uint16_t *a, const uint16_t *b);
double pvk_half_neg_ip(int dim, const uint16_t *a, const uint16_t *b);
double pvk_half_cosine(int dim, const uint16_t *a, const uint16_t *b);
double pvk_half_l1(int dim, const uint16_t *a, const uint16_t *b);
double pvk_half_norm(int dim, const uint16_t *a);
int pvk_half_normalize(int dim, const uint16_t *a, uint16_t *r);
int pvk_half_arith(int op, int dim, const uint16_t *a, const uint16_t *b, uint16_t *r);
void pvk_half_quantize(int dim, const uint16_t *a, uint8_t *bits);

/* sparsevec (indices ascending, 0-based) */
typedef struct pvk_sparse {
    int32_t dim, nnz;
    const int32_t *idx;
    const float *val;
} pvk_sparse;
double pvk_sparse_l2(const pvk_sparse *a, const pvk_sparse *b);
double pvk_sparse_l2sq(const pvk_sparse *a, const pvk_sparse *b);
double pvk_sparse_ip(const pvk_sparse *a, const pvk_sparse *b);
double pvk_sparse_neg_ip(const pvk_sparse *a, const pvk_sparse *b);
double pvk_sparse_cosine(const pvk_sparse *a, const pvk_sparse *b);
double pvk_sparse_l1(const pvk_sparse *a, const pvk_sparse *b);
double pvk_sparse_norm(const pvk_sparse *a);
/* rx[i] = val[i] / norm; returns 1 on overflow; *norm_pos = norm > 0. */
int pvk_sparse_normalize(const pvk_sparse *a, float *rx, int *norm_pos);

/* bit */
double pvk_bit_hamming(uint32_t bytes, const uint8_t *a, const uint8_t *b);
double pvk_bit_jaccard(uint32_t bytes, const uint8_t *a, const uint8_t *b);

/* aggregates: avg state (double sums) and its final division */
int pvk_vec_accum(int dim, double *state, const float *x);        /* 1 = overflow */
int pvk_half_accum(int dim, double *state, const uint16_t *x);    /* 1 = overflow */
int pvk_state_combine(int dim, double *dst, const double *src);   /* 1 = overflow */
/* 0 ok, 1 element not finite (vector: "infinite value not allowed in
 * vector"), 2 out of range for halfvec (Float4ToHalf) */
int pvk_vec_avg(int dim, const double *state, double n, float *r);
int pvk_half_avg(int dim, const double *state, double n, uint16_t *r, float *bad);

/* casts */
int pvk_float_to_half_checked(float f, uint16_t *out);   /* 1: out of range for halfvec */
float pvk_double_to_float(double d);

#endif
