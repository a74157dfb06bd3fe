/*
 * parquet/meta.c - Parquet metadata structures <-> Thrift compact protocol,
 * and a JSON dump of the footer (for tests and `hyperstream parquet meta`).
 *
 * File layout around the footer:
 *
 *   "PAR1" | column chunks ... | page indexes | FileMetaData | u32le len | "PAR1"
 *   ("PARE" instead of the trailing "PAR1": encrypted footer, not supported)
 *
 * Structures decoded here (field ids from apache/parquet-format parquet.thrift;
 * R = required, missing required fields are HS_CORRUPT naming struct.field):
 *
 *   FileMetaData    1 version R  2 schema R  3 num_rows R  4 row_groups R
 *                   5 key_value_metadata  6 created_by  7 column_orders
 *                   8 encryption_algorithm (flag only)  9 signing key (skipped)
 *   SchemaElement   1 type  2 type_length  3 repetition_type  4 name R
 *                   5 num_children  6 converted_type  7 scale  8 precision
 *                   9 field_id  10 logicalType
 *   RowGroup        1 columns R  2 total_byte_size R  3 num_rows R
 *                   4 sorting_columns  5 file_offset  6 total_compressed_size
 *                   7 ordinal (i16)
 *   ColumnChunk     1 file_path  2 file_offset R  3 meta_data  4/5 offset index
 *                   offset/length  6/7 column index offset/length
 *                   8 crypto_metadata, 9 encrypted_column_metadata (flag only)
 *   ColumnMetaData  1 type R  2 encodings R  3 path_in_schema R  4 codec R
 *                   5 num_values R  6 total_uncompressed_size R
 *                   7 total_compressed_size R  8 key_value_metadata
 *                   9 data_page_offset R  10 index_page_offset
 *                   11 dictionary_page_offset  12 statistics
 *                   13 encoding_stats  14 bloom_filter_offset
 *                   15 bloom_filter_length  16+ (size/geo stats: skipped)
 *   Statistics      1 max  2 min  3 null_count  4 distinct_count  5 max_value
 *                   6 min_value  7 is_max_value_exact  8 is_min_value_exact
 *   PageHeader      1 type R  2 uncompressed_page_size R
 *                   3 compressed_page_size R  4 crc  5 data_page_header
 *                   6 index_page_header (skipped)  7 dictionary_page_header
 *                   8 data_page_header_v2
 *   ColumnIndex     1 null_pages R  2 min_values R  3 max_values R
 *                   4 boundary_order R  5 null_counts  6/7 histograms (skipped)
 *   OffsetIndex     1 page_locations R  2 unencoded byte-array sizes (skipped)
 *   LogicalType     union: the member id is pq_logical_kind; DECIMAL{1 scale,
 *                   2 precision}, TIME/TIMESTAMP{1 isAdjustedToUTC, 2 unit},
 *                   INTEGER{1 bitWidth i8, 2 isSigned}; TimeUnit union
 *                   {1 MILLIS, 2 MICROS, 3 NANOS}; unknown members -> NONE.
 *
 * Decoding rules: a known field id arriving with an unexpected wire type is
 * skipped like an unknown field (what Thrift's generated code does); a list
 * whose element type is wrong is corrupt.  All output lives in the caller's
 * arena: strings NUL-terminated copies, binary values copies (a zero-length
 * present value points at a static empty array, so p != NULL means present).
 * Enum values are stored as read (writers from the future may use new ones),
 * except physical type and repetition, which are range-checked because every
 * consumer indexes tables with them.  Sizes, counts and offsets that cannot be
 * negative are checked.
 *
 * Encoding writes fields in id order, omits absent optionals (has_* false,
 * pq_bytes.p == NULL, NULL strings), and writes FileMetaData.column_orders as
 * n_column_orders TYPE_ORDER entries.
 */
#include "parquet/meta.h"
#include "parquet/thrift.h"

#include "base/mem.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t pq_empty_bytes[1] = {0};

/* ================================================================ decoding */

typedef struct dctx {
    pq_tr r;
    hs_arena *arena;
    bool no_page_stats;   /* page headers: statistics skipped, not decoded */
} dctx;

static hs_status d_missing(dctx *d, const char *strct, const char *field)
{
    return HS_CORRUPT_AT(d->r.err, "%s: required field %s.%s is missing (struct ending at byte %zu)",
                         d->r.what, strct, field, pq_tr_offset(&d->r));
}

static hs_status d_negative(dctx *d, const char *strct, const char *field, long long v)
{
    return HS_CORRUPT_AT(d->r.err, "%s: %s.%s is negative (%lld) at byte %zu", d->r.what, strct,
                         field, v, pq_tr_offset(&d->r));
}

static void *d_calloc(dctx *d, size_t n, size_t size)
{
    if (n == 0)
        return NULL;
    void *p = hs_arena_calloc(d->arena, n, size);
    if (!p)
        hs_err_nomem(d->r.err, n * size);
    return p;
}

static hs_status d_string(dctx *d, const char **out)
{
    const uint8_t *p;
    uint32_t len;
    HS_TRY(pq_tr_binary(&d->r, &p, &len));
    char *s = hs_arena_strndup(d->arena, (const char *)p, len);
    if (!s)
        return hs_err_nomem(d->r.err, (size_t)len + 1);
    *out = s;
    return HS_OK;
}

static hs_status d_bytes(dctx *d, pq_bytes *out)
{
    const uint8_t *p;
    uint32_t len;
    HS_TRY(pq_tr_binary(&d->r, &p, &len));
    if (len == 0) {
        out->p = pq_empty_bytes;
        out->len = 0;
        return HS_OK;
    }
    uint8_t *c = hs_arena_alloc(d->arena, len);
    if (!c)
        return hs_err_nomem(d->r.err, len);
    memcpy(c, p, len);
    out->p = c;
    out->len = len;
    return HS_OK;
}

/* List header whose elements must have compact type `want` (bools: 1 or 2). */
static hs_status d_list(dctx *d, uint8_t want, const char *what, uint32_t *n)
{
    size_t at = pq_tr_offset(&d->r);
    uint8_t et;
    HS_TRY(pq_tr_list(&d->r, &et, n));
    bool ok = pq_tr_is_bool(want) ? pq_tr_is_bool(et) : et == want;
    if (HS_UNLIKELY(!ok))
        return HS_CORRUPT_AT(d->r.err, "%s: list %s at byte %zu has element type %u, expected %u",
                             d->r.what, what, at, et, want);
    return HS_OK;
}

/* Field loop helpers: on a type mismatch skip the field as unknown. */
#define FIELD_LOOP_BEGIN                                  \
    int16_t last_ = 0, id_;                               \
    uint8_t t_;                                           \
    for (;;) {                                            \
        HS_TRY(pq_tr_field(&d->r, &last_, &id_, &t_));    \
        if (t_ == PQ_T_STOP)                              \
            break;                                        \
        switch (id_) {
#define FIELD_LOOP_END                                    \
        default:                                          \
            HS_TRY(pq_tr_skip(&d->r, t_));                \
            break;                                        \
        }                                                 \
    }
#define EXPECT(T)                                         \
    if (HS_UNLIKELY(t_ != (T))) {                         \
        HS_TRY(pq_tr_skip(&d->r, t_));                    \
        break;                                            \
    }
#define EXPECT_BOOL                                       \
    if (HS_UNLIKELY(!pq_tr_is_bool(t_))) {                \
        HS_TRY(pq_tr_skip(&d->r, t_));                    \
        break;                                            \
    }
#define BOOLV pq_tr_bool_value(t_)

/* Runs decoder `call` one struct level deeper. */
#define NESTED(call)                                      \
    do {                                                  \
        HS_TRY(pq_tr_enter(&d->r));                       \
        hs_status nested_s_ = (call);                     \
        pq_tr_leave(&d->r);                               \
        if (nested_s_ != HS_OK)                           \
            return nested_s_;                             \
    } while (0)

/* Decodes a list<struct> field into a fresh arena array `arr` of `count`
 * elements, each with struct decoder `decoder` one level deeper. */
#define STRUCT_LIST(what, arr, count, decoder)                    \
    do {                                                          \
        uint32_t sl_n_;                                           \
        HS_TRY(d_list(d, PQ_T_STRUCT, (what), &sl_n_));           \
        (arr) = d_calloc(d, sl_n_, sizeof *(arr));                \
        if (sl_n_ && !(arr))                                      \
            return HS_NOMEM;                                      \
        for (uint32_t sl_i_ = 0; sl_i_ < sl_n_; sl_i_++)          \
            NESTED(decoder(d, &(arr)[sl_i_]));                    \
        (count) = (int32_t)sl_n_;                                 \
    } while (0)

static hs_status d_i32_enum(dctx *d, int32_t *v) { return pq_tr_i32(&d->r, v); }

