/*
 * tests/c/test_table_search.c - vector sidecars (table/vindex.h) and
 * hs_table_search (hyperstream/index.h).
 *
 *   params     kinds and parameters (dict names too), bad ones refused
 *   builder    a sidecar built from columns with null vectors: the position
 *              map, ids_of, the graph finds each stored vector at distance 0
 *              at its own file position; bad input (mixed dimensions, null
 *              elements, NaN, rows out of order) refused with a message
 *   damage     every truncation and byte flips of an image: open fails with
 *              HS_CORRUPT (or, for a flip in padding, opens) and never
 *              crashes or leaks (run under ASan in CI)
 *   search     a 3-file table with null vectors and deletes: exact search
 *              against a brute-force double-precision oracle written here
 *              (ids, distances, filters, k beyond the matches, metrics),
 *              errors; with an hnsw index: every result a true neighbour
 *              distance, recall
 *   oom        hs_table_search under an allocation failure at every step
 *              (every few steps when there are many), from cold caches:
 *              an error with a message or the right answer, and no leak
 */
#include "harness.h"

#include "base/hash.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/index.h"
#include "hyperstream/config.h"
#include "hyperstream/table.h"
#include "parquet/reader.h"
#include "io/io.h"
#include "table/mcache.h"
#include "table/table_int.h"
#include "table/vindex.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIM 8
#define FILES 3
#define PER_FILE 400
#define N_ROWS (FILES * PER_FILE)

/* ---- rows: a deterministic generator ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static float comp(int64_t row, int j)
{
    return (float)((double)(mix((uint64_t)row * 131 + (uint64_t)j) >> 11) / 9007199254740992.0 *
                   2.0 - 1.0);
}

static bool vec_null(int64_t row) { return row % 29 == 3; }
static bool deleted(int64_t row) { return row % 97 == 5 || (row >= 40 && row < 60); }

static void list_field(hs_field *f, const char *name)
{
    hs_field elem;
    hs_field_init(&elem, "element", HS_TYPE_FLOAT32, true);
    hs_field_init_list(f, name, true, &elem);
}

/* Vectors of rows [start, start + n) as a list<float> column. */
static hs_column *vector_column(int64_t start, int64_t n, int dim)
{
    hs_field f;
    list_field(&f, "v");
    hs_column *c = NULL;
    hs_status st = hs_col_create(&f, n, &c, NULL);
    hs_field_clear(&f);
    for (int64_t i = start; st == HS_OK && i < start + n; i++) {
        if (vec_null(i)) {
            st = hs_col_append_null(c);
            continue;
        }
        for (int j = 0; j < dim && st == HS_OK; j++) {
            float x = comp(i, j);
            st = hs_col_append_fixed(c->children[0], &x);
        }
        if (st == HS_OK)
            st = hs_col_list_end(c);
    }
    if (st != HS_OK) {
        hs_col_free(c);
        return NULL;
    }
    return c;
}

/* ---- params ---- */

