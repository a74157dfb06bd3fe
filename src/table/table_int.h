/*
 * table/table_int.h - internals shared by the files of the table module:
 *
 *   file         what
 *   -----------  ----------------------------------------------------------
 *   table.c      catalogs, create/open, accessors, snapshots/history/refs,
 *                metadata-only commits (rollback, tags, properties, schema,
 *                spec, sort order, upgrade)
 *   spec_text.c  the text forms of partition specs and sort orders
 *   plan.c       scan planning: snapshot choice, manifest / partition /
 *                bounds pruning, which deletes apply to which data file
 *   scan.c       the scan stream: reading data files, schema conformance,
 *                merge-on-read of deletes, row lineage columns, projection
 *   write.c      append, overwrite, delete: data files (partitioned, sorted),
 *                metrics, manifests, manifest lists, commits with rebase
 *   rowdelta.c   row deltas (hs_row_delta_*): positions deleted in live data
 *                files + rows added, one snapshot, validated per data file
 *   index.c      sidecar indexes: the registry commits, add/drop/list/orphans,
 *                the sidecars of the files a write produces (index_int.h);
 *                index_build.c builds sidecars, index_scan.c answers
 *                lookups for scans (bitmap algebra) and explain
 *   maint.c      table maintenance: expire snapshots, remove orphan files,
 *                rewrite manifests, cherrypick
 *   maint_compact.c  compaction (rewrite data files, bin-pack)
 *   maint_deletes.c  rewrite position delete files (merge, dangling, v3:
 *                into deletion vectors)
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
#include "base/hashmap.h"
#include "catalog/catalog.h"
#include "columnar/column.h"
#include "hyperstream/table.h"
#include "iceberg/manifest.h"
#include "iceberg/model.h"
#include "parquet/reader.h"
#include "expr/pred.h"
#include <roaring/roaring.h>

typedef struct ex_expr ex_expr;      /* expr/expr.h */

struct hs_catalog {
    cat_catalog *cat;
};

struct hs_table {
    hs_catalog *catalog;          /* borrowed; NULL = read-only static table */
    char *ident;                  /* owned */
    char *metadata_location;      /* owned */
    ice_table_metadata meta;      /* owned */
    /* table/search.c: the plan of the last unfiltered search, reused while the
     * handle reads the same metadata file and snapshot (owned; freed with the
     * handle by tbl_search_cache_clear) */
    struct tbl_plan *search_plan;
    char *search_plan_meta;       /* owned: the metadata_location it was made under */
    /* table/stream.c: the in-memory tail of an append stream opened on this
     * handle (a reference; NULL = none): scans of the current snapshot read
     * its acknowledged rows beside the committed ones */
    struct tbl_tail *tail;
    bool no_tail;                 /* an append stream's own handle: never attaches */
    /* table/search.c: the files of the last filtered search as prepared
     * (plan, allowed rows, sidecars held), reused by the next search with
     * the same metadata file, snapshot, filter and column (owned; freed by
     * tbl_search_cache_clear) */
    struct tbl_fsearch *search_filtered;
};

/* Frees the handle's cached search plans (table/search.c). */
void tbl_search_cache_clear(hs_table *t);

/* ---- pins.c: snapshots readers of this process are on ---- */

/* `holder` (a handle, a scan) is about to load metadata (pins.c). */
void tbl_pin_loading(const void *holder);
/* `holder` reads snapshot_id of m's table (-1: none); ends its loading mark. */
void tbl_pin_set(const void *holder, const ice_table_metadata *m, int64_t snapshot_id);
void tbl_pin_drop(const void *holder);
/* Waits (up to timeout_ms, then HS_BUSY) until every metadata load of this
 * process that began by now has become a pin, then returns the snapshot ids
 * pinned in the table at `location` (*ids owned, may repeat). */
HS_MUST_USE hs_status tbl_pins_of(const char *location, int64_t timeout_ms, int64_t **ids,
                                  int *n, hs_error *err);

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

typedef struct tbl_eqdel tbl_eqdel;   /* eqdel.c: one equality delete file of a plan */
typedef struct tbl_eqshared tbl_eqshared;   /* eqdel.c: what a plan's tbl_eqdels share */

typedef struct tbl_delete_ref {
    int kind;                      /* ICE_CONTENT_POSITION_DELETES (DV when is_dv) or
                                    * ICE_CONTENT_EQUALITY_DELETES (then eq is set) */
    bool is_dv;
    tbl_eqdel *eq;                 /* the plan's, shared by the files it applies to */
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
    /* plan.c: the file's statistics of the plan's equality-delete columns
     * (aligned with plan->eq_ids; arena), NULL when the plan has none */
    struct tbl_eqstat *eq_stats;
} tbl_plan_file;

/* A row filter in its two forms: the exact expression (SQL WHERE text bound
 * by expr/expr.h) for residual evaluation, and the simple filter it implies
 * (expr/pred.h) for partition, bounds, statistics and index pruning. */
typedef struct tbl_pred {
    pr_filter *filter;                /* owned; bound; never NULL once made */
    ex_expr *expr;                     /* owned; NULL = `filter` is the exact form */
    bool exact;                        /* filter is equivalent to the expression */
} tbl_pred;

