/*
 * tests/fuzz/gen_seeds_wal.c - writes tests/fuzz/seeds-fuzz_wal/ (not a fuzz
 * target: CMake builds only fuzz_*.c): log segments written by wal.c whose
 * records hold payloads of fuzz_wal.h's schema (0, 1, 5 and 40 rows, nulls
 * in every nullable column), one with a torn last record, plus two bare
 * payloads.  Build and run from the repository root after `make build`:
 *   cc -std=gnu11 -Iinclude -Isrc -Itests/fuzz tests/fuzz/gen_seeds_wal.c \
 *      build/libhyperstream.a $(pkg-config --libs libzstd snappy liblz4 zlib \
 *      libbrotlidec libbrotlienc jansson libxxhash sqlite3 openblas) -lpg_query \
 *      -lroaring -lpthread -lm -o /tmp/gen && /tmp/gen
 */
#include "base/buf.h"
#include "fuzz_wal.h"
#include "io/io.h"
#include "table/wal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(const char *name, const uint8_t *p, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "tests/fuzz/seeds-fuzz_wal/%s", name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        _exit(1);
    }
}

static hs_batch *rows(const hs_field *schema, int64_t n)
{
    hs_batch *b = NULL;
    if (hs_batch_create(schema, n, &b, NULL) != HS_OK)
        _exit(1);
    for (int64_t r = 0; r < n; r++) {
        int32_t iv = (int32_t)r;
        uint8_t bv = r & 1;
        char t[16];
        int len = snprintf(t, sizeof t, "r%d", (int)r);
        hs_status st = r % 3 == 1 ? hs_col_append_null(b->cols[0])
                                  : hs_col_append_fixed(b->cols[0], &iv);
        st |= r % 4 == 2 ? hs_col_append_null(b->cols[1])
                         : hs_col_append_bytes(b->cols[1], t, (size_t)len);
        st |= hs_col_append_fixed(b->cols[2], &bv);
        if (r % 5 == 3) {
            st |= hs_col_append_null(b->cols[3]);
        } else {
            for (int k = 0; k < (int)(r % 3); k++) {
                float x = (float)k;
                st |= hs_col_append_fixed(b->cols[3]->children[0], &x);
            }
            st |= hs_col_list_end(b->cols[3]);
        }
        st |= hs_col_append_null(b->cols[4]);
        if (r % 2) {
            st |= hs_col_append_null(b->cols[5]);
        } else {
            int64_t x = r * 1000;
            st |= hs_col_append_fixed(b->cols[5]->children[0], &x);
            st |= hs_col_append_bytes(b->cols[5]->children[1], t, (size_t)len);
            st |= hs_col_struct_append_valid(b->cols[5]);
        }
        if (st != HS_OK)
            _exit(1);
    }
    b->n_rows = n;
    return b;
}

int main(void)
{
    hs_field schema;
    if (fuzz_wal_schema(&schema) != 0)
        return 1;
    char dir[] = "/tmp/gen-wal-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char wdir[64];
    snprintf(wdir, sizeof wdir, "%s/wal", dir);
    wal_options o = {.table_uuid = "6a1f6c9e-8f7e-4c63-9c1e-3f5d2a0b9e11"};
    wal *w = NULL;
    hs_error err = {0};
    if (wal_open(wdir, &o, 0, NULL, NULL, &w, &err) != HS_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int64_t sizes[] = {0, 1, 5, 40};
    for (int i = 0; i < 4; i++) {
        hs_batch *b = rows(&schema, sizes[i]);
        hs_buf p = {0};
        if (wal_batch_encode(b, 1, &p, &err) != HS_OK)
            return 1;
        uint64_t seq;
        if (wal_append(w, p.data, p.len, &seq, &err) != HS_OK)
            return 1;
        char name[32];
        snprintf(name, sizeof name, "payload-%lld", (long long)sizes[i]);
        if (i == 1 || i == 3)
            put(name, p.data, p.len);
        hs_buf_free(&p);
        hs_batch_free(b);
    }
    wal_close(w);
    char seg[128];
    snprintf(seg, sizeof seg, "%s/%020d.wal", wdir, 1);
    hs_buf img = {0};
    if (hs_local_read_all(seg, &img, &err) != HS_OK)
        return 1;
    put("segment-4", img.data, img.len);
    put("segment-torn", img.data, img.len - 7);
    put("segment-empty", img.data, WAL_SEG_HEADER);
    hs_buf_free(&img);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    hs_field_clear(&schema);
    return 0;
}
