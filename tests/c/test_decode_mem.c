/* Memory of decoders of untrusted bytes, bounded against the input size.
 *
 * Every test feeds a decoder crafted hostile input (many tiny blocks, huge
 * claimed counts, deep nesting, zero-size items, compression bombs) and
 * measures through the allocation hook (memcount.h) the peak and the total
 * bytes the decode allocated; both must stay within a small multiple of the
 * input plus a constant, or the decode must fail with an error naming the
 * decode memory limit (base/memlimit.h). */
#include "base/avro.h"
#include "base/hash.h"
#include "base/mem.h"
#include "base/memlimit.h"
#include "harness.h"
#include "iceberg/manifest.h"
#include "iceberg/model.h"
#include "iceberg/puffin.h"
#include "index/registry.h"
#include "index/scalar/sidx.h"
#include "index/scalar/sidx_int.h"
#include "index/vector/hnsw.h"
#include "index/vector/vq.h"
#include "io/io.h"
#include "memcount.h"
#include "expr/pred.h"

#include <jansson.h>
#include <malloc.h>
#include <time.h>
#include <zstd.h>

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

/* hs_buf calls that cannot fail in a test (else abort). */
#define OK_OR_DIE(call)                \
    do {                               \
        if ((call) != HS_OK)           \
            abort();                   \
    } while (0)

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

/* A zstandard block of 32 MiB of zeros is a few hundred bytes on disk:
 * decompressing it is refused past the limit (of a file 32 times its size,
 * as compressed files count) instead of allocating the lot.  (Deflate cannot
 * expand more than 1032 times, which the allowance for compressed files
 * covers.) */
static void test_avro_zstd_bomb(void)
{
    static const uint8_t sync[16] = "fedcba9876543210";
    size_t raw_len = 32 * MiB;
    uint8_t *zeros = calloc(1, raw_len);
    size_t cap = ZSTD_compressBound(raw_len);
    uint8_t *z = malloc(cap);
    REQUIRE(zeros && z);
    size_t zlen = ZSTD_compress(z, cap, zeros, raw_len, 19);
    REQUIRE(!ZSTD_isError(zlen));
    hs_buf f = {0};
    container_start(&f, "\"long\"", "zstandard", sync);
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
    fprintf(stderr, "  avro zstandard bomb, %zu bytes: %s; peak %llu\n", f.len, err.msg,
            (unsigned long long)peak);
    CHECK(st == HS_CORRUPT);
    CHECK(strstr(err.msg, "limit") != NULL);
    CHECK(peak <= hs_decode_limit(32 * f.len) + 256 * KiB);
    hs_buf_free(&f);
}

/* Zstandard-compressed blocks of 1 MiB of zero bytes (a million longs 0
 * each, which decode without allocating), a few dozen bytes each on disk:
 * decompressing them all would be work without bound for a small file, so
 * the bytes decompressed by all blocks together count against the reader's
 * limit. */
static void test_avro_many_inflating_blocks(void)
{
    static const uint8_t sync[16] = "0011223344556677";
    size_t raw_len = MiB;
    uint8_t *zeros = calloc(1, raw_len);
    size_t cap = ZSTD_compressBound(raw_len);
    uint8_t *z = malloc(cap);
    REQUIRE(zeros && z);
    size_t zlen = ZSTD_compress(z, cap, zeros, raw_len, 19);
    REQUIRE(!ZSTD_isError(zlen));
    hs_buf f = {0};
    container_start(&f, "\"long\"", "zstandard", sync);
    int blocks = 40;
    for (int i = 0; i < blocks; i++) {
        put_long(&f, (int64_t)raw_len);
        put_long(&f, (int64_t)zlen);
        OK_OR_DIE(hs_buf_append(&f, z, zlen));
        OK_OR_DIE(hs_buf_append(&f, sync, 16));
    }
    free(zeros);
    free(z);
    int64_t n;
    uint64_t peak, total;
    hs_error err = {0};
    hs_status st = avro_read_all(&f, &n, &peak, &total, &err);
    fprintf(stderr, "  avro, %d zstandard blocks of 1 MiB, %zu bytes: %lld records, %s\n", blocks,
            f.len, (long long)n, err.msg);
    CHECK(st == HS_CORRUPT && strstr(err.msg, "limit"));
    CHECK((uint64_t)n <= hs_decode_limit(32 * f.len));
    CHECK(peak <= hs_decode_limit(32 * f.len) + 256 * KiB);
    hs_buf_free(&f);
}

