/*
 * iceberg/manifest.h - Iceberg manifests and manifest lists (Avro container
 * files with the spec's field-ids and header keys), for format versions 1-3.
 *
 * A manifest lists data files (or delete files) of one partition spec, one
 * manifest_entry per file; a manifest list lists the manifests of one snapshot,
 * one manifest_file per manifest.  manifest.c's header comment shows the Avro
 * schemas; the field ids are the spec's (see also
 * /work/shared/notes/iceberg-and-parquet-facts.md).
 *
 * Reading matches every field by FIELD ID, so manifests written by Java
 * Iceberg, pyiceberg and us (any field order, any record names, extra fields)
 * read the same; absent optional fields read as absent.  Inheritance is applied
 * on read when the caller passes the manifest's ice_manifest_file:
 *   - snapshot_id null                -> manifest_file.added_snapshot_id
 *   - sequence numbers null           -> manifest_file.sequence_number when the
 *                                        entry is ADDED or the manifest's is 0
 *                                        (v1: always 0)
 *   - v3 data file first_row_id null  -> manifest_file.first_row_id + the
 *                                        record_count of the earlier live data
 *                                        files of the manifest whose own
 *                                        first_row_id was null.
 *
 * Writing: ice_manifest_writer collects entries, computes the manifest_file
 * (counts, partition field summaries, min sequence number) and emits the
 * container into a hs_wfile the caller opened (so tests can inject faults and
 * the caller decides where the bytes go).  ice_manifest_list_write writes a
 * manifest list, filling unassigned sequence numbers with the snapshot's and
 * (v3) assigning first_row_id to data manifests that have none.
 *
 * Memory: read results own everything through their arena (strings, arrays,
 * bounds) plus the partition values' bytes (hs_malloc'd; freed by
 * ice_manifest_free).  Structs passed to writers are borrowed for the call.
 */
#ifndef HS_ICEBERG_MANIFEST_H
#define HS_ICEBERG_MANIFEST_H

#include "base/arena.h"
#include "base/avro.h"
#include "base/buf.h"
#include "base/error.h"
#include "iceberg/model.h"
#include "io/io.h"
#include <stdbool.h>
#include <stdint.h>

/* data_file.content */
#define ICE_CONTENT_DATA 0
#define ICE_CONTENT_POSITION_DELETES 1
#define ICE_CONTENT_EQUALITY_DELETES 2
/* manifest_file.content / manifest header "content" */
#define ICE_MANIFEST_DATA 0
#define ICE_MANIFEST_DELETES 1
/* manifest_entry.status */
#define ICE_STATUS_EXISTING 0
#define ICE_STATUS_ADDED 1
#define ICE_STATUS_DELETED 2
/* sequence number not yet assigned (inherited at commit) */
#define ICE_SEQ_UNASSIGNED (-1)

typedef struct ice_id_long {
    int32_t id;
    int64_t value;
} ice_id_long;

typedef struct ice_id_bytes {
    int32_t id;
    uint32_t len;
    const uint8_t *p;
} ice_id_bytes;

/* An absent map/list has n == 0; writers write null for it. */
typedef struct ice_data_file {
    int content;                        /* ICE_CONTENT_* */
    const char *file_path;
    const char *file_format;            /* "PARQUET" (NULL writes "PARQUET") */
    int n_partition;                    /* == spec's field count */
    ice_value *partition;               /* aligned with the spec's fields */
    int64_t record_count;
    int64_t file_size_in_bytes;
    int n_column_sizes;       ice_id_long *column_sizes;
    int n_value_counts;       ice_id_long *value_counts;
    int n_null_value_counts;  ice_id_long *null_value_counts;
    int n_nan_value_counts;   ice_id_long *nan_value_counts;
    int n_lower_bounds;       ice_id_bytes *lower_bounds;
    int n_upper_bounds;       ice_id_bytes *upper_bounds;
    const uint8_t *key_metadata;        /* NULL = absent */
    uint32_t key_metadata_len;
    int n_split_offsets;      int64_t *split_offsets;
    int n_equality_ids;       int32_t *equality_ids;
    bool has_sort_order_id;   int32_t sort_order_id;
    /* v3 */
    bool has_first_row_id;    int64_t first_row_id;
    const char *referenced_data_file;   /* NULL = absent (v2 also) */
    bool has_content_offset;  int64_t content_offset;
    bool has_content_size;    int64_t content_size_in_bytes;
} ice_data_file;