static void test_params(void)
{
    int64_t live = hs_test_live_count();
    tbl_vindex_spec s;
    hs_error err = {0};
    CHECK_OK(tbl_vindex_parse("hnsw", NULL, &s, &err), &err);
    CHECK(strcmp(s.kind, "hnsw") == 0 && s.hp.quant.type == VQ_FLAT &&
          s.hp.metric == HS_METRIC_L2 && s.hp.ivf_lists == 0);
    CHECK_OK(tbl_vindex_parse(NULL, "{\"type\":\"hnsw_pq\",\"complexity\":32,\"quality\":300,"
                                    "\"compression\":16,\"metric\":\"cosine\"}", &s, &err), &err);
    CHECK(strcmp(s.kind, "hnsw_pq") == 0 && s.hp.quant.type == VQ_PQ && s.hp.M == 32 &&
          s.hp.ef_construction == 300 && s.hp.quant.pq_m == 16 &&
          s.hp.metric == HS_METRIC_COSINE);
    CHECK_OK(tbl_vindex_parse("ivf_hnsw_tq4", "{\"ivf_lists\":9,\"nprobe\":3,\"m\":8}", &s, &err),
             &err);
    CHECK(s.hp.quant.type == VQ_TQ4 && s.hp.ivf_lists == 9 && s.hp.ivf_nprobe == 3);
    CHECK_OK(tbl_vindex_parse("ivf_hnsw", NULL, &s, &err), &err);
    CHECK(s.hp.ivf_lists < 0);   /* chosen per file */
    hs_buf b = {0};
    CHECK_OK(tbl_vindex_parse("hnsw_tq8", "{\"m\":12,\"ef_search\":99,\"metric\":\"ip\"}", &s,
                              &err), &err);
    CHECK(tbl_vindex_params_json(&s, &b) == HS_OK);
    CHECK(b.len > 0 && strstr(hs_buf_cstr(&b), "\"m\":12") &&
          strstr(hs_buf_cstr(&b), "\"metric\":\"ip\"") &&
          strstr(hs_buf_cstr(&b), "\"ef_search\":99"));
    hs_buf_free(&b);
    static const char *const bad[][2] = {
        {"hnsw", "{\"m\":1}"}, {"hnsw", "{\"m\":\"x\"}"}, {"hnsw", "{\"bogus\":1}"},
        {"hnsw", "[1]"}, {"hnsw", "{"}, {"hnsw", "{\"metric\":\"l1\"}"},
        {"hnsw", "{\"ivf_lists\":4}"}, {"hnsw_tq8", "{\"pq_m\":4}"},
        {"hnsw", "{\"type\":\"hnsw_pq\"}"}, {"nope", NULL}, {"hnsw", "{\"m\":1.5}"},
        {"hnsw_pq", "{\"complexity\":-4}"}, {"hnsw", "{\"seed\":-1}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hs_error e = {0};
        CHECK(tbl_vindex_parse(bad[i][0], bad[i][1], &s, &e) == HS_INVALID);
        CHECK(e.msg[0] != 0);
    }
    CHECK(tbl_vindex_is_vector_kind("HNSW_TQ8") && !tbl_vindex_is_vector_kind("inverted") &&
          !tbl_vindex_is_vector_kind(NULL));
    CHECK(hs_test_live_count() == live);
}

/* ---- builder ---- */

/* Builds the sidecar of rows [0, n) (two add calls) into an aligned image. */
static uint8_t *build_image(const char *kind, const char *params, int64_t n, size_t *len)
{
    hs_field f;
    list_field(&f, "v");
    f.field_id = 7;
    tbl_vbuilder *b = NULL;
    hs_error err = {0};
    hs_buf out = {0};
    hs_status st = tbl_vbuilder_new(kind, params, &f, 123456, n, &b, &err);
    hs_column *c1 = st == HS_OK ? vector_column(0, n / 3, DIM) : NULL;
    hs_column *c2 = st == HS_OK ? vector_column(n / 3, n - n / 3, DIM) : NULL;
    if (st == HS_OK) {
        tbl_vbuilder_set_threads(b, 1);
        st = c1 && c2 ? tbl_vbuilder_add(b, c1, 0, &err) : HS_NOMEM;
    }
    if (st == HS_OK)
        st = tbl_vbuilder_add(b, c2, n / 3, &err);
    if (st == HS_OK)
        st = tbl_vbuilder_finish(b, &out, &err);
    if (st != HS_OK)
        fprintf(stderr, "build_image: %s\n", err.msg);
    hs_col_free(c1);
    hs_col_free(c2);
    tbl_vbuilder_free(b);
    hs_field_clear(&f);
    uint8_t *p = NULL;
    if (st == HS_OK && (p = hs_malloc_aligned(out.len)))
        memcpy(p, out.data, out.len);
    *len = out.len;
    hs_buf_free(&out);
    return p;
}

static void test_builder_roundtrip(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    for (int with_nulls = 0; with_nulls < 2; with_nulls++) {
        int64_t n = with_nulls ? 300 : 3;   /* rows 0..2 have no null vector */
        size_t len = 0;
        uint8_t *img = build_image("hnsw", "{\"m\":8,\"ef_construction\":40}", n, &len);
        REQUIRE(img);
        tbl_vindex *vi = NULL;
        CHECK_OK(tbl_vindex_open_image(img, len, true, &vi, &err), &err);
        tbl_vindex_info info;
        tbl_vindex_get_info(vi, &info);
        int64_t n_vec = 0;
        for (int64_t i = 0; i < n; i++)
            n_vec += !vec_null(i);
        CHECK(info.field_id == 7 && info.data_file_size == 123456 && info.n_rows == n &&
              info.n_vectors == n_vec && info.dim == DIM && info.metric == HS_METRIC_L2 &&
              info.quant == VQ_FLAT);
        /* every stored vector is found at its own position */
        const hnsw_index *ix = tbl_vindex_hnsw(vi);
        REQUIRE(ix);
        for (int64_t row = 0; row < n; row += with_nulls ? 7 : 1) {
            if (vec_null(row))
                continue;
            float q[DIM];
            for (int j = 0; j < DIM; j++)
                q[j] = comp(row, j);
            hnsw_hit hit[1];
            int got = 0;
            hnsw_search_opts o = {.k = 1, .ef = 64};
            CHECK_OK(hnsw_search(ix, q, &o, hit, &got, NULL, &err), &err);
            CHECK(got == 1 && tbl_vindex_pos_of(vi, hit[0].id) == (uint32_t)row &&
                  hit[0].dist == 0);
        }
        /* positions -> ids: rows without a vector drop out */
        roaring_bitmap_t *pos = roaring_bitmap_from_range(0, (uint64_t)n + 50, 1);
        roaring_bitmap_t *ids = NULL;
        CHECK_OK(tbl_vindex_ids_of(vi, pos, &ids, &err), &err);
        CHECK(ids && (int64_t)roaring_bitmap_get_cardinality(ids) == n_vec);
        uint32_t id = 0;
        for (int64_t row = 0; ids && row < n; row++)
            if (!vec_null(row)) {
                CHECK(roaring_bitmap_contains(ids, id));
                CHECK(tbl_vindex_pos_of(vi, id) == (uint32_t)row);
                id++;
            }
        tbl_bitmap_free(ids);
        roaring_bitmap_free(pos);
        CHECK(tbl_vindex_ids_of(vi, NULL, &ids, &err) == HS_OK && ids == NULL);
        tbl_vindex_close(vi);
    }
    /* a file without any vector: an empty sidecar that opens */
    {
        hs_field f;
        list_field(&f, "v");
        tbl_vbuilder *b = NULL;
        hs_buf out = {0};
        CHECK_OK(tbl_vbuilder_new("hnsw_tq8", NULL, &f, 10, 2, &b, &err), &err);
        hs_column *c = NULL;
        CHECK(hs_col_create(&f, 2, &c, &err) == HS_OK && hs_col_append_nulls(c, 2) == HS_OK);
        CHECK_OK(tbl_vbuilder_add(b, c, 0, &err), &err);
        CHECK_OK(tbl_vbuilder_finish(b, &out, &err), &err);
        uint8_t *p = hs_malloc_aligned(out.len);
        memcpy(p, out.data, out.len);
        tbl_vindex *vi = NULL;
        CHECK_OK(tbl_vindex_open_image(p, out.len, true, &vi, &err), &err);
        CHECK(tbl_vindex_hnsw(vi) == NULL);
        tbl_vindex_close(vi);
        hs_col_free(c);
        hs_buf_free(&out);
        tbl_vbuilder_free(b);
        hs_field_clear(&f);
    }
    CHECK(hs_test_live_count() == live);
}

static void test_builder_errors(void)
{
    int64_t live = hs_test_live_count();
    hs_field f, s;
    list_field(&f, "v");
    hs_field_init(&s, "s", HS_TYPE_STRING, true);
    tbl_vbuilder *b = NULL;
    hs_error err = {0};
    CHECK(tbl_vbuilder_new("hnsw", NULL, &s, 1, 1, &b, &err) == HS_INVALID &&
          strstr(err.msg, "vector"));
    CHECK(tbl_vector_ixkind.check("hnsw", &s, NULL, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(tbl_vector_ixkind.check("hnsw", &f, "{\"m\":0}", &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(tbl_vector_ixkind.check("hnsw_tq4", &f, "{\"metric\":\"cosine\"}", &err) == HS_OK);
    CHECK(tbl_vector_ixkind.handles("ivf_hnsw_pq") && !tbl_vector_ixkind.handles("range"));
    /* mixed dimensions, a null element, NaN, rows out of order */
    for (int bad = 0; bad < 4; bad++) {
        hs_err_clear(&err);
        CHECK_OK(tbl_vbuilder_new("hnsw", NULL, &f, 1, 4, &b, &err), &err);
        hs_column *c = NULL;
        CHECK(hs_col_create(&f, 4, &c, NULL) == HS_OK);
        for (int r = 0; r < 4; r++) {
            int dim = bad == 0 && r == 2 ? 3 : 4;
            for (int j = 0; j < dim; j++) {
                float x = bad == 2 && r == 3 && j == 1 ? NAN : (float)(r + j);
                if (bad == 1 && r == 1 && j == 2)
                    CHECK(hs_col_append_null(c->children[0]) == HS_OK);
                else
                    CHECK(hs_col_append_fixed(c->children[0], &x) == HS_OK);
            }
            CHECK(hs_col_list_end(c) == HS_OK);
        }
        hs_status st = tbl_vbuilder_add(b, c, bad == 3 ? 1 : 0, &err);
        static const char *const want[] = {"dimensions", "null element", "NaN", "added"};
        CHECK(st != HS_OK && strstr(err.msg, want[bad]));
        if (st == HS_OK)
            fprintf(stderr, "bad %d accepted\n", bad);
        hs_col_free(c);
        tbl_vbuilder_free(b);
        b = NULL;
    }
    hs_field_clear(&f);
    hs_field_clear(&s);
    CHECK(hs_test_live_count() == live);
}

static void test_image_damage(void)
{
    int64_t live = hs_test_live_count();
    static const char *const kinds[][2] = {{"hnsw", "{\"m\":4,\"ef_construction\":16}"},
                                           {"hnsw_pq", "{\"m\":4,\"pq_m\":4}"}};
    for (size_t k = 0; k < 2; k++) {
        size_t len = 0;
        uint8_t *img = build_image(kinds[k][0], kinds[k][1], 120, &len);
        REQUIRE(img);
        uint8_t *p = hs_malloc_aligned(len);
        REQUIRE(p);
        /* every truncation */
        int opened = 0;
        for (size_t cut = 0; cut < len; cut++) {
            tbl_vindex *vi = NULL;
            hs_error err = {0};
            memcpy(p, img, cut);
            hs_status st = tbl_vindex_open_image(p, cut, false, &vi, &err);
            opened += st == HS_OK;
            CHECK(st == HS_CORRUPT && err.msg[0]);
            tbl_vindex_close(vi);
        }
        CHECK(opened == 0);
        /* a flipped bit in every byte: never a crash; the header, map and
         * graph checksums catch nearly all */
        int accepted = 0;
        for (size_t at = 0; at < len; at++) {
            memcpy(p, img, len);
            p[at] ^= (uint8_t)(1u << (at % 8));
            tbl_vindex *vi = NULL;
            hs_error err = {0};
            hs_status st = tbl_vindex_open_image(p, len, false, &vi, &err);
            CHECK(st == HS_OK || st == HS_CORRUPT);
            accepted += st == HS_OK;
            tbl_vindex_close(vi);
        }
        /* only padding bytes may flip unnoticed */
        CHECK(accepted < 64);
        hs_free_aligned(p);
        hs_free_aligned(img);
    }
    CHECK(hs_test_live_count() == live);
}

/* Exact vectors in the sidecar (format version 2): which kinds keep them,
 * that they are the builder's input bit for bit, that the position <-> id
 * maps agree, and that "exact_vectors": false writes version 1. */
static void test_exact_vectors_image(void)
{
    int64_t live = hs_test_live_count();
    static const struct {
        const char *kind, *params;
        uint32_t version;
        bool has;
    } cases[] = {
        {"hnsw", "{\"m\":4,\"ef_construction\":16}", 1, true},   /* the graph's own */
        {"hnsw", "{\"m\":4,\"metric\":\"ip\"}", 1, true},
        {"hnsw", "{\"m\":4,\"metric\":\"cosine\"}", 2, true},  /* graph normalized */
        {"hnsw_tq8", "{\"m\":4}", 2, true},
        {"hnsw_tq4", "{\"m\":4}", 2, true},
        {"hnsw_pq", "{\"m\":4,\"pq_m\":4}", 2, true},
        {"ivf_hnsw_tq8", "{\"m\":4,\"ivf_lists\":3}", 2, true},
        {"ivf_hnsw", "{\"m\":4,\"ivf_lists\":3}", 1, true},
        {"hnsw_tq8", "{\"m\":4,\"exact_vectors\":false}", 1, false},
        {"hnsw", "{\"m\":4,\"metric\":\"cosine\",\"exact_vectors\":false}", 1, false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = 0;
        const int64_t n = 300;
        uint8_t *img = build_image(cases[k].kind, cases[k].params, n, &len);
        REQUIRE(img);
        uint32_t version;
        memcpy(&version, img + 8, 4);
        CHECK(version == cases[k].version);
        tbl_vindex *vi = NULL;
        hs_error err = {0};
        CHECK_OK(tbl_vindex_open_image(img, len, true, &vi, &err), &err);
        if (!vi)
            continue;
        CHECK(tbl_vindex_has_vectors(vi) == cases[k].has);
        tbl_vindex_info info;
        tbl_vindex_get_info(vi, &info);
        int mismatches = 0;
        for (int64_t pos = 0; pos < n; pos++) {
            int64_t id = tbl_vindex_id_of(vi, (uint32_t)pos);
            if (vec_null(pos)) {
                mismatches += id != -1;
                continue;
            }
            mismatches += id < 0 || tbl_vindex_pos_of(vi, (uint32_t)id) != (uint32_t)pos;
            const float *v = id >= 0 ? tbl_vindex_vector(vi, (uint32_t)id) : NULL;
            if (!cases[k].has) {
                mismatches += v != NULL;
                continue;
            }
            for (int j = 0; v && j < DIM; j++) {
                float want = comp(pos, j);
                mismatches += memcmp(&v[j], &want, 4) != 0;
            }
            mismatches += v == NULL;
        }
        CHECK(mismatches == 0);
        CHECK(tbl_vindex_id_of(vi, (uint32_t)n) == -1 && tbl_vindex_id_of(vi, UINT32_MAX) == -1);
        CHECK(tbl_vindex_vector(vi, (uint32_t)info.n_vectors) == NULL);
        tbl_vindex_close(vi);
    }
    /* a version 2 image claiming version 1 (or the reverse) is corrupt */
    size_t len = 0;
    uint8_t *img = build_image("hnsw_tq8", "{\"m\":4}", 120, &len);
    REQUIRE(img);
    uint8_t *p = hs_malloc_aligned(len);
    REQUIRE(p);
    for (uint32_t v = 0; v < 4; v++) {
        memcpy(p, img, len);
        memcpy(p + 8, &v, 4);
        /* with a valid header checksum, so the version check itself decides */
        uint64_t nv, h;
        uint32_t flags;
        memcpy(&nv, p + 32, 8);
        memcpy(&flags, p + 48, 4);
        h = hs_xxh64(p, 56, 0);
        if (flags & 1)
            h = hs_xxh64(p + 64, (size_t)nv * 4, h);
        memcpy(p + 56, &h, 8);
        tbl_vindex *vi = NULL;
        hs_error err = {0};
        CHECK(tbl_vindex_open_image(p, len, false, &vi, &err) == (v == 2 ? HS_OK : HS_CORRUPT));
        tbl_vindex_close(vi);
    }
    hs_free_aligned(p);
    hs_free_aligned(img);
    CHECK(hs_test_live_count() == live);
}

/* ---- a table ---- */

typedef struct one_src { hs_batch *b; } one_src;

static hs_status one_next(void *ctx, hs_batch **out, hs_error *err)
{
    (void)err;
    one_src *s = ctx;
    *out = s->b;
    s->b = NULL;
    return HS_OK;
}

static void one_close(void *ctx)
{
    one_src *s = ctx;
    hs_batch_free(s->b);
    hs_free(s);
}

static hs_batch *rows_batch(int64_t start, int64_t n)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK)
        return NULL;
    list_field(&f, "v");
    if (hs_field_add_child(&schema, &f) != HS_OK)
        return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    for (int64_t i = start; i < start + n; i++)
        if (hs_col_append_fixed(b->cols[0], &i) != HS_OK)
            return NULL;
    hs_col_free(b->cols[1]);
    b->cols[1] = vector_column(start, n, DIM);
    b->n_rows = n;
    return b->cols[1] ? b : NULL;
}

static hs_status append(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    hs_batch *b = rows_batch(start, n);
    one_src *s = hs_calloc(1, sizeof *s);
    if (!b || !s)
        return HS_NOMEM;
    s->b = b;
    hs_batch_source src = {.next = one_next, .close = one_close, .ctx = s};
    if (hs_field_copy(&b->schema, &src.schema) != HS_OK)
        return HS_NOMEM;
    struct ArrowArrayStream st;
    HS_TRY(hs_arrow_export_stream(&src, &st, err));
    return hs_table_append(t, &st, err);
}

static hs_table *make_table(hs_catalog *cat, const char *name, hs_error *err)
{
    hs_batch *b = rows_batch(0, 0);
    struct ArrowSchema as;
    if (!b || hs_arrow_export_schema(&b->schema, &as, err) != HS_OK)
        return NULL;
    hs_batch_free(b);
    hs_table_create_options o = {.arrow_schema = &as};
    hs_table *t = NULL;
    hs_status st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    for (int f = 0; st == HS_OK && f < FILES; f++)
        st = append(t, (int64_t)f * PER_FILE, PER_FILE, err);
    char flt[128];
    snprintf(flt, sizeof flt, "(id >= 40 AND id < 60) OR id %% 97 = 5");
    int64_t n_del = 0;
    if (st == HS_OK)
        st = hs_table_delete(t, flt, &n_del, err);
    if (st != HS_OK) {
        hs_table_close(t);
        return NULL;
    }
    return t;
}

/* Brute force: the k nearest live rows with a vector and id < max_id, by
 * (distance, id); distances in the user form. */
static int oracle(const float *q, int k, hs_metric m, int64_t max_id, int64_t *ids, double *dist)
{
    int n = 0;
    static int64_t cid[N_ROWS];
    static double cd[N_ROWS];
    for (int64_t r = 0; r < N_ROWS; r++) {
        if (vec_null(r) || deleted(r) || r >= max_id)
            continue;
        double s = 0, ab = 0, aa = 0, bb = 0;
        for (int j = 0; j < DIM; j++) {
            double x = comp(r, j), y = q[j];
            s += (x - y) * (x - y);
            ab += x * y;
            aa += y * y;
            bb += x * x;
        }
        double d = m == HS_METRIC_L2 ? sqrt(s) : m == HS_METRIC_IP ? ab
                                                                   : 1 - ab / sqrt(aa * bb);
        /* insertion keeps (order key, id) ascending */
        double key = m == HS_METRIC_IP ? -d : d;
        int i = n++;
        while (i > 0 && (m == HS_METRIC_IP ? -cd[i - 1] : cd[i - 1]) > key) {
            cd[i] = cd[i - 1];
            cid[i] = cid[i - 1];
            i--;
        }
        cd[i] = d;
        cid[i] = r;
    }
    int got = n < k ? n : k;
    for (int i = 0; i < got; i++) {
        ids[i] = cid[i];
        dist[i] = cd[i];
    }
    return got;
}

/* Runs a search; the result's id and distance columns into ids/dist. */
/* A failed get_schema/get_next: HS_INTERNAL with the stream's message. */
static hs_status stream_failed(struct ArrowArrayStream *s, hs_error *err)
{
    const char *m = s->get_last_error(s);
    err->code = HS_INTERNAL;
    snprintf(err->msg, sizeof err->msg, "stream: %s", m ? m : "(no message)");
    return HS_INTERNAL;
}

static hs_status run_search_at(hs_table *t, const hs_scan_options *so, const float *q, int dim,
                               int k, const char *metric, int64_t *ids, double *dist, int *n,
                               hs_error *err)
{
    hs_search_options vo = {.column = "v", .query = q, .dim = dim, .k = k, .metric = metric};
    struct ArrowArrayStream s;
    *n = 0;
    HS_TRY(hs_table_search(t, so, &vo, &s, err));
    struct ArrowSchema as;
    hs_field f = {0};
    hs_status st = s.get_schema(&s, &as) == 0 ? HS_OK : stream_failed(&s, err);
    if (st == HS_OK) {
        st = hs_arrow_import_schema(&as, &f, err);
        as.release(&as);
    }
    while (st == HS_OK) {
        struct ArrowArray a;
        if (s.get_next(&s, &a) != 0) {
            st = stream_failed(&s, err);
            break;
        }
        if (!a.release)
            break;
        hs_batch *b = NULL;
        st = hs_arrow_import_batch(&a, &f, &b, err);
        if (st != HS_OK)
            break;
        int di = b->n_cols - 1;
        for (int64_t r = 0; r < b->n_rows; r++) {
            ids[*n] = HS_COL_VALUES(b->cols[0], int64_t)[r];
            dist[*n] = HS_COL_VALUES(b->cols[di], double)[r];
            (*n)++;
        }
        hs_batch_free(b);
    }
    hs_field_clear(&f);
    s.release(&s);
    return st;
}

static hs_status run_search(hs_table *t, const char *filter, const float *q, int dim, int k,
                            const char *metric, int64_t *ids, double *dist, int *n,
                            hs_error *err)
{
    hs_scan_options so = {.filter = filter};
    return run_search_at(t, &so, q, dim, k, metric, ids, dist, n, err);
}

static const char *tmp_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s-%d", hs_test_table_root(), name, (int)getpid());
    return buf;
}

/* Cuts the first HNSW sidecar under <loc>/index to 100 bytes: in place on
 * disk, replaced by a 100-byte object on S3 (a new ETag, as a rewrite has). */
static int truncate_one_sidecar(const char *loc)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/index", loc);
    if (!hs_io_is_object_uri(dir)) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "for f in %s/*.hnsw; do truncate -s 100 \"$f\"; break; done",
                 dir);
        return system(cmd);
    }
    char **names = NULL;
    size_t nn = 0;
    if (hs_io_list(dir, false, &names, &nn, NULL) != HS_OK)
        return -1;
    char victim[1200] = "";
    for (size_t i = 0; i < nn; i++) {
        size_t l = strlen(names[i]);
        if (!victim[0] && l > 5 && strcmp(names[i] + l - 5, ".hnsw") == 0)
            snprintf(victim, sizeof victim, "%s/%s", dir, names[i]);
        hs_free(names[i]);
    }
    hs_free(names);
    hs_buf b = {0};
    hs_wfile *w = NULL;
    int rc = -1;
    if (victim[0] && hs_io_read_all(victim, &b, NULL) == HS_OK && b.len > 100 &&
        hs_io_create(victim, 0, &w, NULL) == HS_OK) {
        rc = hs_wfile_write(w, b.data, 100, NULL) == HS_OK ? 0 : -1;
        if (rc == 0)
            rc = hs_wfile_close(w, NULL) == HS_OK ? 0 : -1;
        else
            hs_wfile_abort(w);
    }
    hs_buf_free(&b);
    return rc;
}

