/*
 * tests/c/test_parquet_cache.c - what the Parquet reader keeps between scans
 * of a file must never outlive the file's bytes, and what one page may make
 * the reader allocate is bounded.
 *
 *   identity    the footer cache (with the file's mapping, page notes and
 *               dictionaries) is keyed by the file's identity: a file
 *               replaced by rename, rewritten in place, or deleted and
 *               recreated under the same name and size reads the new
 *               values; two memory files of one name are two files.
 *   truncation  a file truncated or rewritten while a reader holds its
 *               mapping fails the next batch with HS_IO, never SIGBUS.
 *   page size   a page whose header claims a huge uncompressed size makes
 *               the reader allocate about what its codec allows for its
 *               compressed bytes (measured through the allocation hook),
 *               then fail with HS_CORRUPT.
 *   page cache  the cache of decompressed pages: repeated takes decompress
 *               once, results equal the whole read (an oracle that never
 *               uses the cache), eviction keeps it within its budget over
 *               many files, a rewritten file never hits, threads agree.
 *
 * Oracles: the values the test wrote (a function of the row and of the
 * file's version), and whole-file reads without a selection.
 */
#include "harness.h"

#include "base/mem.h"
#include "parquet/footer.h"
#include "parquet/reader.h"
#include "parquet/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_ROWS 20000

/* value of column v at row i in version `ver` of the file */
static int64_t val_of(int64_t i, int ver) { return i * 7 + (int64_t)ver * 1000003; }
/* the dictionary column: 16 distinct strings per version, same lengths */
static void str_of(int64_t i, int ver, char *s) { snprintf(s, 16, "v%d-%03d", ver % 10, (int)(i % 16)); }

/* A file of N_ROWS rows (id, v, s) for version ver, as bytes. */
static void build_file(int ver, hs_codec codec, bool v2, hs_buf *file)
{
    hs_error err = {0};
    hs_field schema, f;
    hs_field_init(&schema, "schema", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    f.field_id = 1;
    REQUIRE(hs_field_add_child(&schema, &f) == HS_OK);
    hs_field_init(&f, "v", HS_TYPE_INT64, true);
    f.field_id = 2;
    REQUIRE(hs_field_add_child(&schema, &f) == HS_OK);
    hs_field_init(&f, "s", HS_TYPE_STRING, false);
    f.field_id = 3;
    REQUIRE(hs_field_add_child(&schema, &f) == HS_OK);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&schema, N_ROWS, &b, &err), &err);
    for (int64_t i = 0; i < N_ROWS; i++) {
        int64_t v = val_of(i, ver);
        char s[16];
        str_of(i, ver, s);
        CHECK_OK(hs_col_append_fixed(b->cols[0], &i), &err);
        CHECK_OK(i % 11 == 5 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &v),
                 &err);
        CHECK_OK(hs_col_append_bytes(b->cols[2], s, strlen(s)), &err);
    }
    b->n_rows = N_ROWS;
    pq_column_option co = {.path = "v", .set_dictionary = true, .dictionary = false};
    pq_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.codec = codec;
    wo.page_rows = 1000;
    wo.data_page_v2 = v2;
    wo.no_statistics = true;   /* same size whatever the values */
    wo.column_options = &co;
    wo.n_column_options = 1;
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    memset(file, 0, sizeof *file);
    CHECK_OK(hs_mem_create(file, &wf, &err), &err);
    CHECK_OK(pq_writer_open(wf, &schema, &wo, &w, &err), &err);
    CHECK_OK(pq_writer_write(w, b, &err), &err);
    CHECK_OK(pq_writer_finish(w, &err), &err);
    pq_writer_free(w);
    CHECK_OK(hs_wfile_close(wf, &err), &err);
    hs_batch_free(b);
    hs_field_clear(&schema);
}

static void put_file(const char *path, const hs_buf *file)
{
    FILE *fp = fopen(path, "wb");   /* truncates: the same inode when it exists */
    REQUIRE(fp);
    REQUIRE(fwrite(file->data, 1, file->len, fp) == file->len);
    REQUIRE(fclose(fp) == 0);
}

/* Reads rows[0..n) of f (columns id, v, s) and checks them against version
 * ver; returns the status of the scan (errors are left in *err). */
