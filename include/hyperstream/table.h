/*
 * hyperstream/table.h - public C API for Apache Iceberg tables: catalogs,
 * table creation and evolution, appends, overwrites, deletes, snapshots,
 * time travel and scans through the Arrow C Stream Interface.
 *
 * The tables are standard Iceberg tables (format v2 by default, v3 on
 * request), so pyiceberg, Spark, Trino and DuckDB read what this API writes
 * and this API reads what they write.
 *
 *   handle        what it is                               freed by
 *   -----------   --------------------------------------   -------------------
 *   hs_catalog    where tables live: a warehouse directory  hs_catalog_close
 *                 of path tables, or a SQLite file in
 *                 pyiceberg SqlCatalog / Java JdbcCatalog
 *                 layout
 *   hs_table      one table at one metadata version (the    hs_table_close
 *                 handle is refreshed by every commit made
 *                 through it; hs_table_refresh reloads)
 *   hs_scan       a planned scan of one snapshot: the       hs_scan_free, or
 *                 files to read after pruning, the deletes  moved into a stream
 *                 that apply to them                        by hs_scan_stream
 *
 * Names.  Path catalog: a table name is a directory relative to the
 * warehouse ("db/events"), or an absolute path when the catalog was opened
 * with warehouse NULL.  SQL catalog: "namespace.table" (the last dot splits;
 * nested namespaces "a.b.table"); new tables are placed under
 * <warehouse>/<namespace path>/<table> unless a location is given.
 *
 * Text forms used by the API:
 *   partition spec  "bucket(16, id), day(ts), truncate(4, name), year(ts),
 *                    month(ts), hour(ts), identity(category) | category,
 *                    void(x)"; empty or NULL = unpartitioned
 *   sort order      "id, ts DESC NULLS LAST, bucket(4, x) ASC NULLS FIRST";
 *                    defaults ASC, NULLS FIRST for ASC and NULLS LAST for DESC
 *   filter          "col op literal [AND|OR ...]" with op one of = == != <> <
 *                    <= > >=, "col IN (l1, l2)", "col NOT IN (...)",
 *                    "col IS NULL", "col IS NOT NULL", NOT, parentheses.
 *                    Literals: integers, decimals/floats, 'strings' (''
 *                    escapes a quote), true/false, and 'YYYY-MM-DD' /
 *                    'YYYY-MM-DDTHH:MM:SS[.ffffff]' strings compared against
 *                    date and timestamp columns.  Nested fields by dotted
 *                    name ("s.a").  Keywords are case-insensitive.
 *   schema changes  a JSON array of objects, applied in order:
 *                    {"op":"add", "name":"c", "type":"long"|{Iceberg type JSON},
 *                     "required":false, "doc":"..", "parent":"s"}
 *                    {"op":"drop", "name":"c"}
 *                    {"op":"rename", "name":"c", "to":"d"}
 *                    {"op":"move", "name":"c", "first":true | "before":"x" | "after":"x"}
 *                    {"op":"update", "name":"c", "type":"long"}   (promote: int->long,
 *                     float->double, decimal(P,S)->decimal(P2,S) with P2 >= P)
 *                    {"op":"make_optional", "name":"c"}
 *                   Type strings are Iceberg's ("int", "long", "string",
 *                   "decimal(10,2)", "timestamptz", "list<int>" is not
 *                   accepted: give nested types as Iceberg type JSON).
 *
 * Commits.  Every mutating call writes new files, then commits a new
 * metadata version atomically (path tables: create-if-absent of
 * v<N+1>.metadata.json, then version-hint.text; SQL: compare-and-swap of
 * metadata_location).  On a lost race the call reloads, rebases appends,
 * re-checks overwrites, deletes and schema changes, and retries with backoff
 * and jitter (table property commit.retry.num-retries, default 10: Java's
 * default is 4, but a retried append only rebases, so giving up after 4
 * under a handful of concurrent writers would turn an ordinary race into an
 * error every caller must handle).  When a retry cannot be valid it fails
 * with HS_CONFLICT and a message saying what conflicted.  Every attempt
 * checks the table's table-uuid: if the table was dropped and created again
 * since the handle loaded it, the call fails with HS_CONFLICT (HS_NOT_FOUND
 * if it was only dropped) and writes nothing into the new table.  A failed
 * call leaves the table at the old state; files it wrote are removed or left
 * as unreferenced orphans.
 *
 * Errors: every fallible call returns hs_status and fills the caller's
 * hs_error (may be NULL).  Strings returned as `char **out` are the caller's
 * to free with hs_string_free.  Input strings and arrays are borrowed for the
 * duration of the call only.  Handles are not thread-safe: use one handle per
 * thread (several handles, in one or many processes, may commit to the same
 * table concurrently).
 */
#ifndef HYPERSTREAM_TABLE_H
#define HYPERSTREAM_TABLE_H

#include "hyperstream/arrow_c_abi.h"
#include "hyperstream/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_catalog hs_catalog;
typedef struct hs_table hs_table;
typedef struct hs_scan hs_scan;

/* Frees a string returned by the library (accepts NULL). */
HS_API void hs_string_free(char *s);

/* ------------------------------------------------------------------ */
/* Catalogs                                                              */

/* A catalog of path tables under `warehouse` (a directory; created if
 * absent).  warehouse NULL: table names are themselves paths.  Caller frees
 * with hs_catalog_close. */
