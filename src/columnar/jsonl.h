/*
 * columnar/jsonl.h - column batches as JSON Lines, losslessly.
 *
 * One JSON object per row, keys in schema order, one line each ("\n").
 * The encoding of each type is fixed (docs/jsonl.md is the reference), so the
 * text converts back to the same values given the schema (columnar/ingest.h):
 *
 *   type                     JSON
 *   ----------------------   ------------------------------------------------
 *   null slot, NA            null
 *   BOOL                     true | false
 *   INT*, UINT*              number, all digits (full 64-bit range)
 *   FLOAT64                  number, shortest text that strtod round-trips
 *   FLOAT32                  number, shortest text that strtof round-trips
 *   FLOAT16                  number, the half's exact value (shortest double text)
 *   NaN / +inf / -inf        "NaN" | "Infinity" | "-Infinity" (strings)
 *   DECIMAL128(p, s)         string, scale applied: "-12.340"
 *   DATE32                   "YYYY-MM-DD" (proleptic Gregorian; "-0044-03-15")
 *   TIME32, TIME64           "HH:MM:SS.ffffff" ("HH:MM:SS.fffffffff" for ns)
 *   TIMESTAMP                "YYYY-MM-DDTHH:MM:SS.ffffff" (9 digits for ns),
 *                            + "Z" when the column has a time zone (values are UTC)
 *   STRING                   string (invalid UTF-8 -> U+FFFD per maximal subpart)
 *   BINARY, FIXED_BINARY     string, standard base64 with padding
 *   FIXED_BINARY[16] uuid    "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lowercase)
 *   LIST, FIXED_LIST         array
 *   STRUCT                   object, keys in field order
 *   MAP                      array of {"key": k, "value": v}
 *
 * Speed: values are formatted straight into the output hs_buf (reserving a
 * bound first); nothing is allocated per value.
 */
#ifndef HS_COLUMNAR_JSONL_H
#define HS_COLUMNAR_JSONL_H

#include "base/buf.h"
#include "columnar/column.h"

/* Appends rows [start, start+n) of b as JSON Lines (each line ends in '\n').
 * Returns HS_INVALID if the range is outside the batch, HS_NOMEM on failure. */
HS_MUST_USE hs_status hs_batch_write_jsonl(const hs_batch *b, int64_t start, int64_t n,
                                           hs_buf *out);
/* Appends the JSON encoding of row `row` of column c (described by f). */
HS_MUST_USE hs_status hs_json_append_value(const hs_field *f, const hs_column *c, int64_t row,
                                           hs_buf *out);
/* Appends the JSON encoding of one scalar value given in its Arrow physical
 * form: `v` points to the fixed-width value (BOOL: one byte 0/1) or, for
 * STRING/BINARY, to `len` bytes.  Nested types are HS_INVALID. */
HS_MUST_USE hs_status hs_json_append_scalar(const hs_field *f, const void *v, size_t len,
                                            hs_buf *out);
/* Appends s[0..n) as a JSON string literal (quotes included), escaping '"',
 * '\\' and control characters and replacing invalid UTF-8 with U+FFFD. */
HS_MUST_USE hs_status hs_json_append_string(hs_buf *out, const uint8_t *s, size_t n);

/* Length of the longest valid UTF-8 prefix of s[0..n) (n: all valid). */
size_t hs_utf8_valid_prefix(const uint8_t *s, size_t n);

/* Number text helpers (write into dst, return length; dst needs 32 bytes). */
int hs_fmt_double(double v, char *dst);   /* shortest round-trip; finite only */
int hs_fmt_float(float v, char *dst);     /* shortest float32 round-trip; finite only */
float hs_half_to_float(uint16_t h);
/* A UUID in PostgreSQL's input forms (32 hex digits, any case, hyphens
 * anywhere, optionally inside one pair of braces) -> its 16 bytes; false
 * when s[0..n) is not one. */
bool hs_uuid_parse(const char *s, size_t n, uint8_t out[16]);
uint16_t hs_float_to_half(float f);       /* round to nearest even */

/* Proleptic Gregorian calendar <-> days since 1970-01-01 (H. Hinnant's algorithms). */
void hs_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
int64_t hs_days_from_civil(int64_t y, unsigned m, unsigned d);

#endif