/* ---- iceberg manifests ---- */

/* The repository root, from this file's path (CMake compiles it by absolute path). */
static const char *repo_file(const char *rel)
{
    static char path[1024];
    const char *me = __FILE__, *cut = strstr(me, "tests/c/test_decode_mem.c");
    snprintf(path, sizeof path, "%.*s%s", cut ? (int)(cut - me) : 0, me, rel);
    return path;
}

static bool read_whole(const char *path, hs_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    uint8_t chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (hs_buf_append(out, chunk, n) != HS_OK)
            abort();
    fclose(f);
    return true;
}

/* Encodes v like hs_avro_encode, but every array and map as blocks of one item. */
static void encode_tiny_blocks(const hs_avro_schema *s, const hs_avro_value *v, hs_buf *out)
{
    switch (s->kind) {
    case HS_AVRO_RECORD:
        for (int i = 0; i < s->n; i++)
            encode_tiny_blocks(s->fields[i].type, &v->u.arr.items[i], out);
        return;
    case HS_AVRO_UNION:
        put_long(out, v->branch);
        encode_tiny_blocks(s->branches[v->branch], v, out);
        return;
    case HS_AVRO_ARRAY:
        for (int64_t i = 0; i < v->u.arr.n; i++) {
            put_long(out, 1);
            encode_tiny_blocks(s->items, &v->u.arr.items[i], out);
        }
        put_long(out, 0);
        return;
    case HS_AVRO_MAP:
        for (int64_t i = 0; i < v->u.map.n; i++) {
            put_long(out, 1);
            put_bytes(out, v->u.map.keys[i].u.bytes.p, v->u.map.keys[i].u.bytes.len);
            encode_tiny_blocks(s->items, &v->u.map.vals[i], out);
        }
        put_long(out, 0);
        return;
    default:
        if (hs_avro_encode(s, v, out, NULL) != HS_OK)
            abort();
    }
}

/* A manifest written by pyiceberg, its first entry given 3000 column sizes
 * sent one per block: reading it stays linear in the file. */