HS_API hs_status hs_catalog_open_path(const char *warehouse, hs_catalog **out, hs_error *err);
/* A SQL catalog in the SQLite file `sqlite_path` (created with the
 * iceberg_tables and iceberg_namespace_properties tables if absent), rows
 * filtered by catalog_name (NULL = "default"), new tables under `warehouse`
 * (a directory; NULL = the directory of the SQLite file).  Caller frees with
 * hs_catalog_close. */
HS_API hs_status hs_catalog_open_sql(const char *sqlite_path, const char *catalog_name,
                              const char *warehouse, hs_catalog **out, hs_error *err);
/* Accepts NULL.  Tables opened from the catalog must be closed first. */
HS_API void hs_catalog_close(hs_catalog *cat);

/* Creates a namespace ("a" or "a.b"); HS_CONFLICT if it exists.  Path
 * catalogs create the directory. */
HS_API hs_status hs_catalog_create_namespace(hs_catalog *cat, const char *ns, hs_error *err);
/* JSON array of the identifiers of the tables in namespace ns, sorted:
 * always the full identifier that hs_table_open(cat, id) opens - SQL and
 * REST catalogs "ns.name" (e.g. ["db.t1","db.t2"]; ns NULL or "": the root
 * namespace's tables, "name"; REST needs a namespace), path catalogs
 * "dir/name" (a path catalog's namespace is a directory under its root,
 * "a/b"; NULL or "": the root's tables, "name").  Caller frees *out with
 * hs_string_free. */
HS_API hs_status hs_catalog_list_tables(hs_catalog *cat, const char *ns, char **out, hs_error *err);
/* The same list as a stream (see "Lists as Arrow streams" below):
 * namespace utf8 (the identifier before its last '.', path catalogs '/';
 * null when there is none), name utf8, identifier utf8 (the JSON form's
 * string). */
HS_API hs_status hs_catalog_list_tables_stream(hs_catalog *cat, const char *ns,
                                               struct ArrowArrayStream *out, hs_error *err);
/* Removes the table from the catalog (data files are kept when purge is 0;
 * path catalogs always delete the metadata directory - without a metadata
 * file its manifests are unreadable clutter, and a table created again at the
 * path starts clean - and the whole table directory when purge is 1).  Waits
 * for a commit in progress on a path table.  HS_NOT_FOUND if absent. */
HS_API hs_status hs_catalog_drop_table(hs_catalog *cat, const char *name, int purge, hs_error *err);
/* Renames a table in a SQL catalog (HS_UNSUPPORTED for path catalogs). */
HS_API hs_status hs_catalog_rename_table(hs_catalog *cat, const char *from, const char *to,
                                  hs_error *err);

/* A catalog named by a URI (docs/catalogs.md): "sqlite:///rel.db" or
 * "sqlite:////abs.db" (SQLAlchemy's spelling, as pyiceberg's SqlCatalog
 * takes it) = SQL catalog; "http://..." / "https://..." = Iceberg REST
 * catalog; anything else = a directory of path tables (file:// accepted).
 * options_json (NULL = none) is a JSON object of strings: "name" (SQL
 * catalog_name, default "default"), "warehouse", and for REST "token",
 * "credential" ("client_id:client_secret"), "scope", "oauth2-server-uri",
 * "prefix".  Caller frees with hs_catalog_close. */
HS_API hs_status hs_catalog_open_uri(const char *uri, const char *options_json,
                                     hs_catalog **out, hs_error *err);
/* JSON array of the namespaces directly under parent (NULL = top level),
 * full dotted names (["a", "a.b"]).  Path catalogs: directories that are not
 * tables.  Caller frees *out with hs_string_free. */
HS_API hs_status hs_catalog_list_namespaces(hs_catalog *cat, const char *parent, char **out,
                                            hs_error *err);
/* Creates namespace ns with properties (a JSON object of strings; NULL =
 * none; path catalogs take none).  HS_CONFLICT if it exists. */
HS_API hs_status hs_catalog_create_namespace_props(hs_catalog *cat, const char *ns,
                                                   const char *properties_json, hs_error *err);
/* Drops an empty namespace (HS_NOT_FOUND if absent, HS_INVALID if not empty). */
HS_API hs_status hs_catalog_drop_namespace(hs_catalog *cat, const char *ns, hs_error *err);
/* The namespace's properties as a JSON object; caller frees with hs_string_free. */
HS_API hs_status hs_catalog_namespace_properties(hs_catalog *cat, const char *ns, char **out,
                                                 hs_error *err);
/* Sets the properties of set_json (object of strings, NULL = none) and
 * removes the keys of remove_json (array of strings, NULL = none). */
HS_API hs_status hs_catalog_update_namespace_properties(hs_catalog *cat, const char *ns,
                                                        const char *set_json,
                                                        const char *remove_json, hs_error *err);
/* *exists = 1 when the table exists, else 0. */
HS_API hs_status hs_catalog_table_exists(hs_catalog *cat, const char *name, int *exists,
                                         hs_error *err);
/* Registers an existing table metadata file as table `name` of a SQL or
 * REST catalog (Iceberg's registerTable: the catalog points at that very
 * file, nothing is copied), e.g. a table another engine or catalog wrote.
 * HS_CONFLICT when the name exists, unless overwrite is 1 (then the name
 * points at the new file); HS_NOT_FOUND when the namespace does not exist;
 * HS_INVALID when the file is missing or is not table metadata;
 * HS_UNSUPPORTED for path catalogs (open the file with
 * hs_table_open_metadata instead).  Appended after 0.1. */
