/*
 * tests/c/test_arrow_c.c - the Arrow C Data / Stream Interface (columnar/arrow_c.h).
 *
 * Expected format strings, metadata bytes and buffers are written out by hand
 * from the Arrow specification.  Hand-made producer arrays (with a counting
 * release callback) check the move/release rules: release called exactly once,
 * source struct marked released, zero copy where the layout allows, copies for
 * offsets and large types, and errors for broken input.  pyarrow's view of the
 * same interface is checked in tests/python/test_arrow_c.py.
 */
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "harness.h"

#include <string.h>

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

static hs_status append_i32(hs_column *c, int32_t v) { return hs_col_append_fixed(c, &v); }
static hs_status append_i64(hs_column *c, int64_t v) { return hs_col_append_fixed(c, &v); }
static hs_status append_str(hs_column *c, const char *s) { return hs_col_append_bytes(c, s, strlen(s)); }

/* ---- a hand-made producer: one flat array whose buffers are static ---- */

static int g_released;

static void fake_release(struct ArrowArray *a)
{
    g_released++;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release)
            a->children[i]->release(a->children[i]);
    a->release = NULL;
}

static void fake_child_release(struct ArrowArray *a)
{
    a->release = NULL;
}

static void fake_array(struct ArrowArray *a, int64_t length, int64_t null_count, int64_t offset,
                       int n_buffers, const void **buffers)
{
    memset(a, 0, sizeof *a);
    a->length = length;
    a->null_count = null_count;
    a->offset = offset;
    a->n_buffers = n_buffers;
    a->buffers = buffers;
    a->release = fake_release;
}

static void fake_schema_release(struct ArrowSchema *s)
{
    s->release = NULL;
}

static void fake_schema(struct ArrowSchema *s, const char *format, const char *name, int64_t flags)
{
    memset(s, 0, sizeof *s);
    s->format = format;
    s->name = name;
    s->flags = flags;
    s->release = fake_schema_release;
}

/* ---- tests ---- */

static void make_schema(hs_field *schema)
{
    hs_field id, ts, dec, vec, el, m, e, k, v, u;
    hs_field_init(schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&id, "id", HS_TYPE_INT64, false);
    id.field_id = 1;
    (void)!hs_field_add_child(schema, &id);
    hs_field_init(&ts, "ts", HS_TYPE_TIMESTAMP, true);
    ts.tz = hs_strdup("UTC");
    (void)!hs_field_add_child(schema, &ts);
    hs_field_init(&dec, "d", HS_TYPE_DECIMAL128, true);
    dec.precision = 10;
    dec.scale = 2;
    (void)!hs_field_add_child(schema, &dec);
    hs_field_init(&el, "item", HS_TYPE_FLOAT32, true);
    hs_field_init(&vec, "v", HS_TYPE_FIXED_LIST, true);
    vec.width = 128;
    (void)!hs_field_add_child(&vec, &el);
    (void)!hs_field_add_child(schema, &vec);
    hs_field_init(&m, "m", HS_TYPE_MAP, true);
    m.keys_sorted = true;
    hs_field_init(&e, "entries", HS_TYPE_STRUCT, false);
    hs_field_init(&k, "key", HS_TYPE_STRING, false);
    hs_field_init(&v, "value", HS_TYPE_INT64, true);
    (void)!hs_field_add_child(&e, &k);
    (void)!hs_field_add_child(&e, &v);
    (void)!hs_field_add_child(&m, &e);
    (void)!hs_field_add_child(schema, &m);
    hs_field_init(&u, "u", HS_TYPE_FIXED_BINARY, true);
    u.width = 16;
    u.ext = HS_EXT_UUID;
    u.field_id = 6;
    (void)!hs_field_set_meta(&u, "doc", "a uuid");
    (void)!hs_field_add_child(schema, &u);
}