static void test_search_exact(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    hs_table *t = make_table(cat, tmp_path("search-exact"), &err);
    if (!t)
        fprintf(stderr, "make_table: %s\n", err.msg);
    REQUIRE(t);
    static const hs_metric metrics[] = {HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP};
    static const char *const names[] = {"l2", "cosine", "ip"};
    int64_t ids[N_ROWS], wid[N_ROWS];
    double d[N_ROWS], wd[N_ROWS];
    for (int qi = 0; qi < 6; qi++) {
        float q[DIM];
        for (int j = 0; j < DIM; j++)
            q[j] = comp(100000 + qi, j);
        int m = qi % 3, k = qi < 3 ? 10 : 250, n = 0;
        int64_t max_id = qi % 2 ? 300 : N_ROWS;
        char flt[64];
        snprintf(flt, sizeof flt, "id < %lld", (long long)max_id);
        CHECK_OK(run_search(t, qi % 2 ? flt : NULL, q, DIM, k, names[m], ids, d, &n, &err),
                 &err);
        int want = oracle(q, k, metrics[m], max_id, wid, wd);
        CHECK(n == want);
        for (int i = 0; i < n && i < want; i++) {
            CHECK(ids[i] == wid[i]);
            CHECK(fabs(d[i] - wd[i]) <= 1e-4 * (1 + fabs(wd[i])));
        }
    }
    /* k larger than the matching rows with a vector: all of them */
    float q[DIM] = {0};
    int n = 0;
    CHECK_OK(run_search(t, "id >= 30 AND id < 70", q, DIM, 1000, NULL, ids, d, &n, &err), &err);
    int want = 0;
    for (int64_t r = 30; r < 70; r++)
        want += !vec_null(r) && !deleted(r);
    CHECK(n == want);
    /* errors */
    hs_err_clear(&err);
    CHECK(run_search(t, NULL, q, DIM - 1, 3, NULL, ids, d, &n, &err) == HS_INVALID &&
          strstr(err.msg, "dimension"));
    hs_err_clear(&err);
    CHECK(run_search(t, NULL, q, DIM, 0, NULL, ids, d, &n, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(run_search(t, NULL, q, DIM, 3, "jaccard", ids, d, &n, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(run_search(t, "nope = 1", q, DIM, 3, NULL, ids, d, &n, &err) != HS_OK);
    hs_search_options vo = {.column = "id", .query = q, .dim = DIM, .k = 3};
    struct ArrowArrayStream s;
    hs_err_clear(&err);
    CHECK(hs_table_search(t, NULL, &vo, &s, &err) == HS_INVALID && strstr(err.msg, "vector"));
    vo.column = "zz";
    CHECK(hs_table_search(t, NULL, &vo, &s, &err) == HS_NOT_FOUND);
    CHECK(hs_table_search(t, NULL, NULL, &s, &err) == HS_INVALID);

    /* an empty table: no rows, the schema with the distance column */
    {
        hs_batch *b0 = rows_batch(0, 0);
        struct ArrowSchema as0;
        REQUIRE(b0 && hs_arrow_export_schema(&b0->schema, &as0, &err) == HS_OK);
        hs_batch_free(b0);
        hs_table_create_options o0 = {.arrow_schema = &as0};
        hs_table *t0 = NULL;
        char name0[600];
        snprintf(name0, sizeof name0, "%s-empty", tmp_path("search-exact"));
        CHECK_OK(hs_table_create(cat, name0, &o0, &t0, &err), &err);
        as0.release(&as0);
        CHECK_OK(run_search(t0, NULL, q, DIM, 5, NULL, ids, d, &n, &err), &err);
        CHECK(n == 0);
        hs_table_close(t0);
    }

    /* with an hnsw index */
    hs_index_options io = {.kind = "hnsw", .params_json = "{\"m\":8,\"ef_construction\":64}",
                           .n_threads = 1};
    hs_err_clear(&err);
    CHECK_OK(hs_table_add_index(t, "v", &io, &err), &err);
    int hits = 0, total = 0;
    for (int qi = 0; qi < 10; qi++) {
        float qq[DIM];
        for (int j = 0; j < DIM; j++)
            qq[j] = comp(200000 + qi, j);
        CHECK_OK(run_search(t, NULL, qq, DIM, 10, NULL, ids, d, &n, &err), &err);
        int w = oracle(qq, 10, HS_METRIC_L2, N_ROWS, wid, wd);
        CHECK(n == w);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < w; j++)
                hits += ids[i] == wid[j];
            CHECK(!vec_null(ids[i]) && !deleted(ids[i]));
            CHECK(i == 0 || d[i] >= d[i - 1]);
        }
        total += w;
    }
    CHECK(hits >= total * 95 / 100);
    /* a truncated sidecar: skipped (counted, warned), that file searched
     * exactly, still min(k, matches) rows */
    CHECK(truncate_one_sidecar(tmp_path("search-exact")) == 0);
    int64_t idx0, ex0, sk0, idx1, ex1, sk1;
    tbl_search_counters(&idx0, &ex0, &sk0);
    CHECK_OK(run_search(t, NULL, q, DIM, 10, NULL, ids, d, &n, &err), &err);
    tbl_search_counters(&idx1, &ex1, &sk1);
    CHECK(n == 10 && sk1 == sk0 + 1 && ex1 == ex0 + 1 && idx1 == idx0 + FILES - 1);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();   /* the process-wide caches are not leaks */
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live);
}

/* Live rows with a vector and id >= min_id (the generator's, after
 * make_table's deletes). */
static int live_from(int64_t min_id)
{
    int n = 0;
    for (int64_t r = min_id; r < N_ROWS; r++)
        n += !vec_null(r) && !deleted(r);
    return n;
}

/* An unfiltered search of every row: n rows, none below min_id. */
static void check_all_from(hs_table *t, const hs_scan_options *so, int64_t min_id)
{
    static int64_t ids[N_ROWS];
    static double d[N_ROWS];
    float q[DIM] = {0};
    int n = 0;
    hs_error err = {0};
    CHECK_OK(run_search_at(t, so, q, DIM, N_ROWS, "l2", ids, d, &n, &err), &err);
    CHECK(n == live_from(min_id));
    int below = 0;
    for (int i = 0; i < n; i++)
        below += ids[i] < min_id || deleted(ids[i]) || vec_null(ids[i]);
    CHECK(below == 0);
}

/* The handle keeps the plan of an unfiltered search (table/search.c): it
 * must follow the handle's own commits, refreshes, time travel and
 * filtered searches in between. */
static void test_plan_kept(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    const char *name = tmp_path("plan-kept");
    hs_table *t = make_table(cat, name, &err);
    REQUIRE(t);
    int64_t s0 = hs_table_current_snapshot_id(t);
    hs_scan_options cur = {0};
    check_all_from(t, &cur, 0);
    check_all_from(t, &cur, 0);   /* the kept plan */
    /* a filtered search between: its own plan, the kept one untouched */
    hs_scan_options flt = {.filter = "id >= 300"};
    check_all_from(t, &flt, 300);
    check_all_from(t, &cur, 0);
    /* a commit through this handle: a new snapshot */
    int64_t n_del = 0;
    CHECK_OK(hs_table_delete(t, "id < 100", &n_del, &err), &err);
    CHECK(n_del > 0);
    check_all_from(t, &cur, 100);
    /* time travel to the first snapshot, then back */
    hs_scan_options at0 = {.use_snapshot_id = 1, .snapshot_id = s0};
    check_all_from(t, &at0, 0);
    check_all_from(t, &cur, 100);
    /* a commit through another handle: seen after refresh only */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, name, &t2, &err), &err);
    REQUIRE(t2);
    CHECK_OK(hs_table_delete(t2, "id < 200", &n_del, &err), &err);
    check_all_from(t2, &cur, 200);
    check_all_from(t, &cur, 100);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    check_all_from(t, &cur, 200);
    hs_table_close(t2);
    hs_table_close(t);   /* frees the kept plans */
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();
    tbl_mcache_clear();
    CHECK(hs_test_live_count() == live);
}