HS_API hs_status hs_catalog_register_table(hs_catalog *cat, const char *name,
                                           const char *metadata_location, int overwrite,
                                           hs_error *err);
/* JSON array of the views in namespace ns, full names (["db.v1"]): REST
 * catalogs' views endpoint (none when the server has no views), SQL
 * catalogs' rows of type VIEW (JDBC's schema), none for path catalogs.
 * Views are listed only (not opened).  Caller frees *out with
 * hs_string_free.  Appended after 0.1. */
HS_API hs_status hs_catalog_list_views(hs_catalog *cat, const char *ns, char **out,
                                       hs_error *err);
/* The newest metadata file under a table location that has no
 * version-hint.text (tables of pyiceberg's SqlCatalog, JDBC and REST
 * catalogs: metadata/NNNNN-<uuid>.metadata.json): the highest NNNNN (or
 * v<N>), ties broken by last-updated-ms.  Only the catalog knows the current
 * one for sure: open the result with hs_table_open_metadata (read-only).
 * Caller frees *out with hs_string_free. */
HS_API hs_status hs_table_find_metadata(const char *location, char **out, hs_error *err);

/* ------------------------------------------------------------------ */
/* Creating and opening tables                                           */

typedef struct hs_table_create_options {
    size_t struct_size;           /* sizeof(hs_table_create_options) or 0; see common.h */
    /* The schema: exactly one of these.  arrow_schema is borrowed (not
     * released); its fields become Iceberg fields with fresh ids (ids in
     * "PARQUET:field_id" metadata are ignored).  schema_json is an Iceberg
     * schema object {"type":"struct","fields":[...]} whose ids are
     * reassigned likewise. */
    const struct ArrowSchema *arrow_schema;
    const char *schema_json;
    const char *partition_spec;   /* text form (see top); NULL = unpartitioned */
    const char *sort_order;       /* text form; NULL = unsorted */
    const char *const *property_keys;    /* n_properties pairs, borrowed */
    const char *const *property_values;
    int n_properties;
    int format_version;           /* 0 = 2; 1 is refused; 2 or 3 */
    const char *location;         /* NULL = derived from the catalog and name */
} hs_table_create_options;
#define HS_TABLE_CREATE_OPTIONS_INIT {sizeof(hs_table_create_options)}

/* Creates an empty table (no snapshot) and commits its first metadata
 * version.  HS_CONFLICT if the table exists.  On success *out is an open
 * handle (caller frees with hs_table_close); out may be NULL to only create. */
HS_API hs_status hs_table_create(hs_catalog *cat, const char *name, const hs_table_create_options *opt,
                          hs_table **out, hs_error *err);
/* Opens the table's current metadata.  HS_NOT_FOUND if absent; an unknown
 * newer format version is HS_UNSUPPORTED.  Caller frees with hs_table_close.
 * The table keeps `cat` borrowed: close tables before their catalog. */
HS_API hs_status hs_table_open(hs_catalog *cat, const char *name, hs_table **out, hs_error *err);
/* Opens a table read-only from one metadata file (like pyiceberg's
 * StaticTable): mutating calls on it return HS_UNSUPPORTED. */
HS_API hs_status hs_table_open_metadata(const char *metadata_path, hs_table **out, hs_error *err);
/* Reloads the current metadata from the catalog. */
HS_API hs_status hs_table_refresh(hs_table *t, hs_error *err);
HS_API void hs_table_close(hs_table *t);  /* accepts NULL */

/* Borrowed strings, valid until the next call that commits or refreshes t. */
HS_API const char *hs_table_location(const hs_table *t);
HS_API const char *hs_table_metadata_location(const hs_table *t);
HS_API int hs_table_format_version(const hs_table *t);
/* -1 when the table has no current snapshot. */
HS_API int64_t hs_table_current_snapshot_id(const hs_table *t);
/* The current schema as an Arrow schema with "PARQUET:field_id" metadata on
 * every field; caller releases *out. */
HS_API hs_status hs_table_schema(const hs_table *t, struct ArrowSchema *out, hs_error *err);
/* The current metadata.json text; caller frees *out with hs_string_free. */
HS_API hs_status hs_table_metadata_json(const hs_table *t, char **out, hs_error *err);

/* ------------------------------------------------------------------ */
/* Writing                                                               */

/* Appends the rows of `in` (moved: released by this call, also on failure)
 * as new Parquet data files: rows are split by the default partition spec's
 * partition values and sorted by the default sort order when it is set.
 * Columns are matched to the table schema by name (missing optional columns
 * are written as nulls; a missing required column or an extra column is
 * HS_INVALID); types must equal the table's or be safely castable (int32 ->
 * int64, float -> double).  Commits a fast append ("append" snapshot); an
 * empty stream commits nothing.  The stream is read batch by batch: memory
 * stays bounded (table property hyperstream.write.buffer-bytes, default
 * 64 MiB, plus one input batch) whatever the input size, and files roll at
 * write.target-file-size-bytes (default 512 MiB); docs/tables.md. */
HS_API hs_status hs_table_append(hs_table *t, struct ArrowArrayStream *in, hs_error *err);

/* Replaces rows: deletes every row matching `filter` (NULL = all rows), then
 * adds the rows of `in` (moved; may be NULL to only delete), in one
 * "overwrite" snapshot.  Files whose rows all match are dropped; files with
 * some matching rows are rewritten without them (copy-on-write). */
