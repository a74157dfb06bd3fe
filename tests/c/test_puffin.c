/* Puffin files and deletion-vector-v1 blobs: round trips through memory and
 * local files, hand-built bytes from the spec, and corrupt input rejected.
 * The independent oracle (pyiceberg's PuffinFile + DeletionVector, pyroaring)
 * is in tests/python/test_manifest_oracle.py. */
#include "base/hash.h"
#include "base/mem.h"
#include "harness.h"
#include "iceberg/puffin.h"

static void test_dv_roundtrip(void)
{
    hs_error err = {0};
    roaring_bitmap_t *a = roaring_bitmap_create();
    roaring_bitmap_t *b = roaring_bitmap_create();
    roaring_bitmap_t *c = roaring_bitmap_create(); /* empty */
    for (uint32_t i = 0; i < 1000; i += 3)
        roaring_bitmap_add(a, i);
    roaring_bitmap_add_range(b, 100000, 200000); /* run container */
    roaring_bitmap_add(b, 4000000000u);
    for (uint32_t i = 0; i < 65536; i += 2)
        roaring_bitmap_add(b, (1u << 20) + i); /* bitset container */
    ice_dv_input dvs[3] = {{"s3://b/data/a.parquet", a}, {"data/b.parquet", b}, {"c", c}};
    ice_blob_loc locs[3];
    hs_buf file = {0};
    hs_wfile *w;
    CHECK_OK(hs_mem_create(&file, &w, &err), &err);
    CHECK_OK(ice_puffin_write_dvs(w, dvs, 3, NULL, locs, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    REQUIRE(file.len > 16);
    CHECK(memcmp(file.data, "PFA1", 4) == 0 && memcmp(file.data + file.len - 4, "PFA1", 4) == 0);
    CHECK(locs[0].offset == 4);
    CHECK(locs[1].offset == locs[0].offset + locs[0].length);
    CHECK(locs[0].cardinality == 334);
    CHECK(locs[2].cardinality == 0);

    hs_file *f;
    CHECK_OK(hs_mem_open("mem.puffin", file.data, file.len, false, &f, &err), &err);
    hs_arena arena = {0};
    ice_puffin_footer ft;
    CHECK_OK(ice_puffin_read_footer(f, &arena, &ft, &err), &err);
    REQUIRE(ft.n_blobs == 3);
    for (int i = 0; i < 3; i++) {
        CHECK(strcmp(ft.blobs[i].type, ICE_BLOB_TYPE_DV) == 0);
        CHECK(ft.blobs[i].offset == locs[i].offset && ft.blobs[i].length == locs[i].length);
        CHECK(ft.blobs[i].snapshot_id == -1 && ft.blobs[i].sequence_number == -1);
        CHECK(ft.blobs[i].n_fields == 1 && ft.blobs[i].fields[0] == ICE_ROW_POSITION_FIELD_ID);
        const char *ref = ice_puffin_blob_prop(&ft.blobs[i], "referenced-data-file");
        CHECK(ref && strcmp(ref, dvs[i].referenced_data_file) == 0);
        roaring_bitmap_t *got = NULL;
        CHECK_OK(ice_dv_read(f, locs[i].offset, locs[i].length, &got, &err), &err);
        CHECK(roaring_bitmap_equals(got, dvs[i].positions));
        roaring_bitmap_free(got);
    }
    CHECK(strcmp(ice_puffin_blob_prop(&ft.blobs[1], "cardinality"), "100001") != 0);
    char card[32];
    snprintf(card, sizeof card, "%llu", (unsigned long long)roaring_bitmap_get_cardinality(b));
    CHECK(strcmp(ice_puffin_blob_prop(&ft.blobs[1], "cardinality"), card) == 0);
    CHECK(ft.n_props == 1 && strcmp(ft.prop_keys[0], "created-by") == 0);

    /* out-of-range reads */
    roaring_bitmap_t *got = NULL;
    CHECK(ice_dv_read(f, (int64_t)file.len - 2, 10, &got, &err) == HS_CORRUPT);
    CHECK(got == NULL);
    hs_file_close(f);
    hs_arena_destroy(&arena);
    hs_buf_free(&file);
    roaring_bitmap_free(a);
    roaring_bitmap_free(b);
    roaring_bitmap_free(c);
}

/* A blob built byte by byte from the spec (not by our encoder). */
static void test_dv_spec_bytes(void)
{
    /* portable 32-bit bitmap {1, 5, 7}: cookie 12346, 1 container, key 0 card-1 2,
     * offset 16, values */
    uint8_t rb[] = {0x3A, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 16, 0, 0, 0, 1, 0, 5, 0, 7, 0};
    uint8_t blob[4 + 4 + 8 + 4 + sizeof rb + 4];
    size_t vlen = 8 + 4 + sizeof rb;
    blob[0] = 0; blob[1] = 0; blob[2] = 0; blob[3] = (uint8_t)(4 + vlen);
    blob[4] = 0xD1; blob[5] = 0xD3; blob[6] = 0x39; blob[7] = 0x64;
    memset(blob + 8, 0, 12);
    blob[8] = 1; /* one bucket, key 0 */
    memcpy(blob + 20, rb, sizeof rb);
    uint32_t crc = hs_crc32(0, blob + 4, 4 + vlen);
    uint8_t *t = blob + 8 + vlen;
    t[0] = (uint8_t)(crc >> 24); t[1] = (uint8_t)(crc >> 16); t[2] = (uint8_t)(crc >> 8); t[3] = (uint8_t)crc;

    hs_error err = {0};
    roaring_bitmap_t *got = NULL;
    CHECK_OK(ice_dv_decode("spec", blob, sizeof blob, &got, &err), &err);
    CHECK(roaring_bitmap_get_cardinality(got) == 3);
    CHECK(roaring_bitmap_contains(got, 1) && roaring_bitmap_contains(got, 5) &&
          roaring_bitmap_contains(got, 7));
    roaring_bitmap_free(got);

    /* our encoder produces exactly these bytes for the same set */
    roaring_bitmap_t *in = roaring_bitmap_of(3, 1, 5, 7);
    hs_buf enc = {0};
    CHECK_OK(ice_dv_encode(in, &enc, &err), &err);
    CHECK(enc.len == sizeof blob && memcmp(enc.data, blob, sizeof blob) == 0);
    hs_buf_free(&enc);
    roaring_bitmap_free(in);

    /* every single-byte corruption is rejected or decodes cleanly; none crash */
    for (size_t i = 0; i < sizeof blob; i++) {
        uint8_t bad[sizeof blob];
        memcpy(bad, blob, sizeof blob);
        bad[i] ^= 0x5A;
        hs_error e2 = {0};
        hs_status s = ice_dv_decode("bad", bad, sizeof bad, &got, &e2);
        CHECK(s == HS_CORRUPT); /* the CRC or the length catches every flip */
        CHECK(got == NULL);
    }
    for (size_t n = 0; n < sizeof blob; n++) {
        hs_error e2 = {0};
        CHECK(ice_dv_decode("short", blob, n, &got, &e2) == HS_CORRUPT);
    }

    /* a bucket with key 1 (positions >= 2^32): unsupported */
    uint8_t big[sizeof blob];
    memcpy(big, blob, sizeof blob);
    big[16] = 1; /* high key 1 */
    crc = hs_crc32(0, big + 4, 4 + vlen);
    t = big + 8 + vlen;
    t[0] = (uint8_t)(crc >> 24); t[1] = (uint8_t)(crc >> 16); t[2] = (uint8_t)(crc >> 8); t[3] = (uint8_t)crc;
    CHECK(ice_dv_decode("big", big, sizeof big, &got, &err) == HS_UNSUPPORTED);

    /* unsorted array values with a valid CRC: corrupt */
    memcpy(big, blob, sizeof blob);
    big[20 + 16] = 9; /* {9, 5, 7} */
    crc = hs_crc32(0, big + 4, 4 + vlen);
    t[0] = (uint8_t)(crc >> 24); t[1] = (uint8_t)(crc >> 16); t[2] = (uint8_t)(crc >> 8); t[3] = (uint8_t)crc;
    hs_err_clear(&err);
    CHECK(ice_dv_decode("unsorted", big, sizeof big, &got, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "ascending") != NULL);
}

static size_t make_puffin(uint8_t *out, const char *head, const char *payload, int64_t size_field,
                          uint8_t flags)
{
    size_t n = strlen(payload), pos = 0;
    memcpy(out, head, 4);
    memcpy(out + 4, "PFA1", 4);
    memcpy(out + 8, payload, n);
    pos = 8 + n;
    uint32_t sz = size_field < 0 ? (uint32_t)n : (uint32_t)size_field;
    uint8_t tail[8] = {(uint8_t)sz, (uint8_t)(sz >> 8), (uint8_t)(sz >> 16), (uint8_t)(sz >> 24),
                       flags, 0, 0, 0};
    memcpy(out + pos, tail, 8);
    memcpy(out + pos + 8, "PFA1", 4);
    return pos + 12;
}

static void test_puffin_bad_footer(void)
{
    hs_error err = {0};
    hs_arena arena = {0};
    ice_puffin_footer ft;
    static const struct {
        const char *head, *payload;
        int64_t size_field;
        uint8_t flags;
        hs_status want;
    } cases[] = {
        {"PFA1", "{\"blobs\":[]}", -1, 0, HS_OK},
        {"PFA1", "{\"blobs\":3}", -1, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[]}", 255, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[]}", 3, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[]}", -1, 1, HS_UNSUPPORTED},
        {"XXXX", "{\"blobs\":[]}", -1, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[{\"type\":\"x\",\"fields\":[],\"snapshot-id\":1,"
                 "\"sequence-number\":1,\"offset\":4,\"length\":100}]}", -1, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[{\"type\":\"x\",\"fields\":[1],\"snapshot-id\":1,"
                 "\"sequence-number\":1,\"offset\":4,\"length\":0}]}", -1, 0, HS_OK},
        {"PFA1", "{\"blobs\":[{\"type\":\"x\",\"fields\":[\"a\"],\"snapshot-id\":1,"
                 "\"sequence-number\":1,\"offset\":4,\"length\":0}]}", -1, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[{\"type\":\"x\",\"fields\":[],\"offset\":4,\"length\":0}]}",
         -1, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[], \"properties\":{\"a\":1}}", -1, 0, HS_CORRUPT},
        {"PFA1", "{\"blobs\":[] ", -1, 0, HS_CORRUPT},
    };
    uint8_t buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = make_puffin(buf, cases[i].head, cases[i].payload, cases[i].size_field,
                                 cases[i].flags);
        hs_file *f;
        CHECK_OK(hs_mem_open("bad.puffin", buf, len, false, &f, &err), &err);
        hs_err_clear(&err);
        hs_status s = ice_puffin_read_footer(f, &arena, &ft, &err);
        if (s != cases[i].want)
            fprintf(stderr, "case %zu: got %d (%s)\n", i, s, err.msg);
        CHECK(s == cases[i].want);
        if (s == HS_CORRUPT)
            CHECK(strstr(err.msg, "bad.puffin") != NULL);
        hs_file_close(f);
    }
    hs_arena_destroy(&arena);
}

static void test_puffin_local_file(void)
{
    hs_error err = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/dv.puffin", hs_test_tmpdir());
    roaring_bitmap_t *a = roaring_bitmap_of(4, 0, 2, 4, 1000000);
    ice_dv_input dv = {"data/x.parquet", a};
    ice_blob_loc loc;
    hs_wfile *w;
    CHECK_OK(hs_local_create(path, false, &w, &err), &err);
    CHECK_OK(ice_puffin_write_dvs(w, &dv, 1, "test", &loc, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    hs_file *f;
    CHECK_OK(hs_local_open(path, &f, &err), &err);
    roaring_bitmap_t *got = NULL;
    CHECK_OK(ice_dv_read(f, loc.offset, loc.length, &got, &err), &err);
    CHECK(roaring_bitmap_equals(a, got));
    roaring_bitmap_free(got);
    hs_file_close(f);
    roaring_bitmap_free(a);
}

int main(void)
{
    HS_RUN(test_dv_roundtrip);
    HS_RUN(test_dv_spec_bytes);
    HS_RUN(test_puffin_bad_footer);
    HS_RUN(test_puffin_local_file);
    return hs_test_summary();
}
