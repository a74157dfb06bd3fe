/* libFuzzer target: the input is a quantizer's serialized parameters
 * (vq_save's format; untrusted: it comes from an index file on disk).
 *
 * Each input is tried twice: as it is, and with its last 4 bytes replaced by
 * the right CRC-32, so that mutations get past the checksum and reach the
 * field checks.  Whatever loads must save back to exactly the same bytes,
 * and then survive encoding, queries, distances and decoding, including
 * on codes made of arbitrary input bytes. */
#include "base/buf.h"
#include "base/hash.h"
#include "index/vector/vq.h"

#include <stdlib.h>
#include <string.h>

static void exercise(const vq *q, const uint8_t *data, size_t size)
{
    size_t d = vq_dim(q), cs = vq_code_size(q);
    enum { N = 3 };
    float *x = malloc(N * d * sizeof *x), *y = malloc(N * d * sizeof *y);
    uint8_t *codes = malloc(N * cs + 1);
    if (!x || !y || !codes)
        goto done;
    for (size_t i = 0; i < N * d; i++) /* a deterministic vector, then zeros */
        x[i] = i < d ? (float)((int)(i * 2654435761u % 1000) - 500) / 250.0f : 0.0f;
    vq_encode(q, x, N, codes);
    /* the third code: input bytes (whatever they are) */
    for (size_t i = 0; i < cs; i++)
        codes[2 * cs + i] = size ? data[i % size] : 0;
    vq_query *qq = NULL;
    if (vq_query_new(q, x, &qq, NULL) == HS_OK) {
        float out[N];
        vq_query_dist_many(qq, codes, N, out);
        (void)vq_query_dist(qq, codes + 2 * cs);
        vq_query_free(qq);
    }
    (void)vq_code_dist(q, codes, codes + 2 * cs);
    if (vq_decode(q, codes, N, y, NULL) != HS_OK)
        goto done;
done:
    free(x);
    free(y);
    free(codes);
}

static void try_load(const uint8_t *p, size_t n)
{
    vq *q = NULL;
    hs_error err = {0};
    if (vq_load(p, n, &q, &err) != HS_OK) {
        if (q)
            abort(); /* a failed load leaves nothing behind */
        return;
    }
    hs_buf out = {0};
    if (vq_save(q, &out, &err) == HS_OK && (out.len != n || memcmp(out.data, p, n) != 0))
        abort(); /* what loads must save back byte for byte */
    hs_buf_free(&out);
    exercise(q, p, n);
    vq_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_load(data, size);
    if (size >= 8) {
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        uint32_t crc = hs_crc32(0, copy, size - 4);
        for (int i = 0; i < 4; i++)
            copy[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        try_load(copy, size);
        free(copy);
    }
    return 0;
}