HS_API hs_status hs_table_overwrite(hs_table *t, struct ArrowArrayStream *in, const char *filter,
                             hs_error *err);
/* Dynamic partition overwrite: replaces every partition (of the default
 * spec) that the rows of `in` (moved) fall in, in one "overwrite" snapshot. */
HS_API hs_status hs_table_overwrite_partitions(hs_table *t, struct ArrowArrayStream *in, hs_error *err);

/* Deletes the rows matching `filter` (required, non-empty) by merge-on-read:
 * v2 tables get position delete files, v3 tables Puffin deletion vectors
 * (merged with a file's existing vector).  Files whose rows all match are
 * removed from the snapshot instead.  Commits a "delete" snapshot (nothing
 * when no row matches).  *rows_deleted (may be NULL) gets the count. */
HS_API hs_status hs_table_delete(hs_table *t, const char *filter, int64_t *rows_deleted,
                          hs_error *err);

/* ------------------------------------------------------------------ */
/* Row deltas: what UPDATE, DELETE and MERGE commit                      */

/* A row delta deletes rows by position in live data files and adds rows, in
 * ONE "overwrite" snapshot ("append" when it only adds rows; docs/tables.md
 * "Row deltas").  The positions
 * come from a scan of snapshot read_snapshot_id with the "_file" and "_pos"
 * columns; the commit is validated against every snapshot committed since:
 * appends, and deletes or overwrites of other data files, rebase; a
 * concurrent commit that removed or deleted rows of a data file this delta
 * deletes from is HS_CONFLICT (nothing committed; run the statement again).
 * v2 tables get position delete files, v3 tables deletion vectors (merged
 * with a file's existing vector); a file losing all its live rows is
 * dropped.  Added rows are written as appends write them (partitioned,
 * sorted, declared sidecar indexes built).  v3 row lineage: an int64 column
 * "_row_id" in the added rows gives an updated row the row id it keeps
 * (null = a new row); v2 ignores that column.
 *
 *   hs_row_delta *d;
 *   hs_row_delta_open(t, snapshot_read, &d, &err);
 *   hs_row_delta_delete(d, file, positions, n, &err);   (any number)
 *   hs_row_delta_add(d, &stream, &err);                 (any number)
 *   hs_row_delta_commit(d, &err);
 *   hs_row_delta_free(d);
 *
 * The handle borrows t (which must outlive it); commit refreshes t and
 * leaves it at the committed metadata.  Added rows are buffered in memory
 * until commit. */
typedef struct hs_row_delta hs_row_delta;

/* read_snapshot_id: the snapshot the positions were read from (-1: the
 * table had none).  Caller frees *out with hs_row_delta_free. */
HS_API hs_status hs_row_delta_open(hs_table *t, int64_t read_snapshot_id, hs_row_delta **out,
                                   hs_error *err);
/* Marks rows positions[0..n) of data file `data_file` (the path as the
 * scan's "_file" column gives it) deleted; repeated positions count once. */
HS_API hs_status hs_row_delta_delete(hs_row_delta *d, const char *data_file,
                                     const int64_t *positions, int64_t n, hs_error *err);
/* Adds the rows of `in` (moved: released by this call, also on failure);
 * columns matched by name as in hs_table_append, plus the optional
 * "_row_id" column. */
HS_API hs_status hs_row_delta_add(hs_row_delta *d, struct ArrowArrayStream *in, hs_error *err);
/* Distinct positions marked so far / rows added so far. */
HS_API int64_t hs_row_delta_rows_deleted(const hs_row_delta *d);
HS_API int64_t hs_row_delta_rows_added(const hs_row_delta *d);
/* Commits (nothing when nothing was marked or added).  HS_CONFLICT as
 * above; HS_INVALID for a position past the end of its file.  The delta
 * is spent afterwards, whatever the result. */
HS_API hs_status hs_row_delta_commit(hs_row_delta *d, hs_error *err);
HS_API void hs_row_delta_free(hs_row_delta *d);  /* accepts NULL */

/* ------------------------------------------------------------------ */
/* Scanning                                                              */

typedef struct hs_scan_options {
    size_t struct_size;           /* sizeof(hs_scan_options) or 0; see common.h */
    /* Which snapshot (at most one of these; none = the current snapshot):
     * snapshot id, the snapshot current at a time (the last entry of the
     * snapshot log at or before as_of_ms), or a branch or tag name. */
    int use_snapshot_id; int64_t snapshot_id;
    int use_as_of; int64_t as_of_ms;
    const char *ref;
    /* Top-level column names in output order (NULL = all columns of the
     * snapshot's schema); "_row_id", "_last_updated_sequence_number",
     * "_file" and "_pos" name metadata columns. */
    const char *const *columns; int n_columns;
    const char *filter;       /* text form; NULL = all rows */
    /* Appends _row_id and _last_updated_sequence_number (int64) to the
     * output (v3 tables; null on v2). */
    int include_row_lineage;
    int64_t batch_size;       /* rows per batch; 0 = 65536 */
} hs_scan_options;
#define HS_SCAN_OPTIONS_INIT {sizeof(hs_scan_options)}

