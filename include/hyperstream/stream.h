/*
 * hyperstream/stream.h - append streams: streaming ingest into an Iceberg
 * table through a write-ahead log, with near-real-time reads.
 *
 *   hs_stream *s;
 *   hs_stream_open(t, NULL, &s, &err);          recovers the log (below)
 *   hs_stream_write(s, &arrow_stream, &seq, &err);   (any number, any threads)
 *   hs_stream_flush(s, &err);                   optional: commit the tail now
 *   hs_stream_close(s, &err);                   flushes, then frees
 *
 * Write: the rows of one call become one record of the table's write-ahead
 * log (<table>/wal/, docs/streaming.md) and the call returns once the record
 * is durable under the fsync policy, with its sequence number (1, 2, ...
 * over the table's life).  Rows are matched to the table schema by name as
 * hs_table_append matches them (the schema current when the stream was
 * opened; reopen the stream after a schema change).
 *
 * Reads: scans of the handle the stream was opened on (hs_table_scan,
 * hs_scan_plan of the current snapshot, any filter) return the committed
 * rows plus the acknowledged rows not yet flushed, as an exact scan of both
 * would: acknowledged rows become visible within the refresh interval, or
 * at once after hs_stream_refresh.  They read null for the row lineage
 * columns.  hs_table_search / hs_table_search_batch on the handle merge
 * them (exact distances) into each query's top k.  Time travel (a snapshot
 * id, time or ref) and scans reading _file / _pos (DML) read only
 * committed rows.  Other handles and other processes see rows once flushed.
 *
 * Flush: the tail becomes Parquet data files (partitioned and sorted as an
 * append writes them, every declared index built) committed as ONE "append"
 * snapshot whose summary records "hyperstream.wal.seq" (the last seq it
 * holds; the table property hyperstream.wal.committed-seq too).  Triggers:
 * hyperstream.wal.flush-rows, flush-bytes, flush-interval-ms, a full memory
 * budget, hs_stream_flush, close.  Log segments are deleted only after the
 * commit is durable.
 *
 * Tables on object stores (s3://, s3a://): the log stays on local disk (an
 * object store cannot append or fsync), in wal_dir, else the table property
 * hyperstream.wal.dir, else $XDG_CACHE_HOME (or $HOME/.cache)/hyperstream/
 * wal/<table location made a file name>-<hash of it>; flushes commit to the
 * store through the catalog (conditional PUT for path tables).  Such a log
 * (any log outside <table>/wal) carries a random id (file wal-id in it) and
 * its committed seq is kept under keys suffixed ".<id>" (summary
 * hyperstream.wal.seq.<id>, property hyperstream.wal.committed-seq.<id>), so
 * streams on several machines, each with its own log, never take each
 * other's seqs for their own.  Recovery needs the same directory: reopen the
 * stream (or open the table) on the same machine with the same wal_dir.
 *
 * Recovery: hs_stream_open replays exactly the records with seq greater
 * than the committed seq of the table's current metadata, so a crash at any
 * point (even between a commit and the log's truncation) loses no
 * acknowledged row and duplicates none; a torn last record is cut off.
 *
 * Table properties (defaults in brackets; docs/streaming.md):
 *   hyperstream.wal.fsync               batch | interval | none   [batch]
 *       batch: fdatasync before each write returns; interval: group commit,
 *       one fdatasync per interval for every write waiting; none: written to
 *       the OS (survives a process crash, not a power loss)
 *   hyperstream.wal.fsync-interval-ms   group commit interval     [5]
 *   hyperstream.wal.flush-rows          rows that trigger a flush [100000]
 *   hyperstream.wal.flush-bytes         bytes that trigger one    [64 MiB]
 *   hyperstream.wal.flush-interval-ms   age of the oldest unflushed row
 *                                       that triggers one         [5000]
 *   hyperstream.wal.memory-bytes        budget of the unflushed tail [256 MiB]
 *   hyperstream.wal.busy-timeout-ms     how long a write waits for room [10000]
 *   hyperstream.wal.refresh-ms          visibility interval; 0 = at once [1000]
 *   hyperstream.wal.segment-bytes       log segment size          [64 MiB]
 *   hyperstream.wal.dir                 local directory of the log [<table>/wal;
 *                                       object stores: the user's cache, above]
 *
 * Backpressure: a write that would take the tail past the memory budget
 * waits for a flush up to the busy timeout, then fails with HS_BUSY (the
 * record is not written; retry later).  A flush that keeps failing (disk
 * full) thus turns into HS_BUSY, never into unbounded memory.
 *
 * Threads: hs_stream_write may be called from several threads at once
 * (group commit acknowledges them together); the other calls from one
 * thread.  One stream per table at a time (an flock on wal/LOCK: a second
 * hs_stream_open, in any process, is HS_BUSY).  A background thread syncs,
 * refreshes and flushes.  The stream borrows the table's catalog (close the
 * stream first); the table handle itself may be closed before the stream.
 */
