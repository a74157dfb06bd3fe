/*
 * parquet/meta.h - Parquet footer and page-header structures (parquet.thrift)
 * and their Thrift compact-protocol decoding and encoding.
 *
 * Field numbers follow apache/parquet-format parquet.thrift.  Decoded
 * structures live in an arena owned by the caller (a footer: pq_footer's
 * arena); binary fields point into that arena as (ptr, len) pairs, never into
 * the input buffer, so the input may be freed after decoding.  Optional
 * scalar fields have a has_* flag.  Unknown fields are skipped (forward
 * compatibility); every length and count is checked against the remaining
 * input, nesting depth is bounded, and any violation is HS_CORRUPT.
 *
 * Implementation: meta.c (structures, field-id table in its header comment)
 * over thrift.h/thrift.c (compact protocol primitives).  Details a caller
 * relies on:
 *   - a present binary value of length 0 has p != NULL (a static empty array),
 *     so pq_bytes.p == NULL always means "absent";
 *   - enum fields hold the value as written (may be outside the C enum: check
 *     before indexing tables), except pq_ptype and pq_repetition, which the
 *     decoder range-checks;
 *   - page header: absent sub-headers are zeroed except their statistics
 *     blocks, which are meaningful only under has_statistics (the decoder
 *     runs once per page and does not clear ~200 bytes it will not use);
 *   - ColumnChunk: has_offset_index / has_column_index need both the offset
 *     and the length fields; the decoder drops a half-present index;
 *   - negative sizes, counts and row numbers are HS_CORRUPT.
 * Encoders return HS_INVALID for structurally impossible input (negative
 * counts, NULL arrays with n > 0, NULL names) and HS_NOMEM; on failure `out`
 * keeps its previous length.
 */
#ifndef HS_PARQUET_META_H
#define HS_PARQUET_META_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include <stdbool.h>
#include <stdint.h>

/* --- enums (values as in parquet.thrift) --- */
typedef enum { PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_INT96 = 3, PQ_FLOAT = 4,
               PQ_DOUBLE = 5, PQ_BYTE_ARRAY = 6, PQ_FIXED_LEN_BYTE_ARRAY = 7 } pq_ptype;
typedef enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 } pq_repetition;
typedef enum { PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3,
               PQ_ENC_BIT_PACKED = 4, PQ_ENC_DELTA_BINARY_PACKED = 5,
               PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6, PQ_ENC_DELTA_BYTE_ARRAY = 7,
               PQ_ENC_RLE_DICTIONARY = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9 } pq_encoding;
typedef enum { PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_GZIP = 2,
               PQ_CODEC_LZO = 3, PQ_CODEC_BROTLI = 4, PQ_CODEC_LZ4 = 5, PQ_CODEC_ZSTD = 6,
               PQ_CODEC_LZ4_RAW = 7 } pq_codec;
typedef enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2,
               PQ_PAGE_DATA_V2 = 3 } pq_page_type;
typedef enum { PQ_BOUNDARY_UNORDERED = 0, PQ_BOUNDARY_ASCENDING = 1,
               PQ_BOUNDARY_DESCENDING = 2 } pq_boundary_order;
/* ConvertedType (legacy), -1 = absent */
typedef enum { PQ_CT_NONE = -1, PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2,
               PQ_CT_LIST = 3, PQ_CT_ENUM = 4, PQ_CT_DECIMAL = 5, PQ_CT_DATE = 6,
               PQ_CT_TIME_MILLIS = 7, PQ_CT_TIME_MICROS = 8, PQ_CT_TIMESTAMP_MILLIS = 9,
               PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11, PQ_CT_UINT_16 = 12,
               PQ_CT_UINT_32 = 13, PQ_CT_UINT_64 = 14, PQ_CT_INT_8 = 15, PQ_CT_INT_16 = 16,
               PQ_CT_INT_32 = 17, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19, PQ_CT_BSON = 20,
               PQ_CT_INTERVAL = 21 } pq_converted_type;
/* LogicalType union member ids; 0 = absent */
typedef enum { PQ_LT_NONE = 0, PQ_LT_STRING = 1, PQ_LT_MAP = 2, PQ_LT_LIST = 3, PQ_LT_ENUM = 4,
               PQ_LT_DECIMAL = 5, PQ_LT_DATE = 6, PQ_LT_TIME = 7, PQ_LT_TIMESTAMP = 8,
               PQ_LT_INTEGER = 10, PQ_LT_UNKNOWN = 11, PQ_LT_JSON = 12, PQ_LT_BSON = 13,
               PQ_LT_UUID = 14, PQ_LT_FLOAT16 = 15, PQ_LT_VARIANT = 16, PQ_LT_GEOMETRY = 17,
               PQ_LT_GEOGRAPHY = 18 } pq_logical_kind;
