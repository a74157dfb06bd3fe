/*
 * tests/c/test_parquet_write.c - the Parquet writer (src/parquet/writer.c).
 *
 * What is checked, and against what:
 *   - files of every type (flat and nested, nulls at every level, empty
 *     strings and lists, NaN, -0.0, extreme integers) are written with every
 *     codec, v1 and v2 pages, each encoding option;
 *   - the footer decodes (our meta decoder) and says what the spec requires:
 *     field ids, repetition, logical/converted types, DECIMAL physical types,
 *     3-level LIST/MAP shapes, column orders, the fixed_size_list key;
 *   - chunk statistics equal min/max/null counts computed here by brute force
 *     from the generated values (an oracle independent of stats.c);
 *   - every page header decodes, pages start at row boundaries, the offset
 *     index points at the page headers, the column index has one entry per
 *     page; the dictionary falls back to PLAIN on high cardinality;
 *   - when the reader is linked (it is, in the full build), the file reads back
 *     equal to the input (hs_col_equals).
 * pyarrow and DuckDB read the same kinds of files in tests/python/test_writer_oracle.py.
 */
#include "harness.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/mem.h"
#include "io/io.h"
#include "parquet/meta.h"
#include "parquet/reader.h"
#include "parquet/stats.h"
#include "parquet/writer.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static hs_error err_storage;
static hs_error *E = &err_storage; /* a variable, so CHECK_OK's NULL test is meaningful */

static void field(hs_field *f, const char *name, hs_type t, bool nullable, int id)
{
    hs_field_init(f, name, t, nullable);
    f->field_id = id;
}

static void add(hs_field *parent, hs_field *child)
{
    if (hs_field_add_child(parent, child) != HS_OK)
        fprintf(stderr, "add_child failed\n");
}

static char *tmp_path(const char *name)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", hs_test_tmpdir(), name);
    return p;
}

/* Writes batches to path; returns status. */
static hs_status write_batches(const char *path, const hs_field *schema, hs_batch **b, int nb,
                               const pq_writer_options *opt, pq_file_meta *meta_copy)
{
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    hs_err_clear(E);
    HS_TRY(hs_local_create(path, false, &wf, E));
    hs_status s = pq_writer_open(wf, schema, opt, &w, E);
    for (int i = 0; s == HS_OK && i < nb; i++)
        s = pq_writer_write(w, b[i], E);
    if (s == HS_OK)
        s = pq_writer_finish(w, E);
    if (s == HS_OK && meta_copy)
        *meta_copy = *pq_writer_file_meta(w);
    pq_writer_free(w);
    if (s == HS_OK)
        s = hs_wfile_close(wf, E);
    else
        hs_wfile_abort(wf);
    return s;
}

typedef struct loaded {
    hs_buf bytes;
    hs_arena arena;
    pq_file_meta meta;
} loaded;

static hs_status load(const char *path, loaded *l)
{
    memset(l, 0, sizeof *l);
    HS_TRY(hs_local_read_all(path, &l->bytes, E));
    if (l->bytes.len < 12 || memcmp(l->bytes.data, "PAR1", 4) ||
        memcmp(l->bytes.data + l->bytes.len - 4, "PAR1", 4))
        return HS_CORRUPT;
    uint32_t fl;
    memcpy(&fl, l->bytes.data + l->bytes.len - 8, 4);
    if (fl > l->bytes.len - 12)
        return HS_CORRUPT;
    return pq_decode_file_meta(l->bytes.data + l->bytes.len - 8 - fl, fl, &l->arena, &l->meta,
                               E);
}

static void unload(loaded *l)
{
    hs_buf_free(&l->bytes);
    hs_arena_destroy(&l->arena);
}

static const pq_schema_element *find_elem(const pq_file_meta *m, const char *name)
{
    for (int i = 0; i < m->n_schema; i++)
        if (strcmp(m->schema[i].name, name) == 0)
            return &m->schema[i];
    return NULL;
}

/* Column chunk of leaf `leaf` in row group rg. */
static const pq_column_meta *chunk(const pq_file_meta *m, int rg, int leaf)
{
    return &m->row_groups[rg].columns[leaf].meta_data;
}

/* Walks every page of every chunk: headers decode, sizes add up, offset index
 * matches, data pages start at rep level 0 (checked through num_rows on v2 and
 * the offset index's first_row_index on v1). Returns the number of pages. */
static int check_pages(loaded *l, bool *saw_plain_after_dict)
{
    int pages = 0;
    const pq_file_meta *m = &l->meta;
    for (int g = 0; g < m->n_row_groups; g++) {
        for (int c = 0; c < m->row_groups[g].n_columns; c++) {
            const pq_column_chunk *cc = &m->row_groups[g].columns[c];
            const pq_column_meta *md = &cc->meta_data;
            int64_t off = md->has_dictionary_page_offset ? md->dictionary_page_offset
                                                         : md->data_page_offset;
            int64_t end = off + md->total_compressed_size;
            int64_t values = 0;
            bool dict_data = false;
            hs_arena a = {0};
            pq_offset_index oi = {0};
            if (cc->has_offset_index) {
                CHECK(pq_decode_offset_index(l->bytes.data + cc->offset_index_offset,
                                             (size_t)cc->offset_index_length, &a, &oi,
                                             E) == HS_OK);
            }
            if (cc->has_column_index) {
                pq_column_index ci;
                CHECK(pq_decode_column_index(l->bytes.data + cc->column_index_offset,
                                             (size_t)cc->column_index_length, &a, &ci,
                                             E) == HS_OK);
                CHECK(ci.n_pages == oi.n_pages);
            }
            int data_page = 0;
            while (off < end) {
                pq_page_header h;
                size_t used = 0;
                if (pq_decode_page_header(l->bytes.data + off, (size_t)(end - off), &a, &h, &used,
                                          E) != HS_OK) {
                    CHECK(!"page header decodes");
                    break;
                }
                if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
                    if (data_page < oi.n_pages) {
                        CHECK(oi.pages[data_page].offset == off);
                        CHECK(oi.pages[data_page].compressed_page_size ==
                              (int32_t)used + h.compressed_page_size);
                    }
                    pq_encoding e = h.type == PQ_PAGE_DATA ? h.data.encoding : h.data_v2.encoding;
                    if (e == PQ_ENC_RLE_DICTIONARY)
                        dict_data = true;
                    else if (dict_data && saw_plain_after_dict)
                        *saw_plain_after_dict = true;
                    values += h.type == PQ_PAGE_DATA ? h.data.num_values : h.data_v2.num_values;
                    data_page++;
                    pages++;
                }
                off += (int64_t)used + h.compressed_page_size;
            }
            CHECK(off == end);
            CHECK(values == md->num_values);
            if (cc->has_offset_index)
                CHECK(data_page == oi.n_pages);
            hs_arena_destroy(&a);
        }
    }
    return pages;
}