typedef struct hs_scan_stats {
    size_t struct_size;                            /* set by the caller; see common.h */
    int64_t manifests_total, manifests_pruned;     /* data manifests */
    int64_t data_files_total, data_files_pruned;   /* pruned by partition or bounds */
    int64_t delete_files;                          /* delete files that apply */
    int64_t rows_deleted;                          /* filled while the stream is read */
    int64_t rows_emitted;
} hs_scan_stats;
#define HS_SCAN_STATS_INIT {sizeof(hs_scan_stats)}

/* Stats of a scan moved into a stream.  hs_scan_stream takes ownership of
 * the scan: on success the handle stays valid, and hs_scan_get_stats and
 * hs_scan_get_index_stats may be called on it, until the stream's release
 * callback returns (release frees it); the counters are complete once
 * get_next has returned the end of the stream (or an error).  Call them on
 * the thread that reads the stream, not while another thread is inside
 * get_next.  When hs_scan_stream itself fails, the scan is already freed. */

/* Plans a scan: resolves the snapshot, reads the manifest list and the
 * manifests that survive partition and manifest-bound pruning, and keeps the
 * data files that may hold matching rows with the deletes that apply to
 * them.  opt may be NULL.  Caller frees *out with hs_scan_free, or moves it
 * into a stream with hs_scan_stream. */
HS_API hs_status hs_scan_plan(hs_table *t, const hs_scan_options *opt, hs_scan **out, hs_error *err);
/* Counters of planning (and of reading, once a stream has been consumed;
 * see "Stats of a scan moved into a stream" above for how long). */
HS_API void hs_scan_get_stats(const hs_scan *s, hs_scan_stats *out);
/* JSON array of the planned files: [{"file_path":..,"record_count":..,
 * "file_size_in_bytes":..,"spec_id":..,"partition":{..},
 * "deletes":[paths]}]; caller frees *out with hs_string_free. */
HS_API hs_status hs_scan_files_json(const hs_scan *s, char **out, hs_error *err);
/* Turns the scan into a stream of record batches (struct arrays): data files
 * read in plan order with deletes applied (merge-on-read), the residual
 * filter applied exactly, columns projected.  Takes ownership of s (freed by
 * the stream's release, also on failure).  Caller releases *out. */
HS_API hs_status hs_scan_stream(hs_scan *s, struct ArrowArrayStream *out, hs_error *err);
HS_API void hs_scan_free(hs_scan *s);  /* accepts NULL */

/* hs_scan_plan + hs_scan_stream. */
HS_API hs_status hs_table_scan(hs_table *t, const hs_scan_options *opt, struct ArrowArrayStream *out,
                        hs_error *err);

/* ------------------------------------------------------------------ */
/* Snapshots, history, refs                                               */

typedef struct hs_snapshot_info {
    size_t struct_size;         /* set by the caller; see common.h, "Output structs" */
    int64_t snapshot_id;
    int64_t parent_id;          /* -1 = none */
    int64_t sequence_number;
    int64_t timestamp_ms;
    int64_t schema_id;          /* -1 = not recorded */
    char operation[16];         /* append | replace | overwrite | delete */
    int64_t added_records, deleted_records, total_records;  /* -1 = not in summary */
    int64_t added_data_files, deleted_data_files, total_data_files;
    int64_t first_row_id, added_rows;  /* v3 row lineage; -1 otherwise */
    /* Appended after 0.1 (set struct_size, HS_SNAPSHOT_INFO_INIT, to get
     * them): bytes of data files added and in the table after the commit,
     * from the summary ("added-files-size", "total-files-size"); -1 = not
     * in it. */
    int64_t added_files_size, total_files_size;
} hs_snapshot_info;
#define HS_SNAPSHOT_INFO_INIT {sizeof(hs_snapshot_info)}

/* Number of snapshots in the metadata, and the i-th (0 <= i < count, in
 * metadata order).  HS_INVALID when i is out of range. */
HS_API int hs_snapshot_count(const hs_table *t);
HS_API hs_status hs_snapshot_get(const hs_table *t, int i, hs_snapshot_info *out, hs_error *err);

/* JSON array of every snapshot as the metadata stores it (with summaries);
 * caller frees *out with hs_string_free. */
HS_API hs_status hs_table_snapshots(const hs_table *t, char **out, hs_error *err);
/* JSON array of the snapshot log: [{"made_current_at":ms, "snapshot_id":id,
 * "parent_id":id|null, "is_current_ancestor":bool}]; caller frees *out with
 * hs_string_free. */
HS_API hs_status hs_table_history(const hs_table *t, char **out, hs_error *err);
/* JSON object of refs: {"main":{"snapshot-id":..,"type":"branch"},..};
 * caller frees with hs_string_free. */
HS_API hs_status hs_table_refs(const hs_table *t, char **out, hs_error *err);

/* Lists as Arrow streams.  Each of the *_stream functions below gives the
 * rows of the JSON form of the call it names as a stream of one record
 * batch (no batch when the list is empty) with typed columns; caller
 * releases *out.  Column names and types are listed at each; where
 * pyiceberg has the same list (Table.inspect.snapshots(), .history(),
 * .refs()) its first columns are pyiceberg's, same names and types. */
/* Snapshots: committed_at timestamp[ms], snapshot_id int64, parent_id int64
 * (null = none), operation utf8, manifest_list utf8, summary
 * map<utf8, utf8> (the summary without "operation"), then sequence_number
 * int64, schema_id int32, first_row_id int64, added_rows int64 (null when
 * the metadata has none). */
HS_API hs_status hs_table_snapshots_stream(const hs_table *t, struct ArrowArrayStream *out,
                                           hs_error *err);
