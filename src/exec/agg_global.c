/*
 * exec/agg_global.c - global aggregates (no GROUP BY) on their own paths:
 * count(*), count and sum/avg of int32, int64, float64 and decimals within
 * 64 bits straight over each batch's column (no group ids, no per-row
 * state lookups), serially when every aggregate is such (a pool round
 * costs more than the batch); count(*) alone over a table scan without a
 * filter or delete files from the data files' record counts, or with a
 * filter every file's sidecar indexes decide from their bitmaps.  The
 * operator, its other loops and its state are agg.c / agg_int.h.
 */
#include "exec/agg_int.h"

#include <string.h>

/* A global aggregate (no group columns; every row in group 0) straight
 * over the column: count(*) the batch's rows, count its valid bits, and
 * sum/avg of int32, int64, float64 and of decimals within 64 bits in a
 * register (int32 in int64 lanes the compiler vectorizes; the partial sum
 * of at most 2^31 values within 64 bits fits __int128) added once with
 * the overflow check.  float64 adds in row order as update_fast does.
 * false, with nothing changed: not covered (DISTINCT, other aggregates,
 * a decimal wider than 64 bits), the per-row loops then run. */
bool agg_update_global(agg_state *a, const hs_batch *b, hs_status *st, hs_error *err)
{
    int64_t n = b->n_rows;
    xo_agg_fn fn = a->a.fn;
    if (fn == XO_AGG_COUNT_STAR) {
        a->cnt[0] += n;
        return true;
    }
    if (a->a.distinct || a->pvt || (fn != XO_AGG_COUNT && fn != XO_AGG_SUM && fn != XO_AGG_AVG))
        return false;
    const hs_column *c = b->cols[a->a.arg];
    if (c->type == HS_TYPE_NA)
        return false;
    const uint8_t *valid = c->validity.data;
    int64_t cn = valid ? hs_bits_count(valid, 0, n) : n;
    if (fn == XO_AGG_COUNT) {
        a->cnt[0] += cn;
        return true;
    }
    if (c->type == HS_TYPE_FLOAT64 ? a->cls != ACC_FLOAT : a->cls != ACC_INT && a->cls != ACC_DEC)
        return false;
    const uint8_t *d = c->values.data;
    __int128 sm = 0;
#define GLOBAL_LOOP(T, ACC)                                                    \
    do {                                                                       \
        ACC acc = 0;                                                           \
        const T *v = (const T *)d;                                             \
        if (valid) {                                                           \
            for (int64_t i = 0; i < n; i++)                                    \
                acc += hs_bit_get(valid, i) ? (ACC)v[i] : 0;                   \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                acc += (ACC)v[i];                                              \
        }                                                                      \
        sm = acc;                                                              \
    } while (0)
    switch (c->type) {
    case HS_TYPE_INT32:
        GLOBAL_LOOP(int32_t, int64_t);
        break;
    case HS_TYPE_INT64:
        GLOBAL_LOOP(int64_t, __int128);
        break;
    case HS_TYPE_FLOAT64: {
        const double *v = (const double *)d;
        double f = a->fsum[0];
        for (int64_t i = 0; i < n; i++)
            if (!valid || hs_bit_get(valid, i))
                f += v[i];
        a->fsum[0] = f;
        a->cnt[0] += cn;
        return true;
    }
    case HS_TYPE_DECIMAL128: {
        /* the low halves summed, the rows checked to be their sign
         * extension (within 64 bits) */
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t lo, hi;
            memcpy(&lo, d + 16 * (size_t)i, 8);
            memcpy(&hi, d + 16 * (size_t)i + 8, 8);
            int64_t ok = !valid || hs_bit_get(valid, i);
            bad |= ok ? hi ^ (lo >> 63) : 0;
            sm += ok ? lo : 0;
        }
        if (bad)
            return false;
        break;
    }
    default:
        return false;
    }
#undef GLOBAL_LOOP
    a->cnt[0] += cn;
    *st = HS_OK;
    if (__builtin_add_overflow(a->isum[0], sm, &a->isum[0]))
        *st = hs_err_set(err, HS_INVALID, "%s: numeric field overflow",
                         fn == XO_AGG_SUM ? "sum" : "avg");
    return true;
}

/* A global aggregate whose aggregates agg_update_global covers by their
 * argument types: a batch costs about a nanosecond a row, less than a
 * pool round. */
bool agg_global_cheap(const agg_op *s)
{
    if (s->n_groups > 0)
        return false;
    const hs_field *in = &s->op.children[0]->schema;
    for (int j = 0; j < s->n_aggs; j++) {
        const agg_state *a = &s->aggs[j];
        xo_agg_fn fn = a->a.fn;
        if (a->same >= 0 || fn == XO_AGG_COUNT_STAR)
            continue;
        if (a->a.distinct || a->pvt || (fn != XO_AGG_COUNT && fn != XO_AGG_SUM && fn != XO_AGG_AVG))
            return false;
        hs_type t = in->children[a->a.arg].type;
        if (fn != XO_AGG_COUNT && t != HS_TYPE_INT32 && t != HS_TYPE_INT64 &&
            t != HS_TYPE_FLOAT64 && t != HS_TYPE_DECIMAL128)
            return false;
    }
    return true;
}

/* count(*) alone, without groups, over a child whose row count is known
 * before it runs (a table scan without a filter or delete files, through
 * Projects: the data files' record counts), or that counts its rows
 * without producing them (a filtered scan whose every file has sidecar
 * indexes deciding the whole filter: xo_count_rows, the bitmaps'
 * cardinalities less the deleted rows): the count without reading data.
 * *done: counted (s->counted says from what). */
hs_status agg_count_known(agg_op *s, bool *done, hs_error *err)
{
    *done = false;
    if (s->n_groups > 0 || s->n_aggs == 0 || s->level > 0)
        return HS_OK;
    for (int j = 0; j < s->n_aggs; j++)
        if (s->aggs[j].a.fn != XO_AGG_COUNT_STAR)
            return HS_OK;
    int64_t n = xo_exact_rows(s->op.children[0]);
    int how = 1;
    if (n < 0) {
        HS_TRY(xo_count_rows(s->op.children[0], &n, err));
        how = 2;
    }
    if (n < 0)
        return HS_OK;
    for (int j = 0; j < s->n_aggs; j++)
        if (s->aggs[j].same < 0)
            s->aggs[j].cnt[0] = n;
    s->counted = how;
    *done = true;
    return HS_OK;
}
