/*
 * columnar/column.h - the type model, column vectors and batches, in Arrow layout.
 *
 * Types (hs_field) describe a column the way an ArrowSchema does: a type id,
 * nullability, parameters, children, and (ours) an Iceberg/Parquet field id.
 * A schema is a hs_field of type HS_TYPE_STRUCT whose children are the columns.
 *
 *   type          buffers used                      children
 *   ----------    -------------------------------   -------------------------------
 *   NA            none (all null)                    -
 *   BOOL          validity, values (bits)            -
 *   INT8..UINT64, FLOAT16..FLOAT64, DATE32, TIME32, TIME64, TIMESTAMP, DECIMAL128
 *                 validity, values (fixed width)     -
 *   STRING/BINARY validity, offsets (int32, n+1), values (bytes)
 *   FIXED_BINARY  validity, values (width bytes each)
 *   LIST          validity, offsets (int32, n+1)    1: element
 *   FIXED_LIST    validity                          1: element (width * n values)
 *   STRUCT        validity                          one per field
 *   MAP           validity, offsets (int32, n+1)    1: STRUCT "entries" {key (not null), value}
 *   INTERVAL      validity, values (16 bytes each: int64 micros, int32 days,
 *                 int32 months, base/interval.h; Arrow export converts them
 *                 to month_day_nano)
 *
 * Widths: FLOAT16 2, DATE32 4, TIME32 4 (s|ms), TIME64 8 (us|ns), TIMESTAMP 8,
 * DECIMAL128 16 (little-endian two's complement, as Arrow).  Validity bit i set
 * means row i is valid; a validity buffer with data == NULL means all valid.
 * Arrow's rule holds: a child of a null struct/list slot still has a slot
 * (struct) or an empty range (list); its contents are unspecified.  Our
 * columns keep null LIST/MAP ranges empty (hs_col_validate checks it; the
 * Arrow importer copies arrays that have elements under null list rows).
 *
 * Ownership: a column owns its buffers (allocated with hs_malloc_aligned) and
 * its children, unless `owner` is set: then the buffers are borrowed from an
 * imported Arrow array, kept alive by the owner's reference count.  Columns
 * never have an Arrow "offset": importing a sliced array copies it.
 */
#ifndef HS_COLUMNAR_COLUMN_H
#define HS_COLUMNAR_COLUMN_H

#include "base/buf.h"
#include "base/error.h"
#include <stdbool.h>
#include <stdint.h>

typedef enum hs_type {
    HS_TYPE_NA = 0,
    HS_TYPE_BOOL,
    HS_TYPE_INT8, HS_TYPE_INT16, HS_TYPE_INT32, HS_TYPE_INT64,
    HS_TYPE_UINT8, HS_TYPE_UINT16, HS_TYPE_UINT32, HS_TYPE_UINT64,
    HS_TYPE_FLOAT16, HS_TYPE_FLOAT32, HS_TYPE_FLOAT64,
    HS_TYPE_DECIMAL128,
    HS_TYPE_DATE32,
    HS_TYPE_TIME32,      /* unit SECOND or MILLI */
    HS_TYPE_TIME64,      /* unit MICRO or NANO */
    HS_TYPE_TIMESTAMP,   /* any unit; tz NULL = naive, else e.g. "UTC" */
    HS_TYPE_STRING,
    HS_TYPE_BINARY,
    HS_TYPE_FIXED_BINARY,
    HS_TYPE_LIST,
    HS_TYPE_FIXED_LIST,
    HS_TYPE_STRUCT,
    HS_TYPE_MAP,
    HS_TYPE_INTERVAL,    /* PostgreSQL's interval (base/interval.h), 16 bytes */
    HS_TYPE__COUNT
} hs_type;

typedef enum hs_time_unit { HS_UNIT_SECOND = 0, HS_UNIT_MILLI, HS_UNIT_MICRO, HS_UNIT_NANO } hs_time_unit;

/* Extension semantics carried beside the physical type. */
typedef enum hs_ext { HS_EXT_NONE = 0, HS_EXT_UUID, HS_EXT_JSON } hs_ext;

typedef struct hs_field hs_field;
struct hs_field {
    char *name;              /* owned; "" allowed, never NULL in a built field */
    hs_type type;
    bool nullable;
    int32_t field_id;        /* -1 when absent */
    int32_t precision;       /* DECIMAL128 */
    int32_t scale;           /* DECIMAL128 */
    int32_t width;           /* FIXED_BINARY bytes, FIXED_LIST list size */
    hs_time_unit unit;       /* TIME32/TIME64/TIMESTAMP */
    char *tz;                /* TIMESTAMP: owned, NULL = no time zone */
    hs_ext ext;
    bool keys_sorted;        /* MAP */
    int n_children;
    hs_field *children;      /* owned array of n_children */
    int n_meta;              /* key-value metadata (owned strings) */
    char **meta_keys;
    char **meta_values;
};