/* ------------------------------------------------------------ flat data */

#define NFLAT 5000

static int64_t gen_i64(int64_t i)
{
    if (i == 17) return INT64_MIN;
    if (i == 4000) return INT64_MAX;
    return (i * 1000003) % 99991 - 50000;
}

static double gen_f64(int64_t i)
{
    if (i % 97 == 5) return NAN;
    if (i == 30) return -0.0;
    if (i == 31) return INFINITY;
    return (double)((i * 7919) % 10007) / 3.0 - 1000.0;
}

static bool is_null(int64_t i, int k) { return k && (i % k == 3); }

static void flat_schema(hs_field *s)
{
    hs_field f;
    hs_field_init(s, "schema", HS_TYPE_STRUCT, false);
    int id = 1;
    field(&f, "i64", HS_TYPE_INT64, false, id++); add(s, &f);
    field(&f, "i32", HS_TYPE_INT32, true, id++); add(s, &f);
    field(&f, "f64", HS_TYPE_FLOAT64, true, id++); add(s, &f);
    field(&f, "f32", HS_TYPE_FLOAT32, false, id++); add(s, &f);
    field(&f, "b", HS_TYPE_BOOL, true, id++); add(s, &f);
    field(&f, "s_low", HS_TYPE_STRING, true, id++); add(s, &f);
    field(&f, "s_high", HS_TYPE_BINARY, false, id++); add(s, &f);
    field(&f, "i8", HS_TYPE_INT8, true, id++); add(s, &f);
    field(&f, "i16", HS_TYPE_INT16, true, id++); add(s, &f);
    field(&f, "u8", HS_TYPE_UINT8, true, id++); add(s, &f);
    field(&f, "u16", HS_TYPE_UINT16, true, id++); add(s, &f);
    field(&f, "u32", HS_TYPE_UINT32, true, id++); add(s, &f);
    field(&f, "u64", HS_TYPE_UINT64, true, id++); add(s, &f);
    field(&f, "date", HS_TYPE_DATE32, true, id++); add(s, &f);
    field(&f, "t_s", HS_TYPE_TIME32, true, id++); f.unit = HS_UNIT_SECOND; add(s, &f);
    field(&f, "t_ns", HS_TYPE_TIME64, true, id++); f.unit = HS_UNIT_NANO; add(s, &f);
    field(&f, "ts_s", HS_TYPE_TIMESTAMP, true, id++); f.unit = HS_UNIT_SECOND; add(s, &f);
    field(&f, "ts_us_utc", HS_TYPE_TIMESTAMP, true, id++); f.unit = HS_UNIT_MICRO;
    f.tz = hs_strdup("UTC"); add(s, &f);
    field(&f, "d9", HS_TYPE_DECIMAL128, true, id++); f.precision = 9; f.scale = 2; add(s, &f);
    field(&f, "d18", HS_TYPE_DECIMAL128, true, id++); f.precision = 18; f.scale = 4; add(s, &f);
    field(&f, "d38", HS_TYPE_DECIMAL128, true, id++); f.precision = 38; f.scale = 10; add(s, &f);
    field(&f, "uuid", HS_TYPE_FIXED_BINARY, true, id++); f.width = 16; f.ext = HS_EXT_UUID; add(s, &f);
    field(&f, "h", HS_TYPE_FLOAT16, true, id++); add(s, &f);
    field(&f, "na", HS_TYPE_NA, true, id++); add(s, &f);
}

static uint16_t half_of(int64_t i)
{
    if (i % 50 == 7) return 0x7e00;  /* NaN */
    return pq_double_to_half((double)((i % 200) - 100) / 4.0);
}

static hs_status fill_flat(hs_batch *b, int64_t start, int64_t n)
{
    for (int64_t r = start; r < start + n; r++) {
        int c = 0;
        int64_t v64 = gen_i64(r);
        HS_TRY(hs_col_append_fixed(b->cols[c++], &v64));
        int32_t v32 = (int32_t)(r * 31 - 7000);
        HS_TRY(is_null(r, 7) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &v32)); c++;
        double d = gen_f64(r);
        HS_TRY(is_null(r, 11) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &d)); c++;
        float fl = (float)(r % 100) - 50.5f;
        HS_TRY(hs_col_append_fixed(b->cols[c++], &fl));
        uint8_t bo = r % 3 == 0;
        HS_TRY(is_null(r, 5) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &bo)); c++;
        char buf[64];
        int len = r % 13 == 0 ? 0 : snprintf(buf, sizeof buf, "k%02d", (int)(r % 13));
        HS_TRY(is_null(r, 9) ? hs_col_append_null(b->cols[c]) : hs_col_append_bytes(b->cols[c], buf, (size_t)len)); c++;
        len = snprintf(buf, sizeof buf, "high-%08lld-%s", (long long)(r * 7 % 100003), r % 2 ? "x" : "");
        HS_TRY(hs_col_append_bytes(b->cols[c++], buf, (size_t)len));
        int8_t i8 = (int8_t)(r % 256 - 128);
        HS_TRY(is_null(r, 4) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &i8)); c++;
        int16_t i16 = (int16_t)(r * 13 % 65536 - 32768);
        HS_TRY(is_null(r, 4) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &i16)); c++;
        uint8_t u8 = (uint8_t)(r % 256);
        HS_TRY(is_null(r, 6) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &u8)); c++;
        uint16_t u16 = (uint16_t)(r * 17);
        HS_TRY(is_null(r, 6) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &u16)); c++;
        uint32_t u32 = r == 100 ? UINT32_MAX : (uint32_t)(r * 2654435761u);
        HS_TRY(is_null(r, 6) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &u32)); c++;
        uint64_t u64 = r == 101 ? UINT64_MAX : (uint64_t)r * 0x9E3779B97F4A7C15ULL;
        HS_TRY(is_null(r, 6) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &u64)); c++;
        int32_t date = (int32_t)(r - 2500) * 3;
        HS_TRY(is_null(r, 8) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &date)); c++;
        int32_t ts = (int32_t)(r % 86400);
        HS_TRY(is_null(r, 8) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &ts)); c++;
        int64_t tns = (r % 86400) * 1000000000LL + r;
        HS_TRY(is_null(r, 8) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &tns)); c++;
        int64_t tss = 1700000000LL + r * 3600 - 5000 * 3600LL;
        HS_TRY(is_null(r, 8) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &tss)); c++;
        int64_t tus = 1700000000000000LL + r * 1000001LL;
        HS_TRY(is_null(r, 8) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &tus)); c++;
        for (int k = 0; k < 3; k++) {
            /* decimal128 little-endian two's complement */
            int64_t lo = k == 0 ? (r * 12345 % 999999999) - 500000000
                       : k == 1 ? (r * 987654321LL % 999999999999999999LL) - 400000000000000000LL
                                : -(r * 1234567890123LL);
            uint8_t dec[16];
            memcpy(dec, &lo, 8);
            int64_t hi = lo < 0 ? -1 : 0;
            if (k == 2 && r % 2)
                hi = lo < 0 ? -(int64_t)r - 1 : (int64_t)r;  /* use the high half too */
            memcpy(dec + 8, &hi, 8);
            HS_TRY(is_null(r, 10) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], dec)); c++;
        }
        uint8_t uuid[16];
        for (int k = 0; k < 16; k++)
            uuid[k] = (uint8_t)((r * 31 + k * 7) & 0xff);
        HS_TRY(is_null(r, 12) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], uuid)); c++;
        uint16_t h = half_of(r);
        HS_TRY(is_null(r, 12) ? hs_col_append_null(b->cols[c]) : hs_col_append_fixed(b->cols[c], &h)); c++;
        HS_TRY(hs_col_append_null(b->cols[c++]));
    }
    b->n_rows += n;
    return HS_OK;
}