/* --- Statistics --- */
static hs_status d_statistics(dctx *d, pq_statistics *s)
{
    memset(s, 0, sizeof *s);
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_BINARY); HS_TRY(d_bytes(d, &s->max)); break;
    case 2: EXPECT(PQ_T_BINARY); HS_TRY(d_bytes(d, &s->min)); break;
    case 3: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &s->null_count)); s->has_null_count = true; break;
    case 4: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &s->distinct_count)); s->has_distinct_count = true; break;
    case 5: EXPECT(PQ_T_BINARY); HS_TRY(d_bytes(d, &s->max_value)); break;
    case 6: EXPECT(PQ_T_BINARY); HS_TRY(d_bytes(d, &s->min_value)); break;
    case 7: EXPECT_BOOL; s->has_is_max_exact = true; s->is_max_value_exact = BOOLV; break;
    case 8: EXPECT_BOOL; s->has_is_min_exact = true; s->is_min_value_exact = BOOLV; break;
    FIELD_LOOP_END
    return HS_OK;
}

/* --- page headers (hot: once per page) --- */
static hs_status d_data_page_header(dctx *d, pq_data_page_header *h)
{
    bool s1 = false, s2 = false, s3 = false, s4 = false;
    int32_t v;
    h->num_values = 0;
    h->encoding = h->def_encoding = h->rep_encoding = PQ_ENC_PLAIN;
    h->has_statistics = false; /* statistics: written only when present */
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->num_values)); s1 = true; break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); h->encoding = (pq_encoding)v; s2 = true; break;
    case 3: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); h->def_encoding = (pq_encoding)v; s3 = true; break;
    case 4: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); h->rep_encoding = (pq_encoding)v; s4 = true; break;
    case 5:
        EXPECT(PQ_T_STRUCT);
        if (d->no_page_stats) {
            HS_TRY(pq_tr_skip(&d->r, t_));
            break;
        }
        NESTED(d_statistics(d, &h->statistics));
        h->has_statistics = true;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3 && s4)))
        return d_missing(d, "DataPageHeader", !s1 ? "num_values" : !s2 ? "encoding" :
                         !s3 ? "definition_level_encoding" : "repetition_level_encoding");
    if (HS_UNLIKELY(h->num_values < 0))
        return d_negative(d, "DataPageHeader", "num_values", h->num_values);
    return HS_OK;
}

static hs_status d_dict_page_header(dctx *d, pq_dict_page_header *h)
{
    bool s1 = false, s2 = false;
    int32_t v;
    memset(h, 0, sizeof *h);
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->num_values)); s1 = true; break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); h->encoding = (pq_encoding)v; s2 = true; break;
    case 3: EXPECT_BOOL; h->is_sorted = BOOLV; break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2)))
        return d_missing(d, "DictionaryPageHeader", !s1 ? "num_values" : "encoding");
    if (HS_UNLIKELY(h->num_values < 0))
        return d_negative(d, "DictionaryPageHeader", "num_values", h->num_values);
    return HS_OK;
}

static hs_status d_data_page_header_v2(dctx *d, pq_data_page_header_v2 *h)
{
    unsigned seen = 0;
    int32_t v;
    h->num_values = h->num_nulls = h->num_rows = 0;
    h->encoding = PQ_ENC_PLAIN;
    h->def_levels_byte_length = h->rep_levels_byte_length = 0;
    h->is_compressed = true;
    h->has_statistics = false; /* statistics: written only when present */
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->num_values)); seen |= 1; break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->num_nulls)); seen |= 2; break;
    case 3: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->num_rows)); seen |= 4; break;
    case 4: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); h->encoding = (pq_encoding)v; seen |= 8; break;
    case 5: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->def_levels_byte_length)); seen |= 16; break;
    case 6: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->rep_levels_byte_length)); seen |= 32; break;
    case 7: EXPECT_BOOL; h->is_compressed = BOOLV; break;
    case 8:
        EXPECT(PQ_T_STRUCT);
        if (d->no_page_stats) {
            HS_TRY(pq_tr_skip(&d->r, t_));
            break;
        }
        NESTED(d_statistics(d, &h->statistics));
        h->has_statistics = true;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(seen != 63)) {
        static const char *names[] = {"num_values", "num_nulls", "num_rows", "encoding",
                                      "definition_levels_byte_length",
                                      "repetition_levels_byte_length"};
        int i = 0;
        while (seen & (1u << i))
            i++;
        return d_missing(d, "DataPageHeaderV2", names[i]);
    }
    if (HS_UNLIKELY(h->num_values < 0 || h->num_nulls < 0 || h->num_rows < 0 ||
                    h->def_levels_byte_length < 0 || h->rep_levels_byte_length < 0))
        return HS_CORRUPT_AT(d->r.err,
                             "%s: DataPageHeaderV2 has a negative count or length (values %d, "
                             "nulls %d, rows %d, def %d, rep %d) at byte %zu",
                             d->r.what, h->num_values, h->num_nulls, h->num_rows,
                             h->def_levels_byte_length, h->rep_levels_byte_length,
                             pq_tr_offset(&d->r));
    return HS_OK;
}

static hs_status d_page_header(dctx *d, pq_page_header *h)
{
    bool s1 = false, s2 = false, s3 = false;
    int32_t v;
    /* Not one memset: the header is ~300 bytes, mostly the two statistics
     * blocks, and zeroing them cost more than decoding a typical header.
     * Everything but the statistics blocks is zeroed (small, inlined stores). */
    h->type = PQ_PAGE_DATA;
    h->uncompressed_page_size = h->compressed_page_size = 0;
    h->has_crc = false;
    h->crc = 0;
    h->has_data = h->has_dict = h->has_data_v2 = false;
    memset(&h->data, 0, offsetof(pq_data_page_header, statistics));
    memset(&h->dict, 0, sizeof h->dict);
    memset(&h->data_v2, 0, offsetof(pq_data_page_header_v2, statistics));
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); h->type = (pq_page_type)v; s1 = true; break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->uncompressed_page_size)); s2 = true; break;
    case 3: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->compressed_page_size)); s3 = true; break;
    case 4: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &h->crc)); h->has_crc = true; break;
    case 5:
        EXPECT(PQ_T_STRUCT);
        NESTED(d_data_page_header(d, &h->data));
        h->has_data = true;
        break;
    case 7:
        EXPECT(PQ_T_STRUCT);
        NESTED(d_dict_page_header(d, &h->dict));
        h->has_dict = true;
        break;
    case 8:
        EXPECT(PQ_T_STRUCT);
        NESTED(d_data_page_header_v2(d, &h->data_v2));
        h->has_data_v2 = true;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3)))
        return d_missing(d, "PageHeader", !s1 ? "type" : !s2 ? "uncompressed_page_size" :
                         "compressed_page_size");
    if (HS_UNLIKELY(h->uncompressed_page_size < 0 || h->compressed_page_size < 0))
        return HS_CORRUPT_AT(d->r.err,
                             "%s: negative page size (uncompressed %d, compressed %d) at byte %zu",
                             d->r.what, h->uncompressed_page_size, h->compressed_page_size,
                             pq_tr_offset(&d->r));
    return HS_OK;
}

hs_status pq_decode_page_header(const uint8_t *buf, size_t len, hs_arena *arena,
                                pq_page_header *out, size_t *used, hs_error *err)
{
    return pq_decode_page_header_ex(buf, len, arena, false, out, used, err);
}

hs_status pq_decode_page_header_ex(const uint8_t *buf, size_t len, hs_arena *arena,
                                   bool skip_stats, pq_page_header *out, size_t *used,
                                   hs_error *err)
{
    dctx d = {0};
    pq_tr_init(&d.r, buf, len, "page header", err);
    d.arena = arena;
    d.no_page_stats = skip_stats;
    hs_status st = d_page_header(&d, out);
    if (st == HS_OK && used)
        *used = pq_tr_offset(&d.r);
    return st;
}

/* --- LogicalType --- */
static hs_status d_time_unit(dctx *d, pq_time_unit *u)
{
    FIELD_LOOP_BEGIN
    case 1: case 2: case 3:
        EXPECT(PQ_T_STRUCT);
        *u = (pq_time_unit)id_;
        HS_TRY(pq_tr_skip(&d->r, t_));
        break;
    FIELD_LOOP_END
    return HS_OK;
}

static hs_status d_decimal_type(dctx *d, pq_logical_type *lt)
{
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &lt->scale)); break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &lt->precision)); break;
    FIELD_LOOP_END
    return HS_OK;
}

static hs_status d_time_type(dctx *d, pq_logical_type *lt)
{
    FIELD_LOOP_BEGIN
    case 1: EXPECT_BOOL; lt->is_adjusted_to_utc = BOOLV; break;
    case 2: EXPECT(PQ_T_STRUCT); NESTED(d_time_unit(d, &lt->unit)); break;
    FIELD_LOOP_END
    return HS_OK;
}

static hs_status d_int_type(dctx *d, pq_logical_type *lt)
{
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_BYTE); HS_TRY(pq_tr_byte(&d->r, &lt->bit_width)); break;
    case 2: EXPECT_BOOL; lt->is_signed = BOOLV; break;
    FIELD_LOOP_END
    return HS_OK;
}

static bool lt_known_empty(int id)
{
    switch (id) {
    case PQ_LT_STRING: case PQ_LT_MAP: case PQ_LT_LIST: case PQ_LT_ENUM: case PQ_LT_DATE:
    case PQ_LT_UNKNOWN: case PQ_LT_JSON: case PQ_LT_BSON: case PQ_LT_UUID: case PQ_LT_FLOAT16:
    case PQ_LT_VARIANT: case PQ_LT_GEOMETRY: case PQ_LT_GEOGRAPHY:
        return true;
    default:
        return false;
    }
}