/* Fields.  All "init" functions leave a valid field that hs_field_clear frees. */
void hs_field_init(hs_field *f, const char *name, hs_type type, bool nullable);
HS_MUST_USE hs_status hs_field_add_child(hs_field *parent, const hs_field *child_moved);
HS_MUST_USE hs_status hs_field_set_meta(hs_field *f, const char *key, const char *value);
const char *hs_field_get_meta(const hs_field *f, const char *key); /* borrowed or NULL */
HS_MUST_USE hs_status hs_field_copy(const hs_field *src, hs_field *dst); /* deep */
void hs_field_clear(hs_field *f);  /* frees contents, leaves f zeroed */
bool hs_field_equals(const hs_field *a, const hs_field *b, bool check_names, bool check_ids);
/* Same value type, names, nullability and extension aside: the type and
 * its parameters (decimal precision/scale, time unit, timestamp unit and
 * whether it has a zone, fixed width).  Nested types: with nested_deep
 * their children compare by hs_field_equals(a, b, false, false), else the
 * kind (and fixed width) alone. */
bool hs_field_same_type(const hs_field *a, const hs_field *b, bool nested_deep);
/* LIST, FIXED_LIST, STRUCT or MAP. */
static inline bool hs_type_is_nested(hs_type t)
{
    return t == HS_TYPE_LIST || t == HS_TYPE_FIXED_LIST || t == HS_TYPE_STRUCT || t == HS_TYPE_MAP;
}
/* Byte width of the values buffer element, or 0 for variable / nested / bool. */
int hs_type_width(const hs_field *f);
const char *hs_type_name(hs_type t); /* "int64" */
/* Human form: "struct<id: int64 not null, v: fixed_size_list<float>[128]>" */
HS_MUST_USE hs_status hs_field_format(const hs_field *f, hs_buf *out);
/* Convenience constructors (name copied). */
void hs_field_init_list(hs_field *f, const char *name, bool nullable, const hs_field *elem_moved);

/* ---- buffers and columns ---- */

typedef struct hs_colbuf {
    uint8_t *data;   /* hs_malloc_aligned, or borrowed when column->owner != NULL */
    size_t len;      /* bytes in use */
    size_t cap;      /* bytes allocated (0 when borrowed) */
} hs_colbuf;

typedef struct hs_col_owner hs_col_owner;  /* refcounted keeper of imported memory */

/* Owners.  hs_col_owner_new returns an owner with one reference (NULL on OOM);
 * release(ctx) runs once, when the last reference is dropped.  Thread-safe
 * (atomic count): columns sharing an owner may be freed on different threads. */
hs_col_owner *hs_col_owner_new(void (*release)(void *ctx), void *ctx);
void hs_col_owner_ref(hs_col_owner *o);
void hs_col_owner_unref(hs_col_owner *o);  /* accepts NULL */

typedef struct hs_column hs_column;
struct hs_column {
    hs_type type;            /* copy of the field's type, for dispatch */
    int32_t width;           /* element bytes (fixed types) or FIXED_LIST size */
    int64_t length;
    int64_t null_count;      /* exact */
    hs_colbuf validity;      /* data NULL = all valid */
    hs_colbuf offsets;       /* int32, length + 1 entries when used */
    hs_colbuf values;
    int n_children;
    hs_column **children;
    hs_col_owner *owner;     /* NULL = owns its buffers */
};

