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
 *               mapping fails the next batch with HS_IO, never SIGBUS;
 *               a file truncated by another thread while one batch reads
 *               its mapping gives that batch HS_IO or the right values,
 *               never SIGBUS; a SIGBUS outside our mappings still reaches
 *               the handler the host installed.
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
#include "parquet/meta.h"
#include "parquet/pcache.h"
#include "parquet/reader.h"
#include "parquet/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
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


/* ---- truncation while a batch reads the mapping ---- */

#define BIG_ROWS (1 << 20)
static int64_t big_val(int64_t i) { return i * 2654435761LL + 17; }

/* One required int64 column of BIG_ROWS rows, uncompressed, small pages:
 * page mode reads its pages in place from the mapping. */
static void build_big(hs_buf *file)
{
    hs_error err = {0};
    hs_field schema, f;
    hs_field_init(&schema, "schema", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "v", HS_TYPE_INT64, false);
    f.field_id = 1;
    REQUIRE(hs_field_add_child(&schema, &f) == HS_OK);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&schema, BIG_ROWS, &b, &err), &err);
    for (int64_t i = 0; i < BIG_ROWS; i++) {
        int64_t v = big_val(i);
        CHECK_OK(hs_col_append_fixed(b->cols[0], &v), &err);
    }
    b->n_rows = BIG_ROWS;
    pq_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.codec = HS_CODEC_NONE;
    wo.page_rows = 4096;
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

typedef struct trunc_arg {
    const char *path;
    unsigned delay_us;
    off_t size;
} trunc_arg;

static void *truncator(void *p)
{
    trunc_arg *a = p;
    if (a->delay_us)
        usleep(a->delay_us);
    int fd = open(a->path, O_WRONLY);
    if (fd >= 0) {
        if (ftruncate(fd, a->size) != 0)
            perror("ftruncate");
        close(fd);
    }
    return NULL;
}

static int g_bus_seen;
static void host_on_sigbus(int sig) { (void)sig; g_bus_seen++; }

typedef struct race_count { int ok, io, mid; } race_count;

/* `rounds` times: the file is written afresh, a scan of every other row
 * (page mode: pages read in place from the mapping, batches of 64k rows)
 * starts, and another thread truncates the file at a random moment to a
 * random size.  Every batch handed out holds the file's values; the scan
 * ends whole or with HS_IO naming the file and what happened. */
static void race_rounds(const hs_buf *file, const char *path, int rounds, unsigned *seed,
                        unsigned window_us, race_count *rc)
{
    for (int round = 0; round < rounds; round++) {
        put_file(path, file);
        hs_file *f = NULL;
        pq_reader *r = NULL;
        pq_scan *s = NULL;
        hs_error err = {0};
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        CHECK_OK(pq_reader_open(f, &r, &err), &err);
        roaring_bitmap_t *bm = roaring_bitmap_from_range(0, BIG_ROWS, 2);
        pq_scan_options o;
        memset(&o, 0, sizeof o);
        o.rows = bm;
        o.batch_size = BIG_ROWS / 4;
        CHECK_OK(pq_scan_open(r, &o, &s, &err), &err);
        *seed = *seed * 1103515245u + 12345u;
        trunc_arg ta = {path, window_us ? (*seed >> 8) % window_us : 0,
                        (off_t)((*seed >> 4) % (file->len / 4))};
        pthread_t th;
        if (window_us)   /* 0: no truncation (the scan is timed) */
            REQUIRE(pthread_create(&th, NULL, truncator, &ta) == 0);
        int64_t k = 0;
        hs_status st = HS_OK;
        bool right = true;
        for (;;) {
            hs_batch *b = NULL;
            st = pq_scan_next(s, &b, &err);
            if (st != HS_OK || !b)
                break;
            const int64_t *v = HS_COL_VALUES(b->cols[0], int64_t);
            for (int64_t j = 0; j < b->n_rows; j++, k += 2)
                right &= v[j] == big_val(k);
            hs_batch_free(b);
        }
        if (window_us)
            pthread_join(th, NULL);
        CHECK(right);
        if (st == HS_OK) {
            CHECK(k == BIG_ROWS);
            rc->ok++;
        } else {
            CHECK(st == HS_IO);
            CHECK(strstr(err.msg, "trunc-race.parquet") != NULL);
            CHECK(strstr(err.msg, "truncated while being read") != NULL ||
                  strstr(err.msg, "changed since it was opened") != NULL);
            if (strstr(err.msg, "truncated while being read"))
                rc->mid++;
            if (getenv("HS_TEST_VERBOSE"))
                printf("  round %d (delay %u us): %s\n", round, ta.delay_us, err.msg);
            rc->io++;
        }
        hs_err_clear(&err);
        pq_scan_close(s);
        pq_reader_close(r);
        hs_file_close(f);
        roaring_bitmap_free(bm);
        unlink(path);
        pq_footer_cache_clear();
    }
}

