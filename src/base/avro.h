/*
 * base/avro.h - Avro schemas, the binary encoding, and object container files.
 *
 * Written here rather than taken from Avro C (Debian libavro) because Iceberg
 * needs two things Avro C cannot do: keep the field-id / element-id / key-id /
 * value-id attributes of a schema (Avro C drops every attribute but name and
 * type when it writes a schema), and put extra keys in the container header
 * (Iceberg manifests carry schema, partition-spec, format-version, ...).
 *
 * Container file layout (Avro 1.11 spec, "Object Container Files"):
 *
 *   offset  bytes   content
 *   0       4       magic "Obj" 0x01
 *   4       ...     metadata: map<bytes> (blocks of count, then key, value),
 *                   holding at least avro.schema (JSON) and avro.codec
 *   ...     16      sync marker
 *   then blocks:    long count, long byte size, the (compressed) records,
 *                   16-byte sync marker (must equal the header's)
 *
 * Codecs: "null" and "deflate" (raw RFC 1951, no zlib header) in both
 * directions; "snappy" (block + 4-byte big-endian CRC-32 of the uncompressed
 * data) and "zstandard" on read.
 *
 * Values are generic trees (hs_avro_value) allocated in a caller arena.  A
 * union value records the branch taken and holds the branch's value.  A map
 * value is an array of (key, value) pairs.  Decoding is driven by the writer
 * schema from the file header; callers find record fields by name or by
 * field-id (Iceberg readers match by id).
 *
 * Untrusted input: every length and count is checked against the remaining
 * bytes, nesting depth is bounded, and all failures are HS_CORRUPT naming the
 * file position.  Memory is linear in the input: array and map items collect
 * in geometrically grown buffers whatever the blocking, every arena
 * allocation of a decode is charged to the decode memory limit of base/memlimit.h
 * (hs_avro_decode: the limit of the bytes after *pos; a reader: the limit of
 * the file length, 32 times that for a compressed file, for all its records
 * together and for each decompressed block), and items or records of zero size (null, empty records), which
 * cost no input, are capped at 2^20 per decode / per reader.
 */
#ifndef HS_BASE_AVRO_H
#define HS_BASE_AVRO_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include <stdbool.h>
#include <stdint.h>

typedef enum hs_avro_kind {
    HS_AVRO_NULL = 0, HS_AVRO_BOOLEAN, HS_AVRO_INT, HS_AVRO_LONG, HS_AVRO_FLOAT,
    HS_AVRO_DOUBLE, HS_AVRO_BYTES, HS_AVRO_STRING, HS_AVRO_RECORD, HS_AVRO_ENUM,
    HS_AVRO_ARRAY, HS_AVRO_MAP, HS_AVRO_UNION, HS_AVRO_FIXED
} hs_avro_kind;

typedef struct hs_avro_schema hs_avro_schema;

typedef struct hs_avro_field {
    const char *name;
    int32_t field_id;          /* "field-id", -1 when absent */
    hs_avro_schema *type;
    const char *default_json;  /* the "default" attribute as JSON text, or NULL */
    const char *doc;
} hs_avro_field;

struct hs_avro_schema {
    hs_avro_kind kind;
    const char *name;          /* record / enum / fixed full name */
    const char *logical_type;  /* "logicalType" or NULL */
    int n;                     /* fields (record), branches (union), symbols (enum) */
    hs_avro_field *fields;     /* RECORD */
    hs_avro_schema **branches; /* UNION */
    const char **symbols;      /* ENUM */
    hs_avro_schema *items;     /* ARRAY items, MAP values */
    int32_t size;              /* FIXED */
    int32_t element_id;        /* ARRAY "element-id", -1 when absent */
    int32_t key_id, value_id;  /* MAP "key-id"/"value-id"; also on Iceberg's
                                  array-of-record maps (logicalType "map") */
    int32_t precision, scale;  /* logicalType decimal */
};

typedef struct hs_avro_value hs_avro_value;
struct hs_avro_value {
    hs_avro_kind kind;          /* the kind of the value (never UNION) */
    int32_t branch;             /* union branch taken, or -1 */
    union {
        bool b;
        int64_t l;              /* INT, LONG, ENUM (symbol index) */
        float f;
        double d;
        struct { const uint8_t *p; uint32_t len; } bytes; /* BYTES, STRING, FIXED */
        struct { hs_avro_value *items; int64_t n; } arr;  /* ARRAY, RECORD (fields in order) */
        struct { hs_avro_value *keys; hs_avro_value *vals; int64_t n; } map; /* MAP */
    } u;
};

/* Parses schema JSON into the arena (names, attributes copied). Named types
 * may be referenced by name later in the same schema. */
HS_MUST_USE hs_status hs_avro_schema_parse(const char *json, size_t len, hs_arena *arena,
                                           hs_avro_schema **out, hs_error *err);
/* Index of a record field by name or by field-id, or -1. */
int hs_avro_field_index(const hs_avro_schema *record, const char *name);
int hs_avro_field_index_by_id(const hs_avro_schema *record, int32_t field_id);

