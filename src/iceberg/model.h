/*
 * iceberg/model.h - the Iceberg table model: types, schemas, partition specs and
 * transforms, sort orders, typed literals (partition values, bounds), snapshots,
 * refs and table metadata (metadata.json), with the evolution helpers that table
 * operations use.  The spec (apache/iceberg format/spec.md) is the authority.
 *
 * Types.  An Iceberg schema is our hs_field tree (columnar/column.h): a STRUCT
 * root whose fields all carry field_id; nullable == !required.
 *
 *   Iceberg               hs_field
 *   -------------------   ------------------------------------------------------
 *   boolean               BOOL
 *   int / long            INT32 / INT64
 *   float / double        FLOAT32 / FLOAT64
 *   decimal(P,S)          DECIMAL128 precision P scale S
 *   date                  DATE32
 *   time                  TIME64 unit MICRO
 *   timestamp             TIMESTAMP unit MICRO, tz NULL
 *   timestamptz           TIMESTAMP unit MICRO, tz "UTC"
 *   timestamp_ns (v3)     TIMESTAMP unit NANO, tz NULL
 *   timestamptz_ns (v3)   TIMESTAMP unit NANO, tz "UTC"
 *   string                STRING
 *   uuid                  FIXED_BINARY width 16, ext UUID
 *   fixed[L]              FIXED_BINARY width L
 *   binary                BINARY
 *   unknown (v3)          NA
 *   struct<...>           STRUCT
 *   list<T>               LIST, one child named "element" (field_id = element-id,
 *                         nullable = !element-required)
 *   map<K,V>              MAP, one child STRUCT "entries" (not null) with children
 *                         "key" (field_id key-id, not null) and "value" (value-id)
 *
 * Field doc and v3 defaults live in hs_field metadata, as JSON text:
 *   "iceberg.doc" (a JSON string), "iceberg.initial-default",
 *   "iceberg.write-default" (the spec's single-value JSON form).
 *
 * Ownership: every struct below owns what its pointers point to; each has a
 * *_clear (frees contents, leaves the struct zeroed, accepts NULL) and a deep
 * *_copy.  ice_table_metadata is freed with ice_metadata_free (contents only: the
 * struct itself belongs to the caller, usually on the stack or embedded).
 * Lookups return pointers borrowed from the owning struct, valid until it is
 * mutated or freed.
 */
#ifndef HS_ICEBERG_MODEL_H
#define HS_ICEBERG_MODEL_H

#include "base/buf.h"
#include "base/error.h"
#include "columnar/column.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ICE_MAX_FORMAT_VERSION 3
#define ICE_DEFAULT_FORMAT_VERSION 2
#define ICE_PARTITION_FIELD_ID_START 1000   /* first partition field id (Java) */
#define ICE_UNPARTITIONED_LAST_PARTITION_ID 999
#define ICE_NO_SNAPSHOT (-1)                /* current_snapshot_id when none */
#define ICE_BOUND_TRUNCATE_LEN 16           /* default metrics mode truncate(16) */

/* Metadata column field ids (spec "Reserved Field IDs"). */
#define ICE_FIELD_ID_FILE_PATH 2147483546
#define ICE_FIELD_ID_POS 2147483545
#define ICE_FIELD_ID_ROW_ID 2147483540
#define ICE_FIELD_ID_LAST_UPDATED_SEQ 2147483539

/* ------------------------------------------------------------------ types */

typedef enum ice_type_id {
    ICE_T_INVALID = 0,   /* the hs_field is not an Iceberg type */
    ICE_T_BOOLEAN, ICE_T_INT, ICE_T_LONG, ICE_T_FLOAT, ICE_T_DOUBLE,
    ICE_T_DECIMAL, ICE_T_DATE, ICE_T_TIME,
    ICE_T_TIMESTAMP, ICE_T_TIMESTAMPTZ, ICE_T_TIMESTAMP_NS, ICE_T_TIMESTAMPTZ_NS,
    ICE_T_STRING, ICE_T_UUID, ICE_T_FIXED, ICE_T_BINARY, ICE_T_UNKNOWN,
    ICE_T_STRUCT, ICE_T_LIST, ICE_T_MAP
} ice_type_id;

