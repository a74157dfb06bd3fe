/*
 * table/table_int.h - internals shared by the files of the table module:
 *
 *   file         what
 *   -----------  ----------------------------------------------------------
 *   table.c      catalogs, create/open, accessors, snapshots/history/refs,
 *                metadata-only commits (rollback, tags, properties, schema,
 *                spec, sort order, upgrade)
 *   spec_text.c  the text forms of partition specs and sort orders
 *   filter.c     the filter language (filter.h)
 *   plan.c       scan planning: snapshot choice, manifest / partition /
 *                bounds pruning, which deletes apply to which data file
 *   scan.c       the scan stream: reading data files, schema conformance,
 *                merge-on-read of deletes, row lineage columns, projection
 *   write.c      append, overwrite, delete: data files (partitioned, sorted),
 *                metrics, manifests, manifest lists, commits with rebase
 *
 * An hs_table holds the parsed metadata of one version plus its location;
 * every commit made through the handle replaces both with what was
 * committed.  A read-only table (hs_table_open_metadata) has no catalog.
 */
#ifndef HS_TABLE_TABLE_INT_H
#define HS_TABLE_TABLE_INT_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "catalog/catalog.h"
#include "columnar/column.h"
#include "hyperstream/table.h"
#include "iceberg/manifest.h"
#include "iceberg/model.h"
#include "table/filter.h"
#include <roaring/roaring.h>

struct hs_catalog {
    cat_catalog *cat;
};

struct hs_table {
    hs_catalog *catalog;          /* borrowed; NULL = read-only static table */
    char *ident;                  /* owned */
    char *metadata_location;      /* owned */
    ice_table_metadata meta;      /* owned */
};

/* roaring_bitmap_free that accepts NULL (older CRoaring does not). */
static inline void tbl_bitmap_free(roaring_bitmap_t *b)
{
    if (b)
        roaring_bitmap_free(b);
}

/* Local path of a location string (file:// stripped), borrowed from s. */
const char *tbl_local(const char *s);

/* ---- spec_text.c ---- */

/* Parses "bucket(16, id), day(ts)" against schema into a spec (field ids
 * unassigned: -1).  out zeroed; caller clears with ice_spec_clear. */
HS_MUST_USE hs_status tbl_parse_spec_text(const char *text, const ice_schema *schema,
                                          int32_t spec_id, ice_partition_spec *out,
                                          hs_error *err);
/* Parses "id DESC NULLS LAST, bucket(4, x)" against schema.  order_id 1
 * (0 when empty).  out zeroed; caller clears with ice_sort_order_clear. */
HS_MUST_USE hs_status tbl_parse_sort_text(const char *text, const ice_schema *schema,
                                          ice_sort_order *out, hs_error *err);
/* Converts a schema from Arrow types to Iceberg types in place (int8/16 ->
 * int, uint8/16 -> int, uint32 -> long, float16 -> float, time32 -> time,
 * timestamp s/ms -> us, large/view types already mapped).  HS_INVALID for
 * types Iceberg has no form of (uint64, fixed_size_list), naming the column. */
HS_MUST_USE hs_status tbl_icebergify(hs_field *f, int format_version, hs_error *err);

/* ---- vector_col.c ---- */

/* The recorded dimension of vector column field_id (table property
 * hyperstream.vector-dimension.<id>), or 0 when none is recorded. */
int tbl_vector_dimension(const ice_table_metadata *m, int32_t field_id);
HS_MUST_USE hs_status tbl_vector_set_dimension(ice_kv *props, int32_t field_id, int dim,
                                               hs_error *err);
/* list<float32> or fixed_size_list<float32>. */
bool tbl_is_float_vector_type(const hs_field *f);
/* Checks every vector column of b (conformed to the table schema) that has a
 * recorded dimension: length, null elements, NaN/infinity.  HS_INVALID naming
 * the column and row (row_base + index in b). */
HS_MUST_USE hs_status tbl_vector_check_batch(const ice_table_metadata *m, const hs_batch *b,
                                             int64_t row_base, hs_error *err);

/* ---- table.c ---- */

/* Commits through the catalog with retry; fn fills the zeroed new metadata
 * from each fresh base (usually ice_metadata_copy, then a change).  On
 * success t->meta / t->metadata_location become the committed ones. */
HS_MUST_USE hs_status tbl_commit(hs_table *t, cat_rebase_fn fn, void *ctx, hs_error *err);
/* HS_UNSUPPORTED for read-only tables. */
HS_MUST_USE hs_status tbl_check_writable(const hs_table *t, hs_error *err);

/* ---- plan.c ---- */

typedef struct tbl_delete_ref {
    int kind;                      /* ICE_CONTENT_POSITION_DELETES; DV when is_dv */
    bool is_dv;
    const char *path;              /* arena */
    int64_t offset, length;        /* DV blob */
    int64_t record_count;
    int manifest_index;            /* where its entry is (plan->list->files) */
    int64_t entry_index;
} tbl_delete_ref;

