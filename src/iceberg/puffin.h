/*
 * iceberg/puffin.h - Puffin files and Iceberg v3 deletion vectors
 * (blob type "deletion-vector-v1").
 *
 * A Puffin file is "PFA1", the blobs back to back, then a footer
 * ("PFA1", UTF-8 JSON payload, payload size, flags, "PFA1"); puffin.c's header
 * comment has the byte layout.  A deletion vector is one blob that marks the
 * deleted row positions of one data file; the manifest entry of the delete
 * file records (referenced_data_file, content_offset = blob offset,
 * content_size_in_bytes = blob length), so a reader needs only those three to
 * fetch it: ice_dv_read.
 *
 * Positions are uint32 (a data file holds fewer than 2^32 rows, DESIGN.md);
 * a vector that deletes a position >= 2^32 reads as HS_UNSUPPORTED.
 *
 * Ownership: bitmaps returned are roaring_bitmap_t the caller frees with
 * roaring_bitmap_free; footers live in the caller's arena.
 */
#ifndef HS_ICEBERG_PUFFIN_H
#define HS_ICEBERG_PUFFIN_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "io/io.h"
#include <roaring/roaring.h>
#include <stdint.h>

#define ICE_PUFFIN_MAGIC "PFA1"
#define ICE_BLOB_TYPE_DV "deletion-vector-v1"
/* MetadataColumns.ROW_POSITION: the field a deletion vector applies to (as Java writes it). */
#define ICE_ROW_POSITION_FIELD_ID 2147483645

/* One deletion vector to write. */
typedef struct ice_dv_input {
    const char *referenced_data_file;   /* borrowed */
    const roaring_bitmap_t *positions;  /* borrowed; deleted row positions */
} ice_dv_input;

/* Where a written blob landed (for the delete file's manifest entry). */
typedef struct ice_blob_loc {
    int64_t offset;        /* content_offset */
    int64_t length;        /* content_size_in_bytes */
    int64_t cardinality;   /* number of deleted positions (record_count of the DV) */
} ice_blob_loc;

/* One blob of a footer (strings in the arena). */
typedef struct ice_puffin_blob {
    const char *type;
    int n_fields;
    int32_t *fields;
    int64_t snapshot_id, sequence_number;
    int64_t offset, length;
    const char *compression_codec;      /* NULL = uncompressed */
    int n_props;
    const char **prop_keys, **prop_values;
} ice_puffin_blob;

typedef struct ice_puffin_footer {
    int n_blobs;
    ice_puffin_blob *blobs;
    int n_props;
    const char **prop_keys, **prop_values;
} ice_puffin_footer;

/* Writes a Puffin file of n deletion vectors (one blob each, in order) to `out`
 * (borrowed; the caller closes or aborts it) and fills locs[0..n).  created_by
 * goes into the footer properties (NULL = "HyperStreamDB").  Blob metadata:
 * fields [ROW_POSITION], snapshot-id and sequence-number -1 (inherited from the
 * manifest entry, as the spec says), properties referenced-data-file and
 * cardinality. */
HS_MUST_USE hs_status ice_puffin_write_dvs(hs_wfile *out, const ice_dv_input *dvs, int n,
                                           const char *created_by, ice_blob_loc *locs,
                                           hs_error *err);

/* The bytes of one deletion-vector-v1 blob (length, magic, vector, CRC),
 * appended to out (status only: HS_NOMEM / HS_INVALID). */
HS_MUST_USE hs_status ice_dv_encode(const roaring_bitmap_t *positions, hs_buf *out,
                                    hs_error *err);
/* Decodes one blob (untrusted buf/len: the whole blob).  *out is a new bitmap
 * (caller frees with roaring_bitmap_free).  HS_CORRUPT on bad bytes (length,
 * magic, CRC, bitmap structure), HS_UNSUPPORTED for positions >= 2^32.
 * `name` (may be NULL) is used in error messages. */
HS_MUST_USE hs_status ice_dv_decode(const char *name, const uint8_t *buf, size_t len,
                                    roaring_bitmap_t **out, hs_error *err);
/* Reads the blob at [offset, offset+length) of f and decodes it. */
HS_MUST_USE hs_status ice_dv_read(hs_file *f, int64_t offset, int64_t length,
                                  roaring_bitmap_t **out, hs_error *err);

/* Reads and validates the footer of a Puffin file (every blob range inside the
 * blob area).  Compressed footers are HS_UNSUPPORTED. */
HS_MUST_USE hs_status ice_puffin_read_footer(hs_file *f, hs_arena *arena,
                                             ice_puffin_footer *out, hs_error *err);
/* Property value of a blob or NULL. */
const char *ice_puffin_blob_prop(const ice_puffin_blob *b, const char *key);

/* ctypes helpers for the oracle tests.  ice_puffin_debug_write: writes a
 * Puffin file of deletion vectors described by JSON
 * [{"file": "data/a.parquet", "positions": [0, 5, ...]}, ...] to the local
 * path and returns JSON [{"offset":..,"length":..,"cardinality":..}] (caller
 * frees with ice_puffin_debug_free), NULL on error.  ice_puffin_debug_read:
 * the positions of the blob at (offset, length) as a JSON array. */
char *ice_puffin_debug_write(const char *path, const char *json, hs_error *err);
char *ice_puffin_debug_read(const char *path, int64_t offset, int64_t length, hs_error *err);
void ice_puffin_debug_free(char *s);

#endif
