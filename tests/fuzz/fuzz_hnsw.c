/*
 * tests/fuzz/fuzz_hnsw.c - libFuzzer target for HNSW index images
 * (hnsw_open and searching what it accepts).
 *
 * Random bytes rarely get past the magic and the checksum, so the input is
 * used two ways, chosen by its first byte:
 *   even: the rest is an image; its trailing checksum is recomputed (when
 *         there is room) so the structural checks behind it are reached.
 *   odd:  the next byte picks a small index (flat / tq8 / tq4 / pq / bin,
 *         L2 / cosine / IP, with or without IVF) that is built once and
 *         cached; the rest of the input is a list of (offset, xor) damage
 *         to its image, with the checksum recomputed unless the damage
 *         list asks otherwise.
 * Whatever opens is searched (with and without an allow-list, forcing the
 * graph and the exact path), and the answer must keep the contract: at most
 * k hits, never fewer than min(k, allowed), every id a row of the index.
 * The image's head (hnsw_open_prefix: version 2 images keep the payloads
 * right after the header, each with a checksum that fix_checksum also
 * recomputes) is opened too, at a length the input picks, in an exact-size
 * copy; a partial index may refuse a search (HS_UNSUPPORTED) but an answer
 * keeps the same contract.  Nothing may crash, read out of bounds or leak.
 */
#include "base/buf.h"
#include "base/hash.h"
#include "index/vector/hnsw.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_VARIANTS 12
static hs_buf images[N_VARIANTS];
static int built[N_VARIANTS];

static void make_image(int v)
{
    static const vq_type quant[] = { VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN, VQ_FLAT };
    static const hs_metric metric[] = { HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP };
    size_t n = 48, d = 8;
    float x[48 * 8];
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(v + 1);
    for (size_t i = 0; i < n * d; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) % 1000) / 100.0f - 5.0f;
    }
    hnsw_params p;
    memset(&p, 0, sizeof p);
    p.M = 4;
    p.ef_construction = 16;
    p.n_threads = 1;
    p.quant.type = quant[v % 6];
    p.metric = metric[v % 3];
    p.ivf_lists = v >= 6 ? 3 : 0;
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    built[v] = 1;
    if (hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err) != HS_OK)
        return;  /* out of memory: the variant stays empty */
    if (hnsw_save(ix, &images[v], &err) != HS_OK)
        hs_buf_free(&images[v]);
    hnsw_free(ix);
}

typedef struct fz_fetch {
    size_t n, d;
} fz_fetch;

static hs_status fz_fetch_rows(void *ctx, const uint32_t *ids, size_t n, float *out,
                               hs_error *err)
{
    fz_fetch *f = ctx;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= f->n)
            __builtin_trap();  /* the index asked for a row it does not have */
        for (size_t j = 0; j < f->d; j++)
            out[i * f->d + j] = (float)((ids[i] + j) % 7) - 3.0f;
    }
    (void)err;
    return HS_OK;
}

static void search_all(const hnsw_index *ix, const uint8_t *data, size_t size, int partial)
{
    hnsw_info info;
    hnsw_get_info(ix, &info);
    if (info.d == 0 || info.d > 4096 || info.n == 0)
        return;
    float *q = calloc(info.d, sizeof(float));
    if (!q)
        return;
    for (size_t j = 0; j < info.d; j++)
        q[j] = j < size ? (float)(int8_t)data[j] / 16.0f : 0.5f;
    roaring_bitmap_t *allow = roaring_bitmap_create();
    for (size_t i = 0; i < size && i < 64; i++)
        roaring_bitmap_add(allow, (uint32_t)(data[i] % (info.n + 2)));
    uint64_t allowed = roaring_bitmap_range_cardinality(allow, 0, info.n);
    fz_fetch f = { info.n, info.d };
    hnsw_hit hits[12];
    for (int round = 0; round < 4; round++) {
        hnsw_search_opts o = { .k = 12, .ef = round == 3 ? 1 : 0, .nprobe = round,
                               .allow = round & 1 ? allow : NULL,
                               .exact_threshold = round == 1 ? 1 : 0, .fetch = fz_fetch_rows,
                               .fetch_ctx = &f };
        int got = -1;
        hs_error err = { 0 };
        hnsw_search_stats st;
        hs_status ss = hnsw_search(ix, q, &o, hits, &got, &st, &err);
        if (ss == HS_UNSUPPORTED && partial)
            continue;  /* the head alone cannot do this search */
        if (ss != HS_OK)
            continue;  /* out of memory */
        uint64_t want = o.allow ? allowed : info.n;
        if (want > 12)
            want = 12;
        if (got != (int)want)
            __builtin_trap();  /* fewer than min(k, allowed), or more than k */
        for (int i = 0; i < got; i++)
            if (hits[i].id >= info.n || (o.allow && !roaring_bitmap_contains(allow, hits[i].id)))
                __builtin_trap();
    }
    roaring_bitmap_free(allow);
    free(q);
}

