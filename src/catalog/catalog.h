/*
 * catalog/catalog.h - where a table's current metadata lives, and the atomic
 * commit that moves it.
 *
 * A catalog maps a table identifier to the location of its current
 * metadata.json and swaps that location atomically on commit.  Two
 * implementations sit behind one opaque handle (a vtable inside catalog.c):
 *
 *   kind   identifier                   current metadata             commit (atomic step)
 *   -----  ---------------------------  ---------------------------  -----------------------------
 *   path   a directory or file:// URI   <t>/metadata/version-hint    create v<N+1>.metadata.json
 *          (relative ones are under     .text = "<N>" (no newline),  only if absent (link()), then
 *          the root given at open)      then probe v<N+1>, v<N+2>..  rewrite the hint (tmp+rename)
 *   sql    "ns1.ns2.table" (the last    iceberg_tables row's         write <loc>/metadata/<00007>-
 *          dot splits off the name)     metadata_location            <uuid>.metadata.json, then
 *                                                                    UPDATE ... WHERE
 *                                                                    metadata_location = <base>
 *
 * The SQL catalog is a SQLite file with exactly the schema of pyiceberg's
 * SqlCatalog and Java's JdbcCatalog (iceberg_tables, iceberg_namespace_
 * properties), so either opens our file and we open theirs.
 *
 * Commit protocol (both kinds): the caller loads the table (getting the
 * metadata and its location = the "base"), builds the new metadata, and calls
 * cat_commit with the base location.  If another writer committed since the
 * base was loaded the commit fails with HS_CONFLICT and nothing visible
 * changed (a fully written orphan metadata file may remain; never a half-
 * written one, since every file is written under a temporary name and
 * published by link/rename).  cat_commit_with_retry wraps this in a loop:
 * reload, let the caller rebase its change on the fresh base (or refuse with
 * HS_CONFLICT when the change is no longer valid), back off with jitter,
 * retry.
 *
 * Once the atomic step succeeded the commit is reported as done even if a
 * later best-effort step (rewriting version-hint.text) fails: readers probe
 * upward from a stale hint.  So an error return always means "the table is
 * still at the base".
 *
 * Crash consistency: every catalog file operation passes a fault point
 * (cat_io_fault_point); cat_set_io_fault(k) makes the k-th one fail with
 * HS_IO, so a test can break a commit at every step and check that the table
 * loads at exactly the old or the new metadata.  Other modules (table
 * operations writing manifests) may route their writes through cat_io_create
 * to take part in the same count.
 *
 * Core functions take and return metadata as JSON text (the catalog only
 * needs "location", "properties" and, for path tables, nothing at all); the
 * cat_load / cat_commit / cat_create / cat_commit_with_retry variants wrap them
 * with the iceberg model (ice_metadata_parse / ice_metadata_to_json).
 *
 * Ownership: cat_catalog handles are freed by cat_free (accepts NULL).  Every
 * char * / char ** returned through an out parameter is owned by the caller
 * and freed with hs_free (string arrays: cat_strv_free).  Catalog handles are
 * not thread-safe; use one per thread (they are cheap) - concurrent writers
 * in threads or processes are exactly what the commit protocol serves.  A
 * SQL catalog handle holds a SQLite connection: do not use it across fork();
 * open one per process.  SQLite lock waits time out after 60 s
 * (cat_sql_set_busy_timeout); a lock still busy then is HS_CONFLICT, which
 * the retry loop retries.
 *
 * Table identity: cat_commit_with_retry* checks on every attempt that the
 * loaded base has the table-uuid the commit started with (the cached base's,
 * else the first base's): a table dropped and created again under the same
 * identifier is never rebased onto (HS_CONFLICT, not retried).  Path commits
 * also compare the new metadata's table-uuid with the base file's under the
 * commit lock, which closes the case where the new table reached the same
 * v<N> name as the writer's base.
 */
#ifndef HS_CATALOG_CATALOG_H
#define HS_CATALOG_CATALOG_H

#include "base/buf.h"
#include "base/error.h"
#include "io/io.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cat_catalog cat_catalog;
/* Defined by iceberg/model.h (a repeated identical typedef is valid C11). */
typedef struct ice_table_metadata ice_table_metadata;

typedef enum cat_kind { CAT_PATH = 1, CAT_SQL = 2, CAT_REST = 3 } cat_kind;

/* ---- opening ------------------------------------------------------------- */

/* Path tables.  root may be NULL: identifiers are then absolute paths (or
 * paths relative to the working directory, or file:// URIs). */
