/*
 * parquet/writer.h - writing column batches as Parquet files.
 *
 * Streaming: batches are shredded into per-leaf levels and values, encoded
 * into pages as they fill, and flushed as row groups when a row or byte limit
 * is reached, so memory stays bounded by one row group's encoded pages.
 * Defaults follow what the widest set of readers accepts (Iceberg, Spark,
 * pyarrow, DuckDB): v1 data pages, RLE_DICTIONARY with PLAIN fallback,
 * statistics with column orders, the page index, and field_id on every
 * schema element.
 */
#ifndef HS_PARQUET_WRITER_H
#define HS_PARQUET_WRITER_H

#include "base/compress.h"
#include "columnar/column.h"
#include "io/io.h"
#include "parquet/meta.h"

/* Default cap on one page's encoded values, per column: 64 KiB, not the
 * 1 MiB of parquet-mr and Arrow.  A selective read decompresses and decodes
 * whole pages, so the cap is what one take of a wide value costs (a
 * 784-float embedding: 20 rows per page instead of 334; 8-byte columns 8192
 * rows instead of 20000); file sizes and full scans measured the same
 * (docs/parquet.md, "Selective reads"). */
#define PQ_DEFAULT_PAGE_BYTES ((int64_t)64 << 10)

typedef struct pq_column_option {
    const char *path;         /* dotted path of a leaf or top-level column, e.g. "a.b" */
    bool set_encoding; pq_encoding encoding; /* PLAIN, DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT, ... */
    bool set_dictionary; bool dictionary;
} pq_column_option;

typedef struct pq_writer_options {
    hs_codec codec;                 /* default HS_CODEC_NONE when zeroed; tools default zstd */
    int codec_level;                /* <= 0: codec default */
    int64_t row_group_rows;         /* 0 = 1048576 (pyarrow's default) */
    int64_t row_group_bytes;        /* 0 = 128 MiB of encoded data */
    int64_t page_bytes;             /* per column; 0 = PQ_DEFAULT_PAGE_BYTES */
    int64_t page_rows;              /* 0 = 20000 rows per page (Arrow's limit) */
    bool no_dictionary;             /* dictionary encoding is on by default */
    int64_t dictionary_page_bytes;  /* 0 = 1 MiB; beyond it, fall back to PLAIN */
    bool no_statistics;
    bool no_page_index;
    bool data_page_v2;              /* default v1 */
    const pq_column_option *column_options; int n_column_options;
    const char *const *kv_keys; const char *const *kv_values; int n_kv;
    const char *created_by;         /* NULL = "hyperstream version X" */
} pq_writer_options;

typedef struct pq_writer pq_writer;

/* Writes to out (borrowed until pq_writer_free; not closed by the writer).
 * schema is a STRUCT field, copied.  opt may be NULL for defaults. */
HS_MUST_USE hs_status pq_writer_open(hs_wfile *out, const hs_field *schema,
                                     const pq_writer_options *opt, pq_writer **w, hs_error *err);
/* Appends the rows of b (its schema must equal the writer's, names and types). */
HS_MUST_USE hs_status pq_writer_write(pq_writer *w, const hs_batch *b, hs_error *err);
/* Flushes the last row group and writes page indexes and the footer. */
HS_MUST_USE hs_status pq_writer_finish(pq_writer *w, hs_error *err);
/* After finish: the footer written (borrowed until pq_writer_free), for
 * Iceberg metrics (sizes, counts, bounds). */
const pq_file_meta *pq_writer_file_meta(const pq_writer *w);
uint64_t pq_writer_bytes_written(const pq_writer *w);
void pq_writer_free(pq_writer *w);  /* accepts NULL; an unfinished file is abandoned */

#endif
