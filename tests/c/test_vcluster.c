/* tests/c/test_vcluster.c - clustered vector sections (table/vcluster.h).
 *
 *   test_blocks_vs_model   a batch of rows (nulls in the cluster, vector and
 *                          included columns) built into a section: the
 *                          directory lists every value once, in order; each
 *                          block holds exactly the rows a plain loop over the
 *                          input selects (positions, vectors bitwise,
 *                          included values and nulls)
 *   test_damage            every byte of a block flipped, every truncation:
 *                          HS_CORRUPT, never a crash; a directory entry past
 *                          the sidecar's size or out of shape: HS_CORRUPT
 *   test_sidecar_v3        a vector sidecar with the section after its graph
 *                          (format version 3) opens and searches as before
 *   test_resolve           the declaration's checks (unknown, unsupported,
 *                          duplicate columns)
 */
#include "harness.h"

#include "base/buf.h"
#include "base/mem.h"
#include "table/vcluster.h"
#include "table/vindex.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM 5
#define ROWS 700

static void add_field(hs_field *root, const char *name, hs_type t, int32_t id)
{
    hs_field f;
    hs_field_init(&f, name, t, true);
    f.field_id = id;
    if (hs_field_add_child(root, &f) != HS_OK)
        abort();
}

/* Schema: emb list<float> (1), cat string (2), id int64 (3), title string (4),
 * score float64 (5). */
static void make_schema(ice_schema *sc)
{
    memset(sc, 0, sizeof *sc);
    hs_field_init(&sc->root, "", HS_TYPE_STRUCT, false);
    hs_field elem, emb;
    hs_field_init(&elem, "element", HS_TYPE_FLOAT32, false);
    hs_field_init_list(&emb, "emb", true, &elem);
    emb.field_id = 1;
    if (hs_field_add_child(&sc->root, &emb) != HS_OK)
        abort();
    add_field(&sc->root, "cat", HS_TYPE_STRING, 2);
    add_field(&sc->root, "id", HS_TYPE_INT64, 3);
    add_field(&sc->root, "title", HS_TYPE_STRING, 4);
    add_field(&sc->root, "score", HS_TYPE_FLOAT64, 5);
}

static float vec_of(int r, int j) { return (float)((r * 31 + j * 7) % 101) / 7.0f - 3.0f; }
static bool vec_null(int r) { return r % 13 == 3; }
static bool cat_null(int r) { return r % 17 == 4; }
static int cat_of(int r) { return (r * 7) % 6; }
static bool title_null(int r) { return r % 5 == 0; }

static hs_batch *make_batch(const ice_schema *sc)
{
    hs_batch *b = NULL;
    if (hs_batch_create(&sc->root, ROWS, &b, NULL) != HS_OK)
        abort();
    char s[64];
    for (int r = 0; r < ROWS; r++) {
        hs_status st = HS_OK;
        if (vec_null(r)) {
            st = hs_col_append_null(b->cols[0]);
        } else {
            for (int j = 0; j < DIM && st == HS_OK; j++) {
                float x = vec_of(r, j);
                st = hs_col_append_fixed(b->cols[0]->children[0], &x);
            }
            if (st == HS_OK)
                st = hs_col_list_end(b->cols[0]);
        }
        snprintf(s, sizeof s, "c%d", cat_of(r));
        if (st == HS_OK)
            st = cat_null(r) ? hs_col_append_null(b->cols[1])
                             : hs_col_append_bytes(b->cols[1], s, strlen(s));
        int64_t id = 1000 + r;
        if (st == HS_OK)
            st = hs_col_append_fixed(b->cols[2], &id);
        snprintf(s, sizeof s, "title %d%s", r, r % 3 ? "" : " long and longer");
        if (st == HS_OK)
            st = title_null(r) ? hs_col_append_null(b->cols[3])
                               : hs_col_append_bytes(b->cols[3], s, strlen(s));
        double score = r * 0.5;
        if (st == HS_OK)
            st = hs_col_append_fixed(b->cols[4], &score);
        if (st != HS_OK)
            abort();
    }
    b->n_rows = ROWS;
    return b;
}