static void test_schema_export_import(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field schema;
    make_schema(&schema);
    struct ArrowSchema s;
    CHECK_OK(hs_arrow_export_schema(&schema, &s, err), err);
    REQUIRE(s.release != NULL && s.n_children == 6);
    CHECK(strcmp(s.format, "+s") == 0 && strcmp(s.name, "") == 0 && s.flags == 0);
    CHECK(strcmp(s.children[0]->format, "l") == 0 && s.children[0]->flags == 0);
    /* metadata: 1 pair, "PARQUET:field_id" -> "1" */
    static const char md_id[] = "\x01\x00\x00\x00\x10\x00\x00\x00PARQUET:field_id\x01\x00\x00\x00" "1";
    CHECK(s.children[0]->metadata && memcmp(s.children[0]->metadata, md_id, sizeof md_id - 1) == 0);
    CHECK(strcmp(s.children[1]->format, "tsu:UTC") == 0 && s.children[1]->flags == ARROW_FLAG_NULLABLE);
    CHECK(s.children[1]->metadata == NULL);
    CHECK(strcmp(s.children[2]->format, "d:10,2") == 0);
    CHECK(strcmp(s.children[3]->format, "+w:128") == 0);
    CHECK(strcmp(s.children[3]->children[0]->format, "f") == 0);
    CHECK(strcmp(s.children[4]->format, "+m") == 0);
    CHECK(s.children[4]->flags == (ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED));
    CHECK(strcmp(s.children[4]->children[0]->name, "entries") == 0);
    CHECK(s.children[4]->children[0]->flags == 0);
    CHECK(strcmp(s.children[4]->children[0]->children[0]->format, "u") == 0);
    CHECK(strcmp(s.children[5]->format, "w:16") == 0);
    int32_t n;
    memcpy(&n, s.children[5]->metadata, 4);
    CHECK(n == 4);  /* field id, extension name, extension metadata, doc */

    hs_field back;
    CHECK_OK(hs_arrow_import_schema(&s, &back, err), err);
    CHECK(hs_field_equals(&schema, &back, true, true));
    CHECK(back.children[5].ext == HS_EXT_UUID && back.children[5].n_meta == 1);
    CHECK(strcmp(hs_field_get_meta(&back.children[5], "doc"), "a uuid") == 0);
    CHECK(strcmp(back.children[1].tz, "UTC") == 0);
    hs_field_clear(&back);
    s.release(&s);
    CHECK(s.release == NULL);

    /* Formats only import knows. */
    static const struct { const char *fmt; hs_type t; } more[] = {
        {"U", HS_TYPE_STRING}, {"Z", HS_TYPE_BINARY}, {"vu", HS_TYPE_STRING}, {"tsn:", HS_TYPE_TIMESTAMP},
        {"tts", HS_TYPE_TIME32}, {"ttn", HS_TYPE_TIME64}, {"d:38,10,128", HS_TYPE_DECIMAL128}, {"e", HS_TYPE_FLOAT16},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        struct ArrowSchema x;
        fake_schema(&x, more[i].fmt, "x", ARROW_FLAG_NULLABLE);
        hs_field f;
        CHECK_OK(hs_arrow_import_schema(&x, &f, err), err);
        CHECK(f.type == more[i].t && f.nullable);
        if (more[i].t == HS_TYPE_TIMESTAMP)
            CHECK(f.tz == NULL && f.unit == HS_UNIT_NANO);
        hs_field_clear(&f);
    }
    static const char *bad[] = {"d:40,2,256", "+ud:0,1", "w:", "w:-1", "tsx:", "q", "d:a,b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ArrowSchema x;
        fake_schema(&x, bad[i], "x", 0);
        hs_field f;
        hs_error e = {0};
        hs_status st = hs_arrow_import_schema(&x, &f, &e);
        CHECK(st == HS_UNSUPPORTED || st == HS_INVALID);
        CHECK(strstr(e.msg, "'x'") != NULL);
    }
    hs_field_clear(&schema);
    LEAK_END();
}

