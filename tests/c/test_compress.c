/*
 * tests/c/test_compress.c - block codecs: round trips, independent oracles,
 * hostile input.
 *
 * Oracles: tests/c/data/codec_plain.* were written by Python's gzip module
 * and pyarrow's codecs (tests/c/data/gen_codec_fixtures.py), the Hadoop LZ4
 * file framed by hand around pyarrow lz4_raw blocks.  Decoding them must give
 * codec_plain.bin byte for byte.
 */
#include "base/compress.h"
#include "base/mem.h"
#include "base/threadpool.h"
#include "harness.h"

#include <stdint.h>

static const hs_codec all_codecs[] = { HS_CODEC_NONE,   HS_CODEC_SNAPPY,     HS_CODEC_GZIP,
                                       HS_CODEC_BROTLI, HS_CODEC_LZ4_HADOOP, HS_CODEC_ZSTD,
                                       HS_CODEC_LZ4_RAW };
#define N_CODECS (sizeof all_codecs / sizeof all_codecs[0])

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random bytes (incompressible) or, when `text`, a compressible mix. */
static void fill(uint8_t *p, size_t n, int text)
{
    static const char *words[] = { "parquet ", "iceberg ", "snapshot ", "manifest ",
                                   "column ", "page ", "42 ", "\n" };
    size_t i = 0;
    while (i < n) {
        if (!text) {
            p[i++] = (uint8_t)next_rand();
            continue;
        }
        for (const char *w = words[next_rand() % 8]; *w && i < n; w++)
            p[i++] = (uint8_t)*w;
    }
}

/* Reads tests/c/data/<name>, located next to this source file. */
static uint8_t *read_fixture(const char *name, size_t *len)
{
    char path[4096];
    const char *env = getenv("HS_TEST_C_DATA");
    if (env && *env) {
        snprintf(path, sizeof path, "%s/%s", env, name);
    } else {
        const char *f = __FILE__;
        const char *slash = strrchr(f, '/');
        int dir_len = slash ? (int)(slash - f) : 0;
        snprintf(path, sizeof path, "%.*s%sdata/%s", dir_len, f, slash ? "/" : "", name);
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open fixture %s\n", path);
        return NULL;
    }
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *d = malloc(n > 0 ? (size_t)n : 1);
    if (fread(d, 1, (size_t)n, fp) != (size_t)n) {
        free(d);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    *len = (size_t)n;
    return d;
}

static void test_names(void)
{
    hs_codec c;
    hs_error err = { 0 };
    CHECK_OK(hs_codec_parse("ZSTD", &c, &err), &err);
    CHECK(c == HS_CODEC_ZSTD);
    CHECK_OK(hs_codec_parse("uncompressed", &c, &err), &err);
    CHECK(c == HS_CODEC_NONE);
    CHECK_OK(hs_codec_parse("lz4", &c, &err), &err);
    CHECK(c == HS_CODEC_LZ4_RAW);
    CHECK_OK(hs_codec_parse("Snappy", &c, &err), &err);
    CHECK(c == HS_CODEC_SNAPPY);
    CHECK(hs_codec_parse("rar", &c, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "rar") != NULL);
    for (size_t i = 0; i < N_CODECS; i++) {
        hs_error e2 = { 0 };
        hs_codec back;
        CHECK(hs_codec_parse(hs_codec_name(all_codecs[i]), &back, &e2) == HS_OK);
        CHECK(back == all_codecs[i]);
    }
    CHECK(strcmp(hs_codec_name(HS_CODEC_GZIP), "gzip") == 0);
}

static void test_round_trip(void)
{
    static const size_t sizes[] = { 0, 1, 7, 100, 4096, 65549, 1 << 20 };
    size_t max = 1 << 20;
    uint8_t *src = malloc(max), *out = malloc(max + 1);
    hs_buf comp = { 0 };
    int64_t live0 = hs_mem_live_count();
    for (int text = 0; text < 2; text++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t n = sizes[s];
            fill(src, n, text);
            for (size_t c = 0; c < N_CODECS; c++) {
                hs_error err = { 0 };
                hs_buf_reset(&comp);
                CHECK_OK(hs_buf_append(&comp, "pfx", 3), &err); /* appends after existing bytes */
                CHECK_OK(hs_compress(all_codecs[c], 0, src, n, &comp, &err), &err);
                CHECK(memcmp(comp.data, "pfx", 3) == 0);
                out[n] = 0xAB;
                hs_status st = hs_decompress(all_codecs[c], comp.data + 3, comp.len - 3, out, n, &err);
                if (st != HS_OK)
                    fprintf(stderr, "%s size %zu: %s\n", hs_codec_name(all_codecs[c]), n, err.msg);
                CHECK(st == HS_OK);
                CHECK(n == 0 || memcmp(out, src, n) == 0);
                CHECK(out[n] == 0xAB); /* nothing written past dst_len */
                if (text && n >= 4096 && all_codecs[c] != HS_CODEC_NONE)
                    CHECK(comp.len - 3 < n / 2);
            }
        }
    }
    /* Explicit levels. */
    fill(src, 10000, 1);
    const hs_codec leveled[] = { HS_CODEC_GZIP, HS_CODEC_ZSTD, HS_CODEC_BROTLI };
    const int levels[] = { 1, 3, 9, 11 };
    for (size_t c = 0; c < 3; c++) {
        for (size_t l = 0; l < 4; l++) {
            hs_error err = { 0 };
            hs_buf_reset(&comp);
            CHECK_OK(hs_compress(leveled[c], levels[l], src, 10000, &comp, &err), &err);
            CHECK_OK(hs_decompress(leveled[c], comp.data, comp.len, out, 10000, &err), &err);
            CHECK(memcmp(out, src, 10000) == 0);
        }
    }
    hs_buf_free(&comp);
    CHECK(hs_mem_live_count() == live0);
    free(src);
    free(out);
}