HS_MUST_USE hs_status cat_path_open(const char *root, cat_catalog **out, hs_error *err);

/* SQL catalog in the SQLite file db_path (created with the pyiceberg/JDBC
 * schema when absent).  catalog_name is the catalog_name column value
 * (pyiceberg: the name given to SqlCatalog(...), e.g. "default").  warehouse
 * is where new tables go: the namespace's "location" property + /<table>, else
 * <warehouse>/<ns>/<table> as pyiceberg 0.12 does; a plain path or file://
 * URI; NULL = the directory holding db_path. */
HS_MUST_USE hs_status cat_sql_open(const char *db_path, const char *catalog_name,
                                   const char *warehouse, cat_catalog **out, hs_error *err);

/* The SQL catalog's SQLite busy timeout (default 60000 ms; for tests and
 * servers that prefer to fail fast).  A lock still held when it runs out is
 * HS_CONFLICT, which the commit loop retries.  No-op for path catalogs. */
void cat_sql_set_busy_timeout(cat_catalog *c, int ms);

/* An Iceberg REST catalog at uri ("http(s)://host:port[/path]"), catalog/rest.c.
 * options_json (NULL = none): a JSON object of strings - "token" (bearer),
 * "credential" ("client_id:client_secret", OAuth2 client credentials),
 * "scope", "oauth2-server-uri", "warehouse", "prefix".  Fetches the
 * server's config (its overrides win).  Identifiers are "ns.table". */
HS_MUST_USE hs_status cat_rest_open(const char *uri, const char *options_json, cat_catalog **out,
                                    hs_error *err);

void cat_free(cat_catalog *c);
cat_kind cat_get_kind(const cat_catalog *c);

/* ---- tables: JSON core ---------------------------------------------------- */

/* The location a new table `ident` gets (path: the resolved directory; sql:
 * see cat_sql_open).  Caller frees *location with hs_free. */
HS_MUST_USE hs_status cat_default_location(cat_catalog *c, const char *ident, char **location,
                                           hs_error *err);

/* Reads the current metadata of `ident`: its bytes into *json (replacing the
 * contents, NUL-terminated) and its location into *metadata_location (may be
 * NULL if not wanted; caller frees with hs_free).  HS_NOT_FOUND when the
 * table does not exist; HS_CORRUPT naming the file for unreadable pointers. */
HS_MUST_USE hs_status cat_load_json(cat_catalog *c, const char *ident, hs_buf *json,
                                    char **metadata_location, hs_error *err);

/* The current metadata location of `ident` only, without reading the file
 * (path: the version hint and the probe for newer versions; sql: the
 * catalog row; REST: the load-table response).  Caller frees *out with
 * hs_free.  Errors as cat_load_json's. */
HS_MUST_USE hs_status cat_current_location(cat_catalog *c, const char *ident, char **out,
                                           hs_error *err);

/* Metadata documents read by cat_load_json (and so cat_load) since the
 * process started: a trace counter for tests of idle paths. */
int64_t cat_load_count(void);

/* Registers a new table whose first metadata is json (its "location" field
 * decides where the metadata file goes for sql; path tables always use the
 * identifier's directory).  HS_CONFLICT when the table already exists.
 * *metadata_location (may be NULL) receives the new metadata file's location. */
HS_MUST_USE hs_status cat_create_json(cat_catalog *c, const char *ident, const char *json,
                                      size_t len, char **metadata_location, hs_error *err);

/* Makes json the current metadata if the current one is still
 * base_metadata_location; otherwise HS_CONFLICT and nothing visible changed.
 * *new_location (may be NULL) receives the new metadata file's location. */
HS_MUST_USE hs_status cat_commit_json(cat_catalog *c, const char *ident,
                                      const char *base_metadata_location, const char *json,
                                      size_t len, char **new_location, hs_error *err);

/* Removes the table from the catalog.  purge=true also deletes the files
 * under its location (local storage only).  Path tables without purge lose
 * their metadata/ directory (metadata files first, oldest up, then the rest),
 * keeping data/ and index/; under the commit lock (see cat_io_lock). */
HS_MUST_USE hs_status cat_drop(cat_catalog *c, const char *ident, bool purge, hs_error *err);

/* Renames a table (sql only: path tables are their directory, HS_UNSUPPORTED).
 * HS_NOT_FOUND if from is missing or to's namespace does not exist,
 * HS_CONFLICT if to exists. */