/* Iceberg type of a field (by its hs_field type/unit/tz/ext). */
ice_type_id ice_type_of(const hs_field *f);
bool ice_type_is_primitive(ice_type_id t);
/* Appends the spec's type string of a primitive: "long", "decimal(9,2)", "fixed[16]". */
HS_MUST_USE hs_status ice_type_to_string(const hs_field *f, hs_buf *out);
/* Parses a primitive type string into f's type fields (name/id/nullable untouched;
 * f must be initialised).  HS_INVALID for unknown types. */
HS_MUST_USE hs_status ice_type_parse(const char *s, hs_field *f, hs_error *err);
/* Sets f (already initialised with name/nullable) to the given primitive type
 * (HS_NOMEM only: timestamptz allocates its "UTC" tz). */
HS_MUST_USE hs_status ice_field_set_type(hs_field *f, ice_type_id t, int32_t precision,
                                         int32_t scale, int32_t width);

/* ---------------------------------------------------------- key/value map */

typedef struct ice_kv {
    int n;
    char **keys;     /* owned strings */
    char **values;   /* owned strings */
} ice_kv;

const char *ice_kv_get(const ice_kv *kv, const char *key);   /* borrowed or NULL */
HS_MUST_USE hs_status ice_kv_set(ice_kv *kv, const char *key, const char *value);
bool ice_kv_remove(ice_kv *kv, const char *key);              /* true if it was there */
HS_MUST_USE hs_status ice_kv_copy(const ice_kv *src, ice_kv *dst);
void ice_kv_clear(ice_kv *kv);

/* ---------------------------------------------------------------- schemas */

typedef struct ice_schema {
    int32_t schema_id;
    hs_field root;              /* STRUCT, owned */
    int n_identifier_ids;
    int32_t *identifier_ids;    /* owned */
} ice_schema;

void ice_schema_clear(ice_schema *s);
HS_MUST_USE hs_status ice_schema_copy(const ice_schema *src, ice_schema *dst);
/* Builds a schema taking a deep copy of root (a STRUCT). */
HS_MUST_USE hs_status ice_schema_from_field(const hs_field *root, int32_t schema_id,
                                            ice_schema *out, hs_error *err);
/* Field with this id anywhere in the tree (list elements, map keys/values included). */
const hs_field *ice_schema_find_id(const ice_schema *s, int32_t id);
/* Field by dotted name ("a.b.c"; list element "l.element"; map "m.key"/"m.value").
 * case_sensitive false compares ASCII case-insensitively. */
const hs_field *ice_schema_find_name(const ice_schema *s, const char *dotted, bool case_sensitive);
/* Dotted full name of the field with this id (appended to out); HS_NOT_FOUND if absent. */
HS_MUST_USE hs_status ice_schema_name_of(const ice_schema *s, int32_t id, hs_buf *out);
int32_t ice_schema_highest_id(const ice_schema *s);   /* 0 for an empty schema */
bool ice_schema_equals(const ice_schema *a, const ice_schema *b); /* ignoring schema_id */
/* Checks ids are present and unique, names unique per struct, types Iceberg types. */
HS_MUST_USE hs_status ice_schema_validate(const ice_schema *s, int format_version, hs_error *err);
/* Reassigns field ids from *next_id (incremented) in Java's order (each struct's
 * fields first, then their children).  If id_map is non-NULL, records old->new
 * pairs in it as pairs of int32_t (old, new) pushed with HS_VEC_PUSH. */
HS_MUST_USE hs_status ice_schema_assign_fresh_ids(ice_schema *s, int32_t *next_id, hs_buf *id_map);

/* JSON: the spec's schema object {"type":"struct","schema-id":..,"fields":[..]}. */
HS_MUST_USE hs_status ice_schema_to_json(const ice_schema *s, hs_buf *out, hs_error *err);
HS_MUST_USE hs_status ice_schema_parse_json(const char *json, size_t len, ice_schema *out,
                                            hs_error *err);

/* ------------------------------------------------------------- transforms */