static void test_zero_length_null(void)
{
    hs_buf comp = { 0 };
    for (size_t c = 0; c < N_CODECS; c++) {
        hs_error err = { 0 };
        hs_buf_reset(&comp);
        CHECK_OK(hs_compress(all_codecs[c], 0, NULL, 0, &comp, &err), &err);
        CHECK_OK(hs_decompress(all_codecs[c], comp.data, comp.len, NULL, 0, &err), &err);
        /* Empty input claiming a non-empty output is corrupt (except lz4_hadoop/raw fall back too). */
        uint8_t out[16];
        hs_error e2 = { 0 };
        CHECK(hs_decompress(all_codecs[c], NULL, 0, out, 16, &e2) == HS_CORRUPT);
        CHECK(e2.code == HS_CORRUPT && e2.msg[0] != 0 && e2.src_file != NULL);
    }
    uint8_t one[1] = { 0 };
    CHECK(hs_decompress(HS_CODEC_ZSTD, one, 1, NULL, 100, NULL) == HS_INVALID);
    CHECK(hs_decompress(HS_CODEC_ZSTD, NULL, 5, one, 1, NULL) == HS_INVALID);
    CHECK(hs_compress(HS_CODEC_ZSTD, 0, NULL, 5, &comp, NULL) == HS_INVALID);
    hs_buf_free(&comp);
}

static void test_lzo_unsupported(void)
{
    hs_buf comp = { 0 };
    hs_error err = { 0 };
    uint8_t b[4] = { 1, 2, 3, 4 };
    CHECK(hs_compress(HS_CODEC_LZO, 0, b, 4, &comp, &err) == HS_UNSUPPORTED);
    hs_err_clear(&err);
    CHECK(hs_decompress(HS_CODEC_LZO, b, 4, b, 4, &err) == HS_UNSUPPORTED);
    CHECK(strstr(err.msg, "lzo") != NULL);
    CHECK(hs_decompress((hs_codec)99, b, 4, b, 4, NULL) == HS_INVALID);
    hs_buf_free(&comp);
}