HS_MUST_USE hs_status cat_rename(cat_catalog *c, const char *from, const char *to,
                                 hs_error *err);

/* Table names (without namespace) in namespace ns, sorted.  Path catalogs:
 * ns is a directory relative to the root ("" or NULL = the root itself) and a
 * table is a subdirectory holding metadata/ with a metadata file.  Caller
 * frees *names with cat_strv_free(*names, *n). */
HS_MUST_USE hs_status cat_list(cat_catalog *c, const char *ns, char ***names, size_t *n,
                               hs_error *err);

/* Registers an existing metadata file as table `ident` (Iceberg's
 * registerTable): the catalog points at metadata_location itself (no copy
 * is written).  HS_INVALID when the file does not exist or is not table
 * metadata; HS_NOT_FOUND when the namespace does not exist; HS_CONFLICT
 * when ident exists, unless overwrite (then it points at the new file).
 * Path catalogs: HS_UNSUPPORTED (a path table is its directory; open the
 * file with hs_table_open_metadata). */
HS_MUST_USE hs_status cat_register(cat_catalog *c, const char *ident,
                                   const char *metadata_location, bool overwrite,
                                   hs_error *err);

/* View names (without namespace) in namespace ns, sorted.  REST: GET
 * namespaces/{ns}/views (a server without views - 404 or 400 on the route,
 * or no "views" endpoint in its config - lists none); SQL: rows of
 * iceberg_type 'VIEW' (JDBC's V1 schema); path catalogs have none.  Caller
 * frees with cat_strv_free. */
HS_MUST_USE hs_status cat_list_views(cat_catalog *c, const char *ns, char ***names, size_t *n,
                                     hs_error *err);

/* Whether ident exists (HS_OK with *exists set; errors only for I/O). */
HS_MUST_USE hs_status cat_exists(cat_catalog *c, const char *ident, bool *exists,
                                 hs_error *err);

/* ---- namespaces (sql; path catalogs answer HS_UNSUPPORTED) ---------------- */

/* Creates namespace ns ("a" or "a.b") with n properties keys[i]=values[i]
 * (n = 0 stores {"exists": "true"} as pyiceberg/JDBC do).  HS_CONFLICT if it
 * exists. */
HS_MUST_USE hs_status cat_namespace_create(cat_catalog *c, const char *ns,
                                           const char *const *keys, const char *const *values,
                                           size_t n, hs_error *err);
/* Namespaces directly under parent (NULL or "" = top level), sorted; a
 * namespace exists if it has properties or tables.  Caller frees with
 * cat_strv_free. */
HS_MUST_USE hs_status cat_namespace_list(cat_catalog *c, const char *parent, char ***names,
                                         size_t *n, hs_error *err);
/* Drops an empty namespace: HS_NOT_FOUND if absent, HS_INVALID if it holds tables. */
HS_MUST_USE hs_status cat_namespace_drop(cat_catalog *c, const char *ns, hs_error *err);
/* Properties of ns (HS_NOT_FOUND if absent); caller frees both arrays with
 * cat_strv_free(.., *n). */
HS_MUST_USE hs_status cat_namespace_properties(cat_catalog *c, const char *ns, char ***keys,
                                               char ***values, size_t *n, hs_error *err);
/* Sets n_set properties and removes n_remove keys of ns. */
HS_MUST_USE hs_status cat_namespace_update(cat_catalog *c, const char *ns,
                                           const char *const *set_keys,
                                           const char *const *set_values, size_t n_set,
                                           const char *const *remove_keys, size_t n_remove,
                                           hs_error *err);

void cat_strv_free(char **v, size_t n);

/* ---- retry ---------------------------------------------------------------- */

/* Retry policy, from the base metadata's table properties (Java's names):
 *   commit.retry.num-retries      retries after the first attempt; default 10
 *                                 (Java: 4 - local commits are cheap and
 *                                 concurrent appends always rebase, so we
 *                                 try harder before reporting a conflict;
 *                                 hyperstream/table.h says the same)
 *   commit.retry.min-wait-ms      default 100
 *   commit.retry.max-wait-ms      default 60000
 *   commit.retry.total-timeout-ms default 1800000
 * Wait before retry i (1-based): min(max, min * 2^(i-1)) scaled by a random
 * factor in [0.5, 1.0) (jitter), cut to the remaining total time. */
typedef struct cat_retry_policy {
    int num_retries;
    int64_t min_wait_ms;
    int64_t max_wait_ms;
    int64_t total_timeout_ms;
} cat_retry_policy;