/* Truncation racing with the batch that reads the mapping: never SIGBUS.
 * Then the host installs its own SIGBUS handler (as Python's faulthandler
 * does): truncations are still caught, and a SIGBUS that is not a fault in
 * our mappings reaches the host's handler. */
static void test_truncate_during_batch(void)
{
    int64_t live = hs_mem_live_count();
    hs_buf file;
    build_big(&file);
    char path[512];
    snprintf(path, sizeof path, "%s/trunc-race.parquet", hs_test_tmpdir());
    int rounds = getenv("HS_LONG_TESTS") ? 400 : 40;
    /* how long one untroubled scan takes: truncations land inside it */
    race_count rc = {0, 0, 0};
    unsigned seed = 12345;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    race_rounds(&file, path, 1, &seed, 0, &rc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(rc.ok == 1);
    unsigned window = (unsigned)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
    if (window < 100)
        window = 100;
    rc.ok = 0;
    uint64_t faults0 = hs_map_fault_count();
    race_rounds(&file, path, rounds, &seed, window, &rc);

    struct sigaction host, old;
    memset(&host, 0, sizeof host);
    host.sa_handler = host_on_sigbus;
    sigemptyset(&host.sa_mask);
    REQUIRE(sigaction(SIGBUS, &host, &old) == 0);
    g_bus_seen = 0;
    race_rounds(&file, path, rounds, &seed, window, &rc);
    CHECK(g_bus_seen == 0);   /* the faults were ours, and caught */
    raise(SIGBUS);
    CHECK(g_bus_seen == 1);   /* not ours: the host's */
    REQUIRE(sigaction(SIGBUS, &old, NULL) == 0);

    printf("  %d rounds in a window of %u us: %d read whole, %d HS_IO (%d by a fault during a batch; "
           "%llu faults caught)\n", 2 * rounds, window, rc.ok, rc.io, rc.mid,
           (unsigned long long)(hs_map_fault_count() - faults0));
    CHECK(rc.ok + rc.io == 2 * rounds);
    hs_buf_free(&file);
    CHECK(hs_mem_live_count() == live);
}

/* ---- page size: allocation bounded by the compressed bytes ---- */

/* An allocation hook that records the largest single request. */
static size_t g_max_req;
static void *big_malloc(size_t n, void *ctx) { (void)ctx; if (n > g_max_req) g_max_req = n; return malloc(n); }
static void *big_realloc(void *p, size_t n, void *ctx) { (void)ctx; if (n > g_max_req) g_max_req = n; return realloc(p, n); }
static void big_free(void *p, void *ctx) { (void)ctx; free(p); }

/* A one-column file (our writer, codec c, no page index, one page) whose
 * data page header is re-encoded to claim `claim` uncompressed bytes. */
static void build_lying_file(hs_codec codec, int32_t claim, hs_buf *out)
{
    hs_error err = {0};
    hs_field schema, f;
    hs_field_init(&schema, "schema", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "v", HS_TYPE_INT64, false);
    f.field_id = 1;
    REQUIRE(hs_field_add_child(&schema, &f) == HS_OK);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&schema, 512, &b, &err), &err);
    for (int64_t i = 0; i < 512; i++) {
        int64_t v = i % 8;   /* compresses well in every codec: a tiny page */
        CHECK_OK(hs_col_append_fixed(b->cols[0], &v), &err);
    }
    b->n_rows = 512;
    pq_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.codec = codec;
    wo.no_dictionary = true;
    wo.no_page_index = true;
    wo.no_statistics = true;
    hs_buf file = {0};
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    CHECK_OK(hs_mem_create(&file, &wf, &err), &err);
    CHECK_OK(pq_writer_open(wf, &schema, &wo, &w, &err), &err);
    CHECK_OK(pq_writer_write(w, b, &err), &err);
    CHECK_OK(pq_writer_finish(w, &err), &err);
    pq_writer_free(w);
    CHECK_OK(hs_wfile_close(wf, &err), &err);
    hs_batch_free(b);
    hs_field_clear(&schema);
    /* take it apart: footer, the page header and body */
    uint32_t flen = (uint32_t)file.data[file.len - 8] | (uint32_t)file.data[file.len - 7] << 8 |
                    (uint32_t)file.data[file.len - 6] << 16 | (uint32_t)file.data[file.len - 5] << 24;
    hs_arena a = {0};
    pq_file_meta m;
    CHECK_OK(pq_decode_file_meta(file.data + file.len - 8 - flen, flen, &a, &m, &err), &err);
    REQUIRE(m.n_row_groups == 1);
    pq_column_meta *cm = &m.row_groups[0].columns[0].meta_data;
    pq_page_header h;
    size_t used = 0;
    CHECK_OK(pq_decode_page_header(file.data + cm->data_page_offset,
                                   file.len - (size_t)cm->data_page_offset, &a, &h, &used, &err), &err);
    const uint8_t *body = file.data + cm->data_page_offset + used;
    size_t blen = (size_t)h.compressed_page_size;
    h.uncompressed_page_size = claim;
    h.has_crc = false;
    hs_buf hb = {0};
    REQUIRE(pq_encode_page_header(&h, &hb) == HS_OK);
    memset(out, 0, sizeof *out);
    REQUIRE(hs_buf_append(out, "PAR1", 4) == HS_OK);
    REQUIRE(hs_buf_append(out, hb.data, hb.len) == HS_OK);
    REQUIRE(hs_buf_append(out, body, blen) == HS_OK);
    cm->data_page_offset = 4;
    cm->has_dictionary_page_offset = false;
    cm->total_compressed_size = (int64_t)(hb.len + blen);
    cm->total_uncompressed_size = (int64_t)hb.len + claim;
    m.row_groups[0].columns[0].file_offset = 4;
    m.row_groups[0].has_file_offset = false;
    m.row_groups[0].has_total_compressed_size = false;
    hs_buf fb = {0};
    REQUIRE(pq_encode_file_meta(&m, &fb) == HS_OK);
    REQUIRE(hs_buf_append(out, fb.data, fb.len) == HS_OK);
    uint8_t tail[8] = {(uint8_t)fb.len, (uint8_t)(fb.len >> 8), (uint8_t)(fb.len >> 16),
                       (uint8_t)(fb.len >> 24), 'P', 'A', 'R', '1'};
    REQUIRE(hs_buf_append(out, tail, 8) == HS_OK);
    hs_buf_free(&fb);
    hs_buf_free(&hb);
    hs_arena_destroy(&a);
    hs_buf_free(&file);
}

