/* Memory of decoders of untrusted bytes, bounded against the input size.
 *
 * Every test feeds a decoder crafted hostile input (many tiny blocks, huge
 * claimed counts, deep nesting, zero-size items, compression bombs) and
 * measures through the allocation hook (memcount.h) the peak and the total
 * bytes the decode allocated; both must stay within a small multiple of the
 * input plus a constant, or the decode must fail with an error naming the
 * decode memory limit (base/memlimit.h). */
#include "base/avro.h"
#include "base/mem.h"
#include "base/memlimit.h"
#include "harness.h"
#include "memcount.h"

#include <zlib.h>

#define KiB ((uint64_t)1024)
#define MiB ((uint64_t)1024 * 1024)

/* The limit the tests run under: 1 MiB + 64 bytes per input byte. */
#define TEST_FLOOR MiB
#define TEST_PER_BYTE 64

static void put_long(hs_buf *b, int64_t v)
{
    if (hs_avro_put_long(b, v) != HS_OK)
        abort();
}

static void put_bytes(hs_buf *b, const void *p, size_t n)
{
    if (hs_avro_put_bytes(b, p, n) != HS_OK)
        abort();
}

static void puts_or_die(hs_buf *b, const char *s)
{
    if (hs_buf_puts(b, s) != HS_OK)
        abort();
}

/* Decodes one datum of `schema_json` from b; returns the status, leaves the
 * peak (above the level before) and the total bytes allocated in peak, total. */
static hs_status avro_decode_measured(const char *schema_json, const hs_buf *b, hs_avro_value *v,
                                      hs_arena *a, uint64_t *peak, uint64_t *total, hs_error *err)
{
    hs_arena sa = {0};
    hs_avro_schema *s;
    if (hs_avro_schema_parse(schema_json, strlen(schema_json), &sa, &s, err) != HS_OK)
        abort();
    uint64_t base = g_memcount.live;
    memcount_reset();
    size_t pos = 0;
    hs_status st = hs_avro_decode(s, b->data, b->len, &pos, a, v, err);
    *peak = memcount_peak_since(base);
    *total = g_memcount.total;
    if (st == HS_OK && pos != b->len)
        st = HS_INTERNAL;
    hs_arena_destroy(&sa);
    return st;
}

/* The limit itself: floor + per byte x input, saturating, settable. */
static void test_decode_limit_arithmetic(void)
{
    uint64_t f, pb;
    hs_decode_limit_get(&f, &pb);
    CHECK(f == TEST_FLOOR && pb == TEST_PER_BYTE);
    CHECK(hs_decode_limit(0) == TEST_FLOOR);
    CHECK(hs_decode_limit(1000) == TEST_FLOOR + 64000);
    CHECK(hs_decode_limit(UINT64_MAX / 2) == UINT64_MAX);
    hs_decode_budget b;
    hs_decode_budget_init(&b, 100);
    hs_error err = {0};
    CHECK(HS_DECODE_CHARGE(&b, TEST_FLOOR, &err, "thing") == HS_OK);
    CHECK(HS_DECODE_CHARGE(&b, 6400, &err, "thing") == HS_OK);
    CHECK(HS_DECODE_CHARGE(&b, 1, &err, "thing") == HS_CORRUPT);
    CHECK(strstr(err.msg, "thing") && strstr(err.msg, "decode memory limit"));
    CHECK(HS_DECODE_CHARGE(&b, UINT64_MAX, &err, "thing") == HS_CORRUPT);
}

/* An array of ints sent as one item per block: 2 bytes per item.  Growing
 * the item array once per block made this quadratic (an 8 KiB input asked
 * for 268 MB). */
