/*
 * cli/cmd_parquet.c - `hyperstream parquet <tool>`: schema, meta, cat, convert.
 *
 *   tool      reads                         prints / writes
 *   -------   ---------------------------   ------------------------------------
 *   schema    footer (pq_reader_meta)       Parquet schema tree + mapped schema
 *   meta      footer, offset indexes        file / row group / column chunk facts
 *             (--json: raw footer bytes)    (--json: pq_footer_to_json)
 *   cat       pq_scan batches               JSON Lines (columnar/jsonl.h), rows
 *                                           filtered by --filter (expr/expr.h)
 *   convert   JSON Lines / CSV (ingest.h)   a Parquet file (pq_writer)
 *
 * Statistics in `meta` are decoded from their Parquet PLAIN bytes by the
 * column's physical and logical type and printed in the JSON Lines encoding
 * (the same text `cat` prints for that value), via hs_json_append_scalar.
 * Everything a command prints is built in one hs_buf and flushed to stdout in
 * 1 MiB pieces; errors end the command with exit code 1 (cli.h).
 */
#include "cli.h"

#include "base/compress.h"
#include "base/mem.h"
#include "columnar/ingest.h"
#include "columnar/jsonl.h"
#include "expr/expr.h"
#include "io/io.h"
#include "parquet/meta.h"
#include "parquet/reader.h"
#include "parquet/writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_AT (1u << 20)

static const char parquet_usage[] =
    "Usage: hyperstream parquet <tool> [options]\n"
    "\n"
    "Tools:\n"
    "  schema FILE                 Parquet schema tree and the mapped column types\n"
    "  meta FILE [--json]          footer: row groups, column chunks, statistics, page index\n"
    "  cat FILE [--columns a,b] [--limit N] [--filter EXPR]\n"
    "                              rows as JSON Lines (see docs/jsonl.md); --filter keeps\n"
    "                              the rows where the SQL expression EXPR is true\n"
    "  convert IN OUT [options]    JSON Lines or CSV to Parquet\n"
    "      --format jsonl|csv      input format (default: by extension: .csv is CSV,\n"
    "                              anything else JSON Lines)\n"
    "      --schema SCHEMA.json    column types (default: inferred from the first 10000 rows)\n"
    "      --codec C               zstd (default), snappy, gzip, lz4_raw, none\n"
    "      --row-group-size N      rows per row group (default 1048576)\n"
    "      --page-size BYTES       target data page size, per column (default 65536)\n"
    "      --no-dictionary         no dictionary encoding\n"
    "      --encoding COL=ENC      encoding of one column (repeatable): plain, dictionary,\n"
    "                              delta_binary_packed, delta_length_byte_array,\n"
    "                              delta_byte_array, byte_stream_split\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

/* ------------------------------------------------------------------ */
/* shared                                                               */

typedef struct pfile {
    hs_file *f;
    pq_reader *r;
} pfile;

static hs_status pfile_open(const char *path, pfile *p, hs_error *err)
{
    p->f = NULL;
    p->r = NULL;
    HS_TRY(hs_local_open(path, &p->f, err));
    hs_status st = pq_reader_open(p->f, &p->r, err);
    if (st != HS_OK) {
        hs_file_close(p->f);
        p->f = NULL;
    }
    return st;
}

static void pfile_close(pfile *p)
{
    pq_reader_close(p->r);
    hs_file_close(p->f);
}

static bool parse_count(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0)
        return false;
    *out = v;
    return true;
}

static const char *ptype_name(pq_ptype t)
{
    static const char *names[] = {"boolean", "int32", "int64", "int96", "float", "double",
                                  "binary", "fixed_len_byte_array"};
    return (unsigned)t < 8 ? names[t] : "?";
}

static const char *codec_name(pq_codec c)
{
    static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD",
                                  "LZ4_RAW"};
    return (unsigned)c < 8 ? names[c] : "?";
}

static const char *encoding_name(pq_encoding e)
{
    switch (e) {
    case PQ_ENC_PLAIN: return "PLAIN";
    case PQ_ENC_PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case PQ_ENC_RLE: return "RLE";
    case PQ_ENC_BIT_PACKED: return "BIT_PACKED";
    case PQ_ENC_DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case PQ_ENC_DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case PQ_ENC_RLE_DICTIONARY: return "RLE_DICTIONARY";
    case PQ_ENC_BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
    }
    return "?";
}

static const char *unit_name(pq_time_unit u)
{
    return u == PQ_TU_MILLIS ? "MILLIS" : u == PQ_TU_MICROS ? "MICROS" : u == PQ_TU_NANOS ? "NANOS" : "?";
}

