/*
 * tests/c/test_s3.c - the S3 backend (io/s3.c) and the URI layer of io.h.
 *
 * Decoder tests always run.  The object tests run against a real
 * S3-compatible server: ctest starts one (moto, or SeaweedFS with
 * HS_S3_SERVER=seaweedfs) through tests/s3/s3server.py, which exports
 * HS_TEST_S3_ENDPOINT, HS_TEST_S3_BUCKET and the AWS_* variables (moto
 * runs with signature checks on: HS_TEST_S3_AUTH=1).  Without
 * HS_TEST_S3_ENDPOINT they skip (they fail under CI=true: ctest always
 * provides the server there).  Every read is checked against the bytes the
 * test wrote, and listings against the names it created.
 */
#define _GNU_SOURCE 1   /* memmem, strcasestr */
#include "base/mem.h"
#include "io/io.h"
#include "io/s3.h"
#include "harness.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bucket(void)
{
    const char *b = getenv("HS_TEST_S3_BUCKET");
    return b && *b ? b : "hs-test";
}

/* false (after SKIP or a failure under CI) when there is no server */
static int have_server(void)
{
    const char *ep = getenv("HS_TEST_S3_ENDPOINT");
    if (ep && *ep)
        return 1;
    return 0;
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

static char *uri_of(const char *key)
{
    static char buf[8][512];
    static int k;
    char *u = buf[k++ % 8];
    snprintf(u, 512, "s3://%s/%s", bucket(), key);
    return u;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* ---- decoders ---------------------------------------------------------------- */

static void test_parse_list(void)
{
    const char *xml =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Name>b</Name><Prefix>t/</Prefix><KeyCount>3</KeyCount>"
        "<IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>a&amp;b=</NextContinuationToken>"
        "<Contents><Key>t/a&lt;1&gt;.json</Key><Size>12</Size><ETag>&quot;x&quot;</ETag>"
        "<LastModified>2026-12-06T06:22:28.123Z</LastModified></Contents>"
        "<Contents><Key>t/caf&#233;&#x2F;</Key><Size>0</Size></Contents>"
        "<CommonPrefixes><Prefix>t/data/</Prefix></CommonPrefixes>"
        "</ListBucketResult>";
    s3_list_page pg;
    hs_error err = { 0 };
    CHECK_OK(s3_parse_list(xml, strlen(xml), &pg, &err), &err);
    REQUIRE(pg.n_keys == 2 && pg.n_prefixes == 1);
    CHECK(strcmp(pg.keys[0], "t/a<1>.json") == 0);
    CHECK(pg.sizes[0] == 12 && pg.sizes[1] == 0);
    /* date -u -d 2026-12-06T06:22:28Z +%s = 1796538148 */
    CHECK(pg.mtimes_ms[0] == INT64_C(1796538148123) && pg.mtimes_ms[1] == -1);
    CHECK(strcmp(pg.keys[1], "t/caf\xc3\xa9/") == 0);
    CHECK(strcmp(pg.prefixes[0], "t/data/") == 0);
    CHECK(pg.truncated);
    CHECK(pg.next_token && strcmp(pg.next_token, "a&b=") == 0);
    s3_list_page_free(&pg);

    /* every strict prefix of the document is rejected or parsed without overrun */
    size_t n = strlen(xml);
    for (size_t k = 0; k < n; k++) {
        char *cut = hs_malloc(k ? k : 1);
        memcpy(cut, xml, k);
        hs_error e2 = { 0 };
        if (s3_parse_list(cut, k, &pg, &e2) == HS_OK)
            s3_list_page_free(&pg);
        hs_free(cut);
    }
    CHECK(s3_parse_list("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
                        72, &pg, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    const char *trunc = "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>";
    CHECK(s3_parse_list(trunc, strlen(trunc), &pg, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    const char *badsz = "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents>"
                        "</ListBucketResult>";
    CHECK(s3_parse_list(badsz, strlen(badsz), &pg, &err) == HS_CORRUPT);
    hs_err_clear(&err);

    /* Last-Modified as S3 writes it; anything else is "unknown" (-1) */
    CHECK(s3_parse_iso8601_ms("1970-01-01T00:00:00.000Z") == 0);
    CHECK(s3_parse_iso8601_ms("2000-02-29T23:59:59Z") == INT64_C(951868799000));
    CHECK(s3_parse_iso8601_ms("2026-12-06T06:22:28.5Z") == INT64_C(1796538148500));
    CHECK(s3_parse_iso8601_ms("2026-12-06T06:22:28.123456+00:00") == INT64_C(1796538148123));
    CHECK(s3_parse_iso8601_ms("2026-12-06T06:22:28+02:00") == -1);
    CHECK(s3_parse_iso8601_ms("2026-13-06T06:22:28Z") == -1);
    CHECK(s3_parse_iso8601_ms("2026-12-06 06:22:28Z") == -1);
    CHECK(s3_parse_iso8601_ms("2026-12-06T06:22:28.Z") == -1);
    CHECK(s3_parse_iso8601_ms("Sun, 06 Dec 2026 06:22:28 GMT") == -1);
    CHECK(s3_parse_iso8601_ms("") == -1 && s3_parse_iso8601_ms(NULL) == -1);
}

static void test_parse_error_and_ini(void)
{
    const char *e = "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please "
                    "reduce your request rate.</Message></Error>";
    char code[16], msg[20];
    CHECK(s3_parse_error(e, strlen(e), code, sizeof code, msg, sizeof msg));
    CHECK(strcmp(code, "SlowDown") == 0);
    CHECK(strcmp(msg, "Please reduce your") == 0 || strlen(msg) == sizeof msg - 1);
    CHECK(!s3_parse_error("<ok/>", 5, code, sizeof code, msg, sizeof msg));
    CHECK(code[0] == 0);

    const char *cred = "# comment\n[default]\naws_access_key_id = AKDEF\n"
                       "aws_secret_access_key=SKDEF \n\n[dev]\r\n aws_access_key_id = AKDEV\r\n"
                       "; x\n[broken\naws_access_key_id = NO\n";
    char *v = s3_ini_get(cred, strlen(cred), "default", false, "aws_access_key_id");
    CHECK(v && strcmp(v, "AKDEF") == 0);
    hs_free(v);
    v = s3_ini_get(cred, strlen(cred), "default", false, "aws_secret_access_key");
    CHECK(v && strcmp(v, "SKDEF") == 0);
    hs_free(v);
    v = s3_ini_get(cred, strlen(cred), "dev", false, "aws_access_key_id");
    CHECK(v && strcmp(v, "AKDEV") == 0);
    hs_free(v);
    CHECK(s3_ini_get(cred, strlen(cred), "prod", false, "aws_access_key_id") == NULL);
    const char *conf = "[default]\nregion=eu-west-1\n[profile dev]\nregion = ap-south-1\n"
                       "endpoint_url = http://127.0.0.1:9\n[dev]\nregion=wrong\n";
    v = s3_ini_get(conf, strlen(conf), "dev", true, "region");
    CHECK(v && strcmp(v, "ap-south-1") == 0);
    hs_free(v);
    v = s3_ini_get(conf, strlen(conf), "default", true, "region");
    CHECK(v && strcmp(v, "eu-west-1") == 0);
    hs_free(v);
}

static void test_uri_dispatch(void)
{
    hs_file *f = NULL;
    hs_error err = { 0 };
    CHECK(hs_io_open("gs://b/k", &f, &err) == HS_UNSUPPORTED);
    CHECK(strstr(err.msg, "gs") != NULL);
    hs_err_clear(&err);
    CHECK(hs_io_open("s3://", &f, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(hs_io_open("s3://bad bucket/k", &f, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(hs_io_is_object_uri("s3a://b/k") && hs_io_is_object_uri("s3://b/k"));
    CHECK(!hs_io_is_object_uri("file:///tmp/x") && !hs_io_is_object_uri("/tmp/x"));
    CHECK(strcmp(hs_io_local_path("file:///tmp/x"), "/tmp/x") == 0);

    /* file:// and plain paths go to the local backend */
    char path[512], uri[600];
    snprintf(path, sizeof path, "%s/s3-local.bin", hs_test_tmpdir());
    snprintf(uri, sizeof uri, "file://%s", path);
    hs_wfile *w;
    CHECK_OK(hs_io_create(uri, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "hello", 5, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_buf b = { 0 };
    CHECK_OK(hs_io_read_all(path, &b, &err), &err);
    CHECK(b.len == 5 && memcmp(b.data, "hello", 5) == 0);
    hs_buf_free(&b);
    bool ex = false;
    uint64_t sz = 0;
    CHECK_OK(hs_io_stat(uri, &ex, &sz, &err), &err);
    CHECK(ex && sz == 5);
    CHECK(hs_io_create(uri, HS_WFILE_EXCLUSIVE, &w, &err) == HS_OK);
    CHECK(hs_wfile_close(w, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    CHECK_OK(hs_io_delete(uri, &err), &err);
    CHECK_OK(hs_io_delete(uri, &err), &err);   /* missing: fine */
    CHECK_OK(hs_io_stat(path, &ex, &sz, &err), &err);
    CHECK(!ex);
}

/* ---- against the server --------------------------------------------------------- */

static void test_put_get_ranges(void)
{
    NEED_SERVER();
    hs_s3_reset();
    size_t n = 300000;
    uint8_t *data = hs_malloc(n), *got = hs_malloc(n);
    fill(data, n, 1);
    hs_error err = { 0 };
    hs_wfile *w;
    const char *u = uri_of("unit/obj.bin");
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    for (size_t off = 0; off < n; off += 70000)
        CHECK_OK(hs_wfile_write(w, data + off, n - off < 70000 ? n - off : 70000, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);

    hs_file *f = NULL;
    CHECK_OK(hs_io_open(u, &f, &err), &err);
    REQUIRE(f != NULL);
    CHECK(f->size == n);
    CHECK(f->id.kind == HS_FILE_ID_OBJECT && f->id.version[0] != 0);
    /* ranges anywhere, including the last byte and spans across cache blocks */
    const uint64_t offs[][2] = { { 0, 1 }, { n - 8, 8 }, { 65530, 20 }, { 1000, 200000 },
                                        { 131072, 65536 }, { 0, 300000 }, { 299999, 1 } };
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        memset(got, 0, n);
        CHECK_OK(hs_file_read_at(f, offs[i][0], (size_t)offs[i][1], got, &err), &err);
        CHECK(memcmp(got, data + offs[i][0], (size_t)offs[i][1]) == 0);
    }
    CHECK(hs_file_read_at(f, n - 4, 8, got, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* a second small read of the same block is a cache hit: no request */
    hs_s3_stats a, b;
    hs_s3_get_stats(&a);
    CHECK_OK(hs_file_read_at(f, n - 8, 8, got, &err), &err);
    CHECK_OK(hs_file_read_at(f, 70000, 100, got, &err), &err);
    CHECK(memcmp(got, data + 70000, 100) == 0);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests);
    CHECK(b.cache_hits >= a.cache_hits + 2);
    CHECK_OK(hs_file_check(f, &err), &err);

    /* rewritten in place: new ETag; the old handle notices */
    fill(data, n, 2);
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK(hs_file_check(f, &err) == HS_IO);
    hs_err_clear(&err);
    hs_s3_reset();   /* drop the cached blocks of the old object */
    CHECK(hs_file_read_at(f, 200000, 10, got, &err) == HS_IO);   /* If-Match: 412 */
    hs_err_clear(&err);
    hs_file_close(f);
    CHECK_OK(hs_io_open(u, &f, &err), &err);
    CHECK_OK(hs_file_read_at(f, n - 8, 8, got, &err), &err);   /* new ETag: not the old block */
    CHECK(memcmp(got, data + n - 8, 8) == 0);
    hs_file_close(f);

    hs_buf all = { 0 };
    CHECK_OK(hs_io_read_all(u, &all, &err), &err);
    CHECK(all.len == n && memcmp(all.data, data, n) == 0);
    hs_buf_free(&all);
    CHECK_OK(hs_io_delete(u, &err), &err);
    CHECK(hs_io_open(u, &f, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    hs_free(data);
    hs_free(got);
}

/* Reads that straddle cached extents fetch only the gap; a small miss reads
 * ahead; random small reads return the object's bytes whatever the cache
 * holds; read_all of a small object that was opened costs no request, of one
 * that was only ever read whole (a version hint) always one, and of one this
 * process rewrote returns the new bytes. */
static void test_cache_stitching_and_read_all(void)
{
    NEED_SERVER();
    hs_s3_reset();
    size_t n = 1000000;
    uint8_t *data = hs_malloc(n), *got = hs_malloc(n);
    REQUIRE(data && got);
    fill(data, n, 7);
    hs_error err = { 0 };
    hs_wfile *w;
    const char *u = uri_of("unit/stitch.bin");
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_file *f = NULL;
    CHECK_OK(hs_io_open(u, &f, &err), &err);   /* the last 64 KiB are cached now */
    REQUIRE(f != NULL);
    hs_s3_stats a, b;
    hs_s3_get_stats(&a);
    /* 80 KiB ending inside the cached tail: one request for the gap */
    CHECK_OK(hs_file_read_at(f, n - 80000, 70000, got, &err), &err);
    CHECK(memcmp(got, data + n - 80000, 70000) == 0);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests + 1);
    /* a small miss at the start reads ahead: 200 KB further is a hit */
    CHECK_OK(hs_file_read_at(f, 10, 100, got, &err), &err);
    CHECK(memcmp(got, data + 10, 100) == 0);
    hs_s3_get_stats(&a);
    CHECK_OK(hs_file_read_at(f, 200000, 100, got, &err), &err);
    CHECK(memcmp(got, data + 200000, 100) == 0);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests);
    /* random small reads, all correct */
    uint32_t x = 12345;
    int bad = 0;
    for (int i = 0; i < 300; i++) {
        x = x * 1103515245u + 12345u;
        uint64_t off = (x >> 8) % n;
        x = x * 1103515245u + 12345u;
        size_t len = 1 + (x >> 8) % 150000;
        if (off + len > n)
            len = (size_t)(n - off);
        memset(got, 0, len);
        if (hs_file_read_at(f, off, len, got, &err) != HS_OK || memcmp(got, data + off, len) != 0)
            bad++;
    }
    CHECK(bad == 0);
    hs_file_close(f);
    CHECK_OK(hs_io_delete(u, &err), &err);

    /* small objects */
    const char *s1 = uri_of("unit/small.json"), *s2 = uri_of("unit/hint.text");
    CHECK_OK(hs_io_create(s1, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, 3000, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK_OK(hs_io_create(s2, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "7", 1, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK_OK(hs_io_open(s1, &f, &err), &err);
    hs_file_close(f);
    hs_buf all = { 0 };
    hs_s3_get_stats(&a);
    CHECK_OK(hs_io_read_all(s1, &all, &err), &err);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests && all.len == 3000 && memcmp(all.data, data, 3000) == 0);
    CHECK_OK(hs_io_read_all(s2, &all, &err), &err);
    CHECK_OK(hs_io_read_all(s2, &all, &err), &err);
    hs_s3_get_stats(&a);
    CHECK(a.requests == b.requests + 2 && all.len == 1 && all.data[0] == '7');
    CHECK_OK(hs_io_create(s1, 0, &w, &err), &err);   /* rewritten by this process */
    CHECK_OK(hs_wfile_write(w, data + 5000, 2000, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK_OK(hs_io_read_all(s1, &all, &err), &err);
    CHECK(all.len == 2000 && memcmp(all.data, data + 5000, 2000) == 0);
    hs_buf_free(&all);
    CHECK_OK(hs_io_delete(s1, &err), &err);
    CHECK_OK(hs_io_delete(s2, &err), &err);
    hs_free(data);
    hs_free(got);
}

/* hs_file_will_need: scattered ranges not cached are fetched together (nearby
 * ones coalesced into one request), the reads that follow cost none and return
 * the object's bytes; cached ranges cost nothing; an object rewritten under
 * the same key is never served from the old one's blocks (the cache keys on
 * the ETag). */
static void test_will_need(void)
{
    NEED_SERVER();
    hs_s3_reset();
    size_t n = 3000000;
    uint8_t *data = hs_malloc(n), *got = hs_malloc(n);
    REQUIRE(data && got);
    fill(data, n, 11);
    hs_error err = { 0 };
    hs_wfile *w;
    const char *u = uri_of("unit/need.bin");
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_file *f = NULL;
    CHECK_OK(hs_io_open(u, &f, &err), &err);
    REQUIRE(f != NULL);
    /* three far-apart ranges (more than 1 MiB between), two of them 10 KB
     * apart (one request) */
    const hs_io_range rr[] = { { 2400000, 5000 }, { 100000, 3000 }, { 110000, 4000 },
                               { 1200000, 70000 } };
    hs_s3_stats a, b;
    hs_s3_get_stats(&a);
    hs_file_will_need(f, rr, 4);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests + 3);
    for (int i = 0; i < 4; i++) {
        CHECK_OK(hs_file_read_at(f, rr[i].off, (size_t)rr[i].len, got, &err), &err);
        CHECK(memcmp(got, data + rr[i].off, (size_t)rr[i].len) == 0);
    }
    hs_s3_get_stats(&a);
    CHECK(a.requests == b.requests);
    hs_file_will_need(f, rr, 4);   /* all cached: nothing to fetch */
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests);
    /* two ranges 450 KB apart (a point lookup's pages of two columns): they
     * coalesce into one range, fetched as one GET before the reads, and the
     * reads then cost nothing (before: nothing fetched, two GETs on read) */
    const hs_io_range r2[] = { { 2300000, 4000 }, { 2754000, 6000 } };   /* not the tail */
    hs_s3_get_stats(&a);
    hs_file_will_need(f, r2, 2);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests + 1);
    for (int i = 0; i < 2; i++) {
        CHECK_OK(hs_file_read_at(f, r2[i].off, (size_t)r2[i].len, got, &err), &err);
        CHECK(memcmp(got, data + r2[i].off, (size_t)r2[i].len) == 0);
    }
    hs_s3_get_stats(&a);
    CHECK(a.requests == b.requests);
    hs_file_close(f);
    /* rewritten under the same key: the new bytes, never the old blocks */
    fill(data, n, 12);
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK_OK(hs_io_open(u, &f, &err), &err);
    hs_file_will_need(f, rr, 4);
    for (int i = 0; i < 4; i++) {
        CHECK_OK(hs_file_read_at(f, rr[i].off, (size_t)rr[i].len, got, &err), &err);
        CHECK(memcmp(got, data + rr[i].off, (size_t)rr[i].len) == 0);
    }
    hs_file_close(f);
    CHECK_OK(hs_io_delete(u, &err), &err);
    hs_free(data);
    hs_free(got);
}

/* Ranges that coalesce (gaps up to 1 MiB) into a run longer than the 1 MiB
 * a cached read takes: still one GET (a point lookup's pages of three
 * columns spread over 1.3 MB of a row group), cached in pieces, so that the
 * reads after it cost nothing; a range further away is a GET of its own.
 * Oracle: the bytes written and the server's request count. */
static void test_will_need_long_run(void)
{
    NEED_SERVER();
    hs_s3_reset();
    size_t n = 3000000;
    uint8_t *data = hs_malloc(n), *got = hs_malloc(n);
    REQUIRE(data && got);
    fill(data, n, 13);
    hs_error err = { 0 };
    hs_wfile *w;
    const char *u = uri_of("unit/need-long.bin");
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_file *f = NULL;
    CHECK_OK(hs_io_open(u, &f, &err), &err);
    REQUIRE(f != NULL);
    /* 100,000 .. 1,458,000: four ranges 442 KB apart (1.36 MB in all), and
     * one 1.4 MB beyond them */
    const hs_io_range rr[] = { { 1000000, 8000 }, { 100000, 8000 }, { 2900000, 8000 },
                               { 550000, 8000 }, { 1450000, 8000 } };
    hs_s3_stats a, b;
    hs_s3_get_stats(&a);
    hs_file_will_need(f, rr, 5);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests + 2);
    for (int i = 0; i < 5; i++) {
        CHECK_OK(hs_file_read_at(f, rr[i].off, (size_t)rr[i].len, got, &err), &err);
        CHECK(memcmp(got, data + rr[i].off, (size_t)rr[i].len) == 0);
    }
    /* a read across the pieces' boundary (at 1 MiB from the run's start) */
    CHECK_OK(hs_file_read_at(f, 1100000, 200000, got, &err), &err);
    CHECK(memcmp(got, data + 1100000, 200000) == 0);
    hs_s3_get_stats(&a);
    CHECK(a.requests == b.requests);
    hs_file_close(f);
    CHECK_OK(hs_io_delete(u, &err), &err);
    hs_free(data);
    hs_free(got);
}

/* hs_io_read_head_start/finish: the bytes of a ranged GET at 0 (oracle:
 * the bytes written), one request, the object's identity cached after it;
 * a wrong size is HS_CONFLICT at finish; local paths start nothing. */
static void test_read_head_async(void)
{
    NEED_SERVER();
    hs_s3_reset();
    size_t n = 300000;
    uint8_t *data = hs_malloc(n);
    REQUIRE(data);
    fill(data, n, 11);
    hs_error err = { 0 };
    hs_wfile *w;
    const char *u = uri_of("unit/head-async.bin");
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_s3_reset();
    hs_s3_stats a, b;
    hs_s3_get_stats(&a);
    CHECK(!hs_io_identity_cached(u));
    hs_io_pending *p = hs_io_read_head_start(u, 70001, n);
    REQUIRE(p != NULL);
    uint8_t *got = NULL;
    CHECK_OK(hs_io_read_head_finish(p, &got, &err), &err);
    REQUIRE(got != NULL);
    CHECK(memcmp(got, data, 70001) == 0);
    hs_free_aligned(got);
    hs_s3_get_stats(&b);
    CHECK(b.requests == a.requests + 1);
    CHECK(hs_io_identity_cached(u));
    /* dropped unread: nothing leaks (ASan) */
    p = hs_io_read_head_start(u, 100, n);
    REQUIRE(p != NULL);
    CHECK_OK(hs_io_read_head_finish(p, NULL, &err), &err);
    /* the registry's size is wrong: the object was replaced */
    p = hs_io_read_head_start(u, 100, n + 1);
    REQUIRE(p != NULL);
    got = NULL;
    CHECK(hs_io_read_head_finish(p, &got, &err) == HS_CONFLICT);
    CHECK(got == NULL);
    CHECK(hs_io_read_head_start("/tmp/not-an-object", 10, 100) == NULL);
    CHECK(hs_io_read_head_start(u, 0, n) == NULL);
    CHECK(hs_io_read_head_start(u, n + 1, n) == NULL);
    hs_free(data);
}

static void test_exclusive_create(void)
{
    NEED_SERVER();
    hs_error err = { 0 };
    const char *u = uri_of("unit/excl/v1.metadata.json");
    CHECK_OK(hs_io_delete(u, &err), &err);
    hs_wfile *w1, *w2;
    CHECK_OK(hs_io_create(u, HS_WFILE_EXCLUSIVE, &w1, &err), &err);
    CHECK_OK(hs_io_create(u, HS_WFILE_EXCLUSIVE, &w2, &err), &err);
    CHECK_OK(hs_wfile_write(w1, "{\"a\":1}", 7, &err), &err);
    CHECK_OK(hs_wfile_write(w2, "{\"b\":22}", 8, &err), &err);
    CHECK_OK(hs_wfile_close(w1, &err), &err);
    CHECK(hs_wfile_close(w2, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    hs_buf b = { 0 };
    CHECK_OK(hs_io_read_all(u, &b, &err), &err);
    CHECK(b.len == 7 && memcmp(b.data, "{\"a\":1}", 7) == 0);   /* the loser wrote nothing */
    hs_buf_free(&b);
    /* a plain PUT overwrites (version-hint.text) */
    CHECK_OK(hs_io_create(u, 0, &w1, &err), &err);
    CHECK_OK(hs_wfile_write(w1, "2", 1, &err), &err);
    CHECK_OK(hs_wfile_close(w1, &err), &err);
    bool ex;
    uint64_t sz = 0;
    CHECK_OK(hs_io_stat(u, &ex, &sz, &err), &err);
    CHECK(ex && sz == 1);
    /* an aborted writer leaves nothing */
    const char *u2 = uri_of("unit/excl/aborted");
    CHECK_OK(hs_io_create(u2, 0, &w1, &err), &err);
    CHECK_OK(hs_wfile_write(w1, "x", 1, &err), &err);
    hs_wfile_abort(w1);
    CHECK_OK(hs_io_stat(u2, &ex, &sz, &err), &err);
    CHECK(!ex);
    CHECK_OK(hs_io_delete(u, &err), &err);
}

static void test_multipart(void)
{
    NEED_SERVER();
    setenv("HS_S3_PART_MB", "5", 1);
    hs_s3_reset();
    size_t n = (size_t)12 << 20;   /* 5 + 5 + 2 MiB */
    uint8_t *data = hs_malloc(n);
    fill(data, n, 3);
    hs_error err = { 0 };
    const char *u = uri_of("unit/big.bin");
    hs_wfile *w;
    hs_s3_stats a, b;
    hs_s3_get_stats(&a);
    CHECK_OK(hs_io_create(u, 0, &w, &err), &err);
    for (size_t off = 0; off < n; off += 1000003)
        CHECK_OK(hs_wfile_write(w, data + off, n - off < 1000003 ? n - off : 1000003, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_s3_get_stats(&b);
    CHECK(b.posts - a.posts == 2);   /* create + complete */
    CHECK(b.puts - a.puts == 3);     /* three parts */
    hs_buf all = { 0 };
    CHECK_OK(hs_io_read_all(u, &all, &err), &err);
    CHECK(all.len == n && memcmp(all.data, data, n) == 0);
    hs_buf_free(&all);
    /* an aborted multipart upload publishes nothing */
    const char *u2 = uri_of("unit/big-aborted.bin");
    CHECK_OK(hs_io_create(u2, 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, data, n, &err), &err);
    hs_wfile_abort(w);
    bool ex;
    CHECK_OK(hs_io_stat(u2, &ex, NULL, &err), &err);
    CHECK(!ex);
    CHECK_OK(hs_io_delete(u, &err), &err);
    hs_free(data);
    unsetenv("HS_S3_PART_MB");
    hs_s3_reset();
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_list(void)
{
    NEED_SERVER();
    setenv("HS_S3_LIST_MAX_KEYS", "7", 1);   /* several pages */
    hs_error err = { 0 };
    char key[128];
    int n_files = 23;
    for (int i = 0; i < n_files; i++) {
        snprintf(key, sizeof key, "unit/list/f%02d %s", i, i % 2 ? "odd&<" : "even");
        hs_wfile *w;
        CHECK_OK(hs_io_create(uri_of(key), 0, &w, &err), &err);
        CHECK_OK(hs_wfile_write(w, key, strlen(key), &err), &err);
        CHECK_OK(hs_wfile_close(w, &err), &err);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "unit/list/sub%d/x", i);
        hs_wfile *w;
        CHECK_OK(hs_io_create(uri_of(key), 0, &w, &err), &err);
        CHECK_OK(hs_wfile_close(w, &err), &err);
    }
    char **names;
    size_t n;
    CHECK_OK(hs_s3_list(uri_of("unit/list"), false, &names, &n, &err), &err);
    CHECK(n == (size_t)n_files + 3);
    qsort(names, n, sizeof *names, cmp_str);
    if (n == (size_t)n_files + 3) {
        CHECK(strcmp(names[0], "f00 even") == 0);
        CHECK(strcmp(names[1], "f01 odd&<") == 0);
        CHECK(strcmp(names[n_files], "sub0") == 0);
    }
    for (size_t i = 0; i < n; i++)
        hs_free(names[i]);
    hs_free(names);
    /* with sizes and Last-Modified, from the listing pages alone */
    hs_io_entry *ent = NULL;
    size_t ne = 0;
    hs_s3_stats s0, s1;
    hs_s3_get_stats(&s0);
    CHECK_OK(hs_io_list_entries(uri_of("unit/list"), &ent, &ne, &err), &err);
    hs_s3_get_stats(&s1);
    CHECK(s1.requests - s0.requests == 4);   /* 26 keys, 7 a page: no HEAD */
    CHECK(ne == (size_t)n_files + 3);
    int64_t now_ms = (int64_t)time(NULL) * 1000;
    for (size_t i = 0; i < ne; i++) {
        bool sub = strncmp(ent[i].name, "sub", 3) == 0;
        CHECK(ent[i].size == (sub ? 0 : strlen("unit/list/") + strlen(ent[i].name)));
        CHECK(ent[i].mtime_ms > now_ms - 600000 && ent[i].mtime_ms < now_ms + 600000);
    }
    hs_io_entries_free(ent, ne);
    CHECK(hs_io_list_entries(hs_test_tmpdir(), &ent, &ne, &err) == HS_UNSUPPORTED);
    hs_err_clear(&err);
    CHECK_OK(hs_s3_list(uri_of("unit/list/"), true, &names, &n, &err), &err);
    CHECK(n == (size_t)n_files + 3);
    qsort(names, n, sizeof *names, cmp_str);
    if (n == (size_t)n_files + 3)
        CHECK(strcmp(names[n - 1], "sub2/x") == 0);
    for (size_t i = 0; i < n; i++) {
        char u[512];
        snprintf(u, sizeof u, "s3://%s/unit/list/%s", bucket(), names[i]);
        CHECK_OK(hs_io_delete(u, &err), &err);
        hs_free(names[i]);
    }
    hs_free(names);
    CHECK_OK(hs_s3_list(uri_of("unit/list"), true, &names, &n, &err), &err);
    CHECK(n == 0);
    hs_free(names);
    CHECK(hs_s3_list("s3://no-such-bucket-hs/x", false, &names, &n, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    unsetenv("HS_S3_LIST_MAX_KEYS");
}

static void test_profile_credentials(void)
{
    NEED_SERVER();
    /* the same server through a profile in a credentials file, not the env */
    char cred[512], conf[512];
    snprintf(cred, sizeof cred, "%s/s3-credentials", hs_test_tmpdir());
    snprintf(conf, sizeof conf, "%s/s3-config", hs_test_tmpdir());
    FILE *fp = fopen(cred, "w");
    REQUIRE(fp != NULL);
    fprintf(fp, "[default]\naws_access_key_id=nope\naws_secret_access_key=nope\n"
                "[hs]\naws_access_key_id = %s\naws_secret_access_key = %s\n",
            getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"));
    fclose(fp);
    fp = fopen(conf, "w");
    REQUIRE(fp != NULL);
    fprintf(fp, "[profile hs]\nregion = us-east-1\nendpoint_url = %s\n",
            getenv("HS_TEST_S3_ENDPOINT"));
    fclose(fp);
    char *saved[3];
    const char *vars[3] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL" };
    for (int i = 0; i < 3; i++) {
        saved[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;
        unsetenv(vars[i]);
    }
    setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
    setenv("AWS_CONFIG_FILE", conf, 1);
    setenv("AWS_PROFILE", "hs", 1);
    hs_s3_reset();
    hs_error err = { 0 };
    hs_wfile *w;
    CHECK_OK(hs_io_create(uri_of("unit/profile.txt"), 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "p", 1, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    bool ex = false;
    CHECK_OK(hs_io_stat(uri_of("unit/profile.txt"), &ex, NULL, &err), &err);
    CHECK(ex);
    CHECK_OK(hs_io_delete(uri_of("unit/profile.txt"), &err), &err);
    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(vars[i], saved[i], 1);
        free(saved[i]);
    }
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    unsetenv("AWS_CONFIG_FILE");
    unsetenv("AWS_PROFILE");
    hs_s3_reset();
}

static void test_bad_credentials(void)
{
    NEED_SERVER();
    const char *auth = getenv("HS_TEST_S3_AUTH");
    if (!auth || strcmp(auth, "1") != 0)
        SKIP("this server does not check signatures");
    char *saved = strdup(getenv("AWS_SECRET_ACCESS_KEY"));
    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
    hs_s3_reset();
    hs_error err = { 0 };
    hs_wfile *w;
    CHECK_OK(hs_io_create(uri_of("unit/denied"), 0, &w, &err), &err);
    CHECK(hs_wfile_close(w, &err) == HS_IO);
    CHECK(strstr(err.msg, "403") != NULL && strstr(err.msg, "SignatureDoesNotMatch") != NULL);
    setenv("AWS_SECRET_ACCESS_KEY", saved, 1);
    free(saved);
    hs_s3_reset();
}

/* A one-thread HTTP server answering every request with creds_json, noting
 * whether it saw the expected Authorization header. */
typedef struct creds_srv {
    int fd;
    char json[1024];
    int requests, authorized;
} creds_srv;

static void *creds_main(void *arg)
{
    creds_srv *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char req[4096];
        ssize_t n = recv(c, req, sizeof req - 1, 0);
        if (n > 0) {
            req[n] = 0;
            s->requests++;
            if (strstr(req, "\r\nAuthorization: hs-token\r\n"))
                s->authorized++;
            char resp[1400];
            int k = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                             "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                             strlen(s->json), s->json);
            (void)!send(c, resp, (size_t)k, 0);
        }
        close(c);
    }
}

static void test_container_credentials(void)
{
    NEED_SERVER();
    creds_srv srv = { 0 };
    snprintf(srv.json, sizeof srv.json,
             "{\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"%s\",\"Token\":\"\","
             "\"Expiration\":\"2099-01-01T00:00:00Z\"}",
             getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"));
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    REQUIRE(bind(srv.fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(srv.fd, 8) == 0 &&
            getsockname(srv.fd, (struct sockaddr *)&a, &al) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, creds_main, &srv) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/creds", ntohs(a.sin_port));
    char *saved[2] = { strdup(getenv("AWS_ACCESS_KEY_ID")), strdup(getenv("AWS_SECRET_ACCESS_KEY")) };
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "hs-token", 1);
    hs_s3_reset();
    hs_error err = { 0 };
    hs_wfile *w;
    CHECK_OK(hs_io_create(uri_of("unit/container.txt"), 0, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "c", 1, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);   /* signed with the fetched keys */
    CHECK_OK(hs_io_delete(uri_of("unit/container.txt"), &err), &err);
    CHECK(srv.requests == 1 && srv.authorized == 1);   /* fetched once, with the token */
    setenv("AWS_ACCESS_KEY_ID", saved[0], 1);
    setenv("AWS_SECRET_ACCESS_KEY", saved[1], 1);
    free(saved[0]);
    free(saved[1]);
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    unsetenv("AWS_CONFIG_FILE");
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    shutdown(srv.fd, SHUT_RDWR);
    close(srv.fd);
    pthread_join(th, NULL);
    hs_s3_reset();
}

/* Saves and clears the credential variables; restore_creds puts them back. */
typedef struct saved_env {
    char *v[6];
} saved_env;
static const char *const CRED_VARS[6] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                          "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
                                          "AWS_PROFILE", "AWS_SESSION_TOKEN" };

static void clear_creds(saved_env *s)
{
    for (int i = 0; i < 6; i++) {
        s->v[i] = getenv(CRED_VARS[i]) ? strdup(getenv(CRED_VARS[i])) : NULL;
        unsetenv(CRED_VARS[i]);
    }
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
}

static void restore_creds(saved_env *s)
{
    for (int i = 0; i < 6; i++) {
        if (s->v[i])
            setenv(CRED_VARS[i], s->v[i], 1);
        else
            unsetenv(CRED_VARS[i]);
        free(s->v[i]);
    }
    hs_s3_reset();
}

/* Writes and deletes one small object; the status of the write. */
static hs_status put_small(const char *key, hs_error *err)
{
    hs_wfile *w;
    hs_status st = hs_io_create(uri_of(key), 0, &w, err);
    if (st != HS_OK)
        return st;
    st = hs_wfile_write(w, "x", 1, err);
    if (st != HS_OK) {
        hs_wfile_abort(w);
        return st;
    }
    st = hs_wfile_close(w, err);
    if (st == HS_OK)
        st = hs_io_delete(uri_of(key), err);
    return st;
}

/* A fake EC2 instance metadata service speaking IMDSv2: PUT /latest/api/token
 * needs the TTL header and hands out a token, the credential GETs need that
 * token; credentials expire expire_in_s seconds after they are handed out. */
typedef struct imds_srv {
    int fd;
    char key[256], secret[256];
    int expire_in_s;
    int tokens, role_gets, cred_gets, bad;   /* bad: a request refused */
} imds_srv;

static void *imds_main(void *arg)
{
    imds_srv *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char req[4096], body[1200] = "";
        int status = 404;
        ssize_t n = recv(c, req, sizeof req - 1, 0);
        if (n > 0) {
            req[n] = 0;
            bool tok = strstr(req, "\r\nX-aws-ec2-metadata-token: tok-123\r\n") != NULL;
            const char *creds = "GET /latest/meta-data/iam/security-credentials/";
            if (strncmp(req, "PUT /latest/api/token ", 22) == 0) {
                bool ttl = strstr(req, "\r\nX-aws-ec2-metadata-token-ttl-seconds: 21600\r\n");
                status = ttl ? 200 : 400;
                s->tokens += ttl;
                s->bad += !ttl;
                snprintf(body, sizeof body, "%s", ttl ? "tok-123" : "");
            } else if (strncmp(req, creds, strlen(creds)) == 0) {
                const char *rest = req + strlen(creds);
                status = tok ? 200 : 401;
                s->bad += !tok;
                if (tok && rest[0] == ' ') {
                    s->role_gets++;
                    snprintf(body, sizeof body, "hs-role");
                } else if (tok && strncmp(rest, "hs-role ", 8) == 0) {
                    s->cred_gets++;
                    time_t e = time(NULL) + s->expire_in_s;
                    struct tm tm;
                    gmtime_r(&e, &tm);
                    char ex[32];
                    strftime(ex, sizeof ex, "%Y-%m-%dT%H:%M:%SZ", &tm);
                    snprintf(body, sizeof body, "{\"Code\":\"Success\",\"Type\":\"AWS-HMAC\","
                             "\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"%s\",\"Token\":\"\","
                             "\"Expiration\":\"%s\"}", s->key, s->secret, ex);
                } else if (tok) {
                    status = 404;
                }
            }
        }
        char resp[1600];
        int k = snprintf(resp, sizeof resp, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\n\r\n%s", status, strlen(body), body);
        (void)!send(c, resp, (size_t)k, 0);
        close(c);
    }
}

static void test_imds_credentials(void)
{
    NEED_SERVER();
    const char *auth = getenv("HS_TEST_S3_AUTH");
    bool checks = auth && strcmp(auth, "1") == 0;
    imds_srv srv = { 0 };
    snprintf(srv.key, sizeof srv.key, "%s", getenv("AWS_ACCESS_KEY_ID"));
    snprintf(srv.secret, sizeof srv.secret, "%s", getenv("AWS_SECRET_ACCESS_KEY"));
    srv.expire_in_s = 3600;
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    REQUIRE(bind(srv.fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(srv.fd, 8) == 0 &&
            getsockname(srv.fd, (struct sockaddr *)&a, &al) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, imds_main, &srv) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", ntohs(a.sin_port));
    saved_env saved;
    clear_creds(&saved);
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
    hs_s3_reset();
    hs_error err = { 0 };
    /* token, role, credentials: once, then every request signs with them */
    CHECK_OK(put_small("unit/imds-1", &err), &err);
    CHECK_OK(put_small("unit/imds-2", &err), &err);
    CHECK(srv.tokens == 1 && srv.role_gets == 1 && srv.cred_gets == 1 && srv.bad == 0);

    /* credentials within 5 minutes of their expiry (halfway through their
     * life when it is shorter than 10 minutes) are fetched again */
    srv.expire_in_s = 10;   /* due after 5 s (whole seconds: after 6 at the latest) */
    hs_s3_reset();
    int before = srv.cred_gets;
    CHECK_OK(put_small("unit/imds-3", &err), &err);
    CHECK(srv.cred_gets - before == 1);   /* the load; 10 s to go: not due yet */
    usleep(7200 * 1000);                   /* past the halfway mark */
    CHECK_OK(put_small("unit/imds-4", &err), &err);
    CHECK(srv.cred_gets - before >= 2);   /* due: fetched again before the request */
    CHECK(srv.bad == 0);

    if (checks) {
        /* the keys it hands out are the ones that sign: a wrong secret is refused */
        snprintf(srv.secret, sizeof srv.secret, "not-the-secret");
        srv.expire_in_s = 3600;
        hs_s3_reset();
        CHECK(put_small("unit/imds-5", &err) == HS_IO);
        CHECK(strstr(err.msg, "403") != NULL);
        hs_err_clear(&err);
    }
    /* a refresh that fails keeps the keys while they are valid */
    snprintf(srv.secret, sizeof srv.secret, "%s", saved.v[1]);   /* AWS_SECRET_ACCESS_KEY */
    srv.expire_in_s = 16;
    hs_s3_reset();
    CHECK_OK(put_small("unit/imds-k1", &err), &err);
    shutdown(srv.fd, SHUT_RDWR);
    close(srv.fd);
    pthread_join(th, NULL);
    usleep(10200 * 1000);   /* inside the refresh window (due after 8-9 s), still valid */
    CHECK_OK(put_small("unit/imds-k2", &err), &err);   /* the endpoint is gone: old keys */
    /* named but silent: the 403 says why nothing signed the request */
    if (checks) {
        setenv("HS_S3_MAX_ATTEMPTS", "2", 1);
        hs_s3_reset();
        CHECK(put_small("unit/imds-6", &err) == HS_IO);
        CHECK(strstr(err.msg, "instance metadata service") != NULL);   /* 403, or moto's 500 */
        hs_err_clear(&err);
        unsetenv("HS_S3_MAX_ATTEMPTS");
    }
    unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    restore_creds(&saved);
}

static void test_process_credentials(void)
{
    NEED_SERVER();
    const char *auth = getenv("HS_TEST_S3_AUTH");
    bool checks = auth && strcmp(auth, "1") == 0;
    char script[512], bad[512], marker[512], conf[512];
    snprintf(script, sizeof script, "%s/creds-ok.sh", hs_test_tmpdir());
    snprintf(bad, sizeof bad, "%s/creds-bad.sh", hs_test_tmpdir());
    snprintf(marker, sizeof marker, "%s/creds-ran", hs_test_tmpdir());
    snprintf(conf, sizeof conf, "%s/creds-config", hs_test_tmpdir());
    unlink(marker);
    FILE *fp = fopen(script, "w");
    REQUIRE(fp != NULL);
    fprintf(fp, "#!/bin/sh\necho ran >> '%s'\nprintf '{\"Version\": 1, \"AccessKeyId\": "
                "\"%%s\", \"SecretAccessKey\": \"%%s\"}\\n' \"$1\" \"$2\"\n",
            marker);
    fclose(fp);
    fp = fopen(bad, "w");
    REQUIRE(fp != NULL);
    fprintf(fp, "#!/bin/sh\necho 'no credentials for you' >&2\nexit 3\n");
    fclose(fp);
    REQUIRE(chmod(script, 0700) == 0 && chmod(bad, 0700) == 0);
    fp = fopen(conf, "w");
    REQUIRE(fp != NULL);
    /* arguments after the command, as the AWS CLI passes them */
    fprintf(fp, "[profile hsproc]\ncredential_process = %s %s %s\n"
                "[profile hsbad]\ncredential_process = %s\n",
            script, getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), bad);
    fclose(fp);
    saved_env saved;
    clear_creds(&saved);
    setenv("AWS_CONFIG_FILE", conf, 1);
    setenv("AWS_PROFILE", "hsproc", 1);
    hs_s3_reset();
    hs_error err = { 0 };
    CHECK_OK(put_small("unit/process-1", &err), &err);
    CHECK_OK(put_small("unit/process-2", &err), &err);
    size_t len = 0;
    char *ran = NULL;
    hs_buf mb = { 0 };
    if (hs_io_read_all(marker, &mb, &err) == HS_OK)
        ran = (char *)mb.data, len = mb.len;
    CHECK(ran != NULL && len == 4);   /* ran once: the keys have no expiry */
    hs_buf_free(&mb);
    hs_err_clear(&err);
    if (checks) {
        setenv("AWS_PROFILE", "hsbad", 1);
        setenv("HS_S3_MAX_ATTEMPTS", "2", 1);   /* moto answers an unsigned PUT with 500 */
        hs_s3_reset();
        CHECK(put_small("unit/process-3", &err) == HS_IO);
        CHECK(strstr(err.msg, "credential_process of profile hsbad failed (exit status 3)") !=
              NULL);
        hs_err_clear(&err);
        unsetenv("HS_S3_MAX_ATTEMPTS");
    }
    restore_creds(&saved);
}

static void test_unreachable(void)
{
    /* a closed port: transport errors are retried, then reported */
    char *saved = getenv("AWS_ENDPOINT_URL") ? strdup(getenv("AWS_ENDPOINT_URL")) : NULL;
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
    setenv("HS_S3_MAX_ATTEMPTS", "3", 1);
    hs_s3_reset();
    hs_file *f = NULL;
    hs_error err = { 0 };
    CHECK(hs_io_open("s3://b/k", &f, &err) == HS_IO);
    CHECK(strstr(err.msg, "3 attempts") != NULL);
    hs_s3_stats st;
    hs_s3_get_stats(&st);
    CHECK(st.requests == 3 && st.retries == 2);
    if (saved)
        setenv("AWS_ENDPOINT_URL", saved, 1);
    else
        unsetenv("AWS_ENDPOINT_URL");
    free(saved);
    unsetenv("HS_S3_MAX_ATTEMPTS");
    hs_s3_reset();
}

/* A keep-alive HTTP/1.1 server for test_fork_connections: accepts
 * connections (counting them), one thread each, and answers every request
 * on a connection with an empty 200 (204 for DELETE) without closing it. */
typedef struct ka_srv {
    int fd;
    atomic_int conns, requests;
} ka_srv;

typedef struct ka_conn {
    ka_srv *s;
    int fd;
} ka_conn;

static void *ka_conn_main(void *arg)
{
    ka_conn *kc = arg;
    char buf[16384];
    size_t have = 0;
    for (;;) {
        char *end = NULL;
        while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
            ssize_t n = have < sizeof buf ? recv(kc->fd, buf + have, sizeof buf - have, 0) : -1;
            if (n <= 0)
                goto done;
            have += (size_t)n;
        }
        size_t head = (size_t)(end + 4 - buf), body = 0;
        buf[head - 1] = 0;
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (cl)
            body = (size_t)strtoul(cl + 17, NULL, 10);
        while (have < head + body && have < sizeof buf) {
            ssize_t n = recv(kc->fd, buf + have, sizeof buf - have, 0);
            if (n <= 0)
                goto done;
            have += (size_t)n;
        }
        if (have < head + body)
            goto done;
        atomic_fetch_add(&kc->s->requests, 1);
        const char *resp = strncmp(buf, "DELETE ", 7) == 0
                               ? "HTTP/1.1 204 No Content\r\n\r\n"
                               : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n";
        if (send(kc->fd, resp, strlen(resp), MSG_NOSIGNAL) < 0)
            goto done;
        memmove(buf, buf + head + body, have - head - body);
        have -= head + body;
    }
done:
    close(kc->fd);
    free(kc);
    return NULL;
}

static void *ka_main(void *arg)
{
    ka_srv *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        atomic_fetch_add(&s->conns, 1);
        ka_conn *kc = malloc(sizeof *kc);
        pthread_t th;
        if (!kc || (kc->s = s, kc->fd = c, pthread_create(&th, NULL, ka_conn_main, kc)) != 0) {
            close(c);
            free(kc);
            continue;
        }
        pthread_detach(th);
    }
}

/* A forked child (Python multiprocessing) opens connections of its own:
 * the parent's idle connections stay the parent's (two processes sending
 * on one socket read each other's answers).  The parent keeps reusing its
 * connection after the child is done. */
static void test_fork_connections(void)
{
    ka_srv srv = {0};
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    REQUIRE(bind(srv.fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(srv.fd, 8) == 0 &&
            getsockname(srv.fd, (struct sockaddr *)&a, &al) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, ka_main, &srv) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    saved_env saved;
    clear_creds(&saved);
    char *old_ep = getenv("AWS_ENDPOINT_URL_S3") ? strdup(getenv("AWS_ENDPOINT_URL_S3")) : NULL;
    setenv("AWS_ENDPOINT_URL_S3", url, 1);
    setenv("AWS_ACCESS_KEY_ID", "hs-fork-test", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "hs-fork-test-secret", 1);
    hs_s3_reset();

    hs_error err = {0};
    CHECK_OK(put_small("fork-conn-1", &err), &err);
    CHECK_OK(put_small("fork-conn-2", &err), &err);
    CHECK(atomic_load(&srv.conns) == 1 && atomic_load(&srv.requests) == 4);   /* kept */
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        hs_error e2 = {0};
        hs_s3_stats c, d;
        hs_s3_get_stats(&c);
        int ok = put_small("fork-conn-child", &e2) == HS_OK;
        hs_s3_get_stats(&d);
        _exit(!ok ? 2 : d.connects == c.connects + 1 ? 0 : 1);
    }
    int ws = -1;
    REQUIRE(pid > 0 && waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        fprintf(stderr, "  child: wait status %d (exit 1: it reused the parent's connection)\n",
                ws);
    CHECK(atomic_load(&srv.conns) == 2 && atomic_load(&srv.requests) == 6);
    /* the parent's connection is still its own, and still open */
    CHECK_OK(put_small("fork-conn-3", &err), &err);
    CHECK(atomic_load(&srv.conns) == 2 && atomic_load(&srv.requests) == 8);

    hs_s3_reset();   /* closes the pool's connections */
    shutdown(srv.fd, SHUT_RDWR);
    close(srv.fd);
    pthread_join(th, NULL);
    if (old_ep)
        setenv("AWS_ENDPOINT_URL_S3", old_ep, 1);
    else
        unsetenv("AWS_ENDPOINT_URL_S3");
    free(old_ep);
    restore_creds(&saved);
    hs_s3_reset();
}


/* ---- vended credentials that expire (io/s3_scope.c's refreshers) ---- */

/* A fake S3 server: objects answer "hello" to requests signed with the
 * session token "tok-new"; "tok-old" is refused with S3's 403 ExpiredToken
 * (a HEAD gets the bare 403, as from S3). */
typedef struct vend_srv {
    int fd;
    atomic_int old_seen, new_seen, other;
} vend_srv;

static void *vend_main(void *arg)
{
    vend_srv *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char req[8192];
        size_t got = 0;
        ssize_t n;
        while (got < sizeof req - 1 && (n = recv(c, req + got, sizeof req - 1 - got, 0)) > 0) {
            got += (size_t)n;
            req[got] = 0;
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[got] = 0;
        bool head = strncmp(req, "HEAD ", 5) == 0;
        const char *body = "";
        int status;
        if (strcasestr(req, "\r\nx-amz-security-token: tok-new\r\n")) {
            s->new_seen++;
            status = 200;
            body = "hello";
        } else if (strcasestr(req, "\r\nx-amz-security-token: tok-old\r\n")) {
            s->old_seen++;
            status = 403;
            body = head ? "" : "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>ExpiredToken"
                               "</Code><Message>The provided token has expired.</Message></Error>";
        } else {
            s->other++;
            status = 400;
        }
        char resp[1024];
        int k = snprintf(resp, sizeof resp, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n"
                         "ETag: \"e1\"\r\nLast-Modified: Mon, 07 Dec 2026 10:00:00 GMT\r\n"
                         "Connection: close\r\n\r\n%s", status, strlen(body), head ? "" : body);
        (void)!send(c, resp, (size_t)k, 0);
        close(c);
    }
}

typedef struct vend_cb {
    atomic_int calls;
    char endpoint[128];
    char expires[32];   /* the new keys' s3.session-token-expires-at-ms, "" = none */
} vend_cb;

static hs_status vend_fail(hs_io_refresher *self, void *arg, hs_error *err)
{
    (void)self;
    vend_cb *cb = arg;
    cb->calls++;
    return hs_err_set(err, HS_IO, "the catalog is down");
}

static hs_status vend_fn(hs_io_refresher *self, void *arg, hs_error *err)
{
    vend_cb *cb = arg;
    cb->calls++;
    usleep(100 * 1000);   /* a slow catalog: the other threads pile up behind */
    const char *k[] = { "s3.endpoint", "s3.access-key-id", "s3.secret-access-key",
                        "s3.session-token", "s3.session-token-expires-at-ms" };
    const char *v[] = { cb->endpoint, "AKNEW", "secret-new", "tok-new", cb->expires };
    return hs_io_set_scope_ex("s3://vbkt/t", k, v, cb->expires[0] ? 5 : 4, self, err);
}

typedef struct vend_reader {
    int i;
    hs_status st;
    char msg[sizeof ((hs_error *)0)->msg];
} vend_reader;

static void *vend_read(void *arg)
{
    vend_reader *r = arg;
    char uri[64];
    snprintf(uri, sizeof uri, "s3://vbkt/t/obj-%d", r->i);
    hs_buf b = { 0 };
    hs_error err = { 0 };
    r->st = hs_io_read_all(uri, &b, &err);
    if (r->st == HS_OK && (b.len != 5 || memcmp(b.data, "hello", 5) != 0))
        r->st = HS_CORRUPT;
    snprintf(r->msg, sizeof r->msg, "%s", err.msg);
    hs_buf_free(&b);
    return NULL;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sets the vended scope with the old token; expires_ms 0 = no expiry said. */
static void vend_scope_old(vend_cb *cb, hs_io_refresher *ref, int64_t expires_ms)
{
    char exp[32];
    snprintf(exp, sizeof exp, "%" PRId64, expires_ms);
    const char *k[] = { "s3.endpoint", "s3.access-key-id", "s3.secret-access-key",
                        "s3.session-token", "s3.session-token-expires-at-ms" };
    const char *v[] = { cb->endpoint, "AKOLD", "secret-old", "tok-old", exp };
    hs_error err = { 0 };
    CHECK_OK(hs_io_set_scope_ex("s3://vbkt/t", k, v, expires_ms ? 5 : 4, ref, &err), &err);
}

static void vend_threads(int n)
{
    pthread_t th[16];
    vend_reader rd[16];
    for (int i = 0; i < n; i++) {
        rd[i] = (vend_reader){ .i = i };
        REQUIRE(pthread_create(&th[i], NULL, vend_read, &rd[i]) == 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        CHECK(rd[i].st == HS_OK);
        if (rd[i].st != HS_OK)
            fprintf(stderr, "  reader %d: %s\n", i, rd[i].msg);
    }
}

static void test_vended_refresh(void)
{
    vend_srv srv = { .fd = socket(AF_INET, SOCK_STREAM, 0) };
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    REQUIRE(bind(srv.fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(srv.fd, 64) == 0 &&
            getsockname(srv.fd, (struct sockaddr *)&a, &al) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, vend_main, &srv) == 0);
    setenv("HS_S3_MAX_ATTEMPTS", "2", 1);
    hs_s3_reset();
    vend_cb cb = { 0 };
    snprintf(cb.endpoint, sizeof cb.endpoint, "http://127.0.0.1:%d", ntohs(a.sin_port));

    /* 1. refused as expired: 16 threads at once, one refresh, every read works */
    hs_io_refresher *ref = hs_io_refresher_new(vend_fn, &cb, NULL);
    REQUIRE(ref);
    vend_scope_old(&cb, ref, 0);
    vend_threads(16);
    CHECK(cb.calls == 1);
    CHECK(hs_io_refresher_generation(ref) == 1);
    CHECK(srv.old_seen >= 1 && srv.new_seen >= 16 && srv.other == 0);

    /* 2. about to expire: refreshed before any request goes out */
    srv.old_seen = srv.new_seen = 0;
    cb.calls = 0;
    snprintf(cb.expires, sizeof cb.expires, "%" PRId64, wall_ms() + 3600 * 1000);
    vend_scope_old(&cb, ref, wall_ms() - 1000);   /* expired a second ago */
    hs_s3_reset();   /* no cached answers */
    vend_threads(8);
    CHECK(cb.calls == 1);
    CHECK(srv.old_seen == 0 && srv.new_seen >= 8);
    /* the new keys live an hour: no more refreshes */
    hs_s3_reset();
    vend_threads(4);
    CHECK(cb.calls == 1);

    /* 3. keys that live seconds refresh halfway, not before every request */
    cb.calls = 0;
    snprintf(cb.expires, sizeof cb.expires, "%" PRId64, wall_ms() + 2000);
    vend_scope_old(&cb, ref, wall_ms() - 1);
    hs_s3_reset();
    vend_threads(2);
    CHECK(cb.calls == 1);   /* refreshed to keys that live 2 s: not due again yet */
    hs_s3_reset();
    vend_threads(2);
    CHECK(cb.calls == 1);
    usleep(1100 * 1000);    /* past the halfway mark */
    hs_s3_reset();
    vend_threads(2);
    CHECK(cb.calls == 2);

    /* 4. a refresher that fails, or none: the 403 comes back, no loop */
    hs_io_refresher_release(ref);   /* the scope keeps it alive */
    hs_s3_clear_scopes();           /* ...until now */
    hs_io_refresher *bad = hs_io_refresher_new(vend_fail, &cb, NULL);
    for (int round = 0; round < 2; round++) {
        cb.calls = 0;
        srv.old_seen = 0;
        hs_s3_reset();
        vend_scope_old(&cb, round == 0 ? bad : NULL, 0);
        hs_buf b = { 0 };
        hs_error err = { 0 };
        CHECK(hs_io_read_all("s3://vbkt/t/obj-x", &b, &err) != HS_OK);
        CHECK(strstr(err.msg, "403") != NULL);
        CHECK(srv.old_seen >= 1 && srv.old_seen <= 4);
        CHECK(cb.calls == (round == 0 ? 1 : 0));
        hs_buf_free(&b);
    }
    hs_io_refresher_release(bad);

    hs_s3_clear_scopes();
    unsetenv("HS_S3_MAX_ATTEMPTS");
    shutdown(srv.fd, SHUT_RDWR);
    close(srv.fd);
    pthread_join(th, NULL);
    hs_s3_reset();
}

int main(void)
{
    HS_RUN(test_parse_list);
    HS_RUN(test_parse_error_and_ini);
    HS_RUN(test_uri_dispatch);
    HS_RUN(test_unreachable);
    HS_RUN(test_vended_refresh);
    HS_RUN(test_put_get_ranges);
    HS_RUN(test_cache_stitching_and_read_all);
    HS_RUN(test_will_need);
    HS_RUN(test_will_need_long_run);
    HS_RUN(test_read_head_async);
    HS_RUN(test_exclusive_create);
    HS_RUN(test_multipart);
    HS_RUN(test_list);
    HS_RUN(test_fork_connections);
    HS_RUN(test_profile_credentials);
    HS_RUN(test_bad_credentials);
    HS_RUN(test_container_credentials);
    HS_RUN(test_imds_credentials);
    HS_RUN(test_process_credentials);
    hs_s3_reset();
    return hs_test_summary();
}
