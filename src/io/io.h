/*
 * io/io.h - the object-store interface every byte of table data goes through.
 *
 * A hs_file is a read-only, random-access object: size() and read_at(offset,
 * len).  Readers never assume a file descriptor, so the same Parquet and
 * Iceberg code reads local files, in-memory buffers and (later) S3 objects
 * through range requests.  A hs_wfile is an append-only writer that becomes
 * visible on close (local: write then fsync; S3: multipart upload).
 *
 * Backends: local fs (pread), memory (borrowed or owned bytes), and a fault
 * injection wrapper that fails the k-th call, used by crash-consistency tests.
 *
 * Identity: every handle carries the identity of the bytes it reads
 * (hs_file_id), fixed at open, so caches of anything decoded from a file
 * (Parquet footers, decompressed pages) key on it and never serve another
 * file's bytes under the same name:
 *
 *   backend   identity
 *   -------   -----------------------------------------------------------
 *   local     fstat at open: device, inode, size, mtime and ctime in ns
 *   memory    a process-unique instance number (each hs_mem_open is new)
 *   fault     the wrapped file's
 *   objects   (later) the object's ETag or version id in `version`
 *
 * A local file rewritten in place within one tick of the file system's
 * timestamp clock, at the same size, keeps its identity: the limit every
 * stat-based cache shares (table/fcache.c); writers that replace files by
 * rename (ours, Iceberg's) always change the inode.
 *
 * Ownership: hs_file_close / hs_wfile_abort free the handle and accept NULL.
 */
#ifndef HS_IO_IO_H
#define HS_IO_IO_H

#include "base/buf.h"
#include "base/error.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct hs_file hs_file;
typedef struct hs_wfile hs_wfile;

/* What identifies the bytes behind a handle (see the header comment). */
typedef struct hs_file_id {
    uint32_t kind;               /* HS_FILE_ID_* */
    uint64_t dev, ino;           /* local */
    int64_t mtime_ns, ctime_ns;  /* local */
    uint64_t seq;                /* memory: instance number */
    char version[72];            /* object stores: ETag / version id ("" = none) */
} hs_file_id;
enum { HS_FILE_ID_NONE = 0, HS_FILE_ID_LOCAL, HS_FILE_ID_MEMORY, HS_FILE_ID_OBJECT };

/* True when a and b (with their sizes) name the same bytes; never for kind NONE. */
bool hs_file_id_equal(const hs_file_id *a, uint64_t a_size, const hs_file_id *b,
                      uint64_t b_size);

typedef struct hs_io_range {
    uint64_t off, len;
} hs_io_range;

typedef struct hs_file_vtbl {
    hs_status (*read_at)(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err);
    void (*close)(hs_file *f);
    /* optional: a read-only mapping of the whole file (see hs_file_map) */
    hs_status (*map)(hs_file *f, const uint8_t **addr, hs_error *err);
    /* optional: the identity and size the file has now (see hs_file_check) */
    hs_status (*restat)(hs_file *f, hs_file_id *id, uint64_t *size, hs_error *err);
    /* optional: fetch these ranges now, together (see hs_file_will_need) */
    void (*will_need)(hs_file *f, const hs_io_range *r, size_t n);
} hs_file_vtbl;

struct hs_file {
    const hs_file_vtbl *vt;
    uint64_t size;     /* fixed at open */
    hs_file_id id;     /* fixed at open */
    char *name;        /* for error messages; owned */
    uint64_t n_reads;  /* statistics: read_at calls and bytes */
    uint64_t n_bytes_read;
};

typedef struct hs_wfile_vtbl {
    hs_status (*write)(hs_wfile *f, const void *p, size_t n, hs_error *err);
    hs_status (*close)(hs_wfile *f, hs_error *err);   /* commit + free */
    void (*abort)(hs_wfile *f);                       /* discard + free */
} hs_wfile_vtbl;

struct hs_wfile {
    const hs_wfile_vtbl *vt;
    uint64_t offset;   /* bytes written so far */
    char *name;
};

/* Reads exactly len bytes at off; a short file is HS_CORRUPT naming the file. */
HS_MUST_USE hs_status hs_file_read_at(hs_file *f, uint64_t off, size_t len, void *dst,
                                      hs_error *err);
/* Reads [off, off+len) into buf (replacing its contents). */
HS_MUST_USE hs_status hs_file_read_buf(hs_file *f, uint64_t off, size_t len, hs_buf *buf,
                                       hs_error *err);