/* Reads the policy from a metadata JSON's "properties" (defaults for absent
 * or unparsable values). */
void cat_retry_policy_from_json(const char *json, size_t len, cat_retry_policy *out);

/* JSON callback: given the freshly loaded base (json + its location, for the
 * metadata-log), write the new metadata into *new_json (an empty buffer the
 * loop owns).  Return HS_OK to commit it, HS_CONFLICT (with a message) when
 * the change cannot be applied on this base - the loop then stops and returns
 * HS_CONFLICT - or any other error to stop with it. */
typedef hs_status (*cat_rebase_json_fn)(void *ctx, const char *base_json, size_t base_len,
                                        const char *base_location, hs_buf *new_json,
                                        hs_error *err);

/* Load -> callback -> commit, retried on HS_CONFLICT from the commit with
 * backoff.  When the retries run out: HS_CONFLICT "gave up after N attempts".
 * *attempts (may be NULL) receives the number of commit attempts made. */
HS_MUST_USE hs_status cat_commit_json_with_retry(cat_catalog *c, const char *ident,
                                                 cat_rebase_json_fn fn, void *ctx,
                                                 char **new_location, int *attempts,
                                                 hs_error *err);

/* ---- tables: model wrappers (iceberg/model.h's ice_metadata_*) ------------ */

/* As cat_load_json, parsed into *out (a zeroed struct owned by the caller:
 * free its contents with ice_metadata_free; left zeroed on failure).  Parse
 * errors are prefixed with the metadata file's location. */
HS_MUST_USE hs_status cat_load(cat_catalog *c, const char *ident, ice_table_metadata *out,
                               char **metadata_location, hs_error *err);
HS_MUST_USE hs_status cat_create(cat_catalog *c, const char *ident,
                                 const ice_table_metadata *meta, char **metadata_location,
                                 hs_error *err);
/* Serializes new_meta and commits it as cat_commit_json does.  If new_meta's
 * metadata log does not already end with base_metadata_location, the written
 * file gets an entry {base's last-updated-ms, base location} (the base file is
 * read for its timestamp), keeping the newest
 * write.metadata.previous-versions-max (default 100) entries, as Java does. */
HS_MUST_USE hs_status cat_commit(cat_catalog *c, const char *ident,
                                 const char *base_metadata_location,
                                 const ice_table_metadata *new_meta, char **new_location,
                                 hs_error *err);

/* Model callback: fill *new_meta (zeroed; the loop frees it with
 * ice_metadata_free) from current_base (typically ice_metadata_copy, then
 * mutate).  Same return rules as the JSON callback.  The loop adds the
 * metadata-log entry for base_location (with the base's last-updated-ms)
 * unless the callback already did. */
typedef hs_status (*cat_rebase_fn)(void *ctx, const ice_table_metadata *current_base,
                                   const char *base_location, ice_table_metadata *new_meta,
                                   hs_error *err);
HS_MUST_USE hs_status cat_commit_with_retry(cat_catalog *c, const char *ident,
                                            cat_rebase_fn fn, void *ctx, char **new_location,
                                            int *attempts, hs_error *err);
/* The same, for a caller that holds the table's parsed metadata
 * (cached_base, read from cached_location): when the catalog still points
 * there, the first attempt rebases on cached_base without reading the file.
 * committed (may be NULL; zeroed by the caller) receives the metadata that was
 * written, metadata-log entry included (the caller frees it with
 * ice_metadata_free), so the caller can keep it as its next cached base. */
HS_MUST_USE hs_status cat_commit_with_retry_ex(cat_catalog *c, const char *ident,
                                               const ice_table_metadata *cached_base,
                                               const char *cached_location, cat_rebase_fn fn,
                                               void *ctx, char **new_location,
                                               ice_table_metadata *committed, int *attempts,
                                               hs_error *err);

/* ---- file helpers with fault points (fsio.c) ------------------------------ */

/* Fault injection for crash-consistency tests: after cat_set_io_fault(k)
 * (k >= 1) the k-th fault point from now fails with HS_IO "injected fault";
 * 0 disables.  The counter is process-global (not thread-safe: tests only).
 * cat_io_fault_count() = fault points passed since the last cat_set_io_fault. */
void cat_set_io_fault(int64_t fail_at);
/* The same, modelling an errno (ENOSPC, EIO): the message ends with its
 * strerror text, and with ENOSPC a failing write first writes half of its
 * bytes (a disk filling up mid-write), so callers must discard the prefix. */