static void test_manifest_tiny_blocks(void)
{
    hs_buf seed = {0};
    REQUIRE(read_whole(repo_file("tests/fuzz/seeds-fuzz_manifest/unpart_v2_manifest.avro"), &seed));
    hs_error err = {0};
    hs_avro_reader *r;
    CHECK_OK(hs_avro_reader_open("seed", seed.data, seed.len, &r, &err), &err);
    const hs_avro_schema *es = hs_avro_reader_schema(r);
    hs_arena a = {0};
    hs_avro_value v;
    bool done;
    CHECK_OK(hs_avro_reader_next(r, &a, &v, &done, &err), &err);
    REQUIRE(!done);
    int df = hs_avro_field_index(es, "data_file");
    REQUIRE(df >= 0);
    const hs_avro_schema *dfs = es->fields[df].type;
    int cs = hs_avro_field_index(dfs, "column_sizes");
    REQUIRE(cs >= 0 && dfs->fields[cs].type->kind == HS_AVRO_UNION);
    const hs_avro_schema *arr_s = dfs->fields[cs].type->branches[1];
    REQUIRE(arr_s->kind == HS_AVRO_ARRAY && arr_s->items->kind == HS_AVRO_RECORD);
    hs_avro_value *col = &v.u.arr.items[df].u.arr.items[cs];
    int64_t k = 3000;
    hs_avro_value *items = hs_avro_new_array(&a, HS_AVRO_ARRAY, k, col);
    REQUIRE(items);
    col->branch = 1;
    for (int64_t i = 0; i < k; i++) {
        hs_avro_value *kv = hs_avro_new_array(&a, HS_AVRO_RECORD, 2, &items[i]);
        REQUIRE(kv);
        kv[0] = hs_avro_long(i + 1);
        kv[1] = hs_avro_long(100);
    }
    hs_buf rec = {0};
    encode_tiny_blocks(es, &v, &rec);

    static const char *keys[] = {"schema", "partition-spec", "partition-spec-id", "format-version",
                                 "content"};
    const char *vals[5];
    int nm = 0;
    const char *mk[5];
    for (int i = 0; i < 5; i++)
        if ((vals[nm] = hs_avro_reader_meta(r, keys[i], NULL)) != NULL)
            mk[nm++] = keys[i];
    size_t sl;
    const char *sj = hs_avro_reader_meta(r, "avro.schema", &sl);
    char *schema_json = hs_strndup(sj, sl);
    hs_avro_writer *w;
    hs_buf file = {0};
    CHECK_OK(hs_avro_writer_open(schema_json, HS_AVRO_CODEC_NULL, mk, vals, nm, &w, &err), &err);
    CHECK_OK(hs_avro_writer_finish(w, &file, &err), &err);
    uint8_t sync[16];
    memcpy(sync, file.data + file.len - 16, 16);
    put_long(&file, 1);
    put_long(&file, (int64_t)rec.len);
    if (hs_buf_append(&file, rec.data, rec.len) != HS_OK || hs_buf_append(&file, sync, 16) != HS_OK)
        abort();
    hs_avro_reader_close(r);
    hs_arena_destroy(&a);
    hs_free(schema_json);
    hs_buf_free(&rec);
    hs_avro_schema_cache_clear();

    uint64_t base = g_memcount.live;
    memcount_reset();
    ice_manifest *m = NULL;
    hs_status st = ice_manifest_read_mem("tiny.avro", file.data, file.len, NULL, NULL, NULL, &m, &err);
    uint64_t peak = memcount_peak_since(base), total = g_memcount.total;
    fprintf(stderr, "  manifest, 3000 column sizes one per block, %zu bytes: %s; peak %llu, "
            "total %llu bytes\n", file.len, st == HS_OK ? "read" : err.msg,
            (unsigned long long)peak, (unsigned long long)total);
    CHECK(st == HS_OK);
    if (st == HS_OK)
        CHECK(m->n_entries == 1);
    CHECK(peak <= 64 * file.len + 256 * KiB);
    CHECK(total <= 128 * file.len + 256 * KiB);
    ice_manifest_free(m);
    hs_avro_schema_cache_clear();
    hs_buf_free(&file);
    hs_buf_free(&seed);
}

/* The other side of the limit: a large deflate-compressed manifest of
 * near-identical entries (as compressible as manifests get) reads under the
 * default limit. */