typedef struct tbl_plan_file {
    const char *path;              /* arena */
    int64_t record_count;
    int64_t file_size;
    int32_t spec_id;
    int64_t data_seq;
    int64_t file_seq;
    bool has_first_row_id;
    int64_t first_row_id;
    int n_partition;
    ice_value *partition;          /* owned by the plan (cleared at free) */
    int n_deletes;
    tbl_delete_ref *deletes;       /* arena */
    /* where the entry came from (for overwrite/delete rewrites) */
    int manifest_index;            /* index into plan->manifests */
    int64_t entry_index;
} tbl_plan_file;

typedef struct tbl_plan {
    hs_arena arena;
    const ice_table_metadata *meta;   /* borrowed */
    const ice_snapshot *snap;          /* borrowed; NULL = empty table */
    const ice_schema *schema;          /* the schema read (borrowed) */
    tbl_filter *filter;                /* owned; bound to schema->root */
    ice_manifest_list *list;           /* owned; NULL when no snapshot */
    int n_files;
    tbl_plan_file *files;              /* hs_realloc'd */
    int cap_files;
    hs_scan_stats stats;
} tbl_plan;

/* Plans a scan of snapshot `snap` (NULL = empty) with schema `schema` and
 * filter text.  keep_manifests: remember which manifest and entry each file
 * came from (the manifests stay loaded in the plan).  *out caller frees with
 * tbl_plan_free. */
HS_MUST_USE hs_status tbl_plan_make(const ice_table_metadata *meta, const ice_snapshot *snap,
                                    const ice_schema *schema, const char *filter_text,
                                    tbl_plan **out, hs_error *err);
void tbl_plan_free(tbl_plan *p);
/* The positions deleted in data file f (merge of its position deletes and
 * DV): a new bitmap (caller frees) or NULL when none. */
HS_MUST_USE hs_status tbl_plan_load_deletes(const tbl_plan_file *f, roaring_bitmap_t **out,
                                            hs_error *err);
/* Resolves the snapshot and schema a scan reads from options. */
HS_MUST_USE hs_status tbl_resolve_snapshot(const ice_table_metadata *m, const hs_scan_options *o,
                                           const ice_snapshot **snap, const ice_schema **schema,
                                           hs_error *err);
/* The spec of a manifest and a schema that holds its source columns. */
const ice_schema *tbl_schema_for_spec(const ice_table_metadata *m, const ice_partition_spec *s);

/* ---- scan.c ---- */

/* Reads one data file of a plan: rows of `read_schema` (a STRUCT whose
 * children are columns of the table schema by field id, or metadata columns
 * by their reserved ids), deletes applied, filter applied when non-NULL.
 * Calls emit(ctx, batch) for each non-empty batch (emit takes ownership)
 * unless emit is NULL.  positions_out (may be NULL): a new bitmap of the
 * positions of the matching live rows (caller frees).  *rows_deleted (may
 * be NULL) += rows dropped by deletes. */
typedef hs_status (*tbl_emit_fn)(void *ctx, hs_batch *b, hs_error *err);
HS_MUST_USE hs_status tbl_read_file(const tbl_plan_file *f, const hs_field *read_schema,
                                    const tbl_filter *filter, int64_t batch_size,
                                    tbl_emit_fn emit, void *ctx,
                                    roaring_bitmap_t **positions_out, int64_t *rows_deleted,
                                    hs_error *err);
/* Makes a column of type `to` from column c of type `from` (c is taken:
 * freed or reused): renames, promotions (int->long, float->double, decimal
 * widening), Arrow types to Iceberg ones (narrow ints, float16, time32,
 * timestamp units), nested fields matched by field id (by_name: by name) and
 * added (null) or dropped.  *out is the caller's. */
HS_MUST_USE hs_status tbl_conform_column(const hs_field *from, hs_column *c, const hs_field *to,
                                         bool by_name, hs_column **out, hs_error *err);
/* Conforms batch b (taken, also on failure) to `schema`, matching columns by
 * field id (by_name: by name, for appends of Arrow data; then an extra
 * column is HS_INVALID).  Missing nullable columns become nulls; a missing
 * required column is HS_INVALID.  *out is the caller's (hs_batch_free). */
HS_MUST_USE hs_status tbl_conform_batch(hs_batch *b, const hs_field *schema, bool by_name,
                                        hs_batch **out, hs_error *err);
/* A batch of schema (copied) with the given n columns (taken). */
HS_MUST_USE hs_status tbl_batch_from_cols(const hs_field *schema, hs_column **cols, int n,
                                          int64_t n_rows, hs_batch **out, hs_error *err);

#endif