#ifndef HYPERSTREAM_STREAM_H
#define HYPERSTREAM_STREAM_H

#include "hyperstream/arrow_c_abi.h"
#include "hyperstream/common.h"
#include "hyperstream/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_stream hs_stream;

enum { HS_WAL_FSYNC_DEFAULT = 0, HS_WAL_FSYNC_BATCH, HS_WAL_FSYNC_INTERVAL, HS_WAL_FSYNC_NONE };

typedef struct hs_stream_options {
    size_t struct_size;        /* sizeof(hs_stream_options) or 0; see common.h */
    /* Each 0 = the table property (or its default). */
    int fsync_policy;          /* HS_WAL_FSYNC_* */
    int64_t fsync_interval_ms;
    int64_t flush_rows, flush_bytes, flush_interval_ms;
    int64_t memory_bytes, busy_timeout_ms;
    int64_t refresh_ms;        /* < 0: every acknowledged row visible at once */
    int64_t segment_bytes;
    /* Appended after 0.1.  A local directory for the write-ahead log; NULL =
     * the table property hyperstream.wal.dir, else <table>/wal for a local
     * table and, for a table on an object store (s3://), a directory under
     * the user's cache keyed by the table location (below). */
    const char *wal_dir;
} hs_stream_options;
#define HS_STREAM_OPTIONS_INIT {sizeof(hs_stream_options)}

typedef struct hs_stream_stats {
    size_t struct_size;        /* set by the caller; see common.h, "Output structs" */
    int64_t acked_seq;         /* last acknowledged (durable) record */
    int64_t committed_seq;     /* last record in a commit */
    int64_t visible_seq;       /* last record scans of the handle see */
    int64_t tail_rows, tail_bytes;   /* acknowledged, not yet committed */
    int64_t wal_bytes;         /* bytes in live log segments */
    int64_t wal_segments;
    int64_t flushes;           /* commits made by this stream */
    int64_t rows_written;      /* by this stream's writes */
    int64_t replayed_records, replayed_rows;   /* recovered at open */
    int64_t busy_rejections;   /* writes that got HS_BUSY */
    /* automatic maintenance after flushes (hyperstream.wal.compact-min-files,
     * hyperstream.wal.compact-max-rewrite-fraction,
     * hyperstream.wal.expire-age-ms; docs/streaming.md): commits made,
     * attempts that failed */
    int64_t compactions, expirations, maintenance_failures;
} hs_stream_stats;
#define HS_STREAM_STATS_INIT {sizeof(hs_stream_stats)}

/* Opens the append stream of table t (writable, through a catalog; local
 * or object-store tables, the log on local disk), recovering its log: records not in a commit are replayed
 * into the tail (and are visible to scans of t at once).  opt may be NULL.
 * Caller frees *out with hs_stream_close (or hs_stream_abort). */
HS_API hs_status hs_stream_open(hs_table *t, const hs_stream_options *opt, hs_stream **out,
                                hs_error *err);
/* Appends the rows of `in` (moved: released by this call, also on failure)
 * as one log record; returns once it is durable under the fsync policy.
 * *seq (may be NULL) gets its sequence number (0 when `in` had no rows:
 * nothing is written).  HS_BUSY: the memory budget stayed full for the busy
 * timeout.  HS_IO: the log could not be written or synced; after a failed
 * sync the stream refuses writes (reopen it: recovery reads what is on
 * disk, so a record whose write failed may or may not come back). */
HS_API hs_status hs_stream_write(hs_stream *s, struct ArrowArrayStream *in, int64_t *seq,
                                 hs_error *err);
/* Commits every acknowledged row now (one snapshot; nothing when none). */
HS_API hs_status hs_stream_flush(hs_stream *s, hs_error *err);
/* Makes every acknowledged row visible to scans of the table handle now. */
HS_API hs_status hs_stream_refresh(hs_stream *s, hs_error *err);
HS_API void hs_stream_get_stats(hs_stream *s, hs_stream_stats *out);
/* Flushes and frees the stream (always freed; the result is the flush's:
 * on failure the rows stay in the log and the next open recovers them). */
HS_API hs_status hs_stream_close(hs_stream *s, hs_error *err);
/* Frees the stream without flushing: acknowledged rows stay in the log for
 * the next open (as after a crash).  Accepts NULL. */
HS_API void hs_stream_abort(hs_stream *s);

#ifdef __cplusplus
}
#endif
#endif