void hs_file_close(hs_file *f);
/* A hint that the caller is about to read these ranges (any order, may
 * overlap): object stores fetch the ones not cached in parallel (nearby ones
 * coalesced) into the byte cache and return when they are there, so the
 * reads that follow cost one round trip in all instead of one each.  Errors
 * are left to those reads; a no-op for backends without a cache (local
 * files, memory). */
void hs_file_will_need(hs_file *f, const hs_io_range *r, size_t n);
/* A read-only memory mapping of the whole file (f->size bytes, > 0), owned by
 * the caller, who releases it with hs_file_unmap(addr, f->size); it stays
 * valid after hs_file_close.  HS_UNSUPPORTED where the backend has none
 * (memory, fault injection, object stores), for empty files, and when the
 * environment sets HS_MMAP=0.  A file truncated while mapped would fault
 * (SIGBUS) when the lost bytes are touched: the mapping is registered with
 * the SIGBUS guard below, which turns such a fault into zero pages and a
 * damaged mark; readers check hs_file_check before and hs_map_damaged after
 * touching mapped bytes. */
HS_MUST_USE hs_status hs_file_map(hs_file *f, const uint8_t **addr, hs_error *err);
void hs_file_unmap(const uint8_t *addr, uint64_t size);
/* HS_OK while the file still has the identity and size it had at open;
 * HS_IO ("x.parquet: file changed since it was opened (size 4096 -> 0)")
 * once it was truncated, rewritten or replaced in place.  Readers of a
 * mapping call it before touching mapped bytes (a truncated mapping faults
 * with SIGBUS); backends without a way to look again always pass.  One
 * fstat for local files. */
HS_MUST_USE hs_status hs_file_check(hs_file *f, hs_error *err);

/* Mappings made by hs_file_map are registered with a SIGBUS guard
 * (io/mapguard.c): a fault in a registered mapping (its file shrank while a
 * reader touched it) replaces the lost pages with zeros and marks the
 * mapping damaged instead of killing the process; other SIGBUS go to the
 * handler that was installed before.  Readers of a mapping call
 * hs_map_guard_check before a batch (re-installs the guard in front of a
 * handler the host installed later; cheap when nothing changed) and, after
 * it, fail the batch with HS_IO when hs_map_damaged(addr) (hs_map_fault_count
 * changes first, so the lookup is needed only then).  hs_map_register fails
 * (false) when the guard cannot be installed or every slot is taken; the
 * mapping must then not be used. */
bool hs_map_register(const uint8_t *addr, uint64_t len);
void hs_map_unregister(const uint8_t *addr);
void hs_map_guard_check(void);
uint64_t hs_map_fault_count(void);
bool hs_map_damaged(const uint8_t *addr);

HS_MUST_USE hs_status hs_wfile_write(hs_wfile *f, const void *p, size_t n, hs_error *err);
HS_MUST_USE hs_status hs_wfile_close(hs_wfile *f, hs_error *err);
void hs_wfile_abort(hs_wfile *f);

/* Local files.  hs_local_create writes to "<path>.tmp-<random>" and renames onto
 * path at close (so a crash never leaves a half-written file under its name);
 * with exclusive=true the final rename fails with HS_CONFLICT if path exists. */
HS_MUST_USE hs_status hs_local_open(const char *path, hs_file **out, hs_error *err);
HS_MUST_USE hs_status hs_local_create(const char *path, bool exclusive, hs_wfile **out,
                                      hs_error *err);
/* The same with flags: HS_WFILE_EXCLUSIVE as above; HS_WFILE_NO_SYNC skips the
 * fsync of the file and its directory (the rename stays atomic, but a power
 * loss may lose the file): for standalone files such as `parquet convert`
 * output, where durability is the caller's business, as with pyarrow. */
enum { HS_WFILE_EXCLUSIVE = 1, HS_WFILE_NO_SYNC = 2 };
HS_MUST_USE hs_status hs_local_create_ex(const char *path, int flags, hs_wfile **out,
                                         hs_error *err);
/* Test hook: after hs_io_set_sync_fault(k) (k >= 1) the k-th fsync from now
 * (of a written file or of its directory, by writers without
 * HS_WFILE_NO_SYNC) fails with EIO; 0 disarms.  Process-global. */
void hs_io_set_sync_fault(int64_t fail_at);
/* fsync(fd) (fdatasync when data_only) through the same fault hook, for
 * writers that keep their own descriptors (table/wal.c); 0 or -1 with errno.
 * hs_io_fsync_dir_fd: the same for the descriptor of directory `dir` (its
 * name goes to the trace hook). */