/* The snapshot log: made_current_at timestamp[ms], snapshot_id int64,
 * parent_id int64 (null = none), is_current_ancestor bool. */
HS_API hs_status hs_table_history_stream(const hs_table *t, struct ArrowArrayStream *out,
                                         hs_error *err);
/* Refs: name utf8, type utf8 ("branch" | "tag"; pyiceberg writes them
 * upper-case), snapshot_id int64, max_reference_age_in_ms int64,
 * min_snapshots_to_keep int32, max_snapshot_age_in_ms int64 (null when
 * not set). */
HS_API hs_status hs_table_refs_stream(const hs_table *t, struct ArrowArrayStream *out,
                                      hs_error *err);

/* Makes snapshot_id (which must be an ancestor of the current snapshot) the
 * current snapshot of main, without a new snapshot.  HS_NOT_FOUND if unknown,
 * HS_INVALID if not an ancestor. */
HS_API hs_status hs_table_rollback_to_snapshot(hs_table *t, int64_t snapshot_id, hs_error *err);
/* Creates tag `name` at snapshot_id (-1 = the current snapshot).
 * HS_CONFLICT if a ref of that name exists. */
HS_API hs_status hs_table_create_tag(hs_table *t, const char *name, int64_t snapshot_id,
                              hs_error *err);
/* Removes a tag (HS_NOT_FOUND if absent; branches are refused). */
HS_API hs_status hs_table_remove_tag(hs_table *t, const char *name, hs_error *err);

/* Applies the changes of snapshot_id (not an ancestor of the current
 * snapshot: a snapshot of a branch, or one left aside by a rollback) to
 * main.  When its parent is the current snapshot, main fast-forwards to it
 * (no new snapshot).  Otherwise an "append" snapshot's added data files are
 * added again in a new "append" snapshot whose summary records
 * "source-snapshot-id" (Iceberg's cherrypick).  Other operations are
 * HS_UNSUPPORTED; a snapshot already picked, or one that is an ancestor of
 * the current snapshot, is HS_INVALID; an unknown id HS_NOT_FOUND. */
HS_API hs_status hs_table_cherrypick_snapshot(hs_table *t, int64_t snapshot_id, hs_error *err);

/* ------------------------------------------------------------------ */
/* Maintenance (docs/tables.md "Maintenance")                            */

/* Progress of a long operation: done of total units (rows, files); return
 * nonzero to cancel (the call then fails with HS_CANCELLED and commits
 * nothing).  Called from the calling thread. */
typedef int (*hs_progress_fn)(void *ctx, const char *what, int64_t done, int64_t total);

/* Each maintenance call below returns (result_json, may be NULL; caller
 * frees with hs_string_free) a JSON object that says what it did or, with
 * dry_run, what it would do; "deleted_files" lists {"path":..,"kind":..}
 * with kind one of "manifest-list", "manifest", "data", "position-deletes",
 * "deletion-vector", "equality-deletes", "index", "index-registry",
 * "metadata", "other". */

typedef struct hs_expire_options {
    size_t struct_size;           /* sizeof(hs_expire_options) or 0; see common.h */
    /* Expire snapshots older than this time (ms since the epoch).  Unset:
     * now minus table property history.expire.max-snapshot-age-ms (default
     * 5 days) when retain_last is 0 too, else no age limit. */
    int use_older_than; int64_t older_than_ms;
    /* Keep at least the retain_last most recent ancestors of every branch
     * head, whatever their age (0 = table property
     * history.expire.min-snapshots-to-keep, default 1; a branch's own
     * min-snapshots-to-keep / max-snapshot-age-ms override). */
    int retain_last;
    /* Also expire exactly these (borrowed); a current or referenced one is
     * HS_INVALID, an unknown one HS_NOT_FOUND. */
    const int64_t *snapshot_ids; int n_snapshot_ids;
    int dry_run;                  /* list, commit and delete nothing */
    int keep_files;               /* commit the expiry but delete no file */
} hs_expire_options;
#define HS_EXPIRE_OPTIONS_INIT {sizeof(hs_expire_options)}

/* Iceberg's ExpireSnapshots: removes from the metadata every snapshot the
 * options select, except the current snapshot, snapshots a branch or tag
 * points at, and the retained ancestors of each branch; the snapshot log
 * loses their entries.  After the commit it deletes the files that only
 * the expired snapshots reached: manifest lists, manifests, data and
 * delete files, their sidecar indexes, and index registry versions that no
 * longer name a reachable data file (never the current one).  Files still
 * reachable from any remaining snapshot are never deleted.  Result:
 * {"expired_snapshot_ids":[..], "deleted_files":[..], "dry_run":bool}. */
HS_API hs_status hs_table_expire_snapshots(hs_table *t, const hs_expire_options *opt,
                                           char **result_json, hs_error *err);

typedef struct hs_orphan_options {
    size_t struct_size;           /* sizeof(hs_orphan_options) or 0; see common.h */
    /* Only files last modified before this time (ms since the epoch) are
     * removed.  Unset: now minus 3 days (a safety window: files being
     * written by a commit in progress must not be taken for orphans). */
    int use_older_than; int64_t older_than_ms;
    int dry_run;
} hs_orphan_options;
#define HS_ORPHAN_OPTIONS_INIT {sizeof(hs_orphan_options)}

