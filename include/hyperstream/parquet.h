/*
 * hyperstream/parquet.h - public C API for reading and writing Parquet files
 * through the Arrow C Stream Interface.
 *
 * Read: hs_parquet_read opens a file and fills an ArrowArrayStream that yields
 * record batches (struct arrays); the consumer releases the stream.  Column
 * names select top-level columns (NULL = all).
 * Write: hs_parquet_write consumes a stream (moved: this function releases it)
 * and writes it to path with the given options (NULL = defaults: zstd, v1
 * pages, dictionary, statistics, page index).
 */
#ifndef HYPERSTREAM_PARQUET_H
#define HYPERSTREAM_PARQUET_H

#include "hyperstream/arrow_c_abi.h"
#include "hyperstream/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_parquet_write_options {
    const char *codec;          /* "none" "snappy" "gzip" "zstd" "lz4_raw"; NULL = "zstd" */
    int codec_level;            /* 0 = default */
    int64_t row_group_rows;     /* 0 = default */
    int64_t page_bytes;         /* 0 = default */
    int dictionary;             /* 0 or 1: on (default), -1: off */
    int data_page_v2;           /* 1 = write v2 data pages */
    const char *column_encodings; /* "col=ENCODING,col2=ENCODING" or NULL */
} hs_parquet_write_options;

hs_status hs_parquet_read(const char *path, const char *const *columns, int n_columns,
                          int64_t batch_size, struct ArrowArrayStream *out, hs_error *err);
hs_status hs_parquet_write(const char *path, struct ArrowArrayStream *in,
                           const hs_parquet_write_options *opt, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
