/*
 * tests/fuzz/fuzz_parquet_file.c - libFuzzer target for the whole Parquet read
 * path: footer (thrift), schema mapping, page headers, decompression, levels,
 * every value decoder and nested assembly ("the page decoder fuzz target").
 *
 * The input is opened as an in-memory file and every column of every row group
 * is scanned with a small batch size, then once more with a row selection (so
 * the page-index / page-skipping paths run too), with its string columns as
 * verdict columns (judged per dictionary entry or per value), then written to a local
 * file and scanned twice with a selection (pages from the file's mapping,
 * then from the footer's page notes).  Any status is acceptable;
 * crashes, sanitizer reports, leaks and huge allocations are not.  The footer
 * cache is cleared after each input so inputs never see each other's footers.
 */
#include "base/mem.h"
#include "parquet/reader.h"
#include "columnar/column.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <unistd.h>

/* A verdict (pq_verdict): even length; NULL fails. */
static hs_status even(void *ctx, const hs_column *v, uint8_t *out, hs_error *err)
{
    const int32_t *off = (const int32_t *)v->offsets.data;
    for (int64_t i = 0; i < v->length; i++)
        out[i] = hs_col_is_valid(v, i) && (off[i + 1] - off[i]) % 2 == 0;
    return HS_OK;
}

static void scan(hs_file *f, const roaring_bitmap_t *rows, bool verdicts)
{
    hs_error err = { 0 };
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    if (pq_reader_open(f, &r, &err) != HS_OK)
        return;
    pq_scan_options opt = { 0 };
    opt.batch_size = 3;
    opt.rows = rows;
    const hs_field *fs = pq_reader_schema(r);
    pq_verdict vd[64] = { { 0 } };
    int cols[64];
    if (verdicts) {
        int n = fs->n_children < 64 ? fs->n_children : 64;
        for (int i = 0; i < n; i++) {
            cols[i] = i;
            if (fs->children[i].type == HS_TYPE_STRING || fs->children[i].type == HS_TYPE_BINARY)
                vd[i] = (pq_verdict){ even, NULL };
        }
        opt.columns = cols;
        opt.n_columns = n;
        opt.verdicts = vd;
    }
    if (pq_scan_open(r, &opt, &s, &err) == HS_OK) {
        /* bounded: a lying footer may claim billions of rows */
        for (int i = 0; i < 4096; i++) {
            hs_batch *b = NULL;
            if (pq_scan_next(s, &b, &err) != HS_OK || !b)
                break;
            hs_batch_free(b);
        }
    }
    pq_scan_close(s);
    pq_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hs_file *f = NULL;
    hs_error err = { 0 };
    if (hs_mem_open("fuzz.parquet", data, size, false, &f, &err) != HS_OK)
        return 0;
    scan(f, NULL, false);
    scan(f, NULL, true);
    roaring_bitmap_t *rows = roaring_bitmap_from_range(1, 200, 7);
    if (rows) {
        scan(f, rows, false);
        scan(f, rows, true);
        roaring_bitmap_free(rows);
    }
    hs_file_close(f);
    pq_footer_cache_clear();
    /* the same bytes as a local file: selective reads then take pages from
     * the file's mapping, and the second scan sets pages it saw up from the
     * footer's page notes */
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz-parquet-%d.parquet", (int)getpid());
    FILE *fp = fopen(path, "wb");
    if (fp) {
        bool ok = fwrite(data, 1, size, fp) == size;
        ok = fclose(fp) == 0 && ok;
        if (ok && hs_local_open(path, &f, &err) == HS_OK) {
            rows = roaring_bitmap_from_range(0, 4000, 3);
            if (rows) {
                scan(f, rows, false);
                scan(f, rows, false);
                roaring_bitmap_free(rows);
            }
            hs_file_close(f);
        }
        unlink(path);
        pq_footer_cache_clear();
    }
    return 0;
}