/* Builds the section of batch b after `prefix` bytes; *dir_text owned by
 * the caller. */
static hs_status build_section_of(const ice_schema *sc, const hs_batch *b, const char *params,
                                  size_t prefix, hs_buf *out, char **dir_text, hs_error *err)
{
    tbl_vcl_cols cols;
    bool found = false;
    HS_TRY(tbl_vcl_resolve(params, sc, 1, &cols, &found, err));
    if (!found)
        return hs_err_set(err, HS_INVALID, "no cluster declared");
    tbl_vcbuilder *vb = NULL;
    hs_status st = tbl_vcbuilder_new(&cols, 1, ROWS, &vb, err);
    if (st == HS_OK && hs_buf_append_zeros(out, prefix) != HS_OK)
        st = hs_err_nomem(err, prefix);
    /* two batches' worth: rows 0..ROWS as one, positions from 0 */
    if (st == HS_OK)
        st = tbl_vcbuilder_add(vb, b, 0, err);
    if (st == HS_OK)
        st = tbl_vcbuilder_finish(vb, out, dir_text, err);
    tbl_vcbuilder_free(vb);
    return st;
}

static hs_status build_section(const ice_schema *sc, const char *params, size_t prefix,
                               hs_buf *out, char **dir_text, hs_error *err)
{
    hs_batch *b = make_batch(sc);
    hs_status st = build_section_of(sc, b, params, prefix, out, dir_text, err);
    hs_batch_free(b);
    return st;
}

static void test_blocks_vs_model(void)
{
    ice_schema sc;
    make_schema(&sc);
    hs_buf out = {0};
    char *dir_text = NULL;
    hs_error err = {0};
    CHECK_OK(build_section(&sc, "{\"cluster\":\"cat\",\"include\":[\"id\",\"title\",\"score\"]}",
                           100, &out, &dir_text, &err), &err);
    REQUIRE(dir_text != NULL);
    tbl_vcdir dir;
    CHECK_OK(tbl_vcdir_parse(dir_text, &dir, &err), &err);
    CHECK(dir.cluster_fid == 2 && dir.n_include == 3 && dir.include_fid[0] == 3 &&
          dir.include_fid[1] == 4 && dir.include_fid[2] == 5);
    CHECK(json_array_size(dir.values) == 6);
    for (int c = 0; c < 6; c++) {
        char key[8];
        snprintf(key, sizeof key, "c%d", c);
        /* in order: the c-th entry is value c */
        CHECK(strcmp(json_string_value(json_array_get(json_array_get(dir.values, (size_t)c), 0)),
                     key) == 0);
        tbl_vcl_key k = {false, 0, (const uint8_t *)key, strlen(key)};
        bool found = false;
        uint64_t off = 0, len = 0;
        uint32_t rows = 0;
        CHECK_OK(tbl_vcdir_find(&dir, &k, (int64_t)out.len, &found, &off, &len, &rows, &err),
                 &err);
        REQUIRE(found && off >= 100 && off + len <= out.len);
        uint8_t *p = hs_malloc_aligned((size_t)len);
        REQUIRE(p);
        memcpy(p, out.data + off, (size_t)len);
        tbl_vcblock b;
        CHECK_OK(tbl_vcblock_decode(p, (size_t)len, ROWS, &b, &err), &err);
        CHECK(b.key_hash == tbl_vcl_key_hash(&k) && b.dim == DIM && b.n_include == 3);
        /* the model: rows with this value, a vector and a cluster value */
        uint32_t i = 0;
        for (int r = 0; r < ROWS; r++) {
            if (vec_null(r) || cat_null(r) || cat_of(r) != c)
                continue;
            REQUIRE(i < b.rows);
            CHECK(b.pos[i] == (uint32_t)r);
            for (int j = 0; j < DIM; j++)
                CHECK(b.vecs[(size_t)i * DIM + j] == vec_of(r, j));
            int64_t id;
            memcpy(&id, b.inc[0].values + (size_t)i * 8, 8);
            CHECK(id == 1000 + r);
            bool tv = (b.inc[1].validity[i / 8] >> (i % 8)) & 1;
            CHECK(tv == !title_null(r));
            if (tv) {
                char s[64];
                snprintf(s, sizeof s, "title %d%s", r, r % 3 ? "" : " long and longer");
                uint32_t s0 = b.inc[1].offsets[i], s1 = b.inc[1].offsets[i + 1];
                CHECK(s1 - s0 == strlen(s) && memcmp(b.inc[1].values + s0, s, s1 - s0) == 0);
            }
            double score;
            memcpy(&score, b.inc[2].values + (size_t)i * 8, 8);
            CHECK(score == r * 0.5);
            i++;
        }
        CHECK(i == b.rows && rows == b.rows);
        hs_free_aligned(p);
    }
    tbl_vcl_key none = {false, 0, (const uint8_t *)"c9", 2};
    bool found = true;
    uint64_t off, len;
    uint32_t rows;
    CHECK_OK(tbl_vcdir_find(&dir, &none, (int64_t)out.len, &found, &off, &len, &rows, &err),
             &err);
    CHECK(!found);
    tbl_vcdir_clear(&dir);
    hs_free(dir_text);
    hs_buf_free(&out);
    ice_schema_clear(&sc);
}

