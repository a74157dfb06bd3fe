/*
 * tests/c/test_parquet_verdict.c - verdict columns (pq_scan_options.verdicts,
 * parquet/reader.h): a flat string column read as one boolean per row, the
 * verdict of a callback judged per dictionary entry on dictionary pages and
 * per value on other pages.
 *
 * Oracle: the strings the test wrote, judged by the same predicate here,
 * row by row.  Files of our writer: a column of few values (dictionary
 * pages), one of many values whose dictionary falls back to PLAIN pages part
 * way through a column chunk, the same with dictionaries off, with nulls
 * and empty strings; v1 and v2 pages, with and without a page index; read
 * whole, with row selections (page mode) and with odd batch sizes; the
 * dictionary cached by a first read.  Also: a failing callback fails the
 * scan, and a verdict on a column that is not a flat string column is
 * HS_INVALID.
 */
#include "harness.h"

#include "base/mem.h"
#include "parquet/reader.h"
#include "parquet/writer.h"

#include <roaring/roaring.h>
#include <stdio.h>
#include <string.h>

#define N_ROWS 6000

/* Row i's value of column c (0: few values, 1: many), or NULL. */
static const char *value(int c, int64_t i, char *buf, size_t cap)
{
    if (i % 11 == 3)
        return NULL;
    if (c == 0) {
        static const char *const w[] = {"", "MAIL", "SHIP", "AIR", "REG AIR", "MAIL ", "é"};
        return w[(i * 7 + i / 5) % 7];
    }
    if (i % 13 == 0)
        return "";
    snprintf(buf, cap, "v%lld-%s", (long long)(i * 7919 % 5003), i % 3 ? "x" : "yy");
    return buf;
}

/* The predicate: empty, "MAIL", or an odd length; NULL passes when
 * null_passes. */
typedef struct pred_ctx {
    bool null_passes;
    int calls;
    bool fail;
} pred_ctx;

static bool judge(const pred_ctx *p, const uint8_t *s, size_t n, bool null)
{
    if (null)
        return p->null_passes;
    return n == 0 || (n == 4 && memcmp(s, "MAIL", 4) == 0) || n % 2 == 1;
}

static hs_status verdict_fn(void *ctx, const hs_column *v, uint8_t *out, hs_error *err)
{
    pred_ctx *p = ctx;
    __atomic_add_fetch(&p->calls, 1, __ATOMIC_RELAXED);
    if (p->fail)
        return hs_err_set(err, HS_INVALID, "judge failed");
    if (v->type != HS_TYPE_STRING)
        return hs_err_set(err, HS_INTERNAL, "not a string column");
    const int32_t *off = (const int32_t *)v->offsets.data;
    for (int64_t i = 0; i < v->length; i++) {
        bool null = !hs_col_is_valid(v, i);
        out[i] = judge(p, null ? NULL : v->values.data + off[i], null ? 0 : (size_t)(off[i + 1] - off[i]), null);
    }
    return HS_OK;
}

static hs_status build(hs_batch **out, hs_error *err)
{
    hs_field schema, f;
    hs_field_init(&schema, "schema", HS_TYPE_STRUCT, false);
    const char *names[] = {"id", "few", "many"};
    for (int i = 0; i < 3; i++) {
        hs_field_init(&f, names[i], i ? HS_TYPE_STRING : HS_TYPE_INT64, i != 0);
        f.field_id = i + 1;
        HS_TRY(hs_field_add_child(&schema, &f));
    }
    hs_status st = hs_batch_create(&schema, N_ROWS, out, err);
    hs_field_clear(&schema);
    HS_TRY(st);
    hs_batch *b = *out;
    char buf[64];
    for (int64_t i = 0; i < N_ROWS; i++) {
        HS_TRY(hs_col_append_fixed(b->cols[0], &i));
        for (int c = 0; c < 2; c++) {
            const char *s = value(c, i, buf, sizeof buf);
            HS_TRY(s ? hs_col_append_bytes(b->cols[c + 1], s, strlen(s))
                     : hs_col_append_null(b->cols[c + 1]));
        }
    }
    b->n_rows = N_ROWS;
    return HS_OK;
}

/* Reads id and both columns as verdicts over rows (NULL: all), checks
 * every row against the oracle; *seen = the rows read. */
static void read_check(hs_file *f, const roaring_bitmap_t *rows, int64_t batch, pred_ctx *p,
                       int64_t *seen_out)
{
    *seen_out = -1;
    hs_error err = {0};
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    int cols[] = {0, 1, 2};
    pq_verdict vd[3] = {{0}, {verdict_fn, p}, {verdict_fn, p}};
    pq_scan_options so = {.columns = cols, .n_columns = 3, .verdicts = vd, .rows = rows,
                          .batch_size = batch};
    CHECK_OK(pq_reader_open(f, &r, &err), &err);
    CHECK_OK(pq_scan_open(r, &so, &s, &err), &err);
    int64_t seen = 0;
    char buf[64];
    for (;;) {
        hs_batch *b = NULL;
        CHECK_OK(pq_scan_next(s, &b, &err), &err);
        if (!b)
            break;
        REQUIRE(b->n_cols == 3);
        CHECK(b->cols[1]->type == HS_TYPE_BOOL && b->cols[2]->type == HS_TYPE_BOOL);
        CHECK(b->cols[1]->null_count == 0 && b->cols[2]->null_count == 0);
        const int64_t *ids = (const int64_t *)b->cols[0]->values.data;
        for (int64_t k = 0; k < b->n_rows; k++) {
            int64_t i = ids[k];
            for (int c = 0; c < 2; c++) {
                const char *v = value(c, i, buf, sizeof buf);
                bool want = judge(p, (const uint8_t *)v, v ? strlen(v) : 0, !v);
                bool got = hs_bit_get(b->cols[c + 1]->values.data, k);
                if (got != want) {
                    fprintf(stderr, "row %lld column %d: verdict %d, want %d\n", (long long)i, c,
                            got, want);
                    CHECK(got == want);
                    c = 2;
                    k = b->n_rows;
                }
            }
        }
        seen += b->n_rows;
        hs_batch_free(b);
    }
    pq_scan_close(s);
    pq_reader_close(r);
    *seen_out = seen;
}

