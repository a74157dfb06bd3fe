/*
 * tests/c/test_vcache.c - the cache of clustered sections (table/vcache.c)
 * against a real S3 server (tests/s3/s3server.py run, as test_s3): a
 * section fetched in chunks is read back byte for byte as written, ranges
 * outside it or not yet fetched miss, and the bound (cluster_cache_mb)
 * keeps a section larger than it out.  Under ASan this covers the worker
 * threads' hand-off of the buffers.
 */
#include "base/mem.h"
#include "harness.h"
#include "hyperstream/config.h"
#include "io/io.h"
#include "io/s3.h"
#include "table/vcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int have_server(void)
{
    const char *ep = getenv("HS_TEST_S3_ENDPOINT");
    return ep && *ep;
}

#define NEED_SERVER()                                                                   \
    do {                                                                                \
        if (!have_server()) {                                                           \
            const char *ci = getenv("CI");                                              \
            if (ci && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0)) {              \
                CHECK(!"HS_TEST_S3_ENDPOINT is not set under CI=true");                 \
                return;                                                                 \
            }                                                                           \
            SKIP("no S3 server (run through tests/s3/s3server.py run -- ...)");         \
        }                                                                               \
    } while (0)

static void uri_of(const char *key, char *out, size_t n)
{
    const char *b = getenv("HS_TEST_S3_BUCKET");
    snprintf(out, n, "s3://%s/%s", b && *b ? b : "hs-test", key);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

#define HEAD_BYTES 1000u
#define BLOCK 30000u
#define BLOCKS 100u

/* An object of HEAD_BYTES then BLOCKS blocks of BLOCK bytes, and its
 * directory (values "v0".., in offset order). */
static void put_object(const char *uri, uint8_t *data, size_t n, tbl_vcdir *dir)
{
    hs_error err = {0};
    hs_wfile *w = NULL;
    CHECK_OK(hs_io_create(uri, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    size_t cap = 64 + (size_t)BLOCKS * 48;
    char *js = hs_malloc(cap);
    size_t at = (size_t)snprintf(js, cap, "{\"field-id\":1,\"include\":[],\"values\":[");
    for (unsigned i = 0; i < BLOCKS; i++)
        at += (size_t)snprintf(js + at, cap - at, "%s[\"v%u\",%u,%u,1]", i ? "," : "", i,
                               HEAD_BYTES + i * BLOCK, BLOCK);
    snprintf(js + at, cap - at, "]}");
    CHECK_OK(tbl_vcdir_parse(js, dir, &err), &err);
    hs_free(js);
}

/* Waits until [off, off + len) reads from the cache (at most 60 s). */
static bool wait_read(const char *uri, uint64_t size, uint64_t off, uint64_t len, uint8_t *dst)
{
    for (int i = 0; i < 6000; i++) {
        if (tbl_vcache_read(uri, size, off, len, dst))
            return true;
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_fetch_and_read(void)
{
    NEED_SERVER();
    char uri[512];
    uri_of("unit/vcache-a.bin", uri, sizeof uri);
    size_t n = HEAD_BYTES + (size_t)BLOCKS * BLOCK;
    uint8_t *data = hs_malloc(n), *got = hs_malloc(n);
    fill(data, n, 7);
    tbl_vcdir dir;
    put_object(uri, data, n, &dir);
    tbl_vcache_stats a, b;
    tbl_vcache_get_stats(&a);
    /* nothing held yet: a miss */
    CHECK(!tbl_vcache_read(uri, n, HEAD_BYTES, BLOCK, got));
    tbl_vcache_warm(uri, n, &dir);
    tbl_vcache_warm(uri, n, &dir);   /* held or being fetched: nothing more */
    /* the last block, then every block, byte for byte */
    REQUIRE(wait_read(uri, n, n - BLOCK, BLOCK, got));
    for (unsigned i = 0; i < BLOCKS; i++) {
        uint64_t off = HEAD_BYTES + (uint64_t)i * BLOCK;
        memset(got, 0, BLOCK);
        CHECK(wait_read(uri, n, off, BLOCK, got));
        CHECK(memcmp(got, data + off, BLOCK) == 0);
    }
    /* a range across chunks (the whole section) */
    CHECK(tbl_vcache_read(uri, n, HEAD_BYTES, n - HEAD_BYTES, got));
    CHECK(memcmp(got, data + HEAD_BYTES, n - HEAD_BYTES) == 0);
    /* outside the section, another size, past the end: misses */
    CHECK(!tbl_vcache_read(uri, n, 0, 10, got));
    CHECK(!tbl_vcache_read(uri, n + 1, HEAD_BYTES, 10, got));
    CHECK(!tbl_vcache_read(uri, n, n - 5, 10, got));
    tbl_vcache_get_stats(&b);
    /* 3 MB in chunks of 256 KiB..2 MiB: several GETs, each once */
    CHECK(b.chunks_fetched - a.chunks_fetched >= 2);
    CHECK(b.chunks_fetched - a.chunks_fetched <= 16);
    CHECK(b.chunks_failed == a.chunks_failed);
    CHECK(b.bytes >= n - HEAD_BYTES);
    CHECK(b.sections >= 1);
    tbl_vcdir_clear(&dir);
    hs_free(data);
    hs_free(got);
}

static void test_bound(void)
{
    NEED_SERVER();
    hs_error err = {0};
    char uri[512];
    uri_of("unit/vcache-b.bin", uri, sizeof uri);
    size_t n = HEAD_BYTES + (size_t)BLOCKS * BLOCK;   /* a 3 MB section */
    uint8_t *data = hs_malloc(n), *got = hs_malloc(n);
    fill(data, n, 9);
    tbl_vcdir dir;
    put_object(uri, data, n, &dir);
    /* a bound below the section: never fetched, and the held ones dropped
     * only for a section that fits */
    CHECK_OK(hs_config_set("cluster_cache_mb", "2", &err), &err);
    tbl_vcache_stats a, b;
    tbl_vcache_get_stats(&a);
    tbl_vcache_warm(uri, n, &dir);
    struct timespec ts = {0, 300 * 1000000};
    nanosleep(&ts, NULL);
    CHECK(!tbl_vcache_read(uri, n, HEAD_BYTES, BLOCK, got));
    tbl_vcache_get_stats(&b);
    CHECK(b.chunks_fetched == a.chunks_fetched);
    CHECK(b.sections == a.sections);
    /* 0: off */
    CHECK_OK(hs_config_set("cluster_cache_mb", "0", &err), &err);
    tbl_vcache_warm(uri, n, &dir);
    nanosleep(&ts, NULL);
    CHECK(!tbl_vcache_read(uri, n, HEAD_BYTES, BLOCK, got));
    /* room for one section of 3 MB: the earlier one is dropped for it */
    CHECK_OK(hs_config_set("cluster_cache_mb", "4", &err), &err);
    tbl_vcache_warm(uri, n, &dir);
    CHECK(wait_read(uri, n, HEAD_BYTES, BLOCK, got));
    CHECK(memcmp(got, data + HEAD_BYTES, BLOCK) == 0);
    tbl_vcache_get_stats(&b);
    CHECK(b.bytes <= (uint64_t)4 << 20);
    CHECK(b.sections == 1);
    CHECK(b.evicted > a.evicted || a.sections == 0);
    CHECK_OK(hs_config_set("cluster_cache_mb", NULL, &err), &err);
    tbl_vcdir_clear(&dir);
    hs_free(data);
    hs_free(got);
}

int main(void)
{
    HS_RUN(test_fetch_and_read);
    HS_RUN(test_bound);
    hs_io_background_wait();
    hs_s3_reset();
    return hs_test_summary();
}
