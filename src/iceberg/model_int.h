/*
 * iceberg/model_int.h - internals shared by the files of the table model
 * (schema.c, transform.c, value.c, metadata.c): the jansson-level JSON
 * builders/parsers of schemas, specs and sort orders, and calendar helpers.
 *
 * JSON objects returned by *_to_jansson are new references the caller
 * releases with json_decref.  *_from_jansson parsers take borrowed json_t and
 * fill a zeroed output, leaving it zeroed on failure; `what` names the
 * enclosing element for error messages ("schemas[2]").
 */
#ifndef HS_ICEBERG_MODEL_INT_H
#define HS_ICEBERG_MODEL_INT_H

#include "iceberg/model.h"
#include <jansson.h>

/* schema.c */
HS_MUST_USE hs_status ice_schema_to_jansson(const ice_schema *s, json_t **out, hs_error *err);
HS_MUST_USE hs_status ice_schema_from_jansson(const json_t *j, const char *what, ice_schema *out,
                                              hs_error *err);

/* transform.c */
HS_MUST_USE hs_status ice_spec_to_jansson(const ice_partition_spec *s, bool fields_only,
                                          json_t **out, hs_error *err);
HS_MUST_USE hs_status ice_spec_from_jansson(const json_t *j, int32_t spec_id_if_array,
                                            const char *what, ice_partition_spec *out,
                                            hs_error *err);
HS_MUST_USE hs_status ice_sort_order_to_jansson(const ice_sort_order *o, json_t **out,
                                                hs_error *err);
HS_MUST_USE hs_status ice_sort_order_from_jansson(const json_t *j, const char *what,
                                                  ice_sort_order *out, hs_error *err);

/* value.c: calendar (proleptic Gregorian, days since 1970-01-01) */
int64_t ice_days_from_civil(int64_t y, unsigned m, unsigned d);
void ice_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);
static inline int64_t ice_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t ice_floor_mod(int64_t a, int64_t b) { return a - ice_floor_div(a, b) * b; }
/* "2017-11-16" (years outside 0..9999 get a sign and/or more digits). */
void ice_fmt_date(int64_t days, char out[32]);
/* Time of day from nanoseconds: full form "22:31:08.123456" with `frac_digits`
 * digits (0 = none), or Java's LocalTime.toString form ("22:31", "22:31:08",
 * "22:31:08.120") when frac_digits < 0. */
void ice_fmt_time(int64_t nanos_of_day, int frac_digits, char out[40]);
/* Timestamp from micros (or nanos when nanos is true): "<date>T<time>". */
void ice_fmt_timestamp(int64_t v, bool nanos, int frac_digits, char out[80]);
/* Appends bytes as base64 (standard alphabet, padded). */
HS_MUST_USE hs_status ice_base64_append(hs_buf *out, const uint8_t *p, size_t n);
/* Appends the canonical decimal text of an unscaled value with a scale. */
HS_MUST_USE hs_status ice_decimal_append(hs_buf *out, __int128 unscaled, int32_t scale);
/* Minimal big-endian two's complement bytes of x into out; returns the length (1..16). */
int ice_decimal_to_be(__int128 x, uint8_t out[16]);
void ice_fmt_uuid(const uint8_t b[16], char out[37]);
/* Appends a JSON value (string/number/bool) parsed from a jansson node. */
HS_MUST_USE hs_status ice_value_from_jansson(const hs_field *f, const json_t *j, ice_value *out,
                                             hs_error *err);
/* New jansson node for a value (single-value JSON form); NULL on OOM. */
json_t *ice_value_to_jansson(const ice_value *v);
/* Dumps a jansson node compactly into out (appends). */
HS_MUST_USE hs_status ice_json_dump(const json_t *j, hs_buf *out, bool pretty);
/* Sets err to HS_NOMEM for a failed jansson allocation. */
hs_status ice_json_nomem(hs_error *err);

#endif