static void test_avro_many_tiny_blocks(void)
{
    hs_buf b = {0};
    int64_t k = 4096;
    for (int64_t i = 0; i < k; i++) {
        put_long(&b, 1);
        put_long(&b, i % 50);
    }
    put_long(&b, 0);
    hs_arena a = {0};
    hs_avro_value v;
    hs_error err = {0};
    uint64_t peak, total;
    hs_status st = avro_decode_measured("{\"type\":\"array\",\"items\":\"int\"}", &b, &v, &a, &peak,
                                        &total, &err);
    CHECK(st == HS_OK);
    if (st == HS_OK) {
        REQUIRE(v.kind == HS_AVRO_ARRAY && v.u.arr.n == k);
        for (int64_t i = 0; i < k; i++)
            CHECK(v.u.arr.items[i].u.l == i % 50);
    }
    fprintf(stderr, "  avro array, %lld blocks of 1 item in %zu bytes: peak %llu, total %llu bytes\n",
            (long long)k, b.len, (unsigned long long)peak, (unsigned long long)total);
    CHECK(peak <= 64 * b.len + 64 * KiB);
    CHECK(total <= 128 * b.len + 64 * KiB);
    hs_arena_destroy(&a);
    hs_buf_free(&b);
}

/* The same for a map (3 bytes per entry: count, empty key, int). */
static void test_avro_map_tiny_blocks(void)
{
    hs_buf b = {0};
    int64_t k = 3000;
    for (int64_t i = 0; i < k; i++) {
        put_long(&b, 1);
        put_bytes(&b, "", 0);
        put_long(&b, 7);
    }
    put_long(&b, 0);
    hs_arena a = {0};
    hs_avro_value v;
    hs_error err = {0};
    uint64_t peak, total;
    hs_status st = avro_decode_measured("{\"type\":\"map\",\"values\":\"int\"}", &b, &v, &a, &peak,
                                        &total, &err);
    CHECK(st == HS_OK);
    if (st == HS_OK)
        CHECK(v.kind == HS_AVRO_MAP && v.u.map.n == k && v.u.map.vals[k - 1].u.l == 7);
    fprintf(stderr, "  avro map, %lld blocks of 1 entry in %zu bytes: peak %llu, total %llu bytes\n",
            (long long)k, b.len, (unsigned long long)peak, (unsigned long long)total);
    CHECK(peak <= 64 * b.len + 64 * KiB);
    CHECK(total <= 128 * b.len + 64 * KiB);
    hs_arena_destroy(&a);
    hs_buf_free(&b);
}

/* Nesting: an array of arrays, the outer and every inner one sent one item
 * per block, and 40 levels of arrays each holding one array. */
static void test_avro_nested_blocks(void)
{
    hs_buf b = {0};
    for (int outer = 0; outer < 300; outer++) {
        put_long(&b, 1);
        for (int i = 0; i < 10; i++) {
            put_long(&b, 1);
            put_long(&b, i);
        }
        put_long(&b, 0);
    }
    put_long(&b, 0);
    hs_arena a = {0};
    hs_avro_value v;
    hs_error err = {0};
    uint64_t peak, total;
    hs_status st = avro_decode_measured(
        "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":\"int\"}}", &b, &v, &a, &peak,
        &total, &err);
    CHECK(st == HS_OK);
    if (st == HS_OK)
        CHECK(v.u.arr.n == 300 && v.u.arr.items[299].u.arr.n == 10);
    CHECK(peak <= 64 * b.len + 64 * KiB);
    CHECK(total <= 128 * b.len + 64 * KiB);
    hs_arena_destroy(&a);
    hs_buf_free(&b);

    /* 40 levels deep, every level 200 one-item blocks of empty arrays and then the deeper one */
    hs_buf sj = {0};
    for (int d = 0; d < 40; d++)
        puts_or_die(&sj, "{\"type\":\"array\",\"items\":");
    puts_or_die(&sj, "\"int\"");
    for (int d = 0; d < 40; d++)
        puts_or_die(&sj, "}");
    const char *schema = (const char *)sj.data;
    hs_buf c = {0};
    for (int d = 0; d < 40; d++) {
        put_long(&c, 1);
    }
    put_long(&c, 5); /* the int at the bottom */
    for (int d = 0; d < 40; d++)
        put_long(&c, 0);
    hs_arena a2 = {0};
    st = avro_decode_measured(schema, &c, &v, &a2, &peak, &total, &err);
    CHECK(st == HS_OK);
    CHECK(peak <= 64 * c.len + 64 * KiB);
    hs_arena_destroy(&a2);
    hs_buf_free(&c);
    hs_buf_free(&sj);
}