static void test_manifest_compressible_under_default_limit(void)
{
    hs_buf seed = {0};
    REQUIRE(read_whole(repo_file("tests/fuzz/seeds-fuzz_manifest/unpart_v2_manifest.avro"), &seed));
    hs_error err = {0};
    hs_avro_reader *r;
    CHECK_OK(hs_avro_reader_open("seed", seed.data, seed.len, &r, &err), &err);
    const hs_avro_schema *es = hs_avro_reader_schema(r);
    hs_arena a = {0};
    hs_avro_value v;
    bool done;
    CHECK_OK(hs_avro_reader_next(r, &a, &v, &done, &err), &err);
    REQUIRE(!done);
    int df = hs_avro_field_index(es, "data_file");
    int fp = hs_avro_field_index(es->fields[df].type, "file_path");
    REQUIRE(df >= 0 && fp >= 0);
    static const char *keys[] = {"schema", "partition-spec", "partition-spec-id", "format-version",
                                 "content"};
    const char *vals[5], *mk[5];
    int nm = 0;
    for (int i = 0; i < 5; i++)
        if ((vals[nm] = hs_avro_reader_meta(r, keys[i], NULL)) != NULL)
            mk[nm++] = keys[i];
    size_t sl;
    const char *sj = hs_avro_reader_meta(r, "avro.schema", &sl);
    char *schema_json = hs_strndup(sj, sl);
    hs_avro_writer *w;
    hs_buf file = {0};
    CHECK_OK(hs_avro_writer_open(schema_json, HS_AVRO_CODEC_DEFLATE, mk, vals, nm, &w, &err), &err);
    int n = 20000;
    for (int i = 0; i < n; i++) {
        char path[96];
        snprintf(path, sizeof path, "s3://bucket/warehouse/db/t/data/00000-0-%08d.parquet", i);
        v.u.arr.items[df].u.arr.items[fp] = hs_avro_str(path);
        CHECK_OK(hs_avro_writer_append(w, &v, &err), &err);
    }
    CHECK_OK(hs_avro_writer_finish(w, &file, &err), &err);
    hs_avro_reader_close(r);
    hs_arena_destroy(&a);
    hs_free(schema_json);
    hs_avro_schema_cache_clear();

    uint64_t floor, per_byte;
    hs_decode_limit_get(&floor, &per_byte);
    hs_decode_limit_set(64 * MiB, 128); /* the defaults */
    ice_manifest *m = NULL;
    uint64_t base = g_memcount.live;
    memcount_reset();
    hs_status st = ice_manifest_read_mem("big.avro", file.data, file.len, NULL, NULL, NULL, &m, &err);
    fprintf(stderr, "  deflated manifest of %d entries, %zu bytes: %s; peak %llu\n", n, file.len,
            st == HS_OK ? "read" : err.msg, (unsigned long long)memcount_peak_since(base));
    CHECK(st == HS_OK);
    if (st == HS_OK)
        CHECK(m->n_entries == n);
    ice_manifest_free(m);
    hs_decode_limit_set(floor, per_byte);
    hs_avro_schema_cache_clear();
    hs_buf_free(&file);
    hs_buf_free(&seed);
}

/* ---- scalar index sidecars ---- */

/* A range index of strings whose first block's header claims its values
 * inflate to 60 MiB: refused before that is allocated. */
static void test_sidx_range_claimed_size(void)
{
    hs_field schema, c;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&c, "c", HS_TYPE_STRING, true);
    c.field_id = 7;
    REQUIRE(hs_field_add_child(&schema, &c) == HS_OK);
    const hs_field *f = &schema.children[0];
    hs_column *col = NULL;
    hs_error err = {0};
    CHECK_OK(hs_col_create(f, 3000, &col, &err), &err);
    for (int i = 0; i < 3000; i++) {
        char t[32];
        int n = snprintf(t, sizeof t, "value-%06d", (i * 7919) % 3000);
        REQUIRE(hs_col_append_bytes(col, t, (size_t)n) == HS_OK);
    }
    sidx_builder *b = NULL;
    hs_buf img = {0};
    CHECK_OK(sidx_builder_new(SIDX_RANGE, f, 1000, &b, &err), &err);
    CHECK_OK(sidx_builder_add(b, col, 0, &err), &err);
    CHECK_OK(sidx_builder_finish(b, &img, NULL, &err), &err);
    sidx_builder_free(b);
    uint64_t s3;
    memcpy(&s3, img.data + 64 + 3 * 16, 8);
    REQUIRE(s3 + 16 < img.len);
    uint8_t *blk = img.data + s3;
    REQUIRE(blk[7] == 1); /* values zstd-compressed */
    uint32_t claim = 60u << 20;
    memcpy(blk + 12, &claim, 4);
    uint64_t sum = hs_xxh64(img.data, img.len - 12, 0);
    memcpy(img.data + img.len - 12, &sum, 8);

    pr_filter *flt = NULL;
    CHECK_OK(pr_filter_parse("c = 'value-000005'", &flt, &err), &err);
    CHECK_OK(pr_filter_bind(flt, &schema, &err), &err);
    uint64_t base = g_memcount.live;
    memcount_reset();
    sidx_index *ix = NULL;
    roaring_bitmap_t *bm = NULL;
    hs_status st = sidx_open(img.data, img.len, f, &ix, &err);
    if (st == HS_OK)
        st = sidx_lookup(ix, flt->root, &bm, &err);
    uint64_t peak = memcount_peak_since(base);
    fprintf(stderr, "  range index claiming 60 MiB of values, %zu bytes: %s; peak %llu\n", img.len,
            err.msg, (unsigned long long)peak);
    CHECK(st == HS_CORRUPT);
    CHECK(peak <= 8 * img.len + 256 * KiB);
    if (bm)
        roaring_bitmap_free(bm);
    sidx_close(ix);
    pr_filter_free(flt);
    hs_col_free(col);
    hs_buf_free(&img);
    hs_field_clear(&schema);
}

