/*
 * tests/fuzz/fuzz_decompress.c - libFuzzer target for hs_decompress.
 *
 * Input layout:
 *   byte 0      codec id (taken modulo the number of codec ids, so LZO and
 *               out-of-range ids are exercised too)
 *   bytes 1..4  dst_len, u32 little-endian, capped at 1 MiB
 *   bytes 5..   compressed bytes
 *
 * The decoder must return HS_OK or an error for any input: never crash, read
 * or write out of bounds (ASan), or leak (LeakSanitizer).  The destination
 * is allocated at exactly dst_len so ASan catches a single-byte overrun.
 */
#include "base/compress.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    hs_codec codec = (hs_codec)(data[0] % 9);   /* 8 ids and one unknown */
    uint32_t dst_len = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
                       (uint32_t)data[4] << 24;
    if (dst_len > (1u << 20))
        dst_len = 1u << 20;
    uint8_t *dst = malloc(dst_len ? dst_len : 1);
    if (!dst)
        return 0;
    hs_error err = { 0 };
    hs_status st = hs_decompress(codec, data + 5, size - 5, dst, dst_len, &err);
    if (st != HS_OK && err.code != st && st != HS_NOMEM)
        abort();   /* every failure must come with its message */
    free(dst);
    return 0;
}