typedef enum ice_transform_kind {
    ICE_TR_IDENTITY = 0, ICE_TR_BUCKET, ICE_TR_TRUNCATE,
    ICE_TR_YEAR, ICE_TR_MONTH, ICE_TR_DAY, ICE_TR_HOUR, ICE_TR_VOID,
    ICE_TR_UNKNOWN     /* a transform this build does not know; kept verbatim */
} ice_transform_kind;

typedef struct ice_transform {
    ice_transform_kind kind;
    int32_t param;               /* bucket N / truncate W; 0 otherwise */
    char unknown_name[48];       /* ICE_TR_UNKNOWN: the original text (truncated) */
} ice_transform;

/* "identity", "bucket[16]", "truncate[4]", "year", ... Unknown names parse as
 * ICE_TR_UNKNOWN (the spec says readers must tolerate them); bad params -> HS_INVALID. */
HS_MUST_USE hs_status ice_transform_parse(const char *s, ice_transform *out, hs_error *err);
HS_MUST_USE hs_status ice_transform_format(const ice_transform *t, hs_buf *out);
/* Whether the transform applies to the source type (spec table). */
bool ice_transform_can_apply(const ice_transform *t, const hs_field *source);
/* Result type of t applied to source (written into out: an initialised or zeroed
 * field whose name, nullable and field_id are left as they are).
 * identity/truncate: source type; bucket/year/month/hour: int; day: date;
 * void: source type. */
HS_MUST_USE hs_status ice_transform_result_type(const ice_transform *t, const hs_field *source,
                                                hs_field *out, hs_error *err);
/* identity, truncate, year, month, day, hour: a <= b implies t(a) <= t(b). */
bool ice_transform_preserves_order(const ice_transform *t);
bool ice_transform_equals(const ice_transform *a, const ice_transform *b);

/* ------------------------------------------------------------------ values */

/* A typed literal (partition value, column bound, default).
 *   BOOLEAN           v.b
 *   INT, LONG, DATE (days), TIME (us), TIMESTAMP* (us or ns)   v.i (int64)
 *   FLOAT             v.f ; DOUBLE v.d
 *   STRING (UTF-8), BINARY, FIXED, UUID (16 bytes), DECIMAL (unscaled,
 *   big-endian two's complement, minimal length)   bytes/len (owned)
 * is_null: a null of that type (bytes NULL). */
typedef struct ice_value {
    ice_type_id type;
    bool is_null;
    int32_t precision, scale;   /* DECIMAL */
    int32_t width;              /* FIXED */
    union {
        bool b;
        int64_t i;
        float f;
        double d;
    } v;
    uint8_t *bytes;             /* owned (hs_malloc); NULL when len == 0 */
    uint32_t len;
} ice_value;

void ice_value_clear(ice_value *v);
HS_MUST_USE hs_status ice_value_copy(const ice_value *src, ice_value *dst);
/* Initialises v as a null of f's type. */
void ice_value_init_null(ice_value *v, const hs_field *f);
/* Constructors (type params taken from f where relevant).  Bytes are copied. */
void ice_value_set_int(ice_value *v, ice_type_id t, int64_t x);
HS_MUST_USE hs_status ice_value_set_bytes(ice_value *v, ice_type_id t, const void *p, size_t n);
/* Decimal from/to a signed 128-bit unscaled value. */
HS_MUST_USE hs_status ice_value_set_decimal(ice_value *v, __int128 unscaled, int32_t precision,
                                            int32_t scale);
__int128 ice_value_decimal(const ice_value *v);  /* sign-extends bytes (<= 16 of them) */

/* Single-value binary serialization (spec Appendix D): appends to out.
 * boolean 1 byte; int/float/date 4 LE; long/double/time/timestamp* 8 LE;
 * string UTF-8; binary/fixed as is; uuid 16 BE; decimal minimal BE two's complement.
 * A null value appends nothing. */
HS_MUST_USE hs_status ice_value_to_bytes(const ice_value *v, hs_buf *out);
/* Decodes bytes of the field's type; checks lengths (HS_CORRUPT otherwise).
 * Accepts 4-byte values for long/double bounds (Java wrote those before promotion). */
HS_MUST_USE hs_status ice_value_from_bytes(const hs_field *f, const uint8_t *p, size_t n,
                                           ice_value *out, hs_error *err);