/* An inverted index's delta-packed posting list whose 128-delta blocks all
 * have width 0 takes no bytes per block but its header byte: 50 million rows
 * in ~390 KB asked for 200 MB of positions.  Charged to the decode limit. */
static void test_sidx_dp_zero_width_blocks(void)
{
    uint32_t cnt = 50u * 1000 * 1000;
    size_t nblk = (cnt - 1 + SIDX_DP_BLOCK - 1) / SIDX_DP_BLOCK, len = 12 + nblk + 8;
    uint8_t *p = calloc(1, len);
    REQUIRE(p);
    uint32_t hdr[3] = {SIDX_DP_TAG, cnt, 0};
    memcpy(p, hdr, sizeof hdr);   /* little-endian hosts (as the format) */
    hs_error err = {0};
    uint32_t *v = NULL;
    size_t n = 0;
    uint64_t base = g_memcount.live;
    memcount_reset();
    hs_status st = sidx_dp_decode(p, len, (uint64_t)cnt * 2, &v, &n, &err);
    uint64_t peak = memcount_peak_since(base);
    fprintf(stderr, "  %u-row delta-packed list in %zu bytes: %s; peak %llu\n", cnt, len,
            st == HS_OK ? "decoded" : err.msg, (unsigned long long)peak);
    CHECK(st == HS_CORRUPT && strstr(err.msg, "decode memory limit"));
    CHECK(peak <= 8 * len + 256 * KiB);
    hs_free(v);
    /* a short list of the same form still decodes (positions 0, 1, 2, ...) */
    uint32_t small[3] = {SIDX_DP_TAG, 300, 5};
    size_t sl = 12 + 3 + 8;
    uint8_t sp[32] = {0};
    memcpy(sp, small, sizeof small);
    hs_err_clear(&err);
    CHECK_OK(sidx_dp_decode(sp, sl, 1000, &v, &n, &err), &err);
    CHECK(n == 300 && v && v[0] == 5 && v[299] == 304);
    hs_free(v);
    free(p);
}

/* ---- vector index images ---- */