/* A filtered search (table/search.c's tbl_fsearch) keeps its prepared files
 * (allowed rows, sidecars) in the handle for the next search with the same
 * filter: reused only while the metadata file, snapshot, filter, column and
 * metric are the same, so commits, refreshes, time travel and other
 * filters in between see their own rows. */
static void test_filtered_kept(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    const char *name = tmp_path("filtered-kept");
    hs_table *t = make_table(cat, name, &err);
    REQUIRE(t);
    int64_t s0 = hs_table_current_snapshot_id(t);
    int64_t prep0, reuse0, prep, reuse;
    tbl_search_filter_counters(&prep0, &reuse0);
    hs_scan_options flt = {.filter = "id >= 300"};
    check_all_from(t, &flt, 300);
    check_all_from(t, &flt, 300);   /* kept */
    tbl_search_filter_counters(&prep, &reuse);
    CHECK(prep - prep0 == 1 && reuse - reuse0 == 1);
    /* another filter, an unfiltered search, then the first filter again */
    hs_scan_options flt2 = {.filter = "id >= 350"}, cur = {0};
    check_all_from(t, &flt2, 350);
    check_all_from(t, &cur, 0);
    check_all_from(t, &flt, 300);
    tbl_search_filter_counters(&prep, &reuse);
    CHECK(prep - prep0 == 3 && reuse - reuse0 == 1);
    /* the setting search_filter_cache off (hyperstream/config.h): the kept
     * preparation is not used nor replaced, every search prepares anew */
    CHECK_OK(hs_config_set("search_filter_cache", "0", &err), &err);
    check_all_from(t, &flt, 300);
    check_all_from(t, &flt, 300);
    tbl_search_filter_counters(&prep, &reuse);
    CHECK(prep - prep0 == 5 && reuse - reuse0 == 1);
    CHECK_OK(hs_config_set("search_filter_cache", NULL, &err), &err);
    check_all_from(t, &flt, 300);   /* the preparation kept before, again */
    check_all_from(t, &flt, 300);
    tbl_search_filter_counters(&prep, &reuse);
    CHECK(prep - prep0 == 5 && reuse - reuse0 == 3);
    /* a commit through this handle: the deleted rows are gone */
    int64_t n_del = 0;
    CHECK_OK(hs_table_delete(t, "id < 320", &n_del, &err), &err);
    CHECK(n_del > 0);
    check_all_from(t, &flt, 320);
    check_all_from(t, &flt, 320);
    /* time travel with the same filter: the rows of then */
    hs_scan_options at0 = {.use_snapshot_id = 1, .snapshot_id = s0, .filter = "id >= 300"};
    check_all_from(t, &at0, 300);
    check_all_from(t, &flt, 320);
    /* a commit through another handle: seen after refresh only */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, name, &t2, &err), &err);
    REQUIRE(t2);
    CHECK_OK(hs_table_delete(t2, "id < 340", &n_del, &err), &err);
    check_all_from(t2, &flt, 340);
    check_all_from(t, &flt, 320);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    check_all_from(t, &flt, 340);
    hs_table_close(t2);
    hs_table_close(t);   /* frees the kept preparation */
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();
    tbl_mcache_clear();
    CHECK(hs_test_live_count() == live);
}