/* Single-value JSON serialization (spec Appendix): appends JSON text. */
HS_MUST_USE hs_status ice_value_to_json(const ice_value *v, hs_buf *out);
HS_MUST_USE hs_status ice_value_from_json(const hs_field *f, const char *json, size_t len,
                                          ice_value *out, hs_error *err);
/* Value of row `row` of a column of field f (a primitive). */
HS_MUST_USE hs_status ice_value_from_column(const hs_field *f, const hs_column *c, int64_t row,
                                            ice_value *out, hs_error *err);
/* Order within one type: signed ints, floats (-NaN < -inf < .. < -0 < 0 < .. < inf < NaN),
 * bytes/strings/uuid/fixed unsigned lexicographic, decimals numerically (same scale).
 * Nulls sort first.  Values of different types compare by type id. */
int ice_value_compare(const ice_value *a, const ice_value *b);
bool ice_value_equals(const ice_value *a, const ice_value *b);
/* Bound truncation for string/binary (others are copied unchanged):
 * lower: first `len` code points (string) / bytes (binary).
 * upper: same, then the last code point/byte incremented (carrying to earlier ones);
 * *ok = false when no finite upper bound exists (then out is left null). */
HS_MUST_USE hs_status ice_value_truncate_lower(const ice_value *v, int len, ice_value *out);
HS_MUST_USE hs_status ice_value_truncate_upper(const ice_value *v, int len, ice_value *out,
                                               bool *ok);

/* Applies a transform.  in must be of a type the transform accepts (else HS_INVALID);
 * a null input gives a null output; void always gives null.  out is overwritten
 * (clear it first if it held bytes). */
HS_MUST_USE hs_status ice_transform_apply(const ice_transform *t, const ice_value *in,
                                          ice_value *out, hs_error *err);
/* The murmur3_x86_32 hash the bucket transform uses (spec Appendix B), signed. */
int32_t ice_bucket_hash(const ice_value *v);
/* Human string of a transformed value as Java's Transform.toHumanString:
 * date "2024-01-02", year "2024", month "2024-01", hour "2024-01-02-13",
 * timestamp "2024-01-02T03:04:05.123456", null "null", others as their JSON text
 * without quotes (binary/fixed base64, uuid canonical). */
HS_MUST_USE hs_status ice_value_to_human(const ice_transform *t, const ice_value *v, hs_buf *out);

/* ------------------------------------------------------- partition specs */

typedef struct ice_partition_field {
    int32_t source_id;
    int32_t field_id;            /* >= 1000 */
    char *name;                  /* owned */
    ice_transform transform;
} ice_partition_field;

typedef struct ice_partition_spec {
    int32_t spec_id;
    int n_fields;
    ice_partition_field *fields; /* owned */
} ice_partition_spec;

void ice_spec_clear(ice_partition_spec *s);
HS_MUST_USE hs_status ice_spec_copy(const ice_partition_spec *src, ice_partition_spec *dst);
/* Appends a field (name copied; NULL name = Java's default: "id" identity,
 * "id_bucket", "name_trunc", "ts_year", "ts_month", "ts_day", "ts_hour",
 * "x_null" void).  field_id < 0 = assigned later by the metadata. */
HS_MUST_USE hs_status ice_spec_add_field(ice_partition_spec *s, const ice_schema *schema,
                                         int32_t source_id, const ice_transform *t,
                                         const char *name, int32_t field_id, hs_error *err);
bool ice_spec_is_unpartitioned(const ice_partition_spec *s); /* no fields, or all void */
/* Same fields (source, transform, name, field id), ignoring spec_id. */
bool ice_spec_equals(const ice_partition_spec *a, const ice_partition_spec *b);
/* The partition tuple type: STRUCT of one field per partition field (name, field id
 * = partition field id, optional, result type).  out must be zeroed/cleared. */
HS_MUST_USE hs_status ice_spec_partition_type(const ice_partition_spec *s, const ice_schema *schema,
                                              hs_field *out, hs_error *err);
/* Checks source ids exist and are primitive, transforms apply, names unique. */
HS_MUST_USE hs_status ice_spec_validate(const ice_partition_spec *s, const ice_schema *schema,
                                        hs_error *err);