static hs_status d_logical_type(dctx *d, pq_logical_type *lt)
{
    memset(lt, 0, sizeof *lt);
    FIELD_LOOP_BEGIN
    case PQ_LT_DECIMAL:
        EXPECT(PQ_T_STRUCT);
        lt->kind = PQ_LT_DECIMAL;
        NESTED(d_decimal_type(d, lt));
        break;
    case PQ_LT_TIME:
    case PQ_LT_TIMESTAMP:
        EXPECT(PQ_T_STRUCT);
        lt->kind = (pq_logical_kind)id_;
        NESTED(d_time_type(d, lt));
        break;
    case PQ_LT_INTEGER:
        EXPECT(PQ_T_STRUCT);
        lt->kind = PQ_LT_INTEGER;
        NESTED(d_int_type(d, lt));
        break;
    default:
        /* Members without modelled content (their inner fields, such as
         * GEOMETRY's crs, are skipped) and unknown members (kind stays NONE). */
        if (t_ == PQ_T_STRUCT && lt_known_empty(id_))
            lt->kind = (pq_logical_kind)id_;
        HS_TRY(pq_tr_skip(&d->r, t_));
        break;
    }
    }
    return HS_OK;
}

/* --- SchemaElement --- */
static hs_status d_schema_element(dctx *d, pq_schema_element *e)
{
    int32_t v;
    memset(e, 0, sizeof *e);
    e->converted_type = PQ_CT_NONE;
    FIELD_LOOP_BEGIN
    case 1:
        EXPECT(PQ_T_I32);
        HS_TRY(d_i32_enum(d, &v));
        if (HS_UNLIKELY(v < PQ_BOOLEAN || v > PQ_FIXED_LEN_BYTE_ARRAY))
            return pq_tr_err(&d->r, "SchemaElement.type %d is not a physical type", (int)v);
        e->has_type = true;
        e->type = (pq_ptype)v;
        break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &e->type_length)); break;
    case 3:
        EXPECT(PQ_T_I32);
        HS_TRY(d_i32_enum(d, &v));
        if (HS_UNLIKELY(v < PQ_REQUIRED || v > PQ_REPEATED))
            return pq_tr_err(&d->r, "SchemaElement.repetition_type %d is invalid", (int)v);
        e->has_repetition = true;
        e->repetition = (pq_repetition)v;
        break;
    case 4: EXPECT(PQ_T_BINARY); HS_TRY(d_string(d, &e->name)); break;
    case 5: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &e->num_children)); break;
    case 6: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); e->converted_type = (pq_converted_type)v; break;
    case 7: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &e->scale)); break;
    case 8: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &e->precision)); break;
    case 9: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &e->field_id)); e->has_field_id = true; break;
    case 10: EXPECT(PQ_T_STRUCT); NESTED(d_logical_type(d, &e->logical)); break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!e->name))
        return d_missing(d, "SchemaElement", "name");
    if (HS_UNLIKELY(e->num_children < 0))
        return d_negative(d, "SchemaElement", "num_children", e->num_children);
    return HS_OK;
}

/* --- KeyValue list --- */
static hs_status d_kv(dctx *d, pq_kv *kv)
{
    memset(kv, 0, sizeof *kv);
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_BINARY); HS_TRY(d_string(d, &kv->key)); break;
    case 2: EXPECT(PQ_T_BINARY); HS_TRY(d_string(d, &kv->value)); break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!kv->key))
        return d_missing(d, "KeyValue", "key");
    return HS_OK;
}

static hs_status d_kv_list(dctx *d, int32_t *n_out, pq_kv **out)
{
    STRUCT_LIST("key_value_metadata", *out, *n_out, d_kv);
    return HS_OK;
}

/* --- ColumnMetaData --- */
static hs_status d_encoding_stats(dctx *d, pq_encoding_stats *s)
{
    bool s1 = false, s2 = false, s3 = false;
    int32_t v;
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); s->page_type = (pq_page_type)v; s1 = true; break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); s->encoding = (pq_encoding)v; s2 = true; break;
    case 3: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &s->count)); s3 = true; break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3)))
        return d_missing(d, "PageEncodingStats", !s1 ? "page_type" : !s2 ? "encoding" : "count");
    return HS_OK;
}

static hs_status d_column_meta(dctx *d, pq_column_meta *m)
{
    unsigned seen = 0;
    uint32_t n, i;
    int32_t v;
    memset(m, 0, sizeof *m);
    FIELD_LOOP_BEGIN
    case 1:
        EXPECT(PQ_T_I32);
        HS_TRY(d_i32_enum(d, &v));
        if (HS_UNLIKELY(v < PQ_BOOLEAN || v > PQ_FIXED_LEN_BYTE_ARRAY))
            return pq_tr_err(&d->r, "ColumnMetaData.type %d is not a physical type", (int)v);
        m->type = (pq_ptype)v;
        seen |= 1;
        break;
    case 2:
        EXPECT(PQ_T_LIST);
        HS_TRY(d_list(d, PQ_T_I32, "encodings", &n));
        m->encodings = d_calloc(d, n, sizeof *m->encodings);
        if (n && !m->encodings)
            return HS_NOMEM;
        for (i = 0; i < n; i++) {
            HS_TRY(d_i32_enum(d, &v));
            m->encodings[i] = (pq_encoding)v;
        }
        m->n_encodings = (int32_t)n;
        seen |= 2;
        break;
    case 3:
        EXPECT(PQ_T_LIST);
        HS_TRY(d_list(d, PQ_T_BINARY, "path_in_schema", &n));
        m->path = d_calloc(d, n, sizeof *m->path);
        if (n && !m->path)
            return HS_NOMEM;
        for (i = 0; i < n; i++)
            HS_TRY(d_string(d, &m->path[i]));
        m->n_path = (int32_t)n;
        seen |= 4;
        break;
    case 4: EXPECT(PQ_T_I32); HS_TRY(d_i32_enum(d, &v)); m->codec = (pq_codec)v; seen |= 8; break;
    case 5: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &m->num_values)); seen |= 16; break;
    case 6: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &m->total_uncompressed_size)); seen |= 32; break;
    case 7: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &m->total_compressed_size)); seen |= 64; break;
    case 8: EXPECT(PQ_T_LIST); NESTED(d_kv_list(d, &m->n_kv, &m->kv)); break;
    case 9: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &m->data_page_offset)); seen |= 128; break;
    case 10:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &m->index_page_offset));
        m->has_index_page_offset = true;
        break;
    case 11:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &m->dictionary_page_offset));
        m->has_dictionary_page_offset = true;
        break;
    case 12:
        EXPECT(PQ_T_STRUCT);
        NESTED(d_statistics(d, &m->statistics));
        m->has_statistics = true;
        break;
    case 13:
        EXPECT(PQ_T_LIST);
        STRUCT_LIST("encoding_stats", m->encoding_stats, m->n_encoding_stats, d_encoding_stats);
        break;
    case 14:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &m->bloom_filter_offset));
        m->has_bloom_filter_offset = true;
        break;
    case 15:
        EXPECT(PQ_T_I32);
        HS_TRY(pq_tr_i32(&d->r, &m->bloom_filter_length));
        m->has_bloom_filter_length = true;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(seen != 255)) {
        static const char *names[] = {"type", "encodings", "path_in_schema", "codec",
                                      "num_values", "total_uncompressed_size",
                                      "total_compressed_size", "data_page_offset"};
        int k = 0;
        while (seen & (1u << k))
            k++;
        return d_missing(d, "ColumnMetaData", names[k]);
    }
    if (HS_UNLIKELY(m->num_values < 0))
        return d_negative(d, "ColumnMetaData", "num_values", m->num_values);
    if (HS_UNLIKELY(m->total_compressed_size < 0))
        return d_negative(d, "ColumnMetaData", "total_compressed_size", m->total_compressed_size);
    if (HS_UNLIKELY(m->total_uncompressed_size < 0))
        return d_negative(d, "ColumnMetaData", "total_uncompressed_size",
                          m->total_uncompressed_size);
    return HS_OK;
}

