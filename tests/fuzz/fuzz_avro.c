/* libFuzzer target: the input is an Avro object container file; read every record. */
#include "base/avro.h"

#include <stdbool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hs_avro_reader *r;
    hs_error err = {0};
    if (hs_avro_reader_open("fuzz", data, size, &r, &err) != HS_OK)
        return 0;
    hs_arena arena = {0};
    hs_buf re = {0};
    for (int i = 0; i < 100000; i++) {
        hs_avro_value v;
        bool done;
        hs_arena_reset(&arena);
        if (hs_avro_reader_next(r, &arena, &v, &done, &err) != HS_OK || done)
            break;
        hs_buf_reset(&re);
        (void)hs_avro_encode(hs_avro_reader_schema(r), &v, &re, &err);
    }
    hs_buf_free(&re);
    hs_arena_destroy(&arena);
    hs_avro_reader_close(r);
    return 0;
}