static void test_page_claims(void)
{
    static const hs_codec codecs[] = {HS_CODEC_ZSTD, HS_CODEC_SNAPPY, HS_CODEC_GZIP,
                                      HS_CODEC_LZ4_RAW};
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        for (int lie = 0; lie < 2; lie++) {
            /* 512 int64 = 4096 bytes; the lie: just under the 1 GiB default */
            int32_t claim = lie ? (int32_t)((1u << 30) - 1) : 4096;
            hs_buf file;
            build_lying_file(codecs[k], claim, &file);
            REQUIRE(file.len < 1500);
            pq_footer_cache_clear();
            hs_alloc_hook hook = {big_malloc, big_realloc, big_free, NULL};
            g_max_req = 0;
            hs_set_alloc_hook(&hook);
            hs_file *f = NULL;
            pq_reader *r = NULL;
            pq_scan *s = NULL;
            hs_error err = {0};
            hs_status st = hs_mem_open("lying.parquet", file.data, file.len, false, &f, &err);
            if (st == HS_OK)
                st = pq_reader_open(f, &r, &err);
            if (st == HS_OK)
                st = pq_scan_open(r, NULL, &s, &err);
            hs_batch *b = NULL;
            if (st == HS_OK)
                st = pq_scan_next(s, &b, &err);
            int64_t rows = b ? b->n_rows : -1;
            hs_batch_free(b);
            pq_scan_close(s);
            pq_reader_close(r);
            hs_file_close(f);
            pq_footer_cache_clear();
            hs_set_alloc_hook(NULL);
            if (lie) {
                CHECK(st == HS_CORRUPT);
                if (st != HS_CORRUPT || g_max_req >= ((size_t)1 << 20))
                    fprintf(stderr, "  %s: status %d, largest allocation %zu: %s\n",
                            hs_codec_name(codecs[k]), st, g_max_req, err.msg);
                CHECK(g_max_req < ((size_t)1 << 20));   /* not the claimed 1 GiB */
            } else {
                CHECK_OK(st, &err);
                CHECK(rows == 512);
            }
            hs_err_clear(&err);
            hs_buf_free(&file);
        }
    }
    /* the ceiling is a setting */
    hs_buf file;
    build_lying_file(HS_CODEC_ZSTD, 4096, &file);
    pq_set_max_page_bytes(1024);
    hs_file *f = NULL;
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    hs_error err = {0};
    hs_batch *b = NULL;
    CHECK_OK(hs_mem_open("small-max.parquet", file.data, file.len, false, &f, &err), &err);
    CHECK_OK(pq_reader_open(f, &r, &err), &err);
    CHECK_OK(pq_scan_open(r, NULL, &s, &err), &err);
    CHECK(pq_scan_next(s, &b, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "HS_PARQUET_MAX_PAGE_MB") != NULL);
    hs_batch_free(b);
    pq_scan_close(s);
    pq_reader_close(r);
    hs_file_close(f);
    pq_set_max_page_bytes(0);
    hs_buf_free(&file);
    pq_footer_cache_clear();
}