/* --- ColumnChunk --- */
static hs_status d_column_chunk(dctx *d, pq_column_chunk *c)
{
    bool s2 = false, seen_oi_len = false, seen_ci_len = false;
    memset(c, 0, sizeof *c);
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_BINARY); HS_TRY(d_string(d, &c->file_path)); break;
    case 2: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &c->file_offset)); s2 = true; break;
    case 3:
        EXPECT(PQ_T_STRUCT);
        NESTED(d_column_meta(d, &c->meta_data));
        c->has_meta_data = true;
        break;
    case 4:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &c->offset_index_offset));
        c->has_offset_index = true;
        break;
    case 5:
        EXPECT(PQ_T_I32);
        HS_TRY(pq_tr_i32(&d->r, &c->offset_index_length));
        seen_oi_len = true;
        break;
    case 6:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &c->column_index_offset));
        c->has_column_index = true;
        break;
    case 7:
        EXPECT(PQ_T_I32);
        HS_TRY(pq_tr_i32(&d->r, &c->column_index_length));
        seen_ci_len = true;
        break;
    case 8:
    case 9:
        c->is_encrypted = true;
        HS_TRY(pq_tr_skip(&d->r, t_));
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!s2))
        return d_missing(d, "ColumnChunk", "file_offset");
    /* An index is usable only with both its offset and its length. */
    if (!c->has_offset_index || !seen_oi_len) {
        c->has_offset_index = false;
        c->offset_index_offset = 0;
        c->offset_index_length = 0;
    }
    if (!c->has_column_index || !seen_ci_len) {
        c->has_column_index = false;
        c->column_index_offset = 0;
        c->column_index_length = 0;
    }
    if (HS_UNLIKELY(c->offset_index_length < 0 || c->column_index_length < 0))
        return HS_CORRUPT_AT(d->r.err,
                             "%s: ColumnChunk page index lengths negative (offset index %d, "
                             "column index %d) at byte %zu",
                             d->r.what, c->offset_index_length, c->column_index_length,
                             pq_tr_offset(&d->r));
    return HS_OK;
}

/* --- RowGroup --- */
static hs_status d_sorting_column(dctx *d, pq_sorting_column *s)
{
    bool s1 = false, s2 = false, s3 = false;
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &s->column_idx)); s1 = true; break;
    case 2: EXPECT_BOOL; s->descending = BOOLV; s2 = true; break;
    case 3: EXPECT_BOOL; s->nulls_first = BOOLV; s3 = true; break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3)))
        return d_missing(d, "SortingColumn", !s1 ? "column_idx" : !s2 ? "descending" :
                         "nulls_first");
    return HS_OK;
}

static hs_status d_row_group(dctx *d, pq_row_group *g)
{
    bool s1 = false, s2 = false, s3 = false;
    memset(g, 0, sizeof *g);
    FIELD_LOOP_BEGIN
    case 1:
        EXPECT(PQ_T_LIST);
        STRUCT_LIST("columns", g->columns, g->n_columns, d_column_chunk);
        s1 = true;
        break;
    case 2: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &g->total_byte_size)); s2 = true; break;
    case 3: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &g->num_rows)); s3 = true; break;
    case 4:
        EXPECT(PQ_T_LIST);
        STRUCT_LIST("sorting_columns", g->sorting_columns, g->n_sorting_columns, d_sorting_column);
        break;
    case 5:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &g->file_offset));
        g->has_file_offset = true;
        break;
    case 6:
        EXPECT(PQ_T_I64);
        HS_TRY(pq_tr_i64(&d->r, &g->total_compressed_size));
        g->has_total_compressed_size = true;
        break;
    case 7:
        EXPECT(PQ_T_I16);
        HS_TRY(pq_tr_i16(&d->r, &g->ordinal));
        g->has_ordinal = true;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3)))
        return d_missing(d, "RowGroup", !s1 ? "columns" : !s2 ? "total_byte_size" : "num_rows");
    if (HS_UNLIKELY(g->num_rows < 0))
        return d_negative(d, "RowGroup", "num_rows", g->num_rows);
    return HS_OK;
}

/* --- FileMetaData --- */
static hs_status d_file_meta(dctx *d, pq_file_meta *m)
{
    bool s1 = false, s2 = false, s3 = false, s4 = false;
    uint32_t n, i;
    memset(m, 0, sizeof *m);
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &m->version)); s1 = true; break;
    case 2:
        EXPECT(PQ_T_LIST);
        STRUCT_LIST("schema", m->schema, m->n_schema, d_schema_element);
        s2 = true;
        break;
    case 3: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &m->num_rows)); s3 = true; break;
    case 4:
        EXPECT(PQ_T_LIST);
        STRUCT_LIST("row_groups", m->row_groups, m->n_row_groups, d_row_group);
        s4 = true;
        break;
    case 5: EXPECT(PQ_T_LIST); NESTED(d_kv_list(d, &m->n_kv, &m->kv)); break;
    case 6: EXPECT(PQ_T_BINARY); HS_TRY(d_string(d, &m->created_by)); break;
    case 7:
        EXPECT(PQ_T_LIST);
        HS_TRY(d_list(d, PQ_T_STRUCT, "column_orders", &n));
        HS_TRY(pq_tr_enter(&d->r));
        for (i = 0; i < n; i++) {
            hs_status st = pq_tr_skip(&d->r, PQ_T_STRUCT);
            if (st != HS_OK) {
                pq_tr_leave(&d->r);
                return st;
            }
        }
        pq_tr_leave(&d->r);
        m->n_column_orders = (int32_t)n;
        break;
    case 8:
        m->has_encryption_algorithm = true;
        HS_TRY(pq_tr_skip(&d->r, t_));
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3 && s4)))
        return d_missing(d, "FileMetaData", !s1 ? "version" : !s2 ? "schema" :
                         !s3 ? "num_rows" : "row_groups");
    if (HS_UNLIKELY(m->num_rows < 0))
        return d_negative(d, "FileMetaData", "num_rows", m->num_rows);
    return HS_OK;
}

hs_status pq_decode_file_meta(const uint8_t *buf, size_t len, hs_arena *arena,
                              pq_file_meta *out, hs_error *err)
{
    dctx d = {0};
    pq_tr_init(&d.r, buf, len, "footer", err);
    d.arena = arena;
    return d_file_meta(&d, out);
}

/* --- ColumnIndex / OffsetIndex --- */
static hs_status d_column_index(dctx *d, pq_column_index *ci)
{
    bool s4 = false;
    int32_t v;
    uint32_t n, i;
    int64_t n_null = -1, n_min = -1, n_max = -1, n_counts = -1;
    memset(ci, 0, sizeof *ci);
    FIELD_LOOP_BEGIN
    case 1:
        EXPECT(PQ_T_LIST);
        HS_TRY(d_list(d, PQ_T_TRUE, "null_pages", &n));
        ci->null_pages = d_calloc(d, n, sizeof *ci->null_pages);
        if (n && !ci->null_pages)
            return HS_NOMEM;
        for (i = 0; i < n; i++)
            HS_TRY(pq_tr_bool_elem(&d->r, &ci->null_pages[i]));
        n_null = n;
        break;
    case 2:
    case 3: {
        EXPECT(PQ_T_LIST);
        HS_TRY(d_list(d, PQ_T_BINARY, id_ == 2 ? "min_values" : "max_values", &n));
        pq_bytes *a = d_calloc(d, n, sizeof *a);
        if (n && !a)
            return HS_NOMEM;
        for (i = 0; i < n; i++)
            HS_TRY(d_bytes(d, &a[i]));
        if (id_ == 2) {
            ci->min_values = a;
            n_min = n;
        } else {
            ci->max_values = a;
            n_max = n;
        }
        break;
    }
    case 4:
        EXPECT(PQ_T_I32);
        HS_TRY(d_i32_enum(d, &v));
        ci->boundary_order = (pq_boundary_order)v;
        s4 = true;
        break;
    case 5:
        EXPECT(PQ_T_LIST);
        HS_TRY(d_list(d, PQ_T_I64, "null_counts", &n));
        ci->null_counts = d_calloc(d, n, sizeof *ci->null_counts);
        if (n && !ci->null_counts)
            return HS_NOMEM;
        for (i = 0; i < n; i++)
            HS_TRY(pq_tr_i64(&d->r, &ci->null_counts[i]));
        ci->has_null_counts = true;
        n_counts = n;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(n_null < 0 || n_min < 0 || n_max < 0 || !s4))
        return d_missing(d, "ColumnIndex", n_null < 0 ? "null_pages" : n_min < 0 ? "min_values" :
                         n_max < 0 ? "max_values" : "boundary_order");
    if (HS_UNLIKELY(n_min != n_null || n_max != n_null || (n_counts >= 0 && n_counts != n_null)))
        return HS_CORRUPT_AT(d->r.err,
                             "%s: ColumnIndex lists disagree: %lld null_pages, %lld min_values, "
                             "%lld max_values, %lld null_counts",
                             d->r.what, (long long)n_null, (long long)n_min, (long long)n_max,
                             (long long)n_counts);
    ci->n_pages = (int32_t)n_null;
    return HS_OK;
}

hs_status pq_decode_column_index(const uint8_t *buf, size_t len, hs_arena *arena,
                                 pq_column_index *out, hs_error *err)
{
    dctx d = {0};
    pq_tr_init(&d.r, buf, len, "column index", err);
    d.arena = arena;
    return d_column_index(&d, out);
}

