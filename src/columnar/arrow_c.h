/*
 * columnar/arrow_c.h - moving columns and batches across the Arrow C Data
 * Interface and the C Stream Interface, without copying.
 *
 * Release and move rules (Arrow spec, followed exactly):
 * - Export fills a caller-provided struct; the consumer calls its release
 *   callback exactly once; release frees children and marks the struct
 *   released (release = NULL).  Exported children are released by the parent.
 * - Import *moves*: the producer's struct is copied and its release set to
 *   NULL, so the caller must not release it again.  Imported buffers are
 *   borrowed by hs_columns through a refcounted owner that calls the original
 *   release when the last column referencing it is freed.
 * - Metadata is encoded as the spec's int32-prefixed key/value blob; field ids
 *   travel as the "PARQUET:field_id" metadata key, as pyarrow does.
 * - Formats: b c C s S i I l L e f g d:P,S w:N z u tdD tts ttm ttu ttn
 *   tss: tsm: tsu: tsn: (with time zone after the colon) +l +w:N +s +m.
 *   Import also accepts large_string/large_binary/large_list (U Z +L),
 *   string/binary views (vu vz), dictionary-encoded arrays (decoded) and
 *   arrays with a non-zero offset, by copying into our layout.  What our
 *   layout cannot say is recorded by hs_arrow_import_schema in reserved field
 *   meta keys ("hs.arrow.format", "hs.arrow.dict_index") that
 *   hs_arrow_import_column reads and export never emits; so import a column
 *   with the field that hs_arrow_import_schema made from its schema.
 * - Import moves the array even when it fails (it is released then).
 */
#ifndef HS_COLUMNAR_ARROW_C_H
#define HS_COLUMNAR_ARROW_C_H

#include "columnar/column.h"
#include "hyperstream/arrow_c_abi.h"

HS_MUST_USE hs_status hs_arrow_export_schema(const hs_field *f, struct ArrowSchema *out,
                                             hs_error *err);
/* Takes ownership of c (freed by the exported array's release, even on failure). */
HS_MUST_USE hs_status hs_arrow_export_column(hs_column *c, struct ArrowArray *out, hs_error *err);
/* Exports a batch as a struct array + its schema; takes ownership of b. */
HS_MUST_USE hs_status hs_arrow_export_batch(hs_batch *b, struct ArrowSchema *schema_out,
                                            struct ArrowArray *array_out, hs_error *err);
/* Test support: imports stream `in` (moved) as a batch source and exports that
 * source as `out` (caller releases), so every batch crosses both directions. */
HS_MUST_USE hs_status hs_arrow_stream_roundtrip(struct ArrowArrayStream *in,
                                                struct ArrowArrayStream *out, hs_error *err);

/* Reads a schema (not moved: the caller still releases it). */
HS_MUST_USE hs_status hs_arrow_import_schema(const struct ArrowSchema *s, hs_field *out,
                                             hs_error *err);
/* Moves `a` into a new column of type f. Caller frees with hs_col_free. */
HS_MUST_USE hs_status hs_arrow_import_column(struct ArrowArray *a, const hs_field *f,
                                             hs_column **out, hs_error *err);
/* Moves a struct array into a batch with a copy of schema (a STRUCT field). */
HS_MUST_USE hs_status hs_arrow_import_batch(struct ArrowArray *a, const hs_field *schema,
                                            hs_batch **out, hs_error *err);

/* A pull source of batches, turned into an ArrowArrayStream.  next() sets
 * *out = NULL at end of stream; close() frees the source. */
typedef struct hs_batch_source {
    hs_status (*next)(void *ctx, hs_batch **out, hs_error *err);
    void (*close)(void *ctx);
    void *ctx;
    hs_field schema;  /* owned by the source (moved into the stream) */
} hs_batch_source;

/* Takes ownership of src. */
HS_MUST_USE hs_status hs_arrow_export_stream(hs_batch_source *src, struct ArrowArrayStream *out,
                                             hs_error *err);
/* Exports batch b (taken, also on failure) as a stream of that one batch;
 * a batch of zero rows gives a stream with b's schema and no batch. */
HS_MUST_USE hs_status hs_arrow_export_one_batch(hs_batch *b, struct ArrowArrayStream *out,
                                            hs_error *err);
/* When s is a stream of hs_arrow_export_stream, moves the source it
 * exported into *out (s released) and returns true: its batches and errors
 * then pass as they are, with no export, import and validation per batch
 * (the table scan under the SQL executor).  Else false, s untouched. */
bool hs_arrow_own_source(struct ArrowArrayStream *s, hs_batch_source *out);
/* Moves the stream into a batch source; caller closes it with src->close(src->ctx). */
HS_MUST_USE hs_status hs_arrow_import_stream(struct ArrowArrayStream *s, hs_batch_source *out,
                                             hs_error *err);

/* Test support (used by tests/python/test_arrow_c.py through ctypes): imports
 * schema_in + array_in (schema_in is released here, array_in is moved, also on
 * failure), validates, deep-copies the column with hs_col_slice so the data
 * really passes through our layout, and exports the copy to schema_out and
 * array_out (which the caller releases). Dictionary, large and view arrays
 * come back as plain string/binary/list values. */
HS_MUST_USE hs_status hs_arrow_roundtrip(struct ArrowSchema *schema_in, struct ArrowArray *array_in,
                                         struct ArrowSchema *schema_out,
                                         struct ArrowArray *array_out, hs_error *err);
/* Test support: imports stream `in` (moved) as a batch source and exports that
 * source as `out` (caller releases), so every batch crosses both directions. */
HS_MUST_USE hs_status hs_arrow_stream_roundtrip(struct ArrowArrayStream *in,
                                                struct ArrowArrayStream *out, hs_error *err);

#endif