/* Bounded decompression of each codec straight: a claim past what the
 * bytes can hold fails before any allocation of its size. */
static void test_decompress_bounds(void)
{
    static const hs_codec codecs[] = {HS_CODEC_ZSTD, HS_CODEC_SNAPPY, HS_CODEC_GZIP,
                                      HS_CODEC_LZ4_RAW};
    uint8_t raw[8192];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (uint8_t)(i % 7);
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        hs_buf z = {0}, out = {0};
        hs_error err = {0};
        CHECK_OK(hs_compress(codecs[k], 0, raw, sizeof raw, &z, &err), &err);
        CHECK_OK(pq_page_decompress(codecs[k], z.data, z.len, sizeof raw, &out, &err), &err);
        CHECK(out.len == sizeof raw && memcmp(out.data, raw, sizeof raw) == 0);
        hs_buf_free(&out);
        hs_alloc_hook hook = {big_malloc, big_realloc, big_free, NULL};
        g_max_req = 0;
        hs_set_alloc_hook(&hook);
        hs_status st = pq_page_decompress(codecs[k], z.data, z.len, (size_t)500 << 20, &out, &err);
        hs_set_alloc_hook(NULL);
        CHECK(st == HS_CORRUPT);
        CHECK(g_max_req < ((size_t)1 << 20));
        hs_err_clear(&err);
        hs_buf_free(&out);
        hs_buf_free(&z);
    }
}