static hs_status d_page_location(dctx *d, pq_page_location *l)
{
    bool s1 = false, s2 = false, s3 = false;
    FIELD_LOOP_BEGIN
    case 1: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &l->offset)); s1 = true; break;
    case 2: EXPECT(PQ_T_I32); HS_TRY(pq_tr_i32(&d->r, &l->compressed_page_size)); s2 = true; break;
    case 3: EXPECT(PQ_T_I64); HS_TRY(pq_tr_i64(&d->r, &l->first_row_index)); s3 = true; break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!(s1 && s2 && s3)))
        return d_missing(d, "PageLocation", !s1 ? "offset" : !s2 ? "compressed_page_size" :
                         "first_row_index");
    if (HS_UNLIKELY(l->offset < 0 || l->compressed_page_size < 0 || l->first_row_index < 0))
        return HS_CORRUPT_AT(d->r.err,
                             "%s: PageLocation has negative offset %lld, size %d or first row "
                             "%lld at byte %zu",
                             d->r.what, (long long)l->offset, l->compressed_page_size,
                             (long long)l->first_row_index, pq_tr_offset(&d->r));
    return HS_OK;
}

static hs_status d_offset_index(dctx *d, pq_offset_index *oi)
{
    bool s1 = false;
    memset(oi, 0, sizeof *oi);
    FIELD_LOOP_BEGIN
    case 1:
        EXPECT(PQ_T_LIST);
        STRUCT_LIST("page_locations", oi->pages, oi->n_pages, d_page_location);
        s1 = true;
        break;
    FIELD_LOOP_END
    if (HS_UNLIKELY(!s1))
        return d_missing(d, "OffsetIndex", "page_locations");
    return HS_OK;
}

hs_status pq_decode_offset_index(const uint8_t *buf, size_t len, hs_arena *arena,
                                 pq_offset_index *out, hs_error *err)
{
    dctx d = {0};
    pq_tr_init(&d.r, buf, len, "offset index", err);
    d.arena = arena;
    return d_offset_index(&d, out);
}

/* ================================================================ encoding */

static void e_bytes_field(pq_tw *w, int16_t *last, int16_t id, pq_bytes b)
{
    if (b.p)
        pq_tw_binary_field(w, last, id, b.p, b.len);
}

static void e_statistics(pq_tw *w, const pq_statistics *s)
{
    int16_t last = 0;
    e_bytes_field(w, &last, 1, s->max);
    e_bytes_field(w, &last, 2, s->min);
    if (s->has_null_count)
        pq_tw_i64_field(w, &last, 3, s->null_count);
    if (s->has_distinct_count)
        pq_tw_i64_field(w, &last, 4, s->distinct_count);
    e_bytes_field(w, &last, 5, s->max_value);
    e_bytes_field(w, &last, 6, s->min_value);
    if (s->has_is_max_exact)
        pq_tw_bool_field(w, &last, 7, s->is_max_value_exact);
    if (s->has_is_min_exact)
        pq_tw_bool_field(w, &last, 8, s->is_min_value_exact);
    pq_tw_stop(w);
}

static void e_page_header(pq_tw *w, const pq_page_header *h)
{
    int16_t last = 0, l2;
    pq_tw_i32_field(w, &last, 1, (int32_t)h->type);
    pq_tw_i32_field(w, &last, 2, h->uncompressed_page_size);
    pq_tw_i32_field(w, &last, 3, h->compressed_page_size);
    if (h->has_crc)
        pq_tw_i32_field(w, &last, 4, h->crc);
    if (h->has_data) {
        const pq_data_page_header *d = &h->data;
        pq_tw_field(w, &last, 5, PQ_T_STRUCT);
        l2 = 0;
        pq_tw_i32_field(w, &l2, 1, d->num_values);
        pq_tw_i32_field(w, &l2, 2, (int32_t)d->encoding);
        pq_tw_i32_field(w, &l2, 3, (int32_t)d->def_encoding);
        pq_tw_i32_field(w, &l2, 4, (int32_t)d->rep_encoding);
        if (d->has_statistics) {
            pq_tw_field(w, &l2, 5, PQ_T_STRUCT);
            e_statistics(w, &d->statistics);
        }
        pq_tw_stop(w);
    }
    if (h->has_dict) {
        pq_tw_field(w, &last, 7, PQ_T_STRUCT);
        l2 = 0;
        pq_tw_i32_field(w, &l2, 1, h->dict.num_values);
        pq_tw_i32_field(w, &l2, 2, (int32_t)h->dict.encoding);
        if (h->dict.is_sorted)
            pq_tw_bool_field(w, &l2, 3, true);
        pq_tw_stop(w);
    }
    if (h->has_data_v2) {
        const pq_data_page_header_v2 *d = &h->data_v2;
        pq_tw_field(w, &last, 8, PQ_T_STRUCT);
        l2 = 0;
        pq_tw_i32_field(w, &l2, 1, d->num_values);
        pq_tw_i32_field(w, &l2, 2, d->num_nulls);
        pq_tw_i32_field(w, &l2, 3, d->num_rows);
        pq_tw_i32_field(w, &l2, 4, (int32_t)d->encoding);
        pq_tw_i32_field(w, &l2, 5, d->def_levels_byte_length);
        pq_tw_i32_field(w, &l2, 6, d->rep_levels_byte_length);
        if (!d->is_compressed)
            pq_tw_bool_field(w, &l2, 7, false);
        if (d->has_statistics) {
            pq_tw_field(w, &l2, 8, PQ_T_STRUCT);
            e_statistics(w, &d->statistics);
        }
        pq_tw_stop(w);
    }
    pq_tw_stop(w);
}

hs_status pq_encode_page_header(const pq_page_header *h, hs_buf *out)
{
    pq_tw w;
    pq_tw_init(&w, out);
    size_t start = out->len;
    HS_TRY(hs_buf_reserve(out, 64));
    e_page_header(&w, h);
    if (w.st != HS_OK)
        out->len = start;
    return w.st;
}

static void e_empty_struct(pq_tw *w) { pq_tw_stop(w); }

static void e_time_unit(pq_tw *w, pq_time_unit u)
{
    int16_t last = 0;
    if (u >= PQ_TU_MILLIS && u <= PQ_TU_NANOS) {
        pq_tw_field(w, &last, (int16_t)u, PQ_T_STRUCT);
        e_empty_struct(w);
    }
    pq_tw_stop(w);
}

static void e_logical_type(pq_tw *w, const pq_logical_type *lt)
{
    int16_t last = 0, l2 = 0;
    pq_tw_field(w, &last, (int16_t)lt->kind, PQ_T_STRUCT);
    switch (lt->kind) {
    case PQ_LT_DECIMAL:
        pq_tw_i32_field(w, &l2, 1, lt->scale);
        pq_tw_i32_field(w, &l2, 2, lt->precision);
        break;
    case PQ_LT_TIME:
    case PQ_LT_TIMESTAMP:
        pq_tw_bool_field(w, &l2, 1, lt->is_adjusted_to_utc);
        pq_tw_field(w, &l2, 2, PQ_T_STRUCT);
        e_time_unit(w, lt->unit);
        break;
    case PQ_LT_INTEGER:
        pq_tw_byte_field(w, &l2, 1, lt->bit_width);
        pq_tw_bool_field(w, &l2, 2, lt->is_signed);
        break;
    default:
        break;
    }
    pq_tw_stop(w); /* member struct */
    pq_tw_stop(w); /* union */
}

static void e_schema_element(pq_tw *w, const pq_schema_element *e)
{
    int16_t last = 0;
    if (e->has_type)
        pq_tw_i32_field(w, &last, 1, (int32_t)e->type);
    if (e->type_length)
        pq_tw_i32_field(w, &last, 2, e->type_length);
    if (e->has_repetition)
        pq_tw_i32_field(w, &last, 3, (int32_t)e->repetition);
    pq_tw_string_field(w, &last, 4, e->name ? e->name : "");
    if (e->num_children)
        pq_tw_i32_field(w, &last, 5, e->num_children);
    if (e->converted_type != PQ_CT_NONE)
        pq_tw_i32_field(w, &last, 6, (int32_t)e->converted_type);
    if (e->scale || e->precision) {
        pq_tw_i32_field(w, &last, 7, e->scale);
        pq_tw_i32_field(w, &last, 8, e->precision);
    }
    if (e->has_field_id)
        pq_tw_i32_field(w, &last, 9, e->field_id);
    if (e->logical.kind != PQ_LT_NONE) {
        pq_tw_field(w, &last, 10, PQ_T_STRUCT);
        e_logical_type(w, &e->logical);
    }
    pq_tw_stop(w);
}

static void e_kv_list(pq_tw *w, int16_t *last, int16_t id, int32_t n, const pq_kv *kv)
{
    int32_t i;
    if (n <= 0)
        return;
    pq_tw_field(w, last, id, PQ_T_LIST);
    pq_tw_list(w, PQ_T_STRUCT, (uint32_t)n);
    for (i = 0; i < n; i++) {
        int16_t l2 = 0;
        pq_tw_string_field(w, &l2, 1, kv[i].key ? kv[i].key : "");
        if (kv[i].value)
            pq_tw_string_field(w, &l2, 2, kv[i].value);
        pq_tw_stop(w);
    }
}