int hs_io_fsync_fd(int fd, bool data_only);
int hs_io_fsync_dir_fd(int fd, const char *dir);
/* syncfs() of the file system holding directory dir (through the trace
 * hook; the fault hook does not count it); 0 or -1 with errno. */
int hs_io_syncfs(const char *dir);
/* Test hook: every sync above and of written files calls fn(what, path,
 * ctx) just before it runs, with what = "file" (a written file, path = its
 * final name), "dir" (a directory, path = it), "fd" (hs_io_fsync_fd, path
 * NULL) or "fs" (hs_io_syncfs, path = its directory); from any thread.
 * NULL disarms.  Process-global. */
typedef void (*hs_io_sync_trace_fn)(const char *what, const char *path, void *ctx);
void hs_io_set_sync_trace(hs_io_sync_trace_fn fn, void *ctx);
/* Whole-file helpers. */
HS_MUST_USE hs_status hs_local_read_all(const char *path, hs_buf *out, hs_error *err);

/* URIs.  Each of these accepts a local path, a file:// URI (file:///x or
 * file:/x) or an object URI (s3://bucket/key, s3a://bucket/key; io/s3.c) and
 * dispatches on the scheme; any other "scheme://" is HS_UNSUPPORTED naming
 * it.  Exclusive create (HS_WFILE_EXCLUSIVE) is link() on local disk and a
 * conditional PUT (If-None-Match: *) on S3: HS_CONFLICT when the name exists.
 * On object stores HS_WFILE_NO_SYNC is meaningless (a PUT is durable when it
 * is acknowledged) and a writer publishes nothing until close. */
HS_MUST_USE hs_status hs_io_open(const char *uri, hs_file **out, hs_error *err);
HS_MUST_USE hs_status hs_io_create(const char *uri, int flags, hs_wfile **out, hs_error *err);
HS_MUST_USE hs_status hs_io_read_all(const char *uri, hs_buf *out, hs_error *err);
/* *exists, and *size when it exists (size may be NULL).  A local directory
 * exists (size 0); an object store has no directories. */
HS_MUST_USE hs_status hs_io_stat(const char *uri, bool *exists, uint64_t *size, hs_error *err);
/* A regular file or object: *exists, *size (may be NULL) and its modification
 * time in ms since the epoch (*mtime_ms; -1 when the store gave none; S3's
 * Last-Modified has seconds resolution).  Directories do not exist here. */
HS_MUST_USE hs_status hs_io_stat_mtime(const char *uri, bool *exists, uint64_t *size,
                                       int64_t *mtime_ms, hs_error *err);
/* Removes a file or object; a missing one is not an error. */
HS_MUST_USE hs_status hs_io_delete(const char *uri, hs_error *err);
/* Object stores only: the names under the "directory" uri (keys under
 * uri + "/"), as in io/s3.h's hs_s3_list (recursive: whole relative keys;
 * otherwise names of objects and common prefixes directly under it).
 * Caller frees each name and the array with hs_free.  HS_UNSUPPORTED for
 * local paths (catalog/fsio.c lists local directories). */
HS_MUST_USE hs_status hs_io_list(const char *uri, bool recursive, char ***names, size_t *n,
                                 hs_error *err);
/* An object of a listing: name relative to the listed prefix, size, and
 * Last-Modified in ms since the epoch (-1 when the store gave none). */
typedef struct hs_io_entry {
    char *name;
    uint64_t size;
    int64_t mtime_ms;
} hs_io_entry;
/* Object stores only: every object below the "directory" uri (keys under
 * uri + "/", at any depth) with its size and modification time, from the
 * listing itself (ListObjectsV2: one request per 1000 objects, no HEADs).
 * Caller frees with hs_io_entries_free.  HS_UNSUPPORTED for local paths. */
HS_MUST_USE hs_status hs_io_list_entries(const char *uri, hs_io_entry **out, size_t *n,
                                         hs_error *err);
void hs_io_entries_free(hs_io_entry *e, size_t n);   /* accepts NULL */
/* Object stores: warms the caches of io/s3.c with the objects' sizes,
 * identities and tails, in parallel, before a caller opens them one by one
 * (manifests of a scan plan).  A no-op for local paths. */
void hs_io_prefetch(const char *const *uris, size_t n);
/* hs_io_prefetch without waiting (object stores; uris are copied): for
 * objects a query will open after some dependent round trips, so their
 * fetch overlaps those.  A no-op for local paths. */