/* Counts that claim more items than bytes remain are corrupt, before any
 * allocation of that size. */
static void test_avro_huge_counts(void)
{
    static const char *schemas[] = {"{\"type\":\"array\",\"items\":\"long\"}",
                                    "{\"type\":\"map\",\"values\":\"string\"}",
                                    "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":\"int\"}}"};
    for (int i = 0; i < 3; i++) {
        hs_buf b = {0};
        put_long(&b, (int64_t)1 << 40);
        put_long(&b, 1);
        hs_arena a = {0};
        hs_avro_value v;
        hs_error err = {0};
        uint64_t peak, total;
        CHECK(avro_decode_measured(schemas[i], &b, &v, &a, &peak, &total, &err) == HS_CORRUPT);
        CHECK(total <= 64 * KiB);
        /* negative count with a byte size past the end */
        hs_buf_reset(&b);
        put_long(&b, -((int64_t)1 << 40));
        put_long(&b, (int64_t)1 << 50);
        CHECK(avro_decode_measured(schemas[i], &b, &v, &a, &peak, &total, &err) == HS_CORRUPT);
        CHECK(total <= 64 * KiB);
        hs_arena_destroy(&a);
        hs_buf_free(&b);
    }
}

/* Items that take no bytes (null) cost nothing to send: 1,000,000 per
 * 3-byte block.  The decode must stop at the limit, not grow until the
 * machine runs out of memory. */
static void test_avro_zero_size_items(void)
{
    hs_buf b = {0};
    for (int i = 0; i < 2000; i++)
        put_long(&b, 1000000);
    put_long(&b, 0);
    hs_arena a = {0};
    hs_avro_value v;
    hs_error err = {0};
    uint64_t peak, total;
    hs_status st = avro_decode_measured("{\"type\":\"array\",\"items\":\"null\"}", &b, &v, &a, &peak,
                                        &total, &err);
    CHECK(st == HS_CORRUPT);
    fprintf(stderr, "  avro array of null, %zu bytes: %s; peak %llu, total %llu bytes\n", b.len,
            err.msg, (unsigned long long)peak, (unsigned long long)total);
    CHECK(strstr(err.msg, "limit") != NULL);
    CHECK(peak <= 4 * hs_decode_limit(b.len) + 64 * KiB);
    CHECK(total <= 4 * hs_decode_limit(b.len) + 64 * KiB);
    hs_arena_destroy(&a);

    /* a few zero-size items (under the limit) still decode */
    hs_buf_reset(&b);
    put_long(&b, 1000);
    put_long(&b, 0);
    hs_arena a2 = {0};
    st = avro_decode_measured("{\"type\":\"array\",\"items\":\"null\"}", &b, &v, &a2, &peak, &total,
                              &err);
    CHECK(st == HS_OK && v.u.arr.n == 1000);
    hs_arena_destroy(&a2);
    hs_buf_free(&b);
}

/* An Avro container: magic, header map, sync marker, then `blocks`. */
static void container_start(hs_buf *f, const char *schema, const char *codec, const uint8_t sync[16])
{
    if (hs_buf_append(f, "Obj\x01", 4) != HS_OK)
        abort();
    put_long(f, 2);
    put_bytes(f, "avro.schema", 11);
    put_bytes(f, schema, strlen(schema));
    put_bytes(f, "avro.codec", 10);
    put_bytes(f, codec, strlen(codec));
    put_long(f, 0);
    if (hs_buf_append(f, sync, 16) != HS_OK)
        abort();
}

/* Reads every record of a container, measured; returns the status. */
static hs_status avro_read_all(const hs_buf *f, int64_t *n_records, uint64_t *peak, uint64_t *total,
                               hs_error *err)
{
    uint64_t base = g_memcount.live;
    memcount_reset();
    hs_avro_reader *r;
    hs_arena a = {0};
    *n_records = 0;
    hs_status st = hs_avro_reader_open("hostile.avro", f->data, f->len, &r, err);
    while (st == HS_OK) {
        hs_avro_value v;
        bool done;
        st = hs_avro_reader_next(r, &a, &v, &done, err);
        if (st != HS_OK || done)
            break;
        (*n_records)++;
    }
    *peak = memcount_peak_since(base);
    *total = g_memcount.total;
    if (st == HS_OK || r)
        hs_avro_reader_close(st == HS_OK || r ? r : NULL);
    hs_arena_destroy(&a);
    hs_avro_schema_cache_clear();
    return st;
}