/* Builds a batch of the schema above with 3 rows, nulls at every level. */
static hs_status fill_batch(hs_batch *b)
{
    hs_column **c = b->cols;
    for (int r = 0; r < 3; r++) {
        HS_TRY(append_i64(c[0], 100 + r));
        HS_TRY(r == 1 ? hs_col_append_null(c[1]) : append_i64(c[1], 1700000000000000LL + r));
        uint8_t dec[16] = {0};
        dec[0] = (uint8_t)(r + 1);
        if (r == 2)
            memset(dec, 0xff, sizeof dec);  /* -1 */
        HS_TRY(hs_col_append_fixed(c[2], dec));
        if (r == 0) {
            HS_TRY(hs_col_append_null(c[3]));
        } else {
            for (int j = 0; j < 128; j++) {
                float v = (float)(r * 128 + j);
                HS_TRY(j == 7 ? hs_col_append_null(c[3]->children[0]) : hs_col_append_fixed(c[3]->children[0], &v));
            }
            HS_TRY(hs_col_list_end(c[3]));
        }
        hs_column *e = c[4]->children[0];
        if (r == 2) {
            HS_TRY(hs_col_append_null(c[4]));
        } else {
            HS_TRY(append_str(e->children[0], r ? "b" : "a"));
            HS_TRY(r ? hs_col_append_null(e->children[1]) : append_i64(e->children[1], 5));
            HS_TRY(hs_col_struct_append_valid(e));
            HS_TRY(hs_col_list_end(c[4]));
        }
        HS_TRY(r == 0 ? hs_col_append_null(c[5]) : hs_col_append_bytes(c[5], "0123456789abcdef", 16));
    }
    b->n_rows = 3;
    return HS_OK;
}

static void test_batch_roundtrip_zero_copy(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field schema;
    make_schema(&schema);
    hs_batch *b, *expect;
    CHECK_OK(hs_batch_create(&schema, 0, &b, err), err);
    CHECK_OK(hs_batch_create(&schema, 0, &expect, err), err);
    REQUIRE(fill_batch(b) == HS_OK && fill_batch(expect) == HS_OK);
    const void *id_values = b->cols[0]->values.data;
    const void *ts_validity = b->cols[1]->validity.data;

    struct ArrowSchema s;
    struct ArrowArray a;
    CHECK_OK(hs_arrow_export_batch(b, &s, &a, err), err);
    REQUIRE(a.release != NULL && a.n_children == 6 && a.length == 3);
    CHECK(a.n_buffers == 1 && a.buffers[0] == NULL && a.null_count == 0);
    CHECK(a.children[0]->n_buffers == 2 && a.children[0]->buffers[0] == NULL);  /* no validity */
    CHECK(a.children[0]->buffers[1] == id_values);  /* zero copy */
    CHECK(a.children[1]->buffers[0] == ts_validity && a.children[1]->null_count == 1);
    CHECK(a.children[3]->n_buffers == 1 && a.children[3]->children[0]->length == 384);
    CHECK(a.children[4]->n_buffers == 2 && a.children[4]->children[0]->n_children == 2);
    const int64_t *ids = a.children[0]->buffers[1];
    CHECK(ids[0] == 100 && ids[2] == 102);

    hs_field f;
    CHECK_OK(hs_arrow_import_schema(&s, &f, err), err);
    s.release(&s);
    hs_batch *got;
    CHECK_OK(hs_arrow_import_batch(&a, &f, &got, err), err);
    CHECK(a.release == NULL);  /* moved */
    REQUIRE(got->n_cols == 6 && got->n_rows == 3);
    CHECK(got->cols[0]->values.data == id_values);  /* zero copy both ways */
    CHECK(got->cols[0]->owner != NULL && got->cols[0]->values.cap == 0);
    for (int i = 0; i < 6; i++) {
        CHECK(hs_col_equals(got->cols[i], expect->cols[i]));
        CHECK_OK(hs_col_validate(got->cols[i], &schema.children[i], err), err);
    }
    /* Imported borrowed columns can be appended to (copy on write). */
    CHECK(append_i64(got->cols[0], 103) == HS_OK);
    CHECK(got->cols[0]->values.data != id_values && got->cols[0]->length == 4);
    CHECK(HS_COL_VALUES(got->cols[0], int64_t)[1] == 101);
    CHECK_OK(hs_col_append_column(got->cols[4], expect->cols[4], err), err);
    CHECK_OK(hs_col_validate(got->cols[4], &schema.children[4], err), err);
    hs_batch_free(got);
    hs_batch_free(expect);
    hs_field_clear(&f);
    hs_field_clear(&schema);
    LEAK_END();
}