/* Parses and binds filter text (NULL/blank = TRUE) against schema (borrowed:
 * must outlive the pred).  *p zeroed; clear with tbl_pred_clear. */
HS_MUST_USE hs_status tbl_pred_make(const char *text, const hs_field *schema, tbl_pred *p,
                                    hs_error *err);
void tbl_pred_clear(tbl_pred *p);
bool tbl_pred_is_true(const tbl_pred *p);
/* Field ids the exact form reads (each once), appended to ids (int32_t vector). */
HS_MUST_USE hs_status tbl_pred_field_ids(const tbl_pred *p, hs_buf *ids);
/* True when evaluating p costs a few nanoseconds a row and cannot fail:
 * comparisons of fixed-width columns with constants (ex_is_cheap). */
bool tbl_pred_is_cheap(const tbl_pred *p);
/* Exact evaluation over b (columns by field id): sel_out[i] = 1 when row i is
 * TRUE and sel_in (NULL = all rows) has it.  sel_in may equal sel_out. */
HS_MUST_USE hs_status tbl_pred_eval(const tbl_pred *p, const hs_batch *b, const uint8_t *sel_in,
                                    uint8_t *sel_out, int64_t *n_match, hs_error *err);
/* Human-readable exact form (explain); caller frees with hs_free. */
HS_MUST_USE hs_status tbl_pred_format(const tbl_pred *p, char **out, hs_error *err);

typedef struct tbl_plan {
    hs_arena arena;
    const ice_table_metadata *meta;   /* borrowed */
    const ice_snapshot *snap;          /* borrowed; NULL = empty table */
    const ice_schema *schema;          /* the schema read (borrowed) */
    tbl_pred pred;                     /* owned; bound to schema->root (this was the
                                        * pr_filter `filter`: pred.filter is now only
                                        * the IMPLIED simple filter, for pruning; rows
                                        * are evaluated with tbl_pred_eval /
                                        * tbl_read_file(..., &plan->pred, ...)) */
    ice_manifest_list *list;           /* NULL when no snapshot; shared from the
                                        * process's decoded-list cache (read-only)
                                        * while list_ref is set, else owned */
    struct tbl_fref *list_ref;         /* the cache reference, released at free */
    struct tbl_pcache_ent *pred_ref;   /* pred is a shallow copy of a cached bound
                                        * filter (read-only; tbl_plan_free releases
                                        * it instead of clearing pred); NULL = owned */
    int n_files;
    tbl_plan_file *files;              /* hs_realloc'd */
    int cap_files;
    hs_scan_stats stats;
    /* Object stores, for warming the next query once this one has read its
     * files (tbl_ixscan_warm): the live data files that file statistics
     * pruned, and the data manifests that the registry root's summaries
     * ruled out (at most HS_WARM_FILES of each; paths in the arena, arrays
     * hs_realloc'd). */
    const char **pruned;
    int n_pruned, cap_pruned;
    const char **skipped;
    int n_skipped, cap_skipped;
    hs_buf eqdels;                     /* tbl_eqdel * (owned): the equality delete files */
    tbl_eqshared *eq_shared;           /* their budget and unions (owned; NULL = none) */
    /* The columns equality deletes compare (int32_t field ids, each once),
     * and the (equality delete file, data file) pairs of one partition and
     * an older data sequence number that were applied, or left out
     * because the delete file's bounds of an equality column cannot meet
     * the data file's (explain's "eq_delete_pairs_*") */
    hs_buf eq_ids;
    int64_t eq_pairs_applied, eq_pairs_pruned;
    /* The delete entries of the snapshot that apply to none of the plan's
     * data files (tbl_delete_ref; eq is NULL): equality deletes whose every
     * pair was left out by sequence number, partition or column bounds,
     * position deletes whose data files are gone.  Of a plan without a
     * filter (every live data file), nothing they could ever apply to is
     * live: a file added later has a newer data sequence number.
     * Compaction drops them (maint_compact.c drop_deletes). */
    hs_buf unused_dels;
} tbl_plan;

/* Plans a scan of snapshot `snap` (NULL = empty) with schema `schema` and
 * filter text.  keep_manifests: remember which manifest and entry each file
 * came from (the manifests stay loaded in the plan).  *out caller frees with
 * tbl_plan_free. */
HS_MUST_USE hs_status tbl_plan_make(const ice_table_metadata *meta, const ice_snapshot *snap,
                                    const ice_schema *schema, const char *filter_text,
                                    tbl_plan **out, hs_error *err);
/* tbl_plan_make; flags TBL_PLAN_DEFER_FOOTERS: the data files' footers are
 * not fetched ahead (object stores: tbl_plan_make starts them for a plan of
 * at most 16 files), the caller calls tbl_plan_prefetch_footers when it
 * turns out to read the data files (a search that may be answered from
 * clustered vector blocks, table/vcluster.h, which need none). */
#define TBL_PLAN_DEFER_FOOTERS 1
HS_MUST_USE hs_status tbl_plan_make_ex(const ice_table_metadata *meta, const ice_snapshot *snap,
                                       const ice_schema *schema, const char *filter_text,
                                       int flags, tbl_plan **out, hs_error *err);