/* JSON: {"spec-id":..,"fields":[{"name","transform","source-id","field-id"}]}.
 * ice_spec_fields_to_json writes only the fields array (manifest header key). */
HS_MUST_USE hs_status ice_spec_to_json(const ice_partition_spec *s, hs_buf *out, hs_error *err);
HS_MUST_USE hs_status ice_spec_fields_to_json(const ice_partition_spec *s, hs_buf *out,
                                              hs_error *err);
/* Parses a spec object, or (spec_id given separately) a bare fields array. */
HS_MUST_USE hs_status ice_spec_parse_json(const char *json, size_t len, int32_t spec_id_if_array,
                                          ice_partition_spec *out, hs_error *err);
/* Partition path as Java writes it: "name=human/name=human" (URL-encoded, as
 * java.net.URLEncoder: space '+', unreserved [A-Za-z0-9.-*_] kept).
 * values: n_fields values (the transformed partition tuple). */
HS_MUST_USE hs_status ice_spec_partition_path(const ice_partition_spec *s,
                                              const ice_value *values, hs_buf *out,
                                              hs_error *err);

/* ------------------------------------------------------------ sort orders */

typedef enum ice_sort_direction { ICE_SORT_ASC = 0, ICE_SORT_DESC } ice_sort_direction;
typedef enum ice_null_order { ICE_NULLS_FIRST = 0, ICE_NULLS_LAST } ice_null_order;

typedef struct ice_sort_field {
    ice_transform transform;
    int32_t source_id;
    ice_sort_direction direction;
    ice_null_order null_order;
} ice_sort_field;

typedef struct ice_sort_order {
    int32_t order_id;            /* 0 = unsorted (must have no fields) */
    int n_fields;
    ice_sort_field *fields;      /* owned */
} ice_sort_order;

void ice_sort_order_clear(ice_sort_order *o);
HS_MUST_USE hs_status ice_sort_order_copy(const ice_sort_order *src, ice_sort_order *dst);
HS_MUST_USE hs_status ice_sort_order_add_field(ice_sort_order *o, int32_t source_id,
                                               const ice_transform *t, ice_sort_direction dir,
                                               ice_null_order nulls);
bool ice_sort_order_equals(const ice_sort_order *a, const ice_sort_order *b); /* ignoring id */
HS_MUST_USE hs_status ice_sort_order_to_json(const ice_sort_order *o, hs_buf *out, hs_error *err);
HS_MUST_USE hs_status ice_sort_order_parse_json(const char *json, size_t len, ice_sort_order *out,
                                                hs_error *err);

/* -------------------------------------------------------------- snapshots */

typedef struct ice_snapshot {
    int64_t snapshot_id;
    bool has_parent;
    int64_t parent_id;
    int64_t sequence_number;     /* 0 in v1 */
    int64_t timestamp_ms;
    char *manifest_list;         /* owned; NULL only for v1 "manifests" snapshots */
    ice_kv summary;              /* "operation" plus counters */
    bool has_schema_id;
    int32_t schema_id;
    /* v3 row lineage */
    bool has_first_row_id;
    int64_t first_row_id;
    bool has_added_rows;
    int64_t added_rows;
    /* v1 only: explicit manifest paths instead of a manifest list (read-only support) */
    int n_v1_manifests;
    char **v1_manifests;         /* owned */
} ice_snapshot;

void ice_snapshot_clear(ice_snapshot *s);
HS_MUST_USE hs_status ice_snapshot_copy(const ice_snapshot *src, ice_snapshot *dst);
const char *ice_snapshot_operation(const ice_snapshot *s); /* summary "operation" or NULL */

typedef struct ice_ref {
    char *name;                  /* owned */
    int64_t snapshot_id;
    bool is_tag;                 /* false = branch */
    int64_t max_ref_age_ms;      /* -1 = not set */
    int64_t max_snapshot_age_ms; /* -1 = not set (branches) */
    int32_t min_snapshots_to_keep; /* -1 = not set (branches) */
} ice_ref;

