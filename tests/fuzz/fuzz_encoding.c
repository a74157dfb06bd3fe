/*
 * tests/fuzz/fuzz_encoding.c - libFuzzer target for src/parquet/encoding.c.
 *
 * Input layout:
 *   byte 0      selects the decoder: (encoding, type) for pq_values_decode, or
 *               levels / dictionary indices / the resumable hybrid decoder
 *   byte 1      parameter: FLBA width, max level, bit width, dictionary size
 *   bytes 2-3   n, the number of values requested (little-endian, capped)
 *   rest        the page payload, untrusted
 * Every decoder must return HS_OK or HS_CORRUPT and never read outside the
 * payload (ASan).  When a value decode succeeds, the values are re-encoded
 * with the same encoding and decoded again; they must come back unchanged.
 */
#include "base/buf.h"
#include "base/mem.h"
#include "parquet/encoding.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_N 4096

static const struct { pq_encoding enc; pq_ptype type; } pairs[] = {
    {PQ_ENC_PLAIN, PQ_BOOLEAN}, {PQ_ENC_PLAIN, PQ_INT32}, {PQ_ENC_PLAIN, PQ_INT64},
    {PQ_ENC_PLAIN, PQ_INT96}, {PQ_ENC_PLAIN, PQ_FLOAT}, {PQ_ENC_PLAIN, PQ_DOUBLE},
    {PQ_ENC_PLAIN, PQ_BYTE_ARRAY}, {PQ_ENC_PLAIN, PQ_FIXED_LEN_BYTE_ARRAY},
    {PQ_ENC_RLE, PQ_BOOLEAN},
    {PQ_ENC_DELTA_BINARY_PACKED, PQ_INT32}, {PQ_ENC_DELTA_BINARY_PACKED, PQ_INT64},
    {PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, PQ_BYTE_ARRAY},
    {PQ_ENC_DELTA_BYTE_ARRAY, PQ_BYTE_ARRAY}, {PQ_ENC_DELTA_BYTE_ARRAY, PQ_FIXED_LEN_BYTE_ARRAY},
    {PQ_ENC_BYTE_STREAM_SPLIT, PQ_FLOAT}, {PQ_ENC_BYTE_STREAM_SPLIT, PQ_DOUBLE},
    {PQ_ENC_BYTE_STREAM_SPLIT, PQ_INT32}, {PQ_ENC_BYTE_STREAM_SPLIT, PQ_INT64},
    {PQ_ENC_BYTE_STREAM_SPLIT, PQ_FIXED_LEN_BYTE_ARRAY},
    {PQ_ENC_DELTA_BINARY_PACKED, PQ_BYTE_ARRAY}, /* invalid pair: must be refused */
};
#define N_PAIRS (int)(sizeof pairs / sizeof pairs[0])

static void check(int cond)
{
    if (!cond)
        abort();
}

static int same_values(pq_ptype type, int w, const void *a, const void *b, int64_t n)
{
    if (type != PQ_BYTE_ARRAY && type != PQ_FIXED_LEN_BYTE_ARRAY)
        return memcmp(a, b, (size_t)n * (size_t)w) == 0;
    const pq_bytes *x = a, *y = b;
    for (int64_t i = 0; i < n; i++)
        if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].p, y[i].p, x[i].len) != 0))
            return 0;
    return 1;
}

static void fuzz_values(int sel, int param, int64_t n, const uint8_t *p, size_t len)
{
    pq_encoding enc = pairs[sel % N_PAIRS].enc;
    pq_ptype type = pairs[sel % N_PAIRS].type;
    int32_t tl = type == PQ_FIXED_LEN_BYTE_ARRAY ? param % 20 : 0; /* 0 is refused */
    size_t osz = (size_t)(n + 1) * 16;
    void *out = malloc(osz), *again = malloc(osz);
    hs_buf scratch = {0}, scratch2 = {0}, enc_buf = {0};
    hs_error err = {0};
    hs_status st = pq_values_decode(enc, type, tl, p, len, n, out, &scratch, &err);
    check(st == HS_OK || st == HS_CORRUPT);
    if (st == HS_OK) {
        int w = pq_ptype_width(type, tl);
        if (type == PQ_BOOLEAN) /* decoders yield 0/1 */
            for (int64_t i = 0; i < n; i++)
                check(((uint8_t *)out)[i] <= 1);
        check(pq_values_encode(enc, type, tl, out, n, &enc_buf) == HS_OK);
        st = pq_values_decode(enc, type, tl, enc_buf.data, enc_buf.len, n, again, &scratch2, &err);
        check(st == HS_OK);
        check(same_values(type, w, out, again, n));
    }
    hs_buf_free(&scratch);
    hs_buf_free(&scratch2);
    hs_buf_free(&enc_buf);
    free(out);
    free(again);
}