void tbl_plan_prefetch_footers(const tbl_plan *p);
void tbl_plan_free(tbl_plan *p);
/* Object stores: the pages of the columns `field_ids` in the data files
 * `paths` (at most HS_WARM_FILES of them; whole column chunks, at most
 * HS_WARM_PAGES_MB in all, shared by the files) are read into io's byte cache
 * on background threads, one per file, after each file's footer (fetched
 * ahead by tbl_plan_make or tbl_ixscan_warm): for the files of a vector
 * search, its projected columns but the vector, while its sidecars load, so
 * that the winners' rows (of this search and of the next one) come from the
 * cache; for a selective scan's table, the columns it read, for the next
 * lookup (tbl_ixscan_warm).  Returns at once; a no-op for local paths. */
void tbl_plan_warm_pages(const char *const *paths, int n, const int32_t *field_ids, int n_ids);
/* For background warming of the next query: waits until no plan is alive
 * (no query planning or reading) and none has been for a short while
 * (plan.c TBL_WARM_IDLE_MS); false when the process exits first or it never
 * gets idle within a minute (then do not warm). */
bool tbl_plan_wait_idle(void);
/* The manifest summaries (index/registry.h "manifests") of m's current
 * snapshot's data manifests: prev's (a registry root) where it has one for
 * the same manifest, the others computed from the manifests (read through
 * the manifest cache; one that cannot be read gets none).  files_too: a
 * summary of prev's without the manifest's files (a root written before
 * they existed, or over the files' budget then) is computed again, so that
 * it gets them where they fit (refresh_indexes; commits copy prev's, to
 * read no manifest they did not write).  *out (n_out items, ix_msums_free)
 * is NULL when there are none. */
struct ix_registry;
struct ix_msum;
HS_MUST_USE hs_status tbl_plan_msums(const ice_table_metadata *m, const struct ix_registry *prev,
                                     bool files_too, struct ix_msum **out, int *n_out,
                                     hs_error *err);
/* The process-wide caches plans use (plan.c): bound filters (HS_FILTER_CACHE=0
 * turns it off; counters for tests) and decoded manifest lists.  The clears
 * drop unreferenced entries (tests balancing allocations). */
void tbl_filter_cache_stats(int64_t *hits, int64_t *misses, int *entries);
void tbl_filter_cache_clear(void);
void tbl_list_cache_clear(void);
/* The positions deleted in data file f (merge of its position deletes and
 * DV): a new bitmap (caller frees) or NULL when none. */
HS_MUST_USE hs_status tbl_plan_load_deletes(const tbl_plan_file *f, roaring_bitmap_t **out,
                                            hs_error *err);
/* Reads a v2 position delete file (Parquet, file_path + pos) at path:
 * fn(ctx, file_path bytes, length, pos) per row with both set; a position
 * outside uint32 is HS_CORRUPT.  fn's error stops the read. */
typedef hs_status (*tbl_pos_row_fn)(void *ctx, const char *file_path, size_t len, uint32_t pos,
                                    hs_error *err);
HS_MUST_USE hs_status tbl_pos_deletes_read(const char *path, tbl_pos_row_fn fn, void *ctx,
                                           hs_error *err);
/* Adds to bm the positions of data file df that the v2 position delete
 * file at path deletes. */
HS_MUST_USE hs_status tbl_load_pos_deletes(const tbl_plan_file *df, const char *path,
                                           roaring_bitmap_t *bm, hs_error *err);
/* Whether a position delete row's file_path (sp, sn) names the data file
 * whose location is want (wn bytes) and local path want_local (wln): the
 * same string, or both "file:" forms of one local path. */
bool tbl_same_data_path(const char *sp, size_t sn, const char *want, size_t wn,
                        const char *want_local, size_t wln);
/* ---- eqdel.c: equality delete files ---- */

HS_MUST_USE hs_status tbl_eqshared_new(tbl_eqshared **out, hs_error *err);
void tbl_eqshared_free(tbl_eqshared *s);   /* after the plan's tbl_eqdels */
/* One equality delete file (df) of a plan whose schema is `schema`: its
 * columns resolved; path copied into arena; key sets counted in shared's
 * budget.  Free with tbl_eqdel_free. */
HS_MUST_USE hs_status tbl_eqdel_new(const ice_table_metadata *meta, const ice_schema *schema,
                                    const ice_data_file *df, hs_arena *arena,
                                    tbl_eqshared *shared, tbl_eqdel **out, hs_error *err);
void tbl_eqdel_free(tbl_eqdel *e);
const char *tbl_eqdel_path(const tbl_eqdel *e);
/* Adds to bm the positions of data file df deleted by its equality deletes
 * (the refs with eq set).  Thread-safe for the files of one plan. */
HS_MUST_USE hs_status tbl_eqdel_apply(const tbl_plan_file *df, roaring_bitmap_t *bm,
                                      hs_error *err);
/* Drops the unreferenced entries of its process-wide cache (tests). */
void tbl_eqdel_cache_clear(void);

/* Resolves the snapshot and schema a scan reads from options. */
HS_MUST_USE hs_status tbl_resolve_snapshot(const ice_table_metadata *m, const hs_scan_options *o,
                                           const ice_snapshot **snap, const ice_schema **schema,
                                           hs_error *err);