/* Rows of a filtered scan (every column read). */
static hs_status count_rows_at(hs_table *t, const hs_scan_options *so, int64_t *n, hs_error *err)
{
    hs_scan *s = NULL;
    *n = 0;
    HS_TRY(hs_scan_plan(t, so, &s, err));
    struct ArrowArrayStream st;
    HS_TRY(hs_scan_stream(s, &st, err));
    hs_status rc = HS_OK;
    for (;;) {
        struct ArrowArray a;
        if (st.get_next(&st, &a) != 0) {
            rc = stream_failed(&st, err);
            break;
        }
        if (!a.release)
            break;
        *n += a.length;
        a.release(&a);
    }
    st.release(&st);
    return rc;
}

static hs_status count_rows(hs_table *t, const char *filter, int64_t *n, hs_error *err)
{
    hs_scan_options so = {.filter = filter};
    return count_rows_at(t, &so, n, err);
}

/* Live rows with id < m (the oracle of "id < m"). */
static int64_t live_below(int64_t m)
{
    int64_t n = 0;
    for (int64_t r = 0; r < N_ROWS && r < m; r++)
        n += !deleted(r);
    return n;
}

/* plan.c's process-wide cache of bound filters: a text is parsed and bound
 * once per schema; the same text under another schema (a rename, another
 * table) binds anew; plans hold their entry while evicted; bounded. */