static void e_column_meta(pq_tw *w, const pq_column_meta *m)
{
    int16_t last = 0;
    int32_t i;
    pq_tw_i32_field(w, &last, 1, (int32_t)m->type);
    pq_tw_field(w, &last, 2, PQ_T_LIST);
    pq_tw_list(w, PQ_T_I32, (uint32_t)(m->n_encodings > 0 ? m->n_encodings : 0));
    for (i = 0; i < m->n_encodings; i++)
        pq_tw_zigzag(w, (int32_t)m->encodings[i]);
    pq_tw_field(w, &last, 3, PQ_T_LIST);
    pq_tw_list(w, PQ_T_BINARY, (uint32_t)(m->n_path > 0 ? m->n_path : 0));
    for (i = 0; i < m->n_path; i++)
        pq_tw_binary(w, m->path[i], strlen(m->path[i]));
    pq_tw_i32_field(w, &last, 4, (int32_t)m->codec);
    pq_tw_i64_field(w, &last, 5, m->num_values);
    pq_tw_i64_field(w, &last, 6, m->total_uncompressed_size);
    pq_tw_i64_field(w, &last, 7, m->total_compressed_size);
    e_kv_list(w, &last, 8, m->n_kv, m->kv);
    pq_tw_i64_field(w, &last, 9, m->data_page_offset);
    if (m->has_index_page_offset)
        pq_tw_i64_field(w, &last, 10, m->index_page_offset);
    if (m->has_dictionary_page_offset)
        pq_tw_i64_field(w, &last, 11, m->dictionary_page_offset);
    if (m->has_statistics) {
        pq_tw_field(w, &last, 12, PQ_T_STRUCT);
        e_statistics(w, &m->statistics);
    }
    if (m->n_encoding_stats > 0) {
        pq_tw_field(w, &last, 13, PQ_T_LIST);
        pq_tw_list(w, PQ_T_STRUCT, (uint32_t)m->n_encoding_stats);
        for (i = 0; i < m->n_encoding_stats; i++) {
            int16_t l2 = 0;
            pq_tw_i32_field(w, &l2, 1, (int32_t)m->encoding_stats[i].page_type);
            pq_tw_i32_field(w, &l2, 2, (int32_t)m->encoding_stats[i].encoding);
            pq_tw_i32_field(w, &l2, 3, m->encoding_stats[i].count);
            pq_tw_stop(w);
        }
    }
    if (m->has_bloom_filter_offset)
        pq_tw_i64_field(w, &last, 14, m->bloom_filter_offset);
    if (m->has_bloom_filter_length)
        pq_tw_i32_field(w, &last, 15, m->bloom_filter_length);
    pq_tw_stop(w);
}

static void e_column_chunk(pq_tw *w, const pq_column_chunk *c)
{
    int16_t last = 0;
    if (c->file_path)
        pq_tw_string_field(w, &last, 1, c->file_path);
    pq_tw_i64_field(w, &last, 2, c->file_offset);
    if (c->has_meta_data) {
        pq_tw_field(w, &last, 3, PQ_T_STRUCT);
        e_column_meta(w, &c->meta_data);
    }
    if (c->has_offset_index) {
        pq_tw_i64_field(w, &last, 4, c->offset_index_offset);
        pq_tw_i32_field(w, &last, 5, c->offset_index_length);
    }
    if (c->has_column_index) {
        pq_tw_i64_field(w, &last, 6, c->column_index_offset);
        pq_tw_i32_field(w, &last, 7, c->column_index_length);
    }
    pq_tw_stop(w);
}

static void e_row_group(pq_tw *w, const pq_row_group *g)
{
    int16_t last = 0;
    int32_t i;
    pq_tw_field(w, &last, 1, PQ_T_LIST);
    pq_tw_list(w, PQ_T_STRUCT, (uint32_t)(g->n_columns > 0 ? g->n_columns : 0));
    for (i = 0; i < g->n_columns; i++)
        e_column_chunk(w, &g->columns[i]);
    pq_tw_i64_field(w, &last, 2, g->total_byte_size);
    pq_tw_i64_field(w, &last, 3, g->num_rows);
    if (g->n_sorting_columns > 0) {
        pq_tw_field(w, &last, 4, PQ_T_LIST);
        pq_tw_list(w, PQ_T_STRUCT, (uint32_t)g->n_sorting_columns);
        for (i = 0; i < g->n_sorting_columns; i++) {
            int16_t l2 = 0;
            pq_tw_i32_field(w, &l2, 1, g->sorting_columns[i].column_idx);
            pq_tw_bool_field(w, &l2, 2, g->sorting_columns[i].descending);
            pq_tw_bool_field(w, &l2, 3, g->sorting_columns[i].nulls_first);
            pq_tw_stop(w);
        }
    }
    if (g->has_file_offset)
        pq_tw_i64_field(w, &last, 5, g->file_offset);
    if (g->has_total_compressed_size)
        pq_tw_i64_field(w, &last, 6, g->total_compressed_size);
    if (g->has_ordinal)
        pq_tw_i16_field(w, &last, 7, g->ordinal);
    pq_tw_stop(w);
}

/* An array of n elements is usable: n >= 0 and a pointer when n > 0. */
#define ARR_OK(n, p) ((n) >= 0 && ((n) == 0 || (p) != NULL))

static bool kv_ok(int32_t n, const pq_kv *kv)
{
    if (!ARR_OK(n, kv))
        return false;
    for (int32_t i = 0; i < n; i++)
        if (!kv[i].key)
            return false;
    return true;
}

/* Rejects what the encoder cannot write (it would dereference NULL or write a
 * negative count): the writer's bug, reported as HS_INVALID. */
static hs_status check_meta_for_encoding(const pq_file_meta *m)
{
    int32_t r, c, i;
    if (!ARR_OK(m->n_schema, m->schema) || !ARR_OK(m->n_row_groups, m->row_groups) ||
        !kv_ok(m->n_kv, m->kv))
        return HS_INVALID;
    for (i = 0; i < m->n_schema; i++)
        if (!m->schema[i].name)
            return HS_INVALID;
    for (r = 0; r < m->n_row_groups; r++) {
        const pq_row_group *g = &m->row_groups[r];
        if (!ARR_OK(g->n_columns, g->columns) ||
            !ARR_OK(g->n_sorting_columns, g->sorting_columns))
            return HS_INVALID;
        for (c = 0; c < g->n_columns; c++) {
            const pq_column_meta *cm = &g->columns[c].meta_data;
            if (!g->columns[c].has_meta_data)
                continue;
            if (!ARR_OK(cm->n_encodings, cm->encodings) || !ARR_OK(cm->n_path, cm->path) ||
                !kv_ok(cm->n_kv, cm->kv) || !ARR_OK(cm->n_encoding_stats, cm->encoding_stats))
                return HS_INVALID;
            for (i = 0; i < cm->n_path; i++)
                if (!cm->path[i])
                    return HS_INVALID;
        }
    }
    return HS_OK;
}

hs_status pq_encode_file_meta(const pq_file_meta *m, hs_buf *out)
{
    pq_tw w;
    int16_t last = 0;
    int32_t i;
    HS_TRY(check_meta_for_encoding(m));
    size_t start = out->len;
    pq_tw_init(&w, out);
    pq_tw_i32_field(&w, &last, 1, m->version);
    pq_tw_field(&w, &last, 2, PQ_T_LIST);
    pq_tw_list(&w, PQ_T_STRUCT, (uint32_t)m->n_schema);
    for (i = 0; i < m->n_schema; i++)
        e_schema_element(&w, &m->schema[i]);
    pq_tw_i64_field(&w, &last, 3, m->num_rows);
    pq_tw_field(&w, &last, 4, PQ_T_LIST);
    pq_tw_list(&w, PQ_T_STRUCT, (uint32_t)m->n_row_groups);
    for (i = 0; i < m->n_row_groups; i++)
        e_row_group(&w, &m->row_groups[i]);
    e_kv_list(&w, &last, 5, m->n_kv, m->kv);
    if (m->created_by)
        pq_tw_string_field(&w, &last, 6, m->created_by);
    if (m->n_column_orders > 0) {
        pq_tw_field(&w, &last, 7, PQ_T_LIST);
        pq_tw_list(&w, PQ_T_STRUCT, (uint32_t)m->n_column_orders);
        for (i = 0; i < m->n_column_orders; i++) {
            int16_t l2 = 0;
            pq_tw_field(&w, &l2, 1, PQ_T_STRUCT); /* TYPE_ORDER */
            e_empty_struct(&w);
            pq_tw_stop(&w);
        }
    }
    pq_tw_stop(&w);
    if (w.st != HS_OK)
        out->len = start;
    return w.st;
}

hs_status pq_encode_column_index(const pq_column_index *ci, hs_buf *out)
{
    pq_tw w;
    int16_t last = 0;
    int32_t i, n = ci->n_pages > 0 ? ci->n_pages : 0;
    if (n && (!ci->null_pages || !ci->min_values || !ci->max_values ||
              (ci->has_null_counts && !ci->null_counts)))
        return HS_INVALID;
    size_t start = out->len;
    pq_tw_init(&w, out);
    pq_tw_field(&w, &last, 1, PQ_T_LIST);
    pq_tw_list(&w, PQ_T_TRUE, (uint32_t)n);
    for (i = 0; i < n; i++)
        pq_tw_bool_elem(&w, ci->null_pages[i]);
    pq_tw_field(&w, &last, 2, PQ_T_LIST);
    pq_tw_list(&w, PQ_T_BINARY, (uint32_t)n);
    for (i = 0; i < n; i++)
        pq_tw_binary(&w, ci->min_values[i].p, ci->min_values[i].len);
    pq_tw_field(&w, &last, 3, PQ_T_LIST);
    pq_tw_list(&w, PQ_T_BINARY, (uint32_t)n);
    for (i = 0; i < n; i++)
        pq_tw_binary(&w, ci->max_values[i].p, ci->max_values[i].len);
    pq_tw_i32_field(&w, &last, 4, (int32_t)ci->boundary_order);
    if (ci->has_null_counts) {
        pq_tw_field(&w, &last, 5, PQ_T_LIST);
        pq_tw_list(&w, PQ_T_I64, (uint32_t)n);
        for (i = 0; i < n; i++)
            pq_tw_zigzag(&w, ci->null_counts[i]);
    }
    pq_tw_stop(&w);
    if (w.st != HS_OK)
        out->len = start;
    return w.st;
}

