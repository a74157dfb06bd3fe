/*
 * tests/c/test_parquet_encoding.c - Parquet value and level encodings.
 *
 * Known byte vectors from the Parquet spec (Encodings.md) pin the formats;
 * round trips cover every encoding x type with random data and edge cases
 * (n = 0, 1, 7, 8, 9, 1000, 100000; all-equal; INT64_MIN/MAX; empty strings);
 * corrupt inputs must fail with HS_CORRUPT, never crash.  Fixtures written by
 * pyarrow (tests/c/data/encoding/, see tests/python/test_encoding_oracle.py)
 * are the independent oracle for the encoders' byte format.
 */
#include "harness.h"

#include "base/buf.h"
#include "base/mem.h"
#include "parquet/encoding.h"

#include <stdint.h>

/* Error pointer for CHECK_OK (a call, so the harness's NULL test does not warn). */
static hs_error *E(hs_error *e) { return e; }

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static const int64_t sizes[] = {0, 1, 7, 8, 9, 1000, 100000};
#define N_SIZES (int)(sizeof sizes / sizeof sizes[0])

/* Fills v with values < 2^bw in one of several patterns. */
static void fill_u32(uint32_t *v, int64_t n, int bw, int pattern)
{
    uint64_t m = bw >= 32 ? 0xffffffffULL : ((1ULL << bw) - 1);
    int64_t i = 0;
    while (i < n) {
        uint32_t x = (uint32_t)(rnd() & m);
        int64_t run = 1;
        if (pattern == 1)
            run = (int64_t)(rnd() % 20) + 1;     /* short and long runs mixed */
        else if (pattern == 2)
            run = n;                             /* all equal */
        else if (pattern == 3)
            run = (rnd() % 4 == 0) ? 8 + (int64_t)(rnd() % 5) : 1;
        for (int64_t k = 0; k < run && i < n; k++)
            v[i++] = x;
    }
}

static void test_bit_width(void)
{
    CHECK(pq_bit_width(0) == 0);
    CHECK(pq_bit_width(1) == 1);
    CHECK(pq_bit_width(2) == 2);
    CHECK(pq_bit_width(255) == 8);
    CHECK(pq_bit_width(256) == 9);
    CHECK(pq_bit_width(UINT64_MAX) == 64);
    CHECK(pq_ptype_width(PQ_INT96, 0) == 12);
    CHECK(pq_ptype_width(PQ_FIXED_LEN_BYTE_ARRAY, 5) == 5);
    CHECK(pq_ptype_width(PQ_BYTE_ARRAY, 0) == 0);
}

