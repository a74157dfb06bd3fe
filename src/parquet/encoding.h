/*
 * parquet/encoding.h - Parquet value and level encodings, both directions.
 *
 *   encoding                  decode  encode  types
 *   PLAIN                     yes     yes     all
 *   PLAIN_DICTIONARY/RLE_DICTIONARY indices   yes  yes  (dictionary page itself is PLAIN)
 *   RLE (hybrid)              yes     yes     levels, BOOLEAN (v2 pages), indices
 *   BIT_PACKED (deprecated)   yes     -       levels only
 *   DELTA_BINARY_PACKED       yes     yes     INT32, INT64
 *   DELTA_LENGTH_BYTE_ARRAY   yes     yes     BYTE_ARRAY
 *   DELTA_BYTE_ARRAY          yes     yes     BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
 *   BYTE_STREAM_SPLIT         yes     yes     FLOAT, DOUBLE, INT32, INT64, FLBA
 *
 * Value representation at this interface (n = number of non-null values):
 *   BOOLEAN             one byte per value, 0 or 1
 *   INT32/FLOAT         4 bytes each, INT64/DOUBLE 8, INT96 12 (little-endian, as on disk)
 *   BYTE_ARRAY, FLBA    pq_bytes views; decoders point them into the page (PLAIN,
 *                       DELTA_LENGTH_BYTE_ARRAY) or into `scratch` (DELTA_BYTE_ARRAY,
 *                       FLBA BYTE_STREAM_SPLIT; scratch is reset on entry), so views
 *                       live until the page buffer or scratch is reused
 * Every decoder takes (p, len) of untrusted bytes, produces exactly n values
 * or fails with HS_CORRUPT, and never reads outside [p, p + len).
 */
#ifndef HS_PARQUET_ENCODING_H
#define HS_PARQUET_ENCODING_H

#include "base/buf.h"
#include "base/error.h"
#include "parquet/meta.h"

/* Number of bits needed for values up to max (0 -> 0). */
int pq_bit_width(uint64_t max);

/* RLE / bit-packed hybrid decoder, resumable across calls: each get returns
 * exactly n values or fails with HS_CORRUPT (bit width out of range, data cut
 * short).  The fields are private to encoding.c. */
typedef struct pq_rle_decoder {
    const uint8_t *start;     /* first byte of the hybrid data (for error positions) */
    const uint8_t *p, *end;   /* next run header; end of the data */
    int bit_width;
    int64_t rle_left;         /* values left in the current RLE run */
    uint64_t rle_value;
    int64_t bp_left;          /* values left in the current bit-packed run */
    const uint8_t *bp_p;      /* first byte of the current bit-packed run */
    size_t bp_avail;          /* bytes of that run present in the data */
    uint64_t bp_pos;          /* values of that run already returned */
} pq_rle_decoder;

void pq_rle_init(pq_rle_decoder *d, const uint8_t *p, size_t len, int bit_width);
HS_MUST_USE hs_status pq_rle_get_u32(pq_rle_decoder *d, uint32_t *out, int64_t n, hs_error *err);
HS_MUST_USE hs_status pq_rle_get_u16(pq_rle_decoder *d, uint16_t *out, int64_t n, hs_error *err);
/* Passes over n values without decoding them (run headers are still read
 * and checked; bytes of a bit-packed run are checked only when read). */
HS_MUST_USE hs_status pq_rle_skip(pq_rle_decoder *d, int64_t n, hs_error *err);
/* For bit widths <= 8, e.g. BOOLEAN RLE data (bit width 1): one byte per value. */
HS_MUST_USE hs_status pq_rle_get_u8(pq_rle_decoder *d, uint8_t *out, int64_t n, hs_error *err);
/* Appends the hybrid encoding (no length prefix) of v[0..n). */
HS_MUST_USE hs_status pq_rle_encode_u32(const uint32_t *v, int64_t n, int bit_width, hs_buf *out);

/* Levels.  For v1 pages the RLE run is preceded by a 4-byte length (prefixed=true);
 * encoding may be PQ_ENC_RLE or the deprecated PQ_ENC_BIT_PACKED (v1 only).
 * *used receives the bytes consumed from p.  max_level 0 -> all zeros, 0 bytes. */
HS_MUST_USE hs_status pq_levels_decode(pq_encoding encoding, bool prefixed, const uint8_t *p,
                                       size_t len, int max_level, int64_t n, uint16_t *out,
                                       size_t *used, hs_error *err);
/* True when the n levels at p (same framing as pq_levels_decode) are all
 * max_level because the data opens with one RLE run of at least n values of
 * max_level; *used then receives what pq_levels_decode would report.  False
 * (nothing consumed) otherwise, also for corrupt data: decode it then. */
bool pq_levels_all_max(pq_encoding encoding, bool prefixed, const uint8_t *p, size_t len,
                       int max_level, int64_t n, size_t *used);
/* True when the n levels at p (same framing as pq_levels_decode, max level
 * 1) are whole rows of w: 0 then w-1 ones each -- the repetition levels of
 * a list whose rows all hold w present elements -- checked run by run
 * without decoding; *used as for pq_levels_decode.  False (nothing consumed)
 * otherwise, also for corrupt data. */
bool pq_levels_periodic(pq_encoding encoding, bool prefixed, const uint8_t *p, size_t len,
                        int64_t n, int64_t w, size_t *used);
HS_MUST_USE hs_status pq_levels_encode(const uint16_t *levels, int64_t n, int max_level,
                                       bool prefixed, hs_buf *out);

/* Dictionary indices of a data page: one byte bit width, then the hybrid run.
 * Each index is checked against dict_size. */
HS_MUST_USE hs_status pq_dict_indices_decode(const uint8_t *p, size_t len, int64_t n,
                                             uint32_t dict_size, uint32_t *out, hs_error *err);
HS_MUST_USE hs_status pq_dict_indices_encode(const uint32_t *idx, int64_t n, uint32_t dict_size,
                                             hs_buf *out);

/* Values.  `out` holds n values in the representation above (fixed: n * width
 * bytes; BOOLEAN: n bytes; byte arrays: n pq_bytes).  type_length is the FLBA width. */
HS_MUST_USE hs_status pq_values_decode(pq_encoding enc, pq_ptype type, int32_t type_length,
                                       const uint8_t *p, size_t len, int64_t n, void *out,
                                       hs_buf *scratch, hs_error *err);
HS_MUST_USE hs_status pq_values_encode(pq_encoding enc, pq_ptype type, int32_t type_length,
                                       const void *values, int64_t n, hs_buf *out);

/* Width in bytes of one value of a fixed physical type (BOOLEAN 1, INT96 12,
 * FLBA type_length), 0 for BYTE_ARRAY. */
int pq_ptype_width(pq_ptype type, int32_t type_length);

#endif