/* A consumer may move a child out, release the parent, and use the child later. */
static void test_move_child_out(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f, x, y;
    hs_field_init(&f, "s", HS_TYPE_STRUCT, true);
    hs_field_init(&x, "x", HS_TYPE_INT32, true);
    hs_field_init(&y, "y", HS_TYPE_STRING, true);
    (void)!hs_field_add_child(&f, &x);
    (void)!hs_field_add_child(&f, &y);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    for (int i = 0; i < 4; i++) {
        CHECK(append_i32(c->children[0], i * 11) == HS_OK);
        CHECK(append_str(c->children[1], "str") == HS_OK);
        CHECK(hs_col_struct_append_valid(c) == HS_OK);
    }
    struct ArrowArray a, child;
    CHECK_OK(hs_arrow_export_column(c, &a, err), err);
    child = *a.children[1];
    a.children[1]->release = NULL;
    a.release(&a);
    CHECK(a.release == NULL);
    CHECK(child.length == 4);
    const int32_t *off = child.buffers[1];
    CHECK(off[4] == 12 && memcmp((const char *)child.buffers[2] + off[3], "str", 3) == 0);
    child.release(&child);
    hs_field_clear(&f);
    LEAK_END();
}

/* Import borrows, and calls the producer's release exactly once, when the
 * last column referencing the memory is freed. */