typedef struct ice_manifest_entry {
    int status;                         /* ICE_STATUS_* */
    bool has_snapshot_id;      int64_t snapshot_id;
    bool has_sequence_number;  int64_t sequence_number;      /* data sequence number */
    bool has_file_sequence_number; int64_t file_sequence_number;
    ice_data_file file;
} ice_manifest_entry;

typedef struct ice_field_summary {
    bool contains_null;
    bool has_contains_nan;  bool contains_nan;
    const uint8_t *lower;   uint32_t lower_len;   /* NULL = absent */
    const uint8_t *upper;   uint32_t upper_len;
} ice_field_summary;

/* A manifest-list entry.  Counts are -1 when absent (only v1 may omit them). */
typedef struct ice_manifest_file {
    const char *manifest_path;
    int64_t manifest_length;
    int32_t partition_spec_id;
    int content;                        /* ICE_MANIFEST_DATA / ICE_MANIFEST_DELETES */
    int64_t sequence_number;            /* ICE_SEQ_UNASSIGNED before commit */
    int64_t min_sequence_number;        /* ICE_SEQ_UNASSIGNED before commit */
    bool has_added_snapshot_id; int64_t added_snapshot_id;
    int32_t added_files_count, existing_files_count, deleted_files_count;
    int64_t added_rows_count, existing_rows_count, deleted_rows_count;
    int n_partitions;                   /* -1 = partitions absent */
    ice_field_summary *partitions;
    const uint8_t *key_metadata;  uint32_t key_metadata_len;
    bool has_first_row_id; int64_t first_row_id;   /* v3 */
} ice_manifest_file;

/* ------------------------------------------------------------- manifests */

typedef struct ice_manifest {
    hs_arena arena;                     /* owns everything below but `partition_type` */
    const char *name;                   /* file name (for messages) */
    int format_version;                 /* header, 1 when absent */
    int content;                        /* header "content": ICE_MANIFEST_* */
    int32_t spec_id;                    /* header partition-spec-id (-1 when absent) */
    int32_t schema_id;                  /* header schema-id (-1 when absent) */
    const char *schema_json;            /* header "schema", or NULL */
    const char *spec_json;              /* header "partition-spec" (fields array), or NULL */
    hs_field partition_type;            /* STRUCT of the partition tuple (owned) */
    int64_t n_entries;
    ice_manifest_entry *entries;
} ice_manifest;

/* Reads a whole manifest from f (borrowed).  mf: the manifest-list entry that
 * points to this file, used for inheritance (NULL: none applied).  spec and
 * schema: the manifest's partition spec and a schema containing its source
 * fields, used to type the partition values (NULL: parsed from the header;
 * without them values are typed from the Avro schema).  *out is allocated;
 * free with ice_manifest_free.  HS_CORRUPT names the file. */
HS_MUST_USE hs_status ice_manifest_read(hs_file *f, const ice_manifest_file *mf,
                                        const ice_partition_spec *spec, const ice_schema *schema,
                                        ice_manifest **out, hs_error *err);
/* The same over bytes in memory (name for messages; buf borrowed for the call). */
HS_MUST_USE hs_status ice_manifest_read_mem(const char *name, const uint8_t *buf, size_t len,
                                            const ice_manifest_file *mf,
                                            const ice_partition_spec *spec,
                                            const ice_schema *schema, ice_manifest **out,
                                            hs_error *err);
void ice_manifest_free(ice_manifest *m);   /* accepts NULL */

typedef struct ice_manifest_writer ice_manifest_writer;

/* Starts a manifest.  path: recorded as manifest_path (copied).  schema and
 * spec: the table schema and the spec the files are partitioned by (copied
 * into the header; borrowed for the call).  snapshot_id: the snapshot adding
 * the manifest (added_snapshot_id; also v1's required entry snapshot_id).
 * content: ICE_MANIFEST_DATA or ICE_MANIFEST_DELETES (v2+). */
HS_MUST_USE hs_status ice_manifest_writer_open(const char *path, int format_version, int content,
                                               const ice_schema *schema,
                                               const ice_partition_spec *spec,
                                               int64_t snapshot_id, hs_avro_codec codec,
                                               ice_manifest_writer **out, hs_error *err);
/* Appends one entry (copied into the container at once; e borrowed). */
HS_MUST_USE hs_status ice_manifest_writer_add(ice_manifest_writer *w, const ice_manifest_entry *e,
                                              hs_error *err);