static void test_filter_cache(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    hs_table *t = make_table(cat, tmp_path("filter-cache"), &err);
    REQUIRE(t);
    tbl_filter_cache_clear();
    int64_t h0, m0, h, m, n;
    int entries;
    tbl_filter_cache_stats(&h0, &m0, &entries);
    CHECK(entries == 0);
    CHECK_OK(count_rows(t, "id < 300", &n, &err), &err);
    CHECK(n == live_below(300));
    CHECK_OK(count_rows(t, "id < 300", &n, &err), &err);
    CHECK(n == live_below(300));
    tbl_filter_cache_stats(&h, &m, &entries);
    CHECK(h - h0 == 1 && m - m0 == 1 && entries == 1);
    /* a vector search with the same text uses the same entry, same rows */
    float q[DIM] = {0};
    int64_t ids[N_ROWS];
    double d[N_ROWS];
    int nr = 0;
    CHECK_OK(run_search(t, "id < 300", q, DIM, 5, "l2", ids, d, &nr, &err), &err);
    CHECK(nr == 5);
    for (int i = 0; i < nr; i++)
        CHECK(ids[i] < 300 && !deleted(ids[i]));
    tbl_filter_cache_stats(&h, &m, &entries);
    CHECK(h - h0 == 2 && m - m0 == 1);
    /* the setting filter_cache off (hyperstream/config.h): same rows, the
     * cache neither asked nor filled; on again, the kept entry answers */
    CHECK_OK(hs_config_set("filter_cache", "off", &err), &err);
    CHECK_OK(count_rows(t, "id < 300", &n, &err), &err);
    CHECK(n == live_below(300));
    CHECK_OK(count_rows(t, "id < 200", &n, &err), &err);
    CHECK(n == live_below(200));
    tbl_filter_cache_stats(&h, &m, &entries);
    CHECK(h - h0 == 2 && m - m0 == 1 && entries == 1);
    CHECK_OK(hs_config_set("filter_cache", NULL, &err), &err);
    CHECK_OK(count_rows(t, "id < 300", &n, &err), &err);
    tbl_filter_cache_stats(&h, &m, &entries);
    CHECK(h - h0 == 3 && m - m0 == 1);
    /* the column renamed: the same text no longer binds (an entry keyed by
     * the text alone would still answer) */
    int64_t s0 = hs_table_current_snapshot_id(t);
    CHECK_OK(hs_table_update_schema(t, "[{\"op\":\"rename\",\"name\":\"id\",\"to\":\"ident\"}]",
                                    &err), &err);
    CHECK(count_rows(t, "id < 300", &n, &err) == HS_NOT_FOUND);
    CHECK_OK(count_rows(t, "ident < 300", &n, &err), &err);
    CHECK(n == live_below(300));
    /* the snapshot read by id binds against its own (first) schema, in turn
     * with the current one: two entries of one text */
    for (int i = 0; i < 2; i++) {
        hs_scan_options at0 = {.use_snapshot_id = 1, .snapshot_id = s0, .filter = "id < 300"};
        CHECK_OK(count_rows_at(t, &at0, &n, &err), &err);
        CHECK(n == live_below(300));
        CHECK(count_rows(t, "id < 300", &n, &err) == HS_NOT_FOUND);
    }
    /* a plan made now keeps its entry while 100 other texts evict it */
    hs_scan_options held_o = {.filter = "ident < 77"};
    hs_scan *held = NULL;
    CHECK_OK(hs_scan_plan(t, &held_o, &held, &err), &err);
    for (int i = 0; i < 100; i++) {
        char f[64];
        snprintf(f, sizeof f, "ident < %d", 100 + 11 * i);
        CHECK_OK(count_rows(t, f, &n, &err), &err);
        CHECK(n == live_below(100 + 11 * i));
    }
    tbl_filter_cache_stats(&h, &m, &entries);
    CHECK(entries <= 64 && entries > 0);
    struct ArrowArrayStream st;
    CHECK_OK(hs_scan_stream(held, &st, &err), &err);
    int64_t held_n = 0;
    for (;;) {
        struct ArrowArray a;
        if (st.get_next(&st, &a) != 0 || !a.release)
            break;
        held_n += a.length;
        a.release(&a);
    }
    st.release(&st);
    CHECK(held_n == live_below(77));
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();   /* clears the filter and manifest-list caches too */
    tbl_filter_cache_stats(NULL, NULL, &entries);
    CHECK(entries == 0);
    CHECK(hs_test_live_count() == live);
}

/* Threads planning filtered scans of one table at once, over more texts
 * than the bound-filter cache holds: entries are evicted while other
 * threads' plans hold them (ASan: no use after free, no leak). */
typedef struct fc_worker {
    hs_table *t;
    int seed, bad;
} fc_worker;

static void *fc_run(void *arg)
{
    fc_worker *w = arg;
    hs_error err = {0};
    for (int i = 0; i < 150; i++) {
        int m = 5 + (int)((w->seed * 7919u + (unsigned)i * 104729u) % 97u) * 11;
        char f[64];
        snprintf(f, sizeof f, "ident < %d", m);
        int64_t n = -1;
        if (count_rows(w->t, f, &n, &err) != HS_OK || n != live_below(m))
            w->bad++;
    }
    return NULL;
}

static void test_filter_cache_threads(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    hs_table *t = make_table(cat, tmp_path("filter-cache-threads"), &err);
    REQUIRE(t);
    CHECK_OK(hs_table_update_schema(t, "[{\"op\":\"rename\",\"name\":\"id\",\"to\":\"ident\"}]",
                                    &err), &err);
    tbl_filter_cache_clear();
    enum { W = 4 };
    pthread_t th[W];
    fc_worker w[W];
    for (int i = 0; i < W; i++) {
        w[i] = (fc_worker){t, i + 1, 0};
        CHECK(pthread_create(&th[i], NULL, fc_run, &w[i]) == 0);
    }
    for (int i = 0; i < W; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].bad == 0);
    }
    int entries;
    int64_t hits, misses;
    tbl_filter_cache_stats(&hits, &misses, &entries);
    CHECK(entries <= 64 && misses >= 97);   /* every one of the 97 texts once at least */
    int64_t n = 0, h2, m2;
    CHECK_OK(count_rows(t, "ident < 5", &n, &err), &err);
    CHECK_OK(count_rows(t, "ident < 5", &n, &err), &err);
    CHECK(n == live_below(5));
    tbl_filter_cache_stats(&h2, &m2, &entries);
    CHECK(h2 > hits && entries <= 64);
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live);
}

static bool deleted_later(int64_t r) { return r % 7 == 1 && r < 900; }

/* The rows every search may return: live, with a vector, within [lo, hi). */
static int allowed_ids(int64_t lo, int64_t hi, bool later, int64_t *ids)
{
    int n = 0;
    for (int64_t r = lo; r < hi && r < N_ROWS; r++)
        if (!vec_null(r) && !deleted(r) && !(later && deleted_later(r)))
            ids[n++] = r;
    return n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A filter that a range index answers exactly: the allowed rows come from
 * the index less the deletes (search.c's allowed_rows, no data file read);
 * with k >= every row, the answer is exactly the live matching rows with a
 * vector, before and after a delete made after the index was built, with
 * and without the flat index on the vectors. */
static void test_filter_index_exact(void)
{
    int64_t live = hs_test_live_count();
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    hs_table *t = make_table(cat, tmp_path("filter-index-exact"), &err);
    REQUIRE(t);
    hs_index_options ro = {.kind = "range", .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "id", &ro, &err), &err);
    static int64_t got[N_ROWS], want[N_ROWS];
    static double d[N_ROWS];
    float q[DIM] = {0};
    static const struct { const char *f; int64_t lo, hi; } cases[] = {
        {"id < 300", 0, 300}, {"id >= 1000", 1000, N_ROWS}, {"id >= 390 AND id < 810", 390, 810},
        {"id < 0", 0, 0},
    };
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {   /* deletes after the index was built */
            int64_t n_del = 0;
            CHECK_OK(hs_table_delete(t, "id % 7 = 1 AND id < 900", &n_del, &err), &err);
            CHECK(n_del > 0);
        }
        if (pass == 2) {
            hs_index_options io = {.kind = "hnsw", .params_json = "{\"m\":8}", .n_threads = 1};
            CHECK_OK(hs_table_add_index(t, "v", &io, &err), &err);
        }
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            int n = 0;
            CHECK_OK(run_search(t, cases[ci].f, q, DIM, N_ROWS, "l2", got, d, &n, &err), &err);
            int nw = allowed_ids(cases[ci].lo, cases[ci].hi, pass > 0, want);
            CHECK(n == nw);
            qsort(got, (size_t)n, sizeof *got, cmp_i64);
            for (int i = 0; i < n && i < nw; i++)
                CHECK(got[i] == want[i]);
        }
    }
    hs_table_close(t);
    hs_catalog_close(cat);
    pq_footer_cache_clear();
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();
    CHECK(hs_test_live_count() == live);
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* The sidecar cache: one validated image shared while the file is
 * unchanged; a rewritten file is opened (and validated) again. */