/* Brute-force statistics of the generated columns (independent of stats.c),
 * over the whole file: min of the row groups' mins etc. */
static void check_flat_stats(const pq_file_meta *m, int64_t rows)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN, dnull = 0;
    double dmn = INFINITY, dmx = -INFINITY;
    for (int64_t r = 0; r < rows; r++) {
        int64_t v = gen_i64(r);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        if (is_null(r, 11)) {
            dnull++;
            continue;
        }
        double d = gen_f64(r);
        if (d != d)
            continue;
        dmn = d < dmn ? d : dmn;
        dmx = d > dmx ? d : dmx;
    }
    int64_t cmn = INT64_MAX, cmx = INT64_MIN, gnull = 0;
    double gmn = INFINITY, gmx = -INFINITY;
    for (int g = 0; g < m->n_row_groups; g++) {
        const pq_statistics *st = &chunk(m, g, 0)->statistics;
        REQUIRE(st->min_value.p && st->min_value.len == 8 && st->max_value.len == 8);
        int64_t a, b;
        memcpy(&a, st->min_value.p, 8);
        memcpy(&b, st->max_value.p, 8);
        cmn = a < cmn ? a : cmn;
        cmx = b > cmx ? b : cmx;
        const pq_statistics *sd = &chunk(m, g, 2)->statistics;
        CHECK(sd->has_null_count);
        gnull += sd->null_count;
        REQUIRE(sd->min_value.p && sd->min_value.len == 8);
        double x, y;
        memcpy(&x, sd->min_value.p, 8);
        memcpy(&y, sd->max_value.p, 8);
        gmn = x < gmn ? x : gmn;
        gmx = y > gmx ? y : gmx;
    }
    CHECK(cmn == mn);
    CHECK(cmx == mx);
    CHECK(gnull == dnull);
    CHECK(gmn == dmn);
    CHECK(gmx == dmx);
}

static void check_flat_schema(const pq_file_meta *m)
{
    const pq_schema_element *e;
    REQUIRE(m->n_schema == 25);
    CHECK(m->schema[0].num_children == 24);
    e = find_elem(m, "i64");
    REQUIRE(e);
    CHECK(e->has_field_id && e->field_id == 1);
    CHECK(e->repetition == PQ_REQUIRED && e->type == PQ_INT64);
    e = find_elem(m, "i32");
    CHECK(e && e->repetition == PQ_OPTIONAL && e->field_id == 2);
    e = find_elem(m, "s_low");
    CHECK(e && e->type == PQ_BYTE_ARRAY && e->logical.kind == PQ_LT_STRING &&
          e->converted_type == PQ_CT_UTF8);
    e = find_elem(m, "u64");
    CHECK(e && e->type == PQ_INT64 && e->logical.kind == PQ_LT_INTEGER &&
          e->logical.bit_width == 64 && !e->logical.is_signed);
    e = find_elem(m, "i8");
    CHECK(e && e->type == PQ_INT32 && e->logical.bit_width == 8 && e->logical.is_signed &&
          e->converted_type == PQ_CT_INT_8);
    e = find_elem(m, "d9");
    CHECK(e && e->type == PQ_INT32 && e->logical.kind == PQ_LT_DECIMAL &&
          e->logical.precision == 9 && e->logical.scale == 2);
    e = find_elem(m, "d18");
    CHECK(e && e->type == PQ_INT64);
    e = find_elem(m, "d38");
    CHECK(e && e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length == 16);
    e = find_elem(m, "uuid");
    CHECK(e && e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length == 16 &&
          e->logical.kind == PQ_LT_UUID);
    e = find_elem(m, "h");
    CHECK(e && e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length == 2 &&
          e->logical.kind == PQ_LT_FLOAT16);
    e = find_elem(m, "t_s");
    CHECK(e && e->type == PQ_INT32 && e->logical.kind == PQ_LT_TIME &&
          e->logical.unit == PQ_TU_MILLIS);
    e = find_elem(m, "ts_s");
    CHECK(e && e->logical.kind == PQ_LT_TIMESTAMP && e->logical.unit == PQ_TU_MILLIS &&
          !e->logical.is_adjusted_to_utc);
    e = find_elem(m, "ts_us_utc");
    CHECK(e && e->logical.unit == PQ_TU_MICROS && e->logical.is_adjusted_to_utc &&
          e->converted_type == PQ_CT_TIMESTAMP_MICROS);
    e = find_elem(m, "na");
    CHECK(e && e->repetition == PQ_OPTIONAL && e->logical.kind == PQ_LT_UNKNOWN);
    CHECK(m->n_column_orders == 24);
    CHECK(m->version == 2);
    CHECK(m->created_by && strncmp(m->created_by, "hyperstream version", 19) == 0);
}