/* Encodings.md: values 0..7 with bit width 3. */
static void test_hybrid_spec_vectors(void)
{
    hs_error err = {0};
    const uint8_t bp[] = {0x03, 0x88, 0xC6, 0xFA};       /* one bit-packed group */
    uint32_t out[8];
    pq_rle_decoder d;
    pq_rle_init(&d, bp, sizeof bp, 3);
    CHECK_OK(pq_rle_get_u32(&d, out, 8, &err), E(&err));
    for (int i = 0; i < 8; i++)
        CHECK(out[i] == (uint32_t)i);
    /* RLE run of 5 fours, then bit-packed 0..7, read in odd chunks */
    const uint8_t mix[] = {0x0A, 0x04, 0x03, 0x88, 0xC6, 0xFA};
    uint16_t o16[13];
    pq_rle_init(&d, mix, sizeof mix, 3);
    CHECK_OK(pq_rle_get_u16(&d, o16, 3, &err), E(&err));
    CHECK_OK(pq_rle_get_u16(&d, o16 + 3, 4, &err), E(&err));
    CHECK_OK(pq_rle_get_u16(&d, o16 + 7, 6, &err), E(&err));
    for (int i = 0; i < 5; i++)
        CHECK(o16[i] == 4);
    for (int i = 0; i < 8; i++)
        CHECK(o16[5 + i] == i);
    uint8_t o8[13];
    pq_rle_init(&d, mix, sizeof mix, 3);
    CHECK_OK(pq_rle_get_u8(&d, o8, 6, &err), E(&err));
    CHECK_OK(pq_rle_get_u8(&d, o8 + 6, 7, &err), E(&err));
    CHECK(o8[4] == 4 && o8[5] == 0 && o8[12] == 7);
    pq_rle_init(&d, mix, sizeof mix, 9); /* u8 takes bit widths up to 8 */
    CHECK(pq_rle_get_u8(&d, o8, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* our encoder produces the same bytes for 0..7 */
    uint32_t v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    hs_buf b = {0};
    CHECK_OK(pq_rle_encode_u32(v, 8, 3, &b), E(NULL));
    CHECK(b.len == 4 && memcmp(b.data, bp, 4) == 0);
    /* deprecated BIT_PACKED levels, MSB first: 0..7 -> 05 39 77 */
    const uint8_t msb[] = {0x05, 0x39, 0x77};
    size_t used = 0;
    CHECK_OK(pq_levels_decode(PQ_ENC_BIT_PACKED, false, msb, sizeof msb, 7, 8, o16, &used, &err),
             E(&err));
    CHECK(used == 3);
    for (int i = 0; i < 8; i++)
        CHECK(o16[i] == i);
    hs_buf_free(&b);
}

static void test_hybrid_roundtrip(void)
{
    static const int widths[] = {0, 1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 24, 31, 32};
    uint32_t *v = hs_malloc(100000 * sizeof *v), *o = hs_malloc(100000 * sizeof *o);
    REQUIRE(v && o);
    hs_buf b = {0};
    hs_error err = {0};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        int bw = widths[w];
        for (int s = 0; s < N_SIZES; s++) {
            for (int pat = 0; pat < 4; pat++) {
                int64_t n = sizes[s];
                fill_u32(v, n, bw, pat);
                hs_buf_reset(&b);
                CHECK_OK(pq_rle_encode_u32(v, n, bw, &b), E(NULL));
                /* size bound: literal data + headers; all-equal is a few bytes */
                if (pat == 2 && n > 0)
                    CHECK(b.len <= 16);
                if (pat == 0)
                    CHECK(b.len <= (size_t)((n + 7) / 8 * bw) + 10 + (size_t)n / 50);
                pq_rle_decoder d;
                pq_rle_init(&d, b.data, b.len, bw);
                int64_t got = 0;
                while (got < n) { /* resumable: random chunk sizes */
                    int64_t k = (int64_t)(rnd() % 300) + 1;
                    if (k > n - got)
                        k = n - got;
                    CHECK_OK(pq_rle_get_u32(&d, o + got, k, &err), E(&err));
                    got += k;
                }
                CHECK(n == 0 || memcmp(v, o, (size_t)n * sizeof *v) == 0);
                /* one value more than encoded fails, or is the zero padding of a group */
                uint32_t extra = 1;
                hs_status st = pq_rle_get_u32(&d, &extra, 1, &err);
                CHECK(st == HS_CORRUPT || (st == HS_OK && extra == 0));
                hs_err_clear(&err);
            }
        }
    }
    hs_buf_free(&b);
    hs_free(v);
    hs_free(o);
}

static void test_hybrid_compact(void)
{
    /* 8 distinct, then 100 repeats, then 3 distinct: literal + RLE + literal */
    uint32_t v[111];
    for (int i = 0; i < 8; i++)
        v[i] = (uint32_t)i;
    for (int i = 8; i < 108; i++)
        v[i] = 5;
    v[108] = 1, v[109] = 2, v[110] = 3;
    hs_buf b = {0};
    CHECK_OK(pq_rle_encode_u32(v, 111, 3, &b), E(NULL));
    /* 1+3 literal, 1+1 RLE (100<<1 = 200 -> 2-byte varint), 1+3 literal */
    CHECK(b.len == 4 + 3 + 4);
    /* misaligned run: 3 literals then 20 repeats -> literal group absorbs 5 */
    hs_buf_reset(&b);
    uint32_t w[23] = {1, 2, 3};
    for (int i = 3; i < 23; i++)
        w[i] = 7;
    CHECK_OK(pq_rle_encode_u32(w, 23, 3, &b), E(NULL));
    CHECK(b.len == 4 + 2); /* group of 8 (1+3 bytes) + RLE of 15 (1+1) */
    uint32_t o[23];
    pq_rle_decoder d;
    hs_error err = {0};
    pq_rle_init(&d, b.data, b.len, 3);
    CHECK_OK(pq_rle_get_u32(&d, o, 23, &err), E(&err));
    CHECK(memcmp(o, w, sizeof w) == 0);
    hs_buf_free(&b);
}

static void test_hybrid_corrupt(void)
{
    hs_error err = {0};
    uint32_t out[64];
    pq_rle_decoder d;
    /* bit-packed run of 2 groups at bw 8 (16 bytes declared), only 3 present */
    const uint8_t cut[] = {0x05, 1, 2, 3};
    pq_rle_init(&d, cut, sizeof cut, 8);
    CHECK_OK(pq_rle_get_u32(&d, out, 3, &err), E(&err));
    CHECK(out[0] == 1 && out[2] == 3);
    CHECK(pq_rle_get_u32(&d, out, 1, &err) == HS_CORRUPT);
    CHECK(err.src_line > 0);
    hs_err_clear(&err);
    /* empty data */
    pq_rle_init(&d, cut, 0, 8);
    CHECK(pq_rle_get_u32(&d, out, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* varint of 11 bytes */
    const uint8_t longv[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    pq_rle_init(&d, longv, sizeof longv, 1);
    CHECK(pq_rle_get_u32(&d, out, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* RLE run value wider than the bit width */
    const uint8_t wide[] = {0x10, 0x09};
    pq_rle_init(&d, wide, sizeof wide, 3);
    CHECK(pq_rle_get_u32(&d, out, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* RLE value cut short (bw 16 needs 2 bytes) */
    const uint8_t shortv[] = {0x10, 0x09};
    pq_rle_init(&d, shortv, sizeof shortv, 16);
    CHECK(pq_rle_get_u32(&d, out, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* bit width out of range */
    pq_rle_init(&d, wide, sizeof wide, 33);
    CHECK(pq_rle_get_u32(&d, out, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    pq_rle_init(&d, wide, sizeof wide, 17);
    uint16_t o16[4];
    CHECK(pq_rle_get_u16(&d, o16, 1, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* bit width 0: runs hold no bytes */
    const uint8_t zero[] = {0x03, 0x20};
    pq_rle_init(&d, zero, sizeof zero, 0);
    CHECK_OK(pq_rle_get_u32(&d, out, 24, &err), E(&err));
    CHECK(out[0] == 0 && out[23] == 0);
}

static void test_levels(void)
{
    hs_error err = {0};
    hs_buf b = {0};
    uint16_t lv[1000], out[1000];
    for (int max = 0; max <= 5; max++) {
        for (int i = 0; i < 1000; i++)
            lv[i] = (uint16_t)(max ? (i % 17 < 10 ? max : rnd() % (uint64_t)(max + 1)) : 0);
        for (int pre = 0; pre <= 1; pre++) {
            hs_buf_reset(&b);
            CHECK_OK(pq_levels_encode(lv, 1000, max, pre, &b), E(NULL));
            if (max == 0)
                CHECK(b.len == 0);
            /* trailing bytes after the levels must not be consumed when prefixed */
            CHECK_OK(hs_buf_append(&b, "xyz", 3), E(NULL));
            size_t used = 0;
            CHECK_OK(pq_levels_decode(PQ_ENC_RLE, pre, b.data, pre ? b.len : b.len - 3, max, 1000,
                                      out, &used, &err), E(&err));
            CHECK(memcmp(lv, out, sizeof lv) == 0);
            CHECK(used == (max == 0 ? 0 : b.len - 3));
        }
    }
    /* a level above max_level is corrupt */
    uint16_t bad[8] = {0, 1, 3, 1, 0, 0, 1, 1};
    hs_buf_reset(&b);
    CHECK_OK(pq_levels_encode(bad, 8, 3, true, &b), E(NULL));
    size_t used;
    CHECK(pq_levels_decode(PQ_ENC_RLE, true, b.data, b.len, 2, 8, out, &used, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* length prefix past the end */
    const uint8_t pfx[] = {0x10, 0, 0, 0, 0x02, 0x01};
    CHECK(pq_levels_decode(PQ_ENC_RLE, true, pfx, sizeof pfx, 1, 1, out, &used, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    CHECK(pq_levels_decode(PQ_ENC_RLE, true, pfx, 3, 1, 1, out, &used, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* BIT_PACKED too short */
    CHECK(pq_levels_decode(PQ_ENC_BIT_PACKED, false, pfx, 1, 7, 8, out, &used, &err) == HS_CORRUPT);
    hs_buf_free(&b);
}

static void test_dict_indices(void)
{
    hs_error err = {0};
    hs_buf b = {0};
    static uint32_t idx[100000], out[100000];
    static const uint32_t dict_sizes[] = {1, 2, 3, 100, 65536, 1u << 20};
    for (size_t k = 0; k < sizeof dict_sizes / sizeof dict_sizes[0]; k++) {
        uint32_t ds = dict_sizes[k];
        for (int s = 0; s < N_SIZES; s++) {
            int64_t n = sizes[s];
            for (int64_t i = 0; i < n; i++)
                idx[i] = (uint32_t)(rnd() % 3 ? rnd() % ds : ds - 1);
            if (n > 0)
                idx[n / 2] = ds - 1;
            hs_buf_reset(&b);
            CHECK_OK(pq_dict_indices_encode(idx, n, ds, &b), E(NULL));
            CHECK(b.data[0] == (ds > 1 ? pq_bit_width(ds - 1) : 0));
            CHECK_OK(pq_dict_indices_decode(b.data, b.len, n, ds, out, &err), E(&err));
            CHECK(n == 0 || memcmp(idx, out, (size_t)n * 4) == 0);
            if (n > 0 && ds > 1) {
                CHECK(pq_dict_indices_decode(b.data, b.len, n, ds - 1, out, &err) == HS_CORRUPT);
                hs_err_clear(&err);
            }
        }
    }
    CHECK(pq_dict_indices_encode(idx, 1, 0, &b) == HS_INVALID);
    const uint8_t badw[] = {33, 0x02, 0};
    CHECK(pq_dict_indices_decode(badw, sizeof badw, 1, 10, out, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    CHECK(pq_dict_indices_decode(badw, 0, 1, 10, out, &err) == HS_CORRUPT);
    hs_buf_free(&b);
}

/* Random fixed-width values with extremes mixed in. */
static void fill_fixed(uint8_t *v, int64_t n, int w, int pattern)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = rnd();
        if (pattern == 1)
            x = 42;
        else if (pattern == 2)
            x = (i % 3 == 0) ? (uint64_t)INT64_MIN : (i % 3 == 1) ? (uint64_t)INT64_MAX : x;
        else if (pattern == 3)
            x = (uint64_t)(i * 1000 + (int64_t)(rnd() % 7)); /* sorted, small deltas */
        for (int k = 0; k < w; k++)
            v[i * w + k] = (uint8_t)(x >> (8 * (k % 8)));
    }
}

static void roundtrip_fixed(pq_encoding enc, pq_ptype type, int w)
{
    hs_error err = {0};
    hs_buf b = {0}, scratch = {0};
    uint8_t *v = hs_malloc(100000 * 12), *o = hs_malloc(100000 * 12 + 1);
    REQUIRE(v && o);
    for (int s = 0; s < N_SIZES; s++) {
        for (int pat = 0; pat < 4; pat++) {
            int64_t n = sizes[s];
            fill_fixed(v, n, w, pat);
            if (type == PQ_INT32 && pat == 2)
                for (int64_t i = 0; i < n; i++) {
                    int32_t x = i % 2 ? INT32_MIN : INT32_MAX;
                    memcpy(v + 4 * i, &x, 4);
                }
            hs_buf_reset(&b);
            CHECK_OK(pq_values_encode(enc, type, 0, v, n, &b), E(NULL));
            memset(o, 0xAB, (size_t)n * (size_t)w);
            CHECK_OK(pq_values_decode(enc, type, 0, b.data, b.len, n, o, &scratch, &err), E(&err));
            if (n > 0 && memcmp(v, o, (size_t)n * (size_t)w) != 0) {
                fprintf(stderr, "  %d/%d n=%lld pattern=%d mismatch\n", enc, type, (long long)n, pat);
                CHECK(0);
            }
            if (enc == PQ_ENC_DELTA_BINARY_PACKED && pat == 1 && n > 1)
                CHECK(b.len < 16 + (size_t)n / 128 * 6); /* all equal: zero-width miniblocks */
            /* every proper prefix of the page either fails cleanly or (padding) decodes */
            for (size_t cut = 0; cut < b.len && cut < 64; cut++) {
                hs_status st = pq_values_decode(enc, type, 0, b.data, cut, n, o, &scratch, &err);
                if (st == HS_OK)
                    CHECK(enc == PQ_ENC_DELTA_BINARY_PACKED || n == 0);
                hs_err_clear(&err);
            }
        }
    }
    hs_buf_free(&b);
    hs_buf_free(&scratch);
    hs_free(v);
    hs_free(o);
}

static void test_plain_fixed(void)
{
    roundtrip_fixed(PQ_ENC_PLAIN, PQ_INT32, 4);
    roundtrip_fixed(PQ_ENC_PLAIN, PQ_INT64, 8);
    roundtrip_fixed(PQ_ENC_PLAIN, PQ_INT96, 12);
    roundtrip_fixed(PQ_ENC_PLAIN, PQ_FLOAT, 4);
    roundtrip_fixed(PQ_ENC_PLAIN, PQ_DOUBLE, 8);
}

static void test_delta_binary_packed(void)
{
    roundtrip_fixed(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32, 4);
    roundtrip_fixed(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT64, 8);
    /* spec example: 1 2 3 4 5 -> header 128 4 5 first=1(zz 2), block min 1(zz 2), widths 0 */
    int32_t v[5] = {1, 2, 3, 4, 5}, o[5];
    hs_buf b = {0}, scratch = {0};
    hs_error err = {0};
    CHECK_OK(pq_values_encode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32, 0, v, 5, &b), E(NULL));
    const uint8_t want[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0, 0, 0, 0};
    CHECK(b.len == sizeof want && memcmp(b.data, want, sizeof want) == 0);
    /* a stream with a different layout: block 8, 1 miniblock of 8, widths up to 32 */
    const uint8_t other[] = {0x08, 0x01, 0x03, 0x01 /* first -1 */, 0x01 /* min -1 */, 0x01,
                             0x06 /* deltas 0,1,1 -> -1, 0, 0 */};
    CHECK_OK(pq_values_decode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32, 0, other, sizeof other, 3, o,
                              &scratch, &err), E(&err));
    CHECK(o[0] == -1 && o[1] == -2 && o[2] == -2);
    /* bit width 33 for INT32 is corrupt */
    uint8_t bad[16] = {0x08, 0x01, 0x03, 0x00, 0x00, 33};
    CHECK(pq_values_decode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32, 0, bad, sizeof bad, 3, o,
                           &scratch, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* a header with fewer values than the page needs */
    CHECK(pq_values_decode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32, 0, other, sizeof other, 4, o,
                           &scratch, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* miniblock size not a multiple of 8 */
    const uint8_t badblk[] = {0x0c, 0x01, 0x03, 0x00};
    CHECK(pq_values_decode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32, 0, badblk, sizeof badblk, 1, o,
                           &scratch, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* INT64 wrap-around: MIN, MAX, MIN */
    int64_t w[3] = {INT64_MIN, INT64_MAX, INT64_MIN}, wo[3];
    hs_buf_reset(&b);
    CHECK_OK(pq_values_encode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT64, 0, w, 3, &b), E(NULL));
    CHECK_OK(pq_values_decode(PQ_ENC_DELTA_BINARY_PACKED, PQ_INT64, 0, b.data, b.len, 3, wo,
                              &scratch, &err), E(&err));
    CHECK(memcmp(w, wo, sizeof w) == 0);
    hs_buf_free(&b);
    hs_buf_free(&scratch);
}

static void test_byte_stream_split(void)
{
    roundtrip_fixed(PQ_ENC_BYTE_STREAM_SPLIT, PQ_FLOAT, 4);
    roundtrip_fixed(PQ_ENC_BYTE_STREAM_SPLIT, PQ_DOUBLE, 8);
    roundtrip_fixed(PQ_ENC_BYTE_STREAM_SPLIT, PQ_INT32, 4);
    roundtrip_fixed(PQ_ENC_BYTE_STREAM_SPLIT, PQ_INT64, 8);
    /* known layout: two floats 0x04030201, 0x08070605 -> 01 05 02 06 03 07 04 08 */
    uint32_t f[2] = {0x04030201, 0x08070605};
    hs_buf b = {0};
    CHECK_OK(pq_values_encode(PQ_ENC_BYTE_STREAM_SPLIT, PQ_FLOAT, 0, f, 2, &b), E(NULL));
    const uint8_t want[] = {1, 5, 2, 6, 3, 7, 4, 8};
    CHECK(b.len == 8 && memcmp(b.data, want, 8) == 0);
    hs_buf_free(&b);
}

/* Random strings sharing prefixes, with empty ones. */
static void fill_strings(pq_bytes *v, int64_t n, uint8_t *pool, int flba_w, int pattern)
{
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t len = flba_w ? (uint32_t)flba_w : (uint32_t)(rnd() % 24);
        if (!flba_w && (pattern == 1 || i % 11 == 0))
            len = 0;
        uint8_t *p = pool + at;
        for (uint32_t k = 0; k < len; k++)
            p[k] = (uint8_t)('a' + rnd() % 3);
        if (i > 0 && pattern == 2 && v[i - 1].len > 0) { /* share a prefix */
            uint32_t pre = (uint32_t)(rnd() % v[i - 1].len);
            if (pre > len)
                pre = len;
            memcpy(p, v[i - 1].p, pre);
        }
        v[i].p = p;
        v[i].len = len;
        at += len;
    }
}

static void roundtrip_bytes(pq_encoding enc, pq_ptype type, int w)
{
    hs_error err = {0};
    hs_buf b = {0}, scratch = {0};
    pq_bytes *v = hs_malloc(100000 * sizeof *v), *o = hs_malloc(100000 * sizeof *o);
    uint8_t *pool = hs_malloc(100000 * 32);
    REQUIRE(v && o && pool);
    for (int s = 0; s < N_SIZES; s++) {
        for (int pat = 0; pat < 3; pat++) {
            int64_t n = sizes[s];
            fill_strings(v, n, pool, w, pat);
            hs_buf_reset(&b);
            CHECK_OK(pq_values_encode(enc, type, w, v, n, &b), E(NULL));
            CHECK_OK(pq_values_decode(enc, type, w, b.data, b.len, n, o, &scratch, &err), E(&err));
            int bad = 0;
            for (int64_t i = 0; i < n && !bad; i++)
                bad = o[i].len != v[i].len || (v[i].len && memcmp(o[i].p, v[i].p, v[i].len) != 0);
            if (bad)
                fprintf(stderr, "  enc %d type %d n=%lld pattern %d mismatch\n", enc, type,
                        (long long)n, pat);
            CHECK(!bad);
            for (size_t cut = 0; cut < b.len && cut < 48; cut++) {
                hs_status st = pq_values_decode(enc, type, w, b.data, cut, n, o, &scratch, &err);
                CHECK(st == HS_OK || st == HS_CORRUPT);
                hs_err_clear(&err);
            }
        }
    }
    hs_buf_free(&b);
    hs_buf_free(&scratch);
    hs_free(v);
    hs_free(o);
    hs_free(pool);
}

static void test_byte_arrays(void)
{
    roundtrip_bytes(PQ_ENC_PLAIN, PQ_BYTE_ARRAY, 0);
    roundtrip_bytes(PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, PQ_BYTE_ARRAY, 0);
    roundtrip_bytes(PQ_ENC_DELTA_BYTE_ARRAY, PQ_BYTE_ARRAY, 0);
    roundtrip_bytes(PQ_ENC_PLAIN, PQ_FIXED_LEN_BYTE_ARRAY, 3);
    roundtrip_bytes(PQ_ENC_DELTA_BYTE_ARRAY, PQ_FIXED_LEN_BYTE_ARRAY, 16);
    roundtrip_bytes(PQ_ENC_BYTE_STREAM_SPLIT, PQ_FIXED_LEN_BYTE_ARRAY, 1);
    roundtrip_bytes(PQ_ENC_BYTE_STREAM_SPLIT, PQ_FIXED_LEN_BYTE_ARRAY, 5);
    roundtrip_bytes(PQ_ENC_BYTE_STREAM_SPLIT, PQ_FIXED_LEN_BYTE_ARRAY, 16);

    /* corrupt PLAIN byte arrays */
    hs_error err = {0};
    pq_bytes o[2];
    const uint8_t neg[] = {0xff, 0xff, 0xff, 0xff, 'a'};
    CHECK(pq_values_decode(PQ_ENC_PLAIN, PQ_BYTE_ARRAY, 0, neg, sizeof neg, 1, o, NULL, &err) ==
          HS_CORRUPT);
    hs_err_clear(&err);
    const uint8_t past[] = {2, 0, 0, 0, 'a'};
    CHECK(pq_values_decode(PQ_ENC_PLAIN, PQ_BYTE_ARRAY, 0, past, sizeof past, 1, o, NULL, &err) ==
          HS_CORRUPT);
    hs_err_clear(&err);
    const uint8_t ok[] = {1, 0, 0, 0, 'a', 0, 0, 0, 0};
    CHECK_OK(pq_values_decode(PQ_ENC_PLAIN, PQ_BYTE_ARRAY, 0, ok, sizeof ok, 2, o, NULL, &err), E(&err));
    CHECK(o[0].len == 1 && o[0].p[0] == 'a' && o[1].len == 0);
    /* DELTA_BYTE_ARRAY prefix longer than the previous value */
    pq_bytes in[2] = {{(const uint8_t *)"ab", 2}, {(const uint8_t *)"abc", 3}};
    hs_buf b = {0}, scratch = {0};
    CHECK_OK(pq_values_encode(PQ_ENC_DELTA_BYTE_ARRAY, PQ_BYTE_ARRAY, 0, in, 2, &b), E(NULL));
    /* prefix lengths stream is: 80 01 04 02 00 | block: min 04 (2) widths 0 0 0 0 -> 0,2 */
    CHECK(b.data[4] == 0x00 && b.data[5] == 0x04);
    b.data[5] = 0x06; /* prefixes 0, 3: 3 > len("ab") */
    CHECK(pq_values_decode(PQ_ENC_DELTA_BYTE_ARRAY, PQ_BYTE_ARRAY, 0, b.data, b.len, 2, o, &scratch,
                           &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* DELTA_LENGTH_BYTE_ARRAY negative length */
    const uint8_t dneg[] = {0x80, 0x01, 0x04, 0x01, 0x01 /* first = -1 */};
    CHECK(pq_values_decode(PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, PQ_BYTE_ARRAY, 0, dneg, sizeof dneg, 1,
                           o, &scratch, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* FLBA of the wrong width is refused by the encoder */
    CHECK(pq_values_encode(PQ_ENC_PLAIN, PQ_FIXED_LEN_BYTE_ARRAY, 4, in, 2, &b) == HS_INVALID);
    hs_buf_free(&b);
    hs_buf_free(&scratch);
}

static void test_booleans(void)
{
    hs_error err = {0};
    hs_buf b = {0};
    static uint8_t v[100000], o[100000];
    for (int e = 0; e < 2; e++) {
        pq_encoding enc = e ? PQ_ENC_RLE : PQ_ENC_PLAIN;
        for (int s = 0; s < N_SIZES; s++) {
            for (int pat = 0; pat < 3; pat++) {
                int64_t n = sizes[s];
                for (int64_t i = 0; i < n; i++)
                    v[i] = (uint8_t)(pat == 0 ? rnd() & 1 : pat == 1 ? 1 : (i / 50) & 1);
                hs_buf_reset(&b);
                CHECK_OK(pq_values_encode(enc, PQ_BOOLEAN, 0, v, n, &b), E(NULL));
                if (enc == PQ_ENC_PLAIN)
                    CHECK(b.len == (size_t)(n + 7) / 8);
                memset(o, 7, (size_t)n);
                CHECK_OK(pq_values_decode(enc, PQ_BOOLEAN, 0, b.data, b.len, n, o, NULL, &err), E(&err));
                CHECK(n == 0 || memcmp(v, o, (size_t)n) == 0);
            }
        }
    }
    /* PLAIN: 0b00000101 -> 1 0 1 */
    const uint8_t byte = 5;
    CHECK_OK(pq_values_decode(PQ_ENC_PLAIN, PQ_BOOLEAN, 0, &byte, 1, 3, o, NULL, &err), E(&err));
    CHECK(o[0] == 1 && o[1] == 0 && o[2] == 1);
    CHECK(pq_values_decode(PQ_ENC_PLAIN, PQ_BOOLEAN, 0, &byte, 1, 9, o, NULL, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    /* the wrong encoding for the type */
    CHECK(pq_values_decode(PQ_ENC_DELTA_BINARY_PACKED, PQ_BOOLEAN, 0, &byte, 1, 1, o, NULL, &err) ==
          HS_CORRUPT);
    hs_buf_free(&b);
}

/* ---- fixtures written by pyarrow (the independent oracle) ---- */

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = hs_malloc((size_t)l + 1);
    if (p && fread(p, 1, (size_t)l, f) != (size_t)l) {
        hs_free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)l;
    return p;
}

/*
 * Each fixture is a raw page payload written by pyarrow (see
 * tests/python/gen_encoding_fixtures.py for the manifest format): <name>.bin,
 * with the values it must decode to in <name>.txt (one per line; byte arrays
 * as hex).  $HS_ENCODING_FIXTURES overrides the directory (the Python oracle
 * test points it at freshly generated fixtures).
 */
static const char *fixture_dir(void)
{
    static char dir[1024];
    const char *env = getenv("HS_ENCODING_FIXTURES");
    if (env && *env)
        return env;
    /* next to this source file (CMake compiles it by absolute path), else from the cwd */
    const char *slash = strrchr(__FILE__, '/');
    int dlen = slash ? (int)(slash - __FILE__) : 0;
    const char *cands[] = {NULL, "tests/c/data/encoding", "../tests/c/data/encoding",
                           "../../tests/c/data/encoding"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        if (cands[i])
            snprintf(dir, sizeof dir, "%s/manifest.txt", cands[i]);
        else if (slash)
            snprintf(dir, sizeof dir, "%.*s/data/encoding/manifest.txt", dlen, __FILE__);
        else
            continue;
        FILE *f = fopen(dir, "r");
        if (f) {
            fclose(f);
            *strrchr(dir, '/') = 0;
            return dir;
        }
    }
    return NULL;
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static void test_pyarrow_fixtures(void)
{
    const char *dir = fixture_dir();
    char path[1600], line[4096];
    snprintf(path, sizeof path, "%s/manifest.txt", dir ? dir : ".");
    FILE *m = dir ? fopen(path, "r") : NULL;
    if (!m) {
        SKIP("no fixtures");
    }
    int checked = 0;
    hs_buf scratch = {0}, re = {0};
    while (fgets(line, sizeof line, m)) {
        char name[256], kind[64];
        int enc, type, tl;
        long long n;
        if (line[0] == '#' ||
            sscanf(line, "%255s %63s %d %d %d %lld", name, kind, &enc, &type, &tl, &n) != 6)
            continue;
        size_t len, tlen;
        snprintf(path, sizeof path, "%s/%s.bin", dir, name);
        uint8_t *page = read_file(path, &len);
        snprintf(path, sizeof path, "%s/%s.txt", dir, name);
        uint8_t *txt = read_file(path, &tlen);
        CHECK(page && txt);
        if (!page || !txt) {
            hs_free(page);
            hs_free(txt);
            continue;
        }
        txt[tlen] = 0;
        int w = pq_ptype_width((pq_ptype)type, tl);
        size_t osz = (size_t)(n + 1) * (w > (int)sizeof(pq_bytes) ? (size_t)w : sizeof(pq_bytes));
        uint8_t *out = hs_malloc(osz);
        hs_error err = {0};
        hs_status st;
        size_t used = 0;
        hs_buf_reset(&re);
        if (strcmp(kind, "dict") == 0) { /* indices as INT32 lines */
            st = pq_dict_indices_decode(page, len, n, (uint32_t)tl, (uint32_t *)out, &err);
            /* our run detection is at least as compact as pyarrow's */
            if (st == HS_OK) {
                CHECK_OK(pq_dict_indices_encode((uint32_t *)out, n, (uint32_t)tl, &re), E(NULL));
                fprintf(stderr, "  %s: %zu bytes (pyarrow %zu)\n", name, re.len, len);
                CHECK(re.len <= len);
            }
            type = PQ_INT32;
        } else if (strcmp(kind, "levels") == 0) { /* levels, widened to INT32 for the check */
            uint16_t *lv = hs_malloc((size_t)(n + 1) * 2);
            st = pq_levels_decode((pq_encoding)enc, true, page, len, tl, n, lv, &used, &err);
            for (long long i = 0; i < n && st == HS_OK; i++)
                ((int32_t *)out)[i] = lv[i];
            CHECK(used > 4 && used < len);
            if (st == HS_OK) {
                CHECK_OK(pq_levels_encode(lv, n, tl, true, &re), E(NULL));
                fprintf(stderr, "  %s: %zu bytes (pyarrow %zu)\n", name, re.len, used);
                CHECK(re.len <= used);
            }
            hs_free(lv);
            type = PQ_INT32;
        } else {
            st = pq_values_decode((pq_encoding)enc, (pq_ptype)type, tl, page, len, n, out, &scratch,
                                  &err);
            if (st == HS_OK && strcmp(kind, "values") == 0) {
                CHECK_OK(pq_values_encode((pq_encoding)enc, (pq_ptype)type, tl, out, n, &re), E(NULL));
                fprintf(stderr, "  %s: %zu bytes (pyarrow %zu)\n", name, re.len, len);
                CHECK(re.len <= len + 16);
            }
        }
        char *tok = (char *)txt, *nl; /* lines may be empty (empty strings) */
        int bad = 0;
        for (long long i = 0; i < n && st == HS_OK && !bad; i++, tok = nl + 1) {
            nl = strchr(tok, '\n');
            if (!nl) {
                bad = 1;
                break;
            }
            *nl = 0;
            if (type == PQ_BYTE_ARRAY || type == PQ_FIXED_LEN_BYTE_ARRAY) {
                pq_bytes *v = (pq_bytes *)out;
                size_t hl = strlen(tok) / 2;
                bad = v[i].len != hl;
                for (size_t k = 0; k < hl && !bad; k++)
                    bad = v[i].p[k] != (uint8_t)(hexval(tok[2 * k]) << 4 | hexval(tok[2 * k + 1]));
            } else if (type == PQ_INT32) {
                bad = ((int32_t *)out)[i] != (int32_t)strtoll(tok, NULL, 10);
            } else if (type == PQ_INT64) {
                bad = ((int64_t *)out)[i] != strtoll(tok, NULL, 10);
            } else if (type == PQ_BOOLEAN) {
                bad = out[i] != (uint8_t)atoi(tok);
            } else if (type == PQ_FLOAT || type == PQ_DOUBLE) { /* hex of the bits */
                uint64_t bits = strtoull(tok, NULL, 16), got = 0;
                memcpy(&got, out + (size_t)i * (size_t)w, (size_t)w);
                bad = got != bits;
            }
            if (bad)
                fprintf(stderr, "  fixture %s: value %lld differs (want %s)\n", name, i, tok);
        }
        CHECK(!bad);
        /* our encoder reproduces pyarrow's bytes where the format leaves no choice */
        if (st == HS_OK && strcmp(kind, "exact") == 0) {
            hs_buf_reset(&re);
            CHECK_OK(pq_values_encode((pq_encoding)enc, (pq_ptype)type, tl, out, n, &re), E(NULL));
            if (re.len != len || memcmp(re.data, page, len) != 0) {
                fprintf(stderr, "  fixture %s: re-encoding differs (%zu vs %zu bytes)\n", name,
                        re.len, len);
                CHECK(0);
            }
        }
        checked++;
        hs_free(out);
        hs_free(page);
        hs_free(txt);
    }
    fclose(m);
    CHECK(checked > 0);
    hs_buf_free(&scratch);
    hs_buf_free(&re);
}

int main(void)
{
    HS_RUN(test_bit_width);
    HS_RUN(test_hybrid_spec_vectors);
    HS_RUN(test_hybrid_roundtrip);
    HS_RUN(test_hybrid_compact);
    HS_RUN(test_hybrid_corrupt);
    HS_RUN(test_levels);
    HS_RUN(test_dict_indices);
    HS_RUN(test_plain_fixed);
    HS_RUN(test_delta_binary_packed);
    HS_RUN(test_byte_stream_split);
    HS_RUN(test_byte_arrays);
    HS_RUN(test_booleans);
    HS_RUN(test_pyarrow_fixtures);
    return hs_test_summary();
}