hs_status pq_encode_offset_index(const pq_offset_index *oi, hs_buf *out)
{
    pq_tw w;
    int16_t last = 0;
    int32_t i, n = oi->n_pages > 0 ? oi->n_pages : 0;
    if (n && !oi->pages)
        return HS_INVALID;
    size_t start = out->len;
    pq_tw_init(&w, out);
    pq_tw_field(&w, &last, 1, PQ_T_LIST);
    pq_tw_list(&w, PQ_T_STRUCT, (uint32_t)n);
    for (i = 0; i < n; i++) {
        int16_t l2 = 0;
        pq_tw_i64_field(&w, &l2, 1, oi->pages[i].offset);
        pq_tw_i32_field(&w, &l2, 2, oi->pages[i].compressed_page_size);
        pq_tw_i64_field(&w, &l2, 3, oi->pages[i].first_row_index);
        pq_tw_stop(&w);
    }
    pq_tw_stop(&w);
    if (w.st != HS_OK)
        out->len = start;
    return w.st;
}

/* ==================================================================== JSON */

static const char *ptype_name(int v)
{
    static const char *n[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
                              "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return v >= 0 && v < 8 ? n[v] : NULL;
}

static const char *encoding_name(int v)
{
    static const char *n[] = {"PLAIN", NULL, "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
                              "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY",
                              "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return v >= 0 && v < 10 ? n[v] : NULL;
}

static const char *codec_name(int v)
{
    static const char *n[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD",
                              "LZ4_RAW"};
    return v >= 0 && v < 8 ? n[v] : NULL;
}

static const char *page_type_name(int v)
{
    static const char *n[] = {"DATA_PAGE", "INDEX_PAGE", "DICTIONARY_PAGE", "DATA_PAGE_V2"};
    return v >= 0 && v < 4 ? n[v] : NULL;
}

static const char *repetition_name(int v)
{
    static const char *n[] = {"REQUIRED", "OPTIONAL", "REPEATED"};
    return v >= 0 && v < 3 ? n[v] : NULL;
}

static const char *converted_name(int v)
{
    static const char *n[] = {"UTF8", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE",
                              "TIME_MILLIS", "TIME_MICROS", "TIMESTAMP_MILLIS",
                              "TIMESTAMP_MICROS", "UINT_8", "UINT_16", "UINT_32", "UINT_64",
                              "INT_8", "INT_16", "INT_32", "INT_64", "JSON", "BSON", "INTERVAL"};
    return v >= 0 && v < 22 ? n[v] : NULL;
}

static const char *logical_name(int v)
{
    static const char *n[] = {NULL, "STRING", "MAP", "LIST", "ENUM", "DECIMAL", "DATE", "TIME",
                              "TIMESTAMP", NULL, "INTEGER", "UNKNOWN", "JSON", "BSON", "UUID",
                              "FLOAT16", "VARIANT", "GEOMETRY", "GEOGRAPHY"};
    return v >= 0 && v < 19 ? n[v] : NULL;
}

static const char *time_unit_name(int v)
{
    static const char *n[] = {NULL, "MILLIS", "MICROS", "NANOS"};
    return v >= 0 && v < 4 ? n[v] : NULL;
}

/* JSON writer state: sticky status, "first member" tracking per nesting. */
typedef struct jw {
    hs_buf *b;
    hs_status st;
    bool need_comma;
} jw;

static void j_raw(jw *j, const char *s)
{
    if (j->st == HS_OK)
        j->st = hs_buf_puts(j->b, s);
}

static void j_sep(jw *j)
{
    if (j->need_comma)
        j_raw(j, ",");
    j->need_comma = true;
}

/* Length of the valid UTF-8 sequence at s (RFC 3629), 0 if invalid. */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* A JSON string; invalid UTF-8 bytes become U+FFFD. */
static void j_str(jw *j, const char *s)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s), i = 0;
    j_raw(j, "\"");
    while (i < n && j->st == HS_OK) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            char t[3] = {'\\', (char)c, 0};
            j_raw(j, t);
            i++;
        } else if (c < 0x20) {
            j->st = hs_buf_printf(j->b, "\\u%04x", c);
            i++;
        } else {
            size_t k = utf8_seq(p + i, n - i);
            if (k == 0) {
                j_raw(j, "\\ufffd");
                i++;
            } else {
                j->st = hs_buf_append(j->b, p + i, k);
                i += k;
            }
        }
    }
    j_raw(j, "\"");
}

static void j_key(jw *j, const char *k)
{
    j_sep(j);
    j_str(j, k);
    j_raw(j, ":");
}

static void j_open(jw *j, const char *key, const char *brace)
{
    if (key)
        j_key(j, key);
    else
        j_sep(j);
    j_raw(j, brace);
    j->need_comma = false;
}

static void j_close(jw *j, const char *brace)
{
    j_raw(j, brace);
    j->need_comma = true;
}

static void j_int(jw *j, const char *key, int64_t v)
{
    if (key)
        j_key(j, key);
    else
        j_sep(j);
    if (j->st == HS_OK)
        j->st = hs_buf_printf(j->b, "%lld", (long long)v);
}

static void j_bool(jw *j, const char *key, bool v)
{
    j_key(j, key);
    j_raw(j, v ? "true" : "false");
}

static void j_string(jw *j, const char *key, const char *s)
{
    if (key)
        j_key(j, key);
    else
        j_sep(j);
    if (s)
        j_str(j, s);
    else
        j_raw(j, "null");
}

/* Enum: its name when known, else the number. */
static void j_enum(jw *j, const char *key, const char *name, int v)
{
    if (name)
        j_string(j, key, name);
    else
        j_int(j, key, v);
}

static void j_hex(jw *j, const char *key, pq_bytes b)
{
    static const char hexd[] = "0123456789abcdef";
    if (!b.p)
        return;
    j_key(j, key);
    j_raw(j, "\"");
    for (uint32_t i = 0; i < b.len && j->st == HS_OK; i++) {
        char t[3] = {hexd[b.p[i] >> 4], hexd[b.p[i] & 15], 0};
        j_raw(j, t);
    }
    j_raw(j, "\"");
}

static void j_kv(jw *j, int32_t n, const pq_kv *kv)
{
    j_open(j, "key_value_metadata", "[");
    for (int32_t i = 0; i < n; i++) {
        j_open(j, NULL, "{");
        j_string(j, "key", kv[i].key);
        j_string(j, "value", kv[i].value);
        j_close(j, "}");
    }
    j_close(j, "]");
}

static void j_statistics(jw *j, const pq_statistics *s)
{
    j_open(j, "statistics", "{");
    j_hex(j, "max", s->max);
    j_hex(j, "min", s->min);
    if (s->has_null_count)
        j_int(j, "null_count", s->null_count);
    if (s->has_distinct_count)
        j_int(j, "distinct_count", s->distinct_count);
    j_hex(j, "max_value", s->max_value);
    j_hex(j, "min_value", s->min_value);
    if (s->has_is_max_exact)
        j_bool(j, "is_max_value_exact", s->is_max_value_exact);
    if (s->has_is_min_exact)
        j_bool(j, "is_min_value_exact", s->is_min_value_exact);
    j_close(j, "}");
}

static void j_schema_element(jw *j, const pq_schema_element *e)
{
    j_open(j, NULL, "{");
    j_string(j, "name", e->name);
    if (e->has_type)
        j_enum(j, "type", ptype_name(e->type), e->type);
    if (e->type_length)
        j_int(j, "type_length", e->type_length);
    if (e->has_repetition)
        j_enum(j, "repetition_type", repetition_name(e->repetition), e->repetition);
    j_int(j, "num_children", e->num_children);
    if (e->converted_type != PQ_CT_NONE)
        j_enum(j, "converted_type", converted_name(e->converted_type), e->converted_type);
    if (e->scale || e->precision) {
        j_int(j, "scale", e->scale);
        j_int(j, "precision", e->precision);
    }
    if (e->has_field_id)
        j_int(j, "field_id", e->field_id);
    if (e->logical.kind != PQ_LT_NONE) {
        const pq_logical_type *lt = &e->logical;
        j_open(j, "logical_type", "{");
        j_enum(j, "kind", logical_name(lt->kind), lt->kind);
        if (lt->kind == PQ_LT_DECIMAL) {
            j_int(j, "scale", lt->scale);
            j_int(j, "precision", lt->precision);
        } else if (lt->kind == PQ_LT_TIME || lt->kind == PQ_LT_TIMESTAMP) {
            j_bool(j, "is_adjusted_to_utc", lt->is_adjusted_to_utc);
            j_enum(j, "unit", time_unit_name(lt->unit), lt->unit);
        } else if (lt->kind == PQ_LT_INTEGER) {
            j_int(j, "bit_width", lt->bit_width);
            j_bool(j, "is_signed", lt->is_signed);
        }
        j_close(j, "}");
    }
    j_close(j, "}");
}