/* Reads the file back with our reader and compares with the batches. */
static void check_roundtrip(const char *path, hs_batch **b, int nb)
{
    hs_file *f = NULL;
    pq_reader *r = NULL;
    pq_scan *sc = NULL;
    CHECK_OK(hs_local_open(path, &f, E), E);
    if (pq_reader_open(f, &r, E) != HS_OK) {
        CHECK(!"reader opens our file");
        fprintf(stderr, "  %s\n", E->msg);
        hs_file_close(f);
        return;
    }
    pq_scan_options so;
    memset(&so, 0, sizeof so);
    so.batch_size = 1 << 30;
    hs_batch *got = NULL;
    if (pq_scan_open(r, &so, &sc, E) != HS_OK) {
        CHECK(!"scan of our file");
        fprintf(stderr, "  %s\n", E->msg);
    } else {
        /* concatenate what the scan yields, and the inputs */
        hs_column **cols = calloc((size_t)b[0]->n_cols, sizeof *cols);
        int64_t got_rows = 0, total = 0;
        for (;;) {
            hs_batch *nb_ = NULL;
            if (pq_scan_next(sc, &nb_, E) != HS_OK) {
                CHECK(!"scan_next of our file");
                fprintf(stderr, "  %s\n", E->msg);
                break;
            }
            if (!nb_)
                break;
            got_rows += nb_->n_rows;
            for (int c = 0; c < nb_->n_cols && c < b[0]->n_cols; c++) {
                if (!cols[c])
                    (void)!hs_col_slice(nb_->cols[c], 0, nb_->n_rows, &cols[c], E);
                else
                    (void)!hs_col_append_column(cols[c], nb_->cols[c], E);
            }
            hs_batch_free(nb_);
        }
        for (int i = 0; i < nb; i++)
            total += b[i]->n_rows;
        CHECK(got_rows == total);
        for (int c = 0; c < b[0]->n_cols; c++) {
            hs_column *want = NULL;
            if (hs_col_slice(b[0]->cols[c], 0, b[0]->n_rows, &want, E) != HS_OK)
                break;
            for (int i = 1; i < nb; i++)
                (void)!hs_col_append_column(want, b[i]->cols[c], E);
            const hs_field *fc = &b[0]->schema.children[c];
            if ((fc->type == HS_TYPE_TIME32 || fc->type == HS_TYPE_TIMESTAMP) &&
                fc->unit == HS_UNIT_SECOND) {
                /* Parquet has no seconds: written as milliseconds, read back so */
                for (int64_t i = 0; i < want->length; i++) {
                    if (fc->type == HS_TYPE_TIME32)
                        HS_COL_VALUES(want, int32_t)[i] *= 1000;
                    else
                        HS_COL_VALUES(want, int64_t)[i] *= 1000;
                }
            }
            bool eq = cols[c] && hs_col_equals(want, cols[c]);
            if (!eq)
                fprintf(stderr, "  column %d (%s) differs\n", c, b[0]->schema.children[c].name);
            CHECK(eq);
            hs_col_free(want);
            hs_col_free(cols[c]);
        }
        free(cols);
    }
    hs_batch_free(got);
    pq_scan_close(sc);
    pq_reader_close(r);
    hs_file_close(f);
}

static void test_flat_all_types(void)
{
    hs_field s;
    flat_schema(&s);
    hs_batch *b[2] = {NULL, NULL};
    CHECK_OK(hs_batch_create(&s, NFLAT, &b[0], E), E);
    CHECK_OK(hs_batch_create(&s, NFLAT, &b[1], E), E);
    CHECK_OK(fill_flat(b[0], 0, 3000), E);
    CHECK_OK(fill_flat(b[1], 3000, NFLAT - 3000), E);
    static const hs_codec codecs[] = {HS_CODEC_NONE, HS_CODEC_SNAPPY, HS_CODEC_GZIP,
                                      HS_CODEC_ZSTD, HS_CODEC_LZ4_RAW};
    for (size_t ci = 0; ci < sizeof codecs / sizeof codecs[0]; ci++) {
        for (int v2 = 0; v2 < 2; v2++) {
            pq_writer_options o;
            memset(&o, 0, sizeof o);
            o.codec = codecs[ci];
            o.data_page_v2 = v2;
            o.row_group_rows = 2000;  /* 3 row groups, one crossing the batch boundary */
            o.page_rows = 700;
            char name[64];
            snprintf(name, sizeof name, "flat_%s_v%d.parquet", hs_codec_name(codecs[ci]), v2 + 1);
            const char *path = tmp_path(name);
            hs_status st = write_batches(path, &s, b, 2, &o, NULL);
            if (st != HS_OK)
                fprintf(stderr, "  %s: %s\n", name, E->msg);
            CHECK(st == HS_OK);
            loaded l;
            if (load(path, &l) != HS_OK) {
                CHECK(!"footer decodes");
                unload(&l);
                continue;
            }
            CHECK(l.meta.num_rows == NFLAT);
            CHECK(l.meta.n_row_groups == 3);
            check_flat_schema(&l.meta);
            check_flat_stats(&l.meta, NFLAT);
            int pages = check_pages(&l, NULL);
            CHECK(pages == 24 * (3 + 3 + 2)); /* page_rows 700: 2000 -> 3, 1000 -> 2 */
            if (ci == 0 && !v2)
                check_roundtrip(path, b, 2);
            unload(&l);
        }
    }
    hs_batch_free(b[0]);
    hs_batch_free(b[1]);
    hs_field_clear(&s);
}

/* High-cardinality strings with a small dictionary limit: the chunk has a
 * dictionary page, dictionary-encoded pages, then PLAIN pages. */
static void test_dictionary_fallback(void)
{
    hs_field s, f;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "s", HS_TYPE_STRING, false, 1); add(&s, &f);
    field(&f, "x", HS_TYPE_INT64, true, 2); add(&s, &f);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&s, 20000, &b, E), E);
    for (int64_t r = 0; r < 20000; r++) {
        char buf[32];
        /* repeating at first (so the dictionary is kept), distinct later */
        int64_t v = r < 4000 ? r % 97 : r * 7919 % 20011;
        int len = snprintf(buf, sizeof buf, "value-%lld", (long long)v);
        CHECK_OK(hs_col_append_bytes(b->cols[0], buf, (size_t)len), E);
        int64_t x = r * 1000003;
        CHECK_OK(r % 5 == 1 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &x), E);
    }
    b->n_rows = 20000;
    pq_writer_options o;
    memset(&o, 0, sizeof o);
    o.codec = HS_CODEC_ZSTD;
    o.dictionary_page_bytes = 16 << 10;
    o.page_rows = 2000;
    const char *path = tmp_path("fallback.parquet");
    CHECK_OK(write_batches(path, &s, &b, 1, &o, NULL), E);
    loaded l;
    CHECK_OK(load(path, &l), E);
    bool fell_back = false;
    check_pages(&l, &fell_back);
    CHECK(fell_back);
    const pq_column_meta *c0 = chunk(&l.meta, 0, 0);
    CHECK(c0->has_dictionary_page_offset);
    bool has_plain_data = false;
    for (int i = 0; i < c0->n_encoding_stats; i++)
        if (c0->encoding_stats[i].page_type == PQ_PAGE_DATA &&
            c0->encoding_stats[i].encoding == PQ_ENC_PLAIN)
            has_plain_data = true;
    CHECK(has_plain_data);
    check_roundtrip(path, &b, 1);
    unload(&l);
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* Chunks whose first 1024 values are nearly all distinct drop the
 * dictionary before any page is written: no dictionary page, PLAIN pages,
 * the same values and statistics (also for the strings whose min/max were
 * tracked through dictionary entries). */