static void open_and_search(const uint8_t *img, size_t len, const uint8_t *data, size_t size)
{
    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    hs_status st = hnsw_open(img, len, &ix, &err);
    if (st != HS_OK) {
        if (ix || (st != HS_CORRUPT && st != HS_NOMEM))
            __builtin_trap();
    } else {
        search_all(ix, data, size, 0);
        hnsw_free(ix);
        ix = NULL;
    }
    /* the head: a length from the input, in a buffer of exactly that size */
    size_t head = len;
    if (size >= 2)
        head = len - ((size_t)data[0] | (size_t)data[1] << 8) % (len + 1);
    uint8_t *h = malloc(head ? head : 1);
    if (!h)
        return;
    memcpy(h, img, head);
    st = hnsw_open_prefix(h, head, &ix, &err);
    if (st == HS_OK)
        search_all(ix, data, size, 1);
    else if (ix || (st != HS_CORRUPT && st != HS_NOMEM && st != HS_UNSUPPORTED))
        __builtin_trap();
    hnsw_free(ix);
    free(h);
}

static void fix_checksum(uint8_t *p, size_t n)
{
    if (n < 136)
        return;
    uint32_t ver;
    memcpy(&ver, p + 8, 4);
    if (ver == 2) {
        /* version 2: the payload checksum (flat: payloads at 128, n * 4d
         * bytes) and the header checksum */
        uint64_t rows, ph;
        uint32_t d, quant, code;
        memcpy(&rows, p + 24, 8);
        memcpy(&d, p + 32, 4);
        memcpy(&quant, p + 40, 4);
        memcpy(&code, p + 72, 4);
        uint64_t stride = ((uint64_t)code + 3) & ~(uint64_t)3;
        if (rows < (1u << 20) && stride < (1u << 20) && 128 + rows * stride <= n) {
            ph = hs_xxh64(p + 128, (size_t)(rows * stride), 0);
            memcpy(p + 104, &ph, 8);
        }
        (void)d;
        (void)quant;
        uint64_t hh = hs_xxh64(p, 112, 0);
        memcpy(p + 112, &hh, 8);
    }
    uint64_t h = hs_xxh64(p, n - 8, 0);
    memcpy(p + n - 8, &h, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    if ((data[0] & 1) == 0) {
        size_t n = size - 1;
        uint8_t *img = malloc(n ? n : 1);  /* malloc: 16-byte aligned, searched in place */
        if (!img)
            return 0;
        memcpy(img, data + 1, n);
        fix_checksum(img, n);
        open_and_search(img, n, data + 1, n);
        free(img);
        return 0;
    }
    int v = data[1] % N_VARIANTS;
    if (!built[v])
        make_image(v);
    if (images[v].len == 0)
        return 0;
    size_t len = images[v].len;
    uint8_t *img = malloc(len);
    if (!img)
        return 0;
    memcpy(img, images[v].data, len);
    int keep_sum = 0;
    size_t cut = len;
    for (size_t i = 2; i + 3 <= size; i += 3) {
        uint32_t at = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8;
        uint8_t x = data[i + 2];
        if (at == 0xffff) {        /* special: truncate / keep the old checksum */
            if (x & 1)
                keep_sum = 1;
            else
                cut = len - (x % (len < 256 ? len : 256));
            continue;
        }
        /* offsets past 0x8000 address the end of the image (links, levels) */
        size_t off = at < 0x8000 ? at % len : len - 1 - (at - 0x8000) % len;
        img[off] ^= x;
    }
    if (!keep_sum)
        fix_checksum(img, cut);
    open_and_search(img, cut, data + 2, size - 2);
    free(img);
    return 0;
}