/* The spec of a manifest and a schema that holds its source columns. */
const ice_schema *tbl_schema_for_spec(const ice_table_metadata *m, const ice_partition_spec *s);

/* ---- scan.c ---- */

/* What reading one data file did: for counters and explain. */
typedef struct tbl_file_report {
    int file;                      /* plan index */
    int n_lookups;                 /* index lookups made */
    int n_skipped;                 /* sidecars skipped (missing, corrupt, stale) */
    bool indexed;                  /* an index answered at least one leaf */
    bool index_exact;              /* the index result was the exact answer */
    bool pruned_by_index;          /* the index selected no row: data not opened */
    bool pruned_by_stats;          /* row-group/page statistics left no row */
    bool two_phase;                /* filter columns first, then the rest */
    bool sparse_second;            /* second phase read only the passing rows */
    int64_t candidates;            /* rows after index algebra; -1 = no index used */
    int64_t rows_decoded;          /* rows materialized (both phases) */
    int64_t rows_matched;          /* live rows that passed the filter */
    pq_scan_stats pq;              /* summed over the file's pq_scans */
    char used[160];                /* indexes used: "fid:kind,..." */
} tbl_file_report;

/* How to read one data file (tbl_read_file_ex). */
typedef struct tbl_read_opts {
    const tbl_pred *pred;              /* NULL = every live row */
    const roaring_bitmap_t *candidates;/* rows that may match (index); NULL = all */
    bool candidates_exact;             /* candidates are exactly the matching rows */
    bool use_stats;                    /* prune row groups / pages by statistics */
    bool late;                         /* may read filter columns first (two phases) */
    int n_out;                         /* emit read-schema columns [0, n_out); -1 = all */
    int64_t batch_size;                /* 0 = 65536 */
    struct tbl_rtfilter *rtf;          /* runtime filters on read-schema columns
                                        * (table/rtfilter.h), n_rtf of them */
    int n_rtf;
    pq_par_fn par;                     /* optional: each batch's columns decoded */
    void *par_ctx;                     /* at once (pq_scan_options.par) */
} tbl_read_opts;

/* Reads one data file of a plan: rows of `read_schema` (a STRUCT whose
 * children are columns of the table schema by field id, or metadata columns
 * by their reserved ids), deletes applied, filter applied when non-NULL.
 * Calls emit(ctx, batch) for each non-empty batch (emit takes ownership)
 * unless emit is NULL.  positions_out (may be NULL): a new bitmap of the
 * positions of the matching live rows (caller frees).  *rows_deleted (may
 * be NULL) += rows of the file removed by deletes. */
typedef hs_status (*tbl_emit_fn)(void *ctx, hs_batch *b, hs_error *err);
HS_MUST_USE hs_status tbl_read_file(const tbl_plan_file *f, const hs_field *read_schema,
                                    const tbl_pred *pred, int64_t batch_size,
                                    tbl_emit_fn emit, void *ctx,
                                    roaring_bitmap_t **positions_out, int64_t *rows_deleted,
                                    hs_error *err);
/* The same with options (index candidates, statistics pruning, late
 * materialization); rep (may be NULL) gets what was done. */
HS_MUST_USE hs_status tbl_read_file_ex(const tbl_plan_file *f, const hs_field *read_schema,
                                       const tbl_read_opts *o, tbl_emit_fn emit, void *ctx,
                                       roaring_bitmap_t **positions_out, int64_t *rows_deleted,
                                       tbl_file_report *rep, hs_error *err);
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

/* Internal views of a scan (index_scan.c's explain). */
const tbl_plan *tbl_scan_get_plan(const hs_scan *s);
/* Keep a tbl_file_report per planned file while reading (explain). */
HS_MUST_USE hs_status tbl_scan_keep_reports(hs_scan *s, hs_error *err);
/* Reads the scan to the end, discarding the rows. */
HS_MUST_USE hs_status tbl_scan_drain(hs_scan *s, hs_error *err);
/* The reports (one per planned file, in plan order) or NULL. */
const tbl_file_report *tbl_scan_reports(const hs_scan *s);

/* How a scan's read-ahead pipeline ran (scan.c, scan_par), so far: the
 * batches whose columns a reader handed out, those columns, how many of
 * them another thread of the scan ran (a reader on a full queue, the
 * consumer on an empty one), and the times and nanoseconds a reader slept
 * on a full queue or the consumer on an empty one with nothing to help
 * with.  All zero for a scan without a pool. */
typedef struct tbl_scan_pipe {
    int64_t par_batches, par_tasks, tasks_helped;
    int64_t room_waits, room_wait_ns;
    int64_t ready_waits, ready_wait_ns;
} tbl_scan_pipe;
void tbl_scan_get_pipe(hs_scan *s, tbl_scan_pipe *out);

/* ---- write.c: the row delta primitive (rowdelta.c drives it) ---- */

/* What happens to one planned data file. */
typedef struct tbl_file_action {
    int file;                       /* plan index */
    roaring_bitmap_t *hits;         /* live positions to delete (owned) */
    int64_t live;                   /* live rows before this operation */
    bool remove_all;                /* hits are all its live rows: drop the file */
} tbl_file_action;

/* Judges snapshot s (not an append) committed on top of the snapshot an
 * operation was planned on: HS_OK when it does not touch what the
 * operation changes, HS_CONFLICT (with a message) when it does. */
