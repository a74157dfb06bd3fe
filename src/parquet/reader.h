/*
 * parquet/reader.h - reading Parquet files into column batches.
 *
 * Opening a reader parses the footer once (and keeps it in a process-wide
 * cache keyed by the file's identity (io.h: device, inode, size and
 * times; never the name alone), so reopening a file costs no footer
 * decode) and maps the Parquet schema to an hs_field tree with field ids.
 * A scan then reads the chosen top-level columns of the chosen row groups
 * batch by batch.  All reads are range reads through io/ (hs_file), so the
 * same code reads local files, memory and object stores.
 *
 * Selective reads: a scan may carry a row selection (a roaring bitmap of file
 * row positions, or sorted row ranges).  The reader uses the OffsetIndex to
 * fetch and decode only pages that hold selected rows (falling back to
 * decoding all pages of a row group when a file has no page index), and emits
 * only the selected rows, in file order.  A prune callback sees row-group and
 * page statistics and can veto whole row groups or pages.
 */
#ifndef HS_PARQUET_READER_H
#define HS_PARQUET_READER_H

#include "columnar/column.h"
#include "io/io.h"
#include "parquet/meta.h"
#include <roaring/roaring.h>

typedef struct pq_reader pq_reader;
typedef struct pq_scan pq_scan;

/* Opens f (borrowed: must stay open until pq_reader_close). */
HS_MUST_USE hs_status pq_reader_open(hs_file *f, pq_reader **out, hs_error *err);
void pq_reader_close(pq_reader *r);  /* accepts NULL */

const pq_file_meta *pq_reader_meta(const pq_reader *r);     /* borrowed until close */
const hs_field *pq_reader_schema(const pq_reader *r);       /* STRUCT; borrowed until close */
int64_t pq_reader_num_rows(const pq_reader *r);
int pq_reader_num_row_groups(const pq_reader *r);
/* Leaf (column chunk) indexes are depth-first over the schema; this maps a
 * top-level column to its first leaf and leaf count. */
void pq_reader_leaves_of(const pq_reader *r, int top_column, int *first_leaf, int *n_leaves);
/* Loads (and caches in the reader) the page index of one column chunk;
 * *ci / *oi set to NULL when the file has none. */
HS_MUST_USE hs_status pq_reader_page_index(pq_reader *r, int row_group, int leaf,
                                           const pq_column_index **ci,
                                           const pq_offset_index **oi, hs_error *err);

typedef struct pq_row_range { int64_t start, end; } pq_row_range;  /* [start, end) */

/* Statistics of one row group (page == -1) or one page of a leaf column, for pruning.
 * min/max are Parquet's plain encoding of the physical type (p NULL = unknown). */
typedef struct pq_stats_view {
    int row_group;
    int page;                 /* -1 = the whole column chunk */
    int leaf;
    const pq_schema_element *elem;
    pq_bytes min, max;
    bool has_null_count; int64_t null_count;
    int64_t num_rows;         /* rows covered (pages: from the offset index) */
    bool all_null;            /* ColumnIndex null_pages */
} pq_stats_view;
/* Return false to skip the row group / page (it cannot hold wanted rows). */
typedef bool (*pq_prune_fn)(void *ctx, const pq_stats_view *s);

/* Runs task(arg, i) for every i in [0, n), on the caller's thread and on
 * whichever other threads the caller lends, and returns when every call has
 * returned.  The tasks of one batch never wait on anything but I/O. */
typedef void (*pq_task_fn)(void *arg, int i);
typedef void (*pq_par_fn)(void *ctx, int n, pq_task_fn task, void *arg);

/* A verdict column: instead of the values of a flat string or binary column,
 * one boolean per row (never null), fn's verdict on the row's value.  fn
 * gets a column of the file's type (nulls included) and writes verdict[i]
 * (0 or 1) for each of its rows; it may run on several threads at once.
 * On a dictionary-encoded page fn sees the dictionary once per row group
 * (and a NULL once) and each row takes its entry's verdict by its index,
 * so the strings of the rows are never copied out; other pages' values
 * are decoded into a scratch column and judged in runs.  Rows that no
 * selected row references may be judged too (fn must not fail on any
 * value).  Used by the table scan's dictionary filter (table/scan.c). */
typedef hs_status (*pq_verdict_fn)(void *ctx, const hs_column *values, uint8_t *verdict,
                                   hs_error *err);
typedef struct pq_verdict { pq_verdict_fn fn; void *ctx; } pq_verdict;

typedef struct pq_scan_options {
    const int *columns; int n_columns;        /* top-level columns; NULL = all */
    const pq_verdict *verdicts;               /* NULL, or per entry of columns: fn set
                                               * makes that column a verdict column
                                               * (a BOOL field of the same name and
                                               * id); HS_INVALID unless it is a flat
                                               * string or binary column */
    const int *row_groups; int n_row_groups;  /* NULL = all */
    const roaring_bitmap_t *rows;             /* file row positions, or NULL */
    const pq_row_range *ranges; int n_ranges; /* sorted, disjoint; or NULL */
    pq_prune_fn prune; void *prune_ctx;       /* optional */
    int64_t batch_size;                       /* rows per batch; 0 = 65536 */
    pq_par_fn par; void *par_ctx;             /* optional: a batch's columns decoded
                                               * at once (PQ_PAR_MIN_ROWS rows and up) */
} pq_scan_options;

/* Batches of fewer rows decode their columns one after another even with
 * pq_scan_options.par: handing out the work would cost more than it saves. */
#define PQ_PAR_MIN_ROWS 4096

typedef struct pq_scan_stats {
    int64_t row_groups_read, row_groups_skipped;
    int64_t pages_decoded, pages_skipped;
    int64_t bytes_read, rows_emitted;
    int64_t pages_in_place;   /* decompressed straight into the output column */
} pq_scan_stats;

HS_MUST_USE hs_status pq_scan_open(pq_reader *r, const pq_scan_options *opt, pq_scan **out,
                                   hs_error *err);
/* Next batch (caller frees with hs_batch_free), or *out = NULL at the end. */
HS_MUST_USE hs_status pq_scan_next(pq_scan *s, hs_batch **out, hs_error *err);
const pq_scan_stats *pq_scan_get_stats(const pq_scan *s);
void pq_scan_close(pq_scan *s);  /* accepts NULL */

/* Drops every cached footer and every cached decompressed page not in use
 * (tests; memory pressure). */
void pq_footer_cache_clear(void);

#endif