/* Binary encoding of one datum. decode: *pos advances; values live in arena
 * (strings/bytes are copied, NUL-terminated for convenience). */
HS_MUST_USE hs_status hs_avro_decode(const hs_avro_schema *s, const uint8_t *p, size_t len,
                                     size_t *pos, hs_arena *arena, hs_avro_value *out,
                                     hs_error *err);
HS_MUST_USE hs_status hs_avro_encode(const hs_avro_schema *s, const hs_avro_value *v,
                                     hs_buf *out, hs_error *err);
/* Low-level primitives (also used by callers that hand-roll hot paths). */
HS_MUST_USE hs_status hs_avro_put_long(hs_buf *out, int64_t v);
HS_MUST_USE hs_status hs_avro_put_bytes(hs_buf *out, const void *p, size_t n);

/* Value constructors (arena-allocated where they need memory). */
hs_avro_value hs_avro_null(void);
hs_avro_value hs_avro_long(int64_t v);     /* also for INT */
hs_avro_value hs_avro_bool(bool v);
hs_avro_value hs_avro_double(double v);
hs_avro_value hs_avro_float(float v);
hs_avro_value hs_avro_str(const char *s);  /* borrowed */
hs_avro_value hs_avro_bytes(const void *p, size_t n); /* borrowed */
/* A record/array with n zeroed slots in the arena (NULL on out-of-memory). */
hs_avro_value *hs_avro_new_array(hs_arena *a, hs_avro_kind kind, int64_t n, hs_avro_value *out);

/* ---- container files ---- */

typedef enum hs_avro_codec { HS_AVRO_CODEC_NULL = 0, HS_AVRO_CODEC_DEFLATE,
                             HS_AVRO_CODEC_SNAPPY, HS_AVRO_CODEC_ZSTD } hs_avro_codec;

typedef struct hs_avro_reader hs_avro_reader;

/* Reads a whole container held in memory (borrowed until close). `name` is
 * used in error messages.  The writer schema is parsed once per distinct
 * schema text and shared through a process-wide cache (thread-safe). */
HS_MUST_USE hs_status hs_avro_reader_open(const char *name, const uint8_t *buf, size_t len,
                                          hs_avro_reader **out, hs_error *err);
void hs_avro_reader_close(hs_avro_reader *r);  /* accepts NULL */
/* Drops the cached parsed schemas (readers still open keep theirs): for
 * tests that balance hs_mem_live_count, and memory pressure. */
void hs_avro_schema_cache_clear(void);
const hs_avro_schema *hs_avro_reader_schema(const hs_avro_reader *r);
/* Header metadata value (NUL-terminated copy, borrowed until close) or NULL. */
const char *hs_avro_reader_meta(const hs_avro_reader *r, const char *key, size_t *len);
/* Next record into *out (allocated in `arena`); *done = true at the end. */
HS_MUST_USE hs_status hs_avro_reader_next(hs_avro_reader *r, hs_arena *arena,
                                          hs_avro_value *out, bool *done, hs_error *err);

typedef struct hs_avro_writer hs_avro_writer;

/* Starts a container with the given schema JSON (written verbatim, so
 * attributes such as field-id survive) and header metadata. Output
 * accumulates in memory; hs_avro_writer_finish hands it over. */
HS_MUST_USE hs_status hs_avro_writer_open(const char *schema_json, hs_avro_codec codec,
                                          const char *const *meta_keys,
                                          const char *const *meta_values, int n_meta,
                                          hs_avro_writer **out, hs_error *err);
const hs_avro_schema *hs_avro_writer_schema(const hs_avro_writer *w);
HS_MUST_USE hs_status hs_avro_writer_append(hs_avro_writer *w, const hs_avro_value *v,
                                            hs_error *err);
/* Flushes the last block and moves the file bytes into *out (replacing its
 * contents); frees the writer. */
HS_MUST_USE hs_status hs_avro_writer_finish(hs_avro_writer *w, hs_buf *out, hs_error *err);
void hs_avro_writer_free(hs_avro_writer *w);  /* abandons; accepts NULL */

/* Debug/oracle helpers: the records of a container as JSON Lines (bytes as
 * arrays of numbers would be lossy: bytes/fixed are base16 strings), and a
 * container built from a schema and JSON Lines records. Used by tests that
 * compare with fastavro. */
HS_MUST_USE hs_status hs_avro_to_jsonl(const uint8_t *buf, size_t len, hs_buf *out,
                                       hs_error *err);
HS_MUST_USE hs_status hs_avro_from_jsonl(const char *schema_json, const char *jsonl,
                                         hs_avro_codec codec, hs_buf *out, hs_error *err);
/* The same over files: returns a hs_malloc'd string (caller frees with hs_free) or NULL. */
char *hs_avro_file_to_jsonl(const char *path, hs_error *err);
HS_MUST_USE hs_status hs_avro_jsonl_to_file(const char *schema_json, const char *jsonl, int deflate,
                                            const char *path, hs_error *err);

#endif