typedef hs_status (*tbl_validate_fn)(void *ctx, const ice_table_metadata *base,
                                     const ice_snapshot *s, hs_error *err);

/* Commits one "overwrite" snapshot ("append" when n == 0): for acts[0..n) (files of plan p, the
 * current snapshot of t) their positions deleted (v2 position delete files,
 * v3 deletion vectors merged with the file's existing one; a file losing
 * every live row is removed), plus `rows` (may be NULL) written as new data
 * files.  rows is in the current schema, or in rows_schema (the current
 * schema + a trailing _row_id column, v3 lineage of updated rows) when that
 * is non-NULL.  Snapshots committed since read_snapshot_id (-1 = none) that
 * are not appends go through validate.  Nothing is committed when nothing
 * changes.  acts are borrowed. */
HS_MUST_USE hs_status tbl_write_row_delta(hs_table *t, const tbl_plan *p, tbl_file_action *acts,
                                          int n, const hs_batch *rows,
                                          const ice_schema *rows_schema,
                                          int64_t read_snapshot_id, tbl_validate_fn validate,
                                          void *vctx, hs_error *err);

/* ---- write.c: rewrites for maintenance (maint.c) ---- */

/* One "replace"-like commit built piece by piece: data files written from
 * rows (default spec, sorted by the default order, declared indexes built),
 * files removed from manifests, manifests added or replaced.  The commit
 * (tbl_commit with rebase) keeps the base's manifests minus the replaced
 * ones (HS_CONFLICT when one of those left the base), adds ours, and calls
 * `check` (may be NULL) on every attempt's base first.  tbl_rewrite_free
 * removes every file written unless the commit succeeded. */
typedef struct tbl_rewrite tbl_rewrite;
typedef hs_status (*tbl_rewrite_check_fn)(void *ctx, const ice_table_metadata *base,
                                          hs_error *err);
HS_MUST_USE hs_status tbl_rewrite_begin(hs_table *t, const char *operation,
                                        int64_t planned_snapshot_id, tbl_rewrite_check_fn check,
                                        void *check_ctx, tbl_rewrite **out, hs_error *err);
int64_t tbl_rewrite_snapshot_id(const tbl_rewrite *rw);
/* Writes rows (the current schema; borrowed) as data files + one manifest. */
HS_MUST_USE hs_status tbl_rewrite_rows(tbl_rewrite *rw, const hs_batch *rows, hs_error *err);
/* The same with the data files written in file_schema (a superset of the
 * current schema by field id: v3 compaction adds the row lineage columns,
 * so moved rows keep their _row_id and _last_updated_sequence_number). */
HS_MUST_USE hs_status tbl_rewrite_rows_as(tbl_rewrite *rw, const hs_batch *rows,
                                          const ice_schema *file_schema, hs_error *err);
/* Writes the rows of stream `in` (moved) as an append does: memory bounded
 * by hyperstream.write.buffer-bytes, files rolled at `target` bytes (0 =
 * the table property), one manifest. */
HS_MUST_USE hs_status tbl_rewrite_stream(tbl_rewrite *rw, struct ArrowArrayStream *in,
                                         int64_t target, hs_error *err);
/* The same pushed batch by batch (compaction's bin-pack path, which reads
 * its input files with a callback): open, push each batch (taken, also on
 * failure), close with finish true to write out what is buffered and the
 * manifest, or false to drop it (after a failure; the files written so far
 * are the rewrite's to clean up, as with a failed tbl_rewrite_stream).
 * file_schema (borrowed until close; NULL = the current schema): the
 * batches' and data files' schema, as tbl_rewrite_rows_as (v3 lineage
 * columns).  Declared indexes do not hold a file's rows: each file's
 * sidecars are built from the file when it is closed. */
typedef struct tbl_rewrite_sink tbl_rewrite_sink;
HS_MUST_USE hs_status tbl_rewrite_sink_open(tbl_rewrite *rw, int64_t target,
                                            const ice_schema *file_schema,
                                            tbl_rewrite_sink **out, hs_error *err);
HS_MUST_USE hs_status tbl_rewrite_sink_push(tbl_rewrite_sink *s, hs_batch *b, hs_error *err);
HS_MUST_USE hs_status tbl_rewrite_sink_close(tbl_rewrite_sink *s, bool finish, hs_error *err);
/* Removes plan files (remove_file[i]) and delete entries (remove_del: keys
 * int manifest index, and int64_t[2] {manifest index, entry index}; may be
 * NULL) by rewriting their manifests; counts the removed data files. */
HS_MUST_USE hs_status tbl_rewrite_remove(tbl_rewrite *rw, const tbl_plan *p,
                                         const bool *remove_file, const hs_map *remove_del,
                                         hs_error *err);
/* Delete files a rewrite drops, by kind (the snapshot summary's removed-*
 * and total-* counts of delete files and deleted rows). */
typedef struct tbl_del_counts {
    int64_t pos_files, pos_records;   /* position deletes and deletion vectors */
    int64_t eq_files, eq_records;     /* equality deletes */
} tbl_del_counts;
void tbl_rewrite_count_deletes_removed(tbl_rewrite *rw, const tbl_del_counts *dc);
/* Writes a manifest of entries (borrowed) and adds it to the snapshot. */
HS_MUST_USE hs_status tbl_rewrite_add_manifest(tbl_rewrite *rw, int content,
                                               const ice_schema *schema,
                                               const ice_partition_spec *spec,
                                               const ice_manifest_entry *e, int64_t n,
                                               hs_error *err);