typedef enum { PQ_TU_MILLIS = 1, PQ_TU_MICROS = 2, PQ_TU_NANOS = 3 } pq_time_unit;

typedef struct pq_bytes { const uint8_t *p; uint32_t len; } pq_bytes;

typedef struct pq_logical_type {
    pq_logical_kind kind;
    int32_t scale, precision;        /* DECIMAL */
    bool is_adjusted_to_utc;         /* TIME, TIMESTAMP */
    pq_time_unit unit;               /* TIME, TIMESTAMP */
    int8_t bit_width; bool is_signed;/* INTEGER */
} pq_logical_type;

typedef struct pq_schema_element {
    bool has_type; pq_ptype type;             /* 1 (absent for groups) */
    int32_t type_length;                      /* 2, 0 = absent */
    bool has_repetition; pq_repetition repetition; /* 3 (absent on root) */
    const char *name;                         /* 4, NUL-terminated */
    int32_t num_children;                     /* 5, 0 for leaves */
    pq_converted_type converted_type;         /* 6 */
    int32_t scale, precision;                 /* 7, 8 (legacy decimal) */
    bool has_field_id; int32_t field_id;      /* 9 */
    pq_logical_type logical;                  /* 10 */
} pq_schema_element;

typedef struct pq_statistics {
    pq_bytes max, min;                /* 1, 2 (legacy, signed order) */
    bool has_null_count; int64_t null_count;       /* 3 */
    bool has_distinct_count; int64_t distinct_count;/* 4 */
    pq_bytes max_value, min_value;    /* 5, 6 ; p == NULL = absent */
    bool has_is_max_exact, is_max_value_exact;     /* 7 */
    bool has_is_min_exact, is_min_value_exact;     /* 8 */
} pq_statistics;

typedef struct pq_kv { const char *key; const char *value; /* value may be NULL */ } pq_kv;

typedef struct pq_encoding_stats { pq_page_type page_type; pq_encoding encoding; int32_t count; } pq_encoding_stats;

typedef struct pq_column_meta {
    pq_ptype type;                       /* 1 */
    int32_t n_encodings; pq_encoding *encodings; /* 2 */
    int32_t n_path; const char **path;   /* 3 */
    pq_codec codec;                      /* 4 */
    int64_t num_values;                  /* 5 */
    int64_t total_uncompressed_size;     /* 6 */
    int64_t total_compressed_size;       /* 7 */
    int32_t n_kv; pq_kv *kv;             /* 8 */
    int64_t data_page_offset;            /* 9 */
    bool has_index_page_offset; int64_t index_page_offset;       /* 10 */
    bool has_dictionary_page_offset; int64_t dictionary_page_offset; /* 11 */
    bool has_statistics; pq_statistics statistics;               /* 12 */
    int32_t n_encoding_stats; pq_encoding_stats *encoding_stats; /* 13 */
    bool has_bloom_filter_offset; int64_t bloom_filter_offset;   /* 14 */
    bool has_bloom_filter_length; int32_t bloom_filter_length;   /* 15 */
} pq_column_meta;

typedef struct pq_column_chunk {
    const char *file_path;               /* 1, NULL = same file */
    int64_t file_offset;                 /* 2 */
    bool has_meta_data; pq_column_meta meta_data; /* 3 */
    bool has_offset_index; int64_t offset_index_offset; int32_t offset_index_length; /* 4, 5 */
    bool has_column_index; int64_t column_index_offset; int32_t column_index_length; /* 6, 7 */
    bool is_encrypted;                   /* 8 or 9 present */
} pq_column_chunk;

typedef struct pq_sorting_column { int32_t column_idx; bool descending; bool nulls_first; } pq_sorting_column;

typedef struct pq_row_group {
    int32_t n_columns; pq_column_chunk *columns; /* 1 */
    int64_t total_byte_size;             /* 2 */
    int64_t num_rows;                    /* 3 */
    int32_t n_sorting_columns; pq_sorting_column *sorting_columns; /* 4 */
    bool has_file_offset; int64_t file_offset;                /* 5 */
    bool has_total_compressed_size; int64_t total_compressed_size; /* 6 */
    bool has_ordinal; int16_t ordinal;   /* 7 */
} pq_row_group;