static void test_oracle_fixtures(void)
{
    static const struct { const char *file; hs_codec codec; } fx[] = {
        { "codec_plain.gz", HS_CODEC_GZIP },        /* two concatenated gzip members */
        { "codec_plain.snappy", HS_CODEC_SNAPPY },
        { "codec_plain.zst", HS_CODEC_ZSTD },
        { "codec_plain.br", HS_CODEC_BROTLI },
        { "codec_plain.lz4raw", HS_CODEC_LZ4_RAW },
        { "codec_plain.lz4hadoop", HS_CODEC_LZ4_HADOOP }, /* two Hadoop frames */
        { "codec_plain.lz4raw", HS_CODEC_LZ4_HADOOP },    /* fallback: a raw block */
    };
    size_t plain_len;
    uint8_t *plain = read_fixture("codec_plain.bin", &plain_len);
    REQUIRE(plain != NULL);
    REQUIRE(plain_len == 2760);
    uint8_t *out = malloc(plain_len + 1);
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        size_t n;
        uint8_t *comp = read_fixture(fx[i].file, &n);
        CHECK(comp != NULL);
        if (!comp)
            continue;
        hs_error err = { 0 };
        memset(out, 0, plain_len);
        hs_status st = hs_decompress(fx[i].codec, comp, n, out, plain_len, &err);
        if (st != HS_OK)
            fprintf(stderr, "%s: %s\n", fx[i].file, err.msg);
        CHECK(st == HS_OK);
        CHECK(memcmp(out, plain, plain_len) == 0);
        /* One byte less or more than the true size is corrupt, with a message. */
        hs_error e1 = { 0 }, e2 = { 0 };
        CHECK(hs_decompress(fx[i].codec, comp, n, out, plain_len - 1, &e1) == HS_CORRUPT);
        CHECK(hs_decompress(fx[i].codec, comp, n, out, plain_len + 1, &e2) == HS_CORRUPT);
        CHECK(strstr(e2.msg, "2761") != NULL || strstr(e2.msg, "2760") != NULL);
        free(comp);
    }
    /* The snappy mismatch is detected from its length header, before decoding. */
    size_t n;
    uint8_t *snappy = read_fixture("codec_plain.snappy", &n);
    if (snappy) {
        hs_error err = { 0 };
        CHECK(hs_decompress(HS_CODEC_SNAPPY, snappy, n, out, 120, &err) == HS_CORRUPT);
        CHECK(strstr(err.msg, "snappy") && strstr(err.msg, "2760") && strstr(err.msg, "120"));
        free(snappy);
    }
    free(out);
    free(plain);
}

/* Every truncation and a few thousand byte flips: errors, never crashes
 * (ASan/UBSan builds check the "never"). */
static void test_hostile_input(void)
{
    size_t n = 3000;
    uint8_t *src = malloc(n), *out = malloc(n);
    fill(src, n, 1);
    hs_buf comp = { 0 };
    int64_t live0 = hs_mem_live_count();
    for (size_t c = 1; c < N_CODECS; c++) {
        hs_error err = { 0 };
        hs_buf_reset(&comp);
        CHECK_OK(hs_compress(all_codecs[c], 0, src, n, &comp, &err), &err);
        for (size_t cut = 0; cut < comp.len; cut += (cut < 64 ? 1 : 7)) {
            hs_error e = { 0 };
            hs_status st = hs_decompress(all_codecs[c], comp.data, cut, out, n, &e);
            CHECK(st == HS_CORRUPT);
            if (st != HS_CORRUPT)
                fprintf(stderr, "%s truncated to %zu: status %d\n",
                        hs_codec_name(all_codecs[c]), cut, (int)st);
        }
        uint8_t *copy = malloc(comp.len);
        for (int trial = 0; trial < 300; trial++) {
            memcpy(copy, comp.data, comp.len);
            int flips = 1 + (int)(next_rand() % 4);
            for (int k = 0; k < flips; k++)
                copy[next_rand() % comp.len] ^= (uint8_t)(1u << (next_rand() % 8));
            hs_status st = hs_decompress(all_codecs[c], copy, comp.len, out, n, NULL);
            CHECK(st == HS_OK || st == HS_CORRUPT);
        }
        /* Pure garbage, with a dst much larger than the input could ever fill. */
        for (int trial = 0; trial < 50; trial++) {
            fill(copy, comp.len, 0);
            hs_status st = hs_decompress(all_codecs[c], copy, comp.len, out, n, NULL);
            CHECK(st == HS_OK || st == HS_CORRUPT);
        }
        free(copy);
    }
    hs_buf_free(&comp);
    CHECK(hs_mem_live_count() == live0);
    free(src);
    free(out);
}