static void test_cache(void)
{
    int64_t live = hs_test_live_count();
    size_t len = 0;
    uint8_t *img = build_image("hnsw", "{\"m\":4,\"ef_construction\":16}", 60, &len);
    REQUIRE(img);
    char path[600];
    snprintf(path, sizeof path, "%s/cache-%d-sidecar", hs_test_tmpdir(), (int)getpid());
    REQUIRE(write_file(path, img, len) == 0);
    hs_error err = {0};
    const tbl_vindex *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(tbl_vindex_acquire(path, 7, 123456, (int64_t)len, &a, &err), &err);
    CHECK_OK(tbl_vindex_acquire(path, 7, 123456, -1, &b, &err), &err);
    CHECK(a == b);
    /* another field, data file size or sidecar size: refused from the cache too */
    CHECK(tbl_vindex_acquire(path, 8, 123456, -1, &c, &err) == HS_CORRUPT && !c);
    hs_err_clear(&err);
    CHECK(tbl_vindex_acquire(path, 7, 9, -1, &c, &err) == HS_CORRUPT && strstr(err.msg, "stale"));
    hs_err_clear(&err);
    CHECK(tbl_vindex_acquire(path, 7, 123456, (int64_t)len - 1, &c, &err) == HS_CORRUPT);
    tbl_vindex_release(b);
    /* rewritten with a flipped byte: the damage is found, the held one stays usable */
    usleep(2000);
    img[len / 2] ^= 1;
    REQUIRE(write_file(path, img, len) == 0);
    hs_err_clear(&err);
    CHECK(tbl_vindex_acquire(path, 7, 123456, (int64_t)len, &c, &err) == HS_CORRUPT && !c);
    tbl_vindex_info info;
    tbl_vindex_get_info(a, &info);
    CHECK(info.n_rows == 60);
    tbl_vindex_release(a);
    /* restored: opens again */
    usleep(2000);
    img[len / 2] ^= 1;
    REQUIRE(write_file(path, img, len) == 0);
    CHECK_OK(tbl_vindex_acquire(path, 7, 123456, (int64_t)len, &c, &err), &err);
    CHECK(c != NULL);
    tbl_vindex_release(c);
    /* caching off: a private copy each time */
    CHECK_OK(hs_config_set_int("vindex_cache_mb", 0, &err), &err);
    tbl_vindex_cache_clear();
    CHECK_OK(tbl_vindex_acquire(path, 7, 123456, -1, &a, &err), &err);
    CHECK_OK(tbl_vindex_acquire(path, 7, 123456, -1, &b, &err), &err);
    CHECK(a && b && a != b);
    tbl_vindex_release(a);
    tbl_vindex_release(b);
    CHECK_OK(hs_config_set("vindex_cache_mb", NULL, &err), &err);
    CHECK(tbl_vindex_acquire("/nonexistent/x.hnsw", 7, 1, -1, &c, &err) == HS_NOT_FOUND);
    unlink(path);
    hs_free_aligned(img);
    tbl_vindex_cache_clear();
    CHECK(hs_test_live_count() == live);
}

/* An allocation hook that counts the allocations of the library. */
static int64_t g_allocs;
static void *count_malloc(size_t n, void *ctx) { (void)ctx; g_allocs++; return malloc(n); }
static void *count_realloc(void *p, size_t n, void *ctx) { (void)ctx; g_allocs++; return realloc(p, n); }
static void count_free(void *p, void *ctx) { (void)ctx; free(p); }

/* Exact vectors of graph ids from the generator (the rows' positions). */
static hs_status gen_fetch(void *ctx, const uint32_t *ids, size_t n, float *out, hs_error *err)
{
    (void)err;
    const tbl_vindex *vi = ctx;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < DIM; j++)
            out[i * DIM + (size_t)j] = comp(tbl_vindex_pos_of(vi, ids[i]), j);
    return HS_OK;
}

/* One build + open + lookup of a sidecar, for the OOM loop.  Returns the
 * first failure's status. */
static hs_status vindex_cycle(const char *kind, hs_error *err)
{
    hs_field f;
    list_field(&f, "v");
    f.field_id = 3;
    tbl_vbuilder *b = NULL;
    hs_buf out = {0};
    hs_column *c = vector_column(0, 90, DIM);
    hs_status st = c && f.name && f.n_children == 1 ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = tbl_vbuilder_new(kind, strcmp(kind, "hnsw_pq") == 0
                                        ? "{\"m\":4,\"ef_construction\":16,\"pq_m\":4}"
                                        : "{\"m\":4,\"ef_construction\":16}",
                              &f, 99, 90, &b, err);
    if (st == HS_OK) {
        tbl_vbuilder_set_threads(b, 1);
        st = tbl_vbuilder_add(b, c, 0, err);
    }
    if (st == HS_OK)
        st = tbl_vbuilder_finish(b, &out, err);
    uint8_t *p = st == HS_OK ? hs_malloc_aligned(out.len) : NULL;
    if (st == HS_OK && !p)
        st = hs_err_nomem(err, out.len);
    tbl_vindex *vi = NULL;
    if (st == HS_OK) {
        memcpy(p, out.data, out.len);
        st = tbl_vindex_open_image(p, out.len, true, &vi, err);
    }
    roaring_bitmap_t *pos = NULL, *ids = NULL;
    if (st == HS_OK && !(pos = roaring_bitmap_from_range(0, 90, 2)))
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = tbl_vindex_ids_of(vi, pos, &ids, err);
    if (st == HS_OK) {
        float q[DIM] = {0};
        hnsw_hit hits[4];
        int n = 0;
        hnsw_search_opts o = {.k = 4, .allow = ids, .fetch = gen_fetch, .fetch_ctx = vi};
        st = hnsw_search(tbl_vindex_hnsw(vi), q, &o, hits, &n, NULL, err);
        if (st == HS_OK && n != 4)
            st = hs_err_set(err, HS_INTERNAL, "%d hits", n);
    }
    tbl_bitmap_free(ids);
    tbl_bitmap_free(pos);
    tbl_vindex_close(vi);
    hs_buf_free(&out);
    tbl_vbuilder_free(b);
    hs_col_free(c);
    hs_field_clear(&f);
    return st;
}

/* An allocation failure at every step of building and opening a sidecar:
 * an error, never a crash or a leak. */
static void test_vindex_oom(void)
{
    for (int k = 0; k < 2; k++) {
        const char *kind = k ? "hnsw_pq" : "hnsw";
        hs_error err = {0};
        hs_alloc_hook hook = {count_malloc, count_realloc, count_free, NULL};
        hs_set_alloc_hook(&hook);
        g_allocs = 0;
        hs_status st = vindex_cycle(kind, &err);
        int64_t total = g_allocs;
        hs_set_alloc_hook(NULL);
        CHECK_OK(st, &err);
        int64_t live = hs_test_live_count(), failures = 0;
        for (int64_t nth = 1; nth <= total; nth++) {
            hs_err_clear(&err);
            hs_mem_fail_after(nth);
            st = vindex_cycle(kind, &err);
            hs_mem_fail_after(0);
            CHECK(hs_test_live_count() == live);
            if (st != HS_OK) {
                failures++;
                CHECK(err.msg[0] != 0);
            }
        }
        CHECK(failures > total / 2);
    }
}

/* Every cache a search fills (they are not leaks): the process-wide ones
 * and what the handle keeps (its plans, its last filtered preparation). */
static void clear_caches(hs_table *t)
{
    if (t)
        tbl_search_cache_clear(t);
    pq_footer_cache_clear();   /* with the Parquet buffer pool */
    tbl_vindex_cache_clear();
    tbl_index_cache_clear();
    tbl_mcache_clear();
}

/* The same over a whole search, from cold caches each time (so the n-th
 * allocation of the counting run is the n-th of every failing run, and the
 * live count after clearing the caches is the baseline). */