typedef struct ice_snapshot_log_entry {
    int64_t timestamp_ms;
    int64_t snapshot_id;
} ice_snapshot_log_entry;

typedef struct ice_metadata_log_entry {
    int64_t timestamp_ms;
    char *file;                  /* owned */
} ice_metadata_log_entry;

/* --------------------------------------------------------- table metadata */

typedef struct ice_table_metadata {
    int format_version;          /* 1, 2 or 3 (v1 is upgraded in memory on parse but
                                    kept as 1 here; it is written back as v1) */
    char table_uuid[40];         /* canonical 36-char form */
    char *location;              /* owned */
    int64_t last_sequence_number;
    int64_t last_updated_ms;
    int32_t last_column_id;

    int n_schemas;
    ice_schema *schemas;         /* owned */
    int32_t current_schema_id;

    int n_specs;
    ice_partition_spec *specs;   /* owned */
    int32_t default_spec_id;
    int32_t last_partition_id;

    ice_kv properties;

    int64_t current_snapshot_id; /* ICE_NO_SNAPSHOT when none */
    int n_snapshots;
    ice_snapshot *snapshots;     /* owned, in file order (commit order) */
    int n_snapshot_log;
    ice_snapshot_log_entry *snapshot_log;
    int n_metadata_log;
    ice_metadata_log_entry *metadata_log;

    int n_sort_orders;
    ice_sort_order *sort_orders; /* owned */
    int32_t default_sort_order_id;

    int n_refs;
    ice_ref *refs;               /* owned; "main" present iff a current snapshot exists */

    char *statistics_json;       /* owned raw JSON array text, or NULL (round-tripped) */
    char *partition_statistics_json; /* same for "partition-statistics" */

    int64_t next_row_id;         /* v3 */
} ice_table_metadata;

/* Parses metadata.json.  Accepts v1, v2 and v3 (v1 "schema"/"partition-spec" are
 * turned into schemas/specs in memory).  A newer format version fails with
 * HS_UNSUPPORTED "table format version 4 is newer than this build supports (3)";
 * a missing or malformed required field fails with HS_CORRUPT naming the field.
 * out must be zeroed; on failure it is left zeroed. */
HS_MUST_USE hs_status ice_metadata_parse(const char *json, size_t len, ice_table_metadata *out,
                                         hs_error *err);
/* Writes metadata.json (pretty enough, deterministic), every field the spec requires
 * for m->format_version.  Appends to out. */
HS_MUST_USE hs_status ice_metadata_to_json(const ice_table_metadata *m, hs_buf *out,
                                           hs_error *err);
HS_MUST_USE hs_status ice_metadata_copy(const ice_table_metadata *src, ice_table_metadata *dst,
                                        hs_error *err);
void ice_metadata_free(ice_table_metadata *m); /* frees contents, zeroes m; accepts NULL */

/* New table metadata as Java's TableMetadata.newTableMetadata: fresh field ids from
 * 1 (spec source ids / sort source ids remapped accordingly), spec id 0 with
 * partition field ids from 1000, sort order id 1 (or 0 if unsorted), schema id 0,
 * a random table uuid, last-updated-ms now, no snapshots.
 * spec, order and props may be NULL. */
HS_MUST_USE hs_status ice_metadata_new(const char *location, const ice_schema *schema,
                                       const ice_partition_spec *spec, const ice_sort_order *order,
                                       const ice_kv *props, int format_version,
                                       ice_table_metadata *out, hs_error *err);

/* Lookups (borrowed pointers, NULL when absent). */
const ice_schema *ice_metadata_schema(const ice_table_metadata *m, int32_t schema_id);
const ice_schema *ice_metadata_current_schema(const ice_table_metadata *m);
const ice_partition_spec *ice_metadata_spec(const ice_table_metadata *m, int32_t spec_id);
const ice_partition_spec *ice_metadata_default_spec(const ice_table_metadata *m);
const ice_sort_order *ice_metadata_sort_order(const ice_table_metadata *m, int32_t order_id);
const ice_sort_order *ice_metadata_default_sort_order(const ice_table_metadata *m);
const ice_snapshot *ice_metadata_snapshot(const ice_table_metadata *m, int64_t snapshot_id);
const ice_snapshot *ice_metadata_current_snapshot(const ice_table_metadata *m);
/* The snapshot that was current at time t: the last snapshot-log entry with
 * timestamp_ms <= t (falls back to snapshots' own timestamps if the log is empty). */
