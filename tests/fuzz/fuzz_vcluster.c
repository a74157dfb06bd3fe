/* libFuzzer target: clustered vector blocks and their directory
 * (table/vcluster.h).
 *
 * The first input byte picks a mode; the rest is the payload.
 *   bit 1  directory mode: the payload is a registry entry's "cluster"
 *          text; parse it and look up a few values (an integer, strings
 *          taken from the payload), with a file size the last byte picks
 *   else   block mode: the payload is one block (copied into an 8-byte
 *          aligned buffer of its exact size, so ASan sees any over-read);
 *          bit 0 recomputes its checksum first, so that mutations reach
 *          the length, offset and order checks.  When it decodes, every
 *          position, vector element and included value is read, and the
 *          positions must be strictly increasing.
 * Seeds: blocks of a table written by tests/python/test_vcluster.py's
 * frame (strings, doubles, nulls), mode byte 0 and 1. */
#include "base/hash.h"
#include "base/mem.h"
#include "table/vcluster.h"

#include <stdlib.h>
#include <string.h>

static void walk(const tbl_vcblock *b)
{
    volatile uint64_t sink = 0;
    for (uint32_t i = 0; i < b->rows; i++) {
        if (i > 0 && b->pos[i] <= b->pos[i - 1])
            abort();
        for (uint32_t j = 0; j < b->dim; j++) {
            float x = b->vecs[(size_t)i * b->dim + j];
            uint32_t u;
            memcpy(&u, &x, 4);
            sink += u;
        }
    }
    for (int c = 0; c < b->n_include; c++) {
        const tbl_vcinc *ic = &b->inc[c];
        for (uint32_t i = 0; i < b->rows; i++) {
            sink += (ic->validity[i / 8] >> (i % 8)) & 1;
            if (ic->offsets) {
                for (uint32_t k = ic->offsets[i]; k < ic->offsets[i + 1]; k++)
                    sink += ic->values[k];
            } else {
                for (uint32_t k = 0; k < ic->width; k++)
                    sink += ic->values[(size_t)i * ic->width + k];
            }
        }
    }
    (void)sink;
}

static void block(const uint8_t *data, size_t size, bool fix)
{
    uint8_t *p = hs_malloc_aligned(size ? size : 1);
    if (!p)
        return;
    memcpy(p, data, size);
    if (fix && size >= 40) {
        uint64_t seed = hs_xxh64(p, 32, 0), h = hs_xxh64(p + 40, size - 40, seed);
        memcpy(p + 32, &h, 8);
    }
    tbl_vcblock b;
    hs_status st = tbl_vcblock_decode(p, size, -1, &b, NULL);
    if (st == HS_OK)
        walk(&b);
    else if (st != HS_CORRUPT)
        abort();
    /* the same with a row bound: never more permissive */
    if (st == HS_OK && b.rows > 0) {
        tbl_vcblock b2;
        hs_status s2 = tbl_vcblock_decode(p, size, (int64_t)b.pos[b.rows - 1], &b2, NULL);
        if (s2 != HS_CORRUPT)
            abort();   /* the last position is not below itself */
    }
    hs_free_aligned(p);
}

static void directory(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    tbl_vcdir d;
    if (tbl_vcdir_parse(text, &d, NULL) == HS_OK) {
        int64_t file_size = size ? (int64_t)data[size - 1] << 12 : 0;
        tbl_vcl_key keys[3] = {{true, 7, NULL, 0},
                               {false, 0, (const uint8_t *)"c0", 2},
                               {false, 0, size > 4 ? data + 1 : NULL, size > 4 ? 3 : 0}};
        for (int i = 0; i < 3; i++) {
            bool found = false;
            uint64_t off = 0, len = 0;
            uint32_t rows = 0;
            if (tbl_vcdir_find(&d, &keys[i], file_size, &found, &off, &len, &rows, NULL) ==
                    HS_OK && found && (off + len > (uint64_t)file_size || rows == 0))
                abort();
        }
        tbl_vcdir_clear(&d);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 2)
        directory(data + 1, size - 1);
    else
        block(data + 1, size - 1, data[0] & 1);
    return 0;
}