/* ---- the page cache ---- */

static void take_rows(hs_file *f, const uint32_t *rows, int n, int ver)
{
    hs_error err = {0};
    bool same = false;
    CHECK_OK(take_check(f, rows, n, ver, &same, &err), &err);
    CHECK(same);
}

static void test_page_cache_hits(void)
{
    int64_t live = hs_mem_live_count();
    for (int v2 = 0; v2 < 2; v2++) {
        hs_buf file;
        build_file(4, HS_CODEC_ZSTD, v2, &file);
        char path[512];
        snprintf(path, sizeof path, "%s/pc-%d.parquet", hs_test_tmpdir(), v2);
        put_file(path, &file);
        pq_footer_cache_clear();
        size_t old_budget = pq_page_cache_budget();
        pq_page_cache_set_budget((size_t)64 << 20);
        pq_page_cache_stats st0, st1, st2;
        hs_file *f = NULL;
        hs_error err = {0};
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        pq_page_cache_get_stats(&st0);
        take_rows(f, g_rows, N_SEL, 4);
        pq_page_cache_get_stats(&st1);
        /* 6 rows in 5 pages, 3 leaf columns: every page decompressed once */
        CHECK(st1.inserts - st0.inserts == 15);
        CHECK(st1.hits == st0.hits);
        for (int k = 0; k < 5; k++)
            take_rows(f, g_rows, N_SEL, 4);
        hs_file_close(f);
        /* a new handle of the same file: the same pages */
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        take_rows(f, g_rows, N_SEL, 4);
        hs_file_close(f);
        pq_page_cache_get_stats(&st2);
        CHECK(st2.inserts == st1.inserts);          /* never decompressed again */
        CHECK(st2.hits - st1.hits == 6 * 15);
        CHECK(st2.bytes <= st2.budget && st2.entries == 15);
        /* the file replaced (same name): its pages are other pages */
        hs_buf other;
        build_file(5, HS_CODEC_ZSTD, v2, &other);
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        put_file(tmp, &other);
        REQUIRE(rename(tmp, path) == 0);
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        take_rows(f, g_rows, N_SEL, 5);
        hs_file_close(f);
        pq_page_cache_stats st3;
        pq_page_cache_get_stats(&st3);
        CHECK(st3.inserts - st2.inserts == 15);
        /* off: nothing cached, same results */
        pq_page_cache_set_budget(0);
        pq_page_cache_get_stats(&st3);
        CHECK(st3.entries == 0 && st3.bytes == 0);
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        take_rows(f, g_rows, N_SEL, 5);
        hs_file_close(f);
        pq_page_cache_get_stats(&st3);
        CHECK(st3.entries == 0);
        pq_page_cache_set_budget(old_budget);
        unlink(path);
        hs_buf_free(&file);
        hs_buf_free(&other);
        pq_footer_cache_clear();
    }
    CHECK(hs_mem_live_count() == live);
}

/* Many files through a small budget: the cache stays within it, evicts
 * the oldest pages, and every read is right. */