/* Deletes the files under the table's metadata/, data/ (and
 * write.data.path) and index/ directories that nothing references: not
 * the current metadata file, the metadata log's files, version-hint.text,
 * any snapshot's manifest list, manifests, data and delete files, the
 * statistics files the metadata lists, the
 * index registry versions named by those metadata files, nor the sidecars
 * their entries list.  Dot files (locks, temporaries) are kept, and so is
 * <table>/wal/ (the write-ahead log of append streams, hyperstream/stream.h:
 * unreferenced by Iceberg metadata but holding acknowledged rows).  Result:
 * {"deleted_files":[..], "dry_run":bool}. */
HS_API hs_status hs_table_remove_orphan_files(hs_table *t, const hs_orphan_options *opt,
                                              char **result_json, hs_error *err);

typedef struct hs_rewrite_manifests_options {
    size_t struct_size;           /* sizeof(hs_rewrite_manifests_options) or 0 */
    int64_t target_size_bytes;    /* 0 = commit.manifest.target-size-bytes (8 MiB) */
    int dry_run;
} hs_rewrite_manifests_options;
#define HS_REWRITE_MANIFESTS_OPTIONS_INIT {sizeof(hs_rewrite_manifests_options)}

/* Merges the current snapshot's small manifests (per content and partition
 * spec) into manifests of about the target size, in one "replace" snapshot
 * with the same data and delete files.  Nothing is committed when no
 * manifest would change.  Result: {"rewritten_manifests":N,
 * "added_manifests":M, "snapshot_id":id|null, "dry_run":bool}. */
HS_API hs_status hs_table_rewrite_manifests(hs_table *t, const hs_rewrite_manifests_options *opt,
                                            char **result_json, hs_error *err);

typedef struct hs_compact_options {
    size_t struct_size;           /* sizeof(hs_compact_options) or 0; see common.h */
    /* Files smaller than this are compacted, and output files are about
     * this size (0 = write.target-file-size-bytes, default 512 MiB). */
    int64_t target_file_size_bytes;
    /* A partition is rewritten when it has at least this many small files
     * (0 = 2), or any file with position deletes or deletion vectors. */
    int min_input_files;
    /* Only files that may hold rows matching this filter (partition and
     * bound pruning; whole files are rewritten).  NULL = all. */
    const char *filter;
    hs_progress_fn progress; void *progress_ctx;   /* optional: rows done of total */
    int dry_run;
    /* Z-order clustering: "a, b" (1 to 16 column names of scalar, ordered
     * types) puts each rewritten bin's rows in the z-order (Morton order)
     * of those columns instead of the table's sort order, so min/max
     * pruning works on each of them (Spark's rewrite_data_files strategy
     * "zorder").  HS_INVALID when the table has a sort order (its writes
     * sort by it) or a column is unknown or has no order.  NULL = off.
     * This field and the ones after it were appended after 0.1: set
     * struct_size (HS_COMPACT_OPTIONS_INIT) to use them. */
    const char *zorder_by;
    /* Iceberg's rewrite_data_files options delete-file-threshold and
     * delete-ratio-threshold: a file with position deletes or a deletion
     * vector is rewritten whatever its size (and makes its partition
     * qualify) only when it has at least delete_file_threshold delete files
     * or delete_ratio_threshold of its rows deleted; otherwise it is
     * treated as any file (rewritten when small, deletes applied).  0 = the
     * table properties hyperstream.compact.delete-file-threshold (default
     * 2^31-1) and hyperstream.compact.delete-ratio-threshold (default 0.3,
     * as Iceberg). */
    int delete_file_threshold;
    double delete_ratio_threshold;
    /* Size-tiered selection (what automatic stream maintenance uses): in a
     * partition, a small file larger than all its other small files
     * together is left as it is (unless it has many deletes), so each
     * compaction rewrites at most about twice the new data and a row is
     * rewritten about log2(partition size / flush size) times instead of
     * at every compaction.  Here a file of at least 3/4 of the target
     * size counts as full-size, as with Iceberg's min-file-size-bytes
     * default (compaction output lands just under the target).  0 = off
     * (Iceberg's bin-pack: every file under the target). */
    int size_tiered;
    /* Iceberg's partial-progress.enabled and partial-progress.max-commits:
     * the file groups (bins) are committed as they finish, in at most
     * max_commits "replace" snapshots (0 = 10; ceil(groups / max_commits)
     * groups each), so that a failure or cancel keeps the groups committed
     * before it (the error says how many).  Each commit is validated as a
     * whole compaction's is.  0 = one snapshot at the end. */
    int partial_progress;
    int max_commits;
    /* A bound on the bytes one compaction holds twice (what automatic
     * stream maintenance uses to keep storage near the live data): at most
     * this fraction of the live data files' bytes is rewritten by this
     * call, so that the new files written before the commit, and the
     * replaced ones waiting for expiry after it, stay within that fraction
     * of the table.  Files are taken smallest first, whole, across the
     * partitions in turn; a file larger than the budget is left as it is
     * (also when it has many deletes); a partition whose files within the
     * budget are fewer than min_input_files (and none has many deletes) is
     * left for a later call.  0 = no bound; in (0, 1]. */
    double max_rewrite_fraction;
} hs_compact_options;
#define HS_COMPACT_OPTIONS_INIT {sizeof(hs_compact_options)}