static hs_status take_check(hs_file *f, const uint32_t *rows, int n, int ver, bool *same,
                            hs_error *err)
{
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    *same = true;
    roaring_bitmap_t *bm = roaring_bitmap_of_ptr((size_t)n, rows);
    pq_scan_options o;
    memset(&o, 0, sizeof o);
    o.rows = bm;
    o.batch_size = 3;
    hs_status st = pq_reader_open(f, &r, err);
    if (st == HS_OK)
        st = pq_scan_open(r, &o, &s, err);
    int k = 0;
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = pq_scan_next(s, &b, err);
        if (st != HS_OK || !b)
            break;
        for (int64_t j = 0; j < b->n_rows; j++, k++) {
            int64_t row = HS_COL_VALUES(b->cols[0], int64_t)[j];
            bool vnull = !hs_col_is_valid(b->cols[1], j);
            int64_t v = HS_COL_VALUES(b->cols[1], int64_t)[j];
            const int32_t *so = HS_COL_OFFSETS(b->cols[2]);
            char want[16];
            str_of(row, ver, want);
            bool ok = k < n && row == rows[k] && vnull == (row % 11 == 5) &&
                      (vnull || v == val_of(row, ver)) && (size_t)(so[j + 1] - so[j]) == strlen(want) &&
                      memcmp(HS_COL_VALUES(b->cols[2], char) + so[j], want, strlen(want)) == 0;
            if (!ok && *same)
                fprintf(stderr, "  row %lld: v=%lld, expected version %d's %lld\n",
                        (long long)row, (long long)v, ver, (long long)val_of(row, ver));
            *same &= ok;
        }
        hs_batch_free(b);
    }
    if (st == HS_OK && k != n)
        *same = false;
    pq_scan_close(s);
    pq_reader_close(r);
    roaring_bitmap_free(bm);
    return st;
}

static const uint32_t g_rows[] = {3, 999, 1000, 5005, 12345, 19999};
#define N_SEL ((int)(sizeof g_rows / sizeof g_rows[0]))

static void expect_version(const char *path, int ver, const char *what)
{
    hs_file *f = NULL;
    hs_error err = {0};
    bool same = false;
    CHECK_OK(hs_local_open(path, &f, &err), &err);
    if (!f)
        return;
    CHECK_OK(take_check(f, g_rows, N_SEL, ver, &same, &err), &err);
    if (!same)
        fprintf(stderr, "  %s: stale values\n", what);
    CHECK(same);
    hs_file_close(f);
}

/* The next write of path gets a new modification time (the file system's
 * timestamp clock ticks every few ms): rewrites until it does. */
static void put_file_new_mtime(const char *path, const hs_buf *file)
{
    struct stat a, b;
    REQUIRE(stat(path, &a) == 0);
    for (int i = 0; i < 2000; i++) {
        put_file(path, file);
        REQUIRE(stat(path, &b) == 0);
        if (b.st_mtim.tv_sec != a.st_mtim.tv_sec || b.st_mtim.tv_nsec != a.st_mtim.tv_nsec)
            return;
        usleep(1000);
    }
    CHECK(!"the file's mtime never changed");
}

static void test_identity(void)
{
    int64_t live = hs_mem_live_count();
    for (int variant = 0; variant < 2; variant++) {
        /* uncompressed, so that every version has the same size */
        bool v2p = variant == 1;
        hs_buf v1, v2, v3;
        build_file(1, HS_CODEC_NONE, v2p, &v1);
        build_file(2, HS_CODEC_NONE, v2p, &v2);
        build_file(3, HS_CODEC_NONE, v2p, &v3);
        REQUIRE(v1.len == v2.len && v2.len == v3.len);   /* same name, same size */
        char path[512], tmp[600];
        snprintf(path, sizeof path, "%s/ident-%d.parquet", hs_test_tmpdir(), variant);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        pq_footer_cache_clear();
        put_file(path, &v1);
        expect_version(path, 1, "first version");
        expect_version(path, 1, "first version, cached");
        /* replaced by rename: a new inode; the cached footer's mapping shows the old one */
        put_file(tmp, &v2);
        REQUIRE(rename(tmp, path) == 0);
        expect_version(path, 2, "replaced by rename");
        /* rewritten in place: the same inode, a new mtime; the cached
         * dictionary of the old file must not be used */
        put_file_new_mtime(path, &v3);
        expect_version(path, 3, "rewritten in place");
        /* deleted and recreated */
        REQUIRE(unlink(path) == 0);
        put_file(path, &v1);
        expect_version(path, 1, "deleted and recreated");
        unlink(path);
        /* two memory files of one name and size are two files */
        for (int k = 1; k <= 2; k++) {
            hs_file *f = NULL;
            hs_error err = {0};
            bool same = false;
            CHECK_OK(hs_mem_open("same-name.parquet", (k == 1 ? &v1 : &v2)->data, v1.len, false, &f,
                                 &err), &err);
            CHECK_OK(take_check(f, g_rows, N_SEL, k, &same, &err), &err);
            CHECK(same);
            hs_file_close(f);
        }
        hs_buf_free(&v1);
        hs_buf_free(&v2);
        hs_buf_free(&v3);
    }
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
}