static int64_t check_read(hs_file *f, const roaring_bitmap_t *rows, int64_t batch, pred_ctx *p)
{
    int64_t seen;
    read_check(f, rows, batch, p, &seen);
    return seen;
}

static void test_files(void)
{
    hs_error err = {0};
    hs_batch *b = NULL;
    CHECK_OK(build(&b, &err), &err);
    int64_t live = hs_mem_live_count();
    for (int variant = 0; variant < 6; variant++) {
        pq_writer_options wo;
        memset(&wo, 0, sizeof wo);
        wo.codec = variant % 2 ? HS_CODEC_ZSTD : HS_CODEC_NONE;
        wo.page_rows = variant < 3 ? 97 : 700;
        wo.row_group_rows = variant < 3 ? 2500 : N_ROWS;
        wo.dictionary_page_bytes = 1024;        /* "many" falls back to PLAIN */
        wo.no_dictionary = variant == 5;
        wo.data_page_v2 = variant == 1 || variant == 4;
        wo.no_page_index = variant == 3;        /* sequential mode only */
        hs_buf file = {0};
        hs_wfile *wf = NULL;
        pq_writer *w = NULL;
        CHECK_OK(hs_mem_create(&file, &wf, &err), &err);
        CHECK_OK(pq_writer_open(wf, &b->schema, &wo, &w, &err), &err);
        CHECK_OK(pq_writer_write(w, b, &err), &err);
        CHECK_OK(pq_writer_finish(w, &err), &err);
        pq_writer_free(w);
        CHECK_OK(hs_wfile_close(wf, &err), &err);
        char name[64];
        snprintf(name, sizeof name, "verdict-%d.parquet", variant);
        hs_file *f = NULL;
        CHECK_OK(hs_mem_open(name, file.data, file.len, false, &f, &err), &err);
        for (int np = 0; np < 2; np++) {
            pred_ctx p = {.null_passes = np == 1};
            CHECK(check_read(f, NULL, 0, &p) == N_ROWS);
            CHECK(check_read(f, NULL, 333, &p) == N_ROWS);   /* again: cached dictionaries */
            CHECK(p.calls > 0);
            /* selections: 1 in 7, a run in the middle, one row */
            roaring_bitmap_t *bm = roaring_bitmap_create();
            for (uint32_t i = 0; i < N_ROWS; i += 7)
                roaring_bitmap_add(bm, i);
            CHECK(check_read(f, bm, 500, &p) == (N_ROWS + 6) / 7);
            roaring_bitmap_clear(bm);
            roaring_bitmap_add_range(bm, 2400, 2700);
            CHECK(check_read(f, bm, 0, &p) == 300);
            roaring_bitmap_clear(bm);
            roaring_bitmap_add(bm, N_ROWS - 1);
            CHECK(check_read(f, bm, 0, &p) == 1);
            roaring_bitmap_free(bm);
        }
        /* a failing judge fails the scan */
        {
            pred_ctx p = {.fail = true};
            pq_reader *r = NULL;
            pq_scan *s = NULL;
            int cols[] = {1};
            pq_verdict vd[1] = {{verdict_fn, &p}};
            pq_scan_options so = {.columns = cols, .n_columns = 1, .verdicts = vd};
            CHECK_OK(pq_reader_open(f, &r, &err), &err);
            CHECK_OK(pq_scan_open(r, &so, &s, &err), &err);
            hs_batch *ob = NULL;
            CHECK(pq_scan_next(s, &ob, &err) == HS_INVALID);
            CHECK(ob == NULL);
            hs_err_clear(&err);
            pq_scan_close(s);
            pq_reader_close(r);
        }
        /* a verdict on an integer column */
        {
            pred_ctx p = {0};
            pq_reader *r = NULL;
            pq_scan *s = NULL;
            int cols[] = {0};
            pq_verdict vd[1] = {{verdict_fn, &p}};
            pq_scan_options so = {.columns = cols, .n_columns = 1, .verdicts = vd};
            CHECK_OK(pq_reader_open(f, &r, &err), &err);
            CHECK(pq_scan_open(r, &so, &s, &err) == HS_INVALID);
            CHECK(s == NULL);
            hs_err_clear(&err);
            pq_reader_close(r);
        }
        hs_file_close(f);
        hs_buf_free(&file);
        pq_footer_cache_clear();
    }
    CHECK(hs_mem_live_count() == live);
    hs_batch_free(b);
}

int main(void)
{
    int64_t live = hs_mem_live_count();
    HS_RUN(test_files);
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
    return hs_test_summary();
}