static void put_u32le(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* A product-quantizer blob of dimension 65536 and one centroid per subspace
 * (256 KiB) expands into 64 MiB of lookup tables: past the limit of its
 * size, refused before allocating. */
static void test_vq_pq_expansion(void)
{
    uint32_t d = 65536;
    size_t n = 40 + 4 * (size_t)d + 4;
    uint8_t *p = calloc(1, n);
    REQUIRE(p);
    memcpy(p, "HSVQ", 4);
    p[4] = 1;           /* version */
    p[6] = VQ_PQ;
    p[7] = HS_METRIC_L2;
    put_u32le(p + 8, d);
    put_u32le(p + 12, 1); /* code size = m */
    put_u32le(p + 32, 1); /* m */
    put_u32le(p + 36, 1); /* k */
    put_u32le(p + n - 4, hs_crc32(0, p, n - 4));
    uint64_t base = g_memcount.live;
    memcount_reset();
    vq *q = NULL;
    hs_error err = {0};
    hs_status st = vq_load(p, n, &q, &err);
    uint64_t peak = memcount_peak_since(base);
    fprintf(stderr, "  PQ blob d=65536 k=1, %zu bytes: %s; peak %llu\n", n, err.msg,
            (unsigned long long)peak);
    CHECK(st == HS_CORRUPT && strstr(err.msg, "limit"));
    CHECK(peak <= 4 * n + 64 * KiB);
    vq_free(q);
    free(p);
}

/* An HNSW image opens in memory linear in its size; a header that claims
 * 4 billion rows is refused before anything of that size is allocated. */
static void test_hnsw_image(void)
{
    size_t n = 1500, d = 16;
    float *x = malloc(n * d * sizeof *x);
    REQUIRE(x);
    for (size_t i = 0; i < n * d; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 100.0f;
    hnsw_params hp;
    memset(&hp, 0, sizeof hp);
    hp.M = 8;
    hp.ef_construction = 32;
    hp.n_threads = 1;
    hp.quant.type = VQ_FLAT;
    hp.metric = HS_METRIC_L2;
    hp.ivf_lists = 4;
    hnsw_index *ix = NULL;
    hs_error err = {0};
    CHECK_OK(hnsw_build(x, n, d, &hp, NULL, NULL, &ix, &err), &err);
    hs_buf img = {0};
    CHECK_OK(hnsw_save(ix, &img, &err), &err);
    hnsw_free(ix);
    free(x);

    uint64_t base = g_memcount.live;
    memcount_reset();
    ix = NULL;
    hs_status st = hnsw_open(img.data, img.len, &ix, &err);
    uint64_t peak = memcount_peak_since(base);
    fprintf(stderr, "  hnsw image (ivf, 1500 x 16), %zu bytes: peak %llu\n", img.len,
            (unsigned long long)peak);
    CHECK(st == HS_OK);
    CHECK(peak <= 2 * img.len + 64 * KiB);
    hnsw_free(ix);

    uint8_t *bad = malloc(img.len);
    REQUIRE(bad);
    memcpy(bad, img.data, img.len);
    uint64_t rows = 4000000000ull;
    memcpy(bad + 24, &rows, 8);
    uint64_t sum = hs_xxh64(bad, img.len - 8, 0);
    memcpy(bad + img.len - 8, &sum, 8);
    memcount_reset();
    ix = NULL;
    st = hnsw_open(bad, img.len, &ix, &err);
    CHECK(st == HS_CORRUPT && ix == NULL);
    CHECK(g_memcount.total <= 64 * KiB);
    free(bad);
    hs_buf_free(&img);
}

/* ---- JSON decoders: the index registry, table metadata, Puffin footers ---- */

/* A registry of n entries over distinct data files (and one duplicate key,
 * which replaces the earlier entry in its place). */
static void registry_json(hs_buf *b, int n)
{
    hs_buf_reset(b);
    if (hs_buf_puts(b, "{\"format-version\":1,\"declared\":[{\"column\":\"c\",\"field-id\":2,"
                       "\"kind\":\"inverted\"},{\"column\":\"c\",\"field-id\":2,\"kind\":"
                       "\"inverted\"}],\"entries\":[") != HS_OK)
        abort();
    for (int i = 0; i <= n; i++)
        if (hs_buf_printf(b, "%s{\"data-file\":\"/warehouse/db/table/data/00000-%d-0123456789.parquet\","
                          "\"data-file-size\":%d,\"field-id\":2,\"kind\":\"inverted\",\"index-file\":"
                          "\"index/%d.2.inverted\",\"index-file-size\":10,\"checksum\":"
                          "\"xxh64:0123456789abcdef\"}", i ? "," : "", i < n ? i : 0, i, i) != HS_OK)
            abort();
    if (hs_buf_puts(b, "]}") != HS_OK)
        abort();
}

static double registry_parse_cpu(const hs_buf *b)
{
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        ix_registry r = {0};
        clock_t t0 = clock();
        hs_status st = ix_registry_parse("r", (const char *)b->data, b->len, &r, NULL);
        double t = (double)(clock() - t0) / CLOCKS_PER_SEC;
        if (st != HS_OK)
            abort();
        ix_registry_clear(&r);
        if (t < best)
            best = t;
    }
    return best;
}

static void test_registry(void)
{
    hs_buf b = {0};
    registry_json(&b, 6000);
    uint64_t base = g_memcount.live;
    memcount_reset();
    ix_registry r = {0};
    hs_error err = {0};
    hs_status st = ix_registry_parse("r", (const char *)b.data, b.len, &r, &err);
    uint64_t peak = memcount_peak_since(base);
    fprintf(stderr, "  registry of 6000 entries, %zu bytes: peak %llu, total %llu\n", b.len,
            (unsigned long long)peak, (unsigned long long)g_memcount.total);
    CHECK(st == HS_OK);
    CHECK(r.n_decls == 1 && r.n_entries == 6000);
    if (r.n_entries == 6000)  /* the duplicate replaced entry 0 in its place */
        CHECK(r.entries[0].data_file_size == 6000 && r.entries[1].data_file_size == 1);
    CHECK(peak <= 64 * b.len + 1 * MiB);
    ix_registry_clear(&r);

    /* Parsing is linear: 4 times the entries take well under 16 times the CPU
     * (a linear search per entry made it quadratic: 24,000 entries took 20
     * times as long as 6,000). */
    double t1 = registry_parse_cpu(&b);
    registry_json(&b, 24000);
    double t4 = registry_parse_cpu(&b);
    fprintf(stderr, "  registry parse: 6000 entries %.4f s, 24000 entries %.4f s\n", t1, t4);
    CHECK(t4 < 10 * t1 + 0.02);
    hs_buf_free(&b);
}

/* Table metadata with 20,000 snapshot-log and metadata-log entries and
 * 5,000 properties.  Growing each array by one element per entry (and
 * searching the properties for each new key) made the bytes allocated
 * quadratic: 6.6 GB asked for over the parse of 2 MB. */
static void test_metadata_json(void)
{
    hs_buf seed = {0}, b = {0};
    REQUIRE(read_whole(repo_file("tests/fuzz/seeds-fuzz_metadata/v2.metadata.json"), &seed));
    if (hs_buf_append_byte(&seed, 0) != HS_OK)
        abort();
    const char *text = (const char *)seed.data;
    const char *props = strstr(text, "\"properties\":{}");
    const char *cut = strstr(text, "\"snapshot-log\"");
    REQUIRE(props && cut && props < cut);
    OK_OR_DIE(hs_buf_append(&b, text, (size_t)(props - text)));
    OK_OR_DIE(hs_buf_puts(&b, "\"properties\":{"));
    for (int i = 0; i < 5000; i++)
        OK_OR_DIE(hs_buf_printf(&b, "%s\"key.%d\":\"%d\"", i ? "," : "", i, i));
    OK_OR_DIE(hs_buf_puts(&b, "}"));
    const char *after = props + strlen("\"properties\":{}");
    OK_OR_DIE(hs_buf_append(&b, after, (size_t)(cut - after)));
    int n = 20000;
    OK_OR_DIE(hs_buf_puts(&b, "\"snapshot-log\":["));
    for (int i = 0; i < n; i++)
        OK_OR_DIE(hs_buf_printf(&b, "%s{\"timestamp-ms\":%d,\"snapshot-id\":%d}", i ? "," : "", i, i));
    OK_OR_DIE(hs_buf_puts(&b, "],\"metadata-log\":["));
    for (int i = 0; i < n; i++)
        OK_OR_DIE(hs_buf_printf(&b, "%s{\"timestamp-ms\":%d,\"metadata-file\":\"m/v%d.json\"}",
                            i ? "," : "", i, i));
    OK_OR_DIE(hs_buf_puts(&b, "]}"));
    uint64_t base = g_memcount.live;
    memcount_reset();
    ice_table_metadata m;
    memset(&m, 0, sizeof m);
    hs_error err = {0};
    hs_status st = ice_metadata_parse((const char *)b.data, b.len, &m, &err);
    uint64_t peak = memcount_peak_since(base);
    uint64_t total = g_memcount.total;
    fprintf(stderr, "  metadata with %d log entries, %zu bytes: %s; peak %llu, total %llu\n", n,
            b.len, st == HS_OK ? "parsed" : err.msg, (unsigned long long)peak,
            (unsigned long long)total);
    CHECK(st == HS_OK);
    if (st == HS_OK)
        CHECK(m.n_snapshot_log == n && m.n_metadata_log == n && m.properties.n == 5000 &&
              strcmp(ice_kv_get(&m.properties, "key.4321"), "4321") == 0);
    CHECK(peak <= 64 * b.len + 1 * MiB);
    CHECK(total <= 64 * b.len + 1 * MiB);
    ice_metadata_free(&m);
    hs_buf_free(&seed);
    hs_buf_free(&b);
}

/* A Puffin footer listing 3000 blobs of 20 fields each. */
static void test_puffin_footer(void)
{
    hs_buf b = {0}, footer = {0};
    OK_OR_DIE(hs_buf_puts(&footer, "{\"blobs\":["));
    for (int i = 0; i < 3000; i++) {
        OK_OR_DIE(hs_buf_printf(&footer, "%s{\"type\":\"deletion-vector-v1\",\"fields\":[", i ? "," : ""));
        for (int j = 0; j < 20; j++)
            OK_OR_DIE(hs_buf_printf(&footer, "%s%d", j ? "," : "", j));
        OK_OR_DIE(hs_buf_puts(&footer, "],\"snapshot-id\":-1,\"sequence-number\":-1,\"offset\":4,"
                                   "\"length\":0,\"properties\":{\"k\":\"v\"}}"));
    }
    OK_OR_DIE(hs_buf_puts(&footer, "],\"properties\":{}}"));
    OK_OR_DIE(hs_buf_append(&b, "PFA1PFA1", 8));
    OK_OR_DIE(hs_buf_append(&b, footer.data, footer.len));
    uint32_t tail[2] = {(uint32_t)footer.len, 0};
    OK_OR_DIE(hs_buf_append(&b, tail, 8));
    OK_OR_DIE(hs_buf_append(&b, "PFA1", 4));
    hs_file *f = NULL;
    hs_error err = {0};
    CHECK_OK(hs_mem_open("footer.puffin", b.data, b.len, false, &f, &err), &err);
    uint64_t base = g_memcount.live;
    memcount_reset();
    hs_arena a = {0};
    ice_puffin_footer ft;
    hs_status st = ice_puffin_read_footer(f, &a, &ft, &err);
    uint64_t peak = memcount_peak_since(base);
    fprintf(stderr, "  puffin footer of 3000 blobs, %zu bytes: %s; peak %llu\n", b.len,
            st == HS_OK ? "read" : err.msg, (unsigned long long)peak);
    CHECK(st == HS_OK);
    if (st == HS_OK)
        CHECK(ft.n_blobs == 3000);
    CHECK(peak <= 64 * b.len + 1 * MiB);
    hs_arena_destroy(&a);
    hs_file_close(f);
    hs_buf_free(&b);
    hs_buf_free(&footer);
}

/* jansson allocates through these, so the JSON decoders are measured too.
 * Plain malloc blocks (the library frees some jansson strings with free()),
 * sized by malloc_usable_size; such a free() is not seen, which only
 * overstates the peak. */
static void *json_counted_malloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        memcount_add(malloc_usable_size(p));
    return p;
}

static void json_counted_free(void *p)
{
    if (p)
        g_memcount.live -= malloc_usable_size(p);
    free(p);
}

int main(void)
{
    memcount_install();
    json_set_alloc_funcs(json_counted_malloc, json_counted_free);
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
    HS_RUN(test_avro_zstd_bomb);
    HS_RUN(test_avro_many_inflating_blocks);
    HS_RUN(test_manifest_tiny_blocks);
    HS_RUN(test_manifest_compressible_under_default_limit);
    HS_RUN(test_sidx_range_claimed_size);
    HS_RUN(test_sidx_dp_zero_width_blocks);
    HS_RUN(test_vq_pq_expansion);
    HS_RUN(test_hnsw_image);
    HS_RUN(test_registry);
    HS_RUN(test_metadata_json);
    HS_RUN(test_puffin_footer);
    return hs_test_summary();
}