static hs_status put_logical(const pq_schema_element *e, hs_buf *o)
{
    const pq_logical_type *lt = &e->logical;
    switch (lt->kind) {
    case PQ_LT_NONE: break;
    case PQ_LT_STRING: return hs_buf_puts(o, " (STRING)");
    case PQ_LT_MAP: return hs_buf_puts(o, " (MAP)");
    case PQ_LT_LIST: return hs_buf_puts(o, " (LIST)");
    case PQ_LT_ENUM: return hs_buf_puts(o, " (ENUM)");
    case PQ_LT_DECIMAL: return hs_buf_printf(o, " (DECIMAL(%d,%d))", lt->precision, lt->scale);
    case PQ_LT_DATE: return hs_buf_puts(o, " (DATE)");
    case PQ_LT_TIME:
        return hs_buf_printf(o, " (TIME(%s,%s))", unit_name(lt->unit), lt->is_adjusted_to_utc ? "true" : "false");
    case PQ_LT_TIMESTAMP:
        return hs_buf_printf(o, " (TIMESTAMP(%s,%s))", unit_name(lt->unit),
                             lt->is_adjusted_to_utc ? "true" : "false");
    case PQ_LT_INTEGER:
        return hs_buf_printf(o, " (INTEGER(%d,%s))", lt->bit_width, lt->is_signed ? "true" : "false");
    case PQ_LT_UNKNOWN: return hs_buf_puts(o, " (UNKNOWN)");
    case PQ_LT_JSON: return hs_buf_puts(o, " (JSON)");
    case PQ_LT_BSON: return hs_buf_puts(o, " (BSON)");
    case PQ_LT_UUID: return hs_buf_puts(o, " (UUID)");
    case PQ_LT_FLOAT16: return hs_buf_puts(o, " (FLOAT16)");
    case PQ_LT_VARIANT: return hs_buf_puts(o, " (VARIANT)");
    case PQ_LT_GEOMETRY: return hs_buf_puts(o, " (GEOMETRY)");
    case PQ_LT_GEOGRAPHY: return hs_buf_puts(o, " (GEOGRAPHY)");
    }
    static const char *ct[] = {"UTF8", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE",
                               "TIME_MILLIS", "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS",
                               "UINT_8", "UINT_16", "UINT_32", "UINT_64", "INT_8", "INT_16", "INT_32",
                               "INT_64", "JSON", "BSON", "INTERVAL"};
    if (e->converted_type >= 0 && e->converted_type <= PQ_CT_INTERVAL) {
        if (e->converted_type == PQ_CT_DECIMAL)
            return hs_buf_printf(o, " (DECIMAL(%d,%d))", e->precision, e->scale);
        return hs_buf_printf(o, " (%s)", ct[e->converted_type]);
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* schema                                                               */

static hs_status schema_tree(const pq_file_meta *m, int *idx, int depth, hs_buf *o)
{
    if (*idx >= m->n_schema || depth > 64)
        return HS_CORRUPT;
    const pq_schema_element *e = &m->schema[(*idx)++];
    static const char *rep[] = {"required", "optional", "repeated"};
    HS_TRY(hs_buf_printf(o, "%*s", depth * 2, ""));
    if (depth == 0)
        HS_TRY(hs_buf_printf(o, "message %s", e->name ? e->name : "schema"));
    else
        HS_TRY(hs_buf_printf(o, "%s %s", e->has_repetition && (unsigned)e->repetition < 3 ? rep[e->repetition] : "required",
                             e->num_children > 0 || !e->has_type ? "group" : ptype_name(e->type)));
    if (depth > 0 && e->has_type && e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->num_children == 0)
        HS_TRY(hs_buf_printf(o, "(%d)", e->type_length));
    if (depth > 0)
        HS_TRY(hs_buf_printf(o, " %s", e->name ? e->name : ""));
    HS_TRY(put_logical(e, o));
    if (e->has_field_id)
        HS_TRY(hs_buf_printf(o, " = %d", e->field_id));
    if (e->num_children > 0 || depth == 0) {
        HS_TRY(hs_buf_puts(o, " {\n"));
        for (int i = 0; i < e->num_children; i++)
            HS_TRY(schema_tree(m, idx, depth + 1, o));
        return hs_buf_printf(o, "%*s}\n", depth * 2, "");
    }
    return hs_buf_puts(o, ";\n");
}

static int tool_schema(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage_error("parquet ", "usage: hyperstream parquet schema FILE");
    pfile p;
    hs_error err = {0};
    hs_status st = pfile_open(argv[1], &p, &err);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    const pq_file_meta *m = pq_reader_meta(p.r);
    const hs_field *s = pq_reader_schema(p.r);
    hs_buf o = {0};
    int idx = 0;
    st = hs_buf_puts(&o, "Parquet schema:\n");
    if (st == HS_OK)
        st = schema_tree(m, &idx, 0, &o);
    if (st == HS_OK)
        st = hs_buf_puts(&o, "\nColumns:\n");
    for (int i = 0; st == HS_OK && i < s->n_children; i++) {
        const hs_field *f = &s->children[i];
        st = hs_buf_printf(&o, "  %s: ", f->name);
        if (st == HS_OK)
            st = hs_field_format(f, &o);
        if (st == HS_OK && !f->nullable)
            st = hs_buf_puts(&o, " not null");
        if (st == HS_OK && f->field_id >= 0)
            st = hs_buf_printf(&o, " (field_id %d)", f->field_id);
        if (st == HS_OK)
            st = hs_buf_puts(&o, "\n");
    }
    if (st == HS_OK)
        st = cli_flush(&o, 0);
    hs_buf_free(&o);
    pfile_close(&p);
    if (st != HS_OK)
        return cli_fail("%s: cannot print the schema (%s)", argv[1], hs_status_name(st));
    return 0;
}

/* ------------------------------------------------------------------ */
/* meta                                                                 */

static void be_to_le16(const uint8_t *p, uint32_t n, uint8_t out[16])
{
    uint8_t fill = n && (p[0] & 0x80) ? 0xFF : 0;
    memset(out, fill, 16);
    for (uint32_t i = 0; i < n; i++)
        out[i] = p[n - 1 - i];
}

static uint64_t le_u(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Appends a statistics value in the JSON Lines encoding of the column's type. */
static hs_status put_stat(const pq_schema_element *e, pq_bytes v, hs_buf *o)
{
    const pq_logical_type *lt = &e->logical;
    pq_converted_type ct = e->converted_type;
    hs_field f;
    uint8_t val[16];
    const void *p = val;
    size_t len = 0;
    bool is_dec = lt->kind == PQ_LT_DECIMAL || ct == PQ_CT_DECIMAL;
    hs_type t;
    memset(&f, 0, sizeof f);
    f.nullable = true;
    f.precision = lt->kind == PQ_LT_DECIMAL ? lt->precision : e->precision;
    f.scale = lt->kind == PQ_LT_DECIMAL ? lt->scale : e->scale;
    switch (e->type) {
    case PQ_BOOLEAN:
        if (v.len < 1)
            goto raw;
        t = HS_TYPE_BOOL;
        val[0] = v.p[0] & 1;
        break;
    case PQ_INT32: {
        if (v.len != 4)
            goto raw;
        int32_t x = (int32_t)le_u(v.p, 4);
        bool uns = (lt->kind == PQ_LT_INTEGER && !lt->is_signed) ||
                   (ct >= PQ_CT_UINT_8 && ct <= PQ_CT_UINT_32);
        if (is_dec) {
            t = HS_TYPE_DECIMAL128;
            memset(val, x < 0 ? 0xFF : 0, 16);
            memcpy(val, &x, 4);
        } else if (lt->kind == PQ_LT_DATE || ct == PQ_CT_DATE) {
            t = HS_TYPE_DATE32;
            memcpy(val, &x, 4);
        } else if (lt->kind == PQ_LT_TIME || ct == PQ_CT_TIME_MILLIS) {
            t = HS_TYPE_TIME32;
            f.unit = HS_UNIT_MILLI;
            memcpy(val, &x, 4);
        } else {
            t = uns ? HS_TYPE_UINT32 : HS_TYPE_INT32;
            memcpy(val, &x, 4);
        }
        break;
    }
    case PQ_INT64: {
        if (v.len != 8)
            goto raw;
        int64_t x = (int64_t)le_u(v.p, 8);
        bool uns = (lt->kind == PQ_LT_INTEGER && !lt->is_signed) || ct == PQ_CT_UINT_64;
        memcpy(val, &x, 8);
        if (is_dec) {
            t = HS_TYPE_DECIMAL128;
            memset(val + 8, x < 0 ? 0xFF : 0, 8);
        } else if (lt->kind == PQ_LT_TIMESTAMP || ct == PQ_CT_TIMESTAMP_MILLIS || ct == PQ_CT_TIMESTAMP_MICROS) {
            t = HS_TYPE_TIMESTAMP;
            pq_time_unit u = lt->kind == PQ_LT_TIMESTAMP ? lt->unit
                           : ct == PQ_CT_TIMESTAMP_MILLIS ? PQ_TU_MILLIS : PQ_TU_MICROS;
            f.unit = u == PQ_TU_MILLIS ? HS_UNIT_MILLI : u == PQ_TU_NANOS ? HS_UNIT_NANO : HS_UNIT_MICRO;
            f.tz = (lt->kind != PQ_LT_TIMESTAMP || lt->is_adjusted_to_utc) ? (char *)"UTC" : NULL;
        } else if (lt->kind == PQ_LT_TIME || ct == PQ_CT_TIME_MICROS) {
            t = HS_TYPE_TIME64;
            f.unit = lt->kind == PQ_LT_TIME && lt->unit == PQ_TU_NANOS ? HS_UNIT_NANO : HS_UNIT_MICRO;
        } else {
            t = uns ? HS_TYPE_UINT64 : HS_TYPE_INT64;
        }
        break;
    }
    case PQ_INT96: {
        if (v.len != 12)
            goto raw;
        int64_t nanos = (int64_t)le_u(v.p, 8);
        int64_t jd = (int64_t)(uint32_t)le_u(v.p + 8, 4);
        int64_t ns = (jd - 2440588) * 86400LL * 1000000000LL + nanos;
        t = HS_TYPE_TIMESTAMP;
        f.unit = HS_UNIT_NANO;
        memcpy(val, &ns, 8);
        break;
    }
    case PQ_FLOAT:
        if (v.len != 4)
            goto raw;
        t = HS_TYPE_FLOAT32;
        memcpy(val, v.p, 4);
        break;
    case PQ_DOUBLE:
        if (v.len != 8)
            goto raw;
        t = HS_TYPE_FLOAT64;
        memcpy(val, v.p, 8);
        break;
    case PQ_BYTE_ARRAY:
    case PQ_FIXED_LEN_BYTE_ARRAY:
        if (is_dec) {
            if (v.len == 0 || v.len > 16)
                goto raw;
            t = HS_TYPE_DECIMAL128;
            be_to_le16(v.p, v.len, val);
        } else if (lt->kind == PQ_LT_FLOAT16 && v.len == 2) {
            t = HS_TYPE_FLOAT16;
            memcpy(val, v.p, 2);
        } else if (lt->kind == PQ_LT_UUID && v.len == 16) {
            t = HS_TYPE_FIXED_BINARY;
            f.ext = HS_EXT_UUID;
            p = v.p;
            len = 16;
        } else {
            bool text = lt->kind == PQ_LT_STRING || lt->kind == PQ_LT_ENUM || lt->kind == PQ_LT_JSON ||
                        ct == PQ_CT_UTF8 || ct == PQ_CT_ENUM || ct == PQ_CT_JSON;
            t = text ? HS_TYPE_STRING : e->type == PQ_BYTE_ARRAY ? HS_TYPE_BINARY : HS_TYPE_FIXED_BINARY;
            p = v.p ? (const void *)v.p : (const void *)"";
            len = v.len;
        }
        break;
    default:
        goto raw;
    }
    f.type = t;
    return hs_json_append_scalar(&f, p, len, o);
raw:
    return hs_buf_printf(o, "<%u bytes>", v.len);
}

static hs_status meta_text(pfile *p, const char *path, hs_buf *o, hs_error *err)
{
    const pq_file_meta *m = pq_reader_meta(p->r);
    /* leaf schema elements, depth-first = column chunk order */
    int n_leaves = 0;
    const pq_schema_element **leaf = hs_calloc((size_t)m->n_schema + 1, sizeof *leaf);
    if (!leaf)
        return hs_err_nomem(err, 0);
    for (int i = 1; i < m->n_schema; i++)
        if (m->schema[i].num_children == 0)
            leaf[n_leaves++] = &m->schema[i];
    hs_status st = hs_buf_printf(o, "file: %s\ncreated_by: %s\nformat_version: %d\nnum_rows: %lld\n"
                                    "num_row_groups: %d\nnum_columns: %d\n",
                                 path, m->created_by ? m->created_by : "(none)", m->version,
                                 (long long)m->num_rows, m->n_row_groups, n_leaves);
    if (st == HS_OK && m->n_kv > 0) {
        st = hs_buf_puts(o, "key_value_metadata:\n");
        for (int i = 0; st == HS_OK && i < m->n_kv; i++) {
            const char *v = m->kv[i].value ? m->kv[i].value : "(null)";
            size_t n = strlen(v);
            st = hs_buf_printf(o, "  %s: %.*s%s\n", m->kv[i].key, (int)(n > 200 ? 200 : n), v,
                               n > 200 ? "... (truncated)" : "");
        }
    }
    for (int g = 0; st == HS_OK && g < m->n_row_groups; g++) {
        const pq_row_group *rg = &m->row_groups[g];
        int64_t comp = 0;
        for (int c = 0; c < rg->n_columns; c++)
            if (rg->columns[c].has_meta_data)
                comp += rg->columns[c].meta_data.total_compressed_size;
        st = hs_buf_printf(o, "row group %d: rows %lld, total_byte_size %lld, compressed %lld\n", g,
                           (long long)rg->num_rows, (long long)rg->total_byte_size,
                           (long long)(rg->has_total_compressed_size ? rg->total_compressed_size : comp));
        for (int c = 0; st == HS_OK && c < rg->n_columns; c++) {
            const pq_column_chunk *cc = &rg->columns[c];
            const pq_column_meta *cm = &cc->meta_data;
            if (!cc->has_meta_data) {
                st = hs_buf_printf(o, "  column %d: no metadata%s\n", c, cc->is_encrypted ? " (encrypted)" : "");
                continue;
            }
            st = hs_buf_puts(o, "  column ");
            for (int k = 0; st == HS_OK && k < cm->n_path; k++)
                st = hs_buf_printf(o, "%s%s", k ? "." : "", cm->path[k]);
            if (st == HS_OK)
                st = hs_buf_printf(o, ":\n    type: %s\n    encodings:", ptype_name(cm->type));
            for (int k = 0; st == HS_OK && k < cm->n_encodings; k++)
                st = hs_buf_printf(o, "%s%s", k ? "," : " ", encoding_name(cm->encodings[k]));
            double ratio = cm->total_compressed_size > 0
                               ? (double)cm->total_uncompressed_size / (double)cm->total_compressed_size
                               : 0;
            if (st == HS_OK)
                st = hs_buf_printf(o, "\n    codec: %s\n    values: %lld\n    compressed_size: %lld\n"
                                      "    uncompressed_size: %lld\n    compression_ratio: %.2f\n",
                                   codec_name(cm->codec), (long long)cm->num_values,
                                   (long long)cm->total_compressed_size,
                                   (long long)cm->total_uncompressed_size, ratio);
            if (st == HS_OK && cm->has_statistics) {
                const pq_statistics *s = &cm->statistics;
                const pq_schema_element *e = c < n_leaves ? leaf[c] : NULL;
                bool modern = s->min_value.p || s->max_value.p;
                pq_bytes mn = modern ? s->min_value : s->min, mx = modern ? s->max_value : s->max;
                st = hs_buf_puts(o, "    statistics:");
                if (st == HS_OK && mn.p && e) {
                    st = hs_buf_puts(o, " min ");
                    if (st == HS_OK)
                        st = put_stat(e, mn, o);
                }
                if (st == HS_OK && mx.p && e) {
                    st = hs_buf_puts(o, " max ");
                    if (st == HS_OK)
                        st = put_stat(e, mx, o);
                }
                if (st == HS_OK && !modern && (mn.p || mx.p))
                    st = hs_buf_puts(o, " (legacy min/max)");
                if (st == HS_OK && s->has_null_count)
                    st = hs_buf_printf(o, " nulls %lld", (long long)s->null_count);
                if (st == HS_OK && s->has_distinct_count)
                    st = hs_buf_printf(o, " distinct %lld", (long long)s->distinct_count);
                if (st == HS_OK)
                    st = hs_buf_puts(o, "\n");
            }
            if (st != HS_OK)
                break;
            const pq_column_index *ci = NULL;
            const pq_offset_index *oi = NULL;
            hs_error perr = {0};
            hs_status pst = pq_reader_page_index(p->r, g, c, &ci, &oi, &perr);
            if (pst != HS_OK)
                st = hs_buf_printf(o, "    page index: unreadable (%s)\n", perr.msg);
            else if (oi)
                st = hs_buf_printf(o, "    page index: column index %s, offset index yes, pages %d\n",
                                   ci ? "yes" : "no", oi->n_pages);
            else
                st = hs_buf_printf(o, "    page index: column index %s, offset index no\n", ci ? "yes" : "no");
            if (st == HS_OK && cm->has_bloom_filter_offset)
                st = hs_buf_printf(o, "    bloom filter: offset %lld\n", (long long)cm->bloom_filter_offset);
            if (st == HS_OK)
                st = cli_flush(o, FLUSH_AT);
        }
    }
    hs_free(leaf);
    if (st != HS_OK && err && err->code == HS_OK)
        hs_err_set(err, st, "%s: printing the metadata failed (%s)", path, hs_status_name(st));
    return st;
}

static hs_status meta_json(hs_file *f, hs_buf *o, hs_error *err)
{
    uint8_t tail[8];
    if (f->size < 12)
        return HS_CORRUPT_AT(err, "%s: %llu bytes is too small for Parquet", f->name,
                             (unsigned long long)f->size);
    HS_TRY(hs_file_read_at(f, f->size - 8, 8, tail, err));
    if (memcmp(tail + 4, "PAR1", 4) != 0)
        return HS_CORRUPT_AT(err, "%s: no PAR1 magic at the end", f->name);
    uint64_t flen = le_u(tail, 4);
    if (flen > f->size - 12)
        return HS_CORRUPT_AT(err, "%s: footer length %llu exceeds the file", f->name,
                             (unsigned long long)flen);
    hs_buf fb = {0};
    hs_status st = hs_file_read_buf(f, f->size - 8 - flen, (size_t)flen, &fb, err);
    if (st == HS_OK)
        st = pq_footer_to_json(fb.data, fb.len, o, err);
    if (st == HS_OK)
        st = hs_buf_append_byte(o, '\n');
    hs_buf_free(&fb);
    return st;
}

static int tool_meta(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (argv[i][0] == '-' || path)
            return cli_usage_error("parquet ", "usage: hyperstream parquet meta FILE [--json]");
        else
            path = argv[i];
    }
    if (!path)
        return cli_usage_error("parquet ", "usage: hyperstream parquet meta FILE [--json]");
    hs_error err = {0};
    hs_buf o = {0};
    hs_status st;
    if (json) {
        hs_file *f;
        st = hs_local_open(path, &f, &err);
        if (st == HS_OK) {
            st = meta_json(f, &o, &err);
            hs_file_close(f);
        }
    } else {
        pfile p;
        st = pfile_open(path, &p, &err);
        if (st == HS_OK) {
            st = meta_text(&p, path, &o, &err);
            pfile_close(&p);
        }
    }
    if (st == HS_OK)
        st = cli_flush(&o, 0);
    hs_buf_free(&o);
    return st == HS_OK ? 0 : cli_fail_err(st, &err);
}

/* ------------------------------------------------------------------ */
/* cat                                                                  */

/* A batch that shows only some columns of b (borrowed; nothing to free but
 * the two arrays).  Used to print --columns after filtering on all columns. */
typedef struct batch_view {
    hs_batch b;
    hs_field *fields;
    hs_column **cols;
} batch_view;

static hs_status view_make(const hs_batch *src, const int *idx, int n_idx, batch_view *v)
{
    memset(v, 0, sizeof *v);
    v->b = *src;
    if (!idx)
        return HS_OK;
    v->fields = hs_calloc((size_t)(n_idx ? n_idx : 1), sizeof *v->fields);
    v->cols = hs_calloc((size_t)(n_idx ? n_idx : 1), sizeof *v->cols);
    if (!v->fields || !v->cols) {
        hs_free(v->fields);
        hs_free(v->cols);
        return HS_NOMEM;
    }
    for (int i = 0; i < n_idx; i++) {
        v->fields[i] = src->schema.children[idx[i]]; /* shallow: borrowed from src */
        v->cols[i] = src->cols[idx[i]];
    }
    v->b.schema.children = v->fields;
    v->b.schema.n_children = n_idx;
    v->b.cols = v->cols;
    v->b.n_cols = n_idx;
    return HS_OK;
}

static void view_free(batch_view *v)
{
    hs_free(v->fields);
    hs_free(v->cols);
}

/* Writes the rows of b with sel[i] set, at most *left of them. */
static hs_status write_selected(const hs_batch *b, const uint8_t *sel, int64_t *left, hs_buf *o)
{
    int64_t n = b->n_rows;
    for (int64_t i = 0; i < n && *left != 0;) {
        if (!sel[i]) {
            i++;
            continue;
        }
        int64_t j = i;
        while (j < n && sel[j] && (*left < 0 || j - i < *left))
            j++;
        HS_TRY(hs_batch_write_jsonl(b, i, j - i, o));
        if (*left > 0)
            *left -= j - i;
        i = j;
    }
    return HS_OK;
}

/* Hidden test mode (--filter-file F): reads the file once, then for each
 * line of F (one filter expression) prints {"rows": [positions]} or
 * {"error": message, "status": "HS_..."}.  The differential test against
 * DuckDB runs thousands of expressions through it in one process. */
static int cat_filter_file(pfile *p, const char *path, const char *exprs_path)
{
    hs_error err = {0};
    hs_buf text = {0}, o = {0}, batches = {0};
    FILE *f = fopen(exprs_path, "rb");
    if (!f)
        return cli_fail("%s: %s", exprs_path, strerror(errno));
    char chunk[65536];
    size_t got;
    hs_status st = HS_OK;
    while (st == HS_OK && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        st = hs_buf_append(&text, chunk, got);
    fclose(f);
    if (st == HS_OK)
        st = hs_buf_append_byte(&text, '\0');
    pq_scan *scan = NULL;
    if (st == HS_OK)
        st = pq_scan_open(p->r, &(pq_scan_options){0}, &scan, &err);
    while (st == HS_OK) {
        hs_batch *b;
        st = pq_scan_next(scan, &b, &err);
        if (st != HS_OK || !b)
            break;
        st = HS_VEC_PUSH(&batches, hs_batch *, b);
        if (st != HS_OK)
            hs_batch_free(b);
    }
    pq_scan_close(scan);
    const hs_field *schema = pq_reader_schema(p->r);
    size_t n_b = HS_VEC_LEN(&batches, hs_batch *);
    char *line = (char *)text.data;
    while (st == HS_OK && line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        hs_error e_err = {0};
        ex_expr *e = NULL;
        hs_status es = ex_parse_filter(line, schema, &e, &e_err);
        int64_t base = 0;
        hs_buf rows = {0};
        for (size_t k = 0; k < n_b && es == HS_OK && st == HS_OK; k++) {
            hs_batch *b = HS_VEC_AT(&batches, hs_batch *, k);
            uint8_t *sel = hs_malloc((size_t)b->n_rows + 1);
            int64_t m;
            if (!sel) {
                st = HS_NOMEM;
                break;
            }
            es = ex_eval_filter(e, b, NULL, sel, &m, &e_err);
            for (int64_t i = 0; i < b->n_rows && es == HS_OK && st == HS_OK; i++)
                if (sel[i])
                    st = hs_buf_printf(&rows, "%s%lld", rows.len ? "," : "", (long long)(base + i));
            hs_free(sel);
            base += b->n_rows;
        }
        if (st == HS_OK) {
            if (es == HS_OK) {
                st = hs_buf_printf(&o, "{\"rows\":[%.*s]}\n", (int)rows.len, rows.data ? (const char *)rows.data : "");
            } else {
                st = hs_buf_puts(&o, "{\"status\":\"");
                if (st == HS_OK)
                    st = hs_buf_printf(&o, "%s\",\"error\":", hs_status_name(es));
                if (st == HS_OK)
                    st = hs_json_append_string(&o, (const uint8_t *)e_err.msg, strlen(e_err.msg));
                if (st == HS_OK)
                    st = hs_buf_puts(&o, "}\n");
            }
        }
        if (st == HS_OK)
            st = cli_flush(&o, FLUSH_AT);
        hs_buf_free(&rows);
        ex_free(e);
        line = nl ? nl + 1 : NULL;
    }
    if (st == HS_OK)
        st = cli_flush(&o, 0);
    for (size_t k = 0; k < n_b; k++)
        hs_batch_free(HS_VEC_AT(&batches, hs_batch *, k));
    hs_buf_free(&batches);
    hs_buf_free(&text);
    hs_buf_free(&o);
    if (st != HS_OK && err.code == HS_OK)
        hs_err_set(&err, st, "%s: filter file failed (%s)", path, hs_status_name(st));
    return st == HS_OK ? 0 : cli_fail_err(st, &err);
}

static int tool_cat(int argc, char **argv)
{
    static const char usage[] = "usage: hyperstream parquet cat FILE [--columns a,b] [--limit N] [--filter EXPR]";
    const char *path = NULL, *cols = NULL, *filter = NULL, *filter_file = NULL;
    int64_t limit = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--columns") == 0 && i + 1 < argc) {
            cols = argv[++i];
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            if (!parse_count(argv[++i], &limit))
                return cli_usage_error("parquet ", "--limit needs a non-negative integer, got '%s'", argv[i]);
        } else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
            filter = argv[++i];
        } else if (strcmp(argv[i], "--filter-file") == 0 && i + 1 < argc) {
            filter_file = argv[++i]; /* hidden: tests/python/test_expr_duckdb.py */
        } else if (argv[i][0] == '-' || path) {
            return cli_usage_error("parquet ", "%s", usage);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return cli_usage_error("parquet ", "%s", usage);
    hs_error err = {0};
    pfile p;
    hs_status st = pfile_open(path, &p, &err);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    if (filter_file) {
        int r = cat_filter_file(&p, path, filter_file);
        pfile_close(&p);
        return r;
    }
    const hs_field *schema = pq_reader_schema(p.r);
    int *idx = NULL, n_idx = 0;
    int rc = 0;
    if (cols) {
        idx = hs_calloc(strlen(cols) + 1, sizeof(int));
        const char *s = cols;
        while (idx && *s) {
            const char *e = strchr(s, ',');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            int found = -1;
            for (int i = 0; i < schema->n_children && found < 0; i++)
                if (strlen(schema->children[i].name) == n && memcmp(schema->children[i].name, s, n) == 0)
                    found = i;
            if (found < 0) {
                rc = cli_fail("%s: no column '%.*s' (columns: use 'hyperstream parquet schema %s')", path,
                              (int)n, s, path);
                break;
            }
            idx[n_idx++] = found;
            s += n + (e != NULL);
        }
        if (!idx)
            rc = cli_fail("out of memory");
    }
    ex_expr *expr = NULL;
    if (rc == 0 && filter) {
        st = ex_parse_filter(filter, schema, &expr, &err);
        if (st != HS_OK)
            rc = cli_fail("--filter: %s", err.msg);
    }
    pq_scan *scan = NULL;
    hs_buf o = {0};
    int64_t emitted = 0;
    if (rc == 0 && limit != 0) {
        pq_scan_options opt = {0};
        opt.columns = expr ? NULL : idx; /* a filter reads every column it may name */
        opt.n_columns = expr ? 0 : n_idx;
        opt.batch_size = limit > 0 && limit < 65536 && !expr ? limit : 65536;
        st = pq_scan_open(p.r, &opt, &scan, &err);
        while (st == HS_OK && (limit < 0 || emitted < limit)) {
            hs_batch *b;
            st = pq_scan_next(scan, &b, &err);
            if (st != HS_OK || !b)
                break;
            if (expr) {
                uint8_t *sel = hs_malloc((size_t)b->n_rows + 1);
                int64_t m, left = limit < 0 ? -1 : limit - emitted;
                batch_view v;
                if (!sel) {
                    st = hs_err_nomem(&err, (size_t)b->n_rows);
                } else if ((st = ex_eval_filter(expr, b, NULL, sel, &m, &err)) == HS_OK &&
                           (st = view_make(b, idx, n_idx, &v)) == HS_OK) {
                    st = write_selected(&v.b, sel, &left, &o);
                    view_free(&v);
                    emitted += limit < 0 ? m : (limit - emitted) - left;
                }
                hs_free(sel);
            } else {
                int64_t n = b->n_rows;
                if (limit >= 0 && n > limit - emitted)
                    n = limit - emitted;
                st = hs_batch_write_jsonl(b, 0, n, &o);
                emitted += n;
            }
            if (st == HS_OK)
                st = cli_flush(&o, FLUSH_AT);
            if (st != HS_OK && err.code == HS_OK)
                hs_err_set(&err, st, "%s: writing JSON Lines failed (%s)", path, hs_status_name(st));
            hs_batch_free(b);
        }
        if (st == HS_OK)
            st = cli_flush(&o, 0);
        if (st != HS_OK)
            rc = expr && err.code == HS_INVALID ? cli_fail("--filter: %s", err.msg) : cli_fail_err(st, &err);
    }
    ex_free(expr);
    pq_scan_close(scan);
    hs_buf_free(&o);
    hs_free(idx);
    pfile_close(&p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* convert                                                              */

static bool parse_encoding(const char *s, pq_encoding *out)
{
    static const struct { const char *name; pq_encoding e; } t[] = {
        {"plain", PQ_ENC_PLAIN}, {"dictionary", PQ_ENC_RLE_DICTIONARY},
        {"rle_dictionary", PQ_ENC_RLE_DICTIONARY}, {"delta_binary_packed", PQ_ENC_DELTA_BINARY_PACKED},
        {"delta_length_byte_array", PQ_ENC_DELTA_LENGTH_BYTE_ARRAY},
        {"delta_byte_array", PQ_ENC_DELTA_BYTE_ARRAY}, {"byte_stream_split", PQ_ENC_BYTE_STREAM_SPLIT},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcasecmp(s, t[i].name) == 0) {
            *out = t[i].e;
            return true;
        }
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static int tool_convert(int argc, char **argv)
{
    const char *in_path = NULL, *out_path = NULL, *schema_path = NULL, *format = NULL;
    pq_writer_options wopt = {0};
    wopt.codec = HS_CODEC_ZSTD;
    int n_enc = 0;
    pq_column_option *enc = hs_calloc((size_t)argc + 1, sizeof *enc);
    hs_error err = {0};
    int rc = 0;
    if (!enc)
        return cli_fail("out of memory");
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        bool has_arg = i + 1 < argc;
        int64_t v;
        if (strcmp(a, "--format") == 0 && has_arg) {
            format = argv[++i];
            if (strcmp(format, "jsonl") && strcmp(format, "csv"))
                rc = cli_usage_error("parquet ", "--format is jsonl or csv, got '%s'", format);
        } else if (strcmp(a, "--schema") == 0 && has_arg) {
            schema_path = argv[++i];
        } else if (strcmp(a, "--codec") == 0 && has_arg) {
            if (hs_codec_parse(argv[++i], &wopt.codec, &err) != HS_OK || wopt.codec == HS_CODEC_LZO ||
                wopt.codec == HS_CODEC_BROTLI || wopt.codec == HS_CODEC_LZ4_HADOOP)
                rc = cli_usage_error("parquet ", "--codec is zstd, snappy, gzip, lz4_raw or none, got '%s'",
                                     argv[i]);
        } else if (strcmp(a, "--row-group-size") == 0 && has_arg) {
            if (!parse_count(argv[++i], &v) || v == 0)
                rc = cli_usage_error("parquet ", "--row-group-size needs a positive integer, got '%s'", argv[i]);
            wopt.row_group_rows = v;
        } else if (strcmp(a, "--page-size") == 0 && has_arg) {
            if (!parse_count(argv[++i], &v) || v == 0)
                rc = cli_usage_error("parquet ", "--page-size needs a positive integer, got '%s'", argv[i]);
            wopt.page_bytes = v;
        } else if (strcmp(a, "--no-dictionary") == 0) {
            wopt.no_dictionary = true;
        } else if (strcmp(a, "--encoding") == 0 && has_arg) {
            char *spec = argv[++i];
            char *eq = strrchr(spec, '=');
            if (!eq || eq == spec || !parse_encoding(eq + 1, &enc[n_enc].encoding)) {
                rc = cli_usage_error("parquet ", "--encoding needs COLUMN=ENCODING (plain, dictionary, "
                                     "delta_binary_packed, delta_length_byte_array, delta_byte_array, "
                                     "byte_stream_split), got '%s'", spec);
            } else {
                *eq = 0; /* argv strings are writable */
                enc[n_enc].path = spec;
                enc[n_enc].set_encoding = true;
                n_enc++;
            }
        } else if (a[0] == '-' && a[1]) {
            rc = cli_usage_error("parquet ", "convert: unknown option '%s'", a);
        } else if (!in_path) {
            in_path = a;
        } else if (!out_path) {
            out_path = a;
        } else {
            rc = cli_usage_error("parquet ", "convert takes IN and OUT; extra argument '%s'", a);
        }
    }
    if (rc == 0 && (!in_path || !out_path))
        rc = cli_usage_error("parquet ", "usage: hyperstream parquet convert IN OUT [options]");
    if (rc != 0) {
        hs_free(enc);
        return rc;
    }
    wopt.column_options = enc;
    wopt.n_column_options = n_enc;

    hs_field schema = {0};
    hs_file *in = NULL;
    hs_wfile *out = NULL;
    hs_ingest *ig = NULL;
    pq_writer *w = NULL;
    hs_status st = HS_OK;
    if (schema_path) {
        hs_buf sb = {0};
        st = hs_local_read_all(schema_path, &sb, &err);
        if (st == HS_OK) {
            st = hs_schema_parse_json((const char *)sb.data, sb.len, &schema, &err);
            if (st != HS_OK)
                hs_err_prefix(&err, "%s", schema_path);
        }
        hs_buf_free(&sb);
    }
    hs_ingest_options iopt = {0};
    iopt.format = format ? (strcmp(format, "csv") == 0 ? HS_INGEST_CSV : HS_INGEST_JSONL)
                         : ends_with(in_path, ".csv") ? HS_INGEST_CSV : HS_INGEST_JSONL;
    iopt.schema = schema_path ? &schema : NULL;
    iopt.name = in_path;
    if (st == HS_OK)
        st = hs_local_open(in_path, &in, &err);
    if (st == HS_OK)
        st = hs_ingest_open(in, &iopt, &ig, &err);
    if (st == HS_OK)
        st = hs_local_create_ex(out_path, HS_WFILE_NO_SYNC, &out, &err);
    if (st == HS_OK)
        st = pq_writer_open(out, hs_ingest_schema(ig), &wopt, &w, &err);
    while (st == HS_OK) {
        hs_batch *b;
        st = hs_ingest_next(ig, &b, &err);
        if (st != HS_OK || !b)
            break;
        st = pq_writer_write(w, b, &err);
        hs_batch_free(b);
    }
    if (st == HS_OK)
        st = pq_writer_finish(w, &err);
    int64_t rows = ig ? hs_ingest_rows_read(ig) : 0;
    int n_rg = st == HS_OK && pq_writer_file_meta(w) ? pq_writer_file_meta(w)->n_row_groups : 0;
    uint64_t bytes = w ? pq_writer_bytes_written(w) : 0;
    pq_writer_free(w);
    if (st == HS_OK) {
        st = hs_wfile_close(out, &err);
    } else {
        hs_wfile_abort(out);
    }
    hs_ingest_close(ig);
    hs_file_close(in);
    hs_field_clear(&schema);
    hs_free(enc);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    fprintf(stderr, "%s: %lld rows, %d row groups, %llu bytes\n", out_path, (long long)rows, n_rg,
            (unsigned long long)bytes);
    return 0;
}

/* ------------------------------------------------------------------ */

int cmd_parquet(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("parquet ", "missing tool (schema, meta, cat, convert)");
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        fputs(parquet_usage, stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (cli_is_help(argv[i])) {
            fputs(parquet_usage, stdout);
            return 0;
        }
    const char *tool = argv[1];
    if (strcmp(tool, "schema") == 0)
        return tool_schema(argc - 1, argv + 1);
    if (strcmp(tool, "meta") == 0)
        return tool_meta(argc - 1, argv + 1);
    if (strcmp(tool, "cat") == 0)
        return tool_cat(argc - 1, argv + 1);
    if (strcmp(tool, "convert") == 0)
        return tool_convert(argc - 1, argv + 1);
    return cli_usage_error("parquet ", "unknown parquet tool '%s' (schema, meta, cat, convert)", tool);
}