void cat_set_io_fault_errno(int64_t fail_at, int errnum);
int64_t cat_io_fault_count(void);
/* Test hook: fn(what, ctx) runs at every fault point (before the fault
 * check), so a test can act at an exact step of a commit (drop the table
 * between a commit's checks and its atomic step).  NULL disarms.  Tests only. */
void cat_set_io_hook(void (*fn)(const char *what, void *ctx), void *ctx);
/* Counts one I/O step; fails when it is the chosen one.  `what` names the step
 * for the message ("write v3.metadata.json"). */
HS_MUST_USE hs_status cat_io_fault_point(const char *what, hs_error *err);

/* Turns "file:///x" and "file:/x" into "/x"; returns other strings as they are
 * (borrowed: points into s).  s3:// and s3a:// URIs stay URIs: every cat_io_*
 * helper accepts them (io.h's URI layer); on object stores mkdirs is a no-op,
 * an empty prefix lists as HS_NOT_FOUND, and the commit lock is none (the
 * conditional PUT is the commit point) unless the setting s3_lock_dir
 * (HS_S3_LOCK_DIR) names a local lock directory. */
const char *cat_local_path(const char *uri);

/* Creates a file through hs_local_create, wrapped so that every write and the
 * close pass a fault point (a failed write/close aborts: no file appears). */
HS_MUST_USE hs_status cat_io_create(const char *path, bool exclusive, hs_wfile **out,
                                    hs_error *err);
/* The same with io.h's HS_WFILE_* flags (EXCLUSIVE, NO_SYNC). */
HS_MUST_USE hs_status cat_io_create_ex(const char *path, int flags, hs_wfile **out,
                                       hs_error *err);
/* While a begin is in force (counted; every begin needs its end), files that
 * cat_io_create_ex creates under local directory `dir` are synced (file, then
 * directory) even when their flags say HS_WFILE_NO_SYNC, from any thread.
 * An append stream's flush uses it so that its commit is durable before the
 * log is cut, without syncing the whole file system (table/stream.c). */
HS_MUST_USE hs_status cat_io_sync_under_begin(const char *dir, hs_error *err);
void cat_io_sync_under_end(const char *dir);
/* Writes a whole small file (through cat_io_create / cat_io_create_ex). */
HS_MUST_USE hs_status cat_io_write_all(const char *path, bool exclusive, const void *p,
                                       size_t n, hs_error *err);
HS_MUST_USE hs_status cat_io_write_all_ex(const char *path, int flags, const void *p, size_t n,
                                          hs_error *err);
/* Reads a whole small file (one fault point).  HS_NOT_FOUND when absent. */
HS_MUST_USE hs_status cat_io_read_all(const char *path, hs_buf *out, hs_error *err);
/* Whether a file exists (one fault point). */
HS_MUST_USE hs_status cat_io_exists(const char *path, bool *exists, hs_error *err);
/* Removes a file (one fault point); an absent file is not an error. */
HS_MUST_USE hs_status cat_io_unlink(const char *path, hs_error *err);
/* mkdir -p (one fault point). */
HS_MUST_USE hs_status cat_io_mkdirs(const char *path, hs_error *err);
/* Names in a directory (no "." / ".."), unsorted; caller frees with
 * cat_strv_free.  HS_NOT_FOUND when the directory is absent. */
HS_MUST_USE hs_status cat_io_list_dir(const char *path, char ***names, size_t *n,
                                      hs_error *err);
/* rm -r (one fault point for the whole tree). */
HS_MUST_USE hs_status cat_io_remove_tree(const char *path, hs_error *err);

/* The commit lock of a path table: an exclusive flock() of
 * <metadata_dir>/.hs-commit.lock (created on first use), held by commit,
 * create and drop so that they exclude each other (a drop can no longer
 * remove the base while a commit links v<N+1> above it).  Blocks while
 * another process or handle holds it.  HS_NOT_FOUND when metadata_dir does
 * not exist.  *fd receives the lock; release with cat_io_unlock.  Readers
 * never lock; other engines ignore the file (it is not v<N>.metadata.json).
 * The lock belongs to the open file description: a child forked while a
 * commit runs holds it too until it exits or execs (O_CLOEXEC). */
#define CAT_LOCK_NAME ".hs-commit.lock"
HS_MUST_USE hs_status cat_io_lock(const char *metadata_dir, int *fd, hs_error *err);
void cat_io_unlock(int fd);

/* A random RFC 4122 version-4 UUID as 36 characters + NUL. */
void cat_uuid4(char out[37]);

#endif
