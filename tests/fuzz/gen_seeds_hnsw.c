/*
 * tests/fuzz/gen_seeds_hnsw.c - writes tests/fuzz/seeds-fuzz_hnsw/ (not a
 * fuzz target: CMake builds only fuzz_*.c).
 *
 * fuzz_hnsw reads its input two ways (see its header): an even first byte
 * means "the rest is an image", an odd one "damage the cached image of
 * variant data[1] at the listed offsets".  The seeds are one image of each
 * quantizer built by hnsw_build/hnsw_save (even), and for each of the 12
 * variants an undamaged and a lightly damaged reference (odd).  Build and
 * run from the repository root after `make build`:
 *   cc -std=gnu11 -Iinclude -Isrc tests/fuzz/gen_seeds_hnsw.c build/libhyperstream.a \
 *      $(pkg-config --libs libzstd snappy liblz4 zlib libbrotlidec libbrotlienc jansson \
 *      libxxhash sqlite3 openblas) -lpg_query -lroaring -lpthread -lm -o /tmp/gen && /tmp/gen
 */
#include "base/buf.h"
#include "index/vector/hnsw.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put(const char *name, const uint8_t *p, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "tests/fuzz/seeds-fuzz_hnsw/%s", name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        _exit(1);
    }
}

int main(void)
{
    mkdir("tests/fuzz/seeds-fuzz_hnsw", 0755);
    static const vq_type quant[] = {VQ_FLAT, VQ_TQ8, VQ_TQ4, VQ_PQ, VQ_BIN};
    static const char *qname[] = {"flat", "tq8", "tq4", "pq", "bin"};
    size_t n = 24, d = 8;
    float x[24 * 8];
    uint64_t s = 12345;
    for (size_t i = 0; i < n * d; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) % 1000) / 100.0f - 5.0f;
    }
    for (int q = 0; q < 5; q++) {
        hnsw_params p;
        memset(&p, 0, sizeof p);
        p.M = 4;
        p.ef_construction = 16;
        p.n_threads = 1;
        p.quant.type = quant[q];
        p.metric = q == 1 ? HS_METRIC_COSINE : HS_METRIC_L2;
        p.ivf_lists = q == 0 ? 2 : 0;
        hnsw_index *ix = NULL;
        hs_error err = {0};
        hs_buf img = {0};
        if (hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err) != HS_OK ||
            hs_buf_append_byte(&img, 0) != HS_OK || hnsw_save(ix, &img, &err) != HS_OK) {
            fprintf(stderr, "%s: %s\n", qname[q], err.msg);
            return 1;
        }
        char name[64];
        snprintf(name, sizeof name, "image-%s", qname[q]);
        put(name, img.data, img.len);
        hs_buf_free(&img);
        hnsw_free(ix);
    }
    for (int v = 0; v < 12; v++) {
        uint8_t ref[2] = {1, (uint8_t)v};
        uint8_t dmg[8] = {1, (uint8_t)v, 40, 0, 0x10, 0x05, 0x80, 0x01};
        char name[64];
        snprintf(name, sizeof name, "variant-%02d", v);
        put(name, ref, sizeof ref);
        snprintf(name, sizeof name, "variant-%02d-damaged", v);
        put(name, dmg, sizeof dmg);
    }
    return 0;
}