static void test_damage(void)
{
    ice_schema sc;
    make_schema(&sc);
    hs_buf out = {0};
    char *dir_text = NULL;
    hs_error err = {0};
    CHECK_OK(build_section(&sc, "{\"cluster\":\"cat\",\"include\":\"title\"}", 0, &out,
                           &dir_text, &err), &err);
    tbl_vcdir dir;
    CHECK_OK(tbl_vcdir_parse(dir_text, &dir, &err), &err);
    tbl_vcl_key k = {false, 0, (const uint8_t *)"c3", 2};
    bool found = false;
    uint64_t off = 0, len = 0;
    uint32_t rows = 0;
    CHECK_OK(tbl_vcdir_find(&dir, &k, (int64_t)out.len, &found, &off, &len, &rows, &err), &err);
    REQUIRE(found);
    /* past the sidecar's size: the directory is not trusted */
    CHECK(tbl_vcdir_find(&dir, &k, (int64_t)(off + len - 1), &found, &off, &len, &rows, NULL) ==
          HS_CORRUPT);
    CHECK_OK(tbl_vcdir_find(&dir, &k, (int64_t)out.len, &found, &off, &len, &rows, &err), &err);
    uint8_t *p = hs_malloc_aligned((size_t)len);
    REQUIRE(p);
    tbl_vcblock b;
    int flips_caught = 0;
    for (size_t i = 0; i < len; i++) {
        memcpy(p, out.data + off, (size_t)len);
        p[i] ^= 0x5a;
        flips_caught += tbl_vcblock_decode(p, (size_t)len, ROWS, &b, NULL) == HS_CORRUPT;
    }
    CHECK(flips_caught == (int)len);
    int cuts_caught = 0;
    for (size_t n = 0; n < len; n++) {
        memcpy(p, out.data + off, (size_t)len);
        cuts_caught += tbl_vcblock_decode(p, n, ROWS, &b, NULL) == HS_CORRUPT;
    }
    CHECK(cuts_caught == (int)len);
    /* a row bound below the block's positions */
    memcpy(p, out.data + off, (size_t)len);
    CHECK(tbl_vcblock_decode(p, (size_t)len, 10, &b, NULL) == HS_CORRUPT);
    CHECK_OK(tbl_vcblock_decode(p, (size_t)len, ROWS, &b, &err), &err);
    hs_free_aligned(p);
    tbl_vcdir_clear(&dir);
    /* malformed directories */
    const char *bad[] = {"", "[]", "{\"field-id\":2}", "{\"field-id\":-1,\"include\":[],"
                         "\"values\":[]}", "{\"field-id\":2,\"include\":[\"x\"],\"values\":[]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(tbl_vcdir_parse(bad[i], &dir, NULL) == HS_CORRUPT);
    CHECK_OK(tbl_vcdir_parse("{\"field-id\":2,\"include\":[],\"values\":[[\"c3\",-5,100,1],"
                             "[\"c4\",0,10,1],[\"c5\",0,100]]}", &dir, &err), &err);
    const char *names[] = {"c3", "c4", "c5"};
    for (int i = 0; i < 3; i++) {
        tbl_vcl_key kk = {false, 0, (const uint8_t *)names[i], 2};
        CHECK(tbl_vcdir_find(&dir, &kk, 1000, &found, &off, &len, &rows, NULL) == HS_CORRUPT);
    }
    tbl_vcdir_clear(&dir);
    hs_free(dir_text);
    hs_buf_free(&out);
    ice_schema_clear(&sc);
}

static void test_sidecar_v3(void)
{
    ice_schema sc;
    make_schema(&sc);
    hs_batch *b = make_batch(&sc);
    tbl_vbuilder *vb = NULL;
    hs_buf out = {0};
    hs_error err = {0};
    const char *params = "{\"cluster\":\"cat\",\"include\":[\"id\"],\"m\":8}";
    CHECK_OK(tbl_vbuilder_new("hnsw", params, &sc.root.children[0], 12345, ROWS, &vb, &err),
             &err);
    tbl_vbuilder_set_threads(vb, 1);
    CHECK_OK(tbl_vbuilder_add(vb, b->cols[0], 0, &err), &err);
    CHECK_OK(tbl_vbuilder_finish(vb, &out, &err), &err);
    size_t plain = out.len;
    tbl_vcl_cols cols;
    bool found;
    CHECK_OK(tbl_vcl_resolve(params, &sc, 1, &cols, &found, &err), &err);
    tbl_vcbuilder *cb = NULL;
    char *dir = NULL;
    CHECK_OK(tbl_vcbuilder_new(&cols, 1, ROWS, &cb, &err), &err);
    CHECK_OK(tbl_vcbuilder_add(cb, b, 0, &err), &err);
    CHECK_OK(tbl_vcbuilder_finish(cb, &out, &dir, &err), &err);
    CHECK(dir != NULL && out.len > plain);
    CHECK_OK(tbl_vindex_mark_clustered(out.data, plain, &err), &err);
    uint8_t *p = hs_malloc_aligned(out.len);
    REQUIRE(p);
    memcpy(p, out.data, out.len);
    tbl_vindex *vi = NULL;
    CHECK_OK(tbl_vindex_open_image(p, out.len, true, &vi, &err), &err);
    if (vi) {
        tbl_vindex_info info;
        tbl_vindex_get_info(vi, &info);
        CHECK(info.n_rows == ROWS && info.dim == DIM);
        /* the graph answers: each stored vector finds its own row */
        int ok = 0, tried = 0;
        for (int r = 0; r < ROWS; r += 37) {
            if (vec_null(r))
                continue;
            float q[DIM];
            for (int j = 0; j < DIM; j++)
                q[j] = vec_of(r, j);
            hnsw_hit h;
            int n = 0;
            hnsw_search_opts o = {.k = 1, .ef = 200};
            CHECK_OK(hnsw_search(tbl_vindex_hnsw(vi), q, &o, &h, &n, NULL, &err), &err);
            tried++;
            ok += n == 1 && h.dist == 0.0f;
        }
        CHECK(ok == tried);
    }
    tbl_vindex_close(vi);
    /* the header's flag says a section follows: without the mark the extra
     * bytes are the graph's, and the graph's checks refuse them */
    uint8_t *q = hs_malloc_aligned(out.len);
    REQUIRE(q);
    memcpy(q, out.data, out.len);
    uint32_t v2 = 1, flags;
    memcpy(&flags, q + 48, 4);
    flags &= ~4u;
    memcpy(q + 8, &v2, 4);
    memcpy(q + 48, &flags, 4);
    CHECK(tbl_vindex_open_image(q, out.len, true, &vi, NULL) == HS_CORRUPT);
    hs_free(dir);
    tbl_vcbuilder_free(cb);
    tbl_vbuilder_free(vb);
    hs_batch_free(b);
    hs_buf_free(&out);
    ice_schema_clear(&sc);
}

static void test_resolve(void)
{
    ice_schema sc;
    make_schema(&sc);
    tbl_vcl_cols cols;
    bool found = true;
    hs_error err = {0};
    CHECK_OK(tbl_vcl_resolve("{\"m\":8}", &sc, 1, &cols, &found, &err), &err);
    CHECK(!found);
    CHECK(tbl_vcl_resolve("{\"cluster\":\"nope\"}", &sc, 1, &cols, &found, NULL) == HS_INVALID);
    CHECK(tbl_vcl_resolve("{\"cluster\":\"score\"}", &sc, 1, &cols, &found, NULL) == HS_INVALID);
    CHECK(tbl_vcl_resolve("{\"cluster\":\"emb\"}", &sc, 1, &cols, &found, NULL) == HS_INVALID);
    CHECK(tbl_vcl_resolve("{\"cluster\":\"cat\",\"include\":[\"id\",\"id\"]}", &sc, 1, &cols,
                          &found, NULL) == HS_INVALID);
    CHECK(tbl_vcl_resolve("{\"cluster\":\"cat\",\"include\":[\"cat\"]}", &sc, 1, &cols, &found,
                          NULL) == HS_INVALID);
    CHECK(tbl_vcl_resolve("{\"cluster\":\"cat\",\"include\":[\"emb\"]}", &sc, 1, &cols, &found,
                          NULL) == HS_INVALID);
    CHECK_OK(tbl_vcl_resolve("{\"cluster\":\"id\",\"include\":\"title\"}", &sc, 1, &cols, &found,
                             &err), &err);
    CHECK(found && cols.cluster->field_id == 3 && cols.n_include == 1 &&
          cols.include[0]->field_id == 4);
    ice_schema_clear(&sc);
}

/* Building and decoding under an allocation failure at every step: an
 * error (HS_NOMEM) or the same section, and nothing leaked. */
static void test_oom(void)
{
    ice_schema sc;
    make_schema(&sc);
    const char *params = "{\"cluster\":\"cat\",\"include\":[\"id\",\"title\"]}";
    hs_buf ref = {0};
    char *ref_dir = NULL;
    hs_error err = {0};
    CHECK_OK(build_section(&sc, params, 8, &ref, &ref_dir, &err), &err);
    hs_batch *b = make_batch(&sc);
    int64_t live = hs_test_live_count();
    int fails = 0, oks = 0;
    for (int64_t nth = 1; nth < 20000; nth += 1 + nth / 40) {
        hs_buf out = {0};
        char *dir = NULL;
        hs_err_clear(&err);
        hs_mem_fail_after(nth);
        hs_status st = build_section_of(&sc, b, params, 8, &out, &dir, &err);
        hs_mem_fail_after(0);
        if (st == HS_OK) {
            oks++;
            CHECK(out.len == ref.len && memcmp(out.data, ref.data, ref.len) == 0 &&
                  strcmp(dir, ref_dir) == 0);
        } else {
            fails++;
            CHECK(st == HS_NOMEM && err.msg[0]);
        }
        hs_free(dir);
        hs_buf_free(&out);
        CHECK(hs_test_live_count() == live);
        if (st == HS_OK)
            break;
    }
    CHECK(fails > 10 && oks == 1);
    hs_batch_free(b);
    hs_free(ref_dir);
    hs_buf_free(&ref);
    ice_schema_clear(&sc);
}

int main(void)
{
    HS_RUN(test_blocks_vs_model);
    HS_RUN(test_damage);
    HS_RUN(test_sidecar_v3);
    HS_RUN(test_resolve);
    HS_RUN(test_oom);
    return hs_test_summary();
}