static void test_dictionary_give_up(void)
{
    hs_field s, f;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "s", HS_TYPE_STRING, true, 1); add(&s, &f);
    field(&f, "x", HS_TYPE_INT64, true, 2); add(&s, &f);
    field(&f, "k", HS_TYPE_INT32, false, 3); add(&s, &f);
    hs_batch *b = NULL;
    const int64_t n = 9000;
    CHECK_OK(hs_batch_create(&s, n, &b, E), E);
    for (int64_t r = 0; r < n; r++) {
        char buf[32];
        int len = snprintf(buf, sizeof buf, "v%lld", (long long)((r * 7919) % 100003));
        CHECK_OK(r % 7 == 3 ? hs_col_append_null(b->cols[0])
                            : hs_col_append_bytes(b->cols[0], buf, (size_t)len), E);
        int64_t x = (r * 1000003) % 999983 - 500000;
        CHECK_OK(r % 5 == 1 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &x), E);
        int32_t k = (int32_t)(r % 10);   /* low cardinality: keeps its dictionary */
        CHECK_OK(hs_col_append_fixed(b->cols[2], &k), E);
    }
    b->n_rows = n;
    pq_writer_options o;
    memset(&o, 0, sizeof o);
    o.codec = HS_CODEC_NONE;
    o.page_rows = 4096;
    const char *path = tmp_path("giveup.parquet");
    CHECK_OK(write_batches(path, &s, &b, 1, &o, NULL), E);
    loaded l;
    CHECK_OK(load(path, &l), E);
    bool fell_back = false;
    check_pages(&l, &fell_back);
    for (int c = 0; c < 2; c++) {
        const pq_column_meta *cm = chunk(&l.meta, 0, c);
        CHECK(!cm->has_dictionary_page_offset);
        for (int i = 0; i < cm->n_encoding_stats; i++)
            CHECK(cm->encoding_stats[i].encoding != PQ_ENC_RLE_DICTIONARY);
    }
    CHECK(chunk(&l.meta, 0, 2)->has_dictionary_page_offset);
    /* chunk statistics against the values themselves */
    const pq_column_meta *cs = chunk(&l.meta, 0, 0);
    CHECK(cs->has_statistics && cs->statistics.min_value.p && cs->statistics.max_value.p);
    char mn[32] = "", mx[32] = "";
    for (int64_t r = 0; r < n; r++) {
        if (r % 7 == 3)
            continue;
        char buf[32];
        snprintf(buf, sizeof buf, "v%lld", (long long)((r * 7919) % 100003));
        if (!mn[0] || strcmp(buf, mn) < 0)
            strcpy(mn, buf);
        if (!mx[0] || strcmp(buf, mx) > 0)
            strcpy(mx, buf);
    }
    CHECK(cs->statistics.min_value.len == strlen(mn) &&
          memcmp(cs->statistics.min_value.p, mn, strlen(mn)) == 0);
    CHECK(cs->statistics.max_value.len == strlen(mx) &&
          memcmp(cs->statistics.max_value.p, mx, strlen(mx)) == 0);
    check_roundtrip(path, &b, 1);
    unload(&l);
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* ------------------------------------------------------------ nested */

static void nested_schema(hs_field *s)
{
    hs_field f, e, g, h;
    hs_field_init(s, "schema", HS_TYPE_STRUCT, false);
    /* li: list<int32> (nullable list, nullable elements) */
    field(&e, "element", HS_TYPE_INT32, true, 11);
    hs_field_init_list(&f, "li", true, &e);
    f.field_id = 10;
    add(s, &f);
    /* ls: list<string not null> not null */
    field(&e, "element", HS_TYPE_STRING, false, 13);
    hs_field_init_list(&f, "ls", false, &e);
    f.field_id = 12;
    add(s, &f);
    /* st: struct{a: int32, b: list<struct{c: string, d: double}>} */
    field(&f, "st", HS_TYPE_STRUCT, true, 14);
    field(&e, "a", HS_TYPE_INT32, true, 15); add(&f, &e);
    field(&g, "item", HS_TYPE_STRUCT, true, 17);
    field(&h, "c", HS_TYPE_STRING, true, 18); add(&g, &h);
    field(&h, "d", HS_TYPE_FLOAT64, false, 19); add(&g, &h);
    hs_field_init_list(&e, "b", true, &g);
    e.field_id = 16;
    add(&f, &e);
    add(s, &f);
    /* m: map<string, int64> */
    field(&f, "m", HS_TYPE_MAP, true, 20);
    field(&g, "entries", HS_TYPE_STRUCT, false, -1);
    field(&h, "key", HS_TYPE_STRING, false, 21); add(&g, &h);
    field(&h, "value", HS_TYPE_INT64, true, 22); add(&g, &h);
    add(&f, &g);
    add(s, &f);
    /* v: fixed_size_list<float>[4] */
    field(&e, "element", HS_TYPE_FLOAT32, true, 24);
    field(&f, "v", HS_TYPE_FIXED_LIST, true, 23);
    f.width = 4;
    add(&f, &e);
    add(s, &f);
    /* ll: list<list<int16>> */
    field(&g, "element", HS_TYPE_INT16, true, 27);
    hs_field_init_list(&e, "element", true, &g);
    e.field_id = 26;
    hs_field_init_list(&f, "ll", true, &e);
    f.field_id = 25;
    add(s, &f);
}