/* Out-of-memory inside zlib (its state goes through the hook) is HS_NOMEM, no leak. */
static void test_gzip_oom(void)
{
    uint8_t src[5000], out[5000];
    fill(src, sizeof src, 1);
    hs_buf comp = { 0 };
    hs_error err = { 0 };
    CHECK_OK(hs_compress(HS_CODEC_GZIP, 0, src, sizeof src, &comp, &err), &err);
    int64_t live0 = hs_mem_live_count();
    int saw_nomem = 0, saw_ok = 0;
    for (int k = 1; k < 20 && !saw_ok; k++) {
        hs_buf tmp = { 0 };
        hs_error e = { 0 };
        hs_mem_fail_after(k);
        hs_status st1 = hs_compress(HS_CODEC_GZIP, 0, src, sizeof src, &tmp, &e);
        hs_error e2 = { 0 };
        hs_status st2 = hs_decompress(HS_CODEC_GZIP, comp.data, comp.len, out, sizeof out, &e2);
        hs_mem_fail_after(0);
        CHECK(st1 == HS_OK || st1 == HS_NOMEM);
        CHECK(st2 == HS_OK || st2 == HS_NOMEM);
        saw_nomem += st1 == HS_NOMEM || st2 == HS_NOMEM;
        saw_ok = st1 == HS_OK && st2 == HS_OK;
        hs_buf_free(&tmp);
        CHECK(hs_mem_live_count() == live0);
    }
    CHECK(saw_nomem > 0);
    CHECK(saw_ok);
    hs_buf_free(&comp);
}

/* A hand-built Hadoop frame with a lying size falls back to raw and then fails. */
static void test_lz4_hadoop_framing(void)
{
    uint8_t src[2000], out[2000];
    fill(src, sizeof src, 1);
    hs_buf comp = { 0 };
    hs_error err = { 0 };
    CHECK_OK(hs_compress(HS_CODEC_LZ4_HADOOP, 0, src, sizeof src, &comp, &err), &err);
    CHECK(comp.len > 8);
    CHECK(comp.data[0] == 0 && comp.data[1] == 0 && comp.data[2] == 0x07 && comp.data[3] == 0xD0);
    uint32_t csize = (uint32_t)comp.data[4] << 24 | (uint32_t)comp.data[5] << 16 |
                     (uint32_t)comp.data[6] << 8 | comp.data[7];
    CHECK(csize == comp.len - 8);
    comp.data[7] ^= 1;  /* compressed size off by one */
    CHECK(hs_decompress(HS_CODEC_LZ4_HADOOP, comp.data, comp.len, out, sizeof out, &err) ==
          HS_CORRUPT);
    CHECK(strstr(err.msg, "lz4_hadoop") != NULL);
    hs_buf_free(&comp);
}

/* zstd keeps per-thread contexts: use them from pool workers (whose contexts
 * are freed when the threads exit; LeakSanitizer checks). */
static hs_status zstd_task(void *arg, hs_error *err)
{
    int seed = (int)(intptr_t)arg;
    uint8_t src[20000], out[20000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)((i / (size_t)(seed + 3)) * 31);
    hs_buf comp = { 0 };
    hs_status st = hs_compress(HS_CODEC_ZSTD, 0, src, sizeof src, &comp, err);
    if (st == HS_OK)
        st = hs_decompress(HS_CODEC_ZSTD, comp.data, comp.len, out, sizeof out, err);
    if (st == HS_OK && memcmp(src, out, sizeof src) != 0)
        st = hs_err_set(err, HS_INTERNAL, "zstd round trip %d differs", seed);
    hs_buf_free(&comp);
    return st;
}

static void test_threads(void)
{
    hs_error err = { 0 };
    hs_pool *p;
    hs_group *g;
    CHECK_OK(hs_pool_create(3, &p, &err), &err);
    CHECK_OK(hs_group_create(p, &g, &err), &err);
    for (int i = 0; i < 24; i++)
        CHECK_OK(hs_group_submit(g, zstd_task, (void *)(intptr_t)i), &err);
    CHECK_OK(hs_group_wait(g, &err), &err);
    hs_group_destroy(g);
    hs_pool_destroy(p);
}

int main(void)
{
    HS_RUN(test_names);
    HS_RUN(test_round_trip);
    HS_RUN(test_zero_length_null);
    HS_RUN(test_lzo_unsupported);
    HS_RUN(test_oracle_fixtures);
    HS_RUN(test_hostile_input);
    HS_RUN(test_gzip_oom);
    HS_RUN(test_lz4_hadoop_framing);
    HS_RUN(test_threads);
    return hs_test_summary();
}