static void j_column_meta(jw *j, const pq_column_meta *m)
{
    int32_t i;
    j_open(j, "meta_data", "{");
    j_enum(j, "type", ptype_name(m->type), m->type);
    j_open(j, "encodings", "[");
    for (i = 0; i < m->n_encodings; i++)
        j_enum(j, NULL, encoding_name(m->encodings[i]), m->encodings[i]);
    j_close(j, "]");
    j_open(j, "path_in_schema", "[");
    for (i = 0; i < m->n_path; i++)
        j_string(j, NULL, m->path[i]);
    j_close(j, "]");
    j_enum(j, "codec", codec_name(m->codec), m->codec);
    j_int(j, "num_values", m->num_values);
    j_int(j, "total_uncompressed_size", m->total_uncompressed_size);
    j_int(j, "total_compressed_size", m->total_compressed_size);
    if (m->n_kv)
        j_kv(j, m->n_kv, m->kv);
    j_int(j, "data_page_offset", m->data_page_offset);
    if (m->has_index_page_offset)
        j_int(j, "index_page_offset", m->index_page_offset);
    if (m->has_dictionary_page_offset)
        j_int(j, "dictionary_page_offset", m->dictionary_page_offset);
    if (m->has_statistics)
        j_statistics(j, &m->statistics);
    if (m->n_encoding_stats) {
        j_open(j, "encoding_stats", "[");
        for (i = 0; i < m->n_encoding_stats; i++) {
            const pq_encoding_stats *s = &m->encoding_stats[i];
            j_open(j, NULL, "{");
            j_enum(j, "page_type", page_type_name(s->page_type), s->page_type);
            j_enum(j, "encoding", encoding_name(s->encoding), s->encoding);
            j_int(j, "count", s->count);
            j_close(j, "}");
        }
        j_close(j, "]");
    }
    if (m->has_bloom_filter_offset)
        j_int(j, "bloom_filter_offset", m->bloom_filter_offset);
    if (m->has_bloom_filter_length)
        j_int(j, "bloom_filter_length", m->bloom_filter_length);
    j_close(j, "}");
}

static void j_column_chunk(jw *j, const pq_column_chunk *c)
{
    j_open(j, NULL, "{");
    if (c->file_path)
        j_string(j, "file_path", c->file_path);
    j_int(j, "file_offset", c->file_offset);
    if (c->has_meta_data)
        j_column_meta(j, &c->meta_data);
    if (c->has_offset_index) {
        j_int(j, "offset_index_offset", c->offset_index_offset);
        j_int(j, "offset_index_length", c->offset_index_length);
    }
    if (c->has_column_index) {
        j_int(j, "column_index_offset", c->column_index_offset);
        j_int(j, "column_index_length", c->column_index_length);
    }
    if (c->is_encrypted)
        j_bool(j, "encrypted", true);
    j_close(j, "}");
}

static void j_row_group(jw *j, const pq_row_group *g)
{
    int32_t i;
    j_open(j, NULL, "{");
    j_int(j, "num_rows", g->num_rows);
    j_int(j, "total_byte_size", g->total_byte_size);
    if (g->has_file_offset)
        j_int(j, "file_offset", g->file_offset);
    if (g->has_total_compressed_size)
        j_int(j, "total_compressed_size", g->total_compressed_size);
    if (g->has_ordinal)
        j_int(j, "ordinal", g->ordinal);
    if (g->n_sorting_columns) {
        j_open(j, "sorting_columns", "[");
        for (i = 0; i < g->n_sorting_columns; i++) {
            j_open(j, NULL, "{");
            j_int(j, "column_idx", g->sorting_columns[i].column_idx);
            j_bool(j, "descending", g->sorting_columns[i].descending);
            j_bool(j, "nulls_first", g->sorting_columns[i].nulls_first);
            j_close(j, "}");
        }
        j_close(j, "]");
    }
    j_open(j, "columns", "[");
    for (i = 0; i < g->n_columns; i++)
        j_column_chunk(j, &g->columns[i]);
    j_close(j, "]");
    j_close(j, "}");
}

hs_status pq_file_meta_to_json(const pq_file_meta *m, hs_buf *out)
{
    jw j = {out, HS_OK, false};
    int32_t i;
    size_t start = out->len;
    j_open(&j, NULL, "{");
    j_int(&j, "version", m->version);
    j_int(&j, "num_rows", m->num_rows);
    j_string(&j, "created_by", m->created_by);
    j_int(&j, "num_row_groups", m->n_row_groups);
    j_int(&j, "column_orders", m->n_column_orders);
    j_bool(&j, "encryption_algorithm", m->has_encryption_algorithm);
    j_kv(&j, m->n_kv, m->kv);
    j_open(&j, "schema", "[");
    for (i = 0; i < m->n_schema; i++)
        j_schema_element(&j, &m->schema[i]);
    j_close(&j, "]");
    j_open(&j, "row_groups", "[");
    for (i = 0; i < m->n_row_groups; i++)
        j_row_group(&j, &m->row_groups[i]);
    j_close(&j, "]");
    j_close(&j, "}");
    if (j.st != HS_OK)
        out->len = start;
    return j.st;
}

hs_status pq_footer_to_json(const uint8_t *buf, size_t len, hs_buf *out, hs_error *err)
{
    hs_arena arena = {0};
    pq_file_meta m;
    hs_status st = pq_decode_file_meta(buf, len, &arena, &m, err);
    if (st == HS_OK) {
        st = pq_file_meta_to_json(&m, out);
        if (st != HS_OK)
            hs_err_nomem(err, out->len);
    }
    hs_arena_destroy(&arena);
    return st;
}

/* Reads exactly n bytes at off; short reads are corruption of the file size. */
static hs_status read_at(int fd, const char *path, uint8_t *dst, size_t n, uint64_t off,
                         hs_error *err)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(fd, dst + done, n - done, (off_t)(off + done));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return hs_err_set(err, HS_IO, "%s: read of %zu bytes at %llu failed: %s", path, n,
                              (unsigned long long)off, strerror(errno));
        }
        if (k == 0)
            return HS_CORRUPT_AT(err, "%s: file ends before byte %llu", path,
                                 (unsigned long long)(off + n));
        done += (size_t)k;
    }
    return HS_OK;
}

static hs_status footer_json_fd(int fd, const char *path, hs_buf *out, hs_error *err)
{
    struct stat sb;
    uint8_t tail[8];
    if (fstat(fd, &sb) != 0)
        return hs_err_set(err, HS_IO, "%s: stat failed: %s", path, strerror(errno));
    uint64_t size = (uint64_t)sb.st_size;
    if (size < 12)
        return HS_CORRUPT_AT(err, "%s: %llu bytes is too small for a Parquet file", path,
                             (unsigned long long)size);
    HS_TRY(read_at(fd, path, tail, 8, size - 8, err));
    if (memcmp(tail + 4, "PARE", 4) == 0)
        return hs_err_set(err, HS_UNSUPPORTED, "%s: encrypted footer (PARE) is not supported",
                          path);
    if (memcmp(tail + 4, "PAR1", 4) != 0)
        return HS_CORRUPT_AT(err, "%s: no PAR1 magic at the end", path);
    uint32_t flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                    (uint32_t)tail[3] << 24;
    if ((uint64_t)flen > size - 12)
        return HS_CORRUPT_AT(err, "%s: footer length %u exceeds file size %llu", path, flen,
                             (unsigned long long)size);
    uint8_t *fb = hs_malloc(flen ? flen : 1);
    if (!fb)
        return hs_err_nomem(err, flen);
    hs_status st = read_at(fd, path, fb, flen, size - 8 - flen, err);
    if (st == HS_OK)
        st = pq_footer_to_json(fb, flen, out, err);
    hs_free(fb);
    if (st != HS_OK && err)
        hs_err_prefix(err, "%s", path);
    return st;
}

char *hs_parquet_footer_json(const char *path, hs_error *err)
{
    hs_buf out = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        hs_err_set(err, errno == ENOENT ? HS_NOT_FOUND : HS_IO, "%s: open failed: %s", path,
                   strerror(errno));
        return NULL;
    }
    hs_status st = footer_json_fd(fd, path, &out, err);
    close(fd);
    if (st == HS_OK && hs_buf_reserve(&out, 1) != HS_OK) /* room for the NUL */
        st = hs_err_nomem(err, out.len + 1);
    if (st != HS_OK) {
        hs_buf_free(&out);
        return NULL;
    }
    return (char *)hs_buf_detach(&out, NULL);
}

void hs_string_free(char *s) { hs_free(s); }