static hs_status fill_nested(hs_batch *b, int64_t n)
{
    for (int64_t r = 0; r < n; r++) {
        hs_column *li = b->cols[0], *ls = b->cols[1], *st = b->cols[2], *m = b->cols[3],
                  *v = b->cols[4], *ll = b->cols[5];
        /* li: null every 7th, empty every 5th, else r%4 elements with nulls */
        if (r % 7 == 3) {
            HS_TRY(hs_col_append_null(li));
        } else {
            int k = r % 5 == 0 ? 0 : (int)(r % 4) + 1;
            for (int j = 0; j < k; j++) {
                int32_t x = (int32_t)(r * 10 + j);
                HS_TRY(j == 1 ? hs_col_append_null(li->children[0])
                              : hs_col_append_fixed(li->children[0], &x));
            }
            HS_TRY(hs_col_list_end(li));
        }
        /* ls: strings including empty */
        for (int j = 0; j < (int)(r % 3); j++) {
            char buf[32];
            int len = j == 0 ? 0 : snprintf(buf, sizeof buf, "s%lld", (long long)r);
            HS_TRY(hs_col_append_bytes(ls->children[0], buf, (size_t)len));
        }
        HS_TRY(hs_col_list_end(ls));
        /* st */
        if (r % 6 == 1) {
            HS_TRY(hs_col_append_null(st));
        } else {
            int32_t a = (int32_t)r;
            HS_TRY(r % 4 == 2 ? hs_col_append_null(st->children[0])
                              : hs_col_append_fixed(st->children[0], &a));
            hs_column *bl = st->children[1];
            if (r % 5 == 2) {
                HS_TRY(hs_col_append_null(bl));
            } else {
                hs_column *item = bl->children[0];
                for (int j = 0; j < (int)(r % 3); j++) {
                    if (j == 1 && r % 2) {
                        HS_TRY(hs_col_append_null(item));
                        continue;
                    }
                    char buf[32];
                    int len = snprintf(buf, sizeof buf, "c%lld.%d", (long long)r, j);
                    HS_TRY(j == 2 ? hs_col_append_null(item->children[0])
                                  : hs_col_append_bytes(item->children[0], buf, (size_t)len));
                    double d = (double)r / (j + 1);
                    HS_TRY(hs_col_append_fixed(item->children[1], &d));
                    HS_TRY(hs_col_struct_append_valid(item));
                }
                HS_TRY(hs_col_list_end(bl));
            }
            HS_TRY(hs_col_struct_append_valid(st));
        }
        /* m */
        if (r % 8 == 5) {
            HS_TRY(hs_col_append_null(m));
        } else {
            hs_column *ent = m->children[0];
            for (int j = 0; j < (int)(r % 3); j++) {
                char buf[32];
                int len = snprintf(buf, sizeof buf, "key%d", j);
                HS_TRY(hs_col_append_bytes(ent->children[0], buf, (size_t)len));
                int64_t val = r * 100 + j;
                HS_TRY(j == 1 ? hs_col_append_null(ent->children[1])
                              : hs_col_append_fixed(ent->children[1], &val));
                HS_TRY(hs_col_struct_append_valid(ent));
            }
            HS_TRY(hs_col_list_end(m));
        }
        /* v */
        if (r % 9 == 4) {
            HS_TRY(hs_col_append_null(v));
        } else {
            for (int j = 0; j < 4; j++) {
                float x = (float)r + (float)j / 4;
                HS_TRY(r % 10 == 3 && j == 2 ? hs_col_append_null(v->children[0])
                                             : hs_col_append_fixed(v->children[0], &x));
            }
            HS_TRY(hs_col_list_end(v));
        }
        /* ll */
        if (r % 11 == 0) {
            HS_TRY(hs_col_append_null(ll));
        } else {
            hs_column *inner = ll->children[0];
            for (int j = 0; j < (int)(r % 3); j++) {
                if (j == 1 && r % 2) {
                    HS_TRY(hs_col_append_null(inner));
                    continue;
                }
                for (int k = 0; k < (int)((r + j) % 3); k++) {
                    int16_t x = (int16_t)(r + k);
                    HS_TRY(hs_col_append_fixed(inner->children[0], &x));
                }
                HS_TRY(hs_col_list_end(inner));
            }
            HS_TRY(hs_col_list_end(ll));
        }
    }
    b->n_rows = n;
    return HS_OK;
}

static void test_nested(void)
{
    hs_field s;
    nested_schema(&s);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&s, 3000, &b, E), E);
    CHECK_OK(fill_nested(b, 3000), E);
    for (int v2 = 0; v2 < 2; v2++) {
        pq_writer_options o;
        memset(&o, 0, sizeof o);
        o.codec = HS_CODEC_SNAPPY;
        o.data_page_v2 = v2;
        o.page_rows = 500;
        o.row_group_rows = 2000;
        const char *path = tmp_path(v2 ? "nested_v2.parquet" : "nested_v1.parquet");
        CHECK_OK(write_batches(path, &s, &b, 1, &o, NULL), E);
        loaded l;
        CHECK_OK(load(path, &l), E);
        const pq_file_meta *m = &l.meta;
        /* leaves: li.list.element, ls.list.element, st.a, st.b.list.element.c,
         * st.b.list.element.d, m.key_value.key, m.key_value.value,
         * v.list.element, ll.list.element.list.element */
        REQUIRE(m->n_row_groups == 2);
        REQUIRE(m->row_groups[0].n_columns == 9);
        const pq_column_meta *c = chunk(m, 0, 0);
        CHECK(c->n_path == 3 && strcmp(c->path[1], "list") == 0 &&
              strcmp(c->path[2], "element") == 0);
        c = chunk(m, 0, 6);
        CHECK(c->n_path == 3 && strcmp(c->path[1], "key_value") == 0 &&
              strcmp(c->path[2], "value") == 0);
        const pq_schema_element *e = find_elem(m, "li");
        CHECK(e && e->converted_type == PQ_CT_LIST && e->field_id == 10 &&
              e->repetition == PQ_OPTIONAL);
        e = find_elem(m, "m");
        CHECK(e && e->converted_type == PQ_CT_MAP && e->logical.kind == PQ_LT_MAP);
        e = find_elem(m, "key");
        CHECK(e && e->repetition == PQ_REQUIRED && e->field_id == 21);
        e = find_elem(m, "key_value");
        CHECK(e && e->repetition == PQ_REPEATED && e->num_children == 2);
        bool found_kv = false;
        for (int i = 0; i < m->n_kv; i++)
            if (strcmp(m->kv[i].key, "hyperstream.fixed_size_list") == 0) {
                found_kv = true;
                CHECK(m->kv[i].value && strcmp(m->kv[i].value, "{\"v\": 4}") == 0);
            }
        CHECK(found_kv);
        check_pages(&l, NULL);
        /* li null count: levels below max def = null lists + empty lists + null elements */
        int64_t nulls = 0;
        for (int64_t r = 0; r < 2000; r++) {
            if (r % 7 == 3 || r % 5 == 0)
                nulls++;
            else if ((int)(r % 4) + 1 > 1)
                nulls++;
        }
        CHECK(chunk(m, 0, 0)->statistics.null_count == nulls);
        /* pages of repeated columns start at row boundaries: every 500 rows */
        for (int c = 0; c < 9; c++) {
            const pq_column_chunk *cc = &m->row_groups[0].columns[c];
            hs_arena a = {0};
            pq_offset_index oi;
            REQUIRE(cc->has_offset_index);
            CHECK_OK(pq_decode_offset_index(l.bytes.data + cc->offset_index_offset,
                                            (size_t)cc->offset_index_length, &a, &oi, E), E);
            CHECK(oi.n_pages == 4);
            for (int i = 0; i < oi.n_pages; i++)
                CHECK(oi.pages[i].first_row_index == 500 * i);
            hs_arena_destroy(&a);
        }
        if (!v2)
            check_roundtrip(path, &b, 1);
        unload(&l);
    }
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* Allocation failure at every step of writing a nested file to memory:
 * HS_NOMEM (or success), never a crash or a leak. */