/* Writes the container to `out` (borrowed; the caller closes or aborts it),
 * fills *mf (strings/bounds in `arena`) with manifest_length = bytes written,
 * sequence numbers as the entries determine (ICE_SEQ_UNASSIGNED when
 * inherited), and frees the writer (also on failure). */
HS_MUST_USE hs_status ice_manifest_writer_finish(ice_manifest_writer *w, hs_wfile *out,
                                                 hs_arena *arena, ice_manifest_file *mf,
                                                 hs_error *err);
void ice_manifest_writer_free(ice_manifest_writer *w);  /* abandons; accepts NULL */

/* --------------------------------------------------------- manifest lists */

typedef struct ice_manifest_list {
    hs_arena arena;
    const char *name;
    int format_version;                 /* header, 1 when absent */
    bool has_snapshot_id;  int64_t snapshot_id;
    bool has_parent_id;    int64_t parent_id;
    bool has_sequence_number; int64_t sequence_number;
    bool has_first_row_id; int64_t first_row_id;
    int n_files;
    ice_manifest_file *files;
} ice_manifest_list;

/* Reads a manifest list.  v1 defaults: content data, sequence numbers 0. */
HS_MUST_USE hs_status ice_manifest_list_read(hs_file *f, ice_manifest_list **out, hs_error *err);
HS_MUST_USE hs_status ice_manifest_list_read_mem(const char *name, const uint8_t *buf, size_t len,
                                                 ice_manifest_list **out, hs_error *err);
void ice_manifest_list_free(ice_manifest_list *l);  /* accepts NULL */

typedef struct ice_manifest_list_info {
    int format_version;
    int64_t snapshot_id;
    bool has_parent_id; int64_t parent_id;
    int64_t sequence_number;            /* the snapshot's (v2+) */
    int64_t first_row_id;               /* v3: the snapshot's first-row-id */
    hs_avro_codec codec;
} ice_manifest_list_info;

/* Writes a manifest list of files[0..n) to `out` (borrowed).  The files are
 * updated in place to what was written: sequence numbers ICE_SEQ_UNASSIGNED
 * become info->sequence_number; v3 data manifests without first_row_id get
 * one (from info->first_row_id, advancing by added + existing rows).
 * *assigned_rows (may be NULL) = the rows assigned (the snapshot's added-rows). */
HS_MUST_USE hs_status ice_manifest_list_write(hs_wfile *out, const ice_manifest_list_info *info,
                                              ice_manifest_file *files, int n,
                                              int64_t *assigned_rows, hs_error *err);

/* ------------------------------------------------------- ctypes / debug */

/* The manifest list / manifest at `path` as JSON text (entries with
 * inheritance from the list when list_path != NULL... see manifest.c), for the
 * Python oracle tests.  Returns a string the caller frees with
 * ice_manifest_debug_free, or NULL with err set. */
char *ice_manifest_list_debug_json(const char *path, hs_error *err);
/* mf_index: which entry of the manifest list at list_path points to
 * manifest_path (for inheritance), or -1 for none (list_path may be NULL). */
char *ice_manifest_debug_json(const char *manifest_path, const char *list_path, int mf_index,
                              hs_error *err);
void ice_manifest_debug_free(char *s);
/* Writes a manifest and a one-manifest list from a JSON description (for the
 * oracle tests):
 *   {"format_version": 2, "schema": {iceberg schema}, "spec": {spec object},
 *    "snapshot_id": 1, "parent_id": null, "sequence_number": 1,
 *    "first_row_id": 0, "codec": "deflate" | "null",
 *    "entries": [{"status": 1, "content": 0, "file_path": "...",
 *                 "record_count": 10, "file_size_in_bytes": 100,
 *                 "partition": [single-value JSON per spec field],
 *                 "column_sizes": {"1": 5}, "value_counts": {..},
 *                 "null_value_counts": {..}, "nan_value_counts": {..},
 *                 "lower_bounds": {"1": "hex"}, "upper_bounds": {..},
 *                 "split_offsets": [4], "sort_order_id": 0,
 *                 "referenced_data_file": "...", "content_offset": 4,
 *                 "content_size_in_bytes": 40}]}
 * to manifest_path and list_path (local files).  Returns an hs_status. */
int ice_manifest_debug_write(const char *json, const char *manifest_path, const char *list_path,
                             hs_error *err);

#endif
