/*
 * table/wal.h - the write-ahead log of append streams (table/stream.c): the
 * segment files under <table>/wal/, their records, and the codec of a
 * record's payload (the rows of one acknowledged batch).
 *
 * The on-disk format, the recovery rules and the fsync policies are
 * described at the top of wal.c.  This interface is not thread-safe: the
 * stream serializes calls on one wal with its own lock.
 *
 * Ownership: wal_close frees the handle (accepts NULL); decoded batches are
 * the caller's (hs_batch_free).
 */
#ifndef HS_TABLE_WAL_H
#define HS_TABLE_WAL_H

#include "base/buf.h"
#include "base/error.h"
#include "columnar/column.h"
#include <stdbool.h>
#include <stdint.h>

#define WAL_SEG_HEADER 64          /* bytes of a segment header */
#define WAL_REC_HEADER 24          /* bytes of a record header */
#define WAL_MAX_PAYLOAD ((uint32_t)1 << 30)

/* ---- payload codec (untrusted on recovery: wal_batch_decode validates) ---- */

/* Appends the encoding of batch b (columns of `schema_id`'s schema, in its
 * order) to out. */
HS_MUST_USE hs_status wal_batch_encode(const hs_batch *b, int32_t schema_id, hs_buf *out,
                                       hs_error *err);
/* The schema id a payload was written with (HS_CORRUPT when too short). */
HS_MUST_USE hs_status wal_payload_schema_id(const uint8_t *p, size_t n, int32_t *out,
                                            hs_error *err);
/* Decodes a payload against schema (a STRUCT; the one its schema id
 * names).  Every length and offset is checked; HS_CORRUPT names what was
 * wrong.  *out is the caller's. */
HS_MUST_USE hs_status wal_batch_decode(const uint8_t *p, size_t n, const hs_field *schema,
                                       hs_batch **out, hs_error *err);

/* ---- segments ---- */

typedef struct wal_seg_header {
    uint64_t first_seq;            /* seq of its first record */
    char table_uuid[37];           /* the table's table-uuid, "" = none */
} wal_seg_header;

/* Called for each valid record of a segment, in order. */
typedef hs_status (*wal_record_fn)(void *ctx, uint64_t seq, const uint8_t *payload, size_t n,
                                   hs_error *err);

/* Parses a segment image buf[0..len): header into *h, then records while
 * they are whole, checksummed and numbered first_seq, first_seq+1, ...;
 * fn (may be NULL) gets each.  *valid_end = the offset just past the last
 * valid record, *last_seq = its seq (first_seq - 1 when none), *torn =
 * bytes follow it (a torn or corrupt tail).  HS_CORRUPT only for a bad
 * header; errors of fn are returned as they are. */
HS_MUST_USE hs_status wal_segment_parse(const uint8_t *buf, size_t len, wal_seg_header *h,
                                        wal_record_fn fn, void *ctx, size_t *valid_end,
                                        uint64_t *last_seq, bool *torn, hs_error *err);

/* ---- the log ---- */

typedef struct wal wal;

typedef struct wal_options {
    const char *table_uuid;        /* written into and checked against headers */
    int64_t segment_bytes;         /* roll segments past this size (0 = 64 MiB) */
    bool sync;                     /* fsync new segments' directory entries */
} wal_options;

/* Opens (creating) the log in dir and locks it (an exclusive flock on
 * dir/LOCK: HS_BUSY when another stream, in this or another process, holds
 * it).  Recovery: segments are read in seq order; fn gets every record with
 * seq > committed_seq, in order; a torn tail of the last segment is cut off
 * (ftruncate, then fsync); a bad record in an earlier segment, a gap in the
 * numbering or a segment of another table is HS_CORRUPT / HS_CONFLICT (the
 * log is left as it is).  Segments whose records are all <= committed_seq
 * are deleted.  New records continue at max(committed_seq, last seq) + 1.
 * Caller frees *out with wal_close. */
HS_MUST_USE hs_status wal_open(const char *dir, const wal_options *o, uint64_t committed_seq,
                               wal_record_fn fn, void *ctx, wal **out, hs_error *err);
/* Writes one record (not synced) and returns its seq.  On a failed or
 * short write the segment is cut back to where it was, and the log refuses
 * further writes when even that fails. */
HS_MUST_USE hs_status wal_append(wal *w, const uint8_t *payload, size_t n, uint64_t *seq,
                                 hs_error *err);
/* fdatasync of the current segment: every record appended so far is
 * durable on success.  A failure leaves the log failed (every later call is
 * HS_IO): after a failed fsync the kernel may have dropped the dirty pages,
 * so nothing written since the last good sync can be trusted (PostgreSQL's
 * lesson); reopen the stream to recover from what is on disk. */
HS_MUST_USE hs_status wal_sync(wal *w, hs_error *err);
/* The records up to committed_seq are in a durable commit: starts a new
 * segment at the next record and deletes every segment whose records are
 * all <= committed_seq. */
HS_MUST_USE hs_status wal_truncate(wal *w, uint64_t committed_seq, hs_error *err);
uint64_t wal_last_seq(const wal *w);   /* 0 = none yet */
int64_t wal_bytes(const wal *w);       /* bytes in live segments */
int wal_segments(const wal *w);
void wal_close(wal *w);

#endif