static void test_oom(void)
{
    hs_field s;
    nested_schema(&s);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&s, 200, &b, E), E);
    CHECK_OK(fill_nested(b, 200), E);
    pq_writer_options o;
    memset(&o, 0, sizeof o);
    o.codec = HS_CODEC_ZSTD;
    o.page_rows = 50;
    o.row_group_rows = 120;
    int64_t live = hs_mem_live_count();
    bool done = false;
    int k;
    for (k = 1; k < 5000 && !done; k++) {
        hs_buf mem = {0};
        hs_wfile *wf = NULL;
        pq_writer *w = NULL;
        hs_mem_fail_after(k);
        hs_status st = hs_mem_create(&mem, &wf, E);
        if (st == HS_OK)
            st = pq_writer_open(wf, &s, &o, &w, E);
        if (st == HS_OK)
            st = pq_writer_write(w, b, E);
        if (st == HS_OK)
            st = pq_writer_finish(w, E);
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM || st == HS_IO);
        done = st == HS_OK;
        pq_writer_free(w);
        hs_wfile_abort(wf);
        hs_buf_free(&mem);
        CHECK(hs_mem_live_count() == live);
    }
    CHECK(done);
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* Encoding options: each applies to its column; bad combinations are refused. */
static void test_encodings(void)
{
    hs_field s, f;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "i", HS_TYPE_INT64, true, 1); add(&s, &f);
    field(&f, "d", HS_TYPE_FLOAT64, false, 2); add(&s, &f);
    field(&f, "s", HS_TYPE_STRING, true, 3); add(&s, &f);
    field(&f, "t", HS_TYPE_STRING, false, 4); add(&s, &f);
    field(&f, "j", HS_TYPE_INT32, false, 5); add(&s, &f);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&s, 4000, &b, E), E);
    for (int64_t r = 0; r < 4000; r++) {
        int64_t x = r * r;
        CHECK_OK(r % 9 == 0 ? hs_col_append_null(b->cols[0]) : hs_col_append_fixed(b->cols[0], &x), E);
        double d = (double)r * 0.25;
        CHECK_OK(hs_col_append_fixed(b->cols[1], &d), E);
        char buf[32];
        int len = snprintf(buf, sizeof buf, "prefix-%05lld", (long long)r);
        CHECK_OK(r % 4 == 0 ? hs_col_append_null(b->cols[2]) : hs_col_append_bytes(b->cols[2], buf, (size_t)len), E);
        CHECK_OK(hs_col_append_bytes(b->cols[3], buf, (size_t)(r % 8)), E);
        int32_t j = (int32_t)(r % 1000);
        CHECK_OK(hs_col_append_fixed(b->cols[4], &j), E);
    }
    b->n_rows = 4000;
    pq_column_option co[5] = {
        {.path = "i", .set_encoding = true, .encoding = PQ_ENC_DELTA_BINARY_PACKED},
        {.path = "d", .set_encoding = true, .encoding = PQ_ENC_BYTE_STREAM_SPLIT},
        {.path = "s", .set_encoding = true, .encoding = PQ_ENC_DELTA_BYTE_ARRAY},
        {.path = "t", .set_encoding = true, .encoding = PQ_ENC_DELTA_LENGTH_BYTE_ARRAY},
        {.path = "j", .set_dictionary = true, .dictionary = false},
    };
    static const pq_encoding want[5] = {PQ_ENC_DELTA_BINARY_PACKED, PQ_ENC_BYTE_STREAM_SPLIT,
                                        PQ_ENC_DELTA_BYTE_ARRAY, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY,
                                        PQ_ENC_PLAIN};
    for (int v2 = 0; v2 < 2; v2++) {
        pq_writer_options o;
        memset(&o, 0, sizeof o);
        o.codec = HS_CODEC_ZSTD;
        o.column_options = co;
        o.n_column_options = 5;
        o.page_rows = 1500;
        o.data_page_v2 = v2;
        const char *path = tmp_path(v2 ? "enc_v2.parquet" : "enc_v1.parquet");
        CHECK_OK(write_batches(path, &s, &b, 1, &o, NULL), E);
        loaded l;
        CHECK_OK(load(path, &l), E);
        for (int c = 0; c < 5; c++) {
            const pq_column_meta *cm = chunk(&l.meta, 0, c);
            CHECK(!cm->has_dictionary_page_offset);
            bool has = false;
            for (int i = 0; i < cm->n_encoding_stats; i++)
                has |= cm->encoding_stats[i].encoding == want[c];
            CHECK(has);
        }
        check_pages(&l, NULL);
        check_roundtrip(path, &b, 1);
        unload(&l);
    }
    /* DELTA_BINARY_PACKED on a string column is refused */
    pq_column_option bad = {.path = "s", .set_encoding = true,
                            .encoding = PQ_ENC_DELTA_BINARY_PACKED};
    pq_writer_options o;
    memset(&o, 0, sizeof o);
    o.column_options = &bad;
    o.n_column_options = 1;
    CHECK(write_batches(tmp_path("bad.parquet"), &s, &b, 1, &o, NULL) == HS_INVALID);
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* Page index: boundary order of a sorted column, truncation of long strings. */
static void test_page_index(void)
{
    hs_field s, f;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "k", HS_TYPE_INT64, false, 1); add(&s, &f);
    field(&f, "long", HS_TYPE_BINARY, true, 2); add(&s, &f);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&s, 5000, &b, E), E);
    char big[200];
    for (int64_t r = 0; r < 5000; r++) {
        int64_t k = r;
        CHECK_OK(hs_col_append_fixed(b->cols[0], &k), E);
        memset(big, r < 2500 ? 'a' : 0xff, sizeof big);
        snprintf(big + 150, 40, "%06lld", (long long)r);
        CHECK_OK(r >= 1000 && r < 2000 ? hs_col_append_null(b->cols[1])
                                        : hs_col_append_bytes(b->cols[1], big, 180), E);
    }
    b->n_rows = 5000;
    pq_writer_options o;
    memset(&o, 0, sizeof o);
    o.page_rows = 1000;
    const char *path = tmp_path("pageindex.parquet");
    CHECK_OK(write_batches(path, &s, &b, 1, &o, NULL), E);
    loaded l;
    CHECK_OK(load(path, &l), E);
    const pq_column_chunk *cc = &l.meta.row_groups[0].columns[0];
    REQUIRE(cc->has_column_index && cc->has_offset_index);
    hs_arena a = {0};
    pq_column_index ci;
    CHECK_OK(pq_decode_column_index(l.bytes.data + cc->column_index_offset,
                                    (size_t)cc->column_index_length, &a, &ci, E), E);
    CHECK(ci.n_pages == 5);
    CHECK(ci.boundary_order == PQ_BOUNDARY_ASCENDING);
    pq_offset_index oi;
    CHECK_OK(pq_decode_offset_index(l.bytes.data + cc->offset_index_offset,
                                    (size_t)cc->offset_index_length, &a, &oi, E), E);
    REQUIRE(oi.n_pages == 5);
    for (int i = 0; i < 5; i++)
        CHECK(oi.pages[i].first_row_index == i * 1000);
    cc = &l.meta.row_groups[0].columns[1];
    REQUIRE(cc->has_column_index);
    CHECK_OK(pq_decode_column_index(l.bytes.data + cc->column_index_offset,
                                    (size_t)cc->column_index_length, &a, &ci, E), E);
    REQUIRE(ci.n_pages == 5);
    CHECK(ci.null_pages[1] && !ci.null_pages[0]);
    CHECK(ci.null_counts[1] == 1000 && ci.null_counts[0] == 0);
    CHECK(ci.min_values[0].len == 64);
    CHECK(ci.max_values[0].len == 64 && ci.max_values[0].p[63] == 'b');
    /* all-0xff prefix cannot be incremented: max stays whole */
    CHECK(ci.max_values[4].len == 180);
    /* chunk statistics keep the exact values */
    const pq_statistics *st = &cc->meta_data.statistics;
    CHECK(st->min_value.len == 180 && st->max_value.len == 180);
    CHECK(st->null_count == 1000);
    hs_arena_destroy(&a);
    unload(&l);
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* Float statistics: all-NaN chunks have no min/max; zeros are signed per spec. */
static void test_float_stats(void)
{
    hs_field s, f;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "nan", HS_TYPE_FLOAT64, false, 1); add(&s, &f);
    field(&f, "zero", HS_TYPE_FLOAT32, false, 2); add(&s, &f);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&s, 10, &b, E), E);
    for (int r = 0; r < 10; r++) {
        double n = NAN;
        float z = r % 2 ? 0.0f : -0.0f;
        CHECK_OK(hs_col_append_fixed(b->cols[0], &n), E);
        CHECK_OK(hs_col_append_fixed(b->cols[1], &z), E);
    }
    b->n_rows = 10;
    const char *path = tmp_path("floats.parquet");
    CHECK_OK(write_batches(path, &s, &b, 1, NULL, NULL), E);
    loaded l;
    CHECK_OK(load(path, &l), E);
    const pq_statistics *st = &chunk(&l.meta, 0, 0)->statistics;
    CHECK(st->min_value.p == NULL && st->max_value.p == NULL);
    CHECK(st->has_null_count && st->null_count == 0);
    CHECK(!l.meta.row_groups[0].columns[0].has_column_index);
    CHECK(l.meta.row_groups[0].columns[0].has_offset_index);
    st = &chunk(&l.meta, 0, 1)->statistics;
    REQUIRE(st->min_value.p && st->min_value.len == 4);
    uint32_t mn, mx;
    memcpy(&mn, st->min_value.p, 4);
    memcpy(&mx, st->max_value.p, 4);
    CHECK(mn == 0x80000000u);
    CHECK(mx == 0);
    unload(&l);
    hs_batch_free(b);
    hs_field_clear(&s);
}