static void fuzz_levels(int sel, int param, int64_t n, const uint8_t *p, size_t len)
{
    uint16_t *out = malloc((size_t)(n + 1) * 2);
    hs_error err = {0};
    size_t used = 0;
    pq_encoding enc = sel & 1 ? PQ_ENC_BIT_PACKED : PQ_ENC_RLE;
    int max_level = param % 40;
    hs_status st = pq_levels_decode(enc, (sel & 2) != 0, p, len, max_level, n, out, &used, &err);
    check(st == HS_OK || st == HS_CORRUPT);
    if (st == HS_OK) {
        check(used <= len);
        for (int64_t i = 0; i < n; i++)
            check(out[i] <= max_level);
    }
    free(out);
}

static void fuzz_indices(int param, int64_t n, const uint8_t *p, size_t len)
{
    uint32_t *out = malloc((size_t)(n + 1) * 4);
    hs_error err = {0};
    uint32_t dict_size = (uint32_t)param * 97u;
    hs_status st = pq_dict_indices_decode(p, len, n, dict_size, out, &err);
    check(st == HS_OK || st == HS_CORRUPT);
    if (st == HS_OK)
        for (int64_t i = 0; i < n; i++)
            check(out[i] < dict_size);
    free(out);
}

/* The resumable decoder, pulled in chunks of varying size. */
static void fuzz_hybrid(int param, int64_t n, const uint8_t *p, size_t len)
{
    uint32_t *out = malloc((size_t)(n + 1) * 4);
    uint16_t *o16 = malloc((size_t)(n + 1) * 2);
    hs_error err = {0};
    int bw = param % 34;
    pq_rle_decoder d;
    pq_rle_init(&d, p, len, bw);
    int64_t got = 0, step = 1;
    while (got < n) {
        int64_t k = step < n - got ? step : n - got;
        hs_status st = pq_rle_get_u32(&d, out + got, k, &err);
        check(st == HS_OK || st == HS_CORRUPT);
        if (st != HS_OK)
            break;
        for (int64_t i = 0; i < k && bw < 32; i++)
            check(out[got + i] >> bw == 0);
        got += k;
        step = step * 3 % 97 + 1;
    }
    /* skipping agrees with decoding: values read after skips are the ones
     * the full decode gave at those positions (skips never check bytes, so
     * only a decode that succeeded throughout is compared) */
    bool full = got == n;
    hs_err_clear(&err);
    pq_rle_init(&d, p, len, bw);
    int64_t at = 0, sk = 1;
    while (at < n) {
        int64_t s = sk < n - at ? sk : n - at;
        hs_status st = pq_rle_skip(&d, s, &err);
        check(st == HS_OK || st == HS_CORRUPT);
        check(!full || st == HS_OK);
        if (st != HS_OK)
            break;
        at += s;
        if (at >= n)
            break;
        uint32_t v = 0;
        st = pq_rle_get_u32(&d, &v, 1, &err);
        check(st == HS_OK || st == HS_CORRUPT);
        check(!full || (st == HS_OK && v == out[at]));
        if (st != HS_OK)
            break;
        at++;
        sk = sk * 7 % 131 + 1;
    }
    hs_err_clear(&err);
    pq_rle_init(&d, p, len, bw);
    hs_status st = pq_rle_get_u16(&d, o16, n, &err);
    check(st == HS_OK || st == HS_CORRUPT);
    free(out);
    free(o16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int sel = data[0], param = data[1];
    int64_t n = (int64_t)(data[2] | data[3] << 8) % (MAX_N + 1);
    size_t len = size - 4;
    /* an exact-size copy, so reading one byte past the payload is caught */
    uint8_t *p = malloc(len ? len : 1);
    memcpy(p, data + 4, len);
    if (sel < 192)
        fuzz_values(sel, param, n, p, len);
    else if (sel < 224)
        fuzz_levels(sel, param, n, p, len);
    else if (sel < 240)
        fuzz_indices(param, n, p, len);
    else
        fuzz_hybrid(param, n, p, len);
    free(p);
    return 0;
}
