/*
 * hyperstream/index.h - public C API for sidecar indexes on Iceberg tables
 * (scalar: inverted, range; vector: HNSW with TQ8/TQ4/PQ codes, IVF), for
 * filtered scans that use them, explain, and vector search.
 *
 * Indexes live beside the data (DESIGN.md "Storage layout"):
 *   <table>/index/<data-file-stem>.<field-id>.<kind>    one per data file
 *   <table>/index/registry/<uuid>.json                  the registry version
 * named by the table property "hyperstream.index-registry".  The registry
 * lists the declared indexes (column, kind, parameters) and one entry per
 * built sidecar (data file path and size, index file path, size and
 * checksum).  A sidecar is used only while its data file is live in the
 * snapshot being read; a missing, truncated, corrupt or stale sidecar is
 * skipped (the scan reads instead, a warning is logged, the counter
 * index_files_skipped increments): indexes never change a result.
 *
 * Declared indexes are built by every later append, overwrite and delete
 * rewrite as part of the write, so one commit publishes data and indexes.
 *
 * Index kinds (names as users know them):
 *   "inverted" "range" "auto"                        scalar columns
 *   "hnsw" "hnsw_tq8" "hnsw_tq4" "hnsw_pq" "hnsw_bin" vector columns
 *                                                    (fixed_size_list<float>
 *                                                    or list<float>)
 *   "ivf_hnsw" "ivf_hnsw_tq8" ...                    IVF partitions + HNSW
 * Parameters (params_json, all optional):
 *   {"m":16, "ef_construction":200, "ef_search":64, "metric":"l2"|"cosine"|"ip",
 *    "pq_m":32, "ivf_lists":256, "nprobe":16, "rerank":4}
 * and the dict form's names: {"type":"hnsw_pq", "complexity":32 (= m),
 * "quality":300 (= ef_construction), "compression":32 (= pq_m)}.
 * Vector kinds also take {"cluster":"category", "include":["id", ...]}: the
 * sidecars then group their vectors by the cluster column's value, with the
 * included columns, and hs_table_search with a filter `category = X` or
 * `category IN (...)` and columns among those reads one block per data file
 * (docs/search.md, "The clustered section").
 */
#ifndef HYPERSTREAM_INDEX_H
#define HYPERSTREAM_INDEX_H

#include "hyperstream/table.h"
#include "hyperstream/vector.h"