/* Records of an empty record type cost nothing to send; a file of such
 * blocks (20 bytes per 1,000,000 records) must stop at the limit. */
static void test_avro_container_zero_size_records(void)
{
    static const uint8_t sync[16] = "0123456789abcdef";
    hs_buf f = {0};
    container_start(&f, "{\"type\":\"record\",\"name\":\"e\",\"fields\":[]}", "null", sync);
    for (int i = 0; i < 400; i++) {
        put_long(&f, 1000000);
        put_long(&f, 0);
        if (hs_buf_append(&f, sync, 16) != HS_OK)
            abort();
    }
    int64_t n;
    uint64_t peak, total;
    hs_error err = {0};
    hs_status st = avro_read_all(&f, &n, &peak, &total, &err);
    fprintf(stderr, "  avro container of empty records, %zu bytes: %lld records, %s; peak %llu\n",
            f.len, (long long)n, err.msg, (unsigned long long)peak);
    CHECK(st == HS_CORRUPT);
    CHECK(strstr(err.msg, "limit") != NULL);
    CHECK(peak <= 4 * hs_decode_limit(f.len) + 64 * KiB);
    hs_buf_free(&f);
}

/* A deflate block of 32 MiB of zeros is 32 KiB on disk: inflating it is
 * refused past the limit instead of allocating the lot. */
static void test_avro_deflate_bomb(void)
{
    static const uint8_t sync[16] = "fedcba9876543210";
    size_t raw_len = 32 * MiB;
    uint8_t *zeros = calloc(1, raw_len);
    uLong cap = compressBound((uLong)raw_len);
    uint8_t *z = malloc(cap);
    REQUIRE(zeros && z);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = zeros;
    zs.avail_in = (uInt)raw_len;
    zs.next_out = z;
    zs.avail_out = (uInt)cap;
    REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t zlen = zs.total_out;
    deflateEnd(&zs);
    hs_buf f = {0};
    container_start(&f, "\"long\"", "deflate", sync);
    put_long(&f, (int64_t)raw_len);
    put_long(&f, (int64_t)zlen);
    if (hs_buf_append(&f, z, zlen) != HS_OK || hs_buf_append(&f, sync, 16) != HS_OK)
        abort();
    free(zeros);
    free(z);
    int64_t n;
    uint64_t peak, total;
    hs_error err = {0};
    hs_status st = avro_read_all(&f, &n, &peak, &total, &err);
    fprintf(stderr, "  avro deflate bomb, %zu bytes: %s; peak %llu\n", f.len, err.msg,
            (unsigned long long)peak);
    CHECK(st == HS_CORRUPT);
    CHECK(strstr(err.msg, "limit") != NULL);
    CHECK(peak <= 2 * hs_decode_limit(f.len) + 256 * KiB);
    hs_buf_free(&f);
}

int main(void)
{
    memcount_install();
    /* the environment sets the defaults (read once) */
    setenv("HS_DECODE_LIMIT_MB", "48", 1);
    setenv("HS_DECODE_LIMIT_PER_BYTE", "100", 1);
    CHECK(hs_decode_limit(10) == 48 * MiB + 1000);
    hs_decode_limit_set(TEST_FLOOR, TEST_PER_BYTE);
    HS_RUN(test_decode_limit_arithmetic);
    HS_RUN(test_avro_many_tiny_blocks);
    HS_RUN(test_avro_map_tiny_blocks);
    HS_RUN(test_avro_nested_blocks);
    HS_RUN(test_avro_huge_counts);
    HS_RUN(test_avro_zero_size_items);
    HS_RUN(test_avro_container_zero_size_records);
    HS_RUN(test_avro_deflate_bomb);
    return hs_test_summary();
}