void hs_io_prefetch_async(const char *const *uris, size_t n);
/* Runs fn(arg) on a detached thread, for cache warming that needs more than
 * one dependent fetch (an index registry's root, then its segments); false
 * (fn not run, arg still the caller's) when the process is exiting or no
 * thread could be started.  Process exit waits up to 5 s for running ones,
 * as for hs_io_prefetch_async; hs_s3_reset waits for them too. */
bool hs_io_background(void (*fn)(void *arg), void *arg);
/* Waits until no hs_io_background task or asynchronous prefetch runs (tests
 * clearing caches that such tasks fill). */
void hs_io_background_wait(void);
/* True while the process exits (atexit) or a thread waits in
 * hs_io_background_wait (or hs_s3_reset): an hs_io_background task that
 * waits before its work (for an idle moment) should give the work up. */
bool hs_io_background_stop(void);
/* Storage settings for the objects under location, as a catalog vends them
 * with a table (Iceberg FileIO property names: s3.endpoint, s3.region,
 * s3.access-key-id, s3.secret-access-key, s3.session-token,
 * s3.path-style-access, client.region; io/s3.h's hs_s3_set_scope).  They
 * win over the environment for requests under location.  A no-op (HS_OK)
 * for local paths and file:// URIs, and when no key applies to the store. */
HS_MUST_USE hs_status hs_io_set_scope(const char *location, const char *const *keys,
                                      const char *const *values, size_t n, hs_error *err);
/* Vended credentials that expire (s3.session-token-expires-at-ms) or that
 * the store refuses as expired are fetched again by a refresher: the
 * catalog's callback fn(self, arg, err), which sets the scopes again with
 * hs_io_set_scope_ex(..., self, ...).  io/s3_scope.c calls it before a
 * request whose keys expire within 5 minutes (half their lifetime when
 * shorter) and once after a 403 ExpiredToken / InvalidToken, then retries;
 * many threads due at once run it once (the others wait and take the new
 * keys).  fn runs on whichever thread made the request, never two at once
 * for one refresher, with no io lock held.  Refcounted: hs_io_refresher_new
 * returns one reference (NULL when out of memory, after arg_free(arg)); each
 * scope holds its own; arg_free(arg) runs when the last goes. */
typedef struct hs_io_refresher hs_io_refresher;
typedef hs_status (*hs_io_refresh_fn)(hs_io_refresher *self, void *arg, hs_error *err);
hs_io_refresher *hs_io_refresher_new(hs_io_refresh_fn fn, void *arg, void (*arg_free)(void *));
void hs_io_refresher_release(hs_io_refresher *r);   /* NULL is fine */
uint64_t hs_io_refresher_generation(const hs_io_refresher *r);   /* refreshes run so far */
HS_MUST_USE hs_status hs_io_set_scope_ex(const char *location, const char *const *keys,
                                         const char *const *values, size_t n,
                                         hs_io_refresher *refresher, hs_error *err);
/* Remote signing (Iceberg's S3 signer API, io/s3_sign.c): a scope whose
 * keys say s3.remote-signing-enabled=true has each request signed by its
 * refresher's signer: fn(arg, request_json, response, cacheable, err) sends
 * the S3SignRequest to the catalog's signer endpoint and fills response
 * with the answer's body (*cacheable: its Cache-Control said "private");
 * an error when the signer refuses or cannot be reached (the S3 request
 * then fails with that message, nothing sent to the store).  fn runs under
 * the refresher's mutex (never beside its refresh fn). */
typedef hs_status (*hs_io_sign_fn)(void *arg, const char *request_json, hs_buf *response,
                                   bool *cacheable, hs_error *err);
void hs_io_refresher_set_signer(hs_io_refresher *r, hs_io_sign_fn fn);
/* The storage settings this process uses for the objects under location,
 * as Iceberg FileIO properties a catalog server vends to its clients:
 * s3.endpoint and s3.path-style-access (a custom endpoint), s3.region,
 * s3.access-key-id, s3.secret-access-key, s3.session-token and
 * s3.session-token-expires-at-ms (temporary keys; refreshed first when they
 * are due).  *keys and *values: parallel arrays of *n strings; the caller
 * hs_frees each string, then both arrays.  None (n = 0) for local paths. */
HS_MUST_USE hs_status hs_io_vend_properties(const char *location, char ***keys, char ***values,
                                            size_t *n, hs_error *err);