/* Iceberg's rewrite_data_files with the bin-pack strategy: within each
 * partition, the small data files (and files with many deletes, above) are read
 * with their deletes applied and written as new files of about the target
 * size (sorted by the table's sort order when it has one; partitioned by
 * the default spec), with every declared sidecar index built for them.
 * With zorder_by the rows of each bin are z-ordered (see above) and bins
 * are read whole.  The delete files that only applied to rewritten files are dropped.  One
 * "replace" snapshot; the table's rows are unchanged.  Validated against
 * concurrent commits on every attempt: appends made meanwhile are kept;
 * rows of rewritten files deleted meanwhile by position deletes or deletion
 * vectors (or whole files removed) are deleted from the new files in the
 * same snapshot ("carried_deletes"); concurrent equality deletes on a
 * rewritten file, or a rollback past the planned snapshot, fail it with
 * HS_CONFLICT and the table is unchanged.  On format v3 tables the moved
 * rows keep their _row_id and _last_updated_sequence_number (the new files
 * store both columns).
 * Result: {"rewritten_data_files":N, "added_data_files":M,
 * "removed_delete_files":D, "carried_deletes":C, "rewritten_bytes":B, "added_bytes":A,
 * "rows":R, "groups":[{"partition":..,"files":[paths]}], "snapshot_id":id|null,
 * "commits":K, "snapshot_ids":[ids] (partial progress: one a commit),
 * "dry_run":bool}. */
HS_API hs_status hs_table_compact(hs_table *t, const hs_compact_options *opt, char **result_json,
                                  hs_error *err);

typedef struct hs_rewrite_deletes_options {
    size_t struct_size;           /* sizeof(hs_rewrite_deletes_options) or 0; see common.h */
    /* Merged position delete files are about this size (0 = table
     * property write.delete.target-file-size-bytes, default 64 MiB). */
    int64_t target_file_size_bytes;
    /* A partition's position delete files are merged when it has at least
     * this many (0 = 2), or when one of them holds dangling deletes. */
    int min_input_files;
    int rewrite_all;              /* merge every partition's, however few */
    int dry_run;
} hs_rewrite_deletes_options;
#define HS_REWRITE_DELETES_OPTIONS_INIT {sizeof(hs_rewrite_deletes_options)}

/* Iceberg's rewrite_position_delete_files.  Format v2: per partition (spec
 * id + tuple), the position delete files are read and their deletes of
 * live data files written as fewer files of about the target size (rows
 * sorted by file_path, pos; duplicates once); deletes of data files that
 * are no longer live (or to which the file does not apply) are dropped
 * ("dangling"), and a delete file or deletion vector with only such rows
 * is removed.  Format v3 (deletion vectors): position delete files left
 * from v2 are folded into each data file's deletion vector (merged with
 * its existing one, as the spec asks when a vector is written), several
 * vectors of one data file are merged into one, dangling vectors removed;
 * a table whose files have at most one vector each and no position delete
 * files needs nothing ("nothing_to_do").  Equality deletes are left as
 * they are.  One "replace" snapshot with the same rows; the work is redone
 * against each commit attempt's base, so a delete committed concurrently
 * is never lost (the attempt that lost the race re-reads the deletes).
 * Result: {"format_version":V, "rewritten_delete_files":N,
 * "added_delete_files":M, "dangling_delete_files":D, "dangling_deletes":R,
 * "deletes":K, "converted_data_files":C, "rewritten_bytes":B,
 * "added_bytes":A, "groups":[{"partition":..,"spec_id":S,"files":[..]}],
 * "nothing_to_do":bool, "snapshot_id":id|null, "dry_run":bool}. */
HS_API hs_status hs_table_rewrite_position_delete_files(hs_table *t,
                                                        const hs_rewrite_deletes_options *opt,
                                                        char **result_json, hs_error *err);

/* ------------------------------------------------------------------ */
/* Evolution                                                             */

/* Applies the changes (JSON text form, see top) as one new schema that
 * becomes current.  Invalid changes (unknown column, unsafe promotion,
 * dropping a partition or sort source column, making a column required)
 * are HS_INVALID naming the change. */
HS_API hs_status hs_table_update_schema(hs_table *t, const char *changes_json, hs_error *err);
/* Makes `spec` (text form) the default partition spec; existing data files
 * keep their spec.  Partition fields equal (same source and transform) to a
 * field of an earlier spec keep its partition field id; new fields get new
 * ids above last-partition-id. */
HS_API hs_status hs_table_update_spec(hs_table *t, const char *spec, hs_error *err);
/* Makes `sort_order` (text form; NULL or "" = unsorted) the default sort
 * order; later appends sort what they write by it. */
HS_API hs_status hs_table_replace_sort_order(hs_table *t, const char *sort_order, hs_error *err);
/* Sets or removes table properties in one commit. */
HS_API hs_status hs_table_set_properties(hs_table *t, const char *const *keys,
                                  const char *const *values, int n, hs_error *err);
HS_API hs_status hs_table_remove_properties(hs_table *t, const char *const *keys, int n,
                                     hs_error *err);
/* JSON object of the table properties; caller frees with hs_string_free. */
HS_API hs_status hs_table_properties(const hs_table *t, char **out, hs_error *err);
/* Raises the format version (2 -> 3) without rewriting data: next-row-id
 * starts at 0; data manifests without first_row_id get one when the next
 * snapshot's manifest list is written (as the spec says), so older rows
 * read with a null _row_id until then.  Lowering is HS_INVALID. */
HS_API hs_status hs_table_upgrade_format_version(hs_table *t, int format_version, hs_error *err);

#ifdef __cplusplus
}
#endif
#endif