/* The base's manifest at manifest_path is left out of the new snapshot. */
HS_MUST_USE hs_status tbl_rewrite_replace(tbl_rewrite *rw, const char *manifest_path,
                                          hs_error *err);
/* Counts data files added by manifests (tbl_rewrite_add_manifest) in the
 * snapshot summary. */
void tbl_rewrite_count_added(tbl_rewrite *rw, int64_t files, int64_t records, int64_t bytes);
/* One more snapshot summary key (copied). */
HS_MUST_USE hs_status tbl_rewrite_summary(tbl_rewrite *rw, const char *key, const char *value,
                                          hs_error *err);
/* One more table property set by the same metadata commit (copied). */
HS_MUST_USE hs_status tbl_rewrite_property(tbl_rewrite *rw, const char *key, const char *value,
                                           hs_error *err);
void tbl_rewrite_written(const tbl_rewrite *rw, int64_t *files, int64_t *records,
                         int64_t *bytes);
HS_MUST_USE hs_status tbl_rewrite_commit(tbl_rewrite *rw, hs_error *err);
void tbl_rewrite_free(tbl_rewrite *rw);   /* accepts NULL */
/* Where rewritten rows went (compaction's carry-over of concurrent
 * deletes): called as rows are placed in a data file - rows base + idx[j]
 * of the input (counted from the first row handed to this call of
 * tbl_rewrite_rows / _rows_as / _stream) are at positions pos0 + j of the
 * file at `path`, whose partition tuple is pvals[0..n_pvals) (valid as long
 * as the rewrite).  NULL fn = none. */
typedef hs_status (*tbl_row_map_fn)(void *ctx, const char *path, const ice_value *pvals,
                                    int n_pvals, int64_t pos0, int64_t base, const int64_t *idx,
                                    int64_t n, hs_error *err);
void tbl_rewrite_set_row_map(tbl_rewrite *rw, tbl_row_map_fn fn, void *ctx);
/* Marks the state after the data files are written; tbl_rewrite_reset
 * drops what was added after the mark (manifests and delete files written,
 * manifests replaced, removal counts), so that a `check` callback can redo
 * the removal against each attempt's base. */
void tbl_rewrite_mark(tbl_rewrite *rw);
void tbl_rewrite_reset(tbl_rewrite *rw);
/* Position deletes of acts[0..n) (files of plan p, which may list files
 * this rewrite wrote): v2 position delete files, v3 deletion vectors
 * (merged with the file's existing ones, whose entries must then be
 * removed: remove_del as for tbl_rewrite_remove). */
HS_MUST_USE hs_status tbl_rewrite_position_deletes(tbl_rewrite *rw, const tbl_plan *p,
                                                   tbl_file_action *acts, int n,
                                                   hs_map *remove_del, hs_error *err);

/* One v2 position delete file holding the positions bms[i] of the data
 * files paths[i] (i < n; paths distinct, in ascending byte order), in the
 * partition tuple given (borrowed until the entry is written); file_path
 * bounds are the first and last path in full.  *out: its ADDED manifest
 * entry (strings owned by the rewrite), to be listed through
 * tbl_rewrite_add_manifest; counted as an added delete file. */
HS_MUST_USE hs_status tbl_rewrite_pos_delete_file(tbl_rewrite *rw, const char *const *paths,
                                                  roaring_bitmap_t *const *bms, int n,
                                                  int n_partition, ice_value *partition,
                                                  ice_manifest_entry *out, hs_error *err);

/* ---- maint.c: helpers shared with maint_compact.c ---- */

/* A manifest list read whole (*out: caller frees with ice_manifest_list_free). */
HS_MUST_USE hs_status tbl_maint_read_list(const char *path, ice_manifest_list **out,
                                          hs_error *err);
/* An integer table property, dflt when absent or not a number. */
int64_t tbl_maint_prop_i64(const ice_table_metadata *m, const char *key, int64_t dflt);
/* maint_compact.c: a key of a partition (spec id, then each value tagged
 * with its type and length) into key (reset first); its values as a JSON
 * array (a new reference). */
HS_MUST_USE hs_status tbl_maint_part_key(int32_t spec_id, const ice_value *vals, int n,
                                         hs_buf *key);
struct json_t *tbl_maint_partition_json(const ice_value *vals, int n);
/* Serializes j (taken) into *out (caller frees with hs_string_free); out may
 * be NULL (j is only released). */
struct json_t;
HS_MUST_USE hs_status tbl_maint_json_out(struct json_t *j, char **out, hs_error *err);

/* ---- stream.c: near-real-time reads of an append stream's tail ---- */

/* The acknowledged, not yet committed rows a scan of t's current snapshot
 * adds (hs_stream_open attached them to t).  Refreshes t first when the
 * stream has committed past t's metadata (the flushed rows left the tail),
 * so that no row is missing or read twice.  *out = NULL when t has no tail
 * or it holds no visible row; else caller frees with tbl_tail_view_free. */
