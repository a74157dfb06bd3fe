/*
 * tests/fuzz/fuzz_footer.c - libFuzzer target for the Parquet metadata codec.
 *
 * The input is decoded as each Thrift structure we read from untrusted files:
 * FileMetaData (footer), PageHeader, ColumnIndex and OffsetIndex, into one
 * arena.  Whatever decodes is re-encoded and decoded again; the second decode
 * must succeed (our encoder only writes what our decoder accepts), otherwise
 * the target traps.  The footer is also rendered as JSON.  Nothing may crash,
 * read out of bounds or leak (the arena and buffers are released each run).
 */
#include "base/arena.h"
#include "base/buf.h"
#include "parquet/meta.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hs_arena arena = {0};
    hs_buf enc = {0};
    hs_error err = {0};

    pq_file_meta fm, fm2;
    if (pq_decode_file_meta(data, size, &arena, &fm, &err) == HS_OK) {
        if (pq_encode_file_meta(&fm, &enc) == HS_OK &&
            pq_decode_file_meta(enc.data, enc.len, &arena, &fm2, &err) != HS_OK)
            __builtin_trap();
        hs_buf_reset(&enc);
        if (pq_file_meta_to_json(&fm, &enc) != HS_OK)
            __builtin_trap();
    }

    pq_page_header ph, ph2;
    size_t used = 0;
    hs_err_clear(&err);
    if (pq_decode_page_header(data, size, &arena, &ph, &used, &err) == HS_OK) {
        if (used > size)
            __builtin_trap();
        hs_buf_reset(&enc);
        if (pq_encode_page_header(&ph, &enc) == HS_OK &&
            pq_decode_page_header(enc.data, enc.len, &arena, &ph2, &used, &err) != HS_OK)
            __builtin_trap();
    }

    pq_column_index ci, ci2;
    hs_err_clear(&err);
    if (pq_decode_column_index(data, size, &arena, &ci, &err) == HS_OK) {
        hs_buf_reset(&enc);
        if (pq_encode_column_index(&ci, &enc) == HS_OK &&
            pq_decode_column_index(enc.data, enc.len, &arena, &ci2, &err) != HS_OK)
            __builtin_trap();
    }

    pq_offset_index oi, oi2;
    hs_err_clear(&err);
    if (pq_decode_offset_index(data, size, &arena, &oi, &err) == HS_OK) {
        hs_buf_reset(&enc);
        if (pq_encode_offset_index(&oi, &enc) == HS_OK &&
            pq_decode_offset_index(enc.data, enc.len, &arena, &oi2, &err) != HS_OK)
            __builtin_trap();
    }

    hs_buf_free(&enc);
    hs_arena_destroy(&arena);
    return 0;
}