/* Object stores: the size and version (ETag) of an object, from io/s3.c's
 * HEAD cache without a request while it trusts the entry (HS_S3_HEAD_CACHE_S),
 * else by opening it (one GET of its tail, which then serves the caller's
 * reads from the byte cache).  Caches of decoded objects key on it, so an
 * object replaced under its name (a new ETag) is decoded again. */
HS_MUST_USE hs_status hs_io_object_identity(const char *uri, uint64_t *size, char version[72],
                                            hs_error *err);
/* Object stores: the whole object, whose size the caller knows (an index
 * registry records it), in one GET without an open before it (which would
 * cost a round trip of its own): its bytes into dst[0..size), and its size
 * and version into io/s3.c's HEAD cache, so hs_io_object_identity and
 * hs_io_open of it then cost no request.  HS_CONFLICT when the object does
 * not have `size` bytes (replaced or truncated); HS_UNSUPPORTED for local
 * paths (map or read them instead). */
HS_MUST_USE hs_status hs_io_read_whole(const char *uri, void *dst, uint64_t size, hs_error *err);
/* hs_io_read_whole of the first len bytes only (one ranged GET): the object
 * must have `size` bytes (HS_CONFLICT else), which with its version goes
 * into the HEAD cache as hs_io_read_whole's does. */
HS_MUST_USE hs_status hs_io_read_head(const char *uri, void *dst, uint64_t len, uint64_t size,
                                      hs_error *err);
/* Bytes [off, off + len) of a file or object that has `size` bytes (the
 * caller knows it: an index registry records it) into dst: on an object
 * store one ranged GET and no open before it (HS_CONFLICT when the object
 * does not have `size` bytes); a local file is read with pread after
 * checking its size the same way. */
HS_MUST_USE hs_status hs_io_read_range(const char *uri, void *dst, uint64_t off, uint64_t len,
                                       uint64_t size, hs_error *err);
/* hs_io_read_head started on a background thread (hs_io_background) and
 * not waited for: for the head of an object that a query will most likely
 * read once a dependent fetch of its own has answered (a vector sidecar's
 * head while the file's filter is evaluated), so the two share a round trip.
 * NULL when uri is not an object store's or no thread could start (then read
 * it the usual way).  Every started read must be finished:
 * hs_io_read_head_finish waits for it, frees the handle and on HS_OK hands
 * over the len bytes in *out (hs_malloc_aligned; free with
 * hs_free_aligned), or NULL out to drop them. */
typedef struct hs_io_pending hs_io_pending;
hs_io_pending *hs_io_read_head_start(const char *uri, uint64_t len, uint64_t size);
HS_MUST_USE hs_status hs_io_read_head_finish(hs_io_pending *p, uint8_t **out, hs_error *err);
/* Object stores: true when hs_io_object_identity of uri would cost no request
 * (io/s3.c trusts a size and version it holds). */
bool hs_io_identity_cached(const char *uri);
/* True for URIs of an object store (no directories, no rename, no flock). */
bool hs_io_is_object_uri(const char *uri);
/* A local path for a local path or file:// URI (borrowed from uri); the URI
 * itself for anything else. */
const char *hs_io_local_path(const char *uri);

/* Memory: reads `data` (borrowed: must outlive the file) or takes ownership
 * of a hs_buf's bytes when `own` is true (freed at close). */
HS_MUST_USE hs_status hs_mem_open(const char *name, const void *data, size_t len, bool own,
                                  hs_file **out, hs_error *err);
/* A writer into memory: writes append to the caller's hs_buf (borrowed until close). */
HS_MUST_USE hs_status hs_mem_create(hs_buf *target, hs_wfile **out, hs_error *err);

/* Fault injection: wraps `inner` (takes ownership); the `fail_at`-th read_at
 * call (1-based, counted in *counter shared across files) fails with HS_IO. */
HS_MUST_USE hs_status hs_fault_wrap(hs_file *inner, int64_t *counter, int64_t fail_at,
                                    hs_file **out, hs_error *err);
/* Test hook: while armed (fail_at >= 1), every local file hs_io_open opens is
 * wrapped by the fault backend above, all sharing one process-wide counter:
 * the fail_at-th read_at call from arming fails with HS_IO, its message ending
 * with strerror(errnum) when errnum != 0 (EIO).  Such files have no mapping,
 * so readers take their read path.  0 disarms (also for files wrapped
 * while armed).  hs_io_read_fault_count: read calls counted since arming. */
void hs_io_set_read_fault(int64_t fail_at, int errnum);
int64_t hs_io_read_fault_count(void);

#endif