typedef struct tbl_tail_view tbl_tail_view;
HS_MUST_USE hs_status tbl_tail_capture(hs_table *t, tbl_tail_view **out, hs_error *err);
/* The next batch of the view: rows in read_schema (columns by field id;
 * metadata columns read null), pred (may be NULL) applied exactly, the first
 * out_schema->n_children columns kept.  *out = NULL at the end. */
HS_MUST_USE hs_status tbl_tail_view_next(tbl_tail_view *v, const hs_field *read_schema,
                                         const tbl_pred *pred, const hs_field *out_schema,
                                         hs_batch **out, hs_error *err);
int64_t tbl_tail_view_rows(const tbl_tail_view *v);
void tbl_tail_view_free(tbl_tail_view *v);   /* accepts NULL */
/* hs_table_close: drops t's reference to the tail. */
void tbl_tail_detach(hs_table *t);
/* Attaches t to the tail of the append stream open on its table in this
 * process (any handle, not only the one the stream was opened on; drops a
 * tail whose stream closed).  True when t has a live tail. */
bool tbl_tail_attach(hs_table *t);
/* Before a delete or overwrite through t (`what` names it for messages):
 * when an append stream of the table is open in this process, asks it to
 * commit every acknowledged row and waits (up to its busy timeout) until it
 * has, so that the delete also applies to rows not yet flushed.  HS_BUSY
 * when the stream could not commit them in time (flushes failing) or
 * closed with rows left in its log.  HS_OK at once without a stream. */
HS_MUST_USE hs_status tbl_tail_flush_pending(hs_table *t, const char *what, hs_error *err);
/* Acknowledged rows of the process's append stream on t's table that are
 * not committed yet (0 without a stream). */
int64_t tbl_tail_pending_rows(hs_table *t);
/* The last WAL seq committed in m by the log with id walid ("" or NULL:
 * the table's own <table>/wal): the table property
 * hyperstream.wal.committed-seq[.<walid>], or the summary key
 * hyperstream.wal.seq[.<walid>] of the newest ancestor of main that has one,
 * whichever is larger; 0 = none. */
uint64_t tbl_wal_committed_seq(const ice_table_metadata *m, const char *walid);
/* hs_table_open: when the table's log (<table>/wal/, or for a table on an
 * object store the local directory stream.c's wal_dir_for names) holds segments and no
 * stream holds it, replays and commits them (a stream opened and closed on
 * a handle of its own), then refreshes t.  Best effort: a log that cannot
 * be recovered (held by a live stream, corrupt, a read-only catalog) is
 * left for the next stream open, which reports it.  Off with the table
 * property hyperstream.wal.recover-on-open = false. */
void tbl_wal_recover_on_open(hs_table *t);

/* ---- index.c, index_build.c, index_scan.c ---- */

/* The registry view of one scan: loaded once, read-only afterwards (shared
 * by the threads reading files). */
typedef struct tbl_ixscan tbl_ixscan;
/* Object stores: starts loading m's index registry (root and segments) into
 * the cache on a background thread (a scan planner, before the manifests). */
void tbl_ix_warm_async(const ice_table_metadata *m);
/* Object stores: the root of m's index registry alone (declarations,
 * segments, manifest summaries; the fetch tbl_ix_warm_async started is
 * joined, not repeated), to release with tbl_ix_root_release.  *root NULL
 * when there is none or it cannot be read (nothing is skipped then). */
HS_MUST_USE hs_status tbl_ix_root_acquire(const ice_table_metadata *m,
                                          const struct ix_registry **root, struct tbl_fref **ref,
                                          hs_error *err);
void tbl_ix_root_release(struct tbl_fref *ref);
/* Loads the registry named by m's properties.  *out = NULL when the table
 * has no index entries (or the registry cannot be read: a warning, and
 * *skipped counts it).  Caller frees with tbl_ixscan_free. */
HS_MUST_USE hs_status tbl_ixscan_open(const ice_table_metadata *m, tbl_ixscan **out,
                                      int64_t *skipped, hs_error *err);
/* The same for a scan of snapshot snap (NULL = current): for an older
 * snapshot, the current registry plus the entries it lacks from the
 * registry the table had while snap was current (time travel keeps the
 * indexes that existed then, e.g. of files an overwrite removed since). */
HS_MUST_USE hs_status tbl_ixscan_open_at(const ice_table_metadata *m, const ice_snapshot *snap,
                                         tbl_ixscan **out, int64_t *skipped, hs_error *err);
void tbl_ixscan_free(tbl_ixscan *x);  /* accepts NULL */
/* The registry version it holds (indexed by data file; borrowed until
 * tbl_ixscan_free), shared through the process-wide cache. */
struct ix_registry;
const struct ix_registry *tbl_ixscan_registry(const tbl_ixscan *x);
/* Drops the process-wide cache of opened sidecars and registry versions
 * (entries in use stay until released), opened vector indexes and the Avro
 * schema cache: tests, memory pressure. */
void tbl_index_cache_clear(void);
/* Evaluates the simple filter over the sidecars of data file f: AND =
 * intersection, OR = union, a leaf without a usable index = every row.
 * *cand = a new bitmap of the rows that may match (caller frees), or NULL
 * when no index applied; *exact = the bitmap is exactly the rows where the
 * filter is TRUE.  Unusable sidecars are skipped with a warning (rep->
 * n_skipped).  Thread-safe for concurrent calls on one tbl_ixscan. */