static void test_search_oom(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    hs_table *t = make_table(cat, tmp_path("search-oom"), &err);
    REQUIRE(t);
    float q[DIM];
    for (int j = 0; j < DIM; j++)
        q[j] = comp(777, j);
    int64_t wid[N_ROWS], ids[N_ROWS];
    double wd[N_ROWS], d[N_ROWS];
    int want = oracle(q, 5, HS_METRIC_L2, 500, wid, wd);
    /* how many allocations one search makes */
    hs_alloc_hook hook = {count_malloc, count_realloc, count_free, NULL};
    int n = 0;
    clear_caches(t);
    int64_t live = hs_test_live_count();
    hs_set_alloc_hook(&hook);
    g_allocs = 0;
    CHECK_OK(run_search(t, "id < 500", q, DIM, 5, "l2", ids, d, &n, &err), &err);
    int64_t total = g_allocs;
    hs_set_alloc_hook(NULL);
    CHECK(n == want && total > 50);
    clear_caches(t);
    CHECK(hs_test_live_count() == live);
    /* fail each one (every step-th when there are many) */
    int64_t step = total / 1500 + 1, failures = 0;
    for (int64_t nth = 1; nth <= total; nth += step) {
        hs_err_clear(&err);
        hs_mem_fail_after(nth);
        hs_status st = run_search(t, "id < 500", q, DIM, 5, "l2", ids, d, &n, &err);
        hs_mem_fail_after(0);
        clear_caches(t);
        CHECK(hs_test_live_count() == live);
        if (st == HS_OK) {
            /* the failure was absorbed (a fallback): still the right answer */
            CHECK(n == want && memcmp(ids, wid, (size_t)want * sizeof *ids) == 0);
        } else {
            failures++;
            CHECK(st == HS_NOMEM || st == HS_IO || st == HS_CORRUPT || st == HS_INTERNAL);
            CHECK(err.msg[0] != 0);
        }
    }
    CHECK(failures > total / step / 2);
    hs_table_close(t);
    hs_catalog_close(cat);
    clear_caches(NULL);
}

/* A clustered index (cluster = id: a block per row) answers `id IN (...)`
 * from its blocks: the oracle's rows among those ids (deleted rows and null
 * vectors left out), every metric, the files counted as clustered; and under
 * an allocation failure at every step: an error or the right answer, no leak. */
static int oracle_in(const float *q, int k, hs_metric m, const int64_t *in, int n_in,
                     int64_t *ids, double *dist)
{
    int n = 0;
    for (int i = 0; i < n_in; i++) {
        int64_t r = in[i];
        bool dup = false;
        for (int j = 0; j < i; j++)
            dup |= in[j] == r;
        if (dup || r < 0 || r >= N_ROWS || vec_null(r) || deleted(r))
            continue;
        double s = 0, ab = 0, aa = 0, bb = 0;
        for (int j = 0; j < DIM; j++) {
            double x = comp(r, j), y = q[j];
            s += (x - y) * (x - y);
            ab += x * y;
            aa += y * y;
            bb += x * x;
        }
        double d = m == HS_METRIC_L2 ? sqrt(s) : m == HS_METRIC_IP ? ab : 1 - ab / sqrt(aa * bb);
        double key = m == HS_METRIC_IP ? -d : d;
        int at = n++;
        while (at > 0 && ((m == HS_METRIC_IP ? -dist[at - 1] : dist[at - 1]) > key ||
                          ((m == HS_METRIC_IP ? -dist[at - 1] : dist[at - 1]) == key &&
                           ids[at - 1] > r))) {
            dist[at] = dist[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        dist[at] = d;
        ids[at] = r;
    }
    return n < k ? n : k;
}

static void test_search_clustered(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(NULL, &cat, &err), &err);
    hs_table *t = make_table(cat, tmp_path("search-clustered"), &err);
    REQUIRE(t);
    static const char *const names[] = {"l2", "cosine", "ip"};
    static const hs_metric metrics[] = {HS_METRIC_L2, HS_METRIC_COSINE, HS_METRIC_IP};
    static const int64_t in[] = {1, 3, 5, 44, 102, 399, 400, 401, 650, 777, 1001, 1199, 3, 32,
                                 90, 96, 500, 1150};
    const int n_in = (int)(sizeof in / sizeof in[0]);
    char flt[256] = "id IN (";
    for (int i = 0; i < n_in; i++)
        snprintf(flt + strlen(flt), sizeof flt - strlen(flt), "%s%lld", i ? ", " : "",
                 (long long)in[i]);
    strcat(flt, ")");
    int64_t ids[N_ROWS], wid[N_ROWS];
    double d[N_ROWS], wd[N_ROWS];
    int64_t before = 0, after = 0;
    for (int m = 0; m < 3; m++) {
        char params[128];
        snprintf(params, sizeof params, "{\"m\":8,\"ef_construction\":32,\"metric\":\"%s\","
                 "\"cluster\":\"id\"}", names[m]);
        hs_index_options io = {.kind = "hnsw", .params_json = params, .n_threads = 1};
        if (m > 0)
            CHECK_OK(hs_table_drop_index(t, "v", NULL, &err), &err);
        CHECK_OK(hs_table_add_index(t, "v", &io, &err), &err);
        for (int qi = 0; qi < 3; qi++) {
            float q[DIM];
            for (int j = 0; j < DIM; j++)
                q[j] = comp(300000 + qi * 7 + m, j);
            int k = qi == 2 ? 50 : 6, n = 0;
            tbl_search_cluster_counter(&before);
            CHECK_OK(run_search(t, flt, q, DIM, k, names[m], ids, d, &n, &err), &err);
            tbl_search_cluster_counter(&after);
            CHECK(after - before == FILES);
            int want = oracle_in(q, k, metrics[m], in, n_in, wid, wd);
            CHECK(n == want);
            for (int i = 0; i < n && i < want; i++) {
                CHECK(ids[i] == wid[i]);
                CHECK(fabs(d[i] - wd[i]) <= 1e-4 * (1 + fabs(wd[i])));
            }
        }
    }
    /* another filter shape: the usual path, the same answer */
    float q[DIM];
    for (int j = 0; j < DIM; j++)
        q[j] = comp(4242, j);
    int n = 0;
    tbl_search_cluster_counter(&before);
    CHECK_OK(run_search(t, "id < 300", q, DIM, 5, "ip", ids, d, &n, &err), &err);
    tbl_search_cluster_counter(&after);
    CHECK(after == before);
    CHECK(n == oracle(q, 5, HS_METRIC_IP, 300, wid, wd) && ids[0] == wid[0]);
    /* allocation failures at every step of a clustered search */
    int want = oracle_in(q, 5, HS_METRIC_IP, in, n_in, wid, wd);
    hs_alloc_hook hook = {count_malloc, count_realloc, count_free, NULL};
    clear_caches(t);
    int64_t live = hs_test_live_count();
    hs_set_alloc_hook(&hook);
    g_allocs = 0;
    CHECK_OK(run_search(t, flt, q, DIM, 5, "ip", ids, d, &n, &err), &err);
    int64_t total = g_allocs;
    hs_set_alloc_hook(NULL);
    CHECK(n == want);
    clear_caches(t);
    CHECK(hs_test_live_count() == live);
    int64_t step = total / 800 + 1;
    for (int64_t nth = 1; nth <= total; nth += step) {
        hs_err_clear(&err);
        hs_mem_fail_after(nth);
        hs_status st = run_search(t, flt, q, DIM, 5, "ip", ids, d, &n, &err);
        hs_mem_fail_after(0);
        clear_caches(t);
        if (hs_test_live_count() != live)
            fprintf(stderr, "leak at %lld: st %d %s\n", (long long)nth, (int)st, err.msg);
        CHECK(hs_test_live_count() == live);
        if (st == HS_OK)
            CHECK(n == want && memcmp(ids, wid, (size_t)want * sizeof *ids) == 0);
        else
            CHECK(err.msg[0] != 0);
    }
    hs_table_close(t);
    hs_catalog_close(cat);
    clear_caches(NULL);
}

int main(void)
{
    HS_RUN(test_params);
    HS_RUN(test_builder_roundtrip);
    HS_RUN(test_builder_errors);
    HS_RUN(test_image_damage);
    HS_RUN(test_exact_vectors_image);
    HS_RUN(test_search_exact);
    HS_RUN(test_plan_kept);
    HS_RUN(test_filtered_kept);
    HS_RUN(test_filter_cache);
    HS_RUN(test_filter_index_exact);
    HS_RUN(test_filter_cache_threads);
    HS_RUN(test_cache);
    HS_RUN(test_vindex_oom);
    HS_RUN(test_search_oom);
    HS_RUN(test_search_clustered);
    return hs_test_summary();
}