const ice_snapshot *ice_metadata_snapshot_as_of(const ice_table_metadata *m, int64_t t_ms);
const ice_ref *ice_metadata_ref(const ice_table_metadata *m, const char *name);
const ice_snapshot *ice_metadata_snapshot_by_ref(const ice_table_metadata *m, const char *name);
/* Schema a snapshot was written with (its schema-id, else current). */
const ice_schema *ice_metadata_snapshot_schema(const ice_table_metadata *m, const ice_snapshot *s);

/* Mutations used by table operations.  Each keeps the metadata consistent and
 * sets last_updated_ms to now (ms since epoch) unless noted; they do not append
 * to the metadata log (the committer does, with the previous file's name). */

/* Adds a schema (deep copy).  Reuses an existing equal schema's id; otherwise the
 * id is max(existing)+1.  last_column_id = max(last_column_id, highest id).
 * set_current: it becomes current-schema-id. */
HS_MUST_USE hs_status ice_metadata_add_schema(ice_table_metadata *m, const ice_schema *s,
                                              bool set_current, int32_t *id_out, hs_error *err);
/* Adds a spec (deep copy), validated against the current schema.  Partition fields
 * with field_id < 0 get an existing id when an earlier spec has the same
 * (source, transform) field, else ++last_partition_id.  Reuses an equal spec. */
HS_MUST_USE hs_status ice_metadata_add_spec(ice_table_metadata *m, const ice_partition_spec *spec,
                                            bool set_default, int32_t *id_out, hs_error *err);
HS_MUST_USE hs_status ice_metadata_add_sort_order(ice_table_metadata *m, const ice_sort_order *o,
                                                  bool set_default, int32_t *id_out,
                                                  hs_error *err);
/* Adds a snapshot (deep copy) and points `branch` (NULL = "main") at it.
 * last_sequence_number = max(.., snap seq); last_updated_ms = snap timestamp;
 * for "main": current_snapshot_id and a snapshot-log entry; v3: when the snapshot
 * has first_row_id, next_row_id = first_row_id + added_rows.
 * HS_INVALID if the id already exists or (v2+) its sequence number is not
 * greater than last_sequence_number. */
HS_MUST_USE hs_status ice_metadata_add_snapshot(ice_table_metadata *m, const ice_snapshot *snap,
                                                const char *branch, hs_error *err);
HS_MUST_USE hs_status ice_metadata_set_property(ice_table_metadata *m, const char *key,
                                                const char *value, hs_error *err);
bool ice_metadata_remove_property(ice_table_metadata *m, const char *key);
/* Creates or moves a ref.  Moving "main" also sets current_snapshot_id and logs it.
 * HS_NOT_FOUND if the snapshot does not exist; HS_INVALID if `name` exists with
 * the other kind (tag vs branch). */
HS_MUST_USE hs_status ice_metadata_set_ref(ice_table_metadata *m, const char *name,
                                           int64_t snapshot_id, bool is_tag, hs_error *err);
bool ice_metadata_remove_ref(ice_table_metadata *m, const char *name); /* not "main" */
/* Makes snapshot_id current on main (it must exist; HS_NOT_FOUND otherwise). */
HS_MUST_USE hs_status ice_metadata_rollback(ice_table_metadata *m, int64_t snapshot_id,
                                            hs_error *err);
/* Raises format_version to new_version (2 or 3; downgrades are HS_INVALID).
 * v2->v3 sets next_row_id to 0 (existing rows have no ids, per the spec). */
HS_MUST_USE hs_status ice_metadata_upgrade(ice_table_metadata *m, int new_version, hs_error *err);
/* Appends a metadata-log entry, keeping only the newest max_entries (<= 0: 100,
 * Java's write.metadata.previous-versions-max default). */
HS_MUST_USE hs_status ice_metadata_add_metadata_log(ice_table_metadata *m, int64_t timestamp_ms,
                                                    const char *file, int max_entries,
                                                    hs_error *err);