/* Misuse: a batch with another schema is refused; free without finish is clean. */
static void test_misuse(void)
{
    hs_field s, f, t;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "a", HS_TYPE_INT32, false, 1); add(&s, &f);
    hs_field_init(&t, "schema", HS_TYPE_STRUCT, false);
    field(&f, "a", HS_TYPE_INT64, false, 1); add(&t, &f);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&t, 1, &b, E), E);
    hs_buf mem = {0};
    hs_wfile *wf = NULL;
    CHECK_OK(hs_mem_create(&mem, &wf, E), E);
    pq_writer *w = NULL;
    CHECK_OK(pq_writer_open(wf, &s, NULL, &w, E), E);
    CHECK(pq_writer_write(w, b, E) == HS_INVALID);
    pq_writer_free(w);
    hs_wfile_abort(wf);
    hs_buf_free(&mem);
    /* an empty struct column cannot be written */
    hs_field e;
    hs_field_init(&e, "schema", HS_TYPE_STRUCT, false);
    field(&f, "empty", HS_TYPE_STRUCT, true, 1); add(&e, &f);
    CHECK_OK(hs_mem_create(&mem, &wf, E), E);
    CHECK(pq_writer_open(wf, &e, NULL, &w, E) == HS_UNSUPPORTED);
    hs_wfile_abort(wf);
    hs_buf_free(&mem);
    hs_batch_free(b);
    hs_field_clear(&s);
    hs_field_clear(&t);
    hs_field_clear(&e);
}

/* Empty file: zero rows gives a valid footer with no row groups. */
static void test_empty(void)
{
    hs_field s, f;
    hs_field_init(&s, "schema", HS_TYPE_STRUCT, false);
    field(&f, "a", HS_TYPE_STRING, true, 1); add(&s, &f);
    const char *path = tmp_path("empty.parquet");
    CHECK_OK(write_batches(path, &s, NULL, 0, NULL, NULL), E);
    loaded l;
    CHECK_OK(load(path, &l), E);
    CHECK(l.meta.num_rows == 0 && l.meta.n_row_groups == 0);
    unload(&l);
    hs_field_clear(&s);
}

int main(void)
{
    int64_t live = hs_mem_live_count();
    HS_RUN(test_flat_all_types);
    HS_RUN(test_dictionary_fallback);
    HS_RUN(test_dictionary_give_up);
    HS_RUN(test_nested);
    HS_RUN(test_encodings);
    HS_RUN(test_page_index);
    HS_RUN(test_float_stats);
    HS_RUN(test_misuse);
    HS_RUN(test_oom);
    HS_RUN(test_empty);
    pq_footer_cache_clear();
    if (hs_mem_live_count() != live)
        fprintf(stderr, "live allocations: %lld -> %lld\n", (long long)live,
                (long long)hs_mem_live_count());
    return hs_test_summary();
}