static void test_release_once_and_offsets(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    static const int32_t vals[] = {10, 11, 12, 13, 14, 15};
    static const uint8_t valid[] = {0x3b};  /* 0b111011: row 2 null */
    const void *bufs[2] = {valid, vals};
    hs_field f;
    hs_field_init(&f, "x", HS_TYPE_INT32, true);

    struct ArrowArray a;
    fake_array(&a, 6, 1, 0, 2, bufs);
    g_released = 0;
    hs_column *c;
    CHECK_OK(hs_arrow_import_column(&a, &f, &c, err), err);
    CHECK(a.release == NULL && g_released == 0);
    CHECK(c->values.data == (const uint8_t *)vals && c->null_count == 1 && !hs_col_is_valid(c, 2));
    hs_column *copy;
    CHECK_OK(hs_col_slice(c, 1, 4, &copy, err), err);
    hs_col_free(c);
    CHECK(g_released == 1);
    CHECK(HS_COL_VALUES(copy, int32_t)[0] == 11 && copy->null_count == 1 && !hs_col_is_valid(copy, 1));
    hs_col_free(copy);
    CHECK(g_released == 1);

    /* offset 3: rows 13, 14, 15, all valid: copied */
    fake_array(&a, 3, -1, 3, 2, bufs);
    g_released = 0;
    CHECK_OK(hs_arrow_import_column(&a, &f, &c, err), err);
    CHECK(g_released == 1);  /* nothing borrowed any more */
    CHECK(c->length == 3 && c->null_count == 0 && HS_COL_VALUES(c, int32_t)[0] == 13);
    CHECK(c->values.data != (const uint8_t *)vals);
    hs_col_free(c);
    CHECK(g_released == 1);

    /* Misaligned int32 values: copied into an aligned buffer. */
    static _Alignas(8) uint8_t raw[32];
    const int32_t two[2] = {-7, 123456};
    memcpy(raw + 1, two, sizeof two);
    const void *mbufs[2] = {NULL, raw + 1};
    fake_array(&a, 2, 0, 0, 2, mbufs);
    CHECK_OK(hs_arrow_import_column(&a, &f, &c, err), err);
    CHECK(c->values.data != raw + 1 && ((uintptr_t)c->values.data & 63) == 0);
    CHECK(HS_COL_VALUES(c, int32_t)[0] == -7 && HS_COL_VALUES(c, int32_t)[1] == 123456);
    hs_col_free(c);

    /* Wrong buffer count: HS_CORRUPT, still released exactly once. */
    fake_array(&a, 3, 0, 0, 3, bufs);
    g_released = 0;
    hs_error e = {0};
    CHECK(hs_arrow_import_column(&a, &f, &c, &e) == HS_CORRUPT && c == NULL);
    CHECK(a.release == NULL && g_released == 1);
    CHECK(strstr(e.msg, "3 buffers, expected 2") != NULL);
    /* Already released array: refused, nothing called. */
    g_released = 0;
    hs_error e2 = {0};
    CHECK(hs_arrow_import_column(&a, &f, &c, &e2) == HS_INVALID && g_released == 0);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_string_imports(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    static const char bytes[] = "helloworldxyz";
    static const int32_t off[] = {0, 5, 10, 10, 13};
    const void *bufs[3] = {NULL, off, bytes};
    hs_field f;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    struct ArrowArray a;
    hs_column *c;

    /* offset 1: rows "world", "", "xyz" -> copied, offsets rebased to 0 */
    fake_array(&a, 3, 0, 1, 3, bufs);
    g_released = 0;
    CHECK_OK(hs_arrow_import_column(&a, &f, &c, err), err);
    CHECK(g_released == 1);
    const int32_t want[] = {0, 5, 5, 8};
    CHECK(memcmp(c->offsets.data, want, sizeof want) == 0 && memcmp(c->values.data, "worldxyz", 8) == 0);
    hs_col_free(c);

    /* Non-monotone offsets: HS_CORRUPT with the offending index. */
    static const int32_t bad[] = {0, 5, 3, 10, 13};
    const void *bbufs[3] = {NULL, bad, bytes};
    fake_array(&a, 4, 0, 0, 3, bbufs);
    hs_error e = {0};
    CHECK(hs_arrow_import_column(&a, &f, &c, &e) == HS_CORRUPT);
    CHECK(strstr(e.msg, "offsets[2] = 3 < offsets[1] = 5") != NULL);

    /* Large string: int64 offsets converted (and rebased for a sliced view). */
    static const int64_t loff[] = {2, 5, 10, 13};
    const void *lbufs[3] = {NULL, loff, bytes};
    hs_field lf;
    struct ArrowSchema ls;
    fake_schema(&ls, "U", "s", ARROW_FLAG_NULLABLE);
    CHECK_OK(hs_arrow_import_schema(&ls, &lf, err), err);
    CHECK(lf.type == HS_TYPE_STRING);
    fake_array(&a, 3, 0, 0, 3, lbufs);
    CHECK_OK(hs_arrow_import_column(&a, &lf, &c, err), err);
    const int32_t lwant[] = {0, 3, 8, 11};
    CHECK(memcmp(c->offsets.data, lwant, sizeof lwant) == 0);
    CHECK(memcmp(c->values.data, "llowo", 5) == 0);
    hs_col_free(c);

    /* Large offsets past 2 GiB: HS_INVALID (before any byte is read). */
    static const int64_t huge[] = {0, 5, 3000000000LL};
    const void *hbufs[3] = {NULL, huge, bytes};
    fake_array(&a, 2, 0, 0, 3, hbufs);
    g_released = 0;
    hs_error e2 = {0};
    CHECK(hs_arrow_import_column(&a, &lf, &c, &e2) == HS_INVALID && g_released == 1);
    CHECK(strstr(e2.msg, "2 GiB") != NULL);
    hs_field_clear(&lf);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_dictionary_import(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    struct ArrowSchema s, ds;
    fake_schema(&s, "c", "d", ARROW_FLAG_NULLABLE);  /* int8 indices */
    fake_schema(&ds, "u", "", ARROW_FLAG_NULLABLE);
    s.dictionary = &ds;
    hs_field f;
    CHECK_OK(hs_arrow_import_schema(&s, &f, err), err);
    CHECK(f.type == HS_TYPE_STRING && strcmp(f.name, "d") == 0);

    static const char bytes[] = "redgreen";
    static const int32_t doff[] = {0, 3, 8};
    const void *dbufs[3] = {NULL, doff, bytes};
    static const int8_t idx[] = {1, 0, 9, 1, 0};
    static const uint8_t valid[] = {0x1b};  /* row 2 null */
    const void *ibufs[2] = {valid, idx};
    struct ArrowArray a, dict;
    fake_array(&dict, 2, 0, 0, 3, dbufs);
    dict.release = fake_child_release;
    fake_array(&a, 5, 1, 0, 2, ibufs);
    a.dictionary = &dict;
    hs_column *c;
    CHECK_OK(hs_arrow_import_column(&a, &f, &c, err), err);
    CHECK(c->type == HS_TYPE_STRING && c->length == 5 && c->null_count == 1);
    const int32_t want[] = {0, 5, 8, 8, 13, 16};
    CHECK(memcmp(c->offsets.data, want, sizeof want) == 0);
    CHECK(memcmp(c->values.data, "greenredgreenred", 16) == 0);
    hs_col_free(c);

    static const int8_t bad_idx[] = {1, 2};
    const void *bbufs[2] = {NULL, bad_idx};
    fake_array(&dict, 2, 0, 0, 3, dbufs);
    dict.release = fake_child_release;
    fake_array(&a, 2, 0, 0, 2, bbufs);
    a.dictionary = &dict;
    hs_error e = {0};
    CHECK(hs_arrow_import_column(&a, &f, &c, &e) == HS_CORRUPT);
    CHECK(strstr(e.msg, "dictionary index 2") != NULL);
    hs_field_clear(&f);
    LEAK_END();
}

/* ---- streams ---- */

typedef struct src_ctx {
    int next;
    int closed;
    hs_field schema;
} src_ctx;

static hs_status src_next(void *ctx, hs_batch **out, hs_error *err)
{
    src_ctx *s = ctx;
    *out = NULL;
    if (s->next == 3)
        return HS_OK;
    if (s->next == 99)
        return hs_err_set(err, HS_IO, "disk on fire");
    hs_batch *b;
    HS_TRY(hs_batch_create(&s->schema, 4, &b, err));
    for (int i = 0; i < 4; i++) {
        hs_status st = append_i64(b->cols[0], s->next * 10 + i);
        if (st == HS_OK)
            st = i == 2 ? hs_col_append_null(b->cols[1]) : append_str(b->cols[1], "v");
        if (st != HS_OK) {
            hs_batch_free(b);
            return st;
        }
    }
    b->n_rows = 4;
    s->next++;
    *out = b;
    return HS_OK;
}

static int g_closed;
static void src_close(void *ctx)
{
    src_ctx *s = ctx;
    g_closed++;
    hs_field_clear(&s->schema);
    hs_free(s);
}

static hs_status make_source(hs_batch_source *src, int start)
{
    hs_field id, name;
    memset(src, 0, sizeof *src);
    src_ctx *s = hs_calloc(1, sizeof *s);
    if (!s)
        return HS_NOMEM;
    s->next = start;
    hs_field_init(&s->schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&id, "id", HS_TYPE_INT64, false);
    hs_field_init(&name, "name", HS_TYPE_STRING, true);
    (void)!hs_field_add_child(&s->schema, &id);
    (void)!hs_field_add_child(&s->schema, &name);
    src->next = src_next;
    src->close = src_close;
    src->ctx = s;
    return hs_field_copy(&s->schema, &src->schema);
}

static void test_stream_roundtrip(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_batch_source src, back;
    REQUIRE(make_source(&src, 0) == HS_OK);
    struct ArrowArrayStream st;
    g_closed = 0;
    CHECK_OK(hs_arrow_export_stream(&src, &st, err), err);
    CHECK(src.ctx == NULL);  /* moved */
    CHECK_OK(hs_arrow_import_stream(&st, &back, err), err);
    CHECK(st.release == NULL);
    CHECK(back.schema.n_children == 2 && strcmp(back.schema.children[1].name, "name") == 0);
    CHECK(!back.schema.children[0].nullable);
    int64_t rows = 0, sum = 0;
    for (;;) {
        hs_batch *b;
        CHECK_OK(back.next(back.ctx, &b, err), err);
        if (!b)
            break;
        rows += b->n_rows;
        for (int64_t i = 0; i < b->n_rows; i++)
            sum += HS_COL_VALUES(b->cols[0], int64_t)[i];
        CHECK(b->cols[1]->null_count == 1 && !hs_col_is_valid(b->cols[1], 2));
        hs_batch_free(b);
    }
    CHECK(rows == 12);
    CHECK(sum == 6 + 46 + 86);
    back.close(back.ctx);
    CHECK(g_closed == 1);
    hs_field_clear(&back.schema);

    /* An error in the source reaches the consumer with its message. */
    REQUIRE(make_source(&src, 99) == HS_OK);
    CHECK_OK(hs_arrow_export_stream(&src, &st, err), err);
    struct ArrowArray a;
    CHECK(st.get_next(&st, &a) != 0);
    CHECK(strstr(st.get_last_error(&st), "disk on fire") != NULL);
    st.release(&st);
    CHECK(st.release == NULL && g_closed == 2);
    LEAK_END();
}

/* OOM at every allocation of export + import: no crash, no leak, and the
 * producer's memory is always released. */
static void test_oom_roundtrip(void)
{
    LEAK_START();
    hs_field schema;
    make_schema(&schema);
    int ok = 0, k;
    for (k = 1; k < 2000 && !ok; k++) {
        hs_batch *b = NULL, *got = NULL;
        hs_field f = {0};
        struct ArrowSchema s = {0};
        struct ArrowArray a = {0};
        if (hs_batch_create(&schema, 0, &b, NULL) != HS_OK || fill_batch(b) != HS_OK) {
            hs_batch_free(b);
            continue;
        }
        hs_mem_fail_after(k);
        hs_status st = hs_arrow_export_batch(b, &s, &a, NULL);
        if (st == HS_OK)
            st = hs_arrow_import_schema(&s, &f, NULL);
        if (st == HS_OK)
            st = hs_arrow_import_batch(&a, &f, &got, NULL);
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        ok = st == HS_OK;
        if (a.release)
            a.release(&a);
        if (s.release)
            s.release(&s);
        hs_batch_free(got);
        hs_field_clear(&f);
    }
    CHECK(ok && k > 50);
    hs_field_clear(&schema);
    LEAK_END();
}

/* OOM at every allocation of copying imports (offset, large offsets,
 * dictionary): the producer is released exactly once every time, no leaks. */
static void test_oom_copying_imports(void)
{
    LEAK_START();
    static const char bytes[] = "helloworldxyz";
    static const int32_t off[] = {0, 5, 10, 10, 13};
    static const int64_t loff[] = {2, 5, 10, 13};
    static const int8_t idx[] = {1, 0, 3, 1, 0};
    const void *bufs[3] = {NULL, off, bytes};
    const void *lbufs[3] = {NULL, loff, bytes};
    const void *ibufs[2] = {NULL, idx};
    hs_field f, lf, df;
    struct ArrowSchema ls, ds, dvs;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    fake_schema(&ls, "U", "s", ARROW_FLAG_NULLABLE);
    fake_schema(&ds, "c", "d", ARROW_FLAG_NULLABLE);
    fake_schema(&dvs, "u", "", ARROW_FLAG_NULLABLE);
    ds.dictionary = &dvs;
    REQUIRE(hs_arrow_import_schema(&ls, &lf, NULL) == HS_OK);
    REQUIRE(hs_arrow_import_schema(&ds, &df, NULL) == HS_OK);
    for (int which = 0; which < 3; which++) {
        int ok = 0;
        for (int k = 1; k < 100 && !ok; k++) {
            struct ArrowArray a, dict;
            const hs_field *fld = &f;
            if (which == 0) {
                fake_array(&a, 3, 0, 1, 3, bufs);
            } else if (which == 1) {
                fake_array(&a, 3, 0, 0, 3, lbufs);
                fld = &lf;
            } else {
                fake_array(&dict, 4, 0, 0, 3, bufs);
                dict.release = fake_child_release;
                fake_array(&a, 5, 0, 0, 2, ibufs);
                a.dictionary = &dict;
                fld = &df;
            }
            g_released = 0;
            hs_column *c = NULL;
            hs_mem_fail_after(k);
            hs_status st = hs_arrow_import_column(&a, fld, &c, NULL);
            hs_mem_fail_after(0);
            CHECK(st == HS_OK || st == HS_NOMEM);
            ok = st == HS_OK;
            hs_col_free(c);
            CHECK(g_released == 1 && a.release == NULL);
        }
        CHECK(ok);
    }
    hs_field_clear(&f);
    hs_field_clear(&lf);
    hs_field_clear(&df);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_schema_export_import);
    HS_RUN(test_batch_roundtrip_zero_copy);
    HS_RUN(test_move_child_out);
    HS_RUN(test_release_once_and_offsets);
    HS_RUN(test_string_imports);
    HS_RUN(test_dictionary_import);
    HS_RUN(test_stream_roundtrip);
    HS_RUN(test_oom_roundtrip);
    HS_RUN(test_oom_copying_imports);
    return hs_test_summary();
}