/* Removes snapshots (expire) by id; refs to them are dropped; logs pruned. */
HS_MUST_USE hs_status ice_metadata_remove_snapshots(ice_table_metadata *m, const int64_t *ids,
                                                    int n, hs_error *err);

/* Random identifiers. */
int64_t ice_new_snapshot_id(void);          /* positive, random (as Java) */
void ice_uuid_v4(char out[37]);             /* canonical lowercase text + NUL */
int64_t ice_now_ms(void);

/* ------------------------------------------------------ schema evolution */

/* Each builds a new schema `out` (id = base->schema_id + 1; ice_metadata_add_schema
 * renumbers) from `base`; base is untouched.  Paths are dotted names.  Errors are
 * HS_INVALID (or HS_NOT_FOUND for a missing column) with a message naming it. */

/* Adds `field` (a deep copy, ids reassigned from *last_column_id + 1, which is
 * advanced) under parent_path (NULL or "" = top level; else a struct, or a list's
 * / map value's struct).  A required field needs format_version >= 3 and an
 * "iceberg.initial-default" meta key; optional fields are always allowed. */
HS_MUST_USE hs_status ice_schema_add_column(const ice_schema *base, const char *parent_path,
                                            const hs_field *field, int32_t *last_column_id,
                                            int format_version, ice_schema *out, hs_error *err);
/* Drops a column (and its children).  Identifier fields cannot be dropped. */
HS_MUST_USE hs_status ice_schema_drop_column(const ice_schema *base, const char *path,
                                             ice_schema *out, hs_error *err);
HS_MUST_USE hs_status ice_schema_rename_column(const ice_schema *base, const char *path,
                                               const char *new_name, ice_schema *out,
                                               hs_error *err);
typedef enum ice_move_kind { ICE_MOVE_FIRST = 0, ICE_MOVE_BEFORE, ICE_MOVE_AFTER } ice_move_kind;
/* Moves a column within its struct; ref_path (BEFORE/AFTER) must be a sibling. */
HS_MUST_USE hs_status ice_schema_move_column(const ice_schema *base, const char *path,
                                             ice_move_kind kind, const char *ref_path,
                                             ice_schema *out, hs_error *err);
/* Promotes a primitive: int->long, float->double, decimal(P,S)->decimal(P',S) P'>P
 * (v3 also date->timestamp, timestamp_ns not allowed). new_type's name/id ignored. */
HS_MUST_USE hs_status ice_schema_update_column_type(const ice_schema *base, const char *path,
                                                    const hs_field *new_type, ice_schema *out,
                                                    hs_error *err);
HS_MUST_USE hs_status ice_schema_make_optional(const ice_schema *base, const char *path,
                                               ice_schema *out, hs_error *err);
/* Sets (doc != NULL) or removes the doc of a column. */
HS_MUST_USE hs_status ice_schema_set_doc(const ice_schema *base, const char *path,
                                         const char *doc, ice_schema *out, hs_error *err);

/* ------------------------------------------------ ctypes entry points (tests) */

/* Parses metadata JSON and writes it back; returns text the caller frees with
 * ice_debug_free, or NULL with err set. */
char *ice_metadata_json_roundtrip(const char *json, hs_error *err);
void ice_debug_free(void *p);
/* Applies transform (e.g. "bucket[16]") to a value of Iceberg type `type` (e.g.
 * "decimal(9,2)") given in the single-value JSON form; writes the result as JSON
 * into out (NUL-terminated).  Returns an hs_status. */
int ice_debug_transform(const char *transform, const char *type, const char *value_json,
                        char *out, size_t out_len, hs_error *err);
/* ice_metadata_new from JSON inputs (schema object, spec object or NULL, sort
 * order object or NULL); returns the metadata JSON (free with ice_debug_free). */
char *ice_debug_new_metadata(const char *location, const char *schema_json, const char *spec_json,
                             const char *sort_json, int format_version, hs_error *err);
/* Single-value binary serialization of a JSON value of `type`, as lowercase hex. */
int ice_debug_value_to_bytes(const char *type, const char *value_json, char *out_hex,
                             size_t out_len, hs_error *err);

#endif