typedef struct pq_file_meta {
    int32_t version;                     /* 1 */
    int32_t n_schema; pq_schema_element *schema; /* 2, depth-first, [0] = root */
    int64_t num_rows;                    /* 3 */
    int32_t n_row_groups; pq_row_group *row_groups; /* 4 */
    int32_t n_kv; pq_kv *kv;             /* 5 */
    const char *created_by;              /* 6 */
    int32_t n_column_orders;             /* 7: each TYPE_ORDER when present */
    bool has_encryption_algorithm;       /* 8 */
} pq_file_meta;

typedef struct pq_data_page_header {
    int32_t num_values; pq_encoding encoding;
    pq_encoding def_encoding, rep_encoding;
    bool has_statistics; pq_statistics statistics;
} pq_data_page_header;

typedef struct pq_dict_page_header {
    int32_t num_values; pq_encoding encoding; bool is_sorted;
} pq_dict_page_header;

typedef struct pq_data_page_header_v2 {
    int32_t num_values, num_nulls, num_rows; pq_encoding encoding;
    int32_t def_levels_byte_length, rep_levels_byte_length;
    bool is_compressed;                  /* default true */
    bool has_statistics; pq_statistics statistics;
} pq_data_page_header_v2;

typedef struct pq_page_header {
    pq_page_type type;
    int32_t uncompressed_page_size, compressed_page_size;
    bool has_crc; int32_t crc;
    bool has_data; pq_data_page_header data;
    bool has_dict; pq_dict_page_header dict;
    bool has_data_v2; pq_data_page_header_v2 data_v2;
} pq_page_header;

typedef struct pq_column_index {
    int32_t n_pages;
    bool *null_pages;                    /* 1 */
    pq_bytes *min_values, *max_values;   /* 2, 3 */
    pq_boundary_order boundary_order;    /* 4 */
    bool has_null_counts; int64_t *null_counts; /* 5 */
} pq_column_index;

typedef struct pq_page_location { int64_t offset; int32_t compressed_page_size; int64_t first_row_index; } pq_page_location;
typedef struct pq_offset_index { int32_t n_pages; pq_page_location *pages; } pq_offset_index;

/* Decoders: buf/len untrusted; results allocated in `arena`.
 * pq_decode_page_header also reports how many bytes the header used. */
HS_MUST_USE hs_status pq_decode_file_meta(const uint8_t *buf, size_t len, hs_arena *arena,
                                          pq_file_meta *out, hs_error *err);
HS_MUST_USE hs_status pq_decode_page_header(const uint8_t *buf, size_t len, hs_arena *arena,
                                            pq_page_header *out, size_t *used, hs_error *err);
/* The same; with skip_stats the page statistics are passed over (has_statistics
 * stays false): for readers that take page bounds from the column index. */
HS_MUST_USE hs_status pq_decode_page_header_ex(const uint8_t *buf, size_t len, hs_arena *arena,
                                               bool skip_stats, pq_page_header *out,
                                               size_t *used, hs_error *err);
HS_MUST_USE hs_status pq_decode_column_index(const uint8_t *buf, size_t len, hs_arena *arena,
                                             pq_column_index *out, hs_error *err);
HS_MUST_USE hs_status pq_decode_offset_index(const uint8_t *buf, size_t len, hs_arena *arena,
                                             pq_offset_index *out, hs_error *err);

/* Encoders append compact-protocol bytes to out.  Absent optional fields are omitted. */
HS_MUST_USE hs_status pq_encode_file_meta(const pq_file_meta *m, hs_buf *out);
HS_MUST_USE hs_status pq_encode_page_header(const pq_page_header *h, hs_buf *out);
HS_MUST_USE hs_status pq_encode_column_index(const pq_column_index *ci, hs_buf *out);
HS_MUST_USE hs_status pq_encode_offset_index(const pq_offset_index *oi, hs_buf *out);

/* JSON view of a footer (binary values as lowercase hex strings, enums by
 * name, absent optionals omitted), for tests and `hyperstream parquet meta`.
 * pq_file_meta_to_json appends to out (status only: HS_NOMEM);
 * pq_footer_to_json decodes a serialized FileMetaData first. */
HS_MUST_USE hs_status pq_file_meta_to_json(const pq_file_meta *m, hs_buf *out);
HS_MUST_USE hs_status pq_footer_to_json(const uint8_t *buf, size_t len, hs_buf *out,
                                        hs_error *err);
/* Reads the footer of the Parquet file at path and returns it as JSON; the
 * caller frees the string with hs_string_free.  NULL on error (err filled);
 * an encrypted footer ("PARE") is HS_UNSUPPORTED.  Exported for ctypes. */
char *hs_parquet_footer_json(const char *path, hs_error *err);
void hs_string_free(char *s);

#endif