/* A reader that holds the file's mapping: the file is truncated (or
 * rewritten) between two batches: the next batch fails cleanly. */
static void test_truncate_while_mapped(void)
{
    int64_t live = hs_mem_live_count();
    for (int mode = 0; mode < 3; mode++) {
        hs_buf v1, v2;
        build_file(1, mode == 2 ? HS_CODEC_ZSTD : HS_CODEC_NONE, false, &v1);
        build_file(2, HS_CODEC_NONE, false, &v2);
        char path[512];
        snprintf(path, sizeof path, "%s/trunc-%d.parquet", hs_test_tmpdir(), mode);
        pq_footer_cache_clear();
        put_file(path, &v1);
        hs_file *f = NULL;
        pq_reader *r = NULL;
        pq_scan *s = NULL;
        hs_error err = {0};
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        CHECK_OK(pq_reader_open(f, &r, &err), &err);
        roaring_bitmap_t *bm = roaring_bitmap_of_ptr(N_SEL, g_rows);
        pq_scan_options o;
        memset(&o, 0, sizeof o);
        o.rows = bm;
        o.batch_size = 2;
        CHECK_OK(pq_scan_open(r, &o, &s, &err), &err);
        hs_batch *b = NULL;
        CHECK_OK(pq_scan_next(s, &b, &err), &err);
        CHECK(b && b->n_rows == 2);
        hs_batch_free(b);
        if (mode == 1) {
            put_file_new_mtime(path, &v2);   /* same size, other bytes */
        } else {
            int fd = open(path, O_WRONLY);
            REQUIRE(fd >= 0);
            REQUIRE(ftruncate(fd, 100) == 0);   /* the mapped pages are gone */
            close(fd);
        }
        /* the rest of the scan: an error, not SIGBUS, not other bytes */
        hs_status st = HS_OK;
        for (int i = 0; i < 10 && st == HS_OK; i++) {
            b = NULL;
            st = pq_scan_next(s, &b, &err);
            if (!b)
                break;
            hs_batch_free(b);
        }
        CHECK(st == HS_IO);
        CHECK(strstr(err.msg, "changed since it was opened") != NULL);
        hs_err_clear(&err);
        pq_scan_close(s);
        /* a new scan on the old handle fails the same way */
        s = NULL;
        CHECK_OK(pq_scan_open(r, &o, &s, &err), &err);
        b = NULL;
        st = pq_scan_next(s, &b, &err);
        CHECK(st != HS_OK);
        hs_batch_free(b);
        hs_err_clear(&err);
        pq_scan_close(s);
        pq_reader_close(r);
        hs_file_close(f);
        /* and a new handle sees the file as it is now */
        f = NULL;
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        if (mode == 1) {
            bool same = false;
            CHECK_OK(take_check(f, g_rows, N_SEL, 2, &same, &err), &err);
            CHECK(same);
        } else {
            r = NULL;
            CHECK(pq_reader_open(f, &r, &err) == HS_CORRUPT);
            pq_reader_close(r);
            hs_err_clear(&err);
        }
        hs_file_close(f);
        roaring_bitmap_free(bm);
        unlink(path);
        hs_buf_free(&v1);
        hs_buf_free(&v2);
    }
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
}

int main(void)
{
    int64_t live = hs_mem_live_count();
    HS_RUN(test_identity);
    HS_RUN(test_truncate_while_mapped);
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
    return hs_test_summary();
}
