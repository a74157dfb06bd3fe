/*
 * iceberg/metrics.h - Iceberg data-file metrics from a Parquet footer, and the
 * ice_data_file of a written Parquet file.
 *
 * Metrics (as Java's ParquetMetrics with the default mode truncate(16)):
 *   column_sizes       sum of total_compressed_size per leaf field id
 *   value_counts       sum of num_values per leaf (nulls included)
 *   null_value_counts  sum of statistics null_count (omitted for a field when
 *                      a row group has no null_count)
 *   nan_value_counts   only from the caller (counted while writing)
 *   lower/upper_bounds min_value/max_value of all row groups, converted from
 *                      Parquet's plain encoding to Iceberg's single-value
 *                      serialization; strings truncated to 16 code points and
 *                      binary to 16 bytes (upper bound incremented); only for
 *                      primitive fields outside lists and maps; omitted when a
 *                      row group with values has no min/max, or a float bound
 *                      is NaN
 *   split_offsets      row-group start offsets, ascending
 *
 * Memory: the arrays filled into the ice_data_file live in the caller's arena.
 */
#ifndef HS_ICEBERG_METRICS_H
#define HS_ICEBERG_METRICS_H

#include "base/arena.h"
#include "iceberg/manifest.h"
#include "iceberg/model.h"
#include "parquet/meta.h"

/* Fills record_count, column_sizes, value_counts, null_value_counts,
 * nan_value_counts (from nan_counts[0..n_nan), may be NULL), lower/upper
 * bounds and split_offsets of df from the footer.  Other fields of df are left
 * untouched.  Leaves without a field id, or whose id is not in `schema`, are
 * skipped. */
HS_MUST_USE hs_status ice_metrics_from_footer(const ice_schema *schema, const pq_file_meta *meta,
                                              const ice_id_long *nan_counts, int n_nan,
                                              hs_arena *arena, ice_data_file *df, hs_error *err);

/* A complete data-file description for a manifest: content data, format
 * PARQUET, path (copied into the arena), size, partition values (borrowed:
 * must outlive *out, n_partition of them), and the metrics above. */
HS_MUST_USE hs_status ice_data_file_from_parquet(const char *path, int64_t file_size,
                                                 const pq_file_meta *meta, const ice_schema *schema,
                                                 ice_value *partition, int n_partition,
                                                 const ice_id_long *nan_counts, int n_nan,
                                                 hs_arena *arena, ice_data_file *out,
                                                 hs_error *err);

/* Single-value serialization of one Parquet plain-encoded statistic of the
 * given physical type for Iceberg field f (exposed for tests).  *out is set
 * (caller clears it); HS_UNSUPPORTED when the pair cannot be converted. */
HS_MUST_USE hs_status ice_metrics_plain_to_value(const hs_field *f, pq_ptype ptype,
                                                 const uint8_t *p, size_t n, ice_value *out,
                                                 hs_error *err);

/* ctypes helper for the oracle tests: reads the footer of the local Parquet
 * file at path, computes the metrics for the Iceberg schema (JSON) and returns
 * them as JSON {"record_count", "column_sizes": {"id": n}, "value_counts",
 * "null_value_counts", "lower_bounds": {"id": "hex"}, "upper_bounds",
 * "split_offsets"}; the caller frees it with ice_metrics_debug_free. */
char *ice_metrics_debug_json(const char *path, const char *schema_json, hs_error *err);
void ice_metrics_debug_free(char *s);

#endif