#ifdef __cplusplus
extern "C" {
#endif

/* hs_progress_fn (table.h): a progress callback; cancelling add_index
 * registers nothing. */

typedef struct hs_index_options {
    size_t struct_size;           /* sizeof(hs_index_options) or 0; see common.h */
    const char *kind;            /* see top; NULL = "auto" */
    const char *params_json;     /* see top; NULL = defaults */
    hs_progress_fn progress; void *progress_ctx;   /* optional */
    int n_threads;               /* 0 = one per core */
} hs_index_options;
#define HS_INDEX_OPTIONS_INIT {sizeof(hs_index_options)}

/* Declares an index on `column` (top-level or dotted nested name) and builds
 * it for every live data file of the current snapshot, then commits the new
 * registry (one metadata commit; retried on conflicts, building sidecars
 * for files that concurrent appends added).  Declaring the same column and
 * kind again rebuilds missing sidecars only.  HS_NOT_FOUND for an unknown
 * column, HS_INVALID for a kind that does not fit the column's type or bad
 * params. */
HS_API hs_status hs_table_add_index(hs_table *t, const char *column, const hs_index_options *opt,
                             hs_error *err);
/* Removes the declaration (kind NULL = every index on the column) and its
 * registry entries in one commit; the sidecar files become orphans that
 * hs_table_remove_orphan_indexes deletes.  HS_NOT_FOUND when none. */
HS_API hs_status hs_table_drop_index(hs_table *t, const char *column, const char *kind, hs_error *err);
/* JSON array: [{"column":"c","field_id":3,"kind":"inverted","params":{..},
 * "files_indexed":N,"files_live":M,"bytes":B}]; caller frees with hs_string_free. */
HS_API hs_status hs_table_list_indexes(const hs_table *t, char **out, hs_error *err);
/* The same as an Arrow stream (see table.h, "Lists as Arrow streams"):
 * column utf8, field_id int32, kind utf8, params utf8 (the JSON object's
 * text), files_indexed int64, files_live int64, bytes int64. */
HS_API hs_status hs_table_list_indexes_stream(const hs_table *t, struct ArrowArrayStream *out,
                                              hs_error *err);
/* Deletes sidecar files under <table>/index/ that no registry entry of a
 * live data file references and that are older than older_than_ms.
 * *n_removed (may be NULL) gets the count. */
HS_API hs_status hs_table_remove_orphan_indexes(hs_table *t, int64_t older_than_ms, int64_t *n_removed,
                                         hs_error *err);
/* Index catch-up: builds every declared index for the live data files of
 * the current snapshot that lack a usable sidecar (files another engine -
 * pyiceberg, Spark, Java - committed after add_index, or whose sidecar is
 * missing or stale) and commits their entries as one registry change
 * (retried on conflicts; files committed meanwhile are built too).  Until
 * then scans use the sidecars present and read the other files: results
 * are the same.  opt: n_threads and progress (kind and params are
 * ignored; NULL = defaults).  *n_built (may be NULL) gets the number of
 * registry entries added (0: nothing was missing, nothing committed).
 * With the table property "hyperstream.index.auto-refresh" = "true",
 * hs_table_open runs it (a failure there is a warning, not an error). */
HS_API hs_status hs_table_refresh_indexes(hs_table *t, const hs_index_options *opt,
                                          int64_t *n_built, hs_error *err);

/* Counters of the filtered scan path, filled while a stream is read (and by
 * planning).  Read them with hs_scan_get_index_stats after the stream has
 * ended and before it is released (table.h, "Stats of a scan moved into a
 * stream"). */
typedef struct hs_index_stats {
    size_t struct_size;               /* set by the caller; see common.h, "Output structs" */
    int64_t files_planned;            /* after partition and bound pruning */
    int64_t files_pruned_by_index;    /* index lookup selected no row */
    int64_t files_indexed;            /* files where at least one index was used */
    int64_t index_lookups;
    int64_t index_files_skipped;      /* missing / corrupt / stale sidecars */
    int64_t row_groups_read, row_groups_skipped;
    int64_t pages_decoded, pages_skipped;
    int64_t rows_decoded;             /* rows materialized from Parquet */
    int64_t rows_selected_by_index;   /* candidate rows after bitmap algebra */
    int64_t rows_emitted;
    int64_t rows_counted_by_index;    /* count(*) answered from index cardinalities */
} hs_index_stats;
#define HS_INDEX_STATS_INIT {sizeof(hs_index_stats)}
HS_API void hs_scan_get_index_stats(const hs_scan *s, hs_index_stats *out);

/* Plans the scan as hs_scan_plan would, runs it to the end (discarding the
 * rows) and returns a JSON report: the filter as bound, the pruning per
 * stage, per file the indexes used, candidate rows, pages and rows decoded,
 * and the totals of hs_index_stats.  Caller frees *out with hs_string_free. */
HS_API hs_status hs_table_explain(hs_table *t, const hs_scan_options *opt, char **out, hs_error *err);
/* The report's per-file part (its "files" array) as an Arrow stream, one
 * row per planned file: file utf8, record_count, file_size, delete_files
 * int64, indexes_used list<utf8>, index_exact bool, candidates int64 (null
 * = no index lookup), pruned_by utf8 ("index" | "statistics" | null),
 * sidecars_skipped int64, two_phase bool, second_phase utf8 ("sparse" |
 * "dense" | null), index_lookups, row_groups_read, row_groups_skipped,
 * pages_decoded, pages_skipped, rows_decoded, rows_matched int64.  The
 * totals are hs_index_stats (typed already). */
HS_API hs_status hs_table_explain_stream(hs_table *t, const hs_scan_options *opt,
                                         struct ArrowArrayStream *out, hs_error *err);

/* ---- vector search ---- */

typedef struct hs_search_options {
    size_t struct_size;           /* sizeof(hs_search_options) or 0; see common.h */
    const char *column;          /* the vector column */
    const float *query; int dim; /* borrowed during the call */
    int k;                       /* > 0 */
    const char *metric;          /* NULL = the index's metric, or "l2" */
    int ef_search;               /* 0 = the index's */
    int nprobe;                  /* IVF; 0 = the index's */
    const char *distance_column; /* name of the appended distance column; NULL = "_distance" */
    /* quantized indexes: the best max(k * rerank, ef_search) candidates by
     * code distance are reranked with exact vectors; 0 = the index's
     * "rerank" parameter (default 1 for hnsw_tq8 kinds, 4 for the other
     * quantized kinds).  Appended after 0.1: set struct_size. */
    int rerank;
} hs_search_options;
#define HS_SEARCH_OPTIONS_INIT {sizeof(hs_search_options)}

/* Top-k rows of the snapshot chosen by scan (snapshot, filter, columns as in
 * hs_scan_options; scan may be NULL) nearest to the query: per data file an
 * index search (or exact search for files without a usable index), with the
 * filter's matching rows as the allow-list, deletes respected, merged across
 * files.  Exactly min(k, matching rows) rows come back, nearest first, with
 * the distance (float64, user form: L2 distance, cosine distance, inner
 * product for "ip") as the last column.  Caller releases *out. */
HS_API hs_status hs_table_search(hs_table *t, const hs_scan_options *scan, const hs_search_options *so,
                          struct ArrowArrayStream *out, hs_error *err);

/* Batch search: n_queries queries in one call (so->query holds n_queries *
 * so->dim floats, row-major), each answered as hs_table_search would, over
 * one plan of the snapshot (filter and deletes evaluated once), the queries
 * spread over threads (HS_SEARCH_THREADS).  One result: a first column
 * "query_index" (int32, 0-based), then the columns of each query's answer,
 * queries in order, each nearest first.  Caller releases *out. */
HS_API hs_status hs_table_search_batch(hs_table *t, const hs_scan_options *scan,
                                const hs_search_options *so, int n_queries,
                                struct ArrowArrayStream *out, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
