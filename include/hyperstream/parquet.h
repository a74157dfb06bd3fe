/*
 * hyperstream/parquet.h - public C API for reading and writing Parquet files
 * through the Arrow C Stream Interface.
 *
 * Read: hs_parquet_read opens a file and fills an ArrowArrayStream that yields
 * record batches (struct arrays); the consumer releases the stream.  Column
 * names select top-level columns (NULL = all), in the order given; an unknown
 * name is HS_NOT_FOUND naming it.  Errors met while the stream is consumed
 * are returned by get_next and described by get_last_error.
 * hs_parquet_read_selection reads only the rows at the given file positions
 * (in file order) and, through the page index, decodes only the pages that
 * hold them; it reports what the scan did in a caller-owned stats struct.
 * Write: hs_parquet_write consumes a stream (moved: this function releases it,
 * also on failure) and writes it to path with the given options (NULL =
 * defaults: zstd, v1 pages, dictionary, statistics, page index).  The file
 * appears under its name only when it is complete.
 *
 * Ownership: `out` streams are the caller's to release; `columns` and `rows`
 * are borrowed for the duration of the call only.
 */
#ifndef HYPERSTREAM_PARQUET_H
#define HYPERSTREAM_PARQUET_H

#include "hyperstream/arrow_c_abi.h"
#include "hyperstream/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_parquet_write_options {
    size_t struct_size;           /* sizeof(hs_parquet_write_options) or 0; see common.h */
    const char *codec;          /* "none" "snappy" "gzip" "zstd" "lz4_raw"; NULL = "zstd" */
    int codec_level;            /* 0 = default */
    int64_t row_group_rows;     /* 0 = default */
    int64_t page_bytes;         /* 0 = default */
    int dictionary;             /* 0 or 1: on (default), -1: off */
    int data_page_v2;           /* 1 = write v2 data pages */
    const char *column_encodings; /* "col=ENCODING,col2=ENCODING" or NULL; names of
                                   * top-level columns or dotted leaf paths; ENCODING is
                                   * PLAIN, RLE, DELTA_BINARY_PACKED,
                                   * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
                                   * BYTE_STREAM_SPLIT (these turn the column's dictionary
                                   * off) or RLE_DICTIONARY (turns it on) */
    int64_t page_rows;          /* 0 = default (20000 rows per page) */
} hs_parquet_write_options;
#define HS_PARQUET_WRITE_OPTIONS_INIT {sizeof(hs_parquet_write_options)}

/* What a read did, filled as the stream is consumed (complete once get_next
 * has returned the end of the stream, and again at release). */
typedef struct hs_parquet_scan_stats {
    size_t struct_size;        /* set by the caller; see common.h, "Output structs" */
    int64_t row_groups_read, row_groups_skipped;
    int64_t pages_decoded, pages_skipped;  /* over all leaf columns read */
    int64_t bytes_read, rows_emitted;
} hs_parquet_scan_stats;
#define HS_PARQUET_SCAN_STATS_INIT {sizeof(hs_parquet_scan_stats)}

HS_API hs_status hs_parquet_read(const char *path, const char *const *columns, int n_columns,
                          int64_t batch_size, struct ArrowArrayStream *out, hs_error *err);
/* Like hs_parquet_read, restricted to the file row positions rows[0..n_rows)
 * (any order, duplicates ignored; rows == NULL = all rows).  stats (may be
 * NULL) is borrowed until the stream is released and updated as it is read. */
HS_API hs_status hs_parquet_read_selection(const char *path, const char *const *columns,
                                    int n_columns, const uint32_t *rows, int64_t n_rows,
                                    int64_t batch_size, hs_parquet_scan_stats *stats,
                                    struct ArrowArrayStream *out, hs_error *err);
HS_API hs_status hs_parquet_write(const char *path, struct ArrowArrayStream *in,
                           const hs_parquet_write_options *opt, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
