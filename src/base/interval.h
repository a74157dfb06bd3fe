/*
 * base/interval.h - PostgreSQL's interval value: the one place that knows
 * its representation, order, hashing, text and arithmetic.  The SQL text
 * input (units, ISO 8601, field qualifiers) and date/timestamp arithmetic
 * stay with the expression language (expr/expr_interval.c); columns
 * (columnar HS_TYPE_INTERVAL), operators (exec: keys, sort, min/max/sum/avg)
 * and output (Arrow, CLI) use this module.
 *
 * Value, 16 bytes, as PostgreSQL's Interval (three parts that never convert
 * into each other implicitly):
 *
 *   bytes 0-7    micros   int64   the time part
 *   bytes 8-11   days     int32
 *   bytes 12-15  months   int32   (years are 12 months)
 *
 * Order and equality (PostgreSQL's interval_cmp): by the span, months as
 * 30 days and days as 24 hours, so '1 mon' = '30 days' = '720:00:00'.  The
 * hash key is that span (hs_interval_key), so hash grouping, DISTINCT and
 * joins put equal intervals together whatever their parts.
 *
 * Text: IntervalStyle postgres ('1 year 2 mons -3 days +04:05:06.5').
 *
 * Arrow: month_day_nano ("tin": int32 months, int32 days, int64 nanos);
 * hs_interval_to_mdn fails when the time part does not fit in nanoseconds
 * (beyond about 292 years), which PostgreSQL's microseconds allow.
 */
#ifndef HS_BASE_INTERVAL_H
#define HS_BASE_INTERVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hs_interval {
    int64_t micros;
    int32_t days;
    int32_t months;
} hs_interval;

#define HS_USECS_PER_DAY 86400000000LL

/* The value intervals compare by (PostgreSQL's interval_cmp_value). */
__int128 hs_interval_span(hs_interval v);
int hs_interval_cmp(hs_interval a, hs_interval b);   /* -1, 0, 1 */
/* 16 bytes, equal exactly when the intervals are equal (the span). */
void hs_interval_key(hs_interval v, uint8_t out[16]);
/* IntervalStyle postgres; returns the length (buf gets at most cap - 1
 * bytes and a NUL; 128 bytes always suffice). */
size_t hs_interval_format(hs_interval v, char *buf, size_t cap);

/* Arithmetic; false when the result is out of range (SQLSTATE 22008). */
bool hs_interval_neg(hs_interval v, hs_interval *out);
bool hs_interval_add(hs_interval a, hs_interval b, int sign, hs_interval *out);
/* v * factor, or v / factor when div (PostgreSQL's interval_mul, _div). */
bool hs_interval_mul(hs_interval v, double factor, bool div, hs_interval *out);

/* Arrow month_day_nano <-> interval; to: false when nanos overflow.  from
 * truncates nanoseconds to microseconds (toward zero). */
bool hs_interval_to_mdn(hs_interval v, uint8_t out[16]);
hs_interval hs_interval_from_mdn(const uint8_t in[16]);

#endif