HS_MUST_USE hs_status tbl_ixscan_file(const tbl_ixscan *x, const tbl_plan_file *f,
                                      const pr_filter *filter, roaring_bitmap_t **cand,
                                      bool *exact, tbl_file_report *rep, hs_error *err);
/* Object stores, called once a selective scan has read its files: warms
 * the next selective query of the table (docs/storage.md "Warming the next
 * query").  In the background it fetches the data manifests the registry
 * root's summaries let the plan skip (plan->skipped), the footers of the
 * snapshot's other data files (plan->pruned, and the files the registry x
 * lists), the scalar sidecars of the filter's columns of those files, and
 * then the pages of the columns `page_ids` of every one of them
 * (tbl_plan_warm_pages, within HS_WARM_PAGES_MB), so that a lookup of
 * another key finds all it reads cached.  Only for a snapshot of at most
 * HS_WARM_FILES data files; what was fetched before costs no request.  x may
 * be NULL (no registry).  Best effort. */
void tbl_ixscan_warm(const tbl_ixscan *x, const tbl_plan *plan, const pr_filter *filter,
                     const int32_t *page_ids, int n_page_ids);

/* The index work of one write operation (write.c): sidecars for the data
 * files it writes, built from the rows in memory, and the registry change
 * committed together with the snapshot (one metadata commit).  A zeroed
 * struct with t set (tbl_ixw_init) is ready; nothing is read until the
 * first data file is written. */
typedef struct tbl_ixw {
    hs_table *t;
    bool loaded;                   /* the registry of t's metadata was read */
    char *loaded_rel;              /* its property value (owned), NULL = none */
    void *reg;                     /* ix_registry * of that version (owned) */
    hs_buf files;                  /* tbl_ixw_file: data files written */
    hs_buf removed;                /* char *: data files removed (owned strings) */
    hs_buf entries;                /* ix_entry: sidecars built (owned strings) */
    hs_buf sidecars;               /* char *: sidecar paths written (owned) */
    hs_buf prev_registry;          /* char *: registry files of the previous attempt (owned) */
} tbl_ixw;

void tbl_ixw_init(tbl_ixw *w, hs_table *t);
/* A data file of n_rows rows was written: builds the declared indexes for
 * it, from b when given (every row of the file, in the current schema, in
 * file order), else from the file itself, read back one indexed column at
 * a time in batches (memory: the index builder's, not the file's rows). */
HS_MUST_USE hs_status tbl_ixw_file_written(tbl_ixw *w, const char *path, int64_t size,
                                           int64_t n_rows, const hs_batch *b, hs_error *err);
/* A data file leaves the table (its entries are dropped at commit). */
HS_MUST_USE hs_status tbl_ixw_file_removed(tbl_ixw *w, const char *path, hs_error *err);
/* In the commit callback, after nm (the new metadata: a copy of base plus
 * the snapshot) is built: merges the base's registry with ours (building
 * sidecars, from the written files, for indexes declared since), writes the
 * new registry version and sets the property on nm.  Nothing changes when
 * there is nothing to record. */
HS_MUST_USE hs_status tbl_ixw_apply(tbl_ixw *w, const ice_table_metadata *base,
                                    ice_table_metadata *nm, hs_error *err);
/* Removes every sidecar and registry file written (the commit failed). */
void tbl_ixw_abort(tbl_ixw *w);
/* Runs hs_table_refresh_indexes when the table property
 * "hyperstream.index.auto-refresh" is "true" (hs_table_open calls it); a
 * failure is a warning: scans stay exact without the sidecars. */
void tbl_index_auto_refresh(hs_table *t);
void tbl_ixw_free(tbl_ixw *w);   /* frees memory only */

/* ---- index kinds ---- */

/* What a family of index kinds provides (the scalar kinds in index_build.c;
 * vector kinds add theirs to the table in index_build.c).  A builder gets one data
 * file's column in position order. */
typedef struct tbl_ixkind {
    const char *family;            /* "scalar", "vector", ... */
    /* whether this family builds `kind` */
    bool (*handles)(const char *kind);
    /* HS_OK when column f can carry `kind` with params (a JSON object text
     * or NULL); HS_INVALID with a message otherwise */
    hs_status (*check)(const char *kind, const hs_field *f, const char *params, hs_error *err);
    /* object_store: the table lies on an object store (layouts may differ) */
    hs_status (*build_begin)(const char *kind, const char *params, const hs_field *f,
                             int64_t data_file_size, int64_t n_rows, bool object_store, void **state,
                             hs_error *err);
    /* rows [0, c->length) of the column at positions first_pos.. */
    hs_status (*build_add)(void *state, const hs_column *c, int64_t first_pos, hs_error *err);
    /* serializes the sidecar into out (appended) */
    hs_status (*build_finish)(void *state, hs_buf *out, hs_error *err);
    void (*build_free)(void *state);
} tbl_ixkind;

/* The family that builds `kind`, or NULL. */
const tbl_ixkind *tbl_ixkind_find(const char *kind);

#endif