static inline bool hs_bit_get(const uint8_t *bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
static inline void hs_bit_set(uint8_t *bits, int64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void hs_bit_clear(uint8_t *bits, int64_t i) { bits[i >> 3] &= (uint8_t)~(1u << (i & 7)); }
static inline bool hs_col_is_valid(const hs_column *c, int64_t i)
{
    return c->validity.data == NULL || hs_bit_get(c->validity.data, i);
}
/* Bitmap helpers: set bits in [off, off+n); copy n bits between any bit offsets. */
int64_t hs_bits_count(const uint8_t *bits, int64_t off, int64_t n);
void hs_bits_copy(uint8_t *dst, int64_t doff, const uint8_t *src, int64_t soff, int64_t n);
#define HS_COL_VALUES(c, T) ((T *)(c)->values.data)
#define HS_COL_OFFSETS(c) ((int32_t *)(c)->offsets.data)

/* Creates an empty column (and its children) for field f with room for
 * `capacity` rows.  Caller frees with hs_col_free. */
HS_MUST_USE hs_status hs_col_create(const hs_field *f, int64_t capacity, hs_column **out,
                                    hs_error *err);
void hs_col_free(hs_column *c);  /* accepts NULL; releases children and owner refs */

/* Bulk writers (decoders) may fill buffers directly instead of appending row by
 * row: hs_col_reserve(c, n, bytes), write values / offsets[length+1..] / validity
 * bits (hs_col_ensure_validity first), then advance length, null_count and each
 * buffer's len (validity (length+7)/8, offsets 4*(length+1), values as in the
 * table above).  hs_col_validate checks the result.  A column whose buffers are
 * borrowed (owner != NULL, cap == 0) must be grown by hs_col_reserve before any
 * write: growing copies it (copy on write).
 * On failure, append functions leave the column freeable but its contents
 * unspecified. */

/* Growth.  reserve: room for n more rows (and, for STRING/BINARY, value_bytes more
 * bytes); never shrinks.  Appending keeps offsets[length] valid. */
HS_MUST_USE hs_status hs_col_reserve(hs_column *c, int64_t n_rows, size_t value_bytes);
/* Materialises the validity bitmap (all valid so far) if it is absent. */
HS_MUST_USE hs_status hs_col_ensure_validity(hs_column *c);
/* Appends one null: for STRUCT also a null slot in each child, for FIXED_LIST
 * width null elements, for LIST/MAP an empty range. */
HS_MUST_USE hs_status hs_col_append_null(hs_column *c);
HS_MUST_USE hs_status hs_col_append_nulls(hs_column *c, int64_t n);
/* Appends one valid fixed-width value of the column's width (bool: *(uint8_t*)v != 0). */
HS_MUST_USE hs_status hs_col_append_fixed(hs_column *c, const void *v);
/* Appends n valid values (packed, width bytes each; BOOL: one byte each). */
HS_MUST_USE hs_status hs_col_append_fixed_n(hs_column *c, const void *v, int64_t n);
HS_MUST_USE hs_status hs_col_append_bytes(hs_column *c, const void *p, size_t n); /* STRING/BINARY/FIXED_BINARY */
/* Marks the start of one valid LIST/MAP slot whose elements the caller then appends
 * to the child; hs_col_list_end closes it (writes the next offset). STRUCT: use
 * hs_col_struct_append_valid after appending to every child. */
HS_MUST_USE hs_status hs_col_list_end(hs_column *c);
HS_MUST_USE hs_status hs_col_struct_append_valid(hs_column *c);

/* Deep equality of the logical values (null slots' contents ignored; floats
 * compared bitwise so NaN == NaN).  Used by tests. */
bool hs_col_equals(const hs_column *a, const hs_column *b);
/* New column with rows idx[0..n) of c (deep copy). */
HS_MUST_USE hs_status hs_col_take(const hs_column *c, const int64_t *idx, int64_t n,
                                  hs_column **out, hs_error *err);
/* Same, but idx[i] == -1 yields a null row (used to decode dictionaries). */
HS_MUST_USE hs_status hs_col_take_nullable(const hs_column *c, const int64_t *idx, int64_t n,
                                           hs_column **out, hs_error *err);
/* New column with rows [start, start+n) (deep copy). */
HS_MUST_USE hs_status hs_col_slice(const hs_column *c, int64_t start, int64_t n,
                                   hs_column **out, hs_error *err);
/* Appends all rows of src (same type) to dst. */
HS_MUST_USE hs_status hs_col_append_column(hs_column *dst, const hs_column *src, hs_error *err);
/* Checks internal consistency (offsets monotone and in range, child lengths,
 * null_count); HS_CORRUPT with a message if violated.  Used on imported data. */
HS_MUST_USE hs_status hs_col_validate(const hs_column *c, const hs_field *f, hs_error *err);
/* Looser check: only what the Arrow format requires (offsets[0] may be > 0,
 * children may be longer than needed).  hs_col_slice of such a column yields
 * one that passes hs_col_validate. */
HS_MUST_USE hs_status hs_col_validate_arrow(const hs_column *c, const hs_field *f, hs_error *err);

/* ---- batches ---- */

typedef struct hs_batch {
    hs_field schema;     /* STRUCT; children describe cols (owned) */
    int64_t n_rows;
    int n_cols;
    hs_column **cols;    /* owned */
} hs_batch;

/* Creates an empty batch with a deep copy of schema and empty columns. Caller frees with hs_batch_free. */
HS_MUST_USE hs_status hs_batch_create(const hs_field *schema, int64_t capacity, hs_batch **out,
                                      hs_error *err);
void hs_batch_free(hs_batch *b);  /* accepts NULL */
int hs_batch_find(const hs_batch *b, const char *name);  /* column index or -1 */

#endif