static void test_page_cache_eviction(void)
{
    int64_t live = hs_mem_live_count();
    enum { N_FILES = 40 };
    hs_buf files[N_FILES];
    hs_file *fs[N_FILES];
    hs_error err = {0};
    size_t old_budget = pq_page_cache_budget();
    size_t budget = (size_t)1 << 20;
    pq_footer_cache_clear();
    pq_page_cache_set_budget(budget);
    for (int i = 0; i < N_FILES; i++) {
        build_file(10 + i, HS_CODEC_ZSTD, i % 2, &files[i]);
        char name[64];
        snprintf(name, sizeof name, "evict-%d.parquet", i);
        CHECK_OK(hs_mem_open(name, files[i].data, files[i].len, false, &fs[i], &err), &err);
    }
    pq_page_cache_stats st;
    size_t peak = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N_FILES; i++) {
            take_rows(fs[i], g_rows, N_SEL, 10 + i);
            pq_page_cache_get_stats(&st);
            if (st.bytes > peak)
                peak = st.bytes;
        }
    }
    pq_page_cache_get_stats(&st);
    CHECK(peak <= budget);
    CHECK(st.evictions > 0);
    CHECK(st.entries > 0);
    /* a smaller budget evicts at once */
    pq_page_cache_set_budget(budget / 4);
    pq_page_cache_get_stats(&st);
    CHECK(st.bytes <= budget / 4);
    for (int i = 0; i < N_FILES; i++) {
        hs_file_close(fs[i]);
        hs_buf_free(&files[i]);
    }
    pq_page_cache_set_budget(old_budget);
    pq_footer_cache_clear();
    pq_page_cache_get_stats(&st);
    CHECK(st.entries == 0 && st.bytes == 0);
    CHECK(hs_mem_live_count() == live);
}

typedef struct pc_th { hs_file *f; int ver; int seed; int fails; } pc_th;

static void *pc_th_main(void *p)
{
    pc_th *a = p;
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(a->seed + 1);
    for (int round = 0; round < 60; round++) {
        uint32_t rows[8];
        int n = 1 + (int)(round % 8);
        uint32_t at = 0;
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            at += 1 + (uint32_t)(x % 2400);
            rows[i] = at < N_ROWS ? at : N_ROWS - 1;
            if (i > 0 && rows[i] <= rows[i - 1]) {
                n = i;
                break;
            }
        }
        hs_error err = {0};
        bool same = false;
        if (take_check(a->f, rows, n, a->ver, &same, &err) != HS_OK || !same)
            a->fails++;
        if (round % 20 == 19)
            pq_page_cache_set_budget((size_t)(96 + 64 * (round % 3)) << 10);
    }
    return NULL;
}

static void test_page_cache_threads(void)
{
    int64_t live = hs_mem_live_count();
    size_t old_budget = pq_page_cache_budget();
    pq_footer_cache_clear();
    pq_page_cache_set_budget((size_t)128 << 10);   /* evictions all the time */
    hs_buf file[2];
    hs_file *f[2];
    hs_error err = {0};
    for (int k = 0; k < 2; k++) {
        build_file(20 + k, k ? HS_CODEC_SNAPPY : HS_CODEC_ZSTD, k == 1, &file[k]);
        CHECK_OK(hs_mem_open("threads.parquet", file[k].data, file[k].len, false, &f[k], &err), &err);
    }
    enum { N_TH = 4 };
    pthread_t th[N_TH];
    pc_th args[N_TH];
    for (int i = 0; i < N_TH; i++) {
        args[i] = (pc_th){f[i % 2], 20 + i % 2, i, 0};
        CHECK(pthread_create(&th[i], NULL, pc_th_main, &args[i]) == 0);
    }
    for (int i = 0; i < N_TH; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].fails == 0);
    }
    for (int k = 0; k < 2; k++) {
        hs_file_close(f[k]);
        hs_buf_free(&file[k]);
    }
    pq_page_cache_set_budget(old_budget);
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
}

int main(void)
{
    int64_t live = hs_mem_live_count();
    HS_RUN(test_identity);
    HS_RUN(test_truncate_while_mapped);
    HS_RUN(test_truncate_during_batch);
    HS_RUN(test_page_claims);
    HS_RUN(test_decompress_bounds);
    HS_RUN(test_page_cache_hits);
    HS_RUN(test_page_cache_eviction);
    HS_RUN(test_page_cache_threads);
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
    return hs_test_summary();
}
